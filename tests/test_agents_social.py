"""Social-utility speakers, joint (state, goal) listeners and the two cost conventions.

References: a deliberately naive NumPy loop (float64, explicit loops, probabilities rather than
log space, written from the equations and independently of pragmodels.agents), and worked
examples from problang.org (Scontras, Tessler & Franke): the politeness chapter (ch. 9, after
Yoon, Tessler, Goodman & Frank 2016/2020) and the hyperbole model (ch. 3, after Kao et al.
2014). The chapters print no numbers (their code runs in the reader's browser), so the
reference values below were computed by running the chapters' WebPPL code unchanged, apart
from printing probabilities, with WebPPL 0.9.15 (exact enumeration, float64). The hyperbole
model at alpha = 2.5 changes only the chapter's ``var alpha = 1``.

Tolerances: float64 runs agree with WebPPL to ~1e-15, asserted at 1e-9; float32 runs to
2e-5 on probabilities (as tests/test_agents.py).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pragmodels as pm
from pragmodels import agents
from tests import naive_rsa
from tests.test_agents import random_lexicon

ATOL = 2e-5
INSIDE_OUTSIDE = ["inside", "outside"]


# --- naive references ------------------------------------------------------------------------


def naive_listener0(truth, prior):
    return naive_rsa.listener0(truth, prior)


def naive_weight(util, alpha, cost, scaling):
    if scaling == "inside":
        return np.exp(alpha * (util - cost))
    return np.exp(alpha * util - cost)


def naive_mixed_speaker(truth, alpha, w_inf, w_soc, value, cost, prior, scaling):
    """S1(u | s) ∝ exp(alpha (w_inf log L0(s|u) + w_soc Σ_t L0(t|u) V(t) − c(u))), or the
    'outside' variant; an utterance false of s (L0(s|u) = 0) has weight 0."""
    n_u, n_s = truth.shape
    l0 = naive_listener0(truth, prior)
    w = np.zeros((n_s, n_u))
    for s in range(n_s):
        for u in range(n_u):
            if l0[u, s] == 0:
                continue
            social = 0.0
            for t in range(n_s):
                social += l0[u, t] * value[t]
            util = w_inf * np.log(l0[u, s]) + w_soc * social
            w[s, u] = naive_weight(util, alpha, cost[u], scaling)
    return naive_rsa._norm_rows(w)


def naive_weighted_speaker(utilities, alpha, weights, cost, scaling):
    n_c, n_u, n_s = utilities.shape
    w = np.zeros((n_s, n_u))
    for s in range(n_s):
        for u in range(n_u):
            if any(np.isneginf(utilities[c, u, s]) for c in range(n_c)):
                continue
            util = sum(weights[c] * utilities[c, u, s] for c in range(n_c))
            w[s, u] = naive_weight(util, alpha, cost[u], scaling)
    return naive_rsa._norm_rows(w)


def naive_joint_listener(spk, prior, goal_prior):
    """L(s, g | u) ∝ S(u | s, g) P(s) P(g); prior may be joint [state, goal]."""
    n_g, n_s, n_u = spk.shape
    out = np.zeros((n_u, n_s, n_g))
    for u in range(n_u):
        z = 0.0
        for s in range(n_s):
            for g in range(n_g):
                p = prior[s, g] if prior.ndim == 2 else prior[s] * goal_prior[g]
                out[u, s, g] = spk[g, s, u] * p
                z += out[u, s, g]
        if z > 0:
            out[u] /= z
    return out


def naive_speaker(listener, alpha, cost, scaling, qud=None):
    n_u, n_s = listener.shape
    w = np.zeros((n_s, n_u))
    for s in range(n_s):
        for u in range(n_u):
            p = listener[u, s] if qud is None else sum(listener[u, t] for t in range(n_s) if qud[t] == qud[s])
            if p > 0:
                w[s, u] = naive_weight(np.log(p), alpha, cost[u], scaling)
    return naive_rsa._norm_rows(w)


def naive_rsa_scaled(truth, alpha, cost, prior, depth, scaling, role="listener"):
    lis = naive_listener0(truth, prior)
    for k in range(1, depth + 1):
        spk = naive_speaker(lis, alpha, cost, scaling)
        if role == "speaker" and k == depth:
            return spk
        lis = naive_rsa.listener_from_speaker(spk, prior)
    return lis


def to_log(x, dtype=jnp.float32):
    with np.errstate(divide="ignore"):
        return jnp.asarray(np.log(x), dtype)


def assert_probs(log_p, ref, atol=ATOL):
    log_p = np.asarray(log_p)
    assert not np.isnan(log_p).any()
    np.testing.assert_allclose(np.exp(log_p.astype(float)), ref, atol=atol)
    # zero mass exactly where the naive loop has zero mass (-inf, never a tiny positive number)
    assert np.array_equal(np.isneginf(log_p), np.asarray(ref) == 0)


# --- mixed-utility speaker -------------------------------------------------------------------


@pytest.mark.parametrize("scaling", INSIDE_OUTSIDE)
@pytest.mark.parametrize("graded", [False, True])
def test_mixed_utility_speaker_matches_naive_loop(scaling, graded):
    rng = np.random.default_rng(20 + graded)
    for trial in range(4):
        n_u, n_s = rng.integers(3, 8, 2)
        truth = random_lexicon(rng, n_u, n_s, graded)
        alpha = rng.uniform(0.3, 4)
        w_inf, w_soc = rng.uniform(-0.5, 1.5, 2)  # need not sum to 1; negative = deceptive/mean
        if trial == 0:
            w_inf, w_soc = 0.0, 1.0  # purely social: a false utterance still stays unavailable
        value = rng.normal(size=n_s)
        cost = rng.uniform(0, 2, n_u)
        prior = rng.dirichlet(np.ones(n_s))
        got = pm.mixed_utility_speaker(to_log(truth), alpha, jnp.array([w_inf, w_soc]), value, cost,
                                       jnp.log(prior), cost_scaling=scaling)
        assert got.shape == (n_s, n_u)
        ref = naive_mixed_speaker(truth, alpha, w_inf, w_soc, value, cost, prior, scaling)
        assert_probs(got, ref)
        # rows of states some utterance fits normalise; the state nothing fits is all -inf
        p = np.exp(np.asarray(got, float))
        fits = truth.sum(0) > 0
        np.testing.assert_allclose(p[fits].sum(1), 1.0, atol=1e-5)
        assert np.all(np.isneginf(np.asarray(got)[~fits]))


def test_mixed_utility_speaker_reduces_to_pragmatic_speaker_and_to_social_argmax():
    rng = np.random.default_rng(22)
    truth = random_lexicon(rng, 5, 6, graded=True)
    sem, cost, prior = to_log(truth), rng.uniform(0, 1, 5), rng.dirichlet(np.ones(6))
    value = jnp.asarray(rng.normal(size=6), jnp.float32)
    for scaling in INSIDE_OUTSIDE:
        informative = pm.mixed_utility_speaker(sem, 1.7, jnp.array([1.0, 0.0]), value, cost, jnp.log(prior),
                                               cost_scaling=scaling)
        plain = pm.pragmatic_speaker(sem, 1.7, cost, jnp.log(prior), cost_scaling=scaling)
        np.testing.assert_allclose(np.exp(informative), np.exp(plain), atol=1e-6)
    # a purely social speaker with large alpha says the (true) utterance with the best E_L0[V]
    spk = np.exp(np.asarray(pm.mixed_utility_speaker(sem, 200.0, jnp.array([0.0, 1.0]), value)))
    l0 = naive_listener0(truth, np.ones(6))
    social = l0 @ np.asarray(value, float)
    for s in range(5):  # state 5 fits no utterance
        true = np.flatnonzero(truth[:, s] > 0)
        assert spk[s, true[np.argmax(social[true])]] > 0.99


def test_weighted_utility_speaker_matches_naive_loop_with_three_components():
    rng = np.random.default_rng(23)
    n_u, n_s = 5, 4
    comps = rng.normal(size=(3, n_u, n_s))
    comps[0, 1, 2] = -np.inf  # unavailable through one component only
    comps[2, 3, :] = -np.inf  # an utterance unavailable in every state
    weights = np.array([0.6, 0.3, 0.0])  # a zero weight does not revive a -inf component
    cost = rng.uniform(0, 1, n_u)
    for scaling in INSIDE_OUTSIDE:
        got = agents.weighted_utility_speaker(jnp.asarray(comps, jnp.float32), 2.2, jnp.asarray(weights), cost,
                                              cost_scaling=scaling)
        assert_probs(got, naive_weighted_speaker(comps, 2.2, weights, cost, scaling))
    assert np.all(np.isneginf(np.asarray(got)[:, 3]))


def test_presentational_speaker_s2_from_joint_marginals_matches_naive_loop():
    """Yoon et al. (2020)'s S2 utility as components: w_inf log L1(s|u) + w_soc E_L1[V] +
    w_pres log L1(phi_hat|u), with L1 the joint (state, phi) listener over an S1."""
    rng = np.random.default_rng(24)
    truth = random_lexicon(rng, 5, 4, graded=True, empty=False)
    value = np.arange(4.0)
    phis = np.array([0.2, 0.5, 0.8])
    alpha, cost = 3.0, rng.uniform(0, 1, 5)
    spk1 = jax.vmap(lambda p: pm.mixed_utility_speaker(to_log(truth), alpha, jnp.stack([p, 1 - p]), value, cost))(
        jnp.asarray(phis, jnp.float32))
    log_state, log_goal = pm.joint_marginals(pm.joint_listener(spk1))
    phi_hat = 1  # the speaker wants to appear to have phi = 0.5
    comps = jnp.stack([log_state, pm.social_utility(log_state, value),
                       jnp.broadcast_to(log_goal[:, phi_hat, None], log_state.shape)])
    w = jnp.array([0.3, 0.2, 0.5])
    got = agents.weighted_utility_speaker(comps, 2.0, w, cost)
    # naive: S1 table -> joint L1 -> marginals -> S2
    s1 = np.stack([naive_mixed_speaker(truth, alpha, p, 1 - p, value, cost, np.ones(4), "inside") for p in phis])
    l1 = naive_joint_listener(s1, np.ones(4), np.ones(3))
    l1_state, l1_goal = l1.sum(2), l1.sum(1)
    w2 = np.zeros((4, 5))
    for s in range(4):
        for u in range(5):
            if l1_state[u, s] == 0:
                continue
            util = 0.3 * np.log(l1_state[u, s]) + 0.2 * (l1_state[u] @ value) + 0.5 * np.log(l1_goal[u, phi_hat])
            w2[s, u] = np.exp(2.0 * (util - cost[u]))
    assert_probs(got, naive_rsa._norm_rows(w2))


# --- joint listener --------------------------------------------------------------------------


@pytest.mark.parametrize("joint_prior", [False, True])
def test_joint_listener_matches_naive_loop(joint_prior):
    rng = np.random.default_rng(30 + joint_prior)
    n_g, n_s, n_u = 3, 4, 5
    spk = np.stack([rng.dirichlet(np.ones(n_u), n_s) for _ in range(n_g)])
    spk[:, :, 0] = 0.0  # utterance 0 is never produced: its row must be -inf
    spk[1, 2] = 0.0  # (goal 1, state 2) produces nothing
    spk /= np.maximum(spk.sum(-1, keepdims=True), 1e-300)
    if joint_prior:
        prior, goal_prior = rng.dirichlet(np.ones(n_s * n_g)).reshape(n_s, n_g), None
        got = pm.joint_listener(to_log(spk), to_log(prior))
        ref = naive_joint_listener(spk, prior, None)
    else:
        prior, goal_prior = rng.dirichlet(np.ones(n_s)), rng.dirichlet(np.ones(n_g))
        got = pm.joint_listener(to_log(spk), to_log(prior), to_log(goal_prior))
        ref = naive_joint_listener(spk, prior, goal_prior)
    assert got.shape == (n_u, n_s, n_g)
    assert_probs(got, ref)
    p = np.exp(np.asarray(got, float))
    np.testing.assert_allclose(p[1:].sum((1, 2)), 1.0, atol=1e-5)  # jointly normalised
    assert np.all(np.isneginf(np.asarray(got)[0]))
    log_state, log_goal = pm.joint_marginals(got)
    np.testing.assert_allclose(np.exp(log_state), ref.sum(2), atol=ATOL)
    np.testing.assert_allclose(np.exp(log_goal), ref.sum(1), atol=ATOL)
    assert np.all(np.isneginf(np.asarray(log_state)[0])) and np.all(np.isneginf(np.asarray(log_goal)[0]))


def test_joint_listener_with_one_goal_is_bayes_listener():
    rng = np.random.default_rng(32)
    spk = to_log(rng.dirichlet(np.ones(4), 6))  # [state, utterance]
    prior = to_log(rng.dirichlet(np.ones(6)))
    joint = pm.joint_listener(spk[None], prior)
    np.testing.assert_allclose(np.asarray(joint[..., 0]), np.asarray(agents.bayes_listener(spk, prior)), atol=1e-6)


def test_permuting_states_and_goals_permutes_outputs():
    rng = np.random.default_rng(33)
    truth = random_lexicon(rng, 5, 6, graded=True)
    value, prior = rng.normal(size=6), rng.dirichlet(np.ones(6))
    perm = rng.permutation(6)
    w = jnp.array([0.7, 0.4])
    a = np.asarray(pm.mixed_utility_speaker(to_log(truth), 2.0, w, value, None, jnp.log(prior)))
    b = np.asarray(pm.mixed_utility_speaker(to_log(truth[:, perm]), 2.0, w, value[perm], None, jnp.log(prior[perm])))
    np.testing.assert_allclose(np.exp(a[perm]), np.exp(b), atol=1e-6)
    spk = to_log(np.stack([rng.dirichlet(np.ones(5), 6) for _ in range(3)]))  # [goal, state, utt]
    gprior = rng.dirichlet(np.ones(3))
    gperm = np.array([2, 0, 1])
    c = np.asarray(pm.joint_listener(spk, jnp.log(prior), jnp.log(gprior)))
    d = np.asarray(pm.joint_listener(spk[gperm][:, perm], jnp.log(prior[perm]), jnp.log(gprior[gperm])))
    np.testing.assert_allclose(np.exp(c[:, perm][:, :, gperm]), np.exp(d), atol=1e-6)


def test_vmap_over_goal_weights_equals_loop():
    rng = np.random.default_rng(34)
    sem = to_log(random_lexicon(rng, 4, 5, graded=True, empty=False))
    value = jnp.arange(5.0)
    phis = jnp.linspace(0.05, 0.95, 7)
    f = jax.jit(jax.vmap(lambda p: pm.mixed_utility_speaker(sem, 3.0, jnp.stack([p, 1 - p]), value)))
    looped = np.stack([np.asarray(pm.mixed_utility_speaker(sem, 3.0, jnp.stack([p, 1 - p]), value)) for p in phis])
    np.testing.assert_allclose(np.asarray(f(phis)), looped, atol=1e-5)


# --- worked examples: problang.org ch. 9 (politeness) and ch. 3 (hyperbole) --------------------

# ch. 9, first models: states 1..5 hearts, 5 utterances, V(s) = 1.25 s, alpha = 10, uniform priors
POLITE_SEM = np.array([
    [.95, .85, .02, .02, .02],  # terrible
    [.85, .95, .02, .02, .02],  # bad
    [.02, .25, .95, .65, .35],  # okay
    [.02, .05, .55, .95, .93],  # good
    [.02, .02, .02, .65, .95],  # amazing
])
POLITE_VALUE = 1.25 * np.arange(1, 6)
WEBPPL_S1 = {  # speaker1(state, phi) over (terrible, bad, okay, good, amazing)
    (1, 0.99): [0.749211874239, 0.250788125761, 4.15962247553e-18, 1.38511425122e-18, 8.40209867754e-17],
    (1, 0.1): [1.69720718478e-13, 2.78040650607e-13, 7.50080921035e-06, 0.00640353686478, 0.993588962326],
    (3, 0.5): [2.28566058339e-14, 3.19848283565e-14, 0.380097119794, 0.619898870382, 4.00982362113e-06],
}
WEBPPL_L1_GOOD = np.array([  # pragmaticListener("good"): [state 1..5, phi in (.1, .3, .5, .7, .9)]
    [0.00250171118528, 0.00308477165212, 0.0010988914074, 7.75660034366e-10, 3.78025984326e-16],
    [0.00619424602767, 0.0394809561021, 0.00301672513557, 4.30617745063e-07, 1.39791966143e-12],
    [0.058798767344, 0.375194780854, 0.242179903158, 0.0334648962211, 0.00209116368747],
    [0.00364557270501, 0.00947191589978, 0.0240251645124, 0.0574598935929, 0.120701928982],
    [0.00244938538982, 0.0028955820865, 0.00342234447425, 0.00404393578784, 0.00477703240027],
])
WEBPPL_L1_GOOD_E_STATE, WEBPPL_L1_GOOD_E_PHI = 3.18841792804, 0.454560407048


def polite_l1(sem, phis, alpha=10.0, cost=None, cost_scaling="inside", value=POLITE_VALUE):
    spk = jax.vmap(lambda p: pm.mixed_utility_speaker(sem, alpha, jnp.stack([p, 1 - p]), value, cost,
                                                      cost_scaling=cost_scaling))(phis)
    return pm.joint_listener(spk)  # uniform priors over states and phi


def test_problang_politeness_speaker_and_listener():
    with jax.enable_x64(True):
        sem = jnp.log(jnp.asarray(POLITE_SEM))
        for (state, phi), ref in WEBPPL_S1.items():
            got = pm.mixed_utility_speaker(sem, 10.0, jnp.array([phi, 1 - phi]), POLITE_VALUE)
            np.testing.assert_allclose(np.exp(np.asarray(got[state - 1])), ref, rtol=1e-9, atol=1e-12)
        phis = jnp.array([0.1, 0.3, 0.5, 0.7, 0.9])
        joint = polite_l1(sem, phis)
        np.testing.assert_allclose(np.exp(np.asarray(joint[3])), WEBPPL_L1_GOOD, rtol=1e-9, atol=1e-15)
        log_state, log_phi = pm.joint_marginals(joint)
        np.testing.assert_allclose(np.exp(np.asarray(log_state[3])) @ np.arange(1, 6), WEBPPL_L1_GOOD_E_STATE, rtol=1e-9)
        np.testing.assert_allclose(np.exp(np.asarray(log_phi[3])) @ np.asarray(phis), WEBPPL_L1_GOOD_E_PHI, rtol=1e-9)
    # float32, the default
    got32 = np.exp(np.asarray(polite_l1(to_log(POLITE_SEM), jnp.array([0.1, 0.3, 0.5, 0.7, 0.9]))[3]))
    np.testing.assert_allclose(got32, WEBPPL_L1_GOOD, atol=ATOL)


# ch. 9, full model: 10 utterances (5 negated, cost 1 as an utterance prior exp(-cost)), 20 phi bins
POLITE_FULL_SEM = np.array([
    [0.9593, 0.5217, 0.0753, 0.008, 0.044],  # yes_terrible
    [0.9921, 0.9574, 0.0078, 0.0078, 0.0079],  # yes_bad
    [0.0078, 0.286, 0.9619, 0.7776, 0.6122],  # yes_okay
    [0.008, 0.0408, 0.8279, 0.9914, 0.993],  # yes_good
    [0.0077, 0.0077, 0.0426, 0.675, 0.9919],  # yes_amazing
    [0.0415, 0.4363, 0.9588, 0.9225, 0.9116],  # not_terrible
    [0.0075, 0.2897, 0.8514, 0.8694, 0.8483],  # not_bad
    [0.9198, 0.7652, 0.1063, 0.0074, 0.1192],  # not_okay
    [0.9926, 0.8871, 0.1582, 0.0073, 0.0081],  # not_good
    [0.9925, 0.9186, 0.7876, 0.2321, 0.042],  # not_amazing
])
POLITE_FULL_COST = np.array([0.0] * 5 + [1.0] * 5)
WEBPPL_FULL_S1 = {
    (1, 0.35): [0.000784333920932, 0.000362779954331, 0.000171783792302, 0.00307865497081, 0.975673474781,
                0.0142233646302, 0.000136464768633, 0.00085492705261, 0.000244619597418, 0.00446959653148],
    (2, 0.95): [0.018020299829, 0.815903818983, 1.96118596107e-06, 1.0906541141e-14, 2.41860344683e-19,
                5.44185305233e-06, 4.17063920329e-07, 0.0546084767108, 0.105427335834, 0.00603224854045],
}
WEBPPL_FULL_L1_NOT_AMAZING_STATE = [0.789538792048, 0.204098031489, 0.00636315696509, 1.94978118608e-08,
                                    7.68617667927e-14]
WEBPPL_FULL_L1_NOT_AMAZING_PHI = [
    1.14743732682e-13, 2.13693251492e-12, 7.06851847866e-11, 2.51447550465e-09, 8.52721886057e-08,
    2.48080664756e-06, 7.98970340454e-05, 0.00294110018793, 0.0844787075953, 0.246413031385,
    0.181454353997, 0.120686646063, 0.0891989725486, 0.0880030406471, 0.0747082961007,
    0.0479051557758, 0.0282457925634, 0.0166179934366, 0.0105661775481, 0.00869826645014]


def test_problang_politeness_full_model_needs_cost_outside_alpha():
    """WebPPL samples the utterance from exp(-cost) and then factors alpha * U: 'outside'."""
    with jax.enable_x64(True):
        sem = jnp.log(jnp.asarray(POLITE_FULL_SEM))
        for (state, phi), ref in WEBPPL_FULL_S1.items():
            got = pm.mixed_utility_speaker(sem, 10.0, jnp.array([phi, 1 - phi]), POLITE_VALUE, POLITE_FULL_COST,
                                           cost_scaling="outside")
            np.testing.assert_allclose(np.exp(np.asarray(got[state - 1])), ref, rtol=1e-9, atol=1e-15)
            inside = pm.mixed_utility_speaker(sem, 10.0, jnp.array([phi, 1 - phi]), POLITE_VALUE, POLITE_FULL_COST)
            assert np.abs(np.exp(np.asarray(inside[state - 1])) - ref).max() > 0.01  # the convention matters
        bins = jnp.arange(20) * 0.05
        log_state, log_phi = pm.joint_marginals(polite_l1(sem, bins, cost=POLITE_FULL_COST, cost_scaling="outside"))
        np.testing.assert_allclose(np.exp(np.asarray(log_state[9])), WEBPPL_FULL_L1_NOT_AMAZING_STATE, rtol=1e-9,
                                   atol=1e-15)
        np.testing.assert_allclose(np.exp(np.asarray(log_phi[9])), WEBPPL_FULL_L1_NOT_AMAZING_PHI, rtol=1e-9,
                                   atol=1e-15)


# ch. 3, Kao et al. (2014) hyperbole: meaning states (price, annoyed) flattened as 2 * price + annoyed
KAO_PRICE_PRIOR = np.array([0.4205, 0.3865, 0.0533, 0.0538, 0.0223, 0.0211, 0.0112, 0.0111, 0.0083, 0.0120])
KAO_ANNOYED = np.repeat([0.3173, 0.7920, 0.8933, 0.9524, 0.9864], 2)
KAO_QUD_PRIOR = np.array([0.17, 0.32, 0.17, 0.17, 0.17])  # state, valence, stateValence, approx, approxValence
KAO_UTT_PRIOR = np.array([0.18, 0.1] * 5)  # round prices are cheaper
WEBPPL_KAO = {  # (alpha, utterance index) -> L1 over [price 50, 51, 500, ..., 10001] x [not annoyed, annoyed]
    (1, 8): [[0.02490802967, 0.2255148142], [0.02289406294, 0.2072805605], [0.0009619090601, 0.07134957566],
             [0.0009709325972, 0.07201889625], [0.0002064489858, 0.0336698515], [0.0001953396234, 0.03185802093],
             [4.625603966e-05, 0.01802919821], [4.584303931e-05, 0.01786822323], [0.002079781488, 0.1639728734],
             [0.001185237266, 0.1049441455]],
    (1, 1): [[0.2029894678, 0.06315738885], [0.5116687396, 0.2091445595], [0.002960934179, 0.0014073825],
             [0.002988710297, 0.001420584963], [0.0006354882014, 0.0006641435404], [0.0006012915268, 0.0006284048745],
             [0.0001423846541, 0.0003556289973], [0.0001411133626, 0.0003524537384], [3.014777116e-05, 0.0002729549106],
             [4.358713902e-05, 0.0003946336057]],
    (2.5, 8): [[9.366598573e-05, 0.2477137192], [8.609251721e-05, 0.2276845481], [3.617233539e-06, 0.07837298324],
               [3.651166311e-06, 0.07910818946], [7.763459423e-07, 0.03698419624], [7.34569479e-07, 0.03499401527],
               [1.739446118e-07, 0.01980393066], [1.723915349e-07, 0.01962710985], [0.00189658882, 0.1527558547],
               [0.001073010896, 0.09979696937]],
}


def kao_listener(alpha, cost_scaling, dtype):
    prior = np.stack([KAO_PRICE_PRIOR * (1 - KAO_ANNOYED), KAO_PRICE_PRIOR * KAO_ANNOYED], 1).ravel()
    price, annoyed = np.arange(20) // 2, np.arange(20) % 2
    sem = jnp.asarray(np.where(np.arange(10)[:, None] == price[None, :], 0.0, -np.inf), dtype)
    quds = [price, annoyed, np.arange(20), price // 2, (price // 2) * 2 + annoyed]  # approx: 50 ~ 51, ...
    log_prior = jnp.asarray(np.log(prior), dtype)
    spk = jnp.stack([pm.pragmatic_speaker(sem, alpha, -np.log(KAO_UTT_PRIOR), log_prior, qud=q,
                                          cost_scaling=cost_scaling) for q in quds])  # [qud, state, utterance]
    return pm.joint_listener(spk, log_prior, jnp.asarray(np.log(KAO_QUD_PRIOR), dtype))


@pytest.mark.parametrize("alpha", [1, 2.5])
def test_problang_hyperbole_is_a_joint_listener_over_state_and_qud(alpha):
    with jax.enable_x64(True):
        log_state, log_qud = pm.joint_marginals(kao_listener(alpha, "outside", jnp.float64))
        for (a, u), ref in WEBPPL_KAO.items():
            if a == alpha:
                np.testing.assert_allclose(np.exp(np.asarray(log_state[u])).reshape(10, 2), ref, rtol=1e-8, atol=1e-13)
        np.testing.assert_allclose(np.exp(np.asarray(log_qud)).sum(1), 1.0, atol=1e-12)
        if alpha == 1:  # the conventions coincide at alpha = 1
            inside, _ = pm.joint_marginals(kao_listener(alpha, "inside", jnp.float64))
            np.testing.assert_allclose(np.asarray(inside), np.asarray(log_state), rtol=1e-12)
        else:  # and not elsewhere: the chapter's speaker puts the cost outside alpha
            inside, _ = pm.joint_marginals(kao_listener(alpha, "inside", jnp.float64))
            assert np.abs(np.exp(np.asarray(inside[8])).reshape(10, 2) - WEBPPL_KAO[(alpha, 8)]).max() > 1e-3
    # "$10,000" is heard as an annoyed speaker, not a literal price (the chapter's point)
    log_state, _ = pm.joint_marginals(kao_listener(alpha, "outside", jnp.float32))
    p = np.exp(np.asarray(log_state[8])).reshape(10, 2)
    assert p[:, 1].sum() > 0.9 and p[8:].sum() < 0.3


# --- the cost conventions --------------------------------------------------------------------


def test_cost_conventions_differ_exactly_as_the_equations_say():
    rng = np.random.default_rng(40)
    util = rng.normal(size=(5, 4))
    util[2, 1] = -np.inf
    cost = rng.uniform(0, 2, 5)
    alpha = 2.7
    u32 = jnp.asarray(util, jnp.float32)
    inside = np.asarray(agents.softmax_speaker(u32, alpha, cost), float)
    outside = np.asarray(agents.softmax_speaker(u32, alpha, cost, cost_scaling="outside"), float)
    assert np.array_equal(np.asarray(agents.softmax_speaker(u32, alpha, cost, cost_scaling="inside")), inside.astype(np.float32))
    for s in range(4):
        ok = np.isfinite(util[:, s])
        a, b = np.flatnonzero(ok)[:2]
        # log S(a|s) - log S(b|s) = alpha (U_a - U_b) - alpha (c_a - c_b)   (inside)
        #                          = alpha (U_a - U_b) -       (c_a - c_b)   (outside)
        np.testing.assert_allclose(inside[s, a] - inside[s, b], alpha * (util[a, s] - util[b, s]) - alpha * (cost[a] - cost[b]), atol=1e-4)
        np.testing.assert_allclose(outside[s, a] - outside[s, b], alpha * (util[a, s] - util[b, s]) - (cost[a] - cost[b]), atol=1e-4)
        assert np.array_equal(np.isneginf(inside[s]), ~ok) and np.array_equal(np.isneginf(outside[s]), ~ok)
    # outside with cost c is inside with cost c / alpha
    np.testing.assert_allclose(outside, np.asarray(agents.softmax_speaker(u32, alpha, cost / alpha)), atol=1e-5)
    assert np.abs(np.exp(outside) - np.exp(inside)).max() > 0.01


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_outside_cost_matches_naive_loop_through_the_recursion(depth):
    rng = np.random.default_rng(41 + depth)
    for _ in range(3):
        n_u, n_s = rng.integers(3, 7, 2)
        truth = random_lexicon(rng, n_u, n_s, graded=bool(depth % 2))
        alpha, cost, prior = rng.uniform(0.3, 4), rng.uniform(0, 2, n_u), rng.dirichlet(np.ones(n_s))
        sem = to_log(truth)
        for scaling in INSIDE_OUTSIDE:
            lis = pm.pragmatic_listener(sem, alpha, cost, jnp.log(prior), depth, cost_scaling=scaling)
            assert_probs(lis, naive_rsa_scaled(truth, alpha, cost, prior, depth, scaling))
            spk = pm.pragmatic_speaker(sem, alpha, cost, jnp.log(prior), depth, cost_scaling=scaling)
            assert_probs(spk, naive_rsa_scaled(truth, alpha, cost, prior, depth, scaling, role="speaker"))


def test_outside_cost_in_qud_speaker_and_lexical_uncertainty_match_naive_loop():
    rng = np.random.default_rng(45)
    truth = random_lexicon(rng, 5, 6, graded=True, empty=False)
    qud = np.array([0, 0, 1, 1, 2, 2])
    alpha, cost, prior = 2.3, rng.uniform(0, 1, 5), rng.dirichlet(np.ones(6))
    got = pm.pragmatic_speaker(to_log(truth), alpha, cost, jnp.log(prior), qud=qud, cost_scaling="outside")
    assert_probs(got, naive_speaker(naive_listener0(truth, prior), alpha, cost, "outside", qud))
    truths = np.stack([random_lexicon(rng, 4, 5, graded=g) for g in (False, True)])
    lex_prior = np.array([0.3, 0.7])
    cost, prior = rng.uniform(0, 1, 4), rng.dirichlet(np.ones(5))
    spk = sum(lex_prior[i] * naive_speaker(naive_listener0(truths[i], prior), alpha, cost, "outside") for i in range(2))
    ref = naive_rsa.listener_from_speaker(spk, prior)
    got = pm.lexical_uncertainty_listener(to_log(truths), alpha, cost, jnp.log(prior), jnp.log(lex_prior),
                                          cost_scaling="outside")
    assert_probs(got, ref)
    inside = pm.lexical_uncertainty_listener(to_log(truths), alpha, cost, jnp.log(prior), jnp.log(lex_prior))
    assert np.abs(np.exp(np.asarray(inside)) - ref).max() > 1e-3


def test_conventions_coincide_at_alpha_one_for_every_agent():
    rng = np.random.default_rng(46)
    truth = random_lexicon(rng, 5, 6, graded=True)
    sem, cost, prior = to_log(truth), jnp.asarray(rng.uniform(0, 2, 5), jnp.float32), jnp.log(rng.dirichlet(np.ones(6)))
    w, v = jnp.array([0.6, 0.5]), jnp.asarray(rng.normal(size=6), jnp.float32)
    calls = [
        lambda cs: pm.pragmatic_speaker(sem, 1.0, cost, prior, 2, cost_scaling=cs),
        lambda cs: pm.pragmatic_listener(sem, 1.0, cost, prior, 3, cost_scaling=cs),
        lambda cs: pm.lexical_uncertainty_listener(jnp.stack([sem, sem[::-1]]), 1.0, cost, prior, None, 2, cost_scaling=cs),
        lambda cs: pm.mixed_utility_speaker(sem, 1.0, w, v, cost, prior, cost_scaling=cs),
        lambda cs: agents.softmax_speaker(sem, 1.0, cost, cost_scaling=cs),
    ]
    for f in calls:
        a, b = np.asarray(f("inside")), np.asarray(f("outside"))
        assert np.array_equal(np.isneginf(a), np.isneginf(b))
        np.testing.assert_allclose(np.exp(a), np.exp(b), atol=1e-6)
    # ... and differ at alpha = 2
    a = pm.pragmatic_listener(sem, 2.0, cost, prior, 2)
    b = pm.pragmatic_listener(sem, 2.0, cost, prior, 2, cost_scaling="outside")
    assert np.abs(np.exp(np.asarray(a)) - np.exp(np.asarray(b))).max() > 1e-3


def test_alpha_zero_limit_under_each_convention():
    rng = np.random.default_rng(47)
    truth = random_lexicon(rng, 5, 6, graded=True, empty=False)
    truth[1, 2] = 0.0
    cost = rng.uniform(0, 3, 5)
    for alpha in (0.0, 1e-7):
        inside = np.exp(np.asarray(pm.pragmatic_speaker(to_log(truth), alpha, cost)))
        outside = np.exp(np.asarray(pm.pragmatic_speaker(to_log(truth), alpha, cost, cost_scaling="outside")))
        mixed = np.exp(np.asarray(pm.mixed_utility_speaker(to_log(truth), alpha, jnp.array([0.5, 0.5]), np.arange(6.0),
                                                           cost, cost_scaling="outside")))
        for s in range(6):
            true = truth[:, s] > 0
            np.testing.assert_allclose(inside[s, true], 1 / true.sum(), atol=1e-5)  # uniform over true
            prior_u = np.exp(-cost[true]) / np.exp(-cost[true]).sum()  # the utterance prior exp(-cost)
            np.testing.assert_allclose(outside[s, true], prior_u, atol=1e-5)
            np.testing.assert_allclose(mixed[s, true], prior_u, atol=1e-5)
            assert np.all(inside[s, ~true] == 0) and np.all(outside[s, ~true] == 0) and np.all(mixed[s, ~true] == 0)
    # without a cost both are uniform over the true utterances
    np.testing.assert_allclose(np.exp(np.asarray(pm.pragmatic_speaker(to_log(truth), 0.0, cost_scaling="outside"))),
                               np.exp(np.asarray(pm.pragmatic_speaker(to_log(truth), 0.0))), atol=1e-6)


# --- gradients -------------------------------------------------------------------------------


@pytest.mark.parametrize("scaling", INSIDE_OUTSIDE)
def test_gradients_finite_on_01_lexicon(scaling):
    rng = np.random.default_rng(50)
    truth = random_lexicon(rng, 5, 6)  # 0/1, with an empty utterance and an unfit state
    sem = to_log(truth)
    value = jnp.asarray(rng.normal(size=6), jnp.float32)
    finite = lambda x: jnp.where(jnp.isfinite(x), x, 0.0).sum()

    def loss(alpha, weights, cost, value, sem):
        phis = jnp.array([0.2, 0.8])
        spk = jax.vmap(lambda p: pm.mixed_utility_speaker(sem, alpha, weights * jnp.stack([p, 1 - p]), value, cost,
                                                          cost_scaling=scaling))(phis)
        joint = pm.joint_listener(spk)
        log_state, log_goal = pm.joint_marginals(joint)
        lis = pm.pragmatic_listener(sem, alpha, cost, None, 2, cost_scaling=scaling)
        return finite(spk) + finite(joint) + finite(log_state) + finite(log_goal) + finite(lis)

    args = (2.0, jnp.array([1.0, 0.7]), jnp.ones(5) * 0.3, value, sem)
    grads = jax.grad(loss, argnums=(0, 1, 2, 3, 4))(*args)
    for g in grads:
        assert np.all(np.isfinite(np.asarray(g)))
    assert float(grads[0]) != 0.0 and np.all(np.asarray(grads[1]) != 0.0)  # alpha and weights matter
    assert np.all(np.asarray(grads[4])[truth == 0] == 0)  # false entries have no probability to move


def test_weight_and_alpha_gradients_match_finite_differences():
    truth = np.array([[1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [1, 1, 1, 1, 0], [0, 0, 0, 1, 1]], float)  # 0/1
    value = np.array([-1.0, -0.5, 0.0, 0.8, 1.5])
    with jax.enable_x64(True):
        sem = to_log(truth, jnp.float64)

        def f(alpha, phi):
            spk = jax.vmap(lambda p: pm.mixed_utility_speaker(sem, alpha, jnp.stack([p, 1 - p]), value,
                                                              jnp.array([0.1, 0.5, 0.2, 0.4]), cost_scaling="outside"))(
                jnp.stack([phi, 0.5]))
            return pm.joint_marginals(pm.joint_listener(spk))[1][2, 0]  # log L1(goal 0 | utterance 2)

        g_alpha, g_phi = jax.grad(f, argnums=(0, 1))(1.5, 0.3)
        h = 1e-6
        fd_alpha = (f(1.5 + h, 0.3) - f(1.5 - h, 0.3)) / (2 * h)
        fd_phi = (f(1.5, 0.3 + h) - f(1.5, 0.3 - h)) / (2 * h)
        assert abs(float(fd_phi)) > 1e-3  # a gradient that could be wrong
        np.testing.assert_allclose(float(g_alpha), float(fd_alpha), rtol=1e-5)
        np.testing.assert_allclose(float(g_phi), float(fd_phi), rtol=1e-5)


# --- bad inputs ------------------------------------------------------------------------------


def test_bad_cost_scaling_is_named_with_the_choices():
    sem = to_log(np.eye(3))
    msg = r"cost_scaling must be one of 'inside', 'outside'; got 'both'"
    for f in [
        lambda: pm.pragmatic_speaker(sem, 1.0, cost_scaling="both"),
        lambda: pm.pragmatic_listener(sem, 1.0, cost_scaling="both"),
        lambda: pm.pragmatic_listener(sem, 1.0, depth=0, cost_scaling="both"),
        lambda: pm.lexical_uncertainty_listener(sem[None], 1.0, cost_scaling="both"),
        lambda: agents.softmax_speaker(sem, 1.0, cost_scaling="both"),
        lambda: pm.mixed_utility_speaker(sem, 1.0, jnp.array([1.0, 0.0]), jnp.zeros(3), cost_scaling="both"),
        lambda: agents.weighted_utility_speaker(sem[None], 1.0, jnp.ones(1), cost_scaling="both"),
    ]:
        with pytest.raises(ValueError, match=msg):
            f()


def test_bad_shapes_are_named():
    sem = to_log(np.eye(3))
    with pytest.raises(ValueError, match=r"weights of shape \[2\] \(w_inf, w_soc\); got shape \(3,\)"):
        pm.mixed_utility_speaker(sem, 1.0, jnp.ones(3), jnp.zeros(3))
    with pytest.raises(ValueError, match=r"social_value must have shape \[state\] = \(3,\).*got shape \(4,\)"):
        pm.mixed_utility_speaker(sem, 1.0, jnp.ones(2), jnp.zeros(4))
    with pytest.raises(ValueError, match=r"utilities of shape \[component, utterance, state\]; got shape \(3, 3\)"):
        agents.weighted_utility_speaker(sem, 1.0, jnp.ones(1))
    with pytest.raises(ValueError, match=r"weights must have shape \[component\] = \(2,\).*got shape \(3,\)"):
        agents.weighted_utility_speaker(jnp.stack([sem, sem]), 1.0, jnp.ones(3))
    with pytest.raises(ValueError, match=r"log_speaker of shape \[goal, state, utterance\]; got shape \(3, 3\)"):
        pm.joint_listener(sem)
    spk = jnp.zeros((2, 3, 4))
    with pytest.raises(ValueError, match=r"log_prior must have shape \[state\] = \(3,\) or \[state, goal\] = \(3, 2\).*got shape \(4,\)"):
        pm.joint_listener(spk, jnp.zeros(4))
    with pytest.raises(ValueError, match=r"log_goal_prior must have shape \[goal\] = \(2,\).*got shape \(3,\)"):
        pm.joint_listener(spk, None, jnp.zeros(3))
    with pytest.raises(ValueError, match=r"already the joint prior; pass log_goal_prior=None"):
        pm.joint_listener(spk, jnp.zeros((3, 2)), jnp.zeros(2))
    with pytest.raises(ValueError, match=r"log_joint of shape \[utterance, state, goal\]; got shape \(3, 3\)"):
        pm.joint_marginals(sem)


def test_new_names_are_exported():
    for name in ["social_utility", "weighted_utility_speaker", "mixed_utility_speaker", "joint_listener",
                 "joint_marginals"]:
        assert name in agents.__all__ and name in pm.__all__ and getattr(pm, name) is getattr(agents, name)
