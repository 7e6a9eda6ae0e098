"""Multi-start optimisation of a model's log density, to start NUTS chains in its main mode.

Layering: imports ``jax`` and ``numpyro.infer`` only; :mod:`pragmodels.inference.fitting` imports it
(``fit(..., init="optimize")``).

A posterior with several separated modes traps NUTS chains in whichever basin warm-up reaches
first. Here ``n_starts`` points drawn uniformly in (-2, 2) on the unconstrained scale each take
``steps`` Adam steps on the potential energy, and chains start at the best end points.
:class:`MultistartResult` records where every start ended, so a user sees how many basins were
found and how far below the best each lies; it cannot show that the posterior has one mode. Use
it with non-centred hierarchies only: a centred one has no joint mode, and the optimiser walks
into its funnel. Why, what it does not do, and the measurements behind both: the docs page
*Fitting and checking* ("Starting chains in the main mode").
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer import init_to_uniform
from numpyro.infer.util import initialize_model, potential_energy

__all__ = ["MultistartResult", "multistart_inits"]

#: end points within this many nats of the best count as the same basin when chains are placed
SAME_BASIN_NATS = 3.0

#: unconstrained parameter values by site, each with a leading batch (start or chain) axis
Params = dict[str, jax.Array]


@dataclass
class MultistartResult:
    """Where the starts ended. ``init_params``: unconstrained values with a leading chain axis
    (for ``MCMC.run(init_params=...)``); ``final_potentials``: each start's end point, sorted
    (nats; lower is better; ``inf`` for a start that diverged); ``end_params`` and ``potentials``:
    every start's end point and potential, in start order (for :mod:`pragmodels.inference.basins`).

    Shapes: ``init_params[site] [num_chains, *unconstrained site shape]``, ``final_potentials
    [n_starts]``, ``end_params[site] [n_starts, ...]``, ``potentials [n_starts]``.
    """

    init_params: Params
    final_potentials: np.ndarray
    n_starts: int
    steps: int
    end_params: Params
    potentials: np.ndarray

    def summary(self) -> dict[str, Any]:
        """JSON-ready digest: best potential, how many starts reached its basin, and the gap to
        the next basin (``None`` when every finite end point is in the best basin)."""
        pe = self.final_potentials[np.isfinite(self.final_potentials)]
        best = float(pe[0])
        others = pe[pe > best + SAME_BASIN_NATS]
        return dict(n_starts=self.n_starts, steps=self.steps, best_potential=round(best, 2),
                    n_in_best_basin=int(np.sum(pe <= best + SAME_BASIN_NATS)),
                    n_failed=int(self.n_starts - pe.size),
                    gap_to_next_basin=round(float(others[0] - best), 2) if others.size else None)


def adam(value_and_grad: Callable[[Params], tuple[jax.Array, Params]], params: Params, steps: int,
         lr: float, decay: bool = False) -> Params:
    """Plain Adam (β1 0.9, β2 0.999) on a batch of starts; returns the end points. ``decay``: the step
    size falls linearly to 0 over the steps, so the points settle rather than hover."""
    zeros = jax.tree.map(jnp.zeros_like, params)

    def step(carry: tuple[Params, Params, Params], t: jax.Array) -> tuple[tuple[Params, Params, Params], None]:
        p, m, v = carry
        _, g = value_and_grad(p)
        g = jax.tree.map(lambda x: jnp.where(jnp.isfinite(x), x, 0.0), g)
        m = jax.tree.map(lambda a, x: 0.9 * a + 0.1 * x, m, g)
        v = jax.tree.map(lambda a, x: 0.999 * a + 0.001 * x * x, v, g)
        rate = lr * (1.0 - (t - 1) / steps) if decay else lr
        p = jax.tree.map(lambda x, a, b: x - rate * (a / (1 - 0.9 ** t)) / (jnp.sqrt(b / (1 - 0.999 ** t)) + 1e-8),
                         p, m, v)
        return (p, m, v), None

    (p, _, _), _ = jax.lax.scan(step, (params, zeros, zeros), jnp.arange(1, steps + 1, dtype=jnp.float32))
    return p


@functools.partial(jax.jit, static_argnums=(0,))
def _starts(model: Callable[..., Any], keys: jax.Array, kwargs: dict[str, Any]) -> Params:
    """One uniform start in (-2, 2) on the unconstrained scale per key (NumPyro's ``init_to_uniform``,
    each redrawn until its potential and gradient are finite), compiled: called eagerly, NumPyro's
    search for valid starts is traced and compiled again on every call (5.2 s of each social-meaning
    LLM fit, 3.3-4.0 s of a human one; benchmarks/multistart.py). Traced, NumPyro does not raise for a
    start it found no valid value for in its 100 tries (eagerly it failed the whole fit): that start
    ends at an infinite potential and is left out of the basins; all of them so is a
    ``FloatingPointError`` (:func:`multistart_inits`)."""
    return initialize_model(keys, model, model_kwargs=kwargs, init_strategy=init_to_uniform(radius=2.0)).param_info.z


@functools.partial(jax.jit, static_argnums=(0, 3, 4))
def _optimise(model: Callable[..., Any], params: Params, kwargs: dict[str, Any], steps: int, lr: float
              ) -> tuple[Params, jax.Array]:
    def pe(p: Params) -> jax.Array:
        return potential_energy(model, (), kwargs, p)

    vg = jax.vmap(jax.value_and_grad(pe))
    end = adam(vg, params, steps, lr)
    return end, jax.vmap(pe)(end)


def multistart_inits(rng_key: jax.Array, model: Callable[..., Any], model_kwargs: dict[str, Any], num_chains: int,
                     *, n_starts: int = 16, steps: int = 2000, lr: float = 0.02) -> MultistartResult:
    """Optimise ``n_starts`` random starts of ``model(**model_kwargs)`` and place ``num_chains``
    chains at the best end points: chain ``i`` starts at the ``i``-th best end point among those
    within :data:`SAME_BASIN_NATS` of the best (cycling when there are fewer), so chains start
    spread over the best basin and never in a worse one.

    ``model`` must take every argument in ``model_kwargs`` (bind static ones with
    ``functools.partial`` first); arrays are traced, so one compilation serves data of one shape.

    Shapes: ``rng_key`` one PRNG key; the result's ``init_params[site] [num_chains, ...]`` and
    ``final_potentials [n_starts]`` (:class:`MultistartResult`).
    """
    for name, value, low in (("n_starts", n_starts, 1), ("steps", steps, 1), ("num_chains", num_chains, 1)):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    if not lr > 0:
        raise ValueError(f"lr must be > 0; got {lr!r}.")
    start = _starts(model, jax.random.split(rng_key, n_starts), model_kwargs)  # {site: [start, ...]} unconstrained
    end, final = _optimise(model, start, model_kwargs, steps, float(lr))
    final = np.asarray(final, dtype=float)
    final[~np.isfinite(final)] = np.inf
    if not np.isfinite(final).any():
        raise FloatingPointError(f"all {n_starts} optimisation starts ended at a non-finite log density; "
                                 "check the model and data, or use init='median'.")
    order = np.argsort(final, kind="stable")
    best = final[order[0]]
    basin = order[final[order] <= best + SAME_BASIN_NATS]
    pick = np.resize(basin, num_chains)
    init_params = jax.tree.map(lambda x: jnp.asarray(x)[pick], end)
    return MultistartResult(init_params=init_params, final_potentials=final[order], n_starts=n_starts, steps=steps,
                            end_params=end, potentials=final)
