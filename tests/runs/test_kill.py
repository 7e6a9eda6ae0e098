"""Kill tests (issue 9): a real `pragmodels run` killed with SIGKILL during the fit and during the
save leaves the earlier good result intact and loadable, and the next run cleans up after it.

Slow (three quick reference-game runs in subprocesses, about a minute each on 2 cores): marked
``slow``; `make test-all` runs it.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pragmodels.io.netcdf import load_netcdf

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PRAGMODELS_COMPILATION_CACHE": "off", "PYTHONPATH": str(ROOT)}

# Dies as SIGKILL would, in the middle of writing a posterior: the file is half written.
KILL_IN_SAVE = r"""
import os, signal, sys
import xarray as xr
real = xr.DataTree.to_netcdf
def half_then_die(self, path, *args, **kwargs):
    real(self, path, *args, **kwargs)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    os.kill(os.getpid(), signal.SIGKILL)
xr.DataTree.to_netcdf = half_then_die
from pragmodels.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _leftovers(folder: Path) -> list[str]:
    beside = [p.name for p in folder.parent.iterdir() if p.name not in (folder.name, f".{folder.name}.lock")]
    inside = [str(p) for p in folder.rglob("*") if p.name.endswith((".tmp", ".part"))]
    return sorted(beside) + inside


@pytest.mark.slow
def test_sigkill_during_the_fit_and_during_the_save(tmp_path):
    cfg = json.loads((ROOT / "fits" / "reference_game.json").read_text())
    cfg.pop("$schema", None)
    path = tmp_path / "reference_game.json"
    path.write_text(json.dumps(cfg))
    cli = [sys.executable, "-m", "pragmodels.cli", "run", str(path), "--quick", "--no-progress"]
    first = subprocess.run(cli, env=ENV, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    folder = tmp_path / "reference_game" / "quick"
    good = _snapshot(folder)
    posteriors = [k for k in good if k.endswith(".nc")]
    assert posteriors and "run.json" in good

    # 1. SIGKILL during the fit: once the staging folder exists, give it a moment to be busy, then kill
    proc = subprocess.Popen(cli, env=ENV, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while not any(p.name.startswith(".quick.tmp-") for p in folder.parent.iterdir()):
        assert proc.poll() is None and time.time() < deadline, "the run never opened its staging folder"
        time.sleep(0.05)
    time.sleep(2.0)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert _snapshot(folder) == good
    for k in posteriors:
        load_netcdf(folder / k)  # checksum verified: whole and unchanged

    # 2. SIGKILL in the middle of writing the posterior
    killed = subprocess.run([sys.executable, "-c", KILL_IN_SAVE, *cli[3:]], env=ENV, cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert _snapshot(folder) == good
    assert _leftovers(folder)  # the killed runs left their staging folders behind ...

    # 3. ... which the next run cleans up
    last = subprocess.run(cli, env=ENV, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert last.returncode == 0, last.stderr[-3000:]
    assert _leftovers(folder) == []
    for k in posteriors:
        load_netcdf(folder / k)
