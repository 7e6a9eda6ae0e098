"""pragmodels.semantics.lm_literal_semantics: L0 ∝ P_LM^beta P(s), batched, masked, differentiable."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pragmodels import agents
from pragmodels.semantics import lm_literal_semantics


def test_beta_scales_the_normalised_lm_distribution():
    rng = np.random.default_rng(0)
    log_lm = rng.normal(-5, 3, (4, 21))
    got = np.asarray(lm_literal_semantics(log_lm, 0.5), float)
    log_p = log_lm - np.log(np.exp(log_lm).sum(-1, keepdims=True))
    np.testing.assert_allclose(got, 0.5 * log_p, atol=1e-5)
    # through the literal listener: L0 ∝ P_LM^beta P(s)
    prior = rng.dirichlet(np.ones(21))
    l0 = np.exp(np.asarray(agents.literal_listener(lm_literal_semantics(log_lm, 0.5), np.log(prior)), float))
    ref = np.exp(log_p) ** 0.5 * prior
    np.testing.assert_allclose(l0, ref / ref.sum(-1, keepdims=True), atol=1e-6)


def test_batched_beta_and_mask():
    rng = np.random.default_rng(1)
    log_lm = rng.normal(-5, 3, (3, 4, 21))
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], bool)
    dirty = np.where(mask[..., None], log_lm, np.nan)
    beta = np.array([0.5, 1.0, 2.0])
    got = np.asarray(lm_literal_semantics(dirty, beta, mask))
    for i in range(3):
        one = np.asarray(lm_literal_semantics(log_lm[i], beta[i]))
        np.testing.assert_allclose(got[i][mask[i]], one[mask[i]], atol=1e-5)
        assert np.all(np.isneginf(got[i][~mask[i]]))
    per_row = np.asarray(lm_literal_semantics(log_lm, np.tile(beta[:, None], (1, 4))))
    np.testing.assert_allclose(per_row, np.asarray(lm_literal_semantics(log_lm, beta)), atol=1e-6)


def test_gradient_in_beta_is_finite_with_zeros_and_padding():
    log_lm = np.zeros((2, 3, 5))
    log_lm[0, 0, 1] = -np.inf  # an answer the LM rules out
    mask = np.array([[1, 1, 0], [1, 0, 0]], bool)
    log_lm = np.where(mask[..., None], log_lm, np.nan)
    w = jnp.asarray(np.random.default_rng(0).normal(size=(2, 3, 5)), jnp.float32)

    def f(beta):
        sem = lm_literal_semantics(log_lm, beta, mask)
        return jnp.sum(jnp.where(jnp.isfinite(sem), sem, 0.0) * w)

    g = jax.grad(f)(jnp.float32(0.7))
    assert np.isfinite(float(g))
    assert np.isneginf(np.asarray(lm_literal_semantics(log_lm, 0.7, mask))[0, 0, 1])


def test_errors():
    with pytest.raises(ValueError, match="expected a temperature >= 0"):
        lm_literal_semantics(np.zeros((2, 3)), -0.1)
    with pytest.raises(ValueError, match=r"log_lm\[1, 2\] = nan"):
        lm_literal_semantics(np.where(np.arange(6).reshape(2, 3) == 5, np.nan, 0.0), 1.0)
    with pytest.raises(ValueError, match="mask must have shape"):
        lm_literal_semantics(np.zeros((2, 3)), 1.0, np.ones(3, bool))
    with pytest.raises(ValueError, match="beta must be a scalar or have the shape of leading axes"):
        lm_literal_semantics(np.zeros((2, 3, 4)), np.ones(3))
    with pytest.raises(ValueError, match=r"\[\.\.\., utterance, state\]"):
        lm_literal_semantics(np.zeros(3), 1.0)
