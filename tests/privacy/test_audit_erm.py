"""Black-box audits of the ERM mechanisms (privatelr.erm.fit) and of broken variants.

Neighbours (worst-case-ish): n = 5 rows in the unit ball of R^1 (no intercept, so the output is
one coefficient and nothing dilutes the change), and D' moves the first record to the opposite
side of the ball, x -> -x. For a margin loss this is the same as flipping its label: y x -> -y x,
the largest change one record can make to the margins.

What the audit can see. Objective perturbation releases the minimiser of J(w) + b w / n; on
these neighbours the noise that produces a given output differs by |n (grad J_D - grad J_D')| =
|l'(m) + l'(-m)| <= 2. For the logistic loss that is exactly 1 at every w (sigmoid(m) +
sigmoid(-m) = 1) and the Jacobians agree (l'' is even), so the privacy loss of this pair is
eps'/2 (about 0.45 at lambda = 1, 0.25 on the adjusted-lambda branch): well below the claimed
eps = 1, as the worst-case analysis allows. For the Huber loss near w = 0 both margins sit on the
linear part (l' = -1), the shift is the full 2 and the loss is eps' (0.64). Output perturbation
in one dimension is the Laplace mechanism on w*; |w*(D) - w*(D')| is about half its sensitivity
bound 2/(n lambda).

Power. Dividing the noise scale by 10 multiplies these losses by 10 (2.5 to 6.4). With 500 to 750
evaluation runs per neighbour the bound of a ratio e^2.5 comes out near 2: over 7 seeds at the
trials used here the smallest bound of the weakest case (adjusted branch, 1500 trials) was 1.97
and of the others 3.0, against the threshold 1.3 asserted; the correct mechanisms' bounds were
0 to 0.46 (Huber 0.30 to 0.46), and they stay below their claim except with probability 5% in
any case. Seeds are fixed. Without noise the outputs are deterministic and 100 runs
give log(0.025^(1/50) / (1 - 0.025^(1/50))) = 2.57 > 1. Each fit takes about 0.5 ms; the whole
file runs in about 10 s.
"""

from __future__ import annotations

import numpy as np
import pytest

from privatelr import audit, erm, mechanisms

X = np.array([[1.0], [0.5], [-0.5], [0.3], [-0.8]])
Y = np.array([1, 1, 0, 0, 1])
X_PRIME = X.copy()
X_PRIME[0] = -X[0]
D, D_PRIME = (X, Y), (X_PRIME, Y)

# name -> (keyword arguments of erm.fit, expected calibration status, trials for the /10 variant)
CASES = {
    "objective-ok": (dict(lambda_=1.0, eps=1.0), "ok", 1000),
    "objective-adjusted": (dict(lambda_=0.01, eps=1.0), "adjusted lambda", 1500),
    "output": (dict(lambda_=1.0, eps=1.0, method="output"), "ok", 1000),
    "huber-svm": (dict(lambda_=1.0, eps=1.0, loss="huber"), "ok", 1000),
}


def _mechanism(kwargs):
    def mechanism(data, rng):
        return erm.fit(data[0], data[1], random_state=rng, **kwargs).coef
    return mechanism


def _break_noise(monkeypatch, factor):
    """Make erm.fit draw its noise at scale / factor (factor None: no noise at all)."""
    calls = []
    real = mechanisms.sphere_gamma_noise

    def broken(d, scale, rng):
        calls.append(scale)
        return real(d, 0.0 if factor is None else scale / factor, rng)

    monkeypatch.setattr(erm, "sphere_gamma_noise", broken)
    return calls


@pytest.mark.heavy
@pytest.mark.parametrize("name", list(CASES))
def test_audit_erm_mechanism_stays_below_claim(name):
    kwargs, status, _ = CASES[name]
    assert erm.fit(X, Y, random_state=0, **kwargs).status == status  # the intended branch
    res = audit(_mechanism(kwargs), D, D_PRIME, eps_claimed=kwargs["eps"], trials=1000,
                random_state=11)
    assert res.passed and res.eps_lower < kwargs["eps"], res.summary()
    if name == "huber-svm":  # the pair is nearly worst case (loss eps' = 0.64): the audit sees it
        assert res.eps_lower > 0.1, res.summary()


@pytest.mark.heavy
@pytest.mark.parametrize("name", list(CASES))
def test_audit_erm_flags_a_tenth_of_the_noise(name, monkeypatch):
    kwargs, _, trials = CASES[name]
    calls = _break_noise(monkeypatch, 10.0)
    res = audit(_mechanism(kwargs), D, D_PRIME, eps_claimed=kwargs["eps"], trials=trials,
                random_state=12)
    assert len(calls) == 2 * trials, "erm.fit no longer draws its noise via sphere_gamma_noise"
    assert not res.passed and res.eps_lower > 1.3, res.summary()


@pytest.mark.parametrize("name", list(CASES))
def test_audit_erm_flags_no_noise(name, monkeypatch):
    kwargs, _, _ = CASES[name]
    calls = _break_noise(monkeypatch, None)
    res = audit(_mechanism(kwargs), D, D_PRIME, eps_claimed=kwargs["eps"], trials=100,
                random_state=13)
    assert len(calls) == 200
    assert not res.passed and res.eps_lower > 2.5, res.summary()
