"""The Wavelength study's language-model step: alternatives, literal tables, production samples.

Everything here talks to a language model (through :mod:`pragmodels.lm`, normally a
:class:`pragmodels.lm.CachedLM`) and turns its answers into arrays; nothing here fits.
:func:`score_study` runs the passes item by item and saves them as netCDF keyed by item id and
the prompt version; :func:`load_scores` reads them back for the study. The five steps per item
(alternatives, utterance set, listener and speaker tables, production):
``docs/studies/wavelength.md``, "Scoring with a language model".
"""

from __future__ import annotations

import datetime
import importlib.metadata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from models.wavelength import prompts, sampled
from pragmodels.io.netcdf import save_netcdf
from pragmodels.lm import LanguageModel, tagged

__all__ = ["generate_alternatives", "utterance_sets", "production_samples", "score_study", "load_scores",
           "normalise_clue", "scores_file", "N_UTTERANCE", "PASSES"]


#: a sampled clue ends at its closing tag or at a line break
STOP = ("</answer>", "\n")
#: the most words a clue may have (the game's rule); a longer sample is a parse failure
MAX_WORDS = 5


def _progress(it: Iterable[Any], total: int, desc: str, show: bool) -> Iterable[Any]:
    if not show:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, total=total, desc=desc, leave=False)


def normalise_clue(text: str) -> str:
    """The form clues are deduplicated by: whitespace collapsed, case-folded.

    Parameters
    ----------
    text : str
        A clue.

    Returns
    -------
    str
    """
    return " ".join(text.split()).casefold()


def clean_clue(text: str | None) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split()).strip(" .\"'")
    if not text or len(text.split()) > MAX_WORDS or "<" in text:
        return None
    return text


def _speak(lm: LanguageModel, prompt: str, n: int, *, seed: int, max_tokens: int, variant: str,
           answer_prefix: str = "") -> list[tuple[str, str | None]]:
    """``n`` sampled clues as (text, clue or None): the project's (answer begun with ``<answer>``, stop at
    the tag or a line break, :func:`clean_clue`) or the paper's (stop at the tag, upstream's parse
    :func:`~models.wavelength.sampled.parse_clue`, then :func:`clean_clue`; begun with ``answer_prefix``,
    upstream: none)."""
    if variant == "project":
        texts = lm.sample(prompt, n, temperature=1.0, max_tokens=max_tokens, stop=list(STOP), seed=seed,
                          answer_prefix="<answer>")
        return [(t, clean_clue(tagged(t))) for t in texts]
    kw = {"answer_prefix": answer_prefix} if answer_prefix else {}
    texts = lm.sample(prompt, n, temperature=1.0, max_tokens=max_tokens, stop=["</answer>"], seed=seed, **kw)
    return [(t, clean_clue(sampled.parse_clue(t))) for t in texts]


def generate_alternatives(lm: LanguageModel, items: pd.DataFrame, *, seed: int, max_tokens: int = 16,
                          progress: bool = False, variant: str = "project", answer_prefix: str = "",
                          states: Sequence[int] = prompts.STATES) -> pd.DataFrame:
    """One sampled clue per (item, state) from the LM speaker.

    Parameters
    ----------
    lm : LanguageModel
        The speaker (normally cached).
    items : pandas.DataFrame
        :func:`pragmodels.datasets.load_wavelength` rows (``item, left, right``).
    seed : int
        Base seed; the sample for (item, state) uses ``seed + 1000 * item + state``.
    max_tokens : int
        Most tokens per clue.
    progress : bool
        Show a progress bar.
    variant : {"project", "paper"}
        The speaker's wording and parse (:func:`_speak`).
    answer_prefix : str
        With ``"paper"``: the answer's start (:func:`_speak`).
    states : sequence of int
        The targets an alternative is sampled for (default: all 21, as the paper).

    Returns
    -------
    pandas.DataFrame
        ``item, state, text, clue`` (``clue`` is None where the text did not parse).
    """
    rows = []
    for it in _progress(items.itertuples(), len(items), "alternatives", progress):
        for s in states:
            (text, clue), = _speak(lm, prompts.speaker_prompt(it.left, it.right, s, variant), 1,
                                   seed=seed + 1000 * int(it.item) + s, max_tokens=max_tokens, variant=variant,
                                   answer_prefix=answer_prefix)
            rows.append({"item": int(it.item), "state": s, "text": text, "clue": clue})
    return pd.DataFrame(rows)


def utterance_sets(items: pd.DataFrame, alternatives: pd.DataFrame) -> dict[int, list[str]]:
    """Each item's utterances: the real clue, then its distinct parsed alternatives.

    Parameters
    ----------
    items : pandas.DataFrame
        ``item, clue``.
    alternatives : pandas.DataFrame
        :func:`generate_alternatives`' output.

    Returns
    -------
    dict
        ``{item: [real clue, alternative, ...]}``.
    """
    out: dict[int, list[str]] = {}
    by_item = {int(k): g for k, g in alternatives.groupby("item")}
    for it in items.itertuples():
        utts = [str(it.clue)]
        seen = {normalise_clue(str(it.clue))}
        for clue in by_item.get(int(it.item), pd.DataFrame({"clue": []}))["clue"]:
            if clue is None or (isinstance(clue, float) and np.isnan(clue)):
                continue
            key = normalise_clue(str(clue))
            if key not in seen:
                seen.add(key)
                utts.append(str(clue))
        out[int(it.item)] = utts
    return out


@dataclass
class Production:
    """Sampled clues for each item's target: distinct clues, their counts, the failures."""

    clues: dict[int, list[str]]
    counts: dict[int, list[int]]
    failed: dict[int, int]
    texts: pd.DataFrame


def production_samples(lm: LanguageModel, items: pd.DataFrame, *, n: int = 32, seed: int, max_tokens: int = 16,
                       progress: bool = False, variant: str = "project", answer_prefix: str = "") -> Production:
    """``n`` clues sampled for each item's own target (the Inverse-RSA speaker's S0).

    Parameters
    ----------
    lm : LanguageModel
        The speaker.
    items : pandas.DataFrame
        ``item, left, right, target``.
    n : int
        Samples per item (the paper uses 32).
    seed : int
        Base seed (item ``i`` uses ``seed + 100_000 + 1000 * i``, then consecutive seeds).
    max_tokens : int
        Most tokens per clue.
    progress : bool
        Show a progress bar.
    variant : {"project", "paper"}
        The speaker's wording and parse (:func:`_speak`).
    answer_prefix : str
        With ``"paper"``: the answer's start (:func:`_speak`).

    Returns
    -------
    Production
    """
    clues: dict[int, list[str]] = {}
    counts: dict[int, list[int]] = {}
    failed: dict[int, int] = {}
    rows = []
    for it in _progress(list(items.itertuples()), len(items), "production", progress):
        said = _speak(lm, prompts.speaker_prompt(it.left, it.right, int(it.target), variant), n,
                      seed=seed + 100_000 + 1000 * int(it.item), max_tokens=max_tokens, variant=variant,
                      answer_prefix=answer_prefix)
        order: dict[str, int] = {}
        spelled: dict[str, str] = {}
        bad = 0
        for t, c in said:
            rows.append({"item": int(it.item), "text": t, "clue": c})
            if c is None:
                bad += 1
                continue
            k = normalise_clue(c)
            spelled.setdefault(k, c)
            order[k] = order.get(k, 0) + 1
        clues[int(it.item)] = [spelled[k] for k in order]
        counts[int(it.item)] = list(order.values())
        failed[int(it.item)] = bad
    return Production(clues, counts, failed, pd.DataFrame(rows))


#: fixed widths of the padded axes: the real clue + one alternative per state; production samples
N_UTTERANCE = 1 + len(prompts.STATES)
PASSES = ("listener", "speaker", "production")


def _tokens(lm: LanguageModel, clue: str) -> int:
    tok = getattr(lm, "tokenize", None) or getattr(getattr(lm, "model", None), "tokenize", None)
    if tok is None:
        return len(clue.split())
    return len(tok(clue))


def _empty(items: np.ndarray, n_production: int, attrs: dict[str, Any]) -> xr.Dataset:
    n, u, s = len(items), N_UTTERANCE, len(prompts.STATES)
    nan3 = np.full((n, u, s), np.nan)
    return xr.Dataset(
        {
            "log_lm": (("item", "utterance", "state"), nan3.copy()),
            "log_s0": (("item", "utterance", "state"), nan3.copy()),
            "utt_mask": (("item", "utterance"), np.zeros((n, u), np.int8)),  # netCDF has no bool
            "clue_tokens": (("item", "utterance"), np.zeros((n, u), np.int64)),
            "alt_failed": (("item",), np.full(n, -1, np.int64)),
            "prod_log_lm": (("item", "alt", "state"), np.full((n, n_production, s), np.nan)),
            "prod_count": (("item", "alt"), np.zeros((n, n_production), np.int64)),
            "prod_mask": (("item", "alt"), np.zeros((n, n_production), np.int8)),
            "prod_clue_tokens": (("item", "alt"), np.zeros((n, n_production), np.int64)),
            "prod_failed": (("item",), np.full(n, -1, np.int64)),
            **{f"done_{k}": (("item",), np.zeros(n, np.int8)) for k in PASSES},
        },
        coords={"item": items, "state": np.array(prompts.STATES)},
        attrs=attrs,
    )


def _attrs(lm: LanguageModel, name: str, seed: int, n_production: int, variant: str = "project",
           answer_prefix: str = "", alt_states: Sequence[int] = prompts.STATES) -> dict[str, Any]:
    out = {"lm_name": name, "lm_identity": lm.identity, "prompt_format": lm.prompt_format.key(),
           "prompt_variant": variant, "prompt_version": prompts.prompt_version(variant), "seed": int(seed),
           "n_production": int(n_production), "pragmodels_version": importlib.metadata.version("pragmodels")}
    if variant != "project":  # (the project's files keep their attributes)
        out |= {"answer_prefix": answer_prefix, "alt_states": " ".join(str(int(s)) for s in alt_states)}
    return out


def _compatible(old: xr.Dataset, attrs: dict[str, Any]) -> bool:
    if old.attrs.get("prompt_variant", "project") != attrs["prompt_variant"]:  # files before variants: the project's
        return False
    return all(old.attrs.get(k) == attrs[k] for k in ("lm_identity", "prompt_format", "prompt_version", "seed",
                                                       "n_production", "answer_prefix", "alt_states") if k in attrs)


def scores_file(name: str, variant: str = "project") -> str:
    """The scores file's name for an LM and a prompt variant: ``<name>.nc`` (project), ``<name>.paper.nc``.

    Parameters
    ----------
    name : str
        The LM's label.
    variant : {"project", "paper"}

    Returns
    -------
    str
    """
    return f"{name}.nc" if variant == "project" else f"{name}.{variant}.nc"


def score_study(lm: LanguageModel, items: pd.DataFrame, *, name: str, seed: int, folder: str | Path,
                n_production: int = 32, passes: Sequence[str] = PASSES, production_items: Sequence[int] | None = None,
                save_every: int = 5, progress: bool = False, log: Any = None, variant: str = "project",
                answer_prefix: str = "", alt_states: Sequence[int] = prompts.STATES) -> Path:
    """Run the steps of docs/studies/wavelength.md ("Scoring with a language model") for one LM, item by item, saving as it goes.

    The file ``<folder>/<name>.nc`` (``<name>.paper.nc`` for the paper's prompts) records which items each pass has finished
    (``done_listener``, ``done_speaker``, ``done_production``); a run that was stopped picks up
    where it left off, and finished items are never scored again (the LM's own clues are kept in
    ``<name>_clues.csv`` beside it, so a later pass scores the same alternatives). A file made by
    another model, prompt version, seed or ``n_production`` is not mixed with: it is an error.

    Parameters
    ----------
    lm : LanguageModel
        Listener and speaker (normally a :class:`~pragmodels.lm.CachedLM`).
    items : pandas.DataFrame
        :func:`pragmodels.datasets.load_wavelength` rows (a subset is allowed).
    name : str
        A label for the LM, and the file stem.
    seed : int
        Base seed of all samples.
    folder : str or Path
        Where the scores are kept.
    n_production : int
        Clues sampled per item for production.
    passes : sequence of {"listener", "speaker", "production"}
        Which passes to run (``listener`` also generates the alternatives the others need).
    production_items : sequence of int, optional
        Items to run production on (default: all of ``items``).
    save_every : int
        Items between saves.
    progress : bool
        Show progress bars.
    log : callable, optional
        ``log(str)`` for a line per pass.
    variant : {"project", "paper"}
        The prompts' wording (:mod:`models.wavelength.prompts`), recorded as ``prompt_variant``.
    answer_prefix : str
        With ``"paper"``: what the speaker's answer is begun with (upstream: nothing).
    alt_states : sequence of int
        With ``"paper"``: the targets alternatives are sampled for (default all 21).

    Returns
    -------
    Path
        The netCDF file.

    Raises
    ------
    ValueError
        An unknown pass, or an existing file made otherwise.
    """
    for p in passes:
        if p not in PASSES:
            raise ValueError(f"passes: {p!r} is not one of {PASSES}.")
    prompts.check_variant(variant)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / scores_file(name, variant)
    clue_path = path.with_name(path.name.removesuffix(".nc") + "_clues.csv")
    attrs = _attrs(lm, name, seed, n_production, variant, answer_prefix, alt_states)
    ids = items["item"].to_numpy()
    if path.exists():
        from pragmodels.io.netcdf import load_netcdf

        old = load_netcdf(path).to_dataset()
        if not _compatible(old, attrs):
            raise ValueError(f"{path} was scored with other settings ({ {k: old.attrs.get(k) for k in attrs} }); "
                             f"move it away to score afresh with {attrs}.")
        missing = np.setdiff1d(ids, old["item"].to_numpy())
        ds = xr.concat([old, _empty(missing, n_production, attrs)], "item") if missing.size else old
        ds = ds.sortby("item")
    else:
        ds = _empty(np.sort(ids), n_production, attrs)
    ds.attrs.update(attrs)
    clues = pd.read_csv(clue_path, keep_default_na=False) if clue_path.exists() else pd.DataFrame(
        columns=["item", "kind", "index", "clue", "count", "state"])

    def save() -> None:
        ds.attrs["updated"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        save_netcdf(xr.DataTree(ds), path)
        tmp = clue_path.with_suffix(".csv.tmp")
        clues.sort_values(["item", "kind", "index"]).to_csv(tmp, index=False)
        tmp.replace(clue_path)

    by_id = {int(r.item): r for r in items.itertuples()}
    conts = prompts.answers()
    prod_set = set(int(i) for i in (production_items if production_items is not None else ids))
    for pas in PASSES:
        if pas not in passes:
            continue
        todo = [int(i) for i in ids if not ds[f"done_{pas}"].sel(item=int(i)).item()
                and (pas != "production" or int(i) in prod_set)]
        if log:
            log(f"{name}: {pas} pass, {len(todo)} of {len(ids)} items to score")
        for n_done, i in enumerate(_progress(todo, len(todo), f"{name} {pas}", progress)):
            it = by_id[i]
            if pas == "listener":
                alts = generate_alternatives(lm, items[items["item"] == i], seed=seed, variant=variant,
                                             answer_prefix=answer_prefix, states=alt_states)
                utts = utterance_sets(items[items["item"] == i], alts)[i]
                clues = clues[~((clues["item"] == i) & (clues["kind"] == "alternative"))]
                clues = pd.concat([clues, pd.DataFrame(
                    [{"item": i, "kind": "alternative", "index": u, "clue": c, "count": 1, "state": -1}
                     for u, c in enumerate(utts) if u > 0])], ignore_index=True)
                row = np.full((N_UTTERANCE, len(prompts.STATES)), np.nan)
                for u, c in enumerate(utts):
                    row[u] = lm.score(prompts.listener_prompt(it.left, it.right, c, variant), conts)
                mask = np.zeros(N_UTTERANCE, np.int8)
                mask[:len(utts)] = 1
                ntok = np.zeros(N_UTTERANCE, np.int64)
                ntok[:len(utts)] = [_tokens(lm, c) for c in utts]
                ds["log_lm"].loc[{"item": i}] = row
                ds["utt_mask"].loc[{"item": i}] = mask
                ds["clue_tokens"].loc[{"item": i}] = ntok
                ds["alt_failed"].loc[{"item": i}] = int(alts["clue"].isna().sum())
            elif pas == "speaker":
                if not ds["done_listener"].sel(item=i).item():
                    raise ValueError(f"item {i}: the speaker pass needs the listener pass's alternatives first.")
                utts = [str(it.clue)] + list(clues[(clues["item"] == i) & (clues["kind"] == "alternative")]
                                             .sort_values("index")["clue"].astype(str))
                row = np.full((N_UTTERANCE, len(prompts.STATES)), np.nan)
                cc = [prompts.clue_answer(c) for c in utts]
                for k, st in enumerate(prompts.STATES):
                    row[:len(utts), k] = lm.score(prompts.speaker_prompt(it.left, it.right, st, variant), cc,
                                                  length_normalize=True)
                ds["log_s0"].loc[{"item": i}] = row
            else:
                prod = production_samples(lm, items[items["item"] == i], n=n_production, seed=seed, variant=variant,
                                          answer_prefix=answer_prefix)
                pc, pn = prod.clues[i], prod.counts[i]
                row = np.full((n_production, len(prompts.STATES)), np.nan)
                cnt = np.zeros(n_production, np.int64)
                ntok = np.zeros(n_production, np.int64)
                for a, (c, k) in enumerate(zip(pc, pn)):
                    row[a] = lm.score(prompts.listener_prompt(it.left, it.right, c, variant), conts)
                    cnt[a] = k
                    ntok[a] = _tokens(lm, c)
                ds["prod_log_lm"].loc[{"item": i}] = row
                ds["prod_count"].loc[{"item": i}] = cnt
                ds["prod_mask"].loc[{"item": i}] = (cnt > 0).astype(np.int8)
                ds["prod_clue_tokens"].loc[{"item": i}] = ntok
                ds["prod_failed"].loc[{"item": i}] = prod.failed[i]
                clues = clues[~((clues["item"] == i) & (clues["kind"] == "production"))]
                clues = pd.concat([clues, pd.DataFrame(
                    [{"item": i, "kind": "production", "index": a, "clue": c, "count": k, "state": int(it.target)}
                     for a, (c, k) in enumerate(zip(pc, pn))])], ignore_index=True)
            ds[f"done_{pas}"].loc[{"item": i}] = 1
            if (n_done + 1) % save_every == 0:
                save()
        save()
    return path


def load_scores(path: str | Path, items: Sequence[int] | None = None,
                need: Sequence[str] = ("listener",)) -> xr.Dataset:
    """Read a :func:`score_study` file, check its prompts, and keep the items the passes finished.

    Parameters
    ----------
    path : str or Path
        The netCDF file.
    items : sequence of int, optional
        Items wanted (default: all that ``need`` finished).
    need : sequence of str
        Passes that must be finished for an item to be kept.

    Returns
    -------
    xarray.Dataset
        With boolean ``utt_mask`` and ``prod_mask``.

    Raises
    ------
    ValueError
        The file's ``prompt_version`` differs from its variant's
        (:func:`~models.wavelength.prompts.prompt_version`; no ``prompt_variant``: the project's), or a
        wanted item has not been scored by every pass in ``need``.
    """
    from pragmodels.io.netcdf import load_netcdf

    ds = load_netcdf(path).to_dataset()
    variant = str(ds.attrs.get("prompt_variant", "project"))
    now = prompts.prompt_version(variant)
    if ds.attrs.get("prompt_version") != now:
        raise ValueError(f"{path}: scored with prompt version {ds.attrs.get('prompt_version')!r}, but the "
                         f"{variant!r} prompts are now {now!r}; score again (the cache keeps what is unchanged).")
    done = np.ones(ds.sizes["item"], bool)
    for p in need:
        done &= ds[f"done_{p}"].to_numpy().astype(bool)
    if items is None:
        ds = ds.isel(item=np.nonzero(done)[0])
    else:
        have = dict(zip(ds["item"].to_numpy().tolist(), done))
        bad = [i for i in items if not have.get(int(i), False)]
        if bad:
            raise ValueError(f"{path}: items {bad[:10]} have not been scored by the passes {list(need)}.")
        ds = ds.sel(item=list(items))
    ds["utt_mask"] = ds["utt_mask"].astype(bool)
    ds["prod_mask"] = ds["prod_mask"].astype(bool)
    return ds
