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
import difflib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
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

from pragmodels.errors import ConfigError, PragmodelsError
from pragmodels.lm.base import LanguageModel, LMError, PromptFormat

__all__ = ["LMEntry", "SamplesOnlyLM", "BUNDLED_PROMPT_FORMATS", "OPENAI_COMPATIBLE_SERVERS", "add_lm_arguments",
           "lm_entry_from_arguments", "lm_from_arguments", "open_lm_from_arguments", "study_config_file"]

_ENV_URL = "PRAGMODELS_LM_BASE_URL"
_ENV_MODEL = "PRAGMODELS_LM_MODEL"

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
    prompt_format: Literal["chat", "plain"] | None = Field(
        None, description="backend 'llamacpp' or 'hf': 'chat' (the model's own chat template) or 'plain' (plain text, "
                          "for a base model); default: a bundled model's own (smollm2 chat, gemma3 plain), else "
                          "'chat'. A server's is chat_template")
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

    @field_validator("prompt_format")
    @classmethod
    def _an_in_process_format(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("backend") == "openai":
            raise ValueError("a setting of a model in this process; a server's format is chat_template (e.g. "
                             "'plain', or 'gguf:PATH')")
        return value

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

        An entry with semantics ``"samples"`` opens a :class:`SamplesOnlyLM`: it samples, and
        refuses to score without sending a request.

        Parameters
        ----------
        prompt_format : {"chat", "plain"}, optional
            For a GGUF file (default: the entry's ``prompt_format``, else
            :data:`BUNDLED_PROMPT_FORMATS` for a bundled model, else ``"chat"``).
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

        lm: LanguageModel
        if self.backend == "openai":
            if not self.base_url:
                raise ValueError(f"LM {self.model!r}: backend 'openai' needs base_url.")
            sample_api = self.sample_api or ("chat" if self.semantics == "samples" else "completions")
            lm = open_model(chat_template_gguf, n_ctx=n_ctx, threads=threads, base_url=self.base_url,
                            server_model=self.model,
                            chat_template=None if chat_template_gguf else self.chat_template,
                            api_key_env=self.api_key_env or "", sample_api=sample_api, concurrency=concurrency)
        else:
            fmt = (prompt_format or self.prompt_format
                   or BUNDLED_PROMPT_FORMATS.get(BUNDLED_NAMES.get(self.model.lower(), ""), "chat"))
            if self.backend == "hf":
                lm = self._open_hf(fmt, chat_template_gguf=chat_template_gguf, n_ctx=n_ctx, threads=threads)
            else:
                lm = open_model(self.model, prompt_format=fmt, n_ctx=n_ctx, threads=threads)
        return SamplesOnlyLM(lm) if self.semantics == "samples" else lm

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

class SamplesOnlyLM:
    """The model of an entry with semantics ``"samples"``: it samples, and refuses to score.

    A model that gives no log-probabilities (a hosted chat model) is never asked for them:
    :meth:`score` raises before any request is sent. Everything else is the wrapped model's.

    Parameters
    ----------
    model : LanguageModel
        The model the entry opened (or that model behind the score cache).
    """

    def __init__(self, model: LanguageModel):
        self.model = model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "model":  # (copy and pickle look for these before __init__ ran)
            raise AttributeError(name)
        return getattr(self.model, name)

    def __repr__(self) -> str:
        return f"SamplesOnlyLM({self.model!r})"

    @property
    def identity(self) -> str:
        """The wrapped model's identity."""
        return self.model.identity

    @property
    def prompt_format(self) -> PromptFormat:
        """The wrapped model's prompt format."""
        return self.model.prompt_format

    def _refusal(self) -> LMError:
        return LMError(f'LM {self.identity!r}: its entry has semantics "samples" (its answers are sampled and counted), '
                       "so it is never scored and no scoring request was sent; this step scores: set semantics "
                       '"scores" (--semantics scores) for a model that gives log-probabilities, or run the '
                       "study's sampled route.")

    def score(self, prompt: str, continuations: Sequence[str], *, length_normalize: bool = False) -> np.ndarray:
        """Refused: an entry with semantics ``"samples"`` is never scored.

        Parameters
        ----------
        prompt : str
            The user's prompt.
        continuations : sequence of str
            Candidate answers.
        length_normalize : bool
            Mean instead of sum of token log-probabilities.

        Returns
        -------
        numpy.ndarray
            Never.

        Raises
        ------
        LMError
            Always, naming the setting.
        """
        raise self._refusal()

    def score_many(self, requests: Sequence[Any], on_result: Any = None) -> list[np.ndarray]:
        """Refused, as :meth:`score`.

        Parameters
        ----------
        requests : sequence of ScoreRequest
            The prompts.
        on_result : callable, optional
            Never called.

        Returns
        -------
        list of numpy.ndarray
            Never.

        Raises
        ------
        LMError
            Always.
        """
        raise self._refusal()

    def sample(self, prompt: str, n: int, *, temperature: float = 1.0, max_tokens: int = 32,
               stop: Sequence[str] = (), seed: int = 0, answer_prefix: str = "") -> list[str]:
        """The wrapped model's samples (:meth:`~pragmodels.lm.base.LanguageModel.sample`).

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
            Strings that end an answer.
        seed : int
            Seed of the first sample.
        answer_prefix : str
            Text the answer starts with.

        Returns
        -------
        list of str
        """
        return self.model.sample(prompt, n, temperature=temperature, max_tokens=max_tokens, stop=stop, seed=seed,
                                 answer_prefix=answer_prefix)


#: the options of backend 'hf', as add_lm_arguments names them (the entry's keys, with dashes)
_HF_OPTIONS = ("dtype", "device", "device_map", "batch_size")
#: the options only a server takes (argparse's names)
_SERVER_OPTIONS = ("server_model", "chat_template_gguf", "chat_template", "api_key_env", "sample_api", "concurrency")
#: every option of add_lm_arguments (argparse's names)
_OPTIONS = ("lm", "config", "backend", "model", "prompt_format", "n_ctx", "threads", "semantics", "base_url",
            *_SERVER_OPTIONS, *_HF_OPTIONS)


def add_lm_arguments(parser: argparse.ArgumentParser, *, standalone: bool = False) -> None:
    """Add the options that choose an LM, the same for every study's LM step and ``pragmodels lm``.

    ``--lm NAME`` (with ``--config FILE``: the entry ``lms[NAME]`` of that study config), then the
    entry's keys: ``--backend``, ``--model``, ``--prompt-format``, ``--semantics``, a server's
    (``--base-url``, ``--server-model``, ``--chat-template``, ``--chat-template-gguf``,
    ``--api-key-env``, ``--sample-api``, ``--concurrency``), backend ``hf``'s (``--dtype``,
    ``--device``, ``--device-map``, ``--batch-size``) and ``--threads`` (read back by
    :func:`open_lm_from_arguments`).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    standalone : bool
        ``pragmodels lm score``'s variant: ``--lm`` optional (a label), ``--n-ctx``, and a server's
        URL, model and key from ``$PRAGMODELS_LM_BASE_URL``, ``$PRAGMODELS_LM_MODEL`` and
        ``$OPENAI_API_KEY`` when not given.

    Returns
    -------
    None
    """
    def add(*flags: str, **kw: Any) -> None:
        if "choices" not in kw and "type" not in kw:
            kw["type"] = _given  # (an empty value is a mistake: `--model ""` read as the current folder)
        parser.add_argument(*flags, **kw)

    parser.set_defaults(_lm_standalone=standalone)
    add("--lm", required=not standalone, metavar="NAME",
        help="the LM's name: an entry of --config's lms, a bundled model (smollm2, gemma3), or a label for "
             "--model or --base-url" + (" (optional here)" if standalone else " (its outputs are named after it)"))
    add("--config", metavar="FILE|STUDY", help="a study config, or a study's name (fits/STUDY.json): open its LM "
                                               "entry lms[NAME] (--lm NAME); LM options given too must agree with it")
    add("--backend", choices=("llamacpp", "openai", "hf"),
        help="llamacpp (a GGUF file in this process; the default), openai (a server: --base-url) or hf "
             "(transformers and PyTorch, on a GPU where there is one; the hf extra)")
    add("--model", metavar="PATH.gguf|smollm2|gemma3",
        help="the model file (a .gguf path or a bundled model), or with --backend hf also a checkpoint folder or an "
             "org/name in the local Hugging Face cache (default: the bundled model --lm names); with --base-url, "
             "read for its chat template only")
    add("--prompt-format", choices=("chat", "plain"),
        help="chat: the model's own chat template; plain: prompt, newline, answer (a base model) (default: a bundled "
             "model's own, smollm2 chat and gemma3 plain, else chat)")
    add("--semantics", choices=("scores", "samples"),
        help="scores (log-probabilities; the default) or samples (answers sampled and counted: a model that gives no "
             "log-probabilities, e.g. a hosted chat model; never scored)")
    if standalone:
        from pragmodels.lm.llamacpp import DEFAULT_N_CTX  # (llama_cpp is imported at first use)

        add("--n-ctx", type=int, metavar="N", help=f"context window in tokens of the in-process model (default "
                                                   f"{DEFAULT_N_CTX}); prompt and continuation must fit")
    add("--threads", type=int, metavar="N", help="CPU threads of the llama.cpp model (default 2)")
    server = "with --base-url: "
    add("--base-url", metavar="URL", help="an OpenAI-compatible server (vLLM, llama.cpp, a hosted API), e.g. "
                                          "http://127.0.0.1:8080/v1" + (" (default $PRAGMODELS_LM_BASE_URL when "
                                                                        "neither --model nor --lm is given)"
                                                                        if standalone else ""))
    add("--server-model", metavar="NAME", help=server + "the model name the server serves" + (
        " (default $PRAGMODELS_LM_MODEL, else the only one it lists)" if standalone else ""))
    add("--chat-template", metavar="SOURCE",
        help=server + "where the chat template comes from: server (default: the server renders it; vLLM, llama.cpp's "
                      "llama-server), gguf:PATH, hf:NAME_OR_DIR, or plain (a base model)")
    add("--chat-template-gguf", metavar="FILE", help=server + "the same as --chat-template gguf:FILE")
    add("--api-key-env", metavar="VAR", help=server + "the environment variable that holds the API key, e.g. "
                                                      "OPENAI_API_KEY (never the key itself)" + (
        " (default OPENAI_API_KEY where it is set)" if standalone else ""))
    add("--sample-api", choices=("completions", "chat"),
        help=server + "where samples come from (default chat with --semantics samples, else completions)")
    add("--concurrency", type=int, metavar="N", help=server + "most requests in flight (default 8)")
    add("--dtype", help="with --backend hf: float32, bfloat16 or float16 (default bfloat16 on a GPU, float32 on the "
                        "CPU)")
    add("--device", help="with --backend hf: cpu, cuda, cuda:N or mps (default cuda where available)")
    add("--device-map", help="with --backend hf: auto spreads the model over every GPU")
    add("--batch-size", type=int, metavar="N", help="with --backend hf: continuations per forward pass (default 32)")


def _given(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError(f"the value is empty ({value!r}); expected a name, a path or a URL")
    return value


def lm_entry_from_arguments(args: argparse.Namespace) -> tuple[LMEntry, dict[str, Any]]:
    """The LM entry the options of :func:`add_lm_arguments` name, validated, and its provenance.

    With ``--config FILE --lm NAME``: the entry ``lms[NAME]`` of that study config, with the
    options given too added to it (an option that contradicts one of its keys is refused).
    Otherwise the options alone: a server (``--base-url``), or the bundled model ``--lm`` names,
    or ``--model``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments.

    Returns
    -------
    (LMEntry, dict)
        The entry, and ``{"lm": NAME, "config": FILE}`` (``config`` only when given) with the
        entry's keys under ``"entry"`` (the key's variable's name, never a key).

    Raises
    ------
    ValueError
        One line naming the option (or the config's key) and its value.
    """
    a: dict[str, Any] = {k: getattr(args, k, None) for k in _OPTIONS}
    standalone = bool(getattr(args, "_lm_standalone", False))
    name, path, raw = a["lm"], None, None
    if a["config"] is not None:
        if name is None:
            raise ValueError(f"--config {a['config']}: pass --lm NAME, the entry of its lms to open.")
        path, raw = _config_entry(a["config"], name)
    elif standalone and not (a["base_url"] or a["model"] or name) and os.environ.get(_ENV_URL):
        a["base_url"] = os.environ[_ENV_URL]
    if a["base_url"] and a["backend"] not in (None, "openai"):
        raise ValueError(f"--backend {a['backend']} runs the model in this process; --base-url names a server: pass "
                         "one.")
    backend = a["backend"] or ("openai" if a["base_url"] else None) or (raw or {}).get("backend") or "llamacpp"
    if backend == "openai" and raw is None and not a["base_url"]:
        raise ValueError("--backend 'openai' needs --base-url (the server's URL, e.g. http://127.0.0.1:8000/v1).")
    _check_options(a, backend, standalone)
    given = _given_keys(a, backend == "openai")
    if raw is None and "model" not in given:
        given["model"] = _default_model(a, backend, standalone)
    if standalone and raw is None and backend == "openai" and "api_key_env" not in given \
            and os.environ.get("OPENAI_API_KEY"):  # (an entry of a config sends the key it names, or none)
        given["api_key_env"] = ("$OPENAI_API_KEY (set)", "OPENAI_API_KEY")
    data = dict(raw or {})
    if raw is not None:
        entry = _validated(raw, {}, f"lms[{name!r}] in {path}")
        for key, (shown, value) in given.items():
            current = getattr(entry, key)
            if (key in entry.model_fields_set or key in ("backend", "semantics")) and current != value:
                raise ValueError(f"{shown} contradicts lms[{name!r}].{key} = {_shown(key, current)} in {path}: drop "
                                 f"{shown.split()[0]}, or name another LM.")
    data.update({key: value for key, (_, value) in given.items()})
    entry = _validated(data, given, f"lms[{name!r}] in {path}" if raw is not None else "")
    origin = {"lm": name, **({"config": str(path)} if path is not None else {}),
              "entry": entry.model_dump(mode="json", exclude_none=True)}
    return entry, origin


def _check_options(a: dict[str, Any], backend: str, standalone: bool) -> None:
    """Options that belong to another backend, refused before anything is read or loaded."""
    if backend == "openai":
        for option in ("threads", *(("n_ctx",) if standalone else ())):
            if a[option] is not None:
                flag = "--" + option.replace("_", "-")
                raise ValueError(f"{flag} sets the in-process model; a server keeps its own settings (drop {flag}).")
        return
    extra = [o for o in _SERVER_OPTIONS if a[o] is not None]
    if extra:
        raise ValueError(f"--{extra[0].replace('_', '-')} is a setting of a server: it needs --base-url.")
    if backend != "hf":
        hf = [o for o in _HF_OPTIONS if a[o] is not None]
        if hf:
            raise ValueError(f"--{hf[0].replace('_', '-')} is a setting of --backend hf.")
    elif a["threads"] is not None:
        raise ValueError("--threads sets the llama.cpp model's CPU threads; torch (--backend hf) reads OMP_NUM_THREADS.")


def _given_keys(a: dict[str, Any], server: bool) -> dict[str, tuple[str, Any]]:
    """The entry's keys the options set: key -> (the option, its value)."""
    from pragmodels.lm.score_file import resolve_model_path

    given: dict[str, tuple[str, Any]] = {}

    def put(key: str, option: str, value: Any, as_given: Any = None) -> None:
        if value is None:
            return
        shown = f"{option} {_shown(key, value if as_given is None else as_given)}"
        if key in given and given[key][1] != value:
            raise ValueError(f"{given[key][0]} and {shown} contradict each other: pass one.")
        given[key] = (shown, value)

    put("backend", "--backend", a["backend"])
    put("backend", "--base-url", "openai" if a["base_url"] else None, a["base_url"])
    put("base_url", "--base-url", a["base_url"])
    if server:
        put("model", "--server-model", a["server_model"])
        for option, file in (("--model", a["model"]), ("--chat-template-gguf", a["chat_template_gguf"])):
            put("chat_template", option, None if file is None else f"gguf:{resolve_model_path(file)}", file)
        source = a["chat_template"]
        if isinstance(source, str) and source.startswith("gguf:") and source[5:].strip():
            source = f"gguf:{resolve_model_path(source[5:].strip())}"  # (a bundled name, or ~)
        put("chat_template", "--chat-template", source, a["chat_template"])
        template = given.get("chat_template", (None, None))[1]
        # plain text against a template source, or a chat format against the plain source
        if a["prompt_format"] is not None and template is not None and (a["prompt_format"] == "plain") != (
                template == "plain"):
            raise ValueError(f"--prompt-format {a['prompt_format']!r} and {given['chat_template'][0]} contradict "
                             "each other: pass one.")
        put("chat_template", "--prompt-format", "plain" if a["prompt_format"] == "plain" else None)
    else:
        put("model", "--model", a["model"])
        put("prompt_format", "--prompt-format", a["prompt_format"])
    for key in ("semantics", "api_key_env", "sample_api", *_HF_OPTIONS):
        put(key, "--" + key.replace("_", "-"), a[key])
    return given


def _default_model(a: dict[str, Any], backend: str, standalone: bool) -> tuple[str, str]:
    """The model when no option names it: the server's (from the environment, or the only one it
    lists, for ``pragmodels lm score``), or the bundled model ``--lm`` names."""
    from pragmodels.lm.score_file import BUNDLED_NAMES

    name = a["lm"]
    if backend == "openai":
        model = os.environ.get(_ENV_MODEL) if standalone else None
        if standalone and not model and a["base_url"]:
            from pragmodels.lm.openai_http import OpenAICompatibleLM

            model = OpenAICompatibleLM(a["base_url"], prompt_format="plain").model  # (asks the server)
        if not model:
            raise ValueError("--base-url needs --server-model (the model name the server serves).")
        return (f"--server-model {model!r}", model)
    if name is not None and name.lower() in BUNDLED_NAMES:
        return (f"--lm {name!r}", name)
    if name is not None:
        raise ValueError(f"--lm {name!r}: not a bundled model ({sorted(BUNDLED_PROMPT_FORMATS)}); pass --model (a model "
                         "file), --base-url (a server), or --config FILE (a study config with this entry in lms).")
    raise ValueError("no model: pass --model PATH.gguf (or smollm2, gemma3), --base-url URL for a server (or set "
                     f"${_ENV_URL}), or --config FILE --lm NAME.")


def _shown(key: str, value: object) -> str:
    """A value in a message (an API key pasted where its variable's name goes is not shown)."""
    if key == "api_key_env" and not (isinstance(value, str) and _ENV_NAME.fullmatch(value)):
        return "(not shown)"
    return repr(value)


def _validated(data: dict[str, Any], given: dict[str, tuple[str, Any]], where: str) -> LMEntry:
    """``LMEntry`` of ``data``, or one line naming the option (or the config's key) that is wrong."""
    try:
        return LMEntry.model_validate(data)
    except ValidationError as e:
        problem = e.errors()[0]
        key = str(problem["loc"][0]) if problem["loc"] else "backend"
        message = str(problem["msg"]).removeprefix("Value error, ").rstrip(".")
        if key in given:
            raise ValueError(f"{given[key][0]}: {message}.") from None
        raise ValueError(f"{where + ': ' if where else ''}{key}: {message}." if problem["loc"] or not where
                         else f"{where}: {message}.") from None


def study_config_file(config: str) -> Path:
    """A study config's path, from a path or a study's name (as ``pragmodels run`` and ``pragmodels
    tables`` read it).

    Parameters
    ----------
    config : str
        A file, or a name ending in ``.json``: itself; else a study's name, looked up as
        ``fits/<config>.json`` from the current folder up to the repository's root.

    Returns
    -------
    Path

    Raises
    ------
    ConfigError
        No such file, naming the places tried.
    """
    path = Path(config)
    if path.suffix == ".json" or path.is_file():
        return path
    tried = []
    for d in (Path.cwd(), *Path.cwd().parents):
        tried.append(d / "fits" / f"{config.replace('-', '_')}.json")
        if tried[-1].is_file():
            return tried[-1]
        if (d / "pyproject.toml").exists() or (d / ".git").exists():
            break
    raise ConfigError(f"--config {config!r}: no such file, and no study config {' or '.join(map(str, tried))}.")


def _config_entry(config: str, name: str) -> tuple[Path, dict[str, Any]]:
    """The study config ``config`` names and its (unvalidated) entry ``lms[name]``."""
    path = study_config_file(config)
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"--config {path}: cannot be read ({e.strerror or e}).") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"--config {path}: not a JSON file ({e}).") from None
    lms = cfg.get("lms") if isinstance(cfg, dict) else None
    if not isinstance(lms, dict) or not lms:
        raise ConfigError(f"--config {path}: it has no lms entries, so --lm {name!r} names none (add "
                          f'"lms": {{"{name}": {{"backend": ..., "model": ...}}}}, or drop --config).')
    if name not in lms:
        near = difflib.get_close_matches(name, [str(k) for k in lms], n=1, cutoff=0.6)
        raise ConfigError(f"--lm {name!r}: not an entry of lms in {path} ({', '.join(map(repr, lms))})"
                          + (f"; did you mean {near[0]!r}?" if near else "."))
    if not isinstance(lms[name], dict):
        raise ConfigError(f"lms[{name!r}] in {path}: expected an object, got {json.dumps(lms[name])[:60]}.")
    return path, lms[name]


def lm_from_arguments(args: argparse.Namespace, *, n_ctx: int | None = None, entry: LMEntry | None = None
                      ) -> tuple[LanguageModel, LMEntry, dict[str, Any]]:
    """The LM the options of :func:`add_lm_arguments` name (:func:`lm_entry_from_arguments`), opened.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments.
    n_ctx : int, optional
        Context window of a model in this process, when ``--n-ctx`` does not set it.
    entry : LMEntry, optional
        The entry :func:`lm_entry_from_arguments` gave for ``args`` (it is not resolved again;
        the provenance returned is then ``{}``).

    Returns
    -------
    (LanguageModel, LMEntry, dict)
        The model (not behind the cache), its entry, and the provenance of
        :func:`lm_entry_from_arguments`.

    Raises
    ------
    ValueError, PragmodelsError, OSError
        One line: an option, the entry, or the model cannot be used.
    """
    origin: dict[str, Any] = {}
    if entry is None:
        entry, origin = lm_entry_from_arguments(args)
    if entry.backend == "openai":
        lm = entry.open(concurrency=getattr(args, "concurrency", None))
    else:
        own = getattr(args, "n_ctx", None) if getattr(args, "_lm_standalone", False) else None
        lm = entry.open(n_ctx=own if own is not None else n_ctx, threads=getattr(args, "threads", None))
    return lm, entry, origin


def open_lm_from_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, *, n_ctx: int) -> LanguageModel:
    """The LM the options of :func:`add_lm_arguments` name, behind the score cache (:class:`~pragmodels.lm.cache.CachedLM`).

    A server (``--base-url``, which needs ``--server-model``), or a model in this process: the
    bundled model ``--lm`` names (one of :data:`BUNDLED_PROMPT_FORMATS`) or ``--model``, through
    llama.cpp (with ``n_ctx`` and ``--threads``) or, with ``--backend hf``, transformers (with
    ``n_ctx``, ``--dtype``, ``--device``, ``--device-map``, ``--batch-size``); or the entry
    ``lms[NAME]`` of ``--config``. Anything wrong is ``parser.error``, one line naming the option
    and the value. An entry with semantics ``"samples"`` gives a :class:`SamplesOnlyLM`. The model
    returned carries ``lm_entry``, the provenance of :func:`lm_entry_from_arguments` (the entry,
    its name and config), for the step's manifests.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The script's parser (for its one-line errors).
    args : argparse.Namespace
        The parsed arguments.
    n_ctx : int
        Context window of a model in this process.

    Returns
    -------
    LanguageModel
    """
    from pragmodels.lm.cache import CachedLM

    try:
        lm, _, origin = lm_from_arguments(args, n_ctx=n_ctx)
    except (ValueError, PragmodelsError, OSError) as e:
        parser.error(" ".join(str(e).split()))
    # (refused before the cache is asked)
    out = SamplesOnlyLM(CachedLM(lm.model)) if isinstance(lm, SamplesOnlyLM) else CachedLM(lm)
    setattr(out, "lm_entry", origin)  # noqa: B010  # for the step's manifests (no key: the variable's name)
    return out
