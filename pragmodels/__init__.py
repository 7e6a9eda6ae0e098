"""pragmodels: Bayesian cognitive models of pragmatics.

Layering (a module may import only those listed before it, never one after):

    logmath -> semantics -> agents            pure JAX; never numpyro
    priors -> params, likelihoods             latent / observed numpyro.sample sites; never arviz
    rater_likelihood                          ordinal ratings with each rater's score integrated out
    predictive                                un-observe handler, predictive draws
    rsa_models                                model factories (agents + likelihoods)
    results_io, diagnostics -> inference      NUTS -> ArviZ DataTree, provenance, atomic netCDF
    model_comparison, contrasts               PSIS-LOO over several sites; posterior contrasts between fits
    datasets                                  registry, download/verify, tidy loaders (pandas)
    cli                                       command line (``pragmodels``)

Importing pragmodels changes no global state: no ``XLA_FLAGS``, no compilation cache, no
matplotlib backend. Ask for them explicitly, as with numpyro's ``set_host_device_count``::

    import pragmodels as pm
    pm.configure_host_devices()      # one CPU device per core, for parallel chains (before JAX starts)
    pm.enable_compilation_cache()    # reuse compiled kernels across processes (PRAGMODELS_COMPILATION_CACHE)

The ``pragmodels`` command line does both for itself.
"""

from pragmodels import agents, likelihoods, semantics  # noqa: E402
from pragmodels.config import configure_host_devices, enable_compilation_cache  # noqa: E402
from pragmodels.errors import ConfigError, PragmodelsError  # noqa: E402
from pragmodels.params import deterministic, group_effect, inspect_model, param, scaled_param, with_priors  # noqa: E402
from pragmodels.model_comparison import compare, joint_log_likelihood, loo, loo_sentence  # noqa: E402
from pragmodels.contrasts import contrast, contrast_draws, contrast_table  # noqa: E402
from pragmodels.predictive import predict, prior_predictive  # noqa: E402
from pragmodels.agents import (  # noqa: E402
    joint_listener,
    joint_marginals,
    lapse_mixture,
    lexical_uncertainty_listener,
    literal_listener,
    mixed_utility_speaker,
    pragmatic_listener,
    pragmatic_listener_batch,
    pragmatic_speaker,
    pragmatic_speaker_batch,
    qud_project,
    social_utility,
    weighted_utility_speaker,
)
from pragmodels.inference import FitPostprocessingError, PostprocessingWarning, fit  # noqa: E402
from pragmodels.fit_many import FitManyResult, FitSpec, fit_many  # noqa: E402
from pragmodels.batched import fit_batched  # noqa: E402
from pragmodels.priors import Prior  # noqa: E402
from pragmodels.results_io import (  # noqa: E402
    ResultChecksumError,
    ResultFileError,
    ResultFileWarning,
    ResultSaveError,
    load_netcdf,
    save_netcdf,
)

__version__ = "0.1.0"


__all__ = [
    "agents",
    "likelihoods",
    "semantics",
    "literal_listener",
    "pragmatic_speaker",
    "pragmatic_listener",
    "pragmatic_listener_batch",
    "pragmatic_speaker_batch",
    "lexical_uncertainty_listener",
    "qud_project",
    "lapse_mixture",
    "social_utility",
    "weighted_utility_speaker",
    "mixed_utility_speaker",
    "joint_listener",
    "joint_marginals",
    "fit",
    "fit_many",
    "fit_batched",
    "FitSpec",
    "FitManyResult",
    "Prior",
    "param",
    "scaled_param",
    "deterministic",
    "group_effect",
    "with_priors",
    "inspect_model",
    "loo",
    "compare",
    "loo_sentence",
    "joint_log_likelihood",
    "contrast",
    "contrast_draws",
    "prior_predictive",
    "predict",
    "contrast_table",
    "configure_host_devices",
    "enable_compilation_cache",
    "save_netcdf",
    "load_netcdf",
    "ResultFileError",
    "ResultChecksumError",
    "ResultSaveError",
    "ResultFileWarning",
    "PostprocessingWarning",
    "FitPostprocessingError",
    "PragmodelsError",
    "ConfigError",
    "__version__",
]
