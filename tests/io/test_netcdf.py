"""save_netcdf / load_netcdf: checksums, truncated files, symlinks, file modes, leftovers of
killed saves (issue 9, findings 4, 5 and 18). Synthetic DataTrees only: no fits, seconds."""

import json
import os
import stat
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import xarray as xr
from arviz_base import from_dict

import pragmodels as pm
from pragmodels.io import atomic, checksums
from pragmodels.io.checksums import CHECKSUM_ATTR, CHECKSUM_ITEMS_ATTR
from pragmodels.io.errors import ResultChecksumError, ResultFileError, ResultFileWarning, ResultSaveError

# distinctive values, so that a test can find their bytes in the file
ALPHA = (np.arange(2 * 50, dtype=np.float64).reshape(2, 50) + 0.5) * 1.000123


def make_tree(shift: float = 0.0) -> xr.DataTree:
    rng = np.random.default_rng(0)
    tree = from_dict({
        "posterior": {"alpha": ALPHA + shift, "beta": rng.normal(size=(2, 50, 3))},
        "sample_stats": {"diverging": np.zeros((2, 50), bool), "n_steps": np.full((2, 50), 7, np.int64)},
        "observed_data": {"choice": np.array([0, 2, 1, 1])},
    }, coords={"term": ["a", "bb", "ccc"]}, dims={"beta": ["term"]})
    tree.attrs.update(model="toy", seed="11", wall_time_s=1.25, tags=["x"], empty=[], raw=b"bytes")
    return tree


def assert_same(a: xr.DataTree, b: xr.DataTree) -> None:
    for group in ("posterior", "sample_stats", "observed_data"):
        for name, var in a[group].data_vars.items():
            np.testing.assert_array_equal(var.values, b[group][name].values)


def test_roundtrip_records_and_verifies_a_checksum(tmp_path):
    tree = make_tree()
    path = pm.save_netcdf(tree, tmp_path / "fit.nc")
    assert CHECKSUM_ATTR not in tree.attrs  # the caller's tree is not modified
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file with a checksum loads without a warning
        back = pm.load_netcdf(path)
    assert_same(tree, back)
    assert back.attrs[CHECKSUM_ATTR].startswith("sha256:")
    items = json.loads(back.attrs[CHECKSUM_ITEMS_ATTR])
    assert {"/posterior/alpha", "/posterior/term", "/sample_stats/diverging", "/#attrs"} <= set(items)
    # loading and saving again gives the same checksum (attributes and strings read back alike)
    pm.save_netcdf(back, tmp_path / "again.nc")
    assert pm.load_netcdf(tmp_path / "again.nc").attrs[CHECKSUM_ATTR] == back.attrs[CHECKSUM_ATTR]


def test_flipped_data_byte_is_detected_and_named(tmp_path):
    path = tmp_path / "fit.nc"
    pm.save_netcdf(make_tree(), path)
    raw = bytearray(path.read_bytes())
    at = raw.find(ALPHA.tobytes())
    assert at > 0  # stored uncompressed and contiguous
    raw[at + 8 * 37 + 3] ^= 0x10  # one bit of alpha[0, 37]
    path.write_bytes(bytes(raw))
    with pytest.raises(ResultChecksumError, match=r"fit\.nc does not match the checksum.*changed: \['/posterior/alpha'\]"):
        pm.load_netcdf(path)
    assert issubclass(ResultChecksumError, ResultFileError) and issubclass(ResultFileError, ValueError)
    # verify=False salvages what the file holds
    damaged = pm.load_netcdf(path, verify=False)
    assert damaged["posterior"]["alpha"].values[0, 37] != ALPHA[0, 37]
    np.testing.assert_array_equal(damaged["posterior"]["alpha"].values[1], ALPHA[1])


def test_edited_attribute_or_damaged_record_is_detected(tmp_path):
    import h5py

    path = tmp_path / "fit.nc"
    pm.save_netcdf(make_tree(), path)
    with h5py.File(path, "r+") as f:
        f.attrs["model"] = "another model"
    with pytest.raises(ResultChecksumError, match=r"changed: \['/#attrs'\]"):
        pm.load_netcdf(path)
    pm.save_netcdf(make_tree(), path)
    with h5py.File(path, "r+") as f:
        f.attrs[CHECKSUM_ITEMS_ATTR] = "{not json"
    with pytest.raises(ResultChecksumError, match="checksum record .* is damaged"):
        pm.load_netcdf(path)


@pytest.mark.parametrize("keep", [0, 100, 0.5, 0.9])
def test_truncated_or_foreign_file_names_the_path(tmp_path, keep):
    path = tmp_path / "fit.nc"
    pm.save_netcdf(make_tree(), path)
    raw = path.read_bytes()
    n = int(len(raw) * keep) if isinstance(keep, float) else keep
    path.write_bytes(raw[:n])
    with pytest.raises(ResultFileError, match=str(path)):
        pm.load_netcdf(path)
    path.write_text("name,value\nalpha,1\n")  # not netCDF at all
    with pytest.raises(ResultFileError, match=f"{path} is not a readable netCDF"):
        pm.load_netcdf(path)


def test_missing_path_or_directory_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"no result file at {tmp_path / 'nope.nc'}"):
        pm.load_netcdf(tmp_path / "nope.nc")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        pm.load_netcdf(tmp_path)
    with pytest.raises(ResultSaveError, match="is a directory"):
        pm.save_netcdf(make_tree(), tmp_path)


def test_file_without_checksum_loads_with_a_warning(tmp_path):
    path = tmp_path / "old.nc"
    make_tree().to_netcdf(path, engine="h5netcdf")  # as save_netcdf wrote it before checksums
    with pytest.warns(ResultFileWarning, match=f"{path} records no 'pragmodels_checksum'"):
        back = pm.load_netcdf(path)
    assert_same(make_tree(), back)


def test_save_writes_through_a_symlink(tmp_path):
    target = tmp_path / "store" / "fit-v1.nc"
    target.parent.mkdir()
    pm.save_netcdf(make_tree(), target)
    link = tmp_path / "latest.nc"
    link.symlink_to(target)
    written = pm.save_netcdf(make_tree(shift=100.0), link)
    assert link.is_symlink() and os.readlink(link) == str(target)  # the link stays a link
    assert written == target
    np.testing.assert_array_equal(pm.load_netcdf(target)["posterior"]["alpha"].values, ALPHA + 100.0)
    # a dangling link is written through too: its target is created
    dangling = tmp_path / "next.nc"
    dangling.symlink_to(tmp_path / "store" / "fit-v2.nc")
    pm.save_netcdf(make_tree(), dangling)
    assert dangling.is_symlink() and (tmp_path / "store" / "fit-v2.nc").is_file()
    assert sorted(p.name for p in target.parent.iterdir()) == ["fit-v1.nc", "fit-v2.nc"]


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_saved_file_mode_honours_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = pm.save_netcdf(make_tree(), tmp_path / "fit.nc")
        pm.save_netcdf(make_tree(), path)  # replacing a file: the same mode
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_failed_save_keeps_the_old_file_and_no_temp_file(tmp_path):
    path = tmp_path / "fit.nc"
    pm.save_netcdf(make_tree(), path)
    before = path.read_bytes()
    broken = make_tree(shift=1.0)
    broken.attrs["unserialisable"] = {"a": object()}
    with pytest.raises(ResultSaveError, match=f"could not save the result to {path}") as info:
        pm.save_netcdf(broken, path)
    assert isinstance(info.value, OSError) and info.value.path == path and info.value.tree is broken
    assert info.value.__cause__ is not None
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.nc"]


def test_a_file_that_would_not_read_back_as_saved_is_never_put_in_place(tmp_path):
    """An attribute that makes xarray decode the values differently ('units' with 'since' turns
    floats into dates) used to be saved silently and loaded as other values."""
    path = tmp_path / "fit.nc"
    pm.save_netcdf(make_tree(), path)
    before = path.read_bytes()
    tricky = make_tree(shift=1.0)
    tricky["posterior"]["alpha"].attrs["units"] = "days since 2000-01-01"
    with pytest.raises(ResultSaveError, match=r"does not read back as the result.*'/posterior/alpha'"):
        pm.save_netcdf(tricky, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.nc"]


def test_interrupted_save_removes_its_temp_file(tmp_path):
    seen = []

    def write(tmp):
        seen.append(tmp)
        with open(tmp, "wb") as f:
            f.write(b"half a file")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic.atomic_write(tmp_path / "fit.nc", write)
    name = os.path.basename(seen[0])
    assert name.startswith(f".fit.nc.{os.getpid()}-") and name.endswith(".pragmodels.tmp")
    assert list(tmp_path.iterdir()) == []


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.subprocess
def test_leftovers_of_killed_saves_are_removed_by_the_next_save(tmp_path):
    host = atomic._host_tag()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = _dead_pid()
        hour_ago = time.time() - 2 * 3600
        files = {
            f".fit.nc.{dead}-{host}-0123abcd.pragmodels.tmp": (None, False),  # writer dead: removed
            f".other.nc.{dead}-{host}-0123abcd.pragmodels.tmp": (None, False),  # any name in the folder
            f".fit.nc.{live.pid}-{host}-0123abcd.pragmodels.tmp": (None, True),  # writer running: kept
            f".fit.nc.{live.pid}-{host}-4567cdef.pragmodels.tmp": (time.time() - 2 * 86400, False),  # too old
            f".fit.nc.{dead}-00000000-0123abcd.pragmodels.tmp": (None, True),  # another host's: kept
            ".fit.nc.k2j4_x9a.tmp": (hour_ago, False),  # a pre-pid (mkstemp) name, two hours old
            ".fit.nc.q8w7e6r5.tmp": (None, True),  # ... but a fresh one may still be written
            ".other.nc.k2j4_x9a.tmp": (hour_ago, True),  # pre-pid names: only of the file saved
            "notes.tmp": (hour_ago, True),
        }
        for name, (mtime, _) in files.items():
            (tmp_path / name).write_bytes(b"x" * 100)
            if mtime is not None:
                os.utime(tmp_path / name, (mtime, mtime))
        (tmp_path / f".dir.nc.{dead}-{host}-0123abcd.pragmodels.tmp").mkdir()  # not a file: kept
        pm.save_netcdf(make_tree(), tmp_path / "fit.nc")
        left = {p.name for p in tmp_path.iterdir()}
        expected = {n for n, (_, kept) in files.items() if kept}
        assert left == expected | {"fit.nc", f".dir.nc.{dead}-{host}-0123abcd.pragmodels.tmp"}
    finally:
        live.kill()
        live.wait()


@pytest.mark.subprocess
@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="a process's state is read from /proc (Linux)")
def test_the_temporary_of_a_killed_writer_not_yet_reaped_is_removed(tmp_path):
    """Issue 33, item 7: a writer killed by its parent (a notebook, a job runner) stays a zombie
    until the parent waits for it; os.kill(pid, 0) still finds it, so its temporary was kept."""
    host = atomic._host_tag()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        killed.kill()
        deadline = time.time() + 30
        while not _is_zombie(killed.pid) and time.time() < deadline:
            time.sleep(0.01)
        assert _is_zombie(killed.pid)
        assert not atomic.pid_alive(killed.pid) and atomic.pid_alive(live.pid) and atomic.pid_alive(os.getpid())
        left = f".fit.nc.{killed.pid}-{host}-0123abcd.pragmodels.tmp"
        running = f".fit.nc.{live.pid}-{host}-0123abcd.pragmodels.tmp"
        for name in (left, running):
            (tmp_path / name).write_bytes(b"x" * 100)
        pm.save_netcdf(make_tree(), tmp_path / "fit.nc")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([running, "fit.nc"])
    finally:
        for proc in (live, killed):
            proc.kill()
            proc.wait()


_SAVE_FOREVER = """
import sys, numpy as np, xarray as xr, pragmodels as pm
post = xr.Dataset({"x": (("chain", "draw", "i"), np.random.default_rng(0).random((4, 1000, 2000)))})
tree = xr.DataTree.from_dict({"posterior": post})
while True:
    pm.save_netcdf(tree, sys.argv[1])
"""


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="a process's state is read from /proc (Linux)")
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_a_save_killed_midway_leaves_the_old_file_and_the_next_save_cleans_up(tmp_path, sig):
    """Issue 33, item 7, for real: kill a process while it saves (64 MB files, over and over),
    before its parent waits for it; the file there is whole, and the next save removes the
    killed writer's temporary."""
    import signal

    path = tmp_path / "fit.nc"
    writer = subprocess.Popen([sys.executable, "-c", _SAVE_FOREVER, str(path)])
    try:
        deadline = time.time() + 120
        while not (path.exists() and list(tmp_path.glob(".fit.nc.*.pragmodels.tmp"))) and time.time() < deadline:
            time.sleep(0.005)
        writer.send_signal(getattr(signal, sig))
        while not _is_zombie(writer.pid) and time.time() < deadline:
            time.sleep(0.01)
        left = list(tmp_path.glob(".fit.nc.*.pragmodels.tmp"))
        assert len(left) == 1 and left[0].name.startswith(f".fit.nc.{writer.pid}-")
        assert pm.load_netcdf(path)["posterior"]["x"].shape == (4, 1000, 2000)  # the earlier save, whole
        pm.save_netcdf(make_tree(), path)
        assert [p.name for p in tmp_path.iterdir()] == ["fit.nc"]
    finally:
        writer.kill()
        writer.wait()


def _is_zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "Z"



# ------------------------------------------------------------------ data_hash (issue 9)
def test_data_hash_encodes_keys_and_values_unambiguously():
    h = checksums.data_hash
    assert h({"a": None, "b": None}) != h({"aNoneb": None})  # the old encoding collided here
    assert h({"ab": np.arange(3)}) != h({"a": None, "b": np.arange(3)})
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert h({"x": x}) != h({"x": x.reshape(3, 2)})  # shape
    assert h({"x": x}) != h({"x": x.astype(np.float32)})  # dtype
    assert h({"x": np.array([1, 2], np.int8)}) != h({"x": np.array([1, 2], np.uint8)})  # same bytes and shape
    assert h({"x": x}) != h({"x": None}) != h({})
    assert h({"x": np.array([], np.float64)}) != h({})


#: data_hash({"a": None, "x": np.arange(3, dtype=np.int64)}) with the length-prefixed encoding
#: (issue 9); a change of encoding changes every recorded data_sha256, so it must be deliberate
_PINNED_DATA_HASH = "7ee98386670c7466f4aeb10c0bf5121d51a8430a7c49d66ca627f815d6098b9a"


@pytest.mark.subprocess
def test_data_hash_is_deterministic_and_order_free():
    h = checksums.data_hash
    data = {"b": np.arange(4), "a": [0.5, 1.5], "k": 3, "s": "text", "n": None}
    assert h(data) == h(dict(reversed(list(data.items()))))
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert h({"x": x}) == h({"x": np.asfortranarray(x)}) == h({"x": x.astype(">f8")})  # equal values
    # pinned: the hash recorded as data_sha256 must not change between processes or releases
    assert h({"a": None, "x": np.arange(3, dtype=np.int64)}) == _PINNED_DATA_HASH
    code = ("import numpy as np; from pragmodels.io.checksums import data_hash; "
            "print(data_hash({'a': None, 'x': np.arange(3, dtype=np.int64), 'o': np.array([{'k': 1}], object)}))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == h({"a": None, "x": np.arange(3, dtype=np.int64), "o": np.array([{"k": 1}], object)})


def test_error_types_are_pragmodels_errors():
    from pragmodels.errors import ConfigError, PragmodelsError
    from pragmodels.inference.diagnostics import FitDiagnosticsError

    assert issubclass(ResultFileError, PragmodelsError) and issubclass(ResultFileError, ValueError)
    assert issubclass(ResultChecksumError, ResultFileError)
    assert issubclass(ResultSaveError, PragmodelsError) and issubclass(ResultSaveError, OSError)
    assert issubclass(FitDiagnosticsError, PragmodelsError) and issubclass(FitDiagnosticsError, RuntimeError)
    assert issubclass(pm.FitPostprocessingError, PragmodelsError)
    err = ResultSaveError("could not save", path="x.nc")
    assert str(err) == "could not save" and err.path is not None and err.tree is None
    assert pm.PragmodelsError is PragmodelsError and pm.ConfigError is ConfigError
    assert {"PragmodelsError", "ConfigError"} <= set(pm.__all__)
