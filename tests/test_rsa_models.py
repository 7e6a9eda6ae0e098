"""The per-item listener's sufficient-statistics potential (issue 38, item 2).

Tolerance: float32. Values 1e-5 relative (sums of a few hundred float32 terms, computed in another
order); gradients 1e-4 relative to the largest entry (the agents' reverse mode and the closed
form's differentiate the same function through different float32 operations).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers
from numpyro.infer.util import log_density, potential_energy

from pragmodels import agents, rsa_models
from pragmodels.likelihoods.categorical import TableCategorical, TableCounts, tabulate_potential
from pragmodels.params import with_priors
from pragmodels.rsa_models import ItemListenerTable, hierarchical_listener_model, item_listener_counts_log_lik
from pragmodels.simulate import scale_listener_by_item


def _case(seed: int, shared: bool, zeros: bool, n_u: int = 4, n_s: int = 7, n_i: int = 9):
    rng = np.random.default_rng(seed)
    sem = np.log(rng.uniform(0.05, 1.0, (n_u, n_s)))
    if zeros:  # a 0/1-style lexicon: false cells, and one utterance true everywhere
        sem[rng.uniform(size=sem.shape) < 0.35] = -np.inf
        sem[0] = 0.0
    if not shared:
        sem = sem[..., None] + rng.normal(0.0, 0.3, (n_u, n_s, n_i)) * np.isfinite(sem)[..., None]
    alpha = rng.uniform(0.0, 8.0, n_i)
    alpha[0] = 0.0  # the boundary of alpha's support
    return jnp.asarray(sem, jnp.float32), jnp.asarray(alpha, jnp.float32), rng


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("zeros", [False, True])
@pytest.mark.parametrize("prior", [None, "all", "top"])
@pytest.mark.parametrize("block", [None, 4])
def test_sufficient_statistics_equal_the_listener_table_value_and_gradient(shared, zeros, prior, block, monkeypatch):
    """``item_listener_counts_log_lik`` is ``Σ counts · log L1`` of the agents' batched listener
    (``block=4``: 9 items in 3 blocks of 4, the last one padded)."""
    if block:
        monkeypatch.setattr(rsa_models, "ITEM_BLOCK", block)
        monkeypatch.setattr(rsa_models, "WHOLE_TABLE_ITEMS", block)
    sem, alpha, rng = _case(3 + 2 * shared + zeros, shared, zeros)
    log_prior = None if prior is None else jnp.log(jnp.asarray(rng.dirichlet(np.ones(sem.shape[1])), jnp.float32))
    prior_at = prior or "all"
    table = agents.pragmatic_listener_batch(sem, alpha, None, log_prior, 1, prior_at=prior_at)
    counts = jnp.asarray(rng.poisson(2.0, table.shape) * np.isfinite(np.asarray(table)), jnp.float32)

    def by_table(a):
        t = agents.pragmatic_listener_batch(sem, a, None, log_prior, 1, prior_at=prior_at)
        return jnp.sum(jnp.where(counts > 0, counts * jnp.where(counts > 0, t, 0.0), 0.0))

    def by_stats(a):
        return item_listener_counts_log_lik(counts, sem, a, log_prior, prior_at)

    v_ref, g_ref = jax.value_and_grad(by_table)(alpha)
    v, g = jax.value_and_grad(by_stats)(alpha)
    # the blocks are a loop (lax.map) in the program, the whole table none
    assert ("scan" in str(jax.make_jaxpr(jax.value_and_grad(by_stats))(alpha))) == bool(block)
    assert np.isfinite(float(v)) and np.all(np.isfinite(np.asarray(g)))
    np.testing.assert_allclose(float(v), float(v_ref), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), atol=1e-4 * float(jnp.abs(g_ref).max()))


def test_sufficient_statistics_gradient_in_the_semantics_too():
    """Perturbed semantics (e.g. sampled) take plain AD through the closed form: same gradient as the table."""
    sem, alpha, rng = _case(11, True, False)
    table = agents.pragmatic_listener_batch(sem, alpha, None, None, 1)
    counts = jnp.asarray(rng.poisson(2.0, table.shape), jnp.float32)

    def by_table(s, a):
        t = agents.pragmatic_listener_batch(s, a, None, None, 1)
        return jnp.sum(counts * t)

    g_ref = jax.grad(by_table, argnums=(0, 1))(sem, alpha)
    g = jax.grad(lambda s, a: item_listener_counts_log_lik(counts, s, a), argnums=(0, 1))(sem, alpha)
    for x, ref in zip(g, g_ref, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(ref), atol=1e-4 * float(jnp.abs(ref).max()))


def _model_and_point(n_items=12, **priors):
    data, _ = scale_listener_by_item(0, n_items=n_items)
    arrays = {k: jnp.asarray(v) for k, v in data.items() if k != "n_items"}
    model = functools.partial(with_priors(hierarchical_listener_model(), priors) if priors else
                              hierarchical_listener_model(), n_items=n_items)
    rng = np.random.default_rng(1)
    z = {"alpha_mu": jnp.float32(0.9), "alpha_sigma": jnp.float32(-0.4),
         "alpha_z": jnp.asarray(rng.standard_normal(n_items), jnp.float32)}
    if "lapse" not in priors:
        z["lapse"] = jnp.float32(-2.0)
    return model, arrays, z


def test_hierarchical_potential_reads_the_choices_through_sufficient_statistics():
    """With the lapse fixed at 0, the sampler's potential uses the statistics (not the listener
    table) and equals the per-trial log density, value and gradient; the per-trial values stay."""
    model, arrays, z = _model_and_point(lapse=0.0)
    fn = handlers.trace(handlers.seed(tabulate_potential(model), 0)).get_trace(**arrays)["choice"]["fn"]
    assert isinstance(fn, TableCounts) and isinstance(fn.base, ItemListenerTable)
    v_pot, g_pot = jax.value_and_grad(lambda z: potential_energy(tabulate_potential(model), (), arrays, z))(z)
    v_trial, g_trial = jax.value_and_grad(lambda z: potential_energy(model, (), arrays, z))(z)
    np.testing.assert_allclose(float(v_pot), float(v_trial), rtol=1e-5)
    for k in z:
        np.testing.assert_allclose(np.asarray(g_pot[k]), np.asarray(g_trial[k]), rtol=1e-4, atol=1e-4)
    site = handlers.trace(handlers.seed(model, 0)).get_trace(**arrays)["choice"]  # the per-trial form (LOO, predictive)
    assert site["fn"].log_prob(site["value"]).shape == (arrays["item"].shape[0],)


@pytest.mark.parametrize("case", ["lapse sampled", "depth 2"])
def test_hierarchical_potential_keeps_the_table_where_no_statistics_apply(case):
    """A sampled lapse mixes each cell with a uniform choice, and depth 2 has no closed form here:
    both keep the plain table site (and its count-table potential)."""
    if case == "lapse sampled":
        model, arrays, z = _model_and_point()
    else:
        data, _ = scale_listener_by_item(0, n_items=5)
        arrays = {k: jnp.asarray(v) for k, v in data.items() if k != "n_items"}
        model = functools.partial(hierarchical_listener_model(depth=2, priors={"lapse": 0.0}), n_items=5)
    tr = handlers.trace(handlers.seed(tabulate_potential(model), 0)).get_trace(**arrays)
    fn = tr["choice"]["fn"]
    assert isinstance(fn, TableCounts) and type(fn.base) is TableCategorical
    params = {k: s["value"] for k, s in tr.items() if s["type"] == "sample" and not s["is_observed"]}
    assert np.isfinite(float(log_density(tabulate_potential(model), (), arrays, params)[0]))
