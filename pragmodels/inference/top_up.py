"""``top_up``: draws sized to the sampling standards, by refitting the fits that fall short.

Layering: imports :mod:`pragmodels.inference.fit_many` and :mod:`pragmodels.inference.diagnostics`
(whose :data:`~pragmodels.inference.diagnostics.ESS_MIN` and
:data:`~pragmodels.inference.diagnostics.RHAT_MAX` are the standards). Every study sizes its fits'
draws this way: a config's draws are sized from an earlier run's ESS per draw, and this catches a
run that falls short by chance.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pragmodels.inference.diagnostics import (
    DEPTH_CAP_SHARE_MAX,
    ESS_MIN,
    RHAT_MAX,
    FitWarning,
    depth_cap_share,
    least_ess,
    missed_standards,
)
from pragmodels.inference.fit_many import FitManyResult, FitOutcome, FitSpec, fit_many

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["top_up"]

#: ``num_samples`` of a spec that does not set it (:func:`pragmodels.fit`'s default)
_DEFAULT_DRAWS = 1000


def _scale(outcome: FitOutcome, standard: float, max_rhat: float, margin: float) -> float:
    """How many times more draws a fit needs (1: none): ``margin x standard / ESS`` below the ESS
    standard, at least 2 where r_hat exceeds ``max_rhat``."""
    ess, rhat = least_ess(outcome.diagnostics), float(outcome.diagnostics.get("max_rhat", math.nan))
    by_ess = margin * standard / max(ess, 1.0) if ess < standard else 1.0
    return max(by_ess, 2.0 if rhat > max_rhat else 1.0)


def _draws(sampler: dict[str, Any]) -> int:
    return int(sampler.get("num_samples", _DEFAULT_DRAWS))


#: ``target_accept`` of a spec that does not set it (:func:`pragmodels.fit`'s default), and the most a refit asks
_DEFAULT_TARGET_ACCEPT, TARGET_ACCEPT_MAX = 0.8, 0.99


def _target_accept(sampler: dict[str, Any], outcome: FitOutcome) -> tuple[float, float]:
    """``(now, next)``: a fit with divergences gets half the distance to 1 in its target acceptance rate
    (0.8 -> 0.9 -> 0.95 -> 0.975 -> 0.99 at most), smaller steps and so no divergence where they came from
    too large a step; ``next == now`` otherwise."""
    now = float(sampler.get("target_accept", _DEFAULT_TARGET_ACCEPT))
    div = outcome.diagnostics.get("divergences", 0)
    if not isinstance(div, (int, float)) or math.isnan(div) or div <= 0 or now >= TARGET_ACCEPT_MAX:
        return now, now
    return now, round(min(TARGET_ACCEPT_MAX, 1.0 - (1.0 - now) / 2.0), 4)


def _steps_record(first: dict[str, Any], last: dict[str, Any], outcome: FitOutcome) -> dict[str, Any]:
    """``{"divergences", "target_accept": [from, to]}`` where a refit raised the target acceptance rate, and
    ``"num_warmup": [from, to]`` where it lengthened the warm-up."""
    ta0 = float(first.get("target_accept", _DEFAULT_TARGET_ACCEPT))
    ta1 = float(last.get("target_accept", _DEFAULT_TARGET_ACCEPT))
    out = {} if ta1 == ta0 else {"divergences": outcome.diagnostics.get("divergences"), "target_accept": [ta0, ta1]}
    w0, w1 = _warmup(first), _warmup(last)
    return out if w1 == w0 else {**out, "num_warmup": [w0, w1]}


#: ``num_warmup`` of a spec that does not set it (:func:`pragmodels.fit`'s default)
_DEFAULT_WARMUP = 1000


def _warmup(sampler: dict[str, Any]) -> int:
    return int(sampler.get("num_warmup", _DEFAULT_WARMUP))


def _attempt(outcome: FitOutcome, tree: xr.DataTree, sampler: dict[str, Any], round_: int, missed: list[str]
             ) -> dict[str, Any]:
    """One attempt as ``refits_not_kept`` records it."""
    d = outcome.diagnostics
    return {"round": round_, "draws": _draws(sampler), "num_warmup": _warmup(sampler),
            "target_accept": float(sampler.get("target_accept", _DEFAULT_TARGET_ACCEPT)),
            "divergences": d.get("divergences"), "max_rhat": round(float(d.get("max_rhat", math.nan)), 4),
            "ess": round(least_ess(outcome.diagnostics), 1), "depth_cap_share": round(depth_cap_share(tree), 4),
            "missed": missed}


def top_up(specs: Sequence[FitSpec], result: FitManyResult, *, executor: Any = "sequential",
           progress: bool | Literal["bar", "lines"] = True, log: Callable[[str], None] | None = None,
           standard: float = ESS_MIN, max_rhat: float = RHAT_MAX, margin: float = 1.25, most: float = 4.0,
           rounds: int = 2) -> list[FitOutcome]:
    """Refit, with more draws per chain, smaller steps or a longer warm-up, every fit of ``result`` short of the
    sampling standards, and keep the better attempt.

    A fit whose least bulk or tail ESS is below ``standard`` or whose max r_hat exceeds ``max_rhat``
    is fitted again (same seed and settings) with its draws per chain scaled by ``margin x standard
    / ESS`` (at least 2x for r_hat), in at most ``rounds`` rounds (a refit still short is scaled
    again from its own ESS), never beyond ``most`` times its spec's draws (a NaN diagnostic: left
    for the diagnostics to fail). A fit with divergences is fitted again with its ``target_accept``
    halfway to 1 (0.9 -> 0.95 -> 0.975, at most :data:`TARGET_ACCEPT_MAX`), its draws scaled as well
    where they fall short. A fit with :data:`~pragmodels.inference.diagnostics.DEPTH_CAP_SHARE_MAX` or more of its
    trajectories at the tree-depth cap is fitted again with twice the warm-up (at most ``most`` times its spec's):
    a mass matrix and step size not yet adapted keep the steps small and the trajectories at the cap. The
    standards are :func:`~pragmodels.inference.diagnostics.missed_standards`' (ESS at least ``standard``, r_hat
    at most ``max_rhat``, no divergence, under :data:`~pragmodels.inference.diagnostics.DEPTH_CAP_SHARE_MAX` of
    the trajectories at the tree-depth cap, and nothing else :func:`~pragmodels.inference.diagnostics.diagnose`
    failed).

    A refit replaces the attempt before it unless it misses more of those standards (smaller
    steps can trade a few divergences for trajectories that stop at the depth cap and chains that no
    longer mix): then the earlier attempt is kept, the refit is recorded as not kept, and that fit is
    not refitted again. On a tie the refit, with its more draws, is kept.

    Parameters
    ----------
    specs : list of FitSpec
        The specs ``result`` was fitted from.
    result : FitManyResult
        :func:`~pragmodels.inference.fit_many.fit_many`'s result, without failures (call its
        ``raise_on_error`` first), and holding trees (no ``out_dir``).
    executor, progress, log
        As for :func:`~pragmodels.inference.fit_many.fit_many`, for the refits; ``log`` also
        receives one line per refit: which fit, its least ESS and r_hat against the standards,
        and its draws, and one line per refit not kept (default: printed, flushed).
    standard, max_rhat : float
        The least bulk and tail ESS, and the largest r_hat.
    margin, most : float
        The refit's draws: ``margin x standard / ESS`` times more, at most ``most`` x the spec's.
    rounds : int
        Refits at most, per fit.

    Returns
    -------
    list of FitOutcome
        The kept attempts, in the order of ``result``, each with its tree. A kept refit's tree
        records ``draws_resized`` (JSON ``{"from", "to", "ess", "max_rhat", "rounds"}``: the spec's
        draws, the kept refit's, the first fit's least ESS and r_hat, the round of the kept refit;
        where the target acceptance rate was raised also ``"divergences"``, the first fit's, and
        ``"target_accept": [from, to]``; where the warm-up was lengthened ``"num_warmup": [from, to]``). A
        tree whose fit had a refit that was not kept records ``refits_not_kept`` (a JSON list, one
        ``{"round", "draws", "num_warmup", "target_accept", "divergences", "max_rhat", "ess", "depth_cap_share",
        "missed"}`` per such refit). Where any refit ran, the
        tree's ``wall_time_s`` (and the outcome's ``wall_s``) includes every attempt's.

    Raises
    ------
    FitManyError
        A refit failed.
    """
    say = log if log is not None else functools.partial(print, flush=True)
    outcomes = list(result)
    all_trees = result.trees
    by_name = {s.name: s for s in specs}
    first = {o.name: o for o in outcomes}
    # the attempt kept so far, its tree, the sampler it ran with, its round (0: the first fit)
    kept = {o.name: (o, all_trees[o.name], dict(by_name[o.name].sampler), 0) for o in outcomes}
    sampler = {name: dict(spec.sampler) for name, spec in by_name.items()}  # as the last attempt ran
    tree_walls: dict[str, float] = {o.name: float(all_trees[o.name].attrs["wall_time_s"]) for o in outcomes}
    walls: dict[str, float] = {o.name: float(o.wall_s) for o in outcomes}  # every attempt's, summed
    not_kept: dict[str, list[dict[str, Any]]] = {}
    active = list(kept)  # the fits to look at this round: every fit, then those whose refit was kept
    for round_ in range(1, rounds + 1):
        again = []
        for name in active:
            o = kept[name][0]
            n0, n = _draws(by_name[name].sampler), _draws(sampler[name])
            scale = _scale(o, standard, max_rhat, margin)
            ta, ta_next = _target_accept(sampler[name], o)
            w0, w = _warmup(by_name[name].sampler), _warmup(sampler[name])
            capped = depth_cap_share(kept[name][1])
            w_next = min(int(most * w0), 2 * w) if capped >= DEPTH_CAP_SHARE_MAX and w < most * w0 else w
            more = scale > 1.0 and n < most * n0
            if not more and ta_next == ta and w_next == w:
                continue
            to = int(math.ceil(min(most * n0, n * scale))) if more else n
            sampler[name] = {**sampler[name], "num_samples": to, **({"target_accept": ta_next} if ta_next != ta else {}),
                             **({"num_warmup": w_next} if w_next != w else {})}
            again.append(dataclasses.replace(by_name[name], sampler=sampler[name]))
            steps = (f"{o.diagnostics.get('divergences')} divergences (standard 0), " if ta_next != ta else "")
            steps += (f"{100 * capped:.0f}% of trajectories at the depth cap (standard {100 * DEPTH_CAP_SHARE_MAX:.0f}%), "
                      if w_next != w else "")
            was = f"was {n}) and target_accept {ta_next} (was {ta}" if ta_next != ta else f"was {n}"
            was += f") and {w_next} warm-up iterations (was {w}" if w_next != w else ""
            say(f"{name}: {steps}least ESS {least_ess(o.diagnostics):.0f} (standard {standard:.0f}), max r_hat "
                f"{o.diagnostics.get('max_rhat', math.nan):.3f} (standard {max_rhat}); sampled again with {to} "
                f"draws per chain ({was}; round {round_} of at most {rounds})")
        if not again:
            break
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            second = fit_many(again, executor=executor, progress=progress, log=log)
        second.raise_on_error()
        second_trees = second.trees
        active = []
        for r in second:
            tree = second_trees[r.name]
            tree_walls[r.name] += float(tree.attrs["wall_time_s"])
            walls[r.name] += float(r.wall_s)
            best, best_tree, _, _ = kept[r.name]
            missed = missed_standards(tree, ess_min=standard, rhat_max=max_rhat)
            missed_before = missed_standards(best_tree, ess_min=standard, rhat_max=max_rhat)
            if len(missed) > len(missed_before):
                not_kept.setdefault(r.name, []).append(_attempt(r, tree, sampler[r.name], round_, missed))
                say(f"{r.name}: the refit of round {round_} misses {', '.join(missed)}, the attempt before it "
                    f"{', '.join(missed_before) or 'nothing'}: the attempt before it is kept")
                continue
            kept[r.name] = (r, tree, dict(sampler[r.name]), round_)
            active.append(r.name)
    merged = []
    for o in outcomes:
        best, tree, ran, round_ = kept[o.name]
        if round_ or o.name in not_kept:
            if round_:
                f = first[o.name]
                tree.attrs["draws_resized"] = json.dumps({
                    "from": _draws(by_name[o.name].sampler), "to": _draws(ran),
                    "ess": round(least_ess(f.diagnostics), 1), "max_rhat": round(float(f.diagnostics.get("max_rhat", math.nan)), 4),
                    "rounds": round_, **_steps_record(by_name[o.name].sampler, ran, f)})
            if o.name in not_kept:
                tree.attrs["refits_not_kept"] = json.dumps(not_kept[o.name])
            tree.attrs["wall_time_s"] = tree_walls[o.name]
            best = dataclasses.replace(best, wall_s=walls[o.name])
        merged.append(dataclasses.replace(best, tree=tree))
    return merged
