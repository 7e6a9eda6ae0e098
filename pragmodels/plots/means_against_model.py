"""Condition means observed in other data sets against one fitted model's implied condition means
(e.g. each LLM's ratings against the model fitted to the humans): a comparison with a model of
other data, not a posterior predictive check of these data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pragmodels.plots._style import PROMPT_STYLE

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def means_against_model(predicted: pd.DataFrame, observed: pd.DataFrame, lo: float = 1.0, hi: float = 7.0,
                        interval: str = "94%", fitted: str = "human-fitted model",
                        title: str = "Observed condition means against a fitted model's condition means") -> Figure:
    """``predicted``: one row per cell with ``cell`` (label), ``median, lo, hi`` (the ``fitted``
    model's implied condition mean and its ``interval``); ``observed``: columns ``model, prompt,
    cell, mean``. One panel per observed model, stacked with a shared x axis (cells in
    ``predicted``'s order, named under the bottom panel) and rating scale ``lo``..``hi``; one
    legend beside them; titled ``title`` (say what is compared with what)."""
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(observed["model"]))
    if not models:
        raise ValueError("observed has no rows to plot.")
    x = np.arange(len(predicted))
    fig, axes = plt.subplots(len(models), 1, figsize=(max(8.0, 0.3 * len(x) + 2.5), 2.3 * len(models) + 1.3),
                             sharex=True, sharey=True, squeeze=False, layout="constrained")
    axes = axes[:, 0]
    pos = dict(zip(predicted["cell"], x))
    for ax, m in zip(axes, models):
        ax.fill_between(x, predicted["lo"], predicted["hi"], color="0.85", step="mid",
                        label=f"{fitted}, {interval} interval")
        ax.plot(x, predicted["median"], "k_", ms=9, label=f"{fitted}, median")
        sub = observed[observed.model == m]
        for prompt, g in sub.groupby("prompt", sort=False):
            ax.scatter(g["cell"].map(pos), g["mean"], s=18, label=f"observed mean, {prompt} prompt",
                       zorder=3, **PROMPT_STYLE.get(prompt, {}))
        ax.set_title(m, loc="left", fontsize=10)
        ax.set_ylabel("mean rating")
        ax.set(ylim=(lo - 0.3, hi + 0.3), yticks=np.arange(lo, hi + 1))
        ax.set_xlim(-0.6, len(x) - 0.4)
        ax.grid(axis="y", color="0.93", lw=0.8)
        ax.set_axisbelow(True)
    axes[-1].set_xticks(x, predicted["cell"], rotation=90, fontsize=8)
    axes[-1].set_xlabel("cell (attribute | context | form)")
    entries: dict[str, Any] = {}  # every panel's, once each: a model with one prompt first must not hide the others'
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        for handle, label in zip(handles, labels):
            entries.setdefault(label, handle)
    fig.legend(list(entries.values()), list(entries.keys()), loc="outside right center", fontsize=8)
    fig.suptitle(title, fontsize=10)
    return fig
