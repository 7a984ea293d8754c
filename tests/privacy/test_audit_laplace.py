"""The auditor has teeth: tight on the Laplace mechanism, and it flags broken noise.

Power argument for the teeth check (Laplace, sensitivity 1, eps = 1, neighbours 0 and 1).
For any threshold t <= 0 the event {output < t} has P[E|D] = e^t / 2 and P[E|D'] = e^(t-1) / 2,
a ratio of exactly e, so the best event is near t = 0 (p = 0.5, q = 0.18). With 10 000
evaluation runs per neighbour the two one-sided 97.5% Clopper-Pearson ends cost about
1.96 * (sqrt((1-p)/(p N)) + sqrt((1-q)/(q N))) = 0.061 in log-ratio and the estimate has a
standard deviation of about 0.024, so the bound is about 0.94 and 0.8 lies 5 standard deviations
below (over 40 seeds the smallest bound was 0.89). A correct mechanism gets a bound <= 1 except with
probability 5%; the seed is fixed, so the test is deterministic.
"""

from __future__ import annotations

import numpy as np
import pytest

from privatelr import audit
from privatelr.mechanisms import exponential_mechanism


def _laplace(scale):
    def mechanism(x, rng):
        return x + rng.laplace(scale=scale)
    return mechanism


def test_audit_laplace_certifies_most_of_eps():
    res = audit(_laplace(1.0), 0.0, 1.0, eps_claimed=1.0, trials=20000, random_state=20261122)
    assert 0.8 <= res.eps_lower <= 1.0, res.summary()
    assert res.passed
    # The evidence is internally consistent: the bound is the log-ratio of the interval ends.
    num, den = ((res.interval_D[0], res.interval_D_prime[1]) if res.direction.startswith("P[E|D]")
                else (res.interval_D_prime[0], res.interval_D[1]))
    assert res.eps_lower == pytest.approx(np.log(num / den))
    assert res.n_eval == 10000 and res.trials == 20000


def test_audit_flags_laplace_with_a_tenth_of_the_noise():
    # True eps is 10: a ratio of e^10 on the far tail; 1000 evaluation runs show ~5.
    res = audit(_laplace(0.1), 0.0, 1.0, eps_claimed=1.0, trials=2000, random_state=1)
    assert not res.passed
    assert res.eps_lower > 3.0, res.summary()


def test_audit_flags_laplace_without_noise():
    # Deterministic outputs: counts (100, 0) of 100; the bound is log(0.025^(1/100) /
    # (1 - 0.025^(1/100))) = 3.28 > 1 whatever the seed.
    res = audit(lambda x, rng: np.array([x]), 0.0, 1.0, eps_claimed=1.0, trials=200,
                random_state=2)
    assert not res.passed
    assert res.counts in ((100, 0), (0, 100))
    assert res.eps_lower == pytest.approx(np.log(0.025 ** 0.01 / (1 - 0.025 ** 0.01)))


def test_audit_eps_delta_form_accounts_for_delta():
    # With probability 0.05 the mechanism publishes a flag that reveals the input (110 vs 100),
    # otherwise Laplace noise at eps = 1: it is (1, 0.05)-DP but not 1-DP. The flag event has
    # P = 0.05 under one neighbour and ~0 under the other: 2500 evaluation runs give about 125
    # vs 0 hits, a pure-eps bound near log(0.04 / 0.0015) = 3.3. Claiming delta = 0.05 makes
    # (p_lower - delta) <= 0 for that event, and every other event has a ratio <= e.
    def leaky(x, rng):
        if rng.uniform() < 0.05:
            return 100.0 + 10.0 * x
        return x + rng.laplace(scale=1.0)

    pure = audit(leaky, 0.0, 1.0, eps_claimed=1.0, trials=5000, random_state=3)
    assert not pure.passed and pure.eps_lower > 2.0, pure.summary()
    approx = audit(leaky, 0.0, 1.0, eps_claimed=1.0, delta_claimed=0.05, trials=5000,
                   random_state=3)
    assert approx.passed, approx.summary()
    assert approx.delta_claimed == 0.05


def _one_hot_exponential(eps):
    def mechanism(utility, rng):
        return np.eye(2)[exponential_mechanism(utility, eps=eps, sensitivity=1.0, random_state=rng)]
    return mechanism


def test_audit_exponential_mechanism_and_its_broken_variant():
    # Utilities (0, 0) vs (1, -1) (each changes by the sensitivity 1). The second candidate
    # has probability 1/2 vs 1/(1 + e^eps): a true loss of log((1 + e)/2) = 0.62 at eps = 1,
    # but log((1 + e^10)/2) = 9.3 if the mechanism were run at eps = 10 while claiming 1; with
    # 1000 evaluation runs (about 500 hits vs 0) the bound of the broken run is about 4.
    D, D_prime = np.array([0.0, 0.0]), np.array([1.0, -1.0])
    ok = audit(_one_hot_exponential(1.0), D, D_prime, eps_claimed=1.0, trials=2000,
               random_state=4)
    assert ok.passed, ok.summary()
    broken = audit(_one_hot_exponential(10.0), D, D_prime, eps_claimed=1.0, trials=2000,
                   random_state=4)
    assert not broken.passed and broken.eps_lower > 3.0, broken.summary()
