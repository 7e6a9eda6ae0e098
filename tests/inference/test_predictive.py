"""Prior predictive draws as a DataTree, and prediction for new data from a saved fit."""

import numpy as np
import pytest

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
