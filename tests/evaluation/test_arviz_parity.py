"""Where arviz-stats 1.3 ships what pragmodels.evaluation computes: ``loo(log_lik_fn=...)`` and
``loo_kfold`` give the same numbers as ours, at the stated tolerance, when fed the same
log-likelihoods (the measurements behind docs/architecture.md's note on arviz-stats)."""

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import xarray as xr
from arviz_base import from_dict
from arviz_stats import loo, loo_kfold
from arviz_stats.loo import SamplingWrapper
from scipy import stats

from pragmodels.evaluation import model_comparison
from pragmodels.evaluation.crossval import heldout_log_density, item_folds


def _two_site_tree():
    rng = np.random.default_rng(1)
    mu, sd = rng.normal(0.3, 0.2, (4, 500)), np.exp(rng.normal(0, 0.1, (4, 500)))
    ya, yb = rng.normal(0.3, 1, 12), rng.normal(0.3, 1, 7)
    return from_dict({"posterior": {"mu": mu, "sd": sd},
                      "log_likelihood": {"a": stats.norm.logpdf(ya, mu[..., None], sd[..., None]),
                                         "b": stats.norm.logpdf(yb, mu[..., None], 1.0)},
                      "observed_data": {"a": ya, "b": yb}}, dims={"a": ["trial_a"], "b": ["trial_b"]})


def test_loo_log_lik_fn_scores_one_observed_variable_and_matches_our_joint_loo():
    """arviz_stats.loo takes one observed variable: with two sites it refuses the tree, and
    log_lik_fn needs var_name and returns that variable's dims. Fed our joined array through a
    synthetic observed variable it gives the same elpd, SE, pointwise elpd and Pareto k (to 1e-12)."""
    tree = _two_site_tree()
    with pytest.raises(TypeError, match="several log likelihood arrays"):
        loo(tree)
    with pytest.raises(ValueError, match="Multiple observed variables"):
        loo(tree, log_lik_fn=lambda observed, data: data.log_likelihood["a"])
    ours = model_comparison.loo(tree, pointwise=True)
    joint = model_comparison.joint_log_likelihood(tree)["log_likelihood"]["joint"]
    synthetic = xr.DataTree.from_dict({
        "posterior": tree["posterior"].to_dataset(),
        "observed_data": xr.Dataset({"joint": xr.zeros_like(joint.isel(chain=0, draw=0, drop=True))}),
    })
    theirs = loo(synthetic, var_name="joint", log_lik_fn=lambda observed, data: joint, pointwise=True)
    assert ours.n_data_points == theirs.n_data_points == 19
    assert theirs.elpd == pytest.approx(ours.elpd, abs=1e-12) and theirs.se == pytest.approx(ours.se, abs=1e-12)
    np.testing.assert_allclose(theirs.elpd_i.values, ours.elpd_i.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(theirs.pareto_k.values, ours.pareto_k.values, rtol=0, atol=1e-12)


def items_model(y, item):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("trial", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


class _Precomputed(SamplingWrapper):
    """A loo_kfold wrapper whose every "refit" has the same draws: each fold's held-out items are
    scored from one ``[chain, draw, item]`` array of per-item joint log-likelihoods."""

    def __init__(self, tree, per_item):
        super().__init__(model=None, idata_orig=tree)
        self.per_item = per_item

    def sel_observations(self, idx):
        return None, np.asarray(idx)

    def sample(self, modified_observed_data):
        return None

    def get_inference_data(self, fitted_model):
        return None

    def log_likelihood__i(self, excluded_obs, idata__i):
        return self.per_item.isel(item=excluded_obs)


def test_loo_kfold_gives_our_heldout_elpd_per_item():
    """With items as loo_kfold's observations (group_by would keep trials together but score each
    trial on its own), its log-mean-exp over draws of a held-out item's joint log-likelihood is
    heldout_log_density's elpd to 1e-5 (ours sums the log-likelihood in float32 under JAX, the
    reference here in float64: measured 3.5e-7), and its total is ours. It differs in what it needs: a
    full-data fit's per-item log-likelihood (for p_kfold) and refits driven one by one through the
    wrapper; its SE uses ddof=0."""
    rng = np.random.default_rng(3)
    n_item, per = 6, 5
    item = np.repeat(np.arange(n_item), per)
    y = rng.normal(0.4, 1.0, n_item * per) + 0.3 * rng.standard_normal(n_item)[item]
    mu = rng.normal(0.4, 0.2, (1, 400))
    ours, _ = heldout_log_density(0, items_model, {"mu": mu}, {"y": y, "item": item}, n_items=n_item,
                                  max_draws=None)
    ll = stats.norm.logpdf(y, mu[..., None], 1.0)  # [chain, draw, trial]
    per_item = xr.DataArray(np.stack([ll[..., item == i].sum(-1) for i in range(n_item)], -1),
                            dims=("chain", "draw", "item"), coords={"item": np.arange(n_item)})
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": (("chain", "draw"), mu)}),
                                  "log_likelihood": xr.Dataset({"y": per_item})})
    folds = np.empty(n_item, int)
    for f, test in enumerate(item_folds(n_item, 3, seed=0)):
        folds[test] = f + 1
    kfold = loo_kfold(tree, _Precomputed(tree, per_item), folds=folds, pointwise=True)
    np.testing.assert_allclose(kfold.elpd_i.values, ours, rtol=0, atol=1e-5)
    assert kfold.elpd == pytest.approx(float(ours.sum()), abs=1e-5 * n_item)
    assert kfold.se == pytest.approx(np.sqrt(n_item * np.var(kfold.elpd_i.values)), abs=1e-12)
