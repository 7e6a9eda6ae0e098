"""The social-meaning study end to end: reproduction tables, RSA and baseline fits to humans and
to each LLM x prompt, model-implied ESR/CDS with credible intervals, figures and a report.

The config's schema is :class:`Config` (validated before the run; ``schemas/social_meaning.schema.json``).
Entry points named by ``fits/social_meaning.json``: :func:`run` (``"study"``; called by
``pragmodels run`` through :func:`pragmodels.runs.run_study`) and :func:`write_tables`
(``"tables"``; ``pragmodels tables social_meaning``). :func:`run_study` runs it from Python,
:func:`rebuild_report` re-renders a finished run's report from its ``run.json``.

Layering: imports :mod:`models.social_meaning`, :mod:`models.social_meaning_paper` and the
pragmodels public API (datasets, metrics, fit, plots, results_io, runs).
"""

from __future__ import annotations

import functools
import json
import time
import warnings
from pathlib import Path
from typing import Annotated, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pydantic
from pydantic import Field

import pragmodels as pm
from pragmodels import datasets, metrics
from pragmodels.config_schema import ModeSamplers, SamplerSettings, StudyConfig, validate_config
from pragmodels.results_io import atomic_write, save_netcdf
from pragmodels.runs import Run, lock_folder, open_run, read_manifest
from models import social_meaning as sm
from models import social_meaning_paper as paper
from models.social_meaning_report import (KEY_PARAMETERS, _diag_short, chain_table, converged,  # noqa: F401
                                          parameter_table, render_report)

TABLE_COLUMNS = ["model", "prompt", "spearman", "ccc", "rmse", "cds_m", "cds_i", "cds", "das", "iss"]
SCENARIOS = ("bicycle", "cinema", "conference", "house", "office", "pasta")
SAMPLER = {
    # quick: a smoke run for tests and CI (not for inference: short chains, capped trees)
    "quick": dict(num_warmup=50, num_samples=50, num_chains=2, max_tree_depth=5, human=dict(num_samples=60)),
    # full: chains start spread over the best of 16 optimised starts (pragmodels.multistart); the
    # slower-mixing human fits draw more
    "full": dict(num_warmup=800, num_samples=600, num_chains=4, target_accept=0.9, max_tree_depth=8, init="optimize",
                 human=dict(num_samples=1500)),
}


# ------------------------------------------------------------------ the config's schema
class StudySampler(SamplerSettings):
    """NUTS settings of one mode; ``human`` overrides some of them for the two human fits."""

    human: SamplerSettings | None = Field(None, description="overrides for the two human fits (which mix "
                                                            "more slowly), e.g. more num_samples")


class Config(StudyConfig):
    """``fits/social_meaning.json``: the generic study keys (:class:`pragmodels.config_schema.StudyConfig`)
    and this study's own. Validated by :func:`pragmodels.runs.load_study_config` before the run."""

    sampler: ModeSamplers[StudySampler] = Field(description="NUTS settings per mode")
    motive_prior: Literal[sm.MOTIVE_PRIORS] = Field("uniform", description="the RSA fits' motive prior "
                                                                           "(models/social_meaning.py)")
    n_draws: int = Field(400, ge=1, description="posterior draws for the model-implied ESR and CDS")
    conditions: list[Annotated[tuple[Literal[datasets.LLMS], Literal[datasets.PROMPTS]], pydantic.Strict(False)]] | None = (
        Field(None, description="restrict the LLM fits to some [model, prompt] pairs (default: all 12)"))
    executor: Literal["sequential", "process"] = Field("sequential", description="how the 14 fits run "
                                                                                 "(pragmodels.fit_many)")


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
    cond = sm.condition_index(df.scenario.map(scen).to_numpy(), (df.context == "high").to_numpy(int),
                              (df.form == "approx").to_numpy(int), df.attribute.map(att).to_numpy())
    data = dict(condition=cond.astype(np.int32), rating=df.rating.to_numpy(np.int32))
    if participants:
        codes, uniq = pd.factorize(df.participant_id, sort=True)
        data.update(participant=codes.astype(np.int32), n_participants=len(uniq))
    return data


COORDS = {"attribute": list(datasets.ATTRIBUTES), "scenario": list(SCENARIOS), "feature": list(sm.FEATURES),
          "effect": ["form", "context", "form_x_context"], "free_motive": list(sm.MOTIVES[1:]),
          "cutpoint": list(range(1, sm.N_RATING)), "gap": list(range(1, sm.N_RATING - 1))}


def fit_spec(name: str, kind: str, df: pd.DataFrame, participants: bool, seed: int, sampler: dict,
             motive_prior: str = "uniform", priors: dict | None = None) -> pm.FitSpec:
    """A :class:`pragmodels.FitSpec` for the RSA (``kind="rsa"``, with ``motive_prior``) or the
    baseline model on a ratings frame (``participants``: with rater effects, i.e. the human data; a
    ``"human"`` entry of ``sampler`` then applies, :func:`split_sampler`). ``priors`` overrides the
    model's default priors by parameter name (names the fitted model does not declare are left out,
    so one mapping serves the RSA and baseline fits, with and without raters); the fit records the
    priors it sampled."""
    data = encode(df, participants)
    if kind == "rsa":
        model = sm.rsa_model
        data["motive_prior"] = sm.check_motive_prior(motive_prior)  # static: in the data hash and the cache key
    elif kind == "baseline":
        model = sm.baseline_model
    else:
        raise ValueError(f"kind must be 'rsa' or 'baseline'; got {kind!r}.")
    settings = split_sampler(sampler)[0 if participants else 1]  # a "human" entry applies to the human fits
    declared = pm.inspect_model(model, data)
    own = {k: v for k, v in (priors or {}).items() if k in declared.priors or k in declared.fixed}
    settings = {"chain_method": None, **settings, "coords": dict(COORDS)}
    return pm.FitSpec(name, model, data, priors=own or None, sampler=settings, seed=seed)


def _annotate(tree, kind: str, motive_prior: str, warned: list[str]):
    tree.attrs["motive_prior"] = motive_prior if kind == "rsa" else "n/a"
    tree.attrs["warnings"] = json.dumps(list(warned))
    return tree


def fit_one(kind: str, df: pd.DataFrame, participants: bool, seed: int, sampler: dict, progress: bool,
            motive_prior: str = "uniform", priors: dict | None = None):
    """Fit one model (:func:`fit_spec`) in this process; the fit's FitWarnings are kept in
    ``tree.attrs["warnings"]``."""
    spec = fit_spec("fit", kind, df, participants, seed, sampler, motive_prior, priors)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pm.diagnostics.FitWarning)
        tree = pm.fit(spec.seed, spec.model, spec.data, progress_bar=progress, priors=spec.priors, **spec.sampler)
    return _annotate(tree, kind, motive_prior,
                     [str(w.message) for w in caught if issubclass(w.category, pm.diagnostics.FitWarning)])


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


_IMPLIED = {kind: jax.jit(jax.vmap(functools.partial(sm.implied_cell_means, kind))) for kind in ("rsa", "baseline")}


def implied_means(tree, kind: str, n_draws: int, seed: int = 0) -> np.ndarray:
    """Model-implied cell means, shape ``[draw, attribute, scenario, context, form]``."""
    draws = _draws(tree, n_draws, seed)
    keep = ("alpha", "cost_precise", "theta", "psi", "beta", "b", "level", "cutpoints", "noise", "zeta", "lapse",
            "sigma_participant")
    stacked = {k: jnp.stack([d[k] for d in draws]) for k in draws[0] if k in keep}
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


def model_esr(h_eff: dict, m_eff: dict, label: tuple) -> tuple[pd.DataFrame, dict]:
    """ESR per significant effect (median, 94% interval) and CDS_m/CDS_i/CDS posteriors.

    ESR draws pair the LLM fit's draws with independent draws of the human fit, so both
    posteriors' uncertainty propagates."""
    n = min(len(h_eff["main"]), len(m_eff["main"]))
    att = list(datasets.ATTRIBUTES)
    rows, dev = [], {"main": [], "interaction": []}
    for kind, sig in (("main", metrics.SIGNIFICANT_MAIN), ("interaction", metrics.SIGNIFICANT_INTERACTION)):
        for a in sig:
            j = att.index(a)
            dh = np.abs(h_eff[kind][:n, j])
            # a draw in which the human model implies no effect at all leaves ESR undefined
            esr = np.where(dh > 1e-9, np.abs(m_eff[kind][:n, j]) / np.where(dh > 1e-9, dh, 1.0), np.nan)
            dev[kind].append(np.abs(esr - 1))
            med, lo, hi = _summ(esr)
            rows.append(dict(model=label[0], prompt=label[1], kind=kind, attribute=a, esr=med, lo=lo, hi=hi))
    cds_m, cds_i = np.mean(dev["main"], 0), np.mean(dev["interaction"], 0)
    cds = {"cds_m": cds_m, "cds_i": cds_i, "cds": (cds_m + cds_i) / 2}
    return pd.DataFrame(rows), {k: _summ(v) for k, v in cds.items()}


def _cells_frame(df: pd.DataFrame) -> pd.Series:
    return metrics.cell_means(metrics.valid_ratings(df).frame)


def _cell_label(a, c, f):
    return f"{a}|{c}|{f}"


def observed_comparisons(human: pd.DataFrame, llm: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Observed ESR per LLM x prompt (Figure 2) and human vs LLM condition means (Figure 1)."""
    esr, fig1_rows = [], []
    hcells = _cells_frame(human)
    for (m, p), g in llm.groupby(["model", "prompt"], sort=False):
        e = metrics.esr_table(human, metrics.valid_ratings(g).frame).reset_index()
        e.insert(0, "prompt", p)
        e.insert(0, "model", m)
        esr.append(e)
        mc = _cells_frame(g)
        fig1_rows += [dict(model=m, prompt=p, cell=_cell_label(*k), human=hcells[k], llm=mc[k]) for k in hcells.index]
    return pd.concat(esr, ignore_index=True), pd.DataFrame(fig1_rows)


def split_sampler(sampler: dict) -> tuple[dict, dict]:
    """NUTS settings for the human fits and for the LLM fits: a ``"human"`` entry in ``sampler``
    overrides settings for the two human fits only (their posteriors mix more slowly: 362 rater
    effects and six scenario effects per attribute against 13,000 ratings)."""
    base = {k: v for k, v in sampler.items() if k != "human"}
    extra = sampler.get("human", {})
    if not isinstance(extra, dict):
        raise ValueError(f"sampler['human'] must be a dict of NUTS settings; got {extra!r}.")
    return {**base, **extra}, base


def fit_all(human, llm, seed: int, sampler: dict, progress: bool, motive_prior: str, conditions, stamp, log,
            executor="sequential"):
    """The RSA model and the baseline fitted to the humans (compared by LOO), and the RSA model
    fitted to each LLM x prompt, all 14 through :func:`pragmodels.fit_many` (``executor``:
    ``"sequential"``, ``"process"`` or a Dask ``Client``). Returns ``(trees, baseline,
    loo_compare)``; ``trees["human"]`` first, then ``trees["<model> <prompt>"]``. A failed fit
    does not stop the others; the study raises at the end, naming every failure."""
    from arviz_stats import compare

    specs = [fit_spec("human_rsa", "rsa", human, True, seed, sampler, motive_prior),
             fit_spec("human_baseline", "baseline", human, True, seed + 1, sampler)]
    labels, kinds, invalid = {"human_rsa": "human", "human_baseline": "baseline"}, {}, {}
    kinds.update(human_rsa="rsa", human_baseline="baseline")
    wanted = None if conditions is None else set(map(tuple, conditions))
    for i, m in enumerate(datasets.LLMS):
        for j, p in enumerate(datasets.PROMPTS):
            if wanted is not None and (m, p) not in wanted:
                continue
            v = metrics.valid_ratings(llm[(llm.model == m) & (llm.prompt == p)])
            name = f"{m}_{p}_rsa"
            specs.append(fit_spec(name, "rsa", v.frame, False, seed + 10 + 4 * i + j, sampler, motive_prior))
            labels[name], kinds[name], invalid[name] = f"{m} {p}", "rsa", v.n_invalid
    stamp(f"fitting {len(specs)} models with pragmodels.fit_many ({executor if isinstance(executor, str) else 'dask'}; "
          f"NUTS {split_sampler(sampler)[0]} for the humans; motive prior {motive_prior})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.diagnostics.FitWarning)  # kept per fit in tree.attrs["warnings"]
        result = pm.fit_many(specs, executor=executor, progress=progress)
    result.raise_on_error()
    trees = {}
    for outcome in result:
        tree = _annotate(result.trees[outcome.name], kinds[outcome.name], motive_prior, outcome.warnings)
        if outcome.name in invalid:
            tree.attrs["n_invalid_excluded"] = invalid[outcome.name]
        log(f"{labels[outcome.name]}: " + _diag_short(tree))
        trees[labels[outcome.name]] = tree
    baseline = trees.pop("baseline")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare({"rsa": trees["human"], "baseline": baseline})
    return trees, baseline, cmp


#: parameters compared between each LLM fit and the human fit (pm.contrast_table)
CONTRASTED = ("alpha", "cost_precise", "noise", "lapse", "theta_mu")


def contrast_section(table: pd.DataFrame, trees: dict) -> str:
    """The report's section on :func:`contrasts`: per LLM fit, ``P(LLM > human)`` for each
    contrasted parameter (``†``: the LLM fit did not converge, so its row is not to be read)."""
    lines = ["", "## Posterior contrasts with the human fit", "",
             "P(parameter of the LLM fit > that of the human fit), from independent draws of the two posteriors "
             "(`pm.contrast_table`); differences with 94% intervals are in `tables/contrasts.csv`.", "",
             "| fit | " + " | ".join(CONTRASTED) + " |", "|---|" + "---|" * len(CONTRASTED)]
    for fit, g in table.groupby("fit", sort=False):
        p = dict(zip(g.parameter, g.p_greater))
        mark = "" if fit not in trees or converged(trees[fit]) else " †"
        lines.append(f"| {fit}{mark} | " + " | ".join(f"{p[v]:.2f}" if v in p else "–" for v in CONTRASTED) + " |")
    return "\n".join(lines) + "\n"


def contrasts(trees: dict) -> pd.DataFrame:
    """Each LLM fit against the human fit: ``P(LLM > human)`` and the difference with its 94%
    interval for :data:`CONTRASTED` (:func:`pragmodels.contrast_table`)."""
    return pm.contrast_table(trees, list(CONTRASTED), reference="human", prob=0.94)


def model_implied(trees: dict, table: pd.DataFrame, n_draws: int, seed: int):
    """Model-implied effects of the human fit, and each LLM fit's implied ESR and CDS against it.
    Returns ``(human_effects, esr_model, cds_model)``."""
    h_eff = implied_effects(implied_means(trees["human"], "rsa", n_draws, seed))
    esr_rows, cds_rows = [], []
    for label, tree in trees.items():
        if label == "human":
            continue
        m, p = label.split()
        eff = implied_effects(implied_means(tree, "rsa", n_draws, seed + 1))
        e, c = model_esr(h_eff, eff, (m, p))
        esr_rows.append(e)
        cds_rows.append(dict(model=m, prompt=p, **{f"{k}_{s}": v[i] for k, v in c.items()
                                                  for i, s in enumerate(("median", "lo", "hi"))}))
    observed = table[["model", "prompt", "cds_m", "cds_i", "cds"]].rename(
        columns=lambda c: f"observed_{c}" if c.startswith("cds") else c)
    return h_eff, pd.concat(esr_rows, ignore_index=True), pd.DataFrame(cds_rows).merge(observed, on=["model", "prompt"])


def predictive_check(h_eff: dict, human: pd.DataFrame, fig1: pd.DataFrame):
    """The human-fitted model's condition means (median, 94% interval) against each LLM's observed
    means. Returns ``(predicted, observed, ppc)``."""
    hcells = _cells_frame(human)
    cells = h_eff["cells"]  # [draw, attribute, context, form]
    rows = []
    for ai, a in enumerate(datasets.ATTRIBUTES):
        for ci, c in enumerate(sm.CONTEXTS):
            for fi, f in enumerate(sm.FORMS):
                med, lo, hi = _summ(cells[:, ai, ci, fi])
                rows.append(dict(cell=_cell_label(a, c, f), median=med, lo=lo, hi=hi, human_observed=hcells[(a, c, f)]))
    predicted = pd.DataFrame(rows)
    observed = fig1.rename(columns={"llm": "mean"})[["model", "prompt", "cell", "mean"]]
    ppc = observed.merge(predicted, on="cell")
    ppc["inside_94"] = (ppc["mean"] >= ppc["lo"]) & (ppc["mean"] <= ppc["hi"])
    return predicted, observed, ppc


def _posterior_summaries(folder: Path, trees: dict, baseline):
    """What is derived from the posteriors alone, written into a run folder: the parameter and
    chain tables and the forest plot (by :func:`run_study` and again by :func:`rebuild_report`).
    Returns ``(params, chains)``."""
    from pragmodels import plots

    params = parameter_table(trees)
    params.to_csv(folder / "tables" / "parameters.csv", index=False)
    chains = chain_table({"human baseline": baseline, **trees})
    chains.to_csv(folder / "tables" / "chains.csv", index=False)
    _save(plots.forest(trees, list(KEY_PARAMETERS), labels=FOREST_LABELS), folder / "figures" / "forest_parameters.png",
          dpi=110)
    return params, chains


#: the forest plot's axis labels (one panel per key parameter)
FOREST_LABELS = {"alpha": "alpha (speaker rationality)", "cost_precise": "cost of the precise form",
                 "noise": "response noise (rating points)", "lapse": "lapse rate",
                 "theta_mu": "theta_mu (log-odds: speaker knows)"}
ESR_TITLES = {"observed": "Observed ESR: LLM effect / human effect in the raw ratings (paper Figure 2)",
              "model": "Model-implied ESR: posterior median of LLM-fit effect / human-fit effect (RSA fits)"}


def _save(fig, path: Path, dpi: int = 120) -> None:
    """Save a figure and close it (pyplot keeps every figure it made until closed)."""
    import matplotlib.pyplot as plt

    try:
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    finally:
        plt.close(fig)


def _write_figures(folder: Path, fig1, observed_esr, esr_model, predicted, observed) -> None:
    """The figures drawn from tables (``redraw_figures`` draws them again from a run folder's CSVs)."""
    from pragmodels import plots

    _save(plots.human_vs_model_means(fig1), folder / "fig1_human_vs_model.png")
    esr_plot = observed_esr[["model", "prompt", "kind", "attribute", "esr"]]
    _save(plots.esr_heatmap(esr_plot, title=ESR_TITLES["observed"]), folder / "fig2_esr_heatmap.png")
    _save(plots.esr_heatmap(esr_model, title=ESR_TITLES["model"]), folder / "esr_heatmap_model_implied.png")
    _save(plots.ppc_condition_means(predicted, observed), folder / "ppc_condition_means.png", dpi=110)


def redraw_figures(run_dir: str | Path) -> None:
    """Draw the figures that come from tables again, from a run folder's ``tables/*.csv`` and the
    raw data (Figure 1's cell means), without refitting: ``fig1_human_vs_model``, ``fig2_esr_heatmap``,
    ``esr_heatmap_model_implied`` and ``ppc_condition_means``. The forest plot needs the posteriors
    (:func:`rebuild_report` redraws it)."""
    run_dir = Path(run_dir)
    tables = run_dir / "tables"
    _, fig1 = observed_comparisons(datasets.load_social_human(), datasets.load_social_llm())
    ppc = pd.read_csv(tables / "ppc_condition_means.csv")
    with lock_folder(run_dir):
        _write_figures(run_dir / "figures", fig1, pd.read_csv(tables / "esr_observed.csv"),
                       pd.read_csv(tables / "esr_model.csv"), pd.read_csv(tables / "human_model_predicted_means.csv"),
                       ppc[["model", "prompt", "cell", "mean"]])


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
    """The study's entry point (``"study": "models/social_meaning_study.py:run"``), called by
    :func:`pragmodels.runs.run_study` with the config, the staging folder to write into, the mode
    (``quick``/``full``: picks ``config["sampler"][mode]``), whether to show progress bars, and the
    open run to record fits and inputs in. The config's keys are those of :class:`Config`: the
    generic ones (``name``, ``study``, ``tables``, ``sampler`` per mode, ``seed``) and ``n_draws``,
    ``motive_prior``, ``conditions`` (a list of ``[model, prompt]`` pairs), ``executor``
    (``"sequential"``, the default, or ``"process"``: :func:`pragmodels.fit_many`)."""
    if mode not in SAMPLER:
        raise ValueError(f"mode must be one of {sorted(SAMPLER)}; got {mode!r}.")
    cfg = validate_config(Config, config, what="study config")  # as the CLI did (a direct caller too)
    _run_into(Path(out_dir), record, mode=mode, seed=cfg.seed, n_draws=cfg.n_draws, progress=progress, log=None,
              sampler=config["sampler"][mode], conditions=cfg.conditions, motive_prior=cfg.motive_prior,
              executor=cfg.executor)


def run_study(out_dir: str | Path, mode: str = "full", seed: int = 20261130, n_draws: int = 400,
              progress: bool = False, log=None, sampler: dict | None = None, conditions=None,
              motive_prior: str = "uniform") -> Path:
    """Run the whole study into the run folder ``out_dir`` (a :mod:`pragmodels.runs` folder:
    written aside, swapped in only when finished, with its ``run.json``).

    ``sampler`` overrides the mode's NUTS settings; ``conditions`` restricts the LLM fits to
    some ``(model, prompt)`` pairs (default: all 12); ``motive_prior`` is passed to every RSA
    fit (:func:`models.social_meaning.rsa_model`)."""
    if mode not in SAMPLER:
        raise ValueError(f"mode must be one of {sorted(SAMPLER)}; got {mode!r}.")
    sampler = dict(sampler or SAMPLER[mode])
    config = dict(name="social_meaning", seed=seed, n_draws=n_draws, sampler={mode: sampler},
                  motive_prior=motive_prior, conditions=None if conditions is None else [list(c) for c in conditions])
    with open_run(out_dir, mode=mode, entry_point=f"{__name__}.run_study", config=config, sampler=sampler,
                  seed=seed, log=log) as record:
        _run_into(record.path, record, mode=mode, seed=seed, n_draws=n_draws, progress=progress, log=log,
                  sampler=sampler, conditions=conditions, motive_prior=motive_prior)
    return Path(out_dir)


def _run_into(folder: Path, record: Run, *, mode, seed, n_draws, progress, log, sampler, conditions,
              motive_prior, executor="sequential") -> None:
    """The study's steps, writing into ``folder`` (the staging folder of ``record``)."""
    sm.check_motive_prior(motive_prior)
    t_start = time.perf_counter()
    log = log or (lambda msg: print(msg, flush=True))
    stamp = lambda msg: log(f"[{time.perf_counter() - t_start:7.1f} s] {msg}")
    sampler = dict(sampler)
    n_draws = min(n_draws, *(h["num_samples"] * h["num_chains"] for h in split_sampler(sampler)))
    record.note("n_draws", n_draws)
    record.note("motive_prior", motive_prior)
    tables, figures = folder / "tables", folder / "figures"
    for d in (folder / "posteriors", figures, tables):
        d.mkdir(parents=True)
    stamp("loading data (verified against the registry's sha256)")
    human, llm = datasets.load_social_human(), datasets.load_social_llm()
    for key in ("social_human", *(f"social_llm_{p}" for p in datasets.PROMPTS)):
        record.data(key, datasets.REGISTRY[key].sha256)

    stamp("reproducing Tables 2-4")
    table = reproduction_table(human, llm)
    disc = discrepancies(table)
    table.to_csv(tables / "reproduction.csv", index=False)
    disc.to_csv(tables / "discrepancies.csv", index=False)
    log(format_side_by_side(table))
    observed_esr, fig1 = observed_comparisons(human, llm)
    observed_esr.to_csv(tables / "esr_observed.csv", index=False)

    trees, baseline, cmp = fit_all(human, llm, seed, sampler, progress, motive_prior, conditions, stamp, log,
                                   executor=executor)
    cmp.to_csv(tables / "loo_compare.csv")
    contrasts(trees).to_csv(tables / "contrasts.csv", index=False)

    stamp("model-implied effects, ESR and CDS")
    h_eff, esr_model, cds_model = model_implied(trees, table, n_draws, seed)
    esr_model.to_csv(tables / "esr_model.csv", index=False)
    cds_model.to_csv(tables / "cds_model.csv", index=False)

    stamp("posterior predictive check: human-fitted model vs each LLM's observed means")
    predicted, observed, ppc = predictive_check(h_eff, human, fig1)
    ppc.to_csv(tables / "ppc_condition_means.csv", index=False)
    predicted.to_csv(tables / "human_model_predicted_means.csv", index=False)

    stamp("figures")
    _write_figures(figures, fig1, observed_esr, esr_model, predicted, observed)

    stamp("writing posteriors (netCDF)")
    save_netcdf(baseline, folder / "posteriors" / "human_baseline.nc")
    record.fit("human baseline", baseline, "posteriors/human_baseline.nc")
    for label, tree in trees.items():
        name = f"posteriors/{label.replace(' ', '_')}_rsa.nc"
        save_netcdf(tree, folder / name)
        record.fit(label, tree, name)

    manifest = record.finish()  # run.json: the report below is rendered from it
    write_report(folder, trees=trees, baseline=baseline)
    stamp(f"done (wall time {manifest['wall_time_s']:.0f} s); swapping the run folder into place")


def _load_trees(run_dir: Path, manifest: dict) -> tuple[dict, object]:
    """The fits of a run folder, in the manifest's order: ``(trees, baseline)``."""
    fits = manifest["fits"]
    baseline = pm.load_netcdf(run_dir / fits["human baseline"]["file"])
    trees = {label: pm.load_netcdf(run_dir / f["file"]) for label, f in fits.items() if label != "human baseline"}
    return trees, baseline


def write_report(run_dir: str | Path, *, trees: dict | None = None, baseline=None, rebuilt: bool = False) -> Path:
    """Render ``report.md`` of a run folder from its ``run.json`` (mode, sampler settings, wall
    time, the fits), its saved tables and its posteriors (``trees``/``baseline`` when already in
    memory); rewrites ``tables/parameters.csv``, ``tables/chains.csv`` and the forest plot, the
    figures drawn from the posteriors alone."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    if trees is None or baseline is None:
        trees, baseline = _load_trees(run_dir, manifest)
    tables = run_dir / "tables"
    params, chains = _posterior_summaries(run_dir, trees, baseline)
    report = render_report(manifest["mode"], manifest["sampler"], pd.read_csv(tables / "reproduction.csv"),
                           pd.read_csv(tables / "discrepancies.csv"),
                           pd.read_csv(tables / "loo_compare.csv", index_col=0), trees, baseline,
                           pd.read_csv(tables / "cds_model.csv"), pd.read_csv(tables / "ppc_condition_means.csv"),
                           params, manifest["wall_time_s"], chains)
    if (tables / "contrasts.csv").exists():
        report += contrast_section(pd.read_csv(tables / "contrasts.csv"), trees)
    if rebuilt:
        report += (f"\n_Report re-rendered from the saved run by `rebuild_report` (pragmodels {pm.__version__}); "
                   "the fits themselves are unchanged._\n")
    atomic_write(run_dir / "report.md", lambda tmp: Path(tmp).write_text(report))
    return run_dir / "report.md"


def rebuild_report(run_dir: str | Path) -> Path:
    """Re-render ``report.md`` of a finished run folder from its ``run.json``, saved tables and
    posteriors (no refitting), e.g. after the report's wording changed; see :func:`write_report`.
    A folder without ``run.json`` (written before run folders had manifests, such as the committed
    ``fits/social_meaning/full/``) cannot be re-rendered: rerun the study. Holds the folder's lock,
    so it cannot interleave with a run swapping a new folder in."""
    with lock_folder(run_dir):
        return write_report(run_dir, rebuilt=True)
