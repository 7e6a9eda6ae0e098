"""Metrics of the seed papers, one module per family:

- :mod:`~pragmodels.metrics.calibration`: the social-meaning paper's calibration metrics (ESR,
  CDS_m/CDS_i/CDS, DAS, ISS, Spearman, CCC, RMSE);
- :mod:`~pragmodels.metrics.distributions`: the Wavelength metrics of a distribution over a scale
  (error of the mean, W1 to a raw sample, entropy, Pearson r of means);
- :mod:`~pragmodels.metrics.accuracy`: accuracy of repeated multiple-choice runs, bootstrap
  intervals and paired tests.

The names of :mod:`~pragmodels.metrics.calibration` are re-exported here.
"""

from pragmodels.metrics import accuracy, distributions
from pragmodels.metrics.calibration import *  # noqa: F403
from pragmodels.metrics.calibration import __all__ as _calibration_all

__all__ = [*_calibration_all, "accuracy", "distributions"]
