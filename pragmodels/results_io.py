"""Saving and loading fit results: netCDF for posteriors, atomic writes, data hashes.

Layering: imports ``numpy``, ``xarray`` and the standard library; used by
:mod:`pragmodels.inference` and the CLI. No pickle anywhere.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["data_hash", "atomic_write", "save_netcdf", "load_netcdf"]


def data_hash(data: Mapping[str, Any]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of the arrays in ``data`` (sorted by name)."""
    h = hashlib.sha256()
    for key in sorted(data):
        value = data[key]
        h.update(key.encode())
        if value is None:
            h.update(b"None")
            continue
        arr = np.ascontiguousarray(np.asarray(value))
        h.update(str(arr.dtype).encode() + str(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], object]) -> Path:
    """Call ``write(tmp_path)`` and move the result onto ``path`` only if it succeeded.

    The temporary file lives in the target's directory, so ``os.replace`` is atomic: an
    interrupted or failed write leaves an earlier file at ``path`` untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def save_netcdf(tree: xr.DataTree, path: str | os.PathLike[str]) -> Path:
    """Write a DataTree to netCDF-4 (h5netcdf) atomically."""
    return atomic_write(path, lambda tmp: tree.to_netcdf(tmp, engine="h5netcdf"))


def load_netcdf(path: str | os.PathLike[str]) -> xr.DataTree:
    """Read a DataTree written by :func:`save_netcdf` fully into memory."""
    tree = xr.open_datatree(path, engine="h5netcdf")
    loaded = tree.load()
    tree.close()
    return loaded
