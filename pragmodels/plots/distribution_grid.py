"""A grid of items, each a histogram of human responses and model distributions on one scale."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def distribution_grid(panels: Sequence[Mapping[str, object]], state_values: Sequence[float], *,
                      ncols: int = 4, bin_width: float = 5.0, xlabel: str = "value",
                      ylabel: str = "probability") -> Figure:
    """One panel per item: the humans' responses binned to the states (bars) and each model's
    distribution over the states (lines with markers), a dashed line at the target.

    Shapes: each panel ``{"title": str, "human": [response], "target": float, "series": {label:
    [state]}}`` and optionally ``"left"`` and ``"right"``, the scale's ends (written under the
    title with the states' first and last values, e.g. "0 = cold ... 100 = hot");
    ``state_values [state]``.

    Parameters
    ----------
    panels : sequence of mapping
        ``title``, ``human`` (raw responses), ``target`` and ``series`` (label -> probabilities
        over the states, already computed); ``left`` and ``right`` (optional): what the scale's
        ends mean.
    state_values : sequence of float
        The states' values (e.g. 0, 5, ..., 100).
    ncols : int
        Panels per row.
    bin_width : float
        Width of the bars (the states' spacing).
    xlabel, ylabel : str
        Axis labels (on the outer panels only).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt
    import numpy as np

    values = np.asarray(state_values, float)
    n = len(panels)
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 2.4 * nrows), sharex=True, sharey=True,
                             squeeze=False, layout="constrained")
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.set_visible(False)
            continue
        p = panels[k]
        human = np.asarray(p["human"], float)
        idx = np.abs(human[:, None] - values[None, :]).argmin(1)
        share = np.bincount(idx, minlength=len(values)) / len(human)
        ax.bar(values, share, width=bin_width * 0.9, color="0.8", label=f"humans (n = {len(human)})")
        series = p["series"]
        assert isinstance(series, Mapping)
        for c, (label, probs) in enumerate(series.items()):
            ax.plot(values, np.asarray(probs, float), marker="o", ms=2.5, lw=1.2, color=colours[c % len(colours)],
                    label=str(label))
        ax.axvline(float(p["target"]), color="k", ls="--", lw=0.8)  # type: ignore[arg-type]
        title = str(p["title"])
        if "left" in p or "right" in p:
            title += f"\n{values[0]:g} = {p.get('left', '?')} ... {values[-1]:g} = {p.get('right', '?')}"
        ax.set_title(title, fontsize=8)
        ax.tick_params(labelsize=7)
        if k % ncols == 0:
            ax.set_ylabel(ylabel, fontsize=8)
        if k // ncols == nrows - 1 or k + ncols >= n:
            ax.set_xlabel(xlabel, fontsize=8)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    handles.append(plt.Line2D([], [], color="k", ls="--", lw=0.8))
    labels.append("target")
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8, frameon=False)
    return fig
