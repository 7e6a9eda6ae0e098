"""Observation models: the ``numpyro.sample`` sites that link an agent's predictions to responses.

- :mod:`~pragmodels.likelihoods.categorical`: choices (listener, speaker), count vectors, binned
  responses and ordinal Likert ratings, each with an optional lapse;
- :mod:`~pragmodels.likelihoods.rater`: ordinal ratings with each rater's latent score integrated
  out by quadrature;
- :mod:`~pragmodels.likelihoods.slider`: raw slider responses from beliefs over a state grid.

The names of :mod:`~pragmodels.likelihoods.categorical` are re-exported here
(``pm.likelihoods.speaker_choices``).
"""

from pragmodels.likelihoods import rater, slider
from pragmodels.likelihoods.categorical import *  # noqa: F403
from pragmodels.likelihoods.categorical import __all__ as _categorical_all

__all__ = [*_categorical_all, "rater", "slider"]
