"""Where arviz-stats (or scipy, which it calls) computes what pragmodels.metrics once wrote by hand:
the same numbers, at the stated tolerance; where it computes something else, by how much
(the measurements behind docs/architecture.md's note on arviz-stats)."""

import numpy as np
import pytest
import xarray as xr
from arviz_stats import eti, wasserstein

from pragmodels import datasets
from pragmodels.metrics import distributions


def merged_cdf_w1(values_a, weights_a, values_b, weights_b):
    """The hand-written W1 that wasserstein_to_sample used before it called scipy: the exact
    integral of |F_a - F_b| over the merged support."""
    x = np.concatenate([values_a, values_b])
    order = np.argsort(x, kind="mergesort")
    w = np.concatenate([weights_a, -np.asarray(weights_b)])[order]
    return float(np.sum(np.abs(np.cumsum(w)[:-1]) * np.diff(x[order])))


def _w1_arviz(a, b):
    """arviz_stats.wasserstein of two raw samples, every draw used (it subsamples both sides to
    ``num_samples`` without replacement, so at most the smaller sample's size)."""
    ds = [xr.Dataset({"x": (("chain", "draw"), np.asarray(s, float)[None])}) for s in (a, b)]
    return float(wasserstein(*ds, num_samples=min(len(a), len(b)), round_to="none"))


@pytest.fixture(scope="module")
def guesses(mirror):
    return [np.asarray(r, float) for r in datasets.load_wavelength()["responses"]]


def test_w1_equals_the_hand_written_integral(guesses):
    """scipy.stats.wasserstein_distance with weights (what wasserstein_to_sample now calls) equals
    the merged-CDF integral to 1e-12 on the Wavelength guesses against 2,000 random distributions."""
    rng = np.random.default_rng(0)
    for h in guesses:
        for concentration in (0.3, 3.0):
            p = rng.dirichlet(np.full(21, concentration))
            ref = merged_cdf_w1(distributions.GRID, p, h, np.full(h.size, 1 / h.size))
            assert abs(float(distributions.wasserstein_to_sample(p, h)) - ref) <= 1e-12 * max(1.0, ref)


def test_arviz_wasserstein_agrees_only_between_two_equal_raw_samples(guesses):
    """The Wavelength human ceiling (one half's binned guesses against the other half's raw ones,
    20 and 20): arviz_stats.wasserstein gives the same W1 to 1e-10. A model distribution (21
    weights) against 40 guesses it cannot take: as 4,000 draws of p it is subsampled to 40, and
    W1 moves by more than 1 on some items (measured: mean +0.74, up to 7.5)."""
    ours, theirs = [], []
    for h in guesses:
        a, b = h[:20], h[20:]
        idx = distributions.bin_to_grid(a)
        p = np.bincount(idx, minlength=21) / 20
        ours.append(float(distributions.wasserstein_to_sample(p, b)))
        theirs.append(_w1_arviz(distributions.GRID[idx], b))
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-10)
    assert np.mean(ours) == pytest.approx(6.4285, abs=5e-5)  # the report's 6.43 for "Humans, all 100"
    rng = np.random.default_rng(0)
    diffs = []
    for h in guesses[:20]:
        p = rng.dirichlet(np.full(21, 3.0))
        diffs.append(_w1_arviz(rng.choice(distributions.GRID, size=4000, p=p), h)
                     - float(distributions.wasserstein_to_sample(p, h)))
    assert np.max(np.abs(diffs)) > 1.0


def test_arviz_eti_is_numpy_quantile():
    """metrics.accuracy's bootstrap interval is np.quantile at (1 -/+ prob) / 2; arviz_stats.eti
    (linear interpolation) gives the same bounds to 1e-12."""
    x = np.random.default_rng(2).beta(2, 5, 10_000)
    for prob in (0.9, 0.94, 0.95):
        ours = np.quantile(x, [(1 - prob) / 2, (1 + prob) / 2])
        theirs = eti(xr.DataArray(x, dims="draw"), prob=prob, dim="draw").values
        np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-12)
