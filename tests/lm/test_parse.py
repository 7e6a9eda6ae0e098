"""Scores and samples to distributions: nothing dropped silently."""

from __future__ import annotations

import numpy as np
import pytest

from pragmodels.lm import from_samples, from_scores, tagged, tagged_number


def test_tagged_values():
    assert tagged("<answer> warm bath </answer>") == "warm bath"
    assert tagged("<answer>**75**") == "75"          # closing tag eaten as a stop string
    assert tagged("I think 75") is None
    assert tagged("<answer></answer>") is None
    assert tagged_number("<answer>75.0</answer>") == 75
    assert tagged_number("<answer>7.5</answer>") is None
    assert tagged_number("<answer>seventy</answer>") is None


def test_sample_failures_are_counted_not_dropped():
    texts = ["<answer>5</answer>", "<answer>5</answer>", "<answer>7</answer>", "no idea", "<answer>10</answer>"]
    d = from_samples(texts, tagged_number, [0, 5, 10])
    assert d.counts.tolist() == [0, 2, 1]
    assert d.failures == ("<answer>7</answer>", "no idea") and d.n_failed == 2 and d.n_samples == 5
    np.testing.assert_allclose(d.probs(), [0, 2 / 3, 1 / 3])
    with pytest.raises(ValueError, match="none of the 1 samples"):
        from_samples(["junk"], tagged_number, [0, 5]).probs()


def test_from_scores():
    lp = from_scores([-1.0, -2.0, -np.inf])
    assert np.exp(lp).sum() == pytest.approx(1.0) and lp[2] == -np.inf
    with pytest.raises(ValueError, match="every log-score is -inf"):
        from_scores([-np.inf, -np.inf])
    with pytest.raises(ValueError, match=r"log_scores\[1\] = nan"):
        from_scores([0.0, np.nan])


class ScriptedLM:
    """Answers sample i (seed i) with script[i]; records the calls."""

    def __init__(self, script: list[str]) -> None:
        self.script, self.calls = script, []

    def sample(self, prompt, n, *, seed=0, **kw):
        self.calls.append((n, seed, kw))
        return self.script[seed:seed + n]


def test_sample_distribution_resamples_failures_up_to_a_bound():
    """Issue 35: N samples per prompt, parse failures counted and resampled (with the next seeds) up to a bound."""
    from pragmodels.lm import LMError, sample_distribution

    lm = ScriptedLM(["<answer>1</answer>", "??", "<answer>2</answer>", "no", "<answer>1</answer>", "x", "y", "z"])
    d = sample_distribution(lm, "P", tagged_number, [1, 2], 3, max_tokens=9)
    assert d.counts.tolist() == [2, 1] and d.failures == ("??", "no")
    # 2 of 3 parse: one more (seed 3) fails, one more (seed 4) parses
    assert lm.calls == [(3, 0, {"max_tokens": 9}), (1, 3, {"max_tokens": 9}), (1, 4, {"max_tokens": 9})]
    bounded = sample_distribution(ScriptedLM(["a"] * 8), "P", tagged_number, [1, 2], 3, max_draws=5)
    assert bounded.counts.sum() == 0 and bounded.n_samples == 5  # gave up at the bound; every failure kept
    with pytest.raises(ValueError, match="max_draws = 2; expected an int >= n = 3"):
        sample_distribution(lm, "P", tagged_number, [1, 2], 3, max_draws=2)
    with pytest.raises(LMError, match="the model gave 1 samples for 3 asked"):
        sample_distribution(ScriptedLM(["a"]), "P", tagged_number, [1, 2], 3)
