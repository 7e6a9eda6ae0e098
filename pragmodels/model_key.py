"""A hashable key of a model's structure: two models that trace to the same program share it.

:func:`structure_key` is what the compile cache (:mod:`pragmodels.inference.compile_cache`) and
:func:`pragmodels.with_priors` key compiled programs by. It imports only the standard library,
NumPy and JAX.
"""


from __future__ import annotations

import functools
import types
from collections.abc import Hashable, Mapping
from typing import Any

import jax
import numpy as np

__all__ = ['structure_key']

#: arrays closed over by a model up to this many bytes are keyed by value, larger ones by identity
_SMALL_ARRAY_BYTES = 1 << 16

# ----------------------------------------------------------------------------- structure keys


class _Identity:
    """Key by object identity, holding a strong reference so that the id is never reused."""

    __slots__ = ("obj",)

    def __init__(self, obj: object):
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.obj is self.obj

    def __repr__(self) -> str:
        return f"<identity {type(self.obj).__name__} {id(self.obj):#x}>"


def _hashable(x: object) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _freeze(value: Any, seen: frozenset[int]) -> Hashable:
    """A hashable stand-in for ``value`` that is equal for values that behave the same."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value).__name__, value)  # 1, 1.0 and True differ (dtype promotion does)
    if isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
        return _key(value, seen)
    if isinstance(value, types.ModuleType):
        return value
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_freeze(v, seen) for v in value))
    if isinstance(value, Mapping):
        items = [(_freeze(k, seen), _freeze(v, seen)) for k, v in value.items()]
        return ("mapping", type(value).__name__, tuple(sorted(items, key=repr)))
    if isinstance(value, (np.ndarray, np.generic)) or (isinstance(value, jax.Array)
                                                       and not isinstance(value, jax.core.Tracer)):
        if np.size(value) * np.dtype(value.dtype).itemsize <= _SMALL_ARRAY_BYTES:
            arr = np.asarray(value)
            return ("array", arr.dtype.str, arr.shape, arr.tobytes())
        return _Identity(value)
    key = getattr(value, "__pragmodels_key__", None)
    if key is not None:
        return ("custom", type(value), key() if callable(key) else key)
    return (type(value), value) if _hashable(value) else _Identity(value)


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _key(model: Any, seen: frozenset[int]) -> Hashable:
    if id(model) in seen:  # a closure that refers to itself
        return ("recursive", getattr(model, "__qualname__", type(model).__name__))
    seen = seen | {id(model)}
    custom = getattr(model, "__pragmodels_key__", None)
    if custom is not None:
        return ("custom", custom() if callable(custom) else custom)
    if isinstance(model, functools.partial):
        try:
            key: Hashable = ("partial", _key(model.func, seen), _freeze(model.args, seen),
                   _freeze(dict(model.keywords), seen))
            hash(key)
            return key
        except TypeError:
            return _Identity(model)
    if isinstance(model, types.MethodType):
        return ("method", _key(model.__func__, seen), _freeze(model.__self__, seen))
    if isinstance(model, types.FunctionType):
        if model.__closure__ is None and "<locals>" not in model.__qualname__:
            return model  # a module-level function: itself (a redefinition is a new object)
        try:
            cells = tuple(_freeze(c.cell_contents, seen) if _cell_full(c) else ("empty",)
                          for c in (model.__closure__ or ()))
            # the globals the code names, so that a helper redefined in a notebook is noticed
            # (by identity unless hashable: a mutable global such as a counter must not change the key)
            glob = tuple(sorted(((n, _global_key(model.__globals__[n])) for n in _code_names(model.__code__)
                                 if n in model.__globals__), key=lambda t: t[0]))
            key = ("closure", model.__module__, model.__qualname__, model.__code__, cells,
                   _freeze(model.__defaults__, seen), _freeze(model.__kwdefaults__, seen), glob)
            hash(key)
            return key
        except (TypeError, ValueError):
            return _Identity(model)
    return model if _hashable(model) else _Identity(model)


def _global_key(value: object) -> Hashable:
    return (type(value), value) if _hashable(value) else _Identity(value)


def _cell_full(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - reading an empty cell raises ValueError
    except ValueError:
        return False
    return True


def structure_key(model: object) -> Hashable:
    """A hashable key that is equal for two models that trace to the same program.

    - an object with ``__pragmodels_key__`` (a value, or a method returning one): that;
    - a module-level function: the function itself (identity);
    - ``functools.partial``: ``(structure_key(func), args, keywords)``;
    - a closure (e.g. made by a factory such as
      :func:`pragmodels.rsa_models.speaker_model`): its code object, the contents of its cells,
      its default arguments, compared by value (small arrays by their bytes, functions
      recursively, :class:`~pragmodels.priors.Prior` by value), and the globals its code names
      (hashable ones by value, others by identity);
    - anything else, or a closure holding an unhashable value: the object itself (identity).

    Two factory calls with equal options therefore share compiled programs, while a model
    function redefined in a notebook (a new object) does not reuse the old one.

    Parameters
    ----------
    model : object
        A model (any callable; nothing is called except a ``__pragmodels_key__`` method).

    Returns
    -------
    Hashable
        The key, usable in a dict.
    """
    return _key(model, frozenset())


