"""Forest plot of the same parameters across several fits (ArviZ ``plot_forest``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import xarray as xr
    from matplotlib.figure import Figure


def _common_draws(trees: Mapping[str, xr.DataTree], var_names: Sequence[str]) -> dict[str, xr.DataTree]:
    """Each fit's posterior for ``var_names``, cut to the chains and draws that every fit has.

    ``plot_forest`` aligns the fits on their chain and draw coordinates; fits with different
    numbers of draws (e.g. 1,500 for the human fit, 600 for the LLM fits) then come out as NaN
    for every fit but one and vanish from the plot. A forest plot shows medians and intervals,
    which the first ``min`` draws of every chain estimate well enough."""
    import xarray as xr

    n_chain = min(t["posterior"].sizes["chain"] for t in trees.values())
    n_draw = min(t["posterior"].sizes["draw"] for t in trees.values())
    out = {}
    for label, tree in trees.items():
        post = tree["posterior"].to_dataset()[list(var_names)].isel(chain=slice(0, n_chain), draw=slice(0, n_draw))
        out[label] = xr.DataTree.from_dict({"posterior": post})
    return out


def forest(trees: Mapping[str, xr.DataTree], var_names: Sequence[str], figsize: tuple[float, float] = (8, 10)
           ) -> Figure:
    """``trees``: ``{label: DataTree}`` (e.g. humans and each LLM x prompt); returns the Figure.
    Fits with more chains or draws than the others are cut to the common number (see
    :func:`_common_draws`).

    Shapes: each of ``var_names`` ``[chain, draw, *dims]`` in every fit's posterior (same ``dims``).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import arviz_plots as azp

    from cycler import cycler
    import matplotlib.pyplot as plt

    # one colour per fit: the default cycle has 10, the study compares 13 fits
    cmap = plt.get_cmap("tab20" if len(trees) > 10 else "tab10")
    colours = [cmap(i) for i in range(cmap.N)]  # a qualitative map's N entries are its listed colours
    with matplotlib.rc_context({"axes.prop_cycle": cycler(color=colours)}):
        pc = azp.plot_forest(_common_draws(trees, var_names), var_names=list(var_names), combined=True,
                             backend="matplotlib", figure_kwargs={"figsize": figsize})
        if len(trees) > 1:
            pc.add_legend("model", title="fit", loc="center left", bbox_to_anchor=(1.0, 0.5))
    return pc.viz["figure"].item() if hasattr(pc.viz["figure"], "item") else pc.viz["figure"]
