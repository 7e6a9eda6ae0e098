"""Per-trial arrays padded to a few sizes, and the padding masked, so that data sets of different sizes share
compiled programs.

Layering: imports :mod:`pragmodels.inference.compile_cache` (which values are arrays) and
:mod:`pragmodels.model_key`; used by :mod:`pragmodels.inference.fitting` (one data set, padded to its
size bucket) and :mod:`pragmodels.inference.batched` (several, padded to the largest).

A compiled program is specialised to its arrays' shapes, so fitting one model to data sets of 12 sizes
compiles 12 programs and keeps each one (tens of MB apiece). :func:`plan_padding` pads the arrays
whose leading axis is the observations' (their trials) to :func:`bucket_size` (8, 12, 16, 24, 32,
48, ...: at most half of a fit's trials are padding, a third on average) by repeating the last
trial, and masks the padded trials out of every observed site. It is used only where a check shows that
padding changes nothing else: every latent and deterministic site keeps its shape, and the log
density at two draws from the prior is the same to rounding. Otherwise the data are fitted as they
are, and the plan says why.

Padding starts with the second size of a model in a process (:func:`worth_padding`): a model fitted
at one size only (a single fit, or refits of one data set) is fitted as given, without the check's
cost (a few eager traces) or the padded trials' work; once a model meets a second size, its fits go
to size buckets. Each check's verdict is remembered by model, static values and shapes.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike
from numpyro import handlers
from numpyro.infer.util import log_density
from numpyro.primitives import Messenger

from pragmodels.inference.compile_cache import data_signature, split_data, static_items
from pragmodels.model_key import structure_key

__all__ = ["bucket_size", "PadMask", "Masked", "PaddingPlan", "plan_padding", "cut_padding", "worth_padding",
           "forget_sizes", "MIN_BUCKET"]

MIN_BUCKET = 8
# |log density (padded) - log density (as given)| allowed in the check: float32 rounding of sums over
# up to a few hundred thousand terms (the counts are the same; only the order of the sums differs)
_ATOL, _RTOL = 1e-3, 1e-5


_SIZES: OrderedDict[Hashable, set[tuple]] = OrderedDict()  # model key -> data signatures fitted
_VERDICTS: OrderedDict[Hashable, str] = OrderedDict()  # (model key, signature) -> "" or why not padded
_KEEP = 256


def _model_key(model: Callable[..., Any], data: Mapping[str, Any]) -> tuple[Hashable, tuple]:
    static, arrays = split_data(data)
    return (structure_key(model), static_items(static)), data_signature(arrays)


def worth_padding(model: Callable[..., Any], data: Mapping[str, Any]) -> bool:
    """Whether to pad this fit: the model (with these static values) was fitted before at other shapes in
    this process. Records the shapes.

    Parameters
    ----------
    model : callable
    data : mapping
        The model's keyword arguments.

    Returns
    -------
    bool
    """
    key, signature = _model_key(model, data)
    seen = _SIZES.setdefault(key, set())
    _SIZES.move_to_end(key)
    worth = bool(seen - {signature})
    seen.add(signature)
    while len(_SIZES) > _KEEP:
        _SIZES.popitem(last=False)
    return worth


def forget_sizes() -> None:
    """Forget the sizes seen and the checks' verdicts (the next fit of each model starts unpadded).

    Returns
    -------
    None
    """
    _SIZES.clear()
    _VERDICTS.clear()


def bucket_size(n: int) -> int:
    """The padded size of ``n`` trials: the smallest of 8, 12, 16, 24, 32, 48, ... (2^k and 3 x 2^(k-1))
    that is at least ``n``.

    Parameters
    ----------
    n : int
        Number of trials, >= 0.

    Returns
    -------
    int
    """
    if n <= MIN_BUCKET:
        return MIN_BUCKET
    k = math.ceil(math.log2(n))
    lower = 3 * 2 ** (k - 2)  # 1.5 x 2^(k-1), between 2^(k-1) and 2^k
    return lower if lower >= n else 2 ** k


class PadMask(Messenger):
    """Mask the padded trials (``mask [trial]``, True for real ones) of every observed site whose last batch
    axis has the mask's length."""

    def __init__(self, mask: jax.Array):
        super().__init__()
        self.mask = mask

    def process_message(self, msg: dict[str, Any]) -> None:
        if msg["type"] != "sample" or not msg.get("is_observed"):
            return
        batch = tuple(msg["fn"].batch_shape)
        if batch and batch[-1] == self.mask.shape[-1]:
            msg["fn"] = msg["fn"].mask(self.mask)


class Masked:
    """``model`` with an extra argument ``_pad_mask [trial]`` (True for real trials) whose padded trials
    are masked (:class:`PadMask`); without it, ``model`` itself."""

    def __init__(self, model: Callable[..., Any]):
        self.model = model
        self.name = getattr(model, "name", getattr(model, "__name__", "model"))

    def __call__(self, _pad_mask: ArrayLike | None = None, **kwargs: Any) -> Any:
        if _pad_mask is None:
            return self.model(**kwargs)
        with PadMask(jnp.asarray(_pad_mask, bool)):
            return self.model(**kwargs)

    @property
    def __pragmodels_key__(self) -> tuple[Any, ...]:
        return ("masked", structure_key(self.model))


@dataclass
class PaddingPlan:
    """How a fit pads its data: ``n`` trials to ``padded_to`` along the arrays in ``keys``; ``data`` and
    ``model`` are what to run (the padded data with ``_pad_mask``, and :class:`Masked`), or the
    originals with ``reason`` saying why nothing was padded."""

    n: int
    padded_to: int
    model: Callable[..., Any]
    data: Mapping[str, Any]
    keys: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def padded(self) -> bool:
        return self.padded_to > self.n

    def record(self) -> dict[str, Any]:
        """What the provenance records: ``n_trials``, ``padded_to``, the padded ``arrays`` (or ``reason``)."""
        out: dict[str, Any] = {"n_trials": self.n, "padded_to": self.padded_to}
        if self.padded:
            out["arrays"] = list(self.keys)
        else:
            out["reason"] = self.reason
        return out


def _trace(model: Callable[..., Any], data: Mapping[str, Any], seed: int) -> dict[str, Any]:
    return dict(handlers.trace(handlers.seed(model, seed)).get_trace(**data))


def _pad_array(value: Any, n_pad: int) -> np.ndarray:
    arr = np.asarray(value)
    return np.concatenate([arr, np.repeat(arr[-1:], n_pad - arr.shape[0], axis=0)])


def _check(model: Callable[..., Any], data: Mapping[str, Any], masked: Masked, padded: Mapping[str, Any]
           ) -> str:
    """'' if the padded, masked model has the model's sites and log density at a prior draw; else why not."""
    tr, tr_pad = _trace(model, data, 1), _trace(masked, padded, 1)
    for k, s in tr.items():
        if s["type"] not in ("sample", "deterministic") or s.get("is_observed"):
            continue
        if k not in tr_pad or jnp.shape(tr_pad[k]["value"]) != jnp.shape(s["value"]):
            return f"site {k!r} changes shape with the trials"
    for seed in (1, 2):
        draw = tr if seed == 1 else _trace(model, data, seed)  # seed 1's trace is the one above
        latent = {k: s["value"] for k, s in draw.items() if s["type"] == "sample" and not s.get("is_observed")}
        lp = float(log_density(model, (), dict(data), latent)[0])
        if not math.isfinite(lp):
            continue
        lp_pad = float(log_density(masked, (), dict(padded), latent)[0])
        if not abs(lp - lp_pad) <= _ATOL + _RTOL * abs(lp):
            return f"the masked padding changes the log density ({lp:.6g} against {lp_pad:.6g})"
        return ""
    return "the log density at the prior draws checked is not finite"


def plan_padding(model: Callable[..., Any], data: Mapping[str, Any], observed: Mapping[str, Any]
                 ) -> PaddingPlan:
    """Pad the per-trial arrays of ``data`` to :func:`bucket_size` where that provably changes nothing.

    Shapes: the observed sites' values ``[trial, ...]`` (one ``n`` for all); the arrays of ``data`` whose
    leading axis has length ``n`` -> ``[bucket_size(n), ...]``, plus ``_pad_mask [bucket_size(n)]``.

    Parameters
    ----------
    model : callable
        The NumPyro model (with its prior overrides bound).
    data : mapping
        Its keyword arguments, validated.
    observed : mapping of str to array
        The observed sites' values (:attr:`pragmodels.params.ModelInfo.observed_values`).

    Returns
    -------
    PaddingPlan
        ``padded`` is False (and ``reason`` says why) when the observed sites differ in length, have
        no trial axis, are already of a bucket's size, or when padding would change a site's shape or the
        log density.
    """
    # numpyro.factor sites are observed too, with an empty value: they have no trials
    lengths = {int(np.shape(v)[0]) for v in observed.values() if np.ndim(v) >= 1 and np.size(v) > 0}
    if len(lengths) != 1:
        return PaddingPlan(0, 0, model, data,
                           reason="the observed sites have no common trial axis")
    n = lengths.pop()
    n_pad = bucket_size(n)
    if n == 0 or n_pad == n:
        return PaddingPlan(n, n, model, data, reason="the data are already of a bucket's size")
    _, arrays = split_data(data)
    keys = [k for k, v in arrays.items() if v.ndim >= 1 and v.shape[0] == n]
    padded = {**data, **{k: _pad_array(data[k], n_pad) for k in keys}, "_pad_mask": np.arange(n_pad) < n}
    masked = Masked(model)
    key = _model_key(model, data)
    why = _VERDICTS.get(key)
    if why is None:
        try:
            why = _check(model, data, masked, padded)
        except Exception as e:  # a model that cannot take padded data: fitted as it is
            why = f"the model fails on padded data ({type(e).__name__}: {e})"
        _VERDICTS[key] = why
        while len(_VERDICTS) > _KEEP:
            _VERDICTS.popitem(last=False)
    if why:
        return PaddingPlan(n, n, model, data, reason=why)
    return PaddingPlan(n, n_pad, masked, padded, keys)


def cut_padding(arr: np.ndarray, n: int, n_pad: int) -> np.ndarray:
    """Drop the padding from the last axis of length ``n_pad`` after ``[chain, draw]`` (if any).

    Shapes: ``[chain, draw, ..., n_pad, ...]`` -> ``[chain, draw, ..., n, ...]``.
    """
    axes = [i for i in range(2, arr.ndim) if arr.shape[i] == n_pad]
    if not axes or n == n_pad:
        return arr
    return np.take(arr, np.arange(n), axis=axes[-1])
