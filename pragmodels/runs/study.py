"""Study runs: a study config validated against its study's schema, then run into its run folder.
"""


from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pragmodels.errors import ConfigError
from pragmodels.runs.entry_points import load_entry_point, read_config
from pragmodels.runs.folder import MODES, check_writable, open_run, run_folder

if TYPE_CHECKING:
    import pandas as pd

    from pragmodels.runs.schema import StudyConfig

__all__ = ['study_config_model', 'load_study_config', 'run_study', 'convergence_table']

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
    model = getattr(module, "Config", None)
    if model is None:
        return StudyConfig
    if not (isinstance(model, type) and issubclass(model, StudyConfig)):
        raise ConfigError(f"{getattr(module, '__file__', module)}: Config must be a subclass of "
                          f"pragmodels.runs.schema.StudyConfig; got {model!r}.")
    return model


def load_study_config(path: str | os.PathLike) -> tuple[dict[str, Any], Callable[..., Any]]:
    """The study config at ``path`` and its entry point, validated before anything runs.

    The ``study`` entry point is resolved (:func:`load_entry_point`), then the whole config is
    checked against the study's schema (:func:`study_config_model`).

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
        The file cannot be read, has no ``study`` key, the entry point cannot be resolved, or the
        config does not validate (one line naming the file, the keys and the values).
    """
    from pragmodels.runs.schema import validate_config

    path = Path(path)
    config = read_config(path, "study config")
    if "study" not in config:
        raise ConfigError(f"study config {path}: `study`: required key missing (expected "
                          "'path/to/module.py:function').", path=path, problems=[("study", "required key missing")])
    entry = load_entry_point(config["study"], path, "study")
    validate_config(study_config_model(entry), config, path, "study config")
    return config, entry


def run_study(config_path: str | os.PathLike, *, mode: str = "full", out: str | os.PathLike | None = None,
              progress: bool = False, log: Callable[[str], None] | None = None) -> Path:
    """Run the study a config names (``"study": "path.py:function"``) into its run folder.

    The config is validated and the entry point resolved (:func:`load_study_config`), and the run
    folder checked to be writable (:func:`check_writable`), before anything is written; see the
    module docstring for the entry point's signature. Whatever the entry point raises
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
        Passed to the entry point (show progress bars).
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
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}.")
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
    ESS, whether the diagnostics pass, wall time.

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
        rows.append({"fit": label, "divergences": d.get("divergences"), "max_rhat": d.get("max_rhat"),
                     "min_ess_bulk": d.get("min_ess_bulk"), "min_ess_tail": d.get("min_ess_tail"),
                     "converged": f.get("diagnostics_ok"), "wall_s": f.get("wall_time_s")})
    return pd.DataFrame(rows)
