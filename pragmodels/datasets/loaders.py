"""Tidy, validated pandas frames for the registered data sets.

Layering: :mod:`pragmodels.datasets.fetch`, :mod:`pragmodels.datasets.schema`, ``pandas``.

Every loader takes ``path=None`` (use the registry: mirror or verified download) or an explicit
file, and ``verify_hash`` (checked against the registry even for an explicit path, unless
switched off). Nothing is dropped: invalid LLM responses stay in the frame with ``valid=False``.
Without the hash check (a copy of one's own), the schema checks what the hash would have: types
and nulls per column, keys that appear once, each design cell's count and the data set's size
(:mod:`pragmodels.datasets.schema`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pragmodels.datasets.fetch import locate, verify
from pragmodels.datasets.registry import get
from pragmodels.datasets.schema import (
    DataSchemaError,
    check_count,
    check_design,
    check_in,
    check_integer,
    check_range,
    check_text,
    check_unique,
    require_columns,
)

__all__ = [
    "ATTRIBUTES",
    "PROMPTS",
    "LLMS",
    "SCENARIO_TO_LLM",
    "load_social_human",
    "load_social_llm",
    "load_social_llm_elicited",
    "load_social_prompts",
    "load_wavelength",
    "load_wavelength_prompts",
    "load_drinq",
]

ATTRIBUTES = ("competent", "knowledgeable", "well-prepared", "helpful", "likeable", "pedantic")
PROMPTS = ("MIN", "ALT", "KMA", "COM")
LLMS = ("gpt", "claude", "gemini")
#: human scenario labels -> the LLM files' labels (as in the upstream metrics code)
SCENARIO_TO_LLM = {"bike": "bicycle", "cooking": "pasta", "absence": "office",
                   "house": "house", "cinema": "cinema", "conference": "conference"}

# the published data sets' sizes: with the sha256 check off, a row dropped or repeated is found by them
_HUMAN_PARTICIPANTS = 362
_LLM_SAMPLES = 10  # per model x scenario x context x form x attribute
_WAVELENGTH_ITEMS, _WAVELENGTH_TARGETS, _WAVELENGTH_GUESSES = 100, 2, 40  # items; per scale; per item
_DRINQ_ITEMS = 231


def _resolve(key: str, path: str | os.PathLike[str] | None, verify_hash: bool) -> Path:
    if path is None:
        return locate(key, verify_hash=verify_hash)
    path = Path(path)
    return verify(path, get(key)) if verify_hash else path


def _read_csv(path: Path, **kw: Any) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise DataSchemaError(f"{path}: not a readable CSV file ({e}).") from e
    if len(df) == 0:
        raise DataSchemaError(f"{path}: no data rows (a header only); expected the data set's records.")
    return df


def load_social_human(path: str | os.PathLike[str] | None = None, *, verify_hash: bool = True) -> pd.DataFrame:
    """Solt et al. (2025) Exp. 1: one row per participant x attribute (362 x 6 rows).

    Columns: ``participant_id, scenario`` (LLM-file labels: bicycle, pasta, office, ...),
    ``scenario_human`` (original label), ``context`` (low/high), ``form`` (precise/approx),
    ``attribute`` (:data:`ATTRIBUTES`), ``rating`` (int 1-7).

    Parameters
    ----------
    path : str or path-like, optional
        The file to read. ``None``: the registry's copy (:func:`~pragmodels.datasets.fetch.locate`:
        the offline mirror ``PRAGMODELS_DATA_DIR``, else the download cache, downloading it
        if missing).
    verify_hash : bool
        Check the file's sha256 against the registry (also for an explicit ``path``).

    Returns
    -------
    pandas.DataFrame
        Long format, one row per participant and attribute, in attribute-major order.

    Raises
    ------
    DataIntegrityError
        The file's sha256 is not the registered one, or the offline mirror lacks it.
    DataDownloadError
        No mirror is set, the file is not cached and cannot be downloaded.
    DataSchemaError
        The file cannot be parsed, or a column is missing or holds a value outside its schema,
        a participant appears twice, a scenario x context x form cell is empty, or the file does
        not hold the 362 participants (the message names the file, column, row and value, or
        the key).
    """
    p = _resolve("social_human", path, verify_hash)
    raw = _read_csv(p)
    cols = {a: a.replace("-", "_") for a in ATTRIBUTES}
    require_columns(raw, ["participant_id", "scenario", "context", "form", *cols.values()], p)
    check_in(raw, "scenario", SCENARIO_TO_LLM, p)
    check_in(raw, "context", ("lowPr", "highPr"), p)
    check_in(raw, "form", ("precise", "approx"), p)
    for c in cols.values():
        check_integer(raw, c, p)
        check_range(raw, c, 1, 7, p)
    check_integer(raw, "participant_id", p)
    check_unique(raw, ["participant_id"], p, "participant")
    check_design(raw, ["scenario", "context", "form"], p, per_cell=None, unit=("participant", "participants"),
                 levels={"scenario": SCENARIO_TO_LLM, "context": ("lowPr", "highPr"), "form": ("precise", "approx")})
    check_count(len(raw), _HUMAN_PARTICIPANTS, p, "participants", "Solt et al. 2025, Exp. 1")
    wide = pd.DataFrame({
        "participant_id": raw["participant_id"].astype("int64"),
        "scenario": raw["scenario"].map(SCENARIO_TO_LLM),
        "scenario_human": raw["scenario"],
        "context": raw["context"].map({"lowPr": "low", "highPr": "high"}),
        "form": raw["form"],
        **{a: raw[c].astype("int64") for a, c in cols.items()},
    })
    long = wide.melt(
        id_vars=["participant_id", "scenario", "scenario_human", "context", "form"],
        value_vars=list(ATTRIBUTES), var_name="attribute", value_name="rating",
    )
    return long.reset_index(drop=True)


def load_social_llm(prompts: Iterable[str] = PROMPTS, *, paths: Mapping[str, str | os.PathLike[str]] | None = None,
                    verify_hash: bool = True) -> pd.DataFrame:
    """LLM Likert ratings (3 LLMs x 4 prompts x 10 samples), invalid responses kept.

    Columns: ``model, prompt, scenario, context, form, attribute, sample_id, rating`` (nullable
    Int64), ``valid`` (bool), ``raw_response``. ``rating`` is null exactly where the upstream
    record has no Likert value; ``valid`` is the upstream flag and false wherever ``rating`` is
    null.

    Parameters
    ----------
    prompts : iterable of str
        Which prompt conditions to load, in this order (a subset of :data:`PROMPTS`).
    paths : mapping of str to path, optional
        An explicit file per prompt (``{"MIN": "results_MIN.json"}``); prompts not in it use the
        registry's copy.
    verify_hash : bool
        Check each file's sha256 against the registry (also for explicit ``paths``).

    Returns
    -------
    pandas.DataFrame
        One row per upstream record, the prompts' files concatenated.

    Raises
    ------
    DataIntegrityError
        The file's sha256 is not the registered one, or the offline mirror lacks it.
    DataDownloadError
        No mirror is set, the file is not cached and cannot be downloaded.
    DataSchemaError
        The file cannot be parsed, a record is not an object, a column is missing or holds a
        value outside its schema (a string is not a number), a valid record has no Likert value,
        a record repeats another, or a model x scenario x context x form x attribute cell does
        not hold its 10 samples, ``sample_id`` 0 to 9 (the message names the file, column, row
        and value, or the key).
    ValueError
        A prompt not in :data:`PROMPTS`.
    """
    frames = []
    for prompt in prompts:
        if prompt not in PROMPTS:
            raise ValueError(f"unknown prompt {prompt!r}; expected one of {PROMPTS}.")
        p = _resolve(f"social_llm_{prompt}", (paths or {}).get(prompt), verify_hash)
        frames.append(_llm_frame(Path(p), prompt, LLMS, _LLM_SAMPLES, complete=True))
    return pd.concat(frames, ignore_index=True)


def load_social_llm_elicited(folder: str | os.PathLike[str], model: str, prompts: Iterable[str] = PROMPTS, *,
                             n_samples: int = _LLM_SAMPLES, complete: bool = True) -> pd.DataFrame:
    """The ratings of a new LM, elicited with the paper's questionnaire (``python -m
    models.social_meaning.elicit``): ``<folder>/results_<PROMPT>.json`` in the published files'
    record schema, read and checked as :func:`load_social_llm` reads those (no sha256: not
    registered), every record's ``model`` being ``model``.

    Parameters
    ----------
    folder : str or path-like
        The folder of ``results_<PROMPT>.json`` files.
    model : str
        The LM's name in the records (not one of the published :data:`LLMS`: new LMs are read
        beside them, never mixed in).
    prompts : iterable of str
        The prompt conditions to read (a subset of :data:`PROMPTS`).
    n_samples : int
        Samples per query (``sample_id`` 0 to ``n_samples - 1``).
    complete : bool
        Every prompt's file holds all 144 scenario x context x form x attribute queries; with
        False, a file may be missing or hold some queries (a ``--limit`` run), each with all its
        samples.

    Returns
    -------
    pandas.DataFrame
        As :func:`load_social_llm`.

    Raises
    ------
    FileNotFoundError
        A prompt's file is missing (``complete``), or every one is.
    DataSchemaError
        As :func:`load_social_llm`: a record outside the schema, a repeated record, a query
        without its ``n_samples`` samples (or, ``complete``, a query missing).
    ValueError
        ``model`` is a published LLM's name, or a prompt not in :data:`PROMPTS`.
    """
    if model in LLMS:
        raise ValueError(f"model {model!r} is a published LLM's name ({', '.join(LLMS)}); an elicited LM needs "
                         "a name of its own (it is read beside them, never mixed in).")
    folder = Path(folder)
    frames = []
    for prompt in prompts:
        if prompt not in PROMPTS:
            raise ValueError(f"unknown prompt {prompt!r}; expected one of {PROMPTS}.")
        p = folder / f"results_{prompt}.json"
        if not p.is_file():
            if complete:
                raise FileNotFoundError(f"{p}: no ratings of LM {model!r} for prompt {prompt}; elicit them with "
                                        f"`python -m models.social_meaning.elicit --lm {model} --out {folder}`.")
            continue
        frames.append(_llm_frame(p, prompt, (model,), n_samples, complete=complete))
    if not frames:
        raise FileNotFoundError(f"{folder}: no results_<PROMPT>.json of LM {model!r} (prompts {list(prompts)}); "
                                f"elicit them with `python -m models.social_meaning.elicit --lm {model} --out {folder}`.")
    return pd.concat(frames, ignore_index=True)


def _llm_frame(p: Path, prompt: str, models: Sequence[str], n_samples: int, *, complete: bool) -> pd.DataFrame:
    """One ``results_<PROMPT>.json`` file, checked, as :func:`load_social_llm`'s frame."""
    df = pd.DataFrame.from_records(_read_records(p))
    require_columns(df, ["model", "scenario", "context", "utterance", "attribute",
                         "sample_id", "likert", "valid", "raw_response"], p)
    cells = {"model": models, "scenario": SCENARIO_TO_LLM.values(), "context": ("low", "high"),
             "utterance": ("precise", "approx"), "attribute": ATTRIBUTES}
    for column, levels in cells.items():
        check_in(df, column, levels, p)
    check_in(df, "valid", (True, False), p)
    check_integer(df, "likert", p, nullable=True, typed=True)
    check_range(df, "likert", 1, 7, p, nullable=True)
    check_integer(df, "sample_id", p, typed=True)
    check_range(df, "sample_id", 0, n_samples - 1, p)
    check_text(df, "raw_response", p, empty=True)
    if len(df) == 0:
        raise DataSchemaError(f"{p}: no records; expected the LLM responses.")
    check_unique(df, [*cells, "sample_id"], p, "record")
    check_design(df, list(cells), p, per_cell=n_samples, unit=("record", "records"), levels=cells if complete else None)
    valid_null = df["valid"].astype(bool) & df["likert"].isna()
    if valid_null.any():
        row = int(np.flatnonzero(valid_null)[0])
        raise DataSchemaError(f"{p}: column 'likert', row {row}: null but 'valid' is true.")
    return pd.DataFrame({
        "model": df["model"], "prompt": prompt, "scenario": df["scenario"],
        "context": df["context"], "form": df["utterance"], "attribute": df["attribute"],
        "sample_id": df["sample_id"].astype("int64"),
        "rating": pd.array(df["likert"], dtype="Int64"),
        "valid": df["valid"].astype(bool) & df["likert"].notna(),
        "raw_response": df["raw_response"].astype(str),
    })


#: the placeholders of the four conditions' templates, and of the task blocks
_CONDITION_PARTS = ("task_description", "example_block", "situation_block", "task_block_minimal", "task_block_kma")
_TASK_PARTS = ("speaker", "attribute")
_STIMULUS_KEYS = ("speaker", "human_csv_scenario_label", "context_low", "context_high", "utterance_precise",
                  "utterance_approx")


def load_social_prompts(path: str | os.PathLike[str] | None = None, stimuli: str | os.PathLike[str] | None = None,
                        *, verify_hash: bool = True) -> dict[str, Any]:
    """The social-meaning paper's questionnaire (Mühlenbernd 2026): its four prompt conditions and
    the 24 scenario texts, as data (read from the offline mirror only: derived from the upstream
    prompt builders and string constants at the pinned commit).

    Keys: ``conditions`` (``{"MIN": template, ...}``, each naming ``{task_description}``,
    ``{example_block}``, ``{situation_block}``, ``{task_block_minimal}`` or ``{task_block_kma}``,
    with real newlines: the file writes them ``\\n``), ``blocks`` (those four texts but the
    situation; the task blocks name ``{speaker}`` and ``{attribute}``), ``attributes``,
    ``contexts``, ``utterances`` (tuples), ``n_samples_per_query``, ``sampling`` (the paper's per
    model), ``message_format``, ``parse_rule`` (in words), ``source``, and ``stimuli``
    (``{scenario: {speaker, context_low, context_high, utterance_precise, utterance_approx,
    human_csv_scenario_label}}``, scenarios spelled as the LLM files spell them).

    Parameters
    ----------
    path : str or path-like, optional
        The prompts file (``prompts_from_build_prompts.json``). ``None``: the mirror's copy.
    stimuli : str or path-like, optional
        The scenario texts (``stimuli_from_exp_texts.json``). ``None``: the mirror's copy.
    verify_hash : bool
        Check each file's sha256 against the registry (also for explicit paths).

    Returns
    -------
    dict

    Raises
    ------
    DataIntegrityError
        A file's sha256 is not the registered one, or the offline mirror lacks it.
    DataDownloadError
        No offline mirror is set (these files are read from the mirror only).
    DataSchemaError
        A file is not a JSON object, or a key is missing or holds a value outside its schema: a
        condition that is not MIN/ALT/KMA/COM or names another placeholder, other attributes,
        contexts or forms than the human data's, a scenario missing or its text empty (the
        message names the file and the key).
    """
    p = _resolve("social_prompts", path, verify_hash)
    s = _resolve("social_stimuli", stimuli, verify_hash)
    raw, texts = _read_object(p), _read_object(s)
    blocks = {k: _text(raw, k, p) for k in _CONDITION_PARTS if k != "situation_block"}
    for k in ("task_block_minimal", "task_block_kma"):
        _placeholders(blocks[k], _TASK_PARTS, p, k)
    if not _text(raw, "situation_block", p).startswith("{context_text}\n{utterance_text}"):
        raise DataSchemaError(f"{p}: key 'situation_block': {raw['situation_block']!r}; expected the context's text, "
                              "a newline and the utterance's text ('{context_text}\\n{utterance_text}').")
    conditions = raw.get("conditions")
    if not isinstance(conditions, dict) or sorted(conditions) != sorted(PROMPTS):
        raise DataSchemaError(f"{p}: key 'conditions': {conditions!r}; expected an object with the keys {PROMPTS}.")
    templates = {}
    for name in PROMPTS:
        templates[name] = _text(conditions, name, p, where="conditions.").replace("\\n", "\n")
        found = _placeholders(templates[name], _CONDITION_PARTS, p, f"conditions.{name}")
        if "situation_block" not in found or not found & {"task_block_minimal", "task_block_kma"}:
            raise DataSchemaError(f"{p}: key 'conditions.{name}': names {sorted(found)}; expected the situation and "
                                  "a task block.")
    for key, expected in (("attributes", ATTRIBUTES), ("contexts", ("low", "high")),
                          ("utterances", ("precise", "approx"))):
        if not isinstance(raw.get(key), list) or sorted(raw[key]) != sorted(expected):
            raise DataSchemaError(f"{p}: key {key!r}: {raw.get(key)!r}; expected {list(expected)} (in any order).")
    n = raw.get("n_samples_per_query")
    if n != _LLM_SAMPLES or isinstance(n, bool):
        raise DataSchemaError(f"{p}: key 'n_samples_per_query': {n!r}; expected {_LLM_SAMPLES} (the paper's).")
    scenarios = {v: k for k, v in SCENARIO_TO_LLM.items()}
    if sorted(texts) != sorted(scenarios):
        raise DataSchemaError(f"{s}: scenarios {sorted(texts)}; expected {sorted(scenarios)}.")
    for name, item in texts.items():
        if not isinstance(item, dict):
            raise DataSchemaError(f"{s}: key {name!r}: {item!r}; expected an object of the scenario's texts.")
        for k in _STIMULUS_KEYS:
            _text(item, k, s, where=f"{name}.")
        if item["human_csv_scenario_label"] != scenarios[name]:
            raise DataSchemaError(f"{s}: key '{name}.human_csv_scenario_label': {item['human_csv_scenario_label']!r}; "
                                  f"expected {scenarios[name]!r}.")
    return {"conditions": templates, "blocks": blocks, "attributes": tuple(raw["attributes"]),
            "contexts": tuple(raw["contexts"]), "utterances": tuple(raw["utterances"]), "n_samples_per_query": n,
            "sampling": raw.get("sampling"), "message_format": raw.get("message_format"),
            "parse_rule": _text(raw, "parse_rule", p), "source": _text(raw, "source", p),
            "stimuli": {name: {k: item[k] for k in _STIMULUS_KEYS} for name, item in texts.items()}}


def _read_object(p: Path) -> dict[str, Any]:
    """The JSON object in ``p``."""
    try:
        value = json.loads(Path(p).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataSchemaError(f"{p}: not valid JSON ({e}).") from e
    except RecursionError:
        raise DataSchemaError(f"{p}: not valid JSON (nested more than the parser allows).") from None
    if not isinstance(value, dict):
        raise DataSchemaError(f"{p}: expected a JSON object; got {type(value).__name__}.")
    return value


def _text(obj: dict[str, Any], key: str, p: Path, *, where: str = "") -> str:
    """``obj[key]``, a non-empty string."""
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DataSchemaError(f"{p}: key '{where}{key}': {value!r}; expected a non-empty string.")
    return value


def _placeholders(template: str, allowed: Sequence[str], p: Path, key: str) -> set[str]:
    """The ``{name}`` placeholders of ``template``, each one of ``allowed``."""
    import string

    try:
        found = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as e:
        raise DataSchemaError(f"{p}: key {key!r}: not a template ({e}).") from None
    bad = sorted(found - set(allowed))
    if bad:
        raise DataSchemaError(f"{p}: key {key!r}: names {{{bad[0]}}}; expected only {list(allowed)}.")
    return found


def _read_records(p: Path) -> list[dict[str, Any]]:
    """The JSON list of objects in ``p``."""
    try:
        records = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataSchemaError(f"{p}: not valid JSON ({e}).") from e
    except RecursionError:
        raise DataSchemaError(f"{p}: not valid JSON (nested more than the parser allows).") from None
    if not isinstance(records, list):
        raise DataSchemaError(f"{p}: expected a JSON list of records; got {type(records).__name__}.")
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise DataSchemaError(f"{p}: row {i}: {r!r}; expected a JSON object (a record).")
    return records


#: the Wavelength prompts' keys, and the placeholders each template may name
_WAVE_TEMPLATES = {"listener_logprob_instruction": ("left", "right", "clue", "scale", "possible_values"),
                   "listener_sample_instruction": ("left", "right", "clue"),
                   "speaker_instruction": ("left", "right", "target")}
_WAVE_TEXTS = ("answer_prefix", "answer_suffix", "listener_logprob_note", "listener_sample_note", "listener_cot_note",
               "speaker_note", "source")


def load_wavelength_prompts(path: str | os.PathLike[str] | None = None, *, verify_hash: bool = True
                            ) -> dict[str, str]:
    """The Wavelength paper's prompts (Qiu et al. 2025), as data: its listeners' and speaker's
    instructions and their notes on sampling and parsing (read from the offline mirror only: string
    constants of the upstream ``listeners.py`` and ``speakers.py`` at the pinned commit).

    Keys: ``listener_logprob_instruction`` (names ``{left} {right} {clue} {scale}
    {possible_values}``), ``listener_sample_instruction`` (``{left} {right} {clue}``),
    ``speaker_instruction`` (``{left} {right} {target}``), ``answer_prefix``, ``answer_suffix``,
    the notes ``listener_logprob_note``, ``listener_sample_note``, ``listener_cot_note``,
    ``speaker_note`` (the settings, in words) and ``source``.

    Parameters
    ----------
    path : str or path-like, optional
        The prompts file (``prompts_from_upstream.json``). ``None``: the mirror's copy.
    verify_hash : bool
        Check the file's sha256 against the registry (also for an explicit path).

    Returns
    -------
    dict of str

    Raises
    ------
    DataIntegrityError
        The file's sha256 is not the registered one, or the offline mirror lacks it.
    DataDownloadError
        No offline mirror is set (this file is read from the mirror only).
    DataSchemaError
        Not a JSON object, a key missing or empty, or a template naming another placeholder.
    """
    p = _resolve("wavelength_prompts", path, verify_hash)
    raw = _read_object(p)
    out = {k: _text(raw, k, p) for k in (*_WAVE_TEMPLATES, *_WAVE_TEXTS)}
    for key, allowed in _WAVE_TEMPLATES.items():
        _placeholders(out[key], allowed, p, key)
    return out


def load_wavelength(path: str | os.PathLike[str] | None = None, *, verify_hash: bool = True,
                    long: bool = False) -> pd.DataFrame:
    """WavelengthEval: 100 items (50 scales x 2 targets) with 40 human guesses each.

    ``long=False``: one row per item, columns ``item, left, right, clue, target, response_mean,
    responses`` (tuple of 40 ints). ``long=True``: one row per guess, columns ``item, left,
    right, clue, target, guess`` (4,000 rows). Values lie on a 0-100 scale.

    Parameters
    ----------
    path : str or path-like, optional
        The file to read. ``None``: the registry's copy (:func:`~pragmodels.datasets.fetch.locate`:
        the offline mirror ``PRAGMODELS_DATA_DIR``, else the download cache, downloading it
        if missing).
    verify_hash : bool
        Check the file's sha256 against the registry (also for an explicit ``path``).
    long : bool
        One row per guess instead of one per item.

    Returns
    -------
    pandas.DataFrame
        ``item`` numbers the rows of the upstream file from 0.

    Raises
    ------
    DataIntegrityError
        The file's sha256 is not the registered one, or the offline mirror lacks it.
    DataDownloadError
        No mirror is set, the file is not cached and cannot be downloaded.
    DataSchemaError
        The file cannot be parsed, or a column is missing or holds a value outside its schema,
        ``response_mean`` is not the mean of ``response_list``, an item does not have its 40
        guesses, an item repeats another, a scale does not have its 2 items, or the file does
        not hold the 100 items (the message names the file, column, row and value, or the key).
    """
    p = _resolve("wavelength", path, verify_hash)
    raw = _read_csv(p)
    require_columns(raw, ["left", "right", "clue", "target", "response_list", "response_mean"], p)
    for column in ("left", "right", "clue"):
        check_text(raw, column, p)
    check_integer(raw, "target", p)
    check_range(raw, "target", 0, 100, p)
    check_range(raw, "response_mean", 0, 100, p)
    responses = []
    for i, s in enumerate(raw["response_list"]):
        arr = _guesses(p, i, s)
        if not np.isclose(arr.mean(), raw["response_mean"].iloc[i], atol=1e-6):
            raise DataSchemaError(
                f"{p}: column 'response_mean', row {i}: value {raw['response_mean'].iloc[i]!r} "
                f"!= mean of response_list ({arr.mean():.4f})."
            )
        responses.append(tuple(int(v) for v in arr))
    check_unique(raw, ["left", "right", "clue"], p, "item")
    check_design(raw, ["left", "right"], p, per_cell=_WAVELENGTH_TARGETS, unit=("item", "items"), cell="scale")
    check_count(len(raw), _WAVELENGTH_ITEMS, p, "items", "WavelengthEval, 50 scales x 2 targets")
    items = pd.DataFrame({
        "item": np.arange(len(raw)), "left": raw["left"], "right": raw["right"], "clue": raw["clue"],
        "target": raw["target"].astype("int64"), "response_mean": raw["response_mean"].astype(float),
        "responses": responses,
    })
    if not long:
        return items
    out = items.drop(columns=["response_mean"]).explode("responses").rename(columns={"responses": "guess"})
    out["guess"] = out["guess"].astype("int64")
    return out.reset_index(drop=True)


def _guesses(p: Path, row: int, text: Any) -> np.ndarray:
    """The guesses in one ``response_list`` cell: a JSON list of 40 integers in [0, 100]."""
    where = f"{p}: column 'response_list', row {row}"
    expected = "expected a JSON list of integers in [0, 100]"
    try:
        vals = json.loads(text)
    except (TypeError, json.JSONDecodeError, RecursionError):
        raise DataSchemaError(f"{where}: value {text!r}; {expected}.") from None
    if not isinstance(vals, list) or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 100
                                             for v in vals):
        raise DataSchemaError(f"{where}: value {text!r}; {expected}.")
    if len(vals) != _WAVELENGTH_GUESSES:
        raise DataSchemaError(f"{where}: {len(vals)} guesses; expected {_WAVELENGTH_GUESSES} (every item has "
                              f"{_WAVELENGTH_GUESSES}).")
    return np.asarray(vals, float)


_OPTION = re.compile(r"^([A-E])\.\s*(\S.*)$")  # a letter, a dot and a non-empty text


def load_drinq(path: str | os.PathLike[str] | None = None, *, verify_hash: bool = True) -> pd.DataFrame:
    """DRInQ validated items (231 rows): question, context, five options, consensus letter.

    Columns: ``item, question, context, option_A .. option_E, consensus`` (A-E),
    ``implied_comment`` (may be null), ``implied_letter`` (the option whose text equals
    ``implied_comment``, else null).

    Two labels, both kept: ``consensus`` and the option carrying ``implied_comment`` (the
    generated label) agree in only 44 of the 230 rows that have a comment. **``consensus`` is the
    gold label**, the human answer: the upstream README calls it "the human consensus implied
    meaning label"; the paper (Arai & Ren 2026) scores models against the human consensus (its
    Table 3) and sets them against "a human annotator average of 89%" on its hard subset, an
    agreement with the consensus no generated label reaches here (19%); and its 27% agreement
    between generated and consensus labels on the hard subset fits a file drawn mostly from that
    subset. Its Limitations point the other way: "our benchmark assumes that intent-conditioned
    interpretations generated during data construction constitute valid ground truth. While
    quality analysis and human agreement support this assumption in the majority of cases, we
    find that only 80.8% of instances achieve our human consensus threshold of 4/5 annotators."
    (the generated label as the intended truth; and 819 kept of about 1,014 presented, a
    selection the implicature study models). The file has 231 rows, while the paper cites 819
    validated and 400 hard items: it is neither set, and results on it are not the paper's.
    Rows 27 and 71 share their question and context and differ in options and consensus.

    Parameters
    ----------
    path : str or path-like, optional
        The file to read. ``None``: the registry's copy (:func:`~pragmodels.datasets.fetch.locate`:
        the offline mirror ``PRAGMODELS_DATA_DIR``, else the download cache, downloading it
        if missing).
    verify_hash : bool
        Check the file's sha256 against the registry (also for an explicit ``path``).

    Returns
    -------
    pandas.DataFrame
        One row per item; ``item`` numbers the rows of the upstream file from 0.

    Raises
    ------
    DataIntegrityError
        The file's sha256 is not the registered one, or the offline mirror lacks it.
    DataDownloadError
        No mirror is set, the file is not cached and cannot be downloaded.
    DataSchemaError
        The file cannot be parsed, or a column is missing or holds a value outside its schema,
        an item's options are not five lines ``A. ...`` to ``E. ...``, an item repeats another,
        or the file does not hold the 231 items (the message names the file, column, row and
        value, or the key).
    """
    p = _resolve("drinq", path, verify_hash)
    raw = _read_csv(p)
    require_columns(raw, ["question", "context", "options", "consensus", "implied_comment"], p)
    check_in(raw, "consensus", list("ABCDE"), p)
    for col in ("question", "context"):
        check_text(raw, col, p)
    check_text(raw, "implied_comment", p, nullable=True)
    rows = []
    for i, text in enumerate(raw["options"]):
        lines = [ln.strip() for ln in str(text).strip().split("\n") if ln.strip()]
        parsed = [m for m in map(_OPTION.match, lines) if m is not None]
        if len(lines) != 5 or len(parsed) != len(lines) or [m.group(1) for m in parsed] != list("ABCDE"):
            raise DataSchemaError(
                f"{p}: column 'options', row {i}: value {text!r}; expected five lines 'A. ...' to 'E. ...'."
            )
        rows.append({f"option_{m.group(1)}": m.group(2).strip() for m in parsed})
    check_unique(raw, ["question", "context", "options"], p, "item")
    check_count(len(raw), _DRINQ_ITEMS, p, "items", "the DRInQ validated file")
    opts = pd.DataFrame(rows)
    implied = raw["implied_comment"]

    def _letter(i: int) -> str | None:
        if pd.isna(implied.iloc[i]):
            return None
        target = str(implied.iloc[i]).strip()
        hits = [c[-1] for c in opts.columns if opts[c].iloc[i] == target]
        return hits[0] if hits else None

    out = pd.concat([
        pd.DataFrame({"item": np.arange(len(raw)), "question": raw["question"], "context": raw["context"]}),
        opts,
        pd.DataFrame({"consensus": raw["consensus"], "implied_comment": implied,
                      "implied_letter": [_letter(i) for i in range(len(raw))]}),
    ], axis=1)
    return out
