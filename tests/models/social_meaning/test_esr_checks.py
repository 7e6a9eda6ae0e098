"""The ESR coverage checks under misspecification: the Likert simulator's ratings and its exact
true effects against large simulations, and the winner's-curse simulator's selection."""

import numpy as np
import pytest

from models.social_meaning import esr, esr_checks
from pragmodels import datasets, metrics


@pytest.fixture(scope="module")
def real(mirror):
    human, llm = datasets.load_social_human(), datasets.load_social_llm()
    return human, llm[(llm.model == "claude") & (llm.prompt == "MIN")]  # Claude MIN: 98 invalid rows


def test_expected_rating_is_exact_and_inverted():
    """Against 400,000 rounded and clipped normal draws per case; tolerance 5 Monte Carlo SEs
    (at most 2e-3 rating points here), from the floor to the ceiling and past both."""
    mean = np.array([-0.5, 1.2, 3.9, 6.4, 6.9, 8.5])
    for sd in (0.3, 1.6):
        z = np.random.default_rng(0).normal(mean, sd, size=(400_000, len(mean)))
        y = np.clip(np.floor(z + 0.5), 1, 7)
        se = y.std(0) / np.sqrt(len(y))
        assert np.all(np.abs(esr_checks.expected_rating(mean, sd) - y.mean(0)) <= 5 * se + 1e-9)  # past the ends: 1 or 7 to 1e-9
    target = np.array([1.3, 2.0, 4.5, 6.99])
    np.testing.assert_allclose(esr_checks.expected_rating(esr_checks.latent_mean(target, 0.7), 0.7), target, atol=1e-9)


def test_likert_designs_give_the_design_shape_and_their_exact_effects(real):
    """Ratings are integers 1-7 on the real rows; the exact true effects equal the mean of the
    effects over 3,000 simulated data sets within 4 Monte Carlo SEs (SE: the effects' SD / sqrt(3,000));
    with no shift the human design reproduces the observed effects (each cell's latent mean inverts
    its observed mean; tolerance 1e-6)."""
    human, llm = real
    rng = np.random.default_rng(1)
    h = esr_checks.human_design(human)
    frame = metrics.valid_ratings(human).frame
    assert len(h.frame) == len(frame) and h.rater.max() + 1 == frame.participant_id.nunique()
    np.testing.assert_allclose(h.true_effects(), esr.human_statistics(human)[0], atol=1e-6)
    m = esr_checks.llm_design(llm)
    assert len(m.frame) == len(metrics.valid_ratings(llm).frame) == 1440 - 98
    shift = esr_checks.contrast_shift(m.frame, np.full(6, 0.4), np.full(6, -0.6))
    for design, s in ((h, 0.0), (m, shift)):
        y = design.simulate(rng, 3000, shift=s)
        assert y.shape == (3000, len(design.frame)) and set(np.unique(y)) <= set(range(1, 8))
        eff = y @ esr.effect_weights(design.frame).T
        se = eff.std(0) / np.sqrt(len(eff))
        assert np.all(np.abs(design.true_effects(s) - eff.mean(0)) <= 4 * se)
    assert not np.allclose(m.true_effects(shift), m.true_effects())  # the shift moves the effects


def test_winners_curse_reports_only_significant_human_effects(real):
    """Every returned human effect has |t| > 1.96; for an effect whose true t is 1 the selected
    estimates' mean t is above 2.3 (the curse), while unselected draws would average 1."""
    rng = np.random.default_rng(2)
    cov = np.diag([0.04, 0.09])
    truth = np.array([0.2, 1.5])  # t = 1 and t = 5
    d = np.array([esr_checks.selected_effects(rng, truth, cov)[0] for _ in range(300)])
    t = d / np.sqrt(np.diag(cov))
    assert np.all(np.abs(t) > esr_checks.Z_SELECT)
    assert t[:, 0].mean() > 2.3
    human, llm = real
    data, _ = esr.model_data(human, {"claude MIN": llm})
    sets, truths, true_t = esr_checks.winners_curse_sets(data, 3, rng)
    se = np.sqrt(np.diag(data["cov_h"]))
    assert all(np.all(np.abs(s["d_h"]) / se > esr_checks.Z_SELECT) for s in sets)
    weak = np.abs(data["d_h"] / se) < esr_checks.WEAK_T
    assert weak.any() and np.all((np.abs(true_t[:, weak]) >= 1) & (np.abs(true_t[:, weak]) <= 3))


def test_a_run_without_the_check_points_to_its_own_job():
    import re
    from pathlib import Path

    text = esr_checks.elsewhere_section()
    table = re.search(r"`(fits/social_meaning/esr_checks/coverage\.md)`", text)
    assert table and (Path(__file__).parents[3] / table.group(1)).is_file()  # the table it names is committed
    assert "python -m models.social_meaning.esr_checks --replicates 100" in text
    assert "misspecification_replicates" in text
