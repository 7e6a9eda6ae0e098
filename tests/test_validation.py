"""Bad input to agents and likelihoods is named, never silently broadcast or read as "false"
(issue 9, findings 6, 8, 10, 13, 17); property tests over random lexicons (hypothesis).

Property-test tolerance: values and gradients must be finite where defined (an exact
property, no tolerance) and probabilities sum to 1 within 1e-4 (float32, depth <= 10).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies
from numpyro import handlers

from pragmodels import agents, likelihoods
from pragmodels.rsa_models import rsa_listener, rsa_listener_by_item

SEM = np.log(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]) + 1e-30)


def nan_at(x, idx, value=np.nan):
    y = np.array(x, np.float32)
    y[idx] = value
    return y


@pytest.mark.parametrize("fn", [agents.pragmatic_listener, agents.pragmatic_speaker])
def test_non_finite_inputs_are_named(fn):
    with pytest.raises(ValueError, match=r"log_semantics\[0, 0\] = nan; expected finite values or -inf"):
        fn(nan_at(SEM, (0, 0)), 1.0)
    with pytest.raises(ValueError, match=r"log_semantics\[1, 2\] = inf"):
        fn(nan_at(SEM, (1, 2), np.inf), 1.0)
    with pytest.raises(ValueError, match=r"cost\[2\] = nan; expected finite values"):
        fn(SEM, 1.0, nan_at(np.zeros(4), 2))
    with pytest.raises(ValueError, match=r"log_prior\[1\] = nan"):
        fn(SEM, 1.0, None, nan_at(np.zeros(3), 1))
    with pytest.raises(ValueError, match=r"alpha = nan"):
        fn(SEM, float("nan"))


def test_nan_would_have_changed_other_rows():
    """The finding: s[0, 0] = nan made row 0 all -inf and changed the other rows, silently."""
    with pytest.raises(ValueError, match="pragmatic_listener: log_semantics"):
        agents.pragmatic_listener(nan_at(SEM, (0, 0)), 2.0)
    out = jax.jit(agents.pragmatic_listener)(jnp.asarray(SEM), 2.0)  # traced: shapes only, still fine
    assert np.all(np.isfinite(np.asarray(out)) | np.isneginf(np.asarray(out)))


@pytest.mark.parametrize("kwargs, match", [
    (dict(cost=np.zeros(1)), r"cost must have shape \[utterance\] = \(4,\); got \(1,\)"),
    (dict(log_prior=np.zeros(1)), r"log_prior must have shape \[state\] = \(3,\); got \(1,\)"),
    (dict(alpha=np.ones(3)), r"alpha must have shape \[\] \(a scalar\) = \(\); got \(3,\)"),
    (dict(depth=True), r"depth must be a Python int >= 1; got True"),
    (dict(log_semantics=np.zeros((3, 3, 2))), r"log_semantics must have shape \[utterance, state\] \(2 axes\); "
                                              r"got shape \(3, 3, 2\) \(for many agents at once"),
    (dict(log_semantics=np.zeros((0, 3))), r"log_semantics is empty \(shape \(0, 3\)\)"),
])
def test_shapes_are_not_broadcast(kwargs, match):
    args = dict(log_semantics=SEM, alpha=1.0) | kwargs
    with pytest.raises(ValueError, match=match):
        agents.pragmatic_speaker(**args)


def _trace(model, **data):
    return handlers.trace(handlers.seed(model, 0)).get_trace(**data)


def test_model_inputs_are_named():
    utt = np.array([0, 1, 3])
    with pytest.raises(ValueError, match=r"cost_design must have shape \[utterance, cost_term\] = \(4, k >= 1\).*"
                                         r"got shape \(1, 1\)"):
        _trace(rsa_listener, log_semantics=SEM, utterance=utt, choice=np.array([0, 1, 2]), cost_design=np.ones((1, 1)))
    with pytest.raises(ValueError, match=r"rsa_listener: utterance\[2\] = 4; expected an integer utterance index in 0..3"):
        _trace(rsa_listener, log_semantics=SEM, utterance=np.array([0, 1, 4]), choice=np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"rsa_listener_by_item: item\[1\] = 2; expected an integer item index in 0..1"):
        _trace(rsa_listener_by_item, log_semantics=SEM, item=np.array([0, 2]), utterance=np.array([0, 1]),
               choice=np.array([0, 1]), n_items=2)
    with pytest.raises(ValueError, match=r"site 'choice': no trials"):
        _trace(rsa_listener, log_semantics=SEM, utterance=np.zeros(0, int), choice=np.zeros(0, int))


@pytest.mark.parametrize("w", [-0.5, float("nan"), 1.5])
def test_lapse_outside_unit_interval_is_an_error(w):
    lp = jnp.log(jnp.array([0.2, 0.3, 0.5]))
    with pytest.raises(ValueError, match=r"weight = .*expected a lapse \(mixture weight\) in \[0, 1\]"):
        agents.lapse_mixture(lp, w)


@pytest.mark.parametrize("w", [1e-6, 0.3, 0.5, 0.5 + 1e-6, 0.9, 1.0])
def test_lapse_mixture_value_and_gradient_on_the_whole_interval(w):
    """Against the closed form d/dw log((1-w) p + w/n) = (1/n - p) / ((1-w) p + w/n), at w = 1 too
    (float32: 1e-4 relative)."""
    p = np.array([0.7, 0.3, 0.0])
    n = 3
    f = lambda w, k: agents.lapse_mixture(jnp.log(jnp.asarray(p, jnp.float32)), w)[k]  # noqa: E731
    for k in range(n):
        mix = (1 - w) * p[k] + w / n
        np.testing.assert_allclose(float(f(w, k)), np.log(mix), rtol=1e-5, atol=1e-6)
        g = float(jax.grad(f)(jnp.float32(w), k))
        np.testing.assert_allclose(g, (1 / n - p[k]) / mix, rtol=1e-4, atol=1e-5)


def test_lapse_mixture_under_vmap_matches_one_weight_at_a_time():
    """A scalar weight takes one branch (lax.switch); vmapped over weights the switch becomes a
    select of every branch, whose gradients must stay finite (w = 0 and w = 1 included) and equal
    the one-at-a-time values; an all -inf row stays uniform either way."""
    from pragmodels.logmath import log_mix_uniform

    lp = jnp.log(jnp.asarray([[0.7, 0.3, 0.0], [0.0, 0.0, 0.0]], jnp.float32))
    ws = jnp.asarray([0.0, 1e-6, 0.3, 0.5, 0.8, 1.0], jnp.float32)
    f = lambda w: jnp.where(jnp.isfinite(m := log_mix_uniform(lp, w)), m, 0.0).sum()  # noqa: E731
    one = np.array([[float(f(w)), float(jax.grad(f)(w))] for w in ws])
    both = np.stack([np.asarray(jax.vmap(f)(ws)), np.asarray(jax.vmap(jax.grad(f))(ws))], 1)
    assert np.isfinite(both).all()
    np.testing.assert_allclose(both, one, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(log_mix_uniform(lp, 0.3)[1]), -np.log(3), rtol=1e-6)


def test_undefined_row_under_a_lapse_is_a_uniform_guess_with_or_without_rows():
    """Finding 13: an utterance true of no state, under a lapse, is answered uniformly; the table
    (rows=) and per-trial paths agree and the row sums to one."""
    sem = SEM.copy()
    sem[3] = -np.inf  # utterance 3 is true of no state
    log_l = agents.pragmatic_listener(sem, 2.0)
    assert np.all(np.isneginf(np.asarray(log_l[3])))
    utt, choice = np.array([0, 3, 3]), np.array([0, 1, 2])

    def per_site(**kw):
        tr = _trace(likelihoods.listener_choices, name="c", obs=choice, lapse=0.1, **kw)
        return np.asarray(tr["c"]["fn"].log_prob(tr["c"]["value"]))

    table = per_site(log_listener=log_l, rows=utt)
    trials = per_site(log_listener=log_l[utt])
    np.testing.assert_allclose(table, trials, rtol=1e-6)
    np.testing.assert_allclose(table[1:], np.log(1 / 3), rtol=1e-6)
    np.testing.assert_allclose(np.exp(np.asarray(agents.lapse_mixture(log_l, 0.1))).sum(-1), 1.0, rtol=1e-5)


# ----------------------------------------------------------------------------- properties

@strategies.composite
def lexicons(draw):
    n_u = draw(strategies.integers(1, 5))
    n_s = draw(strategies.integers(1, 6))
    kind = draw(strategies.sampled_from(["boolean", "graded"]))
    cells = strategies.booleans() if kind == "boolean" else strategies.floats(0.0, 1.0)
    truth = np.array(draw(strategies.lists(strategies.lists(cells, min_size=n_s, max_size=n_s), min_size=n_u, max_size=n_u)), float)
    with np.errstate(divide="ignore"):
        return np.log(truth)


PROPS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# The property tests run the agents under jit, as a fit does (a traced alpha; the concrete checks of an eager
# call are tested apart): one program per lexicon shape, depth and dtype instead of every operation compiled
# eagerly for each new shape (measured: 17.8 -> 8.7 s for the listener's 25 examples)
@functools.partial(jax.jit, static_argnums=2)
def _listener_and_alpha_gradient(sem, alpha, depth):
    safe = lambda x: jnp.where(jnp.isfinite(x), x, 0.0)  # noqa: E731
    grad = jax.grad(lambda a: jnp.sum(safe(agents.pragmatic_listener(sem, a, None, None, depth))))(alpha)
    return agents.pragmatic_listener(sem, alpha, None, None, depth), grad


@PROPS
@given(log_sem=lexicons(), log_alpha=strategies.floats(np.log(1e-3), np.log(1e3)), depth=strategies.integers(0, 10),
       dtype=strategies.sampled_from(["float32", "float64"]))
def test_listener_finite_where_defined(log_sem, log_alpha, depth, dtype):
    """Random lexicons (0/1 with empty rows and columns, or graded), alpha in [1e-3, 1e3], depth
    0-10: no NaN; defined rows sum to 1; the gradient in alpha is finite."""
    with jax.enable_x64(dtype == "float64"):
        sem = jnp.asarray(log_sem, dtype)
        alpha = jnp.asarray(np.exp(log_alpha), dtype)
        out, g = _listener_and_alpha_gradient(sem, alpha, depth)
        out = np.asarray(out, float)
        assert not np.isnan(out).any()
        p = np.exp(out)
        sums = p.sum(-1)
        defined = sums > 0
        np.testing.assert_allclose(sums[defined], 1.0, atol=1e-4)
        assert np.all(np.isneginf(out[~defined]))
        assert np.isfinite(float(g))


@PROPS
@given(log_sem=lexicons(), bad=strategies.sampled_from([np.nan, np.inf]), where=strategies.integers(0, 10_000))
def test_invalid_lexicon_values_are_rejected_by_name(log_sem, bad, where):
    idx = np.unravel_index(where % log_sem.size, log_sem.shape)
    sem = log_sem.copy()
    sem[idx] = bad
    i, j = (int(k) for k in idx)
    with pytest.raises(ValueError, match=rf"log_semantics\[{i}, {j}\] = {bad!r}"):
        agents.pragmatic_listener(sem, 1.0)


@PROPS
@given(log_sem=lexicons(), w=strategies.floats(1e-6, 1.0), seed=strategies.integers(0, 2**16))
def test_choice_likelihood_finite_under_a_lapse(log_sem, w, seed):
    """With a lapse >= 1e-6 (float32 holds it) every choice has finite log-likelihood and gradient,
    whatever the lexicon."""
    rng = np.random.default_rng(seed)
    n_u, n_s = log_sem.shape
    utt, choice = rng.integers(0, n_u, 8), rng.integers(0, n_s, 8)
    v, g = _choice_log_likelihood_and_gradient(jnp.float32(w), jnp.asarray(log_sem, jnp.float32), choice, utt)
    assert np.isfinite(float(v)) and np.isfinite(float(g))


@jax.jit
def _choice_log_likelihood_and_gradient(lapse, log_sem, choice, utt):
    def total(lapse):
        log_l = agents.pragmatic_listener(log_sem, 1.5)
        tr = handlers.trace(handlers.seed(functools.partial(likelihoods.listener_choices, "c"), 0)).get_trace(
            log_l, choice, lapse=lapse, rows=utt)
        return jnp.sum(tr["c"]["fn"].log_prob(tr["c"]["value"]))

    return jax.value_and_grad(total)(lapse)


def test_check_one_of_returns_the_value_or_names_setting_value_and_choices():
    from pragmodels.validation import check_one_of

    assert check_one_of("init", "median", ("median", "uniform")) == "median"
    with pytest.raises(ValueError, match=r"^init must be one of \('median', 'uniform'\); got 'medain'\.$"):
        check_one_of("init", "medain", ("median", "uniform"))
    with pytest.raises(ValueError, match=r"mode must be one of \['quick', 'full'\]; got None\."):
        check_one_of("mode", None, ["quick", "full"])


def _speaker_data(**changes):
    from pragmodels import simulate

    data = simulate.reference_game_speaker(0, n_per_state=2)
    return {**data, "log_semantics": np.asarray(data["log_semantics"]), **changes}


_P3 = np.log(np.full((2, 3), 1 / 3))


@pytest.mark.parametrize("call, match", [
    # pm.fit's data, through the model's eager trace
    (lambda: _trace(rsa_speaker_model(), **_speaker_data(choice=np.array(["0", "1"] * 3))),
     r"observation site 'choice': choice\[0\] = '0'; expected an integer utterance index in 0..3"),
    (lambda: _trace(rsa_speaker_model(), **_speaker_data(choice=np.array(["a", 1, 2, 0, 1, 2], object))),
     r"observation site 'choice': choice\[0\] = 'a'; expected an integer utterance index in 0..3"),
    (lambda: _trace(rsa_speaker_model(), **_speaker_data(state=np.array(["0", "1", "2"] * 2))),
     r"rsa_speaker: state\[0\] = '0'; expected an integer state index in 0..2"),
    (lambda: _trace(rsa_speaker_model(), **_speaker_data(cost_design=np.array([["a"]] * 4))),
     r"rsa_speaker: cost_design has dtype <U1 \(cost_design\[0, 0\] = 'a'\); expected numbers"),
    (lambda: _trace(rsa_speaker_model(), **_speaker_data(log_semantics=np.full((4, 3), "0.0"))),
     r"log_semantics has dtype <U3 \(log_semantics\[0, 0\] = '0.0'\); expected numbers"),
    # the likelihoods
    (lambda: likelihoods.choices("y", _P3, np.array(["0", "1"])),
     r"observation site 'y': y\[0\] = '0'; expected an integer option index in 0..2"),
    (lambda: likelihoods.choices("y", _P3.astype(str), np.array([0, 1])),
     r"site 'y': log_probs has dtype <U\d+ \(log_probs\[0, 0\] = '-1.09"),
    (lambda: likelihoods.choice_counts("y", _P3, np.array([["1", "0", "0"], ["0", "0", "1"]])),
     r"site 'y': counts\[0, 0\] = '1'; expected a non-negative integer"),
    (lambda: likelihoods.likert_ratings("y", np.zeros(2), np.array([-1.0, 1.0]), np.array(["1", "3"])),
     r"observation site 'y': y\[0\] = '1'; expected an integer rating in 1..3"),
    (lambda: likelihoods.likert_ratings("y", np.array(["0", "1"]), np.array([-1.0, 1.0]), np.array([1, 3])),
     r"site 'y': latent has dtype <U1 \(latent\[0\] = '0'\); expected numbers"),
    (lambda: likelihoods.slider.slider_responses("y", _P3, np.array([1, 2]), state_values=np.array([0, 50, 100]),
                                                 width="5"),
     r"slider_kernel: width has dtype <U1 \(width = '5'\); expected numbers"),
    # the agents and the semantics
    (lambda: agents.pragmatic_listener(SEM, "2.0"), r"pragmatic_listener: alpha has dtype <U3 \(alpha = '2.0'\)"),
    (lambda: agents.pragmatic_listener_batch(SEM, np.array(["1", "2"])),
     r"pragmatic_listener_batch: alpha has dtype <U1 \(alpha\[0\] = '1'\)"),
    (lambda: agents.pragmatic_speaker(SEM, 1.0, np.array(["0", "1", "0", "0"])),
     r"pragmatic_speaker: cost has dtype <U1 \(cost\[0\] = '0'\)"),
    (lambda: agents.qud_project(SEM, np.array(["a", "a", "b"])), r"qud_project: qud has dtype <U1 \(qud\[0\] = 'a'\)"),
    (lambda: pm_semantics().graded_semantics([["0.5", "1"]]), r"graded_semantics: truth has dtype <U3"),
    (lambda: pm_semantics().bin_index(["5"], np.array([0.0, 10.0])), r"bin_index: response has dtype <U1"),
])
def test_inputs_that_are_not_numbers_are_named(call, match):
    """Issue 33, item 4: string observations raised numpy's UFuncTypeError, string tables and
    parameters JAX's TypeError, naming neither the argument nor the value. Each is now one
    ValueError naming the function or site, the argument and its first entry."""
    with pytest.raises(ValueError, match=match):
        call()


def rsa_speaker_model():
    from pragmodels.rsa_models import speaker_model

    return speaker_model()


def pm_semantics():
    from pragmodels import semantics

    return semantics


@pytest.mark.parametrize("call, match", [
    (lambda: likelihoods.choices("y", _P3, np.array([0, 1]), lapse=jnp.array([0.1, 0.2, 0.3])),
     r"site 'y': lapse must be a scalar or have shape \(2,\) \(log_probs's shape \(2, 3\) without its option axis: "
     r"one per row\); got shape \(3,\)"),
    (lambda: likelihoods.choices("y", _P3, np.array([0, 1, 0]), rows=np.array([0, 1, 1]), lapse=jnp.array([0.1, 0.2, 0.3])),
     r"site 'y': lapse must be a scalar or have shape \(2,\)"),
    (lambda: likelihoods.choices("y", _P3, np.array([0, 1]), lapse=jnp.array([[0.1], [0.2]])),
     r"site 'y': lapse must be a scalar or have shape \(2,\) .*got shape \(2, 1\)"),
    (lambda: likelihoods.choice_counts("y", _P3, np.ones((2, 3), int), lapse=jnp.array([0.1, 0.2, 0.3])),
     r"site 'y': lapse must be a scalar or have shape \(2,\)"),
    (lambda: likelihoods.likert_ratings("y", np.zeros(2), np.array([-1.0, 1.0]), np.array([1, 3]), lapse=jnp.ones(3) / 9),
     r"site 'y': lapse must be a scalar or have shape \(2,\)"),
    (lambda: likelihoods.choices("y", _P3, np.array([0, 1]), lapse="0.1"),
     r"site 'y': lapse = '0.1'; expected a lapse \(mixture weight\) in \[0, 1\]"),
    (lambda: likelihoods.choices("y", _P3, np.array([0, 1]), lapse=jnp.array([0.1, 1.5])),
     r"site 'y': lapse\[1\] = 1.5; expected a lapse \(mixture weight\) in \[0, 1\]"),
    (lambda: agents.lapse_mixture(_P3, jnp.array([0.1, 0.2, 0.3])),
     r"log_mix_uniform: weight must be a scalar or have shape \(2,\) \(log_p's shape \(2, 3\) without axis -1"),
])
def test_a_lapse_of_the_wrong_shape_is_named(call, match):
    """Issue 33, item 4: a lapse vector of the wrong length raised JAX's broadcasting TypeError
    ('mul got incompatible shapes'); now the site (or log_mix_uniform) names the lapse, its shape
    and the shape expected. The site's lapse values are named by the site too."""
    with pytest.raises(ValueError, match=match):
        call()


def test_a_lapse_per_row_and_a_broadcast_weight_still_work_but_not_a_longer_one():
    """The shapes the docs promise pass: a lapse per row at a site, sizes of 1 in lapse_mixture."""
    tr = handlers.trace(handlers.seed(likelihoods.choices, 0)).get_trace("y", _P3, np.array([0, 1]),
                                                                        lapse=jnp.array([0.1, 0.2]))
    assert np.isfinite(np.asarray(tr["y"]["fn"].log_prob(tr["y"]["value"]))).all()
    table = jnp.log(jnp.full((2, 2, 3), 1 / 3))
    np.testing.assert_allclose(np.asarray(agents.lapse_mixture(table, jnp.array([[0.1], [0.2]]))), np.log(1 / 3), rtol=1e-6)
    with pytest.raises(ValueError, match=r"log_mix_uniform: weight must be a scalar or have shape \(2, 2\)"):
        agents.lapse_mixture(table, jnp.array([[0.1], [0.2], [0.3]]))


@pytest.mark.parametrize("model, data, match", [
    (rsa_listener, dict(log_semantics=np.zeros(2), utterance=np.array([0, 1]), choice=np.array([0, 0])),
     r"rsa_listener: log_semantics must have shape \[utterance, state\], at least one of each; got shape \(2,\)"),
    (rsa_listener, dict(log_semantics=np.float32(0), utterance=np.array([0]), choice=np.array([0])),
     r"rsa_listener: log_semantics must have shape \[utterance, state\], at least one of each; got shape \(\)"),
    ("speaker", dict(log_semantics=np.zeros(2), state=np.array([0, 1, 2]), choice=np.array([0, 0, 0])),
     r"rsa_speaker: log_semantics must have shape \[utterance, state\], at least one of each; got shape \(2,\)"),
    (rsa_listener_by_item, dict(log_semantics=np.zeros(3), item=np.array([0]), utterance=np.array([0]),
                                choice=np.array([0]), n_items=1),
     r"rsa_listener_by_item: log_semantics must have shape \[utterance, state\] or \[item, utterance, state\]"),
    (rsa_listener_by_item, dict(log_semantics=SEM, item=np.array([0, 0]), utterance=np.array([0, 1]),
                                choice=np.array([0, 1]), n_items=0),
     r"rsa_listener_by_item: n_items must be an int >= 1; got 0"),
    (rsa_listener_by_item, dict(log_semantics=SEM, item=np.array([0, 0]), utterance=np.array([0, 1]),
                                choice=np.array([0, 1]), n_items=2.5),
     r"rsa_listener_by_item: n_items must be an int >= 1; got 2.5"),
    (rsa_listener, dict(log_semantics=SEM, utterance=np.array([[0], [1]]), choice=np.array([0, 1])),
     r"rsa_listener: utterance must have shape \[trial\] \(one entry per trial\); got shape \(2, 1\)"),
    (rsa_listener_by_item, dict(log_semantics=SEM, item=np.array([0, 0, 1]), utterance=np.array([0, 1]),
                                choice=np.array([0, 1]), n_items=2),
     r"rsa_listener_by_item: the per-trial arrays must have one length \(one entry per trial\); got item \(3,\), "
     r"utterance \(2,\), choice \(2,\)"),
])
def test_model_data_of_the_wrong_shape_are_named(model, data, match):
    """Issue 33, item 4: a 1-D log_semantics was blamed on `utterance` (an index out of 0..1), a
    0-D one raised IndexError, n_items=0 said 'index in 0..-1', a 2-D index array was named as
    the likelihood's `rows`. Each is named by the model, with the shape or value expected."""
    if model == "speaker":
        from pragmodels.rsa_models import rsa_speaker as model
    with pytest.raises(ValueError, match=match):
        _trace(model, **data)


@pytest.mark.parametrize("fn, kwargs, match", [
    ("scale_listener_by_item", dict(n_items=0), r"scale_listener_by_item: n_items must be an int >= 1; got 0"),
    ("scale_listener_by_item", dict(n_per_item=0), r"scale_listener_by_item: n_per_item must be an int >= 1; got 0"),
    ("scale_listener_by_item", dict(n_states=1), r"scale_listener_by_item: n_states must be an int >= 2; got 1"),
    ("scale_listener_by_item", dict(alpha_sigma=-0.5), r"scale_listener_by_item: alpha_sigma = -0.5; expected a "
                                                      r"standard deviation >= 0"),
    ("reference_game_speaker", dict(n_per_state=0), r"reference_game_speaker: n_per_state must be an int >= 1; got 0"),
    ("reference_game_speaker", dict(n_per_state=-1), r"reference_game_speaker: n_per_state must be an int >= 1; got -1"),
    ("reference_game_speaker", dict(seed=-1), r"reference_game_speaker: seed must be an int >= 0; got -1"),
    ("reference_game_speaker", dict(lapse=2.0), r"reference_game_speaker: lapse = 2.0; expected a lapse"),
])
def test_simulators_take_the_ranges_of_the_config_schema(fn, kwargs, match):
    """Issue 33, item 4: n_items=0 (or n_per_state=0) simulated an empty data set that failed
    later as 'index in 0..-1' or 'no trials', n_per_state=-1 raised numpy's 'negative
    dimensions'; the command line's schema refuses them (ge=1, ge=2). The library now agrees."""
    from pragmodels import simulate

    with pytest.raises(ValueError, match=match):
        getattr(simulate, fn)(**{"seed": 0, **kwargs})


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_half_precision_is_refused_by_name_also_under_jit(dtype):
    """Issue 33, item 5: a float16 listener silently lost true cells at large alpha (SEM, depth 3,
    alpha 50: 7 cells finite in float32 came out -inf). Decision: the agents and likelihoods
    refuse half precision (a ValueError naming the argument and dtype; the dtype is static, so
    also under jit) rather than cast it."""
    sem = jnp.asarray(SEM, jnp.float32)
    kept = np.isfinite(np.asarray(agents.pragmatic_listener(sem, 50.0, depth=3)))
    assert kept.sum() == 12  # the float32 listener keeps every cell
    match = rf"pragmatic_listener: log_semantics has dtype {jnp.dtype(dtype).name}; expected float32 or float64"
    with pytest.raises(ValueError, match=match):
        agents.pragmatic_listener(sem.astype(dtype), 50.0, depth=3)
    with pytest.raises(ValueError, match=match):
        jax.jit(lambda s: agents.pragmatic_listener(s, 50.0, depth=3))(sem.astype(dtype))
    with pytest.raises(ValueError, match=rf"pragmatic_speaker: alpha has dtype {jnp.dtype(dtype).name}"):
        agents.pragmatic_speaker(sem, jnp.asarray(2.0, dtype))
    with pytest.raises(ValueError, match=rf"pragmatic_listener_batch: log_semantics has dtype {jnp.dtype(dtype).name}"):
        agents.pragmatic_listener_batch(sem.astype(dtype), jnp.ones(2))
    with pytest.raises(ValueError, match=rf"site 'y': log_probs has dtype {jnp.dtype(dtype).name}"):
        likelihoods.choices("y", jnp.asarray(_P3, dtype), np.array([0, 1]))


def test_a_negative_alpha_is_refused_where_it_can_be_seen():
    """Issue 33, item 5: a negative alpha was accepted (an anti-informative speaker). Decision:
    alpha >= 0. A concrete alpha < 0 is a ValueError in every agent (a traced one cannot be
    checked, and jit still runs); the ready-made models refuse a prior (or fixed value) that
    allows alpha < 0, whatever its draws; the simulator agrees with the config schema (ge=0)."""
    from pragmodels import simulate
    from pragmodels.params import inspect_model
    from pragmodels.priors import Prior
    from pragmodels.rsa_models import listener_model, speaker_model

    match = r"alpha = -0.5; expected a rationality >= 0"
    for call in (lambda: agents.pragmatic_listener(SEM, -0.5), lambda: agents.pragmatic_speaker(SEM, -0.5),
                 lambda: agents.softmax_speaker(SEM, -0.5),
                 lambda: agents.lexical_uncertainty_listener(np.stack([SEM, SEM]), -0.5)):
        with pytest.raises(ValueError, match=match):
            call()
    with pytest.raises(ValueError, match=r"pragmatic_listener_batch: alpha\[1\] = -0.5; expected a rationality >= 0"):
        agents.pragmatic_listener_batch(SEM, jnp.array([1.0, -0.5]))
    out = jax.jit(agents.pragmatic_listener)(SEM, -0.5)  # traced: not checked, still runs
    assert out.shape == SEM.shape
    np.testing.assert_allclose(np.exp(np.asarray(agents.pragmatic_listener(SEM, 0.0))).sum(1), 1.0, rtol=1e-5)
    data = _speaker_data()
    for prior in (Prior("Normal", loc=2.0, scale=0.1), Prior("Uniform", low=-1.0, high=3.0), -1.0):
        with pytest.raises(ValueError, match=r"rsa_speaker: alpha's prior is .*allows alpha < 0; alpha is a "
                                             r"rationality >= 0"):
            inspect_model(speaker_model(priors={"alpha": prior}), data)
    with pytest.raises(ValueError, match=r"rsa_listener: alpha's prior is Normal"):
        inspect_model(listener_model(), dict(log_semantics=SEM, utterance=np.array([0, 1]), choice=np.array([0, 1])),
                      priors={"alpha": Prior("Normal", loc=1.0, scale=1.0)})
    for prior in (Prior("HalfNormal", scale=2.0), Prior("Gamma", concentration=2.0, rate=1.0), 0.0, 3.0):
        inspect_model(speaker_model(priors={"alpha": prior}), data)
    with pytest.raises(ValueError, match=r"reference_game_speaker: alpha = -1.0; expected a rationality >= 0"):
        simulate.reference_game_speaker(0, alpha=-1.0)
