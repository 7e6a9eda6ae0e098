"""pragmodels: Bayesian cognitive models of pragmatics.

The modelling vocabulary is at the top level (``pm.pragmatic_listener``, ``pm.param``, ``pm.fit``, ...);
the machinery lives in subpackages, each importing only from the layers below it (checked by
import-linter; ``docs/architecture.md``)::

    cli
    runs/                         configs, run folders, manifests, study and single-fit runners
    plots/  lm/                   figures (draw only); language models
    evaluation/ metrics/ datasets/  LOO, cross-validation, contrasts; the papers' metrics; data files
    inference/                    fit, NUTS program, compile cache, batched, fit_many, predictive
    rsa_models simulate           model factories, simulators
    likelihoods/ params           observed and latent numpyro.sample sites
    agents priors                 RSA agents (pure JAX); prior declarations
    semantics -> logmath          pure JAX
    validation model_key runtime io/   checks, model keys, host set-up, results on disk
    errors version

Importing pragmodels changes no global state: no ``XLA_FLAGS``, no compilation cache, no
matplotlib backend. Ask for them explicitly, as with numpyro's ``set_host_device_count``::

    import pragmodels as pm
    pm.configure_host_devices()      # one CPU device per core, for parallel chains (before JAX starts)
    pm.enable_compilation_cache()    # reuse compiled kernels across processes (PRAGMODELS_COMPILATION_CACHE)

The ``pragmodels`` command line does both for itself.
"""

from pragmodels import agents, likelihoods, semantics  # noqa: E402
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
from pragmodels.errors import ConfigError, PragmodelsError  # noqa: E402
from pragmodels.evaluation.contrasts import contrast, contrast_draws, contrast_table  # noqa: E402
from pragmodels.evaluation.model_comparison import (  # noqa: E402
    compare,
    joint_log_likelihood,
    loo,
    loo_sentence,
)
from pragmodels.inference.batched import fit_batched  # noqa: E402
from pragmodels.inference.fit_many import FitManyResult, FitSpec, fit_many  # noqa: E402
from pragmodels.inference.fitting import (  # noqa: E402
    FitPostprocessingError,
    PostprocessingWarning,
    fit,
)
from pragmodels.inference.predictive import predict, prior_predictive  # noqa: E402
from pragmodels.io.errors import (  # noqa: E402
    ResultChecksumError,
    ResultFileError,
    ResultFileWarning,
    ResultSaveError,
)
from pragmodels.io.netcdf import load_netcdf, save_netcdf  # noqa: E402
from pragmodels.params import (  # noqa: E402
    deterministic,
    group_effect,
    inspect_model,
    param,
    scaled_param,
    with_priors,
)
from pragmodels.priors import Prior  # noqa: E402
from pragmodels.runtime import configure_host_devices, enable_compilation_cache  # noqa: E402
from pragmodels.version import __version__

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
