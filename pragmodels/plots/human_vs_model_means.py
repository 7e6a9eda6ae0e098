"""Human vs model mean ratings per cell, one panel per model (Mühlenbernd 2026, Figure 1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from pragmodels.plots._style import PROMPT_STYLE, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def human_vs_model_means(cells: pd.DataFrame, lo: float = 1.0, hi: float = 7.0) -> Figure:
    """``cells``: columns ``model, prompt, human, llm`` (one row per attribute x context x form)."""
    models = list(dict.fromkeys(cells["model"]))
    fig, axes = new_figure(len(models), sharey=True)
    for ax, m in zip(axes, models):
        sub = cells[cells.model == m]
        for prompt, g in sub.groupby("prompt", sort=False):
            style = PROMPT_STYLE.get(prompt, {})
            ax.scatter(g["human"], g["llm"], label=prompt, s=22, alpha=0.8, **style)
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set(xlim=(lo, hi), ylim=(lo, hi), title=m, xlabel="human mean rating")
        ax.set_aspect("equal")
    axes[0].set_ylabel("model mean rating")
    axes[-1].legend(title="prompt", loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig
