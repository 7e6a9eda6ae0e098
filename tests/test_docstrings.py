"""Every public function (listed in its module's ``__all__``) has a numpydoc docstring.

A one-line summary, then a ``Parameters`` section (a ``Returns`` section for a function of no
arguments) or a compact ``Shapes:`` line; and a ``Shapes:`` line naming the axes whenever the
signature mentions arrays (issue 8, item 10).
Static: imports the modules and reads docstrings and annotations, runs nothing.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import pragmodels

#: Modules exempt from the check (none: add one only with a reason).
SKIP_MODULES: frozenset[str] = frozenset()

_ARRAY = re.compile(r"ArrayLike|\bArray\b|ndarray|NDArray")


def _modules() -> list[str]:
    names = ["pragmodels"]
    for info in pkgutil.walk_packages(pragmodels.__path__, prefix="pragmodels."):
        names.append(info.name)
    return sorted(names)


def _public_functions() -> list[tuple[str, str]]:
    found = []
    for modname in _modules():
        if any(modname == s or modname.startswith(s + ".") for s in SKIP_MODULES):
            continue
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if inspect.isfunction(obj) and obj.__module__ == modname:
                found.append((modname, name))
    return found


def _annotation_text(func) -> str:
    return " ".join(str(v) for v in getattr(func, "__annotations__", {}).values())


def _problems(func) -> list[str]:
    doc = inspect.getdoc(func)
    if not doc:
        return ["no docstring"]
    problems = []
    summary = doc.splitlines()[0].strip()
    if not summary:
        problems.append("no one-line summary")
    takes_nothing = not inspect.signature(func).parameters
    returns = re.search(r"^(Returns|Yields)\n-+$", doc, re.M)  # enough for a function of no arguments
    if "Parameters" not in doc and "Shapes:" not in doc and not (takes_nothing and returns):
        problems.append("neither a Parameters section nor a Shapes: line")
    if _ARRAY.search(_annotation_text(func)) and not re.search(r"^\s*Shapes:", doc, re.M):
        problems.append("takes or returns arrays but has no line starting 'Shapes:'")
    return problems


PUBLIC = _public_functions()


def test_public_functions_found():
    assert len(PUBLIC) > 50
    assert ("pragmodels.inference.nuts", "run_nuts") in PUBLIC


@pytest.mark.parametrize(("modname", "name"), PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_numpydoc_docstring(modname, name):
    func = getattr(importlib.import_module(modname), name)
    assert not _problems(func), f"{modname}.{name}: {'; '.join(_problems(func))}"
