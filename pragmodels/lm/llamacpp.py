"""A GGUF model in this process, through ``llama-cpp-python`` (the ``lm`` extra, pinned 0.3.36).

Layering: :mod:`pragmodels.lm.base`; imports ``llama_cpp`` only when a model is opened.

:class:`LlamaCppLM` scores a continuation as the sum of its tokens' log-probabilities in the whole
text ``format.prefix(prompt) + continuation + format.end`` (through the end-of-turn token), from
llama.cpp's own decode and logits, never from its shifted ``echo`` log-probabilities. The prompt
is evaluated once (only from its first token that differs from the previous prompt's) and all
its continuations in one batch, each in its own KV stream; a lone token is never decoded, so a
score equals a fresh evaluation's and does not depend on what was scored before (Gemma 3: up to
0.22 nats, a known limitation). Sampling is pure temperature sampling. :func:`check_gguf` checks
a model file without importing a backend. How scoring works, its measured speed, threads and
memory: the docs page *Language models* ("llama.cpp in this process").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pragmodels.io.checksums import sha256_file
from pragmodels.lm.base import (
    ContextLengthError,
    LMError,
    ModelFileError,
    PromptFormat,
    check_continuations,
    check_sampling,
)

__all__ = ["LlamaCppLM", "check_gguf"]

DEFAULT_N_CTX = 1024
DEFAULT_N_THREADS = 2



def check_gguf(path: str | os.PathLike[str]) -> Path:
    """The path, if it names a readable GGUF file.

    Parameters
    ----------
    path : str or path-like
        The model file.

    Returns
    -------
    Path

    Raises
    ------
    ModelFileError
        The file does not exist, is a folder, or does not start with the GGUF magic bytes.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelFileError(f"model file {p} does not exist.")
    if p.is_dir():
        raise ModelFileError(f"model file {p} is a folder; expected a .gguf file.")
    with p.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ModelFileError(f"model file {p} is not a GGUF file (it starts with {magic!r}, not b'GGUF').")
    return p


def _log_softmax_rows(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


class LlamaCppLM:
    """A GGUF model scored and sampled in this process.

    Parameters
    ----------
    path : str or path-like
        The ``.gguf`` file (e.g. :func:`pragmodels.lm.bundled.smollm2_path`).
    prompt_format : PromptFormat or {"chat", "plain"}
        ``"chat"`` (default): the file's own chat template (an error if it has none);
        ``"plain"``: :meth:`PromptFormat.plain`.
    n_ctx : int
        Context window in tokens (default 1024; prompt and continuation must fit).
    n_threads : int
        CPU threads for batches (prompts and scoring; default 2). Sampling decodes one token at a
        time on one thread, which is faster than two on a loaded machine.
    n_batch : int
        Tokens per llama.cpp batch.
    seed : int
        The llama.cpp context's seed (sampling passes its own per sample).

    Raises
    ------
    ModelFileError
        The file is missing or not GGUF.
    LMError
        ``llama-cpp-python`` is not installed, or ``"chat"`` was asked of a model with no template.
    """

    def __init__(self, path: str | os.PathLike[str], *, prompt_format: PromptFormat | str = "chat",
                 n_ctx: int = DEFAULT_N_CTX, n_threads: int = DEFAULT_N_THREADS, n_batch: int = 512,
                 seed: int = 0):
        self.path = check_gguf(path)
        for name, v in (("n_ctx", n_ctx), ("n_threads", n_threads), ("n_batch", n_batch)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} = {v!r}; expected a positive int.")
        try:
            from llama_cpp import Llama
        except ImportError as e:
            raise LMError("llama-cpp-python is not installed: pip install 'pragmodels[lm]' "
                          "(it builds from source, about 6-11 minutes on 2 cores).") from e
        try:
            # generation decodes one token at a time: one thread (n_threads_batch for prompts). With
            # two threads, each token waits on ~300 OpenMP barriers, and on a loaded machine a
            # descheduled thread stalls every one of them: 2-4 s per token measured on 2 busy cores
            self._llm: Any = Llama(model_path=str(self.path), n_ctx=n_ctx, n_threads=1, n_threads_batch=n_threads,
                                   n_batch=n_batch, seed=seed, verbose=False)
        except (ValueError, RuntimeError) as e:
            raise ModelFileError(f"model file {self.path} could not be loaded by llama.cpp ({e}).") from e
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self._scorer = _BatchScorer(self._llm, n_ctx=n_ctx, n_threads=n_threads)
        self._sha = sha256_file(self.path, remember=True)
        self._bos = [self._llm.token_bos()] if self._llm._model.add_bos_token() and self._llm.token_bos() >= 0 else []
        self._format = self._resolve_format(prompt_format)

    def _resolve_format(self, fmt: PromptFormat | str) -> PromptFormat:
        if isinstance(fmt, PromptFormat):
            return fmt
        if fmt == "plain":
            return PromptFormat.plain()
        if fmt != "chat":
            raise ValueError(f"prompt_format = {fmt!r}; expected 'chat', 'plain' or a PromptFormat.")
        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise LMError(f"model file {self.path} has no chat template; use prompt_format='plain'.")
        def tok(i: int) -> str:
            return self._llm.detokenize([i], special=True).decode("utf-8", "replace") if i >= 0 else ""
        return PromptFormat.from_chat_template(template, bos_token=tok(self._llm.token_bos()),
                                               eos_token=tok(self._llm.token_eos()), strip_bos=bool(self._bos))

    @property
    def identity(self) -> str:
        """``"gguf:<sha256>"`` of the model file."""
        return f"gguf:{self._sha}"

    @property
    def prompt_format(self) -> PromptFormat:
        """The prompt format in use."""
        return self._format

    @property
    def vocab_size(self) -> int:
        """The model's vocabulary size."""
        return int(self._llm.n_vocab())

    def tokenize(self, text: str, *, bos: bool = False) -> list[int]:
        """Token ids of a text (special-token markup such as ``<|im_end|>`` is parsed).

        Parameters
        ----------
        text : str
            The text.
        bos : bool
            Prepend the BOS token where the model uses one.

        Returns
        -------
        list of int
        """
        ids = list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        return (self._bos + ids) if bos else ids

    def split_tokens(self, prompt: str, continuation: str) -> tuple[list[int], list[int]]:
        """The prompt's tokens and the continuation's (with the end marker), as scored.

        Parameters
        ----------
        prompt : str
            The user's prompt.
        continuation : str
            The answer.

        Returns
        -------
        (list of int, list of int)
        """
        prefix = self._format.prefix(prompt)
        p = self.tokenize(prefix, bos=True)
        full = self.tokenize(prefix + continuation + self._format.end, bos=True)
        if full[:len(p)] == p and len(full) > len(p):
            return p, full[len(p):]
        return p, self.tokenize(continuation + self._format.end)

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        """Log-probability of each continuation given the prompt (how: docs, *Language models*).

        Shapes: ``continuations [candidate]`` -> float64 ``[candidate]``.

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
        ContextLengthError
            The prompt and a continuation do not fit ``n_ctx``.
        """
        conts = check_continuations(continuations)
        split = [self.split_tokens(prompt, c) for c in conts]
        p = split[0][0]
        for pi, _ in split:
            if pi != p:  # tokenize() is deterministic: the prompt's tokens never depend on the continuation
                raise LMError("the prompt tokenized differently for two continuations.")
        conts_ids = [c for _, c in split]
        # tokens every continuation starts with ("<answer>") join the prompt, evaluated once:
        # log P(shared + rest | p) = log P(shared | p) + log P(rest | p + shared), exactly
        k = 0
        while all(len(c) > k + 1 for c in conts_ids) and len({c[k] for c in conts_ids}) == 1:
            k += 1
        shared = 0.0
        if k:
            shared = float(self._scorer.score(p, [conts_ids[0][:k]])[0].sum())
        lp = self._scorer.score(p + conts_ids[0][:k], [c[k:] for c in conts_ids])
        sums = np.array([shared + float(x.sum()) for x in lp])
        if length_normalize:
            sums = sums / np.array([len(c) for _, c in split])
        return sums

    @property
    def tokens_evaluated(self) -> int:
        """Tokens run through the scorer so far (for throughput figures)."""
        return self._scorer.tokens_evaluated

    def sample(self, prompt: str, n: int, *, temperature: float = 1.0, max_tokens: int = 32,
               stop: Sequence[str] = (), seed: int = 0, answer_prefix: str = "") -> list[str]:
        """``n`` answers sampled from the model's distribution at ``temperature``.

        Pure temperature sampling (top-k, top-p and min-p off, no repetition penalty), so that
        the samples estimate the model's own distribution; sample ``i`` uses seed ``seed + i``.
        An answer ends at the end-of-turn token, a ``stop`` string or ``max_tokens``.

        Parameters
        ----------
        prompt : str
            The user's prompt.
        n : int
            Number of samples (>= 1).
        temperature : float
            Sampling temperature (> 0).
        max_tokens : int
            Most tokens per answer (>= 1).
        stop : sequence of str
            Strings that end an answer.
        seed : int
            Seed of the first sample.
        answer_prefix : str
            Text the answer is made to start with (the texts returned start with it).

        Returns
        -------
        list of str

        Raises
        ------
        ValueError
            ``n``, ``temperature`` or ``max_tokens`` out of range.
        ContextLengthError
            The prompt and ``max_tokens`` do not fit ``n_ctx``.
        """
        check_sampling(n, max_tokens, temperature)
        ids = self.tokenize(self._format.prefix(prompt) + answer_prefix, bos=True)
        if len(ids) + max_tokens > self.n_ctx:
            raise ContextLengthError(f"the prompt ({len(ids)} tokens) and max_tokens = {max_tokens} do not fit "
                                     f"n_ctx = {self.n_ctx}.")
        stops = list(stop) + ([self._format.end] if self._format.end else [])
        texts = []
        for i in range(n):
            out = self._llm.create_completion(prompt=ids, max_tokens=max_tokens, temperature=float(temperature),
                                              top_k=0, top_p=1.0, min_p=0.0, typical_p=1.0, repeat_penalty=1.0,
                                              stop=stops, seed=int(seed) + i)
            texts.append(answer_prefix + str(out["choices"][0]["text"]))
        return texts


class _BatchScorer:
    """Prompt in sequence 0, continuations as sequences 1..k of one batch (docs, *Language models*)."""

    def __init__(self, llm: Any, *, n_ctx: int, n_threads: int, n_seq_max: int = 22):
        from llama_cpp import (
            _internals as internals,
            llama_cpp as C,  # noqa: N812 - llama.cpp's C functions, C.llama_*
        )

        self._C = C
        self._llm = llm
        # the Llama object's own settings (flash attention, KV cache types, ...), so both paths compute alike
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        n_seq = min(n_seq_max, int(C.llama_max_parallel_sequences()))
        params.n_ctx = n_ctx * n_seq  # a stream per sequence gets n_ctx / n_seq_max cells
        params.n_batch = n_ctx
        params.n_ubatch = min(n_ctx, 512)
        params.n_seq_max = n_seq
        params.kv_unified = False  # one KV stream per sequence: exact (a unified cache gave results that depended on the batch)
        params.n_threads = 1  # (never used: the scorer decodes two tokens or more)
        params.n_threads_batch = n_threads
        self._ctx = internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self._n_seq = int(params.n_seq_max)
        self._n_ctx = n_ctx
        self._batch = internals.LlamaBatch(n_tokens=n_ctx, embd=0, n_seq_max=self._n_seq, verbose=False)
        self._vocab = int(llm.n_vocab())
        self._prompt: list[int] = []
        self._last: np.ndarray | None = None  # log-softmax of the prompt's last logits
        self.tokens_evaluated = 0

    def _logits(self, i: int) -> np.ndarray:
        ptr = self._C.llama_get_logits_ith(self._ctx.ctx, i)
        return np.ctypeslib.as_array(ptr, shape=(self._vocab,))

    def _decode(self, entries: list[tuple[int, int, int, bool]]) -> None:
        """``entries``: (token, position, sequence, want logits)."""
        b = self._batch.batch
        b.n_tokens = len(entries)
        for i, (tok, pos, seq, want) in enumerate(entries):
            b.token[i] = tok
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = seq
            b.logits[i] = want
        self._ctx.decode(self._batch)
        self.tokens_evaluated += len(entries)

    def _set_prompt(self, p: list[int]) -> None:
        mem = self._ctx.memory
        k = 0
        for a, b in zip(self._prompt, p):
            if a != b:
                break
            k += 1
        if k == len(p) and self._last is not None and len(self._prompt) == len(p):
            return
        # re-evaluate at least the last two tokens, for the last one's logits: llama.cpp computes a
        # batch of one token by another kernel, whose logits differ by up to 0.5 nats (measured on
        # SmolLM2) from the same token's in any larger batch; batches of 2 or more agree to 1e-6
        k = max(0, min(k, len(p) - 2))
        self._C.llama_memory_seq_rm(mem, -1, k, -1)
        self._prompt = p[:k]
        self._last = None
        start = k
        while start < len(p):
            chunk = p[start:start + self._n_ctx]
            self._decode([(t, start + i, 0, start + i == len(p) - 1) for i, t in enumerate(chunk)])
            last_index = len(chunk) - 1
            start += len(chunk)
        self._prompt = list(p)
        self._last = _log_softmax_rows(self._logits(last_index)[None])[0]

    def score(self, p: list[int], conts: list[list[int]]) -> list[np.ndarray]:
        for c in conts:
            if len(p) + len(c) > self._n_ctx:
                raise ContextLengthError(f"{len(p) + len(c)} tokens (prompt {len(p)}, continuation {len(c)}) do not "
                                         f"fit the context window n_ctx = {self._n_ctx}; shorten the prompt or raise n_ctx.")
        self._set_prompt(p)
        assert self._last is not None
        out: list[np.ndarray] = [np.empty(0)] * len(conts)
        mem = self._ctx.memory
        todo = list(range(len(conts)))
        while todo:
            group: list[int] = []
            used = len(p)
            while todo and len(group) < self._n_seq - 1 and used + len(conts[todo[0]]) <= self._n_ctx:
                group.append(todo.pop(0))
                used += len(conts[group[-1]])
            entries: list[tuple[int, int, int, bool]] = []
            for j, ci in enumerate(group):
                self._C.llama_memory_seq_cp(mem, 0, j + 1, -1, -1)
                c = conts[ci]
                entries += [(t, len(p) + i, j + 1, i < len(c) - 1) for i, t in enumerate(c)]
            rows: dict[int, list[int]] = {}
            if entries and any(e[3] for e in entries):
                self._decode(entries)
            pos = 0
            for ci in group:
                c = conts[ci]
                rows[ci] = list(range(pos, pos + len(c) - 1))
                pos += len(c)
            for ci in group:
                c = conts[ci]
                lp = np.empty(len(c))
                lp[0] = self._last[c[0]]
                if len(c) > 1:
                    logits = np.stack([self._logits(r) for r in rows[ci]])
                    lsm = _log_softmax_rows(logits)
                    lp[1:] = lsm[np.arange(len(c) - 1), c[1:]]
                out[ci] = lp
            for j in range(len(group)):
                self._C.llama_memory_seq_rm(mem, j + 1, -1, -1)
        return out
