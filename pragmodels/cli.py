"""Command line.

- ``pragmodels run CONFIG [--quick] [--out DIR]``: run a config from ``fits/`` and write its run
  folder (``fits/<config name>/quick|full/``; :mod:`pragmodels.runs`). A config with a
  ``"study": "path/to/module.py:function"`` key runs that study (:func:`pragmodels.runs.run_study`);
  any other config is a single fit (:func:`pragmodels.runner.run_config`). Every study runs this
  way: there is no subcommand per study.
- ``pragmodels tables STUDY --out FILE.csv``: a study's reproduction tables, from the
  ``"tables"`` entry point its config names; ``STUDY`` is a config path or a study's name, the
  stem of ``fits/<name>.json`` looked up from the current directory up to the repository root,
  e.g. ``pragmodels tables social_meaning`` (``social-meaning`` is accepted as an alias).

Every config is validated before any work starts (:mod:`pragmodels.config_schema`). Every
failure is one line on stderr, ``pragmodels: error: ...``, naming the file, the key or the value;
``--debug`` prints the traceback as well. Exit status: 0 done, 1 the run itself failed, 2 a config,
an input, the data or the run folder cannot be used, 128+N stopped by signal N.

Layering: imports :mod:`pragmodels.errors`; :mod:`pragmodels.runner` and :mod:`pragmodels.runs`
lazily; never a study (studies are loaded from the file their config names).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path
from typing import NoReturn

from pragmodels.errors import ConfigError, PragmodelsError

ENVIRONMENT = """\
environment variables:
  PRAGMODELS_DATA_DIR           offline mirror of the upstream data sets (no download when set)
  PRAGMODELS_CACHE_DIR          download cache (default ~/.cache/pragmodels)
  PRAGMODELS_COMPILATION_CACHE  JAX compilation cache folder (default ~/.cache/pragmodels/jax;
                                'off' disables it; an unwritable one is skipped with a warning)
  PRAGMODELS_HOST_DEVICES       CPU devices for parallel chains (default: the number of cores)
  PRAGMODELS_WORKER_THREADS     threads per worker process of a process-pool study (default 1)

Configs are validated against a schema before any work starts (docs/configs.md; JSON Schema
files in schemas/). Every failure is one line, 'pragmodels: error: ...'; --debug adds the
traceback. Exit status: 0 done, 1 the run failed, 2 a config, input, data set or run folder
cannot be used, 128+N stopped by signal N."""

#: errors that say an input cannot be used (exit status 2); anything else is a failed run (1)
_INPUT_ERRORS = (PragmodelsError, ValueError, OSError)


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors in the one-line form of every other failure."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"pragmodels: error: {message} (see `{self.prog} --help`)\n")


def _study_names(start: Path) -> list[str]:
    from pragmodels.runs import search_path

    names = set()
    for d in search_path(start):
        for p in (d / "fits").glob("*.json") if (d / "fits").is_dir() else ():
            names.add(p.stem)
    return sorted(names)


def _study_config(study: str) -> Path:
    """A study's config: ``study`` itself if it is a file or ends in ``.json``, else
    ``fits/<study>.json`` (``-`` read as ``_``) from the current directory up to the repository root."""
    path = Path(study)
    if path.suffix == ".json" or path.is_file():
        return path
    from pragmodels.runs import search_path

    name = study.replace("-", "_")  # social-meaning is an alias of social_meaning
    tried = [d / "fits" / f"{name}.json" for d in search_path(Path.cwd())]
    found = next((p for p in tried if p.is_file()), None)
    if found is None:
        known = _study_names(Path.cwd())
        raise ConfigError(f"no config for study {study!r}: looked for {', '.join(map(str, tried))}"
                          + (f"; known: {', '.join(known)}" if known else "") + "; or pass the config's path.")
    return found


def _run(args: argparse.Namespace) -> Path:
    from pragmodels.runs import read_config

    path = Path(args.config)
    cfg = read_config(path)
    mode = "quick" if args.quick else "full"
    if "study" in cfg:
        from pragmodels.runs import run_study

        return run_study(path, mode=mode, out=args.out, progress=not args.no_progress and sys.stdout.isatty())
    from pragmodels.runner import run_config

    return run_config(path, args.out, quick=args.quick, progress_bar=not args.no_progress)


def _tables(args: argparse.Namespace) -> None:
    from pragmodels.runs import load_entry_point, load_study_config

    path = _study_config(args.study)
    cfg, _ = load_study_config(path)
    if not cfg.get("tables"):
        raise ConfigError(f"study config {path}: `tables`: required key missing for `pragmodels tables` "
                          "(expected 'path/to/module.py:function').", path=path)
    load_entry_point(cfg["tables"], path, "tables")(cfg, Path(args.out))


def _parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    ap = _Parser(prog="pragmodels", formatter_class=fmt, epilog=ENVIRONMENT,
                 description="Bayesian cognitive models of pragmatics: run a fit or a study from its "
                             "config, or reproduce a study's tables.")
    ap.add_argument("--debug", action="store_true", help="on failure, print the traceback too")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser(
        "run", formatter_class=fmt, epilog=ENVIRONMENT,
        help="run a config (fits/*.json) and write its run folder",
        description="Run a fit or study config and write its run folder, fits/<name>/full/ (or quick/). "
                    "A config with a 'study' key runs that study's entry point; any other config is a "
                    "single fit. The folder is written aside and swapped in whole when the run finishes.")
    run.add_argument("config", help="the config file, e.g. fits/social_meaning.json or fits/reference_game.json")
    run.add_argument("--out", metavar="DIR",
                     help="run folder to write (default: beside the config, fits/<name>/quick|full/)")
    run.add_argument("--quick", action="store_true",
                     help="a smoke run: the config's quick sampler settings (short chains), into quick/")
    run.add_argument("--no-progress", action="store_true", help="no sampler progress bars")
    run.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                     help="on failure, print the traceback too")
    tab = sub.add_parser(
        "tables", formatter_class=fmt, epilog=ENVIRONMENT,
        help="reproduce a study's tables from the raw data",
        description="Write a study's reproduction tables (the 'tables' entry point its config names) "
                    "from the raw data, and print them beside the published values.")
    tab.add_argument("study", help="a study config, or the study's name: fits/<name>.json, e.g. social_meaning "
                                   "(dashes are read as underscores)")
    tab.add_argument("--out", required=True, metavar="FILE.csv", help="CSV file to write")
    tab.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                     help="on failure, print the traceback too")
    return ap


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, _INPUT_ERRORS):
        return text
    return f"{type(e).__name__}: {text} (rerun with --debug for the traceback)"


def _compilation_cache() -> None:
    """Switch on JAX's compilation cache; an unusable folder (read-only HOME) is a warning."""
    from pragmodels.config import enable_compilation_cache

    try:
        where = os.environ.get("PRAGMODELS_COMPILATION_CACHE") or Path.home() / ".cache" / "pragmodels" / "jax"
        enable_compilation_cache(where)
    except (OSError, RuntimeError) as e:
        print(f"pragmodels: warning: {' '.join(str(e).split())}; going on without a compilation cache "
              "(set PRAGMODELS_COMPILATION_CACHE to a writable folder, or to 'off').", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from pragmodels.config import configure_host_devices

    t0 = time.perf_counter()
    try:
        configure_host_devices()  # one CPU device per core for parallel chains (before JAX starts)
        import matplotlib

        matplotlib.use("Agg")  # the command line writes figures to files and never shows them
        # compiled NUTS kernels are reused across fits of the same shapes and across runs
        _compilation_cache()
        if args.command == "run":
            out = _run(args)
            print(f"wrote {out}/ in {time.perf_counter() - t0:.1f} s")
        else:
            _tables(args)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM/SIGHUP during a run (pragmodels.runs)
        print(f"pragmodels: {str(e) or 'interrupted'}; the run folder was left as it was.", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    except Exception as e:  # noqa: BLE001 - every failure is one line; --debug shows where
        if args.debug:
            traceback.print_exc()
        print(f"pragmodels: error: {_one_line(e)}", file=sys.stderr)
        return 2 if isinstance(e, _INPUT_ERRORS) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
