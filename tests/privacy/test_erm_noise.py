"""The noise laws of the engine, checked directly and end to end.

Power argument (shared by the tests below). A one-sample Kolmogorov–Smirnov test with N draws
rejects at level alpha when sup|F_N - F| exceeds a critical distance (scipy.stats.kstwo: 0.111
for N = 400 and 0.035 for N = 4000 at alpha = 1e-4). For the Gamma radius law with shape d = 3 the
sup-distance between the claimed law and the mistakes we guard against is: scale x2 -> 0.44,
scale x or / sqrt(2) (the intercept left out of, or wrongly added to, the norm bound) -> 0.23,
shape d - 1 -> 0.27: at least twice the critical distance, so each of those mistakes is rejected
with overwhelming probability (the empirical distance concentrates within ~0.05 of it) while the true
law passes at 1e-3 (a fixed seed makes the outcome deterministic; it was not tuned).
Each test asserts both directions: the correct law is accepted AND the wrong ones are rejected on
the same sample, so a test cannot pass by having no power.
"""

import numpy as np
import pytest
from scipy import stats

from privatelr import erm
from privatelr.losses import LogisticLoss
from privatelr.mechanisms import check_random_state, sphere_gamma_noise
from privatelr.objective import ERMObjective

ACCEPT, REJECT = 1e-3, 1e-4


def _check_radius_law(radii, d, scale):
    assert stats.kstest(radii, stats.gamma(d, scale=scale).cdf).pvalue > ACCEPT
    for wrong in (stats.gamma(d, scale=2 * scale), stats.gamma(d, scale=np.sqrt(2) * scale),
                  stats.gamma(d, scale=scale / np.sqrt(2)), stats.gamma(d - 1, scale=scale)):
        assert stats.kstest(radii, wrong.cdf).pvalue < REJECT


def _check_uniform_direction(vectors):
    d = vectors.shape[1]
    u = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    # each coordinate of a uniform unit vector: (u_j + 1)/2 ~ Beta((d-1)/2, (d-1)/2)
    beta = stats.beta((d - 1) / 2, (d - 1) / 2)
    pvals = [stats.kstest((u[:, j] + 1) / 2, beta.cdf).pvalue for j in range(d)]
    assert min(pvals) > ACCEPT / d


def test_sphere_noise_radius_and_direction():
    rng = np.random.default_rng(20261122)
    d, s = 3, 1.7
    draws = np.array([sphere_gamma_noise(d, s, rng) for _ in range(4000)])
    _check_radius_law(np.linalg.norm(draws, axis=1), d, s)
    _check_uniform_direction(draws)


def test_direction_test_has_power():
    # an axis-stretched direction (a plausible bug: forgetting to normalise a non-isotropic draw)
    rng = np.random.default_rng(5)
    v = rng.standard_normal((4000, 3)) * np.array([1.0, 1.0, 1.6])
    with pytest.raises(AssertionError):
        _check_uniform_direction(v)


def test_zero_scale_and_reproducibility():
    assert not sphere_gamma_noise(4, 0.0, np.random.default_rng(0)).any()
    a = sphere_gamma_noise(4, 1.0, check_random_state(7))
    b = sphere_gamma_noise(4, 1.0, check_random_state(7))
    np.testing.assert_array_equal(a, b)


def _data(n=40, d=3, seed=0, norm=1.0, intercept=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X *= (norm * rng.uniform(0.3, 1.0, size=(n, 1))) / np.linalg.norm(X, axis=1, keepdims=True)
    if intercept:  # covariates in the unit ball plus a column of ones: rows of norm <= sqrt(2)
        X = np.c_[np.ones(n), X[:, 1:]]
    y = (rng.uniform(size=n) < 0.5).astype(int)
    return X, y


def _recovered_noise(X, y, res, weights=None, loss=None):
    """b = -n * grad J(w_priv): the minimiser of J + b'w/n has zero total gradient."""
    obj = ERMObjective(X, np.where(y == 1, 1.0, -1.0), loss or LogisticLoss(), res.lambda_,
                       weights=weights)
    _, g, _ = obj.evaluate(res.coef, False)
    return -X.shape[0] * g


@pytest.mark.parametrize("case", ["ok", "adjusted", "weights", "intercept", "huber"])
def test_objective_perturbation_noise_law_end_to_end(case):
    n, d, N = 40, 3, 400
    kw = dict(lambda_=0.05, eps=1.0)
    weights, loss = None, None
    X, y = _data(n, d)
    if case == "adjusted":
        kw["lambda_"] = 1e-4
    if case == "weights":
        weights = np.random.default_rng(9).uniform(0, 2.0, size=n)
        kw.update(weights=weights, weights_bound=2.0)
    if case == "intercept":
        X, y = _data(n, d, intercept=True)
        kw["data_norm"] = np.sqrt(2.0)
    if case == "huber":
        kw.update(loss="huber", h=0.25)
        from privatelr.losses import HuberLoss
        loss = HuberLoss(0.25)
    rng = np.random.default_rng(11)
    bs, res = [], None
    for _ in range(N):
        res = erm.fit(X, y, random_state=rng, **kw)
        assert res.convergence == 0, res.message
        bs.append(_recovered_noise(X, y, res, weights, loss))
    bs = np.array(bs)
    expected_scale = 2.0 * res.weights_bound * res.data_norm / res.eps_eff
    assert res.noise_scale == pytest.approx(expected_scale)
    if case == "adjusted":
        assert res.status == "adjusted lambda" and res.eps_eff == 0.5
    _check_radius_law(np.linalg.norm(bs, axis=1), d, expected_scale)
    _check_uniform_direction(bs)


def test_output_perturbation_noise_law_end_to_end():
    n, d, N, lam, eps = 40, 3, 400, 0.05, 0.7
    X, y = _data(n, d)
    exact = erm.fit(X, y, lambda_=lam, eps=0).coef
    rng = np.random.default_rng(12)
    noise = np.array([erm.fit(X, y, lambda_=lam, eps=eps, method="output", random_state=rng).coef
                      - exact for _ in range(N)])
    scale = 2.0 / (n * lam * eps)
    _check_radius_law(np.linalg.norm(noise, axis=1), d, scale)
    _check_uniform_direction(noise)


def test_noise_is_not_stored_in_the_result():
    X, y = _data()
    res = erm.fit(X, y, lambda_=0.05, eps=1.0, random_state=0)
    fields = {k: v for k, v in vars(res).items()}
    for v in fields.values():
        if isinstance(v, np.ndarray) and v.shape == (X.shape[1],):
            assert v is res.coef
