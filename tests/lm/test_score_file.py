"""``pragmodels lm score``: a prompt file scored against SmolLM2 into a table, through the cache.

References: :meth:`LlamaCppLM.score` on the same prompts (the table must hold its numbers), the
input file's own sha256, and a model whose ``score`` raises (a rerun must not reach it).
"""

from __future__ import annotations

import csv
import hashlib
import json
import socket
from pathlib import Path

import numpy as np
import pytest

from pragmodels.cli import main
from pragmodels.lm import LlamaCppLM
from pragmodels.lm.score_file import COLUMNS, read_prompts

PROMPTS = [
    {"id": "sum", "prompt": "2 + 2 =", "continuations": ["4", "5", "<answer>4</answer>"]},
    {"id": "sky", "prompt": "The sky is", "continuations": ["blue", "green"], "length_normalize": True},
]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def _prompt_file(tmp_path: Path) -> Path:
    return _write(tmp_path / "prompts.jsonl", [json.dumps(p) for p in PROMPTS])


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pragmodels: error: "), err
    return lines[0]


def test_table_equals_llamacpp_scores_and_a_rerun_computes_nothing(smollm2, tmp_path, capsys, monkeypatch):
    src = _prompt_file(tmp_path)
    out, cache = tmp_path / "out" / "scores.csv", tmp_path / "cache.sqlite"
    args = ["lm", "score", str(src), "--model", "smollm2", "--n-ctx", "512", "--out", str(out),
            "--cache", str(cache), "--no-progress"]
    assert main(args) == 0
    assert "scored 5 continuations of 2 prompts" in capsys.readouterr().out
    rows = _read(out)
    assert list(rows[0]) == list(COLUMNS)
    assert [(r["id"], int(r["continuation_index"]), r["continuation"]) for r in rows] == [
        (p["id"], j, c) for p in PROMPTS for j, c in enumerate(p["continuations"])]
    expected = np.concatenate([smollm2.score(p["prompt"], p["continuations"],
                                             length_normalize=p.get("length_normalize", False)) for p in PROMPTS])
    np.testing.assert_allclose([float(r["logprob"]) for r in rows], expected, rtol=0, atol=1e-6)
    assert {r["model"] for r in rows} == {smollm2.identity} and {r["prompt_format"] for r in rows} == {"chat"}
    assert [r["length_normalize"] for r in rows] == ["False"] * 3 + ["True"] * 2
    side = json.loads((out.parent / "scores.csv.json").read_text())
    assert side["model"]["identity"] == smollm2.identity and side["model"]["n_ctx"] == 512
    assert side["prompt_format"]["end"] == smollm2.prompt_format.end == "<|im_end|>"
    assert side["input"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert side["cache"]["computed"] == 5 and side["cache"]["from_cache"] == 0 and side["pragmodels_version"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["scores.csv", "scores.csv.json"]  # no temp files
    table = out.read_bytes()

    # the rerun reads every score from the cache: the model is loaded but never asked to score
    def refuse(*a, **k):
        raise AssertionError("the model was asked to score on a rerun")

    monkeypatch.setattr(LlamaCppLM, "score", refuse)
    assert main(args) == 0
    assert "(5 from the cache)" in capsys.readouterr().out
    assert out.read_bytes() == table
    assert json.loads((out.parent / "scores.csv.json").read_text())["cache"] | {"path": ""} == {
        "path": "", "from_cache": 5, "computed": 0}


@pytest.mark.lm
def test_a_failed_run_leaves_the_earlier_table(tmp_path, capsys):
    """A prompt longer than the context, after a good one: one line, exit 2, the old table kept."""
    src = _write(tmp_path / "p.jsonl", [json.dumps(PROMPTS[0]),
                                        json.dumps({"id": "long", "prompt": "word " * 600, "continuations": ["a"]})])
    out = tmp_path / "scores.csv"
    out.write_text("earlier table\n")
    # one thread (tests/lm/conftest.py says why); the table test keeps the default two
    assert main(["lm", "score", str(src), "--model", "smollm2", "--n-ctx", "512", "--threads", "1", "--out", str(out),
                 "--no-cache", "--no-progress"]) == 2
    line = _error_line(capsys)
    assert "prompt 'long' (line 2):" in line and "do not fit the context window n_ctx = 512" in line
    assert out.read_text() == "earlier table\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl", "scores.csv"]


@pytest.mark.parametrize("lines, where, problem", [
    (['{"id": "a", "prompt": "x", "continuations": ["y"]}', '{"id": "b", "prompt": "x" "continuations": []}'],
     "line 2", "not valid JSON"),
    (['{"id": "a", "continuations": ["y"]}'], "line 1", "required key 'prompt' missing"),
    (['', '{"id": "a", "prompt": "x", "continuations": []}'], "line 2", "continuations is empty"),
    (['{"id": "a", "prompt": "x", "continuations": ["y", 3]}'], "line 1", "continuations[1] = 3; expected a non-empty string"),
    (['{"id": "a", "prompt": "x", "continuations": "y"}'], "line 1", "expected a list of strings"),
    (['{"id": "a", "prompt": "x", "continuations": ["y"], "length_normalise": true}'], "line 1",
     "unknown key 'length_normalise'"),
    (['{"id": "a", "prompt": "x", "continuations": ["y"]}', '{"id": "a", "prompt": "z", "continuations": ["y"]}'],
     "line 2", "id 'a' is already used on line 1"),
    (['{"id": "a", "prompt": "x", "continuations": ["y"]}', "[" * 100_000 + "]" * 100_000],  # issue 33, item 4
     "line 2", "not valid JSON (nested more than"),
])
def test_malformed_lines_are_one_line_errors(lines, where, problem, tmp_path, capsys):
    src = _write(tmp_path / "bad.jsonl", lines)
    assert main(["lm", "score", str(src), "--model", "smollm2", "--out", str(tmp_path / "s.csv")]) == 2
    line = _error_line(capsys)
    assert f"{src}, {where}: " in line and problem in line
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize("model, problem", [
    ("missing.gguf", "does not exist (--model takes a .gguf path or a bundled model: smollm2, gemma3)"),
    ("prompts.jsonl", "is not a GGUF file"),
])
def test_a_missing_or_non_gguf_model_is_a_one_line_error(model, problem, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _prompt_file(tmp_path)
    assert main(["lm", "score", "prompts.jsonl", "--model", model, "--out", "s.csv", "--no-cache"]) == 2
    assert problem in _error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prompts.jsonl"]


def test_a_server_that_is_down_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async def no_wait(seconds: float) -> None:
        pass

    monkeypatch.setattr("pragmodels.lm.openai_http._sleep", no_wait)  # no retry back-off
    src = _prompt_file(tmp_path)
    assert main(["lm", "score", str(src), "--base-url", f"http://127.0.0.1:{port}", "--server-model", "m",
                 "--prompt-format", "plain", "--out", str(tmp_path / "s.csv"), "--no-cache", "--no-progress"]) == 2
    assert "cannot connect" in _error_line(capsys)
    # in-process settings are refused
    assert main(["lm", "score", str(src), "--base-url", "http://x", "--prompt-format", "plain", "--n-ctx", "64",
                 "--out", str(tmp_path / "s.csv")]) == 2
    assert "--n-ctx sets the in-process model" in _error_line(capsys)


def test_a_server_scores_in_the_gguf_chat_format_through_the_cache(server_url, smollm2, tmp_path, capsys):
    """Issue 35, items 3, 4, 8: a real server, the template from the GGUF file (recorded in the sidecar),
    the prompt's requests in flight at once, equal to the in-process scores; a rerun asks the server nothing."""
    src = _write(tmp_path / "p.jsonl", [json.dumps(PROMPTS[0])])
    out, cache = tmp_path / "s.csv", tmp_path / "c.sqlite"
    args = ["lm", "score", str(src), "--base-url", server_url, "--server-model", "smollm2", "--model", "smollm2",
            "--out", str(out), "--cache", str(cache), "--no-progress"]
    assert main(args) == 0
    got = np.array([float(r["logprob"]) for r in _read(out)])
    np.testing.assert_allclose(got, smollm2.score(PROMPTS[0]["prompt"], PROMPTS[0]["continuations"]), atol=1e-3)
    side = json.loads((tmp_path / "s.csv.json").read_text())
    assert side["prompt_format"]["source"].startswith("gguf:") and side["model"]["score_api"] == "auto"
    assert main(args) == 0 and "3 from the cache" in capsys.readouterr().out


def test_the_command_sends_openai_api_key_as_its_help_says(monkeypatch):
    """pragmodels lm score documents $OPENAI_API_KEY as the server's key; an LM entry sends a key only from the
    variable it names (issue 35, item 2)."""
    from pragmodels.lm.entry import LMEntry
    from pragmodels.lm.score_file import open_model

    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert open_model(base_url="http://127.0.0.1:9", server_model="m", prompt_format="plain").api_key_env == \
        "OPENAI_API_KEY"
    assert LMEntry(backend="openai", base_url="http://127.0.0.1:9/v1", model="m").open().api_key_env is None
    monkeypatch.delenv("OPENAI_API_KEY")
    assert open_model(base_url="http://127.0.0.1:9", server_model="m", prompt_format="plain").api_key_env is None


def test_a_server_that_renders_no_template_is_a_one_line_error(server_url, tmp_path, capsys):
    """Issue 35, item 3: a server and no template source: the server is asked for its own template;
    llama-cpp-python's cannot render one, and the command stops before scoring anything as plain text."""
    src = _prompt_file(tmp_path)
    assert main(["lm", "score", str(src), "--base-url", server_url, "--server-model", "m", "--out",
                 str(tmp_path / "s.csv"), "--no-cache"]) == 2
    line = _error_line(capsys)
    assert "renders no chat template" in line and "--prompt-format plain" in line
    assert not (tmp_path / "s.csv").exists()


def test_output_names_are_checked_before_a_model_is_loaded(tmp_path, capsys):
    src = _prompt_file(tmp_path)
    assert main(["lm", "score", str(src), "--model", "missing.gguf", "--out", str(tmp_path / "s.txt")]) == 2
    assert "expected a .csv or .parquet file name" in _error_line(capsys)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert main(["lm", "score", str(src), "--model", "missing.gguf", "--out", str(tmp_path / "s.parquet")]) == 2
        assert "writing Parquet needs pyarrow" in _error_line(capsys)


def test_read_prompts_ids_blank_lines_and_defaults(tmp_path):
    src = _write(tmp_path / "p.jsonl", ['{"id": 7, "prompt": "", "continuations": ["a"]}', "", "  ",
                                        '{"id": "x", "prompt": "q", "continuations": ["b", "c"], "length_normalize": true}'])
    items = read_prompts(src)
    assert [(i.id, i.prompt, i.continuations, i.length_normalize, i.line) for i in items] == [
        ("7", "", ("a",), False, 1), ("x", "q", ("b", "c"), True, 4)]
    with pytest.raises(ValueError, match="holds no prompts"):
        read_prompts(_write(tmp_path / "empty.jsonl", [""]))


def test_help_describes_every_argument_and_environment_variable(capsys):
    with pytest.raises(SystemExit) as e:
        main(["lm", "score", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--out", "--model", "--prompt-format", "--n-ctx", "--threads", "--base-url", "--server-model",
                 "--cache", "--no-cache", "--no-progress", "--debug", "PROMPTS.jsonl"):
        assert flag in text
    for var in ("PRAGMODELS_LM_CACHE", "PRAGMODELS_LM_BASE_URL", "PRAGMODELS_LM_MODEL", "OPENAI_API_KEY"):
        assert var in text


@pytest.mark.parametrize("scores, problem", [
    ([-1.0, float("nan"), -2.0], "the score of '5' is nan; expected a log-probability"),
    ([-1.0, -2.0], "the model gave 2 scores for 3 continuations"),
])
def test_a_score_that_is_not_a_log_probability_writes_no_table(tmp_path, scores, problem):
    """Issue 33, item 5: a NaN score (without the cache) went into the table; too few scores dropped rows."""
    from pragmodels.lm import LMError, PromptFormat
    from pragmodels.lm.score_file import score_file

    class BadLM:
        identity, prompt_format = "fake:bad", PromptFormat.plain()

        def score(self, prompt, continuations, *, length_normalize=False):
            return np.array(scores)

    src = _write(tmp_path / "p.jsonl", [json.dumps(PROMPTS[0])])
    with pytest.raises(LMError, match=rf"prompt 'sum' \(line 1\): {problem}"):
        score_file(src, tmp_path / "s.csv", BadLM())
    assert not (tmp_path / "s.csv").exists()


# ---- the LM options of every study's LM step, and `pragmodels lm elicit` (issue 35, items 7 and 8) -----------------

@pytest.mark.parametrize("argv, problem", [
    (["--model", "smollm2", "--dtype", "bfloat16"], "--dtype is a setting of --backend hf."),
    (["--backend", "hf", "--model", "smollm2", "--device", "gpu0"], "--device 'gpu0': not a torch device"),
    (["--model", "smollm2", "--api-key-env", "KEY"], "--api-key-env is a setting of a server: it needs --base-url."),
    (["--base-url", "http://127.0.0.1:9/v1", "--server-model", "m", "--sample-api", "chat", "--semantics", "samples"],
     "`pragmodels lm score` scores log-probabilities, and the LM 'm' has semantics 'samples'"),
    (["--base-url", "http://127.0.0.1:9/v1", "--server-model", "m", "--chat-template", "jinja"],
     "--chat-template 'jinja': chat template source 'jinja'; expected one of"),
    (["--lm", "smol", "--config", "{cfg}", "--model", "gemma3"],
     "--model 'gemma3' contradicts lms['smol'].model = 'smollm2' in {cfg}"),
    (["--lm", "smoll", "--config", "{cfg}"], "--lm 'smoll': not an entry of lms in {cfg} ('smol'); did you mean 'smol'?"),
])
def test_the_command_takes_the_lm_options_of_the_study_scripts(argv, problem, tmp_path, capsys):
    """One set of LM options (add_lm_arguments), one-line errors naming the option and its value, exit 2."""
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"lms": {"smol": {"backend": "llamacpp", "model": "smollm2"}}}))
    src = _prompt_file(tmp_path)
    argv = [a.format(cfg=cfg) for a in argv]
    assert main(["lm", "score", str(src), "--out", str(tmp_path / "s.csv"), "--no-cache", *argv]) == 2
    assert problem.format(cfg=cfg) in _error_line(capsys)


@pytest.mark.lm
def test_a_config_entry_is_scored_and_recorded_in_the_sidecar(smollm2, tmp_path, capsys):
    """`--config FILE --lm NAME`: the entry's model, its prompt format, and the entry in the provenance."""
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"lms": {"base": {"backend": "llamacpp", "model": "smollm2", "prompt_format": "plain"}}}))
    src = _write(tmp_path / "p.jsonl", [json.dumps(PROMPTS[0])])
    out = tmp_path / "s.csv"
    assert main(["lm", "score", str(src), "--config", str(cfg), "--lm", "base", "--threads", "1", "--n-ctx", "512",
                 "--out", str(out), "--no-cache", "--no-progress"]) == 0
    side = json.loads((tmp_path / "s.csv.json").read_text())
    assert side["lm_entry"] == {"lm": "base", "config": str(cfg), "entry": {"backend": "llamacpp", "model": "smollm2",
                                                                            "semantics": "scores",
                                                                            "prompt_format": "plain"}}
    assert side["model"]["identity"] == smollm2.identity and side["prompt_format"]["name"] == "plain"
    assert {r["prompt_format"] for r in _read(out)} == {"plain"}


@pytest.mark.lm
@pytest.mark.subprocess
def test_a_server_without_log_probabilities_is_one_line_naming_the_setting(no_logprobs_url, tmp_path, capsys):
    """Issue 35, item 8, on the command line: the setting to change, in the entry and as the option."""
    src = _write(tmp_path / "p.jsonl", [json.dumps(PROMPTS[0])])
    assert main(["lm", "score", str(src), "--base-url", no_logprobs_url, "--server-model", "smollm2",
                 "--chat-template", "gguf:smollm2", "--out", str(tmp_path / "s.csv"), "--no-cache",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err  # (above it: llama.cpp's note as it reads the GGUF's template)
    lines = [x for x in err.splitlines() if x.startswith("pragmodels:")]
    assert len(lines) == 1 and lines[0].startswith("pragmodels: error: ") and err.rstrip().endswith(lines[0])
    line = lines[0]
    assert "gives no log-probabilities" in line and '"semantics": "samples"' in line and "--semantics samples" in line
    assert not (tmp_path / "s.csv").exists()


def _toy_study(tmp_path, lms):
    (tmp_path / "step.py").write_text(
        "import json\nfrom pathlib import Path\n\nfrom pragmodels.lm.entry import LMEntry\n"
        "from pragmodels.runs.schema import StudyConfig\n\n\n"
        "class Config(StudyConfig):\n    lms: dict[str, LMEntry] = {}\n\n\n"
        "def run(config, out_dir, mode, progress, record):\n    pass\n\n\n"
        "def main(argv):\n    Path(__file__).with_name('argv.json').write_text(json.dumps(argv))\n    return 3\n")
    cfg = tmp_path / "toy.json"
    cfg.write_text(json.dumps({"name": "toy", "study": "step.py:run", "lm_step": "step.py:main", "seed": 1,
                               "sampler": {m: {"num_warmup": 10, "num_samples": 10, "num_chains": 1} for m in ("full", "quick")},
                               "lms": lms}))
    return cfg


def test_lm_elicit_runs_the_study_lm_step_with_the_rest_of_the_arguments(tmp_path, capsys):
    cfg = _toy_study(tmp_path, {"mine": {"backend": "llamacpp", "model": "smollm2"}})
    argv_file = tmp_path / "argv.json"
    # a name of the config's lms: the step opens that entry (--config added)
    assert main(["lm", "elicit", str(cfg), "--lm", "mine", "--limit", "1"]) == 3
    assert json.loads(argv_file.read_text()) == ["--lm", "mine", "--limit", "1", "--config", str(cfg)]
    # a new LM: its options as given
    assert main(["lm", "elicit", str(cfg), "--lm", "gpt4o", "--base-url", "https://api.openai.com/v1",
                 "--server-model", "gpt-4o", "--api-key-env", "OPENAI_API_KEY"]) == 3
    assert json.loads(argv_file.read_text())[:2] == ["--lm", "gpt4o"] and "--config" not in argv_file.read_text()
    # a misspelt entry
    assert main(["lm", "elicit", str(cfg), "--lm", "mien"]) == 2
    line = _error_line(capsys)
    assert "--lm 'mien': not an entry of lms in" in line and "did you mean 'mine'?" in line
    # a study without an LM step
    no_step = tmp_path / "other.json"
    no_step.write_text(json.dumps({"name": "toy", "study": "step.py:run", "seed": 1,
                                   "sampler": {m: {"num_warmup": 10, "num_samples": 10, "num_chains": 1} for m in ("full", "quick")}}))
    assert main(["lm", "elicit", str(no_step), "--lm", "mine"]) == 2
    assert "`lm_step`: required key missing for `pragmodels lm elicit`" in _error_line(capsys)


def test_lm_elicit_help_lists_the_studies_with_an_lm_step(capsys, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    with pytest.raises(SystemExit) as e:
        main(["lm", "elicit", "--help"])
    assert e.value.code == 0
    assert "studies with an LM step: implicature, social_meaning, social_meaning_lms, wavelength" in capsys.readouterr().out
