"""Checksums: sha256 of a file (:func:`sha256_file`), of model data (:func:`data_hash`) and of
every variable of a saved result (:func:`tree_checksums`, :func:`verify_checksum`).

Layering: imports the standard library, ``numpy`` and :mod:`pragmodels.io.errors` (``xarray``
for types only), so that :mod:`pragmodels.datasets` and :mod:`pragmodels.lm` hash files with it.
"""


from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pragmodels.io.errors import ResultChecksumError

if TYPE_CHECKING:
    import xarray as xr

__all__ = ['CHECKSUM_ATTR', 'CHECKSUM_ITEMS_ATTR', 'data_hash', 'items_digest', 'sha256_file', 'tree_checksums', 'verify_checksum']

CHECKSUM_ATTR = "pragmodels_checksum"
CHECKSUM_ITEMS_ATTR = "pragmodels_checksum_items"

_REMEMBERED: dict[tuple[str, int, int], str] = {}


def sha256_file(path: str | os.PathLike[str], *, remember: bool = False) -> str:
    """The sha256 hex digest of a file's bytes (read in 1 MiB blocks).

    Parameters
    ----------
    path : str or path-like
        The file.
    remember : bool
        Remember the digest for this process, keyed by the resolved path, size and modification
        time (for model files of hundreds of MB hashed each time they are opened). Off by
        default: a file rewritten with the same size within one tick of the file system's clock
        would keep its old digest.

    Returns
    -------
    str
        64 hexadecimal characters.
    """
    p = Path(path)
    key = None
    if remember:
        st = p.stat()
        key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
        if key in _REMEMBERED:
            return _REMEMBERED[key]
    h = hashlib.sha256()
    with p.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    if key is not None:
        _REMEMBERED[key] = digest
    return digest


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


def items_digest(items: Mapping[str, str]) -> str:
    """The one digest of a result's per-item checksums (``"sha256:"`` + the sha256 of their sorted JSON).

    Parameters
    ----------
    items : mapping of str to str
        Item (``/group/variable``, ``/group#attrs``) -> sha256, as :func:`tree_checksums` gives.

    Returns
    -------
    str
    """
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
    if not isinstance(stored, dict) or items_digest(stored) != digest:
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


