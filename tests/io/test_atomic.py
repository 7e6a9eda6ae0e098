"""pragmodels.io.atomic (several files written aside and swapped in together) and
pragmodels.io.checksums.sha256_file (the one file hash). Save-specific cases are in test_netcdf.py,
run-folder ones in tests/runs/test_folder.py."""

import hashlib
import os

import pytest

from pragmodels.datasets import sha256_of
from pragmodels.io.atomic import (
    remove_stale_folders,
    staging_folder,
    swap_in_folder,
    write_aside,
)
from pragmodels.io.checksums import sha256_file


def test_several_files_are_swapped_in_together_or_not_at_all(tmp_path):
    a, b = tmp_path / "out" / "table.csv", tmp_path / "out" / "table.csv.json"
    with write_aside(a, b) as (ta, tb):
        assert ta.parent == a.parent and ta.name.endswith(".pragmodels.tmp")
        ta.write_text("one")
        tb.write_text("{}")
        assert not a.exists() and not b.exists()  # nothing in place before the block ends
    assert a.read_text() == "one" and b.read_text() == "{}"
    with pytest.raises(RuntimeError, match="half way"), write_aside(a, b) as (ta, tb):
        ta.write_text("two")
        raise RuntimeError("half way")
    assert a.read_text() == "one" and b.read_text() == "{}"
    assert sorted(p.name for p in a.parent.iterdir()) == ["table.csv", "table.csv.json"]


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_written_files_take_the_umasks_mode(tmp_path, umask):
    old = os.umask(umask)
    try:
        with write_aside(tmp_path / "x.txt") as (tmp,):
            tmp.unlink()  # a writer that recreates the file (as pyarrow does) with another mode
            tmp.write_text("x")
            os.chmod(tmp, 0o600)
    finally:
        os.umask(old)
    assert (tmp_path / "x.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_folder_is_staged_beside_its_target_and_swapped_in(tmp_path):
    final = tmp_path / "full"
    final.mkdir()
    (final / "old.txt").write_text("old")
    staging = staging_folder(final)
    assert staging.parent == tmp_path and staging.name.startswith(f".full.tmp-{os.getpid()}-")
    (staging / "new.txt").write_text("new")
    swap_in_folder(staging, final)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"] and os.listdir(final) == ["new.txt"]
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError, match="is not a folder"):
        swap_in_folder(staging_folder(tmp_path / "file"), tmp_path / "file")
    # this process's own staging folder is a leftover once a run holds the lock again
    left = list(tmp_path.glob(".file.tmp-*"))
    assert len(left) == 1 and remove_stale_folders(tmp_path / "file") == left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "full"]


def test_one_file_hash(tmp_path):
    path = tmp_path / "data.bin"
    payload = os.urandom(3 * (1 << 20) + 17)  # more than one 1 MiB block
    path.write_bytes(payload)
    expected = hashlib.sha256(payload).hexdigest()
    assert sha256_file(path) == sha256_file(str(path)) == sha256_of(path) == expected
    assert sha256_file(path, remember=True) == expected
    path.write_bytes(b"other")  # another size: not the remembered digest
    assert sha256_file(path, remember=True) == hashlib.sha256(b"other").hexdigest()
