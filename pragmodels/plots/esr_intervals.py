"""Signed effect size ratios with their intervals and P(sign flip), per model, prompt and effect:
what a measurement model of the ESR adds to the plug-in heatmap (:func:`esr_heatmap`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pragmodels.plots._style import PROMPT_STYLE

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

_COLUMNS = ("model", "prompt", "kind", "attribute", "esr", "lo", "hi", "p_sign_flip")


def esr_intervals(esr: pd.DataFrame, *, prompts: Sequence[str] = ("MIN", "ALT", "KMA", "COM"),
                  rope: tuple[float, float] = (0.8, 1.25), flip_note: float = 0.05, interval: str = "94%",
                  title: str = "Model-based ESR: LLM effect / human effect, signed, with intervals") -> Figure:
    """One panel per model, one row per effect, one interval per prompt in the row (markers and
    colours of :data:`~pragmodels.plots._style.PROMPT_STYLE`): the signed ESR's posterior median
    and ``interval`` interval on an ``asinh`` axis (linear around 0, so a negative ratio, a sign
    flip, is drawn on the same axis; logarithmic beyond 2, so 2 and 4 are as far apart as 4 and 8).
    Dotted line: 0 (left of it the LLM's effect has the opposite sign); shaded: ``rope`` around
    ESR = 1 (calibrated); a ratio with ``P(sign flip) > flip_note`` gets its probability written
    beside it. Returns the Figure.

    Shapes: ``esr [row]`` with columns ``model, prompt, kind, attribute, esr, lo, hi, p_sign_flip``
    (``tables/esr_model.csv`` of the social-meaning study).
    """
    import matplotlib.pyplot as plt

    missing = [c for c in _COLUMNS if c not in esr.columns]
    if missing:
        raise ValueError(f"esr has no column {missing[0]!r}; expected {list(_COLUMNS)}.")
    models = list(dict.fromkeys(esr["model"]))
    if not models:
        raise ValueError("esr has no rows to plot.")
    present = set(esr["prompt"])
    shown = [p for p in prompts if p in present] + [p for p in dict.fromkeys(esr["prompt"]) if p not in prompts]
    effects = list(dict.fromkeys(zip(esr["kind"], esr["attribute"])))
    n_eff, n_p = len(effects), len(shown)
    fig, axes = plt.subplots(1, len(models), figsize=(1.9 + 3.4 * len(models), 1.3 + 0.5 * n_eff), sharey=True,
                             squeeze=False, layout="constrained")
    axes = axes[0]
    step = 0.8 / max(n_p, 1)
    offset = {p: (k - (n_p - 1) / 2) * step for k, p in enumerate(shown)}  # first prompt on top of its row
    hi_x = max(8.0, float(np.nanmax(esr["hi"])))
    lo_x = min(-1.0, float(np.nanmin(esr["lo"])))
    for ax, m in zip(axes, models):
        ax.set_xscale("asinh", linear_width=1.0)
        ax.axvspan(*rope, color="0.9", lw=0, zorder=0)
        ax.axvline(1.0, color="0.6", lw=0.8, zorder=1)
        ax.axvline(0.0, color="k", ls=":", lw=0.9, zorder=1)
        sub = esr[esr["model"] == m]
        for _, r in sub.iterrows():
            y = effects.index((r["kind"], r["attribute"])) + offset[r["prompt"]]
            style = PROMPT_STYLE.get(r["prompt"], {})
            colour = style.get("color", "k")
            ax.plot([r["lo"], r["hi"]], [y, y], color=colour, lw=1.4, solid_capstyle="butt")
            ax.plot(r["esr"], y, ls="none", ms=4.5, color=colour, marker=style.get("marker", "o"))
            if r["p_sign_flip"] > flip_note:
                ax.annotate(f"P(flip) {r['p_sign_flip']:.2f}", (r["hi"], y), xytext=(3, 0), textcoords="offset points",
                            va="center", fontsize=7, color="0.2", bbox=dict(fc="white", ec="none", pad=0.3, alpha=0.8))
        for i in range(1, n_eff):
            ax.axhline(i - 0.5, color="0.9", lw=0.6, zorder=0)
        ax.set_xlim(lo_x, hi_x * 1.15)
        ticks = [t for t in (-4, -2, -1, 0, 0.5, 1, 2, 4, 8, 16, 32, 64) if lo_x <= t <= hi_x * 1.15]
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.set_title(m)
        ax.set_xlabel("ESR (asinh scale)")
        ax.tick_params(axis="y", length=0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    axes[0].set_yticks(range(n_eff), [f"{'main' if k == 'main' else 'interaction'}: {a}" for k, a in effects],
                       fontsize=8)
    axes[0].set_ylim(n_eff - 0.5, -0.5)  # first effect on top
    handles: list[Any] = [plt.Line2D([], [], color=PROMPT_STYLE.get(p, {}).get("color", "k"),
                          marker=PROMPT_STYLE.get(p, {}).get("marker", "o"), ms=4.5, lw=1.4, label=p) for p in shown]
    handles += [plt.matplotlib.patches.Patch(color="0.9", label=f"calibrated: {rope[0]:g} to {rope[1]:g}"),
                plt.Line2D([], [], color="k", ls=":", lw=0.9, label="0: left of it, the sign flips")]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False)
    fig.suptitle(f"{title}\n(posterior median and {interval} interval; P(flip) = P(ESR < 0), written where "
                 f"above {flip_note:g})", fontsize=10)
    return fig
