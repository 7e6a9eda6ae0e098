"""models/wavelength/production: direct vs Inverse-RSA clues under two judges, against loops
written from the paper's equations (S0 = sample frequencies, S1 ∝ S0 · L0(t | u), L0 = the LM's
answer distribution; the fitted judge an RSA listener over [produced clue, alternatives, null]).

Tolerance: float32 JAX against float64 loops, 1e-5 on probabilities."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from models.wavelength import production

S = 21
STATES = np.linspace(0, 100, S)


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def make(seed=0):
    rng = np.random.default_rng(seed)
    n_item, n_utt, n_alt = 3, 5, 4
    log_lm = rng.normal(0, 2, (n_item, n_utt, S))
    utt_mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int8)
    prod = rng.normal(0, 2, (n_item, n_alt, S))
    count = np.array([[20, 8, 4, 0], [30, 2, 0, 0], [10, 10, 6, 6]])
    ds = xr.Dataset({"log_lm": (("item", "utterance", "state"), log_lm),
                     "utt_mask": (("item", "utterance"), utt_mask),
                     "prod_log_lm": (("item", "alt", "state"), prod),
                     "prod_count": (("item", "alt"), count),
                     "prod_mask": (("item", "alt"), (count > 0).astype(np.int8))},
                    coords={"item": [7, 11, 42]})
    rows = []
    for i, n_u in zip([7, 11, 42], utt_mask.sum(1)):
        rows += [{"item": i, "kind": "alternative", "index": u, "clue": f"alt{i}_{u}"} for u in range(1, n_u)]
    for i, c in zip([7, 11, 42], count):
        rows += [{"item": i, "kind": "production", "index": a, "clue": f"prod{i}_{a}"} for a in range(4) if c[a]]
    # item 11's first produced clue is spelled like its first alternative: it must not compete with itself
    rows = [dict(r, clue="Alt11_1 ") if (r["item"] == 11 and r["kind"] == "production" and r["index"] == 0) else r
            for r in rows]
    return ds, pd.DataFrame(rows), np.array([50.0, 0.0, 85.0])


def naive_fitted(sem_rows, alpha, beta):
    """L1(s | row 0) for log-scores rows [u, s] (the real/produced clue first), with a null utterance."""
    l0 = np.array([softmax(beta * (r - np.log(np.exp(r - r.max()).sum()) - r.max())) for r in sem_rows])
    l0 = np.vstack([l0, np.full(S, 1 / S)])
    s1 = np.zeros_like(l0)
    for s in range(S):
        u = np.exp(alpha * np.log(l0[:, s]))
        s1[:, s] = u / u.sum()
    return s1[0] / s1[0].sum()


def test_judges_and_speakers_match_loops():
    ds, clues, target = make()
    alpha, beta = 1.7, 0.6
    scores = production.production_scores(ds, clues, target, alpha, beta)
    assert set(scores["speaker"]) == {"direct (S0 sample)", "direct most frequent (variant)", "Inverse-RSA (S1 sample)",
                                      "Inverse-RSA argmax (variant)"}
    for k, i in enumerate([7, 11, 42]):
        t = int(target[k] / 5)
        cnt = ds["prod_count"].values[k]
        ok = cnt > 0
        l0 = np.array([softmax(r) for r in ds["prod_log_lm"].values[k]])
        s0 = np.where(ok, cnt, 0) / cnt[ok].sum()
        s1 = np.where(ok, s0 * l0[:, t], 0)
        s1 /= s1.sum()
        alts = [ds["log_lm"].values[k, u] for u in range(1, int(ds["utt_mask"].values[k].sum()))]
        fitted = []
        for a in range(4):
            if not ok[a]:
                fitted.append(np.full(S, np.nan))
                continue
            keep = [r for u, r in enumerate(alts, start=1) if not (i == 11 and a == 0 and u == 1)]
            fitted.append(naive_fitted([ds["prod_log_lm"].values[k, a]] + keep, alpha, beta))
        fitted = np.array(fitted)
        for judge, tab in (("LM literal listener (circular for Inverse-RSA)", l0),
                           ("human-fitted LM-RSA listener", fitted)):
            p_t = np.nan_to_num(tab[:, t])
            err = np.nan_to_num(np.abs(tab @ STATES - target[k]))
            want = {"direct (S0 sample)": (s0 @ p_t, s0 @ err),
                    "direct most frequent (variant)": (p_t[np.argmax(s0)], err[np.argmax(s0)]),
                    "Inverse-RSA (S1 sample)": (s1 @ p_t, s1 @ err),
                    "Inverse-RSA argmax (variant)": (p_t[np.argmax(s1)], err[np.argmax(s1)])}
            for speaker, (pt, ae) in want.items():
                row = scores[(scores["item"] == i) & (scores["judge"] == judge) & (scores["speaker"] == speaker)]
                assert len(row) == 1
                np.testing.assert_allclose(row["p_target"].item(), pt, atol=1e-5)
                np.testing.assert_allclose(row["abs_error"].item(), ae, atol=1e-3)


def test_inverse_rsa_never_loses_under_the_circular_judge_and_summary_pairs_speakers():
    """S1 ∝ S0 · L0(t | u) reweights S0 towards clues with a higher L0(t | u), so its expected
    L0(t | u) is at least S0's (covariance of L0(t | ·) with itself under S0 is >= 0)."""
    ds, clues, target = make(1)
    scores = production.production_scores(ds, clues, target, 1.0, 1.0)
    circ = scores[scores["judge"].str.startswith("LM literal")].pivot(index="item", columns="speaker",
                                                                        values="p_target")
    assert np.all(circ["Inverse-RSA (S1 sample)"] >= circ["direct (S0 sample)"] - 1e-7)
    assert np.all(circ["Inverse-RSA argmax (variant)"] >= circ["direct (S0 sample)"] - 1e-7)
    summ = production.summarise(scores, n_boot=200)
    assert len(summ) == 8
    irsa = summ[summ["speaker"] == "Inverse-RSA (S1 sample)"]
    assert irsa["d_p_target"].notna().all()
    assert (irsa["d_p_target_lo"] <= irsa["d_p_target"]).all() and (irsa["d_p_target"] <= irsa["d_p_target_hi"]).all()
    direct = summ[summ["speaker"] == "direct (S0 sample)"]
    assert direct["d_p_target"].isna().all()
