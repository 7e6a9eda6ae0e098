"""Python code imported from where its files are, without editing ``sys.path``.

A reference names an object in code: ``"package.module:attr"`` (imported as usual) or
``"path/to/file.py:attr"`` (:func:`load_object`). A file inside a package (each folder from the
file's up to the top one holds an ``__init__.py``) is imported under its dotted name: the top
package is imported from its folder (:func:`import_package`) and registered in ``sys.modules``,
so the file's own ``from top.sub import x`` statements, and any later ``import top.sub``, find
the same module objects: one file, one module. A file outside any package is loaded once per
process under a private name. Worker processes import the same code first
(:func:`imported_by_location`, :func:`import_locations`), so that fits defined there unpickle.

Layering: the standard library only.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["import_package", "import_file", "load_object", "split_reference", "is_file_reference",
           "imported_by_location", "import_locations"]

#: module name -> the file it was imported from by location in this process (``__init__.py`` for a package)
_BY_LOCATION: dict[str, str] = {}


def _exec(name: str, spec: Any) -> ModuleType:
    if spec is None or spec.loader is None:
        raise ImportError(f"no module loader for {name!r}.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: its own imports (and pickles) find it by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    _BY_LOCATION[name] = str(spec.origin)
    return module


def import_package(folder: str | os.PathLike[str]) -> ModuleType:
    """The package in ``folder``, imported by its location under the folder's name.

    Parameters
    ----------
    folder : str or path-like
        A folder that holds an ``__init__.py``; its name is the package's name.

    Returns
    -------
    module
        The package, registered in ``sys.modules`` (the one already there when it was imported
        from the same folder, by location or from ``sys.path``).

    Raises
    ------
    ImportError
        ``folder`` is not a package, its name is not a Python identifier, another package of
        that name is already imported, or running its ``__init__.py`` failed.
    """
    folder = Path(folder).resolve()
    init = folder / "__init__.py"
    name = folder.name
    if not init.is_file():
        raise ImportError(f"{folder} is not a package (it has no __init__.py).")
    if not name.isidentifier():
        raise ImportError(f"{folder}: {name!r} is not a Python identifier, so it cannot name a package.")
    existing = sys.modules.get(name)
    if existing is not None:
        where = getattr(existing, "__file__", None)
        if where and Path(where).resolve() == init:
            return existing
        raise ImportError(f"a package {name!r} is already imported from {where or 'another location'}, "
                          f"not from {folder}.")
    return _exec(name, importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)]))


def _package_parts(path: Path) -> tuple[Path, list[str]]:
    """``(folder above the top package, [top, ..., module])`` of a file; ``[module]`` outside packages."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, parts


def import_file(path: str | os.PathLike[str]) -> ModuleType:
    """The module of the Python file ``path``: by its dotted name inside a package, else once per
    process under a private name.

    Parameters
    ----------
    path : str or path-like
        A ``.py`` file (relative to the working directory, or absolute).

    Returns
    -------
    module
        Registered in ``sys.modules``. Inside a package its top package is imported by
        location first (:func:`import_package`), then the module by its dotted name; a file
        outside any package gets the name ``_pragmodels_file_<stem>_<hash of its path>``.

    Raises
    ------
    FileNotFoundError
        No such file.
    ImportError
        The module cannot be imported, or its dotted name finds another file.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no file {path}.")
    above, parts = _package_parts(path)
    if len(parts) > 1 and all(p.isidentifier() for p in parts):
        import_package(above / parts[0])
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        module = importlib.import_module(name)
        if Path(module.__file__ or "").resolve() != path:
            raise ImportError(f"module {name!r} is imported from {module.__file__}, not from {path}.")
        return module
    stem = re.sub(r"\W", "_", path.stem)
    name = f"_pragmodels_file_{stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
    loaded = sys.modules.get(name)
    return loaded if loaded is not None else _exec(name, importlib.util.spec_from_file_location(name, path))


def is_file_reference(module_part: str) -> bool:
    """Whether the part of a reference before its ``:`` names a file (ends in ``.py`` or holds
    a path separator) rather than a module.

    Parameters
    ----------
    module_part : str
        ``"path/to/file.py"`` or ``"package.module"``.

    Returns
    -------
    bool
    """
    return module_part.endswith(".py") or "/" in module_part or "\\" in module_part


def split_reference(ref: str) -> tuple[str, str]:
    """``(module part, attribute)`` of ``"package.module:attr"`` or ``"path/to/file.py:attr"``.

    Parameters
    ----------
    ref : str
        The reference; the attribute may be dotted (``"module:Class.method"``).

    Returns
    -------
    (str, str)

    Raises
    ------
    ValueError
        No ``:``, nothing before it, or an attribute that is not a dotted identifier.
    """
    module_part, sep, attr = ref.rpartition(":") if isinstance(ref, str) else ("", "", "")
    if not sep or not module_part or not all(p.isidentifier() for p in attr.split(".")):
        raise ValueError(f"{ref!r} must look like 'package.module:attr' or 'path/to/file.py:attr'.")
    return module_part, attr


def load_object(ref: str, base: str | os.PathLike[str] | None = None) -> Any:
    """The object a reference names: ``"package.module:attr"`` or ``"path/to/file.py:attr"``.

    Parameters
    ----------
    ref : str
        The reference (:func:`split_reference`); a file is imported with :func:`import_file`.
    base : str or path-like, optional
        The folder a relative file path is resolved against (default: the working directory).

    Returns
    -------
    object
        What ``attr`` names in the module.

    Raises
    ------
    ValueError
        A malformed reference.
    FileNotFoundError, ImportError
        As :func:`import_file`, or the module cannot be imported.
    AttributeError
        The module has no such attribute.
    """
    module_part, attr = split_reference(ref)
    if is_file_reference(module_part):
        path = Path(module_part)
        module = import_file(path if path.is_absolute() else Path(base if base is not None else os.getcwd()) / path)
    else:
        module = importlib.import_module(module_part)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AttributeError(f"{ref!r}: {module_part} has no attribute {attr!r}.") from None
    return obj


def imported_by_location() -> dict[str, str]:
    """The packages and lone files this process imported by location and still holds.

    Returns
    -------
    dict
        Module name -> file (``__init__.py`` of a package); :func:`import_locations` imports
        them in another process.
    """
    out = {}
    for name, file in _BY_LOCATION.items():
        module = sys.modules.get(name)
        if module is not None and Path(getattr(module, "__file__", "") or "").resolve() == Path(file).resolve():
            out[name] = file
    return out


def import_locations(locations: Mapping[str, str]) -> dict[str, str]:
    """Import, in this process, what another imported by location (:func:`imported_by_location`).

    A module that fails to import here (it may need what only the other process had, e.g. a test
    package on its ``sys.path``) is skipped and reported, not raised: the caller may never need it,
    and if it does, unpickling its fit fails with an error that can name these failures.

    Parameters
    ----------
    locations : dict
        Module name -> file. A name already imported, or a file that is gone, is skipped.

    Returns
    -------
    dict of str to str
        Module name -> ``"ExceptionType: message"`` for each import that failed (empty if none).
    """
    failed: dict[str, str] = {}
    for name, file in locations.items():
        path = Path(file)
        if name in sys.modules or not path.is_file():
            continue
        try:
            if path.name == "__init__.py":
                import_package(path.parent)
            else:
                import_file(path)
        except Exception as e:  # any failure of the imported code, reported to the caller
            failed[name] = f"{type(e).__name__}: {e}"
    return failed
