"""Convergence diagnostics with warnings a user can act on.

Layering: imports ``numpy``, ``xarray`` and :mod:`pragmodels.inference.ess_rhat` (r_hat and ESS of every
element at once: as ``arviz_stats`` computes them, in a fraction of its time); used by
:mod:`pragmodels.inference.fitting`. Thresholds follow Vehtari et al. (2021): r_hat <= 1.01 and bulk/tail
ESS >= 100 per chain, the tail ESS at the 5% and 95% quantiles
(:data:`RHAT_MAX`, :data:`ESS_PER_CHAIN`); the studies' sampling standard is bulk and tail ESS
>= 400 in all (:data:`ESS_MIN`), which :func:`pragmodels.inference.top_up.top_up` sizes draws to.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from pragmodels.errors import PragmodelsError
from pragmodels.inference.ess_rhat import rhat_ess

__all__ = ["FitWarning", "FitDiagnosticsError", "Diagnostics", "diagnose", "depth_cap_share", "least_ess", "missed_standards",
           "RHAT_MAX", "ESS_PER_CHAIN", "ESS_MIN", "DEPTH_CAP_SHARE_MAX"]

#: the largest r_hat a fit may have (Vehtari et al. 2021)
RHAT_MAX = 1.01
#: the least bulk and tail ESS per chain that :func:`diagnose` accepts
ESS_PER_CHAIN = 100
#: the studies' sampling standard: the least bulk and tail ESS of every parameter, in all chains together
#: (Vehtari et al. 2021's 100 per chain, for the four chains of a full run)
ESS_MIN = 400.0
#: the share of post-warm-up NUTS trajectories stopping at ``max_tree_depth`` that a fit must stay under (at it
#: or more: the sampler was cut short, so it explores slowly and its ESS estimates deserve suspicion)
DEPTH_CAP_SHARE_MAX = 0.01


class FitWarning(UserWarning):
    """A fit finished but its diagnostics say its results may not be trustworthy."""


class FitDiagnosticsError(PragmodelsError, RuntimeError):
    """Raised by ``fit(..., strict=True)`` when diagnostics fail; nothing is written to disk.

    ``fit`` puts the result it refused on :attr:`tree` (finished chains are not lost).
    """

    tree: xr.DataTree | None = None


@dataclass
class Diagnostics:
    """What :func:`diagnose` found: divergences, worst r_hat and ESS, and the problems it warns of."""

    divergences: int
    max_rhat: float
    min_ess_bulk: float
    min_ess_tail: float
    num_chains: int
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_attrs(self) -> dict[str, int | float]:
        return {
            "divergences": int(self.divergences),
            "max_rhat": float(self.max_rhat),
            "min_ess_bulk": float(self.min_ess_bulk),
            "min_ess_tail": float(self.min_ess_tail),
        }


def _worst(ds: xr.Dataset, fn: Callable[[np.ndarray], Any]) -> tuple[float, str]:
    worst, where = np.nan, ""
    for name, da in ds.data_vars.items():
        vals = np.asarray(da)
        if vals.size == 0 or np.all(np.isnan(vals)):
            continue
        v = fn(vals)
        if np.isnan(worst) or (fn is np.nanmax and v > worst) or (fn is np.nanmin and v < worst):
            worst, where = float(v), str(name)
    return worst, where


def _labels(name: str, mask: np.ndarray) -> list[str]:
    """The elements of variable ``name`` where ``mask`` is true: ``'x'``, ``'theta[1, 0]'``."""
    return [name + (f"[{', '.join(map(str, i))}]" if mask.ndim else "") for i in np.argwhere(mask)]


def _nan_elements(ds: xr.Dataset | None, names: Sequence[str]) -> list[str]:
    """The elements of ``names`` whose diagnostic in ``ds`` is NaN."""
    if ds is None:
        return []
    return [e for n in names if n in ds.data_vars for e in _labels(n, np.isnan(np.asarray(ds[n], dtype=float)))]


def _still_elements(post: xr.Dataset, names: Sequence[str]) -> list[str]:
    """The elements of ``names`` whose draws ``[chain, draw, ...]`` are all equal in some chain."""
    out: list[str] = []
    for n in names:
        if n in post.data_vars and post[n].sizes["draw"] > 0:
            vals = np.asarray(post[n].transpose("chain", "draw", ...))
            out += _labels(n, (vals == vals[:, :1]).all(axis=1).any(axis=0))
    return out


def _listed(names: Sequence[str], show: int = 10) -> str:
    """``names`` as a list: the first ``show`` of them, then how many more."""
    more = f", ... and {len(names) - show} more" if len(names) > show else ""
    return "[" + ", ".join(map(repr, names[:show])) + more + "]"


def _cap_share(stats: Any, max_tree_depth: int) -> float:
    return float((np.asarray(stats["n_steps"]) >= 2**max_tree_depth - 1).mean())


def depth_cap_share(tree: xr.DataTree) -> float:
    """The share of post-warm-up NUTS trajectories that stopped at the tree-depth cap: ``n_steps >=
    2**max_tree_depth - 1``, the depth as :func:`pragmodels.fit` recorded it in ``sampler_settings``
    (NaN where either is not recorded).

    Parameters
    ----------
    tree : xarray.DataTree
        A fit's result, with ``sample_stats["n_steps"]`` (``[chain, draw]``) and ``sampler_settings``.

    Returns
    -------
    float
        The share, from 0 to 1.
    """
    settings = json.loads(tree.attrs.get("sampler_settings", "{}") or "{}")
    if "sample_stats" not in tree or "n_steps" not in tree["sample_stats"] or "max_tree_depth" not in settings:
        return float("nan")
    return _cap_share(tree["sample_stats"], int(settings["max_tree_depth"]))


def _rhat_ess(post: xr.Dataset) -> tuple[xr.Dataset, xr.Dataset, xr.Dataset]:
    """Rank-normalised split r_hat, bulk and tail ESS of every element of every variable
    (:func:`pragmodels.inference.ess_rhat.rhat_ess`), as three datasets without the chain and draw dims."""
    out: tuple[dict[str, xr.DataArray], ...] = ({}, {}, {})
    for name, da in post.data_vars.items():
        da = da.transpose(..., "chain", "draw")
        values = np.asarray(da.values)
        if not np.issubdtype(values.dtype, np.number) and values.dtype != bool:
            continue
        dims = da.dims[:-2]
        coords = {k: c for k, c in da.coords.items() if set(c.dims) <= set(dims)}
        for store, value in zip(out, rhat_ess(values.astype(float)), strict=True):
            store[str(name)] = xr.DataArray(value, dims=dims, coords=coords)
    return xr.Dataset(out[0]), xr.Dataset(out[1]), xr.Dataset(out[2])


def diagnose(tree: xr.DataTree, emit: bool = True, max_tree_depth: int | None = None,
             latent: Sequence[str] | None = None) -> Diagnostics:
    """Count divergences, find the worst r_hat and ESS, and warn (``FitWarning``) on problems.

    With ``max_tree_depth``, also flag NUTS trajectories that hit the depth limit (the sampler
    was cut short, so it explores slowly and the ESS estimates deserve suspicion).

    A NaN r_hat or ESS of any element of a posterior variable is a failure that names it
    (``'theta[1, 0]'``): its draws do not vary (a chain that never moved, or too few draws); so
    is a posterior without draws. With ``latent`` (the sampled sites, as :func:`pragmodels.fit`
    passes them) only those count: NaN diagnostics of deterministic sites (e.g. a cost fixed at
    0 for some utterance) are then not failures.

    Shapes: ``posterior`` variables ``[chain, draw, ...]``; ``sample_stats`` ``diverging`` and
    ``n_steps`` ``[chain, draw]``.
    """
    post = tree["posterior"].to_dataset()
    n_chains = int(post.sizes["chain"])
    div = int(np.asarray(tree["sample_stats"]["diverging"]).sum()) if "diverging" in tree["sample_stats"] else 0
    problems = []
    with warnings.catch_warnings():
        # constant deterministic sites (e.g. a cost fixed at 0) give NaN diagnostics; ignored
        warnings.simplefilter("ignore", RuntimeWarning)
        r_all, eb_ds, et_ds = _rhat_ess(post)
        r_ds = r_all if n_chains > 1 else None
        r, r_name = _worst(r_ds, np.nanmax) if r_ds is not None else (np.nan, "")
        eb, eb_name = _worst(eb_ds, np.nanmin)
        et, et_name = _worst(et_ds, np.nanmin)
    if int(post.sizes["draw"]) == 0:
        problems.append("the posterior has no draws: nothing to diagnose; the fit cannot be trusted.")
    names = [str(n) for n in post.data_vars] if latent is None else list(latent)
    hint = (" (A deterministic site constant by design does so too: pass latent=[the sampled sites].)"
            if latent is None else "")
    frozen = list(dict.fromkeys(e for ds in (r_ds, eb_ds, et_ds) for e in _nan_elements(ds, names)))
    frozen_set = set(frozen)
    if frozen:
        problems.append(f"r_hat or ESS is NaN for {_listed(frozen)}: their draws do not vary (a chain that never "
                        "moved, or too few draws); the fit cannot be trusted." + hint)
    still = [e for e in _still_elements(post, names) if e not in frozen_set]
    if still:
        problems.append(f"the draws of {_listed(still)} do not vary within a chain (a chain that never moved): "
                        "their r_hat and ESS mean nothing; the fit cannot be trusted." + hint)
    if div:
        problems.append(
            f"{div} divergent transitions after warm-up: the posterior is not explored reliably; "
            "raise target_accept or reparameterise (e.g. non-centred hierarchies)."
        )
    if r > RHAT_MAX:
        problems.append(f"r_hat = {r:.3f} > {RHAT_MAX} for {r_name!r}: chains disagree; run longer.")
    floor = ESS_PER_CHAIN * n_chains
    if eb < floor:
        problems.append(f"bulk ESS = {eb:.0f} < {floor} for {eb_name!r}: too few effective draws.")
    if et < floor:
        problems.append(f"tail ESS = {et:.0f} < {floor} for {et_name!r}: tail quantiles unreliable.")
    stats = tree["sample_stats"]
    if max_tree_depth is not None and "n_steps" in stats:
        saturated = _cap_share(stats, max_tree_depth)
        if saturated >= DEPTH_CAP_SHARE_MAX:
            problems.append(
                f"{100 * saturated:.0f}% of NUTS trajectories hit max_tree_depth={max_tree_depth}: "
                "the posterior is badly scaled or correlated; reparameterise or raise the limit."
            )
    if emit:
        for p in problems:
            warnings.warn(p, FitWarning, stacklevel=3)
    return Diagnostics(div, r, eb, et, n_chains, problems)


def least_ess(diagnostics: dict[str, Any]) -> float:
    """The least of the bulk and tail ESS in a fit's ``diagnostics`` record; NaN where either is missing or
    NaN (Python's ``min`` keeps a NaN only in first place).

    Parameters
    ----------
    diagnostics : dict
        A fit's diagnostics (:func:`diagnose`; a tree's ``diagnostics`` attribute, parsed), with
        ``min_ess_bulk`` and ``min_ess_tail``.

    Returns
    -------
    float
    """
    return float(np.min([float(diagnostics.get(k, np.nan)) for k in ("min_ess_bulk", "min_ess_tail")]))


def missed_standards(tree: xr.DataTree, *, ess_min: float = ESS_MIN, rhat_max: float = RHAT_MAX) -> list[str]:
    """The sampling standards a fit misses: the one rule that :func:`~pragmodels.inference.top_up.top_up` and the
    studies' reports apply.

    ``"divergences"`` (any), ``"r_hat"`` (above ``rhat_max``), ``"ess"`` (the least bulk or tail ESS of any
    parameter, all chains together, below ``ess_min``), ``"depth cap"`` (:data:`DEPTH_CAP_SHARE_MAX` or more of
    the post-warm-up trajectories at the tree-depth cap), and ``"diagnostics"`` where :func:`diagnose` failed
    the fit for a reason none of those names (a NaN r_hat of one element, a chain that never moved, no draws,
    or fewer than :data:`ESS_PER_CHAIN` per chain with more than four chains). A missing or NaN diagnostic
    fails its comparison; the depth-cap share counts as met where the tree does not record it.

    Parameters
    ----------
    tree : xarray.DataTree
        A fit's result, with the ``diagnostics`` and ``diagnostics_ok`` attributes :func:`pragmodels.fit` records.
    ess_min, rhat_max : float
        The least ESS and the largest r_hat.

    Returns
    -------
    list of str
        The missed standards, in the order above; empty where the fit meets them all.
    """
    d = json.loads(tree.attrs.get("diagnostics", "{}") or "{}")
    div = d.get("divergences", np.nan)
    missed = [] if isinstance(div, (int, float)) and div == 0 else ["divergences"]
    missed += [] if float(d.get("max_rhat", np.nan)) <= rhat_max else ["r_hat"]
    missed += [] if least_ess(d) >= ess_min else ["ess"]
    missed += ["depth cap"] if depth_cap_share(tree) >= DEPTH_CAP_SHARE_MAX else []
    ok = tree.attrs.get("diagnostics_ok", 1)
    failed = str(ok).strip().lower() in ("0", "false")
    return missed or (["diagnostics"] if failed else [])
