"""The NUTS mass matrix from the Laplace approximation at a mode (``fit(..., mass_matrix="laplace")``).

Layering: imports ``jax`` only; :mod:`pragmodels.inference.nuts` calls it inside its chain program.

NumPyro's (Stan's) windowed adaptation starts from the identity and re-estimates the inverse mass
matrix at the end of windows of 25, 50, 100, ... warm-up draws. A dense block of ``d`` sites is
then estimated from fewer draws than it has dimensions until the last window, and the
regularised, rank-deficient estimate (``1e-3`` where no draw went) makes NUTS build trees at
the depth cap for most of the warm-up: measured (2026-12-06, the social-meaning RSA model on an
LLM's ratings, 101 dense dimensions) 215 leapfrogs per warm-up iteration against 37 in sampling,
85% of a fit's gradients spent in warm-up. Started at a mode (``init="optimize"`` or
``"basins"``), the inverse Hessian of the potential there is the Laplace approximation of the
posterior covariance. ``mass_matrix="laplace"`` samples the first two thirds of warm-up
(:func:`phase_one_length`) with it as the inverse mass matrix, then re-estimates the matrix once
from the last two thirds of those draws (:func:`shrunk_covariance`: toward the Laplace matrix
rescaled to the draws' variances, which fills the directions fewer draws than dimensions leave
empty and undoes a scale the Laplace matrix got wrong), and adapts the step size throughout
(restarted at the switch). Measured on the same fits (``benchmarks/results/warmup.md``): a short
warm-up at 51-71 leapfrogs per iteration instead of 215-220, and 2.0-3.2x the bulk ESS per
second (compile excluded; the Hessian adds 4-8 s of compiling). Where the posterior is far
from Gaussian (two modes of one parameter within a basin), one re-estimate from a few hundred
draws is not enough and the windowed adaptation does better; the diagnostics say which.

:func:`laplace_inverse_mass` and :func:`block_inverse_mass` give a covariance NumPyro's structured
form: a dense block for each ``dense_mass`` block (its sites' joint covariance, the sites in the
block's order) and one diagonal block for every other site (their marginal variances), which is
what the windowed adaptation estimates by sampling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

__all__ = ["EIGEN_FLOOR", "SHRINK_DRAWS", "MAX_VALUES", "laplace_covariance", "laplace_inverse_mass",
           "block_inverse_mass", "shrunk_covariance", "phase_one_length"]

#: the smallest eigenvalue of the Hessian used (larger ones unchanged): a direction the potential
#: is flat or curved downwards in at the start (no mode there, or a float32 rounding of a nearly
#: flat one) gets standard deviation 10 on the unconstrained scale, rather than an infinite or
#: negative variance; the step size adapts to it during warm-up
EIGEN_FLOOR = 1e-2
#: the Laplace covariance's weight, in draws, when the first phase's draws re-estimate it
#: (:func:`shrunk_covariance`): it fills the directions that fewer draws than dimensions leave empty
SHRINK_DRAWS = 10.0
#: the most unconstrained values ``mass_matrix="laplace"`` takes: the Hessian has their square
#: entries and costs one Hessian-vector product per value
MAX_VALUES = 2000


def phase_one_length(num_warmup: int) -> int:
    """Warm-up iterations with the Laplace matrix before it is re-estimated from their draws: two
    thirds of ``num_warmup``, or all of it (no re-estimate) where that would leave fewer than 10 draws
    to estimate from (the last two thirds of the phase) or no iteration after it.

    Parameters
    ----------
    num_warmup : int
        Warm-up iterations of a chain.

    Returns
    -------
    int
    """
    n1 = (2 * num_warmup) // 3
    return n1 if n1 - n1 // 3 >= 10 and n1 < num_warmup else num_warmup


def shrunk_covariance(draws: jax.Array, prior: jax.Array, weight: float = SHRINK_DRAWS) -> jax.Array:
    """The sample covariance ``S`` of ``draws`` shrunk toward ``prior`` rescaled to the draws' variances:
    ``(n S + weight T) / (n + weight)`` with ``T = D prior D``, ``D = diag(sqrt(S_ii / prior_ii))``.

    ``T`` keeps ``prior``'s correlations (the Laplace approximation's) and takes each value's scale
    from the draws, so a direction ``prior`` got badly wrong (a flat start floored at
    :data:`EIGEN_FLOOR`) does not survive the re-estimate; ``T`` fills the directions that fewer draws
    than dimensions leave empty. A value the draws did not move (``S_ii = 0``) keeps ``prior``'s scale.

    Shapes: ``draws [n, d]``, ``prior [d, d]`` -> ``[d, d]``.

    Parameters
    ----------
    draws : jax.Array
        Unconstrained draws, one per row.
    prior : jax.Array
        The covariance shrunk toward (the Laplace approximation's), positive definite.
    weight : float
        ``T``'s weight in draws.

    Returns
    -------
    jax.Array
    """
    n = draws.shape[0]
    centred = draws - draws.mean(0)
    sample = centred.T @ centred / max(n - 1, 1)
    var, prior_var = jnp.diagonal(sample), jnp.diagonal(prior)
    scale = jnp.sqrt(jnp.where(var > 0, var, prior_var) / prior_var)
    target = prior * scale[:, None] * scale[None, :]
    return (n * sample + weight * target) / (n + weight)


def laplace_covariance(potential: Callable[[dict[str, jax.Array]], jax.Array], z: dict[str, jax.Array]
                       ) -> jax.Array:
    """The inverse Hessian of ``potential`` at ``z``, over ``ravel_pytree(z)`` (sites in sorted order).

    Shapes: ``z {site: [*site_shape]}`` (unconstrained) -> ``[d, d]`` with ``d`` the number of
    unconstrained values.

    Parameters
    ----------
    potential : callable
        The potential energy (minus the log density) of a dict of unconstrained values.
    z : dict of jax.Array
        The point, meant to be a mode.

    Returns
    -------
    jax.Array
        Symmetric positive definite: the Hessian is symmetrised and its eigenvalues raised to at
        least :data:`EIGEN_FLOOR`. A Hessian with a non-finite entry gives the identity (what the
        windowed adaptation starts from).

    Raises
    ------
    ValueError
        More than :data:`MAX_VALUES` unconstrained values.
    """
    flat, unravel = ravel_pytree(z)
    if flat.size > MAX_VALUES:
        raise ValueError(f"mass_matrix='laplace' forms the Hessian of all {flat.size} unconstrained values (at most "
                         f"{MAX_VALUES}: it has their square entries and costs one Hessian-vector product each); use "
                         "mass_matrix='adapt'.")
    hess = jax.hessian(lambda f: potential(unravel(f)))(flat)
    hess = 0.5 * (hess + hess.T)
    finite = jnp.all(jnp.isfinite(hess))
    vals, vecs = jnp.linalg.eigh(jnp.where(finite, hess, jnp.eye(flat.size, dtype=flat.dtype)))
    cov = (vecs / jnp.maximum(vals, EIGEN_FLOOR)) @ vecs.T
    return jnp.where(finite, 0.5 * (cov + cov.T), jnp.eye(flat.size, dtype=flat.dtype))


def laplace_inverse_mass(potential: Callable[[dict[str, jax.Array]], jax.Array], z: dict[str, jax.Array],
                         dense_blocks: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], jax.Array]:
    """NumPyro's structured inverse mass matrix from :func:`laplace_covariance` at ``z``.

    Shapes: ``z {site: [*site_shape]}`` -> ``{block: [n, n]}`` for each dense block (``n`` its
    values, sites in the block's order) and ``{rest: [m]}`` for the other sites (sorted), if any.

    Parameters
    ----------
    potential : callable
        As for :func:`laplace_covariance`.
    z : dict of jax.Array
        Unconstrained values of every latent site.
    dense_blocks : sequence of tuple of str
        The dense blocks (``[]``: all diagonal; ``[tuple(sorted(z))]``: one dense matrix), each
        site in at most one block.

    Returns
    -------
    dict
        The ``inverse_mass_matrix`` argument of :func:`numpyro.infer.hmc.hmc`'s ``init_kernel``
        with ``dense_mass=list(dense_blocks)``.
    """
    return block_inverse_mass(laplace_covariance(potential, z), z, dense_blocks)


def block_inverse_mass(cov: jax.Array, z: dict[str, jax.Array], dense_blocks: Sequence[tuple[str, ...]]
                       ) -> dict[tuple[str, ...], jax.Array]:
    """A covariance over ``ravel_pytree(z)`` in NumPyro's structured form (:func:`laplace_inverse_mass`).

    Shapes: ``cov [d, d]``, ``z {site: [*site_shape]}`` -> ``{block: [n, n]}`` per dense block,
    ``{rest: [m]}`` for the other sites.

    Parameters
    ----------
    cov : jax.Array
        Covariance of the unconstrained values, sites in sorted order.
    z : dict of jax.Array
        A point (only its sites' sizes are read).
    dense_blocks : sequence of tuple of str
        As for :func:`laplace_inverse_mass`.

    Returns
    -------
    dict
    """
    offsets, start = {}, 0
    for site in sorted(z):  # ravel_pytree's order of a dict
        size = int(jnp.size(z[site]))
        offsets[site] = list(range(start, start + size))
        start += size
    out: dict[tuple[str, ...], jax.Array] = {}
    for block in dense_blocks:
        idx = jnp.asarray([i for site in block for i in offsets[site]])
        out[tuple(block)] = cov[idx[:, None], idx[None, :]]
    rest = tuple(site for site in sorted(z) if not any(site in block for block in dense_blocks))
    if rest:
        out[rest] = jnp.diagonal(cov)[jnp.asarray([i for site in rest for i in offsets[site]])]
    return out
