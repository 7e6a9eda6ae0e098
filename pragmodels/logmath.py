"""Log-space primitives that stay finite, with finite gradients, when probabilities are zero.

Layering: imports only ``jax``; imported by ``semantics``, ``agents`` and ``likelihoods``.

The convention throughout pragmodels: a conditional distribution whose normaliser is zero
(an utterance true of no state, a state no utterance fits) is *undefined*; its whole row is
returned as ``-inf`` (probability zero everywhere) rather than NaN, and no gradient flows
through it. Downstream agents treat such rows as impossible events, so they never poison
other rows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

__all__ = ["log_sum_exp", "log_normalize", "masked_scale", "log_mix_uniform"]


def log_sum_exp(x: jax.Array, axis: int, keepdims: bool = False) -> jax.Array:
    """``log Σ exp(x)`` along ``axis``; ``-inf`` (with zero gradient, not NaN) for all ``-inf`` slices.

    Shapes: ``x [...]`` -> ``x``'s shape without ``axis`` (kept with length 1 if ``keepdims``).
    """
    m = jnp.max(x, axis=axis, keepdims=True)
    finite = m > -jnp.inf
    m_safe = jnp.where(finite, lax.stop_gradient(m), 0.0)
    s = jnp.sum(jnp.exp(x - m_safe), axis=axis, keepdims=True)
    out = jnp.where(finite, jnp.log(jnp.where(finite, s, 1.0)) + m_safe, -jnp.inf)
    return out if keepdims else jnp.squeeze(out, axis)


def log_normalize(x: jax.Array, axis: int) -> jax.Array:
    """Normalise log-weights along ``axis`` (``x - logsumexp(x, axis)``), safely.

    Slices whose entries are all ``-inf`` come back as all ``-inf`` with zero gradient,
    instead of NaN. ``+inf`` and NaN inputs are not supported (validate inputs eagerly with
    :func:`pragmodels.semantics.check_log_semantics`).

    Shapes: ``x [...]`` -> the same shape.
    """
    lse = log_sum_exp(x, axis, keepdims=True)
    ok = lse > -jnp.inf
    return jnp.where(ok, x - jnp.where(ok, lse, 0.0), -jnp.inf)


def masked_scale(log_p: jax.Array, alpha: jax.Array, offset: jax.Array) -> jax.Array:
    """``alpha * (log_p - offset)`` where ``log_p`` is finite, ``-inf`` elsewhere.

    The double ``where`` keeps ``d/d alpha`` at zero (not ``-inf * 0 = NaN``) for entries
    with zero probability, which is what makes 0/1 lexica differentiable.

    Shapes: ``log_p [...]``; ``alpha`` and ``offset`` broadcast against it -> the broadcast shape.
    """
    ok = log_p > -jnp.inf
    safe = jnp.where(ok, log_p, 0.0)
    return jnp.where(ok, alpha * (safe - offset), -jnp.inf)


def log_mix_uniform(log_p: jax.Array, weight: ArrayLike, axis: int = -1) -> jax.Array:
    """``log((1 - weight) * p + weight / n)`` along ``axis``, with ``n = log_p.shape[axis]``.

    ``weight`` in [0, 1] broadcasts against ``log_p`` with ``axis`` removed. At
    ``weight == 0`` the input is returned unchanged (gradients stay finite).

    Shapes: ``log_p [...]``, ``weight`` scalar or ``log_p``'s shape without ``axis`` -> ``log_p``'s shape.
    """
    if isinstance(weight, (int, float)) and weight == 0:
        return log_p  # statically off: no work in the compiled graph
    n = log_p.shape[axis]
    w = jnp.asarray(weight, dtype=log_p.dtype)
    if w.ndim:
        w = jnp.expand_dims(w, axis % log_p.ndim)
    pos = w > 0
    w_safe = jnp.where(pos, w, 0.5)
    # logaddexp(a, b) with b = log(w / n) constant along the axis: b + softplus(a - b), written
    # out because jnp.logaddexp's inf-safe custom JVP costs ~5x more on large tables.
    b = jnp.log(w_safe) - jnp.log(n)
    x = jnp.log1p(-w_safe) + log_p - b
    soft = jnp.where(x > 30.0, x, jnp.log1p(jnp.exp(jnp.minimum(x, 30.0))))
    return jnp.where(pos, b + soft, log_p)
