"""Several data sets of one model in one compiled NUTS run: ``fit_batched``.

Layering: imports :mod:`pragmodels.inference.nuts` (its single-chain program),
:mod:`pragmodels.inference.compile_cache`, :mod:`pragmodels.params`, :mod:`pragmodels.inference.predictive`,
:mod:`pragmodels.inference.diagnostics`, :mod:`pragmodels.inference.fitting` (the checks and the DataTree
of one fit) and :mod:`pragmodels.inference.provenance` (its attributes, as ``fit`` records them).

:func:`fit_batched` ``vmap``-s the single-chain program over chains and data sets, so one
compilation and one device launch serve every data set (how a GPU user fits 12 conditions at
once); each data set keeps its own chains and adaptation, so its posterior is that of a separate
fit. Data sets of different sizes are padded along the arrays named in ``pad`` and the padded
trials masked out of the likelihood and cut from each data set's DataTree. In full: the docs page
*Fitting and checking* ("Several data sets in one compiled run").
"""

from __future__ import annotations

import functools
import json
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from pragmodels.inference import compile_cache, nuts
from pragmodels.inference.diagnostics import FitWarning, diagnose
from pragmodels.inference.fitting import check_dense_mass, check_settings, to_datatree, validate_data
from pragmodels.inference.nuts import as_rng_key
from pragmodels.inference.padding import Masked, cut_padding
from pragmodels.inference.predictive import (
    posterior_predictive as posterior_predictive_draws,
)
from pragmodels.inference.provenance import (
    model_name,
    provenance_attrs,
    sampler_settings,
)
from pragmodels.model_key import structure_key
from pragmodels.params import inspect_model, with_priors

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["fit_batched"]


def _pad(datasets: Sequence[Mapping[str, Any]], pad: Sequence[str]
         ) -> tuple[dict[str, Any], dict[str, np.ndarray], np.ndarray, list[int]]:
    """Stack data sets: (static values, arrays [dataset, ...], mask [dataset, trial], sizes)."""
    keys = list(datasets[0])
    for i, d in enumerate(datasets):
        if list(d) != keys:
            raise ValueError(f"datasets[{i}] has keys {sorted(d)}; datasets[0] has {sorted(keys)}.")
    static, _ = compile_cache.split_data(datasets[0])
    for i, d in enumerate(datasets[1:], 1):
        st, _ = compile_cache.split_data(d)
        if st != static:
            raise ValueError(f"datasets[{i}]: static values {st} differ from datasets[0]'s {static}; "
                             "batched data sets share every Python scalar and string.")
    unknown = [k for k in pad if k not in keys or k in static]
    if unknown:
        raise ValueError(f"pad names {unknown}, which are not array data; arrays: "
                         f"{[k for k in keys if k not in static]}.")
    sizes = []
    for i, d in enumerate(datasets):
        lens = {k: int(np.shape(d[k])[0]) for k in pad if d[k] is not None}
        if len(set(lens.values())) > 1:
            raise ValueError(f"datasets[{i}]: the padded arrays differ in length {lens}.")
        sizes.append(next(iter(lens.values())) if lens else 0)
    n_max = max(sizes) if sizes else 0
    arrays: dict[str, np.ndarray] = {}
    for k in keys:
        if k in static:
            continue
        vals = [np.asarray(d[k]) for d in datasets]
        if k in pad:
            vals = [np.concatenate([v, np.repeat(v[:1], n_max - v.shape[0], axis=0)]) if v.shape[0] < n_max else v
                    for v in vals]
        shapes = {v.shape for v in vals}
        if len(shapes) > 1:
            raise ValueError(f"data[{k!r}] has shapes {[v.shape for v in vals]} across data sets; pad it "
                             f"(pad=[..., {k!r}]) if it is a per-trial array.")
        arrays[k] = np.stack(vals)
    mask = np.arange(n_max)[None, :] < np.asarray(sizes)[:, None]
    return static, arrays, mask, sizes


def fit_batched(rng_key: int | jax.Array, model: Callable[..., Any], datasets: Sequence[Mapping[str, Any]], *,
                pad: Sequence[str] = (), names: Sequence[str] | None = None, num_warmup: int = 1000,
                num_samples: int = 1000, num_chains: int = 4, target_accept: float = 0.8,
                max_tree_depth: int = 10, dense_mass: bool | list[tuple[str, ...]] = False,
                init: Literal["median", "uniform"] = "median", priors: Mapping[str, Any] | None = None,
                posterior_predictive: bool = True, dims: Mapping[str, list[str]] | None = None,
                coords: Mapping[str, Any] | None = None) -> dict[str, xr.DataTree]:
    """Fit ``model`` to each of ``datasets`` in one compiled, vectorised NUTS run.

    Parameters
    ----------
    rng_key : int or jax PRNG key
        Data set ``k`` uses ``jax.random.split(key, K)[k]`` (split again per chain).
    model : callable
        As for :func:`pragmodels.fit`.
    datasets : sequence of dict
        The model's keyword arguments, one dict per data set, with the same keys and static
        values; arrays equal in shape except those named in ``pad``.
    pad : sequence of str
        Per-trial arrays (observations and their covariates) padded along axis 0.
    names : sequence of str, optional
        Keys of the returned dict (default ``"0"``, ``"1"``, ...).
    num_warmup, num_samples, num_chains, target_accept, max_tree_depth, dense_mass, init, priors,
    posterior_predictive, dims, coords
        As for :func:`pragmodels.fit` (``init`` is ``"median"`` or ``"uniform"``).

    Returns
    -------
    dict of xarray.DataTree
        One tree per data set, as :func:`pragmodels.fit` returns for it alone (padding removed),
        with ``sampler_settings["batched"] = K``.

    Shapes: ``datasets[k][p] [n_k, ...]`` for ``p`` in ``pad``; the batched program runs on
    ``[K, chain]`` and ``[K, n_max, ...]``.
    """
    t0 = time.perf_counter()
    if not datasets:
        raise ValueError("datasets is empty.")
    names = [str(i) for i in range(len(datasets))] if names is None else [str(n) for n in names]
    if len(names) != len(datasets) or len(set(names)) != len(names):
        raise ValueError(f"names must be {len(datasets)} distinct labels; got {names}.")
    check_settings(num_warmup, num_samples, num_chains, "vectorized", target_accept, max_tree_depth, init)
    if init not in ("median", "uniform"):
        raise ValueError(f"fit_batched: init must be 'median' or 'uniform'; got {init!r}.")
    datasets = [validate_data(dict(d)) for d in datasets]
    infos = [inspect_model(model, d, priors) for d in datasets]  # each data set validated eagerly
    check_dense_mass(dense_mass, infos[0])
    label = model_name(model)
    if priors:
        model = with_priors(model, priors)
    key = as_rng_key(rng_key)
    static, stacked, mask, sizes = _pad(datasets, pad)
    n_max = mask.shape[1]
    masked = Masked(model)
    K = len(datasets)  # noqa: N806 - K datasets, as the docstring counts them
    arrays = {**{k: jnp.asarray(v) for k, v in stacked.items()}, "_pad_mask": jnp.asarray(mask)}

    settings = (num_warmup, num_samples, float(target_accept), max_tree_depth, nuts.dense_mass_key(dense_mass), init)
    cache_key = ("nuts-batched", structure_key(masked), compile_cache.static_items(static),
                 compile_cache.data_signature({k: v[0] for k, v in arrays.items()}), K, num_chains, settings, jax.default_backend())
    entry = compile_cache.lookup(cache_key)
    keys = jax.vmap(lambda k: jax.random.split(k, num_chains))(jax.random.split(key, K))  # [K, chain]
    if entry is None:
        tc = time.perf_counter()
        info: dict = {}
        bound = functools.partial(masked, **static)
        one = nuts.build_chain_fn(bound, init=init, has_init=False, num_warmup=num_warmup, num_samples=num_samples,
                                 target_accept=float(target_accept), max_tree_depth=max_tree_depth,
                                 dense_mass=dense_mass, progress_every=0, ticks=0, info=info)
        over_chains = jax.vmap(one, in_axes=(0, None, None))
        program = jax.jit(jax.vmap(over_chains, in_axes=(0, None, 0)))
        compiled = program.lower(keys, {}, arrays).compile()
        entry = compile_cache.CompiledEntry("nuts-batched", f"nuts batched x{K} {compile_cache.model_label(model)}", compiled, bound,
                          time.perf_counter() - tc, info)
        compile_cache.store(cache_key, entry)
        compile_s, hit = entry.compile_s, False
    else:
        compile_s, hit = 0.0, True
    ts = time.perf_counter()
    (samples, stats), ok = jax.device_get(entry.compiled(keys, {}, arrays))
    run_s = time.perf_counter() - ts
    ok = np.asarray(ok)
    if not ok.all():
        bad = [(names[k], int(c)) for k, c in np.argwhere(~ok)]
        raise RuntimeError(f"(data set, chain) {bad}: no finite log density at the starting point.")
    stats = dict(stats)
    warmup_steps = np.asarray(stats.pop(nuts.WARMUP_STEPS))  # [K, chain]
    stats["tree_depth"] = (np.floor(np.log2(np.maximum(stats["n_steps"], 1))) + 1).astype(np.int64)
    latent_sites = entry.info["latent_sites"]

    # post-processing on the padded data (one compiled program each), then cut per data set
    tp = time.perf_counter()
    per_k = [{k: v[i] for k, v in samples.items()} for i in range(K)]
    out = {}
    key_pp = jax.random.split(jax.random.fold_in(key, 2), K)
    for i, name in enumerate(names):
        data_i = {**static, **{k: v[i] for k, v in arrays.items()}}
        latent_i = {k: per_k[i][k] for k in latent_sites}
        loglik = nuts.pointwise_log_likelihood(masked, latent_i, data_i)
        observed = infos[i].observed
        pp = posterior_predictive_draws(key_pp[i], masked, latent_i, data_i, observed) if posterior_predictive else None
        n = sizes[i]
        loglik = {k: cut_padding(v, n, n_max) for k, v in loglik.items()}
        pp = {k: cut_padding(v, n, n_max) for k, v in pp.items()} if pp else None
        run = nuts.NutsRun(samples=per_k[i], stats={k: v[i] for k, v in stats.items()}, latent_sites=latent_sites,
                         chain_method="vectorized", devices=1, compile_s=compile_s, run_s=run_s, cache_hit=hit,
                         warmup_steps=warmup_steps[i])
        tree = to_datatree(run, loglik, pp, None, infos[i], dims, coords)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            diag = diagnose(tree, emit=True, max_tree_depth=max_tree_depth, latent=latent_sites)
        for w in caught:
            warnings.warn(f"{name}: {w.message}", FitWarning, stacklevel=2)
        recorded = sampler_settings(
            num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains, chain_method="vectorized",
            chain_method_requested="vectorized", devices=1, target_accept=target_accept,
            max_tree_depth=max_tree_depth, dense_mass=dense_mass, init=init, prior_predictive=0,
            batched=K, padded_to=int(n_max), n_trials=int(n))
        attrs = provenance_attrs(
            name=label, info=infos[i], data=datasets[i], rng_key=rng_key, settings=recorded, nuts=run,
            diagnostics=diag, wall_time_s=float("nan"), postprocessing_time_s=float("nan"), dataset=name)
        tree.attrs.update(attrs.items())
        tree.attrs["padding"] = json.dumps(
            {"reason": "pad names no arrays"} if not pad
            else {"n_trials": int(n), "padded_to": int(n_max), "arrays": list(pad)} if n < n_max
            else {"n_trials": int(n), "padded_to": int(n), "reason": "the largest data set"})
        out[name] = tree
    wall = time.perf_counter() - t0
    for tree in out.values():  # the batch's, known only now
        tree.attrs["wall_time_s"] = float(wall)
        tree.attrs["postprocessing_time_s"] = float(time.perf_counter() - tp)
    return out
