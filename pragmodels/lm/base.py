"""The language-model interface: a :class:`LanguageModel` protocol, the prompt format, errors.

Layering: the standard library, NumPy and :mod:`pragmodels.errors`; no backend is imported here.

A language model in pragmodels does two things::

    score(prompt, continuations)  -> log P(continuation | prompt), one float per continuation
    sample(prompt, n, ...)        -> n texts

``prompt`` is what the user says and a continuation what the model answers. A backend wraps
them in the model's prompt format (:class:`PromptFormat`): for an instruction-tuned model, its
chat template, with the answer scored *through the end-of-turn token* (so that ``"7"`` and
``"75"`` are not prefixes of one another once closed); for a base model, plain text. Every
backend applies the same format to the same strings, so the in-process llama.cpp backend, an
OpenAI-compatible server and transformers give the same numbers for the same model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pragmodels.errors import PragmodelsError

__all__ = [
    "LanguageModel",
    "PromptFormat",
    "LMError",
    "ModelFileError",
    "ContextLengthError",
    "ServerError",
    "LogprobsUnavailableError",
    "ScoreRequest",
    "SampleRequest",
    "score_many",
    "sample_many",
    "check_continuations",
    "check_sampling",
]


class LMError(PragmodelsError, RuntimeError):
    """A language model could not give a correct answer (base of the errors below)."""


class ModelFileError(LMError, FileNotFoundError):
    """A model file is missing or is not a GGUF file."""


class ContextLengthError(LMError, ValueError):
    """A prompt (with a continuation) does not fit the model's context window."""


class ServerError(LMError, ConnectionError):
    """A server is down, answers garbage, or cannot give correct log-probabilities."""


class LogprobsUnavailableError(ServerError):
    """A server gives no log-probabilities of a prompt (a hosted chat API, a server started without
    them): scoring is impossible there, sampling is not (its message names the setting)."""


_SENTINEL = "\x00PRAGMODELS-ANSWER\x00"


@dataclass(frozen=True)
class PromptFormat:
    """How a (user prompt, answer) pair becomes one text.

    ``text = before + prompt + between + answer + end``: ``before`` and ``between`` hold the chat
    template's markup around the user turn and up to the start of the assistant's answer, ``end``
    closes the answer (the end-of-turn token, e.g. ``"<|im_end|>"``; empty for plain text).

    Parameters
    ----------
    name : str
        A label recorded in cache keys and run manifests (``"chat"`` or ``"plain"``).
    before, between, end : str
        The markup, as above.
    source : str
        Where the markup came from (``"gguf:PATH"``, ``"hf:NAME"``, ``"server:URL"``, ``"plain"``),
        for run manifests; not part of :meth:`key` or of equality (the same markup from two sources
        gives the same texts, so the same scores).

    Examples
    --------
    >>> fmt = PromptFormat.plain()
    >>> fmt.prefix("Q?") + "A" + fmt.end
    'Q?\\nA'
    """

    name: str
    before: str
    between: str
    end: str
    source: str = field(default="", compare=False)

    @classmethod
    def plain(cls) -> PromptFormat:
        """Plain text (a base model): the prompt, a newline, the answer, nothing after it.

        Returns
        -------
        PromptFormat
        """
        return cls("plain", "", "\n", "", source="plain")

    @classmethod
    def from_chat_template(cls, template: str, *, bos_token: str = "", eos_token: str = "",
                           strip_bos: bool = True, source: str = "") -> PromptFormat:
        """The format a Jinja chat template (a GGUF's ``tokenizer.chat_template``) renders.

        The template is rendered once for ``[user: prompt, assistant: answer]`` with placeholder
        strings and split at them. The answer is closed by the template's text after it up to and
        including its first end-of-turn marker (trailing newlines are not scored). With
        ``strip_bos``, a leading BOS token the template writes is dropped (for a model whose
        tokenizer adds it; SmolLM2's BOS ``<|im_start|>`` is not added, and must stay).

        Parameters
        ----------
        template : str
            The Jinja template.
        bos_token, eos_token : str
            The tokens the template may refer to.
        strip_bos : bool
            Drop a leading ``bos_token`` from the rendered text.
        source : str
            Where the template came from (for manifests).

        Returns
        -------
        PromptFormat

        Raises
        ------
        LMError
            The template does not render, or does not place the user text before the answer.
        """
        import jinja2

        env = jinja2.Environment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True)
        user = "\x00PRAGMODELS-PROMPT\x00"
        try:
            text = env.from_string(template).render(
                messages=[{"role": "user", "content": user}, {"role": "assistant", "content": _SENTINEL}],
                bos_token=bos_token, eos_token=eos_token, add_generation_prompt=False)
        except jinja2.TemplateError as e:
            raise LMError(f"the chat template does not render ({e}).") from e
        return cls.from_rendered(text, user, _SENTINEL, strip_prefix=bos_token if strip_bos else "", source=source)

    @classmethod
    def from_rendered(cls, text: str, user: str, answer: str, *, strip_prefix: str = "",
                      source: str = "") -> PromptFormat:
        """The chat format of a conversation ``[user: user, assistant: answer]`` already rendered.

        ``text`` is split at the two placeholder strings; the answer is closed by the text after it
        (trailing newlines are not scored). A leading ``strip_prefix`` (the BOS token's text, where
        the tokenizer adds that token itself) is dropped.

        Parameters
        ----------
        text : str
            The rendered conversation.
        user, answer : str
            The placeholders it was rendered with.
        strip_prefix : str
            Text to drop from the start, if there.
        source : str
            Where the template came from (for manifests).

        Returns
        -------
        PromptFormat

        Raises
        ------
        LMError
            The text does not hold the user placeholder once, followed by the answer once.
        """
        if text.count(user) != 1 or text.count(answer) != 1 or text.index(user) > text.index(answer):
            raise LMError(f"the chat template{f' of {source}' if source else ''} does not render a user turn "
                          "followed by an assistant answer.")
        before, rest = text.split(user)
        between, after = rest.split(answer)
        if strip_prefix and before.startswith(strip_prefix):
            before = before[len(strip_prefix):]
        return cls("chat", before, between, after.rstrip("\n"), source=source)

    def prefix(self, prompt: str) -> str:
        """The text before the answer.

        Parameters
        ----------
        prompt : str
            The user's prompt.

        Returns
        -------
        str
        """
        return self.before + prompt + self.between

    def key(self) -> str:
        """A string that identifies the format (for cache keys).

        Returns
        -------
        str
        """
        return f"{self.name}|{self.before!r}|{self.between!r}|{self.end!r}"


def check_continuations(continuations: Sequence[str]) -> list[str]:
    """The continuations as a list of non-empty strings, or an error naming the bad one.

    Parameters
    ----------
    continuations : sequence of str
        The candidates to score.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        The list is empty, or an entry is not a string or is empty.
    """
    if isinstance(continuations, str):
        raise ValueError(f"continuations must be a list of strings; got the string {continuations!r}.")
    out = list(continuations)
    if not out:
        raise ValueError("continuations is empty; expected at least one candidate to score.")
    for i, c in enumerate(out):
        if not isinstance(c, str) or not c:
            raise ValueError(f"continuations[{i}] = {c!r}; expected a non-empty string.")
    return out


def check_sampling(n: object, max_tokens: object, temperature: object, *, zero_temperature: bool = False) -> None:
    """The checks every backend's ``sample`` makes of its settings.

    Parameters
    ----------
    n : int
        Number of samples (>= 1).
    max_tokens : int
        Most tokens per answer (>= 1: llama.cpp reads 0 as "until the context is full").
    temperature : float
        Sampling temperature (> 0; >= 0 with ``zero_temperature``, for servers that read 0 as greedy).
    zero_temperature : bool
        Accept a temperature of 0.

    Raises
    ------
    ValueError
        A setting out of range, naming it and its value.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n = {n!r}; expected an int >= 1.")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens = {max_tokens!r}; expected an int >= 1 (llama.cpp reads 0 as 'until n_ctx').")
    t = float(temperature) if isinstance(temperature, (int, float)) and not isinstance(temperature, bool) else np.nan
    if not np.isfinite(t) or t < 0 or (t == 0 and not zero_temperature):
        raise ValueError(f"temperature = {temperature!r}; expected "
                         f"{'a number >= 0' if zero_temperature else 'a positive number'}.")


@runtime_checkable
class LanguageModel(Protocol):
    """What pragmodels needs of a language model.

    ``identity`` names the model for caches and manifests (a GGUF file's sha256, or a server's URL
    and model name), ``prompt_format`` is how prompts and answers are joined.
    """

    @property
    def identity(self) -> str:
        """The model's identity (for cache keys and provenance)."""
        ...

    @property
    def prompt_format(self) -> PromptFormat:
        """How prompts and answers are joined."""
        ...

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        """Log-probability of each whole continuation given the prompt.

        Shapes: ``continuations [candidate]`` -> float64 ``[candidate]``.

        Parameters
        ----------
        prompt : str
            The user's prompt.
        continuations : sequence of str
            Candidate answers; each is scored through the format's end-of-turn marker.
        length_normalize : bool
            Divide each sum of token log-probabilities by its number of tokens.

        Returns
        -------
        numpy.ndarray
        """
        ...

    def sample(self, prompt: str, n: int, *, temperature: float = 1.0, max_tokens: int = 32,
               stop: Sequence[str] = (), seed: int = 0, answer_prefix: str = "") -> list[str]:
        """``n`` sampled answers to the prompt (sample ``i`` uses seed ``seed + i``).

        With ``answer_prefix`` (e.g. ``"<answer>"``), the answer is made to start with it and the
        model writes the rest; the texts returned start with the prefix.

        Parameters
        ----------
        prompt : str
            The user's prompt.
        n : int
            Number of samples.
        temperature : float
            Sampling temperature.
        max_tokens : int
            Most tokens per answer.
        stop : sequence of str
            Strings that end an answer (not included in it).
        seed : int
            Seed of the first sample.
        answer_prefix : str
            Text the answer starts with.

        Returns
        -------
        list of str
        """
        ...



@dataclass(frozen=True)
class ScoreRequest:
    """One prompt's :meth:`LanguageModel.score` call, for :func:`score_many`.

    Parameters
    ----------
    prompt : str
        The user's prompt.
    continuations : tuple of str
        Candidate answers.
    length_normalize : bool
        Mean instead of sum of token log-probabilities.
    """

    prompt: str
    continuations: tuple[str, ...]
    length_normalize: bool = False


@dataclass(frozen=True)
class SampleRequest:
    """One prompt's :meth:`LanguageModel.sample` call, for :func:`sample_many` (the same settings).

    Parameters
    ----------
    prompt : str
        The user's prompt.
    n : int
        Number of samples.
    temperature, max_tokens, stop, seed, answer_prefix
        As :meth:`LanguageModel.sample`.
    """

    prompt: str
    n: int
    temperature: float = 1.0
    max_tokens: int = 32
    stop: tuple[str, ...] = ()
    seed: int = 0
    answer_prefix: str = ""

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :meth:`LanguageModel.sample` (``answer_prefix`` only when set).

        Returns
        -------
        dict
        """
        kw: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens,
                              "stop": list(self.stop), "seed": self.seed}
        if self.answer_prefix:
            kw["answer_prefix"] = self.answer_prefix
        return kw


def _each(requests: Sequence[Any], run: Callable[[Any], Any], on_result: Callable[[int, Any], None] | None) -> list[Any]:
    out = []
    for i, r in enumerate(requests):
        try:
            value = run(r)
            if on_result is not None:
                on_result(i, value)
        except Exception as e:
            e.request_index = i  # type: ignore[attr-defined]  # which request failed (score_file names its prompt)
            raise
        out.append(value)
    return out


def score_many(lm: LanguageModel, requests: Sequence[ScoreRequest],
               on_result: Callable[[int, np.ndarray], None] | None = None) -> list[np.ndarray]:
    """Scores of many prompts: the model's own ``score_many`` where it has one (a server: requests
    in flight at once), else one ``score`` call after another.

    Shapes: ``requests [request]``, each with ``continuations [candidate]`` -> ``[request]`` of float64
    ``[candidate]``.

    Parameters
    ----------
    lm : LanguageModel
        The model.
    requests : sequence of ScoreRequest
        The prompts.
    on_result : callable, optional
        ``on_result(i, scores)`` as each request is done (in the calling thread; not in order with
        a server).

    Returns
    -------
    list of numpy.ndarray
        In the order of ``requests``.

    Raises
    ------
    LMError, ValueError
        As :meth:`LanguageModel.score`; the error's ``request_index`` names the request.
    """
    own = getattr(lm, "score_many", None)
    if callable(own):
        return list(own(requests, on_result=on_result))
    return _each(requests, lambda r: lm.score(r.prompt, list(r.continuations), length_normalize=r.length_normalize),
                 on_result)


def sample_many(lm: LanguageModel, requests: Sequence[SampleRequest],
                on_result: Callable[[int, list[str]], None] | None = None) -> list[list[str]]:
    """Samples for many prompts, as :func:`score_many` (the model's ``sample_many`` where it has one).

    Parameters
    ----------
    lm : LanguageModel
        The model.
    requests : sequence of SampleRequest
        The prompts and settings.
    on_result : callable, optional
        ``on_result(i, texts)`` as each request is done.

    Returns
    -------
    list of list of str
        In the order of ``requests``.
    """
    own = getattr(lm, "sample_many", None)
    if callable(own):
        return list(own(requests, on_result=on_result))
    return _each(requests, lambda r: lm.sample(r.prompt, r.n, **r.kwargs()), on_result)
