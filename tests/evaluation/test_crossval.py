"""pragmodels.evaluation.crossval: folds, item subsets, and the held-out log predictive density against the
exact value for a conjugate model (a per-item Gaussian effect drawn from its prior).

No fits here (see tests/models/wavelength/test_listeners.py for a fold end to end)."""

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy import stats

from pragmodels.evaluation import crossval
from pragmodels.params import param
from pragmodels.priors import Prior


def test_item_folds_partition_the_items():
    folds = crossval.item_folds(10, 3, seed=1)
    assert [len(f) for f in folds] == [4, 3, 3]
    assert np.array_equal(np.sort(np.concatenate(folds)), np.arange(10))
    assert all(np.array_equal(a, b) for a, b in zip(folds, crossval.item_folds(10, 3, seed=1)))
    with pytest.raises(ValueError, match="k = 11 folds but only 10 items"):
        crossval.item_folds(10, 11)
    with pytest.raises(ValueError, match="k must be an int >= 2"):
        crossval.item_folds(10, 1)


def test_subset_items_slices_and_renumbers():
    data = {"log_lm": np.arange(5)[:, None] * np.ones((5, 2)), "item": np.array([0, 4, 2, 4, 1, 0]),
            "guess": np.array([10, 11, 12, 13, 14, 15]), "utt_mask": None, "flag": True, "shared": np.ones(3)}
    out = crossval.subset_items(data, [4, 0], item_keys=("log_lm", "utt_mask"), trial_keys=("item", "guess"))
    np.testing.assert_array_equal(out["log_lm"][:, 0], [4, 0])
    np.testing.assert_array_equal(out["item"], [1, 0, 0, 1])  # item 4 -> 0, item 0 -> 1
    np.testing.assert_array_equal(out["guess"], [10, 11, 13, 15])
    assert out["utt_mask"] is None and out["flag"] is True and out["shared"] is data["shared"]
    with pytest.raises(ValueError, match="distinct item indices"):
        crossval.subset_items(data, [1, 1], item_keys=("log_lm",), trial_keys=("item",))
    with pytest.raises(ValueError, match=r"items must lie in 0..4"):
        crossval.subset_items(data, [7], item_keys=("log_lm",), trial_keys=("item",))


def gaussian_model(n_items, item, y=None):
    """mu (global) ~ N(0, 1); z_i ~ N(0, 1) per item (local); y_t ~ N(mu + z_item, 1)."""
    mu = param("mu", Prior("Normal", loc=0.0, scale=1.0))
    z = param("z", Prior("Normal", loc=0.0, scale=1.0), dims={"item": n_items})
    with numpyro.plate("trial", len(item)):
        numpyro.sample("y", dist.Normal(mu + z[jnp.asarray(item)], 1.0), obs=y)


def test_heldout_log_density_matches_the_exact_predictive():
    """With the local z_i integrated out, y_i | mu ~ N(mu 1, I + 1 1ᵀ): the exact held-out density
    given the posterior draws of mu is log mean_d N(y_i; mu_d 1, I + 1 1ᵀ). Monte Carlo tolerance:
    with 4000 prior draws of z per posterior draw the standard error is ~0.01 nats; 0.05 allowed."""
    rng = np.random.default_rng(0)
    n_items, n_per = 3, 4
    item = np.repeat(np.arange(n_items), n_per)
    y = rng.normal(0.5 + rng.normal(size=n_items)[item], 1.0)
    mu_draws = rng.normal(0.4, 0.3, (2, 5))  # a "posterior": 2 chains x 5 draws
    data = {"n_items": n_items, "item": item, "y": y}
    assert crossval.local_sites(gaussian_model, data) == ["z"]
    elpd, se = crossval.heldout_log_density(0, gaussian_model, {"mu": mu_draws}, data, n_items=n_items,
                                            n_mc=4000, max_draws=None, batch_size=5)
    cov = np.eye(n_per) + np.ones((n_per, n_per))
    exact = [np.log(np.mean([stats.multivariate_normal(np.full(n_per, m), cov).pdf(y[item == i])
                             for m in mu_draws.ravel()])) for i in range(n_items)]
    np.testing.assert_allclose(elpd, exact, atol=0.05)
    assert np.all(se < 0.03)


def test_heldout_log_density_without_local_sites_is_exact():
    def model(item, y=None):
        mu = param("mu", Prior("Normal", loc=0.0, scale=1.0))
        with numpyro.plate("trial", len(item)):
            numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    item = np.array([0, 0, 1])
    y = np.array([0.3, -0.2, 1.5])
    mu = np.array([[0.0, 0.5, 1.0]])
    elpd, _ = crossval.heldout_log_density(0, model, {"mu": mu}, {"item": item, "y": y}, n_items=2, n_mc=50)
    ll = stats.norm.logpdf(y[None, :], mu.ravel()[:, None])  # [draw, trial]
    exact = [np.log(np.mean(np.exp(ll[:, :2].sum(1)))), np.log(np.mean(np.exp(ll[:, 2])))]
    np.testing.assert_allclose(elpd, exact, rtol=1e-5)


def test_heldout_log_density_needs_the_global_draws():
    data = {"n_items": 2, "item": np.array([0, 1]), "y": np.array([0.0, 1.0])}
    with pytest.raises(ValueError, match="lacks the global parameter 'mu'"):
        crossval.heldout_log_density(0, gaussian_model, {"sigma": np.ones((1, 2))}, data, n_items=2)


@pytest.mark.slow  # 3 compilations, 10-20 s; default-tier cover: tests/inference/test_top_up.py (the sizing)
@pytest.mark.nuts
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short fits, by design
def test_fit_fold_sizes_a_short_fit_to_the_standards_before_scoring(capsys):
    """A fold's fit short of the sampling standards was scored as it stood (the Wavelength cross-validation:
    r_hat 1.04, bulk ESS 130 in a fold); with ``top_up`` it is sampled again first, and says so."""
    def model(offset, item, y=None):  # offset [item]: the per-item array that fixes the item count
        mu = param("mu", Prior("Normal", loc=0.0, scale=1.0))
        z = param("z", Prior("Normal", loc=0.0, scale=1.0), dims={"item": offset.shape[0]})
        with numpyro.plate("trial", len(item)):
            numpyro.sample("y", dist.Normal(mu + offset[item] + z[jnp.asarray(item)], 1.0), obs=y)

    rng = np.random.default_rng(1)
    item = np.repeat(np.arange(4), 3)
    data = {"offset": np.zeros(4), "item": item, "y": rng.normal(rng.normal(size=4)[item], 1.0)}
    kw = dict(item_keys=("offset",), trial_keys=("item", "y"), n_mc=20, max_draws=50, keep_tree=True,
              fit_kwargs=dict(num_warmup=40, num_samples=40, num_chains=2))
    plain = crossval.fit_fold(0, model, data, [3], **kw)
    assert "draws_resized" not in plain.tree.attrs
    sized = crossval.fit_fold(0, model, data, [3], **kw, top_up=True, name="cv-model-fold1of2")
    resized = __import__("json").loads(sized.tree.attrs["draws_resized"])
    assert resized["from"] == 40 and resized["to"] > 40  # 2 x 40 draws cannot reach ESS 400
    assert sized.tree["posterior"].sizes["draw"] == resized["to"]
    assert "cv-model-fold1of2: least ESS" in capsys.readouterr().out
    assert np.all(np.isfinite(sized.elpd)) and sized.elpd.shape == (1,)
