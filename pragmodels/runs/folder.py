"""Run folders: staged aside, locked, swapped in whole, described by a manifest (``run.json``).

Layering: imports the standard library, :mod:`pragmodels.errors`, :mod:`pragmodels.io.atomic`
(staging folders, the swap, leftovers of killed runs) and :mod:`pragmodels.io.checksums` (the
config's sha256); never imports a study or JAX.

A config ``fits/<name>.json`` runs into ``fits/<name>/<mode>/`` (:func:`run_folder`; ``mode`` is
``quick`` or ``full``). :func:`open_run` takes the folder's lock (:func:`lock_folder`), writes the
run into a staging folder beside it and, when the writer returns, swaps it in whole; on an
exception, Ctrl-C or SIGTERM/SIGHUP (:class:`RunInterrupted`) the old folder is left as it was.
The open :class:`Run` records fits, data hashes and notes, and :meth:`Run.finish` writes the
manifest that reports are rendered from (:func:`read_manifest`). :func:`check_writable` checks a
folder before anything runs. The folder layout, the manifest's keys and the entry-point protocol
of a study: the docs page *Running studies and sweeps* ("Run folders", "Writing a study").
"""


from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pragmodels.errors import PragmodelsError
from pragmodels.io.atomic import remove_stale_folders, staging_folder, swap_in_folder
from pragmodels.io.checksums import sha256_file
from pragmodels.validation import check_one_of

if TYPE_CHECKING:
    import xarray as xr


__all__ = ['MODES', 'RunError', 'RunFolderLocked', 'RunInterrupted', 'Run', 'open_run', 'run_folder', 'read_manifest', 'lock_folder', 'check_writable']

MODES = ("quick", "full")
SCHEMA = "pragmodels.run/1"
MANIFEST = "run.json"
_VERSIONS = ("pragmodels", "jax", "jaxlib", "numpyro", "arviz-base", "arviz-stats", "xarray", "numpy",
             "scipy", "pandas", "h5netcdf")


class RunError(PragmodelsError, RuntimeError):
    """A run folder cannot be used as asked (locked, not writable, or holding a run of the other mode)."""


class RunFolderLocked(RunError):
    """Another process is running into the same folder."""


class RunInterrupted(KeyboardInterrupt):
    """Raised by the SIGTERM/SIGHUP handler while a run is open, so that it cleans up."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


# ------------------------------------------------------------------ folders and names
def run_folder(config_path: str | os.PathLike, mode: str, out: str | os.PathLike | None = None) -> Path:
    """The run folder of a config: ``out`` when given, else ``<config without .json>/<mode>/``.

    Parameters
    ----------
    config_path : str or path-like
        The config file, e.g. ``fits/x.json``.
    mode : {"quick", "full"}
    out : str or path-like, optional
        An explicit run folder (``--out``); used as it is.

    Returns
    -------
    Path
        E.g. ``fits/x/full`` (not created, not made absolute).

    Raises
    ------
    ValueError
        ``mode`` is not one of :data:`MODES`, or ``out`` is empty (``""`` is not "not given").
    """
    check_one_of("mode", mode, MODES)
    default = Path(config_path).with_suffix("") / mode
    if out is None:
        return default
    if not str(out).strip():
        raise ValueError(f"run folder {str(out)!r}: empty; expected a folder path, or None for "
                         f"{default.relative_to(default.parent.parent)}.")
    return Path(out)


def check_writable(final: str | os.PathLike) -> Path:
    """Check, before any work, that a run can be written into the run folder ``final``.

    Its parent can be created and written to (a probe file is made and removed there: the lock
    file and the staging folder live beside ``final``), and ``final``, if it exists, is a
    writable folder (the previous run is removed from it after the swap).

    Parameters
    ----------
    final : str or path-like
        The run folder (:func:`run_folder`); its parent is created if missing.

    Returns
    -------
    Path
        ``final`` as an absolute path.

    Raises
    ------
    RunError
        Naming the folder and the reason: the parent cannot be written, or ``final`` is not a
        folder or not writable.
    """
    import tempfile

    final = Path(final).absolute()
    parent = final.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{final.name}.probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise RunError(f"run folder {final}: cannot write into {parent} ({e.strerror or e}); "
                       "choose another folder with --out.") from None
    if final.exists() or final.is_symlink():
        if not final.is_dir():
            raise RunError(f"run folder {final} exists and is not a folder; remove it or choose another with --out.")
        if not os.access(final, os.W_OK | os.X_OK):
            raise RunError(f"run folder {final} is not writable (the previous run in it could not be replaced); "
                           "fix its permissions or choose another folder with --out.")
    return final


def _names(final: Path) -> tuple[Path, str]:
    return final.parent / f".{final.name}.lock", f".{final.name}."


# ------------------------------------------------------------------ lock
@contextlib.contextmanager
def lock_folder(final: str | os.PathLike) -> Iterator[None]:
    """Hold the run folder's lock (``.<name>.lock`` beside it, ``fcntl.flock``) while open.

    A context manager; the lock file holds the holder's pid while the lock is held, and stays
    (emptied) afterwards.

    Parameters
    ----------
    final : str or path-like
        The run folder; the lock file is created in its parent (which must exist).

    Raises
    ------
    RunFolderLocked
        At once (no waiting), naming the folder and the holder's pid, if another run holds it.
    """
    import fcntl

    final = Path(final).absolute()
    lock_path, _ = _names(final)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise RunFolderLocked(f"run folder {final} is in use by another run (pid {holder}; lock file "
                                  f"{lock_path}); wait for it to finish or stop it.") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # the lock file stays (removing it would race a waiting opener)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ signals
@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """While open, SIGTERM and SIGHUP raise :class:`RunInterrupted` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise RunInterrupted(signum)

    saved = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) in (signal.SIG_DFL, None):
            saved[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)


# ------------------------------------------------------------------ manifest
def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for name in _VERSIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _basins_record(attrs: Mapping[Any, Any]) -> list[dict[str, Any]] | None:
    """The basins a fit sampled (``init="basins"``: ``attrs["basins"]``), each its weight, the
    weight's log-mass standard error, its optimum's gap below the best (nats), its starts and chains;
    None for a fit started otherwise."""
    raw = _json_attr(attrs, "basins")
    if not raw:
        return None
    best = min(b["potential"] for b in raw["basins"])
    return [{"weight": b["weight"], "log_mass_se": b["log_mass_se"], "gap_nats": round(b["potential"] - best, 3),
             "starts": b["starts"], "chains": b["chains"]} for b in raw["basins"]]


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have ended (a process
    pool's workers, once joined): the run's core-seconds."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _json_attr(attrs: Mapping[Any, Any], key: str, default: Any = None) -> Any:
    value = attrs.get(key, default)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    if hasattr(value, "item"):  # numpy scalar from a netCDF attribute
        return value.item()
    return value


def read_manifest(run_dir: str | os.PathLike) -> dict:
    """The ``run.json`` of a run folder (a clear error when the folder has none).

    Parameters
    ----------
    run_dir : str or path-like
        A finished run folder.

    Returns
    -------
    dict
        The manifest (its keys: docs, *Running studies and sweeps*).

    Raises
    ------
    FileNotFoundError
        The folder has no ``run.json`` (the message says it is not a finished run folder).
    """
    path = Path(run_dir) / MANIFEST
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} does not exist: {Path(run_dir)} is not a finished run folder "
                                "(or it was written before run folders had manifests; rerun it).") from None


class Run:
    """An open run: write into :attr:`path` (the staging folder) and record what was done.

    Made by :func:`open_run`; the study entry point receives it as ``record``.
    """

    def __init__(self, path: Path, final: Path, manifest: dict, log: Callable[[str], None]):
        self.path, self.final, self.manifest, self.log = path, final, manifest, log
        self._t0 = time.perf_counter()
        self._cpu0 = _cpu_seconds()
        self._finished = False

    @property
    def mode(self) -> str:
        return self.manifest["mode"]

    def fit(self, label: str, tree: xr.DataTree, file: str | os.PathLike | None = None) -> None:
        """Record one fit's provenance (data hash, sampler settings, seed, wall time, diagnostics)
        from the DataTree's attributes; ``file`` is its path inside the run folder, if saved. A fit
        sampled again with more draws (:func:`pragmodels.inference.top_up.top_up`) also records
        ``draws_resized``, and one whose refit was worse and not kept ``refits_not_kept``."""
        a = tree.attrs
        self.manifest["fits"][label] = {
            "file": None if file is None else str(file),
            "model": a.get("model"),
            "data_sha256": a.get("data_sha256"),
            "sampler_settings": _json_attr(a, "sampler_settings"),
            "seed": _json_attr(a, "seed"),
            "wall_time_s": _json_attr(a, "wall_time_s"),
            "diagnostics": _json_attr(a, "diagnostics"),
            "diagnostics_ok": None if a.get("diagnostics_ok") is None else bool(_json_attr(a, "diagnostics_ok")),
            "backend": a.get("backend"),
            "warnings": _json_attr(a, "warnings", "[]"),
            # step -> error of the steps after sampling that failed (absent attr: none did)
            "postprocessing_error": _json_attr(a, "postprocessing_error"),
            "basins": _basins_record(a),
        }
        for key in ("draws_resized", "refits_not_kept"):  # pragmodels.inference.top_up's records; else nothing
            if key in a:
                self.manifest["fits"][label][key] = _json_attr(a, key)

    def data(self, name: str, sha256: str) -> None:
        """Record an input's sha256 (a data file, or the hash of simulated data)."""
        self.manifest["data"][name] = sha256

    def note(self, key: str, value: Any) -> None:
        """Record a study-specific value (JSON-serialisable) under ``notes``."""
        self.manifest["notes"][key] = value

    def finish(self) -> dict:
        """Stop the clock and write ``run.json`` into the staging folder (idempotent: the end time,
        wall time and CPU time are fixed by the first call). Returns the manifest."""
        if not self._finished:
            self.manifest["finished_at"] = _now()
            self.manifest["wall_time_s"] = round(time.perf_counter() - self._t0, 3)
            self.manifest["cpu_time_s"] = round(_cpu_seconds() - self._cpu0, 3)
            self._finished = True
        self._write()
        return self.manifest

    def _write(self) -> None:
        # the staging folder is this run's alone, so a plain write (normal permissions) is enough
        (self.path / MANIFEST).write_text(json.dumps(self.manifest, indent=2, default=str) + "\n")

    def _list_files(self) -> None:
        files = {}
        for p in sorted(self.path.rglob("*")):
            if p.is_file() and p.name != MANIFEST:
                files[p.relative_to(self.path).as_posix()] = p.stat().st_size
        self.manifest["files"] = files


def _check_mode(final: Path, mode: str) -> None:
    path = final / MANIFEST
    if not path.is_file():
        return
    try:
        old = json.loads(path.read_text()).get("mode")
    except (json.JSONDecodeError, AttributeError):
        return
    if old and old != mode:
        raise RunError(f"{final} holds a {old} run (its run.json says so); a {mode} run would replace it. "
                       f"Use another folder (--out), or remove {final} first.")


@contextlib.contextmanager
def open_run(final: str | os.PathLike, *, mode: str, entry_point: str, config: dict | None = None,
             config_path: str | os.PathLike | None = None, sampler: Any = None, seed: Any = None,
             log: Callable[[str], None] | None = None) -> Iterator[Run]:
    """Open the run folder ``final`` for one run; yield a :class:`Run` whose :attr:`Run.path` is
    the staging folder to write into.

    On normal exit ``run.json`` is completed and the staging folder swapped in for ``final``; on
    any exception (including Ctrl-C and SIGTERM) it is removed and ``final`` is left as it was.
    The folder's lock is held throughout (:func:`lock_folder`), and stale leftovers of killed
    runs are removed first.

    Parameters
    ----------
    final : str or path-like
        The run folder (checked with :func:`check_writable`).
    mode : {"quick", "full"}
    entry_point : str
        What runs (``"path.py:function"`` of a study, or the single-fit runner), recorded.
    config : dict, optional
        The config as run, recorded (its ``name`` names the run; default: ``final``'s parent's name).
    config_path : str or path-like, optional
        The config file, recorded with the sha256 of its bytes.
    sampler, seed : optional
        Recorded in the manifest as given (JSON-serialisable).
    log : callable, optional
        ``log(message)`` for housekeeping messages (default: print).

    Yields
    ------
    Run

    Raises
    ------
    ValueError
        ``mode`` is not one of :data:`MODES`.
    RunFolderLocked
        At once, if another run holds ``final``.
    RunError
        ``final`` cannot be written, or holds a run of the other mode.
    """
    check_one_of("mode", mode, MODES)
    final = check_writable(final)
    log = log or (lambda msg: print(msg, flush=True))
    config_sha256 = None
    if config_path is not None and Path(config_path).is_file():
        config_sha256 = sha256_file(config_path)
    manifest = {
        "schema": SCHEMA,
        "name": (config or {}).get("name", final.parent.name),
        "entry_point": entry_point,
        "mode": mode,
        "config_path": None if config_path is None else str(config_path),
        "config": config,
        "config_sha256": config_sha256,
        "sampler": sampler,
        "seed": seed,
        "data": {},
        "versions": _versions(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "pid": os.getpid(),
        "argv": list(sys.argv),
        "started_at": _now(),
        "finished_at": None,
        "wall_time_s": None,
        "cpu_time_s": None,
        "fits": {},
        "notes": {},
        "files": {},
    }
    with lock_folder(final), _signals_raise():
        _check_mode(final, mode)
        remove_stale_folders(final, log)
        tmp = staging_folder(final)
        try:
            run = Run(tmp, final, manifest, log)
            yield run
            run.finish()
            run._list_files()
            run._write()
            try:
                swap_in_folder(tmp, final)
            except NotADirectoryError:
                raise RunError(f"{final} exists and is not a folder; cannot replace it with a run folder.") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # the old folder is untouched
            raise


