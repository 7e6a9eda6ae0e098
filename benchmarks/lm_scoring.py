"""LM scoring throughput of the in-process llama.cpp backend: naive evaluation vs LlamaCppLM.score vs the cache.

Usage: python -m benchmarks.lm_scoring [--lm smollm2|gemma3] [--prompts N] [--threads T] [--naive-every K] [--quick]

Wavelength-like prompts (``models.wavelength.prompts.listener_prompt`` on made-up scales and
clues, not the upstream data), each with the 21 continuations ``answers()``
(``<answer>0</answer>`` ... ``<answer>100</answer>``), scored in these configurations, in one run,
on one model file (SmolLM2-135M-Instruct, chat format; or Gemma 3 270M, plain text):

(a) naive, the baseline: each continuation evaluated from scratch as its own full sequence,
    llama-cpp-python's high-level path: ``Llama(logits_all=True)``, ``reset()``,
    ``eval(prompt + continuation)``, log-softmax of ``scores`` at the continuation's positions;
(a') naive with logits only where they are read: the same from-scratch evaluation of each whole
    sequence, through a llama.cpp batch that asks for the continuation's positions only (the
    output layer is not run on the prompt's tokens: for Gemma's 262,144-token vocabulary that
    layer is most of the work, so (a) overstates what prefix reuse alone saves);
(b1) ``LlamaCppLM.score`` called once per continuation: the prompt's evaluation reused (it is
    the same prompt), but each continuation a decode of its own (its own ``LlamaCppLM``);
(b) ``LlamaCppLM.score``: the prompt evaluated once (only from the first token that differs
    from the previous prompt's, so the few-shot block the prompts share is evaluated once), all
    21 continuations in one batch;
(c) (b) through ``CachedLM`` on a cold cache (a new SQLite file; its own ``LlamaCppLM``, so its
    llama.cpp cache evolves as (b)'s does);
(d) (c) again on the warm cache (no model call).

The configurations are interleaved prompt by prompt (a, a', b1, b, c, d for prompt 1, then
prompt 2, ...), so that a change of the machine's load hits all of them alike. A naive configuration
costs the same per continuation whichever continuations it evaluates, so (a) and (a') time every
``--naive-every``-th continuation of each prompt (default every 4th: 6 of 21) and the figures
are per continuation; (b)-(d) score all 21. Reported per configuration: wall and CPU seconds
(this process, all threads) per continuation, continuations per second, scored tokens per
second (the continuations' own tokens, with the end-of-turn marker: the useful work, the same
for every configuration), evaluated tokens per second (what went through the model), and the
speed-up over (a) in wall and in CPU time; and the largest difference of each configuration's
scores from (b)'s on the same continuations. The machine's load average (``os.getloadavg()``)
is printed at the start and the end: on a shared machine the ratios matter, not the rates.

Threads: ``--threads`` defaults to 1, not ``LlamaCppLM``'s 2. llama.cpp's CPU backend here is
built with OpenMP (libgomp), whose threads spin at each of the hundreds of barriers of a decode;
on a 2-core machine shared with other work, a niced process with two threads stalls at them: a
21-continuation batch of SmolLM2 took 96 s with 2 threads, 2.3 s with 1, and 2.6 s with 2 and
``OMP_WAIT_POLICY=PASSIVE`` (set before ``llama_cpp`` is imported), measured on this machine.

Writes benchmarks/results/lm_scoring.csv and .md (``lm_scoring_gemma3.*`` with ``--lm gemma3``,
``*_t<T>`` with ``--threads T`` other than 1, ``*_quick`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from benchmarks._results import write_results
from models.wavelength.prompts import answers, listener_prompt
from pragmodels.lm import CachedLM, LlamaCppLM, ScoreCache, gemma3_path, smollm2_path

#: made-up scales and clues (none from the upstream data, none from the prompt's worked examples)
SCALES = [
    ("Boring", "Exciting", "a tax form"),
    ("Soft", "Hard", "a ripe peach"),
    ("Dry", "Wet", "a rainforest"),
    ("Calm", "Stormy", "a gentle breeze"),
    ("Ancient", "Modern", "a stone axe"),
    ("Dim", "Bright", "a candle"),
    ("Sad", "Joyful", "a birthday party"),
    ("Light", "Heavy", "a feather"),
    ("Rare", "Common", "a four-leaf clover"),
    ("Simple", "Complicated", "tax law"),
    ("Sluggish", "Speedy", "a bicycle"),
    ("Tame", "Wild", "a house cat"),
]

MODELS = {"smollm2": (smollm2_path, "chat", "SmolLM2-135M-Instruct (Q4_1), chat format"),
          "gemma3": (gemma3_path, "plain", "Gemma 3 270M (Q4_K_M), plain text")}


def prompts(n: int) -> list[str]:
    """``n`` listener prompts: the scales in turn, the clue varied once they run out."""
    out = []
    for i in range(n):
        left, right, clue = SCALES[i % len(SCALES)]
        out.append(listener_prompt(left, right, clue if i < len(SCALES) else f"{clue}, again ({i // len(SCALES)})"))
    return out


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


class NaiveAll:
    """(a): llama-cpp-python's ``Llama(logits_all=True)``: reset, eval the whole text, read ``scores``."""

    def __init__(self, path: Path, n_ctx: int, threads: int):
        from llama_cpp import Llama

        self.llm = Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, logits_all=True, n_threads=threads,
                         n_threads_batch=threads, verbose=False)

    def score(self, p: list[int], c: list[int]) -> float:
        self.llm.reset()
        self.llm.eval(p + c)
        return float(sum(_log_softmax(self.llm.scores[len(p) - 1 + i])[t] for i, t in enumerate(c)))


class NaiveOutputs:
    """(a'): the whole text from scratch in one llama.cpp batch, logits at the continuation's positions only."""

    def __init__(self, path: Path, n_ctx: int, threads: int):
        from llama_cpp import (
            Llama,
            llama_cpp as C,  # noqa: N812 - llama.cpp's C functions, C.llama_*
        )

        self.C = C
        self.llm = Llama(model_path=str(path), n_ctx=n_ctx, n_batch=n_ctx, logits_all=False, n_threads=threads,
                         n_threads_batch=threads, verbose=False)
        self.vocab = int(self.llm.n_vocab())

    def score(self, p: list[int], c: list[int]) -> float:
        ctx, batch = self.llm._ctx, self.llm._batch.batch
        ctx.kv_cache_clear()
        toks = p + c
        want = range(len(p) - 1, len(toks) - 1)
        batch.n_tokens = len(toks)
        for i, t in enumerate(toks):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = t, i, 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = i in want
        ctx.decode(self.llm._batch)
        total = 0.0
        for k, i in enumerate(want):  # outputs are indexed by batch position
            logits = np.ctypeslib.as_array(self.C.llama_get_logits_ith(ctx.ctx, i), shape=(self.vocab,))
            total += float(_log_softmax(logits[None])[0][c[k]])
        return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lm", choices=sorted(MODELS), default="smollm2")
    ap.add_argument("--prompts", type=int, default=6, help="prompts, each with 21 continuations (default 6)")
    ap.add_argument("--threads", type=int, default=1,
                    help="llama.cpp threads of every configuration (default 1: module docstring)")
    ap.add_argument("--naive-every", type=int, default=4,
                    help="(a) and (a') time every K-th continuation of each prompt (default 4: 6 of 21)")
    ap.add_argument("--n-ctx", type=int, default=1024)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2 prompts, naive on 2 continuations each")
    args = ap.parse_args()
    if args.quick:
        args.prompts, args.naive_every = 2, 20
    import llama_cpp

    load0 = os.getloadavg()
    t_start = time.perf_counter()
    path_fn, fmt, model_label = MODELS[args.lm]
    path = path_fn()
    print(f"{model_label}: {path.name}; {args.prompts} prompts x 21 continuations; threads {args.threads}; "
          f"n_ctx {args.n_ctx}; llama-cpp-python {llama_cpp.__version__}")
    print(f"load average at start (1, 5, 15 min): {load0[0]:.2f}, {load0[1]:.2f}, {load0[2]:.2f} on {os.cpu_count()} cores")

    lm_b = LlamaCppLM(path, prompt_format=fmt, n_ctx=args.n_ctx, n_threads=args.threads)
    lm_c = LlamaCppLM(path, prompt_format=fmt, n_ctx=args.n_ctx, n_threads=args.threads)
    lm_b1 = LlamaCppLM(path, prompt_format=fmt, n_ctx=args.n_ctx, n_threads=args.threads)
    naive_all = NaiveAll(path, args.n_ctx, args.threads)
    naive_out = NaiveOutputs(path, args.n_ctx, args.threads)
    tmp = tempfile.TemporaryDirectory()
    cached = CachedLM(lm_c, ScoreCache(Path(tmp.name) / "scores.sqlite"))
    conts = answers()
    subset = list(range(0, len(conts), args.naive_every))
    keys = ["a", "a_out", "b1", "b", "c", "d"]
    wall = dict.fromkeys(keys, 0.0)
    cpu = dict.fromkeys(keys, 0.0)
    n_conts = dict.fromkeys(keys, 0)
    scored_tok = dict.fromkeys(keys, 0)
    eval_tok = dict.fromkeys(keys, 0)
    diff = dict.fromkeys(keys, 0.0)
    prompt_tokens = []

    def timed(key: str, fn):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        wall[key] += time.perf_counter() - w
        cpu[key] += time.process_time() - c
        return out

    for i, prompt in enumerate(prompts(args.prompts)):
        split = [lm_b.split_tokens(prompt, x) for x in conts]
        p = split[0][0]
        prompt_tokens.append(len(p))
        sub_tok = sum(len(split[j][1]) for j in subset)
        all_tok = sum(len(c) for _, c in split)
        a = timed("a", lambda: [naive_all.score(p, split[j][1]) for j in subset])
        a_out = timed("a_out", lambda: [naive_out.score(p, split[j][1]) for j in subset])
        e0 = lm_b1.tokens_evaluated
        b1 = timed("b1", lambda: np.concatenate([lm_b1.score(prompt, [x]) for x in conts]))
        eval_tok["b1"] += lm_b1.tokens_evaluated - e0
        e0 = lm_b.tokens_evaluated
        b = timed("b", lambda: lm_b.score(prompt, conts))
        eval_tok["b"] += lm_b.tokens_evaluated - e0
        e0 = lm_c.tokens_evaluated
        c = timed("c", lambda: cached.score(prompt, conts))
        eval_tok["c"] += lm_c.tokens_evaluated - e0
        e0 = lm_c.tokens_evaluated
        d = timed("d", lambda: cached.score(prompt, conts))
        eval_tok["d"] += lm_c.tokens_evaluated - e0
        for k in ("a", "a_out"):
            n_conts[k] += len(subset)
            scored_tok[k] += sub_tok
            eval_tok[k] += sum(len(p) + len(split[j][1]) for j in subset)
        for k in ("b1", "b", "c", "d"):
            n_conts[k] += len(conts)
            scored_tok[k] += all_tok
        diff["a"] = max(diff["a"], float(np.max(np.abs(np.array(a) - b[subset]))))
        diff["a_out"] = max(diff["a_out"], float(np.max(np.abs(np.array(a_out) - b[subset]))))
        diff["b1"] = max(diff["b1"], float(np.max(np.abs(b1 - b))))
        diff["c"] = max(diff["c"], float(np.max(np.abs(c - b))))
        diff["d"] = max(diff["d"], float(np.max(np.abs(d - c))))
        print(f"prompt {i + 1}/{args.prompts} ({len(p)} tokens): s per continuation  a {wall['a'] / n_conts['a']:.3f}  "
              f"a' {wall['a_out'] / n_conts['a_out']:.3f}  b1 {wall['b1'] / n_conts['b1']:.3f}  "
              f"b {wall['b'] / n_conts['b']:.3f}  "
              f"c {wall['c'] / n_conts['c']:.3f}  d {wall['d'] / n_conts['d']:.5f}  (running totals)", flush=True)
    load1 = os.getloadavg()
    stats = cached.cache.stats
    assert eval_tok["d"] == 0 and stats.hits == n_conts["d"], "the warm cache called the model"

    labels = {"a": "(a) naive: Llama(logits_all=True), reset + eval(prompt + continuation) each",
              "a_out": "(a') naive, logits only at the continuation's positions",
              "b1": "(b1) LlamaCppLM.score once per continuation (prefix reuse, no batch)",
              "b": "(b) LlamaCppLM.score: prompt once (prefix reuse), 21 continuations in one batch",
              "c": "(c) (b) through CachedLM, cold cache",
              "d": "(d) (b) through CachedLM, warm cache"}
    rows = []
    base_wall, base_cpu = wall["a"] / n_conts["a"], cpu["a"] / n_conts["a"]
    for k in keys:
        w, cp = wall[k] / n_conts[k], cpu[k] / n_conts[k]
        rows.append({
            "config": labels[k], "lm": args.lm, "threads": args.threads, "prompts": args.prompts,
            "continuations_timed": n_conts[k], "wall_s": wall[k], "cpu_s": cpu[k],
            "ms_per_continuation": 1e3 * w, "cpu_ms_per_continuation": 1e3 * cp,
            "continuations_per_s": 1 / w if w else float("inf"),
            "scored_tokens_per_s": scored_tok[k] / wall[k] if wall[k] else float("inf"),
            "evaluated_tokens": eval_tok[k],
            "evaluated_tokens_per_s": eval_tok[k] / wall[k] if wall[k] else float("inf"),
            "speedup_wall_vs_a": base_wall / w if w else float("inf"),
            "speedup_cpu_vs_a": base_cpu / cp if cp else float("inf"),
            "max_abs_diff_vs_b": diff[k],
            "load_avg_1min_start": load0[0], "load_avg_1min_end": load1[0],
        })
    total = time.perf_counter() - t_start
    print(f"load average at end (1, 5, 15 min): {load1[0]:.2f}, {load1[1]:.2f}, {load1[2]:.2f}; run {total:.0f} s")
    for r in rows:
        print(f"{r['config']}\n    {r['ms_per_continuation']:.1f} ms/continuation (CPU {r['cpu_ms_per_continuation']:.1f}), "
              f"{r['continuations_per_s']:.2f} continuations/s, {r['scored_tokens_per_s']:.1f} scored tok/s, "
              f"{r['evaluated_tokens_per_s']:.1f} evaluated tok/s; x{r['speedup_wall_vs_a']:.1f} wall, "
              f"x{r['speedup_cpu_vs_a']:.1f} CPU vs (a); max |diff| {r['max_abs_diff_vs_b']:.2g}")
    md_columns = {"config": "configuration", "continuations_timed": "continuations timed",
                  "ms_per_continuation": "ms / continuation", "cpu_ms_per_continuation": "CPU ms / continuation",
                  "continuations_per_s": "continuations / s", "scored_tokens_per_s": "scored tokens / s",
                  "evaluated_tokens_per_s": "evaluated tokens / s", "speedup_wall_vs_a": "speed-up vs (a), wall",
                  "speedup_cpu_vs_a": "speed-up vs (a), CPU", "max_abs_diff_vs_b": "max abs diff vs (b)"}
    detail = (f"Model {model_label} (`{path.name}`), llama-cpp-python {llama_cpp.__version__}, llama.cpp "
              f"threads {args.threads}, n_ctx {args.n_ctx}; {args.prompts} Wavelength-like listener prompts "
              f"(`models.wavelength.prompts.listener_prompt` on made-up scales; {min(prompt_tokens)}-"
              f"{max(prompt_tokens)} prompt tokens, the few-shot block shared) x the 21 `answers()`; (a) and (a') "
              f"timed on every {args.naive_every}th continuation ({len(subset)} of 21 per prompt), per continuation. "
              f"Configurations interleaved prompt by prompt. Load average (1 min) {load0[0]:.2f} at the start, "
              f"{load1[0]:.2f} at the end, on {os.cpu_count()} cores shared with a background job (run under "
              f"`nice -n 10`): rates are low and move between runs; the ratios are the figures. Run {total:.0f} s.")
    notes = ("Scored tokens: the continuations' own tokens (with the end-of-turn marker), the same work in every "
             "configuration. Evaluated tokens: what went through the model, the prompt included (for (a) and (a') "
             "the whole text each time; for (b) and (c) the prompt from its first token that differs from the "
             "previous prompt's, plus each continuation once; (b1) more, since a call with one continuation moves all "
             "but its last token into the prompt, evaluating them twice). Max abs diff: nats, against (b)'s scores of the same "
             "continuations ((d) against (c)).\n\n"
             "Run: `nice -n 10 python -m benchmarks.lm_scoring` (`--lm gemma3`, `--prompts N`, `--threads T`, "
             "`--naive-every K`, `--quick`).")
    stem = ("lm_scoring" + ("_gemma3" if args.lm == "gemma3" else "") + (f"_t{args.threads}" if args.threads != 1 else "")
            + ("_quick" if args.quick else ""))
    write_results(rows, stem, f"LM scoring throughput ({args.lm}, in-process llama.cpp)", detail, md_columns, notes)
    print(f"wrote benchmarks/results/{stem}.csv and .md")
    tmp.cleanup()


if __name__ == "__main__":
    main()
