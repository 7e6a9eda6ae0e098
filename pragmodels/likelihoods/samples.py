"""Literal semantics known only through samples: an LM's answer counts as a Dirichlet-multinomial.

Layering: imports :mod:`pragmodels.validation` and NumPyro.

A language model that can only generate (a hosted chat model) gives its literal listener as N
answers per prompt, parsed to the answer set: counts ``c[u, s]`` (prompt ``u``, answer ``s``). The
frequencies ``c / N`` are not the LM's probabilities: with 32 samples a cell of probability 0.1 is
seen 0 to 7 times. :func:`sampled_semantics` makes the LM's distribution a latent variable,

    theta[u] ~ Dirichlet(concentration, ..., concentration)
    c[u]     ~ Multinomial(N_u, theta[u])

By conjugacy the two lines are, as a density of ``theta``, one: ``theta[u] ~ Dirichlet(concentration +
c[u])`` (site ``name``), which is what is sampled (no observed site for the counts, so that they add
nothing to the log-likelihood a LOO comparison of response models reads). It returns ``log theta
[u, s]`` to use as literal semantics, so that a fit samples it jointly
with alpha and the other parameters, and the intervals of alpha carry the uncertainty of N
samples. ``benchmarks/sampled_semantics.py`` measures what that buys: the coverage of alpha's
intervals for N = 8, 32 and 128, against the frequencies taken as exact probabilities
(``exact=True``, the negative control and what a plug-in analysis does).

In the joint model the response data (people's choices) inform ``theta`` too, as the model says
they should when its RSA agents do reason on the LM's literal listener. Where that feedback is not
wanted, the LM's semantics can be held to what its samples say alone by fitting once per draw of
``theta`` from ``Dirichlet(concentration + c)`` (multiple imputation; :func:`dirichlet_draws`) and
pooling the draws.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike

from pragmodels.validation import bad_integer, concrete

__all__ = ["sampled_semantics", "check_counts", "dirichlet_draws", "frequencies"]


def check_counts(fn: str, counts: ArrayLike) -> None:
    """``counts [prompt, answer]``: non-negative integers, at least one answer per prompt (values checked
    where they are concrete, i.e. not traced).

    Shapes: ``counts [prompt, answer]``.

    Parameters
    ----------
    fn : str
        The caller, named in the message.
    counts : array
        Parsed answers per prompt.

    Raises
    ------
    ValueError
        Names the first offending cell or prompt.
    """
    shape = tuple(jnp.shape(counts))
    if len(shape) != 2 or 0 in shape:
        raise ValueError(f"{fn}: counts must have shape [prompt, answer], at least one of each; got shape {shape}.")
    arr = concrete(counts)
    if arr is None:
        return
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{fn}: counts must be numbers; got dtype {arr.dtype}.")
    bad = bad_integer(arr, 0)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        raise ValueError(f"{fn}: counts{list(i)} = {arr[i].item()!r}; expected a non-negative integer.")
    empty = np.flatnonzero(arr.sum(-1) == 0)
    if empty.size:
        raise ValueError(f"{fn}: prompt {int(empty[0])} has no parsed answer (counts row of zeros); a "
                         "prompt needs at least one sample that parses.")


def frequencies(counts: ArrayLike, smoothing: float = 0.0) -> jax.Array:
    """Log relative frequencies ``log((c + smoothing) / (N + smoothing * n_answers))``: the plug-in estimate.

    Shapes: ``counts [prompt, answer]`` -> ``[prompt, answer]``.

    Parameters
    ----------
    counts : array of int
        Parsed answers per prompt.
    smoothing : float
        Added to every cell (with 0, a cell never seen is ``-inf``).

    Returns
    -------
    jax.Array
    """
    check_counts("frequencies", counts)
    arr = jnp.asarray(counts, dtype=float) + float(smoothing)
    return jnp.log(arr) - jnp.log(arr.sum(-1, keepdims=True))


def sampled_semantics(name: str, counts: ArrayLike, *, concentration: float = 1.0, exact: bool = False,
                      smoothing: float = 0.5, dim: str = "utterance", what: str = "state") -> jax.Array:
    """An LM's literal listener known through sample counts, as log semantics ``[dim, what]``.

    Shapes: ``counts [dim, what]`` (answers parsed per prompt) -> ``log theta [dim, what]``.

    Parameters
    ----------
    name : str
        The latent site ``theta [dim, what]`` (each row on the simplex), Dirichlet(concentration +
        counts) row by row: the prior times the counts' multinomial likelihood.
    counts : array of int
        Parsed answers per prompt (parse failures left out: they are resampled, not counted).
    concentration : float
        The Dirichlet prior's concentration per cell (> 0; 1: uniform over the simplex).
    exact : bool
        True: the frequencies (with ``smoothing`` per cell) taken as the LM's exact probabilities,
        with no site: the plug-in analysis, which overstates what the samples show (the negative
        control of ``benchmarks/sampled_semantics.py``).
    smoothing : float
        Added to every cell with ``exact=True`` (so that an answer never seen keeps a probability).
    dim, what : str
        Names of the axes (the sites' dims).

    Returns
    -------
    jax.Array
        ``log theta [dim, what]``, normalised over ``what``.
    """
    fn = f"sampled_semantics({name!r})"
    check_counts(fn, counts)
    if exact:
        return frequencies(counts, smoothing)
    if isinstance(concentration, bool) or not isinstance(concentration, (int, float)) or not concentration > 0:
        raise ValueError(f"{fn}: concentration must be a number > 0; got {concentration!r}.")
    with numpyro.plate(dim, jnp.shape(counts)[0]):
        theta = numpyro.sample(name, dist.Dirichlet(jnp.asarray(counts, dtype=float) + float(concentration)))
    return jnp.log(jnp.clip(theta, jnp.finfo(theta.dtype).tiny))


def dirichlet_draws(rng_key: int | jax.Array, counts: ArrayLike, n: int, *, concentration: float = 1.0
                    ) -> np.ndarray:
    """``n`` draws of the LM's literal listener from its posterior given the counts alone.

    Shapes: ``counts [prompt, answer]`` -> ``log theta [n, prompt, answer]``.

    Parameters
    ----------
    rng_key : int or jax PRNG key
    counts : array of int
        Parsed answers per prompt.
    n : int
        Number of draws.
    concentration : float
        The Dirichlet prior's concentration per cell.

    Returns
    -------
    numpy.ndarray
    """
    check_counts("dirichlet_draws", counts)
    arr = np.asarray(counts)
    key = jax.random.key(rng_key) if isinstance(rng_key, int) else rng_key
    theta = jax.random.dirichlet(key, jnp.asarray(arr + float(concentration)), shape=(n, *arr.shape[:-1]))
    return np.log(np.clip(np.asarray(theta, dtype=float), np.finfo(float).tiny, None))
