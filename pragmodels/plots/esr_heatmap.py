"""Effect Size Ratio heatmap per model, prompt and effect (Mühlenbernd 2026, Figure 2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from pragmodels.plots._style import new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def esr_heatmap(esr: pd.DataFrame, vmax: float = 4.5, prompts: Sequence[str] = ("MIN", "ALT", "KMA", "COM")
                ) -> Figure:
    """``esr``: columns ``model, prompt, kind`` (main/interaction), ``attribute, esr``.

    Colour: deviation from ESR = 1 (white); blue attenuation, red exaggeration, log scale
    symmetric around 1, values above ``vmax`` marked with an asterisk.
    """
    from matplotlib.colors import TwoSlopeNorm

    models = list(dict.fromkeys(esr["model"]))
    fig, axes = new_figure(len(models), width=3.0, height=5.0)
    norm = TwoSlopeNorm(vmin=0.0, vcenter=1.0, vmax=vmax)
    im = None
    for ax, m in zip(axes, models):
        sub = esr[esr.model == m]
        rows = list(dict.fromkeys(zip(sub["kind"], sub["attribute"])))
        grid = np.full((len(rows), len(prompts)), np.nan)
        for _, r in sub.iterrows():
            grid[rows.index((r["kind"], r["attribute"])), list(prompts).index(r["prompt"])] = r["esr"]
        im = ax.imshow(np.clip(grid, 0, vmax), cmap="RdBu_r", norm=norm, aspect="auto")
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                v = grid[i, j]
                text = "n/a" if np.isnan(v) else f"{v:.2f}" + ("*" if v > vmax else "")
                ax.text(j, i, text, ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(prompts)), prompts)
        labels = [f"{'main' if k == 'main' else 'int.'}: {a}" for k, a in rows]
        ax.set_yticks(range(len(rows)), labels if ax is axes[0] else [""] * len(rows), fontsize=8)
        ax.set_title(m)
    if im is None:
        raise ValueError("esr has no rows to plot.")
    fig.subplots_adjust(left=0.16, wspace=0.08)
    fig.colorbar(im, ax=list(axes), shrink=0.6, label="ESR (values > %.1f marked *)" % vmax)
    return fig
