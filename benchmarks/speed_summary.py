"""Issue 38's figures in one table, read from the benchmarks' own results (no measurement here).

Usage: python -m benchmarks.speed_summary

Each row: the figure, before and after, the ratio against its anchor (measured in the same run by
the script named in ``source``), the target and whether it is met, and the load while it ran, as
that script recorded it. Writes ``results/speed_summary.{csv,md}``. Rerun the source scripts first
(their own docstrings say how); this one only gathers.
"""

from __future__ import annotations

import pandas as pd

from benchmarks._results import RESULTS

#: the main job's target (issue 38 item 1): 10 minutes wall on 2 idle cores, cold compilation cache
JOB_TARGET_S = 600.0
#: the 100-item hierarchical fit's target (item 2)
HIER_TARGET_S = 5.0


def _csv(stem: str) -> pd.DataFrame:
    return pd.read_csv(RESULTS / f"{stem}.csv")


def job_rows() -> list[dict]:
    """The main job: the run before the levers against the committed run and each trial."""
    df = _csv("main_job")
    jobs = df[df["part"] == "job"].reset_index(drop=True)
    before = jobs.iloc[0]
    rows = []
    for _, r in jobs.iloc[1:].iterrows():
        rows.append({"item": "1 main job", "figure": f"make run wall (s): {r['case']}", "before": before["wall_s"],
                     "after": r["wall_s"], "ratio": r["ratio"], "target": f"<= {JOB_TARGET_S:.0f} s",
                     "met": "yes" if r["wall_s"] <= JOB_TARGET_S else "no", "load": "see note",
                     "note": r["note"], "source": "main_job.py"})
        rows.append({"item": "1 main job", "figure": f"make run core seconds: {r['case']}", "before": before["core_s"],
                     "after": r["core_s"], "ratio": r["core_ratio"], "target": "", "met": "", "load": "see note",
                     "note": "", "source": "main_job.py"})
    grad = df[df["part"] == "gradient"].set_index("case")
    one81, one41 = grad.loc["human RSA, 81 nodes, 1 chain", "ms"], grad.loc["human RSA, 41 nodes, 1 chain", "ms"]
    rows.append({"item": "1 main job", "figure": "human RSA gradient (ms), 81 -> 41 rater nodes", "before": one81,
                 "after": one41, "ratio": one41 / one81, "target": "", "met": "", "load": "main_job.md header",
                 "note": "one chain, median in one process", "source": "main_job.py"})
    comp = df[df["part"] == "compile"].set_index("case")
    for which in ("llm", "human"):
        v, s = (comp.loc[f"{which} fit, 4 chains {m}", "process_cpu_s"] for m in ("vectorized", "sequential"))
        rows.append({"item": "1 main job", "figure": f"{which} fit compile CPU (s), vectorized -> sequential",
                     "before": v, "after": s, "ratio": s / v, "target": "", "met": "", "load": "main_job.md header",
                     "note": "fresh process, 4 chains", "source": "main_job.py"})
    return rows


def hier_rows() -> list[dict]:
    """The hierarchical listener: the 100-item fit and the cost per item at the largest size."""
    df = _csv("hier_scaling")
    fit = df[df["kind"].astype(str).str.startswith("fit")].set_index("variant")
    b, a = fit.loc["before"], fit.loc["after"]
    load = f"{min(b['load_min'], a['load_min']):.1f}-{max(b['load_max'], a['load_max']):.1f}"
    rows = [{"item": "2 hierarchical", "figure": "100 items x 40, 4 x (1,000 + 1,000), repeat fit wall (s)",
             "before": b["fit_repeat_wall_s"], "after": a["fit_repeat_wall_s"],
             "ratio": a["fit_repeat_wall_s"] / b["fit_repeat_wall_s"], "target": f"<= {HIER_TARGET_S:.0f} s",
             "met": "yes" if a["fit_repeat_wall_s"] <= HIER_TARGET_S else "no", "load": load, "note": "",
             "source": "hier_scaling.py --fit"}]
    loop = df[df["kind"] == "per leapfrog"]
    top = int(loop["n_items"].max())
    for variant in ("before", "after"):
        r = loop[(loop["variant"] == variant) & (loop["n_items"] == top)].iloc[0]
        rows.append({"item": "2 hierarchical", "figure": f"CPU ns per item per leapfrog at {top:,} items ({variant} form) "
                     "against 100 items", "before": float(loop[(loop["variant"] == variant)
                                                             & (loop["n_items"] == 100)]["cpu_ns_per_item"].iloc[0]),
                     "after": r["cpu_ns_per_item"], "ratio": r["per_item_vs_anchor"], "target": "1 (linear)",
                     "met": "see note", "load": f"{r['load_min']:.1f}-{r['load_max']:.1f}",
                     "note": "the rise is the cache hierarchy, not the scatter or the layout (hier_scaling.md)"
                     if variant == "after" else "", "source": "hier_scaling.py"})
    blocks = _csv("hier_blocks")
    top = int(blocks["n_items"].max())
    for chains, by in blocks[(blocks["n_items"] == top)].groupby("chains"):
        old = by[by["variant"] == "blocks of 512, whole up to 512"].iloc[0]
        new = by[by["shipped"].astype(str) == "True"].iloc[0]
        rows.append({"item": "2 hierarchical", "figure": f"CPU us per leapfrog at {top:,} items, {chains} chain(s) per "
                     f"program: {old['variant']} -> {new['variant']}", "before": old["loop_cpu_us"],
                     "after": new["loop_cpu_us"], "ratio": new["vs_anchor"], "target": "", "met": "",
                     "load": f"{new['load_min']:.1f}-{new['load_max']:.1f}", "note": "item blocks (hier_blocks.md)",
                     "source": "hier_scaling.py --blocks"})
    return rows


def listener_rows() -> list[dict]:
    """The listener against the plain-JAX floor at the largest sizes, depth 1."""
    df = _csv("listener_table")
    rows = []
    for n in sorted(df["n"].unique())[-2:]:
        r = df[(df["n"] == n) & (df["depth"] == 1)].iloc[0]
        for what, col in (("general", "pragmodels_ms"), ("boolean=True", "boolean_ms")):
            ratio = r[col] / r["floor_ms"]
            rows.append({"item": "3 listener", "figure": f"{n}x{n} depth 1, {what} (ms) against the floor",
                         "before": r["floor_ms"], "after": r[col], "ratio": ratio, "target": "<= 1 (floor)",
                         "met": "yes" if ratio <= 1.0 else "no", "load": f"{r['load_avg_1min']:.1f}", "note": "",
                         "source": "listener_table.py"})
    return rows


def overhead_rows() -> list[dict]:
    """A repeat fit (kept, issue 38's opening)."""
    df = _csv("fit_overhead")
    r = df[df["metric"].str.startswith("repeat call wall")].iloc[0]
    return [{"item": "kept", "figure": f"repeat fit wall (s), {r['case']}", "before": r["old"], "after": r["new"],
             "ratio": r["new_over_old"], "target": r["target"], "met": r["met"], "load": "fit_overhead.md header",
             "note": "before: NumPyro's MCMC, which recompiles per run", "source": "fit_overhead.py"}]


def warmup_rows() -> list[dict]:
    """The mass matrix: windowed adaptation (before) against mass_matrix='laplace' (after), per case."""
    df = _csv("warmup")
    rows = []
    for case, g in df.groupby("case", sort=False):
        a, lp = (g[g["mass_matrix"] == m].iloc[0] for m in ("adapt", "laplace"))
        for figure, col in (("bulk ESS per second (no compile)", "ess_per_s"), ("fit wall (s)", "wall_s"),
                            ("leapfrog steps per warm-up iteration", "leapfrogs_per_warmup_iteration")):
            rows.append({"item": "1 warm-up", "figure": f"{case} fit, mass matrix adapt -> laplace: {figure}",
                         "before": a[col], "after": lp[col], "ratio": lp[col] / a[col], "target": "", "met": "",
                         "load": lp["load"], "note": f"draws {a['num_samples']} -> {lp['num_samples']} per chain",
                         "source": "warmup.py"})
    return rows


def start_rows() -> list[dict]:
    """The optimised starts (NumPyro's search for valid starts eager -> compiled) and the LLM likelihood's
    lapse (two steps -> one), each against its anchor in one process."""
    rows = []
    ms = _csv("multistart")
    for case, g in ms.groupby("case", sort=False):
        before, after = g.iloc[0], g.iloc[1]
        for what, col in (("later calls", "later_call_s"), ("first call", "first_call_s")):
            rows.append({"item": "1 starts", "figure": f"{case}: optimised starts (16 x 2,000 Adam steps), {what} (s), "
                         "starts searched eagerly -> compiled", "before": before[col], "after": after[col],
                         "ratio": after[col] / before[col], "target": "", "met": "", "load": after["load"],
                         "note": "same keys, same end points", "source": "multistart.py"})
    lk = _csv("likert_lapse")
    two, one = (lk[lk["form"] == f].iloc[0] for f in ("two steps", "one step"))
    rows.append({"item": "1 likelihood", "figure": "LLM model (gpt MIN) value and gradient (us), lapse mixed in two "
                 "steps -> one", "before": two["us_per_gradient"], "after": one["us_per_gradient"],
                 "ratio": one["us_per_gradient"] / two["us_per_gradient"], "target": "", "met": "", "load": one["load"],
                 "note": f"compiled loop; potentials within {one['max_abs_potential_diff']:.1g} nats",
                 "source": "likert_lapse.py"})
    return rows


def chain_method_rows() -> list[dict]:
    """fit's default chain method on one CPU device: sequential (after) against vectorized (before)."""
    df = _csv("chain_method")
    rows = []
    for (model, chains), g in df.groupby(["model", "chains"], sort=False):
        v, s = (g[g["method"] == m].iloc[0] for m in ("vectorized", "sequential"))
        for what, col in (("first fit", "first_wall_s"), ("repeat fit", "repeat_wall_s")):
            rows.append({"item": "1 compile", "figure": f"{what} wall (s), {model}, {chains} chains, one CPU device: "
                         "default chain_method vectorized -> sequential", "before": v[col], "after": s[col],
                         "ratio": s[col] / v[col], "target": "", "met": "", "load": s["load"],
                         "note": "fresh process, no persistent compilation cache", "source": "chain_method.py"})
    return rows


def listener_form_rows() -> list[dict]:
    """The general listener's forms tried (``listener_forms.py``): each against the floor, same process."""
    df = _csv("listener_forms")
    rows = []
    for _, r in df[df["form"] != "floor"].iterrows():
        floor = df[(df["n"] == r["n"]) & (df["form"] == "floor")].iloc[0]
        rows.append({"item": "3 listener forms", "figure": f"{r['n']}x{r['n']} depth 1, general: {r['form']} (ms)",
                     "before": floor["ms"], "after": r["ms"], "ratio": r["over_floor"], "target": "<= 1 (floor)",
                     "met": "yes" if r["over_floor"] <= 1.0 else "no", "load": r["load"],
                     "note": {"pragmodels": "shipped", "before": "shipped until 2026-12-07"}.get(r["form"],
                                                                                           "probe, not shipped"),
                     "source": "listener_forms.py"})
    return rows


def main() -> None:
    from benchmarks._results import write_results

    rows = (job_rows() + warmup_rows() + start_rows() + chain_method_rows() + hier_rows() + listener_rows()
            + listener_form_rows() + overhead_rows())
    for r in rows:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
    write_results(rows, "speed_summary", "Issue 38 in one table",
                  "Gathered from the benchmarks' own CSVs by `python -m benchmarks.speed_summary` (nothing is measured "
                  "here); each row's source script measured its before and after in the same run.",
                  notes="`ratio`: after / before. Item 4 (install and CI) is measured by hand and recorded in the "
                        "README's set-up section, not in a CSV.")


if __name__ == "__main__":
    main()
