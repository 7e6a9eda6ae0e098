"""fit_many: the same seed gives the same draws in process, on a spawn pool and on a Dask cluster;
a failing fit is recorded and the others complete; out_dir files; spec validation."""

import functools
import json
import warnings
from pathlib import Path

import jax
import numpy as np
import numpyro
import numpyro.distributions as dist
import pandas as pd
import pytest

from pragmodels.inference.diagnostics import FitWarning
from pragmodels.inference.fit_many import FitManyError, FitSpec, fit_many, resolve_model
from pragmodels.inference.nuts import one_device_chain_method


def coin_model(flips, *, concentration=1.0):
    """A one-parameter model that compiles in a second; rejects flips that are not 0 or 1."""
    if not isinstance(flips, jax.core.Tracer) and not np.isin(np.asarray(flips), (0, 1)).all():
        i = int(np.argmax(~np.isin(np.asarray(flips), (0, 1))))
        raise ValueError(f"flips[{i}] = {np.asarray(flips)[i]}; expected 0 or 1.")
    p = numpyro.sample("p", dist.Beta(concentration, concentration))
    with numpyro.plate("trial", np.shape(flips)[0]):
        numpyro.sample("flips", dist.Bernoulli(p), obs=flips)


# resolved by name in the workers ("tests.inference.test_fit_many:COIN"): nothing to pickle
COIN = functools.partial(coin_model, concentration=2.0)
SAMPLER = dict(num_warmup=100, num_samples=100, num_chains=2, posterior_predictive=False)


def _specs():
    rng = np.random.default_rng(0)
    good_a, good_b = (dict(flips=(rng.uniform(size=40) < p).astype(np.int32)) for p in (0.3, 0.7))
    bad = dict(flips=np.where(np.arange(40) == 5, 7, good_a["flips"]))
    return [
        FitSpec("a", "tests.inference.test_fit_many:COIN", good_a, sampler=SAMPLER, seed=3),
        FitSpec("bad", "tests.inference.test_fit_many:COIN", bad, sampler=SAMPLER, seed=4),
        FitSpec("b", COIN, good_b, sampler=SAMPLER, seed=5),  # a callable: pickled for workers
    ]


def _run(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # 2 x 100 draws are too few for the ESS floor
        return fit_many(_specs(), **kw)


def _draws(tree):
    post = tree["posterior"]
    return {k: np.asarray(post[k]) for k in post.data_vars}


def _assert_same_draws(result, reference):
    assert result.succeeded == reference.succeeded == ["a", "b"]
    trees, ref = result.trees, reference.trees
    for name in ("a", "b"):
        # every executor runs a spec without chain_method as one device of this backend does (sequential on a CPU)
        for tree in (trees[name], ref[name]):
            settings = json.loads(tree.attrs["sampler_settings"])
            assert settings["chain_method"] == settings["chain_method_requested"] == one_device_chain_method()
        got, want = _draws(trees[name]), _draws(ref[name])
        assert got.keys() == want.keys()
        for k in want:
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"{name}/{k}")


def _assert_bad_recorded(result):
    assert result.failed == ["bad"]
    err = result.errors["bad"]
    assert err.type == "ValueError" and err.message == "flips[5] = 7; expected 0 or 1."
    assert "Traceback" in err.traceback and "ValueError" in err.traceback


@pytest.fixture(scope="module")
def sequential():
    return _run(progress=True)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    # no cache folder of their own: fit_many passes them the test run's compilation cache, as to a process pool
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, env={"PRAGMODELS_COMPILATION_CACHE": ""})
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.nuts
def test_sequential_records_failure_and_runs_the_rest(sequential):
    r = sequential
    assert r.executor == "sequential" and len(r) == 3 and not r.ok
    assert [o.name for o in r] == ["a", "bad", "b"]  # spec order
    _assert_bad_recorded(r)
    assert r.paths == {}
    tree = r.trees["a"]
    assert tree.attrs["fit_name"] == "a" and "coin_model" in tree.attrs["model"]
    assert r["a"].diagnostics_ok is not None and np.isfinite(r["a"].diagnostics["max_rhat"])
    table = r.summary()
    assert list(table.columns) == ["name", "status", "wall_s", "diagnostics_ok", "max_rhat",
                                   "min_ess_bulk", "error"]
    assert list(table["status"]) == ["ok", "error", "ok"]
    assert table.loc[1, "error"].startswith("ValueError:") and pd.isna(table.loc[0, "error"])
    assert (table.loc[[0, 2], "wall_s"] > 0).all() and table.loc[[0, 2], "min_ess_bulk"].gt(0).all()
    with pytest.raises(FitManyError, match=r"1 of 3 fits failed:\n  bad: ValueError"):
        r.raise_on_error()
    assert not np.array_equal(_draws(r.trees["a"])["p"], _draws(r.trees["b"])["p"])


# `make test-all` (two fresh worker processes import JAX and compile: ~20 s): the default run keeps the process
# executor (tests/io/test_imports.py fits in one) and checks worker draws against sequential ones through Dask
@pytest.mark.slow
@pytest.mark.nuts
@pytest.mark.subprocess
def test_process_pool_matches_sequential(sequential):
    r = _run(executor="process", max_workers=2, progress=False)
    assert r.executor == "process"
    _assert_bad_recorded(r)
    _assert_same_draws(r, sequential)
    assert r.trees["b"].attrs["sampler_settings"] == sequential.trees["b"].attrs["sampler_settings"]


@pytest.mark.nuts
@pytest.mark.subprocess
def test_dask_matches_sequential_and_saves_one_file_per_success(sequential, dask_client, tmp_path):
    out = tmp_path / "run"
    r = _run(executor=dask_client, out_dir=out, progress=False)
    assert r.executor == "dask"
    _assert_bad_recorded(r)
    assert sorted(p.name for p in out.iterdir()) == ["a.nc", "b.nc"]  # none for "bad", no temp files
    assert r.paths == {"a": out / "a.nc", "b": out / "b.nc"}
    assert all(o.tree is None for o in r)  # only paths came back
    _assert_same_draws(r, sequential)
    assert r.trees["a"].attrs["fit_name"] == "a"
    # every worker that fitted uses this process's compilation cache: it loads what was compiled already
    cache = jax.config.jax_compilation_cache_dir
    workers = dask_client.run(_worker_cache)
    used = [folder for fitted, folder in workers.values() if fitted]
    assert cache and used and set(used) == {cache}, workers


def _worker_cache():
    """(whether this Dask worker ran a fit, its compilation cache folder)."""
    import sys

    import jax

    return "pragmodels.inference.fitting" in sys.modules, jax.config.jax_compilation_cache_dir


def test_names_are_validated():
    data = {"x": np.zeros(3)}
    ok = FitSpec("fit-1", COIN, data, seed=0)
    with pytest.raises(ValueError, match=r"specs\[2\] \(name='FIT-1'\): duplicate name; specs\[0\]"):
        fit_many([ok, FitSpec("fit-2", COIN, data, seed=0), FitSpec("FIT-1", COIN, data, seed=0)])
    for bad in ("a/b", "../up", "", ".hidden", "sp ace", "x" * 201):
        with pytest.raises(ValueError, match=r"specs\[1\] \(name="):
            fit_many([ok, FitSpec(bad, COIN, data, seed=0)])
    with pytest.raises(ValueError, match=r"specs\[0\].*unknown sampler settings \['num_draws'\]"):
        fit_many([FitSpec("s", COIN, data, sampler={"num_draws": 5}, seed=0)])
    with pytest.raises(ValueError, match=r"specs\[0\].*sampler settings \['out'\]"):
        fit_many([FitSpec("s", COIN, data, sampler={"out": "x.nc"}, seed=0)])
    with pytest.raises(ValueError, match=r"specs\[0\].*'module:attr'|specs\[0\].*package.module:attr"):
        fit_many([FitSpec("s", "no_colon_here", data, seed=0)])
    with pytest.raises(TypeError, match=r"specs\[0\].*seed must be an int"):
        fit_many([FitSpec("s", COIN, data, seed=1.5)])
    with pytest.raises(TypeError, match="executor"):
        fit_many([ok], executor=object())
    with pytest.raises(ValueError, match="max_workers"):
        fit_many([ok], max_workers=2)


def test_model_strings_resolve(tmp_path):
    assert resolve_model("tests.inference.test_fit_many:COIN") is COIN
    assert resolve_model("tests.inference.test_fit_many:coin_model") is coin_model
    path = Path(__file__)
    # a file inside a package is imported by its dotted name: one module object however it is named
    assert resolve_model(f"{path}:COIN") is COIN
    loose = tmp_path / "loose_model.py"  # a file outside any package: loaded once per process
    loose.write_text("import functools\nfrom tests.inference.test_fit_many import coin_model\n"
                     "COIN = functools.partial(coin_model, concentration=3.0)\n")
    from_file = resolve_model(f"{loose}:COIN")
    assert callable(from_file) and from_file.func is coin_model and from_file is not COIN
    assert resolve_model(f"{loose}:COIN") is from_file
    with pytest.raises(AttributeError, match="no attribute 'NOPE'"):
        resolve_model("tests.inference.test_fit_many:NOPE")
    with pytest.raises(TypeError, match="not a callable"):
        resolve_model("tests.inference.test_fit_many:SAMPLER")
    with pytest.raises(FileNotFoundError):
        resolve_model("no/such/file.py:model")


def test_unknown_model_module_is_a_recorded_failure():
    r = fit_many([FitSpec("s", "no_such_module_xyz:model", {"x": np.zeros(2)}, seed=0)], progress=False)
    assert r.failed == ["s"] and r.errors["s"].type == "ModuleNotFoundError"


# fit_many with its standard output to a pipe (a log file, a batch job): a line per fit as it finishes
_STREAMED = """
import time
import numpy as np, numpyro, numpyro.distributions as dist
from pragmodels.inference import fit_many as fm

fm.HEARTBEAT_S = 0.5
run_fit = fm.run_fit


def paused(name, *args, **kwargs):
    # the second fit runs its first program's cached program again (no compile): it starts 1.5 s late, so that
    # its line comes seconds after the first's
    if name == "second":
        time.sleep(1.5)
    return run_fit(name, *args, **kwargs)


fm.run_fit = paused


def coin(flips):
    p = numpyro.sample("p", dist.Beta(2.0, 2.0))
    with numpyro.plate("trial", flips.shape[0]):
        numpyro.sample("flips", dist.Bernoulli(p), obs=flips)


data = {"flips": (np.arange(30) % 3 == 0).astype(np.int32)}
s = dict(num_warmup=50, num_samples=50, num_chains=2, posterior_predictive=False)
fm.fit_many([fm.FitSpec("first", coin, data, sampler=s, seed=1), fm.FitSpec("second", coin, data, sampler=s, seed=2)])
"""


@pytest.mark.subprocess
def test_progress_to_a_pipe_is_a_line_per_fit_as_it_finishes(tmp_path):
    import os
    import re
    import subprocess
    import sys
    import time

    env = {**os.environ, "PRAGMODELS_COMPILATION_CACHE": "off", "PYTHONWARNINGS": "ignore"}
    with subprocess.Popen([sys.executable, "-c", _STREAMED], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, env=env, cwd=tmp_path) as proc:
        lines = []
        while not lines or not lines[-1][0].startswith("fit 1/2"):
            lines.append((proc.stdout.readline(), time.perf_counter()))
            assert lines[-1][0], lines  # not the end of the output
        running = proc.poll() is None  # the first fit's line came while the second fit ran
        lines += [(line, time.perf_counter()) for line in proc.stdout]
        assert proc.wait(timeout=300) == 0
    assert running, lines
    texts = [line.rstrip() for line, _ in lines]
    first = next(i for i, t in enumerate(texts) if t.startswith("fit 1/2"))
    assert re.fullmatch(r"fit 1/2 first: (ok|diagnostics NOT ok) in [\d.]+ s \(max r_hat [\d.]+, min bulk ESS \d+, "
                        r"\d+ divergences\)", texts[first]), texts
    assert texts[-1].startswith("fit 2/2 second: ")
    assert re.match(r"fits: 0 of 2 done, \d+ s since they started", texts[0]), texts  # a count while none finished
    assert any(t.startswith("fits: 1 of 2 done, ") for t in texts[first:-1]), texts
    assert lines[-1][1] - lines[first][1] > 1.0  # streamed, not printed together at the end


def test_progress_is_a_bar_lines_or_nothing():
    with pytest.raises(ValueError, match=r"progress must be one of \(True, False, 'bar', 'lines'\); got 'line'"):
        fit_many([], progress="line")
