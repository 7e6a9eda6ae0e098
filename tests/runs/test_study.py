"""pragmodels.runs.study: a study's steps in its staging folder (StudyFolder), and a study config
resolved from any working directory without sys.path edits."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
import pytest

import pragmodels as pm
from pragmodels import errors, runs
from pragmodels.inference.fit_many import FitManyError

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PRAGMODELS_COMPILATION_CACHE": "off", "PRAGMODELS_HOST_DEVICES": "1"}
pytestmark = pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # smoke fits
SAMPLER = dict(num_warmup=100, num_samples=100, num_chains=2, posterior_predictive=False)


def coin(flips):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("trial", flips.shape[0]):
        numpyro.sample("flips", dist.Bernoulli(p), obs=flips)


def _flips(n: int = 30) -> dict:
    return {"flips": np.random.default_rng(0).integers(0, 2, n).astype(np.int32)}


@pytest.mark.nuts
def test_study_folder_runs_the_steps_every_study_takes(tmp_path):
    lines = []
    with runs.open_run(tmp_path / "run", mode="quick", entry_point="test") as record:
        folder = runs.StudyFolder(record, log=lines.append)
        assert all(d.is_dir() for d in (folder.tables, folder.figures, folder.posteriors))
        folder.log("loading data")
        folder.record_dataset("wavelength")
        scores = tmp_path / "scores.csv"
        scores.write_text("a,b\n1,2\n")
        digest = folder.record_file("lm_scores_x", scores)
        specs = [pm.FitSpec("x-coin", coin, _flips(), sampler=SAMPLER, seed=1),
                 pm.FitSpec("x-coin2", coin, {"flips": 1 - _flips()["flips"]}, sampler=SAMPLER, seed=2)]  # one program
        trees = folder.fit_and_save(specs, label=lambda n: n.replace("-", "/"), file=lambda n: n.replace("-", "_") + ".nc")
        assert list(trees) == ["x-coin", "x-coin2"] and trees["x-coin"]["posterior"]["p"].shape == (2, 100)
        folder.save_fit("again", trees["x-coin"], "again.nc")
        table = folder.write_convergence()
        folder.write_summary({"n": 2})
        folder.write_report("# report\n")
    out = tmp_path / "run"
    manifest = runs.read_manifest(out)
    assert manifest["data"] == {"wavelength": pm.datasets.REGISTRY["wavelength"].sha256, "lm_scores_x": digest}
    assert {k: f["file"] for k, f in manifest["fits"].items()} == {
        "x/coin": "posteriors/x_coin.nc", "x/coin2": "posteriors/x_coin2.nc", "again": "posteriors/again.nc"}
    assert pm.load_netcdf(out / "posteriors" / "x_coin.nc")["posterior"]["p"].shape == (2, 100)
    assert list(table.fit) == ["x/coin", "x/coin2", "again"]
    assert pd.read_csv(out / "tables" / "convergence.csv").fit.tolist() == ["x/coin", "x/coin2", "again"]
    assert json.loads((out / "summary.json").read_text()) == {"n": 2}
    assert (out / "report.md").read_text() == "# report\n"
    assert len(lines) == 1 and lines[0].startswith("[") and lines[0].endswith(" s] loading data")


@pytest.mark.nuts
def test_study_folder_raises_on_a_failed_fit_and_saves_nothing(tmp_path):
    # no observations: refused before anything is compiled (flips of 0.5 compiled a NUTS program of their own and
    # failed after it, ~a third of this test's time; how the fit fails is not what this test checks)
    bad = {"flips": None}
    with pytest.raises(FitManyError, match="1 of 2 fits failed"):
        with runs.open_run(tmp_path / "run", mode="quick", entry_point="test") as record:
            folder = runs.StudyFolder(record)
            # 40 flips: after the test above (sizes 30 and 40), padded as its second fit was, so its program
            # is reused (30 flips, padded now, was a compile of its own: most of this test's time)
            folder.fit_and_save([pm.FitSpec("good", coin, _flips(40), sampler=SAMPLER, seed=1),
                                 pm.FitSpec("bad", coin, bad, sampler=SAMPLER, seed=2)])
    assert not (tmp_path / "run").exists()


def _in_subprocess(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=ENV, capture_output=True, text=True)


@pytest.mark.subprocess
def test_a_study_config_resolves_from_any_working_directory(tmp_path):
    """The study named by a committed config is imported by its location, from a working directory
    outside the repository and with the repository root on no sys.path: its module is
    models.<study>.study, the package models is the repository's, and sys.path is as it was."""
    code = ("import sys, pathlib; before = list(sys.path); "
            "from pragmodels.runs.study import load_study_config; "
            f"cfg, entry = load_study_config({str(ROOT / 'fits' / 'implicature.json')!r}); "
            "import models.implicature.study as study; "
            "assert entry is study.run, entry; assert sys.path == before; "
            "print(entry.__module__, pathlib.Path(sys.modules['models'].__file__).parent)")
    done = _in_subprocess(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["models.implicature.study", str(ROOT / "models")]


@pytest.mark.subprocess
def test_import_studies_gives_a_notebook_the_repositorys_models(tmp_path):
    code = ("import sys; before = list(sys.path); from pragmodels.runs.entry_points import import_studies; "
            "models = import_studies(); from models.social_meaning import rsa; "
            "assert sys.path == before; print(rsa.__file__)")
    done = _in_subprocess(code, ROOT / "notebooks")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(ROOT / "models" / "social_meaning" / "rsa.py")


@pytest.mark.parametrize("value, expected", [
    ("{root}/models/social_meaning_study.py:run", "did you mean '{root}/models/social_meaning/study.py:run'?"),
    ("{root}/models/wavelength_study.py:run", "did you mean '{root}/models/wavelength/study.py:run'?"),
    ("models.social_meaning.study:run", "expected 'path/to/module.py:function'"),
])
def test_an_entry_point_in_an_old_form_is_a_clear_config_error(tmp_path, value, expected):
    value, expected = value.format(root=ROOT.as_posix()), expected.format(root=ROOT.as_posix())
    cfg = json.loads((ROOT / "fits" / "social_meaning.json").read_text())
    cfg["study"] = value
    path = tmp_path / "social_meaning.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(errors.ConfigError) as info:
        runs.load_study_config(path)
    assert f"study = {value!r}" in str(info.value) and expected in str(info.value)


def test_a_flat_study_file_moved_into_a_package_is_suggested(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "studies" / "game").mkdir(parents=True)
    (tmp_path / "studies" / "game" / "study.py").write_text("def run(*a):\n    pass\n")
    (tmp_path / "fits").mkdir()
    cfg = tmp_path / "fits" / "game.json"
    with pytest.raises(errors.ConfigError, match="did you mean 'studies/game/study.py:run'"):
        runs.load_entry_point("studies/game_study.py:run", cfg)


def _study_package(tmp_path: Path, study_code: str) -> Path:
    """A study package with its Config in config.py; the study module raises if it is imported."""
    import uuid

    name = f"study_pkg_{uuid.uuid4().hex[:8]}"  # a package name of its own: imported by location, once
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("from pydantic import Field\nfrom pragmodels.runs.schema import StudyConfig\n\n\n"
                                   "class Config(StudyConfig):\n    n: int = Field(1, ge=1)\n")
    (pkg / "study.py").write_text(study_code)
    sampler = {mode: {"num_warmup": 10, "num_samples": 10} for mode in ("quick", "full")}
    cfg = {"name": "game", "study": f"{pkg / 'study.py'}:run", "sampler": sampler, "seed": 1, "n": 2}
    path = tmp_path / "game.json"
    path.write_text(json.dumps(cfg))
    return path


def test_a_study_config_is_validated_by_its_config_module_without_importing_the_study(tmp_path):
    path = _study_package(tmp_path, "raise RuntimeError('the study was imported')\n")
    study = Path(json.loads(path.read_text())["study"].rsplit(":", 1)[0])
    assert runs.study.config_module_file(study) == study.parent / "config.py"
    assert runs.study.check_study_config(path)["n"] == 2
    path.write_text(path.read_text().replace('"n": 2', '"n": 0'))
    with pytest.raises(errors.ConfigError, match=r"`n` = 0: must be greater than or equal to 1"):
        runs.study.check_study_config(path)


def test_a_study_module_with_a_config_of_its_own_is_refused(tmp_path):
    """The config is validated against config.py's Config: a study module that defines another one would
    run with values that Config never checked."""
    path = _study_package(tmp_path, "from pragmodels.runs.schema import StudyConfig\n\n\n"
                                    "class Config(StudyConfig):\n    pass\n\n\ndef run(*a):\n    pass\n")
    with pytest.raises(errors.ConfigError, match=r"its module defines a Config of its own.*import that one instead"):
        runs.load_study_config(path)


def _fit_twice(tmp_path, monkeypatch, mode):
    """``StudyFolder.fit_per_lm`` (the Wavelength and DRInQ fit loops) on a stand-in ``fit_many`` whose first fit of 400
    draws has a least ESS of 200 (short of 400) and whose refits have ESS to spare; one fit of 1,000
    draws (ESS 500) meets the standard."""
    from models.wavelength import listeners
    from pragmodels import runs
    from pragmodels.inference import fit_many as many, top_up as sizing
    from tests.inference.test_top_up import fake_fit_many

    fake = fake_fit_many([0.5, 2.0])  # ESS per draw: the first fits, then the refit
    monkeypatch.setattr(many, "fit_many", fake)
    monkeypatch.setattr(sizing, "fit_many", fake)
    specs = [pm.FitSpec("smollm2-uniform", listeners.uniform_model, {}, sampler={"num_samples": 400}, seed=1),
             pm.FitSpec("smollm2-lm_rsa", listeners.lm_rsa_model, {}, sampler={"num_samples": 1000}, seed=2)]
    lines = []
    with runs.open_run(tmp_path / mode, mode=mode, entry_point="test") as record:
        folder = runs.StudyFolder(record, log=lines.append)
        trees = folder.fit_per_lm(specs, mode=mode)
        table = folder.write_convergence()
    return trees, runs.read_manifest(tmp_path / mode)["fits"], table, lines


def test_a_full_run_samples_a_fit_short_of_the_standards_again_and_says_so(tmp_path, monkeypatch):
    """Full run: the short fit comes back with 1.25 x 400 / 200 = 2.5x the draws, the log says which fit and why,
    and the manifest and ``convergence.csv`` record ``draws_resized`` for it alone; a quick run's fits are kept
    as they are (their short chains are a smoke test)."""
    trees, fits, table, lines = _fit_twice(tmp_path, monkeypatch, "full")
    assert trees["uniform"]["posterior"].sizes["draw"] == 1000 and trees["lm_rsa"]["posterior"].sizes["draw"] == 1000
    assert fits["smollm2/uniform"]["draws_resized"] == {"from": 400, "to": 1000, "ess": 200.0, "max_rhat": 1.001,
                                                        "rounds": 1}
    assert "draws_resized" not in fits["smollm2/lm_rsa"]
    assert list(table["draws_resized"].fillna("")) == ["400 -> 1000 (least ESS 200, r_hat 1.001)", ""]
    said = [s for s in lines if "sampled again" in s]
    assert len(said) == 1 and "smollm2-uniform: least ESS 200 (standard 400)" in said[0]
    trees, fits, table, lines = _fit_twice(tmp_path, monkeypatch, "quick")
    assert trees["uniform"]["posterior"].sizes["draw"] == 400 and "draws_resized" not in table
    assert not any("draws_resized" in f for f in fits.values()) and not any("sampled again" in s for s in lines)
