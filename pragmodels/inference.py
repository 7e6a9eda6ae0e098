"""``fit``: NUTS over a NumPyro model, returned as an ArviZ ``DataTree`` with provenance.

Layering: imports ``numpyro.infer`` (never ``numpyro.sample``), ``arviz_base`` and
:mod:`pragmodels.likelihoods`, :mod:`pragmodels.diagnostics`, :mod:`pragmodels.multistart`,
:mod:`pragmodels.results_io`.

A model is a plain Python function ``model(**data)`` whose observation sites come from
:mod:`pragmodels.likelihoods`. It may carry two optional attributes used for provenance:
``model.name`` (str) and ``model.priors`` (``{parameter: Prior}``), which the factories in
:mod:`pragmodels.rsa_models` set.
"""

from __future__ import annotations

import functools
import json
import platform
import time
import warnings
from datetime import datetime, timezone
from importlib.metadata import version as _pkg_version

import jax
import numpy as np
import numpyro
from numpyro.infer import MCMC, NUTS, init_to_median, init_to_uniform

from pragmodels.diagnostics import FitDiagnosticsError, FitWarning, diagnose
from pragmodels.multistart import multistart_inits
from pragmodels.params import inspect_model, with_priors
from pragmodels.predictive import posterior_predictive as _posterior_predictive
from pragmodels.results_io import data_hash, save_netcdf

__all__ = ["fit", "CHAIN_METHODS"]

CHAIN_METHODS = ("parallel", "vectorized", "sequential")
_MCMC_CACHE: dict = {}


def _as_key(rng_key):
    if isinstance(rng_key, (int, np.integer)):
        return jax.random.key(int(rng_key)), int(rng_key)
    if isinstance(rng_key, jax.Array):
        return rng_key, np.asarray(jax.random.key_data(rng_key) if jax.dtypes.issubdtype(
            rng_key.dtype, jax.dtypes.prng_key) else rng_key).tolist()
    raise TypeError(f"rng_key must be an int seed or a jax PRNG key; got {type(rng_key).__name__}.")


def _validate_data(data) -> dict:
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict of model keyword arguments; got {type(data).__name__}.")
    out = {}
    for k, v in data.items():
        if v is None or isinstance(v, (int, float, bool, str)):
            out[k] = v
            continue
        arr = np.asarray(v)
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            idx = tuple(int(i) for i in np.argwhere(np.isnan(arr))[0])
            raise ValueError(f"data[{k!r}]{list(idx)} is NaN; drop or impute missing values explicitly.")
        out[k] = v
    return out


def _pick_chain_method(chain_method: str, num_chains: int) -> str:
    if chain_method not in CHAIN_METHODS:
        raise ValueError(f"chain_method must be one of {CHAIN_METHODS}; got {chain_method!r}.")
    if chain_method == "parallel" and jax.local_device_count() < num_chains:
        # numpyro would warn and silently run sequentially; vectorised chains use the cores (or
        # the one GPU) better. The choice is recorded in the provenance attributes.
        return "vectorized"
    return chain_method


def fit(
    rng_key,
    model,
    data: dict,
    *,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    num_chains: int = 4,
    chain_method: str = "parallel",
    target_accept: float = 0.8,
    max_tree_depth: int = 10,
    dense_mass=False,
    init: str = "median",
    progress_bar: bool = True,
    dims: dict | None = None,
    coords: dict | None = None,
    posterior_predictive: bool = True,
    name: str | None = None,
    priors: dict | None = None,
    out=None,
    strict: bool = False,
):
    """Fit ``model(**data)`` with NUTS and return an ArviZ ``DataTree``.

    Parameters
    ----------
    rng_key : int or jax PRNG key
        Explicit seed; recorded in the provenance attributes.
    model : callable
        NumPyro model; observation sites must come from :mod:`pragmodels.likelihoods`.
    data : dict
        Keyword arguments of the model (arrays are passed as arguments, not jit constants).
    dense_mass : bool or list of tuples of site names
        NUTS mass matrix: diagonal (False), dense (True) or dense blocks, e.g.
        ``[("beta", "alpha")]`` for strongly correlated parameters.
    init : {"median", "uniform", "optimize"}
        Where chains start: near the prior medians (default; keeps, e.g., a lapse rate from
        starting near 1 where the likelihood is flat and a chain can stall), NumPyro's
        uniform draws in (-2, 2) on the unconstrained scale, or ``"optimize"``: 16 uniform
        starts each take 2000 Adam steps on the log density and the chains start spread over
        the best basin found (:mod:`pragmodels.multistart`; for posteriors with a dominant mode
        that warm-up does not reliably reach). Where every start ended is recorded in the
        ``init_optima`` attribute. Use it with non-centred hierarchies only: a centred one has
        no joint mode and the optimiser walks into its scale-to-zero funnel.
    chain_method : {"parallel", "vectorized", "sequential"}
        ``parallel`` uses one device per chain (CPU cores via ``PRAGMODELS_HOST_DEVICES``, or
        GPUs); with fewer devices than chains it runs them ``vectorized`` instead (recorded in
        ``sampler_settings``).
    dims, coords : dict, optional
        Extra ArviZ dims/coords; plate names already name the batch dims.
    out : path, optional
        Write the result to this netCDF file atomically, only after the fit succeeded (and,
        with ``strict=True``, only if its diagnostics pass).
    strict : bool
        Raise :class:`~pragmodels.diagnostics.FitDiagnosticsError` instead of warning.

    Returns
    -------
    xarray.DataTree
        Groups posterior, sample_stats, log_likelihood, posterior_predictive, observed_data;
        root attributes hold the provenance (data hash, model, priors, sampler settings, seed,
        versions, diagnostics, wall time).
    """
    from arviz_base import from_numpyro

    key, seed_repr = _as_key(rng_key)
    data = _validate_data(data)
    model_name = name or getattr(model, "name", None) or getattr(model, "__name__", repr(model))
    # one eager trace: validates the data and the prior overrides by name, and records the priors,
    # fixed values and dims actually in force (provenance is read from here, not from a list)
    info = inspect_model(model, data, priors)
    if priors:
        model = with_priors(model, priors)
    observed = info.observed
    if not observed:
        raise ValueError("the model has no observed sites: pass the observations in `data`.")
    method = _pick_chain_method(chain_method, num_chains)
    if method != chain_method:
        warnings.warn(f"chain_method={chain_method!r} asked for {num_chains} chains on {jax.local_device_count()} "
                      f"device(s); running them {method!r} instead (recorded in sampler_settings). For one CPU "
                      "device per chain call pragmodels.configure_host_devices() before JAX starts.",
                      FitWarning, stacklevel=2)
    inits = {"median": init_to_median(num_samples=15), "uniform": init_to_uniform(),
             "optimize": init_to_uniform()}  # "optimize" passes explicit init_params to run()
    if init not in inits:
        raise ValueError(f"init must be one of {sorted(inits)}; got {init!r}.")
    settings = dict(
        sampler="NUTS", num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
        chain_method=method, target_accept=target_accept, max_tree_depth=max_tree_depth,
        dense_mass=dense_mass if isinstance(dense_mass, bool) else [list(b) for b in dense_mass],
        init=init, chain_method_requested=chain_method,
    )
    # Python scalars (sizes, flags) stay static; arrays are traced jit arguments, so a compiled
    # kernel is reused by later fits with the same shapes and the same static values.
    static = {k: v for k, v in data.items() if v is None or isinstance(v, (int, float, bool, str))}
    arrays = {k: v for k, v in data.items() if k not in static}
    # numpyro's MCMC keeps per-shape state between runs: a kernel is reused only for the same
    # array shapes and dtypes (reusing it for another data size fails inside vmap)
    shapes = tuple(sorted((k, np.shape(v), str(np.asarray(v).dtype)) for k, v in arrays.items()))
    cache_key = (model, tuple(sorted(static.items())), shapes, json.dumps(settings), progress_bar)
    cached = _MCMC_CACHE.get(cache_key)
    if cached is None:
        bound = functools.partial(model, **static)  # one object per cache entry, so jitted helpers reuse it
        kernel = NUTS(bound, target_accept_prob=target_accept,
                      max_tree_depth=max_tree_depth, dense_mass=dense_mass, init_strategy=inits[init])
        mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                    chain_method=method, progress_bar=progress_bar, jit_model_args=True)
        cached = _MCMC_CACHE[cache_key] = (mcmc, bound)
    mcmc, bound = cached
    t0 = time.perf_counter()
    key_mcmc, key_pp = jax.random.split(key)
    init_params, optima = None, None
    if init == "optimize":
        key_mcmc, key_init = jax.random.split(key_mcmc)
        found = multistart_inits(key_init, bound, arrays, num_chains)
        init_params, optima = (found.init_params if num_chains > 1 else jax.tree.map(lambda x: x[0], found.init_params),
                               found.summary())
    mcmc.run(key_mcmc, **arrays, init_params=init_params,
             extra_fields=("diverging", "num_steps", "accept_prob", "energy"))
    pp = None
    if posterior_predictive:
        samples = mcmc.get_samples(group_by_chain=True)
        pp = _posterior_predictive(key_pp, model, samples, data, observed)
    all_dims = {k: info.named_dims(k) for k in info.dims if info.dims[k]}
    all_dims.update(dims or {})
    tree = from_numpyro(mcmc, posterior_predictive=pp, log_likelihood=True, dims=all_dims, coords=coords)
    wall = time.perf_counter() - t0
    diag = diagnose(tree, emit=not strict, max_tree_depth=max_tree_depth)
    from pragmodels import __version__

    tree.attrs.update(
        pragmodels_version=__version__,
        jax_version=jax.__version__,
        numpyro_version=numpyro.__version__,
        arviz_base_version=_pkg_version("arviz-base"),
        python_version=platform.python_version(),
        backend=jax.default_backend(),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        model=str(model_name),
        priors=json.dumps(info.priors_record()),
        sampler_settings=json.dumps(settings),
        seed=json.dumps(seed_repr),
        data_sha256=data_hash(data),
        observed_sites=json.dumps(observed),
        wall_time_s=float(wall),
        diagnostics=json.dumps(diag.as_attrs()),
        diagnostics_ok=int(diag.ok),
        init_optima=json.dumps(optima),
    )
    if strict and not diag.ok:
        raise FitDiagnosticsError("; ".join(diag.problems))
    if out is not None:
        save_netcdf(tree, out)
    return tree
