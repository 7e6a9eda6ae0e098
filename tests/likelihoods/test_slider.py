"""pragmodels.likelihoods.slider: the discretised-Gaussian response kernel against a NumPy loop, truncation at
the ends, finite gradients (width, lapse at 0 and 1), the observation site, and input errors.

Tolerance: float32 against float64 NumPy, 1e-6 absolute on probabilities."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers

from pragmodels.likelihoods import slider

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


def naive_rounding(p_meant, round_to=10, low=0, high=100):
    """A meant value g* reported as the nearest multiple of round_to (ties split), by a loop."""
    out = np.zeros_like(p_meant)
    mult = [m for m in range(low, high + 1) if m % round_to == 0]
    for gs in range(low, high + 1):
        d = [abs(gs - m) for m in mult]
        near = [m for m, x in zip(mult, d) if x == min(d)]
        for m in near:
            out[..., m - low] += p_meant[..., gs - low] / len(near)
    return out


def test_rounding_matrix_against_a_loop():
    r = slider.rounding_matrix(0, 100, 10)
    np.testing.assert_allclose(r.sum(1), 1.0)
    np.testing.assert_allclose(r, naive_rounding(np.eye(101)), atol=1e-12)
    assert r[95, 90] == 0.5 and r[95, 100] == 0.5 and r[94, 90] == 1.0 and r[3, 0] == 1.0
    assert set(np.nonzero(r.sum(0))[0]) == set(range(0, 101, 10))
    # another scale: 1..7 rounded to multiples of 3 (3, 6); 1 goes to 3, 7 to 6
    r2 = slider.rounding_matrix(1, 7, 3)
    np.testing.assert_allclose(r2, naive_rounding(np.eye(7), 3, 1, 7), atol=1e-12)


@pytest.mark.parametrize("rho", [0.0, 0.15, 1.0])
def test_slider_log_probs_with_rounding_is_the_reference_mixture(rho):
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(21) * 0.5, 3)
    meant = p @ naive_kernel(GRID, 6.0)
    ref = 0.9 * ((1 - rho) * meant + rho * naive_rounding(meant)) + 0.1 / 101
    got = np.exp(np.asarray(slider.slider_log_probs(np.log(p), GRID, 6.0, 0.1, rounding=rho), float))
    np.testing.assert_allclose(got, ref, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)


def test_rounding_gradients_are_finite_and_match_finite_differences():
    rng = np.random.default_rng(5)
    lp = jnp.log(jnp.asarray(rng.dirichlet(np.ones(21), 2), jnp.float32))
    obs = jnp.asarray(rng.integers(0, 101, (2, 30)))

    def f(theta):
        return jnp.take_along_axis(slider.slider_log_probs(lp, GRID, theta[0], 0.05, rounding=theta[1]), obs, 1).sum()

    for rho in (0.0, 0.3, 1.0):
        g = np.asarray(jax.grad(f)(jnp.array([4.0, rho], jnp.float32)))
        assert np.all(np.isfinite(g)), (rho, g)
    theta = np.array([4.0, 0.2])
    g = np.asarray(jax.grad(f)(jnp.asarray(theta, jnp.float32)))
    h = 1e-3
    fd = (float(f(jnp.asarray(theta + [0, h], jnp.float32))) - float(f(jnp.asarray(theta - [0, h], jnp.float32)))) / (2 * h)
    np.testing.assert_allclose(g[1], fd, rtol=2e-2)


def test_rounding_in_the_observation_site():
    rng = np.random.default_rng(6)
    p = rng.dirichlet(np.ones(21), 2)
    rows, obs = np.array([0, 1, 1]), np.array([40, 41, 100])

    def model():
        slider.slider_responses("guess", jnp.log(jnp.asarray(p, jnp.float32)), obs, state_values=GRID,
                                width=4.0, lapse=0.1, rounding=0.2, rows=rows)

    site = handlers.trace(model).get_trace()["guess"]
    meant = p @ naive_kernel(GRID, 4.0)
    ref = np.log((0.9 * (0.8 * meant + 0.2 * naive_rounding(meant)) + 0.1 / 101)[rows, obs])
    np.testing.assert_allclose(np.asarray(site["fn"].log_prob(site["value"])), ref, atol=1e-5)


@pytest.mark.parametrize("kw, match", [
    ({"rounding": 1.5}, r"rounding = 1.5; expected a scalar share of rounded responses in \[0, 1\]"),
    ({"rounding": -0.1}, r"rounding = -0.1"),
    ({"rounding": 0.1, "round_to": 1}, r"round_to = 1; expected an int >= 2"),
    ({"rounding": 0.1, "round_to": 2.5}, r"round_to = 2.5"),
])
def test_bad_rounding_is_named(kw, match):
    with pytest.raises(ValueError, match=match):
        slider.slider_log_probs(np.zeros((1, 21)) - np.log(21), GRID, 3.0, 0.1, **kw)
