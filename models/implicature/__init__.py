"""Study 3: DRInQ conversational implicature (Arai & Ren 2026), an LM on the benchmark and a
pragmatic listener, ``fits/implicature.json``.

- :mod:`~models.implicature.listeners`: the pragmatic listener, its rivals, the consensus likelihood;
- :mod:`~models.implicature.prompts`: the prompting conditions and the answer parser;
- :mod:`~models.implicature.lm_outputs`: running the benchmark with an LM (three passes), its tables;
- :mod:`~models.implicature.score`: the command line that runs it (``python -m models.implicature.score``);
- :mod:`~models.implicature.study`: the study's config schema, entry point and report.

Notes: ``docs/studies/implicature.md``.
"""
