"""The OpenAI-compatible HTTP backend (the ``openai`` SDK) against a real server and against made-up ones.

The real server is llama-cpp-python's own (``python -m llama_cpp.server``) with SmolLM2-135M,
started once per session on loopback (tests/lm/conftest.py); the reference is the in-process
backend on the same GGUF file. Made-up servers (vLLM's and llama.cpp's llama-server's answers,
servers that fail, rate-limit or echo a key back) are a tiny ``http.server`` in a thread.
llama-cpp-python's server spends 30-80 ms of CPU per echoed token (it sorts the vocabulary in
Python for each), so the scored prompt is short: the SmolLM2 chat markup without the system turn
(21 tokens with an answer). No test calls the internet.
"""

from __future__ import annotations

import gc
import json
import logging
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from pragmodels.lm import (
    CachedLM,
    ContextLengthError,
    LanguageModel,
    LlamaCppLM,
    LMError,
    LogprobsUnavailableError,
    PromptFormat,
    SampleRequest,
    ScoreCache,
    ScoreRequest,
    ServerError,
    gguf_prompt_format,
    smollm2_path,
)
from pragmodels.lm.openai_http import LLAMA_CPP_PURE_SAMPLING, OpenAICompatibleLM
from tests.lm.conftest import free_port

# SmolLM2's chat markup without the system turn: begins with <|im_start|>, SmolLM2's BOS token,
# which is what keeps llama-cpp-python's echo aligned (module docstring of openai_http)
FMT = PromptFormat("chat", "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>")
PROMPT = "Warm?"
ANSWERS = [f"<answer>{v}</answer>" for v in range(0, 101, 5)]
KEY = "sk-test-0123456789abcdefTOPSECRET"


@pytest.fixture(scope="session")
def http_lm(server_url):
    with OpenAICompatibleLM(server_url, "smollm2", prompt_format=FMT) as lm:
        yield lm


# the server spends 30-80 ms of CPU per echoed token: the default run scores every fourth answer
# (0, 20, ..., 100: one, two and three digits), `make test-all` all 21
@pytest.mark.parametrize("answers", [ANSWERS[::4], pytest.param(ANSWERS, marks=pytest.mark.slow)], ids=["6", "21"])
def test_scores_equal_the_in_process_backend(http_lm, answers):
    ref = LlamaCppLM(smollm2_path(), n_ctx=512, n_threads=1, prompt_format=FMT)  # one thread, as the server
    got = http_lm.score(PROMPT, answers)
    want = ref.score(PROMPT, answers)
    # the same llama.cpp build on the same file and tokens: equal up to float32 logit noise from
    # different batch splits (the server evaluates each text after its cached prefix, the
    # in-process backend in its own prefix order); measured max difference ~1e-6
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-3)
    assert np.all(got < 0) and np.exp(got).sum() <= 1 + 1e-6
    mean, = http_lm.score(PROMPT, ANSWERS[15:16], length_normalize=True)
    assert mean == pytest.approx(ref.score(PROMPT, ANSWERS[15:16], length_normalize=True)[0], abs=1e-3)
    assert http_lm._score_route == "echo"  # llama-cpp-python ignores vLLM's prompt_logprobs: found out, echo used
    # the prompt's tokens counted by its tokenizer, not by a completion of the prompt (which makes the server
    # decode the prompt's last token alone: later scores of the prompt 0.2 nats off; test_score_file)
    assert http_lm._tokenize_route == "llama-cpp-python"


def test_a_shifted_echo_is_refused(server_url):
    # a plain-text prompt does not begin with SmolLM2's BOS token: llama-cpp-python 0.3.36 shifts
    # its echo log-probabilities by one token, which must not come back as scores
    with OpenAICompatibleLM(server_url, "smollm2", prompt_format="plain") as lm, \
            pytest.raises(ServerError, match="SHIFTED BY ONE TOKEN"):
        lm.score("The capital of France is", ["Paris."])


def test_gguf_prompt_format_is_the_in_process_one(smollm2):
    fmt = gguf_prompt_format(smollm2_path())
    assert fmt == smollm2.prompt_format and fmt.source == f"gguf:{smollm2_path()}"
    assert fmt.before.startswith("<|im_start|>system") and FMT.between == fmt.between and FMT.end == fmt.end


def test_an_instruct_model_is_never_scored_as_plain_text_by_accident(server_url):
    """Issue 35, item 3: without a template source the server is asked to render its own; llama-cpp-python's
    server cannot (no /apply-template, no /tokenize), so scoring stops with one line naming the settings."""
    with OpenAICompatibleLM(server_url, "smollm2") as lm:
        assert lm.template_source == "server"
        with pytest.raises(LMError) as e:
            lm.score(PROMPT, ANSWERS[:1])
    message = str(e.value)
    assert "\n" not in message and "renders no chat template" in message
    assert all(s in message for s in ("'gguf:PATH'", "'hf:NAME_OR_DIR'", "'plain'", "--prompt-format plain"))
    assert lm.requests_sent == 2  # /apply-template and /tokenize: nothing was scored


def test_sampling_on_both_routes(server_url, http_lm):
    a = http_lm.sample(PROMPT, 3, temperature=1.0, max_tokens=6, seed=5)
    assert len(a) == 3 and all(isinstance(t, str) for t in a)
    assert http_lm.sample(PROMPT, 3, temperature=1.0, max_tokens=6, seed=5) == a  # seed + i per request
    assert http_lm._n_honoured is False  # llama-cpp-python answers one choice for n = 3: a request per sample
    with OpenAICompatibleLM(server_url, sample_api="chat", sampling_params=LLAMA_CPP_PURE_SAMPLING) as chat:
        sent = chat.requests_sent
        b = chat.sample(PROMPT, 4, max_tokens=4, stop=["\n"], seed=1)
        assert len(b) == 4 and chat.requests_sent - sent == 5  # /models, then n = 4 (one answer), then 3 more
        assert chat.sample(PROMPT, 4, max_tokens=4, stop=["\n"], seed=1) == b
        assert chat.identity == f"openai:{server_url}|{smollm2_path()}"  # the one model the server lists
        assert isinstance(chat, LanguageModel)
        with pytest.raises(ValueError, match="answer_prefix needs sample_api='completions'"):
            chat.sample(PROMPT, 1, answer_prefix="<answer>")


def test_the_chat_route_needs_no_template_through_the_cache(server_url, tmp_path):
    """A chat model's samples are cached without a PromptFormat (a hosted chat model has none to give;
    the cache asked for one, which llama-cpp-python's server cannot render)."""
    with OpenAICompatibleLM(server_url, "smollm2", sample_api="chat") as chat:
        lm = CachedLM(chat, ScoreCache(tmp_path / "c.sqlite"))
        texts = lm.sample(PROMPT, 2, max_tokens=3, seed=0)
        assert lm.sample(PROMPT, 2, max_tokens=3, seed=0) == texts and lm.cache.stats.hits == 2


def _is_option(options: list[str]) -> Callable[[str], str | None]:
    return lambda text: text if text in options else None


@pytest.mark.parametrize("n", [60, pytest.param(400, marks=pytest.mark.slow)])
def test_chat_samples_match_the_scored_probabilities(server_url, smollm2, n):
    """Issue 35, item 8: the same model's sampled and scored semantics agree within binomial error.

    A chat sample is exactly an option (e.g. "No" then <|im_end|>) with the probability the scorer
    gives that option through its end-of-turn token, if the server's chat template is the GGUF
    format and sampling is pure (llama-cpp-python truncates with top_k=40, min_p=0.05 otherwise).
    The scores: the in-process backend (equal to the server's to 1e-6 above). 4 standard errors.
    """
    from pragmodels.lm import sample_distribution

    prompt, options = "Answer with one word, Yes or No: is ice cold?", ["Yes", "No", "Yes.", "No."]
    p = np.exp(smollm2.score(prompt, options))  # about 0.04, 0.21, 0.04, 0.15: the rest is other text
    with OpenAICompatibleLM(server_url, sample_api="chat", sampling_params=LLAMA_CPP_PURE_SAMPLING) as chat:
        dist = sample_distribution(chat, prompt, _is_option(options), options, n, max_draws=n, max_tokens=8)
    assert dist.n_samples == n
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(dist.counts / n - p) <= 4 * se + 1e-9), (dist.counts / n, p)
    total = p.sum()
    assert abs(dist.counts.sum() / n - total) <= 4 * np.sqrt(total * (1 - total) / n)


def test_context_overflow_on_the_server(http_lm):
    with pytest.raises(ContextLengthError):
        http_lm.score("word " * 600, ["<answer>5</answer>"])


@pytest.mark.lm
@pytest.mark.subprocess
def test_a_server_without_log_probabilities_names_the_setting(no_logprobs_url):
    """Issue 35, item 8: scoring stops at the first answer with one line naming the setting to change
    (no retries: the server's HTTP 500 says what it is); sampling on the same server works."""
    with OpenAICompatibleLM(no_logprobs_url, "smollm2", prompt_format=FMT) as lm:
        with pytest.raises(LogprobsUnavailableError) as e:
            lm.score(PROMPT, ANSWERS[:2])
        assert lm.requests_sent <= 4  # probe, prefix, the echoes: none retried
        assert len(lm.sample(PROMPT, 2, max_tokens=3)) == 2
    message = str(e.value)
    assert "\n" not in message and '"semantics": "samples"' in message and "--logits_all true" in message


def test_a_down_server_fails_quickly():
    url = f"http://127.0.0.1:{free_port()}/v1"
    t = time.monotonic()
    with OpenAICompatibleLM(url, "m", max_retries=2, backoff_s=0.05, timeout_s=5, prompt_format="plain") as lm, \
            pytest.raises(ServerError, match=f"{url}/completions: cannot connect.*after 3 attempts"):
        lm.score("Q", ["A"])
    assert time.monotonic() - t < 5
    assert lm.requests_sent == 3


# -- a made-up server ------------------------------------------------------------------------


class _Fake(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and body in one write (no Nagle delay)

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle(None)

    def do_POST(self) -> None:
        self._handle(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

    def _handle(self, body: Any) -> None:
        server: FakeServer = self.server  # type: ignore[assignment]
        with server.lock:
            server.seen.append((self.path, body, {k.lower(): v for k, v in self.headers.items()}, time.monotonic()))
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            if self.path.startswith("/v1/") or server.root_routes:
                status, payload, headers = server.respond(self.path, body)
            else:  # /extras/tokenize, /tokenize, /apply-template: not here unless a test says so
                status, payload, headers = 404, {"detail": "Not Found"}, {}
        finally:
            with server.lock:
                server.in_flight -= 1
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Fake)
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.seen: list[tuple[str, Any, dict[str, str], float]] = []
        self.in_flight = self.max_in_flight = 0
        self.root_routes = False
        self.respond: Callable[[str, Any], tuple[int, Any, dict[str, str]]] = lambda path, body: echo_answer(body)

    def paths(self) -> list[str]:
        return [p for p, *_ in self.seen]


def echo_answer(body: Any, mode: str = "ok") -> tuple[int, Any, dict[str, str]]:
    """An echo-capable server with a per-character "tokenizer": every character a token at -0.5."""
    if mode == "503":
        return 503, b"overloaded", {}
    if mode == "context":
        return 400, {"error": {"message": "This model's maximum context length is 512 tokens"}}, {}
    if mode == "not json":
        return 200, b"<html>hello</html>", {}
    prompt = body.get("prompt", "")
    tokens = list(prompt) + ["!"]
    lp: dict[str, Any] = {"tokens": tokens, "text_offset": list(range(len(tokens))),
                          "token_logprobs": [None] + [-0.5] * (len(tokens) - 1)}
    if mode == "shifted":
        for k in lp:
            lp[k] = lp[k][:-1]
    if mode == "short list":
        lp["token_logprobs"] = lp["token_logprobs"][:-2]
    choice: dict[str, Any] = {"text": (prompt if body.get("echo") else "") + "!", "index": 0,
                              "logprobs": lp if body.get("echo") else None, "finish_reason": "length"}
    if mode == "no logprobs":
        choice["logprobs"] = None
    n_prompt = len(prompt) + (1 if mode == "miscounted" and body.get("echo") else 0)
    return 200, {"choices": [choice], "usage": {"prompt_tokens": n_prompt, "completion_tokens": 1}}, {}


@pytest.fixture(scope="module")
def fake_server():
    srv = FakeServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def fake(fake_server, monkeypatch):
    fake_server.reset()
    made: list[OpenAICompatibleLM] = []

    def make(**kw):
        kw = {"max_retries": 1, "backoff_s": 0.01, "prompt_format": "plain"} | kw
        made.append(OpenAICompatibleLM(f"http://127.0.0.1:{fake_server.server_address[1]}", kw.pop("model", "fake"),
                                       **kw))
        return made[-1]

    make.server = fake_server  # type: ignore[attr-defined]
    yield make
    for lm in made:  # their connections and loops, closed here rather than by the garbage collector
        lm.close()


def test_arithmetic_on_a_well_formed_echo(fake):
    lm = fake()
    # plain format: "Q\n" + continuation; per-character tokens at -0.5 each
    np.testing.assert_allclose(lm.score("Q", ["ab", "abcd"]), [-1.0, -2.0])
    np.testing.assert_allclose(lm.score("Q", ["abcd"], length_normalize=True), [-0.5])
    assert lm.identity.startswith("openai:http://127.0.0.1:") and lm.identity.endswith("/v1|fake")
    assert lm._score_route == "echo"  # the probe's answer had no prompt_logprobs
    # asked once: the probe; the server's tokenizer routes (none here); a prefix and two echoes, then one echo
    assert fake.server.paths() == ["/v1/completions", "/extras/tokenize", "/tokenize"] + ["/v1/completions"] * 4
    assert [b.get("prompt_logprobs") for _, b, *_ in fake.server.seen] == [0, None, None] + [None] * 4


@pytest.mark.parametrize(("mode", "error", "match"), [
    ("not json", ServerError, "not JSON"),
    ("no logprobs", LogprobsUnavailableError, "without choices\\[0\\].logprobs.*\"semantics\": \"samples\""),
    ("short list", ServerError, "differ in length"),
    ("shifted", ServerError, "SHIFTED BY ONE TOKEN"),
    ("miscounted", ServerError, "do not spell the continuation"),
    ("503", ServerError, "HTTP 503.*after 2 attempts"),
    ("context", ContextLengthError, "context window"),
])
def test_bad_answers(fake, mode, error, match):
    fake.server.respond = lambda path, body: echo_answer(body, mode)
    lm = fake()
    with pytest.raises(error, match=match):
        lm.score("Q", ["ab"])


@pytest.mark.parametrize("where", ["another thread", "the loop's thread"])
def test_a_model_dropped_unclosed_closes_its_client_and_loop(fake_server, where):
    """A model garbage-collected without ``close()`` closes its client and its event loop, wherever
    the collector runs: a loop that was only stopped warns of its unclosed sockets later, in
    whatever test the collector happens to run (the CI failure of 2026-12-07 was such a warning)."""
    fake_server.reset()  # not the `fake` fixture: it would close the model itself
    lm = OpenAICompatibleLM(f"http://127.0.0.1:{fake_server.server_address[1]}", "fake", prompt_format="plain",
                            max_retries=1, backoff_s=0.01)
    np.testing.assert_allclose(lm.score("Q", ["ab"]), [-1.0])
    runner = lm._loop
    client = runner.client
    assert runner.thread.is_alive() and not client.is_closed()
    if where == "another thread":
        del lm
        gc.collect()
    else:  # what the finaliser does when the collector runs on the loop's own thread

        async def collected_here() -> None:
            runner.close()

        runner.submit(collected_here())
        runner.thread.join(20)
    assert not runner.thread.is_alive()
    assert runner.loop.is_closed()
    assert client.is_closed()


def test_an_echo_that_cannot_be_checked_for_a_shift(fake):
    # the fake generates "!": a text ending in "!" cannot tell a shifted echo from a correct one
    lm = fake()
    with pytest.raises(ServerError, match="none of the 1 echo answers"):
        lm.score("Q", ["a!"])
    # another answer for the same prompt checks it (a shift depends on the prompt's first token)
    np.testing.assert_allclose(lm.score("Q", ["a!", "ab"]), [-1.0, -1.0])


def test_timeout_is_bounded(fake):
    def slow(path, body):
        time.sleep(1.5)
        return echo_answer(body)

    fake.server.respond = slow
    lm = fake(timeout_s=0.3, max_retries=0)
    t = time.monotonic()
    with pytest.raises(ServerError, match="no answer within timeout_s = 0.3 s"):
        lm.sample("Q", 1)
    assert time.monotonic() - t < 1.4


def test_configuration_from_the_environment(fake, monkeypatch):
    url = f"http://127.0.0.1:{fake.server.server_address[1]}"
    monkeypatch.setenv("PRAGMODELS_LM_BASE_URL", url)
    monkeypatch.setenv("PRAGMODELS_LM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-server")
    monkeypatch.setenv("MY_KEY", KEY)
    with OpenAICompatibleLM(prompt_format="plain", api_key_env="MY_KEY") as lm:
        assert lm.identity == f"openai:{url}/v1|env-model"
        assert lm.sample("Q", 2, max_tokens=3) == ["!", "!"]
    assert {h.get("authorization") for *_, h, _ in fake.server.seen} == {f"Bearer {KEY}"}
    fake.server.reset()
    with OpenAICompatibleLM(prompt_format="plain") as lm:  # no api_key_env: no key, $OPENAI_API_KEY is not read
        lm.sample("Q", 1, max_tokens=3)
    assert {h.get("authorization") for *_, h, _ in fake.server.seen} == {"Bearer EMPTY"}
    monkeypatch.delenv("PRAGMODELS_LM_BASE_URL")
    with pytest.raises(ValueError, match="PRAGMODELS_LM_BASE_URL"):
        OpenAICompatibleLM()
    with pytest.raises(ValueError, match=r"\$NOT_SET_ANYWHERE is not set"):
        OpenAICompatibleLM(url, "m", api_key_env="NOT_SET_ANYWHERE")


def test_bad_input(fake):
    lm = fake()
    with pytest.raises(ValueError, match="continuations is empty"):
        lm.score("Q", [])
    with pytest.raises(ValueError, match="max_tokens = 0"):
        lm.sample("Q", 1, max_tokens=0)
    with pytest.raises(ValueError, match="expected an http"):
        OpenAICompatibleLM("localhost:8080", "m")
    with pytest.raises(ValueError, match="concurrency = 0; expected an int >= 1"):
        OpenAICompatibleLM("http://127.0.0.1:9", "m", concurrency=0)
    with pytest.raises(ValueError, match="score_api = 'logits'"):
        OpenAICompatibleLM("http://127.0.0.1:9", "m", score_api="logits")
    with pytest.raises(ValueError, match="chat template source 'chat'; expected one of 'server', 'plain'"):
        OpenAICompatibleLM("http://127.0.0.1:9", "m", prompt_format="chat")
    assert fake.server.seen == []  # nothing was sent


@pytest.mark.subprocess
def test_the_package_imports_without_the_sdk():
    code = ("import sys; sys.modules['openai'] = None; import pragmodels.lm, pragmodels.lm.openai_http as openai_http; "
            "lm = openai_http.OpenAICompatibleLM('http://127.0.0.1:9', 'x', prompt_format='plain'); "
            "print(lm.prompt_format.name)\n"
            "try:\n    lm.sample('Q', 1)\nexcept pragmodels.lm.LMError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["plain", "the openai package is not installed: pip install 'pragmodels[lm]'."]


# -- sampling: n, max_completion_tokens --------------------------------------------------------


def _chat_answer(body: Any, n: int | None = None) -> tuple[int, Any, dict[str, str]]:
    k = body.get("n", 1) if n is None else n
    choices = [{"index": i, "message": {"role": "assistant", "content": f"s{body.get('seed')}-{i}"},
                "finish_reason": "stop"} for i in reversed(range(k))]  # out of order: sorted by index
    return 200, {"choices": choices, "usage": {"prompt_tokens": 3, "completion_tokens": k}}, {}


def test_n_is_one_request_where_the_server_honours_it(fake):
    """Issue 35, item 2: a server that honours n (vLLM, OpenAI) answers n samples in one request; the
    chat route sends messages, temperature, max_tokens, stop, n and seed."""
    fake.server.respond = lambda path, body: _chat_answer(body)
    lm = fake(sample_api="chat")
    assert lm.sample("Q", 4, temperature=0.7, max_tokens=5, stop=["\n"], seed=10) == [f"s10-{i}" for i in range(4)]
    (path, body, *_), = fake.server.seen
    assert path == "/v1/chat/completions" and lm._n_honoured is True
    assert body == {"model": "fake", "messages": [{"role": "user", "content": "Q"}], "temperature": 0.7, "top_p": 1.0,
                    "max_tokens": 5, "stop": ["\n"], "n": 4, "seed": 10}
    fake.server.respond = lambda path, body: _chat_answer(body, n=2)  # fewer than asked, where n is honoured
    with pytest.raises(ServerError, match="asked for n = 3 answers, got 2"):
        lm.sample("Q", 3)


def test_a_model_that_wants_max_completion_tokens(fake):
    def respond(path, body):
        if "max_tokens" in body:
            return 400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                              "Use 'max_completion_tokens' instead."}}, {}
        return _chat_answer(body)

    fake.server.respond = respond
    lm = fake(sample_api="chat")
    assert lm.sample("Q", 2, max_tokens=7) == ["s0-0", "s0-1"]
    assert lm.sample("Q", 1, max_tokens=7) == ["s0-0"]  # remembered: no second refusal
    assert [b.get("max_completion_tokens") for _, b, *_ in fake.server.seen] == [None, 7, 7]


# -- rate limits and concurrency ---------------------------------------------------------------


def test_retry_after_is_honoured_by_every_request(fake):
    """Issue 35, item 4: a 429 with Retry-After: 1 delays the retry by a second (backoff_s is 0.01),
    and a request that starts after it waits too (the pause is shared by the requests in flight)."""
    first = threading.Lock()

    def respond(path, body):
        if first.acquire(blocking=False):  # the first request to get here
            return 429, {"error": {"message": "rate limited"}}, {"Retry-After": "1"}
        time.sleep(0.3)
        return _chat_answer(body, n=1)

    fake.server.respond = respond
    lm = fake(sample_api="chat", concurrency=2, max_retries=2)
    t0 = time.monotonic()
    out = lm.sample_many([SampleRequest("Q", 1, seed=s) for s in range(3)])
    assert out == [["s0-0"], ["s1-0"], ["s2-0"]]
    arrivals = sorted(t - t0 for *_, t in fake.server.seen)
    assert len(arrivals) == 4  # one retried
    # the first two at once (one gets 429); the third after the second's slot frees (0.3 s) but then waits
    # for the pause; the retry after Retry-After
    assert arrivals[1] < 0.25 and arrivals[2] >= 0.95 and arrivals[3] >= 0.95


def test_requests_in_flight_are_bounded_and_overlap(fake):
    def respond(path, body):
        time.sleep(0.2)
        return echo_answer(body)

    fake.server.respond = respond
    lm = fake(concurrency=3)
    requests = [ScoreRequest(f"Q{i}", ("ab", "cd", "ef")) for i in range(4)]
    seen: list[int] = []
    out = lm.score_many(requests, on_result=lambda i, s: seen.append(i))
    for r in out:
        np.testing.assert_allclose(r, [-1.0, -1.0, -1.0])
    # overlap is shown by the server, not by a wall time (these machines are noisy): 3 requests were in
    # flight at once, never more; the throughput is measured in benchmarks/lm_server_throughput.py
    assert sorted(seen) == [0, 1, 2, 3] and fake.server.max_in_flight == 3
    assert len(fake.server.seen) == 1 + 2 + 4 * 4  # the probe, the tokenizer routes, a prefix and 3 echoes per prompt


# -- vLLM: prompt_logprobs and its tokenizer ---------------------------------------------------


def _vllm_answer(body: Any, *, merge: bool = False, ids: bool = True) -> tuple[int, Any, dict[str, str]]:
    """vLLM's /v1/completions with prompt_logprobs=0 and return_token_ids: a per-character tokenizer
    with BOS id 1 first; token c has id ord(c) + 100 and log-prob -0.25."""
    text = body["prompt"]
    tids = [1] + [ord(c) + 100 for c in text]
    if merge and "\na" in text:  # "\n" and "a" as one token: the prompt's last and the continuation's first
        at = text.index("\na") + 1
        tids = tids[:at] + [999] + tids[at + 2:]
    entries: list[Any] = [None] + [{str(t): {"logprob": -0.25, "rank": 1, "decoded_token": chr(t - 100) if t != 999
                                             else "\na"}} for t in tids[1:]]
    choice: dict[str, Any] = {"index": 0, "text": "!", "logprobs": None, "finish_reason": "length"}
    if body.get("prompt_logprobs") is not None:
        choice["prompt_logprobs"] = entries
    if ids and body.get("return_token_ids"):
        choice["prompt_token_ids"] = tids
    return 200, {"choices": [choice], "usage": {"prompt_tokens": len(tids), "completion_tokens": 1}}, {}


def test_vllm_prompt_logprobs_are_found_and_used(fake):
    """Issue 35, item 4: where the server answers with prompt_logprobs (vLLM), they are used (no echo):
    the continuation's entries are picked by token id."""
    fake.server.respond = lambda path, body: _vllm_answer(body)
    lm = fake()
    np.testing.assert_allclose(lm.score("Q", ["ab", "abcd"]), [-0.5, -1.0])
    assert lm._score_route == "prompt_logprobs"
    assert not any(b.get("echo") for _, b, *_ in fake.server.seen)
    fake.server.reset()
    fake.server.respond = lambda path, body: _vllm_answer(body, merge=True)
    with pytest.raises(ServerError, match="do not begin with the prompt's own tokens"):
        fake(score_api="prompt_logprobs").score("Q", ["ab"])


def test_prompt_logprobs_without_token_ids(fake):
    fake.server.respond = lambda path, body: _vllm_answer(body, ids=False)
    np.testing.assert_allclose(fake(score_api="prompt_logprobs").score("Q", ["ab"]), [-0.5])  # one token per entry

    def two_per_entry(path, body):
        status, data, h = _vllm_answer(body, ids=False)
        for e in data["choices"][0].get("prompt_logprobs", [None])[1:]:
            e["7"] = {"logprob": -3.0, "decoded_token": "?"}
        return status, data, h

    fake.server.respond = two_per_entry
    with pytest.raises(ServerError, match="holds 2 tokens and the server gave no prompt_token_ids"):
        fake(score_api="prompt_logprobs").score("Q", ["ab"])


def _vllm_tokenizer(path: str, body: Any, *, lossy: bool = False) -> tuple[int, Any, dict[str, str]]:
    """vLLM's /tokenize (a prompt, or messages with the template below) and /detokenize; a word-level
    "tokenizer" whose ids index WORDS, and a tokenizer that adds <s> (id 0) to a prompt."""
    template = "<s>[INST] {user} [/INST] {answer}</s>"
    if path == "/tokenize":
        if "messages" in body:
            user, answer = (m["content"] for m in body["messages"])
            text, special = template.format(user=user, answer=answer), False
        else:
            text, special = body["prompt"], body["add_special_tokens"]
        words = text.replace("<s>", "<s> ").replace("</s>", " </s>").split()
        ids = ([0] if special else []) + [WORDS.setdefault(w, len(WORDS)) for w in words]
        return 200, {"count": len(ids), "max_model_len": 4096, "tokens": ids}, {}
    if path == "/detokenize":
        inverse = {i: w for w, i in WORDS.items()}
        text = " ".join(inverse[i] for i in body["tokens"]).replace("<s> ", "<s>").replace(" </s>", "</s>")
        return 200, {"prompt": text.replace("[INST]", "[INST ]") if lossy else text}, {}
    return 404, {"detail": "Not Found"}, {}


WORDS: dict[str, int] = {"<s>": 0}


def test_vllm_renders_its_own_template(fake):
    """Issue 35, item 3: /tokenize with messages, /detokenize, and the BOS the tokenizer adds itself
    dropped from the front (the scored text gets it back from /v1/completions)."""
    fake.server.respond, fake.server.root_routes = (lambda path, body: _vllm_tokenizer(path, body)), True
    lm = fake(prompt_format=None)
    fmt = lm.prompt_format
    assert (fmt.before, fmt.between, fmt.end) == ("[INST] ", " [/INST] ", "</s>")
    assert fmt.source.endswith("/tokenize") and fmt.source.startswith("server:http://127.0.0.1:")
    assert fake.server.paths()[:2] == ["/apply-template", "/tokenize"]
    fake.server.respond = lambda path, body: _vllm_tokenizer(path, body, lossy=True)
    with pytest.raises(LMError, match="does not come back as the same tokens"):
        _ = fake(prompt_format=None).prompt_format


def test_llama_server_renders_its_own_template(fake):
    """llama.cpp's llama-server: /apply-template, and /tokenize + /detokenize for the BOS it adds."""
    def respond(path, body):
        if path == "/apply-template":
            return 200, {"prompt": "<bos><start_of_turn>user\n" + body["messages"][0]["content"] +
                         "<end_of_turn>\n<start_of_turn>model\n" + body["messages"][1]["content"] + "<end_of_turn>\n"}, {}
        if path == "/tokenize":
            return 200, {"tokens": [2, 50] if body["add_special"] else [50]}, {}
        if path == "/detokenize":
            return 200, {"content": "<bos>" if body["tokens"] == [2] else "?"}, {}
        return 404, {}, {}

    fake.server.respond, fake.server.root_routes = respond, True
    fmt = fake(prompt_format="server").prompt_format
    assert fmt == PromptFormat("chat", "<start_of_turn>user\n", "<end_of_turn>\n<start_of_turn>model\n", "<end_of_turn>")


# -- the API key -------------------------------------------------------------------------------


def test_the_api_key_is_never_written_anywhere(fake, monkeypatch, tmp_path, caplog):
    """Issue 35, item 2: the key is sent (Bearer), and is in no cache, manifest, log, error message,
    repr or pickle, even where the server echoes it back."""
    from pragmodels.lm.score_file import score_file

    monkeypatch.setenv("THE_KEY", KEY)
    caplog.set_level(logging.DEBUG)  # the SDK's and httpx2's debug logs too
    lm = fake(api_key_env="THE_KEY")
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"id": "a", "prompt": "Q", "continuations": ["ab"]}) + "\n")
    cache = ScoreCache(tmp_path / "cache.sqlite")
    result = score_file(src, tmp_path / "s.csv", lm, cache=cache)
    CachedLM(lm, cache).sample("Q", 2, max_tokens=2)
    assert {h.get("authorization") for *_, h, _ in fake.server.seen} == {f"Bearer {KEY}"}

    fake.server.respond = lambda path, body: (401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}, {})
    with pytest.raises(ServerError) as e:
        lm.sample("R", 1)
    assert "HTTP 401" in str(e.value) and "***" in str(e.value) and "$THE_KEY" in str(e.value)
    fake.server.respond = lambda path, body: (500, f"crashed, key {KEY}".encode(), {})
    with pytest.raises(ServerError) as e5:
        lm.sample("S", 1)
    written = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert result.sidecar.exists() and b"THE_KEY" in result.sidecar.read_bytes()  # the variable's name, recorded
    for where in (written, caplog.text.encode(), str(e.value).encode(), str(e5.value).encode(), repr(lm).encode(),
                  pickle.dumps(lm), json.dumps(lm.settings()).encode()):
        assert KEY.encode() not in where and b"TOPSECRET" not in where
    with pytest.raises(ValueError) as pasted:  # the key itself given where its variable's name goes
        OpenAICompatibleLM("http://127.0.0.1:9", "m", api_key_env=KEY)
    assert "TOPSECRET" not in str(pasted.value) and "not the key itself" in str(pasted.value)
