"""Ordinal ratings with each rater's score integrated out (a marginal random-intercept likelihood).

Layering: like :mod:`pragmodels.likelihoods.categorical` (``jax``, ``numpyro``,
:mod:`pragmodels.logmath`; never ``arviz``).

A rater rates several items in one cell of a between-subjects design; its latent score on item
``i`` is ``η_{cell, i} + λ_i ε`` with a one-factor score ``ε ~ N(0, 1)``, and each rating is
ordered-logistic with a lapse. :func:`likert_ratings_by_rater` is the observation site: each
rater's likelihood integrates ``ε`` out by the trapezoidal rule (:func:`quadrature`,
:func:`node_log_probs`), as R's ``ordinal::clmm`` does, so no rater score is a parameter of the
sampler and LOO leaves out one rater at a time; :func:`rater_layout` and :func:`rater_slots` shape
the data. Why integrate rather than sample, why the trapezoidal rule, its accuracy and cost: the
docs page *Declaring models* ("Ratings with each rater's score integrated out").
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike
from numpyro.distributions import constraints

from pragmodels.likelihoods.categorical import check_cutpoints, check_ratings, node_log_probs
from pragmodels.logmath import check_weight
from pragmodels.validation import bad_integer, check_numeric, check_values, concrete as _concrete

__all__ = ["quadrature", "node_log_probs", "RaterRatings", "likert_ratings_by_rater", "rater_layout", "rater_slots"]

N_NODES = 81
HALF_WIDTH = 6.5


def quadrature(n_nodes: int = N_NODES, half_width: float = HALF_WIDTH) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``x [n_nodes]`` and log weights ``log w [n_nodes]`` with ``Σ w f(x) ≈ ∫ f(x) φ(x) dx``
    (trapezoidal rule on ``[−half_width, half_width]``, weights normalised to sum to one so that a
    constant integrates exactly; the mass beyond ``±6.5`` is 8e-11).

    Shapes: returns ``x [n_nodes]``, ``log w [n_nodes]``."""
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, (int, np.integer)) or n_nodes < 3:
        raise ValueError(f"n_nodes must be an integer >= 3; got {n_nodes!r}.")
    if not np.isfinite(half_width) or half_width <= 0:
        raise ValueError(f"half_width must be a positive number; got {half_width!r}.")
    x = np.linspace(-half_width, half_width, int(n_nodes))
    logw = -0.5 * x ** 2
    logw = logw - np.log(np.exp(logw).sum())
    return x, logw


def rater_layout(rater: ArrayLike, cell: ArrayLike, item: ArrayLike, n_raters: int, n_items: int, what: str = "rating") -> tuple[np.ndarray, np.ndarray]:
    """From per-response indices (concrete arrays), each rater's cell ``[rater]`` and the response
    index of each ``[rater, item]`` slot (``−1`` where the rater did not rate the item).

    Raises ``ValueError`` naming the first response that breaks the design: an index out of range, a
    rater in two cells, or a rater who rated an item twice.

    Shapes: ``rater``, ``cell``, ``item [response]`` (0-based integers) -> ``cell_of [n_raters]``
    (``0`` for a rater with no response), ``slot [n_raters, n_items]``."""
    rater, cell, item = (np.asarray(a) for a in (rater, cell, item))
    if not (rater.shape == cell.shape == item.shape) or rater.ndim != 1:
        raise ValueError(f"{what}: rater, cell and item must be one-dimensional arrays of equal length; got shapes "
                         f"{rater.shape}, {cell.shape}, {item.shape}.")
    for name, arr, size in (("rater", rater, n_raters), ("item", item, n_items)):
        bad = bad_integer(arr, 0, size - 1)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{what}: {name}[{i}] = {arr[i].item()!r}; expected an integer in 0..{size - 1}.")
    bad = bad_integer(cell, 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{what}: cell[{i}] = {cell[i].item()!r}; expected a non-negative integer.")
    cell_of = np.full(n_raters, -1, np.int64)
    slot = np.full((n_raters, n_items), -1, np.int64)
    for k, (r, c, i) in enumerate(zip(rater.astype(int), cell.astype(int), item.astype(int))):
        if cell_of[r] not in (-1, c):
            raise ValueError(f"{what}: rater {r} rated in cells {cell_of[r]} and {c} (response {k}); the rater "
                             "likelihood expects each rater to rate one cell (a between-subjects design).")
        if slot[r, i] != -1:
            raise ValueError(f"{what}: rater {r} rated item {i} twice (responses {slot[r, i]} and {k}); the rater "
                             "likelihood expects one rating per rater and item.")
        cell_of[r], slot[r, i] = c, k
    return np.maximum(cell_of, 0), slot


def rater_slots(rater: ArrayLike, cell: ArrayLike, item: ArrayLike, n_raters: int, n_cells: int, n_items: int, what: str = "rating") -> np.ndarray:
    """The raters of each cell, ``[cell, width]`` rater indices padded with ``−1`` (``width``: the
    most raters in one cell), from concrete per-response indices; validated by :func:`rater_layout`.
    Pass it to :func:`likert_ratings_by_rater` when the indices are traced (e.g. as data of
    :func:`pragmodels.fit`): its *shape* must be known when the model is compiled.

    Shapes: ``rater``, ``cell``, ``item [response]`` (0-based integers) -> ``[n_cells, width]``."""
    cell_of, slot = rater_layout(rater, cell, item, n_raters, n_items, what)
    cell_arr = np.asarray(cell)
    if cell_arr.size and cell_arr.max() >= n_cells:
        i = int(np.argmax(cell_arr >= n_cells))
        raise ValueError(f"{what}: cell[{i}] = {cell_arr[i].item()!r}; expected an integer in 0..{n_cells - 1}.")
    rated = (slot >= 0).any(1)
    members = [np.flatnonzero(rated & (cell_of == c)) for c in range(n_cells)]
    out = np.full((n_cells, max([1] + [m.size for m in members])), -1, np.int32)
    for c, m in enumerate(members):
        out[c, :m.size] = m
    return out


class RaterRatings(dist.Distribution):
    """Ratings ``[rater, item]`` with each rater's score integrated out (docs: *Declaring models*).

    ``node_log_probs [cell, item, category, node]``: ``log P(y = k)`` at each quadrature node, the
    lapse mixed in; ``log_weights [node]``; ``cell [rater]``; ``rated [rater, item]`` (True where
    the rater rated the item); ``slots [cell, width]``: :func:`rater_slots`. ``log_prob(value
    [rater, item])`` is ``[rater]``: each rater's marginal log-likelihood (0 for a rater with no
    ratings). The sum over a rater's items is, per cell, a dense product of a (constant) count
    table with that cell's node table, so its gradient is a batched matrix product, not a scatter.
    """

    arg_constraints: dict[str, Any] = {}
    pytree_data_fields = ("node_log_probs", "log_weights", "cell", "rated", "slots")

    def __init__(self, node_log_probs: ArrayLike, log_weights: ArrayLike, cell: ArrayLike, rated: ArrayLike,
                 slots: ArrayLike, *, validate_args: bool | None = None):
        self.node_log_probs = jnp.asarray(node_log_probs)
        self.log_weights = jnp.asarray(log_weights, self.node_log_probs.dtype)
        self.cell = jnp.asarray(cell, jnp.int32)
        self.rated = jnp.asarray(rated, bool)  # not ``mask``: that is Distribution.mask, which handlers call
        self.slots = jnp.asarray(slots, jnp.int32)
        super().__init__(batch_shape=self.rated.shape[:1], event_shape=self.rated.shape[1:], validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(-1, self.node_log_probs.shape[2] - 1)

    def log_prob(self, value: ArrayLike) -> jax.Array:
        n_cat = self.node_log_probs.shape[2]
        value = jnp.asarray(value, jnp.int32)
        used = self.slots >= 0
        who = jnp.where(used, self.slots, 0)  # [cell, width]
        seen = self.rated[who] & used[..., None]  # [cell, width, item]
        onehot = jax.nn.one_hot(jnp.clip(value[who], 0, n_cat - 1), n_cat, dtype=self.node_log_probs.dtype)
        onehot = onehot * seen[..., None]  # [cell, width, item, cat]
        per_node = jnp.einsum("cwik,cikq->cwq", onehot, self.node_log_probs)
        per_slot = jax.nn.logsumexp(per_node + self.log_weights, axis=-1)  # [cell, width]
        return jnp.zeros(self.rated.shape[0], per_slot.dtype).at[who].add(jnp.where(used, per_slot, 0.0))

    def sample(self, key: jax.Array, sample_shape: tuple[int, ...] = ()) -> jax.Array:
        k_node, k_y = jax.random.split(key)
        shape = tuple(sample_shape) + self.rated.shape[:1]
        node = jax.random.categorical(k_node, self.log_weights, shape=shape)  # [..., rater]
        by_node = jnp.moveaxis(self.node_log_probs[self.cell], -1, 0)  # [node, rater, item, cat]
        lp = by_node[node, jnp.arange(shape[-1])]  # [..., rater, item, cat]
        y = jax.random.categorical(k_y, lp)
        return jnp.where(self.rated, y, -1)


def likert_ratings_by_rater(name: str, latent: ArrayLike, cutpoints: ArrayLike, loading: ArrayLike,
                            obs: ArrayLike | None = None, *, rater: ArrayLike, cell: ArrayLike, item: ArrayLike,
                            n_raters: int, slots: ArrayLike | None = None, lapse: ArrayLike = 0.0, low: int = 1,
                            dim: str = "rater",
                            item_dim: str = "item", n_nodes: int = N_NODES, half_width: float = HALF_WIDTH
                            ) -> jax.Array:
    """Ordinal ratings of raters who each rated items of one cell, their scores integrated out
    (docs: *Declaring models*, "Ratings with each rater's score integrated out").

    Shapes: ``latent [cell, item]`` and ``cutpoints [item, K − 1]`` (strictly increasing; concrete
    values are checked) on the logistic scale, ``loading [item]`` (the rater score's loading on that scale); per response ``rater``,
    ``cell``, ``item [response]`` and ``obs [response]`` integer ratings in ``low .. low + K − 1``.
    The observed site ``name`` is the ``[rater, item]`` matrix of 0-based categories (``−1``: not
    rated) under ``numpyro.plate(dim, n_raters)``; returns it. ``slots``: :func:`rater_slots`,
    computed here from concrete indices; pass it when they are traced (a ``ValueError`` says so).
    """
    for arg, given in (("latent", latent), ("cutpoints", cutpoints), ("loading", loading)):
        check_numeric(f"site {name!r}", arg, given)
    latent, cutpoints, loading = jnp.asarray(latent), jnp.asarray(cutpoints), jnp.asarray(loading)
    if latent.ndim != 2 or cutpoints.shape[:1] != latent.shape[1:] or cutpoints.ndim != 2 or loading.shape != latent.shape[1:]:
        raise ValueError(f"site {name!r}: expected latent [cell, item], cutpoints [item, K-1] and loading [item]; got "
                         f"shapes {latent.shape}, {cutpoints.shape}, {loading.shape}.")
    site = f"site {name!r}"
    check_weight(lapse, site, "lapse")
    if jnp.ndim(lapse) != 0:
        raise ValueError(f"{site}: lapse must be a scalar (one lapse for every rating); got shape {jnp.shape(lapse)}.")
    check_values(site, "latent", latent)
    check_cutpoints(site, cutpoints)
    check_values(site, "loading", loading)
    n_cell, n_item = latent.shape
    k = cutpoints.shape[1] + 1
    r_a, c_a, i_a = (_concrete(a) for a in (rater, cell, item))
    if r_a is not None and c_a is not None and i_a is not None:
        found = rater_slots(r_a, c_a, i_a, n_raters, n_cell, n_item, what=f"site {name!r}")
        s_arr = _concrete(slots)
        if slots is None:
            slots = found
        elif s_arr is not None and not np.array_equal(s_arr, found):
            raise ValueError(f"site {name!r}: slots do not match the data's raters per cell; pass "
                             "rater_slots(rater, cell, item, n_raters, n_cells, n_items) of these data.")
    elif slots is None:
        raise ValueError(f"site {name!r}: rater, cell and item are traced (e.g. data of pragmodels.fit), so the "
                         "raters per cell cannot be read from them; pass slots=rater_slots(rater, cell, item, "
                         "n_raters, n_cells, n_items) computed from the data.")
    check_ratings(name, obs, low, k)
    rater_j, cell_j, item_j = (jnp.asarray(a, jnp.int32) for a in (rater, cell, item))
    cell_of_j = jnp.zeros(n_raters, jnp.int32).at[rater_j].set(cell_j)
    rated = jnp.zeros((n_raters, n_item), bool).at[rater_j, item_j].set(True)
    value = None
    if obs is not None:
        value = jnp.full((n_raters, n_item), -1, jnp.int32).at[rater_j, item_j].set(jnp.asarray(obs, jnp.int32) - low)
    x, logw = quadrature(n_nodes, half_width)
    shifted = latent[:, :, None] + loading[None, :, None] * jnp.asarray(x, latent.dtype)  # [cell, item, node]
    lp = node_log_probs(shifted, cutpoints[None, :, None, :], lapse)  # [cell, item, node, K]
    fn = RaterRatings(jnp.moveaxis(lp, -1, 2), logw, cell_of_j, rated, slots, validate_args=False)
    with numpyro.plate(dim, n_raters):
        return numpyro.sample(name, fn, obs=value,
                              infer={"pragmodels": {"observation": True, "dims": (item_dim,)}})
