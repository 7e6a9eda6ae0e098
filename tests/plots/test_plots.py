"""Plots: what each figure must show (checked on the drawn artists, not by eye)."""

import subprocess
import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from pragmodels import plots
from pragmodels.plots.esr_heatmap import contrast_ratio


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _tree(n_draw, loc, seed):
    rng = np.random.default_rng(seed)
    post = xr.Dataset({v: (("chain", "draw"), rng.normal(loc + i, 0.3, (4, n_draw))) for i, v in enumerate(["alpha", "noise"])},
                      coords={"chain": np.arange(4), "draw": np.arange(n_draw)})
    return xr.DataTree.from_dict({"posterior": post})


def _interval_lines(fig):
    """The forest's credible-interval lines (not the dashed reference line)."""
    return [ln for ax in fig.axes for ln in ax.get_lines()
            if ln.get_gid() != "reference" and np.isfinite(np.asarray(ln.get_xdata(), float)).any()]


def test_forest_shows_every_fit_even_with_different_draw_counts():
    """Regression: the human fit drew 1,500 per chain and the LLM fits 600; ArviZ aligned them
    on the draw coordinate and only the human fit was drawn. Each fit must appear in its own
    colour, its intervals centred on the truth (0, 2 and 4 for alpha; sd 0.3, so the
    centre of 2,400 draws' intervals is within 0.1)."""
    trees = {"human": _tree(1500, 0.0, 0), "llm a": _tree(600, 2.0, 1), "llm b": _tree(600, 4.0, 2)}
    fig = plots.forest(trees, ["alpha", "noise"], figsize=(6, 4))
    lines = _interval_lines(fig)
    assert len({ln.get_color() for ln in lines}) == 3
    mids = [float(np.mean(np.asarray(ln.get_xdata(), float))) for ln in lines]  # centres of the intervals
    for truth in (0.0, 1.0, 2.0, 3.0, 4.0, 5.0):  # alpha and noise (alpha + 1) of the three fits
        assert sum(abs(m - truth) < 0.1 for m in mids) == 2, (truth, mids)  # its two intervals (50%, 94%)


def test_forest_gives_thirteen_fits_thirteen_colours():
    """The study compares humans and 12 LLM x prompt fits; the default cycle of 10 colours gave
    two fits the same colour."""
    trees = {f"fit {i}": _tree(100, float(i), i) for i in range(13)}
    fig = plots.forest(trees, ["alpha"], figsize=(6, 6))
    assert len({ln.get_color() for ln in _interval_lines(fig)}) == 13


def _scaled_tree(seed, loc=0.0):
    """alpha around 8 (sd 3), noise around 0.3 (sd 0.02), lapse around 0.05: one x-axis for all
    three made the two small ones dots."""
    rng = np.random.default_rng(seed)
    post = xr.Dataset({"alpha": (("chain", "draw"), rng.normal(8 + loc, 3, (2, 200))),
                       "noise": (("chain", "draw"), rng.normal(0.3, 0.02, (2, 200))),
                       "lapse": (("chain", "draw"), rng.beta(5, 95, (2, 200)))})
    return xr.DataTree.from_dict({"posterior": post})


def test_forest_gives_each_parameter_its_own_labelled_axis():
    trees = {"human": _scaled_tree(0), "gpt MIN": _scaled_tree(1, 2.0), "claude MIN": _scaled_tree(2, 4.0)}
    fig = plots.forest(trees, ["alpha", "noise", "lapse"], labels={"noise": "noise (rating points)"})
    axes = fig.axes
    assert [ax.get_xlabel() for ax in axes] == ["alpha", "noise (rating points)", "lapse"]
    widths = {ax.get_xlabel(): np.ptp(ax.get_xlim()) for ax in axes}
    assert widths["alpha"] > 10 and widths["noise (rating points)"] < 0.3 and widths["lapse"] < 0.2
    # each small parameter's intervals span a visible part of its own axis, not a dot
    for ax in axes[1:]:
        spans = [np.ptp(np.asarray(ln.get_xdata(), float)) for ln in ax.get_lines() if ln.get_gid() != "reference"]
        assert max(spans) > 0.3 * np.ptp(ax.get_xlim())
    # the fits are named once, on the left, first fit on top; no stray labels anywhere
    names = [t.get_text() for t in axes[0].get_yticklabels()]
    ys = list(axes[0].get_yticks())
    assert [n for _, n in sorted(zip(ys, names), reverse=True)] == list(trees)
    for ax in axes:
        assert ax.get_ylabel() == "" and len(ax.texts) == 0 and ax.get_title() == ""
    assert [ax.yaxis.get_tick_params()["labelleft"] for ax in axes] == [True, False, False]
    assert [t.get_text() for t in fig.texts] == ["Posterior median, 50% and 94% intervals; dashed: median of human"]


def test_a_single_fit_forest_has_no_unexplained_reference_line():
    fig = plots.forest({"human": _scaled_tree(0)}, ["alpha", "noise"])
    assert not [ln for ax in fig.axes for ln in ax.get_lines() if ln.get_gid() == "reference"]
    assert [t.get_text() for t in fig.texts] == ["Posterior median, 50% and 94% intervals"]
    fig = plots.forest({"human": _scaled_tree(0)}, ["alpha"], reference=1.0)
    assert len([ln for ln in fig.axes[0].get_lines() if ln.get_gid() == "reference"]) == 1


def test_forest_marks_and_fades_unconverged_fits():
    trees = {"human": _scaled_tree(0), "gpt MIN": _scaled_tree(1, 2.0), "claude MIN": _scaled_tree(2, 4.0)}
    fig = plots.forest(trees, ["alpha", "noise"], unconverged=["gpt MIN"])
    ax = fig.axes[0]
    names = dict(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels())))
    assert sorted(names.values()) == ["claude MIN", "gpt MIN †", "human"]
    row = next(y for y, n in names.items() if n == "gpt MIN †")
    # by colour, not geometry: every artist in the fit's own colour is faded, every other one is not
    colour = {}
    for a in (*ax.lines, *ax.collections):
        if a.get_gid() == "reference":
            continue
        rgb = tuple(np.round(a.get_color() if hasattr(a, "get_ydata") else a.get_edgecolor()[0], 3)[:3])
        colour.setdefault(rgb, []).append(a.get_alpha())
    assert len(colour) == 3  # one colour per fit
    faded = [alphas for alphas in colour.values() if 0.35 in alphas]
    assert len(faded) == 1 and set(faded[0]) == {0.35} and len(faded[0]) >= 3  # 50% and 94% lines and the point
    assert all(set(alphas) == {None} for alphas in colour.values() if alphas is not faded[0])
    assert row in names
    assert any("† faded: below the sampling standards" in t.get_text() for t in fig.texts)
    with pytest.raises(ValueError, match=r"unconverged names 'gpt ALT', which is not one of the fits"):
        plots.forest(trees, ["alpha"], unconverged=["gpt ALT"])


def test_forest_splits_a_vector_parameter_into_panels():
    rng = np.random.default_rng(0)
    post = xr.Dataset({"beta": (("chain", "draw", "feature"), rng.normal(0, 1, (2, 50, 2)))},
                      coords={"feature": ["exact", "casual"]})
    fig = plots.forest({"a": xr.DataTree.from_dict({"posterior": post})}, ["beta"])
    assert [ax.get_xlabel() for ax in fig.axes] == ["beta[exact]", "beta[casual]"]


def _esr_frame(values):
    rows = []
    for m in ("gpt", "gemini"):
        for i, p in enumerate(("MIN", "ALT", "KMA", "COM")):
            for j, a in enumerate(("competent", "helpful")):
                rows.append(dict(model=m, prompt=p, kind="main", attribute=a, esr=values[(i + 4 * j) % len(values)]))
    return pd.DataFrame(rows)


def test_esr_heatmap_text_stays_readable_and_one_is_white():
    """Black text on dark red was unreadable: every number contrasts with its cell (WCAG ratio
    >= 4.5), and ESR = 1 is the map's white centre, with 2 and 1/2 equally far from it."""
    fig = plots.esr_heatmap(_esr_frame([0.1, 0.5, 1.0, 2.0, 4.0, 12.0, np.nan, 0.3]), title="Observed ESR")
    ax = fig.axes[0]
    im = ax.images[0]
    cmap, norm = im.get_cmap(), im.norm
    centre = cmap(norm(1.0))
    assert min(centre[:3]) > 0.95  # white
    assert abs(norm(2.0) - 0.5) == pytest.approx(abs(norm(0.5) - 0.5))
    assert norm(2.0) > 0.5 > norm(0.5)
    checked = 0
    for axis in fig.axes[:2]:
        grid = axis.images[0].get_array()
        for t in axis.texts:
            x, y = (int(round(c)) for c in t.get_position())
            cell = cmap.get_bad() if np.ma.is_masked(grid[y, x]) else cmap(norm(grid[y, x]))
            assert contrast_ratio(cell, plt.matplotlib.colors.to_rgba(t.get_color())) >= 4.5, (t.get_text(), cell)
            checked += 1
    assert checked == 16
    texts = [t.get_text() for t in ax.texts]
    assert "12.00*" in texts and "0.10*" in texts and "n/a" in texts  # outside [1/8, 8]: marked
    assert fig.get_suptitle() == "Observed ESR"


def test_esr_heatmaps_say_which_esr_they_show():
    obs = plots.esr_heatmap(_esr_frame([1.0]), title="Observed ESR")
    implied = plots.esr_heatmap(_esr_frame([1.0]), title="Model-implied ESR")
    assert obs.get_suptitle() != implied.get_suptitle()


def test_ppc_stacks_the_models_with_one_legend():
    cells = [f"a{i}|low|precise" for i in range(6)]
    predicted = pd.DataFrame(dict(cell=cells, median=np.linspace(3, 6, 6), lo=np.linspace(2.5, 5.5, 6),
                                  hi=np.linspace(3.5, 6.5, 6)))
    observed = pd.DataFrame([dict(model=m, prompt=p, cell=c, mean=4.0) for m in ("gpt", "claude")
                             for p in ("MIN", "ALT") for c in cells])
    fig = plots.ppc_condition_means(predicted, observed)
    axes = fig.axes
    assert [ax.get_title(loc="left") for ax in axes] == ["gpt", "claude"]
    assert [t.get_text() for t in axes[-1].get_xticklabels()] == cells
    assert [ax.xaxis.get_tick_params()["labelbottom"] for ax in axes] == [False, True]  # named once, at the bottom
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in axes)
    assert [t.get_text() for t in fig.legends[0].get_texts()][-2:] == ["observed mean, MIN prompt",
                                                                        "observed mean, ALT prompt"]


def test_human_vs_model_means_draws_whole_markers_at_the_scale_ends():
    cells = pd.DataFrame(dict(model="gpt", prompt="MIN", human=[1.0, 4.0, 7.0], llm=[1.0, 5.0, 7.0]))
    fig = plots.human_vs_model_means(cells)
    lo, hi = fig.axes[0].get_xlim()
    assert lo < 1.0 and hi > 7.0


@pytest.mark.subprocess
def test_importing_the_plots_selects_no_backend():
    """``matplotlib.use("Agg")`` on import switched a notebook's inline backend off: after
    importing pragmodels.plots (and drawing) the backend is still the one the user had."""
    code = ("import matplotlib; matplotlib.use('svg'); import pragmodels.plots as plots, pandas;"
            "plots.human_vs_model_means(pandas.DataFrame(dict(model='m', prompt='MIN', human=[2.0], llm=[3.0])));"
            "print(matplotlib.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "svg"


def test_forest_keeps_the_interactive_mode_its_first_figure_switched_on(monkeypatch):
    """Jupyter's inline backend switches interactive mode on when the first figure is made; the
    forest plot made it inside an rc_context, whose exit switched it off again, and every later
    figure of the notebook stayed hidden."""
    real = plt.figure

    def figure(*args, **kwargs):  # as the inline backend does on its first figure
        plt.ion()
        return real(*args, **kwargs)

    monkeypatch.setattr(plt, "figure", figure)
    was = plt.isinteractive()
    plt.ioff()
    try:
        plots.forest({"a": _tree(50, 0.0, 0), "b": _tree(50, 1.0, 1)}, ["alpha"])
        assert plt.isinteractive()
    finally:
        plt.interactive(was)


def test_esr_heatmap_shows_only_the_prompts_with_data():
    """One LLM condition (the notebook's gemini MIN) was one coloured column squeezed between three
    of n/a."""
    df = _esr_frame([1.5])
    fig = plots.esr_heatmap(df[(df.model == "gemini") & (df.prompt == "MIN")], title="Model-implied ESR")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["MIN"]
    assert "n/a" not in [t.get_text() for t in fig.axes[0].texts]


def test_accuracy_by_condition_draws_every_bar_and_reference():
    t = pd.DataFrame({"series": ["scored", "scored", "sampled", "sampled"], "condition": ["vanilla", "all"] * 2,
                      "mean": [0.3, 0.4, 0.2, 0.25], "lo": [0.25, 0.35, 0.1, 0.2], "hi": [0.35, 0.45, 0.3, 0.3],
                      "n_item": [231, 231, 40, 40]})
    fig = plots.accuracy_by_condition(t, references={"chance": 0.2, "ceiling": 0.8}, order=["vanilla", "all"])
    ax = fig.axes[0]
    assert [tx.get_text() for tx in ax.get_xticklabels()] == ["vanilla", "all"]
    assert [tx.get_text() for tx in ax.get_legend().get_texts()] == ["scored", "sampled"]
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert sorted(ln.get_ydata()[0] for ln in dashed) == [0.2, 0.8]
    # the markers sit at the means, the series side by side
    pts = sorted((round(float(x), 3), round(float(y), 3)) for c in ax.containers for x, y in zip(*c.lines[0].get_data()))
    assert [y for _, y in pts] == [0.3, 0.2, 0.4, 0.25]   # by x: first series on the left
    assert {tx.get_text() for tx in ax.texts} >= {"n=231", "n=40", "chance", "ceiling"}
    with pytest.raises(ValueError, match="'hi'"):
        plots.accuracy_by_condition(t.drop(columns="hi"))
    with pytest.raises(ValueError, match="'all' is not in order"):
        plots.accuracy_by_condition(t, order=["vanilla"])
