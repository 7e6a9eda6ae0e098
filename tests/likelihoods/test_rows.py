"""Likelihood rows indexed by several table axes: ``rows=(item, utterance)``.

References: hand-indexed log-probabilities (a loop over trials) and the hand-flattened
``item * n_utt + utterance`` form that the tuple replaces.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers
from numpyro.infer.util import log_density

from pragmodels.likelihoods import categorical


def site(fn, *args, **kw):
    tr = handlers.trace(handlers.seed(fn, 0)).get_trace(*args, **kw)
    s = next(s for s in tr.values() if s["type"] == "sample")
    return np.asarray(s["fn"].log_prob(s["value"]), float), s, tr


def table(rng, *shape):
    return rng.dirichlet(np.ones(shape[-1]), shape[:-1])


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n_item, n_utt, n_state, n = 3, 4, 5, 40
    p = table(rng, n_item, n_utt, n_state)
    p[1, 2] = np.eye(n_state)[0]  # a row with zeros: impossible choices stay impossible without lapse
    item = rng.integers(0, n_item, n)
    utt = rng.integers(0, n_utt, n)
    obs = rng.integers(0, n_state, n)
    return p, item, utt, obs


@pytest.mark.parametrize("lapse", [0.0, 0.2])
def test_tuple_rows_match_a_loop_over_trials_and_the_flattened_form(data, lapse):
    p, item, utt, obs = data
    n_item, n_utt, n_state = p.shape
    with np.errstate(divide="ignore"):
        log_p = jnp.asarray(np.log(p), jnp.float32)
    impossible = (item == 1) & (utt == 2) & (obs != 0)
    assert impossible.any()  # the zero row is really visited by trials it cannot explain
    if lapse == 0:  # ... which, without a lapse, is an error naming the first of them (issue 9, finding 14)
        first = int(np.argmax(impossible))
        with pytest.raises(ValueError, match=rf"site 'c': trial {first} \(c = {obs[first]}, row \(1, 2\) of "
                                             rf"log_probs .*has probability 0 under the model"):
            site(categorical.listener_choices, "c", log_p, obs, lapse=lapse, rows=(item, utt), dim="trial")
        obs = np.where(impossible, 0, obs)
    got, s, tr = site(categorical.listener_choices, "c", log_p, obs, lapse=lapse, rows=(item, utt), dim="trial")
    ref = np.array([np.log((1 - lapse) * p[item[i], utt[i], obs[i]] + lapse / n_state) for i in range(len(obs))]
                   if lapse else [np.log(p[item[i], utt[i], obs[i]]) if p[item[i], utt[i], obs[i]] > 0 else -np.inf
                                  for i in range(len(obs))])
    finite = np.isfinite(ref)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-5, atol=1e-6)
    assert np.array_equal(np.isneginf(got), ~finite) and finite.all()
    assert tr["trial"]["args"][0] == len(obs) and s["is_observed"]
    flat, _, _ = site(categorical.listener_choices, "c", log_p.reshape(n_item * n_utt, n_state), obs, lapse=lapse,
                      rows=item * n_utt + utt)
    np.testing.assert_array_equal(got, flat)


def test_three_row_axes_and_speaker_choices(data):
    rng = np.random.default_rng(1)
    p = table(rng, 2, 3, 4, 6)  # [participant, item, state, utterance]
    n = 25
    rows = tuple(rng.integers(0, k, n) for k in (2, 3, 4))
    obs = rng.integers(0, 6, n)
    got, _, _ = site(categorical.speaker_choices, "s", jnp.log(jnp.asarray(p, jnp.float32)), obs, rows=rows, lapse=0.1)
    ref = [np.log(0.9 * p[rows[0][i], rows[1][i], rows[2][i], obs[i]] + 0.1 / 6) for i in range(n)]
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_single_array_rows_still_work(data):
    p, item, _, obs = data
    p2 = p[:, 0]  # [item, state]
    got, _, _ = site(categorical.listener_choices, "c", jnp.log(jnp.asarray(p2, jnp.float32)), obs, rows=item, lapse=0.3)
    np.testing.assert_allclose(got, np.log(0.7 * p2[item, obs] + 0.3 / 5), rtol=1e-5)
    got_list, _, _ = site(categorical.listener_choices, "c", jnp.log(jnp.asarray(p2, jnp.float32)), obs, rows=list(item),
                          lapse=0.3)
    np.testing.assert_array_equal(got, got_list)  # a list is one index array, not several axes
    one, _, _ = site(categorical.listener_choices, "c", jnp.log(jnp.asarray(p2, jnp.float32)), obs, rows=(item,), lapse=0.3)
    np.testing.assert_array_equal(got, one)


def test_likert_ratings_with_tuple_rows():
    rng = np.random.default_rng(2)
    latent = rng.normal(size=(3, 4))  # [item, utterance]
    cut = np.sort(rng.normal(size=(3, 4, 6)), -1)  # per-condition cutpoints, K = 7
    n = 30
    item, utt = rng.integers(0, 3, n), rng.integers(0, 4, n)
    ratings = rng.integers(1, 8, n)
    got, _, _ = site(categorical.likert_ratings, "r", jnp.asarray(latent, jnp.float32), jnp.asarray(cut, jnp.float32), ratings,
                     rows=(item, utt), lapse=0.05)
    lp = np.asarray(categorical.ordinal_log_probs(jnp.asarray(latent), jnp.asarray(cut)), float)
    ref = [np.log(0.95 * np.exp(lp[item[i], utt[i], ratings[i] - 1]) + 0.05 / 7) for i in range(n)]
    np.testing.assert_allclose(got, ref, rtol=1e-4)
    shared, _, _ = site(categorical.likert_ratings, "r", jnp.asarray(latent, jnp.float32), jnp.asarray(cut[0, 0], jnp.float32),
                        ratings, rows=(item, utt))  # one set of cutpoints for every condition
    lp0 = np.asarray(categorical.ordinal_log_probs(jnp.asarray(latent), jnp.asarray(cut[0, 0])), float)
    np.testing.assert_allclose(shared, lp0[item, utt, ratings - 1], rtol=1e-4)


def test_traced_rows_under_jit_and_gradient_wrt_table(data):
    p, item, utt, obs = data
    logits = jnp.log(jnp.asarray(p, jnp.float32) * 0.9 + 0.1 / 5)

    def model(log_p, item, utt):
        categorical.listener_choices("c", log_p, obs, rows=(item, utt))

    f = jax.jit(lambda lp, i, u: log_density(model, (lp, i, u), {}, {})[0])
    total = f(logits, jnp.asarray(item), jnp.asarray(utt))
    ref = sum(float(logits[item[i], utt[i], obs[i]]) for i in range(len(obs)))
    np.testing.assert_allclose(float(total), ref, rtol=1e-5)
    g = np.asarray(jax.grad(lambda lp: f(lp, jnp.asarray(item), jnp.asarray(utt)))(logits))
    counts = np.zeros(p.shape)
    np.add.at(counts, (item, utt, obs), 1)
    np.testing.assert_allclose(g, counts, atol=1e-6)  # d/d log_p[i, u, s] = number of such trials


def test_bad_rows_are_named(data):
    p, item, utt, obs = data
    log_p = jnp.log(jnp.asarray(p, jnp.float32))
    with pytest.raises(ValueError, match=r"site 'c': rows has 3 index array\(s\), so log_probs must have 3 row "
                                         r"axes and a state axis \(4 axes in all\); got shape \(3, 4, 5\)"):
        site(categorical.listener_choices, "c", log_p, obs, rows=(item, utt, utt))
    with pytest.raises(ValueError, match=r"rows has 1 index array\(s\).*got shape \(3, 4, 5\)"):
        site(categorical.listener_choices, "c", log_p, obs, rows=item)
    with pytest.raises(ValueError, match=r"rows must be one-dimensional .* got shapes \[\(40,\), \(39,\)\]"):
        site(categorical.listener_choices, "c", log_p, obs, rows=(item, utt[:-1]))
    bad_utt = utt.copy()
    bad_utt[7] = 4  # utterance axis has size 4
    with pytest.raises(ValueError, match=r"site 'c': rows\[1\]\[7\] = 4 indexes axis 1 of log_probs "
                                         r"\(shape \(3, 4, 5\)\); expected an integer in 0..3"):
        site(categorical.listener_choices, "c", log_p, obs, rows=(item, bad_utt))
    bad_item = item.copy()
    bad_item[2] = -1
    with pytest.raises(ValueError, match=r"rows\[0\]\[2\] = -1 indexes axis 0 .* expected an integer in 0..2"):
        site(categorical.speaker_choices, "c", log_p, obs, rows=(bad_item, utt))
    with pytest.raises(ValueError, match=r"rows\[0\]\[0\] = 1.5 indexes axis 0"):
        site(categorical.listener_choices, "c", log_p, obs, rows=(np.full(40, 1.5), utt))
    with pytest.raises(ValueError, match=r"site 'c': rows\[5\] = 9 indexes axis 0 of log_probs \(shape \(3, 5\)\); "
                                         r"expected an integer in 0..2"):
        site(categorical.listener_choices, "c", log_p[:, 0], obs, rows=np.where(np.arange(40) == 5, 9, item))
    with pytest.raises(ValueError, match=r"rows must be one-dimensional .*pass several axes as a tuple"):
        site(categorical.listener_choices, "c", log_p[:, 0], obs, rows=[item, utt])
    with pytest.raises(ValueError, match=r"obs must have shape \(40,\)"):
        site(categorical.listener_choices, "c", log_p, obs[:-1], rows=(item, utt))


def _density(model, *args, potential=False):
    fn = categorical.tabulate_potential(model) if potential else model
    return log_density(fn, args, {}, {})[0]


@pytest.mark.parametrize("lapse", [0.0, 0.3])
def test_count_table_potential_equals_the_sum_over_trials_value_and_gradient(data, lapse):
    """Inside the sampler the table site is read as counts; the log density and its gradient must
    not change (float32 rounding: 1e-5 relative), including a -inf cell no trial visits."""
    p, item, utt, obs = data
    with np.errstate(divide="ignore"):
        log_p = jnp.asarray(np.log(p), jnp.float32)
    obs = obs.copy()
    obs[(item == 1) & (utt == 2)] = 0  # the trials of the one-hot row choose its possible state

    def model(lp, lapse):
        categorical.listener_choices("c", categorical.log_normalize(lp, axis=-1), obs, lapse=lapse, rows=(item, utt))

    for pot in (False, True):
        assert np.isfinite(float(_density(model, log_p, lapse, potential=pot)))
    v_trial, g_trial = jax.value_and_grad(lambda lp: _density(model, lp, lapse))(log_p)
    v_table, g_table = jax.value_and_grad(lambda lp: _density(model, lp, lapse, potential=True))(log_p)
    np.testing.assert_allclose(float(v_table), float(v_trial), rtol=1e-5)
    finite = np.isfinite(np.asarray(log_p))
    np.testing.assert_allclose(np.asarray(g_table)[finite], np.asarray(g_trial)[finite], rtol=1e-5, atol=1e-5)
    tr = handlers.trace(categorical.tabulate_potential(model)).get_trace(log_p, lapse)
    assert isinstance(tr["c"]["fn"], categorical.TableCounts)  # the count form really ran


def test_count_table_potential_under_a_mask_and_a_per_trial_scale(data):
    """A mask (fit_batched's padding) weights the counts; a per-trial scale keeps the trial form."""
    p, item, utt, obs = data
    log_p = jnp.log(jnp.asarray(p, jnp.float32) * 0.9 + 0.02)
    log_p = log_p - jax.nn.logsumexp(log_p, -1, keepdims=True)
    keep = np.arange(len(obs)) < 25

    def model(lp):
        with handlers.mask(mask=jnp.asarray(keep)):
            categorical.listener_choices("c", lp, obs, rows=(item, utt))

    ref = sum(float(log_p[item[i], utt[i], obs[i]]) for i in range(25))
    np.testing.assert_allclose(float(_density(model, log_p, potential=True)), ref, rtol=1e-5)
    g = np.asarray(jax.grad(lambda lp: _density(model, lp, potential=True))(log_p))
    counts = np.zeros(p.shape)
    np.add.at(counts, (item[:25], utt[:25], obs[:25]), 1)
    np.testing.assert_allclose(g, counts, atol=1e-5)

    w = np.linspace(0.5, 2.0, len(obs))

    def scaled(lp):
        with handlers.scale(scale=jnp.asarray(w)):
            categorical.listener_choices("c", lp, obs, rows=(item, utt))

    ref_w = sum(w[i] * float(log_p[item[i], utt[i], obs[i]]) for i in range(len(obs)))
    np.testing.assert_allclose(float(_density(scaled, log_p, potential=True)), ref_w, rtol=1e-5)
    tr = handlers.trace(categorical.tabulate_potential(scaled)).get_trace(log_p)
    assert isinstance(tr["c"]["fn"], categorical.TableCategorical)


def test_option_axis_anywhere_and_sampling_from_the_table(data):
    """``axis`` reads a table in the layout an agent made it ([utterance, state, item] here):
    the same per-trial log-likelihood as the [item, utterance, state] table, and draws whose
    frequencies follow each trial's row (5,000 draws of one trial: 4 binomial SE)."""
    p, item, utt, obs = data
    log_p = jnp.log(jnp.asarray(p, jnp.float32) * 0.9 + 0.02)
    log_p = log_p - jax.nn.logsumexp(log_p, -1, keepdims=True)
    ref, _, _ = site(categorical.listener_choices, "c", log_p, obs, rows=(item, utt))
    moved = jnp.transpose(log_p, (1, 2, 0))  # [utterance, state, item]
    got, s, _ = site(categorical.listener_choices, "c", moved, obs, rows=(utt, item), axis=1)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    d = s["fn"]
    np.testing.assert_allclose(np.asarray(d.trial_log_probs()), np.asarray(log_p[item, utt]), rtol=1e-6)
    draws = np.asarray(d.sample(jax.random.PRNGKey(0), (5000,)))
    assert draws.shape == (5000, len(obs))
    freq = np.bincount(draws[:, 0], minlength=p.shape[-1]) / 5000
    expect = np.exp(np.asarray(log_p[item[0], utt[0]], float))
    assert np.all(np.abs(freq - expect) <= 4 * np.sqrt(expect * (1 - expect) / 5000) + 1e-3)
    with pytest.raises(ValueError, match=r"axis = 3 is not an axis of log_probs"):
        site(categorical.listener_choices, "c", moved, obs, rows=(utt, item), axis=3)
    with pytest.raises(ValueError, match=r"axis = 0 needs rows"):
        site(categorical.listener_choices, "c", log_p[0], obs[:4], axis=0)
