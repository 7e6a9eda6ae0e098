"""The social-meaning study's config schema, :class:`Config` (``fits/social_meaning.json``;
``schemas/social_meaning.schema.json``).

A module of its own, beside :mod:`~models.social_meaning.study`, so that ``pragmodels run`` validates
a config before it imports the study and JAX (:func:`pragmodels.runs.study.check_study_config`):
it imports pydantic and :mod:`pragmodels.runs.schema` and the data sets' names, nothing that
computes. :mod:`~models.social_meaning.study` imports it.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pydantic
from pydantic import Field

from pragmodels.datasets import LLMS, PROMPTS
from pragmodels.lm.entry import LMEntry
from pragmodels.runs.schema import ModeSamplers, SamplerSettings, Strict, StudyConfig

#: settings of ``rsa_model(motive_prior=...)``, the default first (:mod:`~models.social_meaning.rsa`)
MOTIVE_PRIORS = ("uniform", "free")
#: settings of ``rsa_model(effect_scale=...)`` and ``baseline_model(effect_scale=...)``
#: (docs/studies/social_meaning.md, "Effects in units of the noise")
EFFECT_SCALES = ("rating", "noise")
#: labels of the three human fits (as in the report)
HUMAN_LABELS = ("human", "human (motives link)", "human baseline")
#: labels of the LLM x prompt fits, ``"<model> <prompt>"``
LLM_LABELS = tuple(f"{m} {p}" for m in LLMS for p in PROMPTS)
#: every label a ``sampler.fits`` entry may name
FIT_LABELS = HUMAN_LABELS + LLM_LABELS


class FitSettings(SamplerSettings):
    """NUTS settings of one fit, and the parametrisation its sampler meets (the posterior is the same)."""

    effect_scale: Literal[EFFECT_SCALES] = Field(
        "rating", description="sample the loadings and the scenario effects' scale in rating points ('rating') "
                              "or in units of each attribute's noise ('noise'); the same posterior, another "
                              "geometry (models/social_meaning/rsa.py, 'Effects in units of the noise')")


class StudySampler(SamplerSettings):
    """NUTS settings of one mode; ``human`` overrides some of them for the human fits, ``fits`` for single LLM fits."""

    human: SamplerSettings | None = Field(None, description="overrides for the three human fits (which mix "
                                                            "more slowly), e.g. more num_samples")
    fits: dict[Literal[FIT_LABELS], FitSettings] | None = Field(
        None, description="overrides for single fits, by label: 'human', 'human (motives link)', 'human baseline' "
                          "(after the 'human' entry) or '<model> <prompt>' (e.g. more num_samples for a "
                          "near-deterministic rater); recorded in each fit's provenance")


class ModeReplicates(Strict):
    """Simulated data sets of an ESR check per mode (0: the check is skipped)."""

    quick: int = Field(ge=0, description="replicates of a --quick run")
    full: int = Field(ge=0, description="replicates of a full run")


class Config(StudyConfig):
    """``fits/social_meaning.json``: the generic study keys (:class:`pragmodels.runs.schema.StudyConfig`)
    and this study's own. Validated by :func:`pragmodels.runs.study.load_study_config` before the run.
    Every NUTS setting of the study is here (``docs/studies/social_meaning.md`` says why each is
    what it is)."""

    sampler: ModeSamplers[StudySampler] = Field(description="NUTS settings per mode of the RSA and baseline fits")
    measurement_sampler: ModeSamplers[SamplerSettings] = Field(
        description="NUTS settings per mode of the ESR measurement model (models/social_meaning/esr.py; its "
                    "posterior is near Gaussian: short trees)")
    calibration_replicates: ModeReplicates = Field(
        description="simulated data sets of the measurement model's calibration check per mode (0: skipped)")
    misspecification_replicates: ModeReplicates = Field(
        default_factory=lambda: ModeReplicates(quick=0, full=0),
        description="simulated data sets per scenario of the coverage check under misspecification (Likert "
                    "ratings, the winner's curse) per mode (0: skipped; its own job, python -m "
                    "models.social_meaning.esr_checks, keeps the committed table fits/social_meaning/esr_checks/)")
    calibration_sampler: SamplerSettings = Field(
        description="NUTS settings of the calibration refits (one batched run over all replicates)")
    motive_prior: Literal[MOTIVE_PRIORS] = Field("uniform", description="the RSA fits' motive prior "
                                                                       "(models/social_meaning/rsa.py)")
    rater_nodes: int = Field(81, ge=21, le=401, description="trapezoidal nodes that integrate each rater's score out "
                                                            "of the human fits' likelihood (models/social_meaning/"
                                                            "rsa.py, RATER_NODES: the accuracy of fewer)")
    n_draws: int = Field(400, ge=1, description="posterior draws for the model-implied ESR and CDS")
    conditions: list[Annotated[tuple[Literal[LLMS], Literal[PROMPTS]], pydantic.Strict(False)]] | None = (
        Field(None, description="restrict the LLM fits to some [model, prompt] pairs (default: all 12)"))
    executor: Literal["sequential", "process"] = Field("sequential", description="how the 14 fits run "
                                                                                 "(pragmodels.inference.fit_many)")
    lms: dict[str, LMEntry] = Field(
        default_factory=dict, description="new LMs, by name, beside the published three (fitted and measured on "
                                          "their own, never mixed in; fits/social_meaning_lms.json): their answers "
                                          "to the paper's questionnaire, elicited beforehand by python -m "
                                          "models.social_meaning.elicit --lm NAME (outputs: the folder of its "
                                          "results_<PROMPT>.json and manifest, default "
                                          "fits/social_meaning/elicited/<name>); each entry is checked against the "
                                          "manifest's LM identity and its files' completeness before any fit")

    @pydantic.field_validator("lms")
    @classmethod
    def _new_names(cls, lms: dict[str, LMEntry]) -> dict[str, LMEntry]:
        for name in lms:
            if name in LLMS:
                raise ValueError(f"{name!r} is a published LLM's name ({', '.join(LLMS)}): a new LM is read beside "
                                 "them, under a name of its own")
            if name.startswith("human") or not name or any(c.isspace() for c in name):
                raise ValueError(f"{name!r}: a new LM's name is one word that does not start with 'human' (its fits "
                                 "are labelled '<name> <prompt>', beside the human fits)")
        return lms
