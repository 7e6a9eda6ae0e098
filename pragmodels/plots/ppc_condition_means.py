"""Posterior predictive condition means of one fit against observed means of other data sets."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from pragmodels.plots._style import PROMPT_STYLE, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def ppc_condition_means(predicted: pd.DataFrame, observed: pd.DataFrame) -> Figure:
    """``predicted``: one row per cell with ``cell`` (label), ``median, lo, hi`` (the fitted model's
    predicted mean and interval); ``observed``: columns ``model, prompt, cell, mean``.
    One panel per observed model; cells on the x axis in ``predicted``'s order."""
    models = list(dict.fromkeys(observed["model"]))
    fig, axes = new_figure(len(models), width=6.0, height=4.2, sharey=True)
    x = np.arange(len(predicted))
    pos = dict(zip(predicted["cell"], x))
    for ax, m in zip(axes, models):
        ax.fill_between(x, predicted["lo"], predicted["hi"], color="0.85", step="mid", label="human-fitted model (94%)")
        ax.plot(x, predicted["median"], "k_", ms=8)
        sub = observed[observed.model == m]
        for prompt, g in sub.groupby("prompt", sort=False):
            ax.scatter(g["cell"].map(pos), g["mean"], s=16, label=prompt, **PROMPT_STYLE.get(prompt, {}))
        ax.set_xticks(x, predicted["cell"], rotation=90, fontsize=6)
        ax.set(title=f"{m}: observed means vs human-fitted model", ylim=(1, 7))
    axes[0].set_ylabel("mean rating")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
