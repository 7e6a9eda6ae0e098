"""Run folders (pragmodels.runs): written aside and swapped in whole, locked, manifests, stale
leftovers cleaned, quick and full kept apart, studies found from their config's file path.

Most tests drive the machinery with a fake writer or a fake study (no NUTS fits)."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from pragmodels import errors, runs
from pragmodels.cli import main
from pragmodels.io import atomic

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PRAGMODELS_COMPILATION_CACHE": "off", "PRAGMODELS_HOST_DEVICES": "1"}

FAKE_ATTRS = dict(model="fake_model()", data_sha256="d" * 64, seed="7", wall_time_s=1.5, backend="cpu",
                  sampler_settings=json.dumps(dict(sampler="NUTS", num_warmup=10, num_samples=10, num_chains=2)),
                  diagnostics=json.dumps(dict(divergences=0, max_rhat=1.001, min_ess_bulk=400.0)),
                  diagnostics_ok=1)

STUDY = '''
import json, time
from pathlib import Path
import xarray as xr
from pragmodels.runs.schema import StudyConfig
from {pkg} import helper  # the repository root is importable from a study

class Config(StudyConfig):  # the study's own keys (the generic ones are StudyConfig's)
    fail: bool = False
    interrupt: bool = False
    ready: str | None = None
    release: str | None = None

def run(config, out_dir, mode, progress, record):
    (out_dir / "tables").mkdir()
    (out_dir / "tables" / "t.csv").write_text(helper.TEXT)
    tree = xr.DataTree()
    tree.attrs.update({attrs!r})
    record.fit("only", tree, "posterior.nc")
    record.data("input.csv", "ab" * 32)
    record.note("mode_seen", mode)
    if config.get("fail"):
        raise RuntimeError("boom in the middle of the study")
    if config.get("interrupt"):
        raise KeyboardInterrupt
    if config.get("ready"):
        Path(config["ready"]).touch()
        t0 = time.time()
        while not Path(config["release"]).exists() and time.time() - t0 < 60:
            time.sleep(0.05)
    manifest = record.finish()
    (out_dir / "report.md").write_text(f"mode {{manifest['mode']}}; wall {{manifest['wall_time_s']}}")

def tables(config, out):
    Path(out).write_text("a,b\\n1,2\\n")
'''


def _tree_listing(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _siblings(final: Path) -> list[str]:
    """Everything beside the run folder other than itself and its lock file."""
    return sorted(p.name for p in final.parent.iterdir() if p.name not in (final.name, f".{final.name}.lock"))


@pytest.fixture
def old_run(tmp_path) -> Path:
    final = tmp_path / "fits" / "x" / "full"
    (final / "tables").mkdir(parents=True)
    (final / "report.md").write_text("the earlier, good run")
    (final / "tables" / "a.csv").write_text("1,2")
    return final


@pytest.fixture
def fake_repo(tmp_path, monkeypatch):
    """A repository with pyproject.toml, a study package and a config fits/sub/study.json."""
    pkg = f"fakestudy_{hashlib.sha1(str(tmp_path).encode()).hexdigest()[:8]}"
    repo = tmp_path / "repo"
    (repo / pkg).mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (repo / pkg / "__init__.py").write_text("")
    (repo / pkg / "helper.py").write_text("TEXT = 'x,y\\n1,2\\n'\n")
    (repo / pkg / "study.py").write_text(STUDY.format(pkg=pkg, attrs=FAKE_ATTRS))
    (repo / "fits" / "sub").mkdir(parents=True)
    cfg = dict(name="study", study=f"{pkg}/study.py:run", tables=f"{pkg}/study.py:tables", seed=3,
               sampler=dict(quick=dict(num_samples=5), full=dict(num_samples=500)))
    path = repo / "fits" / "sub" / "study.json"
    path.write_text(json.dumps(cfg))
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield path
    for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        del sys.modules[name]


def _with(path: Path, **changes) -> Path:
    cfg = {**json.loads(path.read_text()), **changes}
    out = path.with_name(f"{path.stem}_{abs(hash(json.dumps(changes, sort_keys=True))) % 10**8}.json")
    out.write_text(json.dumps(cfg))
    return out


# ------------------------------------------------------------------ the swap
def _write_new(folder: Path):
    (folder / "report.md").write_text("the new run")


def test_failure_mid_run_leaves_old_folder_intact_and_no_temp(old_run):
    before = _tree_listing(old_run)
    with pytest.raises(RuntimeError, match="boom"):
        with runs.open_run(old_run, mode="full", entry_point="test") as run:
            (run.path / "report.md").write_text("half a run")
            raise RuntimeError("boom")
    assert _tree_listing(old_run) == before and _siblings(old_run) == []
    with runs.open_run(old_run, mode="full", entry_point="test") as run:  # the lock was released
        _write_new(run.path)
    assert (old_run / "report.md").read_text() == "the new run" and not (old_run / "tables").exists()


def test_keyboard_interrupt_leaves_old_folder_intact_and_no_temp(old_run):
    before = _tree_listing(old_run)
    with pytest.raises(KeyboardInterrupt):
        with runs.open_run(old_run, mode="full", entry_point="test") as run:
            (run.path / "partial.nc").write_bytes(b"x")
            raise KeyboardInterrupt
    assert _tree_listing(old_run) == before and _siblings(old_run) == []


@pytest.mark.parametrize("atomic_exchange", [True, False])
def test_leftover_nonempty_old_folder_does_not_break_the_swap(old_run, monkeypatch, atomic_exchange):
    """The previous code renamed the folder onto `.X.old` and failed with 'Directory not empty'
    when a killed run had left one, stranding the new results in a temp folder."""
    if not atomic_exchange:
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    leftover = old_run.parent / f".{old_run.name}.old"
    (leftover / "posteriors").mkdir(parents=True)
    (leftover / "posteriors" / "h.nc").write_bytes(b"run before last")
    with runs.open_run(old_run, mode="full", entry_point="test") as run:
        _write_new(run.path)
    assert (old_run / "report.md").read_text() == "the new run" and (old_run / "run.json").is_file()
    assert _siblings(old_run) == []


def test_an_interrupted_fallback_swap_is_restored_before_the_next_run(old_run):
    """Killed between the two renames of the fallback swap: the folder is missing and its
    contents sit in `.X.old-<pid>-<hex>`; the next run puts them back (and keeps them if it fails)."""
    before = _tree_listing(old_run)
    old_run.rename(old_run.parent / f".{old_run.name}.old-999999999-0a1b2c3d")
    with pytest.raises(RuntimeError):
        with runs.open_run(old_run, mode="full", entry_point="test", log=lambda m: None):
            raise RuntimeError("fails")
    assert _tree_listing(old_run) == before and _siblings(old_run) == []


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.subprocess
def test_stale_temp_folders_of_dead_runs_are_removed_live_ones_kept(old_run):
    stale = old_run.parent / f".{old_run.name}.tmp-{_dead_pid()}-deadbeef"
    (stale / "posteriors").mkdir(parents=True)
    (stale / "posteriors" / "big.nc").write_bytes(b"x" * 1000)
    legacy = old_run.parent / f".{old_run.name}.tmp-1700000000"  # the old timestamp-only name
    legacy.mkdir()
    os.utime(legacy, (time.time() - 3 * 86400,) * 2)
    live = old_run.parent / f".{old_run.name}.tmp-{os.getppid()}-cafebabe"  # a live process's: not ours to remove
    live.mkdir()
    other = old_run.parent / ".quick.tmp-1-00000000"  # another folder's
    other.mkdir()
    logged = []
    with runs.open_run(old_run, mode="full", entry_point="test", log=logged.append) as run:
        _write_new(run.path)
    assert not stale.exists() and not legacy.exists() and live.is_dir() and other.is_dir()
    assert any(stale.name in m for m in logged)


# ------------------------------------------------------------------ the lock
HOLDER = '''
import sys, time
from pathlib import Path
from pragmodels import errors, runs
final, ready, release = map(Path, sys.argv[1:4])
with runs.open_run(final, mode="full", entry_point="holder", log=lambda m: None) as run:
    (run.path / "report.md").write_text("from the holder")
    ready.touch()
    t0 = time.time()
    while not release.exists() and time.time() - t0 < 60:
        time.sleep(0.05)
'''


def _wait_for(path: Path, proc, timeout=60):
    t0 = time.time()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() - t0 < timeout, "the subprocess did not get ready"
        time.sleep(0.05)


@pytest.mark.subprocess
def test_a_second_run_into_the_same_folder_fails_at_once_naming_the_holder(old_run, tmp_path):
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    ready, release = tmp_path / "ready", tmp_path / "release"
    proc = subprocess.Popen([sys.executable, str(script), str(old_run), str(ready), str(release)], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(ready, proc)
        t0 = time.perf_counter()
        with pytest.raises(runs.RunFolderLocked, match=f"{old_run}.*pid {proc.pid}"):
            with runs.open_run(old_run, mode="full", entry_point="second"):
                pytest.fail("the second run must not start")
        assert time.perf_counter() - t0 < 1.0
        assert (old_run / "report.md").read_text() == "the earlier, good run"
    finally:
        release.touch()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert (old_run / "report.md").read_text() == "from the holder"
    with runs.open_run(old_run, mode="full", entry_point="third") as run:  # free again
        _write_new(run.path)


@pytest.mark.subprocess
def test_sigterm_during_a_cli_run_removes_the_partial_folder(fake_repo, tmp_path):
    out = tmp_path / "runs" / "out"
    out.mkdir(parents=True)
    (out / "report.md").write_text("the earlier, good run")
    ready, release = tmp_path / "ready", tmp_path / "never"
    cfg = _with(fake_repo, ready=str(ready), release=str(release))
    proc = subprocess.Popen([sys.executable, "-m", "pragmodels.cli", "run", str(cfg), "--out", str(out)], env=ENV,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(ready, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and "SIGTERM" in err and "left as it was" in err
    assert _tree_listing(out) == {"report.md": b"the earlier, good run"} and _siblings(out) == []


# ------------------------------------------------------------------ modes and manifest
def test_quick_and_full_runs_never_share_a_folder(fake_repo, capsys):
    quick, full = runs.run_folder(fake_repo, "quick"), runs.run_folder(fake_repo, "full")
    assert quick != full and quick.parent == full.parent == fake_repo.with_suffix("")
    assert main(["run", str(fake_repo), "--quick", "--no-progress"]) == 0
    assert main(["run", str(fake_repo), "--no-progress"]) == 0
    assert runs.read_manifest(quick)["mode"] == "quick" and runs.read_manifest(full)["mode"] == "full"
    assert runs.read_manifest(quick)["sampler"] == {"num_samples": 5}
    # an explicit --out holding the other mode's run is not replaced
    assert main(["run", str(fake_repo), "--quick", "--out", str(full)]) == 2
    assert "holds a full run" in capsys.readouterr().err and runs.read_manifest(full)["mode"] == "full"


def test_an_empty_run_folder_is_an_error_not_the_default(tmp_path):
    """Issue 33, item 4: out='' was taken as 'not given' (the default folder beside the config)."""
    assert runs.run_folder(tmp_path / "x.json", "full", None) == tmp_path / "x" / "full"
    with pytest.raises(ValueError, match=r"run folder '': empty; expected a folder path, or None for x/full"):
        runs.run_folder(tmp_path / "x.json", "full", "")


def test_run_json_records_the_run(fake_repo):
    t0 = time.time()
    folder = runs.run_study(fake_repo, mode="quick", log=lambda m: None)
    m = runs.read_manifest(folder)
    cfg = json.loads(fake_repo.read_text())
    assert m["schema"] == runs.folder.SCHEMA and m["name"] == "study" and m["mode"] == "quick"
    assert m["entry_point"] == cfg["study"] and m["config"] == cfg and m["seed"] == 3
    assert m["config_sha256"] == hashlib.sha256(fake_repo.read_bytes()).hexdigest()
    assert m["sampler"] == {"num_samples": 5} and m["data"] == {"input.csv": "ab" * 32}
    assert m["notes"] == {"mode_seen": "quick"} and m["pid"] == os.getpid()
    assert {"python", "pragmodels", "jax", "numpyro", "arviz-stats", "xarray"} <= set(m["versions"])
    assert m["started_at"] <= m["finished_at"] and 0 <= m["wall_time_s"] <= time.time() - t0 + 1
    # core-seconds of this process (and ended children): at most the wall time on every core (a fake study's
    # few milliseconds may round to 0)
    assert 0 <= m["cpu_time_s"] <= (m["wall_time_s"] + 0.05) * os.cpu_count()
    fit = m["fits"]["only"]
    assert fit["file"] == "posterior.nc" and fit["data_sha256"] == "d" * 64 and fit["seed"] == 7
    assert fit["diagnostics"]["max_rhat"] == 1.001 and fit["sampler_settings"]["num_chains"] == 2
    assert fit["wall_time_s"] == 1.5 and fit["diagnostics_ok"] is True and fit["warnings"] == []
    assert m["files"] == {"report.md": len((folder / "report.md").read_bytes()), "tables/t.csv": 8}
    # the report was rendered from the manifest the study finished
    assert (folder / "report.md").read_text() == f"mode quick; wall {m['wall_time_s']}"


@pytest.mark.parametrize("how", ["fail", "interrupt"])
def test_a_failing_study_leaves_the_old_folder(fake_repo, how, capsys):
    assert main(["run", str(fake_repo), "--no-progress"]) == 0
    full = runs.run_folder(fake_repo, "full")
    before = _tree_listing(full)
    bad = _with(fake_repo, **{how: True})
    final = runs.run_folder(bad, "full")
    capsys.readouterr()
    if how == "fail":  # a failed run: one line, exit status 1; --debug adds the traceback
        assert main(["run", str(bad), "--out", str(full)]) == 1
        err = capsys.readouterr().err.strip()
        assert err.splitlines() == ["pragmodels: error: RuntimeError: boom in the middle of the study "
                                    "(rerun with --debug for the traceback)"]
        assert main(["run", str(bad), "--out", str(full), "--debug"]) == 1
        err = capsys.readouterr().err
        assert "Traceback" in err and "in run" in err and err.strip().splitlines()[-1].startswith("pragmodels: error:")
    else:
        assert main(["run", str(bad), "--out", str(full)]) == 130
    assert _tree_listing(full) == before and _siblings(full) == [] and not final.exists()


# ------------------------------------------------------------------ studies are data
def test_study_is_resolved_from_its_config_file_path(fake_repo, tmp_path, capsys):
    cfg = json.loads(fake_repo.read_text())
    pkg = cfg["study"].split("/")[0]
    f = runs.load_entry_point(cfg["study"], fake_repo)
    assert f.__module__ == f"{pkg}.study" and Path(sys.modules[f.__module__].__file__).parent == fake_repo.parents[2] / pkg
    # a file outside a package is loaded from its path
    (fake_repo.parents[2] / "loose.py").write_text("def go(*a):\n    return 'loose'\n")
    assert runs.load_entry_point("loose.py:go", fake_repo)() == "loose"
    # the tables entry point, through the CLI
    assert main(["tables", str(fake_repo), "--out", str(tmp_path / "t.csv")]) == 0
    assert (tmp_path / "t.csv").read_text() == "a,b\n1,2\n"


@pytest.mark.parametrize("value, reason", [
    ("nowhere/study.py:run", "no file nowhere/study.py under"),
    ("{pkg}/study.py:missing", "has no function 'missing'"),
    ("social_meaning", "expected 'path/to/module.py:function'"),
])
def test_an_unknown_study_is_one_line_naming_config_key_and_value(fake_repo, capsys, value, reason):
    pkg = json.loads(fake_repo.read_text())["study"].split("/")[0]
    value = value.format(pkg=pkg)
    bad = _with(fake_repo, study=value)
    assert main(["run", str(bad), "--quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{bad}: study = {value!r}" in err and reason in err
    assert not runs.run_folder(bad, "quick").exists() and not bad.with_suffix("").exists()


def test_a_study_config_is_validated_before_anything_runs(fake_repo, capsys):
    """Against the study's own Config (a subclass of StudyConfig): unknown keys, wrong types, out-of-range
    sampler settings in either mode (also with --quick), a missing sampler: one line, no run folder."""
    cfg = json.loads(fake_repo.read_text())
    cases = [
        (dict(faill=True), "`faill`: unknown key; did you mean `fail`?"),
        (dict(fail="yes"), '`fail` = "yes": expected true or false, got a string'),
        (dict(seed="abc"), '`seed` = "abc": expected an integer, got a string'),
        (dict(seed=20261130.9), "`seed` = 20261130.9: expected an integer, got a number"),
        (dict(sampler=dict(quick=dict(num_chains=0), full={})), "`sampler.quick.num_chains` = 0: must be greater"),
        (dict(sampler=dict(quick={}, full=dict(target_accept=1.5))), "`sampler.full.target_accept` = 1.5: must be less"),
        (dict(sampler=dict(quick={}, full=dict(num_sample=3))), "`sampler.full.num_sample`: unknown key; did you mean `num_samples`?"),
        (dict(sampler=dict(quick={})), "`sampler.full`: required key missing"),
        (dict(sampler=None), "`sampler` = null: expected an object, got null"),
        (dict(tables=3), "`tables` = 3:"),
    ]
    for change, expected in cases:
        bad = _with(fake_repo, **change)
        assert main(["run", str(bad), "--quick"]) == 2, change
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"study config {bad}: " in err and expected in err, (change, err)
        assert not bad.with_suffix("").exists()
    no_sampler = fake_repo.with_name("no_sampler.json")
    no_sampler.write_text(json.dumps({k: v for k, v in cfg.items() if k != "sampler"}))
    assert main(["run", str(no_sampler), "--quick"]) == 2
    assert "`sampler`: required key missing" in capsys.readouterr().err
    with pytest.raises(errors.ConfigError, match="required key missing"):
        runs.run_study(no_sampler, mode="quick")
    assert main(["tables", str(no_sampler), "--out", str(no_sampler.with_suffix(".csv"))]) == 2
    assert not no_sampler.with_suffix("").exists() and not no_sampler.with_suffix(".csv").exists()


def test_a_study_without_a_config_model_allows_no_other_key(fake_repo, capsys):
    pkg = json.loads(fake_repo.read_text())["study"].split("/")[0]
    (fake_repo.parents[2] / pkg / "plain.py").write_text("def run(config, out_dir, mode, progress, record):\n"
                                                        "    (out_dir / 'report.md').write_text('plain')\n")
    plain = _with(fake_repo, study=f"{pkg}/plain.py:run")
    assert main(["run", str(plain), "--quick"]) == 0
    bad = _with(plain, n_draws=3)
    assert main(["run", str(bad), "--quick"]) == 2
    assert "`n_draws`: unknown key" in capsys.readouterr().err


def test_social_meaning_config_is_validated_by_its_study():
    from pragmodels.runs.schema import validate_config

    path = ROOT / "fits" / "social_meaning.json"
    cfg = json.loads(path.read_text())
    model = runs.study_config_model(runs.load_entry_point(cfg["study"], path))
    assert model.__name__ == "Config" and model.__module__ == "models.social_meaning.config"  # study.py imports it
    validate_config(model, cfg, path)
    cfg["motive_prio"] = cfg.pop("motive_prior")
    cfg["conditions"] = [["gpt", "MIM"]]
    cfg["sampler"]["quick"]["human"]["num_sample"] = 3
    with pytest.raises(errors.ConfigError) as info:
        validate_config(model, cfg, path, "study config")
    err = str(info.value)
    assert len(err.splitlines()) == 1 and err.startswith(f"study config {path}: 3 problems: ")
    assert "`motive_prio`: unknown key; did you mean `motive_prior`?" in err
    assert "`conditions[0][1]` = \"MIM\": expected 'MIN', 'ALT', 'KMA' or 'COM'; did you mean 'MIN'?" in err
    assert "`sampler.quick.human.num_sample`: unknown key; did you mean `num_samples`?" in err


@pytest.mark.subprocess
def test_the_library_never_imports_a_study():
    code = ("import sys, pragmodels, pragmodels.cli, pragmodels.runs.fit_config, pragmodels.runs; "
            "bad = sorted(m for m in sys.modules if m == 'models' or m.startswith('models.')); "
            "sys.exit(str(bad) if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], env=ENV, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    offenders = [f"{p}:{i}" for p in (ROOT / "pragmodels").rglob("*.py")
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if line.lstrip().startswith(("import models", "from models"))]
    assert offenders == []


def test_the_wheel_installs_the_library_only():
    """`pip wheel --no-deps .` then lists pragmodels/ and its dist-info only (checked by hand; the
    test environment has no setuptools to build with), because only these patterns are packaged."""
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["pragmodels", "pragmodels.*"]
    assert json.loads((ROOT / "fits" / "social_meaning.json").read_text())["study"] == "models/social_meaning/study.py:run"


# ------------------------------------------------------------------ the single-fit runner
def _reference(tmp_path, **changes) -> Path:
    cfg = {**json.loads((ROOT / "fits" / "reference_game.json").read_text()), **changes}
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(cfg))
    return path


def test_single_fit_truth_naming_an_unknown_parameter_fails_before_the_fit(tmp_path, capsys, monkeypatch):
    import pragmodels.runs.fit_config as runner

    monkeypatch.setattr(runner, "fit", lambda *a, **k: pytest.fail("must fail before fitting"))
    cfg = _reference(tmp_path, truth={"alpha": 2.0, "beta": 1.0})
    out = tmp_path / "runs" / "out"
    out.mkdir(parents=True)
    (out / "posterior.nc").write_bytes(b"earlier good result")
    assert main(["run", str(cfg), "--out", str(out), "--quick"]) == 2
    err = capsys.readouterr().err
    assert "truth names ['beta']" in err and "'alpha'" in err and "'lapse'" in err
    assert _tree_listing(out) == {"posterior.nc": b"earlier good result"} and _siblings(out) == []


def test_single_fit_failing_mid_run_leaves_the_old_folder(tmp_path, monkeypatch):
    import pragmodels.runs.fit_config as runner

    def broken(*a, **k):
        raise RuntimeError("the sampler crashed")

    monkeypatch.setattr(runner, "fit", broken)
    cfg = _reference(tmp_path)
    out = runs.run_folder(cfg, "quick")
    out.mkdir(parents=True)
    (out / "posterior.nc").write_bytes(b"earlier good result")
    with pytest.raises(RuntimeError, match="sampler crashed"):
        runner.run_config(cfg, quick=True)
    assert _tree_listing(out) == {"posterior.nc": b"earlier good result"} and _siblings(out) == []


def test_convergence_table_reads_a_manifests_fits():
    from pragmodels.runs.study import convergence_table

    fits = {"a/rsa": {"diagnostics": {"divergences": 0, "max_rhat": 1.004, "min_ess_bulk": 900, "min_ess_tail": 800},
                      "diagnostics_ok": True, "wall_time_s": 12.5},
            "a/bad": {"diagnostics": None, "diagnostics_ok": None, "wall_time_s": None}}
    t = convergence_table(fits)
    assert list(t["fit"]) == ["a/rsa", "a/bad"]
    assert t.loc[0, "max_rhat"] == 1.004 and bool(t.loc[0, "converged"]) and t.loc[0, "wall_s"] == 12.5
    assert t.loc[1, "divergences"] is None or t["divergences"].isna()[1]


def test_a_fit_started_in_its_basins_records_them_and_the_convergence_table_counts_them():
    """``init="basins"``: the manifest keeps each basin's weight, its gap below the best and its
    chains (from ``attrs["basins"]``), and the convergence table says how many basins a fit sampled
    and how many carried a weight of at least 0.01; a fit started otherwise has none."""
    import json

    import xarray as xr

    from pragmodels.runs.folder import Run
    from pragmodels.runs.study import convergence_table

    basins = {"method": "bridge sampling", "basin_nats": 10.0, "basins": [
        {"potential": 100.0, "starts": 12, "chains": 4, "log_mass": 0.0, "log_mass_se": 0.01, "weight": 0.995,
         "diagnostics": {}, "summary": {}},
        {"potential": 104.1, "starts": 4, "chains": 4, "log_mass": -5.3, "log_mass_se": 0.2, "weight": 0.005,
         "diagnostics": {}, "summary": {}}]}
    run = Run.__new__(Run)
    run.manifest = {"fits": {}}
    two, plain = xr.DataTree(), xr.DataTree()
    two.attrs.update(basins=json.dumps(basins), wall_time_s="1.0")
    plain.attrs.update(wall_time_s="1.0")
    run.fit("two", two)
    run.fit("plain", plain)
    rec = run.manifest["fits"]["two"]["basins"]
    assert [b["gap_nats"] for b in rec] == [0.0, 4.1] and [b["weight"] for b in rec] == [0.995, 0.005]
    assert run.manifest["fits"]["plain"]["basins"] is None
    t = convergence_table(run.manifest["fits"]).set_index("fit")
    assert t.loc["two", "basins"] == 2 and t.loc["two", "basins_with_mass"] == 1
    assert t.loc["two", "basin_weights"] == "0.995 / 0.005"
    assert t["basins"].isna()["plain"]


def test_a_fit_sampled_again_records_its_draws_and_the_convergence_table_says_so():
    """A tree with ``draws_resized`` (``pragmodels.inference.top_up``) has it in the manifest and in a
    ``draws_resized`` column of the convergence table; a fit without it records nothing new, and a
    table of such fits alone has no such column."""
    import json

    import xarray as xr

    from pragmodels.runs.folder import Run
    from pragmodels.runs.study import convergence_table

    run = Run.__new__(Run)
    run.manifest = {"fits": {}}
    resized, plain = xr.DataTree(), xr.DataTree()
    resized.attrs.update(wall_time_s="3.0", draws_resized=json.dumps(
        {"from": 400, "to": 1000, "ess": 274.0, "max_rhat": 1.0101, "rounds": 1}))
    plain.attrs.update(wall_time_s="1.0")
    run.fit("resized", resized)
    run.fit("plain", plain)
    assert run.manifest["fits"]["resized"]["draws_resized"]["to"] == 1000
    assert "draws_resized" not in run.manifest["fits"]["plain"]
    t = convergence_table(run.manifest["fits"]).set_index("fit")
    assert t.loc["resized", "draws_resized"] == "400 -> 1000 (least ESS 274, r_hat 1.010)"
    assert t["draws_resized"].isna()["plain"]
    assert "draws_resized" not in convergence_table({"plain": run.manifest["fits"]["plain"]})
