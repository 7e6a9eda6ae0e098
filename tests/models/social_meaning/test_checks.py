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
