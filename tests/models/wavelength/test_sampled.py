"""The paper's sampled listeners and speakers with a scripted stand-in model: parse, resample, bin, estimate."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from models.wavelength import prompts, sampled
from pragmodels.lm import PromptFormat


class ScriptedLM:
    """Answers by the attempt's seed: a fixed script of texts, cycled; records what it was asked."""

    identity = "fake:scripted"
    prompt_format = PromptFormat.plain()

    def __init__(self, script):
        self.script, self.calls = list(script), []

    def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
        self.calls.append({"prompt": prompt, "stop": list(stop), "max_tokens": max_tokens, "prefix": answer_prefix})
        return [answer_prefix + self.script[(len(self.calls) - 1) % len(self.script)] for _ in range(n)]


ITEMS = pd.DataFrame({"item": [3, 7], "left": ["Cold", "Quiet"], "right": ["Hot", "Loud"],
                      "clue": ["snow", "library"], "target": [10, 20]})
UTTS = {3: ["snow", "sauna"], 7: ["library"]}


@pytest.mark.parametrize("text, direct, cot", [
    ("<answer>42", 42.0, None),                          # the stop string ate the closing tag
    ("<answer>**37**</answer>", 37.0, 37.0),             # '*' removed
    ("  <answer> 12.5 ", 12.5, None),
    ("I think <answer>80</answer> or <answer>20</answer>", 80.0, 80.0),  # the first tagged text
    ("Step 1 ... so <answer>64</answer>.", 64.0, 64.0),
    ("42", None, None), ("<answer>about 40</answer>", None, None), ("<answer>nan</answer>", None, None),
    ("<answer></answer>", None, None),
])
def test_guesses_parse_by_upstreams_rule(text, direct, cot):
    assert sampled.parse_guess(text) == direct
    assert sampled.parse_guess_cot(text) == cot


def test_clues_parse_by_upstreams_rule():
    assert sampled.parse_clue("<answer>*ice cream*") == "ice cream"
    assert sampled.parse_clue("Let's see. <answer>snowman</answer> done") == "snowman"
    assert sampled.parse_clue("snowman") is None and sampled.parse_clue("<answer> </answer>") is None


def test_paper_prompts_are_upstreams_and_the_project_variant_stays(mirror):
    p = prompts.sample_listener_prompt("Cold", "Hot", "snow", "paper", cot=True)
    assert p.endswith("Scale: Cold (0) to Hot (100).\nClue: snow.\n\nLet's think step by step.")
    assert "(in increments of 5, so the possible values are 0, 5, 10," in prompts.listener_prompt("Cold", "Hot", "snow",
                                                                                                   "paper")
    assert prompts.listener_prompt("Cold", "Hot", "snow") == prompts.listener_prompt("Cold", "Hot", "snow", "project")
    assert prompts.prompt_version("project") == prompts.PROMPT_VERSION != prompts.prompt_version("paper")
    with pytest.raises(ValueError, match="variant must be one of .*got 'papr'"):
        prompts.speaker_prompt("Cold", "Hot", 10, "papr")


def test_a_sampled_listener_resamples_until_it_parses_and_counts_by_state(tmp_path, mirror):
    lm = ScriptedLM(["no tag", "<answer>12", "<answer>97", "<answer>2.5", "<answer>150"])
    qs = sampled.listener_queries(ITEMS, UTTS, variant="paper", cot=False)
    assert [q.id for q in qs] == ["3/0", "3/1", "7/0"] and "clue" not in qs[0].fields
    rec = sampled.ask(lm, qs, kind="listener_sample", n_samples=4, max_tokens=8, progress=tmp_path / "s.jsonl",
                      seed=1, resample=2)
    assert all(c["stop"] == ["</answer>"] and c["max_tokens"] == 8 for c in lm.calls)
    assert sum(r["attempts"] for r in rec) == len(lm.calls) > 12  # the unparsed answers were asked again
    assert all(r["valid"] for r in rec if r["attempts"] < 3)
    c = sampled.counts(rec, [3, 7], 3)
    assert c.shape == (2, 3, 21) and c.sum() == sum(r["valid"] for r in rec)
    # binned as the human guesses: 12 -> 10, 97 -> 95, 2.5 -> 5 (a tie to the larger), 150 -> 100 (the end)
    values = [r["value"] for r in rec if r["valid"]]
    assert set(values) <= {12.0, 97.0, 2.5, 150.0}
    assert set(np.nonzero(c.sum((0, 1)))[0]) <= {2, 19, 1, 20}
    n = len(lm.calls)
    sampled.ask(lm, qs, kind="listener_sample", n_samples=4, max_tokens=8, progress=tmp_path / "s.jsonl", seed=1,
                resample=2)
    assert len(lm.calls) == n  # resumed: nothing asked twice


def test_the_chain_of_thought_routes_have_no_stop_and_keep_the_prefix(tmp_path, mirror):
    lm = ScriptedLM(["Step by step: cold. <answer>15</answer> then more"])
    rec = sampled.ask(lm, sampled.listener_queries(ITEMS, UTTS, variant="paper", cot=True, real_only=True),
                      kind="listener_cot", n_samples=2, max_tokens=64, progress=tmp_path / "c.jsonl", seed=0)
    assert [r["value"] for r in rec] == [15.0] * 4 and lm.calls[0]["stop"] == []
    assert lm.calls[0]["prompt"].endswith(prompts.COT_SUFFIX)
    lm = ScriptedLM(["snow</answer>"])
    rec = sampled.ask(lm, sampled.speaker_queries(ITEMS, variant="paper", cot=False), kind="speaker", n_samples=1,
                      max_tokens=8, progress=tmp_path / "sp.jsonl", seed=0, answer_prefix="<answer>", resample=0)
    assert [r["value"] for r in rec] == ["snow", "snow"] and lm.calls[0]["prefix"] == "<answer>"
    manifest = json.loads((tmp_path / "sp.jsonl.manifest.json").read_text())
    assert manifest["settings"]["answer_prefix"] == "<answer>" and manifest["settings"]["parse"] == "wavelength.speaker"


def test_the_plan_counts_requests_and_tokens(mirror):
    qs = sampled.listener_queries(ITEMS, UTTS, variant="paper", cot=False)
    plan = sampled.plan({"listener_sample": qs}, {"listener_sample": 32}, {"listener_sample": 16})
    row = plan.iloc[0]
    assert row["requests"] == 3 * 32 and row["answer_tokens_max"] == 3 * 32 * 16
    assert row["prompt_tokens"] == round(sum(len(q.prompt) for q in qs) * 32 / 4)
