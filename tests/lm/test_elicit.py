"""pragmodels.lm.elicit with a fake LM: records, parse failures, the resample bound, resumption after
a kill (a torn last line, a query cut short), settings that differ, seeds a resumed run shares."""

from __future__ import annotations

import fcntl
import json
import re

import pytest

from pragmodels.lm.elicit import (
    RECORD_KEYS,
    ElicitationError,
    Query,
    Sampling,
    derive_seed,
    elicit,
    estimate,
    manifest_path,
)


class FakeLM:
    """Answers ``"rating <6 + seed % 4>"``: 6 and 7 parse, 8 and 9 do not; ``fail_first`` answers
    without a digit at the first attempts of every sample; ``kill_after`` raises after that many calls."""

    def __init__(self, identity: str = "fake-lm", *, fail_first: int = 0, kill_after: int | None = None):
        self.identity = identity
        self.calls: list[tuple[str, int]] = []
        self.fail_first = fail_first
        self.kill_after = kill_after
        self._attempt: dict[str, int] = {}

    def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
        assert n == 1
        if self.kill_after is not None and len(self.calls) >= self.kill_after:
            raise KeyboardInterrupt  # a kill mid-query
        self.calls.append((prompt, seed))
        k = self._attempt.get(prompt, 0)
        self._attempt[prompt] = k + 1
        return [answer_prefix + ("no idea" if k < self.fail_first else f"rating {seed % 4 + 6}")]


def parse_digit(text: str) -> int | None:
    found = re.findall(r"\b([1-7])\b", text)
    return int(found[0]) if len(found) == 1 else None


QUERIES = [Query(f"q{i}", f"How good is item {i}?", {"item": i, "form": "precise"}) for i in range(5)]


def run(lm, path, queries=QUERIES, **kw):
    args = dict(n_samples=3, parse=parse_digit, parse_name="digit", progress=path, seed=7)
    return elicit(lm, queries, **{**args, **kw})


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_records_hold_the_fields_the_raw_answer_and_the_parsed_value(tmp_path):
    lm = FakeLM()
    records = run(lm, tmp_path / "p.jsonl")
    assert len(records) == 15 and len(lm.calls) == 15
    assert [(r["query_id"], r["sample_id"]) for r in records] == [(f"q{i}", s) for i in range(5) for s in range(3)]
    for r in records:
        assert set(r) == {"item", "form", *RECORD_KEYS}
        assert r["seed"] == derive_seed(7, r["query_id"], r["sample_id"], 0) and r["attempts"] == 1
        assert r["raw_response"] == f"rating {r['seed'] % 4 + 6}"
        assert r["valid"] == (r["value"] is not None) and r["value"] == parse_digit(r["raw_response"])
    # no resampling: invalid answers (8 and 9) are kept
    assert any(not r["valid"] for r in records) and any(r["valid"] for r in records)
    assert lines(tmp_path / "p.jsonl") == records
    manifest = json.loads(manifest_path(tmp_path / "p.jsonl").read_text())
    assert manifest["model"] == "fake-lm" and manifest["settings"]["parse"] == "digit"
    assert manifest["settings"]["temperature"] == 1.0 and manifest["settings"]["n_samples"] == 3
    assert manifest["lm_entry"] is None  # an LM not opened from an entry


def test_the_manifest_records_the_entry_the_lm_was_opened_from(tmp_path):
    """open_lm_from_arguments gives the model its entry (name, config, keys; never a key's value)."""
    lm = FakeLM()
    lm.lm_entry = {"name": "smol", "config": "fits/x.json", "entry": {"backend": "openai", "model": "m",
                                                                      "api_key_env": "OPENAI_API_KEY"}}
    run(lm, tmp_path / "p.jsonl", queries=QUERIES[:1], n_samples=1)
    assert json.loads(manifest_path(tmp_path / "p.jsonl").read_text())["lm_entry"] == lm.lm_entry


def test_the_resample_bound(tmp_path):
    lm = FakeLM(fail_first=10)  # never parses within 1 + 2 attempts
    records = run(lm, tmp_path / "a.jsonl", queries=QUERIES[:2], resample=2)
    assert all(r["attempts"] == 3 and not r["valid"] and r["value"] is None for r in records)
    assert len(lm.calls) == 2 * 3 * 3
    assert records[0]["seed"] == derive_seed(7, "q0", 0, 2)  # the seed of the attempt kept
    assert len({s for _, s in lm.calls}) == len(lm.calls)  # every attempt its own seed
    lm = FakeLM()  # answers 8 and 9 do not parse: those samples are asked again
    records = run(lm, tmp_path / "b.jsonl", resample=5)
    assert any(r["attempts"] > 1 for r in records) and sum(r["attempts"] for r in records) == len(lm.calls)
    for r in records:
        seeds = [derive_seed(7, r["query_id"], r["sample_id"], a) for a in range(r["attempts"])]
        assert all(s % 4 >= 2 for s in seeds[:-1])  # asked again only after a failure
        assert r["valid"] == (seeds[-1] % 4 < 2) and (r["valid"] or r["attempts"] == 6)
        assert r["seed"] == seeds[-1]


def test_resumed_run_asks_what_an_uninterrupted_one_asks(tmp_path):
    whole = FakeLM()
    expected = run(whole, tmp_path / "whole.jsonl")
    path = tmp_path / "cut.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run(FakeLM(kill_after=7), path)  # killed in the third query: two done
    assert [r["query_id"] for r in lines(path)] == ["q0"] * 3 + ["q1"] * 3
    with open(path, "ab") as f:  # a kill while the third query's records were written: one whole line, one torn
        f.write(json.dumps({**expected[6], "timestamp": "x"}).encode() + b"\n" + b'{"query_id": "q2", "samp')
    again = FakeLM()
    got = run(again, path)
    assert again.calls == whole.calls[6:]  # q0 and q1 skipped; q2 asked again from its first sample
    strip = lambda rs: [{k: v for k, v in r.items() if k != "timestamp"} for r in rs]  # noqa: E731
    assert strip(got) == strip(expected)
    assert strip(lines(path)) == strip(expected)  # the torn tail was cut, not kept
    assert run(FakeLM(), path) == got  # all done: nothing asked


def test_other_settings_are_refused_naming_the_setting(tmp_path):
    path = tmp_path / "p.jsonl"
    run(FakeLM(), path, queries=QUERIES[:1])
    with pytest.raises(ElicitationError, match=r"started with temperature = 1\.0; this run has temperature = 0\.7"):
        run(FakeLM(), path, sampling=Sampling(temperature=0.7))
    with pytest.raises(ElicitationError, match=r"started with n_samples = 3; this run has n_samples = 4"):
        run(FakeLM(), path, n_samples=4)
    with pytest.raises(ElicitationError, match=r"started with parse = 'digit'; this run has parse = 'letter'"):
        run(FakeLM(), path, parse_name="letter")
    with pytest.raises(ElicitationError, match=r"started with model 'fake-lm'; this run's model is 'other'"):
        run(FakeLM("other"), path)
    with pytest.raises(ElicitationError, match=r"query 'q0' was asked with another prompt"):
        run(FakeLM(), path, queries=[Query("q0", "Another wording?")])
    for bad in ("temperature", "parse", "other"):
        assert "\n" not in str(pytest.raises(ElicitationError, run, FakeLM(bad), path).value)


def test_a_corrupt_line_before_the_end_is_named(tmp_path):
    path = tmp_path / "p.jsonl"
    run(FakeLM(), path, queries=QUERIES[:2])
    text = path.read_text().splitlines()
    path.write_text("\n".join([text[0], "garbage", *text[2:]]) + "\n")
    with pytest.raises(ElicitationError, match=r"p.jsonl: line 2 is not a record"):
        run(FakeLM(), path)
    path.unlink()
    with pytest.raises(ElicitationError, match=r"has records but no manifest"):
        path.write_text("\n".join(text) + "\n")
        manifest_path(path).unlink()
        run(FakeLM(), path)


def test_a_file_in_use_is_refused(tmp_path):
    path = tmp_path / "p.jsonl"
    with open(path, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        with pytest.raises(ElicitationError, match="another process is eliciting into this file"):
            run(FakeLM(), path)


def test_the_lm_is_written_by_its_identity_only(tmp_path):
    class KeyedLM(FakeLM):
        api_key = "sk-SECRET"

        def __repr__(self):
            return f"KeyedLM(api_key={self.api_key!r})"

    run(KeyedLM("http://127.0.0.1:1/v1 some-model"), tmp_path / "p.jsonl", queries=QUERIES[:1])
    for f in tmp_path.iterdir():
        assert "SECRET" not in f.read_text()


def test_bad_queries_and_settings_are_named(tmp_path):
    path = tmp_path / "p.jsonl"
    with pytest.raises(ElicitationError, match=r"queries\[1\].id = 'q0' repeats"):
        run(FakeLM(), path, queries=[QUERIES[0], QUERIES[0]])
    with pytest.raises(ElicitationError, match=r"field 'seed' is a key elicit writes itself"):
        run(FakeLM(), path, queries=[Query("a", "p", {"seed": 1})])
    with pytest.raises(ElicitationError, match=r"resample = -1; expected an int >= 0"):
        run(FakeLM(), path, resample=-1)
    with pytest.raises(ElicitationError, match=r"parse rule 'digit' gave \{1\}"):
        run(FakeLM(), path, parse=lambda t: {1})


def test_progress_lines_and_the_estimate(tmp_path):
    out: list[str] = []
    run(FakeLM(), tmp_path / "p.jsonl", every=2, log=out.append)
    assert out[0].startswith("elicit: 0 of 5 queries done before; asking 5 (15 samples) of fake-lm")
    assert [line.split(" queries asked")[0] for line in out[1:]] == ["elicit: 2/5", "elicit: 4/5", "elicit: 5/5"]
    est = estimate(QUERIES, 3, 10)
    assert est == {"requests": 15, "prompt_chars": 3 * sum(len(q.prompt) for q in QUERIES),
                   "prompt_tokens": round(3 * sum(len(q.prompt) for q in QUERIES) / 4), "answer_tokens_max": 150}


@pytest.mark.lm
def test_smollm2_answers_the_social_meaning_questionnaire(smollm2, mirror, tmp_path):
    """The bundled SmolLM2 in process: 3 MIN queries x 2 samples, records in the published schema,
    read back by the study's loader; a rerun asks nothing."""
    from models.social_meaning import elicit as sm
    from pragmodels.datasets import load_social_llm_elicited
    from pragmodels.lm.entry import LMEntry

    kw = dict(conditions=["MIN"], limit=3, n_samples=2, sampling=Sampling(temperature=1.0, max_tokens=8),
              log=lambda s: None)
    (path,) = sm.elicit_lm(smollm2, "smollm2", tmp_path, **kw)
    records = json.loads(path.read_text())
    assert path.name == "results_MIN.json" and len(records) == 6
    for r in records:
        assert list(r) == list(sm.RECORD_KEYS) and r["model"] == "smollm2"
        assert r["likert"] == sm.parse_likert(r["raw_response"]) and r["valid"] == (r["likert"] is not None)
    manifest = json.loads(manifest_path(tmp_path / "progress.jsonl").read_text())
    assert manifest["model"] == smollm2.identity and manifest["settings"]["max_tokens"] == 8
    df = sm.load_elicited({"smollm2": LMEntry(model="smollm2", outputs=str(tmp_path))}, n_samples=2, complete=False)
    assert len(df) == 6 and set(df.prompt) == {"MIN"} and df.equals(
        load_social_llm_elicited(tmp_path, "smollm2", ["MIN"], n_samples=2, complete=False))
    before = path.read_text()

    class Refuses:  # a rerun finds every query done: the model is not asked again
        identity = smollm2.identity

        def sample(self, *a, **k):
            raise AssertionError("asked again")

    sm.elicit_lm(Refuses(), "smollm2", tmp_path, **kw)
    assert [{k: v for k, v in r.items() if k != "current_date"} for r in json.loads(path.read_text())] == \
        [{k: v for k, v in r.items() if k != "current_date"} for r in json.loads(before)]


def test_a_resume_in_another_prompt_format_is_refused(tmp_path):
    """A run begun in a chat format and resumed as plain text would mix two questions in one file."""
    from pragmodels.lm import PromptFormat

    lm = FakeLM()
    lm.prompt_format = PromptFormat.plain()
    run(lm, tmp_path / "p.jsonl", queries=QUERIES[:1], n_samples=1)
    lm.prompt_format = PromptFormat("chat", "<|user|>", "<|assistant|>", "<|end|>")
    with pytest.raises(ElicitationError, match=r"started with prompt format .*plain.*this run's is .*chat"):
        run(lm, tmp_path / "p.jsonl", queries=QUERIES[:2], n_samples=1)


def test_a_chat_apis_samples_need_no_prompt_format(tmp_path):
    """A server's chat route renders its own template; llama-cpp-python's server shows none, and reading
    the format for the manifest raised before any request (SmolLM2's social elicitation through
    llama_cpp.server failed so; found by the one-command test)."""
    from pragmodels.lm.base import LMError

    class ChatLM(FakeLM):
        sample_api = "chat"

        @property
        def prompt_format(self):
            raise LMError("the server renders no chat template")

    class Cached:  # a wrapper that forwards the format and hides sample_api (as pragmodels.lm.cache's)
        def __init__(self, model):
            self.model, self.identity, self.sample = model, model.identity, model.sample

        @property
        def prompt_format(self):
            return self.model.prompt_format

    run(ChatLM(), tmp_path / "p.jsonl", queries=QUERIES[:1], n_samples=1)
    run(Cached(ChatLM()), tmp_path / "q.jsonl", queries=QUERIES[:1], n_samples=1)
    assert json.loads(manifest_path(tmp_path / "p.jsonl").read_text())["prompt_format"] == \
        "chat API (the server's template)"

@pytest.mark.lm
@pytest.mark.subprocess
@pytest.mark.nuts
@pytest.mark.slow
def test_one_command_elicits_fits_and_reports_a_new_lm_through_a_local_server(server_url, mirror, tmp_path, capsys):
    """`pragmodels lm elicit CONFIG --lm NAME --fit --quick` with SmolLM2 behind llama_cpp.server (issue 36,
    item 4): the estimate before any request, 24 MIN queries x 1 sample (one block of the fixed order, a tiny
    answer cap), the config's quick study with the published GPT MIN only, its report with the new LM's section."""
    from models.social_meaning import elicit as sm
    from pragmodels.cli import main as cli

    base = json.loads(sm.LMS_CONFIG.read_text())
    base.pop("$schema")
    for key in ("study", "tables", "lm_step"):  # (absolute: the config is outside the repository)
        base[key] = str(sm.ROOT / base[key])
    base.update(conditions=[["gpt", "MIN"]], executor="sequential",  # the config's quick samplers (shorter ones
                # left the human chains unmoved: every draw alike, and PSIS-LOO refused)
                lms={"srv": {"backend": "openai", "base_url": server_url, "model": "SmolLM2", "sample_api": "chat",
                             "semantics": "samples", "outputs": str(tmp_path / "srv")}})
    cfg = tmp_path / "lms.json"
    cfg.write_text(json.dumps(base))
    argv = ["lm", "elicit", str(cfg), "--lm", "srv", "--fit", "--quick", "--limit", "24", "--samples", "1",
            "--conditions", "MIN", "--max-tokens", "4"]
    assert cli(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("social meaning for srv: 24 queries x 1 samples = 24 requests")
    assert len(json.loads((tmp_path / "srv" / "results_MIN.json").read_text())) == 24
    report = (tmp_path / "lms" / "quick" / "report.md").read_text()
    assert "srv" in report and f"report: {tmp_path / 'lms' / 'quick' / 'report.md'}" in out
