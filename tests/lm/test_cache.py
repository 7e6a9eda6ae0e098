"""The score cache: nothing scored twice, corrupted entries recomputed, safe across processes."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from collections.abc import Sequence

import numpy as np
import pytest

from pragmodels.lm import CachedLM, LMError, PromptFormat, SampleRequest, ScoreCache, ScoreRequest


class CountingLM:
    """A deterministic stand-in that counts what reaches it (the cache, not a model, is tested)."""

    identity = "fake:counting"
    prompt_format = PromptFormat.plain()

    def __init__(self) -> None:
        self.scored: list[str] = []
        self.sampled = 0

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        self.scored += list(continuations)
        return np.array([-(len(prompt) + len(c)) / (len(c) if length_normalize else 1.0) for c in continuations])

    def sample(self, prompt: str, n: int, *, temperature: float = 1.0, max_tokens: int = 32,
               stop: Sequence[str] = (), seed: int = 0) -> list[str]:
        self.sampled += n
        return [f"s{seed + i}" for i in range(n)]


def test_a_rerun_scores_nothing_twice(tmp_path):
    lm = CountingLM()
    c = CachedLM(lm, ScoreCache(tmp_path / "c.sqlite"))
    a = c.score("p", ["x", "yy"])
    b = c.score("p", ["yy", "x", "zzz"])
    assert lm.scored == ["x", "yy", "zzz"]
    np.testing.assert_array_equal(b[:2], a[::-1])
    # a new process (a new cache object on the same file) reads them back
    lm2 = CountingLM()
    again = CachedLM(lm2, ScoreCache(tmp_path / "c.sqlite")).score("p", ["x", "yy", "zzz"])
    assert lm2.scored == [] and again.tolist() == [-2.0, -3.0, -4.0]


def test_keys_separate_prompt_settings_and_models(tmp_path):
    cache = ScoreCache(tmp_path / "c.sqlite")
    lm = CountingLM()
    c = CachedLM(lm, cache)
    c.score("p", ["x"])
    c.score("q", ["x"])
    c.score("p", ["x"], length_normalize=True)
    other = CountingLM()
    other.identity = "fake:other"
    CachedLM(other, cache).score("p", ["x"])
    assert lm.scored == ["x", "x", "x"] and other.scored == ["x"]


def test_corrupted_or_truncated_entries_are_recomputed(tmp_path):
    path = tmp_path / "c.sqlite"
    lm = CountingLM()
    CachedLM(lm, ScoreCache(path)).score("p", ["a", "b", "c"])
    con = sqlite3.connect(path)
    rows = con.execute("SELECT key, value FROM entries ORDER BY key").fetchall()
    con.execute("UPDATE entries SET value = ? WHERE key = ?", (rows[0][1].replace("-", "-9"), rows[0][0]))  # altered
    con.execute("UPDATE entries SET value = ? WHERE key = ?", (rows[1][1][:5], rows[1][0]))  # truncated
    con.commit()
    con.close()
    lm2 = CountingLM()
    cache = ScoreCache(path)
    out = CachedLM(lm2, cache).score("p", ["a", "b", "c"])
    assert sorted(lm2.scored) != [] and len(lm2.scored) == 2
    assert out.tolist() == [-2.0, -2.0, -2.0] and cache.stats.corrupt == 2
    lm3 = CountingLM()
    CachedLM(lm3, ScoreCache(path)).score("p", ["a", "b", "c"])
    assert lm3.scored == []  # the recomputed entries replaced the bad ones


def test_samples_are_cached_per_seed(tmp_path):
    lm = CountingLM()
    c = CachedLM(lm, ScoreCache(tmp_path / "c.sqlite"))
    assert c.sample("p", 3, seed=10) == ["s10", "s11", "s12"]
    assert c.sample("p", 5, seed=10) == ["s10", "s11", "s12", "s13", "s14"]
    assert lm.sampled == 5


def _writer(path: str, worker: int) -> None:
    c = CachedLM(CountingLM(), ScoreCache(path))
    for k in range(30):
        c.score(f"prompt {k % 7}", [f"w{worker}-{k}", "shared"])


@pytest.mark.subprocess
def test_two_processes_writing_at_once_do_not_corrupt_it(tmp_path):
    path = str(tmp_path / "c.sqlite")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = ScoreCache(path)
    assert len(cache) == 2 * 30 + 7
    lm = CountingLM()
    c = CachedLM(lm, cache)
    for w in range(2):
        for k in range(30):
            c.score(f"prompt {k % 7}", [f"w{w}-{k}", "shared"])
    assert lm.scored == [] and cache.stats.corrupt == 0


def test_empty_candidates_are_an_error(tmp_path):
    with pytest.raises(ValueError, match="continuations is empty"):
        CachedLM(CountingLM(), ScoreCache(tmp_path / "c.sqlite")).score("p", [])


def test_answer_prefix_is_part_of_the_sample_key(tmp_path):
    class PrefixLM(CountingLM):
        def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
            self.sampled += n
            return [f"{answer_prefix}s{seed + i}" for i in range(n)]

    lm = PrefixLM()
    c = CachedLM(lm, ScoreCache(tmp_path / "c.sqlite"))
    assert c.sample("p", 1, seed=1) == ["s1"]
    assert c.sample("p", 1, seed=1, answer_prefix="<a>") == ["<a>s1"]
    assert lm.sampled == 2


# ------------------------------------------------------------------ issue 33, item 5: only trusted values in, out
class NanLM(CountingLM):
    """Scores 'bad' as NaN (a server or backend glitch)."""

    def score(self, prompt, continuations, *, length_normalize=False):
        out = super().score(prompt, continuations, length_normalize=length_normalize)
        return np.where(np.array(continuations) == "bad", np.nan, out)


def test_a_nan_score_is_refused_naming_the_prompt_and_the_continuation(tmp_path):
    from pragmodels.lm import LMError

    cache = ScoreCache(tmp_path / "c.sqlite")
    with pytest.raises(LMError, match=r"fake:counting: the score of 'bad' after the prompt 'p' is nan; expected a "
                                      r"log-probability .*not cached"):
        CachedLM(NanLM(), cache).score("p", ["a", "bad"])
    assert len(cache) == 1  # the finite score was kept, the NaN not stored
    lm = CountingLM()
    assert CachedLM(lm, cache).score("p", ["a", "bad"]).tolist() == [-2.0, -4.0] and lm.scored == ["bad"]


def test_a_model_giving_too_few_scores_is_named(tmp_path):
    from pragmodels.lm import LMError

    class ShortLM(CountingLM):
        def score(self, prompt, continuations, *, length_normalize=False):
            return super().score(prompt, continuations)[:-1]

    with pytest.raises(LMError, match=r"fake:counting: the model gave 1 scores for 2 continuations"):
        CachedLM(ShortLM(), ScoreCache(tmp_path / "c.sqlite")).score("p", ["a", "b"])


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "x", True, None])
def test_put_many_refuses_a_score_that_is_not_a_log_probability(tmp_path, value):
    cache = ScoreCache(tmp_path / "c.sqlite")
    with pytest.raises((ValueError, TypeError), match=r"ScoreCache.put_many: the score under key 'k' is .*; expected "
                                                      r"a log-probability"):
        cache.put_many([("ok", -1.0), ("k", value)], "score")
    assert len(cache) == 0  # nothing of the batch was stored


def test_a_log_probability_of_minus_infinity_is_a_score(tmp_path):
    cache = ScoreCache(tmp_path / "c.sqlite")
    cache.put_many([("k", float("-inf"))], "score")
    assert ScoreCache(tmp_path / "c.sqlite").get_many(["k"], "score") == {"k": float("-inf")}


@pytest.mark.parametrize("stored", ["NaN", "Infinity", '"-1.5"', "null", "true"])
def test_a_score_in_the_file_that_is_not_a_log_probability_is_a_miss(tmp_path, stored):
    """An entry written by an older version (or by hand) with a valid checksum: not trusted, recomputed."""
    import hashlib

    path = tmp_path / "c.sqlite"
    lm = CountingLM()
    CachedLM(lm, ScoreCache(path)).score("p", ["a"])
    con = sqlite3.connect(path)
    (key,) = con.execute("SELECT key FROM entries").fetchone()
    text = f'{{"key": "{key}", "value": {stored}}}'
    con.execute("UPDATE entries SET value = ?, checksum = ?", (text, hashlib.sha256((key + text).encode()).hexdigest()))
    con.commit()
    con.close()
    cache = ScoreCache(path)
    lm2 = CountingLM()
    assert CachedLM(lm2, cache).score("p", ["a"]).tolist() == [-2.0]
    assert lm2.scored == ["a"] and cache.stats.corrupt == 1
    assert ScoreCache(path).get_many([key], "score") == {key: -2.0}  # overwritten


def test_kind_must_be_score_or_sample(tmp_path):
    cache = ScoreCache(tmp_path / "c.sqlite")
    with pytest.raises(ValueError, match=r"kind must be one of \('score', 'sample'\); got 'scores'"):
        cache.put_many([("k", -1.0)], "scores")
    with pytest.raises(ValueError, match=r"kind must be one of \('score', 'sample'\); got 'Score'"):
        cache.get_many(["k"], "Score")
    with pytest.raises(TypeError, match=r"ScoreCache.put_many: the sample under key 'k' is 3 \(int\); expected a str"):
        cache.put_many([("k", 3)], "sample")
    assert len(cache) == 0


def test_a_key_that_is_not_a_string_is_named(tmp_path):
    cache = ScoreCache(tmp_path / "c.sqlite")
    with pytest.raises(TypeError, match=r"ScoreCache.put_many: key 3 \(int\); expected a str"):
        cache.put_many([(3, -1.0)], "score")
    with pytest.raises(TypeError, match=r"ScoreCache.get_many: key 3 \(int\); expected a str"):
        cache.get_many(["a", 3], "score")
    with pytest.raises(ValueError, match=r"ScoreCache: path '' is empty"):
        ScoreCache("")


class RecordingLM(CountingLM):
    """Records each sample call's (n, seed); a server that honours n gives a run's samples in one call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int, int]] = []

    def sample(self, prompt: str, n: int, *, temperature: float = 1.0, max_tokens: int = 32,
               stop: Sequence[str] = (), seed: int = 0) -> list[str]:
        self.calls.append((n, seed))
        return super().sample(prompt, n, seed=seed)


def test_missing_samples_are_asked_for_in_runs_of_seeds(tmp_path):
    """Issue 35, item 2: one model call per run of consecutive missing seeds (n per request where the
    server honours it), not one call per sample; each sample stays cached under its own seed."""
    lm = RecordingLM()
    c = CachedLM(lm, ScoreCache(tmp_path / "c.sqlite"))
    assert c.sample("p", 2, seed=3) == ["s3", "s4"]
    assert c.sample("p", 8, seed=0) == [f"s{i}" for i in range(8)]
    assert lm.calls == [(2, 3), (3, 0), (3, 5)]
    assert c.sample("p", 8, seed=0) == [f"s{i}" for i in range(8)] and len(lm.calls) == 3
    assert c.sample_many([SampleRequest("p", 2, seed=7), SampleRequest("q", 1)]) == [["s7", "s8"], ["s0"]]
    assert lm.calls[3:] == [(1, 8), (1, 0)]


class FailingLM(CountingLM):
    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        if prompt == "bad":
            raise LMError("the server is down")
        return super().score(prompt, continuations, length_normalize=length_normalize)


def test_score_many_keeps_what_was_scored_before_a_failure(tmp_path):
    """Each prompt's scores are stored as they come: a run cut short resumes (issue 35, item 4)."""
    cache = ScoreCache(tmp_path / "c.sqlite")
    requests = [ScoreRequest("a", ("x",)), ScoreRequest("bad", ("y",)), ScoreRequest("c", ("z",))]
    with pytest.raises(LMError, match="the server is down") as e:
        CachedLM(FailingLM(), cache).score_many(requests)
    assert e.value.request_index == 1  # type: ignore[attr-defined]
    lm = CountingLM()
    done: list[int] = []
    out = CachedLM(lm, cache).score_many([requests[0], requests[2]], on_result=lambda i, s: done.append(i))
    assert lm.scored == ["z"] and sorted(done) == [0, 1] and [o.tolist() for o in out] == [[-2.0], [-2.0]]
