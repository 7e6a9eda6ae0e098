"""The main job (``make run``: the social-meaning study) before and after issue 38's levers.

Usage: python -m benchmarks.main_job [--quick] [--no-compile] [--fits] [--before REV]

Its parts, each printed and written to ``results/main_job.{csv,md}`` with the load average:

- the job itself: wall and core seconds of the committed full run (``fits/social_meaning/full/run.json``)
  against the run at git revision ``--before`` (default: the last run before the levers), and of the
  trial runs in :data:`TRIALS` (manifests kept under ``results/runs/``); a run without ``cpu_time_s``
  counts its fits' wall times, each on one core, as its core seconds;
- the levers in this process, each against its anchor measured beside it: the human RSA fit's
  gradient at 81 and 41 quadrature nodes (one chain; four chains under ``vmap``), and (unless
  ``--no-compile``) the CPU seconds to compile the NUTS program of one chain and of four
  vectorized chains, for an LLM fit and the human fit, each in a fresh process;
- the draws: NUTS iterations of every fit (chains x (warm-up + draws)) under the two configs, and the
  iterations each run sampled (every basin's chains, from its run.json);
- the levers' shares: the fits' core seconds saved between the two runs, split by log ratio among the
  iterations, the rater nodes and the rest of each group's cost per iteration (:func:`share_rows`);
- with ``--fits``, whole fits of the full run (GPT ALT and the human RSA fit) in fresh processes, the
  chains vectorized and sequential: wall and CPU seconds, r_hat and ESS.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PRAGMODELS_DATA_DIR", str(ROOT.parent / "shared" / "data"))
#: the last full run and config before the levers (issue 38 item 1)
BEFORE = "429e692"
#: full runs measured but not committed as the study's result, their manifests kept under results/runs/
TRIALS = [
    {"run": "benchmarks/results/runs/social_meaning_2026-12-06T06-25.json",
     "what": "basins joined before sampling, human RSA warm-up 300",
     "note": "idle cores, cold cache; 14 of 15 fits at the standards: the motives link, topped up once to 800 "
             "draws (r_hat 1.018 at 400), tail ESS 353 for theta_z; not committed as the study's run"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-06T08-30.json",
     "what": "the run committed before, with the coverage check under misspecification in the job",
     "note": "idle cores, cold cache; the same 15 fits and seeds as the run after; the check (223 s of it) is now "
             "its own job (python -m models.social_meaning.esr_checks)"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-06T14-25.json",
     "what": "the run committed before, tail ESS at the 11%/89% quantiles (arviz-stats' default)",
     "note": "idle cores, cold cache, another machine (VM image fc-v1252); all 15 fits at the standards as then "
             "measured; at the 5%/95% quantiles four of them fall short on this machine (the trial of 17:57)"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-06T17-57.json",
     "what": "that config, tail ESS at 5%/95%, this machine",
     "note": "idle cores, cold cache; four fits refitted by top_up (human RSA r_hat 1.010, baseline 1.012, "
             "GPT ALT tail ESS 359, Claude COM 165): the refit round took 349 s; the config now gives them "
             "those draws (the run after)"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-06T18-22.json",
     "what": "the run committed before, the rater node table differentiated by autodiff",
     "note": "idle cores, cold cache; the same config, seeds and fits as the run after, all 15 at the standards; "
             "the run after differentiates the node table by hand (a human gradient 0.69-0.73x)"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-06T20-52.json",
     "what": "the run committed before, mass matrices adapted in NumPyro's windows",
     "note": "idle cores, cold cache; all 15 fits at the standards; the run after starts every fit's mass matrix "
             "from the Laplace approximation (mass_matrix='laplace'; GPT ALT still adapted) with shorter warm-ups"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-06T23-29.json",
     "what": "mass_matrix='laplace', 1,000 draws per LLM chain, 600 per human chain, the motives link adapted",
     "note": "cold cache, cores shared with a 5-minute test run during the human fits (their times are not "
             "comparable); all 15 fits at the standards with no refit; the draws of the run after are sized from "
             "its ESS per draw"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-06T23-59.json",
     "what": "the run committed before: starts searched eagerly, the LLM lapse mixed in two steps, the ESR "
             "measurement model and calibration after the fits",
     "note": "idle cores, cold cache; all 15 fits at the standards with no refit; the run after compiles the "
             "starts' search once, mixes the LLM lapse in one step, pads the LLM fits from the start and runs "
             "the ESR model beside the fits"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-07T01-44.json",
     "what": "the same code but the review's fixes (the forest's draws, padding keyed without JAX)",
     "note": "idle cores, cold cache; the same 15 fits, draw for draw, as the run after (identical ESS), "
             "which took 503 s an hour later: the spread between the two is this machine's"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-07T13-06.json",
     "what": "the committed config on the code of 2026-12-07 13:00 (the listener settled: 30ced10, ef430bb)",
     "note": "idle cores, cold cache, written to /tmp (not committed as the study's run); the listener's new "
             "rounding changed every fit's draws, and three fits sized to the ESS standard from the run before fell "
             "short (human motives ESS 374, Claude COM 15% at the depth cap, Gemini COM ESS 391, r_hat 1.011): "
             "first round 588 s, the refit round about 380 s. Item 1 is not met on this code until the draws are "
             "sized again"},
    {"run": "benchmarks/results/runs/social_meaning_2026-12-07T13-59.json",
     "what": "the draws sized again on that code (margin about 1.25 over the lowest ESS per draw on record)",
     "note": "idle cores, cold cache (a fresh machine); 13 of 15 fits at the standards in the first round, 385 s; "
             "Gemini KMA (one divergence) and Gemini COM (1% of trajectories at the depth cap) refitted, 40 s; "
             "the run after gives them those settings (target_accept 0.975; 600 warm-up iterations) and needs no "
             "refit"},
]


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _git_json(rev: str, path: str) -> dict:
    from benchmarks._results import git_show

    return json.loads(git_show(rev, path))


def job_rows(before: str) -> list[dict]:
    """Wall and core seconds of the two full runs."""
    rows = []
    for label, run in (("before", _git_json(before, "fits/social_meaning/full/run.json")),
                       ("after", json.loads((ROOT / "fits/social_meaning/full/run.json").read_text()))):
        fits = sum(float(f.get("wall_time_s") or 0.0) for f in run["fits"].values())
        cpu = run.get("cpu_time_s")
        rows.append({"part": "job", "case": f"{label}: make run ({run['started_at'][:10]})",
                     "wall_s": run["wall_time_s"], "core_s": cpu if cpu is not None else fits, "fits_core_s": fits,
                     "note": "core seconds measured (cpu_time_s)" if cpu is not None else
                     "core seconds = the fits' wall times, each on one core (no cpu_time_s recorded)"})
    for trial in TRIALS:
        run = json.loads((ROOT / trial["run"]).read_text())
        fits = sum(float(f.get("wall_time_s") or 0.0) for f in run["fits"].values())
        rows.append({"part": "job", "case": f"trial: {trial['what']} ({run['started_at'][:16]})",
                     "wall_s": run["wall_time_s"], "core_s": run["cpu_time_s"], "fits_core_s": fits,
                     "note": trial["note"]})
    for r in rows[1:]:
        r["ratio"] = r["wall_s"] / rows[0]["wall_s"]
        r["core_ratio"] = r["core_s"] / rows[0]["core_s"]
    return rows


def _human_spec(nodes: int):
    from models.social_meaning import rsa, study
    from pragmodels import datasets

    return study.fit_spec("human_rsa", "rsa", datasets.load_social_human(), True, 1, {}, "uniform",
                          rsa.PRIORS_SPEAKER, label="human", rater_nodes=nodes)


def _median_ms(fn, *args, n: int) -> float:
    import jax
    import numpy as np

    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(n):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return float(np.median(times) * 1e3)


def gradient_rows(repeats: int) -> list[dict]:
    """The human RSA fit's potential gradient: nodes x chain layout, in this process."""
    import jax
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.util import initialize_model

    rows = []
    for nodes in (81, 41):
        spec = _human_spec(nodes)
        info = initialize_model(jax.random.PRNGKey(0), spec.model, model_kwargs=spec.data, dynamic_args=False)
        flat, unravel = ravel_pytree(info.param_info.z)
        grad = jax.value_and_grad(lambda x: info.potential_fn(unravel(x)))  # noqa: B023 - used in this iteration
        four = flat + 0.01 * jax.random.normal(jax.random.PRNGKey(1), (4, flat.size))
        one_ms = _median_ms(jax.jit(grad), flat, n=repeats)
        four_ms = _median_ms(jax.jit(jax.vmap(grad)), four, n=repeats)
        rows += [{"part": "gradient", "case": f"human RSA, {nodes} nodes, 1 chain", "ms": one_ms},
                 {"part": "gradient", "case": f"human RSA, {nodes} nodes, 4 chains (vmap)", "ms": four_ms,
                  "note": f"{four_ms / one_ms:.2f}x one chain"}]
    anchor = rows[0]["ms"]
    for r in rows:
        r["ratio"] = r["ms"] / anchor
    return rows


_COMPILE = """
import json, resource, sys, time, warnings
import pragmodels as pm
from benchmarks.main_job import _compile_spec
spec = _compile_spec(sys.argv[1])
warnings.simplefilter("ignore")
t = time.perf_counter()
tree = pm.fit(spec.seed, spec.model, spec.data, progress_bar=False, priors=spec.priors, num_warmup=2, num_samples=2,
              num_chains=4, chain_method=sys.argv[2], init="median", posterior_predictive=False)
u = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"compile_wall_s": float(tree.attrs["compile_time_s"]), "process_cpu_s": u.ru_utime + u.ru_stime}))
"""


def _compile_spec(which: str):
    from models.social_meaning import rsa, study
    from pragmodels import datasets, metrics

    if which == "human":
        return _human_spec(41)
    llm = datasets.load_social_llm()
    frame = metrics.valid_ratings(llm[(llm.model == "gpt") & (llm.prompt == "MIN")]).frame
    return study.fit_spec("gpt_MIN_rsa", "rsa", frame, False, 10, {"dense_mass": True}, "uniform", rsa.PRIORS_SPEAKER,
                          label="gpt MIN")


def compile_rows() -> list[dict]:
    """CPU seconds of a fresh process that compiles one NUTS program (2 + 2 draws), per layout."""
    rows = []
    for which in ("llm", "human"):
        for method in ("vectorized", "sequential"):
            out = subprocess.run([sys.executable, "-c", _COMPILE, which, method], cwd=ROOT, check=True,
                                 capture_output=True, text=True).stdout.strip().splitlines()[-1]
            got = json.loads(out)
            rows.append({"part": "compile", "case": f"{which} fit, 4 chains {method}", **got})
        rows[-1]["ratio"] = rows[-1]["process_cpu_s"] / rows[-2]["process_cpu_s"]
    return rows


def _iteration_parts(sampler: dict) -> dict[str, tuple[int, int]]:
    """Each fit's NUTS iterations under a config: ``(chains x warm-up, chains x draws)``."""
    from models.social_meaning.study import FIT_LABELS, split_sampler

    out = {}
    for label in FIT_LABELS:
        settings = split_sampler(sampler, label)[0 if label.startswith("human") else 1]
        chains = settings.get("num_chains", 4)
        out[label] = (chains * settings.get("num_warmup", 1000), chains * settings.get("num_samples", 1000))
    return out


def _iterations(sampler: dict) -> dict:
    return {label: w + d for label, (w, d) in _iteration_parts(sampler).items()}


def draw_rows(before: str) -> list[dict]:
    """NUTS iterations per fit under the config before and now (human fits and LLM fits apart)."""
    old = _iterations(_git_json(before, "fits/social_meaning.json")["sampler"]["full"])
    new = _iterations(json.loads((ROOT / "fits/social_meaning.json").read_text())["sampler"]["full"])
    rows = []
    for group, pick in (("human fits", lambda k: k.startswith("human")), ("LLM fits", lambda k: not k.startswith("human"))):
        a, b = sum(v for k, v in old.items() if pick(k)), sum(v for k, v in new.items() if pick(k))
        rows.append({"part": "draws", "case": f"{group}: iterations (chains x (warm-up + draws))", "before": a,
                     "after": b, "ratio": b / a})
    return rows


def log_shares(before: float, after: float, ratios: list[float]) -> list[float]:
    """Split ``before - after`` among multiplicative levers, order-free: lever ``i`` (its ratio ``r_i``) gets
    ``(before - after) x log r_i / log(after / before)``, and the last entry is the rest, whose ratio is what the
    levers leave, ``after / (before x prod r_i)``. The entries sum to ``before - after``; a lever with ``r_i > 1``
    gets a negative share (it cost time)."""
    if before <= 0 or after <= 0 or any(r <= 0 for r in ratios):
        raise ValueError(f"core seconds and ratios must be positive, got {before}, {after}, {ratios}")
    rest = after / (before * math.prod(ratios))
    total = math.log(after / before)
    if total == 0:
        return [0.0] * (len(ratios) + 1)
    return [(before - after) * math.log(r) / total for r in [*ratios, rest]]


def share_rows(before: str, gradients: list[dict]) -> list[dict]:
    """Each lever's share of the fits' core seconds saved between the run before the levers and the committed
    run, split order-free by :func:`log_shares` within each group: the human fits' NUTS iterations (chains x
    (warm-up + draws), from the two configs: shorter warm-ups with the Laplace mass matrix, draws sized to the
    ESS standard; the row says how much of each), their rater nodes (the one-chain gradient at 41 against 81
    nodes, measured in this process) and the rest of their cost per iteration (chains sequential, the mass
    matrix's effect on tree sizes, starts and compiling: not separable from the runs' records); the LLM fits'
    iterations and the rest of theirs (the lapse mixed in one step, starts and programs compiled once, padding,
    tree sizes). Iterations are counted alike, though a warm-up iteration of the run before took several times
    a draw's leapfrog steps (``results/warmup.md``): the iterations' share is a lower bound of the warm-up's and
    the draws', the rest's an upper bound. Core seconds of a fit: its wall time, on one core (the run before
    recorded no ``cpu_time_s``)."""
    from models.social_meaning.study import LLM_LABELS

    runs = (_git_json(before, "fits/social_meaning/full/run.json"),
            json.loads((ROOT / "fits/social_meaning/full/run.json").read_text()))
    parts = (_iteration_parts(_git_json(before, "fits/social_meaning.json")["sampler"]["full"]),
             _iteration_parts(json.loads((ROOT / "fits/social_meaning.json").read_text())["sampler"]["full"]))
    groups = {"human fits": lambda k: k.startswith("human"), "LLM fits": lambda k: k in LLM_LABELS}
    grad = {r["case"]: r["ms"] for r in gradients}
    nodes = grad["human RSA, 41 nodes, 1 chain"] / grad["human RSA, 81 nodes, 1 chain"]
    core = {g: [sum(float(f["wall_time_s"]) for k, f in run["fits"].items() if pick(k)) for run in runs]
            for g, pick in groups.items()}
    saved_total = sum(b - a for b, a in core.values())
    rows = []
    for g, pick in groups.items():
        (w0, d0), (w1, d1) = ([sum(p[k][i] for k in p if pick(k)) for i in (0, 1)] for p in parts)
        iters = (w1 + d1) / (w0 + d0)
        levers = [(f"NUTS iterations (warm-up {w0:,} -> {w1:,}, draws {d0:,} -> {d1:,})", iters)]
        levers += [("41 rater nodes (gradient)", nodes)] if g == "human fits" else []
        b, a = core[g]
        shares = log_shares(b, a, [r for _, r in levers])
        rest_ratio = a / b / math.prod(r for _, r in levers)
        for (lever, r), saved in zip([*levers, ("the rest of the cost per iteration", rest_ratio)], shares, strict=True):
            rows.append({"part": "share", "case": f"{g}: {lever}", "before": b, "after": a, "ratio": r,
                         "note": f"{100 * saved / saved_total:.0f}% of the {saved_total:.0f} fit core seconds saved "
                                 f"({saved:.0f} s; the group's {b:.0f} -> {a:.0f} s split by log ratio)"})
    return rows


def _sampled(run: dict, sampler: dict) -> dict:
    """NUTS iterations each fit of a run sampled: its chains (every basin's, from ``attrs["basins"]`` as
    run.json records them; else the config's) x (warm-up + draws)."""
    out = {}
    iters = _iterations(sampler)
    for label, fit in run["fits"].items():
        if label not in iters:
            continue
        basins = fit.get("basins")
        out[label] = iters[label] * (sum(len(b["chains"]) for b in basins) / 4 if basins else 1)  # the config's 4
    return out


def sampled_rows(before: str) -> list[dict]:
    """NUTS iterations the two runs sampled, basins' extra chains included (human and LLM fits apart)."""
    old = _sampled(_git_json(before, "fits/social_meaning/full/run.json"),
                   _git_json(before, "fits/social_meaning.json")["sampler"]["full"])
    new = _sampled(json.loads((ROOT / "fits/social_meaning/full/run.json").read_text()),
                   json.loads((ROOT / "fits/social_meaning.json").read_text())["sampler"]["full"])
    trials = []
    for trial in TRIALS:
        run = json.loads((ROOT / trial["run"]).read_text())
        trials.append((trial, _sampled(run, run["config"]["sampler"]["full"])))
    rows = []
    for group, pick in (("human fits", lambda k: k.startswith("human")), ("LLM fits", lambda k: not k.startswith("human"))):
        a, b = sum(v for k, v in old.items() if pick(k)), sum(v for k, v in new.items() if pick(k))
        rows.append({"part": "sampled", "case": f"{group}: iterations sampled (every basin's chains)", "before": a,
                     "after": b, "ratio": b / a})
        for trial, it in trials:
            t = sum(v for k, v in it.items() if pick(k))
            rows.append({"part": "sampled", "case": f"{group}, trial: {trial['what']}", "before": a, "after": t,
                         "ratio": t / a, "note": "first attempts only (a top-up's refit not counted)"})
    return rows


_FIT = """
import json, resource, sys, time, warnings
import pragmodels as pm
from benchmarks.main_job import _fit_spec
spec = _fit_spec(sys.argv[1], sys.argv[2])
warnings.simplefilter("ignore")
t = time.perf_counter()
tree = pm.fit(spec.seed, spec.model, spec.data, progress_bar=False, priors=spec.priors, **spec.sampler)
wall = time.perf_counter() - t
u = resource.getrusage(resource.RUSAGE_SELF)
d = json.loads(tree.attrs["diagnostics"])
print(json.dumps({"wall_s": wall, "core_s": u.ru_utime + u.ru_stime, "compile_wall_s": float(tree.attrs["compile_time_s"]),
                  "max_rhat": d.get("max_rhat"), "min_ess_bulk": d.get("min_ess_bulk"),
                  "chains": sum(len(b["chains"]) for b in json.loads(tree.attrs["basins"])["basins"])}))
"""


def _fit_spec(which: str, method: str):
    """A whole fit of the full run (its config's settings and seed), with ``chain_method`` set."""
    from models.social_meaning import rsa, study
    from pragmodels import datasets, metrics

    config = json.loads((ROOT / "fits/social_meaning.json").read_text())
    sampler, seed = dict(config["sampler"]["full"], chain_method=method), config["seed"]
    if which == "human":
        return study.fit_spec("human_rsa", "rsa", datasets.load_social_human(), True, seed, sampler, "uniform",
                              rsa.PRIORS_SPEAKER, label="human", rater_nodes=config["rater_nodes"])
    llm = datasets.load_social_llm()
    frame = metrics.valid_ratings(llm[(llm.model == "gpt") & (llm.prompt == "ALT")]).frame
    i, j = datasets.LLMS.index("gpt"), datasets.PROMPTS.index("ALT")
    return study.fit_spec("gpt_ALT_rsa", "rsa", frame, False, seed + 10 + 4 * i + j, sampler, "uniform",
                          rsa.PRIORS_SPEAKER, label="gpt ALT")


def fit_rows() -> list[dict]:
    """Whole fits of the full run in fresh processes, the chains vectorized and sequential: wall and CPU."""
    rows = []
    for which in ("gpt ALT", "human"):
        for method in ("vectorized", "sequential"):
            out = subprocess.run([sys.executable, "-c", _FIT, which.split()[0] if which == "human" else "llm", method],
                                 cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
            rows.append({"part": "fit", "case": f"{which} fit, 4 chains {method}", **json.loads(out)})
        rows[-1]["ratio"] = rows[-1]["core_s"] / rows[-2]["core_s"]
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer gradient repeats")
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-time processes (about 4 minutes)")
    ap.add_argument("--before", default=BEFORE, help="git revision of the run before the levers")
    ap.add_argument("--fits", action="store_true",
                    help="also whole fits, chains vectorized and sequential (about 12 minutes on idle cores)")
    args = ap.parse_args(argv)
    from benchmarks._results import write_results

    load0 = _load()
    rows = job_rows(args.before) + draw_rows(args.before) + sampled_rows(args.before)
    gradients = gradient_rows(5 if args.quick else 30)
    rows += gradients + share_rows(args.before, gradients)
    if not args.no_compile:
        rows += compile_rows()
    if args.fits:
        rows += fit_rows()
    load1 = _load()
    for r in rows:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
    write_results(rows, "main_job", "The main job (make run) and issue 38's levers",
                  f"Load average (1, 5, 15 min) {load0} at the start, {load1} at the end. Before: git {args.before}.",
                  notes="`ratio`: against the first row of its part (job: before; gradient: 81 nodes, one chain; "
                        "compile and fit: vectorized, CPU; draws and sampled: before; share: the group's before -> after, "
                        "split by log ratio; the rater nodes' share rests on one process's gradient medians, 0.53-0.69x "
                        "in three runs on 2026-12-07, which moves about 10 points between it and the rest). Gradients are medians in one process; compile "
                        "figures are CPU seconds of a fresh process that imports, traces and compiles one program.")


if __name__ == "__main__":
    main()
