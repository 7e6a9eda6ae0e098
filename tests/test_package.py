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


ROOT = Path(__file__).resolve().parents[1]


def _broken_configs(tmp: Path) -> list[tuple[Path, str]]:
    """A fit config and a study config with a typo in a key, and a study config with a bad value."""
    import json

    fit = json.loads((ROOT / "fits" / "reference_game.json").read_text())
    fit["sampler"]["num_sample"] = fit["sampler"].pop("num_samples")
    study = json.loads((ROOT / "fits" / "social_meaning.json").read_text())
    study["study"] = str(ROOT / study["study"])  # the copy lives outside the repository
    study["tables"] = str(ROOT / study["tables"])
    study["n_draw"] = study.pop("n_draws")
    value = {k: v for k, v in study.items() if k != "n_draw"} | {"motive_prior": "flat"}
    out = []
    for name, cfg, expected in [("fit", fit, "`sampler.num_sample`: unknown key; did you mean `num_samples`?"),
                                ("study", study, "`n_draw`: unknown key; did you mean `n_draws`?"),
                                ("value", value, '`motive_prior` = "flat": expected \'uniform\' or \'free\'')]:
        (tmp / f"{name}.json").write_text(json.dumps(cfg))
        out.append((tmp / f"{name}.json", expected))
    return out


@pytest.mark.subprocess
def test_config_errors_answer_without_jax(tmp_path):
    """A bad key or value in a fit or study config is reported before JAX or the study's code is imported."""
    for path, expected in _broken_configs(tmp_path):
        code = ("import sys\nfrom pragmodels.cli import main\n"
                f"assert main(['run', {str(path)!r}, '--quick']) == 2\n"
                "print(sorted(m for m in ('jax', 'numpyro', 'matplotlib', 'models.social_meaning.study') "
                "if m in sys.modules))")
        got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
        assert got.returncode == 0, got.stderr
        assert got.stdout.strip() == "[]", (path.name, got.stdout)
        assert expected in got.stderr, got.stderr


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
