"""DRInQ for any LM in one command (issue 36 item 4), with a scripted stand-in model."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from models.implicature import lm_outputs, paper, prompts
from pragmodels.lm import PromptFormat

IDENTITY = "openai:http://127.0.0.1:1/v1|scripted"


class KilledLM(Exception):
    """Raised by the scripted model to stand for a kill."""


class ScriptedLM:
    """Scores prefer option B; samples give a valid JSON answer; ``kill_after`` scores, it dies."""

    identity = IDENTITY
    prompt_format = PromptFormat("chat", "<u>", "</u><a>", "</a>")

    def __init__(self, kill_after: int | None = None) -> None:
        self.scored, self.kill_after = [], kill_after

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        if self.kill_after is not None and len(self.scored) >= self.kill_after:
            raise KilledLM("killed")
        self.scored.append(prompt)
        # B is preferred; a fixed jitter by prompt and option (crc32, not the salted hash) keeps every model's
        # likelihood varying with its parameters, as PSIS-LOO needs
        return np.array([(-1.0 if c.strip().endswith(("B", "B1")) or c.startswith("B") else -2.0)
                         - (zlib.crc32((prompt + c).encode()) % 1000) / 1000 for c in continuations])

    def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
        return ['{"selected_option": "B. x"}'] * n

    def tokenize(self, text: str) -> list[int]:
        return list(range(len(text.split())))


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    """The LM options open the scripted model, behind a fresh score cache."""
    from pragmodels.lm import entry

    box: dict = {}
    monkeypatch.setenv("PRAGMODELS_LM_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setattr(entry, "lm_from_arguments", lambda args, n_ctx: (box["lm"], None, {"lm": args.lm}))
    return box


ARGS = ["--lm", "s", "--base-url", "http://127.0.0.1:1/v1", "--server-model", "scripted", "--limit", "3",
        "--conditions", "vanilla", "--passes", "interpretations", "literal", "score", "--no-progress"]


def test_one_command_estimates_first_resumes_after_a_kill_and_fits(scripted, tmp_path, monkeypatch, mirror, capsys):
    """Score (resumable), write the config of this LM alone, and run the study on it; the estimate
    comes before any request."""
    runs = []
    monkeypatch.setattr("pragmodels.runs.study.run_study",
                        lambda config, **kw: runs.append((config, kw)) or tmp_path / "run")
    scripted["lm"] = ScriptedLM(kill_after=5)
    with pytest.raises(KilledLM):
        paper.paper_lm([*ARGS, "--out", str(tmp_path / "lms")])
    first = capsys.readouterr().out
    assert "estimate, total: 18 requests" in first  # 6 + 3 + 9 scoring prompts, printed before the kill
    assert not runs
    scripted["lm"] = lm = ScriptedLM()
    assert paper.paper_lm([*ARGS, "--out", str(tmp_path / "lms")]) == 0
    assert len(lm.scored) == 18 - 5  # the 5 prompts scored before the kill come from the cache
    folder = tmp_path / "lms" / "s"
    lit = lm_outputs.load_outputs(folder / "lm_outputs" / "s_literal.csv", kind="literal")
    assert len(lit) == 3 and set(lit["prompt_version"]) == {prompts.LITERAL_VERSION}
    assert lm_outputs.recorded_identity(folder / "lm_outputs" / "s_literal.csv") == IDENTITY
    manifest = json.loads(lm_outputs.manifest_of(folder / "lm_outputs" / "s_literal.csv").read_text())
    assert manifest["prompt_version"] == prompts.LITERAL_VERSION and manifest["rows"] == 3 and manifest["wall_s"] >= 0
    (config, kw), = runs
    cfg = json.loads(config.read_text())
    assert list(cfg["lms"]) == ["s"] and cfg["lms"]["s"]["outputs"] == str((folder / "lm_outputs").resolve())
    assert cfg["lms"]["s"]["model"] == "scripted" and kw["out"] == folder / "full"
    # the study then reads this LM alone, and its entry is the LM its tables record
    from models.implicature.config import Config
    from models.implicature.study import check_identities

    paths = check_identities(Config.model_validate(cfg).lms)["s"]
    assert set(paths) == {"interpretations", "literal", "score"}


def test_the_literal_reading_is_not_the_pragmatic_one():
    item = pd.Series({"question": "Do you need a ride?", "context": "c"})
    lit = prompts.LITERAL_TEMPLATE.format(**item)
    assert "literally" in lit and "mean" not in lit
    assert lm_outputs.FIT_TEMPLATE.format(**item) != lit
    assert prompts.PROMPT_VERSION == "740ae5488fd62e11" and prompts.LITERAL_VERSION != prompts.PROMPT_VERSION


def test_without_the_fit_tables_it_stops_after_the_passes(scripted, tmp_path, monkeypatch):
    """An LM given only some passes (a generated-only run) gets its tables, and no study run that would fail."""
    monkeypatch.setattr("pragmodels.runs.study.run_study", lambda *a, **k: pytest.fail("no fit without the tables"))
    scripted["lm"] = ScriptedLM()
    args = [*ARGS[: ARGS.index("--passes")], "--passes", "literal", "--no-progress", "--out", str(tmp_path / "lms")]
    assert paper.paper_lm(args) == 0
    assert (tmp_path / "lms" / "s" / "lm_outputs" / "s_literal.csv").is_file()


@pytest.mark.slow
@pytest.mark.nuts
def test_one_command_scores_fits_and_reports(scripted, tmp_path, mirror):
    """The whole command with the study's own quick run (no stand-in for it): passes, this LM's config, the
    listener fits by NUTS and the report."""
    scripted["lm"] = ScriptedLM()
    rc = paper.paper_lm([*ARGS, "--mode", "quick", "--out", str(tmp_path / "lms")])
    assert rc == 0
    run = tmp_path / "lms" / "s" / "quick"
    assert "7 listener models fitted by NUTS to 3 items" in (run / "report.md").read_text()
    assert json.loads((run / "run.json").read_text())["fits"]


@pytest.mark.slow
@pytest.mark.lm
@pytest.mark.subprocess
def test_one_command_generates_through_a_real_server(tmp_path, monkeypatch, mirror, capsys):
    """SmolLM2 behind llama_cpp.server, 2 items, vanilla only, the paper's reading: generated JSON answers through
    the chat API, counted valid / truncated / malformed, with the server's identity; no fit (no scored tables).
    (Scoring goes through this server only for models whose prompts begin with the BOS token: SmolLM2's echoed
    log-probs are shifted by one token and refused, tests/lm/test_openai_http.py; Gemma's echo, at 1 thread,
    took over 120 s a request in a probe. A server that scores, vLLM, gives prompt_logprobs.)"""
    from models.implicature import generate
    from pragmodels.lm import smollm2_path
    from tests.lm.conftest import start_server

    monkeypatch.setenv("PRAGMODELS_LM_CACHE", str(tmp_path / "cache.sqlite"))
    server = start_server("--n_ctx", "2048", "--model_alias", "smollm2")
    url = next(server)
    try:
        rc = paper.paper_lm(["--lm", "s", "--base-url", url, "--server-model", "smollm2", "--chat-template",
                             f"gguf:{smollm2_path()}", "--limit", "2", "--conditions", "vanilla", "--passes",
                             "generate", "--no-progress", "--mode", "quick", "--out", str(tmp_path / "lms")])
    finally:
        server.close()
    assert rc == 0
    out = capsys.readouterr().out
    assert "estimate" in out and "no fit" in out
    tables = list((tmp_path / "lms" / "s" / "lm_outputs").glob("*generated*.csv"))
    assert len(tables) == 1
    table, manifest = generate.load_generated(tables[0])
    assert len(table) > 0 and manifest["lm_identity"] == f"openai:{url}|smollm2"
    assert set(manifest["status_counts"]) <= {"valid", "truncated", "malformed"}
