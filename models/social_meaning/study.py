"""The social-meaning study end to end: reproduction tables, RSA and baseline fits to humans and
to each LLM x prompt, model-implied ESR/CDS with credible intervals, figures and a report.

The config's schema is :class:`~models.social_meaning.config.Config` (in its own module, validated
before the run and before this one is imported; ``schemas/social_meaning.schema.json``); every NUTS
setting is there. Entry points named by ``fits/social_meaning.json``: :func:`run`
(``"study"``; called by ``pragmodels run`` through :func:`pragmodels.runs.study.run_study`) and
:func:`write_tables` (``"tables"``; ``pragmodels tables social_meaning``). :func:`rebuild_report`
re-renders a finished run's report from its ``run.json``. Notes: ``docs/studies/social_meaning.md``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

import pragmodels as pm
from models.social_meaning import checks, claims, esr, esr_checks, new_lms, paper, rsa
from models.social_meaning.config import (  # noqa: F401 - the config's schema, importable from here too
    FIT_LABELS,
    HUMAN_LABELS,
    LLM_LABELS,
    Config,
    FitSettings,
    ModeReplicates,
    StudySampler,
)
from models.social_meaning.report import (  # noqa: F401
    KEY_PARAMETERS,
    PARAMETER_LABELS,
    chain_table,
    converged,
    diagnostics_line,
    parameter_table,
    quick_markdown,
    report_markdown,
)
from pragmodels import datasets, metrics
from pragmodels.inference.diagnostics import FitWarning
from pragmodels.inference.top_up import top_up
from pragmodels.inference.workers import start_in_worker
from pragmodels.io.atomic import atomic_write
from pragmodels.likelihoods.rater import rater_slots
from pragmodels.runs.folder import MODES, Run, lock_folder, read_manifest
from pragmodels.runs.schema import validate_config
from pragmodels.runs.study import StudyFolder

TABLE_COLUMNS = ["model", "prompt", "spearman", "ccc", "rmse", "cds_m", "cds_i", "cds", "das", "iss"]
SCENARIOS = ("bicycle", "cinema", "conference", "house", "office", "pasta")
#: the human RSA fits' dense mass block: the speaker and listener parameters and the loadings, which
#: the ratings pin only jointly (a long ridge of the cost against the knowledge prior:
#: models/social_meaning/rsa.py, "Features that vanish"); the rest stays diagonal
RSA_BLOCK = ("alpha", "precise_logodds_coarse", "theta_mu", "theta_sigma", "theta_z", "beta")


# ------------------------------------------------------------------ reproduction (Tables 2-4)
def reproduction_table(human=None, llm=None) -> pd.DataFrame:
    """One row per LLM x prompt with the paper's metrics, the Lin CCC variant, Table 4's
    individual RMSE, invalid counts, and the paper's printed values beside them (``paper_*``)."""
    human = datasets.load_social_human() if human is None else human
    llm = datasets.load_social_llm() if llm is None else llm
    rows = []
    for model in datasets.LLMS:
        for prompt in datasets.PROMPTS:
            g = llm[(llm.model == model) & (llm.prompt == prompt)]
            r = metrics.calibration_metrics(human, g)
            sp, cc, rm = paper.TABLE2[(model, prompt)]
            cm, ci, cd = paper.TABLE3[(model, prompt)]
            _, ri = paper.TABLE4[(model, prompt)]
            rows.append(dict(model=model, prompt=prompt, **{k: r[k] for k in TABLE_COLUMNS[2:]},
                             ccc_lin=r["ccc_lin"], rmse_individual=r["rmse_individual"],
                             n_valid=r["n_valid"], n_invalid=r["n_invalid"],
                             paper_spearman=sp, paper_ccc=cc, paper_rmse=rm, paper_cds_m=cm,
                             paper_cds_i=ci, paper_cds=cd, paper_das=paper.DAS_ISS, paper_iss=paper.DAS_ISS,
                             paper_rmse_individual=ri))
    return pd.DataFrame(rows)


#: what was found about each cell that differs from the paper by more than 0.001
DISCREPANCY_NOTES = {
    ("claude", "MIN", "cds_m"): "0.848 here and in the upstream notebook's stored output vs 0.845 printed (CDS 0.539 vs "
                                "0.538, within 0.001). 98 of 1,440 Claude MIN responses are invalid upstream; recovering "
                                "a leading digit from their raw text gives 0.942, so that is not the cause. Unexplained; "
                                "most likely the table was made from an earlier run.",
    ("gemini", "COM", "spearman"): "0.916 here and in the upstream notebook vs 0.932 printed; the notebook output the "
                                   "paper's other cells match gives 0.916, so the printed value looks like a transcription slip.",
    ("gemini", "COM", "cds_m"): "1.238 here and in the upstream notebook vs 1.241 printed (4 invalid responses upstream).",
    ("gemini", "COM", "cds"): "follows from cds_m (see there).",
}


def discrepancies(table: pd.DataFrame, tol: float = 0.001) -> pd.DataFrame:
    """Cells that differ from the printed paper value by more than ``tol`` (after rounding to 3 dp)."""
    out = []
    for _, r in table.iterrows():
        for col in TABLE_COLUMNS[2:] + ["rmse_individual"]:
            diff = round(r[col], 3) - r[f"paper_{col}"]
            if abs(diff) > tol + 1e-9:
                out.append(dict(model=r.model, prompt=r.prompt, metric=col, ours=round(r[col], 3),
                                paper=r[f"paper_{col}"], difference=round(diff, 3),
                                note=DISCREPANCY_NOTES.get((r.model, r.prompt, col), "not explained")))
    return pd.DataFrame(out, columns=["model", "prompt", "metric", "ours", "paper", "difference", "note"])


def format_side_by_side(table: pd.DataFrame) -> str:
    lines = [f"{'model':7s} {'prompt':6s} " + " ".join(f"{c:>15s}" for c in TABLE_COLUMNS[2:] + ["rmse_indiv"])]
    for _, r in table.iterrows():
        cells = [f"{r[c]:.3f} ({r['paper_' + c]:.3f})" for c in TABLE_COLUMNS[2:] + ["rmse_individual"]]
        lines.append(f"{r.model:7s} {r.prompt:6s} " + " ".join(f"{c:>15s}" for c in cells))
    return "ours (paper):\n" + "\n".join(lines)


# ------------------------------------------------------------------ encoding and fitting
def encode(df: pd.DataFrame, participants: bool) -> dict:
    """Integer-coded model data from a tidy ratings frame (valid rows only)."""
    att = {a: i for i, a in enumerate(datasets.ATTRIBUTES)}
    scen = {s: i for i, s in enumerate(SCENARIOS)}
    bad = sorted(set(df.scenario) - set(scen))
    if bad:
        raise ValueError(f"unknown scenario(s) {bad}; expected {SCENARIOS}.")
    cond = rsa.condition_index(df.scenario.map(scen).to_numpy(), (df.context == "high").to_numpy(int),
                              (df.form == "approx").to_numpy(int), df.attribute.map(att).to_numpy())
    data = dict(condition=cond.astype(np.int32), rating=df.rating.to_numpy(np.int32))
    if participants:
        codes, uniq = pd.factorize(df.participant_id, sort=True)
        data.update(participant=codes.astype(np.int32), n_participants=len(uniq))
        n_attr = len(datasets.ATTRIBUTES)  # the rater likelihood's layout: each rater's cell (computed once, here)
        data["rater_slots"] = rater_slots(data["participant"], cond // n_attr, cond % n_attr, len(uniq),
                                          len(SCENARIOS) * 4, n_attr, what="the human ratings")
    return data


COORDS = {"attribute": list(datasets.ATTRIBUTES), "scenario": list(SCENARIOS),
          "effect": ["form", "context", "form_x_context"], "free_motive": list(rsa.MOTIVES[1:]),
          "cutpoint": list(range(1, rsa.N_RATING)), "gap": list(range(1, rsa.N_RATING - 1)),
          "scenario_contrast": list(range(1, len(SCENARIOS)))}


def fit_spec(name: str, kind: str, df: pd.DataFrame, participants: bool, seed: int, sampler: dict,
             motive_prior: str = "uniform", priors: dict | None = None, link: str = "qud_fit",
             label: str | None = None, effect_scale: str = "rating", rater_nodes: int = rsa.RATER_NODES) -> pm.FitSpec:
    """A :class:`pragmodels.FitSpec` for the RSA (``kind="rsa"``, with ``motive_prior`` and ``link``) or the
    baseline model on a ratings frame (``participants``: with rater effects, i.e. the human data; a
    ``"human"`` entry of ``sampler`` then applies, :func:`split_sampler`; for an LLM fit, the
    ``"fits"`` entry of its ``label``, ``"<model> <prompt>"``, or of a human fit's, :data:`HUMAN_LABELS`). ``priors`` overrides the
    model's default priors by parameter name (names the fitted model does not declare are left out,
    so one mapping serves the RSA and baseline fits, with and without raters); the fit records the
    priors it sampled. ``effect_scale`` (:func:`models.social_meaning.rsa.rsa_model`) is the default
    parametrisation; a ``"fits"`` entry's ``effect_scale`` replaces it for that fit. ``rater_nodes``: the
    quadrature of the rater likelihood (with ``participants``; :data:`models.social_meaning.rsa.RATER_NODES`)."""
    data = encode(df, participants)
    settings = split_sampler(sampler, label)[0 if participants else 1]  # "human" / "fits" entries apply
    effect_scale = settings.pop("effect_scale", effect_scale)  # a "fits" entry's parametrisation
    if kind == "rsa":
        model = rsa.rsa_model
        data["motive_prior"] = rsa.check_motive_prior(motive_prior)  # static: in the data hash and the cache key
        data["link"] = rsa.check_link(link)
        # centred where the data pin each scenario's knowledge (the LLMs), non-centred for the humans
        data["theta_param"] = "non-centred" if participants else "centred"
    elif kind == "baseline":
        model = rsa.baseline_model
    else:
        raise ValueError(f"kind must be 'rsa' or 'baseline'; got {kind!r}.")
    if not participants:  # the LLM ratings pin each scenario effect: centred (models/social_meaning/rsa.py, "Scenario effects")
        data["zeta_param"] = "centred"
    if rsa.check_effect_scale(effect_scale) != "rating":  # the default stays out of the data (and its hash)
        data["effect_scale"] = effect_scale
    if participants and rsa.check_rater_nodes(rater_nodes) != rsa.RATER_NODES:  # likewise
        data["rater_nodes"] = rater_nodes
    declared = pm.inspect_model(model, data)
    names = set(declared.priors) | set(declared.fixed) | {how["parameter"] for how in declared.scaled.values()}
    own = {k: v for k, v in (priors or {}).items() if k in names}
    coords = dict(COORDS, feature=list(rsa.FEATURE_SETS[link])) if kind == "rsa" else dict(COORDS)
    # chain_method None unless the config sets it: pm.fit's default for the devices, so that the CLI's in-process
    # run (one CPU device per core) runs parallel chains, where fit_many's own default is one device's
    settings = {"chain_method": None, **settings, "coords": coords}
    return pm.FitSpec(name, model, data, priors=own or None, sampler=settings, seed=seed)


def _annotate(tree, kind: str, motive_prior: str, warned: list[str]):
    tree.attrs["motive_prior"] = motive_prior if kind.startswith("rsa") else "n/a"
    tree.attrs["model_kind"] = kind  # models.social_meaning.rsa.IMPLIED_KINDS
    tree.attrs["warnings"] = json.dumps(list(warned))
    return tree


def fit_one(kind: str, df: pd.DataFrame, participants: bool, seed: int, sampler: dict, progress: bool,
            motive_prior: str = "uniform", priors: dict | None = None):
    """Fit one model (:func:`fit_spec`) in this process; the fit's FitWarnings are kept in
    ``tree.attrs["warnings"]``, and every warning it raised is shown as well (recording them
    once hid a quick fit's non-convergence from a notebook)."""
    spec = fit_spec("fit", kind, df, participants, seed, sampler, motive_prior, priors)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        tree = pm.fit(spec.seed, spec.model, spec.data, progress_bar=progress, priors=spec.priors, **spec.sampler)
    for w in caught:  # shown under the caller's own filters
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return _annotate(tree, kind, motive_prior,
                     [str(w.message) for w in caught if issubclass(w.category, FitWarning)])


def _draws(tree, n: int, seed: int) -> list[dict]:
    post = tree["posterior"].to_dataset()
    flat = post.stack(sample=("chain", "draw"))
    idx = np.random.default_rng(seed).choice(flat.sizes["sample"], size=min(n, flat.sizes["sample"]), replace=False)
    names = [v for v in post.data_vars]
    out = []
    for i in idx:
        d = {}
        for v in names:
            arr = flat[v].isel(sample=int(i))
            d[v] = jnp.asarray(arr.values)
        out.append(d)
    return out


_IMPLIED = {kind: jax.jit(jax.vmap(functools.partial(rsa.implied_cell_means, kind))) for kind in rsa.IMPLIED_KINDS}


def implied_means(tree, kind: str, n_draws: int, seed: int = 0) -> np.ndarray:
    """Model-implied cell means, shape ``[draw, attribute, scenario, context, form]``."""
    draws = _draws(tree, n_draws, seed)
    stacked = {k: jnp.stack([d[k] for d in draws]) for k in draws[0] if k in rsa.DRAW_KEYS}
    return np.asarray(_IMPLIED[kind](stacked))


def implied_effects(means: np.ndarray) -> dict[str, np.ndarray]:
    """Δ main and interaction per attribute from implied means (scenarios weighted equally).

    Returns ``main [draw, attribute]``, ``interaction [draw, attribute]`` and ``cells
    [draw, attribute, context, form]``.
    """
    cells = means.mean(2)  # over scenarios
    delta = cells[..., 0] - cells[..., 1]  # precise - approx, [draw, attr, context]
    return dict(main=delta.mean(-1), interaction=delta[..., 1] - delta[..., 0], cells=cells)


def _summ(x: np.ndarray, axis=0) -> tuple:
    """Median and 94% equal-tailed interval (arviz-stats ``eti``) over draws on ``axis``, ignoring
    undefined draws (NaN)."""
    from arviz_stats.base import array_stats

    x = np.moveaxis(np.asarray(x, float), axis, -1)
    iv = array_stats.eti(x, 0.94, axis=-1, skipna=True)
    return np.nanmedian(x, -1), iv[..., 0][()], iv[..., 1][()]  # [()]: a 0-d array becomes a scalar


def _cells_frame(df: pd.DataFrame) -> pd.Series:
    return metrics.cell_means(metrics.valid_ratings(df).frame)


def _cell_label(a, c, f):
    return f"{a}|{c}|{f}"


def observed_comparisons(human: pd.DataFrame, llm: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Observed ESR per LLM x prompt (Figure 2) and human vs LLM condition means (Figure 1)."""
    esr_rows, fig1_rows = [], []
    hcells = _cells_frame(human)
    for (m, p), g in llm.groupby(["model", "prompt"], sort=False):
        e = metrics.esr_table(human, metrics.valid_ratings(g).frame).reset_index()
        e.insert(0, "prompt", p)
        e.insert(0, "model", m)
        esr_rows.append(e)
        mc = _cells_frame(g)
        fig1_rows += [dict(model=m, prompt=p, cell=_cell_label(*k), human=hcells[k], llm=mc[k]) for k in hcells.index]
    return pd.concat(esr_rows, ignore_index=True), pd.DataFrame(fig1_rows)


def split_sampler(sampler: dict, label: str | None = None) -> tuple[dict, dict]:
    """NUTS settings for the human fits and for the LLM fits: a ``"human"`` entry in ``sampler``
    overrides settings for the human fits only (their posteriors mix more slowly: 362 rater
    effects and six scenario effects per attribute against 13,000 ratings), and a ``"fits"`` entry
    ``{"<label>": {...}}`` those of single fits (``label``: ``"<model> <prompt>"`` or one of
    :data:`HUMAN_LABELS`, applied after the ``"human"`` entry)."""
    base = {k: v for k, v in sampler.items() if k not in ("human", "fits")}
    extra = sampler.get("human", {})
    if not isinstance(extra, dict):
        raise ValueError(f"sampler['human'] must be a dict of NUTS settings; got {extra!r}.")
    per_fit = sampler.get("fits") or {}
    unknown = sorted(set(per_fit) - set(FIT_LABELS))
    if unknown or not all(isinstance(v, dict) for v in per_fit.values()):
        raise ValueError(f"sampler['fits'] must map fit labels {FIT_LABELS} to dicts of NUTS settings; "
                         f"got {per_fit!r}" + (f" (unknown: {unknown})" if unknown else "") + ".")
    own = per_fit.get(label, {})
    return {**base, **extra, **(own if label in HUMAN_LABELS else {})}, {**base, **(own if label in LLM_LABELS else {})}


def _settings_words(settings: dict) -> str:
    return ", ".join(f"{k}={v}" if isinstance(v, (int, float, str)) else k for k, v in settings.items())


def sampler_words(sampler: dict) -> str:
    """The NUTS settings of the fits in words, for the log: the human fits', what differs for the LLM
    fits, and which fits have settings of their own (a ``"fits"`` entry; a list value is named, not shown):
    ``"NUTS num_warmup=50, num_samples=60, num_chains=2 for the human fits; num_samples=50 for the LLM
    fits (the rest as for the humans); no fit has settings of its own"``."""
    human, llm = split_sampler(sampler)
    differ = {k: v for k, v in llm.items() if human.get(k) != v}
    llm_words = f"{_settings_words(differ)} for the LLM fits (the rest as for the humans)" if differ else \
        "the same for the LLM fits"
    own = sampler.get("fits") or {}
    own_words = ("settings of their own for " + "; ".join(f"{label} ({_settings_words(v)})" for label, v in own.items())
                 if own else "no fit has settings of its own")
    return f"NUTS {_settings_words(human)} for the human fits; {llm_words}; {own_words}"


def fit_all(human, llm, seed: int, sampler: dict, progress: bool, motive_prior: str, conditions, stamp, log,
            executor="sequential", new=None, rater_nodes: int = rsa.RATER_NODES, resize: bool = True):
    """The RSA model and the baseline fitted to the humans (compared by LOO), and the RSA model
    fitted to each LLM x prompt, all 14 through :func:`pragmodels.inference.fit_many` (``executor``:
    ``"sequential"``, ``"process"`` or a Dask ``Client``), a fit short of the sampling standards
    sampled again with more draws (:func:`pragmodels.inference.top_up.top_up`; ``resize=False``, as in a
    quick run, whose short chains all fall short by design: not). Returns ``(trees, baseline,
    loo_compare)``; ``trees["human"]`` first, then ``trees["<model> <prompt>"]`` (the published
    LLMs', then those of the new LMs in ``new``, :func:`models.social_meaning.new_lms.read_checked`:
    fitted beside them, each with a seed of its own). A failed fit does not stop the others; the
    study raises at the end, naming every failure. ``rater_nodes``: the human fits' rater quadrature
    (config ``rater_nodes``)."""
    rsa_label, motives_label, base_label = HUMAN_LABELS
    speaker = rsa.PRIORS_SPEAKER  # what no ratings identify, humans' or LLMs' (models/social_meaning/rsa.py)
    nodes = {"rater_nodes": rater_nodes}
    specs = [fit_spec("human_rsa", "rsa", human, True, seed, sampler, motive_prior, speaker, label=rsa_label, **nodes),
             fit_spec("human_rsa_motives", "rsa", human, True, seed + 2, sampler, motive_prior, speaker,
                      link="motives", label=motives_label, **nodes),
             fit_spec("human_baseline", "baseline", human, True, seed + 1, sampler, label=base_label, **nodes)]
    labels, invalid = {"human_rsa": "human", "human_rsa_motives": "motives", "human_baseline": "baseline"}, {}
    kinds = dict(human_rsa="rsa", human_rsa_motives="rsa_motives", human_baseline="baseline")
    wanted = None if conditions is None else set(map(tuple, conditions))
    for i, m in enumerate(datasets.LLMS):
        for j, p in enumerate(datasets.PROMPTS):
            if wanted is not None and (m, p) not in wanted:
                continue
            v = metrics.valid_ratings(llm[(llm.model == m) & (llm.prompt == p)])
            name = f"{m}_{p}_rsa"
            specs.append(fit_spec(name, "rsa", v.frame, False, seed + 10 + 4 * i + j, sampler, motive_prior,
                                  speaker, label=f"{m} {p}"))
            labels[name], kinds[name], invalid[name] = f"{m} {p}", "rsa", v.n_invalid
    groups = [] if new is None else list(new.groupby(["model", "prompt"], sort=False))
    for k, ((m, p), g) in enumerate(groups):
        v = metrics.valid_ratings(g)
        name = f"lm_{k}_rsa"
        specs.append(fit_spec(name, "rsa", v.frame, False, seed + 1000 + k, sampler, motive_prior, speaker,
                              label=f"{m} {p}"))
        labels[name], kinds[name], invalid[name] = f"{m} {p}", "rsa", v.n_invalid
    stamp(f"fitting {len(specs)} models with pragmodels.inference.fit_many ({executor if isinstance(executor, str) else 'dask'}; "
          f"{sampler_words(sampler)}; motive prior {motive_prior})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # kept per fit in tree.attrs["warnings"]
        result = pm.fit_many(specs, executor=executor, progress=progress, log=stamp)
    result.raise_on_error()
    outcomes = top_up(specs, result, executor=executor, progress=progress, log=stamp, rounds=2 if resize else 0)
    trees = {}
    for outcome in outcomes:
        tree = _annotate(outcome.tree, kinds[outcome.name], motive_prior, outcome.warnings)
        if outcome.name in invalid:
            tree.attrs["n_invalid_excluded"] = invalid[outcome.name]
        log(f"{labels[outcome.name]}: " + diagnostics_line(tree))
        trees[labels[outcome.name]] = tree
    baseline = trees.pop("baseline")
    trees["human (motives link)"] = trees.pop("motives")  # after the LLM fits: they are contrasted with "human"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = pm.compare(human_models(trees, baseline))  # unrounded: the report rounds
    return trees, baseline, cmp


#: the three models of the human ratings compared by LOO (labels in ``loo_compare.csv``)
HUMAN_MODELS = {"rsa": "human", "rsa_motives": "human (motives link)", "baseline": None}


def human_models(trees: dict, baseline) -> dict:
    """``{kind: tree}`` of the three human fits (:data:`HUMAN_MODELS`)."""
    return {k: baseline if label is None else trees[label] for k, label in HUMAN_MODELS.items()}


def llm_trees(trees: dict) -> dict:
    """The LLM x prompt fits of ``trees`` (labels ``"<model> <prompt>"``)."""
    return {k: v for k, v in trees.items() if not k.startswith("human")}


#: parameters compared between each LLM fit and the human fit (pm.contrast_table)
CONTRASTED = ("alpha", "cost_precise", "noise", "lapse", "theta_mu")


def contrast_section(table: pd.DataFrame, trees: dict) -> str:
    """The report's section on :func:`contrasts`: per LLM fit, ``P(LLM > human)`` for each
    contrasted parameter (``†``: the LLM fit did not converge, so its row is not to be read)."""
    lines = ["", "## Posterior contrasts with the human fit", "",
             "P(parameter of the LLM fit > that of the human fit), from independent draws of the two posteriors "
             "(`pm.contrast_table`); differences with 94% intervals are in `tables/contrasts.csv`.", "",
             "| fit | " + " | ".join(PARAMETER_LABELS[v] for v in CONTRASTED) + " |", "|---|" + "---|" * len(CONTRASTED)]
    for fit, g in table.groupby("fit", sort=False):
        p = dict(zip(g.parameter, g.p_greater))
        mark = "" if fit not in trees or converged(trees[fit]) else " †"
        lines.append(f"| {fit}{mark} | " + " | ".join(f"{p[v]:.2f}" if v in p else "–" for v in CONTRASTED) + " |")
    return "\n".join(lines) + "\n"


def contrasts(trees: dict) -> pd.DataFrame:
    """Each LLM fit against the human fit: ``P(LLM > human)`` and the difference with its 94%
    interval for :data:`CONTRASTED` (:func:`pragmodels.contrast_table`)."""
    return pm.contrast_table({"human": trees["human"], **llm_trees(trees)}, list(CONTRASTED), reference="human", prob=0.94)


def human_implied_effects(trees: dict, n_draws: int, seed: int) -> dict:
    """Implied effects of the human RSA fit (:func:`implied_effects`; rater effects integrated out)."""
    return implied_effects(implied_means(trees["human"], "rsa", n_draws, seed))


def llm_sets(llm: pd.DataFrame, conditions=None) -> dict:
    """``{"<model> <prompt>": ratings}`` of the LLM x prompt data sets (all 12, or ``conditions``)."""
    wanted = None if conditions is None else set(map(tuple, conditions))
    return {f"{m} {p}": llm[(llm.model == m) & (llm.prompt == p)] for m in datasets.LLMS for p in datasets.PROMPTS
            if wanted is None or (m, p) in wanted}


def measurement(human: pd.DataFrame, llm: pd.DataFrame, table: pd.DataFrame, conditions, seed: int, sampler: dict):
    """The ESR measurement model (:mod:`models.social_meaning.esr`) fitted to the human and LLM
    effects, and what the report reads from it. Returns ``(tree, esr, cds, claims)``: signed ESR
    per effect, CDS per condition beside the observed (paper's) CDS, and the paper's claims as
    posterior probabilities with their MCSE (:mod:`models.social_meaning.claims`; all 12 conditions
    needed), their components in ``claims.attrs["components"]``."""
    data, labels = esr.model_data(human, llm_sets(llm, conditions))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        tree = esr.fit_measurement(data, labels, seed=seed, **sampler)
    tree.attrs["warnings"] = json.dumps([str(w.message) for w in caught if issubclass(w.category, FitWarning)])
    esr_table, cds = esr.esr_summary(tree), esr.cds_summary(tree)
    observed = table[["model", "prompt", "cds_m", "cds_i", "cds"]].rename(
        columns=lambda c: f"observed_{c}" if c.startswith("cds") else c)
    cds = cds.merge(observed, on=["model", "prompt"])
    if len(labels) == 12:
        claim_table, claim_parts = claims.claims_tables(tree, data["d_m"] / data["d_h"])
    else:
        claim_table = pd.DataFrame(columns=["id", "claim", "source", "paper", "probability", "mcse", "ess", "reading",
                                            "components", "failing"])
        claim_parts = pd.DataFrame(columns=["id", "component", "paper", "probability", "mcse", "reading"])
    claim_table.attrs["components"] = claim_parts  # (tables/claims_components.csv)
    return tree, esr_table, cds, claim_table


def measurement_new(human: pd.DataFrame, new: pd.DataFrame, seed: int, sampler: dict, log):
    """The ESR measurement model fitted to the humans and the new LMs alone (never beside the
    published LLMs' conditions, whose estimates stay those of :func:`measurement`). An LM x
    prompt whose effects are undefined (a cell without a valid rating) is left out, with a line
    saying why (a row of the CDS table with its reason in ``left_out`` and no numbers). Returns
    ``(tree or None, esr, cds)``."""
    sets, left = {}, []
    for (m, p), g in new.groupby(["model", "prompt"], sort=False):
        try:
            esr.llm_statistics(g)
        except ValueError as e:
            log(f"{m} {p}: left out of the measurement model ({e})")
            left.append({"model": m, "prompt": p, "left_out": str(e)})
            continue
        sets[f"{m} {p}"] = g
    columns = ["model", "prompt", "cds_m", "cds_m_lo", "cds_m_hi", "cds_i", "cds_i_lo", "cds_i_hi", "cds", "cds_lo",
               "cds_hi", "left_out"]
    if not sets:
        return (None, pd.DataFrame(columns=["model", "prompt", "kind", "attribute", "esr"]),
                pd.DataFrame(left, columns=columns))
    data, labels = esr.model_data(human, sets)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        tree = esr.fit_measurement(data, labels, seed=seed + 7, **sampler)
    tree.attrs["warnings"] = json.dumps([str(w.message) for w in caught if issubclass(w.category, FitWarning)])
    cds = pd.concat([esr.cds_summary(tree), pd.DataFrame(left, columns=columns)], ignore_index=True)
    return tree, esr.esr_summary(tree), cds.reindex(columns=columns)


def calibration_table(human, llm, conditions, seed: int, n_replicates: int, sampler: dict) -> pd.DataFrame:
    """The measurement model's calibration check and its negative control
    (:func:`models.social_meaning.esr.calibration`), refitted with the NUTS settings ``sampler``
    (the config's ``calibration_sampler``)."""
    data, _ = esr.model_data(human, llm_sets(llm, conditions))
    return esr.calibration(data, n_replicates, seed=seed, **sampler)


def scenario_table(human, llm, conditions, seed: int, n_replicates: int, sampler: dict) -> pd.DataFrame:
    """Coverage of the measurement model's intervals under misspecification (Likert ratings with
    ceilings, effects selected for significance; the model-consistent simulation is
    :func:`calibration_table`'s): :func:`models.social_meaning.esr_checks.summary` of
    :func:`~models.social_meaning.esr_checks.scenarios`, the study's (Gaussian) model only."""
    rows = esr_checks.scenarios(human, llm_sets(llm, conditions), n_replicates, seed, models={"gaussian": None},
                                which=("likert", "winners-curse"), **sampler)
    return esr_checks.summary(rows)


def measurement_work(human, llm, table, conditions, seed: int, measurement_sampler: dict, n_replicates: int,
                     n_misspecified: int, calibration_sampler: dict, log=None) -> dict:
    """What the study computes from the data alone, not from the RSA fits: the ESR measurement model
    (:func:`measurement`), its calibration (:func:`calibration_table`, ``n_replicates`` simulated
    data sets; none at 0) and its coverage under misspecification (:func:`scenario_table`). :func:`run`
    starts it in a worker beside the fits (``executor="process"``), else calls it after them; ``log``
    (a callable taking a line) stamps each step. Returns ``{"tree", "esr", "cds", "claims",
    "claims_components", "calibration" (with ``n_replicates``), "scenarios" (with ``n_misspecified``),
    "timings"}``."""
    say = log or (lambda msg: None)
    timings, out = {}, {}
    t = time.perf_counter()
    say("ESR measurement model: signed ESR, CDS and the paper's claims")
    out["tree"], out["esr"], out["cds"], claim_table = measurement(human, llm, table, conditions, seed,
                                                                   measurement_sampler)
    out["claims"], out["claims_components"] = claim_table, claim_table.attrs["components"]
    timings["measurement_s"] = round(time.perf_counter() - t, 1)
    if n_replicates:
        t = time.perf_counter()
        say(f"ESR calibration: {n_replicates} simulated data sets, and the negative control")
        out["calibration"] = calibration_table(human, llm, conditions, seed, n_replicates, calibration_sampler)
        timings["calibration_s"] = round(time.perf_counter() - t, 1)
    if n_misspecified:
        t = time.perf_counter()
        say(f"ESR coverage under misspecification: Likert ratings and the winner's curse, {n_misspecified} "
            "simulated data sets each")
        out["scenarios"] = scenario_table(human, llm, conditions, seed, n_misspecified, calibration_sampler)
        timings["coverage_s"] = round(time.perf_counter() - t, 1)
    out["timings"] = timings
    return out


def human_checks(trees: dict, baseline, human: pd.DataFrame, n_draws: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Posterior predictive checks of the three human fits with new raters
    (:mod:`models.social_meaning.checks`): the ten effects and the 144 condition means, one block
    of rows per model (column ``model``)."""
    data = encode(human, True)
    eff, cells = [], []
    for kind, tree in human_models(trees, baseline).items():
        e = checks.effect_check(tree, kind, human, data, n_draws, seed)
        c = checks.cell_check(tree, kind, human, data, n_draws, seed)
        e.insert(0, "model", kind)
        c.insert(0, "model", kind)
        eff.append(e)
        cells.append(c)
    return pd.concat(eff, ignore_index=True), pd.concat(cells, ignore_index=True)


def means_against_human_fit(h_eff: dict, human: pd.DataFrame, fig1: pd.DataFrame):
    """The human-fitted model's condition means (median, 94% interval) against each LLM's observed
    means: a comparison of the LLMs with the human fit, not a predictive check of either. Returns
    ``(predicted, observed, ppc)`` (``ppc``: ``tables/ppc_condition_means.csv``, its name kept)."""
    hcells = _cells_frame(human)
    cells = h_eff["cells"]  # [draw, attribute, context, form]
    rows = []
    for ai, a in enumerate(datasets.ATTRIBUTES):
        for ci, c in enumerate(rsa.CONTEXTS):
            for fi, f in enumerate(rsa.FORMS):
                med, lo, hi = _summ(cells[:, ai, ci, fi])
                rows.append(dict(cell=_cell_label(a, c, f), median=med, lo=lo, hi=hi, human_observed=hcells[(a, c, f)]))
    predicted = pd.DataFrame(rows)
    observed = fig1.rename(columns={"llm": "mean"})[["model", "prompt", "cell", "mean"]]
    ppc = observed.merge(predicted, on="cell")
    ppc["inside_94"] = (ppc["mean"] >= ppc["lo"]) & (ppc["mean"] <= ppc["hi"])
    return predicted, observed, ppc


def _posterior_summaries(folder: Path, trees: dict, baseline):
    """What is derived from the posteriors alone, written into a run folder: the parameter and
    chain tables and the forest plot (by :func:`run` and again by :func:`rebuild_report`).
    Returns ``(params, chains)``."""
    from pragmodels import plots

    params = parameter_table(trees)
    params.to_csv(folder / "tables" / "parameters.csv", index=False)
    chains = chain_table({"human baseline": baseline, **trees})
    chains.to_csv(folder / "tables" / "chains.csv", index=False)
    unconverged = [label for label, tree in trees.items() if not converged(tree)]
    _save(plots.forest(trees, list(KEY_PARAMETERS), labels=PARAMETER_LABELS, unconverged=unconverged),
          folder / "figures" / "forest_parameters.png", dpi=110)
    return params, chains


ESR_TITLES = {"observed": "Observed ESR: LLM effect / human effect in the raw ratings (paper Figure 2)",
              "model": "Model-based ESR: LLM effect / human effect, signed, both estimated (measurement model)"}


#: panels of the contrast figure: name -> axis label (the parameters named as everywhere: PARAMETER_LABELS)
CONTRAST_PANELS = {"cds_vs_min": "CDS minus CDS under MIN (same LLM)",
                   "alpha_vs_human": f"{PARAMETER_LABELS['alpha']}:\nLLM minus humans",
                   "cost_vs_human": f"{PARAMETER_LABELS['cost_precise']}:\nLLM minus humans"}


def contrast_figure(esr_tree, trees: dict, seed: int = 0, lm_esr_tree=None):
    """One ArviZ forest of the study's contrasts, a row per LLM x prompt: CDS against the same
    LLM's MIN prompt (the measurement model's joint posterior, so the two CDS share their draws;
    the MIN rows are the reference, with no interval of their own) and the RSA parameters alpha and
    cost against the human fit (independent posteriors, paired by
    :func:`pragmodels.contrast_draws`). Dashed line: no difference. A row is marked unconverged
    (``†``, faded) when its LLM fit, the human fit or the measurement model is below the sampling
    standards. A new LM's CDS comes from its own measurement model (``lm_esr_tree``); a row
    whose CDS or MIN CDS neither model holds has no CDS contrast."""
    import xarray as xr

    from pragmodels import plots

    def stacked(tree):
        return tree["posterior"]["cds"].stack(sample=("chain", "draw")).transpose("sample", "condition")

    sources = [stacked(t) for t in (esr_tree, lm_esr_tree) if t is not None]
    rows = {}
    for label, tree in llm_trees(trees).items():
        m = label.split()[0]
        cds = next((c for c in sources if {label, f"{m} MIN"} <= set(c["condition"].values.tolist())), None)
        d_cds = np.full(sources[0].sizes["sample"], np.nan)
        if cds is not None and label != f"{m} MIN":  # MIN against itself is 0 in every draw: no contrast to draw
            d_cds = (cds.sel(condition=label) - cds.sel(condition=f"{m} MIN")).values
        d_alpha = pm.contrast_draws(tree, trees["human"], "alpha", seed=seed).values
        d_cost = pm.contrast_draws(tree, trees["human"], "cost_precise", seed=seed).values
        n = min(len(d_cds), len(d_alpha))
        post = xr.Dataset({k: (("chain", "draw"), v[None, :n]) for k, v in
                           zip(CONTRAST_PANELS, (d_cds, d_alpha, d_cost))})
        rows[label] = xr.DataTree.from_dict({"posterior": post})
    # a row rests on its LLM fit, the human fit and the measurement model: marked if any is unconverged
    shared_bad = not converged(trees["human"]) or not converged(esr_tree)
    unconverged = [label for label in rows if shared_bad or not converged(trees[label])]
    # a panel with no contrast in any row (a config of MIN prompts only: CDS against MIN) is left out
    panels = [p for p in CONTRAST_PANELS if any(not bool(t["posterior"][p].isnull().all()) for t in rows.values())]
    return plots.forest(rows, panels, labels=CONTRAST_PANELS, reference=0.0, unconverged=unconverged,
                        absent="the reference",
                        title="Contrasts: posterior median, 50% and 94% intervals; dashed: no difference")


def _save(fig, path: Path, dpi: int = 120) -> None:
    """Save a figure and close it (pyplot keeps every figure it made until closed)."""
    import matplotlib.pyplot as plt

    try:
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)


#: the figures drawn from tables (:func:`write_figures`): file -> what it shows
TABLE_FIGURES = {
    "fig1_human_vs_model.png": "paper Figure 1: each LLM's mean ratings against the humans'",
    "fig2_esr_heatmap.png": "paper Figure 2: the observed (plug-in) ESR",
    "esr_model_intervals.png": "the model-based ESR, signed, with intervals and P(sign flip)",
    "loo_compare.png": "the three models of the human ratings by LOO",
    "human_ppc.png": "the posterior predictive check of the three human fits against the human ratings",
    "llm_means_vs_human_model.png": "each LLM's condition means against the human-fitted model's",
}


def write_figures(folder: Path, tables: dict[str, pd.DataFrame]) -> None:
    """Draw :data:`TABLE_FIGURES` into ``folder`` from the run's tables, ``{name: frame}`` (as the
    run writes them: ``fig1`` (Figure 1's cell means), ``esr_observed``, ``esr_model``,
    ``loo_compare`` (index: the models), ``human_ppc_effects``, ``human_ppc_cells``,
    ``human_model_predicted_means``, ``ppc_condition_means``)."""
    from pragmodels import plots

    _save(plots.human_vs_model_means(tables["fig1"]), folder / "fig1_human_vs_model.png")
    esr_plot = tables["esr_observed"][["model", "prompt", "kind", "attribute", "esr"]]
    _save(plots.esr_heatmap(esr_plot, title=ESR_TITLES["observed"]), folder / "fig2_esr_heatmap.png")
    _save(plots.esr_intervals(tables["esr_model"], title=ESR_TITLES["model"]), folder / "esr_model_intervals.png")
    _save(plots.elpd_compare(tables["loo_compare"], title="Three models of the human ratings (PSIS-LOO)"),
          folder / "loo_compare.png")
    effects = tables["human_ppc_effects"].assign(label=lambda d: d["kind"] + ": " + d["attribute"])
    _save(plots.predictive_check(effects, tables["human_ppc_cells"], statistic_label="effect (rating points)",
                                 cell_label="condition mean",
                                 title="Posterior predictive check of the three human fits against the human ratings "
                                       "(replicated with new raters): the ten effects, and the 144 scenario x "
                                       "context x form x attribute means"),
          folder / "human_ppc.png", dpi=110)
    observed = tables["ppc_condition_means"][["model", "prompt", "cell", "mean"]]
    _save(plots.means_against_model(tables["human_model_predicted_means"], observed,
                                    title="Each LLM's observed condition means against the condition means of the RSA "
                                          "model fitted to the humans (a comparison, not a check of either fit)"),
          folder / "llm_means_vs_human_model.png", dpi=110)


#: the tables :func:`write_figures` reads, by the names it takes them under
FIGURE_TABLES = ("esr_observed", "esr_model", "loo_compare", "human_ppc_effects", "human_ppc_cells",
                 "human_model_predicted_means", "ppc_condition_means")


def redraw_figures(run_dir: str | Path) -> None:
    """Draw the figures that come from tables again (:data:`TABLE_FIGURES`), from a run folder's
    ``tables/*.csv`` and the raw data (Figure 1's cell means), without refitting. The forest plot
    needs the posteriors (:func:`rebuild_report` redraws it)."""
    run_dir = Path(run_dir)
    tables = {name: pd.read_csv(run_dir / "tables" / f"{name}.csv", index_col=0 if name == "loo_compare" else None)
              for name in FIGURE_TABLES}
    _, tables["fig1"] = observed_comparisons(datasets.load_social_human(), datasets.load_social_llm())
    with lock_folder(run_dir):
        write_figures(run_dir / "figures", tables)


def write_tables(config: dict, out: str | Path) -> None:
    """``pragmodels tables social_meaning``: write Tables 2-4 (``out``) and the same with the
    paper's values beside them (``<out>_with_paper.csv``), and print the comparison."""
    table = reproduction_table()
    out = Path(out)
    atomic_write(out, lambda tmp: table[TABLE_COLUMNS].to_csv(tmp, index=False, float_format="%.6f"))
    full = out.with_name(out.stem + "_with_paper.csv")
    atomic_write(full, lambda tmp: table.to_csv(tmp, index=False, float_format="%.6f"))
    print(format_side_by_side(table))
    disc = discrepancies(table)
    print(f"\n{len(disc)} cell(s) differ from the paper by more than 0.001:")
    if len(disc):
        print(disc.to_string(index=False))
    print(f"\nwrote {out} ({', '.join(TABLE_COLUMNS)}) and {full} (adds ccc_lin, rmse_individual = Table 4, "
          "invalid counts and the paper's values)")


def run(config: dict, out_dir: Path, mode: str, progress: bool, record: Run) -> None:
    """The study's entry point (``"study": "models/social_meaning/study.py:run"``), called by
    :func:`pragmodels.runs.study.run_study` with the config, the staging folder to write into, the mode
    (``quick``/``full``: picks ``config["sampler"][mode]``, ``config["measurement_sampler"][mode]``,
    ``config["calibration_replicates"][mode]`` and ``config["misspecification_replicates"][mode]``), whether to show progress bars, and the open run
    to record fits and inputs in. The config's keys are those of :class:`Config`: the generic ones
    (``name``, ``study``, ``tables``, ``sampler`` per mode, ``seed``) and ``n_draws``,
    ``motive_prior``, ``conditions`` (a list of ``[model, prompt]`` pairs), ``executor``
    (``"sequential"``, the default, or ``"process"``: :func:`pragmodels.inference.fit_many`), the
    measurement model's and its calibration's settings."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}.")
    cfg = validate_config(Config, config, what="study config")  # as the CLI did (a direct caller too)
    seed, motive_prior, conditions, executor = cfg.seed, cfg.motive_prior, cfg.conditions, cfg.executor
    sampler = dict(config["sampler"][mode])
    measurement_sampler = dict(config["measurement_sampler"][mode])
    n_replicates = getattr(cfg.calibration_replicates, mode)
    n_misspecified = getattr(cfg.misspecification_replicates, mode)
    folder = StudyFolder(record)
    stamp, tables, figures = folder.log, folder.tables, folder.figures
    log = lambda msg: print(msg, flush=True)  # noqa: E731 (tables printed as they are)
    n_draws = min(cfg.n_draws, *(h["num_samples"] * h["num_chains"] for h in split_sampler(sampler)))
    record.note("n_draws", n_draws)
    record.note("motive_prior", motive_prior)
    stamp("loading data (verified against the registry's sha256)")
    human, llm = datasets.load_social_human(), datasets.load_social_llm()
    folder.record_dataset("social_human", *(f"social_llm_{p}" for p in datasets.PROMPTS))
    new, lm_info = None, {}
    if cfg.lms:  # config `lms`: every entry checked against its files before any fit; beside the three, not mixed in
        new, lm_info = new_lms.read_checked(cfg.lms, record=folder.record_file)
        record.note("lms", {name: {"identity": i["identity"], "settings": i["settings"], "cells": i["cells"]}
                            for name, i in lm_info.items()})
        for name, g in new.groupby("model", sort=False):
            stamp(f"read the elicited ratings of {name} (prompts {', '.join(lm_info[name]['prompts'])}): {len(g)} "
                  f"records, {int((~g['valid']).sum())} invalid; identity {lm_info[name]['identity']}")

    stamp("reproducing Tables 2-4")
    table = reproduction_table(human, llm)
    disc = discrepancies(table)
    table.to_csv(tables / "reproduction.csv", index=False)
    disc.to_csv(tables / "discrepancies.csv", index=False)
    log(format_side_by_side(table))
    observed_esr, fig1 = observed_comparisons(human, llm)
    observed_esr.to_csv(tables / "esr_observed.csv", index=False)
    if new is not None:  # the new LMs' condition means beside the published LLMs' in the figures that show them
        hcells = _cells_frame(human)  # (first: the last panel carries the legend of every prompt)
        fig1 = pd.concat([pd.DataFrame(
            [dict(model=m, prompt=p, cell=_cell_label(*k), human=hcells[k], llm=v)
             for (m, p), g in new.groupby(["model", "prompt"], sort=False) for k, v in _cells_frame(g).items()]), fig1],
            ignore_index=True)

    if new is not None:
        new_lms.metrics_table(human, new).to_csv(tables / "lm_metrics.csv", index=False)
        new_lms.answer_table(new, lm_info).to_csv(tables / "lm_answers.csv", index=False)
    args = (human, llm, table, conditions, seed, measurement_sampler, n_replicates, n_misspecified,
            config["calibration_sampler"])
    with contextlib.ExitStack() as stack:
        beside = None
        if executor == "process":  # it needs no RSA fit: run beside the pool rather than after it on one core
            stamp(f"ESR measurement model{', its calibration' if n_replicates else ''}"
                  f"{' and its coverage check' if n_misspecified else ''}: started in a worker beside the fits")
            beside = stack.enter_context(start_in_worker(measurement_work, *args))
        trees, baseline, cmp = fit_all(human, llm, seed, sampler, progress, motive_prior, conditions, stamp, log,
                                       executor=executor, new=new, rater_nodes=cfg.rater_nodes, resize=mode == "full")
        done = None
        if beside is not None:
            if not beside.done():
                stamp("waiting for the ESR measurement model's worker")
            try:
                done = beside.result()
            except ChildProcessError as e:  # the worker itself died (e.g. out of memory): do it here instead
                log(f"the ESR measurement model's worker failed ({e}); running it in this process")
    cmp.to_csv(tables / "loo_compare.csv")
    contrasts(trees).to_csv(tables / "contrasts.csv", index=False)

    stamp("posterior predictive checks of the three human models (new raters)")
    ppc_effects, ppc_cells = human_checks(trees, baseline, human, n_draws, seed)
    ppc_effects.to_csv(tables / "human_ppc_effects.csv", index=False)
    ppc_cells.to_csv(tables / "human_ppc_cells.csv", index=False)

    if done is None:
        done = measurement_work(*args, log=stamp)
    else:
        log(f"ESR measurement model and its checks (in their worker, beside the fits): {done['timings']}")
    esr_tree = done["tree"]
    done["esr"].to_csv(tables / "esr_model.csv", index=False)
    done["cds"].to_csv(tables / "cds_model.csv", index=False)
    done["claims"].to_csv(tables / "claims.csv", index=False)
    done["claims_components"].to_csv(tables / "claims_components.csv", index=False)
    folder.save_fit("esr measurement", esr_tree, "esr_measurement.nc")
    lm_esr_tree = None
    if new is not None:
        stamp("ESR measurement model of the new LMs (fitted to the humans and them alone)")
        lm_esr_tree, lm_esr, lm_cds = measurement_new(human, new, seed, measurement_sampler, log)
        lm_esr.to_csv(tables / "esr_model_lms.csv", index=False)
        lm_cds.to_csv(tables / "cds_model_lms.csv", index=False)
        if lm_esr_tree is not None:
            folder.save_fit("esr measurement (new LMs)", lm_esr_tree, "esr_measurement_lms.nc")
            from pragmodels import plots

            _save(plots.esr_intervals(lm_esr, title="The new LMs' m" + ESR_TITLES["model"][1:]),
                  figures / "esr_model_intervals_lms.png")
    if n_replicates:
        done["calibration"].to_csv(tables / "esr_calibration.csv", index=False)
    if n_misspecified:
        done["scenarios"].to_csv(tables / "esr_calibration_scenarios.csv", index=False)

    stamp("each LLM's observed condition means against the human-fitted model's")
    predicted, _, ppc = means_against_human_fit(human_implied_effects(trees, n_draws, seed), human, fig1)
    ppc.to_csv(tables / "ppc_condition_means.csv", index=False)
    predicted.to_csv(tables / "human_model_predicted_means.csv", index=False)

    stamp("figures")
    write_figures(figures, dict(fig1=fig1, esr_observed=observed_esr, esr_model=done["esr"], loo_compare=cmp,
                                human_ppc_effects=ppc_effects, human_ppc_cells=ppc_cells,
                                human_model_predicted_means=predicted, ppc_condition_means=ppc))
    if len(done["claims"]) or new is not None:
        _save(contrast_figure(esr_tree, trees, lm_esr_tree=lm_esr_tree), figures / "contrasts.png", dpi=110)

    stamp("writing posteriors (netCDF)")
    folder.save_fit("human baseline", baseline, "human_baseline.nc")
    for label, tree in trees.items():
        folder.save_fit(label, tree, f"{label.replace(' ', '_')}_rsa.nc")

    manifest = record.finish()  # run.json: the report below is rendered from it
    write_report(folder.path, trees=trees, baseline=baseline)
    stamp(f"done (wall time {manifest['wall_time_s']:.0f} s); swapping the run folder into place")


def _load_trees(run_dir: Path, manifest: dict) -> tuple[dict, object]:
    """The fits of a run folder, in the manifest's order: ``(trees, baseline)``."""
    fits = manifest["fits"]
    baseline = pm.load_netcdf(run_dir / fits["human baseline"]["file"])
    trees = {label: pm.load_netcdf(run_dir / f["file"]) for label, f in fits.items()
             if label != "human baseline" and not label.startswith("esr measurement")}
    return trees, baseline


def write_report(run_dir: str | Path, *, trees: dict | None = None, baseline=None, rebuilt: bool = False) -> Path:
    """Render ``report.md`` of a run folder from its ``run.json`` (mode, sampler settings, wall
    time, the fits), its saved tables and its posteriors (``trees``/``baseline`` when already in
    memory); rewrites ``tables/parameters.csv``, ``tables/chains.csv`` and the forest plot, the
    figures drawn from the posteriors alone (re-rendered, ``rebuilt``: also the contrast figure,
    from the saved measurement-model posterior). A quick run's report says what it checked, that
    the pipeline runs, and nothing else (:func:`models.social_meaning.report.quick_markdown`); a
    full run's is the analysis (:func:`analysis_markdown`)."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    if trees is None or baseline is None:
        trees, baseline = _load_trees(run_dir, manifest)
    tables = run_dir / "tables"
    params, chains = _posterior_summaries(run_dir, trees, baseline)
    esr_file = manifest["fits"].get("esr measurement", {}).get("file")
    if rebuilt and esr_file and (run_dir / esr_file).exists() and (tables / "contrasts.csv").exists():
        lm_file = manifest["fits"].get("esr measurement (new LMs)", {}).get("file")
        _save(contrast_figure(pm.load_netcdf(run_dir / esr_file), trees,
                              lm_esr_tree=pm.load_netcdf(run_dir / lm_file) if lm_file else None),
              run_dir / "figures" / "contrasts.png", dpi=110)
    if manifest["mode"] == "quick":
        report = quick_markdown(run_dir, manifest)
    else:
        report = analysis_markdown(run_dir, trees, baseline, params, chains)
    if (tables / "lm_answers.csv").exists():  # a config with `lms`
        report += new_lms.section(tables, manifest["mode"] == "quick", list(manifest["notes"].get("lms", {})))
    if rebuilt:
        report += (f"\n_Report re-rendered from the saved run by `rebuild_report` (pragmodels {pm.__version__}); "
                   "the fits themselves are unchanged._\n")
    atomic_write(run_dir / "report.md", lambda tmp: Path(tmp).write_text(report))
    return run_dir / "report.md"


def analysis_markdown(run_dir: str | Path, trees: dict, baseline, params: pd.DataFrame, chains: pd.DataFrame) -> str:
    """The analysis a full run's ``report.md`` holds, from a run folder's ``run.json`` and tables,
    its fits and their parameter and chain tables (:func:`write_report` renders it for a full run
    only: a quick run's numbers are no estimates)."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    tables = run_dir / "tables"
    read = lambda name, **kw: pd.read_csv(tables / name, **kw) if (tables / name).exists() else None
    report = report_markdown(manifest["mode"], manifest["sampler"], read("reproduction.csv"), read("discrepancies.csv"),
                             read("loo_compare.csv", index_col=0), trees, baseline, params, manifest["wall_time_s"],
                             chains, ppc_effects=read("human_ppc_effects.csv"), ppc_cells=read("human_ppc_cells.csv"),
                             cds=read("cds_model.csv"), esr=read("esr_model.csv"), claims=read("claims.csv"),
                             claim_parts=read("claims_components.csv"), observed=read("esr_observed.csv"),
                             ppc=read("ppc_condition_means.csv"), calibration=read("esr_calibration.csv"),
                             rater_nodes=manifest["config"].get("rater_nodes", rsa.RATER_NODES))
    if (tables / "contrasts.csv").exists():
        report += contrast_section(pd.read_csv(tables / "contrasts.csv"), trees)
    if (tables / "esr_calibration_scenarios.csv").exists():
        report += esr_checks.report_section(pd.read_csv(tables / "esr_calibration_scenarios.csv"))
    else:
        report += esr_checks.elsewhere_section()
    return report


def rebuild_report(run_dir: str | Path) -> Path:
    """Re-render ``report.md`` of a finished run folder from its ``run.json``, saved tables and
    posteriors (no refitting), e.g. after the report's wording changed; see :func:`write_report`.
    A folder without ``run.json`` (written before run folders had manifests, such as the committed
    ``fits/social_meaning/full/``) cannot be re-rendered: rerun the study. Holds the folder's lock,
    so it cannot interleave with a run swapping a new folder in."""
    with lock_folder(run_dir):
        return write_report(run_dir, rebuilt=True)
