"""Pragmatic-listener table: pragmodels vs a plain jax.numpy floor vs memo, same lexicon, same run.

Usage: python benchmarks/listener_table.py [--quick] [--no-memo]

Prints milliseconds after warm-up (median of repeats, jit-compiled, semantics passed as an
argument) for random Boolean lexicons (density 0.5) at 200, 1000 and 5000 squared (depth 1),
and depths 1-8 at 200x200, with ratios pragmodels/floor and memo/pragmodels. Writes
benchmarks/results/listener_table.csv and .md. Targets on a 2-core CPU: pragmodels within
1.25x of the floor at 1000 and 5000; at least 2x faster than memo at 1000.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.nn import logsumexp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pragmodels as pm  # noqa: E402
from benchmarks._results import write_results  # noqa: E402

HERE = Path(__file__).resolve().parent
ALPHA = 2.0


def floor_listener(log_sem, alpha, depth):
    """The floor: the plainest log-space RSA listener in jax.numpy (no safety for empty rows)."""
    lis = log_sem - logsumexp(log_sem, axis=1, keepdims=True)
    for _ in range(depth):
        spk = alpha * lis
        spk = spk - logsumexp(spk, axis=0, keepdims=True)
        lis = spk - logsumexp(spk, axis=1, keepdims=True)
    return lis


def timed(fn, *args, reps):
    jax.block_until_ready(fn(*args))  # compile + warm-up
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def memo_ms(n, depth, reps, seed):
    try:
        out = subprocess.run(
            [sys.executable, str(HERE / "_memo_worker.py"), str(n), str(depth), str(reps), str(seed)],
            capture_output=True, text=True, timeout=900, cwd=HERE.parent,
        )
    except subprocess.TimeoutExpired:
        return None, "timeout (900 s)"
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr else "failed"
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    if rec["max_abs_diff"] > 1e-4:
        return None, f"memo disagrees with pragmodels by {rec['max_abs_diff']:.2g}"
    return rec["ms"], ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes only (smoke test)")
    ap.add_argument("--no-memo", action="store_true")
    args = ap.parse_args()
    sizes = [(200, 1), (1000, 1)] if args.quick else [(200, 1), (1000, 1), (5000, 1)]
    depths = [] if args.quick else [(200, d) for d in range(2, 9)]
    rows = []
    for n, depth in sizes + depths:
        seed = n + depth
        lex = (np.random.default_rng(seed).uniform(size=(n, n)) < 0.5).astype(np.float32)
        log_sem = jnp.log(jnp.asarray(lex))
        reps = 5 if n >= 5000 else 30
        ours = jax.jit(lambda s, a: pm.pragmatic_listener(s, a, depth=depth))
        floor = jax.jit(lambda s, a: floor_listener(s, a, depth))
        diff = float(jnp.max(jnp.abs(jnp.exp(ours(log_sem, ALPHA)) - jnp.exp(floor(log_sem, ALPHA)))))
        # interleave to share the machine's noise fairly
        t_ours, t_floor = [], []
        for _ in range(3):
            t_floor.append(timed(floor, log_sem, ALPHA, reps=reps))
            t_ours.append(timed(ours, log_sem, ALPHA, reps=reps))
        t_ours, t_floor = min(t_ours), min(t_floor)
        m, note = (None, "skipped") if args.no_memo else memo_ms(n, depth, reps, seed)
        row = dict(n=n, depth=depth, pragmodels_ms=t_ours, floor_ms=t_floor,
                   ratio_to_floor=t_ours / t_floor, memo_ms=m,
                   memo_over_pragmodels=(m / t_ours) if m else None, max_abs_diff_floor=diff, note=note)
        rows.append(row)
        print(f"{n:>5}x{n:<5} depth {depth}: pragmodels {t_ours:9.2f} ms | floor {t_floor:9.2f} ms "
              f"| ratio {t_ours / t_floor:5.2f} | memo "
              + (f"{m:9.2f} ms ({m / t_ours:5.2f}x slower)" if m else f"n/a ({note})"), flush=True)
    write_results(rows, "listener_table_quick" if args.quick else "listener_table", "Pragmatic listener table",
                  "Median ms after warm-up (best of 3 interleaved rounds).")


if __name__ == "__main__":
    main()
