"""pragmodels.inference.nuts and compile_cache: the cached NUTS program against an exact posterior and against numpyro's MCMC,
its cache (keys, hits without recompiling, LRU bound, clearing), chain methods, log-likelihood."""

import functools
import gc
import json
import os
import subprocess
import sys
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from arviz_stats import ess, mcse
from jax import monitoring
from scipy import stats

from pragmodels import model_key
from pragmodels.inference import compile_cache, nuts
from pragmodels.priors import Prior

A0, B0 = 2.0, 3.0  # Beta prior of every group's rate
N = np.array([20, 50, 200])
Y = np.array([3, 31, 120])
TRACES = {"n": 0}  # incremented each time Python runs (traces) the model


def beta_binomial(y, n, a=A0, b=B0):
    """theta[group] ~ Beta(a, b); y[group] ~ Binomial(n[group], theta[group]); exact posterior
    Beta(a + y, b + n - y). ``log_odds`` is a deterministic site of shape [group]."""
    TRACES["n"] += 1
    with numpyro.plate("group", y.shape[0]):
        theta = numpyro.sample("theta", dist.Beta(a, b))
        numpyro.deterministic("log_odds", jnp.log(theta) - jnp.log1p(-theta))
        numpyro.sample("y", dist.Binomial(n, theta), obs=y)


def normal_means(y, sigma=1.0):
    """mu[group] ~ Normal(0, 2); y[obs, group] ~ Normal(mu[group], sigma). Smooth in float32, so
    that two compilations of the same sampler follow the same trajectories for many iterations."""
    TRACES["n"] += 1
    with numpyro.plate("group", y.shape[1], dim=-1):
        mu = numpyro.sample("mu", dist.Normal(0.0, 2.0))
        numpyro.deterministic("mu_sq", mu**2)
        with numpyro.plate("obs", y.shape[0], dim=-2):
            numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


YN = np.random.default_rng(1).normal([0.5, -1.0, 2.0], 1.0, (20, 3)).astype(np.float32)
# most tests share two compiled programs: one chain, and three vectorized chains, of SHORT runs
SHORT = dict(num_warmup=30, num_samples=40)


def data(y=Y, n=N):
    return dict(y=y, n=n)


@pytest.fixture
def compiles():
    """Counts XLA backend compilations while the test runs."""
    count = {"n": 0}

    def listener(name, duration, **kw):
        if name == "/jax/core/compile/backend_compile_duration":
            count["n"] += 1

    monitoring.register_event_duration_secs_listener(listener)
    yield count
    monitoring.unregister_event_duration_listener(listener)


def check_exact_beta(theta):
    """``theta [chain, draw, group]``: means and 5/50/95% quantiles within 4 Monte Carlo standard errors
    of the exact posterior of :func:`beta_binomial` (12 comparisons)."""
    exact = stats.beta(A0 + Y, B0 + N - Y)
    se = mcse(theta, method="mean", chain_axis=0, draw_axis=1)
    assert np.all(np.abs(theta.mean((0, 1)) - exact.mean()) < 4 * se), (theta.mean((0, 1)), exact.mean(), se)
    for q in (0.05, 0.5, 0.95):
        se_q = mcse(theta, method="quantile", prob=q, chain_axis=0, draw_axis=1)
        got = np.quantile(theta, q, axis=(0, 1))
        assert np.all(np.abs(got - exact.ppf(q)) < 4 * se_q), (q, got, exact.ppf(q), se_q)


# a statistical check, in `make test-all` (the slow tier): the default run checks one, three vectorized
# and three sequential chains draw for draw against numpyro's MCMC (test_draws_equal_numpyro_mcmc)
@pytest.mark.slow
@pytest.mark.nuts
@pytest.mark.parametrize("method", ["vectorized", "sequential"])
def test_posterior_matches_exact_beta_posterior(method):
    """Means and 5/50/95% quantiles of each group's rate within 4 Monte Carlo standard errors of the
    exact Beta posterior, for vectorized and for sequential chains (so the chain methods agree in
    distribution). MCSEs come from the bulk ESS; with 12 comparisons a correct sampler fails one
    with probability ~1e-3 for a given seed (the seeds are fixed), while a bias of ~10% of a
    posterior sd (4 MCSE at ESS ~1600) fails."""
    run = nuts.run_nuts(0, beta_binomial, data(), num_warmup=500, num_samples=1000, num_chains=4,
                           chain_method=method)
    assert run.chain_method == method
    theta = run.samples["theta"]
    assert theta.shape == (4, 1000, 3) and run.latent_sites == ("theta",)
    assert run.samples["log_odds"].shape == (4, 1000, 3)
    np.testing.assert_allclose(run.samples["log_odds"], np.log(theta / (1 - theta)), rtol=1e-4, atol=1e-4)
    check_exact_beta(theta)
    assert ess(theta, chain_axis=0, draw_axis=1).min() > 1000
    assert set(run.stats) == {"diverging", "n_steps", "tree_depth", "acceptance_rate", "energy", "lp", "step_size"}
    for v in run.stats.values():
        assert v.shape == (4, 1000)
    assert run.stats["diverging"].sum() == 0
    assert np.all(run.stats["step_size"] == run.stats["step_size"][:, :1])  # fixed after warm-up
    np.testing.assert_array_equal(run.stats["tree_depth"], np.floor(np.log2(run.stats["n_steps"])) + 1)


@pytest.mark.nuts
def test_a_constrained_models_draws_deterministic_sites_and_statistics():
    """What the exact-posterior check above also asserts, on a short run in the default tier: the latent
    site in its constrained space, a deterministic site computed from it, the statistics' names and
    shapes, the step size fixed after warm-up, and the tree depth implied by the number of steps."""
    run = nuts.run_nuts(0, beta_binomial, data(), num_chains=2, chain_method="sequential", **SHORT)
    theta = run.samples["theta"]
    assert theta.shape == (2, SHORT["num_samples"], 3) and run.latent_sites == ("theta",)
    assert np.all((theta > 0) & (theta < 1))
    np.testing.assert_allclose(run.samples["log_odds"], np.log(theta / (1 - theta)), rtol=1e-4, atol=1e-4)
    assert set(run.stats) == {"diverging", "n_steps", "tree_depth", "acceptance_rate", "energy", "lp", "step_size"}
    assert all(v.shape == (2, SHORT["num_samples"]) for v in run.stats.values())
    assert np.all(run.stats["step_size"] == run.stats["step_size"][:, :1])  # fixed after warm-up
    np.testing.assert_array_equal(run.stats["tree_depth"], np.floor(np.log2(run.stats["n_steps"])) + 1)


IDENTITY_SCRIPT = """
import json, numpy as np
import jax; jax.config.update("jax_enable_x64", True)
from numpyro.infer import MCMC, NUTS, init_to_median
from pragmodels.inference import compile_cache, nuts
from tests.inference.test_nuts import normal_means, YN, SHORT
out = []
for nc, method in [(1, "vectorized"), (3, "vectorized"), (3, "sequential")]:
    mc = MCMC(NUTS(normal_means, init_strategy=init_to_median(num_samples=15)), num_chains=nc,
              chain_method=method, progress_bar=False, **SHORT)
    mc.run(jax.random.key(3), y=YN, extra_fields=("num_steps", "potential_energy"))
    ref, extra = mc.get_samples(group_by_chain=True), mc.get_extra_fields(group_by_chain=True)
    for key in (3, 4):  # 4: a negative control, our draws with another key (our program again: a cache hit)
        run = nuts.run_nuts(key, normal_means, dict(y=YN), num_chains=nc, chain_method=method, **SHORT)
        out.append(dict(nc=nc, method=method, key=key, used=run.chain_method,
                        dtype=str(run.samples["mu"].dtype), shape=list(run.samples["mu"].shape),
                        steps=float((run.stats["n_steps"] == np.asarray(extra["num_steps"])).mean()),
                        mu=float(np.abs(run.samples["mu"] - np.asarray(ref["mu"])).max()),
                        mu_sq=float(np.abs(run.samples["mu_sq"] - run.samples["mu"] ** 2).max()),
                        lp=float(np.abs(run.stats["lp"] + np.asarray(extra["potential_energy"])).max())))
print(json.dumps(out))
"""


def _run_script(script):
    """Run ``script`` in a fresh process; its last line of output, read as JSON. The process gets
    this run's XLA flags less any device count (the scripts that need devices ask for them): the tests' flags
    compile without LLVM's optimisation passes (tests/conftest.py), which the float64 identities below hold
    under as they do optimised (measured: 1e-12 both ways)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split()
                     if not f.startswith("--xla_force_host_platform_device_count"))
    env = dict(os.environ, PYTHONPATH=root, XLA_FLAGS=flags)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=root,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.nuts
@pytest.mark.subprocess
def test_draws_equal_numpyro_mcmc():
    """Same key, same model: the same trajectories (identical tree sizes) and draws as
    MCMC(NUTS(init_to_median(15))), for one chain, vectorized chains (the GPU default and fit_batched's
    layout) and sequential chains (the CPU default; the same program as one chain's). In float64,
    in a fresh process: the two programs are compiled differently, and step-size adaptation
    amplifies their rounding. In float32 that reached ~5e-4 after 70 iterations and, on an AMD
    EPYC host, flipped one U-turn in 120 draws (sequential chains), after which that chain's draws
    differ (not in distribution); in float64 the draws agree to ~1e-12 (measured), so 1e-8 leaves
    four orders of magnitude for other hosts. The negative control, our draws with another key against
    numpyro's with the first, agrees in a part of the tree sizes and differs by ~1 in the draws."""
    for r in _run_script(IDENTITY_SCRIPT):
        assert r["dtype"] == "float64" and r["shape"] == [r["nc"], SHORT["num_samples"], 3], r
        assert r["used"] == ("single" if r["nc"] == 1 else r["method"]), r
        assert r["mu_sq"] < 1e-8, r  # deterministic sites are computed from the kept draws
        if r["key"] == 3:
            assert r["steps"] == 1.0 and r["mu"] < 1e-8 and r["lp"] < 1e-8, r
        else:
            assert r["steps"] < 0.8 and r["mu"] > 0.1, r


@pytest.mark.nuts
def test_same_seed_same_draws_other_seed_differs():
    kw = dict(num_chains=3, chain_method="vectorized", **SHORT)
    a = nuts.run_nuts(7, normal_means, dict(y=YN), **kw)
    b = nuts.run_nuts(jax.random.key(7), normal_means, dict(y=YN), **kw)
    c = nuts.run_nuts(8, normal_means, dict(y=YN), **kw)
    assert b.cache_hit and c.cache_hit
    np.testing.assert_array_equal(a.samples["mu"], b.samples["mu"])
    np.testing.assert_array_equal(a.stats["energy"], b.stats["energy"])
    assert not np.allclose(a.samples["mu"], c.samples["mu"])
    assert not np.allclose(a.samples["mu"][0], a.samples["mu"][1])  # chains differ from each other


@pytest.mark.nuts
def test_new_values_same_shape_hit_without_recompiling(compiles):
    nuts.run_nuts(0, normal_means, dict(y=YN), num_chains=1, **SHORT)  # compiled here or earlier
    traces, n_compiles = TRACES["n"], compiles["n"]
    run = nuts.run_nuts(1, normal_means, dict(y=YN + 3.0), num_chains=1, **SHORT)
    assert run.cache_hit and run.compile_s == 0.0
    assert TRACES["n"] == traces, "the model was traced again"
    assert compiles["n"] == n_compiles, "XLA compiled something"
    assert run.samples["mu"].mean() > YN.mean() + 2.0  # and the new values were used


@pytest.mark.nuts
def test_new_shape_or_static_value_misses():
    nuts.run_nuts(0, normal_means, dict(y=YN), num_chains=1, **SHORT)
    traces = TRACES["n"]
    run = nuts.run_nuts(0, normal_means, dict(y=YN[:, :2]), num_chains=1, **SHORT)
    assert not run.cache_hit and run.compile_s > 0 and TRACES["n"] > traces
    assert run.samples["mu"].shape == (1, SHORT["num_samples"], 2)
    again = nuts.run_nuts(1, normal_means, dict(y=YN[:, 1:]), num_chains=1, **SHORT)
    assert again.cache_hit
    # a static (Python float) value is part of the key; the same value hits
    miss = nuts.run_nuts(0, normal_means, dict(y=YN[:, :2], sigma=3.0), num_chains=1, **SHORT)
    hit = nuts.run_nuts(1, normal_means, dict(y=YN[:, :2], sigma=3.0), num_chains=1, **SHORT)
    assert not miss.cache_hit and hit.cache_hit
    assert miss.samples["mu"].std() > run.samples["mu"].std()  # sigma=3 was used
    # so are the sampler settings
    assert not nuts.run_nuts(0, normal_means, dict(y=YN[:, :2]), num_chains=1, target_accept=0.9,
                                **SHORT).cache_hit


def make_model(prior: Prior, scale: float = 1.0):
    """A factory: each call returns a new closure (over a dict holding a Prior)."""
    options = {"prior": prior, "scale": scale}

    def model(y):
        TRACES["n"] += 1
        mu = numpyro.sample("mu", options["prior"].distribution())
        with numpyro.plate("obs", y.shape[0]):
            numpyro.sample("y", dist.Normal(mu, options["scale"]), obs=y)

    return model


def test_structure_key_rules():
    p = Prior("Normal", loc=0.0, scale=2.0)
    key = model_key.structure_key
    assert key(make_model(p)) == key(make_model(Prior("Normal", loc=0.0, scale=2.0)))
    assert hash(key(make_model(p))) == hash(key(make_model(p)))
    assert key(make_model(p)) != key(make_model(p, scale=2.0))
    assert key(make_model(p)) != key(make_model(Prior("Normal", loc=1.0, scale=2.0)))
    assert key(make_model(p, 1)) != key(make_model(p, 1.0))  # int and float trace to different dtypes
    assert key(beta_binomial) is beta_binomial  # a module-level function: itself
    assert key(functools.partial(beta_binomial, a=1.0)) == key(functools.partial(beta_binomial, a=1.0))
    assert key(functools.partial(beta_binomial, a=1.0)) != key(functools.partial(beta_binomial, a=2.0))

    # a closure over a large array is keyed by the array's identity; over a small one by value
    def over(arr):
        return lambda y: arr[0] + y

    big = np.zeros(100_000)
    assert key(over(big)) == key(over(big))
    assert key(over(big)) != key(over(np.zeros(100_000)))
    assert key(over(np.arange(3.0))) == key(over(np.arange(3.0)))
    assert key(over(np.arange(3.0))) != key(over(np.arange(1.0, 4.0)))

    class Model:  # an explicit key wins
        __pragmodels_key__ = ("my-model", 1)

        def __call__(self, y):
            pass

    assert key(Model()) == key(Model())
    # the package's factories: equal options give equal keys
    from pragmodels.rsa_models import hierarchical_listener_model, speaker_model

    assert key(speaker_model()) == key(speaker_model())
    assert key(speaker_model()) != key(speaker_model(depth=2))
    assert key(hierarchical_listener_model()) == key(hierarchical_listener_model())


@pytest.mark.nuts
def test_factory_closures_share_one_entry():
    y = np.array([0.3, -0.2, 1.1, 0.4])
    first = nuts.run_nuts(0, make_model(Prior("Normal", loc=0.0, scale=3.0)), dict(y=y), num_chains=1, **SHORT)
    traces, size = TRACES["n"], compile_cache.cache_info()["size"]
    second = nuts.run_nuts(0, make_model(Prior("Normal", loc=0.0, scale=3.0)), dict(y=y), num_chains=1, **SHORT)
    assert second.cache_hit and TRACES["n"] == traces and compile_cache.cache_info()["size"] == size
    np.testing.assert_array_equal(first.samples["mu"], second.samples["mu"])


def test_lru_bound_and_clear_cache():
    """Log-likelihood programs are cheap to compile: they exercise the shared LRU cache."""
    compile_cache.clear_cache()
    compile_cache.set_cache_size(2)
    try:
        theta = np.full((1, 5, 3), 0.4)
        for k in (3, 2, 1):
            nuts.pointwise_log_likelihood(beta_binomial, {"theta": theta[..., :k]}, data(y=Y[:k], n=N[:k]))
        info = compile_cache.cache_info()
        assert info["size"] == 2 and info["misses"] == 3 and len(info["entries"]) == 2
        traces = TRACES["n"]
        nuts.pointwise_log_likelihood(beta_binomial, {"theta": theta[..., :1]}, data(y=Y[:1], n=N[:1]))
        assert TRACES["n"] == traces  # the newest is kept
        nuts.pointwise_log_likelihood(beta_binomial, {"theta": theta}, data())
        assert TRACES["n"] > traces  # the oldest was evicted
        # clearing drops the compiled programs and the models they hold
        model = make_model(Prior("Normal", loc=0.0, scale=1.0))
        nuts.pointwise_log_likelihood(model, {"mu": np.zeros((1, 4))}, dict(y=np.zeros(3)))
        ref = weakref.ref(model)
        del model
        compile_cache.clear_cache()
        gc.collect()
        assert compile_cache.cache_info()["size"] == 0 and compile_cache.cache_info()["hits"] == 0
        assert ref() is None, "something still holds the model after clear_cache"
    finally:
        compile_cache.set_cache_size(32)


def test_memory_bound_evicts_least_recently_used_by_charge():
    compile_cache.clear_cache()
    compile_cache.set_cache_size(max_mb=100)
    try:
        for i, mb in enumerate((40, 40, 30)):
            compile_cache.store(("probe", i), compile_cache.CompiledEntry("probe", f"p{i}", None, None, 0.0,
                                                                          nbytes=mb * 2**20))
        info = compile_cache.cache_info()
        assert info["size"] == 2 and info["memory_mb"] == 70 and info["max_mb"] == 100
        assert compile_cache.lookup(("probe", 0)) is None  # the oldest went first
        compile_cache.store(("probe", 3), compile_cache.CompiledEntry("probe", "big", None, None, 0.0,
                                                                      nbytes=500 * 2**20))
        info = compile_cache.cache_info()
        assert info["size"] == 1 and info["entries"] == ["big (500 MB)"]  # the newest always stays
    finally:
        compile_cache.set_cache_size(32, max_mb=512)
        compile_cache.clear_cache()


def test_store_charges_the_memory_grown_since_the_miss():
    compile_cache.clear_cache()
    try:
        key = ("probe", "grow")
        assert compile_cache.lookup(key) is None
        held = np.ones(64 * 2**20 // 8)  # 64 MB resident, as a compiled program would be
        compile_cache.store(key, compile_cache.CompiledEntry("probe", "grow", held, None, 0.0))
        assert 60 <= compile_cache.cache_info()["memory_mb"] <= 200
    finally:
        compile_cache.clear_cache()


@pytest.mark.parametrize("kwargs", [dict(maxsize=0), dict(maxsize=True), dict(max_mb=0), dict(max_mb=-5),
                                    dict(max_mb=float("inf")), dict(max_mb="512")])
def test_set_cache_size_rejects_bad_bounds(kwargs):
    with pytest.raises(ValueError, match="maxsize|max_mb"):
        compile_cache.set_cache_size(**kwargs)


@pytest.mark.nuts
def test_pointwise_log_likelihood_equals_numpyro():
    run = nuts.run_nuts(0, normal_means, dict(y=YN), num_chains=3, chain_method="vectorized", **SHORT)
    ll = nuts.pointwise_log_likelihood(normal_means, run, dict(y=YN), batch_size=7)
    assert set(ll) == {"y"} and ll["y"].shape == (3, SHORT["num_samples"], 20, 3)
    ref = numpyro.infer.log_likelihood(normal_means, {"mu": jnp.asarray(run.samples["mu"])}, y=YN, batch_ndims=2)
    np.testing.assert_allclose(ll["y"], ref["y"], rtol=1e-5, atol=1e-5)
    # deterministic sites in a plain dict are accepted (substituted by their own values)
    ll2 = nuts.pointwise_log_likelihood(normal_means, run.samples, dict(y=YN), batch_size=7)
    np.testing.assert_allclose(ll2["y"], ll["y"], rtol=1e-6)
    # repeat calls with new values reuse the program
    traces = TRACES["n"]
    nuts.pointwise_log_likelihood(normal_means, run, dict(y=YN + 1), batch_size=7)
    assert TRACES["n"] == traces


PARALLEL_SCRIPT = """
import json, numpy as np
import pragmodels.runtime as runtime; runtime.configure_host_devices(2)
import jax; jax.config.update("jax_enable_x64", True)
from pragmodels.inference import compile_cache, nuts
from tests.inference.test_nuts import normal_means, YN, SHORT
p = nuts.run_nuts(5, normal_means, dict(y=YN), num_chains=4, chain_method="parallel", **SHORT)
v = nuts.run_nuts(5, normal_means, dict(y=YN), num_chains=4, chain_method="vectorized", **SHORT)
q = nuts.run_nuts(6, normal_means, dict(y=YN), num_chains=4, chain_method="parallel", **SHORT)
odd = nuts.run_nuts(5, normal_means, dict(y=YN), num_chains=3, chain_method="parallel", **SHORT)
post_var = 1 / (1 / 4 + YN.shape[0])  # conjugate: prior N(0, 2^2), unit noise
post_mean = post_var * YN.sum(0)
z = (p.samples["mu"].mean((0, 1)) - post_mean) / np.sqrt(post_var / (p.samples["mu"].shape[0] * 20))
print(json.dumps(dict(devices=jax.local_device_count(), method=p.chain_method, used=p.devices,
                      steps=float((p.stats["n_steps"] == v.stats["n_steps"]).mean()),
                      diff=float(np.abs(p.samples["mu"] - v.samples["mu"]).max()),
                      z=float(np.abs(z).max()), hit=q.cache_hit, odd=odd.chain_method)))
"""


# `make test-all` (a fresh process, ~25 s): the default run fits 4 parallel chains on the tests' two
# devices in process (tests/inference/test_fitting.py: `fitted`, checked against the exact grid
# posterior) and checks the fallback for a chain count the devices do not divide (test_params.py)
@pytest.mark.slow
@pytest.mark.nuts
@pytest.mark.subprocess
def test_parallel_chains_on_two_devices():
    """In a fresh process with two CPU devices, in float64: 4 chains run 2 per device, near the
    conjugate posterior mean (within 5 MCSE, counting an ESS of half the draws), and they are the
    chains that 4 vectorized ones run: the same tree sizes and draws within 1e-8 (vmap over 2 and
    over 4 chains rounds differently; in float32 that flipped trajectories on some hosts, in float64
    it stays near 1e-12, see test_draws_equal_numpyro_mcmc); 3 chains (not divisible) run as on one
    CPU device, sequential."""
    res = _run_script(PARALLEL_SCRIPT)
    assert res["devices"] == 2 and res["method"] == "parallel" and res["used"] == 2, res
    assert res["hit"] and res["odd"] == "sequential", res  # as on one CPU device
    assert res["z"] < 5 and res["steps"] == 1.0 and res["diff"] < 1e-8, res


@pytest.mark.nuts
def test_init_params_and_errors():
    start = {"mu": jnp.array([[5.0, 5.0, 5.0], [-5.0, -5.0, -5.0], [0.0, 0.0, 0.0]])}  # leading chain axis
    run = nuts.run_nuts(0, normal_means, dict(y=YN), num_chains=3, chain_method="vectorized", init_params=start,
                           num_warmup=0, num_samples=SHORT["num_samples"])
    assert run.samples["mu"].shape == (3, SHORT["num_samples"], 3)
    # no warm-up and a unit step: chain 0 (started at +5) is still above chain 1 on its first draw
    assert run.samples["mu"][0, 0].mean() > run.samples["mu"][1, 0].mean()
    with pytest.raises(ValueError, match="leading chain axis"):
        nuts.run_nuts(0, normal_means, dict(y=YN), num_chains=3, init_params={"mu": jnp.zeros((2, 3))}, **SHORT)
    with pytest.raises(ValueError, match="chain_method"):
        nuts.run_nuts(0, normal_means, dict(y=YN), chain_method="threads", **SHORT)
    with pytest.raises(ValueError, match="init"):
        nuts.run_nuts(0, normal_means, dict(y=YN), init="optimize", **SHORT)
    for depth in (0, True, (10, 0), 2.5):  # issue 9, finding 17: max_tree_depth=0 was an IndexError
        with pytest.raises(ValueError, match=r"max_tree_depth must be an integer >= 1"):
            nuts.run_nuts(0, normal_means, dict(y=YN), max_tree_depth=depth, **SHORT)
    # a chain whose log density is not finite at its start (NaN data): a clear error, no recompiling
    bad = YN.copy()
    bad[0, 0] = np.nan
    with pytest.raises(RuntimeError, match="not finite at the starting point"):
        nuts.run_nuts(0, normal_means, dict(y=bad), num_chains=1, **SHORT)


@pytest.mark.nuts
def test_progress_bar_runs():
    run = nuts.run_nuts(0, normal_means, dict(y=YN), num_chains=3, chain_method="vectorized", progress_bar=True,
                           **SHORT)
    quiet = nuts.run_nuts(0, normal_means, dict(y=YN), num_chains=3, chain_method="vectorized", **SHORT)
    assert not run.cache_hit  # its own program (with a host callback)
    np.testing.assert_allclose(run.samples["mu"], quiet.samples["mu"], atol=2e-3)
