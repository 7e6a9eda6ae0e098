"""``fit``'s chain methods on the CPU: compile time, first and repeat fits, each in a fresh process.

Usage: python -m benchmarks.chain_method [--quick]

Why: :func:`pragmodels.inference.fitting.default_chain_method` picks ``"sequential"`` on one CPU
device (it picked ``"vectorized"`` before). This measures that choice against the other two, each
case in a fresh worker process without a persistent compilation cache (a first fit compiles, as it
does in a new notebook or test process):

- ``sequential`` and ``vectorized`` on one CPU device, ``parallel`` on two (``configure_host_devices(2)``,
  the chains split over them);
- two models: the docs' reference-game speaker (``rsa_models.speaker_model``, ``simulate.reference_game_speaker``,
  a small gradient) and the per-item hierarchical listener (``rsa_models.hierarchical_listener_model``,
  ``simulate.scale_listener_by_item``, 100 items x 40 responses: a gradient of about a millisecond);
- 2 and 4 chains, 500 warm-up + 500 draws (``--quick``: 200 + 200, speaker only).

Reported per case: the first fit's wall and CPU seconds and its compile seconds (``attrs["compile_time_s"]``),
the repeat fit's wall (new data, same shapes: no compile) and its sampling seconds, the least bulk ESS of the
repeat fit, and the ratios of first and repeat wall against ``vectorized`` on one device in the same run.
Writes ``results/chain_method.{csv,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORKER = r"""
import json, sys, time
method, devices, chains, model_name, warm, draws = sys.argv[1:7]
from pragmodels.runtime import configure_host_devices
configure_host_devices(int(devices))
import pragmodels as pm
from pragmodels import simulate
from pragmodels.rsa_models import hierarchical_listener_model, speaker_model

if model_name == "speaker":
    model = speaker_model()
    data = [simulate.reference_game_speaker(1, alpha=3.0), simulate.reference_game_speaker(2, alpha=1.0)]
else:
    model = hierarchical_listener_model(priors={"lapse": 0.0})
    data = [simulate.scale_listener_by_item(seed, n_items=100, n_per_item=40)[0] for seed in (1, 2)]
kw = dict(num_warmup=int(warm), num_samples=int(draws), num_chains=int(chains), progress_bar=False,
          posterior_predictive=False, chain_method=method)
t, c = time.perf_counter(), time.process_time()
first = pm.fit(0, model, data[0], **kw)
first_wall, first_cpu = time.perf_counter() - t, time.process_time() - c
t = time.perf_counter()
again = pm.fit(1, model, data[1], **kw)
repeat_wall = time.perf_counter() - t
ss = json.loads(again.attrs["sampler_settings"])
print(json.dumps(dict(ran=ss["chain_method"], devices=ss["devices"], first_wall_s=first_wall, first_cpu_s=first_cpu,
                      compile_s=float(first.attrs["compile_time_s"]), repeat_wall_s=repeat_wall,
                      sampling_s=float(again.attrs["sampling_time_s"]),
                      min_ess_bulk=json.loads(again.attrs["diagnostics"])["min_ess_bulk"])))
"""

CASES = [("vectorized", 1), ("sequential", 1), ("parallel", 2)]


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_case(method: str, devices: int, chains: int, model: str, warm: int, draws: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PRAGMODELS_COMPILATION_CACHE="off", XLA_FLAGS="")
    load0 = _load()
    out = subprocess.run([sys.executable, "-c", WORKER, method, str(devices), str(chains), model, str(warm),
                          str(draws)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return {"model": model, "chains": chains, "method": method, **r, "load": f"{load0} / {_load()}"}


def main() -> None:
    from benchmarks._results import write_results

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    warm = draws = 200 if args.quick else 500
    models = ["speaker"] if args.quick else ["speaker", "hierarchical"]
    rows = []
    for model in models:
        for chains in (2, 4):
            group = [run_case(m, d, chains, model, warm, draws) for m, d in CASES]
            base = group[0]
            for r in group:
                r["first_ratio"] = r["first_wall_s"] / base["first_wall_s"]
                r["repeat_ratio"] = r["repeat_wall_s"] / base["repeat_wall_s"]
                print(json.dumps(r), flush=True)
            rows += group
    cols = {"model": "model", "chains": "chains", "method": "chain_method", "devices": "devices",
            "first_wall_s": "first fit wall (s)", "first_cpu_s": "first fit CPU (s)", "compile_s": "compile (s)",
            "repeat_wall_s": "repeat fit wall (s)", "sampling_s": "repeat sampling (s)",
            "min_ess_bulk": "repeat min bulk ESS", "first_ratio": "first / vectorized",
            "repeat_ratio": "repeat / vectorized", "load": "load (1 min) before / after"}
    write_results(rows, "chain_method", "fit's chain methods on the CPU",
                  f"Each case a fresh process without a persistent compilation cache; {warm} warm-up + {draws} "
                  "draws per chain; no posterior predictive. `python -m benchmarks.chain_method"
                  f"{' --quick' if args.quick else ''}`.", md_columns=cols,
                  notes="`first / vectorized`, `repeat / vectorized`: against `vectorized` on one device for the "
                        "same model and chains in this run. `parallel` runs on two CPU devices, the others on one.")


if __name__ == "__main__":
    main()
