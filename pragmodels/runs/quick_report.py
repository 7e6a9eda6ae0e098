"""The report of a quick run (``pragmodels run <config> --quick``): what it checked, that the
pipeline runs end to end, and nothing else.

A quick run's chains are far too short to converge, and a study may cut its data down, so its
numbers are no estimates: its report lists the steps that ran and the files they wrote, and no
finding, comparison or timing of the full run (a study's full report would read as one).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: the run folder's subfolders whose files the report lists
FOLDERS = ("tables", "figures", "posteriors")


def quick_report(title: str, run_dir: str | Path, steps: Sequence[str], *, full_report: str) -> str:
    """The markdown of a quick run's ``report.md``.

    Parameters
    ----------
    title : str
        The study's title (the full report's first heading).
    run_dir : str or Path
        The run folder; the files in its ``tables/``, ``figures/`` and ``posteriors/`` are listed.
    steps : sequence of str
        What ran, one step each (e.g. "15 fits by NUTS: human, ..."), in order.
    full_report : str
        Where the analysis is (e.g. the committed full run's ``report.md``).

    Returns
    -------
    str
    """
    run_dir = Path(run_dir)
    lines = [f"# {title}: quick run", "",
             "This quick run (`--quick`) checks that the pipeline runs end to end, and nothing else. Its chains are "
             "far too short to converge, so it reports no estimate, comparison or finding: its tables and figures "
             "show that each step ran, not what the data say. The analysis is a full run (the same command without "
             f"`--quick`); the committed one is `{full_report}`.", "",
             "## What ran", "", *[f"- {s}" for s in steps], "",
             "## What it wrote", ""]
    for name in FOLDERS:
        folder = run_dir / name
        files = sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
        lines.append(f"- `{name}/`: " + (", ".join(f"`{f}`" for f in files) if files else "nothing"))
    return "\n".join(lines) + "\n"
