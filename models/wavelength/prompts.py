"""Prompts for the Wavelength game (Qiu et al. 2025), in this project's own words.

:func:`listener_prompt` (L0: where on the scale does a clue point?, scored with the 21
continuations :func:`answers`) and :func:`speaker_prompt` (S0: a clue for a target value).
The prompts are frozen: :data:`PROMPT_VERSION` is the sha256 of their texts, and every LM score
the study keeps is keyed by it. Their design: ``docs/studies/wavelength.md``, "Prompts".
"""

from __future__ import annotations

import hashlib

__all__ = ["STATES", "LISTENER_TEMPLATE", "SPEAKER_TEMPLATE", "PROMPT_VERSION", "listener_prompt",
           "speaker_prompt", "answer", "answers", "clue_answer"]

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


def listener_prompt(left: str, right: str, clue: str) -> str:
    """The literal listener's prompt for one clue on one scale.

    Parameters
    ----------
    left, right : str
        The scale's two ends (0 and 100).
    clue : str
        The clue.

    Returns
    -------
    str
    """
    return LISTENER_TEMPLATE.format(values=_VALUES, left=left, right=right, clue=clue)


def speaker_prompt(left: str, right: str, target: int) -> str:
    """The literal speaker's prompt for one target on one scale.

    Parameters
    ----------
    left, right : str
        The scale's two ends.
    target : int
        The target value (0-100).

    Returns
    -------
    str
    """
    return SPEAKER_TEMPLATE.format(left=left, right=right, target=int(target))


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
