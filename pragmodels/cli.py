"""Command line.

- ``pragmodels run CONFIG [--quick]``: run a config from ``fits/`` (a single fit, or a whole
  study when the config names one) and write its run folder beside it.
- ``pragmodels tables social-meaning --out FILE.csv``: reproduce Mühlenbernd (2026) Tables 2-4.

Layering: imports :mod:`pragmodels.runner` and, for studies, the ``models`` package, lazily.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _run(args) -> Path:
    cfg = json.loads(Path(args.config).read_text()) if Path(args.config).is_file() else None
    if cfg and cfg.get("study") == "social_meaning":
        from models.social_meaning_study import run_study

        mode = "quick" if args.quick else "full"
        out = Path(args.out) if args.out else Path(args.config).with_suffix("") / mode
        return run_study(out, mode=mode, seed=int(cfg["seed"]), n_draws=int(cfg.get("n_draws", 400)),
                         sampler=cfg["sampler"][mode], motive_prior=cfg.get("motive_prior", "uniform"),
                         progress=not args.no_progress and sys.stdout.isatty())
    from pragmodels.runner import run_config

    return run_config(args.config, args.out, quick=args.quick, progress_bar=not args.no_progress)


def _tables(args) -> None:
    if args.study != "social-meaning":
        raise ValueError(f"unknown study {args.study!r}; expected 'social-meaning'.")
    from models.social_meaning_study import TABLE_COLUMNS, discrepancies, format_side_by_side, reproduction_table
    from pragmodels.results_io import atomic_write

    table = reproduction_table()
    out = Path(args.out)
    atomic_write(out, lambda tmp: table[TABLE_COLUMNS].to_csv(tmp, index=False, float_format="%.6f"))
    full = out.with_name(out.stem + "_with_paper.csv")
    atomic_write(full, lambda tmp: table.to_csv(tmp, index=False, float_format="%.6f"))
    print(format_side_by_side(table))
    disc = discrepancies(table)
    print(f"\n{len(disc)} cell(s) differ from the paper by more than 0.001:")
    if len(disc):
        print(disc.to_string(index=False))
    print(f"\nwrote {out} ({', '.join(TABLE_COLUMNS)}) and {full} (adds ccc_lin, rmse_individual = Table 4, "
          "invalid counts and the paper's values)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="pragmodels", description="Bayesian cognitive models of pragmatics.")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a config (fits/*.json) and write its run folder")
    run.add_argument("config")
    run.add_argument("--out", help="run folder (default: beside the config, named after it)")
    run.add_argument("--quick", action="store_true", help="short chains, for smoke tests")
    run.add_argument("--no-progress", action="store_true")
    tab = sub.add_parser("tables", help="reproduce a paper's tables from the raw data")
    tab.add_argument("study", help="social-meaning")
    tab.add_argument("--out", required=True, help="CSV file to write")
    args = ap.parse_args(argv)
    import os

    from pragmodels.config import enable_compilation_cache

    # compiled NUTS kernels are reused across fits of the same shapes and across runs
    enable_compilation_cache(os.environ.get("PRAGMODELS_COMPILATION_CACHE")
                             or Path.home() / ".cache" / "pragmodels" / "jax")
    t0 = time.perf_counter()
    try:
        if args.command == "run":
            out = _run(args)
            print(f"wrote {out}/ in {time.perf_counter() - t0:.1f} s")
        else:
            _tables(args)
    except (FileNotFoundError, ValueError) as e:
        print(f"pragmodels: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
