"""NUTS with a compiled sampling loop that later fits of the same model and shapes reuse.

Layering: imports ``jax``, ``numpy``, ``numpyro.infer`` / ``numpyro.handlers`` (never
``numpyro.sample``, never ``arviz``), :mod:`pragmodels.inference.compile_cache`,
:mod:`pragmodels.model_key` and :mod:`pragmodels.likelihoods.categorical` (its tabulated
potential); :mod:`pragmodels.inference.fitting` builds on it.

One program runs initialisation, warm-up and sampling (NumPyro's functional
:func:`numpyro.infer.hmc.hmc` kernels under one :func:`jax.jit`), compiled ahead of time once per
model structure, static data values, array shapes and dtypes, sampler settings and chain layout,
and kept in :mod:`pragmodels.inference.compile_cache` (``MCMC`` recompiles at every ``run``);
draws match ``MCMC`` with ``NUTS`` for the same key. :func:`run_nuts` runs it and returns a
:class:`NutsRun` (draws, compile and run times); :func:`as_rng_key` normalises seeds. Why, what
keys a program, and the progress-bar variant: the docs page *Fitting and checking* ("Speed").
"""


from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from numpyro import handlers
from numpyro.infer import init_to_median, init_to_uniform
from numpyro.infer.hmc import hmc
from numpyro.infer.util import initialize_model

from pragmodels.inference.compile_cache import (
    CompiledEntry,
    data_signature,
    lookup,
    model_label,
    split_data,
    static_items,
    store,
)
from pragmodels.inference.laplace_mass import (
    block_inverse_mass,
    laplace_covariance,
    phase_one_length,
    shrunk_covariance,
)
from pragmodels.likelihoods.categorical import tabulate_potential
from pragmodels.model_key import structure_key
from pragmodels.validation import check_one_of

__all__ = ['CHAIN_METHODS', 'ChainMethod', 'MASS_MATRICES', 'MassMatrix', 'NutsRun', 'run_nuts', 'as_rng_key',
           'build_chain_fn', 'dense_mass_key', 'one_device_chain_method', 'pointwise_log_likelihood']


CHAIN_METHODS = ("parallel", "vectorized", "sequential")
ChainMethod = Literal["parallel", "vectorized", "sequential"]
#: how the mass matrix is set (:func:`run_nuts`), the default first
MASS_MATRICES = ("adapt", "laplace")
#: the key of the warm-up's leapfrog steps in the chain program's statistics (not a per-draw statistic)
WARMUP_STEPS = "warmup_steps"
MassMatrix = Literal["adapt", "laplace"]


# ----------------------------------------------------------------------------- progress bar

_PROGRESS: dict[str, Any] = {"bar": None}


def _tick(n: int, *_: object) -> None:
    bar = _PROGRESS["bar"]
    if bar is not None:
        bar.update(n)


@dataclass
class _Progress:
    total: int
    enabled: bool

    def __enter__(self) -> _Progress:
        if self.enabled:
            from tqdm.auto import tqdm

            _PROGRESS["bar"] = tqdm(total=self.total, desc="NUTS", unit="it")
        return self

    def __exit__(self, *exc: object) -> None:
        bar, _PROGRESS["bar"] = _PROGRESS["bar"], None
        if bar is not None:
            bar.close()


# ----------------------------------------------------------------------------- the sampler


@dataclass
class NutsRun:
    """Draws and sampler statistics of one NUTS run, as host (NumPy) arrays.

    Attributes
    ----------
    samples : dict of np.ndarray
        Constrained latent sites and deterministic sites, ``[chain, draw, *site_shape]``.
    stats : dict of np.ndarray
        ``[chain, draw]``: ``diverging`` (bool), ``n_steps`` (leapfrog steps), ``tree_depth``
        (``floor(log2 n_steps) + 1``), ``acceptance_rate``, ``energy`` (Hamiltonian), ``lp``
        (log joint density on the unconstrained scale, Jacobians included: minus NumPyro's
        potential energy) and ``step_size`` (after adaptation). Names follow ArviZ.
    latent_sites : tuple of str
        The sites in ``samples`` that NUTS sampled (the rest are deterministic).
    chain_method : str
        What actually ran: ``"parallel"``, ``"vectorized"``, ``"sequential"`` or ``"single"``
        (one chain).
    devices : int
        Devices the chains ran on.
    compile_s : float
        Seconds spent tracing and compiling (0 on a cache hit).
    run_s : float
        Seconds spent initialising, warming up and sampling, including the copy to the host.
    cache_hit : bool
        Whether the compiled program came from the cache.
    warmup_steps : np.ndarray, optional
        ``[chain]``: leapfrog steps each chain took in warm-up (``stats["n_steps"]`` has the draws').
    """

    samples: dict[str, np.ndarray]
    stats: dict[str, np.ndarray]
    latent_sites: tuple[str, ...]
    chain_method: str
    devices: int
    compile_s: float
    run_s: float
    cache_hit: bool
    warmup_steps: np.ndarray | None = None

    @property
    def num_chains(self) -> int:
        return int(self.stats["diverging"].shape[0])

    @property
    def num_draws(self) -> int:
        return int(self.stats["diverging"].shape[1])

    @property
    def latent(self) -> dict[str, np.ndarray]:
        """The sampled (non-deterministic) sites of :attr:`samples`."""
        return {k: self.samples[k] for k in self.latent_sites}


MAX_SEED = 2**32 - 1


def as_rng_key(rng_key: int | jax.Array) -> jax.Array:
    """One typed PRNG key from what a user passes as ``rng_key``.

    Shapes: ``rng_key []`` (typed) or ``[2]`` (raw ``uint32``) -> ``[]`` (typed).

    Parameters
    ----------
    rng_key : int or jax PRNG key
        An int seed (``jax.random.key(seed)``), a typed key (``jax.random.key``) or raw ``uint32``
        key data (``jax.random.PRNGKey``), which is wrapped. Draws are the same for all three
        spellings of one seed.

    Returns
    -------
    jax.Array
        A scalar typed key.

    Raises
    ------
    ValueError
        A key array (several keys) instead of one key, or an int seed outside ``[0, 2**32 - 1]``
        (a config's ``seed`` has the same range).
    TypeError
        Neither an int nor a JAX array (``bool`` is not a seed).
    """
    if isinstance(rng_key, (int, np.integer)) and not isinstance(rng_key, bool):
        if not 0 <= int(rng_key) <= MAX_SEED:
            raise ValueError(f"rng_key must be an int seed in [0, 2**32 - 1], as a config's seed is (JAX "
                             f"folds other ints onto these); got {int(rng_key)}.")
        return jax.random.key(int(rng_key))
    if isinstance(rng_key, jax.Array):
        typed = jax.dtypes.issubdtype(rng_key.dtype, jax.dtypes.prng_key)
        key = rng_key if typed else jax.random.wrap_key_data(rng_key)
        if key.shape != ():
            raise ValueError(f"rng_key must be a single key; got a key array of shape {key.shape}.")
        return key
    raise TypeError(f"rng_key must be an int seed or a jax PRNG key; got {type(rng_key).__name__}.")


def dense_mass_key(dense_mass: Any) -> bool | tuple[tuple[str, ...], ...]:
    """``dense_mass`` as a hashable part of a cache key.

    Parameters
    ----------
    dense_mass : bool or list of tuple of str
        As for :func:`run_nuts`.

    Returns
    -------
    bool or tuple of tuple of str

    Raises
    ------
    TypeError
        Neither a bool nor a list of tuples of site names.
    """
    if isinstance(dense_mass, bool):
        return dense_mass
    try:
        return tuple(tuple(str(s) for s in block) for block in dense_mass)
    except TypeError:
        raise TypeError("dense_mass must be a bool or a list of tuples of site names; "
                        f"got {dense_mass!r}.") from None


def one_device_chain_method() -> Literal["vectorized", "sequential"]:
    """How chains share one device: ``"sequential"`` on a CPU, ``"vectorized"`` on a GPU or other accelerator.

    On a CPU one chain's program, compiled once and run per chain, compiles in 40-50% less time than the
    chains under ``vmap`` and runs no slower, as no chain waits for the longest trajectory of the others
    (``benchmarks/results/chain_method.md``); an accelerator runs the chains' operations in one launch each.
    ``parallel`` falls back to it where the devices cannot split the chains, and :func:`pragmodels.fit_many`
    gives it to every fit (a worker has one device).

    Returns
    -------
    {"vectorized", "sequential"}
    """
    return "sequential" if jax.default_backend() == "cpu" else "vectorized"


def _layout(chain_method: str, num_chains: int) -> tuple[str, int]:
    """(method that runs, devices used)."""
    check_one_of("chain_method", chain_method, CHAIN_METHODS)
    if num_chains == 1:
        return "single", 1
    if chain_method == "parallel":
        n_dev = jax.local_device_count()
        # the most devices that split the chains evenly (4 chains on 3 devices: 2 x 2)
        d = max(k for k in range(1, min(n_dev, num_chains) + 1) if num_chains % k == 0)
        return ("parallel", d) if d > 1 else (one_device_chain_method(), 1)
    return chain_method, 1


def build_chain_fn(bound: Callable[..., Any], *, init: str, has_init: bool, num_warmup: int, num_samples: int,
                    target_accept: float, max_tree_depth: int | tuple[int, int],
                    dense_mass: bool | list[tuple[str, ...]], progress_every: int, ticks: int,
                    info: dict[str, Any], mass_matrix: MassMatrix = "adapt") -> Callable[..., Any]:
    """The single-chain program ``(rng_key, init_z, arrays) -> ((samples, stats), ok)``; ``stats``
    holds the draws' statistics and, under :data:`WARMUP_STEPS`, the warm-up's leapfrog steps.

    :func:`run_nuts` maps it over chains; :func:`pragmodels.fit_batched` over data sets too.

    Parameters
    ----------
    bound : callable
        The model with its static values bound (:func:`~pragmodels.inference.compile_cache.bound_model`).
    init, has_init, num_warmup, num_samples, target_accept, max_tree_depth, dense_mass
        As for :func:`run_nuts` (``has_init``: initial values are passed in ``init_z``).
    progress_every, ticks : int
        Tick the progress bar every ``progress_every`` iterations (0: never), ``ticks`` at a time.
    info : dict
        Filled with what tracing learns (the sites and their shapes).
    mass_matrix : {"adapt", "laplace"}
        As for :func:`run_nuts`.

    Returns
    -------
    callable
    """
    check_one_of("mass_matrix", mass_matrix, MASS_MATRICES)
    strategy = init_to_median(num_samples=15) if init == "median" else init_to_uniform()

    def one_chain(rng_key, init_z, arrays):
        # as NUTS.init: one key for the kernel, one for finding initial values
        key_hmc, key_init = jax.random.split(rng_key)
        # the potential reads table likelihoods as count tables (same value and gradient, cheaper)
        model_info = initialize_model(key_init, tabulate_potential(bound), init_strategy=strategy,
                                      dynamic_args=True, model_kwargs=arrays)
        tr = model_info.model_trace
        latent = [n for n, s in tr.items() if s["type"] == "sample" and not s["is_observed"]]
        discrete = [n for n in latent if tr[n]["fn"].support.is_discrete]
        if discrete:
            raise NotImplementedError(f"run_nuts does not enumerate discrete latent sites {discrete}; "
                                      "marginalise them in the model.")
        info["latent_sites"] = tuple(latent)
        info["observed_sites"] = tuple(n for n, s in tr.items() if s["type"] == "sample" and s["is_observed"])
        start = init_z if has_init else model_info.param_info
        z0 = start if has_init else start.z
        dm = dense_mass
        if isinstance(dm, bool):
            dm = [tuple(sorted(z0))] if dm else []  # as NUTS.init
        else:
            dm = [tuple(b) for b in dm]
        laplace = mass_matrix == "laplace"
        hmc_settings = dict(adapt_step_size=True, adapt_mass_matrix=not laplace, dense_mass=dm,
                            target_accept_prob=target_accept, num_steps=None, trajectory_length=None,
                            max_tree_depth=max_tree_depth, find_heuristic_step_size=False,
                            forward_mode_differentiation=False, regularize_mass_matrix=True, model_kwargs=arrays)
        flat0, _ = ravel_pytree(z0)
        cov_l = laplace_covariance(model_info.potential_fn(**arrays), z0) if laplace else None
        phase_one = phase_one_length(num_warmup) if laplace else num_warmup
        init_kernel, sample_kernel = hmc(potential_fn_gen=model_info.potential_fn, algo="NUTS")
        state = init_kernel(start, num_warmup, step_size=1.0, rng_key=key_hmc,
                            inverse_mass_matrix=None if cov_l is None else block_inverse_mass(cov_l, z0, dm),
                            **hmc_settings)
        re_estimate = laplace and phase_one < num_warmup
        # the first phase's draws (unconstrained, flat), from which the Laplace matrix is re-estimated
        first = jnp.zeros((phase_one if re_estimate else 0, flat0.size), flat0.dtype)

        def re_estimated(s, draws):
            """The state with the mass matrix re-estimated from the first phase's last two thirds and
            a fresh step-size adaptation (another kernel's initial state: its sqrt and inverse forms)."""
            assert cov_l is not None
            cov = shrunk_covariance(draws[phase_one // 3:], cov_l)
            init_again, _ = hmc(potential_fn_gen=model_info.potential_fn, algo="NUTS")
            fresh = init_again(s.z, num_warmup - phase_one, step_size=s.adapt_state.step_size, rng_key=s.rng_key,
                               inverse_mass_matrix=block_inverse_mass(cov, z0, dm), **hmc_settings)
            return s._replace(adapt_state=fresh.adapt_state)

        grad_ok = jnp.all(jnp.stack([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(state.z_grad)] or
                                    [jnp.array(True)]))
        ok = jnp.isfinite(state.potential_energy) & grad_ok
        constrain = model_info.postprocess_fn(**arrays)

        def collect(s):
            stats = dict(diverging=s.diverging, n_steps=s.num_steps, acceptance_rate=s.accept_prob,
                         energy=s.energy, lp=-s.potential_energy, step_size=s.adapt_state.step_size)
            return constrain(s.z), stats

        proto = jax.eval_shape(collect, state)
        buf = jax.tree.map(lambda a: jnp.zeros((num_samples,) + a.shape, a.dtype), proto)
        total = num_warmup + num_samples

        def body(i, carry):
            s, b, f, w = carry
            s = sample_kernel(s, model_kwargs=arrays)
            w = w + jnp.where(i < num_warmup, s.num_steps, 0).astype(w.dtype)
            if re_estimate:  # one kernel in the loop, traced once: the switch is a branch at i == phase_one - 1
                f = lax.cond(i < phase_one, lambda ff: lax.dynamic_update_index_in_dim(
                    ff, ravel_pytree(s.z)[0], jnp.minimum(i, phase_one - 1), 0), lambda ff: ff, f)
                s = lax.cond(i == phase_one - 1, lambda ss: re_estimated(ss, f), lambda ss: ss, s)
            # i is the loop counter, not batched over chains: a real branch even under vmap
            b = lax.cond(i >= num_warmup,
                         lambda bb: jax.tree.map(
                             lambda x, v: lax.dynamic_update_index_in_dim(x, v, i - num_warmup, 0),
                             bb, collect(s)),
                         lambda bb: bb, b)
            if progress_every:
                lax.cond(((i + 1) % progress_every == 0) | (i + 1 == total),
                         lambda: jax.debug.callback(functools.partial(_tick, ticks), i),
                         lambda: None)
            return s, b, f, w

        _, (draws, stats), _, warm = lax.fori_loop(0, total, body, (state, buf, first, jnp.zeros((), jnp.int32)))
        return (draws, {**stats, WARMUP_STEPS: warm}), ok

    return one_chain


def _program(one_chain: Callable[..., Any], method: str, n_dev: int, has_init: bool
             ) -> tuple[jax.stages.Wrapped, Callable[..., tuple[Any, Any, Any]]]:
    """jit-ted program over chains, and a function that places its inputs."""
    if method in ("single", "sequential"):
        return jax.jit(one_chain), lambda keys, z, arrays: (keys, z, arrays)
    vm = jax.vmap(one_chain, in_axes=(0, 0, None))
    if method == "vectorized":
        return jax.jit(vm), lambda keys, z, arrays: (keys, z, arrays)
    mesh = Mesh(np.asarray(jax.local_devices()[:n_dev]), ("chain",))
    split, repl = NamedSharding(mesh, PartitionSpec("chain")), NamedSharding(mesh, PartitionSpec())
    fn = jax.shard_map(vm, mesh=mesh, in_specs=(PartitionSpec("chain"), PartitionSpec("chain"), PartitionSpec()),
                       out_specs=PartitionSpec("chain"), check_vma=False)

    def place(keys, z, arrays):
        return (jax.device_put(keys, split), jax.device_put(z, split), jax.device_put(arrays, repl))

    return jax.jit(fn), place


def run_nuts(
    rng_key: int | jax.Array,
    model: Callable[..., Any],
    data: Mapping[str, Any],
    *,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    num_chains: int = 4,
    chain_method: ChainMethod = "parallel",
    target_accept: float = 0.8,
    max_tree_depth: int | tuple[int, int] = 10,
    dense_mass: bool | list[tuple[str, ...]] = False,
    init: Literal["median", "uniform"] = "median",
    init_params: Mapping[str, Any] | None = None,
    progress_bar: bool = False,
    mass_matrix: MassMatrix = "adapt",
) -> NutsRun:
    """Run NUTS on ``model(**data)`` with a compiled program reused by later calls.

    Shapes: ``data`` arrays (any shapes; traced), ``init_params {site: [chain, *site_shape]}``
    -> ``samples {site: [chain, draw, *site_shape]}``, ``stats {name: [chain, draw]}``.

    Parameters
    ----------
    rng_key : int or jax PRNG key
        With several chains, chain ``c`` uses ``jax.random.split(rng_key, num_chains)[c]``
        (as :class:`numpyro.infer.MCMC`).
    model : callable
        NumPyro model taking ``data`` as keyword arguments.
    data : dict
        The model's keyword arguments. Python scalars, strings and ``None`` are static (part of
        the cache key); arrays are traced, so new values of the same shape and dtype reuse the
        compiled program. Values are not validated here (``pragmodels.fit`` traces the model
        eagerly first; inside the compiled program the likelihoods' eager checks are skipped).
    num_warmup, num_samples : int
        Warm-up (adaptation, discarded) and kept iterations per chain.
    num_chains : int
    chain_method : {"parallel", "vectorized", "sequential"}
        ``parallel``: chains split over the most devices (``jax.local_devices()``) that divide
        them evenly, vectorized within a device; where none split them (one device, or 3 chains on 2) it
        runs as one device would (:func:`one_device_chain_method`: ``sequential`` on a CPU).
        ``vectorized``: ``vmap`` over chains in one program. ``sequential``: one chain after the
        other with one compiled single-chain program (shared with ``num_chains=1``).
        :attr:`NutsRun.chain_method` says what ran.
    target_accept : float
        Target acceptance probability of step-size adaptation.
    max_tree_depth : int or (int, int)
        NUTS tree depth limit (warm-up, sampling).
    dense_mass : bool or list of tuples of site names
        As :class:`numpyro.infer.NUTS`.
    init : {"median", "uniform"}
        Start near the prior medians (15 prior draws, unconstrained median) or uniformly in
        (-2, 2) on the unconstrained scale; ignored for chains given ``init_params``.
    init_params : dict, optional
        Unconstrained starting values ``{site: [chain, *site_shape]}`` (leading chain axis also
        for one chain), e.g. ``MultistartResult.init_params`` from
        :mod:`pragmodels.inference.multistart`.
    progress_bar : bool
        Show a ``tqdm`` bar (a separately compiled program with a host callback).
    mass_matrix : {"adapt", "laplace"}
        ``"adapt"``: NumPyro's (Stan's) windowed adaptation from the identity. ``"laplace"``: the
        inverse Hessian of the potential at each chain's start
        (:func:`pragmodels.inference.laplace_mass.laplace_covariance`) for the first two thirds of
        warm-up, then one re-estimate from their draws
        (:func:`~pragmodels.inference.laplace_mass.shrunk_covariance`); the step size adapts
        throughout. The starts must be modes, so it needs ``init_params`` (e.g. optimised starts).

    Returns
    -------
    NutsRun
        ``samples [chain, draw, ...]``, ``stats [chain, draw]``, timings and cache status.

    Raises
    ------
    RuntimeError
        If some chain has no finite log density (or gradient) at its starting point.
    """
    for name, value, low in (("num_warmup", num_warmup, 0), ("num_samples", num_samples, 1),
                             ("num_chains", num_chains, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    if init not in ("median", "uniform"):
        raise ValueError(f"init must be 'median' or 'uniform' (pass init_params for optimised starts); "
                         f"got {init!r}.")
    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must be in (0, 1); got {target_accept!r}.")
    check_one_of("mass_matrix", mass_matrix, MASS_MATRICES)
    if mass_matrix == "laplace" and init_params is None:
        raise ValueError("mass_matrix='laplace' takes the mass matrix from the curvature at each chain's start, "
                         "which must be a mode: pass init_params (optimised starts, e.g. "
                         "pragmodels.inference.multistart.multistart_inits), or use mass_matrix='adapt'.")
    depths = max_tree_depth if isinstance(max_tree_depth, tuple) else (max_tree_depth,)
    if (len(depths) not in (1, 2) or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in depths)):
        raise ValueError(f"max_tree_depth must be an integer >= 1 (or a (warm-up, sampling) pair of them); "
                         f"got {max_tree_depth!r}.")
    key = as_rng_key(rng_key)
    static, arrays = split_data(data)
    method, n_dev = _layout(chain_method, num_chains)
    has_init = init_params is not None
    z: dict[str, jax.Array] = {}
    if init_params is not None:
        z = {k: jnp.asarray(v) for k, v in init_params.items()}
        bad = {k: v.shape for k, v in z.items() if v.ndim == 0 or v.shape[0] != num_chains}
        if bad:
            raise ValueError(f"init_params need a leading chain axis of length {num_chains}; got shapes {bad}.")
    per_program = 1 if method in ("single", "sequential") else num_chains // n_dev
    every = max(1, (num_warmup + num_samples) // 20) if progress_bar else 0
    settings = (num_warmup, num_samples, float(target_accept),
                max_tree_depth if isinstance(max_tree_depth, int) else tuple(max_tree_depth),
                dense_mass_key(dense_mass), init, every, mass_matrix)
    layout = (method, n_dev, num_chains if method in ("vectorized", "parallel") else 1)
    skey = structure_key(model)
    cache_key = ("nuts", skey, static_items(static), data_signature(arrays),
                 data_signature({k: v[0] for k, v in z.items()}) if has_init else None, settings, layout,
                 jax.default_backend(), bool(jax.config.jax_enable_x64))

    if method in ("single", "sequential"):
        keys = [key] if method == "single" else list(jax.random.split(key, num_chains))
        inits = [jax.tree.map(lambda v, c=c: v[c], z) for c in range(len(keys))]
    else:
        keys, inits = [jax.random.split(key, num_chains)], [z]

    entry = lookup(cache_key)
    hit = entry is not None
    compile_s = 0.0
    if entry is None:
        t0 = time.perf_counter()
        info: dict = {}
        bound = functools.partial(model, **static)
        one = build_chain_fn(bound, init=init, has_init=has_init, num_warmup=num_warmup, num_samples=num_samples,
                              target_accept=float(target_accept), max_tree_depth=max_tree_depth,
                              dense_mass=dense_mass, progress_every=every, ticks=every * per_program, info=info,
                              mass_matrix=mass_matrix)
        jitted, place = _program(one, method, n_dev, has_init)
        compiled = jitted.lower(*place(keys[0], inits[0], arrays)).compile()
        compile_s = time.perf_counter() - t0
        info["place"] = place
        label = (f"nuts {model_label(model)} {method}x{layout[2]} "
                 f"{dict((k, s) for k, s, _ in data_signature(arrays))} w{num_warmup}/s{num_samples}")
        entry = CompiledEntry("nuts", label, compiled, bound, compile_s, info)
        store(cache_key, entry)

    t0 = time.perf_counter()
    place = entry.info["place"]
    with _Progress(num_chains * (num_warmup + num_samples), progress_bar):
        outs = [entry.compiled(*place(k, i, arrays)) for k, i in zip(keys, inits)]
        outs = jax.device_get(outs)
    run_s = time.perf_counter() - t0

    if method in ("single", "sequential"):
        (samples, stats), ok = jax.tree.map(lambda *xs: np.stack(xs), *outs)
    else:
        (samples, stats), ok = outs[0]
    stats = dict(stats)
    warmup_steps = np.atleast_1d(stats.pop(WARMUP_STEPS))
    ok = np.atleast_1d(ok)
    if not ok.all():
        bad_chains = [int(c) for c in np.flatnonzero(~ok)]
        raise RuntimeError(f"chains {bad_chains}: the log density or its gradient is not finite at the starting point "
                           "(numpyro found no valid initial values in 100 tries); check the model, its data "
                           "and priors, or pass init_params.")
    stats = dict(stats)
    stats["tree_depth"] = (np.floor(np.log2(np.maximum(stats["n_steps"], 1))) + 1).astype(np.int64)
    return NutsRun(samples=dict(samples), stats=stats, latent_sites=entry.info["latent_sites"],
                   chain_method=method, devices=n_dev, compile_s=compile_s, run_s=run_s, cache_hit=hit,
                   warmup_steps=warmup_steps)


# ----------------------------------------------------------------------------- log-likelihood


def pointwise_log_likelihood(model: Callable[..., Any], samples: Mapping[str, Any] | NutsRun,
                             data: Mapping[str, Any], *, batch_size: int = 256) -> dict[str, np.ndarray]:
    """Log-likelihood of every observation at every draw, for LOO and WAIC.

    Shapes: ``samples {site: [chain, draw, *site_shape]}`` -> ``{observed site: [chain, draw,
    *obs_shape]}``.

    Parameters
    ----------
    model : callable
        The model that produced ``samples``.
    samples : NutsRun or dict
        Draws ``{site: [chain, draw, *site_shape]}`` of the latent sites (a :class:`NutsRun`
        contributes its :attr:`NutsRun.latent` sites only).
    data : dict
        The model's keyword arguments, as for :func:`run_nuts` (static and traced alike).
    batch_size : int
        Draws evaluated together (vectorised); bounds the memory of intermediate tables.

    Returns
    -------
    dict of np.ndarray
        ``{observed site: [chain, draw, *obs_shape]}``, equal to
        ``numpyro.infer.log_likelihood(model, samples, batch_ndims=2, **data)``; compiled once
        per model structure, static values, shapes and ``batch_size``.
    """
    latent: dict[str, Any] = samples.latent if isinstance(samples, NutsRun) else dict(samples)
    if not latent:
        raise ValueError("samples is empty: pass the latent draws, {site: [chain, draw, ...]}.")
    latent = {k: jnp.asarray(v) for k, v in latent.items()}
    lead = {k: v.shape[:2] for k, v in latent.items()}
    if len(set(lead.values())) != 1 or any(len(s) < 2 for s in lead.values()):
        raise ValueError(f"every site in samples needs the same leading [chain, draw] axes; got {lead}.")
    n_chain, n_draw = next(iter(lead.values()))
    static, arrays = split_data(data)
    flat = {k: v.reshape((n_chain * n_draw,) + v.shape[2:]) for k, v in latent.items()}
    b = max(1, min(int(batch_size), n_chain * n_draw))
    cache_key = ("loglik", structure_key(model), static_items(static), data_signature(arrays), data_signature(flat), b,
                 jax.default_backend(), bool(jax.config.jax_enable_x64))
    entry = lookup(cache_key)
    if entry is None:
        t0 = time.perf_counter()
        bound = functools.partial(model, **static)

        def loglik(flat_samples, arrays):
            def one(draw):
                tr = handlers.trace(handlers.substitute(bound, data=draw)).get_trace(**arrays)
                return {n: s["fn"].log_prob(s["value"]) for n, s in tr.items()
                        if s["type"] == "sample" and s["is_observed"]}

            return lax.map(one, flat_samples, batch_size=b)

        compiled = jax.jit(loglik).lower(flat, arrays).compile()
        entry = CompiledEntry("loglik", f"loglik {model_label(model)} {data_signature(arrays)} draws {n_chain * n_draw}",
                       compiled, bound, time.perf_counter() - t0)
        store(cache_key, entry)
    out = jax.device_get(entry.compiled(flat, arrays))
    return {k: np.asarray(v).reshape((n_chain, n_draw) + v.shape[1:]) for k, v in out.items()}
