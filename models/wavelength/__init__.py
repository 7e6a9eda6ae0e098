"""Study 2: the Wavelength game (Qiu et al. 2025), LM-RSA listeners fitted to 4,000 human guesses,
``fits/wavelength.json``.

- :mod:`~models.wavelength.listeners`: the agents and NumPyro models, item cross-validation;
- :mod:`~models.wavelength.prompts`: the listener and speaker prompts;
- :mod:`~models.wavelength.lm_scores`: scoring the items with an LM (alternatives, three passes);
- :mod:`~models.wavelength.score`: the command line that scores them (``python -m models.wavelength.score``);
- :mod:`~models.wavelength.production`: the LM's own clues against Inverse-RSA clues;
- :mod:`~models.wavelength.study`: the study's config schema, entry point and report.

Notes: ``docs/studies/wavelength.md``.
"""
