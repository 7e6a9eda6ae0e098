"""Posteriors with several basins: chains from each, combined by each basin's posterior mass.

Layering: imports ``jax``, ``numpyro.infer.util``, :mod:`pragmodels.inference.ess_rhat` (r_hat) and
:mod:`pragmodels.inference.multistart` (the optimised starts); :func:`pragmodels.fit` uses it for
``init="basins"``.

``init="optimize"`` starts every chain in the best basin its optimised starts found, so r_hat
cannot see another mode, and a second basin a few nats lower, but wider, can hold much of the
posterior's mass. Here:

1. **Basins.** The optimised end points (:func:`pragmodels.inference.multistart.multistart_inits`)
   are grouped by place: an end point joins the best-placed basin whose optimum lies within
   :data:`SAME_BASIN_DISTANCE` of it on every unconstrained coordinate, else it opens a basin. Basins
   whose optimum lies within ``basin_nats`` (default :data:`BASIN_NATS`) of the best are kept (at
   most :data:`MAX_BASINS`).
   **Connected basins** (:func:`barriers`, :func:`merge_connected`): two kept basins are one when a
   path between their optima (the straight segment, or its points settled into the valley) never
   rises above the higher optimum by more than :func:`merge_threshold`: :data:`BARRIER_NATS`, or,
   in many dimensions, the lower edge of the energies NUTS's draws hold anyway. An optimiser stops short on a flat ridge (a hierarchical scale, a weakly
   identified cost), so end points of one basin can lie far apart by place; without this test each
   got chains of its own, merged only after sampling (in the social-meaning study that was 12 or 16
   chains where 4 were enough). A merged basin's chains start at its different end points, so its
   r_hat still sees a barrier the path test missed. Each kept basin gets ``num_chains`` chains.
2. **Mixing.** Basins whose chains reached one another (the r_hat of their pooled draws, one
   basin as one chain, at most :data:`MIXED_RHAT` for every sampled element) are one basin.
3. **Masses.** Each basin's mass, ``Z_k``, the integral of the unnormalised posterior over the
   basin, is estimated by bridge sampling (Meng & Wong 1996; Gronau et al. 2017) between its
   draws and a multivariate normal fitted to them, on the unconstrained scale (Jacobians included);
   its Monte Carlo error by repeating with four independent proposal sets. The weights are
   ``Z_k / sum Z``; a lone basin's is 1, and its mass is not estimated. For separated basins this is the posterior mass of each; stacking (Yao,
   Vehtari & Gelman 2022) would instead weight by predictive performance, which does not tell two
   modes that predict alike apart.
4. **The combined posterior.** Every chain of the result draws from each basin in proportion to
   its weight (a block of consecutive draws from the basin's chains, without replacement, so the
   chains keep their autocorrelation; a lone basin gives the run's chains as they are), so
   summaries, LOO and predictive checks read the mixture. Each basin's own chains are diagnosed
   (r_hat within the basin); the result's ``attrs["basins"]`` records each basin: its optimum, the
   starts that reached it, its log mass and error, weight, diagnostics and parameter means and
   90% intervals. Basins with weight > 1% that disagree on a parameter (one's mean outside the
   other's interval) are named in a :class:`~pragmodels.inference.diagnostics.FitWarning`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import potential_energy, unconstrain_fn

from pragmodels.inference.ess_rhat import rank_rhat
from pragmodels.inference.multistart import adam

__all__ = ["BASIN_NATS", "MAX_BASINS", "SAME_BASIN_DISTANCE", "BARRIER_NATS", "BARRIER_POINTS", "RELAX_STEPS",
           "MIXED_RHAT", "Basin", "FlatPotential", "find_basins", "barriers", "merge_threshold", "merge_connected", "chain_inits",
           "merge_mixed", "log_masses", "combine", "take", "summarise", "disagreements", "bridge_log_mass"]

#: basins whose optimum lies within this many nats of the best get chains
BASIN_NATS = 10.0
#: at most this many basins get chains
MAX_BASINS = 4
#: end points closer than this on every unconstrained coordinate are one basin
SAME_BASIN_DISTANCE = 0.5
#: basins whose optima are joined by a segment that rises at most this far above the higher optimum are one
BARRIER_NATS = 1.0
#: interior points of the path between two optima
BARRIER_POINTS = 16
#: Adam steps that settle each interior point of the path in the valley (within its hyperplane)
RELAX_STEPS = 300
#: basins whose pooled draws have r_hat at most this (one basin as one chain) have mixed: one basin
MIXED_RHAT = 1.05
#: a basin with at least this weight counts in the disagreement check
WEIGHT_THRESHOLD = 0.01


def _rounded(x: float, digits: int) -> float | None:
    """``round(x, digits)``; None for NaN (JSON has no NaN)."""
    return None if math.isnan(x) else round(x, digits)


@dataclass
class Basin:
    """One basin: its optimum's potential (nats), the optimised starts that reached it, its chains, and
    after sampling its log mass (and Monte Carlo error), weight, diagnostics and parameter summaries."""

    potential: float
    starts: list[int]
    chains: list[int] = field(default_factory=list)
    pieces: int = 1
    log_mass: float = float("nan")
    log_mass_se: float = float("nan")
    weight: float = float("nan")
    diagnostics: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, list[float]] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """JSON-ready."""
        return dict(potential=round(self.potential, 3), starts=len(self.starts), pieces=self.pieces, chains=self.chains,
                    log_mass=_rounded(self.log_mass, 4), log_mass_se=_rounded(self.log_mass_se, 4),
                    weight=round(self.weight, 4), diagnostics=self.diagnostics, summary=self.summary)


def find_basins(end_params: Mapping[str, Any], potentials: np.ndarray, *, nats: float = BASIN_NATS,
                max_basins: int = MAX_BASINS) -> list[Basin]:
    """Group optimised end points into basins by place; keep those within ``nats`` of the best.

    Shapes: ``end_params[site] [start, ...]`` (unconstrained), ``potentials [start]`` (nats, ``inf``
    for a start that failed).

    Parameters
    ----------
    end_params : dict of arrays
        Where each start ended.
    potentials : array
        Each end point's potential energy (minus the log density).
    nats : float
        Basins whose best end point lies within this many nats of the overall best are kept.
    max_basins : int
        At most this many (the best-placed) are kept.

    Returns
    -------
    list of Basin
        Best first; ``starts`` indexes the starts.
    """
    flat = np.stack([np.asarray(ravel_pytree({k: v[i] for k, v in end_params.items()})[0])
                     for i in range(len(potentials))])
    order = [int(i) for i in np.argsort(potentials, kind="stable") if np.isfinite(potentials[i])]
    basins: list[Basin] = []
    centres: list[np.ndarray] = []
    for i in order:
        for b, centre in zip(basins, centres, strict=True):
            if np.max(np.abs(flat[i] - centre)) <= SAME_BASIN_DISTANCE:
                b.starts.append(i)
                break
        else:
            basins.append(Basin(float(potentials[i]), [i]))
            centres.append(flat[i])
    best = basins[0].potential
    return [b for b in basins if b.potential <= best + nats][:max_basins]


@dataclass(frozen=True)
class FlatPotential:
    """The potential energy of ``model`` at one flat unconstrained vector, the data passed at the call:
    ``FlatPotential(model, layout)(z, arrays)``. ``layout``: ``(site, shape)`` in
    :func:`jax.flatten_util.ravel_pytree`'s order (sites sorted by name). Equal for equal models and
    layouts, so :func:`barriers` compiles its programs once per model and shapes, not once per fit
    (a closure over the data is a new function each time: 1.2-1.9 s of each social-meaning LLM
    fit's basin search went to compiling them again)."""

    model: Callable[..., Any]
    layout: tuple[tuple[str, tuple[int, ...]], ...]

    @classmethod
    def of(cls, model: Callable[..., Any], point: Mapping[str, Any]) -> FlatPotential:
        """The potential of ``model`` laid out as ``point`` (``{site: unconstrained value}``) ravels.

        Parameters
        ----------
        model : callable
            The model, its static values bound (:func:`~pragmodels.inference.compile_cache.bound_model`:
            the same object for equal models, which keeps the compiled programs shared).
        point : mapping of str to array
            One unconstrained point.

        Returns
        -------
        FlatPotential
        """
        return cls(model, tuple((k, tuple(np.shape(point[k]))) for k in sorted(point)))

    def __call__(self, z: jax.Array, arrays: Mapping[str, Any]) -> jax.Array:
        params, at = {}, 0
        for name, shape in self.layout:
            size = math.prod(shape)
            params[name] = z[at: at + size].reshape(shape)
            at += size
        return potential_energy(self.model, (), dict(arrays), params)


@functools.partial(jax.jit, static_argnums=0)
def _on_lines(potential: Callable[..., jax.Array], lines: jax.Array, args: tuple) -> jax.Array:
    """``potential`` at every point of ``lines [pair, point, dim]``."""
    return jax.vmap(jax.vmap(lambda z: potential(z, *args)))(lines)


@functools.partial(jax.jit, static_argnums=(0, 4, 5))
def _relax(potential: Callable[..., jax.Array], path: jax.Array, unit: jax.Array, args: tuple, steps: int,
           lr: float) -> jax.Array:
    """Each interior point of ``path [pair, point, dim]`` after ``steps`` Adam steps down ``potential``
    within its hyperplane normal to its pair's segment (``unit [pair, dim]``)."""
    grad = jax.vmap(jax.vmap(jax.grad(lambda z: potential(z, *args))))

    def within_hyperplane(x: dict[str, jax.Array]) -> tuple[jax.Array, dict[str, jax.Array]]:
        """The potential's gradient at each point, its component along the segment removed."""
        g = grad(x["path"])
        return jnp.zeros(()), {"path": g - jnp.sum(g * unit[:, None], -1, keepdims=True) * unit[:, None]}

    return adam(within_hyperplane, {"path": path}, steps, lr, decay=True)["path"]


def barriers(potential: Callable[..., jax.Array], end_params: Mapping[str, Any], basins: list[Basin],
             points: int = BARRIER_POINTS, relax_steps: int = RELAX_STEPS, lr: float = 0.02,
             enough: float = -np.inf, args: tuple = ()) -> np.ndarray:
    """The barrier between each pair of basins: the highest potential on a path between their optima
    (unconstrained scale), above the higher of the two optima (nats; ``inf`` where the path meets a
    non-finite potential). An upper bound on the lowest pass between them, so a small barrier means one
    basin.

    The path starts as the straight segment; unless every pair's segment already stays within
    ``enough`` nats, each of its ``points`` interior points then descends
    the potential (``relax_steps`` Adam steps, the step size decaying to 0) within the hyperplane through it normal to the segment,
    so it keeps its place along the segment and settles in the valley. A straight segment
    between two ends of a curved valley climbs its wall (the social-meaning motives fit: 22.7 nats on
    the segment, chains that mixed); the relaxed path follows the floor. The barrier is read on
    the polyline through the relaxed points, four points per piece; each pair keeps the lower of its
    two paths' barriers (both bound the pass from above).

    Shapes: ``end_params[site] [start, ...]`` (unconstrained); ``potential(z, *args)`` maps one flat
    vector ``z [dim]`` (``end_params`` raveled per start, in :func:`jax.flatten_util.ravel_pytree`'s
    order) to a scalar -> ``[basin, basin]`` (symmetric, zero diagonal).

    Parameters
    ----------
    potential : callable
        The potential energy (minus the unnormalised log density) of a flat unconstrained vector,
        ``potential(z, *args)``; the programs are compiled once per ``potential`` (compared by
        equality, e.g. a :class:`FlatPotential`) and shapes.
    end_params : dict of arrays
        Where each start ended.
    basins : list of Basin
        From :func:`find_basins`; ``starts[0]`` is each basin's optimum.
    points : int
        Interior points of each path.
    relax_steps : int
        Adam steps of each interior point within its hyperplane (0: the straight segment).
    lr : float
        Adam's step size.
    enough : float
        Barriers this low need no relaxed path (the straight segment's is kept when every pair's is).
    args : tuple
        Further arguments of ``potential`` (traced: e.g. the data arrays).

    Returns
    -------
    array
    """
    optima = np.stack([np.asarray(ravel_pytree({k: np.asarray(v)[b.starts[0]] for k, v in end_params.items()})[0])
                       for b in basins])
    n = len(basins)
    out = np.zeros((n, n))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if not pairs:
        return out
    a, b = jnp.asarray(optima[[i for i, _ in pairs]]), jnp.asarray(optima[[j for _, j in pairs]])
    t = jnp.linspace(0.0, 1.0, points + 2)[1:-1]
    path = a[:, None] + t[None, :, None] * (b - a)[:, None]  # [pair, point, dim]
    unit = (b - a) / jnp.maximum(jnp.linalg.norm(b - a, axis=-1, keepdims=True), 1e-12)
    args = tuple(args)

    def along(path: jax.Array) -> np.ndarray:
        """The potential on the polyline a -> path -> b, four points per piece: ``[pair, 4 * (points + 1)]``."""
        full = jnp.concatenate([a[:, None], path, b[:, None]], axis=1)  # [pair, point + 2, dim]
        s = jnp.linspace(0.0, 1.0, 5)[:-1]
        line = full[:, :-1, None] + s[None, None, :, None] * (full[:, 1:] - full[:, :-1])[:, :, None]
        return np.asarray(_on_lines(potential, line.reshape(len(pairs), -1, a.shape[-1]), args), float)

    tops = np.array([max(basins[i].potential, basins[j].potential) for i, j in pairs])

    def rise(values: np.ndarray) -> np.ndarray:
        return np.where(np.isfinite(values).all(-1), values.max(-1, initial=-np.inf) - tops, np.inf)

    height = rise(along(path))
    if relax_steps and not (height <= enough).all():
        relaxed = _relax(potential, path, unit, args, int(relax_steps), float(lr))
        height = np.minimum(height, rise(along(relaxed)))
    for (i, j), h in zip(pairs, height, strict=True):
        out[i, j] = out[j, i] = float(h)
    return out


def merge_threshold(dim: int) -> float:
    """The highest barrier that still counts as one basin, for a posterior of ``dim`` unconstrained
    dimensions: :data:`BARRIER_NATS`, or the lower edge of the typical set's energy where that is
    higher.

    NUTS draws sit at the typical set's energy, not at the optimum: for a posterior near normal the
    potential at a draw is the optimum's plus half a chi-square with ``dim`` degrees of freedom, so
    ``dim / 2 +- sqrt(dim / 2)`` nats above it. A pass lower than ``dim / 2 - 2 sqrt(dim / 2)`` lies
    within the energies the chains hold anyway (the social-meaning motives fit, 119 dimensions: its
    two optima 1.3 nats apart, a pass about 19 nats high, its chains mixed). This bounds the pass by
    energy only, not by its width; a merged basin's chains start in each of its pieces, so r_hat
    within the basin reports a pass too narrow to cross.

    Parameters
    ----------
    dim : int
        The posterior's unconstrained dimensions.

    Returns
    -------
    float
        Nats above the higher of two optima.
    """
    half = dim / 2
    return max(BARRIER_NATS, half - 2 * math.sqrt(half))


def merge_connected(basins: list[Basin], barrier: np.ndarray, nats: float = BARRIER_NATS) -> list[Basin]:
    """Merge basins joined by a path that rises at most ``nats`` above the higher optimum (best first: a
    basin joins the best-placed one it connects to; :func:`merge_threshold` gives ``nats`` for a posterior).

    Shapes: ``barrier [basin, basin]`` (:func:`barriers`).

    Parameters
    ----------
    basins : list of Basin
        Best first.
    barrier : array
        From :func:`barriers`.
    nats : float
        The highest barrier that still counts as one basin.

    Returns
    -------
    list of Basin
        Best first; a merged basin keeps its best optimum's potential and lists its starts taken from each
        merged piece in turn (best piece first), so that :func:`chain_inits` starts chains in each piece.
    """
    if barrier.shape != (len(basins), len(basins)):
        raise ValueError(f"barrier must be [{len(basins)}, {len(basins)}] (one row per basin); got {barrier.shape}.")
    owner = list(range(len(basins)))
    for j in range(len(basins)):
        for i in range(j):
            if barrier[i, j] <= nats:
                owner[j] = owner[i]
                break
    pieces: dict[int, list[list[int]]] = {}
    for j, b in enumerate(basins):
        pieces.setdefault(owner[j], []).append(list(b.starts))
    # starts taken from each piece in turn, so that a merged basin's chains start in each piece
    return [Basin(basins[i].potential, [s for rank in zip_longest(*parts) for s in rank if s is not None],
                  pieces=len(parts)) for i, parts in pieces.items()]


def chain_inits(basins: list[Basin], end_params: Mapping[str, Any], num_chains: int
                ) -> tuple[dict[str, jax.Array], np.ndarray]:
    """``num_chains`` chains per basin, started at its end points (cycling when it has fewer).

    Shapes: ``end_params[site] [start, ...]`` -> ``init_params[site] [basin * num_chains, ...]`` and
    ``chain_basin [basin * num_chains]`` (each chain's basin).
    """
    picks, owner = [], []
    for k, b in enumerate(basins):
        picks.extend(np.resize(np.asarray(b.starts), num_chains).tolist())
        owner.extend([k] * num_chains)
        b.chains = list(range(k * num_chains, (k + 1) * num_chains))
    idx = np.asarray(picks)
    return {k: jnp.asarray(v)[idx] for k, v in end_params.items()}, np.asarray(owner)


def _pooled_rhat(draws: Mapping[str, np.ndarray], chains_a: list[int], chains_b: list[int]) -> float:
    """The worst r_hat over every element when each of two chain sets is pooled into one chain."""
    worst = 0.0
    for v in draws.values():
        a = np.asarray(v)[chains_a].reshape(-1, int(np.prod(np.shape(v)[2:], dtype=int)))
        b = np.asarray(v)[chains_b].reshape(-1, a.shape[1])
        n = min(a.shape[0], b.shape[0])
        both = np.stack([a[:n], b[:n]])  # [2, n, element]
        varies = np.ptp(both, axis=(0, 1)) > 0
        if varies.any():
            worst = max(worst, float(np.nanmax(rank_rhat(np.moveaxis(both[..., varies], -1, 0)))))
    return worst


def merge_mixed(basins: list[Basin], latent: Mapping[str, np.ndarray]) -> list[Basin]:
    """Merge basins whose chains mixed (pooled r_hat <= :data:`MIXED_RHAT` for every sampled element).

    Shapes: ``latent[site] [chain, draw, ...]``.
    """
    merged: list[Basin] = []
    for b in basins:
        for m in merged:
            if _pooled_rhat(latent, m.chains, b.chains) <= MIXED_RHAT:
                m.chains = m.chains + b.chains
                m.starts = m.starts + b.starts
                m.pieces = m.pieces + b.pieces
                break
        else:
            merged.append(b)
    return merged


def _logmeanexp(x: np.ndarray) -> float:
    m = float(np.max(x))
    return m + math.log(float(np.mean(np.exp(x - m))))


def bridge_log_mass(log_p1: np.ndarray, log_q1: np.ndarray, log_p2: np.ndarray, log_q2: np.ndarray,
                    iterations: int = 1000, tol: float = 1e-10) -> float:
    """The iterative bridge sampling estimate (Meng & Wong 1996) of ``log Z``, ``Z = int p``.

    Shapes: ``log_p1, log_q1 [n1]`` at draws from ``p / Z``; ``log_p2, log_q2 [n2]`` at draws from ``q``.

    Parameters
    ----------
    log_p1, log_q1 : array
        The unnormalised log target and the normalised log proposal at the target's draws.
    log_p2, log_q2 : array
        The same at the proposal's draws.
    iterations, tol : int, float
        The fixed-point iteration's bound and tolerance on ``log Z``.

    Returns
    -------
    float
    """
    l1, l2 = np.asarray(log_p1 - log_q1, float), np.asarray(log_p2 - log_q2, float)
    n1, n2 = l1.size, l2.size
    ls1, ls2 = math.log(n1 / (n1 + n2)), math.log(n2 / (n1 + n2))
    log_r = _logmeanexp(l2)  # the importance-sampling estimate as the start
    for _ in range(iterations):
        num = _logmeanexp(l2 - np.logaddexp(ls1 + l2, ls2 + log_r))
        den = _logmeanexp(-np.logaddexp(ls1 + l1, ls2 + log_r))
        new = num - den
        if abs(new - log_r) < tol:
            return new
        log_r = new
    return log_r


def log_masses(rng_key: jax.Array, model: Callable[..., Any], arrays: Mapping[str, Any], basins: list[Basin],
               latent: Mapping[str, np.ndarray], lp: np.ndarray, repeats: int = 4) -> None:
    """Each basin's log mass by bridge sampling, with its Monte Carlo error (SD over ``repeats`` proposal
    sets); sets ``log_mass``, ``log_mass_se`` and ``weight`` of each basin. A lone basin gets weight 1 and
    no mass estimate (``log_mass`` and ``log_mass_se`` stay NaN, recorded as None): the weight does not
    depend on it, and the estimate costs ``repeats`` x the draws' log densities and a compilation (5-7 s of
    a social-meaning fit).

    Shapes: ``latent[site] [chain, draw, ...]`` (constrained), ``lp [chain, draw]`` (the log density on
    the unconstrained scale, Jacobians included).
    """
    if len(basins) == 1:  # its weight is 1 whatever its mass: nothing to estimate (recorded as None)
        basins[0].weight = 1.0
        return
    n_chain, n_draw = lp.shape

    def unconstrained(i: jax.Array) -> jax.Array:
        c, d = i // n_draw, i % n_draw
        params = {k: jnp.asarray(v)[c, d] for k, v in latent.items()}
        return ravel_pytree(unconstrain_fn(model, (), dict(arrays), params))[0]

    z_all = np.asarray(jax.jit(jax.vmap(unconstrained))(jnp.arange(n_chain * n_draw)), dtype=float)
    z0 = {k: jnp.asarray(v)[0, 0] for k, v in latent.items()}
    _, unravel = ravel_pytree(unconstrain_fn(model, (), dict(arrays), z0))
    log_p = jax.jit(jax.vmap(lambda z: -potential_energy(model, (), dict(arrays), unravel(z))))
    for k, b in enumerate(basins):
        rows = np.concatenate([np.arange(c * n_draw, (c + 1) * n_draw) for c in b.chains])
        z1, lp1 = z_all[rows], lp.reshape(-1)[rows]
        mean = z1.mean(0)
        cov = np.atleast_2d(np.cov(z1, rowvar=False)) + 1e-8 * np.eye(z1.shape[1])
        chol = np.linalg.cholesky(cov)
        logdet = 2 * np.log(np.diag(chol)).sum()

        def log_q(z: np.ndarray, mean: np.ndarray = mean, chol: np.ndarray = chol, logdet: float = logdet
                  ) -> np.ndarray:
            u = np.linalg.solve(chol, (z - mean).T).T
            return -0.5 * (u * u).sum(-1) - 0.5 * logdet - 0.5 * z.shape[1] * math.log(2 * math.pi)

        estimates = []
        for r in range(repeats):
            eps = np.asarray(jax.random.normal(jax.random.fold_in(rng_key, 100 * k + r), z1.shape), float)
            z2 = mean + eps @ chol.T
            lp2 = np.asarray(log_p(jnp.asarray(z2, dtype=jnp.result_type(float))), float)
            lp2[~np.isfinite(lp2)] = -np.inf
            estimates.append(bridge_log_mass(lp1, log_q(z1), lp2, log_q(z2)))
        b.log_mass = float(np.mean(estimates))
        b.log_mass_se = float(np.std(estimates, ddof=1) / math.sqrt(repeats)) if repeats > 1 else float("nan")
    logs = np.array([b.log_mass for b in basins])
    with np.errstate(invalid="ignore"):  # a mass bridge sampling could not estimate (NaN): NaN weights, which
        w = np.exp(logs - np.logaddexp.reduce(logs))  # combine refuses, and fit then keeps every chain
    for b, wk in zip(basins, w, strict=True):
        b.weight = float(wk)


def combine(draws: Mapping[str, np.ndarray], basins: list[Basin], num_chains: int, rng: np.random.Generator
            ) -> np.ndarray:
    """Which draw of the run fills each place of the combined posterior: every chain of the result takes
    from each basin a block of consecutive draws, as many as the basin's weight asks (largest
    remainders), without replacement, the blocks in basin order.

    Consecutive draws keep the chains' autocorrelation, so an effective sample size or MCSE computed
    from the result is not inflated (draws in random order would look independent); a chain made of
    two basins' blocks reads as less mixed, not more. A lone basin whose chains are the run's, as many
    as the result's, gives the run's own chains in their order. Basin ``k``'s chains, laid end to end,
    are cut into ``num_chains`` equal stretches; result chain ``c`` takes its block from stretch ``c``,
    at an offset drawn from ``rng`` (0 where the block fills the stretch).

    Shapes: ``draws[site] [chain, draw, ...]`` (only the shape is read) -> ``[num_chains, draw, 2]``
    (chain and draw index into the run).
    """
    n_draw = next(iter(draws.values())).shape[1]
    w = np.array([b.weight for b in basins], dtype=float)
    if not (np.isfinite(w).all() and (w >= 0).all() and abs(w.sum() - 1.0) < 1e-6):
        raise ValueError(f"the basins' weights must be finite, >= 0 and sum to 1; got {w.tolist()} (a mass that "
                         "bridge sampling could not estimate): the result keeps every chain as it ran.")
    raw = w * n_draw
    counts = np.floor(raw).astype(int)
    counts[np.argsort(raw - counts)[::-1][: n_draw - counts.sum()]] += 1
    out = np.empty((num_chains, n_draw, 2), dtype=int)
    for k, (b, n) in enumerate(zip(basins, counts, strict=True)):
        pool = np.array([(c, d) for c in b.chains for d in range(n_draw)])  # chain-major: each chain in order
        stretch = len(pool) // num_chains
        if n > stretch:
            raise ValueError(f"basin {k} has {len(b.chains)} chain(s) of {n_draw} draws, too few for {num_chains} "
                             f"result chains of {n} draws each from it (weight {b.weight:.3f}).")
        at = int(counts[:k].sum())
        for c in range(num_chains):
            offset = int(rng.integers(0, stretch - n + 1)) if stretch > n else 0
            out[c, at: at + n] = pool[c * stretch + offset: c * stretch + offset + n]
    return out


def take(values: Mapping[str, np.ndarray], index: np.ndarray) -> dict[str, np.ndarray]:
    """``values[site][index[..., 0], index[..., 1]]``: the combined posterior's draws of each site.

    Shapes: ``values[site] [chain, draw, ...]``, ``index [chain', draw', 2]`` -> ``[chain', draw', ...]``.
    """
    return {k: np.asarray(v)[index[..., 0], index[..., 1]] for k, v in values.items()}


def disagreements(basins: list[Basin]) -> list[str]:
    """Pairs of basins with weight > 1% that disagree on a parameter: each one's mean outside the other's 90%
    interval.

    Parameters
    ----------
    basins : list of Basin
        With ``weight`` and ``summary`` (``{element: [mean, 5%, 95%]}``) set.

    Returns
    -------
    list of str
        One sentence per disagreeing pair and parameter, naming both basins.
    """
    heavy = [(k, b) for k, b in enumerate(basins) if b.weight > WEIGHT_THRESHOLD]
    found = []
    for i, (ka, a) in enumerate(heavy):
        for kb, b in heavy[i + 1:]:
            for name, (m_a, lo_a, hi_a) in a.summary.items():
                m_b, lo_b, hi_b = b.summary[name]
                if not (lo_a <= m_b <= hi_a) and not (lo_b <= m_a <= hi_b):
                    found.append(f"basins {ka} and {kb} (weights {a.weight:.2f}, {b.weight:.2f}) disagree on "
                                 f"{name}: {m_a:.3g} [{lo_a:.3g}, {hi_a:.3g}] against {m_b:.3g} "
                                 f"[{lo_b:.3g}, {hi_b:.3g}]")
    return found


def summarise(basins: list[Basin], latent: Mapping[str, np.ndarray]) -> None:
    """Set each basin's ``summary``: ``{element: [mean, 5%, 95%]}`` of every sampled element.

    Shapes: ``latent[site] [chain, draw, ...]``.

    Parameters
    ----------
    basins : list of Basin
        With ``chains`` set.
    latent : dict of arrays
        The sampled sites' draws.
    """
    for b in basins:
        out = {}
        for name, v in latent.items():
            x = np.asarray(v)[b.chains].reshape(-1, *np.shape(v)[2:])
            flat = x.reshape(x.shape[0], -1)
            for j in range(flat.shape[1]):
                idx = np.unravel_index(j, x.shape[1:]) if x.ndim > 1 else ()
                label = name + (f"[{', '.join(str(int(i)) for i in idx)}]" if idx else "")
                col = flat[:, j]
                out[label] = [float(col.mean()), float(np.quantile(col, 0.05)), float(np.quantile(col, 0.95))]
        b.summary = out
