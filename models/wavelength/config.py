"""The Wavelength study's config schema, :class:`Config` (``fits/wavelength.json``;
``schemas/wavelength.schema.json``).

A module of its own, beside :mod:`~models.wavelength.study`, so that ``pragmodels run`` validates a
config before it imports the study and JAX (:func:`pragmodels.runs.study.check_study_config`): it
imports pydantic and :mod:`pragmodels.runs.schema`, nothing that computes.
:mod:`~models.wavelength.study` imports it.
"""

from __future__ import annotations

import difflib
from typing import Literal

from pydantic import Field, model_validator

from pragmodels.lm.entry import LMEntry
from pragmodels.runs.schema import SamplerSettings, StudyConfig


class Config(StudyConfig):
    """``fits/wavelength.json``: the generic study keys and this study's own."""

    lms: dict[str, LMEntry] = Field(description="the LMs to fit, by name (outputs: the scores file, default "
                                                "fits/wavelength/lm_scores/<name>.nc; made by python -m "
                                                "models.wavelength.score)")
    quick_items: int = Field(12, ge=2, description="items fitted in quick mode (the first scored ones)")
    cv_folds: int = Field(5, ge=2, description="folds of the item cross-validation (full mode)")
    cv: bool = Field(True, description="run the item cross-validation of the flat models, the no-LM location "
                                       "control and the LM-prior location model (full mode)")
    fresh_refit: bool = Field(True, description="refit the baseline, LM-RSA and the location models on each item's "
                                                "25 fresh guesses (after the 15 the clue was chosen by), for the LMs "
                                                "of cv_lms (every mode)")
    cv_lms: list[str] | None = Field(None, description="the LMs to cross-validate (default: all of lms)")
    cv_sampler: SamplerSettings | None = Field(None, description="NUTS settings of the cross-validation fits "
                                                                 "(default: the full settings with 2 chains)")
    by_item_sampler: SamplerSettings | None = Field(None, description="NUTS settings of the per-item (location) "
                                                                      "fits in full mode (default: the full settings)")
    n_draws: int = Field(400, ge=10, description="posterior draws for the metrics and checks")
    grid_items: int = Field(12, ge=1, description="items in the figure's grid")
    executor: Literal["sequential", "process"] = Field("sequential", description="pragmodels.inference.fit_many executor: "
                                                                              "'sequential' or 'process'")

    @model_validator(mode="after")
    def _cv_lms_are_lms(self) -> Config:
        for name in self.cv_lms or []:
            if name not in self.lms:
                near = difflib.get_close_matches(name, list(self.lms), n=1, cutoff=0.6)
                raise ValueError(f"`cv_lms` names {name!r}, which is not in `lms` ({', '.join(map(repr, self.lms))})"
                                 + (f"; did you mean {near[0]!r}?" if near else ""))
        return self
