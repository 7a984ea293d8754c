"""Random stopping releases the chosen run only: with the number of runs it has no finite ε.

The counterexample of issue 27, computed exactly. One candidate; each run releases a count of
sensitivity 1 with the package's own :func:`~privatelr.mechanisms.laplace_count` at ε/3 (the
tuners' run budget, ε = 1 in total) and scores it by minus the noisy count (the tuners score by
minus the noisy error count); stop probability γ = 0.05. Neighbours: the count is ``c = 1`` on
``D`` and ``c = 0`` on ``D'``. With ``b = 3/ε`` the Laplace scale and ``S`` its survival
function, the released noisy count is ``Y = min_i (c + L_i)`` over ``T`` runs, and

* given ``T = t``: ``P(Y >= y | t) = S(y - c)^t``, so ``P(T = t, Y >= 1)`` is
  ``γ(1-γ)^(t-1) 2^-t`` on ``D`` and ``γ(1-γ)^(t-1) (e^(-1/b)/2)^t`` on ``D'``: a privacy loss of
  exactly ``t/b = tε/3`` (1.33 at t = 4, 13.3 at t = 40) — the old API released ``T``;
* without ``T`` (what is released now): ``Y`` has density
  ``Σ_t γ(1-γ)^(t-1) t S^(t-1) f = γ f(y - c) / (1 - (1-γ) S(y - c))^2``, whose log-ratio between
  ``D`` and ``D'`` is at most 0.79 everywhere (checked on a grid of step 1e-3 over
  ``[-300, 300]``; outside it both points lie in one Laplace tail, where the ratio tends to
  ``e^(±1/b)``, and the ``S`` factors to 1): within Liu & Talwar's 3 · ε/3 = 1.

That the package's ``random_stopping`` has exactly this law is checked by sampling it (the test
counts the calls of ``run`` itself to know ``T``: the function no longer says). Power: with
4000 draws per neighbour, Kolmogorov–Smirnov's critical distance at p = 1e-4 is about 0.031;
the probability integral transform ``S(Y - c)^T`` of a correct implementation is uniform
(p > 1e-3 with the fixed seed), while the transform under a wrong model — one run more than
counted, or a Laplace scale off by 1.25 — is off by more than 0.1 in sup distance and rejected
at p < 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privatelr.mechanisms import laplace_count, random_stopping

EPS, GAMMA = 1.0, 0.05
B = 3.0 / EPS                      # each run's Laplace scale: a count at eps/3


def _log_s(x, b=B):
    """log of the Laplace(0, b) survival function."""
    x = np.asarray(x, dtype=float)
    return np.where(x < 0, np.log1p(-0.5 * np.exp(np.minimum(x, 0) / b)),
                    math.log(0.5) - np.maximum(x, 0) / b)


def _log_f(x, b=B):
    return -np.abs(np.asarray(x, dtype=float)) / b - math.log(2 * b)


def _joint_event(t: int, c: float) -> float:
    """``P(T = t, Y >= 1)`` exactly."""
    return GAMMA * (1 - GAMMA) ** (t - 1) * math.exp(t * float(_log_s(1.0 - c)))


@pytest.mark.heavy
def test_the_run_count_with_the_output_has_no_finite_eps():
    for t, loss in ((4, 4 / 3), (40, 40 / 3)):
        ratio = math.log(_joint_event(t, 1.0) / _joint_event(t, 0.0))
        assert ratio == pytest.approx(loss, rel=1e-12) and ratio > EPS
    # delta(1) of the pair (T, Y) is at least the mass of these events beyond e^1 times their
    # probability on D' (the claim is (1, 0))
    lower = sum(max(0.0, _joint_event(t, 1.0) - math.e * _joint_event(t, 0.0))
                for t in range(1, 2000))
    assert lower == pytest.approx(2.19308e-3, rel=1e-4)
    # and its exact delta(1), integrating the joint densities over y for every t
    # (step 0.02 on [-200, 200]; P(T > 600) < 5e-14, and beyond |y| = 200 the densities are
    # below e^(-60))
    y = np.linspace(-200, 200, 20_001)
    t = np.arange(1, 601)[:, None]
    log_pt = math.log(GAMMA) + (t - 1) * math.log1p(-GAMMA) + np.log(t)
    dens = [np.exp(log_pt + (t - 1) * _log_s(y - c) + _log_f(y - c)) for c in (1.0, 0.0)]
    delta = np.trapezoid(np.maximum(dens[0] - math.e * dens[1], 0.0), y, axis=1).sum()
    assert 0.0140 < delta < 0.0150          # 0.01443: far from the claimed 0


def _log_marginal(y, c):
    return (math.log(GAMMA) + _log_f(y - c)
            - 2 * np.log1p(-(1 - GAMMA) * np.exp(_log_s(y - c))))


def test_the_released_output_alone_stays_within_its_claim():
    y = np.linspace(-300, 300, 600_001)
    loss = np.abs(_log_marginal(y, 1.0) - _log_marginal(y, 0.0))
    assert loss.max() <= 3 * (EPS / 3)                          # Liu & Talwar's 3 eps/3
    assert loss.max() == pytest.approx(0.78995, abs=1e-4)
    # the tails: both points in one Laplace tail, the ratio tends to e^(1/b) (and the S factors
    # to 1), far below the claim
    assert max(loss[0], loss[-1]) == pytest.approx(1 / B, abs=1e-6)
    # the density integrates to one (the closed form is the law)
    assert np.trapezoid(np.exp(_log_marginal(y, 1.0)), y) == pytest.approx(1.0, abs=1e-6)


def _draws(c: float, n: int, seed: int):
    """``n`` releases of the package's random stopping, with the run counts the test sees."""
    rng = np.random.default_rng(seed)
    ys, ts = np.empty(n), np.empty(n, dtype=int)
    for i in range(n):
        calls = []

        def run(j):
            noisy = laplace_count(c, EPS / 3, rng)
            calls.append(j)
            return -noisy, noisy

        out = random_stopping(run, 1, GAMMA, rng)
        assert len(out) == 3                     # (j, output, score): no run count
        j, ys[i], score = out
        assert j == 0 and score == -ys[i]
        ts[i] = len(calls)
    return ys, ts


@pytest.mark.parametrize("c, seed", [(1.0, 11), (0.0, 12)])
def test_package_random_stopping_has_the_analysed_law(c, seed):
    ys, ts = _draws(c, 4000, seed)
    # T geometric: mean 1/gamma = 20, sd of the mean sqrt(1 - g)/g / sqrt(N) = 0.31
    assert abs(ts.mean() - 1 / GAMMA) < 1.3
    # given T = t, P(Y >= y) = S(y - c)^t: the transform is uniform
    u = np.exp(ts * _log_s(ys - c))
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    for wrong in (np.exp((ts + 1) * _log_s(ys - c)), np.exp(ts * _log_s(ys - c, b=1.25 * B))):
        assert stats.kstest(wrong, "uniform").pvalue < 1e-6
    # the released Y alone: P(Y >= y) = g S / (1 - (1 - g) S)
    s = np.exp(_log_s(ys - c))
    assert stats.kstest(GAMMA * s / (1 - (1 - GAMMA) * s), "uniform").pvalue > 1e-3
