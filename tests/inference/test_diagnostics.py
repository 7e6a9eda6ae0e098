"""diagnose(): divergences, r_hat, ESS, and checks that cannot pass vacuously."""

import numpy as np
import pytest
import xarray as xr

from pragmodels.inference import diagnostics

pytestmark = pytest.mark.filterwarnings("ignore:Found chain dimension to be longer than draw:UserWarning")


def _tree(**posterior: np.ndarray) -> xr.DataTree:
    """A hand-made fit: ``posterior`` arrays ``[chain, draw, ...]``, no divergences."""
    chains, draws = next(iter(posterior.values())).shape[:2]
    post = xr.Dataset({k: (("chain", "draw", *[f"{k}_dim_{i}" for i in range(v.ndim - 2)]), v)
                       for k, v in posterior.items()})
    stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((chains, draws), bool))})
    return xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})


def test_chains_that_never_moved_fail_on_a_loaded_tree():
    """Issue 33, item 2: 4 chains x 1,000 identical draws gave ok=True (r_hat and ESS NaN are
    neither > 1.01 nor < 400) when diagnose was called without ``latent`` (a loaded tree)."""
    rng = np.random.default_rng(0)
    diag = diagnostics.diagnose(_tree(stuck=np.ones((4, 1000)), fine=rng.standard_normal((4, 1000))), emit=False)
    assert not diag.ok
    assert any("NaN for ['stuck']" in p for p in diag.problems), diag.problems
    with pytest.warns(diagnostics.FitWarning, match=r"NaN for \['stuck'\]"):
        diagnostics.diagnose(_tree(stuck=np.ones((4, 1000))))


def test_a_nan_diagnostic_names_the_element_of_a_vector():
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((4, 1000, 3, 2))
    theta[:, :, 1, 0] = 0.25  # one element stuck in every chain
    diag = diagnostics.diagnose(_tree(theta=theta), emit=False)
    assert not diag.ok
    assert any("NaN for ['theta[1, 0]']" in p for p in diag.problems), diag.problems


def test_one_chain_that_never_moved_fails():
    """One chain: r_hat is not computed, and the ESS of constant draws is their count (1,000),
    so nothing was NaN or below a threshold; draws that never vary are a failure themselves."""
    rng = np.random.default_rng(4)
    theta = rng.standard_normal((1, 1000, 3))
    theta[0, :, 2] = 0.5
    diag = diagnostics.diagnose(_tree(theta=theta), emit=False)
    assert any("draws of ['theta[2]'] do not vary" in p for p in diag.problems), diag.problems
    # several chains, one of them stuck: named as well
    theta = rng.standard_normal((4, 1000))
    theta[3] = theta[3, 0]
    diag = diagnostics.diagnose(_tree(theta=theta), emit=False)
    assert any("draws of ['theta'] do not vary" in p for p in diag.problems), diag.problems


def test_many_nan_elements_are_listed_in_part_with_their_count():
    diag = diagnostics.diagnose(_tree(w=np.zeros((4, 1000, 50))), emit=False)
    problem = next(p for p in diag.problems if "NaN" in p)
    assert "'w[0]'" in problem and "'w[9]'" in problem and "'w[10]'" not in problem and "40 more" in problem


def test_latent_sites_exempt_constant_deterministic_sites():
    rng = np.random.default_rng(2)
    tree = _tree(fine=rng.standard_normal((4, 1000)), fixed_cost=np.zeros((4, 1000)))
    assert diagnostics.diagnose(tree, emit=False, latent=["fine"]).ok
    bad = diagnostics.diagnose(tree, emit=False)  # without latent every site counts
    assert any("['fixed_cost']" in p and "latent=" in p for p in bad.problems), bad.problems


def test_a_fit_without_draws_fails():
    diag = diagnostics.diagnose(_tree(x=np.zeros((4, 0))), emit=False)
    assert not diag.ok and any("no draws" in p for p in diag.problems), diag.problems


def test_a_well_mixed_fit_passes():
    rng = np.random.default_rng(3)
    diag = diagnostics.diagnose(_tree(a=rng.standard_normal((4, 1000)), v=rng.standard_normal((4, 1000, 3))),
                                emit=False)
    assert diag.ok, diag.problems
