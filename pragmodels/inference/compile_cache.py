"""The cache of compiled programs that later fits of the same model and shapes reuse.

A program is keyed by the model's structure (:func:`pragmodels.model_key.structure_key`), its
static data values, the arrays' shapes and dtypes, and the sampler settings; the cache is an LRU
bounded by memory and by count (:func:`cache_info`, :func:`clear_cache`, :func:`set_cache_size`):
each program is charged the growth of the process's resident memory while it was compiled
(tens of MB for a small listener's NUTS program; 32 MB where that cannot be read). :func:`lookup` and
:func:`store` are what :mod:`~pragmodels.inference.nuts`, :mod:`~pragmodels.inference.predictive`,
:mod:`~pragmodels.evaluation.crossval` and :mod:`~pragmodels.inference.batched` use.
"""


from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pragmodels.model_key import structure_key

__all__ = ['split_data', 'is_static', 'data_signature', 'static_items', 'CompiledEntry', 'lookup', 'store', 'cache_info',
           'clear_cache', 'set_cache_size', 'bound_model', 'model_label']

_STATIC_TYPES = (bool, int, float, str)

# ----------------------------------------------------------------------------- data and cache


def is_static(value: Any) -> bool:
    """Whether a model keyword argument is static (bound into the model, part of the cache key) rather
    than a traced array: Python ``None``, ``bool``, ``int``, ``float`` and ``str`` (:func:`split_data`).

    Parameters
    ----------
    value : object
        A value of the model's data.

    Returns
    -------
    bool
    """
    return value is None or isinstance(value, _STATIC_TYPES)


def split_data(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, jax.Array]]:
    """Split model keyword arguments into static values and traced arrays.

    Python ``None``, ``bool``, ``int``, ``float`` and ``str`` values are static (bound into the
    model and part of the cache key); everything else is converted with :func:`jax.numpy.asarray`
    and traced.

    Shapes: ``data {name: [...]}`` -> ``arrays {name: [...]}`` (each array keeps its shape).

    Parameters
    ----------
    data : mapping of str to object
        The model's keyword arguments.

    Returns
    -------
    static : dict
    arrays : dict of jax.Array
        Each with the shape of its value in ``data``.

    Raises
    ------
    TypeError
        ``data`` is not a mapping, or a value is neither a Python scalar nor convertible to an array.
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"data must be a dict of model keyword arguments; got {type(data).__name__}.")
    static, arrays = {}, {}
    for name, value in data.items():
        if is_static(value):
            static[name] = value
            continue
        try:
            arr = value if isinstance(value, jax.Array) else jnp.asarray(value)
        except TypeError as e:
            raise TypeError(f"data[{name!r}] is neither a Python scalar nor an array ({type(value).__name__}): "
                            f"{e}") from None
        arrays[name] = arr
    return static, arrays


def data_signature(arrays: Mapping[str, Any]) -> tuple:
    """The part of a cache key that the traced arrays contribute: each name, shape and dtype.

    Shapes: ``arrays {name: [...]}`` -> ``((name, shape, dtype), ...)`` sorted by name.

    Parameters
    ----------
    arrays : mapping of str to array
        The traced arrays (the ``arrays`` of :func:`split_data`).

    Returns
    -------
    tuple
    """
    return tuple((k, tuple(np.shape(v)), str(jnp.result_type(v))) for k, v in sorted(arrays.items()))


def static_items(static: Mapping[str, Any]) -> tuple:
    """The part of a cache key that the static values contribute: each name, type and value.

    Parameters
    ----------
    static : mapping of str to scalar
        The static values (the ``static`` of :func:`split_data`).

    Returns
    -------
    tuple
        ``((name, type name, value), ...)`` sorted by name.
    """
    return tuple((k, type(v).__name__, v) for k, v in sorted(static.items()))


@dataclass
class CompiledEntry:
    """One compiled program: its kind (``"nuts"``, ``"predictive"``, ...), label, the compiled callable, the
    bound model it was traced from, its compile time in seconds and kind-specific ``info``."""

    kind: str
    label: str
    compiled: Any
    bound: Any
    compile_s: float
    info: dict = field(default_factory=dict)
    nbytes: int = 0


_CACHE: OrderedDict[Hashable, CompiledEntry] = OrderedDict()
_LOCK = threading.Lock()
_STATS = {"hits": 0, "misses": 0, "compile_s": 0.0}
_MAXSIZE = [32]
_MAX_BYTES = [512 * 2**20]
_UNKNOWN_BYTES = 32 * 2**20  # charged to a program where resident memory cannot be read
_MISSED_AT = threading.local()  # resident memory at each key's miss in this thread, until its store


def _resident_bytes() -> int | None:
    """The process's resident memory in bytes (Linux /proc, else psutil where installed), or None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.Process().memory_info().rss)


def _evict() -> None:
    """Drop least recently used entries beyond the count or the memory bound (the newest one stays)."""
    while len(_CACHE) > 1 and (len(_CACHE) > _MAXSIZE[0]
                               or sum(e.nbytes for e in _CACHE.values()) > _MAX_BYTES[0]):
        _CACHE.popitem(last=False)


def lookup(key: Hashable) -> CompiledEntry | None:
    """The compiled program stored under ``key`` (marked most recently used), or None; counts a hit or a miss.

    Parameters
    ----------
    key : hashable
        A cache key, e.g. ``("nuts", structure_key(model), static_items(static), data_signature(arrays), ...)``.

    Returns
    -------
    CompiledEntry or None
    """
    with _LOCK:
        entry = _CACHE.get(key)
        if entry is not None:
            _CACHE.move_to_end(key)
            _STATS["hits"] += 1
        else:
            _STATS["misses"] += 1
    if entry is None:
        missed = getattr(_MISSED_AT, "rss", None)
        if missed is None or len(missed) > 64:  # misses never stored (a failed compile) are forgotten
            missed = _MISSED_AT.rss = {}
        missed[key] = _resident_bytes()
    return entry


def store(key: Hashable, entry: CompiledEntry) -> None:
    """Keep ``entry`` under ``key``, dropping the least recently used entries beyond :func:`set_cache_size`.

    Unless ``entry.nbytes`` is set, the entry is charged the growth of resident memory since this
    thread's :func:`lookup` of ``key`` missed (at least 1 MB; 32 MB where memory cannot be read).

    Parameters
    ----------
    key : hashable
        The cache key (as for :func:`lookup`).
    entry : CompiledEntry
        The compiled program, its bound model, its compile time and a label for :func:`cache_info`.

    Returns
    -------
    None
    """
    if not entry.nbytes:
        before = getattr(_MISSED_AT, "rss", {}).pop(key, None)
        now = _resident_bytes()
        entry.nbytes = max(now - before, 2**20) if before is not None and now is not None else _UNKNOWN_BYTES
    with _LOCK:
        _CACHE[key] = entry
        _CACHE.move_to_end(key)
        _STATS["compile_s"] += entry.compile_s
        _evict()


def cache_info() -> dict[str, Any]:
    """What the cache of compiled programs holds and how it has been used.

    Returns
    -------
    dict
        ``size`` and ``maxsize`` (entries), ``memory_mb`` and ``max_mb`` (the memory charged to the
        entries, and its bound), ``hits``, ``misses`` and total ``compile_s`` so far (since the last
        :func:`clear_cache`), and ``entries``: a one-line description of each entry, least recently
        used first.
    """
    with _LOCK:
        return dict(size=len(_CACHE), maxsize=_MAXSIZE[0],
                    memory_mb=round(sum(e.nbytes for e in _CACHE.values()) / 2**20, 1),
                    max_mb=round(_MAX_BYTES[0] / 2**20, 1), hits=_STATS["hits"], misses=_STATS["misses"],
                    compile_s=round(_STATS["compile_s"], 3),
                    entries=[f"{e.label} ({e.nbytes / 2**20:.0f} MB)" for e in _CACHE.values()])


def clear_cache() -> None:
    """Drop every compiled program and reset the counters.

    The programs' memory is released once no result refers to them. Also forgets the models
    :func:`bound_model` handed out; the next fit of each model compiles again.

    Returns
    -------
    None
    """
    with _LOCK:
        _CACHE.clear()
        _STATS.update(hits=0, misses=0, compile_s=0.0)
        _BOUND.clear()


def set_cache_size(maxsize: int | None = None, *, max_mb: float | None = None) -> None:
    """Keep at most ``maxsize`` compiled programs (default 32) charged at most ``max_mb`` of memory in all
    (default 512); the least recently used are dropped first, the newest is always kept.

    The count bound also applies to the models :func:`bound_model` keeps. A bound left None is unchanged.

    Parameters
    ----------
    maxsize : int, optional
        At least 1; entries beyond it are dropped at once.
    max_mb : float, optional
        Megabytes, > 0: the sum of the entries' charges (:func:`store`) kept under it.

    Raises
    ------
    ValueError
        ``maxsize`` is not an integer >= 1, or ``max_mb`` not a number > 0.
    """
    if maxsize is not None and (isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1):
        raise ValueError(f"maxsize must be an integer >= 1; got {maxsize!r}.")
    if max_mb is not None and (isinstance(max_mb, bool) or not isinstance(max_mb, (int, float))
                               or not max_mb > 0 or max_mb == float("inf")):
        raise ValueError(f"max_mb must be a finite number of megabytes > 0; got {max_mb!r}.")
    with _LOCK:
        if maxsize is not None:
            _MAXSIZE[0] = maxsize
        if max_mb is not None:
            _MAX_BYTES[0] = int(max_mb * 2**20)
        _evict()


_BOUND: OrderedDict[Hashable, Any] = OrderedDict()


def bound_model(model: Callable[..., Any], static: Mapping[str, Any]) -> Callable[..., Any]:
    """``functools.partial(model, **static)``, the *same object* for equal models and static values.

    Models are equal when their :func:`structure_key` is; the most recently used (as many as
    :func:`set_cache_size` allows, default 32) are kept. Pass it to helpers that ``jit`` with
    the model as a static argument (e.g. :func:`pragmodels.inference.multistart.multistart_inits`,
    :class:`numpyro.infer.Predictive`) so that their compiled code is reused across fits too.

    Parameters
    ----------
    model : callable
        A NumPyro model.
    static : mapping of str to scalar
        The static keyword arguments (the ``static`` of :func:`split_data`).

    Returns
    -------
    functools.partial
    """
    key = (structure_key(model), static_items(static))
    with _LOCK:
        bound = _BOUND.get(key)
        if bound is None:
            bound = _BOUND[key] = functools.partial(model, **static)
        _BOUND.move_to_end(key)
        while len(_BOUND) > _MAXSIZE[0]:
            _BOUND.popitem(last=False)
    return bound


def model_label(model: object) -> str:
    """A short name of a model for :func:`cache_info` and progress bars: its ``name``, else its ``__qualname__``.

    Parameters
    ----------
    model : object
        A model function, a ``functools.partial`` of one, or any object with a ``name``.

    Returns
    -------
    str
    """
    name = getattr(model, "name", None)
    if name is None:
        m = model.func if isinstance(model, functools.partial) else model
        name = getattr(m, "name", None) or getattr(m, "__qualname__", None) or type(m).__name__
    return str(name)


