"""Calibration metrics of Mühlenbernd (2026, Section 5) for human vs model ratings.

Layering: ``numpy``, ``pandas`` and ``scipy.stats`` only (no JAX); used by the social-meaning
study in ``models/`` and by the CLI.

Inputs are tidy frames with columns ``context`` (low/high), ``form`` (precise/approx),
``attribute`` and ``rating``; LLM frames may carry ``valid``. Definitions (paper eqs. 1-2 and
the upstream analysis code):

- cell means: attribute x context x form means pooled over scenarios (24 cells);
- main effect ``Δ = mean(precise) − mean(approx)`` pooled over all rows of the attribute;
- interaction ``Δ^HP − Δ^LP`` with ``Δ^c`` pooled over the rows of context ``c``;
- ``ESR = |Δ_M| / |Δ_H|``; ``CDS_m`` / ``CDS_i`` = mean ``|ESR − 1|`` over the significant human
  main effects / interactions; ``CDS = (CDS_m + CDS_i) / 2`` (= the mean over all ten);
- ``DAS`` / ``ISS``: share of significant main effects / interactions whose sign agrees;
- Spearman rho, CCC and RMSE over the 24 cell means; ``rmse_individual``: each human rating
  against the model's mean for its cell (Table 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

__all__ = [
    "SIGNIFICANT_MAIN",
    "SIGNIFICANT_INTERACTION",
    "valid_ratings",
    "cell_means",
    "effects",
    "ccc_lin",
    "ccc_upstream",
    "calibration_metrics",
    "esr_table",
]

#: significant human effects (Solt et al. 2025, as used in the paper, Section 3)
SIGNIFICANT_MAIN = ("competent", "knowledgeable", "well-prepared", "helpful", "pedantic")
SIGNIFICANT_INTERACTION = ("competent", "knowledgeable", "well-prepared", "helpful", "likeable")
_CELL = ["attribute", "context", "form"]


@dataclass
class ValidRatings:
    frame: pd.DataFrame
    n_invalid: int


def valid_ratings(df: pd.DataFrame) -> ValidRatings:
    """Drop rows with ``valid`` false or a null rating, and count them (never silently).

    Parameters
    ----------
    df : pandas.DataFrame
        A ratings frame with ``rating`` and, optionally, ``valid``.

    Returns
    -------
    ValidRatings
        ``frame``: the kept rows (a copy), ``rating`` as float; ``n_invalid``: rows dropped.
    """
    ok = df["rating"].notna()
    if "valid" in df:
        ok &= df["valid"].astype(bool)
    out = df.loc[ok].copy()
    out["rating"] = out["rating"].astype(float)
    return ValidRatings(out, int((~ok).sum()))


def cell_means(df: pd.DataFrame) -> pd.Series:
    """Mean rating per attribute x context x form (pooled over scenarios and samples).

    Parameters
    ----------
    df : pandas.DataFrame
        Columns ``attribute``, ``context``, ``form``, ``rating`` (drop invalid rows first:
        :func:`valid_ratings`).

    Returns
    -------
    pandas.Series
        Indexed by ``(attribute, context, form)`` (sorted), one value per cell present in ``df``.
    """
    return df.groupby(_CELL)["rating"].mean()


def effects(df: pd.DataFrame) -> pd.DataFrame:
    """Per attribute: ``main`` (Δ pooled over contexts), ``delta_high``, ``delta_low``, ``interaction``.

    ``Δ = mean(precise) − mean(approx)`` over the attribute's rows (``main``) or those of one
    context; ``interaction = delta_high − delta_low``.

    Parameters
    ----------
    df : pandas.DataFrame
        Columns ``attribute``, ``context`` (low/high), ``form`` (precise/approx), ``rating``.

    Returns
    -------
    pandas.DataFrame
        Indexed by attribute; columns ``main``, ``delta_high``, ``delta_low``, ``interaction``
        (NaN where a context or form has no rows).
    """
    rows = {}
    for attr, g in df.groupby("attribute"):
        d = lambda x: x.loc[x.form == "precise", "rating"].mean() - x.loc[x.form == "approx", "rating"].mean()
        hi, lo = d(g[g.context == "high"]), d(g[g.context == "low"])
        rows[attr] = dict(main=d(g), delta_high=hi, delta_low=lo, interaction=hi - lo)
    return pd.DataFrame.from_dict(rows, orient="index")


def ccc_lin(h: npt.ArrayLike, m: npt.ArrayLike) -> float:
    """Lin's (1989) concordance correlation coefficient (population moments throughout).

    Shapes: ``h [cell]`` (human), ``m [cell]`` (model), paired -> a float.
    """
    h, m = np.asarray(h, float), np.asarray(m, float)
    cov = np.mean((h - h.mean()) * (m - m.mean()))
    return float(2 * cov / (h.var() + m.var() + (h.mean() - m.mean()) ** 2))


def ccc_upstream(h: npt.ArrayLike, m: npt.ArrayLike) -> float:
    """CCC as the upstream analysis code computes it: population covariance in the numerator but
    sample (ddof=1) variances in the denominator; about 0.03 below Lin's on these data. The
    paper's Table 2 reports this variant.

    Shapes: ``h [cell]`` (human), ``m [cell]`` (model), paired -> a float.
    """
    h, m = np.asarray(h, float), np.asarray(m, float)
    cov = np.mean((h - h.mean()) * (m - m.mean()))
    return float(2 * cov / (h.var(ddof=1) + m.var(ddof=1) + (h.mean() - m.mean()) ** 2))


def esr_table(human: pd.DataFrame, model: pd.DataFrame) -> pd.DataFrame:
    """ESR for each significant effect: rows ``(kind, attribute)``, columns ``delta_h, delta_m, esr``.

    Parameters
    ----------
    human, model : pandas.DataFrame
        Ratings frames as :func:`effects` takes them (invalid rows dropped), with every
        attribute of :data:`SIGNIFICANT_MAIN` and :data:`SIGNIFICANT_INTERACTION`.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``(kind, attribute)``, ``kind`` ``"main"`` (:data:`SIGNIFICANT_MAIN`) or
        ``"interaction"`` (:data:`SIGNIFICANT_INTERACTION`); columns ``delta_h``, ``delta_m``,
        ``esr = |delta_m| / |delta_h|`` (NaN where ``delta_h == 0``) and ``sign_agrees``.
    """
    eh, em = effects(human), effects(model)
    rows = []
    for kind, attrs, col in (("main", SIGNIFICANT_MAIN, "main"), ("interaction", SIGNIFICANT_INTERACTION, "interaction")):
        for a in attrs:
            dh, dm = eh.loc[a, col], em.loc[a, col]
            rows.append(dict(kind=kind, attribute=a, delta_h=dh, delta_m=dm,
                             esr=abs(dm) / abs(dh) if dh != 0 else np.nan,
                             sign_agrees=bool(np.sign(dh) == np.sign(dm))))
    return pd.DataFrame(rows).set_index(["kind", "attribute"])


def calibration_metrics(human: pd.DataFrame, model: pd.DataFrame) -> dict[str, float]:
    """All Table 2-4 metrics for one model x prompt. Invalid model rows are excluded and counted.

    Parameters
    ----------
    human, model : pandas.DataFrame
        Ratings frames (columns ``attribute``, ``context``, ``form``, ``rating``, optionally
        ``valid``); rows with ``valid`` false or a null rating are dropped from both.

    Returns
    -------
    dict of str to float
        ``spearman``, ``ccc`` (:func:`ccc_upstream`), ``ccc_lin``, ``rmse`` (over the cell
        means), ``rmse_individual``, ``cds_m``, ``cds_i``, ``cds``, ``das``, ``iss`` (as the
        module docstring defines them), and ``n_valid`` / ``n_invalid``: the model's rows kept
        and dropped.

    Raises
    ------
    ValueError
        When the human and model frames do not cover the same attribute x context x form cells.
    """
    h = valid_ratings(human)
    m = valid_ratings(model)
    hc, mc = cell_means(h.frame), cell_means(m.frame)
    if not hc.index.equals(mc.index):
        missing = sorted(set(hc.index) ^ set(mc.index))
        raise ValueError(f"human and model cells differ: {missing[:4]}...; every attribute x context x form cell needs ratings.")
    esr = esr_table(h.frame, m.frame)
    dev = (esr["esr"] - 1).abs()
    cds_m, cds_i = float(dev.loc["main"].mean()), float(dev.loc["interaction"].mean())
    indiv = h.frame.join(mc.rename("model_mean"), on=_CELL)
    return dict(
        spearman=float(stats.spearmanr(hc.values, mc.values).statistic),
        ccc=ccc_upstream(hc.values, mc.values),
        ccc_lin=ccc_lin(hc.values, mc.values),
        rmse=float(np.sqrt(np.mean((hc.values - mc.values) ** 2))),
        rmse_individual=float(np.sqrt(np.mean((indiv["rating"] - indiv["model_mean"]) ** 2))),
        cds_m=cds_m, cds_i=cds_i, cds=(cds_m + cds_i) / 2,
        das=float(esr.loc["main", "sign_agrees"].mean()),
        iss=float(esr.loc["interaction", "sign_agrees"].mean()),
        n_valid=len(m.frame), n_invalid=m.n_invalid,
    )
