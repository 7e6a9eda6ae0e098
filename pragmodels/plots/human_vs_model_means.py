"""Human vs model mean ratings per cell, one panel per model (Mühlenbernd 2026, Figure 1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from pragmodels.plots._style import PROMPT_STYLE, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def human_vs_model_means(cells: pd.DataFrame, lo: float = 1.0, hi: float = 7.0) -> Figure:
    """``cells``: columns ``model, prompt, human, llm`` (one row per attribute x context x form);
    one panel per model, the rating scale ``lo``..``hi`` on both axes (dashed: model = human)."""
    models = list(dict.fromkeys(cells["model"]))
    fig, axes = new_figure(len(models), sharey=True, layout="constrained")
    for ax, m in zip(axes, models):
        sub = cells[cells.model == m]
        for prompt, g in sub.groupby("prompt", sort=False):
            style = PROMPT_STYLE.get(prompt, {})
            ax.scatter(g["human"], g["llm"], label=prompt, s=22, alpha=0.8, **style)
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        pad = 0.2  # a mean at the end of the scale is drawn whole, not cut by the frame
        ax.set(xlim=(lo - pad, hi + pad), ylim=(lo - pad, hi + pad), title=m, xlabel="human mean rating")
        ax.set(xticks=range(int(lo), int(hi) + 1), yticks=range(int(lo), int(hi) + 1))
        ax.set_aspect("equal")
    axes[0].set_ylabel("LLM mean rating")
    axes[-1].legend(title="prompt", loc="lower right", fontsize=8)
    fig.suptitle("Mean rating per attribute x context x form: each LLM (by prompt) against the humans")
    return fig
