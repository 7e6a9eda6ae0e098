"""fit(): an exact grid posterior vs NUTS, DataTree structure, provenance, diagnostics, atomic saves."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import stats

import pragmodels as pm
from pragmodels.inference.diagnostics import FitDiagnosticsError, FitWarning
from pragmodels.inference.fitting import default_chain_method
from pragmodels.io.checksums import data_hash
from pragmodels.rsa_models import speaker_model
from pragmodels.semantics import boolean_semantics

# blue square, blue circle, green square; utterances blue, green, square, circle
LEX = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0]], float)
COST_DESIGN = np.array([[0.0], [0.0], [1.0], [0.0]])  # only "square" is costly
TRUE_ALPHA, TRUE_COST = 2.0, 0.5


def naive_speaker_logp(alpha, cost):
    """log S1(u | s) in plain NumPy: alpha, cost broadcastable arrays of shape B -> [*B, state, utterance]."""
    alpha = np.asarray(alpha, float)[..., None, None]
    cost = np.asarray(cost, float)[..., None, None]
    l0 = LEX / LEX.sum(1, keepdims=True)  # [u, s]
    with np.errstate(divide="ignore"):
        log_l0 = np.log(l0).T  # [s, u]
    ok = np.isfinite(log_l0)
    w = np.where(ok, alpha * (np.where(ok, log_l0, 0) - COST_DESIGN[:, 0] * cost), -np.inf)
    return w - np.logaddexp.reduce(w, axis=-1, keepdims=True)


# too short for the ESS floor; one compiled program (per data size) for the tests that fit with it
SHORT = dict(num_warmup=10, num_samples=12, num_chains=2, progress_bar=False)


@pytest.fixture(scope="module")
def speaker_data():
    rng = np.random.default_rng(2024)
    logp = naive_speaker_logp(np.array(TRUE_ALPHA), np.array(TRUE_COST))
    state = np.repeat(np.arange(3), 80)
    choice = np.array([rng.choice(4, p=np.exp(logp[s])) for s in state])
    return dict(log_semantics=boolean_semantics(LEX), state=state, choice=choice, cost_design=COST_DESIGN)


@pytest.fixture(scope="module")
def fitted(speaker_data):
    model = speaker_model(priors={"lapse": 0.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitWarning)  # this fit must be clean
        return pm.fit(11, model, speaker_data, num_warmup=1000, num_samples=2000, num_chains=4,
                      progress_bar=False)


def grid_posterior(data):
    alpha = np.linspace(1e-3, 8, 801)
    cost = np.linspace(0, 6, 1201)
    logp = naive_speaker_logp(alpha[:, None], cost[None, :])  # [A, C, s, u]
    loglik = logp[:, :, data["state"], data["choice"]].sum(-1)
    logpost = (loglik + stats.lognorm(s=1.0, scale=np.exp(0.5)).logpdf(alpha)[:, None]
               + stats.halfnorm(scale=2.0).logpdf(cost)[None, :])
    post = np.exp(logpost - logpost.max())
    post /= post.sum()
    return alpha, cost, post


def grid_quantile(values, mass, q):
    cdf = np.cumsum(mass)
    return float(np.interp(q, cdf, values))


@pytest.mark.nuts
@pytest.mark.slow  # statistical; NUTS against an exact posterior in the default tier: tests/inference/test_nuts.py
def test_nuts_matches_exact_grid_posterior(fitted, speaker_data):
    """NUTS quantiles vs quantiles of the posterior enumerated on an 801 x 1201 grid.

    Tolerance: 4 Monte Carlo standard errors of each quantile (arviz-stats mcse, quantile
    method) plus one grid step; a correct sampler fails one of six checks with p ~ 4e-4.
    """
    from arviz_stats import mcse

    alpha, cost, post = grid_posterior(speaker_data)
    assert post[-5:, :].sum() < 1e-6 and post[:, -5:].sum() < 1e-6  # grid covers the posterior
    marg = {"alpha": (alpha, post.sum(1)), "cost_weight": (cost, post.sum(0))}
    for name, (grid, mass) in marg.items():
        draws = fitted["posterior"][name].values.reshape(-1)
        for q in (0.05, 0.5, 0.95):
            se = float(mcse(fitted, var_names=[name], method="quantile", prob=q)[name].values.reshape(-1)[0])
            got, want = float(np.quantile(draws, q)), grid_quantile(grid, mass, q)
            step = grid[1] - grid[0]
            assert abs(got - want) < 4 * se + step, (name, q, got, want, se)
    # and the truth is recovered within the posterior's 95% interval
    a = fitted["posterior"]["alpha"].values
    assert np.quantile(a, 0.025) < TRUE_ALPHA < np.quantile(a, 0.975)


@pytest.mark.nuts
def test_datatree_groups_dims_and_provenance(fitted, speaker_data):
    for group in ("posterior", "sample_stats", "log_likelihood", "posterior_predictive", "observed_data"):
        assert group in fitted.children, group
    assert fitted["log_likelihood"]["choice"].dims == ("chain", "draw", "trial")
    assert fitted["posterior_predictive"]["choice"].shape == (4, 2000, 240)
    assert fitted["observed_data"]["choice"].values.tolist() == speaker_data["choice"].tolist()
    # posterior predictive frequencies track the observed ones (240 trials; 0.08 ~ 3 binomial sd)
    pp = fitted["posterior_predictive"]["choice"].values.reshape(-1, 240)
    for u in range(4):
        assert abs((pp == u).mean() - (speaker_data["choice"] == u).mean()) < 0.08
    attrs = fitted.attrs
    assert attrs["data_sha256"] == data_hash(speaker_data)
    assert json.loads(attrs["seed"]) == 11
    assert json.loads(attrs["sampler_settings"])["num_samples"] == 2000
    assert json.loads(attrs["priors"]) == {"alpha": {"family": "LogNormal", "loc": 0.5, "scale": 1.0},
                                           "cost_weight": {"family": "HalfNormal", "scale": 2.0},
                                           "lapse": {"fixed": 0.0}}
    settings = json.loads(attrs["sampler_settings"])
    assert settings["chain_method"] == default_chain_method() and settings["chain_method_requested"] == "auto"
    assert (settings["devices"] > 1) == (settings["chain_method"] == "parallel")
    assert settings["mass_matrix"] == "adapt"  # the default (test_laplace_mass.py: the other value)
    assert fitted["posterior"]["cost_weight"].dims == ("chain", "draw", "cost_term")
    assert attrs["model"].startswith("rsa_speaker(depth=1")
    assert attrs["pragmodels_version"] == pm.__version__


@pytest.mark.nuts
def test_netcdf_roundtrip_and_atomic_overwrite(fitted, tmp_path):
    path = tmp_path / "fit.nc"
    pm.save_netcdf(fitted, path)
    back = pm.load_netcdf(path)
    np.testing.assert_array_equal(back["posterior"]["alpha"].values, fitted["posterior"]["alpha"].values)
    assert back.attrs["data_sha256"] == fitted.attrs["data_sha256"]
    before = path.read_bytes()
    broken = fitted.copy()
    broken.attrs["unserialisable"] = {"a": object()}
    with pytest.raises(Exception):  # noqa: B017 - whatever the netCDF encoder raises
        pm.save_netcdf(broken, path)
    assert path.read_bytes() == before  # the good file survived
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.nc"]  # no temp files left


@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # a bad fit on purpose: its other warnings are expected
@pytest.mark.nuts
def test_bad_fit_warns_and_strict_fit_writes_nothing(speaker_data, tmp_path):
    model = speaker_model(priors={"lapse": 0.0})
    with pytest.warns(FitWarning, match="ESS"):  # SHORT: the program test_refit_with_another_data_size... reuses
        pm.fit(3, model, speaker_data, **SHORT)
    with pytest.warns(FitWarning, match="hit max_tree_depth=1"):
        pm.fit(3, model, speaker_data, num_warmup=50, num_samples=50, num_chains=2, max_tree_depth=1,
               progress_bar=False)
    out = tmp_path / "good.nc"
    out.write_bytes(b"earlier good result")
    with pytest.raises(FitDiagnosticsError, match="ESS"):
        pm.fit(3, model, speaker_data, strict=True, out=out, **SHORT)
    assert out.read_bytes() == b"earlier good result"


def test_fit_rejects_bad_input_by_name(speaker_data):
    model = speaker_model(priors={"lapse": 0.0})
    bad = dict(speaker_data, choice=np.where(np.arange(240) == 7, 9, speaker_data["choice"]))
    with pytest.raises(ValueError, match=r"choice\[7\] = 9; expected an integer utterance index in 0..3"):
        pm.fit(0, model, bad, num_warmup=5, num_samples=5, progress_bar=False)
    with pytest.raises(ValueError, match="chain_method must be one of"):
        pm.fit(0, model, speaker_data, chain_method="threads")
    with pytest.raises(TypeError, match="rng_key must be an int seed"):
        pm.fit("seed", model, speaker_data)
    with pytest.raises(ValueError, match="no observed sites"):
        pm.fit(0, model, dict(speaker_data, choice=None))
    with pytest.raises(ValueError, match=r"no parameter 'beta' in this model"):
        pm.inspect_model(speaker_model(priors={"beta": pm.Prior("Normal", loc=0, scale=1)}), speaker_data)
    with pytest.raises(ValueError, match="unknown prior family 'Normall'"):
        pm.Prior("Normall", loc=0, scale=1)


@pytest.mark.subprocess
def test_persistent_compilation_cache_is_written(tmp_path):
    """The cache is switched on by an explicit call (reading PRAGMODELS_COMPILATION_CACHE), never
    by the import alone (tests/test_params.py checks that)."""
    code = ("import jax, jax.numpy as jnp, pragmodels as pm; pm.enable_compilation_cache();"
            "print(jax.jit(pm.pragmatic_listener)(jnp.zeros((3, 4)), 2.0).sum())")
    env = dict(os.environ, PRAGMODELS_COMPILATION_CACHE=str(tmp_path / "cache"))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    assert any((tmp_path / "cache").iterdir())


@pytest.mark.nuts
def test_refit_with_another_data_size_in_one_process(speaker_data):
    """Regression: a kernel cached for one data size must not be reused for another (the
    social-meaning main job fitted 1,440 ratings, then 1,342, and numpyro failed inside vmap)."""
    model = speaker_model(priors={"lapse": 0.0})
    small = {k: (v[:200] if k in ("state", "choice") else v) for k, v in speaker_data.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        a = pm.fit(1, model, speaker_data, **SHORT)
        b = pm.fit(1, model, small, **SHORT)
        c = pm.fit(1, model, speaker_data, **SHORT)
    assert a["observed_data"]["choice"].size == 240 and b["observed_data"]["choice"].size == 200
    # the same shapes reuse the cached kernel and, with the same seed, give the same draws
    np.testing.assert_array_equal(a["posterior"]["alpha"].values, c["posterior"]["alpha"].values)


def _two_basins(y):
    """x ~ N(-4, 3) a priori (median -4) times a bump density: a minor basin at -4 (sd 0.3,
    relative mass 1e-6) and the main one at +4 (sd 0.5); between them the log density falls
    ~30 nats, so NUTS never crosses. The observation is almost uninformative (sd 100)."""
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import logsumexp

    x = numpyro.sample("x", dist.Normal(-4.0, 3.0))
    numpyro.factor("bumps", logsumexp(np.log([1e-6, 1.0]) + dist.Normal(np.array([-4.0, 4.0]), np.array([0.3, 0.5])).log_prob(x)))
    numpyro.sample("y", dist.Normal(x, 100.0), obs=y)


@pytest.mark.nuts
def test_optimize_init_starts_chains_in_the_dominant_basin():
    """Against the known answer: the posterior mass is ~1 - 1e-6 in the basin at +4 (the prior
    tilts it to a normal with mean 3.78). Started near the prior median (-4), a chain stays in the
    minor basin (the negative control: the check can fail); with init="optimize", all chains sample the
    main one, and the recorded optima show both basins (16 starts in (-2, 2) reach both)."""
    data = dict(y=np.array(0.0))
    kw = dict(num_warmup=200, num_samples=300, num_chains=2, progress_bar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        stuck = pm.fit(0, _two_basins, data, init="median", **kw)
        good = pm.fit(0, _two_basins, data, init="optimize", **kw)
    assert np.any(np.abs(stuck["posterior"]["x"].values.mean(axis=1) + 4.0) < 0.3)  # a chain trapped at -4
    x = good["posterior"]["x"].values
    # main basin: N(-4, 3) x N(4, 0.5) = N(m, s) with precision 1/9 + 4; sd of a chain mean ~0.03-0.06
    m = (-4 / 9 + 4 * 4) / (1 / 9 + 4)
    assert np.all(np.abs(x.mean(axis=1) - m) < 0.15), (x.mean(axis=1), m)
    optima = json.loads(good.attrs["init_optima"])
    assert optima["n_starts"] == 16 and optima["n_failed"] == 0
    # the gap between the basins' peaks, exactly on a grid (the optimiser stops within ~0.05 nats)
    grid = np.linspace(-8, 8, 160_001)
    logp = stats.norm.logpdf(grid, -4, 3) + np.logaddexp(np.log(1e-6) + stats.norm.logpdf(grid, -4, 0.3),
                                                         stats.norm.logpdf(grid, 4, 0.5))
    gap = logp[grid > 0].max() - logp[grid < 0].max()
    assert optima["gap_to_next_basin"] == pytest.approx(gap, abs=0.1), (optima, gap)
    assert json.loads(stuck.attrs["init_optima"]) is None


def test_multistart_rejects_bad_settings_by_name():
    import jax

    from pragmodels.inference.multistart import multistart_inits

    with pytest.raises(ValueError, match="n_starts must be an integer >= 1; got 0"):
        multistart_inits(jax.random.key(0), _two_basins, dict(y=np.array(0.0)), 2, n_starts=0)
    with pytest.raises(ValueError, match="lr must be > 0; got -1"):
        multistart_inits(jax.random.key(0), _two_basins, dict(y=np.array(0.0)), 2, lr=-1)
    with pytest.raises(ValueError, match="init must be one of"):
        pm.fit(0, _two_basins, dict(y=np.array(0.0)), init="map")


def test_multistart_draws_numpyros_uniform_starts_and_compiles_them_once():
    """The starts are NumPyro's ``init_to_uniform(radius=2)`` for the same keys (its eager search,
    the reference), constrained sites included; the compiled search traces the model once per model
    and shape, not once per call (eagerly it was traced and compiled again on every fit)."""
    import jax
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import init_to_uniform
    from numpyro.infer.util import initialize_model

    from pragmodels.inference import multistart

    calls = []

    def model(y):
        calls.append(1)
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        sd = numpyro.sample("sd", dist.HalfNormal(1.0))
        w = numpyro.sample("w", dist.Dirichlet(np.ones(3)))
        numpyro.sample("y", dist.Normal(mu + w[0], sd), obs=y)

    kw = dict(y=np.array([0.3, -0.2]))
    for seed in (3, 4):
        keys = jax.random.split(jax.random.key(seed), 5)
        eager = initialize_model(keys, model, model_kwargs=kw, init_strategy=init_to_uniform(radius=2.0)).param_info.z
        before = len(calls)
        compiled = multistart._starts(model, keys, kw)
        assert set(compiled) == {"mu", "sd", "w"} and compiled["w"].shape == (5, 2)  # unconstrained simplex
        for site in eager:
            np.testing.assert_allclose(compiled[site], eager[site], rtol=1e-6, atol=1e-6)
            assert np.all(np.abs(np.asarray(compiled[site])) < 2.0)
        traced = len(calls) - before
        assert traced > 0 if seed == 3 else traced == 0  # the second call runs the compiled program


@pytest.mark.parametrize("dense_mass, bad", [([("alpha", "nope")], "nope"), ([("choice",)], "choice")])
def test_dense_mass_naming_a_site_the_model_does_not_sample_is_refused(dense_mass, bad):
    from pragmodels.rsa_models import listener_model
    sem = pm.semantics.boolean_semantics([[1, 1, 0], [0, 0, 1]])
    data = dict(log_semantics=sem, utterance=np.array([0, 1]), choice=np.array([0, 2]))
    with pytest.raises(ValueError, match=rf"dense_mass names \['{bad}'\].*sampled sites are \['alpha', 'lapse'\]"):
        pm.fit(0, listener_model(), data, dense_mass=dense_mass, num_warmup=10, num_samples=10, num_chains=1,
               progress_bar=False)


@pytest.mark.parametrize("seed", [-1, 2**32, -(2**40)])
def test_a_seed_outside_the_configs_range_is_refused(seed):
    from pragmodels.inference.nuts import MAX_SEED
    from pragmodels.runs.schema import StudyConfig
    assert StudyConfig.model_fields["seed"].metadata[-1].le == MAX_SEED  # the CLI and the library agree
    with pytest.raises(ValueError, match=rf"int seed in \[0, 2\*\*32 - 1\].*got {seed}"):
        pm.fit(seed, lambda y: None, dict(y=np.zeros(2)), num_warmup=10, num_samples=10, progress_bar=False)


def test_the_default_chain_method_follows_the_devices(monkeypatch):
    """Several devices: parallel; one GPU: vectorized (one launch per operation for all chains); one CPU
    device: sequential (benchmarks/results/chain_method.md: it compiles faster and runs no slower)."""
    import jax

    for n, backend, expected in ((2, "cpu", "parallel"), (4, "gpu", "parallel"), (1, "gpu", "vectorized"),
                                 (1, "cpu", "sequential")):
        monkeypatch.setattr(jax, "local_device_count", lambda n=n: n)
        monkeypatch.setattr(jax, "default_backend", lambda b=backend: b)
        assert default_chain_method() == expected, (n, backend)
    # parallel where the devices cannot split the chains runs as one device of the backend would
    from pragmodels.inference.nuts import _layout

    for n, backend, chains, expected in ((1, "cpu", 4, ("sequential", 1)), (1, "gpu", 4, ("vectorized", 1)),
                                         (2, "cpu", 3, ("sequential", 1)), (2, "gpu", 3, ("vectorized", 1)),
                                         (3, "cpu", 4, ("parallel", 2)), (2, "gpu", 1, ("single", 1))):
        monkeypatch.setattr(jax, "local_device_count", lambda n=n: n)
        monkeypatch.setattr(jax, "default_backend", lambda b=backend: b)
        assert _layout("parallel", chains) == expected, (n, backend, chains)
