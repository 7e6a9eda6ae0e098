"""Effect Size Ratio heatmap per model, prompt and effect (Mühlenbernd 2026, Figure 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from pragmodels.plots._style import new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike


def relative_luminance(rgba: ArrayLike) -> float:
    """WCAG 2 relative luminance of an sRGB colour, RGB or RGBA in 0..1 (0 black .. 1 white)."""
    c = np.asarray(rgba, float)[:3]
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(lin @ [0.2126, 0.7152, 0.0722])


def contrast_ratio(a: ArrayLike, b: ArrayLike) -> float:
    """WCAG 2 contrast ratio of two colours (1 .. 21; 4.5 is the minimum for small text)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def esr_heatmap(esr: pd.DataFrame, vmax: float = 8.0, prompts: Sequence[str] = ("MIN", "ALT", "KMA", "COM"),
                title: str = "Effect size ratio (model effect / human effect)") -> Figure:
    """``esr``: columns ``model, prompt, kind`` (main/interaction), ``attribute, esr``; returns the
    Figure, titled ``title`` (say which ESR it shows: observed, or model-implied).

    Colour: a diverging map centred on ESR = 1 (white: the model reproduces the human effect's
    size), blue attenuation, red exaggeration, on a log scale symmetric around 1 (ESR 2 and 1/2 are
    equally saturated), from ``1/vmax`` to ``vmax``; values outside are marked with an asterisk.
    Each cell's number is written in black or white, whichever contrasts more with the cell.
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    models = list(dict.fromkeys(esr["model"]))
    if not models:
        raise ValueError("esr has no rows to plot.")
    present = set(esr["prompt"])  # columns: the prompts with data, in ``prompts``' order, then any others
    prompts = [p for p in prompts if p in present] + [p for p in dict.fromkeys(esr["prompt"]) if p not in prompts]
    n_rows = max(len(set(zip(g["kind"], g["attribute"]))) for _, g in esr.groupby("model"))
    fig, axes = new_figure(len(models), width=0.55 * len(prompts) + 0.1, height=1.4 + 0.36 * n_rows,
                           layout="constrained")
    fig.set_figwidth(fig.get_figwidth() + 2.6)  # the first panel's row labels and the colour bar
    lo = 1.0 / vmax
    norm = LogNorm(vmin=lo, vmax=vmax)  # log-symmetric limits put ESR = 1 at the map's centre
    cmap = plt.get_cmap("RdBu_r").with_extremes(bad="0.85")
    im = None
    for ax, m in zip(axes, models):
        sub = esr[esr.model == m]
        rows = list(dict.fromkeys(zip(sub["kind"], sub["attribute"])))
        grid = np.full((len(rows), len(prompts)), np.nan)
        for _, r in sub.iterrows():
            grid[rows.index((r["kind"], r["attribute"])), list(prompts).index(r["prompt"])] = r["esr"]
        shown = np.clip(grid, lo, vmax)
        im = ax.imshow(shown, cmap=cmap, norm=norm, aspect="auto")
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                v = grid[i, j]
                if np.isnan(v):
                    text, cell = "n/a", cmap.get_bad()
                else:
                    text = f"{v:.2f}" + ("*" if v > vmax or v < lo else "")
                    cell = cmap(norm(shown[i, j]))
                colour = "black" if contrast_ratio(cell, (0, 0, 0)) >= contrast_ratio(cell, (1, 1, 1)) else "white"
                ax.text(j, i, text, ha="center", va="center", fontsize=7.5, color=colour)
        ax.set_xticks(range(len(prompts)), prompts)
        labels = [f"{'main' if k == 'main' else 'interaction'}: {a}" for k, a in rows]
        ax.set_yticks(range(len(rows)), labels if ax is axes[0] else [""] * len(rows), fontsize=8)
        ax.tick_params(length=0)
        ax.set_title(m)
    axes[len(axes) // 2].set_xlabel("prompt")
    assert im is not None  # models is not empty
    ticks = [t for t in (1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8, 16) if lo <= t <= vmax]
    bar = fig.colorbar(im, ax=list(axes), shrink=0.6, ticks=ticks,
                       label=f"ESR, log scale (outside [{lo:.3g}, {vmax:.3g}]: marked *)")
    bar.ax.set_yticklabels([f"{t:g}" for t in ticks])
    bar.ax.minorticks_off()
    fig.suptitle(title)
    return fig
