"""The cache of compiled programs that later fits of the same model and shapes reuse.

A program is keyed by the model's structure (:func:`pragmodels.model_key.structure_key`), its
static data values, the arrays' shapes and dtypes, and the sampler settings; the cache is a small
LRU (:func:`cache_info`, :func:`clear_cache`, :func:`set_cache_size`). :func:`lookup` and
:func:`store` are what :mod:`~pragmodels.inference.nuts`, :mod:`~pragmodels.inference.predictive`,
:mod:`~pragmodels.evaluation.crossval` and :mod:`~pragmodels.inference.batched` use.
"""


from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pragmodels.model_key import structure_key

__all__ = ['split_data', 'data_signature', 'static_items', 'CompiledEntry', 'lookup', 'store', 'cache_info',
           'clear_cache', 'set_cache_size', 'bound_model', 'model_label']

_STATIC_TYPES = (bool, int, float, str)

# ----------------------------------------------------------------------------- data and cache


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
        if value is None or isinstance(value, _STATIC_TYPES):
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


_CACHE: OrderedDict[Hashable, CompiledEntry] = OrderedDict()
_LOCK = threading.Lock()
_STATS = {"hits": 0, "misses": 0, "compile_s": 0.0}
_MAXSIZE = [32]


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
        return entry


def store(key: Hashable, entry: CompiledEntry) -> None:
    """Keep ``entry`` under ``key``, dropping the least recently used entries beyond :func:`set_cache_size`.

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
    with _LOCK:
        _CACHE[key] = entry
        _CACHE.move_to_end(key)
        _STATS["compile_s"] += entry.compile_s
        while len(_CACHE) > _MAXSIZE[0]:
            _CACHE.popitem(last=False)


def cache_info() -> dict[str, Any]:
    """What the cache of compiled programs holds and how it has been used.

    Returns
    -------
    dict
        ``size`` and ``maxsize`` (entries), ``hits``, ``misses`` and total ``compile_s`` so far
        (since the last :func:`clear_cache`), and ``entries``: a one-line description of each
        entry, least recently used first.
    """
    with _LOCK:
        return dict(size=len(_CACHE), maxsize=_MAXSIZE[0], hits=_STATS["hits"], misses=_STATS["misses"],
                    compile_s=round(_STATS["compile_s"], 3), entries=[e.label for e in _CACHE.values()])


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


def set_cache_size(maxsize: int) -> None:
    """Keep at most ``maxsize`` compiled programs (least recently used dropped first; default 32).

    The same bound applies to the models :func:`bound_model` keeps.

    Parameters
    ----------
    maxsize : int
        At least 1; entries beyond it are dropped at once.

    Raises
    ------
    ValueError
        ``maxsize`` is not an integer >= 1.
    """
    if not isinstance(maxsize, int) or maxsize < 1:
        raise ValueError(f"maxsize must be an integer >= 1; got {maxsize!r}.")
    with _LOCK:
        _MAXSIZE[0] = maxsize
        while len(_CACHE) > maxsize:
            _CACHE.popitem(last=False)


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


