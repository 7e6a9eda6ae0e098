"""Simulation-based calibration (Talts et al. 2018) and parameter recovery, with a negative control.

All replicates are fitted in one NUTS run: the replicates' parameters are independent a priori
and their data are independent, so the joint posterior is the product of the replicates'
posteriors and each replicate's marginal is exactly its own posterior. The model is the
reference-game speaker (alpha, cost of "square") built from pragmodels' agents and likelihoods.
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from numpyro.infer import MCMC, NUTS
from scipy import stats

from pragmodels import agents
from pragmodels.likelihoods.categorical import speaker_choices
from pragmodels.params import param
from pragmodels.priors import Prior
from pragmodels.semantics import boolean_semantics
from pragmodels.simulate import REFERENCE_LEXICON

pytestmark = pytest.mark.slow

SEM = boolean_semantics(REFERENCE_LEXICON)
COST_DESIGN = jnp.array([0.0, 0.0, 1.0, 0.0])
PRIORS = {"alpha": Prior("LogNormal", loc=0.5, scale=0.7), "cost_weight": Prior("HalfNormal", scale=1.0)}
N_REP, THIN_TO = 200, 99


def speakers(alpha, cost):
    return jax.vmap(lambda a, c: agents.pragmatic_speaker(SEM, a, c * COST_DESIGN))(alpha, cost)


def batch_model(state, choice=None):
    n_rep = state.shape[0]
    with numpyro.plate("replicate", n_rep):
        alpha = param("alpha", PRIORS["alpha"])
        cost = param("cost_weight", PRIORS["cost_weight"])
    log_s = speakers(alpha, cost)  # [replicate, state, utterance]
    rows = jnp.take_along_axis(log_s, state[..., None], axis=1)  # [replicate, trial, utterance]
    flat = rows.reshape(-1, rows.shape[-1])
    speaker_choices("choice", flat, None if choice is None else choice.reshape(-1))


def simulate(seed, n_per_state, inflate=1.0):
    rng = np.random.default_rng(seed)
    alpha = np.exp(0.5 + 0.7 * rng.standard_normal(N_REP))
    cost = np.abs(rng.standard_normal(N_REP))
    state = np.tile(np.repeat(np.arange(3), n_per_state), (N_REP, 1))
    p = np.exp(np.asarray(speakers(jnp.asarray(alpha * inflate, jnp.float32), jnp.asarray(cost, jnp.float32))))
    rows = np.take_along_axis(p, state[..., None], axis=1)
    u = rng.uniform(size=rows.shape[:-1] + (1,))
    choice = (rows.cumsum(-1) / rows.sum(-1, keepdims=True) < u).sum(-1).clip(0, 3)
    return dict(alpha=alpha, cost_weight=cost), state, choice


def posterior(state, choice, seed):
    mcmc = MCMC(NUTS(batch_model, target_accept_prob=0.9), num_warmup=500, num_samples=1000,
                num_chains=4, chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.key(seed), jnp.asarray(state), jnp.asarray(choice))
    return {k: np.asarray(v) for k, v in mcmc.get_samples().items()}  # [draws, replicate]


def ranks(draws, truth):
    step = draws.shape[0] // THIN_TO
    thinned = draws[::step][:THIN_TO]  # roughly independent draws (ESS per draw ~ 1 after thinning)
    return (thinned < truth[None, :]).sum(0)  # 0..THIN_TO


def uniformity_p(r):
    counts = np.bincount(r * 10 // (THIN_TO + 1), minlength=10)
    return stats.chisquare(counts).pvalue


@pytest.fixture(scope="module")
def calibrated():
    truth, state, choice = simulate(1, n_per_state=15)
    return truth, posterior(state, choice, 2)


def test_sbc_ranks_uniform_and_intervals_cover(calibrated):
    """Ranks: chi-square over 10 bins (20 expected per bin), reject at p < 0.001 per parameter.
    Coverage of central 90% intervals: binomial sd over 200 replicates is 0.021; allow 3 sd."""
    truth, draws = calibrated
    for name in ("alpha", "cost_weight"):
        p = uniformity_p(ranks(draws[name], truth[name]))
        assert p > 1e-3, (name, p)
        lo, hi = np.quantile(draws[name], [0.05, 0.95], axis=0)
        coverage = np.mean((lo <= truth[name]) & (truth[name] <= hi))
        assert abs(coverage - 0.90) < 0.065, (name, coverage)


def test_negative_control_misspecified_data_fails_sbc():
    """Data generated with alpha inflated 2.5x but fitted with the honest model: ranks pile up
    at the top, so the same uniformity test must reject decisively."""
    truth, state, choice = simulate(3, n_per_state=15, inflate=2.5)
    draws = posterior(state, choice, 4)
    assert uniformity_p(ranks(draws["alpha"], truth["alpha"])) < 1e-6


def test_recovery_error_shrinks_with_n(calibrated):
    """Posterior-mean error for alpha at 15 vs 150 trials per state: with 10x data the RMSE
    should shrink ~3x; require at least 2x."""
    truth, draws_small = calibrated
    truth_big, state, choice = simulate(1, n_per_state=150)
    draws_big = posterior(state, choice, 5)
    rmse = lambda d, t: np.sqrt(np.mean((np.log(d.mean(0)) - np.log(t)) ** 2))
    small, big = rmse(draws_small["alpha"], truth["alpha"]), rmse(draws_big["alpha"], truth_big["alpha"])
    assert big < small / 2, (small, big)
