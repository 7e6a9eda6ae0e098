"""pragmodels.inference.ess_rhat against arviz_stats, element by element (the definitions are ArviZ's)."""

import numpy as np
import pytest
import xarray as xr
from arviz_stats.base import array_stats

from pragmodels.inference.ess_rhat import ess_bulk, ess_tail, rank_rhat, rhat_ess

RNG = np.random.default_rng(1)


def _ar(shape, phi):
    x, e = np.zeros(shape), RNG.normal(size=shape)
    for t in range(1, shape[-1]):
        x[..., t] = phi * x[..., t - 1] + e[..., t]
    return x


def _with_nan():
    x = RNG.normal(size=(3, 4, 200))
    x[1, 2, 7] = np.nan
    return x


CASES = {  # [element, chain, draw]: mixing well and badly, ties, constants, odd and tiny draw counts, NaN
    "iid": RNG.normal(size=(5, 4, 500)), "ar 0.9, odd draws": _ar((5, 4, 501), 0.9), "ar 0.99": _ar((3, 2, 300), 0.99),
    "ties": np.round(RNG.normal(size=(4, 4, 200)) * 2), "constant": np.ones((2, 4, 100)),
    "one chain": _ar((3, 1, 400), 0.5), "3 draws": RNG.normal(size=(2, 4, 3)), "5 draws": RNG.normal(size=(2, 3, 5)),
    "cauchy": RNG.standard_cauchy(size=(6, 4, 250)),
    "chains apart": _ar((3, 4, 400), 0.7) + np.arange(4)[None, :, None] * 0.5,
    "antithetic": np.tile([1.0, -1.0], (3, 4, 100)) + RNG.normal(size=(3, 4, 200)) * 0.1,
    "a NaN draw": _with_nan(), "2-d element": RNG.normal(size=(2, 3, 4, 60)),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # constant elements: 0/0 in arviz_stats' r_hat too
@pytest.mark.parametrize("case", list(CASES))
def test_equal_to_arviz_stats_within_rounding(case):
    """r_hat (rank), bulk ESS and tail ESS at the 5% and 95% quantiles equal arviz_stats' to 1e-9 relative
    (float64 FFTs and sums in another order), NaN where it gives NaN; rhat_ess equals the three alone."""
    x = CASES[case]
    ref = {"rhat": array_stats.rhat(x, chain_axis=-2, draw_axis=-1),
           "bulk": array_stats.ess(x, chain_axis=-2, draw_axis=-1, method="bulk"),
           "tail": array_stats.ess(x, chain_axis=-2, draw_axis=-1, method="tail", prob=(0.05, 0.95))}
    got = {"rhat": rank_rhat(x), "bulk": ess_bulk(x), "tail": ess_tail(x)}
    for k in ref:
        want = np.asarray(ref[k], float)
        assert got[k].shape == want.shape == x.shape[:-2]
        np.testing.assert_allclose(got[k], want, rtol=1e-9, equal_nan=True, err_msg=k)
    for a, b in zip(rhat_ess(x), got.values(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_tail_ess_is_at_the_5_and_95_percent_quantiles_not_arviz_stats_default():
    """arviz_stats' ess(method="tail") without prob uses its ci_prob (0.89: the 11% and 89% quantiles); the
    standard (Vehtari et al. 2021) is 5% and 95%, which an AR(1) chain's extreme quantiles make lower."""
    from arviz_stats import ess

    x = _ar((1, 4, 1000), 0.9)
    default = float(ess(xr.Dataset({"a": (("chain", "draw"), x[0])}), method="tail")["a"])
    ours = float(ess_tail(x)[0])
    assert ours == pytest.approx(float(array_stats.ess(x[0], method="tail", prob=(0.05, 0.95))), rel=1e-9)
    assert ours != pytest.approx(default, rel=1e-3)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match=r"\[..., chain, draw\]"):
        rank_rhat(np.zeros(10))


def test_no_draws_give_nan_of_the_elements_shape():
    for fn in (rank_rhat, ess_bulk, ess_tail):
        out = fn(np.zeros((3, 4, 0)))
        assert out.shape == (3,) and np.isnan(out).all()
