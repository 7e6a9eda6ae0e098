"""pragmodels.inference.laplace_mass and ``mass_matrix="laplace"``: the inverse Hessian against a
Gaussian's known covariance, NumPyro's block layout, the eigenvalue floor, and NUTS using it (an
exact posterior; trees that only a fitted mass matrix makes short)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import pragmodels as pm
from pragmodels.inference import nuts
from pragmodels.inference.laplace_mass import EIGEN_FLOOR, laplace_covariance, laplace_inverse_mass
from pragmodels.inference.multistart import multistart_inits
from tests.inference.test_nuts import N, Y, beta_binomial, check_exact_beta

# a correlated Gaussian over z = {"a": [2], "b": []}, ravelled as (a0, a1, b)
SIGMA = np.array([[4.0, 1.2, -0.3], [1.2, 1.0, 0.2], [-0.3, 0.2, 0.25]])
MEAN = np.array([1.0, -2.0, 0.5])
PREC = np.linalg.inv(SIGMA)


def gaussian_potential(z):
    x = jnp.concatenate([z["a"], z["b"][None]]) - MEAN
    return 0.5 * x @ PREC @ x


Z = {"a": jnp.asarray(MEAN[:2], jnp.float32), "b": jnp.asarray(MEAN[2], jnp.float32)}


def test_covariance_is_the_gaussians():
    """For a Gaussian the Laplace approximation is exact: the inverse Hessian is its covariance (float32:
    within 1e-4 relative of the largest entry)."""
    cov = np.asarray(laplace_covariance(gaussian_potential, Z))
    np.testing.assert_allclose(cov, SIGMA, atol=1e-4 * SIGMA.max())


def test_blocks_in_numpyros_layout():
    """A dense block holds its sites' joint covariance in the block's own order; every other site
    gets its marginal variance on one diagonal block (sorted sites); no block: all diagonal."""
    out = laplace_inverse_mass(gaussian_potential, Z, [("b", "a")])
    assert set(out) == {("b", "a")}
    order = [2, 0, 1]  # b first, then a0, a1
    np.testing.assert_allclose(np.asarray(out[("b", "a")]), SIGMA[np.ix_(order, order)], atol=1e-3)
    diag = laplace_inverse_mass(gaussian_potential, Z, [])
    assert set(diag) == {("a", "b")}
    np.testing.assert_allclose(np.asarray(diag[("a", "b")]), np.diag(SIGMA), atol=1e-3)
    z3 = {**Z, "c": jnp.zeros(2)}

    def with_c(z):
        return gaussian_potential(z) + 0.5 * jnp.sum((z["c"] / 3.0) ** 2)

    part = laplace_inverse_mass(with_c, z3, [("a",)])
    assert set(part) == {("a",), ("b", "c")}
    np.testing.assert_allclose(np.asarray(part[("a",)]), SIGMA[:2, :2], atol=1e-3)
    np.testing.assert_allclose(np.asarray(part[("b", "c")]), [SIGMA[2, 2], 9.0, 9.0], rtol=1e-4)


def test_flat_negative_and_non_finite_curvature():
    """Not at a mode: a direction curved downwards, or flat, gets variance 1 / EIGEN_FLOOR, the rest their
    own; a non-finite Hessian gives the identity. The result is always symmetric positive definite."""
    def saddle(z):
        x, y, w = z["x"][0], z["x"][1], z["x"][2]
        return 0.5 * 4.0 * x**2 - 0.5 * y**2 + 0.0 * w

    cov = np.asarray(laplace_covariance(saddle, {"x": jnp.zeros(3)}))
    np.testing.assert_allclose(cov, np.diag([0.25, 1 / EIGEN_FLOOR, 1 / EIGEN_FLOOR]), rtol=1e-5)

    def broken(z):
        return jnp.sqrt(z["x"]).sum()  # at 0: an infinite second derivative

    np.testing.assert_array_equal(np.asarray(laplace_covariance(broken, {"x": jnp.zeros(2)})), np.eye(2))


def correlated(scale=(10.0, 0.1), rho=0.95):
    """Two parameters with very different scales and correlation ``rho`` (a Gaussian posterior)."""
    cov = jnp.asarray([[scale[0] ** 2, rho * scale[0] * scale[1]], [rho * scale[0] * scale[1], scale[1] ** 2]])
    numpyro.sample("theta", dist.MultivariateNormal(jnp.zeros(2), cov))
    numpyro.sample("y", dist.Normal(0.0, 1.0), obs=jnp.zeros(1))  # an observed site, as pragmodels models have


@pytest.mark.nuts
def test_nuts_uses_the_laplace_mass():
    """With the Laplace (here: exact) dense mass the correlated Gaussian is isotropic to NUTS, so its
    trees are short from the first draw; after 15 warm-up iterations of windowed adaptation (fewer than
    20: one window, the mass never updated from the identity) the same trees run to hundreds of steps. A wiring that dropped the
    mass matrix fails the first bound, one that did not fix it after warm-up the step-size check."""
    start = {"theta": jnp.zeros((1, 2))}
    fast = nuts.run_nuts(1, correlated, {}, num_warmup=15, num_samples=200, num_chains=1, dense_mass=True,
                         init_params=start, mass_matrix="laplace")
    slow = nuts.run_nuts(1, correlated, {}, num_warmup=15, num_samples=200, num_chains=1, dense_mass=True,
                         init_params=start)
    assert not fast.cache_hit and not slow.cache_hit  # the setting is part of the program's key
    assert np.median(fast.stats["n_steps"]) <= 7, np.median(fast.stats["n_steps"])
    assert np.median(slow.stats["n_steps"]) >= 63, np.median(slow.stats["n_steps"])
    assert np.all(fast.stats["step_size"] == fast.stats["step_size"][:, :1])
    # the warm-up's own leapfrog steps, per chain (at least one per iteration), short with the Laplace mass too
    assert fast.warmup_steps.shape == (1,) and 15 <= fast.warmup_steps[0] < slow.warmup_steps[0]


def flat_at_the_mode():
    """``x`` with density ``exp(-1e4 x^4)`` (sd 0.06, zero curvature at its mode 0, so the Laplace matrix
    floors it at sd 10) beside ``y ~ N(0, 1)`` (exact)."""
    x = numpyro.sample("x", dist.Normal(0.0, 100.0))
    numpyro.factor("quartic", -1e4 * x**4)
    numpyro.sample("y", dist.Normal(0.0, 1.0))


@pytest.mark.nuts
def test_the_first_phase_re_estimates_a_wrong_laplace_matrix():
    """Warm-up long enough re-estimates the matrix from its own draws (phase_one_length), with the
    Laplace matrix rescaled to their variances: x's sd 10 (floored) against a true 0.06 would make every
    tree long at the step size x allows; re-estimated, trees are short. 15 warm-up iterations
    (too few to re-estimate: the fixed matrix) are the negative control."""
    from pragmodels.inference.laplace_mass import phase_one_length, shrunk_covariance

    assert phase_one_length(300) == 200 and phase_one_length(15) == 15 and phase_one_length(20) == 20
    start = {"x": jnp.zeros(1), "y": jnp.zeros(1)}
    kw = dict(num_samples=300, num_chains=1, dense_mass=True, init_params=start, mass_matrix="laplace")
    fixed = nuts.run_nuts(3, flat_at_the_mode, {}, num_warmup=15, **kw)
    again = nuts.run_nuts(3, flat_at_the_mode, {}, num_warmup=300, **kw)
    # means: the fixed matrix's trees range from 1 to 400 steps (64-127 on average for seeds 3-5), the
    # re-estimated one's 4.6-5.1
    assert fixed.stats["n_steps"].mean() >= 40, fixed.stats["n_steps"].mean()
    assert again.stats["n_steps"].mean() <= 12, again.stats["n_steps"].mean()
    assert abs(np.std(again.samples["x"]) - 0.0585) < 0.01  # sd of exp(-1e4 x^4): 0.1 sqrt(G(3/4)/G(1/4))
    # the rescaled target: the draws' variances with the prior's correlation; a value that never moved keeps the prior's
    draws = jnp.asarray(np.random.default_rng(0).normal(size=(400, 2)) * [0.1, 3.0], jnp.float32)
    draws = draws.at[:, 1].set(0.0)
    prior = jnp.asarray([[100.0, 5.0], [5.0, 1.0]])
    cov = np.asarray(shrunk_covariance(draws, prior, weight=10.0))
    assert abs(cov[0, 0] - 0.01) < 0.002 and abs(cov[1, 1] - 10 / 410) < 1e-6
    np.testing.assert_allclose(cov[0, 1], 10 / 410 * 5.0 * np.sqrt(np.var(np.asarray(draws[:, 0]), ddof=1) / 100),
                               rtol=1e-4)


# a statistical check, in the slow tier: the default run fits with the Laplace mass in
# test_settings_are_checked_and_recorded, and checks the matrix the kernel uses in test_nuts_uses_the_laplace_mass
@pytest.mark.slow
@pytest.mark.nuts
def test_laplace_mass_matches_exact_beta_posterior():
    """A skewed posterior (Beta, on the logit scale its Laplace approximation is only approximate), started
    at the mode: means and 5/50/95% quantiles within 4 Monte Carlo standard errors of the exact Beta
    posterior (12 comparisons; a correct sampler fails one with probability ~1e-3 at these fixed seeds)."""
    found = multistart_inits(jax.random.key(0), beta_binomial, dict(y=Y, n=N), 4)
    run = nuts.run_nuts(2, beta_binomial, dict(y=Y, n=N), num_warmup=200, num_samples=1000, num_chains=4,
                        chain_method="vectorized", init_params=found.init_params, mass_matrix="laplace")
    check_exact_beta(run.samples["theta"])
    assert run.stats["diverging"].sum() == 0


@pytest.mark.nuts
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # 2 x 100 draws: low ESS
def test_settings_are_checked_and_recorded():
    """``laplace`` needs starts at a mode (init 'optimize' or 'basins'; run_nuts: init_params); an unknown
    value is named; a fit records the setting in ``sampler_settings``."""
    data = dict(y=Y, n=N)
    with pytest.raises(ValueError, match=r"init='optimize' or 'basins'; got init='median'"):
        pm.fit(0, beta_binomial, data, mass_matrix="laplace", progress_bar=False)
    with pytest.raises(ValueError, match=r"mass_matrix must be one of \('adapt', 'laplace'\); got 'lapace'"):
        pm.fit(0, beta_binomial, data, mass_matrix="lapace", init="optimize", progress_bar=False)
    with pytest.raises(ValueError, match="pass init_params"):
        nuts.run_nuts(0, beta_binomial, data, mass_matrix="laplace")
    tree = pm.fit(0, beta_binomial, data, num_warmup=100, num_samples=100, num_chains=2, init="optimize",
                  mass_matrix="laplace", chain_method="vectorized", progress_bar=False, posterior_predictive=False)
    settings = json.loads(tree.attrs["sampler_settings"])
    assert settings["mass_matrix"] == "laplace" and settings["init"] == "optimize"
    steps = json.loads(tree.attrs["warmup_leapfrog_steps"])
    assert len(steps) == 2 and all(isinstance(n, int) and n >= 100 for n in steps)
    # the default, "adapt", is recorded too: tests/inference/test_fitting.py::test_datatree_groups_dims_and_provenance
