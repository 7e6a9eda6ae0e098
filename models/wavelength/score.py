"""Score the Wavelength items with one language model (the study's LM step, resumable).

    python -m models.wavelength.score --lm smollm2 [--passes listener speaker production] [--limit N]
    python -m models.wavelength.score --lm qwen --base-url http://gpu-host:8000/v1 --server-model Qwen/Qwen3-32B \
        [--chat-template-gguf FILE.gguf]     # any OpenAI-compatible server (vLLM, llama.cpp)

Items are taken in a fixed random order (seeded), so a run that is stopped early has scored a
random subset, which the report names. Scores go to ``fits/wavelength/lm_scores/<lm>.nc`` through
the score cache (``PRAGMODELS_LM_CACHE``); re-running continues where the last run stopped.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from models.wavelength import lm_scores
from pragmodels.datasets import load_wavelength
from pragmodels.lm.entry import SamplesOnlyLM, add_lm_arguments, open_lm_from_arguments

ORDER_SEED = 20261201
SEED = 20261201
SCORES = Path(__file__).resolve().parents[2] / "fits" / "wavelength" / "lm_scores"


def item_order(n: int = 100) -> np.ndarray:
    """The fixed random order in which items are scored.

    Parameters
    ----------
    n : int
        Number of items.

    Returns
    -------
    numpy.ndarray
    """
    return np.random.default_rng(ORDER_SEED).permutation(n)


def score_lm(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_lm_arguments(ap)
    ap.add_argument("--passes", nargs="+", default=["listener"], choices=list(lm_scores.PASSES))
    ap.add_argument("--limit", type=int, default=None, help="score only the first N items of the fixed order")
    ap.add_argument("--n-production", type=int, default=32)
    args = ap.parse_args(argv)
    if args.limit is not None and args.limit < 1:  # 0 would rewrite the scores file with no items
        ap.error(f"--limit {args.limit}: expected a positive number of items.")
    items = load_wavelength()
    order = item_order(len(items))[: args.limit]
    lm = open_lm_from_arguments(ap, args, n_ctx=1024)
    if isinstance(lm, SamplesOnlyLM):  # its passes sample alternatives, then score: refuse before either
        ap.error(f"--lm {args.lm!r} has semantics 'samples' (no log-probabilities): this step scores; its sampled "
                 "literal listeners come from python -m models.wavelength.paper (same LM options).")
    lm_scores.score_study(lm, items.set_index("item").loc[order].reset_index(), name=args.lm, seed=SEED, folder=SCORES,
                   n_production=args.n_production, passes=args.passes, save_every=1, progress=False,
                   log=lambda s: print(s, flush=True))
    return 0


def _cli() -> int:
    """``score_lm`` with one-line errors (``--debug`` anywhere in the arguments keeps the traceback)."""
    from pragmodels.errors import one_line_cli

    return one_line_cli(score_lm, "models.wavelength.score")


if __name__ == "__main__":
    raise SystemExit(_cli())
