"""Run the DRInQ benchmark with one language model (the study's LM step, resumable).

    python -m models.implicature.score --lm smollm2 [--passes score sample interpretations] [--limit N]
        [--sample-limit N] [--conditions vanilla reasoning ...]
    python -m models.implicature.score --lm qwen --base-url http://gpu-host:8000/v1 --server-model Qwen/Qwen3-32B \
        [--chat-template-gguf FILE.gguf]     # any OpenAI-compatible server (vLLM, llama.cpp)

Items are taken in a fixed random order (seeded), so ``--limit`` (or a run stopped early) covers a
random subset, which the report names. Outputs go to ``fits/implicature/lm_outputs/<lm>_<pass>.csv``
(rewritten atomically every few rows) through the score cache (``PRAGMODELS_LM_CACHE``): re-running
continues where the last run stopped.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from models.implicature import lm_outputs, prompts
from pragmodels.datasets import load_drinq
from pragmodels.lm.entry import add_lm_arguments, open_lm_from_arguments

SEED = 20261201
N_DRAWS = 3
OUTPUTS = Path(__file__).resolve().parents[2] / "fits" / "implicature" / "lm_outputs"


def score_lm(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_lm_arguments(ap)
    ap.add_argument("--passes", nargs="+", default=["interpretations", "score"], choices=list(lm_outputs.PASSES))
    ap.add_argument("--conditions", nargs="+", default=list(prompts.CONDITIONS), choices=list(prompts.CONDITIONS))
    ap.add_argument("--limit", type=int, default=None, help="only the first N items of the fixed order (all passes)")
    ap.add_argument("--sample-limit", type=int, default=None,
                    help="the sampled-answer pass on only the first N items of the fixed order")
    ap.add_argument("--explanation-limit", type=int, default=None,
                    help="the scored explanation condition on only the first N items (it writes a justification first)")
    ap.add_argument("--out", default=str(OUTPUTS), help="the folder of the output tables")
    args = ap.parse_args(argv)
    for name in ("limit", "sample_limit", "explanation_limit"):
        v = getattr(args, name)
        if v is not None and v < 1:
            ap.error(f"--{name.replace('_', '-')} {v}: expected a positive number of items.")
    items = load_drinq()
    order = lm_outputs.item_order(len(items))[: args.limit]
    items = items.iloc[order].reset_index(drop=True)
    lm = open_lm_from_arguments(ap, args, n_ctx=2048)
    out = Path(args.out)
    for pass_ in args.passes:
        path = out / f"{args.lm}_{pass_}.csv"
        rows: list[dict] = []

        def keep(row: dict, rows: list[dict] = rows, path: Path = path) -> None:
            rows.append(row)
            if len(rows) % 25 == 0:
                lm_outputs.save_rows(rows, path)
                print(f"{path.name}: {len(rows)} rows", flush=True)

        if pass_ == "interpretations":
            lm_outputs.score_interpretations(lm, items, lm_name=args.lm, on_row=keep)
        elif pass_ == "score":
            plain = [c for c in args.conditions if c != "explanation"]
            lm_outputs.score_letters(lm, items, lm_name=args.lm, conditions=plain, n_draws=N_DRAWS, seed=SEED, on_row=keep)
            if "explanation" in args.conditions:
                sub = items.iloc[: args.explanation_limit]
                lm_outputs.score_letters(lm, sub, lm_name=args.lm, conditions=["explanation"], n_draws=N_DRAWS, seed=SEED,
                                 on_row=keep)
        else:
            sub = items.iloc[: args.sample_limit]
            lm_outputs.sample_answers(lm, sub, lm_name=args.lm, conditions=args.conditions, n_draws=N_DRAWS, seed=SEED,
                              on_row=keep)
        lm_outputs.save_rows(rows, path)
        print(f"{path}: {len(rows)} rows (done)", flush=True)
    return 0


def _cli() -> int:
    """``score_lm`` with one-line errors (``--debug`` anywhere in the arguments keeps the traceback)."""
    from pragmodels.errors import one_line_cli

    return one_line_cli(score_lm, "models.implicature.score")


if __name__ == "__main__":
    raise SystemExit(_cli())
