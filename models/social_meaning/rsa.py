r"""RSA model of the social meaning of numerical (im)precision (Mühlenbernd 2026, Section 2;
Solt, Mühlenbernd & Burbelko 2025, Exp. 1).

Layering: imports :mod:`pragmodels.agents`, :mod:`pragmodels.likelihoods.categorical`,
:mod:`pragmodels.params` and :mod:`pragmodels.priors`; nothing imports this module except
the study runner (:mod:`models.social_meaning.study`) and notebooks.

Speaker types and forms
-----------------------
A speaker type is ``t = (k, m)``: knowledge ``k ∈ {exact, vague}`` (knows the exact number, or
only roughly) and motive ``m ∈ {cooperative, precise-minded, casual}``. Forms ``u ∈ {precise,
approx}``; contexts ``c ∈ {low, high}`` (low / high precision demand).

The question under discussion (QUD) a speaker serves depends on motive and context:
``g(m, c) = fine`` for a precise-minded speaker, ``coarse`` for a casual one, and the context's own
granularity for a cooperative one (``fine`` iff ``c = high``). Informativeness of a form:

.. math::

    U(\text{precise}; t, c) = 0, \qquad
    U(\text{approx}; t, c) = -\delta\,[g(m, c) = \text{fine}],

with ``δ = log 5`` (an approximate number leaves ~5 fine-grained values open); ``precise`` is
unavailable (``U = -∞``) to a speaker with vague knowledge. The speaker (eq. S) and listener
(eq. L), for scenario ``s``:

.. math::

    S(u \mid t, c) \propto \exp\{\alpha\,[U(u; t, c) - C(u)]\}, \qquad C(\text{approx}) = 0,\;
    C(\text{precise}) = \texttt{cost\_precise}                                       \quad (S)

    L(t \mid u, c, s) \propto S(u \mid t, c)\, P_s(k)\, P(m)                           \quad (L)

with ``P_s(k = exact) = σ(θ_s)``, ``θ_s ~ N(θ_μ, θ_σ)`` (scenarios enter hierarchically) and
``P(m) = softmax(0, ψ_1, ψ_2)`` (``ψ = 0`` by default: see "Identification"). (Only the cost
*difference* between forms is identified, so the approximate form's cost is fixed at 0.)

Why alpha and this log-odds
---------------------------
A speaker who knows the number chooses between two forms, so ``α`` and ``C`` reach the data only
through two log-odds of the precise form: ``λ_f = α (δ − C)`` when the QUD is fine and
``λ_c = −α C`` when it is coarse (``precise_logodds_coarse``; a vague speaker has no choice).
The model samples ``α`` and ``λ_c`` and derives ``cost_precise = −λ_c / α``. In ``(α, C)`` the
data pin ``λ_c`` on a hyperbola ``C = −λ_c / α``, and where the LLMs prefer the precise form
under a coarse QUD only a little (``C`` near ``δ = log 5``), ``λ_f`` flips sign within a few
tenths of ``C`` once ``α`` is large: a curved, narrowing ridge. Measured on Gemini KMA (full
settings, 4 x 750 draws): 8-16 divergent transitions sampling ``(α, C)`` with ``C ~ N(0, 1)``,
most in the tail of ``α`` (up to 17, median 7) with ``C`` 1.1-1.5; none sampling ``(α, λ_c)``. The prior ``λ_c ~ N(0, 3)``
(95% within ±6, i.e. 0.25%-99.75%) is weakly informative on the scale the data speak in; it
implies a heavier-tailed prior on ``C`` than the former ``N(0, 1)``.

Scenario knowledge
------------------
``θ_σ`` is a scale estimated from six scenarios. Its prior, log-normal with median 0.5 and 95% in
[0.11, 2.2] (log-odds), has no mass at 0, as recommended for a group scale with few groups
(Chung et al. 2013): it keeps the centred density bounded, so that ``init="optimize"`` cannot end
in the degenerate spike ``θ_σ -> 0`` (measured with centred rater effects: all chains stuck
there). The LLM data pin every ``θ_s`` (60 ratings per scenario and attribute), so ``θ_s`` is
sampled centred (``theta_param="centred"``): non-centred, ``z_s = (θ_s − θ_μ) / θ_σ`` narrows as
``θ_σ`` grows, and on Claude ALT 11 of 3,000 transitions diverged, at ``θ_σ`` 0.8-1.8 (posterior
median 0.56) with ``θ_s`` near their posterior medians; centred, 1-2 at ``target_accept`` 0.9 and
none at 0.95 (the study's setting). The human fits, with 15 raters per scenario
and cell, sample it non-centred. Both parametrisations have the same posterior.

Scenario effects
----------------
Each attribute's scenario effects ``ζ_{a,s}`` (below) sum to zero over the six scenarios, with
scale ``τ_a``. The human fits sample them non-centred, ``ζ = (z − z̄) τ_a`` with ``z ~ N(0, 1)``;
the LLM fits centred on the five Helmert contrasts, ``ζ = Q z`` with ``z ~ N(0, τ_a)``
(``zeta_param="centred"``). ``Q Qᵀ = I − 11ᵀ/6``, so both give ``ζ`` the same prior and the
posterior is the same. An LLM's 60 ratings per scenario and attribute pin each ``ζ_{a,s}``, and
non-centred ``z = ζ / τ_a`` then narrows as ``τ_a`` grows: an inverted funnel. Measured (single
fits, study full settings, 2026-12-05): in 3 of the 4 divergent transitions of Claude ALT (seeds
+1, +2: 2 and 1) and GPT COM (seed +2: 1) one ``τ_a`` was at its 99.3rd-100th percentile.
Centred, GPT COM had none; Claude ALT still had 1 and 2, but none of them at a large ``τ_a``: all
sat on the wall of ``p_exact``'s floor ("Features that vanish"), which the new floor removed.
Centred, Claude ALT needed 31 leapfrog steps per draw instead of 46 (GPT COM 31 either way) and
the smallest bulk ESS rose from 2,494 to 3,619 (Claude ALT) and from 2,691 to 4,458 (GPT COM). Sampling the contrasts leaves no
direction to the prior alone (six centred effects with their mean subtracted would leave the mean,
``N(0, τ_a/√6)``, a funnel of its own). An earlier measurement against centring (Gemini MIN, 38%
of trajectories at the depth cap against 12%) was made with a diagonal mass matrix, before the
LLM fits adapted a dense one.

Centred, the density of the five contrasts grows as ``τ_a^{-5}`` where they are near 0, so a
prior with mass at 0 makes ``τ_a -> 0`` a spike that an optimiser, and so ``init="optimize"``,
can end in (as "Scenario knowledge" says of ``θ_σ``). Under the former ``τ_a ~ HalfNormal(1)``,
Gemini KMA (seed +1) started two chains there, with ``τ`` 0.004-0.005 for two attributes
(0.68-0.89 in the other chains): r_hat 2.51, 75% of trajectories at the depth cap. ``τ_a`` now
has the prior of ``θ_σ``, log-normal with median 0.5 and 95% in [0.11, 2.2] rating points, which
keeps the centred density bounded: Gemini KMA and Gemini ALT (seed +1) then converged (no
divergences, r_hat 1.002, bulk ESS 2,447 and 3,844, 30-38 leapfrog steps per draw). The LLMs'
``τ`` have posterior medians of 0.37-1.01 rating points, where this prior is flat-ish; it pulls
the largest ones down a little (Gemini KMA's competent 0.88 under the half-normal prior with
non-centred effects, 0.76 under this one). The human fits take the same prior; their ``τ`` are
smaller (2026-12-05 run: posterior medians 0.14-0.45, 94% intervals reaching down to 0.05), in the
prior's lower tail (0.14 is its 5th percentile), so the prior may hold them up somewhat; how much
was not measured.

Link to ratings
---------------
The listener's inferences about the speaker give features ``f(u, c, s)`` under ``L``. The
study's link (``link="qud_fit"``, the default) uses two:

* ``p_exact = P(k = exact | u, c, s)``: does the speaker know the exact number?
* ``p_qud_fit = P(g(m, c) = the context's own QUD | u, c, s)``: did the speaker serve the question
  the context raised (a cooperative speaker always does; a precise-minded one only where precision
  matters, a casual one only where it does not)?

Grounding (the paper's Section 2): listeners judge speakers by the knowledge and the motives that
explain their choice, and violations of relevance and informativeness lower evaluations of
competence and warmth (Beltrama & Papafragou 2023). ``p_qud_fit`` is that norm, and it is context-
relative: an approximate number where precision matters, or a precise one where it does not, is a
misfit. The previous link (``link="motives"``) used ``(p_exact, P(m = precise-minded),
P(m = casual))``, context-free motive probabilities.

Each feature is centred on its mean over the 24 scenario x context x form conditions and, for
``qud_fit``, divided by ``sqrt(SD² + floor²)`` over them (``FEATURE_SD_FLOOR``: 1e-4 for
``p_exact``, 1e-3 for ``p_qud_fit``), so ``β`` is in
rating points per SD of the feature and does not have to grow as alpha shrinks the features' range
(see "Features that vanish" for the floor). A latent score *on the rating scale*

.. math::

    η = μ_a + β_a · \tilde f + ζ_{a,s} + ω_a ε_p,\qquad ζ_{a,s} \sim N(0, τ_a),\; ε_p \sim N(0, 1)

(``μ_a``: the attribute's level; ``ω_a ε_p``: a rater effect, for human participants only,
integrated out of each rater's likelihood ("Raters who saw one cell"), one
factor with a loading ``ω_a = sigma_participant[a]`` per attribute, because a rater's general
positivity moves competence, helpfulness and the like together but barely touches pedantry (the
within-cell correlations are 0.7-0.8 and 0.2); ``ζ`` is centred to sum to zero and ``ε`` has
mean 0, so ``μ_a`` is the grand mean). The
rating ``y ∈ 1..7`` follows an ordered logistic with response noise ``σ_a`` (the logistic
scale, in rating points, per attribute: "Noise per attribute") and cutpoints ``κ_a`` whose outer two are fixed at 1.5 and 6.5 (so
``μ``, ``β``, ``ζ`` and ``σ`` are in rating points and identified), the interior ones
spaced by a simplex ``w_a`` (normalised Gamma(4) gaps, i.e. Dirichlet(4, ..., 4)):
``κ_a = 1.5 + 5 · (0, w_1, w_1 + w_2, ..., 1)``. It is mixed with a uniform lapse ``λ``:

.. math::

    P(y) = (1 − λ)\,\mathrm{OrdLogit}(y;\ η / σ_a,\ κ_a / σ_a) + λ / 7 .

Why this parametrisation: near-deterministic raters (an LLM that gives the same rating in 76%
of conditions) need a latent scale many logits wide. With free cutpoints and a logistic scale
fixed at 1, every scale-carrying parameter (cutpoint gaps, β, τ) has to grow together against
its own prior, a long curved ridge on which NUTS saturates its trees. Here one parameter per
attribute, ``σ_a``, carries the scale ("Noise per attribute"); humans and LLMs are compared on
the typical one, ``noise``, directly.

``σ`` has a floor, ``σ = 0.15 + σ_excess`` (``NOISE_FLOOR``; per attribute since 2026-12-02, the
figures below were measured with one scale shared by all attributes). Measured on Claude MIN (1,342
ratings, 76% of the 144 conditions rated identically all 10 times), 4 chains: with no floor
``σ`` collapses to about 0.02 (the lapse absorbs every deviation), the ordinal walls become
cliffs ~50 logits per rating point steep, every trajectory hits tree depth 8 and the chains
disagree (r_hat 1.55 and bulk ESS 7 at 600 draws; 1.12 with a tighter noise prior); with the
floor, r_hat 1.006 and bulk ESS 925 at 600 draws (43% of trajectories still reach depth 8).
The floor is a modelling choice made for the sampler, not a finding: at ``σ = 0.15`` a latent
centred in its category yields ten identical ratings with probability about 0.5 (about 1 at
``σ = 0.02``), so the most deterministic LLMs would prefer a lower ``σ``. A posterior piled at
the floor therefore reads "at least as deterministic as the model can express", and the study
report marks such fits.

Features that vanish
--------------------
Divided by its SD alone, a feature is rescaled whatever residue is left of it, so the ratings
respond to the *shape* of a listener inference over the conditions and never to its size. Two
directions of the parameters shrink a feature towards nothing while its shape converges:

* knowers who use the precise form almost always (``λ_c``, ``λ_f`` large; ``cost_precise``
  very negative): an approximate number then says "vague" whatever the motive, ``p_exact`` is a
  pure form effect and ``p_qud_fit`` varies by a residue of probabilities near ``σ(−λ)``, whose
  shape (correlation above 0.99 with its limit from cost −1 on, at alpha 1.2) is mostly the form x
  context interaction. Measured at alpha 1.2 and θ_μ −0.9: the SD of ``p_qud_fit`` is 0.09 at cost
  0, 0.012 at −2, 1.2e-3 at −4, 1.3e-5 at −7.7;
* almost every speaker knowing the number (θ large; the LLM fits, θ_s 3-5): ``p_exact`` has SD
  0.035 at θ 3, 0.013 at 4, 0.005 at 5, with the same shape.

Without a floor, both are plateaus of the likelihood that only the priors bound. On the human
ratings the plateau of the cost is where the ratings are fitted best (the two features then
separate the form effect from the interaction): in the 2026-12-02 full run three chains stayed at
cost 0.3-0.8 and one reached −7.7 with a log likelihood 6 nats higher (r_hat 1.59). The floor
``sqrt(SD² + FEATURE_SD_FLOOR²)`` with ``FEATURE_SD_FLOOR = 1e-3`` (a tenth of a percentage
point) cuts both plateaus off where an inference no rater could respond to begins: ``β`` would have
to grow by ``1 / factor`` to use such a feature, and its prior rules that out (at cost −7.7 the
normalised ``p_qud_fit`` is 0.013 in size, against 0.11 with ``SD + 1e-4``).

A larger floor cuts deeper into the LLMs' plateau and turns it into a curved ridge of ``θ``
against the ``p_exact`` loadings, which NUTS cannot follow: measured with ``FEATURE_SD_FLOOR =
0.01`` (single fits, study settings): Gemini COM 72 divergent transitions, all at ``θ_s`` 4-4.5
(posterior median 2.8) with large loadings; Claude ALT 12, and 38% of trajectories at the depth
cap (0% before). On the human ratings 0.01 removed the mode at −7.7, but the chains still
disagreed (r_hat 1.43; means of the cost −1.1, −2.7, −4.0, −1.1 at equal log likelihoods
−2,231.8 to −2,233.3): what is left is a long ridge of the cost against θ_μ (0.9 to −0.3) that the
ratings do not pin, so the human RSA fits adapt a dense mass matrix over the speaker, listener and
loading parameters (the study's ``RSA_BLOCK``) and a diagonal one elsewhere.

A floor is also a wall, and ``p_exact``'s is ten times lower than ``p_qud_fit``'s since 2026-12-05
(``FEATURE_SD_FLOOR = {"p_exact": 1e-4, "p_qud_fit": 1e-3}``). Beyond the plateau the normalised
feature shrinks as ``SD / sqrt(SD² + floor²)``, and its loss of fit grows like ``e^{2θ}``: an
exponential wall, where a leapfrog step that was safe on the plateau is not. At Claude ALT's
posterior (alpha 1.75, cost 1.38) the normalised ``p_exact`` keeps 0.99 of its size at θ = 5, 0.91
at 6 and 0.64 at 7 with the floor 1e-3, so the wall stood where the LLMs' ``θ_μ`` reaches at its
99.5th percentile. Measured (single fits, study full settings, centred scenario effects,
2026-12-05): Claude ALT diverged there at seeds +1 and +2 (1 and 2 transitions, every ``θ_s`` and
``θ_μ`` at their 99.1st-100th percentiles in each). With 1e-4 the wall moves 2.3 log-odds out (0.99
of the size up to θ = 7), into the prior's far tail: no divergences at either seed, and no
trajectory longer than 31 leapfrog steps. ``p_qud_fit`` keeps 1e-3, which cuts the human cost's
plateau off (above); the human ``θ_μ`` (1.6 [−0.1, 3.5]) is far from either wall.

What the ratings cannot identify
--------------------------------
The ratings say how a listener reads each form in each context; they do not say how often a
speaker who knows the number uses the precise form. Under the weak prior ``λ_c ~ N(0, 3)`` the
human RSA fit's cost and share of knowers trade off along a ridge that only that prior bounds:
in the 2026-12-02 full run (floor 1e-3, dense block) two chains sat at a cost of −6.9 and −6.4
(``θ_μ`` −0.3), two at 0.7 and −0.8 (``θ_μ`` 1.6, 1.1), with equal log likelihoods (−2,233.5
to −2,232.0), r_hat 1.69 and 51% of trajectories at the depth cap. Every RSA fit of the study,
human and LLM, therefore takes an informative prior on that log-odds from production data
(``PRIORS_SPEAKER``): ``λ_c ~ N(−0.5, 1)``, i.e. a speaker who knows the number and serves a
coarse QUD uses the precise form with probability 0.38 (95% in 0.08-0.82). People asked the time
in the street mostly round even when their watch shows the exact minute, and round less when the
asker needs precision (van der Henst, Carles & Sperber 2002, *Mind & Language* 17: 457-466).
Measured on the human ratings (single fit, study settings and seed): the chains agree on the cost
(chain means 0.60-0.65) and ``θ_μ`` (1.51-1.62), 0.03% of trajectories reach the depth cap, and
the fit takes 16 minutes instead of 30 (the rater scores, then sampled, still mixed slowly:
"Raters who saw one cell" says why and how they are now integrated out). The human cost and share
of knowers are then the prior's as much as the data's: the report must not read them, or their
contrasts with the LLMs, as measured.

The LLM fits kept ``N(0, 3)`` until 2026-12-04, and the same ridge split GPT KMA's chains
("Identification"). Since then they take the humans' prior, for two reasons: it removes the
LLMs' second explanations, and with one prior for every rater the human-LLM contrasts of ``α``
compare data, not priors. The price is that where an LLM's ratings pin the cost ``C`` (Claude ALT:
1.17-1.55), they pin ``λ_c = −α C`` only jointly with ``α``. A prior on ``λ_c`` is then a prior on
``α``: Claude ALT's ``α`` is 2.55 under ``N(0, 3)`` (2026-12-03 run) and 1.79 [1.23, 2.54] under
``N(−0.5, 1)``; GPT ALT's 2.43 and 1.95 [1.33, 5.03]; Gemini COM's 5.20 and 3.85 (posterior
medians [94% intervals]). The LLMs' ``α`` carry this prior as the human cost does, and the report
says so.

Noise per attribute
-------------------
Raters disagree far more about pedantry than about competence: in the human data "pedantic" is
spread over the whole scale (13% 1s, 34% 4s, 9% 7s), "competent" sits at 4-7 (5% below 4), and
each rater rates each attribute once, so a rater's idiosyncratic view of one attribute is
response noise. Each attribute therefore has its own scale, ``σ_a = 0.15 + e_a`` with
``e_a = noise_excess [attribute] ~ LogNormal(−0.7, 1.35)``, independent across attributes;
``noise = 0.15 + (Π_a e_a)^(1/6)`` is the typical scale, the one the report compares. With one scale for all six, the pedantry ratings could only be fitted by the lapse
and one very wide interior category, and there were three such fits, each a mode: the widest
category was rating 6, 4 or 2 with pedantry's level at 2.2, 4.0 or 5.7 and the lapse at 0.06 or
0.11. Measured on the human baseline (4 x 1,500 draws, study seed + 1): one shared scale, chains in
those modes (r_hat 2.41, mean log likelihoods −2,334 to −2,376); a scale per attribute, r_hat
1.004, bulk ESS 1,580, log likelihood −2,231 in every chain, ``σ`` 0.29 (competent) to 1.09
(pedantic), lapse 0.018 (0.06-0.11 before).

The excesses are not pooled. Until 2026-12-04 they were, ``e_a = e · exp(s (r_a − r̄))`` with
``s ~ HalfNormal(1)`` and ``r_a ~ N(0, 1)`` (the marginal SD of ``log e_a`` under that prior,
1.35, is the independent prior's scale). Six attributes say little about a population spread
(Claude ALT's posterior of ``s`` was its prior), and in the near-deterministic LLM fits the
pooling made a funnel: five excesses sit against the floor, below a likelihood wall with only
their prior under it, while the data pull one (likeable) up, so ``s`` had to grow for that
attribute while every other ``r_a`` was pressed against its wall. The divergent transitions of
the 2026-12-04 full run sat there: in Claude ALT's 14 and Claude COM's 3, ``s`` was at its 80th
to 99th percentile in 13 of 17 and the likeable noise often at its 90th. With independent
priors (single fits, study full settings and seeds, 2026-12-04): Claude ALT no divergences (5),
r_hat 1.002, bulk ESS 2,391; Claude MIN none (1); Gemini ALT none (1); Claude COM 1 (3), in the
extreme cutpoints' tails. The full run that followed: Claude ALT 2 (14), Claude COM 1, Claude MIN
and Gemini ALT none.

Identification
--------------
Why the ``qud_fit`` link is identified and the ``motives`` link is not: per attribute, the data
fix three contrasts of the four form x context cells (the form effect, the context effect, their
interaction). Under ``motives`` the three features' contrasts are linearly dependent for every
alpha and cost (the 3 x 3 matrix of feature contrasts has condition number 1e7-1e8, measured at
alpha 1.1-8), so one direction of ``β_a`` per attribute is fixed by its prior alone: a flat ridge
on which chains wandered and settled in different explanations (the committed full run: Claude
COM split 2 : 2 with equal likelihoods; the human fit found a second mode). Under ``qud_fit`` the
two features' contrasts have singular values 0.4-0.9 (alpha 1-8, cost -0.5 to 0.5): ``p_exact``
carries the form effect, ``p_qud_fit`` the interaction, and two loadings per attribute are
determined by three contrasts. Simulation (``tests/models/social_meaning/test_rsa.py``, slow) fits
data generated from known parameters at the real data's size and recovers them.

The motive prior
----------------
By default ``P(m)`` is uniform (``ψ = 0``, ``rsa_model(motive_prior="uniform")``); the listener
still infers the motive, from form and context. The three features span the three form x
context contrasts of an attribute, so with ``ψ`` free the loadings ``β`` can trade off against
``ψ`` and ``θ``: measured on the 12 LLM data sets (full run, 4 x 600 draws), 8 fits had two
modes (``ψ`` and ``β`` flip sign, ``θ`` shifts; r_hat 1.14-1.74). On GPT COM, keeping two
loadings per attribute with ``ψ`` free was still bimodal (r_hat 1.53); fixing ``ψ = 0`` gave
r_hat 1.007 and bulk ESS 874. ``motive_prior="free"`` remains available.

With ``ψ = 0`` the posterior can still have separated modes in which ``β`` and ``θ`` trade off.
On Claude KMA, chains started near the prior medians split 3 : 1 (r_hat 1.53): three chains
explained "approximate where precision matters" mainly by the ``p_exact`` loadings, the fourth by
the ``p_casual`` loadings, and the fourth's log likelihood was 22 nats higher. Sixteen
optimised random starts found both basins, the ``p_casual`` one 26 nats below the other in
potential energy; with chains started in the best basin (``pm.fit(..., init="optimize")``, what
the study uses) the fit converged (r_hat 1.007, bulk ESS 1,144), as did Claude MIN (1.007;
1.53 before). A mode that far below carries a negligible share of the posterior mass, but the
study reports every fit's basin gap so that a close second basin would not go unseen.

Not every such trade-off has a winner. On Claude COM (full run, init="optimize") 15 of 16
starts ended in one basin, yet the four chains split 2 : 2 between the same two explanations,
(``β_exact`` ≈ −1.2, ``β_casual`` ≈ −3.2, one ``θ_s`` ≈ 1.2) and (``β_exact`` ≈ +3.6,
``β_casual`` ≈ −0.8, that ``θ_s`` ≈ 3.5), with equal log likelihoods (−396.7 to −397.2): the data
do not identify which feature carries "approximate where precision matters". Such a fit is
reported as not converged, with a chain-by-chain table, and its RSA parameters are not read.
Identifying it needs a link with fewer free loadings than form x context contrasts (e.g.
loadings shared across attributes up to a scale), which would be a different model.

The ``qud_fit`` link has a milder twin on the cost's plateau ("Features that vanish"). In the
2026-12-03 full run (``λ_c ~ N(0, 3)``), one GPT KMA chain explained the ratings with a cost of
−3.4, ``θ_μ`` 2.8 and a ``p_qud_fit`` loading of 0.60 per SD, the other three with −0.1, 3.9 and
0.03, at equal log likelihoods (−845.3 against −844.9; r_hat 1.19, 82 divergent transitions); in
the 2026-12-02 run all four chains had stayed in the second, so that fit's apparent convergence
missed a mode. Where an LLM's ratings barely use ``p_qud_fit``, they do not pin the cost either,
and a wide prior lets it run onto the plateau (another seed: three chains at ``λ_c`` 8.8, cost
−6.2). The production prior ("What the ratings cannot identify") closes it. Measured 2026-12-04
(single fits, study full settings and seeds, ``target_accept`` 0.95) under ``N(−0.5, 1)``, with
the 2026-12-03 run under ``N(0, 3)`` in brackets:

* GPT KMA (measured 2026-12-03): r_hat 1.001, bulk ESS 1,926, tail 1,668, no divergences, 63
  leapfrog steps per draw, chain medians of the cost −0.011 to −0.005 (r_hat 1.19, 82
  divergences);
* Claude KMA: no divergences, r_hat 1.002, bulk ESS 2,418 (1 divergence);
* Gemini MIN: no divergences, r_hat 1.002, bulk ESS 1,803 (1);
* Gemini COM: no divergences, r_hat 1.010, bulk ESS 1,261, just short of the standard (2, and 1.0%
  of trajectories at the cap);
* GPT ALT: no divergences, r_hat 1.007, bulk ESS 1,070 (tail ESS 220);
* Claude ALT: 5 divergences (6), r_hat 1.003. The prior does not reach them. They sit on a scale
  ridge of one attribute: under ``N(−0.5, 1.5)``, 9 of 12 divergent draws had the likeable
  attribute's noise above its 90th percentile among all draws, 8 its ``p_qud_fit`` loading above
  the 90th, and 10 its office scenario effect below the 13th; under ``N(−0.5, 1)`` all 5 are in
  one chain, with the likeable noise and two of its cutpoint gaps high. ``target_accept`` 0.97
  and 0.98 leave one (0.1% of trajectories at the cap).

``target_accept`` 0.99 removes Claude ALT's divergences but sends 6% of its trajectories to the
depth cap (16% of GPT KMA's), above the 1% standard. The 2026-12-04 full runs under this prior:
every LLM fit has r_hat <= 1.005, bulk and tail ESS >= 610 and at most 0.1% of trajectories at
the cap (GPT KMA: r_hat 1.002, no divergences); four miss only on divergences. With the pooled
noise: Claude ALT (14), Claude COM (3), Claude MIN (1) and Gemini ALT (1). With independent
noise priors ("Noise per attribute"): GPT COM (13, all in one chain's excursion onto the cost's
ridge: ``α`` and the cost at their 95th-98th percentiles, ``λ_c`` at its 1st; none the run
before, and none in a single fit at the same seed and settings; ``target_accept`` 0.97 there
also gives none but sends 25% of trajectories to the depth cap), Claude ALT (2), Claude KMA (1),
Claude COM (1). Which fit has a few changes between runs
(the 2026-12-03 run: Claude KMA, Gemini MIN, Gemini COM).

Those rare divergences had two sources, found by locating the divergent draws of single fits at
other seeds (2026-12-05): the inverted funnel of non-centred scenario effects (a ``τ_a`` at its
99.3rd-100th percentile; "Scenario effects") and the wall of ``p_exact``'s floor (every ``θ_s`` at
its 99th-100th; "Features that vanish"). The LLM fits now sample the scenario effects centred,
under a scale prior with no mass at 0, and ``p_exact``'s floor is 1e-4. Single LLM fits at seed
+1 with centred effects and the new floor: 8 of 10 met every standard with no divergence (GPT
MIN, ALT, KMA, COM; Claude MIN, KMA, COM; Gemini MIN); the other two, Gemini ALT and KMA, had
chains in the spike ``τ_a -> 0`` under the former half-normal prior and met every standard under
the log-normal one (Gemini COM was not run at this seed); Claude ALT at seeds +1 and +2 had none (1 and 2 before the new
floor). The 2026-12-05 full run: all 15 fits meet every standard, with no divergent transition in
any of them (every fit r_hat <= 1.004, bulk ESS >= 1,021, tail ESS >= 676, at most 0.1% of
trajectories at the depth cap).

Effects in units of the noise
-----------------------------
The ordinal likelihood sees the loadings ``β``, the scenario effects ``ζ`` and their scale ``τ``
only through ``η / σ_a``. Sampled in rating points (``effect_scale="rating"``, the default), they
have to move with ``σ_a`` to keep a fit. ``effect_scale="noise"`` samples ``β / σ_a`` and
``τ / σ_a`` instead (:func:`pragmodels.scaled_param`: the priors are rescaled, so ``β`` and ``τ``
keep theirs and the posterior is the same; a test checks the log density to 1e-4). Measured
2026-12-04 (single fits, study full settings, ``target_accept`` 0.95, the LLMs' former prior
``λ_c ~ N(0, 3)``), against the rating units of the 2026-12-03 run:

* GPT KMA at the study seed converged (no divergences, r_hat 1.004, bulk ESS 1,000, 0.1% of
  trajectories at the cap; in rating units 82 divergences and r_hat 1.19). At another seed
  (20262142) three chains sat on the cost's plateau ("Identification": ``λ_c`` 8.8, cost
  −6.2, ``θ_μ`` 1.15, log likelihood −845.1 against −845.2): r_hat 1.54. Units cannot remove a
  mode that the data do not tell apart.
* GPT ALT with 3,000 draws converged at the study seed (r_hat 1.006, bulk ESS 977). At another
  seed it had 7 divergences and r_hat 1.023, on a ridge where ``θ``, ``β`` and ``θ_μ`` are high
  and the cutpoints low.
* The near-deterministic fits get worse. Claude ALT: 22 divergences and 12.4% of trajectories
  at the cap (6 and 0.1% in rating units). Claude KMA: 5 and 5.5% (1 and 0.0%). Gemini MIN: 2 and
  22.2% (1 and 0.0%). Gemini COM: 0 and 29.5% (2 and 1.0%). Their ``σ_a`` sits at the floor, where
  its posterior is the prior on one side and a steep wall on the other, and dividing by it
  carries that wall into every effect. In Claude ALT's divergent draws the likeable noise is high
  (0.26 against a median of 0.17) with the interior cutpoints low.

The study therefore samples in rating units. The option stays for single fits (``"fits"``
entries of the study config) and for users' own data.

Raters who saw one cell
-----------------------
Every human rater saw one scenario x context x form cell and rated its six attributes once. The
rater scores ``ε_p`` are not parameters of the sampler: each rater's score is integrated out of
that rater's likelihood, ``p(y_p) = ∫ Π_a P(y_pa | η + ω_a ε) φ(ε) dε``, by the trapezoidal rule
on 81 nodes (:mod:`pragmodels.likelihoods.rater`, within 3e-6 nats per rater of a 6,001-node
reference on the human posterior), as R's ``ordinal::clmm`` does. The log-likelihood then has one
value per rater, so LOO leaves out a rater (the prediction for a new one).

Why: sampled, the 362 scores made the human fits the slowest and the least converged of the
study. Every rater saw one cell, so a cell's mean rater score and that cell's condition effects
reached the data only as a sum (handled before by an orthonormal cell basis and loadings sampled
among the raters, 2026-12-02); and a rater whose ratings contradict the one-factor pattern has a
bimodal score. Measured on the human RSA fit with the production prior (study settings): rater
28, who gave 1, 1, 7, 7, 7, 4 (competent, knowledgeable, well-prepared, helpful, likeable,
pedantic), had a score near −2.5 in a third of one chain's draws and near +1.3 elsewhere, the
12 coordinates of that rater's cell had r_hat up to 1.17, and ``sigma_participant`` 1.02.
Integrated out, the bimodality is part of an exact likelihood, the sum over a cell is a sum
inside each rater's integral with no parameter to trade off against, and the sampler sees 115
parameters instead of 477. ``ε`` has mean 0 in the population, so ``μ_a`` is the grand mean of a
new rater. Measured at the study's settings (single fits, 4 chains x 1,500 draws, 2026-12-03): the
human RSA fit r_hat 1.003, bulk and tail ESS >= 1,757, no divergences, 0.05% of trajectories at
the depth cap (16 minutes); the motives link 1.004, >= 1,477, none, 0.4% (32 minutes on one
core); the baseline 1.003, >= 1,583, none, 0.02% (25 minutes on one core). The cost is the
likelihood: 1.1 ms per gradient against 0.2 ms for the same model without raters
(:func:`pragmodels.likelihoods.rater.node_log_probs`).

Non-pragmatic baseline
----------------------
Same ordinal likelihood, scenario and rater effects, but ``η = μ_a + b_{a,1} x_u + b_{a,2} x_c +
b_{a,3} x_u x_c + ζ_{a,s} + ε_p`` with effect codes ``x_u = ±1/2`` (precise/approx) and
``x_c = ±1/2`` (high/low): form x context effects per attribute with no speaker model.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pragmodels import agents
from pragmodels.likelihoods.categorical import likert_ratings, ordinal_log_probs
from pragmodels.likelihoods.rater import likert_ratings_by_rater, quadrature
from pragmodels.params import (
    deterministic,
    group_effect,
    ordinal_cutpoints,
    param,
    scaled_param,
    sum_to_zero_effect,
)
from pragmodels.validation import check_one_of
from pragmodels.priors import Prior

KNOWLEDGE = ("exact", "vague")
MOTIVES = ("cooperative", "precise-minded", "casual")
TYPES = tuple(f"{k}/{m}" for k in KNOWLEDGE for m in MOTIVES)
FORMS = ("precise", "approx")
CONTEXTS = ("low", "high")
#: the link's features per ``rsa_model(link=...)``, the default first (module docstring, "Link to ratings")
FEATURE_SETS = {"qud_fit": ("p_exact", "p_qud_fit"), "motives": ("p_exact", "p_precise_minded", "p_casual")}
RATING_LINKS = tuple(FEATURE_SETS)
DELTA = float(np.log(5.0))
N_RATING = 7
#: settings of ``rsa_model(motive_prior=...)``, the default first
MOTIVE_PRIORS = ("uniform", "free")

#: default priors; every one can be overridden at fit time (``pm.fit(..., priors={...})`` or the
#: study config) without editing this module, and the fit records the priors actually sampled
PRIORS_RSA = {
    "alpha": Prior("LogNormal", loc=0.5, scale=0.75),
    # log-odds of the precise form for a speaker who knows the number and serves a coarse QUD,
    # -alpha * cost_precise (module docstring, "Why alpha and this log-odds"): 95% in ±6; the study
    # replaces it by PRIORS_SPEAKER in every fit ("What the ratings cannot identify")
    "precise_logodds_coarse": Prior("Normal", loc=0.0, scale=3.0),
    "theta_mu": Prior("Normal", loc=0.0, scale=1.5),
    # no mass at 0 (module docstring, "Scenario knowledge"): median 0.5, 95% in [0.11, 2.2]
    "theta_sigma": Prior("LogNormal", loc=-0.7, scale=0.75),
    "psi": Prior("Normal", loc=0.0, scale=1.0),
    "beta": Prior("Normal", loc=0.0, scale=2.5),
}
#: all scales in rating points (1..7)
PRIORS_COMMON = {
    "level": Prior("Normal", loc=4.0, scale=1.5),
    "cut_gap": Prior("Gamma", concentration=4.0, rate=1.0),
    "noise_excess": Prior("LogNormal", loc=-0.7, scale=1.35),  # per attribute: σ_a = NOISE_FLOOR + noise_excess_a
    # no mass at 0, like theta_sigma (module docstring, "Scenario effects"): median 0.5, 95% in [0.11, 2.2]
    "tau": Prior("LogNormal", loc=-0.7, scale=0.75),
    "sigma_participant": Prior("HalfNormal", scale=1.0),
    "lapse": Prior("Beta", concentration1=1.0, concentration0=19.0),
}
#: every study RSA fit's prior on the knower's log-odds of the precise form under a coarse QUD, from
#: production data (module docstring, "What the ratings cannot identify")
PRIORS_SPEAKER = {"precise_logodds_coarse": Prior("Normal", loc=-0.5, scale=1.0)}
PRIORS_BASELINE = {"b": Prior("Normal", loc=0.0, scale=2.0)}
CUT_LOW, CUT_HIGH = 1.5, N_RATING - 0.5
#: lower bound of the response noise σ, in rating points (module docstring, "Why this parametrisation")
NOISE_FLOOR = 0.15
#: a feature is divided by ``sqrt(SD² + floor²)`` (``link="qud_fit"``), probability units, one floor per
#: feature of :data:`FEATURE_SETS` ``["qud_fit"]``: a listener inference that varies by much less than
#: this over the conditions cannot be blown up into a full-size regressor (module docstring,
#: "Features that vanish": ``p_qud_fit``'s floor cuts the cost's plateau off; ``p_exact``'s is ten
#: times lower, so that its wall lies beyond where the LLMs' scenario knowledge reaches)
FEATURE_SD_FLOOR = {"p_exact": 1e-4, "p_qud_fit": 1e-3}


def _utility() -> np.ndarray:
    """U[context, form, type] (log-space informativeness; -inf: unavailable)."""
    u = np.zeros((len(CONTEXTS), len(FORMS), len(TYPES)))
    for ci, c in enumerate(CONTEXTS):
        for ti, t in enumerate(TYPES):
            k, m = t.split("/")
            fine = m == "precise-minded" or (m == "cooperative" and c == "high")
            u[ci, 1, ti] = -DELTA if fine else 0.0
            if k == "vague":
                u[ci, 0, ti] = -np.inf
    return u


UTILITY = _utility()


def speaker(alpha, cost_precise) -> jax.Array:
    """log S(u | t, c), shape ``[context, type, form]`` (eq. S)."""
    cost = jnp.stack([cost_precise, jnp.zeros_like(cost_precise)])
    return jax.vmap(lambda util: agents.softmax_speaker(jnp.asarray(util, jnp.float32), alpha, cost))(UTILITY)


def type_prior(theta, psi) -> jax.Array:
    """log P_s(t), shape ``[scenario, type]`` from ``theta [scenario]`` and ``psi [2]``."""
    log_k = jnp.stack([jax.nn.log_sigmoid(theta), jax.nn.log_sigmoid(-theta)], -1)  # [s, k]
    log_m = jax.nn.log_softmax(jnp.concatenate([jnp.zeros(1), psi]))  # [m]
    return (log_k[:, :, None] + log_m[None, None, :]).reshape(theta.shape[0], -1)


def _qud_fit() -> np.ndarray:
    """FIT[context, type]: 1 if the speaker's QUD ``g(m, c)`` is the context's own (fine iff
    ``c = high``), else 0."""
    fit = np.zeros((len(CONTEXTS), len(TYPES)))
    for ci, c in enumerate(CONTEXTS):
        for ti, t in enumerate(TYPES):
            m = t.split("/")[1]
            fine = m == "precise-minded" or (m == "cooperative" and c == "high")
            fit[ci, ti] = float(fine == (c == "high"))
    return fit


QUD_FIT = _qud_fit()


def type_posterior(alpha, cost_precise, theta, psi) -> jax.Array:
    """The listener's posterior over speaker types (eq. L), ``[scenario, context, form, type]``."""
    log_s = speaker(alpha, cost_precise)  # [c, t, u]
    log_prior = type_prior(theta, psi)  # [s, t]
    post = jax.vmap(lambda lp: jax.vmap(lambda ls: agents.bayes_listener(ls, lp))(log_s))(log_prior)  # [s,c,u,t]
    return jnp.exp(post)


def listener_features(alpha, cost_precise, theta, psi, link: str = "qud_fit") -> jax.Array:
    """Features of the listener's posterior over speaker types (eq. L), ``[scenario, context, form,
    feature]``, for the link ``link`` (:data:`FEATURE_SETS`)."""
    post = type_posterior(alpha, cost_precise, theta, psi)
    p = post.reshape(post.shape[:-1] + (len(KNOWLEDGE), len(MOTIVES)))
    p_exact = p[..., 0, :].sum(-1)
    if link == "qud_fit":
        return jnp.stack([p_exact, (post * jnp.asarray(QUD_FIT, post.dtype)[None, :, None, :]).sum(-1)], -1)
    return jnp.stack([p_exact, p[..., :, 1].sum(-1), p[..., :, 2].sum(-1)], -1)


def _cutpoints(n_attr):
    """Cutpoints ``[attribute, 6]`` on the rating scale: 1.5 and 6.5 fixed, the interior spaced
    by normalised Gamma gaps (a Dirichlet simplex), plus each attribute's level and the noise:
    ``noise`` (the typical one) and ``noise_attribute [attribute]`` (module docstring, "Noise per
    attribute")."""
    level = param("level", PRIORS_COMMON["level"], dims={"attribute": n_attr})
    cut = ordinal_cutpoints("cut_gap", PRIORS_COMMON["cut_gap"], n_categories=N_RATING, low=CUT_LOW, high=CUT_HIGH,
                            dims={"attribute": n_attr})  # [attribute, 6]
    excess = param("noise_excess", PRIORS_COMMON["noise_excess"], dims={"attribute": n_attr})
    deterministic("noise", NOISE_FLOOR + jnp.exp(jnp.log(excess).mean()))
    noise = deterministic("noise_attribute", NOISE_FLOOR + excess, dims={"attribute": n_attr})
    return deterministic("cutpoints", cut, dims={"attribute": n_attr, "cutpoint": N_RATING - 1}), level, noise


def _random_effects(n_attr, n_scenarios, n_participants, noise=None, zeta_param="non-centred"):
    """Scenario effects ``ζ [scenario, attribute]``, constrained to sum to zero over scenarios (so
    that ``μ_a`` alone carries each attribute's level: no level-effect ridge) and, with raters, the
    loadings ``ω [attribute]`` of their scores (``None`` without raters). The raters' scores
    themselves are integrated out of the likelihood (:func:`_observe`; module docstring, "Raters
    who saw one cell").

    ``zeta_param="non-centred"`` (the human fits): ``ζ = (z − z̄) τ_a`` with ``z ~ N(0, 1)``
    (``zeta_raw``); ``"centred"`` (the LLM fits): ``ζ = Q z`` with ``z ~ N(0, τ_a)`` on the
    ``n_scenarios − 1`` Helmert contrasts (``zeta_contrast``; :func:`pragmodels.params.sum_to_zero_effect`). The two
    priors on ``ζ`` are the same (module docstring, "Scenario effects", with the measurements).

    ``noise [attribute]`` given: ``τ_a``, and the centred contrasts (``zeta_contrast_noise_units``),
    are sampled in units of the attribute's noise (``effect_scale="noise"``, :func:`rsa_model`)."""
    if noise is None:
        tau = param("tau", PRIORS_COMMON["tau"], dims={"attribute": n_attr})
    else:
        tau = scaled_param("tau", PRIORS_COMMON["tau"], unit=noise, unit_name="noise_attribute",
                           site="tau_noise_units", dims={"attribute": n_attr})
    # centred: ζ = Q z, z ~ N(0, τ_a) on the n_scenarios - 1 contrasts, with ``noise`` (effect_scale="noise")
    # sampled in units of each attribute's noise; non-centred: ζ = (z - z̄) τ_a
    centred = check_zeta_param(zeta_param) == "centred"
    zeta = sum_to_zero_effect("zeta", tau, dim="scenario", size=n_scenarios, dims={"attribute": n_attr},
                              centred=centred, scale_name="tau", unit=noise, unit_name="noise_attribute",
                              site="zeta_contrast_noise_units" if centred and noise is not None else None)
    if not n_participants:
        return zeta, None
    return zeta, param("sigma_participant", PRIORS_COMMON["sigma_participant"], dims={"attribute": n_attr})


def _observe(table, cut, noise, condition, rating, lapse, sp, participant, n_participants, slots):
    """Ratings given the latent table ``table [scenario, context, form, attribute]`` (rating
    points), cutpoints ``cut [attribute, 6]`` and the noise scale.

    Without rater effects the ordinal probabilities are computed once per condition (144) and
    gathered per rating. With them (``sp``: the loadings ``ω_a``), each rater's one-factor score is
    integrated out (:func:`pragmodels.likelihoods.rater.likert_ratings_by_rater`): the observed
    site is then the ``[participant, attribute]`` matrix, with one log-likelihood per rater."""
    n_attr = cut.shape[0]
    scaled = table / noise  # noise [attribute]: the table's last axis
    if sp is None:
        flat = scaled.reshape(-1)
        cut_table = jnp.tile(cut / noise[:, None], (flat.shape[0] // n_attr, 1))  # attribute is the fastest axis
        return likert_ratings("rating", flat, cut_table, rating, lapse=lapse, dim="response", rows=condition)
    return likert_ratings_by_rater("rating", scaled.reshape(-1, n_attr), cut / noise[:, None], sp / noise, rating,
                                   rater=participant, cell=jnp.asarray(condition) // n_attr,
                                   item=jnp.asarray(condition) % n_attr, n_raters=n_participants, slots=slots, lapse=lapse,
                                   dim="participant", item_dim="attribute")


def condition_index(scenario, context, form, attribute, n_attributes: int = 6):
    """Flat index into ``[scenario, context, form, attribute]`` tables."""
    return ((np.asarray(scenario) * len(CONTEXTS) + np.asarray(context)) * len(FORMS) + np.asarray(form)) \
        * n_attributes + np.asarray(attribute)


def link_features(alpha, cost, theta, psi, link: str = "qud_fit") -> jax.Array:
    """The features as they enter the ratings, ``[scenario, context, form, feature]``: centred on
    their mean over conditions so that the level ``μ_a``, not β, carries each attribute's overall
    level (this removes the strong β-level correlation that slows NUTS) and, for ``qud_fit``,
    divided by their SD (β in rating points per SD of the feature)."""
    feats = listener_features(alpha, cost, theta, psi, link)  # [s, c, u, f]
    feats = feats - feats.mean(axis=(0, 1, 2), keepdims=True)
    if link == "qud_fit":
        floor = jnp.asarray([FEATURE_SD_FLOOR[f] for f in FEATURE_SETS["qud_fit"]], feats.dtype)
        feats = feats / jnp.sqrt((feats ** 2).mean(axis=(0, 1, 2), keepdims=True) + floor ** 2)
    return feats


def rsa_linear_predictor(alpha, cost, theta, psi, beta, link: str = "qud_fit") -> jax.Array:
    """``β_a · f̃`` per ``[scenario, context, form, attribute]`` (:func:`link_features`)."""
    return jnp.einsum("scuf,fa->scua", link_features(alpha, cost, theta, psi, link), beta)


def check_motive_prior(motive_prior) -> str:
    """``motive_prior`` if it is one of :data:`MOTIVE_PRIORS`, else a ``ValueError`` naming it."""
    if motive_prior not in MOTIVE_PRIORS:
        raise ValueError(f"motive_prior must be 'free' or 'uniform'; got {motive_prior!r}.")
    return motive_prior


def check_link(link) -> str:
    """``link`` if it is one of :data:`RATING_LINKS`, else a ``ValueError`` naming it."""
    return check_one_of("link", link, RATING_LINKS)


#: settings of ``rsa_model(theta_param=...)`` (module docstring, "Scenario knowledge")
THETA_PARAMS = ("centred", "non-centred")


def check_theta_param(theta_param) -> str:
    """``theta_param`` if it is one of :data:`THETA_PARAMS`, else a ``ValueError`` naming it."""
    return check_one_of("theta_param", theta_param, THETA_PARAMS)


#: settings of ``rsa_model(zeta_param=...)`` and ``baseline_model(zeta_param=...)`` (module docstring,
#: "Scenario effects")
ZETA_PARAMS = ("non-centred", "centred")


def check_zeta_param(zeta_param) -> str:
    """``zeta_param`` if it is one of :data:`ZETA_PARAMS`, else a ``ValueError`` naming it."""
    return check_one_of("zeta_param", zeta_param, ZETA_PARAMS)


#: settings of ``rsa_model(effect_scale=...)`` and ``baseline_model(effect_scale=...)`` (module
#: docstring, "Effects in units of the noise")
EFFECT_SCALES = ("rating", "noise")


def check_effect_scale(effect_scale) -> str:
    """``effect_scale`` if it is one of :data:`EFFECT_SCALES`, else a ``ValueError`` naming it."""
    return check_one_of("effect_scale", effect_scale, EFFECT_SCALES)


def _effects(name, prior, dims, n_attributes, n_scenarios, n_participants, effect_scale, zeta_param="non-centred"):
    """The loadings (``name``: ``beta`` or ``b``), the cutpoints and the random effects, with the
    loadings and ``τ`` sampled in rating points (``effect_scale="rating"``; this order of sites
    is the one every earlier fit used) or in units of each attribute's noise (``"noise"``)."""
    if check_effect_scale(effect_scale) == "rating":
        loadings = param(name, prior, dims=dims)
        cut, level, noise = _cutpoints(n_attributes)
        zeta, sp = _random_effects(n_attributes, n_scenarios, n_participants, zeta_param=zeta_param)
    else:
        cut, level, noise = _cutpoints(n_attributes)
        loadings = scaled_param(name, prior, unit=noise, unit_name="noise_attribute", site=f"{name}_noise_units",
                                dims=dims)
        zeta, sp = _random_effects(n_attributes, n_scenarios, n_participants, noise, zeta_param)
    return loadings, cut, level, noise, zeta, sp


def rsa_model(condition, rating=None, participant=None, *, n_scenarios: int = 6,
              n_attributes: int = 6, n_participants: int = 0, motive_prior: str = "uniform",
              link: str = "qud_fit", theta_param: str = "centred", effect_scale: str = "rating",
              zeta_param: str = "non-centred", rater_slots=None):
    """The RSA social-meaning model (module docstring). Data are per rating: ``condition
    [response]`` (:func:`condition_index` of scenario, context (0 low, 1 high), form (0 precise,
    1 approx) and attribute), ``rating [response]`` in 1..7, optional ``participant [response]``.

    ``motive_prior``: ``"uniform"`` (default) fixes ``P(m)`` uniform (``ψ = 0``); the listener
    still infers the motive from form and context. ``"free"`` fits ``ψ`` as well; it is not
    identified against the loadings on LLM data (module docstring, "Identification").

    ``theta_param``: how the scenario knowledge ``θ_s`` is sampled, ``"centred"`` (default; for
    data that pin each scenario's ``θ_s``, as the LLM ratings do) or ``"non-centred"``
    (``θ_μ + θ_σ z_s``; for weak data per scenario). The posterior is the same; only the
    sampler's geometry differs (module docstring, "Scenario knowledge").

    ``effect_scale``: the loadings ``β`` and the scale ``τ`` of the scenario effects are sampled
    in rating points (``"rating"``, default) or in units of each attribute's noise ``σ_a``
    (``"noise"``: sites ``beta_noise_units`` and ``tau_noise_units``, priors rescaled so that ``β``
    and ``τ`` keep theirs). Same posterior again (module docstring, "Effects in units of the
    noise").

    ``zeta_param``: the scenario effects ``ζ`` sampled ``"non-centred"`` (default; the human fits)
    or ``"centred"`` on their sum-to-zero contrasts (the LLM fits, whose ratings pin each effect).
    Same posterior (module docstring, "Scenario effects"); :func:`baseline_model` takes it too."""
    check_motive_prior(motive_prior)
    features = FEATURE_SETS[check_link(link)]
    centred = check_theta_param(theta_param) == "centred"
    alpha = param("alpha", PRIORS_RSA["alpha"])
    logodds = param("precise_logodds_coarse", PRIORS_RSA["precise_logodds_coarse"])
    cost = deterministic("cost_precise", -logodds / alpha)
    theta = group_effect("theta", dim="scenario", size=n_scenarios, loc=PRIORS_RSA["theta_mu"],
                         scale=PRIORS_RSA["theta_sigma"], centred=centred)
    if motive_prior == "free":
        psi = param("psi", PRIORS_RSA["psi"], dims={"free_motive": len(MOTIVES) - 1})
    else:
        psi = jnp.zeros(2)
    dims = {"feature": len(features), "attribute": n_attributes}
    beta, cut, level, noise, zeta, sp = _effects("beta", PRIORS_RSA["beta"], dims, n_attributes, n_scenarios,
                                                 n_participants, effect_scale, zeta_param)
    feats = link_features(alpha, cost, theta, psi, link)
    lapse = param("lapse", PRIORS_COMMON["lapse"])
    table = jnp.einsum("scuf,fa->scua", feats, beta) + level + zeta[:, None, None, :]
    return _observe(table, cut, noise, condition, rating, lapse, sp, participant, n_participants, rater_slots)


rsa_model.name = "social_meaning_rsa"


def baseline_linear_predictor(b, n_scenarios: int = 6) -> jax.Array:
    """``b_a · (form, context, form x context)`` per ``[scenario, context, form, attribute]``.

    Effect coding (±1/2), so ``b[0]`` is the precise−approx main effect, ``b[1]`` the high−low
    context effect and ``b[2]`` the interaction (Δ^HP − Δ^LP), all on the latent rating scale,
    and ``μ_a`` carries each attribute's level."""
    precise = jnp.array([0.5, -0.5])[None, :]
    high = jnp.array([-0.5, 0.5])[:, None]
    design = jnp.stack(jnp.broadcast_arrays(precise, high, precise * high), -1)  # [c, u, e]
    return jnp.broadcast_to(jnp.einsum("cue,ea->cua", design, b), (n_scenarios,) + design.shape[:2] + b.shape[1:])


def baseline_model(condition, rating=None, participant=None, *, n_scenarios: int = 6,
                   n_attributes: int = 6, n_participants: int = 0, effect_scale: str = "rating",
                   zeta_param: str = "non-centred", rater_slots=None):
    """Non-pragmatic baseline: form, context and form x context effects per attribute, with the
    same ordinal likelihood, scenario effects and (``n_participants > 0``) rater scores integrated
    out as :func:`rsa_model` (and its ``effect_scale``)."""
    dims = {"effect": 3, "attribute": n_attributes}
    b, cut, level, noise, zeta, sp = _effects("b", PRIORS_BASELINE["b"], dims, n_attributes, n_scenarios,
                                              n_participants, effect_scale, zeta_param)
    lapse = param("lapse", PRIORS_COMMON["lapse"])
    table = baseline_linear_predictor(b, n_scenarios) + level + zeta[:, None, None, :]
    return _observe(table, cut, noise, condition, rating, lapse, sp, participant, n_participants, rater_slots)


baseline_model.name = "social_meaning_baseline"


# ---------------------------------------------------------------- model-implied quantities
# ∫ f(x) N(x; 0, 1) dx ≈ Σ w f(x): the rater likelihood's trapezoidal rule (9-point Gauss-Hermite, used
# before, missed implied means by up to 0.045 rating points on the human posterior: pragmodels.likelihoods.rater)
_GH_X, _GH_LOGW = quadrature()
_GH_W = np.exp(_GH_LOGW)


def _expected_rating(latent, cut, noise, lapse, sigma_p):
    """E[rating] for latent ``[...]`` (rating points) with cutpoints ``[..., 6]`` and noise scale
    ``noise`` (the same shape as ``latent``), integrating a N(0, σ_p) rater effect."""
    shifts = sigma_p * _GH_X  # [q]
    noise = noise[..., None, None]
    lp = ordinal_log_probs((latent[..., None] + shifts) / noise[..., 0], cut[..., None, :] / noise)  # [..., q, 7]
    p = (1 - lapse) * jnp.exp(lp) + lapse / N_RATING
    return ((p * jnp.arange(1, N_RATING + 1)).sum(-1) * _GH_W).sum(-1)


#: the posterior variables one draw of any of the models needs for its implied means or replications
DRAW_KEYS = ("alpha", "cost_precise", "theta", "psi", "beta", "b", "level", "cutpoints", "noise_attribute", "zeta", "lapse",
             "sigma_participant")
#: ``implied_cell_means`` kinds: the RSA model with each link, and the baseline
LINK_OF_KIND = {"rsa": "qud_fit", "rsa_motives": "motives"}
IMPLIED_KINDS = (*LINK_OF_KIND, "baseline")


def implied_cell_means(kind: str, draw: dict, n_scenarios: int = 6) -> jax.Array:
    """Model-implied mean rating per ``[attribute, scenario, context, form]`` for one posterior draw
    of the model ``kind`` (:data:`IMPLIED_KINDS`: ``"rsa"`` with the default link, ``"rsa_motives"``
    with today's link, ``"baseline"``).

    ``draw`` maps parameter names to arrays for a single draw (as in the DataTree posterior).
    Rater effects are integrated out (the rater likelihood's 81-node trapezoidal rule) when the fit has them.
    """
    cut = draw["cutpoints"]  # [a, 6]
    if kind in IMPLIED_KINDS[:-1]:
        psi = draw.get("psi", jnp.zeros(2))  # absent when the motive prior was fixed uniform
        table = rsa_linear_predictor(draw["alpha"], draw["cost_precise"], draw["theta"], psi, draw["beta"],
                                     LINK_OF_KIND[kind])
    else:
        table = baseline_linear_predictor(draw["b"], n_scenarios)
    latent = jnp.moveaxis(table + draw["level"] + draw["zeta"][:, None, None, :], -1, 0)  # [a, s, c, u]
    sigma_p = draw.get("sigma_participant", jnp.zeros(latent.shape[0]))[:, None, None, None, None]  # [a, 1, 1, 1, 1]
    cut_b = jnp.broadcast_to(cut[:, None, None, None, :], latent.shape + (cut.shape[-1],))
    noise = jnp.broadcast_to(draw["noise_attribute"][:, None, None, None], latent.shape)
    return _expected_rating(latent, cut_b, noise, draw["lapse"], sigma_p)


def latent_table(kind: str, draw: dict, n_scenarios: int = 6) -> jax.Array:
    """The latent rating (rating points) per ``[scenario, context, form, attribute]`` for one
    posterior draw of the model ``kind`` (:data:`IMPLIED_KINDS`), without rater effects."""
    if kind in LINK_OF_KIND:
        psi = draw.get("psi", jnp.zeros(2))
        table = rsa_linear_predictor(draw["alpha"], draw["cost_precise"], draw["theta"], psi, draw["beta"],
                                     LINK_OF_KIND[kind])
    else:
        table = baseline_linear_predictor(draw["b"], n_scenarios)
    return table + draw["level"] + draw["zeta"][:, None, None, :]


def replicate_ratings(kind: str, draw: dict, key: jax.Array, condition, participant, n_participants: int):
    """One replicated data set with *new* raters: the same items and conditions, each rater's
    effect drawn afresh from ``N(0, σ_p)`` (per attribute loadings ``σ_p``), ratings from the
    ordinal likelihood with its lapse. ``condition``, ``participant [response]`` as the fit's data.

    New raters, not the fitted ones, because every participant rated one condition only (between
    subjects): fitted rater effects can carry part of a condition's effect, and a replication with
    them reproduces the data even where the model's condition means do not."""
    n_attr = draw["cutpoints"].shape[0]
    k_eps, k_lapse, k_y, k_u = jax.random.split(key, 4)
    table = latent_table(kind, draw).reshape(-1)
    sp = draw.get("sigma_participant", jnp.zeros(n_attr))
    eps = jax.random.normal(k_eps, (n_participants,))[:, None] * sp
    attr = condition % n_attr
    latent = table[condition] + eps[participant, attr]
    noise = draw["noise_attribute"][attr]
    lp = ordinal_log_probs(latent / noise, draw["cutpoints"][attr] / noise[:, None])  # [response, 7]
    y = jax.random.categorical(k_y, lp) + 1
    lapse = jax.random.uniform(k_lapse, y.shape) < draw["lapse"]
    return jnp.where(lapse, jax.random.randint(k_u, y.shape, 1, N_RATING + 1), y)
