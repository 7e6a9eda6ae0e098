r"""Bayesian RSA models of the Wavelength game (Qiu et al. 2025): LM literal listeners as
semantics, the paper's LM-RSA and Appendix C listeners, fitted to raw slider guesses.

The agents are pure JAX on per-item arrays (``log_lm [item, utterance, state]``, ``utt_mask``,
``log_s0``, ``clue_length``): :func:`lm_literal_listener`, :func:`item_rsa_listener`,
:func:`rsa_clue_listener`, :func:`lm_rsa_listener`, :func:`appendix_c_listener`,
:func:`inverse_rsa_speaker`. The NumPyro models (:func:`uniform_model`, :func:`literal_model`,
:func:`lm_rsa_model`, :func:`appendix_c_model`, :func:`lm_rsa_by_item_model`,
:func:`lm_prior_model`, per-item locations :func:`location_model` and :func:`lm_location_model`;
priors :data:`PRIORS`) report the real clue's listener on the slider (rounding, lapse). Also:
simulation, the alpha profile, item cross-validation (:func:`cross_validate`), :func:`listener_for`.
The equations, the response model and the priors: ``docs/studies/wavelength.md``, "The models".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike
from numpyro import handlers

from pragmodels import agents
from pragmodels.evaluation.crossval import FoldResult, fit_fold, item_folds
from pragmodels.likelihoods.slider import check_slider_values, slider_responses
from pragmodels.logmath import log_normalize, log_sum_exp, masked_scale
from pragmodels.params import STANDARD_NORMAL, group_effect, param
from pragmodels.priors import Prior
from pragmodels.semantics import lm_literal_semantics
from pragmodels.validation import check_index

N_STATE = 21
#: the state values 0, 5, ..., 100
STATE_VALUES = np.linspace(0.0, 100.0, N_STATE)
#: data entries with a leading item axis / a leading trial axis (for cross-validation folds)
ITEM_KEYS = ("log_lm", "utt_mask", "clue_length", "log_s0")
TRIAL_KEYS = ("item", "guess")
#: guesses are rounded to multiples of this (with the fitted share ``rounding``)
ROUND_TO = 10

PRIORS: dict[str, Prior] = {
    "alpha": Prior("LogNormal", loc=0.0, scale=1.0),
    "beta": Prior("LogNormal", loc=0.0, scale=1.0),
    "width": Prior("LogNormal", loc=float(np.log(5.0)), scale=0.75),
    "lapse": Prior("Beta", concentration1=1.0, concentration0=19.0),
    "rounding": Prior("Beta", concentration1=1.0, concentration0=9.0),
    "cost_weight": Prior("HalfNormal", scale=1.0),
    "alpha_mu": Prior("Normal", loc=0.0, scale=1.0),
    "alpha_sigma": Prior("HalfNormal", scale=0.5),
    "beta_mu": Prior("Normal", loc=0.0, scale=1.0),
    "beta_sigma": Prior("HalfNormal", scale=0.5),
    "tau": Prior("HalfNormal", scale=2.0),
    "location_u": Prior("Uniform", low=0.0, high=1.0),
    "spread": Prior("LogNormal", loc=float(np.log(10.0)), scale=0.75),
}


# ----------------------------------------------------------------------------------- agents


def _prior(log_prior: ArrayLike | None, n_state: int, dtype: Any) -> jax.Array:
    if log_prior is None:
        return jnp.zeros((n_state,), dtype)
    lp = jnp.asarray(log_prior, dtype)
    if lp.shape != (n_state,):
        raise ValueError(f"log_prior must have shape [state] = ({n_state},); got {lp.shape}.")
    return lp


def _mask(utt_mask: ArrayLike | None, shape: tuple[int, ...]) -> jax.Array:
    if utt_mask is None:
        return jnp.ones(shape, bool)
    m = jnp.asarray(utt_mask, bool)
    if m.shape != shape:
        raise ValueError(f"utt_mask must have shape [item, utterance] = {shape}; got {m.shape}.")
    return m


def _check_lm(name: str, x: ArrayLike) -> jax.Array:
    arr = jnp.asarray(x)
    if arr.ndim != 3:
        raise ValueError(f"{name} must have shape [item, utterance, state]; got shape {arr.shape}.")
    return arr


def lm_literal_listener(log_lm: ArrayLike, beta: ArrayLike, log_prior: ArrayLike | None = None,
                        utt_mask: ArrayLike | None = None) -> jax.Array:
    """(a) LM literal listener ``L0(s | u) ∝ P_LM(s | u)^beta P(s)``.

    Shapes: ``log_lm [item, utterance, state]``, ``beta []`` or ``[item]``, ``log_prior
    [state]``, ``utt_mask [item, utterance]`` -> ``[item, utterance, state]`` (padded rows
    ``-inf``).
    """
    x = _check_lm("log_lm", log_lm)
    sem = lm_literal_semantics(x, beta, None if utt_mask is None else _mask(utt_mask, x.shape[:2]))
    return log_normalize(sem + _prior(log_prior, x.shape[2], sem.dtype), axis=-1)


def item_rsa_listener(log_semantics: ArrayLike, alpha: ArrayLike, utt_mask: ArrayLike | None = None,
                 cost: ArrayLike | None = None, log_prior: ArrayLike | None = None, *,
                 null: bool = True) -> jax.Array:
    """(b) from log-semantics: ``S1 ∝ exp(alpha (log L0 - cost))`` over the item's utterances
    (plus a null utterance, ``L0 = P(s)``, when ``null``), ``L1 ∝ S1 P(s)``.

    Built on :func:`pragmodels.agents.pragmatic_listener_batch`, items on the batch axis.
    Padded utterances (``utt_mask`` False) get ``-inf`` semantics: they take no share of any
    state's speaker and pass no gradient.

    Shapes: ``log_semantics [item, utterance, state]`` (padded rows may hold anything),
    ``alpha []`` or ``[item]``, ``utt_mask [item, utterance]``, ``cost [item, utterance]``,
    ``log_prior [state]`` -> ``L1 [item, utterance, state]`` (the null utterance dropped; padded
    rows ``-inf``).
    """
    sem = _check_lm("log_semantics", log_semantics)
    n_item, n_utt, n_state = sem.shape
    mask = _mask(utt_mask, (n_item, n_utt))
    sem = jnp.where(mask[..., None], sem, -jnp.inf)
    c = None
    if cost is not None:
        c = jnp.asarray(cost, sem.dtype)
        if c.shape != (n_item, n_utt):
            raise ValueError(f"cost must have shape [item, utterance] = {(n_item, n_utt)}; got {c.shape}.")
        c = jnp.where(mask, c, 0.0)
    if null:
        sem = jnp.concatenate([sem, jnp.zeros((n_item, 1, n_state), sem.dtype)], axis=1)
        if c is not None:
            c = jnp.concatenate([c, jnp.zeros((n_item, 1), sem.dtype)], axis=1)
    a = jnp.broadcast_to(jnp.asarray(alpha, sem.dtype), (n_item,))
    lp = None if log_prior is None else _prior(log_prior, n_state, sem.dtype)
    out = agents.pragmatic_listener_batch(jnp.moveaxis(sem, 0, -1), a, None if c is None else c.T, lp, 1)
    return jnp.moveaxis(out, -1, 0)[:, :n_utt]


def rsa_clue_listener(log_semantics: ArrayLike, alpha: ArrayLike, utt_mask: ArrayLike | None = None,
                      cost: ArrayLike | None = None, log_prior: ArrayLike | None = None, *,
                      null: bool = True) -> jax.Array:
    """:func:`item_rsa_listener`'s row for utterance 0 (the real clue) only, as the models use it.

    ``L1(s | u0) ∝ P(s) · exp(alpha (log L0(s | u0) - c0)) / Σ_u exp(alpha (log L0(s | u) - c_u))``:
    the speaker is normalised over the utterances but only its ``u0`` row is kept, so the last
    normalisation runs over ``[item, state]`` instead of ``[item, utterance, state]``. Plain
    ``jnp`` in the item-first layout; equal to ``item_rsa_listener(...)[:, 0]`` (tested), with a
    gradient about 1.5x faster at 100 items x 23 utterances x 21 states on a CPU (0.88 vs
    1.29 ms, one measurement on a loaded 2-core machine).

    Shapes: as :func:`item_rsa_listener` -> ``[item, state]``.
    """
    sem = _check_lm("log_semantics", log_semantics)
    n_item, n_utt, n_state = sem.shape
    mask = _mask(utt_mask, (n_item, n_utt))
    sem = jnp.where(mask[..., None], sem, -jnp.inf)
    c = jnp.zeros((n_item, n_utt), sem.dtype)
    if cost is not None:
        c = jnp.asarray(cost, sem.dtype)
        if c.shape != (n_item, n_utt):
            raise ValueError(f"cost must have shape [item, utterance] = {(n_item, n_utt)}; got {c.shape}.")
        c = jnp.where(mask, c, 0.0)
    if null:
        sem = jnp.concatenate([sem, jnp.zeros((n_item, 1, n_state), sem.dtype)], axis=1)
        c = jnp.concatenate([c, jnp.zeros((n_item, 1), sem.dtype)], axis=1)
    lp = _prior(log_prior, n_state, sem.dtype)
    a = jnp.asarray(alpha, sem.dtype)
    a = a.reshape(a.shape + (1,) * (3 - a.ndim)) if a.ndim else a
    util = masked_scale(log_normalize(sem + lp, axis=-1), a, c[..., None])  # alpha (log L0 - cost)
    log_s1_clue = jnp.where(util[:, 0] > -jnp.inf, util[:, 0] - log_sum_exp(util, axis=1), -jnp.inf)
    return log_normalize(log_s1_clue + lp, axis=-1)


def lm_rsa_listener(log_lm: ArrayLike, utt_mask: ArrayLike | None, alpha: ArrayLike, beta: ArrayLike,
                    cost: ArrayLike | None = None, log_prior: ArrayLike | None = None, *,
                    null: bool = True) -> jax.Array:
    """(b) LM-RSA listener (Section 4.1): :func:`item_rsa_listener` on ``β log P_LM``.

    Shapes: ``log_lm [item, utterance, state]``, ``utt_mask [item, utterance]``, ``alpha []`` or
    ``[item]``, ``beta []`` or ``[item]``, ``cost [item, utterance]``, ``log_prior [state]`` ->
    ``L1 [item, utterance, state]`` (row 0: the real clue).
    """
    x = _check_lm("log_lm", log_lm)
    mask = _mask(utt_mask, x.shape[:2])
    return item_rsa_listener(lm_literal_semantics(x, beta, mask), alpha, mask, cost, log_prior, null=null)


def appendix_c_listener(log_lm: ArrayLike, log_s0: ArrayLike, alpha: ArrayLike, beta: ArrayLike = 1.0,
                        log_prior: ArrayLike | None = None) -> jax.Array:
    """(c) Appendix C listener ``L1(s | u) ∝ L0(s | u) · S0(u | s)^alpha``.

    ``S0`` is the LM speaker's length-normalised probability (an unnormalised score; only its
    variation over states matters). ``-inf`` scores stay ``-inf`` with zero gradient.

    Shapes: ``log_lm [item, utterance, state]``, ``log_s0 [item, utterance, state]``, ``alpha
    []`` or ``[item]``, ``beta []`` or ``[item]``, ``log_prior [state]`` -> ``[item, utterance,
    state]``.
    """
    x = _check_lm("log_lm", log_lm)
    s0 = _check_lm("log_s0", log_s0)
    if s0.shape != x.shape:
        raise ValueError(f"log_s0 must have the shape of log_lm {x.shape}; got {s0.shape}.")
    log_l0 = lm_literal_listener(x, beta, log_prior)
    a = jnp.asarray(alpha, log_l0.dtype)
    a = a.reshape(a.shape + (1,) * (3 - a.ndim)) if a.ndim else a
    return log_normalize(log_l0 + masked_scale(s0, a, jnp.zeros((), log_l0.dtype)), axis=-1)


def inverse_rsa_speaker(log_lm_prod: ArrayLike, prod_count: ArrayLike, alpha: ArrayLike, beta: ArrayLike = 1.0,
                        log_prior: ArrayLike | None = None, prod_mask: ArrayLike | None = None) -> jax.Array:
    """(d) Inverse-RSA speaker (Section 5.1): ``S1(u | s) ∝ S0(u | s) · L0(s | u)^alpha``.

    ``S0(u | s) = prod_count[u] / Σ_u' prod_count[u']``, the frequency of ``u`` among the clues
    sampled for the item's target (as upstream, the same for every ``s``: read the result at the
    target). Built on :func:`pragmodels.agents.pragmatic_speaker_batch` with the utterance prior
    as an ``"outside"`` cost, ``-log S0``. Alternatives with ``prod_mask`` False or a count of 0
    are excluded.

    Shapes: ``log_lm_prod [item, alt, state]``, ``prod_count [item, alt]``, ``alpha []`` or
    ``[item]``, ``beta []`` or ``[item]``, ``log_prior [state]``, ``prod_mask [item, alt]`` ->
    ``[item, state, alt]`` (normalised over ``alt``).
    """
    x = _check_lm("log_lm_prod", log_lm_prod)
    n_item, n_alt, n_state = x.shape
    count = jnp.asarray(prod_count)
    if count.shape != (n_item, n_alt):
        raise ValueError(f"prod_count must have shape [item, alt] = {(n_item, n_alt)}; got {count.shape}.")
    mask = _mask(prod_mask, (n_item, n_alt)) & (count > 0)
    sem = lm_literal_semantics(x, beta, mask)
    log_s0 = jnp.log(jnp.where(mask, count, 1).astype(sem.dtype))
    a = jnp.broadcast_to(jnp.asarray(alpha, sem.dtype), (n_item,))
    lp = None if log_prior is None else _prior(log_prior, n_state, sem.dtype)
    out = agents.pragmatic_speaker_batch(jnp.moveaxis(sem, 0, -1), a, -log_s0.T, lp, 1,
                                         cost_scaling="outside")  # [state, alt, item]
    return jnp.moveaxis(out, -1, 0)


def at_target(log_speaker: ArrayLike, target_state: ArrayLike) -> jax.Array:
    """A speaker's utterance distribution at each item's target state.

    Shapes: ``log_speaker [item, state, alt]``, ``target_state [item]`` (state indices) ->
    ``[item, alt]``.
    """
    s = jnp.asarray(log_speaker)
    t = jnp.asarray(target_state, jnp.int32)
    return jnp.take_along_axis(s, t[:, None, None], axis=1)[:, 0]


def length_cost(cost_weight: ArrayLike, clue_length: ArrayLike, utt_mask: ArrayLike | None = None) -> jax.Array:
    """(e) ``cost(u) = cost_weight · clue_length(u)``; 0 on padded utterances (whatever their
    length holds, NaN included, so that no NaN reaches the gradient).

    Shapes: ``cost_weight []``, ``clue_length [item, utterance]``, ``utt_mask [item, utterance]``
    -> ``[item, utterance]``.
    """
    length = jnp.asarray(clue_length, jnp.float32)
    if utt_mask is not None:
        length = jnp.where(_mask(utt_mask, tuple(length.shape)), length, 0.0)
    return jnp.asarray(cost_weight) * length


def clue_semantics_with_deviation(log_semantics: ArrayLike, tau: ArrayLike, z: ArrayLike) -> jax.Array:
    """The LM-prior model's semantics: ``sem[i, 0, s] + tau · z[i, s]`` on the real clue's row.

    Entries that are ``-inf`` (the LM gives the state probability 0) stay ``-inf``; the
    alternatives' rows are unchanged.

    Shapes: ``log_semantics [item, utterance, state]``, ``tau []``, ``z [item, state]`` ->
    ``[item, utterance, state]``.
    """
    sem = jnp.asarray(log_semantics)
    row = sem[:, 0]
    ok = row > -jnp.inf
    new = jnp.where(ok, jnp.where(ok, row, 0.0) + jnp.asarray(tau) * jnp.asarray(z), -jnp.inf)
    return sem.at[:, 0].set(new)


#: edges of the 21 states' bins on the scale: 0, 2.5, 7.5, ..., 97.5, 100
STATE_EDGES = np.concatenate([[0.0], (STATE_VALUES[:-1] + STATE_VALUES[1:]) / 2, [100.0]])


def location_listener(location: ArrayLike, spread: ArrayLike, n_state: int = N_STATE) -> jax.Array:
    """The location models' belief: a Gaussian of sd ``spread`` around each item's ``location``,
    discretised on the states, ``L(s | i) ∝ exp(-(v_s - location_i)² / (2 spread²))``.

    Shapes: ``location [item]``, ``spread []`` -> ``[item, state]`` (log, normalised).
    """
    v = jnp.asarray(_state_values(n_state), jnp.float32)
    d = (v[None, :] - jnp.asarray(location, jnp.float32)[:, None]) / jnp.asarray(spread, jnp.float32)
    return log_normalize(-0.5 * d * d, axis=-1)


def location_from_unit(u: ArrayLike, log_weight: ArrayLike | None = None) -> jax.Array:
    """Inverse CDF of a piecewise-constant density on [0, 100]: ``u`` in (0, 1) to a location.

    The density on state ``s``'s bin (:data:`STATE_EDGES`) is ``∝ exp(log_weight[i, s])``; ``None``
    (or equal weights) is the uniform on the scale, ``location = 100 u``. With ``log_weight =
    β log P_LM(s | clue)`` it is the LM's literal listener spread over each state's bin: a
    uniform ``u`` then draws a location from the LM's prior, and ``β = 0`` is the uniform.

    Shapes: ``u [item]``, ``log_weight [item, state]`` -> ``[item]``.
    """
    u = jnp.asarray(u, jnp.float32)
    if log_weight is None:
        return 100.0 * u
    lw = jnp.asarray(log_weight, jnp.float32)
    edges = jnp.asarray(STATE_EDGES, jnp.float32)
    width = edges[1:] - edges[:-1]
    mass = jnp.exp(log_normalize(lw + jnp.log(width), axis=-1))  # [item, state]
    cdf = jnp.cumsum(mass, axis=-1)
    s = jnp.clip(jnp.sum(u[:, None] > cdf[:, :-1], axis=-1), 0, lw.shape[-1] - 1)
    start = jnp.take_along_axis(cdf - mass, s[:, None], 1)[:, 0]
    m = jnp.take_along_axis(mass, s[:, None], 1)[:, 0]
    frac = jnp.clip((u - start) / jnp.where(m > 0, m, 1.0), 0.0, 1.0)
    return edges[s] + frac * width[s]


# ----------------------------------------------------------------------------------- models


def _state_values(n_state: int) -> np.ndarray:
    return np.linspace(0.0, 100.0, n_state)


def _setup(log_lm: ArrayLike, item: ArrayLike, guess: ArrayLike | None) -> tuple[jax.Array, int]:
    x = _check_lm("log_lm", log_lm)
    n_item = int(x.shape[0])
    check_index("wavelength", "item", item, n_item)
    if guess is not None and not isinstance(guess, jax.core.Tracer):
        check_slider_values(guess, 0, 100, "guess")
    return x, n_item


def _observe(log_l: jax.Array, item: ArrayLike, guess: ArrayLike | None, resp: Mapping[str, Any]) -> jax.Array:
    """Raw guesses given the listener's row for the real clue ``log_l [item, state]``."""
    return slider_responses("guess", log_l, guess, state_values=_state_values(int(log_l.shape[-1])),
                            width=resp["width"], lapse=resp["lapse"], rounding=resp["rounding"], round_to=ROUND_TO,
                            rows=jnp.asarray(item), dim="trial")


def _response_params() -> dict[str, Any]:
    """The slider's response parameters, declared in this order: width, lapse, rounding."""
    return {"width": param("width", PRIORS["width"]), "lapse": param("lapse", PRIORS["lapse"]),
            "rounding": param("rounding", PRIORS["rounding"])}


def uniform_model(log_lm: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                  utt_mask: ArrayLike | None = None, clue_length: ArrayLike | None = None,
                  log_s0: ArrayLike | None = None, log_prior: ArrayLike | None = None) -> jax.Array:
    """Semantics-free baseline: the belief is the state prior, ``L(s | u) = P(s)`` (uniform).

    Reads ``log_lm`` for its shape only. Parameters: width, lapse, rounding.

    Shapes: ``log_lm [item, utterance, state]``, ``item [trial]``, ``guess [trial]`` -> ``[trial]``.
    """
    x, n_item = _setup(log_lm, item, guess)
    resp = _response_params()
    lp = log_normalize(_prior(log_prior, x.shape[2], jnp.float32), axis=0)
    return _observe(jnp.broadcast_to(lp, (n_item, x.shape[2])), item, guess, resp)


def literal_model(log_lm: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                  utt_mask: ArrayLike | None = None, clue_length: ArrayLike | None = None,
                  log_s0: ArrayLike | None = None, log_prior: ArrayLike | None = None) -> jax.Array:
    """(a) LM literal listener ``L0(s | clue) ∝ P_LM(s | clue)^beta P(s)``: beta, width, lapse, rounding.

    Shapes: ``log_lm [item, utterance, state]`` (row 0 read), ``item [trial]``, ``guess [trial]``
    -> ``[trial]``.
    """
    x, _ = _setup(log_lm, item, guess)
    beta = param("beta", PRIORS["beta"])
    resp = _response_params()
    return _observe(lm_literal_listener(x[:, :1], beta, log_prior)[:, 0], item, guess, resp)


def _cost(clue_length: ArrayLike | None, utt_mask: ArrayLike | None, shape: tuple[int, int]) -> jax.Array | None:
    if clue_length is None:
        return None
    length = jnp.asarray(clue_length)
    if length.shape != shape:
        raise ValueError(f"clue_length must have shape [item, utterance] = {shape}; got {length.shape}.")
    return length_cost(param("cost_weight", PRIORS["cost_weight"]), length, utt_mask)


def _lm_rsa_observe(x: jax.Array, alpha: ArrayLike, beta: ArrayLike, item: ArrayLike, guess: ArrayLike | None,
                    utt_mask: ArrayLike | None, clue_length: ArrayLike | None, log_prior: ArrayLike | None,
                    null: bool) -> jax.Array:
    """(b)'s listener for the real clue on the slider, given alpha and beta (scalars or per item):
    the cost (with ``clue_length``), width, lapse and rounding are declared here, in that order."""
    cost = _cost(clue_length, utt_mask, x.shape[:2])
    resp = _response_params()
    mask = _mask(utt_mask, x.shape[:2])
    log_l1 = rsa_clue_listener(lm_literal_semantics(x, beta, mask), alpha, mask, cost, log_prior, null=null)
    return _observe(log_l1, item, guess, resp)


def lm_rsa_model(log_lm: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                 utt_mask: ArrayLike | None = None, clue_length: ArrayLike | None = None,
                 log_s0: ArrayLike | None = None, log_prior: ArrayLike | None = None, *,
                 null: bool = True) -> jax.Array:
    """(b) LM-RSA listener for the real clue: alpha, beta, width, lapse, rounding (+ cost_weight with
    ``clue_length``).

    Shapes: ``log_lm [item, utterance, state]``, ``utt_mask [item, utterance]``, ``clue_length
    [item, utterance]``, ``item [trial]``, ``guess [trial]`` -> ``[trial]``.
    """
    x, _ = _setup(log_lm, item, guess)
    alpha = param("alpha", PRIORS["alpha"])
    beta = param("beta", PRIORS["beta"])
    return _lm_rsa_observe(x, alpha, beta, item, guess, utt_mask, clue_length, log_prior, null)


def appendix_c_model(log_lm: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                     utt_mask: ArrayLike | None = None, clue_length: ArrayLike | None = None,
                     log_s0: ArrayLike | None = None, log_prior: ArrayLike | None = None) -> jax.Array:
    """(c) Appendix C listener ``L1 ∝ L0 · S0^alpha`` for the real clue: alpha, beta, width, lapse,
    rounding.

    Shapes: ``log_lm [item, utterance, state]``, ``log_s0 [item, utterance, state]`` (row 0 read),
    ``item [trial]``, ``guess [trial]`` -> ``[trial]``.
    """
    x, _ = _setup(log_lm, item, guess)
    if log_s0 is None:
        raise ValueError("appendix_c_model needs log_s0 [item, utterance, state] (the LM speaker's "
                         "length-normalised log-probabilities).")
    alpha = param("alpha", PRIORS["alpha"])
    beta = param("beta", PRIORS["beta"])
    resp = _response_params()
    log_l1 = appendix_c_listener(x[:, :1], jnp.asarray(log_s0)[:, :1], alpha, beta, log_prior)
    return _observe(log_l1[:, 0], item, guess, resp)


def lm_rsa_by_item_model(log_lm: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                         utt_mask: ArrayLike | None = None, clue_length: ArrayLike | None = None,
                         log_s0: ArrayLike | None = None, log_prior: ArrayLike | None = None, *,
                         null: bool = True, beta_by_item: bool = False) -> jax.Array:
    """(b) with a rationality per item: ``log alpha_i = alpha_mu + alpha_sigma · alpha_z[i]``
    (non-centred, :func:`pragmodels.group_effect`); with ``beta_by_item`` also ``log beta_i``.

    Shapes: as :func:`lm_rsa_model` -> ``[trial]``.
    """
    x, n_item = _setup(log_lm, item, guess)
    alpha = group_effect("alpha", dim="item", size=n_item, loc=PRIORS["alpha_mu"], scale=PRIORS["alpha_sigma"],
                         link="exp")
    if beta_by_item:
        beta = group_effect("beta", dim="item", size=n_item, loc=PRIORS["beta_mu"], scale=PRIORS["beta_sigma"],
                            link="exp")
    else:
        beta = param("beta", PRIORS["beta"])
    return _lm_rsa_observe(x, alpha, beta, item, guess, utt_mask, clue_length, log_prior, null)


def lm_prior_model(log_lm: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                   utt_mask: ArrayLike | None = None, clue_length: ArrayLike | None = None,
                   log_s0: ArrayLike | None = None, log_prior: ArrayLike | None = None, *,
                   null: bool = True) -> jax.Array:
    """The LM as a Bayesian prior on the clue's semantics, then LM-RSA (b).

    ``sem[i, 0, s] = beta · log P_LM(s | clue_i) + tau · z[i, s]``, ``z[i, s] ~ Normal(0, 1)``
    (non-centred; ``z`` has dims ``item, state``), ``sem[i, u, s] = beta · log P_LM(s | u)`` for
    the alternatives. Parameters: alpha, beta, tau, z, width, lapse, rounding (+ cost_weight).

    Shapes: as :func:`lm_rsa_model` -> ``[trial]``.
    """
    x, n_item = _setup(log_lm, item, guess)
    n_state = int(x.shape[2])
    alpha = param("alpha", PRIORS["alpha"])
    beta = param("beta", PRIORS["beta"])
    tau = param("tau", PRIORS["tau"])
    z = param("z", STANDARD_NORMAL, dims={"item": n_item, "state": n_state})
    cost = _cost(clue_length, utt_mask, x.shape[:2])
    resp = _response_params()
    mask = _mask(utt_mask, x.shape[:2])
    sem = clue_semantics_with_deviation(lm_literal_semantics(x, beta, mask), tau, z)
    return _observe(rsa_clue_listener(sem, alpha, mask, cost, log_prior, null=null), item, guess, resp)


def _location_observe(log_weight: jax.Array | None, n_item: int, item: ArrayLike, guess: ArrayLike | None
                      ) -> jax.Array:
    """The location models' sites in order: ``location_u [item]``, spread, width, lapse, rounding."""
    u = param("location_u", PRIORS["location_u"], dims={"item": n_item})
    spread = param("spread", PRIORS["spread"])
    resp = _response_params()
    return _observe(location_listener(location_from_unit(u, log_weight), spread), item, guess, resp)


def location_model(log_lm: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                   utt_mask: ArrayLike | None = None, clue_length: ArrayLike | None = None,
                   log_s0: ArrayLike | None = None, log_prior: ArrayLike | None = None) -> jax.Array:
    """The no-LM control: each item's guesses cluster around a location of its own, uniform on the
    scale (``location_i = 100 u_i``, ``u_i ~ Uniform(0, 1)``), as a discretised Gaussian
    (:func:`location_listener`, ``spread``), then the slider (width, lapse, rounding).

    Reads ``log_lm`` for its shape only (``log_prior`` is not read). In item cross-validation a held-out item's location is
    drawn from the uniform (marginalised by Monte Carlo).

    Shapes: ``log_lm [item, utterance, state]``, ``item [trial]``, ``guess [trial]`` -> ``[trial]``.
    """
    _, n_item = _setup(log_lm, item, guess)
    return _location_observe(None, n_item, item, guess)


def lm_location_model(log_lm: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                      utt_mask: ArrayLike | None = None, clue_length: ArrayLike | None = None,
                      log_s0: ArrayLike | None = None, log_prior: ArrayLike | None = None) -> jax.Array:
    """:func:`location_model` with the LM as the locations' prior: ``location_i`` has the density
    ``∝ P_LM(s | clue_i)^β`` on state ``s``'s bin (:func:`location_from_unit`), so ``β = 0`` is the
    no-LM control and ``β`` measures how far the LM's literal listener moves the prior.

    Parameters: beta, location_u, spread, width, lapse, rounding.

    Shapes: as :func:`location_model` (``log_lm`` row 0 read) -> ``[trial]``.
    """
    x, n_item = _setup(log_lm, item, guess)
    beta = param("beta", PRIORS["beta"])
    log_weight = lm_literal_listener(x[:, :1], beta)[:, 0]
    return _location_observe(log_weight, n_item, item, guess)


for _m, _n in ((uniform_model, "wavelength_uniform"), (location_model, "wavelength_location"),
               (lm_location_model, "wavelength_lm_location"), (literal_model, "wavelength_literal"),
               (lm_rsa_model, "wavelength_lm_rsa"), (appendix_c_model, "wavelength_appendix_c"),
               (lm_rsa_by_item_model, "wavelength_lm_rsa_by_item"), (lm_prior_model, "wavelength_lm_prior")):
    _m.name = _n

#: the listener models, by name
def sampled_rows(counts: ArrayLike, utt_mask: ArrayLike | None = None) -> np.ndarray:
    """The flat indices (``item * n_utterance + utterance``) of the unmasked rows of ``counts``: the
    rows :func:`sampled_lm_rsa_model` samples (data ``rows``).

    Shapes: ``counts [item, utterance, state]``, ``utt_mask [item, utterance]`` -> ``[row]``.

    Raises
    ------
    ValueError
        Wrong shapes, or an unmasked row with no parsed answer (named).
    """
    c = np.asarray(counts)
    if c.ndim != 3 or c.shape[-1] != N_STATE:
        raise ValueError(f"counts must have shape [item, utterance, {N_STATE}]; got {c.shape}.")
    mask = np.ones(c.shape[:2], bool) if utt_mask is None else np.asarray(utt_mask, bool)
    if mask.shape != c.shape[:2]:
        raise ValueError(f"utt_mask must have shape [item, utterance] = {c.shape[:2]}; got {mask.shape}.")
    empty = np.argwhere(mask & (c.sum(-1) == 0))
    if empty.size:
        i, u = (int(k) for k in empty[0])
        raise ValueError(f"counts[{i}, {u}] has no parsed answer but utt_mask[{i}, {u}] is True; mask the "
                         "utterance out (or drop the item where it is the real clue).")
    return np.flatnonzero(mask.ravel()).astype(np.int32)


def _scatter(log_theta: jax.Array, rows: ArrayLike, shape: tuple[int, ...]) -> jax.Array:
    """``log theta [row, state]`` placed at ``rows`` of a zero ``[item, utterance, state]`` array."""
    flat = jnp.zeros((shape[0] * shape[1], shape[2]), log_theta.dtype)
    return flat.at[jnp.asarray(rows)].set(log_theta).reshape(shape)


def sampled_literal_model(counts: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                          rows: ArrayLike | None = None, utt_mask: ArrayLike | None = None,
                          log_prior: ArrayLike | None = None) -> jax.Array:
    """(a) with the LM's L0 known through samples of the real clue (the paper's sampled and
    chain-of-thought listeners): ``theta [item, state] ~ Dirichlet(1 + counts[:, 0])``
    (:func:`pragmodels.likelihoods.samples.sampled_semantics`), beta, width, lapse, rounding.

    Shapes: ``counts [item, utterance, state]`` (row 0 read), ``item [trial]``, ``guess [trial]`` -> ``[trial]``.
    """
    from pragmodels.likelihoods.samples import sampled_semantics

    c = jnp.asarray(counts)[:, 0]
    check_index("wavelength", "item", item, int(c.shape[0]))
    x = sampled_semantics("theta", c, dim="item")
    beta = param("beta", PRIORS["beta"])
    resp = _response_params()
    return _observe(lm_literal_listener(x[:, None], beta, log_prior)[:, 0], item, guess, resp)


def sampled_lm_rsa_model(counts: ArrayLike, item: ArrayLike, guess: ArrayLike | None = None,
                         rows: ArrayLike | None = None, utt_mask: ArrayLike | None = None,
                         log_prior: ArrayLike | None = None) -> jax.Array:
    """(b) LM-RSA on an L0 known through samples of every utterance: ``theta [row, state] ~
    Dirichlet(1 + counts)`` for the unmasked rows (``rows``: :func:`sampled_rows`), alpha, beta,
    width, lapse, rounding.

    Shapes: ``counts [item, utterance, state]``, ``rows [row]``, ``utt_mask [item, utterance]``,
    ``item [trial]``, ``guess [trial]`` -> ``[trial]``.
    """
    from pragmodels.likelihoods.samples import sampled_semantics

    c = jnp.asarray(counts)
    check_index("wavelength", "item", item, int(c.shape[0]))
    if rows is None:
        raise ValueError("sampled_lm_rsa_model: rows is required (models.wavelength.listeners.sampled_rows).")
    flat = c.reshape(-1, c.shape[-1])[jnp.asarray(rows)]
    x = _scatter(sampled_semantics("theta", flat, dim="row"), rows, c.shape)
    alpha = param("alpha", PRIORS["alpha"])
    beta = param("beta", PRIORS["beta"])
    return _lm_rsa_observe(x, alpha, beta, item, guess, utt_mask, None, log_prior, True)


def sampled_listener_for(name: str, params: Mapping[str, ArrayLike], data: Mapping[str, Any]) -> jax.Array:
    """:func:`listener_for` of the sampled models at one draw (``params["theta"]``: ``[item, state]``
    for ``sampled_literal``, ``[row, state]`` for ``sampled_lm_rsa``).

    Shapes: ``data["counts"] [item, utterance, state]`` -> ``[item, state]``.
    """
    log_theta = jnp.log(jnp.clip(jnp.asarray(params["theta"]), jnp.finfo(jnp.float32).tiny))
    if name == "sampled_literal":
        return lm_literal_listener(log_theta[:, None], params["beta"], data.get("log_prior"))[:, 0]
    if name == "sampled_lm_rsa":
        shape = tuple(np.shape(data["counts"]))
        x = _scatter(log_theta, data["rows"], shape)
        m = _mask(data.get("utt_mask"), shape[:2])
        return rsa_clue_listener(lm_literal_semantics(x, params["beta"], m), params["alpha"], m, None,
                                 data.get("log_prior"))
    raise ValueError(f"sampled_listener_for: unknown model {name!r}; expected 'sampled_literal' or 'sampled_lm_rsa'.")


MODELS: dict[str, Callable[..., Any]] = {
    "uniform": uniform_model,
    "literal": literal_model,
    "lm_rsa": lm_rsa_model,
    "appendix_c": appendix_c_model,
    "lm_rsa_by_item": lm_rsa_by_item_model,
    "lm_prior": lm_prior_model,
    "location": location_model,
    "lm_location": lm_location_model,
}


# ------------------------------------------------------------------------- data, simulation


def trial_data(frame: Any) -> dict[str, np.ndarray]:
    """``item [trial]`` and ``guess [trial]`` from :func:`pragmodels.datasets.load_wavelength`
    (``long=True``), as int32 arrays."""
    item = np.asarray(frame["item"], np.int32)
    guess = check_slider_values(np.asarray(frame["guess"]), 0, 100, "guess").astype(np.int32)
    return {"item": item, "guess": guess}


def simulate_lm_scores(rng: np.random.Generator, target: ArrayLike, *, n_alt_max: int = 21,
                       n_alt_min: int = 8) -> dict[str, np.ndarray]:
    """Synthetic LM scores of a realistic shape: peaked Gaussian-like rows over the 21 states.

    Each clue points at a centre (the real clue: the target plus N(0, 10) noise; alternatives:
    uniform on 0..100) with a sharpness ``σ ~ U(4, 15)``: ``log_lm[s] = -(v_s - c)² / (2σ²) +
    N(0, 0.5)`` noise plus an arbitrary row offset (the scores are not normalised). Items get
    ``n_alt_min .. n_alt_max`` alternatives (padded rows hold 0, masked out); clue lengths 1..4.

    Shapes: ``target [item]`` -> ``log_lm [item, utterance, state]``, ``utt_mask [item,
    utterance]``, ``clue_length [item, utterance]``, ``log_s0 [item, utterance, state]``.
    """
    target = np.asarray(target, float)
    n_item, n_utt = target.size, 1 + n_alt_max
    centre = rng.uniform(0, 100, (n_item, n_utt))
    centre[:, 0] = np.clip(target + rng.normal(0, 10, n_item), 0, 100)
    sigma = rng.uniform(4, 15, (n_item, n_utt))
    log_lm = -((STATE_VALUES[None, None, :] - centre[..., None]) ** 2) / (2 * sigma[..., None] ** 2)
    log_lm += rng.normal(0, 0.5, log_lm.shape) + rng.normal(-3, 2, (n_item, n_utt, 1))
    n_alt = rng.integers(n_alt_min, n_alt_max + 1, n_item)
    mask = np.arange(n_utt)[None, :] <= n_alt[:, None]
    log_lm = np.where(mask[..., None], log_lm, 0.0)
    length = np.where(mask, rng.integers(1, 5, (n_item, n_utt)), 0)
    # speaker scores: how well the clue fits each target, a broader version of the listener's
    log_s0 = -((STATE_VALUES[None, None, :] - centre[..., None]) ** 2) / (2 * (2 * sigma[..., None]) ** 2) - 2.0
    return {"log_lm": log_lm.astype(np.float32), "utt_mask": mask, "clue_length": length.astype(np.float32),
            "log_s0": np.where(mask[..., None], log_s0, 0.0).astype(np.float32)}


def simulate_guesses(rng_key: int | jax.Array, model: Callable[..., Any], data: Mapping[str, Any],
                     params: Mapping[str, ArrayLike]) -> np.ndarray:
    """Guesses ``[trial]`` drawn from ``model`` with its parameters fixed at ``params`` (any
    parameter not given is drawn from its prior); ``data["guess"]`` is ignored."""
    key = jax.random.key(rng_key) if isinstance(rng_key, int) else rng_key
    kwargs = {k: v for k, v in data.items() if k != "guess"}
    run = handlers.seed(handlers.condition(model, data={k: jnp.asarray(v) for k, v in params.items()}), key)
    tr = handlers.trace(run).get_trace(**kwargs)
    return np.asarray(tr["guess"]["value"], np.int32)


# ------------------------------------------------------------------ identifiability of alpha_i


def alpha_profile(data: Mapping[str, Any], alpha_grid: ArrayLike, params: Mapping[str, ArrayLike]) -> np.ndarray:
    """Each item's log-likelihood of its guesses under LM-RSA (b) as a function of that item's
    alpha, the other parameters fixed (``beta``, ``width``, ``lapse``, ``rounding``; e.g. the
    flat fit's posterior means): the profile a per-item rationality is estimated from.

    Shapes: ``data`` as the models' (``log_lm``, ``utt_mask``, ``item``, ``guess``),
    ``alpha_grid [grid]`` -> ``[grid, item]``.
    """
    from pragmodels.likelihoods.slider import slider_log_probs

    x = _check_lm("log_lm", data["log_lm"])
    mask = _mask(data.get("utt_mask"), x.shape[:2])
    item, guess = jnp.asarray(data["item"]), jnp.asarray(data["guess"])
    sem = lm_literal_semantics(x, params["beta"], mask)

    def one(a: jax.Array) -> jax.Array:
        tab = slider_log_probs(rsa_clue_listener(sem, a, mask), _state_values(int(x.shape[2])), params["width"],
                               params["lapse"], rounding=params.get("rounding", 0.0), round_to=ROUND_TO)
        return jax.ops.segment_sum(tab[item, guess], item, num_segments=int(x.shape[0]))

    return np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(alpha_grid, jnp.float32)))


def count_modes(profile: ArrayLike, within: float = 2.0, dip: float = 0.5) -> int:
    """Separate maxima of a 1-D log-likelihood profile that come within ``within`` nats of the
    best: a maximum counts when the profile falls at least ``dip`` nats between it and the
    previous counted one (so float noise on a plateau is not a mode).

    Shapes: ``profile [grid]`` -> int.
    """
    y = np.asarray(profile, float)
    y = y - y.max()
    modes, low, last = 0, np.inf, None
    for k in range(y.size):
        left = y[k - 1] if k else -np.inf
        right = y[k + 1] if k + 1 < y.size else -np.inf
        if last is not None:
            low = min(low, y[k])
        if y[k] >= left and y[k] >= right and y[k] >= -within:
            if last is None or (min(y[last], y[k]) - low >= dip):
                modes += 1
                last, low = k, np.inf
            elif y[k] > y[last]:
                last = k
    return modes


# -------------------------------------------------------------------------- cross-validation


def cv_fold(rng_key: int, model: Callable[..., Any], data: Mapping[str, Any], test_items: Sequence[int] | np.ndarray,
            *, priors: Mapping[str, Any] | None = None, n_mc: int = 200, max_draws: int | None = 400,
            fit_kwargs: Mapping[str, Any] | None = None, keep_tree: bool = False, top_up: bool = False,
            name: str = "cv-fold") -> FoldResult:
    """Fit ``model`` to all items but ``test_items``; the held-out items' log predictive density.

    :func:`pragmodels.evaluation.crossval.fit_fold` with this study's data layout (:data:`ITEM_KEYS`,
    :data:`TRIAL_KEYS`): per-item sites (the LM-prior model's ``z``, the per-item
    ``alpha_z``) of held-out items are drawn from their prior, ``n_mc`` times per posterior draw,
    and the log-mean-exp taken (:func:`pragmodels.evaluation.crossval.heldout_log_density`). The same call
    works for every model in :data:`MODELS`, so they can be compared on the same folds
    (:func:`cross_validate`).

    Shapes: ``data`` as the models'; ``test_items [held_out_item]`` -> ``FoldResult.elpd
    [held_out_item]``.
    """
    return fit_fold(rng_key, model, data, test_items, item_keys=ITEM_KEYS, trial_keys=TRIAL_KEYS,
                    item_index="item", local_dim="item", priors=priors, n_mc=n_mc, max_draws=max_draws,
                    fit_kwargs=fit_kwargs, keep_tree=keep_tree, top_up=top_up, name=name)


def cross_validate(rng_key: int, models: Mapping[str, Callable[..., Any]], data: Mapping[str, Any], *, k: int = 5,
                   seed: int = 0, n_mc: int = 200, max_draws: int | None = 400,
                   fit_kwargs: Mapping[str, Any] | None = None, top_up: bool = False) -> dict[str, Any]:
    """K-fold cross-validation by item of several models on the same folds (``top_up``: each fold's fit
    short of the sampling standards sampled again first, :func:`pragmodels.evaluation.crossval.fit_fold`).

    Returns ``{"folds": [test items per fold], "elpd": {model: [item]}, "mc_se": {model:
    [item]}, "total": {model: Σ elpd}, "diff_se": {model: standard error of its total minus
    the best model's total}, "diagnostics": {model: the worst fold's max_rhat, min_ess_bulk,
    min_ess_tail over the global sites and the divergences summed over folds}}`` (the paired
    standard error over items).

    Shapes: ``data`` as the models' -> ``elpd[model] [item]``.
    """
    n_item = int(np.shape(data["log_lm"])[0])
    folds = item_folds(n_item, k, seed)
    elpd = {name: np.empty(n_item) for name in models}
    mc_se = {name: np.empty(n_item) for name in models}
    diag: dict[str, dict[str, float]] = {}
    for f, test in enumerate(folds):
        for name, model in models.items():
            res = cv_fold(rng_key + f, model, data, test, n_mc=n_mc, max_draws=max_draws, fit_kwargs=fit_kwargs,
                          keep_tree=True, top_up=top_up, name=f"cv-{name}-fold{f + 1}of{k}")
            elpd[name][test] = res.elpd
            mc_se[name][test] = res.mc_se
            if res.tree is not None:
                _worst_fold(diag.setdefault(name, {}), res.tree)
    total = {name: float(v.sum()) for name, v in elpd.items()}
    best = max(total, key=total.__getitem__)
    diff_se = {name: float(np.sqrt(n_item) * np.std(elpd[name] - elpd[best], ddof=1)) for name in models}
    return {"folds": folds, "elpd": elpd, "mc_se": mc_se, "total": total, "diff_se": diff_se, "best": best,
            "diagnostics": diag}


def _worst_fold(acc: dict[str, float], tree: Any) -> None:
    """Fold one fit's convergence into ``acc``: the worst r_hat and ESS so far, divergences summed, and the
    folds that ``top_up`` sampled again (``folds_sampled_again``: the refit kept) or refitted in vain
    (``folds_refit_not_kept``: a refit that missed more of the standards than the attempt before it).

    Over the global sites only (no ``item`` axis): the held-out items are scored with those and
    fresh prior draws of their own, so the training items' own sites do not enter the CV's elpd.
    """
    import xarray as xr

    from pragmodels.inference.diagnostics import diagnose

    post = tree["posterior"].to_dataset()
    post = post[[v for v in post.data_vars if "item" not in post[v].dims]]
    d = diagnose(xr.DataTree.from_dict({"posterior": post, "sample_stats": tree["sample_stats"].to_dataset()}),
                 emit=False)
    acc["max_rhat"] = max(acc.get("max_rhat", -np.inf), float(d.max_rhat))
    acc["min_ess_bulk"] = min(acc.get("min_ess_bulk", np.inf), float(d.min_ess_bulk))
    acc["min_ess_tail"] = min(acc.get("min_ess_tail", np.inf), float(d.min_ess_tail))
    acc["divergences"] = acc.get("divergences", 0) + int(d.divergences)
    acc["folds_sampled_again"] = acc.get("folds_sampled_again", 0) + int("draws_resized" in tree.attrs)
    acc["folds_refit_not_kept"] = acc.get("folds_refit_not_kept", 0) + int("refits_not_kept" in tree.attrs)


def listener_for(name: str, params: Mapping[str, ArrayLike], data: Mapping[str, Any]) -> jax.Array:
    """The listener's log-distribution over states for each item's real clue, at one parameter
    setting (e.g. a posterior draw), for the metrics of :mod:`pragmodels.metrics.distributions`.

    Shapes: ``params`` scalars (``alpha [item]`` for ``lm_rsa_by_item``, ``z [item, state]``
    for ``lm_prior``), ``data`` as the models' -> ``[item, state]``.
    """
    x = _check_lm("log_lm", data["log_lm"])
    mask, lp = data.get("utt_mask"), data.get("log_prior")
    cost = None
    if data.get("clue_length") is not None and "cost_weight" in params:
        cost = length_cost(params["cost_weight"], data["clue_length"], mask)
    if name == "uniform":
        return jnp.broadcast_to(log_normalize(_prior(lp, x.shape[2], jnp.float32), 0), (x.shape[0], x.shape[2]))
    if name == "literal":
        return lm_literal_listener(x[:, :1], params["beta"], lp)[:, 0]
    if name in ("lm_rsa", "lm_rsa_by_item"):
        m = _mask(mask, x.shape[:2])
        return rsa_clue_listener(lm_literal_semantics(x, params["beta"], m), params["alpha"], m, cost, lp)
    if name == "appendix_c":
        return appendix_c_listener(x[:, :1], jnp.asarray(data["log_s0"])[:, :1], params["alpha"], params["beta"],
                                   lp)[:, 0]
    if name == "lm_prior":
        m = _mask(mask, x.shape[:2])
        sem = clue_semantics_with_deviation(lm_literal_semantics(x, params["beta"], m), params["tau"], params["z"])
        return rsa_clue_listener(sem, params["alpha"], m, cost, lp)
    if name in ("location", "lm_location"):
        lw = lm_literal_listener(x[:, :1], params["beta"])[:, 0] if name == "lm_location" else None
        return location_listener(location_from_unit(params["location_u"], lw), params["spread"], x.shape[2])
    raise ValueError(f"listener_for: unknown model {name!r}; expected one of {sorted(MODELS)}.")

