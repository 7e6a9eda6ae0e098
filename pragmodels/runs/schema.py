"""Config schemas: what a study config and its sampler settings may hold, and one-line errors.

Layering: the standard library, ``pydantic`` and :mod:`pragmodels.errors` only (no JAX), so that
:mod:`pragmodels.runs.study` can validate a study config before anything starts. The single-fit
config, whose schema needs the model factories, simulators and prior families, is
:class:`pragmodels.runs.fit_config.FitConfig`, built from the pieces here.

:class:`StudyConfig` and :class:`SamplerSettings` are strict pydantic models: an unknown key at
any level, a value of the wrong type or out of range is a :class:`~pragmodels.errors.ConfigError`
whose one-line message names the file, the key and the value and suggests the nearest valid key
(JSON types are not coerced). A study extends :class:`StudyConfig` with its own keys by defining
``Config`` in its entry point's module; :func:`validate_config` checks a config against a schema.
The keys: ``docs/configs.md``; validation, the JSON Schema files and editors: the docs page
*Running studies and sweeps* ("Configs").
"""


from __future__ import annotations

import difflib
import json
import os
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from pragmodels.errors import ConfigError

__all__ = ['Strict', 'Seed', 'EntryPoint', 'SamplerSettings', 'ModeSamplers', 'StudyConfig', 'validate_config', 'format_validation_error']

class Strict(BaseModel):
    """Base of every config section: unknown keys are errors, JSON types are not coerced,
    numbers must be finite."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


#: a seed: a non-negative integer below 2**32 (JAX folds larger seeds onto smaller ones)
Seed = Annotated[int, Field(ge=0, le=2**32 - 1, description="random seed, an integer in [0, 2**32 - 1]")]

#: ``"path/to/module.py:function"``, resolved as :func:`pragmodels.runs.entry_points.load_entry_point` says
EntryPoint = Annotated[str, Field(pattern=r"^[^:]+\.py:[A-Za-z_][A-Za-z0-9_]*$",
                                  description="'path/to/module.py:function', resolved against the config's "
                                              "folder, then each parent up to the repository root")]

SchemaRef = Annotated[str | None, Field(alias="$schema", description="a JSON Schema for editors (ignored)")]


def _each_site_once(blocks: list[list[str]]) -> list[list[str]]:
    seen: set[str] = set()
    for block in blocks:
        for name in block:
            if name in seen:
                raise ValueError(f"names {name!r} twice; a site may be in one block, once")
            seen.add(name)
    return blocks


#: ``dense_mass`` blocks: a non-empty list of non-empty lists of site names, no site twice
DenseMassBlocks = Annotated[list[Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]],
                            Field(min_length=1), AfterValidator(_each_site_once)]


class SamplerSettings(Strict):
    """NUTS settings of :func:`pragmodels.fit` (each key optional; the defaults are fit's)."""

    num_warmup: int = Field(1000, ge=0, description="warm-up (adaptation) iterations per chain")
    num_samples: int = Field(1000, ge=1, description="draws kept per chain")
    num_chains: int = Field(4, ge=1, description="number of chains")
    chain_method: Literal["parallel", "vectorized", "sequential"] | None = Field(
        None, description="how chains run; null: pm.fit's default for the devices (parallel over several, else "
                          "sequential on a CPU, vectorized on a GPU); a study's fits through fit_many that leave it "
                          "out: one device's (sequential on a CPU)")
    target_accept: float = Field(0.8, gt=0, lt=1, description="NUTS target acceptance probability, in (0, 1)")
    max_tree_depth: int = Field(10, ge=1, le=30, description="maximum NUTS tree depth")
    dense_mass: bool | DenseMassBlocks = Field(False, description="dense mass matrix: true, or blocks of latent "
                                                                  "site names (each site in one block)")
    mass_matrix: Literal["adapt", "laplace"] = Field(
        "adapt", description="'adapt': windowed adaptation in warm-up; 'laplace': the inverse Hessian at each "
                             "chain's start, fixed (needs init 'optimize' or 'basins')")
    init: Literal["median", "uniform", "optimize", "basins"] = Field(
        "median", description="how chains are initialised ('basins': chains in every optimised basin within "
                              "basin_nats of the best, combined by the basins' estimated masses)")
    basin_nats: float = Field(10.0, gt=0, description="with init 'basins': how far below the best basin "
                                                      "(nats of log density) a basin still gets chains")
    basin_merge: bool = Field(True, description="with init 'basins': join basins that no pass separates before "
                                                "sampling (false: every basin found by place gets chains)")
    posterior_predictive: bool = Field(True, description="draw the posterior predictive")
    prior_predictive: int = Field(0, ge=0, description="number of prior predictive draws")
    strict: bool = Field(False, description="raise FitDiagnosticsError when the diagnostics fail")


S = TypeVar("S", bound=SamplerSettings)


class ModeSamplers(Strict, Generic[S]):
    """Sampler settings per run mode: ``quick`` (a smoke run) and ``full``."""

    quick: S = Field(description="settings of a --quick run")
    full: S = Field(description="settings of a full run")


class StudyConfig(Strict):
    """A study config (``"study": "path/to/module.py:function"``): the keys every study has.

    A study with keys of its own defines ``Config(StudyConfig)`` in its entry point's module."""

    schema_: SchemaRef = None
    name: str = Field(min_length=1, description="the study's name (the run folder's manifest records it)")
    description: str = Field("", description="what the study does")
    study: EntryPoint = Field(description="the study's entry point, run(config, out_dir, mode, progress, record)")
    tables: EntryPoint | None = Field(None, description="entry point of `pragmodels tables`, "
                                                        "tables(config, out_path)")
    lm_step: EntryPoint | None = Field(None, description="entry point of `pragmodels lm elicit`, the study's LM "
                                                         "step: step(argv) -> exit status, on the arguments after "
                                                         "the study's name (--lm NAME and the LM options)")
    sampler: ModeSamplers[SamplerSettings] = Field(description="NUTS settings per mode")
    seed: Seed


# ------------------------------------------------------------------ errors
_JSON_TYPES = {"int_type": "an integer", "float_type": "a number", "string_type": "a string",
               "bool_type": "true or false", "dict_type": "an object", "model_type": "an object",
               "model_attributes_type": "an object", "list_type": "a list", "none_required": "null"}


def _json_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def _show(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _key(loc: list[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _display_loc(loc: tuple[str | int, ...], data: Any, err_type: str) -> tuple[list[str | int], bool]:
    """The path of ``loc`` in the input (pydantic's union tags, which are not keys, left out) and
    whether a tag was left out."""
    out: list[str | int] = []
    cur, dropped = data, False
    for i, part in enumerate(loc):
        if isinstance(cur, Mapping) and part in cur:
            out.append(part)
            cur = cur[part]
        elif isinstance(cur, (list, tuple)) and isinstance(part, int) and 0 <= part < len(cur):
            out.append(part)
            cur = cur[part]
        elif i == len(loc) - 1 and err_type == "missing" and isinstance(cur, (Mapping, list, tuple)):
            out.append(part)
        else:
            dropped = True
    return out, dropped


def _unwrap(tp: Any) -> Any:
    while True:
        if isinstance(tp, typing.TypeAliasType):
            tp = tp.__value__
        elif typing.get_origin(tp) is Annotated:
            tp = typing.get_args(tp)[0]
        else:
            return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _model_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _tag_matches(model: type[BaseModel], part: Any) -> bool:
    if part == model.__name__:
        return True
    return any(typing.get_origin(f.annotation) is Literal and part in typing.get_args(f.annotation)
               for f in model.model_fields.values())


def _step(tp: Any, part: Any) -> tuple[Any, bool]:
    """The type one step into ``tp`` along ``part``; ``(type, consumed)`` (a union whose member
    ``part`` does not name is left as it is, not consumed)."""
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if _is_model(tp):
        for name, f in tp.model_fields.items():
            if part in (name, f.alias):
                return f.annotation, True
        return None, True
    if origin in (typing.Union, types.UnionType):
        members = [_unwrap(m) for m in typing.get_args(tp) if m is not type(None)]
        for m in members:
            if _is_model(m) and _tag_matches(m, part):
                return m, True
        if len(members) == 1:
            return members[0], False
        return None, True
    if origin in (dict, Mapping):
        return typing.get_args(tp)[1], True
    if origin in (list, tuple):
        return typing.get_args(tp)[0], True
    return None, True


def _keys_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """The valid keys of the object that holds ``loc[-1]`` (``loc`` as pydantic gives it)."""
    tp: Any = model
    for part in loc[:-1]:
        for _ in range(4):  # step through nested unions until ``part`` is consumed
            tp, consumed = _step(tp, part)
            if consumed or tp is None:
                break
        if tp is None:
            return []
    tp = _unwrap(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        models = [_unwrap(m) for m in typing.get_args(tp) if _is_model(_unwrap(m))]
        return sorted({k for m in models for k in _model_keys(m)})
    return _model_keys(tp) if _is_model(tp) else []


def _suggest(word: str, options: list[str]) -> str | None:
    near = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return near[0] if near else None


def _problem(model: type[BaseModel], e: Mapping[str, Any], data: Any) -> tuple[list[str | int], bool, str, str]:
    """(display path, union branch?, kind, message) of one pydantic error."""
    etype, loc, ctx = e["type"], tuple(e["loc"]), e.get("ctx") or {}
    path, dropped = _display_loc(loc, data, etype)
    where = f"`{_key(path)}`" if path else "the config"
    value = e.get("input")
    if etype == "extra_forbidden":
        keys = _keys_at(model, loc)
        near = _suggest(str(loc[-1]), keys)
        hint = f"did you mean `{near}`?" if near else (f"valid keys: {', '.join(keys)}" if keys else "")
        return path, dropped, etype, f"{where}: unknown key" + (f"; {hint}" if hint else "")
    if etype == "missing":
        return path, dropped, etype, f"{where}: required {'item' if isinstance(loc[-1], int) else 'key'} missing"
    if etype == "union_tag_not_found":
        tag = str(ctx.get("discriminator", "")).strip("'")
        return path + [tag], dropped, etype, f"`{_key(path + [tag])}`: required key missing"
    if etype == "union_tag_invalid":
        tag = str(ctx.get("discriminator", "")).strip("'")
        expected = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",")]
        near = _suggest(str(ctx.get("tag")), expected)
        msg = (f"`{_key(path + [tag])}` = {_show(ctx.get('tag'))}: expected one of {', '.join(expected)}"
               + (f"; did you mean {near!r}?" if near else ""))
        return path + [tag], dropped, etype, msg
    shown = f"{where} = {_show(value)}" if path else "the config"
    if etype == "literal_error":
        allowed = str(ctx.get("expected", ""))
        options = [t.strip().strip("'") for t in allowed.replace(" or ", ",").split(",") if t.strip()]
        near = _suggest(str(value), options) if isinstance(value, str) else None
        return path, dropped, "type", (f"{shown}: expected {allowed}" + (f"; did you mean {near!r}?" if near else ""))
    if etype in _JSON_TYPES:
        return path, dropped, "type", f"{shown}: expected {_JSON_TYPES[etype]}, got {_json_name(value)}"
    if etype in ("too_short", "string_too_short") and ctx.get("min_length") == 1:
        return path, dropped, etype, f"{shown}: must not be empty"
    msg = str(e["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
        if not path:  # a check across keys (a model validator): its message names the keys
            return path, dropped, etype, msg.rstrip(".")
    elif msg.startswith("Input should be "):
        msg = "must be " + msg[len("Input should be "):]
    elif msg.startswith("String should match pattern"):
        msg = "expected 'path/to/module.py:function'"
    else:
        msg = msg[:1].lower() + msg[1:]
    return path, dropped, etype, f"{shown}: {msg.rstrip('.')}"


def format_validation_error(model: type[BaseModel], error: ValidationError, data: Any) -> list[tuple[str, str]]:
    """``(key, message)`` per problem in a pydantic ``ValidationError`` of ``model`` on ``data``.

    Keys as written in the input (union tags left out), unknown keys with the nearest valid one,
    wrong types naming the value and the expected type. A value that matched no member of a
    union gives one message (the expected types joined by "or"), not one per member.

    Parameters
    ----------
    model : type of pydantic.BaseModel
        The model ``data`` was validated against (for the valid keys at each level).
    error : pydantic.ValidationError
        The error ``model.model_validate(data)`` raised.
    data : object
        The input that was validated (usually the config's parsed JSON).

    Returns
    -------
    list of (str, str)
        ``(key, message)`` in the order pydantic reports them; ``key`` dotted with ``[i]`` for
        list items (``"sampler.full.num_chains"``, ``""`` for the whole config), ``message``
        one line that starts with the key.
    """
    raw = [_problem(model, e, data) for e in error.errors(include_url=False)]
    # a value that matched no member of a plain union (a number or a list): one line, not one per member
    out: dict[str, list[str]] = {}
    kinds: dict[str, str] = {}
    deep = {_key(p) for p, dropped, _, _ in raw if dropped}
    # a union member that took the value's type but not its value (a list too short) explains it better
    constrained = {_key(p) for p, dropped, kind, _ in raw if dropped and kind != "type"}
    for path, dropped, kind, msg in raw:
        key = _key(path)
        if dropped and any(d != key and d.startswith(key) and d[len(key):][:1] in ".[" for d in deep):
            continue  # a deeper error of another union member explains it better
        if dropped and kind == "type" and key in constrained:
            continue
        if key in out and kind == kinds[key] == "type":
            prev = out[key][-1]
            extra = msg.split(": expected ", 1)[-1].split(", got ")[0]
            head, _, got = prev.partition(", got ")
            if extra not in head:
                out[key][-1] = f"{head} or {extra}, got {got}" if got else f"{head} or {extra}"
            continue
        out.setdefault(key, []).append(msg)
        kinds.setdefault(key, kind)
    return [(k, m) for k, msgs in out.items() for m in msgs]


def validate_config[M: BaseModel](model: type[M], cfg: Any, path: str | os.PathLike[str] | None = None,
                                  what: str = "config") -> M:
    """``cfg`` validated against ``model``, or a one-line :class:`~pragmodels.errors.ConfigError`.

    Parameters
    ----------
    model : type of pydantic.BaseModel
        The config model, e.g. :class:`StudyConfig` or :class:`pragmodels.runs.fit_config.FitConfig`.
    cfg : object
        The config (usually a parsed JSON object).
    path : str or path-like, optional
        The config file, named in the message and kept as ``ConfigError.path``.
    what : str
        The kind of config, named in the message (``"fit config"``, ``"study config"``).

    Returns
    -------
    model
        The validated model instance.

    Raises
    ------
    ConfigError
        Its one-line message names the file and every problem (:func:`format_validation_error`,
        joined by ``"; "``); ``problems`` holds them as ``(key, message)``.
    """
    try:
        return model.model_validate(cfg)
    except ValidationError as e:
        problems = format_validation_error(model, e, cfg)
        where = f"{what} {path}" if path is not None else what
        lead = "" if len(problems) == 1 else f"{len(problems)} problems: "
        raise ConfigError(f"{where}: {lead}" + "; ".join(m for _, m in problems),
                          path=path, problems=problems) from None


