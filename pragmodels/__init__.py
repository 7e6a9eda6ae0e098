"""pragmodels: Bayesian cognitive models of pragmatics.

The modelling vocabulary is at the top level (``pm.pragmatic_listener``, ``pm.param``, ``pm.Prior``,
``pm.fit``, ...); the machinery lives in subpackages named for what they do (``inference``,
``evaluation``, ``metrics``, ``io``, ``runs``, ``lm``, ``datasets``, ``plots``), in layers that
import-linter checks (``docs/architecture.md``). The names load on first use (``lazy_loader``;
their list, with types, is ``__init__.pyi``; ``EAGER_IMPORT=1`` loads all at once), so
``import pragmodels`` imports no JAX.

Importing pragmodels changes no global state (no ``XLA_FLAGS``, no compilation cache, no
matplotlib backend). Ask for them explicitly, as with numpyro's ``set_host_device_count`` (the
``pragmodels`` command line does both)::

    pm.configure_host_devices()      # one CPU device per core, for parallel chains (before JAX starts)
    pm.enable_compilation_cache()    # reuse compiled kernels across processes (PRAGMODELS_COMPILATION_CACHE)
"""

import lazy_loader

from pragmodels.version import __version__

__getattr__, __dir__, _ = lazy_loader.attach_stub(__name__, __file__)

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
    "top_up",
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
