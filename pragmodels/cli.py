"""Command line: ``pragmodels run CONFIG`` fits one config from ``fits/``.

Layering: imports :mod:`pragmodels.runner` only (and argparse).
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="pragmodels", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="fit a config (fits/*.json) and write its run folder")
    run.add_argument("config")
    run.add_argument("--out", help="run folder (default: beside the config, named after it)")
    run.add_argument("--quick", action="store_true", help="short chains, for smoke tests")
    run.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    if args.command == "run":
        from pragmodels.runner import run_config

        t0 = time.perf_counter()
        try:
            out = run_config(args.config, args.out, quick=args.quick, progress_bar=not args.no_progress)
        except (FileNotFoundError, ValueError) as e:
            print(f"pragmodels: error: {e}", file=sys.stderr)
            return 2
        print(f"wrote {out}/ (posterior.nc, summary.csv, config.json, report.md) in "
              f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
