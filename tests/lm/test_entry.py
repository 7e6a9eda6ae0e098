"""pragmodels.lm.entry: an LM as a study config names it, opened the one way (open_model)."""

import os
import re

import pytest
from pydantic import ValidationError

from pragmodels.io.checksums import sha256_file
from pragmodels.lm import LlamaCppLM, OpenAICompatibleLM, TransformersLM, smollm2_path
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
    assert lm.identity == "openai:http://127.0.0.1:9/v1|Qwen/Qwen3-32B"
    # issue 35, item 3: not plain text (it was, without a word): the server renders the model's template
    assert lm.template_source == "server" and lm._format is None
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
    with pytest.raises(ValidationError, match=rf"expected 'llamacpp', 'openai' or 'hf'; a {name} server speaks the "
                                              r"OpenAI API: use backend 'openai'"):
        LMEntry.model_validate({"model": "m", "backend": name, "base_url": "http://127.0.0.1:8000/v1"})
    with pytest.raises(ValidationError, match=r"Input should be 'llamacpp', 'openai' or 'hf'"):  # any other: as before
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


# ---- backend 'hf' (transformers) -------------------------------------------------------------

requires_hf = pytest.mark.skipif(
    os.environ.get("PRAGMODELS_TEST_HF") != "1",
    reason="needs the hf extra (torch, ~5.7 GB): run `make test-hf` (it sets PRAGMODELS_TEST_HF=1)")


@pytest.mark.parametrize("cfg, message", [
    ({"dtype": "bf16"}, "`dtype` = \"bf16\": expected 'float32', 'bfloat16', 'float16' or 'float64'; did you mean "
                        "'bfloat16'?"),
    ({"device_map": "everywhere"}, "`device_map` = \"everywhere\": expected 'auto', 'balanced', 'balanced_low_0' or "
                                   "'sequential'"),
    ({"device": "gpu0"}, "`device` = \"gpu0\": not a torch device: expected 'cpu', 'cuda', 'cuda:N', 'mps', 'xpu' or "
                         "'xpu:N'"),
    ({"device": "cuda", "device_map": "auto"}, "`device_map` = \"auto\": a device_map places every layer itself: give "
                                               "device or device_map, not both"),
    ({"batch_size": 0}, "`batch_size` = 0: must be greater than or equal to 1"),
    ({"batch_size": True}, "`batch_size` = true: expected an integer, got a boolean"),
    ({"backend": "llamacpp", "dtype": "bfloat16"}, "`dtype` = \"bfloat16\": a setting of backend 'hf' (transformers); "
                                                   "this entry's backend is 'llamacpp'"),
    ({"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "batch_size": 4},
     "`batch_size` = 4: a setting of backend 'hf' (transformers); this entry's backend is 'openai'"),
])
def test_an_hf_entry_is_checked_with_one_line_naming_the_key(cfg, message):
    from pragmodels.errors import ConfigError
    from pragmodels.runs.schema import validate_config

    with pytest.raises(ConfigError) as e:
        validate_config(LMEntry, {"backend": "hf", "model": "smollm2", **cfg}, what="LM entry")
    assert str(e.value) == f"LM entry: {message}"


def test_an_hf_entry_takes_its_settings():
    entry = LMEntry.model_validate({"backend": "hf", "model": "Qwen/Qwen3-32B", "dtype": "bfloat16",
                                    "device_map": "auto", "batch_size": 8})
    assert (entry.backend, entry.dtype, entry.device, entry.device_map, entry.batch_size) == \
        ("hf", "bfloat16", None, "auto", 8)
    assert LMEntry.model_validate({"backend": "hf", "model": "smollm2", "device": "cuda:1"}).device == "cuda:1"


def _parse(argv):
    import argparse

    from pragmodels.lm.entry import add_lm_arguments

    parser = argparse.ArgumentParser(prog="score")
    add_lm_arguments(parser)
    return parser, parser.parse_args(argv)


@pytest.mark.parametrize("argv, message", [
    (["--lm", "smollm2", "--dtype", "bfloat16"], "--dtype is a setting of --backend hf."),
    (["--lm", "x", "--backend", "hf", "--base-url", "http://127.0.0.1:9", "--server-model", "m"],
     "--backend hf runs the model in this process; --base-url names a server: pass one."),
    (["--lm", "big", "--backend", "hf"], "--lm 'big': not a bundled model (['gemma3', 'smollm2']); pass --model"),
    (["--lm", "smollm2", "--backend", "hf", "--threads", "4"], "--threads sets the llama.cpp model's CPU threads"),
    (["--lm", "smollm2", "--backend", "hf", "--dtype", "bf16"],
     "--dtype 'bf16': Input should be 'float32', 'bfloat16', 'float16' or 'float64'."),
    (["--lm", "smollm2", "--backend", "hf", "--device", "cuda", "--device-map", "auto"],
     "--device-map 'auto': a device_map places every layer itself: give device or device_map, not both."),
    (["--lm", "smollm2", "--backend", "hf", "--batch-size", "0"], "--batch-size 0: Input should be greater than or equal"),
])
def test_a_scoring_script_checks_its_hf_options(argv, message, capsys):
    from pragmodels.lm.entry import open_lm_from_arguments

    parser, args = _parse(argv)
    with pytest.raises(SystemExit) as exit_:
        open_lm_from_arguments(parser, args, n_ctx=512)
    assert exit_.value.code == 2 and f"score: error: {message}" in capsys.readouterr().err


@pytest.mark.hf
@requires_hf
def test_an_hf_entry_and_backend_hf_open_transformers():
    import torch

    from pragmodels.lm.cache import CachedLM
    from pragmodels.lm.entry import open_lm_from_arguments

    lm = LMEntry(backend="hf", model="smollm2").open(n_ctx=512)
    assert isinstance(lm, TransformersLM) and lm.n_ctx == 512 and lm.batch_size == 32
    assert lm.dtype == torch.float32 and lm.device == torch.device("cpu")  # this machine has no GPU
    assert lm.identity == f"gguf:{sha256_file(smollm2_path())}+transformers-float32"
    assert lm.prompt_format.name == "chat" == BUNDLED_PROMPT_FORMATS["smollm2"]
    with pytest.raises(ValueError, match="threads is not a setting of backend 'hf'"):
        LMEntry(backend="hf", model="smollm2").open(threads=2)
    parser, args = _parse(["--lm", "smol", "--backend", "hf", "--model", str(smollm2_path()), "--dtype", "bfloat16",
                           "--batch-size", "4"])
    cached = open_lm_from_arguments(parser, args, n_ctx=256)
    assert isinstance(cached, CachedLM) and isinstance(cached.model, TransformersLM)
    assert (cached.model.dtype, cached.model.batch_size, cached.model.n_ctx) == (torch.bfloat16, 4, 256)
    assert cached.identity.endswith("+transformers-bfloat16")


def test_an_entry_for_a_hosted_chat_model(monkeypatch):
    """Issue 35, items 2 and 7: samples through the chat API, the key from the variable the entry names."""
    entry = LMEntry.model_validate({"backend": "openai", "base_url": "https://api.example.com/v1", "model": "gpt-4o",
                                    "semantics": "samples", "n": 32, "api_key_env": "OPENAI_API_KEY"})
    with pytest.raises(ValueError, match=r"\$OPENAI_API_KEY is not set"):
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        entry.open()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-anything")
    lm = entry.open()
    assert isinstance(lm.model, OpenAICompatibleLM) and lm.sample_api == "chat" and lm.api_key_env == "OPENAI_API_KEY"
    scores = LMEntry(backend="openai", base_url="http://127.0.0.1:9/v1", model="m", chat_template="plain").open()
    assert scores.sample_api == "completions" and scores.prompt_format.name == "plain"


@pytest.mark.parametrize("entry, message", [
    ({"model": "m", "n": 32}, "n is the number of samples per prompt: it needs semantics 'samples'"),
    ({"model": "m", "semantics": "samples", "n": 0}, "greater than or equal to 1"),
    ({"model": "smollm2", "api_key_env": "KEY"}, "a setting of backend 'openai' (a server); this entry's backend is "
                                                 "'llamacpp'"),
    ({"model": "smollm2", "sample_api": "chat"}, "a setting of backend 'openai'"),
    ({"model": "m", "backend": "openai", "chat_template": "jinja"}, "chat template source 'jinja'; expected one of "
                                                                    "'server', 'plain', 'gguf:PATH', 'hf:NAME_OR_DIR'"),
    ({"model": "m", "semantics": "sampled"}, "Input should be 'scores' or 'samples'"),
])
def test_the_new_keys_are_checked(entry, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        LMEntry.model_validate(entry)


def test_a_key_pasted_into_api_key_env_is_not_shown():
    """The key itself where its variable's name goes: refused, and in no error message (a log)."""
    from pragmodels.runs.schema import format_validation_error

    data = {"backend": "openai", "model": "m", "base_url": "http://x/v1", "api_key_env": "sk-proj-SECRET123"}
    with pytest.raises(ValidationError) as e:
        LMEntry.model_validate(data)
    shown = str(e.value) + repr(e.value.errors()) + repr(format_validation_error(LMEntry, e.value, data))
    assert "SECRET123" not in shown and "not the key itself (the value given is not shown)" in shown


@pytest.mark.lm
@pytest.mark.subprocess
def test_a_server_without_log_probabilities_leads_to_the_sampling_route(no_logprobs_url, tmp_path):
    """Issue 35, item 8: an entry that asks for scores gets one line naming the setting; the same server
    with semantics 'samples' gives sampled semantics (chat API, through the cache)."""
    from pragmodels.lm import LogprobsUnavailableError, ScoreCache, sample_distribution, tagged_number
    from pragmodels.lm.cache import CachedLM

    base = {"backend": "openai", "base_url": no_logprobs_url, "model": "smollm2"}
    scores = LMEntry.model_validate(base | {"chat_template": f"gguf:{smollm2_path()}"}).open()
    with pytest.raises(LogprobsUnavailableError) as e:
        scores.score("Warm?", ["<answer>5</answer>"])
    assert "\n" not in str(e.value) and 'set "semantics": "samples" in its LM entry' in str(e.value)
    entry = LMEntry.model_validate(base | {"semantics": "samples", "n": 4})
    lm = CachedLM(entry.open(), ScoreCache(tmp_path / "c.sqlite"))
    dist = sample_distribution(lm, "Pick a number from 1 to 3. Answer <answer>N</answer>.", tagged_number, [1, 2, 3],
                               entry.n, max_draws=6, max_tokens=8)
    assert dist.n_samples >= 4 and dist.counts.sum() + dist.n_failed == dist.n_samples


def test_the_server_options_of_a_scoring_script(capsys):
    import argparse

    from pragmodels.lm.entry import add_lm_arguments, open_lm_from_arguments

    parser = argparse.ArgumentParser(prog="score")
    add_lm_arguments(parser)
    server = ["--lm", "big", "--base-url", "http://127.0.0.1:9", "--server-model", "m"]
    lm = open_lm_from_arguments(parser, parser.parse_args(server + ["--chat-template", "plain", "--sample-api", "chat",
                                                                    "--concurrency", "3"]), n_ctx=512)
    assert lm.model.template_source == "plain" and lm.model.sample_api == "chat" and lm.model.concurrency == 3
    for argv, message in ((["--lm", "smollm2", "--api-key-env", "K"], "--api-key-env is a setting of a server: it "
                                                                        "needs --base-url"),
                          (server + ["--chat-template", "jinja"], "--chat-template 'jinja': chat template source "
                                                                  "'jinja'"),
                          (server + ["--api-key-env", "NOT_SET_ANYWHERE"], "$NOT_SET_ANYWHERE is not set")):
        with pytest.raises(SystemExit):
            open_lm_from_arguments(parser, parser.parse_args(argv), n_ctx=512)
        assert message in capsys.readouterr().err


def test_a_server_entry_without_its_url_is_refused_at_validation():
    """Issue 35, item 7: it used to pass validation and fail many minutes into the run."""
    from pydantic import ValidationError

    from pragmodels.lm.entry import LMEntry
    with pytest.raises(ValidationError, match="backend 'openai' needs base_url"):
        LMEntry(backend="openai", model="Qwen/Qwen3-32B")
    assert LMEntry(backend="openai", model="Qwen/Qwen3-32B", base_url="http://h:8000/v1")


def test_an_entry_is_compared_with_the_identity_its_outputs_record():
    from pragmodels.io.checksums import sha256_file
    from pragmodels.lm.entry import LMEntry
    from pragmodels.lm.score_file import resolve_model_path
    smol = f"gguf:{sha256_file(resolve_model_path('smollm2'))}"
    gemma = f"gguf:{sha256_file(resolve_model_path('gemma3'))}"
    assert LMEntry(model="smollm2").identity_mismatch(smol) == ""
    assert "is " + smol in LMEntry(model="smollm2").identity_mismatch(gemma)
    assert LMEntry(backend="hf", model="smollm2").identity_mismatch(smol + "+transformers-float32") == ""
    assert LMEntry(backend="hf", model="smollm2").identity_mismatch(smol) != ""  # llama.cpp's scores, not hf's
    server = LMEntry(backend="openai", model="org/m", base_url="http://a:1/v1")
    assert server.identity_mismatch("openai:http://b:2/v1|org/m") == ""  # the server moved: the same model
    assert "server model 'org/m'" in server.identity_mismatch("openai:http://a:1/v1|org/other")
    assert LMEntry(backend="hf", model="org/ckpt").identity_mismatch("hf:org/ckpt@abc+transformers-bfloat16") == ""


# ---- one entry everywhere: --config FILE --lm NAME, --semantics (issue 35, items 7 and 8) -------------------------

def _config(tmp_path, lms):
    import json

    path = tmp_path / "study.json"
    path.write_text(json.dumps({"name": "toy", "lms": lms}))
    return path


def test_an_lm_entry_of_a_study_config_is_opened_by_name(tmp_path):
    from pragmodels.lm.entry import lm_entry_from_arguments

    cfg = _config(tmp_path, {"big": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "org/big",
                                     "semantics": "samples", "n": 8, "api_key_env": "KEY"},
                             "smol": {"backend": "llamacpp", "model": "smollm2"}})
    entry, origin = lm_entry_from_arguments(_parse(["--config", str(cfg), "--lm", "big"])[1])
    assert (entry.backend, entry.model, entry.semantics, entry.n, entry.api_key_env) == \
        ("openai", "org/big", "samples", 8, "KEY")
    assert origin == {"lm": "big", "config": str(cfg), "entry": entry.model_dump(mode="json", exclude_none=True)}
    # options that agree with the entry, or add to it, are taken; the study's name stands for fits/<study>.json
    entry, _ = lm_entry_from_arguments(_parse(["--config", str(cfg), "--lm", "big", "--server-model", "org/big",
                                               "--chat-template", "plain"])[1])
    assert entry.chat_template == "plain"
    entry, origin = lm_entry_from_arguments(_parse(["--config", "wavelength", "--lm", "gemma3"])[1])
    assert entry.model == "gemma3" and origin["config"].endswith(os.path.join("fits", "wavelength.json"))


@pytest.mark.parametrize("argv, message", [
    (["--lm", "smoll"], "--lm 'smoll': not an entry of lms in {cfg} ('big', 'smol'); did you mean 'smol'?"),
    (["--lm", "smol", "--model", "gemma3"], "--model 'gemma3' contradicts lms['smol'].model = 'smollm2' in {cfg}: drop "
                                            "--model, or name another LM."),
    (["--lm", "smol", "--base-url", "http://h/v1", "--server-model", "m"],
     "--base-url 'http://h/v1' contradicts lms['smol'].backend = 'llamacpp' in {cfg}"),
    (["--lm", "big", "--semantics", "scores"], "--semantics 'scores' contradicts lms['big'].semantics = 'samples'"),
    (["--lm", "smol", "--backend", "hf", "--dtype", "bf16"], "--backend 'hf' contradicts lms['smol'].backend = "
                                                             "'llamacpp'"),
])
def test_options_that_contradict_the_config_entry_are_refused_naming_both(argv, message, tmp_path, capsys):
    from pragmodels.lm.entry import open_lm_from_arguments

    cfg = _config(tmp_path, {"big": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "org/big",
                                     "semantics": "samples"}, "smol": {"model": "smollm2"}})
    parser, args = _parse(["--config", str(cfg), *argv])
    with pytest.raises(SystemExit) as exit_:
        open_lm_from_arguments(parser, args, n_ctx=512)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"score: error: {message.format(cfg=cfg)}" in err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1


def test_a_config_without_the_entry_or_a_bad_entry_is_one_line(tmp_path):
    from pragmodels.lm.entry import lm_entry_from_arguments

    with pytest.raises(ValueError, match=r"it has no lms entries, so --lm 'x' names none"):
        lm_entry_from_arguments(_parse(["--config", str(_config(tmp_path, {})), "--lm", "x"])[1])
    bad = _config(tmp_path, {"x": {"backend": "openai", "model": "m"}})
    with pytest.raises(ValueError, match=re.escape(f"lms['x'] in {bad}: backend 'openai' needs base_url")):
        lm_entry_from_arguments(_parse(["--config", str(bad), "--lm", "x"])[1])
    with pytest.raises(ValueError, match=r"--config 'no_such_study': no such file"):
        lm_entry_from_arguments(_parse(["--config", "no_such_study", "--lm", "x"])[1])


def test_an_entry_with_semantics_samples_is_never_scored(monkeypatch):
    """Issue 35, item 8: such an entry samples; asked to score, it refuses before any request (here: none could
    reach a server, and none is sent)."""
    from pragmodels.lm import LMError
    from pragmodels.lm.entry import SamplesOnlyLM, open_lm_from_arguments

    entry = LMEntry(backend="openai", base_url="http://127.0.0.1:9/v1", model="m", semantics="samples")
    lm = entry.open()
    assert isinstance(lm, SamplesOnlyLM) and lm.sample_api == "chat"
    with pytest.raises(LMError, match=r'semantics "samples" .* never scored and no scoring request was sent'):
        lm.score("2 + 2 =", ["4"])
    assert lm.model.requests_sent == 0
    parser, args = _parse(["--lm", "big", "--base-url", "http://127.0.0.1:9/v1", "--server-model", "m",
                           "--semantics", "samples"])
    cached = open_lm_from_arguments(parser, args, n_ctx=512)  # behind the cache, refused before the cache is asked
    assert cached.lm_entry["entry"]["semantics"] == "samples"  # for the step's manifests
    with pytest.raises(LMError, match=r"\(--semantics scores\)"):
        cached.score("2 + 2 =", ["4"])
    assert cached.model.model.requests_sent == 0


def test_prompt_format_is_a_key_of_an_in_process_entry():
    assert LMEntry(model="base.gguf", prompt_format="plain").prompt_format == "plain"
    with pytest.raises(ValidationError, match="a server's format is chat_template"):
        LMEntry(backend="openai", base_url="http://h/v1", model="m", prompt_format="plain")


def test_the_score_command_defaults_never_change_a_config_entry(tmp_path, monkeypatch):
    """`pragmodels lm score` sends $OPENAI_API_KEY when no option names a key; a config's entry sends the key it
    names, or none."""
    import argparse

    from pragmodels.lm.entry import add_lm_arguments, lm_entry_from_arguments

    parser = argparse.ArgumentParser(prog="score")
    add_lm_arguments(parser, standalone=True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    server = ["--base-url", "http://127.0.0.1:9/v1", "--server-model", "m"]
    assert lm_entry_from_arguments(parser.parse_args(server))[0].api_key_env == "OPENAI_API_KEY"
    cfg = _config(tmp_path, {"srv": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}})
    entry, origin = lm_entry_from_arguments(parser.parse_args(["--config", str(cfg), "--lm", "srv"]))
    assert entry.api_key_env is None and "api_key_env" not in origin["entry"]
    assert lm_entry_from_arguments(parser.parse_args(["--model", "gemma3"]))[0].model == "gemma3"  # no --lm needed


@pytest.mark.parametrize("fmt,template", [("chat", "plain"), ("plain", "server")])
def test_a_prompt_format_that_contradicts_the_template_source_is_refused(fmt, template):
    """--prompt-format chat beside --chat-template plain was taken as plain without a word (found in review)."""
    import argparse

    from pragmodels.lm.entry import add_lm_arguments, lm_entry_from_arguments

    ap = argparse.ArgumentParser()
    add_lm_arguments(ap, standalone=True)
    args = ap.parse_args(["--base-url", "http://h/v1", "--server-model", "m", "--prompt-format", fmt,
                          "--chat-template", template])
    with pytest.raises(ValueError, match=f"--prompt-format '{fmt}' and --chat-template '{template}' contradict"):
        lm_entry_from_arguments(args)
