"""Score the Wavelength items with one language model (the study's LM step, resumable).

    python models/wavelength_score.py --lm smollm2 [--passes listener speaker production] [--limit N]
    python models/wavelength_score.py --lm qwen --base-url http://gpu-host:8000/v1 --server-model Qwen/Qwen3-32B \
        [--chat-template-gguf FILE.gguf]     # any OpenAI-compatible server (vLLM, llama.cpp)

Items are taken in a fixed random order (seeded), so a run that is stopped early has scored a
random subset, which the report names. Scores go to ``fits/wavelength/lm_scores/<lm>.nc`` through
the score cache (``PRAGMODELS_LM_CACHE``); re-running continues where the last run stopped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import wavelength_lm as wl  # noqa: E402

from pragmodels.datasets import load_wavelength  # noqa: E402
from pragmodels.lm import CachedLM, LlamaCppLM, PromptFormat, gemma3_path, smollm2_path  # noqa: E402

#: the bundled models and how they are prompted (SmolLM2 is instruction-tuned: its chat template;
#: Gemma-3-270M is the base model: plain text)
LMS = {
    "smollm2": (smollm2_path, "chat"),
    "gemma3": (gemma3_path, "plain"),
}
ORDER_SEED = 20261201
SEED = 20261201
SCORES = HERE.parent / "fits" / "wavelength" / "lm_scores"


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lm", required=True, help=f"a name: {sorted(LMS)} (bundled) or any label with --base-url")
    ap.add_argument("--base-url", help="an OpenAI-compatible server (vLLM, llama.cpp server) instead of a bundled GGUF")
    ap.add_argument("--server-model", help="the server's model name")
    ap.add_argument("--chat-template-gguf", help="score in that GGUF's chat format (default: plain text)")
    ap.add_argument("--passes", nargs="+", default=["listener"], choices=list(wl.PASSES))
    ap.add_argument("--limit", type=int, default=None, help="score only the first N items of the fixed order")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-production", type=int, default=32)
    args = ap.parse_args(argv)
    if args.limit is not None and args.limit < 1:  # 0 would rewrite the scores file with no items
        ap.error(f"--limit {args.limit}: expected a positive number of items.")
    items = load_wavelength()
    order = item_order(len(items))[: args.limit]
    if args.base_url:
        from pragmodels.lm.openai_http import OpenAICompatibleLM, gguf_prompt_format

        fmt = gguf_prompt_format(args.chat_template_gguf) if args.chat_template_gguf else PromptFormat.plain()
        lm = CachedLM(OpenAICompatibleLM(args.base_url, args.server_model, prompt_format=fmt))
    elif args.lm in LMS:
        path_fn, fmt_name = LMS[args.lm]
        lm = CachedLM(LlamaCppLM(path_fn(), prompt_format=fmt_name, n_ctx=1024, n_threads=args.threads))
    else:
        ap.error(f"--lm {args.lm!r}: not a bundled model ({sorted(LMS)}); pass --base-url for a server.")
    wl.score_study(lm, items.set_index("item").loc[order].reset_index(), name=args.lm, seed=SEED, folder=SCORES,
                   n_production=args.n_production, passes=args.passes, save_every=1, progress=False,
                   log=lambda s: print(s, flush=True))
    return 0


def _cli() -> int:
    """``main`` with one-line errors (``--debug`` anywhere in the arguments keeps the traceback)."""
    from pragmodels.errors import one_line_cli

    return one_line_cli(main, "wavelength_score")


if __name__ == "__main__":
    raise SystemExit(_cli())
