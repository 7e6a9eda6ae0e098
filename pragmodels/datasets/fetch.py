"""Locate a registered file: offline mirror or download cache, always hash-verified.

Layering: standard library and :mod:`pragmodels.datasets.registry`.

Environment variables: ``PRAGMODELS_DATA_DIR`` names an offline mirror (no network is used
when it is set); otherwise files are downloaded once into ``PRAGMODELS_CACHE_DIR`` (default
``~/.cache/pragmodels``) and verified before use.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from pragmodels.datasets.registry import DataFile, get

__all__ = ["DataDownloadError", "DataIntegrityError", "sha256_of", "verify", "locate"]


class DataIntegrityError(ValueError):
    """A data file is missing, or its sha256 is not the registered one."""


class DataDownloadError(OSError):
    """A registered file could not be downloaded (no network, or the source moved)."""


def sha256_of(path: str | os.PathLike) -> str:
    """The sha256 hex digest of a file's bytes (read in 1 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify(path: Path, entry: DataFile) -> Path:
    actual = sha256_of(path)
    if actual != entry.sha256:
        raise DataIntegrityError(
            f"{path}: sha256 {actual} does not match the registered {entry.sha256} for data set "
            f"{entry.key!r} ({entry.url}); the file is corrupted, truncated or a different version."
        )
    return path


def _download(entry: DataFile, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    os.close(fd)
    try:
        try:
            with urllib.request.urlopen(entry.url, timeout=60) as r, open(tmp, "wb") as f:
                f.write(r.read())
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            raise DataDownloadError(
                f"could not download data set {entry.key!r} from {entry.url} ({e}). Without network access, "
                f"set PRAGMODELS_DATA_DIR to an offline mirror that holds {entry.path}."
            ) from e
        verify(Path(tmp), entry)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def locate(key: str, *, verify_hash: bool = True) -> Path:
    """Path of a verified copy of registered file ``key`` (mirror first, else download)."""
    entry = get(key)
    mirror = os.environ.get("PRAGMODELS_DATA_DIR")
    if mirror:
        path = Path(mirror).resolve() / entry.path
        if not path.is_file():
            raise DataIntegrityError(
                f"{path}: not found in the offline mirror PRAGMODELS_DATA_DIR={mirror!r} "
                f"(expected data set {entry.key!r} at {entry.path})."
            )
        return verify(path, entry) if verify_hash else path
    cache = Path(os.environ.get("PRAGMODELS_CACHE_DIR", Path.home() / ".cache" / "pragmodels"))
    path = cache / entry.path
    if not path.is_file():
        _download(entry, path)
    return verify(path, entry) if verify_hash else path
