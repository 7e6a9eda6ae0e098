"""Study 1's LLM fits: one compiled batched run against the study's two-process pool.

Usage: python -m benchmarks.social_meaning_batching [--quick] [--warmup W] [--samples S]
       [--conditions gpt:MIN,gpt:ALT,...]

The study (``fits/social_meaning.json``) fits the RSA model to each of 12 LLM x prompt data sets,
which have one shape up to the invalid responses dropped, so they could run as one program
(:func:`pragmodels.fit_batched`: the single-chain NUTS program vmapped over chains and data
sets, each data set with its own adaptation). Three ways of fitting the same data sets at the
same settings (4 chains, ``target_accept`` 0.95, ``max_tree_depth`` 8, dense mass, chains
started at the prior median because ``fit_batched`` has no ``init="optimize"``):

- pool: ``pm.fit_many(executor="process")`` on two worker processes (what the study does; each
  worker compiles its own program);
- back to back: ``pm.fit`` per data set in one process (one compilation, then cache hits);
- batched: one ``pm.fit_batched`` call (``pad`` = the per-rating arrays).

Reported per mode: wall seconds, the smallest bulk ESS over data sets and parameters, bulk ESS
per wall second (the smallest data set's), divergences and mean leapfrog steps per draw, and the
speed-up against the pool in the same run. Writes results/social_meaning_batching.csv and .md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PRAGMODELS_DATA_DIR", str(ROOT.parent / "shared" / "data"))


def _summary(trees: dict) -> dict:
    import numpy as np

    from pragmodels.inference.diagnostics import diagnose

    ess, div, steps = [], 0, []
    for tree in trees.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = diagnose(tree, emit=False).as_attrs()
        ess.append(float(d["min_ess_bulk"]))
        div += int(tree["sample_stats"]["diverging"].values.sum())
        steps.append(float(np.mean(tree["sample_stats"]["n_steps"].values)))
    return dict(min_bulk_ess=min(ess), divergences=div, mean_steps=float(np.mean(steps)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 data sets, 100 + 100 draws (a smoke run)")
    ap.add_argument("--warmup", type=int, default=400)
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--conditions", default="gpt:MIN,gpt:ALT,gpt:KMA,gpt:COM",
                    help="comma-separated model:prompt pairs (default: GPT's four prompts)")
    args = ap.parse_args()
    conditions = [tuple(c.split(":")) for c in args.conditions.split(",")]
    if args.quick:
        conditions, args.warmup, args.samples = conditions[:2], 100, 100

    import pragmodels as pm
    from models.social_meaning import study
    from pragmodels import datasets, metrics
    from pragmodels.runs import read_config

    llm = datasets.load_social_llm()
    # the study's full settings for the LLM fits (its config: their only source), shorter chains started
    # at the prior median
    full = read_config(ROOT / "fits" / "social_meaning.json")["sampler"]["full"]
    sampler = {k: v for k, v in full.items() if k not in ("human", "fits")}
    sampler.update(num_warmup=args.warmup, num_samples=args.samples, init="median")
    specs = []
    for model, prompt in conditions:
        g = llm[(llm.model == model) & (llm.prompt == prompt)]
        if g.empty:
            raise SystemExit(f"no LLM data for {model} {prompt}")
        frame = metrics.valid_ratings(g).frame
        specs.append(study.fit_spec(f"{model}_{prompt}", "rsa", frame, False, 20261130, sampler, "uniform", None,
                                 label=f"{model} {prompt}"))
    names = [s.name for s in specs]
    rows = []

    t = time.perf_counter()
    res = pm.fit_many(specs, executor="process", max_workers=2, progress=False)
    wall = time.perf_counter() - t
    res.raise_on_error()
    rows.append(dict(mode="pool: fit_many, 2 processes", wall_s=wall, **_summary({o.name: o.tree for o in res})))
    print(rows[-1], flush=True)

    t = time.perf_counter()
    trees = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in specs:
            trees[s.name] = pm.fit(s.seed, s.model, s.data, progress_bar=False, priors=s.priors, **s.sampler)
    rows.append(dict(mode="back to back: pm.fit, 1 process", wall_s=time.perf_counter() - t, **_summary(trees)))
    print(rows[-1], flush=True)

    kw = {k: v for k, v in specs[0].sampler.items() if k not in ("chain_method", "coords", "progress_bar")}
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trees = pm.fit_batched(20261130, specs[0].model, [s.data for s in specs], pad=("condition", "rating"),
                               names=names, priors=specs[0].priors, **kw)
    rows.append(dict(mode=f"batched: fit_batched, {len(specs)} data sets", wall_s=time.perf_counter() - t,
                     **_summary(trees)))
    print(rows[-1], flush=True)

    for r in rows:
        r["ess_per_s"] = r["min_bulk_ess"] / r["wall_s"]
        r["speedup_vs_pool"] = rows[0]["wall_s"] / r["wall_s"]
        r.update(datasets=len(specs), warmup=args.warmup, samples=args.samples)
    from benchmarks._results import write_results

    write_results(rows, "social_meaning_batching", "Study 1's LLM fits: batched against the two-process pool",
                  f"Data sets: {', '.join(names)}; 4 chains x ({args.warmup} + {args.samples}), target_accept 0.95, "
                  f"max_tree_depth 8, dense mass, init median. `{' '.join(sys.argv[1:]) or '(defaults)'}`",
                  notes="Wall times include compilation (the pool compiles once per worker). ESS/s is the "
                        "smallest data set's min bulk ESS over the mode's wall. Started at the prior median "
                        "(fit_batched has no init=\"optimize\"), these chains do not converge at all (the study's "
                        "optimised starts do), so compare the modes by wall time at equal leapfrog steps per draw, "
                        "not by ESS.")
    for r in rows:
        print(f"{r['mode']:40s} {r['wall_s']:7.1f} s  x{r['speedup_vs_pool']:.2f}  min ESS {r['min_bulk_ess']:.0f}  "
              f"div {r['divergences']}  steps {r['mean_steps']:.1f}")


if __name__ == "__main__":
    main()
