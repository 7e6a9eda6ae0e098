"""Prior predictive draws as a DataTree, and prediction for new data from a saved fit."""

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from arviz_base import from_dict

import pragmodels as pm
from tests.test_params import QUICK, plain_model


def test_prior_predictive_draws_match_the_prior():
    """b ~ N(0, 2), y = b x + N(0, 0.5): at x = 1, sd(y) = sqrt(4.25) = 2.06. 4,000 draws: the sd
    of a sample sd is ~0.023 (b) and ~0.024 (y); tolerance 0.12 (5 sd)."""
    x = np.array([0.0, 1.0])
    tree = pm.prior_predictive(0, plain_model, dict(x=x, y=np.zeros(2)), num_samples=4000)
    assert set(tree.children) == {"prior", "prior_predictive", "observed_data"}
    assert tree["prior"]["b"].shape == (1, 4000)
    assert tree["prior_predictive"]["y"].dims == ("chain", "draw", "obs")
    assert float(tree["prior"]["b"].std()) == pytest.approx(2.0, abs=0.12)
    y = tree["prior_predictive"]["y"].values[0]
    assert y[:, 1].std() == pytest.approx(np.sqrt(4.25), abs=0.12)
    assert y[:, 0].std() == pytest.approx(0.5, abs=0.03)
    # a prior override applies here as in fit
    narrow = pm.prior_predictive(0, plain_model, dict(x=x, y=np.zeros(2)), num_samples=4000,
                                 priors={"b": pm.Prior("Normal", loc=0.0, scale=0.1)})
    assert float(narrow["prior"]["b"].std()) == pytest.approx(0.1, abs=0.01)


@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short chains: convergence is not checked here
@pytest.mark.nuts
def test_predict_new_data_from_a_saved_fit(tmp_path):
    rng = np.random.default_rng(0)
    x = np.linspace(-1, 1, 30)
    tree = pm.fit(0, plain_model, dict(x=x, y=1.5 * x + 0.5 * rng.standard_normal(30)), **QUICK)
    pm.save_netcdf(tree, tmp_path / "fit.nc")
    saved = pm.load_netcdf(tmp_path / "fit.nc")
    new_x = np.array([-2.0, 0.0, 3.0])
    pred = pm.predict(1, saved, plain_model, dict(x=new_x))
    y = pred["predictions"]["y"]
    assert y.dims == ("chain", "draw", "obs") and y.shape == (2, 150, 3)
    b = saved["posterior"]["b"].values
    # E[y | b] = b x: the predictive mean tracks the posterior mean of b x (sd of the mean ~0.02)
    np.testing.assert_allclose(y.values.mean((0, 1)), b.mean() * new_x, atol=0.12)
    assert y.values[..., 2].std() > y.values[..., 1].std()  # posterior spread of b grows with |x|
    with pytest.raises(ValueError, match="lacks"):
        pm.predict(1, saved, pm.rsa_models.speaker_model(), dict(
            log_semantics=pm.semantics.boolean_semantics([[1, 0], [1, 1]]), state=np.array([0]), choice=None))


def quadratic_model(x, y=None):
    """plain_model's sites (``b``, ``y``) with another mean: its predictions from plain_model's
    posterior would look fine and be wrong."""
    b = numpyro.sample("b", dist.Normal(0.0, 2.0))
    with numpyro.plate("obs", x.shape[0]):
        numpyro.sample("y", dist.Normal(b * x**2, 0.5), obs=y)


def intercept_model(x, y=None):
    a = numpyro.sample("a", dist.Normal(0.0, 2.0))
    with numpyro.plate("obs", x.shape[0]):
        numpyro.sample("y", dist.Normal(a, 0.5), obs=y)


def _fit_record(**attrs):
    """A posterior of ``b`` as pm.fit records it (``[chain, draw]``), with the root ``attrs``."""
    tree = from_dict({"posterior": {"b": np.random.default_rng(0).normal(1.5, 0.1, size=(2, 50))}})
    tree.attrs.update(attrs)
    return tree


def test_predict_refuses_a_model_other_than_the_one_fitted():
    """Issue 33, item 5: the fit records its model (attrs['model']); predict used to accept any
    model whose latent sites the posterior had."""
    new = dict(x=np.array([-2.0, 0.0, 3.0]))
    fitted = _fit_record(model="plain_model", observed_sites='["y"]')
    with pytest.raises(ValueError, match=r"a fit of model 'plain_model'.* got model 'quadratic_model'"):
        pm.predict(1, fitted, quadratic_model, new)
    assert pm.predict(1, fitted, plain_model, new)["predictions"]["y"].shape == (2, 50, 3)
    # a model with other sites: what the posterior lacks, and both models
    with pytest.raises(ValueError, match=r"lacks \['a'\].*a fit of model 'plain_model'; predict got model 'intercept_model'"):
        pm.predict(1, fitted, intercept_model, new)
    # a fit given a name (fit(..., name=...)): predict takes the same name
    named = _fit_record(model="slope only", observed_sites='["y"]')
    with pytest.raises(ValueError, match=r"a fit of model 'slope only'.* got model 'plain_model'.*name="):
        pm.predict(1, named, plain_model, new)
    assert pm.predict(1, named, plain_model, new, name="slope only")["predictions"]["y"].shape == (2, 50, 3)
    # a tree that records no model (not made by pm.fit) has nothing to check against
    foreign = pm.predict(1, _fit_record(), plain_model, dict(new, y=np.zeros(3)))
    assert foreign["predictions"]["y"].shape == (2, 50, 3)
