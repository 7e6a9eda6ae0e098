"""Size buckets: per-trial arrays padded and masked so that fits of different sizes share programs."""

import json

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer.util import log_density

import pragmodels as pm
from pragmodels.inference import compile_cache, nuts
from pragmodels.inference.padding import bucket_size, cut_padding, forget_sizes, plan_padding, worth_padding
from pragmodels.params import inspect_model
from pragmodels.rsa_models import listener_model

SEM = pm.semantics.boolean_semantics([[1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0]])


def listener_data(n, seed=0):
    rng = np.random.default_rng(seed)
    return dict(log_semantics=SEM, utterance=rng.integers(0, 4, n), choice=rng.integers(0, 3, n))


def plan(model, data):
    return plan_padding(model, data, inspect_model(model, data).observed_values)


@pytest.mark.parametrize("n, expected", [(0, 8), (1, 8), (8, 8), (9, 12), (12, 12), (13, 16), (17, 24),
                                         (25, 32), (33, 48), (49, 64), (100, 128), (129, 192), (193, 256)])
def test_bucket_sizes(n, expected):
    assert bucket_size(n) == expected


def test_buckets_waste_at_most_half():
    for n in range(9, 5000):
        b = bucket_size(n)
        assert n <= b < 1.5 * n + 1, n


def test_listener_is_padded_and_its_log_density_unchanged():
    data = listener_data(50)
    model = listener_model()
    p = plan(model, data)
    assert p.padded and p.padded_to == 64 and sorted(p.keys) == ["choice", "utterance"]
    assert p.data["utterance"].shape == (64,) and p.data["_pad_mask"].sum() == 50
    params = {"alpha": np.float32(2.3), "lapse": np.float32(0.07)}
    lp = float(log_density(model, (), data, params)[0])
    lp_pad = float(log_density(p.model, (), dict(p.data), params)[0])
    assert lp_pad == pytest.approx(lp, rel=1e-6)
    # the padded trials repeat the last one, so without the mask the density would differ
    unmasked = {k: v for k, v in p.data.items() if k != "_pad_mask"}
    assert float(log_density(model, (), unmasked, params)[0]) < lp - 1e-3


def test_bucket_sized_data_are_not_padded():
    p = plan(listener_model(), listener_data(48))
    assert not p.padded and "bucket" in p.reason and p.record() == {
        "n_trials": 48, "padded_to": 48, "reason": p.reason}


def per_trial_latent(x, y=None):
    """A latent per trial: padding would add latent variables, so it must not be padded."""
    with numpyro.plate("trial", x.shape[0]):
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(x + z, 1.0), obs=y)


def sum_of_trials(x, y=None):
    """Uses every row of x outside the likelihood: padding changes the log density."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    numpyro.factor("rows", -0.1 * (x ** 2).sum() * mu ** 2)
    numpyro.sample("y", dist.Normal(mu + x, 1.0), obs=y)


def test_padding_refused_where_a_site_changes_shape():
    data = dict(x=np.linspace(0, 1, 10), y=np.zeros(10))
    p = plan(per_trial_latent, data)
    assert not p.padded and "'z'" in p.reason and p.data is data


def test_padding_refused_where_the_log_density_changes():
    data = dict(x=np.linspace(0, 1, 10), y=np.zeros(10))
    p = plan(sum_of_trials, data)
    assert not p.padded and "log density" in p.reason


def test_cut_padding_drops_the_last_padded_axis_only():
    arr = np.arange(2 * 3 * 12).reshape(2, 3, 12)
    assert cut_padding(arr, 10, 12).shape == (2, 3, 10)
    np.testing.assert_array_equal(cut_padding(arr, 10, 12), arr[..., :10])
    assert cut_padding(arr, 12, 12) is arr
    assert cut_padding(np.zeros((2, 3, 5)), 10, 12).shape == (2, 3, 5)


def test_padding_starts_with_a_second_size_of_a_model():
    forget_sizes()
    model = listener_model()
    assert not worth_padding(model, listener_data(50))  # the first size: fitted as given
    assert not worth_padding(model, listener_data(50, seed=1))  # the same shapes again
    assert worth_padding(model, listener_data(60))  # a second size
    assert worth_padding(model, listener_data(50))  # and from then on every size
    assert not worth_padding(listener_model(depth=2), listener_data(60))  # another model structure
    forget_sizes()


@pytest.mark.nuts
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short chains
def test_fits_of_two_sizes_share_one_program_and_hold_no_padding():
    forget_sizes()
    model = listener_model()
    kw = dict(num_warmup=150, num_samples=150, num_chains=2, progress_bar=False)
    first = pm.fit(0, model, listener_data(50), **kw)
    assert "first size" in json.loads(first.attrs["padding"])["reason"]
    pm.fit(1, model, listener_data(60, seed=1), **kw)  # a second size: padded to 64, compiled
    misses = compile_cache.cache_info()["misses"]
    data = listener_data(57, seed=2)
    second = pm.fit(2, model, data, **kw)  # 57 trials: the bucket of 64 again
    assert second.attrs["kernel_cache_hit"] == 1
    assert compile_cache.cache_info()["misses"] == misses  # log-likelihood and predictive reused too
    assert json.loads(second.attrs["padding"]) == {"n_trials": 57, "padded_to": 64,
                                                  "arrays": ["utterance", "choice"]}
    assert second.posterior_predictive["choice"].shape[-1] == 57
    assert second.observed_data["choice"].shape == (57,)
    # the pointwise log-likelihood equals the unpadded model's at the same draws
    draws = {k: second.posterior[k].values for k in ("alpha", "lapse")}
    direct = nuts.pointwise_log_likelihood(model, draws, data)["choice"]
    np.testing.assert_allclose(second.log_likelihood["choice"].values, direct, rtol=1e-5, atol=1e-6)
    # a size that would be padded now (the model has seen two), at the first fit's shapes: its programs are
    # reused (a third NUTS compile of 57 trials cost ~a third of this test)
    unpadded = pm.fit(1, model, listener_data(50, seed=3), pad_trials=False, **kw)
    assert worth_padding(model, listener_data(50, seed=3))
    assert json.loads(unpadded.attrs["padding"]) == {"reason": "pad_trials=False"}
    assert unpadded.observed_data["choice"].shape == (50,)
    forget_sizes()


def test_fit_many_pads_from_the_start_the_model_it_runs_at_several_sizes():
    """Two sizes of one model in a batch: both specs get pad_trials="always" (each worker would otherwise
    compile the first size it meets unpadded, and the bucket besides); a model at one size, a spec that
    sets pad_trials itself and another model's spec are left as they are."""
    from pragmodels.inference.fit_many import FitSpec, _pad_from_the_start

    specs = [FitSpec("a", listener_model(), listener_data(50), seed=0),
             FitSpec("b", listener_model(), listener_data(60), seed=1),
             FitSpec("c", listener_model(), listener_data(57), sampler={"pad_trials": False}, seed=2),
             FitSpec("d", listener_model(depth=2), listener_data(60), seed=3),
             # a model named by a string is keyed by its name (not imported here); static values split models
             FitSpec("e", "somewhere.py:model", listener_data(50), seed=4),
             FitSpec("f", "somewhere.py:model", listener_data(60), seed=5),
             FitSpec("g", "somewhere.py:model", {**listener_data(60), "depth": 2}, seed=6)]
    out = _pad_from_the_start(specs)
    assert [s.sampler.get("pad_trials") for s in out] == ["always", "always", False, None, "always", "always", None]
    assert [s.sampler.get("pad_trials") for s in specs] == [None, None, False] + [None] * 4  # the caller's specs unchanged


@pytest.mark.nuts
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short chains
def test_pad_trials_always_pads_the_first_fit_of_a_model():
    forget_sizes()
    kw = dict(num_warmup=20, num_samples=20, num_chains=1, progress_bar=False)
    tree = pm.fit(0, listener_model(), listener_data(50), pad_trials="always", **kw)
    assert json.loads(tree.attrs["padding"]) == {"n_trials": 50, "padded_to": 64, "arrays": ["utterance", "choice"]}
    assert tree.observed_data["choice"].shape == (50,)
    assert worth_padding(listener_model(), listener_data(60))  # the padded fit's size was recorded all the same
    with pytest.raises(ValueError, match="pad_trials must be True, False or 'always'; got 'yes'"):
        pm.fit(0, listener_model(), listener_data(50), pad_trials="yes", **kw)
    forget_sizes()
