"""Declarative priors: a user-facing spec kept separate from the NumPyro distribution it builds.

Layering: imports ``numpy``, and ``numpyro.distributions`` (never ``numpyro.sample``) only when a
distribution is built; used by :mod:`pragmodels.params` (which samples) and by configs
(:meth:`Prior.from_dict`, which a config's schema calls before JAX is loaded).

A :class:`Prior` names a family and its parameters. Parameters are numbers or arrays (nested
lists), so array-valued priors (a location per utterance) and simplex families (``Dirichlet``)
are one spec each; :meth:`Prior.shape` is the shape of one draw. A prior is hashable and
JSON-serialisable (:meth:`Prior.to_dict`), so it keys compiled kernels and travels in
provenance attributes and configs unchanged.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

if TYPE_CHECKING:
    import numpyro.distributions as dist

__all__ = ["Prior", "FAMILIES", "FAMILY_PARAMETERS", "as_prior", "priors_to_json"]

#: family name (the NumPyro distribution's) -> its parameter names in order; a prior is declared and
#: checked from these alone, so that a config's priors validate without NumPyro (and JAX) loaded
FAMILY_PARAMETERS: dict[str, tuple[str, ...]] = {
    "Normal": ("loc", "scale"),
    "HalfNormal": ("scale",),
    "LogNormal": ("loc", "scale"),
    "TruncatedNormal": ("loc", "scale", "low", "high"),
    "Exponential": ("rate",),
    "Gamma": ("concentration", "rate"),
    "InverseGamma": ("concentration", "rate"),
    "Beta": ("concentration1", "concentration0"),
    "Uniform": ("low", "high"),
    "HalfCauchy": ("scale",),
    "Cauchy": ("loc", "scale"),
    "StudentT": ("df", "loc", "scale"),
    "Laplace": ("loc", "scale"),
    "Dirichlet": ("concentration",),
    "MultivariateNormal": ("loc", "covariance_matrix"),
}

if TYPE_CHECKING:
    #: family name -> (NumPyro distribution, parameter names in order)
    FAMILIES: dict[str, tuple[type, tuple[str, ...]]]


def __getattr__(name: str) -> Any:
    """``FAMILIES``, built (and NumPyro imported) on first use."""
    if name == "FAMILIES":
        import numpyro.distributions as dist

        families = {f: (getattr(dist, f), params) for f, params in FAMILY_PARAMETERS.items()}
        globals()["FAMILIES"] = families
        return families
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: a frozen prior parameter: a float, or a nested tuple of floats for an array
type Frozen = float | tuple[Frozen, ...]


def _freeze(value: Any, where: str) -> Frozen:
    """A number or an array-like as a float or a nested tuple of floats (hashable); finite only."""
    if isinstance(value, bool):
        raise TypeError(f"{where} = {value!r} must be a number or an array of numbers, not a bool.")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{where} = {value!r} must be a number or an array of numbers.") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{where} = {value!r} must be finite.")
    return float(arr) if arr.ndim == 0 else _tuplify(arr.tolist())


def _tuplify(x: Any) -> Frozen:
    return tuple(_tuplify(v) for v in x) if isinstance(x, list) else float(x)


_POSITIVE = {"scale", "rate", "concentration", "concentration1", "concentration0", "df"}


def _check_support(family: str, params: dict[str, Any]) -> str | None:
    """What is wrong with ``params`` for ``family`` (checked with NumPy, so that declaring a prior
    starts no JAX backend), or None."""
    arrs = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    for k, v in arrs.items():
        if k in _POSITIVE and not np.all(v > 0):
            return f"{k} must be > 0"
    for lo, hi in (("low", "high"),):
        if lo in arrs and hi in arrs and not np.all(arrs[lo] < arrs[hi]):
            return f"{lo} must be < {hi}"
    if family == "Dirichlet" and arrs["concentration"].ndim < 1:
        return "concentration must be a vector (one entry per simplex part)"
    if family == "MultivariateNormal":
        cov = arrs["covariance_matrix"]
        if cov.ndim < 2 or cov.shape[-1] != cov.shape[-2]:
            return "covariance_matrix must be a square matrix"
        if not np.allclose(cov, np.swapaxes(cov, -1, -2)) or np.any(np.linalg.eigvalsh(cov) <= 0):
            return "covariance_matrix must be symmetric positive definite"
        if arrs["loc"].shape[-1:] != cov.shape[-1:]:
            return f"loc has {arrs['loc'].shape[-1:]} entries but covariance_matrix is {cov.shape[-2:]}"
    return None


class Prior:
    """A prior named by family and parameters, e.g. ``Prior("HalfNormal", scale=5.0)``.

    Parameters may be arrays: ``Prior("Normal", loc=[0.0, 1.0, 2.0], scale=1.0)`` has shape
    ``(3,)``; ``Prior("Dirichlet", concentration=[4.0] * 6)`` is a simplex of 6 parts. Name the
    axes of a non-scalar parameter with ``dims`` in :func:`pragmodels.param`.

    Raises ``ValueError``/``TypeError`` naming the family, the parameter and the value when the
    family is unknown, a parameter is missing, unexpected, not finite or outside its support
    (e.g. a negative scale).
    """

    __slots__ = ("family", "_params")
    family: str
    _params: tuple[tuple[str, Frozen], ...]

    def __init__(self, family: str, **params: Any):
        if family not in FAMILY_PARAMETERS:
            import difflib

            near = difflib.get_close_matches(str(family), FAMILY_PARAMETERS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"unknown prior family {family!r}{hint}; expected one of {sorted(FAMILY_PARAMETERS)}.")
        expected = FAMILY_PARAMETERS[family]
        if set(params) != set(expected):
            raise ValueError(f"Prior({family!r}) takes parameters {list(expected)}; got {sorted(params)}.")
        frozen = tuple((k, _freeze(params[k], f"Prior({family!r}) parameter {k}")) for k in expected)
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "_params", frozen)
        problem = _check_support(family, self.params)
        if problem:
            raise ValueError(f"Prior({family!r}, {self._args()}) is invalid: {problem}.")

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Prior is immutable")

    @property
    def params(self) -> dict[str, Any]:
        """The parameters as ``{name: float or nested tuple}``."""
        return dict(self._params)

    def distribution(self) -> dist.Distribution:
        """The NumPyro distribution (one draw has shape :meth:`shape`)."""
        import numpyro.distributions as dist

        cls = getattr(dist, self.family)
        return cls(**{k: np.asarray(v, dtype=np.float32) for k, v in self._params})

    def shape(self) -> tuple[int, ...]:
        """Shape of one draw: the broadcast batch shape plus the event shape."""
        shapes = {k: np.shape(v) for k, v in self._params}
        if self.family == "Dirichlet":
            return shapes["concentration"]
        if self.family == "MultivariateNormal":
            cov = shapes["covariance_matrix"]
            return np.broadcast_shapes(shapes["loc"][:-1], cov[:-2]) + cov[-1:]
        return np.broadcast_shapes(*shapes.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready ``{"family": ..., <parameter>: value}``; inverse of :meth:`from_dict`."""
        return {"family": self.family, **{k: v for k, v in self._params}}

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Prior:
        """A prior from ``{"family": "Normal", "loc": 0, "scale": 1}`` (as in configs)."""
        if not isinstance(spec, Mapping) or "family" not in spec:
            raise ValueError(f"a prior spec must be a mapping with a 'family' key; got {spec!r}.")
        spec = dict(spec)
        return cls(spec.pop("family"), **spec)

    def _args(self) -> str:
        def fmt(v: Frozen) -> str:
            return f"{v:g}" if isinstance(v, float) else json.dumps(v)
        return ", ".join(f"{k}={fmt(v)}" for k, v in self._params)

    def __str__(self) -> str:
        return f"{self.family}({self._args()})"

    def __repr__(self) -> str:
        return f"Prior({self.family!r}, {self._args()})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Prior) and (self.family, self._params) == (other.family, other._params)

    def __hash__(self) -> int:
        return hash((self.family, self._params))

    def __reduce__(self) -> tuple[Callable[[str, dict[str, Any]], Prior], tuple[str, dict[str, Any]]]:
        return (_rebuild, (self.family, self.to_dict()))


def _rebuild(family: str, spec: dict[str, Any]) -> Prior:
    return Prior.from_dict(spec)


def as_prior(value: Any, where: str) -> Prior | float:
    """``value`` as a :class:`Prior` or a fixed value (a float).

    Parameters
    ----------
    value : Prior, mapping or number
        A :class:`Prior` (returned as it is), a ``{"family": ..., ...}`` spec
        (:meth:`Prior.from_dict`) or a finite number other than a bool (a fixed value).
    where : str
        What ``value`` is (``"prior of parameter 'alpha'"``), named in the errors.

    Returns
    -------
    Prior or float

    Raises
    ------
    TypeError
        ``value`` is none of these (or the spec has a wrong type), naming ``where`` and the value.
    ValueError
        An invalid spec (prefixed by ``where``), or a number that is not finite.
    """
    if isinstance(value, Prior):
        return value
    if isinstance(value, Mapping):
        try:
            return Prior.from_dict(value)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{where}: {e}") from None
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        if not math.isfinite(float(value)):
            raise ValueError(f"{where} = {value!r}: a fixed value must be finite.")
        return float(value)
    raise TypeError(f"{where} = {value!r}; expected a pragmodels.Prior, a prior spec "
                    "{'family': ..., ...} or a number (to fix the parameter).")


def priors_to_json(priors: Mapping[str, Any]) -> str:
    """Serialise ``{parameter: Prior | dict | float}`` for provenance attributes.

    Parameters
    ----------
    priors : mapping of str to Prior, dict or float
        Priors by parameter name; a :class:`Prior` is written as its :meth:`Prior.to_dict`,
        other values as they are (they must be JSON-serialisable).

    Returns
    -------
    str
        A JSON object with the keys sorted.
    """
    def enc(v: Any) -> Any:
        return v.to_dict() if isinstance(v, Prior) else v
    return json.dumps({k: enc(v) for k, v in sorted(priors.items())})
