"""The optimised starts of a fit (``init="optimize"``/``"basins"``): the starts drawn by NumPyro's
eager search against the same search compiled.

Usage: python -m benchmarks.multistart

Why: in the social-meaning study's LLM fits :func:`~pragmodels.inference.multistart.multistart_inits`
took 4.6 of a fit's 17.7 warm seconds, where its 16 starts x 2,000 Adam steps take 1.6 s. The rest
was ``numpyro.infer.util.initialize_model`` with 16 keys, called eagerly: it traces the model and
compiles its search for valid starts (a ``lax.map`` of a ``while_loop``) again on every call, 5.2 s
for the LLM model, 3.3-4.0 s for the human one. The package now compiles that search once per model
and shape (``multistart._starts``). (Not the cause, measured while looking: the 16 starts' gradients
batched by ``vmap`` cost what they cost one start after another by ``lax.map``, 49 against 51 us per
start-step for the LLM model, and less for the human one, 234 against 419.)

Each case runs both forms in one process, three calls each, the first with tracing and compiling; the
two forms give the same starts (same keys) and so the same end points.

Cases: GPT-4o's ratings under MIN (the LLM model) and the human RSA fit (41 rater nodes), through the
study's own model, priors and data (:func:`benchmarks.warmup.spec_for`). Writes
``results/multistart.{csv,md}``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import numpy as np


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _eager(model, key, kwargs, num_chains, n_starts=16, steps=2000, lr=0.02):
    """The form before 2026-12-07: NumPyro's search for valid starts called eagerly, then the compiled Adam."""
    from numpyro.infer import init_to_uniform
    from numpyro.infer.util import initialize_model

    from pragmodels.inference import multistart

    keys = jax.random.split(key, n_starts)
    start = initialize_model(keys, model, model_kwargs=kwargs, init_strategy=init_to_uniform(radius=2.0)).param_info.z
    _, final = multistart._optimise(model, start, kwargs, steps, lr)
    return np.sort(np.asarray(final, float))


def _compiled(model, key, kwargs, num_chains):
    from pragmodels.inference.multistart import multistart_inits

    return multistart_inits(key, model, kwargs, num_chains).final_potentials


def time_case(case: str, calls: int = 3) -> list[dict]:
    from benchmarks.warmup import spec_for
    from pragmodels.inference.compile_cache import bound_model, split_data
    from pragmodels.params import with_priors

    spec = spec_for(case)
    static, arrays = split_data(spec.data)
    bound = bound_model(with_priors(spec.model, spec.priors) if spec.priors else spec.model, static)
    rows, ends = [], {}
    for form, fn in {"before: starts searched eagerly": _eager, "after: the search compiled": _compiled}.items():
        load0, times = _load(), []
        for i in range(calls):
            t = time.perf_counter()
            ends[form, i] = fn(bound, jax.random.PRNGKey(i), arrays, 4)
            times.append(time.perf_counter() - t)
        rows.append(dict(case=case, form=form, first_call_s=times[0], later_call_s=float(np.median(times[1:])),
                         best_potential=float(ends[form, 0][0]), load=f"{load0} / {_load()}"))
    before = rows[0]
    for r in rows:
        r["later_call_ratio"] = r["later_call_s"] / before["later_call_s"]
        r["first_call_ratio"] = r["first_call_s"] / before["first_call_s"]
        r["max_abs_potential_diff"] = max(float(np.abs(ends[r["form"], i] - ends[before["form"], i]).max())
                                          for i in range(calls))
    return rows


def main() -> None:
    from benchmarks._results import write_results

    rows = []
    for case in ("gpt MIN", "human"):
        for r in time_case(case):
            print(json.dumps(r), flush=True)
            rows.append(r)
    cols = {"case": "case", "form": "form", "first_call_s": "first call (s)", "later_call_s": "later calls (s)",
            "later_call_ratio": "later calls against before", "first_call_ratio": "first call against before",
            "max_abs_potential_diff": "max |potential diff| (nats)", "load": "load"}
    write_results(rows, "multistart", "Optimised starts: NumPyro's search for valid starts eager against compiled",
                  "multistart_inits' defaults (16 starts x 2,000 Adam steps) on the social-meaning study's models; "
                  "`python -m benchmarks.multistart`.", md_columns=cols,
                  notes="Both forms in one process, `before` first, three calls each with keys 0-2 (the same keys in "
                        "both forms). First call: tracing and compiling included; later calls: the median of the "
                        "other two. The potential difference compares the 16 end points' sorted potentials of the two "
                        "forms for each key.")


if __name__ == "__main__":
    main()
