"""Prompts for DRInQ (Arai & Ren 2026): the paper's prompting conditions, and what is this project's own.

:func:`prompt` builds an item's prompt for a condition of :data:`CONDITIONS` and a reading
(``"score"``: letter-only; ``"sample"``: the paper's JSON, the answer first in every condition but
explanation; ``"generate"``: the paper's JSON with the reasoning and all conditions writing their
reasoning before the answer, :data:`REASON_FIRST`), with in-context examples drawn by
:func:`draw_examples`; :func:`parse_answer` reads a sampled answer. Texts quoted from the paper's
Appendix 8.4 and the project's own (marked ``OWN``) are listed, with the conditions' table, in
``docs/studies/implicature.md``, "Prompts". :data:`PROMPT_VERSION` (and :func:`prompt_hash` per
prompt) keys every LM output, so a changed word never mixes with old outputs; the generated
reading's texts are keyed apart, by :data:`GENERATE_VERSION` (so adding them left
:data:`PROMPT_VERSION` and the outputs made under it as they were).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["CONDITIONS", "READINGS", "LETTERS", "EXAMPLES", "Example", "PROMPT_VERSION", "draw_examples", "prompt",
           "prompt_hash", "parse_answer", "EXPLANATION_STOP", "ANSWER_CUE", "GENERATE_VERSION", "REASON_FIRST",
           "EXAMPLE_REASONING", "LITERAL_TEMPLATE", "LITERAL_VERSION"]

LETTERS: tuple[str, ...] = ("A", "B", "C", "D", "E")
CONDITIONS: tuple[str, ...] = ("vanilla", "explanation", "conservative", "charitable", "reasoning", "all")
READINGS: tuple[str, ...] = ("score", "sample", "generate")
#: the conditions whose generated answer (reading ``"generate"``) writes its reasoning before the answer
REASON_FIRST: tuple[str, ...] = ("reasoning", "all")
#: in-context examples per prompt, and the pool they are drawn from
N_SHOTS = 3

# --- from the paper (Appendix 8.4, "Core Prompt") ---
CORE_INSTRUCTION = ("Based on the conversational context, choose the option from the given list that most accurately "
                    "reflects the speaker's intended meaning when they ask the question.")
JSON_FORMAT = """## Output Format
Return your response as a JSON object in the following format:
```
{"selected_option": "<letter and full text of the selected option>", "explanation": "<concise explanation for why this option was selected>"}
```
Replace `<letter and full text of the selected option>` with your choice, using the format provided in the list. The explanation should briefly justify your selection. Ensure the output strictly matches the specified JSON structure. If the output structure deviates, self-correct before returning your final answer."""

# --- from the paper (Appendix 8.4, "Pragmatic Reasoning prompt") ---
REASONING = """## Reasoning
1. Identify the intent of the question as stated, without considering context.
2. Now incorporate context, reasoning whether and how the given context alters the perceived intent.
3. Select the most appropriate implied comment from the provided options, ensuring your choice reflects both the original question and context."""

# --- OWN: the paper describes these two but does not publish them ---
CONSERVATIVE = """## Be conservative
Choose the interpretation that the context actually supports, not one that is merely compatible with it. Do not read in more than an ordinary listener would: if a stronger reading needs extra assumptions about the speaker's feelings, history or plans that the context does not state, prefer the weaker reading that needs none."""

CHARITABLE = """## Be charitable
Assume the speaker is cooperative and well-meaning unless the context clearly says otherwise. Do not attribute hostility, sarcasm, blame or contempt on the strength of a single detail; prefer a friendly or neutral reading when the context allows one."""

# --- OWN: the explanation condition's order, and the letter-only format for scoring ---
JSON_FORMAT_EXPLAIN_FIRST = """## Output Format
First justify your choice, then give it. Return your response as a JSON object in the following format:
```
{"explanation": "<concise explanation of what the speaker means in this context>", "selected_option": "<letter and full text of the selected option>"}
```
Write the explanation before the selected option. Replace `<letter and full text of the selected option>` with your choice, using the format provided in the list. Ensure the output strictly matches the specified JSON structure."""

LETTER_FORMAT = """## Output Format
Answer with the letter of the selected option only (A, B, C, D or E)."""

LETTER_FORMAT_EXPLAIN_FIRST = """## Output Format
First write one or two sentences that justify your choice, starting with "Explanation:". Then write "Answer:" followed by the letter of the selected option only (A, B, C, D or E)."""

# OWN: the listener model's two scoring prompts (models/implicature/listeners.py: fit and prior)
FIT_TEMPLATE = 'Context: {context}\nSomeone asks: "{question}"\nIn one sentence, what they mean is:'
PRIOR_TEMPLATE = "Context: {context}\nIn one sentence, what the speaker in this situation wants to get across is:"

# OWN: the literal listener's scoring prompt (issue 37 item 13): the question read as its words say, in
# context, with nothing implied, where FIT_TEMPLATE asks for what the speaker means (a pragmatic reading, kept
# as the "LM-pragmatic" baseline). Keyed apart, by LITERAL_VERSION, so the outputs made under
# PROMPT_VERSION stay as they are.
LITERAL_TEMPLATE = ('Context: {context}\nSomeone asks: "{question}"\nTaken literally, word for word and with '
                    'nothing implied, this question says:')
LITERAL_VERSION: str = hashlib.sha256(("literal/1\x00" + LITERAL_TEMPLATE).encode()).hexdigest()[:16]

#: where a scored explanation ends and the letter is scored
ANSWER_CUE = "\nAnswer: "
EXPLANATION_STOP = ("Answer:", "\n\n")


@dataclass(frozen=True)
class Example:
    """One in-context example (OWN): a question, its context, five options, the answer, a justification."""

    question: str
    context: str
    options: tuple[str, str, str, str, str]
    answer: str
    explanation: str


# OWN: six in-context examples written for this project (none is a DRInQ item; tested). Their answers are
# A, C, B, D, E, B, so that no draw of three teaches one letter
EXAMPLES: tuple[Example, ...] = (
    Example("Do you have a pencil?",
            "A student has just sat down for an exam and is patting their empty pockets.",
            ("Please lend me a pencil.", "Why did you forget your pencil again?",
             "Would you like to borrow my pencil?", "Pencils are better than pens for exams.",
             "I am checking whether you came prepared."),
            "A", "The speaker has no pencil and needs one now, so the question is a request to borrow one."),
    Example("Is the music loud enough for you?",
            "It is past midnight; a neighbour in a dressing gown stands at the door of the flat where a party is going on.",
            ("I would like to join your party.", "I am asking whether you can hear the music well.",
             "Please turn the music down.", "Your taste in music is excellent.", "I can't sleep because I'm worried."),
            "C", "A neighbour woken at midnight is not asking about the volume; the question complains and asks for quiet."),
    Example("Are you still using the car tomorrow?",
            "Two housemates share a car; one of them has a job interview across town in the morning.",
            ("You use the car far too much.", "I would like to take the car tomorrow.",
             "I am offering to drive you tomorrow.", "The car needs to be serviced.", "I want to know your plans for fun."),
            "B", "The speaker needs the car for the interview, so the question asks, politely, to have it."),
    Example("Did you water the plants?",
            "A man comes home from a week away and finds his houseplants drooping; his flatmate had promised to look after them.",
            ("Thank you for looking after my plants.", "I am reminding you to water them later today.",
             "Would you like me to water them?", "You did not do what you promised.", "Plants need water every day."),
            "D", "The drooping plants show they were not watered, so the question reproaches the flatmate for the broken promise."),
    Example("Are you cold?",
            "Two friends are waiting at a bus stop on a windy evening; one of them is shivering in a thin shirt while the other carries a spare jacket.",
            ("You should have checked the weather.", "I am cold and want to go home.",
             "Please close the window.", "The bus is late again.", "Would you like my spare jacket?"),
            "E", "The speaker has a spare jacket and sees the friend shiver; the question offers it."),
    Example("Have you tried the soup yet?",
            "At a family dinner, a grandmother who spent the afternoon cooking watches her grandson eat only bread.",
            ("I am curious whether the soup is too salty.", "I would like you to eat the soup I made.",
             "Please pass me the soup.", "You are being rude to everyone at the table.",
             "I am offering to make you something else."),
            "B", "She cooked the soup and sees him skip it; she is encouraging him to eat it, without scolding."),
)


def _texts() -> str:
    parts = [CORE_INSTRUCTION, JSON_FORMAT, JSON_FORMAT_EXPLAIN_FIRST, LETTER_FORMAT, LETTER_FORMAT_EXPLAIN_FIRST,
             REASONING, CONSERVATIVE, CHARITABLE, ANSWER_CUE, FIT_TEMPLATE, PRIOR_TEMPLATE]
    parts += [json.dumps(e.__dict__, sort_keys=True) for e in EXAMPLES]
    return "\x00".join(parts)


PROMPT_VERSION: str = hashlib.sha256(_texts().encode()).hexdigest()[:16]

# --- OWN: the generated reading's format for the reasoning and all conditions (reasoning, then the answer) ---
JSON_FORMAT_REASON_FIRST = """## Output Format
Reason first, then answer. Return your response as a JSON object in the following format:
```
{"reasoning": "<step 1: the intent of the question as stated; step 2: how the context alters it>", "selected_option": "<letter and full text of the selected option>"}
```
Write the reasoning before the selected option. Replace `<letter and full text of the selected option>` with your choice, using the format provided in the list. Ensure the output strictly matches the specified JSON structure."""

#: OWN: each in-context example's reasoning (steps 1 and 2 of the reasoning scaffold), for the
#: generated reading's reasoning and all conditions, in the order of :data:`EXAMPLES`
EXAMPLE_REASONING: tuple[str, ...] = (
    "1. As stated, the question asks whether the listener owns a pencil. 2. The speaker is about to sit an exam "
    "with empty pockets and needs one now, so the question asks to borrow a pencil.",
    "1. As stated, the question asks whether the music is loud enough. 2. A neighbour in a dressing gown at "
    "midnight has been kept awake, so the question complains and asks for the music to be turned down.",
    "1. As stated, the question asks about the housemate's plans for the car. 2. The speaker has an interview "
    "across town in the morning, so the question asks, politely, to take the car.",
    "1. As stated, the question asks whether the plants were watered. 2. The plants droop after a week and the "
    "flatmate had promised to water them, so the question reproaches the broken promise.",
    "1. As stated, the question asks whether the friend feels cold. 2. The friend shivers in a thin shirt and "
    "the speaker carries a spare jacket, so the question offers the jacket.",
    "1. As stated, the question asks whether the grandson has tasted the soup. 2. The grandmother cooked it and "
    "sees him eat only bread, so she is encouraging him to eat it, without scolding.",
)

#: the generated reading's version: the scored and sampled readings' texts and its own
GENERATE_VERSION: str = hashlib.sha256("\x00".join([_texts(), JSON_FORMAT_REASON_FIRST, *EXAMPLE_REASONING])
                                       .encode()).hexdigest()[:16]


def draw_examples(draw: int, seed: int) -> tuple[int, ...]:
    """The in-context examples of one draw: 3 of the 6 (indices into :data:`EXAMPLES`, in prompt order).

    Parameters
    ----------
    draw : int
        The draw (0, 1, 2).
    seed : int
        The study's seed.

    Returns
    -------
    tuple of int
    """
    if isinstance(draw, bool) or not isinstance(draw, (int, np.integer)) or draw < 0:
        raise ValueError(f"draw = {draw!r}; expected an int >= 0.")
    rng = np.random.default_rng([int(seed), int(draw)])
    return tuple(int(i) for i in rng.choice(len(EXAMPLES), size=N_SHOTS, replace=False))


def _options_block(options: Sequence[str]) -> str:
    return "\n".join(f"{L}. {o}" for L, o in zip(LETTERS, options, strict=True))


def _answer_text(e: Example, condition: str, reading: str) -> str:
    text = e.options[LETTERS.index(e.answer)]
    if reading == "generate" and condition in REASON_FIRST:
        return json.dumps({"reasoning": EXAMPLE_REASONING[EXAMPLES.index(e)], "selected_option": f"{e.answer}. {text}"})
    if reading == "score":
        return (f"Explanation: {e.explanation}\nAnswer: {e.answer}" if condition == "explanation" else e.answer)
    if condition == "explanation":
        return json.dumps({"explanation": e.explanation, "selected_option": f"{e.answer}. {text}"})
    return json.dumps({"selected_option": f"{e.answer}. {text}", "explanation": e.explanation})


def _case(question: str, context: str, options: Sequence[str]) -> str:
    return f"Question: {question}\nContext: {context}\nOptions:\n{_options_block(options)}"


def prompt(item: Mapping[str, str], condition: str, reading: str, examples: Sequence[int]) -> str:
    """The user prompt for one item under one condition and reading.

    Parameters
    ----------
    item : mapping
        ``question``, ``context`` and ``option_A`` .. ``option_E`` (a row of
        :func:`pragmodels.datasets.load_drinq`).
    condition : str
        One of :data:`CONDITIONS`.
    reading : {"score", "sample", "generate"}
        The letter-only format (scored letters), the paper's JSON format (sampled answers), or the
        paper's JSON with the reasoning before the answer in :data:`REASON_FIRST` (generated answers).
    examples : sequence of int
        The in-context examples (:func:`draw_examples`).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        An unknown condition or reading, an example index out of range, or an item without its fields.
    """
    if condition not in CONDITIONS:
        raise ValueError(f"condition = {condition!r}; expected one of {list(CONDITIONS)}.")
    if reading not in READINGS:
        raise ValueError(f"reading = {reading!r}; expected one of {list(READINGS)}.")
    bad = [i for i in examples if not 0 <= int(i) < len(EXAMPLES)]
    if bad:
        raise ValueError(f"examples = {list(examples)}: index {bad[0]} is not in 0..{len(EXAMPLES) - 1}.")
    missing = [k for k in ("question", "context", *(f"option_{L}" for L in LETTERS)) if k not in item]
    if missing:
        raise ValueError(f"the item has no field {missing[0]!r}; expected question, context and option_A .. option_E.")
    explain = condition == "explanation"
    if reading == "score":
        fmt = LETTER_FORMAT_EXPLAIN_FIRST if explain else LETTER_FORMAT
    elif reading == "generate" and condition in REASON_FIRST:
        fmt = JSON_FORMAT_REASON_FIRST
    else:
        fmt = JSON_FORMAT_EXPLAIN_FIRST if explain else JSON_FORMAT
    scaffolds = {"conservative": [CONSERVATIVE], "charitable": [CHARITABLE], "reasoning": [REASONING],
                 "all": [CONSERVATIVE, CHARITABLE, REASONING]}.get(condition, [])
    shots = []
    for k, i in enumerate(examples, start=1):
        e = EXAMPLES[int(i)]
        shots.append(f"Example {k}:\n{_case(e.question, e.context, e.options)}\nResponse: "
                     f"{_answer_text(e, condition, reading)}")
    options = [str(item[f"option_{L}"]) for L in LETTERS]
    blocks = [CORE_INSTRUCTION, *scaffolds, fmt, "## Examples\n" + "\n\n".join(shots),
              "## Your task\n" + _case(str(item["question"]), str(item["context"]), options)]
    return "\n\n".join(blocks)


def prompt_hash(text: str) -> str:
    """The first 16 hex digits of a prompt's sha256 (the key LM outputs are stored under).

    Parameters
    ----------
    text : str
        A prompt.

    Returns
    -------
    str
    """
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# a leading letter: "B", "B. text", "(d) text", "b) text", "C: text"; a capital may stand before a
# space ("B text"), a small letter only before a delimiter ("a lot" is not A), and a delimiter must
# not start an abbreviation ("E.g. B" is not E)
_LEADING = re.compile(r"^\s*[\(\[]?\s*(?:([A-E])(?=\s|$|[\.\):\]](?![a-z]))|([a-e])(?=$|[\.\):\]](?![a-z])))")
_FIELD = re.compile(r'"selected_option"\s*:\s*"((?:[^"\\]|\\.)*)"', re.DOTALL)


def _letter_of(value: str, options: Sequence[str] | None) -> str | None:
    m = _LEADING.match(value)
    if m:
        return (m.group(1) or m.group(2)).upper()
    if options is not None:
        v = value.strip().rstrip(".").casefold()
        hits = [L for L, o in zip(LETTERS, options, strict=True) if o.strip().rstrip(".").casefold() == v]
        if len(hits) == 1:
            return hits[0]
    return None


def parse_answer(text: str, options: Sequence[str] | None = None) -> tuple[str | None, bool]:
    """The letter an LM's JSON answer selects, and whether the JSON itself was valid.

    The first ``{...}`` object in the text is parsed as JSON; its ``selected_option`` must start
    with a letter A-E (``"B. I am offering ..."``, ``"B"``, ``"(B)"``) or equal one option's text.
    Where the JSON does not parse (a missing brace, an unescaped quote), a ``"selected_option":
    "..."`` field is still read, and ``json_ok`` is False. Anything else is malformed: ``None``.

    Parameters
    ----------
    text : str
        The sampled answer.
    options : sequence of str, optional
        The five option texts (to read an answer given as text without its letter).

    Returns
    -------
    letter : str or None
    json_ok : bool
    """
    start = text.find("{")
    if start >= 0:
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[start:])
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("selected_option"), str):
            return _letter_of(obj["selected_option"], options), True
    m = _FIELD.search(text)
    if m:
        return _letter_of(m.group(1), options), False
    return None, False
