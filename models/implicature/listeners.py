r"""A Bayesian pragmatic listener for DRInQ (Arai & Ren 2026): which interpretation of a question?

The speaker who means interpretation ``a`` could ask the question ``Q`` or say ``a`` outright;
the listener (:func:`rsa_option_listener`) weighs that choice against an LM's literal semantics
(``fit [item, option]``) and context prior (``prior [item, option]``). The observation is the
event that at least 4 of 5 annotators agreed (:func:`consensus_log_probs`), and the selection: of the
items presented, the share that reached it (:data:`SELECTION_RATE`, :func:`selection_log_lik`). NumPyro models:
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

__all__ = ["PRIORS", "N_ANNOTATORS", "THRESHOLD", "SELECTION_RATE", "COST_PRIOR", "consensus_log_probs",
           "selection_log_lik", "log_likelihood", "literal_option_listener", "rsa_option_listener",
           "choice_log_probs", "rsa_model", "literal_model", "prior_model", "letter_model", "MODELS"]

#: annotators per item and the agreement an item needed to be kept (the paper's Section 3.7)
N_ANNOTATORS = 5
THRESHOLD = 4
#: the share of presented items that reached 4 of 5 annotators: "only 80.8% of instances achieve our human
#: consensus threshold of 4/5 annotators" (the paper's Limitations); 819 validated items of about 1,014 presented
SELECTION_RATE = 0.808
#: the cost's prior where it is fitted (``rsa`` with ``priors={"cost": COST_PRIOR}``): either sign, a few nats of
#: the speaker's log-odds (the cost stands outside alpha: docs/studies/implicature.md, "Identification")
COST_PRIOR = Prior("Normal", loc=0.0, scale=3.0)

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


def selection_log_lik(log_p: ArrayLike, consensus: ArrayLike, rate: float | None = SELECTION_RATE) -> jax.Array:
    """The selection's log-likelihood, beside ``log P(consensus | reached)``: each modelled item was kept
    (``sum_i log P(E_i)``, ``P(E_i) = sum_j P(E_ij)``), and the items presented but not kept,
    ``(1 - rate) / rate`` per modelled item, each with ``1 - mean_i P(E_i)`` (the presented items taken to
    be like the kept ones, which overstates ``P(E)``). ``rate=None``: 0 (the conditional likelihood alone).

    Shapes: ``log_p [item, option]`` (normalised choice log-probabilities), ``consensus [item]`` -> ``[]``.

    Parameters
    ----------
    log_p : array-like
        An annotator's log choice probabilities per item and option.
    consensus : array-like
        The observed consensus (only its length is used).
    rate : float or None
        The share of presented items that reached the threshold.

    Returns
    -------
    jax.Array
    """
    if rate is None:
        return jnp.zeros(())
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate = {rate!r}; expected a share in (0, 1].")
    lp = jnp.asarray(log_p)
    p = jnp.exp(lp)
    log_e = jax.nn.logsumexp(4.0 * lp + jnp.log(5.0 - 4.0 * p), axis=-1)  # log P(E_i)
    n = jnp.shape(jnp.asarray(consensus))[0]
    p_kept = jnp.clip(jnp.exp(jax.nn.logsumexp(log_e) - jnp.log(n)), 0.0, 1.0 - 1e-7)
    return jnp.sum(log_e) + n * (1.0 - rate) / rate * jnp.log1p(-p_kept)


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
        Cost of saying the interpretation outright, in nats of the speaker's log-odds (outside alpha:
        ``S1(Q | a) = L0^alpha / (L0^alpha + e^-cost)``).

    Returns
    -------
    jax.Array
    """
    l0 = literal_option_listener(fit)
    u_q = alpha * l0
    log_s1 = u_q - jnp.logaddexp(u_q, -jnp.asarray(cost))
    return _log_softmax(w * _log_softmax(prior) + log_s1)


def choice_log_probs(log_l: ArrayLike, lapse: ArrayLike) -> jax.Array:
    """An annotator's choice: ``log[(1 - λ) L + λ / 5]``.

    Shapes: ``log_l [item, option]`` -> ``[item, option]``.
    """
    log_l = jnp.asarray(log_l)
    k = log_l.shape[-1]
    return jnp.logaddexp(jnp.log1p(-lapse) + log_l, jnp.log(lapse) - jnp.log(k))


def _observe(log_l: jax.Array, consensus: ArrayLike | None) -> jax.Array:
    import numpyro

    lapse = param("lapse", PRIORS["lapse"])
    log_p = choice_log_probs(log_l, lapse)
    if consensus is not None:
        numpyro.factor("selection", selection_log_lik(log_p, consensus, SELECTION_RATE))  # (read at each call)
    return choices("consensus", consensus_log_probs(log_p), None if consensus is None else jnp.asarray(consensus),
                   dim="item")


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


def log_likelihood(name: str, params: dict[str, ArrayLike], data: dict[str, ArrayLike],
                   rate: float | None = SELECTION_RATE) -> jax.Array:
    """The models' log-likelihood at ``params``: the consensus given that it was reached, plus the
    selection (:func:`selection_log_lik`); for profiles.

    Parameters
    ----------
    name : str
        A model of :data:`MODELS`.
    params : dict
        Its parameters.
    data : dict
        ``fit, prior, letter [item, 5]``, ``consensus [item]``.
    rate : float or None
        As in :func:`selection_log_lik`.

    Returns
    -------
    jax.Array
    """
    log_p = listener_log_probs(name, params, data["fit"], data["prior"], data["letter"])
    c = jnp.asarray(data["consensus"])
    log_c = consensus_log_probs(log_p)
    return jnp.sum(log_c[jnp.arange(c.shape[0]), c]) + selection_log_lik(log_p, c, rate)
