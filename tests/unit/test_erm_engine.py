"""erm.fit: argument checking, the norm bound, randomness plumbing and result fields."""

import warnings

import numpy as np
import pytest

from privatelr import PrivacyWarning, erm
from privatelr.mechanisms import check_random_state

rng0 = np.random.default_rng(0)
X0 = rng0.uniform(-0.5, 0.5, size=(60, 3))
y0 = (X0[:, 0] > 0).astype(int)


def fit(**kw):
    args = dict(X=X0, y=y0, lambda_=0.05, eps=1.0, random_state=0)
    args.update(kw)
    return erm.fit(args.pop("X"), args.pop("y"), **args)


@pytest.mark.parametrize("kw, exc, word", [
    (dict(eps=-1.0), ValueError, "eps"),
    (dict(eps=float("nan")), ValueError, "eps"),
    (dict(eps="1"), TypeError, "eps"),
    (dict(eps=None), TypeError, "eps"),
    (dict(lambda_=0.0), ValueError, "lambda_"),
    (dict(lambda_=-0.1), ValueError, "lambda_"),
    (dict(lambda_=float("inf")), ValueError, "lambda_"),
    (dict(X=np.where(np.arange(180).reshape(60, 3) == 7, np.nan, X0)), ValueError, "X"),
    (dict(X=np.where(np.arange(180).reshape(60, 3) == 7, np.inf, X0)), ValueError, "X"),
    (dict(X=np.empty((0, 3)), y=np.empty(0)), ValueError, "X"),
    (dict(X=np.where(np.arange(180).reshape(60, 3) == 7, 1e300, X0)), ValueError, "overflow"),
    (dict(X=np.empty((5, 0))), ValueError, "X"),
    (dict(X=X0[:, 0]), ValueError, "X"),
    (dict(X=X0.astype(str)), TypeError, "X"),
    (dict(X=X0.astype(complex)), TypeError, "X"),
    (dict(y=y0 + 1), ValueError, "y"),
    (dict(y=np.arange(60) % 3), ValueError, "y"),
    (dict(y=y0[:-1]), ValueError, "y"),
    (dict(y=np.where(y0 == 1, np.nan, 0.0)), ValueError, "y"),
    (dict(y=np.array(["a", "b"] * 30)), TypeError, "y"),
    (dict(weights=np.ones(60)), ValueError, "weights_bound"),
    (dict(weights=np.full(60, 2.0), weights_bound=1.0), ValueError, "weights"),
    (dict(weights=np.full(60, -0.1), weights_bound=1.0), ValueError, "weights"),
    (dict(weights=np.ones(59), weights_bound=1.0), ValueError, "weights"),
    (dict(weights=np.ones(60), weights_bound=0.0), ValueError, "weights_bound"),
    (dict(method="exact"), ValueError, "method"),
    (dict(data_norm=0.0), ValueError, "data_norm"),
    (dict(clip="yes"), TypeError, "clip"),
    (dict(loss="hinge"), ValueError, "loss"),
    (dict(loss="huber", h=0.7), ValueError, "h"),
    (dict(random_state="seed"), TypeError, "random_state"),
    (dict(random_state=-3), ValueError, "random_state"),
    (dict(small_eps="ignore"), ValueError, "small_eps"),
    (dict(solver="sgd"), ValueError, "solver"),
])
def test_bad_arguments_name_the_argument(kw, exc, word):
    with pytest.raises(exc, match=word):
        fit(**kw)


def test_label_encodings_agree():
    a = fit(y=y0).coef
    b = fit(y=y0.astype(bool)).coef
    c = fit(y=np.where(y0 == 1, 1, -1)).coef
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_single_class_labels_are_allowed():
    res = fit(y=np.ones(60))
    assert res.convergence == 0


def test_rows_above_the_bound_fail_closed():
    X = X0.copy()
    X[:4] *= 10  # four rows far outside the unit ball
    with pytest.raises(ValueError, match="above data_norm=1.*clip=True") as info:
        fit(X=X)
    assert "4" not in str(info.value)           # no statistic of the data in the message
    res = fit(X=X, eps=0)                       # a non-private fit has no bound to keep
    assert res.method == "nonprivate"


def test_clip_projects_rows_into_the_ball_without_warning():
    X = X0.copy()
    X[:4] *= 10
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        res = fit(X=X, clip=True)
    assert res.n_clipped == 4
    # clipping changes the data the fit sees: equal to fitting the clipped rows directly
    Xc = X.copy()
    norms = np.linalg.norm(Xc[:4], axis=1, keepdims=True)
    Xc[:4] /= norms
    np.testing.assert_allclose(res.coef, fit(X=Xc).coef, rtol=1e-12)
    assert not np.shares_memory(X, Xc)


def test_nonprivate_fit_does_not_check_the_bound():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        fit(X=X0 * 10, eps=0)


def test_eps_zero_and_inf_are_nonprivate_and_equal():
    a, b = fit(eps=0), fit(eps=float("inf"))
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.method == "nonprivate" and a.noise_scale == 0 and a.eps_eff == 0


def test_random_state_reproducibility_and_generator_sharing():
    np.testing.assert_array_equal(fit(random_state=3).coef, fit(random_state=3).coef)
    assert not np.array_equal(fit(random_state=3).coef, fit(random_state=4).coef)
    g = np.random.default_rng(5)
    first, second = fit(random_state=g).coef, fit(random_state=g).coef
    assert not np.array_equal(first, second)  # the Generator is advanced, not reseeded
    assert isinstance(check_random_state(None), np.random.Generator)
    # None draws fresh OS entropy: two fits differ
    assert not np.array_equal(fit(random_state=None).coef, fit(random_state=None).coef)


def test_result_fields():
    res = fit(lambda_=0.01)
    assert res.n == 60 and res.d == 3
    assert res.status == "ok" and res.convergence == 0
    # the objective's value is computed only when a line search needs it (a private fit
    # releases none): the count says how often, possibly never
    assert res.counts["function"] >= 0 and res.counts["gradient"] >= 1
    assert res.eps == 1.0 and res.eps_eff == pytest.approx(1 - 2 * np.log1p(0.25 / 0.6))
    assert res.penalty == pytest.approx(2 * np.log1p(0.25 / 0.6))
    assert res.lambda_ == 0.01 and res.method == "objective" and res.loss == "logistic"
    assert res.passes >= 1 and res.grad_norm < 1e-10


@pytest.mark.parametrize("method", ["objective", "output"])
def test_private_nonconvergence_is_refused_unless_allowed(method):
    # both guarantees need the exact minimiser: an unconverged private fit is not released
    with pytest.raises(ValueError, match="maxiter.*allow_nonconverged=True"):
        fit(maxiter=1, method=method)
    res = fit(maxiter=1, method=method, allow_nonconverged=True)
    assert res.convergence == 1
    assert res.status == "ok nonconvergence"
    assert "iteration limit" in res.message
    with pytest.raises(TypeError, match="allow_nonconverged"):
        fit(allow_nonconverged="yes")


def test_nonprivate_nonconvergence_is_reported_in_status():
    res = fit(maxiter=1, eps=0)
    assert res.convergence == 1 and res.status == "ok nonconvergence"
    assert np.isfinite(res.value)


def test_lbfgs_solver_gives_the_same_fit():
    a = fit(solver="newton")
    b = fit(solver="lbfgs")
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-8)
    assert b.solver == "lbfgs" and b.convergence == 0


def test_dataframe_and_list_inputs():
    pd = pytest.importorskip("pandas")
    a = fit(X=pd.DataFrame(X0), y=pd.Series(y0))
    b = fit(X=X0.tolist(), y=y0.tolist())
    np.testing.assert_array_equal(a.coef, b.coef)
