r"""RSA model of the social meaning of numerical (im)precision (Mühlenbernd 2026, Section 2;
Solt, Mühlenbernd & Burbelko 2025, Exp. 1), and a non-pragmatic baseline.

A listener infers a speaker's knowledge (exact / vague) and motive (cooperative, precise-minded,
casual) from the form of a number (precise / approximate) in a context (low / high precision
demand); its inferences, ``p_exact`` and ``p_qud_fit``, are linked to 1-7 ratings of six
attributes by an ordered logistic with scenario effects, rater effects (integrated out) and a lapse.

Exposes the agents (:func:`speaker`, :func:`type_posterior`, :func:`listener_features`), the
NumPyro models :func:`rsa_model` and :func:`baseline_model` with their priors (``PRIORS_RSA``,
``PRIORS_COMMON``, ``PRIORS_SPEAKER``, ``PRIORS_BASELINE``) and settings checks, and the
model-implied quantities (:func:`implied_cell_means`, :func:`latent_table`,
:func:`replicate_ratings`). The equations, every parametrisation choice and the measurements
behind it: ``docs/studies/social_meaning.md``, "The RSA model" (sections cited by name below).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

#: the settings of ``rsa_model(motive_prior=...)`` (the default first) and of ``effect_scale=...``: in the
#: config's schema module, which validates a config before this one is imported
from models.social_meaning.config import EFFECT_SCALES, MOTIVE_PRIORS
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
from pragmodels.priors import Prior
from pragmodels.validation import check_one_of

KNOWLEDGE = ("exact", "vague")
MOTIVES = ("cooperative", "precise-minded", "casual")
TYPES = tuple(f"{k}/{m}" for k in KNOWLEDGE for m in MOTIVES)
FORMS = ("precise", "approx")
CONTEXTS = ("low", "high")
#: the link's features per ``rsa_model(link=...)``, the default first (docs/studies/social_meaning.md,
#: "Link to ratings")
FEATURE_SETS = {"qud_fit": ("p_exact", "p_qud_fit"), "motives": ("p_exact", "p_precise_minded", "p_casual")}
RATING_LINKS = tuple(FEATURE_SETS)
DELTA = float(np.log(5.0))
N_RATING = 7

#: default priors; every one can be overridden at fit time (``pm.fit(..., priors={...})`` or the
#: study config) without editing this module, and the fit records the priors actually sampled
PRIORS_RSA = {
    "alpha": Prior("LogNormal", loc=0.5, scale=0.75),
    # log-odds of the precise form for a speaker who knows the number and serves a coarse QUD,
    # -alpha * cost_precise (docs/studies/social_meaning.md, "Why alpha and this log-odds"): 95% in ±6; the study
    # replaces it by PRIORS_SPEAKER in every fit ("What the ratings cannot identify")
    "precise_logodds_coarse": Prior("Normal", loc=0.0, scale=3.0),
    "theta_mu": Prior("Normal", loc=0.0, scale=1.5),
    # no mass at 0 (docs/studies/social_meaning.md, "Scenario knowledge"): median 0.5, 95% in [0.11, 2.2]
    "theta_sigma": Prior("LogNormal", loc=-0.7, scale=0.75),
    "psi": Prior("Normal", loc=0.0, scale=1.0),
    "beta": Prior("Normal", loc=0.0, scale=2.5),
}
#: all scales in rating points (1..7)
PRIORS_COMMON = {
    "level": Prior("Normal", loc=4.0, scale=1.5),
    "cut_gap": Prior("Gamma", concentration=4.0, rate=1.0),
    "noise_excess": Prior("LogNormal", loc=-0.7, scale=1.35),  # per attribute: σ_a = NOISE_FLOOR + noise_excess_a
    # no mass at 0, like theta_sigma (docs/studies/social_meaning.md, "Scenario effects"): median 0.5, 95% in
    # [0.11, 2.2]
    "tau": Prior("LogNormal", loc=-0.7, scale=0.75),
    "sigma_participant": Prior("HalfNormal", scale=1.0),
    "lapse": Prior("Beta", concentration1=1.0, concentration0=19.0),
}
#: every study RSA fit's prior on the knower's log-odds of the precise form under a coarse QUD, from
#: production data (docs/studies/social_meaning.md, "What the ratings cannot identify")
PRIORS_SPEAKER = {"precise_logodds_coarse": Prior("Normal", loc=-0.5, scale=1.0)}
PRIORS_BASELINE = {"b": Prior("Normal", loc=0.0, scale=2.0)}
CUT_LOW, CUT_HIGH = 1.5, N_RATING - 0.5
#: lower bound of the response noise σ, in rating points (docs/studies/social_meaning.md, "Why this parametrisation")
NOISE_FLOOR = 0.15
#: a feature is divided by ``sqrt(SD² + floor²)`` (``link="qud_fit"``), probability units, one floor per
#: feature of :data:`FEATURE_SETS` ``["qud_fit"]``: a listener inference that varies by much less than
#: this over the conditions cannot be blown up into a full-size regressor (docs/studies/social_meaning.md,
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
    ``noise`` (the typical one) and ``noise_attribute [attribute]`` (docs/studies/social_meaning.md, "Noise per
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
    themselves are integrated out of the likelihood (:func:`_observe`; docs/studies/social_meaning.md,
    "Raters who saw one cell").

    ``zeta_param="non-centred"`` (the human fits): ``ζ = (z − z̄) τ_a`` with ``z ~ N(0, 1)``
    (``zeta_raw``); ``"centred"`` (the LLM fits): ``ζ = Q z`` with ``z ~ N(0, τ_a)`` on the
    ``n_scenarios − 1`` Helmert contrasts (``zeta_contrast``; :func:`pragmodels.params.sum_to_zero_effect`). The two
    priors on ``ζ`` are the same (docs/studies/social_meaning.md, "Scenario effects", with the measurements).

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


#: trapezoidal nodes per rater of the rater likelihood (:func:`pragmodels.likelihoods.rater.quadrature`): its
#: default, 81; the study config's ``rater_nodes`` may lower it (docs/studies/social_meaning.md, "Raters who saw one cell")
RATER_NODES = 81


def _observe(table, cut, noise, condition, rating, lapse, sp, participant, n_participants, slots, rater_nodes=RATER_NODES):
    """Ratings given the latent table ``table [scenario, context, form, attribute]`` (rating
    points), cutpoints ``cut [attribute, 6]`` and the noise scale.

    Without rater effects the ordinal probabilities are computed once per condition (144) and
    gathered per rating. With them (``sp``: the loadings ``ω_a``), each rater's one-factor score is
    integrated out (:func:`pragmodels.likelihoods.rater.likert_ratings_by_rater`): the observed
    site is then the ``[participant, attribute]`` matrix, with one log-likelihood per rater, integrated
    on ``rater_nodes`` trapezoidal nodes (:data:`RATER_NODES`)."""
    n_attr = cut.shape[0]
    scaled = table / noise  # noise [attribute]: the table's last axis
    if sp is None:
        flat = scaled.reshape(-1)
        cut_table = jnp.tile(cut / noise[:, None], (flat.shape[0] // n_attr, 1))  # attribute is the fastest axis
        return likert_ratings("rating", flat, cut_table, rating, lapse=lapse, dim="response", rows=condition)
    return likert_ratings_by_rater("rating", scaled.reshape(-1, n_attr), cut / noise[:, None], sp / noise, rating,
                                   rater=participant, cell=jnp.asarray(condition) // n_attr,
                                   item=jnp.asarray(condition) % n_attr, n_raters=n_participants, slots=slots, lapse=lapse,
                                   dim="participant", item_dim="attribute", n_nodes=check_rater_nodes(rater_nodes))


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


#: settings of ``rsa_model(theta_param=...)`` (docs/studies/social_meaning.md, "Scenario knowledge")
THETA_PARAMS = ("centred", "non-centred")


def check_theta_param(theta_param) -> str:
    """``theta_param`` if it is one of :data:`THETA_PARAMS`, else a ``ValueError`` naming it."""
    return check_one_of("theta_param", theta_param, THETA_PARAMS)


#: settings of ``rsa_model(zeta_param=...)`` and ``baseline_model(zeta_param=...)`` (docs/studies/social_meaning.md,
#: "Scenario effects")
ZETA_PARAMS = ("non-centred", "centred")


def check_zeta_param(zeta_param) -> str:
    """``zeta_param`` if it is one of :data:`ZETA_PARAMS`, else a ``ValueError`` naming it."""
    return check_one_of("zeta_param", zeta_param, ZETA_PARAMS)


def check_effect_scale(effect_scale) -> str:
    """``effect_scale`` if it is one of :data:`EFFECT_SCALES`, else a ``ValueError`` naming it."""
    return check_one_of("effect_scale", effect_scale, EFFECT_SCALES)


def check_rater_nodes(rater_nodes) -> int:
    """``rater_nodes`` if it is an integer from 21 to 401, else a ``ValueError`` naming it (at draws of
    the human posterior, against 321 nodes, a rater's log-likelihood is missed by up to 1e-5 nats at 81
    nodes, 6e-4 at 61, 0.026 at 41, 0.19 at 31 and 0.8 at 21)."""
    if isinstance(rater_nodes, bool) or not isinstance(rater_nodes, (int, np.integer)) or not 21 <= rater_nodes <= 401:
        raise ValueError(f"rater_nodes must be an integer from 21 to 401; got {rater_nodes!r}.")
    return int(rater_nodes)


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
              zeta_param: str = "non-centred", rater_slots=None, rater_nodes: int = RATER_NODES):
    """The RSA social-meaning model (docs/studies/social_meaning.md). Data are per rating: ``condition
    [response]`` (:func:`condition_index` of scenario, context (0 low, 1 high), form (0 precise,
    1 approx) and attribute), ``rating [response]`` in 1..7, optional ``participant [response]``.

    ``motive_prior``: ``"uniform"`` (default) fixes ``P(m)`` uniform (``ψ = 0``); the listener
    still infers the motive from form and context. ``"free"`` fits ``ψ`` as well; it is not
    identified against the loadings on LLM data (docs/studies/social_meaning.md, "Identification").

    ``theta_param``: how the scenario knowledge ``θ_s`` is sampled, ``"centred"`` (default; for
    data that pin each scenario's ``θ_s``, as the LLM ratings do) or ``"non-centred"``
    (``θ_μ + θ_σ z_s``; for weak data per scenario). The posterior is the same; only the
    sampler's geometry differs (docs/studies/social_meaning.md, "Scenario knowledge").

    ``effect_scale``: the loadings ``β`` and the scale ``τ`` of the scenario effects are sampled
    in rating points (``"rating"``, default) or in units of each attribute's noise ``σ_a``
    (``"noise"``: sites ``beta_noise_units`` and ``tau_noise_units``, priors rescaled so that ``β``
    and ``τ`` keep theirs). Same posterior again (docs/studies/social_meaning.md, "Effects in units of the
    noise").

    ``zeta_param``: the scenario effects ``ζ`` sampled ``"non-centred"`` (default; the human fits)
    or ``"centred"`` on their sum-to-zero contrasts (the LLM fits, whose ratings pin each effect).
    Same posterior (docs/studies/social_meaning.md, "Scenario effects"); :func:`baseline_model` takes it too.

    ``rater_nodes``: the trapezoidal nodes that integrate each rater's score out (with rater effects;
    :data:`RATER_NODES`, and docs/studies/social_meaning.md, "Raters who saw one cell", for the accuracy of fewer)."""
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
    return _observe(table, cut, noise, condition, rating, lapse, sp, participant, n_participants, rater_slots,
                    rater_nodes)


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
                   zeta_param: str = "non-centred", rater_slots=None, rater_nodes: int = RATER_NODES):
    """Non-pragmatic baseline: form, context and form x context effects per attribute, with the
    same ordinal likelihood, scenario effects and (``n_participants > 0``) rater scores integrated
    out as :func:`rsa_model` (and its ``effect_scale`` and ``rater_nodes``)."""
    dims = {"effect": 3, "attribute": n_attributes}
    b, cut, level, noise, zeta, sp = _effects("b", PRIORS_BASELINE["b"], dims, n_attributes, n_scenarios,
                                              n_participants, effect_scale, zeta_param)
    lapse = param("lapse", PRIORS_COMMON["lapse"])
    table = baseline_linear_predictor(b, n_scenarios) + level + zeta[:, None, None, :]
    return _observe(table, cut, noise, condition, rating, lapse, sp, participant, n_participants, rater_slots,
                    rater_nodes)


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
