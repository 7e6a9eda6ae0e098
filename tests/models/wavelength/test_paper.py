"""The paper's route in one command (models.wavelength.paper) with a scripted stand-in model."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from models.wavelength import paper
from pragmodels.lm import PromptFormat


class FakeLM:
    """Listener guesses near 30 (or no tag, every fifth answer), chain-of-thought guesses with a tagged answer,
    clues from a small pool; scores that prefer low values."""

    identity = "fake:paper"
    prompt_format = PromptFormat.plain()

    def __init__(self) -> None:
        self.requests = 0

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        self.requests += len(continuations)
        return -np.arange(len(continuations), dtype=float) / 5.0 - (hash(prompt) % 7) / 10.0

    def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
        out = []
        for k in range(n):
            r = (self.requests + k) % 5
            if "Target value" in prompt:
                text = ["snow</answer>", "ice", "no clue here", "sauna</answer>", "frost"][r]
                if "step by step" in prompt:
                    text = "First, cold. <answer>" + text
            elif "step by step" in prompt:
                text = f"Thinking. <answer>{20 + 5 * r}</answer> and so on"
            else:
                text = "I guess" if r == 4 else f"{25 + 3 * r}"
            out.append(answer_prefix + text)
        self.requests += n
        return out

    def tokenize(self, text: str) -> list[int]:
        return list(range(len(text.split())))


ARGS = ["--lm", "fake", "--items", "2", "--alt-states", "10", "90", "--answer-prefix", "<answer>", "--n-sample", "4",
        "--n-sample-alt", "2", "--resample", "2", "--n-cot", "3", "--n-production", "4", "--n-speaker-cot", "2"]


def test_dry_run_prints_the_estimate_and_asks_nothing(tmp_path, capsys, monkeypatch, mirror):
    import pragmodels.lm.entry as entry

    monkeypatch.setattr(entry, "open_lm_from_arguments", lambda *a, **k: pytest.fail("an LM was opened"))
    assert paper.paper_lm([*ARGS, "--dry-run", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "sampled listener" in out and "total" in out and "answer_tokens_max" in out
    # 2 items: 2 x (4 + 2 alternatives x 2) sampled guesses
    assert any(line.split()[-3] == "16" for line in out.splitlines() if line.strip().startswith("sampled listener"))
    assert not any(tmp_path.iterdir())


def test_bad_settings_are_one_line_errors(mirror, capsys):
    with pytest.raises(SystemExit):
        paper.paper_lm(["--lm", "fake", "--alt-states", "12", "--dry-run"])
    assert "--alt-states 12: expected states of 0, 5, ..., 100" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.nuts
def test_one_command_elicits_resumes_fits_and_reports(tmp_path, monkeypatch, mirror):
    import pragmodels.lm.entry as entry

    lm = FakeLM()
    monkeypatch.setattr(entry, "open_lm_from_arguments", lambda *a, **k: lm)
    monkeypatch.setattr("models.wavelength.paper_report.SAMPLER",
                        {"num_warmup": 100, "num_samples": 100, "num_chains": 1})
    assert paper.paper_lm([*ARGS, "--out", str(tmp_path)]) == 0
    folder = tmp_path / "fake"
    run = json.loads((folder / "run.json").read_text())
    assert run["settings"]["answer_prefix"] == "<answer>" and run["prompt_variant"] == "paper"
    cot = json.loads((folder / "listener_cot.jsonl.manifest.json").read_text())["settings"]
    assert cot["answer_prefix"] == "" and cot["stop"] == []  # a chain of thought is never begun with the answer
    parse = {r: g for r, g in __import__("pandas").read_csv(tmp_path / "tables" / "parse_fake.csv").groupby("route")}
    assert parse["listener_sample"]["samples"].item() == 2 * 4
    assert parse["listener_sample"]["parse_failures"].item() > 0  # every fifth answer has no number
    metrics = __import__("pandas").read_csv(tmp_path / "tables" / "metrics_fake.csv")
    for name in ("L0 sampled (fixed)", "L0 chain-of-thought (fixed)", "sampled LM-RSA (fitted)",
                 "chain-of-thought L0 (fitted)", "log-prob LM-RSA (fitted)"):
        assert name in set(metrics["listener"]), name
    assert (tmp_path / "figures" / "listeners_fake.png").exists()
    assert "sampled LM-RSA" in (tmp_path / "report.md").read_text()
    before = lm.requests
    assert paper.paper_lm([*ARGS, "--out", str(tmp_path)]) == 0
    assert lm.requests == before  # resumed: nothing asked again


def test_a_samples_only_lm_gets_its_sampled_literal_listeners_and_nothing_is_scored(tmp_path, capsys, monkeypatch,
                                                                                     mirror):
    """semantics 'samples' (a hosted chat model): the estimate lists the sampling steps only, no continuation
    is scored, and the paper's metrics of the sampled and chain-of-thought L0 are written."""
    import pragmodels.lm.entry as entry

    fake = FakeLM()
    fake.score = lambda *a, **k: pytest.fail("a samples-only LM was asked to score")  # type: ignore[method-assign]
    lm = entry.SamplesOnlyLM(fake)
    monkeypatch.setattr(entry, "open_lm_from_arguments", lambda *a, **k: lm)
    args = [*ARGS, "--base-url", "http://127.0.0.1:9/v1", "--server-model", "m", "--semantics", "samples",
            "--out", str(tmp_path)]
    assert paper.paper_lm([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "semantics 'samples'" in out and "log-prob listener" not in out and "production:" not in out
    assert "sampled listener         8" in out  # 2 items x 4 guesses of the real clue (no alternatives)
    assert paper.paper_lm(args) == 0
    table = (tmp_path / "fake" / "sampled_listener_metrics.csv").read_text()
    assert table.startswith("listener,items,") and "L0 sampled,2," in table and "L0 chain-of-thought,2," in table
    run = json.loads((tmp_path / "fake" / "run_sampled.json").read_text())
    assert run["route"] == "sampled" and set(run["steps"]) == {"listener_sample", "listener_cot"}
    assert not (tmp_path / "fake" / "run.json").exists()  # the scored route's report does not read it


def test_a_killed_runs_torn_block_is_dropped_when_the_report_reads_it(tmp_path):
    """The report read every line: a kill's torn last line crashed --report-only (found in review)."""
    from models.wavelength import paper_report
    from pragmodels.lm.elicit import manifest_path

    path = tmp_path / "listener_sample.jsonl"
    manifest_path(path).write_text(json.dumps({"settings": {"n_samples": 2}}))
    whole = [json.dumps({"query_id": "1/0", "sample_id": k}) for k in range(2)]
    path.write_text("\n".join([*whole, json.dumps({"query_id": "2/0", "sample_id": 0}), '{"query_id": "2/0", "sam']))
    assert [(r["query_id"], r["sample_id"]) for r in paper_report.records(path)] == [("1/0", 0), ("1/0", 1)]
    path.write_text("\n".join(['{"query_id": "1/0", "sam', *whole]))
    with pytest.raises(json.JSONDecodeError):  # a torn line before the end is a corrupt file
        paper_report.records(path)


def test_the_scored_step_refuses_a_samples_only_lm_before_any_request(monkeypatch, mirror):
    """It sampled the alternatives, then refused at the first score: paid requests first (found in review)."""
    import pragmodels.lm.entry as entry
    from models.wavelength import score

    fake = FakeLM()
    fake.sample = lambda *a, **k: pytest.fail("a request was sent")  # type: ignore[method-assign]
    monkeypatch.setattr(score, "open_lm_from_arguments", lambda *a, **k: entry.SamplesOnlyLM(fake))
    with pytest.raises(SystemExit) as e:
        score.score_lm(["--lm", "gpt4o", "--base-url", "http://127.0.0.1:9/v1", "--server-model", "m",
                        "--semantics", "samples", "--limit", "1"])
    assert e.value.code == 2
