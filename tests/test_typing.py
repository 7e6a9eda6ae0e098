"""The package type-checks: ``mypy pragmodels`` with the ``[tool.mypy]`` settings of pyproject.toml.

``make test`` runs the same command first, so here mypy reads a warm cache (``.mypy_cache``,
about 1 s); a cold run takes about a minute.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.subprocess
def test_mypy_passes_on_the_package():
    pytest.importorskip("mypy", reason="mypy comes with the dev extra")
    res = subprocess.run([sys.executable, "-m", "mypy", "pragmodels"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, f"mypy pragmodels failed:\n{res.stdout}{res.stderr}"


def test_the_package_is_marked_typed():
    assert (ROOT / "pragmodels" / "py.typed").is_file()
