"""Eager checks of agent and likelihood inputs: shapes always, values where they are concrete.

Layering: imports ``numpy`` only, and ``jax`` where a value may come from it (so that the config
schemas, which use :func:`check_one_of`, load without JAX). Inside ``jit``/``grad`` the values are tracers and
only shapes are checked; called with NumPy or JAX arrays (as :func:`pragmodels.fit` traces a
model once before sampling) the values are checked too. Every error names the function, the
argument, the first offending index and value, and what was expected. :func:`check_one_of` is the
one "must be one of" check of a setting (the library's and the studies').
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TypeVar, cast

import numpy as np

__all__ = ["concrete", "numeric", "check_numeric", "check_precision", "check_values", "check_shape", "check_int", "check_index", "bad_index",
           "bad_integer", "check_normalised", "check_increasing", "check_one_of"]


def concrete(x: object) -> np.ndarray | None:
    """``x`` as a NumPy array, or None when it is a tracer (inside ``jit``/``grad``/``vmap``) or None.

    An object array becomes the array of its elements (numbers stay numbers; anything else, e.g. a
    string or None, becomes its ``str``), so that checks can compare its entries and name them.

    Shapes: ``x [...]`` -> ``[...]`` (the same shape; ``np.asarray(x)``), or None.
    """
    jax = sys.modules.get("jax")  # a tracer exists only once JAX is imported
    if x is None or (jax is not None and isinstance(x, jax.core.Tracer)):
        return None
    arr = np.asarray(x)
    if arr.dtype.kind == "O":
        alt = np.asarray(arr.tolist()) if arr.ndim else arr
        arr = alt if alt.shape == arr.shape and alt.dtype.kind != "O" else arr.astype(str)
    return arr


def _is_float(dtype: np.dtype) -> bool:
    """A float dtype, bfloat16 (NumPy kind ``"V"``) included."""
    if dtype.kind != "V":
        return dtype.kind == "f"
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.floating))


def numeric(arr: np.ndarray) -> np.ndarray | None:
    """``arr`` if it holds numbers (bool, integer or float; an object array of numbers as one), else None.

    Shapes: ``arr [...]`` -> ``[...]`` or None (strings, dates, objects that are not numbers).
    """
    if arr.dtype.kind in "biu" or _is_float(arr.dtype):
        return arr
    if arr.dtype.kind == "O":
        alt = np.asarray(arr.tolist())
        if alt.shape == arr.shape and (alt.dtype.kind in "biu" or _is_float(alt.dtype)):
            return alt
    return None


def _first_value(name: str, arr: np.ndarray) -> str:
    """``"name[0, 0] = value"``, the first entry of ``arr`` (``"name = value"`` for a scalar)."""
    if arr.ndim == 0:
        return f"{name} = {arr.item()!r}"
    if arr.size == 0:
        return f"{name} is empty"
    return f"{name}{[0] * arr.ndim} = {arr[(0,) * arr.ndim].item()!r}"


def check_numeric(fn: str, name: str, x: object) -> None:
    """A concrete ``x`` must hold numbers (:func:`numeric`): else a ``ValueError`` naming ``fn``,
    ``name``, the dtype and the first entry (strings would otherwise fail deep inside NumPy or JAX
    with an error that names neither). Tracers pass.

    Shapes: ``x [...]``, any shape."""
    arr = concrete(x)
    if arr is not None and arr.dtype.kind != "c" and numeric(arr) is None:
        raise ValueError(f"{fn}: {name} has dtype {arr.dtype} ({_first_value(name, arr)}); expected numbers.")


def check_precision(fn: str, name: str, x: object) -> None:
    """Refuse a half-precision float ``x`` (float16, bfloat16); checked on tracers too (only the
    dtype is read, so also inside ``jit``).

    The agents and likelihoods compute in log space, where half precision silently loses true
    cells: at a large ``alpha`` (a deep recursion) a probability that float32 keeps rounds to 0
    (``-inf``). They compute in the dtype they are given, float32 or float64, and refuse half
    precision rather than cast it (the cast is the caller's choice).

    Shapes: ``x [...]``, any shape.

    Raises
    ------
    ValueError
        Naming ``fn``, ``name`` and the dtype.
    """
    dtype = getattr(x, "dtype", None)
    if dtype is not None and _is_float(np.dtype(dtype)) and np.dtype(dtype).itemsize < 4:
        raise ValueError(f"{fn}: {name} has dtype {np.dtype(dtype).name}; expected float32 or float64 (half "
                         "precision rounds true cells to probability 0 at large alpha); cast it with "
                         ".astype(jnp.float32).")


def check_values(fn: str, name: str, x: object, *, neg_inf: bool = False, pos_inf: bool = False) -> None:
    """Reject NaN (always) and infinities (unless allowed) in a concrete ``x``, values that are not
    numbers (e.g. strings), and half-precision floats (:func:`check_precision`, tracers too).

    Tracers and non-float (integer, bool) arrays pass the NaN and infinity checks.

    Parameters
    ----------
    fn, name : str
        The calling function and the argument, named in the error message.
    x : array_like
        The values to check; any shape.
    neg_inf, pos_inf : bool
        Allow ``-inf`` (e.g. log-probabilities of impossible events) / ``+inf``.

    Raises
    ------
    ValueError
        Naming ``fn``, ``name``, the first offending index and its value (or the dtype).
    """
    check_precision(fn, name, x)
    check_numeric(fn, name, x)
    arr = concrete(x)
    if arr is None:
        return
    arr = arr if arr.dtype.kind == "c" else numeric(arr)
    if arr is None or not (arr.dtype.kind == "c" or _is_float(arr.dtype)):
        return
    bad = np.isnan(arr)
    if not pos_inf:
        bad |= np.isposinf(arr)
    if not neg_inf:
        bad |= np.isneginf(arr)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0]) if arr.ndim else ()
        where = f"{name}{list(i)}" if arr.ndim else name
        allowed = "finite values" + (" or -inf (impossible)" if neg_inf else "")
        raise ValueError(f"{fn}: {where} = {arr[i].item()!r}; expected {allowed}.")


def check_shape(fn: str, name: str, x: object, expected: Sequence[int | None], axes: str) -> None:
    """``x`` must have exactly the shape ``expected`` (``None``: any size), named by ``axes``.

    Checked on tracers too (only the shape is read).

    Parameters
    ----------
    fn, name : str
        The calling function and the argument, named in the error message.
    x : array_like
        Its ``.shape`` (or that of ``np.asarray(x)``) is compared.
    expected : sequence of int or None
        One entry per axis: the required size, or ``None`` for any size.
    axes : str
        The axes as the message shows them, e.g. ``"[utterance, state]"``.

    Raises
    ------
    ValueError
        When the number of axes or a given size differs.
    """
    shape = tuple(x.shape) if hasattr(x, "shape") else np.asarray(x).shape
    ok = len(shape) == len(expected) and all(e is None or e == s for e, s in zip(expected, shape))
    if not ok:
        want = "()" if not expected else "(" + ", ".join("?" if e is None else str(e) for e in expected) + \
            ("," if len(expected) == 1 else "") + ")"
        raise ValueError(f"{fn}: {name} must have shape {axes} = {want}; got {shape}.")


def check_int(fn: str, name: str, x: object, minimum: int) -> None:
    """``x`` must be a Python (or NumPy) integer >= ``minimum``, not a bool.

    Parameters
    ----------
    fn, name : str
        The calling function and the argument, named in the error message.
    x : object
        The value to check (a scalar, not an array).
    minimum : int
        The smallest allowed value.

    Raises
    ------
    ValueError
        When ``x`` is a bool, not an integer, or below ``minimum``.
    """
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < minimum:
        raise ValueError(f"{fn}: {name} must be an int >= {minimum}; got {x!r}.")


def bad_integer(arr: np.ndarray, low: int, high: int | None = None) -> np.ndarray:
    """Mask of the entries of ``arr`` that are not integers in ``low .. high`` (``high`` None: no upper
    bound). Every entry of an array that does not hold numbers (strings, dates) is bad, so that the
    caller's message names its first entry rather than numpy failing to compare it.

    Shapes: ``arr [...]`` -> bool ``[...]``.
    """
    num = numeric(np.asarray(arr))
    if num is None:
        return np.ones(np.shape(arr), bool)
    f = num.astype(np.float64)
    ok = (f >= low) & (f == np.round(f))
    if high is not None:
        ok &= f <= high
    return ~ok


def bad_index(arr: np.ndarray, size: int) -> np.ndarray:
    """Mask of the entries of ``arr`` that are not integers in ``0 .. size - 1`` (:func:`bad_integer`).

    Shapes: ``arr [...]`` -> bool ``[...]``.
    """
    return bad_integer(arr, 0, size - 1)


def check_index(fn: str, name: str, x: object, size: int) -> None:
    """A concrete ``x`` must hold integers in ``0 .. size - 1`` (e.g. item or utterance indices).

    Tracers pass unchecked. Integer-valued floats are accepted.

    Parameters
    ----------
    fn, name : str
        The calling function and the argument, named in the error message.
    x : array_like
        The indices; any shape.
    size : int
        The length of the axis they index.

    Raises
    ------
    ValueError
        Naming the first offending index and value (negative, ``>= size``, non-integer or NaN).
    """
    arr = concrete(x)
    if arr is None:
        return
    bad = bad_index(arr, size)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0]) if arr.ndim else ()
        raise ValueError(f"{fn}: {name}{list(i) if arr.ndim else ''} = {arr[i].item()!r}; expected an integer "
                         f"{name} index in 0..{size - 1}.")


def check_normalised(fn: str, name: str, x: object, what: str, axis: int = -1) -> None:
    """A concrete ``x`` of log-probabilities must sum to 1 (within 1e-3) along ``axis``, or be all
    ``-inf`` there (an undefined row). Tracers pass unchecked.

    Parameters
    ----------
    fn, name : str
        The caller (e.g. ``"site 'choice'"``) and the argument, named in the error message.
    x : array_like
        Log-probabilities ``[..., option, ...]``.
    what : str
        What the ``axis`` runs over, e.g. ``"option"`` (the message says "over options").
    axis : int
        The axis that must be normalised.

    Raises
    ------
    ValueError
        Naming the first slice that does not sum to 1 and its sum.
    """
    arr = concrete(x)
    if arr is None or arr.ndim == 0:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.exp(arr.astype(np.float64)).sum(axis)
    bad = ~(np.isclose(total, 1.0, atol=1e-3) | (total == 0))
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        where: list[int | str] = list(i)
        if axis % arr.ndim != arr.ndim - 1:
            where.insert(axis % arr.ndim, ":")
        raise ValueError(
            f"{fn}: {name}{where} sums to {total[i]:.6g} over {what}s; pass "
            "normalised log-probabilities (e.g. an agent's output, or apply log_normalize)."
        )


def check_increasing(fn: str, name: str, x: object, what: str = "cutpoints") -> None:
    """A concrete ``x`` must be strictly increasing along its last axis (e.g. ordinal cutpoints).

    Tracers pass unchecked; check the values (:func:`check_values`) first.

    Shapes: ``x [..., k]``.

    Raises
    ------
    ValueError
        Naming the first entry that is not above the one before it, and both values.
    """
    arr = concrete(x)
    if arr is None or arr.ndim == 0:
        return
    bad = ~(np.diff(arr.astype(np.float64), axis=-1) > 0)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        hi, lo = i[:-1] + (i[-1] + 1,), i
        raise ValueError(f"{fn}: {name}{list(hi)} = {arr[hi].item()!r} is not above {name}{list(lo)} = "
                         f"{arr[lo].item()!r}; expected strictly increasing {what} (along the last axis).")


T = TypeVar("T")


def check_one_of(name: str, value: object, choices: Sequence[T]) -> T:
    """``value`` if it is one of ``choices``, else a ``ValueError`` naming the setting, the value and
    the choices: ``"chain_method must be one of ('parallel', ...); got 'paralel'."``

    Parameters
    ----------
    name : str
        The setting, as the caller's signature or config names it.
    value : object
        The value given.
    choices : sequence
        The allowed values (shown as they print: a tuple or a list).

    Returns
    -------
    object
        ``value``, now known to be one of ``choices``.
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}; got {value!r}.")
    return cast(T, value)

