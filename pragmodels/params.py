"""Declared parameters: each latent parameter of a model is declared once, with its prior and dims.

Layering: imports ``jax``, ``numpyro`` and :mod:`pragmodels.priors`; the latent ``numpyro.sample``
sites of pragmodels models are made here (observed ones in :mod:`pragmodels.likelihoods`).

- :func:`param` samples a parameter from its prior unless an override is in force (``fit(...,
  priors=...)`` or a config replaces the prior by name; a number fixes the parameter); the prior
  actually used is recorded on the trace site, which :func:`inspect_model` reads.
- ``dims=`` names the axes of an array-valued parameter; :func:`scaled_param` samples one in units
  of another quantity; :func:`deterministic` records a derived quantity with its dims.
- Group effects: :func:`group_effect` (non-centred), :func:`sum_to_zero_effect` (summing to zero
  over its groups, on the Helmert contrasts of :func:`sum_to_zero_basis`); :func:`ordinal_cutpoints`
  (an ordinal scale's cutpoints); :func:`with_priors` binds prior overrides to a model.

How a model is written with them: the docs page *Declaring models* ("Parameters and priors").
"""

from __future__ import annotations

import contextvars
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.typing import ArrayLike
from numpyro import handlers
from numpyro.primitives import _PYRO_STACK, Messenger, apply_stack

from pragmodels.priors import FAMILIES, Prior, as_prior

__all__ = [
    "param",
    "prior_in_force",
    "scaled_param",
    "deterministic",
    "group_effect",
    "sum_to_zero_effect",
    "sum_to_zero_basis",
    "ordinal_cutpoints",
    "with_priors",
    "inspect_model",
    "ModelInfo",
    "site_dims",
    "STANDARD_NORMAL",
]

#: key of pragmodels' metadata in a trace site's ``infer`` dict
INFER_KEY = "pragmodels"
STANDARD_NORMAL = Prior("Normal", loc=0.0, scale=1.0)
_FIXED = "pragmodels_fixed"  # message type of a parameter fixed by an override (not sampled)
# never mutated: overrides are set as a new mapping
_OVERRIDES: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar("pragmodels_priors", default={})  # noqa: B039

#: a link of :func:`group_effect` named by a string
Link = Literal["identity", "exp", "sigmoid", "softplus"]
LINKS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "identity": lambda x: x,
    "exp": jnp.exp,
    "sigmoid": jax.nn.sigmoid,
    "softplus": jax.nn.softplus,
}


def _dims(name: str, dims: Mapping[str, int] | None) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if dims is None:
        return (), ()
    if not isinstance(dims, Mapping):
        raise TypeError(f"{name!r}: dims must be a mapping {{dim name: size}}, e.g. {{'item': 100}}; got {dims!r}.")
    names, sizes = tuple(dims), tuple(dims.values())
    for d, n in zip(names, sizes):
        if not isinstance(d, str) or not d.isidentifier():
            raise ValueError(f"{name!r}: dim name {d!r} must be an identifier (a singular noun, e.g. 'item').")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{name!r}: dims[{d!r}] = {n!r}; expected a positive int (the axis size).")
    return names, sizes


def param(name: str, prior: Prior | Mapping[str, Any] | float, *,
          dims: Mapping[str, int] | None = None) -> jax.Array | float:
    """Declare and sample the latent parameter ``name`` with default prior ``prior``.

    Parameters
    ----------
    name : str
        Site name; also the key by which ``fit(..., priors=...)`` overrides the prior.
    prior : Prior, prior spec dict or float
        The default prior; a number fixes the parameter at that value (it is then not sampled,
        and recorded as fixed).
    dims : mapping of str to int, optional
        Names and sizes of the parameter's axes, outermost first. The trailing axes must match
        the prior's event shape (e.g. the simplex of a ``Dirichlet``); the prior's own batch
        shape is broadcast to the leading ones. Needed whenever one draw is not a scalar.

    Returns
    -------
    jax.Array or float
        Shape ``tuple(dims.values())`` (times any enclosing plates); a fixed scalar is returned
        as a Python float.

    Shapes: -> ``[*plates, *dims]`` (the axes named by ``dims``, outermost first; ``[]`` without
    ``dims``).
    """
    names, sizes = _dims(name, dims)
    spec = prior_in_force(name, prior)
    if isinstance(spec, float):
        # a scalar stays a Python float, so e.g. a lapse fixed at 0 is statically off in the graph
        value = jnp.full(sizes, spec) if sizes else spec
        if _PYRO_STACK:
            apply_stack({"type": _FIXED, "name": name, "value": value, "cond_indep_stack": [],
                         "infer": {INFER_KEY: {"prior": spec, "dims": names}}})
        return value
    d = spec.distribution()
    event = tuple(d.event_shape)
    if not names:
        if spec.shape():
            raise ValueError(f"parameter {name!r}: its prior {spec} has shape {spec.shape()}; name the axes "
                             f"with dims={{...}} (sizes {spec.shape()}).")
    else:
        n_batch = len(sizes) - len(event)
        if n_batch < 0 or tuple(sizes[n_batch:]) != event:
            raise ValueError(f"parameter {name!r}: dims {dict(zip(names, sizes))} do not end in the prior's "
                             f"event shape {event} ({spec}).")
        batch = tuple(sizes[:n_batch])
        try:
            d = d.expand(batch)
        except ValueError:
            raise ValueError(f"parameter {name!r}: the prior {spec} (batch shape {tuple(d.batch_shape)}) does "
                             f"not broadcast to dims {dict(zip(names, sizes))}.") from None
        if batch:
            d = d.to_event(len(batch))
    return numpyro.sample(name, d, infer={INFER_KEY: {"prior": spec, "dims": names}})


def prior_in_force(name: str, prior: Prior | Mapping[str, Any] | float) -> Prior | float:
    """The prior :func:`param` gives ``name`` here: the override in force (bound by
    :class:`with_priors` or passed as ``fit(..., priors=...)``), else ``prior``.

    Lets a model check a parameter's prior before declaring it (e.g. that a rationality's
    support lies in ``[0, inf)``), which no single draw can show.

    Parameters
    ----------
    name : str
        The parameter's site name.
    prior : Prior, prior spec dict or float
        The default prior, as given to :func:`param`.

    Returns
    -------
    Prior or float
        The prior in force, or the number a parameter is fixed at.
    """
    overrides = _OVERRIDES.get()
    return as_prior(overrides[name] if name in overrides else prior, f"prior of parameter {name!r}")


#: families whose draws divided by a positive ``unit`` stay in the family: which parameters are
#: divided by the unit (locations, scales), which are multiplied by it (rates) and which are shifted
#: by ``-log(unit)`` (the location of a log-normal, whose log is divided by nothing)
_SCALE_FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "Normal": (("loc", "scale"), (), ()),
    "HalfNormal": (("scale",), (), ()),
    "Cauchy": (("loc", "scale"), (), ()),
    "HalfCauchy": (("scale",), (), ()),
    "StudentT": (("loc", "scale"), (), ()),
    "Laplace": (("loc", "scale"), (), ()),
    "Exponential": ((), ("rate",), ()),
    "Gamma": ((), ("rate",), ()),
    "LogNormal": ((), (), ("loc",)),
}


def scaled_param(name: str, prior: Prior | Mapping[str, Any] | float, *, unit: ArrayLike, unit_name: str,
                 site: str, dims: Mapping[str, int] | None = None) -> jax.Array | float:
    """Declare the parameter ``name`` with prior ``prior`` but sample it in units of ``unit``.

    The site ``site`` holds ``name / unit``, sampled from ``prior`` rescaled (its locations and
    scales divided by ``unit``, its rates multiplied), and ``name = unit * site`` is recorded as a
    deterministic. The prior of ``name`` given ``unit`` is exactly ``prior``, so the posterior is
    the one :func:`param` gives; only the sampler's geometry differs. Use it where the likelihood
    sees ``name`` only through ``name / unit`` (an effect on a latent scale measured against the
    response noise): the sampled coordinate is then what the data pin, and the ridge along which
    ``name`` and ``unit`` grow together is gone.

    ``prior`` (or an override ``priors={name: ...}``, which applies as for :func:`param`) must be a
    scale family: one of ``Normal``, ``HalfNormal``, ``Cauchy``, ``HalfCauchy``, ``StudentT``,
    ``Laplace``, ``Exponential``, ``Gamma``, ``LogNormal``. A number fixes ``name`` (no site is sampled).
    ``unit`` must be positive and broadcast to ``dims``' sizes (its trailing axes). The record
    (:meth:`ModelInfo.priors_record`) lists ``site`` with the prior of ``name`` and the unit.

    Shapes: ``unit`` broadcasting to ``[*dims]`` -> ``[*dims]``.
    """
    names, sizes = _dims(name, dims)
    overrides = _OVERRIDES.get()
    spec = as_prior(overrides[name] if name in overrides else prior, f"prior of parameter {name!r}")
    if isinstance(spec, float):
        return param(name, spec, dims=dims)
    if spec.family not in _SCALE_FAMILIES:
        raise ValueError(f"scaled_param {name!r}: its prior {spec} is not a scale family; expected one of "
                         f"{sorted(_SCALE_FAMILIES)}.")
    if spec.shape():
        raise ValueError(f"scaled_param {name!r}: its prior {spec} has shape {spec.shape()}; give a scalar "
                         "prior (it applies to every element).")
    u = jnp.asarray(unit, jnp.float32)
    try:
        u = jnp.broadcast_to(u, sizes)
    except ValueError:
        raise ValueError(f"scaled_param {name!r}: the unit {unit_name!r} (shape {tuple(u.shape)}) does not "
                         f"broadcast to dims {dict(zip(names, sizes))}.") from None
    divided, multiplied, shifted = _SCALE_FAMILIES[spec.family]
    cls, _ = FAMILIES[spec.family]
    kwargs = {k: (v / u if k in divided else v * u if k in multiplied else v - jnp.log(u) if k in shifted
                  else jnp.broadcast_to(v, sizes))
              for k, v in ((k, jnp.asarray(v, jnp.float32)) for k, v in spec.params.items())}
    d = cls(**kwargs)
    if sizes:
        d = d.to_event(len(sizes))
    meta = {"prior": spec, "dims": names, "scaled": {"parameter": name, "unit": unit_name}}
    raw = numpyro.sample(site, d, infer={INFER_KEY: meta})
    return deterministic(name, u * raw, dims=dims)


def deterministic(name: str, value: ArrayLike, *, dims: Mapping[str, int] | None = None) -> jax.Array:
    """Record a derived quantity in the trace (and so in the posterior) with named dims.

    ``dims`` names the value's trailing axes (all of them unless an enclosing plate names the
    leading ones); its sizes must match ``value``'s shape.

    Shapes: ``value [..., *dims]`` -> the same array (as recorded in the trace).
    """
    names, sizes = _dims(name, dims)
    value = jnp.asarray(value)
    if names and tuple(value.shape[value.ndim - len(sizes):]) != sizes:
        raise ValueError(f"deterministic {name!r}: dims {dict(zip(names, sizes))} do not match its shape "
                         f"{tuple(value.shape)}.")
    if not _PYRO_STACK:
        return value
    msg = apply_stack({"type": "deterministic", "name": name, "value": value, "cond_indep_stack": [],
                       "infer": {INFER_KEY: {"dims": names}}})
    return msg["value"]


def _declares(spec: Any) -> TypeGuard[Prior | Mapping[str, Any] | float]:
    """Whether a hyperparameter spec is declared as a parameter (a prior, or a number fixing it)
    rather than an array computed in the model and used as is."""
    return isinstance(spec, (Prior, Mapping, int, float)) and not isinstance(spec, bool)


def _hyper(name: str, spec: Prior | Mapping[str, Any] | ArrayLike) -> jax.Array | float:
    """A hyperparameter: a prior (sampled as ``name``), a number (fixed) or an array (used as is)."""
    if _declares(spec):
        return param(name, spec)
    return jnp.asarray(spec)


def group_effect(name: str, *, dim: str, size: int, loc: Prior | Mapping[str, Any] | ArrayLike,
                 scale: Prior | Mapping[str, Any] | ArrayLike,
                 link: Link | Callable[[jax.Array], jax.Array] = "identity", centred: bool = False) -> jax.Array:
    """A group-level effect: ``name[g] = link(x[g])``, ``x[g] ~ Normal(loc, scale)``.

    Declares ``{name}_mu`` (from ``loc``) and ``{name}_sigma`` (from ``scale``). ``loc``/``scale``
    may be priors (sampled), numbers (fixed) or arrays computed elsewhere in the model (used as
    given, not declared). ``link``: ``"identity"``, ``"exp"`` (a log-normal effect, e.g. a
    rationality per item), ``"sigmoid"``, ``"softplus"`` or a callable.

    ``centred=False`` (default, non-centred): ``x = loc + scale * z`` with ``{name}_z ~ Normal(0, 1)``
    declared (dims ``{dim: size}``) and ``name`` recorded as a deterministic. Best where each
    group's data say little (the funnel between ``scale`` and the effects then lies in the prior).
    ``centred=True``: ``x`` itself is sampled, as ``name`` (identity link) or ``{name}_latent``,
    and recorded as hierarchical (:attr:`ModelInfo.hierarchical`). Best where each group's data pin
    its effect: non-centred, ``z = (x - loc) / scale`` then narrows as ``scale`` grows, a funnel
    that NUTS meets as divergences at large ``scale``. Give ``scale`` a prior with no mass at 0
    (e.g. log-normal) when fitting with ``init="optimize"``: with mass at 0 the centred density is
    unbounded as ``scale -> 0`` and an optimiser can end there.

    Shapes: ``loc`` and ``scale`` scalars or arrays broadcasting to ``[dim]`` -> ``[dim]``.
    """
    if isinstance(link, str):
        if link not in LINKS:
            raise ValueError(f"group_effect {name!r}: link={link!r}; expected one of {sorted(LINKS)} or a callable.")
        fn = LINKS[link]
    elif callable(link):
        fn = link
    else:
        raise TypeError(f"group_effect {name!r}: link must be a name or a callable; got {link!r}.")
    mu = _hyper(f"{name}_mu", loc)
    sigma = _hyper(f"{name}_sigma", scale)
    if not centred:
        z = param(f"{name}_z", STANDARD_NORMAL, dims={dim: size})
        return deterministic(name, fn(jnp.asarray(mu + sigma * z)), dims={dim: size})
    _dims(name, {dim: size})  # the same checks as a declared parameter's dims
    site = name if fn is LINKS["identity"] else f"{name}_latent"
    given = f"Normal(loc={_describe(f'{name}_mu', loc)}, scale={_describe(f'{name}_sigma', scale)})"
    d = dist.Normal(jnp.broadcast_to(jnp.asarray(mu, jnp.float32), (size,)),
                    jnp.broadcast_to(jnp.asarray(sigma, jnp.float32), (size,))).to_event(1)
    x = numpyro.sample(site, d, infer={INFER_KEY: {"hierarchical": given, "dims": (dim,)}})
    return x if site == name else deterministic(name, fn(x), dims={dim: size})


def sum_to_zero_basis(n: int) -> np.ndarray:
    """An orthonormal basis of the vectors of length ``n`` that sum to zero (Helmert contrasts).

    ``Q Qᵀ = I − 11ᵀ / n``, so ``Q z`` with ``z ~ N(0, τ² I_{n−1})`` has the distribution of
    ``x − x̄`` with ``x ~ N(0, τ² I_n)``: :func:`sum_to_zero_effect` samples a centred effect on it.

    Parameters
    ----------
    n : int
        The length of the vectors (at least 2).

    Returns
    -------
    numpy.ndarray
        Shapes: ``[n, n − 1]``; column ``k − 1`` contrasts the first ``k`` entries with entry ``k``.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"sum_to_zero_basis: n = {n!r}; expected an int >= 2.")
    q = np.zeros((n, n - 1))
    for k in range(1, n):
        q[:k, k - 1] = 1.0 / np.sqrt(k * (k + 1))
        q[k, k - 1] = -k / np.sqrt(k * (k + 1))
    return q


def sum_to_zero_effect(name: str, scale: ArrayLike, *, dim: str, size: int, dims: Mapping[str, int] | None = None,
                       centred: bool = False, scale_name: str = "scale", unit: ArrayLike | None = None,
                       unit_name: str | None = None, site: str | None = None) -> jax.Array:
    """A group effect that sums to zero over its groups: ``name[g] ~ x[g] − x̄``, ``x[g] ~ N(0, scale)``.

    With a level elsewhere in the model, the effects then carry no common shift (no ridge between
    the level and their mean). The same prior, two parametrisations for the sampler:

    - ``centred=False`` (default): ``{name}_raw ~ Normal(0, 1)`` (dims ``{dim: size, **dims}``) and
      ``name = (raw − mean over dim) * scale``: for groups the data say little about;
    - ``centred=True``: the ``size − 1`` Helmert contrasts (:func:`sum_to_zero_basis`) are sampled,
      ``z ~ Normal(0, scale)`` as ``{name}_contrast`` (dims ``{dim}_contrast`` and ``dims``; recorded
      as hierarchical, :attr:`ModelInfo.hierarchical`), and ``name = Q z``: for groups the data
      pin each. With ``unit`` (e.g. the response noise), ``z`` is sampled in units of it
      (``Normal(0, scale / unit)``; default site ``{name}_contrast_units``) and ``name = Q (z * unit)``.

    ``name`` is recorded as a deterministic with dims ``{dim: size, **dims}``.

    Parameters
    ----------
    name : str
        The effect's site name.
    scale : array_like
        Its scale (a value computed in the model, e.g. a sampled group scale).
    dim : str
        The groups' dim (the effects sum to zero over it: the first axis).
    size : int
        The number of groups (at least 2).
    dims : dict, optional
        Further dims after ``dim`` (e.g. ``{"attribute": 6}``: one effect per group and attribute).
    centred : bool
        Sample the contrasts (True) or the raw standard normals (False).
    scale_name : str
        How ``scale`` reads in the hierarchical record, ``"Normal(loc=0, scale=<scale_name>)"``.
    unit : array_like, optional
        Sample the centred contrasts in units of this (broadcast like ``scale``).
    unit_name : str, optional
        How ``unit`` reads in the record (``"scale / unit"`` when None).
    site : str, optional
        The sampled site's name (default ``{name}_raw``, ``{name}_contrast`` or ``{name}_contrast_units``).

    Returns
    -------
    jax.Array
        Shapes: ``scale`` and ``unit`` broadcasting to ``[*dims]`` -> ``[dim, *dims]``, summing to
        zero over the first axis.
    """
    extra = dict(dims or {})
    _dims(name, {dim: size, **extra})
    if size < 2:
        raise ValueError(f"sum_to_zero_effect {name!r}: size = {size}; a sum-to-zero effect needs at least 2 groups.")
    full = {dim: size, **extra}
    if not centred:
        raw = jnp.asarray(param(site or f"{name}_raw", STANDARD_NORMAL, dims=full))
        return deterministic(name, (raw - raw.mean(0)) * scale, dims=full)
    shape = (size - 1, *extra.values())
    basis = jnp.asarray(sum_to_zero_basis(size), jnp.float32)  # [dim, contrast]
    u = jnp.ones(()) if unit is None else unit
    given = scale_name if unit is None else f"{scale_name} / {unit_name or 'unit'}"
    d = dist.Normal(jnp.zeros(shape), jnp.broadcast_to(scale / u, shape)).to_event(len(shape))
    z = numpyro.sample(site or (f"{name}_contrast" if unit is None else f"{name}_contrast_units"), d,
                       infer={INFER_KEY: {"hierarchical": f"Normal(loc=0, scale={given})",
                                          "dims": (f"{dim}_contrast", *extra)}})
    return deterministic(name, jnp.tensordot(basis, z * u, axes=1), dims=full)


def ordinal_cutpoints(name: str, gap_prior: Prior | Mapping[str, Any], *, n_categories: int, low: float,
                      high: float, dims: Mapping[str, int] | None = None, gap_dim: str = "gap") -> jax.Array:
    """Cutpoints of an ordinal scale whose outer two are fixed and whose inner ones are free.

    The first cutpoint is ``low``, the last ``high`` (e.g. 1.5 and 6.5 on a 1-7 rating scale, which
    fixes the latent scale's location and unit); the ``n_categories − 3`` between them sit at the
    cumulative shares of ``n_categories − 2`` positive gaps, sampled as ``name`` from ``gap_prior``
    (Gamma gaps normalised: a Dirichlet simplex). Nothing is recorded but the gaps: record the
    cutpoints with :func:`deterministic` where the model wants them.

    Parameters
    ----------
    name : str
        The gaps' site name.
    gap_prior : Prior or dict
        The gaps' prior (positive support, e.g. ``Prior("Gamma", concentration=4.0, rate=1.0)``).
    n_categories : int
        Categories of the scale (at least 3).
    low, high : float
        The first and the last cutpoint, ``low < high``.
    dims : dict, optional
        Further dims, one set of cutpoints each (e.g. ``{"attribute": 6}``).
    gap_dim : str
        The gaps' dim.

    Returns
    -------
    jax.Array
        Shapes: ``[*dims, n_categories − 1]``, increasing along the last axis.
    """
    if isinstance(n_categories, bool) or not isinstance(n_categories, (int, np.integer)) or n_categories < 3:
        raise ValueError(f"ordinal_cutpoints {name!r}: n_categories = {n_categories!r}; expected an int >= 3.")
    if not low < high:
        raise ValueError(f"ordinal_cutpoints {name!r}: low = {low!r} must be below high = {high!r}.")
    extra = dict(dims or {})
    gaps = jnp.asarray(param(name, gap_prior, dims={gap_dim: n_categories - 2, **extra}))  # [gap, *dims]
    w = jnp.cumsum(gaps, 0) / gaps.sum(0)  # the last row is 1
    cut = jnp.concatenate([jnp.zeros((1, *extra.values()), w.dtype), w], 0)  # [cutpoint, *dims], 0 .. 1
    return jnp.moveaxis(cut, 0, -1) * (high - low) + low


def _describe(hyper: str, spec: Any) -> str:
    """How a group effect's location or scale reads in its record: the hyperparameter's name when
    it is sampled or fixed by :func:`_hyper`, ``"given"`` for an array computed in the model."""
    return hyper if _declares(spec) else "given"


class _ReplaceUndeclared(Messenger):
    """Overrides for latent sites made by a plain ``numpyro.sample`` (not :func:`param`): the
    site's distribution is replaced by the override's, broadcast to the site's shape, and the
    prior in force is recorded as for a declared parameter. Fixing such a site needs :func:`param`."""

    def __init__(self, priors: Mapping[str, Any]):
        super().__init__()
        self.priors = priors

    def process_message(self, msg: dict[str, Any]) -> None:
        if msg["type"] != "sample" or msg.get("is_observed") or INFER_KEY in (msg.get("infer") or {}):
            return
        name: str = msg["name"]  # every sample message is named
        if name not in self.priors:
            return
        spec = self.priors[name]
        if not isinstance(spec, Prior):
            raise ValueError(f"priors[{name!r}] = {spec!r}: {name!r} is a plain numpyro.sample site; only "
                             "parameters declared with pragmodels.param can be fixed to a number.")
        old = msg["fn"]
        shape = tuple(old.batch_shape) + tuple(old.event_shape)
        d = spec.distribution()
        event = tuple(d.event_shape)
        n_batch = len(shape) - len(event)
        if n_batch < 0 or shape[n_batch:] != event:
            raise ValueError(f"priors[{name!r}] = {spec}: its event shape {event} does not fit the site's shape {shape}.")
        d = d.expand(shape[:n_batch])
        n_event = len(old.event_shape) - len(event)
        if n_event > 0:
            d = d.to_event(n_event)
        msg["fn"] = d
        msg["infer"] = {**(msg.get("infer") or {}), INFER_KEY: {"prior": spec, "dims": ()}}


class with_priors:  # noqa: N801 - used like a handler
    """``model`` with some priors replaced: ``with_priors(model, {"alpha": Prior(...), "lapse": 0.0})``.

    Hashable and picklable when ``model`` is, so compiled kernels are shared between equal
    overrides. Overrides nest: an inner ``with_priors`` wins for the names it sets.
    """

    def __init__(self, model: Callable[..., Any], priors: Mapping[str, Any]):
        if not isinstance(priors, Mapping):
            raise TypeError(f"priors must be a mapping {{parameter: Prior or number}}; got {priors!r}.")
        self.model = model
        self.priors = tuple(sorted((str(k), as_prior(v, f"priors[{k!r}]")) for k, v in priors.items()))
        self.name = getattr(model, "name", getattr(model, "__name__", type(model).__name__))
        self.__name__ = str(self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        token = _OVERRIDES.set({**_OVERRIDES.get(), **dict(self.priors)})
        try:
            with _ReplaceUndeclared(dict(self.priors)):
                return self.model(*args, **kwargs)
        finally:
            _OVERRIDES.reset(token)

    @property
    def __pragmodels_key__(self) -> tuple[Any, ...]:
        from pragmodels.model_key import (
            structure_key,  # compiled programs are keyed by structure
        )

        return ("with_priors", structure_key(self.model), self.priors)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, with_priors) and (self.model, self.priors) == (other.model, other.priors)

    def __hash__(self) -> int:
        return hash((self.model, self.priors))

    def __repr__(self) -> str:
        return f"with_priors({self.model!r}, {dict(self.priors)!r})"


def site_dims(site: Mapping[str, Any]) -> list[str | None]:
    """Dim names of a trace site's value, outermost first (``None`` where nothing names an axis).

    Declared dims (:func:`param`, :func:`deterministic`) name the trailing axes, plate names the
    batch axes.

    Parameters
    ----------
    site : mapping
        A NumPyro trace site (``handlers.trace(...).get_trace(...)[name]``).

    Returns
    -------
    list of str or None
        One entry per axis of ``site["value"]``.
    """
    shape = tuple(jnp.shape(site["value"]))
    out: list[str | None] = [None] * len(shape)
    declared = site.get("infer", {}).get(INFER_KEY, {}).get("dims", ())
    n_event = len(declared) if site["type"] != "sample" else len(getattr(site["fn"], "event_shape", ()))
    if declared:
        out[len(shape) - len(declared):] = list(declared)
    n_batch = len(shape) - n_event
    for frame in site.get("cond_indep_stack", []):
        pos = n_batch + frame.dim
        if 0 <= pos < n_batch and out[pos] is None:
            out[pos] = frame.name
    return out


@dataclass
class ModelInfo:
    """What one trace of a model shows: its parameters with the priors in force (``priors``:
    ``{name: Prior | float}``, a float being a fixed value), latent sample sites not declared with
    :func:`param` (``undeclared``: ``{name: distribution repr}``), the centred effects of
    :func:`group_effect` (``hierarchical``: ``{name: "Normal(loc=..., scale=...)"}``), the sites of
    :func:`scaled_param` (``scaled``: ``{site: {"parameter": name, "unit": unit name}}``; their entry in
    ``priors`` is the prior of the parameter, not of the site), observed sites, deterministic
    sites and every site's dims. ``unobserved``: observation sites of
    :mod:`pragmodels.likelihoods.categorical` that were given no data (what predictive draws fill in)."""

    priors: dict[str, Prior | float] = field(default_factory=dict)
    fixed: dict[str, float] = field(default_factory=dict)
    undeclared: dict[str, str] = field(default_factory=dict)
    hierarchical: dict[str, str] = field(default_factory=dict)
    scaled: dict[str, dict[str, str]] = field(default_factory=dict)
    observed: list[str] = field(default_factory=list)
    unobserved: list[str] = field(default_factory=list)
    deterministic: list[str] = field(default_factory=list)
    dims: dict[str, list[str | None]] = field(default_factory=dict)
    observed_values: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def latent(self) -> list[str]:
        """Names of the sampled latent sites (declared or not), in trace order."""
        return [k for k in self.dims if k in self.priors or k in self.undeclared or k in self.hierarchical]

    def priors_record(self) -> dict[str, Any]:
        """JSON-ready record of what was sampled: declared priors, fixed values, other sites."""
        out: dict[str, Any] = {k: v.to_dict() for k, v in self.priors.items() if isinstance(v, Prior)}
        for k, how in self.scaled.items():  # the prior is that of how["parameter"]; the site is it / unit
            out[k] = {"prior_of": how["parameter"], "divided_by": how["unit"], **out[k]}
        out.update({k: {"fixed": v} for k, v in self.fixed.items()})
        out.update({k: {"undeclared": v} for k, v in self.undeclared.items()})
        out.update({k: {"hierarchical": v} for k, v in self.hierarchical.items()})
        return dict(sorted(out.items()))

    def named_dims(self, name: str) -> list[str]:
        """Dims of site ``name`` with unnamed axes called ``{name}_dim_{i}`` (ArviZ's default)."""
        return [d if d is not None else f"{name}_dim_{i}" for i, d in enumerate(self.dims.get(name, []))]

    def arviz_dims(self, extra: Mapping[str, list[str]] | None = None) -> dict[str, list[str]]:
        """``{site: dims}`` for every site with axes (ArviZ's ``dims=``), updated with ``extra``."""
        out = {k: self.named_dims(k) for k in self.dims if self.dims[k]}
        out.update(extra or {})
        return out


def _dist_repr(fn: Any) -> str:
    base = fn
    while hasattr(base, "base_dist"):
        base = base.base_dist
    params = {k: getattr(base, k) for k in getattr(base, "arg_constraints", {}) if hasattr(base, k)}
    args = ", ".join(f"{k}={float(v):g}" if jnp.ndim(v) == 0 else f"{k}=array{tuple(jnp.shape(v))}"
                     for k, v in params.items())
    return f"{type(base).__name__}({args})"


def inspect_model(model: Callable[..., Any], data: Mapping[str, Any], priors: Mapping[str, Any] | None = None
                  ) -> ModelInfo:
    """Trace ``model(**data)`` once (eagerly, seed 0) and report its sites (:class:`ModelInfo`).

    Parameters
    ----------
    model : callable
        A NumPyro model (possibly wrapped in :class:`with_priors`).
    data : mapping
        The model's keyword arguments.
    priors : mapping, optional
        Prior overrides ``{name: Prior | spec dict | float}``, applied first (as in
        :func:`pragmodels.fit`).

    Returns
    -------
    ModelInfo
        The priors in force, fixed values, undeclared latent sites, observed and unobserved
        observation sites, deterministic sites, and every site's dims (:func:`site_dims`).

    Raises
    ------
    ValueError
        A name in ``priors`` (or bound by :class:`with_priors`) that is not a parameter of the
        model: the message names it, suggests the nearest parameter and lists them all. Errors
        of the model itself (e.g. invalid data) propagate.
    """
    run = with_priors(model, priors) if priors else model
    tr = handlers.trace(handlers.seed(run, 0)).get_trace(**data)
    # every override in force, including those a factory bound with with_priors
    overrides: dict[str, Any] = {}
    inner = run
    while isinstance(inner, with_priors):
        overrides = {**dict(inner.priors), **overrides}
        inner = inner.model
    info = ModelInfo()
    for name, site in tr.items():
        meta = site.get("infer", {}).get(INFER_KEY, {}) if isinstance(site.get("infer"), dict) else {}
        if site["type"] == _FIXED:
            info.fixed[name] = meta["prior"]
        elif site["type"] == "sample" and site["is_observed"]:
            info.observed.append(name)
            info.observed_values[name] = site["value"]
        elif site["type"] == "sample" and meta.get("observation"):
            info.unobserved.append(name)  # an observation model given no data: predicted
        elif site["type"] == "sample":
            if "prior" in meta:
                info.priors[name] = meta["prior"]
                if "scaled" in meta:
                    info.scaled[name] = dict(meta["scaled"])
            elif "hierarchical" in meta:
                info.hierarchical[name] = meta["hierarchical"]
            else:
                info.undeclared[name] = _dist_repr(site["fn"])
        elif site["type"] == "deterministic":
            info.deterministic.append(name)
        else:
            continue
        info.dims[name] = site_dims(site)
    if overrides:
        # a scaled_param is overridden by its parameter's name, not by its site's
        declared = ((set(info.priors) - set(info.scaled)) | set(info.fixed) | set(info.undeclared)
                    | {how["parameter"] for how in info.scaled.values()})
        for k in overrides:
            if k not in declared:
                near = difflib.get_close_matches(k, sorted(declared), n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                if k in info.scaled:
                    how = info.scaled[k]
                    hint = f" (did you mean {how['parameter']!r}? {k!r} is it sampled in units of {how['unit']!r})"
                raise ValueError(f"priors[{k!r}]: no parameter {k!r} in this model{hint}; "
                                 f"its parameters are {sorted(declared)}.")
    return info
