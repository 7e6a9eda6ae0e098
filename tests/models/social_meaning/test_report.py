"""The study report's verdicts: LOO wording, chain starts and the convergence rule."""

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from models.social_meaning.report import _diag_line, _init_paragraph, converged, quick_markdown
from pragmodels.evaluation.model_comparison import loo_sentence
from pragmodels.inference.diagnostics import depth_cap_share


def _cmp(diff, se):
    return pd.DataFrame({"elpd_diff": [0.0, diff], "dse": [0.0, se]}, index=["rsa", "baseline"])


def test_loo_sentence_reads_the_size_of_the_difference_not_its_sign():
    """compare() reports the second model's elpd_diff as <= 0; a regression read -10 ± 4 as
    'within 2 standard errors' because the ratio was negative."""
    assert "within 2 standard errors" in loo_sentence(_cmp(-4.0, 4.5))
    assert "more than 2 standard errors" in loo_sentence(_cmp(-10.0, 4.0))
    assert loo_sentence(pd.DataFrame({"elpd": [1.0]})) == "see the table."


def test_loo_sentence_says_which_model_is_ahead_and_by_how_much():
    """One form everywhere (the README quotes it): the report said "elpd difference -4.0 ± 4.5"
    while the README said the RSA model was ahead by 4.0 ± 4.5."""
    assert loo_sentence(_cmp(-4.0, 4.5)).startswith("**rsa** is ahead of **baseline** by 4.0 ± 4.5 elpd (paired SE)")


def test_chain_starts_are_described_as_the_run_made_them():
    """The quick run's report described 16 optimised starts that quick mode did not use."""
    quick = _init_paragraph({"num_warmup": 50, "num_samples": 50}, {"human": SimpleNamespace(attrs={})})
    assert "`median`" in quick and "no multi-start optimisation" in quick and "16" not in quick
    digest = json.dumps(dict(n_starts=12, steps=500, n_in_best_basin=12, gap_to_next_basin=None))
    full = _init_paragraph({"init": "optimize"}, {"human": SimpleNamespace(attrs={"init_optima": digest})})
    assert "12 random starts" in full and "500 Adam steps" in full


def _tree(rhat=1.0, bulk=1000, tail=1000, div=0, steps=(15, 31, 63, 7)):
    """A fit's stand-in: diagnostics as pm.fit records them, and n_steps of its trajectories."""
    import numpy as np
    import xarray as xr

    ss = xr.Dataset({"n_steps": (("chain", "draw"), np.array(steps, dtype=np.int64)[None, :])})
    attrs = {"diagnostics": json.dumps(dict(max_rhat=rhat, min_ess_bulk=bulk, min_ess_tail=tail, divergences=div)),
             "sampler_settings": json.dumps(dict(max_tree_depth=8))}
    return xr.DataTree.from_dict({"sample_stats": ss}), attrs


def test_converged_needs_every_sampling_standard():
    """Issue 13's standards: r_hat <= 1.01, bulk and tail ESS >= 400, no divergences, under 1% of
    trajectories at the tree-depth cap (255 leapfrog steps at depth 8)."""
    def fit(**kw):
        t, attrs = _tree(**kw)
        t.attrs.update(attrs)
        return t

    assert converged(fit())
    assert not converged(fit(rhat=1.011))
    assert not converged(fit(bulk=399)) and not converged(fit(tail=399))
    assert not converged(fit(div=1))
    assert not converged(fit(steps=(255,) + (15,) * 99))  # exactly 1% at the cap
    assert converged(fit(steps=(255,) + (15,) * 100))  # just under 1%
    assert depth_cap_share(fit(steps=(255, 255, 15, 15))) == 0.5


def test_the_diagnostics_table_says_where_the_draws_were_resized():
    """A fit sampled again to the standards (``draws_resized``, pragmodels.inference.top_up) says so in its
    wall cell, and so does a refit that was worse and not kept; a fit that was not reads as before."""
    t, attrs = _tree()
    t.attrs.update(attrs, wall_time_s=30.0)
    plain = _diag_line("gpt MIN", t)
    assert "| 30 s | prior median |" in plain
    t.attrs["draws_resized"] = json.dumps({"from": 600, "to": 1200, "ess": 350.2, "max_rhat": 1.012, "rounds": 1})
    assert "| 30 s; sampled again, 600 -> 1200 draws per chain | prior median |" in _diag_line("gpt MIN", t)
    t.attrs["draws_resized"] = json.dumps({"from": 600, "to": 600, "ess": 900.0, "max_rhat": 1.002, "rounds": 1,
                                           "num_warmup": [300, 600]})
    assert "| 30 s; sampled again, 600 -> 600 draws per chain, warm-up 300 -> 600 | prior median |" in _diag_line("gpt MIN", t)
    t.attrs["draws_resized"] = json.dumps({"from": 600, "to": 1200, "ess": 350.2, "max_rhat": 1.012, "rounds": 1})
    t.attrs["refits_not_kept"] = json.dumps([{"target_accept": 0.975, "missed": ["r_hat", "depth cap"]}])
    assert ("| 30 s; sampled again, 600 -> 1200 draws per chain; a refit with target_accept 0.975 was worse (missed "
            "r_hat, depth cap), not kept | prior median |") in _diag_line("gpt MIN", t)


def test_loo_sentence_names_the_best_model_against_each_other():
    cmp = pd.DataFrame({"elpd_diff": [0.0, -10.0, -3.0], "dse": [0.0, 4.0, 4.5]}, index=["rsa", "baseline", "rsa_motives"])
    s = loo_sentence(cmp)
    assert s.startswith("**rsa** is ahead of **baseline** by 10.0 ± 4.0 elpd (paired SE), a difference of more than 2")
    assert "; and of **rsa_motives** by 3.0 ± 4.5 elpd (paired SE), a difference within 2 standard errors" in s


def test_sampler_overrides_apply_to_the_human_fits_and_to_single_llm_fits():
    """The config's full settings are the study's own, and its ``human`` / ``fits`` entries reach
    exactly the fits they name; a misspelled fit label is an error naming it."""
    import json
    from pathlib import Path

    import pytest

    from models.social_meaning import study
    from pragmodels.runs import read_manifest

    root = Path(__file__).parents[3]
    cfg = json.loads((root / "fits" / "social_meaning.json").read_text())
    full = cfg["sampler"]["full"]  # the config is the only source of the study's settings
    # the committed full run was sampled with exactly these settings (its numbers stay valid)
    assert read_manifest(root / "fits" / "social_meaning" / "full")["sampler"] == full
    human, llm = study.split_sampler(full, "claude MIN")
    assert human["num_samples"] == 350 and human["dense_mass"] is False and "fits" not in human
    assert human["num_warmup"] == 200 and human["mass_matrix"] == "laplace"
    assert llm["num_samples"] == 1200 and llm["dense_mass"] is True and "human" not in llm
    assert llm["num_warmup"] == 300 and llm["mass_matrix"] == "laplace"
    assert study.split_sampler(full, "gpt MIN")[1]["num_samples"] == 500
    # GPT ALT's cost has two modes within its basin: one re-estimate of the Laplace matrix does not suffice
    alt = study.split_sampler(full, "gpt ALT")[1]
    assert alt["mass_matrix"] == "adapt" and (alt["num_warmup"], alt["num_samples"]) == (600, 1200)
    assert human["chain_method"] == llm["chain_method"] == "sequential" and human["init"] == "basins"
    # the human RSA fits adapt a dense block over the RSA parameters; the baseline, which has none, does not
    rsa = study.split_sampler(full, "human")[0]
    assert rsa["dense_mass"] == [list(study.RSA_BLOCK)] and rsa["num_samples"] == 350
    motives = study.split_sampler(full, "human (motives link)")[0]
    assert motives["dense_mass"] == [list(study.RSA_BLOCK)] and motives["num_samples"] == 2000  # its tail ESS needs them
    # the settings a refit needed on the code of 2026-12-07 (a longer warm-up where trajectories met the depth cap,
    # a higher target where one transition diverged), so that the job runs in one round
    assert [study.split_sampler(full, f)[1]["num_warmup"] for f in ("claude COM", "gemini COM")] == [600, 600]
    assert study.split_sampler(full, "gemini KMA")[1]["target_accept"] == 0.975
    baseline = study.split_sampler(full, "human baseline")[0]
    assert baseline["dense_mass"] is False and baseline["num_samples"] == 350
    # the measurement model and its calibration: the settings the committed run used
    assert cfg["measurement_sampler"] == {"quick": dict(num_warmup=200, num_samples=200, num_chains=2),
                                          "full": dict(num_warmup=500, num_samples=1000, num_chains=4)}
    assert cfg["calibration_sampler"] == dict(num_warmup=300, num_samples=500, num_chains=2)
    assert cfg["calibration_replicates"] == {"quick": 0, "full": 100}
    # the coverage under misspecification is its own job (esr_checks), not the main one's
    assert cfg["misspecification_replicates"] == {"quick": 0, "full": 0}
    from pragmodels.runs.schema import validate_config

    validate_config(study.Config, cfg)
    # every site of the block exists in both human RSA models (a missing one is a KeyError in numpyro mid-run)
    from numpyro import handlers

    from models.social_meaning import rsa
    from tests.models.social_meaning.test_rsa import _data
    data = _data(72)
    for link in rsa.RATING_LINKS:
        tr = handlers.trace(handlers.seed(rsa.rsa_model, 0)).get_trace(**data, link=link, theta_param="non-centred")
        assert set(study.RSA_BLOCK) <= {k for k, v in tr.items() if v["type"] == "sample"}
    with pytest.raises(ValueError, match=r"unknown: \['claude MINI'\]"):
        study.split_sampler({"fits": {"claude MINI": {"num_samples": 10}}}, "claude MIN")


def test_a_fits_entry_chooses_its_fits_parametrisation_and_nothing_else():
    """``"fits": {"gpt KMA": {"effect_scale": "noise"}}`` reaches that fit's model data (and so its
    data hash), never its NUTS settings; the other fits keep the default and the default hash; an
    unknown value is a schema error naming it."""
    import pydantic
    import pytest

    from models.social_meaning import study
    from pragmodels import datasets

    frame = datasets.load_social_llm()
    frame = frame[(frame.model == "gpt") & (frame.prompt == "KMA")].dropna(subset=["rating"]).head(300)
    sampler = {"num_samples": 10, "fits": {"gpt KMA": {"effect_scale": "noise", "num_samples": 20}}}
    spec = study.fit_spec("x", "rsa", frame, False, 0, sampler, label="gpt KMA")
    assert spec.data["effect_scale"] == "noise" and "effect_scale" not in spec.sampler
    assert spec.sampler["num_samples"] == 20
    other = study.fit_spec("x", "rsa", frame, False, 0, sampler, label="gpt ALT")
    assert "effect_scale" not in other.data and other.sampler["num_samples"] == 10
    plain = study.fit_spec("x", "rsa", frame, False, 0, {"num_samples": 10}, label="gpt KMA")
    assert plain.data.keys() == other.data.keys()
    import pragmodels as pm
    info = pm.inspect_model(spec.model, spec.data)
    assert info.scaled["beta_noise_units"]["parameter"] == "beta"
    assert "beta_noise_units" not in pm.inspect_model(other.model, other.data).priors
    # a prior given for "beta" still reaches the fit sampled in noise units
    spec = study.fit_spec("x", "rsa", frame, False, 0, sampler, label="gpt KMA",
                       priors={"beta": pm.Prior("Normal", loc=0.0, scale=0.5)})
    assert spec.priors == {"beta": pm.Prior("Normal", loc=0.0, scale=0.5)}
    with pytest.raises(pydantic.ValidationError, match="effect_scale"):
        study.StudySampler.model_validate({"fits": {"gpt KMA": {"effect_scale": "noise units"}}})


def test_a_quick_report_says_what_it_checked_and_nothing_else(tmp_path):
    """The quick report opened with "smoke test, do not interpret" and then listed bold findings
    ("4 claims supported", "rsa reproduces 10 of 10") and the full run's timing remark."""
    for name in ("tables/claims.csv", "tables/loo_compare.csv", "figures/contrasts.png", "posteriors/human_rsa.nc"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x")
    manifest = {"mode": "quick", "sampler": {"num_samples": 50}, "wall_time_s": 312.4,
                "fits": {"human": {}, "gpt MIN": {}, "human baseline": {}, "esr measurement": {}}}
    text = quick_markdown(tmp_path, manifest)
    assert text.startswith("# Social meaning of numerical (im)precision") and "quick run" in text.splitlines()[0]
    assert "checks that the pipeline runs end to end, and nothing else" in text
    assert "3 fits by NUTS" in text and "human, gpt MIN, human baseline" in text and "312 s" in text
    assert "calibration check" not in text  # no esr_calibration.csv: that step did not run
    assert "`claims.csv`, `loo_compare.csv`" in text and "`human_rsa.nc`" in text
    for finding in ("**", "supported", "reproduces", "is ahead of", "core-minutes", "out of reach"):
        assert finding not in text


def test_the_tables_name_the_parameters_as_the_figures_do():
    """The contrast figure's panel said `cost_precise` where the forest said "cost of the precise
    form": figures and the report's tables take their names from one table, PARAMETER_LABELS."""
    from models.social_meaning.report import KEY_PARAMETERS, PARAMETER_LABELS, _params_markdown
    from models.social_meaning.study import CONTRAST_PANELS, contrast_section

    contrasts = pd.DataFrame([dict(fit="gpt MIN", parameter=v, p_greater=0.5) for v in KEY_PARAMETERS])
    head = next(line for line in contrast_section(contrasts, {}).splitlines() if line.startswith("| fit |"))
    assert head == "| fit | " + " | ".join(PARAMETER_LABELS[v] for v in KEY_PARAMETERS) + " |"
    row = {"fit": "human", "converged": True, "noise_at_floor": False}
    row.update({f"{v}{s}": 1.0 for v in KEY_PARAMETERS for s in ("", "_lo", "_hi")})
    assert _params_markdown(pd.DataFrame([row])).splitlines()[0] == head
    assert CONTRAST_PANELS["cost_vs_human"].startswith(PARAMETER_LABELS["cost_precise"])
    assert CONTRAST_PANELS["alpha_vs_human"].startswith(PARAMETER_LABELS["alpha"])


def _fit(seed, conditions=None):
    """A converged fit's stand-in with alpha and cost_precise draws (and, for a measurement model, cds)."""
    import numpy as np
    import xarray as xr

    rng = np.random.default_rng(seed)
    post = {"alpha": (("chain", "draw"), rng.normal(1, 0.1, (2, 50))),
            "cost_precise": (("chain", "draw"), rng.normal(0, 0.1, (2, 50)))}
    if conditions:
        post = {"cds": (("chain", "draw", "condition"), rng.normal(1, 0.1, (2, 50, len(conditions))))}
    t, attrs = _tree()
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords={"condition": conditions} if conditions
                                                          else None), "sample_stats": t["sample_stats"].to_dataset()})
    tree.attrs.update(attrs)
    return tree


def test_the_contrasts_figure_leaves_out_a_panel_no_row_has():
    """A config of MIN prompts only (fits/social_meaning_lms.json) has no CDS-against-MIN contrast: its panel
    was drawn empty, every row 'the reference'; with an ALT fit it is drawn."""
    import matplotlib.pyplot as plt

    from models.social_meaning.study import contrast_figure

    trees = {"human": _fit(0), "gpt MIN": _fit(1), "smollm2 MIN": _fit(2)}
    fig = contrast_figure(_fit(3, ["gpt MIN", "gpt ALT"]), trees)
    assert [a.get_xlabel().split(":")[0] for a in fig.axes] == ["alpha (speaker rationality)", "cost of the precise form"]
    plt.close(fig)
    fig = contrast_figure(_fit(3, ["gpt MIN", "gpt ALT"]), {**trees, "gpt ALT": _fit(4)})
    assert fig.axes[0].get_xlabel() == "CDS minus CDS under MIN (same LLM)" and len(fig.axes) == 3
    plt.close(fig)


def _reach_tables(helpful_rsa=0.6, helpful_base=0.8):
    """Replicated interactions and condition means of three models (rsa, baseline, rsa_motives): all
    interactions observed at 1.0, the RSA's helpful one at ``helpful_rsa``; the context effect of helpful
    -0.3 observed, -0.1 in the RSA's means, -0.3 in the baseline's."""
    from models.social_meaning import checks
    from pragmodels import datasets

    effects, cells = [], []
    for m, own in (("rsa", helpful_rsa), ("baseline", helpful_base), ("rsa_motives", 0.3)):
        for a in ("competent", "knowledgeable", "well-prepared", "helpful", "likeable"):
            med = own if a == "helpful" else 0.9
            effects.append(dict(model=m, kind="interaction", attribute=a, observed=1.0, median=med, lo=0, hi=2,
                                inside=m != "rsa_motives"))
        effects.append(dict(model=m, kind="main", attribute="pedantic", observed=0.9, median=0.9, lo=0, hi=2, inside=True))
        for a in datasets.ATTRIBUTES:
            for c in ("low", "high"):
                shift = {"rsa": -0.1, "baseline": -0.3}.get(m, 0.0) if a == "helpful" else 0.0
                for u in ("precise", "approx"):
                    cells.append({"model": m, "0": "bicycle", "1": c, "2": u, "3": a,  # (an older run's columns)
                                  "observed": 4 + (-0.3 if a == "helpful" and c == "high" else 0.0),
                                  "median": 4 + (shift if c == "high" else 0.0), "lo": 0, "hi": 9,
                                  "inside": not (m == "baseline" and a == "pedantic")})
    return checks.interaction_reach(pd.DataFrame(effects), pd.DataFrame(cells)), pd.DataFrame(effects), \
        pd.DataFrame(cells)


FEATURES = pd.DataFrame([dict(feature="p_exact", form=1.85, context=-0.15, interaction=0.31),
                         dict(feature="p_qud_fit", form=-0.03, context=0.17, interaction=3.92)])


def test_the_report_names_the_interaction_the_rsa_model_cannot_reach_and_why():
    """Issue 37 item 7: the interaction below 70% of the observed is named, beside the baseline's, with the
    structural reason (no context term: p_qud_fit's context effect rises with the interaction) when the
    RSA's shortfall exceeds the baseline's, and the shared part put down to the shared likelihood."""
    from models.social_meaning import report

    reach, _, _ = _reach_tables()
    row = reach[(reach.model == "rsa") & (reach.attribute == "helpful")].iloc[0]
    assert row.share == pytest.approx(0.6) and not row.reached
    assert row.context_observed == pytest.approx(-0.3) and row.context_model == pytest.approx(-0.1)
    text = report.interaction_words(reach, FEATURES)[0]
    assert "It does not reach 70% of helpful (0.60 against 1.00, 60%)." in text
    assert "the baseline, whose interaction is free per attribute, 80% to 90%" in text
    assert "it has no context term" in text and "p_qud_fit the interaction (3.92; context +0.17, form -0.03)" in text
    assert "(context effect -0.30; the RSA model's -0.10, the baseline's, free, -0.30)" in text
    assert "it reaches 60% of the helpful interaction where the baseline reaches 80%" in text
    reach, _, _ = _reach_tables(helpful_rsa=0.75, helpful_base=0.73)
    text = report.interaction_words(reach, FEATURES)[0]
    assert "Each reaches 70%; the least is helpful (0.75 against 1.00, 75%)." in text
    assert "costs the helpful interaction nothing beyond what the baseline also misses (RSA 75%, baseline 73%)" in text


def test_passing_is_reported_beside_the_baseline_and_convergence_within_the_sampled_basins():
    """'10 of 10' is reported with the baseline's 10 of 10 and the condition means of each; 'all fits meet the
    standards' reads 'within the basins their chains sampled', with the basins of init='basins' fits."""
    from models.social_meaning import report

    _, effects, cells = _reach_tables()
    words = report._passing_words(effects, cells)[0]
    assert words.startswith("- **Passing does not single out RSA:** the RSA model reproduces 6 of the 6 human "
                            "effects, and so does the non-pragmatic baseline (6 of 6)")
    assert "rsa 24 of 24, baseline 20 of 24, rsa_motives 24 of 24" in words

    tree = SimpleNamespace(attrs={})
    assert "start in the best basin its optimised starts found, so r_hat cannot see another mode" in \
        report._basins_words({"human": tree})
    two = SimpleNamespace(attrs={"basins": json.dumps({"basins": [{"weight": 0.97}, {"weight": 0.03}]})})
    one = SimpleNamespace(attrs={"basins": json.dumps({"basins": [{"weight": 1.0}]})})
    assert report._basins_words({"human": one, "gemini COM": two}) == (
        " (2 of 2 fits started chains in every basin within reach of their best; gemini COM: 2 basins, 2 with "
        "weight >= 0.01 (0.97, 0.03))")
