"""From a language model's scores or samples to a distribution over a finite set of options.

Layering: the standard library, NumPy, :mod:`pragmodels.lm.base` (a model is only called, by :func:`sample_distribution`).

Nothing is dropped silently: a sample that does not parse, or parses to a value outside the
options, is counted as a failure and kept (its text, in :attr:`SampleDistribution.failures`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pragmodels.lm.base import LMError

__all__ = ["SampleDistribution", "from_samples", "from_scores", "sample_distribution", "tagged", "tagged_number"]


@dataclass(frozen=True)
class SampleDistribution:
    """Counts of parsed samples over the options, and the samples that did not parse.

    Attributes
    ----------
    options : tuple
        The options, in order.
    counts : numpy.ndarray
        ``[option]`` how many samples parsed to each.
    failures : tuple of str
        The texts that did not parse or parsed to no option.
    """

    options: tuple[Hashable, ...]
    counts: np.ndarray
    failures: tuple[str, ...]

    @property
    def n_samples(self) -> int:
        """All samples, parsed or not."""
        return int(self.counts.sum()) + len(self.failures)

    @property
    def n_failed(self) -> int:
        """Samples that did not parse."""
        return len(self.failures)

    def probs(self) -> np.ndarray:
        """Shares of the parsed samples per option (an error if none parsed).

        Shapes: -> ``[option]``.

        Returns
        -------
        numpy.ndarray

        Raises
        ------
        ValueError
            No sample parsed.
        """
        total = self.counts.sum()
        if total == 0:
            raise ValueError(f"none of the {self.n_samples} samples parsed to an option; first failure: "
                             f"{self.failures[0]!r}" if self.failures else "there are no samples.")
        return self.counts / total


def from_samples(texts: Sequence[str], parse: Callable[[str], Hashable | None],
                 options: Sequence[Hashable]) -> SampleDistribution:
    """Count samples by the option they parse to.

    Parameters
    ----------
    texts : sequence of str
        The sampled answers.
    parse : callable
        ``text -> value`` (``None`` where it does not parse).
    options : sequence
        The values that count.

    Returns
    -------
    SampleDistribution
    """
    opts = tuple(options)
    index = {o: i for i, o in enumerate(opts)}
    counts = np.zeros(len(opts), dtype=np.int64)
    failures = []
    for t in texts:
        v = parse(t)
        if v is None or v not in index:
            failures.append(t)
        else:
            counts[index[v]] += 1
    return SampleDistribution(opts, counts, tuple(failures))


def sample_distribution(lm: Any, prompt: str, parse: Callable[[str], Hashable | None], options: Sequence[Hashable],
                        n: int, *, max_draws: int | None = None, seed: int = 0, **sample_kwargs: Any,
                        ) -> SampleDistribution:
    """Sample until ``n`` answers parse to an option (or ``max_draws`` are drawn), and count them.

    A model that can only generate gives its semantics this way (the Wavelength paper's sampled
    literal listener: 32 samples per clue, resampled until they parse). The first ``n`` samples
    use seeds ``seed ... seed + n - 1``; each further round draws as many as are still missing,
    with the next seeds, so a rerun through the cache asks for nothing again.

    Parameters
    ----------
    lm : LanguageModel
        The model (a :class:`~pragmodels.lm.cache.CachedLM` to go through the cache).
    prompt : str
        The user's prompt.
    parse : callable
        ``text -> value`` (``None`` where it does not parse).
    options : sequence
        The values that count.
    n : int
        Parsed samples wanted (>= 1).
    max_draws : int, optional
        Most samples drawn in all (default ``3 * n``).
    seed : int
        Seed of the first sample.
    **sample_kwargs
        ``temperature``, ``max_tokens``, ``stop``, ``answer_prefix`` for ``lm.sample``.

    Returns
    -------
    SampleDistribution
        ``counts.sum()`` is ``n`` unless ``max_draws`` ran out; every failed text is kept.

    Raises
    ------
    ValueError
        ``n`` < 1 or ``max_draws`` < ``n``.
    LMError
        The model gave another number of samples than asked.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n = {n!r}; expected an int >= 1 (parsed samples per prompt).")
    bound = 3 * n if max_draws is None else max_draws
    if isinstance(bound, bool) or not isinstance(bound, int) or bound < n:
        raise ValueError(f"max_draws = {max_draws!r}; expected an int >= n = {n}.")
    texts: list[str] = []
    parsed = 0
    while parsed < n and len(texts) < bound:
        k = min(n - parsed, bound - len(texts))
        batch = list(lm.sample(prompt, k, seed=seed + len(texts), **sample_kwargs))
        if len(batch) != k:
            raise LMError(f"the model gave {len(batch)} samples for {k} asked.")
        texts += batch
        parsed = int(from_samples(texts, parse, options).counts.sum())
    return from_samples(texts, parse, options)


def from_scores(log_scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Normalise log-scores over the options (log-softmax).

    Shapes: ``log_scores [option]`` -> ``[option]`` (log-probabilities summing to 1).

    Parameters
    ----------
    log_scores : array-like
        One log-score per option.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValueError
        A score is NaN or +inf, or every score is -inf.
    """
    x = np.asarray(log_scores, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"log_scores must be a non-empty 1-D array; got shape {x.shape}.")
    bad = np.isnan(x) | (x == np.inf)
    if bad.any():
        raise ValueError(f"log_scores[{int(np.argmax(bad))}] = {x[bad][0]}; expected a finite number or -inf.")
    if np.all(x == -np.inf):
        raise ValueError("every log-score is -inf; no option has any probability.")
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def tagged(text: str, tag: str = "answer") -> str | None:
    """The text inside the first ``<tag>...</tag>`` (the closing tag may be missing at the end,
    as when it was a stop string), stripped of whitespace and ``*``; ``None`` if there is none.

    Parameters
    ----------
    text : str
        A sampled answer.
    tag : str
        The tag name.

    Returns
    -------
    str or None
    """
    m = re.search(rf"<{re.escape(tag)}>(.*?)(?:</{re.escape(tag)}>|$)", text, re.DOTALL)
    if m is None:
        return None
    value = m.group(1).replace("*", "").strip()
    return value or None


def tagged_number(text: str, tag: str = "answer") -> int | None:
    """The integer inside ``<tag>...</tag>`` (``"75"``, ``"75.0"``); ``None`` otherwise.

    Parameters
    ----------
    text : str
        A sampled answer.
    tag : str
        The tag name.

    Returns
    -------
    int or None
    """
    v = tagged(text, tag)
    if v is None:
        return None
    try:
        f = float(v)
    except ValueError:
        return None
    return int(f) if np.isfinite(f) and f == int(f) else None
