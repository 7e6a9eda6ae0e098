"""The provenance attributes of a fit's ``DataTree``: one builder for ``fit`` and ``fit_batched``.

Layering: imports ``jax``, ``numpyro``, :mod:`pragmodels.version`, :mod:`pragmodels.io.checksums`
(the data hash) and :mod:`pragmodels.inference.nuts` (the key normalisation); :mod:`pragmodels.inference.fitting`
and :mod:`pragmodels.inference.batched` call it.

:func:`provenance_attrs` returns the root attributes that say what was fitted and how (data
hash, model, priors as sampled, sampler settings, seed, versions) and what came of it
(diagnostics, wall, compile, sampling and post-processing times). Values that are not numbers
are JSON strings, as netCDF attributes must be flat.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from importlib.metadata import version as package_version
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
import numpyro

from pragmodels.inference.nuts import as_rng_key
from pragmodels.io.checksums import data_hash

if TYPE_CHECKING:
    from pragmodels.inference.diagnostics import Diagnostics
    from pragmodels.inference.nuts import NutsRun
    from pragmodels.params import ModelInfo

__all__ = ["model_name", "provenance_attrs", "sampler_settings", "seed_record", "versions"]


def versions() -> dict[str, str]:
    """The versions and backend a fit ran with, as DataTree attributes.

    Returns
    -------
    dict of str
        ``pragmodels_version``, ``jax_version``, ``numpyro_version``, ``arviz_base_version``,
        ``python_version`` and ``backend`` (``jax.default_backend()``).
    """
    from pragmodels.version import __version__

    return {
        "pragmodels_version": __version__,
        "jax_version": jax.__version__,
        "numpyro_version": numpyro.__version__,
        "arviz_base_version": package_version("arviz-base"),
        "python_version": platform.python_version(),
        "backend": jax.default_backend(),
    }


def model_name(model: Callable[..., Any], name: str | None = None) -> str:
    """The name a fit records for its model: ``name``, else the model's ``name``, ``__name__`` or repr.

    (:func:`pragmodels.inference.compile_cache.model_label` is the shorter label of the compile
    cache's listing and progress bars; it looks through ``functools.partial``.)

    Parameters
    ----------
    model : callable
        The model as the user passed it (before any :class:`~pragmodels.params.with_priors`).
    name : str, optional
        An explicit name (``fit(..., name=...)``).

    Returns
    -------
    str
    """
    return str(name or getattr(model, "name", None) or getattr(model, "__name__", repr(model)))


def seed_record(rng_key: int | jax.Array) -> int | list[int]:
    """The seed as recorded: an int seed as itself, a PRNG key as its key data.

    Shapes: ``rng_key []`` (one key) -> ``[key data]`` (2 ``uint32`` for the default threefry key).

    Parameters
    ----------
    rng_key : int or jax PRNG key
        As passed to :func:`pragmodels.fit` (typed key, or raw ``uint32`` key data).

    Returns
    -------
    int or list of int
    """
    if isinstance(rng_key, (int, np.integer)) and not isinstance(rng_key, bool):
        return int(rng_key)
    return np.asarray(jax.random.key_data(as_rng_key(rng_key))).tolist()


def sampler_settings(*, num_warmup: int, num_samples: int, num_chains: int, chain_method: str,
                     chain_method_requested: str, devices: int, target_accept: float, max_tree_depth: int,
                     dense_mass: bool | list[tuple[str, ...]], init: str, prior_predictive: int = 0,
                     mass_matrix: str = "adapt", **extra: Any) -> dict[str, Any]:
    """The ``sampler_settings`` record of a fit (what ran, and what was asked where it differs).

    Parameters
    ----------
    num_warmup, num_samples, num_chains, target_accept, max_tree_depth, dense_mass, init, prior_predictive, mass_matrix
        As passed to :func:`pragmodels.fit`.
    chain_method : str
        What ran (:attr:`~pragmodels.inference.nuts.NutsRun.chain_method`).
    chain_method_requested : str
        What was asked (``"auto"`` for ``None``).
    devices : int
        Devices the chains ran on.
    **extra
        Further settings of the caller (``fit_batched``: ``batched``, ``padded_to``, ``n_trials``).

    Returns
    -------
    dict
        JSON-ready; ``dense_mass`` blocks as lists.
    """
    return dict(
        sampler="NUTS", num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
        chain_method=chain_method, chain_method_requested=chain_method_requested, devices=devices,
        target_accept=target_accept, max_tree_depth=max_tree_depth,
        dense_mass=dense_mass if isinstance(dense_mass, bool) else [list(b) for b in dense_mass],
        mass_matrix=mass_matrix, init=init, prior_predictive=int(prior_predictive), **extra,
    )


def provenance_attrs(*, name: str, info: ModelInfo, data: Mapping[str, Any], rng_key: int | jax.Array,
                     settings: Mapping[str, Any], nuts: NutsRun, diagnostics: Diagnostics | None, wall_time_s: float,
                     postprocessing_time_s: float, init_optima: Any = None, **extra: Any) -> dict[str, Any]:
    """The root attributes of a fit's DataTree.

    Shapes: ``rng_key []`` (one key); ``data`` arrays any shape (hashed).

    Parameters
    ----------
    name : str
        The model's name, from :func:`model_name`.
    info : ModelInfo
        The eager trace of the model on ``data`` (:func:`~pragmodels.params.inspect_model`): the
        priors as sampled and the observed sites.
    data : dict
        The model's keyword arguments (hashed with :func:`~pragmodels.io.checksums.data_hash`).
    rng_key : int or jax PRNG key
        The key the user passed (:func:`seed_record`).
    settings : dict
        From :func:`sampler_settings`.
    nuts : NutsRun
        The sampler's result: its compile and sampling times and cache status.
    diagnostics : Diagnostics or None
        None when the diagnostics failed (recorded as ``{}``, ``diagnostics_ok=0``).
    wall_time_s, postprocessing_time_s : float
        Seconds.
    init_optima : object, optional
        Where the ``init="optimize"`` starts ended (JSON-ready), else None.
    **extra
        Further attributes of the caller (``fit_batched``: ``dataset``).

    Returns
    -------
    dict
        For ``DataTree.attrs``: ``pragmodels_version``, ``jax_version``, ``numpyro_version``, ``arviz_base_version``,
        ``python_version``, ``backend``, ``created_at``, ``model``, ``priors``,
        ``sampler_settings``, ``seed``, ``data_sha256``, ``observed_sites``, ``wall_time_s``,
        ``compile_time_s``, ``sampling_time_s``, ``postprocessing_time_s``, ``kernel_cache_hit``,
        ``warmup_leapfrog_steps`` (per chain as sampled, before basins are combined; JSON), ``diagnostics``,
        ``diagnostics_ok``, ``init_optima``, then ``extra``.
    """
    return dict(
        **versions(),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        model=str(name),
        priors=json.dumps(info.priors_record()),
        sampler_settings=json.dumps(dict(settings)),
        seed=json.dumps(seed_record(rng_key)),
        data_sha256=data_hash(data),
        observed_sites=json.dumps(info.observed),
        wall_time_s=float(wall_time_s),
        compile_time_s=float(nuts.compile_s),
        sampling_time_s=float(nuts.run_s),
        postprocessing_time_s=float(postprocessing_time_s),
        kernel_cache_hit=int(nuts.cache_hit),
        warmup_leapfrog_steps=json.dumps(None if nuts.warmup_steps is None else [int(n) for n in nuts.warmup_steps]),
        diagnostics=json.dumps(diagnostics.as_attrs() if diagnostics is not None else {}),
        diagnostics_ok=int(diagnostics is not None and diagnostics.ok),
        init_optima=json.dumps(init_optima),
        **extra,
    )
