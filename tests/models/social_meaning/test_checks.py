"""Posterior predictive checks of the human fits: the tables they write."""

import numpy as np
import pytest

from models.social_meaning import checks
from pragmodels import datasets, metrics


@pytest.fixture(scope="module")
def human(mirror):
    return datasets.load_social_human()


def test_cell_check_names_its_cells(human, monkeypatch):
    """``tables/human_ppc_cells.csv`` had columns ``0, 1, 2, 3`` where scenario, context, form and
    attribute belong (``pd.factorize`` of a MultiIndex drops its names)."""
    n = len(metrics.valid_ratings(human).frame)
    rng = np.random.default_rng(0)
    monkeypatch.setattr(checks, "_replicates", lambda *a, **k: rng.integers(1, 8, (20, n)).astype(float))
    out = checks.cell_check(None, "rsa", human, {}, n_draws=20)
    assert list(out.columns) == [*checks.CELL_KEYS, "observed", "median", "lo", "hi", "inside"]
    assert len(out) == 144 and set(out["form"]) == {"precise", "approx"} and set(out["context"]) == {"high", "low"}
    one = out.iloc[0]
    frame = metrics.valid_ratings(human).frame
    sel = np.logical_and.reduce([frame[k] == one[k] for k in checks.CELL_KEYS])
    assert one["observed"] == pytest.approx(frame.loc[sel, "rating"].mean())


def test_the_features_contrasts_say_which_feature_carries_which_effect():
    """At the human fit's medians (alpha 1.0, cost 0.47, every scenario's theta 1.8): p_exact carries the form
    effect and p_qud_fit the interaction, whose context effect has the interaction's sign (the structural
    reason the report gives for the interaction the RSA model reaches least; issue 37 item 7)."""
    import xarray as xr

    post = xr.Dataset({"alpha": (("chain", "draw"), np.full((1, 3), 1.0)),
                       "cost_precise": (("chain", "draw"), np.full((1, 3), 0.47)),
                       "theta": (("chain", "draw", "scenario"), np.full((1, 3, 6), 1.8))})
    f = checks.feature_contrasts(xr.DataTree.from_dict({"posterior": post}), n_draws=2).set_index("feature")
    assert list(f.index) == ["p_exact", "p_qud_fit"] and list(f.columns) == ["form", "context", "interaction"]
    assert f.loc["p_exact", "form"] > 1 > abs(f.loc["p_exact", "interaction"])
    assert f.loc["p_qud_fit", "interaction"] > 3 and 0 < f.loc["p_qud_fit", "context"] < 0.5
    assert abs(f.loc["p_qud_fit", "form"]) < 0.2
