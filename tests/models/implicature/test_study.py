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


def test_each_lm_entry_is_checked_against_the_tables_it_reads(tmp_path):
    """Issue 35, item 7: implicature outputs recorded no LM, and the study never compared an entry with them."""
    import pytest

    from models.implicature import lm_outputs
    from models.implicature.study import check_identities
    from pragmodels.lm.entry import LMEntry

    table = tmp_path / "big_generated.csv"
    table.write_text("x\n")
    entry = LMEntry.model_validate({"backend": "openai", "model": "Qwen3", "base_url": "http://h/v1",
                                    "outputs": str(tmp_path)})
    with pytest.raises(ValueError, match=r"^`lms.big`: .*big_generated.csv was made by an unrecorded LM"):
        check_identities({"big": entry})
    lm_outputs.write_manifest(table, "openai:http://h:9/v1|Llama-70B")
    with pytest.raises(ValueError, match=r"^`lms.big`: .*big_generated.csv was made by openai:http://h:9/v1\|Llama-70B, "
                                         r"but the entry names server model 'Qwen3'"):
        check_identities({"big": entry})
    lm_outputs.write_manifest(table, "openai:http://elsewhere:8000/v1|Qwen3")  # the URL may move
    assert check_identities({"big": entry}) == {"big": {"generated": table}}
    (tmp_path / "big_score.csv").write_text("x\n")
    with pytest.raises(FileNotFoundError, match="has no interpretations table"):
        check_identities({"big": entry})
    with pytest.raises(FileNotFoundError, match="no output tables nobody_<pass>.csv"):
        check_identities({"nobody": entry})


def test_the_committed_outputs_record_the_lms_the_config_names():
    from models.implicature.config import Config
    from models.implicature.study import ROOT, check_identities

    cfg = Config.model_validate(json.loads((ROOT / "fits" / "implicature.json").read_text()))
    found = check_identities(cfg.lms)
    assert set(found["smollm2"]) == {"score", "sample", "interpretations"}
