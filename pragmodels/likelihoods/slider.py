"""Raw slider responses on an integer scale (e.g. 0..100) from a belief over a grid of states.

Layering: :func:`slider_kernel` and :func:`slider_log_probs` are pure JAX (``jax``,
:mod:`pragmodels.logmath`, :mod:`pragmodels.validation`); :func:`slider_responses` is an
observation model built on :func:`pragmodels.likelihoods.categorical.choices` (this module makes
no ``numpyro.sample`` call of its own).

A belief ``p(s)`` over states with values ``v_s`` is reported as an integer ``g`` in ``low ..
high``: ``P(g) = (1 - lapse) Σ_s p(s) K(g | v_s, width) + lapse / n``, ``K`` a Gaussian
discretised onto the integers and truncated at the ends; an optional ``rounding`` share reports
the nearest multiple of ``round_to`` instead (:func:`rounding_matrix`). Values and gradients stay
finite for ``width > 0`` and ``lapse``, ``rounding`` in ``[0, 1]``. :func:`slider_values` and
:func:`check_slider_values` make and check the scale. The formulas in full: the docs page
*Declaring models* ("Slider responses").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from pragmodels.likelihoods.categorical import Rows, check_table, choices
from pragmodels.logmath import log_mix_uniform, log_normalize
from pragmodels.validation import check_numeric, concrete

#: scaled kernel mass treated as 0 (above float32's smallest normal number, so 1 / mass stays finite)
_TINY = 1e-30

__all__ = ["slider_values", "check_slider_values", "slider_kernel", "rounding_matrix", "slider_log_probs",
           "slider_responses"]


def _check_scale(fn: str, low: int, high: int) -> None:
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{fn}: {name} must be a Python int (the slider's end); got {v!r}.")
    if not high > low:
        raise ValueError(f"{fn}: need high > low; got low={low}, high={high}.")


def _check_width(fn: str, width: ArrayLike) -> None:
    check_numeric(fn, "width", width)
    arr = concrete(width)
    if arr is None:
        return
    if arr.ndim != 0:
        raise ValueError(f"{fn}: width must be a scalar (one kernel width, in slider units); got shape {arr.shape}.")
    if not (np.isfinite(arr) and arr > 0):
        raise ValueError(f"{fn}: width = {arr.item()!r}; expected a finite kernel width > 0 (in slider units).")


def slider_values(low: int = 0, high: int = 100) -> np.ndarray:
    """The integer values of a slider, ``low, low + 1, ..., high``.

    Parameters
    ----------
    low, high : int
        The slider's ends (inclusive).

    Returns
    -------
    numpy.ndarray
        int64 ``[value]`` with ``high - low + 1`` entries.

    Shapes: -> ``[value]`` (``high - low + 1``).
    """
    _check_scale("slider_values", low, high)
    return np.arange(low, high + 1)


def check_slider_values(values: ArrayLike, low: int = 0, high: int = 100, name: str = "guess") -> np.ndarray:
    """Raise a ``ValueError`` naming the first value that is not an integer in ``low .. high``.

    Eager (call it outside ``jit``): raw responses such as ``57`` pass, ``101``, ``-1``, ``57.5``
    and NaN do not.

    Parameters
    ----------
    values : array_like
        Raw slider responses, any shape.
    low, high : int
        The slider's ends (inclusive).
    name : str
        What the message calls the values.

    Returns
    -------
    numpy.ndarray
        The values as int64, same shape.

    Raises
    ------
    ValueError
        Naming the index and the value.

    Shapes: ``values [...]`` -> int64 ``[...]``.
    """
    _check_scale("check_slider_values", low, high)
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf" and arr.dtype != bool:
        raise ValueError(f"{name} must be numeric slider values in {low}..{high}; got dtype {arr.dtype}.")
    f = arr.astype(np.float64)
    bad = ~((f >= low) & (f <= high) & (f == np.round(f)))
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0]) if arr.ndim else ()
        where = f"{name}{list(i)}" if arr.ndim else name
        raise ValueError(f"{where} = {arr[i].item()!r}; expected an integer slider value in {low}..{high} "
                         f"({int(bad.sum())} such value(s)).")
    return f.astype(np.int64)


def slider_kernel(state_values: ArrayLike, width: ArrayLike, *, low: int = 0, high: int = 100) -> jax.Array:
    """Log of the response kernel ``K(g | v_s, width)``: a Gaussian on the integers ``low .. high``.

    ``log K[s, g] = -(g - v_s)² / (2 width²) - log Σ_{g'} exp(-(g' - v_s)² / (2 width²))``
    (docs: *Declaring models*, "Slider responses"), normalised over ``g``.

    Parameters
    ----------
    state_values : array_like
        The value of each state on the slider's scale, ``[state]`` (need not be integers).
    width : array_like
        The kernel's standard deviation, a scalar > 0 in slider units (may be traced).
    low, high : int
        The slider's ends (inclusive).

    Returns
    -------
    jax.Array
        ``log K [state, value]``, ``value`` running over ``low .. high``.

    Raises
    ------
    ValueError
        A concrete ``width <= 0`` (or NaN, or not a scalar), or bad ends.

    Shapes: ``state_values [state]``, ``width []`` -> ``[state, value]`` (``high - low + 1`` values).
    """
    _check_scale("slider_kernel", low, high)
    _check_width("slider_kernel", width)
    check_numeric("slider_kernel", "state_values", state_values)
    v = jnp.asarray(state_values)
    if v.ndim != 1 or v.shape[0] == 0:
        raise ValueError(f"slider_kernel: state_values must have shape [state] (at least one); got shape {v.shape}.")
    v = v.astype(jnp.result_type(v.dtype, jnp.float32))
    w = jnp.asarray(width, v.dtype)
    g = jnp.arange(low, high + 1, dtype=v.dtype)
    z = (g[None, :] - v[:, None]) / w
    return log_normalize(-0.5 * z * z, axis=1)


def rounding_matrix(low: int = 0, high: int = 100, round_to: int = 10) -> np.ndarray:
    """``R[g*, g]``: the probability that a meant value ``g*`` is reported as ``g`` when rounded.

    ``g`` runs over the multiples of ``round_to`` in ``low .. high``; ``g*`` goes to the nearest
    one, and a ``g*`` half-way between two goes to each with probability 1/2 (values beyond the
    outermost multiple go to it).

    Parameters
    ----------
    low, high : int
        The slider's ends (inclusive).
    round_to : int
        The rounding step, an int >= 2 with at least one multiple in ``low .. high``.

    Returns
    -------
    numpy.ndarray
        float64 ``[value, value]``, rows summing to 1.

    Raises
    ------
    ValueError
        A ``round_to`` that is not an int >= 2, or has no multiple on the slider.

    Shapes: -> ``[value, value]`` (``high - low + 1`` each).
    """
    _check_scale("rounding_matrix", low, high)
    if isinstance(round_to, bool) or not isinstance(round_to, (int, np.integer)) or round_to < 2:
        raise ValueError(f"rounding_matrix: round_to = {round_to!r}; expected an int >= 2 (the rounding step).")
    g = np.arange(low, high + 1)
    targets = g[g % round_to == 0]
    if targets.size == 0:
        raise ValueError(f"rounding_matrix: round_to = {round_to} has no multiple in {low}..{high}.")
    dist = np.abs(g[:, None] - targets[None, :]).astype(float)
    nearest = dist == dist.min(axis=1, keepdims=True)
    r = np.zeros((g.size, g.size))
    r[:, targets - low] = nearest / nearest.sum(axis=1, keepdims=True)
    return r


def _check_rounding(fn: str, rounding: ArrayLike) -> None:
    check_numeric(fn, "rounding", rounding)
    arr = concrete(rounding)
    if arr is None:
        return
    if arr.ndim != 0 or not (np.isfinite(arr) and 0 <= arr <= 1):
        raise ValueError(f"{fn}: rounding = {arr.tolist()!r}; expected a scalar share of rounded responses in [0, 1].")


def _round(out: jax.Array, rounding: ArrayLike, low: int, high: int, round_to: int) -> jax.Array:
    """``log[(1 - ρ) P* + ρ P* R]`` for log-probabilities ``out [..., value]`` (max-scaled, exact)."""
    if isinstance(rounding, (int, float)) and rounding == 0:
        return out  # statically off
    r = jnp.asarray(rounding_matrix(low, high, round_to), out.dtype)
    rho = jnp.asarray(rounding, out.dtype)
    m = jnp.max(out, axis=-1, keepdims=True)
    c = jax.lax.stop_gradient(jnp.where(m > -jnp.inf, m, 0.0))
    q = jnp.exp(out - c)
    mix = (1.0 - rho) * q + rho * (q @ r)
    ok = mix > _TINY
    return jnp.where(ok, jnp.log(jnp.where(ok, mix, 1.0)) + c, -jnp.inf)


def slider_log_probs(log_p_state: ArrayLike, state_values: ArrayLike, width: ArrayLike, lapse: ArrayLike = 0.0,
                     *, rounding: ArrayLike = 0.0, round_to: int = 10, low: int = 0, high: int = 100) -> jax.Array:
    """Log-probabilities of every slider value given beliefs over states (docs: *Declaring models*).

    ``log P(g) = log[(1 - lapse) Σ_s p(s) K(g | v_s, width) + lapse / n]``: the mixture over
    states is a matrix product with each row of beliefs scaled by its largest entry (exact
    gradient), then :func:`pragmodels.logmath.log_mix_uniform` mixes in the lapse. Mass below
    ``1e-30`` of the row's largest belief (log-probabilities ~69 nats under the mode) is taken as
    0, i.e. ``-inf`` before the lapse: any lapse > 0 then explains such a value.

    Parameters
    ----------
    log_p_state : array_like
        Log-beliefs ``[..., state]``, normalised over ``state`` (e.g. a listener's row for the
        utterance heard; any leading axes such as ``item``).
    state_values : array_like
        ``[state]``, the states' values on the slider's scale.
    width : array_like
        Kernel standard deviation, a scalar > 0 (slider units).
    lapse : array_like
        Share of uniform responses in ``[0, 1]``: a scalar or ``log_p_state``'s leading shape.
    rounding : array_like
        Share ``ρ`` of responses rounded to a multiple of ``round_to`` (a scalar in ``[0, 1]``;
        0 turns rounding off).
    round_to : int
        The rounding step (:func:`rounding_matrix`).
    low, high : int
        The slider's ends.

    Returns
    -------
    jax.Array
        ``[..., value]`` normalised over the ``high - low + 1`` values.

    Shapes: ``log_p_state [..., state]``, ``state_values [state]``, ``width []``, ``lapse []`` or
    ``[...]`` -> ``[..., value]``.
    """
    lp = jnp.asarray(log_p_state)
    _check_rounding("slider_log_probs", rounding)
    log_k = slider_kernel(state_values, width, low=low, high=high)
    if lp.ndim == 0 or lp.shape[-1] != log_k.shape[0]:
        raise ValueError(f"slider_log_probs: log_p_state must have shape [..., state] with {log_k.shape[0]} states "
                         f"(one per state value); got shape {lp.shape}.")
    check_table("slider_log_probs", lp, what="state", name="log_p_state")
    # Σ_s p(s) K(g | s) as a matrix product, each row scaled by its largest belief (5x faster than
    # a log-sum-exp over states, gradient included); the constant shift is stop-gradiented in both
    # places, so the gradient is exact. A value whose mass falls below _TINY times the mode's
    # (log-probability ~69 nats below it) is taken as 0: the lapse explains it.
    m = jnp.max(lp, axis=-1, keepdims=True)
    c = jax.lax.stop_gradient(jnp.where(m > -jnp.inf, m, 0.0))
    mass = jnp.exp(lp - c) @ jnp.exp(log_k)
    ok = mass > _TINY
    out = jnp.where(ok, jnp.log(jnp.where(ok, mass, 1.0)) + c, -jnp.inf)
    return log_mix_uniform(_round(out, rounding, low, high, round_to), lapse, axis=-1)


def slider_responses(name: str, log_p_state: ArrayLike, obs: ArrayLike | None = None, *,
                     state_values: ArrayLike, width: ArrayLike, lapse: ArrayLike = 0.0,
                     rounding: ArrayLike = 0.0, round_to: int = 10, rows: Rows | None = None, low: int = 0,
                     high: int = 100, dim: str = "trial") -> jax.Array:
    """Observed raw slider responses (an observation site; the model: docs, *Declaring models*).

    The site holds ``g - low``, the response's index among the slider's values (``g`` itself
    when ``low = 0``): with ``rows``, a :class:`pragmodels.likelihoods.categorical.TableCategorical` over the
    table ``[condition, value]``, so that the kernel mixture is computed once per condition (e.g.
    per item), not per trial; one log-likelihood per trial for LOO and the predictive.

    Parameters
    ----------
    name : str
        Site name (e.g. ``"guess"``).
    log_p_state : array_like
        ``[condition, state]`` beliefs (with ``rows``) or ``[dim, state]`` (one row per trial).
    obs : array_like, optional
        Raw responses ``[dim]``, integers in ``low .. high``; ``None`` to predict.
    state_values : array_like
        ``[state]``, the states' values on the slider.
    width : array_like
        Kernel standard deviation > 0 (slider units), a scalar.
    lapse : array_like
        Uniform-response share in ``[0, 1]``.
    rounding : array_like
        Share of responses rounded to a multiple of ``round_to`` (scalar in ``[0, 1]``).
    round_to : int
        The rounding step.
    rows : int array or tuple of them, optional
        ``[dim]``: the row of ``log_p_state`` each trial answers from (as
        :func:`pragmodels.likelihoods.categorical.choices`).
    low, high : int
        The slider's ends.
    dim : str
        The observation plate's name.

    Returns
    -------
    jax.Array
        The site's value ``[dim]`` (``g - low``).

    Raises
    ------
    ValueError
        A concrete response that is not an integer in ``low .. high`` (by index and value), a
        concrete ``width <= 0``, a lapse outside ``[0, 1]``, or bad ``rows`` (as ``choices``).

    Shapes: ``log_p_state [condition, state]`` (with ``rows [dim]``) or ``[dim, state]``,
    ``obs [dim]`` integers in ``low..high``, ``state_values [state]`` -> ``[dim]``.
    """
    idx: ArrayLike | None = None
    if obs is not None:
        arr = concrete(obs)
        if arr is not None:
            idx = check_slider_values(arr, low, high, name) - low
        else:
            idx = jnp.asarray(obs) - low
    check_table(f"site {name!r}", log_p_state, what="state", name="log_p_state")
    table = slider_log_probs(log_p_state, state_values, width, 0.0, rounding=rounding, round_to=round_to,
                             low=low, high=high)
    return choices(name, table, idx, lapse=lapse, dim=dim, what="slider value", rows=rows)
