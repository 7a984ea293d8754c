"""The exponential mechanism (privatelr.mechanisms.exponential_mechanism) used by private tuning."""

import numpy as np
import pytest
from scipy import stats

from privatelr.mechanisms import exponential_mechanism


def _frequencies(utility, eps, sensitivity, measure=None, draws=20_000, seed=2024):
    rng = np.random.default_rng(seed)
    picks = [exponential_mechanism(utility, eps, sensitivity, measure=measure, random_state=rng)
             for _ in range(draws)]
    return np.bincount(picks, minlength=len(utility))


def _formula(utility, eps, sensitivity, measure=None):
    u = np.asarray(utility, float)
    mu = np.ones_like(u) if measure is None else np.asarray(measure, float)
    w = mu * np.exp(eps * (u - u.max()) / (2 * sensitivity))
    return w / w.sum()


@pytest.mark.parametrize("utility, eps, sensitivity, measure", [
    ([0.0, -1.0, -2.0, -3.0], 1.0, 1.0, None),
    ([3.0, 1.0, 2.0, 0.5, 2.5], 2.0, 2.0, [1.0, 2.0, 0.5, 1.0, 3.0]),
])
def test_choice_frequencies_match_formula(utility, eps, sensitivity, measure):
    # Chi-square goodness of fit of 20,000 draws at a fixed seed against
    # P(i) ∝ mu_i exp(eps u_i / (2 Δ)); reject at p < 1e-3.
    # Power: for the first case the correct law is (.452, .274, .166, .101). Forgetting the
    # factor 2 (exp(eps u / Δ)) gives (.644, .237, .087, .032): the expected statistic is
    # n Σ (q - p)^2 / p ≈ 20000 * 0.17 ≈ 3400 ≫ the 3-df critical value 16.3, so a wrong
    # constant fails with certainty; ignoring the measure in the second case shifts the law by
    # more than 0.1 in some cell (statistic in the thousands). The correct law passes with
    # probability 0.999 and the seed is fixed, so the test is deterministic.
    p = _formula(utility, eps, sensitivity, measure)
    counts = _frequencies(utility, eps, sensitivity, measure)
    chi2, pval = stats.chisquare(counts, counts.sum() * p)
    assert pval > 1e-3, (counts, p, chi2)
    # and the factor-2 error would be detected on these very counts
    wrong = _formula(utility, 2 * eps, sensitivity, measure)
    assert stats.chisquare(counts, counts.sum() * wrong).pvalue < 1e-10


def test_zero_measure_never_chosen():
    counts = _frequencies([10.0, 0.0, 0.0], 1.0, 1.0, measure=[0.0, 1.0, 1.0], draws=2000)
    assert counts[0] == 0
    assert counts[1] > 0 and counts[2] > 0


@pytest.mark.parametrize("utility", [[1e6, -1e6, 0.0], [-1e6, -1e6 - 1.0], [1e300, -1e300]])
def test_huge_utilities_do_not_overflow(utility):
    # filterwarnings=error::RuntimeWarning in pyproject turns any overflow into a failure
    i = exponential_mechanism(utility, 1.0, 1.0, random_state=0)
    assert i == int(np.argmax(utility)) or utility == [-1e6, -1e6 - 1.0]
    # the near-tie still follows the formula: P(0) = 1/(1 + e^{-1/2}) ≈ 0.622
    counts = _frequencies([-1e6, -1e6 - 1.0], 1.0, 1.0, draws=4000, seed=5)
    assert abs(counts[0] / 4000 - 1 / (1 + np.exp(-0.5))) < 0.03  # 4 sd of a binomial mean


def test_extreme_eps_over_sensitivity_is_argmax():
    # eps / (2Δ) overflows to inf: treated as the limit (best candidate), no warning
    assert exponential_mechanism([1.0, 3.0, 2.0], 1e300, 1e-300, random_state=0) == 1
    assert exponential_mechanism([1.0, 3.0, 2.0], np.inf, 1.0, random_state=0) == 1


def test_infinite_eps_breaks_ties_uniformly_among_best():
    rng = np.random.default_rng(0)
    picks = [exponential_mechanism([1.0, 5.0, 5.0, 0.0], np.inf, 1.0, random_state=rng)
             for _ in range(400)]
    assert set(picks) == {1, 2}


def test_reproducible_with_seed():
    u = np.linspace(0, 1, 7)
    a = [exponential_mechanism(u, 1.0, 1.0, random_state=s) for s in range(20)]
    b = [exponential_mechanism(u, 1.0, 1.0, random_state=s) for s in range(20)]
    assert a == b


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(utility=[], eps=1.0, sensitivity=1.0), ValueError, "empty"),
    (dict(utility=[1.0, np.nan], eps=1.0, sensitivity=1.0), ValueError, "finite"),
    (dict(utility=[1.0, np.inf], eps=1.0, sensitivity=1.0), ValueError, "finite"),
    (dict(utility=["a", "b"], eps=1.0, sensitivity=1.0), TypeError, "utility"),
    (dict(utility=[1 + 1j, 2.0], eps=1.0, sensitivity=1.0), TypeError, "utility"),
    (dict(utility=[[1.0, 2.0]], eps=1.0, sensitivity=1.0), ValueError, "1-D"),
    (dict(utility=[1.0, 2.0], eps=0.0, sensitivity=1.0), ValueError, "eps"),
    (dict(utility=[1.0, 2.0], eps=-1.0, sensitivity=1.0), ValueError, "eps"),
    (dict(utility=[1.0, 2.0], eps="1", sensitivity=1.0), TypeError, "eps"),
    (dict(utility=[1.0, 2.0], eps=1.0, sensitivity=0.0), ValueError, "sensitivity"),
    (dict(utility=[1.0, 2.0], eps=1.0, sensitivity=np.inf), ValueError, "sensitivity"),
    (dict(utility=[1.0, 2.0], eps=1.0, sensitivity=1.0, measure=[1.0]), ValueError, "measure"),
    (dict(utility=[1.0, 2.0], eps=1.0, sensitivity=1.0, measure=[0.0, 0.0]), ValueError, "measure"),
    (dict(utility=[1.0, 2.0], eps=1.0, sensitivity=1.0, measure=[-1.0, 2.0]), ValueError, "measure"),
    (dict(utility=[1.0, 2.0], eps=1.0, sensitivity=1.0, measure=["x", "y"]), TypeError, "measure"),
    (dict(utility=[1.0, 2.0], eps=1.0, sensitivity=1.0, random_state=-1), ValueError, "random_state"),
    (dict(utility=[1.0, 2.0], eps=1.0, sensitivity=1.0, random_state=1.5), TypeError, "random_state"),
])
def test_input_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        exponential_mechanism(**kwargs)


def test_returns_python_int_and_accepts_numpy_and_bool_measure():
    i = exponential_mechanism(np.array([0.0, 1.0]), 1.0, 1.0, measure=np.array([True, True]),
                              random_state=0)
    assert isinstance(i, int) and i in (0, 1)
