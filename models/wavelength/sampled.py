"""The paper's sampled listeners and speakers (Qiu et al. 2025), asked through :func:`pragmodels.lm.elicit.elicit`.

The literal listener L0 by samples (32 written guesses per clue, parsed, resampled until they
parse) and by chain-of-thought samples (the same after "Let's think step by step.", no stop
string), and the speaker's clue, direct or step by step. The parse rules are upstream's, in words
(``listener_sample_note``, ``listener_cot_note``, ``speaker_note`` of the paper's prompts file):
a guess is the text inside the first ``<answer>...</answer>`` (the closing tag appended first to a
direct answer, whose stop string it was), ``*`` removed, read as a number; a clue is the same text
(the closing tag appended in both modes), not empty. Guesses are binned to the study's 21 states
(:func:`pragmodels.metrics.distributions.bin_to_grid`: the nearest of 0, 5, ..., 100, a tie to the
larger, values outside 0-100 to the end states), as the human guesses are for the entropy.
Everything is resumable: each kind of question has its own JSONL progress file and manifest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from models.wavelength import prompts
from pragmodels.lm import LanguageModel
from pragmodels.lm.elicit import Query, Sampling, elicit, estimate
from pragmodels.metrics.distributions import bin_to_grid

__all__ = ["KINDS", "N_SAMPLES", "RESAMPLE", "parse_guess", "parse_guess_cot", "parse_clue", "parse_clue_cot",
           "listener_queries", "speaker_queries", "alternative_queries", "clue_queries", "alternatives_from",
           "produced_clues", "sampling", "ask", "counts", "plan"]

#: the sampled routes: listener direct and step by step, speaker direct and step by step
KINDS = ("listener_sample", "listener_cot", "speaker", "speaker_cot")
#: samples per prompt (the paper's)
N_SAMPLES = 32
#: extra attempts per sample while it does not parse: 10 trials per sample, at most 10 x 32 per prompt (upstream's cap)
RESAMPLE = 9
_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def _inside(text: str, append: bool) -> str | None:
    m = _TAG.search(text.strip() + ("</answer>" if append else ""))
    return None if m is None else m.group(1).replace("*", "").strip()


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None  # 'nan', 'inf' are not guesses


def parse_guess(text: str) -> float | None:
    """A direct sampled guess (upstream's rule): ``</answer>`` appended, the first tagged text, ``*``
    removed, as a finite number; None otherwise.

    Parameters
    ----------
    text : str

    Returns
    -------
    float or None
    """
    return _number(_inside(text, True))


def parse_guess_cot(text: str) -> float | None:
    """A chain-of-thought guess: as :func:`parse_guess`, with nothing appended (no stop string).

    Parameters
    ----------
    text : str

    Returns
    -------
    float or None
    """
    return _number(_inside(text, False))


def parse_clue(text: str) -> str | None:
    """A sampled clue (upstream's rule, direct and step by step alike): ``</answer>`` appended, the
    first tagged text, ``*`` removed, stripped; None where there is none or it is empty.

    Parameters
    ----------
    text : str

    Returns
    -------
    str or None
    """
    return _inside(text, True) or None


parse_clue_cot = parse_clue
_PARSE: dict[str, Callable[[str], Any]] = {"listener_sample": parse_guess, "listener_cot": parse_guess_cot,
                                           "speaker": parse_clue, "speaker_cot": parse_clue_cot}


def sampling(kind: str, max_tokens: int, answer_prefix: str = "") -> Sampling:
    """The paper's settings for a kind: temperature 1, stop at ``</answer>`` when direct, none step by step.

    Parameters
    ----------
    kind : one of :data:`KINDS`
    max_tokens : int
        Most tokens per answer (upstream: 2048; capped here, and the cap is recorded in the manifest).
    answer_prefix : str
        Text the answer is begun with (upstream: none; ``"<answer>"`` is this project's departure for
        models too small to keep the format, recorded in the manifest; the parse sees it).

    Returns
    -------
    Sampling
    """
    from pragmodels.validation import check_one_of

    check_one_of("kind", kind, KINDS)
    return Sampling(temperature=1.0, max_tokens=int(max_tokens), answer_prefix=answer_prefix,
                    stop=() if kind.endswith("_cot") else ("</answer>",))


def listener_queries(items: pd.DataFrame, utterances: dict[int, list[str]], *, variant: str, cot: bool,
                     real_only: bool = False) -> list[Query]:
    """One query per (item, utterance): the sampled listener's prompt for that clue.

    Parameters
    ----------
    items : pandas.DataFrame
        ``item, left, right`` rows.
    utterances : dict
        ``{item: [real clue, alternative, ...]}`` (:func:`models.wavelength.lm_scores.utterance_sets`).
    variant : {"project", "paper"}
    cot : bool
        Step by step.
    real_only : bool
        Only each item's real clue (utterance 0).

    Returns
    -------
    list of Query
        Ids ``"<item>/<utterance>"``; fields ``item``, ``utterance`` (the clue's text is not written:
        the upstream clues are not republished).
    """
    out = []
    for it in items.itertuples():
        utts = utterances[int(it.item)][:1] if real_only else utterances[int(it.item)]
        for u, clue in enumerate(utts):
            out.append(Query(f"{int(it.item)}/{u}", prompts.sample_listener_prompt(it.left, it.right, clue, variant, cot),
                             {"item": int(it.item), "utterance": u}))
    return out


def speaker_queries(items: pd.DataFrame, *, variant: str, cot: bool) -> list[Query]:
    """One query per item: the speaker's prompt for the item's own target.

    Parameters
    ----------
    items : pandas.DataFrame
        ``item, left, right, target`` rows.
    variant : {"project", "paper"}
    cot : bool
        Step by step.

    Returns
    -------
    list of Query
        Ids ``"<item>"``; fields ``item``, ``target``.
    """
    return [Query(str(int(it.item)), prompts.speaker_prompt(it.left, it.right, int(it.target), variant, cot),
                  {"item": int(it.item), "target": int(it.target)}) for it in items.itertuples()]


def alternative_queries(items: pd.DataFrame, states: Sequence[int], *, variant: str) -> list[Query]:
    """One query per (item, state): the direct speaker's prompt for that target (how upstream
    generates an item's alternative clues; one sample each).

    Parameters
    ----------
    items : pandas.DataFrame
        ``item, left, right`` rows.
    states : sequence of int
        The targets (the paper: all 21).
    variant : {"project", "paper"}

    Returns
    -------
    list of Query
        Ids ``"<item>/<state>"``; fields ``item``, ``state``.
    """
    return [Query(f"{int(it.item)}/{int(s)}", prompts.speaker_prompt(it.left, it.right, int(s), variant),
                  {"item": int(it.item), "state": int(s)}) for it in items.itertuples() for s in states]


def alternatives_from(items: pd.DataFrame, records: Sequence[dict[str, Any]]) -> dict[int, list[str]]:
    """Each item's utterances from sampled alternative clues: the real clue, then the distinct clues that
    parse and pass :func:`models.wavelength.lm_scores.utterance_sets`' rules (as the scored route's).

    Parameters
    ----------
    items : pandas.DataFrame
        ``item, clue``.
    records : sequence of dict
        The ``speaker`` records of :func:`alternative_queries`.

    Returns
    -------
    dict
        ``{item: [real clue, alternative, ...]}``.
    """
    from models.wavelength.lm_scores import clean_clue, utterance_sets

    rows = [{"item": int(r["item"]), "state": int(r["state"]),
             "clue": clean_clue(r["value"]) if r["valid"] else None} for r in records]
    return utterance_sets(items, pd.DataFrame(rows, columns=["item", "state", "clue"]))


def produced_clues(records: Sequence[dict[str, Any]]) -> dict[int, list[tuple[str, int]]]:
    """The distinct clues an item's speaker produced, in order of first appearance, with their counts
    (spelling and case folded as :func:`models.wavelength.lm_scores.normalise_clue`; failures left out).

    Parameters
    ----------
    records : sequence of dict
        ``speaker`` or ``speaker_cot`` records (field ``item``).

    Returns
    -------
    dict
        ``{item: [(clue, count), ...]}``.
    """
    from models.wavelength.lm_scores import clean_clue, normalise_clue

    out: dict[int, dict[str, list[Any]]] = {}
    for r in records:
        clue = clean_clue(r["value"]) if r["valid"] else None
        d = out.setdefault(int(r["item"]), {})
        if clue is not None:
            d.setdefault(normalise_clue(clue), [clue, 0])[1] += 1
    return {i: [(c, n) for c, n in d.values()] for i, d in out.items()}


def clue_queries(items: pd.DataFrame, clues: dict[int, list[str]], *, variant: str, tag: str = "p") -> list[Query]:
    """The direct sampled listener's query for each clue an item's speaker produced.

    Parameters
    ----------
    items : pandas.DataFrame
        ``item, left, right`` rows.
    clues : dict
        ``{item: [clue, ...]}``.
    variant : {"project", "paper"}
    tag : str
        Prefix of the clue's index in the id.

    Returns
    -------
    list of Query
        Ids ``"<item>/<tag><k>"``; fields ``item``, ``utterance`` (``k``).
    """
    return [Query(f"{int(it.item)}/{tag}{k}", prompts.sample_listener_prompt(it.left, it.right, c, variant),
                  {"item": int(it.item), "utterance": k})
            for it in items.itertuples() for k, c in enumerate(clues.get(int(it.item), []))]


def ask(lm: LanguageModel, queries: Sequence[Query], *, kind: str, n_samples: int, max_tokens: int,
        progress: str | Path, seed: int, resample: int = RESAMPLE, answer_prefix: str = "",
        log: Callable[[str], object] | None = None) -> list[dict[str, Any]]:
    """Ask ``queries`` with a kind's settings and parse rule (resumable from ``progress``).

    Parameters
    ----------
    lm : LanguageModel
    queries : sequence of Query
    kind : one of :data:`KINDS`
    n_samples : int
        Samples per query.
    max_tokens : int
        Most tokens per answer.
    progress : path
        The JSONL progress file.
    seed : int
    resample : int
        Extra attempts per sample that does not parse (listeners: :data:`RESAMPLE`; speakers: 0).
    answer_prefix : str
        As :func:`sampling`.
    log : callable, optional

    Returns
    -------
    list of dict
        :func:`pragmodels.lm.elicit.elicit`'s records.
    """
    return elicit(lm, queries, n_samples=n_samples, parse=_PARSE[kind], parse_name=f"wavelength.{kind}",
                  progress=progress, sampling=sampling(kind, max_tokens, answer_prefix), resample=resample, seed=seed, every=5,
                  log=log)


def counts(records: Sequence[dict[str, Any]], item_ids: Sequence[int], n_utterance: int) -> np.ndarray:
    """Parsed guesses binned to the 21 states: ``[item, utterance, state]`` counts (failures left out).

    Parameters
    ----------
    records : sequence of dict
        A listener kind's records (fields ``item``, ``utterance``, ``value``, ``valid``).
    item_ids : sequence of int
        The items, in the order of the first axis.
    n_utterance : int
        Width of the utterance axis.

    Returns
    -------
    numpy.ndarray of int64
    """
    index = {int(i): k for k, i in enumerate(item_ids)}
    out = np.zeros((len(index), n_utterance, len(prompts.STATES)), np.int64)
    for r in records:
        if r["valid"] and int(r["item"]) in index:
            out[index[int(r["item"])], int(r["utterance"]), int(bin_to_grid(float(r["value"])))] += 1
    return out


def plan(queries: dict[str, Sequence[Query]], n_samples: dict[str, int], max_tokens: dict[str, int]
         ) -> pd.DataFrame:
    """What each kind costs at most before resampling (:func:`pragmodels.lm.elicit.estimate`), one row per kind.

    Parameters
    ----------
    queries, n_samples, max_tokens : dict
        By kind.

    Returns
    -------
    pandas.DataFrame
        ``kind, queries, requests, prompt_tokens, answer_tokens_max``.
    """
    rows = []
    for kind, qs in queries.items():
        e = estimate(qs, n_samples[kind], max_tokens[kind])
        rows.append({"kind": kind, "queries": len(qs), "requests": e["requests"], "prompt_tokens": e["prompt_tokens"],
                     "answer_tokens_max": e["answer_tokens_max"]})
    return pd.DataFrame(rows)
