"""Upstream data sets: registry (pinned URL, sha256, licence, citation), fetch, tidy loaders.

Layering: ``registry`` -> ``fetch`` -> ``schema`` -> ``loaders``; standard library, numpy and
pandas only (no JAX).
"""

from pragmodels.datasets.fetch import (
                                       DataDownloadError,
                                       DataIntegrityError,
                                       data_dir,
                                       locate,
                                       repository_root,
                                       sha256_of,
)
from pragmodels.datasets.loaders import (
                                       ATTRIBUTES,
                                       LLMS,
                                       PROMPTS,
                                       SCENARIO_TO_LLM,
                                       load_drinq,
                                       load_social_human,
                                       load_social_llm,
                                       load_social_llm_elicited,
                                       load_social_prompts,
                                       load_wavelength,
                                       load_wavelength_prompts,
)
from pragmodels.datasets.registry import REGISTRY, DataFile
from pragmodels.datasets.schema import DataSchemaError

__all__ = [
    "REGISTRY", "DataFile", "DataDownloadError", "DataIntegrityError", "DataSchemaError", "locate", "sha256_of",
    "data_dir", "repository_root",
    "ATTRIBUTES", "LLMS", "PROMPTS", "SCENARIO_TO_LLM",
    "load_social_human", "load_social_llm", "load_social_llm_elicited", "load_social_prompts", "load_wavelength",
    "load_wavelength_prompts", "load_drinq",
]
