"""Study runs: a study config validated against its study's schema, then run into its run folder;
:class:`StudyFolder`, the steps every study takes inside that folder (tables/, figures/,
posteriors/, data hashes, fits through ``fit_many`` saved and recorded, the convergence table,
``summary.json``, ``report.md``).
"""


from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pragmodels.errors import ConfigError
from pragmodels.io.imports import import_file
from pragmodels.runs.entry_points import entry_point_file, load_entry_point, read_config
from pragmodels.runs.folder import MODES, Run, check_writable, open_run, run_folder
from pragmodels.validation import check_one_of

if TYPE_CHECKING:
    import pandas as pd
    import xarray as xr

    from pragmodels.inference.fit_many import FitSpec
    from pragmodels.runs.schema import StudyConfig

__all__ = ['study_config_model', 'config_module_file', 'check_study_config', 'load_study_config', 'run_study', 'convergence_table', 'StudyFolder']

def study_config_model(entry: Callable[..., Any]) -> type[StudyConfig]:
    """The config model of a study: ``Config`` in its entry point's module, else ``StudyConfig``.

    Parameters
    ----------
    entry : callable
        The study's entry point (:func:`load_entry_point`).

    Returns
    -------
    type of StudyConfig
        ``Config`` (a subclass of :class:`pragmodels.runs.schema.StudyConfig`) when the module
        defines one, else ``StudyConfig`` itself.

    Raises
    ------
    ConfigError
        The module's ``Config`` is not a subclass of ``StudyConfig``.
    """
    from pragmodels.runs.schema import StudyConfig

    module = sys.modules.get(getattr(entry, "__module__", "") or "")
    return _config_of(module) or StudyConfig


def _config_of(module: ModuleType | None) -> type[StudyConfig] | None:
    """A module's ``Config``, checked to be a ``StudyConfig``; None when it has none."""
    from pragmodels.runs.schema import StudyConfig

    model = getattr(module, "Config", None)
    if model is None:
        return None
    if not (isinstance(model, type) and issubclass(model, StudyConfig)):
        raise ConfigError(f"{getattr(module, '__file__', module)}: Config must be a subclass of "
                          f"pragmodels.runs.schema.StudyConfig; got {model!r}.")
    return model


def config_module_file(entry_file: str | os.PathLike[str]) -> Path | None:
    """The module that holds a study's ``Config`` apart from its code: ``config.py`` beside the
    entry point's file, when that file is in a package (``models/social_meaning/config.py`` for
    ``models/social_meaning/study.py``); None when there is none.

    Parameters
    ----------
    entry_file : str or path-like
        The entry point's file (:func:`pragmodels.runs.entry_points.entry_point_file`).

    Returns
    -------
    Path or None
    """
    entry_file = Path(entry_file)
    candidate = entry_file.parent / "config.py"
    if entry_file.name == "config.py" or not (entry_file.parent / "__init__.py").is_file():
        return None
    return candidate if candidate.is_file() else None


def _validated(path: Path) -> tuple[dict[str, Any], type[StudyConfig] | None]:
    """The config at ``path`` validated, and the ``Config`` of its study's config module (None
    when the study has none and its entry point's module was imported for its ``Config``)."""
    from pragmodels.runs.schema import validate_config

    config = read_config(path, "study config")
    if "study" not in config:
        raise ConfigError(f"study config {path}: `study`: required key missing (expected "
                          "'path/to/module.py:function').", path=path, problems=[("study", "required key missing")])
    entry_file, _ = entry_point_file(config["study"], path, "study")
    config_file = config_module_file(entry_file)
    light = None
    if config_file is not None:
        try:
            light = _config_of(import_file(config_file))
        except ImportError as e:
            raise ConfigError(f"{path}: study = {config['study']!r}: importing {config_file} (the study's config "
                              f"schema) failed ({e}).", path=path) from e
    model = light or study_config_model(load_entry_point(config["study"], path, "study"))
    validate_config(model, config, path, "study config")
    return config, light


def check_study_config(path: str | os.PathLike) -> dict[str, Any]:
    """The study config at ``path``, validated against its study's schema without importing the study.

    The schema is ``Config`` in the study's config module (:func:`config_module_file`, e.g.
    ``models/social_meaning/config.py``), which imports no JAX: a bad key or value is reported at
    once. A study without a config module has its entry point's module imported for its
    ``Config`` (else :class:`~pragmodels.runs.schema.StudyConfig`), as :func:`load_study_config`.

    Parameters
    ----------
    path : str or path-like
        The study config file.

    Returns
    -------
    dict
        The config as read (not the validated model).

    Raises
    ------
    ConfigError
        As :func:`load_study_config`.
    """
    return _validated(Path(path))[0]


def load_study_config(path: str | os.PathLike) -> tuple[dict[str, Any], Callable[..., Any]]:
    """The study config at ``path`` and its entry point, validated before anything runs.

    The config is checked against the study's schema (:func:`check_study_config`), then the
    ``study`` entry point is resolved (:func:`load_entry_point`).

    Parameters
    ----------
    path : str or path-like
        The study config file.

    Returns
    -------
    (dict, callable)
        The config as read (not the validated model) and the entry point.

    Raises
    ------
    ConfigError
        The file cannot be read, has no ``study`` key, the entry point cannot be resolved, the
        config does not validate (one line naming the file, the keys and the values), or the
        entry point's module defines a ``Config`` other than its config module's.
    """
    path = Path(path)
    config, light = _validated(path)
    entry = load_entry_point(config["study"], path, "study")
    own = _config_of(sys.modules.get(getattr(entry, "__module__", "") or ""))
    if light is not None and own is not None and own is not light:
        raise ConfigError(f"{path}: study = {config['study']!r}: its module defines a Config of its own, not the one "
                          f"of its config module {light.__module__} that the config was validated against; "
                          f"import that one instead (from {light.__module__} import Config).", path=path)
    return config, entry


def run_study(config_path: str | os.PathLike, *, mode: str = "full", out: str | os.PathLike | None = None,
              progress: bool = False, log: Callable[[str], None] | None = None) -> Path:
    """Run the study a config names (``"study": "path.py:function"``) into its run folder.

    The config is validated and the entry point resolved (:func:`load_study_config`), and the run
    folder checked to be writable (:func:`check_writable`), before anything is written; the entry
    point's signature is on the docs page *Running studies and sweeps*. Whatever the entry point raises
    propagates, the previous run folder left as it was.

    Parameters
    ----------
    config_path : str or path-like
        The study config.
    mode : {"quick", "full"}
        Which of the config's ``sampler`` settings to use; also names the run folder.
    out : str or path-like, optional
        Run folder to use instead of ``<config without .json>/<mode>/``.
    progress : bool
        Passed to the entry point: report progress (its fits through ``fit_many``: a bar on a
        terminal, else a line per fit as it finishes, for a log file).
    log : callable, optional
        As :func:`open_run`.

    Returns
    -------
    Path
        The run folder (absolute).

    Raises
    ------
    ValueError
        ``mode`` is not one of :data:`MODES`.
    ConfigError
        As :func:`load_study_config`.
    RunError, RunFolderLocked
        As :func:`check_writable` and :func:`open_run`.
    """
    check_one_of("mode", mode, MODES)
    config_path = Path(config_path)
    config, entry = load_study_config(config_path)
    sampler = config["sampler"][mode]
    final = check_writable(run_folder(config_path, mode, out))
    with open_run(final, mode=mode, entry_point=config["study"], config=config, config_path=config_path,
                  sampler=sampler, seed=config.get("seed"), log=log) as run:
        entry(config, run.path, mode, progress, run)
    return final


def convergence_table(fits: Mapping[str, Any]) -> pd.DataFrame:
    """One row per fit from a run manifest's ``fits``: divergences, max r_hat, min bulk and tail
    ESS, whether the diagnostics pass, wall time, and for a fit started in its basins
    (``init="basins"``) how many basins it sampled, how many carried a weight of at least 0.01, and
    their weights (empty for a fit started otherwise). Where some fit was sampled again with more
    draws (:func:`pragmodels.inference.top_up.top_up`), a column ``draws_resized`` says so:
    ``"400 -> 1000 (least ESS 274, r_hat 1.010)"``, and a refit that missed more standards and was not kept
    ``"600 draws, target_accept 0.975 not kept (missed r_hat, depth cap)"`` (empty for the others; no column
    where none was).

    Parameters
    ----------
    fits : dict
        ``run.json``'s ``fits`` (or the open run's).

    Returns
    -------
    pandas.DataFrame
    """
    import pandas as pd

    rows = []
    for label, f in fits.items():
        d = f.get("diagnostics") or {}
        basins = f.get("basins") or []
        rows.append({"fit": label, "divergences": d.get("divergences"), "max_rhat": d.get("max_rhat"),
                     "min_ess_bulk": d.get("min_ess_bulk"), "min_ess_tail": d.get("min_ess_tail"),
                     "converged": f.get("diagnostics_ok"), "wall_s": f.get("wall_time_s"),
                     "basins": len(basins) or None, "basins_with_mass": sum(b["weight"] >= 0.01 for b in basins) or None,
                     "basin_weights": " / ".join(f"{b['weight']:.3f}" for b in basins) or None})
        if f.get("draws_resized"):
            r = f["draws_resized"]
            steps = (f"; target_accept {r['target_accept'][0]} -> {r['target_accept'][1]} after {r['divergences']} "
                     "divergences" if "target_accept" in r else "")
            steps += (f"; warm-up {r['num_warmup'][0]} -> {r['num_warmup'][1]} after trajectories at the depth cap"
                      if "num_warmup" in r else "")
            rows[-1]["draws_resized"] = (f"{r['from']} -> {r['to']} (least ESS {r['ess']:.0f}, r_hat {r['max_rhat']:.3f}"
                                         f"{steps})")
        if f.get("refits_not_kept"):
            worse = "; ".join(f"{a['draws']} draws, target_accept {a['target_accept']} not kept (missed "
                              f"{', '.join(a['missed'])})" for a in f["refits_not_kept"])
            rows[-1]["draws_resized"] = "; ".join(filter(None, [rows[-1].get("draws_resized"), worse]))
    return pd.DataFrame(rows)


class StudyFolder:
    """The staging folder of a study run, and the steps every study takes in it.

    A study's entry point (``run(config, out_dir, mode, progress, record)``) makes one from the
    open run it is given, then calls the steps it needs::

        folder = StudyFolder(record)                 # tables/, figures/, posteriors/
        folder.record_dataset("wavelength")          # the registry's sha256 into run.json
        trees = folder.fit_and_save(specs, executor=cfg.executor, progress=progress)
        ...                                          # the study's own tables and figures
        folder.write_summary(summary)
        folder.write_convergence()
        folder.write_report(render_report(folder.path, mode))

    Parameters
    ----------
    record : Run
        The open run (:func:`pragmodels.runs.folder.open_run`); its staging folder is written.
    log : callable, optional
        Receives :meth:`log`'s lines (default: print them, flushed).

    Attributes
    ----------
    path, tables, figures, posteriors : Path
        The staging folder and its three subfolders (made here).
    record : Run
        The open run.
    """

    def __init__(self, record: Run, *, log: Callable[[str], None] | None = None):
        self.record = record
        self.path = Path(record.path)
        self.tables, self.figures, self.posteriors = (self.path / d for d in ("tables", "figures", "posteriors"))
        for d in (self.tables, self.figures, self.posteriors):
            d.mkdir(parents=True, exist_ok=True)
        self._t0 = time.perf_counter()
        self._print = log or (lambda msg: print(msg, flush=True))

    def log(self, message: str) -> None:
        """Print ``message`` after the seconds since the folder was made: ``[  12.3 s] message``.

        Parameters
        ----------
        message : str

        Returns
        -------
        None
        """
        self._print(f"[{time.perf_counter() - self._t0:7.1f} s] {message}")

    def record_dataset(self, *keys: str) -> None:
        """Record each data set's sha256 in the manifest, as :mod:`pragmodels.datasets` verified it.

        Parameters
        ----------
        *keys : str
            Keys of :data:`pragmodels.datasets.REGISTRY` (``"wavelength"``, ``"social_human"``).

        Returns
        -------
        None
        """
        from pragmodels.datasets import REGISTRY

        for key in keys:
            self.record.data(key, REGISTRY[key].sha256)

    def record_file(self, key: str, path: str | os.PathLike[str]) -> str:
        """Record an input file's sha256 in the manifest (committed LM scores, say) under ``key``.

        Parameters
        ----------
        key : str
            The name in ``run.json``'s ``data``.
        path : str or path-like
            The file.

        Returns
        -------
        str
            The sha256 hex digest.
        """
        from pragmodels.io.checksums import sha256_file

        digest = sha256_file(path)
        self.record.data(key, digest)
        return digest

    def save_fit(self, label: str, tree: xr.DataTree, file: str) -> Path:
        """Save a fit as ``posteriors/<file>`` (netCDF with a checksum) and record it as ``label``.

        Parameters
        ----------
        label : str
            The fit's label in ``run.json``'s ``fits``.
        tree : xarray.DataTree
            The fit (its provenance attributes are recorded).
        file : str
            The file name inside ``posteriors/``.

        Returns
        -------
        Path
            The file written.
        """
        from pragmodels.io.netcdf import save_netcdf

        path = save_netcdf(tree, self.posteriors / file)
        self.record.fit(label, tree, path.relative_to(self.path).as_posix())
        return path

    def fit_and_save(self, specs: Iterable[FitSpec], *, executor: Any = "sequential", progress: bool = False,
                     label: Callable[[str], str] = str,
                     file: Callable[[str], str] = lambda name: f"{name}.nc",
                     top_up: bool = False) -> dict[str, xr.DataTree]:
        """Run the fits (:func:`pragmodels.fit_many`), raise if any failed, save and record each.

        Parameters
        ----------
        specs : list of FitSpec
            The fits.
        executor : str or executor
            Passed to :func:`~pragmodels.inference.fit_many.fit_many`.
        progress : bool
            Report the fits as they finish (:func:`~pragmodels.inference.fit_many.fit_many`: a bar on
            a terminal, else a time-stamped line per fit in :meth:`log`).
        label, file : callable
            The fit's label in the manifest and its file name in ``posteriors/``, from the spec's
            name (default: the name, and ``<name>.nc``).
        top_up : bool
            Sample a fit short of the sampling standards again with more draws
            (:func:`~pragmodels.inference.top_up.top_up`; :meth:`log` says which and why, and the
            manifest records its ``draws_resized``) before saving.

        Returns
        -------
        dict
            ``{spec name: tree}``, in the order of ``specs``.

        Raises
        ------
        FitManyError
            Some fit failed (every failure named); nothing is saved then.
        """
        from pragmodels.inference import top_up as sizing
        from pragmodels.inference.fit_many import fit_many

        specs = list(specs)
        result = fit_many(specs, executor=executor, progress=progress, log=self.log).raise_on_error()
        done = result.trees
        if top_up:
            sized = sizing.top_up(specs, result, executor=executor, progress=progress, log=self.log)
            done = {o.name: o.tree for o in sized if o.tree is not None}
        trees = {s.name: done[s.name] for s in specs}
        for name, tree in trees.items():
            self.save_fit(label(name), tree, file(name))
        return trees

    def fit_per_lm(self, specs: Iterable[FitSpec], *, executor: Any = "sequential", progress: bool = False,
                   mode: str = "full") -> dict[str, xr.DataTree]:
        """:meth:`fit_and_save` for fits named ``"<lm>-<model>"`` (the LM studies' models, one LM at a time):
        saved as ``posteriors/<lm>_<model>.nc``, recorded as ``"<lm>/<model>"``; in a ``"full"`` run a fit
        short of the sampling standards is sampled again first (``top_up``), a quick run's short chains
        are not.

        Returns
        -------
        dict
            ``{model: tree}``, in the order of ``specs``.
        """
        trees = self.fit_and_save(specs, executor=executor, progress=progress, label=lambda n: n.replace("-", "/", 1),
                                  file=lambda n: n.replace("-", "_", 1) + ".nc", top_up=mode == "full")
        return {name.split("-", 1)[1]: tree for name, tree in trees.items()}

    def write_convergence(self) -> pd.DataFrame:
        """Write ``tables/convergence.csv`` from the fits recorded so far (:func:`convergence_table`).

        Returns
        -------
        pandas.DataFrame
            The table written.
        """
        table = convergence_table(self.record.manifest.get("fits", {}))
        table.to_csv(self.tables / "convergence.csv", index=False)
        return table

    def write_summary(self, summary: Mapping[str, Any]) -> Path:
        """Write ``summary.json``: what the study's report reads beside its tables.

        Parameters
        ----------
        summary : dict
            JSON-serialisable.

        Returns
        -------
        Path
        """
        path = self.path / "summary.json"
        path.write_text(json.dumps(summary, indent=1))
        return path

    def write_report(self, text: str) -> Path:
        """Write ``report.md``.

        Parameters
        ----------
        text : str
            The report (markdown).

        Returns
        -------
        Path
        """
        path = self.path / "report.md"
        path.write_text(text)
        return path
