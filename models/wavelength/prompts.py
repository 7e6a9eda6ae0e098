"""Prompts for the Wavelength game (Qiu et al. 2025), in two named variants.

``"project"``: this project's own words (the templates here); ``"paper"``: the paper's own
instructions, read as data from the offline mirror (:func:`pragmodels.datasets.load_wavelength_prompts`;
never copied into the repository). :func:`listener_prompt` (L0: where on the scale does a clue
point?, scored with the 21 continuations :func:`answers`), :func:`sample_listener_prompt` (L0
asked to write its guess, directly or after "Let's think step by step.") and :func:`speaker_prompt`
(S0: a clue for a target value, directly or step by step). The prompts are frozen:
:func:`prompt_version` is the sha256 of a variant's texts (:data:`PROMPT_VERSION` the project's),
and every LM score the study keeps is keyed by it. Their design: ``docs/studies/wavelength.md``,
"Prompts".
"""

from __future__ import annotations

import functools
import hashlib

from pragmodels.validation import check_one_of

__all__ = ["STATES", "LISTENER_TEMPLATE", "SPEAKER_TEMPLATE", "PROMPT_VERSION", "VARIANTS", "COT_SUFFIX", "check_variant",
           "listener_prompt", "sample_listener_prompt", "speaker_prompt", "prompt_version", "paper_prompts",
           "answer", "answers", "clue_answer"]

#: the prompt variants: this project's wording, and the paper's (upstream's) own
VARIANTS: tuple[str, ...] = ("project", "paper")
#: what the paper's chain-of-thought listener and speaker append to their instruction
COT_SUFFIX = "\n\nLet's think step by step."

#: the 21 states (target values) 0, 5, ..., 100
STATES: tuple[int, ...] = tuple(range(0, 101, 5))

_VALUES = ", ".join(str(s) for s in STATES)

LISTENER_TEMPLATE = """You are playing a word game about scales.

A scale runs from 0 to 100 between two opposite ideas: the idea on the left sits at 0 and the idea on the right at 100. Another player was given a secret target number on the scale and wrote a short clue that points to it. Your job is to guess the target number from the clue.

Worked examples:

Scale: Cold (0) to Hot (100).
Clue: warm bath.
<answer>75</answer>

Scale: Useless (0) to Useful (100).
Clue: chocolate teapot.
<answer>5</answer>

Scale: Quiet (0) to Loud (100).
Clue: a busy office.
<answer>55</answer>

Answer with one of these numbers: {values}. Even when a clue seems odd, give your best guess. Write only the number, inside <answer></answer> tags.

Scale: {left} (0) to {right} (100).
Clue: {clue}."""

SPEAKER_TEMPLATE = """You are playing a word game about scales.

A scale runs from 0 to 100 between two opposite ideas: the idea on the left sits at 0 and the idea on the right at 100. You are given a secret target number on the scale. Write a short clue (one word or a few words) so that another player can guess the number. Do not use numbers, and do not repeat the words of the scale.

Worked examples:

Scale: Cold (0) to Hot (100).
Target: 75.
<answer>warm bath</answer>

Scale: Useless (0) to Useful (100).
Target: 5.
<answer>chocolate teapot</answer>

Scale: Quiet (0) to Loud (100).
Target: 55.
<answer>a busy office</answer>

Write only the clue, inside <answer></answer> tags.

Scale: {left} (0) to {right} (100).
Target: {target}."""

PROMPT_VERSION: str = hashlib.sha256((LISTENER_TEMPLATE + "\x00" + SPEAKER_TEMPLATE).encode()).hexdigest()[:16]


@functools.cache
def paper_prompts() -> dict[str, str]:
    """The paper's instructions and notes (:func:`pragmodels.datasets.load_wavelength_prompts`), read once.

    Returns
    -------
    dict of str
    """
    from pragmodels.datasets import load_wavelength_prompts

    return load_wavelength_prompts()


def check_variant(variant: str) -> str:
    """``variant`` if it is one of :data:`VARIANTS`, else a one-line ``ValueError``.

    Parameters
    ----------
    variant : str

    Returns
    -------
    str
    """
    check_one_of("variant", variant, VARIANTS)
    return variant


_variant = check_variant


def prompt_version(variant: str = "project") -> str:
    """The sha256 (16 hex digits) of a variant's templates; ``"project"`` gives :data:`PROMPT_VERSION`.

    Parameters
    ----------
    variant : {"project", "paper"}

    Returns
    -------
    str
    """
    if _variant(variant) == "project":
        return PROMPT_VERSION
    p = paper_prompts()
    text = "\x00".join(p[k] for k in ("listener_logprob_instruction", "listener_sample_instruction",
                                       "speaker_instruction")) + "\x00" + COT_SUFFIX
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def listener_prompt(left: str, right: str, clue: str, variant: str = "project") -> str:
    """The literal listener's prompt for one clue on one scale (answered by the 21 :func:`answers`).

    Parameters
    ----------
    left, right : str
        The scale's two ends (0 and 100).
    clue : str
        The clue.
    variant : {"project", "paper"}
        The wording (``"paper"``: upstream's log-prob listener instruction, increments of 5).

    Returns
    -------
    str
    """
    if _variant(variant) == "project":
        return LISTENER_TEMPLATE.format(values=_VALUES, left=left, right=right, clue=clue)
    return paper_prompts()["listener_logprob_instruction"].format(left=left, right=right, clue=clue, scale=5,
                                                                  possible_values=_VALUES)


def sample_listener_prompt(left: str, right: str, clue: str, variant: str = "project", cot: bool = False) -> str:
    """The listener's prompt when its guess is sampled (written, then parsed), directly or step by step.

    Parameters
    ----------
    left, right, clue : str
        The scale's ends and the clue.
    variant : {"project", "paper"}
        ``"paper"``: upstream's sampled-listener instruction (any integer 0-100); ``"project"``:
        :func:`listener_prompt`'s (one of the 21 values).
    cot : bool
        Append :data:`COT_SUFFIX` (the paper's chain-of-thought listener).

    Returns
    -------
    str
    """
    if _variant(variant) == "project":
        text = listener_prompt(left, right, clue)
    else:
        text = paper_prompts()["listener_sample_instruction"].format(left=left, right=right, clue=clue)
    return text + (COT_SUFFIX if cot else "")


def speaker_prompt(left: str, right: str, target: int, variant: str = "project", cot: bool = False) -> str:
    """The literal speaker's prompt for one target on one scale.

    Parameters
    ----------
    left, right : str
        The scale's two ends.
    target : int
        The target value (0-100).
    variant : {"project", "paper"}
        The wording (``"paper"``: upstream's speaker instruction).
    cot : bool
        Append :data:`COT_SUFFIX` (the paper's chain-of-thought speaker).

    Returns
    -------
    str
    """
    if _variant(variant) == "project":
        text = SPEAKER_TEMPLATE.format(left=left, right=right, target=int(target))
    else:
        text = paper_prompts()["speaker_instruction"].format(left=left, right=right, target=int(target))
    return text + (COT_SUFFIX if cot else "")


def answer(value: int) -> str:
    """The continuation that answers ``value``: ``"<answer>75</answer>"``.

    Parameters
    ----------
    value : int
        A state.

    Returns
    -------
    str
    """
    return f"<answer>{int(value)}</answer>"


def answers() -> list[str]:
    """The 21 continuations, in the order of :data:`STATES`.

    Returns
    -------
    list of str
    """
    return [answer(s) for s in STATES]


def clue_answer(clue: str) -> str:
    """The continuation that gives ``clue`` (for the speaker's score of a clue).

    Parameters
    ----------
    clue : str
        The clue.

    Returns
    -------
    str
    """
    return f"<answer>{clue}</answer>"
