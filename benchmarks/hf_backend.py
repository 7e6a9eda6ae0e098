"""The transformers backend against llama.cpp on SmolLM2-135M-Instruct (Q4_1 GGUF): scores and times.

For each Wavelength-like prompt, the 21 answers ``<answer>0</answer>`` .. ``<answer>100</answer>``
are scored by :class:`pragmodels.lm.TransformersLM` (float32, CPU) and :class:`LlamaCppLM`
(``n_ctx=512``); the script checks that the token splits are identical and prints, per prompt,
the largest and mean absolute difference of the log-probabilities, the largest difference once
each backend's scores are centred (the part that changes a normalised distribution over the
answers), the total-variation distance between the two distributions over the 21 answers, the
Spearman correlation, whether the best answer agrees, and the warm scoring times. Writes
``results/hf_backend.csv``; ``results/hf_backend.md`` is written by hand from it (with the
install and test times). Needs the ``lm`` and ``hf`` extras.

Run: ``python benchmarks/hf_backend.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from pragmodels.lm import LlamaCppLM, TransformersLM, smollm2_path

SCALES = [
    ("Cold", "Hot", "warm bath"),
    ("Terrible", "Wonderful", "a sunny holiday"),
    ("Tiny", "Huge", "an elephant"),
    ("Slow", "Fast", "a snail"),
    ("Cheap", "Expensive", "a diamond ring"),
    ("Quiet", "Loud", "a library"),
    ("Safe", "Dangerous", "crossing a busy road"),
    ("Old", "New", "a smartphone"),
]
ANSWERS = [f"<answer>{v}</answer>" for v in range(0, 101, 5)]


def prompt(lo: str, hi: str, clue: str) -> str:
    return f"Scale: {lo} (0) to {hi} (100).\nClue: {clue}.\nAnswer with a number in <answer></answer> tags."


def main() -> None:
    t = time.perf_counter()
    hf = TransformersLM(smollm2_path(), n_ctx=512)
    load_hf = time.perf_counter() - t
    t = time.perf_counter()
    ll = LlamaCppLM(smollm2_path(), n_ctx=512)
    load_ll = time.perf_counter() - t
    print(f"load: transformers {load_hf:.1f} s, llama.cpp {load_ll:.1f} s")
    rows = []
    for lo, hi, clue in SCALES:
        p = prompt(lo, hi, clue)
        assert all(hf.split_tokens(p, a) == ll.split_tokens(p, a) for a in ANSWERS), "token splits differ"
        hf.score(p, ANSWERS[:1])  # the prompt's cache: time the 21 answers after it, like llama.cpp's reuse
        t = time.perf_counter()
        a = hf.score(p, ANSWERS)
        t_hf = time.perf_counter() - t
        ll.score(p, ANSWERS[:1])
        t = time.perf_counter()
        b = ll.score(p, ANSWERS)
        t_ll = time.perf_counter() - t
        d = a - b
        pa, pb = np.exp(a - a.max()), np.exp(b - b.max())
        pa, pb = pa / pa.sum(), pb / pb.sum()
        rows.append({
            "scale": f"{lo}-{hi}", "clue": clue,
            "max_abs_diff": float(np.abs(d).max()), "mean_abs_diff": float(np.abs(d).mean()),
            "mean_diff": float(d.mean()), "max_abs_centred_diff": float(np.abs(d - d.mean()).max()),
            "tv_distance": float(0.5 * np.abs(pa - pb).sum()), "spearman": float(spearmanr(a, b).statistic),
            "argmax_hf": ANSWERS[int(np.argmax(a))], "argmax_llamacpp": ANSWERS[int(np.argmax(b))],
            "score21_s_transformers": t_hf, "score21_s_llamacpp": t_ll,
        })
        print(rows[-1])
    df = pd.DataFrame(rows)
    out = Path(__file__).resolve().parent / "results" / "hf_backend.csv"
    df.to_csv(out, index=False)
    print(df.drop(columns=["clue"]).to_markdown(index=False, floatfmt=".3g"))
    print(f"max over prompts: |diff| {df.max_abs_diff.max():.3f}, centred {df.max_abs_centred_diff.max():.3f}, "
          f"TV {df.tv_distance.max():.3f}, min spearman {df.spearman.min():.3f}, "
          f"argmax agrees {int((df.argmax_hf == df.argmax_llamacpp).sum())}/{len(df)}")


if __name__ == "__main__":
    main()
