"""Command line.

- ``pragmodels run CONFIG [--quick] [--out DIR]``: run a config from ``fits/`` and write its run
  folder (``fits/<config name>/quick|full/``; :mod:`pragmodels.runs`). A config with a
  ``"study": "path/to/module.py:function"`` key runs that study (:func:`pragmodels.runs.run_study`);
  any other config is a single fit (:func:`pragmodels.runner.run_config`).
- ``pragmodels tables STUDY --out FILE.csv``: a study's reproduction tables, from the
  ``"tables"`` entry point its config names; ``STUDY`` is a config path or a name looked up as
  ``fits/<name>.json`` (``-`` read as ``_``) from the current directory up to the repository root,
  e.g. ``pragmodels tables social-meaning``.

Layering: imports :mod:`pragmodels.runner` and :mod:`pragmodels.runs`, lazily; never a study
(studies are loaded from the file their config names).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def _read_config(path: Path) -> dict:
    from pragmodels.runs import read_config

    return read_config(path)


def _run(args: argparse.Namespace) -> Path:
    path = Path(args.config)
    cfg = _read_config(path)
    mode = "quick" if args.quick else "full"
    if "study" in cfg:
        from pragmodels.runs import run_study

        return run_study(path, mode=mode, out=args.out, progress=not args.no_progress and sys.stdout.isatty())
    from pragmodels.runner import run_config

    return run_config(path, args.out, quick=args.quick, progress_bar=not args.no_progress)


def _study_config(study: str) -> Path:
    path = Path(study)
    if path.suffix == ".json" or path.is_file():
        return path
    from pragmodels.runs import search_path

    name = study.replace("-", "_")
    tried = [d / "fits" / f"{name}.json" for d in search_path(Path.cwd())]
    found = next((p for p in tried if p.is_file()), None)
    if found is None:
        raise FileNotFoundError(f"no config for study {study!r}: looked for {', '.join(map(str, tried))}; "
                                "pass the config's path instead.")
    return found


def _tables(args: argparse.Namespace) -> None:
    from pragmodels.runs import load_entry_point

    path = _study_config(args.study)
    cfg = _read_config(path)
    if "tables" not in cfg:
        raise ValueError(f"config {path}: no 'tables' key (expected 'path/to/module.py:function').")
    load_entry_point(cfg["tables"], path, "tables")(cfg, Path(args.out))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="pragmodels", description="Bayesian cognitive models of pragmatics.")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a config (fits/*.json) and write its run folder")
    run.add_argument("config")
    run.add_argument("--out", help="run folder (default: beside the config, named after it)")
    run.add_argument("--quick", action="store_true", help="short chains, for smoke tests")
    run.add_argument("--no-progress", action="store_true")
    tab = sub.add_parser("tables", help="reproduce a paper's tables from the raw data")
    tab.add_argument("study", help="a study config, or its name (social-meaning: fits/social_meaning.json)")
    tab.add_argument("--out", required=True, help="CSV file to write")
    args = ap.parse_args(argv)
    import os

    from pragmodels.config import configure_host_devices, enable_compilation_cache

    configure_host_devices()  # one CPU device per core for parallel chains (before JAX starts)

    # compiled NUTS kernels are reused across fits of the same shapes and across runs
    enable_compilation_cache(os.environ.get("PRAGMODELS_COMPILATION_CACHE")
                             or Path.home() / ".cache" / "pragmodels" / "jax")
    from pragmodels.runs import RunError

    t0 = time.perf_counter()
    try:
        if args.command == "run":
            out = _run(args)
            print(f"wrote {out}/ in {time.perf_counter() - t0:.1f} s")
        else:
            _tables(args)
    except (FileNotFoundError, ValueError, RunError) as e:
        print(f"pragmodels: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM/SIGHUP during a run (pragmodels.runs)
        print(f"pragmodels: {str(e) or 'interrupted'}; the run folder was left as it was.", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
