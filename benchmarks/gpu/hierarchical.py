"""Hierarchical fits on a GPU: the per-item listener at 100 / 1,000 / 10,000 items, and a batch of fits.

Usage (the device machine runs it through ``benchmarks/gpu/run.sh``)::

    python benchmarks/gpu/hierarchical.py [--sizes 100 1000 10000] [--quick] [--out DIR]

Model: :func:`pragmodels.rsa_models.hierarchical_listener_model` with the lapse fixed at 0 (as
``benchmarks/fit_speed.py``), on :func:`pragmodels.simulate.scale_listener_by_item` data: N items x
40 responses on a 21-state scale, 5 threshold utterances; ``alpha_mu``, ``alpha_sigma`` and
``alpha_z [item]`` are sampled (N + 2 parameters). NUTS through :func:`pragmodels.inference.nuts.run_nuts`
(the compiled program :func:`pragmodels.fit` uses; no ArviZ needed), 4 chains x 1,000 warm-up +
1,000 draws (``--quick``: 200 + 200), ``chain_method="vectorized"`` (all chains in one program on
one device: on a single GPU that is what ``"parallel"`` runs too).

Per size:

- first call: ``compile_s`` (``NutsRun.compile_s``), its sampling time and wall time;
- a second call with another seed (a cache hit: no compilation): wall time and ``run_s``;
- ESS/s: min bulk ESS over every sampled scalar (rank-normalised split-chain ESS, Vehtari et al.
  2021, computed with :func:`numpyro.diagnostics.effective_sample_size`) / ``run_s`` of the
  second call; max split R-hat; divergences; mean leapfrog steps per draw;
- per-gradient time: ``jax.jit(jax.grad(potential_energy))`` on the same data at an initial
  point, median of ``--grad-repeats`` calls with ``block_until_ready`` (one point, and vmapped
  over 4 points as the vectorised chains evaluate it); ``ms_per_leapfrog`` = ``run_s`` / (total
  iterations x mean over draws of the largest step count among the chains, since vectorised
  chains move in lockstep), an estimate (sampling-phase step counts stand in for warm-up's).

Batched fits ("the batched fit_many of item 7"): K = 12 data sets of the smallest size (new
seeds), fitted three ways with the same settings:

1. K ``run_nuts`` calls back to back (the first compiles, the rest are cache hits);
2. :func:`pragmodels.fit_batched` (when the installed pragmodels has it): the sampler's single-chain
   program vmapped over chains and data sets in one compiled run, each data set with its own
   step-size and mass-matrix adaptation (its ``sampling_time_s``; its wall time also includes
   building K DataTrees: pointwise log-likelihood, diagnostics);
3. one ``run_nuts`` on :func:`stacked_listener`, a model written here that stacks the K data sets
   along a leading ``dataset`` plate. The data sets are independent, so its posterior is the
   product of the K separate posteriors (the script checks that its potential energy equals the
   sum of the K library models' before timing), but NUTS adapts one step size and mass matrix and
   builds one tree for all K, so it takes as many steps as the hardest data set needs.

ESS is reported as the minimum over data sets and as the mean of the per-data-set minima.

Results: a section of ``benchmarks/results/gpu.md`` (and rows of ``gpu.csv``) named by the
backend (``--section``), rewritten after every size so that a run stopped at its time limit
keeps what it finished; with ``--out DIR`` also ``DIR/gpu_<section>.md`` and ``.csv`` (this run's
section) and copies of the updated ``gpu.md`` / ``gpu.csv`` (to copy back over ``benchmarks/results/``).
On a CPU the default sizes are the smallest only.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import platform
import re
import shlex
import sys
import time
from pathlib import Path

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin  # noqa: E402
from numpyro.infer.util import initialize_model, potential_energy  # noqa: E402

import pragmodels as pm  # run.sh installs it, or puts the checkout on PYTHONPATH
from pragmodels import agents  # noqa: E402
from pragmodels.inference.compile_cache import bound_model, clear_cache, split_data  # noqa: E402
from pragmodels.inference.nuts import run_nuts
from pragmodels.rsa_models import hierarchical_listener_model  # noqa: E402
from pragmodels.simulate import scale_listener_by_item  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
MODEL = hierarchical_listener_model(priors={"lapse": 0.0})
DEFAULT_SIZES = (100, 1000, 10000)


# ----------------------------------------------------------------------------- diagnostics


def bulk_ess(x: np.ndarray) -> np.ndarray:
    """Bulk ESS of ``x [chain, draw, *shape]``: split chains in halves, rank-normalise over all
    draws (``(rank - 3/8) / (S + 1/4)`` through the normal quantile, as ArviZ), then NumPyro's ESS.
    Returns ``[*shape]``."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    x = np.asarray(x, np.float64)
    n_chain, n_draw = x.shape[:2]
    half = n_draw // 2
    x = np.concatenate([x[:, :half], x[:, n_draw - half:]], axis=0)
    shape = x.shape
    flat = x.reshape(shape[0] * shape[1], -1)
    z = ndtri((rankdata(flat, axis=0) - 0.375) / (flat.shape[0] + 0.25))
    return np.asarray(effective_sample_size(z.reshape(shape))).reshape(shape[2:])


def summarise(run, sites=None) -> dict:
    """min bulk ESS, max split R-hat, divergences, step counts of a NutsRun."""
    sites = sites or run.latent_sites
    ess = min(float(np.min(bulk_ess(run.samples[s]))) for s in sites)
    rhat = max(float(np.max(split_gelman_rubin(np.asarray(run.samples[s], np.float64)))) for s in sites)
    steps = np.asarray(run.stats["n_steps"], np.float64)
    return dict(min_bulk_ess=ess, max_rhat=rhat, divergences=int(np.sum(run.stats["diverging"])),
                mean_steps=float(steps.mean()), lockstep_steps=float(steps.max(axis=0).mean()),
                n_params=int(sum(np.prod(run.samples[s].shape[2:], dtype=int) for s in sites)))


def time_gradient(model, data: dict, repeats: int, n_chains: int) -> dict:
    """Median wall time of a jitted ``jax.grad`` of the potential energy, at one point and
    vmapped over ``n_chains`` points (ms)."""
    static, arrays = split_data(data)
    bound = bound_model(model, static)
    z = initialize_model(jax.random.key(0), bound, model_kwargs=arrays).param_info.z

    def pe(z, arrays):
        return potential_energy(bound, (), arrays, z)

    grad1 = jax.jit(jax.grad(pe))
    gradn = jax.jit(jax.vmap(jax.grad(pe), in_axes=(0, None)))
    zn = jax.tree.map(lambda v: jnp.broadcast_to(v, (n_chains,) + v.shape) +
                      0.01 * jnp.arange(n_chains, dtype=v.dtype).reshape((-1,) + (1,) * v.ndim), z)
    out = {}
    for label, fn, point in (("grad_ms", grad1, z), (f"grad_x{n_chains}_ms", gradn, zn)):
        g = jax.block_until_ready(fn(point, arrays))  # compile
        if not all(bool(jnp.all(jnp.isfinite(v))) for v in jax.tree.leaves(g)):
            raise RuntimeError(f"{label}: the gradient is not finite at the initial point")
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(point, arrays))
            ts.append(time.perf_counter() - t0)
        out[label] = 1e3 * float(np.median(ts))
    return out


# ----------------------------------------------------------------------------- per size


def time_size(n_items: int, args) -> dict:
    data, _ = scale_listener_by_item(0, n_items=n_items, n_per_item=args.per_item, n_states=args.states)
    kw = dict(num_warmup=args.warmup, num_samples=args.samples, num_chains=args.chains,
              chain_method=args.chain_method)
    t0 = time.perf_counter()
    first = run_nuts(0, MODEL, data, **kw)
    first_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    second = run_nuts(1, MODEL, data, **kw)
    second_wall = time.perf_counter() - t0
    s = summarise(second)
    g = time_gradient(MODEL, data, args.grad_repeats, args.chains)
    iters = args.warmup + args.samples
    row = dict(items=n_items, trials=n_items * args.per_item, warmup=args.warmup, samples=args.samples,
               params=s["n_params"], ran_as=second.chain_method,
               compile_s=first.compile_s, first_wall_s=first_wall, first_run_s=first.run_s,
               cached_wall_s=second_wall, cached_run_s=second.run_s, cache_hit=second.cache_hit,
               min_bulk_ess=s["min_bulk_ess"], ess_per_s=s["min_bulk_ess"] / second.run_s,
               max_rhat=s["max_rhat"], divergences=s["divergences"], mean_steps=s["mean_steps"], **g,
               ms_per_leapfrog=1e3 * second.run_s / (iters * s["lockstep_steps"]))
    return row


# ----------------------------------------------------------------------------- count tables


def time_count_table(n_items: int, args) -> list[dict]:
    """The count table ``[utterance, state, item]`` of N items x ``per_item`` trials built three ways
    (scatter-add, ``segment_sum``, one-hot matmul in item-major layout: jax issues #38806 and #39959
    report scatter-add and ``segment_sum`` regressions on GPUs), and the likelihood's gradient with
    respect to the listener table through a per-trial gather (its VJP is a scatter-add) or through the
    dense count table (no scatter). Median ms of ``--grad-repeats`` jitted calls; every form is checked
    against the scatter's table (and gradient) first."""
    data, _ = scale_listener_by_item(0, n_items=n_items, n_per_item=args.per_item, n_states=args.states)
    n_u, n_s = np.shape(data["log_semantics"])
    item, utt, ch = (jnp.asarray(data[k], jnp.int32) for k in ("item", "utterance", "choice"))
    if not bool(jnp.all(item.reshape(n_items, args.per_item) == jnp.arange(n_items)[:, None])):
        raise RuntimeError("time_count_table: the item-major one-hot form needs the trials grouped by item")
    cells = n_u * n_s * n_items
    flat = (utt * n_s + ch) * n_items + item  # [utterance, state, item], item fastest
    local = (utt * n_s + ch).reshape(n_items, args.per_item)  # cell within its item, item-major

    def scatter(flat, local):
        return jnp.zeros(cells, jnp.float32).at[flat].add(1.0).reshape(n_u, n_s, n_items)

    def segment(flat, local):
        return jax.ops.segment_sum(jnp.ones(flat.shape, jnp.float32), flat, num_segments=cells).reshape(n_u, n_s, n_items)

    def one_hot(flat, local):
        oh = jax.nn.one_hot(local, n_u * n_s, dtype=jnp.float32)  # [item, trial, cell]
        per_item = jnp.einsum("t,itc->ic", jnp.ones(args.per_item, jnp.float32), oh)  # a batched matvec
        return per_item.T.reshape(n_u, n_s, n_items)

    table = jnp.asarray(np.random.default_rng(0).normal(size=(n_u, n_s, n_items)), jnp.float32)
    counts = scatter(flat, local)

    def gather_lik(t, flat):  # data passed as arguments (as the sampler passes them), not folded constants
        return jnp.square(t).reshape(-1)[flat].sum()

    def dense_lik(t, counts):
        return jnp.sum(counts * jnp.square(t))

    forms = {"count table: scatter-add": (jax.jit(scatter), (flat, local)),
             "count table: segment_sum": (jax.jit(segment), (flat, local)),
             "count table: one-hot matmul (item-major)": (jax.jit(one_hot), (flat, local)),
             "gradient: per-trial gather (scatter-add VJP)": (jax.jit(jax.grad(gather_lik)), (table, flat)),
             "gradient: dense count table": (jax.jit(jax.grad(dense_lik)), (table, counts))}
    rows = []
    for label, (fn, a) in forms.items():
        out = jax.block_until_ready(fn(*a))  # compile, and check against the scatter's table (or gradient)
        want = counts if label.startswith("count") else 2 * counts * table
        if not np.allclose(np.asarray(out), np.asarray(want), rtol=1e-5, atol=1e-5):
            raise RuntimeError(f"{label}: differs from the scatter-add count table (or its gradient)")
        ts = []
        for _ in range(args.grad_repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*a))
            ts.append(time.perf_counter() - t0)
        rows.append(dict(items=n_items, trials=n_items * args.per_item, cells=cells, form=label,
                         median_ms=1e3 * float(np.median(ts)), min_ms=1e3 * float(np.min(ts))))
    return rows


# ----------------------------------------------------------------------------- batched fits


class _NormalizedCategorical(dist.CategoricalLogits):
    """Categorical over already-normalised log-probabilities: ``log_prob`` is a gather (as the
    library's choice likelihood; ``dist.Categorical`` would renormalise every trial's row, a
    ``logsumexp`` whose gradient costs several times the rest of this model)."""

    def log_prob(self, value):
        idx = jnp.expand_dims(jnp.asarray(value, jnp.int32), -1)
        logits = jnp.broadcast_to(self.logits, jnp.shape(idx)[:-1] + self.logits.shape[-1:])
        return jnp.take_along_axis(logits, idx, axis=-1)[..., 0]


def stacked_listener(log_semantics, item, utterance, choice=None, n_items=None):
    """K independent copies of the per-item listener, stacked along a ``dataset`` plate.

    Shapes: ``log_semantics [utterance, state]`` (shared), ``item``, ``utterance``, ``choice``
    ``[dataset, trial]``. Per data set the same priors and likelihood as
    ``hierarchical_listener_model(priors={"lapse": 0.0})``: ``alpha_mu ~ Normal(0.5, 1)``,
    ``alpha_sigma ~ HalfNormal(0.5)``, ``alpha_z [item] ~ Normal(0, 1)``,
    ``alpha = exp(alpha_mu + alpha_sigma alpha_z)``, choices from the depth-1 pragmatic listener.
    Sites: ``alpha_mu``, ``alpha_sigma`` ``[dataset, 1]``, ``alpha_z [dataset, item]``.
    """
    n_sets, n_trials = item.shape
    datasets = numpyro.plate("dataset", n_sets, dim=-2)
    with datasets:
        mu = numpyro.sample("alpha_mu", dist.Normal(0.5, 1.0))
        sigma = numpyro.sample("alpha_sigma", dist.HalfNormal(0.5))
    with datasets, numpyro.plate("item", n_items, dim=-1):
        z = numpyro.sample("alpha_z", dist.Normal(0.0, 1.0))
    alpha = jnp.exp(mu + sigma * z)  # [dataset, item]
    log_l = jax.vmap(jax.vmap(lambda a: agents.pragmatic_listener(log_semantics, a)))(alpha)
    rows = log_l[jnp.arange(n_sets)[:, None], item, utterance]  # [dataset, trial, state]
    with datasets, numpyro.plate("trial", n_trials, dim=-1):
        numpyro.sample("choice", _NormalizedCategorical(rows, validate_args=False), obs=choice)


def _stack(sets: list[dict]) -> dict:
    sem = sets[0]["log_semantics"]
    if not all(np.array_equal(d["log_semantics"], sem) for d in sets):
        raise ValueError("stacked_listener needs one log_semantics shared by the data sets")
    return dict(log_semantics=sem, n_items=sets[0]["n_items"],
                **{k: np.stack([np.asarray(d[k]) for d in sets]) for k in ("item", "utterance", "choice")})


def check_stacked(sets: list[dict], stacked: dict) -> float:
    """|potential(stacked) - sum_k potential_k| at a random point (float32 rounding only)."""
    rng = np.random.default_rng(0)
    k, n = len(sets), sets[0]["n_items"]
    z = dict(alpha_mu=rng.normal(0.5, 0.5, (k, 1)), alpha_sigma=rng.normal(-1.0, 0.5, (k, 1)),
             alpha_z=rng.normal(0.0, 1.0, (k, n)))
    z = {s: jnp.asarray(v, jnp.float32) for s, v in z.items()}
    static, arrays = split_data(sets[0])
    bound = bound_model(MODEL, static)
    names = set(initialize_model(jax.random.key(0), bound, model_kwargs=arrays).param_info.z)
    if names != set(z):
        raise RuntimeError(f"the library model's sampled sites are {sorted(names)}, not {sorted(z)}: "
                           "update stacked_listener to match it")
    separate = 0.0
    for i, d in enumerate(sets):
        _, arr = split_data(d)
        zi = dict(alpha_mu=z["alpha_mu"][i, 0], alpha_sigma=z["alpha_sigma"][i, 0], alpha_z=z["alpha_z"][i])
        separate += float(potential_energy(bound, (), arr, zi))
    st_static, st_arrays = split_data(stacked)
    joint = float(potential_energy(bound_model(stacked_listener, st_static), (), st_arrays, z))
    diff = abs(joint - separate)
    if not diff <= 1e-4 * max(1.0, abs(separate)):
        raise RuntimeError(f"stacked potential {joint} != sum of separate potentials {separate}")
    return diff / max(1.0, abs(separate))


def _tree_summary(tree, sites) -> dict:
    """As :func:`summarise`, from a DataTree of :func:`pragmodels.fit_batched`."""
    post = tree["posterior"]
    vals = {site: np.asarray(post[site].values) for site in sites}
    stats = tree["sample_stats"]
    steps = np.asarray(stats["n_steps"].values, np.float64)
    return dict(min_bulk_ess=min(float(np.min(bulk_ess(v))) for v in vals.values()),
                max_rhat=max(float(np.max(split_gelman_rubin(np.asarray(v, np.float64)))) for v in vals.values()),
                divergences=int(np.sum(stats["diverging"].values)), mean_steps=float(steps.mean()),
                n_params=int(sum(np.prod(v.shape[2:], dtype=int) for v in vals.values())))


def _batched_row(mode, k, n_items, args, compile_s, wall_s, sampling_s, per_set: list[dict]) -> dict:
    return dict(mode=mode, datasets=k, items=n_items, warmup=args.batched_warmup, samples=args.batched_samples,
                params=sum(s["n_params"] for s in per_set), compile_s=compile_s, wall_s=wall_s,
                sampling_s=sampling_s, min_bulk_ess=min(s["min_bulk_ess"] for s in per_set),
                mean_dataset_min_ess=float(np.mean([s["min_bulk_ess"] for s in per_set])),
                max_rhat=max(s["max_rhat"] for s in per_set), divergences=sum(s["divergences"] for s in per_set),
                mean_steps=float(np.mean([s["mean_steps"] for s in per_set])))


MODES = ("separate", "fit_batched", "stacked")


def mode_kind(mode: str) -> str:
    return next((m for m in MODES if m in mode), mode)


def finish_batched(rows: list[dict]) -> list[dict]:
    """Order the rows by MODES and (re)compute ESS/s and the speedups against the separate fits."""
    rows = sorted(rows, key=lambda r: MODES.index(mode_kind(r["mode"])) if mode_kind(r["mode"]) in MODES else 9)
    sep = next((r for r in rows if mode_kind(r["mode"]) == "separate"), None)
    for r in rows:
        r["ess_per_s"] = r["min_bulk_ess"] / r["sampling_s"]
        r["sampling_speedup"] = sep["sampling_s"] / r["sampling_s"] if sep else float("nan")
        r["wall_speedup"] = sep["wall_s"] / r["wall_s"] if sep else float("nan")
    return rows


def time_batched(n_items: int, args, modes) -> list[dict]:
    """K separate run_nuts fits; pm.fit_batched on the K data sets; one run_nuts on the
    dataset-stacked model (those of ``modes`` asked for)."""
    import warnings

    k = args.datasets
    sets = [scale_listener_by_item(100 + i, n_items=n_items, n_per_item=args.per_item, n_states=args.states)[0]
            for i in range(k)]
    kw = dict(num_warmup=args.batched_warmup, num_samples=args.batched_samples, num_chains=args.chains)
    static, arrays = split_data(sets[0])
    sites = tuple(initialize_model(jax.random.key(0), bound_model(MODEL, static), model_kwargs=arrays).param_info.z)
    rows = []
    if "separate" in modes:
        clear_cache()  # so that the separate fits pay their one compile here, not in the size loop
        t0 = time.perf_counter()
        runs = [run_nuts(i, MODEL, d, chain_method=args.chain_method, **kw) for i, d in enumerate(sets)]
        wall = time.perf_counter() - t0
        rows.append(_batched_row(f"{k} separate run_nuts", k, n_items, args, sum(r.compile_s for r in runs), wall,
                                 sum(r.run_s for r in runs), [summarise(r) for r in runs]))
        print(f"   {fmt_row(rows[-1])}", flush=True)
    if "fit_batched" in modes:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # diagnostics warnings of short --quick chains
            trees = list(pm.fit_batched(0, MODEL, sets, posterior_predictive=False, **kw).values())
        wall = time.perf_counter() - t0
        a = trees[0].attrs
        rows.append(_batched_row(f"pm.fit_batched, {k} data sets", k, n_items, args, float(a["compile_time_s"]),
                                 wall, float(a["sampling_time_s"]), [_tree_summary(t, sites) for t in trees]))
        print(f"   {fmt_row(rows[-1])}", flush=True)
    if "stacked" in modes:
        stacked = _stack(sets)
        rel = check_stacked(sets, stacked)
        print(f"   stacked model: potential = sum of the {k} separate potentials (rel. diff {rel:.1e})", flush=True)
        t0 = time.perf_counter()
        run = run_nuts(0, stacked_listener, stacked, chain_method=args.chain_method, **kw)
        wall = time.perf_counter() - t0
        steps = float(np.asarray(run.stats["n_steps"], np.float64).mean())
        per_set = []
        for i in range(k):
            sub = {site: np.asarray(run.samples[site][:, :, i]) for site in run.latent_sites}
            per_set.append(dict(
                min_bulk_ess=min(float(np.min(bulk_ess(v))) for v in sub.values()),
                max_rhat=max(float(np.max(split_gelman_rubin(np.asarray(v, np.float64)))) for v in sub.values()),
                divergences=0, mean_steps=steps, n_params=int(sum(np.prod(v.shape[2:], dtype=int) for v in sub.values()))))
        per_set[0]["divergences"] = int(np.sum(run.stats["diverging"]))  # one joint trajectory for all sets
        rows.append(_batched_row(f"1 run_nuts, {k} stacked (joint adaptation)", k, n_items, args, run.compile_s,
                                 wall, run.run_s, per_set))
        print(f"   {fmt_row(rows[-1])}", flush=True)
    return rows


# ----------------------------------------------------------------------------- output


def _fmt(v) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}" if abs(int(v)) >= 10000 else str(int(v))
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.3g}"
    return str(v)


def fmt_row(row: dict) -> str:
    return ", ".join(f"{k} {_fmt(v)}" for k, v in row.items())


SIZE_COLS = ("items trials warmup samples params ran_as compile_s first_wall_s first_run_s cached_wall_s "
             "cached_run_s cache_hit min_bulk_ess ess_per_s max_rhat divergences mean_steps grad_ms grad_x4_ms "
             "ms_per_leapfrog").split()
BATCHED_COLS = ("mode datasets items warmup samples params compile_s wall_s sampling_s min_bulk_ess "
                "mean_dataset_min_ess max_rhat divergences mean_steps ess_per_s sampling_speedup wall_speedup").split()


def md_table(rows: list[dict], order: list[str] = ()) -> str:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    rank = {c: i for i, c in enumerate(order)}
    cols.sort(key=lambda c: rank.get(c, len(rank)))
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def machine_line() -> str:
    dev = jax.devices()[0]
    kind = getattr(dev, "device_kind", str(dev))
    return (f"{kind} ({jax.default_backend()}, {jax.local_device_count()} device(s)), {os.cpu_count()} CPU cores, "
            f"Python {platform.python_version()}, jax {jax.__version__}, numpyro {numpyro.__version__}, "
            f"pragmodels {pm.__version__}")


def render(section: str, title: str, args, sizes_rows, batched_rows, notes, count_rows=()) -> str:
    lines = [f"<!-- BEGIN section:{section} -->", f"## {title}", "",
             f"Machine: {machine_line()}. `{shlex.join(['hierarchical.py'] + args.argv)}`", "",
             f"{args.chains} chains (warm-up and draws per chain in the columns), "
             f"chain_method={args.chain_method}, {args.per_item} responses per item, {args.states} states.", ""]
    if sizes_rows:
        lines += [md_table(sizes_rows, SIZE_COLS), ""]
    if batched_rows:
        k = batched_rows[0]["datasets"]
        lines += [f"Batched fits: {k} data sets of {batched_rows[0]['items']} items each, fitted by {k} "
                  "`run_nuts` calls back to back (one compile, then cache hits); by `pm.fit_batched` (the "
                  "sampler's chain program vmapped over chains and data sets, each data set with its own "
                  "adaptation; its `wall_s` includes building the DataTrees); and by one `run_nuts` on the "
                  "`dataset`-stacked model written in the script (same posteriors, checked by potential "
                  "energy, but one step size, mass matrix and tree for all data sets).",
                  "", md_table(batched_rows, BATCHED_COLS), ""]
    if count_rows:
        lines += ["Count table (`time_count_table`): built by scatter-add, `segment_sum` or a one-hot matmul "
                  "(item-major), and the likelihood's gradient in the listener table through a per-trial gather "
                  "(a scatter-add VJP) or the dense count table. The sampler's potential builds the count "
                  "table from data only, so XLA hoists it out of the NUTS loops (checked on the CPU: one "
                  "scatter, in the entry computation); the gradient it differentiates has no scatter.",
                  "", md_table(list(count_rows), ["items", "trials", "cells", "form", "median_ms", "min_ms"]), ""]
    lines += [f"- {n}" for n in notes]
    lines += [f"<!-- END section:{section} -->"]
    return "\n".join(lines) + "\n"


HEADER = """# Hierarchical fits on a GPU (issue 8, item 8)

Written by `benchmarks/gpu/hierarchical.py` (run on a device machine through
`benchmarks/gpu/run.sh`; see `benchmarks/README.md`). One section per machine; each script run
rewrites its own section and its rows of `gpu.csv`.

Columns: `compile_s` = `NutsRun.compile_s` of the first call; `first_*` = that first call;
`cached_*` = a second call with another seed (no compilation); `ess_per_s` = min bulk ESS over
all sampled scalars / `cached_run_s`; `grad_ms` / `grad_x4_ms` = median jitted `jax.grad` of
the potential energy at one point / vmapped over 4; `ms_per_leapfrog` = `cached_run_s` per
lockstep leapfrog step of the 4 vectorised chains (estimate). Batched table: `wall_s` includes
compilation, `sampling_s` does not; speedups are against the separate fits.

"""


def write_section(path: Path, section: str, text: str) -> None:
    old = path.read_text() if path.exists() else HEADER
    pat = re.compile(rf"<!-- BEGIN section:{re.escape(section)} -->.*?<!-- END section:{re.escape(section)} -->\n?",
                     re.S)
    new = pat.sub(lambda _: text, old) if pat.search(old) else old.rstrip("\n") + "\n\n" + text
    path.write_text(new)


def _parse(v: str):
    if v in ("True", "False"):
        return v == "True"
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def load_rows(path: Path, section: str) -> tuple[list[dict], list[dict]]:
    """This section's (sizes, batched) rows from an earlier run's CSV."""
    if not path.exists():
        return [], []
    with path.open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("section") == section]
    out: dict[str, list[dict]] = {"sizes": [], "batched": []}
    for r in rows:
        out.setdefault(r.get("table", ""), []).append(
            {k: _parse(v) for k, v in r.items() if k not in ("section", "table") and v not in ("", None)})
    return out["sizes"], out["batched"]


def write_csv(path: Path, section: str, rows: list[dict], replace: bool = True) -> None:
    old = []
    if replace and path.exists():
        with path.open() as f:
            old = [r for r in csv.DictReader(f) if r.get("section") != section]
    rows = old + [{"section": section, **r} for r in rows]
    cols = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue())


# ----------------------------------------------------------------------------- main


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    on_gpu = jax.default_backend() not in ("cpu",)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=None,
                    help=f"items per fit (default {' '.join(map(str, DEFAULT_SIZES))} on a GPU, "
                         f"{DEFAULT_SIZES[0]} on a CPU; none: the batched part only)")
    ap.add_argument("--quick", action="store_true", help="200 warm-up + 200 draws, 4 data sets, 20 gradient repeats")
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--chain-method", default="vectorized", choices=("vectorized", "parallel", "sequential"))
    ap.add_argument("--per-item", type=int, default=40)
    ap.add_argument("--states", type=int, default=21)
    ap.add_argument("--grad-repeats", type=int, default=None)
    ap.add_argument("--datasets", type=int, default=None, help="K data sets of the batched comparison (12)")
    ap.add_argument("--batched-items", type=int, default=None, help="items per data set there (smallest size)")
    ap.add_argument("--batched-warmup", type=int, default=None, help="(default --warmup)")
    ap.add_argument("--batched-samples", type=int, default=None, help="(default --samples)")
    ap.add_argument("--no-batched", action="store_true")
    ap.add_argument("--no-count-table", action="store_true", help="skip the count-table comparison")
    ap.add_argument("--batched-modes", default=",".join(MODES),
                    help=f"which fits of the batched comparison to run (comma-separated of {','.join(MODES)})")
    ap.add_argument("--append", action="store_true",
                    help="keep this section's earlier rows (from gpu.csv) for the parts not run now "
                         "(sizes not in --sizes; batched modes not in --batched-modes)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="start no further size (or the batched part) after this many seconds")
    ap.add_argument("--section", default=None, help="section of gpu.md to rewrite (default: the backend)")
    ap.add_argument("--title", default=None)
    ap.add_argument("--results", default=str(RESULTS / "gpu.md"), help="markdown to update ('' for none)")
    ap.add_argument("--out", type=Path, default=None, help="also write gpu_<section>.md/.csv here")
    args = ap.parse_args(argv)
    args.argv = argv
    sizes = args.sizes if args.sizes is not None else (list(DEFAULT_SIZES) if on_gpu else [DEFAULT_SIZES[0]])
    args.warmup = args.warmup or (200 if args.quick else 1000)
    args.samples = args.samples or (200 if args.quick else 1000)
    args.grad_repeats = args.grad_repeats or (20 if args.quick else 100)
    args.datasets = args.datasets or (4 if args.quick else 12)
    args.batched_warmup = args.batched_warmup or args.warmup
    args.batched_samples = args.batched_samples or args.samples
    batched_items = args.batched_items or min(sizes or DEFAULT_SIZES[:1])
    section = args.section or ("gpu" if on_gpu else "cpu")
    dev = jax.devices()[0]
    title = args.title or (f"{getattr(dev, 'device_kind', 'GPU')}" if on_gpu else
                           f"CPU, {os.cpu_count()} cores, smallest size")
    print(f"== {machine_line()}; pragmodels from {Path(pm.__file__).parent}", flush=True)
    print(f"== sizes {sizes}, {args.chains} chains x {args.warmup} + {args.samples}, "
          f"batched: {'off' if args.no_batched else f'{args.datasets} x {batched_items} items'}", flush=True)
    modes = [m.strip() for m in args.batched_modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error(f"--batched-modes: unknown {unknown}; choose from {list(MODES)}")
    notes = []
    if "fit_batched" in modes and not callable(getattr(pm, "fit_batched", None)):
        modes.remove("fit_batched")
        notes.append("This pragmodels has no `fit_batched`: the batched table has the separate fits and the "
                     "stacked model only.")
    t_start = time.perf_counter()
    old_sizes, batched_rows = [], []
    if args.append and args.results:
        old_sizes, old_batched = load_rows(Path(args.results).with_suffix(".csv"), section)
        old_sizes = [r for r in old_sizes if r.get("items") not in sizes]
        run_modes = [] if args.no_batched else modes
        batched_rows = [r for r in old_batched if mode_kind(r.get("mode", "")) not in run_modes]
        if old_sizes or batched_rows:
            kept = ([f"sizes {[r.get('items') for r in old_sizes]}"] if old_sizes else []) + \
                   ([f"batched {[r.get('mode') for r in batched_rows]}"] if batched_rows else [])
            notes.append(f"Rows kept from an earlier run (`--append`): {'; '.join(kept)}.")
    new_sizes: list[dict] = []
    count_rows: list[dict] = []

    def all_sizes():
        return sorted(old_sizes + new_sizes, key=lambda r: r.get("items", 0))

    def flush():
        sizes_rows = all_sizes()
        text = render(section, title, args, sizes_rows, batched_rows, notes, count_rows)
        if args.results:
            results = Path(args.results)
            results.parent.mkdir(parents=True, exist_ok=True)
            write_section(results, section, text)
            write_csv(results.with_suffix(".csv"), section,
                      [{"table": "sizes", **r} for r in sizes_rows] + [{"table": "batched", **r} for r in batched_rows]
                      + [{"table": "count_table", **r} for r in count_rows])
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"gpu_{section}.md").write_text(text)
            write_csv(args.out / f"gpu_{section}.csv", section,
                      [{"table": "sizes", **r} for r in sizes_rows] + [{"table": "batched", **r} for r in batched_rows]
                      + [{"table": "count_table", **r} for r in count_rows], replace=False)
            if args.results:  # the whole updated files too: copy them over benchmarks/results/ here
                for f in (results, results.with_suffix(".csv")):
                    (args.out / f.name).write_text(f.read_text())

    def over_budget(what):
        el = time.perf_counter() - t_start
        if args.budget_s is not None and el > args.budget_s:
            notes.append(f"{what} skipped: {el:.0f} s elapsed > --budget-s {args.budget_s:g}.")
            print(f"   {notes[-1]}", flush=True)
            flush()
            return True
        return False

    if not args.no_count_table:  # cheap (seconds): before the fits, so that a budget cut keeps it
        for n in sizes:
            count_rows += time_count_table(n, args)
            for r in count_rows[-5:]:
                print(f"   count table {n} items: {r['form']}: {r['median_ms']:.3g} ms", flush=True)
        flush()
    for n in sizes:
        if over_budget(f"size {n}"):
            continue
        print(f"== {n} items x {args.per_item} ...", flush=True)
        row = time_size(n, args)
        new_sizes.append(row)
        print(f"   {fmt_row(row)}", flush=True)
        flush()
    if not args.no_batched and not over_budget("batched comparison"):
        print(f"== batched: {args.datasets} data sets x {batched_items} items ...", flush=True)
        batched_rows = finish_batched(batched_rows + time_batched(batched_items, args, modes))
    notes.append(f"Total script time {time.perf_counter() - t_start:.0f} s.")
    flush()
    print(f"== done in {time.perf_counter() - t_start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
