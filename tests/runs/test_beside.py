"""pragmodels.runs.beside: a step run in a spawned process of its own."""

import math
import os

import pytest

from pragmodels.runs.beside import in_own_process


@pytest.mark.subprocess
def test_the_step_runs_in_another_process_and_its_value_and_errors_come_back():
    pool, result = in_own_process(os.getpid)
    pid = result.get(timeout=120)
    pool.close()
    pool.join()
    assert isinstance(pid, int) and pid != os.getpid()
    pool, result = in_own_process(math.sqrt, -1.0)
    with pytest.raises(ValueError, match="math domain error"):
        result.get(timeout=120)
    pool.terminate()
    pool.join()
