"""Build and check ``log_semantics[utterance, state]`` arrays.

Layering: imports ``numpy``, ``jax`` and :mod:`pragmodels.validation` only. Functions whose names start with ``check_`` are
eager (they raise Python errors naming the offending entry) and must be called outside ``jit``.
:func:`lm_literal_semantics` is pure JAX (traceable, differentiable in its temperature).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from pragmodels.validation import check_numeric

__all__ = [
    "boolean_semantics",
    "graded_semantics",
    "threshold_semantics",
    "check_log_semantics",
    "bin_edges",
    "bin_index",
    "lm_literal_semantics",
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
    check_numeric("graded_semantics", "truth", truth)
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
    check_numeric("threshold_semantics", "state_values", state_values)
    check_numeric("threshold_semantics", "thresholds", thresholds)
    v = np.asarray(state_values, float)
    t = np.asarray(thresholds, float)
    return boolean_semantics(v[None, :] >= t[:, None])


def check_log_semantics(log_semantics: npt.ArrayLike, name: str = "log_semantics") -> np.ndarray:
    """Raise a ``ValueError`` naming the first NaN or ``+inf`` entry; return it as a NumPy array.

    Shapes: ``log_semantics [..., utterance, state]`` -> the same shape.
    """
    check_numeric("check_log_semantics", name, log_semantics)
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
    check_numeric("bin_index", name, values)
    check_numeric("bin_index", "edges", edges)
    v = np.asarray(values, float)
    e = np.asarray(edges, float)
    bad = ~((v >= e[0]) & (v <= e[-1]))
    if bad.any():
        i = int(np.argwhere(bad.ravel())[0][0])
        raise ValueError(
            f"{name}[{i}] = {v.ravel()[i].item()!r} lies outside the scale [{e[0]}, {e[-1]}]."
        )
    return np.clip(np.searchsorted(e, v, side="right") - 1, 0, len(e) - 2).astype(np.int32)


def lm_literal_semantics(log_lm: jax.typing.ArrayLike, beta: jax.typing.ArrayLike,
                         mask: jax.typing.ArrayLike | None = None) -> jax.Array:
    """Log-semantics from a language model's answer scores, with a semantic temperature ``beta``.

    ``log_semantics[u, s] = beta · log P_LM(s | u)``, where ``P_LM(s | u)`` is the LM's answer
    distribution over the states, ``log_lm`` normalised over its last (state) axis. Fed to
    :func:`pragmodels.agents.literal_listener` (which adds ``log P(s)`` and normalises) it gives
    the LM literal listener of Qiu et al.'s Wavelength study (Section 4.1, with a temperature)::

        L0(s | u) ∝ P_LM(s | u)^beta · P(s)

    ``beta = 1`` is the paper's ``L0 ∝ P_LM(s | u) P(s)``; ``beta < 1`` flattens an over-confident
    LM, ``beta > 1`` sharpens it, ``beta = 0`` leaves the prior. The per-row normaliser of
    ``P_LM`` does not change ``L0`` (it cancels when ``L0`` is normalised over states); it makes
    the values comparable across utterances. ``-inf`` scores (probability 0) stay ``-inf``, with
    zero gradient for ``beta``.

    Parameters
    ----------
    log_lm : array_like
        The LM's log-probabilities (or unnormalised log-scores) of answering each state given
        each utterance, ``[..., utterance, state]`` (any leading batch axes, e.g. ``item``).
    beta : array_like
        The semantic temperature (>= 0): a scalar, or an array over leading axes of ``log_lm``
        (e.g. ``beta [item]`` for one per item, ``[item, utterance]`` for one per row), to which
        trailing axes are appended.
    mask : array_like of bool, optional
        ``[..., utterance]``: False marks padded utterances, whose rows become ``-inf``
        (never chosen, no gradient; whatever ``log_lm`` holds there, NaN included).

    Returns
    -------
    jax.Array
        ``log_semantics [..., utterance, state]``.

    Shapes: ``log_lm [..., utterance, state]``, ``beta []`` (or ``[item]``, ``[item, utterance]``:
    leading axes), ``mask [..., utterance]`` -> ``[..., utterance, state]``.
    """
    check_numeric("lm_literal_semantics", "log_lm", log_lm)
    x = jnp.asarray(log_lm)
    if x.ndim < 2:
        raise ValueError(f"lm_literal_semantics: log_lm must have shape [..., utterance, state]; got shape {x.shape}.")
    if mask is not None:
        m = jnp.asarray(mask, bool)
        if m.shape != x.shape[:-1]:
            raise ValueError(f"lm_literal_semantics: mask must have shape [..., utterance] = {x.shape[:-1]} to "
                             f"match log_lm {x.shape}; got {m.shape}.")
        x = jnp.where(m[..., None], x, 0.0)  # padded rows: anything (NaN too) becomes 0 first
    arr = None if isinstance(x, jax.core.Tracer) else np.asarray(x)
    if arr is not None and (np.isnan(arr).any() or np.isposinf(arr).any()):
        idx = tuple(int(i) for i in np.argwhere(np.isnan(arr) | np.isposinf(arr))[0])
        raise ValueError(f"lm_literal_semantics: log_lm{list(idx)} = {arr[idx].item()!r}; expected finite "
                         "log-scores or -inf (pass mask= for padded utterances).")
    b = jnp.asarray(beta, x.dtype)
    b_arr = None if isinstance(b, jax.core.Tracer) else np.asarray(b)
    if b_arr is not None and not np.all(b_arr >= 0):
        raise ValueError(f"lm_literal_semantics: beta = {b_arr!r}; expected a temperature >= 0.")
    if b.ndim:
        if b.ndim >= x.ndim or b.shape != x.shape[:b.ndim]:
            raise ValueError(f"lm_literal_semantics: beta must be a scalar or have the shape of leading axes of "
                             f"log_lm {x.shape} (e.g. [item] = {x.shape[:1]}); got shape {b.shape}.")
        b = b.reshape(b.shape + (1,) * (x.ndim - b.ndim))
    m_row = jnp.max(x, axis=-1, keepdims=True)
    finite_row = m_row > -jnp.inf
    shift = jnp.where(finite_row, jax.lax.stop_gradient(m_row), 0.0)
    total = jnp.sum(jnp.exp(x - shift), axis=-1, keepdims=True)
    lse = jnp.log(jnp.where(finite_row, total, 1.0)) + shift
    ok = x > -jnp.inf
    log_p = jnp.where(ok, x - jnp.where(finite_row, lse, 0.0), 0.0)
    out = jnp.where(ok, b * log_p, -jnp.inf)
    if mask is not None:
        out = jnp.where(jnp.asarray(mask, bool)[..., None], out, -jnp.inf)
    return out
