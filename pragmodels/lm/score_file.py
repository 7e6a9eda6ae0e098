"""Score a file of prompts against a language model and write a table (``pragmodels lm score``).

Layering: the standard library, :mod:`pragmodels.lm.base`, :mod:`pragmodels.lm.cache`,
:mod:`pragmodels.lm.bundled`; a backend (:mod:`pragmodels.lm.llamacpp` or
:mod:`pragmodels.lm.openai_http`) is imported when a model is opened, ``tqdm`` when scoring
starts, ``pyarrow`` only to write Parquet. Prompts go to the model through
:func:`~pragmodels.lm.base.score_many` (a server: several requests in flight).

Input: JSON Lines, one prompt per line, ``{"id": ..., "prompt": ..., "continuations": [...]}``
with an optional ``"length_normalize"``; any other key is an error. Output: one row per (prompt,
continuation) as CSV or Parquet, and a provenance sidecar ``<out>.json``; both are renamed into
place only once every prompt is scored (the scores already computed stay in the cache, so a rerun
resumes). The formats in full: the docs page *Language models* ("Scoring a prompt file").
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from pragmodels.io.atomic import write_aside
from pragmodels.io.checksums import sha256_file
from pragmodels.lm.base import (
    LanguageModel,
    LMError,
    ModelFileError,
    ScoreRequest,
    check_continuations,
    score_many,
)
from pragmodels.lm.cache import CachedLM, ScoreCache

__all__ = ["PromptItem", "ScoreFileResult", "read_prompts", "resolve_model_path", "open_model", "score_prompts",
           "check_table_path", "write_table", "score_file", "COLUMNS", "BUNDLED_NAMES"]

#: the table's columns, in order
COLUMNS = ("id", "continuation_index", "continuation", "logprob", "length_normalize", "model", "prompt_format")

#: ``--model`` names of the bundled models (:mod:`pragmodels.lm.bundled`)
BUNDLED_NAMES = {"smollm2": "smollm2", "smollm2-135m": "smollm2", "gemma3": "gemma3", "gemma3-270m": "gemma3"}

_KEYS = {"id", "prompt", "continuations", "length_normalize"}


@dataclass(frozen=True)
class PromptItem:
    """One line of a prompt file.

    Parameters
    ----------
    id : str
        The prompt's id (unique in its file).
    prompt : str
        The user's prompt.
    continuations : tuple of str
        The candidates to score.
    length_normalize : bool
        Mean instead of sum of token log-probabilities.
    line : int
        The line number in the file (1-based), for error messages.
    """

    id: str
    prompt: str
    continuations: tuple[str, ...]
    length_normalize: bool
    line: int


@dataclass(frozen=True)
class ScoreFileResult:
    """What :func:`score_file` did.

    Parameters
    ----------
    table, sidecar : Path
        The table written and its provenance file.
    n_prompts, n_rows : int
        Prompts read and rows written (one per continuation).
    from_cache : int
        Scores read from the cache (the rest were computed).
    seconds : float
        Wall time of the scoring.
    """

    table: Path
    sidecar: Path
    n_prompts: int
    n_rows: int
    from_cache: int
    seconds: float


def read_prompts(path: str | os.PathLike[str]) -> list[PromptItem]:
    """The prompts of a JSON Lines file (the format: docs, *Language models*).

    Parameters
    ----------
    path : str or path-like
        The ``.jsonl`` file.

    Returns
    -------
    list of PromptItem

    Raises
    ------
    ValueError
        A line is not a JSON object, lacks ``id``, ``prompt`` or ``continuations``, has an
        unknown key, an empty or non-string continuation, an empty continuation list, a
        non-boolean ``length_normalize`` or an id already used; or the file holds no prompt.
        The message names the file and the line.
    OSError
        The file cannot be read.
    """
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(f"prompt file {p} is a folder; expected a .jsonl file.")
    items: list[PromptItem] = []
    seen: dict[str, int] = {}
    with p.open(encoding="utf-8") as f:
        for n, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            where = f"{p}, line {n}"
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: not valid JSON ({e.msg} at column {e.colno}).") from None
            except RecursionError:
                raise ValueError(f"{where}: not valid JSON (nested more than the parser allows, about "
                                 f"{sys.getrecursionlimit()} levels).") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{where}: expected a JSON object with keys id, prompt, continuations; "
                                 f"got {type(obj).__name__}.")
            missing = [k for k in ("id", "prompt", "continuations") if k not in obj]
            if missing:
                raise ValueError(f"{where}: required key {', '.join(map(repr, missing))} missing "
                                 "(expected id, prompt, continuations and optionally length_normalize).")
            unknown = sorted(set(obj) - _KEYS)
            if unknown:
                raise ValueError(f"{where}: unknown key {', '.join(map(repr, unknown))} (expected id, prompt, "
                                 "continuations and optionally length_normalize).")
            pid = obj["id"]
            if isinstance(pid, int) and not isinstance(pid, bool):
                pid = str(pid)
            if not isinstance(pid, str) or not pid:
                raise ValueError(f"{where}: id = {obj['id']!r}; expected a non-empty string.")
            if pid in seen:
                raise ValueError(f"{where}: id {pid!r} is already used on line {seen[pid]}; ids must be unique.")
            if not isinstance(obj["prompt"], str):
                raise ValueError(f"{where}: prompt = {obj['prompt']!r}; expected a string.")
            conts = obj["continuations"]
            if not isinstance(conts, list):
                raise ValueError(f"{where}: continuations = {conts!r}; expected a list of strings.")
            try:
                check_continuations(conts)
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
            norm = obj.get("length_normalize", False)
            if not isinstance(norm, bool):
                raise ValueError(f"{where}: length_normalize = {norm!r}; expected true or false.")
            seen[pid] = n
            items.append(PromptItem(pid, obj["prompt"], tuple(conts), norm, n))
    if not items:
        raise ValueError(f"prompt file {p} holds no prompts (one JSON object per line expected).")
    return items


def resolve_model_path(model: str | os.PathLike[str]) -> Path:
    """The GGUF file a ``--model`` value names: a bundled model's name, else a path.

    Parameters
    ----------
    model : str or path-like
        ``"smollm2"`` (``"smollm2-135m"``), ``"gemma3"`` (``"gemma3-270m"``), or a ``.gguf`` path.

    Returns
    -------
    Path

    Raises
    ------
    ModelFileError
        A bundled model is not installed, or the path does not exist.
    """
    from pragmodels.lm.bundled import gemma3_path, smollm2_path

    name = BUNDLED_NAMES.get(str(model).lower())
    if name == "smollm2":
        return smollm2_path()
    if name == "gemma3":
        return gemma3_path()
    p = Path(model).expanduser()
    if not p.exists():
        raise ModelFileError(f"model file {p} does not exist (--model takes a .gguf path or a bundled model: "
                             "smollm2, gemma3).")
    return p


def open_model(model: str | os.PathLike[str] | None = None, *, prompt_format: str = "chat",
               n_ctx: int | None = None, threads: int | None = None, base_url: str | None = None,
               server_model: str | None = None, chat_template: str | None = None, api_key_env: str | None = None,
               sample_api: str = "completions", concurrency: int | None = None) -> LanguageModel:
    """The model to score with: a GGUF file in this process, or an OpenAI-compatible server.

    A server is used when ``base_url`` or ``server_model`` is given, or ``model`` is not and
    ``$PRAGMODELS_LM_BASE_URL`` is set (:class:`~pragmodels.lm.openai_http.OpenAICompatibleLM`
    reads that and ``$PRAGMODELS_LM_MODEL``). A server applies no template to a text it scores, so
    its chat format comes from (first that applies): ``prompt_format="plain"`` (plain text, asked
    for), ``chat_template`` (a source: ``"server"``, ``"gguf:PATH"``, ``"hf:NAME_OR_DIR"``,
    ``"plain"``), the GGUF file ``model`` names (read for its template only), else the server itself
    (vLLM, llama.cpp's llama-server; an error at first use where it cannot).

    Parameters
    ----------
    model : str or path-like, optional
        A ``.gguf`` path or a bundled model's name (:func:`resolve_model_path`).
    prompt_format : {"chat", "plain"}
        The model's chat template, or plain text.
    n_ctx : int, optional
        Context window in tokens (in-process only; default that of
        :class:`~pragmodels.lm.llamacpp.LlamaCppLM`).
    threads : int, optional
        CPU threads (in-process only; default that of ``LlamaCppLM``).
    base_url : str, optional
        The server's URL, e.g. ``"http://127.0.0.1:8080/v1"``.
    server_model : str, optional
        The model name sent to the server.
    chat_template : str, optional
        Where a server's chat template comes from (above).
    api_key_env : str, optional
        The environment variable that holds the server's API key (never the key itself); ``""``: no
        key; ``None`` (``pragmodels lm score``, which documents it): ``OPENAI_API_KEY`` where it is set.
    sample_api : {"completions", "chat"}
        A server's endpoint for samples.
    concurrency : int, optional
        Most requests in flight to a server (default that of ``OpenAICompatibleLM``).

    Returns
    -------
    LanguageModel

    Raises
    ------
    ValueError
        No model and no server, an unknown prompt format or template source, or in-process
        settings given for a server (or server settings for a file).
    ModelFileError
        The model file is missing or not GGUF.
    LMError
        The backend is not installed, or the file has no chat template.
    """
    if prompt_format not in ("chat", "plain"):
        raise ValueError(f"prompt format {prompt_format!r}; expected 'chat' or 'plain'.")
    use_server = base_url is not None or server_model is not None or (
        model is None and bool(os.environ.get("PRAGMODELS_LM_BASE_URL")))
    if not use_server:
        if model is None:
            raise ValueError("no model: pass --model PATH.gguf (or smollm2, gemma3), or --base-url URL for a server "
                             "(or set $PRAGMODELS_LM_BASE_URL).")
        for name, setting in (("chat_template", chat_template), ("api_key_env", api_key_env)):
            if setting is not None:
                raise ValueError(f"{name} is a setting of a server; a GGUF file in this process has its own template "
                                 "and no key (drop it, or pass base_url).")
        from pragmodels.lm.llamacpp import DEFAULT_N_CTX, DEFAULT_N_THREADS, LlamaCppLM

        return LlamaCppLM(resolve_model_path(model), prompt_format=prompt_format,
                          n_ctx=DEFAULT_N_CTX if n_ctx is None else n_ctx,
                          n_threads=DEFAULT_N_THREADS if threads is None else threads)
    for flag, v in (("--n-ctx", n_ctx), ("--threads", threads)):
        if v is not None:
            raise ValueError(f"{flag} sets the in-process model; a server keeps its own settings (drop {flag}).")
    from pragmodels.lm.openai_http import OpenAICompatibleLM

    if prompt_format == "plain":
        source = "plain"
    elif chat_template is not None:
        source = chat_template
    elif model is not None:
        source = f"gguf:{resolve_model_path(model)}"
    else:
        source = "server"
    extra: dict[str, Any] = {} if concurrency is None else {"concurrency": concurrency}
    if api_key_env is None:
        api_key_env = "OPENAI_API_KEY" if os.environ.get("OPENAI_API_KEY") else ""
    return OpenAICompatibleLM(base_url, server_model, prompt_format=source, api_key_env=api_key_env or None,
                              sample_api=sample_api, **extra)


def _model_settings(lm: LanguageModel) -> dict[str, Any]:
    out: dict[str, Any] = {"backend": type(lm).__name__}
    # (api_key_env is the variable's name; the key itself is in no attribute)
    for attr in ("path", "n_ctx", "n_threads", "base_url", "api_key_env", "score_api", "concurrency"):
        v = getattr(lm, attr, None)
        if v is not None:
            out[attr] = str(v) if isinstance(v, Path) else v
    if hasattr(lm, "base_url"):
        out["server_model"] = getattr(lm, "model", None)
    settings = getattr(lm, "settings", None)
    if callable(settings):
        out["settings"] = settings()
    return out


def score_prompts(lm: LanguageModel, items: Sequence[PromptItem], *, progress: bool = False) -> list[dict[str, Any]]:
    """One table row per (prompt, continuation), through one :func:`~pragmodels.lm.base.score_many`
    call (a server keeps several requests in flight; other models score one prompt at a time).

    Parameters
    ----------
    lm : LanguageModel
        The model (a :class:`~pragmodels.lm.cache.CachedLM` to go through the cache).
    items : sequence of PromptItem
        The prompts.
    progress : bool
        A progress bar over the prompts (on stderr, when it is a terminal).

    Returns
    -------
    list of dict
        Rows with the keys :data:`COLUMNS`, in the order of ``items``.

    Raises
    ------
    LMError, ValueError
        Scoring a prompt failed (e.g. it does not fit the context window), or the model gave a
        NaN or +inf score or not one score per continuation; the message names the prompt's id
        and line.
    """
    from tqdm.auto import tqdm  # a widget in a notebook, text in a terminal

    identity, fmt = lm.identity, lm.prompt_format.name
    requests = [ScoreRequest(item.prompt, item.continuations, item.length_normalize) for item in items]
    with tqdm(total=len(items), desc="scoring", unit="prompt", disable=True if not progress else None) as bar:
        def done(i: int, scores: np.ndarray) -> None:
            _check_scores(items[i], scores)
            bar.update(1)

        try:
            results = score_many(lm, requests, on_result=done)
        except (LMError, ValueError) as e:
            i = getattr(e, "request_index", None)
            if not isinstance(i, int) or not 0 <= i < len(items) or getattr(e, "names_its_prompt", False):
                raise
            raise _with_context(e, f"prompt {items[i].id!r} (line {items[i].line})") from e
    rows: list[dict[str, Any]] = []
    for item, scores in zip(items, results):
        for j, (cont, s) in enumerate(zip(item.continuations, scores)):
            rows.append({"id": item.id, "continuation_index": j, "continuation": cont, "logprob": float(s),
                         "length_normalize": item.length_normalize, "model": identity, "prompt_format": fmt})
    return rows


def _check_scores(item: PromptItem, scores: np.ndarray) -> None:
    """One log-probability per continuation: a number, -inf allowed, not NaN or +inf."""
    where = f"prompt {item.id!r} (line {item.line})"
    problem = None
    if len(scores) != len(item.continuations):
        problem = f"the model gave {len(scores)} scores for {len(item.continuations)} continuations."
    else:
        for cont, s in zip(item.continuations, scores):
            if math.isnan(float(s)) or float(s) == math.inf:
                problem = f"the score of {cont!r} is {float(s)}; expected a log-probability (a number <= 0, or -inf)."
                break
    if problem is not None:
        err = LMError(f"{where}: {problem}")
        err.names_its_prompt = True  # type: ignore[attr-defined]
        raise err


def _with_context(e: Exception, where: str) -> Exception:
    """The same kind of error, its message prefixed with ``where``."""
    try:
        return type(e)(f"{where}: {e}")
    except Exception:  # noqa: BLE001 - an error class with another constructor
        return LMError(f"{where}: {e}")


def _write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import csv

    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)  # floats as repr: they read back exactly


def _write_parquet(rows: Sequence[dict[str, Any]], path: Path, provenance: dict[str, Any]) -> None:
    pa = importlib.import_module("pyarrow")
    pq = importlib.import_module("pyarrow.parquet")
    table = pa.table({c: [r[c] for r in rows] for c in COLUMNS})
    table = table.replace_schema_metadata({"pragmodels": json.dumps(provenance)})
    pq.write_table(table, str(path))


def check_table_path(out: str | os.PathLike[str]) -> Path:
    """The output path, if its suffix is one this module writes (and pyarrow is there for Parquet).

    Parameters
    ----------
    out : str or path-like
        ``*.csv`` or ``*.parquet``.

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        Another suffix, or Parquet without ``pyarrow``.
    """
    p = Path(out)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ValueError(f"--out {p}: expected a .csv or .parquet file name.")
    if suffix == ".parquet":
        try:
            importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise ValueError(f"--out {p}: writing Parquet needs pyarrow (pip install pyarrow), "
                             "or name a .csv file.") from None
    if p.is_dir():
        raise ValueError(f"--out {p} is a folder; expected a file name.")
    return p


def write_table(rows: Sequence[dict[str, Any]], out: str | os.PathLike[str],
                provenance: dict[str, Any]) -> tuple[Path, Path]:
    """Write the table and its provenance sidecar ``<out>.json``, each atomically.

    Both are written in full to temporary files beside ``out`` before either is renamed into
    place; on failure the temporary files are removed and any earlier table is left as it was.

    Parameters
    ----------
    rows : sequence of dict
        Rows with the keys :data:`COLUMNS`.
    out : str or path-like
        ``*.csv``, or ``*.parquet`` (needs ``pyarrow``); its folder is created.
    provenance : dict
        JSON-serialisable; written to the sidecar (and, for Parquet, to the schema metadata).

    Returns
    -------
    (Path, Path)
        The table and the sidecar.

    Raises
    ------
    ValueError
        An unsupported suffix, or Parquet without ``pyarrow``.
    OSError
        The files cannot be written.
    """
    table = check_table_path(out)
    sidecar = table.with_name(table.name + ".json")
    with write_aside(table, sidecar) as (tmp_table, tmp_side):
        if table.suffix.lower() == ".parquet":
            _write_parquet(rows, tmp_table, provenance)
        else:
            _write_csv(rows, tmp_table)
        tmp_side.write_text(json.dumps(provenance, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return table, sidecar


def score_file(prompts: str | os.PathLike[str], out: str | os.PathLike[str], lm: LanguageModel, *,
               cache: ScoreCache | None = None, progress: bool = False,
               extra: dict[str, Any] | None = None) -> ScoreFileResult:
    """Score every prompt of a JSON Lines file and write the table (docs, *Language models*).

    The input and the output name are checked before anything is scored.

    Parameters
    ----------
    prompts : str or path-like
        The ``.jsonl`` file (:func:`read_prompts`).
    out : str or path-like
        The table (:func:`write_table`).
    lm : LanguageModel
        The model (:func:`open_model`).
    cache : ScoreCache, optional
        Go through this score cache (:class:`~pragmodels.lm.cache.CachedLM`); ``None``: no cache.
    progress : bool
        A progress bar over the prompts.
    extra : dict, optional
        More provenance to record (e.g. the command line's settings).

    Returns
    -------
    ScoreFileResult

    Raises
    ------
    ValueError
        The prompt file is malformed, or the output name is not ``.csv`` / ``.parquet``.
    LMError
        Scoring failed (a server that is down, a prompt longer than the context window, ...).
    OSError
        A file cannot be read or written.
    """
    src = Path(prompts)
    items = read_prompts(src)
    check_table_path(out)
    model: LanguageModel = CachedLM(lm, cache) if cache is not None else lm
    hits0 = cache.stats.hits if cache is not None else 0
    t0 = time.perf_counter()
    rows = score_prompts(model, items, progress=progress)
    seconds = time.perf_counter() - t0
    from_cache = (cache.stats.hits - hits0) if cache is not None else 0
    from pragmodels.version import __version__

    fmt = lm.prompt_format
    provenance = {
        "tool": "pragmodels lm score",
        "pragmodels_version": __version__,
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "input": {"path": str(src.resolve()), "sha256": sha256_file(src), "prompts": len(items)},
        "model": {"identity": lm.identity, **_model_settings(lm)},
        "prompt_format": {"name": fmt.name, "source": fmt.source, "before": fmt.before, "between": fmt.between,
                          "end": fmt.end},
        "cache": {"path": str(Path(str(cache.path)).resolve()), "from_cache": from_cache, "computed": len(rows) - from_cache}
        if cache is not None else None,
        "rows": len(rows),
        "seconds": round(seconds, 3),
        "columns": list(COLUMNS),
        **(extra or {}),
    }
    table, sidecar = write_table(rows, out, provenance)
    return ScoreFileResult(table, sidecar, len(items), len(rows), from_cache, seconds)
