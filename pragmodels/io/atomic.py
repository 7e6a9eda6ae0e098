"""Write aside, swap in, clean up what dead writers left: the one place for files and folders.

Layering: the standard library only; :mod:`pragmodels.io.netcdf`, :mod:`pragmodels.lm.score_file`,
:mod:`pragmodels.datasets.fetch` and :mod:`pragmodels.runs.folder` call it.

- Files (:func:`atomic_write`, :func:`write_aside`): written into temporary siblings
  ``.<name>.<pid>-<host>-<random>.pragmodels.tmp``, flushed to disk and renamed onto their targets
  (``os.replace``: atomic), so a target holds either its earlier file or the whole new one. A
  symlink is written through (its target is replaced, the link stays); a new file gets ``0o666``
  less the umask. Before writing, :func:`remove_stale_temps` removes the temporaries of killed
  writers in the folder.
- Folders (:func:`staging_folder`, :func:`swap_in_folder`, :func:`remove_stale_folders`): a run
  is written into ``.<name>.tmp-<pid>-<random>/`` and exchanged with the old folder in one
  ``renameat2(RENAME_EXCHANGE)`` on Linux (elsewhere two renames through ``.<name>.old-<pid>-<random>/``).
- Stale: a leftover whose writer (the pid in its name, on this host) is no longer running, or
  older than :data:`STALE_TMP_AGE_S` (files) / :data:`STALE_FOLDER_AGE_S` (folders) whatever its
  pid (pids are reused); one named before pids were part of the name once older than
  :data:`LEGACY_TMP_AGE_S` / :data:`LEGACY_FOLDER_AGE_S`.
"""


from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import re
import secrets
import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ['LEGACY_FOLDER_AGE_S', 'LEGACY_TMP_AGE_S', 'STALE_FOLDER_AGE_S', 'STALE_TMP_AGE_S', 'atomic_write',
           'pid_alive', 'remove_stale_folders', 'remove_stale_temps', 'staging_folder', 'swap_in_folder',
           'write_aside']


STALE_TMP_AGE_S = 24 * 3600  # a temp file this old is stale even if its writer's pid is alive (pid reuse)
LEGACY_TMP_AGE_S = 3600  # temp files named before pids were part of the name (no way to tell their writer)
STALE_FOLDER_AGE_S = 7 * 24 * 3600  # a staging folder this old is stale even if its pid is alive
LEGACY_FOLDER_AGE_S = 24 * 3600  # staging folders named before pids were part of the name
_TMP_SUFFIX = ".pragmodels.tmp"
_TMP_PATTERN = re.compile(r"^\..+\.(\d+)-([0-9a-f]{8})-[0-9a-f]{8}" + re.escape(_TMP_SUFFIX) + "$")


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (the one liveness check of run-folder locks and
    save temporaries).

    A zombie (a killed process its parent has not waited for yet; Linux, read from ``/proc``)
    is not alive: it runs no more code.

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
        pass
    return not _exited(pid)


def _exited(pid: int) -> bool:
    """Whether ``pid``, found by ``os.kill``, has exited (a zombie: state Z or X in ``/proc/<pid>/stat``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]  # after the command name, which may hold ')'
    except FileNotFoundError:  # gone since os.kill (Linux); or no /proc at all (elsewhere): alive
        return os.path.exists("/proc/self/stat")
    except (OSError, IndexError):
        return False
    return state in (b"Z", b"X")


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _stale(age: float, pid: int | None, *, max_age: float, legacy_age: float, this_host: bool = True,
           own_is_stale: bool = False) -> bool:
    """The one staleness rule of leftover files and folders (module docstring). ``own_is_stale``:
    whether this process's own leftovers count (a run folder's, under its lock: yes; a file's,
    perhaps being written by another thread: no)."""
    if pid is None:
        return age > legacy_age
    if age > max_age:
        return True
    if not this_host:
        return False
    if pid == os.getpid():
        return own_is_stale
    return not pid_alive(pid)


def remove_stale_temps(target: str | os.PathLike[str], now: float | None = None) -> list[Path]:
    """Remove the temporary files that killed writes left in ``target``'s folder (module docstring).

    Every stale ``*.pragmodels.tmp`` file in the folder goes, and ``.<name>.<random>.tmp`` files
    of ``target``'s own name (``tempfile.mkstemp`` names, written before pids were part of the
    name). Never raises: cleaning up is a courtesy, not part of the write.

    Parameters
    ----------
    target : str or path-like
        A file about to be written.
    now : float, optional
        The time to measure ages against (default ``time.time()``).

    Returns
    -------
    list of Path
        The files removed.
    """
    target = Path(target)
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
            if _stale(now - st.st_mtime, int(m.group(1)) if m else None, max_age=STALE_TMP_AGE_S,
                      legacy_age=LEGACY_TMP_AGE_S, this_host=m is None or m.group(2) == host):
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


@contextlib.contextmanager
def write_aside(*paths: str | os.PathLike[str]) -> Iterator[list[Path]]:
    """Temporary siblings of ``paths`` to write; renamed onto them, in order, when the block ends.

    A context manager: the caller writes each whole file at its temporary path; on a clean exit
    every file is flushed to disk and renamed onto its target, on an exception (or Ctrl-C) every
    temporary file is removed and the targets are left as they were. Each file gets ``0o666``
    less the umask (also when a writer recreated it); missing parent folders are created, and
    stale temporaries of killed writers in them are removed first.

    Parameters
    ----------
    *paths : str or path-like
        The files to write; a symlink is written through (its target is replaced).

    Yields
    ------
    list of Path
        The temporary paths, in the order of ``paths``.

    Raises
    ------
    IsADirectoryError
        When a path (or its target) is a directory.
    """
    targets = []
    for path in paths:
        target = Path(os.path.realpath(path))
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, f"cannot write a result to {path}: it is a directory", str(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(target)
        targets.append(target)
    tmps: list[tuple[Path, int]] = []
    try:
        for target in targets:
            tmp = target.parent / f".{target.name}.{os.getpid()}-{_host_tag()}-{secrets.token_hex(4)}{_TMP_SUFFIX}"
            # O_CREAT with 0o666 lets the umask decide the mode, as for any new file (mkstemp would give 0o600)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            tmps.append((tmp, os.fstat(fd).st_mode & 0o7777))
            os.close(fd)
        yield [tmp for tmp, _ in tmps]
        for tmp, mode in tmps:
            if os.stat(tmp).st_mode & 0o7777 != mode:  # a writer that recreated the file
                os.chmod(tmp, mode)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        for (tmp, _), target in zip(tmps, targets):
            os.replace(tmp, target)
    except BaseException:
        for tmp, _ in tmps:
            tmp.unlink(missing_ok=True)
        raise
    for folder in {t.parent for t in targets}:
        _fsync_dir(folder)


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], object],
                 check: Callable[[str], object] | None = None) -> Path:
    """Call ``write(tmp_path)`` (then ``check(tmp_path)``, if given) and move the result onto ``path``.

    One file through :func:`write_aside`: an interrupted or failed write leaves an earlier file at
    ``path`` untouched, a symlink at ``path`` is written through, the file gets ``0o666`` less the
    umask and is flushed to disk before the rename.

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
    with write_aside(path) as (tmp,):
        write(str(tmp))
        if check is not None:
            check(str(tmp))
    return Path(os.path.realpath(path))


# ------------------------------------------------------------------ folders
def staging_folder(final: str | os.PathLike[str]) -> Path:
    """Make the folder to write a new ``final`` into: ``.<name>.tmp-<pid>-<random>/`` beside it.

    Parameters
    ----------
    final : str or path-like
        The folder the staging folder will replace (:func:`swap_in_folder`); its parent must exist.

    Returns
    -------
    Path
        The new, empty staging folder.
    """
    final = Path(final)
    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    return tmp


def _folder_leftovers(final: Path) -> list[tuple[Path, str, int | None]]:
    """Transient siblings of ``final``: (path, kind 'tmp'/'old', pid or None for pre-pid names)."""
    pat = re.compile(re.escape(f".{final.name}.") + r"(tmp|old)(?:-(\d+)-[0-9a-f]+|-\d+)?$")
    out: list[tuple[Path, str, int | None]] = []
    if not final.parent.is_dir():
        return out
    for p in final.parent.iterdir():
        m = pat.match(p.name)
        if m and p.is_dir() and not p.is_symlink():
            out.append((p, m.group(1), int(m.group(2)) if m.group(2) else None))
    return out


def remove_stale_folders(final: str | os.PathLike[str], log: Callable[[str], object] | None = None) -> list[Path]:
    """Remove the staging folders that killed writers of ``final`` left (call it holding ``final``'s lock).

    Stale ``.<name>.tmp-*`` folders go (this process's own too: under the lock no write of it is
    under way), and every ``.<name>.old-*`` folder (a swap finished or killed). If ``final`` is
    missing but an ``.old`` folder exists (a swap killed between its two renames), the newest is
    put back first.

    Parameters
    ----------
    final : str or path-like
        The folder whose leftovers to remove.
    log : callable, optional
        ``log(message)`` for each folder restored or removed.

    Returns
    -------
    list of Path
        The folders removed.
    """
    final = Path(final)
    log = log or (lambda message: None)
    now = time.time()
    found = _folder_leftovers(final)
    olds = sorted((p for p, kind, _ in found if kind == "old"), key=lambda p: p.stat().st_mtime)
    if olds and not final.exists():
        olds[-1].rename(final)
        log(f"restored {final} from {olds[-1].name} (a swap was interrupted)")
        found = _folder_leftovers(final)
    removed = []
    for p, kind, pid in found:
        try:
            age = now - p.stat().st_mtime
        except FileNotFoundError:
            continue
        if kind == "old" or _stale(age, pid, max_age=STALE_FOLDER_AGE_S, legacy_age=LEGACY_FOLDER_AGE_S,
                                   own_is_stale=True):
            shutil.rmtree(p, ignore_errors=True)
            log(f"removed a leftover folder {p}")
            removed.append(p)
    return removed


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two directories (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


def swap_in_folder(staging: str | os.PathLike[str], final: str | os.PathLike[str]) -> None:
    """Put the finished ``staging`` folder in place of ``final`` and remove the previous one.

    With ``renameat2(RENAME_EXCHANGE)`` (Linux) the path ``final`` never goes missing; elsewhere
    ``final`` is renamed aside to ``.<name>.old-<pid>-<random>`` first (a kill between the two
    renames is undone by :func:`remove_stale_folders`).

    Parameters
    ----------
    staging : str or path-like
        The folder written (:func:`staging_folder`).
    final : str or path-like
        The folder to replace (need not exist).

    Raises
    ------
    NotADirectoryError
        ``final`` exists and is not a folder.
    """
    staging, final = Path(staging), Path(final)
    if not final.exists():
        os.rename(staging, final)
        return
    if not final.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, f"{final} exists and is not a folder; cannot replace it with a "
                                 "run folder.", str(final))
    if _exchange(staging, final):  # staging now holds the previous folder
        shutil.rmtree(staging, ignore_errors=True)
        return
    old = final.parent / f".{final.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
    os.rename(final, old)
    os.rename(staging, final)
    shutil.rmtree(old, ignore_errors=True)
