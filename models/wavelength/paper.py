"""The Wavelength paper's listeners and speakers for any LM, in one command: elicit, fit, report.

    python -m models.wavelength.paper --lm smollm2 --items 4 [--dry-run]
    python -m models.wavelength.paper --lm qwen --base-url http://gpu-host:8000/v1 --server-model Qwen/Qwen3-32B
    python -m models.wavelength.paper --lm smollm2 --report-only   # refit it and rebuild the report (no LM)

Per LM, on the first ``--items`` items of the fixed order, with the paper's prompts: alternatives
and the log-prob L0 (:func:`models.wavelength.lm_scores.score_study`), the sampled and
chain-of-thought L0 (:mod:`models.wavelength.sampled`), production, then the fits and the report
(:mod:`models.wavelength.paper_report`); an LM that only samples gets every step by sampling
(:func:`sampled_route`, reported by :mod:`models.wavelength.sampled_report`). The estimate comes first (``--dry-run``: only that); everything is
resumable. Outputs: ``fits/wavelength/paper/<lm>/``. The steps: docs/studies/wavelength.md,
"The paper's listeners and speakers".
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from models.wavelength import lm_scores, prompts, sampled
from models.wavelength.score import SEED, item_order
from pragmodels.datasets import load_wavelength

OUT = Path(__file__).resolve().parents[2] / "fits" / "wavelength" / "paper"
#: the four-character rule of thumb of :func:`pragmodels.lm.elicit.estimate`
_CHARS_PER_TOKEN = 4


def _arguments(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    from pragmodels.lm.entry import add_lm_arguments

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_lm_arguments(ap)
    ap.add_argument("--variant", default="paper", choices=list(prompts.VARIANTS), help="the prompts' wording")
    ap.add_argument("--items", type=int, default=4, help="items of the fixed order (100: all)")
    ap.add_argument("--alt-states", type=int, nargs="+", default=[10, 50, 90],
                    help="targets an alternative clue is sampled for (the paper: all 21)")
    ap.add_argument("--answer-prefix", default="", help="begin every direct sampled answer with this text (upstream: "
                    "nothing; '<answer>' helps models too small to keep the format; never the chain-of-thought "
                    "answers, which it would cut short); recorded")
    ap.add_argument("--n-sample", type=int, default=sampled.N_SAMPLES, help="sampled-listener guesses, real clue")
    ap.add_argument("--n-sample-alt", type=int, default=8, help="sampled-listener guesses per alternative")
    ap.add_argument("--resample", type=int, default=sampled.RESAMPLE, help="extra tries per guess that does not "
                    "parse (the paper: 9, i.e. 10 x 32 trials)")
    ap.add_argument("--resample-cot", type=int, default=None, help="extra tries per chain-of-thought guess that "
                    "does not parse (default: --resample)")
    ap.add_argument("--sample-tokens", type=int, default=16, help="most tokens of a direct answer (upstream 2048)")
    ap.add_argument("--n-cot", type=int, default=8, help="chain-of-thought guesses for the real clue (paper: 32)")
    ap.add_argument("--n-cot-alt", type=int, default=0, help="chain-of-thought guesses per alternative (its "
                    "LM-RSA; the paper: 32; 0: none)")
    ap.add_argument("--cot-tokens", type=int, default=128, help="most tokens of a chain-of-thought answer")
    ap.add_argument("--n-production", type=int, default=4, help="direct clues sampled per target (paper: 32)")
    ap.add_argument("--n-speaker-cot", type=int, default=2, help="chain-of-thought clues per target")
    ap.add_argument("--speaker-tokens", type=int, default=24, help="most tokens of a direct clue")
    ap.add_argument("--dry-run", action="store_true", help="print the estimate and stop (no request)")
    ap.add_argument("--report-only", action="store_true", help="fit and report from the outputs there (no LM)")
    ap.add_argument("--no-report", action="store_true", help="a samples-only LM: elicit only (fit and report later "
                    "with --report-only)")
    ap.add_argument("--out", type=Path, default=OUT, help="the outputs' folder")
    args = ap.parse_args(argv)
    if args.items < 1 or args.items > 100:
        ap.error(f"--items {args.items}: expected 1 to 100 items.")
    for s in args.alt_states:
        if s not in prompts.STATES:
            ap.error(f"--alt-states {s}: expected states of {prompts.STATES[0]}, {prompts.STATES[1]}, ..., 100.")
    return ap, args


def _items(n: int) -> pd.DataFrame:
    items = load_wavelength()
    return items.set_index("item").loc[item_order(len(items))[:n]].reset_index()


def _tokens(text: str) -> int:
    return round(len(text) / _CHARS_PER_TOKEN)


def estimate_run(items: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """What the run asks at most before resampling, by step: requests, prompt and answer tokens
    (prompt tokens estimated as characters / 4; alternatives not yet sampled counted as the real clue).

    Parameters
    ----------
    items : pandas.DataFrame
    args : argparse.Namespace
        The command's settings.

    Returns
    -------
    pandas.DataFrame
    """
    v, n_alt = args.variant, len(args.alt_states)
    spk = [prompts.speaker_prompt(r.left, r.right, int(r.target), v) for r in items.itertuples()]
    lis = [prompts.listener_prompt(r.left, r.right, r.clue, v) for r in items.itertuples()]
    smp = [prompts.sample_listener_prompt(r.left, r.right, r.clue, v) for r in items.itertuples()]
    cot = [prompts.sample_listener_prompt(r.left, r.right, r.clue, v, cot=True) for r in items.itertuples()]
    cont = sum(_tokens(c) for c in prompts.answers())
    rows = [
        ("alternatives (sampled clues)", n_alt * len(items), n_alt * sum(map(_tokens, spk)),
         n_alt * len(items) * args.speaker_tokens),
        ("log-prob listener (scored prompts x 21 answers)", (1 + n_alt) * len(items) * 21,
         (1 + n_alt) * sum(map(_tokens, lis)) * 21 + (1 + n_alt) * len(items) * cont, 0),
        ("sampled listener", len(items) * (args.n_sample + n_alt * args.n_sample_alt),
         (args.n_sample + n_alt * args.n_sample_alt) * sum(map(_tokens, smp)),
         len(items) * (args.n_sample + n_alt * args.n_sample_alt) * args.sample_tokens),
        ("chain-of-thought listener", len(items) * (args.n_cot + n_alt * args.n_cot_alt),
         (args.n_cot + n_alt * args.n_cot_alt) * sum(map(_tokens, cot)),
         len(items) * (args.n_cot + n_alt * args.n_cot_alt) * args.cot_tokens),
        ("production: direct clues", len(items) * args.n_production, args.n_production * sum(map(_tokens, spk)),
         len(items) * args.n_production * args.speaker_tokens),
        ("production: chain-of-thought clues", len(items) * args.n_speaker_cot,
         args.n_speaker_cot * sum(map(_tokens, spk)), len(items) * args.n_speaker_cot * args.cot_tokens),
        ("production: clues scored by L0 (x 21 answers)", len(items) * (args.n_production + args.n_speaker_cot) * 21,
         (args.n_production + args.n_speaker_cot) * sum(map(_tokens, lis)) * 21, 0),
        ("production: clues' sampled listener", len(items) * (args.n_production + args.n_speaker_cot) * args.n_sample_alt,
         (args.n_production + args.n_speaker_cot) * args.n_sample_alt * sum(map(_tokens, smp)),
         len(items) * (args.n_production + args.n_speaker_cot) * args.n_sample_alt * args.sample_tokens),
    ]
    df = pd.DataFrame(rows, columns=["step", "requests", "prompt_tokens", "answer_tokens_max"])
    df.loc[len(df)] = ["total", df["requests"].sum(), df["prompt_tokens"].sum(), df["answer_tokens_max"].sum()]
    return df


#: the estimate's steps that need no log-probabilities (a samples-only LM's route: :func:`sampled_route`)
SAMPLED_STEPS = ("alternatives (sampled clues)", "sampled listener", "chain-of-thought listener",
                 "production: direct clues", "production: chain-of-thought clues",
                 "production: clues' sampled listener")


def _ask_step(steps: dict[str, Any], lm: Any, name: str, queries: list[Any], kind: str, n: int, max_tokens: int,
              resample: int, prefix: str, folder: Path, lm_name: str) -> list[dict[str, Any]]:
    """One sampled step, resumable from ``<name>.jsonl``; its wall time, requests and parsed samples in ``steps``."""
    if not queries or n == 0:
        return []
    t0 = time.monotonic()
    _say(f"{lm_name}: {name}, {len(queries)} prompts x {n} samples")
    recs = sampled.ask(lm, queries, kind=kind, n_samples=n, max_tokens=max_tokens, progress=folder / f"{name}.jsonl",
                       seed=SEED, resample=resample, answer_prefix=prefix, log=_say)
    steps[name] = {"wall_s": time.monotonic() - t0, "requests": int(sum(r["attempts"] for r in recs)),
                   "samples": len(recs), "parsed": int(sum(r["valid"] for r in recs))}
    return recs


def sampled_route(lm: Any, items: pd.DataFrame, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """The paper's route for an LM that only samples (semantics ``"samples"``, e.g. a hosted chat model),
    every step by sampling (resumable): alternatives sampled from the direct speaker prompt
    (``speaker_alt``), the sampled and chain-of-thought L0 of the real clue and of every alternative
    (``listener_sample[_alt]``, ``listener_cot[_alt]``), production's direct and chain-of-thought clues
    for the item's target (``speaker``, ``speaker_cot``) and the sampled L0 of each clue produced
    (``listener_sample_prod``); then the paper's metrics of the literal listeners
    (``sampled_listener_metrics.csv``). The fits, LM-RSA and production's comparison:
    :mod:`models.wavelength.sampled_report`.

    Parameters
    ----------
    lm : LanguageModel
    items : pandas.DataFrame
    args : argparse.Namespace
    folder : Path

    Returns
    -------
    dict
        ``{step: {"wall_s", "requests", ...}}``.
    """
    from models.wavelength import paper_report

    v, pre, steps, name = args.variant, args.answer_prefix, {}, args.lm
    rs_cot = args.resample if args.resample_cot is None else args.resample_cot
    alts = _ask_step(steps, lm, "speaker_alt", sampled.alternative_queries(items, args.alt_states, variant=v),
                     "speaker", 1, args.speaker_tokens, 0, pre, folder, name)
    utts = sampled.alternatives_from(items, alts)
    real = {i: u[:1] for i, u in utts.items()}
    for file, kind, n_real, n_alt, tok, rs, p in (
            ("listener_sample", "listener_sample", args.n_sample, args.n_sample_alt, args.sample_tokens, args.resample,
             pre),
            ("listener_cot", "listener_cot", args.n_cot, args.n_cot_alt, args.cot_tokens, rs_cot, "")):
        cot = kind == "listener_cot"
        _ask_step(steps, lm, file, sampled.listener_queries(items, real, variant=v, cot=cot), kind, n_real, tok, rs, p,
                  folder, name)
        alt_q = [q for q in sampled.listener_queries(items, utts, variant=v, cot=cot) if not q.id.endswith("/0")]
        _ask_step(steps, lm, f"{file}_alt", alt_q, kind, n_alt, tok, rs, p, folder, name)
    direct = _ask_step(steps, lm, "speaker", sampled.speaker_queries(items, variant=v, cot=False), "speaker",
                       args.n_production, args.speaker_tokens, 0, pre, folder, name)
    cot_clues = _ask_step(steps, lm, "speaker_cot", sampled.speaker_queries(items, variant=v, cot=True), "speaker_cot",
                          args.n_speaker_cot, args.cot_tokens, 0, "", folder, name)
    produced = {i: [c for c, _ in cs] for i, cs in sampled.produced_clues([*direct, *cot_clues]).items()}
    _ask_step(steps, lm, "listener_sample_prod", sampled.clue_queries(items, produced, variant=v), "listener_sample",
              args.n_sample_alt, args.sample_tokens, args.resample, pre, folder, name)
    table = paper_report.sampled_listener_metrics(folder, items)
    table.to_csv(folder / "sampled_listener_metrics.csv", index=False)
    _say(f"{name}: the paper's metrics of its sampled literal listeners ({folder / 'sampled_listener_metrics.csv'}):"
         f"\n{table.to_string(index=False)}")
    return steps


def _say(text: str) -> None:
    print(text, flush=True)


def elicit_lm(lm: Any, items: pd.DataFrame, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Steps 1-3 for one LM into ``folder`` (resumable); the wall time and requests of each.

    Parameters
    ----------
    lm : LanguageModel
    items : pandas.DataFrame
    args : argparse.Namespace
    folder : Path

    Returns
    -------
    dict
        ``{step: {"wall_s", "requests", ...}}``.
    """
    v, pre, steps = args.variant, args.answer_prefix, {}
    t0 = time.monotonic()
    path = lm_scores.score_study(lm, items, name=args.lm, seed=SEED, folder=folder, n_production=args.n_production,
                                 passes=["listener", "production"], save_every=1, variant=v, answer_prefix=pre,
                                 alt_states=args.alt_states, log=_say)
    steps["log-prob listener, alternatives, production"] = {"wall_s": time.monotonic() - t0}
    ds = lm_scores.load_scores(path, need=["listener"])
    clues = pd.read_csv(path.with_name(path.name.removesuffix(".nc") + "_clues.csv"), keep_default_na=False)
    utts = {int(r.item): [str(r.clue)] + list(clues[(clues["item"] == r.item) & (clues["kind"] == "alternative")]
                                              .sort_values("index")["clue"].astype(str)) for r in items.itertuples()}
    real = sampled.listener_queries(items, utts, variant=v, cot=False, real_only=True)
    alt = [q for q in sampled.listener_queries(items, utts, variant=v, cot=False) if not q.id.endswith("/0")]
    cot = sampled.listener_queries(items, utts, variant=v, cot=True, real_only=True)
    cot_alt = [q for q in sampled.listener_queries(items, utts, variant=v, cot=True) if not q.id.endswith("/0")]
    spk = sampled.speaker_queries(items, variant=v, cot=True)
    rs_cot = args.resample if args.resample_cot is None else args.resample_cot
    asks = [("listener_sample", real, "listener_sample", args.n_sample, args.sample_tokens, args.resample),
            ("listener_sample_alt", alt, "listener_sample", args.n_sample_alt, args.sample_tokens, args.resample),
            ("listener_cot", cot, "listener_cot", args.n_cot, args.cot_tokens, rs_cot),
            ("listener_cot_alt", cot_alt, "listener_cot", args.n_cot_alt, args.cot_tokens, rs_cot),
            ("speaker_cot", spk, "speaker_cot", args.n_speaker_cot, args.cot_tokens, 0)]
    for name, qs, kind, n, tok, rs in asks:
        if not qs or n == 0:
            continue
        t0 = time.monotonic()
        _say(f"{args.lm}: {name}, {len(qs)} prompts x {n} samples")
        recs = sampled.ask(lm, qs, kind=kind, n_samples=n, max_tokens=tok, progress=folder / f"{name}.jsonl",
                           seed=SEED, resample=rs, answer_prefix="" if kind.endswith("_cot") else pre, log=_say)
        steps[name] = {"wall_s": time.monotonic() - t0, "requests": int(sum(r["attempts"] for r in recs)),
                       "samples": len(recs), "parsed": int(sum(r["valid"] for r in recs))}
    t0 = time.monotonic()
    _judge_cot_clues(lm, items, folder, v)
    steps["chain-of-thought clues scored"] = {"wall_s": time.monotonic() - t0}
    del ds
    return steps


def _judge_cot_clues(lm: Any, items: pd.DataFrame, folder: Path, variant: str) -> None:
    """Each parsed chain-of-thought clue scored by the log-prob L0 (``speaker_cot_scores.csv``, resumable)."""
    src = folder / "speaker_cot.jsonl"
    if not src.exists():
        return
    out = folder / "speaker_cot_scores.csv"
    done = pd.read_csv(out, keep_default_na=False) if out.exists() else pd.DataFrame()
    by = {int(r.item): r for r in items.itertuples()}
    rows = done.to_dict("records")
    have = {(int(r["item"]), int(r["sample_id"])) for r in rows}
    for line in src.read_text().splitlines():
        r = json.loads(line)
        key = (int(r["item"]), int(r["sample_id"]))
        if key in have or int(r["item"]) not in by:
            continue
        clue = lm_scores.clean_clue(r["value"]) if r["valid"] else None
        row: dict[str, Any] = {"item": key[0], "sample_id": key[1], "clue": clue or ""}
        if clue:
            it = by[key[0]]
            row |= dict(zip([f"s{s}" for s in prompts.STATES],
                            np.round(lm.score(prompts.listener_prompt(it.left, it.right, clue, variant),
                                              prompts.answers()), 6)))
        rows.append(row)
        pd.DataFrame(rows).to_csv(out.with_suffix(".csv.tmp"), index=False)
        out.with_suffix(".csv.tmp").replace(out)


def paper_lm(argv: list[str] | None = None) -> int:
    ap, args = _arguments(argv)
    if args.report_only:  # refit this LM (or all, where it has no folder); the others' sections as they are
        from models.wavelength import paper_report

        ran = any((args.out / args.lm / f).exists() for f in ("run.json", "run_sampled.json"))
        paper_report.build(args.out, only=args.lm if ran else None)
        return 0
    items = _items(args.items)
    from pragmodels.lm.entry import SamplesOnlyLM, lm_entry_from_arguments

    # (an entry of --config says it; options are read as they are, so that a dry run needs no model)
    samples_only = (lm_entry_from_arguments(args)[0].semantics if args.config else args.semantics) == "samples"
    est = estimate_run(items, args)
    steps = SAMPLED_STEPS if samples_only else [s for s in est["step"] if s not in SAMPLED_STEPS[-1:]]
    est = est[est["step"].isin(steps)].reset_index(drop=True)  # (the total of the steps it runs)
    est.loc[len(est)] = ["total", *est[["requests", "prompt_tokens", "answer_tokens_max"]].sum()]
    if samples_only:
        _say(f"{args.lm}: semantics 'samples' (no log-probabilities): every step samples (alternatives, the "
             "sampled and chain-of-thought listeners of every clue, production judged by the sampled listener); "
             "nothing is scored")
    _say(f"{args.lm}: {len(items)} items, prompts {args.variant!r} (version {prompts.prompt_version(args.variant)}); "
         "at most, before resampling:\n" + est.to_string(index=False))
    if args.dry_run:
        return 0
    from pragmodels.lm.entry import open_lm_from_arguments

    folder = args.out / args.lm
    folder.mkdir(parents=True, exist_ok=True)
    lm = open_lm_from_arguments(ap, args, n_ctx=2048)
    t0 = time.monotonic()
    if isinstance(lm, SamplesOnlyLM):
        steps = sampled_route(lm, items, args, folder)
        _write_run(folder, args, lm, items, est, steps, time.monotonic() - t0, route="sampled")
        if not args.no_report:
            from models.wavelength import paper_report

            paper_report.build(args.out, only=args.lm)
        return 0
    steps = elicit_lm(lm, items, args, folder)
    _write_run(folder, args, lm, items, est, steps, time.monotonic() - t0, route="scored")
    from models.wavelength import paper_report

    paper_report.build(args.out, only=args.lm)
    return 0


def _write_run(folder: Path, args: argparse.Namespace, lm: Any, items: pd.DataFrame, est: pd.DataFrame,
               steps: dict[str, Any], wall_s: float, *, route: str) -> None:
    """``run.json`` (of the scored route, which the report reads) or ``run_sampled.json``: the LM's
    identity, the settings (no key), the estimate and each run's steps and wall time."""
    from pragmodels.io.atomic import atomic_write

    settings = {k: v for k, v in vars(args).items() if k not in ("api_key_env", "dry_run", "report_only", "out")
                and not k.startswith("_")}
    run = {"lm": args.lm, "lm_identity": lm.identity, "lm_entry": getattr(lm, "lm_entry", None), "route": route,
           "prompt_variant": args.variant, "prompt_version": prompts.prompt_version(args.variant),
           "items": [int(i) for i in items["item"]], "settings": settings, "estimate": est.to_dict("records"),
           "steps": steps, "wall_s": wall_s}
    path = folder / ("run.json" if route == "scored" else "run_sampled.json")
    old = json.loads(path.read_text()) if path.exists() else {}
    run["runs"] = old.get("runs", []) + [{"wall_s": wall_s, "steps": steps,
                                          "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(run, indent=1, default=str) + "\n"))


def _cli() -> int:
    """``paper_lm`` with one-line errors (``--debug`` anywhere in the arguments keeps the traceback)."""
    from pragmodels.errors import one_line_cli

    return one_line_cli(paper_lm, "models.wavelength.paper")


if __name__ == "__main__":
    raise SystemExit(_cli())
