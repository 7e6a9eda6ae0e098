"""pragmodels.slider: the discretised-Gaussian response kernel against a NumPy loop, truncation at
the ends, finite gradients (width, lapse at 0 and 1), the observation site, and input errors.

Tolerance: float32 against float64 NumPy, 1e-6 absolute on probabilities."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers

from pragmodels import slider

GRID = np.arange(0, 101, 5, dtype=float)


def naive_kernel(values, width, low=0, high=100):
    g = np.arange(low, high + 1)
    k = np.array([[np.exp(-0.5 * ((x - v) / width) ** 2) for x in g] for v in values])
    return k / k.sum(1, keepdims=True)


@pytest.mark.parametrize("width", [0.3, 2.0, 6.0, 40.0])
def test_kernel_matches_a_numpy_loop_and_normalises(width):
    k = np.exp(np.asarray(slider.slider_kernel(GRID, width), float))
    assert k.shape == (21, 101)
    np.testing.assert_allclose(k, naive_kernel(GRID, width), atol=1e-6)
    np.testing.assert_allclose(k.sum(1), 1.0, atol=1e-6)


def test_kernel_is_truncated_at_the_ends_and_symmetric_inside():
    k = np.exp(np.asarray(slider.slider_kernel(GRID, 8.0), float))
    g = np.arange(101)
    mean = k @ g
    assert mean[0] > 0 and mean[-1] < 100  # the ends pull inwards
    np.testing.assert_allclose(mean[10], 50.0, atol=1e-4)
    np.testing.assert_allclose(k[10, 50 - 7], k[10, 50 + 7], rtol=1e-5)
    np.testing.assert_allclose(k[0], k[-1][::-1], atol=1e-7)  # mirror images
    # a tiny width puts (almost) all mass on the state's own value
    k0 = np.exp(np.asarray(slider.slider_kernel(GRID, 0.05), float))
    np.testing.assert_allclose(k0[np.arange(21), np.arange(0, 101, 5)], 1.0, atol=1e-6)


def test_kernel_other_scales_and_non_integer_states():
    k = np.exp(np.asarray(slider.slider_kernel([1.5, 7.0], 2.0, low=1, high=7), float))
    np.testing.assert_allclose(k, naive_kernel([1.5, 7.0], 2.0, 1, 7), atol=1e-6)
    assert list(slider.slider_values(1, 7)) == [1, 2, 3, 4, 5, 6, 7]


def test_slider_log_probs_is_the_lapse_mixture_of_the_kernel_mixture():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(21) * 0.3, 4)  # spiky beliefs, some states ~0
    p[0] = 0.0
    p[0, 20] = 1.0  # all mass at 100
    ref = (1 - 0.2) * p @ naive_kernel(GRID, 5.0) + 0.2 / 101
    with np.errstate(divide="ignore"):
        got = np.exp(np.asarray(slider.slider_log_probs(np.log(p), GRID, 5.0, 0.2), float))
    np.testing.assert_allclose(got, ref, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)
    # lapse 0 and 1
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    np.testing.assert_allclose(np.exp(np.asarray(slider.slider_log_probs(lp, GRID, 5.0, 0.0))),
                               p @ naive_kernel(GRID, 5.0), atol=1e-6)
    np.testing.assert_allclose(np.exp(np.asarray(slider.slider_log_probs(lp, GRID, 5.0, 1.0))), 1 / 101, atol=1e-7)


def test_gradients_are_finite_for_width_and_lapse():
    """Including lapse = 0 and 1, tiny and huge widths, and spiky beliefs (states with p ~ 0)."""
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(21) * 0.2, 3)
    lp = jnp.log(jnp.asarray(p, jnp.float32))
    obs = jnp.asarray(rng.integers(0, 101, (3, 40)))

    @jax.jit
    def value_and_grad(theta):
        def loglik(t):
            return jnp.take_along_axis(slider.slider_log_probs(lp, GRID, t[0], t[1]), obs, axis=1).sum()
        return jax.value_and_grad(loglik)(theta)

    for width in (0.5, 5.0, 60.0):
        for lapse in (0.0, 0.05, 0.5, 0.9, 1.0):
            val, g = value_and_grad(jnp.array([width, lapse]))
            if lapse > 0:
                assert np.isfinite(float(val)), (width, lapse)
            assert np.all(np.isfinite(np.asarray(g))), (width, lapse, g)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    lp = jnp.log(jnp.asarray(rng.dirichlet(np.ones(21), 2), jnp.float32))
    obs = jnp.asarray(rng.integers(0, 101, (2, 30)))

    def f(theta):
        return jnp.take_along_axis(slider.slider_log_probs(lp, GRID, theta[0], theta[1]), obs, 1).sum()

    f64 = lambda t: float(f(jnp.asarray(t, jnp.float32)))  # noqa: E731
    theta = np.array([4.0, 0.1])
    g = np.asarray(jax.grad(f)(jnp.asarray(theta, jnp.float32)))
    for i, h in ((0, 1e-2), (1, 1e-3)):
        e = np.zeros(2)
        e[i] = h
        fd = (f64(theta + e) - f64(theta - e)) / (2 * h)
        np.testing.assert_allclose(g[i], fd, rtol=2e-2)


def test_observation_site_with_rows_gives_per_trial_log_likelihood():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(21), 3)
    rows = np.array([0, 0, 1, 2, 2, 2])
    obs = np.array([3, 97, 50, 0, 100, 61])

    def model():
        slider.slider_responses("guess", jnp.log(jnp.asarray(p, jnp.float32)), obs, state_values=GRID,
                                width=4.0, lapse=0.1, rows=rows)

    tr = handlers.trace(model).get_trace()
    site = tr["guess"]
    assert site["is_observed"] and tuple(site["value"].shape) == (6,)
    ll = np.asarray(site["fn"].log_prob(site["value"]))
    ref = np.log((0.9 * p @ naive_kernel(GRID, 4.0) + 0.1 / 101)[rows, obs])
    np.testing.assert_allclose(ll, ref, atol=1e-5)
    # predictive draws lie on the slider
    pred = handlers.trace(handlers.seed(lambda: slider.slider_responses(
        "guess", jnp.log(jnp.asarray(p, jnp.float32)), None, state_values=GRID, width=4.0, rows=rows), 0)).get_trace()
    v = np.asarray(pred["guess"]["value"])
    assert v.shape == (6,) and v.min() >= 0 and v.max() <= 100


@pytest.mark.parametrize("bad, match", [
    (101, r"guess\[2\] = 101(\.0)?; expected an integer slider value in 0..100"),
    (-1, r"guess\[2\] = -1(\.0)?;"),
    (50.5, r"guess\[2\] = 50.5"),
    (np.nan, r"guess\[2\] = nan"),
])
def test_bad_guesses_are_named(bad, match):
    obs = np.array([1.0, 2.0, bad, 4.0])
    with pytest.raises(ValueError, match=match):
        slider.check_slider_values(obs)
    with pytest.raises(ValueError, match=match):
        handlers.trace(lambda: slider.slider_responses("guess", jnp.zeros((1, 21)) - np.log(21), obs,
                                                       state_values=GRID, width=3.0, lapse=0.1,
                                                       rows=np.zeros(4, int))).get_trace()


@pytest.mark.parametrize("width", [0.0, -2.0, np.nan, np.inf])
def test_bad_width_is_named(width):
    with pytest.raises(ValueError, match=r"width = .*expected a finite kernel width > 0"):
        slider.slider_kernel(GRID, width)


def test_other_input_errors():
    with pytest.raises(ValueError, match="state_values must have shape"):
        slider.slider_kernel(np.zeros((2, 2)), 1.0)
    with pytest.raises(ValueError, match="need high > low"):
        slider.slider_kernel(GRID, 1.0, low=5, high=5)
    with pytest.raises(ValueError, match=r"log_p_state must have shape \[..., state\] with 21 states"):
        slider.slider_log_probs(np.zeros((3, 20)), GRID, 1.0)
    with pytest.raises(ValueError, match="lapse"):
        slider.slider_log_probs(np.zeros((3, 21)) - np.log(21), GRID, 1.0, 1.5)
