"""Gaussian mechanism noise scales used by the WALR release (classic and analytic)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.integrate
import scipy.stats

from privatelr.mechanisms import (check_random_state, gaussian_delta, gaussian_noise,
                                  gaussian_sigma, gaussian_sigma_analytic, gaussian_sigma_classic)


# ---------------------------------------------------------------- classic (Dwork & Roth Thm 3.22)
@pytest.mark.parametrize("sens, eps, delta, expected", [
    # sqrt(2 ln(1.25e5)) / 0.5, worked by hand: ln(125000) = 11.736069016284437
    (1.0, 0.5, 1e-5, 2.0 * math.sqrt(2 * 11.736069016284437)),
    # WALR's sensitivity for k = 31, N = 1e6: sqrt(31)/1e6 * sqrt(2 ln(1.25e6)) / 0.1
    (math.sqrt(31) / 1e6, 0.1, 1e-6, math.sqrt(31) / 1e6 * math.sqrt(2 * 14.038654109278484) / 0.1),
])
def test_classic_sigma_matches_the_formula(sens, eps, delta, expected):
    assert gaussian_sigma_classic(sens, eps, delta) == pytest.approx(expected, rel=1e-13)
    assert gaussian_sigma(sens, eps, delta, "classic") == gaussian_sigma_classic(sens, eps, delta)


def test_classic_sigma_literal_value():
    assert gaussian_sigma_classic(1.0, 0.5, 1e-5) == pytest.approx(9.689610525210778, rel=1e-14)


@pytest.mark.parametrize("eps", [1.0, 1.5, 10.0])
def test_classic_refuses_eps_at_least_one_and_names_analytic(eps):
    with pytest.raises(ValueError, match="analytic"):
        gaussian_sigma_classic(1.0, eps, 1e-5)


# ---------------------------------------------------------------- analytic (Balle & Wang Thm 8)
def test_privacy_profile_formula_equals_hockey_stick_integral():
    # delta(eps) = int max(0, p(x) - e^eps q(x)) dx for p = N(0, s^2), q = N(Delta, s^2):
    # checks the Theta-formula (and its log-space evaluation) by direct numerical integration.
    for sigma, sens, eps in [(1.3, 1.0, 0.7), (0.4, 1.0, 2.5), (5.0, 2.0, 0.1)]:
        p = scipy.stats.norm(0.0, sigma).pdf
        q = scipy.stats.norm(sens, sigma).pdf
        t = sens / 2 - eps * sigma ** 2 / sens  # the integrand is positive exactly for x < t
        val, _ = scipy.integrate.quad(lambda x: p(x) - math.exp(eps) * q(x), -np.inf, t,
                                      epsabs=1e-14, epsrel=1e-12)
        assert gaussian_delta(sigma, sens, eps) == pytest.approx(val, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("eps", [0.05, 0.5, 0.99, 1.0, 3.0, 10.0, 50.0])
@pytest.mark.parametrize("delta", [0.1, 1e-5, 1e-10])
def test_analytic_sigma_meets_the_profile_with_equality(eps, delta):
    sigma = gaussian_sigma_analytic(1.0, eps, delta)
    achieved = gaussian_delta(sigma, 1.0, eps)
    assert achieved <= delta  # never claims the guarantee for a sigma that misses it
    assert abs(achieved - delta) <= 1e-9 * delta  # and is tight: relative 1e-9
    # smallest: 1e-7 less noise already violates (eps, delta)
    assert gaussian_delta(sigma * (1 - 1e-7), 1.0, eps) > delta


def test_analytic_sigma_profile_in_high_precision():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    for sens, eps, delta in [(1.0, 1.0, 1e-5), (math.sqrt(31) / 1e6, 0.1, 1e-6), (3.0, 5.0, 1e-8)]:
        sigma = gaussian_sigma_analytic(sens, eps, delta)
        s, d, e = mpmath.mpf(sigma), mpmath.mpf(sens), mpmath.mpf(eps)
        prof = mpmath.ncdf(d / (2 * s) - e * s / d) - mpmath.exp(e) * mpmath.ncdf(-d / (2 * s) - e * s / d)
        assert abs(float(prof) - delta) <= 1e-9 * delta


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_analytic_sigma_is_below_classic_for_eps_below_one(eps, delta):
    assert gaussian_sigma_analytic(1.0, eps, delta) < gaussian_sigma_classic(1.0, eps, delta)


def test_analytic_sigma_known_value_and_scaling():
    # Balle & Wang's headline case eps = 1, delta = 1e-5: analytic 3.73 versus classic 4.84.
    s1 = gaussian_sigma_analytic(1.0, 1.0, 1e-5)
    assert s1 == pytest.approx(3.7306316348, rel=1e-9)
    # the profile depends on sigma / Delta only, so sigma scales with the sensitivity
    assert gaussian_sigma_analytic(2.5e-4, 1.0, 1e-5) == pytest.approx(2.5e-4 * s1, rel=1e-12)
    # more privacy, more noise
    assert gaussian_sigma(1.0, 0.5, 1e-5) > s1 > gaussian_sigma(1.0, 2.0, 1e-5)


@pytest.mark.parametrize("kwargs, match", [
    (dict(sensitivity=1.0, eps=0.0, delta=1e-5), "eps"),
    (dict(sensitivity=1.0, eps=-1.0, delta=1e-5), "eps"),
    (dict(sensitivity=1.0, eps=1.0, delta=0.0), "delta"),
    (dict(sensitivity=1.0, eps=1.0, delta=1.0), "delta"),
    (dict(sensitivity=0.0, eps=1.0, delta=1e-5), "sensitivity"),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gaussian_sigma_analytic(**kwargs)
    with pytest.raises(ValueError, match=match):
        gaussian_sigma_classic(**{**kwargs, "eps": min(kwargs["eps"], 0.5)}) \
            if match != "eps" else gaussian_sigma_classic(**kwargs)


def test_unknown_mechanism():
    with pytest.raises(ValueError, match="mechanism"):
        gaussian_sigma(1.0, 1.0, 1e-5, mechanism="laplace")


def test_gaussian_noise_draws():
    assert np.array_equal(gaussian_noise(4, 0.0, random_state=3), np.zeros(4))
    a = gaussian_noise(5, 2.0, random_state=7)
    assert a.shape == (5,) and np.array_equal(a, gaussian_noise(5, 2.0, random_state=7))
    rng = check_random_state(1)
    b, c = gaussian_noise(5, 2.0, rng), gaussian_noise(5, 2.0, rng)
    assert not np.array_equal(b, c)  # a Generator is advanced, never reseeded
    with pytest.raises(ValueError, match="sigma"):
        gaussian_noise(3, -1.0)
