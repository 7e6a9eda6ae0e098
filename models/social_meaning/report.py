"""The social-meaning study's report: parameter and chain tables (:func:`parameter_table`,
:func:`chain_table`), convergence verdicts (:func:`converged`) and
the markdown of a run folder's ``report.md`` (:func:`report_markdown`).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

import pragmodels as pm
from models.social_meaning import checks, rsa
from pragmodels import datasets
from pragmodels.evaluation.model_comparison import loo_sentence
from pragmodels.inference.diagnostics import depth_cap_share, missed_standards

KEY_PARAMETERS = ("alpha", "cost_precise", "noise", "lapse", "theta_mu")
#: the one name of each key parameter in figures, tables' headers and the report's text
PARAMETER_LABELS = {"alpha": "alpha (speaker rationality)", "cost_precise": "cost of the precise form",
                    "noise": "response noise (rating points)", "lapse": "lapse rate",
                    "theta_mu": "theta_mu (log-odds: speaker knows)"}


def parameter_table(trees: dict) -> pd.DataFrame:
    """Median and 94% interval of the key parameters for each fit, the median response noise per
    attribute (``noise_<attribute>``), and whether the noise of some attribute sits at its floor (3%
    quantile within 0.01 of ``NOISE_FLOOR``)."""
    from arviz_stats import eti

    rows = []
    for label, tree in trees.items():
        post = tree["posterior"]
        row = {"fit": label}
        for v in KEY_PARAMETERS:
            lo, hi = (float(b) for b in eti(post[v], prob=0.94).values)
            row.update({v: float(np.median(post[v].values)), f"{v}_lo": lo, f"{v}_hi": hi})
        row["noise_at_floor"] = bool(row["noise_lo"] < rsa.NOISE_FLOOR + 0.01)
        if "noise_attribute" in post:  # the scale per attribute (docs/studies/social_meaning.md, "Noise per attribute")
            med = post["noise_attribute"].median(("chain", "draw"))
            row.update({f"noise_{a}": float(med.sel(attribute=a)) for a in med["attribute"].values})
            low = post["noise_attribute"].quantile(0.03, ("chain", "draw"))
            row["noise_at_floor"] = bool((low < rsa.NOISE_FLOOR + 0.01).any())  # some attribute at the floor
        row["converged"] = converged(tree)
        rows.append(row)
    return pd.DataFrame(rows)


def _init_cell(tree) -> str:
    """Where the multi-start optimisation ended (``init="optimize"``): starts in the best basin,
    and how many nats below it the next end point lies (another basin or an unconverged start)."""
    o = json.loads(tree.attrs.get("init_optima", "null") or "null")
    if not o:
        return "prior median"
    gap = "none other" if o["gap_to_next_basin"] is None else f"next end point {o['gap_to_next_basin']:.1f} nats lower"
    return f"{o['n_in_best_basin']}/{o['n_starts']} starts in best basin; {gap}"


def _diagnostics(tree) -> dict:
    """The fit's diagnostics as :func:`pragmodels.fit` recorded them (JSON in the provenance)."""
    return json.loads(tree.attrs["diagnostics"])


def _diag_line(label, tree) -> str:
    """The fit's row of the Diagnostics table; the wall cell says where the draws were resized
    (:func:`pragmodels.inference.top_up.top_up`: every attempt's time, and the draws per chain)."""
    d = _diagnostics(tree)
    w = json.loads(tree.attrs.get("warnings", "[]"))
    r = json.loads(tree.attrs.get("draws_resized", "null") or "null")
    resized = f"; sampled again, {r['from']} -> {r['to']} draws per chain" if r else ""
    resized += f", warm-up {r['num_warmup'][0]} -> {r['num_warmup'][1]}" if r and "num_warmup" in r else ""
    resized += "".join(f"; a refit with target_accept {a['target_accept']} was worse (missed {', '.join(a['missed'])}), "
                       "not kept" for a in json.loads(tree.attrs.get("refits_not_kept", "[]")))
    return (f"| {label} | {d['divergences']} | {d['max_rhat']:.3f} | {d['min_ess_bulk']:.0f} | "
            f"{d['min_ess_tail']:.0f} | {100 * depth_cap_share(tree):.1f}% | {tree.attrs['wall_time_s']:.0f} s{resized} | "
            f"{_init_cell(tree)} | {'; '.join(w) if w else 'none'} |")


def diagnostics_line(tree) -> str:
    """One progress line of a finished fit: wall time, divergences, max r_hat, min bulk ESS, init."""
    d = _diagnostics(tree)
    return (f"  done in {tree.attrs['wall_time_s']:.0f} s: {d['divergences']} divergences, max r_hat "
            f"{d['max_rhat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}; init: {_init_cell(tree)}")


def converged(tree) -> bool:
    """Whether a fit meets the sampling standards it must meet to be read (issue 13): max r_hat <= 1.01,
    bulk and tail ESS >= 400, no divergences and under 1% of trajectories at the tree-depth cap
    (:func:`pragmodels.inference.diagnostics.missed_standards`, which :func:`pragmodels.top_up` applies too)."""
    return not missed_standards(tree)


def chain_table(trees: dict) -> pd.DataFrame:
    """Chain by chain: mean total log likelihood and the means of the key parameters (and, for RSA
    fits, of each feature's loadings averaged over attributes). Chains whose log likelihoods agree
    but whose parameters differ are equally good explanations (the data do not identify the
    parameters); a chain with a clearly lower log likelihood is stuck in a worse mode."""
    rows = []
    for label, tree in trees.items():
        post = tree["posterior"]
        n_chain = post.sizes["chain"]
        ll = tree["log_likelihood"]["rating"].values.reshape(n_chain, post.sizes["draw"], -1).sum(-1).mean(1)
        for c in range(n_chain):
            row = dict(fit=label, chain=c, loglik=float(ll[c]))
            for v in KEY_PARAMETERS + ("theta_sigma",):
                if v in post:
                    row[v] = float(post[v].values[c].mean())
            if "beta" in post:
                b = post["beta"].values[c].mean(0)  # [feature, attribute]
                feats = [str(f) for f in post["beta"]["feature"].values] if "feature" in post["beta"].coords else rsa.FEATURE_SETS["motives"]
                row.update({f"beta_{f}": float(x) for f, x in zip(feats, b.mean(-1))})
            rows.append(row)
    return pd.DataFrame(rows)


def _convergence_section(trees: dict, baseline, chains: pd.DataFrame | None = None) -> list[str]:
    bad = [k for k, t in {"human baseline": baseline, **trees}.items() if not converged(t)]
    if not bad:
        return ["**All fits meet the sampling standards** (max r_hat <= 1.01, bulk and tail ESS >= 400, no "
                "divergences, under 1% of trajectories at the tree-depth cap).", ""]
    lines = [f"**Below the sampling standards ({len(bad)} of {len(trees) + 1} fits): {', '.join(bad)}** (max r_hat "
             "<= 1.01, bulk and tail ESS >= 400, no divergences, under 1% at the tree-depth cap; see the table). "
             "Their parameters are marked `†` above and are not to be read as posteriors.", ""]
    if chains is not None and len(chains):
        rows = chains[chains.fit.isin(bad)]
        if len(rows):
            lines += ["Chain by chain for these fits (`tables/chains.csv`): equal log likelihoods with different "
                      "parameters mean the data do not pick between the modes; a clearly lower log likelihood "
                      "marks a chain stuck in a worse mode.", "",
                      rows.to_markdown(index=False, floatfmt=".2f", missingval=""), ""]
    return lines


def _motive_prior(trees: dict) -> str:
    """The motive prior the RSA fits used (runs saved before it was recorded fitted psi: 'free')."""
    used = {t.attrs.get("motive_prior", "free") for t in trees.values()}
    return ", ".join(sorted(used))


def _init_paragraph(sampler: dict, trees: dict) -> str:
    """How the chains started, as this run's sampler settings say (quick mode does not optimise)."""
    init = sampler.get("init") or "median"
    if init != "optimize":
        where = {"median": "near the prior medians", "uniform": "at NumPyro's uniform draws in (-2, 2) on the "
                 "unconstrained scale"}.get(init, f"as `init={init!r}` sets")
        return f"Chain starts (`init`): `{init}`, every chain starts {where}; no multi-start optimisation in this run."
    digests = [json.loads(t.attrs.get("init_optima", "null") or "null") for t in trees.values()]
    digests = [d for d in digests if d]
    counts = lambda key: "/".join(str(v) for v in sorted({d[key] for d in digests if key in d})) or "?"
    return (f"Chain starts (`init`): `optimize`, {counts('n_starts')} random starts were optimised "
            f"({counts('steps')} Adam steps each) and the chains started spread over the end points within 3 nats "
            "of the best; the column says how many starts ended there and how far below it the next end point "
            "lies (another basin, or a start that had not converged; a basin within a few nats would carry real "
            "posterior mass that the chains might miss).")


def _params_markdown(params: pd.DataFrame) -> str:
    cell = lambda r, v: f"{r[v]:.2f} [{r[v + '_lo']:.2f}, {r[v + '_hi']:.2f}]"
    head = "| fit | " + " | ".join(PARAMETER_LABELS[v] for v in KEY_PARAMETERS) + " |\n|---|" + "---|" * len(KEY_PARAMETERS)
    body = ["| " + r.fit + ("†" if not r.get("converged", True) else "") + " | " + " | ".join(cell(r, v) + ("*" if v == "noise" and r.noise_at_floor else "")
                                              for v in KEY_PARAMETERS) + " |" for _, r in params.iterrows()]
    return "\n".join([head, *body])


def _noise_sentence(params: pd.DataFrame) -> list[str]:
    """One line on the response noise per attribute: the human fit's, and the range over the LLM fits."""
    cols = [f"noise_{a}" for a in datasets.ATTRIBUTES if f"noise_{a}" in params.columns]
    if not cols or "human" not in set(params.fit):
        return []
    h = params[params.fit == "human"].iloc[0]
    llm = params[~params.fit.str.startswith("human")]
    per = "; ".join(f"{c[6:]} {h[c]:.2f}" + (f" (LLMs {llm[c].min():.2f}-{llm[c].max():.2f})" if len(llm) else "")
                    for c in cols)
    return ["Response noise per attribute (posterior medians, rating points; `noise` above is the typical one, "
            f"`noise_<attribute>` in `tables/parameters.csv`): human fit {per}.", ""]


def _ppc_markdown(effects: pd.DataFrame) -> str:
    """The ten effects on replicated data, one column per human model: observed, and each model's
    replicated median [94% interval], ``✗`` where the observed effect lies outside."""
    models = list(dict.fromkeys(effects.model))
    first = effects[effects.model == models[0]]
    head = "| effect | observed | " + " | ".join(models) + " |\n|---|---|" + "---|" * len(models)
    rows = []
    for _, r in first.iterrows():
        cells = []
        for m in models:
            e = effects[(effects.model == m) & (effects.kind == r.kind) & (effects.attribute == r.attribute)].iloc[0]
            cells.append(f"{e['median']:.2f} [{e.lo:.2f}, {e.hi:.2f}]" + ("" if e.inside else " ✗"))
        rows.append(f"| {r.kind} {r.attribute} | {r.observed:.2f} | " + " | ".join(cells) + " |")
    return "\n".join([head, *rows])


def _cds_markdown(cds: pd.DataFrame) -> str:
    cell = lambda r, v: f"{r[v]:.2f} [{r[v + '_lo']:.2f}, {r[v + '_hi']:.2f}]"
    head = ("| model | prompt | CDS_m | CDS_i | CDS | paper's CDS |\n|---|---|---|---|---|---|")
    return "\n".join([head, *[f"| {r.model} | {r.prompt} | {cell(r, 'cds_m')} | {cell(r, 'cds_i')} | {cell(r, 'cds')} | "
                               f"{r.observed_cds:.3f} |" for _, r in cds.iterrows()]])


def _claims_markdown(claims: pd.DataFrame, parts: pd.DataFrame | None = None) -> str:
    """The claims' table: the paper's verdict, P(claim) ± MCSE, the reading and, for a conjunction,
    its components below 0.95 (the weakest first); then each claim's source, quoted."""
    has_se = "mcse" in claims
    head = ("| # | claim | paper's numbers | P(claim) ± MCSE | reading | components below 0.95 |\n|---|---|---|---|---|---|"
            if has_se else "| claim | paper's numbers | P(claim) | reading |\n|---|---|---|---|")
    rows = []
    for i, r in enumerate(claims.itertuples(), 1):
        verdict = "holds" if r.paper else "fails"
        if not has_se:
            rows.append(f"| {r.claim} | {verdict} | {r.probability:.2f} | {r.reading} |")
            continue
        rows.append(f"| {i} | {r.claim} | {verdict} | {_p_se(r.probability, r.mcse)} | {r.reading} | "
                    f"{_weak_parts(parts, r.id) if parts is not None else '–'} |")
    out = [head, *rows]
    if "source" in claims:
        out += ["", "Each claim's source, quoted from the paper's text (the brackets say where; a bracket inside a "
                "quote restores a word the text's extraction split off):", ""]
        out += [f"{i}. \"{r.source.rsplit(' [', 1)[0]}\" [{r.source.rsplit(' [', 1)[1]}" if r.source.endswith("]")
                else f"{i}. \"{r.source}\"" for i, r in enumerate(claims.itertuples(), 1)]
    return "\n".join(out)


def _p_se(p: float, se: float) -> str:
    """A probability ± its MCSE, to the MCSE's precision (at least two decimals)."""
    digits = 2 if se <= 0 or se >= 0.005 else min(4, 1 - int(np.floor(np.log10(se))))
    return f"{p:.{digits}f} ± {se:.{max(digits, 3)}f}"


def _weak_parts(parts: pd.DataFrame, claim_id: str, show: int = 4) -> str:
    """A conjunction's components below 0.95, the weakest first (``show`` of them named)."""
    mine = parts[parts["id"] == claim_id]
    if len(mine) <= 1:
        return "(one comparison)"
    weak = mine[mine.probability < 0.95].sort_values("probability")
    if not len(weak):
        return f"none of {len(mine)}"
    named = ", ".join(f"{r.component} ({r.probability:.2f})" for r in weak.head(show).itertuples())
    return f"{len(weak)} of {len(mine)}: {named}" + (", ..." if len(weak) > show else "")


def against_paper_text(observed: pd.DataFrame | None, claims: pd.DataFrame | None) -> list[str]:
    """The claims the paper's own numbers contradict, stated as findings against its text: GPT's
    interaction ESRs (``gpt_near_calibrated``) and its main effects above the ROPE
    (``gpt_main_not_exaggerated``), from ``tables/esr_observed.csv`` (the ESRs of the paper's
    Figure 2, recomputed from the published ratings)."""
    if observed is None or claims is None or not len(claims) or "source" not in claims:
        return []
    from models.social_meaning.claims import SEC7_GEMINI

    by_id = claims.set_index("id")
    gpt = observed[observed.model == "gpt"]
    inter, main = gpt[gpt.kind == "interaction"], gpt[gpt.kind == "main"]
    out = []
    if "gpt_near_calibrated" in by_id.index and not by_id.loc["gpt_near_calibrated", "paper"]:
        c = by_id.loc["gpt_near_calibrated"]
        gpt_sentence = SEC7_GEMINI.split(", while")[0]
        out.append(f"- **GPT's interactions are about half the humans'.** The paper: \"{c.source.rsplit(' [', 1)[0]}\" "
                   f"(Figure 1) and \"{gpt_sentence}\" (Sec. 7). Its own numbers say otherwise: GPT's {len(inter)} "
                   f"interaction ESRs (5 interactions x 4 prompts) have median {inter.esr.median():.2f} (range "
                   f"{inter.esr.min():.2f} to {inter.esr.max():.2f}), {int((inter.esr < 0.8).sum())} of them below "
                   f"0.8 = 1/1.25; by prompt, medians " + ", ".join(
                       f"{p} {g.esr.median():.2f}" for p, g in inter.groupby("prompt", sort=False)) +
                   f". GPT reproduces the interactions' direction, not their size. P(all ten near-calibrated under every "
                   f"prompt) = {_p_se(c.probability, c.mcse)}.")
    if "gpt_main_not_exaggerated" in by_id.index and not by_id.loc["gpt_main_not_exaggerated", "paper"]:
        c = by_id.loc["gpt_main_not_exaggerated"]
        over = main[main.esr.abs() >= 1.25].sort_values("esr", ascending=False)
        ped = main[main.attribute == "pedantic"]
        out.append(f"- **GPT exaggerates its pedantic effect.** The paper: \"{c.source.rsplit(' [', 1)[0]}\" (Sec. 6). "
                   f"Its own numbers: GPT's pedantic main effect is " + " and ".join(
                       f"{r.esr:.2f}x the humans' under {r.prompt}" for r in ped[ped.esr >= 1.25].itertuples())
                   + f"; {len(over)} of GPT's {len(main)} main-effect ESRs reach 1.25 (" + ", ".join(
                       f"{r.attribute} {r.prompt} {r.esr:.2f}" for r in over.itertuples())
                   + f"). P(every main ESR below 1.25 under every prompt) = {_p_se(c.probability, c.mcse)}.")
    return ["### Findings against the paper's text, on its own numbers", "", *out, ""] if out else []


def report_markdown(mode, sampler, table, disc, cmp, trees, baseline, params, wall, chains=None, *,
                  ppc_effects=None, ppc_cells=None, cds=None, esr=None, claims=None, ppc=None,
                  calibration=None, claim_parts=None, observed=None, rater_nodes: int = rsa.RATER_NODES) -> str:
    from arviz_stats import eti

    h = trees["human"]
    post = h["posterior"]

    def q(v):
        lo, hi = (float(b) for b in eti(post[v], prob=0.94).values)
        return f"{float(post[v].median()):.2f} [{lo:.2f}, {hi:.2f}]"

    fits = {"human baseline": baseline, **trees}
    n_ok = sum(converged(t) for t in fits.values())
    lines = [
        f"# {TITLE}", "",
        f"Mode: **{mode}** (NUTS {sampler}); wall time {wall:.0f} s; pragmodels {pm.__version__}.", "",
        "Data: Solt et al. (2025) Exp. 1 human ratings (362 participants) and the LLM ratings of Mühlenbernd (2026), "
        "loaded from the registry and verified by sha256.", "",
        "## What this run shows", "",
        *findings(cmp, ppc_effects, ppc_cells, cds, esr, claims, n_ok, len(fits), calibration, fits), "",
        "## Reproduction of Tables 2-4", "",
        f"All {len(table) * 9} cells of Tables 2-3 and the 12 RMSE_indiv cells of Table 4 were recomputed from the raw "
        f"data; {len(disc)} differ from the printed values by more than 0.001 (`tables/discrepancies.csv`):", "",
        disc.to_markdown(index=False) if len(disc) else "(none)", "",
        "CCC: the paper's numbers use the upstream code's variant (population covariance over sample variances); "
        "Lin's CCC is given as `ccc_lin` and is about 0.03 higher.", "",
        "## Three models of the human ratings", "",
        "- **rsa** (the study's model): the listener's inferences about the speaker, the probability that they know "
        "the exact number and the probability that the QUD they served is the context's own (`link=\"qud_fit\"`), "
        "load on each attribute (`models/social_meaning/rsa.py`, \"Link to ratings\").",
        "- **rsa_motives** (the previous model): the same listener with the features P(exact), P(precise-minded), "
        "P(casual); their three contrasts are linearly dependent, so one direction of loadings per attribute is "
        "unidentified.",
        "- **baseline**: free form, context and form x context effects per attribute, no speaker model.", "",
        "All three share the ordinal likelihood, scenario effects and one-factor rater effects (a loading per "
        f"attribute). Motive prior of the RSA fits: **{_motive_prior(trees)}**.", "",
        f"LOO (arviz-stats `compare`, per rating; `figures/loo_compare.png`): {loo_sentence(cmp)}", "",
        cmp.to_markdown(floatfmt=".2f"), "",
    ]
    if ppc_effects is not None:
        inside = ppc_cells.groupby("model").inside.sum() if ppc_cells is not None else None
        lines += ["Posterior predictive check with **new raters** (`tables/human_ppc_effects.csv`): each model's "
                  "replicated data recompute the ten significant human effects as the paper computes them "
                  "(median [94% interval]; `✗`: the observed effect lies outside; `figures/human_ppc.png`). New "
                  "raters because every "
                  "participant rated one condition only: replicating with the fitted rater effects would let them "
                  "carry part of each condition's effect.", "", _ppc_markdown(ppc_effects), ""]
        if inside is not None:
            lines += ["The 144 human condition means (scenario x context x form x attribute; ~15 raters each) inside "
                      "their 94% posterior predictive interval (`tables/human_ppc_cells.csv`): "
                      + ", ".join(f"{m} {int(inside[m])} of 144" for m in dict.fromkeys(ppc_cells.model)) + ".", ""]
    lines += [
        "RSA fit of the humans: "
        f"alpha {q('alpha')}; cost of the precise form {q('cost_precise')}; response noise (logistic scale, "
        f"rating points; the typical one of the attributes, each has its own) {q('noise')}; lapse {q('lapse')}; "
        f"prior log-odds that a speaker knows the exact number theta_mu {q('theta_mu')} (median [94% interval]). "
        "The ratings do not say how often a speaker who knows the number uses the precise form: every RSA fit, "
        "human and LLM, takes that log-odds from production data (N(-0.5, 1); `models/social_meaning/rsa.py`, \"What "
        "the ratings cannot identify\"), so the human cost and theta_mu, and the contrasts of these with the LLMs, "
        "carry that prior and are not measurements; so does an LLM's alpha where its ratings pin the cost (Claude "
        "ALT's is 30% lower than under the former N(0, 3); the study's notes, docs/studies/social_meaning.md, give the measurement).", "",
    ]
    if cds is not None:
        lines += [
            "## Model-based ESR and CDS", "",
            "A measurement model beside the RSA model (`models/social_meaning/esr.py`): the ten human effects and "
            "each LLM x prompt's ten effects are estimated with their sampling covariances (human raters as "
            "clusters, so a rater effect's correlation between attributes is kept; LLM calls stratified by "
            "scenario), and ESR_i = LLM effect_i / human effect_i is a signed posterior quantity. CDS_m, CDS_i and "
            "CDS follow per draw. Median [94% interval] beside the paper's point CDS (`tables/cds_model.csv`; per "
            "effect with log |ESR| and P(sign flip) in `tables/esr_model.csv`; the signed ESR with its interval and "
            "P(sign flip) in `figures/esr_model_intervals.png`):",
            "", _cds_markdown(cds), ""]
        if esr is not None:
            flips = esr[esr.p_sign_flip > 0.05]
            lines += ["Effects with P(sign flip) > 0.05: " + (", ".join(
                f"{r.model} {r.prompt} {r.kind} {r.attribute} ({r.p_sign_flip:.2f})" for _, r in flips.iterrows())
                or "none") + ".", ""]
        if calibration is not None:
            lines += [calibration_sentence(calibration), ""]
    if claims is not None and len(claims):
        lines += ["## The paper's claims as posterior probabilities", "",
                  "Each claim of the paper's Sections 6-7 about ESR and CDS, evaluated on the paper's own point "
                  "estimates (\"paper's numbers\") and as a posterior probability under the measurement model "
                  "(`tables/claims.csv`; supported: P >= 0.95, contradicted: P <= 0.05). \"Near-calibrated\": "
                  "|log ESR| < log 1.25 (the region of practical equivalence; the paper states no threshold). "
                  "Claims about Spearman, CCC or RMSE are not modelled. "
                  + ("Each probability carries its Monte Carlo standard error, the MCSE of the mean of the claim's "
                     "0/1 indicator over the posterior draws (`arviz_stats.mcse`, method \"mean\": the indicator's "
                     "spread over the square root of its effective sample size, which counts the chains' "
                     "autocorrelation); a claim within two MCSE of either cut is \"undecided at this precision\": "
                     "another run may read it either way. A claim over several comparisons (\"every prompt\", \"all "
                     "ten\") holds on a draw where all hold; the table names its components below 0.95 "
                     "(`tables/claims_components.csv`: every component's probability and MCSE)."
                     if "mcse" in claims else ""), "", _claims_markdown(claims, claim_parts), "",
                  *against_paper_text(observed, claims),
                  "`figures/contrasts.png`: CDS against the same LLM's MIN prompt, and alpha and cost against the "
                  "human fit, for every LLM x prompt.", ""]
    lines += [
        "## Humans vs LLMs, as RSA posteriors", "",
        "Key parameters, median [94% interval] (`tables/parameters.csv`, `figures/forest_parameters.png`). "
        f"`*`: the response-noise posterior of at least one attribute sits at its floor ({rsa.NOISE_FLOOR} rating "
        "points): on it that rater is at least as deterministic as the model can express, and its lapse absorbs the rest. `†`: the fit is below the "
        "sampling standards (see Diagnostics).", "",
        _params_markdown(params), "",
        *_noise_sentence(params),
    ]
    if ppc is not None:
        lines += [f"Each LLM against the human fit (a comparison, not a check of either fit): {int(ppc.inside_94.sum())} "
                  f"of {len(ppc)} LLM condition means lie inside the 94% interval of the condition mean implied by "
                  "the RSA model fitted to the humans (`tables/ppc_condition_means.csv`, "
                  "`figures/llm_means_vs_human_model.png`).", ""]
    lines += [
        "## Diagnostics", "",
        _init_paragraph(sampler, fits), "",
        "| fit | divergences | max r_hat | min bulk ESS | min tail ESS | at depth cap | wall | init | warnings |",
        "|---|---|---|---|---|---|---|---|---|",
        *[_diag_line(k, t) for k, t in fits.items()], "",
        parametrisation(rater_nodes), "",
        *_convergence_section(trees, baseline, chains),
        "Files: `tables/*.csv`, `figures/*.png` (fig1 = paper Figure 1, fig2 = Figure 2, the model-based ESR, "
        "the LOO comparison, the human fits' predictive check, the LLMs against the human fit, forest, contrasts), "
        "`posteriors/*.nc` (ArviZ DataTrees with provenance attributes).", "",
    ]
    return "\n".join(lines)


TITLE = "Social meaning of numerical (im)precision: reproduction, RSA fits and model-based calibration"


def quick_markdown(run_dir, manifest: dict) -> str:
    """The report of a quick run: the steps that ran and the files they wrote, no finding
    (:func:`pragmodels.runs.quick_report.quick_report`)."""
    from pathlib import Path

    from pragmodels.runs.quick_report import quick_report

    tables = Path(run_dir) / "tables"
    fits = [label for label in manifest["fits"] if not label.startswith("esr measurement")]
    steps = ["the human ratings (Solt et al. 2025, Exp. 1) and the LLM ratings (Mühlenbernd 2026) loaded, each file "
             "checked against its sha256",
             "Tables 2-4 recomputed from the raw data",
             f"{len(fits)} fits by NUTS ({manifest['sampler']}): {', '.join(fits)}",
             "posterior predictive checks of the three human models, with new raters",
             "the ESR measurement model" + (" and its calibration check by simulation"
                                            if (tables / "esr_calibration.csv").exists() else ""),
             f"figures and this report; {manifest['wall_time_s']:.0f} s in all (pragmodels {pm.__version__})"]
    lms = manifest.get("notes", {}).get("lms")
    if lms:  # a config with new LMs (fits/social_meaning_lms.json)
        steps.insert(1, f"the new LMs' answers ({', '.join(lms)}) checked against their manifests' LM identity and "
                        "for completeness, then read, each file's sha256 recorded")
    return quick_report(TITLE, run_dir, steps, full_report="fits/social_meaning/full/report.md")


def parametrisation(rater_nodes: int) -> str:
    """How the fits are parametrised for the sampler (models/social_meaning/rsa.py explains each and what it
    fixed), with the human fits' rater quadrature nodes (the config's ``rater_nodes``)."""
    return ("Parametrisation (`models/social_meaning/rsa.py`, which states the priors that came with it): alpha and "
            "the log-odds of the precise form under a coarse QUD are sampled and the cost derived (\"Why alpha and this "
            "log-odds\"); the LLM fits sample the scenario knowledge theta centred, the human fits non-centred (\"Scenario "
            "knowledge\"), and likewise the scenario effects on the ratings, the LLM fits on their five sum-to-zero "
            "contrasts under a scale prior with no mass at 0 (\"Scenario effects\"); the human fits integrate each "
            f"rater's one-factor score out of that rater's likelihood ({rater_nodes}-node trapezoidal rule, "
            "`pragmodels.likelihoods.rater`), so no rater score is sampled and LOO leaves out one rater at a time "
            "(\"Raters who saw one cell\").")


def calibration_sentence(cal: pd.DataFrame) -> str:
    """One sentence on the measurement model's calibration check (``tables/esr_calibration.csv``)."""
    by = cal.groupby(["control", "kind", "attribute"]).covered.mean()
    ok = by.loc["model"]
    neg = by.loc["ignore human SE"] if "ignore human SE" in by.index.get_level_values(0) else None
    n_rep = cal.replicate.nunique()
    s = (f"Calibration by simulation ({n_rep} data sets simulated from known ESRs at the real data's covariances, "
         f"refitted): the 90% intervals cover the truth in {100 * cal[cal.control == 'model'].covered.mean():.1f}% of "
         f"cases, {100 * ok.min():.0f}-{100 * ok.max():.0f}% per effect (pooled over the 12 conditions)")
    if neg is not None:
        s += (f"; the negative control that takes the human effects as known covers "
              f"{100 * cal[cal.control == 'ignore human SE'].covered.mean():.1f}% ({100 * neg.min():.0f}-"
              f"{100 * neg.max():.0f}% per effect)")
    return s + " (`tables/esr_calibration.csv`)."


def _basins_words(fits: dict) -> str:
    """Where the chains started: the basins of ``attrs["basins"]`` (``init="basins"``), else the
    best basin the optimised starts found (``init="optimize"``: r_hat cannot see another)."""
    found = {label: json.loads(t.attrs["basins"])["basins"] for label, t in fits.items() if t.attrs.get("basins")}
    if not found:
        return (" (each fit's chains start in the best basin its optimised starts found, so r_hat cannot see another "
                "mode)")
    several = {label: b for label, b in found.items() if len(b) > 1}
    carried = {label: [x for x in b if x["weight"] >= 0.01] for label, b in several.items()}
    return (f" ({len(found)} of {len(fits)} fits started chains in every basin within reach of their best; "
            + (", ".join(f"{label}: {len(b)} basins, {len(carried[label])} with weight >= 0.01 ("
                         + ", ".join(f"{x['weight']:.2f}" for x in b) + ")" for label, b in several.items())
               if several else "each found one basin") + ")")


def _passing_words(effects: pd.DataFrame, cells: pd.DataFrame | None) -> list[str]:
    """The RSA model's passing check beside the non-pragmatic baseline's: passing alone does not
    single out RSA when the baseline passes too."""
    n = effects.groupby("model", sort=False).inside.agg(["sum", "size"])
    if not {"rsa", "baseline"} <= set(n.index):
        return []
    means = cells.groupby("model", sort=False).inside.agg(["sum", "size"]) if cells is not None else None
    words = (f"- **Passing does not single out RSA:** the RSA model reproduces {n.loc['rsa', 'sum']} of the "
             f"{n.loc['rsa', 'size']} human effects, and so does the non-pragmatic baseline ({n.loc['baseline', 'sum']} "
             f"of {n.loc['baseline', 'size']})")
    if means is not None:
        words += "; condition means inside their 94% intervals: " + ", ".join(
            f"{m} {r['sum']} of {r['size']}" for m, r in means.iterrows())
    return [words + "."]


def interaction_words(reach: pd.DataFrame, features: pd.DataFrame) -> list[str]:
    """Which form x context interactions the human RSA model reaches (70% of the observed, on
    replicated data: :func:`models.social_meaning.checks.interaction_reach`), beside the baseline,
    and why it falls short where it does, from its structure (``features``:
    :func:`models.social_meaning.checks.feature_contrasts` of the human fit)."""
    rsa_rows, base = reach[reach.model == "rsa"], reach[reach.model == "baseline"].set_index("attribute")
    if not len(rsa_rows):
        return []
    worst = rsa_rows.sort_values("share").iloc[0]
    missed = rsa_rows[~rsa_rows.reached]
    f = features.set_index("feature")
    ex, qf = f.loc["p_exact"], f.loc["p_qud_fit"]
    line = (f"- **The interactions:** on replicated data the human RSA model reaches {rsa_rows.share.min():.0%} to "
            f"{rsa_rows.share.max():.0%} of the five observed form x context interactions (replicated medians "
            f"{rsa_rows['median'].min():.2f}-{rsa_rows['median'].max():.2f} against observed "
            f"{rsa_rows.observed.min():.2f}-{rsa_rows.observed.max():.2f}); the baseline, whose interaction is free per "
            f"attribute, {base.share.min():.0%} to {base.share.max():.0%}. "
            + (f"It does not reach {checks.REACH:.0%} of " + ", ".join(
                f"{r.attribute} ({r['median']:.2f} against {r.observed:.2f}, {r.share:.0%})" for _, r in missed.iterrows())
               + "." if len(missed) else f"Each reaches {checks.REACH:.0%}; the least is {worst.attribute} "
               f"({worst['median']:.2f} against {worst.observed:.2f}, {worst.share:.0%}).")
            + " Why, from the model's structure: it has no context term. An attribute's latent rating is its level "
            "plus two loadings on two features, three contrasts (form, context, interaction) from two numbers. In the "
            f"human fit (per SD of each feature, over scenarios) p_exact carries the form effect ({ex.form:.2f}; "
            f"context {ex.context:+.2f}, interaction {ex.interaction:+.2f}) and p_qud_fit the interaction "
            f"({qf.interaction:.2f}; context {qf.context:+.2f}, form {qf.form:+.2f}), so an attribute's context effect "
            "follows from its form effect and its interaction.")
    b = base.loc[worst.attribute] if worst.attribute in base.index else None
    coupled = qf.context > 0 and worst.observed > 0 and worst.context_model > worst.context_observed
    if coupled:
        line += (f" People rate {worst.attribute} lower in the precision-demanding context than that allows (context "
                 f"effect {worst.context_observed:+.2f}; the RSA model's {worst.context_model:+.2f}"
                 + (f", the baseline's, free, {b.context_model:+.2f}" if b is not None else "")
                 + "): a larger loading on p_qud_fit, for the whole interaction, would raise the context effect further.")
    if b is not None and coupled and b.share - worst.share > 0.02:
        line += (f" The fit settles between: it reaches {worst.share:.0%} of the {worst.attribute} interaction where "
                 f"the baseline reaches {b.share:.0%}; the rest of the shortfall, shared with the baseline, comes from "
                 "the likelihood both models share (ordinal link, lapse, scenario effects, new raters), not from the "
                 "RSA speaker.")
    elif b is not None and b.share < 1:
        line += ((" Here that costs" if coupled else " The coupling costs")
                 + f" the {worst.attribute} interaction nothing beyond what the baseline also misses "
                 f"(RSA {worst.share:.0%}, baseline {b.share:.0%}): the shortfall comes from the likelihood both models "
                 "share (ordinal link, lapse, scenario effects, new raters), not from the RSA speaker.")
    return [line]


def findings(cmp, ppc_effects, ppc_cells, cds, esr, claims, n_ok, n_fits, calibration, fits=None) -> list[str]:
    """The report's opening bullets, written from the numbers (``fits``: ``{label: tree}`` of every
    fit, for the time they took)."""
    below = [label for label, tree in (fits or {}).items() if not converged(tree)]
    out = [f"- **Sampling:** {n_ok} of {n_fits} RSA and baseline fits meet the sampling standards (Diagnostics) "
           f"within the basins their chains sampled{_basins_words(fits or {})}"
           + (f"; below them: {', '.join(below)}." if below else ".")]
    if ppc_effects is not None:
        for m in dict.fromkeys(ppc_effects.model):
            e = ppc_effects[ppc_effects.model == m]
            miss = e[~e.inside]
            out.append(f"- **{m}** reproduces {int(e.inside.sum())} of the 10 human effects on replicated data"
                       + (" (misses: " + ", ".join(f"{r.kind} {r.attribute}: observed {r.observed:.2f}, replicated "
                                                   f"{r['median']:.2f} [{r.lo:.2f}, {r.hi:.2f}]" for _, r in miss.iterrows())
                          + ")" if len(miss) else "") + ".")
        out += _passing_words(ppc_effects, ppc_cells)
        if ppc_cells is not None and fits and "human" in fits:
            out += interaction_words(checks.interaction_reach(ppc_effects, ppc_cells),
                                     checks.feature_contrasts(fits["human"]))
    out.append(f"- **Model comparison:** {loo_sentence(cmp)}")
    if fits:
        slow = max(fits, key=lambda k: fits[k].attrs.get("wall_time_s", 0.0))
        total = sum(t.attrs.get("wall_time_s", 0.0) for t in fits.values())
        out.append(f"- **Time:** the {n_fits} fits took {total / 60:.0f} core-minutes in all; the slowest, {slow}, "
                   f"{fits[slow].attrs.get('wall_time_s', 0.0) / 60:.0f} minutes on one core"
                   + (". On two cores a run cannot take less than half the total, so 10 minutes is out of reach at "
                      "these draws." if total / 2 > 600 else "."))
    if cds is not None:
        best = cds.sort_values("cds").iloc[0]
        worst = cds.sort_values("cds").iloc[-1]
        out.append(f"- **Calibration:** model-based CDS runs from {best.cds:.2f} [{best.cds_lo:.2f}, {best.cds_hi:.2f}] "
                   f"({best.model} {best.prompt}) to {worst.cds:.2f} [{worst.cds_lo:.2f}, {worst.cds_hi:.2f}] "
                   f"({worst.model} {worst.prompt}); the intervals are wide for the interactions, whose human effects "
                   "carry standard errors of about 0.26 rating points.")
    if claims is not None and len(claims):
        counts = claims.reading.value_counts()
        fine = int(counts.get("undecided at this precision", 0))
        out.append(f"- **The paper's claims:** of {len(claims)}, {int(counts.get('supported', 0))} are supported, "
                   f"{int(counts.get('contradicted', 0))} contradicted and {int(counts.get('undecided', 0))} undecided "
                   "by these data" + (f"; {fine} lie within two Monte Carlo standard errors of a cut (undecided at "
                                      "this precision: " + ", ".join(
                                          f"{r.id} {_p_se(r.probability, r.mcse)}"
                                          for r in claims[claims.reading == "undecided at this precision"].itertuples())
                                      + ")" if fine else "") + "."
                   + (" On the paper's own numbers, two of its sentences do not hold: GPT's interaction ESRs are "
                      "about half the humans', and its pedantic main effect exceeds theirs (\"Findings against the "
                      "paper's text\")." if {"gpt_near_calibrated", "gpt_main_not_exaggerated"} <= set(
                          claims.loc[~claims.paper.astype(bool), "id"]) else ""))
    return out
