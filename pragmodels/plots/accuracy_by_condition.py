"""Accuracy by condition with intervals, one marker per series, and reference lines (chance, ceiling)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def accuracy_by_condition(table: pd.DataFrame, *, references: Mapping[str, float] | None = None,
                          order: Sequence[str] | None = None, title: str = "", note: str = "",
                          figsize: tuple[float, float] = (8.0, 4.2)) -> Figure:
    """Accuracy per condition (x) for each series (e.g. scored letters, sampled answers, fitted models).

    ``table``: one row per (series, condition) with columns ``series``, ``condition``, ``mean``,
    ``lo``, ``hi`` (the interval drawn as an error bar) and optionally ``n_item`` (when it differs
    between rows, written in a row of its own under the condition names, in each series' colour
    below its marker). ``references``: ``{label: accuracy}`` drawn as dashed horizontal lines
    (e.g. chance 0.2, a human ceiling). The series are offset sideways so their bars do not
    overlap. ``note``: a line under the figure (e.g. why some intervals have no width). Returns
    the Figure.

    Shapes: ``table [row]`` -> one Axes.
    """
    import textwrap

    import matplotlib.pyplot as plt
    import numpy as np

    need = {"series", "condition", "mean", "lo", "hi"}
    missing = need - set(table.columns)
    if missing:
        raise ValueError(f"table has no column {sorted(missing)[0]!r}; expected {sorted(need)}.")
    conds = list(order) if order is not None else list(dict.fromkeys(table["condition"]))
    unknown = sorted(set(table["condition"]) - set(conds))
    if unknown:
        raise ValueError(f"condition {unknown[0]!r} is not in order {conds}.")
    series = list(dict.fromkeys(table["series"]))
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    width = 0.7 / max(len(series), 1)
    colors = plt.get_cmap("tab10")
    show_n = "n_item" in table and table["n_item"].nunique() > 1
    for k, s in enumerate(series):
        rows = table[table["series"] == s].set_index("condition")
        x = np.array([conds.index(c) for c in rows.index], dtype=float) + (k - (len(series) - 1) / 2) * width
        m, lo, hi = rows["mean"].to_numpy(float), rows["lo"].to_numpy(float), rows["hi"].to_numpy(float)
        # an interval of identical values (every item wrong) can sit a rounding error off its mean
        yerr = [np.maximum(m - lo, 0.0), np.maximum(hi - m, 0.0)]
        ax.errorbar(x, m, yerr=yerr, fmt="o", capsize=3, color=colors(k), label=s)
        if show_n:
            for xi, n in zip(x, rows["n_item"]):
                # under the condition names, away from the data: a point at 0 never meets its label
                ax.annotate(f"{int(n)}", (xi, 0.0), xycoords=("data", "axes fraction"), xytext=(0, -18),
                            textcoords="offset points", ha="center", va="top", fontsize=7, color=colors(k))
    for j, (label, y) in enumerate((references or {}).items()):
        ax.axhline(y, ls="--", lw=1, color=("0.35", "0.6", "0.2")[j % 3])
        ax.annotate(label, (len(conds) - 0.5, y), xytext=(-2, 2), textcoords="offset points", ha="right",
                    va="bottom", fontsize=8, color="0.25")
    ax.set_xticks(range(len(conds)), conds)
    ax.set_xlim(-0.6, len(conds) - 0.4)
    ax.set_ylim(-0.03, 1)  # a condition at 0 (every answer malformed) stays visible
    ax.set_ylabel("accuracy (against the human consensus)")
    ax.set_xlabel("condition", labelpad=14 if show_n else 4)
    if show_n:
        ax.annotate("items:", (0.0, 0.0), xycoords="axes fraction", xytext=(-6, -18), textcoords="offset points",
                    ha="right", va="top", fontsize=7, color="0.25")
    if title:
        ax.set_title(title)
    if note:  # wrapped to the figure's width (about 15 characters an inch at 8 points)
        fig.supxlabel(textwrap.fill(note, width=int(15 * figsize[0])), fontsize=8, color="0.25")
    ax.legend(loc="center left", fontsize=8, frameon=False)  # the top holds the reference lines
    return fig
