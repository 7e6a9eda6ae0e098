"""Entry points and config files: ``"path/to/module.py:function"`` resolved from a config, the
repository's studies imported by location, and the JSON object a config file holds.
"""


from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from pragmodels.errors import ConfigError
from pragmodels.io.imports import import_file, import_package

__all__ = ['search_path', 'load_entry_point', 'entry_point_file', 'import_studies', 'read_config']

# ------------------------------------------------------------------ entry points
def search_path(start: str | os.PathLike) -> list[Path]:
    """The directories a config's relative paths resolve against, nearest first.

    Parameters
    ----------
    start : str or path-like
        Usually the config's folder.

    Returns
    -------
    list of Path
        ``start`` (absolute), then each parent, up to and including the first that holds
        ``pyproject.toml`` or ``.git`` (to the file system root if none does).
    """
    d = Path(start).absolute()
    out = []
    for p in (d, *d.parents):
        out.append(p)
        if (p / "pyproject.toml").exists() or (p / ".git").exists():
            break
    return out


def load_entry_point(value: str, config_path: str | os.PathLike, key: str = "study") -> Callable[..., Any]:
    """Resolve ``"path/to/module.py:function"`` from a config and return the function.

    A relative path is looked up in each folder of :func:`search_path` (from the config's
    folder); an absolute one is used as it is. The file is imported by its location
    (:func:`pragmodels.io.imports.import_file`), never through ``sys.path``: inside a package
    (``models/social_meaning/study.py``) by its dotted name (``models.social_meaning.study``), its
    top package imported from its folder, so the study's own ``from models.social_meaning import
    ...`` find the same modules; any other file once per process under a private name.

    Parameters
    ----------
    value : str
        ``"path/to/module.py:function"``, as written in the config.
    config_path : str or path-like
        The config file ``value`` comes from.
    key : str
        The config key (``"study"``, ``"tables"``), named in the errors.

    Returns
    -------
    callable

    Raises
    ------
    ConfigError
        Naming the config, the key and the value: malformed ``value`` (a dotted
        ``"package.module:function"`` included), no such file (with the path of a file that
        moved into a package, such as ``models/social_meaning_study.py`` ->
        ``models/social_meaning/study.py``, suggested), the import failed (or found another
        package of that name first), or no such function.
    """
    where = f"{config_path}: {key} = {value!r}"
    path, func_name = entry_point_file(value, config_path, key)
    try:
        module = import_file(path)
    except ImportError as e:
        raise ConfigError(f"{where}: importing {path} failed ({e}).") from e
    func = getattr(module, func_name, None)
    if not callable(func):
        raise ConfigError(f"{where}: {path} has no function {func_name!r}.")
    return func


def entry_point_file(value: str, config_path: str | os.PathLike, key: str = "study") -> tuple[Path, str]:
    """The file and the function name of ``"path/to/module.py:function"``, found as
    :func:`load_entry_point` finds them but without importing the file.

    Parameters
    ----------
    value, config_path, key
        As :func:`load_entry_point`.

    Returns
    -------
    (Path, str)
        The file (absolute, resolved) and the function's name.

    Raises
    ------
    ConfigError
        As :func:`load_entry_point`: ``value`` is malformed or names no file.
    """
    config_path = Path(config_path)
    where = f"{config_path}: {key} = {value!r}"
    if not isinstance(value, str) or value.count(":") != 1:
        raise ConfigError(f"{where}: expected 'path/to/module.py:function'.")
    file_part, func_name = value.split(":")
    if not file_part.endswith(".py") or not func_name.isidentifier():
        raise ConfigError(f"{where}: expected 'path/to/module.py:function'.")
    rel = Path(file_part)
    absolute = rel.is_absolute()
    if absolute:
        bases = [rel.parent]
        rel = Path(rel.name)
    else:
        bases = search_path(config_path.parent)
    base = next((b for b in bases if (b / rel).is_file()), None)
    if base is None:
        moved = next(((b / m).as_posix() if absolute else m for b in bases for m in _moved_into_package(b, rel)), None)
        hint = f"; did you mean '{moved}:{func_name}'?" if moved else ""
        raise ConfigError(f"{where}: no file {rel} under {' or '.join(str(b) for b in bases)}{hint}.")
    return (base / rel).resolve(), func_name


def _moved_into_package(base: Path, rel: Path) -> list[str]:
    """``a/b_c.py`` -> ``a/b/c.py`` where that file exists under ``base`` (a flat module moved into
    a package of the same prefix)."""
    stem, out = rel.stem, []
    for i in [i for i, ch in enumerate(stem) if ch == "_"]:
        candidate = rel.parent / stem[:i] / f"{stem[i + 1:]}.py"
        if (base / candidate).is_file():
            out.append(candidate.as_posix())
    return out


def import_studies(root: str | os.PathLike | None = None) -> ModuleType:
    """The repository's studies, the package ``models``, imported by its location.

    For a notebook or script that uses a study's functions: after this call ``from
    models.social_meaning import rsa`` (and any ``import models...``) works from any working
    directory, with no ``sys.path`` edit, and finds the modules a study run uses.

    Parameters
    ----------
    root : str or path-like, optional
        The repository root (default: :func:`pragmodels.datasets.repository_root`, found from
        the working directory upwards, else above the imported pragmodels).

    Returns
    -------
    module
        The package ``models`` (:func:`pragmodels.io.imports.import_package`).

    Raises
    ------
    ImportError
        No checkout with a ``models/`` package was found.
    """
    if root is None:
        from pragmodels.datasets import repository_root

        root = repository_root()
        if root is None:
            raise ImportError("no pragmodels checkout found from the working directory (the studies in models/ "
                              "are part of the repository, not of the installed package); pass root=.")
    return import_package(Path(root) / "models")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_config(path: str | os.PathLike, what: str = "config") -> dict[str, Any]:
    """The JSON object in the config file ``path`` (read, not validated).

    Parameters
    ----------
    path : str or path-like
        A UTF-8 JSON file.
    what : str
        The kind of config, named in the errors (``"fit config"``, ``"study config"``).

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        Naming the file: it is missing, a folder, unreadable or not UTF-8, empty, not valid JSON (``NaN``
        and ``Infinity`` included, or nested too deeply to parse), or not a JSON object.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist.", path=path) from None
    except IsADirectoryError:
        raise ConfigError(f"{what} {path} is a folder, not a JSON file.", path=path) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{what} {path}: not UTF-8 text ({e.reason} at byte {e.start}).", path=path) from None
    except OSError as e:
        raise ConfigError(f"{what} {path}: cannot be read ({e.strerror or e}).", path=path) from None
    if not text.strip():
        raise ConfigError(f"{what} {path}: the file is empty (expected a JSON object {{...}}).", path=path)
    try:
        cfg = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{what} {path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}).",
                          path=path) from None
    except ValueError as e:
        raise ConfigError(f"{what} {path}: not valid JSON ({e}).", path=path) from None
    except RecursionError:
        raise ConfigError(f"{what} {path}: not valid JSON (nested more than the parser allows, about "
                          f"{sys.getrecursionlimit()} levels; a config is a few levels deep).", path=path) from None
    if not isinstance(cfg, dict):
        kind = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
        raise ConfigError(f"{what} {path}: expected a JSON object {{...}}; got {kind.get(type(cfg), 'null')}.",
                          path=path)
    return cfg


