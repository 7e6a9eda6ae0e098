"""The DRInQ study's report and figure parts, and its fit loop's draws sized to the sampling standards."""

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
    assert set(found["smollm2"]) == {"score", "sample", "interpretations", "literal"}
    assert set(found["gemma3"]) == {"score", "interpretations", "literal"}


def test_the_literal_l0_is_fitted_and_the_lm_pragmatic_scores_kept_as_a_named_baseline():
    """Issue 37 item 13: L0 came from "what they mean" scores, so RSA counted pragmatics twice."""
    import numpy as np

    from models.implicature import listeners
    from models.implicature.study import model_variants

    z = {k: np.full((3, 5), v, np.float32) for k, v in (("fit", 1.0), ("prior", 2.0), ("letter", 3.0))}
    z["consensus"] = np.zeros(3, np.int32)
    v = model_variants({**z, "literal": np.full((3, 5), 9.0, np.float32)})
    assert set(v) == {"rsa", "literal", "prior", "letter", "rsa_cost", "rsa_lm_pragmatic", "literal_lm_pragmatic"}
    assert v["rsa"][1]["fit"][0, 0] == 9.0 and v["rsa_cost"][1]["fit"][0, 0] == 9.0
    assert v["rsa_lm_pragmatic"][1]["fit"][0, 0] == 1.0 and v["literal_lm_pragmatic"][0] == "literal"
    assert v["rsa_cost"][2] == {"cost": listeners.COST_PRIOR} and v["rsa"][2] is None
    assert "literal" not in v["rsa"][1]  # the models take fit, prior, letter, consensus only
    assert set(model_variants(z)) == {"rsa", "literal", "prior", "letter", "rsa_cost"}


def test_the_over_specification_sentence_says_consistent_with_beside_a_lexical_overlap_control():
    """Issue 37 item 15: the report said the context prior's lean was "in line with" over-specification,
    with no control for the words an option shares with its context."""
    import numpy as np

    from models.implicature import prompts
    from models.implicature.study import _findings, interpretation_table, lexical_overlap

    items = pd.DataFrame({"question": ["q"] * 4, "context": ["the red car is here"] * 4,
                          **{f"option_{L}": ["a b"] * 4 for L in prompts.LETTERS},
                          "consensus": ["A"] * 4, "implied_letter": ["B"] * 4, "item_id": list("wxyz")})
    items["option_B"] = "the red car"
    jac = lexical_overlap(items)
    assert jac[0, 1] == 3 / 5 and jac[0, 0] == 0.0
    lp = np.tile([-5.0, -1.0, -5.0, -5.0, -5.0], (4, 1))
    interp = pd.DataFrame([{"kind": k, "item_id": i, **{f"logp_{L}": lp[0, j] for j, L in enumerate(prompts.LETTERS)}}
                           for i in "wxyz" for k in ("fit", "prior")])
    table = interpretation_table("m", interp, items, n_boot=200, seed=0)
    ov = table[table["scores"] == "lexical overlap"].set_index("label")["mean"]
    assert ov["generated label"] == 1.0 and ov["consensus"] == 0.0
    table["lo"] = table["lo"].where(table["label"] != "generated minus consensus (paired)", 0.5)
    acc = pd.DataFrame({"reading": ["scored letters"], "condition": ["vanilla"], "n_item": [4], "mean": [0.25],
                        "lo": [0.0], "hi": [0.75]})
    text = _findings(acc, table)
    assert "consistent with the paper's finding" in text and "in line with" not in text
    assert "Control, no LM: the option sharing the most words with the context" in text
    assert "so word overlap alone leans the same way" in text


def test_the_cost_is_reported_as_not_identified_where_its_profile_is_flat():
    """Issue 37 item 14: the cost was fixed at 0 with no evidence on whether the data could say more."""
    from models.implicature.study import cost_sentence

    base = {"mean": 1.0, "lo": -4.0, "hi": 6.0, "sd_ratio": 0.9, "p_positive": 0.6, "profile_max_cost": 3.0,
            "profile_max_log_lik": -300.0, "grid": [-6.0, 10.0]}
    flat = cost_sentence({**base, "drop_low": 0.4, "drop_high": 0.1})
    assert "bounded on neither side" in flat and "do not identify it" in flat
    assert "bounded only below" in cost_sentence({**base, "drop_low": 3.0, "drop_high": 0.1})
    far = cost_sentence({**base, "drop_low": 3.0, "drop_high": 2.5, "profile_max_cost": 13.0, "prior_sd": 3.0})
    assert "4.3 prior SDs from 0" in far and "does not follow it" in far
    assert "prior SDs" not in cost_sentence({**base, "drop_low": 3.0, "drop_high": 2.5, "prior_sd": 3.0})
    sharp = cost_sentence({**base, "drop_low": 3.0, "drop_high": 2.5})
    assert "bounded on both sides" in sharp and "do not identify" not in sharp


def test_the_report_puts_the_small_lms_beside_the_published_figures():
    """Issue 36 item 5: the report had no comparison with the paper's models and humans."""
    from models.implicature.study import published_section

    acc = pd.DataFrame({"lm": ["a", "a"], "reading": ["scored letters"] * 2, "condition": ["vanilla"] * 2,
                        "label": ["consensus", "generated label"], "n_item": [40, 40], "mean": [0.1, 0.5]})
    pp = pd.DataFrame({"lm": ["a"], "model": ["rsa"], "n_item": [40], "argmax_mean": [0.15]})
    gen = pd.DataFrame({"lm": ["b"], "condition": ["vanilla"], "n_item": [20], "mean": [0.3]})
    text = "\n".join(published_section(acc, pp, gen))
    for row in ("GPT-4o, the paper's best model (paper, hard subset)", "humans: annotator average",
                "a, scored letters, vanilla", "b, generated JSON (the paper's reading), vanilla",
                "a, the fitted RSA listener's choice"):
        assert row in text
    assert "0.76" in text and "0.89" in text
    assert "its accuracy here is 10%-30% across the readings above" in text  # the generated-label row left out
