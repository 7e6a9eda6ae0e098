"""Entry points and config files: ``"path/to/module.py:function"`` resolved from a config, and
the JSON object a config file holds.
"""


from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pragmodels.errors import ConfigError

if TYPE_CHECKING:

    pass

__all__ = ['search_path', 'load_entry_point', 'read_config']

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
    folder); an absolute one is used as it is. The folder it resolved against is put on
    ``sys.path``. A path through packages (every folder with an ``__init__.py``) is imported by
    its dotted name; any other file is loaded once per process under a private module name.

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
        Naming the config, the key and the value: malformed ``value``, no such file, the import
        failed (or found another module of that name first), or no such function.
    """
    config_path = Path(config_path)
    where = f"{config_path}: {key} = {value!r}"
    if not isinstance(value, str) or value.count(":") != 1:
        raise ConfigError(f"{where}: expected 'path/to/module.py:function'.")
    file_part, func_name = value.split(":")
    if not file_part.endswith(".py") or not func_name.isidentifier():
        raise ConfigError(f"{where}: expected 'path/to/module.py:function'.")
    rel = Path(file_part)
    if rel.is_absolute():
        bases = [rel.parent]
        rel = Path(rel.name)
    else:
        bases = search_path(config_path.parent)
    base = next((b for b in bases if (b / rel).is_file()), None)
    if base is None:
        raise ConfigError(f"{where}: no file {rel} under {' or '.join(str(b) for b in bases)}.")
    path = (base / rel).resolve()
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))  # so that `from models import ...` works inside the study
    parts = rel.with_suffix("").parts
    is_package_path = all((base / Path(*parts[:i]) / "__init__.py").is_file() for i in range(1, len(parts)))
    module: ModuleType | None
    try:
        if is_package_path and all(p.isidentifier() for p in parts):
            name = ".".join(parts)
            module = importlib.import_module(name)
            if Path(module.__file__ or "").resolve() != path:
                raise ConfigError(f"{where}: module {name!r} is imported from {module.__file__}, not {path} "
                                 f"(another {parts[0]!r} package comes first on sys.path).")
        else:
            name = f"_pragmodels_entry_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
            module = sys.modules.get(name)
            if module is None:
                spec = importlib.util.spec_from_file_location(name, path)
                if spec is None or spec.loader is None:
                    raise ImportError(f"no module loader for {path}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name]
                    raise
    except ImportError as e:
        raise ConfigError(f"{where}: importing {path} failed ({e}).") from e
    func = getattr(module, func_name, None)
    if not callable(func):
        raise ConfigError(f"{where}: {path} has no function {func_name!r}.")
    return func


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
        Naming the file: it is missing, a folder, unreadable or not UTF-8, not valid JSON (``NaN``
        and ``Infinity`` included), or not a JSON object.
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
    try:
        cfg = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{what} {path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}).",
                          path=path) from None
    except ValueError as e:
        raise ConfigError(f"{what} {path}: not valid JSON ({e}).", path=path) from None
    if not isinstance(cfg, dict):
        kind = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
        raise ConfigError(f"{what} {path}: expected a JSON object {{...}}; got {kind.get(type(cfg), 'null')}.",
                          path=path)
    return cfg


