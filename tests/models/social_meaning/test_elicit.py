"""models.social_meaning.elicit: the paper's 576 prompts (equal to its builders'), its parse rule,
results files in the published schema that the study reads, the command's checks (a fake LM)."""

from __future__ import annotations

import hashlib
import json

import pytest

from models.social_meaning import elicit as sm
from models.social_meaning.config import Config
from pragmodels import datasets
from pragmodels.errors import ConfigError
from pragmodels.lm.entry import LMEntry
from pragmodels.runs.schema import validate_config

#: the MIN prompt of bicycle / high / approx / well-prepared, as upstream prompts/build_prompts.py
#: builds it from src/exp_texts.py at commit c60d600 (the situation's blank lines included)
BICYCLE_MIN = (
    "**Task description:**\nIn this experiment, you'll read a brief description of a situation involving two "
    "people. One of these people asks a question, and the second person answers it. Your task will be to answer "
    "some questions about the second person.\n\n**Task situation:**\n\nJamie's new bicycle was stolen. \n"
    "Fortunately it was insured, so Jamie has called the insurance company.\nInsurance agent: \"How much did the "
    "bicycle cost? I'll start the paperwork right away.\"\n\n\nJamie: \"The bicycle cost about $500.\"\n\n\n"
    "**Task:**\nBased on what Jamie says, how well-prepared does Jamie sound?\n\nUse a 7-point Likert scale:\n"
    "1 = not at all well-prepared\n7 = very well-prepared\n\nAnswer with a single number between 1 and 7. Give "
    "only the number, no other text.")
#: sha256 of the 576 prompts joined by NUL (conditions MIN, ALT, KMA, COM; scenarios, contexts, forms and
#: attributes in the upstream loops' order), computed from the upstream builders run on the upstream constants
ALL_PROMPTS_SHA256 = "c56143b96412e841ef058990fe824c550ace68d51fcacdf5645550e950a6dcf9"


@pytest.fixture(scope="module")
def questionnaire(mirror):
    return datasets.load_social_prompts()


class FakeLM:
    identity = "fake-social"

    def __init__(self):
        self.prompts: list[str] = []

    def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
        self.prompts.append(prompt)
        return [[" 5\n", "I'd say 3.", "5 or 6", "seven"][seed % 4]]


def test_the_576_prompts_are_the_papers(questionnaire):
    q = questionnaire
    assert sm.build_prompt(q, "MIN", "bicycle", "high", "approx", "well-prepared") == BICYCLE_MIN
    order = [(c, s, x, u, a) for c in datasets.PROMPTS for s in ("house", "cinema", "conference", "bicycle", "office",
                                                                 "pasta")
             for x in ("low", "high") for u in ("precise", "approx") for a in q["attributes"]]
    text = "\x00".join(sm.build_prompt(q, *key) for key in order)
    assert len(order) == 576 and hashlib.sha256(text.encode()).hexdigest() == ALL_PROMPTS_SHA256
    qs = sm.queries(q)
    assert len(qs) == 576 and len({x.id for x in qs}) == 576 and len({x.prompt for x in qs}) == 576
    assert qs[0].fields.keys() == {"prompt", "scenario", "context", "utterance", "attribute"}
    limited = sm.queries(q, ["MIN", "COM"], limit=5)  # the same five cells in each condition
    assert len(limited) == 10 and [x.id.split("/", 1)[1] for x in limited[:5]] == [x.id.split("/", 1)[1]
                                                                                  for x in limited[5:]]


@pytest.mark.parametrize("text, rating", [
    ("5", 5), (" 7\n", 7), ("I'd say 3.", 3), ("5 or 6", None), ("15", None), ("8", None), ("", None),
    ("Step 1: reasons... Rating: 4", None),  # two standalone digits: invalid, as the paper's rule reads it
    ("seven", None),
])
def test_the_papers_parse_rule(text, rating):
    assert sm.parse_likert(text) == rating


def test_results_are_in_the_published_schema_and_the_study_reads_them(questionnaire, mirror, tmp_path):
    lm, out = FakeLM(), tmp_path / "fake"
    lines: list[str] = []
    files = sm.elicit_lm(lm, "fake", out, log=lines.append, every=1000)
    assert lines[0] == ("social meaning for fake: 576 queries x 10 samples = 5,760 requests; prompts 7,929,600 "
                        "characters, about 1,982,400 tokens (characters / 4); answers at most 576,000 tokens")
    assert len(lm.prompts) == 5760 and set(lm.prompts) == {x.prompt for x in sm.queries(questionnaire)}
    assert [f.name for f in files] == [f"results_{p}.json" for p in datasets.PROMPTS]
    published = json.loads((mirror / "social/llm_ratings/results_MIN.json").read_text())[0]
    for f in files:
        records = json.loads(f.read_text())
        assert len(records) == 1440 and all(list(r) == list(published) for r in records)
        assert {r["raw_response"] for r in records} <= {"5", "I'd say 3.", "5 or 6", "seven"}  # stripped
    seen: dict = {}
    df = sm.load_elicited({"fake": LMEntry(model="fake", outputs=str(out))}, record=seen.__setitem__)
    assert seen == {f"elicited_fake_{p}": out / f"results_{p}.json" for p in datasets.PROMPTS}  # into run.json
    assert len(df) == 5760 and set(df.model) == {"fake"}
    assert list(df.columns) == list(datasets.load_social_llm(["MIN"]).columns)
    assert df[df.valid].groupby("raw_response")["rating"].unique().map(list).to_dict() == {"5": [5], "I'd say 3.": [3]}
    assert not df[df.raw_response.isin(["5 or 6", "seven"])].valid.any()


def test_a_limited_run_is_read_as_a_subset_only(questionnaire, tmp_path):
    out = tmp_path / "part"
    sm.elicit_lm(FakeLM(), "fake", out, limit=3, conditions=["KMA"], n_samples=2, log=lambda s: None)
    entry = {"fake": LMEntry(model="fake", outputs=str(out))}
    with pytest.raises(FileNotFoundError, match="results_MIN.json: no ratings of LM 'fake'"):
        sm.load_elicited(entry)
    with pytest.raises(datasets.DataSchemaError, match=r"sample_id', row \d+: value 0|has 2 records; expected 10"):
        sm.load_elicited(entry, complete=False)  # 2 samples per query, not the paper's 10
    got = datasets.load_social_llm_elicited(out, "fake", n_samples=2, complete=False)
    assert len(got) == 6 and set(got.prompt) == {"KMA"}


def test_the_command_refuses_a_published_name_and_prints_the_estimate_first(tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as e:  # argparse's error: usage, then the one line
        sm.main(["--lm", "claude", "--out", str(tmp_path)])
    assert e.value.code == 2 and capsys.readouterr().err.strip().endswith("'claude' is a published LLM's name (gpt, claude, gemini); "
                                                    "name the new LM otherwise.")
    monkeypatch.setattr(sm, "open_lm_from_arguments", lambda parser, args, n_ctx: FakeLM())
    assert sm.main(["--lm", "mine", "--out", str(tmp_path / "m"), "--limit", "2", "--samples", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("social meaning for mine: 8 queries x 3 samples = 24 requests")
    assert out[-1].startswith(f"wrote {tmp_path / 'm' / 'results_MIN.json'}") and "24 records" in out[-1]
    assert sm.main(["--lm", "mine", "--out", str(tmp_path / "m"), "--limit", "2", "--samples", "3",
                    "--temperature", "0.5"]) == 2
    assert "was started with temperature = 1.0; this run has temperature = 0.5" in capsys.readouterr().err


def test_the_config_lists_new_lms_beside_the_published_three(mirror):
    base = json.loads((sm.ROOT / "fits" / "social_meaning.json").read_text())
    cfg = validate_config(Config, {**base, "lms": {"smollm2": {"model": "smollm2"}}}, what="study config")
    assert sm.elicited_folder("smollm2", cfg.lms["smollm2"]) == sm.ELICITED / "smollm2"
    assert sm.elicited_folder("x", LMEntry(model="x", outputs="elsewhere/x")) == sm.ROOT / "elsewhere" / "x"
    with pytest.raises(ConfigError, match=r"`lms` = .*'gemini' is a published LLM's name"):
        validate_config(Config, {**base, "lms": {"gemini": {"model": "gemini"}}}, what="study config")
    assert validate_config(Config, base, what="study config").lms == {}


class KwargsLM(FakeLM):
    """FakeLM that keeps each call's settings, and stops (as a kill would) after ``stop_after`` calls."""

    def __init__(self, stop_after: int | None = None):
        super().__init__()
        self.calls: list[dict] = []
        self.stop_after = stop_after

    def sample(self, prompt, n, **kw):
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt
        self.calls.append(kw)
        return super().sample(prompt, n, **kw)


def test_a_limit_of_24_asks_every_condition_mean_once(questionnaire):
    """--limit 24k: every context x form x attribute k times, each scenario 4k times (a random order did not)."""
    for k in (1, 2):
        cells = [(x.fields["scenario"], x.fields["context"], x.fields["utterance"], x.fields["attribute"])
                 for x in sm.queries(questionnaire, ["MIN"], limit=24 * k)]
        combos = {c[1:] for c in cells}
        assert len(combos) == 24 and all(sum(c[1:] == m for c in cells) == k for m in combos)
        assert {s: sum(c[0] == s for c in cells) for s in questionnaire["stimuli"]} == dict.fromkeys(
            questionnaire["stimuli"], 4 * k)
    assert len(set(map(tuple, (x.id for x in sm.queries(questionnaire, ["MIN"]))))) == 144


def test_dry_run_prints_the_estimate_and_sends_nothing(monkeypatch, capsys, tmp_path):
    def no_lm(*a, **k):
        raise AssertionError("--dry-run opened the LM")

    monkeypatch.setattr(sm, "open_lm_from_arguments", no_lm)
    assert sm.main(["--lm", "mine", "--out", str(tmp_path), "--conditions", "MIN", "--samples", "2", "--dry-run"]) == 0
    assert capsys.readouterr().out.strip() == (
        "social meaning for mine: 144 queries x 2 samples = 288 requests; prompts 210,432 characters, about 52,608 "
        "tokens (characters / 4); answers at most 28,800 tokens (--dry-run: nothing sent)")
    assert not any(tmp_path.iterdir())


def test_a_base_models_prompting_reaches_the_lm_and_the_manifest(monkeypatch, tmp_path):
    """--answer-prefix and --stop ('\\n' typed as backslash-n) go to every sample call and into the manifest."""
    lm = KwargsLM()
    monkeypatch.setattr(sm, "open_lm_from_arguments", lambda parser, args, n_ctx: lm)
    assert sm.main(["--lm", "base", "--out", str(tmp_path), "--limit", "1", "--samples", "2",
                    "--answer-prefix", "\\n\\nAnswer: ", "--stop", "\\n"]) == 0
    assert lm.calls[0]["answer_prefix"] == "\n\nAnswer: " and lm.calls[0]["stop"] == ["\n"] and len(lm.calls) == 8
    settings = json.loads((tmp_path / "progress.jsonl.manifest.json").read_text())["settings"]
    assert settings["answer_prefix"] == "\n\nAnswer: " and settings["stop"] == ["\n"]


def test_a_progress_bar_over_requests_and_a_resumed_run_after_a_kill(questionnaire, tmp_path, capsys):
    """A bar counts requests (on a terminal); killed in its fourth request, a rerun starts its bar at the queries
    done, asks the rest, and writes what an uninterrupted run writes."""
    lm = KwargsLM(stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        sm.elicit_lm(lm, "fake", tmp_path / "a", limit=2, conditions=["MIN"], n_samples=2, log=lambda s: None, bar=True)
    assert "requests:" in capsys.readouterr().err
    lm2, lines = KwargsLM(), []
    sm.elicit_lm(lm2, "fake", tmp_path / "a", limit=2, conditions=["MIN"], n_samples=2, log=lines.append, bar=True)
    err = capsys.readouterr().err
    assert "elicit: 2 of 2 queries done before" not in lines and len(lm2.calls) == 4 - 2  # one query of 2 was whole
    assert "2/4" in err and "4/4" in err
    sm.elicit_lm(KwargsLM(), "fake", tmp_path / "b", limit=2, conditions=["MIN"], n_samples=2, log=lambda s: None)
    strip = lambda p: [{k: v for k, v in r.items() if k != "current_date"} for r in json.loads(p.read_text())]
    assert strip(tmp_path / "a" / "results_MIN.json") == strip(tmp_path / "b" / "results_MIN.json")


def test_the_progress_bar_passes_the_entry_on_to_the_manifest():
    """Behind the terminal's request bar the manifest recorded lm_entry null (found in review)."""
    lm = FakeLM()
    lm.lm_entry = {"lm": "fake", "entry": {"backend": "llamacpp", "model": "smollm2"}}
    assert sm._RequestBar(lm, 10, 0, enabled=True).lm_entry == lm.lm_entry


def test_an_entrys_outputs_is_where_the_command_writes(tmp_path, monkeypatch):
    """The command wrote to fits/social_meaning/elicited/<lm> whatever the entry's outputs said, where the
    study then looked in vain (found in review)."""
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"lms": {"mine": {"backend": "llamacpp", "model": "smollm2",
                                                "outputs": str(tmp_path / "here")}}}))
    monkeypatch.setattr(sm, "open_lm_from_arguments", lambda parser, args, n_ctx: FakeLM())
    seen = {}
    monkeypatch.setattr(sm, "elicit_lm", lambda lm, name, out, **kw: seen.setdefault("out", out))
    assert sm.main(["--config", str(cfg), "--lm", "mine", "--limit", "1", "--samples", "1"]) == 0
    assert seen["out"] == tmp_path / "here"


def _lms_config(tmp_path, lms):
    base = json.loads(sm.LMS_CONFIG.read_text())
    base.pop("$schema")
    for key in ("study", "tables", "lm_step"):  # (absolute: the config is outside the repository)
        base[key] = str(sm.ROOT / base[key])
    cfg = tmp_path / "lms.json"
    cfg.write_text(json.dumps({**base, "lms": lms}))
    return cfg


class Refuses(FakeLM):
    def sample(self, *a, **k):
        raise AssertionError("a request was sent")


def test_fit_elicits_then_runs_the_configs_study_and_says_where_the_report_is(tmp_path, monkeypatch, capsys):
    """One command end to end (issue 36, item 4): the estimate first, the requests, then the study of the
    config (`pragmodels run CONFIG --quick`) and the LM's answers and report named; an LM the config does not
    list, or --out elsewhere than the study reads, is refused before any request."""
    from pragmodels.runs import study as run_module

    cfg = _lms_config(tmp_path, {"mine": {"backend": "llamacpp", "model": "smollm2", "outputs": str(tmp_path / "m")}})
    monkeypatch.setattr(sm, "open_lm_from_arguments", lambda parser, args, n_ctx: Refuses())
    assert sm.main(["--lm", "other", "--model", "smollm2", "--config", str(cfg), "--fit"]) == 2
    assert "--fit: --lm 'other' is not an entry of lms in" in capsys.readouterr().err
    for argv, why in ((["--config", str(cfg), "--fit", "--out", str(tmp_path / "x")], "with --fit the answers go "
                       "where the study reads them"), (["--quick"], "--quick: only with --fit")):
        with pytest.raises(SystemExit) as e:  # argparse's error: usage, then the one line
            sm.main(["--lm", "mine", *argv])
        assert e.value.code == 2 and why in capsys.readouterr().err
    ran = {}

    def fake_run(config, *, mode, progress):
        ran.update(config=config, mode=mode, asked=len(lm.prompts))
        (tmp_path / "run" / "tables").mkdir(parents=True)
        (tmp_path / "run" / "tables" / "lm_answers.csv").write_text("model,prompt,invalid\nmine,MIN,0.5\n")
        return tmp_path / "run"

    lm = FakeLM()
    monkeypatch.setattr(sm, "open_lm_from_arguments", lambda parser, args, n_ctx: lm)
    monkeypatch.setattr(run_module, "run_study", fake_run)
    assert sm.main(["--lm", "mine", "--config", str(cfg), "--fit", "--quick", "--limit", "1", "--samples", "2",
                    "--conditions", "MIN"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("social meaning for mine: 1 queries x 2 samples = 2 requests")
    assert ran == {"config": cfg, "mode": "quick", "asked": 2} and (tmp_path / "m" / "results_MIN.json").is_file()
    assert "mine MIN: invalid 0.5" in out and out[-1] == f"report: {tmp_path / 'run' / 'report.md'}"


def test_the_lms_config_names_the_step_so_pragmodels_lm_elicit_reaches_it(mirror):
    """`pragmodels lm elicit social_meaning_lms --lm smollm2 --fit` needs the config's lm_step."""
    assert json.loads(sm.LMS_CONFIG.read_text())["lm_step"] == "models/social_meaning/elicit.py:main"
