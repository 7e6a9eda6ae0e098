"""Fit overhead benchmark: compilation, repeat-fit wall time and memory of ``pm.fit``, new vs old.

Usage: python -m benchmarks.fit_overhead [--quick] [--baseline REV] [--cases bda,hier]
       python -m benchmarks.fit_overhead --profile-gradient [--quick]

Each case runs twice in the same run, each in a fresh worker process (2 CPU devices, no
persistent compilation cache):

- old: the MCMC-based ``fit`` (``numpyro.infer.MCMC``, ``arviz_base.from_numpyro`` with the
  pointwise log-likelihood), loaded from git: ``pragmodels/inference.py`` at the newest commit
  where it still builds ``MCMC(...)`` (or ``--baseline REV``); the rest of the package is the
  working tree's;
- new: the working tree's ``pm.fit`` (on :func:`pragmodels.inference.nuts.run_nuts`: one compiled
  program per model structure, static values, shapes and settings).

Cases

(a) reference-game BDA: alpha ~ LogNormal and one cost weight, fitted to production counts
    (utterances per state) and comprehension counts (states per utterance) with
    ``likelihoods.choice_counts``; 1 chain x (1,500 warm-up + 1,500 draws); 30 fits in one
    process, each with a new model object (``functools.partial``, as the factories make) and new
    counts of the same shape. Reported: first-call and repeat-call wall (median of fits 2-30),
    compile seconds (JAX's own trace + lowering + XLA compile events) and the rest, and RSS growth
    from fit 1 to fit 30.
(b) per-item hierarchical listener (``rsa_models.hierarchical_listener_model``, lapse fixed at 0;
    ``simulate.scale_listener_by_item``: 100 items x 40 responses, 21 states), 4 chains x
    (1,000 + 1,000), chain_method "parallel" (old: falls back to vectorized on 2 devices; new:
    2 chains per device) and, for the new code, "vectorized": first and repeat wall, min bulk ESS,
    ESS/s (over the repeat wall). Also the new fit on the previous model formulation
    (``previous_hierarchical_model``: vmapped agents, per-trial rows), to isolate the gain of the
    batch-last agents and the count-table potential.

Every fit computes the pointwise log-likelihood and diagnostics; none draws a posterior
predictive. Walls and CPU seconds (all threads) are both reported: on a shared machine the CPU
seconds move less. Writes benchmarks/results/fit_overhead.csv and .md.

``--profile-gradient``: CPU time of one value-and-gradient of (b)'s log density (100 and 1,600
items, one chain, one XLA thread), as NUTS runs it (count-table potential), per trial, and as the
previous model wrote it, against variants with the same value and gradient: the batch-last
agents (``agents.pragmatic_listener_batch``) or the
agents' safe log-sum-exp or plain ``jax.nn.log_softmax`` (the floor) or a custom-JVP safe
``log_normalize``, times the likelihood as a row gather (as ``likelihoods.choices(rows=...)``),
a scalar gather or a dense per-condition count table. Writes results/fit_overhead_gradient.*.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")


# ----------------------------------------------------------------------------- models and data


def reference_bda(log_semantics, cost_design, production, comprehension, *, depth: int = 1):
    """alpha ~ LogNormal(0.5, 1), cost_weight[1] ~ HalfNormal(2); cost = cost_design @ cost_weight.

    Shapes: ``log_semantics [utterance, state]``, ``cost_design [utterance, 1]``,
    ``production [state, utterance]`` counts, ``comprehension [utterance, state]`` counts.
    """
    import pragmodels as pm
    from pragmodels import agents
    from pragmodels.likelihoods.categorical import choice_counts

    alpha = pm.param("alpha", pm.Prior("LogNormal", loc=0.5, scale=1.0))
    w = pm.param("cost_weight", pm.Prior("HalfNormal", scale=2.0), dims={"cost_term": 1})
    cost = cost_design @ w
    log_s = agents.pragmatic_speaker(log_semantics, alpha, cost, depth=depth)  # [state, utterance]
    log_l = agents.pragmatic_listener(log_semantics, alpha, cost, depth=depth)  # [utterance, state]
    choice_counts("production", log_s, production, dim="state")
    choice_counts("comprehension", log_l, comprehension, dim="utterance")


def bda_data(seed: int, n: int = 40, alpha: float = 2.0, cost: float = 0.5) -> dict:
    import numpy as np

    from pragmodels import agents
    from pragmodels.semantics import boolean_semantics
    from pragmodels.simulate import REFERENCE_LEXICON

    rng = np.random.default_rng(seed)
    sem = boolean_semantics(REFERENCE_LEXICON)
    design = np.array([[0.0], [0.0], [1.0], [0.0]])  # only "square" costs
    c = design[:, 0] * cost
    p_s = np.exp(np.asarray(agents.pragmatic_speaker(sem, alpha, c), float))
    p_l = np.exp(np.asarray(agents.pragmatic_listener(sem, alpha, c), float))
    draw = lambda p: np.stack([rng.multinomial(n, row / row.sum()) for row in p])  # noqa: E731
    return dict(log_semantics=sem, cost_design=design, production=draw(p_s), comprehension=draw(p_l))


# ----------------------------------------------------------------------------- workers


def _cpu_s() -> float:
    """User + system CPU seconds of this process, all threads (less sensitive than wall time to
    other work on a shared machine)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def previous_hierarchical_model(log_semantics, item, utterance, choice=None, n_items=None):
    """The per-item listener as ``rsa_models.rsa_listener_by_item`` wrote it before the batch-last
    agents and the count-table potential (pragmodels 87ab14d): ``jax.vmap`` of
    ``pragmatic_listener`` over items ([item, utterance, state]) and one gathered row per trial."""
    import jax

    from pragmodels import agents
    from pragmodels.likelihoods.categorical import listener_choices
    from pragmodels.params import group_effect
    from pragmodels.rsa_models import DEFAULT_PRIORS

    alpha = group_effect("alpha", dim="item", size=n_items, loc=DEFAULT_PRIORS["alpha_mu"],
                         scale=DEFAULT_PRIORS["alpha_sigma"], link="exp")
    log_l = jax.vmap(lambda a: agents.pragmatic_listener(log_semantics, a))(alpha)
    return listener_choices("choice", log_l[item, utterance], choice)


def _fit_function(impl: str, baseline: str | None):
    if impl in ("new", "prev"):
        import pragmodels.inference.fitting as inf

        if "run_nuts" not in Path(inf.__file__).read_text():
            raise SystemExit("the working tree's pm.fit does not use pragmodels.inference.nuts.run_nuts")
        return inf.fit
    import importlib.util

    src = subprocess.run(["git", "show", f"{baseline}:pragmodels/inference.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"pragmodels_inference_{baseline[:12]}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("pragmodels._inference_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.fit


def worker(case: str, impl: str, quick: bool, baseline: str | None, method: str) -> dict:
    import pragmodels as pm

    pm.configure_host_devices(2)
    import jax
    from jax import monitoring

    compile_s = [0.0]

    def listener(name, duration, **kw):
        if name in COMPILE_EVENTS:
            compile_s[0] += duration

    monitoring.register_event_duration_secs_listener(listener)
    fit = _fit_function(impl, baseline)
    out: dict = dict(case=case, impl=impl, method=method, devices=jax.local_device_count())
    fits = []
    if case == "bda":
        n_fits, warm, draws = (5, 300, 300) if quick else (30, 1500, 1500)
        datasets = [bda_data(i) for i in range(n_fits)]
        rss0 = _rss_mb()
        for i in range(n_fits):
            model = functools.partial(reference_bda, depth=1)  # a new object each fit, as factories make
            c0, t0, u0 = compile_s[0], time.perf_counter(), _cpu_s()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = fit(i, model, datasets[i], num_warmup=warm, num_samples=draws, num_chains=1,
                           chain_method="vectorized", progress_bar=False, posterior_predictive=False)
            wall = time.perf_counter() - t0
            rec = dict(wall_s=wall, cpu_s=_cpu_s() - u0, compile_s=compile_s[0] - c0, rss_mb=_rss_mb(),
                       alpha=float(tree["posterior"]["alpha"].mean()))
            for k in ("compile_time_s", "sampling_time_s", "postprocessing_time_s"):
                if k in tree.attrs:
                    rec[k] = float(tree.attrs[k])
            fits.append(rec)
            del tree
        out.update(fits=fits, rss_start_mb=rss0, warmup=warm, draws=draws)
    else:
        from pragmodels.rsa_models import hierarchical_listener_model
        from pragmodels.simulate import scale_listener_by_item

        n_items, warm, draws = (20, 200, 200) if quick else (100, 1000, 1000)
        data, _ = scale_listener_by_item(0, n_items=n_items)
        for i in range(2):
            c0, t0, u0 = compile_s[0], time.perf_counter(), _cpu_s()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if impl == "prev":
                    tree = fit(i, previous_hierarchical_model, data, num_warmup=warm, num_samples=draws,
                               num_chains=4, chain_method=method, progress_bar=False, posterior_predictive=False)
                else:
                    tree = fit(i, hierarchical_listener_model(), data, num_warmup=warm, num_samples=draws,
                               num_chains=4, chain_method=method, progress_bar=False, posterior_predictive=False,
                               priors={"lapse": 0.0})
            wall = time.perf_counter() - t0
            diag = json.loads(tree.attrs["diagnostics"])
            ran = json.loads(tree.attrs["sampler_settings"])["chain_method"]
            fits.append(dict(wall_s=wall, cpu_s=_cpu_s() - u0, compile_s=compile_s[0] - c0, min_ess_bulk=diag["min_ess_bulk"],
                             max_rhat=diag["max_rhat"], divergences=diag["divergences"], ran=ran,
                             sampling_time_s=float(tree.attrs.get("sampling_time_s", float("nan"))),
                             load_after=os.getloadavg()[0]))
            del tree
        out.update(fits=fits, n_items=n_items, warmup=warm, draws=draws)
    return out


def profile_gradient(n_items_list=(100, 1600), rounds: int = 7) -> list[dict]:
    """CPU time of one value-and-gradient of the hierarchical listener's log density, against
    variants that compute the same value and gradient (one chain, one thread)."""
    import jax
    import jax.numpy as jnp
    import jax.scipy.stats as jst
    import numpy as np
    from numpyro.infer import init_to_median
    from numpyro.infer.util import initialize_model, potential_energy

    from pragmodels import agents
    from pragmodels.likelihoods.categorical import tabulate_potential
    from pragmodels.params import with_priors
    from pragmodels.rsa_models import hierarchical_listener_model
    from pragmodels.simulate import scale_listener_by_item

    out = []
    for n_items in n_items_list:
        data, _ = scale_listener_by_item(0, n_items=n_items)
        model = functools.partial(with_priors(hierarchical_listener_model(), {"lapse": 0.0}), n_items=n_items)
        arrays = {k: jnp.asarray(v) for k, v in data.items() if k != "n_items"}
        z = initialize_model(jax.random.key(0), model, model_kwargs=arrays, init_strategy=init_to_median()).param_info.z
        sem = arrays["log_semantics"]
        d = dict(sem=sem, item=arrays["item"], utt=arrays["utterance"], ch=arrays["choice"],
                 counts=jnp.zeros((n_items,) + sem.shape).at[arrays["item"], arrays["utterance"],
                                                            arrays["choice"]].add(1.0))

        def prior(z):  # as the model: Normal(0.5, 1) mu, HalfNormal(0.5) sigma (log scale), N(0, 1) z
            mu, log_sigma, zz = z["alpha_mu"], z["alpha_sigma"], z["alpha_z"]
            sigma = jnp.exp(log_sigma)
            lp = (jst.norm.logpdf(mu, 0.5, 1.0) + jst.norm.logpdf(sigma, 0.0, 0.5) + jnp.log(2.0) + log_sigma
                  + jst.norm.logpdf(zz).sum())
            return lp, jnp.exp(mu + sigma * zz)

        def table_agents(alpha, d):  # pragmodels.agents (safe log-sum-exp), vmapped over items
            return jax.vmap(lambda a: agents.pragmatic_listener(d["sem"], a))(alpha)

        def table_floor(alpha, d):  # plain jax.nn.log_softmax, masked where the semantics is false
            ok = d["sem"] > -jnp.inf
            l0 = jax.nn.log_softmax(d["sem"], axis=1)
            util = jnp.where(ok[None], alpha[:, None, None] * jnp.where(ok, l0, 0.0)[None], -jnp.inf)
            return jax.nn.log_softmax(jax.nn.log_softmax(util, axis=1), axis=2)

        @functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
        def safe_log_normalize(x, axis):  # as logmath.log_normalize (undefined rows -> -inf), custom JVP
            m = jnp.max(x, axis=axis, keepdims=True)
            m0 = jnp.where(m > -jnp.inf, m, 0.0)
            lse = jnp.log(jnp.sum(jnp.exp(x - m0), axis=axis, keepdims=True)) + m0
            return jnp.where((x > -jnp.inf) & (lse > -jnp.inf), x - lse, -jnp.inf)

        @safe_log_normalize.defjvp
        def _jvp(axis, primals, tangents):
            (x,), (t,) = primals, tangents
            out = safe_log_normalize(x, axis)
            live = out > -jnp.inf
            t = jnp.where(live, t, 0.0)
            return out, jnp.where(live, t - jnp.sum(jnp.exp(out) * t, axis=axis, keepdims=True), 0.0)

        def table_safe_jvp(alpha, d):  # the agents' recursion with that log_normalize
            ok = d["sem"] > -jnp.inf
            l0 = safe_log_normalize(d["sem"], 1)
            util = jnp.where(ok[None], alpha[:, None, None] * jnp.where(ok, l0, 0.0)[None], -jnp.inf)
            return safe_log_normalize(safe_log_normalize(util, 1), 2)

        def lik_rows(t, d):  # as likelihoods.choices(rows=(item, utterance)): rows, then the choice
            return jnp.take_along_axis(t[d["item"], d["utt"]], d["ch"][:, None], -1)[:, 0].sum()

        def lik_scalar(t, d):  # one scalar per trial
            return t[d["item"], d["utt"], d["ch"]].sum()

        def lik_dense(t, d):  # the per-condition count table
            return jnp.sum(jnp.where(d["counts"] > 0, d["counts"] * t, 0.0))

        prev = functools.partial(previous_hierarchical_model, n_items=n_items)
        d["countsT"] = jnp.moveaxis(d["counts"], 0, -1)  # [utterance, state, item]

        def table_batch(alpha, d):  # agents.pragmatic_listener_batch: [utterance, state, item]
            return agents.pragmatic_listener_batch(d["sem"], alpha)

        def lik_dense_t(t, d):
            return jnp.sum(jnp.where(d["countsT"] > 0, d["countsT"] * t, 0.0))

        fns = {"model potential (numpyro, as NUTS runs it)":
               (jax.jit(jax.value_and_grad(lambda z, a: potential_energy(tabulate_potential(model), (), a, z))), arrays),
               "model, per-trial potential (no count table)":
               (jax.jit(jax.value_and_grad(lambda z, a: potential_energy(model, (), a, z))), arrays),
               "previous model (87ab14d: vmap layout, per-trial rows)":
               (jax.jit(jax.value_and_grad(lambda z, a: potential_energy(prev, (), a, z))), arrays)}

        def pe_batch(z, d):
            lp, alpha = prior(z)
            return -(lp + lik_dense_t(table_batch(alpha, d), d))

        fns["batch-last agents + dense counts"] = (jax.jit(jax.value_and_grad(pe_batch)), d)
        for tname, tf in (("agents", table_agents), ("floor", table_floor),
                          ("agents, log_normalize with custom JVP", table_safe_jvp)):
            for lname, lf in (("row gather", lik_rows), ("scalar gather", lik_scalar), ("dense counts", lik_dense)):
                def pe(z, d, tf=tf, lf=lf):
                    lp, alpha = prior(z)
                    return -(lp + lf(tf(alpha, d), d))

                fns[f"{tname} + {lname}"] = (jax.jit(jax.value_and_grad(pe)), d)
        ref_v, ref_g = fns["model potential (numpyro, as NUTS runs it)"][0](z, arrays)
        n_calls = max(20, int(40_000 / n_items))
        times = {k: [] for k in fns}
        for f, a in fns.values():
            jax.block_until_ready(f(z, a))
        for _ in range(rounds):  # interleaved, so that other load on the machine hits every variant
            for k, (f, a) in fns.items():
                t0 = time.process_time()
                for _ in range(n_calls):
                    r = f(z, a)
                jax.block_until_ready(r)
                times[k].append((time.process_time() - t0) / n_calls)
        base = float(np.median(times["model potential (numpyro, as NUTS runs it)"]))
        for k, (f, a) in fns.items():
            v, g = f(z, a)
            med = float(np.median(times[k]))
            out.append(dict(n_items=n_items, n_trials=n_items * 40, variant=k, us_per_grad=med * 1e6,
                            vs_model=med / base, value_diff=float(v - ref_v),
                            max_grad_diff=max(float(jnp.abs(g[s] - ref_g[s]).max()) for s in g)))
            print(f"  {n_items:5d} items  {k:44s} {med * 1e6:9.1f} us  x{med / base:5.2f}  "
                  f"d value {out[-1]['value_diff']:+.1e}  max d grad {out[-1]['max_grad_diff']:.1e}", flush=True)
    return out


def run_worker(case, impl, quick, baseline, method="parallel") -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PRAGMODELS_COMPILATION_CACHE")}
    cmd = [sys.executable, __file__, "--worker", case, impl, method, "--baseline", baseline or ""]
    if quick:
        cmd.append("--quick")
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if res.returncode != 0:
        raise RuntimeError(f"worker {case}/{impl}/{method} failed:\n{res.stderr[-4000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"  {case}/{impl}/{method}: {time.perf_counter() - t0:.0f} s in the worker process", flush=True)
    return out


def baseline_commit() -> str:
    revs = subprocess.run(["git", "log", "--format=%H", "-n", "50", "--", "pragmodels/inference.py"], cwd=ROOT,
                          check=True, capture_output=True, text=True).stdout.split()
    for rev in revs:
        src = subprocess.run(["git", "show", f"{rev}:pragmodels/inference.py"], cwd=ROOT, capture_output=True,
                             text=True).stdout
        if "MCMC(" in src:
            return rev
    raise SystemExit("no commit of pragmodels/inference.py builds MCMC(...); pass --baseline REV")


# ----------------------------------------------------------------------------- report


def _median(xs):
    import numpy as np

    return float(np.median(xs)) if len(xs) else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline", default=None, help="git revision of the MCMC-based inference.py")
    ap.add_argument("--cases", default="bda,hier", help="comma-separated subset of bda,hier")
    ap.add_argument("--note", default="", help="a sentence added to the results header (e.g. how the run was started)")
    ap.add_argument("--profile-gradient", action="store_true",
                    help="time the hierarchical model's gradient against same-value variants instead")
    ap.add_argument("--worker", nargs=3, metavar=("CASE", "IMPL", "METHOD"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        case, impl, method = args.worker
        if case == "profile":
            print(json.dumps(profile_gradient((100,) if args.quick else (100, 1600))))
        else:
            print(json.dumps(worker(case, impl, args.quick, args.baseline or None, method)))
        return
    if args.profile_gradient:
        env = dict(os.environ, XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
        cmd = [sys.executable, __file__, "--worker", "profile", "-", "-"] + (["--quick"] if args.quick else [])
        res = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(res.stderr[-4000:])
        print(res.stdout.rsplit("\n", 2)[0])
        from benchmarks._results import write_results

        write_results(json.loads(res.stdout.strip().splitlines()[-1]),
                      "fit_overhead_gradient_quick" if args.quick else "fit_overhead_gradient",
                      "Gradient of the hierarchical listener's log density, by variant",
                      "CPU time of one jitted value-and-gradient (one chain, one XLA thread; median of 7 "
                      "interleaved rounds; the machine was shared with other work). Every variant computes the "
                      "same value (up to float32 rounding) and gradient as the model's potential.")
        return
    import pragmodels as pm

    pm.configure_host_devices(2)  # as the workers (the results header counts devices)
    baseline = args.baseline or baseline_commit()
    print(f"baseline (old fit): pragmodels/inference.py at {baseline[:10]}", flush=True)
    rows = []

    def row(case, metric, old, new, target="", met=None):
        ratio = new / old if (old not in (None, 0) and new is not None and old == old) else float("nan")
        r = dict(case=case, metric=metric, old=old, new=new, new_over_old=ratio, target=target,
                 met="" if met is None else ("yes" if met else "NO"))
        rows.append(r)
        print(f"{case:34s} {metric:44s} old {old if old is not None else float('nan'):9.3f}   "
              f"new {new if new is not None else float('nan'):9.3f}   x{ratio:6.3f}   {target} {r['met']}", flush=True)

    cases = set(args.cases.split(","))
    if "bda" in cases:
        bda_rows(args, baseline, row)
    if "hier" in cases:
        hier_rows(args, baseline, row)
    from benchmarks._results import write_results

    stem = ("fit_overhead_quick" if args.quick else "fit_overhead") + \
        ("" if cases == {"bda", "hier"} else "_" + "_".join(sorted(cases)))
    write_results(rows, stem, "Fit overhead: MCMC-based fit (old) vs the cached sampler (new)",
                  f"Old: pragmodels/inference.py at {baseline[:10]} (numpyro MCMC); new: the working tree's pm.fit "
                  "on pragmodels.inference.nuts. Each implementation in its own fresh process, 2 CPU devices, no persistent "
                  "compilation cache; compiling = JAX's trace + lowering + XLA compile events. The machine's 2 cores "
                  "were shared with other work while this ran, so walls are noisy (ratios from the same run)."
                  + (f" {args.note}" if args.note else ""))


def bda_rows(args, baseline, row):
    """(a) reference-game BDA."""
    bda = {impl: run_worker("bda", impl, args.quick, baseline) for impl in ("old", "new")}
    n_fits = len(bda["new"]["fits"])
    label = f"BDA 1 chain x {bda['new']['warmup']}+{bda['new']['draws']}"
    rep = {k: v["fits"][1:] for k, v in bda.items()}
    row(label, "first call wall (s)", bda["old"]["fits"][0]["wall_s"], bda["new"]["fits"][0]["wall_s"])
    row(label, "first call compiling (s)", bda["old"]["fits"][0]["compile_s"], bda["new"]["fits"][0]["compile_s"])
    new_rep = _median([f["wall_s"] for f in rep["new"]])
    row(label, f"repeat call wall, median of fits 2-{n_fits} (s)", _median([f["wall_s"] for f in rep["old"]]),
        new_rep, "<= 0.4 s incl. log-lik", new_rep <= 0.4)
    row(label, f"repeat call CPU time, median of fits 2-{n_fits} (s)", _median([f["cpu_s"] for f in rep["old"]]),
        _median([f["cpu_s"] for f in rep["new"]]))
    row(label, "repeat call compiling, median (s)", _median([f["compile_s"] for f in rep["old"]]),
        _median([f["compile_s"] for f in rep["new"]]))
    worst = max(f["compile_s"] for f in rep["new"])
    row(label, f"repeat call compiling, max over fits 2-{n_fits} (s)", max(f["compile_s"] for f in rep["old"]),
        worst, "< 0.2 s each", worst < 0.2)
    row(label, "repeat call, the rest (wall - compiling) (s)",
        _median([f["wall_s"] - f["compile_s"] for f in rep["old"]]),
        _median([f["wall_s"] - f["compile_s"] for f in rep["new"]]))
    if "sampling_time_s" in rep["new"][0]:
        row(label, "repeat call: of which sampling (new: run_nuts run_s) (s)", None,
            _median([f["sampling_time_s"] for f in rep["new"]]))
        row(label, "repeat call: log-lik + DataTree (new) (s)", None,
            _median([f["postprocessing_time_s"] for f in rep["new"]]))
    growth = {k: v["fits"][-1]["rss_mb"] - v["fits"][0]["rss_mb"] for k, v in bda.items()}
    row(label, f"RSS growth, fit 1 -> fit {n_fits} (MB)", growth["old"], growth["new"],
        "< 50 MB" if n_fits >= 30 else "", growth["new"] < 50 if n_fits >= 30 else None)
    row(label, "RSS after the last fit (MB)", bda["old"]["fits"][-1]["rss_mb"], bda["new"]["fits"][-1]["rss_mb"])
    row(label, "posterior mean alpha, last fit", bda["old"]["fits"][-1]["alpha"], bda["new"]["fits"][-1]["alpha"])



def hier_rows(args, baseline, row):
    """(b) hierarchical listener."""
    hier = {("old", "parallel"): run_worker("hier", "old", args.quick, baseline, "parallel"),
            ("prev", "parallel"): run_worker("hier", "prev", args.quick, baseline, "parallel"),
            ("new", "parallel"): run_worker("hier", "new", args.quick, baseline, "parallel"),
            ("new", "vectorized"): run_worker("hier", "new", args.quick, baseline, "vectorized")}
    h_old = hier[("old", "parallel")]
    for method in ("parallel", "vectorized"):
        h_new = hier[("new", method)]
        label = (f"hierarchical {h_new['n_items']} items, 4 x {h_new['warmup']}+{h_new['draws']}, "
                 f"{method} (old ran {h_old['fits'][1]['ran']}, new ran {h_new['fits'][1]['ran']})")
        row(label, "first call wall, compiling included (s)", h_old["fits"][0]["wall_s"], h_new["fits"][0]["wall_s"])
        row(label, "first call compiling (s)", h_old["fits"][0]["compile_s"], h_new["fits"][0]["compile_s"])
        rep_new = h_new["fits"][1]["wall_s"]
        row(label, "repeat call wall (s)", h_old["fits"][1]["wall_s"], rep_new,
            "<= 10 s" if method == "parallel" and not args.quick else "",
            rep_new <= 10 if method == "parallel" and not args.quick else None)
        row(label, "repeat call CPU time, both cores (s)", h_old["fits"][1]["cpu_s"], h_new["fits"][1]["cpu_s"])
        row(label, "repeat call compiling (s)", h_old["fits"][1]["compile_s"], h_new["fits"][1]["compile_s"])
        row(label, "min bulk ESS (repeat)", h_old["fits"][1]["min_ess_bulk"], h_new["fits"][1]["min_ess_bulk"])
        row(label, "min bulk ESS / repeat wall (1/s)", h_old["fits"][1]["min_ess_bulk"] / h_old["fits"][1]["wall_s"],
            h_new["fits"][1]["min_ess_bulk"] / rep_new)
        row(label, "max r_hat (repeat)", h_old["fits"][1]["max_rhat"], h_new["fits"][1]["max_rhat"])
        row(label, "1-min load average after the repeat call", h_old["fits"][1].get("load_after"),
            h_new["fits"][1].get("load_after"))
    h_prev, h_new = hier[("prev", "parallel")], hier[("new", "parallel")]
    label = (f"hierarchical {h_new['n_items']} items, parallel, same fit: previous model formulation "
             "(old column: vmap layout, per-trial row gather) vs batch-last agents + count-table potential (new)")
    for metric, key in (("repeat call wall (s)", "wall_s"), ("repeat call CPU time, both cores (s)", "cpu_s"),
                        ("repeat call sampling (s)", "sampling_time_s"), ("min bulk ESS (repeat)", "min_ess_bulk"),
                        ("max r_hat (repeat)", "max_rhat")):
        row(label, metric, h_prev["fits"][1][key], h_new["fits"][1][key])
    row(label, "min bulk ESS / repeat wall (1/s)", h_prev["fits"][1]["min_ess_bulk"] / h_prev["fits"][1]["wall_s"],
        h_new["fits"][1]["min_ess_bulk"] / h_new["fits"][1]["wall_s"])


if __name__ == "__main__":
    main()
