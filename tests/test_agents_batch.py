"""Batched agents (batch on the last axis) against the naive NumPy loop and ``vmap`` of the
unbatched agents.

Tolerance: float32, 2e-5 absolute on probabilities (as tests/test_agents.py); gradients 1e-4
relative to the unbatched agent's, which runs the same float32 operations in another layout.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pragmodels import agents
from tests import naive_rsa
from tests.test_agents import ATOL, random_lexicon, to_log

N_BATCH = 4


@pytest.mark.parametrize("depth", range(4))
@pytest.mark.parametrize("prior_at", ["all", "top"])
@pytest.mark.parametrize("cost_scaling", ["inside", "outside"])
@pytest.mark.parametrize("shared", [True, False])
def test_listener_batch_matches_naive_loop(depth, prior_at, cost_scaling, shared):
    rng = np.random.default_rng(depth + 7 * shared)
    n_u, n_s = 4, 5
    lex = [random_lexicon(rng, n_u, n_s, graded=bool(b % 2)) for b in range(1 if shared else N_BATCH)]
    alpha = rng.uniform(0.2, 6.0, N_BATCH)
    cost = rng.uniform(0, 1.5, (n_u, N_BATCH))
    prior = rng.dirichlet(np.ones(n_s), N_BATCH).T  # [state, batch]
    sem = to_log(lex[0]) if shared else jnp.stack([to_log(t) for t in lex], axis=-1)
    out = np.exp(np.asarray(agents.pragmatic_listener_batch(
        sem, jnp.asarray(alpha, jnp.float32), jnp.asarray(cost, jnp.float32),
        jnp.log(jnp.asarray(prior, jnp.float32)), depth, prior_at=prior_at, cost_scaling=cost_scaling), float))
    assert out.shape == (n_u, n_s, N_BATCH)
    for b in range(N_BATCH):
        c = cost[:, b] if cost_scaling == "inside" else cost[:, b] / alpha[b]  # "outside" = "inside" with cost/alpha
        ref = naive_rsa.rsa(lex[0 if shared else b], alpha[b], c, prior[:, b], depth, prior_at)
        np.testing.assert_allclose(out[:, :, b], ref, atol=ATOL)


@pytest.mark.parametrize("depth", [1, 2])
def test_speaker_batch_equals_vmap(depth):
    rng = np.random.default_rng(depth)
    sem = jnp.stack([to_log(random_lexicon(rng, 3, 6, graded=True)) for _ in range(N_BATCH)], -1)
    alpha = jnp.asarray(rng.uniform(0.5, 4, N_BATCH), jnp.float32)
    cost = jnp.asarray(rng.uniform(0, 1, 3), jnp.float32)
    got = agents.pragmatic_speaker_batch(sem, alpha, cost, None, depth)
    ref = jax.vmap(lambda s, a: agents.pragmatic_speaker(s, a, cost, None, depth), in_axes=(2, 0), out_axes=2)(sem, alpha)
    assert got.shape == (6, 3, N_BATCH)
    np.testing.assert_allclose(np.exp(np.asarray(got)), np.exp(np.asarray(ref)), atol=ATOL)


def test_listener_batch_gradient_equals_vmap():
    """The batched layout differentiates like the vmapped agents, 0/1 lexicon included (no NaN)."""
    rng = np.random.default_rng(3)
    sem = to_log(random_lexicon(rng, 5, 7))
    w = jnp.asarray(rng.standard_normal((5, 7, N_BATCH)), jnp.float32)
    safe = lambda x: jnp.where(jnp.isfinite(x), x, 0.0)  # noqa: E731

    def batched(alpha):
        return jnp.sum(w * safe(agents.pragmatic_listener_batch(sem, alpha, None, None, 2)))

    def vmapped(alpha):
        out = jax.vmap(lambda a: agents.pragmatic_listener(sem, a, None, None, 2), out_axes=2)(alpha)
        return jnp.sum(w * safe(out))

    alpha = jnp.asarray([0.3, 1.0, 2.5, 9.0], jnp.float32)
    g_b, g_v = jax.grad(batched)(alpha), jax.grad(vmapped)(alpha)
    assert np.all(np.isfinite(np.asarray(g_b)))
    np.testing.assert_allclose(np.asarray(g_b), np.asarray(g_v), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kwargs, match", [
    (dict(log_semantics=np.zeros((2, 3, 4, 5)), alpha=np.ones(5)), "log_semantics must have shape"),
    (dict(log_semantics=np.zeros((2, 3)), alpha=np.ones((2, 2))), "alpha must be a scalar or have shape"),
    (dict(log_semantics=np.zeros((2, 3, 4)), alpha=np.ones(5)), "4 batch entries but alpha has 5"),
    (dict(log_semantics=np.zeros((2, 3)), alpha=1.0), "no batch axis"),
    (dict(log_semantics=np.zeros((2, 3)), alpha=np.ones(4), cost=np.ones(3)), r"cost must have shape \[utterance\]"),
    (dict(log_semantics=np.zeros((2, 3)), alpha=np.ones(4), cost=np.ones((2, 3))), r"\(2, 4\); got \(2, 3\)"),
    (dict(log_semantics=np.zeros((2, 3)), alpha=np.ones(4), log_prior=np.ones(2)), r"log_prior must have shape \[state\]"),
])
def test_batch_shapes_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        agents.pragmatic_listener_batch(**kwargs)
