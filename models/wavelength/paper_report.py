"""The report of :mod:`models.wavelength.paper`: the paper's listeners and speakers for each LM, fitted.

Reads only what the elicitation wrote under ``fits/wavelength/paper/<lm>/`` (no LM): the log-prob
scores (``<lm>.paper.nc``), the JSONL records of the sampled and chain-of-thought listeners and
speaker, ``speaker_cot_scores.csv`` and ``run.json``. Per LM it computes the paper's metrics for
each listener at the paper's fixed settings (L0; LM-RSA at alpha = beta = 1), fits by NUTS the
log-prob listeners (:func:`~models.wavelength.listeners.literal_model`,
:func:`~models.wavelength.listeners.lm_rsa_model`) and the sampled ones through the
sampled-semantics likelihood (:func:`~models.wavelength.listeners.sampled_literal_model`,
:func:`~models.wavelength.listeners.sampled_lm_rsa_model`: counts, not frequencies), compares
them by PSIS-LOO on the same guesses, judges the sampled speakers' clues, and writes
``tables/``, ``figures/`` and ``report.md`` in the output folder.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import scipy.stats

import pragmodels as pm
from models.wavelength import listeners, lm_scores, prompts, sampled
from pragmodels.datasets import load_wavelength
from pragmodels.inference.diagnostics import diagnose
from pragmodels.likelihoods.samples import frequencies

__all__ = ["build", "records", "listener_counts", "fixed_listeners", "production_table", "parse_table", "SAMPLER"]

#: NUTS settings of the fits (small data: a few items); chains start in their basins: the kernel width and
#: beta trade places in a second optimum, where a chain started at the prior's median could sit (r_hat 1.83)
SAMPLER = {"num_warmup": 400, "num_samples": 400, "num_chains": 2, "target_accept": 0.9, "init": "basins"}
SEED = 20261205
S = len(prompts.STATES)
STATE_VALUES = np.asarray(prompts.STATES, float)


def records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL progress file (none where it does not exist).

    Parameters
    ----------
    path : Path

    Returns
    -------
    list of dict
    """
    if not path.exists():
        return []
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    out = []
    for i, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i < len(lines) - 1:  # a torn line before the end: a corrupt file
                raise
            # a kill tore the last query's block (written whole, once asked): drop the part that is left,
            # as a resume asks that query again
            from pragmodels.lm.elicit import manifest_path

            n = json.loads(manifest_path(path).read_text())["settings"]["n_samples"]
            last = out[-1]["query_id"] if out else None
            if sum(r["query_id"] == last for r in out) < n:
                out = [r for r in out if r["query_id"] != last]
    return out


def listener_counts(folder: Path, ids: np.ndarray, n_utt: int) -> dict[str, np.ndarray]:
    """Binned guesses ``[item, utterance, state]`` of the sampled listener (real clue and
    alternatives together) and of the chain-of-thought listener (its alternatives where
    ``listener_cot_alt`` was asked).

    Parameters
    ----------
    folder : Path
        The LM's output folder.
    ids : numpy.ndarray
        Item ids, in the order of the first axis.
    n_utt : int
        Width of the utterance axis.

    Returns
    -------
    dict
        ``sample``, ``cot``.
    """
    rec = records(folder / "listener_sample.jsonl") + records(folder / "listener_sample_alt.jsonl")
    cot = records(folder / "listener_cot.jsonl") + records(folder / "listener_cot_alt.jsonl")
    return {"sample": sampled.counts(rec, ids, n_utt), "cot": sampled.counts(cot, ids, n_utt)}


def _freq(c: np.ndarray) -> np.ndarray:
    n = c.sum(-1, keepdims=True)
    return np.where(n > 0, c / np.maximum(n, 1), np.nan)


def fixed_listeners(log_lm: np.ndarray, utt_mask: np.ndarray, counts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The listeners at the paper's fixed settings, ``[item, state]`` (NaN rows where an item has no parsed guess).

    L0 log-prob: the 21 scores softmaxed; LM-RSA at alpha = beta = 1 on them; L0 sampled and
    chain-of-thought: the binned frequencies (the paper's distribution); LM-RSA on the sampled and the
    chain-of-thought L0 (:func:`rsa_on_counts`; the latter where an alternative has a guess).

    Parameters
    ----------
    log_lm, utt_mask : numpy.ndarray
        The log-prob scores ``[item, utterance, state]`` and their mask.
    counts : dict
        :func:`listener_counts`.

    Returns
    -------
    dict
    """
    d = {"log_lm": jnp.asarray(np.nan_to_num(log_lm)), "utt_mask": jnp.asarray(utt_mask)}
    out = {"L0 log-prob": np.exp(np.asarray(listeners.listener_for("literal", {"beta": 1.0}, d))),
           "LM-RSA log-prob, alpha = 1": np.exp(np.asarray(listeners.listener_for("lm_rsa", {"alpha": 1.0, "beta": 1.0}, d))),
           "L0 sampled": _freq(counts["sample"][:, 0]), "L0 chain-of-thought": _freq(counts["cot"][:, 0])}
    out["LM-RSA sampled, alpha = 1"] = rsa_on_counts(counts["sample"], utt_mask & (counts["sample"].sum(-1) > 0))
    cot = counts["cot"]
    m = utt_mask[:, :cot.shape[1]] & (cot.sum(-1) > 0)
    if m[:, 1:].any():
        out["LM-RSA chain-of-thought, alpha = 1"] = rsa_on_counts(cot, m)
    return out


def rsa_on_counts(c: np.ndarray, m: np.ndarray) -> np.ndarray:
    """LM-RSA at alpha = beta = 1 on sampled semantics: frequencies with 0.5 added per cell (a state never
    seen must keep a probability for S1), over the utterances of ``m`` (NaN rows where the real clue is out).

    Parameters
    ----------
    c : numpy.ndarray
        Counts ``[item, utterance, state]``.
    m : numpy.ndarray
        ``[item, utterance]``: the utterances with a parsed guess.

    Returns
    -------
    numpy.ndarray
        ``[item, state]``.
    """
    ok = m[:, 0]
    rsa = np.full((c.shape[0], S), np.nan)
    if ok.any():
        logf = np.asarray(frequencies(np.where(m[ok][..., None], c[ok], 1).reshape(-1, S), 0.5)).reshape(c[ok].shape)
        rsa[ok] = np.exp(np.asarray(listeners.listener_for("lm_rsa", {"alpha": 1.0, "beta": 1.0},
                                                           {"log_lm": jnp.asarray(logf), "utt_mask": jnp.asarray(m[ok])})))
    return rsa


def paper_metrics(probs: np.ndarray, items: pd.DataFrame) -> dict[str, Any]:
    from models.wavelength.study import listener_metrics

    ok = ~np.isnan(probs).any(-1)
    if ok.sum() < 2:
        return {"items": int(ok.sum())}
    return {"items": int(ok.sum()), **listener_metrics(probs[ok], items[ok].reset_index(drop=True))}


def sampled_listener_metrics(folder: Path, items: pd.DataFrame) -> pd.DataFrame:
    """The paper's four metrics of the sampled and chain-of-thought L0 from their binned guesses
    alone (no log-probabilities: the route of a samples-only LM), one row per listener.

    Parameters
    ----------
    folder : Path
        The LM's output folder (``listener_sample.jsonl``, ``listener_cot.jsonl``).
    items : pandas.DataFrame
        The items asked, in order.

    Returns
    -------
    pandas.DataFrame
        ``listener``, ``items`` (with a parsed guess) and the metrics (Pearson r NaN where the
        listener's means do not vary: a model that always answers the same).
    """
    ids = items["item"].to_numpy()
    c = {"L0 sampled": sampled.counts(records(folder / "listener_sample.jsonl"), ids, 1),
         "L0 chain-of-thought": sampled.counts(records(folder / "listener_cot.jsonl"), ids, 1)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.stats.ConstantInputWarning)
        return pd.DataFrame([{"listener": k, **paper_metrics(_freq(v[:, 0]), items)} for k, v in c.items()])


def parse_table(folder: Path, names: tuple[str, ...] = ("listener_sample", "listener_sample_alt", "listener_cot",
                                                        "listener_cot_alt", "speaker_cot")) -> pd.DataFrame:
    """Per sampled route: prompts, samples kept, requests (attempts), parse failures and their share.

    Parameters
    ----------
    folder : Path
    names : tuple of str
        The routes' JSONL files (without ``.jsonl``), those that exist read.

    Returns
    -------
    pandas.DataFrame
    """
    rows = []
    for name in names:
        rec = records(folder / f"{name}.jsonl")
        if not rec:
            continue
        att = sum(r["attempts"] for r in rec)
        ok = sum(r["valid"] for r in rec)
        rows.append({"route": name, "prompts": len({r["query_id"] for r in rec}), "samples": len(rec),
                     "parsed": ok, "requests": att, "parse_failures": att - ok,
                     "failure_share": (att - ok) / att,
                     "answer_tokens_est": round(sum(len(r["raw_response"]) for r in rec) / 4)})
    return pd.DataFrame(rows)


def production_table(ds: Any, clues: pd.DataFrame, cot_scores: pd.DataFrame | None, items: pd.DataFrame,
                     seed: int = SEED) -> pd.DataFrame:
    """The sampled speakers judged by the LM's log-prob L0 (per item): a clue *sampled* from the
    direct speaker S0 (the sample frequencies of the direct clues), one sampled from the
    Inverse-RSA speaker ``S1(u | t) ∝ S0(u | t) L0(t | u)`` (alpha = 1), and a chain-of-thought
    clue; each as its expected value over the speaker's distribution (``exp_*``) and as one seeded
    draw (``draw_*``), beside the argmax of S1 (a named variant, not the paper's procedure).

    Parameters
    ----------
    ds : xarray.Dataset
        The scores (production pass finished).
    clues : pandas.DataFrame
        ``<lm>.paper_clues.csv``.
    cot_scores : pandas.DataFrame or None
        ``speaker_cot_scores.csv``.
    items : pandas.DataFrame
        The items in ``ds`` order.
    seed : int

    Returns
    -------
    pandas.DataFrame
        ``item, speaker, p_target, abs_error`` (the judge's probability of the target and the error of its mean).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for k, it in enumerate(items.itertuples()):
        t = int(np.argmin(np.abs(STATE_VALUES - it.target)))
        cnt = ds["prod_count"].to_numpy()[k].astype(float)
        keep = cnt > 0
        if not keep.any():
            continue
        l0 = np.exp(np.asarray(jax.nn.log_softmax(jnp.asarray(ds["prod_log_lm"].to_numpy()[k][keep]), -1)))
        err, pt = np.abs(l0 @ STATE_VALUES - it.target), l0[:, t]
        s0 = cnt[keep] / cnt[keep].sum()
        s1 = s0 * l0[:, t] / (s0 * l0[:, t]).sum()
        for name, dist in (("direct (S0)", s0), ("Inverse-RSA (S1, alpha = 1)", s1)):
            u = rng.choice(len(dist), p=dist)
            rows.append({"item": int(it.item), "speaker": name, "clues": int(keep.sum()),
                         "exp_p_target": float(dist @ pt), "exp_abs_error": float(dist @ err),
                         "draw_p_target": float(pt[u]), "draw_abs_error": float(err[u])})
        u = int(np.argmax(s1))
        rows.append({"item": int(it.item), "speaker": "Inverse-RSA argmax (variant)", "clues": int(keep.sum()),
                     "exp_p_target": float(pt[u]), "exp_abs_error": float(err[u]), "draw_p_target": float(pt[u]),
                     "draw_abs_error": float(err[u])})
        if cot_scores is not None and len(cot_scores):
            g = cot_scores[(cot_scores["item"] == it.item) & (cot_scores["clue"].astype(str) != "")]
            if len(g):
                lp = g[[f"s{s}" for s in prompts.STATES]].to_numpy(float)
                lc = np.exp(np.asarray(jax.nn.log_softmax(jnp.asarray(lp), -1)))
                e, p = np.abs(lc @ STATE_VALUES - it.target), lc[:, t]
                u = rng.integers(len(g))
                rows.append({"item": int(it.item), "speaker": "chain-of-thought", "clues": len(g),
                             "exp_p_target": float(p.mean()), "exp_abs_error": float(e.mean()),
                             "draw_p_target": float(p[u]), "draw_abs_error": float(e[u])})
    return pd.DataFrame(rows)


def _fit_specs(log_lm: np.ndarray, mask: np.ndarray, counts: dict[str, np.ndarray], trials: dict[str, np.ndarray]
               ) -> dict[str, tuple[Any, dict[str, Any]]]:
    """The fits, by name: model and data (the log-prob and the sampled listeners, on the same guesses)."""
    base = {"log_lm": np.nan_to_num(log_lm).astype(np.float32), "utt_mask": mask, **trials}
    out: dict[str, tuple[Any, dict[str, Any]]] = {
        "uniform": (listeners.uniform_model, base), "log-prob L0": (listeners.literal_model, base),
        "log-prob LM-RSA": (listeners.lm_rsa_model, base)}
    c = counts["sample"]
    if (c[:, 0].sum(-1) > 0).all():
        m = mask & (c.sum(-1) > 0)
        out["sampled L0"] = (listeners.sampled_literal_model, {"counts": c, **trials})
        out["sampled LM-RSA"] = (listeners.sampled_lm_rsa_model,
                                 {"counts": c, "utt_mask": m, "rows": listeners.sampled_rows(c, m), **trials})
    if (counts["cot"][:, 0].sum(-1) > 0).all():
        out["chain-of-thought L0"] = (listeners.sampled_literal_model, {"counts": counts["cot"], **trials})
        c = counts["cot"]
        m = mask[:, :c.shape[1]] & (c.sum(-1) > 0)
        if m[:, 1:].any():
            out["chain-of-thought LM-RSA"] = (listeners.sampled_lm_rsa_model,
                                              {"counts": c, "utt_mask": m, "rows": listeners.sampled_rows(c, m), **trials})
    return out


def sized_fits(named: dict[str, tuple[Any, dict[str, Any]]], seeds: dict[str, int] | None = None) -> dict[str, Any]:
    """Fits at :data:`SAMPLER`, each short of the sampling standards sampled again
    (:func:`pragmodels.top_up`: more draws, or smaller steps where it diverged), as every study's full
    run does.

    Parameters
    ----------
    named : dict
        ``{name: (model, data)}``.
    seeds : dict, optional
        ``{name: seed}`` (default ``SEED + k`` for the ``k``-th name).

    Returns
    -------
    dict
        ``{name: tree}``; a refitted tree records ``draws_resized`` (the kept attempt) and, where a refit
        missed more of the standards than the attempt before it, ``refits_not_kept`` (:func:`resized_rows`).
    """
    safe = {name.replace(" ", "_"): name for name in named}  # FitSpec names are file-safe ("log-prob_L0")
    seed = {name: SEED + k for k, name in enumerate(named)} | (seeds or {})
    specs = [pm.FitSpec(key, named[name][0], named[name][1], sampler=dict(SAMPLER), seed=seed[name])
             for key, name in safe.items()]
    result = pm.fit_many(specs, progress=False).raise_on_error()
    return {safe[o.name]: o.tree for o in pm.top_up(specs, result, progress=False)}


#: the parameter-table rows of :func:`resized_rows`
AGAIN = "sampled again: draws / target_accept / warm-up"
NOT_KEPT = "sampled again, not kept: draws / target_accept / warm-up"


def resized_rows(fit: str, tree: Any) -> list[dict[str, Any]]:
    """The parameter-table rows for a fit that :func:`sized_fits` sampled again (none otherwise): the kept
    attempt's draws per chain (``mean``), ``target_accept`` (``lo``) and warm-up iterations (``hi``), under
    :data:`AGAIN`; and the same for each refit that missed more of the standards than the attempt before it, so
    was not kept (``pragmodels.top_up``), under :data:`NOT_KEPT`. Without the second, a fit refitted in vain
    read as never refitted; without the warm-up, a refit that only lengthened it read as the first attempt."""
    rows = []
    if "draws_resized" in tree.attrs:
        r = json.loads(tree.attrs["draws_resized"])
        ta = r["target_accept"][1] if "target_accept" in r else SAMPLER.get("target_accept", np.nan)  # raised, or as set
        warmup = r["num_warmup"][1] if "num_warmup" in r else SAMPLER.get("num_warmup", np.nan)  # lengthened, or as set
        rows.append({"fit": fit, "parameter": AGAIN, "mean": float(r["to"]), "lo": float(ta), "hi": float(warmup)})
    rows += [{"fit": fit, "parameter": NOT_KEPT, "mean": float(a["draws"]), "lo": float(a["target_accept"]),
              "hi": float(a["num_warmup"])} for a in json.loads(tree.attrs.get("refits_not_kept", "[]"))]
    return rows


def posterior_listener(name: str, model: Any, tree: Any, data: dict[str, Any], n: int = 200) -> np.ndarray:
    post = tree["posterior"].to_dataset().stack(sample=("chain", "draw"))
    take = np.linspace(0, post.sizes["sample"] - 1, min(n, post.sizes["sample"])).astype(int)
    draws = {v: np.moveaxis(post[v].to_numpy(), -1, 0)[take] for v in ("alpha", "beta", "theta") if v in post}
    if model in (listeners.sampled_literal_model, listeners.sampled_lm_rsa_model):
        key = "sampled_literal" if model is listeners.sampled_literal_model else "sampled_lm_rsa"
        f = jax.vmap(lambda p: listeners.sampled_listener_for(key, p, data))
    else:
        key = {"uniform": "uniform", "log-prob L0": "literal", "log-prob LM-RSA": "lm_rsa"}[name]
        d = {k: jnp.asarray(v) for k, v in data.items() if k in ("log_lm", "utt_mask")}
        if not draws:
            return np.exp(np.asarray(listeners.listener_for(key, {}, d)))
        f = jax.vmap(lambda p: listeners.listener_for(key, p, d))
    return np.exp(np.asarray(f({k: jnp.asarray(v) for k, v in draws.items()}))).mean(0)


def _lm_section(folder: Path, tables: Path, figures: Path, long: pd.DataFrame, items_all: pd.DataFrame
                ) -> tuple[list[str], list[dict[str, Any]]]:
    lm = folder.name
    run = json.loads((folder / "run.json").read_text())
    path = folder / lm_scores.scores_file(lm, run["prompt_variant"])
    ds = lm_scores.load_scores(path, need=["listener"])
    ids = ds["item"].to_numpy()
    items = items_all.set_index("item").loc[ids].reset_index()
    mask = ds["utt_mask"].to_numpy()
    log_lm = ds["log_lm"].to_numpy()
    counts = listener_counts(folder, ids, mask.shape[1])
    rows = [{"lm": lm, "listener": "Humans", "items": len(ids), **_human(items)}]
    fixed = fixed_listeners(log_lm, mask, counts)
    for name, probs in fixed.items():
        rows.append({"lm": lm, "listener": f"{name} (fixed)", **paper_metrics(probs, items)})
    index = {int(i): k for k, i in enumerate(ids)}
    tr = long[long["item"].isin(ids)]
    trials = {"item": tr["item"].map(index).to_numpy(np.int32), "guess": tr["guess"].to_numpy(np.int32)}
    fits, params = {}, []
    named = _fit_specs(log_lm, mask, counts, trials)
    trees = sized_fits(named)
    for k, (name, (model, data)) in enumerate(named.items()):
        tree = trees[name]
        fits[name] = tree
        probs = posterior_listener(name, model, tree, data)
        rows.append({"lm": lm, "listener": f"{name} (fitted)", **paper_metrics(probs, items)})
        post = tree["posterior"].to_dataset()
        for v in ("alpha", "beta", "width", "lapse", "rounding"):
            if v in post:
                x = post[v].to_numpy().ravel()
                params.append({"lm": lm, "fit": name, "parameter": v, "mean": x.mean(), "lo": np.quantile(x, 0.03),
                               "hi": np.quantile(x, 0.97)})
        dg = diagnose(tree, emit=False)
        params.append({"lm": lm, "fit": name, "parameter": "max r_hat / divergences", "mean": dg.max_rhat,
                       "lo": float(dg.divergences), "hi": np.nan})
        params += [{"lm": lm, **row} for row in resized_rows(name, tree)]
        if model in (listeners.sampled_literal_model, listeners.sampled_lm_rsa_model):
            rows.append({"lm": lm, **_cut_row(name, model, data, trials, params, lm, items, SEED + k)})
    loo = pm.compare(fits).reset_index().rename(columns={"index": "fit"})
    loo.insert(0, "lm", lm)
    parse = parse_table(folder)
    parse.insert(0, "lm", lm)
    clues = pd.read_csv(path.with_name(path.name.removesuffix(".nc") + "_clues.csv"), keep_default_na=False)
    cot = folder / "speaker_cot_scores.csv"
    done_p = ds["done_production"].to_numpy().astype(bool)
    prod = production_table(ds.isel(item=np.nonzero(done_p)[0]), clues,
                            pd.read_csv(cot, keep_default_na=False) if cot.exists() else None, items[done_p])
    prod.insert(0, "lm", lm)
    for name, df in (("metrics", pd.DataFrame(rows)), ("loo", loo), ("parameters", pd.DataFrame(params)),
                     ("parse", parse), ("production", prod)):
        df.to_csv(tables / f"{name}_{lm}.csv", index=False)
    _figure(lm, items, fixed, figures)
    n_cot = int((pd.read_csv(cot, keep_default_na=False)["clue"].astype(str) != "").sum()) if cot.exists() else 0
    return _section(lm, run, ds, pd.DataFrame(rows), loo, pd.DataFrame(params), parse, prod, n_cot), rows


def _cut_row(name: str, model: Any, data: dict[str, Any], trials: dict[str, np.ndarray], params: list[dict[str, Any]],
             lm: str, items: pd.DataFrame, seed: int) -> dict[str, Any]:
    """The cut posterior of a sampled listener beside its joint fit (:func:`models.wavelength.sampled_report.cut_fit`):
    its metrics row; its parameters appended to ``params`` (fit ``<name> (cut)``)."""
    from models.wavelength import sampled_report

    c = data["counts"]
    if model is listeners.sampled_literal_model:
        cut, m = listeners.literal_model, np.zeros(c.shape[:2], bool)
        m[:, 0] = True
    else:
        cut, m = listeners.lm_rsa_model, np.asarray(data["utt_mask"], bool)
    pooled, probs, rhat = sampled_report.cut_fit(cut, c, m, trials, seed=seed)
    for v, x in pooled.items():
        params.append({"lm": lm, "fit": f"{name} (cut)", "parameter": v, "mean": x.mean(), "lo": np.quantile(x, 0.03),
                       "hi": np.quantile(x, 0.97)})
    params.append({"lm": lm, "fit": f"{name} (cut)", "parameter": "max r_hat / divergences", "mean": rhat,
                   "lo": np.nan, "hi": np.nan})
    return {"listener": f"{name} (fitted, cut)", **paper_metrics(probs, items)}


def _human(items: pd.DataFrame) -> dict[str, float]:
    from models.wavelength.study import human_metrics

    return human_metrics(items)


def _figure(lm: str, items: pd.DataFrame, fixed: dict[str, np.ndarray], figures: Path,
            keep: tuple[str, ...] = ("L0 log-prob", "L0 sampled", "L0 chain-of-thought", "LM-RSA log-prob, alpha = 1")
            ) -> None:
    import matplotlib.pyplot as plt

    from pragmodels.plots import distribution_grid

    panels = [{"title": f"item {int(r.item)}: '{r.clue}', target {int(r.target)}", "left": r.left, "right": r.right,
               "human": list(r.responses), "target": float(r.target),
               "series": {f"{lm} {k}": np.nan_to_num(fixed[k][i]) for k in keep if not np.isnan(fixed[k][i]).any()}}
              for i, r in enumerate(items.itertuples())]
    fig = distribution_grid(panels, prompts.STATES, ncols=min(4, len(panels)), xlabel="scale value (0-100)",
                            ylabel="probability")
    fig.savefig(figures / f"listeners_{lm}.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def markdown_table(df: pd.DataFrame) -> str:
    return df.to_markdown(index=False, floatfmt=".3g")


def _section(lm: str, run: dict[str, Any], ds: Any, metrics: pd.DataFrame, loo: pd.DataFrame,
             params: pd.DataFrame, parse: pd.DataFrame, prod: pd.DataFrame, n_cot_scored: int) -> list[str]:
    st = run["settings"]
    wall = sum(r["wall_s"] for r in run.get("runs", [run]))
    req = int(parse["requests"].sum()) if len(parse) else 0
    n_items = ds.sizes["item"]
    direct = n_items * (len(st["alt_states"]) + st["n_production"])
    scored = int(ds["utt_mask"].sum()) + int(ds["prod_mask"].sum()) + n_cot_scored
    ans_tok = int(parse["answer_tokens_est"].sum()) if len(parse) else 0
    est = {r["step"]: r for r in run["estimate"]}["total"]
    out = [f"## {lm} (`{run['lm_identity']}`)", "",
           f"- Items: {len(run['items'])} of 100, the first of the study's fixed random order (ids "
           f"{', '.join(map(str, run['items']))}); prompts `{run['prompt_variant']}` (version "
           f"`{run['prompt_version']}`).",
           f"- Settings (as run): alternatives sampled for targets "
           f"{st['alt_states']} (the paper: all 21); sampled listener {st['n_sample']} guesses for the real clue and "
           f"{st['n_sample_alt']} per alternative, up to {st['resample']} extra tries per guess that does not parse, "
           f"at most {st['sample_tokens']} tokens; chain-of-thought listener {st['n_cot']} guesses of at most "
           f"{st['cot_tokens']} tokens (the paper: 32, up to 2048), up to "
           f"{st['resample'] if st.get('resample_cot') is None else st['resample_cot']} extra tries each; production {st['n_production']} direct clues "
           f"(at most {st['speaker_tokens']} tokens) and {st['n_speaker_cot']} chain-of-thought clues per target; "
           f"direct answers begun with {st['answer_prefix']!r}" + (
               " (upstream: nothing; the one departure from the paper's procedure; chain-of-thought answers are "
               "never begun)" if st["answer_prefix"] else " (as upstream)") + "; temperature 1.",
           f"- Cost: {wall / 60:.1f} min wall over {len(run.get('runs', [run]))} run(s) of the command (a rerun "
           f"resumes; the elicitation, not the fits). Requests: {req} sampled answers "
           f"(attempts) in the routes below, {direct} sampled clues (alternatives and production), and {scored} "
           f"prompts scored with the 21 answers ({21 * scored} continuations). Tokens: at most "
           f"{int(est['prompt_tokens']):,} prompt tokens and {int(est['answer_tokens_max']):,} answer tokens "
           f"by the estimate printed before the run (characters / 4); the sampled routes' answers came to about "
           f"{ans_tok:,} tokens. Last run, per step (s): "
           + "; ".join(f"{k} {v['wall_s']:.0f}" for k, v in run["steps"].items()) + ".",
           f"- Alternatives: {int(ds['utt_mask'].sum()) - ds.sizes['item']} parsed over {ds.sizes['item']} items; "
           f"{int(ds['alt_failed'].sum())} of {ds.sizes['item'] * len(st['alt_states'])} samples did not parse.", "",
           "### Parse failures (each request is one sampled answer; a failure is resampled up to the cap)", "",
           markdown_table(parse.drop(columns="lm")) if len(parse) else "(no sampled route ran)", "",
           "### The paper's metrics per listener (mean over the items that have the listener)", "",
           "abs_error_of_mean: |E[listener] - target|; w1_to_humans: W1 to the 40 raw human guesses (humans: "
           "half against half); entropy in nats over the 21 states; pearson_r_means over items. `fixed`: the paper's "
           "settings (L0; LM-RSA at alpha = beta = 1); `fitted`: the posterior-mean listener of the NUTS fit below. "
           "With a handful of items, r is computed over that handful and is not an estimate of anything.", "",
           markdown_table(metrics.drop(columns="lm")), "",
           "### Fits (NUTS on the raw guesses of these items; sampled listeners through the sampled-semantics "
           "likelihood: the LM's distribution a Dirichlet(1 + counts) latent, sampled jointly with alpha)", "",
           markdown_table(loo.drop(columns="lm")[[c for c in ("fit", "rank", "elpd", "p", "elpd_diff", "dse", "weight")
                                        if c in loo.columns]]), "",
           markdown_table(params.drop(columns="lm")), ""]
    if len(prod):
        g = prod.groupby("speaker", sort=False)[["exp_p_target", "exp_abs_error", "draw_abs_error"]].mean()
        out += ["### Production: sampled clues judged by the LM's own log-prob L0", "",
                "Per item, a clue sampled from the direct speaker (its sample frequencies) against one sampled from "
                "the Inverse-RSA speaker S1(u | t) ∝ S0(u | t) L0(t | u) (alpha = 1), as the paper's Section 5.1; "
                "`exp_*` the expectation over the speaker's distribution, `draw_*` one seeded draw; the argmax of S1 "
                "is a named variant. The judge is the LM's own L0, so Inverse-RSA's gain there is built in; no "
                "person judged these clues. Mean over items:", "", g.reset_index().to_markdown(index=False,
                                                                                                 floatfmt=".3g"), ""]
    out += [f"![listeners {lm}](figures/listeners_{lm}.png)", "",
            f"Each panel: the 40 human guesses (bars), {lm}'s listeners at the paper's settings (lines; a listener "
            "with no parsed guess for the item is left out), the target (dashed).", ""]
    return out


def _sampled_sections(folders: list[Path], tables: Path, figures: Path, long: pd.DataFrame, items_all: pd.DataFrame,
                      only: str | None) -> list[str]:
    """The samples-only LMs' sections (:mod:`models.wavelength.sampled_report`), cached as the others'."""
    from models.wavelength import sampled_report

    text = []
    for folder in folders:
        cached = tables / f"section_{folder.name}.md"
        if only is not None and folder.name != only and cached.exists():
            text += cached.read_text().split("\n")
            continue
        section = sampled_report.section(folder, tables, figures, long, items_all)
        cached.write_text("\n".join(section))
        text += section
    return text


def _samples_only_notes(folders: list[Path], tables: Path) -> list[str]:
    """What the samples-only runs can and cannot show, from their tables."""
    out = ["## The samples-only runs: what they can and cannot show", ""]
    for f in folders:
        parse = pd.read_csv(tables / f"parse_{f.name}.csv")
        req, ok = int(parse["requests"].sum()), int(parse["parsed"].sum())
        cot = parse[parse["route"].str.startswith("listener_cot")]
        out.append(f"- {f.name}: {req} requests, {ok} parsed answers ({1 - ok / req:.0%} of requests failed to parse); "
                   f"chains of thought parsed: {int(cot['parsed'].sum())} of {int(cot['samples'].sum())}.")
    out += ["- They can show that every step of the paper runs on an LM that only samples, through a real server, "
            "and how often a model this small keeps the answer format; the `fixed` and `fitted, cut` rows are what "
            "its own samples say against the humans.",
            "- They cannot show whether such an LM is pragmatic: 4 items, 4 guesses per alternative and per produced "
            "clue, one alternative per target for 3 targets; LM-RSA on a literal listener this noisy and this far "
            "from the humans (compare the L0 rows' error with the humans') has nothing to sharpen, and a chain-of-"
            "thought listener that parses for too few items has no fit. Production's judge is the LM's own sampled "
            "L0 from 4 guesses per clue: it separates clues little, and it is circular for Inverse-RSA.",
            "- The `fitted, joint` rows are not the LM's: the human guesses move theta there (see above).", ""]
    return out


def build(out: Path, only: str | None = None) -> Path:
    """Fit and report every LM folder under ``out`` (one with a ``run.json``); writes ``out/report.md``.

    Parameters
    ----------
    out : Path
    only : str, optional
        Refit only this LM; the others' sections are read from their ``section_<lm>.md`` (written by
        an earlier build) where it exists.

    Returns
    -------
    Path
        The report.
    """
    tables, figures = out / "tables", out / "figures"
    tables.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    items_all, long = load_wavelength(), load_wavelength(long=True)
    text = ["# Wavelength: the paper's listeners and speakers for small LMs", "",
            "Qiu, Zhang, Tenenbaum, Kim & Levy (2025), On the Same Wavelength? Evaluating Pragmatic Reasoning in "
            "Language Models across Broad Concepts (EMNLP 2025, arXiv:2509.06952). The prompts are the paper's "
            "(upstream linlu-qiu/wavelength-eval @ 6dfed5c, read from the data mirror, not republished). Made by "
            "`python -m models.wavelength.paper` "
            "(docs/studies/wavelength.md, \"The paper's listeners and speakers\"); rebuilt without an LM by "
            "`python -m models.wavelength.paper --lm x --report-only`.", ""]
    folders = sorted(p for p in out.iterdir() if (p / "run.json").exists())
    samples_only = sorted(p for p in out.iterdir() if (p / "run_sampled.json").exists())
    names = ", ".join(f.name for f in folders)
    n_items = max((len(json.loads((f / "run.json").read_text())["items"]) for f in folders), default=0)
    for folder in folders:
        cached = tables / f"section_{folder.name}.md"
        if only is not None and folder.name != only and cached.exists():
            text += cached.read_text().split("\n")
            continue
        section, _ = _lm_section(folder, tables, figures, long, items_all)
        cached.write_text("\n".join(section))
        text += section
    text += _sampled_sections(samples_only, tables, figures, long, items_all, only)
    text += ["## Convergence", "",
             "Each fit's `max r_hat / divergences` row: a fit with r_hat above 1.01 or with divergences has not "
             f"converged (with {n_items} items the kernel width and beta can trade off in two modes), and its "
             "numbers are "
             "not to be relied on. A fit short of the sampling standards at the settings above was sampled again "
             "(`pragmodels.top_up`: more draws per chain, or a higher `target_accept` where it diverged; its "
             "`sampled again: draws / target_accept / warm-up` row gives the kept attempt's, and a `sampled again, not "
             "kept` row each refit that missed more of the standards than the attempt before it), as in every "
             "study's full run; "
             "the cut posterior's per-draw fits were not.", "",
             "## What these runs can and cannot show", "",
             "- Whether each LM keeps the paper's answer format at all: the parse-failure shares above are a finding "
             f"for these models ({names}), and where a route parses almost nothing it has no "
             "listener to fit.",
             "- The machinery end to end on real answers: elicitation, resampling, binning, the sampled-semantics "
             "fits beside the scored listener, production by sampling.",
             "- Not what the sampled listeners' joint fits seem to show. In the joint fit the 40 human guesses per "
             "item inform the latent distribution theta as much as the LM's parsed samples do, and beta sharpens "
             "it: the jointly fitted sampled listeners land near the humans (compare their `fitted` rows with the "
             "`fixed` ones, the LM's own frequencies), and their LOO lead over the log-prob listeners is that "
             "feedback, not better LM semantics. What the LM's samples support is the `fitted, cut` rows: theta "
             "drawn from the LM's samples alone (Dirichlet(1 + counts)), the model fitted to the humans once per "
             "draw, the draws pooled (`sampled_report.cut_fit`); this report reads those as the LM's.",
             f"- Whether LMs reason pragmatically only as far as {n_items} of the 100 items, the samples and the "
             "token caps above allow (the paper finds pragmatic gains only in large models); with a handful of items "
             f"the intervals are wide, the LOO differences rest on few guesses, and Pearson r over {n_items} items "
             "estimates little.", ""]
    if samples_only:
        text += _samples_only_notes(samples_only, tables)
    path = out / "report.md"
    path.write_text("\n".join(text))
    return path
