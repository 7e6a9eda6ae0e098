"""A study's step that needs no fit, run beside the fits in a spawned process of its own.

Layering: imports :mod:`pragmodels.io.imports` and the standard library only. A study's main job
fits in a pool of one worker per core and then runs steps on one core; a step that needs none of
the fits (the social-meaning study's ESR calibration) can instead run while they do, so that the
core the fits leave idle at their end, and the wait after them, are not spent on it.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from multiprocessing.pool import AsyncResult, Pool
from typing import Any

from pragmodels.io.imports import import_locations, imported_by_location

__all__ = ["in_own_process"]


def in_own_process(fn: Callable[..., Any], *args: Any) -> tuple[Pool, AsyncResult[Any]]:
    """Start ``fn(*args)`` in a spawned process of its own and return at once.

    What this process imported by location (a study's package: :func:`pragmodels.io.imports.imported_by_location`)
    is imported there before ``fn`` is unpickled, so ``fn`` may come from it; ``fn`` and ``args`` must pickle.
    The process inherits the environment (``XLA_FLAGS``, so the same CPU devices and the same draws).

    Parameters
    ----------
    fn : callable
        A module-level function.
    *args
        Its arguments.

    Returns
    -------
    (multiprocessing.pool.Pool, multiprocessing.pool.AsyncResult)
        ``result.get()`` waits for the value (and raises what ``fn`` raised); then ``pool.close()`` and
        ``pool.join()`` end the process, whose CPU time then counts in the caller's children's. On an
        error of the caller, ``pool.terminate()`` stops it.
    """
    pool = multiprocessing.get_context("spawn").Pool(1, initializer=import_locations, initargs=(imported_by_location(),))
    return pool, pool.apply_async(fn, args)
