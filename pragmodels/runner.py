"""Run one fit described by a JSON config in ``fits/`` and write its run folder beside it.

Layering: imports :mod:`pragmodels.inference`, :mod:`pragmodels.rsa_models`,
:mod:`pragmodels.simulate`, :mod:`pragmodels.priors`, :mod:`pragmodels.results_io` and
:mod:`pragmodels.runs`.

A config names a model factory from :mod:`pragmodels.rsa_models` and its options, declarative
priors, the data (a simulator from :mod:`pragmodels.simulate` with its arguments), sampler
settings, a seed and optionally the simulated ``truth``. Outputs land in ``fits/<name>/<mode>/``
(``quick`` or ``full``; :func:`pragmodels.runs.run_folder`): ``posterior.nc`` (netCDF DataTree),
``summary.csv`` (arviz-stats ``summary``), ``config.json`` (the config as run), ``run.json``
(the manifest, :mod:`pragmodels.runs`) and ``report.md`` (rendered from the manifest and the
saved files by :func:`render_report`). The folder is written aside and swapped in only when all
of them exist, so they appear together or not at all, and a failed run leaves an earlier one
intact. The config (model factory, simulator, ``truth`` names) is checked before anything is
fitted or written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pragmodels import rsa_models, simulate
from pragmodels.inference import fit
from pragmodels.priors import Prior
from pragmodels.results_io import load_netcdf, save_netcdf
from pragmodels.runs import open_run, read_config, read_manifest, run_folder

__all__ = ["load_config", "run_config", "render_report"]

ENTRY_POINT = "pragmodels.runner:run_config"
QUICK_SAMPLER = dict(num_warmup=200, num_samples=200, num_chains=2)

_REQUIRED = ("name", "model", "data", "sampler", "seed")


def load_config(path: str | Path) -> dict[str, Any]:
    """The fit config at ``path``, checked for its required keys (errors name the file)."""
    path = Path(path)
    cfg = read_config(path, "fit config")
    missing = [k for k in _REQUIRED if k not in cfg]
    if missing:
        raise ValueError(f"fit config {path}: missing key(s) {missing}; required: {list(_REQUIRED)}.")
    return cfg


def _build(cfg: dict[str, Any], path: Path) -> tuple[Callable[..., Any], dict[str, Any]]:
    opts = dict(cfg["model"])
    factory_name = opts.pop("factory", None)
    factory = getattr(rsa_models, factory_name or "", None)
    if factory_name not in rsa_models.__all__ or not callable(factory):
        raise ValueError(f"fit config {path}: model.factory = {factory_name!r}; expected one of "
                         f"{[n for n in rsa_models.__all__ if n.endswith('model')]}.")
    priors = {k: Prior(v.pop("family"), **v) for k, v in
              ((k, dict(v)) for k, v in cfg.get("priors", {}).items())}
    model = factory(priors=priors, **opts)
    d = dict(cfg["data"])
    sim = d.pop("simulate", None)
    if sim not in simulate.__all__:
        raise ValueError(f"fit config {path}: data.simulate = {sim!r}; expected one of "
                         f"{[n for n in simulate.__all__ if n.islower() and '_' in n]}.")
    data = getattr(simulate, sim)(**d)
    if isinstance(data, tuple):
        data = data[0]
    return model, data


def _check_truth(cfg: dict[str, Any], model: Callable[..., Any], data: dict[str, Any], path: Path) -> None:
    """``truth`` may name only the model's parameters (sample or deterministic sites), checked by
    one cheap trace of the model before the fit."""
    truth = cfg.get("truth") or {}
    if not truth:
        return
    from numpyro import handlers

    trace = handlers.trace(handlers.seed(model, 0)).get_trace(**data)
    names = sorted(k for k, v in trace.items()
                   if (v["type"] == "sample" and not v.get("is_observed")) or v["type"] == "deterministic")
    unknown = sorted(set(truth) - set(names))
    if unknown:
        raise ValueError(f"fit config {path}: truth names {unknown}, which the model does not have; "
                         f"its parameters are {names}.")


def run_config(path: str | Path, out_dir: str | Path | None = None, *, quick: bool = False,
               progress_bar: bool = True) -> Path:
    """Fit the config at ``path``; return the run folder (``out_dir``, else
    ``<config without .json>/quick|full/``). ``quick`` shrinks the sampler run."""
    path = Path(path)
    cfg = load_config(path)
    model, data = _build(cfg, path)
    _check_truth(cfg, model, data, path)
    sampler = dict(cfg["sampler"])
    if quick:
        sampler.update(QUICK_SAMPLER)
    mode = "quick" if quick else "full"
    out = run_folder(path, mode, out_dir)
    with open_run(out, mode=mode, entry_point=ENTRY_POINT, config=cfg, config_path=path, sampler=sampler,
                  seed=cfg["seed"]) as run:
        tree = fit(int(cfg["seed"]), model, data, progress_bar=progress_bar, **sampler)
        tree.attrs["fit_config"] = json.dumps(cfg)
        run.data(f"simulate:{cfg['data']['simulate']}", tree.attrs["data_sha256"])
        run.fit("fit", tree, "posterior.nc")

        from arviz_stats import summary

        table = summary(tree, var_names=[v for v in tree["posterior"].data_vars if v != "cost"])
        save_netcdf(tree, run.path / "posterior.nc")
        table.to_csv(run.path / "summary.csv")
        (run.path / "config.json").write_text(json.dumps(cfg, indent=2))
        run.finish()
        report = render_report(run.path)
        (run.path / "report.md").write_text(report)
    print(report)
    return out


def render_report(run_dir: str | Path) -> str:
    """The markdown report of a single-fit run folder, from its ``run.json``, ``summary.csv`` and
    ``posterior.nc`` (94% equal-tailed intervals from arviz-stats ``eti``)."""
    import pandas as pd
    from arviz_stats import eti

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
                tv = float(np.broadcast_to(np.asarray(t, float), (len(iv),))[j])
                name = k if len(iv) == 1 else f"{k}[{j}]"
                lines.append(f"| {name} | {tv:g} | [{lo:.3g}, {hi:.3g}] | {'yes' if lo <= tv <= hi else 'NO'} |")
        lines.append("")
    return "\n".join(lines)
