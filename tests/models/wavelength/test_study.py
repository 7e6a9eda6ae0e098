"""The Wavelength study's report parts."""

import json

import pandas as pd
import pytest

from models.wavelength.study import loo_figure, report_markdown


def test_a_quick_report_says_what_it_checked_and_nothing_else(tmp_path):
    """The quick report opened with "a smoke test ... no number here is an estimate" and then
    gave every table and comparison of a full run."""
    (tmp_path / "tables").mkdir()
    pd.DataFrame({"fit": ["smollm2/uniform", "smollm2/lm_rsa", "gemma3/lm_rsa"]}).to_csv(
        tmp_path / "tables" / "convergence.csv", index=False)
    (tmp_path / "summary.json").write_text(json.dumps(
        {"lms": {"smollm2": {"n_items": 6, "n_production": 2}, "gemma3": {"n_items": 6, "n_production": 0}}}))
    text = report_markdown(tmp_path, "quick")
    assert "checks that the pipeline runs end to end, and nothing else" in text
    assert "smollm2: its committed LM scores of 6 items; 2 fits by NUTS: uniform, lm_rsa; production judged on 2 items" in text
    assert "gemma3: its committed LM scores of 6 items; 1 fit by NUTS: lm_rsa\n" in text
    assert "**" not in text and "PSIS-LOO over guesses" not in text


def test_each_loo_comparison_has_its_own_figure():
    assert loo_figure("smollm2", "all 100") == "loo_smollm2_all.png"
    assert loo_figure("smollm2", "speaker-pass 20") == "loo_smollm2_speaker-pass.png"


def test_every_lm_entry_is_checked_against_its_score_file_before_any_fit(tmp_path):
    """Issue 35, item 7: an entry naming one model over another model's scores is one line, before fitting."""
    from models.wavelength.study import SCORES, _check_identities
    from pragmodels.lm.entry import LMEntry
    lms = {"smollm2": LMEntry(model="smollm2"), "gemma3": LMEntry(model="gemma3")}
    paths = {k: SCORES / f"{k}.nc" for k in lms}
    _check_identities(lms, paths)  # the committed files are the entries' models
    swapped = {"smollm2": paths["gemma3"], "gemma3": paths["smollm2"]}
    with pytest.raises(ValueError, match=r"`lms.smollm2`: .*gemma3.nc was scored by gguf:\w+, but the entry's model "
                                         r"'smollm2' is gguf:\w+"):
        _check_identities(lms, swapped)
    with pytest.raises(FileNotFoundError, match=r"`lms.smollm2`: no score file .*nope.nc; make it with"):
        _check_identities(lms, {"smollm2": tmp_path / "nope.nc", "gemma3": paths["gemma3"]})
