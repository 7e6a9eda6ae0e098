r"""Coverage of the ESR measurement model's intervals where its Gaussian likelihood is wrong.

:func:`models.social_meaning.esr.calibration` simulates from the model's own likelihood, so it
cannot reveal misspecification. Here three simulations (:data:`SCENARIOS`: ``model-consistent``,
``likert`` (whole 1-7 rating data sets on the real design, :class:`LikertDesign`; true effects
exact, :func:`expected_rating`) and ``winners-curse`` (human effects kept only when all ten are
significant)) are refitted by :func:`~models.social_meaning.esr.esr_model` as it stands
(``gaussian``) and with the human likelihood conditioned on significance (``selection-adjusted``).

``python -m models.social_meaning.esr_checks --replicates 100`` writes
``fits/social_meaning/esr_checks/coverage.{csv,md}``; the study's full run writes
``tables/esr_calibration_scenarios.csv``. Why and what it found: docs/studies/social_meaning.md,
"Coverage under misspecification".
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from models.social_meaning import esr
from pragmodels import datasets, metrics
from pragmodels.inference.diagnostics import FitWarning

SCALE_MAX = 7
#: a latent rating z rounds above k when z >= k + 1/2 (k = 1..6)
THRESHOLDS = np.arange(1, SCALE_MAX) + 0.5
#: floor of an LLM's latent SD (its ten samples are often identical)
MIN_LLM_SD = 0.3
#: two-sided 5% significance of a human effect
Z_SELECT = float(norm.ppf(0.975))
#: an effect whose observed |t| is below this is "weak" in the winner's-curse simulation
WEAK_T = 3.0
SCENARIOS = ("model-consistent", "likert", "winners-curse")
#: the fitted models: ``z_select`` of :func:`esr.esr_model`
MODELS = {"gaussian": None, "selection-adjusted": Z_SELECT}
OUT = Path(__file__).resolve().parents[2] / "fits" / "social_meaning" / "esr_checks"


def expected_rating(mean, sd) -> np.ndarray:
    """Exact ``E[clip(round(z), 1, 7)]`` for ``z ~ N(mean, sd^2)``, elementwise:
    ``1 + sum_k P(z >= k + 1/2)``."""
    mean, sd = np.broadcast_arrays(np.asarray(mean, float), np.asarray(sd, float))
    return 1.0 + norm.cdf((mean[..., None] - THRESHOLDS) / sd[..., None]).sum(-1)


def latent_mean(target, sd) -> np.ndarray:
    """The latent mean whose :func:`expected_rating` is ``target`` (clipped to [1.001, 6.999]:
    a cell rated 7 every time gets a latent mean that gives 7 all but 0.1% of the time)."""
    t = np.clip(np.asarray(target, float), 1.001, SCALE_MAX - 0.001)
    lo, hi = np.full(t.shape, -12.0), np.full(t.shape, SCALE_MAX + 13.0)
    for _ in range(70):  # bisection: expected_rating increases in the mean
        mid = (lo + hi) / 2
        above = expected_rating(mid, sd) > t
        lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
    return (lo + hi) / 2


@dataclass(frozen=True)
class LikertDesign:
    """A generating process of ratings on a design's rows: rating ``o`` is ``clip(round(z_o), 1, 7)``,
    ``z_o = mean_o + loading_o f_rater(o) + unique_sd_o e_o`` with ``f, e ~ N(0, 1)``."""

    frame: pd.DataFrame  #: the design's valid rows (their real ratings in ``rating``)
    mean: np.ndarray  #: latent mean per row
    loading: np.ndarray  #: loading on the rater's factor per row (0: calls are independent)
    unique_sd: np.ndarray  #: SD of the row's own latent noise
    rater: np.ndarray  #: rater index per row

    @property
    def sd(self) -> np.ndarray:
        return np.hypot(self.loading, self.unique_sd)

    def true_effects(self, shift=0.0) -> np.ndarray:
        """The ten effects' expectation, ``c @ E[rating]`` (:func:`esr.effect_weights`), with the
        latent means moved by ``shift [row]``: exact, the design held fixed."""
        return esr.effect_weights(self.frame) @ expected_rating(self.mean + shift, self.sd)

    def simulate(self, rng: np.random.Generator, n: int = 1, shift=0.0) -> np.ndarray:
        """``n`` rating vectors ``[n, row]``, integers 1-7."""
        f = rng.standard_normal((n, self.rater.max() + 1))[:, self.rater]
        z = self.mean + shift + self.loading * f + self.unique_sd * rng.standard_normal((n, len(self.mean)))
        return np.clip(np.floor(z + 0.5), 1, SCALE_MAX)


_CELL = ["scenario", "context", "form", "attribute"]


def _attribute_index(frame: pd.DataFrame) -> np.ndarray:
    return pd.Categorical(frame["attribute"], categories=datasets.ATTRIBUTES).codes


def human_design(human: pd.DataFrame) -> LikertDesign:
    """The humans' process: each scenario x context x form x attribute cell's latent mean gives
    its observed mean; a rater's six latent ratings share one factor, whose loadings and the
    unique SDs come from a one-factor fit (first eigenvector) of the within-cell residual
    covariance of the six attributes."""
    frame = metrics.valid_ratings(human).frame.reset_index(drop=True)
    cell_mean = frame.groupby(_CELL)["rating"].transform("mean").to_numpy()
    resid = pd.Series(frame["rating"].to_numpy() - cell_mean)
    wide = resid.groupby([frame["participant_id"], frame["attribute"]]).sum().unstack()[list(datasets.ATTRIBUTES)]
    n_cells = frame.groupby(_CELL[:3]).ngroups
    r = wide.cov().to_numpy() * len(wide) / (len(wide) - n_cells)  # the cell means took n_cells df
    w, v = np.linalg.eigh(r)
    lam = np.sqrt(w[-1]) * v[:, -1] * np.sign(v[:, -1].sum())
    unique = np.sqrt(np.maximum(np.diag(r) - lam ** 2, 0.1 * np.diag(r)))
    a = _attribute_index(frame)
    loading, unique_sd = lam[a], unique[a]
    return LikertDesign(frame, latent_mean(cell_mean, np.hypot(loading, unique_sd)), loading, unique_sd,
                        pd.factorize(frame["participant_id"])[0])


def llm_design(ratings: pd.DataFrame) -> LikertDesign:
    """One LLM x prompt's process: every call independent, each cell's latent mean gives its
    observed mean, one latent SD per attribute (the pooled within-cell SD, at least
    :data:`MIN_LLM_SD`)."""
    frame = metrics.valid_ratings(ratings).frame.reset_index(drop=True)
    cell = frame.groupby(_CELL)["rating"]
    cell_mean = cell.transform("mean").to_numpy()
    ss = pd.Series((frame["rating"].to_numpy() - cell_mean) ** 2).groupby(frame["attribute"]).sum()
    dof = frame.groupby("attribute").size() - frame.groupby(_CELL).size().groupby(level="attribute").size()
    sd_a = np.sqrt(ss / dof.clip(lower=1)).clip(lower=MIN_LLM_SD)
    sd = sd_a.reindex(frame["attribute"]).to_numpy()
    return LikertDesign(frame, latent_mean(cell_mean, sd), np.zeros(len(frame)), sd, np.zeros(len(frame), int))


def contrast_shift(frame: pd.DataFrame, main: np.ndarray, interaction: np.ndarray) -> np.ndarray:
    """Per-row latent shift that moves attribute ``a``'s form effect by ``main[a]`` and its
    form x context interaction by ``interaction[a]`` (on the latent scale; ``a`` indexes
    :data:`pragmodels.datasets.ATTRIBUTES`)."""
    x_f = np.where(frame["form"].to_numpy() == "precise", 0.5, -0.5)
    x_c = np.where(frame["context"].to_numpy() == "high", 0.5, -0.5)
    a = _attribute_index(frame)
    return main[a] * x_f + interaction[a] * x_f * x_c


# ------------------------------------------------------------------ the three simulations
def model_consistent_sets(data: dict, n: int, rng: np.random.Generator) -> tuple[list, list]:
    """:func:`esr.calibration`'s data sets: ``(sets, true ratios [condition, effect])``."""
    truths = [rng.normal(1.2, 0.8, size=data["d_m"].shape) for _ in range(n)]
    return [esr.simulate(rng, data, r, data["d_h"]) for r in truths], truths


def likert_sets(human: LikertDesign, llms: dict, n: int, rng: np.random.Generator,
                shift_sd: float = 0.5) -> tuple[list, list]:
    """Rating data sets from ``human`` and the LLM designs ``{label: LikertDesign}``, each LLM's
    form and interaction contrasts moved per replicate by N(0, ``shift_sd``^2) on the latent
    scale (so the true ratios vary), their effect statistics by :func:`esr.model_data`."""
    dh = human.true_effects()
    sets, truths = [], []
    for _ in range(n):
        shifts = {k: contrast_shift(d.frame, rng.normal(0, shift_sd, 6), rng.normal(0, shift_sd, 6))
                  for k, d in llms.items()}
        truths.append(np.stack([d.true_effects(shifts[k]) for k, d in llms.items()]) / dh)
        h = human.frame.assign(rating=human.simulate(rng)[0])
        m = {k: d.frame.assign(rating=d.simulate(rng, shift=shifts[k])[0]) for k, d in llms.items()}
        sets.append(esr.model_data(h, m)[0])
    return sets, truths


def selected_effects(rng: np.random.Generator, truth: np.ndarray, cov: np.ndarray, z_select: float = Z_SELECT,
                     max_draws: int = 1_000_000) -> tuple[np.ndarray, int]:
    """``d ~ N(truth, cov)`` redrawn until every ``|d_j| / sqrt(cov[j, j]) > z_select``: the
    effects a study reports only when significant. Returns ``(d, draws taken)``."""
    se = np.sqrt(np.diag(cov))
    for start in range(0, max_draws, 2000):
        d = rng.multivariate_normal(truth, cov, size=2000)
        ok = np.flatnonzero((np.abs(d) / se > z_select).all(1))
        if len(ok):
            return d[ok[0]], start + ok[0] + 1
    raise RuntimeError(f"no significant draw in {max_draws}: truth/se = {np.round(truth / se, 2)} is too weak.")


def winners_curse_sets(data: dict, n: int, rng: np.random.Generator) -> tuple[list, list, np.ndarray]:
    """Data sets whose human effects were selected for significance (:func:`selected_effects`);
    the truths of the weak effects (observed ``|t| <`` :data:`WEAK_T`) at ``t ~ U(1, 3)`` with the
    observed sign, the others at their estimates; ratios from N(1.2, 0.8^2). Also returns the true
    ``t [replicate, effect]``."""
    se = np.sqrt(np.diag(data["cov_h"]))
    weak = np.abs(data["d_h"] / se) < WEAK_T
    sets, truths, true_t = [], [], []
    for _ in range(n):
        th = data["d_h"].copy()
        th[weak] = np.sign(th[weak]) * se[weak] * rng.uniform(1.0, 3.0, weak.sum())
        r = rng.normal(1.2, 0.8, size=data["d_m"].shape)
        d_m = np.stack([rng.multivariate_normal(r[k] * th, data["cov_m"][k]) for k in range(len(r))])
        sets.append(dict(data, d_h=selected_effects(rng, th, data["cov_h"])[0], d_m=d_m))
        truths.append(r)
        true_t.append(th / se)
    return sets, truths, np.array(true_t)


# ------------------------------------------------------------------ refits and coverage
def _cds(r: np.ndarray) -> dict:
    dev = np.abs(r - 1.0)
    cds_m, cds_i = dev[..., :esr.N_MAIN].mean(-1), dev[..., esr.N_MAIN:].mean(-1)
    return dict(cds_m=cds_m, cds_i=cds_i, cds=(cds_m + cds_i) / 2)


def coverage(sets: list, truths: list, z_select: float | None, seed: int, prob: float = 0.90,
             **sampler) -> pd.DataFrame:
    """Refit every data set by :func:`esr.esr_model` (``z_select``; one batched NUTS run) and
    return one row per replicate x condition x quantity (the ten ESRs, ``cds_m``, ``cds_i``,
    ``cds``): ``truth``, the central ``prob`` interval, ``covered``, ``width``."""
    import pragmodels as pm

    if z_select is not None:
        sets = [dict(s, z_select=z_select) for s in sets]
    with warnings.catch_warnings(record=True) as caught:  # counted, not printed
        warnings.simplefilter("always", FitWarning)
        trees = pm.fit_batched(seed, esr.esr_model, sets, **sampler, posterior_predictive=False)
    q = ((1 - prob) / 2, 1 - (1 - prob) / 2)
    names = [f"{k}:{a}" for k, a in esr.EFFECTS]
    rows = []
    for k, tree in enumerate(trees.values()):
        post = tree["posterior"]
        draws = {"esr": post["esr"].values.reshape((-1,) + truths[k].shape)}
        draws.update({v: post[v].values.reshape(-1, truths[k].shape[0]) for v in ("cds_m", "cds_i", "cds")})
        true = {"esr": truths[k], **_cds(truths[k])}
        for v, x in draws.items():
            lo, hi = np.quantile(x, q, axis=0)
            for i in range(truths[k].shape[0]):
                for j in range(x.shape[2] if x.ndim == 3 else 1):
                    t, a, b = (true[v][i, j], lo[i, j], hi[i, j]) if x.ndim == 3 else (true[v][i], lo[i], hi[i])
                    rows.append(dict(replicate=k, condition=i, quantity=names[j] if x.ndim == 3 else v, truth=t,
                                     lo=a, hi=b, covered=bool(a <= t <= b), width=b - a))
    out = pd.DataFrame(rows)
    out.attrs["n_fit_warnings"] = sum(issubclass(w.category, FitWarning) for w in caught)
    return out


def scenarios(human: pd.DataFrame, llm_sets: dict, n: int, seed: int = 0, prob: float = 0.90,
              models: dict | None = None, which=SCENARIOS, **sampler) -> pd.DataFrame:
    """Coverage rows (:func:`coverage`) of every scenario in ``which`` x fitted model in ``models``
    (default :data:`MODELS`), ``n`` replicates each, from the real human ratings and
    ``{label: LLM ratings}``; columns ``scenario``, ``model`` first, and ``true_t`` (the human
    effect's true ``t`` in the winner's-curse scenario, else its estimate's)."""
    models = MODELS if models is None else models
    data, labels = esr.model_data(human, llm_sets)
    se = np.sqrt(np.diag(data["cov_h"]))
    names = [f"{k}:{a}" for k, a in esr.EFFECTS]
    out = []
    for s_i, scenario in enumerate(which):
        rng = np.random.default_rng([seed, s_i])
        true_t = np.tile(data["d_h"] / se, (n, 1))
        if scenario == "model-consistent":
            sets, truths = model_consistent_sets(data, n, rng)
        elif scenario == "likert":
            sets, truths = likert_sets(human_design(human), {k: llm_design(g) for k, g in llm_sets.items()}, n, rng)
        elif scenario == "winners-curse":
            sets, truths, true_t = winners_curse_sets(data, n, rng)
        else:
            raise ValueError(f"scenario must be one of {SCENARIOS}; got {scenario!r}.")
        for name, z in models.items():
            rows = coverage(sets, truths, z, seed, prob, **sampler)
            n_warned = rows.attrs["n_fit_warnings"]
            t_of = dict(zip(names, true_t.T))
            rows["true_t"] = [t_of[q][k] if q in t_of else np.nan for q, k in zip(rows.quantity, rows.replicate)]
            rows.insert(0, "model", name)
            rows.insert(0, "scenario", scenario)
            rows["condition"] = np.asarray(labels)[rows["condition"].to_numpy()]
            out.append(rows.assign(n_fit_warnings=n_warned))
    return pd.concat(out, ignore_index=True)


def summary(rows: pd.DataFrame, prob: float = 0.90) -> pd.DataFrame:
    """Coverage per scenario x model x quantity group: every ESR, every CDS, each effect's ESR
    (pooled over conditions), and in the winner's-curse scenario the weak effects by true ``t``.
    ``se_binomial``: ``sqrt(p (1 - p) / n_intervals)`` at the nominal ``p``; ``se_replicate``: the
    SD of the per-replicate coverage over sqrt(replicates) (intervals of one replicate share its
    human data, so this is the honest one for pooled rows); ``shortfall``: nominal minus coverage
    over the larger SE."""
    is_esr = ~rows.quantity.str.startswith("cds")
    groups = [("all ESRs", is_esr), ("all CDS", ~is_esr)]
    groups += [(f"ESR {q}", rows.quantity == q) for q in rows.quantity[is_esr].unique()]
    weak = is_esr & (rows.scenario == "winners-curse") & (rows.true_t.abs() < WEAK_T)
    for lo, hi in ((1.0, 1.5), (1.5, 2.0), (2.0, 2.5), (2.5, 3.0)):
        groups.append((f"ESR weak effect, true t in [{lo}, {hi})", weak & rows.true_t.abs().between(lo, hi, "left")))
    out = []
    for (scenario, model), g in rows.groupby(["scenario", "model"], sort=False):
        for label, mask in groups:
            x = g[mask.loc[g.index]]
            if not len(x):
                continue
            per_rep = x.groupby("replicate").covered.mean()
            p, n = x.covered.mean(), len(x)
            se_b = np.sqrt(prob * (1 - prob) / n)
            se_r = per_rep.std(ddof=1) / np.sqrt(len(per_rep)) if len(per_rep) > 1 else np.nan
            out.append(dict(scenario=scenario, model=model, quantity=label, n_replicates=len(per_rep), n_intervals=n,
                            coverage=p, se_binomial=se_b, se_replicate=se_r,
                            shortfall=(prob - p) / np.nanmax([se_b, se_r]), median_width=x.width.median()))
    return pd.DataFrame(out)


#: where the checks are explained
DOCS_SECTION = 'docs/studies/social_meaning.md, "Coverage under misspecification"'


def markdown(table: pd.DataFrame, provenance: dict) -> str:
    """The summary as a markdown page: provenance, then the table."""
    head = "\n".join(f"- {k}: {v}" for k, v in provenance.items())
    shown = table.drop(columns=["shortfall"]).rename(columns={"n_replicates": "replicates", "n_intervals": "intervals"})
    return ("# Coverage of the ESR measurement model's 90% intervals under misspecification\n\n"
            "Written by `python -m models.social_meaning.esr_checks` ("
            f"{DOCS_SECTION}).\n\n{head}\n\n{shown.to_markdown(index=False, floatfmt='.3g')}\n")


def report_section(table: pd.DataFrame) -> str:
    """The full report's section on :func:`summary`'s table (``tables/esr_calibration_scenarios.csv``):
    pooled coverage per scenario and model, and the winner's-curse weak effect by true ``t``."""
    keep = table[table.quantity.isin(["all ESRs", "all CDS"]) | table.quantity.str.startswith("ESR weak")]
    shown = keep.assign(coverage=[f"{100 * p:.1f}% ± {100 * max(a, b):.1f}" for p, a, b in
                                  zip(keep.coverage, keep.se_binomial, keep.se_replicate.fillna(0))])
    shown = shown[["scenario", "model", "quantity", "n_replicates", "coverage", "median_width"]]
    return ("\n### ESR coverage under misspecification\n\n"
            "Coverage of the 90% intervals on simulated data the measurement model's Gaussian likelihood does not "
            "describe: whole 1-7 rating data sets with ceilings on the real design (`likert`), and human effects "
            "reported only when significant (`winners-curse`); `gaussian` is the model as fitted above "
            "(`selection-adjusted`, where listed: its human likelihood conditioned on significance; ± the larger of the binomial "
            f"and the per-replicate Monte Carlo SE; {DOCS_SECTION}; `tables/esr_calibration_scenarios.csv`).\n\n"
            f"{shown.to_markdown(index=False, floatfmt='.3g')}\n")


def elsewhere_section() -> str:
    """The full report's section where the run left the check out (``misspecification_replicates`` 0): where
    the check's own job keeps its table."""
    return ("\n### ESR coverage under misspecification\n\n"
            "Not run in this run (`misspecification_replicates` is 0 for it): the check is its own job, "
            "`python -m models.social_meaning.esr_checks --replicates 100`, whose table, with its provenance, is "
            f"`fits/social_meaning/esr_checks/coverage.md` ({DOCS_SECTION}).\n")


def main(argv: list[str] | None = None) -> None:
    """``python -m models.social_meaning.esr_checks --replicates N``: the three simulations, both
    models, the config's ``calibration_sampler``; writes ``coverage.csv`` and ``coverage.md``
    (``--out``, default ``fits/social_meaning/esr_checks``)."""
    import argparse
    import json
    import platform
    import time

    import jax
    import numpyro

    import pragmodels as pm
    from pragmodels.datasets import registry
    from pragmodels.io.atomic import atomic_write

    ap = argparse.ArgumentParser(prog="python -m models.social_meaning.esr_checks", description=main.__doc__)
    ap.add_argument("--replicates", type=int, default=100, help="simulated data sets per scenario")
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    ap.add_argument("--config", type=Path, default=OUT.parent.parent / "social_meaning.json")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.replicates < 2:
        raise SystemExit(f"--replicates must be at least 2 (a Monte Carlo error needs two); got {args.replicates}.")
    sampler = json.loads(args.config.read_text())["calibration_sampler"]
    human, llm = datasets.load_social_human(), datasets.load_social_llm()
    sets = {f"{m} {p}": llm[(llm.model == m) & (llm.prompt == p)] for m in datasets.LLMS for p in datasets.PROMPTS}
    t0 = time.time()
    rows = scenarios(human, sets, args.replicates, args.seed, which=args.scenarios, **sampler)
    table = summary(rows)
    keys = ["social_human", *(f"social_llm_{p}" for p in datasets.PROMPTS)]
    provenance = dict(replicates=args.replicates, seed=args.seed, scenarios=", ".join(args.scenarios),
                      sampler=json.dumps(sampler), z_select=round(Z_SELECT, 4),
                      fit_warnings=int(rows.groupby(["scenario", "model"]).n_fit_warnings.first().sum()),
                      wall_s=round(time.time() - t0), data=", ".join(f"{k} {registry.get(k).sha256[:12]}" for k in keys),
                      versions=f"pragmodels {pm.__version__}, jax {jax.__version__}, numpyro {numpyro.__version__}, "
                               f"python {platform.python_version()}")
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "coverage.csv", lambda tmp: table.to_csv(tmp, index=False))
    atomic_write(args.out / "coverage.md", lambda tmp: Path(tmp).write_text(markdown(table, provenance)))
    print(markdown(table, provenance))


if __name__ == "__main__":
    main()
