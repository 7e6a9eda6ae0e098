"""The arithmetic the issue-38 benchmarks report with: levers' shares and run-to-run z scores."""

import itertools
import math

import pytest

from benchmarks.main_job import log_shares
from benchmarks.posterior_agreement import z_score


def test_log_shares_sum_to_the_saving_and_do_not_depend_on_the_order():
    before, after, ratios = 2487.0, 500.0, [0.63, 0.527]
    shares = log_shares(before, after, ratios)
    assert math.isclose(sum(shares), before - after, rel_tol=1e-12)
    # the rest's ratio is what the levers leave: 500 / (2487 x 0.63 x 0.527)
    rest = after / (before * 0.63 * 0.527)
    assert math.isclose(shares[-1], (before - after) * math.log(rest) / math.log(after / before), rel_tol=1e-12)
    for perm in itertools.permutations(range(2)):
        again = log_shares(before, after, [ratios[i] for i in perm])
        assert [again[perm.index(i)] for i in range(2)] == pytest.approx(shares[:2], rel=1e-12)
    # two equal levers and nothing else get half each
    assert log_shares(100.0, 25.0, [0.5]) == pytest.approx([37.5, 37.5])


def test_a_lever_that_cost_time_gets_a_negative_share():
    shares = log_shares(100.0, 50.0, [1.2])
    assert shares[0] < 0 < shares[1] and math.isclose(sum(shares), 50.0)


@pytest.mark.parametrize("args", [(0.0, 10.0, [0.5]), (10.0, 5.0, [0.0]), (10.0, -1.0, [])])
def test_log_shares_refuses_what_is_not_positive(args):
    with pytest.raises(ValueError, match="must be positive"):
        log_shares(*args)


def test_z_score_scales_the_old_mcse_by_the_ess():
    # equal ESS: the difference over sqrt(2) MCSE
    assert z_score(1.1, 1.0, 0.05, 400.0, 400.0) == pytest.approx(0.1 / (0.05 * math.sqrt(2)))
    # the old run had a quarter of the ESS: its MCSE is twice the new one
    assert z_score(1.1, 1.0, 0.05, 400.0, 100.0) == pytest.approx(0.1 / math.hypot(0.05, 0.1))
    with pytest.raises(ValueError, match="must be positive"):
        z_score(1.0, 1.0, 0.0, 400.0, 400.0)
