"""Log-space primitives that stay finite, with finite gradients, when probabilities are zero.

Layering: imports only ``jax``, ``numpy`` and :mod:`pragmodels.validation`; imported by ``semantics``, ``agents`` and ``likelihoods``.

The convention throughout pragmodels: a conditional distribution whose normaliser is zero
(an utterance true of no state, a state no utterance fits) is *undefined*; its whole row is
returned as ``-inf`` (probability zero everywhere) rather than NaN, and no gradient flows
through it. Downstream agents treat such rows as impossible events, so they never poison
other rows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from pragmodels.validation import concrete, numeric

__all__ = ["log_sum_exp", "log_normalize", "masked_scale", "log_mix_uniform", "check_weight"]


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

    Slices whose entries are all ``-inf`` come back as all ``-inf``, instead of NaN, and no NaN
    enters the gradient. ``+inf`` and NaN inputs are not supported (validate inputs eagerly with
    :func:`pragmodels.semantics.check_log_semantics`).

    The per-element work is one subtraction, as in the plain ``x - logsumexp(x)``: the safety is a
    select on the normaliser vector (an all ``-inf`` slice minus 0 stays ``-inf``), kept out of the
    per-element loop by :func:`settled`. Until 2026-12-07 a select per element made the agents'
    tables too costly for XLA to recompute where they are read, so the listener wrote one more
    ``[utterance, state]`` buffer (1.1-1.2x the plain-JAX listener; ``benchmarks/listener_forms.py``).

    Shapes: ``x [...]`` -> the same shape.
    """
    lse = log_sum_exp(x, axis, keepdims=True)
    return x - settled(jnp.where(lse > -jnp.inf, lse, 0.0))


def settled(x: jax.Array) -> jax.Array:
    """``x``, computed once where it stands (an ``optimization_barrier``; values and gradients unchanged).

    Two uses. A *vector* broadcast against a table (a normaliser): without the barrier XLA fuses
    its selects and logs into the elementwise loop over the table, where they run once per element
    (at 3000 x 3000 the listener ran 1.2x slower with them fused). A *table* with a product in it
    (``alpha * log L``) that a reduction and an elementwise loop both read: without the barrier XLA
    may recompute it in each, and the two need not round alike (at ``xla_backend_optimization_level=0``
    a YNNPACK reduction and an LLVM loop differ by an ulp), so a row would be normalised by the
    log-sum-exp of slightly different numbers, an error the recursion multiplies by ``alpha`` at
    every level (rows summing to 0.9996 at depth 5, alpha = 7.4). Settled, every reader sees the
    same numbers; sums and differences of settled tables and vectors round alike wherever they
    are recomputed.

    Shapes: any -> the same.
    """
    return lax.optimization_barrier(x)


def masked_scale(log_p: jax.Array, alpha: jax.Array, offset: jax.Array) -> jax.Array:
    """``alpha * (log_p - offset)`` where ``log_p`` is finite, ``-inf`` elsewhere, :func:`settled`.

    The double ``where`` keeps ``d/d alpha`` at zero (not ``-inf * 0 = NaN``) for entries
    with zero probability, which is what makes 0/1 lexica differentiable. Settled, the table is
    written once and read by the normaliser and the elementwise loops alike (its selects would
    otherwise keep XLA from recomputing it where it is read, and it kept a second copy).

    Shapes: ``log_p [...]``; ``alpha`` and ``offset`` broadcast against it -> the broadcast shape.
    """
    ok = log_p > -jnp.inf
    safe = jnp.where(ok, log_p, 0.0)
    return settled(jnp.where(ok, alpha * (safe - offset), -jnp.inf))


def check_weight(weight: ArrayLike, what: str, name: str = "weight") -> None:
    """A concrete mixture weight (a lapse) must lie in [0, 1]: else a ``ValueError`` naming ``what``,
    the argument ``name`` and the offending entry (a traced weight: no check).

    Shapes: ``weight`` any shape."""
    arr = concrete(weight)
    if arr is not None:
        num = numeric(arr)  # not numbers (e.g. strings): every entry is bad, the first is named
        bad = np.ones(arr.shape, bool) if num is None else np.isnan(num) | (num < 0) | (num > 1)
        if bad.any():
            i = tuple(int(k) for k in np.argwhere(bad)[0]) if arr.ndim else ()
            where = f"{name}{list(i)}" if arr.ndim else name
            raise ValueError(f"{what}: {where} = {arr[i].item()!r}; expected a lapse (mixture weight) in [0, 1].")


def log_mix_uniform(log_p: jax.Array, weight: ArrayLike, axis: int = -1) -> jax.Array:
    """``log((1 - weight) * p + weight / n)`` along ``axis``, with ``n = log_p.shape[axis]``.

    ``weight`` in [0, 1] broadcasts against ``log_p`` with ``axis`` removed; a concrete weight
    outside [0, 1] or NaN is an error that names it. At ``weight == 0`` the input is returned
    unchanged; values and gradients stay finite on the whole of [0, 1], ``weight = 1`` included.

    An undefined slice (all ``-inf``: e.g. an utterance true of no state) has no pragmatic
    answer, so under a lapse it is answered at random: for ``weight > 0`` it becomes uniform,
    ``-log n`` everywhere, with zero gradient (and a normalised distribution, so a choice
    likelihood on such a row is the same whether or not it is read through ``rows=``). With
    ``weight == 0`` it stays ``-inf``.

    Shapes: ``log_p [...]``, ``weight`` scalar or ``log_p``'s shape without ``axis`` (sizes of 1
    broadcast; any other shape is a ``ValueError``) -> ``log_p``'s shape.
    """
    check_weight(weight, "log_mix_uniform")
    ax = axis % jnp.ndim(log_p)
    rows = tuple(jnp.shape(log_p)[:ax]) + tuple(jnp.shape(log_p)[ax + 1:])
    w_shape = tuple(jnp.shape(weight))
    if w_shape and (len(w_shape) != len(rows) or any(w not in (1, r) for w, r in zip(w_shape, rows))):
        raise ValueError(f"log_mix_uniform: weight must be a scalar or have shape {rows} (log_p's shape "
                         f"{tuple(jnp.shape(log_p))} without axis {axis}; sizes of 1 broadcast); got shape {w_shape}.")
    if isinstance(weight, (int, float)) and weight == 0:
        return log_p  # statically off: no work in the compiled graph
    n = log_p.shape[axis]
    w = jnp.asarray(weight, dtype=log_p.dtype)
    if w.ndim == 0:
        # one weight: lax.cond evaluates only the branch it needs (on a 24 x 6 x 81 x 7 table both
        # branches on every element cost 2.5x the ordinal probabilities themselves); under vmap
        # (batched chains) the cond becomes a select of both, as for an array weight below. Each
        # branch gets a weight in its own range, so a branch not taken has no inf or NaN gradient.
        w_lo = jnp.where((w > 0) & (w <= 0.5), w, 0.25)
        w_hi = jnp.where(w > 0.5, w, 0.75)
        mixed = lax.cond(w > 0.5, lambda lp, lo, hi: _mix_high(lp, hi, n), lambda lp, lo, hi: _mix_low(lp, lo, n),
                         log_p, w_lo, w_hi)
        return jnp.where(w > 0, _defined_or_uniform(mixed, log_p, axis, n), log_p)
    w = jnp.expand_dims(w, axis % log_p.ndim)
    pos = w > 0
    high = w > 0.5
    mixed = jnp.where(high, _mix_high(log_p, jnp.where(high, w, 0.75), n),
                      _mix_low(log_p, jnp.where(pos & ~high, w, 0.25), n))
    return jnp.where(pos, _defined_or_uniform(mixed, log_p, axis, n), log_p)


def _mix_low(log_p: jax.Array, w: jax.Array, n: int) -> jax.Array:
    """``log((1 - w) p + w / n)`` for ``0 < w <= 1/2``: logaddexp(a, b) with ``a = log(1 - w) +
    log_p``, as max + log1p(exp(-|a - b|)) (stable in both terms, so the gradient has no cancellation
    at small w), written out because jnp.logaddexp's inf-safe custom JVP costs ~5x more on large
    tables; ``a = -inf`` (p = 0) gives ``b``."""
    b = jnp.log(w) - jnp.log(n)
    a = jnp.log1p(-w) + log_p
    live = a > -jnp.inf
    a_safe = jnp.where(live, a, b)
    return jnp.where(live, jnp.maximum(a_safe, b) + jnp.log1p(jnp.exp(-jnp.abs(a_safe - b))), b)


def _mix_high(log_p: jax.Array, w: jax.Array, n: int) -> jax.Array:
    """The same for ``w > 1/2``: ``b + log1p((1 - w) / w * n * p)``, whose derivative stays finite at w = 1."""
    return jnp.log(w) - jnp.log(n) + jnp.log1p((1.0 - w) / w * n * jnp.exp(log_p))


def _defined_or_uniform(mixed: jax.Array, log_p: jax.Array, axis: int, n: int) -> jax.Array:
    """``mixed``, except on an all ``-inf`` slice of ``log_p``, which becomes uniform (``-log n``)."""
    defined = jnp.max(log_p, axis=axis, keepdims=True) > -jnp.inf
    return jnp.where(defined, mixed, -jnp.log(n).astype(log_p.dtype))
