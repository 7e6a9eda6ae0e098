"""RSA agents against a naive NumPy loop, worked examples and invariants.

Tolerance: agents run in float32; 2e-5 absolute on probabilities is ~100 float32 ulps at 1,
ample for depth <= 5 recursions and far below any modelling difference.
"""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pragmodels as pm
from pragmodels.semantics import boolean_semantics
from tests import naive_rsa

ATOL = 2e-5


def random_lexicon(rng, n_u, n_s, graded=False, empty=True):
    truth = rng.uniform(0.05, 1, (n_u, n_s)) if graded else (rng.uniform(size=(n_u, n_s)) < 0.5).astype(float)
    truth = truth * (rng.uniform(size=(n_u, n_s)) < 0.7)
    if empty:
        truth[0] = 0.0  # an utterance true of no state
        truth[:, -1] = 0.0  # a state no utterance fits
    return truth


def to_log(truth):
    with np.errstate(divide="ignore"):
        return jnp.asarray(np.log(truth), jnp.float32)


def undefined_rows_ok(log_p, ref):
    """-inf rows in pragmodels are exactly the rows the naive loop leaves at zero mass."""
    p = np.exp(np.asarray(log_p, float))
    assert not np.isnan(np.asarray(log_p)).any()
    np.testing.assert_allclose(p, ref, atol=ATOL)


@pytest.mark.parametrize("depth", range(6))
@pytest.mark.parametrize("prior_at", ["all", "top"])
@pytest.mark.parametrize("graded", [False, True])
def test_listener_matches_naive_loop(depth, prior_at, graded):
    rng = np.random.default_rng(depth * 10 + graded)
    for _ in range(3):
        n_u, n_s = rng.integers(3, 8, 2)
        truth = random_lexicon(rng, n_u, n_s, graded)
        alpha = rng.uniform(0.3, 4)
        cost = rng.uniform(0, 2, n_u)
        prior = rng.dirichlet(np.ones(n_s))
        got = pm.pragmatic_listener(to_log(truth), alpha, cost, jnp.log(prior), depth, prior_at=prior_at)
        ref = naive_rsa.rsa(truth, alpha, cost, prior, depth, prior_at)
        undefined_rows_ok(got, ref)


@pytest.mark.parametrize("depth", range(1, 6))
@pytest.mark.parametrize("prior_at", ["all", "top"])
def test_speaker_matches_naive_loop(depth, prior_at):
    rng = np.random.default_rng(100 + depth)
    for _ in range(3):
        n_u, n_s = rng.integers(3, 8, 2)
        truth = random_lexicon(rng, n_u, n_s)
        alpha, cost, prior = rng.uniform(0.3, 4), rng.uniform(0, 2, n_u), rng.dirichlet(np.ones(n_s))
        got = pm.pragmatic_speaker(to_log(truth), alpha, cost, jnp.log(prior), depth, prior_at=prior_at)
        assert got.shape == (n_s, n_u)
        undefined_rows_ok(got, naive_rsa.rsa(truth, alpha, cost, prior, depth, prior_at, role="speaker"))


def test_qud_speaker_and_listener_match_naive_loop():
    rng = np.random.default_rng(7)
    truth = random_lexicon(rng, 5, 6, graded=True, empty=False)
    qud = np.array([0, 0, 1, 1, 2, 2])
    alpha, cost, prior = 1.7, rng.uniform(0, 1, 5), rng.dirichlet(np.ones(6))
    for depth in (1, 2):
        got = pm.pragmatic_speaker(to_log(truth), alpha, cost, jnp.log(prior), depth, qud=qud)
        undefined_rows_ok(got, naive_rsa.rsa(truth, alpha, cost, prior, depth, qud=qud, role="speaker"))
        got = pm.pragmatic_listener(to_log(truth), alpha, cost, jnp.log(prior), depth, qud=qud)
        undefined_rows_ok(got, naive_rsa.rsa(truth, alpha, cost, prior, depth, qud=qud))


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("prior_at", ["all", "top"])
def test_lexical_uncertainty_matches_naive_loop(depth, prior_at):
    rng = np.random.default_rng(depth)
    truths = np.stack([random_lexicon(rng, 4, 5, graded=g) for g in (False, True, False)])
    lex_prior = rng.dirichlet(np.ones(3))
    alpha, cost, prior = 2.0, rng.uniform(0, 1, 4), rng.dirichlet(np.ones(5))
    got = pm.lexical_uncertainty_listener(to_log(truths), alpha, cost, jnp.log(prior),
                                          jnp.log(lex_prior), depth, prior_at=prior_at)
    ref = naive_rsa.lexical_uncertainty(truths, lex_prior, alpha, cost, prior, depth, prior_at)
    undefined_rows_ok(got, ref)


def test_worked_example_problang_reference_game():
    # problang.org ch. 1 (Scontras, Tessler & Franke): blue square, blue circle, green square;
    # with alpha = 1, L1("blue") = (0.6, 0.4, 0) and S1(. | blue circle) = (1/3 blue, 2/3 circle).
    lex = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0]])  # blue, green, square, circle
    sem = boolean_semantics(lex)
    l1 = np.exp(np.asarray(pm.pragmatic_listener(sem, 1.0)))
    np.testing.assert_allclose(l1[0], [0.6, 0.4, 0.0], atol=1e-6)
    s1 = np.exp(np.asarray(pm.pragmatic_speaker(sem, 1.0)))
    np.testing.assert_allclose(s1[1], [1 / 3, 0, 0, 2 / 3], atol=1e-6)


def test_worked_example_frank_goodman_prior_at_top():
    # Frank & Goodman (2012): uniform literal listener, salience prior only at the top.
    lex = np.array([[1, 1, 0], [0, 1, 1]])
    prior = np.array([0.5, 0.3, 0.2])
    l1 = np.exp(np.asarray(pm.pragmatic_listener(boolean_semantics(lex), 1.0, None, jnp.log(prior), prior_at="top")))
    # S1(u0|s0)=1, S1(u0|s1)=1/2 -> L1(.|u0) ∝ (0.5*1, 0.3*0.5, 0)
    np.testing.assert_allclose(l1[0], np.array([0.5, 0.15, 0.0]) / 0.65, atol=1e-6)


def test_rows_normalise_and_undefined_rows_are_minus_inf():
    rng = np.random.default_rng(3)
    truth = random_lexicon(rng, 6, 7)
    sem = to_log(truth)
    for depth in range(4):
        lis = np.asarray(pm.pragmatic_listener(sem, 2.0, depth=depth))
        assert np.all(np.isneginf(lis[0]))  # utterance true of nothing
        defined = ~np.all(np.isneginf(lis), axis=1)
        np.testing.assert_allclose(np.exp(lis[defined]).sum(1), 1.0, atol=1e-5)
        assert np.all(np.exp(lis[:, -1]) == 0)  # the state nothing fits is never inferred
    spk = np.asarray(pm.pragmatic_speaker(sem, 2.0))
    assert np.all(np.isneginf(spk[-1]))
    np.testing.assert_allclose(np.exp(spk[:-1]).sum(1)[np.any(truth[:, :-1] > 0, 0)], 1.0, atol=1e-5)


def test_alpha_zero_is_uniform_over_true_utterances():
    rng = np.random.default_rng(4)
    truth = random_lexicon(rng, 5, 6, graded=True, empty=False)
    for alpha in (0.0, 1e-7):
        spk = np.exp(np.asarray(pm.pragmatic_speaker(to_log(truth), alpha, rng.uniform(0, 3, 5))))
        for s in range(6):
            true = truth[:, s] > 0
            np.testing.assert_allclose(spk[s, true], 1 / true.sum(), atol=1e-5)
            assert np.all(spk[s, ~true] == 0)


def test_large_alpha_approaches_argmax():
    rng = np.random.default_rng(5)
    truth = random_lexicon(rng, 5, 6, graded=True, empty=False)
    cost = rng.uniform(0, 1, 5)
    l0 = naive_rsa.listener0(truth, np.ones(6))
    spk = np.exp(np.asarray(pm.pragmatic_speaker(to_log(truth), 200.0, cost)))
    with np.errstate(divide="ignore"):
        util = np.log(l0) - cost[:, None]
    for s in range(6):
        assert spk[s, np.argmax(util[:, s])] > 0.99


def test_permuting_states_permutes_outputs():
    rng = np.random.default_rng(6)
    truth = random_lexicon(rng, 5, 6, graded=True)
    prior = rng.dirichlet(np.ones(6))
    perm = rng.permutation(6)
    a = np.asarray(pm.pragmatic_listener(to_log(truth), 1.5, None, jnp.log(prior), 2))
    b = np.asarray(pm.pragmatic_listener(to_log(truth[:, perm]), 1.5, None, jnp.log(prior[perm]), 2))
    np.testing.assert_allclose(np.exp(a[:, perm]), np.exp(b), atol=1e-6)
    uperm = rng.permutation(5)
    c = np.asarray(pm.pragmatic_speaker(to_log(truth[uperm]), 1.5, None, jnp.log(prior), 2))
    d = np.asarray(pm.pragmatic_speaker(to_log(truth), 1.5, None, jnp.log(prior), 2))
    np.testing.assert_allclose(np.exp(c), np.exp(d[:, uperm]), atol=1e-6)


def test_a_numpy_table_vmapped_inside_jit_reaches_the_speaker_and_its_gradient():
    """The social-meaning model's pattern: ``jax.vmap`` over a float64 numpy array of utilities inside
    ``jax.jit``, each slice cast to float32 (a custom JVP in ``masked_scale`` once failed here with JAX's
    "non-canonical constant"); values equal the eager per-slice speakers, the alpha gradient is finite."""
    utility = np.log(np.random.default_rng(3).uniform(size=(3, 4, 5)))
    utility[0, 0, 0] = utility[1, :, 2] = -np.inf
    speakers = lambda a: jax.vmap(lambda u: pm.agents.softmax_speaker(jnp.asarray(u, jnp.float32), a))(utility)  # noqa: E731
    got = np.asarray(jax.jit(speakers)(2.0))
    want = np.stack([np.asarray(pm.agents.softmax_speaker(jnp.asarray(u, jnp.float32), 2.0)) for u in utility])
    np.testing.assert_allclose(got, want, atol=4e-6)  # jit and eager round differently (see below)
    grad = jax.jit(jax.grad(lambda a: jnp.sum(jnp.where(jnp.isfinite(t := speakers(a)), t, 0.0))))(2.0)
    assert np.isfinite(float(grad)) and float(grad) != 0.0


def test_vmap_equals_loop_over_alphas_and_items():
    rng = np.random.default_rng(8)
    sems = jnp.stack([to_log(random_lexicon(rng, 4, 5, graded=True)) for _ in range(6)])
    alphas = jnp.asarray(rng.uniform(0.5, 5, 6), jnp.float32)
    f = jax.jit(jax.vmap(lambda s, a: pm.pragmatic_listener(s, a, depth=2)))
    batched = np.asarray(f(sems, alphas))
    looped = np.stack([np.asarray(pm.pragmatic_listener(s, a, depth=2)) for s, a in zip(sems, alphas)])
    # float32: eager ops and XLA's fused program round differently; either is within 1.9e-6 of the
    # float64 listener on these lexica, so they may differ by twice that (measured: up to 1.7e-6)
    np.testing.assert_allclose(batched, looped, atol=4e-6)


@pytest.mark.parametrize("depth", [1, 2, 3, 5])
def test_gradients_finite_on_01_lexicon_with_empty_row_and_column(depth):
    rng = np.random.default_rng(9)
    truth = random_lexicon(rng, 5, 6)
    sem = to_log(truth)

    def loss(alpha, cost, sem):
        lis = pm.pragmatic_listener(sem, alpha, cost, None, depth)
        spk = pm.pragmatic_speaker(sem, alpha, cost, None, depth)
        finite = lambda x: jnp.where(jnp.isfinite(x), x, 0.0).sum()
        return finite(lis) + finite(spk) + finite(pm.lapse_mixture(lis, 0.1))

    grads = jax.grad(loss, argnums=(0, 1, 2))(2.0, jnp.ones(5) * 0.3, sem)
    for g in grads:
        assert np.all(np.isfinite(np.asarray(g)))
    assert float(grads[0]) != 0.0  # alpha really matters
    # entries at -inf (false) get zero gradient: they have no probability to move
    assert np.all(np.asarray(grads[2])[truth == 0] == 0)


def test_gradient_matches_finite_difference():
    rng = np.random.default_rng(10)
    truth = random_lexicon(rng, 4, 5, graded=True, empty=False)
    sem = to_log(truth)
    f = lambda a: pm.pragmatic_listener(sem, a, None, None, 2)[1, 2]
    with jax.enable_x64(True):
        with np.errstate(divide="ignore"):
            sem64 = jnp.asarray(np.log(truth))
        f64 = lambda a: pm.pragmatic_listener(sem64, a, None, None, 2)[1, 2]
        fd = (f64(1.5 + 1e-6) - f64(1.5 - 1e-6)) / 2e-6
        np.testing.assert_allclose(float(jax.grad(f64)(1.5)), float(fd), rtol=1e-5)
    np.testing.assert_allclose(float(jax.grad(f)(1.5)), float(fd), rtol=1e-3)


def test_lapse_mixture():
    log_p = jnp.log(jnp.array([[0.7, 0.3, 0.0], [1.0, 0.0, 0.0]]))
    mixed = np.exp(np.asarray(pm.lapse_mixture(log_p, 0.3)))
    np.testing.assert_allclose(mixed, 0.7 * np.exp(np.asarray(log_p)) + 0.1, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pm.lapse_mixture(log_p, 0.0)), np.asarray(log_p))
    g = jax.grad(lambda e: pm.lapse_mixture(log_p, e)[0, 2])(0.2)
    np.testing.assert_allclose(float(g), 1 / 0.2, rtol=1e-5)  # d/de log(e/3) = 1/e


def test_bad_arguments_are_named():
    sem = boolean_semantics(np.eye(3))
    with pytest.raises(ValueError, match="depth must be a Python int >= 1; got 0"):
        pm.pragmatic_speaker(sem, 1.0, depth=0)
    with pytest.raises(ValueError, match="prior_at must be 'all' or 'top'; got 'bottom'"):
        pm.pragmatic_listener(sem, 1.0, prior_at="bottom")
    with pytest.raises(ValueError, match=r"lexicon\[0, 1\] = 2"):
        boolean_semantics([[1, 2], [0, 1]])
    with pytest.raises(ValueError, match=r"log_semantics\[1, 0\] = nan"):
        pm.semantics.check_log_semantics(np.array([[0.0, 0.0], [np.nan, 0.0]]))
    with pytest.raises(ValueError, match="shape \\[lexicon, utterance, state\\]"):
        pm.lexical_uncertainty_listener(sem, 1.0)


def test_softmax_speaker_and_bayes_listener_match_naive_loop():
    rng = np.random.default_rng(11)
    util = rng.normal(size=(3, 5))
    util[1, 2] = -np.inf  # unavailable utterance in one state
    cost = rng.uniform(0, 1, 3)
    alpha = 1.3
    spk = np.exp(np.asarray(pm.agents.softmax_speaker(jnp.asarray(util, jnp.float32), alpha, cost)))
    for s in range(5):
        w = np.array([np.exp(alpha * (util[u, s] - cost[u])) for u in range(3)])
        np.testing.assert_allclose(spk[s], w / w.sum(), atol=1e-6)
    prior = rng.dirichlet(np.ones(5))
    lis = np.exp(np.asarray(pm.agents.bayes_listener(jnp.log(spk), jnp.log(prior))))
    np.testing.assert_allclose(lis, naive_rsa.listener_from_speaker(spk, prior), atol=1e-6)
    # pragmatic_listener is exactly these two blocks composed on the literal listener
    truth = random_lexicon(rng, 4, 5, graded=True, empty=False)
    l0 = pm.literal_listener(to_log(truth))
    composed = pm.agents.bayes_listener(pm.agents.softmax_speaker(l0, 2.0))
    np.testing.assert_allclose(np.asarray(composed), np.asarray(pm.pragmatic_listener(to_log(truth), 2.0)), atol=1e-6)


# --- boolean=True: the closed form on a 0/1 lexicon (pragmodels.boolean_rsa) ---------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("prior_at", ["all", "top"])
def test_boolean_closed_form_matches_naive_loop(depth, prior_at):
    """Listener and speaker, with costs, a non-uniform prior with one zero, empty rows and columns
    (each call compiles both paths of the lax.cond: one lexicon per case keeps the test cheap)."""
    rng = np.random.default_rng(200 + depth)
    for _ in range(1):
        n_u, n_s = rng.integers(3, 8, 2)
        truth = random_lexicon(rng, n_u, n_s)
        alpha, cost, prior = rng.uniform(0, 4), rng.uniform(0, 2, n_u), rng.dirichlet(np.ones(n_s))
        prior[1] = 0.0
        with np.errstate(divide="ignore"):
            log_prior = jnp.log(prior)
        for role, agent in (("listener", pm.pragmatic_listener), ("speaker", pm.pragmatic_speaker)):
            got = agent(to_log(truth), alpha, cost, log_prior, depth, prior_at=prior_at, boolean=True)
            undefined_rows_ok(got, naive_rsa.rsa(truth, alpha, cost, prior, depth, prior_at, role=role))


@pytest.mark.parametrize("cost_scaling", ["inside", "outside"])
def test_boolean_closed_form_equals_log_space_recursion_and_its_gradient(cost_scaling):
    """Same values (float64, 1e-10) and the same d/d alpha and d/d cost under jit, both cost scalings."""
    rng = np.random.default_rng(3)
    truth = random_lexicon(rng, 7, 9)
    prior_np = rng.dirichlet(np.ones(9))

    def nll(alpha, cost, boolean):
        log_sem = jnp.asarray(np.where(truth > 0, 0.0, -np.inf))
        table = pm.pragmatic_listener(log_sem, alpha, cost, jnp.log(prior_np), 2, cost_scaling=cost_scaling,
                                      boolean=boolean)
        return -jnp.sum(jnp.where(truth > 0, table, 0.0))

    with jax.enable_x64(True):
        args = (jnp.float64(1.7), jnp.asarray(rng.uniform(0, 1, 7)))
        for f in (nll, jax.grad(nll, argnums=(0, 1))):
            a, b = jax.jit(f, static_argnums=2)(*args, False), jax.jit(f, static_argnums=2)(*args, True)
            for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
                np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-10, atol=1e-10)


def test_boolean_closed_form_falls_back_where_float32_would_underflow():
    """At alpha = 60, with one utterance true of one state and one of all 40, the speaker weights span
    60 log 40 = 221 nats, beyond float32's safe range: the log-space path answers (equal to
    boolean=False), where the closed form alone would have lost states to underflow."""
    rng = np.random.default_rng(5)
    truth = random_lexicon(rng, 30, 40, empty=False)
    truth[0], truth[1] = 0.0, 1.0
    truth[0, 3] = 1.0
    log_sem = to_log(truth)
    from pragmodels.boolean_rsa import boolean_recursion, safe_range

    mask = (log_sem > -jnp.inf).astype(jnp.float32)
    _, _, spread, _ = boolean_recursion(mask, jnp.float32(60.0), jnp.zeros(30), jnp.zeros(40), 1, False)
    assert float(spread) > safe_range(jnp.float32)  # the case does exercise the fallback
    ref = jax.jit(lambda a: pm.pragmatic_listener(log_sem, a))(60.0)
    got = jax.jit(lambda a: pm.pragmatic_listener(log_sem, a, boolean=True))(60.0)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))


def test_boolean_closed_form_refuses_what_it_cannot_compute():
    with pytest.raises(ValueError, match=r"0/1 lexicon.*log_semantics\[0, 1\] = -0.5"):
        pm.pragmatic_listener(jnp.array([[0.0, -0.5], [-jnp.inf, 0.0]]), 1.0, boolean=True)
    with pytest.raises(ValueError, match="no closed form with a qud"):
        pm.pragmatic_speaker(jnp.zeros((2, 2)), 1.0, qud=jnp.array([0, 1]), boolean=True)
    with pytest.raises(ValueError, match="boolean must be True or False; got 1"):
        pm.pragmatic_listener(jnp.zeros((2, 2)), 1.0, boolean=1)


@pytest.mark.parametrize("prior_at,log_prior", [("top", [0.0, 0.0, -120.0]), ("all", [0.0, 0.0, -45.0])])
def test_boolean_closed_form_falls_back_for_a_wide_prior(prior_at, log_prior):
    """The final listener multiplies by v = P / Z: a prior spanning 45-120 nats pushed v beyond float32,
    and a row came out all -inf (found in review); its range now counts in the check."""
    log_sem = to_log(np.array([[1, 1, 0], [0, 1, 1], [0, 0, 1]], float))
    for alpha in (1.0, 5.0):
        ref = pm.pragmatic_listener(log_sem, alpha, log_prior=jnp.asarray(log_prior), prior_at=prior_at)
        got = pm.pragmatic_listener(log_sem, alpha, log_prior=jnp.asarray(log_prior), prior_at=prior_at, boolean=True)
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), atol=1e-5)
        assert np.isfinite(np.asarray(got)[2, 2])


def test_a_traced_graded_lexicon_under_boolean_true_is_nan():
    """Inside jit the 0/1 check cannot run: a graded entry makes the table NaN, not another lexicon's RSA."""
    f = jax.jit(lambda ls: pm.pragmatic_listener(ls, 1.0, boolean=True))
    assert np.isnan(np.asarray(f(jnp.array([[0.0, -0.5], [-jnp.inf, 0.0]])))).all()
    assert np.isfinite(np.asarray(f(jnp.array([[0.0, 0.0], [-jnp.inf, 0.0]])))[1, 1])
    # the log-space branch too (alpha 60 on an utterance true of one state and one true of all: beyond float32's
    # range, the fallback runs), with the graded test fused into each branch's last step
    truth = random_lexicon(np.random.default_rng(5), 30, 40, empty=False)
    truth[0], truth[1] = 0.0, 1.0
    truth[0, 3] = 1.0
    log_sem = to_log(truth).at[2, 5].set(-0.5)
    g = jax.jit(lambda ls: pm.pragmatic_listener(ls, 60.0, boolean=True))
    assert np.isnan(np.asarray(g(log_sem))).all()
    assert not np.isnan(np.asarray(g(to_log(truth)))).any()
