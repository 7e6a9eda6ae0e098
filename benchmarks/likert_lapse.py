"""An ordinal likelihood's lapse mixed in with its probabilities in one step, against after them.

Usage: python -m benchmarks.likert_lapse

Why: the social-meaning study's 12 LLM fits observe their ratings through
:func:`pragmodels.likelihoods.categorical.likert_ratings` with a scalar lapse. It formed the
ordered-logistic log-probabilities in log space, then mixed the lapse in
(:func:`pragmodels.logmath.log_mix_uniform`), two passes whose autodiff is most of the model's
gradient. It now uses :func:`pragmodels.likelihoods.categorical.node_log_probs` (written for the
rater likelihood): the probabilities in probability space from a cancellation-free product, mixed,
one log, a hand-written derivative.

Measured: the potential's value and gradient on the study's model, GPT-4o's ratings under MIN (1,440
ratings, 101 unconstrained dimensions), at 8 points (the prior median's neighbourhood), in a
compiled loop of 200 evaluations (per-call dispatch excluded), the two forms alternating, 7 rounds,
medians; the values and gradients of the two forms compared. Writes ``results/likert_lapse.{csv,md}``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def two_step(name, latent, cutpoints, obs=None, *, lapse=0.0, low=1, dim="response", rows=None):
    """The form before 2026-12-07: log-space ordinal probabilities, then the lapse mixed in by ``choices``."""
    from pragmodels.likelihoods.categorical import choices, ordinal_log_probs

    idx = None if obs is None else jnp.asarray(obs) - low
    return choices(name, ordinal_log_probs(latent, cutpoints), idx, lapse=lapse, dim=dim, what="rating", rows=rows)


def programs(case: str = "gpt MIN", loops: int = 200, points: int = 8, seed: int = 0):
    """``{form: (compiled loop, value_and_grad)}`` and the points, each form traced with its likelihood."""
    from numpyro.infer import init_to_median
    from numpyro.infer.util import initialize_model

    from benchmarks.warmup import spec_for
    from models.social_meaning import rsa
    from pragmodels.inference.compile_cache import split_data
    from pragmodels.params import with_priors

    spec = spec_for(case)
    static, arrays = split_data(spec.data)
    model = with_priors(spec.model, spec.priors) if spec.priors else spec.model
    out, z0 = {}, None
    for form, fn in (("two steps", two_step), ("one step", rsa.likert_ratings)):
        saved = rsa.likert_ratings
        rsa.likert_ratings = fn
        try:
            bound = lambda **kw: model(**static, **kw)  # noqa: E731 - a new function per form: its own trace
            info = initialize_model(jax.random.PRNGKey(seed), bound, model_kwargs=arrays,
                                    init_strategy=init_to_median(num_samples=15), dynamic_args=True)
            potential = info.potential_fn(**arrays)
            from jax.flatten_util import ravel_pytree

            flat, unravel = ravel_pytree(info.param_info.z)
            if z0 is None:
                z0 = flat + 0.1 * jax.random.normal(jax.random.PRNGKey(seed + 1), (points, flat.size))
            # evaluated here, while this form's likelihood is the one traced
            values = jax.jit(jax.vmap(jax.value_and_grad(lambda z: potential(unravel(z)))))(z0)

            vg_one = jax.value_and_grad(lambda z, potential=potential, unravel=unravel: potential(unravel(z)))

            def loop(z, vg_one=vg_one):
                def body(i, acc):
                    v, g = vg_one(z[i % z.shape[0]] + 1e-6 * acc[1][:1].sum())
                    return acc[0] + v, acc[1] + g
                return jax.lax.fori_loop(0, loops, body, (jnp.zeros(()), jnp.zeros_like(z[0])))

            compiled = jax.jit(loop).lower(z0).compile()
            out[form] = (compiled, values)
        finally:
            rsa.likert_ratings = saved
    return out, z0, loops


def main() -> None:
    from benchmarks._results import write_results

    load0 = _load()
    progs, z, loops = programs()
    times = {form: [] for form in progs}
    for _ in range(7):
        for form, (compiled, _) in progs.items():
            jax.block_until_ready(compiled(z))
            t = time.perf_counter()
            jax.block_until_ready(compiled(z))
            times[form].append((time.perf_counter() - t) / loops)
    (v2, g2), (v1, g1) = (progs[f][1] for f in ("two steps", "one step"))
    v1, v2, g1, g2 = (np.asarray(a, float) for a in (v1, v2, g1, g2))
    rows = []
    base = float(np.median(times["two steps"]))
    for form in progs:
        med = float(np.median(times[form]))
        rows.append(dict(case="gpt MIN (1,440 ratings, 101 dims)", form=form, us_per_gradient=1e6 * med,
                         ratio=med / base, max_abs_potential_diff=float(np.abs(v1 - v2).max()),
                         max_rel_gradient_diff=float((np.abs(g1 - g2) / np.maximum(np.abs(g2), 1e-3)).max()),
                         load=f"{load0} / {_load()}"))
        print(json.dumps(rows[-1]), flush=True)
    cols = {"case": "case", "form": "form", "us_per_gradient": "us per value and gradient",
            "ratio": "against two steps", "max_abs_potential_diff": "max |potential diff| (nats)",
            "max_rel_gradient_diff": "max relative gradient diff", "load": "load"}
    write_results(rows, "likert_lapse", "An ordinal likelihood's lapse: one step against two",
                  "The social-meaning RSA model on GPT-4o's ratings under MIN; `python -m benchmarks.likert_lapse`.",
                  md_columns=cols,
                  notes="One process; each form's potential value and gradient in a compiled loop of 200 evaluations "
                        "over 8 points, the forms alternating, 7 rounds, medians. The differences compare both forms "
                        "at the same 8 points (relative to the larger of |gradient| and 1e-3).")


if __name__ == "__main__":
    main()
