"""A model behind an OpenAI-compatible HTTP server: vLLM, llama.cpp servers, hosted APIs.

Layering: the standard library, NumPy, :mod:`pragmodels.lm.base`, :mod:`pragmodels.lm.templates`;
the official ``openai`` SDK is imported at the first request (``llama_cpp`` or ``transformers``
only to read a template).

:class:`OpenAICompatibleLM` talks to the server through ``openai.AsyncOpenAI`` (typed requests and
answers, timeouts, connection pooling) on an event loop of its own, with a bounded number of
requests in flight. Scores come from ``/v1/completions``: vLLM's ``prompt_logprobs`` extension
where the server has it, else ``echo=True`` (the whole text ``format.prefix(prompt) +
continuation + format.end``; the continuation's tokens counted from the server's ``usage``).
Samples come from ``/v1/completions`` or ``/v1/chat/completions``, ``n`` per request where the
server honours it. Answers it cannot trust are refused with
:class:`~pragmodels.lm.base.ServerError`, never turned into numbers: tokens that do not spell the
continuation, a continuation whose first token merged with the prompt's last, and the one-token
shift of llama-cpp-python 0.3.36's echo for prompts without a BOS token (detected on every
answer). What the server answers, how the shift is detected, and its speed: the docs page
*Language models* ("A server").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from pragmodels.lm.base import (
    ContextLengthError,
    LMError,
    LogprobsUnavailableError,
    PromptFormat,
    SampleRequest,
    ScoreRequest,
    ServerError,
    check_continuations,
    check_sampling,
)
from pragmodels.lm.templates import ANSWER, USER, gguf_prompt_format, hf_prompt_format, parse_template_source

__all__ = ["OpenAICompatibleLM", "gguf_prompt_format", "LLAMA_CPP_PURE_SAMPLING"]

#: ``sampling_params`` that turn off llama-cpp-python's default truncation and penalty (its server
#: samples with top_k=40, min_p=0.05, repeat_penalty=1.1 otherwise); vLLM's defaults are already off.
LLAMA_CPP_PURE_SAMPLING: Mapping[str, Any] = {"top_k": 0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0}

_ENV_URL = "PRAGMODELS_LM_BASE_URL"
_ENV_MODEL = "PRAGMODELS_LM_MODEL"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTEXT_RE = re.compile(r"context (window|length)|maximum context", re.I)
# what servers say when they cannot give log-probabilities: llama-cpp-python without logits_all,
# hosted chat models on /v1/completions, servers that refuse echo
_NO_LOGPROBS_RE = re.compile(r"logprobs? (is|are) not (supported|available)|logits_all|echo.{0,40}not supported|"
                             r"not supported.{0,40}(echo|logprobs)|does not support (echo|logprobs)", re.I)
_MAX_WAIT_S = 120.0  # the longest Retry-After honoured (as the SDK's own retries)
_sleep = asyncio.sleep  # the back-off's wait (tests replace it)
_SETTING = ('set "semantics": "samples" in its LM entry (on the command line: --semantics samples) to use sampled '
            'semantics (sample_api "chat" needs no log-probabilities), or serve the model where prompt '
            "log-probabilities are given (vLLM; llama-cpp-python's server with --logits_all true)")


def _normalise_url(url: str) -> str:
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"base_url = {url!r}; expected an http(s) URL such as 'http://127.0.0.1:8080/v1'.")
    return url + "/v1" if parts.path in ("", "/") else url


def _positive(name: str, value: object, *, zero: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero):  # type: ignore[operator]
        raise ValueError(f"{name} = {value!r}; expected a {'number >= 0' if zero else 'positive number'}.")
    return float(value)  # type: ignore[arg-type]


def _count(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} = {value!r}; expected an int >= {low}.")
    return value


@dataclass(frozen=True)
class _Echo:
    """One echo answer, read: the prompt's entries (without the generated ones)."""

    tokens: list[str]
    offsets: list[Any]
    logprobs: list[float | None]
    prompt_tokens: int
    verified: bool  # the answer ends with the generated token (so it is not shifted)


class _Loop:
    """An event loop in a daemon thread of its own, with the SDK's client on it; closed by
    :meth:`close` or when its model is garbage-collected.

    The thread closes what it runs: once its loop stops, however it was stopped, it cancels the
    tasks left, closes the client and closes the loop (a loop only stopped, and later collected,
    warns of its unclosed sockets wherever the collector happens to run).
    """

    def __init__(self, make_client: Callable[[], Any]):
        self.loop = asyncio.new_event_loop()
        self.client: Any = None
        self.thread = threading.Thread(target=self._serve, name="pragmodels-lm-http", daemon=True)
        self.thread.start()
        try:
            self.client = self.run(self._make(make_client))
        except BaseException:
            self.close()
            raise

    @staticmethod
    async def _make(make_client: Callable[[], Any]) -> Any:
        return make_client()

    def _serve(self) -> None:
        loop = self.loop
        try:
            loop.run_forever()
        finally:
            try:
                loop.run_until_complete(self._shutdown())
                loop.run_until_complete(loop.shutdown_asyncgens())
            except Exception:  # closed regardless: the loop's own sockets come first
                pass
            finally:
                loop.close()

    async def _shutdown(self) -> None:
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.client is not None:
            await asyncio.wait_for(self.client.close(), 10)
        await asyncio.sleep(0)  # the transports' connection_lost callbacks, scheduled by the close

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        fut = self.submit(coro)
        try:
            return fut.result()
        except BaseException:  # an interrupt in the caller's thread stops the work too
            fut.cancel()
            raise

    def close(self) -> None:
        """Stop the loop; its thread closes the client and the loop (waited for up to 20 s, unless
        called on that thread: collected there, it cannot wait for itself)."""
        if self.loop.is_closed():
            return
        if threading.current_thread() is self.thread:
            self.loop.stop()
            return
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # closed meanwhile by its thread
            return
        self.thread.join(20)


class OpenAICompatibleLM:
    """A :class:`~pragmodels.lm.base.LanguageModel` served over an OpenAI-compatible HTTP API.

    Scores from ``/v1/completions`` (``prompt_logprobs`` or ``echo``; how, and what is refused:
    docs, *Language models*), samples from ``/v1/completions`` or ``/v1/chat/completions``.
    :meth:`score_many` and :meth:`sample_many` keep up to ``concurrency`` requests in flight.

    Parameters
    ----------
    base_url : str, optional
        The API's base URL, e.g. ``"http://127.0.0.1:8080/v1"`` (``/v1`` is added to a URL with
        no path); default ``$PRAGMODELS_LM_BASE_URL``.
    model : str, optional
        The model name sent with each request; default ``$PRAGMODELS_LM_MODEL``, else the only
        model the server lists at ``/models`` (asked at first use).
    prompt_format : PromptFormat or str, optional
        How prompts and answers are joined into the raw text that is scored: a
        :class:`~pragmodels.lm.base.PromptFormat`, or a template source
        (:func:`~pragmodels.lm.templates.parse_template_source`): ``"server"`` (the default: the
        server renders the model's own chat template, asked at first use; an error if it cannot),
        ``"gguf:PATH"``, ``"hf:NAME_OR_DIR"``, or ``"plain"`` (plain text, for a base model).
    api_key_env : str, optional
        The environment variable that holds the API key (e.g. ``"OPENAI_API_KEY"``; it must be
        set). The key is read when the client is made and is never stored in this object, a cache
        key, a manifest, a log or an error message. Default: no key (a local server).
    timeout_s : float
        Bound on each request (connect, read, write), in seconds.
    max_retries : int
        Retries after a connection error, a timeout, HTTP 408, 409, 429 or 5xx.
    backoff_s : float
        First retry's wait; doubled at each further retry (at most 60 s). A ``Retry-After`` from
        the server (up to 120 s) is waited for instead, by every request in flight.
    sample_api : {"completions", "chat"}
        Endpoint for :meth:`sample`: ``"completions"`` samples the formatted text that is scored,
        ``"chat"`` sends the prompt as a user message (the server applies its template; the only
        route of hosted chat models).
    sampling_params : mapping, optional
        Extra fields for sampling requests (e.g. :data:`LLAMA_CPP_PURE_SAMPLING`).
    concurrency : int
        Most requests in flight at once.
    score_api : {"auto", "prompt_logprobs", "echo"}
        How scores are asked for: vLLM's ``prompt_logprobs`` extension, ``echo`` with
        ``logprobs``, or ``"auto"``: ``prompt_logprobs`` where the server answers with them (asked
        once, with the first scored text), else ``echo``.

    Raises
    ------
    ValueError
        No base URL (argument or environment), a malformed one, a setting out of range, or an
        ``api_key_env`` that is not set.

    Examples
    --------
    >>> lm = OpenAICompatibleLM("http://127.0.0.1:8080/v1", "smollm2",
    ...                         prompt_format=f"gguf:{smollm2_path()}")               # doctest: +SKIP
    >>> lm.score("2 + 2 =", ["4", "5"])                                             # doctest: +SKIP
    >>> chat = OpenAICompatibleLM("https://api.openai.com/v1", "gpt-4o", sample_api="chat",
    ...                           api_key_env="OPENAI_API_KEY")                       # doctest: +SKIP
    >>> chat.sample("Name a colour.", 32, max_tokens=8)                              # doctest: +SKIP
    """

    def __init__(self, base_url: str | None = None, model: str | None = None, *,
                 prompt_format: PromptFormat | str | None = None, api_key_env: str | None = None,
                 timeout_s: float = 120.0, max_retries: int = 3, backoff_s: float = 0.5,
                 sample_api: str = "completions", sampling_params: Mapping[str, Any] | None = None,
                 concurrency: int = 8, score_api: str = "auto"):
        url = base_url if base_url is not None else os.environ.get(_ENV_URL)
        if not url:
            raise ValueError(f"no server URL: pass base_url or set ${_ENV_URL} (e.g. http://127.0.0.1:8080/v1).")
        self.base_url = _normalise_url(url)
        self._model = model if model is not None else (os.environ.get(_ENV_MODEL) or None)
        if api_key_env is not None:
            if not isinstance(api_key_env, str) or not _ENV_NAME.fullmatch(api_key_env):
                # (the value is not shown: it may be the key itself, pasted in the wrong place)
                raise ValueError("api_key_env must be the name of an environment variable (letters, digits, _) that "
                                 "holds the API key, not the key itself; the value given is not shown.")
            if not os.environ.get(api_key_env):
                raise ValueError(f"api_key_env: the environment variable ${api_key_env} is not set (it should hold the "
                                 "API key).")
        self.api_key_env = api_key_env
        self._format: PromptFormat | None = None
        if isinstance(prompt_format, PromptFormat):
            self._format, self.template_source = prompt_format, prompt_format.source or "given"
        elif prompt_format is None or isinstance(prompt_format, str):
            spec = "server" if prompt_format is None else prompt_format
            kind, value = parse_template_source(spec)
            self.template_source = spec if kind != "gguf" else f"gguf:{value}"
            if kind == "plain":
                self._format = PromptFormat.plain()
            elif kind == "gguf":
                self._format = gguf_prompt_format(value)
            elif kind == "hf":
                self._format = hf_prompt_format(value)
        else:
            raise ValueError(f"prompt_format = {prompt_format!r}; expected a PromptFormat or a template source "
                             "('server', 'plain', 'gguf:PATH', 'hf:NAME_OR_DIR').")
        self.timeout_s = _positive("timeout_s", timeout_s)
        self.max_retries = _count("max_retries", max_retries, 0)
        self.backoff_s = _positive("backoff_s", backoff_s, zero=True)
        if sample_api not in ("completions", "chat"):
            raise ValueError(f"sample_api = {sample_api!r}; expected 'completions' or 'chat'.")
        if score_api not in ("auto", "prompt_logprobs", "echo"):
            raise ValueError(f"score_api = {score_api!r}; expected 'auto', 'prompt_logprobs' or 'echo'.")
        self.sample_api = sample_api
        self.sampling_params = dict(sampling_params or {})
        self.concurrency = _count("concurrency", concurrency, 1)
        self.score_api = score_api
        self._score_route: str | None = None if score_api == "auto" else score_api
        self._n_honoured: bool | None = None  # whether the server returns n choices for n > 1
        self._tokenize_route: str | None = None  # the server's tokenizer route (found out at first use)
        self._max_tokens_field = "max_tokens"  # "max_completion_tokens" for models that refuse max_tokens
        self._prefix_info: dict[str, tuple[int, list[int] | None]] = {}
        self._loop: _Loop | None = None
        self._lock = threading.Lock()
        self.requests_sent = 0

    def __repr__(self) -> str:
        return f"OpenAICompatibleLM({self.base_url!r}, {self._model!r})"

    def __getstate__(self) -> dict[str, Any]:
        # (the key is not here: it is read from the environment when a client is made)
        state = {k: v for k, v in self.__dict__.items() if k not in ("_sem", "_prompts", "_alock", "_pause_until")}
        state.update(_loop=None, _lock=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- the Protocol ------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """``"openai:<base_url>|<model>"`` (asks the server for its model if none was given)."""
        return f"openai:{self.base_url}|{self.model}"

    @property
    def prompt_format(self) -> PromptFormat:
        """The prompt format in use (with ``"server"``, rendered by the server at first use).

        Raises
        ------
        LMError
            The server renders no chat template (llama-cpp-python's server), so its source must be named.
        """
        if self._format is None:
            self._run(self._aformat())
        assert self._format is not None
        return self._format

    @property
    def model(self) -> str:
        """The model name sent with each request."""
        if self._model is None:
            self._run(self._amodel())
        assert self._model is not None
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
        """Log-probability of each continuation given the prompt, from the server.

        Shapes: ``continuations [candidate]`` -> float64 ``[candidate]``.

        One request per continuation (servers such as llama-cpp-python's reject a list of
        prompts), all in flight at once up to ``concurrency``, plus one short request per new
        prompt for its token count.

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
        ServerError
            The server is down or answers garbage, its echo is shifted (llama-cpp-python for a
            prompt that does not begin with the BOS token), or its tokens do not spell the
            continuation.
        LogprobsUnavailableError
            The server gives no log-probabilities (its message names the setting to change).
        ContextLengthError
            The server says the text does not fit its context window.
        """
        conts = check_continuations(continuations)
        return self._run(self._ascore(prompt, conts, length_normalize))

    def score_many(self, requests: Sequence[ScoreRequest],
                   on_result: Callable[[int, np.ndarray], None] | None = None) -> list[np.ndarray]:
        """:meth:`score` of many prompts, up to ``concurrency`` requests in flight.

        Parameters
        ----------
        requests : sequence of ScoreRequest
            The prompts.
        on_result : callable, optional
            ``on_result(i, scores)`` in the calling thread as each prompt is done.

        Returns
        -------
        list of numpy.ndarray
            In the order of ``requests``.

        Raises
        ------
        LMError, ValueError
            As :meth:`score`, for the first prompt that failed (its ``request_index``); the
            requests still in flight are cancelled.
        """
        checked = [(r.prompt, check_continuations(r.continuations), r.length_normalize) for r in requests]
        return self._many([self._ascore(*c) for c in checked], on_result)

    def sample(self, prompt: str, n: int, *, temperature: float = 1.0, max_tokens: int = 32,
               stop: Sequence[str] = (), seed: int = 0, answer_prefix: str = "") -> list[str]:
        """``n`` answers sampled by the server.

        Where the server honours ``n`` (vLLM, OpenAI), one request with seed ``seed`` gives them all;
        where it does not (llama-cpp-python's server answers one choice), sample ``i`` is a request
        of its own with seed ``seed + i``, up to ``concurrency`` in flight. Which it is, is found
        out by the first request with ``n > 1``.

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
            Strings that end an answer (the format's end marker is added on the completions route).
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
            The server is down, answers garbage, or gives another number of answers than asked.
        ContextLengthError
            The server says the prompt does not fit its context window.
        """
        self._check_sample(n, temperature, max_tokens, stop, answer_prefix)
        return self._run(self._asample(prompt, n, float(temperature), max_tokens, list(stop), int(seed), answer_prefix))

    def sample_many(self, requests: Sequence[SampleRequest],
                    on_result: Callable[[int, list[str]], None] | None = None) -> list[list[str]]:
        """:meth:`sample` for many prompts, up to ``concurrency`` requests in flight.

        Parameters
        ----------
        requests : sequence of SampleRequest
            The prompts and settings.
        on_result : callable, optional
            ``on_result(i, texts)`` in the calling thread as each prompt is done.

        Returns
        -------
        list of list of str
            In the order of ``requests``.
        """
        for r in requests:
            self._check_sample(r.n, r.temperature, r.max_tokens, r.stop, r.answer_prefix)
        return self._many([self._asample(r.prompt, r.n, float(r.temperature), r.max_tokens, list(r.stop),
                                         int(r.seed), r.answer_prefix) for r in requests], on_result)

    def close(self) -> None:
        """Close the connections and the event loop (a later request opens new ones).

        Returns
        -------
        None
        """
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.close()

    def __enter__(self) -> OpenAICompatibleLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running ------------------------------------------------------------------------------

    def _runner(self) -> _Loop:
        with self._lock:
            if self._loop is None:
                try:
                    import openai
                except ImportError as e:
                    raise LMError("the openai package is not installed: pip install 'pragmodels[lm]'.") from e
                key = os.environ.get(self.api_key_env) if self.api_key_env else None
                if self.api_key_env and not key:
                    raise ValueError(f"api_key_env: the environment variable ${self.api_key_env} is not set.")
                base_url, timeout = self.base_url, self.timeout_s

                def make() -> Any:
                    # "EMPTY": the SDK needs a key; servers without one ignore it. Retries are ours (below)
                    return openai.AsyncOpenAI(base_url=base_url, api_key=key or "EMPTY", timeout=timeout,
                                              max_retries=0)

                self._loop = _Loop(make)
                weakref.finalize(self, _Loop.close, self._loop)
                self._sem = asyncio.Semaphore(self.concurrency)
                self._prompts = asyncio.Semaphore(self.concurrency)
                self._pause_until = 0.0
                self._alock = asyncio.Lock()
            return self._loop

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        try:
            runner = self._runner()
        except BaseException:
            coro.close()
            raise
        return runner.run(coro)

    def _many(self, coros: list[Coroutine[Any, Any, Any]], on_result: Callable[[int, Any], None] | None) -> list[Any]:
        if not coros:
            return []
        try:
            runner = self._runner()
        except BaseException:
            for c in coros:
                c.close()
            raise

        async def bounded(c: Coroutine[Any, Any, Any]) -> Any:
            async with self._prompts:  # a prompt at a time per slot: prompts finish in order, a cut run keeps them
                return await c

        futures = [runner.submit(bounded(c)) for c in coros]
        index = {f: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(futures)
        try:
            for f in concurrent.futures.as_completed(futures):
                i = index[f]
                try:
                    out[i] = f.result()
                    if on_result is not None:
                        on_result(i, out[i])
                except Exception as e:
                    e.request_index = i  # type: ignore[attr-defined]
                    raise
        except BaseException:
            for f in futures:
                f.cancel()
            raise
        return out

    def _client(self) -> Any:
        assert self._loop is not None
        return self._loop.client

    def _redact(self, text: str) -> str:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return text.replace(key, "***") if key else text

    async def _call(self, route: str, fn: Callable[..., Any], *, retries: int | None = None, **kw: Any) -> Any:
        """One request through the SDK, retried with backoff; the parsed JSON answer (a dict).
        ``route``: a path under ``base_url`` or a whole URL (for messages)."""
        import openai

        url = self.base_url + route if route.startswith("/") else route
        attempts = (self.max_retries if retries is None else retries) + 1
        problem, wait = "", 0.0
        for attempt in range(attempts):
            delay = max(wait, self._pause_until - time.monotonic())
            if delay > 0:
                await _sleep(delay)
            wait = min(self.backoff_s * 2 ** attempt, 60.0)
            async with self._sem:
                self.requests_sent += 1
                try:
                    answer = await fn(**kw)
                except openai.APITimeoutError:
                    problem = f"no answer within timeout_s = {self.timeout_s:g} s"
                    continue
                except openai.APIConnectionError as e:
                    cause = e.__cause__ or e
                    problem = f"cannot connect ({type(cause).__name__}: {cause})"
                    continue
                except openai.APIStatusError as e:
                    status, text = e.status_code, self._redact(_body_text(e))
                    if _NO_LOGPROBS_RE.search(text):
                        raise LogprobsUnavailableError(
                            f"{url}: the server gives no log-probabilities (HTTP {status}: {text[:160]!r}), so it "
                            f"cannot score; {_SETTING}.") from None
                    if status in (408, 409, 429) or status >= 500:
                        problem = f"HTTP {status}: {text[:200]!r}"
                        after = _retry_after(e.response.headers)
                        if after is not None:
                            wait = max(wait, after)
                            self._pause_until = max(self._pause_until, time.monotonic() + after)
                        continue
                    if status in (400, 413, 422) and _CONTEXT_RE.search(text):
                        raise ContextLengthError(f"{url}: the text does not fit the model's context window "
                                                 f"(HTTP {status}: {text[:300]!r}).") from None
                    if status == 400 and "max_completion_tokens" in text and "max_tokens" in kw:
                        raise _UseMaxCompletionTokens() from None
                    hint = (f" (the key is read from ${self.api_key_env})" if self.api_key_env else
                            " (no API key was sent: name its environment variable, api_key_env)") \
                        if status in (401, 403) else ""
                    raise ServerError(f"{url}: HTTP {status}: {text[:300]!r}{hint}") from None
                except ValueError as e:  # a JSON content type with a body that is not JSON
                    raise ServerError(f"{url} answered with something that is not JSON ({e}).") from None
            if hasattr(answer, "to_dict"):
                data = answer.to_dict()
            else:
                data = answer
            if not isinstance(data, dict):
                raise ServerError(f"{url} answered with something that is not a JSON object: "
                                  f"{self._redact(str(data))[:200]!r}")
            return data
        raise ServerError(f"{url}: {problem} (after {attempts} attempts).")

    async def _post(self, url: str, body: dict[str, Any]) -> Any:
        client = self._client()
        return await self._call(url, client.post, path=url, body=body, cast_to=object)

    async def _amodel(self) -> None:
        client = self._client()
        listed = (await self._call("/models", client.get, path="/models", cast_to=object)).get("data")
        if not isinstance(listed, list):
            raise ServerError(f"{self.base_url}/models answered without a 'data' list of models.")
        ids = [m.get("id") if isinstance(m, dict) else None for m in listed]
        if len(ids) != 1 or not isinstance(ids[0], str):
            raise ValueError(f"the server at {self.base_url} lists {len(ids)} models ({ids[:5]}); "
                             f"pass model= or set ${_ENV_MODEL}.")
        self._model = ids[0]

    async def _amodel_name(self) -> str:
        if self._model is None:
            await self._amodel()
        assert self._model is not None
        return self._model

    # -- templates -------------------------------------------------------------------------------

    async def _aformat(self) -> PromptFormat:
        if self._format is None:
            async with self._alock:
                if self._format is None:
                    self._format = await self._render_on_server()
        return self._format

    def _root(self) -> str:
        return self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url

    async def _try_post(self, url: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The answer, or None where the server has no such route (404, 405; 501)."""
        import openai

        try:
            return await self._post(url, body)
        except ServerError as e:
            if isinstance(e.__context__, openai.NotFoundError) or re.search(r": HTTP (404|405|501):", str(e)):
                return None
            raise

    async def _render_on_server(self) -> PromptFormat:
        root, model = self._root(), await self._amodel_name()
        messages = [{"role": "user", "content": USER}, {"role": "assistant", "content": ANSWER}]
        applied = await self._try_post(root + "/apply-template", {"messages": messages})
        if applied is not None:  # llama.cpp's llama-server
            text = applied.get("prompt")
            if not isinstance(text, str):
                raise ServerError(f"{root}/apply-template answered without a string 'prompt'.")
            prefix = await self._llama_server_added_prefix(root)
            return PromptFormat.from_rendered(text, USER, ANSWER, strip_prefix=prefix,
                                              source=f"server:{root}/apply-template")
        chat = await self._try_post(root + "/tokenize", {"model": model, "messages": messages,
                                                         "add_generation_prompt": False, "add_special_tokens": False})
        if chat is not None:  # vLLM
            return await self._vllm_format(root, model, _ids(chat, f"{root}/tokenize"))
        raise LMError(
            f"{self.base_url}: the server renders no chat template (it answers neither llama.cpp's /apply-template "
            "nor vLLM's /tokenize with messages; llama-cpp-python's server has neither), and an instruction-tuned "
            "model must not be scored as plain text by accident. Name the template's source: prompt_format "
            "'gguf:PATH' (a GGUF file's) or 'hf:NAME_OR_DIR' (a Hugging Face tokenizer's), or 'plain' for a base "
            "model (an LM entry's chat_template; pragmodels lm score: --model FILE.gguf or --prompt-format plain).")

    async def _llama_server_added_prefix(self, root: str) -> str:
        with_special = _ids(await self._post(root + "/tokenize", {"content": "a", "add_special": True}), "/tokenize")
        without = _ids(await self._post(root + "/tokenize", {"content": "a", "add_special": False}), "/tokenize")
        added = with_special[:len(with_special) - len(without)]
        if not added:
            return ""
        text = (await self._post(root + "/detokenize", {"tokens": added})).get("content")
        return text if isinstance(text, str) else ""

    async def _vllm_format(self, root: str, model: str, chat_ids: list[int]) -> PromptFormat:
        async def detok(ids: list[int]) -> str:
            text = (await self._post(root + "/detokenize", {"model": model, "tokens": ids})).get("prompt")
            if not isinstance(text, str):
                raise ServerError(f"{root}/detokenize answered without a string 'prompt'.")
            return text

        async def tok(text: str, special: bool) -> list[int]:
            return _ids(await self._post(root + "/tokenize", {"model": model, "prompt": text,
                                                              "add_special_tokens": special}), f"{root}/tokenize")

        with_special, without = await tok("a", True), await tok("a", False)
        added = with_special[:len(with_special) - len(without)]
        prefix = await detok(added) if added else ""
        fmt = PromptFormat.from_rendered(await detok(chat_ids), USER, ANSWER, strip_prefix=prefix,
                                         source=f"server:{root}/tokenize")
        # the raw text, tokenized as /v1/completions will, must be the chat rendering's tokens
        again = await tok(fmt.prefix(USER) + ANSWER + fmt.end, True)
        if again != (chat_ids if chat_ids[:len(added)] == added else added + chat_ids):
            raise LMError(f"{root}: the chat template the server renders does not come back as the same tokens when "
                          f"sent as text ({len(again)} tokens against {len(chat_ids)}); name the template's source "
                          "instead (prompt_format 'gguf:PATH' or 'hf:NAME_OR_DIR').")
        return fmt

    # -- scoring ---------------------------------------------------------------------------------

    async def _ascore(self, prompt: str, conts: list[str], length_normalize: bool) -> np.ndarray:
        fmt = await self._aformat()
        prefix = fmt.prefix(prompt)
        if self._score_route is None:  # "auto": asked once, with the first text
            async with self._alock:
                if self._score_route is None:
                    first = await self._logprobs_answer(prefix + conts[0] + fmt.end, probe=True)
                    self._score_route = "prompt_logprobs" if first is not None else "echo"
        n_prefix, prefix_ids = await self._aprefix(prefix)
        results = await asyncio.gather(*(self._score_one(prefix, n_prefix, prefix_ids, c, fmt) for c in conts))
        if self._score_route == "echo" and not any(verified for _, verified in results):
            raise ServerError(
                f"{self.base_url}: none of the {len(conts)} echo answers for this prompt could be checked for a "
                "one-token shift (each prompt text ends with the text the server generated, or it generated "
                "nothing); refusing scores that may be shifted.")
        lps = [r for r, _ in results]
        return np.array([float(np.mean(x)) if length_normalize else float(np.sum(x)) for x in lps], dtype=np.float64)

    async def _aprefix(self, prefix: str) -> tuple[int, list[int] | None]:
        """The prompt's token count (and ids, where the server gives them).

        From the server's tokenizer where it has a route for it (llama-cpp-python's
        ``/extras/tokenize``, vLLM's ``/tokenize``), else from a short completion of the prompt. The
        tokenizer is preferred: llama-cpp-python's server, given a prompt it holds in its cache
        whole, evaluates the prompt's last token again as a single-token decode, whose logits differ
        from a batch's by up to 0.2 nats (SmolLM2) and then stand for the continuation's first token
        in every later echo of that prompt.
        """
        if prefix not in self._prefix_info:
            ids = await self._tokenize(prefix)
            if ids is not None:
                self._prefix_info[prefix] = (len(ids), ids)
                return self._prefix_info[prefix]
            data = await self._completion(prompt=prefix, max_tokens=1, temperature=0.0, n=1,
                                          extra_body={"return_token_ids": True}
                                          if self._score_route == "prompt_logprobs" else None)
            choice = _first_choice(data, "/completions", self.base_url)
            ids = choice.get("prompt_token_ids")
            ids = ids if isinstance(ids, list) and all(isinstance(i, int) for i in ids) else None
            self._prefix_info[prefix] = (_usage_prompt_tokens(data, self.base_url), ids)
        return self._prefix_info[prefix]

    async def _tokenize(self, text: str) -> list[int] | None:
        """The server's tokens of ``text`` as its completions would tokenize it; None where it has no
        route for that (found out once: llama-cpp-python's, then vLLM's)."""
        root, model = self._root(), await self._amodel_name()
        routes: dict[str, tuple[str, dict[str, Any]]] = {
            "llama-cpp-python": (root + "/extras/tokenize", {"model": model, "input": text}),
            "vllm": (root + "/tokenize", {"model": model, "prompt": text, "add_special_tokens": True})}
        if self._tokenize_route is None:
            async with self._alock:
                for name, (url, body) in routes.items():
                    if self._tokenize_route is not None:
                        break
                    try:
                        answer = await self._call(url, self._client().post, retries=0, path=url, body=body,
                                                  cast_to=object)
                    except ServerError:
                        continue  # no such route (404), or one that takes another body (llama-server's /tokenize)
                    if isinstance(answer.get("tokens"), list):
                        self._tokenize_route = name
                        return _ids(answer, url)
                if self._tokenize_route is None:
                    self._tokenize_route = "none"
        if self._tokenize_route == "none":
            return None
        url, body = routes[self._tokenize_route]
        return _ids(await self._post(url, body), url)

    async def _completion(self, **kw: Any) -> dict[str, Any]:
        client = self._client()
        model = await self._amodel_name()
        if kw.get("extra_body") is None:
            kw.pop("extra_body", None)
        return await self._call("/completions", client.completions.create, model=model, **kw)

    async def _score_one(self, prefix: str, n_prefix: int, prefix_ids: list[int] | None, cont: str,
                         fmt: PromptFormat) -> tuple[np.ndarray, bool]:
        text = prefix + cont + fmt.end
        if self._score_route == "prompt_logprobs":
            answer = await self._logprobs_answer(text, probe=False)
            assert answer is not None
            return self._from_prompt_logprobs(answer, prefix, n_prefix, prefix_ids, cont, fmt), True
        echo = await self._echo(text)
        return self._continuation_logprobs(echo, prefix, n_prefix, cont, fmt), echo.verified

    # -- vLLM's prompt_logprobs ------------------------------------------------------------------

    async def _logprobs_answer(self, text: str, *, probe: bool) -> dict[str, Any] | None:
        """vLLM's answer with ``prompt_logprobs``; with ``probe``, None where the server ignores or refuses them."""
        try:
            data = await self._completion(prompt=text, max_tokens=1, temperature=0.0, n=1,
                                          extra_body={"prompt_logprobs": 0, "return_token_ids": True})
        except LogprobsUnavailableError:
            if probe:
                return None
            raise
        except ServerError as e:
            if probe and re.search(r": HTTP (400|422):", str(e)):  # a strict server that refuses the field
                return None
            raise
        choice = _first_choice(data, "/completions", self.base_url)
        if not isinstance(choice.get("prompt_logprobs"), list):
            if probe:
                return None
            raise ServerError(f"{self.base_url}/completions answered without choices[0].prompt_logprobs (a list); "
                              "the server does not give them: use score_api 'echo'.")
        return data

    def _from_prompt_logprobs(self, data: dict[str, Any], prefix: str, n_prefix: int, prefix_ids: list[int] | None,
                              cont: str, fmt: PromptFormat) -> np.ndarray:
        where = f"{self.base_url}/completions"
        choice = _first_choice(data, "/completions", self.base_url)
        entries = choice["prompt_logprobs"]
        ids = choice.get("prompt_token_ids")
        ids = ids if isinstance(ids, list) and len(ids) == len(entries) else None
        n = len(entries)
        k = n - n_prefix
        target = cont + fmt.end
        if k < 1 or k >= n:
            raise ServerError(f"{where}: the text has {n} prompt log-prob entries and its prompt {n_prefix} tokens, so "
                              f"the continuation {cont!r} would be {k} tokens; the server's token counts do not add up.")
        if ids is not None and prefix_ids is not None and ids[:n_prefix] != prefix_ids:
            raise ServerError(f"{where}: the tokens of prompt + {target!r} do not begin with the prompt's own tokens: "
                              "the continuation's first token merges with the prompt's last. Refusing the score.")
        tokens: list[Any] = []
        values: list[float] = []
        for pos in range(n - k, n):
            entry = entries[pos]
            if not isinstance(entry, dict) or not entry:
                raise ServerError(f"{where}: prompt_logprobs[{pos}] is {entry!r}; expected a map of token ids.")
            if ids is not None:
                lp = entry.get(str(ids[pos]), entry.get(ids[pos]))
            elif len(entry) == 1:
                lp = next(iter(entry.values()))
            else:
                raise ServerError(f"{where}: prompt_logprobs[{pos}] holds {len(entry)} tokens and the server gave no "
                                  "prompt_token_ids to tell which is the prompt's.")
            value = lp.get("logprob") if isinstance(lp, dict) else lp
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ServerError(f"{where}: prompt_logprobs[{pos}] gives no log-probability for the prompt's token "
                                  f"(got {lp!r}).")
            tokens.append(lp.get("decoded_token") if isinstance(lp, dict) else None)
            values.append(float(value))
        if all(isinstance(t, str) for t in tokens) and not _spells(tokens, target):
            raise ServerError(f"{where}: the last {k} prompt tokens {tokens!r} do not spell the continuation "
                              f"{target!r}: its first token merges with the prompt's last, or the entries are "
                              "misaligned. Refusing the score.")
        return _checked_logprobs(values, target, where)

    # -- echo --------------------------------------------------------------------------------

    async def _echo(self, text: str) -> _Echo:
        path = "/completions"
        data = await self._completion(prompt=text, echo=True, logprobs=1, max_tokens=1, temperature=0.0, n=1)
        where = f"{self.base_url}{path}"
        choice = _first_choice(data, path, self.base_url)
        full = choice.get("text")
        lp = choice.get("logprobs")
        if not isinstance(full, str):
            raise ServerError(f"{where} answered without a string choices[0].text.")
        if not isinstance(lp, dict):
            raise LogprobsUnavailableError(f"{where} answered without choices[0].logprobs (got {lp!r}): the server "
                                           f"gives no log-probabilities, so it cannot score; {_SETTING}.")
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
            raise LogprobsUnavailableError(f"{where}: with echo=True the answer's text does not begin with the prompt: "
                                           f"the server does not echo prompts, so it cannot score; {_SETTING}.")
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

    def _continuation_logprobs(self, echo: _Echo, prefix: str, n_prefix: int, cont: str,
                               fmt: PromptFormat) -> np.ndarray:
        where = f"{self.base_url}/completions"
        k = echo.prompt_tokens - n_prefix
        target = cont + fmt.end
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
        return _checked_logprobs([float(v) for v in vals if v is not None], target, where)

    # -- sampling ------------------------------------------------------------------------------

    def _check_sample(self, n: object, temperature: object, max_tokens: object, stop: object,
                      answer_prefix: str) -> None:
        check_sampling(n, max_tokens, temperature, zero_temperature=True)
        if isinstance(stop, str):
            raise ValueError(f"stop must be a list of strings; got the string {stop!r}.")
        if answer_prefix and self.sample_api == "chat":
            raise ValueError("answer_prefix needs sample_api='completions' (a chat API cannot continue an answer).")

    async def _asample(self, prompt: str, n: int, temperature: float, max_tokens: int, stop: list[str], seed: int,
                       answer_prefix: str) -> list[str]:
        if self.sample_api == "chat":
            body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}]}
            path, stops = "/chat/completions", stop
        else:
            fmt = await self._aformat()
            body = {"prompt": fmt.prefix(prompt) + answer_prefix}
            path, stops = "/completions", stop + ([fmt.end] if fmt.end and fmt.end not in stop else [])
        body |= {"temperature": temperature, "top_p": 1.0}
        if stops:
            body["stop"] = stops
        if self.sampling_params:
            body["extra_body"] = dict(self.sampling_params)

        async def draw(first_seed: int, k: int) -> list[str]:
            texts = await self._draw(path, body, max_tokens, first_seed, k)
            if len(texts) not in (1, k) or (len(texts) == 1 and k > 1 and self._n_honoured):
                raise ServerError(f"{self.base_url}{path}: asked for n = {k} answers, got {len(texts)}.")
            return [answer_prefix + t for t in texts]

        texts: list[str] = []
        if n > 1 and self._n_honoured is not False:
            texts = await draw(seed, n)
            if len(texts) == n:
                self._n_honoured = True
                return texts
            self._n_honoured = False  # one choice came back: the server ignores n (llama-cpp-python)
        rest = await asyncio.gather(*(draw(seed + i, 1) for i in range(len(texts), n)))
        return texts + [t for r in rest for t in r]

    async def _draw(self, path: str, body: dict[str, Any], max_tokens: int, seed: int, k: int) -> list[str]:
        client = self._client()
        fn = client.chat.completions.create if path == "/chat/completions" else client.completions.create
        model = await self._amodel_name()
        try:
            data = await self._call(path, fn, model=model, n=k, seed=seed, **{self._max_tokens_field: max_tokens},
                                    **body)
        except _UseMaxCompletionTokens:  # OpenAI's reasoning models
            self._max_tokens_field = "max_completion_tokens"
            data = await self._call(path, fn, model=model, n=k, seed=seed, max_completion_tokens=max_tokens, **body)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not all(isinstance(c, dict) for c in choices):
            raise ServerError(f"{self.base_url}{path} answered without a non-empty 'choices' list "
                              f"(keys: {sorted(data)[:10]}).")
        out = []
        for c in sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0):
            message = c.get("message")
            text = (message.get("content") if isinstance(message, dict) else None) if path != "/completions" \
                else c.get("text")
            if not isinstance(text, str):
                where = "message.content" if path != "/completions" else "text"
                raise ServerError(f"{self.base_url}{path} answered without a string choices[].{where} (got {text!r}; "
                                  f"finish_reason {c.get('finish_reason')!r}).")
            out.append(text)
        return out


class _UseMaxCompletionTokens(Exception):
    """The model refuses ``max_tokens`` and asks for ``max_completion_tokens`` (OpenAI's reasoning models)."""


def _body_text(e: Any) -> str:
    try:
        return str(e.response.text)
    except Exception:  # noqa: BLE001 - a body that cannot be read: the SDK's message
        return str(getattr(e, "message", e))


def _retry_after(headers: Any) -> float | None:
    """Seconds a ``Retry-After`` (or ``retry-after-ms``) header asks for, if it is a sane number."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            value = float(ms) / 1000
        else:
            raw = headers.get("retry-after")
            if raw is None:
                return None
            try:
                value = float(raw)
            except ValueError:
                value = parsedate_to_datetime(raw).timestamp() - time.time()
    except (TypeError, ValueError):
        return None
    return value if np.isfinite(value) and 0 <= value <= _MAX_WAIT_S else None


def _ids(data: Any, where: str) -> list[int]:
    ids = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ServerError(f"{where} answered without a list of token ids 'tokens'.")
    return ids


def _checked_logprobs(values: list[float], target: str, where: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(arr) | (arr == -np.inf)) or np.any(arr > 1e-4):  # float32 rounding near 0
        raise ServerError(f"{where}: the log-probabilities for {target!r} are not <= 0: {values!r}.")
    return np.minimum(arr, 0.0)


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
