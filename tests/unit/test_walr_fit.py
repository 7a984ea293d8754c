"""The WALR training side: walr_fit (label-blind Newton and hybrid solvers) and walr()."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.optimize
from scipy.special import expit

from privatelr import WALRResult, erm, noisy_dot_product, walr, walr_fit


def _data(n=2000, seed=0, weighted=True):
    rng = np.random.default_rng(seed)
    X = np.c_[np.ones(n), rng.uniform(size=(n, 3))]
    beta = np.array([-1.5, 2.0, -1.0, 0.5])
    y = (rng.uniform(size=n) < expit(X @ beta)).astype(int)
    w = rng.uniform(0.2, 2.0, size=n) if weighted else None
    return X, y, w


def _weighted_lr_scipy(X, y, w, lam):
    """Independent weighted logistic regression: scipy trust-exact on the averaged NLL."""
    n = X.shape[0]

    def f(b):
        z = X @ b
        return (w @ (np.logaddexp(0, z) - y * z)) / n + 0.5 * lam * b @ b

    def g(b):
        return X.T @ (w * (expit(X @ b) - y)) / n + lam * b

    def h(b):
        p = expit(X @ b)
        return (X * (w * p * (1 - p))[:, None]).T @ X / n + lam * np.eye(X.shape[1])

    res = scipy.optimize.minimize(f, np.zeros(X.shape[1]), jac=g, hess=h, method="trust-exact",
                                  options={"gtol": 1e-13})
    return res.x


# ------------------------------------------------------------------------------- label blindness
def test_walr_fit_takes_no_labels():
    params = set(inspect.signature(walr_fit).parameters)
    assert not params & {"y", "labels", "label", "target", "response"}
    X, y, w = _data(300)
    rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0, random_state=0)
    with pytest.raises(TypeError):
        walr_fit(X, rel, y=y)  # there is nowhere to pass them


@pytest.mark.parametrize("solver", ["newton", "hybrid"])
def test_label_permutation_with_the_same_release_gives_the_same_model(solver):
    X, y, w = _data(1000, seed=4)
    y_perm = np.random.default_rng(9).permutation(y)
    assert (y_perm != y).any()
    rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0,
                            random_state=1)
    # data sets (X, w, y) and (X, w, y_perm): the trainer sees only X, w and the release,
    # so with the same release it must return the same model bit for bit
    fits = [walr_fit(X, rel, weights=w, lambda_=1e-3, solver=solver, random_state=5)
            for _labels in (y, y_perm)]
    np.testing.assert_array_equal(fits[0].coef, fits[1].coef)
    # ... and the labels do matter through the release: a release of y_perm gives another model
    rel_perm = noisy_dot_product(X, y_perm, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0,
                                 random_state=1)
    other = walr_fit(X, rel_perm, weights=w, lambda_=1e-3, solver=solver, random_state=5)
    assert np.abs(other.coef - fits[0].coef).max() > 0.1


# ----------------------------------------------------------------- sigma -> 0: non-private LR
def test_newton_equals_weighted_nonprivate_lr_at_positive_lambda():
    X, y, w = _data()
    rel = noisy_dot_product(X, y, eps=math.inf, delta=1e-6, weights=w, weights_bound=2.0)
    fit = walr_fit(X, rel, weights=w, lambda_=1e-3, solver="newton")
    ref = erm.fit(X, y, lambda_=1e-3, eps=0, weights=w, weights_bound=2.0)
    assert fit.status == "ok" and fit.converged
    np.testing.assert_allclose(fit.coef, ref.coef, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.coef, _weighted_lr_scipy(X, y, w, 1e-3), rtol=0, atol=1e-8)


def test_newton_equals_weighted_nonprivate_lr_at_zero_lambda():
    X, y, w = _data(seed=2)
    rel = noisy_dot_product(X, y, eps=math.inf, delta=1e-6, weights=w, weights_bound=2.0)
    fit = walr_fit(X, rel, weights=w, lambda_=0.0, solver="newton")
    assert fit.status == "ok"
    np.testing.assert_allclose(fit.coef, _weighted_lr_scipy(X, y, w, 0.0), rtol=0, atol=1e-8)


def test_large_eps_release_approaches_the_nonprivate_fit():
    X, y, w = _data(seed=3)
    exact = walr_fit(X, noisy_dot_product(X, y, eps=math.inf, delta=1e-6, weights=w,
                                          weights_bound=2.0), weights=w, solver="newton")
    errs = []
    for eps in (10.0, 1e4, 1e8):
        rel = noisy_dot_product(X, y, eps=eps, delta=1e-6, weights=w, weights_bound=2.0,
                                random_state=0)
        errs.append(np.linalg.norm(walr_fit(X, rel, weights=w, solver="newton").coef - exact.coef))
    # for large eps the analytic sigma behaves like Delta / sqrt(2 eps) (it is 1.0003 Delta /
    # sqrt(2 eps) at eps = 1e8), so the error shrinks about 100-fold per 1e4 in eps
    assert errs[0] > 30 * errs[1] > 900 * errs[2] and errs[2] < 1e-4


@pytest.mark.parametrize("lam", [1e-3, 0.0])
def test_hybrid_reaches_the_exact_minimiser(lam):
    X, y, w = _data(seed=5)
    rel = noisy_dot_product(X, y, eps=math.inf, delta=1e-6, weights=w, weights_bound=2.0)
    newton = walr_fit(X, rel, weights=w, lambda_=lam, solver="newton")
    hyb = walr_fit(X, rel, weights=w, lambda_=lam, solver="hybrid", batch_size=64, random_state=0)
    assert hyb.status == "ok" and hyb.epochs >= 1 and hyb.iterations > hyb.epochs
    assert np.linalg.norm(hyb.coef - newton.coef) < 1e-3


@pytest.mark.parametrize("precondition", ["hessian", "bound", "none"])
def test_hybrid_preconditioners_converge_on_a_noisy_release(precondition):
    X, y, w = _data(1500, seed=6)
    rel = noisy_dot_product(X, y, eps=2.0, delta=1e-6, weights=w, weights_bound=2.0, random_state=3)
    newton = walr_fit(X, rel, weights=w, lambda_=1e-2, solver="newton")
    hyb = walr_fit(X, rel, weights=w, lambda_=1e-2, solver="hybrid", precondition=precondition,
                   batch_size=100, epochs=3000, random_state=1)
    assert hyb.status == "ok"
    assert np.linalg.norm(hyb.coef - newton.coef) < 1e-3
    assert hyb.value >= newton.value - 1e-12  # Newton's point is the minimum


def test_newton_objective_is_the_label_blind_objective():
    X, y, w = _data(500, seed=7)
    rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0, random_state=2)
    fit = walr_fit(X, rel, weights=w, lambda_=0.1, solver="newton")
    th, v = fit.coef, rel.value
    F = w @ np.logaddexp(0, X @ th) / 500 - th @ v + 0.05 * th @ th
    grad = X.T @ (w * expit(X @ th)) / 500 - v + 0.1 * th
    assert fit.value == pytest.approx(F, rel=1e-12)
    assert np.abs(grad).max() < 1e-10


# ----------------------------------------------------------------- lambda = 0: unboundedness
@pytest.mark.parametrize("solver", ["newton", "hybrid"])
def test_unbounded_coordinate_is_detected(solver):
    X, y, w = _data(500)
    v = noisy_dot_product(X, y, eps=math.inf, delta=1e-6, weights=w, weights_bound=2.0).value.copy()
    v[2] = -1e-3  # features are >= 0: theta_2 -> -inf decreases F without bound
    with pytest.warns(UserWarning, match="lambda_ > 0"):
        fit = walr_fit(X, v, weights=w, solver=solver)
    assert fit.status == "unbounded" and not fit.converged
    np.testing.assert_array_equal(fit.direction, [0, 0, -1, 0])
    assert np.isnan(fit.coef).all()
    with pytest.raises(ValueError, match="unbounded"):
        fit.predict_proba(X)


@pytest.mark.parametrize("solver", ["newton", "hybrid"])
def test_unbounded_direction_found_from_the_iterates(solver):
    # v beyond the attainable set along u = (-0.5, 1, 0, 0) but inside every coordinate range
    X, _, w = _data(800, seed=8)
    n = X.shape[0]
    u = np.array([-0.5, 1.0, 0.0, 0.0])
    on = X @ u > 0
    v = (w[on] @ X[on]) / n + 0.01 * u
    with pytest.warns(UserWarning, match="unbounded"):
        fit = walr_fit(X, v, weights=w, solver=solver, random_state=0)
    assert fit.status == "unbounded"
    d = fit.direction
    c = d @ v - w @ np.maximum(X @ d, 0) / n  # the certificate, recomputed independently
    assert c > 0 and abs(np.linalg.norm(d) - 1) < 1e-12
    # the same noisy vector with a ridge is a well-posed problem
    assert walr_fit(X, v, weights=w, lambda_=1e-2, solver="newton").status == "ok"


def test_nonconvergence_is_reported():
    X, y, w = _data(500)
    rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0, random_state=0)
    with pytest.warns(UserWarning, match="did not converge"):
        fit = walr_fit(X, rel, weights=w, lambda_=1e-3, solver="hybrid", epochs=1,
                       precondition="none", random_state=0)
    assert fit.status == "nonconvergence" and not fit.converged


# ----------------------------------------------------------------------------- result object
def test_result_fields_predict_and_summary():
    X, y, w = _data(600)
    rel = noisy_dot_product(pd.DataFrame(X, columns=["one", "a", "b", "c"]), y, eps=2.0,
                            delta=1e-6, weights=w, weights_bound=2.0, mechanism="analytic",
                            random_state=0)
    fit = walr_fit(X, rel, weights=w, lambda_=1e-3, solver="newton")
    assert isinstance(fit, WALRResult)
    assert fit.columns == ("one", "a", "b", "c")  # names travel with the release
    assert (fit.eps, fit.delta, fit.sigma, fit.mechanism) == (2.0, 1e-6, rel.sigma, "analytic")
    p = fit.predict_proba(X)
    np.testing.assert_allclose(p, expit(X @ fit.coef))
    np.testing.assert_array_equal(fit.predict(X), (p > 0.5).astype(int))
    np.testing.assert_array_equal(fit.predict(X, threshold=0.2), (p > 0.2).astype(int))
    assert list(fit.coefficients.index) == ["one", "a", "b", "c"]
    text = fit.summary()
    assert "eps=2" in text and "delta=1e-06" in text and "analytic" in text and "one" in text
    assert "features and weights are treated as public" in text
    with pytest.raises(ValueError, match="columns"):
        fit.predict_proba(X[:, :3])
    plain = walr_fit(X, rel.value, weights=w, lambda_=1e-3, solver="newton")
    assert plain.mechanism is None and "unknown" in plain.summary()
    np.testing.assert_allclose(plain.coef, fit.coef, rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------------- bad input
def test_bad_trainer_inputs():
    X, y, w = _data(300)
    rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0, random_state=0)
    cases = [
        (dict(noisy=rel.value[:3]), ValueError, "noisy must have one entry per column"),
        (dict(noisy=rel, X=X[:200]), ValueError, "n=300 records"),
        (dict(noisy="abc"), TypeError, "noisy"),
        (dict(noisy=np.r_[rel.value[:3], np.nan]), ValueError, "NaN"),
        (dict(weights=np.r_[-1.0, w[1:]]), ValueError, "weights must be >= 0"),
        (dict(weights=np.r_[3.0, w[1:]]), ValueError, "weights_bound=2"),
        (dict(weights=w[:5]), ValueError, "weights must be a 1-D array of length 300"),
        (dict(lambda_=-1.0), ValueError, "lambda_"),
        (dict(solver="sgd"), ValueError, "solver"),
        (dict(precondition="diag"), ValueError, "precondition"),
        (dict(batch_size=0), ValueError, "batch_size"),
        (dict(epochs=0), ValueError, "epochs"),
        (dict(lr=0.0), ValueError, "lr"),
        (dict(tol=-1.0), ValueError, "tol"),
        (dict(X=pd.DataFrame(X, columns=list("abcd")),
              noisy=noisy_dot_product(pd.DataFrame(X, columns=list("wxyz")), y, eps=1.0,
                                      delta=1e-6)), ValueError, "columns"),
    ]
    for kwargs, exc, match in cases:
        args = dict(X=X, noisy=rel, weights=w)
        args.update(kwargs)
        with pytest.raises(exc, match=match):
            walr_fit(args.pop("X"), args.pop("noisy"), **args)


# -------------------------------------------------------------------------- formula front end
def _frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.uniform(size=n), "b": rng.uniform(size=n),
                       "g": rng.choice(["u", "v", "w"], size=n),
                       "wt": rng.uniform(0.5, 2.0, size=n)})
    df["conv"] = (rng.uniform(size=n) < expit(-1 + 2 * df.a - df.b)).astype(int)
    return df


def test_walr_formula_end_to_end():
    df = _frame()
    fit = walr("conv ~ a + b + factor(g)", df, eps=1.0, delta=1e-6, weights="wt",
               weights_bound=2.0, lambda_=1e-3, random_state=0)
    assert fit.status == "ok" and fit.solver == "newton"
    assert list(fit.columns) == ["(Intercept)", "a", "b", "factor(g)v", "factor(g)w"]
    assert fit.n == len(df) and fit.eps == 1.0 and fit.mechanism == "analytic"
    p = fit.predict_proba(df.head(10))  # a new DataFrame goes through the formula
    assert p.shape == (10,) and ((p > 0) & (p < 1)).all()
    # same seed, same model; the two halves by hand give the same thing
    again = walr("conv ~ a + b + factor(g)", df, eps=1.0, delta=1e-6, weights="wt",
                 weights_bound=2.0, lambda_=1e-3, random_state=0)
    np.testing.assert_array_equal(fit.coef, again.coef)


def test_walr_formula_drops_missing_rows_and_aligns_weights():
    df = _frame(400, seed=1)
    df.loc[[3, 10], "a"] = np.nan
    fit = walr("conv ~ a + b", df, eps=math.inf, delta=1e-6, weights=df["wt"].to_numpy(),
               weights_bound=2.0, lambda_=1e-3)
    keep = df.dropna()
    X = np.c_[np.ones(len(keep)), keep[["a", "b"]].to_numpy()]
    ref = erm.fit(X, keep.conv.to_numpy(), lambda_=1e-3, eps=0, weights=keep.wt.to_numpy(),
                  weights_bound=2.0)
    assert fit.n == 398
    np.testing.assert_allclose(fit.coef, ref.coef, rtol=0, atol=1e-8)
    p = fit.predict_proba(df.head(5))
    assert np.isnan(p[3]) and np.isfinite(np.delete(p, 3)).all()


def test_walr_formula_errors():
    df = _frame(200)
    df["big"] = df.a * 10
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        walr("conv ~ big", df, eps=1.0, delta=1e-6)
    clipped = walr("conv ~ big", df, eps=1.0, delta=1e-6, clip=True, lambda_=1e-2, random_state=0)
    assert clipped.status == "ok"
    df["three"] = np.arange(200) % 3
    with pytest.raises(ValueError, match="only 0 and 1"):     # label coding is never learned
        walr("three ~ a", df, eps=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="not a column"):
        walr("conv ~ a", df, eps=1.0, delta=1e-6, weights="nope")
    with pytest.raises(ValueError, match="response"):
        walr("~ a", df, eps=1.0, delta=1e-6)
