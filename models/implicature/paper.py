"""DRInQ for any LM in one command: score and generate (resumable), fit, report.

    python -m models.implicature.paper --lm smollm2 --threads 1 --limit 40 --conditions vanilla [--dry-run]
    python -m models.implicature.paper --lm big --base-url http://gpu-host:8000/v1 --server-model NAME
    python -m models.implicature.paper --lm smollm2 --report-only      # refit and report (no LM)

Every option of :mod:`models.implicature.score` is taken (``--passes``, default ``interpretations
literal score generate``; ``--limit``, ``--conditions``, the LM's options); the estimate of requests
and tokens is printed before any request, and a progress bar runs over them. The LM's tables go
to ``<out>/<lm>/lm_outputs/`` (a killed run resumes from the score cache and the generated pass's
progress files); then ``<out>/<lm>/config.json`` (``fits/implicature.json``'s settings, ``lms``
this LM alone) is run by the study (:func:`models.implicature.study.run`) into
``<out>/<lm>/<mode>/`` with its report. The steps: docs/studies/implicature.md, "One command".
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "fits" / "implicature" / "lms"
CONFIG = ROOT / "fits" / "implicature.json"
#: the passes the listener fits need, and the paper's reading
DEFAULT_PASSES = ("interpretations", "literal", "score", "generate")


def _arguments(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], add_help=False)
    ap.add_argument("--mode", default="full", choices=("quick", "full"), help="the study's sampler settings")
    ap.add_argument("--report-only", action="store_true", help="fit and report from the tables there (no LM)")
    ap.add_argument("--out", type=Path, default=OUT, help="the folder of every LM's outputs (default fits/implicature/lms)")
    ap.add_argument("-h", "--help", action="store_true")
    args, rest = ap.parse_known_args(argv)
    if args.help:
        ap.print_help()
        print("\nand the options of python -m models.implicature.score (--lm, --passes, --limit, ...)")
        raise SystemExit(0)
    if "--passes" not in rest:
        rest += ["--passes", *DEFAULT_PASSES]
    if "--out" in rest:
        raise ValueError("--out: give the folder of every LM's outputs here (its tables go to <out>/<lm>/lm_outputs).")
    return args, rest


def _lm_entry(rest: list[str]) -> tuple[str, dict[str, Any]]:
    """The LM's name and its config entry, from the LM options."""
    from pragmodels.lm.entry import add_lm_arguments, lm_entry_from_arguments

    ap = argparse.ArgumentParser(add_help=False)
    add_lm_arguments(ap)
    a, _ = ap.parse_known_args(rest)
    entry, _ = lm_entry_from_arguments(a)
    return a.lm, entry.model_dump(exclude_none=True, exclude_defaults=True)


def write_config(folder: Path, lm: str, entry: dict[str, Any]) -> Path:
    """``<folder>/config.json``: ``fits/implicature.json`` with ``lms`` this LM alone, its tables in
    ``<folder>/lm_outputs`` (its entry points absolute where ``folder`` is outside the repository, whose
    files they name).

    Parameters
    ----------
    folder : Path
        The LM's folder.
    lm : str
        Its name.
    entry : dict
        Its :class:`~pragmodels.lm.entry.LMEntry` keys.

    Returns
    -------
    Path
    """
    from pragmodels.io.atomic import atomic_write

    base = json.loads(CONFIG.read_text())
    base.pop("$schema", None)
    base["name"] = f"implicature_{lm}"
    base["description"] = f"DRInQ for {lm}, made by python -m models.implicature.paper."
    base["lms"] = {lm: {**entry, "outputs": str((folder / "lm_outputs").resolve())}}
    if not folder.resolve().is_relative_to(ROOT):  # (relative entry points resolve from the config's folder up)
        for key in ("study", "tables", "lm_step"):
            if isinstance(base.get(key), str):
                file, func = base[key].split(":")
                base[key] = f"{(ROOT / file).as_posix()}:{func}"
    path = folder / "config.json"
    return atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(base, indent=1) + "\n"))


def paper_lm(argv: list[str] | None = None) -> int:
    """The command (:mod:`models.implicature.paper`)."""
    from models.implicature.score import score_lm
    from pragmodels.runs.study import run_study

    args, rest = _arguments(argv)
    lm, entry = _lm_entry(rest)
    folder = args.out / lm
    t0 = time.monotonic()
    if not args.report_only:
        code = score_lm([*rest, "--out", str(folder / "lm_outputs")])
        if code or "--dry-run" in rest:
            return code
        print(f"{lm}: the LM's passes took {time.monotonic() - t0:.0f} s", flush=True)
    elif not (folder / "lm_outputs").is_dir():
        raise FileNotFoundError(f"--report-only: {folder / 'lm_outputs'} holds no tables; run without --report-only.")
    have = [k for k in ("interpretations", "score") if not (folder / "lm_outputs" / f"{lm}_{k}.csv").is_file()]
    if have:
        print(f"{lm}: no fit (the listener models need the {' and '.join(have)} table; --passes {' '.join(have)})",
              flush=True)
        return 0
    config = write_config(folder, lm, entry)
    run = run_study(config, mode=args.mode, out=folder / args.mode, progress=True, log=print)
    print(f"{lm}: report {run / 'report.md'} ({time.monotonic() - t0:.0f} s in all)", flush=True)
    return 0


def _cli() -> int:
    """``paper_lm`` with one-line errors (``--debug`` anywhere in the arguments keeps the traceback)."""
    from pragmodels.errors import one_line_cli

    return one_line_cli(paper_lm, "models.implicature.paper")


if __name__ == "__main__":
    raise SystemExit(_cli())
