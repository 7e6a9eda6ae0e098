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
from jax import lax
from jax.custom_derivatives import SymbolicZero
from jax.typing import ArrayLike
from numpyro.primitives import Messenger

from pragmodels import agents
from pragmodels.likelihoods.categorical import TableCategorical, listener_choices, speaker_choices
from pragmodels.likelihoods.samples import sampled_semantics
from pragmodels.logmath import log_normalize
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
    if depth == 1 and isinstance(lapse, (int, float)) and lapse == 0:
        # the sampler's potential reads the choices through sufficient statistics (same value)
        with _item_listener_stats("choice", sem, alpha, log_prior, prior_at):
            return listener_choices("choice", log_l, choice, lapse=lapse, rows=(utterance, item), axis=1)
    return listener_choices("choice", log_l, choice, lapse=lapse, rows=(utterance, item), axis=1)


def _speaker_gaps(log_semantics: ArrayLike, log_prior: ArrayLike | None, prior_at: agents.PriorAt
                  ) -> jax.Array:
    """``d [utterance, state(, item)]``: the literal listener's log-probability minus its largest over
    utterances, per state (``-inf`` where false or where no utterance is true); ``alpha * d`` is the
    depth-1 speaker's log utility shifted so that its largest per state is 0 (alpha >= 0)."""
    sem = jnp.asarray(log_semantics)
    if log_prior is not None and prior_at == "all":
        sem = sem + jnp.asarray(log_prior).reshape((1, -1) + (1,) * (sem.ndim - 2))
    l0 = log_normalize(sem, axis=1)
    top = jnp.max(l0, axis=0, keepdims=True)
    ok = (l0 > -jnp.inf) & (top > -jnp.inf)
    return jnp.where(ok, l0 - jnp.where(ok, top, 0.0), -jnp.inf)


def item_listener_counts_log_lik(counts: jax.Array, log_semantics: ArrayLike, alpha: jax.Array,
                                 log_prior: ArrayLike | None = None, prior_at: agents.PriorAt = "all") -> jax.Array:
    """``Σ counts · log L1`` of depth-1 listeners with a rationality per item, from sufficient statistics.

    Equal (to float rounding) to ``Σ counts · pragmatic_listener_batch(log_semantics, alpha, None,
    log_prior, 1)``, but computed as ``Σ_i [alpha_i A_i - Σ_s m_si log z_si - Σ_u n_ui log W_ui] + const``
    with the statistics ``A = Σ_us counts · d``, ``m = Σ_u counts``, ``n = Σ_s counts`` of the count
    table (constants of the data: XLA hoists them out of the sampler's loops) and the speaker's and
    listener's normalisers ``z``, ``W``. The shifts that keep the exponentials in range are linear in
    alpha (``alpha >= 0``): no max-reductions, and the log listener table ``[utterance, state, item]``
    is never formed nor differentiated. That is two exponential passes over ``[utterance, state,
    item]`` and two sums, against the agents' eight passes (four of them reductions) and their reverse.

    Shapes: ``counts [utterance, state, item]``, ``log_semantics [utterance, state]`` or ``[utterance,
    state, item]``, ``alpha [item]`` (>= 0), ``log_prior [state]`` -> ``[]``.
    """
    d = _speaker_gaps(log_semantics, log_prior, prior_at)
    if d.ndim == 2:
        d = d[..., None]
    lp = jnp.zeros(d.shape[1], d.dtype) if log_prior is None else jnp.asarray(log_prior, d.dtype)
    lp = lp.reshape((1, -1) + (1,) * (d.ndim - 2))
    ok = (d > -jnp.inf) & (lp > -jnp.inf)
    ds = jnp.where(ok, d, 0.0)
    # listener shift per utterance: alpha * dmax_u + lp_ref_u, at the largest gap among usable states
    dmax = jnp.max(jnp.where(ok, d, -jnp.inf), axis=1, keepdims=True)
    live = dmax > -jnp.inf
    dmax = jnp.where(live, dmax, 0.0)
    lp_ref = jnp.max(jnp.where(ok & (d >= dmax), lp, -jnp.inf), axis=1, keepdims=True)
    lp_ref = jnp.where(live, lp_ref, 0.0)
    seen = counts > 0
    m = jnp.sum(counts, axis=0)  # [state, item]
    n = jnp.sum(counts, axis=1, keepdims=True)  # [utterance, 1, item]
    gap = jnp.sum(jnp.where(seen, counts * jnp.where(seen, d, 0.0), 0.0), axis=(0, 1))  # Σ counts · d
    const = (jnp.sum(jnp.where(seen, counts * jnp.where(seen, lp, 0.0), 0.0), axis=(0, 1))
             - jnp.sum(jnp.where(n > 0, n * lp_ref, 0.0), axis=(0, 1)))
    dd = jnp.where(ok, ds - dmax, 0.0)
    lpd = jnp.where(ok, lp - lp_ref, 0.0)
    data = (ok, ds, dd, lpd, dmax, gap, const, m, n)
    return jnp.sum(_items_log_lik(jnp.asarray(alpha, d.dtype), data))


def _items_value_and_slope(a: jax.Array, data: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
    """Per-item ``Σ counts · log L1`` ``[item]`` and its derivative in ``alpha`` (each item's depends on
    its own alpha only), in one forward pass: the exponentials' shifts make ``z >= 1`` and ``w > 0``."""
    ok, ds, dd, lpd, dmax, gap, const, m, n = data
    e = jnp.where(ok, jnp.exp(a * ds), 0.0)  # exp(alpha d) <= 1, = 1 at each state's best utterance
    z = jnp.sum(e, axis=0, keepdims=True)  # [1, state, item], >= 1 where a state has a true utterance
    z_ok = z > 0
    z1 = jnp.where(z_ok, z, 1.0)
    log_z = jnp.where(z_ok, jnp.log(z1), 0.0)
    dlog_z = jnp.sum(e * ds, axis=0, keepdims=True) / z1  # d log z / d alpha: the speaker's mean gap
    t = jnp.where(ok, jnp.exp(a * dd - log_z + lpd), 0.0)
    w = jnp.sum(t, axis=1, keepdims=True)  # [utterance, 1, item]
    w_ok = w > 0
    w1 = jnp.where(w_ok, w, 1.0)
    log_w = jnp.where(w_ok, jnp.log(w1), 0.0)
    dlog_w = jnp.sum(t * (dd - dlog_z), axis=1, keepdims=True) / w1
    has_m, has_n = m > 0, n > 0
    value = (a * gap + const - jnp.sum(jnp.where(has_m, m * log_z[0], 0.0), axis=0)
             - jnp.sum(jnp.where(has_n, n * (a * dmax + log_w), 0.0), axis=(0, 1)))
    slope = (gap - jnp.sum(jnp.where(has_m, m * dlog_z[0], 0.0), axis=0)
             - jnp.sum(jnp.where(has_n, n * (dmax + dlog_w), 0.0), axis=(0, 1)))
    return value, slope


@jax.custom_jvp
def _items_log_lik(a: jax.Array, data: tuple[jax.Array, ...]) -> jax.Array:
    """``[item]`` log-likelihoods; differentiated in alpha by the closed-form slope (forward mode:
    no reverse pass over ``[utterance, state, item]``), in the data by ordinary AD."""
    return _by_item_blocks(a, data)[0]


#: items per block of :func:`_by_item_blocks`, and up to how many items the table is computed whole.
#: What counts is a block's arrays (chains x 5 x 21 x items float32) against a core's L2 (1 MiB
#: here), and the chains that the sampler vmaps are not visible here. Per leapfrog at 1,600-10,000
#: items (benchmarks/results/hier_blocks.md), blocks of 64 took 0.62-0.78x the time of blocks of 512
#: for 1 chain, 0.81-0.85x for 2 and 0.81-0.84x for 4 (vectorized); blocks of 128 were faster for
#: 1-2 chains (0.58-0.73x) but 1.5x slower for 4. Up to 256 items the whole table is as fast (200
#: items in blocks of 64 took 1.8x as long for 1 chain).
ITEM_BLOCK = 64
WHOLE_TABLE_ITEMS = 256


def _by_item_blocks(a: jax.Array, data: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
    """:func:`_items_value_and_slope` over equal blocks of at most ``ITEM_BLOCK`` items (``lax.map``):
    each block's exponentials and sums run in cache rather than as whole-table passes through memory."""
    n = a.shape[-1]
    if n <= WHOLE_TABLE_ITEMS or jax.default_backend() != "cpu":  # a GPU wants the whole table in one kernel
        return _items_value_and_slope(a, data)
    nb = -(-n // ITEM_BLOCK)
    size = -(-n // nb)  # blocks of equal size <= ITEM_BLOCK: at most nb - 1 padded items
    pad = nb * size - n

    def blocks(x: jax.Array) -> jax.Array:  # [..., item] -> [block, ..., ITEM_BLOCK] (padded items: zeros)
        if x.shape[-1] == 1:  # shared across items (the semantics' constants)
            return jnp.broadcast_to(x, (nb,) + x.shape)
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, pad)])
        return jnp.moveaxis(x.reshape(x.shape[:-1] + (nb, size)), -2, 0)

    value, slope = lax.map(lambda b: _items_value_and_slope(b[0], b[1]), (blocks(a), tuple(blocks(x) for x in data)))
    return value.reshape(-1)[:n], slope.reshape(-1)[:n]


def _items_log_lik_jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[jax.Array, jax.Array]:
    a, data = primals
    t_a, t_data = tangents
    if any(not isinstance(t, SymbolicZero) for t in jax.tree.leaves(t_data, is_leaf=lambda x: isinstance(x, SymbolicZero))):
        # the semantics (or counts) are perturbed too: plain AD through the same closed form
        t_a = jnp.zeros_like(a) if isinstance(t_a, SymbolicZero) else t_a
        t_data = jax.tree.map(lambda t, x: jnp.zeros_like(x) if isinstance(t, SymbolicZero) else t, t_data, data,
                              is_leaf=lambda x: isinstance(x, SymbolicZero))
        t_data = tuple(jnp.zeros(jnp.shape(x), jax.dtypes.float0) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.bool_)
                       else t for t, x in zip(t_data, data, strict=True))
        return jax.jvp(lambda a, d: _items_value_and_slope(a, d)[0], (a, data), (t_a, t_data))
    value, slope = _by_item_blocks(a, data)
    if isinstance(t_a, SymbolicZero):
        return value, jnp.zeros_like(value)
    return value, slope * t_a


_items_log_lik.defjvp(_items_log_lik_jvp, symbolic_zeros=True)


class ItemListenerTable(TableCategorical):
    """The per-item listener's choice site: a :class:`TableCategorical` (per-trial values, draws)
    whose summed log-likelihood from a count table is :func:`item_listener_counts_log_lik`."""

    pytree_data_fields: tuple[str, ...] = ("log_semantics", "alpha", "log_prior")
    pytree_aux_fields: tuple[str, ...] = ("prior_at",)

    def __init__(self, base: TableCategorical, log_semantics: ArrayLike, alpha: ArrayLike,
                 log_prior: ArrayLike | None, prior_at: agents.PriorAt):
        self.log_semantics, self.alpha = jnp.asarray(log_semantics), jnp.asarray(alpha)
        self.log_prior = None if log_prior is None else jnp.asarray(log_prior)
        self.prior_at = prior_at
        super().__init__(base.table, base.rows, base.axis, validate_args=False)

    def counts_log_prob(self, counts: jax.Array) -> jax.Array:
        return item_listener_counts_log_lik(counts, self.log_semantics, self.alpha, self.log_prior, self.prior_at)


class _item_listener_stats(Messenger):  # noqa: N801 - a NumPyro handler
    """Turn the per-item listener's ``name`` site into an :class:`ItemListenerTable`."""

    def __init__(self, name: str, log_semantics: ArrayLike, alpha: ArrayLike, log_prior: ArrayLike | None,
                 prior_at: agents.PriorAt):
        self.name, self.args = name, (log_semantics, alpha, log_prior, prior_at)
        super().__init__()

    def process_message(self, msg: dict[str, Any]) -> None:
        if msg["type"] == "sample" and msg["name"] == self.name and type(msg["fn"]) is TableCategorical:
            msg["fn"] = ItemListenerTable(msg["fn"], *self.args)


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
