"""The rater likelihood (pragmodels.likelihoods.rater) against direct integration with SciPy's
adaptive quadrature, its layout checks, and its predictive draws."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers
from scipy import integrate, stats
from scipy.special import expit

from pragmodels.likelihoods.rater import likert_ratings_by_rater, quadrature, rater_slots


def _design(n_raters=9, n_cells=3, n_items=4, seed=0):
    rng = np.random.default_rng(seed)
    cell_of = np.arange(n_raters) % n_cells
    rater = np.repeat(np.arange(n_raters), n_items)
    item = np.tile(np.arange(n_items), n_raters)
    keep = rng.random(rater.size) > 0.15  # some raters skip items
    keep[:n_items] = True
    return rater[keep], cell_of[rater[keep]], item[keep], rng


def _naive(latent, cut, loading, lapse, rater, cell, item, y, n_raters):
    """Per rater: scipy.integrate.quad of prod_i [(1-lapse) P(y_i | latent + loading*e) + lapse/K] phi(e)."""
    k = cut.shape[1] + 1
    out = np.zeros(n_raters)
    for r in range(n_raters):
        rows = np.flatnonzero(rater == r)
        if rows.size == 0:
            continue

        def f(e):
            val = stats.norm.pdf(e)
            for j in rows:  # noqa: B023 - f is integrated within this iteration
                eta = latent[cell[j], item[j]] + loading[item[j]] * e
                c = np.concatenate([[-np.inf], cut[item[j]], [np.inf]])
                p = expit(c[y[j]] - eta) - expit(c[y[j] - 1] - eta)  # y 1-based
                val *= (1 - lapse) * p + lapse / k
            return val
        out[r] = np.log(integrate.quad(f, -12, 12, epsabs=0, epsrel=1e-11, limit=400)[0])
    return out


@pytest.mark.parametrize("lapse,scale", [(0.0, 1.0), (0.05, 3.0)])  # scale 3: narrow integrands (loading 4.5 logits)
def test_matches_direct_integration(lapse, scale):
    rater, cell, item, rng = _design()
    latent = rng.normal(0, 1.5, (3, 4))
    cut = np.sort(rng.normal(0, 2, (4, 6)), 1)
    loading = np.array([1.5, 1.0, 0.5, 1.2]) * scale
    y = rng.integers(1, 8, rater.size)
    tr = handlers.trace(handlers.seed(likert_ratings_by_rater, 0)).get_trace(
        "y", jnp.asarray(latent), jnp.asarray(cut), jnp.asarray(loading), y, rater=rater, cell=cell, item=item,
        n_raters=9, lapse=lapse, n_nodes=161 if scale > 1 else 81)
    got = np.asarray(tr["y"]["fn"].log_prob(tr["y"]["value"]), np.float64)
    want = _naive(latent, cut, loading, lapse, rater, cell, item, y, 9)
    # float32 sums of six log-probabilities: 1e-4 relative; the quadrature's own error is ~1e-6 (module docstring)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_layout_errors_name_the_rater():
    rater, cell, item, _ = _design()
    bad_cell = cell.copy()
    bad_cell[1] = (bad_cell[0] + 1) % 3
    with pytest.raises(ValueError, match=r"rater 0 rated in cells 0 and 1"):
        rater_slots(rater, bad_cell, item, 9, 3, 4)
    dup = item.copy()
    dup[1] = dup[0]
    with pytest.raises(ValueError, match=r"rater 0 rated item 0 twice"):
        rater_slots(rater, cell, dup, 9, 3, 4)
    with pytest.raises(ValueError, match=r"item\[0\] = 7; expected an integer in 0..3"):
        rater_slots(rater, cell, np.where(np.arange(item.size) == 0, 7, item), 9, 3, 4)
    with pytest.raises(ValueError, match=r"y\[2\] = 8; expected an integer rating in 1..7"):
        likert_ratings_by_rater("y", jnp.zeros((3, 4)), jnp.tile(jnp.linspace(-2, 2, 6), (4, 1)), jnp.ones(4),
                                np.where(np.arange(rater.size) == 2, 8, 3), rater=rater, cell=cell, item=item,
                                n_raters=9)


def test_traced_indices_need_slots_and_predictive_draws_follow_the_model():
    rater, cell, item, _ = _design()
    args = (jnp.zeros((3, 4)), jnp.tile(jnp.linspace(-2, 2, 6), (4, 1)), jnp.ones(4))

    def run(r):
        return likert_ratings_by_rater("y", *args, rater=r, cell=cell, item=item, n_raters=9)
    with pytest.raises(ValueError, match=r"pass slots=rater_slots"):
        jax.jit(lambda r: handlers.seed(run, 0)(r))(rater)
    # draws: -1 exactly where a rater has no rating; category frequencies match the marginal model
    slots = rater_slots(rater, cell, item, 9, 3, 4)
    tr = handlers.trace(handlers.seed(likert_ratings_by_rater, 1)).get_trace(
        "y", *args, rater=rater, cell=cell, item=item, n_raters=9, slots=slots)
    fn = tr["y"]["fn"]
    draws = np.asarray(fn.sample(jax.random.PRNGKey(2), (4000,)))  # [draw, rater, item]
    mask = np.zeros((9, 4), bool)
    mask[rater, item] = True
    assert ((draws == -1) == ~mask[None]).all()
    # latent 0, symmetric cutpoints: the marginal P(category 3) = ∫ P(3 | e) phi(e) de
    x, logw = quadrature()
    c = np.linspace(-2, 2, 6)
    p3 = (np.exp(logw) * (expit(c[3] - x) - expit(c[2] - x))).sum()
    freq = (draws[:, mask] == 3).mean()
    # 4000 draws x 31 cells, correlated within raters: SE below 0.005; 0.02 is four of them
    assert abs(freq - p3) < 0.02, (freq, p3)


@pytest.mark.filterwarnings("ignore::pragmodels.inference.diagnostics.FitWarning")  # short chains: convergence is not checked here
@pytest.mark.nuts
def test_fit_draws_the_posterior_predictive_of_a_rater_site():
    """Through pragmodels.fit: log-likelihood per rater and a posterior predictive group, with no
    postprocessing error (a ``mask`` attribute once shadowed ``Distribution.mask``, which numpyro's
    mask handler calls: the predictive failed and the fit only recorded it)."""
    import numpyro
    import numpyro.distributions as dist

    import pragmodels as pm

    rater, cell, item, rng = _design()
    y = rng.integers(1, 8, rater.size)
    slots = rater_slots(rater, cell, item, 9, 3, 4)

    def model(rater, cell, item, y=None, slots=None):
        mu = numpyro.sample("mu", dist.Normal(0, 1))
        likert_ratings_by_rater("y", jnp.full((3, 4), mu), jnp.tile(jnp.linspace(-2, 2, 6), (4, 1)), jnp.ones(4), y,
                                rater=rater, cell=cell, item=item, n_raters=9, slots=slots)
    tree = pm.fit(0, model, dict(rater=rater, cell=cell, item=item, y=y, slots=slots), num_warmup=30,
                  num_samples=20, num_chains=1, progress_bar=False)
    assert "postprocessing_error" not in tree.attrs
    pp = tree["posterior_predictive"]["y"].values  # [chain, draw, rater, item]
    assert pp.shape == (1, 20, 9, 4) and ((pp == -1) == (tree["observed_data"]["y"].values == -1)[None, None]).all()
    assert tree["log_likelihood"]["y"].shape == (1, 20, 9)


@pytest.mark.parametrize("lapse", [0.0, 1e-4, 0.05, 0.6, 1.0])
def test_node_log_probs_is_the_log_space_pair(lapse):
    """Probability-space node table = ordinal_log_probs then log_mix_uniform, in value and gradient,
    latents 30 logits beyond the cutpoints included (float32: 2e-6 absolute, 1e-4 relative)."""
    from pragmodels.likelihoods.categorical import ordinal_log_probs
    from pragmodels.likelihoods.rater import node_log_probs
    from pragmodels.logmath import log_mix_uniform

    lat = jnp.linspace(-30, 30, 41, dtype=jnp.float32)
    cut = jnp.asarray([-2.0, -1.0, -0.2, 0.5, 1.5, 3.0], jnp.float32)
    ref = lambda lat, cut, w: log_mix_uniform(ordinal_log_probs(lat, cut), w)  # noqa: E731
    w = lapse if lapse == 0 else jnp.float32(lapse)
    np.testing.assert_allclose(node_log_probs(lat, cut, w), ref(lat, cut, w), atol=2e-6, rtol=1e-5)
    weights = jnp.asarray(np.random.default_rng(1).random((41, 7)), jnp.float32)  # a generic linear functional
    args = (0, 1) if lapse == 0 else (0, 1, 2)
    g = jax.grad(lambda *a: (node_log_probs(*a) * weights).sum(), argnums=args)(lat, cut, w)
    g_ref = jax.grad(lambda *a: (ref(*a) * weights).sum(), argnums=args)(lat, cut, w)
    for a, b in zip(g, g_ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"node_log_probs: lapse = 1.5; expected a lapse"):
        node_log_probs(lat, cut, 1.5)
    with pytest.raises(ValueError, match=r"node_log_probs: lapse must be a scalar; got shape \(2,\)"):
        node_log_probs(lat, cut, jnp.asarray([0.1, 0.2]))


def test_node_log_probs_hand_written_derivative_is_exact_to_second_order():
    """The node table's derivative is a custom JVP: in float64 its Hessians (in the latents and in the
    cutpoints), forward mode in the lapse and a vmapped gradient equal autodiff of the log-space pair
    to 1e-12 relative (rounding only; measured 2e-16 to 4e-16 relative)."""
    from pragmodels.likelihoods.categorical import ordinal_log_probs
    from pragmodels.likelihoods.rater import node_log_probs
    from pragmodels.logmath import log_mix_uniform

    with jax.enable_x64(True):
        cut = jnp.asarray([-2.0, -1.0, -0.2, 0.5, 1.5, 3.0], jnp.float64)
        lat = jnp.linspace(-8.0, 8.0, 9, dtype=jnp.float64)
        weights = jnp.asarray(np.random.default_rng(0).random((9, 7)), jnp.float64)
        w = jnp.asarray(0.05, jnp.float64)
        ours = lambda lat, cut, w: (node_log_probs(lat, cut, w) * weights).sum()  # noqa: E731
        ref = lambda lat, cut, w: (log_mix_uniform(ordinal_log_probs(lat, cut), w) * weights).sum()  # noqa: E731
        ops = [lambda f, lat, cut: jax.hessian(f, 0)(lat, cut, w), lambda f, lat, cut: jax.hessian(f, 1)(lat, cut, w),
               lambda f, lat, cut: jax.jacfwd(f, 2)(lat, cut, w),
               lambda f, lat, cut: jax.vmap(jax.grad(f), (0, None, None))(jnp.stack([lat, lat + 1.0]), cut, w)]
        # each under jit, the latents and cutpoints its arguments (the lapse a concrete 0.05, as eagerly): one
        # program per derivative, not hundreds of eager ones (cold: 11.1 -> 1.8 s)
        for op in ops:
            a, b = (np.asarray(jax.jit(lambda lat, cut, op=op, f=f: op(f, lat, cut))(lat, cut)) for f in (ours, ref))
            assert a.dtype == np.float64
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * np.abs(b).max())


def test_node_log_probs_stays_finite_where_probability_space_underflows():
    """Latents 200 logits beyond the cutpoints: a concrete zero lapse (Python or JAX) keeps the
    exact log-space tail; a tiny or traced-zero lapse floors the mixture (finite value and gradient)."""
    from pragmodels.likelihoods.categorical import ordinal_log_probs
    from pragmodels.likelihoods.rater import node_log_probs

    lat = jnp.asarray([-200.0, 0.0, 200.0], jnp.float32)
    cut = jnp.asarray([-2.0, -1.0, -0.2, 0.5, 1.5, 3.0], jnp.float32)
    exact = ordinal_log_probs(lat, cut)
    assert float(exact.min()) < -150  # the far tail exists in log space
    np.testing.assert_array_equal(node_log_probs(lat, cut, jnp.float32(0.0)), exact)
    ref = np.log((1 - 1e-4) * np.exp(np.asarray(exact, np.float64)) + 1e-4 / 7)  # float64 reference
    np.testing.assert_allclose(node_log_probs(lat, cut, jnp.float32(1e-4)), ref, rtol=1e-5, atol=1e-6)
    f = jax.jit(lambda lat, w: node_log_probs(lat, cut, w))
    for w in (0.0, 1e-40, 1e-4):
        val = f(lat, jnp.float32(w))
        g = jax.grad(lambda lat, w: f(lat, w).sum(), argnums=(0, 1))(lat, jnp.float32(w))
        assert np.isfinite(val).all() and all(np.isfinite(x).all() for x in g), w


@pytest.mark.parametrize("row, match", [
    ([-1.0, 0.0, 0.0, 1.0, 2.0, 3.0], r"cutpoints\[1, 2\] = 0.0 is not above cutpoints\[1, 1\] = 0.0; expected strictly"),
    ([3.0, 2.0, 1.0, 0.0, -1.0, -2.0], r"cutpoints\[1, 1\] = 2.0 is not above cutpoints\[1, 0\] = 3.0"),
    ([-1.0, 0.0, np.nan, 1.0, 2.0, 3.0], r"cutpoints\[1, 2\] = nan; expected finite values"),
])
def test_bad_cutpoints_are_named(row, match):
    """Issue 33, item 3: decreasing cutpoints gave a NaN log-likelihood (node_log_probs: a floored
    -87 'probability'); the site and node_log_probs now name them, as likert_ratings does."""
    from pragmodels.likelihoods.rater import node_log_probs

    rater, cell, item, rng = _design()
    cut = np.tile(np.linspace(-2, 2, 6), (4, 1))
    cut[1] = row
    y = rng.integers(1, 8, rater.size)
    with pytest.raises(ValueError, match=r"site 'y': " + match):
        likert_ratings_by_rater("y", jnp.zeros((3, 4)), jnp.asarray(cut), jnp.ones(4), y, rater=rater, cell=cell,
                                item=item, n_raters=9, lapse=0.05)
    with pytest.raises(ValueError, match=r"node_log_probs: " + match):
        node_log_probs(jnp.zeros(4), jnp.asarray(cut), 0.05)
    with pytest.raises(ValueError, match=r"site 'y': loading\[2\] = nan"):
        likert_ratings_by_rater("y", jnp.zeros((3, 4)), jnp.tile(jnp.linspace(-2, 2, 6), (4, 1)),
                                jnp.array([1.0, 1.0, np.nan, 1.0]), y, rater=rater, cell=cell, item=item, n_raters=9)


def test_a_lapse_that_is_not_one_weight_is_named_by_the_site():
    """Issue 33, item 4: the site names its lapse (it was named as node_log_probs' argument)."""
    rater, cell, item, rng = _design()
    args = ("y", jnp.zeros((3, 4)), jnp.tile(jnp.linspace(-2, 2, 6), (4, 1)), jnp.ones(4), rng.integers(1, 8, rater.size))
    with pytest.raises(ValueError, match=r"site 'y': lapse must be a scalar \(one lapse for every rating\); got shape \(2,\)"):
        likert_ratings_by_rater(*args, rater=rater, cell=cell, item=item, n_raters=9, lapse=jnp.array([0.1, 0.2]))
    with pytest.raises(ValueError, match=r"site 'y': lapse = 1.5; expected a lapse"):
        likert_ratings_by_rater(*args, rater=rater, cell=cell, item=item, n_raters=9, lapse=1.5)
