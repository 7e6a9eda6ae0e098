"""pragmodels.inference.top_up: draws sized to the sampling standards (ESS_MIN, RHAT_MAX)."""

import json
import re
import warnings

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import xarray as xr

import pragmodels as pm
from pragmodels.inference import top_up as sizing
from pragmodels.inference.diagnostics import ESS_MIN, RHAT_MAX, FitWarning
from pragmodels.inference.fit_many import FitManyResult, FitOutcome
from pragmodels.inference.top_up import top_up


def _normal(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    with numpyro.plate("obs", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def test_the_standards_are_the_diagnostics_ones():
    """``top_up`` sizes to :mod:`pragmodels.inference.diagnostics`' standards unless told otherwise."""
    import inspect

    defaults = {k: p.default for k, p in inspect.signature(top_up).parameters.items()}
    assert defaults["standard"] == ESS_MIN == 400.0 and defaults["max_rhat"] == RHAT_MAX == 1.01
    assert pm.top_up is top_up


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
        out = top_up(specs, result, executor="sequential", progress=False, log=said.append, standard=100.0)
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
    scale = sizing._scale
    assert scale(_outcome(500.0, 1.004), 400.0, 1.01, 1.25) == 1.0
    assert scale(_outcome(200.0, 1.004), 400.0, 1.01, 1.25) == pytest.approx(2.5)
    assert scale(_outcome(500.0, 1.02), 400.0, 1.01, 1.25) == 2.0
    assert scale(_outcome(350.0, 1.02), 400.0, 1.01, 1.25) == 2.0  # 1.43 by ESS, 2 by r_hat
    assert scale(_outcome(float("nan"), float("nan")), 400.0, 1.01, 1.25) == 1.0


def fake_fit_many(ess_per_draw, max_rhat=1.001, divergences=0, at_cap=0.0):
    """A stand-in for ``fit_many``: each call takes the next ESS per draw of ``ess_per_draw`` (and
    r_hat of ``max_rhat``, divergences, share of trajectories at the depth cap of 8 of ``at_cap``), so that
    a fit's least ESS is ``ess_per_draw x draws``; its trees hold ``[1, draws]`` zeros, their leapfrog steps,
    a wall time of 10 s and their diagnostics, and save like a real fit's."""
    def each(v):
        return iter(v if isinstance(v, list) else [v] * 10)

    rates, rhats, divs, caps = iter(ess_per_draw), each(max_rhat), each(divergences), each(at_cap)

    def fit_many(specs, **kw):
        rate, rhat, div, cap = next(rates), next(rhats), next(divs), next(caps)
        outcomes = []
        for s in specs:
            n = s.sampler["num_samples"]
            diagnostics = {"divergences": div, "max_rhat": rhat, "min_ess_bulk": rate * n, "min_ess_tail": rate * n}
            steps = np.where(np.arange(n) < round(cap * n), 255, 15)[None]
            tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, n)))}),
                                          "sample_stats": xr.Dataset({"n_steps": (("chain", "draw"), steps)})})
            tree.attrs.update(wall_time_s=10.0, diagnostics=json.dumps(diagnostics), diagnostics_ok="true",
                              sampler_settings=json.dumps({"max_tree_depth": 8}))
            outcomes.append(FitOutcome(s.name, "ok", wall_s=10.0, tree=tree, diagnostics=diagnostics))
        return FitManyResult(outcomes)

    return fit_many


def test_a_refit_still_short_is_sampled_again_from_its_own_ess_up_to_the_cap(monkeypatch):
    """Round 1 sizes the refit from the first fit's ESS; where the refit falls short again (its ESS per
    draw lower than the first fit's showed), round 2 scales it from its own ESS; the draws never pass
    ``most`` x the config's and ``draws_resized`` records both rounds; walls add up."""
    fake = fake_fit_many([0.5, 0.2, 0.2])  # ESS per draw: first fit, round 1, round 2
    monkeypatch.setattr(sizing, "fit_many", fake)
    specs = [pm.FitSpec("f", _normal, {"y": np.zeros(3)}, sampler={"num_samples": 400}, seed=1)]
    said = []
    out = top_up(specs, fake(specs), log=said.append, standard=400.0)
    # first: ESS 200 -> 400 x 1.25 x 400 / 200 = 1,000; round 1: ESS 200 again -> 1,000 x 2.5 = 2,500 > 4 x 400: 1,600
    assert [re.search(r"with (\d+) draws per chain \(was (\d+); round (\d)", s).groups() for s in said] == [
        ("1000", "400", "1"), ("1600", "1000", "2")]
    resized = json.loads(out[0].tree.attrs["draws_resized"])
    assert resized == {"from": 400, "to": 1600, "ess": 200.0, "max_rhat": 1.001, "rounds": 2}
    assert out[0].tree.attrs["wall_time_s"] == 30.0 and out[0].wall_s == 30.0
    fake = fake_fit_many([0.5, 0.2, 0.2])
    monkeypatch.setattr(sizing, "fit_many", fake)
    one = top_up(specs, fake(specs), log=said.append, standard=400.0, rounds=1)
    assert json.loads(one[0].tree.attrs["draws_resized"])["to"] == 1000  # one round: left short, for the diagnostics


def test_a_fit_above_r_hat_is_sampled_again_with_twice_the_draws(monkeypatch):
    """r_hat above :data:`RHAT_MAX` with ESS to spare: twice the draws, and the log says why."""
    fake = fake_fit_many([2.0, 2.0], max_rhat=[1.013, 1.004])
    monkeypatch.setattr(sizing, "fit_many", fake)
    specs = [pm.FitSpec("f", _normal, {"y": np.zeros(3)}, sampler={"num_samples": 400}, seed=1)]
    said = []
    out = top_up(specs, fake(specs), log=said.append)
    assert json.loads(out[0].tree.attrs["draws_resized"]) == {"from": 400, "to": 800, "ess": 800.0,
                                                              "max_rhat": 1.013, "rounds": 1}
    assert said == ["f: least ESS 800 (standard 400), max r_hat 1.013 (standard 1.01); sampled again with 800 draws "
                    "per chain (was 400; round 1 of at most 2)"]


def test_a_fit_with_divergences_is_sampled_again_with_smaller_steps(monkeypatch):
    """Divergences with ESS and r_hat to spare: the same draws, target_accept halfway to 1 (0.95 -> 0.975),
    then 0.9875 if they persist; the log and ``draws_resized`` say so, and the run's convergence table too. A fit
    already at 0.99 is left to its diagnostics, as is one with none."""
    from pragmodels.runs.study import convergence_table

    fake = fake_fit_many([2.0, 2.0, 2.0], divergences=[3, 1, 0])
    monkeypatch.setattr(sizing, "fit_many", fake)
    specs = [pm.FitSpec("f", _normal, {"y": np.zeros(3)}, sampler={"num_samples": 400, "target_accept": 0.95}, seed=1)]
    said = []
    out = top_up(specs, fake(specs), log=said.append)
    assert said == ["f: 3 divergences (standard 0), least ESS 800 (standard 400), max r_hat 1.001 (standard 1.01); "
                    "sampled again with 400 draws per chain (was 400) and target_accept 0.975 (was 0.95; round 1 of at most 2)",
                    "f: 1 divergences (standard 0), least ESS 800 (standard 400), max r_hat 1.001 (standard 1.01); "
                    "sampled again with 400 draws per chain (was 400) and target_accept 0.9875 (was 0.975; round 2 of at most 2)"]
    resized = json.loads(out[0].tree.attrs["draws_resized"])
    assert resized == {"from": 400, "to": 400, "ess": 800.0, "max_rhat": 1.001, "rounds": 2, "divergences": 3,
                       "target_accept": [0.95, 0.9875]}
    row = convergence_table({"f": {"diagnostics": {}, "draws_resized": resized}})["draws_resized"][0]
    assert row == "400 -> 400 (least ESS 800, r_hat 1.001; target_accept 0.95 -> 0.9875 after 3 divergences)"
    for ta, div in ((0.99, 5), (0.95, 0)):
        fake = fake_fit_many([2.0], divergences=div)
        monkeypatch.setattr(sizing, "fit_many", fake)
        spec = [pm.FitSpec("g", _normal, {"y": np.zeros(3)}, sampler={"num_samples": 400, "target_accept": ta}, seed=1)]
        kept = top_up(spec, fake(spec), log=said.append)
        assert "draws_resized" not in kept[0].tree.attrs


def test_a_refit_that_misses_more_standards_is_not_kept(monkeypatch):
    """Smaller steps that trade 2 divergences for chains that stop at the depth cap and disagree (r_hat 1.02):
    the first fit, which misses one standard, is kept over the refit, which misses two; the refit is
    recorded (``refits_not_kept``), logged, shown in the convergence table, and not refitted again; walls add
    up. A refit that misses as many standards as the attempt before it replaces it (more draws)."""
    from pragmodels.runs.study import convergence_table

    fake = fake_fit_many([2.0, 2.0], divergences=[2, 0], max_rhat=[1.004, 1.02], at_cap=[0.0, 0.6])
    monkeypatch.setattr(sizing, "fit_many", fake)
    specs = [pm.FitSpec("f", _normal, {"y": np.zeros(3)}, sampler={"num_samples": 400, "target_accept": 0.95}, seed=1)]
    said = []
    out = top_up(specs, fake(specs), log=said.append)
    assert len(said) == 2 and said[1] == ("f: the refit of round 1 misses r_hat, depth cap, the attempt before it "
                                          "divergences: the attempt before it is kept")
    assert out[0].diagnostics["divergences"] == 2 and "draws_resized" not in out[0].tree.attrs
    worse = json.loads(out[0].tree.attrs["refits_not_kept"])
    assert worse == [{"round": 1, "draws": 400, "num_warmup": 1000, "target_accept": 0.975, "divergences": 0, "max_rhat": 1.02,
                      "ess": 800.0, "depth_cap_share": 0.6, "missed": ["r_hat", "depth cap"]}]
    assert out[0].tree.attrs["wall_time_s"] == 20.0 and out[0].wall_s == 20.0
    row = convergence_table({"f": {"diagnostics": {}, "refits_not_kept": worse}})["draws_resized"][0]
    assert row == "400 draws, target_accept 0.975 not kept (missed r_hat, depth cap)"
    # a tie (one standard each: divergences, then ESS) keeps the refit, which round 2 then sizes from its own ESS
    fake = fake_fit_many([2.0, 0.5, 1.0], divergences=[2, 0, 0])
    monkeypatch.setattr(sizing, "fit_many", fake)
    out = top_up(specs, fake(specs), log=said.append)
    assert "refits_not_kept" not in out[0].tree.attrs
    assert json.loads(out[0].tree.attrs["draws_resized"])["to"] == 1000 and out[0].diagnostics["min_ess_bulk"] == 1000


def test_a_fit_at_the_depth_cap_is_sampled_again_with_twice_the_warm_up(monkeypatch):
    """90% of trajectories at the depth cap with ESS and r_hat to spare (a mass matrix not yet adapted: long
    trajectories, many effective draws): the same draws, twice the warm-up; the log, ``draws_resized`` and the
    convergence table say so. Still at the cap in round 2: twice again, at most ``most`` x the spec's."""
    from pragmodels.runs.study import convergence_table

    fake = fake_fit_many([3.0, 3.0], at_cap=[0.9, 0.0])
    monkeypatch.setattr(sizing, "fit_many", fake)
    specs = [pm.FitSpec("f", _normal, {"y": np.zeros(3)}, sampler={"num_samples": 400, "num_warmup": 300}, seed=1)]
    said = []
    out = top_up(specs, fake(specs), log=said.append)
    assert said == ["f: 90% of trajectories at the depth cap (standard 1%), least ESS 1200 (standard 400), max r_hat "
                    "1.001 (standard 1.01); sampled again with 400 draws per chain (was 400) and 600 warm-up iterations "
                    "(was 300; round 1 of at most 2)"]
    resized = json.loads(out[0].tree.attrs["draws_resized"])
    assert resized == {"from": 400, "to": 400, "ess": 1200.0, "max_rhat": 1.001, "rounds": 1, "num_warmup": [300, 600]}
    row = convergence_table({"f": {"diagnostics": {}, "draws_resized": resized}})["draws_resized"][0]
    assert row == "400 -> 400 (least ESS 1200, r_hat 1.001; warm-up 300 -> 600 after trajectories at the depth cap)"
    fake = fake_fit_many([3.0, 3.0, 3.0], at_cap=[0.9, 0.5, 0.5])
    monkeypatch.setattr(sizing, "fit_many", fake)
    out = top_up(specs, fake(specs), log=said.append, most=3.0)
    assert json.loads(out[0].tree.attrs["draws_resized"])["num_warmup"] == [300, 900]  # 600, then 1,200 capped at 3x


def _tree(divergences=0, max_rhat=1.001, ess=(800.0, 900.0), steps=(15,) * 100, ok=1, depth=8):
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, len(steps))))}),
                                  "sample_stats": xr.Dataset({"n_steps": (("chain", "draw"), np.array([steps]))})})
    tree.attrs.update(diagnostics=json.dumps({"divergences": divergences, "max_rhat": max_rhat,
                                              "min_ess_bulk": ess[0], "min_ess_tail": ess[1]}),
                      diagnostics_ok=ok, sampler_settings=json.dumps({"max_tree_depth": depth}))
    return tree


def test_missed_standards_is_one_rule_at_each_boundary():
    """``missed_standards``: r_hat 1.01 passes, 1.0101 fails; ESS 400 passes, 399.9 (bulk or tail) fails; one
    divergence fails; 1% of trajectories at the cap fails, just under passes (the docs' "under 1%"); a NaN or
    missing diagnostic fails; ``diagnostics`` only where diagnose failed for none of the named reasons."""
    from pragmodels.inference.diagnostics import missed_standards

    assert missed_standards(_tree()) == []
    assert missed_standards(_tree(max_rhat=1.01, ess=(400.0, 400.0))) == []
    assert missed_standards(_tree(max_rhat=1.0101)) == ["r_hat"]
    assert missed_standards(_tree(ess=(399.9, 900.0))) == ["ess"] == missed_standards(_tree(ess=(900.0, 399.9)))
    assert missed_standards(_tree(divergences=1)) == ["divergences"]
    assert missed_standards(_tree(steps=(255,) + (15,) * 99)) == ["depth cap"]  # exactly 1%
    assert missed_standards(_tree(steps=(255,) + (15,) * 100)) == []  # 1 in 101
    assert missed_standards(_tree(max_rhat=float("nan"), ess=(float("nan"), 900.0))) == ["r_hat", "ess"]
    assert missed_standards(_tree(ess=(900.0, float("nan")))) == ["ess"]  # a NaN tail ESS fails too
    assert missed_standards(_tree(ok=0)) == ["diagnostics"]
    assert missed_standards(_tree(ok=0, divergences=2)) == ["divergences"]
    assert missed_standards(_tree(ess=(300.0, 300.0)), ess_min=200.0) == []
    assert missed_standards(_tree(max_rhat=1.02), rhat_max=1.05) == []
    bare = _tree()
    del bare.attrs["sampler_settings"]  # no tree depth recorded: the cap counts as met
    assert missed_standards(bare) == []
