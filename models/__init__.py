"""The studies of the three seed papers, one subpackage each: :mod:`models.social_meaning`,
:mod:`models.wavelength` and :mod:`models.implicature` (model functions, measurement models, LM
prompting, the study runner).

A folder of the repository, not installed by the wheel. A config's ``"study"`` entry names a
file here (``"models/social_meaning/study.py:run"``) and :mod:`pragmodels.runs` imports it by its
location; tests import ``models...`` from the repository root, a notebook calls
:func:`pragmodels.runs.entry_points.import_studies` first. Studies import ``pragmodels`` and each
other's modules absolutely (``from models.social_meaning import rsa``); ``pragmodels`` never imports
them. Design notes and measurements: ``docs/studies/``.
"""
