"""Rational Speech Act agents as pure JAX functions in log space.

Layering: imports ``jax`` and :mod:`pragmodels.logmath` only. Never imports numpyro.

Conventions (all arrays are log-probabilities unless named otherwise)

- ``log_semantics``: shape ``[utterance, state]``. ``0 / -inf`` for a Boolean lexicon,
  ``log`` of a graded truth value, or LM-derived log-probabilities.
- ``alpha``: scalar rationality (0-d); ``cost``: ``[utterance]`` in nats of utility;
  ``log_prior``: ``[state]`` (``None`` means uniform; need not be normalised).
- Listeners return ``[utterance, state]`` (normalised over ``state``); speakers return
  ``[state, utterance]`` (normalised over ``utterance``).

The recursion (Frank & Goodman 2012; Goodman & Frank 2016, eqs. 1-3)::

    L0(s | u)  ∝  exp(log_semantics[u, s]) · P(s)
    Sk(u | s)  ∝  exp(alpha · (log L_{k-1}(s | u) − cost(u)))          k ≥ 1
    Lk(s | u)  ∝  Sk(u | s) · P(s)

``prior_at`` picks between the two published conventions for ``P(s)``:

- ``"all"`` (default; Goodman & Frank 2016, problang.org): the prior enters every listener.
- ``"top"`` (Frank & Goodman 2012): inner listeners are uniform over states; the prior
  enters only the listener that is returned (for a speaker: nowhere).

Undefined conditionals (an utterance true of no state, a state no utterance fits) are rows of
``-inf`` rather than NaN, with zero gradient (see :mod:`pragmodels.logmath`). Every function is
unbatched; use ``jax.vmap`` over items or parameter draws. ``depth`` is static (a Python int).
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from pragmodels.logmath import log_mix_uniform, log_normalize, log_sum_exp, masked_scale

__all__ = [
    "softmax_speaker",
    "bayes_listener",
    "literal_listener",
    "pragmatic_speaker",
    "pragmatic_listener",
    "lexical_uncertainty_listener",
    "qud_project",
    "lapse_mixture",
]

PriorAt = Literal["all", "top"]


def _check_depth(depth: int, minimum: int) -> None:
    if not isinstance(depth, int) or depth < minimum:
        raise ValueError(f"depth must be a Python int >= {minimum}; got {depth!r}.")


def _check_prior_at(prior_at: str) -> None:
    if prior_at not in ("all", "top"):
        raise ValueError(f"prior_at must be 'all' or 'top'; got {prior_at!r}.")


def _add_prior(log_w: jax.Array, log_prior: jax.Array | None) -> jax.Array:
    return log_w if log_prior is None else log_w + log_prior[None, :]


def _cost_column(cost: jax.Array | None, dtype) -> jax.Array:
    return jnp.zeros((), dtype) if cost is None else jnp.asarray(cost, dtype)[:, None]


def qud_project(log_listener: jax.Array, qud: jax.Array) -> jax.Array:
    """Project a listener onto a QUD partition of the states (Kao et al. 2014, eq. 4).

    Shapes: ``log_listener [utterance, state]``, ``qud [state]`` (integer cell labels) ->
    ``[utterance, state]``: for each state, the log-probability the listener assigns to the
    state's cell, ``log Σ_{s': qud[s'] = qud[s]} L(s' | u)``.
    """
    qud = jnp.asarray(qud)
    same = (qud[:, None] == qud[None, :]).astype(log_listener.dtype)  # [state, state]
    m = jnp.max(log_listener, axis=1, keepdims=True)
    finite = m > -jnp.inf
    m_safe = jnp.where(finite, jax.lax.stop_gradient(m), 0.0)
    mass = jnp.exp(log_listener - m_safe) @ same
    ok = mass > 0
    return jnp.where(ok, jnp.log(jnp.where(ok, mass, 1.0)) + m_safe, -jnp.inf)


def _speaker_us(log_listener, alpha, cost, qud):
    """Speaker in [utterance, state] layout from a listener in [utterance, state] layout."""
    if qud is not None:
        log_listener = qud_project(log_listener, qud)
    util = masked_scale(log_listener, jnp.asarray(alpha, log_listener.dtype),
                        _cost_column(cost, log_listener.dtype))
    return log_normalize(util, axis=0)


def _listener_us(log_w, log_prior):
    return log_normalize(_add_prior(log_w, log_prior), axis=1)


def softmax_speaker(log_utility: jax.Array, alpha, cost: jax.Array | None = None) -> jax.Array:
    """Speaker from an arbitrary informativeness table: ``S(u | s) ∝ exp(alpha (U[u, s] − cost(u)))``.

    The building block behind :func:`pragmatic_speaker`, for models whose utility is not the log of
    a literal listener (e.g. social-meaning models with persona-dependent QUDs). ``-inf`` in
    ``log_utility`` marks an utterance the speaker cannot use in that state.
    Shapes: ``log_utility [utterance, state]``, ``cost [utterance]`` -> ``[state, utterance]``.
    """
    return _speaker_us(jnp.asarray(log_utility), alpha, cost, None).T


def bayes_listener(log_speaker: jax.Array, log_prior: jax.Array | None = None) -> jax.Array:
    """Listener that inverts a speaker by Bayes' rule: ``L(s | u) ∝ S(u | s) P(s)``.

    Shapes: ``log_speaker [state, utterance]``, ``log_prior [state]`` -> ``[utterance, state]``.
    """
    return _listener_us(jnp.asarray(log_speaker).T, log_prior)


def literal_listener(log_semantics: jax.Array, log_prior: jax.Array | None = None) -> jax.Array:
    """Literal listener ``L0(s | u) ∝ exp(log_semantics[u, s]) P(s)``.

    Shapes: ``log_semantics [utterance, state]``, ``log_prior [state]`` -> ``[utterance, state]``.
    """
    log_semantics = jnp.asarray(log_semantics)
    return _listener_us(log_semantics, log_prior)


def _recurse(log_semantics, alpha, cost, log_prior, depth, prior_at, qud):
    """Run to speaker level ``depth`` and return it in [utterance, state] layout."""
    inner_prior = log_prior if prior_at == "all" else None
    listener = _listener_us(log_semantics, inner_prior)
    speaker = _speaker_us(listener, alpha, cost, qud)
    for _ in range(depth - 1):
        listener = _listener_us(speaker, inner_prior)
        speaker = _speaker_us(listener, alpha, cost, qud)
    return speaker


def pragmatic_speaker(
    log_semantics: jax.Array,
    alpha: jax.Array | float,
    cost: jax.Array | None = None,
    log_prior: jax.Array | None = None,
    depth: int = 1,
    *,
    prior_at: PriorAt = "all",
    qud: jax.Array | None = None,
) -> jax.Array:
    """Pragmatic speaker ``S_depth(u | s)``.

    Shapes: ``log_semantics [utterance, state]``, ``alpha []``, ``cost [utterance]``,
    ``log_prior [state]``, ``qud [state]`` (integer cell labels) -> ``[state, utterance]``.

    With ``qud``, the speaker's utility is the log-probability the listener assigns to the
    true state's QUD cell (Kao et al. 2014). ``alpha -> 0`` gives a uniform choice among the
    utterances true of the state; large ``alpha`` approaches the argmax.
    """
    _check_depth(depth, 1)
    _check_prior_at(prior_at)
    log_semantics = jnp.asarray(log_semantics)
    return _recurse(log_semantics, alpha, cost, log_prior, depth, prior_at, qud).T


def pragmatic_listener(
    log_semantics: jax.Array,
    alpha: jax.Array | float,
    cost: jax.Array | None = None,
    log_prior: jax.Array | None = None,
    depth: int = 1,
    *,
    prior_at: PriorAt = "all",
    qud: jax.Array | None = None,
) -> jax.Array:
    """Pragmatic listener ``L_depth(s | u) ∝ S_depth(u | s) P(s)``; ``depth=0`` is ``L0``.

    Shapes: as :func:`pragmatic_speaker`, returning ``[utterance, state]``.
    """
    _check_depth(depth, 0)
    _check_prior_at(prior_at)
    log_semantics = jnp.asarray(log_semantics)
    if depth == 0:
        return literal_listener(log_semantics, log_prior)
    speaker = _recurse(log_semantics, alpha, cost, log_prior, depth, prior_at, qud)
    return _listener_us(speaker, log_prior)


def lexical_uncertainty_listener(
    log_semantics: jax.Array,
    alpha: jax.Array | float,
    cost: jax.Array | None = None,
    log_prior: jax.Array | None = None,
    log_lexicon_prior: jax.Array | None = None,
    depth: int = 1,
    *,
    prior_at: PriorAt = "all",
    qud: jax.Array | None = None,
) -> jax.Array:
    """Listener that marginalises over a set of lexica (Bergen, Levy & Goodman 2016, eq. 9).

    ``L1(s | u) ∝ P(s) Σ_lex P(lex) S1(u | s, lex)``; for ``depth > 1`` the recursion
    continues from ``L1`` with the ordinary speaker and listener.

    Shapes: ``log_semantics [lexicon, utterance, state]``, ``log_lexicon_prior [lexicon]``
    (``None``: uniform), others as :func:`pragmatic_speaker` -> ``[utterance, state]``.
    """
    _check_depth(depth, 1)
    _check_prior_at(prior_at)
    log_semantics = jnp.asarray(log_semantics)
    if log_semantics.ndim != 3:
        raise ValueError(
            "lexical_uncertainty_listener needs log_semantics of shape [lexicon, utterance, state]; "
            f"got shape {log_semantics.shape}."
        )
    n_lex = log_semantics.shape[0]
    if log_lexicon_prior is None:
        log_lexicon_prior = jnp.full((n_lex,), -jnp.log(n_lex), log_semantics.dtype)
    inner_prior = log_prior if prior_at == "all" else None
    speakers = jax.vmap(lambda lex: _speaker_us(_listener_us(lex, inner_prior), alpha, cost, qud))(
        log_semantics
    )  # [lexicon, utterance, state]
    log_lexicon_prior = log_normalize(jnp.asarray(log_lexicon_prior, log_semantics.dtype), axis=0)
    log_speaker = log_sum_exp(speakers + log_lexicon_prior[:, None, None], axis=0)
    top = depth == 1
    listener = _listener_us(log_speaker, log_prior if (top or prior_at == "all") else None)
    for level in range(2, depth + 1):
        speaker = _speaker_us(listener, alpha, cost, qud)
        top = level == depth
        listener = _listener_us(speaker, log_prior if (top or prior_at == "all") else None)
    return listener


def lapse_mixture(log_p: jax.Array, lapse: jax.Array | float, axis: int = -1) -> jax.Array:
    """Mix a choice distribution with uniform noise: ``(1 - lapse) p + lapse / n``.

    Shapes: ``log_p [..., option, ...]`` normalised along ``axis``; ``lapse`` in [0, 1],
    broadcastable to ``log_p`` without ``axis`` -> same shape as ``log_p``.
    """
    return log_mix_uniform(jnp.asarray(log_p), lapse, axis=axis)
