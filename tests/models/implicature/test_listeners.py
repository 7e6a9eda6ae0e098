"""The DRInQ listener models against loops written from the equations, and the consensus likelihood
against an enumeration of every vote pattern of 5 annotators."""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pytest

import pragmodels as pm
from models.implicature import listeners


def _softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()


def naive_l1(fit, prior, alpha, w, cost):
    """L1(a | Q, C) by loops: utterances are Q and 'say a_j' for each j."""
    n = len(fit)
    l0_q = _softmax(fit)
    s1_q = np.zeros(n)
    for a in range(n):
        utils = [alpha * math.log(l0_q[a])]                         # ask Q
        for j in range(n):                                          # say a_j outright
            l0 = 1.0 if j == a else 0.0
            utils.append(alpha * math.log(l0) - cost if l0 > 0 else -math.inf)  # the cost outside alpha
        z = sum(math.exp(u) for u in utils if u > -math.inf)
        s1_q[a] = math.exp(utils[0]) / z
    p = _softmax(prior) ** w * s1_q
    return p / p.sum()


def test_rsa_listener_matches_loops():
    rng = np.random.default_rng(0)
    fit, prior = rng.normal(-3, 1, (6, 5)), rng.normal(-3, 1, (6, 5))
    for alpha, w, cost in [(1.0, 0.0, 0.0), (3.0, 1.0, 1.5), (0.4, 2.0, -1.0)]:
        got = np.exp(np.asarray(listeners.rsa_option_listener(fit, prior, alpha, w, cost)))
        want = np.stack([naive_l1(fit[i], prior[i], alpha, w, cost) for i in range(6)])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_consensus_probabilities_match_an_enumeration_of_votes():
    p = np.array([0.5, 0.2, 0.15, 0.1, 0.05])
    e = np.zeros(5)
    for votes in itertools.product(range(5), repeat=listeners.N_ANNOTATORS):
        counts = np.bincount(votes, minlength=5)
        if counts.max() >= listeners.THRESHOLD:
            e[counts.argmax()] += np.prod(p[list(votes)])
    want = e / e.sum()
    got = np.exp(np.asarray(listeners.consensus_log_probs(np.log(p))))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # consensus sharpens: the most likely option gains, the others lose
    assert got[0] > p[0] and np.all(got[1:] < p[1:])


def test_lapse_mixture_and_model_shapes():
    lp = np.log(np.array([[0.7, 0.1, 0.1, 0.05, 0.05]]))
    mixed = np.exp(np.asarray(listeners.choice_log_probs(lp, 0.5)))
    np.testing.assert_allclose(mixed, 0.5 * np.exp(lp) + 0.1, rtol=1e-6)
    z = np.zeros((4, 5), np.float32)
    want = {"rsa": ["alpha", "w", "lapse"], "literal": ["beta", "lapse"], "prior": ["w", "lapse"],
            "letter": ["beta", "lapse"]}
    for name, model in listeners.MODELS.items():
        info = pm.inspect_model(model, {"fit": z, "prior": z, "letter": z, "consensus": np.zeros(4, np.int32)})
        assert info.latent == want[name] and info.observed == ["selection", "consensus"] and not info.undeclared
    with pytest.raises(ValueError, match=r"\[item, 5\]"):
        listeners.rsa_model(np.zeros((4, 4)), np.zeros((4, 4)), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="consensus must be"):
        listeners.letter_model(z, z, z, np.zeros(3, np.int32))


def test_listener_log_probs_is_the_models_observation():
    rng = np.random.default_rng(1)
    data = {k: rng.normal(-3, 1, (5, 5)).astype(np.float32) for k in ("fit", "prior", "letter")}
    params = {"alpha": 2.0, "w": 0.5, "cost": 1.0, "beta": 1.5, "lapse": 0.1}
    lp = np.asarray(listeners.listener_log_probs("rsa", params, data["fit"], data["prior"], data["letter"]))
    np.testing.assert_allclose(np.exp(lp).sum(1), 1.0, rtol=1e-5)
    want = 0.9 * np.stack([naive_l1(data["fit"][i], data["prior"][i], 2.0, 0.5, 1.0) for i in range(5)]) + 0.02
    np.testing.assert_allclose(np.exp(lp), want, rtol=1e-4)
    with pytest.raises(ValueError, match="model 'x'"):
        listeners.listener_log_probs("x", params, data["fit"], data["prior"], data["letter"])


def test_the_selection_rate_enters_the_likelihood():
    """Issue 37 item 15: the likelihood conditioned on consensus alone said nothing of the 80.8% of
    presented items that reached it. With every item's P(E) = p, the selection's log-likelihood is
    n log p + n (1 - r) / r log(1 - p), largest at p = r; rate None gives 0."""
    n, r = 10, listeners.SELECTION_RATE

    def log_p_for(pe):  # one option with P(E_j) = pe, the others (near) none
        q = float(next(x for x in np.linspace(0.3, 1.0, 20001) if x ** 4 * (5 - 4 * x) >= pe))
        row = np.full(5, (1 - q) / 4)
        row[0] = q
        return np.log(np.tile(row, (n, 1)))

    grid = np.linspace(0.5, 0.99, 50)
    vals = [float(listeners.selection_log_lik(log_p_for(pe), np.zeros(n, np.int32))) for pe in grid]
    assert abs(grid[int(np.argmax(vals))] - r) < 0.02  # the grid's step is 0.01, q's 3.5e-5
    assert float(listeners.selection_log_lik(log_p_for(0.6), np.zeros(n, np.int32), None)) == 0.0
    with pytest.raises(ValueError, match=r"rate = 1.5; expected a share"):
        listeners.selection_log_lik(log_p_for(0.6), np.zeros(n, np.int32), 1.5)
    # the models carry it as a factor, and log_likelihood adds it to the conditional part
    z = np.random.default_rng(0).normal(-2, 1, (n, 5)).astype(np.float32)
    data = {"fit": z, "prior": z, "letter": z, "consensus": np.zeros(n, np.int32)}
    tr = __import__("numpyro").handlers.trace(__import__("numpyro").handlers.seed(listeners.rsa_model, 0)).get_trace(**data)
    assert "selection" in tr
    params = {"alpha": 1.0, "w": 1.0, "lapse": 0.1, "cost": 0.0}
    both, cond = (float(listeners.log_likelihood("rsa", params, data, rate)) for rate in (r, None))
    lp = np.asarray(listeners.listener_log_probs("rsa", params, z, z, z))
    assert both - cond == pytest.approx(float(listeners.selection_log_lik(lp, data["consensus"])), rel=1e-5)


@pytest.mark.slow
def test_rsa_parameters_are_recovered_from_data_of_the_real_size(monkeypatch):
    """231 items simulated from known parameters (LM scores drawn like SmolLM2's: mean per-token
    log-probabilities around -3.5, SD 0.6 across options), cost fixed at 0 as in the model. Each
    parameter's 94% interval must hold the truth (a 6% miss rate each, at a fixed seed), and
    alpha's must exclude 1 (the data say how rational, not only that the model fits). The items are
    simulated as all kept, so the fit leaves the selection out (``SELECTION_RATE = None``)."""
    monkeypatch.setattr(listeners, "SELECTION_RATE", None)
    rng = np.random.default_rng(5)
    n = 231
    fit = rng.normal(-3.5, 0.6, (n, 5)).astype(np.float32)
    prior = rng.normal(-3.5, 0.6, (n, 5)).astype(np.float32)
    truth = {"alpha": 4.0, "w": 1.0, "lapse": 0.1}
    lp = listeners.consensus_log_probs(listeners.choice_log_probs(listeners.rsa_option_listener(fit, prior, truth["alpha"], truth["w"], 0.0),
                                                    truth["lapse"]))
    cons = np.asarray(jax.random.categorical(jax.random.PRNGKey(0), lp)).astype(np.int32)
    tree = pm.fit(3, listeners.rsa_model, {"fit": fit, "prior": prior, "letter": fit, "consensus": cons},
                  num_warmup=500, num_samples=500, num_chains=2)
    post = tree["posterior"].to_dataset()
    for v, x in truth.items():
        s = post[v].to_numpy().ravel()
        lo, hi = np.quantile(s, [0.03, 0.97])
        assert lo <= x <= hi, (v, lo, hi)
    assert np.quantile(post["alpha"].to_numpy(), 0.03) > 1.0
