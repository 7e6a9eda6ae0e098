"""One provenance builder: ``fit`` and ``fit_batched`` record the same attributes the same way."""

import json

import jax
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import pragmodels as pm
from pragmodels.inference.fitting import default_chain_method
from pragmodels.inference.nuts import as_rng_key
from pragmodels.inference.provenance import model_name, seed_record

#: What a fit's attributes say about its outcome, not its inputs: these may differ between two fits.
OUTCOME = {"wall_time_s", "compile_time_s", "sampling_time_s", "postprocessing_time_s", "kernel_cache_hit",
           "created_at", "diagnostics", "diagnostics_ok", "padding"}  # padding: to a bucket, or to the largest


def tiny(y):
    mu = pm.param("mu", pm.Prior("Normal", loc=0.0, scale=1.0))
    with numpyro.plate("trial", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


# 30 draws: the diagnostics warn, and only the attributes are under test
@pytest.mark.nuts
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")
def test_fit_and_fit_batched_agree_on_every_shared_attribute():
    data = {"y": np.linspace(-1.0, 2.0, 7)}
    kw = dict(num_warmup=30, num_samples=30, num_chains=2, target_accept=0.85, max_tree_depth=6, dense_mass=True,
              priors={"mu": pm.Prior("Normal", loc=0.5, scale=2.0)})
    # the single fit runs the default layout (sequential on one CPU device: its program compiles in about half
    # the time of the chains under vmap); fit_batched's is vectorized, and each records the one that ran
    single = pm.fit(3, tiny, data, progress_bar=False, **kw).attrs
    batched = pm.fit_batched(3, tiny, [data], names=["only"], **kw)["only"].attrs
    assert set(batched) == set(single) | {"dataset"}, (set(single) ^ set(batched))
    assert batched["dataset"] == "only"
    for key in sorted(set(single) - OUTCOME - {"sampler_settings"}):
        assert single[key] == batched[key], key
    s_single, s_batched = json.loads(single["sampler_settings"]), json.loads(batched["sampler_settings"])
    assert set(s_batched) == set(s_single) | {"batched", "padded_to", "n_trials"}
    layout = ("chain_method", "chain_method_requested", "devices")
    assert {k: s_batched[k] for k in s_single if k not in layout} == {k: v for k, v in s_single.items() if k not in layout}
    assert s_single["chain_method"] == default_chain_method() and s_single["chain_method_requested"] == "auto"
    assert s_batched["chain_method"] == s_batched["chain_method_requested"] == "vectorized" and s_batched["devices"] == 1
    assert s_single["devices"] == (jax.local_device_count() if s_single["chain_method"] == "parallel" else 1)
    assert s_single["dense_mass"] is True and s_single["max_tree_depth"] == 6
    assert json.loads(single["priors"])["mu"]["loc"] == 0.5  # the prior as sampled, not as declared
    assert json.loads(single["seed"]) == 3 and single["model"] == "tiny"
    assert json.loads(single["observed_sites"]) == ["y"]
    assert "reason" in json.loads(single["padding"])  # one size of this model: not padded
    assert json.loads(batched["padding"]) == {"reason": "pad names no arrays"}
    for key in OUTCOME - {"created_at", "diagnostics", "padding"}:
        assert isinstance(single[key], (int, float)) and isinstance(batched[key], (int, float)), key


def test_one_key_normalisation_for_every_spelling_of_a_seed():
    typed, raw = jax.random.key(5), jax.random.PRNGKey(5)
    assert seed_record(5) == 5 and seed_record(np.int64(5)) == 5
    assert seed_record(typed) == seed_record(raw) == np.asarray(raw).tolist()
    draws = [jax.random.normal(as_rng_key(k), (3,)) for k in (5, typed, raw)]
    np.testing.assert_array_equal(draws[0], draws[1])
    np.testing.assert_array_equal(draws[0], draws[2])
    with pytest.raises(ValueError, match="single key"):
        as_rng_key(jax.random.split(typed, 2))
    with pytest.raises(TypeError, match="int seed or a jax PRNG key"):
        as_rng_key(True)


def test_model_name_prefers_the_explicit_name():
    assert model_name(tiny) == "tiny" and model_name(tiny, "mine") == "mine"
