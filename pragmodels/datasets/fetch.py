"""Locate a registered file: offline mirror or download cache, always hash-verified.

Layering: standard library, :mod:`pragmodels.errors`, :mod:`pragmodels.io.atomic` (the download's
write), :mod:`pragmodels.io.checksums` (the hash) and :mod:`pragmodels.datasets.registry`.

Environment variables: ``PRAGMODELS_DATA_DIR`` names an offline mirror (no network is used
when it is set); otherwise files are downloaded once into ``PRAGMODELS_CACHE_DIR`` (default
``~/.cache/pragmodels``) and verified before use, except those read from the mirror only (data
derived from upstream code, with no upstream file to download: ``DataFile.mirror_only``).

A relative ``PRAGMODELS_DATA_DIR`` (``make`` sets ``../shared/data``) is resolved against
something stable, not the process's working directory, so a notebook kernel started in
``notebooks/`` finds the same mirror as one started in the repository root
(:func:`data_dir`): against the pragmodels repository root, the first folder that holds a
``pyproject.toml`` naming project ``pragmodels``, looking up from the working directory and
then from the imported package (a source checkout or editable install); only where neither
is inside such a checkout (a wheel installed elsewhere) against the working directory.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from pragmodels.datasets.registry import DataFile, get
from pragmodels.errors import PragmodelsError
from pragmodels.io.atomic import atomic_write
from pragmodels.io.checksums import sha256_file

__all__ = ["DataDownloadError", "DataIntegrityError", "sha256_of", "verify", "locate", "data_dir",
           "repository_root"]


class DataIntegrityError(PragmodelsError, ValueError):
    """A data file is missing, or its sha256 is not the registered one."""


class DataDownloadError(PragmodelsError, OSError):
    """A registered file could not be downloaded (no network, or the source moved)."""


def _is_pragmodels_root(folder: Path) -> bool:
    """Whether ``folder`` holds a ``pyproject.toml`` whose ``[project]`` name is pragmodels."""
    import tomllib

    try:
        with open(folder / "pyproject.toml", "rb") as f:
            return tomllib.load(f).get("project", {}).get("name") == "pragmodels"
    except (OSError, tomllib.TOMLDecodeError):
        return False


def repository_root(start: str | os.PathLike | None = None) -> Path | None:
    """The pragmodels repository root: the first folder, from ``start`` (default: the working
    directory) upwards, that holds a ``pyproject.toml`` naming project ``pragmodels``; failing
    that, the one above the imported package (a source checkout or editable install). None
    when neither lies inside a checkout (e.g. a wheel installed into site-packages).

    Parameters
    ----------
    start : path-like, optional
        Where to start looking (default: the working directory).

    Returns
    -------
    pathlib.Path or None
    """
    here = Path(start if start is not None else os.getcwd()).absolute()
    package = Path(__file__).resolve().parent.parent  # pragmodels/datasets/fetch.py -> pragmodels/
    for base in (here, package):
        for folder in (base, *base.parents):
            if _is_pragmodels_root(folder):
                return folder
    return None


def data_dir() -> Path | None:
    """The offline mirror named by ``PRAGMODELS_DATA_DIR``, as an absolute path (None when the
    variable is unset or empty). A relative value is resolved against :func:`repository_root`,
    and against the working directory only when there is no checkout to anchor it.

    Parameters
    ----------
    None; reads the environment variable ``PRAGMODELS_DATA_DIR``.

    Returns
    -------
    pathlib.Path or None
    """
    value = os.environ.get("PRAGMODELS_DATA_DIR")
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = (repository_root() or Path.cwd()) / path
    return path.resolve()


#: The sha256 hex digest of a file's bytes: :func:`pragmodels.io.checksums.sha256_file` (this
#: package's public name for it).
sha256_of = sha256_file


def verify(path: Path, entry: DataFile) -> Path:
    """Check a file against its registered sha256.

    Parameters
    ----------
    path : pathlib.Path
    entry : DataFile
        The registry entry (:data:`pragmodels.datasets.REGISTRY`).

    Returns
    -------
    pathlib.Path
        ``path``, when it matches.

    Raises
    ------
    DataIntegrityError
        Naming the file, both hashes and the data set's URL.
    """
    actual = sha256_file(path)
    if actual != entry.sha256:
        source = f"derived from {entry.url}" if entry.mirror_only else entry.url
        raise DataIntegrityError(
            f"{path}: sha256 {actual} does not match the registered {entry.sha256} for data set "
            f"{entry.key!r} ({source}); the file is corrupted, truncated or a different version."
        )
    return path


def _download(entry: DataFile, dest: Path) -> None:
    def fetch(tmp: str) -> None:
        try:
            with urllib.request.urlopen(entry.url, timeout=60) as r, open(tmp, "wb") as f:
                f.write(r.read())
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            raise DataDownloadError(
                f"could not download data set {entry.key!r} from {entry.url} ({e}). Without network access, "
                f"set PRAGMODELS_DATA_DIR to an offline mirror that holds {entry.path}."
            ) from e

    try:  # written aside and verified before it is renamed into the cache (the umask's mode)
        atomic_write(dest, fetch, check=lambda tmp: verify(Path(tmp), entry))
    except DataDownloadError:
        raise
    except OSError as e:  # the cache folder cannot be made or written
        raise DataDownloadError(
            f"cannot write the download cache {dest.parent} for data set {entry.key!r} ({e.strerror or e}). "
            f"Set PRAGMODELS_CACHE_DIR to a writable folder, or PRAGMODELS_DATA_DIR to an offline mirror "
            f"that holds {entry.path}."
        ) from e


def locate(key: str, *, verify_hash: bool = True) -> Path:
    """Path of a verified copy of registered file ``key`` (mirror first, else download).

    Parameters
    ----------
    key : str
        A key of :data:`pragmodels.datasets.REGISTRY`.
    verify_hash : bool
        Check the file's sha256 (default).

    Returns
    -------
    pathlib.Path
        In the offline mirror (``PRAGMODELS_DATA_DIR``), else in the download cache
        (``PRAGMODELS_CACHE_DIR``, default ``~/.cache/pragmodels``).

    Raises
    ------
    DataIntegrityError
        The mirror lacks the file, or its hash does not match.
    DataDownloadError
        No mirror, no cached copy and no download (or an unwritable cache); no mirror for a file
        read from the mirror only (``mirror_only``: derived from upstream code, nothing to download).
    """
    entry = get(key)
    mirror = data_dir()
    if mirror is None and entry.mirror_only:
        raise DataDownloadError(
            f"data set {entry.key!r} ({entry.path}) is read from the offline mirror only: it was derived from "
            f"{entry.url}, and there is no upstream file to download. Set PRAGMODELS_DATA_DIR to the offline mirror "
            "that holds it."
        )
    if mirror is not None:
        path = mirror / entry.path
        if not path.is_file():
            value = os.environ["PRAGMODELS_DATA_DIR"]
            how = "" if Path(value).expanduser().is_absolute() else f", resolved to {mirror}"
            only = "; it is read from the offline mirror only" if entry.mirror_only else ""
            raise DataIntegrityError(
                f"{path}: not found in the offline mirror PRAGMODELS_DATA_DIR={value!r}{how} "
                f"(expected data set {entry.key!r} at {entry.path}{only})."
            )
        return verify(path, entry) if verify_hash else path
    cache = Path(os.environ.get("PRAGMODELS_CACHE_DIR", Path.home() / ".cache" / "pragmodels"))
    path = cache / entry.path
    if not path.is_file():
        _download(entry, path)
    return verify(path, entry) if verify_hash else path
