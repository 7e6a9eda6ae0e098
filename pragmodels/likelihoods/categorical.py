"""Observation models: the observed ``numpyro.sample`` sites of pragmodels models.

Layering: imports ``jax``, ``numpyro`` and :mod:`pragmodels.logmath`; never ``arviz``. Latent
parameters are declared in :mod:`pragmodels.params`. Each observation model opens a
``numpyro.plate`` named after its dim, so that ArviZ names the observation axis after it, and mixes a ``lapse`` share of uniform responses
into the choice distribution (``lapse=0`` switches it off).

Observed values are validated eagerly when they are concrete NumPy/JAX arrays (that is, when
the model is traced once before sampling by :func:`pragmodels.fit`): an out-of-range value
raises a ``ValueError`` that names the site, the index and the value. Every site checks its
table of log-probabilities the same way, with :func:`check_table` (and ordinal cutpoints with
:func:`check_cutpoints`), and names an observation its model gives probability 0 without a lapse.

Predictive draws un-observe these sites (and any other observed site) with the
:class:`pragmodels.inference.predictive.unobserve` handler; nothing here needs to know about it.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike
from numpyro.distributions import constraints
from numpyro.primitives import Messenger

from pragmodels.logmath import check_weight, log_mix_uniform, log_normalize
from pragmodels.validation import (
    bad_index,
    bad_integer,
    check_increasing,
    check_normalised,
    check_numeric,
    check_values,
    concrete as _concrete,
)

__all__ = [
    "choices",
    "TableCategorical",
    "TableCounts",
    "tabulate_potential",
    "listener_choices",
    "speaker_choices",
    "choice_counts",
    "binned_responses",
    "likert_ratings",
    "node_log_probs",
]

#: the ``rows`` of a choice table: one integer index array ``[dim]``, or a tuple of them (one per row axis)
Rows = ArrayLike | tuple[ArrayLike, ...]

#: marks an observation site, so that it is recognised as one (and predicted) even without data
_OBSERVATION = {"pragmodels": {"observation": True}}


def _check_index(name: str, obs: ArrayLike | None, n_options: int, what: str) -> None:
    arr = _concrete(obs)
    if arr is None:
        return
    bad = bad_index(arr, n_options)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        raise ValueError(
            f"observation site {name!r}: {name}{list(i)} = {arr[i].item()!r}; expected an integer "
            f"{what} index in 0..{n_options - 1}."
        )


class NormalizedCategorical(dist.CategoricalLogits):
    """Categorical whose ``logits`` are already normalised log-probabilities.

    ``log_prob`` is a gather, skipping the ``logsumexp`` renormalisation that dominates the
    gradient of large choice likelihoods with zero-probability options (-inf logits).
    :func:`choices` checks normalisation eagerly before sampling.
    """

    def log_prob(self, value: ArrayLike) -> jax.Array:
        idx = jnp.expand_dims(jnp.asarray(value, jnp.int32), -1)
        logits = jnp.broadcast_to(self.logits, jnp.shape(idx)[:-1] + self.logits.shape[-1:])
        return jnp.take_along_axis(logits, idx, axis=-1)[..., 0]


def check_table(fn: str, log_probs: ArrayLike, *, what: str, axis: int = -1, name: str = "log_probs",
                lapse: ArrayLike | None = None) -> None:
    """The one check of an observation site's table of log-probabilities (every likelihood of
    :mod:`pragmodels.likelihoods` calls it): no NaN or ``+inf``, and each slice along ``axis``
    normalised (or all ``-inf``: an undefined row); and its ``lapse``, a weight in ``[0, 1]`` that
    is a scalar or has the table's shape without ``axis`` (one per row; never broadcast). Values
    are checked where concrete (the eager trace of :func:`pragmodels.fit`); inside ``jit`` they are
    tracers and pass. Shapes are checked always.

    Shapes: ``log_probs [..., option, ...]`` with the ``what`` axis at ``axis``; ``lapse []`` or
    ``log_probs``' shape without ``axis``.

    Raises
    ------
    ValueError
        Naming ``fn`` (e.g. ``"site 'choice'"``), ``name``, the first offending entry or slice and
        its value or sum.
    """
    check_values(fn, name, log_probs, neg_inf=True)
    check_normalised(fn, name, log_probs, what, axis)
    if lapse is not None:
        check_weight(lapse, fn, "lapse")
        shape, ax = tuple(jnp.shape(log_probs)), axis % jnp.ndim(log_probs)
        rows = shape[:ax] + shape[ax + 1:]
        if jnp.shape(lapse) not in ((), rows):
            raise ValueError(f"{fn}: lapse must be a scalar or have shape {rows} ({name}'s shape {shape} without "
                             f"its {what} axis: one per row); got shape {tuple(jnp.shape(lapse))}.")


def check_cutpoints(fn: str, cutpoints: ArrayLike) -> None:
    """Ordinal cutpoints ``[..., K - 1]`` must be finite and strictly increasing along the last axis
    (concrete values; a tracer's shape only): else a ``ValueError`` naming ``fn`` and the entry.
    Equal cutpoints would give a category probability 0, decreasing ones negative "probabilities".

    Shapes: ``cutpoints [..., K - 1]``."""
    if jnp.ndim(cutpoints) == 0 or jnp.shape(cutpoints)[-1] == 0:
        raise ValueError(f"{fn}: cutpoints must have shape [..., K - 1] with at least one cutpoint; got shape "
                         f"{jnp.shape(cutpoints)}.")
    check_values(fn, "cutpoints", cutpoints)
    check_increasing(fn, "cutpoints", cutpoints)


def _impossible(site: str, first: str, n: int, unit: str) -> ValueError:
    """The error for observations the model gives probability 0 (log-probability -inf)."""
    return ValueError(
        f"site {site!r}: {first} has probability 0 under the model and no lapse explains it ({n} such {unit}(s)); "
        "check the data, or add a lapse (e.g. a lapse prior instead of lapse = 0)."
    )


def _check_possible(name: str, per_trial: np.ndarray, obs: np.ndarray, row_of: Any) -> None:
    """Name the first observed trial the model gives probability 0 (log-probability -inf)."""
    bad = np.isneginf(per_trial)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise _impossible(name, f"trial {i} ({name} = {obs[i].item()!r}, {row_of(i)})", int(bad.sum()), "trial")


class TableCategorical(dist.Distribution):
    """One categorical response per trial, its log-probabilities read from a shared table.

    Trial ``i`` answers from ``table[rows[0][i], ..., :, ...]``: the ``option`` axis is
    ``axis`` and ``rows`` index the other axes, in order. ``table`` holds normalised
    log-probabilities (:func:`choices` checks them). ``log_prob(value)`` is the per-trial
    log-likelihood ``[trial]`` (what LOO and the predictive use); inside the sampler's potential
    :class:`tabulate_potential` replaces the site by :class:`TableCounts`, which gives the same
    total from a count table, so that the gradient needs no scatter of per-trial values.

    Shapes: ``table [*row_axes with option at axis]``, ``rows``: a tuple of ``[trial]`` integer
    arrays, one per row axis -> batch shape ``[trial]``.
    """

    arg_constraints: dict[str, Any] = {}
    pytree_data_fields: tuple[str, ...] = ("table", "rows")
    pytree_aux_fields: tuple[str, ...] = ("axis",)

    def __init__(self, table: ArrayLike, rows: tuple[ArrayLike, ...], axis: int, *,
                 validate_args: bool | None = None):
        self.table = jnp.asarray(table)
        self.rows = tuple(jnp.asarray(r, jnp.int32) for r in rows)
        self.axis = int(axis) % self.table.ndim
        super().__init__(batch_shape=jnp.shape(self.rows[0]), event_shape=(), validate_args=validate_args)

    @property
    def n_options(self) -> int:
        return int(self.table.shape[self.axis])

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.n_options - 1)

    def index(self, value: ArrayLike) -> tuple[jax.Array, ...]:
        """The table index of each trial's response: one array per table axis."""
        idx = list(self.rows)
        idx.insert(self.axis, jnp.asarray(value, jnp.int32))
        return tuple(idx)

    def log_prob(self, value: ArrayLike) -> jax.Array:
        flat = jnp.zeros((), jnp.int32)
        for i, size in zip(self.index(value), self.table.shape):
            flat = flat * size + i
        return self.table.reshape(-1)[flat]

    def trial_log_probs(self) -> jax.Array:
        """The per-trial option log-probabilities ``[trial, option]``."""
        return jnp.moveaxis(self.table, self.axis, -1)[self.rows]

    def sample(self, key: jax.Array, sample_shape: tuple[int, ...] = ()) -> jax.Array:
        return jax.random.categorical(key, self.trial_log_probs(), shape=tuple(sample_shape) + self.batch_shape)


class TableCounts(dist.Distribution):
    """The summed log-likelihood of a :class:`TableCategorical` site's observations, from counts.

    ``log_prob(value) = Σ_cells counts · table`` with ``counts`` the (weighted) number of trials
    in each table cell, equal to ``Σ_i weights[i] · table[index_i]``. The counts are a scatter of
    constants, so the gradient with respect to ``table`` is ``counts`` itself, a dense product
    (the per-trial gather's gradient is a scatter-add of per-trial values, about as costly as
    the whole listener on a CPU: ``benchmarks/fit_overhead.py --gradient``). Cells with no trial
    contribute 0, also where ``table`` is ``-inf``. ``weights`` (``[trial]``, e.g. a padding
    mask) default to 1. A :class:`TableCategorical` subclass that knows a cheaper form of
    ``Σ counts · table`` defines ``counts_log_prob(counts)`` and it is used instead (the per-item
    listener's sufficient statistics, :func:`pragmodels.rsa_models.rsa_listener_by_item`).
    """

    arg_constraints: dict[str, Any] = {}
    pytree_data_fields = ("base", "weights")

    def __init__(self, base: TableCategorical, weights: ArrayLike | None = None):
        self.base = base
        self.weights = None if weights is None else jnp.asarray(weights)
        super().__init__(batch_shape=(), event_shape=())

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return self.base.support

    def log_prob(self, value: ArrayLike) -> jax.Array:
        table = self.base.table
        w = (jnp.ones(self.base.batch_shape, table.dtype) if self.weights is None
             else jnp.broadcast_to(self.weights, self.base.batch_shape).astype(table.dtype))
        counts = jnp.zeros(table.shape, table.dtype).at[self.base.index(value)].add(w)
        shortcut = getattr(self.base, "counts_log_prob", None)
        if shortcut is not None:
            return shortcut(counts)
        seen = counts > 0
        return jnp.sum(jnp.where(seen, counts * jnp.where(seen, table, 0.0), 0.0))

    def sample(self, key: jax.Array, sample_shape: tuple[int, ...] = ()) -> jax.Array:
        raise NotImplementedError("TableCounts is a potential term only; sample the TableCategorical site.")


class tabulate_potential(Messenger):  # noqa: N801 - a NumPyro handler, named like numpyro's handlers
    """NumPyro handler: evaluate observed :class:`TableCategorical` sites as :class:`TableCounts`.

    The log density is unchanged (up to float rounding) and so is its gradient; only the way it
    is computed differs. :func:`pragmodels.inference.nuts.run_nuts` applies it to the potential it
    samples (never to the per-trial log-likelihood, which keeps one value per trial). A mask on
    the site (``numpyro.handlers.mask``, :func:`pragmodels.fit_batched`'s padding) becomes the
    counts' weights; a site with a per-trial ``scale`` keeps its per-trial form.
    """

    def process_message(self, msg: dict[str, Any]) -> None:
        if msg["type"] != "sample" or not msg.get("is_observed"):
            return
        fn, weights = msg["fn"], None
        while isinstance(fn, dist.MaskedDistribution):
            mask = fn._mask
            if mask is False:
                return
            if mask is not True:
                m = jnp.asarray(mask)
                weights = m if weights is None else weights & m
            fn = fn.base_dist
        if not isinstance(fn, TableCategorical) or jnp.shape(msg["value"]) != fn.batch_shape:
            return
        scale = msg.get("scale")
        if scale is not None and jnp.ndim(scale) > 0:
            return
        msg["fn"] = TableCounts(fn, weights)


def choices(name: str, log_probs: ArrayLike, obs: ArrayLike | None = None, *, lapse: ArrayLike = 0.0,
            dim: str = "trial", what: str = "option", rows: Rows | None = None, axis: int = -1) -> jax.Array:
    """Single categorical responses, one per row of ``log_probs``.

    Shapes: ``log_probs [dim, option]`` (normalised over ``option``), ``obs [dim]`` integer
    option indices, ``lapse []`` or ``[dim]`` -> the sampled (or observed) indices ``[dim]``.

    With ``rows [dim]`` (integer), ``log_probs`` is instead a table ``[condition, option]`` and
    trial ``i`` uses row ``rows[i]``: the lapse mixture is then computed once per condition
    rather than once per trial (much cheaper when trials share conditions).

    With a tuple ``rows = (item, utterance, ...)`` of integer index arrays, each ``[dim]``, the
    table has one row axis per array besides the option axis ``axis`` (default: the last), and
    trial ``i`` uses ``log_probs[item[i], utterance[i], ..., :]`` (no hand-flattened
    ``item * n_utt + utterance``). ``axis`` lets the table keep the layout an agent computed it
    in, e.g. ``[utterance, state, item]`` from :func:`pragmodels.agents.pragmatic_listener_batch`
    with ``rows=(utterance, item), axis=1``. A single array is the one-axis case. The same holds
    for :func:`listener_choices`, :func:`speaker_choices` and :func:`likert_ratings` (there
    ``latent [*row_axes]``). Concrete indices are checked eagerly, each against its own axis.
    ``lapse`` is then ``[]`` or the table's shape without the option axis.

    A table site is a :class:`TableCategorical`: one log-likelihood per trial for LOO and the
    predictive, and a count-table form inside the sampler's potential (:class:`tabulate_potential`).
    """
    check_numeric(f"site {name!r}", "log_probs", log_probs)
    log_probs = jnp.asarray(log_probs)
    if rows is not None:
        axes = rows if isinstance(rows, tuple) else (rows,)
        n_axes = len(axes)
        if n_axes == 0 or log_probs.ndim != n_axes + 1:
            raise ValueError(
                f"site {name!r}: rows has {n_axes} index array(s), so log_probs must have {n_axes} "
                f"row axes and a {what} axis ({n_axes + 1} axes in all); got shape {log_probs.shape}."
            )
        if not -log_probs.ndim <= axis < log_probs.ndim:
            raise ValueError(f"site {name!r}: axis = {axis} is not an axis of log_probs (shape {log_probs.shape}).")
        opt = axis % log_probs.ndim
        row_axes = [d for d in range(log_probs.ndim) if d != opt]
        shapes = [tuple(np.shape(r)) for r in axes]
        if any(len(sh) != 1 for sh in shapes) or len(set(shapes)) != 1:
            raise ValueError(
                f"site {name!r}: rows must be one-dimensional integer index arrays [{dim}] of equal "
                f"length, one per row axis of log_probs; got shapes {shapes} (pass several axes as a "
                "tuple of arrays)."
            )
        for k, r in enumerate(axes):
            arr, ax = _concrete(r), row_axes[k]
            size = log_probs.shape[ax]
            if arr is None:
                continue
            bad = bad_index(arr, size)
            if bad.any():
                i = int(np.argwhere(bad)[0][0])
                where = f"rows[{k}][{i}]" if isinstance(rows, tuple) else f"rows[{i}]"
                raise ValueError(
                    f"site {name!r}: {where} = {arr[i].item()!r} indexes axis {ax} of log_probs "
                    f"(shape {log_probs.shape}); expected an integer in 0..{size - 1}."
                )
        n, k_opt = shapes[0][0], log_probs.shape[opt]
        if n == 0:
            raise ValueError(f"site {name!r}: no {dim}s (rows index 0 of them); expected at least one observation.")
        if obs is not None and np.shape(obs) != (n,):
            raise ValueError(f"site {name!r}: obs must have shape ({n},), one per row index; got {np.shape(obs)}.")
        _check_index(name, obs, k_opt, what)
        check_table(f"site {name!r}", log_probs, what=what, axis=opt, lapse=lapse)
        table = log_mix_uniform(log_probs, lapse, axis=opt)
        t_arr, o_arr = _concrete(table), _concrete(obs)
        r_arr = [a for a in (_concrete(r) for r in axes) if a is not None]
        if t_arr is not None and o_arr is not None and len(r_arr) == len(axes):
            idx = [np.asarray(r, np.int64) for r in r_arr]
            idx.insert(opt, np.asarray(o_arr, np.int64))
            _check_possible(name, t_arr[tuple(idx)], o_arr,
                            lambda i: "row " + str(tuple(int(r[i]) for r in r_arr)) + f" of log_probs (shape {log_probs.shape})")
        with numpyro.plate(dim, n):
            return numpyro.sample(name, TableCategorical(table, axes, opt, validate_args=False), obs=obs,
                                  infer=_OBSERVATION)
    if axis % max(log_probs.ndim, 1) != log_probs.ndim - 1:
        raise ValueError(f"site {name!r}: axis = {axis} needs rows (a table); per-trial log_probs are "
                         f"[{dim}, {what}] with the {what} axis last.")
    if log_probs.ndim != 2:
        raise ValueError(f"site {name!r}: log_probs must have shape [{dim}, {what}]; got {log_probs.shape}.")
    n, k = log_probs.shape
    if n == 0:
        raise ValueError(f"site {name!r}: no {dim}s (log_probs has shape {log_probs.shape}); expected at least one.")
    if obs is not None and np.shape(obs) != (n,):
        raise ValueError(f"site {name!r}: obs must have shape ({n},) to match log_probs; got {np.shape(obs)}.")
    _check_index(name, obs, k, what)
    check_table(f"site {name!r}", log_probs, what=what, lapse=lapse)
    logits = log_mix_uniform(log_probs, lapse, axis=-1)
    l_arr, o_arr = _concrete(logits), _concrete(obs)
    if l_arr is not None and o_arr is not None:
        _check_possible(name, np.take_along_axis(l_arr, np.asarray(o_arr, np.int64)[:, None], -1)[:, 0], o_arr,
                        lambda i: f"log_probs[{i}]")
    with numpyro.plate(dim, n):
        return numpyro.sample(name, NormalizedCategorical(logits, validate_args=False), obs=obs,
                              infer=_OBSERVATION)


def listener_choices(name: str, log_listener: ArrayLike, obs: ArrayLike | None = None, *,
                     lapse: ArrayLike = 0.0, dim: str = "trial", rows: Rows | None = None,
                     axis: int = -1) -> jax.Array:
    """Listener choices over states (:func:`choices` with ``what="state"``).

    Shapes: ``log_listener [dim, state]`` (or a table ``[*row_axes, state]`` with ``rows``),
    ``obs [dim]`` state indices -> ``[dim]``.
    """
    return choices(name, log_listener, obs, lapse=lapse, dim=dim, what="state", rows=rows, axis=axis)


def speaker_choices(name: str, log_speaker: ArrayLike, obs: ArrayLike | None = None, *,
                    lapse: ArrayLike = 0.0, dim: str = "trial", rows: Rows | None = None,
                    axis: int = -1) -> jax.Array:
    """Speaker choices over utterances (:func:`choices` with ``what="utterance"``).

    Shapes: ``log_speaker [dim, utterance]`` (or a table ``[*row_axes, utterance]`` with
    ``rows``), ``obs [dim]`` utterance indices -> ``[dim]``.
    """
    return choices(name, log_speaker, obs, lapse=lapse, dim=dim, what="utterance", rows=rows, axis=axis)


class ZeroSafeMultinomial(dist.MultinomialLogits):
    """Multinomial whose log-probability treats ``0 · log 0`` as 0.

    NumPyro's ``Multinomial`` computes ``Σ counts · logits``, which is NaN when an option with
    probability 0 (a false utterance of a 0/1 lexicon, ``logits = -inf``) has count 0, so a fit
    could not even start. Here such terms are 0, with zero gradient.
    """

    def log_prob(self, value: ArrayLike) -> jax.Array:
        value = jnp.asarray(value, self.logits.dtype)
        terms = jnp.where(value > 0, value * jnp.where(value > 0, self.logits, 0.0), 0.0)
        norm = jax.scipy.special.gammaln(value.sum(-1) + 1) - jax.scipy.special.gammaln(value + 1).sum(-1)
        return norm + terms.sum(-1)


def choice_counts(name: str, log_probs: ArrayLike, counts: ArrayLike, *, lapse: ArrayLike = 0.0,
                  dim: str = "utterance") -> jax.Array:
    """Count vectors of responses (multinomial), one row per condition.

    Shapes: ``log_probs [dim, option]`` (normalised over ``option``), ``counts [dim, option]``
    non-negative integers, ``lapse []`` or ``[dim]`` -> counts ``[dim, option]``. The row totals are
    fixed by ``counts`` (also in predictive mode, which redraws the counts). The table is checked
    as :func:`choices` checks it, and a count in a cell of probability 0 without a lapse is an error.
    """
    check_numeric(f"site {name!r}", "log_probs", log_probs)
    log_probs = jnp.asarray(log_probs)
    if log_probs.ndim != 2 or 0 in log_probs.shape:
        raise ValueError(f"site {name!r}: log_probs must have shape [{dim}, option] with at least one of each; "
                         f"got {log_probs.shape}.")
    arr = _concrete(counts)
    if arr is not None:
        if arr.shape != log_probs.shape:
            raise ValueError(f"site {name!r}: counts shape {arr.shape} != log_probs shape {log_probs.shape}.")
        bad = bad_integer(arr, 0)
        if bad.any():
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            raise ValueError(f"site {name!r}: counts{list(i)} = {arr[i].item()!r}; expected a non-negative integer.")
    check_table(f"site {name!r}", log_probs, what="option", lapse=lapse)
    # sampling (predictive draws) needs a static bound on the row totals: known when concrete
    total_max = None if arr is None else int(arr.sum(-1).max(initial=0))
    counts = jnp.asarray(counts)
    total = counts.sum(-1)
    mixed = log_mix_uniform(log_probs, lapse, axis=-1)
    m_arr = _concrete(mixed)
    if m_arr is not None and arr is not None:
        impossible = (arr > 0) & np.isneginf(m_arr)
        if impossible.any():
            r, o = (int(k) for k in np.argwhere(impossible)[0])
            raise _impossible(name, f"counts[{r}, {o}] = {arr[r, o].item()!r} (option {o} of log_probs[{r}])",
                              int(impossible.sum()), "cell")
    logits = log_normalize(mixed, axis=-1)
    with numpyro.plate(dim, log_probs.shape[0]):
        return numpyro.sample(
            name, ZeroSafeMultinomial(logits, total_count=total, total_count_max=total_max, validate_args=False), obs=counts,
            infer=_OBSERVATION
        )


def binned_responses(name: str, log_probs: ArrayLike, obs_bin: ArrayLike | None = None, *,
                     lapse: ArrayLike = 0.0, dim: str = "trial") -> jax.Array:
    """Responses on a continuous scale (e.g. a 0-100 slider) binned to the model's states.

    Bin the raw responses with :func:`pragmodels.semantics.bin_index` first (it rejects values
    off the scale by name). The likelihood is the probability mass of the bin, so log-likelihoods
    are comparable across models that share a binning.

    Shapes: ``log_probs [dim, bin]``, ``obs_bin [dim]`` bin indices, ``lapse []`` or ``[dim]`` -> ``[dim]``.
    """
    return choices(name, log_probs, obs_bin, lapse=lapse, dim=dim, what="bin")


def ordinal_log_probs(latent: ArrayLike, cutpoints: ArrayLike) -> jax.Array:
    """Ordered-logistic category log-probabilities.

    ``P(y = k) = σ(c_k − η) − σ(c_{k−1} − η)`` with ``c_0 = −∞``, ``c_K = +∞``.
    Shapes: ``latent [...]``, ``cutpoints [..., K - 1]`` strictly increasing -> ``[..., K]``.
    Concrete cutpoints that are not (or not finite), or a NaN latent, are a ``ValueError``
    (:func:`check_cutpoints`).

    Computed without subtracting probabilities, from the identity
    ``σ(b) − σ(a) = σ(b) σ(−a) (1 − e^{a−b})`` (``a < b``):
    ``log P(y = k) = log σ(c_k − η) + log σ(η − c_{k−1}) + log(1 − e^{c_{k−1} − c_k})``.
    So it stays accurate (and its gradient informative) for categories far in the tails,
    where the difference of two sigmoids would round to zero in float32; near-deterministic
    raters need exactly those tails.
    """
    check_values("ordinal_log_probs", "latent", latent)
    check_cutpoints("ordinal_log_probs", cutpoints)
    latent = jnp.asarray(latent)[..., None]
    c = jnp.asarray(cutpoints)
    below = jax.nn.log_sigmoid(c - latent)  # log P(y <= k), [..., K-1]
    above = jax.nn.log_sigmoid(latent - c)  # log P(y > k)
    gap = jnp.log(-jnp.expm1(c[..., :-1] - c[..., 1:]))  # log(1 - e^{c_{k-1} - c_k})
    inner = below[..., 1:] + above[..., :-1] + gap
    return jnp.concatenate([below[..., :1], inner, above[..., -1:]], -1)


def check_ratings(name: str, obs: ArrayLike | None, low: int, k: int) -> None:
    """A concrete ``obs`` must hold integer ratings in ``low .. low + k - 1``: else a
    ``ValueError`` naming the site, the index and the value (traced or absent ``obs``: no check)."""
    arr = _concrete(obs)
    if arr is not None:
        bad = bad_integer(arr, low, low + k - 1)
        if bad.any():
            i = tuple(int(j) for j in np.argwhere(bad)[0])
            raise ValueError(
                f"observation site {name!r}: {name}{list(i)} = {arr[i].item()!r}; expected an integer "
                f"rating in {low}..{low + k - 1}."
            )


def node_log_probs(latent: ArrayLike, cutpoints: ArrayLike, lapse: ArrayLike = 0.0) -> jax.Array:
    """``log[(1 − lapse) P(y = k | latent) + lapse / K]``, the ordered-logistic category
    log-probabilities with the lapse mixed in: the values of
    :func:`pragmodels.likelihoods.categorical.ordinal_log_probs` followed by
    :func:`pragmodels.logmath.log_mix_uniform`, in a third of their time.

    Shapes: ``latent [...]``, ``cutpoints [..., K − 1]`` (strictly increasing: concrete cutpoints
    are checked, :func:`pragmodels.likelihoods.categorical.check_cutpoints`), ``lapse`` scalar (a
    ``ValueError`` otherwise) -> ``[..., K]``.

    The rater likelihood evaluates this on every quadrature node (``24 × 6 × 81 × 7`` values per
    gradient for the social-meaning ratings), where the log-space pair was 90% of the model's
    gradient time. Here the probabilities are formed in probability space from the same
    cancellation-free product ``σ(c_k − η) σ(η − c_{k−1}) (1 − e^{c_{k−1} − c_k})`` (no difference of
    sigmoids; both ``F`` and ``1 − F`` from one ``exp(−|d|)``), mixed, and their log taken once:
    within 1e-6 nats and 3e-7 relative gradient of the log-space pair in float32 (tested). Its
    derivative is written by hand (``_mixed_log_probs``): the logistic density ``F(1 − F)`` reuses the
    forward's values, where autodiff of the product form did not; measured in one process, old and
    new alternating (2026-12-06), a gradient of the human social-meaning models costs 0.69-0.73x of
    what it did (RSA 0.79 against 1.08 ms), the same potential and gradients within 4e-6 relative.
    A concrete zero ``lapse`` uses the log-space form, which keeps far tails that underflow in
    probability space (below 1e-38 in float32, a latent 87 logits beyond a cutpoint). A traced lapse small enough to let the mixture underflow (below
    about ``K × 1e-38``; a sampled lapse never is) floors it at the smallest normal float: finite,
    with zero gradient there, where the log-space form would keep the tail. (At a traced lapse of
    exactly 0 the gradient in ``lapse`` is the true derivative ``(1/K − p) / p``, where
    ``log_mix_uniform`` returns 0.)"""
    check_weight(lapse, "node_log_probs", "lapse")
    check_values("node_log_probs", "latent", latent)
    check_cutpoints("node_log_probs", cutpoints)
    if jnp.ndim(lapse) != 0:
        raise ValueError(f"node_log_probs: lapse must be a scalar; got shape {jnp.shape(lapse)}.")
    fixed = _concrete(lapse)
    if fixed is not None and float(fixed) == 0:
        return ordinal_log_probs(latent, cutpoints)
    eta, c = jnp.asarray(latent), jnp.asarray(cutpoints)
    dtype = jnp.result_type(eta, c, float)  # integer latents and cutpoints: a float lapse, not a truncated one
    return _mixed_log_probs(eta.astype(dtype), c.astype(dtype), jnp.asarray(lapse, dtype))


def _logistic_pair(d: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(F(d), 1 − F(d))`` of the logistic CDF from one ``exp(−|d|)``: neither is a difference, and
    nothing overflows."""
    t = jnp.exp(-jnp.abs(d))
    r = 1.0 / (1.0 + t)
    pos = d >= 0
    return jnp.where(pos, r, t * r), jnp.where(pos, t * r, r)


def _mixed_parts(eta: jax.Array, c: jax.Array, w: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, Any]:
    below, above = _logistic_pair(c - eta[..., None])  # P(y <= k), P(y > k)
    gap = -jnp.expm1(c[..., :-1] - c[..., 1:])  # 1 - e^{c_{k-1} - c_k}
    p = jnp.concatenate([below[..., :1], below[..., 1:] * above[..., :-1] * gap, above[..., -1:]], -1)
    q = (1 - w) * p + w / p.shape[-1]
    tiny = jnp.finfo(q.dtype).tiny
    return below, above, p, q, jnp.maximum(q, tiny), tiny


@jax.custom_jvp
def _mixed_log_probs(eta: jax.Array, c: jax.Array, w: jax.Array) -> jax.Array:
    """``log[(1 − w) P(y = k | eta) + w / K]`` (:func:`node_log_probs`), with a hand-written
    derivative: ``∂P(y = k)/∂c_k = f_k``, ``∂P(y = k)/∂c_{k−1} = −f_{k−1}`` and ``∂/∂eta`` their
    negated sum, where ``f_k = F(d_k)(1 − F(d_k))`` reuses the forward's ``F``. The rater site's
    value and gradient on the social-meaning human data's shapes took 0.57 ms with autodiff of the
    product form, 0.37 ms with this (same values)."""
    return jnp.log(_mixed_parts(eta, c, w)[4])


@_mixed_log_probs.defjvp
def _mixed_log_probs_jvp(primals: tuple[jax.Array, ...], tangents: tuple[jax.Array, ...]
                         ) -> tuple[jax.Array, jax.Array]:
    eta, c, w = primals
    d_eta, d_c, d_w = tangents
    below, above, p, q, safe, tiny = _mixed_parts(eta, c, w)
    g = below * above * (d_c - d_eta[..., None])  # dF(c_k - eta)
    zero = jnp.zeros_like(g[..., :1])
    dp = jnp.concatenate([g, zero], -1) - jnp.concatenate([zero, g], -1)
    dq = (1 - w) * dp + (1.0 / p.shape[-1] - p) * d_w
    # floored entries are constant; dividing by the floored value keeps the transpose finite
    return jnp.log(safe), jnp.where(q > tiny, dq, 0.0) / safe


def likert_ratings(name: str, latent: ArrayLike, cutpoints: ArrayLike, obs: ArrayLike | None = None, *,
                   lapse: ArrayLike = 0.0, low: int = 1, dim: str = "response",
                   rows: Rows | None = None) -> jax.Array:
    """Ordinal ratings on a ``low .. low + K - 1`` scale (ordered logistic on a latent score).

    Shapes: ``latent [dim]``, ``cutpoints [K - 1]`` or ``[dim, K - 1]`` strictly increasing (a
    ``ValueError`` where concrete, :func:`check_cutpoints`), ``obs [dim]`` integer ratings. With ``rows [dim]``, ``latent [condition]`` and ``cutpoints
    [condition, K - 1]`` describe conditions and rating ``i`` uses condition ``rows[i]`` (the
    ordinal probabilities are then computed once per condition). The sampled site holds the
    category index ``rating - low`` (0-based), ``[dim]``.

    A scalar ``lapse`` is mixed in with the ordinal probabilities in one step (:func:`node_log_probs`,
    the same values to 1e-6 nats); a lapse per rating or per condition is mixed in afterwards
    (:func:`pragmodels.logmath.log_mix_uniform`). Measured on the social-meaning LLM model
    (2026-12-07, ``benchmarks/likert_lapse.py``): its gradient 0.41x of the two-step form's.
    """
    check_values(f"site {name!r}", "latent", latent)
    check_cutpoints(f"site {name!r}", cutpoints)
    if jnp.ndim(lapse) == 0:
        check_weight(lapse, f"site {name!r}", "lapse")
        log_probs, lapse = node_log_probs(latent, cutpoints, lapse), 0.0
    else:
        log_probs = ordinal_log_probs(latent, cutpoints)
    check_ratings(name, obs, low, log_probs.shape[-1])
    idx = None if obs is None else jnp.asarray(obs) - low
    return choices(name, log_probs, idx, lapse=lapse, dim=dim, what="rating", rows=rows)
