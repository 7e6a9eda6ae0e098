"""Study 1: the social meaning of numerical (im)precision (Mühlenbernd 2026; Solt, Mühlenbernd &
Burbelko 2025, Exp. 1), ``fits/social_meaning.json``.

- :mod:`~models.social_meaning.rsa`: the RSA model of the ratings and the non-pragmatic baseline;
- :mod:`~models.social_meaning.esr`: the measurement model of effect size ratios (ESR, CDS);
- :mod:`~models.social_meaning.claims`: the paper's claims as posterior probabilities;
- :mod:`~models.social_meaning.checks`: posterior predictive checks of the human fits;
- :mod:`~models.social_meaning.paper`: the paper's printed Tables 2-4;
- :mod:`~models.social_meaning.report`: parameter and chain tables, the run's ``report.md``;
- :mod:`~models.social_meaning.study`: the study's config schema and entry point.

Notes: ``docs/studies/social_meaning.md``.
"""
