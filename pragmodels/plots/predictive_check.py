"""A posterior predictive check drawn from its summaries: statistics of the data (e.g. effects)
and cell means, each observed value against the interval of the same quantity on data
replicated from the fitted model, for one or more models of the same data."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pragmodels.plots._style import fit_colours

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

_NEED = ("model", "observed", "median", "lo", "hi")


def predictive_check(statistics: pd.DataFrame, cells: pd.DataFrame, *, interval: str = "94%",
                     statistic_label: str = "statistic", cell_label: str = "cell mean",
                     title: str = "Posterior predictive check") -> Figure:
    """Left: each statistic (a row, named by ``statistics["label"]``), the models' replicated
    median and ``interval`` interval (one colour per model) and the observed value (black ``x``).
    Right, one panel per model: every cell's observed mean (x) against its replicated median and
    interval (y); dashed: replicated = observed; cells whose observed mean lies outside the
    interval in red, counted in the panel's title. Returns the Figure.

    Shapes: ``statistics [row]`` with columns ``model, label, observed, median, lo, hi``;
    ``cells [row]`` with ``model, observed, median, lo, hi`` (the models in the same order).
    """
    import matplotlib.pyplot as plt
    import numpy as np

    for name, frame, need in (("statistics", statistics, (*_NEED, "label")), ("cells", cells, _NEED)):
        missing = [c for c in need if c not in frame.columns]
        if missing:
            raise ValueError(f"{name} has no column {missing[0]!r}; expected {list(need)}.")
    models = list(dict.fromkeys(statistics["model"]))
    if not models or list(dict.fromkeys(cells["model"])) != models:
        raise ValueError(f"statistics and cells must name the same models in the same order; got {models} and "
                         f"{list(dict.fromkeys(cells['model']))}.")
    labels = list(dict.fromkeys(statistics["label"]))
    colours = dict(zip(models, fit_colours(len(models))))
    fig, axes = plt.subplots(1, 1 + len(models), figsize=(4.8 + 3.2 * len(models), 1.6 + 0.42 * len(labels)),
                             width_ratios=[1.5] + [1.0] * len(models), squeeze=False, layout="constrained")
    ax, cell_axes = axes[0, 0], axes[0, 1:]
    step = 0.7 / len(models)
    for k, m in enumerate(models):
        sub = statistics[statistics["model"] == m]
        y = np.array([labels.index(s) for s in sub["label"]]) + (k - (len(models) - 1) / 2) * step
        ax.hlines(y, sub["lo"], sub["hi"], color=colours[m], lw=1.6, label=f"{m}, replicated: median, {interval}")
        ax.plot(sub["median"], y, "o", ms=3.5, color=colours[m])
    first = statistics.drop_duplicates("label")  # the observed value, once per row (the same data for every model)
    ax.vlines(first["observed"], [labels.index(s) - 0.42 for s in first["label"]],
              [labels.index(s) + 0.42 for s in first["label"]], color="k", lw=1.8, label="observed")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    for i in range(1, len(labels)):
        ax.axhline(i - 0.5, color="0.9", lw=0.6, zorder=0)
    ax.axvline(0.0, color="0.75", lw=0.8, zorder=0)
    ax.set_xlabel(statistic_label)
    ax.tick_params(axis="y", length=0)
    lo = float(min(cells["observed"].min(), cells["lo"].min()))
    hi = float(max(cells["observed"].max(), cells["hi"].max()))
    pad = 0.05 * (hi - lo)
    for cax, m in zip(cell_axes, models):
        sub = cells[cells["model"] == m]
        out = ~((sub["lo"] <= sub["observed"]) & (sub["observed"] <= sub["hi"]))
        for flag, colour in ((False, colours[m]), (True, "tab:red")):
            s = sub[out == flag]
            cax.vlines(s["observed"], s["lo"], s["hi"], color=colour, lw=0.8, alpha=0.6)
            cax.plot(s["observed"], s["median"], "o", ms=2.5, color=colour)
        cax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k--", lw=0.8)
        cax.set(xlim=(lo - pad, hi + pad), ylim=(lo - pad, hi + pad), xlabel=f"observed {cell_label}")
        cax.set_aspect("equal")
        cax.set_title(f"{m}: {int((~out).sum())} of {len(sub)} inside", fontsize=10)
    cell_axes[0].set_ylabel(f"replicated: median, {interval}")
    handles, names = ax.get_legend_handles_labels()
    handles.append(plt.Line2D([], [], color="tab:red", marker="o", ms=2.5, lw=0.8))
    names.append(f"a cell outside its {interval} interval")
    fig.legend(handles, names, loc="outside lower center", ncols=len(names), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    return fig
