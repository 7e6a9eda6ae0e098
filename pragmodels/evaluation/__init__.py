"""Evaluating fitted models: PSIS-LOO over several observation sites, K-fold cross-validation by
item, and posterior contrasts between fits.

- :mod:`~pragmodels.evaluation.model_comparison`: :func:`~pragmodels.loo`, :func:`~pragmodels.compare`;
- :mod:`~pragmodels.evaluation.crossval`: folds by item, held-out log density;
- :mod:`~pragmodels.evaluation.contrasts`: ``P(alpha_A > alpha_B)`` and differences between fits.
"""
