"""Plots: draw, never compute. Each function takes tidy frames or DataTrees already computed
elsewhere and returns a matplotlib ``Figure``. One plot function per file.

Figures are made with pyplot and whatever backend is active: the library never selects one,
so in Jupyter they display inline (with ``fig = ...`` as a cell's last line, once); a script
saves them (``fig.savefig``) and closes them (``matplotlib.pyplot.close(fig)``).

Layering: imports matplotlib and arviz_plots only (never likelihoods, inference or numpyro).
"""

from pragmodels.plots.accuracy_by_condition import accuracy_by_condition
from pragmodels.plots.distribution_grid import distribution_grid
from pragmodels.plots.elpd_compare import elpd_compare
from pragmodels.plots.esr_heatmap import esr_heatmap
from pragmodels.plots.esr_intervals import esr_intervals
from pragmodels.plots.forest import forest
from pragmodels.plots.human_vs_model_means import human_vs_model_means
from pragmodels.plots.means_against_model import means_against_model
from pragmodels.plots.predictive_check import predictive_check

__all__ = ["accuracy_by_condition", "distribution_grid", "elpd_compare", "esr_heatmap", "esr_intervals", "forest",
           "human_vs_model_means", "means_against_model", "predictive_check"]
