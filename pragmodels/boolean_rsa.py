"""The RSA recursion on a 0/1 lexicon in closed form: matrix-vector products, not log-sum-exps.

Layering: imports ``jax`` and ``numpy`` only; :mod:`pragmodels.agents` calls it for ``boolean=True``.

On a Boolean lexicon ``M [utterance, state]`` every level of the recursion factorises. The
literal listener is ``L0(s | u) = M[u, s] Pi(s) / N(u)`` with ``N = M Pi``. The speaker above
it, ``S(u | s) ∝ L0(s | u)^alpha exp(-alpha c(u))``, is ``M[u, s] w(u) / Z(s)``: ``Pi(s)^alpha``
cancels within a state, ``w(u) = N(u)^-alpha exp(-alpha c(u))`` (``exp(-c(u))`` with the cost
outside) and ``Z = M^T w``. The listener above that is ``L(s | u) = M[u, s] v(s) / (M v)(u)``
with ``v(s) = Pi(s) / Z(s)``, and the next speaker has the first speaker's form with ``N = M v``.
So depth ``k`` costs ``2k + 1`` matrix-vector products and one pass over the table to write it,
where the log-space recursion exponentiates the whole table ``2k + 1`` times. The vectors are
kept as logarithms and rescaled by their largest entry before each product; where their range
is too wide for the dtype (a product could underflow, e.g. at a large ``alpha``),
:func:`boolean_recursion` says so and the caller takes the log-space path.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["boolean_recursion", "speaker_table", "listener_weights", "listener_norms", "listener_table", "safe_range"]


def safe_range(dtype: jnp.dtype) -> float:
    """The widest range (in nats) of a rescaled vector whose matrix-vector products cannot underflow.

    Every entry then lies in ``[exp(-range), 1]``, above the dtype's smallest normal number with a
    margin of ``log(n)`` and more (float32: 70 of 87 nats; float64: 566 of 708).

    Parameters
    ----------
    dtype : numpy dtype
        A float dtype.

    Returns
    -------
    float
    """
    return 0.8 * -math.log(float(np.finfo(dtype).tiny))


def _log_matvec(mask: jax.Array, log_x: jax.Array, transpose: bool) -> tuple[jax.Array, jax.Array]:
    """``log(M x)`` (or ``log(M^T x)``) for ``x = exp(log_x)`` (``-inf`` entries: 0), and the range
    (max - min over finite entries) of ``log_x``; an all ``-inf`` result row stays ``-inf``."""
    log_y, spread, _ = _log_matvec_nan(mask, log_x, transpose)
    return log_y, spread


def _log_matvec_nan(mask: jax.Array, log_x: jax.Array, transpose: bool) -> tuple[jax.Array, jax.Array, jax.Array]:
    """:func:`_log_matvec`, and whether the product met a NaN of ``mask`` (a row of ``-inf`` there)."""
    finite = log_x > -jnp.inf
    top = jnp.max(jnp.where(finite, log_x, -jnp.inf))
    top = jax.lax.stop_gradient(jnp.where(top > -jnp.inf, top, 0.0))
    low = jnp.min(jnp.where(finite, log_x, jnp.inf))
    spread = jnp.where(jnp.any(finite), jax.lax.stop_gradient(top - low), 0.0)
    x = jnp.where(finite, jnp.exp(jnp.where(finite, log_x, 0.0) - top), 0.0)
    y = (x @ mask) if transpose else (mask @ x)
    ok = y > 0
    return jnp.where(ok, jnp.log(jnp.where(ok, y, 1.0)) + top, -jnp.inf), spread, jnp.any(jnp.isnan(y))


def _speaker_weights(log_n: jax.Array, alpha: jax.Array, cost: jax.Array, outside: bool) -> jax.Array:
    """``log w(u) = -alpha log N(u) - alpha c(u)`` (``- c(u)`` outside); ``-inf`` where ``N(u) = 0``.

    ``log N`` is centred on its mean first: a constant factor of ``w`` cancels in the speaker, but
    uncentred it multiplies the float32 rounding of the backward pass's cotangents (which sum to 0)
    in ``d/d alpha`` (at 1000²: 10% off uncentred, 2e-5 centred; the log-space path 2e-4).
    """
    ok = log_n > -jnp.inf
    safe = jnp.where(ok, log_n, 0.0)
    centre = jax.lax.stop_gradient(jnp.sum(safe) / jnp.maximum(jnp.sum(ok), 1))
    scaled = -alpha * (safe - centre) - (cost if outside else alpha * cost)
    return jnp.where(ok, scaled, -jnp.inf)


def boolean_recursion(mask: jax.Array, alpha: jax.Array, cost: jax.Array, log_inner: jax.Array, depth: int,
                      outside: bool) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The speaker at level ``depth`` as ``(log w [utterance], log Z [state], spread, nan)``.

    ``S_depth(u | s) = M[u, s] w(u) / Z(s)``; ``spread`` is the widest range a rescaled vector had
    (compare with :func:`safe_range`: beyond it the result may have lost entries to underflow);
    ``nan``: whether ``mask`` holds a NaN (read from the first product, so a caller that marks the
    entries it cannot trust as NaN, a graded entry of a traced lexicon, learns of them without a
    pass of its own over the table).

    Shapes: ``mask [utterance, state]``, ``alpha []``, ``cost [utterance]``, ``log_inner [state]``
    -> ``([utterance], [state], [], [])``.

    Parameters
    ----------
    mask : jax.Array
        ``M [utterance, state]``, 0.0 or 1.0.
    alpha : jax.Array
        Rationality, a scalar.
    cost : jax.Array
        ``[utterance]`` (zeros for none).
    log_inner : jax.Array
        ``[state]``: the prior of the inner listeners (zeros for a uniform one).
    depth : int
        Speaker level, >= 1.
    outside : bool
        ``cost_scaling="outside"``.

    Returns
    -------
    tuple of jax.Array
    """
    log_n, spread, nan = _log_matvec_nan(mask, log_inner, transpose=False)
    for level in range(depth):
        log_w = _speaker_weights(log_n, alpha, cost, outside)
        log_z, s_w = _log_matvec(mask, log_w, transpose=True)
        spread = jnp.maximum(spread, s_w)
        if level == depth - 1:
            return log_w, log_z, spread, nan
        ok = log_z > -jnp.inf
        log_v = jnp.where(ok, log_inner - jnp.where(ok, log_z, 0.0), -jnp.inf)
        log_n, s_v = _log_matvec(mask, log_v, transpose=False)
        spread = jnp.maximum(spread, s_v)
    raise ValueError(f"depth must be >= 1; got {depth}.")


def speaker_table(mask: jax.Array, log_w: jax.Array, log_z: jax.Array, log_inner: jax.Array) -> jax.Array:
    """``log S(u | s) = log w(u) - log Z(s)`` where ``M[u, s] = 1`` (``-inf`` elsewhere); a state no
    utterance fits, or one the listener below gives prior 0 (``log_inner = -inf``), is all ``-inf``.

    Shapes: ``mask [utterance, state]``, ``log_w [utterance]``, ``log_z [state]``, ``log_inner
    [state]`` -> ``[utterance, state]``.
    """
    live = (log_z > -jnp.inf) & (log_inner > -jnp.inf)
    ok = (mask > 0) & (log_w[:, None] > -jnp.inf) & live[None, :]
    return jnp.where(ok, jnp.where(ok, log_w[:, None], 0.0) - jnp.where(ok, log_z[None, :], 0.0), -jnp.inf)


def listener_weights(log_z: jax.Array, log_prior: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``log v = log P - log Z`` (``-inf`` where ``Z = 0``) of the listener above the speaker ``M w / Z``,
    and its range over finite entries (to compare with :func:`safe_range` before :func:`listener_table`
    multiplies by it: a wide prior widens it beyond the speaker's own range).

    Shapes: ``log_z [state]``, ``log_prior [state]`` -> ``([state], [])``.
    """
    ok_z = (log_z > -jnp.inf) & (log_prior > -jnp.inf)
    log_v = jnp.where(ok_z, jnp.where(ok_z, log_prior, 0.0) - jnp.where(ok_z, log_z, 0.0), -jnp.inf)
    top, low = jnp.max(jnp.where(ok_z, log_v, -jnp.inf)), jnp.min(jnp.where(ok_z, log_v, jnp.inf))
    return log_v, jnp.where(jnp.any(ok_z), jax.lax.stop_gradient(top - low), 0.0)


def listener_norms(mask: jax.Array, log_v: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``log (M v)(u)``, the listener's normaliser per utterance (:func:`listener_table`), and the range of
    ``log v`` the product was taken over (:func:`safe_range`).

    Shapes: ``mask [utterance, state]``, ``log_v [state]`` -> ``([utterance], [])``.
    """
    return _log_matvec(mask, log_v, transpose=False)


def listener_table(mask: jax.Array, log_v: jax.Array, log_mv: jax.Array) -> jax.Array:
    """The listener above the speaker ``M w / Z``: ``log L(s | u) = log v(s) - log (M v)(u)``
    (:func:`listener_weights`; ``log_mv``: :func:`listener_norms`' first value), where ``M[u, s] = 1``
    (``-inf`` elsewhere; an utterance true of no state with ``v > 0`` is all ``-inf``). One
    elementwise pass over the table.

    Shapes: ``mask [utterance, state]``, ``log_v [state]``, ``log_mv [utterance]`` -> ``[utterance, state]``.
    """
    ok = (mask > 0) & (log_v[None, :] > -jnp.inf) & (log_mv[:, None] > -jnp.inf)
    return jnp.where(ok, jnp.where(ok, log_v[None, :], 0.0) - jnp.where(ok, log_mv[:, None], 0.0), -jnp.inf)
