"""A score cache on disk (SQLite, standard library), and a model wrapper that uses it.

Layering: the standard library, NumPy, :mod:`pragmodels.lm.base` (no JAX: the command line's help
imports this).

Each entry is one continuation's score, or one sample, keyed by the sha256 of a canonical JSON
of everything the value depends on: the model's identity (a GGUF file's sha256, or a server's
URL and model name), the prompt format, the prompt, the continuation and the settings. A re-run
computes nothing twice, and a run cut short resumes where it stopped.

An entry carries the sha256 of its own value: an entry whose checksum does not match, that does
not parse, whose key is not the key asked for, or whose value is not of its kind (a score that is
NaN, +inf or not a number; a sample that is not a string), is *not trusted*: it is a miss,
recomputed and overwritten (counted in :attr:`ScoreCache.stats`). Such a value is never stored:
:meth:`ScoreCache.put_many` refuses it, and :class:`CachedLM` refuses a model's NaN or +inf score
naming the prompt and the continuation. A score of -inf (a probability that underflowed to 0) is a
log-probability like any other. SQLite in WAL mode with a busy timeout lets
several processes read and write at once; each batch of writes is one transaction, so a process
killed mid-write leaves whole entries or none.

Scores are data: a fit never calls a language model. Score first (``pragmodels lm score``, or a
study's scoring step), then fit the saved tables.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pragmodels.lm.base import (
    LanguageModel,
    LMError,
    PromptFormat,
    SampleRequest,
    ScoreRequest,
    check_continuations,
    sample_many,
    score_many,
)

__all__ = ["ScoreCache", "CachedLM", "default_cache_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    checksum TEXT NOT NULL
)
"""


def default_cache_path() -> Path:
    """``$PRAGMODELS_LM_CACHE``, else ``~/.cache/pragmodels/lm_scores.sqlite``.

    Returns
    -------
    Path
    """
    env = os.environ.get("PRAGMODELS_LM_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "pragmodels" / "lm_scores.sqlite"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _key(parts: dict[str, Any]) -> str:
    return _sha(json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":")))


#: what a cache entry may hold
KINDS = ("score", "sample")


def _is_score(value: Any) -> bool:
    """A log-probability: a real number, not NaN or +inf (-inf is a probability of 0)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not (value != value or value == np.inf)


def _trusted(kind: str, value: Any) -> bool:
    return _is_score(value) if kind == "score" else isinstance(value, str)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:  # (as pragmodels.validation.check_one_of, which imports JAX)
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}.")


def _check_keys(fn: str, keys: Iterable[Any]) -> None:
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"ScoreCache.{fn}: key {key!r} ({type(key).__name__}); expected a str (the sha256 of "
                            "what the value depends on).")


def _check_value(kind: str, key: str, value: Any) -> None:
    if _trusted(kind, value):
        return
    expected = "a log-probability (a number, -inf allowed; not NaN or +inf)" if kind == "score" else "a str"
    err = ValueError if kind == "score" and isinstance(value, float) else TypeError
    raise err(f"ScoreCache.put_many: the {kind} under key {key!r} is {value!r} ({type(value).__name__}); "
              f"expected {expected}. Nothing of the batch was stored.")


@dataclass
class CacheStats:
    """Counters of one :class:`ScoreCache` object (this process only)."""

    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    written: int = 0


@dataclass
class ScoreCache:
    """Scores and samples in one SQLite file.

    Parameters
    ----------
    path : str or path-like, optional
        The database file (created with its folder); default :func:`default_cache_path`.
    timeout_s : float
        How long a writer waits for another process's lock.
    """

    path: Path | str | None = None
    timeout_s: float = 60.0
    stats: CacheStats = field(default_factory=CacheStats)

    def __post_init__(self) -> None:
        if self.path is not None and not str(self.path).strip():
            raise ValueError(f"ScoreCache: path {str(self.path)!r} is empty; expected an SQLite file, or None for "
                             f"{default_cache_path()}.")
        self.path = Path(self.path) if self.path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._conn() as con:
            con.execute(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(str(self.path), timeout=self.timeout_s, isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute(f"PRAGMA busy_timeout={int(self.timeout_s * 1000)}")
            self._local.con = con
        return con

    def get_many(self, keys: Sequence[str], kind: str) -> dict[str, Any]:
        """The trusted values of those keys that are cached (corrupted entries are left out).

        Parameters
        ----------
        keys : sequence of str
            Entry keys.
        kind : str
            ``"score"`` or ``"sample"`` (an entry of another kind under the same key is corrupt).

        Returns
        -------
        dict
            ``{key: value}`` for the entries found and trusted (a score that is NaN, +inf or not
            a number, or a sample that is not a string, is not trusted).

        Raises
        ------
        ValueError
            ``kind`` is neither ``"score"`` nor ``"sample"``.
        TypeError
            A key is not a string.
        """
        _check_kind(kind)
        _check_keys("get_many", keys)
        out: dict[str, Any] = {}
        con = self._conn()
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            rows = con.execute(f"SELECT key, kind, value, checksum FROM entries WHERE key IN "
                               f"({','.join('?' * len(chunk))})", chunk).fetchall()
            for key, k, value, checksum in rows:
                try:
                    ok = k == kind and _sha(key + value) == checksum
                    parsed = json.loads(value) if ok else None
                    ok = ok and isinstance(parsed, dict) and parsed.get("key") == key and _trusted(kind, parsed["value"])
                except (ValueError, TypeError, KeyError, RecursionError):
                    ok = False
                if ok:
                    out[key] = parsed["value"]  # type: ignore[index]
                else:
                    self.stats.corrupt += 1
        self.stats.hits += len(out)
        self.stats.misses += len(keys) - len(out)
        return out

    def put_many(self, items: Iterable[tuple[str, Any]], kind: str) -> None:
        """Store values (one transaction; an existing entry under a key is replaced).

        Parameters
        ----------
        items : iterable of (str, value)
            Keys and values: a score is a log-probability (a number; -inf allowed, not NaN or
            +inf), a sample a string.
        kind : str
            ``"score"`` or ``"sample"``.

        Raises
        ------
        ValueError
            ``kind`` is neither ``"score"`` nor ``"sample"``, or a score is NaN or +inf (nothing
            of the batch is stored; the message names its key).
        TypeError
            A key is not a string, or a value is not of its kind.
        """
        _check_kind(kind)
        rows = []
        for key, value in items:
            _check_keys("put_many", [key])
            _check_value(kind, key, value)
            text = json.dumps({"key": key, "value": value}, ensure_ascii=False, allow_nan=True)
            rows.append((key, kind, text, _sha(key + text)))
        if not rows:
            return
        con = self._conn()
        con.execute("BEGIN IMMEDIATE")
        try:
            con.executemany("INSERT OR REPLACE INTO entries (key, kind, value, checksum) VALUES (?, ?, ?, ?)", rows)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        self.stats.written += len(rows)

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM entries").fetchone()[0])


class CachedLM:
    """A :class:`~pragmodels.lm.base.LanguageModel` whose scores and samples go through a cache.

    Only what the cache lacks (or holds corrupted) reaches the model, in one call per prompt.

    Parameters
    ----------
    model : LanguageModel
        The model to wrap.
    cache : ScoreCache, optional
        Default: a cache at :func:`default_cache_path`.

    Examples
    --------
    >>> lm = CachedLM(LlamaCppLM(smollm2_path()))            # doctest: +SKIP
    >>> lm.score("2 + 2 =", ["4", "5"])                      # doctest: +SKIP
    """

    def __init__(self, model: LanguageModel, cache: ScoreCache | None = None):
        self.model = model
        self.cache = cache if cache is not None else ScoreCache()

    @property
    def identity(self) -> str:
        """The wrapped model's identity."""
        return self.model.identity

    @property
    def prompt_format(self) -> PromptFormat:
        """The wrapped model's prompt format."""
        return self.model.prompt_format

    def _base(self, op: str) -> dict[str, Any]:
        settings = getattr(self.model, "settings", None)
        # samples through a chat API are rendered by the server's own template, not by a PromptFormat
        # (a hosted chat model has none to give)
        chat_api = op == "sample" and getattr(self.model, "sample_api", None) == "chat"
        return {"model": self.identity, "format": "chat-api" if chat_api else self.prompt_format.key(),
                "settings": settings() if callable(settings) else None}

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        """As :meth:`LanguageModel.score`, from the cache where it can.

        Shapes: ``continuations [candidate]`` -> float64 ``[candidate]``.

        Parameters
        ----------
        prompt : str
            The user's prompt.
        continuations : sequence of str
            Candidate answers.
        length_normalize : bool
            Mean instead of sum of token log-probabilities.

        Returns
        -------
        numpy.ndarray
        """
        return self.score_many([ScoreRequest(prompt, tuple(check_continuations(continuations)), length_normalize)])[0]

    def score_many(self, requests: Sequence[ScoreRequest],
                   on_result: Callable[[int, np.ndarray], None] | None = None) -> list[np.ndarray]:
        """:meth:`score` of many prompts: the cache is read once, and what it lacks goes to the
        model in one :func:`~pragmodels.lm.base.score_many` call (a server keeps several requests in
        flight); each prompt's scores are stored as soon as they come, so a run cut short resumes.

        Parameters
        ----------
        requests : sequence of ScoreRequest
            The prompts.
        on_result : callable, optional
            ``on_result(i, scores)`` as each prompt is done (from the cache first).

        Returns
        -------
        list of numpy.ndarray
            In the order of ``requests``.

        Raises
        ------
        LMError
            The model gave not one score per continuation, or a NaN or +inf score (not cached;
            the prompt's good scores are); its ``request_index`` names the request.
        """
        keys, todo = [], []
        for r in requests:
            conts = check_continuations(r.continuations)
            base = self._base("score") | {"op": "score", "prompt": r.prompt, "length_normalize": bool(r.length_normalize)}
            keys.append([_key(base | {"continuation": c}) for c in conts])
        found = self.cache.get_many([k for ks in keys for k in ks], "score")
        out: list[np.ndarray | None] = [None] * len(requests)
        for i, ks in enumerate(keys):
            missing = [j for j, k in enumerate(ks) if k not in found]
            if missing:
                todo.append((i, missing))
            else:
                out[i] = np.array([found[k] for k in ks], dtype=np.float64)
                if on_result is not None:
                    on_result(i, out[i])  # type: ignore[arg-type]

        def store(t: int, scores: np.ndarray) -> None:
            i, missing = todo[t]
            r, ks = requests[i], keys[i]
            if len(scores) != len(missing):
                raise LMError(f"{self.identity}: the model gave {len(scores)} scores for {len(missing)} continuations.")
            fresh = {j: float(v) for j, v in zip(missing, scores)}
            good = {j: v for j, v in fresh.items() if _is_score(v)}
            self.cache.put_many(((ks[j], v) for j, v in good.items()), "score")  # the good ones are kept
            bad = next((j for j in fresh if j not in good), None)
            if bad is not None:
                shown = r.prompt if len(r.prompt) <= 80 else r.prompt[:79] + "…"
                raise LMError(f"{self.identity}: the score of {r.continuations[bad]!r} after the prompt {shown!r} is "
                              f"{fresh[bad]}; expected a log-probability (a number <= 0, or -inf). It was not cached.")
            found.update({ks[j]: v for j, v in fresh.items()})
            out[i] = np.array([found[k] for k in ks], dtype=np.float64)
            if on_result is not None:
                on_result(i, out[i])  # type: ignore[arg-type]

        if todo:
            sub = [ScoreRequest(requests[i].prompt, tuple(requests[i].continuations[j] for j in missing),
                                requests[i].length_normalize) for i, missing in todo]
            try:
                score_many(self.model, sub, on_result=store)
            except Exception as e:
                t = getattr(e, "request_index", None)
                if isinstance(t, int) and 0 <= t < len(todo):
                    e.request_index = todo[t][0]  # type: ignore[attr-defined]  # the caller's index
                raise
        return out  # type: ignore[return-value]

    def sample(self, prompt: str, n: int, *, temperature: float = 1.0, max_tokens: int = 32,
               stop: Sequence[str] = (), seed: int = 0, answer_prefix: str = "") -> list[str]:
        """As :meth:`LanguageModel.sample`, from the cache where it can (per sample and seed).

        Sample ``i`` is cached under seed ``seed + i``. What the cache lacks is asked for in runs of
        consecutive seeds, ``model.sample(prompt, k, seed=first)`` per run: a backend that samples
        one request per seed gives the same texts for any ``n``; a server that honours ``n`` gives a
        run's samples in one request (draws of the same distribution, not reproducible by seed).

        Parameters
        ----------
        prompt : str
            The user's prompt.
        n : int
            Number of samples.
        temperature : float
            Sampling temperature.
        max_tokens : int
            Most tokens per answer.
        stop : sequence of str
            Strings that end an answer.
        seed : int
            Seed of the first sample (sample ``i`` uses ``seed + i``).
        answer_prefix : str
            Text the answer starts with.

        Returns
        -------
        list of str
        """
        return self.sample_many([SampleRequest(prompt, n, temperature, max_tokens, tuple(stop), seed, answer_prefix)])[0]

    def sample_many(self, requests: Sequence[SampleRequest],
                    on_result: Callable[[int, list[str]], None] | None = None) -> list[list[str]]:
        """:meth:`sample` for many prompts, what the cache lacks in one
        :func:`~pragmodels.lm.base.sample_many` call (stored as each run of seeds comes back).

        Parameters
        ----------
        requests : sequence of SampleRequest
            The prompts and settings.
        on_result : callable, optional
            ``on_result(i, texts)`` as each request is done.

        Returns
        -------
        list of list of str
            In the order of ``requests``.
        """
        keys = []
        for r in requests:
            if isinstance(r.n, bool) or not isinstance(r.n, int) or r.n < 1:
                raise ValueError(f"n = {r.n!r}; expected an int >= 1.")
            base = self._base("sample") | {"op": "sample", "prompt": r.prompt, "temperature": float(r.temperature),
                                           "max_tokens": int(r.max_tokens), "stop": list(r.stop)}
            if r.answer_prefix:  # (absent from older keys, so those stay valid)
                base["answer_prefix"] = r.answer_prefix
            keys.append([_key(base | {"seed": int(r.seed) + i}) for i in range(r.n)])
        found = self.cache.get_many([k for ks in keys for k in ks], "sample")
        runs: list[tuple[int, int, int]] = []  # (request, first sample, count): missing consecutive seeds
        for i, ks in enumerate(keys):
            j = 0
            while j < len(ks):
                if ks[j] in found:
                    j += 1
                    continue
                start = j
                while j < len(ks) and ks[j] not in found:
                    j += 1
                runs.append((i, start, j - start))
        waiting = [sum(1 for run in runs if run[0] == i) for i in range(len(requests))]
        done = [i for i in range(len(requests)) if not waiting[i]]

        def result(i: int) -> list[str]:
            return [found[k] for k in keys[i]]

        def store(t: int, texts: list[str]) -> None:
            i, start, count = runs[t]
            if len(texts) != count:
                raise LMError(f"{self.identity}: the model gave {len(texts)} samples for {count} asked.")
            items = list(zip(keys[i][start:start + count], texts))
            self.cache.put_many(items, "sample")
            found.update(items)
            waiting[i] -= 1
            if not waiting[i] and on_result is not None:
                on_result(i, result(i))

        if on_result is not None:
            for i in done:
                on_result(i, result(i))
        if runs:
            sub = [SampleRequest(requests[i].prompt, count, requests[i].temperature, requests[i].max_tokens,
                                 tuple(requests[i].stop), int(requests[i].seed) + start, requests[i].answer_prefix)
                   for i, start, count in runs]
            try:
                sample_many(self.model, sub, on_result=store)
            except Exception as e:
                t = getattr(e, "request_index", None)
                if isinstance(t, int) and 0 <= t < len(runs):
                    e.request_index = runs[t][0]  # type: ignore[attr-defined]
                raise
        return [result(i) for i in range(len(requests))]
