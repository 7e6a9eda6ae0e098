"""The Python code on README.md and on the docs pages runs as written, and runs clean.

Every ```python block of README.md and of docs/**/*.md is executed, in order per page, the blocks
of a page sharing one namespace (as the cells of a notebook), in a temporary working directory.
A block that must not run is preceded by an explicit marker with its reason, e.g.
``<!-- not run by the tests: it needs a SLURM cluster and dask-jobqueue -->``. A page's code must
emit no warning: a reader should never meet one that the text does not explain.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
SKIP = re.compile(r"<!-- not run by the tests: (?P<reason>\S.*?) -->\s*$")


@dataclass
class Block:
    line: int
    code: str
    skip: str | None  # the reason given by the marker, or None


def python_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = SKIP.search(before)
        out.append(Block(text.count("\n", 0, m.start()) + 1, m.group(1), marker["reason"] if marker else None))
    return out


def pages() -> list[Path]:
    found = [p for p in sorted(DOCS.rglob("*.md")) if "_build" not in p.parts and "generated" not in p.parts]
    return [README, *[p for p in found if python_blocks(p)]]


def tier_marks(path: Path) -> list[pytest.MarkDecorator]:
    """The tiers of tests/conftest.py that a page's code falls in, read from the code that runs."""
    code = "\n".join(b.code for b in python_blocks(path) if not b.skip)
    kinds = {"nuts": r"\bfit\(|\bfit_many\(|\bfit_batched\(|\bfit_fold\(",
             "lm": r"LlamaCppLM|TransformersLM|OpenAICompatibleLM|smollm2_path|gemma3_path",
             "subprocess": r"executor=(?!\"sequential\")|subprocess|\bClient\("}
    return [getattr(pytest.mark, kind) for kind, pattern in kinds.items() if re.search(pattern, code)]


def run_page(path: Path, tmp_path: Path) -> tuple[dict, list[warnings.WarningMessage]]:
    """Run the page's blocks in order in ``tmp_path``; return the namespace and every warning."""
    rel = path.relative_to(ROOT)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    ns: dict = {"__name__": f"docs_page_{path.stem.replace('-', '_')}"}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for block in python_blocks(path):
                if block.skip:
                    continue
                try:
                    exec(compile(block.code, f"{rel}:{block.line}", "exec"), ns)
                except Exception as e:  # noqa: BLE001 - name the block that failed
                    pytest.fail(f"{rel}, the block at line {block.line} failed: {type(e).__name__}: {e}\n{block.code}")
    finally:
        os.chdir(cwd)
    return ns, list(caught)


def no_warnings(rel: Path, caught: list[warnings.WarningMessage]) -> None:
    shown = [f"{w.category.__name__} at {w.filename}:{w.lineno}: {w.message}" for w in caught]
    assert not shown, f"{rel}'s code warns; fix the example or explain the warning on the page:\n" + "\n".join(shown)


@pytest.mark.parametrize("path", [pytest.param(p, marks=tier_marks(p), id=str(p.relative_to(ROOT))) for p in pages()])
def test_page_code_runs_clean(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ns, caught = run_page(path, tmp_path)
    rel = path.relative_to(ROOT)
    no_warnings(rel, caught)
    out = capsys.readouterr().out
    if path == README:
        # the landing page's example fits a model and writes nothing into the working directory
        assert list(tmp_path.iterdir()) == []
        assert "alpha" in ns["tree"]["posterior"].data_vars
    elif path.name == "declaring-models.md":
        assert "alpha" in out and "phi" in out and "elpd" in out.lower()
        assert "lapse" in ns["tree"]["posterior"].data_vars
        # the two-task example's LOO units are single responses: PSIS is reliable for every one
        with warnings.catch_warnings(record=True) as again:
            warnings.simplefilter("always")
            loo = ns["pm"].loo(ns["tree"])
        no_warnings(rel, again)
        assert loo.pareto_k.size == 280 and float(loo.pareto_k.max()) < 0.7
    elif path.name == "fitting-and-checking.md":
        assert "is ahead of" in out and "p_greater" in out


def test_readme_is_a_landing_page() -> None:
    """About 150 lines, with one example that runs (above) and no block that is skipped."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 160
    blocks = python_blocks(README)
    assert len(blocks) >= 1 and not any(b.skip for b in blocks)


def test_readme_links_resolve() -> None:
    """Every relative link of the README (reports, docs pages, LICENSE, ...) names a file of the checkout."""
    text = README.read_text(encoding="utf-8")
    links = [t for t in re.findall(r"\]\(([^)#\s]+)", text) if "://" not in t]
    assert links
    missing = [t for t in links if not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_skip_markers_give_a_reason() -> None:
    """A marker is the only way to keep a block from running, and it must say why."""
    for path in pages():
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if "not run by the tests" in line:
                assert SKIP.search(line), f"{path.relative_to(ROOT)}: malformed marker {line!r}"


def test_api_reference_lists_the_public_api() -> None:
    """Every name of ``pm.__all__`` (but the version and the re-exported modules) is on the API page."""
    import pragmodels as pm

    api = (DOCS / "api.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"~pragmodels\.[\w.]*\.(\w+)\s*$", api, flags=re.M))
    public = {n for n in pm.__all__ if n != "__version__" and n not in ("agents", "likelihoods", "semantics")}
    assert public <= listed, f"add to docs/api.md: {sorted(public - listed)}"
    # each entry names the module that defines it and lists it in __all__ (so its page documents it)
    import importlib

    for module, name in re.findall(r"~(pragmodels[\w.]*)\.(\w+)\s*$", api, flags=re.M):
        mod = importlib.import_module(module)
        assert name in getattr(mod, "__all__", ()), f"docs/api.md: {module}.{name} is not in {module}.__all__"
        assert getattr(pm, name) is getattr(mod, name), f"docs/api.md: pm.{name} is not {module}.{name}"
