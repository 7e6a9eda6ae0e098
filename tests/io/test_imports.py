"""pragmodels.io.imports: code imported from where its files are, never through sys.path; one file is
one module object; worker processes import the same packages before unpickling a fit."""

import hashlib
import importlib
import subprocess
import sys

import numpy as np
import pytest

from pragmodels.io import imports

MODEL = '''import numpyro
import numpyro.distributions as dist

from {pkg}.sub import helper  # absolute, inside the package: found through the package, not sys.path


def coin(flips):
    p = numpyro.sample("p", dist.Beta(helper.A, helper.A))
    with numpyro.plate("trial", flips.shape[0]):
        numpyro.sample("flips", dist.Bernoulli(p), obs=flips)
'''


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``<pkg>/`` (``<pkg>/sub/model.py`` imports ``<pkg>.sub.helper``) in a folder that
    is not on sys.path, and a working directory elsewhere."""
    pkg = f"studypkg_{hashlib.sha1(str(tmp_path).encode()).hexdigest()[:8]}"
    root = tmp_path / "repo"
    (root / pkg / "sub").mkdir(parents=True)
    (root / pkg / "__init__.py").write_text("")
    (root / pkg / "sub" / "__init__.py").write_text("")
    (root / pkg / "sub" / "helper.py").write_text("A = 2.0\n")
    (root / pkg / "sub" / "model.py").write_text(MODEL.format(pkg=pkg))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path_before = list(sys.path)
    yield root / pkg
    assert sys.path == path_before  # nothing here edits sys.path
    for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        del sys.modules[name]


def test_a_file_in_a_package_is_one_module_under_its_dotted_name(package):
    pkg = package.name
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(pkg)  # not importable from sys.path
    model = imports.import_file(package / "sub" / "model.py")
    assert model.__name__ == f"{pkg}.sub.model" and sys.modules[pkg].__file__ == str(package / "__init__.py")
    assert importlib.import_module(f"{pkg}.sub.model") is model  # a later import finds the same module
    assert model.helper is importlib.import_module(f"{pkg}.sub.helper")
    assert imports.import_package(package) is sys.modules[pkg]
    assert imports.load_object(f"{package}/sub/model.py:coin") is model.coin
    assert imports.load_object(f"{pkg}.sub.model:coin") is model.coin
    assert imports.load_object("sub/model.py:coin", base=package) is model.coin
    assert imports.imported_by_location()[pkg] == str(package / "__init__.py")


def test_another_package_of_the_same_name_is_refused(package, tmp_path):
    imports.import_package(package)
    twin = tmp_path / "other" / package.name
    twin.mkdir(parents=True)
    (twin / "__init__.py").write_text("")
    with pytest.raises(ImportError, match=f"a package '{package.name}' is already imported from"):
        imports.import_package(twin)
    with pytest.raises(ImportError, match="not a package"):
        imports.import_package(tmp_path / "other")


def test_a_lone_file_is_loaded_once_under_a_private_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lone.py").write_text("VALUE = object()\n")
    first = imports.load_object("lone.py:VALUE")
    module = imports.import_file(tmp_path / "lone.py")
    assert module.__name__.startswith("_pragmodels_file_lone_") and module.VALUE is first
    assert imports.load_object(f"{tmp_path}/lone.py:VALUE") is first


@pytest.mark.parametrize("ref, error, match", [
    ("no_colon", ValueError, "must look like 'package.module:attr' or 'path/to/file.py:attr'"),
    ("x.py:not-an-identifier", ValueError, "must look like"),
    ("nowhere/x.py:f", FileNotFoundError, "no file"),
    ("pragmodels.io.imports:nope", AttributeError, "has no attribute 'nope'"),
])
def test_bad_references_say_what_is_wrong(ref, error, match):
    with pytest.raises(error, match=match):
        imports.load_object(ref)


def test_references_are_told_apart():
    assert imports.split_reference("a/b.py:c.d") == ("a/b.py", "c.d")
    assert imports.is_file_reference("a/b.py") and imports.is_file_reference("b.py")
    assert not imports.is_file_reference("package.module")


@pytest.mark.subprocess
def test_another_process_imports_what_this_one_imported_by_location(package):
    imports.import_file(package / "sub" / "model.py")
    locations = imports.imported_by_location()
    code = ("import sys, pragmodels.io.imports as imports; imports.import_locations(eval(sys.argv[1])); "
            f"import {package.name}.sub.model as model; print(model.helper.A)")
    done = subprocess.run([sys.executable, "-c", code, repr(locations)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2.0"


@pytest.mark.subprocess
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # 50 draws: a smoke fit
def test_fit_many_workers_find_a_package_imported_by_location(package):
    """A model from a package imported by location (as a study's) is pickled by reference: the
    spawned worker, whose sys.path does not hold the package's folder, imports it first."""
    import pragmodels as pm

    model = imports.import_file(package / "sub" / "model.py")
    flips = np.array([0, 1, 1, 1, 0, 1, 1, 1], dtype=np.int32)
    spec = pm.FitSpec("coin", model.coin, {"flips": flips}, seed=1,
                      sampler=dict(num_warmup=50, num_samples=50, num_chains=1, posterior_predictive=False))
    result = pm.fit_many([spec], executor="process", max_workers=1, progress=False)
    assert result.failed == [], result.errors
    assert result.trees["coin"]["posterior"]["p"].shape == (1, 50)


def test_a_location_that_fails_here_is_reported_not_raised(tmp_path, package):
    broken = tmp_path / "broken_loose.py"
    broken.write_text("import no_such_package_anywhere\n")
    good = package / "sub" / "model.py"
    failed = imports.import_locations({"broken_loose_mod": str(broken), f"{package.name}.sub.model": str(good)})
    assert list(failed) == ["broken_loose_mod"]
    assert failed["broken_loose_mod"].startswith("ModuleNotFoundError: No module named 'no_such_package_anywhere'")
