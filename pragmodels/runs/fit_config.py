"""Run one fit described by a JSON config in ``fits/`` and write its run folder beside it.

Layering: imports :mod:`pragmodels.priors`, :mod:`pragmodels.runs.schema`,
:mod:`pragmodels.runs.entry_points` and :mod:`pragmodels.runs.folder`; :mod:`pragmodels.inference.fitting`,
:mod:`pragmodels.rsa_models`, :mod:`pragmodels.simulate` and :mod:`pragmodels.io.netcdf` lazily, to run a
fit, so that :func:`load_config` validates a config without importing JAX.

A config names a model factory of :mod:`pragmodels.rsa_models` with its options, declarative
priors, the data (a simulator of :mod:`pragmodels.simulate`), sampler settings, a seed and
optionally the simulated ``truth``. :func:`load_config` validates it against :class:`FitConfig`;
:func:`run_config` checks by one cheap trace that ``priors`` and ``truth`` name the model's
parameters before anything is fitted or written, then fits it into ``fits/<name>/<mode>/``
(``posterior.nc``, ``summary.csv``, ``config.json``, ``run.json``, ``report.md``, swapped in
together); :func:`render_report` writes the report from the manifest. The keys:
``docs/configs.md``; the outputs: the docs page *Running studies and sweeps* ("A single-fit config").
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import numpy as np
from pydantic import Field, create_model, model_validator

from pragmodels.errors import ConfigError
from pragmodels.priors import FAMILY_PARAMETERS, Prior
from pragmodels.runs.entry_points import read_config
from pragmodels.runs.folder import check_writable, open_run, read_manifest, run_folder
from pragmodels.runs.schema import (
    SamplerSettings,
    SchemaRef,
    Seed,
    Strict,
    validate_config,
)

__all__ = ["FitConfig", "load_config", "run_config", "render_report"]

ENTRY_POINT = "pragmodels.runs.fit_config:run_config"
QUICK_SAMPLER = dict(num_warmup=200, num_samples=200, num_chains=2)


# ------------------------------------------------------------------ the fit config's schema
type PriorValue = float | list[PriorValue]


class _PriorSpec(Strict):
    family: str

    @model_validator(mode="after")
    def _in_support(self) -> _PriorSpec:
        try:  # a parameter outside its support (a negative scale) is an error
            Prior.from_dict(self.model_dump())
        except TypeError as e:  # a ragged array
            raise ValueError(str(e)) from None
        return self


def _prior_model(family: str, params: tuple[str, ...]) -> type[_PriorSpec]:
    fields: dict[str, Any] = {"family": (Literal[family], Field(description="the prior family"))}
    fields.update({p: (PriorValue, Field(description=f"{family}'s {p}: a number, or an array (nested lists)"))
                   for p in params})
    return create_model(f"{family}Prior", __base__=_PriorSpec, __doc__=f"A {family} prior.", **fields)


_PRIORS = tuple(_prior_model(f, params) for f, params in FAMILY_PARAMETERS.items())
if TYPE_CHECKING:
    PriorSpec = _PriorSpec
else:
    PriorSpec = Annotated[Union[_PRIORS], Field(discriminator="family")]  # noqa: UP007 - a Union of a tuple built at run time


#: :data:`pragmodels.agents.PriorAt` and :data:`~pragmodels.agents.CostScaling` (the same values, a test
#: checks), written here so that a config validates without JAX, which ``pragmodels.agents`` imports
PriorAt = Literal["all", "top"]
CostScaling = Literal["inside", "outside"]


class _ModelOptions(Strict):
    depth: int = Field(1, ge=1, le=10, description="recursion depth of the pragmatic agent (1: S1 / L1; at most 10)")
    prior_at: PriorAt = Field("all", description="where the state prior enters: every level, or the top only")


class SpeakerModel(_ModelOptions):
    """:func:`pragmodels.rsa_models.speaker_model`: speaker choices."""

    factory: Literal["speaker_model"]
    cost_scaling: CostScaling = Field("inside", description="utterance costs inside or outside alpha")


class ListenerModel(_ModelOptions):
    """:func:`pragmodels.rsa_models.listener_model`: listener choices."""

    factory: Literal["listener_model"]
    cost_scaling: CostScaling = Field("inside", description="utterance costs inside or outside alpha")


class SampledListenerModel(_ModelOptions):
    """:func:`pragmodels.rsa_models.sampled_listener_model`: listener choices on an LM's sample counts."""

    factory: Literal["sampled_listener_model"]
    cost_scaling: CostScaling = Field("inside", description="utterance costs inside or outside alpha")
    concentration: float = Field(1.0, gt=0, description="the Dirichlet prior's concentration per cell")


class HierarchicalListenerModel(_ModelOptions):
    """:func:`pragmodels.rsa_models.hierarchical_listener_model`: listener choices, alpha by item."""

    factory: Literal["hierarchical_listener_model"]


ModelSpec = Annotated[SpeakerModel | ListenerModel | SampledListenerModel | HierarchicalListenerModel,
                      Field(discriminator="factory")]


class ReferenceGameSpeakerData(Strict):
    """:func:`pragmodels.simulate.reference_game_speaker`."""

    simulate: Literal["reference_game_speaker"]
    seed: Seed
    n_per_state: int = Field(80, ge=1, le=10**6, description="choices simulated per state (at most 1,000,000)")
    alpha: float = Field(2.0, ge=0, description="the speaker's rationality")
    cost: float = Field(0.5, description="the cost of 'square'")
    lapse: float = Field(0.0, ge=0, le=1, description="probability of a uniformly random choice")


class ScaleListenerByItemData(Strict):
    """:func:`pragmodels.simulate.scale_listener_by_item`."""

    simulate: Literal["scale_listener_by_item"]
    seed: Seed
    n_items: int = Field(100, ge=1, le=100_000, description="number of items (at most 100,000)")
    n_per_item: int = Field(40, ge=1, le=100_000, description="guesses simulated per item (at most 100,000)")
    n_states: int = Field(21, ge=2, le=10_000, description="points of the 0-100 scale (at most 10,000)")
    alpha_mu: float = Field(1.0, description="mean of log alpha over items")
    alpha_sigma: float = Field(0.5, ge=0, description="sd of log alpha over items")

    @model_validator(mode="after")
    def _size(self) -> ScaleListenerByItemData:
        if self.n_items * self.n_per_item > 10**7:
            raise ValueError(f"n_items x n_per_item = {self.n_items * self.n_per_item:,} guesses; at most "
                             "10,000,000 are simulated (their arrays must fit in memory)")
        return self


DataSpec = Annotated[ReferenceGameSpeakerData | ScaleListenerByItemData, Field(discriminator="simulate")]

#: simulator -> (what its data are, the model factories whose model takes those data as its arguments)
FITS_DATA: dict[str, tuple[str, tuple[str, ...]]] = {
    "reference_game_speaker": ("speaker choices by state", ("speaker_model",)),
    "scale_listener_by_item": ("listener guesses by item and utterance", ("hierarchical_listener_model",)),
}


class FitConfig(Strict):
    """A single-fit config (``fits/<name>.json`` without a ``study`` key), run by :func:`run_config`."""

    schema_: SchemaRef = None
    name: str = Field(min_length=1, description="the fit's name (the report's title)")
    description: str = Field("", description="what the fit shows")
    model: ModelSpec = Field(description="the model factory from pragmodels.rsa_models and its options")
    priors: dict[str, PriorSpec] = Field(default_factory=dict, description="prior overrides by parameter name")
    data: DataSpec = Field(description="the simulator from pragmodels.simulate and its arguments")
    truth: dict[str, PriorValue] = Field(default_factory=dict, description="the simulated values, by parameter "
                                                                           "name (the report checks recovery)")
    sampler: SamplerSettings = Field(description="NUTS settings (--quick shortens the chains)")
    seed: Seed

    @model_validator(mode="after")
    def _model_fits_data(self) -> FitConfig:
        what, factories = FITS_DATA[self.data.simulate]
        if self.model.factory not in factories:
            raise ValueError(f'`model.factory` = "{self.model.factory}" cannot fit the data of `data.simulate` = '
                             f'"{self.data.simulate}" ({what}); expected {" or ".join(map(repr, factories))}')
        return self


def load_config(path: str | Path) -> dict[str, Any]:
    """The fit config at ``path``, validated against :class:`FitConfig`.

    Parameters
    ----------
    path : str or Path
        A fit config (JSON).

    Returns
    -------
    dict
        The config as read (not the validated model).

    Raises
    ------
    ConfigError
        The file cannot be read or the config does not validate; the one-line message names the
        file, the key and the value.
    """
    path = Path(path)
    cfg = read_config(path, "fit config")
    validate_config(FitConfig, cfg, path, "fit config")
    return cfg


def _build(cfg: dict[str, Any], path: Path) -> tuple[Callable[..., Any], dict[str, Any]]:
    from pragmodels import rsa_models, simulate

    spec = validate_config(FitConfig, cfg, path, "fit config")
    opts = spec.model.model_dump(exclude={"factory"}, exclude_unset=True)
    priors = {k: Prior.from_dict(v.model_dump()) for k, v in spec.priors.items()}
    model = getattr(rsa_models, spec.model.factory)(priors=priors, **opts)
    kwargs = spec.data.model_dump(exclude={"simulate"}, exclude_unset=True)
    try:
        data = getattr(simulate, spec.data.simulate)(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"fit config {path}: `data` ({spec.data.simulate}): {e}", path=path) from None
    if isinstance(data, tuple):
        data = data[0]
    return model, data


def _check_model(cfg: dict[str, Any], model: Callable[..., Any], data: dict[str, Any], path: Path) -> None:
    """``priors`` and ``truth`` may name only the model's parameters (``truth`` also its
    deterministic sites), ``sampler.dense_mass`` only its latent sites: checked by one cheap trace
    of the model before the fit."""
    from pragmodels.params import inspect_model

    try:
        info = inspect_model(model, data)
    except ValueError as e:  # a prior override naming no parameter or that it cannot use, or options it rejects
        key = "priors" if str(e).startswith("priors[") or _traces_without_priors(cfg, data) else "model"
        raise ConfigError(f"fit config {path}: `{key}`: {e}", path=path) from None
    latent = sorted(info.latent)
    dense = cfg["sampler"].get("dense_mass")
    for name in (n for block in dense for n in block) if isinstance(dense, list) else ():
        if name not in latent:
            raise ConfigError(f"fit config {path}: `sampler.dense_mass` names {name!r}, which is not a latent site "
                              f"of the model{_did_you_mean(name, latent)}; its latent sites are {latent}.", path=path)
    names = sorted(set(info.priors) | set(info.undeclared) | set(info.deterministic))
    unknown = sorted(set(cfg.get("truth") or {}) - set(names))
    if unknown:
        raise ConfigError(f"fit config {path}: truth names {unknown}{_did_you_mean(unknown[0], names)}, which the "
                          f"model does not have; its parameters are {names}.", path=path)
    if cfg.get("truth"):
        _check_truth(cfg["truth"], _site_shapes(model, data), path)


def _traces_without_priors(cfg: dict[str, Any], data: dict[str, Any]) -> bool:
    """Whether the model without ``priors`` traces (then the priors broke it)."""
    from pragmodels import rsa_models
    from pragmodels.params import inspect_model

    if not cfg.get("priors"):
        return False
    bare = getattr(rsa_models, cfg["model"]["factory"])(**{k: v for k, v in cfg["model"].items() if k != "factory"})
    try:
        inspect_model(bare, data)
    except ValueError:
        return False
    return True


def _site_shapes(model: Callable[..., Any], data: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    from numpyro import handlers

    trace = handlers.trace(handlers.seed(model, 0)).get_trace(**data)
    return {k: tuple(np.shape(site["value"])) for k, site in trace.items()}


def _check_truth(truth: dict[str, Any], shapes: dict[str, tuple[int, ...]], path: Path) -> None:
    """Each ``truth`` value is a number or an array of its site's shape (as the report compares them)."""
    for name, value in truth.items():
        text = json.dumps(value)
        where = f"fit config {path}: `truth.{name}` = {text if len(text) <= 60 else text[:59] + '…'}"
        try:
            shape = np.asarray(value, dtype=float).shape
        except ValueError:
            raise ConfigError(f"{where} is not a rectangular array of numbers.", path=path) from None
        if shape not in ((), shapes[name]):
            raise ConfigError(f"{where} has shape {shape}; the model's {name} has shape {shapes[name]} (expected a "
                              "number or an array of that shape).", path=path)


def _did_you_mean(name: str, names: list[str]) -> str:
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def fit(*args: Any, **kwargs: Any) -> Any:
    """:func:`pragmodels.fit`, imported at the first fit (so that validating a config imports no JAX)."""
    from pragmodels.inference.fitting import fit as fit_now

    return fit_now(*args, **kwargs)


def run_config(path: str | Path, out_dir: str | Path | None = None, *, quick: bool = False,
               progress_bar: bool = True) -> Path:
    """Fit the config at ``path`` into its run folder.

    The config is validated, the run folder checked to be writable and the model traced once
    (its ``priors`` and ``truth`` must name its parameters) before the fit. The run folder gets
    ``posterior.nc``, ``summary.csv``, ``config.json``, ``run.json`` and ``report.md``
    (:func:`render_report`, also printed).

    Parameters
    ----------
    path : str or Path
        The fit config.
    out_dir : str or Path, optional
        Run folder to use instead of ``<config without .json>/quick|full/``.
    quick : bool
        A smoke run into the ``quick`` folder: :data:`QUICK_SAMPLER` replaces the config's
        ``num_warmup``, ``num_samples`` and ``num_chains`` (the whole config is still validated).
    progress_bar : bool
        Show the sampler's progress bar.

    Returns
    -------
    Path
        The run folder.

    Raises
    ------
    ConfigError
        An invalid config, data options the simulator rejects, or ``priors``/``truth`` naming
        no parameter of the model.
    RunError
        The run folder cannot be written, is locked or holds a run of the other mode
        (:func:`pragmodels.runs.folder.open_run`).
    """
    from pragmodels.io.netcdf import save_netcdf

    path = Path(path)
    cfg = load_config(path)  # the whole config, also in quick mode: --quick hides no invalid value
    mode = "quick" if quick else "full"
    out = run_folder(path, mode, out_dir)
    check_writable(out)  # before the fit, not after it
    model, data = _build(cfg, path)
    _check_model(cfg, model, data, path)
    sampler = dict(cfg["sampler"])
    if quick:
        sampler.update(QUICK_SAMPLER)
    with open_run(out, mode=mode, entry_point=ENTRY_POINT, config=cfg, config_path=path, sampler=sampler,
                  seed=cfg["seed"]) as run:
        tree = fit(cfg["seed"], model, data, progress_bar=progress_bar, **sampler)
        tree.attrs["fit_config"] = json.dumps(cfg)
        run.data(f"simulate:{cfg['data']['simulate']}", tree.attrs["data_sha256"])
        run.fit("fit", tree, "posterior.nc")

        from arviz_stats import summary

        # 94% equal-tailed intervals, as the recovery table and every forest plot (arviz's default is 89%)
        table = summary(tree, var_names=[v for v in tree["posterior"].data_vars if v != "cost"], ci_prob=0.94,
                        ci_kind="eti")
        save_netcdf(tree, run.path / "posterior.nc")
        table.to_csv(run.path / "summary.csv")
        (run.path / "config.json").write_text(json.dumps(cfg, indent=2))
        run.finish()
        report = render_report(run.path)
        (run.path / "report.md").write_text(report)
    print(report)
    return out


def render_report(run_dir: str | Path) -> str:
    """The markdown report of a single-fit run folder.

    Parameters
    ----------
    run_dir : str or Path
        A finished run folder of :func:`run_config`: its ``run.json``, ``summary.csv`` and
        ``posterior.nc`` are read.

    Returns
    -------
    str
        Markdown: model, priors, sampler, seed, data hash, versions, diagnostics and wall time;
        the posterior summary table; and, when the config has ``truth``, whether each value lies
        in its 94% equal-tailed interval (arviz-stats ``eti``).
    """
    import pandas as pd
    from arviz_stats import eti

    from pragmodels.io.netcdf import load_netcdf

    run_dir = Path(run_dir)
    man = read_manifest(run_dir)
    cfg, f, v = man["config"], man["fits"]["fit"], man["versions"]
    tree = load_netcdf(run_dir / "posterior.nc")
    table = pd.read_csv(run_dir / "summary.csv", index_col=0)
    diag = f["diagnostics"]
    lines = [f"# Fit: {cfg['name']}", "", cfg.get("description", ""), "",
             f"- model: `{f['model']}`", f"- priors: `{tree.attrs['priors']}`",
             f"- sampler: `{json.dumps(f['sampler_settings'])}`" + (" (quick mode)" if man["mode"] == "quick" else ""),
             f"- seed: {f['seed']}; data sha256: `{f['data_sha256'][:16]}…`",
             f"- pragmodels {v.get('pragmodels')}, jax {v.get('jax')}, numpyro {v.get('numpyro')}, "
             f"backend {f['backend']}",
             f"- diagnostics: {diag['divergences']} divergences, max r_hat {diag['max_rhat']:.3f}, "
             f"min bulk ESS {diag['min_ess_bulk']:.0f}, min tail ESS {diag['min_ess_tail']:.0f}"
             + ("" if f["diagnostics_ok"] else "  **(check the warnings)**"),
             f"- wall time: {man['wall_time_s']:.1f} s (the fit {f['wall_time_s']:.1f} s); started "
             f"{man['started_at']}", "", "## Posterior", "", table.to_markdown(floatfmt=".3g"), ""]
    truth = cfg.get("truth")
    if truth:
        lines += ["## Recovery of the simulated truth", "", "| parameter | truth | 94% interval | covered |",
                  "|---|---|---|---|"]
        for k, t in truth.items():
            iv = np.asarray(eti(tree["posterior"][k], prob=0.94).values).reshape(-1, 2)
            for j, (lo, hi) in enumerate(iv):
                tv = float(np.broadcast_to(np.asarray(t, float), tree["posterior"][k].shape[2:]).reshape(-1)[j])
                name = k if len(iv) == 1 else f"{k}[{j}]"
                lines.append(f"| {name} | {tv:g} | [{lo:.3g}, {hi:.3g}] | {'yes' if lo <= tv <= hi else 'NO'} |")
        lines.append("")
    return "\n".join(lines)
