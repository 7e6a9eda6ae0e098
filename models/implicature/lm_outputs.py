"""The DRInQ study's language-model step: the benchmark's answers and the listener model's LM scores.

Everything here talks to a language model (through :mod:`pragmodels.lm`, normally a
:class:`pragmodels.lm.CachedLM`) and writes tables; nothing here fits. Three passes, each a CSV
keyed by item id, condition, draw and prompt hash, without the item texts:
:func:`score_letters`, :func:`sample_answers` and :func:`score_interpretations`;
:func:`save_rows` writes them, :func:`load_outputs` reads them back for the study. Beside each
table, :func:`write_manifest` records the LM's identity (``<table>.manifest.json``), which the
study checks against its config's ``lms`` entry (:func:`recorded_identity`) before any fit. What each pass
records: ``docs/studies/implicature.md``, "Running the benchmark with a language model".
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from models.implicature import prompts
from pragmodels.io.atomic import atomic_write
from pragmodels.lm import LanguageModel

__all__ = ["item_ids", "item_order", "score_letters", "sample_answers", "score_interpretations", "save_rows",
           "load_outputs", "PASSES", "FIT_TEMPLATE", "PRIOR_TEMPLATE", "ORDER_SEED", "SAMPLE_MAX_TOKENS",
           "EXPLANATION_MAX_TOKENS", "write_manifest", "recorded_identity", "manifest_of"]

PASSES = ("score", "sample", "interpretations", "literal")
ORDER_SEED = 20261201
SAMPLE_MAX_TOKENS = 160
EXPLANATION_MAX_TOKENS = 80

#: the listener model's two scoring prompts (in models.implicature.prompts, so PROMPT_VERSION covers them)
FIT_TEMPLATE = prompts.FIT_TEMPLATE
PRIOR_TEMPLATE = prompts.PRIOR_TEMPLATE


def item_ids(items: pd.DataFrame) -> list[str]:
    """Stable item ids: the first 12 hex digits of the sha256 of the question, context and five options.

    (Question and context alone do not identify an item: rows 27 and 71 of the upstream file share
    both and differ in their options and consensus.)

    Parameters
    ----------
    items : pandas.DataFrame
        Rows of :func:`pragmodels.datasets.load_drinq`.

    Returns
    -------
    list of str
    """
    cols = ["question", "context", *(f"option_{L}" for L in prompts.LETTERS)]
    ids = [hashlib.sha256("\n".join(map(str, r)).encode()).hexdigest()[:12] for r in items[cols].itertuples(index=False)]
    if len(set(ids)) != len(ids):
        dup = pd.Series(ids).duplicated(keep=False)
        raise ValueError(f"items at positions {[int(i) for i in np.nonzero(dup.to_numpy())[0]]} have the same question, context "
                         "and options; their ids would collide.")
    return ids


def item_order(n: int) -> np.ndarray:
    """The fixed random order in which items are evaluated (``limit`` takes a prefix).

    Parameters
    ----------
    n : int
        Number of items.

    Returns
    -------
    numpy.ndarray
    """
    return np.random.default_rng(ORDER_SEED).permutation(n)


def _progress(it: Iterable[Any], total: int, desc: str, show: bool) -> Iterable[Any]:
    if not show:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, total=total, desc=desc, leave=False)


def _sample_seed(seed: int, condition: str, draw: int, item_id: str) -> int:
    h = hashlib.sha256(f"{seed}|{condition}|{draw}|{item_id}".encode()).hexdigest()
    return int(h[:8], 16)


def _base(lm_name: str, condition: str, draw: int, item_id: str, text: str) -> dict[str, Any]:
    return {"lm": lm_name, "prompt_version": prompts.PROMPT_VERSION, "condition": condition, "draw": draw,
            "item_id": item_id, "prompt_sha": prompts.prompt_hash(text)}


def score_letters(lm: LanguageModel, items: pd.DataFrame, *, lm_name: str, conditions: Sequence[str],
                  n_draws: int, seed: int, progress: bool = False,
                  on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """The letter-scoring pass: one row per (condition, draw, item).

    Prompts are evaluated condition by condition and draw by draw, so consecutive prompts share
    their instructions and examples and llama.cpp evaluates that block once.

    Parameters
    ----------
    lm : LanguageModel
        The model (a :class:`~pragmodels.lm.CachedLM`).
    items : pandas.DataFrame
        Rows of :func:`pragmodels.datasets.load_drinq`, in evaluation order.
    lm_name : str
        The label in the rows.
    conditions : sequence of str
        Conditions of :data:`models.implicature.prompts.CONDITIONS`.
    n_draws : int
        Draws of the in-context examples.
    seed : int
        The study's seed (draws and sampled explanations).
    progress : bool
        A progress bar.
    on_row : callable, optional
        Called with each row as it is made (to save partial results).

    Returns
    -------
    list of dict
    """
    ids = item_ids(items)
    rows = []
    work = [(c, d, i) for c in conditions for d in range(n_draws) for i in range(len(items))]
    for cond, draw, i in _progress(work, len(work), f"{lm_name} letters", progress):
        item = items.iloc[i]
        text = prompts.prompt(item, cond, "score", prompts.draw_examples(draw, seed))
        row = _base(lm_name, cond, draw, ids[i], text)
        if cond == "explanation":
            expl = lm.sample(text, 1, temperature=1.0, max_tokens=EXPLANATION_MAX_TOKENS, stop=prompts.EXPLANATION_STOP,
                             seed=_sample_seed(seed, cond, draw, ids[i]), answer_prefix="Explanation:")[0]
            expl = expl.rstrip()
            conts = [expl + prompts.ANSWER_CUE + L for L in prompts.LETTERS]
            row["explanation_chars"] = len(expl)
        else:
            conts = list(prompts.LETTERS)
        lp = np.asarray(lm.score(text, conts), dtype=np.float64)
        row.update({f"logp_{L}": float(v) for L, v in zip(prompts.LETTERS, lp, strict=True)})
        row["choice"] = prompts.LETTERS[int(np.argmax(lp))]
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def sample_answers(lm: LanguageModel, items: pd.DataFrame, *, lm_name: str, conditions: Sequence[str],
                   n_draws: int, seed: int, temperature: float = 1.0, max_tokens: int = SAMPLE_MAX_TOKENS,
                   progress: bool = False, on_row: Callable[[dict[str, Any]], None] | None = None
                   ) -> list[dict[str, Any]]:
    """The sampled-answer pass: one JSON answer per (condition, draw, item), parsed.

    A malformed answer has an empty ``letter`` (counted, and scored as wrong by the study).

    Parameters
    ----------
    lm : LanguageModel
        The model.
    items : pandas.DataFrame
        Rows of :func:`pragmodels.datasets.load_drinq`, in evaluation order.
    lm_name : str
        The label in the rows.
    conditions : sequence of str
        Conditions.
    n_draws : int
        Draws of the in-context examples.
    seed : int
        The study's seed.
    temperature : float
        Sampling temperature.
    max_tokens : int
        Most tokens per answer.
    progress : bool
        A progress bar.
    on_row : callable, optional
        Called with each row as it is made.

    Returns
    -------
    list of dict
    """
    ids = item_ids(items)
    rows = []
    work = [(c, d, i) for c in conditions for d in range(n_draws) for i in range(len(items))]
    for cond, draw, i in _progress(work, len(work), f"{lm_name} samples", progress):
        item = items.iloc[i]
        text = prompts.prompt(item, cond, "sample", prompts.draw_examples(draw, seed))
        out = lm.sample(text, 1, temperature=temperature, max_tokens=max_tokens,
                        seed=_sample_seed(seed, cond, draw, ids[i]))[0]
        letter, ok = prompts.parse_answer(out, [str(item[f"option_{L}"]) for L in prompts.LETTERS])
        row = _base(lm_name, cond, draw, ids[i], text)
        row.update({"letter": letter or "", "json_ok": bool(ok), "answer_chars": len(out),
                    "temperature": float(temperature), "max_tokens": int(max_tokens)})
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def score_interpretations(lm: LanguageModel, items: pd.DataFrame, *, lm_name: str, progress: bool = False,
                          on_row: Callable[[dict[str, Any]], None] | None = None,
                          literal: bool = False) -> list[dict[str, Any]]:
    """The listener model's LM scores: two rows per item (``kind`` ``fit`` and ``prior``), or with
    ``literal`` one (``kind`` ``literal``: :data:`~models.implicature.prompts.LITERAL_TEMPLATE`, the
    question read literally; rows of :data:`~models.implicature.prompts.LITERAL_VERSION`).

    ``logp_A`` .. ``logp_E`` are mean log-probabilities per token of the option texts
    (``length_normalize=True``), through the end-of-turn token.

    Parameters
    ----------
    lm : LanguageModel
        The model.
    items : pandas.DataFrame
        Rows of :func:`pragmodels.datasets.load_drinq`.
    lm_name : str
        The label in the rows.
    progress : bool
        A progress bar.
    on_row : callable, optional
        Called with each row as it is made.
    literal : bool
        The literal reading's pass (``literal``) instead.

    Returns
    -------
    list of dict
    """
    ids = item_ids(items)
    rows = []
    kinds = (("literal", prompts.LITERAL_TEMPLATE),) if literal else (("fit", FIT_TEMPLATE), ("prior", PRIOR_TEMPLATE))
    version = prompts.LITERAL_VERSION if literal else prompts.PROMPT_VERSION
    desc = f"{lm_name} {'literal' if literal else 'interpretations'}"
    for i in _progress(range(len(items)), len(items), desc, progress):
        item = items.iloc[i]
        options = [str(item[f"option_{L}"]).strip() for L in prompts.LETTERS]
        for kind, template in kinds:
            text = template.format(question=item["question"], context=item["context"])
            lp = np.asarray(lm.score(text, options, length_normalize=True), dtype=np.float64)
            row = {"lm": lm_name, "prompt_version": version, "kind": kind, "item_id": ids[i],
                   "prompt_sha": prompts.prompt_hash(text), **{f"logp_{L}": float(v) for L, v in zip(prompts.LETTERS, lp)}}
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


def save_rows(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write rows as CSV, atomically (a crash leaves the previous file whole).

    Parameters
    ----------
    rows : sequence of dict
        The rows.
    path : str or Path
        The CSV file.

    Returns
    -------
    Path
    """
    df = pd.DataFrame(list(rows))
    return atomic_write(path, lambda tmp: df.to_csv(tmp, index=False))


def manifest_of(table: str | Path) -> Path:
    """The manifest beside an output table: ``<table>.manifest.json``.

    Parameters
    ----------
    table : str or Path
        The CSV.

    Returns
    -------
    Path
    """
    p = Path(table)
    return p.with_name(p.name + ".manifest.json")


def write_manifest(table: str | Path, identity: str, **extra: Any) -> Path:
    """Record, beside an output table, the LM that made it (its :attr:`~pragmodels.lm.LanguageModel.identity`).

    Parameters
    ----------
    table : str or Path
        The CSV.
    identity : str
        The LM's identity (``"gguf:<sha256>"``, ``"openai:<url>|<model>"``, ...).
    **extra
        Other JSON values to record.

    Returns
    -------
    Path
        The manifest.
    """
    from pragmodels.version import __version__

    version = prompts.LITERAL_VERSION if extra.get("pass_") == "literal" else prompts.PROMPT_VERSION
    body = {"lm_identity": identity, "prompt_version": version, **extra,
            "pragmodels_version": __version__, "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path = manifest_of(table)
    return atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(body, indent=1) + "\n"))


def recorded_identity(table: str | Path) -> str:
    """The LM identity an output table's manifest records, or ``""`` where it has none.

    Parameters
    ----------
    table : str or Path
        The CSV.

    Returns
    -------
    str
    """
    m = manifest_of(table)
    if not m.is_file():
        return ""
    try:
        value = json.loads(m.read_text()).get("lm_identity", "")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return ""
    return value if isinstance(value, str) else ""


def load_outputs(path: str | Path, *, kind: str) -> pd.DataFrame:
    """Read one pass's CSV and check it is this prompt version's and whole.

    Parameters
    ----------
    path : str or Path
        The CSV.
    kind : {"score", "sample", "interpretations", "literal"}
        Which pass it holds.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ValueError
        A missing column, rows of another prompt version, a duplicated key, or a letter outside A-E.
    FileNotFoundError
        No such file.
    """
    if kind not in PASSES:
        raise ValueError(f"kind = {kind!r}; expected one of {list(PASSES)}.")
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no LM outputs; make them with `python -m models.implicature.score`.")
    df = pd.read_csv(p, keep_default_na=False, dtype={"item_id": str, "letter": str, "choice": str})
    need = {"score": ["condition", "draw", "item_id", "prompt_sha", *(f"logp_{L}" for L in prompts.LETTERS), "choice"],
            "sample": ["condition", "draw", "item_id", "prompt_sha", "letter", "json_ok"],
            "interpretations": ["kind", "item_id", *(f"logp_{L}" for L in prompts.LETTERS)],
            "literal": ["kind", "item_id", *(f"logp_{L}" for L in prompts.LETTERS)]}[kind]
    missing = [c for c in ["lm", "prompt_version", *need] if c not in df.columns]
    if missing:
        raise ValueError(f"{p}: column {missing[0]!r} is missing; expected {need}.")
    version = prompts.LITERAL_VERSION if kind == "literal" else prompts.PROMPT_VERSION
    other = sorted(set(df["prompt_version"].astype(str)) - {version})
    if other:
        raise ValueError(f"{p}: rows of prompt version {other[0]!r}; the prompts are now {version!r}. "
                         "Re-run `python -m models.implicature.score` (it rescores through the cache).")
    key = ["kind", "item_id"] if kind in ("interpretations", "literal") else ["condition", "draw", "item_id"]
    dup = df.duplicated(key)
    if dup.any():
        raise ValueError(f"{p}: row {int(np.argmax(dup.to_numpy()))} repeats the key "
                         f"{tuple(df.loc[dup, key].iloc[0])}.")
    col = {"score": "choice", "sample": "letter"}.get(kind)
    if col is not None:
        allowed = set(prompts.LETTERS) | ({""} if kind == "sample" else set())
        bad = ~df[col].isin(allowed)
        if bad.any():
            raise ValueError(f"{p}: column {col!r}, row {int(np.argmax(bad.to_numpy()))}: value "
                             f"{df.loc[bad, col].iloc[0]!r}; expected one of {sorted(allowed)}.")
    return df
