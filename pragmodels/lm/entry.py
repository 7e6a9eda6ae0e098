"""An LM as a study config names it, and the one way a study script opens it.

Layering: ``pydantic``, :mod:`pragmodels.lm.base` and :mod:`pragmodels.lm.score_file`
(:func:`~pragmodels.lm.score_file.open_model`, imported when a model is opened).

A study config lists its LMs by name (``"lms": {"smollm2": {"backend": "llamacpp", "model":
"smollm2"}}``), each an :class:`LMEntry`; the study reads the outputs that were made beforehand
(it never calls an LM), and the study's scoring script opens the same entry with
:meth:`LMEntry.open` (from its command line: :func:`add_lm_arguments`, :func:`open_lm_from_arguments`).
"""

from __future__ import annotations

import argparse
import re
from typing import Literal, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pragmodels.lm.base import LanguageModel

__all__ = ["LMEntry", "BUNDLED_PROMPT_FORMATS", "OPENAI_COMPATIBLE_SERVERS", "add_lm_arguments", "open_lm_from_arguments"]

#: how each bundled model is prompted: SmolLM2-135M-Instruct with its chat template, Gemma-3-270M
#: (a base model) with plain text
BUNDLED_PROMPT_FORMATS = {"smollm2": "chat", "gemma3": "plain"}

#: servers that speak the OpenAI API, as users name them in ``backend``: each is ``"openai"``
OPENAI_COMPATIBLE_SERVERS = ("vllm", "sglang", "tgi", "ollama", "lmstudio", "llamacpp-server", "llama.cpp server")


class LMEntry(BaseModel):
    """One LM of a study config: how it is (or would be) run, and where its outputs are.

    ``backend`` ``"llamacpp"``: a GGUF file in-process (``model``: a bundled name or a path);
    ``"openai"``: an OpenAI-compatible server (``base_url``; ``model``: the server's model name)
    for a larger LM on a GPU machine; ``"hf"``: transformers and PyTorch in this process
    (:class:`~pragmodels.lm.hf.TransformersLM`; ``model``: a bundled name, a ``.gguf`` file, a
    checkpoint folder or an ``org/name`` in the local Hugging Face cache) on one GPU (``device``)
    or several (``device_map``), in ``dtype``, ``batch_size`` continuations a forward pass. As
    every config section, it allows no unknown key and coerces no JSON type.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    backend: Literal["llamacpp", "openai", "hf"] = Field("llamacpp", description="'llamacpp' (a GGUF file), 'openai' "
                                                                               "(a server) or 'hf' (transformers)")
    model: str = Field(description="'smollm2', 'gemma3', a .gguf path, the server's model name, or (backend 'hf') a "
                                   "checkpoint folder or an org/name in the local Hugging Face cache")
    base_url: str | None = Field(None, description="the server's base URL (backend 'openai')")
    # issue 35: hosted and served models (backend 'openai')
    api_key_env: str | None = Field(None, description="backend 'openai': the NAME of the environment variable that holds "
                                                      "the API key (the key itself is never written anywhere)")
    chat_template: str | None = Field(None, description="backend 'openai', scores: where the chat template comes from: "
                                                        "'server' (the default: vLLM, llama.cpp's llama-server render "
                                                        "it), 'gguf:PATH', 'hf:NAME_OR_DIR', or 'plain' (plain text, "
                                                        "for a base model)")
    sample_api: Literal["completions", "chat"] | None = Field(
        None, description="backend 'openai': where samples come from: 'chat' (/v1/chat/completions; the default with "
                          "semantics 'samples') or 'completions' (the formatted text that is scored)")
    semantics: Literal["scores", "samples"] = Field("scores", description="'scores' (log-probabilities of the answers) "
                                                                          "or 'samples' (answers sampled and counted: "
                                                                          "for a model that gives no log-probabilities)")
    n: int | None = Field(None, ge=1, description="semantics 'samples': parsed samples per prompt (e.g. 32)")
    # `scores`: what Wavelength configs called it before the studies became packages
    outputs: str | None = Field(None, validation_alias=AliasChoices("outputs", "scores"),
                                description="where the study reads this LM's outputs, made beforehand by its "
                                                  "scoring script (relative to the repository root; default: the "
                                                  "study's folder under fits/)")
    # backend 'hf' (transformers and PyTorch in this process)
    dtype: Literal["float32", "bfloat16", "float16", "float64"] | None = Field(
        None, description="backend 'hf': the weights' float type (default: bfloat16 on a GPU, float32 on the CPU)")
    device: str | None = Field(None, description="backend 'hf': 'cpu', 'cuda', 'cuda:N' or 'mps' (default: 'cuda' "
                                                 "where a GPU is available, else 'cpu')")
    device_map: Literal["auto", "balanced", "balanced_low_0", "sequential"] | None = Field(
        None, description="backend 'hf': spread the layers over every GPU ('auto'), for a model larger than one; "
                          "instead of device")
    batch_size: int | None = Field(None, ge=1, description="backend 'hf': continuations (or samples) per forward pass "
                                                           "(default 32)")

    @field_validator("dtype", "device", "device_map", "batch_size")
    @classmethod
    def _hf_only(cls, value: object, info: ValidationInfo) -> object:
        backend = info.data.get("backend", "hf")
        if value is not None and backend != "hf":
            raise ValueError(f"a setting of backend 'hf' (transformers); this entry's backend is {backend!r}")
        if info.field_name == "device" and isinstance(value, str) and not _TORCH_DEVICE.fullmatch(value):
            raise ValueError("not a torch device: expected 'cpu', 'cuda', 'cuda:N', 'mps', 'xpu' or 'xpu:N'")
        if info.field_name == "device_map" and value is not None and info.data.get("device") is not None:
            raise ValueError("a device_map places every layer itself: give device or device_map, not both")
        return value

    @model_validator(mode="before")
    @classmethod
    def _a_pasted_key_is_not_shown(cls, data: object) -> object:
        value = data.get("api_key_env") if isinstance(data, dict) else None
        if isinstance(value, str) and not _ENV_NAME.fullmatch(value):
            return {**data, "api_key_env": "(not shown)"}  # type: ignore[dict-item]  # errors and logs never see it
        return data

    @field_validator("api_key_env")
    @classmethod
    def _an_environment_variable(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError("must be the name of an environment variable (letters, digits, _) that holds the API key, "
                             "not the key itself (the value given is not shown)")
        return _server_only(value, info)

    @field_validator("chat_template")
    @classmethod
    def _a_template_source(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            from pragmodels.lm.templates import parse_template_source

            parse_template_source(value)
        return _server_only(value, info)

    @field_validator("sample_api")
    @classmethod
    def _a_server_setting(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _server_only(value, info)

    @field_validator("n")
    @classmethod
    def _n_is_for_samples(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and info.data.get("semantics") != "samples":
            raise ValueError("n is the number of samples per prompt: it needs semantics 'samples'")
        return value

    @field_validator("backend", mode="before")
    @classmethod
    def _server_names_are_openai(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in OPENAI_COMPATIBLE_SERVERS:
            raise ValueError(f"expected 'llamacpp', 'openai' or 'hf'; a {value} server speaks the OpenAI API: use "
                             "backend 'openai' with its base_url and the model name it serves")
        return value

    @model_validator(mode="after")
    def _a_server_needs_its_url(self) -> LMEntry:
        if self.backend == "openai" and not self.base_url:
            raise ValueError("backend 'openai' needs base_url (the server's URL, e.g. 'http://host:8000/v1')")
        return self

    def identity_mismatch(self, recorded: str) -> str:
        """Why outputs recorded as made by ``recorded`` (an LM's :attr:`identity`) are not this entry's, or ``""``.

        A GGUF file (backend ``"llamacpp"``, or ``"hf"`` on a GGUF file) is compared by its sha256, a
        server's model by its name (its URL may move), an ``"hf"`` checkpoint by its name.

        Parameters
        ----------
        recorded : str
            The identity the outputs record (``"gguf:<sha256>"``, ``"openai:<url>|<model>"``,
            ``"hf:<name>@<revision>+transformers-<dtype>"``, ...).

        Returns
        -------
        str
        """
        if self.backend == "openai":
            ok = recorded.startswith("openai:") and recorded.rsplit("|", 1)[-1] == self.model
            return "" if ok else f"the entry names server model {self.model!r}"
        from pragmodels.lm.score_file import BUNDLED_NAMES, resolve_model_path

        is_file = self.model.lower() in BUNDLED_NAMES or self.model.lower().endswith(".gguf")
        if self.backend == "hf" and not is_file:
            ok = recorded.startswith(f"hf:{self.model}@") and "+transformers-" in recorded
            return "" if ok else f"the entry names checkpoint {self.model!r} (backend 'hf')"
        from pragmodels.io.checksums import sha256_file

        try:
            expected = f"gguf:{sha256_file(resolve_model_path(self.model), remember=True)}"
        except (OSError, ValueError) as e:
            return f"the entry's model {self.model!r} cannot be read to compare ({e})"
        base = recorded.split("+transformers-", 1)[0]
        ok = base == expected and (("+transformers-" in recorded) == (self.backend == "hf"))
        return "" if ok else f"the entry's model {self.model!r} is {expected} with backend {self.backend!r}"

    def open(self, *, prompt_format: Literal["chat", "plain"] | None = None, chat_template_gguf: str | None = None,
             n_ctx: int | None = None, threads: int | None = None, concurrency: int | None = None) -> LanguageModel:
        """The model to score or sample with (:func:`pragmodels.lm.score_file.open_model`).

        Parameters
        ----------
        prompt_format : {"chat", "plain"}, optional
            For a GGUF file (default: :data:`BUNDLED_PROMPT_FORMATS` for a bundled model, else
            ``"chat"``).
        chat_template_gguf : str, optional
            For a server: prompt in the chat format of this GGUF file (a path or a bundled name;
            read for its template only); default the entry's ``chat_template``, else the server's
            own template (never plain text unless ``chat_template`` is ``"plain"``).
        n_ctx, threads : int, optional
            Context window (also of backend ``"hf"``) and CPU threads of a GGUF file in this
            process.
        concurrency : int, optional
            Most requests in flight to a server.

        Returns
        -------
        LanguageModel

        Raises
        ------
        ValueError
            A server without ``base_url``, in-process settings given for a server, or
            llama.cpp's or a server's settings given for backend ``"hf"``.
        ModelFileError, LMError
            As :func:`~pragmodels.lm.score_file.open_model`.
        """
        from pragmodels.lm.score_file import BUNDLED_NAMES, open_model

        if self.backend == "openai":
            if not self.base_url:
                raise ValueError(f"LM {self.model!r}: backend 'openai' needs base_url.")
            sample_api = self.sample_api or ("chat" if self.semantics == "samples" else "completions")
            return open_model(chat_template_gguf, n_ctx=n_ctx, threads=threads, base_url=self.base_url,
                              server_model=self.model, chat_template=None if chat_template_gguf else self.chat_template,
                              api_key_env=self.api_key_env or "", sample_api=sample_api, concurrency=concurrency)
        fmt = prompt_format or BUNDLED_PROMPT_FORMATS.get(BUNDLED_NAMES.get(self.model.lower(), ""), "chat")
        if self.backend == "hf":
            return self._open_hf(fmt, chat_template_gguf=chat_template_gguf, n_ctx=n_ctx, threads=threads)
        return open_model(self.model, prompt_format=fmt, n_ctx=n_ctx, threads=threads)

    def _open_hf(self, prompt_format: str, *, chat_template_gguf: str | None, n_ctx: int | None,
                 threads: int | None) -> LanguageModel:
        """A :class:`~pragmodels.lm.hf.TransformersLM` (the chat format: the model's own template)."""
        from pragmodels.lm.hf import DEFAULT_BATCH_SIZE, TransformersLM, default_device
        from pragmodels.lm.score_file import BUNDLED_NAMES, resolve_model_path

        for name, v in (("chat_template_gguf", chat_template_gguf), ("threads", threads)):
            if v is not None:
                raise ValueError(f"LM {self.model!r}: {name} is not a setting of backend 'hf' (its chat format is the "
                                 "model's own template; torch sets its CPU threads from OMP_NUM_THREADS).")
        model = resolve_model_path(self.model) if self.model.lower() in BUNDLED_NAMES else self.model
        device = self.device if self.device is not None or self.device_map is not None else default_device()
        return TransformersLM(model, prompt_format=prompt_format, dtype=self.dtype, device=device,
                              device_map=self.device_map, n_ctx=n_ctx,
                              batch_size=self.batch_size if self.batch_size is not None else DEFAULT_BATCH_SIZE)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_T = TypeVar("_T")


def _server_only(value: _T, info: ValidationInfo) -> _T:
    if value is not None and info.data.get("backend", "openai") != "openai":
        raise ValueError(f"a setting of backend 'openai' (a server); this entry's backend is {info.data['backend']!r}")
    return value


#: what backend 'hf' takes as a device
_TORCH_DEVICE = re.compile(r"cpu|mps|(cuda|xpu)(:\d+)?")

#: the options of backend 'hf', as add_lm_arguments names them (the entry's keys, with dashes)
_HF_OPTIONS = ("dtype", "device", "device_map", "batch_size")


def add_lm_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options that choose a scoring script's LM: ``--lm``, ``--backend``, ``--model``, ``--dtype``,
    ``--device``, ``--device-map``, ``--batch-size`` (``--backend hf``), ``--base-url``, ``--server-model``,
    ``--chat-template-gguf``, ``--chat-template``, ``--api-key-env``, ``--sample-api``,
    ``--concurrency`` (a server's) and ``--threads`` (read back by :func:`open_lm_from_arguments`).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The script's parser.

    Returns
    -------
    None
    """
    parser.add_argument("--lm", required=True,
                        help=f"a name: {sorted(BUNDLED_PROMPT_FORMATS)} (bundled) or any label with --base-url")
    parser.add_argument("--base-url", help="an OpenAI-compatible server (vLLM, llama.cpp server) instead of a bundled "
                                           "GGUF")
    parser.add_argument("--server-model", help="the server's model name (with --base-url)")
    parser.add_argument("--chat-template-gguf", help="score in that GGUF's chat format (with --base-url; same as "
                                                     "--chat-template gguf:FILE)")
    parser.add_argument("--chat-template", metavar="SOURCE",
                        help="with --base-url: where the chat template comes from: server (default: the server renders "
                             "it; vLLM, llama.cpp's llama-server), gguf:PATH, hf:NAME_OR_DIR, or plain (a base model)")
    parser.add_argument("--api-key-env", metavar="NAME",
                        help="with --base-url: the environment variable that holds the API key (e.g. OPENAI_API_KEY)")
    parser.add_argument("--sample-api", choices=("completions", "chat"),
                        help="with --base-url: where samples come from (default completions)")
    parser.add_argument("--concurrency", type=int, help="with --base-url: most requests in flight (default 8)")
    parser.add_argument("--backend", choices=("llamacpp", "hf"), default="llamacpp",
                        help="the in-process model's backend: llamacpp (default) or hf (transformers and PyTorch, on "
                             "a GPU where there is one; the hf extra)")
    parser.add_argument("--model", help="the model file (a .gguf path), or with --backend hf also a checkpoint folder "
                                        "or an org/name in the local Hugging Face cache (default: the bundled model "
                                        "--lm names)")
    parser.add_argument("--dtype", help="with --backend hf: float32, bfloat16 or float16 (default bfloat16 on a GPU, "
                                        "float32 on the CPU)")
    parser.add_argument("--device", help="with --backend hf: cpu, cuda, cuda:N or mps (default cuda where available)")
    parser.add_argument("--device-map", help="with --backend hf: auto spreads the model over every GPU")
    parser.add_argument("--batch-size", type=int, help="with --backend hf: continuations per forward pass (default 32)")
    parser.add_argument("--threads", type=int, help="CPU threads of the llama.cpp model (default 2)")


def open_lm_from_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, *, n_ctx: int) -> LanguageModel:
    """The LM the options of :func:`add_lm_arguments` name, behind the score cache (:class:`~pragmodels.lm.cache.CachedLM`).

    A server (``--base-url``, which needs ``--server-model``), or a model in this process: the
    bundled model ``--lm`` names (one of :data:`BUNDLED_PROMPT_FORMATS`) or ``--model``, through
    llama.cpp (with ``n_ctx`` and ``--threads``) or, with ``--backend hf``, transformers (with
    ``n_ctx``, ``--dtype``, ``--device``, ``--device-map``, ``--batch-size``); anything else is
    ``parser.error`` naming the option and the value.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The script's parser (for its one-line errors).
    args : argparse.Namespace
        The parsed arguments.
    n_ctx : int
        Context window of a bundled GGUF.

    Returns
    -------
    LanguageModel
    """
    from pragmodels.lm.cache import CachedLM

    server = {"chat_template": args.chat_template, "api_key_env": args.api_key_env, "sample_api": args.sample_api}
    if args.base_url and args.backend != "llamacpp":
        parser.error(f"--backend {args.backend} runs the model in this process; --base-url names a server: pass one.")
    hf = {k: getattr(args, k) for k in _HF_OPTIONS if getattr(args, k) is not None}
    if args.backend != "hf" and hf:
        parser.error(f"--{next(iter(hf)).replace('_', '-')} is a setting of --backend hf.")
    if args.base_url:
        if not args.server_model:
            parser.error("--base-url needs --server-model (the model name the server serves).")
        try:
            entry = LMEntry.model_validate({"backend": "openai", "model": args.server_model, "base_url": args.base_url,
                                            **{k: v for k, v in server.items() if v is not None}})
            return CachedLM(entry.open(chat_template_gguf=args.chat_template_gguf, concurrency=args.concurrency))
        except (ValueError, ValidationError) as e:
            problem = e.errors()[0] if isinstance(e, ValidationError) else None  # (no value: a pasted key is not shown)
            parser.error(f"--{str(problem['loc'][0]).replace('_', '-')}: "
                         f"{str(problem['msg']).removeprefix('Value error, ')}" if problem else str(e))
    given = [f"--{k.replace('_', '-')}" for k, v in {**server, "concurrency": args.concurrency}.items() if v is not None]
    if given:
        parser.error(f"{given[0]} is a setting of a server: it needs --base-url.")
    if args.model is None and args.lm not in BUNDLED_PROMPT_FORMATS:
        parser.error(f"--lm {args.lm!r}: not a bundled model ({sorted(BUNDLED_PROMPT_FORMATS)}); pass --model (a model "
                     "file) or --base-url (a server).")
    if args.backend == "hf" and args.threads is not None:
        parser.error("--threads sets the llama.cpp model's CPU threads; torch (--backend hf) reads OMP_NUM_THREADS.")
    model = args.model if args.model is not None else args.lm
    try:
        entry = LMEntry.model_validate({"backend": args.backend, "model": model, **hf})
    except ValidationError as e:
        key, msg = str(e.errors()[0]["loc"][0]), str(e.errors()[0]["msg"]).removeprefix("Value error, ")
        parser.error(f"--{key.replace('_', '-')} {hf.get(key)!r}: {msg}.")
    return CachedLM(entry.open(n_ctx=n_ctx, threads=args.threads))
