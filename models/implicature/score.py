"""Run the DRInQ benchmark with one language model (the study's LM step, resumable).

    python -m models.implicature.score --lm smollm2 [--passes score sample interpretations] [--limit N]
        [--sample-limit N] [--conditions vanilla reasoning ...]
    python -m models.implicature.score --lm smollm2 --base-url http://127.0.0.1:8000/v1 --server-model smollm2 \
        --chat-template gguf:PATH --passes generate [--generate-limit N] [--generate-draws D] [--dry-run]
    python -m models.implicature.score --lm qwen --base-url http://gpu-host:8000/v1 --server-model Qwen/Qwen3-32B \
        [--chat-template-gguf FILE.gguf]     # any OpenAI-compatible server (vLLM, llama.cpp)

Items are taken in a fixed random order (seeded), so ``--limit`` (or a run stopped early) covers a
random subset, which the report names. Outputs go to ``fits/implicature/lm_outputs/<lm>_<pass>.csv``
(rewritten atomically every few rows) through the score cache (``PRAGMODELS_LM_CACHE``): re-running
continues where the last run stopped. The ``generate`` pass (the paper's reading: a JSON answer
generated in every condition, :mod:`models.implicature.generate`) goes through the resumable
elicitation engine (progress files under ``--progress-dir``) and writes ``<lm>_generated.csv``
with its manifest (the LM's identity). Before any request an estimate of requests and tokens is
printed; ``--dry-run`` prints only that.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from models.implicature import generate, lm_outputs, prompts
from pragmodels.datasets import load_drinq
from pragmodels.lm.entry import add_lm_arguments, open_lm_from_arguments

SEED = 20261201
N_DRAWS = 3
OUTPUTS = Path(__file__).resolve().parents[2] / "fits" / "implicature" / "lm_outputs"


def score_lm(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_lm_arguments(ap)
    ap.add_argument("--passes", nargs="+", default=["interpretations", "score"],
                    choices=[*lm_outputs.PASSES, "generate"])
    ap.add_argument("--conditions", nargs="+", default=list(prompts.CONDITIONS), choices=list(prompts.CONDITIONS))
    ap.add_argument("--limit", type=int, default=None, help="only the first N items of the fixed order (all passes)")
    ap.add_argument("--sample-limit", type=int, default=None,
                    help="the sampled-answer pass on only the first N items of the fixed order")
    ap.add_argument("--explanation-limit", type=int, default=None,
                    help="the scored explanation condition on only the first N items (it writes a justification first)")
    ap.add_argument("--generate-limit", type=int, default=None,
                    help="the generated-answer pass on only the first N items of the fixed order")
    ap.add_argument("--generate-draws", type=int, default=N_DRAWS,
                    help=f"draws of the in-context examples in the generated-answer pass (default {N_DRAWS})")
    ap.add_argument("--progress-dir", default=None,
                    help="where the generated pass keeps its resumable progress files (with the answers' texts; "
                         "default: beside the score cache, elicit/implicature/<lm>)")
    ap.add_argument("--dry-run", action="store_true", help="print the estimate of requests and tokens, send nothing")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar over the requests")
    ap.add_argument("--out", default=str(OUTPUTS), help="the folder of the output tables")
    args = ap.parse_args(argv)
    for name in ("limit", "sample_limit", "explanation_limit", "generate_limit", "generate_draws"):
        v = getattr(args, name)
        if v is not None and v < 1:
            ap.error(f"--{name.replace('_', '-')} {v}: expected a positive number of items.")
    items = load_drinq()
    order = lm_outputs.item_order(len(items))[: args.limit]
    items = items.iloc[order].reset_index(drop=True)
    _print_estimate(args, items)
    if args.dry_run:
        return 0
    lm = open_lm_from_arguments(ap, args, n_ctx=2048)
    out = Path(args.out)
    for pass_ in args.passes:
        t0 = time.monotonic()
        path = out / f"{args.lm}_{pass_}.csv"
        rows: list[dict] = []

        def keep(row: dict, rows: list[dict] = rows, path: Path = path) -> None:
            rows.append(row)
            if len(rows) % 25 == 0:
                lm_outputs.save_rows(rows, path)
                print(f"{path.name}: {len(rows)} rows", flush=True)

        if pass_ == "generate":
            _generate(lm, items, args, out)
            continue
        bar = not args.no_progress
        if pass_ in ("interpretations", "literal"):
            lm_outputs.score_interpretations(lm, items, lm_name=args.lm, on_row=keep, progress=bar,
                                             literal=pass_ == "literal")
        elif pass_ == "score":
            plain = [c for c in args.conditions if c != "explanation"]
            lm_outputs.score_letters(lm, items, lm_name=args.lm, conditions=plain, n_draws=N_DRAWS, seed=SEED, on_row=keep,
                                     progress=bar)
            if "explanation" in args.conditions:
                sub = items.iloc[: args.explanation_limit]
                lm_outputs.score_letters(lm, sub, lm_name=args.lm, conditions=["explanation"], n_draws=N_DRAWS, seed=SEED,
                                 on_row=keep, progress=bar)
        else:
            sub = items.iloc[: args.sample_limit]
            lm_outputs.sample_answers(lm, sub, lm_name=args.lm, conditions=args.conditions, n_draws=N_DRAWS, seed=SEED,
                              on_row=keep, progress=bar)
        lm_outputs.save_rows(rows, path)
        lm_outputs.write_manifest(path, lm.identity, pass_=pass_, rows=len(rows), wall_s=round(time.monotonic() - t0, 1),
                                  wall_note="this call's wall time (a resumed call's answers from the cache cost ~0)")
        print(f"{path}: {len(rows)} rows (done)", flush=True)
    return 0


def estimate_passes(args: argparse.Namespace, items: object) -> list[dict]:
    """What each pass will send, before any request: requests, prompt tokens (characters / 4; a scored
    prompt once, plus its continuations) and at most how many answer tokens.

    Parameters
    ----------
    args : argparse.Namespace
        The command's settings (``passes``, ``conditions``, the limits).
    items : pandas.DataFrame
        The items, in evaluation order.

    Returns
    -------
    list of dict
        ``pass, requests, prompt_tokens, answer_tokens_max``, one per pass, then ``total``.
    """
    import pandas as pd

    assert isinstance(items, pd.DataFrame)
    tok = lambda t: round(len(t) / 4)  # noqa: E731
    opts = lambda r: sum(tok(str(r[f"option_{L}"])) for L in prompts.LETTERS)  # noqa: E731
    rows = []
    for pass_ in args.passes:
        if pass_ == "generate":
            e = generate.estimate_generation(items.iloc[: args.generate_limit], args.conditions, args.generate_draws,
                                             SEED)["total"]
            rows.append({"pass": pass_, "requests": e["requests"], "prompt_tokens": e["prompt_tokens"],
                         "answer_tokens_max": e["answer_tokens_max"]})
        elif pass_ in ("interpretations", "literal"):
            temps = ((prompts.LITERAL_TEMPLATE,) if pass_ == "literal"
                     else (lm_outputs.FIT_TEMPLATE, lm_outputs.PRIOR_TEMPLATE))
            n = sum(tok(t.format(question=r["question"], context=r["context"])) + opts(r)
                    for _, r in items.iterrows() for t in temps)
            rows.append({"pass": pass_, "requests": len(temps) * len(items), "prompt_tokens": n, "answer_tokens_max": 0})
        else:
            sub = items.iloc[: args.sample_limit] if pass_ == "sample" else items
            conds = [c for c in args.conditions if pass_ == "sample" or c != "explanation"]
            work = [(c, d, r) for c in conds for d in range(N_DRAWS) for _, r in sub.iterrows()]
            if pass_ == "score" and "explanation" in args.conditions:
                work += [("explanation", d, r) for d in range(N_DRAWS)
                         for _, r in items.iloc[: args.explanation_limit].iterrows()]
            kind = "sample" if pass_ == "sample" else "score"
            n = sum(tok(prompts.prompt(r, c, kind, prompts.draw_examples(d, SEED))) + 5 for c, d, r in work)
            ans = (lm_outputs.SAMPLE_MAX_TOKENS * len(work) if pass_ == "sample" else
                   lm_outputs.EXPLANATION_MAX_TOKENS * sum(c == "explanation" for c, _, _ in work))
            rows.append({"pass": pass_, "requests": len(work), "prompt_tokens": n, "answer_tokens_max": ans})
    rows.append({"pass": "total", **{k: sum(r[k] for r in rows) for k in ("requests", "prompt_tokens",
                                                                           "answer_tokens_max")}})
    return rows


def _print_estimate(args: argparse.Namespace, items: object) -> list[dict]:
    """Print :func:`estimate_passes` (and the generated pass per condition), before any request."""
    import pandas as pd

    assert isinstance(items, pd.DataFrame)
    if "generate" in args.passes:
        est = generate.estimate_generation(items.iloc[: args.generate_limit], args.conditions, args.generate_draws, SEED)
        for c, e in est.items():
            print(f"estimate, generate {c}: {e['requests']} requests, ~{e['prompt_tokens']:,} prompt tokens "
                  f"(characters / 4), at most {e['answer_tokens_max']:,} answer tokens", flush=True)
    rows = estimate_passes(args, items)
    for r in rows:
        print(f"estimate, {r['pass']}: {r['requests']:,} requests, ~{r['prompt_tokens']:,} prompt tokens (characters "
              f"/ 4, continuations included), at most {r['answer_tokens_max']:,} answer tokens", flush=True)
    return rows


def _generate(lm: object, items: object, args: argparse.Namespace, out: Path) -> None:
    """The generated pass: elicit (resumable), classify, write the table and its manifest."""
    import pandas as pd

    from pragmodels.lm.cache import default_cache_path

    assert isinstance(items, pd.DataFrame)
    sub = items.iloc[: args.generate_limit]
    progress_dir = (Path(args.progress_dir) if args.progress_dir
                    else default_cache_path().parent / "elicit" / "implicature" / args.lm)
    records, timing = generate.generate(lm, sub, conditions=args.conditions, n_draws=args.generate_draws,  # type: ignore[arg-type]
                                        seed=SEED, progress_dir=progress_dir, log=print)
    table = generate.generated_table(records, lm_name=args.lm)
    est = generate.estimate_generation(sub, args.conditions, args.generate_draws, SEED)["total"]
    which = (f"the first {len(sub)} of the {len(items)} items in the fixed random order (lm_outputs.item_order)"
             if args.generate_limit else f"all {len(sub)} items")
    path = generate.write_generated(table, out / f"{args.lm}_generated.csv", identity=lm.identity,  # type: ignore[attr-defined]
                                    n_draws=args.generate_draws, seed=SEED, items=which, timing=timing,
                                    prompt_tokens=est["prompt_tokens"], stop=generate.answer_stop(lm))  # type: ignore[arg-type]
    counts = table["status"].value_counts().to_dict()
    print(f"{path}: {len(table)} answers {counts}, {timing['total']:.0f} s (done)", flush=True)


def _cli() -> int:
    """``score_lm`` with one-line errors (``--debug`` anywhere in the arguments keeps the traceback)."""
    from pragmodels.errors import one_line_cli

    return one_line_cli(score_lm, "models.implicature.score")


if __name__ == "__main__":
    raise SystemExit(_cli())
