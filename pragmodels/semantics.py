"""Build and check ``log_semantics[utterance, state]`` arrays.

Layering: imports ``numpy`` and ``jax`` only. Functions whose names start with ``check_`` are
eager (they raise Python errors naming the offending entry) and must be called outside ``jit``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

__all__ = [
    "boolean_semantics",
    "graded_semantics",
    "threshold_semantics",
    "check_log_semantics",
    "bin_edges",
    "bin_index",
]


def _as_2d(name: str, x: npt.ArrayLike) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape [utterance, state]; got shape {arr.shape}.")
    return arr


def boolean_semantics(lexicon: npt.ArrayLike) -> jax.Array:
    """``0`` where an utterance is true of a state, ``-inf`` where false.

    Shapes: ``lexicon [utterance, state]`` of bools or 0/1 -> float32 ``[utterance, state]``.
    """
    arr = _as_2d("lexicon", lexicon)
    bad = ~np.isin(arr, (0, 1))
    if bad.any():
        u, s = np.argwhere(bad)[0]
        raise ValueError(
            f"lexicon[{u}, {s}] = {arr[u, s].item()!r}; a Boolean lexicon holds only 0/1 or True/False "
            "(use graded_semantics for truth values in [0, 1])."
        )
    return jnp.where(jnp.asarray(arr, bool), 0.0, -jnp.inf).astype(jnp.float32)


def graded_semantics(truth: npt.ArrayLike) -> jax.Array:
    """``log`` of graded truth values in [0, 1] (``-inf`` where a value is 0).

    Shapes: ``truth [utterance, state]`` in [0, 1] -> float32 ``[utterance, state]``.
    """
    arr = _as_2d("truth", truth).astype(float)
    bad = ~((arr >= 0) & (arr <= 1))
    if bad.any():
        u, s = np.argwhere(bad)[0]
        raise ValueError(f"truth[{u}, {s}] = {arr[u, s].item()!r}; graded truth values must lie in [0, 1].")
    with np.errstate(divide="ignore"):
        return jnp.asarray(np.log(arr), jnp.float32)


def threshold_semantics(state_values: npt.ArrayLike, thresholds: npt.ArrayLike) -> jax.Array:
    """Degree semantics for a scale: utterance ``u`` is true of ``s`` iff ``value[s] >= threshold[u]``.

    Shapes: ``state_values [state]``, ``thresholds [utterance]`` -> float32 ``[utterance, state]``.
    """
    v = np.asarray(state_values, float)
    t = np.asarray(thresholds, float)
    return boolean_semantics(v[None, :] >= t[:, None])


def check_log_semantics(log_semantics: npt.ArrayLike, name: str = "log_semantics") -> np.ndarray:
    """Raise a ``ValueError`` naming the first NaN or ``+inf`` entry; return it as a NumPy array.

    Shapes: ``log_semantics [..., utterance, state]`` -> the same shape.
    """
    arr = np.asarray(log_semantics)
    if arr.ndim < 2:
        raise ValueError(f"{name} must have shape [..., utterance, state]; got shape {arr.shape}.")
    bad = np.isnan(arr) | (arr == np.inf)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name}{list(idx)} = {arr[idx].item()!r}; log-semantics must be finite or -inf "
            "(-inf marks 'false'; NaN and +inf are not probabilities)."
        )
    return arr


def bin_edges(lo: float, hi: float, n_bins: int) -> np.ndarray:
    """``n_bins + 1`` equally spaced edges on ``[lo, hi]``, e.g. 21 states of a 0-100 slider.

    Shapes: -> float64 ``[n_bins + 1]``.
    """
    if not (hi > lo and n_bins >= 1):
        raise ValueError(f"need hi > lo and n_bins >= 1; got lo={lo}, hi={hi}, n_bins={n_bins}.")
    return np.linspace(lo, hi, n_bins + 1)


def bin_index(values: npt.ArrayLike, edges: npt.ArrayLike, name: str = "response") -> np.ndarray:
    """Map continuous responses to bin (state) indices; the top edge belongs to the last bin.

    Raises a ``ValueError`` naming the first value outside ``[edges[0], edges[-1]]`` or NaN.

    Shapes: ``values [...]``, ``edges [n_bins + 1]`` -> int32 ``[...]`` (values' shape) in
    ``0 .. n_bins - 1``.
    """
    v = np.asarray(values, float)
    e = np.asarray(edges, float)
    bad = ~((v >= e[0]) & (v <= e[-1]))
    if bad.any():
        i = int(np.argwhere(bad.ravel())[0][0])
        raise ValueError(
            f"{name}[{i}] = {v.ravel()[i].item()!r} lies outside the scale [{e[0]}, {e[-1]}]."
        )
    return np.clip(np.searchsorted(e, v, side="right") - 1, 0, len(e) - 2).astype(np.int32)
