"""Noise law of the WALR release: many releases of the same data have covariance sigma^2 I.

Power argument (written once for the whole file). With R releases of a k-vector the statistic
S = sum of squared residuals / sigma^2 is chi-square with R*k degrees of freedom when the noise is
N(0, sigma^2 I). Here R*k = 18000: the two-sided 1e-6 acceptance band is about 18000 +- 5.3*190,
i.e. +-5.6 %, so a correct implementation fails with probability 1e-6 (and the seed is fixed),
while a sigma that is wrong by 4 % (variance +-8 %) already lands outside: a factor-2 error
(variance x4 or /4), the classic sigma used for the analytic one (>= 20 % apart at these
parameters) or a sensitivity missing its sqrt(k) fails by hundreds of standard deviations.
Correlations between coordinates are N(0, 1/R): |r| < 5.5/sqrt(R) = 0.10 at R = 3000 (Bonferroni
over the 15 pairs at 1e-6), while a shared noise term gives r near 1. The KS test on the pooled
standardised residuals detects a Laplace law of the same variance (sup CDF gap about 0.04 against
a 1e-6 critical value of 0.02 for 18000 draws).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from privatelr import noisy_dot_product
from privatelr.mechanisms import check_random_state

R = 3000
K = 6


@pytest.mark.parametrize("mechanism, eps, weighted", [("analytic", 2.0, True),
                                                      ("classic", 0.5, False)])
def test_release_noise_is_iid_gaussian_with_sigma(mechanism, eps, weighted):
    gen = np.random.default_rng(11)
    n = 40
    X = np.c_[np.ones(n), gen.uniform(size=(n, K - 1))]
    y = (gen.uniform(size=n) < 0.4).astype(int)
    w = gen.uniform(0, 3, size=n) if weighted else None
    kw = dict(eps=eps, delta=1e-5, weights=w, weights_bound=3.0 if weighted else 1.0)
    exact = noisy_dot_product(X, y, eps=math.inf, delta=1e-5, weights=w,
                              weights_bound=kw["weights_bound"]).value
    rng = check_random_state(2024)
    first = noisy_dot_product(X, y, mechanism=mechanism, random_state=rng, **kw)
    sigma = first.sigma
    # the sigma the record states is the one its mechanism prescribes for A sqrt(k) / N
    assert first.sensitivity == pytest.approx(kw["weights_bound"] * math.sqrt(K) / n, rel=1e-15)
    E = np.empty((R, K))
    E[0] = first.value - exact
    for r in range(1, R):
        E[r] = noisy_dot_product(X, y, mechanism=mechanism, random_state=rng, **kw).value - exact
    Z = E / sigma

    # total variance: chi-square with R*K degrees of freedom
    S = float((Z ** 2).sum())
    lo, hi = scipy.stats.chi2.ppf(5e-7, R * K), scipy.stats.chi2.isf(5e-7, R * K)
    assert lo < S < hi, (S, lo, hi)
    # each coordinate: chi-square with R degrees of freedom (Bonferroni over K)
    per = (Z ** 2).sum(axis=0)
    assert ((per > scipy.stats.chi2.ppf(5e-7 / K, R)) & (per < scipy.stats.chi2.isf(5e-7 / K, R))).all()
    # zero mean: each coordinate mean ~ N(0, 1/R) in sigma units
    assert np.abs(Z.mean(axis=0)).max() * math.sqrt(R) < 5.5
    # no correlation between coordinates: sample covariance close to sigma^2 I
    C = np.corrcoef(Z, rowvar=False)
    off = C[~np.eye(K, dtype=bool)]
    assert np.abs(off).max() < 5.5 / math.sqrt(R)
    # Gaussian shape
    assert scipy.stats.kstest(Z.ravel(), "norm").pvalue > 1e-6


def test_a_wrong_sigma_would_fail_the_variance_test():
    # The test above is not vacuous: residuals drawn with 0.5x, 2x, 0.96x or 1.04x the stated sigma
    # leave the chi-square band (the same band, the same R*K).
    rng = np.random.default_rng(5)
    lo, hi = scipy.stats.chi2.ppf(5e-7, R * K), scipy.stats.chi2.isf(5e-7, R * K)
    for factor in (0.5, 2.0, 0.96, 1.04):
        S = float(((factor * rng.standard_normal((R, K))) ** 2).sum())
        assert not lo < S < hi, factor
