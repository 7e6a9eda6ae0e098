"""Posterior predictive checks of the human fits in the social-meaning study: the ten significant
human effects (:func:`effect_check`) and the 144 condition means (:func:`cell_check`),
recomputed on data replicated with *new raters*
(:func:`models.social_meaning.rsa.replicate_ratings`), exactly as on the observed ratings. Why
new raters: ``docs/studies/social_meaning.md``, "Posterior predictive checks of the human fits".
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from models.social_meaning import esr, rsa
from pragmodels import metrics

#: posterior predictive interval of the checks
PROB = 0.94
#: the 144 condition means: scenario x context x form x attribute
CELL_KEYS = ["scenario", "context", "form", "attribute"]


@functools.partial(jax.jit, static_argnums=(0, 5))
def _replicate_many(kind, draws, keys, condition, participant, n_participants):
    return jax.vmap(lambda d, k: rsa.replicate_ratings(kind, d, k, condition, participant, n_participants))(draws, keys)


def _replicates(tree, kind: str, data: dict, n_rows: int, n_draws: int, seed: int) -> np.ndarray:
    """``[draw, response]`` replicated ratings with new raters (:func:`models.social_meaning.rsa.replicate_ratings`)
    for the fit's data ``data`` (``condition``, ``participant``, ``n_participants``)."""
    post = tree["posterior"].to_dataset().stack(sample=("chain", "draw")).transpose("sample", ...)
    idx = np.random.default_rng(seed).choice(post.sizes["sample"], size=min(n_draws, post.sizes["sample"]), replace=False)
    draws = {v: jnp.asarray(post[v].values[idx]) for v in post.data_vars if v in rsa.DRAW_KEYS}
    if len(data["condition"]) != n_rows:
        raise ValueError(f"the fit has {len(data['condition'])} ratings; the data have {n_rows}.")
    keys = jax.random.split(jax.random.key(seed), len(idx))
    y = _replicate_many(kind, draws, keys, jnp.asarray(data["condition"]), jnp.asarray(data["participant"]),
                        int(data["n_participants"]))
    return np.asarray(y, float)


def _interval(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = (1 - PROB) / 2, 1 - (1 - PROB) / 2
    return np.quantile(x, lo, axis=0), np.quantile(x, hi, axis=0)


def effect_check(tree, kind: str, human: pd.DataFrame, data: dict, n_draws: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The ten significant effects (:data:`models.social_meaning.esr.EFFECTS`) on replicated data:
    one row per effect with the observed value, the replicated median and 94% interval,
    ``inside`` and the posterior predictive p-value ``P(rep >= observed)``."""
    frame = metrics.valid_ratings(human).frame
    c = esr.effect_weights(frame)
    obs = c @ frame["rating"].to_numpy(float)
    rep = _replicates(tree, kind, data, len(frame), n_draws, seed) @ c.T  # [draw, effect]
    lo, hi = _interval(rep)
    return pd.DataFrame([dict(kind=k, attribute=a, observed=obs[j], median=float(np.median(rep[:, j])), lo=lo[j],
                              hi=hi[j], inside=bool(lo[j] <= obs[j] <= hi[j]), p_rep_ge=float((rep[:, j] >= obs[j]).mean()))
                         for j, (k, a) in enumerate(esr.EFFECTS)])


def cell_check(tree, kind: str, human: pd.DataFrame, data: dict, n_draws: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The 144 condition means on replicated data: one row per scenario x context x form x
    attribute with the observed mean, the replicated median and 94% interval and ``inside``."""
    frame = metrics.valid_ratings(human).frame.reset_index(drop=True)
    codes, cells = pd.factorize(pd.MultiIndex.from_frame(frame[CELL_KEYS]), sort=True)
    if len(cells) != 144:
        raise ValueError(f"expected 144 scenario x context x form x attribute cells; the data have {len(cells)}.")
    w = np.zeros((len(frame), len(cells)))
    w[np.arange(len(frame)), codes] = 1.0
    w /= w.sum(0)
    obs = frame["rating"].to_numpy(float) @ w
    rep = _replicates(tree, kind, data, len(frame), n_draws, seed) @ w
    lo, hi = _interval(rep)
    out = cells.to_frame(index=False, name=CELL_KEYS)  # factorize drops the MultiIndex's names
    out["observed"], out["median"], out["lo"], out["hi"] = obs, np.median(rep, 0), lo, hi
    out["inside"] = (out.observed >= out.lo) & (out.observed <= out.hi)
    return out


#: the share of an observed interaction a model's replicated median must reach (issue 37, item 7)
REACH = 0.7


def interaction_reach(effects: pd.DataFrame, cells: pd.DataFrame, reach: float = REACH) -> pd.DataFrame:
    """How much of each form x context interaction each human model reaches on replicated data,
    beside each attribute's context main effect (high minus low precision context, over scenarios
    and forms), observed and in the replicated medians of the 144 condition means.

    Parameters
    ----------
    effects : pandas.DataFrame
        ``tables/human_ppc_effects.csv`` (:func:`effect_check` per model).
    cells : pandas.DataFrame
        ``tables/human_ppc_cells.csv`` (:func:`cell_check` per model; the columns ``0``-``3`` of an
        older run read as :data:`CELL_KEYS`).
    reach : float
        The share below which an interaction is not reached.

    Returns
    -------
    pandas.DataFrame
        One row per model and interaction: ``model``, ``attribute``, ``observed``, ``median``,
        ``share`` (median / observed), ``reached``, ``context_observed``, ``context_model``.
    """
    cells = cells.rename(columns={str(i): k for i, k in enumerate(CELL_KEYS)})
    by = cells.groupby(["model", "attribute", "context"])[["observed", "median"]].mean()
    context = (by.xs("high", level="context") - by.xs("low", level="context")).rename(
        columns={"observed": "context_observed", "median": "context_model"})
    out = effects[effects.kind == "interaction"][["model", "attribute", "observed", "median"]].copy()
    out["share"] = out["median"] / out["observed"]
    out["reached"] = out["share"] >= reach
    return out.join(context, on=["model", "attribute"]).reset_index(drop=True)


def feature_contrasts(tree, n_draws: int = 100, seed: int = 0) -> pd.DataFrame:
    """The RSA link's features (``qud_fit``: ``p_exact``, ``p_qud_fit``, centred and per SD, as they
    enter the ratings) as form effect (precise minus approximate, over contexts), context effect
    (high minus low precision context, over forms) and interaction (the form effect under high minus
    under low), averaged over scenarios; posterior medians over ``n_draws`` draws of a fit.

    Parameters
    ----------
    tree : xarray.DataTree
        An RSA fit with the default link.
    n_draws : int
        Draws used.
    seed : int
        Which draws.

    Returns
    -------
    pandas.DataFrame
        One row per feature: ``feature``, ``form``, ``context``, ``interaction``.
    """
    post = tree["posterior"].to_dataset().stack(sample=("chain", "draw")).transpose("sample", ...)
    idx = np.random.default_rng(seed).choice(post.sizes["sample"], size=min(n_draws, post.sizes["sample"]), replace=False)
    psi = post["psi"].values[idx] if "psi" in post else np.zeros((len(idx), 2))
    f = np.stack([np.asarray(rsa.link_features(post["alpha"].values[i], post["cost_precise"].values[i],
                                               post["theta"].values[i], p, "qud_fit")).mean(0)
                  for i, p in zip(idx, psi)])  # [draw, context (low, high), form (precise, approx), feature]
    c, u = rsa.CONTEXTS.index("high"), rsa.FORMS.index("precise")
    d = f[:, :, u] - f[:, :, 1 - u]  # [draw, context, feature]
    rows = dict(form=d.mean(1), context=f[:, c].mean(1) - f[:, 1 - c].mean(1), interaction=d[:, c] - d[:, 1 - c])
    return pd.DataFrame([{"feature": name, **{k: float(np.median(v[:, j])) for k, v in rows.items()}}
                         for j, name in enumerate(rsa.FEATURE_SETS["qud_fit"])])
