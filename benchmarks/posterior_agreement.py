"""Does a new run of the main job give the committed run's posteriors, within Monte Carlo error?

Usage: python -m benchmarks.posterior_agreement [--before REV] [--run fits/social_meaning/full]

Issue 38 (item 1) asks that the faster job give "the same posteriors as the committed run within Monte
Carlo error". The committed run keeps its tables, not its posteriors, so the check compares what the
tables hold: for every fit and key parameter (``parameters.csv``: alpha, the cost of the precise form,
the response noise, the lapse rate, theta_mu, and the noise per attribute), the posterior median and
the 3% and 97% quantiles, and the three human models' LOO ``elpd`` (``loo_compare.csv``).

- The new run's value and its MCSE come from its posteriors on disk (arviz-stats' ``mcse``, method
  "median" or "quantile"); each value is checked against the new run's own table first. The rows
  are the fits of ``parameters.csv`` (the baseline has none of these parameters); the noise per
  attribute has its median only.
- The old run's MCSE is not on record. It is approximated by the new one scaled by
  ``sqrt(ESS_new / ESS_old)``, with each run's least ESS of the fit as ``run.json`` records it (bulk
  for a median, tail for a 3% or 97% quantile): the two runs' ESS per draw differ (the code's rounding
  and three fits' warm-up or step-size settings changed between them), and a per-parameter ESS of the
  old run is not on record. The least ESS of a fit is at most its parameter's, so this overstates the
  old MCSE of most rows, and ``|z|`` is on the low side.
- ``z = (new - old) / sqrt(mcse_new^2 + mcse_old^2)``. Two runs of one posterior give ``|z| > 2``
  for about 5% of the rows and ``|z| > 3`` for about 0.3% (normal MCSE; the rows of one fit are
  correlated, so the share has a wide spread).
- An ``elpd``'s MCSE is estimated from the spread of the same LOO computed on the three ways to split
  the four chains into halves: each half has twice the full run's variance if the error falls as one
  over the square root of the draws, their difference four times, so the MCSE is half the root mean
  square difference. Three splits of four chains give the estimate about 3 degrees of freedom (its
  95% range about 0.6-3.7 times itself): read an elpd's ``z`` against a t distribution with 3 degrees
  of freedom (``|z| > 3.18`` for 5%). The halves' largest Pareto k is kept (``k_max``; above 0.7 the
  LOO of a half is unreliable).

Writes ``results/posterior_agreement.{csv,md}``.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._results import git_show

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PRAGMODELS_DATA_DIR", str(ROOT.parent / "shared" / "data"))
RUN = "fits/social_meaning/full"
#: (column suffix in parameters.csv, quantile)
STATS = (("", 0.5), ("_lo", 0.03), ("_hi", 0.97))
KEYS = ("alpha", "cost_precise", "noise", "lapse", "theta_mu")


def _ess(run: dict, label: str, q: float) -> float:
    """A fit's least ESS as its run recorded it: bulk for the median, tail for another quantile."""
    d = run["fits"][label]["diagnostics"]
    return float(d["min_ess_bulk"] if q == 0.5 else d["min_ess_tail"])


def z_score(new: float, old: float, mcse_new: float, ess_new: float, ess_old: float) -> float:
    """``(new - old) / sqrt(mcse_new^2 + mcse_old^2)``, the old run's MCSE taken as
    ``mcse_new x sqrt(ess_new / ess_old)``."""
    if not (ess_new > 0 and ess_old > 0 and mcse_new > 0):
        raise ValueError(f"ESS and MCSE must be positive, got ESS {ess_new}, {ess_old} and MCSE {mcse_new}")
    return (new - old) / math.hypot(mcse_new, mcse_new * math.sqrt(ess_new / ess_old))


def _mcse(da, q: float) -> float:
    from arviz_stats import mcse

    if q == 0.5:
        return float(mcse(da, method="median"))
    return float(mcse(da, method="quantile", prob=q))


def parameter_rows(before: str, run_dir: Path, old_run: dict, new_run: dict) -> list[dict]:
    import xarray as xr

    old_tab = pd.read_csv(io.StringIO(git_show(before, f"{RUN}/tables/parameters.csv"))).set_index("fit")
    new_tab = pd.read_csv(run_dir / "tables" / "parameters.csv").set_index("fit")
    if set(new_tab.index) != set(old_tab.index):
        raise ValueError(f"the two runs fitted different models: only the new run has "
                         f"{sorted(set(new_tab.index) - set(old_tab.index))}, only the old one "
                         f"{sorted(set(old_tab.index) - set(new_tab.index))}")
    rows = []
    for label in new_tab.index:
        post = xr.open_datatree(run_dir / new_run["fits"][label]["file"])["posterior"].to_dataset()
        cells = [(k, post[k]) for k in KEYS]
        if "noise_attribute" in post:
            cells += [(f"noise_{a}", post["noise_attribute"].sel(attribute=a))
                      for a in post["noise_attribute"]["attribute"].values]
        for name, da in cells:
            for suffix, q in STATS:
                col = name + suffix
                if col not in new_tab.columns:
                    continue
                new = float(np.quantile(da.values, q))
                if not math.isclose(new, float(new_tab.loc[label, col]), rel_tol=1e-4, abs_tol=1e-6):
                    raise RuntimeError(f"{label} {col}: the posterior gives {new}, its table {new_tab.loc[label, col]}")
                old = float(old_tab.loc[label, col])
                se_new = _mcse(da, q)
                rows.append({"part": "parameter", "fit": label, "quantity": col, "old": old, "new": new,
                             "mcse_new": se_new, "z": z_score(new, old, se_new, _ess(new_run, label, q),
                                                              _ess(old_run, label, q))})
    return rows


def elpd_rows(before: str, run_dir: Path, old_run: dict, new_run: dict) -> list[dict]:
    import xarray as xr
    from arviz_stats import loo

    old = pd.read_csv(io.StringIO(git_show(before, f"{RUN}/tables/loo_compare.csv")), index_col=0)
    new = pd.read_csv(run_dir / "tables" / "loo_compare.csv", index_col=0)
    label = {"rsa": "human", "rsa_motives": "human (motives link)", "baseline": "human baseline"}
    rows = []
    for model in new.index:
        tree = xr.open_datatree(run_dir / new_run["fits"][label[model]]["file"])
        if tree["posterior"].sizes["chain"] != 4:
            raise ValueError(f"{label[model]}: the split-chain MCSE needs 4 chains, the fit has "
                             f"{tree['posterior'].sizes['chain']}")
        halves = [loo(tree.isel(chain=c), pointwise=True) for c in ([0, 1], [2, 3], [0, 2], [1, 3], [0, 3], [1, 2])]
        d = [halves[i].elpd - halves[i + 1].elpd for i in (0, 2, 4)]
        se_new = float(np.sqrt(np.mean(np.square(d))) / 2)
        rows.append({"part": "elpd", "fit": label[model], "quantity": "elpd_loo", "old": float(old.loc[model, "elpd"]),
                     "new": float(new.loc[model, "elpd"]), "mcse_new": se_new,
                     "z": z_score(float(new.loc[model, "elpd"]), float(old.loc[model, "elpd"]), se_new,
                                  _ess(new_run, label[model], 0.5), _ess(old_run, label[model], 0.5)),
                     "k_max": float(max(np.max(h.pareto_k) for h in halves))})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default="HEAD", help="git revision of the committed run to compare with (default "
                    "HEAD: before the new run is committed; after, name the revision before it, e.g. 8d5cc84)")
    ap.add_argument("--run", default=RUN, help="the new run folder, with its posteriors")
    args = ap.parse_args(argv)
    import warnings

    from benchmarks._results import write_results

    run_dir = ROOT / args.run
    old_run = json.loads(git_show(args.before, f"{RUN}/run.json"))
    new_run = json.loads((run_dir / "run.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = (parameter_rows(args.before, run_dir, old_run, new_run)
                + elpd_rows(args.before, run_dir, old_run, new_run))
    z = np.abs([r["z"] for r in rows if r["part"] == "parameter"])
    worst = max((r for r in rows if r["part"] == "parameter"), key=lambda r: abs(r["z"]))
    summary = (f"{len(z)} parameter rows: |z| > 2 for {np.mean(z > 2):.1%} (about 5% expected), |z| > 3 for "
               f"{np.mean(z > 3):.1%} (about 0.3%); largest |z| {abs(worst['z']):.2f} ({worst['fit']}, {worst['quantity']}). "
               + "; ".join(f"{r['fit']} elpd {r['old']:.2f} -> {r['new']:.2f} (z {r['z']:.2f})"
                           for r in rows if r["part"] == "elpd") + " (elpd: read z against t with 3 degrees of freedom).")
    print(summary)
    rev = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    write_results(rows, "posterior_agreement", "The main job's posteriors against the committed run's",
                  f"Old: git {rev} ({old_run['started_at'][:16]}, config {old_run['config_sha256'][:12]}); "
                  f"new: {args.run} ({new_run['started_at'][:16]}, config {new_run['config_sha256'][:12]}).",
                  notes=summary + " How the MCSEs are found: this script's docstring.")


if __name__ == "__main__":
    main()
