"""Accuracy over runs: bootstrap intervals against the normal approximation, paired tests, McNemar by hand."""

from __future__ import annotations

import numpy as np
import pytest

from pragmodels.metrics.accuracy import accuracy_summary, mcnemar, paired_bootstrap


def test_summary_mean_sd_and_interval():
    rng = np.random.default_rng(0)
    correct = rng.random((3, 400)) < 0.6
    s = accuracy_summary(correct, n_boot=4000, seed=1)
    assert s.mean == pytest.approx(correct.mean())
    assert s.sd == pytest.approx(correct.mean(axis=1).std(ddof=1))
    assert (s.n_item, s.n_run) == (400, 3)
    # the item bootstrap's 95% width against the normal approximation 2 * 1.96 * SE of the per-item
    # means (within 15%: 4,000 resamples estimate a quantile to a few percent)
    se = correct.mean(axis=0).std(ddof=1) / np.sqrt(400)
    assert (s.hi - s.lo) == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert s.lo < s.mean < s.hi


def test_one_run_has_no_sd_and_bad_input_is_named():
    s = accuracy_summary([True, False, True, True], n_boot=200)
    assert np.isnan(s.sd) and s.mean == 0.75
    with pytest.raises(ValueError, match="holds 0.5"):
        accuracy_summary([1.0, 0.5])
    with pytest.raises(ValueError, match="holds"):
        accuracy_summary(["A", "B"])
    with pytest.raises(ValueError, match="at least one item"):
        accuracy_summary(np.zeros((2, 0), bool))
    with pytest.raises(ValueError, match="n_boot"):
        accuracy_summary([True], n_boot=10)


def test_paired_bootstrap_sees_a_real_difference_and_not_a_null_one():
    rng = np.random.default_rng(2)
    b = rng.random((3, 300)) < 0.5
    same = paired_bootstrap(b, b, n_boot=1000)
    assert same.diff == 0 and same.p == 1.0
    a = b | (rng.random((3, 300)) < 0.3)       # a adds correct answers to b's
    d = paired_bootstrap(a, b, n_boot=2000)
    assert d.diff > 0.1 and d.lo > 0 and d.p < 0.01
    with pytest.raises(ValueError, match="same items"):
        paired_bootstrap(a[:, :10], b)


def test_mcnemar_matches_the_binomial_by_hand():
    # 8 items only a gets right, 2 only b: p = 2 * P(X <= 2 | n = 10, 1/2) = 2 * 56/1024
    a = np.array([True] * 8 + [False] * 2 + [True] * 5)
    b = np.array([False] * 8 + [True] * 2 + [True] * 5)
    n10, n01, p = mcnemar(a, b)
    assert (n10, n01) == (8, 2) and p == pytest.approx(2 * 56 / 1024)
    assert mcnemar(a, a)[2] == 1.0
    with pytest.raises(ValueError, match="one run"):
        mcnemar(np.ones((2, 3), bool), np.ones((2, 3), bool))
