"""Notebooks are committed without outputs, and running one leaves the tracked file unmodified.

`make notebook` configures nbstripout as the clone's git filter (named in .gitattributes). The
last test does the same in a scratch repository: it commits a notebook, writes outputs into it
as JupyterLab would, and checks that git sees no change to diff or to stage.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebooks_carry_no_outputs(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code, f"{path.name} has no code cell"
    assert all(c.get("outputs") == [] for c in code), f"{path.name} was committed with outputs"
    assert all(c.get("execution_count") is None for c in code), f"{path.name} was committed with execution counts"


def test_gitattributes_names_the_filter():
    lines = (ROOT / ".gitattributes").read_text().splitlines()
    assert "*.ipynb filter=nbstripout" in lines


@pytest.mark.subprocess
def test_running_a_notebook_leaves_the_tracked_file_unmodified(tmp_path):
    if shutil.which("git") is None:
        pytest.fail("git is needed to check the notebook filter")
    nbstripout = Path(sys.executable).with_name("nbstripout")
    assert nbstripout.exists(), "nbstripout is a dev dependency (pyproject.toml)"

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    subprocess.run([str(nbstripout), "--install"], cwd=tmp_path, check=True)
    shutil.copy(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    shutil.copy(NOTEBOOKS[0], tmp_path / "nb.ipynb")
    git("add", ".")
    git("commit", "-qm", "notebook")
    assert git("status", "--porcelain") == ""

    nb = json.loads((tmp_path / "nb.ipynb").read_text())
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = i + 1
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran\n"]}]
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb, indent=1))
    # git status may still list the file (its size changed, and git does not run the filter to find out),
    # but its content as git sees it is unchanged: nothing to diff, and staging it stages nothing
    assert git("diff", "--stat") == "", "a notebook with outputs differs from the committed one: the filter is not applied"
    git("add", "nb.ipynb")
    assert git("status", "--porcelain") == ""
    assert git("diff", "--cached", "--stat") == ""
