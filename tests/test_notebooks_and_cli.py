"""The notebooks execute and show their figures, and the CLI main job writes a complete run folder."""

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbclient import NotebookClient

from pragmodels import load_netcdf
from pragmodels.cli import main

ROOT = Path(__file__).resolve().parents[1]


#: a cell draws when it calls a pragmodels plot, an arviz-plots plot or pyplot
DRAWS = re.compile(r"\bplots\.\w+\(|\bazp\.plot_\w+\(|\bplt\.(plot|subplots|figure|imshow|scatter)\(")
WIDGET = "application/vnd.jupyter.widget-view+json"


def _files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


# the three study notebooks (DRInQ about 80 s, the others 2-4 minutes each from a cold compilation
# cache) run in `make test-all`; the default run keeps the quick start (kernel in the repository root:
# inline figures, progress widgets). What a kernel in notebooks/ relies on is checked without one: the
# relative data folder (tests/datasets/test_data_dir.py) and the studies' import (tests/runs/test_study.py)
@pytest.mark.subprocess
@pytest.mark.parametrize("name, kernel_dir", [("quickstart.ipynb", "."),
                                             pytest.param("social_meaning.ipynb", "notebooks", marks=pytest.mark.slow),
                                             pytest.param("wavelength.ipynb", "notebooks", marks=pytest.mark.slow),
                                             pytest.param("implicature.ipynb", "notebooks", marks=pytest.mark.slow)])
def test_notebooks_run_and_show_their_figures(name, kernel_dir, mirror, monkeypatch):
    """Each notebook runs headless, one kernel started in the repository root and one in notebooks/
    (where Jupyter starts it), with the relative PRAGMODELS_DATA_DIR that make sets. Every cell
    that draws shows its figure inline (image/png: pragmodels.plots once selected Agg on import
    and no figure appeared), progress bars are widgets without the "IProgress not found" warning,
    and nothing is written into the repository root or notebooks/."""
    monkeypatch.setenv("PRAGMODELS_DATA_DIR", os.path.relpath(mirror, ROOT))  # e.g. ../shared/data
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel picks its inline backend, as in Jupyter
    # the notebooks call pm.enable_compilation_cache(): with the tests' cache a second run takes a
    # third of the time (their fits' compilation dominates)
    monkeypatch.setenv("PRAGMODELS_COMPILATION_CACHE",
                       os.environ.get("PRAGMODELS_COMPILATION_CACHE", str(ROOT / ".pytest_cache" / "jax")))
    before = (_files(ROOT), _files(ROOT / "notebooks"))
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    # in an event loop of its own, closed at the end: `.execute()` leaves jupyter_core's loop set in
    # this thread, unclosed, and whatever test later replaces it fails on its ResourceWarnings
    asyncio.run(NotebookClient(nb, timeout=600, kernel_name="python3",
                               resources={"metadata": {"path": str(ROOT / kernel_dir)}}).async_execute())
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    drawing = [c for c in code if DRAWS.search(c.source)]
    assert drawing
    for c in drawing:  # once: a trailing `fig` beside the inline backend's own display shows it twice
        shown = sum("image/png" in o.get("data", {}) for o in c.outputs)
        assert shown == 1, f"{shown} figures shown by:\n{c.source}"
    stderr = "".join(o.get("text", "") for c in code for o in c.outputs if o.get("name") == "stderr")
    assert "IProgress not found" not in stderr
    if name == "quickstart.ipynb":  # its fit shows a progress bar: a widget
        fit = next(c for c in code if "progress_bar=True" in c.source)
        assert any(WIDGET in o.get("data", {}) for o in fit.outputs)
        # the one-element cost_weight is named by its cost term, not `cost_weight / 0`
        table = next(c for c in code if "summary(tree" in c.source)
        assert "cost_weight[square]" in str(table.outputs)
    if name == "social_meaning.ipynb":  # the quick fits' own warnings are shown, not silenced
        fits = next(c for c in code if "fit_one(" in c.source)
        assert "FitWarning" in "".join(o.get("text", "") for o in fits.outputs if o.get("name") == "stderr")
    assert (_files(ROOT), _files(ROOT / "notebooks")) == before


def test_every_notebook_is_run_by_the_notebook_test():
    marks = next(m for m in test_notebooks_run_and_show_their_figures.pytestmark if m.name == "parametrize")
    listed = {p.values[0] if hasattr(p, "values") else p[0] for p in marks.args[1]}
    assert listed == {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}


@pytest.mark.subprocess
def test_progress_bars_are_text_in_a_terminal():
    """tqdm.auto (the sampler's and fit_many's bars) outside a notebook: plain text, no warning."""
    code = "from tqdm.auto import tqdm\nfor _ in tqdm(range(3), desc='NUTS'): pass"
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert "NUTS: 100%|" in err and "IProgress" not in err and "Warning" not in err


@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # --quick: short chains
@pytest.mark.nuts
def test_cli_run_quick_writes_run_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(ROOT / "fits" / "reference_game.json"), "--out", str(out), "--quick", "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "posterior.nc", "report.md", "run.json", "summary.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.lock", "run"]  # no temp folder left
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["mode"] == "quick" and manifest["entry_point"] == "pragmodels.runs.fit_config:run_config"
    assert manifest["fits"]["fit"]["file"] == "posterior.nc" and "max_rhat" in manifest["fits"]["fit"]["diagnostics"]
    assert set(manifest["files"]) == {"config.json", "posterior.nc", "report.md", "summary.csv"}
    cols = pd.read_csv(out / "summary.csv").columns
    assert {"eti94_lb", "eti94_ub"} <= set(cols), list(cols)  # 94%, as the recovery table and the plots
    tree = load_netcdf(out / "posterior.nc")
    assert json.loads(tree.attrs["fit_config"])["name"] == "reference_game"
    assert np.isfinite(tree["posterior"]["alpha"].values).all()
    report = (out / "report.md").read_text()
    assert "Recovery of the simulated truth" in report and "wall time" in report
    from pragmodels.runs.fit_config import render_report

    assert render_report(out) == report  # the report is rendered from the run folder alone


def test_cli_bad_config_is_named_and_leaves_results(tmp_path, capsys):
    cfg = json.loads((ROOT / "fits" / "reference_game.json").read_text())
    cfg["model"]["factory"] = "nonsense_model"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(cfg))
    out = tmp_path / "bad"
    out.mkdir()
    (out / "posterior.nc").write_bytes(b"earlier good result")
    assert main(["run", str(bad), "--quick", "--no-progress"]) == 2
    assert '`model.factory` = "nonsense_model": expected one of speaker_model' in capsys.readouterr().err
    assert (out / "posterior.nc").read_bytes() == b"earlier good result"
    assert main(["run", str(tmp_path / "missing.json")]) == 2


def test_tables_social_meaning_writes_the_required_columns(tmp_path, capsys):
    out = tmp_path / "tables.csv"
    assert main(["tables", "social_meaning", "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == ["model", "prompt", "spearman", "ccc", "rmse", "cds_m", "cds_i", "cds", "das", "iss"]
    assert len(df) == 12 and df.loc[(df.model == "gpt") & (df.prompt == "MIN"), "ccc"].round(3).item() == 0.703
    printed = capsys.readouterr().out
    assert "0.916 (0.932)" in printed and "4 cell(s) differ from the paper" in printed
    assert "rmse_individual" in pd.read_csv(tmp_path / "tables_with_paper.csv").columns


def _social_trees(run_dir):
    """The fits of a social-meaning run folder, as its report reads them: ``(trees, baseline)``."""
    manifest = json.loads((run_dir / "run.json").read_text())
    fits = {k: load_netcdf(run_dir / f["file"]) for k, f in manifest["fits"].items() if k != "esr measurement"}
    return {k: t for k, t in fits.items() if k != "human baseline"}, fits["human baseline"]


@pytest.mark.slow  # about 4 minutes cold; `make test-all`
def test_social_meaning_main_job_quick(tmp_path):
    out = tmp_path / "run"
    assert main(["run", str(ROOT / "fits" / "social_meaning.json"), "--quick", "--out", str(out)]) == 0
    # human RSA (two links), human baseline, 12 LLM x prompt, the ESR measurement model
    assert len(list((out / "posteriors").glob("*.nc"))) == 16
    assert sorted(p.name for p in (out / "figures").iterdir()) == sorted([
        "esr_model_intervals.png", "contrasts.png", "fig1_human_vs_model.png", "fig2_esr_heatmap.png",
        "forest_parameters.png", "human_ppc.png", "llm_means_vs_human_model.png", "loo_compare.png"])
    esr = pd.read_csv(out / "tables" / "esr_model.csv")
    assert len(esr) == 12 * 10 and (esr.lo <= esr.esr).all() and (esr.esr <= esr.hi).all()
    assert esr.p_sign_flip.between(0, 1).all() and np.allclose(np.exp(esr.log_abs_esr), esr.abs_esr, rtol=0.05)
    cds = pd.read_csv(out / "tables" / "cds_model.csv")
    assert np.isfinite(cds[["cds", "cds_lo", "cds_hi", "observed_cds"]]).all().all()
    claims = pd.read_csv(out / "tables" / "claims.csv")
    assert len(claims) >= 20 and claims.probability.between(0, 1).all()
    assert set(claims.reading) <= {"supported", "contradicted", "undecided", "undecided at this precision"}
    assert claims.mcse.between(0, 0.5).all() and (out / "tables" / "claims_components.csv").is_file()
    ppc = pd.read_csv(out / "tables" / "human_ppc_effects.csv")
    assert len(ppc) == 3 * 10 and set(ppc.model) == {"rsa", "rsa_motives", "baseline"}
    ppc_cells = pd.read_csv(out / "tables" / "human_ppc_cells.csv")
    assert len(ppc_cells) == 3 * 144 and {"scenario", "context", "form", "attribute"} <= set(ppc_cells.columns)
    loo = pd.read_csv(out / "tables" / "loo_compare.csv", index_col=0)
    assert set(loo.index) == {"rsa", "rsa_motives", "baseline"}
    contrasts = pd.read_csv(out / "tables" / "contrasts.csv")  # each LLM fit vs the human fit (pm.contrast_table)
    assert len(contrasts) == 12 * 5 and set(contrasts.reference) == {"human"}
    assert ((contrasts.p_greater >= 0) & (contrasts.p_greater <= 1)).all() and (contrasts.lower <= contrasts.upper).all()
    quick = (out / "report.md").read_text()  # what the quick run checked, and nothing else
    assert "checks that the pipeline runs end to end, and nothing else" in quick
    assert "15 fits by NUTS" in quick and "`contrasts.png`" in quick and "`human_rsa.nc`" in quick
    assert "**" not in quick and "supported" not in quick and "core-minutes" not in quick
    from models.social_meaning.study import analysis_markdown, rebuild_report

    # the analysis a full run's report holds, rendered from the quick run's folder: every section renders
    trees, baseline = _social_trees(out)
    report = analysis_markdown(out, trees, baseline, pd.read_csv(out / "tables" / "parameters.csv"),
                               pd.read_csv(out / "tables" / "chains.csv"))
    assert "## The paper's claims as posterior probabilities" in report and "new raters" in report
    params = pd.read_csv(out / "tables" / "parameters.csv")
    assert params.fit.tolist()[0] == "human" and len(params) == 14
    assert (params.noise_lo >= 0.15).all() and (params.noise_lo <= params.noise).all() and (params.noise <= params.noise_hi).all()
    tree = load_netcdf(out / "posteriors" / "claude_MIN_rsa.nc")
    assert tree.attrs["n_invalid_excluded"] == 98 and tree["observed_data"]["rating"].size == 1342
    # the config's motive prior (uniform) reaches every RSA fit and its recorded priors
    assert tree.attrs["motive_prior"] == "uniform" and "psi" not in tree["posterior"]
    # the config's "human" sampler entry applies to the three human fits only
    assert load_netcdf(out / "posteriors" / "human_rsa.nc")["posterior"].sizes["draw"] == 60
    assert load_netcdf(out / "posteriors" / "human_baseline.nc")["posterior"].sizes["draw"] == 60
    assert tree["posterior"].sizes["draw"] == 50
    assert "psi" not in json.loads(tree.attrs["priors"]) and "alpha" in json.loads(tree.attrs["priors"])
    # every RSA fit, human and LLM, samples the knower's log-odds under the production-data prior
    # (models/social_meaning/rsa.py, "What the ratings cannot identify"), not the model's default N(0, 3)
    from models.social_meaning import rsa
    from pragmodels.priors import Prior

    def recorded(t):
        return Prior.from_dict(json.loads(t.attrs["priors"])["precise_logodds_coarse"]).to_dict()

    for name in ("human_rsa.nc", "human_(motives_link)_rsa.nc", "claude_MIN_rsa.nc", "gpt_KMA_rsa.nc"):
        got = recorded(load_netcdf(out / "posteriors" / name))
        assert got == rsa.PRIORS_SPEAKER["precise_logodds_coarse"].to_dict(), (name, got)
    assert rsa.PRIORS_RSA["precise_logodds_coarse"].to_dict() != rsa.PRIORS_SPEAKER["precise_logodds_coarse"].to_dict()
    chains = pd.read_csv(out / "tables" / "chains.csv")  # 15 fits x 2 chains, each with its log likelihood
    assert len(chains) == 30 and chains.fit.nunique() == 15 and np.isfinite(chains.loglik).all()
    assert chains.loc[chains.fit == "human baseline", "alpha"].isna().all() and chains.alpha.notna().sum() == 28
    assert "## Diagnostics" in report and "figures/human_ppc.png" in report and "figures/loo_compare.png" in report
    assert "no multi-start optimisation" in report and "16 random starts" not in report  # quick mode has none
    assert "is ahead of" in report  # the LOO comparison: which model is ahead, by how much (loo_sentence)
    assert "## Posterior contrasts with the human fit" in report and "| claude MIN" in report
    assert "Below the sampling standards" in report and "Chain by chain" in report  # quick chains never converge
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["entry_point"] == "models/social_meaning/study.py:run" and manifest["mode"] == "quick"
    assert len(manifest["fits"]) == 16 and manifest["data"]["social_human"].startswith("cf016530")
    assert manifest["fits"]["claude MIN"]["file"] == "posteriors/claude_MIN_rsa.nc"
    # every fit kept every group (the human fits' predictive once failed and was only recorded)
    assert {k: f["postprocessing_error"] for k, f in manifest["fits"].items() if f["postprocessing_error"]} == {}
    # named, not only counted (the line says where the chains started before the names since 1ce16fc)
    below = re.search(r"meet the sampling standards \(Diagnostics\) within the basins their chains sampled.*?; "
                      r"below them: ([^\n]+)\.\n", report)
    assert below and "gpt MIN" in below.group(1).split(", "), below
    drawn = (out / "figures" / "contrasts.png").stat().st_mtime_ns
    rebuilt = rebuild_report(out).read_text()  # from run.json, tables and posteriors: no markdown parsed
    assert (out / "figures" / "contrasts.png").stat().st_mtime_ns > drawn  # redrawn from the saved posteriors
    assert "re-rendered from the saved run" in rebuilt and rebuilt.startswith(quick)
    assert f"{manifest['wall_time_s']:.0f} s in all" in quick and f"wall time {manifest['wall_time_s']:.0f} s" in report
    # the folder was written aside and swapped in whole: no temp folder is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.lock", "run"]


@pytest.mark.slow
def test_wavelength_study_quick(tmp_path):
    """The Wavelength study through `pragmodels run` on the committed scores, trimmed to SmolLM2 and
    6 items (about 3 minutes, most of it compiling 6 models): every table, figure and report
    section, Appendix C fitted where the speaker pass covers the items, and the production
    comparison where the production pass does."""
    cfg = json.loads((ROOT / "fits" / "wavelength.json").read_text())
    cfg.pop("$schema")
    cfg["study"] = str(ROOT / "models" / "wavelength" / "study.py") + ":run"
    cfg["lms"] = {"smollm2": cfg["lms"]["smollm2"]}
    cfg["quick_items"] = 6
    cfg["sampler"]["quick"] = {"num_warmup": 60, "num_samples": 60, "num_chains": 2}
    (tmp_path / "fits").mkdir()
    path = tmp_path / "fits" / "wavelength.json"
    path.write_text(json.dumps(cfg))
    out = tmp_path / "run"
    assert main(["run", str(path), "--quick", "--out", str(out), "--no-progress"]) == 0
    t = out / "tables"
    summary = json.loads((out / "summary.json").read_text())["lms"]["smollm2"]
    fits = {p.stem for p in (out / "posteriors").glob("*.nc")}
    assert {"smollm2_uniform", "smollm2_literal", "smollm2_lm_rsa", "smollm2_lm_rsa_cost", "smollm2_location",
            "smollm2_lm_location", "smollm2_lm_rsa_fresh", "smollm2_lm_location_fresh"} <= fits
    assert ("smollm2_appendix_c" in fits) == summary["appendix_c"]
    metrics = pd.read_csv(t / "metrics.csv")
    assert {"Humans", "LM direct (L0)", "LM-RSA, alpha = 1", "fitted lm_rsa"} <= set(metrics.method)
    assert np.isfinite(metrics[["abs_error_of_mean", "w1_to_humans", "entropy"]]).all().all()
    params = pd.read_csv(t / "parameters.csv")
    assert {"width", "lapse", "rounding"} <= set(params.parameter)
    quick = (out / "report.md").read_text()  # what the quick run checked, and nothing else
    assert "checks that the pipeline runs end to end, and nothing else" in quick and "**" not in quick
    assert "smollm2: its committed LM scores of 6 items" in quick and "`loo_smollm2_all.png`" in quick
    from models.wavelength.study import report_markdown

    report = report_markdown(out, "full")  # the analysis, rendered from the quick run's folder: every section renders
    assert "## Convergence" in report and "figures/loo_smollm2_all.png" in report
    if summary["n_production"]:
        prod = pd.read_csv(t / "production.csv")
        assert len(prod) == 8 and set(prod.judge) == {"LM literal listener (circular for Inverse-RSA)",
                                                      "human-fitted LM-RSA listener"}
        assert prod["p_target"].between(0, 1).all() and (prod["items"] == summary["n_production"]).all()
        assert "## Production" in report
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert figures == sorted(["forest_alpha_beta.png", "items_smollm2.png", "loo_smollm2_all.png", "loo_smollm2_fresh.png"]
                             + (["loo_smollm2_speaker-pass.png"] if 0 < summary["n_speaker"] < 6 else []))


@pytest.mark.slow
def test_implicature_study_quick(tmp_path):
    """The DRInQ study through `pragmodels run` on the committed LM outputs with short chains:
    every table, the figure and the report's sections; malformed samples counted; the four
    listener models and their three variants (a fitted cost; L0 the LM-pragmatic reading, for RSA and
    the literal listener) fitted and compared by LOO."""
    cfg = json.loads((ROOT / "fits" / "implicature.json").read_text())
    cfg.pop("$schema")
    cfg["study"] = str(ROOT / "models" / "implicature" / "study.py") + ":run"
    cfg["sampler"]["quick"] = {"num_warmup": 60, "num_samples": 60, "num_chains": 2}
    (tmp_path / "fits").mkdir()
    path = tmp_path / "fits" / "implicature.json"
    path.write_text(json.dumps(cfg))
    out = tmp_path / "run"
    assert main(["run", str(path), "--quick", "--out", str(out), "--no-progress"]) == 0
    t = out / "tables"
    acc = pd.read_csv(t / "accuracy.csv")
    assert {"scored letters"} <= set(acc.reading) and {"consensus", "generated label"} == set(acc.label)
    assert ((acc["lo"] <= acc["mean"] + 1e-9) & (acc["mean"] <= acc["hi"] + 1e-9)).all()
    variants = {"rsa", "literal", "prior", "letter", "rsa_cost", "rsa_lm_pragmatic", "literal_lm_pragmatic"}
    assert set(pd.read_csv(t / "loo.csv")["model"]) == variants  # since d7dc285 (2026-12-06)
    pp = pd.read_csv(t / "predictive_accuracy.csv")
    assert pp[["argmax_mean", "annotator_mean"]].stack().between(0, 1).all()
    assert sorted(p.name for p in (out / "figures").iterdir()) == [  # both scored LMs (gemma3 since 2026-12-06)
        "accuracy_gemma3.png", "accuracy_smollm2.png", "generated.png", "loo_gemma3.png", "loo_smollm2.png"]
    gen = pd.read_csv(t / "generated_accuracy.csv")  # the paper's reading, for the LMs run through a server
    assert {"smollm2_server", "gemma3_server"} <= set(gen["lm"]) and (gen[["valid", "truncated", "malformed"]] >= 0).all().all()
    quick = (out / "report.md").read_text()  # what the quick run checked, and nothing else
    assert "checks that the pipeline runs end to end, and nothing else" in quick and "**" not in quick
    assert quick.count("7 listener models fitted by NUTS") == 2 and "`accuracy_smollm2.png`" in quick
    from models.implicature.study import report_markdown

    report = report_markdown(out, "full")  # the analysis, rendered from the quick run's folder: every section renders
    assert "figures/loo_smollm2.png" in report
    for heading in ("## The data and the gold label", "## Prompts", "### Accuracy against the human consensus",
                    "### The pragmatic listener and its rivals", "## Convergence",
                    "## Running the same study against a large model"):
        assert heading in report
    assert "**This project's own**" in report
