"""pragmodels.lm.entry: an LM as a study config names it, opened the one way (open_model)."""

import pytest
from pydantic import ValidationError

from pragmodels.lm import LlamaCppLM, OpenAICompatibleLM, smollm2_path
from pragmodels.lm.entry import BUNDLED_PROMPT_FORMATS, LMEntry


@pytest.mark.lm
def test_a_bundled_model_opens_in_process_with_its_prompt_format():
    lm = LMEntry(model="smollm2").open(n_ctx=256, threads=1)
    assert isinstance(lm, LlamaCppLM) and lm.path == smollm2_path() and lm.n_ctx == 256
    assert lm.prompt_format.name == "chat" == BUNDLED_PROMPT_FORMATS["smollm2"]
    assert LMEntry(model="smollm2").open(prompt_format="plain", n_ctx=256).prompt_format.name == "plain"
    assert BUNDLED_PROMPT_FORMATS["gemma3"] == "plain"  # a base model: plain text


def test_a_server_entry_opens_a_client_without_contacting_it():
    lm = LMEntry(backend="openai", model="Qwen/Qwen3-32B", base_url="http://127.0.0.1:9/v1").open()
    assert isinstance(lm, OpenAICompatibleLM) and lm.base_url == "http://127.0.0.1:9/v1"
    assert lm.identity == "openai:http://127.0.0.1:9/v1|Qwen/Qwen3-32B" and lm.prompt_format.name == "plain"
    with pytest.raises(ValueError, match="needs base_url"):
        LMEntry(backend="openai", model="m").open()
    with pytest.raises(ValueError, match="--threads"):
        LMEntry(backend="openai", model="m", base_url="http://127.0.0.1:9/v1").open(threads=2)


def test_an_entry_is_checked_like_every_config_section():
    assert LMEntry.model_validate({"model": "smollm2"}).backend == "llamacpp"
    with pytest.raises(ValidationError, match="extra"):
        LMEntry.model_validate({"model": "smollm2", "score": "x.nc"})
    with pytest.raises(ValidationError, match="backend"):
        LMEntry.model_validate({"model": "smollm2", "backend": "opnai"})
    with pytest.raises(ValidationError, match="string"):
        LMEntry.model_validate({"model": 3})


def test_the_former_key_scores_still_names_the_outputs():
    """Wavelength configs before the studies became packages called the outputs `scores`."""
    assert LMEntry.model_validate({"model": "smollm2", "scores": "fits/x"}).outputs == "fits/x"
    assert LMEntry.model_validate({"model": "smollm2", "outputs": "fits/y"}).outputs == "fits/y"
    with pytest.raises(ValidationError, match="extra"):  # both at once: the second is an unknown key
        LMEntry.model_validate({"model": "smollm2", "scores": "fits/x", "outputs": "fits/y"})


@pytest.mark.parametrize("name", ["vllm", "vLLM", "sglang", "ollama"])
def test_a_server_named_as_the_backend_is_told_it_is_openai(name):
    with pytest.raises(ValidationError, match=rf"expected 'llamacpp' or 'openai'; a {name} server speaks the OpenAI API: "
                                              r"use backend 'openai'"):
        LMEntry.model_validate({"model": "m", "backend": name, "base_url": "http://127.0.0.1:8000/v1"})
    with pytest.raises(ValidationError, match=r"Input should be 'llamacpp' or 'openai'"):  # any other name: as before
        LMEntry.model_validate({"model": "m", "backend": "opnai"})


def test_a_scoring_script_opens_its_lm_from_its_command_line(capsys):
    """The options every study scoring script shares (add_lm_arguments) and their one-line errors."""
    import argparse

    from pragmodels.lm.cache import CachedLM
    from pragmodels.lm.entry import add_lm_arguments, open_lm_from_arguments

    parser = argparse.ArgumentParser(prog="score")
    add_lm_arguments(parser)
    for argv, message in ((["--lm", "x", "--base-url", "http://127.0.0.1:9"], "--base-url needs --server-model"),
                          (["--lm", "nope"], "--lm 'nope': not a bundled model")):
        with pytest.raises(SystemExit) as exit_:
            open_lm_from_arguments(parser, parser.parse_args(argv), n_ctx=512)
        assert exit_.value.code == 2 and f"score: error: {message}" in capsys.readouterr().err
    server = open_lm_from_arguments(parser, parser.parse_args(["--lm", "big", "--base-url", "http://127.0.0.1:9",
                                                                "--server-model", "m"]), n_ctx=512)
    assert isinstance(server, CachedLM) and isinstance(server.model, OpenAICompatibleLM)
