"""DRInQ as the paper reads it: generated JSON answers, classified, with a scripted stand-in model."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from models.implicature import generate, lm_outputs, prompts, study
from pragmodels.lm import PromptFormat

ITEMS = pd.DataFrame({"question": ["Q1?", "Q2?"], "context": ["c1", "c2"],
                      **{f"option_{L}": [f"{L}1", f"{L}2"] for L in prompts.LETTERS},
                      "consensus": ["B", "C"], "implied_letter": ["B", None]})
#: a reasoning-first answer that parses, one cut at the cap inside its reasoning, and prose
VALID = '{"reasoning": "1. It asks X. 2. The context says Y.", "selected_option": "B. B1"}'
CUT = '{"reasoning": "1. It asks whether the speaker owns a pencil. 2. The context'
PROSE = "I think the speaker is being nice."


class ScriptedLM:
    """Answers in turn from a script; ``tokenize`` counts words (so the cap is reached by length)."""

    identity = "openai:http://127.0.0.1:1/v1|scripted"

    def __init__(self, script: list[str], plain: bool = False) -> None:
        self.script, self.calls = list(script), []
        self.prompt_format = PromptFormat.plain() if plain else PromptFormat("chat", "<u>", "</u><a>", "</a>")

    def tokenize(self, text: str) -> list[int]:
        return list(range(len(text.split())))

    def score(self, prompt, continuations, *, length_normalize=False):  # pragma: no cover - not used
        raise AssertionError("the generated reading never scores")

    def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
        self.calls.append({"prompt": prompt, "max_tokens": max_tokens, "stop": tuple(stop)})
        return [self.script[(len(self.calls) - 1) % len(self.script)]]


def test_reasoning_conditions_ask_for_the_reasoning_before_the_answer():
    ex = prompts.draw_examples(0, 1)
    for cond in prompts.CONDITIONS:
        text = prompts.prompt(ITEMS.iloc[0], cond, "generate", ex)
        fmt = text.split("## Output Format", 1)[1].split("## Examples", 1)[0]
        first = "reasoning" if cond in prompts.REASON_FIRST else ("explanation" if cond == "explanation"
                                                                   else "selected_option")
        assert fmt.index(f'"{first}"') == min(fmt.index(f'"{k}"') for k in ("selected_option", "reasoning",
                                                                                "explanation") if f'"{k}"' in fmt)
        shots = [json.loads(line.split("Response: ", 1)[1]) for line in text.splitlines() if line.startswith("Response: ")]
        assert len(shots) == 3 and all(next(iter(s)) == first for s in shots)
    # the scored and sampled readings' texts are as they were: their outputs stay readable
    assert prompts.PROMPT_VERSION == "740ae5488fd62e11" and prompts.GENERATE_VERSION != prompts.PROMPT_VERSION


def test_classify_valid_truncated_malformed():
    opts = [f"{L}1" for L in prompts.LETTERS]
    assert generate.classify(VALID, 12, 256, opts) == ("valid", "B")
    assert generate.classify('{"reasoning": "r", "selected_option": "B1"}', 5, 256, opts) == ("valid", "B")
    assert generate.classify(CUT, 256, 256, opts) == ("truncated", "")
    assert generate.classify(CUT, 255, 256, opts) == ("truncated", "")  # a token fewer when tokenized again
    assert generate.classify(CUT, 40, 256, opts) == ("malformed", "")  # ended by itself, unclosed
    assert generate.classify(PROSE, 256, 256, opts) == ("truncated", "")
    assert generate.classify(PROSE, 8, 256, opts) == ("malformed", "")
    # a JSON object without a valid option, and a selected_option read from broken JSON, are not valid
    assert generate.classify('{"selected_option": "F. none"}', 6, 256, opts) == ("malformed", "")
    assert generate.classify('{"selected_option": "B. B1", "explanation": "x}', 9, 256, opts) == ("malformed", "")
    # no tokenizer: an unclosed object at the end reads as cut by the cap
    assert generate.classify(CUT, None, 256, opts) == ("truncated", "")
    assert generate.classify(PROSE, None, 256, opts) == ("malformed", "")


def test_generate_classifies_counts_apart_and_resumes(tmp_path):
    lm = ScriptedLM([VALID, CUT + " x" * 300, PROSE])
    recs, timing = generate.generate(lm, ITEMS, conditions=["vanilla", "reasoning"], n_draws=1, seed=3,
                                     progress_dir=tmp_path)
    assert [c["max_tokens"] for c in lm.calls] == [generate.CAPS["vanilla"]] * 2 + [generate.CAPS["reasoning"]] * 2
    assert all(c["stop"] == () for c in lm.calls)  # a chat model ends at its end of turn
    table = generate.generated_table(recs, lm_name="scripted")
    assert table["status"].tolist() == ["valid", "truncated", "malformed", "valid"]
    assert table["letter"].tolist() == ["B", "", "", "B"]
    assert "reasoning" in timing and "total" in timing
    # resumed: nothing asked again, the same records
    again, _ = generate.generate(lm, ITEMS, conditions=["vanilla", "reasoning"], n_draws=1, seed=3,
                                 progress_dir=tmp_path)
    assert len(lm.calls) == 4 and [r["status"] for r in again] == table["status"].tolist()
    path = generate.write_generated(table, tmp_path / "scripted_generated.csv", identity=lm.identity, n_draws=1,
                                    seed=3, items="both", timing=timing, prompt_tokens=10)
    back, manifest = generate.load_generated(path)
    assert manifest["lm_identity"] == lm.identity and manifest["status_counts"] == {"valid": 2, "truncated": 1,
                                                                                     "malformed": 1}
    assert "raw_response" not in back.columns and back["status"].tolist() == table["status"].tolist()


def test_a_plain_text_model_stops_at_the_end_of_its_line(tmp_path):
    lm = ScriptedLM([VALID], plain=True)
    generate.generate(lm, ITEMS.iloc[:1], conditions=["all"], n_draws=1, seed=0, progress_dir=tmp_path)
    assert lm.calls[0]["stop"] == ("\n",)


def test_generated_accuracy_counts_statuses_and_scores_invalid_answers_wrong():
    items = ITEMS.copy()
    items["item_id"] = lm_outputs.item_ids(items)
    table = pd.DataFrame({"condition": ["reasoning"] * 2, "draw": [0, 0], "item_id": items["item_id"],
                          "status": ["valid", "truncated"], "letter": ["B", ""], "answer_tokens": [20, 256]})
    acc = study.generated_accuracy("x", table, items, n_boot=200, seed=0)
    r = acc.iloc[0]
    assert (r["valid"], r["truncated"], r["malformed"], r["valid_correct"]) == (1, 1, 0, 1)
    assert r["mean"] == 0.5


@pytest.mark.slow
@pytest.mark.lm
@pytest.mark.subprocess
def test_one_reasoning_answer_from_a_real_server(tmp_path):
    """SmolLM2 behind llama_cpp.server: one reasoning-first answer, its tokens counted by the server's
    tokenizer, classified, and its table's manifest naming the server's model."""
    from models.implicature import score
    from pragmodels.datasets import load_drinq
    from pragmodels.lm import smollm2_path
    from tests.lm.conftest import start_server

    items = load_drinq().iloc[lm_outputs.item_order(231)[:1]].reset_index(drop=True)
    server = start_server("--n_ctx", "2048", "--model_alias", "smollm2")
    url = next(server)
    try:
        rc = score.score_lm(["--lm", "s", "--base-url", url, "--server-model", "smollm2", "--chat-template",
                             f"gguf:{smollm2_path()}", "--passes", "generate", "--conditions", "reasoning",
                             "--generate-limit", "1", "--generate-draws", "1", "--progress-dir", str(tmp_path / "p"),
                             "--out", str(tmp_path)])
    finally:
        server.close()
    assert rc == 0
    table, manifest = generate.load_generated(tmp_path / "s_generated.csv")
    assert manifest["lm_identity"] == f"openai:{url}|smollm2" and manifest["caps"] == {"reasoning": 256}
    r = table.iloc[0]
    assert r["item_id"] == lm_outputs.item_ids(items)[0] and 0 < r["answer_tokens"] <= 256 + 1
    assert r["status"] == "valid" or (r["status"] == "truncated") == (r["answer_tokens"] >= 256 - generate.CAP_SLACK)


def test_the_token_counter_finds_the_model_behind_every_wrapper():
    """SamplesOnlyLM(CachedLM(model)): one level of unwrapping reached the cache, which cannot count (review)."""
    from types import SimpleNamespace

    inner = SimpleNamespace(tokenize=lambda text: text.split(), model="a-server-model-name")
    wrapped = SimpleNamespace(model=SimpleNamespace(model=inner))
    count = generate.token_counter(wrapped)
    assert count is not None and count("three words here") == 3


def test_the_findings_say_why_accuracy_is_below_chance_from_the_numbers():
    """'Below chance' was always put down to invalid answers counted wrong, and the closing sentence spoke of a
    model 'this small' whatever was run (found in review)."""
    row = dict(lm="x", condition="vanilla", n_item=20, n_run=1, sd=float("nan"), answer_tokens_mean=9.0)
    invalid = pd.DataFrame([{**row, "mean": 0.05, "lo": 0.0, "hi": 0.15, "valid": 2, "truncated": 0, "malformed": 18,
                             "valid_correct": 1}])
    avoids = pd.DataFrame([{**row, "mean": 0.05, "lo": 0.0, "hi": 0.15, "valid": 20, "truncated": 0, "malformed": 0,
                            "valid_correct": 1}])
    assert "(as its answers that are not valid count as wrong" in study.generated_findings(invalid)
    text = study.generated_findings(avoids)
    assert "(its valid answers too pick the consensus less often than chance)" in text
    assert "at most 20 answers per LM and condition" in text and "this small" not in text
