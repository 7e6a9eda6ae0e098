"""The Wavelength LM step with a deterministic stand-in model: what is stored, resumed, counted."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from models.wavelength import lm_scores, prompts
from pragmodels.lm import PromptFormat


class FakeLM:
    """Scores depend on prompt and continuation; samples cycle through good and bad clues."""

    identity = "fake:wavelength"
    prompt_format = PromptFormat.plain()

    def __init__(self) -> None:
        self.scored = 0
        self.sampled = 0

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        self.scored += len(continuations)
        return np.array([-((hash((prompt, c)) % 1000) / 100.0) for c in continuations])

    def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
        self.sampled += n
        pool = ["snow", "Snow ", "a warm bath", "", "far too many words in this clue here", "sauna"]
        return [answer_prefix + pool[(seed + i) % len(pool)] for i in range(n)]

    def tokenize(self, text: str) -> list[int]:
        return list(range(len(text.split())))


ITEMS = pd.DataFrame({"item": [3, 7], "left": ["Cold", "Quiet"], "right": ["Hot", "Loud"],
                      "clue": ["snow", "library"], "target": [10, 20]})


def test_alternatives_are_deduplicated_and_failures_counted():
    alts = lm_scores.generate_alternatives(FakeLM(), ITEMS.iloc[:1], seed=0)
    assert len(alts) == len(prompts.STATES)
    utts = lm_scores.utterance_sets(ITEMS.iloc[:1], alts)[3]
    assert utts[0] == "snow"                             # the real clue first
    assert "Snow" not in utts and "snow" not in utts[1:]  # same clue after case-folding
    assert sorted(utts[1:]) == ["a warm bath", "sauna"]
    # the empty and the six-word samples are failures: 2 of every 6 seeds
    assert alts["clue"].isna().sum() == sum(1 for s in prompts.STATES if (3000 + s) % 6 in (3, 4))


def test_score_study_stores_resumes_and_refuses_other_settings(tmp_path):
    lm = FakeLM()
    path = lm_scores.score_study(lm, ITEMS.iloc[:1], name="fake", seed=0, folder=tmp_path, n_production=4)
    ds = lm_scores.load_scores(path, need=lm_scores.PASSES)
    assert ds.sizes["item"] == 1 and ds["utt_mask"].sum().item() == 3
    np.testing.assert_array_equal(np.isnan(ds["log_lm"].isel(item=0).values).any(1), ~ds["utt_mask"].values[0])
    assert int(ds["prod_count"].sum()) + int(ds["prod_failed"].sum()) == 4
    clues = pd.read_csv(tmp_path / "fake_clues.csv")
    alts = clues[clues["kind"] == "alternative"]
    assert 0 not in set(alts["index"]) and "snow" not in set(alts["clue"])  # the upstream clue is not republished
    first = lm.scored
    # a second run with both items scores only the new one
    lm_scores.score_study(lm, ITEMS, name="fake", seed=0, folder=tmp_path, n_production=4)
    per_item = first
    assert lm.scored - first == pytest.approx(per_item, rel=0.6)
    ds = lm_scores.load_scores(path, need=lm_scores.PASSES)
    assert ds["item"].values.tolist() == [3, 7]
    with pytest.raises(ValueError, match="other settings"):
        lm_scores.score_study(lm, ITEMS, name="fake", seed=1, folder=tmp_path)
    with pytest.raises(ValueError, match=r"items \[9\]"):
        lm_scores.load_scores(path, items=[3, 9])


def test_scores_of_other_prompts_are_refused(tmp_path, monkeypatch):
    path = lm_scores.score_study(FakeLM(), ITEMS.iloc[:1], name="fake", seed=0, folder=tmp_path, passes=["listener"])
    monkeypatch.setattr(prompts, "PROMPT_VERSION", "0" * 16)
    with pytest.raises(ValueError, match="prompt version"):
        lm_scores.load_scores(path)


def test_the_paper_variant_is_scored_apart_and_recorded(tmp_path, mirror):
    lm = FakeLM()
    path = lm_scores.score_study(lm, ITEMS.iloc[:1], name="fake", seed=0, folder=tmp_path, n_production=4,
                                 variant="paper", answer_prefix="<answer>", alt_states=[10, 90])
    assert path.name == "fake.paper.nc" and (tmp_path / "fake.paper_clues.csv").exists()
    ds = lm_scores.load_scores(path, need=lm_scores.PASSES)
    assert ds.attrs["prompt_variant"] == "paper" and ds.attrs["prompt_version"] == prompts.prompt_version("paper")
    assert ds.attrs["alt_states"] == "10 90" and ds.attrs["answer_prefix"] == "<answer>"
    assert int(ds["alt_failed"].sum()) + int(ds["utt_mask"].sum()) - 1 <= 2  # two alternatives asked at most
    # the project's file beside it is another file, and a rerun with other alternatives is refused
    lm_scores.score_study(lm, ITEMS.iloc[:1], name="fake", seed=0, folder=tmp_path, passes=["listener"])
    assert (tmp_path / "fake.nc").exists()
    with pytest.raises(ValueError, match="other settings"):
        lm_scores.score_study(lm, ITEMS.iloc[:1], name="fake", seed=0, folder=tmp_path, n_production=4,
                              variant="paper", answer_prefix="<answer>", alt_states=[50])
    with pytest.raises(ValueError, match="variant must be one of"):
        lm_scores.score_study(lm, ITEMS.iloc[:1], name="fake", seed=0, folder=tmp_path, variant="papers")
