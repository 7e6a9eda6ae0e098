"""PSIS-LOO for models with one or several observation sites, and comparison of fits by LOO.

Layering: imports ``numpy``, ``xarray`` and ``arviz_stats``; reads the DataTrees that
:func:`pragmodels.fit` returns. Never imports numpyro.

ArviZ's ``loo(tree)`` refuses a tree with several log-likelihood arrays ("Found several log
likelihood arrays"), and ``loo(log_lik_fn=...)`` scores one observed variable (docs/architecture.md,
"arviz-stats"): a model fitted to production *and* comprehension data has two. Here they are
joined into one pointwise array first, in one of two documented ways:

- ``how="concat"`` (default): every observation of every site is one leave-one-out unit (the
  flattened arrays are concatenated along a dim ``observation`` labelled ``"site[i, j]"``). Use it
  when the sites' observations are separate data points (e.g. two tasks).
- ``how="sum"``: the sites share their observation dims (e.g. a rating and a reaction time per
  trial) and one unit leaves out all of a trial's responses: the arrays are added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import xarray as xr

if TYPE_CHECKING:
    import pandas as pd
    from arviz_stats.utils import ELPDData

__all__ = ["joint_log_likelihood", "loo", "compare", "loo_sentence"]

JOINT = "joint"
#: how the sites' log-likelihoods are joined (module docstring)
How = Literal["concat", "sum"]


def joint_log_likelihood(tree: xr.DataTree, sites: Sequence[str] | None = None, how: How = "concat"
                         ) -> xr.DataTree:
    """A DataTree with the posterior and one log-likelihood array ``joint`` built from ``sites``
    (default: every array of the ``log_likelihood`` group; where that mixes a site of one value per
    draw, such as a ``numpyro.factor``, with per-observation sites, a ValueError asks for ``sites``).

    Shapes: each site ``[chain, draw, *obs]`` -> ``joint [chain, draw, observation]`` (``concat``)
    or ``[chain, draw, *obs]`` (``sum``; the sites' dims must agree).
    """
    if "log_likelihood" not in tree.children:
        raise ValueError("the tree has no log_likelihood group (fit with pragmodels.fit, which stores it).")
    ll = tree["log_likelihood"].to_dataset()
    names = list(ll.data_vars) if sites is None else list(sites)
    missing = [s for s in names if s not in ll.data_vars]
    if missing or not names:
        raise ValueError(f"sites {missing or names!r} not in the log_likelihood group; it has {list(ll.data_vars)}.")
    scalar = [s for s in names if set(ll[s].dims) <= {"chain", "draw"}]
    if sites is None and scalar and len(scalar) < len(names):
        # a numpyro.factor (e.g. a selection term over all items) is observed in numpyro's sense: one
        # number per draw that, joined to per-observation sites, would count as one more observation
        raise ValueError(f"the log_likelihood group mixes sites with one value per draw ({scalar}: a numpyro.factor "
                         "or a single observation) with per-observation sites "
                         f"({[s for s in names if s not in scalar]}); name the observations with sites=[...].")
    if how == "concat":
        parts, labels = [], []
        for s in names:
            da = ll[s]
            obs_dims = [d for d in da.dims if d not in ("chain", "draw")]
            flat = da.stack(observation=obs_dims) if obs_dims else da.expand_dims(observation=[0])
            idx = np.ndindex(*[da.sizes[d] for d in obs_dims]) if obs_dims else [()]
            labels += [f"{s}[{', '.join(map(str, i))}]" for i in idx]
            parts.append(flat.drop_vars([c for c in flat.coords if c not in ("chain", "draw")]).transpose(
                "chain", "draw", "observation"))
        joint = xr.concat(parts, dim="observation").assign_coords(observation=labels)
    elif how == "sum":
        dims = {s: tuple(ll[s].dims) for s in names}
        if len(set(dims.values())) != 1:
            raise ValueError(f"how='sum' needs sites with the same dims; got {dims}. Use how='concat'.")
        joint = ll[names[0]]
        for s in names[1:]:
            joint = joint + ll[s]
    else:
        raise ValueError(f"how must be 'concat' or 'sum'; got {how!r}.")
    return xr.DataTree.from_dict({
        "posterior": tree["posterior"].to_dataset(),
        "log_likelihood": xr.Dataset({JOINT: joint}),
    })


def loo(tree: xr.DataTree, sites: Sequence[str] | None = None, how: How = "concat", **kwargs: Any
        ) -> ELPDData:
    """PSIS-LOO (``arviz_stats.loo``) of a fit with one or several observation sites, joined by
    ``how`` (module docstring). Extra keyword arguments go to ``arviz_stats.loo``.

    Shapes: each log-likelihood site ``[chain, draw, *obs]``; the pointwise results (``elpd_i``,
    ``pareto_k``) are over ``observation`` (``concat``) or the shared ``obs`` dims (``sum``).
    """
    from arviz_stats import loo as _loo

    joint = joint_log_likelihood(tree, sites, how)
    _check_not_constant(joint.children["log_likelihood"].dataset[JOINT])
    return _loo(joint, var_name=JOINT, **kwargs)


def _check_not_constant(ll: xr.DataArray) -> None:
    """PSIS cannot smooth the weights of an observation whose log-likelihood is the same in every
    draw (ArviZ fails with "All tail values are the same"); name them instead."""
    spread = (ll.max(("chain", "draw")) - ll.min(("chain", "draw"))).values.reshape(-1)
    const = np.flatnonzero(spread == 0)
    if const.size:
        obs = [d for d in ll.dims if d not in ("chain", "draw")]
        labels = ll.stack(_obs=obs)["_obs"].values[const] if obs else ["(scalar)"]
        raise ValueError(f"{const.size} observation(s) have the same log-likelihood in every draw, e.g. "
                         f"{[str(x) for x in labels[:3]]}: the model predicts them with certainty (a 0/1 "
                         "lexicon with no lapse?), and PSIS-LOO needs varying weights. Add a lapse, or "
                         "leave those sites out with sites=[...].")


def compare(trees: Mapping[str, xr.DataTree], sites: Sequence[str] | None = None, how: How = "concat",
            **kwargs: Any) -> pd.DataFrame:
    """``arviz_stats.compare`` of several fits of the same data, each joined by ``how`` first.
    Returns ArviZ's comparison table (``elpd_diff`` and its ``dse`` against the best fit), one row
    per fit, unrounded (``round_to="none"`` unless given: ArviZ's default rounds ``elpd`` and
    ``elpd_diff`` to the digits their SEs warrant, so that two differences of 9.6 and 10.4 both
    read 10.0 in a table that is rounded again for display).

    Shapes: each fit's log-likelihood sites ``[chain, draw, *obs]``, the same ``obs`` in every fit.
    """
    from arviz_stats import compare as _compare

    joints = {k: joint_log_likelihood(t, sites, how) for k, t in trees.items()}
    for j in joints.values():
        _check_not_constant(j.children["log_likelihood"].dataset[JOINT])
    kwargs.setdefault("round_to", "none")
    return _compare(joints, var_name=JOINT, **kwargs)


def loo_sentence(cmp: pd.DataFrame) -> str:
    """The LOO comparison in the one form used everywhere (report, README): which model is ahead
    and by how much, with the paired SE, e.g. "**rsa** is ahead of **baseline** by 4.0 ± 4.5 elpd
    (paired SE), a difference within 2 standard errors: the data do not separate the two models."

    Parameters
    ----------
    cmp : pandas.DataFrame
        :func:`compare`'s table (best first; ``elpd_diff`` of the others <= 0 and ``dse``).

    Returns
    -------
    str
        The sentence (Markdown bold for the model names); with more than two fits, the best one
        against each of the others in turn; "see the table." for fewer than two fits.
    """
    if "elpd_diff" not in cmp or "dse" not in cmp or len(cmp) < 2:
        return "see the table."
    ahead = cmp.index[0]
    parts = []
    for i in range(1, len(cmp)):
        diff, se = abs(float(cmp["elpd_diff"].iloc[i])), float(cmp["dse"].iloc[i])
        ratio = diff / se if se > 0 else float("inf")
        verdict = ("a difference within 2 standard errors: the data do not separate the two models"
                   if ratio < 2 else "a difference of more than 2 standard errors")
        parts.append(f"**{cmp.index[i]}** by {diff:.1f} ± {se:.1f} elpd (paired SE), {verdict}")
    return f"**{ahead}** is ahead of " + "; and of ".join(parts) + "."
