"""The paper's Section 6 claims about calibration as posterior probabilities under the ESR
measurement model (:mod:`models.social_meaning.esr`).

Each claim of :data:`CLAIMS` is a conjunction of components, predicates on the signed ratios
``r [condition, effect]``, evaluated on the paper's own point estimates and on every posterior
draw (:func:`claims_tables`); :class:`Ratios` reads them by label. Each claim and each component
carries its posterior probability with the Monte Carlo standard error of that probability (the
MCSE of the mean of the 0/1 indicator over the chains, ``arviz_stats.mcse``). Supported at
``P >= 0.95``, contradicted at ``P <= 0.05``, and "undecided at this precision" within two MCSE of
either cut; "near-calibrated" is ``|log r| < log 1.25`` (:data:`ROPE`). Each claim quotes its
source sentence in the paper. How the claims are read: ``docs/studies/social_meaning.md``, "The
paper's claims as posterior probabilities".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from models.social_meaning.esr import EFFECTS, N_MAIN
from pragmodels.datasets import LLMS, PROMPTS

#: region of practical equivalence for "calibrated": |log r| < log 1.25
ROPE = float(np.log(1.25))
SUPPORT = 0.95
#: a probability within this many MCSE of a cut is undecided at this precision
MCSE_MARGIN = 2.0
#: the readings a claim or component can have
READINGS = ("supported", "contradicted", "undecided", "undecided at this precision")
#: the effects' labels, as the components name them ("main pedantic", "interaction likeable")
EFFECT_LABELS = tuple(f"{k} {a}" for k, a in EFFECTS)


class Ratios:
    """Signed ratios of some draws, ``r [draw, condition, effect]``, with accessors by label."""

    def __init__(self, r: np.ndarray, labels: list[str]):
        self.r, self.labels = np.asarray(r, float), list(labels)

    def of(self, model: str, prompt: str) -> np.ndarray:
        return self.r[:, self.labels.index(f"{model} {prompt}")]  # [draw, effect]

    def cds_m(self, m, p):
        return np.abs(self.of(m, p)[:, :N_MAIN] - 1).mean(-1)

    def cds_i(self, m, p):
        return np.abs(self.of(m, p)[:, N_MAIN:] - 1).mean(-1)

    def cds(self, m, p):
        return (self.cds_m(m, p) + self.cds_i(m, p)) / 2


def _near(x):
    return np.abs(np.log(np.abs(x))) < ROPE


def _per_effect(R: Ratios, pairs, test, main_only: bool = False) -> dict[str, np.ndarray]:
    """One component per (model, prompt, effect): ``test`` of that effect's ratio."""
    n = N_MAIN if main_only else len(EFFECTS)
    return {f"{m} {p} {EFFECT_LABELS[k]}": test(R.of(m, p)[:, k]) for m, p in pairs for k in range(n)}


def _per_prompt(test) -> Callable[[Ratios], dict[str, np.ndarray]]:
    return lambda R: {p: test(R, p) for p in PROMPTS}


def _one(test) -> Callable[[Ratios], dict[str, np.ndarray]]:
    return lambda R: {"": test(R)}


@dataclass(frozen=True)
class Claim:
    """One claim: its plain words, the paper's sentence it reads (verbatim), and its components,
    ``parts(R) -> {component: [draw] booleans}`` (one, named ``""``, for a single comparison); the
    claim holds on a draw where every component does."""

    id: str
    text: str
    source: str
    parts: Callable[[Ratios], dict[str, np.ndarray]]

    def test(self, R: Ratios) -> np.ndarray:  # noqa: N803 - R, the ratios
        """[draw] booleans: every component holds."""
        return np.logical_and.reduce([np.asarray(v) for v in self.parts(R).values()])


_GPT = [("gpt", p) for p in PROMPTS]
_ALL = [(m, p) for m in LLMS for p in PROMPTS]
#: the sentences the claims read (verbatim from the paper's text; the section or caption in brackets)
FIG1 = ("GPT clusters closely around the identity line across all conditions, reflecting near-calibrated magnitude "
        "alignment. [Figure 1]")
SEC6_STRUCTURE = ("Structural alignment is uniformly high across all models and conditions: DAS and ISS equal 1.0 for "
                  "all attributes with non-zero human effects, indicating perfect reproduction of both main effect "
                  "polarity and form $\\times$ context interaction directions. [Sec. 6]")
SEC6_GPT_BEST = ("GPT shows the best overall calibration (CDS: 0.3–0.4), with relatively modest deviations on both main "
                 "effects and interactions across all prompting conditions. [Sec. 6]")
SEC6_DISSOCIATION = ("[Table 3] reveals systematic architecture-dependent differences in magnitude alignment, with a "
                     "consistent dissociation between main-effect and interaction calibration. [Sec. 6]")
SEC6_CLAUDE = ("Claude exhibits moderate but uneven miscalibration: main-effect CDS varies substantially across "
               "conditions (0.4–1.24), suggesting high sensitivity to prompting, while interaction calibration is more "
               "stable (0.17–0.23) and consistently lower than main-effect deviation — a pattern not shared by the "
               "other models. [Sec. 6]")
SEC6_GEMINI = ("Gemini displays severe magnitude inflation throughout, with interaction effects particularly affected "
               "($\\text{CDS}_{\\text{i}}$: 0.67–2.47), frequently exceeding $2\\text{--}3\\times$ the human effect "
               "magnitude, while main-effect miscalibration, though substantial ($\\text{CDS}_{\\text{m}}$: 1.03–1.72), "
               "is comparatively less extreme. [Sec. 6]")
SEC7_GEMINI = ("GPT approximates human effect magnitudes closely across all conditions, while Gemini systematically "
               "inflates both main effects and interactions — sometimes by factors of 2–3. [Sec. 7]")
SEC6_FIG2 = ("For Claude and Gemini, main effects are systematically exaggerated (ESR $>1$), while GPT shows "
             "near-calibrated or attenuated main effects throughout. [Sec. 6]")
SEC6_KMA = ("The KMA condition produces the most consistent calibration improvements across models prone to "
            "magnitude exaggeration. [Sec. 6]")
ABSTRACT_KMA = ("Prompting models to reason about speaker knowledge and motives most consistently reduces magnitude "
                "deviation, while prompting for alternative-awareness tends to amplify exaggeration. [Abstract]")
SEC6_COM_GPT = "For GPT, COM achieves the best overall CDS (0.304) and lowest RMSE (0.547). [Sec. 6]"
SEC6_ALT = ("While it reduces main-effect deviation for GPT ($\\text{CDS}_{\\text{m}}$: 0.325 $\\to$ 0.303) and "
            "interaction calibration for Claude ($\\text{CDS}_{\\text{i}}$: 0.231 $\\to$ 0.205), it substantially "
            "amplifies magnitude inflation for Gemini ($\\text{CDS}_{\\text{i}}$: 1.572 $\\to$ 2.470), suggesting that "
            "explicitly foregrounding alternative utterances may exacerbate exaggeration in already poorly calibrated "
            "models. [Sec. 6]")
SEC7_ALT_GPT = "For GPT, it yields modest improvements on both main-effect and interaction calibration. [Sec. 7]"
SEC7_ALT_CLAUDE = ("For Claude, it reduces interaction deviation but simultaneously inflates main-effect deviation to "
                   "its highest value across all conditions, resulting in a net worse overall calibration than minimal "
                   "prompting. [Sec. 7]")
SEC7_ALT_GEMINI = ("For Gemini, ALT produces the worst calibration observed across any model–condition combination, "
                   "severely amplifying magnitude inflation relative to baseline. [Sec. 7]")
SEC6_COM = ("Combined prompting (COM) stands out as the only condition that improves all calibration-sensitive metrics "
            "(CCC, RMSE, $\\text{CDS}_{\\text{m}}$, $\\text{CDS}_{\\text{i}}$) relative to minimal prompting for every "
            "model. [Sec. 6]")
SEC6_COM_GEMINI = ("For Gemini, COM slightly reduces miscalibration relative to MIN (CDS: 1.480 $\\to$ 1.338) while "
                   "remaining less effective than KMA on CDS. [Sec. 6]")
SEC7_KMA_COM = ("At the same time, COM clearly underperforms KMA on magnitude calibration for both models prone to "
                "exaggeration: for Claude, KMA yields better interaction calibration, and for Gemini the advantage of "
                "KMA over COM is even more pronounced, affecting both main-effect and interaction calibration. [Sec. 7]")

CLAIMS = (
    Claim("no_sign_flip", "Every LLM x prompt reproduces the sign of all ten human effects (DAS = ISS = 1)",
          SEC6_STRUCTURE, lambda R: _per_effect(R, _ALL, lambda r: r > 0)),
    Claim("gpt_near_calibrated", "GPT is near-calibrated: all ten of its ESRs within the ROPE, under every prompt",
          FIG1, lambda R: _per_effect(R, _GPT, _near)),
    Claim("gpt_best_overall", "GPT has the lowest CDS averaged over prompts", SEC6_GPT_BEST,
          lambda R: {f"gpt < {m}": np.mean([R.cds("gpt", p) for p in PROMPTS], 0)
                     < np.mean([R.cds(m, p) for p in PROMPTS], 0) for m in ("claude", "gemini")}),
    Claim("gpt_interactions_worse", "GPT's interactions deviate more than its main effects (CDS_i > CDS_m) under "
          "every prompt", SEC6_DISSOCIATION, _per_prompt(lambda R, p: R.cds_i("gpt", p) > R.cds_m("gpt", p))),
    Claim("claude_interactions_better", "Claude's interactions deviate less than its main effects (CDS_i < CDS_m) "
          "under every prompt", SEC6_CLAUDE, _per_prompt(lambda R, p: R.cds_i("claude", p) < R.cds_m("claude", p))),
    Claim("gemini_interactions_worse", "Gemini's interactions deviate more than its main effects (CDS_i > CDS_m) "
          "under every prompt", SEC6_GEMINI, _per_prompt(lambda R, p: R.cds_i("gemini", p) > R.cds_m("gemini", p))),
    Claim("gemini_inflates_all", "Gemini exaggerates all ten effects (ESR > 1) under every prompt", SEC7_GEMINI,
          lambda R: _per_effect(R, [("gemini", p) for p in PROMPTS], lambda r: r > 1)),
    Claim("claude_gemini_main_exaggerated", "Claude and Gemini exaggerate all five main effects (ESR > 1) under "
          "every prompt", SEC6_FIG2,
          lambda R: _per_effect(R, [(m, p) for m in ("claude", "gemini") for p in PROMPTS], lambda r: r > 1, True)),
    Claim("gpt_main_not_exaggerated", "GPT's main effects are near-calibrated or attenuated (ESR < 1.25) under every "
          "prompt", SEC6_FIG2, lambda R: _per_effect(R, _GPT, lambda r: np.abs(r) < 1.25, True)),
    Claim("kma_reduces_claude_gemini", "KMA reduces CDS relative to MIN for Claude and for Gemini", SEC6_KMA,
          lambda R: {m: R.cds(m, "KMA") < R.cds(m, "MIN") for m in ("claude", "gemini")}),
    Claim("kma_reduces_gpt", "KMA reduces CDS relative to MIN for GPT too (the abstract's unqualified wording)",
          ABSTRACT_KMA, _one(lambda R: R.cds("gpt", "KMA") < R.cds("gpt", "MIN"))),
    Claim("gpt_com_best", "COM gives GPT its lowest CDS of the four prompts", SEC6_COM_GPT,
          lambda R: {f"COM < {p}": R.cds("gpt", "COM") < R.cds("gpt", p) for p in ("MIN", "ALT", "KMA")}),
    Claim("alt_gpt_improves", "ALT lowers both CDS_m and CDS_i relative to MIN for GPT", SEC7_ALT_GPT,
          lambda R: {"CDS_m": R.cds_m("gpt", "ALT") < R.cds_m("gpt", "MIN"),
                     "CDS_i": R.cds_i("gpt", "ALT") < R.cds_i("gpt", "MIN")}),
    Claim("alt_claude_interactions", "ALT lowers Claude's CDS_i relative to MIN", SEC6_ALT,
          _one(lambda R: R.cds_i("claude", "ALT") < R.cds_i("claude", "MIN"))),
    Claim("alt_claude_worse", "ALT makes Claude's overall CDS worse than MIN", SEC7_ALT_CLAUDE,
          _one(lambda R: R.cds("claude", "ALT") > R.cds("claude", "MIN"))),
    Claim("alt_amplifies_gemini", "ALT amplifies Gemini's interaction deviation CDS_i relative to MIN", SEC6_ALT,
          _one(lambda R: R.cds_i("gemini", "ALT") > R.cds_i("gemini", "MIN"))),
    Claim("alt_gemini_worst", "Gemini under ALT has the highest CDS of all twelve model x prompt pairs",
          SEC7_ALT_GEMINI, lambda R: {f"above {m} {p}": R.cds("gemini", "ALT") >= R.cds(m, p) for m, p in _ALL
                                      if (m, p) != ("gemini", "ALT")}),
    Claim("alt_amplifies_claude_gemini", "ALT raises CDS relative to MIN for Claude and Gemini", ABSTRACT_KMA,
          lambda R: {m: R.cds(m, "ALT") > R.cds(m, "MIN") for m in ("claude", "gemini")}),
    Claim("com_improves_all", "COM lowers both CDS_m and CDS_i relative to MIN for every model (its CCC and RMSE "
          "parts are not modelled)", SEC6_COM,
          lambda R: {f"{m} {name}": c(m, "COM") < c(m, "MIN") for m in LLMS
                     for name, c in (("CDS_m", R.cds_m), ("CDS_i", R.cds_i))}),
    Claim("gemini_kma_com_min", "For Gemini, CDS under KMA < COM < MIN", SEC6_COM_GEMINI,
          lambda R: {"KMA < COM": R.cds("gemini", "KMA") < R.cds("gemini", "COM"),
                     "COM < MIN": R.cds("gemini", "COM") < R.cds("gemini", "MIN")}),
    Claim("kma_beats_com", "KMA beats COM on Claude's CDS_i and on Gemini's CDS_m and CDS_i", SEC7_KMA_COM,
          lambda R: {"claude CDS_i": R.cds_i("claude", "KMA") < R.cds_i("claude", "COM"),
                     "gemini CDS_m": R.cds_m("gemini", "KMA") < R.cds_m("gemini", "COM"),
                     "gemini CDS_i": R.cds_i("gemini", "KMA") < R.cds_i("gemini", "COM")}),
)


def reading(p: float, mcse: float) -> str:
    """A probability's reading: supported (``p >= 0.95``), contradicted (``p <= 0.05``), undecided
    between, and "undecided at this precision" within :data:`MCSE_MARGIN` MCSE of either cut.

    Parameters
    ----------
    p : float
        The posterior probability.
    mcse : float
        Its Monte Carlo standard error.

    Returns
    -------
    str
        One of :data:`READINGS`.
    """
    if min(abs(p - SUPPORT), abs(p - (1 - SUPPORT))) < MCSE_MARGIN * mcse:
        return "undecided at this precision"
    return "supported" if p >= SUPPORT else "contradicted" if p <= 1 - SUPPORT else "undecided"


def indicator_mcse(x: np.ndarray) -> tuple[float, float, float]:
    """The mean of a 0/1 indicator over ``[chain, draw]``, its MCSE and its effective sample size
    (``arviz_stats.mcse`` / ``ess``, method ``"mean"``); an indicator equal on every draw has MCSE 0
    and ESS the number of draws.

    Parameters
    ----------
    x : numpy.ndarray
        ``[chain, draw]`` booleans.

    Returns
    -------
    (p, mcse, ess) : tuple of float
    """
    from arviz_stats import ess, mcse

    x = np.asarray(x, float)
    if x.ndim != 2:
        raise ValueError(f"indicator of shape {x.shape}; expected [chain, draw].")
    if x.min() == x.max():
        return float(x.mean()), 0.0, float(x.size)
    return float(x.mean()), float(mcse(x, method="mean")), float(ess(x, method="mean"))


def claims_tables(tree, point: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every claim of :data:`CLAIMS` and every component of each: the paper's verdict (the predicate
    on the point estimates ``point [condition, effect]``, i.e. ``Δ̂_M / Δ̂_H``), the posterior
    probability under the measurement model ``tree`` (``esr [chain, draw, condition, effect]``), its
    MCSE and effective sample size, and its reading (:func:`reading`).

    Parameters
    ----------
    tree : xarray.DataTree
        The measurement model's fit.
    point : numpy.ndarray
        The paper's ratios, ``[condition, effect]``.

    Returns
    -------
    claims : pandas.DataFrame
        One row per claim: ``id``, ``claim``, ``source``, ``paper``, ``probability``, ``mcse``,
        ``ess``, ``reading``, ``components``, ``failing`` (components below 0.95).
    components : pandas.DataFrame
        One row per component: ``id``, ``component``, ``paper``, ``probability``, ``mcse``, ``reading``.
    """
    post = tree["posterior"]["esr"]
    labels = [str(c) for c in post["condition"].values]
    if tuple(str(e) for e in post["effect"].values) != tuple(f"{k}:{a}" for k, a in EFFECTS):
        raise ValueError("the measurement model's effects are not models.social_meaning.esr.EFFECTS in order.")
    shape = (post.sizes["chain"], post.sizes["draw"])
    r = post.transpose("chain", "draw", "condition", "effect").values
    draws = Ratios(r.reshape(-1, *r.shape[2:]), labels)
    at_point = Ratios(np.asarray(point, float)[None], labels)
    rows, parts = [], []
    for c in CLAIMS:
        both = c.parts(draws), c.parts(at_point)
        for name, x in both[0].items():
            p, se, _ = indicator_mcse(np.asarray(x).reshape(shape))
            parts.append(dict(id=c.id, component=name or "(one comparison)", paper=bool(both[1][name][0]),
                              probability=p, mcse=se, reading=reading(p, se)))
        p, se, n_eff = indicator_mcse(c.test(draws).reshape(shape))
        mine = [r for r in parts if r["id"] == c.id]
        rows.append(dict(id=c.id, claim=c.text, source=c.source, paper=bool(c.test(at_point)[0]), probability=p,
                         mcse=se, ess=n_eff, reading=reading(p, se), components=len(mine),
                         failing=sum(r["probability"] < SUPPORT for r in mine)))
    return pd.DataFrame(rows), pd.DataFrame(parts)


def claims_table(tree, point: np.ndarray) -> pd.DataFrame:
    """The claims of :func:`claims_tables` (one row per claim).

    Parameters
    ----------
    tree : xarray.DataTree
        The measurement model's fit.
    point : numpy.ndarray
        The paper's ratios, ``[condition, effect]``.

    Returns
    -------
    pandas.DataFrame
    """
    return claims_tables(tree, point)[0]
