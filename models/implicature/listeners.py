r"""A Bayesian pragmatic listener for DRInQ (Arai & Ren 2026): which interpretation of a question?

The speaker who means interpretation ``a`` could ask the question ``Q`` or say ``a`` outright;
the listener (:func:`rsa_option_listener`) weighs that choice against an LM's literal semantics
(``fit [item, option]``) and context prior (``prior [item, option]``). The observation is the
event that at least 4 of 5 annotators agreed (:func:`consensus_log_probs`). NumPyro models:
:func:`rsa_model` and its rivals :func:`literal_model`, :func:`prior_model` and
:func:`letter_model` (the LM's own multiple-choice answer), in :data:`MODELS`, with
:data:`PRIORS`; :func:`listener_log_probs` for posterior draws. The equations, the likelihood and
what it cannot identify: ``docs/studies/implicature.md``, "The listener models".
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from pragmodels.likelihoods.categorical import choices
from pragmodels.params import param
from pragmodels.priors import Prior

__all__ = ["PRIORS", "N_ANNOTATORS", "THRESHOLD", "consensus_log_probs", "literal_option_listener", "rsa_option_listener",
           "choice_log_probs", "rsa_model", "literal_model", "prior_model", "letter_model", "MODELS"]

#: annotators per item and the agreement an item needed to be kept (the paper's Section 3.7)
N_ANNOTATORS = 5
THRESHOLD = 4

PRIORS: dict[str, Prior | float] = {
    "alpha": Prior("LogNormal", loc=0.0, scale=1.0),
    "w": Prior("HalfNormal", scale=1.5),
    # fixed by default (a float): see docs/studies/implicature.md, "Identification"
    "cost": 0.0,
    "beta": Prior("LogNormal", loc=0.0, scale=1.0),
    "lapse": Prior("Beta", concentration1=1.0, concentration0=9.0),
}


def _log_softmax(x: ArrayLike) -> jax.Array:
    return jax.nn.log_softmax(jnp.asarray(x), axis=-1)


def consensus_log_probs(log_p: ArrayLike) -> jax.Array:
    """``log P(consensus = j | some option reached 4 of 5)`` from the annotators' choice log-probabilities.

    Shapes: ``log_p [..., option]`` (normalised) -> ``[..., option]`` (normalised).

    ``P(E_j) = p_j^4 (5 - 4 p_j)`` (at least 4 of 5 independent annotators choose ``j``),
    renormalised over ``j``; for 5 annotators and threshold 4 only.

    Parameters
    ----------
    log_p : array-like
        Log choice probabilities per option.

    Returns
    -------
    jax.Array
    """
    lp = jnp.asarray(log_p)
    p = jnp.exp(lp)
    log_e = 4.0 * lp + jnp.log(5.0 - 4.0 * p)  # N_ANNOTATORS = 5, THRESHOLD = 4
    return log_e - jax.nn.logsumexp(log_e, axis=-1, keepdims=True)


def literal_option_listener(fit: ArrayLike) -> jax.Array:
    """``log L0(a | Q, C) = log_softmax(fit)``.

    Shapes: ``fit [item, option]`` -> ``[item, option]``.
    """
    return _log_softmax(fit)


def rsa_option_listener(fit: ArrayLike, prior: ArrayLike, alpha: ArrayLike, w: ArrayLike, cost: ArrayLike) -> jax.Array:
    """``log L1(a | Q, C)`` (docs/studies/implicature.md, "Agents").

    Shapes: ``fit [item, option]``, ``prior [item, option]``, scalars -> ``[item, option]``.

    Parameters
    ----------
    fit, prior : array-like
        LM scores (mean log-probability per token) of each interpretation given Q in C, and given C alone.
    alpha : float
        Speaker rationality.
    w : float
        Weight of the context prior.
    cost : float
        Cost of saying the interpretation outright, in nats of utility.

    Returns
    -------
    jax.Array
    """
    l0 = literal_option_listener(fit)
    u_q = alpha * l0
    log_s1 = u_q - jnp.logaddexp(u_q, -alpha * cost)
    return _log_softmax(w * _log_softmax(prior) + log_s1)


def choice_log_probs(log_l: ArrayLike, lapse: ArrayLike) -> jax.Array:
    """An annotator's choice: ``log[(1 - λ) L + λ / 5]``.

    Shapes: ``log_l [item, option]`` -> ``[item, option]``.
    """
    log_l = jnp.asarray(log_l)
    k = log_l.shape[-1]
    return jnp.logaddexp(jnp.log1p(-lapse) + log_l, jnp.log(lapse) - jnp.log(k))


def _observe(log_l: jax.Array, consensus: ArrayLike | None) -> jax.Array:
    lapse = param("lapse", PRIORS["lapse"])
    log_c = consensus_log_probs(choice_log_probs(log_l, lapse))
    return choices("consensus", log_c, None if consensus is None else jnp.asarray(consensus), dim="item")


def _check(fit: ArrayLike, prior: ArrayLike, letter: ArrayLike, consensus: ArrayLike | None) -> None:
    shapes = {k: jnp.shape(v) for k, v in (("fit", fit), ("prior", prior), ("letter", letter))}
    if len(set(shapes.values())) != 1 or len(shapes["fit"]) != 2 or shapes["fit"][1] != 5:
        raise ValueError(f"fit, prior and letter must all be [item, 5]; got shapes {shapes}.")
    if consensus is not None and jnp.shape(consensus) != shapes["fit"][:1]:
        raise ValueError(f"consensus must be [item] = {shapes['fit'][:1]}; got shape {jnp.shape(consensus)}.")


def rsa_model(fit: ArrayLike, prior: ArrayLike, letter: ArrayLike, consensus: ArrayLike | None = None) -> jax.Array:
    """The pragmatic listener ``L1``: alpha, w, lapse (cost fixed at 0 unless its prior is overridden).

    Shapes: ``fit, prior, letter [item, option]``, ``consensus [item]`` -> ``[item]``.
    """
    _check(fit, prior, letter, consensus)
    alpha = param("alpha", PRIORS["alpha"])
    w = param("w", PRIORS["w"])
    cost = param("cost", PRIORS["cost"])
    return _observe(rsa_option_listener(fit, prior, alpha, w, cost), consensus)


def literal_model(fit: ArrayLike, prior: ArrayLike, letter: ArrayLike, consensus: ArrayLike | None = None) -> jax.Array:
    """The literal listener with a temperature, ``p ∝ L0^beta``: beta, lapse.

    Shapes: ``fit, prior, letter [item, option]``, ``consensus [item]`` -> ``[item]``.
    """
    _check(fit, prior, letter, consensus)
    beta = param("beta", PRIORS["beta"])
    return _observe(_log_softmax(beta * literal_option_listener(fit)), consensus)


def prior_model(fit: ArrayLike, prior: ArrayLike, letter: ArrayLike, consensus: ArrayLike | None = None) -> jax.Array:
    """The context prior alone, ``p ∝ P(a | C)^w``: w, lapse.

    Shapes: ``fit, prior, letter [item, option]``, ``consensus [item]`` -> ``[item]``.
    """
    _check(fit, prior, letter, consensus)
    w = param("w", PRIORS["w"])
    return _observe(_log_softmax(w * _log_softmax(prior)), consensus)


def letter_model(fit: ArrayLike, prior: ArrayLike, letter: ArrayLike, consensus: ArrayLike | None = None) -> jax.Array:
    """The LM's direct multiple-choice answer with a temperature, ``p ∝ P_LM(letter)^beta``: beta, lapse.

    Shapes: ``fit, prior, letter [item, option]``, ``consensus [item]`` -> ``[item]``.
    """
    _check(fit, prior, letter, consensus)
    beta = param("beta", PRIORS["beta"])
    return _observe(_log_softmax(beta * _log_softmax(letter)), consensus)


MODELS: dict[str, Any] = {"rsa": rsa_model, "literal": literal_model, "prior": prior_model, "letter": letter_model}


def listener_log_probs(name: str, params: dict[str, ArrayLike], fit: ArrayLike, prior: ArrayLike,
                       letter: ArrayLike) -> jax.Array:
    """An annotator's choice log-probabilities ``[item, option]`` under model ``name`` at ``params``
    (lapse included), for posterior predictive accuracy.

    Parameters
    ----------
    name : {"rsa", "literal", "prior", "letter"}
        The model.
    params : dict
        Its parameters (scalars; ``cost`` may be left out when it is fixed).
    fit, prior, letter : array-like
        The LM scores ``[item, option]``.

    Returns
    -------
    jax.Array
    """
    if name == "rsa":
        log_l = rsa_option_listener(fit, prior, params["alpha"], params["w"], params.get("cost", PRIORS["cost"]))
    elif name == "literal":
        log_l = _log_softmax(params["beta"] * literal_option_listener(fit))
    elif name == "prior":
        log_l = _log_softmax(params["w"] * _log_softmax(prior))
    elif name == "letter":
        log_l = _log_softmax(params["beta"] * _log_softmax(letter))
    else:
        raise ValueError(f"model {name!r}; expected one of {sorted(MODELS)}.")
    return choice_log_probs(log_l, params["lapse"])
