"""A model in this process through Hugging Face ``transformers`` and PyTorch (the ``hf`` extra), e.g. on a GPU.

Layering: :mod:`pragmodels.lm.base`, :func:`pragmodels.io.checksums.sha256_file` and
:func:`pragmodels.lm.llamacpp.check_gguf` (which imports no backend); imports ``torch`` and
``transformers`` only when a model is opened.

:class:`TransformersLM` loads the same GGUF files as :class:`~pragmodels.lm.llamacpp.LlamaCppLM`
(dequantised to ``dtype``), a transformers checkpoint folder, or a model already in the local
Hugging Face cache; nothing is ever downloaded (``HF_HUB_OFFLINE=1``, ``local_files_only=True``).
It scores the same strings the same way, the prompt evaluated once and its KV cache shared by a
right-padded batch of continuations. Its identity names the backend and dtype as well as the
file, so a score cache never mixes its numbers with llama.cpp's. Accuracy against an independent
float64 forward pass and against llama.cpp, and load times: the docs page *Language models*.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import inspect
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
from pragmodels.lm.llamacpp import check_gguf

__all__ = ["TransformersLM", "DEVICE_MAPS", "DTYPES", "check_device_map", "default_device"]

DEFAULT_BATCH_SIZE = 32
_INSTALL = "pip install 'pragmodels[hf]'"
#: the dtype names :class:`TransformersLM` takes (or a torch float dtype)
DTYPES = ("float32", "float16", "bfloat16", "float64")
#: the device_map strings ``transformers`` (through ``accelerate``) reads: ``"auto"`` spreads a model
#: over every GPU, then the CPU
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def _import_backend(need: tuple[str, ...] = ()) -> tuple[Any, Any]:
    """``(torch, transformers)``, or an :class:`LMError` that says how to install them (and ``need``)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    missing = [m for m in ("torch", "transformers") + need if importlib.util.find_spec(m) is None]
    if missing:
        raise LMError(f"the transformers backend needs {', '.join(missing)}, which "
                      f"{'is' if len(missing) == 1 else 'are'} not installed: {_INSTALL}")
    try:  # import_module: mypy neither needs nor reads torch's types (pragmodels is checked without the extra)
        torch = importlib.import_module("torch")
        transformers = importlib.import_module("transformers")
    except ImportError as e:  # installed but broken (e.g. a torch built for another Python)
        raise LMError(f"torch or transformers is installed but does not import ({e}); reinstall: {_INSTALL}") from e
    return torch, transformers


def default_device() -> str:
    """Where a model goes when no device is named: ``"cuda"`` where torch sees a GPU, else ``"cpu"``.

    Returns
    -------
    str

    Raises
    ------
    LMError
        torch or transformers is not installed (``pip install 'pragmodels[hf]'``).
    """
    torch, _ = _import_backend()
    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device_map(device_map: object, device: object = None) -> None:
    """A ``device_map`` as :class:`TransformersLM` takes it: one of :data:`DEVICE_MAPS` or a dict, and no ``device`` beside it.

    Parameters
    ----------
    device_map : str, dict or None
        The value to check.
    device : object
        The ``device`` given with it (None: none).

    Raises
    ------
    ValueError
        Naming the value and what was expected.
    """
    if device_map is None:
        return
    if not isinstance(device_map, dict) and device_map not in DEVICE_MAPS:
        raise ValueError(f"device_map = {device_map!r}; expected one of {', '.join(map(repr, DEVICE_MAPS))} or a dict "
                         "of module names to devices.")
    if device is not None:
        raise ValueError(f"device = {device!r} and device_map = {device_map!r}: pass one (a device_map places every "
                         "layer itself).")


def _dir_digest(folder: Path) -> str:
    """sha256 over the folder's files (relative name and each file's sha256), hidden entries skipped."""
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = f.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        h.update(f"{rel.as_posix()}\t{sha256_file(f, remember=True)}\n".encode())
    return h.hexdigest()


class TransformersLM:
    """A GGUF file or transformers checkpoint scored and sampled with PyTorch (CPU or GPU).

    Parameters
    ----------
    model : str or path-like
        A ``.gguf`` file (e.g. :func:`pragmodels.lm.bundled.smollm2_path`), a folder holding a
        transformers checkpoint (or, with ``gguf_file``, a GGUF file), or the name of a model
        already in the local Hugging Face cache (``"org/name"``; never downloaded). A folder's
        identity hashes all its files once per process (about 1 s per GB).
    gguf_file : str, optional
        The GGUF file's name inside the folder or cached model ``model`` names.
    prompt_format : PromptFormat or {"chat", "plain"}
        ``"chat"`` (default): the tokenizer's own chat template (``tokenizer.chat_template``; an
        error if it has none); ``"plain"``: :meth:`PromptFormat.plain`.
    device : str or torch.device, optional
        Where the model runs (default ``"cpu"``; e.g. ``"cuda"``, ``"cuda:1"``, ``"mps"``). The
        weights are loaded straight onto it.
    dtype : str or torch.dtype, optional
        The weights' and activations' float type. Default: ``"bfloat16"`` on CUDA (where the GPU
        supports it; on several GPUs through ``device_map``, where CUDA is available), else
        ``"float32"``. ``"bfloat16"`` and ``"float16"`` halve the memory of float32; their scores
        differ from float32's (measured: docs, *Language models*), and :attr:`identity` names the
        dtype, so a score cache never mixes them.
    device_map : {"auto", "balanced", "balanced_low_0", "sequential"} or dict, optional
        Spread the layers over every GPU (and, past their memory, the CPU), through ``accelerate``,
        for a model larger than one GPU (a 70B model in bfloat16 takes about 140 GB); instead of
        ``device``. A dict maps module names to devices, as ``transformers`` reads it.
    revision : str, optional
        Revision of a model named from the local Hugging Face cache (default: the cached ``main``).
    n_ctx : int, optional
        Most tokens of a prompt with a continuation (default: the model's
        ``max_position_embeddings``).
    batch_size : int
        Continuations (or samples) evaluated in one forward pass (default 32).

    Raises
    ------
    ModelFileError
        The file or folder is missing, not GGUF, or cannot be loaded.
    LMError
        ``torch``/``transformers`` (or, for GGUF, ``gguf``/``accelerate``; for a ``device_map``,
        ``accelerate``) is not installed (``pip install 'pragmodels[hf]'``), or ``"chat"`` was asked
        of a tokenizer with no template.
    ValueError
        ``dtype``, ``device``, ``device_map`` (or both of these), ``n_ctx``, ``batch_size`` or
        ``prompt_format`` is not valid.
    """

    def __init__(self, model: str | os.PathLike[str], *, gguf_file: str | None = None,
                 prompt_format: PromptFormat | str = "chat", device: Any = None, dtype: Any = None,
                 device_map: str | dict[str, Any] | None = None, revision: str | None = None,
                 n_ctx: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE):
        for name, v in (("n_ctx", n_ctx), ("batch_size", batch_size)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{name} = {v!r}; expected a positive int.")
        check_device_map(device_map, device)
        source, load_from, gguf_name = self._locate(model, gguf_file, revision)
        torch, transformers = _import_backend(("gguf", "accelerate") if gguf_name is not None
                                              else ("accelerate",) if device_map is not None else ())
        self._torch = torch
        try:
            device = torch.device("cpu" if device is None else device)
        except (RuntimeError, TypeError) as e:
            raise ValueError(f"device = {device!r} is not a torch device ({e}).") from e
        self.dtype = self._resolve_dtype(dtype, device, device_map)
        self.device_map = device_map
        kw: dict[str, Any] = {"local_files_only": True}
        if device_map is not None or device.type != "cpu":  # load onto the GPU(s), not into CPU memory first
            kw["device_map"] = device_map if device_map is not None else {"": device}
        if gguf_name is not None:
            kw["gguf_file"] = gguf_name
        elif revision is not None and not Path(load_from).is_dir():
            kw["revision"] = revision
        try:
            self._tok: Any = transformers.AutoTokenizer.from_pretrained(load_from, **kw)
            self._model: Any = transformers.AutoModelForCausalLM.from_pretrained(load_from, dtype=self.dtype, **kw)
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            raise ModelFileError(f"{source} could not be loaded by transformers ({type(e).__name__}: {e}).") from e
        self._model.eval()
        # where input ids go (the first layer's device; with a device_map the logits come back
        # on the last layer's, and are read there)
        self.device = self._model.get_input_embeddings().weight.device
        # the KV cache's argument and output field: `cache` from transformers 5.2x (`past_key_values` is
        # deprecated there, a FutureWarning), `past_key_values` before
        self._cache_kw = "cache" if "cache" in inspect.signature(self._model.forward).parameters else "past_key_values"
        self._source = source
        # where the chat template is read from, for run manifests (PromptFormat.source): as templates.py names it
        self._template_source = f"gguf:{Path(load_from) / gguf_name}" if gguf_name is not None else f"hf:{load_from}"
        cfg_ctx = getattr(self._model.config, "max_position_embeddings", None)
        self.n_ctx = int(n_ctx if n_ctx is not None else (cfg_ctx or 2048))
        self.batch_size = batch_size
        self._bos = self._bos_tokens()
        self._format = self._resolve_format(prompt_format)
        self._eos = self._eos_ids()
        self._pad = self._eos[0] if self._eos else 0
        self._prompt_state: tuple[tuple[int, ...], Any, Any] | None = None  # (ids, cache, last logits)
        self.tokens_evaluated = 0  # tokens run through the model (for throughput figures)

    # ---- loading ---------------------------------------------------------------------------

    @staticmethod
    def _locate(model: str | os.PathLike[str], gguf_file: str | None,
                revision: str | None) -> tuple[str, str, str | None]:
        """(identity source, what from_pretrained loads, GGUF file name or None)."""
        p = Path(model).expanduser()
        if gguf_file is None and (p.suffix.lower() == ".gguf" or p.is_file()):
            g = check_gguf(p)
            return f"gguf:{sha256_file(g, remember=True)}", str(g.resolve().parent), g.name
        if p.is_dir():
            if gguf_file is not None:
                g = check_gguf(p / gguf_file)
                return f"gguf:{sha256_file(g, remember=True)}", str(p.resolve()), gguf_file
            if not (p / "config.json").is_file():
                raise ModelFileError(f"model folder {p} has no config.json (expected a transformers checkpoint, "
                                     "or pass gguf_file=).")
            return f"hf:{p.resolve()}@sha256:{_dir_digest(p)}", str(p.resolve()), None
        name = str(model)
        if name.startswith((".", "/", "~")) or name.count("/") > 1 or os.sep != "/" and os.sep in name:
            raise ModelFileError(f"model {name!r} does not exist (neither a file, nor a folder, nor an org/name).")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            hub: Any = importlib.import_module("huggingface_hub")
            snap = Path(hub.snapshot_download(name, revision=revision, local_files_only=True))
        except ImportError as e:
            raise LMError(f"the transformers backend is not installed: {_INSTALL}") from e
        except Exception as e:  # LocalEntryNotFoundError and friends: not in the local cache
            raise ModelFileError(f"model {name!r} is not in the local Hugging Face cache and nothing is "
                                 f"downloaded ({type(e).__name__}: {e}).") from e
        if gguf_file is not None:
            g = check_gguf(snap / gguf_file)
            return f"gguf:{sha256_file(g, remember=True)}", str(snap), gguf_file
        return f"hf:{name}@{snap.name}", str(snap), None

    def _resolve_dtype(self, dtype: Any, device: Any, device_map: object) -> Any:
        torch = self._torch
        if dtype is None:
            gpu = device.type == "cuda" or (device_map is not None and torch.cuda.is_available())
            return torch.bfloat16 if gpu and torch.cuda.is_bf16_supported() else torch.float32
        if isinstance(dtype, str):
            if dtype not in DTYPES:
                raise ValueError(f"dtype = {dtype!r}; expected one of {', '.join(DTYPES)} or a torch float dtype.")
            return getattr(torch, dtype)
        if isinstance(dtype, torch.dtype) and dtype.is_floating_point:
            return dtype
        raise ValueError(f"dtype = {dtype!r}; expected one of {', '.join(DTYPES)} or a torch float dtype.")

    def _bos_tokens(self) -> list[int]:
        """``[bos_id]`` if the tokenizer adds a BOS to a text it encodes, else ``[]``."""
        bos = self._tok.bos_token_id
        if bos is None:
            return []
        added = self._tok.encode("a", add_special_tokens=True)[:1] == [bos]
        plain = self._tok.encode("a", add_special_tokens=False)[:1] == [bos]
        return [int(bos)] if added and not plain else []

    def _eos_ids(self) -> list[int]:
        """Token ids that end a sample: the tokenizer's, config's and generation config's EOS."""
        ids: list[int] = []
        sources = [self._tok.eos_token_id, getattr(self._model.config, "eos_token_id", None),
                   getattr(getattr(self._model, "generation_config", None), "eos_token_id", None)]
        if self._format.end:
            end = self.tokenize(self._format.end)
            if len(end) == 1:
                sources.append(end[0])
        for s in sources:
            for i in (s if isinstance(s, (list, tuple)) else [s]):
                if i is not None and int(i) not in ids:
                    ids.append(int(i))
        return ids

    def _resolve_format(self, fmt: PromptFormat | str) -> PromptFormat:
        if isinstance(fmt, PromptFormat):
            return fmt
        if fmt == "plain":
            return PromptFormat.plain()
        if fmt != "chat":
            raise ValueError(f"prompt_format = {fmt!r}; expected 'chat', 'plain' or a PromptFormat.")
        template = getattr(self._tok, "chat_template", None)
        if isinstance(template, dict):
            template = template.get("default")
        if not template:
            raise LMError(f"{self._source} has no chat template; use prompt_format='plain'.")
        return PromptFormat.from_chat_template(template, bos_token=self._tok.bos_token or "",
                                               eos_token=self._tok.eos_token or "", strip_bos=bool(self._bos),
                                               source=self._template_source)

    # ---- the protocol ----------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """``"gguf:<sha256>+transformers-<dtype>"`` for a GGUF file, ``"hf:<name>@<revision>+transformers-<dtype>"``.

        The revision is the cached snapshot's commit, or ``sha256:<digest>`` of a local folder's
        files. The backend and dtype are part of it because their scores differ from
        :class:`~pragmodels.lm.llamacpp.LlamaCppLM`'s (whose identity is ``"gguf:<sha256>"``).
        """
        return f"{self._source}+transformers-{str(self.dtype).removeprefix('torch.')}"

    @property
    def prompt_format(self) -> PromptFormat:
        """The prompt format in use."""
        return self._format

    @property
    def vocab_size(self) -> int:
        """The model's output vocabulary size (its logits' last axis)."""
        out = self._model.get_output_embeddings()
        return int(out.weight.shape[0]) if out is not None else int(self._model.config.vocab_size)

    def tokenize(self, text: str, *, bos: bool = False) -> list[int]:
        """Token ids of a text (special-token markup such as ``<|im_end|>`` is parsed).

        Parameters
        ----------
        text : str
            The text.
        bos : bool
            Prepend the BOS token where the tokenizer adds one.

        Returns
        -------
        list of int
        """
        ids = [int(i) for i in self._tok.encode(text, add_special_tokens=False)]
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

    def _forward(self, ids: Any, cache: Any, *, last_only: bool = False) -> tuple[Any, Any]:
        """(logits, new cache) of ``ids [batch, token]`` after ``cache`` (None: from the start)."""
        kw: dict[str, Any] = {"use_cache": True}
        if cache is not None:
            kw[self._cache_kw] = cache
        if last_only:
            kw["logits_to_keep"] = 1
        try:
            out = self._model(input_ids=ids, **kw)
        except TypeError:  # a model whose forward takes no logits_to_keep
            if not kw.pop("logits_to_keep", None):
                raise
            out = self._model(input_ids=ids, **kw)
        self.tokens_evaluated += int(ids.numel())
        return out.logits, getattr(out, self._cache_kw)

    def _prompt(self, p: list[int]) -> tuple[Any, Any]:
        """(KV cache of the prompt, logits at its last token ``[vocab]``); the cache is never mutated."""
        key = tuple(p)
        if self._prompt_state is None or self._prompt_state[0] != key:
            self._prompt_state = None  # free the previous cache first
            ids = self._torch.tensor([p], dtype=self._torch.long, device=self.device)
            logits, cache = self._forward(ids, None, last_only=True)
            self._prompt_state = (key, cache, logits[0, -1].float())
        return self._prompt_state[1], self._prompt_state[2]

    def _batch_cache(self, cache: Any, b: int) -> Any:
        c = copy.deepcopy(cache)
        if b > 1:
            c.batch_repeat_interleave(b)
        return c

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
        torch = self._torch
        conts = check_continuations(continuations)
        split = [self.split_tokens(prompt, c) for c in conts]
        p = split[0][0]
        longest = max(len(c) for _, c in split)
        if len(p) + longest > self.n_ctx:
            raise ContextLengthError(f"{len(p) + longest} tokens do not fit the context window n_ctx = {self.n_ctx}; "
                                     "shorten the prompt or raise n_ctx.")
        out = np.empty(len(conts), dtype=np.float64)
        order = sorted(range(len(conts)), key=lambda i: len(split[i][1]))
        with torch.no_grad():
            cache, last = self._prompt(p)
            first = torch.log_softmax(last, -1)  # [vocab]: the first continuation token's distribution
            for start in range(0, len(order), self.batch_size):
                rows = order[start:start + self.batch_size]
                toks = [split[i][1] for i in rows]
                width = max(len(t) for t in toks)
                target = torch.tensor([t + [self._pad] * (width - len(t)) for t in toks], dtype=torch.long,
                                      device=self.device)  # [row, token], on the input's device
                out_dev = first.device  # the logits' (another GPU's under a device_map)
                read = target.to(out_dev)
                lp = torch.zeros(target.shape, dtype=torch.float32, device=out_dev)
                lp[:, 0] = first[read[:, 0]]
                if width > 1:
                    logits, _ = self._forward(target[:, :-1], self._batch_cache(cache, len(rows)))
                    logits = logits.float()  # [row, token - 1, vocab]
                    lse = torch.logsumexp(logits, -1)
                    lp[:, 1:] = logits.gather(-1, read[:, 1:, None])[..., 0] - lse
                    del logits, lse
                lengths = torch.tensor([len(t) for t in toks], device=out_dev)
                mask = torch.arange(width, device=out_dev)[None, :] < lengths[:, None]
                sums = (lp.double() * mask).sum(1).cpu().numpy()
                for r, i in enumerate(rows):
                    out[i] = sums[r] / len(toks[r]) if length_normalize else sums[r]
        return out

    def sample(self, prompt: str, n: int, *, temperature: float = 1.0, max_tokens: int = 32,
               stop: Sequence[str] = (), seed: int = 0, answer_prefix: str = "") -> list[str]:
        """``n`` answers sampled from the model's distribution at ``temperature``.

        Pure temperature sampling (no top-k, top-p or repetition penalty), so that the samples
        estimate the model's own distribution. Sample ``i`` draws its uniforms from a generator
        seeded ``seed + i``: the same call gives the same texts (the samples are evaluated
        ``batch_size`` at a time, so a sample's text can depend on ``n`` only through float
        rounding of a batched evaluation). An answer ends at an end-of-sequence or end-of-turn
        token, a ``stop`` string or ``max_tokens``; the end marker and stop strings are not in it.
        With ``answer_prefix``, the prompt's text is followed by it (tokenized as one string, as
        :class:`~pragmodels.lm.llamacpp.LlamaCppLM` does), the model writes the rest, and each text
        returned starts with the prefix (stop strings are looked for after it). The draws are not
        llama.cpp's: the two backends give different samples for one seed.

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
        p = self.tokenize(self._format.prefix(prompt) + answer_prefix, bos=True)
        if len(p) + max_tokens > self.n_ctx:
            raise ContextLengthError(f"the prompt ({len(p)} tokens) and max_tokens = {max_tokens} do not fit "
                                     f"n_ctx = {self.n_ctx}.")
        stops = [s for s in list(stop) + [self._format.end] if s]
        texts: list[str] = []
        for start in range(0, n, self.batch_size):
            seeds = [int(seed) + i for i in range(start, min(n, start + self.batch_size))]
            batch = self._sample_batch(p, seeds, float(temperature), max_tokens, stops)
            texts.extend(answer_prefix + t for t in batch)
        return texts

    def _cut(self, ids: list[int], stops: list[str]) -> tuple[str, bool]:
        """(text of ``ids`` up to the first stop string, whether one was found)."""
        text = str(self._tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False))
        cuts = [k for k in (text.find(s) for s in stops) if k >= 0]
        return (text[:min(cuts)], True) if cuts else (text, False)

    def _sample_batch(self, p: list[int], seeds: list[int], temperature: float, max_tokens: int,
                      stops: list[str]) -> list[str]:
        torch = self._torch
        b = len(seeds)
        gens = [torch.Generator().manual_seed(s) for s in seeds]
        generated: list[list[int]] = [[] for _ in range(b)]
        texts: list[str | None] = [None] * b
        eos = set(self._eos)
        with torch.no_grad():
            prompt_cache, last = self._prompt(p)
            wide = torch.float32 if last.device.type == "mps" else torch.float64
            logits = last[None, :].expand(b, -1)  # [row, vocab]
            cache = self._batch_cache(prompt_cache, b)
            for step in range(max_tokens):
                probs = torch.softmax(logits.to(wide) / temperature, -1)
                cdf = probs.cumsum(-1)
                u = torch.stack([torch.rand((), generator=g, dtype=torch.float64) for g in gens]).to(cdf.device, wide)
                tok = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True)[:, 0]
                tok = tok.clamp(max=cdf.shape[-1] - 1).tolist()
                for r in range(b):
                    if texts[r] is not None:
                        continue
                    if tok[r] in eos:
                        texts[r] = self._cut(generated[r], stops)[0]
                        continue
                    generated[r].append(int(tok[r]))
                    text, stopped = self._cut(generated[r], stops)
                    if stopped or step == max_tokens - 1:
                        texts[r] = text
                if all(t is not None for t in texts):
                    break
                feed = torch.tensor([[t if texts[r] is None else self._pad] for r, t in enumerate(tok)],
                                    dtype=torch.long, device=self.device)
                out, cache = self._forward(feed, cache)
                logits = out[:, -1].float()
        return [t if t is not None else self._cut(g, stops)[0] for t, g in zip(texts, generated)]
