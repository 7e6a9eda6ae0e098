"""Put a questionnaire to a language model: samples per query, parsed, resumable after a kill.

Layering: the standard library, :mod:`pragmodels.lm.base` (the :class:`LanguageModel` protocol:
only its ``sample`` method and its ``identity``), :mod:`pragmodels.io.atomic` and
:mod:`pragmodels.version`.

:func:`elicit` asks each :class:`Query`'s prompt ``n_samples`` times (one ``sample`` call of one
answer per sample) and parses each answer with a rule (text -> value, or None where the answer
does not parse). With ``resample`` > 0, a sample whose answer does not parse is asked again, up
to that many extra times (the Wavelength paper resampled until the answer parsed); with 0, the
invalid record is kept (as the social-meaning paper did). Each (query, sample) gives one record:
the query's fields, ``query_id``, ``sample_id``, ``raw_response``, ``value`` (the parsed value or
None), ``valid``, ``attempts``, ``seed`` (of the attempt kept), ``timestamp`` and
``prompt_sha256``.

Resumable: a query's records are appended to a JSONL progress file when the query is done
(flushed and fsynced), beside a manifest ``<progress>.manifest.json`` of the model's identity,
the settings and the parse rule's name. A rerun skips the queries done; a rerun with another
setting is refused, naming it. A line torn by a kill, and a query whose records were not all
written, are dropped and asked again. Each attempt's seed is derived from (``seed``, query id,
sample id, attempt) (:func:`derive_seed`), so a resumed run asks what an uninterrupted one asks.
The model is never written but by its identity (a server's URL and model name, a file's sha256):
no API key reaches the files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pragmodels.errors import PragmodelsError
from pragmodels.io.atomic import atomic_write
from pragmodels.lm.base import LanguageModel, LMError
from pragmodels.version import __version__

__all__ = ["Query", "Sampling", "ElicitationError", "elicit", "derive_seed", "estimate", "manifest_path",
           "RECORD_KEYS"]

#: the keys :func:`elicit` adds to a query's fields in each record
RECORD_KEYS = ("query_id", "sample_id", "raw_response", "value", "valid", "attempts", "seed", "timestamp",
               "prompt_sha256")
_FORMAT = "pragmodels.elicit/1"


class ElicitationError(PragmodelsError, ValueError):
    """A progress file that cannot be resumed (other settings, another model, a corrupt line), or
    queries or settings that cannot be asked."""


@dataclass(frozen=True)
class Query:
    """One question: an ``id`` (unique among the queries), the ``prompt`` (one user message) and
    ``fields`` copied into each of its records (e.g. ``{"scenario": "house", "attribute": "competent"}``).

    Parameters
    ----------
    id : str
        The query's identifier (seeds and resumption are keyed by it).
    prompt : str
        What the model is asked.
    fields : mapping
        JSON values copied into each record.
    """

    id: str
    prompt: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sampling:
    """The settings of each ``sample`` call (:meth:`pragmodels.lm.base.LanguageModel.sample`).

    Parameters
    ----------
    temperature : float
        Sampling temperature (> 0).
    max_tokens : int
        Most tokens per answer.
    stop : tuple of str
        Strings that end an answer.
    answer_prefix : str
        Text the answer is made to start with (passed only when not empty).
    """

    temperature: float = 1.0
    max_tokens: int = 32
    stop: tuple[str, ...] = ()
    answer_prefix: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The settings as JSON values (for the manifest).

        Returns
        -------
        dict
        """
        return {"temperature": float(self.temperature), "max_tokens": int(self.max_tokens), "stop": list(self.stop),
                "answer_prefix": self.answer_prefix}


def derive_seed(seed: int, query_id: str, sample_id: int, attempt: int = 0) -> int:
    """The seed of one attempt at one sample: 31 bits of the sha256 of its four parts.

    Parameters
    ----------
    seed : int
        The run's seed.
    query_id : str
        The query's id.
    sample_id : int
        The sample (0 to ``n_samples - 1``).
    attempt : int
        0 for the first ask, 1, 2, ... for resamples after a parse failure.

    Returns
    -------
    int
        In ``[0, 2**31)``.
    """
    text = "\x1f".join((str(int(seed)), query_id, str(int(sample_id)), str(int(attempt))))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") >> 1


def manifest_path(progress: str | os.PathLike[str]) -> Path:
    """The manifest beside a progress file: ``<progress>.manifest.json``.

    Parameters
    ----------
    progress : path-like
        The JSONL progress file.

    Returns
    -------
    pathlib.Path
    """
    p = Path(progress)
    return p.with_name(p.name + ".manifest.json")


def estimate(queries: Sequence[Query], n_samples: int, max_tokens: int) -> dict[str, int]:
    """What asking ``queries`` costs at most, before resampling: requests, the prompts' characters
    and tokens estimated as characters / 4 (one prompt per request), and answer tokens at most.

    Parameters
    ----------
    queries : sequence of Query
        The queries to ask.
    n_samples : int
        Samples per query (one request each).
    max_tokens : int
        Most tokens per answer.

    Returns
    -------
    dict
        ``requests``, ``prompt_chars``, ``prompt_tokens`` (estimated), ``answer_tokens_max``.
    """
    chars = sum(len(q.prompt) for q in queries) * n_samples
    requests = len(queries) * n_samples
    return {"requests": requests, "prompt_chars": chars, "prompt_tokens": round(chars / 4),
            "answer_tokens_max": requests * max_tokens}


def _identity(lm: LanguageModel) -> str:
    """The model's identity, or its class's name where it has none (never its repr: it may hold a key)."""
    ident = getattr(lm, "identity", None)
    return ident if isinstance(ident, str) and ident else f"{type(lm).__module__}.{type(lm).__qualname__}"


def _check_queries(queries: Sequence[Query]) -> list[Query]:
    out, seen = list(queries), set()
    for i, q in enumerate(out):
        if not isinstance(q, Query):
            raise ElicitationError(f"queries[{i}] = {q!r}; expected a pragmodels.lm.elicit.Query.")
        if not isinstance(q.id, str) or not q.id:
            raise ElicitationError(f"queries[{i}].id = {q.id!r}; expected a non-empty string.")
        if q.id in seen:
            raise ElicitationError(f"queries[{i}].id = {q.id!r} repeats an earlier query's id; ids must be unique.")
        seen.add(q.id)
        if not isinstance(q.prompt, str) or not q.prompt:
            raise ElicitationError(f"query {q.id!r}: prompt = {q.prompt!r}; expected a non-empty string.")
        clash = sorted(set(q.fields) & set(RECORD_KEYS))
        if clash:
            raise ElicitationError(f"query {q.id!r}: field {clash[0]!r} is a key elicit writes itself "
                                   f"({', '.join(RECORD_KEYS)}); rename it.")
        try:
            json.dumps(dict(q.fields), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ElicitationError(f"query {q.id!r}: fields are not JSON values ({e}).") from None
    return out


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ElicitationError(f"{name} = {value!r}; expected an int >= {minimum}.")
    return value


def _check_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest, or check the one there names the same model and settings."""
    mpath = manifest_path(path)
    if not mpath.exists():
        if path.exists() and path.stat().st_size:
            raise ElicitationError(f"{path}: has records but no manifest {mpath.name}; cannot tell how they were "
                                   "asked (start a new progress file).")
        atomic_write(mpath, lambda tmp: Path(tmp).write_text(json.dumps(manifest, indent=1) + "\n"))
        return
    try:
        old = json.loads(mpath.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ElicitationError(f"{mpath}: not a readable manifest ({e}).") from None
    if not isinstance(old, dict) or old.get("format") != _FORMAT:
        raise ElicitationError(f"{mpath}: not a manifest of pragmodels.lm.elicit (format {_FORMAT!r}).")
    if old.get("model") != manifest["model"]:
        raise ElicitationError(f"{path} was started with model {old.get('model')!r}; this run's model is "
                               f"{manifest['model']!r} (use another progress file for another model).")
    # the same model in another prompt format (chat vs plain text) answers another question; a manifest
    # written before the format was recorded, or a model that names none, has none to compare
    if None not in (old.get("prompt_format"), manifest["prompt_format"]) and old["prompt_format"] != \
            manifest["prompt_format"]:
        raise ElicitationError(f"{path} was started with prompt format {old['prompt_format']!r}; this run's is "
                               f"{manifest['prompt_format']!r} (use another progress file for another format).")
    for key, value in manifest["settings"].items():
        if old.get("settings", {}).get(key) != value:
            raise ElicitationError(f"{path} was started with {key} = {old.get('settings', {}).get(key)!r}; this "
                                   f"run has {key} = {value!r} (rerun with the same setting, or use another "
                                   "progress file).")


def _read_progress(f: IO[bytes], path: Path, n_samples: int) -> dict[str, list[dict[str, Any]]]:
    """The done queries' records, by query id; the file is cut after the last whole query."""
    f.seek(0)
    data = f.read()
    done: dict[str, list[dict[str, Any]]] = {}
    block: list[dict[str, Any]] = []
    keep = pos = 0
    lines = data.split(b"\n")
    for number, line in enumerate(lines, 1):
        end = pos + len(line) + 1
        if end > len(data):  # the text after the last newline: a line torn by a kill (or nothing)
            break
        try:
            record = json.loads(line) if line.strip() else None
            if record is not None and (not isinstance(record, dict) or not isinstance(record.get("query_id"), str)):
                raise ValueError("not a record")
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            raise ElicitationError(f"{path}: line {number} is not a record of pragmodels.lm.elicit.") from None
        pos = end
        if record is None:
            continue
        if block and block[0]["query_id"] != record["query_id"]:
            raise ElicitationError(f"{path}: line {number}: query {block[0]['query_id']!r} has "
                                   f"{len(block)} of its {n_samples} records before another query starts.")
        block.append(record)
        if len(block) == n_samples:
            qid = record["query_id"]
            if qid in done:
                raise ElicitationError(f"{path}: line {number}: query {qid!r} is recorded twice.")
            if [r.get("sample_id") for r in block] != list(range(n_samples)):
                raise ElicitationError(f"{path}: line {number}: query {qid!r} does not hold samples 0 to "
                                       f"{n_samples - 1}.")
            done[qid], block, keep = block, [], pos
    if keep < len(data):  # a torn line or a query cut short: dropped, asked again
        f.truncate(keep)
        f.flush()
        os.fsync(f.fileno())
    return done


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[IO[bytes]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        try:
            import fcntl
        except ImportError:  # (not POSIX: no lock)
            yield f
            return
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ElicitationError(f"{path}: another process is eliciting into this file.") from None
        try:
            yield f
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _ask(lm: LanguageModel, query: Query, sample_id: int, *, n_samples: int, sampling: Sampling, seed: int,
         parse: Callable[[str], Any], parse_name: str, resample: int) -> dict[str, Any]:
    """One record: the sample, asked again up to ``resample`` times while it does not parse."""
    kw: dict[str, Any] = {"temperature": sampling.temperature, "max_tokens": sampling.max_tokens,
                          "stop": list(sampling.stop)}
    if sampling.answer_prefix:
        kw["answer_prefix"] = sampling.answer_prefix
    for attempt in range(resample + 1):
        s = derive_seed(seed, query.id, sample_id, attempt)
        texts = lm.sample(query.prompt, 1, seed=s, **kw)
        if not isinstance(texts, list) or len(texts) != 1 or not isinstance(texts[0], str):
            raise LMError(f"{_identity(lm)}: sample(n=1) gave {texts!r} for query {query.id!r}; expected a list of "
                          "one string.")
        value = parse(texts[0])
        if value is not None:
            break
    return {**query.fields, "query_id": query.id, "sample_id": sample_id, "raw_response": texts[0], "value": value,
            "valid": value is not None, "attempts": attempt + 1, "seed": s,
            "timestamp": time.strftime("%Y-%m-%d %H:%M:%S")}


def _line(record: dict[str, Any], parse_name: str) -> bytes:
    try:
        return (json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n").encode()
    except (TypeError, ValueError) as e:
        raise ElicitationError(f"parse rule {parse_name!r} gave {record['value']!r} for query "
                               f"{record['query_id']!r}; expected a JSON value or None ({e}).") from None


def _format_key(lm: Any) -> str | None:
    """The prompt format's key for the manifest; a chat API's samples are rendered by the server's
    own template (llama-cpp-python's server renders none it can show, and need not: reading the
    format there raised before any request)."""
    inner = lm
    for _ in range(8):  # through the wrappers (a cache, a samples-only entry, a progress bar)
        api = getattr(inner, "sample_api", None)
        if api is not None:  # the server model itself
            if api == "chat":
                return "chat API (the server's template)"
            break
        inner = getattr(inner, "model", None) or getattr(inner, "lm", None)
        if inner is None or isinstance(inner, str):
            break
    key = getattr(getattr(lm, "prompt_format", None), "key", None)
    return key() if callable(key) else None


def elicit(lm: LanguageModel, queries: Sequence[Query], *, n_samples: int, parse: Callable[[str], Any],
           parse_name: str, progress: str | os.PathLike[str], sampling: Sampling = Sampling(), resample: int = 0,
           seed: int = 0, every: int = 10, log: Callable[[str], object] | None = None) -> list[dict[str, Any]]:
    """Ask each query ``n_samples`` times and parse the answers, resuming from ``progress``.

    Parameters
    ----------
    lm : LanguageModel
        The model (only its ``sample`` and ``identity`` are used).
    queries : sequence of Query
        The questions (ids unique).
    n_samples : int
        Samples per query (>= 1).
    parse : callable
        ``parse(text)``: the answer's value (a JSON value), or None where it does not parse.
    parse_name : str
        The parse rule's name, recorded in the manifest (a rerun with another rule is refused).
    progress : path-like
        The JSONL progress file (created, or resumed); its manifest lies beside it
        (:func:`manifest_path`).
    sampling : Sampling
        Temperature, most tokens, stop strings, answer prefix.
    resample : int
        Extra attempts per sample while its answer does not parse (0: keep the invalid record).
    seed : int
        The run's seed (each attempt's seed: :func:`derive_seed`).
    every : int
        Log a line every this many queries asked (and at the end).
    log : callable, optional
        Where the progress lines go (e.g. ``print``); None: nowhere.

    Returns
    -------
    list of dict
        The records of ``queries`` (those asked before included), in query order, then by sample.

    Raises
    ------
    ElicitationError
        Bad queries or settings; a progress file started with another model or other settings
        (naming the setting), or whose records are corrupt, or already in use.
    LMError
        As the model's ``sample``; the queries done before stay in the progress file.
    """
    qs = _check_queries(queries)
    _check_int("n_samples", n_samples, 1)
    _check_int("resample", resample, 0)
    _check_int("every", every, 1)
    _check_int("seed", seed, 0)
    if not callable(parse) or not isinstance(parse_name, str) or not parse_name:
        raise ElicitationError(f"parse = {parse!r}, parse_name = {parse_name!r}; expected a function and its name.")
    path = Path(progress)
    manifest = {"format": _FORMAT, "model": _identity(lm), "lm_entry": getattr(lm, "lm_entry", None),
                "prompt_format": _format_key(lm),
                "settings": {"n_samples": n_samples, **sampling.as_dict(), "resample": resample, "seed": seed,
                             "parse": parse_name},
                "pragmodels_version": __version__, "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    with _locked(path) as f:
        _check_manifest(path, manifest)
        done = _read_progress(f, path, n_samples)
        todo = [q for q in qs if q.id not in done]
        for q in qs:
            if q.id in done and done[q.id][0].get("prompt_sha256") != _sha(q.prompt):
                raise ElicitationError(f"{path}: query {q.id!r} was asked with another prompt; use another "
                                       "progress file for other prompts.")
        if log is not None:
            log(f"elicit: {len(qs) - len(todo)} of {len(qs)} queries done before; asking {len(todo)} "
                f"({len(todo) * n_samples} samples) of {manifest['model']}")
        start, failed = time.monotonic(), 0
        for i, q in enumerate(todo, 1):
            records = [{**_ask(lm, q, s, n_samples=n_samples, sampling=sampling, seed=seed, parse=parse,
                               parse_name=parse_name, resample=resample), "prompt_sha256": _sha(q.prompt)}
                       for s in range(n_samples)]
            f.write(b"".join(_line(r, parse_name) for r in records))
            f.flush()
            os.fsync(f.fileno())
            done[q.id] = records
            failed += sum(r["attempts"] - r["valid"] for r in records)
            if log is not None and (i % every == 0 or i == len(todo)):
                log(f"elicit: {i}/{len(todo)} queries asked, {failed} parse failures, "
                    f"{time.monotonic() - start:.0f} s")
    return [r for q in qs for r in done[q.id]]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
