"""A task started in a worker process beside the caller (``start_in_worker``): set up as fit_many's
workers are, its result or its exception back, a dead worker named, a task left behind stopped."""

import operator
import os
import time

import pytest

from pragmodels.inference.workers import start_in_worker

pytestmark = pytest.mark.subprocess


def test_the_worker_is_set_up_as_fit_manys_and_returns_the_result():
    before = {k: os.environ.get(k) for k in ("XLA_FLAGS", "PRAGMODELS_HOST_DEVICES", "PRAGMODELS_WORKER_THREADS")}
    with start_in_worker(operator.add, 2, 3) as task:
        assert task.result(timeout=120) == 5
    assert task.done()
    flags = start_in_worker(os.getenv, "XLA_FLAGS").result(timeout=120)
    assert "--xla_force_host_platform_device_count=1" in flags and "intra_op_parallelism_threads=1" in flags
    assert start_in_worker(os.getenv, "PRAGMODELS_HOST_DEVICES").result(timeout=120) == "1"
    assert {k: os.environ.get(k) for k in before} == before  # the caller's environment is restored


def test_an_exception_comes_back_as_raised_and_a_dead_worker_is_named():
    with pytest.raises(ValueError, match="invalid literal for int") as raised:
        start_in_worker(int, "x").result(timeout=120)
    assert "raised in the worker" in "".join(raised.value.__notes__)  # with the worker's traceback
    with pytest.raises(ChildProcessError, match=r"_exit ended without a result \(exit code 3\)"):
        start_in_worker(os._exit, 3).result(timeout=120)


def test_a_task_not_collected_is_stopped_on_leaving_the_block():
    t0 = time.perf_counter()
    with start_in_worker(time.sleep, 600) as task:
        with pytest.raises(TimeoutError, match="has not finished within 0.1 s"):
            task.result(timeout=0.1)
    assert task.done() and time.perf_counter() - t0 < 60  # not the 600 s of the call


def test_bad_calls_are_refused_before_a_process_starts():
    with pytest.raises(TypeError, match="module-level function and picklable arguments"):
        start_in_worker(lambda: 1)
    with pytest.raises(ValueError, match="threads must be an integer >= 1; got 0"):
        start_in_worker(operator.add, 1, 2, threads=0)
