"""Predictive draws for any NumPyro model: posterior predictive, prior predictive, new data.

Layering: imports ``jax``, ``numpyro`` (handlers, ``Predictive``), :mod:`pragmodels.params`,
:mod:`pragmodels.model_key` and :mod:`pragmodels.inference.compile_cache`; used by
:mod:`pragmodels.inference.fitting`; never imports arviz except to build the returned trees.

Every observed site is un-observed with the :class:`unobserve` handler before drawing, so the
predictive of a plain ``numpyro.sample("y", dist, obs=y)`` site is a fresh draw, not a copy of
``y`` (NumPyro's ``Predictive`` alone returns the observations unchanged for such sites).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from numpyro.infer import Predictive
from numpyro.primitives import Messenger

if TYPE_CHECKING:
    import xarray as xr

    from pragmodels.params import ModelInfo

__all__ = ["unobserve", "posterior_predictive", "prior_predictive_draws", "prior_predictive", "predict"]


class unobserve(Messenger):  # noqa: N801 - a NumPyro handler, named like numpyro's handlers
    """NumPyro handler: every observed ``sample`` site draws a fresh value instead of returning
    its ``obs``. Its ``infer`` dict gets ``{"was_observed": True}``, so callers can still find it.

    ``unobserve(model)`` (or ``with unobserve(): ...``) must be the innermost handler, which it is
    when it wraps the model directly.
    """

    def process_message(self, msg: dict[str, Any]) -> None:
        if msg["type"] == "sample" and msg.get("is_observed"):
            msg["value"] = None
            msg["is_observed"] = False
            msg["infer"] = {**(msg.get("infer") or {}), "was_observed": True}


def posterior_predictive(rng_key: jax.Array, model: Callable[..., Any], samples: Mapping[str, Any],
                         data: Mapping[str, Any], sites: list[str], batch_ndims: int = 2
                         ) -> dict[str, np.ndarray]:
    """Fresh draws of the observed ``sites`` for each posterior draw in ``samples``.

    Shapes: ``samples[name] [chain, draw, ...]`` (``batch_ndims=2``) -> ``[chain, draw, *obs]``.
    ``data`` holds the model's arguments (new data for out-of-sample prediction).
    """
    from pragmodels.inference import compile_cache
    from pragmodels.model_key import structure_key

    static, arrays = compile_cache.split_data(data)
    samples = {k: jax.numpy.asarray(v) for k, v in samples.items()}
    cache_key = ("predictive", structure_key(model), compile_cache.static_items(static), compile_cache.data_signature(arrays),
                 compile_cache.data_signature(samples), tuple(sites), batch_ndims, jax.default_backend())
    entry = compile_cache.lookup(cache_key)
    if entry is None:
        import time

        t0 = time.perf_counter()
        bound = compile_cache.bound_model(model, static)

        def draw(key: jax.Array, samples: dict[str, jax.Array], arrays: dict[str, Any]) -> dict[str, jax.Array]:
            return Predictive(unobserve(bound), posterior_samples=samples, return_sites=list(sites),
                              batch_ndims=batch_ndims)(key, **arrays)

        try:
            compiled = jax.jit(draw).lower(rng_key, samples, arrays).compile()
        except Exception:  # noqa: BLE001 - e.g. a Multinomial needs concrete totals to sample
            compiled = None  # draw eagerly with the data as constants (not cached as a program)
        entry = compile_cache.CompiledEntry("predictive", f"predictive {compile_cache.model_label(model)} {sorted(sites)}", compiled, bound,
                          time.perf_counter() - t0)
        compile_cache.store(cache_key, entry)
    if entry.compiled is None:
        out = Predictive(unobserve(model), posterior_samples=samples, return_sites=list(sites),
                         batch_ndims=batch_ndims)(rng_key, **data)
    else:
        out = entry.compiled(rng_key, samples, arrays)
    return {k: np.asarray(v) for k, v in jax.device_get(out).items()}


def prior_predictive_draws(rng_key: int | jax.Array, model: Callable[..., Any], data: Mapping[str, Any],
                           num_samples: int) -> dict[str, np.ndarray]:
    """``num_samples`` joint draws of every latent, deterministic and (un-observed) observed site
    from the prior.

    Shapes: each site ``[num_samples, *site shape]``.
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive int; got {num_samples!r}.")
    pred = Predictive(unobserve(model), num_samples=num_samples)
    out = pred(rng_key if not isinstance(rng_key, int) else jax.random.key(rng_key), **data)
    return {k: np.asarray(v) for k, v in out.items()}


def _tree(groups: dict[str, dict[str, np.ndarray]], info: ModelInfo, coords: Mapping[str, Any] | None,
          dims: Mapping[str, list[str]] | None, attrs: Mapping[str, Any]) -> xr.DataTree:
    from arviz_base import from_dict

    all_dims = info.arviz_dims(dims)
    tree = from_dict({g: v for g, v in groups.items() if v}, dims=all_dims, pred_dims=all_dims, coords=coords,
                     pred_coords=coords)
    tree.attrs.update(attrs)
    return tree


def prior_predictive(rng_key: int | jax.Array, model: Callable[..., Any], data: Mapping[str, Any], *,
                     num_samples: int = 500, priors: Mapping[str, Any] | None = None,
                     dims: Mapping[str, list[str]] | None = None,
                     coords: Mapping[str, Any] | None = None) -> xr.DataTree:
    """Prior and prior-predictive draws of ``model(**data)`` as an ArviZ DataTree.

    Groups ``prior`` (latent and deterministic sites), ``prior_predictive`` (every observed site,
    drawn fresh) and ``observed_data``; one chain of ``num_samples`` draws. ``priors`` overrides
    priors as in :func:`pragmodels.fit`. Use it to check that the priors imply plausible data
    before fitting.

    Shapes: each variable ``[chain=1, draw=num_samples, *site dims]``; ``observed_data`` as given.
    """
    from pragmodels.params import inspect_model, with_priors

    info = inspect_model(model, data, priors)
    run = with_priors(model, priors) if priors else model
    key = jax.random.key(rng_key) if isinstance(rng_key, int) else rng_key
    draws = prior_predictive_draws(key, run, data, num_samples)
    keep = set(info.latent) | set(info.deterministic)
    predicted = set(info.observed) | set(info.unobserved)
    groups = {
        "prior": {k: v[None] for k, v in draws.items() if k in keep},
        "prior_predictive": {k: v[None] for k, v in draws.items() if k in predicted},
        "observed_data": {k: np.asarray(v) for k, v in info.observed_values.items()},
    }
    from pragmodels.inference.provenance import model_name

    return _tree(groups, info, coords, dims, {"model": model_name(model), "num_samples": num_samples})


def _fitted_and_given(tree: xr.DataTree, model: Callable[..., Any], name: str | None) -> str:
    from pragmodels.inference.provenance import model_name

    fitted = f"a fit of model {str(tree.attrs['model'])!r}" if "model" in tree.attrs else "a fit of no recorded model"
    return f"tree is {fitted}; predict got model {model_name(model, name)!r}"


def _check_fitted_model(tree: xr.DataTree, model: Callable[..., Any], name: str | None) -> None:
    """Raise unless ``model`` (or ``name``) is the model ``tree`` records as fitted, if it records one."""
    from pragmodels.inference.provenance import model_name

    if "model" in tree.attrs and str(tree.attrs["model"]) != model_name(model, name):
        raise ValueError(f"{_fitted_and_given(tree, model, name)} (a fit records its model in attrs['model']). "
                         "Pass the model that was fitted (and, if the fit was given a name, fit(..., name=...), "
                         "the same name=).")


def predict(rng_key: int | jax.Array, tree: xr.DataTree, model: Callable[..., Any], new_data: Mapping[str, Any], *,
            sites: list[str] | None = None, dims: Mapping[str, list[str]] | None = None,
            coords: Mapping[str, Any] | None = None, name: str | None = None) -> xr.DataTree:
    """Predictions of a fitted model for new data, from a fit's posterior (e.g. a saved one).

    ``tree`` is a DataTree from :func:`pragmodels.fit` (or :func:`pragmodels.load_netcdf`);
    ``model`` the same model; ``new_data`` its arguments for the new conditions (observations
    may be omitted or given: they are not conditioned on). Only the sampled latent sites of the
    posterior are used; deterministic sites are recomputed for the new data. Returns a DataTree
    with the group ``predictions``.

    The fit records its model by name (``tree.attrs["model"]``); a model of another name is
    refused (a model with the same sites but another likelihood would give wrong predictions
    silently). ``name`` is the name given to ``fit(..., name=...)``, if any. A tree that records
    no model (not made by :func:`pragmodels.fit`) is not checked.

    Shapes: posterior ``[chain, draw, ...]`` -> ``predictions [chain, draw, *obs]`` for each observed
    site (or each of ``sites``), ``obs`` the site's shape for ``new_data``.
    """
    import json

    from pragmodels.params import inspect_model

    info = inspect_model(model, new_data)
    post = tree["posterior"]
    # the fit's observed sites are latent here when new_data leaves out their observations
    fitted_obs = json.loads(tree.attrs.get("observed_sites", "[]"))
    latent = [k for k in info.latent if k not in fitted_obs]
    missing = [k for k in latent if k not in post.data_vars]
    if missing:
        raise ValueError(f"the posterior lacks {missing}, which the model samples for this data; "
                         f"is it a fit of this model? ({_fitted_and_given(tree, model, name)})")
    _check_fitted_model(tree, model, name)
    samples = {k: np.asarray(post[k].values) for k in latent}
    names = list(sites) if sites else list(dict.fromkeys(info.observed + info.unobserved
                                                          + [k for k in info.latent if k in fitted_obs]))
    if not names:
        raise ValueError("the model has no observed site to predict; pass sites=[...].")
    key = jax.random.key(rng_key) if isinstance(rng_key, int) else rng_key
    out = posterior_predictive(key, model, samples, new_data, names)
    attrs = {k: tree.attrs[k] for k in ("model", "data_sha256", "seed") if k in tree.attrs}
    return _tree({"predictions": out}, info, coords, dims, {"fitted_" + k: v for k, v in attrs.items()})
