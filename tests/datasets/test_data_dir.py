"""A relative PRAGMODELS_DATA_DIR names the same mirror from any working directory inside the
repository (a notebook kernel starts in notebooks/, the command line in the root)."""

import os
from pathlib import Path

import pytest

from pragmodels import datasets

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("cwd", [".", "notebooks", "pragmodels/datasets"])
def test_relative_data_dir_resolves_against_the_repository_root(mirror, cwd, monkeypatch):
    monkeypatch.chdir(ROOT / cwd)
    monkeypatch.setenv("PRAGMODELS_DATA_DIR", os.path.relpath(mirror, ROOT))  # e.g. ../shared/data
    assert datasets.repository_root() == ROOT
    assert datasets.data_dir() == mirror
    assert datasets.locate("social_human").is_file()


def test_relative_data_dir_from_outside_the_checkout_uses_the_imported_package(mirror, tmp_path, monkeypatch):
    """Outside any checkout, an editable install's (this) checkout anchors the relative path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRAGMODELS_DATA_DIR", os.path.relpath(mirror, ROOT))
    assert datasets.data_dir() == mirror


def test_another_projects_pyproject_is_not_the_root(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert datasets.repository_root() == ROOT  # not tmp_path: falls back to the imported package's checkout
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pragmodels"\n')  # another pragmodels checkout
    assert datasets.repository_root() == tmp_path


def test_absolute_and_unset_data_dir(mirror, monkeypatch):
    monkeypatch.setenv("PRAGMODELS_DATA_DIR", str(mirror))
    assert datasets.data_dir() == mirror
    monkeypatch.setenv("PRAGMODELS_DATA_DIR", "")
    assert datasets.data_dir() is None
    monkeypatch.delenv("PRAGMODELS_DATA_DIR")
    assert datasets.data_dir() is None


def test_missing_relative_mirror_names_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT / "notebooks")
    monkeypatch.setenv("PRAGMODELS_DATA_DIR", "no/such/mirror")
    with pytest.raises(datasets.DataIntegrityError, match=f"resolved to {ROOT / 'no/such/mirror'}"):
        datasets.locate("drinq")
