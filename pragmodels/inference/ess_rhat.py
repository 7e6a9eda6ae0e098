"""Rank-normalised split r_hat and bulk and tail ESS (Vehtari et al. 2021), every element of an array at once.

Layering: imports ``numpy`` and ``scipy`` only; :mod:`pragmodels.inference.diagnostics` uses it.

The definitions are ArviZ's (``arviz_stats``: split chains, ranks back-transformed with Blom's offset 3/8,
autocovariances by FFT, Geyer's initial positive and monotone sequences), and the tests hold these functions
to ``arviz_stats`` within 1e-9. What differs is the cost: ``arviz_stats`` loops over the elements of a
variable in Python (a ``scipy.stats.rankdata`` call, an FFT and a Geyer loop per element and diagnostic),
about 3 ms per element for r_hat and both ESS; here the ranks, FFTs and sequences of all elements are array
operations. A fit of 400 posterior elements spent 1.2 s in ``diagnose``, and the social-meaning study's ESR
calibration (100 such fits) 124 of its 197 s.

The tail ESS is the least of the ESS of the indicators ``x <= q(0.05)`` and ``x <= q(0.95)``, as Vehtari et
al. (2021) define it; ``arviz_stats.ess(method="tail")`` without ``prob`` uses its ``stats.ci_prob``
(0.89: the 11% and 89% quantiles), a less demanding standard.

Shapes: every function takes ``x [..., chain, draw]`` and returns ``[...]``.
"""

from __future__ import annotations

import numpy as np
from scipy import fft, special, stats

__all__ = ["rank_rhat", "ess_bulk", "ess_tail", "rhat_ess", "TAIL_PROBS"]

#: the quantiles of the tail ESS (Vehtari et al. 2021)
TAIL_PROBS = (0.05, 0.95)
#: Blom's offset of the rank back-transformation
_BLOM = 3.0 / 8.0


def _elements(x: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """``x [..., chain, draw]`` as float ``[element, chain, draw]``, and the leading shape."""
    x = np.asarray(x, dtype=float)
    if x.ndim < 2:
        raise ValueError(f"expected an array [..., chain, draw]; got shape {x.shape}.")
    return x.reshape((int(np.prod(x.shape[:-2], dtype=int)),) + x.shape[-2:]), x.shape[:-2]


def _split(x: np.ndarray) -> np.ndarray:
    """Each chain's first and last halves as chains (the middle draw of an odd count left out)."""
    half = x.shape[-1] // 2
    return np.concatenate([x[..., :half], x[..., x.shape[-1] - half:]], axis=-2)


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Ranks over each element's chains and draws together (ties averaged), as normal quantiles."""
    flat = x.reshape(x.shape[0], -1)
    ranks = stats.rankdata(flat, method="average", axis=-1)
    return special.ndtri((ranks - _BLOM) / (flat.shape[1] - 2 * _BLOM + 1)).reshape(x.shape)


def _rhat(x: np.ndarray) -> np.ndarray:
    n = x.shape[-1]
    between = n * np.var(x.mean(-1), axis=-1, ddof=1)
    within = np.var(x, axis=-1, ddof=1).mean(-1)
    return np.sqrt((between / within + n - 1) / n)


def _ess(x: np.ndarray) -> np.ndarray:
    """ESS of each element of ``x [element, chain, draw]`` (Geyer's initial monotone sequence)."""
    n_elem, m, n = x.shape
    total = m * n
    out = np.full(n_elem, float(total))
    varies = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) >= np.finfo(float).resolution
    if not varies.any():
        return out
    x = x[varies]
    centred = x - x.mean(-1, keepdims=True)
    size = fft.next_fast_len(2 * n)
    spec = fft.rfft(centred, n=size, axis=-1)
    acov = fft.irfft(spec * np.conjugate(spec), n=size, axis=-1)[..., :n] / n  # [element, chain, lag]
    mean_var = acov[:, :, 0].mean(-1) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus = var_plus + np.var(x.mean(-1), axis=-1, ddof=1)
    rho = 1.0 - (mean_var[:, None] - acov.mean(1)) / var_plus[:, None]  # [element, lag]
    rho[:, 0] = 1.0
    n_pairs = max((n - 3) // 2, 0)  # pairs (2j, 2j + 1), j >= 1, that Geyer's loop may reach (lag < n - 1)
    pairs = np.empty((rho.shape[0], n_pairs + 1))
    pairs[:, 0] = 1.0 + rho[:, 1]
    if n_pairs:
        pairs[:, 1:] = rho[:, 2:2 * n_pairs + 2:2] + rho[:, 3:2 * n_pairs + 2:2]
    # the initial positive sequence stops at the first pair whose sum is not positive (that pair is kept
    # where its sum is 0, and its even term where that is positive), or at the last pair it may reach
    stop = ~(pairs > 0)
    last = np.where(stop.any(1), stop.argmax(1), n_pairs)
    rows = np.arange(rho.shape[0])
    monotone = np.minimum.accumulate(pairs, axis=1)  # the initial monotone sequence, on the pairs' sums
    kept = np.arange(n_pairs + 1)[None, :] < last[:, None]
    even = rho[rows, 2 * last]
    tail_term = np.where(last == 0, 1.0, np.where((pairs[rows, last] >= 0) | (even > 0), even, 0.0))
    tau = -1.0 + 2.0 * np.where(kept, monotone, 0.0).sum(1) + tail_term
    tau = np.maximum(tau, 1.0 / np.log10(total))
    out[varies] = total / tau
    return out


def _valid(x: np.ndarray, min_chains: int) -> np.ndarray:
    """Elements with no NaN, at least 4 draws and ``min_chains`` chains (else their diagnostic is NaN)."""
    ok = ~np.isnan(x).any(axis=(1, 2))
    return ok & (x.shape[-1] >= 4) & (x.shape[-2] >= min_chains)


def _each(x: np.ndarray, min_chains: int, fn) -> np.ndarray:  # type: ignore[no-untyped-def]
    flat, lead = _elements(x)
    out = np.full(flat.shape[0], np.nan)
    ok = _valid(flat, min_chains)
    if ok.any():
        out[ok] = fn(flat[ok])
    return out.reshape(lead)


def _rank_rhat(v: np.ndarray, z: np.ndarray | None = None) -> np.ndarray:
    s = _split(v)
    folded = np.abs(s - np.median(s.reshape(s.shape[0], -1), axis=-1)[:, None, None])
    return np.maximum(_rhat(_z_scale(s) if z is None else z), _rhat(_z_scale(folded)))


def _ess_tail(v: np.ndarray, probs: tuple[float, float]) -> np.ndarray:
    flat = v.reshape(v.shape[0], -1)
    least = np.full(v.shape[0], np.inf)
    for p in probs:
        q = np.quantile(flat, p, axis=-1)
        least = np.minimum(least, _ess(_split((v <= q[:, None, None]).astype(float))))
    return least


def rank_rhat(x: np.ndarray) -> np.ndarray:
    """The rank-normalised split r_hat: the larger of the bulk's and the folded draws' (NaN for an element with
    a NaN draw, fewer than 2 chains or fewer than 4 draws).

    Shapes: ``x [..., chain, draw]`` -> ``[...]``."""
    return _each(x, 2, _rank_rhat)


def ess_bulk(x: np.ndarray) -> np.ndarray:
    """The bulk ESS: of the rank-normalised split chains (NaN for an element with a NaN draw or fewer than 4
    draws).

    Shapes: ``x [..., chain, draw]`` -> ``[...]``."""
    return _each(x, 1, lambda v: _ess(_z_scale(_split(v))))


def ess_tail(x: np.ndarray, probs: tuple[float, float] = TAIL_PROBS) -> np.ndarray:
    """The tail ESS: the least ESS of the indicators ``x <= q(p)`` for ``p`` in ``probs`` (quantiles over all
    chains and draws, linear interpolation), split chains (NaN as for :func:`ess_bulk`).

    Shapes: ``x [..., chain, draw]`` -> ``[...]``; ``probs`` two quantile levels."""
    return _each(x, 1, lambda v: _ess_tail(v, probs))


def rhat_ess(x: np.ndarray, probs: tuple[float, float] = TAIL_PROBS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`rank_rhat`, :func:`ess_bulk` and :func:`ess_tail` together, the rank-normalised split chains
    computed once for r_hat and the bulk ESS.

    Shapes: ``x [..., chain, draw]`` -> three arrays ``[...]`` (r_hat, bulk ESS, tail ESS)."""
    flat, lead = _elements(x)
    out = [np.full(flat.shape[0], np.nan) for _ in range(3)]
    ok = _valid(flat, 1)
    if ok.any():
        v = flat[ok]
        z = _z_scale(_split(v))
        out[1][ok], out[2][ok] = _ess(z), _ess_tail(v, probs)
        two = ok & _valid(flat, 2)
        if two.any():
            out[0][two] = _rank_rhat(flat[two], z[two[ok]])
    r, b, t = (o.reshape(lead) for o in out)
    return r, b, t
