"""Atomic writes: a temporary sibling, flushed and renamed onto the target, and the removal of
temporaries that killed writers left behind.
"""


from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import socket
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ['atomic_write', 'pid_alive', 'STALE_TMP_AGE_S', 'LEGACY_TMP_AGE_S']


STALE_TMP_AGE_S = 24 * 3600  # a temp file this old is stale even if its writer's pid is alive (pid reuse)
LEGACY_TMP_AGE_S = 3600  # temp files named before pids were part of the name (no way to tell their writer)
_TMP_SUFFIX = ".pragmodels.tmp"
_TMP_PATTERN = re.compile(r"^\..+\.(\d+)-([0-9a-f]{8})-[0-9a-f]{8}" + re.escape(_TMP_SUFFIX) + "$")


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (the one liveness check of run-folder locks and
    save temporaries).

    Parameters
    ----------
    pid : int
        A process id; 0 or negative is never alive.

    Returns
    -------
    bool
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


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
                stale = age > STALE_TMP_AGE_S or (tag == host and pid != os.getpid() and not pid_alive(pid))
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


