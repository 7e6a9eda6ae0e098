"""Worker processes for fits: their JAX set-up, and one task started in a worker beside the caller.

Layering: imports the standard library and :mod:`pragmodels.io.imports`; :mod:`pragmodels.runtime`
and ``jax`` lazily. :mod:`pragmodels.inference.fit_many` runs its process and Dask workers with
:func:`configure_worker` and :func:`spawn_environ`.

A worker runs one fit at a time on one CPU device with a few XLA threads (``threads``: the cores
divided among the workers), and shares the calling process's persistent compilation cache, so
what one worker compiled another loads. :func:`start_in_worker` runs any module-level function
so, in a spawned process of its own, and returns a :class:`WorkerTask` to collect it by: a study uses it to run work that does
not depend on its fits (the social-meaning study's ESR measurement model and its calibration)
while a :func:`~pragmodels.inference.fit_many.fit_many` pool fits, instead of after it on one core.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from pragmodels.io.imports import import_locations, imported_by_location

__all__ = ["WorkerTask", "compilation_cache_dir", "configure_worker", "cpu_count", "spawn_environ", "start_in_worker"]


def cpu_count() -> int:
    """The cores this process may run on (its affinity mask; ``os.cpu_count()`` where there is none).

    Returns
    -------
    int
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _worker_xla_flags(flags: str, threads: int) -> str:
    flags = re.sub(r"--xla_force_host_platform_device_count=\S*", "", flags)
    parts = flags.split() + ["--xla_force_host_platform_device_count=1"]
    if threads == 1 and "xla_cpu_multi_thread_eigen" not in flags:
        parts.append("--xla_cpu_multi_thread_eigen=false")
    if "intra_op_parallelism_threads" not in flags:
        parts.append(f"intra_op_parallelism_threads={threads}")
    # XLA reads a value whose first token lacks "--" as a file of flags (and aborts when there is none):
    # the "--" flags first, as this function, run again in the worker, would otherwise leave them
    return " ".join(sorted(parts, key=lambda p: not p.startswith("--")))


def configure_worker(threads: int | None = None, cache_dir: str | None = None) -> bool:
    """Set a worker process's JAX up for one fit at a time.

    One CPU device, ``threads`` XLA intra-op threads, no GPU preallocation (unless
    ``XLA_PYTHON_CLIENT_PREALLOCATE`` is set), and JAX's persistent compilation cache. The
    device and thread settings (``XLA_FLAGS``, ``PRAGMODELS_HOST_DEVICES=1``) take effect only
    before JAX initialises its backends in this process. Called by
    :func:`~pragmodels.inference.fit_many.run_fit` in process and Dask workers, and by
    :func:`start_in_worker`'s worker, never in the calling process.

    Parameters
    ----------
    threads : int, optional
        XLA intra-op threads (at least 1); default ``PRAGMODELS_WORKER_THREADS``, else 1.
    cache_dir : str, optional
        Compilation cache folder (``fit_many`` passes the calling process's to process and Dask
        workers); default ``PRAGMODELS_COMPILATION_CACHE``, none when neither is set. A folder
        that cannot be written warns (``RuntimeWarning``) instead of raising.

    Returns
    -------
    bool
        Whether the device and thread settings were applied (False when JAX had already
        initialised its backends).
    """
    if threads is None:
        threads = int(os.environ.get("PRAGMODELS_WORKER_THREADS", 1))
    threads = max(1, int(threads))
    applied = True
    if "jax" in sys.modules:
        try:
            from jax._src import xla_bridge

            applied = not xla_bridge.backends_are_initialized()
        except Exception:  # pragma: no cover - private API moved
            applied = False
    if applied:
        os.environ["XLA_FLAGS"] = _worker_xla_flags(os.environ.get("XLA_FLAGS", ""), threads)
        os.environ["PRAGMODELS_HOST_DEVICES"] = "1"
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if cache_dir or os.environ.get("PRAGMODELS_COMPILATION_CACHE"):
        from pragmodels.runtime import enable_compilation_cache

        try:
            enable_compilation_cache(cache_dir)
        except OSError as e:  # an unwritable cache slows the fits down but must not fail them
            warnings.warn(f"compilation cache not enabled in this worker: {e}", RuntimeWarning, stacklevel=2)
    return applied


@contextlib.contextmanager
def spawn_environ(threads: int) -> Iterator[None]:
    """Environment for worker processes spawned inside the block (restored afterwards): one CPU
    device, ``threads`` XLA and BLAS threads, no GPU preallocation.

    Parameters
    ----------
    threads : int
        Threads per worker.

    Yields
    ------
    None
    """
    new = {"XLA_FLAGS": _worker_xla_flags(os.environ.get("XLA_FLAGS", ""), threads),
           "PRAGMODELS_HOST_DEVICES": "1", "PRAGMODELS_WORKER_THREADS": str(threads)}
    for var, value in (("XLA_PYTHON_CLIENT_PREALLOCATE", "false"), ("OMP_NUM_THREADS", str(threads)),
                       ("OPENBLAS_NUM_THREADS", str(threads)), ("MKL_NUM_THREADS", str(threads))):
        if var not in os.environ:
            new[var] = value
    old = {k: os.environ.get(k) for k in new}
    os.environ.update(new)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def compilation_cache_dir() -> str | None:
    """This process's persistent compilation cache folder, if JAX is imported and has one.

    Returns
    -------
    str or None
    """
    jax = sys.modules.get("jax")
    try:
        return getattr(jax.config, "jax_compilation_cache_dir", None) or None if jax else None
    except Exception:  # pragma: no cover
        return None


def _run_task(conn: Connection, blob: bytes, threads: int, cache_dir: str | None, imports: Mapping[str, str]
              ) -> None:
    """The worker side of :func:`start_in_worker`: set JAX up, import what the caller imported by
    location, then unpickle the call (its function may live in such a package), run it and send
    ``(True, result)`` or ``(False, exception)`` back."""
    try:
        configure_worker(threads, cache_dir)
        failed = import_locations(imports) if imports else {}
        try:
            fn, args, kwargs = pickle.loads(blob)
        except (ImportError, AttributeError) as e:
            if not failed:
                raise
            raise type(e)(f"{e} (in this worker, importing what the caller had imported by location failed: "
                          f"{failed})") from e
        outcome: tuple[bool, Any] = (True, fn(*args, **kwargs))
    except BaseException as e:  # noqa: BLE001 - every failure travels back to the caller
        e.add_note("raised in the worker:\n" + traceback.format_exc())  # the worker's traceback, with the exception
        outcome = (False, e)
    try:
        conn.send(outcome)
    except Exception as e:  # an unpicklable result or exception: its text instead
        conn.send((False, RuntimeError(f"the worker's {'result' if outcome[0] else 'exception'} could not be "
                                       f"sent back ({e}): {outcome[1]!r}"[:2000])))
    finally:
        conn.close()


class WorkerTask:
    """A call running in a worker process of its own (:func:`start_in_worker`).

    ``result()`` waits for it and returns its value or raises its exception; ``terminate()`` stops
    it; used as a context manager, a task not yet collected is terminated on leaving the block (a
    caller that fails does not wait for work it will not read).
    """

    def __init__(self, name: str, process: BaseProcess, conn: Connection):
        self.name, self._process, self._conn = name, process, conn
        self._outcome: tuple[bool, Any] | None = None

    def done(self) -> bool:
        """Whether the call has finished (its outcome is waiting) or the worker has ended.

        Returns
        -------
        bool
        """
        return self._outcome is not None or self._conn.poll() or not self._process.is_alive()

    def result(self, timeout: float | None = None) -> Any:
        """The call's return value, waiting up to ``timeout`` seconds (None: as long as it takes).

        Parameters
        ----------
        timeout : float, optional
            Seconds to wait.

        Returns
        -------
        object
            What the function returned.

        Raises
        ------
        TimeoutError
            Not finished within ``timeout``.
        ChildProcessError
            The worker ended without an outcome (killed, or out of memory).
        Exception
            Whatever the function raised, as it raised it.
        """
        if self._outcome is None:
            if not self._conn.poll(timeout):
                raise TimeoutError(f"{self.name} has not finished within {timeout} s.")
            try:
                self._outcome = self._conn.recv()
            except EOFError:
                self._process.join()
                raise ChildProcessError(f"the worker running {self.name} ended without a result "
                                        f"(exit code {self._process.exitcode}).") from None
            except Exception as e:  # sent, but not rebuilt here (e.g. an exception class of odd arguments)
                self.terminate()
                raise ChildProcessError(f"the outcome of {self.name} could not be read back: "
                                        f"{type(e).__name__}: {e}") from e
            self._process.join()
            self._conn.close()
        ok, value = self._outcome
        if not ok:
            raise value
        return value

    def terminate(self) -> None:
        """Stop the worker if it is still running (its outcome is lost)."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()

    def __enter__(self) -> WorkerTask:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._outcome is None:
            self.terminate()


def start_in_worker(fn: Callable[..., Any], /, *args: Any, threads: int = 1, **kwargs: Any) -> WorkerTask:
    """Start ``fn(*args, **kwargs)`` in a spawned worker process of its own.

    The worker is set up as :func:`~pragmodels.inference.fit_many.fit_many`'s are (one CPU device,
    ``threads`` XLA threads, the calling process's compilation cache, the packages the caller imported
    by location, such as a study's ``models``) and ends when the call returns. ``fn`` must be
    importable by reference (module-level) and the arguments and result picklable: they travel
    between the processes, nothing is saved. The worker is a daemonic process, so that it ends with
    the caller: ``fn`` cannot start processes of its own (a ``fit_many`` with ``executor="process"``).
    An exception raised by ``fn`` carries the worker's traceback as a note.

    Parameters
    ----------
    fn : callable
        A module-level function.
    *args, **kwargs
        Its arguments.
    threads : int
        XLA intra-op threads of the worker (at least 1).

    Returns
    -------
    WorkerTask
        ``result()`` returns what ``fn`` returned or raises what it raised.
    """
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1; got {threads!r}.")
    try:
        blob = pickle.dumps((fn, args, kwargs))
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        raise TypeError(f"start_in_worker needs a module-level function and picklable arguments; {fn!r}: {e}") from e
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_run_task, args=(send, blob, threads, compilation_cache_dir(), imported_by_location()),
                          name=f"pragmodels-{getattr(fn, '__name__', 'task')}", daemon=True)
    with spawn_environ(threads):
        process.start()
    send.close()  # the worker holds the sending end: EOF here when it ends without sending
    return WorkerTask(getattr(fn, "__qualname__", repr(fn)), process, receive)
