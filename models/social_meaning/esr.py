r"""Model-based effect size ratios (ESR) and calibration deviation scores (CDS) for the social-
meaning study: a measurement model of the human and the LLM effects, with its calibration check.

Layering: imports :mod:`pragmodels` (``fit``, ``fit_batched``, ``metrics``) and ``numpyro``;
imported by :mod:`models.social_meaning.study` and its tests. It is a measurement model *beside*
the RSA model (:mod:`models.social_meaning.rsa`), not part of it: it needs no theory of why an
effect exists, only how precisely each effect was measured.

Why a model
-----------
The paper's ESR (its eq. 1) is ``|Δ_M| / |Δ_H|`` with the human effect ``Δ_H`` taken as fixed
truth. But ``Δ_H`` is estimated from 362 raters, about 15 per scenario x context x form cell,
and its standard error (0.15-0.3 rating points) is a sizeable fraction of the effects
(0.6-1.3), so the ratio carries that error, and its absolute values hide a sign flip.

Sufficient statistics
---------------------
Each of the ten significant effects ``j`` (five main effects of form, five form x context
interactions; :data:`EFFECTS`) is a linear function of the ratings, ``Δ̂_j = Σ_o c_{jo} y_o``, with
the weights of :func:`pragmodels.metrics.calibration.effects` (pooled means; rows of an attribute only).
Its sampling covariance is estimated with the rater as the unit:

* humans: each participant rated the six attributes of one item (one scenario, context and
  form, between subjects), so a participant's six ratings are one cluster. The covariance is the
  cluster-robust one, ``Σ_H = Σ_k n_k / (n_k − 1) Σ_{r ∈ k} ψ_r ψ_r^T`` with ``ψ_r`` rater ``r``'s
  summed contributions ``Σ_{o ∈ r} c_o (y_o − ȳ_{k(o)})`` and ``k`` the form x context cell. This
  is what a rater random effect does to these effects: a rater who rates everything high moves the
  six attributes together, and Σ_H keeps that correlation between effects (it matters for CDS,
  an average over effects).
* LLMs: every rating is a separate call (a record per attribute and sample), the six scenarios
  are the same in every cell (a fixed, balanced design), so the covariance is the stratified one
  with the scenario x cell as stratum.

A rating is an integer, a latent judgement rounded to the scale, so every rating's variance is
floored at the rounding variance 1/12 (:data:`ROUNDING_VARIANCE`): a model that gave the same
rating in all ten samples has not shown a variance of exactly zero. Without the floor an LLM's
Σ_M is singular in some conditions.

The model
---------
.. math::

    Δ̂_H \sim N(Δ_H, Σ_H), \qquad Δ̂_{M,m} \sim N(Δ_{M,m}, Σ_{M,m}) \quad (m = 1..J), \qquad
    Δ_{M,m} = r_m \odot Δ_H,

    Δ_{H,j} \sim N(0, 2.5^2), \qquad Δ_{M,m,j} \sim N(0, 2.5^2),

jointly for all ``J`` LLM x prompt conditions, so the one human measurement error is shared by
every ratio, as it is in the data. ``r_{m,j} = Δ_{M,m,j} / Δ_{H,j}`` is the *signed* ESR: ``|r|``
is the paper's ESR, ``r < 0`` a sign flip. The weakly informative priors sit on the two effects,
both centred on no effect, so nothing favours calibration (``r = 1``) or a flip.

Why the prior is not put on ``r`` itself: with ``r ~ N(0, 3²)`` independent of ``Δ_H``, each
condition's likelihood, integrated over ``r``, is ``N(Δ̂_M; 0, Σ_M + 9 Δ_H²)`` ∝ ``1/|Δ_H|`` where
``Σ_M`` is small, so twelve conditions pull ``Δ_H`` towards zero as ``|Δ_H|^{-12}``. Measured on
the real data: ``Δ_H`` came out at ±0.35 instead of 0.9, with chains in sign-flipped modes
(r_hat 2.8). Priors on the effects, with ``r`` derived, have no such pull.

Reported per effect: ``r``, ``log |r|`` and ``P(r < 0)``; per condition,
``CDS_m = mean_main |r − 1|``, ``CDS_i`` (interactions) and ``CDS = (CDS_m + CDS_i) / 2``, as
posteriors.

Calibration (:func:`calibration`): data sets simulated from known ratios at the real data's
covariances are refitted, and the 90% intervals must cover the truth in 80-97% of replicates.
The negative control takes the human estimates as the truth, as the paper does (the same LLM-
effect draws divided by the simulated human estimates); its intervals undercover.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd

from pragmodels import metrics

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
    """Effect estimates ``Δ̂ [effect]`` and their covariance ``Σ [effect, effect]`` (module
    docstring, "Sufficient statistics").

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


def esr_model(d_h, cov_h, d_m, cov_m):
    """The measurement model (module docstring). ``d_h [effect]``, ``cov_h [effect, effect]``,
    ``d_m [condition, effect]``, ``cov_m [condition, effect, effect]``."""
    n_cond, n_eff = d_m.shape
    delta_h = numpyro.sample("delta_h", dist.Normal(0.0, PRIOR_EFFECT_SD).expand([n_eff]).to_event(1))
    delta_m = numpyro.sample("delta_m", dist.Normal(0.0, PRIOR_EFFECT_SD).expand([n_cond, n_eff]).to_event(2))
    numpyro.sample("human_effects", dist.MultivariateNormal(delta_h, covariance_matrix=cov_h), obs=d_h)
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
        warnings.simplefilter("always", pm.diagnostics.FitWarning)
        trees = pm.fit_batched(seed, esr_model, sets, **sampler, posterior_predictive=False)
    n_warned = sum(issubclass(w.category, pm.diagnostics.FitWarning) for w in caught)
    lo_q, hi_q = (1 - prob) / 2, 1 - (1 - prob) / 2
    rows = []
    for k, (name, tree) in enumerate(trees.items()):
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
