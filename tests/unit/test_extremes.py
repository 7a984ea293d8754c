"""Every privacy argument at every extreme: a correct finite result, or a clean error naming it.

The arguments (eps, lambda_, data_norm, weights_bound, the Huber h, delta, the sensitivity) are
swept over 5e-324 ... 1e308 (and the invalid 0, -1, inf, NaN) through the calibration, the
in-memory fit, ``dplr``, the scikit-learn estimator's default λ, the Gaussian mechanisms,
``noisy_dot_product`` and the accountant. Each case either returns a finite result that equals
a high-precision (mpmath) reference, or raises ``ValueError``/``TypeError`` whose message names
the argument. Any other exception (``OverflowError``, ``ZeroDivisionError``, ``RuntimeError``,
a NumPy ``RuntimeWarning`` — an error under this project's pytest settings) fails the test.
"""

from __future__ import annotations

import math
import re
import warnings

import mpmath
import numpy as np
import pandas as pd
import pytest

from privatelr import PrivacyAccountant, dplr, erm, noisy_dot_product
from privatelr._validation import clip_rows, row_norms
from privatelr.exceptions import BudgetExceededError
from privatelr.mechanisms import (gaussian_delta, gaussian_noise, gaussian_sigma,
                                  sphere_gamma_noise)
from privatelr.sklearn import DPLogisticRegression

VALUES = [5e-324, 1e-300, 1e-30, 1e-8, 1.0, 1e8, 1e30, 1e300, 1e308]
INVALID = [0.0, -1.0, math.inf, math.nan]
N, D = 60, 3
MAX = np.finfo(float).max
ROOM = 4 * (D + 12 * math.sqrt(D) + 80)  # the calibration's headroom for the noise norm

_rng = np.random.default_rng(0)
X = np.c_[np.full(N, 0.5), _rng.uniform(-0.5, 0.5, (N, D - 1))]  # rows in the unit ball
Y = (X[:, 1] + 0.2 * _rng.standard_normal(N) > 0).astype(int)
DF = pd.DataFrame({"a": X[:, 1], "b": X[:, 2], "y": Y})
X01 = X[:, 1:] + 0.5


def outcome(call, name):
    """The result of ``call()``, or None after a ValueError/TypeError naming ``name``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PrivacyWarning etc. are not the point
        try:
            return call()
        except (ValueError, TypeError) as exc:
            assert re.search(rf"\b{re.escape(name)}\b", str(exc)), f"{name} not named in: {exc}"
            assert "Traceback" not in str(exc)
            return None


# ---------------------------------------------------------------- references (mpmath, 60 digits)
def reference_calibration(method, eps, lam, B=1.0, A=1.0, c=0.25, n=N):
    """(noise scale, lambda used, eps') in exact arithmetic; None entries when not private."""
    mp = mpmath.mp
    mp.dps = 60
    eps_, lam_, B_, A_, c_ = map(mpmath.mpf, (eps, lam, B, A, c))
    if method == "output":
        return 2 * A_ * B_ / (n * lam_ * eps_), lam_, eps_
    penalty = 2 * mpmath.log1p(c_ * A_ * B_ ** 2 / (n * lam_))
    eff = eps_ - penalty
    if eff <= 0:
        lam_ = c_ * A_ * B_ ** 2 / (n * mpmath.expm1(eps_ / 4))
        eff = eps_ / 2
    return 2 * A_ * B_ / eff, lam_, eff


def expected_in_range(scale, lam, method):
    """True/False when the reference is clearly inside/outside the supported range, else None.

    The noise norm (up to ROOM * scale) must be a finite double, the scale not underflow, and
    for objective perturbation the noise term b/n (up to ROOM * scale / n) must stay below the
    1e153 up to which the solver can square gradients.
    """
    s, l_ = float(mpmath.log(scale)), float(mpmath.log(lam))
    top = math.log(MAX)
    if method == "objective":
        top = min(top, math.log(1e153) + math.log(N))
    if s + math.log(ROOM) > top + 1 or l_ > math.log(MAX) + 1 or s < math.log(5e-324) - 1:
        return False
    if s + math.log(ROOM) < top - 1 and l_ < math.log(MAX) - 1 and s > math.log(5e-324) + 1:
        return True
    return None


def close(got, want, rel=1e-12):
    want = float(want)
    if abs(want) < 1e-300:  # subnormal region: a few ulps absolute
        return abs(got - want) <= 1e-320 + rel * abs(want)
    return abs(got - want) <= rel * abs(want)


# ---------------------------------------------------------------- the calibration
CAL_CASES = [(arg, v, m) for arg in ("eps", "lambda_", "data_norm", "weights_bound")
             for v in VALUES for m in ("objective", "output")]


@pytest.mark.parametrize("arg, value, method", CAL_CASES)
def test_calibrate_is_exact_or_names_the_argument(arg, value, method):
    kw = dict(eps=1.0, lambda_=0.01, data_norm=1.0, weights_bound=1.0)
    kw[arg] = value
    cal = outcome(lambda: erm.calibrate(N, D, method=method, **kw), arg)
    scale, lam, eff = reference_calibration(method, kw["eps"], kw["lambda_"], kw["data_norm"],
                                            kw["weights_bound"])
    inside = expected_in_range(scale, lam, method)
    if cal is None:
        assert inside is not True, f"refused although in range: scale {scale}, lambda {lam}"
        return
    assert inside is not False, f"accepted although out of range: {cal}"
    for got in (cal.noise_scale, cal.lambda_, cal.eps_eff, cal.penalty):
        assert math.isfinite(got)
    assert cal.noise_scale > 0
    assert close(cal.noise_scale, scale), (cal.noise_scale, scale)
    assert close(cal.lambda_, lam), (cal.lambda_, lam)
    assert close(cal.eps_eff, eff, rel=1e-12) or abs(cal.eps_eff - float(eff)) <= 1e-15 * kw["eps"]


@pytest.mark.parametrize("arg", ["eps", "lambda_", "data_norm", "weights_bound", "curvature"])
@pytest.mark.parametrize("value", INVALID + ["1"])
def test_calibrate_refuses_invalid_arguments(arg, value):
    if arg == "eps" and value in (0.0, math.inf):
        return  # the non-private conventions
    kw = dict(eps=1.0, lambda_=0.01, data_norm=1.0, weights_bound=1.0, curvature=0.25)
    kw[arg] = value
    with pytest.raises((ValueError, TypeError), match=arg):
        erm.calibrate(N, D, **kw)


def test_adjusted_lambda_for_tiny_eps_is_exact():
    # eps = 1e-300 (output perturbation: no solver limit on the noise) and 1e-140 (objective):
    # exact; eps = 5e-324: eps/4 underflows to 0 and the adjusted lambda to infinity
    cal = erm.calibrate(N, D, eps=1e-140, lambda_=0.01)
    assert cal.status == "adjusted lambda"
    assert close(cal.lambda_, mpmath.mpf(0.25) / (N * mpmath.expm1(mpmath.mpf(1e-140) / 4)))
    assert close(cal.noise_scale, 4e140)
    out = erm.calibrate(N, D, eps=1e-300, lambda_=1e10, method="output")
    assert close(out.noise_scale, 2 / (N * mpmath.mpf(1e10) * mpmath.mpf(1e-300)))
    with pytest.raises(ValueError, match=r"eps=5e-324 makes the adjusted lambda_.*increase eps"):
        erm.calibrate(N, D, eps=5e-324, lambda_=0.01)


def test_penalty_from_logs_when_the_ratio_overflows():
    # c A B^2/(n lambda) overflows (B^2 = 1e400 / ...) while the adjusted lambda is finite
    cal = erm.calibrate(N, D, eps=1.0, lambda_=1e-200, data_norm=1e100)
    q = mpmath.mpf(0.25) * mpmath.mpf(1e100) ** 2 / (N * mpmath.mpf(1e-200))
    assert close(cal.penalty, 2 * mpmath.log1p(q))
    assert cal.status == "adjusted lambda"
    assert close(cal.lambda_, mpmath.mpf(0.25) * mpmath.mpf(1e100) ** 2 / (N * mpmath.expm1(0.25)))


# ---------------------------------------------------------------- the in-memory fit
def _fit_kwargs(arg, value, method):
    kw = dict(lambda_=0.01, eps=1.0, method=method, random_state=3)
    if arg == "weights_bound":
        kw.update(weights=np.linspace(0.2, 1.0, N) * value if math.isfinite(value) else None,
                  weights_bound=value)
    elif arg == "h":
        kw.update(loss="huber", h=value)
    elif arg == "data_norm":
        kw.update(data_norm=value, clip=True)
    else:
        kw[arg] = value
    return kw


FIT_CASES = [(arg, v, m) for arg in ("eps", "lambda_", "data_norm", "weights_bound", "h")
             for v in VALUES + INVALID for m in ("objective", "output")]


@pytest.mark.parametrize("arg, value, method", FIT_CASES)
def test_fit_returns_finite_coefficients_or_names_the_argument(arg, value, method):
    if arg == "eps" and value in (0.0, math.inf):
        return  # non-private by convention (tested elsewhere)
    kw = _fit_kwargs(arg, value, method)
    res = outcome(lambda: erm.fit(X, Y, **kw), arg)
    if res is None:
        return
    assert np.isfinite(res.coef).all()
    cal = res.calibration  # the fit is calibrated exactly as calibrate() says
    assert cal == erm.calibrate(N, D, eps=kw["eps"], lambda_=kw["lambda_"], method=method,
                                curvature=cal.curvature, data_norm=cal.data_norm,
                                weights_bound=cal.weights_bound)


def test_fit_with_tiny_eps_releases_the_noise_dominated_minimiser():
    # eps = 1e-140: adjusted lambda 1.7e138, noise scale 4e140; the minimiser of
    # J + b.w/n is -(b/n + data gradient)/lambda to a relative 1e-138: reproduce b from the seed
    res = erm.fit(X, Y, lambda_=0.01, eps=1e-140, random_state=7)
    b = sphere_gamma_noise(D, res.noise_scale, np.random.default_rng(7))
    assert res.status == "adjusted lambda" and res.convergence == 0
    np.testing.assert_allclose(res.coef, -b / N / res.lambda_, rtol=1e-9)
    # eps = 1e-300: the noise term b/n (about 1e299) is beyond what the solver can square
    with pytest.raises(ValueError, match=r"eps=1e-300 makes the noise scale .* increase eps"):
        erm.fit(X, Y, lambda_=0.01, eps=1e-300, random_state=7)


def test_fit_refuses_gradients_the_solver_cannot_square():
    with pytest.raises(ValueError, match=r"weights up to 1e\+300 .* weights_bound"):
        erm.fit(X, Y, lambda_=0.01, eps=1.0, method="output", weights=np.full(N, 1e300),
                weights_bound=1e300, random_state=0)


def test_fit_with_huge_lambda_is_the_ridge_limit():
    # lambda = 1e300: w* = -(grad of the data term at 0 + b/n)/lambda (to 1e-300 relative)
    res = erm.fit(X, Y, lambda_=1e300, eps=1.0, random_state=2)
    b = sphere_gamma_noise(D, res.noise_scale, np.random.default_rng(2))
    y = np.where(Y == 1, 1.0, -1.0)
    g0 = -(X * (0.5 * y)[:, None]).mean(axis=0)  # l'(0) = -1/2
    np.testing.assert_allclose(res.coef, -(g0 + b / N) / 1e300, rtol=1e-9)


def test_clipping_puts_1e155_rows_on_the_sphere():
    big = X.copy()
    big[3] = 1e155
    big[5] = [3e-200, 4e-200, 0.0]
    for bound in (1.0, 1e-300, 1e100):
        clipped, k = clip_rows(big, bound)
        norms = row_norms(clipped)
        assert np.isfinite(clipped).all()
        assert norms[3] == pytest.approx(bound, rel=1e-15)
        assert (norms <= bound * (1 + 1e-12)).all()
        assert k == int((row_norms(big) > bound * (1 + 5e-13)).sum())
    # through the row source (used by every front end before its fit)
    from privatelr.rows import ArrayRows

    rows = ArrayRows(big, np.ones(len(big)))
    assert rows.scan(bound=1.0).n_over >= 1
    clipped = rows.clipped(1.0).X
    assert row_norms(clipped)[3] == pytest.approx(1.0, rel=1e-15)
    np.testing.assert_allclose(clipped[3], np.full(3, 1 / math.sqrt(3)), rtol=1e-15)
    # the estimator clips such a row onto the sphere (it was clipped to zero before)
    est = DPLogisticRegression(clip=True, random_state=0).fit(big[:, 1:], Y)
    assert np.isfinite(est.coef_).all()


def test_row_norms_at_every_scale():
    A = np.array([[3e200, 4e200], [3e-200, 4e-200], [3.0, 4.0], [0.0, 0.0], [1e-320, 0.0],
                  [np.inf, 1.0], [np.nan, 1.0], [MAX, MAX]])
    got = row_norms(A)
    np.testing.assert_allclose(got[:5], [5e200, 5e-200, 5.0, 0.0, 1e-320], rtol=1e-15)
    assert got[5] == math.inf and math.isnan(got[6]) and got[7] == math.inf


def test_values_whose_squares_overflow_are_clipped_or_refused():
    big = X.copy()
    big[3] = 1e155
    # the issue: 1e155-sized rows with clip=True land on the sphere (norms without overflow)
    res = erm.fit(big, Y, lambda_=0.01, eps=1.0, clip=True, random_state=0)
    assert np.isfinite(res.coef).all() and res.n_clipped >= 1
    # without clipping the passes would overflow: refused, naming the problem
    with pytest.raises(ValueError, match=r"X has values beyond \+-1e\+150.*overflow"):
        erm.fit(big, Y, lambda_=0.01, eps=1.0, random_state=0)
    with pytest.raises(ValueError, match=r"X has values beyond \+-1e\+150.*overflow"):
        erm.fit(big, Y, lambda_=0.01, eps=0)


# ---------------------------------------------------------------- dplr and the estimator
@pytest.mark.parametrize("arg", ["eps", "lambda_", "data_norm"])
@pytest.mark.parametrize("value", VALUES + INVALID)
def test_dplr_returns_finite_coefficients_or_names_the_argument(arg, value):
    if arg == "eps" and value in (0.0, math.inf):
        return
    kw = {arg: value, "random_state": 0}
    if arg == "data_norm":
        kw["clip"] = True
    fit = outcome(lambda: dplr("y ~ a + b", DF, **kw), arg)
    if fit is not None:
        assert np.isfinite(fit.coefficients.to_numpy(dtype=float)).all()


@pytest.mark.parametrize("value", VALUES)
def test_default_lambda_is_exact_or_names_eps(value):
    from privatelr.calibration import default_lambda

    lam = outcome(lambda: default_lambda(N, value), "eps")
    ref = 1 / (4 * N * mpmath.expm1(mpmath.mpf(value) / 20))
    if lam is None:
        assert not mpmath.mpf(5e-324) < ref < MAX
    else:
        assert close(lam, ref)


@pytest.mark.parametrize("arg", ["eps", "data_norm", "lambda_"])
@pytest.mark.parametrize("value", VALUES + INVALID)
def test_sklearn_estimator_default_lambda_and_fit(arg, value):
    if arg == "eps" and value in (0.0, math.inf):
        return
    est = DPLogisticRegression(random_state=0, fit_intercept=False, **{arg: value})
    fitted = outcome(lambda: est.fit(X[:, 1:], Y), arg)
    if fitted is not None:
        assert np.isfinite(fitted.coef_).all()
        if arg != "lambda_":  # default lambda: c B^2/(n (e^{eps/20} - 1)), exact
            B, eps = mpmath.mpf(est.data_norm), mpmath.mpf(est.eps)
            assert close(fitted.result_.calibration.lambda_requested,
                         B ** 2 / 4 / (N * mpmath.expm1(eps / 20)))


# ---------------------------------------------------------------- Gaussian mechanisms
def true_profile(sigma, sens, eps):
    """Balle & Wang's delta(sigma) in 700-digit arithmetic (Mills-ratio form for huge eps)."""
    mp = mpmath.mp
    mp.dps = 700
    s = mpmath.mpf(sigma) / mpmath.mpf(sens)
    e = mpmath.mpf(eps)
    a, b = 1 / (2 * s), e * s
    t = a - b
    if a + b > 1e10:  # e^eps Phi(-a-b) = phi(a-b) R(a+b), R(x) ~ 1/x - 1/x^3 + 3/x^5
        x = a + b
        if t < -1e4:
            return mpmath.mpf(0)
        return mpmath.ncdf(t) - mpmath.npdf(t) * (1 / x - 1 / x ** 3 + 3 / x ** 5 - 15 / x ** 7)
    return mpmath.ncdf(t) - mpmath.exp(e) * mpmath.ncdf(-a - b)


GAUSS_CASES = [(arg, v, mech) for arg in ("eps", "delta", "sensitivity") for v in VALUES + INVALID
               for mech in ("analytic", "classic")]


@pytest.mark.parametrize("arg, value, mechanism", GAUSS_CASES)
def test_gaussian_sigma_is_finite_or_names_the_argument(arg, value, mechanism):
    kw = dict(sensitivity=1.0, eps=0.5, delta=1e-5)
    kw[arg] = value
    sigma = outcome(lambda: gaussian_sigma(kw["sensitivity"], kw["eps"], kw["delta"], mechanism),
                    arg)
    if sigma is None:
        return
    assert 0 < sigma < MAX / 64
    # (eps, delta)-DP: the profile at sigma is at most delta (checked in high precision)
    assert gaussian_delta(sigma, kw["sensitivity"], kw["eps"]) <= kw["delta"]


@pytest.mark.parametrize("eps, delta", [
    (1e-30, 1e-30),     # before: sigma 26 orders of magnitude too small (delta 3.8e13 times too big)
    (1e-3, 1e-100),     # before: delta exceeded by a relative 5e-8
    (1e-10, 1e-20), (0.5, 1e-300), (1e-300, 1e-300), (5e-324, 1e-5), (0.5, 5e-324),
    (1.0, 1e-5), (50.0, 1e-10), (1e8, 1e-5), (1e30, 1e-5), (1e300, 1e-12),
])
def test_analytic_sigma_meets_the_profile_exactly_at_extremes(eps, delta):
    sigma = gaussian_sigma(1.0, eps, delta, "analytic")
    achieved = true_profile(sigma, 1.0, eps)
    assert achieved <= delta  # the guarantee holds in exact arithmetic
    if eps < 1e8:  # and is tight (for huge eps delta(sigma) jumps from ~1 to ~0 within an ulp)
        assert achieved >= mpmath.mpf(delta) * (1 - mpmath.mpf(1e-9))
    assert math.isclose(gaussian_delta(sigma, 1.0, eps), float(achieved), rel_tol=1e-12,
                        abs_tol=1e-300)


@pytest.mark.parametrize("scale", VALUES)
def test_noise_draws_are_finite_or_refused(scale):
    rng = np.random.default_rng(0)
    b = outcome(lambda: sphere_gamma_noise(D, scale, rng), "scale")
    assert b is None or np.isfinite(b).all()
    z = outcome(lambda: gaussian_noise(D, scale, rng), "sigma")
    assert z is None or np.isfinite(z).all()


@pytest.mark.parametrize("arg", ["eps", "delta", "weights_bound"])
@pytest.mark.parametrize("value", VALUES + INVALID)
def test_noisy_dot_product_is_finite_or_names_the_argument(arg, value):
    kw = dict(eps=1.0, delta=1e-5, random_state=0)
    kw[arg] = value
    if arg == "weights_bound":
        kw["weights"] = np.linspace(0.1, 1.0, N) * value if math.isfinite(value) else None
    if arg == "eps" and value == math.inf:
        return  # the exact (non-private) release by convention
    rel = outcome(lambda: noisy_dot_product(X01, Y, **kw), arg)
    if rel is not None:
        assert np.isfinite(rel.value).all() and rel.sigma > 0


# ---------------------------------------------------------------- the accountant
@pytest.mark.parametrize("budget", VALUES)
def test_accountant_at_every_scale(budget):
    acc = PrivacyAccountant(budget, delta=0.5)
    acc.spend(budget * 0.25)
    acc.spend(budget * 0.75)
    with pytest.raises(BudgetExceededError):
        acc.spend(budget)  # before: OverflowError from fsum for budget 1e308
    assert acc.remaining[0] == pytest.approx(0.0, abs=budget * 1e-12)
    assert acc.spent()[0] == pytest.approx(budget, rel=1e-12, abs=1e-323)


def test_accountant_at_the_largest_double():
    acc = PrivacyAccountant(MAX)
    acc.spend(MAX)
    with pytest.raises(BudgetExceededError):
        acc.spend(MAX)  # the sum is beyond the largest double: refused, not an OverflowError
    acc.spend(MAX * 1e-13)  # within the relative slack of 1e-12


# ---------------------------------------------------------------- Dask: the same rules
def _both(X_, y_, **kw):
    """(in-memory outcome, Dask outcome): a result or the ValueError's message."""
    da = pytest.importorskip("dask.array")
    out = []
    for args in ((X_, y_), (da.from_array(X_, chunks=(20, X_.shape[1])), da.from_array(y_, chunks=20))):
        try:
            out.append(erm.fit(*args, **kw))
        except ValueError as exc:
            out.append(str(exc))
    return out


@pytest.mark.parametrize("value", [1e155, 2e150, 1e300])
def test_dask_treats_values_too_large_like_memory(client, value):
    big = X.copy()
    big[7, 1] = value  # before: Dask clipped such rows to zero and reported status 'ok'
    mem, dsk = _both(big, Y, lambda_=0.01, eps=1.0, random_state=0)
    assert isinstance(mem, str) and "X has values beyond" in mem
    assert dsk == mem
    # with clip=True both put the row on the sphere and fit the same coefficients
    mem, dsk = _both(big, Y, lambda_=0.01, eps=1.0, clip=True, random_state=0)
    assert not isinstance(mem, str) and mem.n_clipped >= 1
    np.testing.assert_allclose(dsk.coef, mem.coef, rtol=0, atol=1e-10)


def test_dask_refuses_gradients_the_solver_cannot_square_like_memory(client):
    mem, dsk = _both(X, Y, lambda_=0.01, eps=1.0, method="output", weights=np.full(N, 1e300),
                     weights_bound=1e300, random_state=0)
    assert isinstance(mem, str) and "weights_bound" in mem and dsk == mem


def test_dask_measures_and_clips_tiny_rows_like_memory(client):
    tiny = X * 1e-200  # squared norms underflow to 0: rows above data_norm = 1e-201 were missed
    mem, dsk = _both(tiny, Y, lambda_=1e-2, eps=1.0, data_norm=1e-201, clip=True,
                     method="output", random_state=0)
    assert mem.n_clipped == dsk.n_clipped == N
    np.testing.assert_allclose(dsk.coef, mem.coef, rtol=1e-9)
