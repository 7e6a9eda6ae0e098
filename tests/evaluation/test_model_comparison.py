"""pragmodels.compare: ArviZ's table, unrounded."""

import numpy as np
import xarray as xr

from pragmodels.evaluation.model_comparison import compare


def _tree(shift: float, seed: int) -> xr.DataTree:
    rng = np.random.default_rng(seed)
    ll = rng.normal(-1.0 + shift, 0.3, size=(2, 200, 300))  # [chain, draw, obs]
    post = xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(2, 200)))})
    return xr.DataTree.from_dict({"posterior": post,
                                  "log_likelihood": xr.Dataset({"y": (("chain", "draw", "obs"), ll)})})


def test_compare_keeps_the_digits_arviz_would_round_away():
    """ArviZ's default rounds elpd_diff to the digits its SE warrants (a study report showed two
    different differences as 10.0 ± 9.8 each); the library's table keeps full precision and the
    report rounds for display."""
    table = compare({"a": _tree(0.0, 1), "b": _tree(-0.0337, 2)})
    diff = float(table["elpd_diff"].iloc[1])
    assert diff < 0 and diff != round(diff, 1)
    assert float(table["elpd"].iloc[0]) != round(float(table["elpd"].iloc[0]), 1)


def test_a_factor_of_one_value_per_draw_is_not_joined_to_the_observations_unasked():
    """DRInQ's listeners add the selection of the consensus items as one numpyro.factor: in numpyro it is an
    observed site, one number per draw (about -785 nats), and joined to the 231 per-item sites by default it
    counted as one more observation (the notebook's LOO table: elpd SE 783, equal weights). The default now
    refuses, naming it; sites=[...] names the observations."""
    import pytest

    from pragmodels.evaluation.model_comparison import joint_log_likelihood, loo

    tree = _tree(0.0, 3)
    ll = tree["log_likelihood"].to_dataset().assign(selection=(("chain", "draw"), np.full((2, 200), -785.0)))
    tree = xr.DataTree.from_dict({"posterior": tree["posterior"].to_dataset(), "log_likelihood": ll})
    with pytest.raises(ValueError, match=r"one value per draw \(\['selection'\].*sites=\[\.\.\.\]"):
        loo(tree)
    with pytest.raises(ValueError, match="selection"):
        compare({"a": tree, "b": tree})
    assert joint_log_likelihood(tree, ["y"])["log_likelihood"]["joint"].sizes["observation"] == 300
    assert abs(loo(tree, sites=["y"]).elpd - loo(_tree(0.0, 3)).elpd) < 1e-9
