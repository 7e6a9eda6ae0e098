"""Where a chat template comes from when the model is scored over a server, which applies none.

Layering: the standard library and :mod:`pragmodels.lm.base`; ``llama_cpp`` (a GGUF file's
template) and ``transformers`` (a Hugging Face tokenizer's, without torch) are imported when asked.

A source is named by a string (:func:`parse_template_source`): ``"server"`` (the server renders its
own template: vLLM's ``/tokenize`` with messages, llama.cpp's ``/apply-template``; asked by
:class:`~pragmodels.lm.openai_http.OpenAICompatibleLM`), ``"gguf:PATH"`` (:func:`gguf_prompt_format`),
``"hf:NAME_OR_DIR"`` (:func:`hf_prompt_format`) or ``"plain"`` (plain text, for a base model: only
when asked for).
"""

from __future__ import annotations

import os

from pragmodels.lm.base import LMError, PromptFormat

__all__ = ["TEMPLATE_SOURCES", "parse_template_source", "gguf_prompt_format", "hf_prompt_format", "USER", "ANSWER"]

#: the forms a template source takes
TEMPLATE_SOURCES = ("server", "plain", "gguf:PATH", "hf:NAME_OR_DIR")

#: placeholders a conversation is rendered with, then split at (letters only: they survive any
#: tokenizer's round trip, which a server's /tokenize + /detokenize is)
USER = "PRAGMODELSUSERTURN"
ANSWER = "PRAGMODELSANSWERTURN"


def parse_template_source(spec: object) -> tuple[str, str]:
    """``(kind, value)`` of a template source: ``("server", "")``, ``("plain", "")``,
    ``("gguf", PATH)`` or ``("hf", NAME)``.

    Parameters
    ----------
    spec : str
        ``"server"``, ``"plain"``, ``"gguf:PATH"`` or ``"hf:NAME_OR_DIR"``.

    Returns
    -------
    (str, str)

    Raises
    ------
    ValueError
        Anything else, naming the value and the forms expected.
    """
    if isinstance(spec, str):
        kind, sep, value = spec.partition(":")
        if not sep and spec in ("server", "plain"):
            return spec, ""
        if sep and kind in ("gguf", "hf") and value.strip():
            return kind, value.strip()
    raise ValueError(f"chat template source {spec!r}; expected one of {', '.join(map(repr, TEMPLATE_SOURCES))}.")


def gguf_prompt_format(path: str | os.PathLike[str]) -> PromptFormat:
    """The chat format of a GGUF file's own template, read without loading the weights.

    The same format :class:`~pragmodels.lm.llamacpp.LlamaCppLM` uses for ``prompt_format="chat"``
    (what a llama.cpp server of that file should be scored with); only the vocabulary is loaded.

    Parameters
    ----------
    path : str or path-like
        The ``.gguf`` file.

    Returns
    -------
    PromptFormat
        With ``source="gguf:PATH"``.

    Raises
    ------
    ModelFileError
        The file is missing or not GGUF.
    LMError
        ``llama-cpp-python`` is not installed, or the file has no chat template.
    """
    from pragmodels.lm.llamacpp import check_gguf

    p = check_gguf(path)
    try:
        from llama_cpp import Llama
    except ImportError as e:
        raise LMError("llama-cpp-python is not installed (needed to read a GGUF file's template): "
                      "pip install 'pragmodels[lm]', or pass a PromptFormat.") from e
    llm = Llama(model_path=str(p), vocab_only=True, verbose=False)
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise LMError(f"model file {p} has no chat template; use PromptFormat.plain().")

    def tok(i: int) -> str:
        return llm.detokenize([i], special=True).decode("utf-8", "replace") if i >= 0 else ""

    adds_bos = bool(llm._model.add_bos_token()) and llm.token_bos() >= 0
    return PromptFormat.from_chat_template(template, bos_token=tok(llm.token_bos()), eos_token=tok(llm.token_eos()),
                                           strip_bos=adds_bos, source=f"gguf:{p}")


def hf_prompt_format(name: str | os.PathLike[str]) -> PromptFormat:
    """The chat format of a Hugging Face tokenizer's template (``transformers.AutoTokenizer``; no torch).

    For a model served where the server cannot render its template (llama-cpp-python's server)
    and no GGUF file is at hand. ``name`` is a local folder or a model already in the Hugging Face
    cache: nothing is downloaded (``local_files_only``; ``HF_HUB_OFFLINE=1`` is set if unset). The
    conversation is rendered by the tokenizer's ``apply_chat_template``; a BOS token the tokenizer
    adds itself is dropped from the front, as for a GGUF file.

    Parameters
    ----------
    name : str or path-like
        A tokenizer folder (``tokenizer_config.json`` with ``chat_template``) or a cached model name.

    Returns
    -------
    PromptFormat
        With ``source="hf:NAME"``.

    Raises
    ------
    LMError
        ``transformers`` is not installed, the tokenizer cannot be loaded, or it has no chat template.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise LMError("reading a Hugging Face tokenizer's chat template needs transformers: pip install transformers "
                      "tokenizers (torch is not needed).") from e
    source = f"hf:{name}"
    try:
        tok = AutoTokenizer.from_pretrained(str(name), local_files_only=True)
    except (OSError, ValueError) as e:
        raise LMError(f"{source}: the tokenizer cannot be loaded from a local folder or the Hugging Face cache "
                      f"(nothing is downloaded): {e}") from e
    if not getattr(tok, "chat_template", None):
        raise LMError(f"{source}: the tokenizer has no chat template; use 'plain' for a base model.")
    text = tok.apply_chat_template([{"role": "user", "content": USER}, {"role": "assistant", "content": ANSWER}],
                                   tokenize=False)
    with_special = list(tok("a").input_ids)
    without = list(tok("a", add_special_tokens=False).input_ids)
    added = with_special[:with_special.index(without[0])] if without and without[0] in with_special else []
    prefix = str(tok.decode(added)) if added else ""
    return PromptFormat.from_rendered(str(text), USER, ANSWER, strip_prefix=prefix, source=source)
