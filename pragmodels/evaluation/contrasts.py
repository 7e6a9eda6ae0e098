"""Posterior contrasts between fits: ``P(theta_A > theta_B)`` and ``theta_A - theta_B`` with its interval.

Layering: imports ``numpy``, ``pandas``, ``xarray`` and ``arviz_stats``; reads the DataTrees
that :func:`pragmodels.fit` returns. Never imports numpyro.

Two fits to different data sets (humans and an LLM, one prompt and another) have independent
posteriors, so the posterior of ``theta_A - theta_B`` is the distribution of the difference of
independent draws. Here draw ``i`` of A (chains and draws flattened) is paired with draw
``perm(i)`` of B for a random permutation drawn from ``seed``; with unequal sizes both are cut to
the smaller one. The interval is ArviZ's equal-tailed interval (``arviz_stats.eti``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["contrast", "contrast_draws", "contrast_table"]


def _flat(tree: xr.DataTree, var_name: str, label: str) -> xr.DataArray:
    post = tree["posterior"]
    if var_name not in post.data_vars:
        raise ValueError(f"{label}: no variable {var_name!r} in the posterior; it has {sorted(post.data_vars)}.")
    return post[var_name].stack(sample=("chain", "draw")).transpose("sample", ...)


def contrast_draws(tree_a: xr.DataTree, tree_b: xr.DataTree, var_name: str, *, seed: int = 0) -> xr.DataArray:
    """Draws of ``A - B`` for ``var_name``, paired as the module docstring says (the pairing
    :func:`contrast` summarises, for the same ``seed``).

    Shapes: ``var_name`` ``[chain, draw, *dims]`` in both fits (same ``dims`` and coords) ->
    ``[draw, *dims]``, ``draw`` the smaller fit's number of draws (chains flattened).
    """
    a, b = _flat(tree_a, var_name, "tree_a"), _flat(tree_b, var_name, "tree_b")
    if a.dims[1:] != b.dims[1:] or a.shape[1:] != b.shape[1:]:
        raise ValueError(f"{var_name!r} has dims {dict(zip(a.dims[1:], a.shape[1:]))} in tree_a but "
                         f"{dict(zip(b.dims[1:], b.shape[1:]))} in tree_b.")
    n = min(a.sizes["sample"], b.sizes["sample"])
    rng = np.random.default_rng(seed)
    ia = rng.permutation(a.sizes["sample"])[:n]
    ib = rng.permutation(b.sizes["sample"])[:n]
    other = {d: a[d].values for d in a.dims[1:] if d in a.coords}
    return xr.DataArray(a.values[ia] - b.values[ib], dims=("draw",) + a.dims[1:], coords=other, name=var_name)


def contrast(tree_a: xr.DataTree, tree_b: xr.DataTree, var_name: str, *, prob: float = 0.94,
             seed: int = 0) -> xr.Dataset:
    """Contrast ``var_name`` between two fits.

    Shapes: ``var_name`` ``[chain, draw, *dims]`` in both fits (same ``dims`` and coords) ->
    a Dataset over ``dims`` with ``p_greater`` (``P(A > B)``), ``difference`` (posterior median of
    ``A - B``), ``lower``/``upper`` (its ``prob`` equal-tailed interval) and ``n_draws``.
    """
    from arviz_stats import eti

    if not 0 < prob < 1:
        raise ValueError(f"prob must be in (0, 1); got {prob!r}.")
    diff = contrast_draws(tree_a, tree_b, var_name, seed=seed)
    interval = eti(diff, prob=prob, dim=["draw"])
    return xr.Dataset({
        "p_greater": (diff > 0).mean("draw"),
        "difference": diff.median("draw"),
        "lower": interval.sel(ci_bound="lower", drop=True),
        "upper": interval.sel(ci_bound="upper", drop=True),
    }, attrs={"n_draws": int(diff.sizes["draw"]), "prob": float(prob), "var_name": var_name})


def contrast_table(trees: Mapping[str, xr.DataTree], var_names: list[str], reference: str, *,
                   prob: float = 0.94, seed: int = 0) -> pd.DataFrame:
    """Every fit in ``trees`` against ``reference`` (e.g. each LLM fit against the human fit).

    Shapes: each of ``var_names`` ``[chain, draw, *dims]`` -> one row per fit, variable and
    element of ``dims``.

    Parameters
    ----------
    trees : mapping of str to DataTree
        Fits by label, as :func:`pragmodels.fit` returns them.
    var_names : list of str
        Posterior variables to contrast. A variable that a fit (or the reference) lacks is
        skipped for that fit.
    reference : str
        The label in ``trees`` every other fit is compared with.
    prob, seed
        As :func:`contrast` (interval mass; the seed of the draw pairing, the same for every fit).

    Returns
    -------
    pandas.DataFrame
        Columns ``fit``, ``reference``, ``parameter``, the element's coords, ``p_greater``
        (``P(fit > reference)``), ``difference``, ``lower``, ``upper``.

    Raises
    ------
    ValueError
        When ``reference`` is not a key of ``trees``, or as :func:`contrast`.
    """
    if reference not in trees:
        raise ValueError(f"reference {reference!r} is not one of the fits {list(trees)}.")
    rows: list[dict[str, Any]] = []
    for label, tree in trees.items():
        if label == reference:
            continue
        for v in var_names:
            if v not in tree["posterior"].data_vars or v not in trees[reference]["posterior"].data_vars:
                continue
            res = contrast(tree, trees[reference], v, prob=prob, seed=seed)
            records = ([{str(k): float(res[k]) for k in res.data_vars}] if not res.dims
                       else res.to_dataframe().reset_index().to_dict("records"))
            for r in records:
                rows.append({"fit": label, "reference": reference, "parameter": v, **r})
    return pd.DataFrame(rows)
