"""The social-meaning study's report: parameter table, convergence verdicts, diagnostics lines
and the markdown report of a run folder.

Layering: imports :mod:`models.social_meaning` and the pragmodels public API; imported by
:mod:`models.social_meaning_study` (which re-exports ``parameter_table``, ``converged`` and
``KEY_PARAMETERS``).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

import pragmodels as pm
from pragmodels.model_comparison import loo_sentence
from models import social_meaning as sm

KEY_PARAMETERS = ("alpha", "cost_precise", "noise", "lapse", "theta_mu")


def parameter_table(trees: dict) -> pd.DataFrame:
    """Median and 94% interval of the key parameters for each fit, and whether the response noise
    sits at its floor (3% quantile within 0.01 of ``NOISE_FLOOR``)."""
    from arviz_stats import eti

    rows = []
    for label, tree in trees.items():
        post = tree["posterior"]
        row = {"fit": label}
        for v in KEY_PARAMETERS:
            lo, hi = (float(b) for b in eti(post[v], prob=0.94).values)
            row.update({v: float(np.median(post[v].values)), f"{v}_lo": lo, f"{v}_hi": hi})
        row["noise_at_floor"] = bool(row["noise_lo"] < sm.NOISE_FLOOR + 0.01)
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
    d = _diagnostics(tree)
    w = json.loads(tree.attrs.get("warnings", "[]"))
    return (f"| {label} | {d['divergences']} | {d['max_rhat']:.3f} | {d['min_ess_bulk']:.0f} | "
            f"{d['min_ess_tail']:.0f} | {tree.attrs['wall_time_s']:.0f} s | {_init_cell(tree)} | "
            f"{'; '.join(w) if w else 'none'} |")


def _diag_short(tree) -> str:
    d = _diagnostics(tree)
    return (f"  done in {tree.attrs['wall_time_s']:.0f} s: {d['divergences']} divergences, max r_hat "
            f"{d['max_rhat']:.3f}, min bulk ESS {d['min_ess_bulk']:.0f}; init: {_init_cell(tree)}")


def converged(tree, max_rhat: float = 1.01, min_ess: float = 100.0) -> bool:
    """Whether a fit's chains agree (max r_hat <= 1.01) and its bulk ESS is at least ``min_ess``.
    Tree-depth saturation alone does not count against a fit whose chains mix."""
    d = _diagnostics(tree)
    return d["max_rhat"] <= max_rhat and d["min_ess_bulk"] >= min_ess


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
                row.update({f"beta_{f}": float(x) for f, x in zip(sm.FEATURES, b.mean(-1))})
            rows.append(row)
    return pd.DataFrame(rows)


def _convergence_section(trees: dict, baseline, chains: pd.DataFrame | None = None) -> list[str]:
    bad = [k for k, t in {"human baseline": baseline, **trees}.items() if not converged(t)]
    if not bad:
        return ["All fits converged (max r_hat <= 1.01, bulk ESS >= 100).", ""]
    lines = [f"**Not converged ({len(bad)} of {len(trees) + 1} fits): {', '.join(bad)}.** Their chains disagree "
             "(max r_hat > 1.01 or bulk ESS < 100; see the table), so their parameters and model-implied ESR/CDS "
             "(marked `†` above) are not to be read as posteriors. Where chains settle in different modes, the "
             "feature loadings `beta` and the knowledge prior `theta` (and, with a free motive prior, `psi`) trade "
             "off: the three listener features span the three within-attribute form x context contrasts, so the "
             "loadings can absorb the RSA parameters (model docstring, \"Identification\").", ""]
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


def _mark(cds: pd.DataFrame, trees: dict) -> pd.DataFrame:
    out = cds.copy()
    out["prompt"] = [p + ("†" if not converged(trees[f"{m} {p}"]) else "") for m, p in zip(out.model, out.prompt)]
    return out


def _params_markdown(params: pd.DataFrame) -> str:
    cell = lambda r, v: f"{r[v]:.2f} [{r[v + '_lo']:.2f}, {r[v + '_hi']:.2f}]"
    head = "| fit | " + " | ".join(KEY_PARAMETERS) + " |\n|---|" + "---|" * len(KEY_PARAMETERS)
    body = ["| " + r.fit + ("†" if not r.get("converged", True) else "") + " | " + " | ".join(cell(r, v) + ("*" if v == "noise" and r.noise_at_floor else "")
                                              for v in KEY_PARAMETERS) + " |" for _, r in params.iterrows()]
    return "\n".join([head, *body])


def render_report(mode, sampler, table, disc, cmp, trees, baseline, cds, ppc, params, wall, chains=None) -> str:
    from arviz_stats import eti

    h = trees["human"]
    post = h["posterior"]

    def q(v):
        lo, hi = (float(b) for b in eti(post[v], prob=0.94).values)
        return f"{float(post[v].median()):.2f} [{lo:.2f}, {hi:.2f}]"

    lines = [
        "# Social meaning of numerical (im)precision: reproduction and RSA fits", "",
        f"Mode: **{mode}** (NUTS {sampler}); wall time {wall:.0f} s; pragmodels {pm.__version__}.",
        *(["", "> **Quick mode is a smoke test of the pipeline, not an analysis**: chains are far too short "
            "to converge (see Diagnostics), so none of the posterior numbers below should be interpreted. "
            "Run without `--quick` for the real analysis.", ""] if mode == "quick" else []),
        "Data: Solt et al. (2025) Exp. 1 human ratings (362 participants) and the LLM ratings of Mühlenbernd (2026), "
        "loaded from the registry and verified by sha256.", "",
        "## Reproduction of Tables 2-4", "",
        f"All {len(table) * 9} cells of Tables 2-3 and the 12 RMSE_indiv cells of Table 4 were recomputed from the raw "
        f"data; {len(disc)} differ from the printed values by more than 0.001 (`tables/discrepancies.csv`):", "",
        disc.to_markdown(index=False) if len(disc) else "(none)", "",
        "CCC: the paper's numbers use the upstream code's variant (population covariance over sample variances); "
        "Lin's CCC is given as `ccc_lin` and is about 0.03 higher.", "",
        "## RSA model of the human ratings", "",
        f"Motive prior in every RSA fit: **{_motive_prior(trees)}** (`rsa_model(motive_prior=...)`; uniform fixes "
        "P(m) uniform, psi = 0, and the listener still infers the motive from form and context; free fits psi, "
        "which the data do not identify against the feature loadings: see the model's docstring).", "",
        f"alpha {q('alpha')}; cost of the precise form {q('cost_precise')}; response noise (logistic scale, "
        f"rating points) {q('noise')}; lapse {q('lapse')}; "
        f"prior log-odds that a speaker knows the exact number theta_mu {q('theta_mu')} (median [94% interval]).", "",
        "LOO (arviz-stats `compare`, per rating; see Pareto k in the posteriors) against the non-pragmatic "
        f"form x context baseline: {loo_sentence(cmp)}", "",
        cmp.to_markdown(floatfmt=".2f"), "",
        "## Humans vs LLMs, as posteriors", "",
        "Key parameters, median [94% interval] (`tables/parameters.csv`, `figures/forest_parameters.png`). "
        f"`*`: the response-noise posterior sits at its floor ({sm.NOISE_FLOOR} rating points): that rater is at "
        "least as deterministic as the model can express, and its lapse absorbs the rest. `†`: the fit did not "
        "converge (see Diagnostics).", "",
        _params_markdown(params), "",
        "Model-implied CDS (median [94% interval]) from each LLM x prompt fit against the human fit, beside the "
        "observed CDS of Table 3. Implied effects average the four condition means over scenarios with equal "
        "weights and integrate out rater effects; ESR draws pair each LLM draw with an independent human draw, so "
        "the intervals carry both posteriors' uncertainty (`tables/esr_model.csv`, `tables/cds_model.csv`):", "",
        _mark(cds, trees)[["model", "prompt", "cds_median", "cds_lo", "cds_hi", "observed_cds"]].to_markdown(
            index=False, floatfmt=".3f"), "",
        f"Posterior predictive check: {int(ppc.inside_94.sum())} of {len(ppc)} LLM condition means lie inside the "
        "human-fitted model's 94% interval for the condition mean (`tables/ppc_condition_means.csv`, "
        "`figures/ppc_condition_means.png`).", "",
        "## Diagnostics", "",
        _init_paragraph(sampler, {"human baseline": baseline, **trees}), "",
        "| fit | divergences | max r_hat | min bulk ESS | min tail ESS | wall | init | warnings |",
        "|---|---|---|---|---|---|---|---|",
        _diag_line("human baseline", baseline), *[_diag_line(k, t) for k, t in trees.items()], "",
        *_convergence_section(trees, baseline, chains),
        "Files: `tables/*.csv`, `figures/*.png` (fig1 = paper Figure 1, fig2 = Figure 2, forest, PPC), "
        "`posteriors/*.nc` (ArviZ DataTrees with provenance attributes).", "",
    ]
    return "\n".join(lines)
