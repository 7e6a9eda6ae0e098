"""Models compared by their expected log predictive density (ArviZ ``plot_compare``): each model's
elpd difference from the best one, with the standard error of that difference."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def elpd_compare(cmp: pd.DataFrame, *, title: str = "", width: float = 6.0) -> Figure:
    """``cmp``: a comparison table as :func:`pragmodels.compare` returns it (index: the models,
    best first; columns ``elpd_diff`` and ``dse``), e.g. ``tables/loo_compare.csv`` read with
    ``index_col=0``. One row per model (the best on top): the elpd difference from the best model
    and one standard error of the difference (arviz-plots ``plot_compare``); dashed: the best
    model; dotted: 4 below it, the size under which a difference is commonly taken as negligible.
    Titled ``title`` (what was compared, on which data) above "higher is better". Returns the Figure.

    Shapes: ``cmp [model]``.
    """
    import arviz_plots as azp
    import numpy as np

    missing = [c for c in ("elpd_diff", "dse") if c not in cmp.columns]
    if missing:
        raise ValueError(f"cmp has no column {missing[0]!r}; expected a comparison table (pragmodels.compare) with "
                         "'elpd_diff' and 'dse', the models as its index.")
    if len(cmp) < 2:
        raise ValueError(f"cmp compares {len(cmp)} model(s); a comparison needs two or more.")
    diff = cmp["elpd_diff"].to_numpy(float)
    if diff[0] != 0 or (diff[1:] > 0).any():
        raise ValueError(f"cmp must list the best model first (elpd_diff 0, the others <= 0); got elpd_diff {list(diff)}.")
    pc = azp.plot_compare(cmp, rotated=False, backend="matplotlib",
                          visuals={"similar_line": {"color": "0.5"}, "title": False},
                          figure_kwargs={"figsize": (width, 1.2 + 0.45 * len(cmp)), "figsize_units": "inches",
                                         "layout": "constrained"})
    fig = pc.viz["figure"].item() if hasattr(pc.viz["figure"], "item") else pc.viz["figure"]
    ax = fig.axes[0]
    ax.set_xlabel("elpd difference from the best model (± 1 SE of the difference)")
    se = cmp["dse"].to_numpy(float)
    lo, hi = float(np.nanmin(diff - se)), float(np.nanmax(diff + se))
    pad = 0.05 * (max(hi, 0.0) - min(lo, -4.0))
    ax.set_xlim(min(lo, -4.0) - pad, max(hi, 0.0) + pad)  # the dotted line at -4 and every bar in view
    ax.set_title((f"{title}\n" if title else "") + "higher is better; dotted: 4 below the best", fontsize=10)
    return fig
