"""Wavelength fits: the hierarchical (per-item rationality) LM-RSA fit against the flat one, same run.

Usage: python -m benchmarks.wavelength_fits [--lm smollm2] [--warmup N] [--samples N] [--chains N] [--quick]

On the committed LM scores (``fits/wavelength/lm_scores/<lm>.nc``, every item the listener pass
has finished) and the real human guesses, fits with the study's models:

(a) flat LM-RSA (``lm_rsa_model``: alpha, beta, width, lapse, rounding), the baseline;
(b) LM-RSA with a rationality per item (``lm_rsa_by_item_model``: ``log alpha_i`` non-centred,
    plus beta, width, lapse, rounding).

Both use the same sampler settings (default 4 chains x 500 warm-up + 500 draws, target accept
0.9, the study's own), one after the other in one process. Reported per fit: wall time (compilation,
sampling, post-processing, from the fit's own timing attributes), the smallest bulk and tail ESS
over all parameters, bulk ESS per second of sampling, divergences, the largest r_hat, the share
of transitions that hit the tree-depth cap, and the hierarchical fit's cost relative to the
flat one (wall time ratio, ESS/s ratio). Writes benchmarks/results/wavelength_fits.csv and .md
(``_quick`` with ``--quick``: 12 items, 2 chains x 150 + 150).
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
import pragmodels as pm
from benchmarks._results import write_results
from models.wavelength import listeners, lm_scores
from pragmodels.datasets import load_wavelength


def _data(lm: str, n_items: int | None) -> dict[str, np.ndarray]:
    ds = lm_scores.load_scores(ROOT / "fits" / "wavelength" / "lm_scores" / f"{lm}.nc", need=["listener"])
    if n_items is not None:
        ds = ds.isel(item=slice(0, n_items))
    ids = ds["item"].to_numpy()
    long = load_wavelength(long=True)
    trials = long[long["item"].isin(ids)]
    index = {int(i): k for k, i in enumerate(ids)}
    mask = ds["utt_mask"].to_numpy().astype(bool)
    log_lm = np.where(mask[..., None], np.nan_to_num(ds["log_lm"].to_numpy(), nan=0.0), 0.0).astype(np.float32)
    return {"log_lm": log_lm, "utt_mask": mask, "item": trials["item"].map(index).to_numpy(np.int32),
            "guess": trials["guess"].to_numpy(np.int32)}


def _free_parameters(model, data) -> int:
    """Number of sampled (not derived, not observed) values in the model."""
    import jax
    from numpyro import handlers

    tr = handlers.trace(handlers.seed(model, jax.random.key(0))).get_trace(**data)
    return int(sum(np.size(s["value"]) for s in tr.values() if s["type"] == "sample" and not s["is_observed"]))


def _row(label: str, tree, n_params: int) -> dict:
    a = tree.attrs
    diag = json.loads(a["diagnostics"])
    stats = tree["sample_stats"]
    depth_cap = json.loads(a["sampler_settings"]).get("max_tree_depth", 10)
    at_cap = float((stats["tree_depth"] >= depth_cap).mean()) if "tree_depth" in stats else float("nan")
    return dict(fit=label, parameters=n_params, wall_s=float(a["wall_time_s"]), compile_s=float(a["compile_time_s"]),
                sampling_s=float(a["sampling_time_s"]), min_ess_bulk=diag["min_ess_bulk"],
                min_ess_tail=diag["min_ess_tail"], ess_bulk_per_s=diag["min_ess_bulk"] / float(a["sampling_time_s"]),
                divergences=diag["divergences"], max_rhat=diag["max_rhat"], share_at_depth_cap=at_cap,
                converged=bool(a["diagnostics_ok"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lm", default="smollm2")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.warmup, args.samples, args.chains = 150, 150, 2
    data = _data(args.lm, 12 if args.quick else None)
    n_item = data["log_lm"].shape[0]
    print(f"{args.lm}: {n_item} items, {data['guess'].size} guesses; load {os.getloadavg()}", flush=True)
    rows = []
    for label, model in (("flat LM-RSA", listeners.lm_rsa_model), ("LM-RSA, alpha by item", listeners.lm_rsa_by_item_model)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = pm.fit(0, model, data, num_warmup=args.warmup, num_samples=args.samples, num_chains=args.chains,
                          target_accept=0.9, progress_bar=False, posterior_predictive=False)
        n_params = _free_parameters(model, data)
        r = _row(label, tree, n_params)
        rows.append(r)
        print(f"{label:24s} {n_params:4d} params: wall {r['wall_s']:6.1f} s (sampling {r['sampling_s']:6.1f}), "
              f"min bulk ESS {r['min_ess_bulk']:7.1f}, ESS/s {r['ess_bulk_per_s']:6.2f}, r_hat {r['max_rhat']:.3f}, "
              f"divergences {r['divergences']}, at depth cap {r['share_at_depth_cap']:.1%}", flush=True)
    base = rows[0]
    for r in rows:
        r["wall_vs_flat"] = r["wall_s"] / base["wall_s"]
        r["ess_per_s_vs_flat"] = r["ess_bulk_per_s"] / base["ess_bulk_per_s"]
    print(f"load at the end {os.getloadavg()}", flush=True)
    write_results(rows, "wavelength_fits_quick" if args.quick else "wavelength_fits",
                  "Wavelength fits: per-item rationality against the flat LM-RSA fit",
                  f"LM scores: {args.lm}, {n_item} items, {data['guess'].size} human guesses; "
                  f"{args.chains} chains x {args.warmup} warm-up + {args.samples} draws, target accept 0.9, "
                  "one after the other in one process (machine shared with other work: read the ratios).")


if __name__ == "__main__":
    main()
