"""The study's fit loop: draws sized to the ESS standard (models/social_meaning/study.py, ``top_up``)."""

import json
import re
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
    assert len(said) == 1 and said[0].startswith("short: least ESS") and "120 draws per chain (was 30; round 1" in said[0]


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


class _Fake:
    """``pm.fit_many``'s result for :func:`top_up`: each fit's least ESS is ``ess_per_draw x draws``."""

    def __init__(self, specs, ess_per_draw):
        import xarray as xr

        self.outcomes, self.trees = [], {}
        for s in specs:
            n = s.sampler["num_samples"]
            ess = ess_per_draw * n
            self.outcomes.append(FitOutcome(s.name, "ok", wall_s=10.0, diagnostics={
                "min_ess_bulk": ess, "min_ess_tail": ess, "max_rhat": 1.001}))
            tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, n)))})})
            tree.attrs["wall_time_s"] = 10.0
            self.trees[s.name] = tree

    def __iter__(self):
        return iter(self.outcomes)

    def raise_on_error(self):
        pass


def test_a_refit_still_short_is_sampled_again_from_its_own_ess_up_to_the_cap(monkeypatch):
    """Round 1 sizes the refit from the first fit's ESS; where the refit falls short again (its ESS per
    draw lower than the first fit's showed), round 2 scales it from its own ESS; the draws never pass
    ``most`` x the config's and ``draws_resized`` records both rounds; walls add up."""
    from models.social_meaning import study

    rates = iter([0.5, 0.2, 0.2])  # ESS per draw: first fit, round 1, round 2
    monkeypatch.setattr(study.pm, "fit_many", lambda specs, **kw: _Fake(specs, next(rates)))
    specs = [pm.FitSpec("f", _normal, {"y": np.zeros(3)}, sampler={"num_samples": 400}, seed=1)]
    said = []
    out = top_up(specs, study.pm.fit_many(specs), "sequential", False, said.append, standard=400.0)
    # first: ESS 200 -> 400 x 1.25 x 400 / 200 = 1,000; round 1: ESS 200 again -> 1,000 x 2.5 = 2,500 > 4 x 400: 1,600
    assert [re.search(r"with (\d+) draws per chain \(was (\d+); round (\d)", s).groups() for s in said] == [
        ("1000", "400", "1"), ("1600", "1000", "2")]
    resized = json.loads(out[0].tree.attrs["draws_resized"])
    assert resized == {"from": 400, "to": 1600, "ess": 200.0, "max_rhat": 1.001, "rounds": 2}
    assert out[0].tree.attrs["wall_time_s"] == 30.0 and out[0].wall_s == 30.0
    rates = iter([0.5, 0.2, 0.2])
    monkeypatch.setattr(study.pm, "fit_many", lambda specs, **kw: _Fake(specs, next(rates)))
    one = top_up(specs, study.pm.fit_many(specs), "sequential", False, said.append, standard=400.0, rounds=1)
    assert json.loads(one[0].tree.attrs["draws_resized"])["to"] == 1000  # one round: left short, for the diagnostics
