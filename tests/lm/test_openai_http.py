"""The OpenAI-compatible HTTP backend against a real server and against bad ones.

The real server is llama-cpp-python's own (``python -m llama_cpp.server``) with SmolLM2-135M,
started once per session; the reference is the in-process backend on the same GGUF file.
Bad servers are a tiny ``http.server`` in a thread. llama-cpp-python's server spends 30-80 ms
of CPU per echoed token (it sorts the vocabulary in Python for each), so the scored prompt is
short: the SmolLM2 chat markup without the system turn (21 tokens with an answer).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import numpy as np
import pytest

from pragmodels.lm import ContextLengthError, LanguageModel, LlamaCppLM, PromptFormat, ServerError, smollm2_path
from pragmodels.lm.openai_http import LLAMA_CPP_PURE_SAMPLING, OpenAICompatibleLM, gguf_prompt_format

# SmolLM2's chat markup without the system turn: begins with <|im_start|>, SmolLM2's BOS token,
# which is what keeps llama-cpp-python's echo aligned (module docstring of openai_http)
FMT = PromptFormat("chat", "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>")
PROMPT = "Warm?"
ANSWERS = [f"<answer>{v}</answer>" for v in range(0, 101, 5)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def server_url():
    port = _free_port()
    log = tempfile.TemporaryFile()
    # one thread: the echo's cost is the server's Python loop over tokens, and a second ggml
    # thread spinning between batches only takes CPU from it (5 s vs 1.3 s per echo, 2 busy cores)
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()),
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "512",
                             "--n_threads", "1", "--n_threads_batch", "1"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"llama_cpp.server exited ({proc.returncode}): {log.read()[-2000:].decode(errors='replace')}")
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not answer within 120 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


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


def test_a_shifted_echo_is_refused(server_url):
    # a plain-text prompt does not begin with SmolLM2's BOS token: llama-cpp-python 0.3.36 shifts
    # its echo log-probabilities by one token, which must not come back as scores
    with OpenAICompatibleLM(server_url, "smollm2", prompt_format=PromptFormat.plain()) as lm, \
            pytest.raises(ServerError, match="SHIFTED BY ONE TOKEN"):
        lm.score("The capital of France is", ["Paris."])


def test_gguf_prompt_format_is_the_in_process_one(smollm2):
    fmt = gguf_prompt_format(smollm2_path())
    assert fmt == smollm2.prompt_format
    assert fmt.before.startswith("<|im_start|>system") and FMT.between == fmt.between and FMT.end == fmt.end


def test_sampling(server_url, http_lm):
    a = http_lm.sample(PROMPT, 3, temperature=1.0, max_tokens=6, seed=5)
    assert len(a) == 3 and all(isinstance(t, str) for t in a)
    assert http_lm.sample(PROMPT, 3, temperature=1.0, max_tokens=6, seed=5) == a  # seed + i per request
    with OpenAICompatibleLM(server_url, prompt_format=FMT, sample_api="chat",
                            sampling_params=LLAMA_CPP_PURE_SAMPLING) as chat:
        assert len(chat.sample(PROMPT, 2, max_tokens=4, stop=["\n"])) == 2
        assert chat.identity == f"openai:{server_url}|{smollm2_path()}"  # the one model the server lists
        assert isinstance(chat, LanguageModel)


def test_context_overflow_on_the_server(http_lm):
    with pytest.raises(ContextLengthError):
        http_lm.score("word " * 600, ["<answer>5</answer>"])


def test_a_down_server_fails_quickly():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    t = time.monotonic()
    with OpenAICompatibleLM(url, "m", max_retries=2, backoff_s=0.05, timeout_s=5) as lm, \
            pytest.raises(ServerError, match=f"{url}/completions: cannot connect.*after 3 attempts"):
        lm.score("Q", ["A"])
    assert time.monotonic() - t < 5
    assert lm.requests_sent == 3


# -- a fake server ---------------------------------------------------------------------------


class _Fake(BaseHTTPRequestHandler):
    mode = "ok"
    headers_seen: list[dict[str, str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).headers_seen.append(dict(self.headers))
        mode = type(self).mode
        if mode == "slow":
            time.sleep(1.5)
        if mode == "503":
            return self._send(503, b"overloaded")
        if mode == "context":
            return self._send(400, b'{"error": {"message": "This model\'s maximum context length is 512 tokens"}}')
        if mode == "not json":
            return self._send(200, b"<html>hello</html>")
        prompt = body.get("prompt", "")
        # a per-character "tokenizer": every character is a token with log-prob -0.5
        tokens = list(prompt) + ["!"]
        lp: dict[str, Any] = {"tokens": tokens, "text_offset": list(range(len(tokens))),
                              "token_logprobs": [None] + [-0.5] * (len(tokens) - 1)}
        if mode == "shifted":
            for k in lp:
                lp[k] = lp[k][:-1]
        if mode == "short list":
            lp["token_logprobs"] = lp["token_logprobs"][:-2]
        choice: dict[str, Any] = {"text": (prompt if body.get("echo") else "") + "!", "index": 0,
                                  "logprobs": lp if body.get("echo") else None}
        if mode == "no logprobs":
            choice["logprobs"] = None
        n_prompt = len(prompt) + (1 if mode == "miscounted" and body.get("echo") else 0)
        data = {"choices": [choice], "usage": {"prompt_tokens": n_prompt, "completion_tokens": 1}}
        self._send(200, json.dumps(data).encode())

    def _send(self, code: int, payload: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(scope="module")
def fake_url():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def fake(fake_url):
    _Fake.mode = "ok"
    _Fake.headers_seen.clear()
    made: list[OpenAICompatibleLM] = []

    def make(**kw):
        made.append(OpenAICompatibleLM(fake_url, "fake", max_retries=kw.pop("max_retries", 1), backoff_s=0.01, **kw))
        return made[-1]

    yield make
    for lm in made:  # their connections, closed here rather than by the garbage collector (a ResourceWarning)
        lm.close()


def test_arithmetic_on_a_well_formed_echo(fake):
    lm = fake()
    # plain format: "Q\n" + continuation; per-character tokens at -0.5 each
    np.testing.assert_allclose(lm.score("Q", ["ab", "abcd"]), [-1.0, -2.0])
    np.testing.assert_allclose(lm.score("Q", ["abcd"], length_normalize=True), [-0.5])
    assert lm.identity.startswith("openai:http://127.0.0.1:") and lm.identity.endswith("/v1|fake")


@pytest.mark.parametrize(("mode", "error", "match"), [
    ("not json", ServerError, "not JSON"),
    ("no logprobs", ServerError, "without choices\\[0\\].logprobs"),
    ("short list", ServerError, "differ in length"),
    ("shifted", ServerError, "SHIFTED BY ONE TOKEN"),
    ("miscounted", ServerError, "do not spell the continuation"),
    ("503", ServerError, "HTTP 503.*after 2 attempts"),
    ("context", ContextLengthError, "context window"),
])
def test_bad_answers(fake, mode, error, match):
    _Fake.mode = mode
    lm = fake()
    with pytest.raises(error, match=match):
        lm.score("Q", ["ab"])


def test_an_echo_that_cannot_be_checked_for_a_shift(fake):
    # the fake generates "!": a text ending in "!" cannot tell a shifted echo from a correct one
    lm = fake()
    with pytest.raises(ServerError, match="none of the 1 echo answers"):
        lm.score("Q", ["a!"])
    # another answer for the same prompt checks it (a shift depends on the prompt's first token)
    np.testing.assert_allclose(lm.score("Q", ["a!", "ab"]), [-1.0, -1.0])


def test_timeout_is_bounded(fake):
    _Fake.mode = "slow"
    lm = fake(timeout_s=0.3, max_retries=0)
    t = time.monotonic()
    with pytest.raises(ServerError, match="no answer within timeout_s = 0.3 s"):
        lm.sample("Q", 1)
    assert time.monotonic() - t < 1.4


def test_configuration_from_the_environment(fake_url, monkeypatch):
    monkeypatch.setenv("PRAGMODELS_LM_BASE_URL", fake_url)
    monkeypatch.setenv("PRAGMODELS_LM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _Fake.mode, _Fake.headers_seen[:] = "ok", []
    with OpenAICompatibleLM() as lm:
        assert lm.identity == f"openai:{fake_url}/v1|env-model"
        assert lm.sample("Q", 2, max_tokens=3) == ["!", "!"]
    assert all(h.get("Authorization") == "Bearer sk-test" for h in _Fake.headers_seen)
    monkeypatch.delenv("PRAGMODELS_LM_BASE_URL")
    with pytest.raises(ValueError, match="PRAGMODELS_LM_BASE_URL"):
        OpenAICompatibleLM()


def test_bad_input(fake):
    lm = fake()
    with pytest.raises(ValueError, match="continuations is empty"):
        lm.score("Q", [])
    with pytest.raises(ValueError, match="max_tokens = 0"):
        lm.sample("Q", 1, max_tokens=0)
    with pytest.raises(ValueError, match="expected an http"):
        OpenAICompatibleLM("localhost:8080", "m")
    assert _Fake.headers_seen == []  # nothing was sent


@pytest.mark.subprocess
def test_the_package_imports_without_httpx():
    code = ("import sys; sys.modules['httpx'] = None; import pragmodels.lm, pragmodels.lm.openai_http as openai_http; "
            "lm = openai_http.OpenAICompatibleLM('http://127.0.0.1:9', 'x'); print(lm.prompt_format.name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "plain"
