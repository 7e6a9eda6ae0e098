"""fit_batched: several data sets of one model in one compiled NUTS run agree with separate fits."""

import json

import numpy as np
import pytest
from arviz_stats import mcse

import pragmodels as pm
from pragmodels.rsa_models import speaker_model
from pragmodels.simulate import reference_game_speaker

KW = dict(num_warmup=300, num_samples=600, num_chains=2, progress_bar=False)


def _data(seed, n_per_state, alpha):
    d = reference_game_speaker(seed=seed, n_per_state=n_per_state, alpha=alpha, cost=0.5, lapse=0.0)
    return d[0] if isinstance(d, tuple) else d


# statistical (Monte Carlo error of three fits, 47 s): under `slow` with the other statistical tests
@pytest.mark.slow
def test_batched_fits_match_separate_fits_within_monte_carlo_error():
    """Three data sets of different sizes (padded and masked). Each data set's posterior mean of
    alpha and cost_weight must match its separate fit within 4 combined Monte Carlo standard
    errors (both runs are independent MCMC estimates of the same posterior)."""
    datasets = [_data(1, 40, 1.0), _data(2, 60, 2.0), _data(3, 25, 3.5)]
    model = speaker_model(priors={"lapse": 0.0})
    trees = pm.fit_batched(0, model, datasets, pad=["state", "choice"], names=["a", "b", "c"],
                           num_warmup=KW["num_warmup"], num_samples=KW["num_samples"], num_chains=2)
    assert list(trees) == ["a", "b", "c"]
    for (name, tree), data in zip(trees.items(), datasets):
        n = len(data["choice"])
        assert tree["log_likelihood"]["choice"].shape == (2, 600, n)
        assert tree["posterior_predictive"]["choice"].shape == (2, 600, n)
        assert tree["observed_data"]["choice"].values.tolist() == list(data["choice"])
        s = json.loads(tree.attrs["sampler_settings"])
        assert s["batched"] == 3 and s["padded_to"] == 180 and s["n_trials"] == n
        sep = pm.fit(7, model, data, chain_method="vectorized", **KW)
        for v in ("alpha", "cost_weight"):
            a, b = tree["posterior"][v], sep["posterior"][v]
            err = np.sqrt(float(mcse(tree, var_names=[v])[v].max()) ** 2 + float(mcse(sep, var_names=[v])[v].max()) ** 2)
            assert abs(float(a.mean()) - float(b.mean())) < 4 * err, (name, v, float(a.mean()), float(b.mean()), err)
    # the padding is masked: the larger alpha data set's posterior is not dragged by padded trials
    assert float(trees["c"]["posterior"]["alpha"].mean()) > float(trees["a"]["posterior"]["alpha"].mean())


def test_batched_rejects_mismatched_data_by_name():
    a, b = _data(1, 10, 1.0), _data(2, 12, 1.0)
    with pytest.raises(ValueError, match=r"data\['state'\] has shapes \[\(30,\), \(36,\)\] across data sets; pad it"):
        pm.fit_batched(0, speaker_model(), [a, b], pad=["choice"], num_warmup=10, num_samples=10)
    with pytest.raises(ValueError, match=r"pad names \['trial'\]"):
        pm.fit_batched(0, speaker_model(), [a, b], pad=["trial"], num_warmup=10, num_samples=10)
