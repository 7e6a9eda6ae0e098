"""The DRInQ LM step and the study's accuracy tables with a deterministic stand-in model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from models.implicature import lm_outputs, prompts, study
from pragmodels.lm import PromptFormat


class FakeLM:
    """Scores prefer the letter B (or, in explanation continuations, the last letter B); samples
    cycle through a valid answer, a broken JSON and prose."""

    identity = "fake:drinq"
    prompt_format = PromptFormat.plain()

    def __init__(self) -> None:
        self.samples: list[dict] = []

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        return np.array([-1.0 if c.endswith("B") else -3.0 - 0.1 * len(c) for c in continuations])

    def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
        self.samples.append({"seed": seed, "prefix": answer_prefix, "stop": tuple(stop)})
        pool = ['{"selected_option": "C. x", "explanation": "y"}', '{"selected_option": "A. x", "expl', "I pick C"]
        return [answer_prefix + (" it helps" if answer_prefix else pool[seed % 3]) for _ in range(n)]


ITEMS = pd.DataFrame({"question": ["Q1?", "Q2?", "Q1?"], "context": ["c1", "c2", "c1"],
                      **{f"option_{L}": [f"{L}1", f"{L}2", f"{L}3"] for L in prompts.LETTERS},
                      "consensus": ["B", "C", "A"], "implied_letter": ["B", None, "D"]})


def test_item_ids_are_stable_and_tell_apart_items_with_one_question_and_context():
    ids = lm_outputs.item_ids(ITEMS)
    assert len(set(ids)) == 3 and ids == lm_outputs.item_ids(ITEMS.copy())
    with pytest.raises(ValueError, match=r"positions \[0, 1\]"):
        lm_outputs.item_ids(pd.concat([ITEMS.iloc[:1]] * 2))


def test_real_item_ids_are_unique(mirror):
    from pragmodels.datasets import load_drinq

    assert len(set(lm_outputs.item_ids(load_drinq()))) == 231


def test_score_letters_rows_and_the_explanation_path():
    lm = FakeLM()
    rows = lm_outputs.score_letters(lm, ITEMS, lm_name="fake", conditions=["vanilla", "explanation"], n_draws=2, seed=0)
    assert len(rows) == 2 * 2 * 3
    assert {r["choice"] for r in rows} == {"B"}
    assert all(r["prompt_version"] == prompts.PROMPT_VERSION and len(r["prompt_sha"]) == 16 for r in rows)
    expl = [r for r in rows if r["condition"] == "explanation"]
    assert all(r["explanation_chars"] > 0 for r in expl)
    assert len(lm.samples) == len(expl) and all(s["prefix"] == "Explanation:" for s in lm.samples)
    assert all(s["stop"] == prompts.EXPLANATION_STOP for s in lm.samples)
    # no item text in any row
    texts = set(ITEMS[["question", "context", *(f"option_{L}" for L in prompts.LETTERS)]].stack())
    assert not any(str(v) in texts for r in rows for v in r.values())


def test_samples_are_parsed_and_malformed_ones_kept(tmp_path):
    rows = lm_outputs.sample_answers(FakeLM(), ITEMS, lm_name="fake", conditions=["vanilla"], n_draws=3, seed=0)
    assert len(rows) == 9
    df = pd.DataFrame(rows)
    assert set(df["letter"]) <= {"", "A", "C"} and (df["letter"] == "").sum() >= 1
    path = lm_outputs.save_rows(rows, tmp_path / "fake_sample.csv")
    back = lm_outputs.load_outputs(path, kind="sample")
    assert len(back) == 9 and (back["letter"] == "").sum() == (df["letter"] == "").sum()


def test_load_outputs_refuses_other_prompts_duplicates_and_bad_letters(tmp_path):
    rows = lm_outputs.score_letters(FakeLM(), ITEMS, lm_name="fake", conditions=["vanilla"], n_draws=1, seed=0)
    p = tmp_path / "s.csv"
    lm_outputs.save_rows([dict(rows[0], prompt_version="0000")] + rows[1:], p)
    with pytest.raises(ValueError, match="prompt version '0000'"):
        lm_outputs.load_outputs(p, kind="score")
    lm_outputs.save_rows(rows + rows[:1], p)
    with pytest.raises(ValueError, match="repeats the key"):
        lm_outputs.load_outputs(p, kind="score")
    lm_outputs.save_rows([dict(rows[0], choice="F")] + rows[1:], p)
    with pytest.raises(ValueError, match="column 'choice', row 0: value 'F'"):
        lm_outputs.load_outputs(p, kind="score")
    lm_outputs.save_rows([{k: v for k, v in r.items() if k != "logp_C"} for r in rows], p)
    with pytest.raises(ValueError, match="'logp_C' is missing"):
        lm_outputs.load_outputs(p, kind="score")
    with pytest.raises(FileNotFoundError, match=r"python -m models\.implicature\.score"):
        lm_outputs.load_outputs(tmp_path / "none.csv", kind="score")


def test_accuracy_tables_score_malformed_answers_as_wrong():
    items = ITEMS.assign(item_id=lm_outputs.item_ids(ITEMS))
    lm = FakeLM()
    scores = pd.DataFrame(lm_outputs.score_letters(lm, ITEMS, lm_name="fake", conditions=["vanilla", "reasoning"],
                                           n_draws=3, seed=0))
    samples = pd.DataFrame(lm_outputs.sample_answers(lm, ITEMS, lm_name="fake", conditions=["vanilla", "reasoning"],
                                             n_draws=3, seed=0))
    acc, pair = study.accuracy_tables("fake", scores, samples, items, n_boot=200, seed=0)
    cons = acc[acc["label"] == "consensus"].set_index(["reading", "condition"])
    # always B: right on item 0 only
    assert cons.loc[("scored letters", "vanilla"), "mean"] == pytest.approx(1 / 3)
    want = np.mean([[s == g for s, g in zip(samples.loc[(samples.condition == "vanilla") & (samples.draw == d),
                                                                "letter"], ["B", "C", "A"])] for d in range(3)])
    assert cons.loc[("sampled JSON", "vanilla"), "mean"] == pytest.approx(want)
    assert cons.loc[("sampled JSON", "vanilla"), "malformed"] == (samples[samples.condition == "vanilla"].letter == "").sum()
    gen = acc[acc["label"] == "generated label"].set_index(["reading", "condition"])
    assert gen.loc[("scored letters", "vanilla"), "mean"] == pytest.approx(1 / 3)  # item 0's label is B
    assert set(pair["condition"]) == {"reasoning"} and set(pair["reading"]) == {"scored letters", "sampled JSON"}
    assert pair.set_index("reading").loc["scored letters", "diff"] == 0.0
