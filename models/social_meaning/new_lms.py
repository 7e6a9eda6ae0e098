"""New LMs in the social-meaning study, beside the published three and never mixed in.

The config's ``lms`` names LMs whose answers to the paper's questionnaire were elicited beforehand
(:mod:`models.social_meaning.elicit`). :func:`read_checked` checks each entry against its folder's
manifest (the LM's identity, :meth:`pragmodels.lm.entry.LMEntry.identity_mismatch`) and each
results file for completeness, before any fit, one line naming the entry and the file; then
:func:`metrics_table` (Tables 2-4 rows), :func:`answer_table` (parse failures, the ratings' spread)
and :func:`section` (the report's part on them). Notes: ``docs/studies/social_meaning.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from models.social_meaning.elicit import elicited_folder
from pragmodels import datasets, metrics
from pragmodels.lm.elicit import manifest_path
from pragmodels.lm.entry import LMEntry

__all__ = ["read_checked", "metrics_table", "answer_table", "complete_effects", "section"]

#: the columns of the Tables 2-4 rows of a new LM (as ``tables/reproduction.csv``, no paper values)
METRIC_COLUMNS = ["spearman", "ccc", "rmse", "rmse_individual", "cds_m", "cds_i", "cds", "das", "iss"]


def _manifest(name: str, folder: Path) -> dict[str, Any]:
    path = manifest_path(folder / "progress.jsonl")
    if not path.is_file():
        raise FileNotFoundError(f"`lms.{name}`: no manifest {path}; elicit the LM's answers first: python -m "
                                f"models.social_meaning.elicit --lm {name} --out {folder} (and its LM options).")
    try:
        manifest = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"`lms.{name}`: {path} is not a readable manifest ({e}).") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("settings"), dict):
        raise ValueError(f"`lms.{name}`: {path} is not a manifest of pragmodels.lm.elicit.")
    return manifest


def read_checked(lms: Mapping[str, LMEntry], *, record: Callable[[str, Path], object] | None = None
                 ) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """Check every entry, then read the new LMs' ratings (one frame, beside the published).

    Each entry's folder (:func:`~models.social_meaning.elicit.elicited_folder`) must hold the
    manifest of the elicitation, made by the LM the entry names, and at least one
    ``results_<PROMPT>.json``, each with all 144 queries and the manifest's samples per query.
    Every entry is checked before any is read.

    Parameters
    ----------
    lms : mapping of str to LMEntry
        The config's ``lms``.
    record : callable, optional
        ``record(key, path)`` for each results file and manifest read (their sha256 go into ``run.json``).

    Returns
    -------
    ratings : pandas.DataFrame
        As :func:`pragmodels.datasets.load_social_llm` (``model``: the entry's name).
    info : dict
        Per LM: ``identity``, ``settings`` (the manifest's), ``prompts`` (those asked), ``folder``,
        ``cells`` (per prompt: 144, or a subset's 24k).

    Raises
    ------
    FileNotFoundError
        No manifest, or no results file.
    ValueError
        The manifest records another LM than the entry names; a results file is incomplete.
    """
    info = {}
    for name, entry in lms.items():
        folder = elicited_folder(name, entry)
        manifest = _manifest(name, folder)
        recorded = str(manifest.get("model", ""))
        why = entry.identity_mismatch(recorded)
        if why:
            raise ValueError(f"`lms.{name}`: {manifest_path(folder / 'progress.jsonl')} records answers of "
                             f"{recorded or 'an unrecorded LM'}, but {why}; elicit again or correct the entry.")
        prompts = [p for p in datasets.PROMPTS if (folder / f"results_{p}.json").is_file()]
        if not prompts:
            raise FileNotFoundError(f"`lms.{name}`: no results_<PROMPT>.json in {folder}; elicit them with python -m "
                                    f"models.social_meaning.elicit --lm {name} --out {folder}.")
        info[name] = {"identity": recorded, "settings": manifest["settings"], "prompts": prompts, "folder": folder}
    frames = []
    for name, i in info.items():
        n, i["cells"] = int(i["settings"].get("n_samples", 0)), {}
        for p in i["prompts"]:
            path = i["folder"] / f"results_{p}.json"
            try:
                frame = datasets.load_social_llm_elicited(i["folder"], name, [p], n_samples=n, complete=False)
                i["cells"][p] = _check_cells(frame, p)
            except (ValueError, FileNotFoundError) as e:  # DataSchemaError is a ValueError
                raise ValueError(f"`lms.{name}`: {path} is incomplete or not in the published schema "
                                 f"({str(e).splitlines()[0]}); finish it with python -m models.social_meaning.elicit "
                                 f"--lm {name} --conditions {p} (resumable).") from None
            frames.append(frame)
            if record is not None:
                record(f"elicited_{name}_{p}", path)
        if record is not None:
            record(f"elicited_{name}_manifest", manifest_path(i["folder"] / "progress.jsonl"))
    return pd.concat(frames, ignore_index=True), info


def _check_cells(frame: pd.DataFrame, prompt: str) -> int:
    """The number of cells a results file holds: all 144, or the first 24k of the fixed order of
    ``--limit`` (whole blocks, each every condition mean once); anything else is a ValueError."""
    from models.social_meaning.elicit import queries

    held = set(frame[["scenario", "context", "form", "attribute"]].itertuples(index=False, name=None))
    k = len(held)
    expected = {(q.fields["scenario"], q.fields["context"], q.fields["utterance"], q.fields["attribute"])
                for q in queries(datasets.load_social_prompts(), [prompt], limit=k)}
    if k % 24 or held != expected:
        raise ValueError(f"{k} of 144 cells, not the first {24 * (k // 24 + 1)} of the fixed order of --limit "
                         "(whole blocks of 24)")
    return k


def complete_effects(g: pd.DataFrame) -> list[str]:
    """The attributes whose four context x form cells hold a valid rating in ``g`` (their effects are defined)."""
    v = metrics.valid_ratings(g).frame
    cells = v.groupby("attribute")[["context", "form"]].apply(lambda d: len(d.drop_duplicates()))
    return [a for a in datasets.ATTRIBUTES if cells.get(a, 0) == 4]


def metrics_table(human: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Tables 2-4 rows (:func:`pragmodels.metrics.calibration_metrics`) per new LM x prompt.

    Where some of the 24 condition means has no valid rating, Spearman, CCC and the RMSEs are
    computed over those that have one (``cells``), and CDS, DAS and ISS, which need every
    effect, are NaN (``attributes``: how many of 6 have all four cells).

    Parameters
    ----------
    human : pandas.DataFrame
        The human ratings.
    new : pandas.DataFrame
        :func:`read_checked`'s ratings.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``prompt``, :data:`METRIC_COLUMNS`, ``n_valid``, ``n_invalid``, ``cells``, ``attributes``.
    """
    rows = []
    for (m, p), g in new.groupby(["model", "prompt"], sort=False):
        keep = complete_effects(g)
        row: dict[str, Any] = {"model": m, "prompt": p, **dict.fromkeys(METRIC_COLUMNS, np.nan),
                               "n_valid": int(g["valid"].sum()), "n_invalid": int((~g["valid"]).sum())}
        if len(keep) == len(datasets.ATTRIBUTES):
            r = metrics.calibration_metrics(human, g)
            row.update({k: r[k] for k in METRIC_COLUMNS})
        else:
            row.update(_cell_metrics(human, g))
        rows.append({**row, "cells": int(metrics.cell_means(metrics.valid_ratings(g).frame).size),
                     "attributes": len(keep)})
    return pd.DataFrame(rows)


def _cell_metrics(human: pd.DataFrame, g: pd.DataFrame) -> dict[str, float]:
    """Spearman, CCC and the RMSEs over the condition means with a valid rating (NaN with fewer than 3)."""
    hc = metrics.cell_means(metrics.valid_ratings(human).frame)
    mc = metrics.cell_means(metrics.valid_ratings(g).frame)
    hc = hc.loc[mc.index]
    if len(mc) < 3:
        return {}
    h = metrics.valid_ratings(human).frame
    indiv = h.join(mc.rename("model_mean"), on=list(mc.index.names)).dropna(subset=["model_mean"])
    return {"spearman": float(stats.spearmanr(hc.values, mc.values).statistic),
            "ccc": metrics.calibration.ccc_upstream(hc.values, mc.values),
            "rmse": float(np.sqrt(np.mean((hc.values - mc.values) ** 2))),
            "rmse_individual": float(np.sqrt(np.mean((indiv["rating"] - indiv["model_mean"]) ** 2)))}


def answer_table(new: pd.DataFrame, info: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """What each new LM answered, per prompt: requests, the share of parse failures (no single
    digit 1-7), the valid ratings' mean and standard deviation and the share of the most common
    rating (near 1: near-constant ratings), and the elicitation's settings.

    Parameters
    ----------
    new : pandas.DataFrame
        :func:`read_checked`'s ratings.
    info : mapping
        :func:`read_checked`'s info.

    Returns
    -------
    pandas.DataFrame
    """
    rows = []
    for (m, p), g in new.groupby(["model", "prompt"], sort=False):
        r = g.loc[g["valid"], "rating"].astype(float)
        s = info[m]["settings"]
        rows.append({"model": m, "prompt": p, "identity": info[m]["identity"], "cells": info[m].get("cells", {}).get(p),
                     "requests": len(g),
                     "samples_per_query": s.get("n_samples"), "parse_failures": float((~g["valid"]).mean()),
                     "mean": r.mean(), "sd": r.std(), "modal_share": float(r.value_counts(normalize=True).max())
                     if len(r) else np.nan,
                     **{f"share_{k}": float((r == k).mean()) if len(r) else np.nan for k in range(1, 8)},
                     "temperature": s.get("temperature"), "max_tokens": s.get("max_tokens"),
                     "stop": json.dumps(s.get("stop")), "answer_prefix": json.dumps(s.get("answer_prefix"))})
    return pd.DataFrame(rows)


def _fit_limits(params: pd.DataFrame | None, lm_names: list[str] | None) -> list[str]:
    """Sentences on the RSA fits of the new LMs against the human fit: the response noise, alpha's interval."""
    if params is None or "human" not in set(params.fit):
        return []
    h = params[params.fit == "human"].iloc[0]
    lines = []
    for _, r in params[params.fit.str.split().str[0].isin(lm_names or [])].iterrows():
        words = [f"response noise {r.noise:.2f} rating points against the humans' {h.noise:.2f}"]
        if r.noise > 2 * h.noise:
            words[0] += ": most of its ratings' spread is noise that no condition explains"
        if r.lapse > max(0.1, 3 * h.lapse):
            words.append(f"lapse rate {r.lapse:.2f} against the humans' {h.lapse:.2f}: the RSA fit reads that share of "
                         "its ratings as uniform guesses")
        if (r.alpha_hi - r.alpha_lo) > (h.alpha_hi - h.alpha_lo):
            words.append(f"alpha's 94% interval [{r.alpha_lo:.2f}, {r.alpha_hi:.2f}] is wider than the humans' "
                         f"[{h.alpha_lo:.2f}, {h.alpha_hi:.2f}]: its ratings pin the speaker's rationality less")
        words.append(_identified(r, h))
        lines.append(f"- RSA fit **{r.fit}**{'' if r.converged else ' (below the sampling standards)'}: "
                     + "; ".join(words) + ".")
    return lines


#: z of a central 94% interval (the reports' intervals)
_Z94 = 1.8807936081512509
#: an alpha whose 94% interval spans at least this share of its prior's (log scale) is not identified
UNIDENTIFIED = 0.8


def alpha_prior_span() -> float:
    """The log-scale width of alpha's prior 94% interval (the RSA fits' LogNormal prior)."""
    from models.social_meaning.rsa import PRIORS_RSA

    prior = PRIORS_RSA["alpha"]
    if prior.family != "LogNormal":
        raise ValueError(f"alpha's prior is {prior.family}; expected LogNormal (its 94% interval in closed form).")
    return 2 * _Z94 * float(prior.params["scale"])


def _identified(r: pd.Series, h: pd.Series) -> str:
    """Whether the fit's ratings identify alpha: its 94% interval against its prior's, on the log
    scale (:data:`UNIDENTIFIED`), beside the humans'."""
    span = alpha_prior_span()
    share, human = np.log(r.alpha_hi / r.alpha_lo) / span, np.log(h.alpha_hi / h.alpha_lo) / span
    if share >= UNIDENTIFIED:
        return (f"its ratings do not identify alpha: its 94% interval spans {share:.0%} of its prior's on the log "
                f"scale (the humans' {human:.0%}"
                + (", whose ratings narrow it little either" if human >= UNIDENTIFIED else "")
                + "), so alpha and its contrast with the humans' carry the prior; what this fit identifies is the "
                "noise")
    return f"its ratings identify alpha: its 94% interval spans {share:.0%} of its prior's on the log scale (the humans' {human:.0%})"


def _fmt(x: float, lo: float | None = None, hi: float | None = None) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:.2f}" if lo is None else f"{x:.2f} [{lo:.2f}, {hi:.2f}]"


def section(tables: Path, quick: bool, lm_names: list[str]) -> str:
    """The report's section on the new LMs, from a run folder's tables: what they answered, their
    Tables 2-4 rows beside the published LLMs', the measurement model's CDS, the RSA fits' alpha
    and noise beside the humans', the contrasts, and what models this small can and cannot show.

    Parameters
    ----------
    tables : pathlib.Path
        The run's ``tables`` folder.
    quick : bool
        A quick run (its fits are short chains: their numbers are no estimates).
    lm_names : list of str
        The new LMs' names.

    Returns
    -------
    str
    """
    read = lambda name: pd.read_csv(tables / name) if (tables / name).exists() else None  # noqa: E731
    answers, lm_metrics, repro = read("lm_answers.csv"), read("lm_metrics.csv"), read("reproduction.csv")
    cds, params, contrasts = read("cds_model_lms.csv"), read("parameters.csv"), read("contrasts.csv")
    out = ["", "## New LMs, beside the published three", "",
           "Their answers to the paper's questionnaire (`python -m models.social_meaning.elicit`), read from "
           "`fits/social_meaning/elicited/<lm>/` after each `lms` entry was checked against the manifest's LM "
           "identity and each results file for completeness. They are fitted and measured on their own, never "
           "mixed into the published LLMs' data, tables or measurement model."]
    if quick:
        out += ["", "**Quick run**: the RSA fits and the measurement model below ran short chains (the config's "
                "`quick` sampler); their numbers show that the pipeline runs for these LMs, they are not "
                "estimates. The answer table and the Tables 2-4 rows are exact (no sampling)."]
    if answers is not None:
        out += ["", "| LM | prompt | cells of 144 | requests | samples per cell | parse failures | mean rating | sd | "
                "share of the modal rating |", "|---|---|---|---|---|---|---|---|---|"]
        out += [f"| {r.model} | {r.prompt} | {r.cells} | {r.requests} | {r.samples_per_query} | {r.parse_failures:.0%} | "
                f"{_fmt(r['mean'])} | {_fmt(r.sd)} | {_fmt(r.modal_share)} |" for _, r in answers.iterrows()]
    if lm_metrics is not None:
        prompts = list(dict.fromkeys(lm_metrics.prompt))
        out += ["", "Tables 2-4 (the paper's metrics, `pragmodels.metrics.calibration_metrics`), the new LMs beside "
                "the published LLMs under the same prompts (`cells`: the condition means of 24 with a valid rating; "
                "where some has none, CDS, DAS and ISS are undefined):", "",
                "| model | prompt | cells | Spearman | CCC | RMSE | CDS_M | CDS_I | CDS | DAS | ISS |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        rows = [(r, int(r.cells)) for _, r in lm_metrics.iterrows()]
        if repro is not None:
            rows += [(r, 24) for _, r in repro[repro.prompt.isin(prompts)].iterrows()]
        for r, n_att in rows:
            out.append(f"| {r.model} | {r.prompt} | {n_att} | " + " | ".join(
                _fmt(r[c]) for c in ("spearman", "ccc", "rmse", "cds_m", "cds_i", "cds", "das", "iss")) + " |")
    left = cds[cds.cds.isna()] if cds is not None else None
    cds = cds[cds.cds.notna()] if cds is not None else None
    if cds is not None and len(cds):
        out += ["", "CDS of the measurement model (median and 94% interval; the human effects estimated too), "
                "fitted to the humans and the new LMs alone:", "", "| LM | prompt | CDS_M | CDS_I | CDS |",
                "|---|---|---|---|---|"]
        out += [f"| {r.model} | {r.prompt} | {_fmt(r.cds_m, r.cds_m_lo, r.cds_m_hi)} | "
                f"{_fmt(r.cds_i, r.cds_i_lo, r.cds_i_hi)} | {_fmt(r.cds, r.cds_lo, r.cds_hi)} |" for _, r in cds.iterrows()]
    if params is not None:
        keep = params[params.fit.str.split().str[0].isin(lm_names) | (params.fit == "human")
                      | params.fit.isin([f"{m} {p}" for m in datasets.LLMS for p in datasets.PROMPTS])]
        out += ["", "RSA fits (median and 94% interval; † below the sampling standards):", "",
                "| fit | alpha | response noise | lapse |", "|---|---|---|---|"]
        out += [f"| {r.fit}{'' if r.converged else ' †'} | {_fmt(r.alpha, r.alpha_lo, r.alpha_hi)} | "
                f"{_fmt(r.noise, r.noise_lo, r.noise_hi)} | {_fmt(r.lapse, r.lapse_lo, r.lapse_hi)} |"
                for _, r in keep.iterrows()]
    if contrasts is not None:
        c = contrasts[contrasts.fit.str.split().str[0].isin(lm_names)]
        if len(c):
            out += ["", "Contrasts with the human fit (LM minus humans, median and 94% interval; P(LM > humans)):", "",
                    "| fit | parameter | difference | P(LM > humans) |", "|---|---|---|---|"]
            out += [f"| {r.fit} | {r.parameter} | {_fmt(r.difference, r.lower, r.upper)} | {r.p_greater:.2f} |"
                    for _, r in c[c.parameter.isin(["alpha", "noise"])].iterrows()]
    out += ["", "### What a model this small can and cannot show", ""] + _limits(answers, lm_metrics, cds, params,
                                                                                 lm_names, repro, tables, left)
    return "\n".join(out) + "\n"


def _limits(answers: pd.DataFrame | None, lm_metrics: pd.DataFrame | None, cds: pd.DataFrame | None,
            params: pd.DataFrame | None = None, lm_names: list[str] | None = None,
            repro: pd.DataFrame | None = None, tables: Path | None = None,
            left: pd.DataFrame | None = None) -> list[str]:
    """Plain sentences, from the numbers, on what these LMs' data can carry."""
    lines = []
    for _, r in (answers if answers is not None else pd.DataFrame()).iterrows():
        words = [f"{r.parse_failures:.0%} of its {r.requests} answers to the {r.prompt} prompt hold no single digit "
                 "1-7 (the paper's rule; no resampling)"]
        ends = r.share_1 + r.share_7
        if np.isfinite(ends) and ends >= 0.6:
            words.append(f"{ends:.0%} of the valid ones are 1 or 7, the two numbers the prompt's scale names")
        if np.isfinite(r.modal_share) and r.modal_share >= 0.5:
            words.append(f"{r.modal_share:.0%} of the valid ones are one and the same rating: near-constant ratings "
                         "carry little about the conditions")
        elif np.isfinite(r.modal_share):
            words.append(f"its valid ratings are not near-constant (sd {r.sd:.2f}; the commonest rating "
                         f"{r.modal_share:.0%} of them)")
        lines.append(f"- **{r.model}**: " + "; ".join(words) + ".")
    if lm_metrics is not None and (lm_metrics.cells < 24).any():
        short = lm_metrics[lm_metrics.cells < 24]
        lines.append("- Where a condition mean has no valid rating, the effects through it, and with them the "
                     "paper's CDS, DAS and ISS, are undefined: " + "; ".join(
                         f"{r.model} {r.prompt} has {int(r.cells)} of the 24 condition means"
                         for _, r in short.iterrows()) + ".")
    if lm_metrics is not None and repro is not None:
        pub = repro[repro.prompt.isin(set(lm_metrics.prompt))]
        for _, r in lm_metrics.iterrows():
            ref = pub[pub.prompt == r.prompt]
            if len(ref) and np.isfinite(r.spearman):
                lo, hi = ref.spearman.min(), ref.spearman.max()
                verdict = ("do not follow the humans' as the published LLMs' do" if r.spearman < lo else
                           "follow the humans' more closely than the published LLMs' do" if r.spearman > hi else
                           "follow the humans' about as the published LLMs' do")
                lines.append(f"- **{r.model} {r.prompt}**'s condition means {verdict}: "
                             f"Spearman {r.spearman:.2f} (the published LLMs: {lo:.2f} to "
                             f"{ref.spearman.max():.2f}), RMSE {r.rmse:.2f} rating points ({ref.rmse.min():.2f} to "
                             f"{ref.rmse.max():.2f}).")
    for _, r in (left if left is not None else pd.DataFrame()).iterrows():
        lines.append(f"- **{r.model} {r.prompt}** is left out of the measurement model: {r.left_out.rstrip('.')} "
                     "(too few valid answers for the effects' sampling covariance).")
    for _, r in (cds if cds is not None else pd.DataFrame()).iterrows():
        lines.append(f"- The measurement model puts **{r.model} {r.prompt}**'s CDS at {r.cds:.2f} [{r.cds_lo:.2f}, "
                     f"{r.cds_hi:.2f}] (0: effects as large as the humans'; 1: as far off as no effect at all)"
                     + (": its interval lies above 1, its effects are further from the humans' than no effect would be"
                        "." if r.cds_lo > 1 else
                        "."))
    lines += _flips(tables)
    lines += _fit_limits(params, lm_names)
    return lines + _verdicts(answers, lm_metrics, params, repro)


def _verdicts(answers: pd.DataFrame | None, lm_metrics: pd.DataFrame | None, params: pd.DataFrame | None,
              repro: pd.DataFrame | None) -> list[str]:
    """Per new LM x prompt, one sentence: whether its data can carry the paper's comparison with
    people, and which numbers say it cannot (parse failures of 30% or more, condition means below
    the published LLMs' Spearman, an unidentified alpha)."""
    if answers is None:
        return []
    h = params[params.fit == "human"].iloc[0] if params is not None and "human" in set(params.fit) else None
    lines = []
    for _, a in answers.iterrows():
        why = []
        if a.parse_failures >= 0.3:
            why.append(f"{a.parse_failures:.0%} of its answers fail the paper's rule")
        m = lm_metrics[(lm_metrics.model == a.model) & (lm_metrics.prompt == a.prompt)] if lm_metrics is not None \
            else pd.DataFrame()
        ref = repro[repro.prompt == a.prompt] if repro is not None else pd.DataFrame()
        if len(m) and len(ref) and np.isfinite(m.spearman.iloc[0]) and m.spearman.iloc[0] < ref.spearman.min():
            why.append(f"its condition means do not follow the humans' (Spearman {m.spearman.iloc[0]:.2f})")
        fit = params[params.fit == f"{a.model} {a.prompt}"] if params is not None else pd.DataFrame()
        if h is not None and len(fit):
            r = fit.iloc[0]
            if np.log(r.alpha_hi / r.alpha_lo) / alpha_prior_span() >= UNIDENTIFIED:
                why.append("the RSA fit does not identify its alpha")
            if r.noise > 2 * h.noise:
                why.append(f"its response noise is {r.noise / h.noise:.0f} times the humans'")
        lines.append(f"- **In short, {a.model} {a.prompt}**: " + (
            "it shows that the pipeline runs end to end for a new LM; it cannot show how its pragmatic sensitivity "
            "compares with people's: " + "; ".join(why) + "." if why else
            "its answers parse, its condition means follow the humans' as the published LLMs' do and the RSA fit "
            "identifies alpha: its data can carry the paper's comparison with people."))
    return lines


def _flips(tables: Path | None) -> list[str]:
    """A sentence per new LM x prompt with effects whose sign flips with posterior probability above 0.95."""
    if tables is None or not (tables / "esr_model_lms.csv").exists():
        return []
    esr = pd.read_csv(tables / "esr_model_lms.csv")
    lines = []
    for (m, p), g in esr.groupby(["model", "prompt"], sort=False):
        flip = g[g.p_sign_flip > 0.95]
        if len(flip):
            lines.append(f"- **{m} {p}** turns {len(flip)} of the {len(g)} human effects the other way (P(sign flip) "
                         "> 0.95): " + ", ".join(f"{r.kind} {r.attribute}" for _, r in flip.iterrows()) + ".")
    return lines
