"""Study 3: DRInQ conversational implicature (Arai & Ren 2026): an LM on the benchmark, and a pragmatic listener.

Entry point ``"study": "models/implicature/study.py:run"`` (``fits/implicature.json``; schema
:class:`~models.implicature.config.Config`), run by ``pragmodels run fits/implicature.json``. The LM outputs are data, made
beforehand by ``python -m models.implicature.score`` and committed in
``fits/implicature/lm_outputs/``; this study never calls a language model. Per LM it scores the
benchmark under each prompting condition (:func:`accuracy_tables`, :func:`interpretation_table`),
fits the four listener models to the consensus letters (:func:`model_data`,
:func:`predictive_accuracy`), reads the generated answers (the paper's reading,
:mod:`models.implicature.generate`; :func:`generated_accuracy`) where an LM has them, checks
every ``lms`` entry against the LM its tables record first (:func:`check_identities`), and writes tables, a figure (:func:`figure_table`) and
:func:`report_markdown`. The steps: ``docs/studies/implicature.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

import pragmodels as pm
from models.implicature import generate, listeners, lm_outputs, prompts
from models.implicature.config import Config
from pragmodels.datasets import load_drinq
from pragmodels.evaluation.model_comparison import loo_sentence
from pragmodels.metrics.accuracy import accuracy_summary, mcnemar, paired_bootstrap
from pragmodels.runs.folder import Run
from pragmodels.runs.schema import validate_config
from pragmodels.runs.study import StudyFolder

#: the repository root (the committed LM outputs and relative paths in the config are under it)
ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ROOT / "fits" / "implicature" / "lm_outputs"
#: the paper's numbers quoted in the report (its Section 3.7 and Table 2)
PAPER = {"validated": 819, "hard": 400, "human_average_hard": 0.89, "best_model_hard": 0.76, "sota_cluster": 0.60}


def _correct_matrix(df: pd.DataFrame, col: str, gold: pd.Series, ids: list[str]) -> np.ndarray:
    """``[draw, item]`` bool for the items ``ids``: the row's ``col`` equals the gold letter (an empty
    letter, i.e. a malformed answer, is wrong)."""
    wide = df.pivot(index="draw", columns="item_id", values=col).reindex(columns=ids)
    if wide.isna().any().any():
        raise ValueError(f"a draw is missing for some item in column {col!r}; every draw must cover the same items.")
    return wide.to_numpy() == gold.loc[ids].to_numpy()[None, :]


def accuracy_tables(lm_name: str, scores: pd.DataFrame, samples: pd.DataFrame | None, items: pd.DataFrame,
                    *, n_boot: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Accuracy per (reading, condition, label) and each condition against vanilla (paired).

    Parameters
    ----------
    lm_name : str
        The LM's label.
    scores, samples : pandas.DataFrame
        The score and sample passes (:func:`models.implicature.lm_outputs.load_outputs`); ``samples`` may be None.
    items : pandas.DataFrame
        ``load_drinq()`` with an ``item_id`` column.
    n_boot : int
        Bootstrap resamples.
    seed : int
        Seed of the resampling.

    Returns
    -------
    accuracy : pandas.DataFrame
        ``lm, reading, condition, label, n_item, n_run, mean, sd, lo, hi`` (+ for samples
        ``malformed``, ``json_invalid``; for scores ``letter_mass``, ``p_consensus``).
    paired : pandas.DataFrame
        ``lm, reading, condition, vs, n_item, diff, lo, hi, p_bootstrap, mcnemar_p`` (one McNemar
        p-value per draw, as a list).
    """
    by_id = items.set_index("item_id")
    acc_rows, pair_rows = [], []
    for reading, df, col in (("scored letters", scores, "choice"), ("sampled JSON", samples, "letter")):
        if df is None or df.empty:
            continue
        mats: dict[str, tuple[list[str], np.ndarray]] = {}
        for cond in [c for c in prompts.CONDITIONS if c in set(df["condition"])]:
            sub = df[df["condition"] == cond]
            ids = sorted(set(sub["item_id"]))
            unknown = sorted(set(ids) - set(by_id.index))
            if unknown:
                raise ValueError(f"{lm_name} {reading} {cond}: item id {unknown[0]!r} is not a DRInQ item.")
            for label, gold_col in (("consensus", "consensus"), ("generated label", "implied_letter")):
                gold = by_id[gold_col].fillna("")
                correct = _correct_matrix(sub, col, gold, ids)
                s = accuracy_summary(correct, n_boot=n_boot, seed=seed)
                row: dict[str, Any] = {"lm": lm_name, "reading": reading, "condition": cond, "label": label,
                                       "n_item": s.n_item, "n_run": s.n_run, "mean": s.mean, "sd": s.sd, "lo": s.lo,
                                       "hi": s.hi}
                if reading == "sampled JSON":
                    row["malformed"] = int((sub["letter"] == "").sum())
                    row["json_invalid"] = int((~sub["json_ok"].astype(str).isin(["True", "true", "1"])).sum())
                else:
                    lp = sub[[f"logp_{L}" for L in prompts.LETTERS]].to_numpy(float)
                    norm = lp - np.logaddexp.reduce(lp, axis=1, keepdims=True)
                    g = sub["item_id"].map(gold).to_numpy()
                    k = np.array([prompts.LETTERS.index(x) if x in prompts.LETTERS else -1 for x in g])
                    pc = np.where(k >= 0, np.exp(norm[np.arange(len(k)), np.maximum(k, 0)]), 0.0)
                    # after a justification, the scores include its own probability (shared by the five
                    # continuations), so their sum is no longer the mass on the letters: not reported
                    row["letter_mass"] = (float("nan") if cond == "explanation"
                                          else float(np.exp(np.logaddexp.reduce(lp, axis=1)).mean()))
                    row["p_consensus"] = float(pc.mean())
                    counts = sub["choice"].value_counts()
                    row["top_letter"] = str(counts.index[0])
                    row["top_letter_share"] = float(counts.iloc[0] / len(sub))
                acc_rows.append(row)
                if label == "consensus":
                    mats[cond] = (ids, correct)
        if "vanilla" in mats:
            ids_v, m_v = mats["vanilla"]
            for cond, (ids_c, m_c) in mats.items():
                if cond == "vanilla":
                    continue
                common = [i for i in ids_c if i in set(ids_v)]
                a = m_c[:, [ids_c.index(i) for i in common]]
                b = m_v[:, [ids_v.index(i) for i in common]]
                d = paired_bootstrap(a, b, n_boot=n_boot, seed=seed)
                mc = [mcnemar(a[r], b[r])[2] for r in range(min(a.shape[0], b.shape[0]))]
                pair_rows.append({"lm": lm_name, "reading": reading, "condition": cond, "vs": "vanilla",
                                  "n_item": len(common), "diff": d.diff, "lo": d.lo, "hi": d.hi,
                                  "p_bootstrap": d.p, "mcnemar_p": json.dumps([round(p, 4) for p in mc])})
    return pd.DataFrame(acc_rows), pd.DataFrame(pair_rows)


def interpretation_table(lm_name: str, interp: pd.DataFrame, items: pd.DataFrame, *, n_boot: int,
                         seed: int, literal: pd.DataFrame | None = None) -> pd.DataFrame:
    """What the listener model's LM scores pick on their own: the most probable option under
    ``fit`` (Q in C, what they mean), ``literal`` (Q in C read literally, where given) and ``prior``
    (C alone), and the control ``lexical overlap`` (the option sharing most words with the context,
    :func:`lexical_overlap`; ties broken at random, seeded), on the same items as ``prior``; against
    the consensus and the generated label.

    Parameters
    ----------
    lm_name : str
        The LM.
    interp : pandas.DataFrame
        The interpretations pass.
    items : pandas.DataFrame
        ``load_drinq()`` with ``item_id``.
    n_boot : int
        Bootstrap resamples.
    seed : int
        Seed.
    literal : pandas.DataFrame, optional
        The literal pass.

    Returns
    -------
    pandas.DataFrame
        ``lm, scores, label, n_item, mean, lo, hi``.
    """
    by_id = items.set_index("item_id")
    rows = []
    cols = [f"logp_{L}" for L in prompts.LETTERS]
    prior_ids = interp.loc[interp["kind"] == "prior", "item_id"].tolist()
    jac = lexical_overlap(by_id.loc[prior_ids])
    jac = jac + np.random.default_rng(seed).uniform(0.0, 1e-9, jac.shape)  # ties at random
    tables = {"fit": interp[interp["kind"] == "fit"], "literal": None if literal is None else literal,
              "prior": interp[interp["kind"] == "prior"],
              "lexical overlap": pd.DataFrame(jac, columns=cols).assign(item_id=prior_ids)}
    for kind, sub in tables.items():
        if sub is None:
            continue
        pick = np.array(prompts.LETTERS)[sub[cols].to_numpy(float).argmax(1)]
        hits = {}
        for label, col in (("consensus", "consensus"), ("generated label", "implied_letter")):
            gold = by_id.loc[sub["item_id"], col].fillna("").to_numpy()
            hits[label] = pick == gold
            sm = accuracy_summary(hits[label], n_boot=n_boot, seed=seed)
            rows.append({"lm": lm_name, "scores": kind, "label": label, "n_item": sm.n_item, "mean": sm.mean,
                         "lo": sm.lo, "hi": sm.hi})
        d = paired_bootstrap(hits["generated label"], hits["consensus"], n_boot=n_boot, seed=seed)
        rows.append({"lm": lm_name, "scores": kind, "label": "generated minus consensus (paired)",
                     "n_item": len(sub), "mean": d.diff, "lo": d.lo, "hi": d.hi})
    return pd.DataFrame(rows)


def model_data(items: pd.DataFrame, interp: pd.DataFrame, scores: pd.DataFrame,
               literal: pd.DataFrame | None = None) -> tuple[dict[str, np.ndarray], list[str]]:
    """The listener models' data for the items that have interpretation scores and vanilla letters
    (and literal scores, where ``literal`` is given).

    ``letter`` is the vanilla condition's letter log-probabilities, normalised over the five
    letters and averaged over the draws (the LM's direct choice as a distribution). ``fit`` is
    the LM-pragmatic reading ("what they mean"); ``literal`` the literal reading's scores.

    Parameters
    ----------
    items : pandas.DataFrame
        ``load_drinq()`` with ``item_id``.
    interp : pandas.DataFrame
        The interpretations pass.
    scores : pandas.DataFrame
        The score pass.
    literal : pandas.DataFrame, optional
        The literal pass.

    Returns
    -------
    data : dict
        ``fit, prior, letter [item, 5]`` float32 (and ``literal``), ``consensus [item]`` int32.
    ids : list of str
        The items, in the arrays' order.
    """
    cols = [f"logp_{L}" for L in prompts.LETTERS]
    fit = interp[interp["kind"] == "fit"].set_index("item_id")[cols]
    prior = interp[interp["kind"] == "prior"].set_index("item_id")[cols]
    van = scores[scores["condition"] == "vanilla"].copy()
    lp = van[cols].to_numpy(float)
    van[cols] = lp - np.logaddexp.reduce(lp, axis=1, keepdims=True)
    letter = van.groupby("item_id")[cols].mean()
    lit = None if literal is None else literal[literal["kind"] == "literal"].set_index("item_id")[cols]
    ids = [i for i in items["item_id"] if i in fit.index and i in prior.index and i in letter.index
           and (lit is None or i in lit.index)]
    if not ids:
        raise ValueError("no item has both interpretation scores and vanilla letter scores"
                         + (" and literal scores." if lit is not None else "."))
    cons = items.set_index("item_id").loc[ids, "consensus"].map(prompts.LETTERS.index).to_numpy(np.int32)
    data = {"fit": fit.loc[ids].to_numpy(np.float32), "prior": prior.loc[ids].to_numpy(np.float32),
            "letter": letter.loc[ids].to_numpy(np.float32), "consensus": cons}
    if lit is not None:
        data["literal"] = lit.loc[ids].to_numpy(np.float32)
    return data, ids


def model_variants(data: dict[str, np.ndarray]) -> dict[str, tuple[str, dict[str, np.ndarray], dict[str, Any] | None]]:
    """The fits of one LM: name -> (the model of :data:`~models.implicature.listeners.MODELS`, its data,
    prior overrides). With literal scores, L0 is the literal reading (``rsa``, ``literal``,
    ``rsa_cost``) and the "what they mean" scores are the named LM-pragmatic baseline
    (``rsa_lm_pragmatic``, ``literal_lm_pragmatic``); without, L0 is the latter. ``rsa_cost``
    fits the cost of saying an interpretation outright (:data:`~models.implicature.listeners.COST_PRIOR`).

    Parameters
    ----------
    data : dict
        :func:`model_data`'s arrays.

    Returns
    -------
    dict
    """
    base = {k: data[k] for k in ("fit", "prior", "letter", "consensus")}
    l0 = {**base, "fit": data["literal"]} if "literal" in data else base
    out: dict[str, tuple[str, dict[str, np.ndarray], dict[str, Any] | None]] = {
        name: (name, l0, None) for name in listeners.MODELS}
    out["rsa_cost"] = ("rsa", l0, {"cost": listeners.COST_PRIOR})
    if "literal" in data:
        out["rsa_lm_pragmatic"] = ("rsa", base, None)
        out["literal_lm_pragmatic"] = ("literal", base, None)
    return out


def lexical_overlap(items: pd.DataFrame) -> np.ndarray:
    """Token Jaccard similarity of each item's context with each option (lower-cased word tokens):
    a control for the context prior's lean, needing no LM.

    Parameters
    ----------
    items : pandas.DataFrame
        ``load_drinq()`` rows.

    Returns
    -------
    numpy.ndarray
        ``[item, 5]``.
    """
    import re

    def toks(t: object) -> set[str]:
        return set(re.findall(r"[a-z0-9']+", str(t).lower()))

    out = np.zeros((len(items), len(prompts.LETTERS)))
    for i, (_, r) in enumerate(items.iterrows()):
        c = toks(r["context"])
        for k, letter in enumerate(prompts.LETTERS):
            o = toks(r[f"option_{letter}"])
            out[i, k] = len(c & o) / max(len(c | o), 1)
    return out


def cost_profile(data: dict[str, np.ndarray], grid: np.ndarray | None = None, *, seed: int = 0) -> pd.DataFrame:
    """The profile log-likelihood of the cost: at each ``cost`` of ``grid``, the log-likelihood
    (:func:`~models.implicature.listeners.log_likelihood`, the selection included) maximised over
    ``alpha``, ``w`` and the lapse (L-BFGS from 4 starts).

    Parameters
    ----------
    data : dict
        ``fit, prior, letter, consensus`` (``fit``: the L0 scores).
    grid : numpy.ndarray, optional
        Costs (default -9 to 15 in steps of 1: the prior's 3 SD below 0, and above it far enough to see
        where the profile flattens, as it does for a speaker who almost always asks).
    seed : int
        Seed of the starts.

    Returns
    -------
    pandas.DataFrame
        ``cost, log_lik, below_max, alpha, w, lapse, s1_above_half`` (nats below the profile's
        maximum; the share of item options with ``S1(Q | a) > 1/2`` at the maximum).
    """
    from scipy.optimize import minimize

    grid = np.arange(-9.0, 15.5, 1.0) if grid is None else np.asarray(grid, float)
    d = {k: jax.numpy.asarray(v) for k, v in data.items()}

    def unpack(u: jax.Array, c: float) -> dict[str, Any]:
        return {"alpha": jax.numpy.exp(u[0]), "w": jax.numpy.exp(u[1]), "lapse": jax.nn.sigmoid(u[2]), "cost": c}

    nll = jax.jit(lambda u, c: -listeners.log_likelihood("rsa", unpack(u, c), d))
    grad = jax.jit(jax.grad(lambda u, c: -listeners.log_likelihood("rsa", unpack(u, c), d)))
    starts = np.random.default_rng(seed).normal(0.0, 1.0, (4, 3)) + np.array([0.0, 0.0, -2.0])
    rows = []
    for c in grid:
        best = min((minimize(lambda u, c=c: float(nll(u, c)), x0, jac=lambda u, c=c: np.asarray(grad(u, c), float),
                             method="L-BFGS-B") for x0 in starts), key=lambda r: r.fun)
        p = {k: float(v) for k, v in unpack(jax.numpy.asarray(best.x), float(c)).items()}
        l0 = np.asarray(listeners.literal_option_listener(d["fit"]))
        u = p["alpha"] * l0
        above = float((u > -c).mean())  # S1(Q | a) > 1/2  <=>  alpha log L0 > -c
        rows.append({"cost": float(c), "log_lik": -float(best.fun), "alpha": p["alpha"], "w": p["w"],
                     "lapse": p["lapse"], "s1_above_half": above})
    out = pd.DataFrame(rows)
    out.insert(2, "below_max", out["log_lik"].max() - out["log_lik"])
    return out


def predictive_accuracy(name: str, tree: xr.DataTree, data: dict[str, np.ndarray], n: int) -> dict[str, float]:
    """A fitted model as a listener: accuracy of its choice (the most probable option per item)
    the expected accuracy of one annotator drawn from it, and the share of items on which 5 annotators
    drawn from it would reach 4 of 5 (``sum_j P(E_j)``, mean over items), with 94% intervals over
    posterior draws.

    Parameters
    ----------
    name : str
        ``rsa``, ``literal``, ``prior`` or ``letter``.
    tree : xarray.DataTree
        The fit.
    data : dict
        :func:`model_data`'s arrays.
    n : int
        Posterior draws used.

    Returns
    -------
    dict
        ``argmax_*``, ``annotator_*`` and ``reach_consensus_*`` (``_mean``, ``_lo``, ``_hi``).
    """
    post = tree["posterior"].to_dataset().stack(sample=("chain", "draw"))
    take = np.linspace(0, post.sizes["sample"] - 1, min(n, post.sizes["sample"])).astype(int)
    names = [v for v in ("alpha", "w", "cost", "beta", "lapse") if v in post]
    draws = {v: post[v].to_numpy()[take] for v in names}
    f = jax.vmap(lambda p: listeners.listener_log_probs(name, p, data["fit"], data["prior"], data["letter"]))
    # (``data["fit"]``: the L0 scores the fit used, literal or LM-pragmatic: :func:`model_variants`)
    lp = np.asarray(f(draws))  # [draw, item, option]
    c = data["consensus"]
    argmax = (lp.argmax(-1) == c[None, :]).mean(1)
    annot = np.exp(lp[:, np.arange(len(c)), c]).mean(1)
    p = np.exp(lp)
    retained = (p ** listeners.THRESHOLD * (listeners.N_ANNOTATORS - (listeners.N_ANNOTATORS - 1) * p)).sum(-1).mean(1)  # sum_j P(E_j)
    q = lambda x: (float(x.mean()), float(np.quantile(x, 0.03)), float(np.quantile(x, 0.97)))  # noqa: E731
    (am, alo, ahi), (pm_, plo, phi), (rm, rlo, rhi) = q(argmax), q(annot), q(retained)
    return {"argmax_mean": am, "argmax_lo": alo, "argmax_hi": ahi, "annotator_mean": pm_, "annotator_lo": plo,
            "annotator_hi": phi, "reach_consensus_mean": rm, "reach_consensus_lo": rlo, "reach_consensus_hi": rhi}


#: the output tables an LM entry may have (``<lm>_<kind>.csv``), and which the fits need
TABLES = (*lm_outputs.PASSES, "generated")
FIT_TABLES = ("score", "interpretations")


def output_paths(lm_name: str, entry: Any) -> dict[str, Path]:
    """An LM entry's output tables that exist, by kind (:data:`TABLES`).

    Parameters
    ----------
    lm_name : str
        The entry's name.
    entry : LMEntry
        The entry (its ``outputs`` folder, default :data:`OUTPUTS`).

    Returns
    -------
    dict
    """
    outputs = Path(entry.outputs) if entry.outputs else OUTPUTS
    if not outputs.is_absolute():
        outputs = ROOT / outputs
    return {k: outputs / f"{lm_name}_{k}.csv" for k in TABLES if (outputs / f"{lm_name}_{k}.csv").is_file()}


def check_identities(lms: dict[str, Any]) -> dict[str, dict[str, Path]]:
    """Each ``lms`` entry is the LM its output tables record (their manifests' ``lm_identity``), checked
    before any fit; else one line naming the entry and the file.

    Parameters
    ----------
    lms : dict
        The config's entries (:class:`~pragmodels.lm.entry.LMEntry`), by name.

    Returns
    -------
    dict
        Each entry's tables (:func:`output_paths`).

    Raises
    ------
    FileNotFoundError
        An entry with no tables, or with scores but not the interpretations (or the reverse).
    ValueError
        A table made by another LM, or whose LM is not recorded.
    """
    found = {}
    for lm_name, entry in lms.items():
        paths = output_paths(lm_name, entry)
        if not paths:
            raise FileNotFoundError(f"`lms.{lm_name}`: no output tables {lm_name}_<pass>.csv under "
                                    f"{Path(entry.outputs) if entry.outputs else OUTPUTS}; make them with python -m "
                                    f"models.implicature.score --lm {lm_name} (or set its `outputs`).")
        half = [k for k in FIT_TABLES if (k in paths) != all(f in paths for f in FIT_TABLES)]
        if half:
            other = [k for k in FIT_TABLES if k not in paths][0]
            raise FileNotFoundError(f"`lms.{lm_name}`: {paths[half[0]]} has no {other} table beside it; the listener "
                                    f"fits need both (python -m models.implicature.score --lm {lm_name} --passes {other}).")
        for path in paths.values():
            recorded = lm_outputs.recorded_identity(path)
            why = entry.identity_mismatch(recorded) if recorded else "its manifest records no LM"
            if why:
                raise ValueError(f"`lms.{lm_name}`: {path} was made by {recorded or 'an unrecorded LM'}, but {why}; "
                                 "make it again or correct the entry.")
        found[lm_name] = paths
    return found


def generated_accuracy(lm_name: str, table: pd.DataFrame, items: pd.DataFrame, *, n_boot: int,
                       seed: int) -> pd.DataFrame:
    """Accuracy of the generated answers per condition (a truncated or malformed answer is wrong), and
    the answers' statuses.

    Parameters
    ----------
    lm_name : str
        The LM.
    table : pandas.DataFrame
        :func:`models.implicature.generate.load_generated`'s table.
    items : pandas.DataFrame
        ``load_drinq()`` with ``item_id``.
    n_boot : int
        Bootstrap resamples of the items.
    seed : int
        Seed.

    Returns
    -------
    pandas.DataFrame
        ``lm, condition, n_item, n_run, mean, sd, lo, hi, valid, truncated, malformed, valid_correct,
        answer_tokens_mean``.
    """
    gold = items.set_index("item_id")["consensus"]
    rows = []
    for cond in [c for c in prompts.CONDITIONS if c in set(table["condition"])]:
        sub = table[table["condition"] == cond]
        ids = sorted(set(sub["item_id"]))
        unknown = sorted(set(ids) - set(gold.index))
        if unknown:
            raise ValueError(f"{lm_name} generated {cond}: item id {unknown[0]!r} is not a DRInQ item.")
        correct = _correct_matrix(sub, "letter", gold, ids)
        s = accuracy_summary(correct, n_boot=n_boot, seed=seed)
        counts = sub["status"].value_counts()
        valid = sub[sub["status"] == "valid"]
        rows.append({"lm": lm_name, "condition": cond, "n_item": s.n_item, "n_run": s.n_run, "mean": s.mean,
                     "sd": s.sd, "lo": s.lo, "hi": s.hi, **{st: int(counts.get(st, 0)) for st in generate.STATUSES},
                     "valid_correct": int((valid["letter"].to_numpy() == gold.loc[valid["item_id"]].to_numpy()).sum()),
                     "answer_tokens_mean": float(pd.to_numeric(sub["answer_tokens"], errors="coerce").mean())})
    return pd.DataFrame(rows)


def cost_summary(draws: np.ndarray, profile: pd.DataFrame) -> dict[str, float]:
    """The fitted cost against its prior and its profile: posterior mean and 94% interval, the
    posterior SD over the prior's (near 1: the data say little), ``P(cost > 0)``, and the drop of the
    profile log-likelihood from its maximum to the grid's ends (under 1.92 nats on a side: that
    side is not bounded at 95% within the grid).

    Parameters
    ----------
    draws : numpy.ndarray
        Posterior draws of ``cost``.
    profile : pandas.DataFrame
        :func:`cost_profile`.

    Returns
    -------
    dict
    """
    prior_sd = float(listeners.COST_PRIOR.params["scale"])
    top = profile.loc[profile["log_lik"].idxmax()]
    return {"mean": float(draws.mean()), "lo": float(np.quantile(draws, 0.03)), "hi": float(np.quantile(draws, 0.97)),
            "sd_ratio": float(draws.std() / prior_sd), "p_positive": float((draws > 0).mean()),
            "profile_max_cost": float(top["cost"]), "profile_max_log_lik": float(top["log_lik"]),
            "drop_low": float(top["log_lik"] - profile["log_lik"].iloc[0]),
            "drop_high": float(top["log_lik"] - profile["log_lik"].iloc[-1]),
            "grid": [float(profile["cost"].min()), float(profile["cost"].max())], "prior_sd": prior_sd}


def run(config: dict, out_dir: Path, mode: str, progress: bool, record: Run) -> None:
    """The study's entry point (:func:`pragmodels.runs.study.run_study` calls it; the steps:
    docs/studies/implicature.md).

    Parameters
    ----------
    config : dict
        ``fits/implicature.json`` (keys of :class:`Config`).
    out_dir : Path
        The staging run folder.
    mode : {"quick", "full"}
        Which sampler settings (quick also resamples the items fewer times).
    progress : bool
        Progress bars.
    record : Run
        The open run.
    """
    cfg = validate_config(Config, config, what="study config")
    folder = StudyFolder(record)
    log, tables = folder.log, folder.tables
    items = load_drinq()
    items["item_id"] = lm_outputs.item_ids(items)
    folder.record_dataset("drinq")
    sampler = dict(config["sampler"][mode])
    seed = int(cfg.seed)
    n_boot = cfg.n_boot if mode == "full" else min(cfg.n_boot, 1000)
    summary: dict[str, Any] = {"mode": mode, "prompt_version": prompts.PROMPT_VERSION, "lms": {},
                               "n_items": int(len(items)),
                               "labels_agree": int((items["consensus"] == items["implied_letter"]).sum()),
                               "labels_comparable": int(items["implied_letter"].notna().sum())}
    acc_all, pair_all, loo_rows, pp_rows, par_rows, interp_rows, gen_rows = [], [], [], [], [], [], []
    profile_rows: list[pd.DataFrame] = []
    summary["generated"] = {}
    all_paths = check_identities(cfg.lms)  # every entry against the tables it names, before any fit
    for lm_name, entry in cfg.lms.items():
        paths = all_paths[lm_name]
        for k, p in paths.items():
            folder.record_file(f"{lm_name}_{k}", p)
        if "generated" in paths:
            table, manifest = generate.load_generated(paths["generated"])
            gen_rows.append(generated_accuracy(lm_name, table, items, n_boot=n_boot, seed=seed))
            summary["generated"][lm_name] = {k: manifest.get(k) for k in (
                "lm_identity", "items", "n_draws", "caps", "stop", "temperature", "resample", "requests",
                "prompt_tokens_estimated", "answer_tokens", "status_counts", "wall_s")}
        if "score" not in paths:
            log(f"{lm_name}: generated answers only (no scores to fit the listener models to)")
            continue
        scores = lm_outputs.load_outputs(paths["score"], kind="score")
        interp = lm_outputs.load_outputs(paths["interpretations"], kind="interpretations")
        samples = lm_outputs.load_outputs(paths["sample"], kind="sample") if "sample" in paths else None
        acc, pair = accuracy_tables(lm_name, scores, samples, items, n_boot=n_boot, seed=seed)
        acc_all.append(acc)
        pair_all.append(pair)
        literal = lm_outputs.load_outputs(paths["literal"], kind="literal") if "literal" in paths else None
        interp_rows.append(interpretation_table(lm_name, interp, items, n_boot=n_boot, seed=seed, literal=literal))
        data, ids = model_data(items, interp, scores, literal)
        variants = model_variants(data)
        log(f"{lm_name}: {len(ids)} items modelled; fitting {len(variants)} listener models")
        specs = [pm.FitSpec(f"{lm_name}-{name}", listeners.MODELS[base], d, priors=pri, sampler=sampler, seed=seed + k)
                 for k, (name, (base, d, pri)) in enumerate(variants.items())]
        trees = folder.fit_per_lm(specs, executor=cfg.executor, progress=progress, mode=mode)
        for name, tree in trees.items():
            base, d, _ = variants[name]
            pp_rows.append({"lm": lm_name, "model": name, "n_item": len(ids),
                            **predictive_accuracy(base, tree, d, cfg.n_draws)})
            post = tree["posterior"].to_dataset()
            for v in ("alpha", "w", "cost", "beta", "lapse"):
                if v in post:
                    x = post[v].to_numpy().ravel()
                    par_rows.append({"lm": lm_name, "model": name, "parameter": v, "mean": float(x.mean()),
                                     "lo": float(np.quantile(x, 0.03)), "hi": float(np.quantile(x, 0.97))})
        prof = cost_profile(variants["rsa_cost"][1], seed=seed)
        prof.insert(0, "lm", lm_name)
        profile_rows.append(prof)
        cost_post = trees["rsa_cost"]["posterior"]["cost"].to_numpy().ravel()
        summary.setdefault("cost", {})[lm_name] = cost_summary(cost_post, prof)
        cmp = pm.compare(trees, sites=["consensus"])  # (per item; the selection factor is one term for all)
        cmp.insert(0, "lm", lm_name)
        loo_rows.append(cmp.reset_index().rename(columns={"index": "model"}))
        summary["lms"][lm_name] = {
            "backend": entry.backend, "model": entry.model, "n_modelled": len(ids),
            "score_items": {c: int(scores.loc[scores["condition"] == c, "item_id"].nunique())
                            for c in prompts.CONDITIONS if c in set(scores["condition"])},
            "sample_items": ({c: int(samples.loc[samples["condition"] == c, "item_id"].nunique())
                              for c in prompts.CONDITIONS if c in set(samples["condition"])} if samples is not None else {}),
            "loo": loo_sentence(cmp.drop(columns="lm")),
            "l0": "literal reading" if "literal" in data else "LM-pragmatic reading",
        }
    acc_df, pair_df = pd.concat(acc_all), pd.concat(pair_all)
    loo_df, pp_df, par_df = pd.concat(loo_rows), pd.DataFrame(pp_rows), pd.DataFrame(par_rows)
    acc_df.to_csv(tables / "accuracy.csv", index=False)
    pair_df.to_csv(tables / "paired.csv", index=False)
    loo_df.to_csv(tables / "loo.csv", index=False)
    pp_df.to_csv(tables / "predictive_accuracy.csv", index=False)
    par_df.to_csv(tables / "parameters.csv", index=False)
    pd.concat(interp_rows).to_csv(tables / "interpretation_scores.csv", index=False)
    pd.concat(profile_rows).to_csv(tables / "cost_profile.csv", index=False)
    gen_df = pd.concat(gen_rows) if gen_rows else pd.DataFrame()
    if gen_rows:
        gen_df.to_csv(tables / "generated_accuracy.csv", index=False)
    folder.write_summary(summary)
    folder.write_convergence()
    _figure(acc_df, pp_df, loo_df, folder.figures)
    if gen_rows:
        _generated_figure(gen_df, folder.figures)
    folder.write_report(report_markdown(folder.path, mode))
    log("done")


def exact_where_flat(acc: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """Accuracy rows whose item-bootstrap interval has no width (every answer wrong, or right) get the
    exact (Clopper-Pearson) 95% interval of a proportion over their items instead.

    Parameters
    ----------
    acc : pandas.DataFrame
        Rows of ``tables/accuracy.csv``.

    Returns
    -------
    rows : pandas.DataFrame
        A copy, ``lo`` and ``hi`` replaced where flat.
    flat : pandas.Series
        Which rows were.
    """
    g = acc.copy()
    flat = g["lo"] >= g["hi"]
    for i in g.index[flat]:
        n = int(g.at[i, "n_item"])
        ci = stats.binomtest(int(round(g.at[i, "mean"] * n)), n).proportion_ci(0.95)
        g.loc[i, ["lo", "hi"]] = ci.low, ci.high
    return g, flat


def figure_table(acc: pd.DataFrame, pp: pd.DataFrame, lm_name: str) -> pd.DataFrame:
    """The rows the accuracy figure draws for one LM: each reading by condition, then each fitted
    model (its choice's accuracy, 94% posterior interval) as a condition of its own. A reading's
    interval is the item bootstrap's, or the exact one where that has no width (:func:`exact_where_flat`).

    Parameters
    ----------
    acc, pp : pandas.DataFrame
        ``tables/accuracy.csv`` and ``tables/predictive_accuracy.csv``.
    lm_name : str
        The LM.

    Returns
    -------
    pandas.DataFrame
        ``series, condition, mean, lo, hi, n_item``.
    """
    a, _ = exact_where_flat(acc[(acc["lm"] == lm_name) & (acc["label"] == "consensus")])
    rows = [{"series": r["reading"], "condition": r["condition"], "mean": r["mean"], "lo": r["lo"], "hi": r["hi"],
             "n_item": r["n_item"]} for _, r in a.iterrows()]
    for _, r in pp[pp["lm"] == lm_name].iterrows():
        label = f"model: {r['model']}".replace("_lm_pragmatic", "·p").replace("_cost", "·c")
        rows.append({"series": "fitted listener model", "condition": label, "mean": r["argmax_mean"],
                     "lo": r["argmax_lo"], "hi": r["argmax_hi"], "n_item": r["n_item"]})
    return pd.DataFrame(rows)


def no_interval_note(pp: pd.DataFrame) -> str:
    """Why some fitted models' accuracy has no interval (``argmax_lo == argmax_hi``), for the
    figure: a model of one LM score (literal, prior, letter) ranks the options as that score does
    whatever its parameters, so every posterior draw makes the same choice.

    Parameters
    ----------
    pp : pandas.DataFrame
        One LM's rows of ``tables/predictive_accuracy.csv``.

    Returns
    -------
    str
        Empty when every model has an interval.
    """
    flat = pp.loc[pp["argmax_lo"] >= pp["argmax_hi"], "model"].tolist()
    one_score = [m for m in flat if not m.startswith("rsa")]
    parts = []
    if one_score:
        parts.append(f"{', '.join(one_score)}: no interval, as a model of one LM score ranks the options as that score "
                     "does, whatever its parameters: every posterior draw makes the same choice.")
    rsa = [m for m in flat if m.startswith("rsa")]
    if rsa:
        parts.append(f"{', '.join(rsa)}: no interval, as every posterior draw made the same choices.")
    return " ".join(parts)


#: the accuracy figure's short labels of the model variants (:func:`figure_table`)
LABEL_NOTE = "·c: the cost fitted (rsa_cost); ·p: L0 the LM-pragmatic reading (rsa_lm_pragmatic, literal_lm_pragmatic)."


def _figure(acc: pd.DataFrame, pp: pd.DataFrame, loo: pd.DataFrame, figures: Path) -> None:
    import matplotlib.pyplot as plt

    from pragmodels.plots import elpd_compare

    for lm_name, g in loo.groupby("lm", sort=False):
        fig = elpd_compare(g.sort_values("rank").set_index("model").drop(columns="lm"),
                           title=f"{lm_name}: the {len(g)} listener models (PSIS-LOO over items)")
        fig.savefig(figures / f"loo_{lm_name}.png", dpi=110, bbox_inches="tight")
        plt.close(fig)
    for lm_name in dict.fromkeys(acc["lm"]):
        fig = accuracy_figure(acc, pp, lm_name)
        fig.savefig(figures / f"accuracy_{lm_name}.png", dpi=130)
        plt.close(fig)


def accuracy_figure(acc: pd.DataFrame, pp: pd.DataFrame, lm_name: str) -> Any:
    """One LM's accuracy figure: each reading by condition, then each fitted model (:func:`figure_table`),
    against chance, the consensus floor and the paper's human average.

    Parameters
    ----------
    acc, pp : pandas.DataFrame
        :func:`accuracy_tables`' accuracy and :func:`predictive_accuracy`'s rows (with ``lm``, ``model``).
    lm_name : str

    Returns
    -------
    matplotlib.figure.Figure
    """
    from pragmodels.plots import accuracy_by_condition

    t = figure_table(acc, pp, lm_name)
    order = [c for c in prompts.CONDITIONS if c in set(t["condition"])] + list(
        dict.fromkeys(c for c in t["condition"] if str(c).startswith("model: ")))
    return accuracy_by_condition(
        t, order=order, figsize=(14.5, 4.6),
        references={"chance (1 of 5)": 0.2, "consensus floor: at least 4 of 5 annotators": 0.8,
                    f"paper: human average on its hard subset ({PAPER['human_average_hard']:.0%})":
                        PAPER["human_average_hard"]},
        title=f"DRInQ, {lm_name}: accuracy against the human consensus\n(95% item bootstrap, exact where it has no "
              "width; fitted models: 94% posterior)",
        note=" ".join(x for x in (no_interval_note(pp[pp["lm"] == lm_name]), LABEL_NOTE
                                  if (pp["lm"] == lm_name).sum() > len(listeners.MODELS) else "") if x))


def _generated_figure(gen: pd.DataFrame, figures: Path) -> None:
    """``generated.png``: accuracy per condition and LM (95% item bootstrap, exact where it has no
    width), and the shares of valid, truncated and malformed answers."""
    import matplotlib.pyplot as plt

    g, _ = exact_where_flat(gen.reset_index(drop=True))
    lms = list(dict.fromkeys(g["lm"]))
    conds = [c for c in prompts.CONDITIONS if c in set(g["condition"])]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [1, 1.25]})
    width = 0.8 / max(len(lms), 1)
    colors = {"valid": "#4c72b0", "truncated": "#dd8452", "malformed": "#c44e52"}
    for k, lm in enumerate(lms):
        r = g[g["lm"] == lm].set_index("condition").reindex(conds)
        x = np.arange(len(conds)) + (k - (len(lms) - 1) / 2) * width
        ax.errorbar(x, r["mean"], yerr=[r["mean"] - r["lo"], r["hi"] - r["mean"]], fmt="o", capsize=3, label=lm)
        n = r[list(generate.STATUSES)].sum(axis=1).to_numpy(float)
        bottom = np.zeros(len(conds))
        for st in generate.STATUSES:
            share = r[st].to_numpy(float) / np.maximum(n, 1)
            bx.bar(x, share, width * 0.95, bottom=bottom, color=colors[st], label=st if k == 0 else None,
                   edgecolor="white", linewidth=0.5)
            bottom += share
        for xi in x:
            bx.text(xi, 1.01, lm.split("_")[0][:7], rotation=90, ha="center", va="bottom", fontsize=7)
    ax.axhline(0.2, color="grey", ls="--", lw=1, label="chance (1 of 5)")
    ax.set_xticks(range(len(conds)), conds, rotation=30, ha="right")
    ax.set_ylim(-0.03, 1)
    ax.set_ylabel("accuracy against the consensus\n(truncated and malformed answers wrong)")
    ax.set_title("accuracy per condition (95% item bootstrap;\nexact where it has no width)", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    bx.set_xticks(range(len(conds)), conds, rotation=30, ha="right")
    bx.set_ylim(0, 1.25)
    bx.set_yticks([0, 0.25, 0.5, 0.75, 1])
    bx.set_ylabel("share of answers")
    bx.set_title("answers: valid, truncated (reached the cap), malformed", fontsize=10)
    bx.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    n_items = ", ".join(f"{lm}: {int(g[g['lm'] == lm]['n_item'].max())} items x {int(g[g['lm'] == lm]['n_run'].max())} "
                        "draw(s)" for lm in lms)
    fig.suptitle(f"DRInQ, generated JSON answers (the paper's reading): {n_items}", fontsize=11)
    fig.tight_layout()
    fig.savefig(figures / "generated.png", dpi=130)
    plt.close(fig)


def generated_findings(gen: pd.DataFrame) -> str:
    """Plain sentences on the generated answers: per LM the valid share, where accuracy is above chance,
    and what so small a sample of so small a model can show.

    Parameters
    ----------
    gen : pandas.DataFrame
        ``tables/generated_accuracy.csv``.

    Returns
    -------
    str
    """
    g, _ = exact_where_flat(gen.reset_index(drop=True))
    parts = []
    for lm, r in g.groupby("lm", sort=False):
        n = int(r[list(generate.STATUSES)].to_numpy().sum())
        shares = ", ".join(f"{int(r[st].sum())} {st} ({r[st].sum() / n:.0%})" for st in generate.STATUSES)
        above = r[r["lo"] > 0.2]["condition"].tolist()
        below = r[r["hi"] < 0.2]["condition"].tolist()
        lo_m, hi_m = f"{r['mean'].min():.0%}", f"{r['mean'].max():.0%}"
        v = int(r["valid"].sum())
        # below chance because invalid answers count as wrong, or because the valid ones avoid the consensus
        why = ("as its answers that are not valid count as wrong, not as its choices avoid the consensus"
               if not v or r["valid_correct"].sum() / v >= 0.2 else
               "its valid answers too pick the consensus less often than chance")
        text = (f"{lm}: of {n} answers, {shares}; accuracy {lo_m if lo_m == hi_m else lo_m + '-' + hi_m} across "
                "conditions, " + (f"above chance (interval above 20%) in {', '.join(above)}" if above else
                                  "no condition's interval above chance (20%)")
                + (f", below chance in {', '.join(below)} ({why})" if below else "") + ".")
        if v:
            text += (f" Among its valid answers alone, {int(r['valid_correct'].sum())} of {v} "
                     f"({r['valid_correct'].sum() / v:.0%}) pick the consensus.")
        parts.append(text)
    items = int(g.groupby(["lm", "condition"])[list(generate.STATUSES)].sum().sum(axis=1).max()) if len(g) else 0
    parts.append(f"What runs of this size (at most {items} answers per LM and condition) can show: whether a model "
                 "keeps the paper's output format (the valid, truncated and malformed shares), and that the pipeline "
                 "runs end to end on the paper's reading. What they cannot show: the paper's question, whether "
                 "prompting conditions move a model's pragmatic choices, as so few items leave every condition's "
                 "interval wide (no paired test is reported for so few answers); nor any comparison with the paper's "
                 "models.")
    return " ".join(parts)


def _findings(acc: pd.DataFrame, interp: pd.DataFrame) -> str:
    """Plain sentences on one LM's accuracy rows (``label == consensus``): which conditions are
    above chance (their interval excludes 0.2), the scored reading's letter preference, the
    malformed share of the sampled answers, and whether the context-only scores lean to the
    generated label."""
    parts = []
    for reading, g in acc.groupby("reading", sort=False):
        g, flat = exact_where_flat(g)  # the item bootstrap has no width at 0% or 100%
        above = g[g["lo"] > 0.2]["condition"].tolist()
        below = g[g["hi"] < 0.2]["condition"].tolist()
        lo_m, hi_m = f"{g['mean'].min():.0%}", f"{g['mean'].max():.0%}"
        rng = lo_m if lo_m == hi_m else f"{lo_m}-{hi_m}"
        text = (f"{reading}: accuracy {rng} across conditions; "
                + (f"above chance (interval above 20%) in {', '.join(above)}" if above else
                   "no condition's interval lies above chance (20%)")
                + (f"; below chance in {', '.join(below)}" if below else ""))
        if flat.any():
            text += (f" (where the item bootstrap has no width, at {g.loc[flat, 'mean'].iloc[0]:.0%}, the exact 95% "
                     f"interval over the items is used: {g.loc[flat, 'lo'].min():.0%}-{g.loc[flat, 'hi'].max():.0%} "
                     f"on {int(g.loc[flat, 'n_item'].min())} items, so "
                     + ("chance is excluded)" if (g.loc[flat, "hi"] < 0.2).all() else "chance is not excluded)"))
        if "top_letter" in g and g["top_letter"].notna().any():
            top = g.sort_values("top_letter_share", ascending=False).iloc[0]
            text += (f"; the choice leans on one letter (up to {top['top_letter_share']:.0%} '{top['top_letter']}' "
                     f"in {top['condition']}), so position, not meaning, drives much of it")
        if "malformed" in g and g["malformed"].notna().any():
            n = (g["n_item"] * g["n_run"]).sum()
            text += f"; {int(g['malformed'].sum())} of {int(n)} sampled answers are malformed (scored wrong)"
        parts.append(text + ".")
    pr = interp[interp["scores"] == "prior"].set_index("label")["mean"]
    prior = interp[interp["scores"] == "prior"].set_index("label")
    diff_label = "generated minus consensus (paired)"
    if {"consensus", "generated label", diff_label} <= set(prior.index):
        d = prior.loc[diff_label]
        if d["lo"] > 0:
            lean = ("more often the generated one (paired difference {:+.0%}, 95% interval {:+.0%} to {:+.0%}): "
                    "consistent with the paper's finding that LLM-written contexts over-specify the implied meaning, "
                    "but not evidence for it, since the words an option shares with its context, or the selection "
                    "of this subset, would give the same pattern").format(d["mean"], d["lo"], d["hi"])
        else:
            lean = f"a difference ({d['mean']:+.0%}, 95% interval {d['lo']:+.0%} to {d['hi']:+.0%}) within noise"
        parts.append(f"The context-only scores pick the generated label in {pr['generated label']:.0%} of items and "
                     f"the human consensus in {pr['consensus']:.0%}, {lean}.")
        parts.append(overlap_sentence(interp))
    parts.append("A model this small (135M-270M parameters) near chance is a finding about models this small. What "
                 "checks the pipeline is elsewhere: the LM's scores equal a from-scratch evaluation of the model in the "
                 "tests (`tests/lm/test_llamacpp.py`), and the sampled reading's parser is tested on well-formed and "
                 "broken answers; the raw sampled texts stay in the score cache (not committed: they quote the items). "
                 "No larger model was run here; the same code runs a large model behind a server.")
    return " ".join(parts)


def overlap_sentence(interp: pd.DataFrame) -> str:
    """The lexical-overlap control in a sentence: how often the option sharing the most words with the
    context is the generated label and the consensus (``interpretation_scores.csv``'s ``lexical overlap``).

    Parameters
    ----------
    interp : pandas.DataFrame
        One LM's rows of ``tables/interpretation_scores.csv``.

    Returns
    -------
    str
        Empty where the table has no such rows.
    """
    ov = interp[interp["scores"] == "lexical overlap"].set_index("label")
    diff = "generated minus consensus (paired)"
    if not {"consensus", "generated label", diff} <= set(ov.index):
        return ""
    d = ov.loc[diff]
    verdict = ("so word overlap alone leans the same way" if d["lo"] > 0 else
               "a difference within noise" if d["hi"] >= 0 else "so word overlap leans the other way")
    return (f"Control, no LM: the option sharing the most words with the context (token Jaccard) is the generated "
            f"label in {ov.loc['generated label', 'mean']:.0%} of these items and the consensus in "
            f"{ov.loc['consensus', 'mean']:.0%} (paired difference {d['mean']:+.0%}, 95% interval {d['lo']:+.0%} to "
            f"{d['hi']:+.0%}), {verdict}.")


def l0_sentence(l0: str) -> str:
    """Which L0 an LM's listener models use, in a sentence."""
    if l0 == "literal reading":
        return ("L0 is the literal reading (`prompts.LITERAL_TEMPLATE`: the question in context, \"taken literally, "
                "word for word and with nothing implied\"), so RSA adds the pragmatics once. `rsa_lm_pragmatic` and "
                "`literal_lm_pragmatic` are the named LM-pragmatic baseline: the same models on the scores after \"In "
                "one sentence, what they mean is:\", which already ask the LM for the pragmatic reading (RSA on them "
                "counts pragmatics twice). `rsa_cost` fits the cost of saying an interpretation outright.")
    return ("L0 here is the LM-pragmatic reading (the scores after \"In one sentence, what they mean is:\", which "
            "already ask for what is meant; no literal scores were made for this LM), so RSA counts pragmatics twice. "
            "`rsa_cost` fits the cost of saying an interpretation outright.")


def cost_sentence(c: dict[str, Any]) -> str:
    """The cost of asking (``summary.json``'s ``cost``) in sentences: posterior against prior, and the profile.

    Parameters
    ----------
    c : dict
        :func:`cost_summary`'s values.

    Returns
    -------
    str
    """
    lo_g, hi_g = c["grid"]
    bounded = [side for side, drop in (("below", c["drop_low"]), ("above", c["drop_high"])) if drop >= 1.92]
    ident = ("bounded on both sides within the grid (the profile falls by at least 1.92 nats, a 95% profile interval)"
             if len(bounded) == 2 else f"bounded only {bounded[0]}" if bounded else "bounded on neither side")
    return (f"`rsa_cost` frees the cost `c` of saying an interpretation outright (nats of the speaker's log-odds, "
            "outside alpha; prior Normal(0, 3)), so that "
            "`S1(Q | a)` can exceed 1/2 (asking preferred: the face-saving motive). Posterior mean "
            f"{c['mean']:.2f}, 94% interval {c['lo']:.2f} to {c['hi']:.2f}, P(c > 0) = {c['p_positive']:.2f}; its "
            f"posterior SD is {c['sd_ratio']:.2f} of the prior's. The profile log-likelihood (alpha, w and the lapse "
            f"maximised at each cost, {lo_g:g} to {hi_g:g}) peaks at c = {c['profile_max_cost']:g} and falls by "
            f"{c['drop_low']:.2f} nats to c = {lo_g:g} and {c['drop_high']:.2f} to c = {hi_g:g}: the cost is "
            f"{ident}" + ("." if len(bounded) == 2 else
                          ", so these data do not identify it and what its posterior says is largely its prior's; "
                          "the other models keep c = 0.") + _far_peak(c))


def _far_peak(c: dict[str, Any]) -> str:
    """A sentence where the profile peaks beyond 2 prior SDs of 0 (where the prior holds little mass, so the
    posterior cannot follow the profile there), else nothing."""
    sd = c.get("prior_sd")
    if sd is None or abs(c["profile_max_cost"]) <= 2 * sd:
        return ""
    return (f" The profile's peak lies {abs(c['profile_max_cost']) / sd:.1f} prior SDs from 0, where the prior "
            f"Normal(0, {sd:g}) holds little mass, so the posterior (mean {c['mean']:.2f}) does not follow it there: "
            "the data alone would have the speaker almost always ask, and the prior keeps the cost near what it "
            "allows.")


def published_section(acc: pd.DataFrame, pp: pd.DataFrame, gen: pd.DataFrame) -> list[str]:
    """The small LMs beside the paper's published figures, and what a model this small can and cannot show.

    Parameters
    ----------
    acc, pp, gen : pandas.DataFrame
        ``accuracy.csv``, ``predictive_accuracy.csv``, ``generated_accuracy.csv`` (may be empty).

    Returns
    -------
    list of str
        Markdown lines.
    """
    rows = [{"who": "humans: annotator average (paper, hard subset of 400)", "items": "paper's 400",
             "accuracy": PAPER["human_average_hard"]},
            {"who": "GPT-4o, the paper's best model (paper, hard subset)", "items": "paper's 400",
             "accuracy": PAPER["best_model_hard"]},
            {"who": "most of the paper's 12 models (\"a narrow range around 60%\")", "items": "paper's 400",
             "accuracy": PAPER["sota_cluster"]},
            {"who": "humans: consensus floor (at least 4 of 5 annotators)", "items": "this file's 231",
             "accuracy": 0.8}]
    v = acc[(acc["label"] == "consensus") & (acc["condition"] == "vanilla")]
    for _, r in v.iterrows():
        rows.append({"who": f"{r['lm']}, {r['reading']}, vanilla", "items": f"{int(r['n_item'])} of this file",
                     "accuracy": r["mean"]})
    if len(gen):
        for _, r in gen[gen["condition"] == "vanilla"].iterrows():
            rows.append({"who": f"{r['lm']}, generated JSON (the paper's reading), vanilla",
                         "items": f"{int(r['n_item'])} of this file", "accuracy": r["mean"]})
    for _, r in pp[pp["model"] == "rsa"].iterrows():
        rows.append({"who": f"{r['lm']}, the fitted RSA listener's choice", "items": f"{int(r['n_item'])} of this file",
                     "accuracy": r["argmax_mean"]})
    small = [r["accuracy"] for r in rows[4:]]
    span = f"{min(small):.0%}-{max(small):.0%}" if small else "not measured"
    return ["## The small models beside the published ones", "",
            "The paper prints its models' accuracies on its hard subset of 400 items (its Table 2, of which the "
            "text quotes only the figures below; the table itself is not in the mirror); this file's 231 items are "
            "not that subset, so the rows are side by side, not comparable number for number.", "",
            _md(pd.DataFrame(rows), ".2f"), "",
            "**What a model this small can and cannot show.** A 135M or 270M model can show that every step of the "
            "pipeline runs on the paper's questionnaire (scored, sampled and generated answers, the listener fits, "
            "the checks of identity and format), whether it keeps the paper's output format, and how its scores "
            "behave under the literal and the LM-pragmatic readings. It cannot show the paper's findings: its "
            f"accuracy here is {span} across the readings above (chance 20%, and most of these intervals hold it), "
            "far below the 60-76% of the paper's models and the annotators' 80-89%, so differences between "
            "prompting conditions, between L0 readings, or a fitted cost, are differences between near-random "
            "scorers; a listener model fitted to them measures how little these scores carry, not how pragmatic a "
            "capable LM is. The same command runs a large model behind a server (below).", ""]


def _flatness(pp: pd.DataFrame) -> str:
    """What the listeners' choice probabilities say about the annotators, in a sentence."""
    lo_r, hi_r = pp["reach_consensus_mean"].min(), pp["reach_consensus_mean"].max()
    lo_a, hi_a = f"{pp['annotator_mean'].min():.2f}", f"{pp['annotator_mean'].max():.2f}"
    rate = listeners.SELECTION_RATE
    sharp = hi_r >= rate
    return (f"Every item here reached 4 of 5 annotators; of all items presented, {rate:.1%} did (the paper's "
            f"Limitations: \"only 80.8% of instances achieve our human consensus threshold of 4/5 annotators\"), and "
            "the likelihood includes that selection (`listeners.selection_log_lik`). Annotators drawn from the fitted "
            f"listeners would reach it on {lo_r:.0%}-{hi_r:.0%} of these items (posterior means over models; kept "
            f"items should reach it more often than the {rate:.1%} of all presented), and one of them picks the "
            f"consensus with probability {lo_a if lo_a == hi_a else lo_a + '-' + hi_a} (chance: 0.20). "
            + ("The selection makes the listeners as sharp as the rate requires, but where the scores do not favour "
               "the consensus that sharpness goes to the wrong options (see `argmax`)." if sharp else
               "Even with the selection in the likelihood the listeners stay flatter than the people: a sharper "
               "listener would put its mass on the options the scores favour, which the annotators often did not "
               "choose. That is the LM scores' weakness.")
            + " Read `argmax` against the LM's accuracy.")


def _generated_section(gen: pd.DataFrame, info: dict[str, Any]) -> list[str]:
    """The report's section on the generated answers (the paper's reading)."""
    caps = ", ".join(f"{c} {n}" for c, n in generate.CAPS.items())
    out = ["## Generated JSON answers (the paper's reading)", "",
           "Every condition asks for the paper's JSON answer (Appendix 8.4) and reads the `selected_option` of the "
           "JSON the model writes (`models/implicature/generate.py`). The explanation condition writes its explanation "
           "first, and the reasoning and all conditions write their reasoning (steps 1 and 2 of the paper's scaffold) "
           "before the answer: `{\"reasoning\": ..., \"selected_option\": ...}` (this project's own format and "
           "example reasoning: the paper puts the selected option first in its core format and publishes no "
           f"examples). Token caps: {caps}. One answer per item, condition and draw at temperature "
           f"{generate.TEMPERATURE:g}, never resampled (the paper does not say it resampled). An answer is *valid* "
           "(a JSON object that parses, whose `selected_option` names an option), *truncated* (not valid, and it "
           "reached the cap) or *malformed* (neither); truncated and malformed answers are counted and scored wrong. "
           "A model prompted as plain text (a base model, Gemma-3-270M) has no end of turn, so its answer ends at the "
           "end of its line, as the examples' responses do. The scored-letter and sampled-JSON readings above stay "
           "as variants; the sampled JSON there puts the answer first in the reasoning and all conditions.", ""]
    for lm, m in info.items():
        wall = m.get("wall_s") or {}
        out.append(f"- **{lm}**: `{m.get('lm_identity')}`; {m.get('items')}, {m.get('n_draws')} draw(s) of the "
                   f"in-context examples; {m.get('requests')} requests, about {m.get('prompt_tokens_estimated'):,} "
                   f"prompt tokens (characters / 4) and {m.get('answer_tokens'):,} answer tokens (the model's "
                   f"tokenizer); stop {m.get('stop')}; {wall.get('total', float('nan')):.0f} s of wall time in the call "
                   "that wrote the table (a resumed run counts only what it asked; totals on the study page), on two "
                   "shared cores, one thread, niced.")
    shown, _ = exact_where_flat(gen.reset_index(drop=True))
    out += ["", "Accuracy against the human consensus (mean over draws; 95% item bootstrap interval, the exact "
            "interval over the items where the bootstrap has no width), the answers' statuses, `valid_correct` "
            "(valid answers that pick the consensus) and the mean answer length in tokens:",
            "", _md(shown), "", "**What this shows.** " + generated_findings(gen), "",
            "![generated answers](figures/generated.png)", ""]
    return out


def _md(df: pd.DataFrame, floatfmt: str = ".3g") -> str:
    return df.to_markdown(index=False, floatfmt=floatfmt)


TITLE = "DRInQ (Arai & Ren 2026): conversational implicature, an LM on the benchmark and a pragmatic listener"


def quick_markdown(run_dir: str | Path) -> str:
    """The report of a quick run: the steps that ran and the files they wrote, no finding
    (:func:`pragmodels.runs.quick_report.quick_report`).

    Parameters
    ----------
    run_dir : str or Path
        The run folder (``summary.json`` and ``tables/convergence.csv`` written).

    Returns
    -------
    str
    """
    from pragmodels.runs.quick_report import quick_report

    run_dir = Path(run_dir)
    s = json.loads((run_dir / "summary.json").read_text())
    fits = pd.read_csv(run_dir / "tables" / "convergence.csv")["fit"].tolist()
    steps = [f"the {s['n_items']} DRInQ items (Arai & Ren 2026) loaded, checked against their sha256"]
    for lm, info in s["lms"].items():
        own = [f.split("/", 1)[1] for f in fits if f.startswith(f"{lm}/")]
        steps.append(f"{lm}: its committed LM outputs read; accuracy by condition with a bootstrap over items; "
                     f"{len(own)} listener models fitted by NUTS to {info['n_modelled']} items: {', '.join(own)}")
    for lm in s.get("generated", {}):
        steps.append(f"{lm}: its generated answers read (the paper's reading): accuracy per condition with a "
                     "bootstrap over items, valid, truncated and malformed answers counted (`generated.png`)")
    steps += ["the listener models' PSIS-LOO comparison and posterior predictive accuracy", "figures and this report"]
    return quick_report(TITLE, run_dir, steps, full_report="fits/implicature/full/report.md")


def report_markdown(run_dir: str | Path, mode: str) -> str:
    """The run's ``report.md``, from its tables and ``summary.json``: for a full run the analysis,
    for a quick run what it checked (:func:`quick_markdown`).

    Parameters
    ----------
    run_dir : str or Path
        The run folder.
    mode : str
        ``quick`` or ``full``.

    Returns
    -------
    str
    """
    run_dir = Path(run_dir)
    if mode == "quick":  # what it checked, that the pipeline runs, and nothing else
        return quick_markdown(run_dir)
    t = run_dir / "tables"
    s = json.loads((run_dir / "summary.json").read_text())
    acc, pair = pd.read_csv(t / "accuracy.csv"), pd.read_csv(t / "paired.csv")
    loo, pp, par = pd.read_csv(t / "loo.csv"), pd.read_csv(t / "predictive_accuracy.csv"), pd.read_csv(t / "parameters.csv")
    conv = pd.read_csv(t / "convergence.csv")
    interp = pd.read_csv(t / "interpretation_scores.csv")
    out = [f"# {TITLE}", ""]
    out += [
        "## The data and the gold label", "",
        f"- {s['n_items']} validated items (`drinq_validated.csv`, the upstream repository's only data file). The paper "
        f"cites {PAPER['validated']} validated items and a hard subset of {PAPER['hard']}; this file is neither, and "
        "nothing here is comparable number for number with the paper's tables.",
        f"- Gold label: `consensus`, the human consensus (at least 4 of 5 annotators). The option carrying the "
        f"generated `implied_comment` agrees with it in only {s['labels_agree']} of the {s['labels_comparable']} items "
        "that have one. The upstream README calls `consensus` \"the human consensus implied meaning label\", the paper "
        "scores models against the human consensus, and it reports that agreement between generated and consensus labels "
        f"drops to 27% on its hard subset; this file's {s['labels_agree'] / s['labels_comparable']:.0%} is lower still, "
        "so the file is at least as hard as that subset by this measure. Accuracy against the generated label is in `tables/accuracy.csv` (label "
        "`generated label`).",
        "- Chance is 20%. Every item reached at least 4 of 5 annotators, so an annotator agrees with the consensus "
        f"at least 80% of the time on these items; the paper's human average on its hard subset is "
        f"{PAPER['human_average_hard']:.0%}.", "",
        "## Prompts", "",
        f"Version `{s['prompt_version']}` (`models/implicature/prompts.py`). From the paper (Appendix 8.4): the core "
        "instruction, the JSON output format and the pragmatic-reasoning scaffold. **This project's own** (the paper "
        "does not publish them): the six in-context examples (none is a DRInQ item), the conservative and charitable "
        "texts, the explanation condition's output order, and the letter-only format of the scored reading. Each "
        "condition runs 3 times with 3 of the 6 examples drawn by a seed, the same draws in every condition.", "",
        "Two readings of the LM's choice: **scored letters** (the five letters scored as the answer to the "
        "letter-only prompt; the choice is the most probable letter; in the explanation condition the model first "
        "writes a justification, sampled, and the letters are scored after it) and **sampled JSON** (the paper's "
        "format, one answer per item and draw at temperature 1; an answer with no parseable letter is malformed, "
        "counted, and wrong).", ""]
    for lm, info in s["lms"].items():
        a = acc[(acc["lm"] == lm)]
        out += [f"## {lm} ({info['backend']}: {info['model']})", "",
                "Items per condition (a prefix of a fixed random order where not all 231): scored "
                + ", ".join(f"{c} {n}" for c, n in info["score_items"].items())
                + ("; sampled " + ", ".join(f"{c} {n}" for c, n in info["sample_items"].items())
                   if info["sample_items"] else "; no sampled answers") + ".", "",
                "### Accuracy against the human consensus", "",
                "Mean over the 3 draws, SD over draws, 95% item-level bootstrap interval of the mean "
                "(`p_consensus`: the mean probability the scored letters give the consensus, normalised over the "
                "five; `letter_mass`: how much of the model's probability goes to a letter at all, not given after a "
                "justification, whose own probability the scores then include; `top_letter_share`: how often the "
                "most chosen letter is chosen).", ""]
        cols = ["reading", "condition", "n_item", "mean", "sd", "lo", "hi"]
        extra = [c for c in ("p_consensus", "letter_mass", "top_letter", "top_letter_share", "malformed",
                             "json_invalid") if c in a]
        ac = a[a["label"] == "consensus"]
        out += [_md(ac[cols + extra]), ""]
        out += ["**What this shows.** " + _findings(ac, interp[interp["lm"] == lm]), ""]
        out += ["What the listener model's LM scores pick on their own (the most probable option given the "
                "question in context, `fit` (what they mean) and `literal` (read literally, where scored), and given "
                "the context alone, `prior`), and a control that needs no LM (`lexical overlap`: the option sharing "
                "the most words with the context, token Jaccard), against both labels:", "",
                _md(interp[interp["lm"] == lm].drop(columns=["lm"])), ""]
        pr = pair[pair["lm"] == lm]
        if not pr.empty:
            out += ["### Each condition against vanilla (paired)", "",
                    "Difference in accuracy on the same items and draws; 95% interval and two-sided p-value from a "
                    "paired bootstrap over items; McNemar's exact test per draw (p-values in draw order).", "",
                    _md(pr[["reading", "condition", "n_item", "diff", "lo", "hi", "p_bootstrap", "mcnemar_p"]]), ""]
        out += ["### The pragmatic listener and its rivals", "",
                f"Fitted by NUTS to the consensus letters of the {info['n_modelled']} items (`models/implicature/listeners.py`: the "
                "likelihood is the event that at least 4 of 5 annotators chose the consensus, and the selection: of "
                f"the items presented, {listeners.SELECTION_RATE:.1%} reached it, so about "
                f"{(1 - listeners.SELECTION_RATE) / listeners.SELECTION_RATE:.3f} items were dropped per item kept; "
                "LOO is over the consensus letters given the selection, which enters the posterior). "
                + l0_sentence(info.get("l0", "LM-pragmatic reading")) + " LOO over items: " + info["loo"], "",
                _md(loo[loo["lm"] == lm].drop(columns=["lm"]), ".3g"), "", f"![LOO {lm}](figures/loo_{lm}.png)", "",
                "Posterior predictive accuracy: the fitted listener's most probable option per item (`argmax`), "
                "the expected accuracy of one annotator drawn from the model (`annotator`), and the share of items "
                "on which 5 annotators drawn from it would reach 4 of 5 (`reach_consensus`); 94% intervals over "
                "posterior draws.", "",
                _md(pp[pp["lm"] == lm].drop(columns=["lm"])), "",
                _flatness(pp[pp["lm"] == lm]), "",
                "Parameters (posterior mean, 94% interval):", "",
                _md(par[par["lm"] == lm].drop(columns=["lm"])), "",
                f"![accuracy](figures/accuracy_{lm}.png)", ""]
        if lm in s.get("cost", {}) and (t / "cost_profile.csv").is_file():
            prof = pd.read_csv(t / "cost_profile.csv")
            out += ["### The cost of asking", "", cost_sentence(s["cost"][lm]), "",
                    _md(prof[prof["lm"] == lm].drop(columns=["lm", "log_lik"]), ".3g"), ""]
    if (t / "generated_accuracy.csv").is_file():
        out += _generated_section(pd.read_csv(t / "generated_accuracy.csv"), s.get("generated", {}))
    out += published_section(acc, pp, pd.read_csv(t / "generated_accuracy.csv")
                             if (t / "generated_accuracy.csv").is_file() else pd.DataFrame())
    out += ["## Convergence", "", _md(conv), "",
            "## Running the same study against a large model", "",
            "Serve the model behind any OpenAI-compatible server (vLLM, llama.cpp's server) and run",
            "",
            "    python -m models.implicature.score --lm big --base-url http://gpu-host:8000/v1 --server-model NAME \\",
            "        --passes interpretations score sample generate     # --dry-run: the estimate only",
            "",
            "then add `\"big\": {\"backend\": \"openai\", \"model\": \"NAME\", \"base_url\": ...}` under `lms` in "
            "`fits/implicature.json` and `pragmodels run fits/implicature.json`. Scoring needs a server that returns "
            "prompt log-probabilities (`echo` with `logprobs`); sampling and the generated answers need only "
            "completions (an entry with only generated answers is reported, not fitted). The study checks each entry "
            "against the LM its tables record before any fit.", ""]
    return "\n".join(out)
