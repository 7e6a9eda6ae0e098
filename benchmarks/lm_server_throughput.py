"""Throughput of :class:`~pragmodels.lm.openai_http.OpenAICompatibleLM` against a real local server:
requests in flight at once against one at a time, in one run.

Usage: python -m benchmarks.lm_server_throughput [--quick] [--threads T]

Starts llama-cpp-python's own server (``python -m llama_cpp.server``) with SmolLM2-135M-Instruct on
loopback (``--threads`` ggml threads, default 1 as the tests), and measures, each configuration
through :class:`~pragmodels.lm.cache.CachedLM` on a fresh SQLite cache, sequential
(``concurrency=1``) and concurrent (``concurrency=8``) interleaved block by block:

(a) scoring: ``--prompts`` Wavelength-like prompts x 6 answers (``<answer>0</answer>`` ...
    ``<answer>100</answer>``), one ``score_many`` call (the route ``pragmodels lm score`` takes),
    in SmolLM2's chat markup without the system turn (llama-cpp-python's server spends 30-80 ms of
    CPU per echoed token, so short texts); continuations per second;
(b) sampling: the same prompts x 16 samples each through ``/v1/chat/completions`` (pure sampling,
    ``max_tokens=8``; llama-cpp-python's server ignores ``n``, so one request per sample), one
    ``sample_many`` call; samples per second;
(c) a warm rerun of (a) and (b): every value from the cache, no request;
(d) the same client against a stub server that answers every request after 50 ms and serves
    requests in parallel (what vLLM or a hosted API does): requests per second, to show what
    concurrency buys where the server is not the bottleneck (llama-cpp-python's server serves
    one request at a time).

The machine's load average is printed at the start and the end: on a shared machine the ratios
matter, not the rates. Writes benchmarks/results/lm_server_throughput.csv and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchmarks._results import write_results
from pragmodels.lm import CachedLM, OpenAICompatibleLM, PromptFormat, SampleRequest, ScoreCache, ScoreRequest
from pragmodels.lm.bundled import smollm2_path
from pragmodels.lm.openai_http import LLAMA_CPP_PURE_SAMPLING

FMT = PromptFormat("chat", "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>")
ANSWERS = tuple(f"<answer>{v}</answer>" for v in range(0, 101, 20))
SCALES = [("cold", "hot", "soup"), ("cheap", "expensive", "caviar"), ("slow", "fast", "cheetah"),
          ("quiet", "loud", "drums"), ("small", "large", "whale"), ("dark", "bright", "sun")]


def prompt(i: int) -> str:
    left, right, clue = SCALES[i % len(SCALES)]
    return f"0 is {left}, 100 is {right}. Clue: {clue}. Answer <answer>N</answer>."


def start_server(threads: int) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()), "--host",
                             "127.0.0.1", "--port", str(port), "--n_ctx", "512", "--n_threads", str(threads),
                             "--n_threads_batch", str(threads)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/models", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("llama_cpp.server did not start within 120 s")


class _Stub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(0.05)
        body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "x"},
                                        "finish_reason": "stop"}], "usage": {"prompt_tokens": 5}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()


def run_block(url: str, concurrency: int, n_prompts: int, n_samples: int, folder: Path, tag: str) -> list[dict]:
    rows = []
    scores = [ScoreRequest(prompt(i), ANSWERS) for i in range(n_prompts)]
    samples = [SampleRequest(prompt(i), n_samples, max_tokens=8, seed=100 * i) for i in range(n_prompts)]
    cache = ScoreCache(folder / f"{tag}-{concurrency}.sqlite")
    with OpenAICompatibleLM(url, "smollm2", prompt_format=FMT, concurrency=concurrency) as scorer, \
            OpenAICompatibleLM(url, "smollm2", sample_api="chat", sampling_params=LLAMA_CPP_PURE_SAMPLING,
                               concurrency=concurrency) as sampler:
        for what, lm, run, count in (("scores", scorer, lambda c: c.score_many(scores), len(scores) * len(ANSWERS)),
                                     ("samples", sampler, lambda c: c.sample_many(samples), n_prompts * n_samples)):
            for warm in (False, True):
                cached = CachedLM(lm, cache)
                sent, t0, c0 = lm.requests_sent, time.perf_counter(), time.process_time()
                run(cached)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                rows.append({"server": "llama_cpp.server (SmolLM2-135M)", "what": what, "cache": "warm" if warm else
                             "cold", "concurrency": concurrency, "items": count, "requests": lm.requests_sent - sent,
                             "wall_s": wall, "client_cpu_s": cpu, "per_s": count / wall})
                print(f"  {what:7s} {'warm' if warm else 'cold'} concurrency {concurrency}: {count} in {wall:6.2f} s "
                      f"= {count / wall:7.2f}/s ({lm.requests_sent - sent} requests)", flush=True)
    return rows


def run_stub(concurrency: int, n: int) -> dict:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with OpenAICompatibleLM(f"http://127.0.0.1:{srv.server_address[1]}", "stub", sample_api="chat",
                                concurrency=concurrency) as lm:
            lm.sample("warm up", 1)
            t0 = time.perf_counter()
            lm.sample_many([SampleRequest(f"p{i}", 1) for i in range(n)])
            wall = time.perf_counter() - t0
    finally:
        srv.shutdown()
        srv.server_close()
    print(f"  stub (50 ms a request, parallel) concurrency {concurrency}: {n} requests in {wall:.2f} s = "
          f"{n / wall:.1f}/s", flush=True)
    return {"server": "stub: 50 ms a request, in parallel", "what": "samples", "cache": "none",
            "concurrency": concurrency, "items": n, "requests": n, "wall_s": wall, "client_cpu_s": float("nan"),
            "per_s": n / wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 prompts, 4 samples each, one repeat")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    n_prompts, n_samples, repeats = (2, 4, 1) if args.quick else (args.prompts, args.samples, args.repeats)
    load0 = os.getloadavg()
    print(f"load average at start: {load0[0]:.2f}", flush=True)
    proc, url = start_server(args.threads)
    rows: list[dict] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(repeats):
                for concurrency in (1, 8):  # interleaved: a change of load hits both
                    print(f"repeat {r + 1}, concurrency {concurrency}", flush=True)
                    for row in run_block(url, concurrency, n_prompts, n_samples, Path(tmp), f"r{r}"):
                        rows.append(row | {"repeat": r + 1})
    finally:
        proc.terminate()
        proc.wait(10)
    for concurrency in (1, 8):
        rows.append(run_stub(concurrency, 40 if args.quick else 160) | {"repeat": 1})
    load1 = os.getloadavg()
    print(f"load average at end: {load1[0]:.2f}", flush=True)
    notes = (f"Load average {load0[0]:.2f} at the start, {load1[0]:.2f} at the end. Cold: a fresh SQLite cache, "
             "every value asked of the server (scores: one probe for vLLM's prompt_logprobs, then per prompt one "
             "/extras/tokenize for the prompt's token count, the first also finding that route, and one echo per "
             "answer; samples: "
             "per prompt one request with n, which this server ignores, then one per further sample). Warm: the "
             "same calls again, all from the cache. llama-cpp-python's server handles one request at a time, so "
             "concurrency there only overlaps the client's and the network's share; the stub rows show the gain "
             "where the server works on requests in parallel.")
    write_results(rows, "lm_server_throughput", "OpenAICompatibleLM against a local server: concurrent vs sequential",
                  f"SmolLM2-135M-Instruct (Q4_1 GGUF) in llama-cpp-python 0.3.36's server, {args.threads} thread(s); "
                  f"{n_prompts} prompts x {len(ANSWERS)} answers scored, x {n_samples} samples (chat); "
                  f"{repeats} repeat(s), sequential and concurrent interleaved.",
                  {"server": "server", "what": "what", "cache": "cache", "concurrency": "in flight",
                   "repeat": "repeat", "items": "items", "requests": "requests", "wall_s": "wall s",
                   "per_s": "items/s"}, notes)


if __name__ == "__main__":
    main()
