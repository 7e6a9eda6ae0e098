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
