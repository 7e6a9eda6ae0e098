"""pragmodels.metrics.distributions: W1 against scipy.stats.wasserstein_distance, entropy, binning,
mean error and Pearson r against direct computations."""

import numpy as np
import pytest
from scipy import stats

from pragmodels.metrics import distributions


def test_wasserstein_matches_scipy_on_random_cases():
    rng = np.random.default_rng(0)
    for _ in range(30):
        p = rng.dirichlet(np.ones(21) * rng.uniform(0.1, 3))
        h = rng.integers(0, 101, rng.integers(1, 60))
        ref = stats.wasserstein_distance(distributions.GRID, h, u_weights=p)
        assert distributions.wasserstein_to_sample(p, h) == pytest.approx(ref, rel=1e-10, abs=1e-10)


def test_wasserstein_batched_and_ragged():
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(21), 4)
    h = rng.integers(0, 101, (4, 40))
    ref = [stats.wasserstein_distance(distributions.GRID, h[i], u_weights=p[i]) for i in range(4)]
    np.testing.assert_allclose(distributions.wasserstein_to_sample(p, h), ref, rtol=1e-10)
    ragged = [h[0], h[1][:3], h[2][:17], h[3][:1]]
    ref = [stats.wasserstein_distance(distributions.GRID, s, u_weights=p[i]) for i, s in enumerate(ragged)]
    np.testing.assert_allclose(distributions.wasserstein_to_sample(p, ragged), ref, rtol=1e-10)


def test_wasserstein_simple_cases():
    p = np.zeros(21)
    p[10] = 1.0  # all mass at 50
    assert distributions.wasserstein_to_sample(p, [50, 50]) == 0.0
    assert distributions.wasserstein_to_sample(p, [40, 70]) == pytest.approx(15.0)
    # a point mass against a uniform sample on the grid
    assert distributions.wasserstein_to_sample(p, distributions.GRID) == pytest.approx(np.abs(distributions.GRID - 50).mean())


def test_mean_and_absolute_error():
    p = np.zeros((2, 21))
    p[0, [0, 20]] = 0.5
    p[1, 4] = 1.0
    np.testing.assert_allclose(distributions.distribution_mean(p), [50.0, 20.0])
    np.testing.assert_allclose(distributions.mean_absolute_error(p, [45, 35]), [5.0, 15.0])


def test_entropy_in_nats():
    assert distributions.entropy(np.full(21, 1 / 21)) == pytest.approx(np.log(21))
    p = np.zeros(21)
    p[3] = 1.0
    assert distributions.entropy(p) == 0.0
    assert distributions.entropy([0.5, 0.5, 0.0]) == pytest.approx(np.log(2))


def test_binning_to_the_nearest_state_ties_up():
    got = distributions.bin_to_grid([0, 2, 2.5, 3, 7, 7.5, 8, 52, 53, 97, 98, 100])
    assert list(got) == [0, 0, 1, 1, 1, 2, 2, 10, 11, 19, 20, 20]
    # every integer 0..100 goes to round-half-up of v / 5
    v = np.arange(101)
    np.testing.assert_array_equal(distributions.bin_to_grid(v), np.floor(v / 5 + 0.5).astype(int))


def test_sample_entropy_bins_first():
    assert distributions.sample_entropy([50] * 40) == 0.0
    assert distributions.sample_entropy([49, 50, 51, 52]) == 0.0  # one bin
    assert distributions.sample_entropy([0, 1, 99, 100]) == pytest.approx(np.log(2))
    h = np.random.default_rng(2).integers(0, 101, (3, 40))
    got = distributions.sample_entropy(h)
    ref = [stats.entropy(np.bincount(distributions.bin_to_grid(r), minlength=21)) for r in h]
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_pearson_of_means_is_scipy_pearson():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=50), rng.normal(size=50)
    assert distributions.pearson_of_means(a, b) == pytest.approx(stats.pearsonr(a, b).statistic)


def test_pearson_of_a_constant_side_is_nan_without_a_warning():
    """A fitted uniform listener has the same mean on every item: r is undefined, and the studies' logs
    carried scipy's ConstantInputWarning for it (found in the Wavelength run of 2026-12-06)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(distributions.pearson_of_means(np.full(5, 50.0), [10, 20, 30, 40, 50.0]))
        assert np.isnan(distributions.pearson_of_means([10, 20, 30, 40, 50.0], np.full(5, 7.0)))
    with pytest.warns(stats.ConstantInputWarning):  # scipy's own behaviour, which this replaces
        stats.pearsonr(np.full(5, 50.0), [10, 20, 30, 40, 50.0])


def test_errors_name_the_input():
    with pytest.raises(ValueError, match=r"sums to 0.5"):
        distributions.entropy(np.full(21, 0.5 / 21))
    with pytest.raises(ValueError, match=r"probs\[3\] = -0.1"):
        distributions.distribution_mean(np.r_[np.full(3, 0.1), -0.1, np.full(17, 0.9 / 17)])
    with pytest.raises(ValueError, match="has 20 states but state_values has 21"):
        distributions.distribution_mean(np.full(20, 1 / 20))
    with pytest.raises(ValueError, match="one sample per distribution"):
        distributions.wasserstein_to_sample(np.full((2, 21), 1 / 21), [[1, 2]])
    with pytest.raises(ValueError, match="equal length"):
        distributions.pearson_of_means([1, 2, 3], [1, 2])
