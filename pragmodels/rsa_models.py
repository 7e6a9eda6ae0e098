"""Ready-made NumPyro models for finite RSA games (listener or speaker data, flat or by item).

Layering: imports :mod:`pragmodels.agents`, :mod:`pragmodels.likelihoods`,
:mod:`pragmodels.priors` and ``numpyro.plate`` / ``numpyro.deterministic``.

Each factory returns a plain model function ``model(**data)`` with attributes ``name`` and
``priors`` (read by :func:`pragmodels.fit` for provenance). Costs enter through a design
matrix ``cost_design [utterance, cost_param]``: ``cost = cost_design @ cost_weight``. Only cost
*differences* are identified by choice data, so leave out a constant column (e.g. code the
cheapest utterance as 0).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro

from pragmodels import agents
from pragmodels.likelihoods import listener_choices, sample_prior, speaker_choices
from pragmodels.priors import Prior

__all__ = ["DEFAULT_PRIORS", "listener_model", "speaker_model", "hierarchical_listener_model"]

DEFAULT_PRIORS: dict[str, Prior] = {
    "alpha": Prior("LogNormal", loc=0.5, scale=1.0),
    "cost_weight": Prior("HalfNormal", scale=2.0),
    "lapse": Prior("Beta", concentration1=1.0, concentration0=19.0),
    "alpha_mu": Prior("Normal", loc=0.5, scale=1.0),
    "alpha_sigma": Prior("HalfNormal", scale=0.5),
}


def _merge(priors, names):
    merged = {k: DEFAULT_PRIORS[k] for k in names}
    for k, v in (priors or {}).items():
        if k not in merged:
            raise ValueError(f"no parameter {k!r} in this model; its parameters are {sorted(merged)}.")
        if not isinstance(v, Prior):
            raise TypeError(f"priors[{k!r}] must be a pragmodels.Prior; got {v!r}.")
        merged[k] = v
    return merged


def _common(priors, cost_design, fit_lapse):
    cost = None
    if cost_design is not None:
        n_cost = cost_design.shape[1]
        w = sample_prior("cost_weight", priors["cost_weight"], (n_cost,))
        cost = numpyro.deterministic("cost", jnp.asarray(cost_design) @ w)
    lapse = sample_prior("lapse", priors["lapse"]) if fit_lapse else 0.0
    return cost, lapse


def _agent(agent, pri, log_semantics, cost_design, log_prior, depth, prior_at, fit_lapse):
    """Sample alpha, costs and lapse; return the agent's table and the lapse."""
    alpha = sample_prior("alpha", pri["alpha"])
    cost, lapse = _common(pri, cost_design, fit_lapse)
    return agent(log_semantics, alpha, cost, log_prior, depth, prior_at=prior_at), lapse


def _label(model, kind: str, priors: dict, **options):
    model.name = f"{kind}(" + ", ".join(f"{k}={v}" for k, v in options.items()) + ")"
    model.priors = priors
    return model


def _param_names(cost: bool, lapse: bool, base=("alpha",)):
    return list(base) + (["cost_weight"] if cost else []) + (["lapse"] if lapse else [])


def listener_model(*, depth: int = 1, fit_cost: bool = True, fit_lapse: bool = True,
                   prior_at: str = "all", priors: dict | None = None):
    """Listener choices over states given an utterance: alpha, costs, lapse.

    The model's data: ``log_semantics [utterance, state]``, ``utterance [trial]`` (int),
    ``choice [trial]`` (state index), optional ``cost_design [utterance, cost_param]`` (needed
    when ``fit_cost``) and ``log_prior [state]``.
    """
    pri = _merge(priors, _param_names(fit_cost, fit_lapse))

    def model(log_semantics, utterance, choice=None, cost_design=None, log_prior=None):
        log_l, lapse = _agent(agents.pragmatic_listener, pri, log_semantics, cost_design if fit_cost else None,
                              log_prior, depth, prior_at, fit_lapse)
        return listener_choices("choice", log_l, choice, lapse=lapse, rows=utterance)

    return _label(model, "rsa_listener", pri, depth=depth, prior_at=prior_at, cost=fit_cost, lapse=fit_lapse)


def speaker_model(*, depth: int = 1, fit_cost: bool = True, fit_lapse: bool = True,
                  prior_at: str = "all", priors: dict | None = None):
    """Speaker choices over utterances given a state: alpha, costs, lapse.

    The model's data: ``log_semantics [utterance, state]``, ``state [trial]`` (int),
    ``choice [trial]`` (utterance index), optional ``cost_design`` and ``log_prior``.
    """
    pri = _merge(priors, _param_names(fit_cost, fit_lapse))

    def model(log_semantics, state, choice=None, cost_design=None, log_prior=None):
        log_s, lapse = _agent(agents.pragmatic_speaker, pri, log_semantics, cost_design if fit_cost else None,
                              log_prior, depth, prior_at, fit_lapse)
        return speaker_choices("choice", log_s, choice, lapse=lapse, rows=state)

    return _label(model, "rsa_speaker", pri, depth=depth, prior_at=prior_at, cost=fit_cost, lapse=fit_lapse)


def hierarchical_listener_model(*, depth: int = 1, fit_lapse: bool = True, prior_at: str = "all",
                                priors: dict | None = None):
    """Listener choices with a rationality per item (non-centred log-normal hierarchy).

    ``log alpha[item] = alpha_mu + alpha_sigma * z[item]``, ``z ~ Normal(0, 1)``.
    Data: ``log_semantics [utterance, state]`` shared or ``[item, utterance, state]`` per item,
    ``item [trial]``, ``utterance [trial]``, ``choice [trial]``, optional ``log_prior [state]``.
    The plate ``item`` names the dim of ``alpha`` and ``z``.
    """
    pri = _merge(priors, _param_names(False, fit_lapse, ("alpha_mu", "alpha_sigma")))

    def model(log_semantics, item, utterance, choice=None, log_prior=None, n_items=None):
        if n_items is None and jnp.ndim(log_semantics) != 3:
            raise ValueError("hierarchical_listener_model: pass n_items (an int) when log_semantics "
                             "is shared across items (shape [utterance, state]).")
        n = n_items if n_items is not None else log_semantics.shape[0]
        mu = sample_prior("alpha_mu", pri["alpha_mu"])
        sigma = sample_prior("alpha_sigma", pri["alpha_sigma"])
        with numpyro.plate("item", n):
            z = sample_prior("z", Prior("Normal", loc=0.0, scale=1.0))
            alpha = numpyro.deterministic("alpha", jnp.exp(mu + sigma * z))
        lapse = sample_prior("lapse", pri["lapse"]) if fit_lapse else 0.0
        sem_axis = 0 if jnp.ndim(log_semantics) == 3 else None
        listen = jax.vmap(
            lambda sem, a: agents.pragmatic_listener(sem, a, None, log_prior, depth, prior_at=prior_at),
            in_axes=(sem_axis, 0),
        )
        log_l = listen(log_semantics, alpha)  # [item, utterance, state]
        n_utt = log_l.shape[1]
        table = log_l.reshape(-1, log_l.shape[-1])  # [item * utterance, state]
        return listener_choices("choice", table, choice, lapse=lapse, rows=item * n_utt + utterance)

    return _label(model, "rsa_listener_by_item", pri, depth=depth, prior_at=prior_at, lapse=fit_lapse)
