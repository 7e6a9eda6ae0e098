"""Posterior contrasts between fits, against the exact distribution of a difference of normals."""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import pragmodels as pm


def _tree(rng, loc, n_chain=4, n_draw=2000, vector=False):
    shape = (n_chain, n_draw) + ((3,) if vector else ())
    post = {"alpha": (("chain", "draw"), loc + rng.standard_normal((n_chain, n_draw)))}
    if vector:
        post["cost"] = (("chain", "draw", "utterance"), loc + np.arange(3) + rng.standard_normal(shape))
    ds = xr.Dataset(post, coords={"chain": range(n_chain), "draw": range(n_draw),
                                  **({"utterance": ["a", "b", "c"]} if vector else {})})
    return xr.DataTree.from_dict({"posterior": ds})


def test_contrast_matches_the_exact_difference_of_independent_normals():
    """A ~ N(1, 1), B ~ N(0, 1): A - B ~ N(1, sqrt 2), P(A > B) = Phi(1/sqrt 2) = 0.760. With 8,000
    paired draws the Monte Carlo sd of P is ~0.005 and of the 3% quantile ~0.03; tolerances are
    about 4 sd."""
    rng = np.random.default_rng(1)
    res = pm.contrast(_tree(rng, 1.0), _tree(rng, 0.0), "alpha")
    assert res.attrs["n_draws"] == 8000
    assert float(res.p_greater) == pytest.approx(stats.norm.cdf(1 / np.sqrt(2)), abs=0.02)
    assert float(res.difference) == pytest.approx(1.0, abs=0.07)
    lo, hi = stats.norm(1.0, np.sqrt(2)).ppf([0.03, 0.97])
    assert float(res.lower) == pytest.approx(lo, abs=0.12) and float(res.upper) == pytest.approx(hi, abs=0.12)


def test_contrast_keeps_dims_and_table_compares_each_fit_with_a_reference():
    rng = np.random.default_rng(2)
    trees = {"human": _tree(rng, 0.0, vector=True), "llm": _tree(rng, 2.0, vector=True, n_draw=500)}
    res = pm.contrast(trees["llm"], trees["human"], "cost")
    assert res.p_greater.dims == ("utterance",) and res.attrs["n_draws"] == 2000
    assert np.all(res.p_greater.values > 0.85)  # Phi(2/sqrt 2) = 0.92
    table = pm.contrast_table(trees, ["alpha", "cost"], reference="human")
    assert len(table) == 4 and set(table.parameter) == {"alpha", "cost"}
    assert table.loc[table.parameter == "cost", "utterance"].tolist() == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"no variable 'beta' in the posterior"):
        pm.contrast(trees["llm"], trees["human"], "beta")
    with pytest.raises(ValueError, match=r"reference 'people' is not one of the fits"):
        pm.contrast_table(trees, ["alpha"], reference="people")
