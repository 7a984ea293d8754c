"""Output perturbation's second inference release: the information's derivative along
v = Ĥ^-1 w~ (privatelr.inference, "Output perturbation's evaluation point")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from privatelr import erm
from privatelr.backends import as_rows
from privatelr.calibration import calibrate
from privatelr.inference import (InferenceRelease, derivative_sensitivity, information_eps,
                                 release_information)


def _rows(seed=0, n=800):
    rng = np.random.default_rng(seed)
    X = np.c_[np.full(n, 0.5), rng.uniform(-0.5, 0.5, (n, 2))]
    y = (rng.uniform(size=n) < expit(X @ np.array([0.5, 1.0, -1.0]))).astype(int)
    return X, y


def test_the_released_derivative_is_the_informations_derivative_along_v():
    X, y = _rows()
    n, d = X.shape
    cal = calibrate(n, d, eps=1.0, lambda_=0.05, method="output", data_norm=1.0)
    coef = np.array([0.3, 0.8, -0.6])
    # eps so large that both noises are ~1e-12: the release is the exact quantity
    rel = release_information(as_rows(X, y, None, None), coef, cal, eps=1e10,
                              rng=np.random.default_rng(1))
    p = expit(X @ coef)
    H = (X * (p * (1 - p))[:, None]).T @ X / n
    v = np.linalg.solve(rel.information, coef)
    K = (X * (p * (1 - p) * (1 - 2 * p) * (X @ v))[:, None]).T @ X / n
    assert np.allclose(rel.information, H, atol=1e-9)
    assert np.allclose(rel.derivative, K, rtol=1e-6, atol=1e-9)
    # half of the share for each release, the scales from their sensitivities
    assert rel.eps == 1e10
    assert rel.derivative_scale == pytest.approx(
        derivative_sensitivity(n, 1.0, 1.0, float(np.linalg.norm(v))) / 5e9, rel=1e-9)


def test_only_output_perturbation_releases_a_derivative():
    X, y = _rows()
    for method, has in (("objective", False), ("output", True)):
        res = erm.fit(X, y, lambda_=0.05, eps=2.0, method=method, inference=True,
                      random_state=3)
        assert (res.inference.derivative is not None) is has
        assert res.inference.eps == pytest.approx(0.8)        # the default 0.4 share, in all
    assert information_eps(0.8, "output") == 0.4
    assert information_eps(0.8, "objective") == 0.8


def test_sensitivity_bound_holds_on_neighbouring_rows():
    # replace one row by its worst neighbour: the change of the averaged derivative stays
    # within 2 c3 A B^3 |v| / n (c3 = 1/(6 sqrt 3), attained at p = 1/2 -+ 1/(2 sqrt 3))
    rng = np.random.default_rng(4)
    n, d = 50, 3
    X = rng.uniform(-1, 1, (n, d)) / math.sqrt(d)      # rows of norm <= 1
    v = np.array([2.0, -1.0, 0.5])
    w = np.array([0.1, 0.2, -0.3])

    def K(rows):
        p = expit(rows @ w)
        return (rows * (p * (1 - p) * (1 - 2 * p) * (rows @ v))[:, None]).T @ rows / n

    base = K(X)
    worst = 0.0
    for _ in range(2000):
        x = rng.standard_normal(d)
        x /= np.linalg.norm(x)
        Y = X.copy()
        Y[0] = x
        worst = max(worst, float(np.linalg.norm(K(Y) - base)))
    assert worst <= derivative_sensitivity(n, 1.0, 1.0, float(np.linalg.norm(v)))


def test_saved_release_round_trips_and_is_checked():
    rel = InferenceRelease(information=np.eye(2), eps=0.4, noise_scale=0.1,
                           derivative=np.array([[1.0, 2.0], [2.0, 3.0]]), derivative_scale=0.2)
    back = InferenceRelease.from_dict(rel.to_dict(), 2)
    assert np.array_equal(back.derivative, rel.derivative)
    assert back.derivative_scale == 0.2
    body = rel.to_dict()
    body["derivative"] = [[1.0, 2.0], [0.0, 3.0]]
    with pytest.raises(ValueError, match="derivative must be a finite symmetric"):
        InferenceRelease.from_dict(body, 2)
    body = rel.to_dict()
    del body["derivative_scale"]
    with pytest.raises(ValueError, match="expected keys"):
        InferenceRelease.from_dict(body, 2)
    old = {"information": [[1.0, 0.0], [0.0, 1.0]], "eps": 0.4, "noise_scale": 0.1}
    assert InferenceRelease.from_dict(old, 2).derivative is None   # files written before


def test_the_released_derivative_resums_the_ridge_correction():
    # an imbalanced design (5 % positives) where lam ||H^-1|| is 0.5: the one-step correction
    # w + lam H^-1 w is off by 6.7 % of ||w|| here; the resummed correction
    # w + lam (H + lam/2 K)^-1 w from the released derivative (second order in lam, with the
    # higher orders of the mean-value form) leaves under a tenth of that. Noise-free (eps
    # huge), so the comparison is of the corrections alone.
    from privatelr.inference.estimate import law_of

    rng = np.random.default_rng(11)
    n = 20_000
    X = np.c_[np.full(n, 0.5), rng.uniform(-1, 1, (n, 2)) / 3]         # rows of norm <= 1
    y = (rng.uniform(size=n) < expit(X @ np.array([-6.4, 3.0, -3.0]))).astype(int)
    lam = 0.001
    w0 = erm.fit(X, y, lambda_=0.0, eps=0.0, data_norm=1.0).coef          # glm
    res = erm.fit(X, y, lambda_=lam, eps=1e12, data_norm=1.0, method="output",
                  inference=True, random_state=2)
    rel, cal = res.inference, res.calibration
    names = ["a", "b", "c"]
    one = law_of(rel.information, res.coef, cal, 0.0, names).estimate
    two = law_of(rel.information, res.coef, cal, 0.0, names, rel.derivative, 0.0).estimate
    assert np.linalg.norm(one - w0) > 0.05 * np.linalg.norm(w0)    # a real ridge bias left
    assert np.linalg.norm(two - w0) < 0.1 * np.linalg.norm(one - w0)


def test_an_indefinite_resummed_matrix_refuses_and_says_which():
    """Output perturbation's correction inverts H + lam/2 K; when the released derivative makes
    it indefinite the intervals are refused, and the message names that matrix rather than the
    information (which is positive definite here)."""
    from dataclasses import replace

    from privatelr import confint

    X, y = _rows()
    res = erm.fit(X, y, lambda_=0.05, eps=50.0, data_norm=1.0, method="output",
                  inference=True, random_state=3)
    d = X.shape[1]
    lam = res.calibration.lambda_
    bad = -(4.0 / lam) * np.linalg.eigvalsh(res.inference.information).max() * np.eye(d)
    broken = replace(res, inference=replace(res.inference, derivative=bad))
    assert np.all(np.linalg.eigvalsh(broken.inference.information) > 0)
    with pytest.raises(ValueError, match=r"corrected by its released derivative \(H \+ lam/2 K"):
        confint(broken)
