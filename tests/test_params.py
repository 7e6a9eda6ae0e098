"""Declared parameters, priors read from the trace, dims, overrides, un-observed predictive, LOO."""

import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers

import pragmodels as pm
from pragmodels.inference import diagnostics
from pragmodels.inference.predictive import unobserve
from pragmodels.rsa_models import hierarchical_listener_model, speaker_model
from pragmodels.simulate import reference_game_speaker

QUICK = dict(num_warmup=150, num_samples=150, num_chains=2, progress_bar=False)


def _trace(model, **data):
    return handlers.trace(handlers.seed(model, 0)).get_trace(**data)


def test_prior_specs_are_validated_hashable_and_round_trip():
    p = pm.Prior("Normal", loc=[0.0, 1.0, 2.0], scale=1.0)
    assert p.shape() == (3,)
    assert pm.Prior("Dirichlet", concentration=[4.0] * 6).shape() == (6,)
    assert pm.Prior.from_dict(p.to_dict()) == p and hash(pm.Prior.from_dict(p.to_dict())) == hash(p)
    assert json.loads(json.dumps(p.to_dict())) == {"family": "Normal", "loc": [0.0, 1.0, 2.0], "scale": 1.0}
    with pytest.raises(ValueError, match=r"Prior\('HalfNormal', scale=-1\) is invalid: scale must be > 0"):
        pm.Prior("HalfNormal", scale=-1)
    with pytest.raises(ValueError, match=r"unknown prior family 'Normall' \(did you mean 'Normal'\?\)"):
        pm.Prior("Normall", loc=0, scale=1)
    with pytest.raises(ValueError, match=r"takes parameters \['loc', 'scale'\]; got \['loc'\]"):
        pm.Prior("Normal", loc=0)
    with pytest.raises(ValueError, match="loc = nan must be finite"):
        pm.Prior("Normal", loc=float("nan"), scale=1)
    with pytest.raises(TypeError, match="not a bool"):
        pm.Prior("Normal", loc=True, scale=1)


@pytest.mark.subprocess
def test_importing_pragmodels_changes_no_global_state():
    code = ("import os; import pragmodels, pragmodels.rsa_models, pragmodels.inference.fitting; "
            "from jax._src import xla_bridge; import jax; "
            "print(os.environ.get('XLA_FLAGS'), xla_bridge.backends_are_initialized(), "
            "jax.config.jax_compilation_cache_dir)")
    env = {k: v for k, v in __import__("os").environ.items() if k != "XLA_FLAGS"}
    env["PRAGMODELS_COMPILATION_CACHE"] = "/tmp/should-not-be-used"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["None", "False", "None"], out.stdout + out.stderr


def array_model(y=None):
    w = pm.param("w", pm.Prior("Dirichlet", concentration=[2.0, 2.0, 2.0]), dims={"attribute": 4, "gap": 3})
    beta = pm.param("beta", pm.Prior("Normal", loc=[0.0, 1.0], scale=1.0), dims={"feature": 2})
    with numpyro.plate("scenario", 5):
        zeta = pm.param("zeta", pm.Prior("Normal", loc=0.0, scale=1.0))
    pm.deterministic("total", w.sum(-1)[:, None] + beta[None, :], dims={"attribute": 4, "feature": 2})
    with numpyro.plate("trial", 6):
        numpyro.sample("y", dist.Normal(zeta.sum() + beta.sum(), 1.0), obs=y)


def test_param_shapes_dims_and_simplex():
    tr = _trace(array_model, y=np.zeros(6))
    assert tr["w"]["value"].shape == (4, 3)
    np.testing.assert_allclose(np.asarray(tr["w"]["value"]).sum(-1), 1.0, rtol=1e-5)
    assert tr["beta"]["value"].shape == (2,) and tr["zeta"]["value"].shape == (5,)
    info = pm.inspect_model(array_model, dict(y=np.zeros(6)))
    assert info.dims == {"w": ["attribute", "gap"], "beta": ["feature"], "zeta": ["scenario"],
                         "total": ["attribute", "feature"], "y": ["trial"]}
    assert info.priors["w"] == pm.Prior("Dirichlet", concentration=[2.0, 2.0, 2.0])
    assert info.observed == ["y"] and info.deterministic == ["total"]


def test_param_rejects_unnamed_or_mismatched_axes_by_name():
    def no_dims():
        pm.param("beta", pm.Prior("Normal", loc=[0.0, 1.0], scale=1.0))

    with pytest.raises(ValueError, match=r"parameter 'beta': its prior .* has shape \(2,\); name the axes"):
        _trace(no_dims)

    def wrong_event():
        pm.param("w", pm.Prior("Dirichlet", concentration=[1.0, 1.0]), dims={"gap": 3})

    with pytest.raises(ValueError, match=r"parameter 'w': dims \{'gap': 3\} do not end in the prior's event shape \(2,\)"):
        _trace(wrong_event)

    def bad_size():
        pm.param("a", pm.Prior("Normal", loc=0.0, scale=1.0), dims={"item": 0})

    with pytest.raises(ValueError, match=r"'a': dims\['item'\] = 0; expected a positive int"):
        _trace(bad_size)


def _speaker_data(lapse=0.0):
    data = reference_game_speaker(seed=3, n_per_state=60, alpha=2.0, cost=0.5, lapse=lapse)
    return data[0] if isinstance(data, tuple) else data


def test_recorded_priors_are_what_was_sampled():
    """The old factories recorded a cost_weight prior even when no cost was sampled; now the
    record is read from the trace."""
    data = _speaker_data()
    no_cost = {k: v for k, v in data.items() if k != "cost_design"}
    info = pm.inspect_model(speaker_model(), no_cost)
    assert set(info.priors) == {"alpha", "lapse"}
    info = pm.inspect_model(speaker_model(), data)
    assert set(info.priors) == {"alpha", "cost_weight", "lapse"}
    assert info.dims["cost_weight"] == ["cost_term"] and info.dims["cost"] == ["utterance"]


@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short chains: convergence is not checked here
@pytest.mark.nuts
def test_fit_overrides_priors_fixes_parameters_and_records_them():
    data = _speaker_data()
    new = pm.Prior("LogNormal", loc=1.0, scale=0.3)
    tree = pm.fit(0, speaker_model(), data, priors={"alpha": new, "lapse": 0.0}, **QUICK)
    rec = json.loads(tree.attrs["priors"])
    assert rec["alpha"] == new.to_dict() and rec["lapse"] == {"fixed": 0.0}
    assert "lapse" not in tree["posterior"].data_vars
    assert tree["posterior"]["cost_weight"].dims == ("chain", "draw", "cost_term")
    assert tree["posterior"]["cost"].dims == ("chain", "draw", "utterance")
    # a config-style dict works the same; a misspelt name is an error that suggests the right one
    tree2 = pm.fit(0, speaker_model(priors={"alpha": new.to_dict()}), data, priors={"lapse": 0.0}, **QUICK)
    np.testing.assert_array_equal(tree2["posterior"]["alpha"], tree["posterior"]["alpha"])
    with pytest.raises(ValueError, match=r"priors\['alpah'\]: no parameter 'alpah' in this model \(did you mean 'alpha'\?\)"):
        pm.fit(0, speaker_model(), data, priors={"alpah": new}, **QUICK)
    with pytest.raises(ValueError, match=r"no parameter 'beta'"):
        pm.fit(0, speaker_model(priors={"beta": new}), data, **QUICK)
    with pytest.raises(TypeError, match=r"priors\['alpha'\] = 'wide'; expected a pragmodels.Prior"):
        pm.fit(0, speaker_model(), data, priors={"alpha": "wide"}, **QUICK)


def test_group_effect_names_its_dims_and_records_its_priors():
    sem = pm.semantics.boolean_semantics([[1, 1, 0], [0, 1, 1]])
    data = dict(log_semantics=sem, item=np.array([0, 1, 2, 2]), utterance=np.array([0, 1, 0, 1]),
                choice=np.array([0, 2, 1, 1]), n_items=3)
    info = pm.inspect_model(hierarchical_listener_model(), data)
    assert set(info.priors) == {"alpha_mu", "alpha_sigma", "alpha_z", "lapse"}
    assert info.priors["alpha_z"] == pm.params.STANDARD_NORMAL
    assert info.dims["alpha"] == ["item"] and info.dims["alpha_z"] == ["item"]
    tr = _trace(hierarchical_listener_model(), **data)
    np.testing.assert_allclose(tr["alpha"]["value"],
                               np.exp(tr["alpha_mu"]["value"] + tr["alpha_sigma"]["value"] * tr["alpha_z"]["value"]),
                               rtol=1e-6)
    with pytest.raises(ValueError, match=r"link='log'; expected one of"):
        _trace(lambda: pm.group_effect("a", dim="item", size=2, loc=0.0, scale=1.0, link="log"))


def _groups(centred, link="identity"):
    def model(y=None):
        a = pm.group_effect("a", dim="group", size=3, loc=pm.Prior("Normal", loc=0.0, scale=1.0),
                            scale=pm.Prior("LogNormal", loc=0.0, scale=0.5), link=link, centred=centred)
        numpyro.sample("y", dist.Normal(a, 0.1).to_event(1), obs=y)
    return model


def test_centred_group_effect_samples_the_effect_itself_with_the_same_density():
    """Centred: the effect is the sampled site, recorded as hierarchical (not as a free prior or
    an undeclared site); its joint density is the non-centred one's after the change of variables
    z = (a - mu) / sigma, whose Jacobian is -3 log sigma (checked to 1e-4)."""
    y = jnp.array([0.3, -0.2, 1.1])
    info = pm.inspect_model(_groups(True), dict(y=y))
    assert set(info.priors) == {"a_mu", "a_sigma"} and info.hierarchical == {"a": "Normal(loc=a_mu, scale=a_sigma)"}
    assert info.dims["a"] == ["group"] and "a" in info.latent and not info.undeclared
    assert info.priors_record()["a"] == {"hierarchical": "Normal(loc=a_mu, scale=a_sigma)"}
    from numpyro.infer.util import log_density
    mu, sigma, a = 0.4, 0.7, jnp.array([0.1, 0.5, 1.3])
    lc, _ = log_density(_groups(True), (), dict(y=y), dict(a_mu=mu, a_sigma=sigma, a=a))
    ln, _ = log_density(_groups(False), (), dict(y=y), dict(a_mu=mu, a_sigma=sigma, a_z=(a - mu) / sigma))
    np.testing.assert_allclose(float(lc), float(ln) - 3 * np.log(sigma), atol=1e-4)
    tr = _trace(_groups(True, link="exp"), y=y)  # another link: the latent is sampled, the effect derived
    np.testing.assert_allclose(tr["a"]["value"], np.exp(tr["a_latent"]["value"]), rtol=1e-6)
    with pytest.raises(ValueError, match=r"'a': dims\['group'\] = 0"):
        _trace(lambda: pm.group_effect("a", dim="group", size=0, loc=0.0, scale=1.0, centred=True))


def _scaled(scaled: bool, prior=pm.Prior("Normal", loc=0.5, scale=2.0)):  # noqa: B008 - a frozen Prior
    def model(y):
        s = pm.param("s", pm.Prior("LogNormal", loc=0.0, scale=0.5), dims={"k": 3})
        if scaled:
            b = pm.scaled_param("b", prior, unit=s, unit_name="s", site="b_in_s", dims={"k": 3})
        else:
            b = pm.param("b", prior, dims={"k": 3})
        numpyro.sample("y", dist.Normal(b / s, 1.0).to_event(1), obs=y)
    return model


@pytest.mark.parametrize("prior", [pm.Prior("Normal", loc=0.5, scale=2.0), pm.Prior("HalfNormal", scale=1.5),
                                   pm.Prior("Gamma", concentration=2.0, rate=3.0),
                                   pm.Prior("StudentT", df=4.0, loc=-1.0, scale=0.5),
                                   pm.Prior("LogNormal", loc=-0.7, scale=0.75)])
def test_scaled_param_has_the_prior_and_posterior_of_the_plain_parameter(prior):
    """``b = s * b_in_s`` with ``b_in_s`` sampled from the prior of ``b`` rescaled by ``s``: the
    joint density of ``(s, b_in_s)`` is that of ``(s, b)`` times the Jacobian ``prod s`` of
    ``b = s * b_in_s`` (checked to 1e-4 at a point where the unit is far from 1), so prior and
    posterior are those of the plain parameter."""
    from numpyro.infer.util import log_density
    y = jnp.array([0.3, -0.2, 1.1])
    s, b = jnp.array([0.4, 1.0, 2.5]), jnp.array([0.9, 0.2, 1.7])
    ls, _ = log_density(_scaled(True, prior), (), dict(y=y), dict(s=s, b_in_s=b / s))
    lp, _ = log_density(_scaled(False, prior), (), dict(y=y), dict(s=s, b=b))
    np.testing.assert_allclose(float(ls), float(lp) + float(jnp.log(s).sum()), atol=1e-4)
    tr = _trace(_scaled(True, prior), y=y)
    np.testing.assert_allclose(tr["b"]["value"], tr["s"]["value"] * tr["b_in_s"]["value"], rtol=1e-6)


def test_scaled_param_is_recorded_and_overridden_under_its_parameter_name():
    y = jnp.array([0.3, -0.2, 1.1])
    info = pm.inspect_model(_scaled(True), dict(y=y))
    assert info.scaled == {"b_in_s": {"parameter": "b", "unit": "s"}} and "b" in info.deterministic
    assert "b_in_s" in info.latent and info.dims["b_in_s"] == ["k"]
    assert info.priors_record()["b_in_s"] == {"prior_of": "b", "divided_by": "s", "family": "Normal",
                                              "loc": 0.5, "scale": 2.0}
    # an override of ``b`` applies to the scaled site; the site's own name is not a parameter
    over = pm.inspect_model(_scaled(True), dict(y=y), priors={"b": pm.Prior("Normal", loc=0.0, scale=0.1)})
    assert over.priors["b_in_s"] == pm.Prior("Normal", loc=0.0, scale=0.1)
    with pytest.raises(ValueError, match=r"priors\['b_in_s'\]: no parameter 'b_in_s'.*did you mean 'b'"):
        pm.inspect_model(_scaled(True), dict(y=y), priors={"b_in_s": pm.Prior("Normal", loc=0.0, scale=0.1)})
    fixed = pm.inspect_model(_scaled(True), dict(y=y), priors={"b": 0.25})  # a number fixes b itself
    assert fixed.fixed == {"b": 0.25} and not fixed.scaled
    with pytest.raises(ValueError, match=r"scaled_param 'b'.*Beta.*not a scale family"):
        _trace(_scaled(True, pm.Prior("Beta", concentration1=1.0, concentration0=2.0)), y=y)
    with pytest.raises(ValueError, match=r"unit 'u' \(shape \(2,\)\) does not broadcast to dims \{'k': 3\}"):
        _trace(lambda: pm.scaled_param("b", pm.Prior("Normal", loc=0.0, scale=1.0), unit=jnp.ones(2),
                                       unit_name="u", site="b_u", dims={"k": 3}))


def plain_model(x, y=None):
    """A plain NumPyro model: no pragmodels observation site."""
    b = numpyro.sample("b", dist.Normal(0.0, 2.0))
    with numpyro.plate("obs", x.shape[0]):
        numpyro.sample("y", dist.Normal(b * x, 0.5), obs=y)


@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short chains: convergence is not checked here
@pytest.mark.nuts
def test_posterior_predictive_of_a_plain_numpyro_model_is_a_fresh_draw():
    """Before: NumPyro's Predictive returned y itself in every draw. Each predictive draw is
    b x + N(0, 0.5); its spread around the observations must be that noise, so the mean
    absolute deviation from y is about 0.5 * sqrt(2/pi) + posterior spread, far from 0."""
    rng = np.random.default_rng(0)
    x = np.linspace(-1, 1, 40)
    y = 1.5 * x + 0.5 * rng.standard_normal(40)
    tree = pm.fit(0, plain_model, dict(x=x, y=y), **QUICK)
    pp = tree["posterior_predictive"]["y"].values
    assert pp.shape == (2, 150, 40)
    assert not np.any(np.all(pp == y, axis=-1))
    resid = pp - tree["posterior"]["b"].values[..., None] * x
    assert abs(resid.std() - 0.5) < 0.05  # 12,000 draws: sd of the sd estimate ~0.003; loose for safety
    assert json.loads(tree.attrs["priors"]) == {"b": {"undeclared": "Normal(loc=0, scale=2)"}}


def test_unobserve_handler_frees_every_observed_site():
    tr = handlers.trace(handlers.seed(unobserve(plain_model), 1)).get_trace(np.ones(5), np.zeros(5))
    assert not tr["y"]["is_observed"] and tr["y"]["infer"]["was_observed"]
    assert not np.allclose(tr["y"]["value"], 0.0)


def two_site_model(sem, n_prod, n_comp, prod=None, comp=None):
    alpha = pm.param("alpha", pm.Prior("LogNormal", loc=0.5, scale=1.0))
    lapse = pm.param("lapse", pm.Prior("Beta", concentration1=1.0, concentration0=19.0))
    pm.likelihoods.choice_counts("production", pm.pragmatic_speaker(sem, alpha), prod, dim="state", lapse=lapse)
    pm.likelihoods.choice_counts("comprehension", pm.pragmatic_listener(sem, alpha), comp, dim="utterance",
                                 lapse=lapse)


# 6 observations: arviz-stats warns of large Pareto k; what is checked is how the two sites are joined
@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short chains: convergence is not checked here
@pytest.mark.nuts
def test_loo_of_a_model_with_two_observation_sites():
    from arviz_stats import loo as az_loo

    sem = pm.semantics.boolean_semantics([[1, 1, 0], [0, 1, 1], [0, 0, 1]])
    prod = np.array([[28, 1, 1], [12, 18, 0], [0, 5, 25]])  # zero counts of false utterances: finite (0 log 0 = 0)
    comp = np.array([[25, 5, 0], [0, 20, 10], [0, 0, 30]])
    tree = pm.fit(0, two_site_model, dict(sem=sem, n_prod=3, n_comp=3, prod=prod, comp=comp), **QUICK)
    with pytest.raises(Exception, match="several log likelihood"):
        az_loo(tree)
    res = pm.loo(tree)
    joint = pm.joint_log_likelihood(tree)["log_likelihood"]["joint"]
    assert joint.sizes["observation"] == 6
    assert {"production[0]", "production[2]", "comprehension[1]"} <= set(joint.observation.values.tolist())
    total = tree["log_likelihood"]["production"].sum("state") + tree["log_likelihood"]["comprehension"].sum("utterance")
    np.testing.assert_allclose(joint.sum("observation"), total, rtol=1e-5)
    assert np.isfinite(res.elpd) and res.n_data_points == 6
    one = pm.loo(tree, sites=["production"])
    assert one.n_data_points == 3
    with pytest.raises(ValueError, match="same dims"):
        pm.loo(tree, how="sum")


def test_a_plain_numpyro_site_can_be_given_another_prior():
    info = pm.inspect_model(plain_model, dict(x=np.ones(3), y=np.zeros(3)),
                            priors={"b": pm.Prior("Normal", loc=5.0, scale=0.01)})
    assert info.priors["b"] == pm.Prior("Normal", loc=5.0, scale=0.01)
    tr = _trace(pm.with_priors(plain_model, {"b": pm.Prior("Normal", loc=5.0, scale=0.01)}), x=np.ones(3))
    assert abs(float(tr["b"]["value"]) - 5.0) < 0.1
    with pytest.raises(ValueError, match=r"'b' is a plain numpyro.sample site; only parameters declared"):
        _trace(pm.with_priors(plain_model, {"b": 1.0}), x=np.ones(3))


@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short chains: only the chain-method warning is checked
@pytest.mark.nuts
def test_fit_warns_and_records_when_chains_run_otherwise_than_asked():
    """A prime number of chains larger than the device count cannot be split evenly over the
    devices (conftest asks for one per core), so an explicit chain_method='parallel' runs them as one
    device would (sequential on a CPU), says so and records it."""
    import jax

    from pragmodels.inference.nuts import one_device_chain_method

    n_dev = jax.local_device_count()
    chains = next(p for p in range(n_dev + 1, 4 * n_dev + 4) if all(p % q for q in range(2, p)))
    data = _speaker_data()
    with pytest.warns(diagnostics.FitWarning, match=rf"chain_method='parallel' asked for {chains} chains on {n_dev} device"):
        tree = pm.fit(0, speaker_model(), data, num_warmup=50, num_samples=50, num_chains=chains,
                      chain_method="parallel", progress_bar=False, priors={"lapse": 0.0})
    s = json.loads(tree.attrs["sampler_settings"])
    assert s["chain_method"] == one_device_chain_method() and s["chain_method_requested"] == "parallel"


@pytest.mark.filterwarnings("ignore:Found chain dimension to be longer than draw:UserWarning")  # a tiny hand-made tree
@pytest.mark.nuts
def test_nan_diagnostics_of_sampled_sites_are_a_failure():
    """Issue 9, finding 9: one draw per chain gives NaN ESS; that used to pass as diagnostics_ok=1.
    A latent site whose chain never moved fails too; a constant deterministic does not."""
    data = _speaker_data()
    with pytest.raises(diagnostics.FitDiagnosticsError, match=r"r_hat or ESS is NaN for \['alpha'"):
        pm.fit(0, speaker_model(), data, num_warmup=20, num_samples=1, num_chains=2,
               progress_bar=False, priors={"lapse": 0.0}, strict=True)
    import xarray as xr

    rng = np.random.default_rng(0)
    post = xr.Dataset({"stuck": (("chain", "draw"), np.ones((4, 200))),
                       "fine": (("chain", "draw"), rng.standard_normal((4, 200))),
                       "fixed_cost": (("chain", "draw"), np.zeros((4, 200)))})
    stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((4, 200), bool))})
    tree = xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})
    bad = diagnostics.diagnose(tree, emit=False, latent=["stuck", "fine"])
    assert not bad.ok and "['stuck']" in bad.problems[0]
    good = diagnostics.diagnose(tree, emit=False, latent=["fine"])  # fixed_cost is deterministic
    assert good.ok, good.problems


# ------------------------------------------------------------------ sum-to-zero effects, ordinal cutpoints
def test_the_helmert_basis_is_orthonormal_and_spans_the_sum_to_zero_vectors():
    from pragmodels.params import sum_to_zero_basis

    for n in (2, 3, 6):
        q = sum_to_zero_basis(n)
        assert q.shape == (n, n - 1)
        np.testing.assert_allclose(q.T @ q, np.eye(n - 1), atol=1e-12)
        np.testing.assert_allclose(q @ q.T, np.eye(n) - 1 / n, atol=1e-12)
        np.testing.assert_allclose(q.sum(0), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="n = 1; expected an int >= 2"):
        sum_to_zero_basis(1)


def test_sum_to_zero_effects_centred_and_not_have_the_same_prior():
    """Both parametrisations give the effect the covariance ``τ² (I − 11ᵀ/n)`` over groups at fixed
    ``τ`` (20,000 prior draws each: the SE of a variance is 1% of it; tolerance 5% of τ²), and
    every draw sums to zero; with ``unit`` the centred contrasts are sampled in units of it and the
    effect's prior is unchanged."""
    from numpyro.infer import Predictive

    from pragmodels.params import sum_to_zero_effect

    tau = jnp.array([0.3, 0.8, 1.5])
    unit = jnp.array([0.5, 2.0, 1.0])
    cases = [dict(centred=False), dict(centred=True), dict(centred=True, unit=unit, unit_name="noise")]
    for kw in cases:
        def model():
            sum_to_zero_effect("zeta", tau, dim="group", size=5, dims={"attribute": 3}, scale_name="tau",
                               **kw)  # noqa: B023 - the model is sampled within this iteration

        zeta = np.asarray(Predictive(model, num_samples=20_000, parallel=True)(jax.random.key(1))["zeta"])
        assert zeta.shape == (20_000, 5, 3)
        np.testing.assert_allclose(zeta.sum(1), 0.0, atol=1e-4)
        cov = np.einsum("nsa,nta->ast", zeta, zeta) / zeta.shape[0] / np.asarray(tau)[:, None, None] ** 2
        np.testing.assert_allclose(cov, np.broadcast_to(np.eye(5) - 1 / 5, cov.shape), atol=0.05)
    tr = _trace(lambda: sum_to_zero_effect("zeta", tau, dim="group", size=5, dims={"attribute": 3}))
    assert tr["zeta_raw"]["value"].shape == (5, 3) and "zeta_contrast" not in tr
    info = pm.inspect_model(lambda: sum_to_zero_effect("zeta", tau, dim="group", size=5, dims={"attribute": 3},
                                                       centred=True, scale_name="tau", unit=unit, unit_name="noise"), {})
    assert info.dims["zeta_contrast_units"] == ["group_contrast", "attribute"]
    assert info.dims["zeta"] == ["group", "attribute"]
    assert info.hierarchical["zeta_contrast_units"] == "Normal(loc=0, scale=tau / noise)"
    with pytest.raises(ValueError, match="at least 2 groups"):
        _trace(lambda: sum_to_zero_effect("zeta", 1.0, dim="group", size=1))


def test_ordinal_cutpoints_have_fixed_ends_and_free_increasing_interiors():
    from pragmodels.params import ordinal_cutpoints

    gap = pm.Prior("Gamma", concentration=4.0, rate=1.0)
    for seed in range(5):
        tr = handlers.trace(handlers.seed(lambda: numpyro.deterministic(
            "cut", ordinal_cutpoints("cut_gap", gap, n_categories=7, low=1.5, high=6.5, dims={"attribute": 4})),
            seed)).get_trace()
        cut = np.asarray(tr["cut"]["value"])
        assert cut.shape == (4, 6) and tr["cut_gap"]["value"].shape == (5, 4)
        np.testing.assert_allclose(cut[:, 0], 1.5) and np.testing.assert_allclose(cut[:, -1], 6.5, rtol=1e-6)
        assert (np.diff(cut, axis=-1) > 0).all()
        gaps = np.asarray(tr["cut_gap"]["value"])  # the interior sits at the gaps' cumulative shares
        np.testing.assert_allclose(cut[:, 1:-1], (1.5 + 5.0 * np.cumsum(gaps, 0) / gaps.sum(0))[:-1].T, rtol=1e-5)
    assert _trace(lambda: ordinal_cutpoints("g", gap, n_categories=3, low=0.0, high=1.0))["g"]["value"].shape == (1,)
    with pytest.raises(ValueError, match="n_categories = 2; expected an int >= 3"):
        _trace(lambda: ordinal_cutpoints("g", gap, n_categories=2, low=0.0, high=1.0))
    with pytest.raises(ValueError, match="low = 2.0 must be below high = 1.0"):
        _trace(lambda: ordinal_cutpoints("g", gap, n_categories=4, low=2.0, high=1.0))
