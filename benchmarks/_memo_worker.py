"""Time memo's (PyPI memo-lang) pragmatic listener on a random N x N Boolean lexicon.

Run as ``python benchmarks/_memo_worker.py N DEPTH REPEATS SEED``; prints one JSON line with
the median milliseconds after warm-up, the compile time and the max abs difference from
pragmodels on the same lexicon. Separate process: memo parses module-level source, and its
domains and lexicon must be globals.
"""

import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from memo import memo

N, DEPTH, REPS, SEED = (int(a) for a in sys.argv[1:5])
ALPHA = 2.0
U = np.arange(N)
S = np.arange(N)
LEX = jnp.asarray((np.random.default_rng(SEED).uniform(size=(N, N)) < 0.5).astype(np.float32))


@jax.jit
def lex(u, s):
    return LEX[u, s]


@memo
def L0[u: U, s: S]():
    listener: knows(u)
    listener: chooses(s in S, wpp=lex(u, s))
    return Pr[listener.s == s]


@memo
def L[u: U, s: S](alpha, t):
    listener: thinks[
        speaker: given(s in S, wpp=1),
        speaker: chooses(u in U, wpp=exp(alpha * log(L0[u, s]() if t == 1 else L[u, s](alpha, t - 1))))
    ]
    listener: observes [speaker.u] is u
    listener: chooses(s in S, wpp=Pr[speaker.s == s])
    return Pr[listener.s == s]


t0 = time.perf_counter()
out = L(ALPHA, DEPTH)
jax.block_until_ready(out)
compile_s = time.perf_counter() - t0
times = []
for _ in range(REPS):
    t0 = time.perf_counter()
    jax.block_until_ready(L(ALPHA, DEPTH))
    times.append(time.perf_counter() - t0)

sys.path.insert(0, ".")
import pragmodels as pm  # noqa: E402

ref = np.exp(np.asarray(pm.pragmatic_listener(jnp.log(LEX), ALPHA, depth=DEPTH)))
print(json.dumps({"ms": 1e3 * float(np.median(times)), "compile_s": compile_s,
                  "max_abs_diff": float(np.nanmax(np.abs(np.asarray(out) - ref)))}))
