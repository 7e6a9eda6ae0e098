"""Pragmatic-listener table: pragmodels vs a plain jax.numpy floor vs memo, same lexicon, same run.

Usage: python -m benchmarks.listener_table [--quick] [--no-memo] [--sizes 200 1000 3000]

pragmodels runs twice: as a general listener, and with ``boolean=True`` (the closed form of a 0/1
lexicon, :mod:`pragmodels.boolean_rsa`; target: faster than the floor at every size).

For random Boolean lexicons (density 0.5) at 200, 1000 and 3000 squared (depth 1) and depths 2-8
at 200x200, prints milliseconds per call after warm-up (median of repeats, calls of the cases
interleaved in a fresh random order each repeat, each ended by block_until_ready), with ratios pragmodels/floor and
memo/pragmodels, and at depth 1 the same for the gradient of a listener negative log-likelihood
with respect to alpha. The cases for one size run in subprocesses (``_memo_worker.py``, which
documents them; pragmodels and the floor in one, memo beside pragmodels in another): pragmodels
and the floor jit-compiled with the semantics an argument; memo in
the form the earlier table used (lexicon a jit constant, memo called directly) and in its fastest
idiomatic form (lexicon an array parameter, the whole call under jax.jit). memo's L1 is checked
against pragmodels (max abs difference) and its gradient needs an epsilon (without it: NaN).
Writes benchmarks/results/listener_table.csv and .md. Targets on a 2-core CPU: pragmodels within
1.25x of the floor at 1000 and 3000; faster than memo's fastest form at 1000.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import pandas as pd
from jax.nn import logsumexp

from benchmarks._results import write_results

HERE = Path(__file__).resolve().parent
ALPHA = 2.0
TOL = 1e-4


def floor_listener(log_sem, alpha, depth):
    """The floor: the plainest log-space RSA listener in jax.numpy (no safety for empty rows)."""
    lis = log_sem - logsumexp(log_sem, axis=1, keepdims=True)
    for _ in range(depth):
        spk = alpha * lis
        spk = spk - logsumexp(spk, axis=0, keepdims=True)
        lis = spk - logsumexp(spk, axis=1, keepdims=True)
    return lis


def floor_listener_safe(log_sem, alpha, depth):
    """The floor made differentiable on a 0/1 lexicon: ``alpha * -inf`` behind a double ``where``.

    Without it ``d/d alpha`` is ``-inf * 0 = NaN`` (the unguarded floor's gradient is reported too).
    """
    lis = log_sem - logsumexp(log_sem, axis=1, keepdims=True)
    for _ in range(depth):
        ok = lis > -jnp.inf
        spk = jnp.where(ok, alpha * jnp.where(ok, lis, 0.0), -jnp.inf)
        spk = spk - logsumexp(spk, axis=0, keepdims=True)
        lis = spk - logsumexp(spk, axis=1, keepdims=True)
    return lis


def _worker(n, depth, reps, seed, memo, grad):
    cmd = [sys.executable, "-m", "benchmarks._memo_worker", str(n), str(depth), str(reps), str(seed)]
    cmd += ([] if memo else ["--no-memo"]) + (["--grad"] if grad else [])
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=HERE.parent)
    except subprocess.TimeoutExpired:
        return None, "timeout (900 s)"
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr else "failed"
    return dict(json.loads(out.stdout.strip().splitlines()[-1]), wall_s=time.perf_counter() - t0), ""


def run_case(n, depth, reps, seed, memo, grad):
    """pragmodels, boolean=True and the floor timed in a process of their own; memo, if asked, in a second
    process beside pragmodels again (``*_with_memo_ms``), the denominator of memo's ratios. In one process
    with memo's calls interleaved every case ran slower and the ratio to the floor moved by up to 0.2 at
    1000² and 3000² (2026-12-07: boolean=True, 0.8x the floor alone, came out at 1.0-1.1x)."""
    rec, note = _worker(n, depth, reps, seed, False, grad)
    if rec is None or not memo:
        return rec, note
    with_memo, note = _worker(n, depth, reps, seed, True, grad)
    if with_memo is None:
        return rec, f"memo: {note}"
    rec.update({k: v for k, v in with_memo.items() if "memo" in k},
               pragmodels_with_memo_ms=with_memo["pragmodels_ms"], wall_s=rec["wall_s"] + with_memo["wall_s"])
    if grad:
        rec["grad_pragmodels_with_memo_ms"] = with_memo["grad_pragmodels_ms"]
    return rec, ""


def ratio(rec, num, den):
    a, b = rec.get(f"{num}_ms"), rec.get(f"{den}_ms")
    return a / b if a and b else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="200 and 1000 at depth 1 only (smoke test)")
    ap.add_argument("--no-memo", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="+", default=[200, 1000, 3000], help="depth-1 sizes")
    args = ap.parse_args()
    sizes = [200, 1000] if args.quick else args.sizes
    cases = [(n, 1) for n in sizes] + ([] if args.quick else [(200, d) for d in range(2, 9)])
    rows = []
    for n, depth in cases:
        reps = 15 if n >= 3000 else 60 if n >= 1000 else 100
        rec, note = run_case(n, depth, reps, n + depth, not args.no_memo, grad=depth == 1)
        if rec is None:
            rows.append(dict(n=n, depth=depth, note=note))
            print(f"{n:>5}x{n:<5} depth {depth}: failed ({note})", flush=True)
            continue
        bad = [k for k in ("floor", "boolean", "memo_const", "memo_arg", "memo_jit")
               if rec.get(f"max_abs_diff_{k}", 0.0) > TOL]
        note = f"disagrees with pragmodels: {', '.join(bad)}" if bad else ""
        row = dict(n=n, depth=depth, reps=reps, **{k: v for k, v in rec.items() if k not in ("n", "depth", "reps")},
                   pragmodels_over_floor=ratio(rec, "pragmodels", "floor"),
                   boolean_over_floor=ratio(rec, "boolean", "floor"),
                   grad_boolean_over_floor=ratio(rec, "grad_boolean", "grad_floor"),
                   memo_const_over_pragmodels=ratio(rec, "memo_const", "pragmodels_with_memo"),
                   memo_arg_over_pragmodels=ratio(rec, "memo_arg", "pragmodels_with_memo"),
                   memo_jit_over_pragmodels=ratio(rec, "memo_jit", "pragmodels_with_memo"),
                   grad_pragmodels_over_floor=ratio(rec, "grad_pragmodels", "grad_floor"),
                   grad_memo_over_pragmodels=ratio(rec, "grad_memo_eps", "grad_pragmodels_with_memo"), note=note)
        rows.append(row)
        line = (f"{n:>5}x{n:<5} depth {depth}: pragmodels {rec['pragmodels_ms']:9.2f} ms | floor "
                f"{rec['floor_ms']:9.2f} ms ({row['pragmodels_over_floor']:.2f}x) | boolean=True "
                f"{rec['boolean_ms']:9.2f} ms ({row['boolean_over_floor']:.2f}x)")
        if "memo_jit_ms" in rec:
            line += (f" | memo jit {rec['memo_jit_ms']:9.2f} ms ({row['memo_jit_over_pragmodels']:.2f}x), "
                     f"const {rec['memo_const_ms']:9.2f} ms ({row['memo_const_over_pragmodels']:.2f}x); "
                     f"L1 max|diff| memo jit {rec['max_abs_diff_memo_jit']:.2g}")
        print(line, flush=True)
        if "grad_pragmodels_ms" in rec:
            line = (f"{'':13}grad: pragmodels {rec['grad_pragmodels_ms']:9.2f} ms | floor "
                    f"{rec['grad_floor_ms']:9.2f} ms ({row['grad_pragmodels_over_floor']:.2f}x) | boolean=True "
                    f"{rec['grad_boolean_ms']:9.2f} ms ({row['grad_boolean_over_floor']:.2f}x) | "
                    f"value {rec['grad_value']:.6g} (float64 {rec['grad_f64_value']:.6g}), floor "
                    f"{rec['grad_floor_value']:.6g}, "
                    f"unguarded floor {rec['grad_floor_unguarded_value']}")
            if "grad_memo_eps_ms" in rec:
                line += (f" | memo eps={rec['memo_eps']:g} {rec['grad_memo_eps_ms']:9.2f} ms "
                         f"({row['grad_memo_over_pragmodels']:.2f}x), value {rec['grad_memo_eps_value']:.6g}; "
                         f"memo eps=0: {rec['grad_memo_no_eps_value']}")
            print(line, flush=True)
    write_results(rows, "listener_table_quick" if args.quick else "listener_table", "Pragmatic listener table",
                  DETAIL, md_columns=FORWARD_COLUMNS, notes=load_note(rows) + "\n" + gradient_notes(rows))


DETAIL = ("Milliseconds per call after two warm-up calls: median of the repeats (`reps`), the cases' calls "
          "interleaved in a fresh random order each repeat, each ended by `block_until_ready`. Per size two "
          "processes: pragmodels, boolean=True and the floor in one (their ratios); memo beside pragmodels in "
          "the other (memo's ratios are against pragmodels in that process, `pragmodels beside memo ms`), because "
          "memo's calls interleaved slowed the other cases (`load_avg_1min` in the CSV: the load of the machine "
          "after the forward timings). Lexicon: random Boolean, "
          "density 0.5, alpha = 2. memo (memo-lang 1.3.3): *const* = lexicon a jit constant, memo called "
          "directly (the form of the earlier table); *arg* = lexicon an array parameter (`lex: ...`), called "
          "directly; *jit* = array parameter and the whole call under `jax.jit` (memo's fastest idiomatic "
          "form). The CSV also has every case's first-call (compile + run) seconds and each size's wall time.")

FORWARD_COLUMNS = {
    "n": "n", "depth": "depth", "pragmodels_ms": "pragmodels ms", "floor_ms": "floor ms",
    "pragmodels_over_floor": "pragmodels / floor", "boolean_ms": "boolean=True ms",
    "boolean_over_floor": "boolean=True / floor", "pragmodels_with_memo_ms": "pragmodels beside memo ms",
    "memo_jit_ms": "memo jit ms",
    "memo_jit_over_pragmodels": "memo jit / pragmodels", "memo_arg_ms": "memo arg ms",
    "memo_arg_over_pragmodels": "memo arg / pragmodels", "memo_const_ms": "memo const ms",
    "memo_const_over_pragmodels": "memo const / pragmodels",
    "max_abs_diff_memo_jit": "L1 max abs diff memo jit", "note": "note",
}

GRAD_COLUMNS = {
    "n": "n", "grad_pragmodels_ms": "pragmodels ms", "grad_floor_ms": "floor ms",
    "grad_pragmodels_over_floor": "pragmodels / floor", "grad_boolean_ms": "boolean=True ms",
    "grad_boolean_over_floor": "boolean=True / floor", "grad_boolean_value": "dNLL/dalpha boolean=True",
    "grad_pragmodels_with_memo_ms": "pragmodels beside memo ms", "grad_memo_eps_ms": "memo jit + eps ms",
    "grad_memo_over_pragmodels": "memo / pragmodels", "grad_value": "dNLL/dalpha pragmodels",
    "grad_floor_value": "floor", "grad_memo_eps_value": "memo + eps", "grad_f64_value": "pragmodels float64",
    "grad_memo_no_eps_value": "memo, eps = 0",
    "grad_floor_unguarded_value": "floor without where",
}


def gradient_notes(rows):
    g = [r for r in rows if pd.notna(r.get("grad_pragmodels_ms"))]
    if not g:
        return ""
    df = pd.DataFrame(g)
    cols = [c for c in GRAD_COLUMNS if c in df]
    fmt = tuple("g" if c == "n" else ".5g" if c.endswith("_value") else ".3g" for c in cols)  # gradients: 5 digits
    df = df[cols].rename(columns=GRAD_COLUMNS)
    eps = next((r["memo_eps"] for r in g if "memo_eps" in r), None)
    return ("## Gradient with respect to alpha (depth 1)\n\n"
            "`jax.jit(jax.grad(nll))` at alpha = 2, where nll is minus the sum of log L1 over 5 listener choices "
            "per utterance (true states only). The floor is the plain jax.numpy listener with its `alpha * log L0` "
            "behind a double `where` (without it the gradient is NaN, last column). memo runs its jitted "
            "array-parameter form with `log(L + eps)` in the speaker"
            + (f", eps = {eps:g}" if eps is not None else "")
            + "; with eps = 0 its gradient is NaN (`log 0 = -inf`, then `0 * -inf`).\n\n"
            + df.to_markdown(index=False, floatfmt=fmt) + "\n")


def load_note(rows):
    loads = [r["load_avg_1min"] for r in rows if pd.notna(r.get("load_avg_1min"))]
    if not loads:
        return ""
    return (f"Load average (1 min) on this {os.cpu_count()}-core machine during the run: {min(loads):.1f} to "
            f"{max(loads):.1f}, i.e. other work shared the cores; the interleaved calls share that noise, but "
            "single figures (the 200² depth rows most of all) move by tens of percent between runs.\n")


if __name__ == "__main__":
    main()
