"""Fit benchmark: wall time and bulk ESS per second for two NUTS fits, by chain method.

Usage: python -m benchmarks.fit_speed [--quick]

(a) reference game: speaker choices, alpha and one cost weight (240 trials);
(b) hierarchical: listener guesses with a rationality per item, 100 items x 40 responses on a
    21-state scale (103 parameters).
Each is run with 4 chains and ``chain_method`` sequential (the baseline), vectorized and
parallel (one CPU device per chain where there are enough). Wall time includes compilation
(reported separately from a second, cached run); ESS/s = min bulk ESS over parameters / sampling
wall time of the cached run. Writes benchmarks/results/fit_speed.csv and .md.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import pragmodels as pm
from benchmarks._results import write_results
from pragmodels.rsa_models import hierarchical_listener_model, speaker_model
from pragmodels.simulate import reference_game_speaker, scale_listener_by_item

HERE = Path(__file__).resolve().parent


def run(label, model, data, method, warmup, samples):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pm.fit(0, model, data, num_warmup=warmup, num_samples=samples, num_chains=4,
               chain_method=method, progress_bar=False, posterior_predictive=False)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = pm.fit(1, model, data, num_warmup=warmup, num_samples=samples, num_chains=4,
                      chain_method=method, progress_bar=False, posterior_predictive=False)
    second = time.perf_counter() - t0
    import json

    diag = json.loads(tree.attrs["diagnostics"])
    used = json.loads(tree.attrs["sampler_settings"])["chain_method"]
    return dict(fit=label, chain_method=method, ran_as=used, first_call_s=first, cached_call_s=second,
                compile_overhead_s=first - second, min_bulk_ess=diag["min_ess_bulk"],
                ess_per_s=diag["min_ess_bulk"] / second, max_rhat=diag["max_rhat"],
                divergences=diag["divergences"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    warmup, samples = (200, 200) if args.quick else (1000, 1000)
    ref = reference_game_speaker(0)
    hier, _ = scale_listener_by_item(0, n_items=20 if args.quick else 100)
    fits = [("reference game (alpha, cost)", speaker_model(priors={"lapse": 0.0}), ref),
            ("hierarchical alpha by item (100 x 40, 21 states)", hierarchical_listener_model(priors={"lapse": 0.0}), hier)]
    rows = []
    for label, model, data in fits:
        base = None
        for method in ("sequential", "vectorized", "parallel"):
            r = run(label, model, data, method, warmup, samples)
            base = base or r
            r["speedup_vs_sequential"] = base["cached_call_s"] / r["cached_call_s"]
            rows.append(r)
            print(f"{label:50s} {method:10s} (ran {r['ran_as']:10s}) first {r['first_call_s']:6.1f} s, "
                  f"cached {r['cached_call_s']:6.1f} s, min bulk ESS {r['min_bulk_ess']:7.0f}, "
                  f"ESS/s {r['ess_per_s']:7.1f}, x{r['speedup_vs_sequential']:.2f} vs sequential, "
                  f"r_hat {r['max_rhat']:.3f}, divergences {r['divergences']}", flush=True)
    write_results(rows, "fit_speed_quick" if args.quick else "fit_speed", "Fit speed",
                  f"{warmup} warm-up + {samples} draws x 4 chains.")


if __name__ == "__main__":
    main()
