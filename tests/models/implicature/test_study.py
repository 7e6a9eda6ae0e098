"""The DRInQ study's report and figure parts."""

import json

import pandas as pd

from models.implicature.study import no_interval_note, report_markdown


def test_the_figure_says_why_a_fitted_model_has_no_interval():
    """Three fitted models had no interval in the accuracy figure, and nothing said why."""
    pp = pd.DataFrame({"model": ["rsa", "literal", "prior", "letter"], "argmax_lo": [0.21, 0.24, 0.22, 0.2],
                       "argmax_hi": [0.27, 0.24, 0.22, 0.2]})
    note = no_interval_note(pp)
    assert note.startswith("literal, prior, letter: no interval") and "whatever its parameters" in note
    assert "rsa" not in note
    assert no_interval_note(pp.assign(argmax_hi=[0.27, 0.3, 0.3, 0.3])) == ""
    assert "rsa: no interval" in no_interval_note(pp.assign(argmax_hi=[0.21, 0.3, 0.3, 0.3]))


def test_a_quick_report_says_what_it_checked_and_nothing_else(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "accuracy_smollm2.png").write_text("x")
    pd.DataFrame({"fit": [f"smollm2/{m}" for m in ("rsa", "literal", "prior", "letter")]}).to_csv(
        tmp_path / "tables" / "convergence.csv", index=False)
    (tmp_path / "summary.json").write_text(json.dumps({"n_items": 231, "lms": {"smollm2": {"n_modelled": 231}}}))
    text = report_markdown(tmp_path, "quick")
    assert "checks that the pipeline runs end to end, and nothing else" in text
    assert "4 listener models fitted by NUTS to 231 items: rsa, literal, prior, letter" in text
    assert "`accuracy_smollm2.png`" in text and "**" not in text and "## The data" not in text
