"""Inference: NUTS fits to ArviZ DataTrees, and what runs before and after them.

- :mod:`~pragmodels.inference.fitting`: :func:`~pragmodels.fit`, one model to one data set;
- :mod:`~pragmodels.inference.nuts`: the compiled NUTS program (initialisation, warm-up and
  sampling in one ``jit``);
- :mod:`~pragmodels.inference.compile_cache`: the cache of compiled programs that later fits of
  the same model and shapes reuse;
- :mod:`~pragmodels.inference.batched`: several data sets of one model in one compiled run;
- :mod:`~pragmodels.inference.fit_many`: many fits in process, on a process pool or a Dask cluster;
- :mod:`~pragmodels.inference.workers`: worker processes' JAX set-up, and one task started in a
  worker beside the caller (:func:`~pragmodels.inference.workers.start_in_worker`);
- :mod:`~pragmodels.inference.top_up`: the fits short of the sampling standards refitted with more draws;
- :mod:`~pragmodels.inference.predictive`: prior and posterior predictive draws;
- :mod:`~pragmodels.inference.multistart`: the multi-start optimisation behind ``init="optimize"``;
- :mod:`~pragmodels.inference.diagnostics`: r_hat, ESS, divergences and the sampling standards.

Only :func:`fit` and its two exception types are re-exported here; everything else is imported
from its module (the package ``pragmodels`` re-exports the user-facing names).
"""

from pragmodels.inference.fitting import (
    CHAIN_METHODS,
    FitPostprocessingError,
    PostprocessingWarning,
    fit,
)

__all__ = ["fit", "CHAIN_METHODS", "FitPostprocessingError", "PostprocessingWarning"]
