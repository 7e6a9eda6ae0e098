r"""A Bayesian pragmatic listener for DRInQ (Arai & Ren 2026): which interpretation of a question?

Layering: JAX, NumPyro, :mod:`pragmodels.params`, :mod:`pragmodels.priors`,
:mod:`pragmodels.likelihoods.categorical`, :mod:`pragmodels.logmath`; nothing in ``pragmodels`` imports it.

The task
--------
An item is a question ``Q`` asked in a context ``C`` and five candidate interpretations
``a = A..E`` ("implied comments"); annotators pick the one the speaker means. The LM scores
arrive as arrays (``models/implicature/lm_outputs.py``; each the *mean* log-probability per token of the
interpretation's text, so long options are not penalised for their length):

- ``fit [item, option]``: how well ``a`` fits ``Q`` in ``C``: the LM's score of ``a`` as the
  answer to "Context: C. Someone asks: Q. What they mean is:" (the literal semantics);
- ``prior [item, option]``: how likely ``a`` is as what someone in ``C`` wants to get across,
  without the question: "Context: C. What the speaker wants to get across is:" (the context prior);
- ``letter [item, option]``: the LM's own multiple-choice answer, the five letters' log-probabilities
  under the benchmark prompt (the baseline).

Agents
------
The speaker who means ``a`` could ask ``Q``, or say ``a`` outright. The alternatives are exactly
these: the question asked and, for each interpretation, the plain statement of it (the options
are written as such statements). That is the choice the paper's task turns on: why ask an
indirect question rather than say what you mean? Saying ``a`` outright is unambiguous but costs
``c`` (nats of utility: it is longer, and a bald request, complaint or offer is face-threatening;
Brown & Levinson's reason for indirectness, which the paper cites). Other questions the speaker
could have asked are not in the data, so they are not alternatives; their effect is absorbed in ``c``.

.. math::

    L_0(a \mid Q, C) &= \mathrm{softmax}_a\, \mathrm{fit}[a]
        \qquad L_0(a \mid \text{"a'"}) = [a = a'] \\
    S_1(Q \mid a, C) &= \frac{L_0(a \mid Q, C)^{\alpha}}{L_0(a \mid Q, C)^{\alpha} + e^{-\alpha c}} \\
    P(a \mid C) &= \mathrm{softmax}_a\, \mathrm{prior}[a] \\
    L_1(a \mid Q, C) &\propto P(a \mid C)^{w}\; S_1(Q \mid a, C)

``S1`` is the usual soft-max over the alternatives: utility ``log L0(a | Q)`` for the question,
``log 1 - c`` for saying ``a`` (the statements of the other interpretations have utility
``-inf`` for a speaker who means ``a``). The listener weighs the context prior with ``w``
(``w = 0``: no prior; ``w = 1``: the LM's prior as it is).

Responses and the likelihood
----------------------------
An annotator picks ``a`` with ``p(a) = (1 - λ) L_1(a | Q, C) + λ / 5`` (``λ``: lapse). The data
hold one consensus letter per item and no votes: an item was kept because at least 4 of its 5
annotators chose the same option (the paper's Section 3.7). So the observation is that event.
With 5 annotators choosing independently from ``p``, option ``j`` reaches consensus with
probability ``P(E_j) = 5 p_j^4 (1 - p_j) + p_j^5 = p_j^4 (5 - 4 p_j)``. Two options cannot both
reach it, and an item is in the data only if one does, so

.. math:: P(\text{consensus} = j \mid \text{validated}) = P(E_j) / \textstyle\sum_k P(E_k).

This is a categorical over the consensus letter (one observation per item, so PSIS-LOO is over
items), with the 4/5 threshold built in rather than the consensus treated as one annotator's
choice. What it cannot identify: how spread the annotators' choices were within an item (no
votes), and so the lapse apart from a flatter listener on the items that reached consensus
anyway; an item that did not reach consensus is not in the data at all, and the model says
nothing about how many were dropped (the paper reports 819 items kept, not how many were
presented). Nor does it force the listener to be as sharp as the annotators were: it rewards
putting mass on the option that won, and with uninformative scores a flat listener fits best
(the study reports the share of items its annotators would bring to consensus).

Models (NumPyro; all take the same data and read what they need)
----------------------------------------------------------------
``model(fit, prior, letter, consensus=None)``, ``consensus [item]`` in 0..4:

- :func:`rsa_model`: ``L1`` above; parameters ``alpha``, ``w``, ``lapse`` (``cost`` fixed, see below);
- :func:`literal_model`: ``p ∝ L_0(a | Q, C)^β``; ``beta``, ``lapse``;
- :func:`prior_model`: ``p ∝ P(a | C)^w``; ``w``, ``lapse`` (the context alone);
- :func:`letter_model`: the LM's direct choice, ``p ∝ P_LM(letter)^β``; ``beta``, ``lapse`` (the baseline).

Identification: the cost ``c`` of saying it outright is **fixed at 0** by default (saying an
interpretation costs no more than asking; ``S1(Q | a) = L0^α / (L0^α + 1)``), and ``alpha``,
``w`` and the lapse are fitted. ``S1(Q | a)`` is a logistic function of ``log L0(a | Q)`` with
slope ``alpha`` and threshold ``-c``; where ``c + log L0 < 0`` for every option, it is
``≈ L0^α e^{αc}`` and ``c`` cancels in ``L1``. With the LM scores spread as they are
(SmolLM2's ``log L0``: 90% between -3.1 and -0.8, all between -4.7 and -0.3), the consensus letters of 231 items identify ``c`` only
when it is large: simulated at ``c = 1``, its 94% interval was -3.8 to 1.0, with the tail ESS
of ``alpha`` at 30. Free it with ``priors={"cost": Prior("Normal", loc=0, scale=2)}`` to see
that for yourself. With ``c`` fixed, ``alpha``, ``w`` and the lapse are recovered from data
simulated at the real data's size (tests/models/implicature/test_listeners.py, slow).
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
    # fixed by default (a float): see "Identification" in the module docstring
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
    """``log L1(a | Q, C)`` (see the module docstring).

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
