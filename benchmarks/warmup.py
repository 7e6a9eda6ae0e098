"""Warm-up's share of a fit, and what ``mass_matrix="laplace"`` saves: the social-meaning RSA fits.

Usage: python -m benchmarks.warmup [--human]

Why: a social-meaning LLM fit (dense mass, 101 dimensions) spent most of its sampling time in
warm-up: NumPyro's windowed adaptation estimates the dense matrix from fewer draws than it has
dimensions until its last window, and NUTS builds trees at the depth cap meanwhile. This fits the
same data, start and seed with both ways of setting the mass matrix, through :func:`pragmodels.fit`
as the study calls it (``init="basins"``, the study's priors): ``adapt`` with the settings of the
run committed before (bac0d62's config) and ``laplace`` with the ones the study uses now. Reported:
wall, compile and sampling seconds; the warm-up's leapfrog steps (the fit's
``warmup_leapfrog_steps`` attribute) per iteration and their share of all steps; steps per draw;
least bulk and tail ESS, r_hat; bulk ESS per second of wall time without compiling, against ``adapt``.

Cases: GPT-4o's ratings under the KMA prompt and Claude's under MIN (near-deterministic ratings,
whose fixed Laplace matrix alone mixed badly); ``--human`` adds the human RSA fit (about 8 more
minutes). Writes ``results/warmup.{csv,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "fits" / "social_meaning.json"
#: warm-up and draws per chain of the run committed before mass_matrix="laplace" (bac0d62's config)
ADAPT = {"llm": dict(num_warmup=600, num_samples=600), "claude MIN": dict(num_warmup=600, num_samples=1000),
         "human": dict(num_warmup=300, num_samples=800)}
#: and those of fits/social_meaning.json now
LAPLACE = {"llm": dict(num_warmup=300, num_samples=500), "claude MIN": dict(num_warmup=300, num_samples=1100),
           "human": dict(num_warmup=200, num_samples=500)}


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def spec_for(case: str):
    """The study's FitSpec for ``case`` ("llm": GPT-4o KMA; "<model> <prompt>"; "human": the human RSA fit)."""
    from models.social_meaning import rsa, study
    from pragmodels import datasets, metrics

    sampler = json.loads(CONFIG.read_text())["sampler"]["full"]
    if case == "human":
        return study.fit_spec("x", "rsa", datasets.load_social_human(), True, 20261130, sampler, "uniform",
                              rsa.PRIORS_SPEAKER, label="human", rater_nodes=41)
    model, prompt = ("gpt", "KMA") if case == "llm" else case.split()
    llm = datasets.load_social_llm()
    v = metrics.valid_ratings(llm[(llm.model == model) & (llm.prompt == prompt)])
    return study.fit_spec("x", "rsa", v.frame, False, 20261142, sampler, "uniform", rsa.PRIORS_SPEAKER,
                          label=f"{model} {prompt}")


def fit_case(case: str, settings: dict, mass_matrix: str) -> dict:
    import pragmodels as pm

    spec = spec_for(case)
    kw = {**spec.sampler, **settings, "mass_matrix": mass_matrix, "progress_bar": False}
    load0 = _load()
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = pm.fit(spec.seed, spec.model, spec.data, priors=spec.priors, **kw)
    wall = time.perf_counter() - t
    a, d = tree.attrs, json.loads(tree.attrs["diagnostics"])
    sampling = float(a["sampling_time_s"])
    warm_steps = json.loads(a["warmup_leapfrog_steps"])
    draw_steps = int(tree["sample_stats"]["n_steps"].sum())
    chains, warm, draws = len(warm_steps), settings["num_warmup"], settings["num_samples"]
    return dict(case=case, mass_matrix=mass_matrix, num_warmup=warm, num_samples=draws, wall_s=wall,
                compile_s=float(a["compile_time_s"]), sampling_s=sampling, warmup_leapfrogs=sum(warm_steps),
                draw_leapfrogs=draw_steps, warmup_share=sum(warm_steps) / (sum(warm_steps) + draw_steps),
                leapfrogs_per_warmup_iteration=sum(warm_steps) / (chains * warm),
                leapfrogs_per_draw=draw_steps / (4 * draws),
                min_ess_bulk=d["min_ess_bulk"], min_ess_tail=d["min_ess_tail"], max_rhat=d["max_rhat"],
                divergences=d["divergences"], ess_per_sampling_s=d["min_ess_bulk"] / sampling,
                ess_per_s=d["min_ess_bulk"] / (wall - float(a["compile_time_s"])), load=f"{load0} / {_load()}")


def main() -> None:
    from benchmarks._results import write_results

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--human", action="store_true", help="add the human RSA fit (about 7 minutes)")
    args = ap.parse_args()
    cases = ["llm", "claude MIN", "human"] if args.human else ["llm", "claude MIN"]
    rows = []
    for case in cases:
        fits = [fit_case(case, table[case], mm) for mm, table in (("adapt", ADAPT), ("laplace", LAPLACE))]
        for r in fits:
            r["ess_per_s_ratio"] = r["ess_per_s"] / fits[0]["ess_per_s"]
            r["wall_ratio"] = r["wall_s"] / fits[0]["wall_s"]
            print(json.dumps(r), flush=True)
        rows += fits
    cols = {"case": "case", "mass_matrix": "mass_matrix", "num_warmup": "warm-up",
            "num_samples": "draws", "wall_s": "wall (s)", "compile_s": "compile (s)", "sampling_s": "sampling (s)",
            "warmup_share": "warm-up share of leapfrogs", "leapfrogs_per_warmup_iteration": "leapfrogs / warm-up it",
            "leapfrogs_per_draw": "leapfrogs / draw",
            "min_ess_bulk": "min bulk ESS", "min_ess_tail": "min tail ESS", "max_rhat": "max r_hat",
            "divergences": "divergences", "ess_per_s": "bulk ESS / s (no compile)",
            "ess_per_s_ratio": "ESS / s against adapt", "wall_ratio": "wall against adapt", "load": "load"}
    write_results(rows, "warmup", "Warm-up's share of a fit, and mass_matrix='laplace'",
                  "Social-meaning RSA model, 4 chains sequential, the study's priors and optimised starts; "
                  f"`python -m benchmarks.warmup{' --human' if args.human else ''}`.",
                  md_columns=cols,
                  notes="pragmodels.fit as the study calls it (init='basins'), each case with both settings in "
                        "one process, `adapt` first; wall includes initialisation and post-processing, ESS / s excludes "
                        "compile time. Warm-up leapfrog steps: the fit's `warmup_leapfrog_steps` attribute. The ratios "
                        "are against `adapt` on the same case in this run.")


if __name__ == "__main__":
    main()
