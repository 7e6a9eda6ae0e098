"""Write a benchmark's rows to results/<stem>.csv and results/<stem>.md with a machine line."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import jax
import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"


def git_show(rev: str, path: str) -> str:
    """The text of ``path`` (relative to the repository root) at git revision ``rev``: a committed run or
    config to compare with."""
    return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=RESULTS.parents[1], check=True,
                          capture_output=True, text=True).stdout


def write_results(rows: list[dict], stem: str, title: str, detail: str,
                  md_columns: dict[str, str] | None = None, notes: str = "") -> None:
    """CSV of every column; markdown of those in ``md_columns`` ({column: heading}; default all), then ``notes``."""
    import pragmodels as pm

    RESULTS.mkdir(exist_ok=True)
    df = pd.DataFrame(rows)
    df.to_csv(RESULTS / f"{stem}.csv", index=False)
    header = (f"# {title}\n\nMachine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
              f"{jax.local_device_count()} JAX devices, backend {jax.default_backend()}, jax {jax.__version__}, "
              f"pragmodels {pm.__version__}. {detail}\n\n")
    shown = df if md_columns is None else df[[c for c in md_columns if c in df]].rename(columns=md_columns)
    table = shown.to_markdown(index=False, floatfmt=".3g")
    (RESULTS / f"{stem}.md").write_text(header + table + "\n" + (f"\n{notes.strip()}\n" if notes else ""))
