"""models.social_meaning.new_lms: each `lms` entry checked against its elicited files (the LM's
identity, completeness) before any fit, one line naming the entry and the file; the new LMs' Tables 2-4
rows, answer table and report section (a scripted fake LM; no fit)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from models.social_meaning import elicit as sm, new_lms
from pragmodels import datasets
from pragmodels.lm.entry import LMEntry

URL = "http://127.0.0.1:9/v1"


class ScriptedLM:
    """Answers a digit 1-7 or, one time in four, no digit, from the seed alone."""

    identity = f"openai:{URL}|fake-model"

    def sample(self, prompt, n, *, temperature=1.0, max_tokens=32, stop=(), seed=0, answer_prefix=""):
        r = np.random.default_rng(seed)
        return [str(r.integers(1, 8)) if r.random() < 0.75 else "I cannot say."]


def entry(folder, model="fake-model") -> LMEntry:
    return LMEntry.model_validate({"backend": "openai", "base_url": URL, "model": model, "outputs": str(folder)})


@pytest.fixture(scope="module")
def elicited(mirror, tmp_path_factory):
    out = tmp_path_factory.mktemp("lm") / "fake"
    sm.elicit_lm(ScriptedLM(), "fake", out, conditions=["MIN"], n_samples=2, log=lambda s: None)
    return out


def test_the_entry_is_checked_against_the_manifest_before_anything_is_read(elicited, tmp_path):
    recorded = []
    new, info = new_lms.read_checked({"fake": entry(elicited)}, record=lambda k, p: recorded.append(k))
    assert len(new) == 288 and set(new.prompt) == {"MIN"} and info["fake"]["settings"]["n_samples"] == 2
    assert info["fake"]["identity"] == ScriptedLM.identity and info["fake"]["prompts"] == ["MIN"]
    assert recorded == ["elicited_fake_MIN", "elicited_fake_manifest"]
    manifest = elicited / "progress.jsonl.manifest.json"
    with pytest.raises(ValueError) as e:
        new_lms.read_checked({"fake": entry(elicited, model="other-model")})
    assert str(e.value) == (f"`lms.fake`: {manifest} records answers of {ScriptedLM.identity}, but the entry names "
                            "server model 'other-model'; elicit again or correct the entry.")
    with pytest.raises(FileNotFoundError, match=r"^`lms.none`: no manifest .*progress.jsonl.manifest.json; elicit"):
        new_lms.read_checked({"fake": entry(elicited), "none": entry(tmp_path / "none")})


def test_an_incomplete_results_file_is_named_and_a_subset_of_whole_blocks_is_read(mirror, tmp_path):
    out = tmp_path / "part"
    sm.elicit_lm(ScriptedLM(), "part", out, conditions=["KMA"], limit=5, n_samples=2, log=lambda s: None)
    with pytest.raises(ValueError, match=rf"^`lms.part`: {out / 'results_KMA.json'} is incomplete or not in the "
                                         r"published schema \(5 of 144 cells, not the first 24 of the fixed order of "
                                         r"--limit .*--conditions KMA \(resumable\).$"):
        new_lms.read_checked({"part": entry(out)})
    sm.elicit_lm(ScriptedLM(), "part", out, conditions=["KMA"], limit=48, n_samples=2, log=lambda s: None)
    new, info = new_lms.read_checked({"part": entry(out)})
    assert info["part"]["cells"] == {"KMA": 48} and len(new) == 96


def test_tables_2_4_rows_of_a_new_lm_and_its_answers(elicited):
    new, info = new_lms.read_checked({"fake": entry(elicited)})
    human = datasets.load_social_human()
    row = new_lms.metrics_table(human, new).iloc[0]
    assert row.attributes == 6 and row.cells == 24 and row.n_valid + row.n_invalid == 288 and np.isfinite(row.spearman)
    answers = new_lms.answer_table(new, info).iloc[0]
    assert answers.requests == 288 and answers.parse_failures == pytest.approx((~new.valid).mean())
    assert sum(answers[f"share_{k}"] for k in range(1, 8)) == pytest.approx(1.0)
    # a condition mean without a valid rating: CDS, DAS, ISS undefined; the rank and agreement metrics over 23
    a = datasets.ATTRIBUTES[0]
    hole = new.copy()
    hole.loc[(hole.attribute == a) & (hole.context == "high") & (hole.form == "precise"), "valid"] = False
    short = new_lms.metrics_table(human, hole).iloc[0]
    assert (short.attributes, short.cells) == (5, 23) and np.isnan(short.cds) and np.isfinite(short.spearman)
    assert short.spearman != row.spearman and new_lms.complete_effects(hole) == list(datasets.ATTRIBUTES[1:])


def test_the_report_section_says_what_the_answers_can_carry(elicited, tmp_path):
    new, info = new_lms.read_checked({"fake": entry(elicited)})
    answers = new_lms.answer_table(new, info)
    answers.loc[0, "modal_share"] = 0.9  # near-constant ratings are said to be so
    answers.loc[0, ["share_1", "share_7"]] = [0.5, 0.3]  # and ratings at the scale's named ends
    answers.to_csv(tmp_path / "lm_answers.csv", index=False)
    new_lms.metrics_table(datasets.load_social_human(), new).to_csv(tmp_path / "lm_metrics.csv", index=False)
    cols = {f"{v}{end}": x for v in ("alpha", "noise", "lapse") for end, x in (("", 1.0), ("_lo", 0.5), ("_hi", 2.0))}
    pd.DataFrame([{"fit": "human", **cols, "converged": True},
                  {"fit": "fake MIN", **cols, "noise": 1.5, "alpha_hi": 9.0, "converged": False}]).to_csv(
        tmp_path / "parameters.csv", index=False)
    pd.DataFrame([{"model": "fake", "prompt": "MIN", "cds": np.nan, "left_out": "a stratum has one rating."}]).to_csv(
        tmp_path / "cds_model_lms.csv", index=False)
    text = new_lms.section(tmp_path, quick=True, lm_names=["fake"])
    assert ("- **fake MIN** is left out of the measurement model: a stratum has one rating (too few valid answers "
            "for the effects' sampling covariance).") in text and "CDS of the measurement model" not in text
    assert ("- RSA fit **fake MIN** (below the sampling standards): response noise 1.50 rating points against the "
            "humans' 1.00; alpha's 94% interval [0.50, 9.00] is wider than the humans' [0.50, 2.00]") in text
    assert "| fake MIN † | 1.00 [0.50, 9.00] | 1.50 [0.50, 2.00] |" in text
    assert "## New LMs, beside the published three" in text and "**Quick run**" in text
    assert f"| fake | MIN | 144 | 288 | 2 | {answers.parse_failures[0]:.0%} |" in text
    assert "90% of the valid ones are one and the same rating" in text
    assert "80% of the valid ones are 1 or 7, the two numbers the prompt's scale names" in text
    assert json.loads(answers.answer_prefix[0]) == "" and isinstance(pd.read_csv(tmp_path / "lm_metrics.csv"),
                                                                      pd.DataFrame)


def test_the_study_checks_every_entry_before_any_fit(elicited, tmp_path):
    """The LM config's study stops at an entry whose files record another LM, before the first fit."""
    from pragmodels.runs.study import run_study

    config = json.loads((sm.ROOT / "fits" / "social_meaning_lms.json").read_text())
    config.pop("$schema")
    config["study"] = f"{sm.ROOT / 'models' / 'social_meaning' / 'study.py'}:run"
    config["lms"] = {"fake": {"backend": "openai", "base_url": URL, "model": "other-model", "outputs": str(elicited)}}
    path = tmp_path / "lms.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"^`lms.fake`: .* records answers of openai:.*\|fake-model, but the entry "
                                         "names server model 'other-model'"):
        run_study(path, mode="quick", out=tmp_path / "run", progress=False)
    assert not (tmp_path / "run" / "posteriors").exists()


def test_a_new_lms_name_cannot_pass_for_a_human_fit(mirror):
    from models.social_meaning.config import Config
    from pragmodels.errors import ConfigError
    from pragmodels.runs.schema import validate_config

    base = json.loads((sm.ROOT / "fits" / "social_meaning_lms.json").read_text())
    with pytest.raises(ConfigError, match="'human-like': a new LM's name is one word that does not start with 'human'"):
        validate_config(Config, {**base, "lms": {"human-like": {"model": "smollm2"}}}, what="study config")
    assert set(validate_config(Config, base, what="study config").lms) == {"smollm2", "gemma3"}


@pytest.mark.parametrize("rho,verdict", [(0.05, "do not follow the humans' as the published LLMs' do"),
                                         (0.75, "follow the humans' about as the published LLMs' do"),
                                         (0.95, "follow the humans' more closely than the published LLMs' do")])
def test_the_sentence_on_condition_means_follows_the_numbers(tmp_path, rho, verdict):
    """It said 'do not follow the humans' as the published LLMs' do' whatever the numbers (found in review)."""
    tables = sm.ROOT / "fits" / "social_meaning_lms" / "quick" / "tables"  # every column as the study writes it
    row = pd.read_csv(tables / "lm_metrics.csv").iloc[0].to_dict()
    pd.DataFrame([{**row, "model": "fake", "prompt": "MIN", "spearman": rho, "rmse": 0.5, "cells": 24}]).to_csv(
        tmp_path / "lm_metrics.csv", index=False)
    repro = pd.read_csv(tables / "reproduction.csv")
    repro = repro[repro.prompt == "MIN"].head(2).assign(spearman=[0.7, 0.8])
    repro.to_csv(tmp_path / "reproduction.csv", index=False)
    text = new_lms.section(tmp_path, quick=True, lm_names=["fake"])
    assert f"**fake MIN**'s condition means {verdict}: Spearman {rho:.2f} (the published LLMs: 0.70 to 0.80)" in text


def _params(tmp_path, lm_alpha, human_alpha=(0.3, 4.4), noise=1.5):
    cols = {f"{v}{end}": x for v in ("alpha", "noise", "lapse") for end, x in (("", 1.0), ("_lo", 0.5), ("_hi", 2.0))}
    pd.DataFrame([{"fit": "human", **cols, "alpha_lo": human_alpha[0], "alpha_hi": human_alpha[1], "converged": True},
                  {"fit": "fake MIN", **cols, "alpha_lo": lm_alpha[0], "alpha_hi": lm_alpha[1], "noise": noise,
                   "converged": True}]).to_csv(tmp_path / "parameters.csv", index=False)


def test_the_section_says_whether_the_rsa_fit_identifies_alpha_and_what_the_lm_cannot_show(elicited, tmp_path):
    """Issue 36 item 5: whether the RSA fit is identified (alpha's 94% interval against its LogNormal(0.5, 0.75)
    prior's, log scale: 2 x 1.881 x 0.75 = 2.82), whether the ratings are near-constant, and one plain sentence per
    LM on what it can and cannot show, from the numbers (the section said none of these)."""
    new, info = new_lms.read_checked({"fake": entry(elicited)})
    answers = new_lms.answer_table(new, info)
    answers.to_csv(tmp_path / "lm_answers.csv", index=False)
    assert new_lms.alpha_prior_span() == pytest.approx(2 * 1.8807936 * 0.75)
    _params(tmp_path, (0.4, 6.8), noise=4.0)  # the prior's own interval: ln(17) / 2.82 = 100%
    text = new_lms.section(tmp_path, quick=False, lm_names=["fake"])
    assert "its ratings do not identify alpha: its 94% interval spans 100% of its prior's on the log scale (the " \
           "humans' 95%, whose ratings narrow it little either)" in text
    assert f"its valid ratings are not near-constant (sd {answers.sd[0]:.2f}; the commonest rating " \
           f"{answers.modal_share[0]:.0%} of them)" in text
    assert "- **In short, fake MIN**: it shows that the pipeline runs end to end for a new LM; it cannot show how " \
           "its pragmatic sensitivity compares with people's: the RSA fit does not identify its alpha; its response " \
           "noise is 4 times the humans'." in text
    _params(tmp_path, (1.0, 2.0), human_alpha=(1.0, 1.5))  # ln 2 / 2.82 = 25%
    text = new_lms.section(tmp_path, quick=False, lm_names=["fake"])
    assert "its ratings identify alpha: its 94% interval spans 25% of its prior's on the log scale (the humans' " \
           "14%)" in text and "can carry the paper's comparison with people" in text
