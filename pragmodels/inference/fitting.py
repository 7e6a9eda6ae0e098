"""``fit``: NUTS over a NumPyro model, returned as an ArviZ ``DataTree`` with provenance.

Layering: imports :mod:`pragmodels.params` (one eager trace: priors, dims, observed sites),
:mod:`pragmodels.inference.nuts` (the compiled NUTS program), :mod:`pragmodels.inference.predictive`,
:mod:`pragmodels.inference.multistart`, :mod:`pragmodels.inference.diagnostics`,
:mod:`pragmodels.inference.provenance`, :mod:`pragmodels.io.netcdf` and ``arviz_base``. Never ``numpyro.sample``.

:func:`fit` takes any NumPyro model (parameters declared with :func:`pragmodels.param` have their
priors and dims recorded and can be overridden by name) and returns the posterior, sample
statistics, pointwise log-likelihood, posterior predictive and observed data. Finished chains are
never lost: when a step after sampling fails, the result keeps at least the posterior with a
:class:`PostprocessingWarning` (:class:`FitPostprocessingError` with ``strict=True``), and a failed
save raises :class:`~pragmodels.io.errors.ResultSaveError` with the tree on it. What a fit holds
and how it fails: the docs page *Fitting and checking*.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import traceback
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal

import jax
import numpy as np
import xarray as xr
from jax.flatten_util import ravel_pytree

from pragmodels.inference.basins import (
    BASIN_NATS,
    Basin,
    FlatPotential,
    barriers,
    chain_inits,
    combine,
    disagreements,
    find_basins,
    log_masses,
    merge_connected,
    merge_mixed,
    merge_threshold,
    summarise,
    take,
)
from pragmodels.inference.compile_cache import bound_model, split_data
from pragmodels.inference.diagnostics import RHAT_MAX, Diagnostics, FitDiagnosticsError, FitWarning, diagnose
from pragmodels.inference.multistart import multistart_inits
from pragmodels.inference.nuts import (
    CHAIN_METHODS,
    MASS_MATRICES,
    ChainMethod,
    MassMatrix,
    NutsRun,
    as_rng_key,
    dense_mass_key,
    one_device_chain_method,
    pointwise_log_likelihood,
    run_nuts,
)
from pragmodels.inference.padding import cut_padding, plan_padding, worth_padding
from pragmodels.inference.predictive import (
    posterior_predictive as _posterior_predictive,
    prior_predictive_draws,
)
from pragmodels.inference.provenance import (
    model_name,
    provenance_attrs,
    sampler_settings,
)
from pragmodels.io.errors import ResultSaveError
from pragmodels.io.netcdf import save_netcdf
from pragmodels.params import ModelInfo, inspect_model, with_priors
from pragmodels.validation import check_one_of

__all__ = ["fit", "default_chain_method", "CHAIN_METHODS", "PostprocessingWarning", "FitPostprocessingError", "validate_data",
           "check_settings", "check_dense_mass", "to_datatree"]


class PostprocessingWarning(FitWarning):
    """Sampling finished but a step after it failed; the result keeps the posterior and
    sample_stats, and the error is recorded in ``tree.attrs["postprocessing_error"]``."""


class FitPostprocessingError(FitDiagnosticsError):
    """Raised by ``fit(..., strict=True)`` when a step after sampling failed; nothing is written
    to disk. The partial result (posterior and sample_stats at least) is on :attr:`tree`."""

INITS = ("median", "uniform", "optimize", "basins")
#: the inits whose chains start at optimised end points (modes): multistart, and mass_matrix="laplace" allowed
OPTIMISED_INITS = ("optimize", "basins")
Init = Literal["median", "uniform", "optimize", "basins"]


def validate_data(data: object) -> dict[str, Any]:
    """Reject NaN and +inf in any numeric data array, by name and index (-inf is allowed: it is
    log 0 in log-space inputs such as ``log_semantics``).

    Parameters
    ----------
    data : dict
        A model's keyword arguments (as for :func:`fit`).

    Returns
    -------
    dict
        The same values, in a new dict.

    Raises
    ------
    TypeError
        ``data`` is not a mapping.
    ValueError
        A NaN or +inf, named by key and index.
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"data must be a dict of model keyword arguments; got {type(data).__name__}.")
    out = {}
    for k, v in data.items():
        if v is None or isinstance(v, (int, float, bool, str)):
            if isinstance(v, float) and (np.isnan(v) or v == np.inf):
                raise ValueError(f"data[{k!r}] = {v!r}; expected a finite number (or -inf).")
            out[k] = v
            continue
        arr = np.asarray(v)
        if arr.dtype.kind in "fc":
            bad = np.isnan(arr) | (arr == np.inf)
            if bad.any():
                idx = tuple(int(i) for i in np.argwhere(bad)[0])
                raise ValueError(f"data[{k!r}]{list(idx)} = {arr[idx]!r}; NaN and +inf are not valid data "
                                 "(drop or impute missing values explicitly; -inf is log 0).")
        out[k] = v
    return out


def default_chain_method() -> ChainMethod:
    """``fit``'s ``chain_method`` when none is given: ``"parallel"`` where JAX has several devices
    (:func:`pragmodels.configure_host_devices`, or GPUs); on one device
    :func:`~pragmodels.inference.nuts.one_device_chain_method`: ``"vectorized"`` on a GPU or other
    accelerator (one kernel launch per operation for all chains), ``"sequential"`` on a CPU (one chain's
    program, compiled once and run per chain, compiles faster than the chains under ``vmap`` and runs no
    slower, as no chain waits for the longest trajectory of the others; ``benchmarks/results/chain_method.md``).

    Returns
    -------
    {"parallel", "vectorized", "sequential"}
    """
    if jax.local_device_count() > 1:
        return "parallel"
    return one_device_chain_method()


def check_settings(num_warmup: object, num_samples: object, num_chains: object, chain_method: object,
                   target_accept: object, max_tree_depth: object, init: object) -> None:
    """Reject sampler settings of the wrong type or range, naming the argument.

    Parameters
    ----------
    num_warmup, num_samples, num_chains, chain_method, target_accept, max_tree_depth, init
        As for :func:`fit` (``chain_method`` resolved: not None).

    Raises
    ------
    ValueError
        The first setting out of type or range.
    """
    for name, value, low in (("num_warmup", num_warmup, 0), ("num_samples", num_samples, 1),
                             ("num_chains", num_chains, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    check_one_of("chain_method", chain_method, CHAIN_METHODS)
    if isinstance(target_accept, bool) or not isinstance(target_accept, (int, float)) or not 0 < target_accept < 1:
        raise ValueError(f"target_accept must be a number in (0, 1); got {target_accept!r}.")
    if isinstance(max_tree_depth, bool) or not isinstance(max_tree_depth, (int, np.integer)) or max_tree_depth < 1:
        raise ValueError(f"max_tree_depth must be an integer >= 1; got {max_tree_depth!r}.")
    check_one_of("init", init, list(INITS))


def check_mass_matrix(mass_matrix: object, init: object) -> None:
    """``mass_matrix`` must be one of :data:`~pragmodels.inference.nuts.MASS_MATRICES`, and
    ``"laplace"`` needs starts at a mode (``init`` ``"optimize"`` or ``"basins"``).

    Parameters
    ----------
    mass_matrix, init
        As for :func:`fit`.

    Raises
    ------
    ValueError
        Naming the value and what was expected.
    """
    check_one_of("mass_matrix", mass_matrix, MASS_MATRICES)
    if mass_matrix == "laplace" and init not in OPTIMISED_INITS:
        raise ValueError(f"mass_matrix='laplace' takes the mass matrix from the curvature at each chain's start, "
                         f"which must be a mode: it needs init='optimize' or 'basins'; got init={init!r}.")


def check_dense_mass(dense_mass: object, info: ModelInfo) -> None:
    """Every site a ``dense_mass`` block names is a sampled latent site of the model.

    Parameters
    ----------
    dense_mass : bool or list of tuples of site names
        As for :func:`fit`.
    info : ModelInfo
        The model's eager trace (:func:`pragmodels.params.inspect_model`).

    Raises
    ------
    ValueError
        A block names a site that is not sampled (unknown, observed, deterministic or fixed); the
        message names it and lists the sampled sites.
    """
    blocks = dense_mass_key(dense_mass)  # a TypeError for anything but a bool or blocks of names
    if isinstance(blocks, bool):
        return
    sampled = [k for k in info.latent if k not in info.fixed]
    unknown = [site for block in blocks for site in block if site not in sampled]
    if unknown:
        raise ValueError(f"dense_mass names {unknown}, which the model does not sample; its sampled sites "
                         f"are {sampled}.")


def to_datatree(run: NutsRun, loglik: dict[str, np.ndarray], pp: dict[str, np.ndarray] | None,
                 prior: dict[str, np.ndarray] | None, info: ModelInfo, dims: Mapping[str, list[str]] | None,
                 coords: Mapping[str, Any] | None, named: bool = True) -> xr.DataTree:
    """The ArviZ DataTree of a NUTS run and what was computed from its draws (no attributes yet).

    Shapes: ``run.samples [chain, draw, *site dims]``, ``loglik`` and ``pp [chain, draw, *obs dims]``,
    ``prior {site: [draw, ...]}`` (given a chain axis of 1 here).

    Parameters
    ----------
    run : NutsRun
        The draws and sampler statistics.
    loglik, pp : dict of np.ndarray
        Pointwise log-likelihood and posterior predictive draws by observed site (empty or None:
        no such group).
    prior : dict of np.ndarray or None
        Prior draws of every site (split into ``prior`` and ``prior_predictive``).
    info : ModelInfo
        The model's eager trace: observed values and declared dims.
    dims, coords : dict, optional
        Extra ArviZ dims and coords, as for :func:`fit`.
    named : bool
        False leaves out every dim and coord name (ArviZ's defaults: the fallback when the
        names are what fails).

    Returns
    -------
    xarray.DataTree
    """
    from arviz_base import from_dict

    groups: dict[str, dict[str, np.ndarray]] = {
        "posterior": run.samples,
        "sample_stats": run.stats,
        "observed_data": {k: np.asarray(v) for k, v in info.observed_values.items()},
    }
    if loglik:
        groups["log_likelihood"] = loglik
    if pp:
        groups["posterior_predictive"] = pp
    if prior:
        groups["prior"] = {k: v[None] for k, v in prior.items() if k not in info.observed}
        groups["prior_predictive"] = {k: v[None] for k, v in prior.items() if k in info.observed}
    if not named:
        return from_dict(groups)
    all_dims = info.arviz_dims(dims)
    sample_dims: dict[str, list[str]] = {k: [] for k in run.stats}
    return from_dict(groups, dims={**all_dims, **sample_dims}, coords=coords)


def _raw_tree(run: NutsRun) -> xr.DataTree:
    """posterior and sample_stats only, built with xarray alone (the last fallback)."""
    def dataset(values: Mapping[str, np.ndarray]) -> xr.Dataset:
        variables = {}
        for k, v in values.items():
            arr = np.asarray(v)
            variables[k] = (("chain", "draw", *(f"{k}_dim_{i}" for i in range(arr.ndim - 2))), arr)
        return xr.Dataset(variables)

    return xr.DataTree.from_dict({"posterior": dataset(run.samples), "sample_stats": dataset(run.stats)})


class _Steps:
    """Runs the steps after sampling, recording instead of raising what fails."""

    def __init__(self) -> None:
        self.errors: dict[str, str] = {}
        self.tracebacks: list[str] = []

    def attempt(self, step: str, fn: Callable[[], Any], default: Any = None) -> Any:
        try:
            return fn()
        except Exception as e:  # KeyboardInterrupt and SystemExit pass
            self.record(step, e)
            return default

    def record(self, step: str, error: Exception) -> None:
        self.errors[step] = f"{type(error).__name__}: {error}"
        self.tracebacks.append(f"{step}:\n" + "".join(traceback.format_exception(error)))


def _predictive_shapes(pp: dict[str, np.ndarray] | None, info: ModelInfo) -> dict[str, np.ndarray] | None:
    """The posterior predictive, each site checked to replicate its observations' shape: a distribution whose
    shape is smaller than its observations (``Normal(mu, s)`` scoring a vector, no plate) scores every
    observation but draws one value. Shapes: ``pp[site] [chain, draw, *obs]``."""
    for k, v in (pp or {}).items():
        want = np.shape(info.observed_values[k])
        if v.shape[2:] != want:
            raise ValueError(f"observed site {k!r}: its distribution draws shape {v.shape[2:]} but its observations have "
                             f"shape {want}, so it cannot replicate them; declare the observations' axes "
                             "(a numpyro.plate over them, or dist.expand(...)).")
    return pp


def _weigh_basins(rng_key: jax.Array, bound: Callable[..., Any], arrays: Mapping[str, Any], run: NutsRun,
                  basins: list[Basin], max_tree_depth: int) -> tuple[list[Basin], Diagnostics]:
    """Merge basins whose chains mixed, estimate their masses, diagnose each; the basins and the
    diagnostics of all of them (a problem of any basin, and disagreements between heavy ones)."""
    basins = merge_mixed(basins, run.latent)
    log_masses(rng_key, bound, arrays, basins, run.latent, run.stats["lp"])
    summarise(basins, run.latent)
    problems, parts = [], []
    for k, b in enumerate(basins):
        sub = dataclasses.replace(run, samples={n: v[b.chains] for n, v in run.samples.items()},
                                  stats={n: v[b.chains] for n, v in run.stats.items()})
        d = diagnose(_raw_tree(sub), emit=False, max_tree_depth=max_tree_depth, latent=run.latent_sites)
        b.diagnostics = {**d.as_attrs(), "ok": int(d.ok)}
        parts.append(d)
        problems += [f"basin {k} (weight {b.weight:.2f}): {p}" for p in d.problems]
        if d.max_rhat > RHAT_MAX and b.pieces > 1:
            problems.append(f"basin {k} was joined from {b.pieces} basins before sampling (no pass between their "
                            "optima above the chains' energies) and its chains, started in each, did not mix: "
                            "fit with basin_merge=False to sample them apart and weigh them by their masses")
    problems += [f"{m}: the posterior has separated modes that answer differently" for m in disagreements(basins)]
    diag = Diagnostics(divergences=sum(d.divergences for d in parts),
                       max_rhat=_finite(max, [d.max_rhat for d in parts]),
                       min_ess_bulk=_finite(min, [d.min_ess_bulk for d in parts]),
                       min_ess_tail=_finite(min, [d.min_ess_tail for d in parts]),
                       num_chains=run.num_chains, problems=problems)
    return basins, diag


def _finite(pick: Callable[[list[float]], float], values: list[float]) -> float:
    """``pick`` of the values that are not NaN; NaN where all are (one chain per basin has no r_hat: each
    basin's own diagnostics already say so), without numpy's all-NaN warning."""
    kept = [float(v) for v in values if not math.isnan(float(v))]
    return pick(kept) if kept else math.nan


def fit(
    rng_key: int | jax.Array,
    model: Callable[..., Any],
    data: Mapping[str, Any],
    *,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    num_chains: int = 4,
    chain_method: ChainMethod | None = None,
    target_accept: float = 0.8,
    max_tree_depth: int = 10,
    dense_mass: bool | list[tuple[str, ...]] = False,
    init: Init = "median",
    progress_bar: bool = True,
    dims: Mapping[str, list[str]] | None = None,
    coords: Mapping[str, Any] | None = None,
    posterior_predictive: bool = True,
    prior_predictive: int = 0,
    name: str | None = None,
    priors: Mapping[str, Any] | None = None,
    out: str | os.PathLike[str] | None = None,
    strict: bool = False,
    pad_trials: bool | Literal["always"] = True,
    basin_nats: float = BASIN_NATS,
    basin_merge: bool = True,
    mass_matrix: MassMatrix = "adapt",
) -> xr.DataTree:
    """Fit ``model(**data)`` with NUTS and return an ArviZ ``DataTree``.

    Shapes: ``data`` arrays with the model's axes -> ``posterior [chain, draw, *site dims]``,
    ``log_likelihood`` and ``posterior_predictive [chain, draw, *obs dims]`` (see Returns).

    Parameters
    ----------
    rng_key : int or jax PRNG key
        Explicit seed; recorded in the provenance attributes.
    model : callable
        NumPyro model (parameters declared with :func:`pragmodels.param`, or plain
        ``numpyro.sample`` sites).
    data : dict
        Keyword arguments of the model, each array with the axes the model expects (e.g.
        ``log_semantics [utterance, state]``, ``choice [trial]``). Arrays are traced arguments (a later fit with new
        values of the same shapes reuses the compiled program); Python scalars and strings are
        static. NaN and +inf are rejected by name.
    priors : dict, optional
        Prior overrides by parameter name: a :class:`~pragmodels.Prior`, a spec
        ``{"family": ..., ...}`` or a number (fixes a declared parameter). A name the model does
        not have is an error that suggests the nearest one. The priors actually sampled are
        recorded in ``tree.attrs["priors"]``.
    dense_mass : bool or list of tuples of site names
        NUTS mass matrix: diagonal (False), dense (True) or dense blocks, e.g.
        ``[("beta", "alpha")]`` for strongly correlated parameters.
    mass_matrix : {"adapt", "laplace"}
        How its values are set. ``"adapt"`` (default): NumPyro's (Stan's) windowed adaptation
        during warm-up, from the identity. ``"laplace"``: the inverse Hessian of the log density at
        each chain's start for the first two thirds of warm-up, then one re-estimate from those
        draws; the step size adapts throughout (:mod:`pragmodels.inference.laplace_mass`). It needs
        starts at a mode, ``init="optimize"`` or ``"basins"``, and at most 2,000 unconstrained
        values. Where the posterior is close to Gaussian it needs a fraction of the warm-up
        (benchmarks/results/warmup.md); where it is not (two modes of a parameter, funnels) the
        diagnostics say so, and ``"adapt"`` is the safer choice.
    init : {"median", "uniform", "optimize", "basins"}
        Where chains start: near the prior medians (default; keeps, e.g., a lapse rate from
        starting near 1 where the likelihood is flat and a chain can stall), NumPyro's
        uniform draws in (-2, 2) on the unconstrained scale, or ``"optimize"``: 16 uniform
        starts each take 2000 Adam steps on the log density and the chains start spread over
        the best basin found (:mod:`pragmodels.inference.multistart`; for posteriors with a dominant mode
        that warm-up does not reliably reach). Where every start ended is recorded in the
        ``init_optima`` attribute. Use it with non-centred hierarchies only: a centred one has
        no joint mode and the optimiser walks into its scale-to-zero funnel. ``"basins"``: the
        same starts, grouped into basins by place and then by the barrier between them (optima joined
        by a path that rises less than the chains' typical energies are one basin); ``num_chains`` chains start in
        each basin within ``basin_nats`` of the best (at most 4), and the result combines the basins by their
        posterior mass, estimated by bridge sampling (:mod:`pragmodels.inference.basins`; the
        basins, weights and per-basin diagnostics are in ``attrs["basins"]``).
    basin_nats : float
        With ``init="basins"``: basins whose optimum lies within this many nats of the best get
        chains (default 10).
    basin_merge : bool
        With ``init="basins"``: join basins that no pass separates before sampling (default). A
        joined basin's chains start in each of its pieces, so r_hat within it reports a pass too
        narrow to cross; ``False`` gives every basin found by place chains of its own.
    chain_method : {None, "parallel", "vectorized", "sequential"}
        ``parallel`` splits the chains over the CPU devices (see
        :func:`pragmodels.configure_host_devices`) or GPUs that divide them evenly, vectorised
        within a device; where they cannot split the chains (one device, or 3 chains on 2) the chains run
        as on one device (:func:`~pragmodels.inference.nuts.one_device_chain_method`: ``sequential`` on a
        CPU, ``vectorized`` on a GPU). When the chains run otherwise than asked ``fit`` warns and records
        both in ``sampler_settings``.
        ``None`` (default): :func:`default_chain_method`, without a warning.
    dims, coords : dict, optional
        Extra ArviZ dims (``{site: [dim, ...]}``) and coords (``{dim: labels}``); declared dims and
        plate names already name the axes.
    posterior_predictive : bool
        Add a ``posterior_predictive`` group: a fresh draw of every observed site per
        posterior draw (:class:`pragmodels.inference.predictive.unobserve`).
    prior_predictive : int
        With ``n > 0``, add ``prior`` and ``prior_predictive`` groups of ``n`` prior draws.
    out : path, optional
        Write the result to this netCDF file atomically (with a checksum:
        :func:`pragmodels.save_netcdf`), only after the fit succeeded (and, with
        ``strict=True``, only if its diagnostics pass). If the save fails,
        :class:`~pragmodels.io.errors.ResultSaveError` is raised with the result on its ``.tree``.
    strict : bool
        Raise :class:`~pragmodels.inference.diagnostics.FitDiagnosticsError` instead of warning (a
        :class:`FitPostprocessingError` when a step after sampling failed); the result is on the
        exception's ``.tree``.
    pad_trials : bool or "always"
        Once a model meets a second data size in this process, pad the per-trial arrays to the next
        size of 8, 12, 16, 24, 32, 48, ... and mask the padding (:mod:`pragmodels.inference.padding`),
        so that fits to data sets of different sizes share their compiled programs (and memory).
        Done only where a check shows it changes no site's shape and not the log density; the result
        never holds padding, and ``tree.attrs["padding"]`` says what was padded or why not. The draws
        differ from an unpadded fit's only as two seeds do. ``"always"``: pad from the first fit
        (:func:`~pragmodels.fit_many` passes it to the fits of a model it runs at several sizes, whose
        workers would otherwise each compile the first size they meet unpadded as well).

    Returns
    -------
    xarray.DataTree
        Groups posterior ``[chain, draw, *site dims]``, sample_stats ``[chain, draw]``,
        log_likelihood and posterior_predictive ``[chain, draw, *obs dims]``, observed_data
        ``[*obs dims]`` (and prior, prior_predictive ``[chain=1, draw=n, ...]``); root attributes
        hold the provenance (data hash, model, priors as sampled, sampler settings, seed, versions,
        diagnostics, wall and compile time). If a step after sampling failed, the groups it
        would have made are missing and ``attrs["postprocessing_error"]`` says why (with a
        :class:`PostprocessingWarning`).
    """
    t_start = time.perf_counter()
    key = as_rng_key(rng_key)
    asked = chain_method
    if chain_method is None:
        chain_method = default_chain_method()
    check_settings(num_warmup, num_samples, num_chains, chain_method, target_accept, max_tree_depth, init)
    check_mass_matrix(mass_matrix, init)
    if not (isinstance(pad_trials, bool) or pad_trials == "always"):
        raise ValueError(f"pad_trials must be True, False or 'always'; got {pad_trials!r}.")
    data = validate_data(data)
    label = model_name(model, name)
    # one eager trace: validates the data and the prior overrides by name, and records the priors,
    # fixed values and dims actually in force (provenance is read from here, not from a list)
    info = inspect_model(model, data, priors)
    check_dense_mass(dense_mass, info)
    if priors:
        model = with_priors(model, priors)
    observed = info.observed
    if not observed:
        raise ValueError("the model has no observed sites: pass the observations in `data`.")

    # the model and data the programs run on: padded to a size bucket where that changes nothing
    seen_before = worth_padding(model, data) if pad_trials is not False else False  # records this size too
    pad = pad_trials == "always" or (pad_trials is True and seen_before)
    plan = plan_padding(model, data, info.observed_values) if pad else None
    run_model, run_data = (plan.model, plan.data) if plan is not None and plan.padded else (model, data)

    def cut(draws: dict[str, np.ndarray] | None) -> dict[str, np.ndarray] | None:
        if draws is None or plan is None or not plan.padded:
            return draws
        return {k: cut_padding(v, plan.n, plan.padded_to) for k, v in draws.items()}

    key_mcmc, key_pp = jax.random.split(key)
    init_params, optima, basins, found_by_place, barrier, threshold = None, None, None, None, None, None
    static, arrays = split_data(run_data)
    if init in OPTIMISED_INITS:
        key_mcmc, key_init = jax.random.split(key_mcmc)
        bound = bound_model(run_model, static)
        found = multistart_inits(key_init, bound, arrays, num_chains)
        init_params, optima = found.init_params, found.summary()
        if init == "basins":
            basins = find_basins(found.end_params, found.potentials, nats=basin_nats)
            point = {k: v[0] for k, v in found.end_params.items()}
            found_by_place = [b.record() for b in basins]
            if basin_merge:
                threshold = merge_threshold(int(ravel_pytree(point)[0].size))
                barrier = barriers(FlatPotential.of(bound, point), found.end_params, basins, enough=threshold,
                                   args=(arrays,))
                basins = merge_connected(basins, barrier, threshold)
            init_params, _ = chain_inits(basins, found.end_params, num_chains)
    run = run_nuts(key_mcmc, run_model, run_data, num_warmup=num_warmup, num_samples=num_samples,
                   num_chains=num_chains * (len(basins) if basins else 1), chain_method=chain_method,
                   target_accept=target_accept, max_tree_depth=max_tree_depth, dense_mass=dense_mass,
                   init="uniform" if init in OPTIMISED_INITS else init,  # type: ignore[arg-type]
                   init_params=init_params,
                   progress_bar=progress_bar, mass_matrix=mass_matrix)
    ran = run.chain_method
    if asked is not None and ran != asked and not (num_chains == 1 and ran == "single"):
        warnings.warn(f"chain_method={chain_method!r} asked for {num_chains} chains on {jax.local_device_count()} "
                      f"device(s); they ran {ran!r} instead (recorded in sampler_settings). For one CPU device "
                      "per chain call pragmodels.configure_host_devices() before JAX starts.",
                      FitWarning, stacklevel=2)
    # from here on the chains are finished: a failing step is recorded, never allowed to lose them
    t_post = time.perf_counter()
    steps = _Steps()
    loglik = steps.attempt("log_likelihood", lambda: cut(pointwise_log_likelihood(run_model, run, run_data)), {})
    pp = (steps.attempt("posterior_predictive",
                        lambda: _predictive_shapes(cut(_posterior_predictive(key_pp, run_model, run.latent, run_data,
                                                                             observed)), info))
          if posterior_predictive else None)
    basin_diag = None
    if basins is not None:  # the basins' masses, then every chain of the result draws from each by its weight
        by_mass = basins
        weighed = steps.attempt("basins", lambda: _weigh_basins(
            jax.random.fold_in(key, 2), bound_model(run_model, static), arrays, run, by_mass, max_tree_depth))
        index = None
        if weighed is not None:
            basins, basin_diag = weighed
            index = steps.attempt("basins", lambda: combine(run.samples, basins, num_chains, np.random.default_rng(
                int(jax.random.randint(jax.random.fold_in(key, 3), (), 0, 2**31 - 1)))))
        if index is None:  # not weighed: every chain as it ran, diagnosed together (so basins that did not mix show)
            basin_diag = None
        else:
            run = dataclasses.replace(run, samples=take(run.samples, index), stats=take(run.stats, index))
            loglik = take(loglik, index) if loglik else loglik
            pp = take(pp, index) if pp else pp
    prior = None
    if prior_predictive:
        prior = steps.attempt("prior_predictive", lambda: prior_predictive_draws(
            jax.random.fold_in(key, 1), model, data, int(prior_predictive)))
    tree = steps.attempt("conversion", lambda: to_datatree(run, loglik, pp, prior, info, dims, coords))
    if tree is None:  # e.g. dims or coords that do not fit the draws: ArviZ's default names
        tree = steps.attempt("conversion (default dim names)",
                             lambda: to_datatree(run, loglik, pp, prior, info, dims, coords, named=False))
    if tree is None:
        tree = _raw_tree(run)
    post_s = time.perf_counter() - t_post
    wall = time.perf_counter() - t_start
    diag = None
    try:  # called here, not through steps.attempt, so that its warnings point at fit's caller
        if basin_diag is not None:  # each basin's own chains: the combined draws would hide their mixing
            diag = basin_diag
            if not strict:
                for problem in diag.problems:
                    warnings.warn(problem, FitWarning, stacklevel=2)
        else:
            diag = diagnose(tree, emit=not strict, max_tree_depth=max_tree_depth, latent=run.latent_sites)
    except Exception as e:
        steps.record("diagnostics", e)

    def provenance() -> None:
        settings = sampler_settings(
            num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains, chain_method=ran,
            chain_method_requested=asked or "auto", devices=run.devices, target_accept=target_accept,
            max_tree_depth=max_tree_depth, dense_mass=dense_mass, init=init, prior_predictive=prior_predictive,
            mass_matrix=mass_matrix)
        tree.attrs.update(provenance_attrs(
            name=label, info=info, data=data, rng_key=rng_key, settings=settings, nuts=run, diagnostics=diag,
            wall_time_s=wall, postprocessing_time_s=post_s, init_optima=optima))
        tree.attrs["padding"] = json.dumps(
            plan.record() if plan is not None else {"reason": "pad_trials=False"} if not pad_trials
            else {"reason": "the first size of this model in this process (padding starts with a second size)"})
        if basins is not None:
            tree.attrs["basins"] = json.dumps(dict(
                method=("bridge sampling (normal proposal, 4 repeats; unconstrained scale)" if len(basins) > 1
                        else "one basin: weight 1, its mass not estimated"), basin_nats=basin_nats,
                merge_barrier_nats=threshold, basins=[b.record() for b in basins],
                by_place=[dict(potential=b["potential"], starts=b["starts"]) for b in found_by_place or []],
                barriers=np.round(barrier, 3).tolist() if barrier is not None else None))

    steps.attempt("provenance", provenance)
    if steps.errors:
        tree.attrs["postprocessing_error"] = json.dumps(steps.errors)
        tree.attrs["postprocessing_traceback"] = "\n".join(steps.tracebacks)
        message = (f"sampling finished but {', '.join(steps.errors)} failed "
                   f"({'; '.join(f'{k}: {v}' for k, v in steps.errors.items())}); the result keeps the groups "
                   f"{sorted(tree.children)}, and the errors are in its attrs['postprocessing_error'].")
        if strict:
            error = FitPostprocessingError(message + " Nothing was written; the partial result is on this "
                                           "exception's .tree.")
            error.tree = tree
            raise error
        warnings.warn(message, PostprocessingWarning, stacklevel=2)
    if strict and diag is not None and not diag.ok:
        failed = FitDiagnosticsError("; ".join(diag.problems))
        failed.tree = tree
        raise failed
    if out is not None:
        try:
            save_netcdf(tree, out)
        except ResultSaveError as e:
            tree.attrs["save_error"] = str(e)
            raise ResultSaveError(f"{e}. The fit itself finished: its result is on this exception's .tree.",
                                  path=e.path, tree=tree) from e.__cause__
    return tree
