"""``fit_many``: run many fits in process, on a local process pool or on a Dask cluster.

Layering: imports :mod:`pragmodels.inference.fitting`, :mod:`pragmodels.inference.diagnostics`,
:mod:`pragmodels.inference.nuts`, :mod:`pragmodels.inference.workers`, :mod:`pragmodels.io.netcdf` and
:mod:`pragmodels.io.imports`;
``tqdm`` and ``pandas`` lazily; ``distributed`` never (a Dask ``Client`` is recognised by its type
once the caller has imported it).

A :class:`FitSpec` describes one fit (name, model or ``"module:attr"`` / ``"file.py:attr"``
string, data, priors, sampler settings, seed); :func:`fit_many` runs a list of them with an
executor (``"sequential"``, ``"process"``, a Dask ``Client``, or any ``concurrent.futures``
executor) and returns a :class:`FitManyResult`. A failed fit is recorded with its error and the
others still run (:meth:`FitManyResult.raise_on_error`); with ``out_dir`` each fit is saved
atomically by its worker and only its path travels back. :func:`configure_worker`
(:mod:`pragmodels.inference.workers`) sets up a worker's JAX (one CPU device, a few threads).
Executors, SLURM through dask-jobqueue, the ``__main__`` guard and cores per worker: the docs page
*Running studies and sweeps*.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import inspect
import json
import math
import multiprocessing
import os
import pickle
import re
import sys
import threading
import time
import traceback
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    cast,
)

import numpy as np

from pragmodels.errors import PragmodelsError
from pragmodels.inference import fitting
from pragmodels.inference.diagnostics import FitWarning
from pragmodels.inference.nuts import one_device_chain_method
from pragmodels.inference.workers import (
    compilation_cache_dir,
    configure_worker,
    cpu_count,
    spawn_environ,
)
from pragmodels.io.errors import ResultSaveError
from pragmodels.io.imports import (
    import_locations,
    imported_by_location,
    is_file_reference,
    load_object,
    split_reference,
)
from pragmodels.io.netcdf import load_netcdf, save_netcdf

if TYPE_CHECKING:
    import pandas as pd
    import xarray as xr
    from distributed import Client

__all__ = [
    "FitSpec",
    "FitError",
    "FitOutcome",
    "FitManyResult",
    "FitManyError",
    "fit_many",
    "run_fit",
    "resolve_model",
    "configure_worker",
]

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
#: seconds without a line after which ``progress="lines"`` says how many fits are done
HEARTBEAT_S = 60.0
_MANAGED = ("name", "priors", "out")  # fit() arguments that fit_many sets itself
_SAMPLER_DEFAULTS = {"progress_bar": False}  # and chain_method: nuts.one_device_chain_method() where the fit runs


@dataclass(frozen=True, eq=False)  # eq=False: data holds arrays, which do not compare to a bool
class FitSpec:
    """One fit: ``fit(seed, model, data, priors=priors, **sampler)``, saved as ``<name>.nc``.

    Parameters
    ----------
    name : str
        Unique within a run and safe as a file name: letters, digits, ``.``, ``_``, ``-``,
        starting with a letter or digit (at most 200 characters).
    model : callable or str
        The NumPyro model, or ``"module:attr"`` / ``"path/to/file.py:attr"`` naming it
        (resolved in the worker by :func:`resolve_model`).
    data : dict
        The model's keyword arguments.
    priors : dict, optional
        Passed to :func:`pragmodels.fit` (recorded in the provenance attributes).
    sampler : dict
        Keyword arguments of :func:`pragmodels.fit` (``num_warmup``, ``num_chains``,
        ``init``, ``strict``, ...; not ``name``, ``priors`` or ``out``). ``fit_many`` defaults
        ``progress_bar`` to False and ``chain_method`` to the one-device method of the backend the fit
        runs on (:func:`~pragmodels.inference.nuts.one_device_chain_method`: ``"sequential"`` on a CPU,
        ``"vectorized"`` on a GPU), whichever the executor: a worker has one device, and a seed gives the
        same draws in process and in a worker. ``chain_method=None`` asks for :func:`pragmodels.fit`'s
        default for the devices of the process the fit runs in.
    seed : int
        The fit's explicit seed (keyword-only, required).
    """

    name: str
    model: Callable[..., Any] | str
    data: dict[str, Any]
    _: KW_ONLY
    priors: dict[str, Any] | None = None
    sampler: dict[str, Any] = field(default_factory=dict)
    seed: int


@dataclass(frozen=True)
class FitError:
    """Why a fit failed: the exception's type name, message and formatted traceback."""

    type: str
    message: str
    traceback: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"

    @classmethod
    def from_exception(cls, exc: BaseException) -> FitError:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return cls(type(exc).__name__, str(exc), tb)


@dataclass
class FitOutcome:
    """The record of one fit: ``status`` is ``"ok"`` or ``"error"``.

    A successful fit holds its ``tree`` (without ``out_dir``) or the ``path`` it was saved to
    (with ``out_dir``), its ``diagnostics`` (``max_rhat``, ``min_ess_bulk``, ``min_ess_tail``,
    ``divergences``), ``diagnostics_ok`` and the texts of its ``FitWarning`` s. ``wall_s`` is
    the worker's time for the whole task (model resolution, fit, save).

    A failed fit holds its ``error``, and its ``tree`` when sampling had finished: a fit whose
    save failed (``error.type == "ResultSaveError"``; the tree comes back instead of the file, with
    the error in ``tree.attrs["save_error"]``) or one refused by ``strict=True``.
    """

    name: str
    status: Literal["ok", "error"]
    wall_s: float = math.nan
    tree: xr.DataTree | None = None
    path: Path | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    diagnostics_ok: bool | None = None
    warnings: list[str] = field(default_factory=list)
    error: FitError | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class FitManyError(PragmodelsError, RuntimeError):
    """Raised by :meth:`FitManyResult.raise_on_error` when at least one fit failed."""


class FitManyResult:
    """The outcomes of :func:`fit_many`, in the order of the specs.

    ``result["name"]`` is one :class:`FitOutcome`; iterating yields them all.
    """

    def __init__(self, outcomes: list[FitOutcome], *, executor: str = "", wall_s: float = math.nan):
        self.outcomes = list(outcomes)
        self.executor = executor
        self.wall_s = wall_s
        self._by_name = {o.name: o for o in self.outcomes}

    def __getitem__(self, name: str) -> FitOutcome:
        return self._by_name[name]

    def __iter__(self) -> Iterator[FitOutcome]:
        return iter(self.outcomes)

    def __len__(self) -> int:
        return len(self.outcomes)

    def __repr__(self) -> str:
        return (f"FitManyResult({len(self)} fits: {len(self.succeeded)} ok, {len(self.failed)} failed; "
                f"executor={self.executor!r}, wall_s={self.wall_s:.1f})")

    @property
    def ok(self) -> bool:
        """True when every fit succeeded (diagnostics are not part of it: see ``summary``)."""
        return not self.failed

    @property
    def succeeded(self) -> list[str]:
        return [o.name for o in self.outcomes if o.ok]

    @property
    def failed(self) -> list[str]:
        return [o.name for o in self.outcomes if not o.ok]

    @property
    def paths(self) -> dict[str, Path]:
        """``{name: path}`` of the fits saved by this run (empty without ``out_dir``)."""
        return {o.name: o.path for o in self.outcomes if o.ok and o.path is not None}

    @property
    def trees(self) -> dict[str, xr.DataTree]:
        """``{name: DataTree}`` of the successful fits; saved fits are loaded from their files
        (fully into memory, on every access: use ``paths`` to open them one at a time)."""
        return {o.name: _tree_of(o) for o in self.outcomes if o.ok}

    @property
    def errors(self) -> dict[str, FitError]:
        """``{name: FitError}`` of the failed fits."""
        return {o.name: o.error for o in self.outcomes if not o.ok and o.error is not None}

    def summary(self) -> pd.DataFrame:
        """A ``pandas.DataFrame``, one row per fit: name, status, wall_s, diagnostics_ok,
        max_rhat, min_ess_bulk, error (``"Type: message"``; missing for a success)."""
        import pandas as pd

        rows = [dict(name=o.name, status=o.status, wall_s=o.wall_s, diagnostics_ok=o.diagnostics_ok,
                     max_rhat=o.diagnostics.get("max_rhat", math.nan),
                     min_ess_bulk=o.diagnostics.get("min_ess_bulk", math.nan),
                     error=str(o.error) if o.error else None) for o in self.outcomes]
        df = pd.DataFrame(rows, columns=["name", "status", "wall_s", "diagnostics_ok", "max_rhat",
                                         "min_ess_bulk", "error"])
        df["diagnostics_ok"] = df["diagnostics_ok"].astype("boolean")
        return df

    def raise_on_error(self) -> FitManyResult:
        """Raise :class:`FitManyError` naming every failed fit (with the first traceback);
        return ``self`` when none failed."""
        if not self.failed:
            return self
        errors = self.errors
        lines = [f"{len(errors)} of {len(self)} fits failed:"] + [f"  {n}: {e}" for n, e in errors.items()]
        first = next(iter(errors))
        lines += ["", f"traceback of {first!r}:", errors[first].traceback.rstrip()]
        raise FitManyError("\n".join(lines))


def _tree_of(outcome: FitOutcome) -> xr.DataTree:
    """A successful fit's tree: the one it holds, or the one loaded from the file it was saved to."""
    if outcome.tree is not None:
        return outcome.tree
    assert outcome.path is not None  # run_fit returns an ok outcome with a tree or a path
    return load_netcdf(outcome.path)


# --- workers -----------------------------------------------------------------------------


def resolve_model(ref: str) -> Callable[..., Any]:
    """The model named by ``"package.module:attr"`` or ``"path/to/file.py:attr"``.

    Resolved by :func:`pragmodels.io.imports.load_object` (the entry-point loader of
    :mod:`pragmodels.runs.entry_points` uses the same functions): a relative path against the working
    directory; a file inside a package imported by its dotted name (one module object however
    it is reached), any other file once per process, so compiled kernels are reused.
    ``attr`` may be dotted (``"module:Class.model"``).

    Parameters
    ----------
    ref : str
        ``"package.module:attr"`` (imported) or ``"path/to/file.py:attr"`` (a part before the
        last ``:`` that ends in ``.py`` or holds a path separator).

    Returns
    -------
    callable
        The object ``attr`` names.

    Raises
    ------
    ValueError
        ``ref`` has no ``:`` or ``attr`` is not a dotted identifier.
    FileNotFoundError, ImportError
        The file does not exist or cannot be loaded as a module (or the module cannot be imported).
    AttributeError
        The module has no such attribute.
    TypeError
        The attribute is not callable.
    """
    try:
        obj = load_object(ref)
    except (ValueError, AttributeError) as e:
        raise type(e)(f"model string {e}") from None
    except FileNotFoundError as e:
        raise FileNotFoundError(f"model string {ref!r}: {e}") from None
    if not callable(obj):
        raise TypeError(f"model string {ref!r} names a {type(obj).__name__}, not a callable model.")
    return obj


def _diagnostics_of(tree: xr.DataTree) -> tuple[dict[str, Any], bool | None]:
    attrs = tree.attrs
    try:
        diag = json.loads(attrs.get("diagnostics", "{}"))
    except (TypeError, ValueError):
        diag = {}
    ok = attrs.get("diagnostics_ok")
    return diag, (None if ok is None else bool(int(ok)))


def run_fit(name: str, spec: FitSpec | bytes, out_path: str | None = None, *, configure: bool = False,
            threads: int | None = None, cache_dir: str | None = None,
            imports: Mapping[str, str] | None = None) -> FitOutcome:
    """Run one fit and return its :class:`FitOutcome`; never raises for a failed fit.

    The worker function of :func:`fit_many` (module-level, so it pickles by reference).
    ``spec`` is a :class:`FitSpec` or the bytes of a pickled one: a worker unpickles it only
    after :func:`configure_worker` (``configure=True``) has set JAX up, since unpickling a
    model can import modules that start JAX. With ``out_path`` the tree is saved there
    atomically and only the path is returned.

    Parameters
    ----------
    name : str
        The fit's name (set as ``tree.attrs["fit_name"]`` and on the outcome).
    spec : FitSpec or bytes
        The fit, or a pickled :class:`FitSpec`; a string ``model`` is resolved with
        :func:`resolve_model`, and ``sampler`` is passed to :func:`pragmodels.fit` over
        ``fit_many``'s defaults.
    out_path : str, optional
        Save the tree there (:func:`~pragmodels.io.netcdf.save_netcdf`).
    configure : bool
        Call :func:`configure_worker` first (``threads``, ``cache_dir``): in a worker process.
    threads, cache_dir
        Passed to :func:`configure_worker`.
    imports : dict, optional
        Packages and files the calling process imported by their location (a study's
        ``models`` package: :func:`pragmodels.io.imports.imported_by_location`), imported here
        before the spec is unpickled, so that its model (pickled by reference) is found.

    Returns
    -------
    FitOutcome
        ``status="ok"`` with the tree (or its path), diagnostics and ``FitWarning`` texts; or
        ``status="error"`` with the exception as a :class:`FitError` (and the tree, when the
        save failed or ``strict=True`` refused the fit). Other warnings are re-emitted here.
    """
    t0 = time.perf_counter()
    if configure:
        configure_worker(threads, cache_dir)
    try:
        failed_imports = import_locations(imports) if imports else {}
        try:
            fit_spec: FitSpec = pickle.loads(spec) if isinstance(spec, (bytes, bytearray)) else spec
        except (ImportError, AttributeError) as e:
            if not failed_imports:
                raise
            raise type(e)(f"{e} (in this worker, importing what the caller had imported by location failed: "
                          f"{failed_imports})") from e
        model = resolve_model(fit_spec.model) if isinstance(fit_spec.model, str) else fit_spec.model
        settings = {**_SAMPLER_DEFAULTS, "chain_method": one_device_chain_method(), **fit_spec.sampler}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            tree = fitting.fit(fit_spec.seed, model, fit_spec.data, priors=fit_spec.priors, **settings)
        for w in caught:  # FitWarnings travel back in the outcome; pass the others on here
            if not issubclass(w.category, FitWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        tree.attrs["fit_name"] = name
        diag, diag_ok = _diagnostics_of(tree)
        fit_warnings = [str(w.message) for w in caught if issubclass(w.category, FitWarning)]
        try:
            path = save_netcdf(tree, out_path) if out_path is not None else None
        except ResultSaveError as exc:  # the samples come back instead of the file
            tree.attrs["save_error"] = str(exc)
            return FitOutcome(name, "error", time.perf_counter() - t0, tree=tree, diagnostics=diag,
                              diagnostics_ok=diag_ok, warnings=fit_warnings, error=FitError.from_exception(exc))
        return FitOutcome(name, "ok", time.perf_counter() - t0, tree=tree if path is None else None, path=path,
                          diagnostics=diag,
                          diagnostics_ok=diag_ok,
                          warnings=fit_warnings)
    except Exception as exc:  # a strict fit that was refused keeps its result on exc.tree
        from xarray import DataTree

        kept = getattr(exc, "tree", None)
        return FitOutcome(name, "error", time.perf_counter() - t0, error=FitError.from_exception(exc),
                          tree=kept if isinstance(kept, DataTree) else None)


# --- progress -------------------------------------------------------------------------------


def _progress_kind(progress: object) -> str | None:
    """``"bar"``, ``"lines"`` or None (no progress) for fit_many's ``progress``."""
    if isinstance(progress, bool):
        return ("bar" if _interactive() else "lines") if progress else None
    if not isinstance(progress, str) or progress not in ("bar", "lines"):
        raise ValueError(f"progress must be one of (True, False, 'bar', 'lines'); got {progress!r}.")
    return progress


def _interactive() -> bool:
    """Whether standard output is a terminal or a notebook (where a bar is drawn, not logged)."""
    out = sys.stdout
    if type(out).__module__.startswith("ipykernel"):
        return True
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):  # no stdout, or a closed one
        return False


def _fit_line(outcome: FitOutcome, i: int, total: int) -> str:
    """``fit 3/15 human_rsa: ok in 42.1 s (max r_hat 1.004, min bulk ESS 812, 0 divergences)``."""
    head = f"fit {i}/{total} {outcome.name}:"
    if not outcome.ok:
        return f"{head} FAILED after {outcome.wall_s:.1f} s: {outcome.error}"
    d = outcome.diagnostics
    verdict = {True: "ok", False: "diagnostics NOT ok", None: "done"}[outcome.diagnostics_ok]
    stats = (f"max r_hat {d.get('max_rhat', math.nan):.3f}, min bulk ESS {d.get('min_ess_bulk', math.nan):.0f}, "
             f"{d.get('divergences', '?')} divergences")
    return f"{head} {verdict} in {outcome.wall_s:.1f} s ({stats})"


class _Lines:
    """``progress="lines"``: a line per fit as it finishes and, after ``every`` seconds without one,
    how many are done; for a log file, where a bar shows nothing until the end."""

    def __init__(self, total: int, log: Callable[[str], None], every: float):
        self.total, self.log, self.every = total, log, every
        self.done = self.failed = 0
        self.t0 = self._last = time.perf_counter()
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._beat, name="fit_many progress", daemon=True)
        if total:
            self._thread.start()

    def _say(self, line: str) -> None:
        with self._lock:
            self.log(line)
            self._last = time.perf_counter()

    def update(self, outcome: FitOutcome) -> None:
        self.done += 1
        self.failed += not outcome.ok
        self._say(_fit_line(outcome, self.done, self.total))

    def _beat(self) -> None:
        while not self._stop.wait(max(0.05, self._last + self.every - time.perf_counter())):
            if time.perf_counter() - self._last >= self.every:
                t = time.perf_counter() - self.t0
                failed = f", {self.failed} failed" if self.failed else ""
                since = f"{t:.0f} s" if t < 120 else f"{t / 60:.1f} min"
                self._say(f"fits: {self.done} of {self.total} done{failed}, {since} since they started")

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def _print_flushed(line: str) -> None:
    print(line, flush=True)


# --- the driver ---------------------------------------------------------------------------


def _fit_keywords() -> set[str]:
    params = inspect.signature(fitting.fit).parameters
    return {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY and n not in _MANAGED}


def _check_specs(specs: Iterable[FitSpec | Mapping[str, Any]]) -> list[FitSpec]:
    if isinstance(specs, (FitSpec, Mapping, str)):
        raise TypeError("specs must be a list of FitSpec (or of dicts of FitSpec fields).")
    allowed = _fit_keywords()
    out: list[FitSpec] = []
    seen: dict[str, int] = {}
    for i, spec in enumerate(specs):
        if isinstance(spec, Mapping):
            try:
                spec = FitSpec(**spec)
            except TypeError as e:
                raise TypeError(f"specs[{i}]: {e}") from None
        if not isinstance(spec, FitSpec):
            raise TypeError(f"specs[{i}]: expected a FitSpec; got {type(spec).__name__}.")
        where = f"specs[{i}] (name={spec.name!r})"
        if not isinstance(spec.name, str) or not NAME_PATTERN.fullmatch(spec.name):
            raise ValueError(f"{where}: a name must be 1-200 letters, digits, '.', '_' or '-', "
                             "starting with a letter or digit (it names the file <name>.nc).")
        j = seen.setdefault(spec.name.lower(), i)
        if j != i:
            raise ValueError(f"{where}: duplicate name; specs[{j}] is named {out[j].name!r} "
                             "(names must be unique, ignoring case).")
        if isinstance(spec.model, str):
            try:
                module_part, _ = split_reference(spec.model)
            except ValueError as e:
                raise ValueError(f"{where}: model string {e}") from None
            if is_file_reference(module_part) and not os.path.isabs(module_part):
                spec = dataclasses.replace(spec, model=f"{Path(module_part).resolve()}:{spec.model.rpartition(':')[2]}")
        elif not callable(spec.model):
            raise TypeError(f"{where}: model must be a callable or a 'module:attr' string; "
                            f"got {type(spec.model).__name__}.")
        if not isinstance(spec.data, Mapping):
            raise TypeError(f"{where}: data must be a dict of model arguments; got {type(spec.data).__name__}.")
        if spec.priors is not None and not isinstance(spec.priors, Mapping):
            raise TypeError(f"{where}: priors must be a dict or None; got {type(spec.priors).__name__}.")
        if not isinstance(spec.sampler, Mapping):
            raise TypeError(f"{where}: sampler must be a dict of fit() settings; got {type(spec.sampler).__name__}.")
        unknown = sorted(set(spec.sampler) - allowed)
        if unknown:
            raise ValueError(f"{where}: unknown sampler settings {unknown}; fit_many passes "
                             f"{sorted(allowed)} (it sets name, priors and out itself).")
        if isinstance(spec.seed, bool) or not isinstance(spec.seed, int) and not hasattr(spec.seed, "__index__"):
            raise TypeError(f"{where}: seed must be an int; got {spec.seed!r}.")
        out.append(dataclasses.replace(spec, seed=int(spec.seed), data=dict(spec.data),
                                       sampler=dict(spec.sampler)))
    return out


def _pad_from_the_start(specs: list[FitSpec]) -> list[FitSpec]:
    """The specs, with ``pad_trials="always"`` for the fits of a model (same model, same static values)
    that this batch runs at two or more data shapes and that leave ``pad_trials`` unset: each worker
    then pads from the first such fit it meets, where on its own it would compile that first size
    unpadded and the size bucket besides (:func:`pragmodels.inference.padding.worth_padding`; the
    social-meaning study's 12 LLM fits, 1,342-1,440 ratings: two programs per worker instead of one).
    Keyed with NumPy alone (this process's JAX is not started, a string model not imported)."""
    from pragmodels.inference.compile_cache import is_static, static_items
    from pragmodels.model_key import structure_key

    def key(s: FitSpec) -> Any:
        model = s.model if isinstance(s.model, str) else structure_key(s.model)
        return model, static_items({k: v for k, v in s.data.items() if is_static(v)})

    def shape(s: FitSpec) -> tuple:
        return tuple(sorted((k, np.shape(v), str(np.asarray(v).dtype)) for k, v in s.data.items()
                            if not is_static(v)))

    shapes: dict[Any, set] = {}
    keys: list[Any] = []
    for s in specs:
        try:
            k = key(s)
            shapes.setdefault(k, set()).add(shape(s))
        except Exception:  # noqa: BLE001 - a spec that cannot be keyed here fails in its worker, with its error
            k = None
        keys.append(k)
    return [dataclasses.replace(s, sampler={**s.sampler, "pad_trials": "always"})
            if k is not None and len(shapes[k]) > 1 and "pad_trials" not in s.sampler else s
            for s, k in zip(specs, keys, strict=True)]


def _dumps(i: int, spec: FitSpec) -> bytes:
    try:
        import cloudpickle

        dumps = cloudpickle.dumps
    except ImportError:  # pragma: no cover - cloudpickle comes with the cluster extra
        dumps = pickle.dumps
    try:
        return dumps(spec)
    except Exception as e:
        raise TypeError(
            f"specs[{i}] (name={spec.name!r}) cannot be sent to a worker process ({type(e).__name__}: {e}); "
            "name the model with a 'module:attr' string, or use a module-level function or a "
            "functools.partial of one.") from e


def _failed(name: str, exc: BaseException) -> FitOutcome:
    return FitOutcome(name, "error", error=FitError.from_exception(exc))


def _executor_kind(executor: object) -> str:
    if isinstance(executor, str):
        if executor not in ("sequential", "process"):
            raise ValueError(f"executor must be 'sequential', 'process', a dask.distributed.Client "
                             f"or a concurrent.futures.Executor; got {executor!r}.")
        return executor
    distributed = sys.modules.get("distributed")
    if distributed is not None and isinstance(executor, distributed.Client):
        return "dask"
    if isinstance(executor, cf.Executor):
        return "executor"
    raise TypeError(f"executor must be 'sequential', 'process', a dask.distributed.Client or a "
                    f"concurrent.futures.Executor; got {type(executor).__name__}.")


def fit_many(specs: Iterable[FitSpec | Mapping[str, Any]], *,
             executor: Literal["sequential", "process"] | Client | cf.Executor = "sequential",
             max_workers: int | None = None, out_dir: str | os.PathLike[str] | None = None,
             progress: bool | Literal["bar", "lines"] = True,
             log: Callable[[str], None] | None = None) -> FitManyResult:
    """Run every spec's fit and return a :class:`FitManyResult` (in the order of the specs).

    Parameters
    ----------
    specs : list of FitSpec (or of dicts of its fields)
        Validated before anything runs: unique, file-safe names; a ``ValueError`` or
        ``TypeError`` names the offending spec.
    executor : "sequential", "process", dask.distributed.Client or concurrent.futures.Executor
        Where the fits run (docs: *Running studies and sweeps*, "Executors").
    max_workers : int, optional
        Processes of the ``"process"`` pool (default: one per core, at most one per fit).
        Size a Dask cluster with ``cluster.scale`` instead.
    out_dir : path, optional
        Save each successful fit atomically as ``<out_dir>/<name>.nc`` in its worker; the
        result then holds paths instead of trees.
    progress : bool, "bar" or "lines"
        ``"bar"``: a ``tqdm`` bar over fits (done/total, failures counted). ``"lines"``: a line
        per fit as it finishes (name, ok or not, wall time, max r_hat, min bulk ESS, divergences)
        and, after a minute without one (:data:`HEARTBEAT_S`), how many are done: for a log file
        or a batch job, where a bar shows nothing until the end. True (the default): a bar on a
        terminal or in a notebook, else lines. False: neither.
    log : callable, optional
        Receives the lines of ``progress="lines"`` (default: printed to standard output,
        flushed); a study passes its time-stamped log.

    A failed fit does not stop the others: it is recorded with its error (call
    ``result.raise_on_error()`` to turn failures into an exception). Diagnostics warnings
    from the fits are re-issued here, one ``FitWarning`` per fit, when all are done.
    """
    specs = _check_specs(specs)
    kind = _executor_kind(executor)
    shown = _progress_kind(progress)
    if max_workers is not None and kind != "process":
        raise ValueError("max_workers sizes the executor='process' pool only; size a Dask cluster "
                         "with cluster.scale() and your own executor when you create it.")
    if max_workers is not None and int(max_workers) < 1:
        raise ValueError(f"max_workers must be >= 1; got {max_workers!r}.")
    out = Path(out_dir).resolve() if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    paths = {s.name: (str(out / f"{s.name}.nc") if out is not None else None) for s in specs}
    specs = _pad_from_the_start(specs)
    blobs = [_dumps(i, s) for i, s in enumerate(specs)] if kind != "sequential" else []
    imports = imported_by_location() if kind != "sequential" else {}  # e.g. a study's package, for the workers

    outcomes: dict[str, FitOutcome] = {}
    report = _reporter(shown, len(specs), log)

    def record(outcome: FitOutcome) -> None:
        outcomes[outcome.name] = outcome
        report.update(outcome)

    t0 = time.perf_counter()
    try:
        if not specs:
            pass
        elif kind == "sequential":
            for s in specs:
                record(run_fit(s.name, s, paths[s.name]))
        elif kind == "dask":
            _run_dask(cast("Client", executor), specs, blobs, paths, record)  # _executor_kind checked it
        else:
            pool: cf.Executor
            env: contextlib.AbstractContextManager[None]
            threads: int | None
            if kind == "process":
                n = min(int(max_workers or cpu_count()), len(specs))
                threads = int(os.environ.get("PRAGMODELS_WORKER_THREADS", max(1, cpu_count() // n)))
                pool = cf.ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"))
                env = spawn_environ(threads)
                cache_dir = compilation_cache_dir()  # this process's cache: the same machine
            else:
                assert isinstance(executor, cf.Executor)  # _executor_kind checked it
                pool, env, threads, cache_dir = executor, contextlib.nullcontext(), None, None
            try:
                with env:  # processes are spawned as tasks are submitted
                    futures = {pool.submit(run_fit, s.name, b, paths[s.name], configure=kind == "process",
                                           threads=threads, cache_dir=cache_dir, imports=imports): s.name
                               for s, b in zip(specs, blobs)}
                for fut in cf.as_completed(futures):
                    try:
                        record(fut.result())
                    except Exception as e:  # the worker died (BrokenProcessPool) or the task was lost
                        record(_failed(futures[fut], e))
            except BaseException:
                if kind == "process":
                    pool.shutdown(wait=False, cancel_futures=True)
                raise
            if kind == "process":
                pool.shutdown(wait=True)
    finally:
        report.close()
    result = FitManyResult([outcomes[s.name] for s in specs], executor=kind, wall_s=time.perf_counter() - t0)
    for o in result:
        if o.warnings:
            warnings.warn(f"fit {o.name!r}: " + " ".join(o.warnings), FitWarning, stacklevel=2)
    return result


class _Bar:
    """``progress="bar"`` (or none, disabled): a tqdm bar over fits, failures counted."""

    def __init__(self, total: int, disable: bool):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc="fits", unit="fit", disable=disable)
        self.failed = 0

    def update(self, outcome: FitOutcome) -> None:
        self.failed += not outcome.ok
        self.bar.update(1)
        self.bar.set_postfix(failed=self.failed, refresh=False)

    def close(self) -> None:
        self.bar.close()


def _reporter(shown: str | None, total: int, log: Callable[[str], None] | None) -> _Bar | _Lines:
    if shown == "lines":
        return _Lines(total, log or _print_flushed, HEARTBEAT_S)
    return _Bar(total, disable=shown is None)


def _run_dask(client: Client, specs: list[FitSpec], blobs: list[bytes], paths: Mapping[str, str | None],
              record: Callable[[FitOutcome], None]) -> None:
    from distributed import as_completed

    token = uuid.uuid4().hex[:8]
    imports = imported_by_location()
    cache_dir = compilation_cache_dir()  # the workers load what another worker (or an earlier run) compiled
    futures = [client.submit(run_fit, s.name, b, paths[s.name], configure=True, cache_dir=cache_dir,
                             imports=imports, key=f"fit-{s.name}-{token}",
                             pure=False) for s, b in zip(specs, blobs)]
    names = {f.key: s.name for f, s in zip(futures, specs)}
    try:
        for fut in as_completed(futures):
            try:
                record(fut.result())
            except Exception as e:  # KilledWorker, a lost task, ...
                record(_failed(names[fut.key], e))
    except BaseException:
        client.cancel(futures)
        raise
