r"""Model-based effect size ratios (ESR) and calibration deviation scores (CDS) for the social-
meaning study: a measurement model of the human and the LLM effects, with its calibration check.

The paper's ESR divides an LLM's effect by the human effect as if the latter were known; here
both are estimated with their sampling covariances (:func:`effect_statistics`,
:func:`model_data`) and the signed ratio ``r = Δ_M / Δ_H`` is a posterior (:func:`esr_model`,
:func:`fit_measurement`, :func:`esr_summary`, :func:`cds_summary`). :func:`calibration`
refits simulated data sets and a negative control. Why a model, the sufficient statistics and
the priors: ``docs/studies/social_meaning.md``, "The ESR measurement model".
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
from jax.scipy.special import log_ndtr

from pragmodels import metrics
from pragmodels.inference.diagnostics import FitWarning

#: the ten significant human effects (Section 3 of the paper), ``(kind, attribute)``
EFFECTS = tuple([("main", a) for a in metrics.SIGNIFICANT_MAIN]
                + [("interaction", a) for a in metrics.SIGNIFICANT_INTERACTION])
N_MAIN = len(metrics.SIGNIFICANT_MAIN)
#: variance of a rating rounded to an integer scale (uniform rounding error on ±1/2)
ROUNDING_VARIANCE = 1.0 / 12.0
PRIOR_EFFECT_SD = 2.5
_CELLS = [("high", "precise"), ("high", "approx"), ("low", "precise"), ("low", "approx")]


def effect_weights(df: pd.DataFrame) -> np.ndarray:
    """Weights ``c [effect, row]`` such that ``c @ rating`` gives :data:`EFFECTS` exactly as
    :func:`pragmodels.metrics.calibration.effects` computes them (pooled means of the attribute's rows)."""
    att, ctx, form = (df[c].to_numpy() for c in ("attribute", "context", "form"))
    c = np.zeros((len(EFFECTS), len(df)))
    for j, (kind, a) in enumerate(EFFECTS):
        rows = att == a
        if kind == "main":
            for f, sign in (("precise", 1.0), ("approx", -1.0)):
                sel = rows & (form == f)
                if not sel.any():
                    raise ValueError(f"no valid {f} ratings of {a!r}: the main effect is undefined.")
                c[j, sel] = sign / sel.sum()
        else:
            for (cx, f), sign in zip(_CELLS, (1.0, -1.0, -1.0, 1.0)):
                sel = rows & (ctx == cx) & (form == f)
                if not sel.any():
                    raise ValueError(f"no valid {cx}-context {f} ratings of {a!r}: the interaction is undefined.")
                c[j, sel] = sign / sel.sum()
    return c


def effect_statistics(df: pd.DataFrame, rater: str | None, strata: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Effect estimates ``Δ̂ [effect]`` and their covariance ``Σ [effect, effect]``
    (docs/studies/social_meaning.md, "Sufficient statistics").

    ``df``: valid ratings (columns ``attribute``, ``context``, ``form``, ``rating`` and those named
    by ``rater`` and ``strata``). ``rater``: the column whose rows form one cluster (``None``:
    every row is its own). ``strata``: columns that, with context and form, define the strata
    whose means are subtracted (the cells of the design)."""
    if df["rating"].isna().any():
        raise ValueError("effect_statistics: drop invalid ratings first (pragmodels.metrics.calibration.valid_ratings).")
    c = effect_weights(df)
    y = df["rating"].to_numpy(float)
    keys = ["context", "form", *strata]
    stratum = df.groupby(keys, sort=True).ngroup().to_numpy()  # the design's cells: raters nest in them
    resid = y - df.groupby([*keys, "attribute"], sort=True)["rating"].transform("mean").to_numpy()
    cluster = np.arange(len(df)) if rater is None else pd.factorize(df[rater])[0]
    n_clusters = pd.Series(cluster).groupby(stratum).nunique()
    if (n_clusters < 2).any():
        raise ValueError(f"a stratum of {keys} has fewer than two raters: its variance is undefined.")
    psi = pd.DataFrame((c * resid).T).groupby([stratum, cluster]).sum()  # [(stratum, cluster), effect]
    s_of = psi.index.get_level_values(0).to_numpy()
    scale = (n_clusters / (n_clusters - 1)).reindex(s_of).to_numpy()
    v = psi.to_numpy()
    cov = (v * scale[:, None]).T @ v + ROUNDING_VARIANCE * c @ c.T
    return c @ y, cov


def human_statistics(human: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """:func:`effect_statistics` of the human ratings: participants as clusters, pooled over
    scenarios (raters were assigned to scenarios at random)."""
    return effect_statistics(metrics.valid_ratings(human).frame, "participant_id", ())


def llm_statistics(llm: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """:func:`effect_statistics` of one LLM x prompt's ratings: every call its own unit, scenario
    a stratum (the same six scenarios in every cell)."""
    return effect_statistics(metrics.valid_ratings(llm).frame, None, ("scenario",))


def selection_log_prob(delta_h, cov_h, z_select):
    """``log P(|Δ̂_j| / se_j > z_select | Δ_H)`` per effect: the chance that effect ``j`` reaches
    two-sided significance, ``se_j = sqrt(Σ_H[j, j])`` (docs/studies/social_meaning.md,
    "Coverage under misspecification")."""
    z = delta_h / jnp.sqrt(jnp.diagonal(cov_h))
    return jnp.logaddexp(log_ndtr(z - z_select), log_ndtr(-z - z_select))


def esr_model(d_h, cov_h, d_m, cov_m, z_select=None):
    """The measurement model (docs/studies/social_meaning.md, "The model"). ``d_h [effect]``,
    ``cov_h [effect, effect]``, ``d_m [condition, effect]``, ``cov_m [condition, effect, effect]``.
    ``z_select``: the human effects are there because each reached ``|Δ̂_j| / se_j > z_select``
    (the paper's ten significant effects); their likelihood is then conditioned on it, divided by
    :func:`selection_log_prob`'s probabilities (``None``: not conditioned)."""
    n_cond, n_eff = d_m.shape
    delta_h = numpyro.sample("delta_h", dist.Normal(0.0, PRIOR_EFFECT_SD).expand([n_eff]).to_event(1))
    delta_m = numpyro.sample("delta_m", dist.Normal(0.0, PRIOR_EFFECT_SD).expand([n_cond, n_eff]).to_event(2))
    numpyro.sample("human_effects", dist.MultivariateNormal(delta_h, covariance_matrix=cov_h), obs=d_h)
    if z_select is not None:
        numpyro.factor("selection", -selection_log_prob(delta_h, cov_h, z_select).sum())
    with numpyro.plate("condition", n_cond):
        numpyro.sample("llm_effects", dist.MultivariateNormal(delta_m, covariance_matrix=cov_m), obs=d_m)
    esr = numpyro.deterministic("esr", delta_m / delta_h)
    dev = jnp.abs(esr - 1.0)
    cds_m = numpyro.deterministic("cds_m", dev[:, :N_MAIN].mean(-1))
    cds_i = numpyro.deterministic("cds_i", dev[:, N_MAIN:].mean(-1))
    numpyro.deterministic("cds", (cds_m + cds_i) / 2)
    numpyro.deterministic("log_abs_esr", jnp.log(jnp.abs(esr)))


esr_model.name = "social_meaning_esr"


def model_data(human: pd.DataFrame, llm_sets: dict) -> tuple[dict, list]:
    """The measurement model's data from the human ratings and ``{label: LLM ratings}`` (one
    LLM x prompt each; invalid rows are dropped and the labels kept in order)."""
    d_h, cov_h = human_statistics(human)
    stats = [llm_statistics(g) for g in llm_sets.values()]
    data = dict(d_h=d_h, cov_h=cov_h, d_m=np.stack([s[0] for s in stats]), cov_m=np.stack([s[1] for s in stats]))
    return data, list(llm_sets)




def _coords(labels: Sequence[str]) -> dict:
    eff = [f"{k}:{a}" for k, a in EFFECTS]
    return dict(dims={"delta_h": ["effect"], "esr": ["condition", "effect"], "log_abs_esr": ["condition", "effect"],
                      "cds_m": ["condition"], "cds_i": ["condition"], "cds": ["condition"]},
                coords={"effect": eff, "condition": list(labels)})


def fit_measurement(data: dict, labels: Sequence[str], seed: int = 0, **sampler):
    """NUTS fit of :func:`esr_model` (``pragmodels.fit``, with the NUTS settings ``sampler``: the
    study passes its config's ``measurement_sampler``): a DataTree with ``esr [condition, effect]``,
    ``delta_h``, ``log_abs_esr`` and ``cds_m``/``cds_i``/``cds [condition]``."""
    import pragmodels as pm

    return pm.fit(seed, esr_model, data, progress_bar=False, **sampler, **_coords(labels))


def esr_summary(tree, prob: float = 0.94) -> pd.DataFrame:
    """One row per condition x effect: the signed ESR's median and ``prob`` interval, the paper's
    ESR ``|r|`` (median), ``log |r|`` (median and interval) and ``P(sign flip) = P(r < 0)``."""
    from arviz_stats.base import array_stats

    post = tree["posterior"]
    r = post["esr"].stack(sample=("chain", "draw")).transpose("condition", "effect", "sample").values
    lo, hi = np.moveaxis(array_stats.eti(r, prob, axis=-1), -1, 0)
    la = np.log(np.abs(r))
    llo, lhi = np.moveaxis(array_stats.eti(la, prob, axis=-1), -1, 0)
    rows = []
    for i, cond in enumerate(post["condition"].values):
        m, p = str(cond).split(" ")
        for j, (kind, a) in enumerate(EFFECTS):
            rows.append(dict(model=m, prompt=p, kind=kind, attribute=a, esr=np.median(r[i, j]), lo=lo[i, j],
                             hi=hi[i, j], abs_esr=np.median(np.abs(r[i, j])), log_abs_esr=np.median(la[i, j]),
                             log_lo=llo[i, j], log_hi=lhi[i, j], p_sign_flip=float((r[i, j] < 0).mean())))
    return pd.DataFrame(rows)


def cds_summary(tree, prob: float = 0.94) -> pd.DataFrame:
    """One row per condition: CDS_m, CDS_i and CDS as posterior medians with ``prob`` intervals."""
    from arviz_stats.base import array_stats

    post = tree["posterior"]
    rows = []
    for i, cond in enumerate(post["condition"].values):
        m, p = str(cond).split(" ")
        row = dict(model=m, prompt=p)
        for v in ("cds_m", "cds_i", "cds"):
            x = post[v].isel(condition=i).values.reshape(-1)
            lo, hi = array_stats.eti(x, prob)
            row.update({v: float(np.median(x)), f"{v}_lo": float(lo), f"{v}_hi": float(hi)})
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ calibration by simulation
def simulate(rng: np.random.Generator, data: dict, true_esr: np.ndarray, true_delta_h: np.ndarray) -> dict:
    """One data set of the model's shape: effects drawn around the truth with the real data's
    covariances (``true_esr [condition, effect]``, ``true_delta_h [effect]``)."""
    d_h = rng.multivariate_normal(true_delta_h, data["cov_h"])
    d_m = np.stack([rng.multivariate_normal(true_esr[k] * true_delta_h, data["cov_m"][k])
                    for k in range(true_esr.shape[0])])
    return dict(data, d_h=d_h, d_m=d_m)


def calibration(data: dict, n_replicates: int = 100, seed: int = 0, prob: float = 0.90, **sampler) -> pd.DataFrame:
    """Coverage of the ``prob`` intervals of the ESRs over ``n_replicates`` simulated data sets.

    Truth per replicate: the human effects at the observed estimates, the ratios drawn from
    N(1.2, 0.8^2) (attenuation, exaggeration and, in about 1 in 14, a sign flip). Every replicate
    is fitted in one batched NUTS run (:func:`pragmodels.fit_batched`). The negative control comes
    from the same fits: the posterior of the LLM effects does not depend on the human data (the
    posterior factorises), so dividing its draws by the simulated human *estimates*, as if they
    were the truth, is exactly the ratio that ignores the human standard error. Returns one row
    per replicate x condition x effect x control (``"model"``, ``"ignore human SE"``) with the
    truth, the interval and ``covered``."""
    import pragmodels as pm

    rng = np.random.default_rng(seed)
    truths, sets = [], []
    for _ in range(n_replicates):
        r = rng.normal(1.2, 0.8, size=data["d_m"].shape)
        truths.append(r)
        sets.append(simulate(rng, data, r, data["d_h"]))
    with warnings.catch_warnings(record=True) as caught:  # counted, not printed: ``n_fit_warnings``
        warnings.simplefilter("always", FitWarning)
        trees = pm.fit_batched(seed, esr_model, sets, **sampler, posterior_predictive=False)
    n_warned = sum(issubclass(w.category, FitWarning) for w in caught)
    lo_q, hi_q = (1 - prob) / 2, 1 - (1 - prob) / 2
    rows = []
    for k, tree in enumerate(trees.values()):
        shape = truths[k].shape
        ratios = {"model": tree["posterior"]["esr"].values.reshape((-1,) + shape),
                  "ignore human SE": tree["posterior"]["delta_m"].values.reshape((-1,) + shape) / sets[k]["d_h"]}
        for control, r in ratios.items():
            lo, hi = np.quantile(r, lo_q, axis=0), np.quantile(r, hi_q, axis=0)
            for i in range(shape[0]):
                for j, (kind, a) in enumerate(EFFECTS):
                    t = truths[k][i, j]
                    rows.append(dict(control=control, replicate=k, condition=i, kind=kind, attribute=a, truth=t,
                                     lo=lo[i, j], hi=hi[i, j], covered=bool(lo[i, j] <= t <= hi[i, j])))
    out = pd.DataFrame(rows)
    out.attrs["n_fit_warnings"] = n_warned
    return out
