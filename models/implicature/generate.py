"""DRInQ as the paper reads it: a generated JSON answer per item, condition and draw, classified.

Every condition asks for the paper's JSON answer; reasoning and all write their reasoning first
(:func:`models.implicature.prompts.prompt`, reading ``"generate"``). :func:`generate` asks through
the resumable elicitation engine (:func:`pragmodels.lm.elicit.elicit`), never resampling, and
:func:`classify` calls each answer valid, truncated (reached the cap) or malformed.
:func:`generated_table` and :func:`write_generated` make the committed table (no answer text) and
its manifest (the LM's identity); :func:`load_generated` reads them for the study. Design and
caps: ``docs/studies/implicature.md``, "Generated answers (the paper's reading)".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from models.implicature import lm_outputs, prompts
from pragmodels.io.atomic import atomic_write
from pragmodels.lm import LanguageModel
from pragmodels.lm.elicit import Query, Sampling, elicit, estimate
from pragmodels.version import __version__

__all__ = ["CAPS", "CAP_SLACK", "STATUSES", "TEMPERATURE", "PARSE_NAME", "queries", "parse_strict", "classify",
           "token_counter", "answer_stop", "estimate_generation", "generate", "generated_table", "write_generated",
           "load_generated", "manifest_file"]

#: most tokens per answer: the answer-first JSON (option and a short explanation, about 40-70 tokens
#: in the examples) and the reasoning-first JSON (two reasoning steps, then the option: about 60-90)
#: with room to spare
CAPS: dict[str, int] = {"vanilla": 160, "conservative": 160, "charitable": 160, "explanation": 256,
                        "reasoning": 256, "all": 256}
#: an answer whose token count is within this many tokens of the cap reached it (a text tokenized
#: again may take a token or two fewer than were generated, or one more for a BOS)
CAP_SLACK = 2
STATUSES = ("valid", "truncated", "malformed")
#: the paper samples its hosted models at their defaults; temperature 1 is the APIs' default
TEMPERATURE = 1.0
PARSE_NAME = "drinq-json-strict/1"


def queries(items: pd.DataFrame, condition: str, n_draws: int, seed: int) -> list[Query]:
    """The queries of one condition: one per (draw, item), ids ``<condition>/<draw>/<item_id>``.

    Parameters
    ----------
    items : pandas.DataFrame
        Rows of :func:`pragmodels.datasets.load_drinq`, in evaluation order.
    condition : str
        One of :data:`models.implicature.prompts.CONDITIONS`.
    n_draws : int
        Draws of the in-context examples.
    seed : int
        The study's seed.

    Returns
    -------
    list of Query
    """
    ids = lm_outputs.item_ids(items)
    out = []
    for draw in range(n_draws):
        ex = prompts.draw_examples(draw, seed)
        for i in range(len(items)):
            text = prompts.prompt(items.iloc[i], condition, "generate", ex)
            out.append(Query(f"{condition}/{draw}/{ids[i]}", text,
                             {"condition": condition, "draw": draw, "item_id": ids[i],
                              "options": [str(items.iloc[i][f"option_{L}"]) for L in prompts.LETTERS]}))
    return out


def parse_strict(text: str, options: Sequence[str] | None = None) -> str | None:
    """The letter of a valid answer: a JSON object that parses, whose ``selected_option`` names an option.

    Parameters
    ----------
    text : str
        The answer.
    options : sequence of str, optional
        The five option texts (an answer may give the text without its letter).

    Returns
    -------
    str or None
    """
    letter, json_ok = prompts.parse_answer(text, options)
    return letter if json_ok and letter is not None else None


def classify(text: str, n_tokens: int | None, cap: int, options: Sequence[str] | None = None) -> tuple[str, str]:
    """An answer's status (:data:`STATUSES`) and letter (``""`` unless valid).

    Parameters
    ----------
    text : str
        The answer.
    n_tokens : int or None
        Its length in the model's tokens (None: unknown; then only an unclosed JSON object at the
        end of the text counts as reaching the cap).
    cap : int
        The request's ``max_tokens``.
    options : sequence of str, optional
        The five option texts.

    Returns
    -------
    status : str
    letter : str
    """
    letter = parse_strict(text, options)
    if letter is not None:
        return "valid", letter
    if n_tokens is not None:
        hit = n_tokens >= cap - CAP_SLACK
    else:
        start = text.find("{")
        hit = start >= 0 and text.count("{", start) > text.count("}", start)
    return ("truncated" if hit else "malformed"), ""


def token_counter(lm: LanguageModel) -> Callable[[str], int | None] | None:
    """How to count an answer's tokens with the model's own tokenizer, or None where it gives none.

    In-process models (llama.cpp, transformers) have ``tokenize``; a server is asked through its
    tokenizer route (llama-cpp-python's ``/extras/tokenize``, vLLM's ``/tokenize``).

    Parameters
    ----------
    lm : LanguageModel
        The model (a :class:`~pragmodels.lm.CachedLM` is unwrapped).

    Returns
    -------
    callable or None
    """
    inner: Any = lm
    for _ in range(4):  # wrappers (SamplesOnlyLM(CachedLM(model))) hold the model as .model; a server's is a name
        nxt = getattr(inner, "model", None)
        if nxt is None or isinstance(nxt, str):
            break
        inner = nxt
    tokenize = getattr(inner, "tokenize", None)
    if callable(tokenize):
        return lambda text: len(tokenize(text))
    server_tokenize, run = getattr(inner, "_tokenize", None), getattr(inner, "_run", None)
    if callable(server_tokenize) and callable(run):
        def count(text: str) -> int | None:
            ids = run(server_tokenize(text))
            return None if ids is None else len(ids)
        return count
    return None


def answer_stop(lm: LanguageModel) -> tuple[str, ...]:
    """Where an answer ends besides the cap: a chat model's end of turn (the server stops there by
    itself); a model prompted as plain text (a base model) has none, so its answer ends at the end
    of its line, as each in-context example's response does (``("\\n",)``).

    Parameters
    ----------
    lm : LanguageModel
        The model.

    Returns
    -------
    tuple of str
    """
    return ("\n",) if lm.prompt_format.name == "plain" else ()


def estimate_generation(items: pd.DataFrame, conditions: Sequence[str], n_draws: int, seed: int) -> dict[str, Any]:
    """What generating costs at most: requests, prompt tokens (characters / 4) and answer tokens at the caps.

    Parameters
    ----------
    items : pandas.DataFrame
        The items to ask.
    conditions : sequence of str
        Conditions.
    n_draws : int
        Draws of the in-context examples.
    seed : int
        The study's seed.

    Returns
    -------
    dict
        Per condition and ``total``: ``requests``, ``prompt_tokens``, ``answer_tokens_max``.
    """
    out: dict[str, Any] = {}
    for c in conditions:
        e = estimate(queries(items, c, n_draws, seed), 1, CAPS[c])
        out[c] = {k: e[k] for k in ("requests", "prompt_tokens", "answer_tokens_max")}
    out["total"] = {k: sum(v[k] for v in out.values()) for k in ("requests", "prompt_tokens", "answer_tokens_max")}
    return out


def generate(lm: LanguageModel, items: pd.DataFrame, *, conditions: Sequence[str], n_draws: int, seed: int,
             progress_dir: str | Path, log: Callable[[str], object] | None = None
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Ask every (condition, draw, item) once, resumably, and classify the answers.

    Parameters
    ----------
    lm : LanguageModel
        The model.
    items : pandas.DataFrame
        Rows of :func:`pragmodels.datasets.load_drinq`, in evaluation order.
    conditions : sequence of str
        Conditions.
    n_draws : int
        Draws of the in-context examples.
    seed : int
        The study's seed (draws, and each answer's seed through :func:`pragmodels.lm.elicit.derive_seed`).
    progress_dir : path-like
        Where the progress files (``<condition>.jsonl``, with the answers' texts) go.
    log : callable, optional
        Progress lines.

    Returns
    -------
    records : list of dict
        The engine's records, each with ``status``, ``letter``, ``answer_tokens``, ``max_tokens``.
    timing : dict
        ``wall_s`` of this call, per condition and in all.
    """
    count = token_counter(lm)
    stop = answer_stop(lm)
    records, timing = [], {}
    for cond in conditions:
        if cond not in prompts.CONDITIONS:
            raise ValueError(f"condition = {cond!r}; expected one of {list(prompts.CONDITIONS)}.")
        cap = CAPS[cond]
        qs = queries(items, cond, n_draws, seed)
        by_id = {q.id: q for q in qs}
        t0 = time.monotonic()
        recs = elicit(lm, qs, n_samples=1, parse=parse_strict, parse_name=PARSE_NAME,
                      progress=Path(progress_dir) / f"{cond}.jsonl",
                      sampling=Sampling(temperature=TEMPERATURE, max_tokens=cap, stop=stop), resample=0, seed=seed, every=5,
                      log=log)
        for r in recs:
            text = r["raw_response"]
            n = count(text) if count is not None else None
            status, letter = classify(text, n, cap, by_id[r["query_id"]].fields["options"])
            records.append({**r, "status": status, "letter": letter, "answer_tokens": n, "max_tokens": cap})
        timing[cond] = round(time.monotonic() - t0, 1)
    timing["total"] = round(sum(timing.values()), 1)
    return records, timing


def generated_table(records: Sequence[dict[str, Any]], *, lm_name: str) -> pd.DataFrame:
    """The committed table: one row per answer, without its text.

    Parameters
    ----------
    records : sequence of dict
        :func:`generate`'s records.
    lm_name : str
        The LM's label.

    Returns
    -------
    pandas.DataFrame
        ``lm, prompt_version, condition, draw, item_id, prompt_sha, status, letter, json_letter,
        answer_tokens, answer_chars, max_tokens, seed``.
    """
    rows = []
    for r in records:
        lenient, _ = prompts.parse_answer(r["raw_response"], r["options"])
        rows.append({"lm": lm_name, "prompt_version": prompts.GENERATE_VERSION, "condition": r["condition"],
                     "draw": int(r["draw"]), "item_id": r["item_id"], "prompt_sha": r["prompt_sha256"][:16],
                     "status": r["status"], "letter": r["letter"], "json_letter": lenient or "",
                     "answer_tokens": r["answer_tokens"], "answer_chars": len(r["raw_response"]),
                     "max_tokens": int(r["max_tokens"]), "seed": int(r["seed"])})
    return pd.DataFrame(rows)


def manifest_file(table: str | Path) -> Path:
    """The manifest beside a table: ``<table>.manifest.json``.

    Parameters
    ----------
    table : path-like
        The CSV.

    Returns
    -------
    Path
    """
    return lm_outputs.manifest_of(table)


def write_generated(table: pd.DataFrame, path: str | Path, *, identity: str, n_draws: int, seed: int,
                    items: str, timing: dict[str, Any], prompt_tokens: int, stop: Sequence[str] = ()) -> Path:
    """Write the table and its manifest, atomically.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`generated_table`.
    path : path-like
        The CSV.
    identity : str
        The LM's identity (:attr:`pragmodels.lm.LanguageModel.identity`).
    n_draws, seed : int
        Draws of the in-context examples; the study's seed.
    items : str
        Which items (e.g. "the first 40 of the fixed random order").
    timing : dict
        :func:`generate`'s wall times.
    prompt_tokens : int
        The prompts' tokens (estimated: characters / 4).
    stop : sequence of str
        The stop strings (:func:`answer_stop`).

    Returns
    -------
    Path
    """
    atomic_write(path, lambda tmp: table.to_csv(tmp, index=False))
    counts = table["status"].value_counts()
    manifest = {"lm_identity": identity, "prompt_version": prompts.GENERATE_VERSION, "reading": "generate",
                "temperature": TEMPERATURE, "stop": list(stop), "caps": {c: CAPS[c] for c in dict.fromkeys(table["condition"])},
                "cap_slack": CAP_SLACK, "resample": 0, "parse": PARSE_NAME, "n_draws": n_draws, "seed": seed,
                "items": items, "requests": int(len(table)), "prompt_tokens_estimated": int(prompt_tokens),
                "answer_tokens": int(pd.to_numeric(table["answer_tokens"], errors="coerce").fillna(0).sum()),
                "status_counts": {s: int(counts.get(s, 0)) for s in STATUSES}, "wall_s": timing,
                "pragmodels_version": __version__, "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    atomic_write(manifest_file(path), lambda tmp: Path(tmp).write_text(json.dumps(manifest, indent=1) + "\n"))
    return Path(path)


def load_generated(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read a generated table and its manifest, checking the prompt version and the statuses.

    Parameters
    ----------
    path : path-like
        The CSV.

    Returns
    -------
    table : pandas.DataFrame
    manifest : dict

    Raises
    ------
    FileNotFoundError
        No table, or no manifest beside it.
    ValueError
        Another prompt version, a status outside :data:`STATUSES`, a letter on an answer that is not valid.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no generated answers; make them with `python -m models.implicature.score "
                                "--passes generate`.")
    m = manifest_file(p)
    if not m.is_file():
        raise FileNotFoundError(f"{p}: no manifest {m.name} beside it (it records the LM's identity).")
    manifest = json.loads(m.read_text())
    df = pd.read_csv(p, keep_default_na=False, dtype={"item_id": str, "letter": str, "json_letter": str})
    other = sorted(set(df["prompt_version"].astype(str)) - {prompts.GENERATE_VERSION})
    if other:
        raise ValueError(f"{p}: rows of prompt version {other[0]!r}; the generated prompts are now "
                         f"{prompts.GENERATE_VERSION!r}. Generate them again.")
    bad = ~df["status"].isin(STATUSES)
    if bad.any():
        raise ValueError(f"{p}: status {df.loc[bad, 'status'].iloc[0]!r}; expected one of {list(STATUSES)}.")
    wrong = (df["status"] == "valid") != df["letter"].isin(prompts.LETTERS)
    if wrong.any():
        raise ValueError(f"{p}: row {int(wrong.to_numpy().argmax())}: status and letter disagree (a valid answer "
                         "has a letter A-E, another none).")
    return df, manifest
