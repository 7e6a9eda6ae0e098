"""A model behind an OpenAI-compatible HTTP server: vLLM, llama.cpp servers, hosted APIs.

Layering: the standard library, NumPy, :mod:`pragmodels.lm.base`; ``httpx`` is imported at the
first request (``llama_cpp`` only by :func:`gguf_prompt_format`).

:class:`OpenAICompatibleLM` scores through ``/v1/completions`` with ``echo=True`` (the whole text
``format.prefix(prompt) + continuation + format.end``; the continuation's tokens counted from
the server's ``usage``) and samples one request per sample. Answers it cannot trust are refused
with :class:`~pragmodels.lm.base.ServerError`, never turned into numbers: tokens that do not spell
the continuation, and the one-token shift of llama-cpp-python 0.3.36's echo for prompts without a
BOS token (detected on every answer). Requests are time-bounded and retried with backoff.
:data:`LLAMA_CPP_PURE_SAMPLING` turns off that server's default truncation and penalty. What the
server answers, how the shift is detected, and its speed: the docs page *Language models*
("A server").
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from pragmodels.lm.base import (
    ContextLengthError,
    LMError,
    PromptFormat,
    ServerError,
    check_continuations,
    check_sampling,
)

__all__ = ["OpenAICompatibleLM", "gguf_prompt_format", "LLAMA_CPP_PURE_SAMPLING"]

#: ``sampling_params`` that turn off llama-cpp-python's default truncation and penalty (its server
#: samples with top_k=40, min_p=0.05, repeat_penalty=1.1 otherwise); vLLM's defaults are already off.
LLAMA_CPP_PURE_SAMPLING: Mapping[str, Any] = {"top_k": 0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0}

_ENV_URL = "PRAGMODELS_LM_BASE_URL"
_ENV_MODEL = "PRAGMODELS_LM_MODEL"
_ENV_KEY = "OPENAI_API_KEY"
_CONTEXT_RE = re.compile(r"context (window|length)|maximum context", re.I)


def gguf_prompt_format(path: str | os.PathLike[str]) -> PromptFormat:
    """The chat format of a GGUF file's own template, read without loading the weights.

    The same format :class:`~pragmodels.lm.llamacpp.LlamaCppLM` uses for ``prompt_format="chat"``
    (what a llama.cpp server of that file should be scored with); only the vocabulary is loaded.

    Parameters
    ----------
    path : str or path-like
        The ``.gguf`` file.

    Returns
    -------
    PromptFormat

    Raises
    ------
    ModelFileError
        The file is missing or not GGUF.
    LMError
        ``llama-cpp-python`` is not installed, or the file has no chat template.
    """
    from pragmodels.lm.llamacpp import check_gguf

    p = check_gguf(path)
    try:
        from llama_cpp import Llama
    except ImportError as e:
        raise LMError("llama-cpp-python is not installed (needed to read a GGUF file's template): "
                      "pip install 'pragmodels[lm]', or pass a PromptFormat.") from e
    llm = Llama(model_path=str(p), vocab_only=True, verbose=False)
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise LMError(f"model file {p} has no chat template; use PromptFormat.plain().")

    def tok(i: int) -> str:
        return llm.detokenize([i], special=True).decode("utf-8", "replace") if i >= 0 else ""

    adds_bos = bool(llm._model.add_bos_token()) and llm.token_bos() >= 0
    return PromptFormat.from_chat_template(template, bos_token=tok(llm.token_bos()), eos_token=tok(llm.token_eos()),
                                           strip_bos=adds_bos)


def _normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"base_url = {url!r}; expected an http(s) URL such as 'http://127.0.0.1:8080/v1'.")
    return url + "/v1" if parts.path in ("", "/") else url


@dataclass(frozen=True)
class _Echo:
    """One echo answer, read: the prompt's entries (without the generated ones)."""

    tokens: list[str]
    offsets: list[Any]
    logprobs: list[float | None]
    prompt_tokens: int
    verified: bool  # the answer ends with the generated token (so it is not shifted)


class OpenAICompatibleLM:
    """A :class:`~pragmodels.lm.base.LanguageModel` served over an OpenAI-compatible HTTP API.

    Scores from ``/v1/completions`` with ``echo=True`` (how, and what is
    refused: docs, *Language models*), samples from ``/v1/completions`` or ``/v1/chat/completions``.

    Parameters
    ----------
    base_url : str, optional
        The API's base URL, e.g. ``"http://127.0.0.1:8080/v1"`` (``/v1`` is added to a URL with
        no path); default ``$PRAGMODELS_LM_BASE_URL``.
    model : str, optional
        The model name sent with each request; default ``$PRAGMODELS_LM_MODEL``, else the only
        model the server lists at ``/models`` (asked at first use).
    prompt_format : PromptFormat, optional
        How prompts and answers are joined into the raw text that is scored (default
        :meth:`PromptFormat.plain`). For an instruction-tuned model, its chat format: for a GGUF
        file, :func:`gguf_prompt_format` (or ``LlamaCppLM(path).prompt_format``).
    api_key : str, optional
        Sent as ``Authorization: Bearer``; default ``$OPENAI_API_KEY`` (none if unset).
    timeout_s : float
        Bound on each request (connect, read, write), in seconds.
    max_retries : int
        Retries after a connection error, a timeout, HTTP 5xx or 429.
    backoff_s : float
        First retry's wait; doubled at each further retry.
    sample_api : {"completions", "chat"}
        Endpoint for :meth:`sample`.
    sampling_params : mapping, optional
        Extra fields for sampling requests (e.g. :data:`LLAMA_CPP_PURE_SAMPLING`).

    Raises
    ------
    ValueError
        No base URL (argument or environment), a malformed one, or a setting out of range.

    Examples
    --------
    >>> lm = OpenAICompatibleLM("http://127.0.0.1:8080/v1", "smollm2",
    ...                         prompt_format=gguf_prompt_format(smollm2_path()))  # doctest: +SKIP
    >>> lm.score("2 + 2 =", ["4", "5"])                                             # doctest: +SKIP
    """

    def __init__(self, base_url: str | None = None, model: str | None = None, *,
                 prompt_format: PromptFormat | None = None, api_key: str | None = None, timeout_s: float = 120.0,
                 max_retries: int = 3, backoff_s: float = 0.5, sample_api: str = "completions",
                 sampling_params: Mapping[str, Any] | None = None):
        url = base_url if base_url is not None else os.environ.get(_ENV_URL)
        if not url:
            raise ValueError(f"no server URL: pass base_url or set ${_ENV_URL} (e.g. http://127.0.0.1:8080/v1).")
        self.base_url = _normalise_url(url)
        self._model = model if model is not None else (os.environ.get(_ENV_MODEL) or None)
        self._api_key = api_key if api_key is not None else (os.environ.get(_ENV_KEY) or None)
        if prompt_format is not None and not isinstance(prompt_format, PromptFormat):
            raise ValueError(f"prompt_format = {prompt_format!r}; expected a PromptFormat (or None for plain).")
        self._format = prompt_format if prompt_format is not None else PromptFormat.plain()
        if not (isinstance(timeout_s, (int, float)) and np.isfinite(timeout_s) and timeout_s > 0):
            raise ValueError(f"timeout_s = {timeout_s!r}; expected a positive number of seconds.")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries = {max_retries!r}; expected an int >= 0.")
        if not (isinstance(backoff_s, (int, float)) and np.isfinite(backoff_s) and backoff_s >= 0):
            raise ValueError(f"backoff_s = {backoff_s!r}; expected a number >= 0.")
        if sample_api not in ("completions", "chat"):
            raise ValueError(f"sample_api = {sample_api!r}; expected 'completions' or 'chat'.")
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self.backoff_s = float(backoff_s)
        self.sample_api = sample_api
        self.sampling_params = dict(sampling_params or {})
        self._client: Any = None
        self._prefix_tokens: dict[str, int] = {}
        self.requests_sent = 0

    # -- the Protocol ------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """``"openai:<base_url>|<model>"`` (asks the server for its model if none was given)."""
        return f"openai:{self.base_url}|{self.model}"

    @property
    def prompt_format(self) -> PromptFormat:
        """The prompt format in use."""
        return self._format

    @property
    def model(self) -> str:
        """The model name sent with each request."""
        if self._model is None:
            listed = self._request("GET", "/models").get("data")
            if not isinstance(listed, list):
                raise ServerError(f"{self.base_url}/models answered without a 'data' list of models.")
            ids = [m.get("id") if isinstance(m, dict) else None for m in listed]
            if len(ids) != 1 or not isinstance(ids[0], str):
                raise ValueError(f"the server at {self.base_url} lists {len(ids)} models ({ids[:5]}); "
                                 f"pass model= or set ${_ENV_MODEL}.")
            self._model = ids[0]
        return self._model

    def settings(self) -> dict[str, Any]:
        """What besides identity and format the samples depend on (for cache keys).

        Returns
        -------
        dict
        """
        return {"backend": "openai_http", "sample_api": self.sample_api,
                "sampling_params": {k: self.sampling_params[k] for k in sorted(self.sampling_params)}}

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        """Log-probability of each continuation given the prompt, from the server's echo.

        Shapes: ``continuations [candidate]`` -> float64 ``[candidate]``.

        One echo request per continuation (servers such as llama-cpp-python's reject a list of
        prompts), plus one short request per new prompt for its token count.

        Parameters
        ----------
        prompt : str
            The user's prompt.
        continuations : sequence of str
            Candidate answers, each scored through the format's end marker.
        length_normalize : bool
            Mean instead of sum over the continuation's tokens.

        Returns
        -------
        numpy.ndarray

        Raises
        ------
        ValueError
            ``continuations`` is empty or holds an empty or non-string entry.
        ServerError
            The server is down or answers garbage, its echo is shifted (llama-cpp-python for a
            prompt that does not begin with the BOS token), or its tokens do not spell the
            continuation.
        ContextLengthError
            The server says the text does not fit its context window.
        """
        conts = check_continuations(continuations)
        prefix = self._format.prefix(prompt)
        n_prefix = self._prefix_count(prefix)
        out = np.empty(len(conts), dtype=np.float64)
        verified = False
        for i, cont in enumerate(conts):
            echo = self._echo(prefix + cont + self._format.end)
            verified = verified or echo.verified
            lps = self._continuation_logprobs(echo, prefix, n_prefix, cont)
            out[i] = float(np.mean(lps)) if length_normalize else float(np.sum(lps))
        if not verified:
            raise ServerError(
                f"{self.base_url}: none of the {len(conts)} echo answers for this prompt could be checked for a "
                "one-token shift (each prompt text ends with the text the server generated, or it generated "
                "nothing); refusing scores that may be shifted.")
        return out

    def sample(self, prompt: str, n: int, *, temperature: float = 1.0, max_tokens: int = 32,
               stop: Sequence[str] = (), seed: int = 0, answer_prefix: str = "") -> list[str]:
        """``n`` answers sampled by the server (sample ``i`` is one request with seed ``seed + i``).

        Parameters
        ----------
        prompt : str
            The user's prompt.
        n : int
            Number of samples (>= 1).
        temperature : float
            Sampling temperature (>= 0).
        max_tokens : int
            Most tokens per answer (>= 1).
        stop : sequence of str
            Strings that end an answer (the format's end marker is added).
        seed : int
            Seed of the first sample.
        answer_prefix : str
            Text the answer is made to start with (completions only: a chat API cannot be made
            to continue an answer; the texts returned start with it).

        Returns
        -------
        list of str

        Raises
        ------
        ValueError
            ``n``, ``temperature`` or ``max_tokens`` out of range, or ``answer_prefix`` with the chat API.
        ServerError
            The server is down or answers garbage.
        ContextLengthError
            The server says the prompt does not fit its context window.
        """
        check_sampling(n, max_tokens, temperature, zero_temperature=True)
        if isinstance(stop, str):
            raise ValueError(f"stop must be a list of strings; got the string {stop!r}.")
        stops = list(stop) + ([self._format.end] if self._format.end and self._format.end not in stop else [])
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "temperature": float(temperature),
                                "top_p": 1.0, "n": 1, **self.sampling_params}
        if stops:
            body["stop"] = stops
        if self.sample_api == "chat":
            if answer_prefix:
                raise ValueError("answer_prefix needs sample_api='completions' (a chat API cannot continue an answer).")
            path, body["messages"] = "/chat/completions", [{"role": "user", "content": prompt}]
        else:
            path, body["prompt"] = "/completions", self._format.prefix(prompt) + answer_prefix
        texts = []
        for i in range(n):
            data = self._request("POST", path, body | {"seed": int(seed) + i})
            choice = _first_choice(data, path, self.base_url)
            if self.sample_api == "chat":
                message = choice.get("message")
                text = message.get("content") if isinstance(message, dict) else None
            else:
                text = choice.get("text")
            if not isinstance(text, str):
                where = "choices[0].message.content" if self.sample_api == "chat" else "choices[0].text"
                raise ServerError(f"{self.base_url}{path} answered without a string {where} (got {text!r}).")
            texts.append(answer_prefix + text)
        return texts

    def close(self) -> None:
        """Close the HTTP connection pool (a later request opens a new one).

        Returns
        -------
        None
        """
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> OpenAICompatibleLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scoring internals -------------------------------------------------------------------

    def _prefix_count(self, prefix: str) -> int:
        if prefix not in self._prefix_tokens:
            data = self._request("POST", "/completions", {"model": self.model, "prompt": prefix, "max_tokens": 1,
                                                           "temperature": 0.0, "n": 1})
            self._prefix_tokens[prefix] = _usage_prompt_tokens(data, self.base_url)
        return self._prefix_tokens[prefix]

    def _echo(self, text: str) -> _Echo:
        path = "/completions"
        data = self._request("POST", path, {"model": self.model, "prompt": text, "echo": True, "logprobs": 1,
                                            "max_tokens": 1, "temperature": 0.0, "n": 1})
        where = f"{self.base_url}{path}"
        choice = _first_choice(data, path, self.base_url)
        full = choice.get("text")
        lp = choice.get("logprobs")
        if not isinstance(full, str):
            raise ServerError(f"{where} answered without a string choices[0].text.")
        if not isinstance(lp, dict):
            raise ServerError(f"{where} answered without choices[0].logprobs (got {lp!r}); the server does not "
                              "return log-probabilities.")
        tokens, offsets, values = lp.get("tokens"), lp.get("text_offset"), lp.get("token_logprobs")
        for name, v in (("tokens", tokens), ("text_offset", offsets), ("token_logprobs", values)):
            if not isinstance(v, list):
                raise ServerError(f"{where}: choices[0].logprobs.{name} is missing or not a list (got {type(v).__name__}).")
        assert isinstance(tokens, list) and isinstance(offsets, list) and isinstance(values, list)
        if not (len(tokens) == len(offsets) == len(values)):
            raise ServerError(f"{where}: choices[0].logprobs lists differ in length (tokens {len(tokens)}, "
                              f"text_offset {len(offsets)}, token_logprobs {len(values)}).")
        if not all(isinstance(t, str) for t in tokens):
            raise ServerError(f"{where}: choices[0].logprobs.tokens holds non-strings.")
        for j, v in enumerate(values):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise ServerError(f"{where}: token_logprobs[{j}] = {v!r}; expected a number or null.")
        if not full.startswith(text):
            raise ServerError(f"{where}: with echo=True the answer's text does not begin with the prompt; "
                              "the server does not echo prompts, so it cannot score continuations.")
        generated = full[len(text):]
        usage = data.get("usage")
        n_gen = usage.get("completion_tokens") if isinstance(usage, dict) else None
        if isinstance(n_gen, bool) or not isinstance(n_gen, int) or n_gen < 0:
            n_gen = 1 if generated else 0
        n_prompt = _usage_prompt_tokens(data, self.base_url)
        tail = "".join(tokens[len(tokens) - n_gen:]) if n_gen else ""
        if generated and not text.endswith(generated):
            # unambiguous: a correct echo ends with the generated token, a shifted one (llama-cpp-python
            # 0.3.36, prompt not beginning with BOS) ends with the prompt's last token
            if n_gen > len(tokens) or tail != generated:
                raise ServerError(
                    f"{where}: the echo does not end with the generated token {generated!r} (its last entries are "
                    f"{tokens[-3:]!r}): the server's prompt log-probabilities are SHIFTED BY ONE TOKEN (as "
                    "llama-cpp-python's server does for a prompt that does not begin with the model's BOS token). "
                    "Refusing them: score in-process (LlamaCppLM), use a prompt format that begins with the BOS "
                    "token, or another server (vLLM).")
            verified = True
        else:
            verified = False
        # unverified: read it as a correct echo (generated entries last); were it shifted, the
        # continuation's token strings would be off by one and fail the spelling check
        cut = len(tokens) - min(n_gen, len(tokens))
        return _Echo(list(tokens[:cut]), list(offsets[:cut]), list(values[:cut]), n_prompt, verified)

    def _continuation_logprobs(self, echo: _Echo, prefix: str, n_prefix: int, cont: str) -> np.ndarray:
        where = f"{self.base_url}/completions"
        k = echo.prompt_tokens - n_prefix
        target = cont + self._format.end
        if k < 1 or k >= len(echo.tokens):
            raise ServerError(f"{where}: the text has {echo.prompt_tokens} tokens and its prompt {n_prefix}, so the "
                              f"continuation {cont!r} would be {k} tokens of an echo of {len(echo.tokens)}; "
                              "the server's token counts do not add up.")
        toks, vals = echo.tokens[-k:], echo.logprobs[-k:]
        if not _spells(toks, target):
            raise ServerError(
                f"{where}: the last {k} echoed tokens {toks!r} do not spell the continuation {target!r}: its first "
                "token merges with the prompt's last, the server left a token out of its echo (llama-cpp-python "
                "leaves out tokens equal to BOS), or the echo is misaligned. Refusing the score.")
        text = prefix + target
        if all(isinstance(o, int) and text.startswith(t, o) for t, o in zip(echo.tokens, echo.offsets)):
            # offsets that index the text (vLLM, hosted APIs, plain text): they must agree
            by_offset = [j for j, o in enumerate(echo.offsets) if o >= len(prefix)]
            if by_offset != list(range(len(echo.tokens) - k, len(echo.tokens))):
                raise ServerError(f"{where}: the tokens at or after the prompt's end by text_offset "
                                  f"({len(by_offset)}) are not the last {k} by token count; refusing the score.")
        if any(v is None for v in vals):
            raise ServerError(f"{where}: the echo gives no log-probability (null) for a token of {target!r}.")
        arr = np.asarray(vals, dtype=np.float64)
        if not np.all(np.isfinite(arr) | (arr == -np.inf)) or np.any(arr > 1e-4):  # float32 rounding near 0
            raise ServerError(f"{where}: the echo's log-probabilities for {target!r} are not <= 0: {vals!r}.")
        return np.minimum(arr, 0.0)

    # -- HTTP --------------------------------------------------------------------------------

    def _http(self) -> Any:
        try:
            import httpx
        except ImportError as e:
            raise LMError("httpx is not installed: pip install 'pragmodels[lm]'.") from e
        if self._client is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s), headers=headers)
        return httpx

    def _request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        httpx = self._http()
        url = self.base_url + path
        problem, wait = "", 0.0
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(wait)
            wait = min(self.backoff_s * 2 ** attempt, 60.0)
            self.requests_sent += 1
            try:
                r = self._client.request(method, url, json=body)
            except httpx.TimeoutException:
                problem = f"no answer within timeout_s = {self.timeout_s:g} s"
                continue
            except httpx.TransportError as e:
                problem = f"cannot connect ({type(e).__name__}: {e})"
                continue
            if r.status_code == 429 or r.status_code >= 500:
                problem = f"HTTP {r.status_code}: {r.text[:200]!r}"
                retry_after = r.headers.get("Retry-After", "")
                if retry_after.replace(".", "", 1).isdigit():
                    wait = min(max(float(retry_after), wait), 60.0)
                continue
            if r.status_code >= 400:
                text = r.text[:300]
                if r.status_code in (400, 413, 422) and _CONTEXT_RE.search(text):
                    raise ContextLengthError(f"{url}: the text does not fit the model's context window "
                                             f"(HTTP {r.status_code}: {text!r}).")
                raise ServerError(f"{url}: HTTP {r.status_code}: {text!r}")
            try:
                data = r.json()
            except ValueError:
                raise ServerError(f"{url} answered with something that is not JSON: {r.text[:200]!r}") from None
            if not isinstance(data, dict):
                raise ServerError(f"{url} answered with JSON that is not an object: {str(data)[:200]!r}")
            return data
        raise ServerError(f"{url}: {problem} (after {self.max_retries + 1} attempts).")


def _first_choice(data: dict[str, Any], path: str, base_url: str) -> dict[str, Any]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ServerError(f"{base_url}{path} answered without a non-empty 'choices' list "
                          f"(keys: {sorted(data)[:10]}).")
    return choices[0]


def _usage_prompt_tokens(data: dict[str, Any], base_url: str) -> int:
    usage = data.get("usage")
    n = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ServerError(f"{base_url}/completions answered without usage.prompt_tokens (needed to find the "
                          "continuation's tokens).")
    return n


def _spells(tokens: Sequence[str], target: str) -> bool:
    """Whether the token strings, in order, spell ``target``, where an empty string (a special
    token, which servers may render as nothing) stands for any stretch of it."""
    pos, gap = 0, False
    for t in tokens:
        if t == "":
            gap = True
            continue
        idx = target.find(t, pos) if gap else (pos if target.startswith(t, pos) else -1)
        if idx < 0:
            return False
        pos, gap = idx + len(t), False
    return pos == len(target) or gap
