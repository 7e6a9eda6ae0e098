r"""Wavelength production (the paper's Section 5.1): the LM's own clues against Inverse-RSA clues.

:func:`production_scores` judges each item's produced clues by two listeners (the LM's own
literal listener, circular for Inverse-RSA, and the LM-RSA listener fitted to the humans);
:func:`summarise` gives Inverse-RSA minus direct with bootstrap intervals over items;
:func:`judge_tables` builds the judges' tables. What is compared and why:
``docs/studies/wavelength.md``, "Production: direct clues against Inverse-RSA clues".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np
import pandas as pd
import xarray as xr

from models.wavelength import listeners, lm_scores
from pragmodels.logmath import log_normalize
from pragmodels.semantics import lm_literal_semantics

__all__ = ["judge_tables", "production_scores", "summarise"]


def judge_tables(ds: xr.Dataset, clues: pd.DataFrame, alpha: float, beta: float) -> dict[str, np.ndarray]:
    """Each produced clue's listener distributions under the two judges.

    Parameters
    ----------
    ds : xarray.Dataset
        :func:`models.wavelength.lm_scores.load_scores` output for the items to judge (production finished):
        ``log_lm``, ``utt_mask``, ``prod_log_lm``, ``prod_mask``.
    clues : pandas.DataFrame
        The ``<lm>_clues.csv`` rows (``item, kind, index, clue``).
    alpha, beta : float
        The human-fitted LM-RSA listener's parameters.

    Returns
    -------
    dict
        ``lm_l0`` and ``fitted`` ``[item, alt, state]`` probabilities (rows of masked
        alternatives are NaN).

    Shapes: ``ds`` with ``item`` I, ``utterance`` U, ``alt`` A, ``state`` S -> ``[I, A, S]``.
    """
    pm_ = ds["prod_mask"].to_numpy().astype(bool)
    prod = np.where(pm_[..., None], np.nan_to_num(ds["prod_log_lm"].to_numpy(), nan=0.0), 0.0)
    lm_l0 = np.exp(np.asarray(log_normalize(lm_literal_semantics(jnp.asarray(prod), 1.0, jnp.asarray(pm_)), axis=-1)))
    umask = ds["utt_mask"].to_numpy().astype(bool)
    log_lm = np.where(umask[..., None], np.nan_to_num(ds["log_lm"].to_numpy(), nan=0.0), 0.0)
    fitted = np.full(prod.shape, np.nan)
    for k, i in enumerate(ds["item"].to_numpy()):
        alts = clues[(clues["item"] == i) & (clues["kind"] == "alternative")].sort_values("index")
        alt_keys = {int(r.index): lm_scores.normalise_clue(str(r.clue)) for r in alts.itertuples()}
        prods = clues[(clues["item"] == i) & (clues["kind"] == "production")].sort_values("index")
        prod_keys = {int(r.index): lm_scores.normalise_clue(str(r.clue)) for r in prods.itertuples()}
        rows = np.nonzero(pm_[k])[0]
        if rows.size == 0:
            continue
        # one batch row per produced clue: [that clue, the item's alternatives]
        sem = np.repeat(log_lm[k][None], rows.size, axis=0)
        mask = np.repeat(umask[k][None], rows.size, axis=0)
        for r, a in enumerate(rows):
            sem[r, 0] = prod[k, a]
            for u, key in alt_keys.items():
                if key == prod_keys.get(int(a)):
                    mask[r, u] = False
        s = lm_literal_semantics(jnp.asarray(sem), beta, jnp.asarray(mask))
        fitted[k, rows] = np.exp(np.asarray(listeners.rsa_clue_listener(s, alpha, jnp.asarray(mask))))
    lm_l0[~pm_] = np.nan
    return {"lm_l0": lm_l0, "fitted": fitted}


def _speakers(ds: xr.Dataset, target_index: np.ndarray) -> dict[str, np.ndarray]:
    """``[item, alt]`` speaker distributions at the target: S0, S1 (alpha = 1), and their modes."""
    count = ds["prod_count"].to_numpy()
    pm_ = ds["prod_mask"].to_numpy().astype(bool) & (count > 0)
    prod = np.where(pm_[..., None], np.nan_to_num(ds["prod_log_lm"].to_numpy(), nan=0.0), 0.0)
    s0 = np.where(pm_, count, 0) / np.maximum(np.where(pm_, count, 0).sum(1, keepdims=True), 1)
    s1 = np.exp(np.asarray(listeners.at_target(listeners.inverse_rsa_speaker(prod, count, 1.0, 1.0, prod_mask=pm_),
                                        target_index)))
    s1 = np.where(pm_, s1, 0.0)

    def mode(p: np.ndarray) -> np.ndarray:
        out = np.zeros_like(p)
        out[np.arange(p.shape[0]), np.argmax(p, axis=1)] = 1.0
        return out

    return {"direct (S0 sample)": s0, "direct most frequent (variant)": mode(s0),
            "Inverse-RSA (S1 sample)": s1, "Inverse-RSA argmax (variant)": mode(s1)}


def production_scores(ds: xr.Dataset, clues: pd.DataFrame, target: np.ndarray, alpha: float,
                      beta: float) -> pd.DataFrame:
    """Per item, speaker and judge: the judge's probability of the target and its mean's error.

    Parameters
    ----------
    ds : xarray.Dataset
        Scores of the items (production finished).
    clues : pandas.DataFrame
        ``<lm>_clues.csv``.
    target : numpy.ndarray
        ``[item]`` targets (0..100, multiples of 5), in ``ds`` order.
    alpha, beta : float
        The human-fitted listener's parameters.

    Returns
    -------
    pandas.DataFrame
        ``item, speaker, judge, p_target, abs_error, judge_resolution`` (one row per item,
        speaker and judge; ``judge_resolution``: SD over the item's produced clues of the
        judge's mean).
    """
    states = listeners.STATE_VALUES
    t_idx = np.rint(np.asarray(target, float) / 5.0).astype(int)
    judges = judge_tables(ds, clues, alpha, beta)
    speakers = _speakers(ds, t_idx)
    rows = []
    for jname, tab in (("LM literal listener (circular for Inverse-RSA)", judges["lm_l0"]),
                       ("human-fitted LM-RSA listener", judges["fitted"])):
        p_t = tab[np.arange(tab.shape[0]), :, t_idx]  # [item, alt]
        err = np.abs((tab * states).sum(-1) - np.asarray(target, float)[:, None])
        res = np.nanstd((tab * states).sum(-1), axis=1)
        for sname, w in speakers.items():
            pt = np.nansum(w * np.nan_to_num(p_t), axis=1)
            ae = np.nansum(w * np.nan_to_num(err), axis=1)
            for k, i in enumerate(ds["item"].to_numpy()):
                rows.append({"item": int(i), "speaker": sname, "judge": jname, "p_target": float(pt[k]),
                             "abs_error": float(ae[k]), "judge_resolution": float(res[k])})
    return pd.DataFrame(rows)


def summarise(scores: pd.DataFrame, *, seed: int = 0, n_boot: int = 2000) -> pd.DataFrame:
    """Means over items, and Inverse-RSA minus direct with a 95% bootstrap interval over items.

    Parameters
    ----------
    scores : pandas.DataFrame
        :func:`production_scores` output.
    seed : int
        Bootstrap seed.
    n_boot : int
        Bootstrap resamples.

    Returns
    -------
    pandas.DataFrame
        One row per judge and speaker: ``items, p_target, abs_error, judge_resolution``; for the
        Inverse-RSA rows also ``d_p_target`` / ``d_abs_error`` (minus the matching direct row:
        sample vs sample, argmax vs most frequent) with ``_lo`` / ``_hi``.
    """
    rng = np.random.default_rng(seed)
    pairs: Mapping[str, str] = {"Inverse-RSA (S1 sample)": "direct (S0 sample)",
                                "Inverse-RSA argmax (variant)": "direct most frequent (variant)"}
    out: list[dict[str, Any]] = []
    for (judge, speaker), g in scores.groupby(["judge", "speaker"], sort=False):
        row: dict[str, Any] = {"judge": judge, "speaker": speaker, "items": int(g["item"].nunique()),
                               "p_target": g["p_target"].mean(), "abs_error": g["abs_error"].mean(),
                               "judge_resolution": g["judge_resolution"].mean()}
        if speaker in pairs:
            base = scores[(scores["judge"] == judge) & (scores["speaker"] == pairs[speaker])].set_index("item")
            g2 = g.set_index("item").loc[base.index]
            for col in ("p_target", "abs_error"):
                d = (g2[col] - base[col]).to_numpy()
                boot = d[rng.integers(0, d.size, (n_boot, d.size))].mean(1)
                row[f"d_{col}"] = float(d.mean())
                row[f"d_{col}_lo"], row[f"d_{col}_hi"] = (float(q) for q in np.quantile(boot, [0.025, 0.975]))
        out.append(row)
    return pd.DataFrame(out)
