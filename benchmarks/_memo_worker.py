"""Time pragmodels, the plain-JAX floor and memo (PyPI memo-lang) on one random N x N Boolean lexicon.

Run as ``python -m benchmarks._memo_worker N DEPTH REPEATS SEED [--no-memo] [--grad]`` from the
repository root; prints one JSON line. Every case is timed in this one process, interleaved (one
call of each case per repeat, in a fresh random order), after two warm-up calls; the figure is the
median of the repeats, each ended by ``jax.block_until_ready``. A separate process per size
because memo parses module-level source and its domains must be globals.

Forward cases (L1 table, ``[utterance, state]``):

- ``pragmodels``: ``jax.jit(pm.pragmatic_listener)``, log-semantics passed as an argument.
- ``boolean``: the same with ``boolean=True`` (the closed form of a 0/1 lexicon,
  :mod:`pragmodels.boolean_rsa`).
- ``floor``: the plainest jax.numpy log-space listener (``listener_table.floor_listener``).
- ``memo_const``: memo as the earlier table ran it: the lexicon a module constant read by a
  jitted ``lex(u, s)``, the memo called directly (memo jits its own body, not the recursion).
- ``memo_arg``: the lexicon an array parameter (``lex: ...``), the memo called directly.
- ``memo_jit``: memo's fastest idiomatic form: array parameter and the whole call under
  ``jax.jit`` (``jax.jit(lambda lex, a: L(lex, a, 0.0, DEPTH))``).

Gradient cases (``--grad``): ``d/d alpha`` of the negative log-likelihood of 5 listener choices
per utterance (true states only), under ``jax.jit(jax.grad(...))``: pragmodels; the plain-JAX
floor made gradient-safe with the double ``where`` (``floor_listener_safe``); memo's jitted
form with ``log(L + eps)``, ``eps = MEMO_EPS``. Without the epsilon memo's gradient is NaN
(``log 0 = -inf``, ``0 * -inf``), as is the unguarded floor's; both are checked and reported,
with pragmodels' gradient in float64 as the reference value.
"""

import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import pragmodels as pm
from benchmarks.listener_table import ALPHA, floor_listener, floor_listener_safe

N, DEPTH, REPS, SEED = (int(a) for a in sys.argv[1:5])
WITH_MEMO = "--no-memo" not in sys.argv[5:]
WITH_GRAD = "--grad" in sys.argv[5:]
# Added inside memo's log. At 200² eps from 1e-30 to 1e-10 gives the same float32 gradient; 1e-38
# (subnormal, flushed to zero on CPU) is still NaN; 1e-6 already moves it by 5e-4 (relative).
MEMO_EPS = 1e-10
OBS_PER_UTTERANCE = 5

LEX_NP = (np.random.default_rng(SEED).uniform(size=(N, N)) < 0.5).astype(np.float32)
LEX = jnp.asarray(LEX_NP)
with np.errstate(divide="ignore"):
    LOG_SEM = jnp.asarray(np.log(LEX_NP))

if WITH_MEMO:
    from memo import memo

    U = np.arange(N)
    S = np.arange(N)

    @jax.jit
    def lex(u, s):  # closes over the global: a jit constant
        return LEX[u, s]

    @jax.jit
    def lex_at(table, u, s):
        return table[u, s]

    @memo
    def L0c[u: U, s: S]():
        listener: knows(u)
        listener: chooses(s in S, wpp=lex(u, s))
        return Pr[listener.s == s]

    @memo
    def Lc[u: U, s: S](alpha, t):
        listener: thinks[
            speaker: given(s in S, wpp=1),
            speaker: chooses(u in U, wpp=exp(alpha * log(L0c[u, s]() if t == 1 else Lc[u, s](alpha, t - 1))))
        ]
        listener: observes [speaker.u] is u
        listener: chooses(s in S, wpp=Pr[speaker.s == s])
        return Pr[listener.s == s]

    @memo
    def L0[u: U, s: S](table: ...):
        listener: knows(u)
        listener: chooses(s in S, wpp=lex_at(table, u, s))
        return Pr[listener.s == s]

    @memo
    def L[u: U, s: S](table: ..., alpha, eps, t):
        listener: thinks[
            speaker: given(s in S, wpp=1),
            speaker: chooses(u in U, wpp=exp(alpha * log(
                (L0[u, s](table) if t == 1 else L[u, s](table, alpha, eps, t - 1)) + eps)))
        ]
        listener: observes [speaker.u] is u
        listener: chooses(s in S, wpp=Pr[speaker.s == s])
        return Pr[listener.s == s]


def bench(cases, reps):
    """Median ms per case, calls interleaved in a fresh random order each round; first-call (compile + run) seconds.

    Not round-robin: in a rotation each case always follows the same one, and a case after memo's
    (heavier) calls ran up to 1.3x slower at 1000² than in a run without memo (measured 2026-12-07).
    """
    first, times = {}, {name: [] for name in cases}
    for name, f in cases.items():
        t0 = time.perf_counter()
        jax.block_until_ready(f())
        first[name] = time.perf_counter() - t0
        jax.block_until_ready(f())
    names = list(cases)
    order = np.random.default_rng(len(names))
    for _ in range(reps):
        for name in order.permutation(names):
            t0 = time.perf_counter()
            jax.block_until_ready(cases[name]())
            times[name].append(time.perf_counter() - t0)
    return {n: 1e3 * float(np.median(t)) for n, t in times.items()}, first


def max_abs_diff(p, ref):
    return float(np.max(np.abs(np.asarray(p) - ref)))


depth = DEPTH
ours = jax.jit(lambda s, a: pm.pragmatic_listener(s, a, depth=depth))
ours_bool = jax.jit(lambda s, a: pm.pragmatic_listener(s, a, depth=depth, boolean=True))
floor = jax.jit(lambda s, a: floor_listener(s, a, depth))
cases = {"pragmodels": lambda: ours(LOG_SEM, ALPHA), "boolean": lambda: ours_bool(LOG_SEM, ALPHA),
         "floor": lambda: floor(LOG_SEM, ALPHA)}
if WITH_MEMO:
    memo_jit = jax.jit(lambda table, a: L(table, a, 0.0, depth))
    cases.update(memo_const=lambda: Lc(ALPHA, DEPTH), memo_arg=lambda: L(LEX, ALPHA, 0.0, DEPTH),
                 memo_jit=lambda: memo_jit(LEX, ALPHA))
ms, first = bench(cases, REPS)  # first: the first call of each, compilation included
rec = {"n": N, "depth": DEPTH, "reps": REPS, "load_avg_1min": os.getloadavg()[0],
       **{f"{k}_ms": v for k, v in ms.items()}, **{f"{k}_first_s": v for k, v in first.items()}}
ref = np.exp(np.asarray(cases["pragmodels"]()))
rec["max_abs_diff_floor"] = max_abs_diff(np.exp(np.asarray(cases["floor"]())), ref)
rec["max_abs_diff_boolean"] = max_abs_diff(np.exp(np.asarray(cases["boolean"]())), ref)
for name in ("memo_const", "memo_arg", "memo_jit"):
    if name in cases:
        rec[f"max_abs_diff_{name}"] = max_abs_diff(cases[name](), ref)

if WITH_GRAD:
    rng = np.random.default_rng(SEED + 1)
    u_idx = np.repeat(np.arange(N), OBS_PER_UTTERANCE)
    s_idx = np.array([rng.choice(np.flatnonzero(LEX_NP[u])) for u in u_idx])  # true states only
    u_idx, s_idx = jnp.asarray(u_idx), jnp.asarray(s_idx)

    def nll_log(log_l1):
        return -jnp.sum(log_l1[u_idx, s_idx])

    g_ours = jax.jit(jax.grad(lambda a, s: nll_log(pm.pragmatic_listener(s, a, depth=depth))))
    g_bool = jax.jit(jax.grad(lambda a, s: nll_log(pm.pragmatic_listener(s, a, depth=depth, boolean=True))))
    g_floor = jax.jit(jax.grad(lambda a, s: nll_log(floor_listener_safe(s, a, depth))))
    g_floor_raw = jax.jit(jax.grad(lambda a, s: nll_log(floor_listener(s, a, depth))))
    alpha = jnp.float32(ALPHA)
    gcases = {"grad_pragmodels": lambda: g_ours(alpha, LOG_SEM), "grad_boolean": lambda: g_bool(alpha, LOG_SEM),
              "grad_floor": lambda: g_floor(alpha, LOG_SEM)}
    if WITH_MEMO:
        g_memo = jax.jit(jax.grad(lambda a, table, eps: -jnp.sum(jnp.log(L(table, a, eps, depth)[u_idx, s_idx]))))
        gcases["grad_memo_eps"] = lambda: g_memo(alpha, LEX, jnp.float32(MEMO_EPS))
    gms, gfirst = bench(gcases, REPS)
    rec.update({f"{k}_ms": v for k, v in gms.items()}, **{f"{k}_first_s": v for k, v in gfirst.items()})
    rec.update(grad_value=float(gcases["grad_pragmodels"]()), grad_boolean_value=float(gcases["grad_boolean"]()),
               grad_floor_value=float(gcases["grad_floor"]()),
               grad_floor_unguarded_value=float(g_floor_raw(alpha, LOG_SEM)))
    with jax.enable_x64(True), np.errstate(divide="ignore"):  # reference: pragmodels in float64
        g64 = jax.jit(jax.grad(lambda a, s: nll_log(pm.pragmatic_listener(s, a, depth=depth))))
        rec["grad_f64_value"] = float(g64(jnp.float64(ALPHA), jnp.asarray(np.log(LEX_NP.astype(np.float64)))))
    if WITH_MEMO:  # same compiled gradient, eps = 0: NaN
        rec.update(memo_eps=MEMO_EPS, grad_memo_eps_value=float(gcases["grad_memo_eps"]()),
                   grad_memo_no_eps_value=float(g_memo(alpha, LEX, jnp.float32(0.0))),
                   max_abs_diff_memo_eps=max_abs_diff(L(LEX, ALPHA, MEMO_EPS, DEPTH), ref))

print(json.dumps(rec))
