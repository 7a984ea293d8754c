"""The engine against numbers produced by R's PrivateLR (tests/fixtures, copied from shared/reference)."""

import numpy as np
import pandas as pd
import pytest

from conftest import load_fixture
from privatelr import erm
from privatelr.datasets import load_iris, load_mtcars


def _design(case_id):
    """Design matrices built by hand with exactly the columns R's model.matrix lists."""
    iris, mtcars = load_iris(), load_mtcars()
    num = ["Sepal.Length", "Sepal.Width", "Petal.Length", "Petal.Width"]
    ones = lambda k: np.ones((k, 1))  # noqa: E731
    if case_id in ("iris_species_all", "iris_not_setosa"):
        return np.hstack([ones(150), iris[num].to_numpy()]), iris["Species"] != "setosa"
    if case_id == "iris_sepal":
        return np.hstack([ones(150), iris[num[:2]].to_numpy()]), iris["Species"] != "setosa"
    if case_id == "iris_logical_factor_cov":
        sp = iris["Species"]
        X = np.column_stack([np.ones(150), iris["Petal.Length"], sp == "versicolor", sp == "virginica"])
        return X.astype(float), iris["Sepal.Length"] > 5.8
    if case_id == "mtcars_factor_cyl":
        X = np.column_stack([np.ones(32), mtcars["mpg"], mtcars["cyl"] == 6, mtcars["cyl"] == 8])
        return X.astype(float), mtcars["am"]
    if case_id == "mtcars_numeric":
        return np.column_stack([np.ones(32), mtcars[["mpg", "hp", "wt"]]]), mtcars["am"]
    raise KeyError(case_id)


CASES = load_fixture("nonprivate_fits.json")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
@pytest.mark.parametrize("method", ["objective", "output"])
def test_nonprivate_fit_equals_exact_minimiser(case, method):
    X, y = _design(case["id"])
    y = np.asarray(y, dtype=float)
    assert y.mean() == pytest.approx(case["response_success_rate"], abs=1e-12)
    res = erm.fit(X, y, lambda_=case["lambda"], eps=0, method=method)
    expected = np.array([case["coefficients"][c] for c in case["columns"]])
    assert res.convergence == 0, res.message
    np.testing.assert_allclose(res.coef, expected, rtol=1e-7, atol=1e-9)
    assert res.value == pytest.approx(case["objective"], rel=1e-10)
    assert res.status == "ok" and res.method == "nonprivate"


def test_mtcars_factor_case_converges_where_r_did_not():
    # R's optim stopped after 100 BFGS iterations (convergence 1) on this case; we converge.
    case = next(c for c in CASES if c["id"] == "mtcars_factor_cyl")
    assert case["privatelr_convergence"] == 1
    X, y = _design(case["id"])
    res = erm.fit(X, y, lambda_=case["lambda"], eps=0)
    assert res.convergence == 0
    assert res.grad_norm < 1e-10


CAL = load_fixture("privacy_calibration.json")


@pytest.mark.parametrize("row", CAL, ids=[f"lam={r['lambda_arg']},eps={r['eps']}" for r in CAL])
def test_calibration_equals_privatelr(row):
    lam = row["lambda_arg"] if row["lambda_arg"] is not None else row["lambda_used"]
    cal = erm.calibrate(row["n"], 5, eps=row["eps"], lambda_=lam)
    assert cal.lambda_ == pytest.approx(row["lambda_used"], rel=1e-12)
    assert cal.penalty == pytest.approx(row["penalty"], rel=1e-12)
    assert cal.eps_eff == pytest.approx(row["eps_eff"], rel=1e-12, abs=1e-14)
    assert cal.status == row["status"]
    assert cal.noise_scale == pytest.approx(2.0 / row["eps_eff"], rel=1e-12)


@pytest.mark.parametrize("row", CAL, ids=[f"lam={r['lambda_arg']},eps={r['eps']}" for r in CAL])
def test_calibration_through_fit_on_iris(row):
    X, y = _design("iris_species_all")
    X = X / np.sqrt((X * X).sum(axis=1)).max()  # rows in the unit ball: B = 1 as PrivateLR assumes
    lam = row["lambda_arg"] if row["lambda_arg"] is not None else row["lambda_used"]
    res = erm.fit(X, y, lambda_=lam, eps=row["eps"], random_state=0)
    assert res.lambda_ == pytest.approx(row["lambda_used"], rel=1e-12)
    assert res.penalty == pytest.approx(row["penalty"], rel=1e-12)
    assert res.eps_eff == pytest.approx(row["eps_eff"], rel=1e-12, abs=1e-14)
    assert res.status == row["status"]
    assert res.convergence == 0


def test_norm_bound_and_weights_scale_the_calibration():
    base = erm.calibrate(150, 5, eps=1.0, lambda_=0.01)
    b2 = erm.calibrate(150, 5, eps=1.0, lambda_=0.01, data_norm=np.sqrt(2.0))
    assert b2.penalty == pytest.approx(2 * np.log1p(0.25 * 2 / (150 * 0.01)))
    assert b2.noise_scale == pytest.approx(2 * np.sqrt(2.0) / b2.eps_eff)
    a3 = erm.calibrate(150, 5, eps=1.0, lambda_=0.01, weights_bound=3.0)
    assert a3.penalty == pytest.approx(2 * np.log1p(0.25 * 3 / (150 * 0.01)))
    assert a3.noise_scale == pytest.approx(2 * 3.0 / a3.eps_eff)
    out = erm.calibrate(150, 5, eps=0.5, lambda_=0.01, method="output", data_norm=2.0,
                        weights_bound=3.0)
    assert out.noise_scale == pytest.approx(2 * 3.0 * 2.0 / (150 * 0.01 * 0.5))
    assert base.noise_scale == pytest.approx(2 / base.eps_eff)
    adj = erm.calibrate(150, 5, eps=1.0, lambda_=1e-4, data_norm=2.0)
    assert adj.status == "adjusted lambda"
    assert adj.lambda_ == pytest.approx(0.25 * 4 / (150 * np.expm1(0.25)))
    # the adjusted lambda makes the penalty exactly eps/2
    assert 2 * np.log1p(0.25 * 4 / (150 * adj.lambda_)) == pytest.approx(0.5)


def test_c_programs_variant_refuses_small_eps():
    with pytest.raises(ValueError, match="eps"):
        erm.calibrate(150, 5, eps=1.0, lambda_=1e-4, small_eps="error")
    cal = erm.calibrate(150, 5, eps=1.0, lambda_=0.01, small_eps="error")
    assert cal.status == "ok" and cal.eps_eff == pytest.approx(1 - 0.308301359654517)
