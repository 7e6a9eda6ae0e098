"""Command line: ``pragmodels run``, ``pragmodels tables``, ``pragmodels lm score`` and ``pragmodels lm elicit``.

- ``pragmodels run CONFIG [--quick] [--out DIR]``: a config with a ``"study"`` entry point runs
  that study (:func:`pragmodels.runs.study.run_study`), any other config is a single fit
  (:func:`pragmodels.runs.fit_config.run_config`); either writes ``fits/<name>/quick|full/``.
- ``pragmodels tables STUDY --out FILE.csv``: a study's reproduction tables (its ``"tables"``
  entry point; ``STUDY`` a config path or the stem of ``fits/<name>.json``).
- ``pragmodels lm score PROMPTS.jsonl --model smollm2 --out scores.csv``: :mod:`pragmodels.lm.score_file`,
  with the LM options of every study's LM step (:func:`pragmodels.lm.entry.add_lm_arguments`).
- ``pragmodels lm elicit STUDY --lm NAME ...``: the study's LM step, the function its config's
  ``"lm_step"`` names, on the arguments after ``STUDY``.

Every failure is one line on stderr, ``pragmodels: error: ...`` (``--debug`` adds the traceback);
exit status 0 done, 1 the run failed, 2 a config, input, data or run folder cannot be used, 128+N
stopped by signal N. The docs page *Running studies and sweeps* describes each command.

Layering: imports :mod:`pragmodels.errors`, and :mod:`pragmodels.lm.entry` for the LM options (not
``llama_cpp``); the runners and :mod:`pragmodels.lm.score_file` lazily; never a study (a study's LM
step is loaded from the file its config names, as its entry point is). A config is
read and validated before JAX or a study's code is imported (a study's ``Config`` lives in a module
of its own, :func:`pragmodels.runs.study.check_study_config`), so its errors come at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

from pragmodels.errors import ConfigError, PragmodelsError

ENVIRONMENT = """\
environment variables:
  PRAGMODELS_DATA_DIR           offline mirror of the upstream data sets (no download when set)
  PRAGMODELS_CACHE_DIR          download cache (default ~/.cache/pragmodels)
  PRAGMODELS_COMPILATION_CACHE  JAX compilation cache folder (default ~/.cache/pragmodels/jax;
                                'off' disables it; an unwritable one is skipped with a warning)
  PRAGMODELS_HOST_DEVICES       CPU devices for parallel chains (default: the number of cores)
  PRAGMODELS_WORKER_THREADS     threads per worker process of a process-pool study (default 1)
  TF_CPP_MIN_LOG_LEVEL          XLA's C++ log threshold (default here 3: only fatal lines, which
                                keeps XLA's "Very slow compile?" alarm away; 0 shows every line)

Configs are validated against a schema before any work starts (docs/configs.md; JSON Schema
files in schemas/). Every failure is one line, 'pragmodels: error: ...'; --debug adds the
traceback. Exit status: 0 done, 1 the run failed, 2 a config, input, data set or run folder
cannot be used, 128+N stopped by signal N."""

LM_ENVIRONMENT = """\
environment variables:
  PRAGMODELS_LM_CACHE     the score cache's SQLite file (default ~/.cache/pragmodels/lm_scores.sqlite)
  PRAGMODELS_LM_BASE_URL  the server's URL when none of --model, --lm, --base-url, --config is given
  PRAGMODELS_LM_MODEL     the model name sent to the server when --server-model is not given
                          (else the only model the server lists)
  OPENAI_API_KEY          sent to the server as 'Authorization: Bearer' when --api-key-env is not
                          given (none if unset)

Input: one JSON object per line, {"id": "...", "prompt": "...", "continuations": ["...", ...]},
optionally "length_normalize": true; blank lines are skipped, ids must be unique. Output: one row
per continuation (id, continuation_index, continuation, logprob, length_normalize, model,
prompt_format), and OUT.json beside it, e.g. scores.csv.json: model identity, prompt format,
settings, pragmodels version, the input's sha256, time. Both are renamed into place once every
prompt is scored. Every failure is one line, 'pragmodels: error: ...'; --debug adds the traceback.
Exit status: 0 done, 2 an input, a model or a server cannot be used, 1 anything else."""

#: errors that say an input cannot be used (exit status 2); anything else is a failed run (1)
_INPUT_ERRORS = (PragmodelsError, ValueError, OSError)


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors in the one-line form of every other failure."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"pragmodels: error: {message} (see `{self.prog} --help`)\n")


def _given(value: str) -> str:
    """An argument's value, if not empty: ``--out ''`` was read as the default run folder or as ``.``."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"the value is empty ({value!r}); expected a path or a name")
    return value


def _study_names(start: Path) -> list[str]:
    from pragmodels.runs.entry_points import search_path

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
    from pragmodels.runs.entry_points import search_path

    name = study.replace("-", "_")  # social-meaning is an alias of social_meaning
    tried = [d / "fits" / f"{name}.json" for d in search_path(Path.cwd())]
    found = next((p for p in tried if p.is_file()), None)
    if found is None:
        known = _study_names(Path.cwd())
        raise ConfigError(f"no config for study {study!r}: looked for {', '.join(map(str, tried))}"
                          + (f"; known: {', '.join(known)}" if known else "") + "; or pass the config's path.")
    return found


def _check(args: argparse.Namespace) -> dict[str, Any]:
    """The command's config, read and validated before JAX or a study's code is imported: a bad key
    or value is reported at once."""
    from pragmodels.runs.entry_points import read_config
    from pragmodels.runs.study import check_study_config

    if args.command == "tables":
        path = _study_config(args.study)
        cfg = check_study_config(path)
        if not cfg.get("tables"):
            raise ConfigError(f"study config {path}: `tables`: required key missing for `pragmodels tables` "
                              "(expected 'path/to/module.py:function').", path=path)
        return cfg
    path = Path(args.config)
    if "study" in read_config(path):
        return check_study_config(path)
    from pragmodels.runs.fit_config import load_config

    return load_config(path)


def _run(args: argparse.Namespace, cfg: dict[str, Any]) -> Path:
    path = Path(args.config)
    mode = "quick" if args.quick else "full"
    if "study" in cfg:
        from pragmodels.runs.study import run_study

        # fit_many draws a bar on a terminal and writes a line per fit to a log file
        return run_study(path, mode=mode, out=args.out, progress=not args.no_progress)
    from pragmodels.runs.fit_config import run_config

    # NumPyro's bar redraws itself with carriage returns: on a terminal only
    return run_config(path, args.out, quick=args.quick, progress_bar=not args.no_progress and sys.stderr.isatty())


def _tables(args: argparse.Namespace, cfg: dict[str, Any]) -> None:
    from pragmodels.runs.entry_points import load_entry_point

    load_entry_point(cfg["tables"], _study_config(args.study), "tables")(cfg, Path(args.out))


def _parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    ap = _Parser(prog="pragmodels", formatter_class=fmt, epilog=ENVIRONMENT,
                 description="Bayesian cognitive models of pragmatics: run a fit or a study from its "
                             "config, reproduce a study's tables, or score prompts against a language model.")
    ap.add_argument("--debug", action="store_true", help="on failure, print the traceback too")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser(
        "run", formatter_class=fmt, epilog=ENVIRONMENT,
        help="run a config (fits/*.json) and write its run folder",
        description="Run a fit or study config and write its run folder, fits/<name>/full/ (or quick/). "
                    "A config with a 'study' key runs that study's entry point; any other config is a "
                    "single fit. The folder is written aside and swapped in whole when the run finishes.")
    run.add_argument("config", type=_given, help="the config file, e.g. fits/social_meaning.json or fits/reference_game.json")
    run.add_argument("--out", type=_given, metavar="DIR",
                     help="run folder to write (default: beside the config, fits/<name>/quick|full/)")
    run.add_argument("--quick", action="store_true",
                     help="a smoke run: the config's quick sampler settings (short chains), into quick/")
    run.add_argument("--no-progress", action="store_true",
                     help="no progress reports (by default a bar on a terminal; a line per finished fit, and "
                          "a count every minute, when the output goes to a file)")
    run.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                     help="on failure, print the traceback too")
    tab = sub.add_parser(
        "tables", formatter_class=fmt, epilog=ENVIRONMENT,
        help="reproduce a study's tables from the raw data",
        description="Write a study's reproduction tables (the 'tables' entry point its config names) "
                    "from the raw data, and print them beside the published values.")
    tab.add_argument("study", type=_given, help="a study config, or the study's name: fits/<name>.json, e.g. social_meaning "
                                   "(dashes are read as underscores)")
    tab.add_argument("--out", type=_given, required=True, metavar="FILE.csv", help="CSV file to write")
    tab.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                     help="on failure, print the traceback too")
    _lm_parser(sub.add_parser("lm", formatter_class=fmt, help="language models: score a prompt file, run a study's "
                                                              "LM step",
                              description="Language models as literal semantics.", epilog=LM_ENVIRONMENT))
    return ap


def _lm_step_studies() -> list[str]:
    """The studies whose config names an LM step (``lm_step``), for ``pragmodels lm elicit --help``."""
    import json

    from pragmodels.runs.entry_points import search_path

    found = set()
    for d in search_path(Path.cwd()):
        for p in sorted((d / "fits").glob("*.json")) if (d / "fits").is_dir() else ():
            try:
                if json.loads(p.read_text(encoding="utf-8")).get("lm_step"):
                    found.add(p.stem)
            except (OSError, ValueError, AttributeError):
                continue  # (a broken config is reported when it is used)
    return sorted(found)


def _lm_parser(lm: argparse.ArgumentParser) -> None:
    from pragmodels.lm.entry import add_lm_arguments  # (no model or backend is imported)

    fmt = argparse.RawDescriptionHelpFormatter
    lm.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                    help="on failure, print the traceback too")
    sub = lm.add_subparsers(dest="lm_command", required=True, metavar="COMMAND",
                            help="score: score a JSONL prompt file against a model; elicit: run a study's LM step")
    sc = sub.add_parser(
        "score", formatter_class=fmt, epilog=LM_ENVIRONMENT,
        help="score a JSONL prompt file against a model and write a table",
        description="Score every continuation of every prompt in a JSONL file, log P(continuation | prompt)\n"
                    "through the prompt format's end-of-turn marker, and write a CSV (or Parquet) table.\n"
                    "Scores go through the score cache, so a rerun computes nothing twice and a run cut\n"
                    "short resumes. The model is a GGUF file in this process (--model), transformers\n"
                    "(--backend hf), an OpenAI-compatible server (--base-url), or an LM entry of a study\n"
                    "config (--config FILE --lm NAME): the LM options of every study's LM step.")
    sc.add_argument("prompts", type=_given, metavar="PROMPTS.jsonl", help="the prompt file, one JSON object per line")
    sc.add_argument("--out", type=_given, required=True, metavar="FILE",
                    help="table to write: FILE.csv, or FILE.parquet (needs pyarrow); the provenance goes to "
                         "FILE.json beside it (e.g. scores.csv.json)")
    add_lm_arguments(sc, standalone=True)
    sc.add_argument("--cache", type=_given, metavar="PATH",
                    help="the score cache's SQLite file (default $PRAGMODELS_LM_CACHE, else "
                         "~/.cache/pragmodels/lm_scores.sqlite)")
    sc.add_argument("--no-cache", action="store_true", help="score everything afresh and store nothing")
    sc.add_argument("--no-progress", action="store_true", help="no progress bar (shown on a terminal, on stderr)")
    sc.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                    help="on failure, print the traceback too")
    studies = _lm_step_studies()
    el = sub.add_parser(
        "elicit", formatter_class=fmt,
        help="run a study's LM step (its config's lm_step) with one LM",
        description="Run a study's LM step with one LM: what the study needs of it (scores, samples, answers to\n"
                    "its questionnaires) into the study's folder under fits/, resumable. The step is the\n"
                    "function its config's \"lm_step\" names; the arguments after STUDY are the step's own:\n"
                    "--lm NAME and the LM options of `pragmodels lm score`, and the step's (see\n"
                    "`pragmodels lm elicit STUDY --help`). --lm NAME of an entry of the config's lms opens that\n"
                    "entry (options given too must agree with it). Example, a hosted chat model:\n"
                    "  pragmodels lm elicit social_meaning --lm gpt4o --base-url https://api.openai.com/v1 \\\n"
                    "      --server-model gpt-4o --api-key-env OPENAI_API_KEY --semantics samples",
        epilog="studies with an LM step: " + (", ".join(studies) if studies else "none found under fits/")
               + "\n\nenvironment variables:\n  PRAGMODELS_LM_CACHE     the score cache's SQLite file (default "
                 "~/.cache/pragmodels/lm_scores.sqlite)\n  A server's API key: --api-key-env VAR names the variable.")
    el.add_argument("study", type=_given, metavar="STUDY",
                    help="a study config, or the study's name: fits/<STUDY>.json, e.g. wavelength")
    el.add_argument("step_args", nargs=argparse.REMAINDER, metavar="...",
                    help="the LM step's arguments (--lm NAME, the LM options, the step's own)")


def _lm_config(config: str) -> str:
    """``--config``'s study config, found as ``pragmodels run`` finds one and checked against its
    study's schema (a config without a study: against each LM entry's only)."""
    from pragmodels.runs.entry_points import read_config
    from pragmodels.runs.study import check_study_config

    path = _study_config(config)
    if "study" in read_config(path):
        check_study_config(path)
    return str(path)


def _lm_score(args: argparse.Namespace) -> str:
    from pragmodels.lm.cache import ScoreCache
    from pragmodels.lm.entry import lm_entry_from_arguments, lm_from_arguments
    from pragmodels.lm.score_file import check_table_path, read_prompts, score_file

    if args.no_cache and args.cache:
        raise ValueError("--cache and --no-cache contradict each other; pass one.")
    read_prompts(args.prompts)  # a malformed file or output name fails before a model is loaded
    check_table_path(args.out)
    if args.config is not None:
        args.config = _lm_config(args.config)
    entry, origin = lm_entry_from_arguments(args)
    if entry.semantics == "samples":
        raise ValueError(f"`pragmodels lm score` scores log-probabilities, and the LM {entry.model!r} has semantics "
                         "'samples' (sampled and counted, never scored): drop --semantics samples, or run a study's "
                         "sampled route (`pragmodels lm elicit STUDY`).")
    lm, _, _ = lm_from_arguments(args, entry=entry)
    cache = None if args.no_cache else ScoreCache(args.cache)
    r = score_file(args.prompts, args.out, lm, cache=cache, progress=not args.no_progress, extra={"lm_entry": origin})
    cached = f"{r.from_cache} from the cache" if cache is not None else "no cache"
    return (f"scored {r.n_rows} continuations of {r.n_prompts} prompts in {r.seconds:.1f} s ({cached}); "
            f"wrote {r.table} and {r.sidecar}")


def _option(argv: list[str], flag: str) -> str | None:
    """The value of ``flag`` in an argument list (``--flag V`` or ``--flag=V``), or None."""
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def _lm_elicit(args: argparse.Namespace) -> int:
    """The study's LM step (``lm_step``) run on the arguments after STUDY; its exit status."""
    from pragmodels.lm.score_file import BUNDLED_NAMES
    from pragmodels.runs.entry_points import load_entry_point, read_config
    from pragmodels.runs.study import check_study_config

    path = _study_config(args.study)
    if not read_config(path).get("lm_step"):
        known = _lm_step_studies()
        raise ConfigError(f"study config {path}: `lm_step`: required key missing for `pragmodels lm elicit` (expected "
                          "'path/to/module.py:function')" + (f"; studies with one: {', '.join(known)}" if known else "")
                          + ".", path=path)
    cfg = check_study_config(path)
    rest = list(args.step_args)
    if "--debug" in rest:  # (this command's: the step's parser may not know it)
        rest.remove("--debug")
        args.debug = True
    name, lms = _option(rest, "--lm"), cfg.get("lms") or {}
    if name is not None and _option(rest, "--config") is None:
        if name in lms:
            rest += ["--config", str(path)]  # the study's own entry of that name
        elif not any(_option(rest, o) for o in ("--model", "--base-url", "--backend")) and \
                name.lower() not in BUNDLED_NAMES:
            import difflib

            near = difflib.get_close_matches(name, list(lms), n=1, cutoff=0.6)
            raise ConfigError(f"--lm {name!r}: not an entry of lms in {path} ({', '.join(map(repr, lms)) or 'none'})"
                              + (f"; did you mean {near[0]!r}?" if near else "")
                              + " A new LM needs --model (a file) or --base-url (a server).", path=path)
    step = load_entry_point(cfg["lm_step"], path, "lm_step")
    argv0, sys.argv[0] = sys.argv[0], f"pragmodels lm elicit {args.study}"  # the step's usage lines name the command
    try:
        code = step(rest)
    except SystemExit as e:  # the step's argparse: its usage and one line are printed
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    finally:
        sys.argv[0] = argv0
    return int(code or 0)


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, _INPUT_ERRORS):
        return text
    return f"{type(e).__name__}: {text} (rerun with --debug for the traceback)"


def _compilation_cache() -> str | None:
    """Switch on JAX's compilation cache and return its folder (None when off); an unusable folder
    (read-only HOME) is a warning."""
    from pragmodels.runtime import enable_compilation_cache

    try:
        where = os.environ.get("PRAGMODELS_COMPILATION_CACHE") or Path.home() / ".cache" / "pragmodels" / "jax"
        return enable_compilation_cache(where)
    except (OSError, RuntimeError) as e:
        print(f"pragmodels: warning: {' '.join(str(e).split())}; going on without a compilation cache "
              "(set PRAGMODELS_COMPILATION_CACHE to a writable folder, or to 'off').", file=sys.stderr)
    return None


#: what the note on compiling says a cold start costs (measured: docs/running-studies.md, "Compiling")
COMPILE_COST = ("most of the waiting on a small machine (`make run-quick`: 12 min with an empty cache, 6 min "
                "with a full one, on 2 busy cores)")


def _compile_note(cache: str | None) -> None:
    """Say once, on a run that will compile its models, that it does and what that costs (XLA's own
    slow-compile alarm is kept off stderr: :func:`pragmodels.runtime.quiet_compiler_logs`)."""
    if cache is not None and any(not p.name.startswith(".") for p in Path(cache).iterdir()):
        return  # compiled programs are there to reuse
    if cache is None:
        print(f"pragmodels: note: each model is compiled (XLA) before it samples, {COMPILE_COST}; with the "
              "compilation cache off, every run compiles them again.", flush=True)
    else:
        print(f"pragmodels: note: a first run compiles each model (XLA) before it samples, {COMPILE_COST}; "
              f"the compiled programs are cached in {cache} and reused by later runs.", flush=True)


def _start_stack(command: str) -> None:
    """Settings the scientific stack reads when it starts, then its compilation cache."""
    from pragmodels.runtime import configure_host_devices, quiet_compiler_logs

    configure_host_devices()  # one CPU device per core for parallel chains (before JAX starts)
    quiet_compiler_logs()  # XLA's "Very slow compile?" alarm is an ERROR line (unless TF_CPP_MIN_LOG_LEVEL is set)
    import matplotlib

    matplotlib.use("Agg")  # the command line writes figures to files and never shows them
    # compiled NUTS kernels are reused across fits of the same shapes and across runs
    cache = _compilation_cache()
    if command == "run":
        _compile_note(cache)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    t0 = time.perf_counter()
    try:
        if args.command == "lm" and args.lm_command == "elicit":  # the study's step imports what it needs
            return _lm_elicit(args)
        if args.command == "lm":  # no JAX, no figures
            print(_lm_score(args))
            return 0
        cfg = _check(args)  # a config error is reported before JAX is imported
        _start_stack(args.command)
        if args.command == "run":
            out = _run(args, cfg)
            print(f"wrote {out}/ in {time.perf_counter() - t0:.1f} s")
        else:
            _tables(args, cfg)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM/SIGHUP during a run (pragmodels.runs.folder)
        left = ("no table was written (the scores computed are in the cache)" if args.command == "lm"
                else "the run folder was left as it was")
        print(f"pragmodels: {str(e) or 'interrupted'}; {left}.", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    except Exception as e:  # noqa: BLE001 - every failure is one line; --debug shows where
        if args.debug:
            traceback.print_exc()
        print(f"pragmodels: error: {_one_line(e)}", file=sys.stderr)
        return 2 if isinstance(e, _INPUT_ERRORS) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
