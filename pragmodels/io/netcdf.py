"""Saving and loading fit results: netCDF posteriors, written atomically and checksummed.

Layering: imports ``xarray``, the standard library, :mod:`pragmodels.io.atomic` (the write),
:mod:`pragmodels.io.checksums` and :mod:`pragmodels.io.errors`; used by
:mod:`pragmodels.inference.fitting` and the CLI. No pickle anywhere.

:func:`save_netcdf` writes through :func:`~pragmodels.io.atomic.atomic_write` (a temporary
sibling, flushed and renamed onto the target, so the target holds either the earlier file or the
whole new one) and records a sha256 of every variable and of every group's attributes in the root
attributes (``pragmodels_checksum_items``, ``pragmodels_checksum``); the written file is read back
and checked before the rename. :func:`load_netcdf` checks them again and raises
:class:`ResultChecksumError` naming the items that differ; a file without them loads with a
:class:`ResultFileWarning`. In full: the docs page *Fitting and checking* ("Saving results").
"""


from __future__ import annotations

import errno
import json
import os
import warnings
from pathlib import Path

import xarray as xr

from pragmodels.io.atomic import atomic_write
from pragmodels.io.checksums import (
    CHECKSUM_ATTR,
    CHECKSUM_ITEMS_ATTR,
    items_digest,
    tree_checksums,
    verify_checksum,
)
from pragmodels.io.errors import (
    ResultChecksumError,
    ResultFileError,
    ResultFileWarning,
    ResultSaveError,
)

__all__ = ['save_netcdf', 'load_netcdf', 'ResultFileError', 'ResultChecksumError', 'ResultSaveError', 'ResultFileWarning']



def _with_checksum(tree: xr.DataTree) -> xr.DataTree:
    """A shallow copy of ``tree`` (arrays shared) whose root attributes record its checksums."""
    out = tree.copy(deep=False)
    items = tree_checksums(tree)
    out.attrs[CHECKSUM_ITEMS_ATTR] = json.dumps(items, sort_keys=True)
    out.attrs[CHECKSUM_ATTR] = items_digest(items)
    return out


def _check_written(tmp: str) -> None:
    with xr.open_datatree(tmp, engine="h5netcdf") as back:
        try:
            verify_checksum(back, tmp)
        except ResultChecksumError as e:
            raise ResultChecksumError(f"the file written does not read back as the result ({e}); this happens "
                                      "when an attribute makes xarray decode the values differently (e.g. "
                                      "'units' with 'since', 'scale_factor'): remove it.") from None


def save_netcdf(tree: xr.DataTree, path: str | os.PathLike[str]) -> Path:
    """Write a DataTree to netCDF-4 (h5netcdf) atomically, with a checksum.

    The written file is read back and verified before it replaces ``path``
    (:func:`atomic_write`). ``tree`` itself is not modified.

    Parameters
    ----------
    tree : xarray.DataTree
        The result, e.g. as :func:`pragmodels.fit` returns it.
    path : str or path-like
        The file to write (a symlink is written through).

    Returns
    -------
    Path
        The file written (for a symlink, its target).

    Raises
    ------
    ResultSaveError
        On any failure, with the tree on ``.tree`` and the cause chained; the file at ``path``,
        if any, is left as it was.
    """
    try:
        stamped = _with_checksum(tree)
        return atomic_write(path, lambda tmp: stamped.to_netcdf(tmp, engine="h5netcdf"), check=_check_written)
    except Exception as e:
        raise ResultSaveError(f"could not save the result to {path}: {type(e).__name__}: {e} (the file there, "
                              "if any, was left as it was)", path=path, tree=tree) from e


# ------------------------------------------------------------------ reading
def load_netcdf(path: str | os.PathLike[str], *, verify: bool = True) -> xr.DataTree:
    """Read a DataTree written by :func:`save_netcdf` fully into memory and verify its checksum.

    Every error names the path.

    Parameters
    ----------
    path : str or path-like
        The result file.
    verify : bool
        Check the recorded checksum (:func:`verify_checksum`). ``False`` skips the check (to
        salvage what a damaged file still holds). A file with no checksum loads with a
        :class:`ResultFileWarning`.

    Returns
    -------
    xarray.DataTree
        The whole tree, loaded (the file is closed).

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        No file at ``path``, or a directory there.
    PermissionError
        The file cannot be read.
    ResultFileError
        A file that is not readable netCDF (e.g. truncated by a full disk or an interrupted copy).
    ResultChecksumError
        Its contents differ from the checksum recorded at save time.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(errno.ENOENT, f"no result file at {p}", str(p))
    if p.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"{p} is a directory, not a result file", str(p))
    try:
        tree = xr.open_datatree(p, engine="h5netcdf")
    except PermissionError:
        raise
    except Exception as e:
        raise ResultFileError(f"{p} is not a readable netCDF result file (truncated or damaged?): "
                              f"{type(e).__name__}: {e}") from e
    try:
        loaded = tree.load()
    except Exception as e:
        raise ResultFileError(f"{p}: reading its data failed, the file is damaged or truncated: "
                              f"{type(e).__name__}: {e}") from e
    finally:
        tree.close()
    if verify and not verify_checksum(loaded, p):
        warnings.warn(f"{p} records no {CHECKSUM_ATTR!r} (saved before pragmodels wrote checksums, or by another "
                      "tool): loaded without verification. Save it again to add one.", ResultFileWarning,
                      stacklevel=2)
    return loaded
