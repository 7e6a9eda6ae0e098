"""Process-level settings: CPU devices for parallel chains, JAX's persistent compilation cache, and
XLA's C++ log threshold.

Layering: imports only the standard library at module level (``jax`` lazily), so that
:func:`configure_host_devices` and :func:`quiet_compiler_logs` can run before JAX starts.

None of them runs on ``import pragmodels``: importing the package changes no global state.
The ``pragmodels`` command line calls all three; in a notebook or script call the first two
yourself, first::

    import pragmodels as pm
    pm.configure_host_devices()    # before any JAX computation (PRAGMODELS_HOST_DEVICES)
    pm.enable_compilation_cache()  # in PRAGMODELS_COMPILATION_CACHE, or pass a folder

The environment variables are described on the docs page *Getting started* ("Settings").
"""

from __future__ import annotations

import os
import sys

__all__ = ["configure_host_devices", "enable_compilation_cache", "quiet_compiler_logs"]

#: XLA's C++ log threshold (absl severities: 0 INFO, 1 WARNING, 2 ERROR, 3 FATAL), read once when JAX starts
CPP_LOG_LEVEL = "TF_CPP_MIN_LOG_LEVEL"


def quiet_compiler_logs() -> bool:
    """Keep XLA's C++ log lines below FATAL off stderr, unless the user chose a level: sets
    ``TF_CPP_MIN_LOG_LEVEL=3`` when it is unset; effective only before JAX is imported.

    XLA logs its slow-compilation alarm ("Very slow compile? If you want to file a bug, run with
    envvar XLA_FLAGS=--xla_dump_to=...") at ERROR severity, which reads as a failure to a user
    whose first run is only compiling. A failure that stops a run still arrives as a Python
    exception (and a C++ FATAL still prints); ``TF_CPP_MIN_LOG_LEVEL=0`` shows every line again.

    Returns
    -------
    bool
        Whether the level was set here (False when the user had set it).
    """
    if CPP_LOG_LEVEL in os.environ:
        return False
    os.environ[CPP_LOG_LEVEL] = "3"
    return True


def configure_host_devices(n: int | None = None) -> int:
    """Ask XLA for ``n`` host (CPU) devices; effective only before JAX's first computation.

    Appends ``--xla_force_host_platform_device_count=n`` to the ``XLA_FLAGS`` environment
    variable.

    Parameters
    ----------
    n : int, optional
        Number of CPU devices. ``None`` reads ``PRAGMODELS_HOST_DEVICES`` and defaults to the
        number of CPU cores; ``n <= 0`` leaves ``XLA_FLAGS`` untouched.

    Returns
    -------
    int
        The number requested, or 0 when it was left alone (``n <= 0``, ``XLA_FLAGS`` already
        names a device count, or JAX has already initialised its backends).
    """
    if n is None:
        n = int(os.environ.get("PRAGMODELS_HOST_DEVICES", os.cpu_count() or 1))
    flags = os.environ.get("XLA_FLAGS", "")
    if n <= 0 or "xla_force_host_platform_device_count" in flags:
        return 0
    jax_mod = sys.modules.get("jax")
    if jax_mod is not None:
        try:
            from jax._src import xla_bridge

            if xla_bridge.backends_are_initialized():
                return 0
        except Exception:  # pragma: no cover - private API moved
            return 0
    os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()
    return n


def enable_compilation_cache(path: str | os.PathLike | None = None) -> str | None:
    """Switch on JAX's persistent compilation cache in ``path``.

    Every compiled kernel is cached (no minimum compile time or size). The ``pragmodels``
    command switches it on by default in ``~/.cache/pragmodels/jax`` (and goes on without it,
    with a warning, where that folder cannot be written).

    Parameters
    ----------
    path : str or path-like, optional
        Cache directory (``~`` is expanded; created if missing). ``None`` (or ``""``) reads
        ``PRAGMODELS_COMPILATION_CACHE``; the value ``off`` (any case), or neither set, leaves
        the cache off.

    Returns
    -------
    str or None
        The directory used, or None when the cache was left off.

    Raises
    ------
    OSError
        Naming the folder when it cannot be created or written to (checked with a probe file,
        so that a read-only folder fails here rather than at the first compilation).
    """
    path = path or os.environ.get("PRAGMODELS_COMPILATION_CACHE")
    if not path or str(path).lower() == "off":
        return None
    import tempfile

    path = os.path.expanduser(str(path))
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        err = OSError(f"compilation cache folder {path} cannot be written to ({e.strerror or e})")
        err.errno = e.errno
        raise err from e
    import jax

    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return str(path)
