"""The NUTS mass matrix from the Laplace approximation at a mode (``fit(..., mass_matrix="laplace")``).

Layering: imports ``jax`` only; :mod:`pragmodels.inference.nuts` calls it inside its chain program.

NumPyro's (Stan's) windowed adaptation starts from the identity and re-estimates the inverse mass
matrix at the end of windows of 25, 50, 100, ... warm-up draws. A dense block of ``d`` sites is
then estimated from fewer draws than it has dimensions until the last window, and the
regularised, rank-deficient estimate (``1e-3`` where no draw went) makes NUTS build trees at
the depth cap for most of the warm-up: measured (2026-12-06, the social-meaning RSA model on an
LLM's ratings, 101 dense dimensions) 212 leapfrogs per warm-up iteration against 34 in sampling,
84% of a fit's gradients spent in warm-up. Started at a mode (``init="optimize"`` or
``"basins"``), the inverse Hessian of the potential there is the Laplace approximation of the
posterior covariance: used as the inverse mass matrix, fixed, with warm-up adapting only the step
size, the same fit reached the same effective sample size per leapfrog in sampling after a
warm-up of 200 iterations at 35 leapfrogs each (benchmarks/results/warmup.md).

:func:`laplace_inverse_mass` computes it in NumPyro's structured form: a dense block for each
``dense_mass`` block (its sites' joint covariance, the sites in the block's order) and one
diagonal block for every other site (their marginal variances), which is what the windowed
adaptation estimates by sampling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

__all__ = ["EIGEN_FLOOR", "laplace_covariance", "laplace_inverse_mass"]

#: the smallest eigenvalue of the Hessian used (larger ones unchanged): a direction the potential
#: is flat or curved downwards in at the start (no mode there, or a float32 rounding of a nearly
#: flat one) gets standard deviation 10 on the unconstrained scale, rather than an infinite or
#: negative variance; the step size adapts to it during warm-up
EIGEN_FLOOR = 1e-2


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
    """
    flat, unravel = ravel_pytree(z)
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
    cov = laplace_covariance(potential, z)
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
