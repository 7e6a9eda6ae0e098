"""Run one fit described by a JSON config in ``fits/`` and write its run folder beside it.

Layering: imports :mod:`pragmodels.inference`, :mod:`pragmodels.rsa_models`,
:mod:`pragmodels.simulate`, :mod:`pragmodels.priors`, :mod:`pragmodels.results_io`.

A config names a model factory from :mod:`pragmodels.rsa_models` and its options, declarative
priors, the data (a simulator from :mod:`pragmodels.simulate` with its arguments), sampler
settings and a seed. Outputs land in ``fits/<name>/``: ``posterior.nc`` (netCDF DataTree),
``summary.csv``, ``config.json`` (the config as run) and ``report.md``. Each file is written
atomically, and only after the fit has finished, so a failed run leaves an earlier result intact.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from pragmodels import rsa_models, simulate
from pragmodels.inference import fit
from pragmodels.priors import Prior
from pragmodels.results_io import atomic_write, save_netcdf

__all__ = ["load_config", "run_config"]

_REQUIRED = ("name", "model", "data", "sampler", "seed")


def load_config(path: str | Path) -> dict:
    path = Path(path)
    try:
        cfg = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"fit config {path} does not exist.") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"fit config {path}: not valid JSON ({e}).") from None
    missing = [k for k in _REQUIRED if k not in cfg]
    if missing:
        raise ValueError(f"fit config {path}: missing key(s) {missing}; required: {list(_REQUIRED)}.")
    return cfg


def _build(cfg: dict, path: Path):
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


def run_config(path: str | Path, out_dir: str | Path | None = None, *, quick: bool = False,
               progress_bar: bool = True) -> Path:
    """Fit the config at ``path``; return the run folder. ``quick`` shrinks the sampler run."""
    path = Path(path)
    cfg = load_config(path)
    model, data = _build(cfg, path)
    sampler = dict(cfg["sampler"])
    if quick:
        sampler.update(num_warmup=200, num_samples=200, num_chains=2)
    out = Path(out_dir) if out_dir else path.with_suffix("")
    t0 = time.perf_counter()
    tree = fit(int(cfg["seed"]), model, data, progress_bar=progress_bar, **sampler)
    wall = time.perf_counter() - t0
    tree.attrs["fit_config"] = json.dumps(cfg)

    from arviz_stats import summary

    table = summary(tree, var_names=[v for v in tree["posterior"].data_vars if v != "cost"])
    out.mkdir(parents=True, exist_ok=True)
    save_netcdf(tree, out / "posterior.nc")
    atomic_write(out / "summary.csv", lambda tmp: table.to_csv(tmp))
    atomic_write(out / "config.json", lambda tmp: Path(tmp).write_text(json.dumps(cfg, indent=2)))
    report = _report(cfg, tree, table, wall, quick)
    atomic_write(out / "report.md", lambda tmp: Path(tmp).write_text(report))
    print(report)
    return out


def _report(cfg, tree, table, wall, quick) -> str:
    diag = json.loads(tree.attrs["diagnostics"])
    lines = [f"# Fit: {cfg['name']}", "", cfg.get("description", ""), "",
             f"- model: `{tree.attrs['model']}`", f"- priors: `{tree.attrs['priors']}`",
             f"- sampler: `{tree.attrs['sampler_settings']}`" + (" (quick mode)" if quick else ""),
             f"- seed: {tree.attrs['seed']}; data sha256: `{tree.attrs['data_sha256'][:16]}…`",
             f"- pragmodels {tree.attrs['pragmodels_version']}, jax {tree.attrs['jax_version']}, "
             f"numpyro {tree.attrs['numpyro_version']}, backend {tree.attrs['backend']}",
             f"- diagnostics: {diag['divergences']} divergences, max r_hat {diag['max_rhat']:.3f}, "
             f"min bulk ESS {diag['min_ess_bulk']:.0f}, min tail ESS {diag['min_ess_tail']:.0f}"
             + ("" if tree.attrs["diagnostics_ok"] else "  **(check the warnings)**"),
             f"- wall time: {wall:.1f} s", "", "## Posterior", "", table.to_markdown(floatfmt=".3g"), ""]
    truth = cfg.get("truth")
    if truth:
        lines += ["## Recovery of the simulated truth", "", "| parameter | truth | 94% interval | covered |",
                  "|---|---|---|---|"]
        for k, v in truth.items():
            draws = np.asarray(tree["posterior"][k]).reshape(-1)
            lo, hi = np.quantile(draws, [0.03, 0.97])
            lines.append(f"| {k} | {v:g} | [{lo:.3g}, {hi:.3g}] | {'yes' if lo <= v <= hi else 'NO'} |")
        lines.append("")
    return "\n".join(lines)
