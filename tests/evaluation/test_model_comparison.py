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
