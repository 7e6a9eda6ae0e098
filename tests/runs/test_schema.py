"""Configs are validated against a schema before any work starts (pragmodels.runs.schema,
pragmodels.runs.fit_config.FitConfig), and every command-line failure is one line (pragmodels.cli).

No test here fits a model: each stops at a validation error (the fit is replaced by a failure)."""

import copy
import inspect
import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path

import pydantic
import pytest

from pragmodels import errors, rsa_models, runs, simulate
from pragmodels.cli import main
from pragmodels.errors import ConfigError, PragmodelsError
from pragmodels.runs.json_schema import schema_texts
from pragmodels.runs.schema import SamplerSettings, StudyConfig, validate_config

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((ROOT / "fits" / "reference_game.json").read_text())


@pytest.fixture
def no_fit(monkeypatch):
    """Any call of the fit fails the test: validation must stop the run first."""
    import pragmodels.runs.fit_config as runner

    monkeypatch.setattr(runner, "fit", lambda *a, **k: pytest.fail("the config must be rejected before the fit"))


def _config(tmp_path: Path, change=None, name="cfg.json") -> Path:
    cfg = copy.deepcopy(REFERENCE)
    if change:
        change(cfg)
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return path


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("pragmodels: error: "), err
    assert "Traceback" not in err
    return err


def _set(*keys_value):
    *keys, value = keys_value

    def change(cfg):
        d = cfg
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return change


def _rename(old, new):
    return lambda cfg: cfg.__setitem__(new, cfg.pop(old))


# ------------------------------------------------------------------ unknown keys, at any level
@pytest.mark.parametrize("change, expected", [
    (_rename("priors", "prior"), "`prior`: unknown key; did you mean `priors`?"),
    (_set("sampler", "num_chain", 2), "`sampler.num_chain`: unknown key; did you mean `num_chains`?"),
    (_set("model", "dept", 2), "`model.dept`: unknown key; did you mean `depth`?"),
    (_set("data", "n_per_stat", 10), "`data.n_per_stat`: unknown key; did you mean `n_per_state`?"),
    (_set("priors", "alpha", "lok", 0.0), "`priors.alpha.lok`: unknown key; did you mean `loc`?"),
    (_set("extra", 1), "`extra`: unknown key"),
])
def test_an_unknown_key_at_any_level_is_named_with_the_nearest_valid_key(tmp_path, capsys, no_fit, change, expected):
    path = _config(tmp_path, change)
    assert main(["run", str(path), "--quick", "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert f"fit config {path}: " in err and expected in err
    assert not (tmp_path / "cfg").exists()  # nothing was written


# ------------------------------------------------------------------ wrong types and ranges
@pytest.mark.parametrize("change, expected", [
    (_set("seed", 20261130.9), "`seed` = 20261130.9: expected an integer, got a number"),  # was truncated
    (_set("seed", "abc"), '`seed` = "abc": expected an integer, got a string'),
    (_set("seed", "7"), '`seed` = "7": expected an integer, got a string'),
    (_set("seed", True), "`seed` = true: expected an integer, got a boolean"),
    (_set("seed", -1), "`seed` = -1: must be greater than or equal to 0"),
    (_set("sampler", "target_accept", 1.5), "`sampler.target_accept` = 1.5: must be less than 1"),
    (_set("sampler", "target_accept", 0), "`sampler.target_accept` = 0: must be greater than 0"),
    (_set("sampler", "target_accept", -0.2), "`sampler.target_accept` = -0.2: must be greater than 0"),
    (_set("sampler", "num_chains", 0), "`sampler.num_chains` = 0: must be greater than or equal to 1"),
    (_set("sampler", "chain_method", "paralel"), "did you mean 'parallel'?"),
    (_set("model", "factory", "nonsense_model"), '`model.factory` = "nonsense_model": expected one of speaker_model'),
    (_set("data", "simulate", "reference_game_speakr"), "did you mean 'reference_game_speaker'?"),
    (_set("priors", "alpha", 3), "`priors.alpha` = 3: expected an object, got an integer"),
    (_set("priors", "alpha", "HalfNormal"), '`priors.alpha` = "HalfNormal": expected an object, got a string'),
    (_set("priors", "alpha", {"family": "HalfNormal", "scale": -1.0}), "scale must be > 0"),
    (_set("priors", "alpha", {"family": "LogNormal", "loc": "a", "scale": 1.0}),
     '`priors.alpha.loc` = "a": expected a number or a list, got a string'),
    (_set("priors", "alpha", {"family": "Normall", "loc": 0, "scale": 1}), "did you mean 'Normal'?"),
    (lambda cfg: cfg.pop("sampler"), "`sampler`: required key missing"),
    # issue 33, item 4: dense_mass blocks that numpyro refused with an AssertionError or ignored
    (_set("sampler", "dense_mass", []), "`sampler.dense_mass` = []: must not be empty"),
    (_set("sampler", "dense_mass", [[]]), "`sampler.dense_mass[0]` = []: must not be empty"),
    (_set("sampler", "dense_mass", [["alpha", ""]]), '`sampler.dense_mass[0][1]` = "": must not be empty'),
    (_set("sampler", "dense_mass", [["alpha", "lapse"], ["alpha"]]), "names 'alpha' twice; a site may be in one"),
    (_set("sampler", "dense_mass", [["alpha", "alpha"]]), "names 'alpha' twice"),
    # issue 33: a depth that hung and a size that ran out of memory (exit 1) are bounded
    (_set("model", "depth", 100000), "`model.depth` = 100000: must be less than or equal to 10"),
    (_set("data", "n_per_state", 10**12), "`data.n_per_state` = 1000000000000: must be less than or equal to 1000000"),
])
def test_a_wrong_value_names_the_key_the_value_and_the_expected_type(tmp_path, capsys, no_fit, change, expected):
    path = _config(tmp_path, change)
    assert main(["run", str(path), "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert f"fit config {path}: " in err and expected in err, err


@pytest.mark.parametrize("change", [_set("sampler", "target_accept", 1.5), _set("sampler", "num_warmup", -5),
                                    _set("sampler", "num_chains", 0), _set("sampler", "num_samples", 2.5)])
def test_quick_never_hides_an_invalid_value(tmp_path, capsys, no_fit, change):
    """--quick replaces num_warmup, num_samples and num_chains; the values it replaces are still checked."""
    assert main(["run", str(_config(tmp_path, change)), "--quick", "--no-progress"]) == 2
    assert "`sampler." in _one_line_error(capsys)


def test_priors_and_truth_naming_no_parameter_fail_before_the_fit(tmp_path, capsys, no_fit):
    path = _config(tmp_path, _set("priors", "alphaa", {"family": "HalfNormal", "scale": 1.0}))
    assert main(["run", str(path), "--quick"]) == 2
    err = _one_line_error(capsys)
    assert "priors" in err and "'alphaa'" in err and "did you mean 'alpha'" in err
    path = _config(tmp_path, _set("truth", "alpah", 2.0))
    assert main(["run", str(path), "--quick"]) == 2
    err = _one_line_error(capsys)
    assert "truth names ['alpah'] (did you mean 'alpha'?)" in err


@pytest.mark.parametrize("factory, simulator", [
    ("hierarchical_listener_model", "reference_game_speaker"),  # issue 33, item 4: a TypeError, exit 1
    ("listener_model", "reference_game_speaker"),
    ("speaker_model", "scale_listener_by_item"),
])
def test_a_model_that_cannot_fit_the_simulated_data_is_named_before_anything_runs(tmp_path, capsys, no_fit,
                                                                                  factory, simulator):
    def change(cfg):
        cfg["model"] = {"factory": factory}
        cfg["data"] = {"simulate": simulator, "seed": 1}
        cfg["priors"], cfg["truth"] = {}, {}
    path = _config(tmp_path, change)
    assert main(["run", str(path), "--quick", "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert f'fit config {path}: `model.factory` = "{factory}" cannot fit the data of `data.simulate` = ' \
           f'"{simulator}"' in err, err
    assert "the config:" not in err and not (tmp_path / "cfg").exists()


def test_the_factories_allowed_for_each_simulator_are_those_taking_its_data():
    """FITS_DATA (what the config allows) agrees with the model functions' arguments."""
    from pragmodels.runs.fit_config import FITS_DATA

    small = {"reference_game_speaker": dict(n_per_state=2), "scale_listener_by_item": dict(n_items=2, n_per_item=2)}
    for sim, kwargs in small.items():
        data = getattr(simulate, sim)(seed=0, **kwargs)
        keys = set(data[0] if isinstance(data, tuple) else data)
        for factory in (n for n in rsa_models.__all__ if n.endswith("_model")):
            model = getattr(rsa_models, factory)()
            takes = set(inspect.signature(model.func).parameters)
            assert (keys <= takes) == (factory in FITS_DATA[sim][1]), (sim, factory)


@pytest.mark.parametrize("blocks, name", [([["alpha", "nope"]], "'nope'"), ([["alpha", "choice"]], "'choice'")])
def test_dense_mass_naming_no_latent_site_fails_before_the_fit(tmp_path, capsys, no_fit, blocks, name):
    """Issue 33, item 4: an unknown (or observed) site was numpyro's KeyError at the fit, exit 1."""
    path = _config(tmp_path, _set("sampler", "dense_mass", blocks))
    assert main(["run", str(path), "--quick", "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert f"fit config {path}: `sampler.dense_mass` names {name}, which is not a latent site of the model" in err
    assert "its latent sites are ['alpha', 'cost_weight', 'lapse']" in err, err
    assert not (tmp_path / "cfg" / "quick").exists()


@pytest.mark.parametrize("value, problem", [
    ([1.0, 2.0], "has shape (2,)"),  # issue 33, item 4: failed in the report, after the fit
    ([[1.0]], "has shape (1, 1)"),
    ([], "has shape (0,)"),
    ([[1.0], [1.0, 2.0]], "is not a rectangular array of numbers"),
])
def test_truth_of_the_wrong_shape_fails_before_the_fit(tmp_path, capsys, no_fit, value, problem):
    path = _config(tmp_path, _set("truth", "alpha", value))
    assert main(["run", str(path), "--quick", "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert f"fit config {path}: `truth.alpha` = {json.dumps(value)} {problem}" in err, err
    if "shape" in problem:
        assert "the model's alpha has shape () (expected a number or an array of that shape)" in err, err


def test_a_prior_the_model_cannot_use_is_blamed_on_priors(tmp_path, capsys, no_fit):
    """A prior of the wrong shape was reported under `model`; a ragged one was a TypeError, exit 1."""
    path = _config(tmp_path, _set("priors", "alpha", {"family": "LogNormal", "loc": [0.5, 0.5], "scale": 1.0}))
    assert main(["run", str(path), "--quick", "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert f"fit config {path}: `priors`: parameter 'alpha': its prior LogNormal" in err, err
    path = _config(tmp_path, _set("priors", "alpha", {"family": "LogNormal", "loc": [[0.5], [0.5, 1]], "scale": 1.0}))
    assert main(["run", str(path), "--quick", "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert f"fit config {path}: `priors.alpha` = " in err and "must be a number or an array of numbers" in err, err


def test_several_problems_are_all_named_on_one_line(tmp_path, capsys, no_fit):
    path = _config(tmp_path, lambda c: (c.__setitem__("seed", "x"), c.__setitem__("nam", 1)))
    assert main(["run", str(path)]) == 2
    err = _one_line_error(capsys)
    assert "2 problems" in err and "`seed`" in err and "`nam`: unknown key; did you mean `name`?" in err


def test_config_errors_are_value_errors_of_their_own_type(tmp_path):
    bad = copy.deepcopy(REFERENCE)
    bad["prior"] = bad.pop("priors")
    from pragmodels.runs.fit_config import FitConfig

    with pytest.raises(ConfigError) as info:
        validate_config(FitConfig, bad, "x.json", "fit config")
    assert isinstance(info.value, ValueError) and isinstance(info.value, PragmodelsError)
    assert info.value.problems == [("prior", "`prior`: unknown key; did you mean `priors`?")]
    assert info.value.path == Path("x.json")
    from pragmodels.datasets import DataDownloadError, DataIntegrityError, DataSchemaError

    assert issubclass(DataDownloadError, OSError) and issubclass(DataDownloadError, PragmodelsError)
    assert issubclass(DataIntegrityError, ValueError) and issubclass(DataSchemaError, PragmodelsError)
    assert issubclass(runs.RunError, PragmodelsError) and issubclass(runs.RunError, RuntimeError)
    exported_errors = [n for n in errors.__all__ if isinstance(getattr(errors, n), type)]
    assert exported_errors == ["PragmodelsError", "ConfigError"]
    assert errors.__all__ == ["PragmodelsError", "ConfigError", "one_line_cli"]


# ------------------------------------------------------------------ the schema follows the code
def _defaults(fn, skip=()):
    return {k: p.default for k, p in inspect.signature(fn).parameters.items()
            if k not in skip and p.kind is not p.VAR_KEYWORD}


def test_sampler_settings_are_fits_arguments_with_fits_defaults():
    from pragmodels.inference.fitting import fit

    sig = _defaults(fit)
    fields = SamplerSettings.model_fields
    assert {k: f.default for k, f in fields.items()} == {k: sig[k] for k in fields}


def test_sampler_settings_take_every_init_of_fit():
    """A config can ask for every ``init`` that :func:`pragmodels.fit` knows ("basins" included), and
    nothing else."""
    import typing

    from pragmodels.inference.fitting import INITS

    assert typing.get_args(SamplerSettings.model_fields["init"].annotation) == INITS
    assert SamplerSettings(init="basins", basin_nats=4.0).basin_nats == 4.0
    with pytest.raises(pydantic.ValidationError):
        SamplerSettings(basin_nats=0)


def test_model_and_data_schemas_match_the_factories_and_simulators():
    from pragmodels.runs import fit_config as runner

    models = {m.model_fields["factory"].annotation.__args__[0]: m
              for m in (runner.SpeakerModel, runner.ListenerModel, runner.SampledListenerModel,
                        runner.HierarchicalListenerModel)}
    assert sorted(models) == sorted(n for n in rsa_models.__all__ if n.endswith("_model"))
    for name, m in models.items():
        options = {k: f.default for k, f in m.model_fields.items() if k != "factory"}
        assert options == _defaults(getattr(rsa_models, name), skip=("priors",)), name
    sims = {m.model_fields["simulate"].annotation.__args__[0]: m
            for m in (runner.ReferenceGameSpeakerData, runner.ScaleListenerByItemData)}
    assert sorted(sims) == sorted(n for n in simulate.__all__ if n.islower())
    for name, m in sims.items():
        fields = {k: f.default for k, f in m.model_fields.items() if k != "simulate"}
        sig = _defaults(getattr(simulate, name))
        assert set(fields) == set(sig) and all(fields[k] == v for k, v in sig.items() if k != "seed"), name


def test_the_model_options_take_the_agents_values():
    """fit_config writes PriorAt and CostScaling out, so that a config validates without JAX: the same values."""
    import typing

    from pragmodels import agents
    from pragmodels.runs import fit_config as runner

    assert typing.get_args(runner.PriorAt) == typing.get_args(agents.PriorAt)
    assert typing.get_args(runner.CostScaling) == typing.get_args(agents.CostScaling)


def test_the_json_schema_files_are_up_to_date():
    """Regenerate with `python -m pragmodels.runs.json_schema` (from the repository root)."""
    texts = schema_texts(ROOT / "fits")
    assert set(texts) == {p.name for p in (ROOT / "schemas").glob("*.json")}
    for name, text in texts.items():
        assert (ROOT / "schemas" / name).read_text() == text, f"schemas/{name} is out of date"


def test_the_json_schemas_accept_the_committed_configs_and_reject_unknown_keys():
    jsonschema = pytest.importorskip("jsonschema")
    for config, schema in [("reference_game", "fit_config"), ("social_meaning", "social_meaning"),
                           ("wavelength", "wavelength"), ("implicature", "implicature")]:
        cfg = json.loads((ROOT / "fits" / f"{config}.json").read_text())
        assert cfg["$schema"] == f"../schemas/{schema}.schema.json"
        validator = jsonschema.Draft202012Validator(json.loads((ROOT / "schemas" / f"{schema}.schema.json").read_text()))
        assert list(validator.iter_errors(cfg)) == []
        assert list(validator.iter_errors({**cfg, "prior": {}}))


def test_the_docs_describe_every_key():
    from pragmodels.runs import fit_config as runner

    docs = (ROOT / "docs" / "configs.md").read_text()
    models = [SamplerSettings, StudyConfig, runner.FitConfig, runner.SpeakerModel, runner.HierarchicalListenerModel,
              runner.ReferenceGameSpeakerData, runner.ScaleListenerByItemData]
    missing = sorted({f.alias or k for m in models for k, f in m.model_fields.items()} - set(re.findall(r"`([$\w]+)`", docs)))
    assert missing == []


# ------------------------------------------------------------------ the command line
@pytest.mark.parametrize("content, expected", [
    ("[1, 2]", "expected a JSON object {...}; got a list"),
    ('{"name": "x",', "not valid JSON (Expecting"),
    ('{"name": NaN}', "not valid JSON (NaN is not a JSON number)"),
    (None, "is a folder, not a JSON file"),
    ("", "the file is empty (expected a JSON object {...})"),
    (" \n\t\n", "the file is empty"),
    # issue 33, item 4: a RecursionError, exit 1
    ("[" * 100_000 + "]" * 100_000, "not valid JSON (nested more than"),
    ('{"a": ' * 100_000 + "1" + "}" * 100_000, "not valid JSON (nested more than"),
])
def test_an_unreadable_config_is_one_line_naming_the_file(tmp_path, capsys, content, expected):
    path = tmp_path / "cfg.json"
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    assert main(["run", str(path)]) == 2
    err = _one_line_error(capsys)
    assert f"config {path}" in err and expected in err
    assert main(["run", str(tmp_path / "missing.json")]) == 2
    assert "missing.json does not exist" in _one_line_error(capsys)


def test_debug_shows_the_traceback(tmp_path, capsys):
    path = tmp_path / "cfg.json"
    path.mkdir()
    assert main(["run", str(path), "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("pragmodels: error: ")
    assert main(["--debug", "run", str(path)]) == 2 and "Traceback" in capsys.readouterr().err


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["run"])
    assert info.value.code == 2
    assert "the following arguments are required: config" in _one_line_error(capsys)


@pytest.mark.parametrize("argv, argument", [
    (["run", "{cfg}", "--out", ""], "--out"),  # issue 33, item 4: ran into the default folder
    (["run", "", "--quick"], "config"),
    (["tables", "", "--out", "t.csv"], "study"),
    (["tables", "social_meaning", "--out", " "], "--out"),
    (["lm", "score", "", "--out", "s.csv", "--model", "smollm2"], "PROMPTS.jsonl"),
    (["lm", "score", "{prompts}", "--out", "", "--model", "smollm2"], "--out"),
    (["lm", "score", "{prompts}", "--out", "s.csv", "--model", ""], "--model"),
    (["lm", "score", "{prompts}", "--out", "s.csv", "--base-url", "", "--prompt-format", "plain"], "--base-url"),
    (["lm", "score", "{prompts}", "--out", "s.csv", "--server-model", "", "--prompt-format", "plain"],
     "--server-model"),
    (["lm", "score", "{prompts}", "--out", "s.csv", "--model", "smollm2", "--cache", ""], "--cache"),
])
def test_an_empty_path_or_name_is_a_usage_error_naming_the_argument(tmp_path, capsys, no_fit, monkeypatch, argv,
                                                                    argument):
    """An empty value was read as '.' (the current folder) or as 'not given' (the default run folder)."""
    monkeypatch.chdir(tmp_path)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "a", "prompt": "x", "continuations": ["y"]}\n')
    argv = [a.format(cfg=_config(tmp_path), prompts=prompts) for a in argv]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = _one_line_error(capsys)
    assert f"argument {argument}: the value is empty" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.json", "p.jsonl"]  # nothing was written


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    return capsys.readouterr().out


def test_help_describes_every_argument_each_subcommand_and_the_environment(capsys):
    from pragmodels.cli import _parser

    top = _help(["--help"], capsys)
    for word in ("run", "tables", "--debug", "PRAGMODELS_DATA_DIR", "PRAGMODELS_CACHE_DIR",
                 "PRAGMODELS_COMPILATION_CACHE", "PRAGMODELS_HOST_DEVICES", "Exit status"):
        assert word in top, word
    parser = _parser()
    subs = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in subs.choices.items():
        text = _help([name, "--help"], capsys)
        if name == "lm":  # reads no data set; its score command names the variables it reads
            text = _help(["lm", "score", "--help"], capsys)
        need = ("PRAGMODELS_LM_CACHE", "OPENAI_API_KEY") if name == "lm" else ("PRAGMODELS_DATA_DIR",)
        assert all(v in text for v in need) and sub.description, name
        for action in sub._actions:
            assert action.help, f"{name} {action.dest} has no help"
    tables = _help(["tables", "--help"], capsys)
    assert "social_meaning" in tables and "social-meaning" not in tables  # one spelling


def test_study_names_have_one_spelling_and_the_other_is_an_alias():
    from pragmodels.cli import _study_config

    assert _study_config("social_meaning") == _study_config("social-meaning") == ROOT / "fits" / "social_meaning.json"
    with pytest.raises(ConfigError, match=r"no config for study 'nonsense'.*known: .*social_meaning"):
        _study_config("nonsense")


def test_offline_without_a_mirror_the_error_names_the_file_and_the_mirror(tmp_path, capsys, monkeypatch):
    def offline(*a, **k):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    monkeypatch.delenv("PRAGMODELS_DATA_DIR")
    monkeypatch.setenv("PRAGMODELS_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["tables", "social_meaning", "--out", str(tmp_path / "t.csv")]) == 2
    err = _one_line_error(capsys)
    assert "could not download data set 'social_human' from https://" in err
    assert "PRAGMODELS_DATA_DIR" in err and "social/human_ratings/experiment1.csv" in err


def test_an_unwritable_compilation_cache_or_home_is_a_warning(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    out = tmp_path / "t.csv"
    monkeypatch.setenv("PRAGMODELS_COMPILATION_CACHE", str(blocker / "jax"))
    assert main(["tables", "social_meaning", "--out", str(out)]) == 0 and out.is_file()
    err = capsys.readouterr().err
    assert f"pragmodels: warning: compilation cache folder {blocker / 'jax'} cannot be written to" in err
    monkeypatch.delenv("PRAGMODELS_COMPILATION_CACHE")
    monkeypatch.setenv("HOME", str(blocker / "home"))  # a HOME that cannot be written to
    out.unlink()
    assert main(["tables", "social_meaning", "--out", str(out)]) == 0 and out.is_file()
    assert "pragmodels: warning: compilation cache folder" in capsys.readouterr().err


def test_the_command_line_keeps_xlas_log_lines_below_fatal_away_unless_the_user_set_a_level(tmp_path, monkeypatch):
    """XLA's "Very slow compile?" alarm is a C++ ERROR line: TF_CPP_MIN_LOG_LEVEL=3 before JAX starts,
    unless the user chose a level."""
    import pragmodels.cli as cli

    seen = []
    monkeypatch.setattr(cli, "_tables", lambda args, cfg: seen.append(os.environ.get("TF_CPP_MIN_LOG_LEVEL")))
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    assert main(["tables", "social_meaning", "--out", str(tmp_path / "t.csv")]) == 0
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    assert main(["tables", "social_meaning", "--out", str(tmp_path / "t.csv")]) == 0
    assert seen == ["3", "0"]


def test_a_run_that_compiles_says_so_once(tmp_path, capsys):
    from pragmodels.cli import _compile_note

    cache = tmp_path / "jax"
    cache.mkdir()
    (cache / ".probe-x").write_text("")
    _compile_note(str(cache))  # a cold cache
    _compile_note(None)  # no cache
    (cache / "jit_model-0123-cache").write_text("")
    _compile_note(str(cache))  # compiled programs to reuse: nothing to say
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.startswith("pragmodels: note: ") for line in lines)
    assert f"cached in {cache} and reused by later runs" in lines[0] and "every run compiles them again" in lines[1]


def test_an_unwritable_output_folder_fails_before_the_fit(tmp_path, capsys, no_fit):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    path = _config(tmp_path)
    assert main(["run", str(path), "--out", str(blocker / "run"), "--quick"]) == 2
    err = _one_line_error(capsys)
    assert f"run folder {blocker / 'run'}: cannot write into {blocker}" in err
    assert main(["run", str(path), "--out", str(blocker), "--quick"]) == 2
    assert "exists and is not a folder" in _one_line_error(capsys)
    if Path("/proc/sys").is_dir():  # read-only even for root
        assert main(["run", str(path), "--out", "/proc/sys/pragmodels-test-run", "--quick"]) == 2
        assert "run folder /proc/sys/pragmodels-test-run: cannot write into /proc/sys" in _one_line_error(capsys)


def test_a_read_only_run_folder_is_found_before_the_run(tmp_path, monkeypatch):
    final = tmp_path / "run"
    final.mkdir()
    assert runs.check_writable(final) == final
    monkeypatch.setattr(runs.folder.os, "access", lambda p, mode: Path(p) != final)  # as for a non-root user on a 0o555 folder
    with pytest.raises(runs.RunError, match="is not writable"):
        runs.check_writable(final)
    with pytest.raises(runs.RunError, match="is not writable"):
        with runs.open_run(final, mode="full", entry_point="test"):
            pytest.fail("the run must not start")


def _lm(config):
    return next(iter(config["lms"]))


@pytest.mark.parametrize("study, change, expected", [
    ("wavelength", lambda c: c["lms"][_lm(c)].__setitem__("backend", "llamacp"),
     "`lms.smollm2.backend` = \"llamacp\": expected 'llamacpp', 'openai' or 'hf'; did you mean 'llamacpp'?"),
    ("implicature", lambda c: c["lms"][_lm(c)].__setitem__("backend", "opnai"),
     "`lms.smollm2.backend` = \"opnai\": expected 'llamacpp', 'openai' or 'hf'; did you mean 'openai'?"),
    ("wavelength", lambda c: c.__setitem__("executor", "proces"), "`executor` = \"proces\": expected 'sequential' or"),
    ("implicature", lambda c: c.__setitem__("executor", "proces"), "did you mean 'process'?"),
    # quick mode skips the cross-validation, so a misspelt LM there would otherwise go unseen
    ("wavelength", lambda c: c.__setitem__("cv_lms", ["smolm2"]),
     "`cv_lms` names 'smolm2', which is not in `lms` ('smollm2', 'gemma3'); did you mean 'smollm2'?"),
])
def test_study_config_values_are_checked_before_any_work(tmp_path, capsys, study, change, expected):
    """The studies' own values (LM backends, the executor, the LMs to cross-validate) fail as one
    line naming the key and the nearest valid value, under --quick too, before any data is read."""
    cfg = json.loads((ROOT / "fits" / f"{study}.json").read_text())
    cfg.pop("$schema", None)
    cfg["study"] = str(ROOT / "models" / study / "study.py") + ":run"
    change(cfg)
    path = tmp_path / f"{study}.json"
    path.write_text(json.dumps(cfg))
    assert main(["run", str(path), "--quick", "--no-progress", "--out", str(tmp_path / "out")]) == 2
    assert expected in _one_line_error(capsys)
    assert not (tmp_path / "out").exists()


def test_a_simulated_data_set_too_large_for_memory_is_refused():
    from pydantic import ValidationError

    from pragmodels.runs.fit_config import ScaleListenerByItemData
    with pytest.raises(ValidationError, match="n_items x n_per_item = 10,000,000,000 guesses; at most 10,000,000"):
        ScaleListenerByItemData(simulate="scale_listener_by_item", seed=0, n_items=100_000, n_per_item=100_000)
    assert ScaleListenerByItemData(simulate="scale_listener_by_item", seed=0, n_items=10_000, n_per_item=40)
