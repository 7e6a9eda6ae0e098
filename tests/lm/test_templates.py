"""Where a chat template comes from (pragmodels.lm.templates): the sources' names, and a Hugging Face
tokenizer's template against the GGUF file's (the server-rendered source: tests/lm/test_openai_http.py)."""

from __future__ import annotations

import pytest

from pragmodels.lm import LMError, PromptFormat
from pragmodels.lm.templates import ANSWER, USER, parse_template_source


def test_template_sources():
    assert parse_template_source("server") == ("server", "")
    assert parse_template_source("plain") == ("plain", "")
    assert parse_template_source("gguf:/m/a.gguf") == ("gguf", "/m/a.gguf")
    assert parse_template_source("hf:Qwen/Qwen3-32B") == ("hf", "Qwen/Qwen3-32B")
    for bad in ("chat", "gguf:", "hf: ", "jinja:x", 3, None):
        with pytest.raises(ValueError, match="expected one of 'server', 'plain', 'gguf:PATH', 'hf:NAME_OR_DIR'"):
            parse_template_source(bad)


def test_a_rendered_conversation_is_split_at_its_placeholders():
    text = f"<s>[INST] {USER} [/INST] {ANSWER}</s>\n"
    fmt = PromptFormat.from_rendered(text, USER, ANSWER, strip_prefix="<s>", source="x")
    assert (fmt.before, fmt.between, fmt.end, fmt.source) == ("[INST] ", " [/INST] ", "</s>", "x")
    assert fmt == PromptFormat("chat", "[INST] ", " [/INST] ", "</s>")  # the source is not part of equality
    with pytest.raises(LMError, match="the chat template of y does not render a user turn followed by"):
        PromptFormat.from_rendered(f"{ANSWER} {USER}", USER, ANSWER, source="y")


@pytest.mark.lm
@pytest.mark.slow  # 20-45 s: transformers converts the GGUF file's vocabulary to a tokenizer
def test_a_hugging_face_tokenizer_gives_the_gguf_files_format(tmp_path):
    """The tokenizer folder transformers makes of SmolLM2's GGUF file: its template (rendered by
    apply_chat_template, without torch) is the format gguf_prompt_format reads from the file. Needs
    transformers, tokenizers and gguf (the hf extra's; `make install` does not install them):
    skipped without them."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from transformers import AutoTokenizer

    from pragmodels.lm import gguf_prompt_format, hf_prompt_format, smollm2_path

    path = smollm2_path()
    AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name).save_pretrained(tmp_path)
    fmt = hf_prompt_format(tmp_path)
    assert fmt == gguf_prompt_format(path) and fmt.source == f"hf:{tmp_path}"
    with pytest.raises(LMError, match="cannot be loaded from a local folder or the Hugging Face cache"):
        hf_prompt_format(tmp_path / "missing")
