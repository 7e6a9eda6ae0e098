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
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

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
    for a larger LM on a GPU machine. As every config section, it allows no unknown key and
    coerces no JSON type.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    backend: Literal["llamacpp", "openai"] = Field("llamacpp", description="'llamacpp' (a GGUF file) or 'openai' "
                                                                         "(a server)")
    model: str = Field(description="'smollm2', 'gemma3', a .gguf path, or the server's model name")
    base_url: str | None = Field(None, description="the server's base URL (backend 'openai')")
    # `scores`: what Wavelength configs called it before the studies became packages
    outputs: str | None = Field(None, validation_alias=AliasChoices("outputs", "scores"),
                                description="where the study reads this LM's outputs, made beforehand by its "
                                                  "scoring script (relative to the repository root; default: the "
                                                  "study's folder under fits/)")

    @field_validator("backend", mode="before")
    @classmethod
    def _server_names_are_openai(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().lower() in OPENAI_COMPATIBLE_SERVERS:
            raise ValueError(f"expected 'llamacpp' or 'openai'; a {value} server speaks the OpenAI API: use "
                             "backend 'openai' with its base_url and the model name it serves")
        return value

    def open(self, *, prompt_format: Literal["chat", "plain"] | None = None, chat_template_gguf: str | None = None,
             n_ctx: int | None = None, threads: int | None = None) -> LanguageModel:
        """The model to score or sample with (:func:`pragmodels.lm.score_file.open_model`).

        Parameters
        ----------
        prompt_format : {"chat", "plain"}, optional
            For a GGUF file (default: :data:`BUNDLED_PROMPT_FORMATS` for a bundled model, else
            ``"chat"``).
        chat_template_gguf : str, optional
            For a server: prompt in the chat format of this GGUF file (read for its template
            only); default plain text.
        n_ctx, threads : int, optional
            Context window and CPU threads of a GGUF file in this process.

        Returns
        -------
        LanguageModel

        Raises
        ------
        ValueError
            A server without ``base_url``, or in-process settings given for a server.
        ModelFileError, LMError
            As :func:`~pragmodels.lm.score_file.open_model`.
        """
        from pragmodels.lm.score_file import BUNDLED_NAMES, open_model

        if self.backend == "openai":
            if not self.base_url:
                raise ValueError(f"LM {self.model!r}: backend 'openai' needs base_url.")
            return open_model(chat_template_gguf, prompt_format="chat" if chat_template_gguf else "plain",
                              n_ctx=n_ctx, threads=threads, base_url=self.base_url, server_model=self.model)
        fmt = prompt_format or BUNDLED_PROMPT_FORMATS.get(BUNDLED_NAMES.get(self.model.lower(), ""), "chat")
        return open_model(self.model, prompt_format=fmt, n_ctx=n_ctx, threads=threads)


def add_lm_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options that choose a scoring script's LM: ``--lm``, ``--base-url``, ``--server-model``,
    ``--chat-template-gguf`` and ``--threads`` (read back by :func:`open_lm_from_arguments`).

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
    parser.add_argument("--chat-template-gguf", help="score in that GGUF's chat format (default: plain text)")
    parser.add_argument("--threads", type=int, default=2)


def open_lm_from_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, *, n_ctx: int) -> LanguageModel:
    """The LM the options of :func:`add_lm_arguments` name, behind the score cache (:class:`~pragmodels.lm.cache.CachedLM`).

    A server (``--base-url``, which needs ``--server-model``) or a bundled GGUF (``--lm`` one of
    :data:`BUNDLED_PROMPT_FORMATS`, in this process with ``n_ctx`` and ``--threads``); anything
    else is ``parser.error`` naming the value.

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

    if args.base_url:
        if not args.server_model:
            parser.error("--base-url needs --server-model (the model name the server serves).")
        entry = LMEntry.model_validate({"backend": "openai", "model": args.server_model, "base_url": args.base_url})
        return CachedLM(entry.open(chat_template_gguf=args.chat_template_gguf))
    if args.lm not in BUNDLED_PROMPT_FORMATS:
        parser.error(f"--lm {args.lm!r}: not a bundled model ({sorted(BUNDLED_PROMPT_FORMATS)}); pass --base-url for a "
                     "server.")
    return CachedLM(LMEntry.model_validate({"model": args.lm}).open(n_ctx=n_ctx, threads=args.threads))
