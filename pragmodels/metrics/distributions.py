"""Metrics comparing a model's distribution over a grid of states with raw human responses.

Layering: ``numpy`` and ``scipy.stats`` only (no JAX); evaluation, not inference.

The metrics of Qiu et al.'s Wavelength study (Sections 4.2 and 5.2, Appendix D.1), for a model
distribution ``p`` over states with values ``v_s`` (the 21 values 0, 5, ..., 100 of a dial) and
human responses ``h_1 .. h_n`` (raw integers on the 0..100 slider):

- :func:`distribution_mean`: ``E_p[v] = Σ_s p(s) v_s``;
- :func:`mean_absolute_error`: task performance, ``|E_p[v] - target|`` (the paper's "absolute
  difference between the model's prediction and the target"; upstream's ``expected_diff``);
- :func:`wasserstein_to_sample`: human-likeness, the 1-D Wasserstein distance
  ``W1 = ∫ |F_p(x) - F_h(x)| dx`` between ``p`` (mass ``p(s)`` at ``v_s``) and the empirical
  distribution of the raw responses (mass ``1/n`` at each ``h_i``); exact, equal to
  ``scipy.stats.wasserstein_distance(v, h, u_weights=p)``, in slider units;
- :func:`entropy` and :func:`sample_entropy`: ``H = -Σ_s p(s) log p(s)`` in nats; raw human
  responses are first binned to the grid by :func:`bin_to_grid` (nearest state value, ties
  towards the larger value), so that human and model entropies are over the same 21 bins;
- :func:`pearson_of_means`: Pearson's ``r`` between per-item model means and human means.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = [
    "GRID",
    "distribution_mean",
    "mean_absolute_error",
    "wasserstein_to_sample",
    "bin_to_grid",
    "entropy",
    "sample_entropy",
    "pearson_of_means",
]

#: the Wavelength state values 0, 5, ..., 100
GRID = np.arange(0, 101, 5, dtype=float)


def _probs(name: str, probs: npt.ArrayLike, n_state: int | None = None) -> np.ndarray:
    p = np.asarray(probs, float)
    if p.ndim == 0:
        raise ValueError(f"{name} must have shape [..., state]; got a scalar.")
    if n_state is not None and p.shape[-1] != n_state:
        raise ValueError(f"{name} has {p.shape[-1]} states but state_values has {n_state}.")
    bad = ~np.isfinite(p) | (p < 0)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        raise ValueError(f"{name}{list(i)} = {p[i].item()!r}; expected probabilities (finite, >= 0).")
    total = p.sum(-1)
    off = ~np.isclose(total, 1.0, atol=1e-4)
    if off.any():
        i = tuple(int(k) for k in np.argwhere(off)[0]) if total.ndim else ()
        raise ValueError(f"{name}{list(i) + [':']} sums to {np.asarray(total)[i]:.6g}; expected a distribution "
                         "over states (exponentiate log-probabilities first).")
    return p


def _grid(state_values: npt.ArrayLike | None) -> np.ndarray:
    v = GRID if state_values is None else np.asarray(state_values, float)
    if v.ndim != 1 or v.size == 0 or not np.all(np.isfinite(v)) or np.any(np.diff(v) <= 0):
        raise ValueError(f"state_values must be a strictly increasing [state] array; got {v!r}.")
    return v


def distribution_mean(probs: npt.ArrayLike, state_values: npt.ArrayLike | None = None) -> np.ndarray:
    """Mean state value of each distribution, ``E_p[v] = Σ_s p(s) v_s``.

    Shapes: ``probs [..., state]`` (normalised), ``state_values [state]`` (default
    :data:`GRID`) -> ``[...]``.
    """
    v = _grid(state_values)
    return _probs("probs", probs, v.size) @ v


def mean_absolute_error(probs: npt.ArrayLike, target: npt.ArrayLike,
                        state_values: npt.ArrayLike | None = None) -> np.ndarray:
    """Task performance: ``|E_p[v] - target|``, the absolute error of the distribution's mean.

    Shapes: ``probs [..., state]``, ``target [...]`` (slider units), ``state_values [state]``
    -> ``[...]`` (average it over items for the paper's figure).
    """
    return np.abs(distribution_mean(probs, state_values) - np.asarray(target, float))


def _samples(values: npt.ArrayLike | Sequence[npt.ArrayLike]) -> tuple[list[np.ndarray], bool]:
    """One sample ``[response]`` (single=True) or one per item: ``[item, response]`` or ragged."""
    try:
        arr = np.asarray(values, float)
    except (ValueError, TypeError):
        arr = None  # ragged: samples of different sizes
    if arr is not None and arr.ndim == 1:
        return [arr], True
    if arr is not None and arr.ndim == 2:
        return list(arr), False
    if arr is not None:
        raise ValueError(f"values must be [response], [item, response] or a sequence of samples; got shape {arr.shape}.")
    return [np.asarray(s, float).ravel() for s in values], False  # type: ignore[union-attr]


def wasserstein_to_sample(probs: npt.ArrayLike, values: npt.ArrayLike | Sequence[npt.ArrayLike],
                          state_values: npt.ArrayLike | None = None) -> np.ndarray:
    """1-D Wasserstein distance between model distributions and samples of raw responses.

    ``W1(p, h) = ∫ |F_p(x) - F_h(x)| dx``, ``F_p`` the CDF of mass ``p(s)`` at ``v_s`` and
    ``F_h`` the empirical CDF of the responses (mass ``1/n`` each). Computed exactly, without
    binning the responses, in the slider's units, by
    ``scipy.stats.wasserstein_distance(state_values, values, u_weights=probs)`` (not
    ``arviz_stats.wasserstein``, which takes no weights and subsamples both sides to one size:
    see docs/architecture.md).

    Parameters
    ----------
    probs : array_like
        ``[state]`` or ``[item, state]`` (normalised).
    values : array_like or sequence of array_like
        Raw responses: ``[response]`` for one distribution; for ``[item, state]``, an
        ``[item, response]`` array or a sequence of ``[response_i]`` arrays (samples of
        different sizes).
    state_values : array_like, optional
        ``[state]``, default :data:`GRID`.

    Returns
    -------
    numpy.ndarray
        ``[]`` or ``[item]``.

    Shapes: ``probs [state]`` and ``values [response]`` -> ``[]``; ``probs [item, state]`` and
    ``values [item, response]`` (or ``item`` arrays) -> ``[item]``.
    """
    v = _grid(state_values)
    p = _probs("probs", probs, v.size)
    if p.ndim not in (1, 2):
        raise ValueError(f"probs must have shape [state] or [item, state]; got {p.shape}.")
    samples, single = _samples(values)
    if single != (p.ndim == 1) or len(samples) != (1 if single else p.shape[0]):
        raise ValueError(f"values must hold one sample per distribution: [response] for probs [state], "
                         f"[item, response] or a sequence of {p.shape[0]} arrays for probs [item, state].")
    rows = p[None] if single else p
    out = np.empty(rows.shape[0])
    for i, h in enumerate(samples):
        if h.size == 0 or not np.all(np.isfinite(h)):
            raise ValueError(f"values[{i}] must be a non-empty sample of finite responses.")
        out[i] = stats.wasserstein_distance(v, h, u_weights=rows[i])
    return np.asarray(out[0]) if single else out


def bin_to_grid(values: npt.ArrayLike, state_values: npt.ArrayLike | None = None) -> np.ndarray:
    """Index of the nearest state value for each raw response; a tie goes to the larger value.

    On the default grid 0, 5, ..., 100: 0-2 -> 0, 3-7 -> 5, ..., 98-100 -> 100 (for integers no
    tie can occur; 2.5 -> 5). Values outside the grid's range go to its end states.

    Shapes: ``values [...]``, ``state_values [state]`` -> int64 ``[...]`` in ``0 .. state - 1``.
    """
    v = _grid(state_values)
    x = np.asarray(values, float)
    if not np.all(np.isfinite(x)):
        raise ValueError("bin_to_grid: values must be finite.")
    hi = np.clip(np.searchsorted(v, x, side="left"), 1, max(v.size - 1, 1))  # v[hi-1] < x <= v[hi]
    if v.size == 1:
        return np.zeros(x.shape, np.int64)
    lo = hi - 1
    take_hi = (x - v[lo]) >= (v[hi] - x)  # ties to the larger value
    return np.where(take_hi, hi, lo).astype(np.int64)


def entropy(probs: npt.ArrayLike) -> np.ndarray:
    """Shannon entropy in nats, ``H(p) = -Σ_s p(s) log p(s)`` (``0 log 0 = 0``).

    Shapes: ``probs [..., state]`` (normalised) -> ``[...]``.
    """
    p = _probs("probs", probs)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return 0.0 - terms.sum(-1)  # 0.0 - x: no -0.0 for a point mass


def sample_entropy(values: npt.ArrayLike | Sequence[npt.ArrayLike],
                   state_values: npt.ArrayLike | None = None) -> np.ndarray:
    """Entropy in nats of raw responses binned to the state grid (:func:`bin_to_grid`).

    Shapes: ``values [response]`` -> ``[]``; ``[item, response]`` (or a sequence of
    ``[response_i]`` arrays) -> ``[item]``; ``state_values [state]`` (default :data:`GRID`).
    """
    v = _grid(state_values)
    samples, single = _samples(values)
    out = []
    for i, h in enumerate(samples):
        if h.size == 0 or not np.all(np.isfinite(h)):
            raise ValueError(f"values[{i}] must be a non-empty sample of finite responses.")
        idx = bin_to_grid(h, v)
        out.append(entropy(np.bincount(idx, minlength=v.size) / idx.size))
    return np.asarray(out[0] if single else out)


def pearson_of_means(model_means: npt.ArrayLike, human_means: npt.ArrayLike) -> float:
    """Pearson correlation ``r`` between per-item model means and human means.

    ``NaN``, without a warning, where either side is the same on every item (a listener that ignores
    the clue, e.g. a fitted uniform one): ``r`` is not defined there, and that is an answer, not a fault.

    Shapes: ``model_means [item]``, ``human_means [item]`` -> ``[]`` (a float).
    """
    m, h = np.asarray(model_means, float), np.asarray(human_means, float)
    if m.shape != h.shape or m.ndim != 1 or m.size < 2:
        raise ValueError(f"model_means and human_means must be [item] arrays of equal length >= 2; got {m.shape} "
                         f"and {h.shape}.")
    if np.ptp(m) == 0 or np.ptp(h) == 0:
        return float("nan")
    return float(stats.pearsonr(m, h).statistic)
