"""Deliberately naive NumPy reference implementation of RSA (float64, explicit loops).

Written independently of pragmodels.agents: probabilities, not log space; undefined rows are 0.
"""

import numpy as np


def _norm_rows(m):
    out = np.zeros_like(m)
    for i in range(m.shape[0]):
        z = m[i].sum()
        if z > 0:
            out[i] = m[i] / z
    return out


def listener0(truth, prior):
    n_u, n_s = truth.shape
    w = np.zeros((n_u, n_s))
    for u in range(n_u):
        for s in range(n_s):
            w[u, s] = truth[u, s] * prior[s]
    return _norm_rows(w)


def speaker(listener, alpha, cost, qud=None):
    n_u, n_s = listener.shape
    w = np.zeros((n_s, n_u))
    for s in range(n_s):
        for u in range(n_u):
            if qud is None:
                p = listener[u, s]
            else:
                p = sum(listener[u, t] for t in range(n_s) if qud[t] == qud[s])
            w[s, u] = p**alpha * np.exp(-alpha * cost[u]) if p > 0 else 0.0
    return _norm_rows(w)


def listener_from_speaker(spk, prior):
    n_s, n_u = spk.shape
    w = np.zeros((n_u, n_s))
    for u in range(n_u):
        for s in range(n_s):
            w[u, s] = spk[s, u] * prior[s]
    return _norm_rows(w)


def rsa(truth, alpha, cost=None, prior=None, depth=1, prior_at="all", qud=None, role="listener"):
    n_u, n_s = truth.shape
    cost = np.zeros(n_u) if cost is None else np.asarray(cost, float)
    prior = np.ones(n_s) if prior is None else np.asarray(prior, float)
    flat = np.ones(n_s)
    inner = prior if prior_at == "all" else flat
    if role == "listener" and depth == 0:
        return listener0(truth, prior)
    lis = listener0(truth, inner)
    for k in range(1, depth + 1):
        spk = speaker(lis, alpha, cost, qud)
        if role == "speaker" and k == depth:
            return spk
        top = k == depth
        lis = listener_from_speaker(spk, prior if (top or prior_at == "all") else flat)
    return lis


def lexical_uncertainty(truths, lex_prior, alpha, cost, prior, depth=1, prior_at="all"):
    n_lex, n_u, n_s = truths.shape
    flat = np.ones(n_s)
    inner = prior if prior_at == "all" else flat
    spk = np.zeros((n_s, n_u))
    for i in range(n_lex):
        spk += lex_prior[i] * speaker(listener0(truths[i], inner), alpha, cost)
    lis = listener_from_speaker(spk, prior if (depth == 1 or prior_at == "all") else flat)
    for k in range(2, depth + 1):
        spk = speaker(lis, alpha, cost)
        lis = listener_from_speaker(spk, prior if (k == depth or prior_at == "all") else flat)
    return lis
