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
from collections.abc import Iterable, Mapping
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
    "load_wavelength",
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
        records = _read_records(Path(p))
        df = pd.DataFrame.from_records(records)
        require_columns(df, ["model", "scenario", "context", "utterance", "attribute",
                             "sample_id", "likert", "valid", "raw_response"], p)
        cells = {"model": LLMS, "scenario": SCENARIO_TO_LLM.values(), "context": ("low", "high"),
                 "utterance": ("precise", "approx"), "attribute": ATTRIBUTES}
        for column, levels in cells.items():
            check_in(df, column, levels, p)
        check_in(df, "valid", (True, False), p)
        check_integer(df, "likert", p, nullable=True, typed=True)
        check_range(df, "likert", 1, 7, p, nullable=True)
        check_integer(df, "sample_id", p, typed=True)
        check_range(df, "sample_id", 0, _LLM_SAMPLES - 1, p)
        check_text(df, "raw_response", p, empty=True)
        if len(df) == 0:
            raise DataSchemaError(f"{p}: no records; expected the LLM responses.")
        check_unique(df, [*cells, "sample_id"], p, "record")
        check_design(df, list(cells), p, per_cell=_LLM_SAMPLES, unit=("record", "records"), levels=cells)
        valid_null = df["valid"].astype(bool) & df["likert"].isna()
        if valid_null.any():
            row = int(np.flatnonzero(valid_null)[0])
            raise DataSchemaError(f"{p}: column 'likert', row {row}: null but 'valid' is true.")
        frames.append(pd.DataFrame({
            "model": df["model"], "prompt": prompt, "scenario": df["scenario"],
            "context": df["context"], "form": df["utterance"], "attribute": df["attribute"],
            "sample_id": df["sample_id"].astype("int64"),
            "rating": pd.array(df["likert"], dtype="Int64"),
            "valid": df["valid"].astype(bool) & df["likert"].notna(),
            "raw_response": df["raw_response"].astype(str),
        }))
    return pd.concat(frames, ignore_index=True)


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
    Table 3); and its 27% agreement between generated and consensus labels on the hard subset
    fits a file drawn mostly from that subset. The file has 231 rows, while the paper cites 819
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
