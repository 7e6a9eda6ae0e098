"""pragmodels: Bayesian cognitive models of pragmatics.

Layering (a module may import only those listed before it, never one after):

    logmath -> semantics -> agents            pure JAX; never numpyro
    priors -> likelihoods                     the only numpyro.sample calls; never arviz
    rsa_models                                model factories (agents + likelihoods)
    results_io, diagnostics -> inference      NUTS -> ArviZ DataTree, provenance, atomic netCDF
    datasets                                  registry, download/verify, tidy loaders (pandas)
    cli                                       command line (``pragmodels``)

``config`` is imported first: it asks XLA for one CPU device per core (for parallel chains)
before JAX initialises, and switches on JAX's persistent compilation cache when the
environment variable ``PRAGMODELS_COMPILATION_CACHE`` names a directory.
"""

from pragmodels import config as _config

_config.configure_host_devices()

from pragmodels import agents, likelihoods, semantics  # noqa: E402
from pragmodels.agents import (  # noqa: E402
    joint_listener,
    joint_marginals,
    lapse_mixture,
    lexical_uncertainty_listener,
    literal_listener,
    mixed_utility_speaker,
    pragmatic_listener,
    pragmatic_speaker,
    qud_project,
    social_utility,
    weighted_utility_speaker,
)
from pragmodels.inference import fit  # noqa: E402
from pragmodels.priors import Prior  # noqa: E402
from pragmodels.results_io import load_netcdf, save_netcdf  # noqa: E402

__version__ = "0.1.0"

_config.enable_compilation_cache()

__all__ = [
    "agents",
    "likelihoods",
    "semantics",
    "literal_listener",
    "pragmatic_speaker",
    "pragmatic_listener",
    "lexical_uncertainty_listener",
    "qud_project",
    "lapse_mixture",
    "social_utility",
    "weighted_utility_speaker",
    "mixed_utility_speaker",
    "joint_listener",
    "joint_marginals",
    "fit",
    "Prior",
    "save_netcdf",
    "load_netcdf",
    "__version__",
]
