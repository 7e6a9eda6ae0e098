"""The Wavelength listener pass through transformers (``TransformersLM``) on a GPU: time, memory, agreement.

Usage (from the repository root; on the device machine through ``benchmarks/gpu/run.sh``, see
``benchmarks/README.md``)::

    python -m benchmarks.gpu.hf_listener [--model smollm2|PATH|DIR|org/name] [--items 25]
        [--dtypes float32 bfloat16] [--batch-size 32] [--device cuda|cpu | --device-map auto]
        [--budget-s S] [--out DIR]
    python -m benchmarks.gpu.hf_listener --smoke     # here, on the CPU: 1 item, float32 and bfloat16, llama.cpp

Per dtype, the study's own listener pass, :func:`models.wavelength.lm_scores.score_study` with
``passes=["listener"]`` (per item: 21 clues sampled from the LM speaker, then the real clue and
the distinct sampled ones each scored as a listener prompt against the 21 answers), on
:class:`pragmodels.lm.TransformersLM` with no score cache (everything computed), into a
temporary folder, the first ``--items`` items of the study's fixed order. Timed apart: the
scoring (``score`` calls: prompts, continuations, continuations/s, tokens run through the model
per second) and the sampling of the alternatives (``sample`` calls); the load; the peak GPU
memory (``torch.cuda.max_memory_allocated``).

Agreement, on the listener prompts of the reference run (float32, run first where asked for; else
the first dtype): each later dtype scores those of them it did not sample itself (after its
pass, untimed), and, where ``llama_cpp`` imports and the model is a GGUF file (here, not on the
device image), llama.cpp scores them all (``--llamacpp``, on by default with ``--smoke``), after
checking that it reads the same prompt format from the file and splits every prompt and answer
into the same tokens. Figures: the largest absolute difference of a log-probability (nats), the largest once
each prompt's 21 scores are centred (the part that changes the listener's distribution), the
mean and largest total variation between the two distributions over the 21 states, and the share
of prompts with the same best state.

Model: ``--model`` as :class:`~pragmodels.lm.entry.LMEntry` takes it with backend ``"hf"``
(default ``smollm2``, the bundled SmolLM2-135M-Instruct GGUF). On the device machine, whose
calls carry at most 64 MiB, the file travels in parts made here by
``benchmarks/gpu/stage_hf.sh`` (``benchmarks/gpu/model/<file>.part-NN`` and ``<file>.sha256``):
when ``--model`` names a file that is not there but its parts are, they are joined into
``/tmp/pragmodels-model/`` and the sha256 checked. The data: ``$PRAGMODELS_DATA_DIR``, else
``benchmarks/gpu/data`` where ``stage_hf.sh`` put the Wavelength file.

Results: ``benchmarks/results/hf_listener.md`` (a section per machine, rewritten by each run;
``--results ''`` for none) and ``hf_listener_<section>.csv``; with ``--out DIR`` copies of both.
With ``--budget-s``, no new dtype is started past that many seconds.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import platform
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
STAGED = REPO / "benchmarks" / "gpu" / "model"
STAGED_DATA = REPO / "benchmarks" / "gpu" / "data"
JOINED = Path(tempfile.gettempdir()) / "pragmodels-model"
NAME = "hf_listener"


class Timed:
    """A LanguageModel that passes every call on and records it: seconds, counts, each prompt's scores."""

    def __init__(self, lm: Any):
        self.lm = lm
        self.score_s = self.sample_s = 0.0
        self.prompts = self.continuations = self.samples = 0
        self.tokens_scoring = 0
        self.scores: dict[str, np.ndarray] = {}

    @property
    def identity(self) -> str:
        return self.lm.identity

    @property
    def prompt_format(self) -> Any:
        return self.lm.prompt_format

    def tokenize(self, text: str, **kw: Any) -> list[int]:
        return self.lm.tokenize(text, **kw)

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        before = self.lm.tokens_evaluated
        t = time.perf_counter()
        out = self.lm.score(prompt, continuations, length_normalize=length_normalize)
        self.score_s += time.perf_counter() - t
        self.tokens_scoring += self.lm.tokens_evaluated - before
        self.prompts += 1
        self.continuations += len(continuations)
        if not length_normalize:
            self.scores[prompt] = np.asarray(out, dtype=np.float64)
        return out

    def sample(self, prompt: str, n: int, **kw: Any) -> list[str]:
        t = time.perf_counter()
        out = self.lm.sample(prompt, n, **kw)
        self.sample_s += time.perf_counter() - t
        self.samples += n
        return out


def resolve_model(model: str) -> str:
    """``model``, or the staged parts of that file joined (and checked) when the file is not here."""
    p = Path(model)
    if p.exists() or not p.name:
        return model
    parts = sorted(STAGED.glob(f"{p.name}.part-*"))
    if not parts:
        return model
    digest_file = STAGED / f"{p.name}.sha256"
    want = digest_file.read_text().split()[0] if digest_file.exists() else None
    JOINED.mkdir(parents=True, exist_ok=True)
    out = JOINED / p.name
    h = hashlib.sha256()
    with open(out, "wb") as f:
        for part in parts:
            data = part.read_bytes()
            h.update(data)
            f.write(data)
    if want is not None and h.hexdigest() != want:
        raise SystemExit(f"{NAME}: the joined {out} has sha256 {h.hexdigest()}, not {want}: a part is missing or "
                         f"stale ({[q.name for q in parts]}).")
    print(f"== model joined from {len(parts)} parts: {out} (sha256 {'checked' if want else 'not checked'})",
          flush=True)
    return str(out)


def agreement(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, Any]:
    """Differences of the scores of the prompts ``a`` and ``b`` share (``b`` the reference)."""
    common = [p for p in a if p in b]
    if not common:
        return {"prompts": 0}
    x = np.stack([a[p] for p in common])  # [prompt, answer]
    y = np.stack([b[p] for p in common])
    d = x - y
    centred = d - d.mean(1, keepdims=True)

    def dist(s: np.ndarray) -> np.ndarray:
        e = np.exp(s - s.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    tv = 0.5 * np.abs(dist(x) - dist(y)).sum(1)
    return {"prompts": len(common), "max_abs_d": float(np.abs(d).max()), "mean_d": float(d.mean()),
            "max_centred_d": float(np.abs(centred).max()), "mean_tv": float(tv.mean()), "max_tv": float(tv.max()),
            "same_argmax": float(np.mean(x.argmax(1) == y.argmax(1)))}


def machine(torch: Any) -> tuple[str, str]:
    """(a line that names the machine, a section name)."""
    import transformers

    if torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(0)
        n = torch.cuda.device_count()
        section = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
        where = f"{gpu} x {n}"
    else:
        section, where = "cpu", "CPU (no GPU)"
    return (f"{where}, {os.cpu_count()} CPU cores, Python {platform.python_version()}, torch {torch.__version__}, "
            f"transformers {transformers.__version__}"), section


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if v != v else f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    return str(v)


def md_table(rows: list[dict[str, Any]]) -> str:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    return "\n".join(lines + ["| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |" for r in rows])


HEADER = """# The Wavelength listener pass through transformers (issue 35, item 6)

Written by `benchmarks/gpu/hf_listener.py` (on a device machine through `benchmarks/gpu/run.sh`
with `BENCH=hf_listener`; see `benchmarks/README.md`). One section per machine; each run rewrites
its own section and `hf_listener_<section>.csv`.

Columns of the run table: `load_s` the model's load; `score_s` the time in `score` (listener
prompts x 21 answers), `cont_per_s` continuations scored per second, `tok_per_s` tokens run
through the model per second while scoring (prompts once, continuations batched); `sample_s`
the time in `sample` (21 clues per item, one at a time); `peak_gib` the peak GPU memory. The
agreement table: each run's scores against the reference run's (float32) or llama.cpp's, on
every listener prompt of the reference run (a later run scores those it did not sample itself).

"""


def write_section(path: Path, section: str, text: str) -> None:
    old = path.read_text() if path.exists() else HEADER
    pat = re.compile(rf"<!-- BEGIN section:{re.escape(section)} -->.*?<!-- END section:{re.escape(section)} -->\n?",
                     re.S)
    path.write_text(pat.sub(lambda _: text, old) if pat.search(old) else old.rstrip("\n") + "\n\n" + text)


def run_dtype(entry: Any, items: Any, dtype: str, torch: Any) -> tuple[dict, Timed]:
    """Load the model in ``dtype`` and run the listener pass; the run's row and its recorder (holding the model)."""
    from models.wavelength import lm_scores
    from models.wavelength.score import SEED

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    lm = entry.model_copy(update={"dtype": dtype}).open(n_ctx=1024)
    load_s = time.perf_counter() - t
    timed = Timed(lm)
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        lm_scores.score_study(timed, items, name="bench", seed=SEED, folder=folder, passes=["listener"],
                              save_every=len(items), progress=False)
        wall_s = time.perf_counter() - t
    row = {"dtype": dtype, "device": str(lm.device), "device_map": lm.device_map or "", "batch": lm.batch_size,
           "items": len(items), "load_s": load_s, "wall_s": wall_s, "score_s": timed.score_s,
           "prompts": timed.prompts, "conts": timed.continuations,
           "cont_per_s": timed.continuations / timed.score_s, "tok_per_s": timed.tokens_scoring / timed.score_s,
           "sample_s": timed.sample_s, "samples": timed.samples}
    if torch.cuda.is_available():
        row["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
    print("== " + ", ".join(f"{k} {_fmt(v)}" for k, v in row.items()), flush=True)
    return row, timed


def llamacpp_scores(model: str, prompts: list[str], conts: list[str], hf_lm: Any) -> tuple[dict, int]:
    """llama.cpp's scores of ``prompts`` (in the prompt format it reads from the file, checked to be ``hf_lm``'s),
    and how many (prompt, answer) pairs it splits into other tokens than ``hf_lm`` does."""
    from pragmodels.lm import LlamaCppLM

    ll = LlamaCppLM(model, prompt_format=hf_lm.prompt_format.name, n_ctx=1024)  # its own reading of the file
    if ll.prompt_format != hf_lm.prompt_format:
        raise SystemExit(f"{NAME}: llama.cpp's prompt format {ll.prompt_format} is not transformers' "
                         f"{hf_lm.prompt_format}.")
    differ = sum(ll.split_tokens(p, c) != hf_lm.split_tokens(p, c) for p in prompts for c in conts)
    return {p: ll.score(p, conts) for p in prompts}, differ


def compare_llamacpp(args: argparse.Namespace, model: str, timed: Timed) -> tuple[dict[str, np.ndarray], str]:
    """llama.cpp's scores of the reference run's prompts, and a note (or ``({}, why not)``)."""
    from models.wavelength.prompts import answers
    from pragmodels.lm import smollm2_path

    gguf = str(smollm2_path()) if args.model.lower() in ("smollm2", "smollm2-135m") else model
    if not gguf.lower().endswith(".gguf"):
        return {}, "llama.cpp: not compared (the model is not a GGUF file)"
    try:
        ll, differ = llamacpp_scores(gguf, list(timed.scores), answers(), timed.lm)
    except ImportError as e:
        return {}, f"llama.cpp: not compared ({e})"
    return ll, (f"llama.cpp: the same prompt format (read from the file by each backend); {len(ll)} prompts x 21 "
                f"answers, token splits differing from transformers': {differ}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2", help="as an LM entry's model with backend 'hf' (default smollm2)")
    ap.add_argument("--items", type=int, default=None, help="items of the study's fixed order (default 25; smoke 1)")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"],
                    help="float32 (the reference, run first), bfloat16, float16 (default float32 bfloat16)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--device", default=None, help="default: cuda where available, else cpu")
    ap.add_argument("--device-map", default=None, help="auto: the model spread over every GPU")
    ap.add_argument("--llamacpp", action=argparse.BooleanOptionalAction, default=None,
                    help="also llama.cpp's scores of the shared prompts (default: with --smoke)")
    ap.add_argument("--smoke", action="store_true", help="a CPU check of the script: 1 item, llama.cpp too")
    ap.add_argument("--budget-s", type=float, default=None, help="start no new dtype past this many seconds")
    ap.add_argument("--section", default=None, help="results section (default: the GPU's name, or cpu)")
    ap.add_argument("--results", default=str(RESULTS / f"{NAME}.md"), help="markdown to update ('' for none)")
    ap.add_argument("--out", type=Path, default=None, help="also write this run's section and CSV here")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if "PRAGMODELS_DATA_DIR" not in os.environ and (STAGED_DATA / "wavelength").is_dir():
        os.environ["PRAGMODELS_DATA_DIR"] = str(STAGED_DATA)
    import torch

    from models.wavelength.prompts import answers
    from models.wavelength.score import item_order
    from pragmodels.datasets import load_wavelength
    from pragmodels.lm.entry import LMEntry

    n_items = args.items if args.items is not None else 1 if args.smoke else 25
    use_llamacpp = args.smoke if args.llamacpp is None else args.llamacpp
    line, section = machine(torch)
    section = args.section or section + ("-smoke" if args.smoke else "")
    print(f"== {line}; pragmodels from {Path(sys.modules['pragmodels'].__file__).parent}", flush=True)
    model = resolve_model(args.model)
    entry = LMEntry.model_validate({"backend": "hf", "model": model, "batch_size": args.batch_size,
                                    **({"device": args.device} if args.device else {}),
                                    **({"device_map": args.device_map} if args.device_map else {})})
    items = load_wavelength()
    items = items.set_index("item").loc[item_order(len(items))[:n_items]].reset_index()

    # the reference (float32 if asked for) runs first; each later run also scores the reference's prompts it did
    # not sample itself (after its pass, untimed), so that the agreement covers every prompt of the reference
    dtypes = sorted(args.dtypes, key=lambda d: d != "float32")
    rows, agree, notes = [], [], []
    if args.smoke:
        notes.append("--smoke: a check of the script on the CPU (which other jobs share); its times are not a GPU's")
    ref: dict[str, np.ndarray] = {}
    ll: dict[str, np.ndarray] = {}
    identity = "-"
    for dtype in dtypes:
        if args.budget_s is not None and time.perf_counter() - start > args.budget_s:
            notes.append(f"budget of {args.budget_s:.0f} s spent: {dtype} not run")
            print(f"== {notes[-1]}", flush=True)
            continue
        row, timed = run_dtype(entry, items, dtype, torch)
        rows.append(row)
        identity = timed.identity if identity == "-" else identity
        if not ref:
            ref, ref_dtype, scores = dict(timed.scores), dtype, dict(timed.scores)
            if use_llamacpp:
                ll, note = compare_llamacpp(args, model, timed)
                notes.append(note)
        else:
            scores = {p: timed.scores[p] if p in timed.scores else np.asarray(timed.lm.score(p, answers()))
                      for p in ref}
            agree.append({"run": dtype, "against": ref_dtype, **agreement(scores, ref)})
        if ll:
            agree.append({"run": dtype, "against": "llama.cpp", **agreement(scores, ll)})
        timed.lm = None  # the next dtype's model needs the memory
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    cmd = shlex.join(["python", "-m", "benchmarks.gpu.hf_listener"] + (sys.argv[1:] if argv is None else argv))
    text = "\n".join([f"<!-- BEGIN section:{section} -->", f"## {section}", "", f"Machine: {line}. `{cmd}`", "",
                      f"Model: `{args.model}` ({identity}), "
                      f"{n_items} item{'s' * (n_items != 1)} of the study's fixed order, the listener pass "
                      "(alternatives sampled, then "
                      "scored), no cache.", "", md_table(rows), ""]
                     + ([md_table(agree), ""] if agree else []) + [f"- {n}" for n in notes]
                     + [f"<!-- END section:{section} -->"]) + "\n"
    print(text, flush=True)
    csv_rows = [{"table": "runs", **r} for r in rows] + [{"table": "agreement", **a} for a in agree]
    import pandas as pd

    if args.results:
        write_section(Path(args.results), section, text)
        pd.DataFrame(csv_rows).to_csv(Path(args.results).parent / f"{NAME}_{section}.csv", index=False)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"{NAME}_{section}.md").write_text(text)
        pd.DataFrame(csv_rows).to_csv(args.out / f"{NAME}_{section}.csv", index=False)
        if args.results and Path(args.results).exists():
            shutil.copy(args.results, args.out / Path(args.results).name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
