"""Observation models: log-probabilities against scipy / hand computation, validation, predictive mode."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro import handlers
from scipy import stats

from pragmodels.inference.predictive import unobserve
from pragmodels.likelihoods import categorical
from pragmodels.semantics import bin_edges, bin_index


def site_log_prob(fn, *args, **kw):
    tr = handlers.trace(handlers.seed(fn, 0)).get_trace(*args, **kw)
    site = next(s for s in tr.values() if s["type"] == "sample")
    return np.asarray(site["fn"].log_prob(site["value"])), site


def test_choices_with_lapse_match_hand_computation():
    p = np.array([[0.6, 0.4, 0.0], [0.1, 0.2, 0.7]])
    obs = np.array([2, 2])
    lp, site = site_log_prob(categorical.listener_choices, "c", jnp.log(p), obs, lapse=0.3)
    np.testing.assert_allclose(lp, np.log(0.7 * p[[0, 1], [2, 2]] + 0.1), rtol=1e-6)
    assert site["is_observed"]
    # an impossible choice without lapse: named eagerly (issue 9, finding 14) ...
    with pytest.raises(ValueError, match=r"site 'c': trial 0 \(c = 2, log_probs\[0\]\) has probability 0 under "
                                         r"the model and no lapse explains it \(1 such trial"):
        site_log_prob(categorical.listener_choices, "c", jnp.log(p), obs, lapse=0.0)
    # ... and -inf where the values are traced (inside the sampler)
    def traced(lp):
        tr = handlers.trace(handlers.seed(categorical.listener_choices, 0)).get_trace("c", lp, obs, lapse=0.0)
        return tr["c"]["fn"].log_prob(tr["c"]["value"])

    lp0 = np.asarray(jax.jit(traced)(jnp.log(p)))
    assert np.isneginf(lp0[0]) and np.isfinite(lp0[1])


def test_choices_reject_out_of_range_obs_by_name():
    with pytest.raises(ValueError, match=r"site 'resp': resp\[1\] = 3; expected an integer state index in 0..2"):
        site_log_prob(categorical.listener_choices, "resp", jnp.zeros((2, 3)), np.array([0, 3]))
    with pytest.raises(ValueError, match="obs must have shape \\(2,\\)"):
        site_log_prob(categorical.speaker_choices, "resp", jnp.zeros((2, 3)), np.array([0, 1, 1]))


def test_choice_counts_match_scipy_multinomial():
    p = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    counts = np.array([[3, 1, 0], [0, 5, 5]])
    lp, _ = site_log_prob(categorical.choice_counts, "n", jnp.log(p), counts, lapse=0.1)
    q = 0.9 * p + 0.1 / 3
    ref = [stats.multinomial.logpmf(c, c.sum(), qq) for c, qq in zip(counts, q)]
    np.testing.assert_allclose(lp, ref, rtol=1e-5)
    with pytest.raises(ValueError, match=r"counts\[0, 1\] = -1"):
        site_log_prob(categorical.choice_counts, "n", jnp.log(p), np.array([[1, -1, 0], [0, 0, 1]]))


def test_likert_matches_numpyro_ordered_logistic_and_rejects_bad_ratings():
    latent = jnp.array([-1.0, 0.3, 2.0])
    cut = jnp.array([-2.0, -0.5, 0.5, 1.0, 2.0, 3.0])
    ratings = np.array([1, 4, 7])
    lp, _ = site_log_prob(categorical.likert_ratings, "r", latent, cut, ratings)
    ref = dist.OrderedLogistic(latent, cut).log_prob(jnp.asarray(ratings - 1))
    np.testing.assert_allclose(lp, np.asarray(ref), rtol=1e-5)
    probs = np.exp(np.asarray(categorical.ordinal_log_probs(latent, cut)))
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    with pytest.raises(ValueError, match=r"r\[2\] = 8; expected an integer rating in 1..7"):
        site_log_prob(categorical.likert_ratings, "r", latent, cut, np.array([1, 2, 8]))


@pytest.mark.parametrize("per_condition", [False, True])
def test_likert_with_a_scalar_lapse_is_the_mixture_of_numpyros_ordered_logistic(per_condition):
    """A scalar lapse is mixed in with the probabilities in one step (node_log_probs): the values are
    ``log((1 - lapse) P_OrderedLogistic + lapse / 7)`` (NumPyro's distribution, the reference), per
    rating or through ``rows``; traced (a sampled lapse) the value and the gradient in latent,
    cutpoints and lapse equal the two-step form's (log-space probabilities, then ``log_mix_uniform``)."""
    from pragmodels.logmath import log_mix_uniform

    latent = jnp.array([-1.0, 0.3, 2.0, 9.0])
    cut = jnp.array([-2.0, -0.5, 0.5, 1.0, 2.0, 3.0])
    ratings = np.array([1, 4, 7, 1])  # the last far in a tail: 11 logits below the first cutpoint
    rows = np.array([0, 1, 2, 3]) if per_condition else None
    lapse = 0.03
    lp, site = site_log_prob(categorical.likert_ratings, "r", latent, cut, ratings, lapse=lapse, rows=rows)
    p = np.exp(np.asarray(dist.OrderedLogistic(latent, cut).log_prob(jnp.arange(7)[:, None]), float)).T
    ref = np.log((1 - lapse) * p[np.arange(4), ratings - 1] + lapse / 7)
    np.testing.assert_allclose(lp, ref, rtol=1e-5)

    def total(lat, c, w, one_step):
        if one_step:
            fn = categorical.likert_ratings
        else:
            def fn(name, lat, c, obs, lapse, rows):
                return categorical.choices(name, log_mix_uniform(categorical.ordinal_log_probs(lat, c), lapse),
                                           obs - 1, what="rating", dim="response", rows=rows)
        return site_log_prob_traced(fn, "r", lat, c, ratings, lapse=w, rows=rows).sum()

    for w in (0.03, 1e-4):
        one = jax.value_and_grad(lambda *a: total(*a, True), argnums=(0, 1, 2))(latent, cut, jnp.asarray(w))
        two = jax.value_and_grad(lambda *a: total(*a, False), argnums=(0, 1, 2))(latent, cut, jnp.asarray(w))
        np.testing.assert_allclose(one[0], two[0], rtol=1e-6)
        for g1, g2 in zip(one[1], two[1], strict=True):
            np.testing.assert_allclose(g1, g2, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match=r"site 'r': lapse = 1.5; expected a lapse"):
        site_log_prob(categorical.likert_ratings, "r", latent, cut, ratings, lapse=1.5)
    # integer latents and cutpoints: the lapse is still mixed in (a float, not truncated to the inputs' int)
    ints = np.exp(np.asarray(categorical.node_log_probs(jnp.array([0, 1]), jnp.array([-1, 0, 1]), 0.5)))
    floats = np.exp(np.asarray(categorical.ordinal_log_probs(jnp.array([0.0, 1.0]), jnp.array([-1.0, 0.0, 1.0]))))
    np.testing.assert_allclose(ints, 0.5 * floats + 0.5 / 4, rtol=1e-6)


def site_log_prob_traced(fn, *args, **kw):
    """The observed site's log-probabilities, for use under a transformation (no numpy conversion)."""
    tr = handlers.trace(handlers.seed(fn, 0)).get_trace(*args, **kw)
    site = next(s for s in tr.values() if s["type"] == "sample")
    return site["fn"].log_prob(site["value"])


def test_binned_slider_responses():
    edges = bin_edges(0, 100, 21)
    idx = bin_index([0, 2.4, 50, 99.9, 100], edges)
    assert idx.tolist() == [0, 0, 10, 20, 20]
    with pytest.raises(ValueError, match=r"response\[1\] = 101.0 lies outside the scale \[0.0, 100.0\]"):
        bin_index([5, 101], edges)
    log_p = jnp.log(jnp.full((5, 21), 1 / 21))
    lp, _ = site_log_prob(categorical.binned_responses, "slider", log_p, idx, lapse=0.2)
    np.testing.assert_allclose(lp, np.log(1 / 21), rtol=1e-5)


def test_unobserve_resamples_with_the_right_frequencies():
    p = np.array([[0.2, 0.8]] * 4000)
    obs = np.zeros(4000, int)
    tr = handlers.trace(handlers.seed(unobserve(categorical.listener_choices), 1)).get_trace("c", jnp.log(p), obs)
    draws = np.asarray(tr["c"]["value"])
    # binomial sd of the mean = sqrt(.16/4000) = .0063; 5 sd tolerance
    assert abs(draws.mean() - 0.8) < 0.032
    assert not tr["c"]["is_observed"]


def test_plate_names_the_observation_dim():
    tr = handlers.trace(handlers.seed(categorical.choices, 0)).get_trace("c", jnp.log(jnp.full((3, 2), 0.5)), np.array([0, 1, 1]), dim="item")
    assert tr["item"]["type"] == "plate" and tr["item"]["args"][0] == 3


def test_unnormalised_log_probs_are_rejected_by_name():
    with pytest.raises(ValueError, match=r"site 'c': log_probs\[1\] sums to 2 over states"):
        site_log_prob(categorical.listener_choices, "c", jnp.log(jnp.array([[0.5, 0.5], [1.0, 1.0]])), np.array([0, 1]))


def test_ordinal_log_probs_stay_accurate_and_informative_in_the_tails():
    """Against float64 logistic CDF differences (taken on whichever side of the latent score
    avoids cancellation), including categories 30-60 logits away, where a float32 difference
    of sigmoids rounds to zero. Tolerance 2e-4: float32 evaluation."""
    cut = np.array([-2.0, -0.5, 0.5, 1.0, 2.0, 3.0])
    latent = np.array([-40.0, -8.0, 0.3, 9.0, 60.0])
    lp = np.asarray(categorical.ordinal_log_probs(jnp.asarray(latent, jnp.float32), jnp.asarray(cut, jnp.float32)))
    edges = np.concatenate([[-np.inf], cut, [np.inf]])
    z = edges[None, :] - latent[:, None]  # [latent, edge]
    lo, hi = z[:, :-1], z[:, 1:]
    with np.errstate(divide="ignore"):  # the side not used underflows
        via_cdf = np.log(stats.logistic.cdf(hi) - stats.logistic.cdf(lo))
        via_sf = np.log(stats.logistic.sf(lo) - stats.logistic.sf(hi))
    ref = np.where(lo > 0, via_sf, via_cdf)
    assert np.all(np.isfinite(ref)) and ref.min() < -60
    np.testing.assert_allclose(lp, ref, rtol=2e-4, atol=2e-4)
    # the gradient with respect to the latent still points towards a far-away observed rating
    g = jax.grad(lambda eta: categorical.ordinal_log_probs(eta, jnp.asarray(cut))[6])(jnp.float32(-40.0))
    assert float(g) > 0.9


def _unnormalised_site(kind):
    """Each observation site given a table (or beliefs) whose row 0 sums to 2: (site fn, args, kwargs, name, what)."""
    p = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    bad = jnp.log(jnp.asarray(p * np.array([[2.0], [1.0]]), jnp.float32))
    obs = np.array([0, 2])
    if kind == "choices":
        return categorical.choices, ("y", bad, obs), {}, "log_probs", "option"
    if kind == "choices rows":
        return categorical.choices, ("y", bad, obs), dict(rows=np.array([0, 1])), "log_probs", "option"
    if kind == "binned_responses":
        return categorical.binned_responses, ("y", bad, obs), {}, "log_probs", "bin"
    if kind == "choice_counts":
        return categorical.choice_counts, ("y", bad, np.array([[3, 1, 0], [0, 5, 5]])), {}, "log_probs", "option"
    from pragmodels.likelihoods import slider
    return (slider.slider_responses, ("y", bad, np.array([10, 90])),
            dict(state_values=np.array([0.0, 50.0, 100.0]), width=5.0, lapse=0.1), "log_p_state", "state")


@pytest.mark.parametrize("kind", ["choices", "choices rows", "binned_responses", "choice_counts", "slider_responses"])
def test_every_site_checks_its_table_the_same_way(kind):
    """Issue 33, item 3: choice_counts took an unnormalised table (a finite, wrong log-likelihood);
    the slider named its derived table, not the user's beliefs. Every site now checks its table
    with one checker (categorical.check_table) and names the site, the argument and the row."""
    fn, args, kw, name, what = _unnormalised_site(kind)
    with pytest.raises(ValueError, match=rf"site 'y': {name}\[0\] sums to 2 over {what}s; pass normalised"):
        site_log_prob(fn, *args, **kw)
    nan_table = np.array(args[1])
    nan_table[1, 1] = np.nan
    with pytest.raises(ValueError, match=rf"site 'y': {name}\[1, 1\] = nan; expected finite values or -inf"):
        site_log_prob(fn, args[0], nan_table, *args[2:], **kw)


def test_choice_counts_names_a_count_the_model_cannot_produce():
    """Issue 33, item 3: a count in a probability-0 cell without a lapse gave -inf; now named as
    choices names an impossible trial. A lapse explains it; a zero count there is no problem;
    traced (inside the sampler) it stays -inf."""
    p0 = np.array([[0.5, 0.5, 0.0], [0.2, 0.2, 0.6]])
    counts = np.array([[3, 1, 1], [0, 5, 5]])
    with pytest.raises(ValueError, match=r"site 'n': counts\[0, 2\] = 1 \(option 2 of log_probs\[0\]\) has probability "
                                         r"0 under the model and no lapse explains it \(1 such cell\(s\)\); check the "
                                         r"data, or add a lapse"):
        site_log_prob(categorical.choice_counts, "n", jnp.log(p0), counts)
    lp, _ = site_log_prob(categorical.choice_counts, "n", jnp.log(p0), counts, lapse=0.1)
    assert np.isfinite(lp).all()
    lp, _ = site_log_prob(categorical.choice_counts, "n", jnp.log(p0), np.array([[3, 1, 0], [0, 5, 5]]))
    assert np.isfinite(lp).all()

    def traced(lp):
        tr = handlers.trace(handlers.seed(categorical.choice_counts, 0)).get_trace("n", lp, counts)
        return tr["n"]["fn"].log_prob(tr["n"]["value"])

    out = np.asarray(jax.jit(traced)(jnp.log(jnp.asarray(p0))))
    assert np.isneginf(out[0]) and np.isfinite(out[1])


@pytest.mark.parametrize("cut, match", [
    ([-1.0, 0.0, 0.0, 1.0], r"cutpoints\[2\] = 0.0 is not above cutpoints\[1\] = 0.0; expected strictly increasing"),
    ([1.0, 0.0, -1.0], r"cutpoints\[1\] = 0.0 is not above cutpoints\[0\] = 1.0; expected strictly increasing"),
    ([-1.0, np.nan, 1.0], r"cutpoints\[1\] = nan; expected finite values"),
    ([-1.0, 0.0, np.inf], r"cutpoints\[2\] = inf; expected finite values"),
])
def test_likert_cutpoints_must_be_strictly_increasing(cut, match):
    """Issue 33, item 3: equal cutpoints were accepted (documented as strictly increasing) and
    decreasing ones came out as 'log_probs sums to nan'. Concrete cutpoints are checked by the
    site and by ordinal_log_probs; traced ones are not (jit still compiles)."""
    latent = jnp.array([0.0, 1.0])
    with pytest.raises(ValueError, match=r"site 'r': " + match):
        site_log_prob(categorical.likert_ratings, "r", latent, jnp.asarray(cut), np.array([1, 2]), lapse=0.1)
    with pytest.raises(ValueError, match=r"ordinal_log_probs: " + match):
        categorical.ordinal_log_probs(latent, jnp.asarray(cut))
    with pytest.raises(ValueError, match=r"site 'r': latent\[1\] = nan"):
        site_log_prob(categorical.likert_ratings, "r", jnp.array([0.0, np.nan]), jnp.array([-1.0, 1.0]), np.array([1, 2]))
    ok = jnp.array([-1.0, 0.0, 1.0])
    out = jax.jit(categorical.ordinal_log_probs)(latent, ok)
    np.testing.assert_allclose(np.asarray(categorical.ordinal_log_probs(latent, ok)), np.asarray(out), rtol=1e-6)
