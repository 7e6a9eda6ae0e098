"""The study report's verdicts: LOO wording and the convergence rule."""

import json
from types import SimpleNamespace

import pandas as pd

from models.social_meaning_report import _loo_verdict, converged


def _cmp(diff, se):
    return pd.DataFrame({"elpd_diff": [0.0, diff], "dse": [0.0, se]}, index=["rsa", "baseline"])


def test_loo_verdict_reads_the_size_of_the_difference_not_its_sign():
    """compare() reports the second model's elpd_diff as <= 0; a regression read -10 ± 4 as
    'within 2 standard errors' because the ratio was negative."""
    assert "within 2 standard errors" in _loo_verdict(_cmp(-4.0, 4.5))
    assert "more than 2 standard errors" in _loo_verdict(_cmp(-10.0, 4.0))
    assert _loo_verdict(pd.DataFrame({"elpd": [1.0]})) == "see the table."


def test_converged_needs_both_rhat_and_ess():
    tree = lambda rhat, ess: SimpleNamespace(attrs={"diagnostics": json.dumps(dict(max_rhat=rhat, min_ess_bulk=ess))})
    assert converged(tree(1.009, 150)) and not converged(tree(1.011, 5000)) and not converged(tree(1.0, 99))
