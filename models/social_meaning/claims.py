"""The paper's Section 6 claims about calibration as posterior probabilities under the ESR
measurement model (:mod:`models.social_meaning.esr`).

Each claim of :data:`CLAIMS` is a predicate on the signed ratios ``r [condition, effect]``,
evaluated on the paper's own point estimates and on every posterior draw (:func:`claims_table`);
:class:`Ratios` reads them by label. Supported at ``P >= 0.95``, contradicted at ``P <= 0.05``;
"near-calibrated" is ``|log r| < log 1.25`` (:data:`ROPE`). How the claims are read:
``docs/studies/social_meaning.md``, "The paper's claims as posterior probabilities".
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


def _all(*conds):
    return np.logical_and.reduce([np.asarray(c) for c in conds])


def _near(x):
    return np.abs(np.log(np.abs(x))) < ROPE


@dataclass(frozen=True)
class Claim:
    id: str
    text: str  # the claim in plain words, with the paper's line reference
    test: Callable[[Ratios], np.ndarray]  # [draw] booleans


CLAIMS = (
    Claim("no_sign_flip", "Every LLM x prompt reproduces the sign of all ten human effects (Sec. 6, DAS = ISS = 1)",
          lambda R: _all(*[(R.of(m, p) > 0).all(-1) for m in LLMS for p in PROMPTS])),
    Claim("gpt_near_calibrated", "GPT is near-calibrated: all ten of its ESRs within the ROPE, under every prompt (l. 119)",
          lambda R: _all(*[_near(R.of("gpt", p)).all(-1) for p in PROMPTS])),
    Claim("gpt_best_overall", "GPT has the lowest CDS averaged over prompts (l. 165)",
          lambda R: _all(*[np.mean([R.cds("gpt", p) for p in PROMPTS], 0) < np.mean([R.cds(m, p) for p in PROMPTS], 0)
                           for m in ("claude", "gemini")])),
    Claim("gpt_interactions_worse", "GPT's interactions deviate more than its main effects (CDS_i > CDS_m) under every prompt (l. 161)",
          lambda R: _all(*[R.cds_i("gpt", p) > R.cds_m("gpt", p) for p in PROMPTS])),
    Claim("claude_interactions_better", "Claude's interactions deviate less than its main effects (CDS_i < CDS_m) under every prompt (l. 165)",
          lambda R: _all(*[R.cds_i("claude", p) < R.cds_m("claude", p) for p in PROMPTS])),
    Claim("gemini_interactions_worse", "Gemini's interactions deviate more than its main effects (CDS_i > CDS_m) under every prompt (l. 165)",
          lambda R: _all(*[R.cds_i("gemini", p) > R.cds_m("gemini", p) for p in PROMPTS])),
    Claim("gemini_inflates_all", "Gemini exaggerates all ten effects (ESR > 1) under every prompt (l. 165, 183)",
          lambda R: _all(*[(R.of("gemini", p) > 1).all(-1) for p in PROMPTS])),
    Claim("claude_gemini_main_exaggerated", "Claude and Gemini exaggerate all five main effects (ESR > 1) under every prompt (l. 175)",
          lambda R: _all(*[(R.of(m, p)[:, :N_MAIN] > 1).all(-1) for m in ("claude", "gemini") for p in PROMPTS])),
    Claim("gpt_main_not_exaggerated", "GPT's main effects are near-calibrated or attenuated (ESR < 1.25) under every prompt (l. 175)",
          lambda R: _all(*[(np.abs(R.of("gpt", p)[:, :N_MAIN]) < 1.25).all(-1) for p in PROMPTS])),
    Claim("kma_reduces_claude_gemini", "KMA reduces CDS relative to MIN for Claude and for Gemini (l. 169)",
          lambda R: _all(R.cds("claude", "KMA") < R.cds("claude", "MIN"), R.cds("gemini", "KMA") < R.cds("gemini", "MIN"))),
    Claim("kma_reduces_gpt", "KMA reduces CDS relative to MIN for GPT too (the abstract's unqualified wording, l. 5)",
          lambda R: R.cds("gpt", "KMA") < R.cds("gpt", "MIN")),
    Claim("gpt_com_best", "COM gives GPT its lowest CDS of the four prompts (l. 173)",
          lambda R: _all(*[R.cds("gpt", "COM") < R.cds("gpt", p) for p in ("MIN", "ALT", "KMA")])),
    Claim("alt_gpt_improves", "ALT lowers both CDS_m and CDS_i relative to MIN for GPT (l. 171, 191)",
          lambda R: _all(R.cds_m("gpt", "ALT") < R.cds_m("gpt", "MIN"), R.cds_i("gpt", "ALT") < R.cds_i("gpt", "MIN"))),
    Claim("alt_claude_interactions", "ALT lowers Claude's CDS_i relative to MIN (l. 171)",
          lambda R: R.cds_i("claude", "ALT") < R.cds_i("claude", "MIN")),
    Claim("alt_claude_worse", "ALT makes Claude's overall CDS worse than MIN (l. 191)",
          lambda R: R.cds("claude", "ALT") > R.cds("claude", "MIN")),
    Claim("alt_amplifies_gemini", "ALT amplifies Gemini's interaction deviation CDS_i relative to MIN (l. 171)",
          lambda R: R.cds_i("gemini", "ALT") > R.cds_i("gemini", "MIN")),
    Claim("alt_gemini_worst", "Gemini under ALT has the highest CDS of all twelve model x prompt pairs (l. 191)",
          lambda R: _all(*[R.cds("gemini", "ALT") >= R.cds(m, p) for m in LLMS for p in PROMPTS])),
    Claim("alt_amplifies_claude_gemini", "ALT raises CDS relative to MIN for Claude and Gemini (abstract; l. 191)",
          lambda R: _all(R.cds("claude", "ALT") > R.cds("claude", "MIN"), R.cds("gemini", "ALT") > R.cds("gemini", "MIN"))),
    Claim("com_improves_all", "COM lowers both CDS_m and CDS_i relative to MIN for every model (l. 173; its CCC and RMSE "
          "parts are not modelled)",
          lambda R: _all(*[c(m, "COM") < c(m, "MIN") for m in LLMS for c in (R.cds_m, R.cds_i)])),
    Claim("gemini_kma_com_min", "For Gemini, CDS under KMA < COM < MIN (l. 173)",
          lambda R: _all(R.cds("gemini", "KMA") < R.cds("gemini", "COM"), R.cds("gemini", "COM") < R.cds("gemini", "MIN"))),
    Claim("kma_beats_com", "KMA beats COM on Claude's CDS_i and on Gemini's CDS_m and CDS_i (l. 193)",
          lambda R: _all(R.cds_i("claude", "KMA") < R.cds_i("claude", "COM"), R.cds_m("gemini", "KMA") < R.cds_m("gemini", "COM"),
                         R.cds_i("gemini", "KMA") < R.cds_i("gemini", "COM"))),
)


def _reading(p: float) -> str:
    return "supported" if p >= SUPPORT else "contradicted" if p <= 1 - SUPPORT else "undecided"


def claims_table(tree, point: np.ndarray) -> pd.DataFrame:
    """Every claim of :data:`CLAIMS`: the paper's verdict (the predicate on the point estimates
    ``point [condition, effect]``, i.e. ``Δ̂_M / Δ̂_H``) and its posterior probability under the
    measurement model ``tree`` (``esr [chain, draw, condition, effect]``)."""
    post = tree["posterior"]["esr"]
    labels = [str(c) for c in post["condition"].values]
    if tuple(str(e) for e in post["effect"].values) != tuple(f"{k}:{a}" for k, a in EFFECTS):
        raise ValueError("the measurement model's effects are not models.social_meaning.esr.EFFECTS in order.")
    draws = Ratios(post.stack(sample=("chain", "draw")).transpose("sample", "condition", "effect").values, labels)
    at_point = Ratios(np.asarray(point, float)[None], labels)
    rows = []
    for c in CLAIMS:
        p = float(np.mean(c.test(draws)))
        rows.append(dict(id=c.id, claim=c.text, paper=bool(c.test(at_point)[0]), probability=p, reading=_reading(p)))
    return pd.DataFrame(rows)
