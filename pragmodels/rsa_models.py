"""Ready-made NumPyro models for finite RSA games (listener or speaker data, flat or by item).

Layering: imports :mod:`pragmodels.agents`, :mod:`pragmodels.likelihoods.categorical`,
:mod:`pragmodels.params` and :mod:`pragmodels.priors`.

Each model is a plain function whose parameters are declared once with
:func:`pragmodels.param`; the factories (:func:`listener_model`, :func:`speaker_model`,
:func:`hierarchical_listener_model`) only bind options (``depth``, ``prior_at``) and, optionally,
prior overrides, and return a picklable ``functools.partial``. What a fit samples follows from the
model and its data, not from flags:

- costs are fitted when ``cost_design [utterance, cost_term]`` is passed (``cost = cost_design @
  cost_weight``). Only cost *differences* are identified by choice data, so leave out a constant
  column (e.g. code the cheapest utterance as 0);
- a parameter is fixed by overriding its prior with a number: ``priors={"lapse": 0.0}`` fits no
  lapse (``fit(..., priors=...)`` does the same at fit time);
- ``alpha`` is a rationality >= 0: an override of its prior must have its support in ``[0, inf)``
  (``LogNormal``, ``HalfNormal``, ``Gamma``, ... or a number >= 0); a ``Normal`` prior is a
  ``ValueError`` before anything is sampled.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from pragmodels import agents
from pragmodels.likelihoods.categorical import listener_choices, speaker_choices
from pragmodels.likelihoods.samples import sampled_semantics
from pragmodels.params import deterministic, group_effect, param, prior_in_force, with_priors
from pragmodels.priors import Prior
from pragmodels.validation import check_index, check_int, check_values

__all__ = [
    "DEFAULT_PRIORS",
    "rsa_listener",
    "rsa_speaker",
    "rsa_listener_by_item",
    "rsa_listener_sampled",
    "listener_model",
    "sampled_listener_model",
    "speaker_model",
    "hierarchical_listener_model",
]

#: the default priors of the models below (each also stands in the model's own ``param`` call)
DEFAULT_PRIORS: dict[str, Prior] = {
    "alpha": Prior("LogNormal", loc=0.5, scale=1.0),
    "cost_weight": Prior("HalfNormal", scale=2.0),
    "lapse": Prior("Beta", concentration1=1.0, concentration0=19.0),
    "alpha_mu": Prior("Normal", loc=0.5, scale=1.0),
    "alpha_sigma": Prior("HalfNormal", scale=0.5),
}


def _check_semantics(fn: str, log_semantics: ArrayLike, axes: str = "[utterance, state]", ndims: tuple[int, ...] = (2,)
                     ) -> None:
    """``log_semantics`` holds numbers, no NaN or +inf, and has ``axes`` (each of size >= 1): checked
    first, so that a wrong shape is named as such and not as an out-of-range utterance or state."""
    check_values(fn, "log_semantics", log_semantics, neg_inf=True)
    shape = tuple(jnp.shape(log_semantics))
    if len(shape) not in ndims or 0 in shape:
        raise ValueError(f"{fn}: log_semantics must have shape {axes}, at least one of each; got shape {shape}.")


def _check_trials(fn: str, **per_trial: ArrayLike | None) -> None:
    """The per-trial arrays (indices, choices) are one-dimensional ``[trial]`` and of one length,
    each named if not (rather than as the likelihood's ``rows``)."""
    given = {k: tuple(jnp.shape(v)) for k, v in per_trial.items() if v is not None}
    for k, shape in given.items():
        if len(shape) != 1:
            raise ValueError(f"{fn}: {k} must have shape [trial] (one entry per trial); got shape {shape}.")
    if len({shape for shape in given.values()}) > 1:
        shapes = ", ".join(f"{k} {shape}" for k, shape in given.items())
        raise ValueError(f"{fn}: the per-trial arrays must have one length (one entry per trial); got {shapes}.")


def _alpha(fn: str) -> jax.Array | float:
    """Declare ``alpha``, a rationality >= 0: its prior in force (or fixed value) must lie in
    ``[0, inf)``, else a ``ValueError`` naming it (checked on the prior, not on a draw, so a fit
    never samples a negative alpha that the agents could not check inside ``jit``)."""
    spec = prior_in_force("alpha", DEFAULT_PRIORS["alpha"])
    if isinstance(spec, float):
        low: Any = spec
    else:
        support = spec.distribution().support
        while hasattr(support, "base_constraint"):  # independent(...) of a batched prior
            support = support.base_constraint
        low = getattr(support, "lower_bound", None)
    if low is None or bool(np.any(np.asarray(low) < 0)):
        raise ValueError(f"{fn}: alpha's prior is {spec}, which allows alpha < 0; alpha is a rationality >= 0: "
                         "give it a prior on [0, inf) (e.g. LogNormal, HalfNormal, Gamma) or a number >= 0.")
    return param("alpha", DEFAULT_PRIORS["alpha"])


def _cost(fn: str, cost_design: ArrayLike | None, n_utt: int) -> jax.Array | None:
    """``cost [utterance] = cost_design @ cost_weight`` (recorded as a deterministic), or None."""
    if cost_design is None:
        return None
    check_values(fn, "cost_design", cost_design)
    design = jnp.asarray(cost_design)
    if design.ndim != 2 or design.shape[0] != n_utt or design.shape[1] == 0:
        raise ValueError(f"{fn}: cost_design must have shape [utterance, cost_term] = ({n_utt}, k >= 1) to match "
                         f"log_semantics; got shape {tuple(design.shape)}.")
    w = param("cost_weight", DEFAULT_PRIORS["cost_weight"], dims={"cost_term": design.shape[1]})
    return deterministic("cost", design @ jnp.asarray(w), dims={"utterance": design.shape[0]})


def rsa_listener(log_semantics: ArrayLike, utterance: ArrayLike, choice: ArrayLike | None = None,
                 cost_design: ArrayLike | None = None, log_prior: ArrayLike | None = None, *,
                 depth: int = 1, prior_at: agents.PriorAt = "all",
                 cost_scaling: agents.CostScaling = "inside") -> jax.Array:
    """Listener choices over states given an utterance: ``alpha``, costs (with ``cost_design``)
    and ``lapse``. ``cost_scaling``: ``"inside"`` (``exp(alpha (log L - cost))``) or ``"outside"``
    (``exp(alpha log L - cost)``), as in :mod:`pragmodels.agents`.

    Shapes: ``log_semantics [utterance, state]``, ``utterance [trial]`` (int), ``choice [trial]``
    (state index), ``cost_design [utterance, cost_term]``, ``log_prior [state]`` -> the ``choice``
    site's value ``[trial]``.
    """
    _check_semantics("rsa_listener", log_semantics)
    _check_trials("rsa_listener", utterance=utterance, choice=choice)
    check_index("rsa_listener", "utterance", utterance, int(jnp.shape(log_semantics)[0]))
    alpha = _alpha("rsa_listener")
    cost = _cost("rsa_listener", cost_design, int(jnp.shape(log_semantics)[0]))
    lapse = param("lapse", DEFAULT_PRIORS["lapse"])
    log_l = agents.pragmatic_listener(log_semantics, alpha, cost, log_prior, depth, prior_at=prior_at,
                                      cost_scaling=cost_scaling)
    return listener_choices("choice", log_l, choice, lapse=lapse, rows=utterance)


def rsa_listener_sampled(semantic_counts: ArrayLike, utterance: ArrayLike, choice: ArrayLike | None = None,
                         cost_design: ArrayLike | None = None, log_prior: ArrayLike | None = None, *,
                         depth: int = 1, prior_at: agents.PriorAt = "all", cost_scaling: agents.CostScaling = "inside",
                         concentration: float = 1.0) -> jax.Array:
    """:func:`rsa_listener` on a literal listener known only through an LM's samples: ``lm_listener
    [utterance, state] ~ Dirichlet(concentration + semantic_counts)`` row by row
    (:func:`pragmodels.likelihoods.samples.sampled_semantics`), sampled jointly with ``alpha``.

    Shapes: ``semantic_counts [utterance, state]`` (the LM's parsed answers per prompt), ``utterance
    [trial]`` (int), ``choice [trial]`` (state index), ``cost_design [utterance, cost_term]``,
    ``log_prior [state]`` -> the ``choice`` site's value ``[trial]``.
    """
    log_semantics = sampled_semantics("lm_listener", semantic_counts, concentration=concentration)
    return rsa_listener(log_semantics, utterance, choice, cost_design, log_prior, depth=depth, prior_at=prior_at,
                        cost_scaling=cost_scaling)


def rsa_speaker(log_semantics: ArrayLike, state: ArrayLike, choice: ArrayLike | None = None,
                cost_design: ArrayLike | None = None, log_prior: ArrayLike | None = None, *,
                depth: int = 1, prior_at: agents.PriorAt = "all",
                cost_scaling: agents.CostScaling = "inside") -> jax.Array:
    """Speaker choices over utterances given a state: ``alpha``, costs and ``lapse``.

    Shapes: ``log_semantics [utterance, state]``, ``state [trial]`` (int), ``choice [trial]``
    (utterance index), ``cost_design [utterance, cost_term]``, ``log_prior [state]`` -> the
    ``choice`` site's value ``[trial]``.
    """
    _check_semantics("rsa_speaker", log_semantics)
    _check_trials("rsa_speaker", state=state, choice=choice)
    check_index("rsa_speaker", "state", state, int(jnp.shape(log_semantics)[-1]))
    alpha = _alpha("rsa_speaker")
    cost = _cost("rsa_speaker", cost_design, int(jnp.shape(log_semantics)[0]))
    lapse = param("lapse", DEFAULT_PRIORS["lapse"])
    log_s = agents.pragmatic_speaker(log_semantics, alpha, cost, log_prior, depth, prior_at=prior_at,
                                     cost_scaling=cost_scaling)
    return speaker_choices("choice", log_s, choice, lapse=lapse, rows=state)


def rsa_listener_by_item(log_semantics: ArrayLike, item: ArrayLike, utterance: ArrayLike,
                         choice: ArrayLike | None = None, log_prior: ArrayLike | None = None,
                         n_items: int | None = None, *, depth: int = 1,
                         prior_at: agents.PriorAt = "all") -> jax.Array:
    """Listener choices with a rationality per item (non-centred log-normal hierarchy).

    ``log alpha[item] = alpha_mu + alpha_sigma * alpha_z[item]``, ``alpha_z ~ Normal(0, 1)``
    (:func:`pragmodels.group_effect`).

    Shapes: ``log_semantics [utterance, state]`` shared (then pass ``n_items``) or ``[item,
    utterance, state]``; ``item [trial]``, ``utterance [trial]``, ``choice [trial]`` (state
    index), ``log_prior [state]`` -> the ``choice`` site's value ``[trial]``.
    """
    fn = "rsa_listener_by_item"
    _check_semantics(fn, log_semantics, "[utterance, state] or [item, utterance, state]", (2, 3))
    ndim = jnp.ndim(log_semantics)
    if ndim == 2 and n_items is None:
        raise ValueError(f"{fn}: pass n_items (an int) when log_semantics is shared across "
                         "items (shape [utterance, state]).")
    if n_items is not None:
        check_int(fn, "n_items", n_items, 1)
    n = int(n_items) if n_items is not None else int(jnp.shape(log_semantics)[0])
    if ndim == 3 and n_items is not None and int(n_items) != jnp.shape(log_semantics)[0]:
        raise ValueError(f"{fn}: n_items = {n_items} but log_semantics has {jnp.shape(log_semantics)[0]} items.")
    _check_trials(fn, item=item, utterance=utterance, choice=choice)
    check_index("rsa_listener_by_item", "item", item, n)
    check_index("rsa_listener_by_item", "utterance", utterance, int(jnp.shape(log_semantics)[-2]))
    alpha = group_effect("alpha", dim="item", size=n, loc=DEFAULT_PRIORS["alpha_mu"],
                         scale=DEFAULT_PRIORS["alpha_sigma"], link="exp")
    lapse = param("lapse", DEFAULT_PRIORS["lapse"])
    # one listener per item, items on the last axis: [utterance, state, item] (the fast layout)
    sem = log_semantics if ndim == 2 else jnp.moveaxis(jnp.asarray(log_semantics), 0, -1)
    log_l = agents.pragmatic_listener_batch(sem, alpha, None, log_prior, depth, prior_at=prior_at)
    return listener_choices("choice", log_l, choice, lapse=lapse, rows=(utterance, item), axis=1)


def _factory(fn: Callable[..., Any], kind: str, priors: Mapping[str, Any] | None,
             **options: Any) -> Callable[..., Any]:
    model = functools.partial(fn, **options)
    label = f"{kind}(" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")"
    setattr(model, "name", label)  # noqa: B010 - a partial takes attributes; typeshed's partial declares none
    if priors:
        named = with_priors(model, priors)
        named.name = named.__name__ = label
        return named
    return model


def listener_model(*, depth: int = 1, prior_at: agents.PriorAt = "all",
                   cost_scaling: agents.CostScaling = "inside",
                   priors: Mapping[str, Any] | None = None) -> Callable[..., Any]:
    """:func:`rsa_listener` with its options bound, and optional prior overrides.

    Parameters
    ----------
    depth : int
        Recursion depth of the agents (as :mod:`pragmodels.agents`).
    prior_at : {"all", "top"}
        Where the state prior enters the recursion (as :mod:`pragmodels.agents`).
    cost_scaling : {"inside", "outside"}
        ``exp(alpha (log L - cost))`` or ``exp(alpha log L - cost)``.
    priors : mapping, optional
        Prior overrides ``{name: Prior | spec dict | float}`` bound with
        :class:`~pragmodels.with_priors` (a number fixes the parameter).

    Returns
    -------
    callable
        A picklable model (a ``functools.partial``, or a :class:`~pragmodels.with_priors` around
        one) taking the data of :func:`rsa_listener` as keyword arguments; its ``name`` records the bound
        options, e.g. ``"rsa_listener(depth=1, prior_at=all, cost_scaling=inside)"``.
    """
    return _factory(rsa_listener, "rsa_listener", priors, depth=depth, prior_at=prior_at, cost_scaling=cost_scaling)


def sampled_listener_model(*, depth: int = 1, prior_at: agents.PriorAt = "all",
                           cost_scaling: agents.CostScaling = "inside", concentration: float = 1.0,
                           priors: Mapping[str, Any] | None = None) -> Callable[..., Any]:
    """:func:`rsa_listener_sampled` with its options bound: a listener whose literal semantics are an LM's
    sample counts, with their uncertainty (``benchmarks/sampled_semantics.py``: alpha's 90% intervals
    cover 0.89-0.91 for 8-128 samples per prompt, against 0.35-0.69 with the frequencies taken as exact).

    Parameters
    ----------
    depth, prior_at, cost_scaling
        As for :func:`listener_model`.
    concentration : float
        The Dirichlet prior's concentration per cell (1: uniform over the simplex).
    priors : mapping, optional
        Prior overrides, as for :func:`listener_model`.

    Returns
    -------
    callable
        A picklable model taking ``semantic_counts``, ``utterance``, ``choice`` (and optionally
        ``cost_design``, ``log_prior``) as keyword arguments.
    """
    return _factory(rsa_listener_sampled, "rsa_listener_sampled", priors, depth=depth, prior_at=prior_at,
                    cost_scaling=cost_scaling, concentration=concentration)


def speaker_model(*, depth: int = 1, prior_at: agents.PriorAt = "all",
                  cost_scaling: agents.CostScaling = "inside",
                  priors: Mapping[str, Any] | None = None) -> Callable[..., Any]:
    """:func:`rsa_speaker` with its options bound, and optional prior overrides.

    Parameters
    ----------
    depth : int
        Recursion depth of the agents (as :mod:`pragmodels.agents`).
    prior_at : {"all", "top"}
        Where the state prior enters the recursion (as :mod:`pragmodels.agents`).
    cost_scaling : {"inside", "outside"}
        ``exp(alpha (log L - cost))`` or ``exp(alpha log L - cost)``.
    priors : mapping, optional
        Prior overrides ``{name: Prior | spec dict | float}`` bound with
        :class:`~pragmodels.with_priors` (a number fixes the parameter).

    Returns
    -------
    callable
        A picklable model (a ``functools.partial``, or a :class:`~pragmodels.with_priors` around
        one) taking the data of :func:`rsa_speaker` as keyword arguments; its ``name`` records the bound
        options, e.g. ``"rsa_speaker(depth=1, prior_at=all, cost_scaling=inside)"``.
    """
    return _factory(rsa_speaker, "rsa_speaker", priors, depth=depth, prior_at=prior_at, cost_scaling=cost_scaling)


def hierarchical_listener_model(*, depth: int = 1, prior_at: agents.PriorAt = "all",
                                priors: Mapping[str, Any] | None = None) -> Callable[..., Any]:
    """:func:`rsa_listener_by_item` with ``depth`` and ``prior_at`` bound, and optional overrides.

    Parameters
    ----------
    depth : int
        Recursion depth of the agents (as :mod:`pragmodels.agents`).
    prior_at : {"all", "top"}
        Where the state prior enters the recursion (as :mod:`pragmodels.agents`).
    priors : mapping, optional
        Prior overrides ``{name: Prior | spec dict | float}`` bound with
        :class:`~pragmodels.with_priors` (a number fixes the parameter).

    Returns
    -------
    callable
        A picklable model (a ``functools.partial``, or a :class:`~pragmodels.with_priors` around
        one) taking the data of :func:`rsa_listener_by_item` as keyword arguments; its ``name`` records the bound
        options, e.g. ``"rsa_listener_by_item(depth=1, prior_at=all)"``.
    """
    return _factory(rsa_listener_by_item, "rsa_listener_by_item", priors, depth=depth, prior_at=prior_at)
