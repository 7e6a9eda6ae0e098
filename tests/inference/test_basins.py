"""Posteriors with separated basins: chains from each, weighted by their posterior mass."""

import json
import warnings

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy import special, stats

import pragmodels as pm
from pragmodels.inference.basins import (
    Basin,
    barriers,
    bridge_log_mass,
    chain_inits,
    combine,
    disagreements,
    find_basins,
    merge_connected,
    merge_threshold,
)

Y = np.array([9.0, 9.2, 8.8, 9.1, 8.9])


def two_modes(y):
    """mu^2 is what the data see, so mu = -3 and +3 both fit; the prior N(1, 2) prefers +3."""
    mu = numpyro.sample("mu", dist.Normal(1.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("obs", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu ** 2, sigma), obs=y)


def exact_weight_of_positive_mode():
    """P(mu > 0 | y) by quadrature on a fine grid (the truth the fit must recover)."""
    mu = np.linspace(-4.5, 4.5, 9001)[:, None]
    sigma = np.linspace(1e-3, 3.0, 3000)[None, :]
    logp = (stats.norm.logpdf(mu, 1.0, 2.0) + stats.halfnorm.logpdf(sigma)
            + stats.norm.logpdf(Y[:, None, None], mu ** 2, sigma).sum(0))
    by_mu = special.logsumexp(logp, axis=1)
    return float(np.exp(special.logsumexp(by_mu[mu[:, 0] > 0]) - special.logsumexp(by_mu)))


def test_bridge_sampling_recovers_a_known_normalising_constant():
    """Target 3 x N(0, 1) in 2-D (log Z = log 3), proposal N(0.2, 1.3^2): within 0.02 (4,000 draws each)."""
    rng = np.random.default_rng(0)
    z1 = rng.normal(size=(4000, 2))
    z2 = 0.2 + 1.3 * rng.normal(size=(4000, 2))
    log_p = lambda z: np.log(3.0) + stats.norm.logpdf(z).sum(-1)  # noqa: E731
    log_q = lambda z: stats.norm.logpdf(z, 0.2, 1.3).sum(-1)  # noqa: E731
    assert bridge_log_mass(log_p(z1), log_q(z1), log_p(z2), log_q(z2)) == pytest.approx(np.log(3.0), abs=0.02)


def test_end_points_are_grouped_by_place_and_cut_by_nats():
    ends = {"mu": np.array([3.0, -3.0, 3.1, 0.0, 2.95])}
    basins = find_basins(ends, np.array([1.0, 2.5, 1.2, 30.0, 1.1]), nats=10.0)
    assert [b.starts for b in basins] == [[0, 4, 2], [1]]  # 0.0 is 29 nats worse: no chains
    assert [b.potential for b in basins] == [1.0, 2.5]
    assert len(find_basins(ends, np.array([1.0, 2.5, 1.2, 30.0, 1.1]), nats=1.0)) == 1


def ring(z):
    """A ring of radius 3 (a curved valley, potential 0 on it): its points are one basin, but the straight
    segment between two of them cuts through the middle (20 x (3 - r)^2 nats)."""
    return 20.0 * (jnp.linalg.norm(z) - 3.0) ** 2


def double_well(z):
    """Two wells at x = +-3 with a pass 81/4 = 20.25 nats high at x = 0."""
    return (z[0] ** 2 - 9.0) ** 2 / 4.0 + z[1] ** 2


def test_a_curved_valley_is_one_basin_and_a_real_pass_keeps_two():
    """On the ring the straight segment from angle 0 to 135 degrees rises by 20 x (3 - 3 cos 67.5 deg)^2 =
    69 nats; the relaxed path follows the ring: 0.116 nats, all of it the polyline's first and last chords,
    which cut about 0.08 inside the ring where the hyperplanes' points spread furthest along it.
    The double well's pass is 20.25 nats whichever path: kept (the two basins stay two)."""
    angle = np.deg2rad(135.0)
    ends = {"z": np.array([[3.0, 0.0], [3.0 * np.cos(angle), 3.0 * np.sin(angle)]])}
    basins = [Basin(0.0, [0]), Basin(0.0, [1])]
    straight = barriers(ring, ends, basins, relax_steps=0)
    assert straight[0, 1] == pytest.approx(20 * (3 - 3 * np.cos(angle / 2)) ** 2, rel=0.01)
    relaxed = barriers(ring, ends, basins)
    assert relaxed[0, 1] < 0.2 and relaxed[1, 0] == relaxed[0, 1] and relaxed[0, 0] == 0
    assert barriers(ring, ends, basins, enough=100.0)[0, 1] == pytest.approx(straight[0, 1])  # no relaxing
    assert len(merge_connected(basins, relaxed, merge_threshold(2))) == 1
    wells = {"z": np.array([[3.0, 0.3], [-3.0, -0.2]])}
    pass_ = barriers(double_well, wells, [Basin(0.09, [0]), Basin(0.04, [1])])
    assert pass_[0, 1] == pytest.approx(81 / 4 - 0.09, abs=0.05)
    assert len(merge_connected([Basin(0.09, [0]), Basin(0.04, [1])], pass_, merge_threshold(2))) == 2


def test_a_flat_potential_is_the_models_and_barriers_compile_it_once():
    """FlatPotential(z, arrays) is NumPyro's potential at the point z ravels to; equal models and layouts
    give equal objects, so barriers between the double wells, as a model, trace the model once for two
    data sets of one shape (a closure over each data set traced it every time) and read the pass as the
    closure does."""
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.util import potential_energy

    from pragmodels.inference.basins import FlatPotential

    traced = []

    def wells(shift):
        traced.append(1)
        x = numpyro.sample("x", dist.ImproperUniform(dist.constraints.real, (), ()))
        numpyro.sample("s", dist.Normal(0.0, 1.0).expand([2]).to_event(1))
        numpyro.factor("well", -((x - shift) ** 2 - 9.0) ** 2 / 4.0)

    point = {"x": jnp.array(0.5), "s": jnp.array([0.1, -0.2])}
    flat = FlatPotential.of(wells, point)
    assert flat == FlatPotential.of(wells, {"x": np.zeros(()), "s": np.zeros(2)}) and hash(flat)
    z = ravel_pytree(point)[0]
    data = {"shift": jnp.array(0.0)}
    assert float(flat(z, data)) == pytest.approx(float(potential_energy(wells, (), data, point)), rel=1e-6)
    ends = {"s": np.zeros((2, 2)), "x": np.array([3.0, -3.0])}
    found = [barriers(flat, ends, [Basin(0.0, [0]), Basin(0.0, [1])], args=({"shift": jnp.array(v)},))
             for v in (0.0, 0.001)]
    n = len(traced)
    again = barriers(flat, ends, [Basin(0.0, [0]), Basin(0.0, [1])], args=({"shift": jnp.array(0.002)},))
    assert len(traced) == n  # compiled programs reused: the model was not traced again
    closure = barriers(lambda z: flat(z, data), ends, [Basin(0.0, [0]), Basin(0.0, [1])])
    np.testing.assert_allclose(found[0], closure, rtol=1e-5)
    top = 81 / 4 + np.log(2 * np.pi)  # the pass above basins given potential 0: s's prior adds 2 x log(2 pi) / 2
    assert found[0][0, 1] == pytest.approx(top, abs=0.05) and again[0, 1] == pytest.approx(top, abs=0.05)


def test_merging_is_transitive_and_starts_chains_in_each_piece():
    """Basin 2 connects only to basin 1, which connects to basin 0: all three are one, and its first chains
    start at each piece's optimum in turn."""
    basins = [Basin(1.0, [0, 3]), Basin(1.5, [1, 4]), Basin(2.0, [2])]
    barrier = np.array([[0.0, 0.5, 9.0], [0.5, 0.0, 0.2], [9.0, 0.2, 0.0]])
    merged = merge_connected(basins, barrier, 1.0)
    assert len(merged) == 1 and merged[0].potential == 1.0 and merged[0].starts == [0, 1, 2, 3, 4]
    assert merged[0].pieces == 3 and merged[0].record()["pieces"] == 3
    inits, owner = chain_inits(merged, {"x": np.arange(5.0)}, 3)
    np.testing.assert_array_equal(inits["x"], [0.0, 1.0, 2.0])
    kept = merge_connected(basins, barrier, 0.1)
    assert [b.starts for b in kept] == [[0, 3], [1, 4], [2]]
    with pytest.raises(ValueError, match=r"barrier must be \[3, 3\]"):
        merge_connected(basins, np.zeros((2, 2)))


def test_merge_threshold_is_the_typical_sets_lower_edge_in_many_dimensions():
    """d / 2 - 2 sqrt(d / 2): 119 dimensions (the motives fit) give 44.07 nats; two give the floor of 1."""
    assert merge_threshold(2) == 1.0
    assert merge_threshold(119) == pytest.approx(59.5 - 2 * np.sqrt(59.5))
    assert merge_threshold(119) == pytest.approx(44.07, abs=0.01)


def test_each_chain_draws_from_each_basin_by_its_weight():
    basins = [Basin(0.0, [0], chains=[0, 1], weight=0.75), Basin(1.0, [1], chains=[2, 3], weight=0.25)]
    index = combine({"x": np.zeros((4, 100))}, basins, 2, np.random.default_rng(0))
    assert index.shape == (2, 100, 2)
    from_first = np.isin(index[..., 0], [0, 1]).mean(axis=1)
    np.testing.assert_array_equal(from_first, [0.75, 0.75])
    pairs = {tuple(p) for p in index.reshape(-1, 2)}
    assert len(pairs) == 200  # without replacement
    # each basin's share is one block of consecutive draws of one chain: the chains' autocorrelation is kept
    for c in range(2):
        for block in (index[c, :75], index[c, 75:]):
            assert len(set(block[:, 0])) == 1 and np.all(np.diff(block[:, 1]) == 1)
        assert index[c, 0, 0] in (0, 1) and index[c, 75, 0] in (2, 3)


def test_a_lone_basin_gives_the_runs_chains_in_order():
    """Weight 1 over all the run's chains: the index is the identity (no draw moved); a basin merged from
    three basins' chains (12) into 4 result chains takes a consecutive stretch of each."""
    index = combine({"x": np.zeros((4, 50))}, [Basin(0.0, [0], chains=[0, 1, 2, 3], weight=1.0)], 4,
                    np.random.default_rng(0))
    np.testing.assert_array_equal(index[..., 0], np.repeat(np.arange(4)[:, None], 50, axis=1))
    np.testing.assert_array_equal(index[..., 1], np.tile(np.arange(50), (4, 1)))
    merged = combine({"x": np.zeros((12, 50))}, [Basin(0.0, [0], chains=list(range(12)), weight=1.0)], 4,
                     np.random.default_rng(1))
    flat = merged[..., 0] * 50 + merged[..., 1]  # the draw's place in the chains laid end to end
    assert np.all(np.diff(flat, axis=1) == 1) and len(set(flat.ravel())) == 200
    assert all(150 * c <= flat[c, 0] and flat[c, -1] < 150 * (c + 1) for c in range(4))  # stretch c of 12 chains
    with pytest.raises(ValueError, match="basin 0 has 2 chain"):
        combine({"x": np.zeros((2, 50))}, [Basin(0.0, [0], chains=[0, 1], weight=1.0)], 4, np.random.default_rng(0))


def test_disagreeing_basins_are_named():
    a = Basin(0.0, [0], weight=0.6, summary={"mu": [3.0, 2.9, 3.1]})
    b = Basin(1.0, [1], weight=0.4, summary={"mu": [-3.0, -3.1, -2.9]})
    light = Basin(2.0, [2], weight=0.001, summary={"mu": [0.0, -0.1, 0.1]})
    found = disagreements([a, b, light])
    assert len(found) == 1 and "basins 0 and 1" in found[0] and "mu" in found[0]


@pytest.mark.nuts
@pytest.mark.slow  # statistical (40 s cold); init="basins" end to end in the default tier: the test below
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")
def test_two_mode_posterior_weights_recovered_and_missed_by_one_basin():
    """Truth by quadrature (about 0.82 on mu > 0). init="basins" recovers it within 0.03 (the bridge
    estimate's error is below 0.01 here; 0.03 allows for the draws' allocation and a looser basin);
    init="optimize" (the negative control) puts every draw in one mode and misses it by > 0.15."""
    truth = exact_weight_of_positive_mode()
    assert 0.7 < truth < 0.9
    kw = dict(num_warmup=500, num_samples=500, num_chains=2, progress_bar=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tree = pm.fit(0, two_modes, dict(y=Y), init="basins", **kw)
    assert any("disagree on mu" in str(w.message) for w in caught)
    record = json.loads(tree.attrs["basins"])
    assert len(record["basins"]) == 2
    # found by place (end points short of the optimum on sigma's ridge open basins of their own), joined
    # where no pass rises above 1 nat, kept apart by the pass at mu = 0 (y = 0 against 9: far above 1 nat)
    assert len(record["by_place"]) >= 2 and record["merge_barrier_nats"] == 1.0
    assert sum(b["starts"] for b in record["by_place"]) == sum(b["starts"] for b in record["basins"])
    assert np.max(record["barriers"]) > 50
    weights = {np.sign(b["summary"]["mu"][0]): b["weight"] for b in record["basins"]}
    assert weights[1.0] == pytest.approx(truth, abs=0.03)
    mu = tree.posterior["mu"].values
    assert mu.shape == (2, 500) and (mu > 0).mean() == pytest.approx(truth, abs=0.03)
    assert tree.log_likelihood["y"].shape == (2, 500, 5)
    # each basin diagnosed on its own chains (r_hat within the basin; short chains may miss the ESS bar)
    assert all(b["diagnostics"]["max_rhat"] < 1.05 and b["chains"] for b in record["basins"])
    single = pm.fit(0, two_modes, dict(y=Y), init="optimize", **kw)
    share = (single.posterior["mu"].values > 0).mean()
    assert abs(share - truth) > 0.15


@pytest.mark.nuts
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")
def test_basin_merge_false_samples_every_basin_found_by_place():
    """The escape hatch: with ``basin_merge=False`` no barrier is computed and each basin found by place gets
    chains of its own (``basins`` records one piece each); with the default the same starts are joined."""
    kw = dict(num_warmup=100, num_samples=100, num_chains=1, progress_bar=False, init="basins")
    fits = [pm.fit(0, two_modes, dict(y=Y), basin_merge=merge, **kw) for merge in (False, True)]
    assert all("postprocessing_error" not in t.attrs for t in fits)
    apart, joined = (json.loads(t.attrs["basins"]) for t in fits)
    assert apart["barriers"] is None and apart["merge_barrier_nats"] is None
    assert sum(len(b["chains"]) for b in apart["basins"]) == len(apart["by_place"]) > 2
    # (basins that mixed are merged after sampling: pieces count what each final basin holds)
    assert sum(b["pieces"] for b in apart["basins"]) == len(apart["by_place"])
    assert joined["by_place"] == apart["by_place"] and len(joined["basins"]) < len(apart["by_place"])


def one_mode(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    with numpyro.plate("obs", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


@pytest.mark.nuts
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # 2 x 100 draws: low ESS
def test_a_lone_basin_has_weight_one_and_no_mass_estimate(monkeypatch):
    """One basin: weight 1 by definition, so bridge sampling is skipped (no log density of any draw is
    evaluated for it), its mass recorded as None (JSON has no NaN) and the method says so; the draws are
    the chains' own, in order."""
    from pragmodels.inference import basins as basins_module

    def never(*a, **k):
        raise AssertionError("bridge sampling ran for a lone basin")

    monkeypatch.setattr(basins_module, "bridge_log_mass", never)
    from pragmodels.inference import fitting

    indices = []
    monkeypatch.setattr(fitting, "combine", lambda *a: indices.append(combine(*a)) or indices[-1])
    kw = dict(num_warmup=100, num_samples=100, num_chains=2, progress_bar=False, init="basins")
    tree = pm.fit(0, one_mode, dict(y=Y), **kw)
    (index,) = indices  # the run's chains, each in its order
    np.testing.assert_array_equal(index, np.stack(np.meshgrid(np.arange(2), np.arange(100), indexing="ij"), -1))
    record = json.loads(tree.attrs["basins"])
    assert "postprocessing_error" not in tree.attrs
    assert len(record["basins"]) == 1 and record["method"] == "one basin: weight 1, its mass not estimated"
    (basin,) = record["basins"]
    assert basin["weight"] == 1.0 and basin["log_mass"] is None and basin["log_mass_se"] is None
    assert basin["chains"] == [0, 1] and tree.posterior["mu"].shape == (2, 100)
    assert abs(float(tree.posterior["mu"].mean()) - Y.mean()) < 0.3  # 5 obs of SD 1: posterior SD 0.45


@pytest.mark.nuts
@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short chains, unmixed basins
def test_a_mass_bridge_sampling_cannot_estimate_keeps_every_chain(monkeypatch):
    """A NaN log mass (bridge sampling failed) leaves the weights undefined: the fit does not lose its chains
    but keeps every basin's chains as they ran, diagnosed together, and says why (postprocessing_error,
    PostprocessingWarning); combine refuses such weights by name."""
    from pragmodels.inference import basins as basins_module
    from pragmodels.inference.fitting import PostprocessingWarning

    monkeypatch.setattr(basins_module, "bridge_log_mass", lambda *a, **k: float("nan"))
    kw = dict(num_warmup=100, num_samples=100, num_chains=1, progress_bar=False, init="basins", basin_merge=False)
    with pytest.warns(PostprocessingWarning, match="basins"):
        tree = pm.fit(0, two_modes, dict(y=Y), **kw)
    errors = json.loads(tree.attrs["postprocessing_error"])
    assert "weights must be finite" in errors["basins"]
    record = json.loads(tree.attrs["basins"])
    chains = sorted(c for basin in record["basins"] for c in basin["chains"])
    # every chain that ran, none dropped: one per basin found by place (num_chains=1, basin_merge=False);
    # basins whose chains mixed are joined before the weighing fails, so a basin may hold several
    assert len(record["basins"]) > 1 and len(chains) == len(record["by_place"])
    assert chains == list(range(len(chains))) and tree.posterior["mu"].shape == (len(chains), 100)
    with pytest.raises(ValueError, match=r"weights must be finite.*\[nan, nan\]"):
        combine({"x": np.zeros((2, 10))}, [Basin(0.0, [0], chains=[0], weight=float("nan")),
                                          Basin(1.0, [1], chains=[1], weight=float("nan"))], 1,
                np.random.default_rng(0))
