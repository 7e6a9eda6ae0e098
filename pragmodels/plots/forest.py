"""Forest plot of the same parameters across several fits (ArviZ ``plot_forest``), one panel and
x-axis per parameter."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from pragmodels.plots._style import fit_colours

if TYPE_CHECKING:
    import xarray as xr
    from matplotlib.figure import Figure


def _common_draws(trees: Mapping[str, xr.DataTree], var_names: Sequence[str]) -> dict[str, xr.DataTree]:
    """Each fit's posterior for ``var_names``, cut to the chains and draws that every fit has, with
    a parameter that has dims beyond ``chain, draw`` split into one scalar variable per element
    (``beta[exact, competent]``), so that each gets its own panel.

    ``plot_forest`` aligns the fits on their chain and draw coordinates; fits with different
    numbers of draws (e.g. 1,500 for the human fit, 600 for the LLM fits) then come out as NaN
    for every fit but one and vanish from the plot. A forest plot shows medians and intervals,
    which ``min`` draws of every chain estimate well enough: evenly spaced over the chain, not its
    first ones (a fit of several basins holds each basin's draws in a block of its chains,
    :func:`pragmodels.inference.basins.combine`)."""
    import itertools

    import numpy as np
    import xarray as xr

    n_chain = min(t["posterior"].sizes["chain"] for t in trees.values())
    n_draw = min(t["posterior"].sizes["draw"] for t in trees.values())
    out = {}
    for label, tree in trees.items():
        n = tree["posterior"].sizes["draw"]
        keep = np.round(np.linspace(0, n - 1, n_draw)).astype(int) if n > n_draw else slice(None)
        post = tree["posterior"].to_dataset()[list(var_names)].isel(chain=slice(0, n_chain), draw=keep)
        post = post.assign_coords(draw=np.arange(n_draw))
        flat = {}
        for v in var_names:
            da = post[v]
            extra = [d for d in da.dims if d not in ("chain", "draw")]
            if not extra:
                flat[v] = da
                continue
            for idx in itertools.product(*(range(da.sizes[d]) for d in extra)):
                sel = da.isel(dict(zip(extra, idx)))
                names = ", ".join(str(sel[d].values) if d in sel.coords else str(i) for d, i in zip(extra, idx))
                flat[f"{v}[{names}]"] = sel.drop_vars(extra, errors="ignore")
        out[label] = xr.DataTree.from_dict({"posterior": xr.Dataset(flat)})
    return out


def forest(trees: Mapping[str, xr.DataTree], var_names: Sequence[str], figsize: tuple[float, float] | None = None,
           labels: Mapping[str, str] | None = None, reference: float | None = None,
           title: str | None = None, unconverged: Collection[str] = (), absent: str | None = None) -> Figure:
    """``trees``: ``{label: DataTree}`` (e.g. humans and each LLM x prompt); returns the Figure.

    One panel per parameter, each with its own x-axis (labelled with ``labels[name]``, default
    the name), the fits as rows (named on the left, first fit on top, one colour each): posterior
    median, 50% and 94% equal-tailed intervals; a dashed line marks the first fit's median (the
    reference, e.g. the human fit), or the value ``reference`` when given (e.g. 0 for posterior
    contrasts). Fits with more chains or draws than the others are cut to the common number (see
    :func:`_common_draws`). ``title`` replaces the default title. ``unconverged``: labels of fits
    below the sampling standards; their rows are named with a ``†``, drawn faded, and a note under
    the title says what the mark means (a ``ValueError`` names a label that is not a fit).
    A fit whose draws of a parameter are all NaN has no interval in that panel; ``absent`` is
    written in its place (e.g. "the reference" for the row a contrast is taken against).

    Shapes: each of ``var_names`` ``[chain, draw, *dims]`` in every fit's posterior (same ``dims``;
    a parameter with ``dims`` gets one panel per element).
    """
    import arviz_plots as azp
    import numpy as np

    unknown = [u for u in unconverged if u not in trees]
    if unknown:
        raise ValueError(f"forest: unconverged names {unknown[0]!r}, which is not one of the fits {list(trees)}.")
    data = _common_draws(trees, var_names)
    panels = list(next(iter(data.values()))["posterior"].data_vars)
    fits = list(trees)
    if figsize is None:
        figsize = (1.4 + 2.4 * len(panels), 1.5 + 0.3 * len(fits))
    # one colour per fit: the default cycle has 10, the study compares 13 fits. Passed as the colour
    # aesthetic's values, not through rc_context: leaving an rc_context restores rcParams["interactive"],
    # which Jupyter's inline backend switches on with the first figure, and later figures stayed hidden
    colours = fit_colours(len(trees))
    pc = azp.plot_forest(data, var_names=panels, combined=True, point_estimate="median", ci_kind="eti",
                         ci_probs=(0.5, 0.94), backend="matplotlib", labels=[],
                         cols=["__variable__"], aes={"y": ["model"], "overlay": ["model"], "color": ["model"]},
                         color=colours, visuals={"ticklabels": False, "remove_axis": False},
                         figure_kwargs={"figsize": figsize, "sharey": True, "sharex": False,
                                        "width_ratios": [1.0] * len(panels)})
    fig = pc.viz["figure"].item() if hasattr(pc.viz["figure"], "item") else pc.viz["figure"]
    y = pc.get_aes_as_dataset("y")["mapping"]  # the row of each fit, the same in every panel
    rows = [float(y.sel(model=f)) for f in fits]
    axes = [pc.viz["plot"][v].item() for v in panels]
    names = [f"{f} †" if f in unconverged else f for f in fits]
    for i, (ax, name) in enumerate(zip(axes, panels)):
        ax.set_xlabel((labels or {}).get(name, name))
        ax.set_yticks(rows, names)
        for f, row in zip(fits, rows):  # fade an unconverged fit's interval lines and point
            if f in unconverged:
                for artist in (*ax.lines, *ax.collections):
                    if _at_row(artist, row):
                        artist.set_alpha(0.35)
        ax.tick_params(axis="y", length=0, labelleft=i == 0)
        ax.grid(axis="y", color="0.92", lw=0.8)
        ax.set_axisbelow(True)
        ax.set_ylim(min(rows) - 0.6, max(rows) + 0.6)
        if reference is not None or len(fits) > 1:  # one fit's own median is no reference
            ref = float(data[fits[0]]["posterior"][name].median()) if reference is None else float(reference)
            ax.axvline(ref, color="0.55", ls="--", lw=0.8, zorder=0, gid="reference")
        for f, row in zip(fits, rows):
            if absent and bool(data[f]["posterior"][name].isnull().all()):
                x = float(reference) if reference is not None else float(np.mean(ax.get_xlim()))
                ax.annotate(absent, (x, row), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8,
                            color="0.35")
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    if reference is not None:
        ref_note = f"; dashed: {reference:g}"
    else:
        ref_note = f"; dashed: median of {fits[0]}" if len(fits) > 1 else ""
    fig.suptitle(title or f"Posterior median, 50% and 94% intervals{ref_note}", fontsize=10)
    if unconverged:
        # a note under the lowest of the panels' own x labels (which may wrap to two lines), measured
        # once drawn; below the axes' area, which savefig(bbox_inches="tight") keeps
        renderer = fig.canvas.get_renderer()
        low = min(a.xaxis.label.get_window_extent(renderer).y0 for a in fig.axes)
        fig.text(0.5, (low - 4) / fig.bbox.height, "† faded: below the sampling standards (r_hat, ESS, divergences "
                 "or tree depth); not to be read as a posterior", ha="center", va="top", fontsize=8, color="0.3")
    return fig


def _at_row(artist: object, row: float) -> bool:
    """Whether an interval line (``Line2D``) or point marker (a scatter's ``PathCollection``) of
    ``plot_forest`` is drawn at height ``row`` alone (all its y-values equal ``row``). Other
    collections (shading, line collections) are never matched: their offsets default to
    ``[[0, 0]]``, which would match the row at height 0."""
    import numpy as np
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D

    if isinstance(artist, Line2D):
        ys = artist.get_ydata()
    elif isinstance(artist, PathCollection):
        ys = np.asarray(artist.get_offsets(), float)[:, 1]
    else:
        return False
    ys = np.asarray(ys, float).ravel()
    return ys.size > 0 and bool(np.allclose(ys, row))
