"""No module of the library or the studies reaches into another module's private (underscore) names.

Parses every module of ``pragmodels/`` with :mod:`ast` and fails on

- ``from pragmodels.x import _name`` (also relative: ``from .x import _name``),
- ``import pragmodels.x as m`` / ``from pragmodels import x`` followed by ``m._name``,
- ``pragmodels.x._name`` spelled out,

where ``pragmodels.x`` is another module than the one importing. Dunder names (``__all__``,
``__version__``) are public. A private *module* (``pragmodels.plots._style``) may be imported by
the modules of its own package, and by nobody else. The import-linter contracts in
``pyproject.toml`` check the direction of imports; this checks what crosses them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "pragmodels"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_name_or_none(path: Path) -> str | None:
    try:
        return _module_name(path)
    except ValueError:
        return None


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _package(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _absolute(node: ast.ImportFrom, module: str, path: Path) -> str:
    if not node.level:
        return node.module or ""
    base = _package(module, path).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_module_ok(target: str, importer: str, path: Path) -> bool:
    """``target`` has a private component: only modules inside the package that holds it may import it."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if _private(part):
            owner = ".".join(parts[:i])
            package = _package(importer, path)
            return package == owner or package.startswith(owner + ".")
    return True


def _is_module(name: str) -> bool:
    rel = name.split(".")[1:]
    base = ROOT.joinpath(*rel)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def violations(path: Path, module: str | None = None) -> list[str]:
    """Every cross-module private-name use in one file, as ``"file:line: what"``; ``module`` is the
    file's dotted name (by default read from its place under ``pragmodels/``)."""
    module = module or _module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.name if module != _module_name_or_none(path) else path.relative_to(ROOT.parent)
    found: list[str] = []
    aliases: dict[str, str] = {}  # local name -> pragmodels module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "pragmodels" or a.name.startswith("pragmodels."):
                    if not _private_module_ok(a.name, module, path):
                        found.append(f"{where}:{node.lineno}: import {a.name}")
                    if a.asname:
                        aliases[a.asname] = a.name
                    else:
                        aliases[a.name.split(".")[0]] = "pragmodels"
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, path)
            if source != "pragmodels" and not source.startswith("pragmodels."):
                continue
            if not _private_module_ok(source, module, path):
                found.append(f"{where}:{node.lineno}: from {source} import ...")
            for a in node.names:
                full = f"{source}.{a.name}"
                if _is_module(full):
                    if not _private_module_ok(full, module, path):
                        found.append(f"{where}:{node.lineno}: from {source} import {a.name}")
                    aliases[a.asname or a.name] = full
                elif _private(a.name) and source != module:
                    found.append(f"{where}:{node.lineno}: from {source} import {a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain = []
            value: ast.expr = node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases:
                target = ".".join([aliases[value.id], *reversed(chain)])
                if _is_module(target) and target != module:
                    found.append(f"{where}:{node.lineno}: {target}.{node.attr}")
    return found


def test_the_checker_sees_what_it_should(tmp_path: Path) -> None:
    """The parser flags each spelling of a cross-module private use (a negative control)."""
    bad = tmp_path / "probe.py"
    bad.write_text(
        "import pragmodels.inference.nuts as n\n"
        "from pragmodels.inference import compile_cache\n"
        "from pragmodels.inference.fitting import _check_settings\n"
        "from ..io.atomic import _tmp\n"
        "x = n._private\n"
        "y = compile_cache._lookup\n"
        "z = compile_cache.__name__\n",
        encoding="utf-8",
    )
    found = violations(bad, module="pragmodels.inference.probe")
    assert len(found) == 4, found
    assert any("_check_settings" in f for f in found) and any("pragmodels.io.atomic import _tmp" in f for f in found)
    assert any("nuts._private" in f for f in found) and any("compile_cache._lookup" in f for f in found)


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_no_module_imports_another_modules_private_names(path: Path) -> None:
    assert violations(path) == []



STUDIES = ROOT.parent / "models"


def study_violations(path: Path, own: str | None = None) -> list[str]:
    """A study module's ``from models.x import _name`` / ``from pragmodels.x import _name`` of another
    module (the studies build on public names only); ``own`` is the file's dotted name."""
    own = own or ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level and node.module != own \
                and node.module.split(".")[0] in ("models", "pragmodels"):
            found += [f"{path.name}:{node.lineno}: from {node.module} import {a.name}"
                      for a in node.names if _private(a.name)]
    return found


def test_the_study_checker_sees_what_it_should(tmp_path: Path) -> None:
    """A negative control: a private name of another study module, or of the library, is flagged."""
    probe = tmp_path / "probe.py"
    probe.write_text("from models.social_meaning.report import _helper\nfrom pragmodels.io.atomic import _tmp\n"
                     "from models.social_meaning.probe import _own\nfrom pragmodels.io import atomic\n", encoding="utf-8")
    found = study_violations(probe, own="models.social_meaning.probe")
    assert len(found) == 2 and "_helper" in found[0] and "_tmp" in found[1], found


@pytest.mark.parametrize("path", sorted(STUDIES.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_no_study_imports_another_modules_private_names(path: Path) -> None:
    assert study_violations(path) == []
