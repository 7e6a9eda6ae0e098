"""Declarative priors: a user-facing spec kept separate from the NumPyro distribution it builds.

Layering: imports ``numpyro.distributions`` (never ``numpyro.sample``); used by
:mod:`pragmodels.likelihoods` (which samples) and :mod:`pragmodels.rsa_models`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpyro.distributions as dist

__all__ = ["Prior", "FAMILIES", "priors_to_json"]

FAMILIES: dict[str, tuple[type, tuple[str, ...]]] = {
    "Normal": (dist.Normal, ("loc", "scale")),
    "HalfNormal": (dist.HalfNormal, ("scale",)),
    "LogNormal": (dist.LogNormal, ("loc", "scale")),
    "Exponential": (dist.Exponential, ("rate",)),
    "Gamma": (dist.Gamma, ("concentration", "rate")),
    "Beta": (dist.Beta, ("concentration1", "concentration0")),
    "Uniform": (dist.Uniform, ("low", "high")),
    "HalfCauchy": (dist.HalfCauchy, ("scale",)),
    "StudentT": (dist.StudentT, ("df", "loc", "scale")),
}


@dataclass(frozen=True)
class Prior:
    """A prior named by family and parameters, e.g. ``Prior("HalfNormal", scale=5.0)``."""

    family: str
    params: dict = field(default_factory=dict)

    def __init__(self, family: str, **params: float):
        if family not in FAMILIES:
            raise ValueError(f"unknown prior family {family!r}; expected one of {sorted(FAMILIES)}.")
        expected = FAMILIES[family][1]
        if set(params) != set(expected):
            raise ValueError(
                f"Prior({family!r}) takes parameters {list(expected)}; got {sorted(params)}."
            )
        for k, v in params.items():
            if not isinstance(v, (int, float)):
                raise TypeError(f"Prior({family!r}) parameter {k}={v!r} must be a number.")
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "params", {k: float(params[k]) for k in expected})

    def distribution(self) -> dist.Distribution:
        cls, _ = FAMILIES[self.family]
        return cls(**self.params)

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.family}({args})"


def priors_to_json(priors: dict[str, Prior]) -> str:
    """Serialise a ``{parameter: Prior}`` mapping for provenance attributes."""
    return json.dumps({k: str(v) for k, v in sorted(priors.items())})
