"""Accuracy of repeated multiple-choice runs: item-level bootstrap intervals and paired tests.

Layering: NumPy and SciPy only.

A benchmark run gives ``correct [run, item]`` (bool): each of a few runs (e.g. 3 draws of the
in-context examples) answers every item once. As in DRInQ's Tables 2 and 8:

- :func:`accuracy_summary`: the mean accuracy over runs, its SD over runs, and a 95% interval
  from resampling *items* (the runs of a resampled item go with it, so the interval is for the
  mean over runs on a new set of items, not for one run);
- :func:`paired_bootstrap`: the difference between two conditions on the same items and runs,
  resampling items jointly for both (paired), with a two-sided bootstrap p-value;
- :func:`mcnemar`: McNemar's exact test on one run's discordant pairs (binomial, SciPy).

Nothing is coerced: an answer that did not parse must already be ``False`` in ``correct``
(scored as wrong, never dropped), and arrays with NaN or of the wrong shape are rejected.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["AccuracySummary", "PairedDifference", "accuracy_summary", "paired_bootstrap", "mcnemar"]


def _correct(name: str, x: npt.ArrayLike) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] == 0 or a.shape[0] == 0:
        raise ValueError(f"{name} must be [run, item] (or [item]) with at least one item; got shape {np.shape(x)}.")
    if a.dtype != bool:
        if not np.issubdtype(a.dtype, np.number) or not np.all(np.isin(a, (0, 1))):
            bad = a.ravel()[~np.isin(a.ravel(), (0, 1))][0].item() if np.issubdtype(a.dtype, np.number) else a.dtype
            raise ValueError(f"{name} holds {bad!r}; expected booleans (or 0/1): an unparsed answer is False.")
        a = a.astype(bool)
    return a


def _boot_index(n_item: int, n_boot: int, seed: int) -> np.ndarray:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 100:
        raise ValueError(f"n_boot = {n_boot!r}; expected an int >= 100.")
    return np.random.default_rng(seed).integers(0, n_item, size=(int(n_boot), n_item))


@dataclass(frozen=True)
class AccuracySummary:
    """Accuracy over runs: ``mean`` (over runs and items), ``sd`` (of the runs' accuracies, ddof=1;
    NaN for one run), the item-bootstrap interval ``lo``-``hi``, ``n_item`` and ``n_run``."""

    mean: float
    sd: float
    lo: float
    hi: float
    n_item: int
    n_run: int


def accuracy_summary(correct: npt.ArrayLike, *, n_boot: int = 10_000, prob: float = 0.95,
                     seed: int = 0) -> AccuracySummary:
    """Mean accuracy, SD over runs and an item-level bootstrap interval.

    Shapes: ``correct [run, item]`` (or ``[item]``) bool -> scalars.

    Parameters
    ----------
    correct : array-like of bool
        Whether run ``r`` answered item ``i`` correctly.
    n_boot : int
        Bootstrap resamples of the items.
    prob : float
        Interval mass (percentile interval).
    seed : int
        Seed of the resampling.

    Returns
    -------
    AccuracySummary
    """
    a = _correct("correct", correct)
    if not 0 < prob < 1:
        raise ValueError(f"prob = {prob!r}; expected a number in (0, 1).")
    per_item = a.mean(axis=0)
    boot = per_item[_boot_index(a.shape[1], n_boot, seed)].mean(axis=1)
    lo, hi = np.quantile(boot, [(1 - prob) / 2, (1 + prob) / 2])
    runs = a.mean(axis=1)
    sd = float(runs.std(ddof=1)) if a.shape[0] > 1 else float("nan")
    return AccuracySummary(float(per_item.mean()), sd, float(lo), float(hi), int(a.shape[1]), int(a.shape[0]))


@dataclass(frozen=True)
class PairedDifference:
    """Accuracy of ``a`` minus ``b`` on the same items: ``diff``, its bootstrap interval ``lo``-``hi``,
    and the two-sided bootstrap p-value ``p`` (twice the smaller share of resampled differences on
    either side of 0, at most 1)."""

    diff: float
    lo: float
    hi: float
    p: float


def paired_bootstrap(correct_a: npt.ArrayLike, correct_b: npt.ArrayLike, *, n_boot: int = 10_000,
                     prob: float = 0.95, seed: int = 0) -> PairedDifference:
    """Paired item-level bootstrap of the difference in accuracy between two conditions.

    Shapes: ``correct_a [run, item]``, ``correct_b [run', item]`` (the same items, in the same
    order; the runs are averaged per item first) -> scalars.

    Parameters
    ----------
    correct_a, correct_b : array-like of bool
        The two conditions' answers.
    n_boot : int
        Bootstrap resamples of the items (the same resampled items for both conditions).
    prob : float
        Interval mass.
    seed : int
        Seed of the resampling.

    Returns
    -------
    PairedDifference
    """
    a, b = _correct("correct_a", correct_a), _correct("correct_b", correct_b)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"correct_a has {a.shape[1]} items and correct_b {b.shape[1]}; a paired test needs the "
                         "same items.")
    d = a.mean(axis=0) - b.mean(axis=0)
    boot = d[_boot_index(a.shape[1], n_boot, seed)].mean(axis=1)
    lo, hi = np.quantile(boot, [(1 - prob) / 2, (1 + prob) / 2])
    p = min(1.0, 2 * min(float(np.mean(boot <= 0)), float(np.mean(boot >= 0))))
    return PairedDifference(float(d.mean()), float(lo), float(hi), p)


def mcnemar(correct_a: npt.ArrayLike, correct_b: npt.ArrayLike) -> tuple[int, int, float]:
    """McNemar's exact test of two conditions answered once each on the same items.

    Shapes: ``correct_a [item]``, ``correct_b [item]`` -> ``(n_a_only, n_b_only, p)``.

    Parameters
    ----------
    correct_a, correct_b : array-like of bool
        One run of each condition.

    Returns
    -------
    n_a_only : int
        Items that only ``a`` answered correctly.
    n_b_only : int
        Items that only ``b`` answered correctly.
    p : float
        Two-sided exact binomial p-value of the discordant pairs (1 when there are none).
    """
    from scipy.stats import binomtest

    a, b = _correct("correct_a", correct_a), _correct("correct_b", correct_b)
    if a.shape[0] != 1 or b.shape != a.shape:
        raise ValueError(f"mcnemar takes one run of each condition on the same items; got shapes "
                         f"{np.shape(correct_a)} and {np.shape(correct_b)}.")
    n10 = int((a & ~b).sum())
    n01 = int((~a & b).sum())
    p = 1.0 if n10 + n01 == 0 else float(binomtest(n10, n10 + n01, 0.5).pvalue)
    return n10, n01, p
