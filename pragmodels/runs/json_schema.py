"""JSON Schema files for editors: written from the config models into ``schemas/``.

``python -m pragmodels.runs.json_schema [SCHEMAS_FOLDER [FITS_FOLDER]]`` rewrites them; a test
checks that the committed files are up to date.
"""


from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pragmodels.io.atomic import write_aside
from pragmodels.runs.schema import StudyConfig

__all__ = ['json_schema', 'schema_texts', 'write_schemas', 'SCHEMA_FILES']

# ------------------------------------------------------------------ JSON Schema files
#: file name in ``schemas/`` -> (module, class) of the model it is generated from
SCHEMA_FILES = {
    "fit_config.schema.json": ("pragmodels.runs.fit_config", "FitConfig"),
    "study_config.schema.json": ("pragmodels.runs.schema", "StudyConfig"),
}


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a config model, as written to ``schemas/``.

    Parameters
    ----------
    model : type of pydantic.BaseModel
        The config model.

    Returns
    -------
    dict
        ``model.model_json_schema(by_alias=True)`` with a leading ``"$schema"`` key.
    """
    schema = model.model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def schema_texts(fits: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """File name -> text of each JSON Schema file: :data:`SCHEMA_FILES`, and for each study config
    in the folder ``fits`` whose study defines its own ``Config``, ``<config name>.schema.json``.

    Parameters
    ----------
    fits : str or path-like, optional
        A folder of study configs.

    Returns
    -------
    dict of str to str
    """
    import importlib

    models: dict[str, type[BaseModel]] = {}
    for name, (module, cls) in SCHEMA_FILES.items():
        models[name] = getattr(importlib.import_module(module), cls)
    if fits is not None:
        from pragmodels.runs.entry_points import load_entry_point, read_config
        from pragmodels.runs.study import study_config_model

        for path in sorted(Path(fits).glob("*.json")):
            cfg = read_config(path)
            if isinstance(cfg.get("study"), str):
                model = study_config_model(load_entry_point(cfg["study"], path, "study"))
                if model is not StudyConfig:
                    models[f"{path.stem}.schema.json"] = model
    return {name: json.dumps(json_schema(model), indent=2, ensure_ascii=False) + "\n"
            for name, model in models.items()}


def write_schemas(folder: str | os.PathLike[str], fits: str | os.PathLike[str] | None = None) -> list[Path]:
    """Write the JSON Schema files (:func:`schema_texts`) into ``folder`` (the repository's ``schemas/``).

    The command line is ``python -m pragmodels.runs.json_schema [SCHEMAS_FOLDER [FITS_FOLDER]]``
    (defaults ``schemas`` and ``fits``).

    Parameters
    ----------
    folder : str or path-like
        Where the files go (created if missing); existing files of the same name are overwritten.
    fits : str or path-like, optional
        A folder of study configs: each whose study defines its own ``Config`` also gets
        ``<config name>.schema.json``.

    Returns
    -------
    list of Path
        The files written.
    """
    texts = schema_texts(fits)
    written = [Path(folder) / name for name in texts]
    with write_aside(*written) as tmps:  # all of them or none (pragmodels.io.atomic)
        for tmp, text in zip(tmps, texts.values()):
            tmp.write_text(text)
    return written


if __name__ == "__main__":  # python -m pragmodels.runs.json_schema [SCHEMAS_FOLDER [FITS_FOLDER]]
    import sys

    from pragmodels.runs.json_schema import (
        write_schemas as _write,  # the package's classes, not __main__'s
    )

    args = sys.argv[1:] + ["schemas", "fits"][len(sys.argv[1:]):]
    for p in _write(args[0], args[1]):
        print(f"wrote {p}")
