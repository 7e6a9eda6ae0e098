"""Study 2: the Wavelength game (Qiu et al. 2025), LM-RSA listeners fitted to 4,000 human guesses.

Entry point ``"study": "models/wavelength/study.py:run"`` (``fits/wavelength.json``; schema
:class:`~models.wavelength.config.Config`), run by ``pragmodels run fits/wavelength.json``. The LM scores are data, made
beforehand by ``python -m models.wavelength.score`` and committed in ``fits/wavelength/lm_scores/``;
this study never calls a language model. Per LM it fits the listeners by NUTS, compares them by
LOO (and item cross-validation), computes the paper's metrics, checks the posterior predictive,
judges the LM's own clues, and writes tables, figures and :func:`report_markdown`. Public helpers
for notebooks: :func:`fit_data`, :func:`fixed_listeners`, :func:`listener_metrics`,
:func:`human_metrics`, :func:`listener_draws`. The steps: ``docs/studies/wavelength.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import xarray as xr

import pragmodels as pm
from models.wavelength import listeners, lm_scores, production, prompts
from models.wavelength.config import Config
from pragmodels.datasets import load_wavelength
from pragmodels.inference.diagnostics import ESS_MIN, RHAT_MAX
from pragmodels.metrics import distributions
from pragmodels.runs.folder import Run
from pragmodels.runs.schema import validate_config
from pragmodels.runs.study import StudyFolder

#: the repository root (the committed LM scores and relative paths in the config are under it)
ROOT = Path(__file__).resolve().parents[2]
SCORES = ROOT / "fits" / "wavelength" / "lm_scores"
FLAT = ("uniform", "literal", "lm_rsa", "lm_rsa_cost", "appendix_c")
#: the per-item location models: without the LM (the control) and with the LM as the locations' prior
LOCATION = ("location", "lm_location")
#: guesses per item collected first (Appendix A: the clue was chosen by their mean error); the rest are fresh
N_SELECTION = 15
#: the alpha values of the per-item identifiability check (log-spaced)
ALPHA_GRID = np.exp(np.linspace(np.log(0.05), np.log(200.0), 80))


def fit_data(ds: xr.Dataset, long: pd.DataFrame) -> dict[str, np.ndarray]:
    """Model data for the items of ``ds`` (renumbered 0..n-1 in ds order)."""
    ids = ds["item"].to_numpy()
    index = {int(i): k for k, i in enumerate(ids)}
    trials = long[long["item"].isin(ids)]
    mask = ds["utt_mask"].to_numpy().astype(bool)
    log_lm = np.where(mask[..., None], np.nan_to_num(ds["log_lm"].to_numpy(), nan=0.0), 0.0)
    data = {"log_lm": log_lm.astype(np.float32), "utt_mask": mask,
            "item": trials["item"].map(index).to_numpy(np.int32), "guess": trials["guess"].to_numpy(np.int32)}
    if bool(ds["done_speaker"].to_numpy().all()):
        s0 = np.where(mask[..., None], np.nan_to_num(ds["log_s0"].to_numpy(), nan=0.0), 0.0)
        data["log_s0"] = s0.astype(np.float32)
    return data


def _specs(lm: str, data: dict[str, np.ndarray], sampler: dict[str, Any], seed: int,
           by_item_sampler: dict[str, Any] | None = None) -> list[pm.FitSpec]:
    base = {k: v for k, v in data.items() if k not in ("log_s0", "clue_length")}
    specs = [
        pm.FitSpec(f"{lm}-uniform", listeners.uniform_model, base, sampler=sampler, seed=seed),
        pm.FitSpec(f"{lm}-literal", listeners.literal_model, base, sampler=sampler, seed=seed + 1),
        pm.FitSpec(f"{lm}-lm_rsa", listeners.lm_rsa_model, base, sampler=sampler, seed=seed + 2),
        pm.FitSpec(f"{lm}-lm_rsa_cost", listeners.lm_rsa_model, base | {"clue_length": data["clue_length"]},
                   sampler=sampler, seed=seed + 3),
        pm.FitSpec(f"{lm}-location", listeners.location_model, base, sampler=by_item_sampler or sampler, seed=seed + 5),
        pm.FitSpec(f"{lm}-lm_location", listeners.lm_location_model, base, sampler=by_item_sampler or sampler,
                   seed=seed + 6),
    ]
    if "log_s0" in data:
        specs.append(pm.FitSpec(f"{lm}-appendix_c", listeners.appendix_c_model, data, sampler=sampler, seed=seed + 4))
    return specs


def _draws(tree: xr.DataTree, n: int, names: list[str]) -> dict[str, np.ndarray]:
    post = tree["posterior"].to_dataset()
    flat = post.stack(sample=("chain", "draw"))
    take = np.linspace(0, flat.sizes["sample"] - 1, min(n, flat.sizes["sample"])).astype(int)
    out = {}
    for v in names:
        if v in flat:
            out[v] = np.moveaxis(flat[v].to_numpy(), -1, 0)[take]
    return out


def listener_draws(name: str, tree: xr.DataTree, data: dict[str, Any], n: int) -> np.ndarray:
    """``[draw, item, state]`` probabilities of the fitted listener for each item's real clue."""
    names = ["alpha", "beta", "cost_weight", "tau", "z", "location_u", "spread"]
    draws = _draws(tree, n, names)
    name = name.removesuffix("_sp").removesuffix("_fresh")
    key = "lm_rsa" if name in ("lm_rsa_cost",) else name
    d = {k: jnp.asarray(v) for k, v in data.items() if k in ("log_lm", "utt_mask", "clue_length", "log_s0")}
    if name != "lm_rsa_cost":
        d.pop("clue_length", None)
    if not draws:
        return np.exp(np.asarray(listeners.listener_for(key, {}, d)))[None]
    f = jax.jit(jax.vmap(lambda p: listeners.listener_for(key, p, d)))
    return np.exp(np.asarray(f({k: jnp.asarray(v) for k, v in draws.items()})))


def listener_metrics(probs: np.ndarray, items: pd.DataFrame) -> dict[str, float]:
    """Mean over items of the paper's metrics for a ``[item, state]`` distribution."""
    target = items["target"].to_numpy(float)
    human = [np.asarray(r, float) for r in items["responses"]]
    mae = distributions.mean_absolute_error(probs, target)
    w1 = np.array([distributions.wasserstein_to_sample(p, h) for p, h in zip(probs, human)])
    ent = distributions.entropy(probs)
    r = distributions.pearson_of_means(distributions.distribution_mean(probs), np.array([h.mean() for h in human]))
    return {"abs_error_of_mean": float(np.mean(mae)), "w1_to_humans": float(np.mean(w1)),
            "entropy": float(np.mean(ent)), "pearson_r_means": float(r)}


def human_metrics(items: pd.DataFrame) -> dict[str, float]:
    """The humans' own: their mean's error, binned entropy, and W1 between two halves (a ceiling)."""
    target = items["target"].to_numpy(float)
    human = [np.asarray(r, float) for r in items["responses"]]
    half = []
    for h in human:
        a, b = h[: len(h) // 2], h[len(h) // 2:]
        pa = np.bincount(distributions.bin_to_grid(a), minlength=len(prompts.STATES)) / len(a)
        half.append(distributions.wasserstein_to_sample(pa, b))
    binned = np.stack([np.bincount(distributions.bin_to_grid(h), minlength=len(prompts.STATES)) / len(h) for h in human])
    return {"abs_error_of_mean": float(np.mean(np.abs([h.mean() for h in human] - target))),
            "w1_to_humans": float(np.mean(half)), "entropy": float(np.mean(distributions.entropy(binned))),
            "pearson_r_means": 1.0}


def split_guesses(items: pd.DataFrame, part: str, n_first: int = N_SELECTION) -> pd.DataFrame:
    """``items`` with each item's ``responses`` cut to its first ``n_first`` guesses (``part="first"``,
    those the clue was selected by) or to the rest (``"fresh"``), in the data's order (assumed the
    order of collection; Appendix A collected the 15 first)."""
    if part not in ("first", "fresh"):
        raise ValueError(f"split_guesses: part must be 'first' or 'fresh'; got {part!r}.")
    cut = (lambda r: tuple(r)[:n_first]) if part == "first" else (lambda r: tuple(r)[n_first:])
    out = items.copy()
    out["responses"] = [cut(r) for r in items["responses"]]
    if any(len(r) == 0 for r in out["responses"]):
        raise ValueError(f"split_guesses: an item has no {part} guesses (n_first = {n_first}).")
    return out


def selection_test(items: pd.DataFrame, n_first: int = N_SELECTION, n_perm: int = 20000, seed: int = 0
                   ) -> dict[str, float]:
    """Are an item's first ``n_first`` guesses closer to the target than the rest? The error of the
    mean of each part (mean over items) and a permutation test over the split: the statistic is the
    fresh part's mean error minus the first part's, its null distribution from ``n_perm`` random
    splits of each item's guesses into ``n_first`` and the rest; ``p`` one-sided, ``(1 + #{null >=
    observed}) / (1 + n_perm)``."""
    target = items["target"].to_numpy(float)
    g = np.stack([np.asarray(r, float) for r in items["responses"]])  # [item, guess]

    def stat(first: np.ndarray) -> np.ndarray:  # first: [..., item, guess] bool
        m1 = (g * first).sum(-1) / n_first
        m2 = (g * ~first).sum(-1) / (g.shape[1] - n_first)
        return (np.abs(m2 - target) - np.abs(m1 - target)).mean(-1)

    first = np.zeros(g.shape, bool)
    first[:, :n_first] = True
    obs = float(stat(first))
    rng = np.random.default_rng(seed)
    null = []
    for k in range(0, n_perm, 1000):
        keys = rng.random((min(1000, n_perm - k), *g.shape))
        null.append(stat(np.argsort(np.argsort(keys, -1), -1) < n_first))
    null_a = np.concatenate(null)
    err = lambda part: float(np.mean(np.abs(g[:, part].mean(1) - target)))  # noqa: E731
    return {"error_of_mean_first": err(slice(0, n_first)), "error_of_mean_fresh": err(slice(n_first, None)),
            "error_of_mean_all": err(slice(None)), "difference": obs, "n_perm": int(n_perm),
            "p_value": float((1 + np.sum(null_a >= obs)) / (1 + n_perm))}


def fixed_listeners(ds_data: dict[str, Any]) -> dict[str, np.ndarray]:
    """The LM at the paper's fixed settings: L0, LM-RSA at alpha = beta = 1, Appendix C at alpha = 1."""
    d = {k: jnp.asarray(v) for k, v in ds_data.items() if k in ("log_lm", "utt_mask", "log_s0")}
    out = {"LM direct (L0)": np.exp(np.asarray(listeners.listener_for("literal", {"beta": 1.0}, d))),
           "LM-RSA, alpha = 1": np.exp(np.asarray(listeners.listener_for("lm_rsa", {"alpha": 1.0, "beta": 1.0}, d)))}
    if "log_s0" in d:
        out["Appendix C, alpha = 1"] = np.exp(np.asarray(
            listeners.listener_for("appendix_c", {"alpha": 1.0, "beta": 1.0}, d)))
    return out


def _compare_and_fix(lm_name: str, label: str, trees: dict[str, xr.DataTree], data: dict[str, Any],
                     items: pd.DataFrame, loo_rows: list[pd.DataFrame], metric_rows: list[dict[str, Any]]
                     ) -> dict[str, np.ndarray]:
    """For one set of items: the LOO comparison of ``trees`` and the metric rows of the humans and
    of the LM at the paper's fixed settings (appended to ``loo_rows`` / ``metric_rows``); returns
    the fixed listeners (:func:`fixed_listeners`)."""
    cmp = pm.compare(trees)
    cmp.insert(0, "lm", lm_name)
    cmp.insert(1, "items", label)
    loo_rows.append(cmp.reset_index().rename(columns={"index": "model"}))
    fixed = fixed_listeners(data)
    metric_rows.append({"lm": lm_name, "items": label, "method": "Humans", **human_metrics(items)})
    for name, probs in fixed.items():
        metric_rows.append({"lm": lm_name, "items": label, "method": name, **listener_metrics(probs, items)})
    return fixed


def _ppc(tree: xr.DataTree, data: dict[str, Any], n_items: int) -> pd.DataFrame:
    """Per item: observed mean and SD of the guesses and their 94% posterior predictive intervals."""
    rep = tree["posterior_predictive"].to_dataset()
    var = next(iter(rep.data_vars))
    y = rep[var].stack(sample=("chain", "draw")).transpose("sample", ...).to_numpy()
    rows = []
    for i in range(n_items):
        sel = data["item"] == i
        obs, r = data["guess"][sel].astype(float), y[:, sel].astype(float)
        m, s = r.mean(1), r.std(1)
        lo_m, hi_m = np.quantile(m, [0.03, 0.97])
        lo_s, hi_s = np.quantile(s, [0.03, 0.97])
        rows.append({"item_index": i, "obs_mean": obs.mean(), "pp_mean_lo": lo_m, "pp_mean_hi": hi_m,
                     "obs_sd": obs.std(), "pp_sd_lo": lo_s, "pp_sd_hi": hi_s,
                     "mean_inside": bool(lo_m <= obs.mean() <= hi_m), "sd_inside": bool(lo_s <= obs.std() <= hi_s)})
    return pd.DataFrame(rows)


def _scores_path(lm_name: str, entry: Any) -> Path:
    """The score file an ``lms`` entry names (its ``outputs``, else ``fits/wavelength/lm_scores/<name>.nc``)."""
    path = Path(entry.outputs) if entry.outputs else SCORES / f"{lm_name}.nc"
    return path if path.is_absolute() else ROOT / path


def _check_identities(lms: dict[str, Any], paths: dict[str, Path]) -> None:
    """Each ``lms`` entry is the LM its score file records (``lm_identity``): else one line naming both."""
    import xarray as xr

    for lm_name, entry in lms.items():
        if not paths[lm_name].is_file():
            raise FileNotFoundError(f"`lms.{lm_name}`: no score file {paths[lm_name]}; make it with "
                                    f"python -m models.wavelength.score --lm {lm_name} (or set its `outputs`).")
        with xr.open_dataset(paths[lm_name]) as ds:
            recorded = str(ds.attrs.get("lm_identity", ""))
        why = entry.identity_mismatch(recorded)
        if why:
            raise ValueError(f"`lms.{lm_name}`: {paths[lm_name]} was scored by {recorded or 'an unrecorded LM'}, but "
                             f"{why}; score it again or correct the entry.")


def run(config: dict, out_dir: Path, mode: str, progress: bool, record: Run) -> None:
    """The study's entry point (:func:`pragmodels.runs.study.run_study` calls it; the steps:
    docs/studies/wavelength.md).

    Parameters
    ----------
    config : dict
        ``fits/wavelength.json`` (keys of :class:`Config`).
    out_dir : Path
        The staging run folder.
    mode : {"quick", "full"}
        Which sampler settings; quick also fits only ``quick_items`` items and skips the CV.
    progress : bool
        Progress bars.
    record : Run
        The open run (fits and inputs are recorded in its manifest).
    """
    cfg = validate_config(Config, config, what="study config")
    folder = StudyFolder(record)
    log, tables = folder.log, folder.tables
    items_all = load_wavelength()
    long = load_wavelength(long=True)
    folder.record_dataset("wavelength")
    sampler = dict(config["sampler"][mode])
    seed = int(cfg.seed)
    report: dict[str, Any] = {"mode": mode, "lms": {}, "prompt_version": prompts.PROMPT_VERSION,
                              "human_selection": selection_test(items_all, seed=int(cfg.seed))}
    metric_rows, loo_rows, forest_rows, ppc_rows, cv_rows, prod_rows = [], [], [], [], [], []
    grid: dict[str, Any] = {}
    paths = {lm_name: _scores_path(lm_name, entry) for lm_name, entry in cfg.lms.items()}
    _check_identities(cfg.lms, paths)  # every entry against the scores it names, before any fit
    for lm_name, entry in cfg.lms.items():
        path = paths[lm_name]
        ds = lm_scores.load_scores(path, need=["listener"])
        folder.record_file(f"lm_scores_{lm_name}", path)
        if mode == "quick":
            ds = ds.isel(item=slice(0, cfg.quick_items))
        ids = ds["item"].to_numpy()
        items = items_all.set_index("item").loc[ids].reset_index()
        data = fit_data(ds, long)
        data["clue_length"] = ds["clue_tokens"].to_numpy().astype(np.float32)
        log(f"{lm_name}: {len(ids)} items, {len(data['guess'])} guesses; fitting")
        by_item_sampler = (config["by_item_sampler"] if mode == "full" and cfg.by_item_sampler is not None
                           else sampler)
        specs = _specs(lm_name, data, sampler, seed, by_item_sampler)
        trees = folder.fit_per_lm(specs, executor=cfg.executor, progress=progress, mode=mode)
        all_label = f"all {len(ids)}"
        fixed = _compare_and_fix(lm_name, all_label, {k: v for k, v in trees.items() if k in FLAT}, data, items,
                                 loo_rows, metric_rows)
        for part in ("first", "fresh"):  # the humans on the guesses the clue was chosen by, and on the rest
            sub_items = split_guesses(items, part)
            metric_rows.append({"lm": lm_name, "items": all_label,
                                "method": f"Humans, {part} {len(sub_items['responses'].iloc[0])} guesses",
                                **human_metrics(sub_items)})
        fitted = {}
        groups = [(all_label, trees, data, items, fixed)]
        # the Appendix C listener needs the speaker pass; where it covers only some items, it is fitted
        # on those, beside LM-RSA and the baseline on the same items, and compared with them there
        done_sp = ds["done_speaker"].to_numpy().astype(bool)
        n_sp = int(done_sp.sum())
        if 0 < n_sp < len(ids):
            sub = ds.isel(item=np.nonzero(done_sp)[0])
            data_sub = fit_data(sub, long)
            items_sub = items_all.set_index("item").loc[sub["item"].to_numpy()].reset_index()
            sub_label = f"speaker-pass {n_sp}"
            base_sub = {k: v for k, v in data_sub.items() if k not in ("log_s0", "clue_length")}
            specs_sub = [pm.FitSpec(f"{lm_name}-appendix_c", listeners.appendix_c_model, data_sub, sampler=sampler, seed=seed + 4),
                         pm.FitSpec(f"{lm_name}-lm_rsa_sp", listeners.lm_rsa_model, base_sub, sampler=sampler, seed=seed + 2),
                         pm.FitSpec(f"{lm_name}-uniform_sp", listeners.uniform_model, base_sub, sampler=sampler, seed=seed)]
            log(f"{lm_name}: Appendix C on the {n_sp} items the speaker pass has scored")
            trees_sub = folder.fit_per_lm(specs_sub, executor=cfg.executor, progress=progress, mode=mode)
            fixed_sub = _compare_and_fix(lm_name, sub_label, trees_sub, data_sub, items_sub, loo_rows, metric_rows)
            groups.append((sub_label, trees_sub, data_sub, items_sub, fixed_sub))
        if cfg.fresh_refit and (cfg.cv_lms is None or lm_name in cfg.cv_lms):
            groups.append(_fresh_refit(folder, lm_name, ds, long, items, sampler, by_item_sampler, seed, cfg.executor,
                                       progress, loo_rows, metric_rows, mode))
        for label_items, trees_g, data_g, items_g, fixed_g in groups:
            for name, tree in trees_g.items():
                probs = listener_draws(name, tree, data_g, cfg.n_draws).mean(0)
                if label_items == all_label:
                    fitted[name] = probs
                metric_rows.append({"lm": lm_name, "items": label_items, "method": f"fitted {name}",
                                    **listener_metrics(probs, items_g)})
                post = tree["posterior"].to_dataset()
                for v in ("alpha", "beta", "width", "lapse", "rounding", "cost_weight", "alpha_mu", "alpha_sigma",
                          "tau", "spread"):
                    if v in post and post[v].ndim == 2:
                        x = post[v].to_numpy().ravel()
                        forest_rows.append({"lm": lm_name, "model": name, "parameter": v, "mean": x.mean(),
                                            "lo": np.quantile(x, 0.03), "hi": np.quantile(x, 0.97)})
                p = _ppc(tree, data_g, len(items_g))
                ppc_rows.append({"lm": lm_name, "model": name, "items": len(items_g),
                                 "mean_inside_94": float(p["mean_inside"].mean()),
                                 "sd_inside_94": float(p["sd_inside"].mean()),
                                 "w1_fitted_vs_lm_l0": float(np.mean(_w1_grid(probs, fixed_g["LM direct (L0)"]))),
                                 "w1_fitted_vs_uniform_max": float(np.max(_w1_grid(probs, _uniform_like(probs))))})
        trees = {**trees, **{k: v for g in groups[1:] if g[0].startswith("speaker-pass") for k, v in g[1].items()}}
        post_flat = trees["lm_rsa"]["posterior"].to_dataset()
        at = {v: float(post_flat[v].mean()) for v in ("beta", "width", "lapse", "rounding")}
        prof = listeners.alpha_profile({k: data[k] for k in ("log_lm", "utt_mask", "item", "guess")}, ALPHA_GRID, at)
        modes = np.array([listeners.count_modes(prof[:, i]) for i in range(prof.shape[1])])
        alpha_id = {"items_multimodal": int((modes > 1).sum()),
                    "items_best_at_top": int((np.argmax(prof, 0) == len(ALPHA_GRID) - 1).sum()),
                    "grid": [float(ALPHA_GRID[0]), float(ALPHA_GRID[-1])], "at": at}
        n_prod = 0
        done_prod = ds["done_production"].to_numpy().astype(bool)
        if done_prod.any():
            post = trees["lm_rsa"]["posterior"].to_dataset()
            a, b = float(post["alpha"].mean()), float(post["beta"].mean())
            pds = ds.isel(item=np.nonzero(done_prod)[0])
            clues = pd.read_csv(path.with_name(f"{lm_name}_clues.csv"), keep_default_na=False)
            target = items.set_index("item").loc[pds["item"].to_numpy(), "target"].to_numpy(float)
            per_item = production.production_scores(pds, clues, target, a, b)
            per_item.to_csv(tables / f"production_{lm_name}.csv", index=False)
            summ = production.summarise(per_item, seed=seed)
            summ.insert(0, "lm", lm_name)
            prod_rows.append(summ)
            n_prod = int(done_prod.sum())
            log(f"{lm_name}: production judged on {n_prod} items (alpha {a:.2f}, beta {b:.2f})")
        if mode == "full" and cfg.cv and (cfg.cv_lms is None or lm_name in cfg.cv_lms):
            report["lms"].setdefault(lm_name, {})
            cv_sampler = (config["cv_sampler"] if cfg.cv_sampler is not None
                          else dict(sampler, num_chains=min(2, sampler.get("num_chains", 2))))
            cv_rows.append(_item_cv(lm_name, data, ids, trees["lm_location"], cv_sampler, seed, cfg.cv_folds, folder,
                                    top_up=True))  # (a full run: every fit sized to the standards)
        grid[lm_name] = {"items": items, "lm": fixed["LM direct (L0)"], "fitted": fitted["lm_rsa"],
                         "trees": {f"{lm_name} {k}": trees[k] for k in ("lm_rsa", "lm_rsa_cost", "appendix_c")
                                   if k in trees}}
        report["lms"][lm_name] = {"n_items": int(len(ids)), "items": [int(i) for i in ids],
                                  "n_alternatives_mean": float(ds["utt_mask"].sum("utterance").mean() - 1),
                                  "alt_failed_total": int(ds["alt_failed"].sum()),
                                  "appendix_c": "appendix_c" in trees, "lm_identity": ds.attrs.get("lm_identity"),
                                  "n_speaker": int(ds["done_speaker"].sum()), "n_production": n_prod,
                                  "alpha_identification": alpha_id, "n_alt_samples": int(len(ids)) * len(prompts.STATES),
                                  "prompt_format": str(ds.attrs.get("prompt_format", "")).split("|")[0],
                                  "backend": entry.backend, "model": entry.model}
    pd.DataFrame(metric_rows).to_csv(tables / "metrics.csv", index=False)
    pd.concat(loo_rows).to_csv(tables / "loo.csv", index=False)
    pd.DataFrame(forest_rows).to_csv(tables / "parameters.csv", index=False)
    pd.DataFrame(ppc_rows).to_csv(tables / "ppc.csv", index=False)
    if cv_rows:
        pd.concat(cv_rows).to_csv(tables / "cv.csv", index=False)
    if prod_rows:
        pd.concat(prod_rows).to_csv(tables / "production.csv", index=False)
    folder.write_summary(report)
    convergence = folder.write_convergence()
    _figures(grid, folder.figures, cfg.grid_items, unconverged_labels(convergence))
    folder.write_report(report_markdown(folder.path, mode))
    log("done")


def _fresh_refit(folder: StudyFolder, lm_name: str, ds: xr.Dataset, long: pd.DataFrame, items: pd.DataFrame,
                 sampler: dict[str, Any], by_item_sampler: dict[str, Any], seed: int, executor: str, progress: bool,
                 loo_rows: list[pd.DataFrame], metric_rows: list[dict[str, Any]], mode: str) -> tuple[Any, ...]:
    """The robustness check of the human benchmark: the baseline, LM-RSA and the two location models
    refitted on each item's fresh guesses only (those after the first :data:`N_SELECTION`, which
    did not choose the clue), the flat pair compared by LOO; a group for the metrics and checks."""
    fresh = long[long.groupby("item").cumcount() >= N_SELECTION]
    data_f = fit_data(ds, fresh)
    items_f = split_guesses(items, "fresh")
    label = f"all {len(items)}, fresh {len(items_f['responses'].iloc[0])} guesses"
    base = {k: v for k, v in data_f.items() if k not in ("log_s0", "clue_length")}
    specs = [pm.FitSpec(f"{lm_name}-uniform_fresh", listeners.uniform_model, base, sampler=sampler, seed=seed),
             pm.FitSpec(f"{lm_name}-lm_rsa_fresh", listeners.lm_rsa_model, base, sampler=sampler, seed=seed + 2),
             pm.FitSpec(f"{lm_name}-location_fresh", listeners.location_model, base, sampler=by_item_sampler,
                        seed=seed + 5),
             pm.FitSpec(f"{lm_name}-lm_location_fresh", listeners.lm_location_model, base, sampler=by_item_sampler,
                        seed=seed + 6)]
    folder.log(f"{lm_name}: refitted on the fresh guesses ({label})")
    trees = folder.fit_per_lm(specs, executor=executor, progress=progress, mode=mode)
    flat = {k: v for k, v in trees.items() if k.removesuffix("_fresh") in FLAT}
    fixed = _compare_and_fix(lm_name, label, flat, data_f, items_f, loo_rows, metric_rows)
    return label, trees, data_f, items_f, fixed


def _uniform_like(probs: np.ndarray) -> np.ndarray:
    return np.full_like(probs, 1.0 / probs.shape[-1])


#: the models of the item cross-validation: the flat ones, the no-LM control and the LM as the locations' prior
CV_MODELS = {"uniform": listeners.uniform_model, "literal": listeners.literal_model, "lm_rsa": listeners.lm_rsa_model,
             "location": listeners.location_model, "lm_location": listeners.lm_location_model}
#: the differences the report gives (model, against), with their paired standard errors over items
CV_PAIRS = (("lm_location", "location"), ("location", "uniform"), ("lm_rsa", "uniform"), ("lm_location", "lm_rsa"))


def _item_cv(lm_name: str, data: dict[str, Any], ids: np.ndarray, lm_location: xr.DataTree,
             cv_sampler: dict[str, Any], seed: int, k: int, folder: StudyFolder, top_up: bool = False) -> pd.DataFrame:
    """K-fold cross-validation over items of :data:`CV_MODELS` on the same folds (held-out items'
    locations drawn from their prior: the uniform, or the LM; ``top_up``: each fold's fit sized to the
    sampling standards first, as in a full run), with the paired differences of
    :data:`CV_PAIRS` (``tables/cv_pairs.csv``), per-item elpd (``cv_items_<lm>.csv``) and where
    the LM-prior locations move away from the LM's literal listener (``semantic_shift_<lm>.csv``)."""
    base = {k2: v for k2, v in data.items() if k2 not in ("log_s0", "clue_length")}
    lm_l0 = np.exp(np.asarray(listeners.listener_for("literal", {"beta": 1.0}, {"log_lm": jnp.asarray(data["log_lm"])})))
    post = listener_draws("lm_location", lm_location, data, 400)
    mean_post = (post * prompts.STATES).sum(-1)
    mean_lm = (lm_l0 * np.asarray(prompts.STATES)).sum(-1)
    shift = pd.DataFrame({"item": ids, "lm_mean": mean_lm, "posterior_mean": mean_post.mean(0),
                          "shift": mean_post.mean(0) - mean_lm,
                          "shift_lo": np.quantile(mean_post - mean_lm, 0.03, axis=0),
                          "shift_hi": np.quantile(mean_post - mean_lm, 0.97, axis=0)})
    shift.sort_values("shift", key=np.abs, ascending=False).to_csv(folder.tables / f"semantic_shift_{lm_name}.csv",
                                                                   index=False)
    folder.log(f"{lm_name}: {k}-fold cross-validation over items")
    cv = listeners.cross_validate(seed + 11, CV_MODELS, base, k=k, seed=seed, fit_kwargs=dict(cv_sampler),
                                  top_up=top_up)
    pd.DataFrame({"item": ids, **{m: v for m, v in cv["elpd"].items()}}).to_csv(
        folder.tables / f"cv_items_{lm_name}.csv", index=False)
    pairs = cv_pairs(cv["elpd"], cv["mc_se"])
    pairs.insert(0, "lm", lm_name)
    path = folder.tables / "cv_pairs.csv"
    pairs.to_csv(path, index=False, mode="a" if path.exists() else "w", header=not path.exists())
    rows = [{"lm": lm_name, "model": m, "elpd_cv": cv["total"][m], "diff_se_vs_best": cv["diff_se"][m],
             "mc_se": float(np.sqrt(np.sum(cv["mc_se"][m] ** 2))), "best": cv["best"],
             **cv["diagnostics"].get(m, {})} for m in cv["total"]]
    return pd.DataFrame(rows)


def cv_pairs(elpd: dict[str, np.ndarray], mc_se: dict[str, np.ndarray],
             pairs: tuple[tuple[str, str], ...] = CV_PAIRS) -> pd.DataFrame:
    """Paired differences of item cross-validation: per pair ``(a, b)`` present in ``elpd``, the
    sum over items of ``elpd[a] - elpd[b]``, its standard error over items (``sqrt(n) sd``) and its
    Monte Carlo standard error (the two models' per-item Monte Carlo errors, independent).

    Shapes: ``elpd[model] [item]`` -> one row per pair.
    """
    rows = []
    for a, b in pairs:
        if a in elpd and b in elpd:
            d = np.asarray(elpd[a], float) - np.asarray(elpd[b], float)
            rows.append({"model": a, "against": b, "elpd_diff": float(d.sum()),
                         "se": float(np.sqrt(d.size) * np.std(d, ddof=1)),
                         "mc_se": float(np.sqrt(np.sum(np.asarray(mc_se[a]) ** 2 + np.asarray(mc_se[b]) ** 2)))})
    return pd.DataFrame(rows, columns=["model", "against", "elpd_diff", "se", "mc_se"])


def unconverged_labels(convergence: pd.DataFrame) -> list[str]:
    """The forest's labels (``"<lm> <model>"``) of the fits below the sampling standards, from
    ``tables/convergence.csv`` (fits named ``"<lm>/<model>"``)."""
    bad = convergence[convergence["converged"].astype(str) != "True"]["fit"]
    return [str(f).replace("/", " ", 1) for f in bad]


def forest_figure(trees: dict[str, xr.DataTree], unconverged: list[str]) -> Any:
    """The fitted listeners' shared parameters, a fit below the sampling standards marked."""
    from pragmodels.plots import forest

    return forest(trees, ["alpha", "beta", "width", "lapse", "rounding"], figsize=(15.0, 1.9 + 0.4 * len(trees)),
                  labels={"alpha": "alpha (rationality)", "beta": "beta (semantic temperature)",
                          "width": "kernel width (scale units)", "lapse": "lapse", "rounding": "rounded to tens"},
                  unconverged=[u for u in unconverged if u in trees])


def _figures(grid: dict[str, Any], figures: Path, n: int, unconverged: list[str] | None = None) -> None:
    import matplotlib.pyplot as plt

    from pragmodels.plots import distribution_grid, elpd_compare

    for lm_name, g in grid.items():
        items = g["items"]
        panels = [{"title": f"item {int(r.item)}: '{r.clue}', target {int(r.target)}", "left": r.left,
                   "right": r.right, "human": list(r.responses), "target": float(r.target),
                   "series": {f"{lm_name} literal listener (L0, beta = 1)": g["lm"][k],
                              "LM-RSA fitted to humans (posterior mean)": g["fitted"][k]}}
                  for k, r in enumerate(items.head(n).itertuples())]
        fig = distribution_grid(panels, prompts.STATES, xlabel="scale value (0-100)", ylabel="probability")
        fig.savefig(figures / f"items_{lm_name}.png", dpi=110)
        plt.close(fig)
    trees = {k: v for g in grid.values() for k, v in g["trees"].items()}
    fig = forest_figure(trees, unconverged or [])
    fig.savefig(figures / "forest_alpha_beta.png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    loo = pd.read_csv(figures.parent / "tables" / "loo.csv")
    for (lm_name, items), g in loo.groupby(["lm", "items"], sort=False):
        if len(g) > 1:
            fig = elpd_compare(g.sort_values("rank").set_index("model"),
                               title=f"{lm_name}, {items} items: the listeners compared (PSIS-LOO over guesses)")
            fig.savefig(figures / loo_figure(lm_name, items), dpi=110, bbox_inches="tight")
            plt.close(fig)


def loo_figure(lm_name: str, items: str) -> str:
    """The file of one LOO comparison's figure: ``loo_<lm>_<item set>.png`` (``all``, ``speaker-pass``,
    ``fresh``: all items on their fresh guesses)."""
    return f"loo_{lm_name}_{'fresh' if 'fresh' in items else items.split()[0]}.png"


def _md(df: pd.DataFrame, floatfmt: str = ".3g") -> str:
    return df.to_markdown(index=False, floatfmt=floatfmt)


TITLE = "Wavelength (Qiu et al. 2025): LM-RSA listeners fitted to human guesses"
#: the paper's words (Qiu et al. 2025), quoted where the report compares with them
PAPER_SELECTION = ("We keep the best clues based on mean human absolute differences from the target value, "
                   "finalizing a set of 100 problems for the official comprehension task.")
PAPER_HUMAN_JUDGES = ("we perform human evaluation on the model’s produced clues by collecting 5 human listener "
                      "guesses for each problem and compute their average")
PAPER_HUMAN_ERROR = 8.98


#: Appendix C's S0 as scored here, against the paper's (a departure, stated where its numbers stand)
SPEAKER_DEPARTURE = ("Departure: its S0 is the mean log-probability over the tokens of `<answer>clue</answer>` plus "
                     "the end-of-turn token (models/wavelength/lm_scores.py, the speaker pass), where the paper's "
                     "Appendix C takes \"the length-normalized probability\" of the utterance itself; the markup's "
                     "tokens, the same for every clue, shrink the differences between clues by the share of the "
                     "length they take.")


def _alt_failed(info: dict[str, Any]) -> str:
    """The alternatives' parse failures, as a departure: dropped here, where upstream resamples."""
    n = info.get("n_alt_samples", info["n_items"] * 21)
    return (f"{info['alt_failed_total']} of {n} sampled alternatives did not parse (empty, markup, or over five "
            "words) and were dropped, so those items have fewer alternatives. Departure: upstream resamples until a "
            "clue parses.")


def _prompt_departure(info: dict[str, Any]) -> list[str]:
    """A line on an LM run as a base model on plain text (the paper prompts chat models)."""
    if info.get("prompt_format") != "plain":
        return []
    return [f"- Prompt format: plain text. Departure: {info['model']} was run as a base model, its prompts as plain "
            "text with no chat template, where the paper prompts instruction-tuned chat models."]


def _human_benchmark(sel: dict[str, Any]) -> list[str]:
    """The humans as a benchmark: the selection of the clues by their first guesses, and what the paper prints."""
    p = sel["p_value"]
    return ["### The human benchmark", "",
            f"Each clue was chosen by the mean error of its first {N_SELECTION} guesses (the paper's Appendix A: "
            f"\"{PAPER_SELECTION}\"), so those guesses flatter the humans. Error of the mean over the 100 items: "
            f"{sel['error_of_mean_first']:.2f} on the first {N_SELECTION} guesses, {sel['error_of_mean_fresh']:.2f} on "
            f"the 25 fresh ones, {sel['error_of_mean_all']:.2f} on all 40. A permutation test over the split (each "
            f"item's 40 guesses split at random into {N_SELECTION} and 25, {sel['n_perm']:,} times; the data's order "
            f"taken as the order of collection, which the data do not record) gives p = {p:.2g} (one-sided) for a "
            f"difference of {sel['difference']:.2f} or more. The rows \"Humans, fresh 25 guesses\" are the fair "
            "benchmark; the fits refitted on the fresh guesses alone are the rows `*_fresh`.", "",
            f"The paper prints one human error for its clues: {PAPER_HUMAN_ERROR} (Table 2, human listeners judging "
            f"the human clues), from 5 fresh listeners per clue: \"{PAPER_HUMAN_JUDGES}\" (Section 5.3). It prints "
            "no error over the 40 guesses of the comprehension data.", ""]


def _pair(pairs: pd.DataFrame, lm: str, a: str, b: str) -> str:
    """``"d ± se (Monte Carlo se m)"`` of one CV pair, or ``""`` when it is not in the table."""
    r = pairs[(pairs["lm"] == lm) & (pairs["model"] == a) & (pairs["against"] == b)]
    if r.empty:
        return ""
    r = r.iloc[0]
    return f"{r['elpd_diff']:+.1f} ± {r['se']:.1f} elpd (paired SE over items; Monte Carlo SE {r['mc_se']:.1f})"


def _summary(summary: dict[str, Any], ppc: pd.DataFrame, pairs: pd.DataFrame | None) -> list[str]:
    """The report's opening findings, each from its table."""
    out = ["## Summary", ""]
    for lm in summary["lms"]:
        for line in _ppc_summary(ppc[ppc["lm"] == lm]):
            if line:
                out.append(f"- {lm}: {line}")
        if pairs is not None and (pairs["lm"] == lm).any():
            out.append(f"- {lm}, item cross-validation: per-item locations with no LM (uniform on the scale) against "
                       f"the flat baseline: {_pair(pairs, lm, 'location', 'uniform')}; what the LM adds as the "
                       f"locations' prior beyond that control: {_pair(pairs, lm, 'lm_location', 'location')}; LM-RSA "
                       f"against the baseline: {_pair(pairs, lm, 'lm_rsa', 'uniform')}.")
    sel = summary.get("human_selection")
    if sel:
        out.append(f"- Humans, error of the mean: {sel['error_of_mean_fresh']:.2f} on the 25 fresh guesses per item, "
                   f"{sel['error_of_mean_all']:.2f} on all 40, {sel['error_of_mean_first']:.2f} on the first "
                   f"{N_SELECTION} that chose the clue (permutation p = {sel['p_value']:.2g}); the paper prints only "
                   f"{PAPER_HUMAN_ERROR} (5 fresh listeners per clue).")
    return out + [""]


def _cv_section(t: Path, summary: dict[str, Any], pairs: pd.DataFrame | None) -> list[str]:
    """Item cross-validation: the models, the differences that answer what the LM adds, the fits' convergence."""
    cv = pd.read_csv(t / "cv.csv")
    out = ["## Item cross-validation: what the LM adds beyond a model with no LM", "",
           f"{len(cv['model'].unique())} models on the same folds, elpd summed over held-out items. A held-out item's "
           "location (the per-item models) is drawn from its prior, so the item's guesses are scored jointly: a "
           "model in which an item's guesses cluster somewhere unknown gains from that alone. `location` is that "
           "control with no LM (each item's location uniform on the scale, a discretised Gaussian spread, the slider's "
           "width, lapse and rounding); `lm_location` is the same with the LM's literal listener as the locations' "
           "prior (density ∝ L0^beta on each state's bin; beta = 0 is the control). max_rhat, min_ess_* and "
           "divergences: the worst over the folds' fits; folds_sampled_again and folds_refit_not_kept (where "
           "present): the folds whose fit `top_up` sampled again, the refit kept or not.", "", _md(cv, ".4g"), ""]
    if pairs is not None:
        out += ["Paired differences (model minus against):", "", _md(pairs, ".1f"), ""]
        for lm in pairs["lm"].unique():
            out += [f"{lm}: the LM as the locations' prior adds {_pair(pairs, lm, 'lm_location', 'location')} beyond "
                    f"the no-LM control, which itself gains {_pair(pairs, lm, 'location', 'uniform')} over the flat "
                    "baseline. The earlier claim that an LM prior on each clue's semantics (`lm_prior_model`) wins "
                    "this cross-validation by about 2,120 ± 140 is withdrawn: that fit did not converge (r_hat 1.03, "
                    "tail ESS 81; cross-validation fits of 2 x 200 draws), and it was compared with no model of "
                    "per-item clustering without the LM.", ""]
    bad = cv[(cv.get("max_rhat", pd.Series(dtype=float)) > RHAT_MAX)
             | (cv.get("min_ess_tail", pd.Series(dtype=float)) < ESS_MIN)]
    if len(bad):
        out += [f"**Cross-validation fits short of r_hat <= {RHAT_MAX} and tail ESS >= {ESS_MIN:.0f} in some fold: "
                f"{', '.join(bad['lm'] + '/' + bad['model'])}.**", ""]
    for lm in summary["lms"]:
        f = t / f"semantic_shift_{lm}.csv"
        if f.exists():
            sh = pd.read_csv(f).head(8)
            out += [f"Where the LM-prior locations (`lm_location`, all items) move away from {lm}'s literal listener "
                    "(posterior mean of the fitted listener minus the LM's L0 mean, in scale units, 94% interval; "
                    "largest first; item ids, texts not republished):", "", _md(sh), ""]
    return out


def _ppc_summary(ppc: pd.DataFrame) -> list[str]:
    """What the posterior predictive checks say, from the table: the flat models and what can be reached."""
    flat = ppc[ppc["model"].isin(FLAT)]  # on all the LM's items and guesses (not `_sp`, `_fresh`)
    loc = ppc[ppc["model"].isin(LOCATION)]
    if flat.empty:
        return []
    fail = 1 - flat["mean_inside_94"]
    share = f"{fail.min():.0%}" if f"{fail.min():.0%}" == f"{fail.max():.0%}" else f"{fail.min():.0%} to {fail.max():.0%}"
    out = [f"**Every flat model fails its posterior predictive check on {share} of "
           f"items** (of {int(flat['items'].max())}; the observed mean outside the 94% interval of replicated data), "
           "and **every fitted flat "
           f"listener is uniform**: none is further than {flat['w1_fitted_vs_uniform_max'].max():.2g} scale units "
           "(W1) from the uniform on any item. Their differences in LOO are differences among listeners that ignore "
           "the clue."]
    if not loc.empty:
        best = loc.set_index("model")["mean_inside_94"]
        out[0] += (" What a model can reach on these guesses: per-item locations pass the mean check on "
                   + " and ".join(f"{v:.0%} (`{k}`)" for k, v in best.items()) + " of items.")
    return out + [""]


def quick_markdown(run_dir: str | Path) -> str:
    """The report of a quick run: the steps that ran and the files they wrote, no finding
    (:func:`pragmodels.runs.quick_report.quick_report`).

    Parameters
    ----------
    run_dir : str or Path
        The run folder (``summary.json`` and ``tables/convergence.csv`` written).

    Returns
    -------
    str
    """
    from pragmodels.runs.quick_report import quick_report

    run_dir = Path(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    fits = pd.read_csv(run_dir / "tables" / "convergence.csv")["fit"].tolist()
    steps = ["the human guesses (Qiu et al. 2025) loaded, checked against their sha256"]
    for lm, info in summary["lms"].items():
        own = [f.split("/", 1)[1] for f in fits if f.startswith(f"{lm}/")]
        steps.append(f"{lm}: its committed LM scores of {info['n_items']} items; {len(own)} fit{'s' * (len(own) != 1)} by NUTS: "
                     + ", ".join(own) + (f"; production judged on {info['n_production']} items"
                                         if info.get("n_production") else ""))
    steps += ["the paper's metrics and posterior predictive checks of every fit, and PSIS-LOO comparisons of the "
              "listeners fitted to the same items",
              "figures and this report"]
    return quick_report(TITLE, run_dir, steps, full_report="fits/wavelength/full/report.md")


def report_markdown(run_dir: str | Path, mode: str) -> str:
    """The run's ``report.md``, from its tables and ``summary.json``: for a full run the analysis,
    for a quick run what it checked (:func:`quick_markdown`).

    Parameters
    ----------
    run_dir : str or Path
        The run folder.
    mode : str
        ``quick`` or ``full``.

    Returns
    -------
    str
    """
    run_dir = Path(run_dir)
    if mode == "quick":  # what it checked, that the pipeline runs, and nothing else
        return quick_markdown(run_dir)
    t = run_dir / "tables"
    summary = json.loads((run_dir / "summary.json").read_text())
    metrics, loo = pd.read_csv(t / "metrics.csv"), pd.read_csv(t / "loo.csv")
    params, ppc = pd.read_csv(t / "parameters.csv"), pd.read_csv(t / "ppc.csv")
    cv_pairs_t = pd.read_csv(t / "cv_pairs.csv") if (t / "cv_pairs.csv").exists() else None
    out = [f"# {TITLE}", ""]
    out += [f"Prompts: version `{summary['prompt_version']}` (models/wavelength/prompts.py, this project's own words).", ""]
    out += _summary(summary, ppc, cv_pairs_t)
    if "human_selection" in summary:
        out += _human_benchmark(summary["human_selection"])
    for lm, info in summary["lms"].items():
        out += [f"## {lm} ({info['backend']}: {info['model']}, `{info['lm_identity']}`)", "",
                f"- Items: {info['n_items']} of 100 (the first ones of a fixed random order that the scoring run "
                f"finished; ids in summary.json), {info['n_items'] * 40} guesses.",
                f"- Alternatives per item: {info['n_alternatives_mean']:.1f} on average (of 21 samples, one per state, "
                f"deduplicated); {_alt_failed(info)}",
                *_prompt_departure(info),
                "- Appendix C listener: " + (f"fitted on the {info.get('n_speaker', 0)} items the speaker pass has "
                                               "scored (a random subset; compared there with LM-RSA and the baseline "
                                               "fitted to the same items, `_sp`)"
                                               if info['appendix_c'] and info.get('n_speaker', 0) < info['n_items']
                                               else "fitted" if info['appendix_c']
                                               else "not fitted (the speaker pass has scored none of these items)") + "."
                + (" " + SPEAKER_DEPARTURE if info['appendix_c'] else ""),
                f"- Production (direct vs Inverse-RSA clues): {info.get('n_production', 0)} items.",
                ""]
        m = metrics[metrics["lm"] == lm].drop(columns="lm")
        out += ["### The paper's metrics (mean over items)", "",
                "abs_error_of_mean: |E[listener] - target|; w1_to_humans: W1 between the 21-point distribution and "
                "the 40 raw human guesses (for humans: between one half's binned guesses and the other half's raw "
                "guesses, a noise ceiling); entropy: nats over the 21 states (human guesses binned to the nearest "
                "state); pearson_r_means: Pearson r between the listener's mean and the humans' mean over items.", "",
                _md(m), ""]
        lo = loo[loo["lm"] == lm]
        cols = [c for c in ("items", "model", "rank", "elpd", "p", "elpd_diff", "dse", "weight") if c in lo.columns]
        out += ["### PSIS-LOO over guesses (flat models; models compared on the same items only)", "",
                _md(lo[cols], ".1f"), ""]
        for _, g in (lo.groupby("items", sort=False) if "items" in lo.columns else [("", lo)]):
            if len(g) > 1:
                where = f"On {g['items'].iloc[0]} items (LOO over guesses): " if "items" in g.columns else ""
                out += [where + pm.loo_sentence(g.sort_values("rank").set_index("model")), ""]
                if "items" in g.columns:
                    out += [f"![LOO {lm}, {g['items'].iloc[0]} items](figures/{loo_figure(lm, g['items'].iloc[0])})", ""]
        p = params[params["lm"] == lm].drop(columns="lm")
        ai = info.get("alpha_identification")
        id_note = []
        if ai:
            id_note = [f"Alpha per item, identified? Each item's profile log-likelihood of its own alpha "
                       f"({ai['grid'][0]:g} to {ai['grid'][1]:g}, log-spaced; beta, width, lapse and rounding at the "
                       f"flat LM-RSA posterior means) has two or more separate modes within 2 nats of its best for "
                       f"{ai['items_multimodal']} of {info['n_items']} items, and is best at the top of the range for "
                       f"{ai['items_best_at_top']}. LM-RSA with an alpha per item is not fitted: its chains did not "
                       "mix (r_hat 1.6 at 4 x 200 draws in the last run that fitted it); the per-item location models "
                       "take its place as the model that can place each item's mass.", ""]
        out += ["### Parameters (posterior mean, 94% interval)", "", _md(p), "", *id_note,
                "### Posterior predictive checks (share of items whose observed value lies in the 94% interval of "
                "replicated data; W1 between the fitted listener and the LM's own L0, and its largest W1 from the "
                "uniform over items)", "",
                _md(ppc[ppc["lm"] == lm].drop(columns="lm")), "", *_ppc_summary(ppc[ppc["lm"] == lm])]
    if (t / "cv.csv").exists():
        out += _cv_section(t, summary, cv_pairs_t)
    if (t / "convergence.csv").exists():
        conv = pd.read_csv(t / "convergence.csv")
        bad = conv[conv["converged"] != True]  # noqa: E712 (a CSV boolean)
        out += ["## Convergence", "",
                f"Thresholds: r_hat <= {RHAT_MAX}, bulk and tail ESS >= {ESS_MIN:.0f}, no divergences. "
                + (f"**{len(bad)} of {len(conv)} fits do not pass: "
                   f"{', '.join(bad['fit'])}; their numbers above are not to be relied on.**" if len(bad)
                   else "Every fit passes."), "", _md(conv), ""]
    if (t / "production.csv").exists():
        pr = pd.read_csv(t / "production.csv")
        out += ["## Production: the LM's own clues against Inverse-RSA clues (Section 5.1)", "",
                "32 clues sampled from the LM speaker for each item's target; direct = the LM's clue (a sample of "
                "its distribution, or its most frequent clue); Inverse-RSA = S1(u | t) ∝ S0(u | t) L0(t | u) at "
                "alpha = 1 (a sample, as the paper's Section 5.1 does, or its argmax, a variant). Judged by the LM's own literal listener "
                "(circular: Inverse-RSA picks clues that raise exactly that listener's L0(t | u), so its gain "
                "there is built in) and by the LM-RSA listener fitted to the humans (posterior-mean alpha and "
                "beta; the clue heard against the item's LM alternatives). p_target: the judge's probability of "
                "the target; abs_error: |judge's mean - target|; judge_resolution: SD over an item's produced "
                "clues of the judge's mean (how far the judge can tell the clues apart at all). d_*: Inverse-RSA "
                "minus the matching direct row, 95% bootstrap interval over items. No person judged these clues.",
                "", _md(pr), ""]
        for lm in pr["lm"].unique():
            g = pr[(pr["lm"] == lm) & pr["judge"].str.startswith("human-fitted")]
            r = g[g["speaker"] == "Inverse-RSA (S1 sample)"]  # the paper's: a sampled clue against a sampled one
            if len(r):
                r = r.iloc[0]
                better = "lowers" if r["d_abs_error"] < 0 else "raises"
                sure = (r["d_abs_error_hi"] < 0) or (r["d_abs_error_lo"] > 0)
                out += [f"- {lm}: under the human-fitted listener, a clue sampled from Inverse-RSA {better} the error "
                        f"of the mean by {abs(r['d_abs_error']):.1f} scale units against a clue sampled from the LM "
                        "speaker (expected over both) "
                        f"(95% interval {r['d_abs_error_lo']:.1f} to {r['d_abs_error_hi']:.1f}; "
                        f"{'excludes' if sure else 'includes'} 0), over {int(r['items'])} items; that judge's "
                        f"resolution is {r['judge_resolution']:.1f} scale units.", ""]
    speaker_note = []
    for lm, info in summary["lms"].items():
        if not info["appendix_c"] or info.get("n_production", 0) < info["n_items"]:
            speaker_note.append(f"{lm}: speaker pass on {info.get('n_speaker', 0)} of {info['n_items']} items, "
                                f"production on {info.get('n_production', 0)}")
    out += ["## What this run can and cannot show", "",
            "- The LMs are tiny (135M and 270M parameters). SmolLM2's literal listener barely depends on the clue "
            "(see the figure: its distributions are ragged and similar across clues) and its own clues at temperature "
            "1 are mostly noise, so its alternatives are not the informative competitors RSA needs. These fits test "
            "the machinery and say how much of the human guesses such an LM's semantics explain; they say little "
            "about pragmatic reasoning in capable LMs, which the paper finds only in large models.",
            "- The production comparison has no human judges: the human-fitted listener stands in for them, and it "
            "can only separate clues as far as the LM's semantics do (its resolution above).",
            *(["- Passes not complete: " + "; ".join(speaker_note) + ". `python -m models.wavelength.score --lm <lm> "
               "--passes speaker production` continues them (Appendix C is fitted once the speaker pass covers "
               "every fitted item)."] if speaker_note else []),
            "- Items: a random subset where fewer than 100 (summary.json lists them); a later scoring run continues "
            "the same order.",
            "- A larger LM on a GPU server: score it with `python -m models.wavelength.score --base-url ...` and add one entry to "
            "`lms` in fits/wavelength.json, e.g. `\"qwen\": {\"backend\": \"openai\", \"base_url\": "
            "\"http://gpu-host:8000/v1\", \"model\": \"Qwen/Qwen3-32B\"}`.", ""]
    out += ["## Figures", ""]
    for lm in summary["lms"]:
        out += [f"Items, {lm}: the human guesses (histogram), {lm}'s literal listener and the LM-RSA listener fitted "
                "to the humans (posterior mean); each panel names the clue, the target and what the scale's ends "
                "mean.", "", f"![items {lm}](figures/items_{lm}.png)", ""]
    out += ["Posterior medians and 94% intervals of the flat listeners' parameters, one panel per parameter.", "",
            "![forest](figures/forest_alpha_beta.png)", "",
            "The PSIS-LOO comparisons (`figures/loo_<lm>_<items>.png`) stand under their tables above.", ""]
    return "\n".join(out)


def _w1_grid(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """W1 between two distributions on the 21-point grid (step 5): sum of |F_a - F_b| x 5."""
    return np.abs(np.cumsum(a - b, axis=-1))[..., :-1].sum(-1) * 5.0
