"""Losses: derivatives against finite differences, declared constants, no overflow."""

import numpy as np
import pytest

from privatelr.losses import HuberLoss, Loss, LogisticLoss, get_loss

Z = np.linspace(-6, 6, 241)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5), HuberLoss(0.1)])
def test_derivative_matches_finite_difference(loss):
    h = 1e-6
    z = Z[np.abs(np.abs(1 - Z) - getattr(loss, "h", 9)) > 1e-3]  # avoid Huber's kinks
    fd = (loss.value(z + h) - loss.value(z - h)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(z), fd, atol=1e-8)
    fd2 = (loss.derivative(z + h) - loss.derivative(z - h)) / (2 * h)
    np.testing.assert_allclose(loss.second_derivative(z), fd2, atol=1e-6)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5), HuberLoss(0.05)])
def test_declared_bounds_hold(loss):
    z = np.linspace(-50, 50, 100001)
    assert np.abs(loss.derivative(z)).max() <= loss.lipschitz + 1e-15
    assert loss.second_derivative(z).max() <= loss.curvature + 1e-12
    # the curvature bound is attained (not a loose constant): c is the sup
    assert loss.second_derivative(z).max() >= 0.999 * loss.curvature
    assert isinstance(loss, Loss)


def test_constants():
    assert LogisticLoss().curvature == 0.25
    assert HuberLoss(0.5).curvature == 1.0
    assert HuberLoss(0.25).curvature == 2.0


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss()])
def test_huge_margins_do_not_overflow(loss):
    z = np.array([-1e4, -800.0, 0.0, 800.0, 1e4])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        v = loss.value(z)
        d1 = loss.derivative(z)
        d2 = loss.second_derivative(z)
        terms = loss.terms(z)
    assert np.isfinite(v).all() and np.isfinite(d1).all() and np.isfinite(d2).all()
    assert v[0] == pytest.approx(1e4 + (1.0 if isinstance(loss, HuberLoss) else 0.0), rel=1e-12)
    assert v[-1] == pytest.approx(0.0, abs=1e-300)
    for a, b in zip(terms, (v, d1, d2)):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-300)


def test_logistic_values():
    L = LogisticLoss()
    assert L.value(np.array([0.0]))[0] == pytest.approx(np.log(2))
    assert L.derivative(np.array([0.0]))[0] == pytest.approx(-0.5)
    assert L.second_derivative(np.array([0.0]))[0] == pytest.approx(0.25)


def test_huber_pieces():
    H = HuberLoss(0.5)
    assert H.value(np.array([2.0]))[0] == 0.0           # z > 1 + h
    assert H.value(np.array([0.0]))[0] == 1.0           # z < 1 - h: 1 - z
    assert H.value(np.array([1.0]))[0] == pytest.approx(0.5 ** 2 / 2)  # (1+h-z)^2/(4h)


@pytest.mark.parametrize("h", [0.0, -0.1, 0.6, float("nan")])
def test_bad_huber_constant(h):
    with pytest.raises(ValueError, match="h"):
        HuberLoss(h)


def test_get_loss_errors():
    with pytest.raises(ValueError, match="loss"):
        get_loss("hinge")
    with pytest.raises(TypeError, match="loss"):
        get_loss(3)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.3)])
def test_fused_derivatives_are_the_terms_without_the_value(loss):
    # the passes that need no value call derivatives(); they must give the bits terms() gives
    z = np.concatenate([np.linspace(-800, 800, 40_001), [0.0, -0.0, 1e-300, -1e-300]])
    _, d1, d2 = loss.terms(z, True)
    e1, e2 = loss.derivatives(z, True)
    assert np.array_equal(d1, e1) and np.array_equal(d2, e2)
    assert loss.derivatives(z, False)[1] is None
    np.testing.assert_allclose(d1, loss.derivative(z), rtol=1e-15, atol=1e-300)


def test_logistic_third_derivative_bound_is_its_supremum():
    # the solver certifies a step's decrease with |l'''| <= bound (solver._accept_on_gradient):
    # l''' = s(1-s)(1-2s), s = sigma(z); a grid through its peaks reaches the bound to 1e-9
    from scipy.special import expit

    z = np.linspace(-40, 40, 800_001)
    s = expit(z)
    third = np.abs(s * (1 - s) * (1 - 2 * s))
    bound = LogisticLoss.third_derivative_bound
    assert third.max() <= bound and third.max() > bound * (1 - 1e-9)


def test_logistic_scaled_derivative_is_the_scaled_derivative_to_rounding():
    # a gradient pass asks the loss for scale * l'(z) (scale = y a / n per row); the fused form
    # divides once instead of a reciprocal and a product, so the two agree to a few roundings,
    # over margins far into both tails (exp overflows to inf: the value is a signed zero)
    rng = np.random.default_rng(3)
    z = np.concatenate([rng.uniform(-40, 40, 10_000), [-800.0, -745.0, 0.0, 709.0, 800.0]])
    scale = rng.choice([-1.0, 1.0], z.size) * rng.uniform(0.0, 3.0, z.size) / 7.0
    loss = LogisticLoss()
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        fused = loss.scaled_derivative(z, scale)
    np.testing.assert_allclose(fused, scale * loss.derivative(z), rtol=4e-16, atol=0)
    assert np.all(np.sign(fused) * np.sign(scale) <= 0)   # l' < 0: the sign of -scale
