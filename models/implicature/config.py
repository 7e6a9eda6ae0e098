"""The implicature (DRInQ) study's config schema, :class:`Config` (``fits/implicature.json``;
``schemas/implicature.schema.json``).

A module of its own, beside :mod:`~models.implicature.study`, so that ``pragmodels run`` validates a
config before it imports the study and JAX (:func:`pragmodels.runs.study.check_study_config`): it
imports pydantic and :mod:`pragmodels.runs.schema`, nothing that computes.
:mod:`~models.implicature.study` imports it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pragmodels.lm.entry import LMEntry
from pragmodels.runs.schema import StudyConfig


class Config(StudyConfig):
    """``fits/implicature.json``: the generic study keys and this study's own."""

    lms: dict[str, LMEntry] = Field(description="the LMs to evaluate and model, by name (outputs: the folder of "
                                                "its output tables, default fits/implicature/lm_outputs; made by "
                                                "python -m models.implicature.score)")
    n_boot: int = Field(10_000, ge=100, description="bootstrap resamples of the items")
    n_draws: int = Field(400, ge=10, description="posterior draws for the predictive accuracy")
    executor: Literal["sequential", "process"] = Field("sequential", description="pragmodels.inference.fit_many executor: "
                                                                              "'sequential' or 'process'")
