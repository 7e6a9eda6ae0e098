"""Plots: what each figure must show (checked on the drawn artists, not by eye)."""

import numpy as np
import xarray as xr

from pragmodels import plots


def _tree(n_draw, loc, seed):
    rng = np.random.default_rng(seed)
    post = xr.Dataset({v: (("chain", "draw"), rng.normal(loc + i, 0.3, (4, n_draw))) for i, v in enumerate(["alpha", "noise"])},
                      coords={"chain": np.arange(4), "draw": np.arange(n_draw)})
    return xr.DataTree.from_dict({"posterior": post})


def test_forest_shows_every_fit_even_with_different_draw_counts():
    """Regression: the human fit drew 1,500 per chain and the LLM fits 600; ArviZ aligned them
    on the draw coordinate and only the human fit was drawn. Each fit must appear in its own
    colour, its intervals centred on the truth (0, 2 and 4 for alpha; sd 0.3, so the
    centre of 2,400 draws' intervals is within 0.1)."""
    trees = {"human": _tree(1500, 0.0, 0), "llm a": _tree(600, 2.0, 1), "llm b": _tree(600, 4.0, 2)}
    fig = plots.forest(trees, ["alpha", "noise"], figsize=(6, 4))
    lines = [ln for ax in fig.axes for ln in ax.get_lines()
             if np.isfinite(np.asarray(ln.get_xdata(), float)).any()]
    assert len({ln.get_color() for ln in lines}) == 3
    mids = [float(np.mean(np.asarray(ln.get_xdata(), float))) for ln in lines]  # centres of the intervals
    for truth in (0.0, 1.0, 2.0, 3.0, 4.0, 5.0):  # alpha and noise (alpha + 1) of the three fits
        assert sum(abs(m - truth) < 0.1 for m in mids) == 2, (truth, mids)  # its two intervals (50%, 94%)


def test_forest_gives_thirteen_fits_thirteen_colours():
    """The study compares humans and 12 LLM x prompt fits; the default cycle of 10 colours gave
    two fits the same colour."""
    trees = {f"fit {i}": _tree(100, float(i), i) for i in range(13)}
    fig = plots.forest(trees, ["alpha"], figsize=(6, 6))
    colours = {ln.get_color() for ax in fig.axes for ln in ax.get_lines()
               if np.isfinite(np.asarray(ln.get_xdata(), float)).any()}
    assert len(colours) == 13
