"""scipy.sparse designs through the estimators: privatelr.sklearn.DPLogisticRegression and the
DPpack-style models (privatelr.models). A sparse fit releases the dense fit's coefficients (to
rounding) at the same random_state, predicts the same, accepts CSC and sparse arrays, never
densifies, and refuses (with the fix in the message) what would densify."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from privatelr import SVMDP, LogisticRegressionDP

TOL = 1e-10


def _sparse(n=800, p=12, density=0.15, seed=0, scale=0.5):
    """A CSR design with ``density`` stored values in ``[-scale, scale]`` and labels from a
    logistic model."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, random_state=seed, format="csr")
    X.data = rng.uniform(-scale, scale, X.data.size)
    w0 = rng.normal(size=p) * 2
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ w0) - 0.3))).astype(int)
    return X, y


def _dense(X) -> np.ndarray:
    """The dense copy of a sparse matrix, built from its stored values (``toarray`` may be
    patched to raise)."""
    C = sp.coo_matrix(X)
    out = np.zeros(C.shape)
    np.add.at(out, (C.row, C.col), C.data)
    return out


@pytest.fixture
def no_densify(monkeypatch):
    """``toarray``/``todense`` of a sparse matrix or array with as many rows as the data (every
    data set here has at least 200 rows) raises while it is active; the engine's d x d Hessian
    (d < 200) is made dense on purpose."""
    originals = {}

    def refuse(self, *args, **kwargs):
        if self.shape[0] >= 200:
            raise AssertionError("a sparse X was densified")
        return originals[type(self), "toarray"](self, *args, **kwargs)

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array,
                sp.coo_array):
        originals[cls, "toarray"] = cls.toarray
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)


# -- DPLogisticRegression ---------------------------------------------------------------------

@pytest.fixture
def DPLogisticRegression():
    """The estimator class (scikit-learn is an optional extra: these tests skip without it)."""
    pytest.importorskip("sklearn")
    from privatelr.sklearn import DPLogisticRegression

    return DPLogisticRegression


def _assert_same_estimator(a, b):
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=0, atol=TOL)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=TOL)
    assert a.lambda_used_ == b.lambda_used_
    assert a.n_clipped_ == b.n_clipped_
    assert a.result_.calibration == b.result_.calibration
    assert a.classes_.tolist() == b.classes_.tolist()


@pytest.mark.parametrize("params", [
    dict(method="objective"),
    dict(method="output", eps=2.0),
    dict(method="gaussian", delta=1e-6),
    dict(method="objective", fit_intercept=False, alpha=0.01),
    dict(method="objective", data_norm=0.6, clip=True),     # some rows clipped
], ids=["objective", "output", "gaussian", "no-intercept", "clipped"])
def test_estimator_sparse_fit_equals_dense_fit(params, no_densify, DPLogisticRegression):
    X, y = _sparse(seed=1)
    a = DPLogisticRegression(random_state=3, **params).fit(X, y)
    b = DPLogisticRegression(random_state=3, **params).fit(_dense(X), y)
    _assert_same_estimator(a, b)
    if params.get("clip"):
        assert a.n_clipped_ > 0
    X_test, _ = _sparse(n=300, seed=2)
    for name in ("decision_function", "predict_proba", "predict_log_proba"):
        np.testing.assert_allclose(getattr(a, name)(X_test), getattr(b, name)(_dense(X_test)),
                                   rtol=0, atol=TOL, err_msg=name)
        np.testing.assert_allclose(getattr(a, name)(X_test), getattr(a, name)(_dense(X_test)),
                                   rtol=0, atol=TOL, err_msg=name)
    np.testing.assert_array_equal(a.predict(X_test), b.predict(_dense(X_test)))


def test_estimator_sample_weights_and_declared_classes_on_sparse(no_densify, DPLogisticRegression):
    X, y = _sparse(seed=4)
    w = np.random.default_rng(5).uniform(0, 2, X.shape[0])
    labels = np.where(y == 1, "yes", "no")
    kw = dict(eps=1.0, sample_weight_bound=2.0, classes=["no", "yes"], random_state=0)
    a = DPLogisticRegression(**kw).fit(X, labels, sample_weight=w)
    b = DPLogisticRegression(**kw).fit(_dense(X), labels, sample_weight=w)
    _assert_same_estimator(a, b)
    assert set(a.predict(X)) <= {"no", "yes"}


@pytest.mark.parametrize("method", ["objective", "output"])
def test_estimator_more_than_two_classes_on_sparse(method, no_densify, DPLogisticRegression):
    X, _ = _sparse(seed=8)
    rng = np.random.default_rng(9)
    y = np.array(["a", "b", "c"])[np.argmax(X @ rng.normal(size=(X.shape[1], 3)) * 3, axis=1)]
    kw = dict(eps=2.0, method=method, classes=["a", "b", "c"], random_state=1)
    a = DPLogisticRegression(**kw).fit(X, y)
    b = DPLogisticRegression(**kw).fit(_dense(X), y)
    assert a.coef_.shape == (3, X.shape[1])
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=0, atol=TOL)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=TOL)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(_dense(X)), rtol=0, atol=TOL)
    np.testing.assert_array_equal(a.predict(X), b.predict(_dense(X)))


@pytest.mark.parametrize("fmt", [sp.csc_matrix, sp.csr_array, sp.csc_array, sp.coo_matrix])
def test_estimator_accepts_csc_and_sparse_arrays(fmt, no_densify, DPLogisticRegression):
    X, y = _sparse(seed=6)
    ref = DPLogisticRegression(random_state=0).fit(X, y)
    got = DPLogisticRegression(random_state=0).fit(fmt(X), y)
    np.testing.assert_array_equal(got.coef_, ref.coef_)
    np.testing.assert_array_equal(got.intercept_, ref.intercept_)
    np.testing.assert_array_equal(got.predict_proba(fmt(X)), ref.predict_proba(X))


def test_estimator_advertises_sparse_input(DPLogisticRegression):
    tags = DPLogisticRegression().__sklearn_tags__()
    assert tags.input_tags.sparse is True


def test_estimator_sparse_refusals_name_the_fix(DPLogisticRegression):
    X, y = _sparse(seed=7, scale=3.0)         # rows above data_norm=1
    with pytest.raises(ValueError, match="data_norm=1.*clip=True"):
        DPLogisticRegression(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="data_norm=1.*clip=True"):
        DPLogisticRegression().check_fit(sp.csc_matrix(X), y)
    bad = X.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPLogisticRegression(clip=True).fit(bad, y)
    fitted = DPLogisticRegression(clip=True, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :-1])


# -- DPpack-style models ---------------------------------------------------------------------

def _bounded(n=600, p=8, seed=0):
    """Sparse data with values in [-3, 3] and public bounds containing 0 (some narrower than the
    data, so stored values are clipped; one column bounded by [0, 2], one by [-1.5, 0])."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.2, random_state=seed, format="csr")
    X.data = rng.uniform(-3, 3, X.data.size)
    upper = np.full(p, 2.5)
    lower = np.full(p, -2.5)
    upper[0], lower[0] = 2.0, 0.0
    upper[1], lower[1] = 0.0, -1.5
    w0 = rng.normal(size=p)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ w0)))).astype(int)
    return X, y, upper, lower


@pytest.mark.parametrize("model", [
    lambda: LogisticRegressionDP("l2", eps=1.0, gamma=20.0),
    lambda: LogisticRegressionDP("l2", eps=1.0, gamma=5.0, perturbation_method="output"),
    lambda: LogisticRegressionDP("l2", eps=1.0, gamma=20.0, perturbation_method="gaussian",
                                 delta=1e-6),
    lambda: LogisticRegressionDP("l2", eps=np.inf, gamma=20.0),
    lambda: SVMDP("l2", eps=1.0, gamma=20.0),
], ids=["objective", "output", "gaussian", "non-private", "svm-linear"])
@pytest.mark.parametrize("add_bias", [False, True])
def test_model_sparse_fit_equals_dense_fit(model, add_bias, no_densify):
    X, y, upper, lower = _bounded(seed=1)
    a = model().fit(X, y, upper, lower, add_bias=add_bias, random_state=2)
    b = model().fit(_dense(X), y, upper, lower, add_bias=add_bias, random_state=2)
    np.testing.assert_allclose(a.coeff, b.coeff, rtol=0, atol=TOL)
    assert a.result_.calibration == b.result_.calibration
    X_test, _, _, _ = _bounded(n=300, seed=3)
    for raw in (False, True):
        np.testing.assert_allclose(a.predict(X_test, add_bias=add_bias, raw_value=raw),
                                   b.predict(_dense(X_test), add_bias=add_bias, raw_value=raw),
                                   rtol=0, atol=TOL)
    np.testing.assert_array_equal(a.predict(X_test, add_bias=add_bias),
                                  a.predict(_dense(X_test), add_bias=add_bias))


def test_model_sparse_weights_and_csc(no_densify):
    X, y, upper, lower = _bounded(seed=4)
    w = np.random.default_rng(0).uniform(0, 3, X.shape[0])      # some clipped to the bound 2
    kw = dict(add_bias=True, weights=w, weights_upper_bound=2.0, random_state=1)
    ref = LogisticRegressionDP(eps=1.0, gamma=20.0).fit(_dense(X), y, upper, lower, **kw)
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.csr_array, sp.csc_array):
        got = LogisticRegressionDP(eps=1.0, gamma=20.0).fit(fmt(X), y, upper, lower, **kw)
        np.testing.assert_allclose(got.coeff, ref.coeff, rtol=0, atol=TOL)
        np.testing.assert_allclose(got.predict(fmt(X), add_bias=True, raw_value=True),
                                   ref.predict(_dense(X), add_bias=True, raw_value=True),
                                   rtol=0, atol=TOL)


def test_model_refuses_bounds_that_would_densify_and_names_the_fix(no_densify):
    X, y, upper, lower = _bounded(seed=5)
    lower = lower.copy()
    lower[3] = 0.5                            # zeros of column 3 would become 0.5
    model = LogisticRegressionDP(eps=1.0, gamma=20.0)
    with pytest.raises(ValueError, match=r"lower_bounds\[j\] <= 0 <= upper_bounds\[j\].*"
                                         r"column 3 has bounds \[0\.5, 2\.5\].*"
                                         r"Set lower_bounds\[j\] = 0"):
        model.fit(X, y, upper, lower)
    assert model.coeff is None                # nothing fitted, nothing kept
    upper2 = upper.copy()
    upper2[5], lower[5] = -0.2, -1.0          # a negative range: two columns in all
    with pytest.raises(ValueError, match=r"2 columns in all"):
        model.fit(X, y, upper2, lower)
    lower[3] = 0.0                            # the fix: same scale, zeros stay zero
    assert model.fit(X, y, upper, np.minimum(lower, 0.0), random_state=0).coeff.shape == (8,)
    # the dense design takes any bounds (the map densifies nothing there)
    lower[3] = 0.5
    assert LogisticRegressionDP(eps=1.0, gamma=20.0).fit(
        _dense(X), y, upper, lower, random_state=0).coeff.shape == (8,)


def test_model_sparse_gaussian_kernel_refused_before_drawing(no_densify):
    X, y, upper, lower = _bounded(seed=6)
    svm = SVMDP(eps=1.0, gamma=20.0, kernel="Gaussian", D=20)
    with pytest.raises(ValueError, match="kernel='Gaussian'.*X.toarray"):
        svm.fit(X, y, upper, lower, random_state=0)
    assert svm.omega is None and svm.kernel_param is None and svm.coeff is None
    svm.fit(_dense(X), y, upper, lower, random_state=0)
    with pytest.raises(ValueError, match="kernel='Gaussian'"):
        svm.predict(X)


def test_model_sparse_prediction_checks_its_input():
    X, y, upper, lower = _bounded(seed=7)
    model = LogisticRegressionDP(eps=1.0, gamma=20.0).fit(X, y, upper, lower, random_state=0)
    bad = X.copy()
    bad.data[0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.predict(bad)
    with pytest.raises(ValueError, match="columns"):
        model.predict(X[:, :-1])
    with pytest.raises(ValueError, match="NaN or infinite"):
        LogisticRegressionDP(eps=1.0, gamma=20.0).fit(bad, y, upper, lower)


@pytest.mark.parametrize("selection", ["split", "random_stopping"])
def test_private_tuning_on_sparse_equals_dense(selection, DPLogisticRegression):
    from privatelr import tune_classification_model

    X, y = _sparse(n=1200, p=8, density=0.3, seed=11)
    X.data = np.abs(X.data)                      # inside the public bounds [0, 1]
    for make, fit_args, attr in (
            (lambda g: LogisticRegressionDP(eps=1.0, gamma=g),
             (np.ones(8), np.zeros(8)), "coeff"),
            (lambda g: DPLogisticRegression(eps=1.0, alpha=g, data_norm=3, classes=[0, 1]),
             (), "coef_")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # small gammas: 'adjusted lambda' warnings
            a = tune_classification_model([make(g) for g in (0.01, 0.1, 1)], X, y, *fit_args,
                                          random_state=0, selection=selection)
            b = tune_classification_model([make(g) for g in (0.01, 0.1, 1)], _dense(X), y,
                                          *fit_args, random_state=0, selection=selection)
        assert a.tuning_.chosen == b.tuning_.chosen
        np.testing.assert_allclose(getattr(a, attr), getattr(b, attr), rtol=0, atol=TOL)
