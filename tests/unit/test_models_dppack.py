"""DPpack-style model objects (privatelr.models): scaling, gamma mapping, noise, prediction."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from privatelr import SVMDP, LogisticRegressionDP, erm
from privatelr.mechanisms import gaussian_fourier_features


def _bands(N=200, seed=0):
    """The two Gaussian bands of DPpack's examples (x1 = 3t, x2 = m - t, m ~ N(∓0.2, 0.1))."""
    rng = np.random.default_rng(seed)
    t = np.linspace(-0.25, 0.25, N)
    X = np.vstack([np.c_[3 * t, rng.normal(mu, 0.1, N) - t] for mu in (-0.2, 0.2)])
    y = np.repeat([0, 1], N)
    test = np.arange(0, 2 * N, 10)
    keep = np.setdiff1d(np.arange(2 * N), test)
    return X[keep], y[keep], X[test], y[test]


def _engine_results(monkeypatch):
    """Collect the engine's full ERMResults (the models keep only a FitRelease)."""
    seen, original = [], erm.fit_rows

    def spy(*args, **kwargs):
        seen.append(original(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(erm, "fit_rows", spy)
    return seen


def _scaled_by_hand(X, upper, lower, add_bias):
    """Independent transcription of DPpack's preprocessing: clip, bias, divide by max|bound|·√p."""
    X = np.minimum(np.maximum(X, lower), upper)
    if add_bias:
        X = np.c_[np.ones(len(X)), X]
        upper, lower = np.r_[1.0, upper], np.r_[1.0, lower]
    s = np.max(np.abs(np.c_[lower, upper]), axis=1) * np.sqrt(X.shape[1])
    return X / s, s


@pytest.fixture
def data3():
    rng = np.random.default_rng(11)
    n = 240
    X = np.c_[rng.uniform(-3, 5, n), rng.normal(0, 2, n), rng.uniform(0, 10, n)]
    z = 0.8 * X[:, 0] - 0.5 * X[:, 1] + 0.2 * X[:, 2] - 1.0
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(int)
    return X, y, np.array([5.0, 4.0, 10.0]), np.array([-3.0, -4.0, 0.0])


@pytest.mark.parametrize("add_bias", [False, True])
def test_logistic_eps_inf_equals_engine_on_scaled_data(data3, add_bias):
    X, y, ub, lb = data3  # column 1 has values outside [-4, 4]: they are clipped
    gamma = 2.5
    model = LogisticRegressionDP("l2", eps=np.inf, gamma=gamma).fit(X, y, ub, lb, add_bias=add_bias)
    Xs, s = _scaled_by_hand(X, ub, lb, add_bias)
    assert np.all(np.linalg.norm(Xs, axis=1) <= 1 + 1e-12)
    ref = erm.fit(Xs, y, lambda_=gamma / len(y), eps=np.inf)  # gamma is lambda * n
    np.testing.assert_allclose(model.coeff, ref.coef / s, rtol=1e-8, atol=1e-10)
    assert model.coeff.shape == (X.shape[1] + add_bias,)
    # predictions in original units agree with the scaled model
    Xp = np.c_[np.ones(len(X)), X] if add_bias else X
    Xc = np.c_[np.ones(len(X)), np.clip(X, lb, ub)] if add_bias else np.clip(X, lb, ub)
    np.testing.assert_allclose(Xc @ model.coeff, (Xs @ ref.coef), rtol=1e-9, atol=1e-9)
    p = model.predict(X, add_bias=add_bias, raw_value=True)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-(Xp @ model.coeff))), rtol=1e-12)
    np.testing.assert_array_equal(model.predict(X, add_bias=add_bias), (p > 0.5).astype(int))


def test_values_outside_bounds_are_clipped(data3, monkeypatch):
    X, y, ub, lb = data3
    engine = _engine_results(monkeypatch)
    a = LogisticRegressionDP(eps=np.inf, gamma=1.0).fit(X, y, ub, lb)
    b = LogisticRegressionDP(eps=np.inf, gamma=1.0).fit(np.clip(X, lb, ub), y, ub, lb)
    np.testing.assert_allclose(a.coeff, b.coeff, rtol=1e-12)
    # the scaled rows really lie in the unit ball: the engine never had to clip a row
    assert engine[0].n_exceeding == 0


@pytest.mark.parametrize("cls, c", [(LogisticRegressionDP, 0.25), (SVMDP, 1.0)])
def test_objective_calibration_is_dppacks(data3, cls, c):
    # DPpack: eps' = eps - log(1 + 2c/gamma + c^2/gamma^2) with gamma = lambda * n, B = 1
    X, y, ub, lb = data3
    gamma, eps = 5.0, 1.3  # eps' > 0 for both losses
    m = cls(eps=eps, gamma=gamma).fit(X, y, ub, lb, random_state=0)
    cal = m.result_.calibration
    assert cal.data_norm == 1.0 and cal.weights_bound == 1.0
    assert cal.lambda_ == pytest.approx(gamma / len(y))
    assert cal.eps_eff == pytest.approx(eps - np.log(1 + 2 * c / gamma + c**2 / gamma**2))
    assert cal.noise_scale == pytest.approx(2 / cal.eps_eff)


def test_objective_small_eps_uses_dppacks_delta(data3):
    # eps' <= 0: DPpack adds Delta so the total regulariser is c / (n (e^{eps/4} - 1))
    X, y, ub, lb = data3
    m = LogisticRegressionDP(eps=0.1, gamma=0.01).fit(X, y, ub, lb, random_state=0)
    n = len(y)
    assert m.result_.status.startswith("adjusted lambda")
    assert m.result_.lambda_ == pytest.approx(0.25 / (n * np.expm1(0.1 / 4)))
    assert m.result_.eps_eff == pytest.approx(0.05)


@pytest.mark.parametrize("weights_bound", [None, 2.0])
def test_output_perturbation_noise_norm_law(weights_bound):
    # Released scaled coefficients minus the exact minimiser = b with
    # ||b|| ~ Gamma(d, 2A/(gamma eps)) (DPpack's rate gamma*eps/(2A)). KS test on 300 fits at
    # fixed seeds, reject at p < 1e-3. Power: with the noise off by 2x (or gamma not mapped to
    # lambda*n, which is off by a factor n = 90) the KS distance between Gamma(2, s) and
    # Gamma(2, 2s) is 0.26; the critical value at n = 300 is 1.95/sqrt(300) = 0.11, so it fails.
    rng = np.random.default_rng(3)
    n = 90
    X = rng.uniform(-1, 1, size=(n, 2))
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    w = rng.uniform(0, 2, n) if weights_bound else None
    gamma, eps = 3.0, 2.0
    exact = SVMDP(eps=np.inf, gamma=gamma).fit(X, y, [1, 1], [-1, -1], weights=w,
                                               weights_upper_bound=weights_bound)
    norms = []
    for s in range(300):
        m = SVMDP(eps=eps, gamma=gamma, perturbation_method="output").fit(
            X, y, [1, 1], [-1, -1], weights=w, weights_upper_bound=weights_bound, random_state=s)
        norms.append(np.linalg.norm(m.result_.coef - exact.result_.coef))
    A = weights_bound or 1.0
    scale = 2 * A / (gamma * eps)
    assert stats.kstest(norms, stats.gamma(a=2, scale=scale).cdf).pvalue > 1e-3
    assert stats.kstest(norms, stats.gamma(a=2, scale=2 * scale).cdf).pvalue < 1e-6


def test_same_seed_same_coefficients(data3):
    X, y, ub, lb = data3
    a = LogisticRegressionDP(eps=1.0, gamma=1.0).fit(X, y, ub, lb, random_state=7).coeff
    b = LogisticRegressionDP(eps=1.0, gamma=1.0).fit(X, y, ub, lb, random_state=7).coeff
    c = LogisticRegressionDP(eps=1.0, gamma=1.0).fit(X, y, ub, lb, random_state=8).coeff
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_svm_linear_eps_inf_equals_engine_huber(data3):
    X, y, ub, lb = data3
    m = SVMDP(eps=np.inf, gamma=0.5, huber_h=0.3).fit(X, y, ub, lb, add_bias=True)
    Xs, s = _scaled_by_hand(X, ub, lb, True)
    ref = erm.fit(Xs, y, lambda_=0.5 / len(y), eps=np.inf, loss="huber", h=0.3)
    np.testing.assert_allclose(m.coeff, ref.coef / s, rtol=1e-8, atol=1e-10)
    raw = m.predict(X, add_bias=True, raw_value=True)
    np.testing.assert_allclose(raw, np.c_[np.ones(len(X)), X] @ m.coeff)
    np.testing.assert_array_equal(m.predict(X, add_bias=True), (raw > 0).astype(int))


def test_weights_semantics(data3):
    X, y, ub, lb = data3
    w = np.linspace(0, 3, len(y))
    a = LogisticRegressionDP(eps=np.inf, gamma=1.0).fit(X, y, ub, lb, weights=w,
                                                        weights_upper_bound=2.0)
    b = LogisticRegressionDP(eps=np.inf, gamma=1.0).fit(X, y, ub, lb, weights=np.minimum(w, 2.0),
                                                        weights_upper_bound=2.0)
    np.testing.assert_allclose(a.coeff, b.coeff)  # weights above the bound are clipped
    assert a.result_.weights_bound == 2.0
    with pytest.raises(ValueError, match="weights_upper_bound"):
        LogisticRegressionDP(eps=1.0, gamma=1.0).fit(X, y, ub, lb, weights=w)
    with pytest.raises(ValueError, match="non-negative"):
        LogisticRegressionDP(eps=1.0, gamma=1.0).fit(X, y, ub, lb, weights=w - 1,
                                                     weights_upper_bound=2.0)
    with pytest.raises(ValueError, match="length"):
        LogisticRegressionDP(eps=1.0, gamma=1.0).fit(X, y, ub, lb, weights=w[:5],
                                                     weights_upper_bound=2.0)


def test_gaussian_features_approximate_the_kernel():
    # E[v(x).v(x')] = exp(-k ||x - x'||^2). With D = 20000 the Monte Carlo error of the mean of
    # 2 cos cos terms is about 0.7/sqrt(D) = 0.005; tolerance 0.03. A frequency variance of k
    # instead of 2k would give exp(-k||d||^2 / 2): 0.61 instead of 0.37 at k||d||^2 = 1.
    rng = np.random.default_rng(0)
    D, k = 20_000, 0.5
    omega, phase = gaussian_fourier_features(2, D, k, rng)
    x, x2 = np.array([0.3, -0.2]), np.array([0.3 + np.sqrt(2.0), -0.2])  # ||d||^2 = 2
    v = np.sqrt(2 / D) * np.cos(x @ omega + phase)
    v2 = np.sqrt(2 / D) * np.cos(x2 @ omega + phase)
    assert v @ v2 == pytest.approx(np.exp(-k * 2.0), abs=0.03)
    assert abs(v @ v - 1.0) < 0.03


def test_gaussian_svm_predicts_bands_at_large_eps(monkeypatch):
    X, y, Xt, yt = _bands()
    errors = []
    engine = _engine_results(monkeypatch)
    for s in range(5):
        m = SVMDP(eps=100.0, gamma=1.0, kernel="Gaussian", D=50).fit(
            X, y, [1, 1], [-1, -1], random_state=s)
        errors.append(np.mean(m.predict(Xt) != yt))
        assert m.omega.shape == (2, 50) and m.phase.shape == (50,)
        assert m.kernel_param == 0.5  # DPpack's default 1/p
        assert engine[-1].n_exceeding == 0  # feature rows in the unit ball by construction
    assert max(errors) <= 0.05, errors
    # the non-private kernel fit is essentially perfect on these bands
    m = SVMDP(eps=np.inf, gamma=1e-3, kernel="Gaussian", D=50).fit(X, y, [1, 1], [-1, -1],
                                                                    random_state=0)
    assert np.mean(m.predict(Xt) != yt) <= 0.025
    raw = m.predict(Xt, raw_value=True)
    np.testing.assert_allclose(raw, m.x_to_v(Xt) @ m.coeff)


def test_gaussian_svm_with_bias_and_fixed_kernel_param():
    X, y, Xt, yt = _bands(N=60)
    m = SVMDP(eps=np.inf, gamma=0.01, kernel="Gaussian", D=30, kernel_param=2.0).fit(
        X, y, [1, 1], [-1, -1], add_bias=True, random_state=1)
    assert m.omega.shape == (3, 30) and m.kernel_param == 2.0
    assert m.predict(Xt, add_bias=True).shape == (len(Xt),)
    with pytest.raises(ValueError, match="add_bias"):
        m.predict(Xt)


def test_dataframe_and_column_matrix_labels(data3):
    X, y, ub, lb = data3
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    a = LogisticRegressionDP(eps=np.inf, gamma=1.0).fit(df, y.reshape(-1, 1), ub, lb)
    b = LogisticRegressionDP(eps=np.inf, gamma=1.0).fit(X, y.astype(bool), ub, lb)
    np.testing.assert_allclose(a.coeff, b.coeff)
    np.testing.assert_array_equal(a.predict(df), b.predict(X))


def test_fit_returns_self_and_repr(data3):
    X, y, ub, lb = data3
    m = LogisticRegressionDP("l2", 1.0, 2.0, "output")
    assert m.fit(X, y, ub, lb, random_state=0) is m
    assert "LogisticRegressionDP" in repr(m) and "output" in repr(m)
    assert m.eps == 1.0 and m.gamma == 2.0
    assert "Gaussian" in repr(SVMDP(eps=1, gamma=1, kernel="Gaussian", D=5))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(gamma=1.0), TypeError, "eps"),
    (dict(eps=1.0), TypeError, "gamma"),
    (dict(eps=0.0, gamma=1.0), ValueError, "eps"),
    (dict(eps=1.0, gamma=0.0), ValueError, "gamma"),
    (dict(eps=1.0, gamma=-1.0), ValueError, "gamma"),
    (dict(eps=1.0, gamma=np.inf), ValueError, "gamma"),
    (dict(regularizer="l1", eps=1.0, gamma=1.0), ValueError, "regularizer"),
    (dict(eps=1.0, gamma=1.0, perturbation_method="input"), ValueError, "perturbation_method"),
])
def test_constructor_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        LogisticRegressionDP(**kwargs)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(kernel="rbf"), ValueError, "kernel"),
    (dict(kernel="Gaussian"), ValueError, "D"),
    (dict(kernel="Gaussian", D=0), ValueError, "D"),
    (dict(kernel="Gaussian", D=2.5), TypeError, "D"),
    (dict(kernel="Gaussian", D=5, kernel_param=0.0), ValueError, "kernel_param"),
    (dict(huber_h=0.0), ValueError, "huber_h"),
    (dict(huber_h=0.8), ValueError, "huber_h"),
])
def test_svm_constructor_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        SVMDP(eps=1.0, gamma=1.0, **kwargs)


@pytest.mark.parametrize("mutate, exc, match", [
    (lambda X, y, ub, lb: (X, y + 1, ub, lb), ValueError, "0 and 1"),
    (lambda X, y, ub, lb: (X, 2 * y - 1, ub, lb), ValueError, "0 and 1"),
    (lambda X, y, ub, lb: (X, y[:-1], ub, lb), ValueError, "labels"),
    (lambda X, y, ub, lb: (X, y.astype(str), ub, lb), TypeError, "y"),
    (lambda X, y, ub, lb: (X, y, ub[:2], lb), ValueError, "upper_bounds"),
    (lambda X, y, ub, lb: (X, y, ub, lb[:2]), ValueError, "lower_bounds"),
    (lambda X, y, ub, lb: (X, y, lb, ub), ValueError, "exceed"),
    (lambda X, y, ub, lb: (X, y, np.r_[ub[:2], np.inf], lb), ValueError, "finite"),
    (lambda X, y, ub, lb: (X, y, np.r_[ub[:2], 0.0], np.r_[lb[:2], 0.0]), ValueError, "column 2"),
    (lambda X, y, ub, lb: (X, y, ["a", "b", "c"], lb), TypeError, "upper_bounds"),
    (lambda X, y, ub, lb: (np.where(X > 4, np.nan, X), y, ub, lb), ValueError, "NaN"),
])
def test_fit_validation(data3, mutate, exc, match):
    args = mutate(*data3)
    with pytest.raises(exc, match=match):
        LogisticRegressionDP(eps=1.0, gamma=1.0).fit(*args)


def test_predict_validation(data3):
    X, y, ub, lb = data3
    m = LogisticRegressionDP(eps=1.0, gamma=1.0)
    with pytest.raises(RuntimeError, match="fit"):
        m.predict(X)
    m.fit(X, y, ub, lb, random_state=0)
    with pytest.raises(ValueError, match="columns"):
        m.predict(X[:, :2])
    with pytest.raises(ValueError, match="add_bias"):
        m.predict(X, add_bias=True)
    with pytest.raises(TypeError, match="add_bias"):
        m.predict(X, add_bias="yes")
    with pytest.raises(TypeError, match="add_bias"):
        m.fit(X, y, ub, lb, add_bias=1)
