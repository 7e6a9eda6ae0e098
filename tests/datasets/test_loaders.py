"""Loaders against the offline mirror, plus corrupted, truncated and wrong-version copies."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from pragmodels import datasets
from pragmodels.datasets import REGISTRY, DataIntegrityError, DataSchemaError
from pragmodels.datasets.fetch import sha256_of


def test_registry_hashes_match_the_mirror(mirror):
    for entry in REGISTRY.values():
        assert sha256_of(mirror / entry.path) == entry.sha256, entry.key
        assert entry.commit in entry.url and len(entry.commit) == 40
        assert entry.licence and entry.citation


def test_social_human(mirror):
    df = datasets.load_social_human()
    assert df["participant_id"].nunique() == 362 and len(df) == 362 * 6
    assert set(df["attribute"]) == set(datasets.ATTRIBUTES)
    assert df["rating"].between(1, 7).all()
    cells = df.groupby(["scenario", "context", "form"])["participant_id"].nunique()
    assert len(cells) == 24 and cells.min() == 11 and cells.max() == 20  # mirror README: 11-20 per cell
    # human main effect for competent (mirror README: .882), pooled over all rows
    comp = df[df.attribute == "competent"]
    delta = comp[comp.form == "precise"].rating.mean() - comp[comp.form == "approx"].rating.mean()
    assert round(delta, 3) == 0.882


def test_social_llm_keeps_invalid_rows(mirror):
    df = datasets.load_social_llm()
    assert len(df) == 4 * 4320
    assert df.groupby("prompt")["valid"].sum().to_dict() == {"MIN": 4222, "ALT": 4320, "KMA": 4316, "COM": 4306}
    invalid = df[~df.valid]
    assert invalid["rating"].isna().all() and set(invalid[invalid.prompt == "MIN"].model) == {"claude"}
    assert df.loc[df.valid, "rating"].between(1, 7).all()


def test_wavelength(mirror):
    items = datasets.load_wavelength()
    assert len(items) == 100 and all(len(r) == 40 for r in items.responses)
    guesses = datasets.load_wavelength(long=True)
    assert len(guesses) == 4000 and guesses.guess.between(0, 100).all()
    assert np.isclose(np.corrcoef(items.target, items.response_mean)[0, 1], 0.958, atol=5e-4)


def test_drinq(mirror):
    df = datasets.load_drinq()
    assert len(df) == 231 and df.consensus.value_counts().to_dict() == {"B": 52, "D": 52, "C": 43, "E": 43, "A": 41}
    assert df.implied_letter.notna().sum() == 230
    assert (df.consensus == df.implied_letter).sum() == 44  # the upstream disagreement is kept visible


def _copy(mirror, tmp_path, key):
    src = mirror / REGISTRY[key].path
    dst = tmp_path / REGISTRY[key].path
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)
    return dst


def test_corrupted_value_is_named(mirror, tmp_path):
    path = _copy(mirror, tmp_path, "social_human")
    df = pd.read_csv(path)
    df.loc[17, "helpful"] = 9
    df.to_csv(path, index=False)
    with pytest.raises(DataIntegrityError, match=r"experiment1.csv: sha256 .* does not match"):
        datasets.load_social_human(path)
    with pytest.raises(DataSchemaError, match=r"experiment1.csv: column 'helpful', row 17: value 9; expected a number in \[1, 7\]"):
        datasets.load_social_human(path, verify_hash=False)


def test_missing_column_is_named(mirror, tmp_path):
    path = _copy(mirror, tmp_path, "wavelength")
    pd.read_csv(path).drop(columns=["clue"]).to_csv(path, index=False)
    with pytest.raises(DataSchemaError, match=r"data.csv: missing column\(s\) \['clue'\]"):
        datasets.load_wavelength(path, verify_hash=False)


def test_truncated_copies_fail(mirror, tmp_path):
    for key, loader in [("drinq", datasets.load_drinq), ("wavelength", datasets.load_wavelength)]:
        path = _copy(mirror, tmp_path, key)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(DataIntegrityError, match="truncated"):
            loader(path)
        with pytest.raises(DataSchemaError, match=str(path.name)):
            loader(path, verify_hash=False)
    path = _copy(mirror, tmp_path, "social_llm_KMA")
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(DataSchemaError, match="results_KMA.json: not valid JSON"):
        datasets.load_social_llm(["KMA"], paths={"KMA": path}, verify_hash=False)


def test_llm_out_of_range_rating_is_named(mirror, tmp_path):
    path = _copy(mirror, tmp_path, "social_llm_ALT")
    text = path.read_text().replace('"likert": 2,', '"likert": 12,', 1)
    path.write_text(text)
    with pytest.raises(DataSchemaError, match=r"results_ALT.json: column 'likert', row 50: value 12"):
        datasets.load_social_llm(["ALT"], paths={"ALT": path}, verify_hash=False)


def test_mirror_without_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PRAGMODELS_DATA_DIR", str(tmp_path))
    with pytest.raises(DataIntegrityError, match="not found in the offline mirror"):
        datasets.load_drinq()


def test_download_into_cache_verifies_hash(mirror, tmp_path, monkeypatch):
    from pragmodels.datasets import registry

    entry = REGISTRY["drinq"]
    fake = registry.DataFile(**{**entry.__dict__})
    monkeypatch.setattr(type(fake), "url", property(lambda self: (mirror / self.path).as_uri()))
    monkeypatch.delenv("PRAGMODELS_DATA_DIR")
    monkeypatch.setenv("PRAGMODELS_CACHE_DIR", str(tmp_path / "cache"))
    import os
    old = os.umask(0o022)
    try:
        assert len(datasets.load_drinq()) == 231
    finally:
        os.umask(old)
    assert (tmp_path / "cache" / entry.path).is_file()
    assert (tmp_path / "cache" / entry.path).stat().st_mode & 0o777 == 0o644  # the umask's, not mkstemp's 0600
    # a download whose bytes do not match leaves nothing behind in the cache
    bad = registry.DataFile(**{**entry.__dict__, "key": "drinq", "sha256": "0" * 64})
    monkeypatch.setitem(REGISTRY, "drinq", bad)
    (tmp_path / "cache" / entry.path).unlink()
    with pytest.raises(DataIntegrityError, match="does not match the registered 0000"):
        datasets.load_drinq()
    assert list((tmp_path / "cache" / entry.path).parent.iterdir()) == []


def test_failed_download_names_the_url_and_the_offline_mirror(tmp_path, monkeypatch):
    from pragmodels.datasets import DataDownloadError, registry

    entry = REGISTRY["drinq"]
    fake = registry.DataFile(**{**entry.__dict__})
    unreachable = "https://pragmodels.invalid/drinq.csv"
    monkeypatch.setattr(type(fake), "url", property(lambda self: unreachable))
    monkeypatch.delenv("PRAGMODELS_DATA_DIR", raising=False)
    monkeypatch.setenv("PRAGMODELS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(DataDownloadError, match=r"could not download data set 'drinq' from https://pragmodels\.invalid/drinq\.csv .*PRAGMODELS_DATA_DIR"):
        datasets.load_drinq()
    assert list((tmp_path / "cache").rglob("*")) == [p for p in (tmp_path / "cache").rglob("*") if p.is_dir()]  # no partial file


def test_loaders_cast_nothing_without_the_hash_check(mirror, tmp_path):
    """Issue 9, finding 11: with verify_hash=False a fractional id, a JSON true rating, a duplicate
    record and a header-only file were cast or kept; each is now an error naming file, row and value."""
    path = _copy(mirror, tmp_path, "social_human")
    df = pd.read_csv(path)
    df["participant_id"] = df["participant_id"].astype(float)
    df.loc[3, "participant_id"] = 1.5
    df.to_csv(path, index=False)
    with pytest.raises(DataSchemaError, match=r"column 'participant_id', row 3: value 1.5; expected an integer"):
        datasets.load_social_human(path, verify_hash=False)
    pd.read_csv(_copy(mirror, tmp_path / "h", "social_human")).head(0).to_csv(path, index=False)
    with pytest.raises(DataSchemaError, match=r"experiment1.csv: no data rows \(a header only\)"):
        datasets.load_social_human(path, verify_hash=False)

    import json

    llm = _copy(mirror, tmp_path, "social_llm_ALT")
    records = json.loads(llm.read_text())
    first_valid = next(i for i, r in enumerate(records) if r["likert"] is not None)
    bad = [dict(r) for r in records]
    bad[first_valid]["likert"] = True
    llm.write_text(json.dumps(bad))
    with pytest.raises(DataSchemaError, match=rf"column 'likert', row {first_valid}: value True; expected an integer"):
        datasets.load_social_llm(["ALT"], paths={"ALT": llm}, verify_hash=False)
    bad = [dict(r) for r in records]
    bad[7]["sample_id"] = 2.5
    llm.write_text(json.dumps(bad))
    with pytest.raises(DataSchemaError, match=r"column 'sample_id', row 7: value 2.5; expected an integer"):
        datasets.load_social_llm(["ALT"], paths={"ALT": llm}, verify_hash=False)
    llm.write_text(json.dumps(records + records[:1]))
    with pytest.raises(DataSchemaError, match=rf"row {len(records)} repeats the record"):
        datasets.load_social_llm(["ALT"], paths={"ALT": llm}, verify_hash=False)


def test_unwritable_download_cache_names_the_folder_and_the_mirror(tmp_path, monkeypatch):
    """Issue 9, finding 17: a cache that cannot be written was a bare OSError. (Tests run as root,
    for whom permissions do not bite: the cache sits under a regular file instead.)"""
    from pragmodels.datasets import DataDownloadError

    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    monkeypatch.delenv("PRAGMODELS_DATA_DIR", raising=False)
    monkeypatch.setenv("PRAGMODELS_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(DataDownloadError, match=r"cannot write the download cache .*not_a_folder/cache.* "
                                                r"PRAGMODELS_CACHE_DIR .* PRAGMODELS_DATA_DIR"):
        datasets.load_drinq()


@pytest.mark.parametrize("edit, match", [
    (lambda df: df.assign(options=df.options.where(df.index != 12, "A. one\nB. two\nC. three")),
     r"drinq_validated.csv: column 'options', row 12: value 'A. one\\nB. two\\nC. three'; expected five lines"),
    (lambda df: df.assign(options=df.options.where(df.index != 3, "A. a\nB. b\nC. c\nD. d\nF. f")),
     r"column 'options', row 3: value .*F\. f"),
    (lambda df: df.assign(consensus=df.consensus.where(df.index != 40, "F")), r"column 'consensus', row 40: value 'F'"),
    (lambda df: df.drop(columns=["context"]), r"missing column\(s\) \['context'\]"),
    (lambda df: df.assign(options=df.options.where(df.index != 7, "A. a\nB. b\nC. c\nD. d\nE. ")),
     r"column 'options', row 7: value .*E\. '; expected five lines"),
    (lambda df: df.assign(question=df.question.where(df.index != 5, None)), r"column 'question', row 5: value nan"),
    (lambda df: df.assign(context=df.context.where(df.index != 9, "  ")), r"column 'context', row 9: value '  '"),
])
def test_drinq_bad_rows_are_named(mirror, tmp_path, edit, match):
    path = _copy(mirror, tmp_path, "drinq")
    edit(pd.read_csv(path)).to_csv(path, index=False)
    with pytest.raises(DataSchemaError, match=match):
        datasets.load_drinq(path, verify_hash=False)


# ------------------------------------------------------------------ issue 33, item 6: what the hash no longer checks
def _swap(a, b):
    return lambda df: df.assign(**{a: df[b], b: df[a]})


def _put(row, column, value):
    def edit(df):
        df = df.copy()
        df[column] = df[column].astype(object)
        df.loc[row, column] = value
        return df
    return edit


_LOADERS = {"social_human": datasets.load_social_human, "wavelength": datasets.load_wavelength,
            "drinq": datasets.load_drinq}


@pytest.mark.parametrize("key, edit, match", [
    ("social_human", lambda df: df.drop(index=5), r"experiment1.csv: 361 participants; expected 362"),
    ("social_human", lambda df: pd.concat([df, df.iloc[[3]]]),
     r"row 362 repeats the participant \{'participant_id': 931621\}; expected one row per participant_id"),
    ("social_human", _swap("context", "form"), r"column 'context', row 0: value 'precise'"),
    ("social_human", _put(4, "helpful", None), r"column 'helpful', row 4: value nan; expected an integer"),
    ("social_human", _put(4, "participant_id", "P7"), r"column 'participant_id', row 4: value 'P7'"),
    ("wavelength", lambda df: df.drop(index=5),
     r"data.csv: the scale \{'left': '.+', 'right': '.+'\} has 1 item; expected 2"),
    ("wavelength", lambda df: df.drop(index=[4, 5]), r"data.csv: 98 items; expected 100"),
    ("wavelength", lambda df: pd.concat([df, df.iloc[[3]]]), r"row 100 repeats the item \{'left': "),
    ("wavelength", _swap("target", "response_mean"), r"column 'target', row 0: value 33.85; expected an integer"),
    ("wavelength", _put(4, "left", None), r"column 'left', row 4: value nan; expected a non-empty text"),
    ("wavelength", _put(4, "clue", " "), r"column 'clue', row 4: value ' '; expected a non-empty text"),
    ("wavelength", _put(4, "response_list", None), r"column 'response_list', row 4: value nan"),
    ("wavelength", _put(4, "response_mean", "abc"),
     r"column 'response_mean', row 4: value 'abc'; expected a number in \[0, 100\]"),
    ("wavelength", _put(4, "response_list", '[1, "a"]'),
     r"""column 'response_list', row 4: value '\[1, "a"\]'; expected a JSON list of integers in \[0, 100\]"""),
    ("wavelength", lambda df: df.assign(response_list=df.response_list.map(lambda s: json.dumps(json.loads(s)[:39])),
                                        response_mean=df.response_list.map(lambda s: np.mean(json.loads(s)[:39]))),
     r"column 'response_list', row 0: 39 guesses; expected 40"),
    ("drinq", lambda df: df.drop(index=5), r"drinq_validated.csv: 230 items; expected 231"),
    ("drinq", lambda df: pd.concat([df, df.iloc[[3]]]), r"row 231 repeats the item \{'question': "),
    ("drinq", _swap("consensus", "implied_comment"), r"column 'consensus', row 0: value \"You clearly"),
    ("drinq", _put(4, "consensus", None), r"column 'consensus', row 4: value nan"),
    ("drinq", _put(4, "implied_comment", " "), r"column 'implied_comment', row 4: value ' '; expected a non-empty"),
])
def test_a_tampered_copy_without_the_hash_check_names_the_column_or_key(mirror, tmp_path, key, edit, match):
    path = _copy(mirror, tmp_path, key)
    edit(pd.read_csv(path)).to_csv(path, index=False)
    with pytest.raises(DataSchemaError, match=match):
        _LOADERS[key](path, verify_hash=False)


def _drop_cell(records):
    return [r for r in records if (r["model"], r["scenario"], r["attribute"]) != ("gpt", "house", "pedantic")]


def _set_record(i, field, value):
    def edit(records):
        records[i] = {**records[i], field: value}
        return records
    return edit


@pytest.mark.parametrize("edit, match", [
    (lambda r: r[:7] + r[8:], r"the cell \{'model': '.+', 'scenario': .+\} has 9 records; expected 10"),
    (_drop_cell, r"the cell \{'model': 'gpt', 'scenario': 'house', .*'attribute': 'pedantic'\} has 0 records"),
    (lambda r: r + [r[3]], r"row 4320 repeats the record"),
    (lambda r: [{**x, "context": x["utterance"], "utterance": x["context"]} for x in r],
     r"column 'context', row 0: value 'precise'"),
    (_set_record(4, "raw_response", None), r"column 'raw_response', row 4: value nan; expected a string"),
    (_set_record(4, "raw_response", 5), r"column 'raw_response', row 4: value 5; expected a string"),
    (_set_record(4, "likert", "5"), r"column 'likert', row 4: value '5'; expected an integer or null"),
    (_set_record(4, "sample_id", "3"), r"column 'sample_id', row 4: value '3'; expected an integer"),
    (_set_record(4, "sample_id", 10), r"column 'sample_id', row 4: value 10; expected a number in \[0, 9\]"),
    (lambda r: r[:4] + [5] + r[5:], r"row 4: 5; expected a JSON object"),
])
def test_a_tampered_llm_file_without_the_hash_check_names_the_column_or_key(mirror, tmp_path, edit, match):
    path = _copy(mirror, tmp_path, "social_llm_ALT")
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    with pytest.raises(DataSchemaError, match=match):
        datasets.load_social_llm(["ALT"], paths={"ALT": path}, verify_hash=False)


def test_a_json_file_nested_too_deeply_is_a_schema_error(mirror, tmp_path):
    path = _copy(mirror, tmp_path, "social_llm_ALT")
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataSchemaError, match=r"results_ALT.json: not valid JSON \(nested more than"):
        datasets.load_social_llm(["ALT"], paths={"ALT": path}, verify_hash=False)


def test_social_prompts_the_papers_questionnaire(mirror):
    q = datasets.load_social_prompts()
    assert sorted(q["conditions"]) == sorted(datasets.PROMPTS) and q["n_samples_per_query"] == 10
    assert q["conditions"]["MIN"].startswith("**Task description:**\n{task_description}\n\n**Task situation:**")
    assert "\\n" not in "".join(q["conditions"].values())  # the file's \n written out as newlines
    assert sorted(q["stimuli"]) == sorted(datasets.SCENARIO_TO_LLM.values())
    assert q["stimuli"]["bicycle"]["speaker"] == "Jamie" and q["stimuli"]["office"]["human_csv_scenario_label"] == "absence"
    assert set(q["attributes"]) == set(datasets.ATTRIBUTES) and "well-prepared" in q["attributes"]
    assert "{speaker}" in q["blocks"]["task_block_kma"] and "{attribute}" in q["blocks"]["task_block_minimal"]


def test_a_mirror_only_file_is_never_downloaded(tmp_path, monkeypatch):
    from pragmodels.datasets import DataDownloadError, fetch

    monkeypatch.delenv("PRAGMODELS_DATA_DIR", raising=False)
    monkeypatch.setenv("PRAGMODELS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(fetch, "_download", lambda *a: pytest.fail("a mirror-only file was downloaded"))
    with pytest.raises(DataDownloadError, match=r"data set 'social_prompts' \(social/prompts_from_build_prompts.json\) "
                                                r"is read from the offline mirror only: it was derived from https://\S+"
                                                r"/prompts/build_prompts.py.*Set PRAGMODELS_DATA_DIR") as e:
        datasets.load_social_prompts()
    assert "\n" not in str(e.value)
    monkeypatch.setenv("PRAGMODELS_DATA_DIR", str(tmp_path))
    with pytest.raises(DataIntegrityError, match=r"not found in the offline mirror .*it is read from the offline "
                                                 r"mirror only\)"):
        datasets.load_social_prompts()


def _tamper_prompts(mirror, tmp_path, key, edit):
    path = _copy(mirror, tmp_path, key)
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    other = "social_stimuli" if key == "social_prompts" else "social_prompts"
    paths = {key: path, other: mirror / REGISTRY[other].path}
    return datasets.load_social_prompts(paths["social_prompts"], paths["social_stimuli"], verify_hash=False)


@pytest.mark.parametrize("key, edit, match", [
    ("social_prompts", lambda d: {**d, "conditions": {**d["conditions"], "KMA": "{task_description} {oops}"}},
     r"prompts_from_build_prompts.json: key 'conditions.KMA': names \{oops\}; expected only"),
    ("social_prompts", lambda d: {**d, "conditions": {k: v for k, v in d["conditions"].items() if k != "COM"}},
     r"key 'conditions': .*expected an object with the keys \('MIN', 'ALT', 'KMA', 'COM'\)"),
    ("social_prompts", lambda d: {**d, "attributes": d["attributes"][:5]}, r"key 'attributes': .*expected \["),
    ("social_prompts", lambda d: {**d, "task_block_minimal": ""}, r"key 'task_block_minimal': ''; expected a non-empty"),
    ("social_stimuli", lambda d: {k: v for k, v in d.items() if k != "pasta"},
     r"stimuli_from_exp_texts.json: scenarios \[.*\]; expected \["),
    ("social_stimuli", lambda d: {**d, "house": {**d["house"], "utterance_approx": 3}},
     r"stimuli_from_exp_texts.json: key 'house.utterance_approx': 3; expected a non-empty string"),
])
def test_a_tampered_questionnaire_names_the_key(mirror, tmp_path, key, edit, match):
    with pytest.raises(DataSchemaError, match=match):
        _tamper_prompts(mirror, tmp_path, key, edit)
    with pytest.raises(DataIntegrityError, match="does not match the registered"):
        datasets.load_social_prompts(**{"path" if key == "social_prompts" else "stimuli": tmp_path / REGISTRY[key].path})


def test_an_elicited_lm_is_read_beside_the_published_ones(mirror, tmp_path):
    records = [{**r, "model": "mylm"} for r in json.loads((mirror / REGISTRY["social_llm_KMA"].path).read_text())
               if r["model"] == "gpt"]
    (tmp_path / "results_KMA.json").write_text(json.dumps(records))
    df = datasets.load_social_llm_elicited(tmp_path, "mylm", ["KMA"])
    assert len(df) == 1440 and set(df.model) == {"mylm"} and list(df.columns) == list(datasets.load_social_llm(["KMA"]).columns)
    with pytest.raises(FileNotFoundError, match=r"results_MIN.json: no ratings of LM 'mylm' for prompt MIN; elicit them "
                                                r"with `python -m models.social_meaning.elicit --lm mylm"):
        datasets.load_social_llm_elicited(tmp_path, "mylm")
    assert len(datasets.load_social_llm_elicited(tmp_path, "mylm", complete=False)) == 1440
    with pytest.raises(ValueError, match=r"model 'gpt' is a published LLM's name"):
        datasets.load_social_llm_elicited(tmp_path, "gpt", ["KMA"])
    with pytest.raises(DataSchemaError, match=r"column 'model', row 0: value 'mylm'"):
        datasets.load_social_llm_elicited(tmp_path, "other", ["KMA"])
    cell = lambda r: (r["scenario"], r["context"], r["utterance"], r["attribute"])  # noqa: E731
    some = {cell(r) for r in records[:40]}
    part = [r for r in records if cell(r) in some]
    (tmp_path / "results_KMA.json").write_text(json.dumps(part))  # a --limit run: some queries
    with pytest.raises(DataSchemaError, match=r"the cell .* has 0 records; expected 10"):
        datasets.load_social_llm_elicited(tmp_path, "mylm", ["KMA"])
    got = datasets.load_social_llm_elicited(tmp_path, "mylm", ["KMA"], complete=False)
    assert len(got) == 10 * len(some) and got.groupby(["scenario", "context", "form", "attribute"]).size().eq(10).all()
    (tmp_path / "results_KMA.json").write_text(json.dumps(part[1:]))  # a query without all its samples
    with pytest.raises(DataSchemaError, match=r"has 9 records; expected 10"):
        datasets.load_social_llm_elicited(tmp_path, "mylm", ["KMA"], complete=False)


def test_wavelength_prompts_the_papers_listeners_and_speaker(mirror, tmp_path):
    q = datasets.load_wavelength_prompts()
    assert q["answer_prefix"] == "<answer>" and q["answer_suffix"] == "</answer>"
    assert q["listener_sample_instruction"].endswith("Scale: {left} (0) to {right} (100).\nClue: {clue}.")
    assert "{possible_values}" in q["listener_logprob_instruction"] and "{target}" in q["speaker_instruction"]
    path = _copy(mirror, tmp_path, "wavelength_prompts")
    path.write_text(json.dumps({**json.loads(path.read_text()), "speaker_instruction": "{left} {oops}"}))
    with pytest.raises(DataSchemaError, match=r"key 'speaker_instruction': names \{oops\}"):
        datasets.load_wavelength_prompts(path, verify_hash=False)
