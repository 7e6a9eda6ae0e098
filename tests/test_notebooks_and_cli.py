"""The quick-start notebook executes, and the CLI main job writes a complete run folder."""

import json
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from pragmodels import load_netcdf
from pragmodels.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_notebook_runs():
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors


def test_cli_run_quick_writes_run_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(ROOT / "fits" / "reference_game.json"), "--out", str(out), "--quick", "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "posterior.nc", "report.md", "summary.csv"]
    tree = load_netcdf(out / "posterior.nc")
    assert json.loads(tree.attrs["fit_config"])["name"] == "reference_game"
    assert np.isfinite(tree["posterior"]["alpha"].values).all()
    report = (out / "report.md").read_text()
    assert "Recovery of the simulated truth" in report and "wall time" in report


def test_cli_bad_config_is_named_and_leaves_results(tmp_path, capsys):
    cfg = json.loads((ROOT / "fits" / "reference_game.json").read_text())
    cfg["model"]["factory"] = "nonsense_model"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(cfg))
    out = tmp_path / "bad"
    out.mkdir()
    (out / "posterior.nc").write_bytes(b"earlier good result")
    assert main(["run", str(bad), "--quick", "--no-progress"]) == 2
    assert "model.factory = 'nonsense_model'" in capsys.readouterr().err
    assert (out / "posterior.nc").read_bytes() == b"earlier good result"
    assert main(["run", str(tmp_path / "missing.json")]) == 2
