"""The study's fit loop: draws sized to the ESS standard (models/social_meaning/study.py, ``top_up``)."""

import json
import warnings

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import pragmodels as pm
from models.social_meaning.study import top_up
from pragmodels.inference.diagnostics import FitWarning
from pragmodels.inference.fit_many import FitOutcome


def _normal(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("obs", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


@pytest.mark.nuts
def test_a_fit_short_of_the_ess_standard_is_sampled_again_with_more_draws_and_says_so():
    """A fit whose least ESS is below the standard comes back refitted with draws scaled by
    margin x standard / ESS (here capped at 4x: 1 chain of 30 draws has an ESS near 30 against a
    standard of 100), recording ``draws_resized``; a fit above the standard is the first run's."""
    y = np.random.default_rng(0).normal(1.0, 1.0, 20)
    settings = dict(num_warmup=100, num_chains=1, chain_method="sequential", progress_bar=False)
    specs = [pm.FitSpec("short", _normal, {"y": y}, sampler=dict(settings, num_samples=30), seed=1),
             pm.FitSpec("enough", _normal, {"y": y}, sampler=dict(settings, num_samples=2000), seed=2)]
    said = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # the short fit's low ESS: what this test is about
        result = pm.fit_many(specs, executor="sequential", progress=False)
        out = top_up(specs, result, "sequential", False, said.append, standard=100.0)
    assert [o.name for o in out] == ["short", "enough"]
    short, enough = out
    resized = json.loads(short.tree.attrs["draws_resized"])
    assert resized["from"] == 30 and resized["to"] == 120 and resized["ess"] < 100  # 4x: the cap
    assert short.tree.posterior.sizes["draw"] == 120
    assert "draws_resized" not in enough.tree.attrs and enough.tree.posterior.sizes["draw"] == 2000
    assert len(said) == 1 and said[0].startswith("short: least ESS") and "120 draws per chain (was 30)" in said[0]


def _outcome(ess, rhat):
    return FitOutcome("f", "ok", diagnostics={"min_ess_bulk": ess, "min_ess_tail": ess + 50, "max_rhat": rhat})


def test_draws_scale_with_the_ess_shortfall_and_double_for_r_hat():
    """The scale of a refit's draws: margin x standard / ESS below the ESS standard, at least 2 where
    r_hat is above 1.01, none for a fit that meets both (and NaN left to the diagnostics)."""
    from models.social_meaning.study import _scale

    assert _scale(_outcome(500.0, 1.004), 400.0, 1.01, 1.25) == 1.0
    assert _scale(_outcome(200.0, 1.004), 400.0, 1.01, 1.25) == pytest.approx(2.5)
    assert _scale(_outcome(500.0, 1.02), 400.0, 1.01, 1.25) == 2.0
    assert _scale(_outcome(350.0, 1.02), 400.0, 1.01, 1.25) == 2.0  # 1.43 by ESS, 2 by r_hat
    assert _scale(_outcome(float("nan"), float("nan")), 400.0, 1.01, 1.25) == 1.0
