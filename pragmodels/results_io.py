"""Saving and loading fit results: netCDF for posteriors, atomic checksummed writes, data hashes.

Layering: imports ``numpy``, ``xarray`` and the standard library; used by
:mod:`pragmodels.inference` and the CLI. No pickle anywhere.

Writing (:func:`save_netcdf`, :func:`atomic_write`)
---------------------------------------------------
A result is written into a temporary sibling ``.<name>.<pid>-<host>-<random>.pragmodels.tmp``
in the target's folder, flushed to disk and renamed onto the target (``os.replace``: atomic),
so the target always holds either the earlier file or the whole new one. A path that is a
symlink is written through: the link's target (``os.path.realpath``) is replaced and the link
stays a link. The new file gets the usual mode of a new file (``0o666`` less the umask). A save
killed outright (SIGKILL, power loss) leaves its temporary file behind; the next save into the
same folder removes such leftovers: those whose writer (pid, on this host) is no longer running,
those older than :data:`STALE_TMP_AGE_S` whatever their pid, and ``.<name>.<random>.tmp`` files of
the same name written before pids were part of the name, once older than
:data:`LEGACY_TMP_AGE_S`.

Checksums
---------
:func:`save_netcdf` records in the root attributes a sha256 of every variable (data variables and
coordinates, of every group: name, dims, dtype, shape, values, attributes) and of every group's
attributes: ``pragmodels_checksum_items`` (JSON, item -> sha256; items are ``/group/variable``
and ``/group#attrs``) and ``pragmodels_checksum`` (``sha256:`` + the sha256 of that JSON). Before
the rename the written file is read back and checked against them, so a file that would not load
as written is never put in place. :func:`load_netcdf` checks them again and raises
:class:`ResultChecksumError` naming the file and the items that differ; a file without them
(written before checksums, or by another tool) loads with a :class:`ResultFileWarning`.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import socket
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pragmodels.errors import PragmodelsError
from pragmodels.runs import _pid_alive  # one liveness check for run-folder locks and save temp files

__all__ = [
    "data_hash", "atomic_write", "save_netcdf", "load_netcdf", "tree_checksums", "verify_checksum",
    "ResultFileError", "ResultChecksumError", "ResultSaveError", "ResultFileWarning",
    "CHECKSUM_ATTR", "CHECKSUM_ITEMS_ATTR", "STALE_TMP_AGE_S", "LEGACY_TMP_AGE_S",
]

CHECKSUM_ATTR = "pragmodels_checksum"
CHECKSUM_ITEMS_ATTR = "pragmodels_checksum_items"
STALE_TMP_AGE_S = 24 * 3600  # a temp file this old is stale even if its writer's pid is alive (pid reuse)
LEGACY_TMP_AGE_S = 3600  # temp files named before pids were part of the name (no way to tell their writer)
_TMP_SUFFIX = ".pragmodels.tmp"
_TMP_PATTERN = re.compile(r"^\..+\.(\d+)-([0-9a-f]{8})-[0-9a-f]{8}" + re.escape(_TMP_SUFFIX) + "$")


class ResultFileError(PragmodelsError, ValueError):
    """A result file cannot be read as a pragmodels result: truncated, damaged or not netCDF."""


class ResultChecksumError(ResultFileError):
    """A result file's contents do not match the checksum recorded when it was saved."""


class ResultSaveError(PragmodelsError, OSError):
    """A result could not be saved; the file at :attr:`path` (if any) was left as it was.

    The cause is chained (``__cause__``). :attr:`tree` holds the result that was being saved,
    so that finished samples are not lost with the file (``except ResultSaveError as e: e.tree``).
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 tree: xr.DataTree | None = None):
        super().__init__(message)
        self.path = None if path is None else Path(path)
        self.tree = tree

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ResultFileWarning(UserWarning):
    """A result file was loaded without checksum verification (it records no checksum)."""


def _frame(h: Any, payload: bytes | memoryview) -> None:
    """Feed ``payload`` to ``h`` after its length (8 bytes, big-endian): a prefix-free encoding."""
    h.update(len(payload).to_bytes(8, "big"))
    h.update(payload)


def data_hash(data: Mapping[str, Any]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of the values in ``data`` (sorted by name).

    Each key, each value's header (JSON: ``None``, or the dtype and shape) and each value's bytes
    are hashed with their length in front, so no two different mappings share an encoding
    (``{"a": None, "b": None}`` and ``{"aNoneb": None}`` hash differently). Values are taken as
    ``np.asarray(value)`` (Python scalars and strings included); big-endian arrays are hashed as
    little-endian, so equal values hash alike; object arrays are hashed as the JSON of their
    ``tolist()`` (``repr`` for what JSON cannot hold) rather than their pointers. The result is
    the same in every process and on every platform for the same values.

    Shapes: ``data {name: [...]}`` (any shapes) -> a 64-character hex digest.

    Parameters
    ----------
    data : mapping of str to array_like or None
        A model's data, as passed to :func:`pragmodels.fit` (recorded as ``data_sha256``).

    Returns
    -------
    str
        The sha256 hex digest.
    """
    h = hashlib.sha256(b"pragmodels.data_hash.v2\n")
    for key in sorted(data):
        value = data[key]
        _frame(h, key.encode("utf-8"))
        payload: bytes | memoryview
        if value is None:
            header: dict[str, Any] = {"kind": "none"}
            payload = b""
        else:
            arr = np.asarray(value)
            if arr.dtype.kind == "O":
                header = {"kind": "object", "shape": list(arr.shape)}
                payload = json.dumps(arr.tolist(), sort_keys=True, default=repr).encode()
            else:
                if arr.dtype.byteorder == ">":
                    arr = arr.astype(arr.dtype.newbyteorder("<"))
                arr = np.ascontiguousarray(arr)
                header = {"kind": "array", "dtype": str(arr.dtype), "descr": arr.dtype.str,
                          "shape": list(arr.shape)}
                payload = memoryview(arr.reshape(-1).view(np.uint8))
        _frame(h, json.dumps(header, sort_keys=True).encode())
        _frame(h, payload)
    return h.hexdigest()


# ------------------------------------------------------------------ checksums
def _canon_attr(value: Any) -> list[Any]:
    """An attribute value as netCDF gives it back: a flat list (a length-1 list reads back as a
    scalar, ``[]`` as an empty float array, bytes as str, ints as int64)."""
    if isinstance(value, (bytes, np.bytes_)):
        value = value.decode("utf-8", "replace")
    arr = np.atleast_1d(np.asarray(value))
    if arr.dtype.kind == "S":
        return [x.decode("utf-8", "replace") for x in arr.ravel().tolist()]
    if arr.dtype.kind in "UO":
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in arr.ravel().tolist()]
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    return arr.ravel().tolist()


def _attrs_json(attrs: Mapping[Any, Any], skip: tuple[str, ...] = ()) -> bytes:
    canon = {str(k): _canon_attr(v) for k, v in attrs.items() if k not in skip}
    return json.dumps(canon, sort_keys=True, default=str).encode()


def _variable_hash(var: xr.Variable) -> str:
    arr = np.asarray(var.values)
    if arr.dtype.kind in "USO":  # strings: their text, whatever the width or object dtype
        dtype = "str"
        items = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in arr.ravel().tolist()]
        payload: bytes | memoryview = json.dumps(items).encode()
    else:
        dtype = arr.dtype.name
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        payload = memoryview(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))  # any fixed-size dtype
    h = hashlib.sha256()
    h.update(json.dumps({"dims": list(map(str, var.dims)), "shape": list(arr.shape), "dtype": dtype},
                        sort_keys=True).encode())
    h.update(_attrs_json(var.attrs))
    h.update(payload)
    return h.hexdigest()


def tree_checksums(tree: xr.DataTree) -> dict[str, str]:
    """sha256 of every item of ``tree``, as :func:`save_netcdf` records them.

    Items are ``/group/variable`` (data variables and coordinates, each once, at the group that
    holds it: name, dims, dtype, shape, attributes and values) and ``/group#attrs`` (the group's
    attributes; the root's without the checksum attributes). Reads one variable at a time from
    a lazily opened tree.

    Parameters
    ----------
    tree : xarray.DataTree

    Returns
    -------
    dict of str to str
        Item -> sha256 hex digest.
    """
    items: dict[str, str] = {}
    for node in tree.subtree:
        group = node.path.rstrip("/")
        ds = node.to_dataset(inherit=False)
        for name in sorted(map(str, ds.variables)):
            items[f"{group}/{name}"] = _variable_hash(ds.variables[name])
        skip = (CHECKSUM_ATTR, CHECKSUM_ITEMS_ATTR) if node.is_root else ()
        items[f"{group or '/'}#attrs"] = hashlib.sha256(_attrs_json(node.attrs, skip)).hexdigest()
    return items


def _items_digest(items: Mapping[str, str]) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(dict(items), sort_keys=True).encode()).hexdigest()


def verify_checksum(tree: xr.DataTree, path: str | os.PathLike[str] | None = None) -> bool:
    """Check ``tree`` against the checksum recorded in its root attributes.

    Parameters
    ----------
    tree : xarray.DataTree
        A tree as loaded from a result file.
    path : str or path-like, optional
        The file it came from, named in the error (default "the result").

    Returns
    -------
    bool
        True when it matches, False when the tree records no checksum.

    Raises
    ------
    ResultChecksumError
        When the checksum record is damaged, or items changed, are missing or are not in it
        (the message names ``path`` and the items).
    """
    where = "the result" if path is None else str(path)
    digest, raw = tree.attrs.get(CHECKSUM_ATTR), tree.attrs.get(CHECKSUM_ITEMS_ATTR)
    if digest is None and raw is None:
        return False
    try:
        stored = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        stored = None
    if not isinstance(stored, dict) or _items_digest(stored) != digest:
        raise ResultChecksumError(f"{where}: its checksum record ({CHECKSUM_ATTR!r}, {CHECKSUM_ITEMS_ATTR!r} in "
                                  "the root attributes) is damaged; the file cannot be verified.")
    found = tree_checksums(tree)
    changed = sorted(k for k in stored if k in found and found[k] != stored[k])
    missing = sorted(set(stored) - set(found))
    extra = sorted(set(found) - set(stored))
    if changed or missing or extra:
        parts = []
        if changed:
            parts.append(f"changed: {changed}")
        if missing:
            parts.append(f"missing: {missing}")
        if extra:
            parts.append(f"not in the checksum: {extra}")
        raise ResultChecksumError(f"{where} does not match the checksum recorded when it was saved "
                                  f"({'; '.join(parts)}): the file is damaged or was modified; do not use it.")
    return True


# ------------------------------------------------------------------ writing
def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _clean_stale_temps(target: Path, now: float | None = None) -> list[Path]:
    """Remove temporary files of killed saves in ``target``'s folder (see the module docstring);
    returns the paths removed. Never raises: cleaning up is a courtesy, not part of the save."""
    now = time.time() if now is None else now
    legacy = re.compile(r"^\." + re.escape(target.name) + r"\.[A-Za-z0-9_]{8}\.tmp$")  # tempfile.mkstemp names
    host = _host_tag()
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        m = _TMP_PATTERN.match(entry.name)
        if not m and not legacy.match(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not entry.is_file(follow_symlinks=False):
                continue
            age = now - st.st_mtime
            if m:
                pid, tag = int(m.group(1)), m.group(2)
                stale = age > STALE_TMP_AGE_S or (tag == host and pid != os.getpid() and not _pid_alive(pid))
            else:
                stale = age > LEGACY_TMP_AGE_S
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], object],
                 check: Callable[[str], object] | None = None) -> Path:
    """Call ``write(tmp_path)`` (then ``check(tmp_path)``, if given) and move the result onto ``path``.

    The temporary file lives in the target's directory, so ``os.replace`` is atomic: an
    interrupted or failed write leaves an earlier file at ``path`` untouched. A symlink at
    ``path`` is written through (its target is replaced; the link stays). The file gets mode
    ``0o666`` less the umask, like any new file; it is flushed to disk before the rename.
    Leftovers of killed writes into the same folder are removed first.

    Parameters
    ----------
    path : str or path-like
        The file to write; missing parent folders are created.
    write : callable
        ``write(tmp_path)`` writes the whole file at ``tmp_path`` (a str); its return value is
        ignored.
    check : callable, optional
        ``check(tmp_path)`` is called on the written file before the rename and raises to stop it.

    Returns
    -------
    Path
        The file written (for a symlink, its target).

    Raises
    ------
    IsADirectoryError
        When ``path`` (or its target) is a directory.
    Exception
        Whatever ``write`` or ``check`` (or the file system) raises; the temporary file is removed
        and ``path`` is left as it was.
    """
    link = Path(path)
    target = Path(os.path.realpath(link))
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"cannot write a result to {link}: it is a directory", str(link))
    target.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale_temps(target)
    tmp = target.parent / f".{target.name}.{os.getpid()}-{_host_tag()}-{secrets.token_hex(4)}{_TMP_SUFFIX}"
    # O_CREAT with 0o666 lets the umask decide the mode, as for any new file (mkstemp would give 0o600)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        mode = os.fstat(fd).st_mode & 0o7777
        os.close(fd)
        write(str(tmp))
        if os.stat(tmp).st_mode & 0o7777 != mode:  # a writer that recreated the file
            os.chmod(tmp, mode)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        if check is not None:
            check(str(tmp))
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(target.parent)
    return target


def _with_checksum(tree: xr.DataTree) -> xr.DataTree:
    """A shallow copy of ``tree`` (arrays shared) whose root attributes record its checksums."""
    out = tree.copy(deep=False)
    items = tree_checksums(tree)
    out.attrs[CHECKSUM_ITEMS_ATTR] = json.dumps(items, sort_keys=True)
    out.attrs[CHECKSUM_ATTR] = _items_digest(items)
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
