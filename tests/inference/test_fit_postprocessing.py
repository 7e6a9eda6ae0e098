"""fit() never loses finished chains (issue 9, finding 15): a failing step after sampling (log
likelihood, predictive draws, conversion, diagnostics) leaves a result with the posterior and
sample_stats and the error recorded; a failing save raises with the result attached. Failures
are injected with monkeypatch; the fits are tiny (seconds)."""

import json
import warnings

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import pragmodels as pm
from pragmodels.inference import fitting as inference
from pragmodels.inference.diagnostics import FitDiagnosticsError, FitWarning
from pragmodels.inference.fit_many import FitSpec, run_fit

pytestmark = pytest.mark.nuts  # every test here reads a fit

Y = np.array([0.3, -0.2, 1.1, 0.8, 0.1, 0.5])
KW = dict(num_warmup=30, num_samples=40, num_chains=2, progress_bar=False)


def normal_model(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    with numpyro.plate("trial", y.shape[0]):
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def _fit(**kw):
    with warnings.catch_warnings():
        # 80 draws: too few for the diagnostics (re.I: "ESS" alone would match "processing" too)
        warnings.filterwarnings("ignore", message=r"(bulk ESS|tail ESS|r_hat|\d+ divergent) ", category=FitWarning)
        return pm.fit(5, normal_model, dict(y=Y), **{**KW, **kw})


@pytest.fixture(scope="module")
def reference():
    return _fit(prior_predictive=10)


def _boom(*args, **kwargs):
    raise RuntimeError("injected failure")


def _errors(tree):
    return json.loads(tree.attrs["postprocessing_error"])


@pytest.mark.parametrize("target, step, missing", [
    ("pointwise_log_likelihood", "log_likelihood", "log_likelihood"),
    ("_posterior_predictive", "posterior_predictive", "posterior_predictive"),
    ("prior_predictive_draws", "prior_predictive", "prior"),
])
def test_a_failing_step_after_sampling_keeps_the_draws(reference, monkeypatch, tmp_path, target, step, missing):
    assert "postprocessing_error" not in reference.attrs and missing in reference.children
    monkeypatch.setattr(inference, target, _boom)
    out = tmp_path / "fit.nc"
    with pytest.warns(pm.PostprocessingWarning, match=f"sampling finished but {step} failed"):
        tree = _fit(prior_predictive=10, out=out)
    assert _errors(tree) == {step: "RuntimeError: injected failure"}
    assert "injected failure" in tree.attrs["postprocessing_traceback"]
    assert missing not in tree.children and "posterior" in tree.children and "sample_stats" in tree.children
    np.testing.assert_array_equal(tree["posterior"]["mu"].values, reference["posterior"]["mu"].values)
    # the partial result was saved, with its error, and loads
    back = pm.load_netcdf(out)
    assert _errors(back) == _errors(tree) and missing not in back.children
    assert issubclass(pm.PostprocessingWarning, FitWarning)  # fit_many reports it with the fit


def test_failing_conversion_falls_back_to_default_names_then_to_the_bare_draws(reference, monkeypatch):
    real = inference.to_datatree

    def named_fails(*args, named=True, **kwargs):
        if named:
            raise ValueError("bad dims")
        return real(*args, named=named, **kwargs)

    monkeypatch.setattr(inference, "to_datatree", named_fails)
    with pytest.warns(pm.PostprocessingWarning, match="conversion failed"):
        tree = _fit()
    assert _errors(tree) == {"conversion": "ValueError: bad dims"}
    assert tree["log_likelihood"]["y"].dims == ("chain", "draw", "y_dim_0")  # ArviZ's default name
    np.testing.assert_array_equal(tree["posterior"]["mu"].values, reference["posterior"]["mu"].values)

    monkeypatch.setattr(inference, "to_datatree", _boom)
    with pytest.warns(pm.PostprocessingWarning, match=r"conversion, conversion \(default dim names\) failed"):
        bare = _fit()
    assert set(bare.children) == {"posterior", "sample_stats"}
    np.testing.assert_array_equal(bare["posterior"]["mu"].values, reference["posterior"]["mu"].values)
    assert bare["sample_stats"]["diverging"].shape == (2, 40)
    assert json.loads(bare.attrs["sampler_settings"])["num_samples"] == 40  # provenance still recorded


def test_bad_coords_lose_nothing(reference):
    with pytest.warns(pm.PostprocessingWarning, match="conversion failed"):
        tree = _fit(coords={"trial": ["a", "b"]})  # 6 trials
    assert "conversion" in _errors(tree) and "trial" in _errors(tree)["conversion"]
    np.testing.assert_array_equal(tree["log_likelihood"]["y"].values, reference["log_likelihood"]["y"].values)


def test_failing_diagnostics_mark_the_fit_not_ok(monkeypatch):
    monkeypatch.setattr(inference, "diagnose", _boom)
    with pytest.warns(pm.PostprocessingWarning, match="diagnostics failed"):
        tree = _fit()
    assert tree.attrs["diagnostics_ok"] == 0 and json.loads(tree.attrs["diagnostics"]) == {}


def test_strict_raises_with_the_result_attached(monkeypatch, tmp_path):
    out = tmp_path / "fit.nc"
    with monkeypatch.context() as m:
        m.setattr(inference, "pointwise_log_likelihood", _boom)
        with pytest.raises(pm.FitPostprocessingError, match="log_likelihood failed") as info:
            _fit(strict=True, out=out)
    assert "posterior" in info.value.tree.children and isinstance(info.value, FitDiagnosticsError)
    # a fit refused for its diagnostics keeps its draws too
    with pytest.raises(FitDiagnosticsError, match="ESS") as refused:
        pm.fit(5, normal_model, dict(y=Y), **{**KW, "num_samples": 12}, strict=True, out=out)
    assert refused.value.tree["posterior"]["mu"].shape == (2, 12)
    assert not out.exists()


def test_failed_save_raises_with_the_result_attached(reference, tmp_path):
    (tmp_path / "blocker").write_text("a file where the folder should be")
    out = tmp_path / "blocker" / "fit.nc"
    with pytest.raises(pm.ResultSaveError, match=f"could not save the result to {out}.*on this exception's .tree") as info:
        _fit(out=out)
    err = info.value
    assert isinstance(err, OSError) and err.path == out and isinstance(err.__cause__, OSError)
    np.testing.assert_array_equal(err.tree["posterior"]["mu"].values, reference["posterior"]["mu"].values)
    assert str(out) in err.tree.attrs["save_error"]


def test_fit_many_keeps_the_draws_of_a_fit_whose_save_failed(tmp_path):
    (tmp_path / "blocker").write_text("")
    spec = FitSpec("a", normal_model, dict(y=Y), sampler={**KW, "num_chains": 1}, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        outcome = run_fit("a", spec, str(tmp_path / "blocker" / "a.nc"))
    assert outcome.status == "error" and outcome.error is not None and outcome.error.type == "ResultSaveError"
    assert outcome.tree is not None and outcome.tree["posterior"]["mu"].shape == (1, 40)
    assert "could not save" in outcome.tree.attrs["save_error"]


def test_run_manifest_records_postprocessing_errors(reference, monkeypatch, tmp_path):
    from pragmodels.runs.folder import Run

    monkeypatch.setattr(inference, "pointwise_log_likelihood", _boom)
    with pytest.warns(pm.PostprocessingWarning):
        partial = _fit()
    run = Run(tmp_path, tmp_path, {"fits": {}}, print)
    run.fit("partial", partial, "posterior.nc")
    run.fit("clean", reference)
    assert run.manifest["fits"]["partial"]["postprocessing_error"] == {"log_likelihood": "RuntimeError: injected failure"}
    assert run.manifest["fits"]["clean"]["postprocessing_error"] is None


def unplated_model(y):
    """The observations scored by a scalar distribution (no plate): each is scored, but a draw is one value."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def test_a_predictive_that_cannot_replicate_its_observations_is_named_not_garbled():
    """Before, the shape mismatch surfaced as ArviZ's conversion error about dims; now the posterior predictive
    step names the site, both shapes and the fix, and the rest of the result is kept."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = pm.fit(0, unplated_model, {"y": Y}, **KW)
    errors = json.loads(tree.attrs["postprocessing_error"])
    assert list(errors) == ["posterior_predictive"]
    assert "observed site 'y'" in errors["posterior_predictive"] and "shape (6,)" in errors["posterior_predictive"]
    assert "numpyro.plate" in errors["posterior_predictive"]
    assert tree.posterior["mu"].shape == (2, 40) and tree.log_likelihood["y"].shape == (2, 40, 6)
