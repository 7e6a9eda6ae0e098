"""Type stub of the package: the names ``pragmodels/__init__.py`` loads on first use (lazy_loader)."""

# subpackages and modules reachable as attributes (``pm.rsa_models``), imported on first use
from . import (
    agents as agents,
    datasets as datasets,
    errors as errors,
    evaluation as evaluation,
    inference as inference,
    io as io,
    likelihoods as likelihoods,
    lm as lm,
    logmath as logmath,
    metrics as metrics,
    params as params,
    plots as plots,
    priors as priors,
    rsa_models as rsa_models,
    runs as runs,
    runtime as runtime,
    semantics as semantics,
    simulate as simulate,
    validation as validation,
)
from .agents import (
    joint_listener as joint_listener,
    joint_marginals as joint_marginals,
    lapse_mixture as lapse_mixture,
    lexical_uncertainty_listener as lexical_uncertainty_listener,
    literal_listener as literal_listener,
    mixed_utility_speaker as mixed_utility_speaker,
    pragmatic_listener as pragmatic_listener,
    pragmatic_listener_batch as pragmatic_listener_batch,
    pragmatic_speaker as pragmatic_speaker,
    pragmatic_speaker_batch as pragmatic_speaker_batch,
    qud_project as qud_project,
    social_utility as social_utility,
    weighted_utility_speaker as weighted_utility_speaker,
)
from .errors import (
    ConfigError as ConfigError,
    PragmodelsError as PragmodelsError,
)
from .evaluation.contrasts import (
    contrast as contrast,
    contrast_draws as contrast_draws,
    contrast_table as contrast_table,
)
from .evaluation.model_comparison import (
    compare as compare,
    joint_log_likelihood as joint_log_likelihood,
    loo as loo,
    loo_sentence as loo_sentence,
)
from .inference.batched import (
    fit_batched as fit_batched,
)
from .inference.fit_many import (
    FitManyResult as FitManyResult,
    FitSpec as FitSpec,
    fit_many as fit_many,
)
from .inference.fitting import (
    FitPostprocessingError as FitPostprocessingError,
    PostprocessingWarning as PostprocessingWarning,
    fit as fit,
)
from .inference.predictive import (
    predict as predict,
    prior_predictive as prior_predictive,
)
from .inference.top_up import (
    top_up as top_up,
)
from .io.errors import (
    ResultChecksumError as ResultChecksumError,
    ResultFileError as ResultFileError,
    ResultFileWarning as ResultFileWarning,
    ResultSaveError as ResultSaveError,
)
from .io.netcdf import (
    load_netcdf as load_netcdf,
    save_netcdf as save_netcdf,
)
from .params import (
    deterministic as deterministic,
    group_effect as group_effect,
    inspect_model as inspect_model,
    param as param,
    scaled_param as scaled_param,
    with_priors as with_priors,
)
from .priors import (
    Prior as Prior,
)
from .runtime import (
    configure_host_devices as configure_host_devices,
    enable_compilation_cache as enable_compilation_cache,
)
from .version import __version__ as __version__

# ``__all__`` is pragmodels/__init__.py's (the public API); this stub lists what loads lazily.
