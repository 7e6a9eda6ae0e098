"""Simulated data sets with known parameters (for recovery checks, benchmarks and the demo job).

Layering: imports :mod:`pragmodels.agents` and :mod:`pragmodels.semantics`; NumPy randomness
with an explicit seed. Returns plain dicts that :func:`pragmodels.fit` accepts as ``data``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from pragmodels import agents
from pragmodels.logmath import check_weight
from pragmodels.semantics import boolean_semantics, threshold_semantics
from pragmodels.validation import check_int, check_values

__all__ = ["REFERENCE_LEXICON", "REFERENCE_UTTERANCES", "REFERENCE_STATES",
           "reference_game_speaker", "scale_listener_by_item"]

REFERENCE_UTTERANCES = ("blue", "green", "square", "circle")
REFERENCE_STATES = ("blue square", "blue circle", "green square")
REFERENCE_LEXICON = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0]])


def _draw(rng: np.random.Generator, log_p: npt.ArrayLike) -> np.ndarray:
    """One index draw per row of ``log_p [..., option]`` -> ``[...]``."""
    p = np.exp(np.asarray(log_p, float))
    p /= p.sum(-1, keepdims=True)
    u = rng.uniform(size=p.shape[:-1] + (1,))
    return (p.cumsum(-1) < u).sum(-1).clip(0, p.shape[-1] - 1)


def reference_game_speaker(seed: int, n_per_state: int = 80, alpha: float = 2.0, cost: float = 0.5,
                           lapse: float = 0.0) -> dict[str, Any]:
    """Speaker choices in the blue/green square/circle game; only "square" costs ``cost``.

    Shapes: returns ``log_semantics [utterance=4, state=3]``, ``state [trial]`` and ``choice
    [trial]`` (``trial = 3 * n_per_state``), ``cost_design [utterance=4, cost_term=1]``.

    The arguments have the ranges of the command line's config (``seed`` and ``n_per_state`` ints,
    ``n_per_state >= 1``, ``alpha >= 0``, ``lapse`` in ``[0, 1]``): anything else is a ``ValueError``.
    """
    fn = "reference_game_speaker"
    check_int(fn, "seed", seed, 0)
    check_int(fn, "n_per_state", n_per_state, 1)
    check_values(fn, "alpha", alpha)
    if alpha < 0:
        raise ValueError(f"{fn}: alpha = {alpha!r}; expected a rationality >= 0.")
    check_values(fn, "cost", cost)
    check_weight(lapse, fn, "lapse")
    rng = np.random.default_rng(seed)
    sem = boolean_semantics(REFERENCE_LEXICON)
    cost_design = np.array([[0.0], [0.0], [1.0], [0.0]])
    log_s = agents.lapse_mixture(agents.pragmatic_speaker(sem, alpha, jnp.asarray(cost_design[:, 0] * cost)), lapse)
    state = np.repeat(np.arange(3), n_per_state)
    return dict(log_semantics=sem, state=state, choice=_draw(rng, np.asarray(log_s)[state]),
                cost_design=cost_design)


def scale_listener_by_item(seed: int, n_items: int = 100, n_per_item: int = 40, n_states: int = 21,
                           alpha_mu: float = 1.0, alpha_sigma: float = 0.5) -> tuple[dict[str, Any], np.ndarray]:
    """Listener guesses on a discretised 0-100 scale, rationality varying by item.

    Utterances are "at least t" for t in {0, 20, 40, 60, 80}; each item has its own alpha
    ``exp(alpha_mu + alpha_sigma z)``. Returns ``(data, true_alpha)``.

    Shapes: ``data``: ``log_semantics [utterance=5, state=n_states]``, ``item``, ``utterance`` and
    ``choice [trial]`` (``trial = n_items * n_per_item``); ``true_alpha [n_items]``.

    The arguments have the ranges of the command line's config (ints ``seed >= 0``, ``n_items``,
    ``n_per_item >= 1``, ``n_states >= 2``; ``alpha_sigma >= 0``): anything else is a ``ValueError``.
    """
    fn = "scale_listener_by_item"
    check_int(fn, "seed", seed, 0)
    check_int(fn, "n_items", n_items, 1)
    check_int(fn, "n_per_item", n_per_item, 1)
    check_int(fn, "n_states", n_states, 2)
    check_values(fn, "alpha_mu", alpha_mu)
    check_values(fn, "alpha_sigma", alpha_sigma)
    if alpha_sigma < 0:
        raise ValueError(f"{fn}: alpha_sigma = {alpha_sigma!r}; expected a standard deviation >= 0.")
    rng = np.random.default_rng(seed)
    values = np.linspace(0, 100, n_states)
    sem = threshold_semantics(values, [0, 20, 40, 60, 80])
    alpha = np.exp(alpha_mu + alpha_sigma * rng.standard_normal(n_items))
    lis = np.asarray(jax.vmap(lambda a: agents.pragmatic_listener(sem, a))(jnp.asarray(alpha, jnp.float32)))
    item = np.repeat(np.arange(n_items), n_per_item)
    utt = rng.integers(0, sem.shape[0], item.size)
    return dict(log_semantics=sem, item=item, utterance=utt, choice=_draw(rng, lis[item, utt]),
                n_items=n_items), alpha
