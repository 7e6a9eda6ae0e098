"""Runs: configs validated before anything starts, run folders written aside and swapped in whole,
manifests, and the runners of a single-fit config and of a study.

- :mod:`~pragmodels.runs.folder`: run folders (staged, locked, swapped), manifests (``run.json``);
- :mod:`~pragmodels.runs.entry_points`: ``"path/to/module.py:function"`` from a config; reading
  config files;
- :mod:`~pragmodels.runs.schema`: pydantic schemas of configs, one-line errors;
- :mod:`~pragmodels.runs.json_schema`: the JSON Schema files in ``schemas/``;
- :mod:`~pragmodels.runs.study`: a study config run into its folder, and the steps a study takes in
  it (:class:`~pragmodels.runs.study.StudyFolder`);
- :mod:`~pragmodels.runs.fit_config`: a single-fit config run into its folder.

The names of :mod:`~pragmodels.runs.folder`, :mod:`~pragmodels.runs.entry_points` and
:mod:`~pragmodels.runs.study` are re-exported here.
"""

from pragmodels.runs.entry_points import load_entry_point, read_config, search_path
from pragmodels.runs.folder import (
    MODES,
    Run,
    RunError,
    RunFolderLocked,
    RunInterrupted,
    check_writable,
    lock_folder,
    open_run,
    read_manifest,
    run_folder,
)
from pragmodels.runs.study import (
    StudyFolder,
    convergence_table,
    load_study_config,
    run_study,
    study_config_model,
)

__all__ = [
    "MODES", "Run", "RunError", "RunFolderLocked", "RunInterrupted", "check_writable", "lock_folder", "open_run",
    "read_manifest", "run_folder", "load_entry_point", "read_config", "search_path", "convergence_table",
    "load_study_config", "run_study", "study_config_model", "StudyFolder",
]
