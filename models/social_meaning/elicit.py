"""Put the social-meaning paper's questionnaire to a language model (the study's LM step, resumable).

    python -m models.social_meaning.elicit --lm smollm2 [--out DIR] [--limit K] [--conditions MIN KMA]
    pragmodels lm elicit social_meaning_lms --lm smollm2 --fit [--quick]   # elicit (or resume), fit, report

Mühlenbernd (2026), CMCL 2026, arXiv:2604.02512. The paper's prompts, read as data from the offline
mirror (:func:`pragmodels.datasets.load_social_prompts`): 144 queries in each of the conditions MIN,
ALT, KMA, COM (:func:`build_prompt`), 10 samples each at temperature 1.0, at most 100 tokens, no
resampling; the paper's parse rule (exactly one standalone digit 1-7). Answers go through
:func:`pragmodels.lm.elicit.elicit` into ``<out>/progress.jsonl`` (resumable), then into
``<out>/results_<PROMPT>.json`` in the published record schema, which the study reads for an LM listed
under ``lms`` in ``fits/social_meaning_lms.json``. ``--limit K``: the first K queries of a fixed order (blocks
of 24 cells). ``--dry-run``: the estimate only. ``--fit [--quick]``: then run that config's study
(:func:`fit_and_report`; the LM an entry of its ``lms``). In full: the docs page *Study 1* ("The questionnaire for a new LM").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pragmodels.datasets import LLMS, PROMPTS, load_social_llm_elicited, load_social_prompts
from pragmodels.errors import one_line_cli
from pragmodels.io.atomic import atomic_write
from pragmodels.lm.base import LanguageModel
from pragmodels.lm.elicit import Query, Sampling, elicit, estimate
from pragmodels.lm.entry import LMEntry, add_lm_arguments, open_lm_from_arguments

__all__ = ["ELICITED", "SAMPLING", "N_SAMPLES", "PARSE_RULE", "parse_likert", "build_prompt", "queries",
           "elicit_lm", "estimate_line", "fit_and_report", "write_results", "elicited_folder", "load_elicited",
           "RECORD_KEYS", "LMS_CONFIG", "main"]

ROOT = Path(__file__).resolve().parents[2]
#: where the study looks for an elicited LM's files by default: ``ELICITED / <name>``
ELICITED = ROOT / "fits" / "social_meaning" / "elicited"
#: the config ``--fit`` runs when no ``--config`` is given: the new LMs beside the published three
LMS_CONFIG = ROOT / "fits" / "social_meaning_lms.json"
#: the paper's sampling: temperature 1.0, answers of at most 100 tokens (its Claude setting)
SAMPLING = Sampling(temperature=1.0, max_tokens=100)
N_SAMPLES = 10
#: the parse rule's name in the progress file's manifest
PARSE_RULE = "one standalone digit 1-7 (paper: src/parsing.py)"
#: the published files' record keys, in their order
RECORD_KEYS = ("model", "scenario", "context", "utterance", "attribute", "sample_id", "current_date", "raw_response",
               "likert", "valid")
#: the seed of the fixed order of the 144 queries that ``--limit`` takes from
ORDER_SEED = 20261205
SEED = 20261205
_DIGIT = re.compile(r"\b([1-7])\b")


def parse_likert(text: str) -> int | None:
    """The rating in an answer: its one standalone digit 1-7, or None where it has none or several.

    Parameters
    ----------
    text : str
        The model's answer.

    Returns
    -------
    int or None
    """
    found = _DIGIT.findall(text or "")
    return int(found[0]) if len(found) == 1 else None


def build_prompt(questionnaire: dict[str, Any], condition: str, scenario: str, context: str, utterance: str,
                 attribute: str) -> str:
    """One prompt of the paper: the condition's template with the scenario's texts, stripped.

    Each scenario text is wrapped in the newlines the upstream constants carry (triple-quoted
    strings in ``src/exp_texts.py`` that open and close with a newline; the mirror's stimuli file
    holds them stripped), so the situation reads ``"\\n<context>\\n\\n\\n<utterance>\\n"`` as in the prompts the paper sent:
    all 576 prompts equal the upstream builders' (``prompts/build_prompts.py`` run on the upstream
    constants at the pinned commit).

    Parameters
    ----------
    questionnaire : dict
        :func:`pragmodels.datasets.load_social_prompts`.
    condition : str
        ``"MIN"``, ``"ALT"``, ``"KMA"`` or ``"COM"``.
    scenario, context, utterance, attribute : str
        As the LLM files spell them (``"bicycle"``, ``"low"``, ``"precise"``, ``"well-prepared"``).

    Returns
    -------
    str
    """
    item = questionnaire["stimuli"][scenario]
    blocks = questionnaire["blocks"]
    task = {k: blocks[k].format(speaker=item["speaker"], attribute=attribute)
            for k in ("task_block_minimal", "task_block_kma")}
    situation = f"\n{item[f'context_{context}']}\n\n\n{item[f'utterance_{utterance}']}\n"
    return questionnaire["conditions"][condition].format(
        task_description=blocks["task_description"], example_block=blocks["example_block"],
        situation_block=situation, **task).strip()


def _order(questionnaire: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The 144 (scenario, context, utterance, attribute) in the fixed random order ``--limit`` takes from:
    six blocks of 24, each block every context x form x attribute once and every scenario four times
    (a Latin square over blocks: each of the 24 meets every scenario once in the six blocks), so that
    ``--limit 24 * k`` asks every condition mean of the paper's metrics k times."""
    rng = np.random.default_rng(ORDER_SEED)
    scenarios = [list(questionnaire["stimuli"])[i] for i in rng.permutation(len(questionnaire["stimuli"]))]
    combos = [(c, u, a) for c in questionnaire["contexts"] for u in questionnaire["utterances"]
              for a in questionnaire["attributes"]]
    combos = [combos[i] for i in rng.permutation(len(combos))]
    out = []
    for block in range(len(scenarios)):
        cells = [(scenarios[(k + block) % len(scenarios)], *combo) for k, combo in enumerate(combos)]
        out += [cells[i] for i in rng.permutation(len(cells))]
    return out


def queries(questionnaire: dict[str, Any], conditions: Iterable[str] = PROMPTS, limit: int | None = None) -> list[Query]:
    """The queries of the conditions: per condition, the 144 cells (or the first ``limit`` of their
    fixed random order), each with the fields ``prompt`` (the condition), ``scenario``,
    ``context``, ``utterance``, ``attribute``.

    Parameters
    ----------
    questionnaire : dict
        :func:`pragmodels.datasets.load_social_prompts`.
    conditions : iterable of str
        A subset of ``("MIN", "ALT", "KMA", "COM")``.
    limit : int, optional
        Queries per condition.

    Returns
    -------
    list of Query
    """
    out = []
    cells = _order(questionnaire)[:limit]
    for cond in conditions:
        if cond not in PROMPTS:
            raise ValueError(f"condition {cond!r}; expected one of {PROMPTS}.")
        for s, c, u, a in cells:
            out.append(Query(f"{cond}/{s}/{c}/{u}/{a}", build_prompt(questionnaire, cond, s, c, u, a),
                             {"prompt": cond, "scenario": s, "context": c, "utterance": u, "attribute": a}))
    return out


def write_results(records: Sequence[dict[str, Any]], model: str, out: str | Path) -> list[Path]:
    """Write ``<out>/results_<PROMPT>.json`` per condition, in the published record schema (atomically);
    ``raw_response`` stripped, as the paper stored its answers (the progress file keeps them whole).

    Parameters
    ----------
    records : sequence of dict
        :func:`pragmodels.lm.elicit.elicit`'s records of :func:`queries`.
    model : str
        The LM's name in the files.
    out : path-like
        The folder.

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    written = []
    for cond in PROMPTS:
        rows = [{"model": model, "scenario": r["scenario"], "context": r["context"], "utterance": r["utterance"],
                 "attribute": r["attribute"], "sample_id": r["sample_id"], "current_date": r["timestamp"],
                 "raw_response": r["raw_response"].strip(), "likert": r["value"], "valid": r["valid"]}
                for r in records if r["prompt"] == cond]
        if rows:
            path = Path(out) / f"results_{cond}.json"
            text = json.dumps(rows, indent=1, ensure_ascii=False) + "\n"
            written.append(atomic_write(path, lambda tmp, text=text: Path(tmp).write_text(text)))
    return written


def elicit_lm(lm: LanguageModel, name: str, out: str | Path, *, conditions: Iterable[str] = PROMPTS,
              limit: int | None = None, n_samples: int = N_SAMPLES, sampling: Sampling = SAMPLING, seed: int = SEED,
              every: int = 10, log=print, bar: bool = False) -> list[Path]:
    """Ask ``lm`` the questionnaire (resuming ``<out>/progress.jsonl``) and write its results files.

    Parameters
    ----------
    lm : LanguageModel
        The model.
    name : str
        Its name in the records (not a published LLM's).
    out : path-like
        The folder of the progress file and the results files.
    conditions : iterable of str
        The prompt conditions to ask.
    limit : int, optional
        Queries per condition (the first of a fixed random order).
    n_samples : int
        Samples per query.
    sampling : Sampling
        Temperature and most tokens.
    seed : int
        The run's seed.
    every : int
        A progress line every this many queries.
    log : callable
        Where lines go.
    bar : bool
        A progress bar over requests (on standard error; for a terminal), beside the lines.

    Returns
    -------
    list of pathlib.Path
        The results files written.
    """
    if name in LLMS:
        raise ValueError(f"--lm {name!r} is a published LLM's name ({', '.join(LLMS)}); name the new LM otherwise.")
    qs = queries(load_social_prompts(), list(conditions), limit)
    log(estimate_line(name, qs, n_samples, sampling))
    progress = Path(out) / "progress.jsonl"
    with _RequestBar(lm, len(qs) * n_samples, _done_records(progress, n_samples), enabled=bar) as counted:
        records = elicit(counted, qs, n_samples=n_samples, parse=parse_likert, parse_name=PARSE_RULE,
                         progress=progress, sampling=sampling, seed=seed, every=every, log=log)
    files = write_results(records, name, out)
    invalid = sum(not r["valid"] for r in records)
    log(f"wrote {', '.join(str(f) for f in files)}: {len(records)} records, {invalid} invalid "
        f"({invalid / max(len(records), 1):.1%})")
    return files


def estimate_line(name: str, qs: Sequence[Query], n_samples: int, sampling: Sampling) -> str:
    """What asking ``qs`` costs, in one line, before any request (:func:`pragmodels.lm.elicit.estimate`).

    Parameters
    ----------
    name : str
        The LM's name.
    qs : sequence of Query
        The queries.
    n_samples : int
        Samples per query.
    sampling : Sampling
        The settings (``max_tokens`` bounds the answers).

    Returns
    -------
    str
    """
    est = estimate(qs, n_samples, sampling.max_tokens)
    return (f"social meaning for {name}: {len(qs)} queries x {n_samples} samples = {est['requests']:,} requests; "
            f"prompts {est['prompt_chars']:,} characters, about {est['prompt_tokens']:,} tokens (characters / 4); "
            f"answers at most {est['answer_tokens_max']:,} tokens")


def _done_records(progress: Path, n_samples: int) -> int:
    """Records of whole queries already in a progress file (where a resumed bar starts; an estimate)."""
    if not progress.is_file():
        return 0
    lines = sum(1 for line in progress.read_bytes().split(b"\n") if line.strip())
    return lines - lines % n_samples


class _RequestBar:
    """``lm`` that moves a tqdm bar by one request per ``sample`` call (disabled: no bar)."""

    def __init__(self, lm: LanguageModel, total: int, initial: int, *, enabled: bool):
        self.lm, self.total, self.initial, self.enabled, self.bar = lm, total, initial, enabled, None

    def __enter__(self) -> LanguageModel:
        if not self.enabled:
            return self.lm
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total, initial=min(self.initial, self.total), desc="requests", unit="req")
        return self  # type: ignore[return-value]  (a LanguageModel by its two methods)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()

    @property
    def identity(self) -> str:
        """The wrapped model's identity."""
        return getattr(self.lm, "identity", "")

    @property
    def lm_entry(self) -> Any:
        """The entry the wrapped model was opened from (for the manifest; it was lost behind the bar)."""
        return getattr(self.lm, "lm_entry", None)

    def __getattr__(self, name: str) -> Any:  # (sample_api, prompt_format: the wrapped model's, for the manifest)
        if name == "lm":
            raise AttributeError(name)
        return getattr(self.lm, name)

    def sample(self, prompt: str, n: int, **kw: Any) -> list[str]:
        """The wrapped model's samples; the bar moves by one request."""
        out = self.lm.sample(prompt, n, **kw)
        if self.bar is not None:
            self.bar.update(1)
        return out


def elicited_folder(name: str, entry: LMEntry) -> Path:
    """Where the study reads LM ``name``'s files: the entry's ``outputs`` (relative to the
    repository root), else ``fits/social_meaning/elicited/<name>``.

    Parameters
    ----------
    name : str
        The LM's name in the config's ``lms``.
    entry : LMEntry
        Its entry.

    Returns
    -------
    pathlib.Path
    """
    if not entry.outputs:
        return ELICITED / name
    folder = Path(entry.outputs)
    return folder if folder.is_absolute() else ROOT / folder


def load_elicited(lms: Mapping[str, LMEntry], *, complete: bool = True, n_samples: int = N_SAMPLES,
                  record: Callable[[str, Path], object] | None = None) -> pd.DataFrame:
    """The new LMs' ratings, read as the published ones (:func:`pragmodels.datasets.load_social_llm_elicited`),
    one frame beside theirs (never mixed into it).

    Parameters
    ----------
    lms : mapping of str to LMEntry
        The config's ``lms``.
    complete : bool
        Every LM answered all 576 queries (False: a ``--limit`` subset is read too).
    n_samples : int
        Samples per query (the paper's 10).
    record : callable, optional
        ``record(key, path)`` for each file read (a run's
        :meth:`~pragmodels.runs.study.StudyFolder.record_file`: its sha256 goes into ``run.json``).

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`pragmodels.datasets.load_social_llm`; no rows without ``lms``.
    """
    frames = []
    for name, entry in lms.items():
        folder = elicited_folder(name, entry)
        frames.append(load_social_llm_elicited(folder, name, n_samples=n_samples, complete=complete))
        if record is not None:
            for prompt in frames[-1]["prompt"].unique():
                record(f"elicited_{name}_{prompt}", folder / f"results_{prompt}.json")
    if not frames:
        return pd.DataFrame(columns=["model", "prompt", "scenario", "context", "form", "attribute", "sample_id",
                                     "rating", "valid", "raw_response"])
    return pd.concat(frames, ignore_index=True)


def fit_config(config: str | Path, name: str) -> Path:
    """The study config ``--fit`` runs, validated, with ``name`` an entry of its ``lms`` (checked
    before any request: the study fits and reports the LMs its config lists).

    Parameters
    ----------
    config : path-like
        A study config (``fits/social_meaning_lms.json``, or one like it).
    name : str
        The LM's name (``--lm``).

    Returns
    -------
    pathlib.Path
    """
    from pragmodels.errors import ConfigError
    from pragmodels.runs.study import check_study_config

    path = Path(config)
    lms = check_study_config(path).get("lms") or {}
    if name not in lms:
        raise ConfigError(f"--fit: --lm {name!r} is not an entry of lms in {path} ({', '.join(map(repr, lms)) or 'none'}); "
                          "the study fits the LMs its config lists: add an entry for it (docs: Study 1, 'One command "
                          "for a new LM').", path=path)
    return path


def fit_and_report(config: str | Path, name: str, *, quick: bool = False, progress: bool = False,
                   log=print) -> Path:
    """Run the study of ``config`` (as ``pragmodels run CONFIG [--quick]``) and print where its
    report is and what it read of ``name``'s answers (``tables/lm_answers.csv``).

    Parameters
    ----------
    config : path-like
        The study config (``name`` an entry of its ``lms``: :func:`fit_config`).
    name : str
        The new LM.
    quick : bool
        The config's quick sampler settings (a check that everything runs; no estimates).
    progress : bool
        Progress of the fits (a bar on a terminal).
    log : callable
        Where lines go.

    Returns
    -------
    pathlib.Path
        The run folder.
    """
    from pragmodels.runs.study import run_study

    mode = "quick" if quick else "full"
    log(f"fitting: pragmodels run {config}{' --quick' if quick else ''} (the published LLMs, the humans and the "
        f"new LMs of its lms, {name} among them)")
    run_dir = run_study(config, mode=mode, progress=progress)
    answers = run_dir / "tables" / "lm_answers.csv"
    if answers.is_file():
        rows = pd.read_csv(answers)
        for r in rows[rows["model"] == name].to_dict("records"):
            log(f"{name} {r.get('prompt', '')}: " + ", ".join(f"{k} {v}" for k, v in r.items()
                                                          if k not in ("model", "prompt")))
    log(f"report: {run_dir / 'report.md'}")
    return run_dir


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m models.social_meaning.elicit", description=__doc__.split("\n")[0])
    add_lm_arguments(ap)
    ap.add_argument("--out", type=Path, help="the folder of the progress and results files (default "
                                             "fits/social_meaning/elicited/<lm>)")
    ap.add_argument("--limit", type=int, help="ask only the first K queries of each condition (a fixed random order "
                                              "in blocks of 24: each block every context x form x attribute once)")
    ap.add_argument("--conditions", nargs="+", choices=PROMPTS, default=list(PROMPTS), help="the prompt conditions")
    ap.add_argument("--samples", type=int, default=N_SAMPLES, help="samples per query (default 10, the paper's)")
    ap.add_argument("--max-tokens", type=int, default=SAMPLING.max_tokens, help="most tokens per answer (default 100)")
    ap.add_argument("--temperature", type=float, default=SAMPLING.temperature, help="default 1.0, the paper's")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--every", type=int, default=10, help="a progress line every this many queries")
    ap.add_argument("--n-ctx", type=int, default=2048, help="context window of an in-process model (default 2048)")
    ap.add_argument("--stop", nargs="+", default=[], metavar="TEXT",
                    help="strings that end an answer (default none, the paper's; e.g. a newline for a base model)")
    ap.add_argument("--answer-prefix", default="", metavar="TEXT",
                    help="text each answer is made to start with (completions route; e.g. 'Answer:' for a base model)")
    ap.add_argument("--dry-run", action="store_true", help="print the estimate of requests and tokens; send nothing")
    ap.add_argument("--fit", action="store_true",
                    help="then fit and report: the study of --config (default fits/social_meaning_lms.json, whose "
                         "lms must list --lm), as `pragmodels run CONFIG`; checked before any request")
    ap.add_argument("--quick", action="store_true", help="with --fit: the config's quick sampler settings (a check "
                                                         "that it all runs, not estimates)")
    args = ap.parse_args(argv)
    if args.quick and not args.fit:
        ap.error("--quick: only with --fit (it picks the fit's sampler settings).")
    if args.limit is not None and args.limit < 1:
        ap.error(f"--limit {args.limit}: expected a positive number of queries.")
    if args.lm in LLMS:
        ap.error(f"--lm {args.lm!r} is a published LLM's name ({', '.join(LLMS)}); name the new LM otherwise.")
    unescape = lambda text: text.replace("\\n", "\n")  # noqa: E731 ('\\n' on a command line: a newline)
    sampling = Sampling(temperature=args.temperature, max_tokens=args.max_tokens,
                        stop=tuple(unescape(s) for s in args.stop), answer_prefix=unescape(args.answer_prefix))
    config = None
    if args.fit:  # the config, its entry and the folder the study reads: checked before any request
        args.config = args.config or str(LMS_CONFIG)
        from pragmodels.lm.entry import lm_entry_from_arguments, study_config_file

        config = fit_config(study_config_file(args.config), args.lm)
        args.config = str(config)

        reads = elicited_folder(args.lm, lm_entry_from_arguments(args)[0])
        if args.out is not None and Path(args.out).resolve() != reads.resolve():
            ap.error(f"--out {args.out}: with --fit the answers go where the study reads them ({reads}, the entry's "
                     "outputs); drop --out or set the entry's outputs.")
    if args.dry_run:
        print(estimate_line(args.lm, queries(load_social_prompts(), args.conditions, args.limit), args.samples,
                            sampling) + " (--dry-run: nothing sent)")
        return 0
    lm = open_lm_from_arguments(ap, args, n_ctx=args.n_ctx)
    out = args.out
    if out is None:  # where the study will read it: an entry of --config may name its outputs
        from pragmodels.lm.entry import lm_entry_from_arguments

        out = elicited_folder(args.lm, lm_entry_from_arguments(args)[0]) if args.config else ELICITED / args.lm
    elicit_lm(lm, args.lm, out, conditions=args.conditions, limit=args.limit,
              n_samples=args.samples, sampling=sampling, seed=args.seed, every=args.every,
              log=lambda s: print(s, flush=True), bar=sys.stderr.isatty())
    if config is not None:
        fit_and_report(config, args.lm, quick=args.quick, progress=sys.stderr.isatty(),
                       log=lambda s: print(s, flush=True))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m models.social_meaning.elicit``: one-line errors (``--debug``: the traceback).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    return one_line_cli(lambda: _main(args), "python -m models.social_meaning.elicit", args)

if __name__ == "__main__":
    sys.exit(main())
