"""K-fold cross-validation over groups (e.g. items): held-out log predictive densities.

Layering: imports ``jax``, ``numpy``, ``numpyro.handlers`` (trace, seed, substitute; never
``numpyro.sample``), :mod:`pragmodels.params`, :mod:`pragmodels.model_key` and
:mod:`pragmodels.inference` (``fit``, ``as_rng_key`` and the compile cache's public API).

Models with one latent parameter vector per item are judged on items they have not seen: a
held-out item's log predictive density is the log-mean-exp, over posterior draws of the global
parameters and prior draws of the item's own (every latent site with a dim named ``local_dim``),
of the joint log-likelihood of all its responses. :func:`item_folds` makes the folds,
:func:`subset_items` the training and test data, :func:`heldout_log_density` the densities (with
their Monte Carlo SE) and :func:`fit_fold` fits one fold (:class:`FoldResult`). The estimator and
its bias: the docs page *Fitting and checking* ("Cross-validation by item"); why not
``arviz_stats.loo_kfold``: the architecture page ("arviz-stats").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from jax import lax
from numpyro import handlers

from pragmodels.inference.nuts import as_rng_key
from pragmodels.params import inspect_model, with_priors

__all__ = ["item_folds", "subset_items", "local_sites", "heldout_log_density", "fit_fold", "FoldResult"]


def item_folds(n_items: int, k: int, seed: int = 0) -> list[np.ndarray]:
    """Split ``0 .. n_items - 1`` at random into ``k`` folds of near-equal size (held-out items).

    Parameters
    ----------
    n_items : int
        Number of items (groups).
    k : int
        Number of folds, ``2 <= k <= n_items``.
    seed : int
        Seed of the permutation (the same seed gives the same folds for every model).

    Returns
    -------
    list of numpy.ndarray
        ``k`` sorted int arrays, disjoint, covering every item once; sizes differ by at most 1.

    Shapes: -> ``k`` arrays ``[held_out_item]``.
    """
    for name, v, low in (("n_items", n_items, 2), ("k", k, 2)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"item_folds: {name} must be an int >= {low}; got {v!r}.")
    if k > n_items:
        raise ValueError(f"item_folds: k = {k} folds but only {n_items} items.")
    perm = np.random.default_rng(seed).permutation(n_items)
    return [np.sort(f) for f in np.array_split(perm, k)]


def subset_items(data: Mapping[str, Any], items: Sequence[int] | np.ndarray, *, item_keys: Sequence[str],
                 trial_keys: Sequence[str], item_index: str = "item") -> dict[str, Any]:
    """The data of some items only, renumbered ``0 .. len(items) - 1`` in the order given.

    Per-item arrays (``item_keys``, leading axis ``item``) are sliced; per-trial arrays
    (``trial_keys``, leading axis ``trial``) keep the trials of those items; ``data[item_index]``
    (the trial's item) is mapped to the item's position in ``items``. Other entries (options,
    shared arrays such as a state prior) pass unchanged; ``None`` entries stay ``None``.

    Parameters
    ----------
    data : mapping
        A model's keyword arguments.
    items : sequence of int
        The items to keep (distinct).
    item_keys, trial_keys : sequence of str
        Which entries have a leading item axis / a leading trial axis (absent ones are skipped).
    item_index : str
        The per-trial entry holding each trial's item (one of ``trial_keys``).

    Returns
    -------
    dict
        The subset, with the same keys.

    Shapes: ``data[item_keys] [item, ...]`` -> ``[len(items), ...]``;
    ``data[trial_keys] [trial, ...]`` -> ``[kept_trial, ...]``.
    """
    items = np.asarray(items, np.int64)
    if items.ndim != 1 or items.size == 0 or len(np.unique(items)) != items.size:
        raise ValueError(f"subset_items: items must be distinct item indices [n]; got {items!r}.")
    if item_index not in data:
        raise ValueError(f"subset_items: data has no {item_index!r} (the trial's item); keys {sorted(data)}.")
    trial_item = np.asarray(data[item_index])
    n_items = None
    for key in item_keys:
        if data.get(key) is not None:
            n_items = np.shape(data[key])[0]
            break
    if n_items is not None and (items.min() < 0 or items.max() >= n_items):
        raise ValueError(f"subset_items: items must lie in 0..{n_items - 1}; got {items.min()}..{items.max()}.")
    position = np.full(int(max(items.max(), trial_item.max(initial=0))) + 1, -1, np.int64)
    position[items] = np.arange(items.size)
    keep = position[trial_item] >= 0 if trial_item.size else np.zeros(0, bool)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if value is None:
            out[key] = None
        elif key in item_keys:
            out[key] = np.asarray(value)[items]
        elif key in trial_keys:
            arr = np.asarray(value)
            if arr.shape[:1] != trial_item.shape:
                raise ValueError(f"subset_items: data[{key!r}] has {arr.shape[:1]} trials but {item_index!r} has "
                                 f"{trial_item.shape}.")
            out[key] = position[trial_item[keep]].astype(np.int32) if key == item_index else arr[keep]
        else:
            out[key] = value
    return out


def local_sites(model: Callable[..., Any], data: Mapping[str, Any], local_dim: str = "item") -> list[str]:
    """The latent sites of ``model(**data)`` that have a dim named ``local_dim`` (per-item parameters).

    Read from one trace (:func:`pragmodels.inspect_model`): ``param(..., dims={"item": n})``,
    :func:`pragmodels.group_effect`'s ``*_z`` and sites in a plate named ``local_dim``.

    Parameters
    ----------
    model : callable
        A NumPyro model.
    data : mapping
        Its keyword arguments.
    local_dim : str
        The dim that makes a site local.

    Returns
    -------
    list of str
        Site names, in trace order.
    """
    info = inspect_model(model, data)
    return [k for k in info.latent if local_dim in (info.dims.get(k) or [])]


def _flat_draws(posterior: xr.DataTree | xr.Dataset | Mapping[str, Any], names: Sequence[str],
                max_draws: int | None, seed: int) -> dict[str, np.ndarray]:
    if isinstance(posterior, xr.DataTree):
        posterior = posterior["posterior"].to_dataset() if "posterior" in posterior.children else posterior.to_dataset()
    out: dict[str, np.ndarray] = {}
    for k in names:
        if k not in posterior:
            raise ValueError(f"the posterior lacks the global parameter {k!r}; is it a fit of this model?")
        arr = np.asarray(posterior[k].values if hasattr(posterior[k], "values") else posterior[k])
        out[k] = arr.reshape((-1,) + arr.shape[2:])
    n = min((v.shape[0] for v in out.values()), default=1)
    if max_draws is not None and n > max_draws:
        idx = np.sort(np.random.default_rng(seed).choice(n, max_draws, replace=False))
        out = {k: v[idx] for k, v in out.items()}
    return out


def heldout_log_density(rng_key: int | jax.Array, model: Callable[..., Any],
                        posterior: xr.DataTree | xr.Dataset | Mapping[str, Any], data: Mapping[str, Any], *,
                        n_items: int, item_index: str = "item", local_dim: str = "item", n_mc: int = 100,
                        max_draws: int | None = 500, batch_size: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Log predictive density of each held-out item's responses (the estimator: docs, *Fitting and checking*).

    Global latent sites are taken from ``posterior``; local ones (dim ``local_dim``) are drawn
    ``n_mc`` times per posterior draw from their prior; each observed site's per-trial
    log-likelihood is summed over the item's trials.

    Parameters
    ----------
    rng_key : int or jax PRNG key
        Seed of the prior draws.
    model : callable
        The fitted model (with the same prior overrides as the fit, e.g. a ``with_priors``).
    posterior : DataTree, Dataset or mapping
        A fit's posterior ``{site: [chain, draw, ...]}`` (a :func:`pragmodels.fit` result).
    data : mapping
        The held-out items' data (:func:`subset_items`), observations included.
    n_items : int
        Number of held-out items (``data[item_index]`` in ``0 .. n_items - 1``).
    item_index : str
        The per-trial entry holding each trial's item.
    local_dim : str
        The dim of local sites.
    n_mc : int
        Prior draws of the local sites per posterior draw (1 when the model has none).
    max_draws : int, optional
        Use at most this many posterior draws (a random subset; ``None``: all).
    batch_size : int
        Posterior draws evaluated together (bounds memory).

    Returns
    -------
    elpd : numpy.ndarray
        ``[item]``: ``log p(y_i | y_train)``.
    mc_se : numpy.ndarray
        ``[item]``: Monte Carlo standard error of ``elpd`` (delta method on the mean density).

    Shapes: ``posterior[site] [chain, draw, ...]``, ``data[item_index] [trial]`` ->
    ``([item], [item])``.
    """
    from pragmodels.inference import compile_cache
    from pragmodels.inference.compile_cache import split_data
    from pragmodels.model_key import structure_key

    key = as_rng_key(rng_key)
    info = inspect_model(model, data)
    if not info.observed:
        raise ValueError("heldout_log_density: the model has no observed site; pass the held-out responses in data.")
    local = [k for k in info.latent if local_dim in (info.dims.get(k) or [])]
    global_ = [k for k in info.latent if k not in local]
    draws = _flat_draws(posterior, global_, max_draws, seed=0)
    n_draw = next(iter(draws.values())).shape[0] if draws else 1
    m = int(n_mc) if local else 1
    if m < 1:
        raise ValueError(f"heldout_log_density: n_mc must be >= 1; got {n_mc!r}.")
    static, arrays = split_data(data)
    if item_index not in arrays:
        raise ValueError(f"heldout_log_density: data has no array {item_index!r} (the trial's item).")
    observed = tuple(info.observed)
    keys = jax.random.split(key, n_draw)
    jdraws = {k: jnp.asarray(v) for k, v in draws.items()}
    b = max(1, min(int(batch_size), n_draw))
    # compiled once per model structure, static values, shapes and settings (reused across folds
    # of equal size and across calls), like pragmodels.inference.nuts's programs
    cache_key = ("heldout", structure_key(model), compile_cache.static_items(static), compile_cache.data_signature(arrays),
                 compile_cache.data_signature(jdraws), observed, int(n_items), m, b, item_index, jax.default_backend())
    entry = compile_cache.lookup(cache_key)
    if entry is None:
        t0 = time.perf_counter()
        run = _scorer(compile_cache.bound_model(model, static), observed, int(n_items), m, b, item_index)
        compiled = jax.jit(run).lower(keys, jdraws, arrays).compile()
        entry = compile_cache.CompiledEntry("heldout", f"heldout {compile_cache.model_label(model)} {compile_cache.data_signature(arrays)}", compiled, None,
                          time.perf_counter() - t0)
        compile_cache.store(cache_key, entry)
    ll = entry.compiled(keys, jdraws, arrays)
    ll = np.asarray(ll, np.float64).reshape(n_draw * m, n_items)  # [draw x mc, item]
    top = ll.max(0)
    w = np.exp(ll - top)
    mean = w.mean(0)
    elpd = np.log(mean) + top
    se = w.std(0, ddof=1) / np.sqrt(w.shape[0]) / mean if w.shape[0] > 1 else np.full(n_items, np.nan)
    return elpd, se


def _scorer(bound: Callable[..., Any], observed: tuple[str, ...], n_items: int, m: int, b: int,
            item_index: str) -> Callable[..., jax.Array]:
    """``(keys [draw], draws {site: [draw, ...]}, arrays) -> [draw, mc, item]`` summed log-likelihoods."""

    def one(k: jax.Array, draw: dict[str, jax.Array], arrays: dict[str, jax.Array]) -> jax.Array:
        tr = handlers.trace(handlers.substitute(handlers.seed(bound, k), data=draw)).get_trace(**arrays)
        trial_item = arrays[item_index].astype(jnp.int32)
        total = jnp.zeros(n_items)
        for name in observed:
            lp = tr[name]["fn"].log_prob(tr[name]["value"])
            if lp.shape != trial_item.shape:
                raise ValueError(f"heldout_log_density: observed site {name!r} gives log-probabilities of shape "
                                 f"{lp.shape}; expected one per trial {trial_item.shape}.")
            total = total + jax.ops.segment_sum(lp, trial_item, num_segments=n_items)
        return total

    def run(keys: jax.Array, draws: dict[str, jax.Array], arrays: dict[str, jax.Array]) -> jax.Array:
        def per_draw(args: tuple[jax.Array, dict[str, jax.Array]]) -> jax.Array:
            k, draw = args
            return jax.vmap(lambda kk: one(kk, draw, arrays))(jax.random.split(k, m))  # [mc, item]

        return lax.map(per_draw, (keys, draws), batch_size=b)

    return run


@dataclass
class FoldResult:
    """One fold: the held-out ``items`` (original numbering), their ``elpd`` ``[item]`` and its
    Monte Carlo standard error ``mc_se``, the fit's ``tree`` and the local sites drawn from
    the prior (``local``)."""

    items: np.ndarray
    elpd: np.ndarray
    mc_se: np.ndarray
    tree: xr.DataTree | None = field(default=None, repr=False)
    local: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        """``Σ_i elpd_i`` over the fold's held-out items."""
        return float(np.sum(self.elpd))


def fit_fold(rng_key: int, model: Callable[..., Any], data: Mapping[str, Any], test_items: Sequence[int] | np.ndarray,
             *, item_keys: Sequence[str], trial_keys: Sequence[str], item_index: str = "item",
             local_dim: str = "item", priors: Mapping[str, Any] | None = None, n_mc: int = 100,
             max_draws: int | None = 500, fit_kwargs: Mapping[str, Any] | None = None,
             keep_tree: bool = False, top_up: bool = False, name: str = "cv-fold") -> FoldResult:
    """Fit ``model`` to every item except ``test_items`` and score the held-out items.

    The training items' data (:func:`subset_items`) are fitted with :func:`pragmodels.fit`
    (``fit_kwargs`` are passed on; by default no posterior predictive); the test items are
    scored with :func:`heldout_log_density`, their local sites drawn from the prior.

    Parameters
    ----------
    rng_key : int
        Seed (the fit uses it, the prior draws ``rng_key + 1``).
    model : callable
        A NumPyro model taking ``data`` as keyword arguments.
    data : mapping
        All items' data.
    test_items : sequence of int
        The held-out items (e.g. one of :func:`item_folds`).
    item_keys, trial_keys, item_index : str sequences, str
        As :func:`subset_items`.
    local_dim : str
        As :func:`heldout_log_density`.
    priors : mapping, optional
        Prior overrides for the fit (and the held-out scoring).
    n_mc, max_draws : int
        As :func:`heldout_log_density`.
    fit_kwargs : mapping, optional
        Keyword arguments of :func:`pragmodels.fit` (``num_warmup``, ``num_chains``, ...).
    keep_tree : bool
        Keep the fit's DataTree on the result.
    top_up : bool
        Sample a fit short of the sampling standards again, with more draws or smaller steps
        (:func:`pragmodels.inference.top_up.top_up`, which says so on standard output; the tree
        records ``draws_resized``), before the held-out items are scored.
    name : str
        The fit's name in ``top_up``'s lines (e.g. the model and the fold).

    Returns
    -------
    FoldResult
        ``elpd [test_item]`` in the order of ``test_items``.

    Shapes: ``data`` as :func:`subset_items`; ``test_items [held_out_item]`` ->
    ``FoldResult.elpd [held_out_item]``.
    """
    from pragmodels.inference.fitting import fit

    test = np.asarray(test_items, np.int64)
    n_items = None
    for k in item_keys:
        if data.get(k) is not None:
            n_items = int(np.shape(data[k])[0])
            break
    if n_items is None:
        raise ValueError(f"fit_fold: none of item_keys {list(item_keys)} is in data.")
    train = np.setdiff1d(np.arange(n_items), test)
    if train.size == 0:
        raise ValueError("fit_fold: no training items left.")
    train_data = subset_items(data, train, item_keys=item_keys, trial_keys=trial_keys, item_index=item_index)
    test_data = subset_items(data, test, item_keys=item_keys, trial_keys=trial_keys, item_index=item_index)
    kwargs = {"posterior_predictive": False, "progress_bar": False, **dict(fit_kwargs or {})}
    if top_up:
        from pragmodels.inference.fit_many import FitSpec, fit_many
        from pragmodels.inference.top_up import top_up as sized

        spec = FitSpec(name, model, train_data, priors=dict(priors) if priors else None, sampler=kwargs, seed=rng_key)
        kept = sized([spec], fit_many([spec], progress=False).raise_on_error(), progress=False)[0].tree
        assert kept is not None  # (fit_many without out_dir keeps the trees)
        tree = kept
    else:
        tree = fit(rng_key, model, train_data, priors=priors, **kwargs)
    scored = with_priors(model, priors) if priors else model
    elpd, se = heldout_log_density(rng_key + 1, scored, tree, test_data, n_items=test.size, item_index=item_index,
                                   local_dim=local_dim, n_mc=n_mc, max_draws=max_draws)
    return FoldResult(items=test, elpd=elpd, mc_se=se, tree=tree if keep_tree else None,
                      local=local_sites(scored, test_data, local_dim))
