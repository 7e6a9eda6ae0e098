"""Memory and compilations of one model fitted to data sets of many sizes: padded to size buckets, or not.

Usage: python -m benchmarks.shape_buckets [--quick]

One listener (``rsa_models.listener_model``, 4 utterances x 3 states) is fitted with ``pm.fit`` to 12 data
sets of 12 sizes (40, 50, ..., 150 trials; 2 chains x (200 + 200)), one after another in one
process, as a per-participant loop or the 12 LLM data sets of a study would. Each case runs in a fresh
worker process (no persistent compilation cache):

- baseline: ``pad_trials=False`` and the cache bounded by count only (32 programs, no memory bound):
  the code before buckets;
- buckets: the defaults (``pad_trials=True``: from the second size on, per-trial arrays padded to
  48, 64, 96, 128, 192 and masked; the cache bounded at 512 MB).

Reported per case: XLA compilations (JAX's backend-compile events) and their seconds, NUTS programs
compiled (cache misses of kind "nuts"), total wall, resident memory growth from before the first fit to
after the last (and after ``gc`` + ``malloc_trim``, which returns freed heap pages), and what the cache
holds at the end. Writes benchmarks/results/shape_buckets.csv and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SIZES = list(range(40, 160, 10))


def _worker(case: str, sizes: list[int]) -> dict:
    import ctypes
    import gc
    import time
    import warnings

    import jax
    import jax.monitoring
    import numpy as np

    import pragmodels as pm
    from pragmodels.inference import compile_cache, padding
    from pragmodels.rsa_models import listener_model

    compiles = {"n": 0, "s": 0.0}

    def on_event(event: str, duration: float, **_: object) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles["n"] += 1
            compiles["s"] += duration

    jax.monitoring.register_event_duration_secs_listener(on_event)

    def rss_mb(trim: bool = False) -> float:
        if trim:
            gc.collect()
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    if case == "baseline":
        compile_cache.set_cache_size(32, max_mb=10**6)
    sem = pm.semantics.boolean_semantics([[1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0]])
    model = listener_model()
    rng = np.random.default_rng(0)
    # one small fit first, so that both cases start with JAX's own start-up compilations done
    warm = dict(log_semantics=sem, utterance=rng.integers(0, 4, 8), choice=rng.integers(0, 3, 8))
    pm.fit(99, model, warm, num_warmup=50, num_samples=50, num_chains=2, progress_bar=False)
    compile_cache.clear_cache()
    padding.forget_sizes()
    compiles.update(n=0, s=0.0)
    start = rss_mb(trim=True)
    t0 = time.perf_counter()
    nuts_programs = 0
    for i, n in enumerate(sizes):
        data = dict(log_semantics=sem, utterance=rng.integers(0, 4, n), choice=rng.integers(0, 3, n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = pm.fit(i, model, data, num_warmup=200, num_samples=200, num_chains=2, progress_bar=False,
                          pad_trials=case != "baseline")
        nuts_programs += int(not tree.attrs["kernel_cache_hit"])
        assert tree.posterior_predictive["choice"].shape[-1] == n
    wall = time.perf_counter() - t0
    end = rss_mb()
    info = compile_cache.cache_info()
    return dict(case=case, fits=len(sizes), xla_compiles=compiles["n"], compile_s=round(compiles["s"], 1),
                nuts_programs=nuts_programs, wall_s=round(wall, 1), rss_growth_mb=round(end - start),
                rss_growth_trimmed_mb=round(rss_mb(trim=True) - start), cache_entries=info["size"],
                cache_charged_mb=info["memory_mb"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 sizes (40, 70, 100, 130)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = SIZES[::3] if args.quick else SIZES
    if args.worker:
        print(json.dumps(_worker(args.worker, sizes)))
        return
    rows = []
    for case in ("baseline", "buckets"):
        cmd = [sys.executable, "-m", "benchmarks.shape_buckets", "--worker", case] + (["--quick"] if args.quick else [])
        env = {**os.environ, "PRAGMODELS_COMPILATION_CACHE": "off", "JAX_ENABLE_COMPILATION_CACHE": "false"}
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    base = rows[0]
    for r in rows:
        r["wall_ratio"] = round(r["wall_s"] / base["wall_s"], 2)
        r["rss_ratio"] = round(r["rss_growth_mb"] / max(base["rss_growth_mb"], 1), 2)
    from benchmarks._results import write_results
    write_results(rows, "shape_buckets", "One model, data sets of many sizes: size buckets against none",
                  f"{len(sizes)} sizes {sizes[0]}-{sizes[-1]} trials, 2 chains x (200 + 200), one process per case.")


if __name__ == "__main__":
    main()
