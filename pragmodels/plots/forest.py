"""Forest plot of the same parameters across several fits (ArviZ ``plot_forest``)."""

from __future__ import annotations


def forest(trees: dict, var_names, figsize=(8, 10)):
    """``trees``: ``{label: DataTree}`` (e.g. humans and each LLM x prompt); returns the Figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import arviz_plots as azp

    pc = azp.plot_forest(trees, var_names=list(var_names), combined=True, backend="matplotlib",
                         figure_kwargs={"figsize": figsize})
    if len(trees) > 1:
        pc.add_legend("model", title="fit", loc="center left", bbox_to_anchor=(1.0, 0.5))
    return pc.viz["figure"].item() if hasattr(pc.viz["figure"], "item") else pc.viz["figure"]
