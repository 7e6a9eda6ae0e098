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


def test_common_draws_spread_over_the_chain_not_its_first_ones():
    """A fit of two basins holds each basin's draws in a block of its chains (first 1,200 of 1,500 at 0,
    the last 300 at 10): cut to another fit's 600 draws, the forest keeps evenly spaced ones, so the
    second basin's share stays a fifth (the first 600 would hold none of it)."""
    from pragmodels.plots.forest import _common_draws

    blocks = _tree(1500, 0.0, 0)
    blocks["posterior"]["alpha"].values[:, 1200:] += 10.0
    out = _common_draws({"basins": blocks, "other": _tree(600, 0.0, 1)}, ["alpha"])
    kept = out["basins"]["posterior"]["alpha"].values
    assert kept.shape == (4, 600) and list(out["basins"]["posterior"]["draw"].values) == list(range(600))
    assert abs(float((kept > 5).mean()) - 0.2) < 0.01


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
    note = next(t for t in fig.texts if "† faded: below the sampling standards" in t.get_text())
    # under every panel's x label, also one that wraps to two lines (it overlapped them before)
    fig = plots.forest(trees, ["alpha", "noise"], unconverged=["gpt MIN"],
                       labels={"alpha": "alpha (speaker rationality):\nLLM minus humans"})
    note = next(t for t in fig.texts if "† faded" in t.get_text())
    r = fig.canvas.get_renderer()
    assert note.get_window_extent(r).y1 <= min(a.xaxis.label.get_window_extent(r).y0 for a in fig.axes)
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


def test_means_against_model_stacks_the_models_with_one_legend():
    cells = [f"a{i}|low|precise" for i in range(6)]
    predicted = pd.DataFrame(dict(cell=cells, median=np.linspace(3, 6, 6), lo=np.linspace(2.5, 5.5, 6),
                                  hi=np.linspace(3.5, 6.5, 6)))
    observed = pd.DataFrame([dict(model=m, prompt=p, cell=c, mean=4.0) for m in ("gpt", "claude")
                             for p in ("MIN", "ALT") for c in cells])
    fig = plots.means_against_model(predicted, observed)
    # LLM means against a model fitted to the humans: not a posterior predictive check, and not titled one
    assert "predictive" not in fig.get_suptitle().lower()
    assert plots.means_against_model(predicted, observed, title="LLMs vs humans").get_suptitle() == "LLMs vs humans"
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
    assert {tx.get_text() for tx in ax.texts} >= {"231", "40", "items:", "chance", "ceiling"}
    with pytest.raises(ValueError, match="'hi'"):
        plots.accuracy_by_condition(t.drop(columns="hi"))
    with pytest.raises(ValueError, match="'all' is not in order"):
        plots.accuracy_by_condition(t, order=["vanilla"])


def test_accuracy_by_condition_writes_item_counts_apart_from_the_points_and_a_note():
    """The n= labels were drawn at accuracy 0, on top of the points of a condition where every
    answer was wrong; the figure did not say why some fitted models have no interval."""
    t = pd.DataFrame({"series": ["scored", "scored", "sampled", "sampled"], "condition": ["vanilla", "all"] * 2,
                      "mean": [0.3, 0.4, 0.0, 0.0], "lo": [0.25, 0.35, 0.0, 0.0], "hi": [0.35, 0.45, 0.2, 0.2],
                      "n_item": [231, 231, 15, 15]})
    fig = plots.accuracy_by_condition(t, order=["vanilla", "all"], note="why: no interval")
    fig.canvas.draw()
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    bottom = ax.get_window_extent(renderer).y0
    counts = [tx for tx in ax.texts if tx.get_text() in ("231", "15", "items:")]
    assert len(counts) == 5
    assert all(tx.get_window_extent(renderer).y1 < bottom for tx in counts)  # under the axes, not on a point
    names = ax.xaxis.get_ticklabels()
    assert all(tx.get_window_extent(renderer).y1 <= min(n.get_window_extent(renderer).y0 for n in names) + 1
               for tx in counts)  # under the condition names
    assert ax.xaxis.label.get_window_extent(renderer).y1 <= min(tx.get_window_extent(renderer).y0 for tx in counts)
    assert fig._supxlabel is not None and fig._supxlabel.get_text() == "why: no interval"
    long = "a reason " * 40  # wrapped to the figure's width, not cut at its edges
    fig = plots.accuracy_by_condition(t, order=["vanilla", "all"], note=long, figsize=(8.0, 4.2))
    fig.canvas.draw()
    box = fig._supxlabel.get_window_extent(fig.canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and "\n" in fig._supxlabel.get_text()


def _esr_model_frame():
    rows = []
    for m in ("gpt", "claude"):
        for p in ("MIN", "ALT"):
            for k, a in (("main", "competent"), ("interaction", "likeable")):
                flip = m == "gpt" and p == "MIN" and k == "interaction"
                rows.append(dict(model=m, prompt=p, kind=k, attribute=a, esr=0.12 if flip else 1.5,
                                 lo=-0.17 if flip else 0.9, hi=0.54 if flip else 12.0, p_sign_flip=0.2 if flip else 0.0))
    return pd.DataFrame(rows)


def test_esr_intervals_show_the_sign_the_interval_and_p_sign_flip():
    """The model-based ESR was drawn as a heatmap of posterior medians of |ESR|: neither the
    sign, nor the interval, nor P(sign flip) could be seen."""
    fig = plots.esr_intervals(_esr_model_frame())
    ax = fig.axes[0]
    assert [a.get_title() for a in fig.axes] == ["gpt", "claude"]
    assert ax.get_xscale() == "asinh"  # negative ratios and ratios of 12 on one axis
    spans = sorted(tuple(np.round(ln.get_xdata(), 2)) for ln in ax.get_lines() if len(ln.get_xdata()) == 2
                   and ln.get_xdata()[0] != ln.get_xdata()[1])
    assert (-0.17, 0.54) in spans and spans.count((0.9, 12.0)) == 3  # each interval, its negative end included
    assert ax.get_xlim()[0] < -0.17 and ax.get_xlim()[1] > 12.0
    assert [t.get_text() for t in ax.texts] == ["P(flip) 0.20"]  # only where P(sign flip) > 0.05
    assert not fig.axes[1].texts
    zero = [ln for ln in ax.get_lines() if list(ln.get_xdata()) == [0, 0]]
    assert len(zero) == 1 and zero[0].get_linestyle() == ":"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["main: competent", "interaction: likeable"]
    with pytest.raises(ValueError, match="'p_sign_flip'"):
        plots.esr_intervals(_esr_model_frame().drop(columns="p_sign_flip"))


def test_predictive_check_draws_each_observed_value_once_and_counts_the_cells_outside():
    stats = pd.DataFrame([dict(model=m, label=lab, observed=obs, median=obs + 0.1, lo=obs - 0.5, hi=obs + 0.5)
                          for m in ("rsa", "baseline") for lab, obs in (("main: a", 1.0), ("interaction: a", 0.5))])
    cells = pd.DataFrame([dict(model=m, observed=float(i), median=float(i), lo=i - 0.5 + (3 if i == 0 else 0),
                               hi=i + 0.5 + (3 if i == 0 else 0)) for m in ("rsa", "baseline") for i in range(5)])
    fig = plots.predictive_check(stats, cells, title="Check of the human fits")
    assert fig.get_suptitle() == "Check of the human fits"
    assert [a.get_title() for a in fig.axes[1:]] == ["rsa: 4 of 5 inside", "baseline: 4 of 5 inside"]
    observed = [c for c in fig.axes[0].collections if c.get_label() == "observed"]
    assert len(observed) == 1 and len(observed[0].get_segments()) == 2  # once per statistic, not once per model
    red = [ln for ln in fig.axes[1].get_lines() if ln.get_color() == "tab:red"]
    assert len(red) == 1 and list(red[0].get_xdata()) == [0.0]
    with pytest.raises(ValueError, match="same models in the same order"):
        plots.predictive_check(stats, cells[cells.model == "rsa"])


def test_elpd_compare_draws_each_model_against_the_best():
    cmp = pd.DataFrame({"elpd_diff": [0.0, -1.4, -3.9], "dse": [0.0, 3.6, 4.7]}, index=["rsa", "motives", "baseline"])
    fig = plots.elpd_compare(cmp, title="Human ratings")
    ax = fig.axes[0]
    names = dict(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels())))
    assert [names[y] for y in sorted(names, reverse=True)] == ["rsa", "motives", "baseline"]  # best on top
    bars = sorted(tuple(np.round(ln.get_xdata(), 2)) for ln in ax.get_lines() if len(set(ln.get_ydata())) == 1
                  and len(set(ln.get_xdata())) == 2)
    assert (-5.0, 2.2) in bars and (-8.6, 0.8) in bars  # +- 1 SE of the difference
    lo, hi = ax.get_xlim()
    assert lo < -8.6 and hi > 2.2  # every bar whole
    assert ax.get_title().startswith("Human ratings\nhigher is better")
    with pytest.raises(ValueError, match="best model first"):
        plots.elpd_compare(cmp.iloc[::-1])
    with pytest.raises(ValueError, match="'dse'"):
        plots.elpd_compare(cmp.drop(columns="dse"))


def test_forest_writes_a_note_where_a_fit_has_no_draws_of_a_parameter():
    """The contrast figure drew a point fixed at 0 for every MIN row of 'CDS minus CDS under MIN'."""
    rng = np.random.default_rng(0)

    def tree(x):
        return xr.DataTree.from_dict({"posterior": xr.Dataset({"d": (("chain", "draw"), x),
                                                               "e": (("chain", "draw"), rng.normal(0, 1, (2, 50)))})})

    fig = plots.forest({"gpt MIN": tree(np.full((2, 50), np.nan)), "gpt ALT": tree(rng.normal(1, 0.2, (2, 50)))},
                       ["d", "e"], reference=0.0, absent="the reference")
    assert [t.get_text() for t in fig.axes[0].texts] == ["the reference"] and not fig.axes[1].texts
    rows = dict(zip((t.get_text() for t in fig.axes[0].get_yticklabels()), fig.axes[0].get_yticks()))
    assert fig.axes[0].texts[0].xy == (0.0, rows["gpt MIN"])
    first = [ln for ln in fig.axes[0].get_lines() if ln.get_gid() != "reference"]
    assert all(np.allclose(ln.get_ydata(), rows["gpt ALT"]) for ln in first)  # no interval in the MIN row


def test_distribution_grid_names_the_scale_ends():
    panels = [{"title": "'hot tea', target 80", "left": "cold", "right": "hot", "human": [70.0, 80.0], "target": 80.0,
               "series": {"L0": np.full(21, 1 / 21)}}]
    fig = plots.distribution_grid(panels, np.arange(0, 101, 5), ncols=1)
    assert fig.axes[0].get_title() == "'hot tea', target 80\n0 = cold ... 100 = hot"


def test_means_against_model_names_every_prompt_in_its_legend():
    """A first model with the MIN prompt alone (a new LM) hid the other models' prompts from the legend."""
    cells = [f"a{i}|low|precise" for i in range(3)]
    predicted = pd.DataFrame(dict(cell=cells, median=[4.0] * 3, lo=[3.5] * 3, hi=[4.5] * 3))
    observed = pd.DataFrame([dict(model="smollm2", prompt="MIN", cell=c, mean=4.0) for c in cells]
                            + [dict(model="gpt", prompt=p, cell=c, mean=5.0) for p in ("MIN", "ALT") for c in cells])
    fig = plots.means_against_model(predicted, observed)
    assert [t.get_text() for t in fig.legends[0].get_texts()][-2:] == ["observed mean, MIN prompt",
                                                                        "observed mean, ALT prompt"]
