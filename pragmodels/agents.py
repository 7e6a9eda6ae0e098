"""Rational Speech Act agents as pure JAX functions in log space.

Layering: imports ``jax``, ``numpy``, :mod:`pragmodels.logmath` and :mod:`pragmodels.validation`
only; never numpyro.

Arrays are log-probabilities unless named otherwise: ``log_semantics [utterance, state]``,
``alpha`` a scalar >= 0, ``cost [utterance]`` in nats of utility, ``log_prior [state]`` (``None``:
uniform). Listeners return ``[utterance, state]`` (normalised over ``state``), speakers
``[state, utterance]`` (normalised over ``utterance``); undefined rows are ``-inf``, never NaN.
They compute in the dtype given, float32 or float64; half precision (float16, bfloat16) is a
``ValueError``, also inside ``jit``: at a large ``alpha`` it rounds true cells to probability 0
without an error (cast with ``.astype(jnp.float32)``). The rationality ``alpha`` is >= 0 (0: a
uniform choice among the true utterances); a concrete negative ``alpha``, which would make the
speaker prefer the least informative utterance, is a ``ValueError``. A traced ``alpha`` (sampled
inside a fit) cannot be checked: give it a prior on ``[0, inf)``, as the ready-made models do
(:mod:`pragmodels.rsa_models` refuses any other).

Exposes the literal and pragmatic listeners and speakers (depth k; ``prior_at`` and
``cost_scaling`` choose between the published conventions), their ``_batch`` forms (a batch axis
last; the others are unbatched, use ``jax.vmap``), QUD projection, lexical uncertainty, the lapse
mixture, social and weighted utilities and the joint (state, goal) listener. The recursion, both
conventions and their references are on the docs page *Declaring models* ("The RSA agents").
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike

from pragmodels.boolean_rsa import (
    boolean_recursion,
    listener_norms,
    listener_table,
    listener_weights,
    safe_range,
    speaker_table,
)
from pragmodels.logmath import log_mix_uniform, log_normalize, log_sum_exp, masked_scale, settled
from pragmodels.validation import check_numeric, check_precision, check_shape, check_values, concrete

__all__ = [
    "softmax_speaker",
    "bayes_listener",
    "literal_listener",
    "pragmatic_speaker",
    "pragmatic_listener",
    "pragmatic_speaker_batch",
    "pragmatic_listener_batch",
    "lexical_uncertainty_listener",
    "qud_project",
    "lapse_mixture",
    "social_utility",
    "weighted_utility_speaker",
    "mixed_utility_speaker",
    "joint_listener",
    "joint_marginals",
]

PriorAt = Literal["all", "top"]
CostScaling = Literal["inside", "outside"]
_COST_SCALINGS = ("inside", "outside")


def _as_array(fn: str, name: str, x: ArrayLike) -> jax.Array:
    """``x`` as a JAX array, once :func:`~pragmodels.validation.check_numeric` has named an ``x``
    that does not hold numbers (e.g. strings, which JAX would refuse without naming ``name``) and
    :func:`~pragmodels.validation.check_precision` one in half precision."""
    check_numeric(fn, name, x)
    check_precision(fn, name, x)
    return jnp.asarray(x)


def _check_depth(depth: int, minimum: int) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < minimum:
        raise ValueError(f"depth must be a Python int >= {minimum}; got {depth!r}.")


def _check_table(fn: str, name: str, x: jax.Array, axes: tuple[str, str]) -> None:
    """A 2-D table [axes[0], axes[1]] of log-probabilities/utilities: no NaN, no +inf, not empty."""
    if x.ndim != 2:
        raise ValueError(f"{fn}: {name} must have shape [{axes[0]}, {axes[1]}] (2 axes); got shape {x.shape}"
                         + (" (for many agents at once use the *_batch agents or jax.vmap)." if x.ndim > 2 else "."))
    if 0 in x.shape:
        raise ValueError(f"{fn}: {name} is empty (shape {x.shape}); expected at least one {axes[0]} and one {axes[1]}.")
    check_values(fn, name, x, neg_inf=True)


def _check_alpha(fn: str, alpha: ArrayLike) -> None:
    """A finite rationality ``alpha >= 0`` (each entry of a batch); concrete values only."""
    check_values(fn, "alpha", alpha)
    arr = concrete(alpha)
    if arr is not None and (arr < 0).any():
        i = tuple(int(k) for k in np.argwhere(arr < 0)[0]) if arr.ndim else ()
        where = f"alpha{list(i)}" if arr.ndim else "alpha"
        raise ValueError(f"{fn}: {where} = {arr[i].item()!r}; expected a rationality >= 0 (0: a uniform choice "
                         "among true utterances; a negative alpha prefers the least informative one).")


def _check_params(fn: str, n_utt: int, n_state: int, alpha: ArrayLike | None, cost: ArrayLike | None,
                  log_prior: ArrayLike | None, qud: ArrayLike | None = None) -> None:
    """alpha a finite scalar >= 0, cost [utterance] finite, log_prior [state] (no NaN/+inf), qud [state]."""
    if alpha is not None:
        check_shape(fn, "alpha", alpha, (), "[] (a scalar)")
        _check_alpha(fn, alpha)
    if cost is not None:
        check_shape(fn, "cost", cost, (n_utt,), "[utterance]")
        check_values(fn, "cost", cost)
    if log_prior is not None:
        check_shape(fn, "log_prior", log_prior, (n_state,), "[state]")
        check_values(fn, "log_prior", log_prior, neg_inf=True)
    if qud is not None:
        check_shape(fn, "qud", qud, (n_state,), "[state]")


def _check_prior_at(prior_at: str) -> None:
    if prior_at not in ("all", "top"):
        raise ValueError(f"prior_at must be 'all' or 'top'; got {prior_at!r}.")


def _check_cost_scaling(cost_scaling: str) -> None:
    if not isinstance(cost_scaling, str) or cost_scaling not in _COST_SCALINGS:
        raise ValueError(
            f"cost_scaling must be one of {', '.join(map(repr, _COST_SCALINGS))}; got {cost_scaling!r}. "
            "'inside': exp(alpha * (U - cost)); 'outside': exp(alpha * U - cost)."
        )


def _add_prior(log_w: jax.Array, log_prior: ArrayLike | None) -> jax.Array:
    """``log_w [utterance, state, *batch]`` plus ``log_prior [state]`` or ``[state, *batch]``."""
    if log_prior is None:
        return log_w
    lp = jnp.asarray(log_prior)
    return log_w + lp.reshape((1,) + lp.shape + (1,) * (log_w.ndim - 1 - lp.ndim))


def _cost_column(cost: ArrayLike | None, dtype: DTypeLike, ndim: int = 2) -> jax.Array:
    """``cost [utterance]`` or ``[utterance, *batch]`` shaped to broadcast against
    ``[utterance, state, *batch]`` (``ndim`` axes)."""
    if cost is None:
        return jnp.zeros((), dtype)
    c = jnp.asarray(cost, dtype)
    return c.reshape(c.shape[:1] + (1,) + c.shape[1:] + (1,) * (ndim - 1 - c.ndim))


def qud_project(log_listener: ArrayLike, qud: ArrayLike) -> jax.Array:
    """Project a listener onto a QUD partition of the states (Kao et al. 2014, eq. 4).

    Shapes: ``log_listener [utterance, state]``, ``qud [state]`` (integer cell labels) ->
    ``[utterance, state]``: for each state, the log-probability the listener assigns to the
    state's cell, ``log Σ_{s': qud[s'] = qud[s]} L(s' | u)``.
    """
    log_listener = _as_array("qud_project", "log_listener", log_listener)
    qud = _as_array("qud_project", "qud", qud)
    same = (qud[:, None] == qud[None, :]).astype(log_listener.dtype)  # [state, state]
    m = jnp.max(log_listener, axis=1, keepdims=True)
    finite = m > -jnp.inf
    m_safe = jnp.where(finite, jax.lax.stop_gradient(m), 0.0)
    mass = jnp.exp(log_listener - m_safe) @ same
    ok = mass > 0
    return jnp.where(ok, jnp.log(jnp.where(ok, mass, 1.0)) + m_safe, -jnp.inf)


def _scaled_utility(util: jax.Array, alpha: ArrayLike, cost: ArrayLike | None,
                    cost_scaling: CostScaling) -> jax.Array:
    """``alpha (U − cost)`` ("inside") or ``alpha U − cost`` ("outside") where ``U`` is finite.

    Entries with ``U = -inf`` stay ``-inf`` and pass no gradient (the double ``where`` of
    :func:`pragmodels.logmath.masked_scale`), so 0/1 lexica stay differentiable; the table is
    settled (written once, :func:`pragmodels.logmath.settled`).
    Shapes: ``util [utterance, state]``, ``cost [utterance]`` -> ``[utterance, state]``.
    """
    alpha = jnp.asarray(alpha, util.dtype)
    cost_col = _cost_column(cost, util.dtype, util.ndim)
    if cost_scaling == "inside":
        return masked_scale(util, alpha, cost_col)
    return masked_scale(util, alpha, jnp.zeros((), util.dtype)) - cost_col


def _speaker_us(log_listener: jax.Array, alpha: ArrayLike, cost: ArrayLike | None, qud: ArrayLike | None,
                cost_scaling: CostScaling = "inside") -> jax.Array:
    """Speaker in [utterance, state] layout from a listener in [utterance, state] layout."""
    if qud is not None:
        log_listener = qud_project(log_listener, qud)
    return settled(log_normalize(_scaled_utility(log_listener, alpha, cost, cost_scaling), axis=0))


def _listener_us(log_w: jax.Array, log_prior: ArrayLike | None) -> jax.Array:
    return log_normalize(_add_prior(log_w, log_prior), axis=1)


def softmax_speaker(log_utility: ArrayLike, alpha: ArrayLike, cost: ArrayLike | None = None, *,
                    cost_scaling: CostScaling = "inside") -> jax.Array:
    """Speaker from an arbitrary informativeness table: ``S(u | s) ∝ exp(alpha (U[u, s] − cost(u)))``.

    The building block behind :func:`pragmatic_speaker`, for models whose utility is not the log of
    a literal listener (e.g. social-meaning models with persona-dependent QUDs). ``-inf`` in
    ``log_utility`` marks an utterance the speaker cannot use in that state. With
    ``cost_scaling="outside"``: ``S(u | s) ∝ exp(alpha U[u, s] − cost(u))`` (docs: *Declaring models*).
    Shapes: ``log_utility [utterance, state]``, ``alpha []``, ``cost [utterance]`` -> ``[state, utterance]``.
    """
    _check_cost_scaling(cost_scaling)
    util = _as_array("softmax_speaker", "log_utility", log_utility)
    _check_table("softmax_speaker", "log_utility", util, ("utterance", "state"))
    _check_params("softmax_speaker", util.shape[0], util.shape[1], alpha, cost, None)
    return _speaker_us(util, alpha, cost, None, cost_scaling).T


def bayes_listener(log_speaker: ArrayLike, log_prior: ArrayLike | None = None) -> jax.Array:
    """Listener that inverts a speaker by Bayes' rule: ``L(s | u) ∝ S(u | s) P(s)``.

    Shapes: ``log_speaker [state, utterance]``, ``log_prior [state]`` -> ``[utterance, state]``.
    """
    spk = _as_array("bayes_listener", "log_speaker", log_speaker)
    _check_table("bayes_listener", "log_speaker", spk, ("state", "utterance"))
    _check_params("bayes_listener", spk.shape[1], spk.shape[0], None, None, log_prior)
    return _listener_us(spk.T, log_prior)


def literal_listener(log_semantics: ArrayLike, log_prior: ArrayLike | None = None) -> jax.Array:
    """Literal listener ``L0(s | u) ∝ exp(log_semantics[u, s]) P(s)``.

    Shapes: ``log_semantics [utterance, state]``, ``log_prior [state]`` -> ``[utterance, state]``.
    """
    log_semantics = _as_array("literal_listener", "log_semantics", log_semantics)
    _check_table("literal_listener", "log_semantics", log_semantics, ("utterance", "state"))
    _check_params("literal_listener", log_semantics.shape[0], log_semantics.shape[1], None, None, log_prior)
    return _listener_us(log_semantics, log_prior)


def _recurse(log_semantics: jax.Array, alpha: ArrayLike, cost: ArrayLike | None, log_prior: ArrayLike | None,
             depth: int, prior_at: PriorAt, qud: ArrayLike | None, cost_scaling: CostScaling) -> jax.Array:
    """Run to speaker level ``depth`` and return it in [utterance, state] layout."""
    inner_prior = log_prior if prior_at == "all" else None
    listener = _listener_us(log_semantics, inner_prior)
    speaker = _speaker_us(listener, alpha, cost, qud, cost_scaling)
    for _ in range(depth - 1):
        listener = _listener_us(speaker, inner_prior)
        speaker = _speaker_us(listener, alpha, cost, qud, cost_scaling)
    return speaker


def pragmatic_speaker(
    log_semantics: ArrayLike,
    alpha: ArrayLike,
    cost: ArrayLike | None = None,
    log_prior: ArrayLike | None = None,
    depth: int = 1,
    *,
    prior_at: PriorAt = "all",
    qud: ArrayLike | None = None,
    cost_scaling: CostScaling = "inside",
    boolean: bool = False,
) -> jax.Array:
    """Pragmatic speaker ``S_depth(u | s)``.

    Shapes: ``log_semantics [utterance, state]``, ``alpha []``, ``cost [utterance]``,
    ``log_prior [state]``, ``qud [state]`` (integer cell labels) -> ``[state, utterance]``.

    With ``qud``, the speaker's utility is the log-probability the listener assigns to the
    true state's QUD cell (Kao et al. 2014). ``alpha -> 0`` gives a uniform choice among the
    utterances true of the state; large ``alpha`` approaches the argmax. ``cost_scaling``:
    ``"inside"`` (default) ``exp(alpha (U − cost))`` or ``"outside"`` ``exp(alpha U − cost)``
    at every level (docs: *Declaring models*, "The RSA agents"). ``boolean=True`` declares a 0/1
    lexicon (``log_semantics`` only 0 and ``-inf``, e.g. from :func:`pragmodels.boolean_semantics`)
    and computes the same speaker in closed form (:mod:`pragmodels.boolean_rsa`; without ``qud``).
    """
    _check_depth(depth, 1)
    _check_prior_at(prior_at)
    _check_cost_scaling(cost_scaling)
    log_semantics = _as_array("pragmatic_speaker", "log_semantics", log_semantics)
    _check_table("pragmatic_speaker", "log_semantics", log_semantics, ("utterance", "state"))
    _check_params("pragmatic_speaker", log_semantics.shape[0], log_semantics.shape[1], alpha, cost, log_prior, qud)
    if _closed_form("pragmatic_speaker", log_semantics, boolean, qud):
        return _boolean_agent(log_semantics, alpha, cost, log_prior, depth, prior_at, cost_scaling, listener=False)
    return _recurse(log_semantics, alpha, cost, log_prior, depth, prior_at, qud, cost_scaling).T


def pragmatic_listener(
    log_semantics: ArrayLike,
    alpha: ArrayLike,
    cost: ArrayLike | None = None,
    log_prior: ArrayLike | None = None,
    depth: int = 1,
    *,
    prior_at: PriorAt = "all",
    qud: ArrayLike | None = None,
    cost_scaling: CostScaling = "inside",
    boolean: bool = False,
) -> jax.Array:
    """Pragmatic listener ``L_depth(s | u) ∝ S_depth(u | s) P(s)``; ``depth=0`` is ``L0``.

    Shapes: as :func:`pragmatic_speaker`, returning ``[utterance, state]``. ``cost_scaling``
    and ``boolean`` as :func:`pragmatic_speaker` (``boolean=True``: a 0/1 lexicon, the same
    listener in closed form, ``2 depth + 2`` matrix-vector products instead of ``2 depth + 1``
    log-sum-exps over the table; ``benchmarks/listener_table.py``).
    """
    _check_depth(depth, 0)
    _check_prior_at(prior_at)
    _check_cost_scaling(cost_scaling)
    log_semantics = _as_array("pragmatic_listener", "log_semantics", log_semantics)
    _check_table("pragmatic_listener", "log_semantics", log_semantics, ("utterance", "state"))
    _check_params("pragmatic_listener", log_semantics.shape[0], log_semantics.shape[1], alpha, cost, log_prior, qud)
    if depth == 0:
        return literal_listener(log_semantics, log_prior)
    if _closed_form("pragmatic_listener", log_semantics, boolean, qud):
        return _boolean_agent(log_semantics, alpha, cost, log_prior, depth, prior_at, cost_scaling, listener=True)
    speaker = _recurse(log_semantics, alpha, cost, log_prior, depth, prior_at, qud, cost_scaling)
    return _listener_us(speaker, log_prior)


def _closed_form(fn: str, log_semantics: jax.Array, boolean: bool, qud: ArrayLike | None) -> bool:
    """Whether to take the closed form: ``boolean=True`` and no QUD (a QUD's projection breaks
    the factorisation); a concrete ``log_semantics`` must then hold only 0 and ``-inf``."""
    if not isinstance(boolean, bool):
        raise ValueError(f"{fn}: boolean must be True or False; got {boolean!r}.")
    if not boolean:
        return False
    if qud is not None:
        raise ValueError(f"{fn}: boolean=True has no closed form with a qud (its projection mixes states); "
                         "pass boolean=False.")
    arr = concrete(log_semantics)
    if arr is not None:
        bad = (arr != 0) & (arr != -np.inf)
        if bad.any():
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            raise ValueError(f"{fn}: boolean=True needs a 0/1 lexicon, log_semantics of 0 (true) and -inf (false) "
                             f"only (e.g. pm.boolean_semantics); log_semantics{list(i)} = {arr[i].item()!r}.")
    return True


def _boolean_agent(log_semantics: jax.Array, alpha: ArrayLike, cost: ArrayLike | None, log_prior: ArrayLike | None,
                   depth: int, prior_at: PriorAt, cost_scaling: CostScaling, *, listener: bool) -> jax.Array:
    """The listener (``[utterance, state]``) or speaker (``[state, utterance]``) of a 0/1 lexicon in
    closed form (:mod:`pragmodels.boolean_rsa`), or by the log-space recursion where a vector's
    range could underflow in the dtype (``lax.cond``: under ``vmap`` both are computed). A traced
    ``log_semantics`` with an entry other than 0 and ``-inf`` gives NaN (a fit rejects it)."""

    def log_space() -> jax.Array:
        speaker = _recurse(log_semantics, alpha, cost, log_prior, depth, prior_at, None, cost_scaling)
        return _listener_us(speaker, log_prior) if listener else speaker.T

    out = jax.eval_shape(log_space)
    n_utt, n_state = log_semantics.shape
    traced = concrete(log_semantics) is None  # then not checked in _closed_form: a graded entry is NaN in the mask
    mask = (jnp.where(log_semantics == 0, 1.0, jnp.where(log_semantics == -jnp.inf, 0.0, jnp.nan)).astype(out.dtype)
            if traced else (log_semantics > -jnp.inf).astype(out.dtype))
    zeros_s = jnp.zeros(n_state, out.dtype)
    log_outer = zeros_s if log_prior is None else jnp.asarray(log_prior, out.dtype)
    log_inner = log_outer if prior_at == "all" else zeros_s
    cost_v = jnp.zeros(n_utt, out.dtype) if cost is None else jnp.asarray(cost, out.dtype)
    log_w, log_z, spread, graded = boolean_recursion(mask, jnp.asarray(alpha, out.dtype), cost_v, log_inner, depth,
                                                     cost_scaling == "outside")

    log_v, spread_v = listener_weights(log_z, log_outer)
    if listener:  # the final listener multiplies by v = P / Z: its range counts too
        log_mv, _ = listener_norms(mask, log_v)  # before the cond: the branch is then one pass over the table
        spread = jnp.maximum(spread, spread_v)
        table: Callable[[], jax.Array] = functools.partial(listener_table, mask, log_v, log_mv)
    else:
        table = lambda: speaker_table(mask, log_w, log_z, log_inner).T  # noqa: E731

    # traced, a graded entry (NaN in the mask, found by the recursion's first product) makes the result NaN,
    # applied in each branch's last step, where it fuses with the table's one pass. A test of its own over
    # log_semantics, applied to the cond's result, took two passes more: at 3000^2 the closed form took
    # 1.03-1.3x the plain log-space listener's time with them, 0.6-0.8x without (benchmarks/listener_table.py)

    def poisoned(table: jax.Array) -> jax.Array:
        return jnp.where(graded, jnp.nan, table) if traced else table

    def closed() -> jax.Array:
        return poisoned(table().astype(out.dtype))

    # each branch under jax.checkpoint: differentiated, a cond returns the residuals of both branches, so the
    # closed form wrote the log-space recursion's tables too, as zeros (at 3000^2 six [n, n] buffers per gradient,
    # 1.17-1.19x the floor's time); checkpointed, a branch keeps only its inputs and recomputes its own forward
    # pass in the backward one (three buffers)
    return jax.lax.cond(spread <= safe_range(out.dtype), jax.checkpoint(closed),
                        jax.checkpoint(lambda: poisoned(log_space())))


def _batch_inputs(fn: str, log_semantics: ArrayLike, alpha: ArrayLike, cost: ArrayLike | None,
                  log_prior: ArrayLike | None) -> tuple[jax.Array, jax.Array]:
    """Check the shapes of a batched agent's inputs; return ``log_semantics [utterance, state, b]``
    (``b`` = 1 when shared across the batch) and ``alpha`` broadcast to ``[batch]``."""
    sem = _as_array(fn, "log_semantics", log_semantics)
    if sem.ndim not in (2, 3):
        raise ValueError(f"{fn}: log_semantics must have shape [utterance, state] or [utterance, state, batch]; "
                         f"got shape {sem.shape}.")
    a = _as_array(fn, "alpha", alpha)
    if a.ndim > 1:
        raise ValueError(f"{fn}: alpha must be a scalar or have shape [batch]; got shape {a.shape}.")
    sizes = {n for n in ((sem.shape[2] if sem.ndim == 3 else None), (a.shape[0] if a.ndim == 1 else None))
             if n is not None}
    if len(sizes) > 1:
        raise ValueError(f"{fn}: log_semantics has {sem.shape[2]} batch entries but alpha has {a.shape[0]}; "
                         "they must agree (or alpha be a scalar).")
    if not sizes:
        raise ValueError(f"{fn}: no batch axis; give alpha shape [batch] or log_semantics shape "
                         "[utterance, state, batch] (for one agent, use the unbatched function).")
    n_batch = sizes.pop()
    n_utt, n_state = sem.shape[:2]
    for name, arr, lead in (("cost", cost, n_utt), ("log_prior", log_prior, n_state)):
        if arr is None:
            continue
        shape = tuple(jnp.shape(arr))
        if shape not in ((lead,), (lead, n_batch)):
            what = "utterance" if name == "cost" else "state"
            raise ValueError(f"{fn}: {name} must have shape [{what}] = ({lead},) or [{what}, batch] = "
                             f"({lead}, {n_batch}); got {shape}.")
    if 0 in sem.shape:
        raise ValueError(f"{fn}: log_semantics is empty (shape {sem.shape}).")
    check_values(fn, "log_semantics", sem, neg_inf=True)
    _check_alpha(fn, a)
    check_values(fn, "cost", cost)
    check_values(fn, "log_prior", log_prior, neg_inf=True)
    if sem.ndim == 2:
        sem = sem[:, :, None]
    return sem, jnp.broadcast_to(a, (n_batch,))


def pragmatic_listener_batch(
    log_semantics: ArrayLike,
    alpha: ArrayLike,
    cost: ArrayLike | None = None,
    log_prior: ArrayLike | None = None,
    depth: int = 1,
    *,
    prior_at: PriorAt = "all",
    cost_scaling: CostScaling = "inside",
) -> jax.Array:
    """Many pragmatic listeners at once, one per batch entry (e.g. a rationality per item), with
    the batch on the *last* axis.

    Equal to ``jax.vmap`` of :func:`pragmatic_listener` over the batch, moved to the last axis, but
    laid out so that the normalisations over utterances and states are vector operations across
    the batch: on a CPU its gradient is about 2.8x faster than the vmapped form at 100 x 5 x 21
    (125 vs 351 us with the count-table likelihood, ``benchmarks/fit_overhead.py --profile-gradient``),
    and the per-item listener's fit 3x faster (``benchmarks/results/fit_overhead_hier.md``). :func:`pragmodels.rsa_models.rsa_listener_by_item`
    is built on it.

    Shapes: ``log_semantics [utterance, state]`` (shared) or ``[utterance, state, batch]``;
    ``alpha []`` or ``[batch]``; ``cost [utterance]`` or ``[utterance, batch]``; ``log_prior
    [state]`` or ``[state, batch]`` -> ``[utterance, state, batch]`` (normalised over ``state``).
    At least one of ``log_semantics`` and ``alpha`` carries the batch axis.
    """
    _check_depth(depth, 0)
    _check_prior_at(prior_at)
    _check_cost_scaling(cost_scaling)
    sem, a = _batch_inputs("pragmatic_listener_batch", log_semantics, alpha, cost, log_prior)
    if depth == 0:
        return jnp.broadcast_to(_listener_us(sem, log_prior), sem.shape[:2] + a.shape)
    speaker = _recurse(sem, a, cost, log_prior, depth, prior_at, None, cost_scaling)
    return _listener_us(speaker, log_prior)


def pragmatic_speaker_batch(
    log_semantics: ArrayLike,
    alpha: ArrayLike,
    cost: ArrayLike | None = None,
    log_prior: ArrayLike | None = None,
    depth: int = 1,
    *,
    prior_at: PriorAt = "all",
    cost_scaling: CostScaling = "inside",
) -> jax.Array:
    """Many pragmatic speakers at once, batch last (as :func:`pragmatic_listener_batch`).

    Shapes: as :func:`pragmatic_listener_batch` -> ``[state, utterance, batch]`` (normalised
    over ``utterance``), i.e. ``vmap`` of :func:`pragmatic_speaker` with the batch moved last.
    """
    _check_depth(depth, 1)
    _check_prior_at(prior_at)
    _check_cost_scaling(cost_scaling)
    sem, a = _batch_inputs("pragmatic_speaker_batch", log_semantics, alpha, cost, log_prior)
    return jnp.swapaxes(_recurse(sem, a, cost, log_prior, depth, prior_at, None, cost_scaling), 0, 1)


def lexical_uncertainty_listener(
    log_semantics: ArrayLike,
    alpha: ArrayLike,
    cost: ArrayLike | None = None,
    log_prior: ArrayLike | None = None,
    log_lexicon_prior: ArrayLike | None = None,
    depth: int = 1,
    *,
    prior_at: PriorAt = "all",
    qud: ArrayLike | None = None,
    cost_scaling: CostScaling = "inside",
) -> jax.Array:
    """Listener that marginalises over a set of lexica (Bergen, Levy & Goodman 2016, eq. 9).

    ``L1(s | u) ∝ P(s) Σ_lex P(lex) S1(u | s, lex)``; for ``depth > 1`` the recursion
    continues from ``L1`` with the ordinary speaker and listener.

    Shapes: ``log_semantics [lexicon, utterance, state]``, ``log_lexicon_prior [lexicon]``
    (``None``: uniform), others (``cost_scaling`` included) as :func:`pragmatic_speaker`
    -> ``[utterance, state]``.
    """
    _check_depth(depth, 1)
    _check_prior_at(prior_at)
    _check_cost_scaling(cost_scaling)
    log_semantics = _as_array("lexical_uncertainty_listener", "log_semantics", log_semantics)
    if log_semantics.ndim != 3:
        raise ValueError(
            "lexical_uncertainty_listener needs log_semantics of shape [lexicon, utterance, state]; "
            f"got shape {log_semantics.shape}."
        )
    fn = "lexical_uncertainty_listener"
    if 0 in log_semantics.shape:
        raise ValueError(f"{fn}: log_semantics is empty (shape {log_semantics.shape}).")
    check_values(fn, "log_semantics", log_semantics, neg_inf=True)
    n_lex = log_semantics.shape[0]
    _check_params(fn, log_semantics.shape[1], log_semantics.shape[2], alpha, cost, log_prior, qud)
    if log_lexicon_prior is not None:
        check_shape(fn, "log_lexicon_prior", log_lexicon_prior, (n_lex,), "[lexicon]")
        check_values(fn, "log_lexicon_prior", log_lexicon_prior, neg_inf=True)
    if log_lexicon_prior is None:
        log_lexicon_prior = jnp.full((n_lex,), -jnp.log(n_lex), log_semantics.dtype)
    inner_prior = log_prior if prior_at == "all" else None
    speakers = jax.vmap(lambda lex: _speaker_us(_listener_us(lex, inner_prior), alpha, cost, qud, cost_scaling))(
        log_semantics
    )  # [lexicon, utterance, state]
    log_lexicon_prior = log_normalize(jnp.asarray(log_lexicon_prior, log_semantics.dtype), axis=0)
    log_speaker = log_sum_exp(speakers + log_lexicon_prior[:, None, None], axis=0)
    top = depth == 1
    listener = _listener_us(log_speaker, log_prior if (top or prior_at == "all") else None)
    for level in range(2, depth + 1):
        speaker = _speaker_us(listener, alpha, cost, qud, cost_scaling)
        top = level == depth
        listener = _listener_us(speaker, log_prior if (top or prior_at == "all") else None)
    return listener


def social_utility(log_listener: ArrayLike, social_value: ArrayLike) -> jax.Array:
    """Social utility ``U_soc(u; s) = E_{L(s' | u)}[V(s')] = Σ_s' L(s' | u) V(s')``.

    The value to the listener of the belief an utterance induces (Yoon, Tessler, Goodman & Frank
    2020; problang.org ch. 9), the same for every true state ``s``. Undefined listener rows
    (an utterance true of no state) give ``-inf``: such an utterance cannot be used.

    Shapes: ``log_listener [utterance, state]`` (normalised over ``state``), ``social_value
    [state]`` (``V``, in nats of utility, e.g. ``lambda * hearts``) -> ``[utterance, state]``
    (constant along ``state``, so it stacks with ``log_listener`` as a utility component).
    """
    log_listener = _as_array("social_utility", "log_listener", log_listener)
    social_value = _as_array("social_utility", "social_value", social_value).astype(log_listener.dtype)
    if social_value.shape != log_listener.shape[-1:]:
        raise ValueError(
            f"social_value must have shape [state] = ({log_listener.shape[-1]},) to match log_listener "
            f"{log_listener.shape}; got shape {social_value.shape}."
        )
    defined = jnp.any(log_listener > -jnp.inf, axis=1)  # [utterance]
    expected = jnp.exp(log_listener) @ social_value  # exp(-inf) = 0, gradient 0
    expected = jnp.where(defined, expected, -jnp.inf)
    return jnp.broadcast_to(expected[:, None], log_listener.shape)


def weighted_utility_speaker(
    utilities: ArrayLike,
    alpha: ArrayLike,
    weights: ArrayLike,
    cost: ArrayLike | None = None,
    *,
    cost_scaling: CostScaling = "inside",
) -> jax.Array:
    """Speaker whose utility is a weighted sum of components (Yoon et al. 2020)::

        U(u; s) = Σ_c weights[c] · utilities[c, u, s]
        S(u | s) ∝ exp(alpha · (U(u; s) − cost(u)))      cost_scaling="inside" (default)
        S(u | s) ∝ exp(alpha · U(u; s) − cost(u))        cost_scaling="outside"

    Shapes: ``utilities [component, utterance, state]``, ``alpha []``, ``weights [component]``,
    ``cost [utterance]`` -> ``[state, utterance]``.

    Components are any utilities in nats: ``log L(s | u)`` (informational, e.g. from
    :func:`literal_listener`), :func:`social_utility` ``E_L[V | u]``, or Yoon et al.'s
    presentational ``log L1(phi_hat | u)`` (a goal marginal from :func:`joint_marginals`,
    broadcast over ``state``). An entry that is ``-inf`` in *any* component makes the utterance
    unavailable in that state whatever the weights (a weight of exactly 0 does not revive a
    false utterance, and ``0 · -inf`` never becomes NaN); gradients with respect to ``alpha``,
    ``weights`` and finite utilities stay finite. ``weights`` need not sum to one and may be
    traced (sampled) parameters; vmap over them for a goal-conditioned speaker
    ``[goal, state, utterance]`` to feed :func:`joint_listener`.
    """
    _check_cost_scaling(cost_scaling)
    utilities = _as_array("weighted_utility_speaker", "utilities", utilities)
    if utilities.ndim != 3:
        raise ValueError(
            "weighted_utility_speaker needs utilities of shape [component, utterance, state]; "
            f"got shape {utilities.shape}."
        )
    weights = _as_array("weighted_utility_speaker", "weights", weights).astype(utilities.dtype)
    if weights.shape != utilities.shape[:1]:
        raise ValueError(
            f"weights must have shape [component] = ({utilities.shape[0]},) to match utilities "
            f"{utilities.shape}; got shape {weights.shape}."
        )
    fn = "weighted_utility_speaker"
    check_values(fn, "utilities", utilities, neg_inf=True)
    check_values(fn, "weights", weights)
    _check_params(fn, utilities.shape[1], utilities.shape[2], alpha, cost, None)
    ok = jnp.all(utilities > -jnp.inf, axis=0)  # [utterance, state]
    safe = jnp.where(utilities > -jnp.inf, utilities, 0.0)
    total = jnp.where(ok, jnp.tensordot(weights, safe, axes=1), -jnp.inf)
    return _speaker_us(total, alpha, cost, None, cost_scaling).T


def mixed_utility_speaker(
    log_semantics: ArrayLike,
    alpha: ArrayLike,
    weights: ArrayLike,
    social_value: ArrayLike,
    cost: ArrayLike | None = None,
    log_prior: ArrayLike | None = None,
    *,
    cost_scaling: CostScaling = "inside",
) -> jax.Array:
    """Politeness speaker S1 trading informational against social utility (Yoon et al. 2020)::

        L0(s | u)   ∝ exp(log_semantics[u, s]) P(s)
        U(u; s)     = w_inf · log L0(s | u) + w_soc · Σ_s' L0(s' | u) V(s')
        S1(u | s)   ∝ exp(alpha · (U(u; s) − cost(u)))   (or exp(alpha U − cost), "outside")

    With ``weights = (phi, 1 - phi)`` this is problang.org ch. 9's ``speaker1(state, phi)``
    (there with ``V(s) = 1.25 s``, ``alpha = 10`` and, in the full model, an utterance prior
    ``exp(-cost)``: ``cost_scaling="outside"``). Yoon et al. 2020 write the cost inside the
    utility (``"inside"``, the default).

    Shapes: ``log_semantics [utterance, state]``, ``alpha []``, ``weights [2]`` (``w_inf``,
    ``w_soc``; traced and differentiable), ``social_value [state]`` (``V``), ``cost
    [utterance]``, ``log_prior [state]`` (the literal listener's prior; ``None``: uniform)
    -> ``[state, utterance]``.

    Component 0 is ``log L0(s | u)`` (``-inf`` where ``u`` is false of ``s``: a false utterance
    is never chosen, whatever the weights); component 1 is :func:`social_utility` of ``L0``.
    For other components use :func:`weighted_utility_speaker`. For the goal-conditioned table
    that :func:`joint_listener` inverts, vmap over weights::

        phis = jnp.linspace(0.05, 0.95, 19)
        log_s = jax.vmap(lambda p: mixed_utility_speaker(sem, a, jnp.stack([p, 1 - p]), v))(phis)
        log_l1 = joint_listener(log_s)      # [utterance, state, phi]
    """
    log_semantics = _as_array("mixed_utility_speaker", "log_semantics", log_semantics)
    weights = _as_array("mixed_utility_speaker", "weights", weights).astype(log_semantics.dtype)
    if weights.shape != (2,):
        raise ValueError(
            "mixed_utility_speaker needs weights of shape [2] (w_inf, w_soc); "
            f"got shape {weights.shape}. For more components use weighted_utility_speaker."
        )
    check_values("mixed_utility_speaker", "weights", weights)
    log_l0 = literal_listener(log_semantics, log_prior)
    utilities = jnp.stack([log_l0, social_utility(log_l0, social_value)])
    return weighted_utility_speaker(utilities, alpha, weights, cost, cost_scaling=cost_scaling)


def joint_listener(
    log_speaker: ArrayLike,
    log_prior: ArrayLike | None = None,
    log_goal_prior: ArrayLike | None = None,
) -> jax.Array:
    """Listener that infers the state and the speaker's goal jointly::

        L(s, g | u) ∝ S(u | s, g) P(s) P(g)          (or S(u | s, g) P(s, g))

    normalised over all (state, goal) pairs. Instances: the politeness pragmatic listener,
    which infers the state and the speaker's weight ``phi`` (Yoon et al. 2020; problang.org
    ch. 9 ``pragmaticListener``), with ``log_speaker[g] = mixed_utility_speaker(..., weights=
    (phi_g, 1 - phi_g))``; and Kao et al.'s (2014) hyperbole listener, with goals = QUDs,
    ``log_speaker[q] = pragmatic_speaker(..., qud=partition_q)`` over meaning states
    (price x affect, flattened) and the QUD prior as ``log_goal_prior``: its ``L1(s, a | u)`` is
    the state marginal (their pragmatic listener sums over QUDs).

    Shapes: ``log_speaker [goal, state, utterance]`` (each ``[state, utterance]`` slice
    normalised over ``utterance``), ``log_prior [state]`` or a joint ``[state, goal]``,
    ``log_goal_prior [goal]`` (``None``: uniform; not allowed with a joint ``log_prior``)
    -> ``[utterance, state, goal]``. :func:`joint_marginals` gives the ``[utterance, state]``
    and ``[utterance, goal]`` marginals. An utterance no (state, goal) pair produces gets a
    row of ``-inf``.
    """
    log_speaker = _as_array("joint_listener", "log_speaker", log_speaker)
    if log_speaker.ndim != 3:
        raise ValueError(
            "joint_listener needs log_speaker of shape [goal, state, utterance]; "
            f"got shape {log_speaker.shape}."
        )
    n_goal, n_state, n_utt = log_speaker.shape
    check_values("joint_listener", "log_speaker", log_speaker, neg_inf=True)
    check_values("joint_listener", "log_prior", log_prior, neg_inf=True)
    check_values("joint_listener", "log_goal_prior", log_goal_prior, neg_inf=True)
    log_w = jnp.transpose(log_speaker, (2, 1, 0))  # [utterance, state, goal]
    if log_prior is not None:
        log_prior = jnp.asarray(log_prior, log_w.dtype)
        if log_prior.shape == (n_state,):
            log_w = log_w + log_prior[None, :, None]
        elif log_prior.shape == (n_state, n_goal):
            if log_goal_prior is not None:
                raise ValueError(
                    "joint_listener: log_prior of shape [state, goal] is already the joint prior; "
                    "pass log_goal_prior=None."
                )
            log_w = log_w + log_prior[None]
        else:
            raise ValueError(
                f"log_prior must have shape [state] = ({n_state},) or [state, goal] = ({n_state}, "
                f"{n_goal}) to match log_speaker {log_speaker.shape}; got shape {log_prior.shape}."
            )
    if log_goal_prior is not None:
        log_goal_prior = jnp.asarray(log_goal_prior, log_w.dtype)
        if log_goal_prior.shape != (n_goal,):
            raise ValueError(
                f"log_goal_prior must have shape [goal] = ({n_goal},) to match log_speaker "
                f"{log_speaker.shape}; got shape {log_goal_prior.shape}."
            )
        log_w = log_w + log_goal_prior[None, None, :]
    flat = log_normalize(log_w.reshape(n_utt, n_state * n_goal), axis=1)
    return flat.reshape(n_utt, n_state, n_goal)


def joint_marginals(log_joint: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """State and goal marginals of a :func:`joint_listener` posterior.

    Shapes: ``log_joint [utterance, state, goal]`` -> ``(log_state [utterance, state],
    log_goal [utterance, goal])``, ``log Σ_g L(s, g | u)`` and ``log Σ_s L(s, g | u)``
    (``-inf`` rows stay ``-inf``, with zero gradient).
    """
    log_joint = _as_array("joint_marginals", "log_joint", log_joint)
    if log_joint.ndim != 3:
        raise ValueError(
            f"joint_marginals needs log_joint of shape [utterance, state, goal]; got shape {log_joint.shape}."
        )
    return log_sum_exp(log_joint, axis=2), log_sum_exp(log_joint, axis=1)


def lapse_mixture(log_p: ArrayLike, lapse: ArrayLike, axis: int = -1) -> jax.Array:
    """Mix a choice distribution with uniform noise: ``(1 - lapse) p + lapse / n``.

    Shapes: ``log_p [..., option, ...]`` normalised along ``axis``; ``lapse`` in [0, 1],
    broadcastable to ``log_p`` without ``axis`` (a scalar, or that shape with sizes of 1; any
    other shape is a ``ValueError`` naming both) -> same shape as ``log_p``.
    """
    return log_mix_uniform(_as_array("lapse_mixture", "log_p", log_p), lapse, axis=axis)
