import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PRAGMODELS_DATA_DIR", str(ROOT.parent / "shared" / "data"))
# importing pragmodels changes no global state: the tests ask, as a user would, for one CPU device
# per core they have (before JAX starts): under pytest-xdist, the cores over the workers (`make test` on
# two cores: one device per worker, so fits run pm.fit's default for one CPU device, sequential chains; a
# run without xdist, or with fewer workers than cores, has parallel chains), and for the persistent
# compilation cache
from pragmodels.runtime import configure_host_devices, enable_compilation_cache  # noqa: E402

# Most of the tier's time is XLA compiling small programs (563 of 1,089 worker-seconds, 6,446 compiles, measured
# 2026-12-06 with a throwaway plugin), and the programs the tests run are small: the tests compile without
# LLVM's optimisation passes (XLA's own HLO passes still run). Values differ from an optimised build by rounding
# only, which moves draws: an example on the edge of a standard can pass one way and warn the other (the first
# example of docs/fitting-and-checking.md, 2 chains of 500, gave r_hat 1.019 here; it now samples 4 x 1,000).
# Measured on the two cores: a first fit of a small listener 10.1 -> 7.2 s, tests/test_validation.py +
# test_agents.py 90 -> 69 s, the whole tier 566-568 -> 392-464 s. Processes the tests start inherit it.
_NO_LLVM_OPT = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
# pytest-xdist's workers inherit the environment of the controller, which has imported this file with no worker
# count and asked for a device per core; configure_host_devices leaves a device count alone, so each of the two
# workers kept two devices and fits chose "parallel" instead of one device's "sequential". A process whose
# XLA_FLAGS are the ones this file wrote (in the process that started it) starts again from the flags that
# process was given; any other value (a user's, a subprocess's own) is this run's starting point.
_RUN_FLAGS, _SET_FLAGS = "PRAGMODELS_TESTS_XLA_FLAGS", "PRAGMODELS_TESTS_XLA_FLAGS_SET"
if _SET_FLAGS in os.environ and os.environ.get("XLA_FLAGS", "") == os.environ[_SET_FLAGS]:
    os.environ["XLA_FLAGS"] = os.environ.get(_RUN_FLAGS, "")
else:
    os.environ[_RUN_FLAGS] = os.environ.get("XLA_FLAGS", "")
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_NO_LLVM_OPT}".strip()

configure_host_devices(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
os.environ[_SET_FLAGS] = os.environ.get("XLA_FLAGS", "")
enable_compilation_cache(os.environ.get("PRAGMODELS_COMPILATION_CACHE", str(ROOT / ".pytest_cache" / "jax")))


@pytest.fixture(scope="session")
def mirror() -> Path:
    from pragmodels.datasets import data_dir

    path = data_dir()  # a relative value resolves against the repository root, as the library does
    assert path is not None
    if not path.is_dir():
        pytest.fail(f"offline mirror not found at {path}; set PRAGMODELS_DATA_DIR")
    return path


# ---- tiers ---------------------------------------------------------------------------------------
# Markers say what a test does (listed in pyproject.toml): `nuts` runs NUTS (the compiled NUTS
# program or numpyro's MCMC, directly or through fit, fit_many or a study run), `lm` loads a real
# language model (llama.cpp in process or as a server), `subprocess` starts a Python process (a fresh
# interpreter, the CLI, a process pool, a Dask cluster, a notebook kernel), `slow` takes minutes and is
# left out of `make test`. The fast tier (`make test-fast`) is the tests that carry none of them.
#
# The markers are checked, not trusted: while a test runs (its set-up included), building a NUTS
# kernel fails it unless it is marked `nuts`, loading a llama.cpp model unless `lm`, starting a Python
# process unless `subprocess`. A NUTS program that an earlier test compiled is reused without a new
# kernel, so an unmarked NUTS test can pass in the full run; the fast tier, which runs none of them,
# catches it.
#
# `make test` (all but slow) has a 5-minute budget on idle cores with a cold compilation cache; most of
# its time is XLA compiling NUTS programs, one per model structure, static values, data shapes (after
# padding: a model's second data size is padded to a bucket) and sampler settings. A new fit in that
# tier reuses a program an earlier test of its file compiled where its assertion allows (the same model,
# shapes and settings; a fit meant to fail, failing before it compiles), and a statistical check whose
# code path another default-tier test runs goes to `slow`, naming that test.

# fixtures that make every test using them one kind
_FIXTURE_MARKS = {"smollm2": ("lm",), "server_url": ("lm", "subprocess"), "http_lm": ("lm", "subprocess")}
_CHECKED = ("nuts", "lm", "subprocess")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            for name in _FIXTURE_MARKS.get(fixture, ()):
                item.add_marker(name)
        if item.get_closest_marker("slow"):
            # warnings are errors (pyproject.toml) in the tiers CI runs; the slow tier has not yet been run
            # that way (its recovery fits and quick studies run short chains, which warn), so it shows them
            item.add_marker(pytest.mark.filterwarnings("default"))


class TierError(AssertionError):
    """A test did what its markers say it does not."""


class _Tier:
    forbidden: frozenset[str] = frozenset()
    seen: list[str] = []

    @classmethod
    def check(cls, kind: str, what: str) -> None:
        if kind in cls.forbidden:
            msg = f"this test {what} but is not marked @pytest.mark.{kind} (see the tiers in tests/conftest.py)"
            cls.seen.append(msg)
            raise TierError(msg)


def _install_tier_checks() -> None:
    """Wrap the three entry points once; the wrappers pass through unless the running test forbids them."""
    import functools
    import multiprocessing.popen_fork
    import multiprocessing.util
    import subprocess
    import sys
    from importlib.util import find_spec

    import numpyro.infer.hmc

    hmc = numpyro.infer.hmc.hmc

    @functools.wraps(hmc)
    def guarded_hmc(*args, **kwargs):
        _Tier.check("nuts", "builds a NUTS kernel")
        return hmc(*args, **kwargs)

    numpyro.infer.hmc.hmc = guarded_hmc  # numpyro's NUTS and pragmodels.inference.nuts both call this name
    for module in list(sys.modules.values()):  # a module that imported the name already
        if getattr(module, "hmc", None) is hmc and module is not numpyro.infer.hmc:
            module.hmc = guarded_hmc

    popen_init = subprocess.Popen.__init__
    python_bin = Path(sys.executable).parent

    def guarded_popen_init(self, args, *a, **k):
        argv0 = args if isinstance(args, (str, bytes, os.PathLike)) else (list(args)[:1] or [""])[0]
        program = Path(os.fsdecode(argv0).split()[0]) if argv0 else Path()
        if program.name.startswith("python") or program.parent == python_bin:
            _Tier.check("subprocess", f"starts a Python process ({program.name})")
        popen_init(self, args, *a, **k)

    subprocess.Popen.__init__ = guarded_popen_init  # type: ignore[method-assign]
    spawn = multiprocessing.util.spawnv_passfds

    def guarded_spawn(*args, **kwargs):
        _Tier.check("subprocess", "starts a Python process (multiprocessing)")
        return spawn(*args, **kwargs)

    multiprocessing.util.spawnv_passfds = guarded_spawn
    launch = multiprocessing.popen_fork.Popen._launch

    def guarded_launch(self, *args, **kwargs):
        _Tier.check("subprocess", "forks a Python process (multiprocessing)")
        return launch(self, *args, **kwargs)

    multiprocessing.popen_fork.Popen._launch = guarded_launch  # type: ignore[method-assign]
    if find_spec("llama_cpp") is not None:
        import llama_cpp

        def guarded_llama_new(cls, *args, **kwargs):  # before __init__: no half-built model to finalise
            _Tier.check("lm", "loads a llama.cpp model")
            return object.__new__(cls)

        llama_cpp.Llama.__new__ = guarded_llama_new  # type: ignore[method-assign]


_install_tier_checks()


def _run_checked(item: pytest.Item):
    marks = {m.name for m in item.iter_markers()}
    # the slow and hf tests are in no tier that promises anything, and are not checked
    _Tier.forbidden = frozenset() if marks & {"slow", "hf"} else frozenset(_CHECKED) - marks
    _Tier.seen = []
    try:
        return (yield)
    finally:
        seen, _Tier.forbidden, _Tier.seen = _Tier.seen, frozenset(), []
        if seen:  # raised where it happened; failed here too in case the code under test caught it
            pytest.fail(seen[0], pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _run_checked(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    return (yield from _run_checked(item))
