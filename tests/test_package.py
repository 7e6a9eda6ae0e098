"""The package's names load on first use: `import pragmodels` and `pragmodels --help` import no JAX.

Each check runs in a fresh interpreter, since this test process has JAX loaded already.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pragmodels as pm

STUB = Path(pm.__file__).with_suffix(".pyi")


def _python(code: str, **env: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, **env})
    return out.stdout.strip()


@pytest.mark.subprocess
def test_import_loads_no_scientific_stack():
    got = _python("import sys, pragmodels; print(sorted(m for m in ('jax', 'numpyro', 'xarray', 'pandas', 'matplotlib') "
                  "if m in sys.modules))")
    assert got == "[]"


@pytest.mark.subprocess
def test_help_answers_without_jax():
    code = ("import sys\nfrom pragmodels.cli import main\nsys.argv = ['pragmodels', '--help']\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "print('JAX' if 'jax' in sys.modules else 'no JAX')")
    assert _python(code).endswith("no JAX")


def test_every_public_name_resolves_and_the_stub_lists_it():
    names = set()
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    missing_from_stub = sorted(set(pm.__all__) - names - {"__version__"})
    assert not missing_from_stub, f"in __all__ but not in {STUB.name}: {missing_from_stub}"
    assert all(getattr(pm, n) is not None for n in pm.__all__)
    assert pm.fit is pm.inference.fitting.fit
    assert pm.likelihoods.speaker_choices is pm.likelihoods.categorical.speaker_choices


@pytest.mark.subprocess
def test_eager_import_loads_everything_at_once():
    got = _python("import sys, pragmodels; print('jax' in sys.modules and 'pragmodels.inference.fitting' in sys.modules)",
                  EAGER_IMPORT="1")
    assert got == "True"


def test_an_unknown_name_is_an_attribute_error():
    try:
        pm.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("pm.no_such_name did not raise")
