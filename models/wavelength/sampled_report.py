"""The report of a samples-only LM's route (:func:`models.wavelength.paper.sampled_route`), built without the LM.

Reads the JSONL records under ``fits/wavelength/paper/<lm>/`` (``run_sampled.json``). Per listener
(sampled and chain-of-thought L0, each with LM-RSA on top) the paper's metrics at the paper's fixed
settings (frequencies; LM-RSA at alpha = beta = 1) and fitted to the human guesses two ways:
``joint`` (the LM's distribution a Dirichlet(1 + counts) latent sampled with alpha, so the humans'
guesses inform it too: :func:`~models.wavelength.listeners.sampled_lm_rsa_model`) and ``cut`` (the
semantics from the LM's samples alone: one fit of the log-prob model per draw of theta from
Dirichlet(1 + counts), :func:`pragmodels.fit_batched`, the draws pooled: :func:`cut_fit`); then
production, a clue sampled from the direct speaker against one sampled from the Inverse-RSA speaker,
judged by the LM's sampled L0 (:func:`production_table`).
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

from models.wavelength import listeners, sampled
from models.wavelength.paper_report import SEED, STATE_VALUES, S, paper_metrics, records, rsa_on_counts
from pragmodels.likelihoods.samples import dirichlet_draws

__all__ = ["CUT", "utterances", "counts", "fixed_listeners", "cut_fit", "production_table", "section"]

#: the cut posterior's settings: Dirichlet draws of theta (one fit each) and NUTS per draw
CUT = {"draws": 8, "num_warmup": 300, "num_samples": 150, "num_chains": 2, "target_accept": 0.9}
#: added per cell to a sampled listener's counts where S1 needs a probability for every state
SMOOTHING = 0.5


def utterances(folder: Path, items: pd.DataFrame) -> dict[int, list[str]]:
    """Each item's utterances as the route asked them: the real clue, then its distinct sampled alternatives.

    Parameters
    ----------
    folder : Path
    items : pandas.DataFrame

    Returns
    -------
    dict
    """
    return sampled.alternatives_from(items, records(folder / "speaker_alt.jsonl"))


def counts(folder: Path, items: pd.DataFrame) -> dict[str, np.ndarray]:
    """Binned guesses ``[item, utterance, state]`` of the sampled and chain-of-thought listeners (real
    clue and alternatives together; utterance 0 the real clue).

    Parameters
    ----------
    folder : Path
    items : pandas.DataFrame

    Returns
    -------
    dict
        ``sample``, ``cot``.
    """
    ids, n_utt = items["item"].to_numpy(), max(len(u) for u in utterances(folder, items).values())
    return {k: sampled.counts(records(folder / f"{f}.jsonl") + records(folder / f"{f}_alt.jsonl"), ids, n_utt)
            for k, f in (("sample", "listener_sample"), ("cot", "listener_cot"))}


def _mask(folder: Path, items: pd.DataFrame, c: np.ndarray) -> np.ndarray:
    utts = utterances(folder, items)
    n = np.array([len(utts[int(i)]) for i in items["item"]])
    return (np.arange(c.shape[1])[None] < n[:, None]) & (c.sum(-1) > 0)


def fixed_listeners(c: dict[str, np.ndarray], masks: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The listeners at the paper's fixed settings, ``[item, state]`` (NaN rows where an item has no guess):
    L0 the binned frequencies; LM-RSA at alpha = beta = 1 on the frequencies with 0.5 added per cell.

    Parameters
    ----------
    c, masks : dict
        :func:`counts` and the utterances with a parsed guess, by listener.

    Returns
    -------
    dict
    """
    out = {}
    for k, name in (("sample", "sampled"), ("cot", "chain-of-thought")):
        n = c[k][:, 0].sum(-1, keepdims=True)
        out[f"L0 {name}"] = np.where(n > 0, c[k][:, 0] / np.maximum(n, 1), np.nan)
        out[f"LM-RSA {name}, alpha = 1"] = rsa_on_counts(c[k], masks[k])
    return out


def cut_fit(model: Any, c: np.ndarray, mask: np.ndarray, trials: dict[str, np.ndarray], *, seed: int = SEED,
            draws: int | None = None) -> tuple[dict[str, np.ndarray], np.ndarray, float]:
    """The cut posterior of a listener on sampled semantics: theta drawn from Dirichlet(1 + counts) (the
    LM's samples alone, not the human guesses), the log-prob model fitted once per draw (one compiled
    program, each fit's chains started in its basins: the kernel width and beta trade places in a second
    optimum, where a chain started at the prior's median sat, r_hat 1.84), the draws pooled.

    Parameters
    ----------
    model : {listeners.literal_model, listeners.lm_rsa_model}
    c : numpy.ndarray
        Counts ``[item, utterance, state]``.
    mask : numpy.ndarray
        ``[item, utterance]``: the utterances with a parsed guess (the real clue's required).
    trials : dict
        ``item``, ``guess``.
    seed : int
    draws : int, optional
        Dirichlet draws (default :data:`CUT`).

    Returns
    -------
    tuple
        The pooled parameter draws ``{name: [draw]}``, the pooled posterior-mean listener ``[item,
        state]`` and the largest r_hat over the fits.
    """
    from pragmodels import fit
    from pragmodels.inference.diagnostics import diagnose

    k = CUT["draws"] if draws is None else draws
    rows = np.flatnonzero(mask.ravel())
    logt = dirichlet_draws(seed, c.reshape(-1, S)[rows], k)  # [k, row, state]
    log_lm = np.zeros((k, c.shape[0] * c.shape[1], S), np.float32)
    log_lm[:, rows] = logt
    log_lm = log_lm.reshape(k, *c.shape)
    data = [{"log_lm": log_lm[j], "utt_mask": mask, **trials} for j in range(k)]
    settings = {x: v for x, v in CUT.items() if x != "draws"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trees = [fit(seed + j, model, data[j], posterior_predictive=False, init="basins", progress_bar=False, **settings)
                 for j in range(k)]
    key = "literal" if model is listeners.literal_model else "lm_rsa"
    pooled: dict[str, list[np.ndarray]] = {}
    probs, rhat = [], 1.0
    for j, tree in enumerate(trees):
        post = tree["posterior"].to_dataset()
        for v in ("alpha", "beta", "width", "lapse", "rounding"):
            if v in post:
                pooled.setdefault(v, []).append(post[v].to_numpy().ravel())
        d = {"log_lm": jnp.asarray(log_lm[j]), "utt_mask": jnp.asarray(mask)}
        ps = {v: jnp.asarray(post[v].to_numpy().ravel()[::4]) for v in ("alpha", "beta") if v in post}
        probs.append(np.exp(np.asarray(jax.vmap(lambda p, d=d: listeners.listener_for(key, p, d))(ps))).mean(0))
        rhat = max(rhat, float(diagnose(tree, emit=False).max_rhat))
    return {v: np.concatenate(x) for v, x in pooled.items()}, np.mean(probs, 0), rhat


def _clue_l0(folder: Path, items: pd.DataFrame) -> tuple[dict[int, list[tuple[str, int]]], np.ndarray]:
    """The produced clues (direct, then chain-of-thought) and their sampled-listener counts ``[item, clue, state]``."""
    direct, cot = records(folder / "speaker.jsonl"), records(folder / "speaker_cot.jsonl")
    produced = sampled.produced_clues([*direct, *cot])
    width = max([len(v) for v in produced.values()] + [1])
    return produced, sampled.counts(records(folder / "listener_sample_prod.jsonl"), items["item"].to_numpy(), width)


def production_table(folder: Path, items: pd.DataFrame, seed: int = SEED) -> pd.DataFrame:
    """Production as the paper's Section 5.1, for a samples-only LM: per item, a clue *sampled* from the
    direct speaker S0 (the direct clues' sample frequencies) against one *sampled* from the Inverse-RSA
    speaker ``S1(u | t) ∝ S0(u | t) L0(t | u)`` (alpha = 1), and a chain-of-thought clue, each judged
    as the scored route judges them, by the LM's own literal listener, here its sampled L0 (frequencies
    of its guesses for that clue, 0.5 added per cell); ``exp_*`` the expectation over the speaker,
    ``draw_*`` one seeded draw; the argmax of S1 is a named variant, not the paper's procedure.

    Parameters
    ----------
    folder : Path
    items : pandas.DataFrame
    seed : int

    Returns
    -------
    pandas.DataFrame
        ``item, speaker, clues, exp_p_target, exp_abs_error, draw_p_target, draw_abs_error``.
    """
    from models.wavelength.lm_scores import normalise_clue

    rng = np.random.default_rng(seed)
    produced, c = _clue_l0(folder, items)
    direct = sampled.produced_clues(records(folder / "speaker.jsonl"))
    cot = sampled.produced_clues(records(folder / "speaker_cot.jsonl"))
    rows = []
    for k, it in enumerate(items.itertuples()):
        clues = produced.get(int(it.item), [])
        n = c[k, :len(clues)].sum(-1)
        l0 = (c[k, :len(clues)] + SMOOTHING) / (n[:, None] + SMOOTHING * S)
        t = int(np.argmin(np.abs(STATE_VALUES - it.target)))
        err, pt = np.abs(l0 @ STATE_VALUES - it.target), l0[:, t]
        index = {normalise_clue(cl): j for j, (cl, _) in enumerate(clues)}
        d = [(index[normalise_clue(cl)], m) for cl, m in direct.get(int(it.item), []) if n[index[normalise_clue(cl)]]]
        if d:
            u, cnt = np.array([j for j, _ in d]), np.array([m for _, m in d], float)
            s0 = cnt / cnt.sum()
            s1 = s0 * pt[u] / (s0 * pt[u]).sum()
            for name, dist in (("direct (S0)", s0), ("Inverse-RSA (S1, alpha = 1)", s1),
                               ("Inverse-RSA argmax (variant)", np.eye(len(u))[int(np.argmax(s1))])):
                j = u[rng.choice(len(dist), p=dist)]
                rows.append({"item": int(it.item), "speaker": name, "clues": len(u), "exp_p_target": float(dist @ pt[u]),
                             "exp_abs_error": float(dist @ err[u]), "draw_p_target": float(pt[j]),
                             "draw_abs_error": float(err[j])})
        cc = [index[normalise_clue(cl)] for cl, _ in cot.get(int(it.item), []) if n[index[normalise_clue(cl)]]]
        if cc:
            j = cc[rng.integers(len(cc))]
            rows.append({"item": int(it.item), "speaker": "chain-of-thought", "clues": len(cc),
                         "exp_p_target": float(pt[cc].mean()), "exp_abs_error": float(err[cc].mean()),
                         "draw_p_target": float(pt[j]), "draw_abs_error": float(err[j])})
    return pd.DataFrame(rows)


def _fits(c: dict[str, np.ndarray], masks: dict[str, np.ndarray], trials: dict[str, np.ndarray]
          ) -> tuple[dict[str, np.ndarray], list[dict[str, Any]], pd.DataFrame]:
    """Joint and cut fits of each listener that has a parsed guess for every item's real clue: the
    posterior-mean listeners, the parameters' rows and the joint fits' LOO comparison."""
    import pragmodels as pm
    from models.wavelength.paper_report import posterior_listener, resized_rows, sized_fits
    from pragmodels.inference.diagnostics import diagnose

    probs, params = {}, []
    n_item = c["sample"].shape[0]
    base = {"log_lm": np.zeros((n_item, 1, S), np.float32), **trials}
    named: dict[str, tuple[Any, dict[str, Any]]] = {"uniform": (listeners.uniform_model, base)}
    seeds, cuts = {"uniform": SEED}, {}
    for k, name in (("sample", "sampled"), ("cot", "chain-of-thought")):
        if not (c[k][:, 0].sum(-1) > 0).all():
            continue
        m = masks[k]
        specs = [(f"{name} L0", listeners.sampled_literal_model, listeners.literal_model, {"counts": c[k], **trials})]
        if m[:, 1:].any():
            specs.append((f"{name} LM-RSA", listeners.sampled_lm_rsa_model, listeners.lm_rsa_model,
                          {"counts": c[k], "utt_mask": m, "rows": listeners.sampled_rows(c[k], m), **trials}))
        for j, (label, joint, cut, data) in enumerate(specs):
            named[label], seeds[label], cuts[label] = (joint, data), SEED + j, (cut, k, m)
    trees = sized_fits(named, seeds)  # the joint fits, each sized to the sampling standards
    probs["uniform (fitted)"] = posterior_listener("uniform", listeners.uniform_model, trees["uniform"], base)
    for label, (cut, k, m) in cuts.items():
        joint, data = named[label]
        tree = trees[label]
        probs[f"{label} (fitted, joint)"] = posterior_listener(label, joint, tree, data)
        post = tree["posterior"].to_dataset()
        draws = {v: post[v].to_numpy().ravel() for v in ("alpha", "beta", "width", "lapse", "rounding") if v in post}
        dg = diagnose(tree, emit=False)
        _param_rows(params, label, "joint", draws, float(dg.max_rhat), float(dg.divergences))
        params += [{**row, "posterior": "joint"} for row in resized_rows(label, tree)]
        pooled, p, rhat = cut_fit(cut, c[k], m, trials, seed=seeds[label])
        probs[f"{label} (fitted, cut)"] = p
        _param_rows(params, label, "cut", pooled, rhat)
    loo = pm.compare(trees).reset_index().rename(columns={"index": "fit"})
    return probs, params, loo


def _param_rows(params: list[dict[str, Any]], fit: str, posterior: str, draws: dict[str, np.ndarray],
                rhat: float, divergences: float = np.nan) -> None:
    for v, x in draws.items():
        params.append({"fit": fit, "posterior": posterior, "parameter": v, "mean": float(x.mean()),
                       "lo": float(np.quantile(x, 0.03)), "hi": float(np.quantile(x, 0.97))})
    params.append({"fit": fit, "posterior": posterior, "parameter": "max r_hat / divergences", "mean": rhat,
                   "lo": divergences, "hi": np.nan})


def section(folder: Path, tables: Path, figures: Path, long: pd.DataFrame, items_all: pd.DataFrame) -> list[str]:
    """Fit and tabulate one samples-only LM (``tables/*_<lm>.csv``, ``figures/listeners_<lm>.png``); the
    report's section as lines.

    Parameters
    ----------
    folder : Path
        The LM's folder (``run_sampled.json`` and the JSONL records).
    tables, figures : Path
    long : pandas.DataFrame
        The human guesses, one row per guess (``item``, ``guess``).
    items_all : pandas.DataFrame

    Returns
    -------
    list of str
    """
    from models.wavelength import paper_report

    lm = folder.name
    run = json.loads((folder / "run_sampled.json").read_text())
    items = items_all.set_index("item").loc[run["items"]].reset_index()
    c = counts(folder, items)
    masks = {k: _mask(folder, items, v) for k, v in c.items()}
    index = {int(i): k for k, i in enumerate(items["item"])}
    tr = long[long["item"].isin(index)]
    trials = {"item": tr["item"].map(index).to_numpy(np.int32), "guess": tr["guess"].to_numpy(np.int32)}
    rows = [{"listener": "Humans", "items": len(items), **paper_report._human(items)}]
    fixed = fixed_listeners(c, masks)
    rows += [{"listener": f"{k} (fixed)", **paper_metrics(p, items)} for k, p in fixed.items()]
    probs, params, loo = _fits(c, masks, trials)
    rows += [{"listener": k, **paper_metrics(p, items)} for k, p in probs.items()]
    parse = paper_report.parse_table(folder, names=SAMPLED_FILES)
    prod = production_table(folder, items)
    metrics, params_df = pd.DataFrame(rows), pd.DataFrame(params)
    for name, df in (("metrics", metrics), ("loo", loo), ("parameters", params_df), ("parse", parse),
                     ("production", prod)):
        df.to_csv(tables / f"{name}_{lm}.csv", index=False)
    paper_report._figure(lm, items, fixed, figures, keep=("L0 sampled", "L0 chain-of-thought",
                                                          "LM-RSA sampled, alpha = 1"))
    return _lines(lm, run, items, metrics, loo, params_df, parse, prod, masks)


#: the route's JSONL files, in the order asked
SAMPLED_FILES = ("speaker_alt", "listener_sample", "listener_sample_alt", "listener_cot", "listener_cot_alt", "speaker",
                 "speaker_cot", "listener_sample_prod")


def _lines(lm: str, run: dict[str, Any], items: pd.DataFrame, metrics: pd.DataFrame, loo: pd.DataFrame,
           params: pd.DataFrame, parse: pd.DataFrame, prod: pd.DataFrame, masks: dict[str, np.ndarray]) -> list[str]:
    from models.wavelength.paper_report import markdown_table

    st = run["settings"]
    runs = run.get("runs", [run])
    wall = sum(r["wall_s"] for r in runs)
    est = {r["step"]: r for r in run["estimate"]}["total"]
    req = int(parse["requests"].sum()) if len(parse) else 0
    n_alt = {k: int(m[:, 1:].sum()) for k, m in masks.items()}
    out = [f"## {lm} (`{run['lm_identity']}`), samples only", "",
           f"- Route: semantics `samples` (nothing scored: every listener and speaker sampled, as for a hosted chat "
           f"model). Items: {len(run['items'])} of 100, the first of the fixed order (ids "
           f"{', '.join(map(str, run['items']))}); prompts `{run['prompt_variant']}` (version `{run['prompt_version']}`).",
           f"- Settings: one alternative clue sampled per target {st['alt_states']} (the paper: all 21); sampled "
           f"listener {st['n_sample']} guesses for the real clue and {st['n_sample_alt']} per alternative and per "
           f"produced clue; chain-of-thought listener {st['n_cot']} for the real clue and {st.get('n_cot_alt', 0)} per "
           f"alternative, at most {st['cot_tokens']} tokens; production {st['n_production']} direct and "
           f"{st['n_speaker_cot']} chain-of-thought clues per target; up to {st['resample']} extra tries per direct "
           f"guess that does not parse; direct answers begun with {st['answer_prefix']!r}; temperature 1.",
           f"- Cost: {req} requests (sampled answers, attempts included) in {wall / 60:.1f} min wall over {len(runs)} "
           f"run(s); at most {int(est['prompt_tokens']):,} prompt and {int(est['answer_tokens_max']):,} answer tokens "
           f"by the estimate printed first; the answers came to about {int(parse['answer_tokens_est'].sum()):,} tokens. "
           f"Alternatives with a parsed guess: {n_alt['sample']} (sampled listener), {n_alt['cot']} (chain of thought).",
           "", "### Parse failures", "", markdown_table(parse) if len(parse) else "(nothing asked)", "",
           "### The paper's metrics per listener", "",
           "`fixed`: the paper's settings (frequencies; LM-RSA at alpha = beta = 1 on frequencies with 0.5 per cell). "
           "`fitted, joint`: the sampled-semantics likelihood, theta sampled with alpha, so the 40 human guesses per "
           "item move theta too (feedback). `fitted, cut`: theta from the LM's samples alone (one fit per Dirichlet "
           f"draw, {CUT['draws']} draws pooled), alpha and the response parameters fitted to the humans given it: "
           "what the LM's own semantics support, the rows this report reads as the LM's.", "",
           markdown_table(metrics), "",
           "### Parameters (joint and cut) and the joint fits' LOO", "", markdown_table(params), "",
           markdown_table(loo[[x for x in ("fit", "rank", "elpd", "p", "elpd_diff", "dse", "weight") if x in loo.columns]]), ""]
    if len(prod):
        g = prod.groupby("speaker", sort=False)[["exp_p_target", "exp_abs_error", "draw_abs_error"]].mean()
        out += ["### Production: sampled clues judged by the LM's sampled L0", "",
                "A clue sampled from the direct speaker against one sampled from the Inverse-RSA speaker (alpha = 1, "
                "S0 the direct clues' frequencies, L0 the LM's sampled listener of each produced clue); the judge is "
                "that same sampled L0 (circular for Inverse-RSA, as in the scored route); the argmax is a named "
                "variant. Mean over items:", "", markdown_table(g.reset_index()), ""]
    out += [f"![listeners {lm}](figures/listeners_{lm}.png)", ""]
    return out
