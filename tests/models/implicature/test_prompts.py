"""DRInQ prompts: the conditions hold what they should, examples are never evaluation items, answers parse."""

from __future__ import annotations

import json

import pytest

from models.implicature import prompts

ITEM = {"question": "Can you pass the salt?", "context": "At dinner, the speaker's plate is bland.",
        **{f"option_{L}": f"option text {L}" for L in prompts.LETTERS}}


def test_no_in_context_example_is_an_evaluation_item(mirror):
    from pragmodels.datasets import load_drinq

    d = load_drinq()
    qs = set(d["question"].str.strip().str.casefold())
    cs = set(d["context"].str.strip().str.casefold())
    opts = set(d[[f"option_{L}" for L in prompts.LETTERS]].stack().str.strip().str.casefold())
    for e in prompts.EXAMPLES:
        assert e.question.casefold() not in qs
        assert e.context.casefold() not in cs
        assert not {o.casefold() for o in e.options} & opts
        assert e.answer in prompts.LETTERS and len(e.options) == 5


def test_draws_are_seeded_distinct_and_balanced_in_answers():
    draws = [prompts.draw_examples(d, 20261201) for d in range(3)]
    assert draws == [prompts.draw_examples(d, 20261201) for d in range(3)]
    assert all(len(set(d)) == 3 for d in draws) and len(set(draws)) == 3
    # the pool's answers cover every letter, so no draw is forced onto one letter
    assert {e.answer for e in prompts.EXAMPLES} == set(prompts.LETTERS)
    with pytest.raises(ValueError, match="draw = -1"):
        prompts.draw_examples(-1, 0)


@pytest.mark.parametrize("condition", prompts.CONDITIONS)
def test_each_condition_holds_its_scaffolds_and_format(condition):
    ex = prompts.draw_examples(0, 1)
    for reading in prompts.READINGS:
        p = prompts.prompt(ITEM, condition, reading, ex)
        assert p.startswith(prompts.CORE_INSTRUCTION)
        assert (prompts.CONSERVATIVE in p) == (condition in ("conservative", "all"))
        assert (prompts.CHARITABLE in p) == (condition in ("charitable", "all"))
        assert (prompts.REASONING in p) == (condition in ("reasoning", "all"))
        assert p.count("Example ") == 3 and p.rstrip().endswith("E. option text E")
        assert "Question: Can you pass the salt?" in p
    sample = prompts.prompt(ITEM, condition, "sample", ex)
    first = json.loads(sample.split("Response: ")[1].split("\n")[0])
    keys = list(first)
    assert keys == (["explanation", "selected_option"] if condition == "explanation" else
                    ["selected_option", "explanation"])
    score = prompts.prompt(ITEM, condition, "score", ex)
    answer = score.split("Response: ")[1].split("\n\n")[0]
    if condition == "explanation":
        assert answer.startswith("Explanation: ") and "\nAnswer: " in answer
    else:
        assert answer in prompts.LETTERS


def test_prompt_rejects_bad_arguments():
    with pytest.raises(ValueError, match="condition = 'cot'"):
        prompts.prompt(ITEM, "cot", "score", (0, 1, 2))
    with pytest.raises(ValueError, match="reading = 'both'"):
        prompts.prompt(ITEM, "vanilla", "both", (0, 1, 2))
    with pytest.raises(ValueError, match="index 9"):
        prompts.prompt(ITEM, "vanilla", "score", (0, 1, 9))
    with pytest.raises(ValueError, match="'option_C'"):
        prompts.prompt({k: v for k, v in ITEM.items() if k != "option_C"}, "vanilla", "score", (0, 1, 2))


OPTIONS = ["Please lend me a pencil.", "Why?", "No.", "Yes.", "Maybe."]


@pytest.mark.parametrize("text, letter, ok", [
    ('{"selected_option": "B. Why?", "explanation": "x"}', "B", True),
    ('Sure! ```\n{"selected_option": "(d) Yes.", "explanation": "x"}\n```', "D", True),
    ('{"explanation": "because", "selected_option": "E"}', "E", True),
    ('{"selected_option": "Please lend me a pencil.", "explanation": "x"}', "A", True),   # text, no letter
    ('{"selected_option": "C. No.", "explanation": "unterminated', "C", False),         # broken JSON, field read
    ('{"selected_option": "the third one"}', None, True),                               # JSON, no letter
    ('{"selected_option": "a lot of them"}', None, True),                               # "a" is a word here
    ('{"selected_option": "E.g. B"}', None, True),                                      # nor is "E.g." a letter
    ('{"selected_option": "b) Why?"}', "B", True),
    ('{"selected_option": "B Why?"}', "B", True),
    ("I think the answer is B", None, False),                                           # no JSON at all
    ("", None, False),
])
def test_parse_answer(text, letter, ok):
    assert prompts.parse_answer(text, OPTIONS) == (letter, ok)


def test_prompt_version_is_a_hash_of_the_texts():
    assert len(prompts.PROMPT_VERSION) == 16 and int(prompts.PROMPT_VERSION, 16) >= 0
    assert prompts.prompt_hash("a") != prompts.prompt_hash("b")
