"""privatelr.glm beyond the R reference: statsmodels parity with weights, offsets and
proportions; null deviances; separation; R's spline and approx; input errors.

statsmodels' GLM (IRLS to tol 1e-13) is an independent implementation of the same estimator:
fitted to the same tolerance, coefficients agree to 1e-9, standard errors to 1e-7 relative (both
compute the Fisher information at their final iterate), deviances and log-likelihoods to 1e-9.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import expit, ndtri

from privatelr.glm import GLMFit, Separation, fit_glm, profile_confint
from privatelr.glm.family import deviance, exact_deviance, linkinv, loglik
from privatelr.glm.rinterp import approx, regularize, spline
from privatelr.glm.separation import detect_separation


def _random_model(seed, n=400, d=4, kind="weights"):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, d - 1)) * [1.0, 3.0, 0.2][: d - 1]])
    offset = rng.normal(size=n) * 0.5
    p = expit(X @ rng.normal(size=d) * 0.7 + offset)
    if kind == "trials":
        trials = rng.integers(1, 12, size=n).astype(float)
        successes = rng.binomial(trials.astype(int), p).astype(float)
        return X, successes / trials, trials, offset, successes
    y = (rng.random(n) < p).astype(float)
    w = rng.integers(1, 6, size=n).astype(float) if kind == "weights" else np.ones(n)
    return X, y, w, offset, None


def _statsmodels(X, y, w, offset, successes=None):
    with np.errstate(over="ignore", under="ignore"):
        if successes is not None:
            endog = np.column_stack([successes, w - successes])
            return sm.GLM(endog, X, family=sm.families.Binomial(), offset=offset).fit(tol=1e-13)
        return sm.GLM(y, X, family=sm.families.Binomial(), offset=offset,
                      freq_weights=w).fit(tol=1e-13)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("kind", ["weights", "trials", "plain"])
def test_statsmodels_parity(seed, kind):
    """At a tight tolerance both reach the estimate; at R's default (1e-8 relative change of
    the deviance) the estimate is R's last iterate, within about 1e-7 of it."""
    X, y, w, offset, successes = _random_model(seed, kind=kind)
    fit = fit_glm(X, y, w, offset, tol=1e-13)
    ref = _statsmodels(X, y, w, offset, successes)
    np.testing.assert_allclose(fit.coefficients, ref.params, rtol=1e-9, atol=1e-9)
    default = fit_glm(X, y, w, offset)
    np.testing.assert_allclose(default.coefficients, ref.params, rtol=1e-6)
    np.testing.assert_allclose(fit.std_errors, ref.bse, rtol=1e-7)
    assert fit.deviance == pytest.approx(ref.deviance, rel=1e-9)
    assert fit.null_deviance == pytest.approx(ref.null_deviance, rel=1e-9)
    # the binomial log-likelihood: integer weights on 0/1 responses act as counts, a
    # proportion with weights = trials is binomial (log choose(m, k) included), as R
    assert fit.loglik == pytest.approx(ref.llf, rel=1e-9)
    assert fit.df_residual == X.shape[0] - X.shape[1] and fit.df_null == X.shape[0] - 1
    assert fit.separation.kind == "none"


def test_non_integer_weights_warn_as_r_and_use_rounded_counts():
    X, y, _, offset, _ = _random_model(4, kind="plain")
    w = np.full(y.size, 0.5)
    with pytest.warns(UserWarning, match="non-integer #successes"):
        fit = fit_glm(X, y, w, offset)
    # round(0.5) = 0 trials: every row's log-likelihood term is log 1 = 0, as R's dbinom
    assert fit.loglik == 0.0
    ref = _statsmodels(X, y, w, offset)
    np.testing.assert_allclose(fit.coefficients, ref.params, rtol=1e-9, atol=1e-9)


def test_zero_weights_drop_rows_as_r():
    X, y, w, offset, _ = _random_model(5)
    w[:50] = 0.0
    fit = fit_glm(X, y, w, offset)
    kept = fit_glm(X[50:], y[50:], w[50:], offset[50:])
    np.testing.assert_array_equal(fit.coefficients, kept.coefficients)
    assert (fit.nobs, fit.df_residual) == (350, 346)
    assert fit.bic == pytest.approx(-2 * fit.loglik + 4 * math.log(350), rel=1e-12)


def test_null_deviance_with_offset_refits_the_intercept():
    X, y, w, offset, _ = _random_model(6)
    fit = fit_glm(X, y, w, offset)
    null = _statsmodels(X[:, :1], y, w, offset)
    assert fit.null_deviance == pytest.approx(null.deviance, rel=1e-9)
    no_offset = fit_glm(X, y, w)
    ybar = np.sum(w * y) / np.sum(w)
    assert no_offset.null_deviance == pytest.approx(
        deviance(y, np.full_like(y, ybar), w), rel=1e-12)


def test_null_deviance_without_intercept():
    X, y, w, offset, _ = _random_model(7)
    fit = fit_glm(X[:, 1:], y, w, offset, intercept_column=None)
    assert fit.df_null == y.size and fit.df_residual == y.size - 3
    assert fit.null_deviance == pytest.approx(deviance(y, expit(offset), w), rel=1e-12)
    assert fit.names == ("x0", "x1", "x2")


def test_bool_and_pandas_inputs():
    pd = pytest.importorskip("pandas")
    X, y, _, _, _ = _random_model(8, kind="plain")
    frame = pd.DataFrame(X, columns=["(Intercept)", "a", "b", "c"])
    fit = fit_glm(frame, pd.Series(y.astype(bool)))
    assert fit.names == ("(Intercept)", "a", "b", "c")
    np.testing.assert_array_equal(fit.coefficients, fit_glm(X, y).coefficients)


def test_family_is_rs_guarded_logit():
    eta = np.array([-40.0, -30.0, 0.0, 30.0, 40.0])
    mu = linkinv(eta)
    eps = np.finfo(float).eps
    assert mu[0] == eps / (1 + eps) and mu[-1] == 1 / (1 + eps)   # R's clamps beyond |eta| = 30
    assert mu[1] == pytest.approx(math.exp(-30) / (1 + math.exp(-30)), rel=1e-15)
    y, w = np.array([0.0, 1, 0.3, 1, 0]), np.array([1.0, 2, 3, 1, 1])
    eta = np.array([-2.0, 1.0, 0.5, 3.0, -1.0])
    assert exact_deviance(y, eta, w) == pytest.approx(deviance(y, linkinv(eta), w), rel=1e-13)
    # logLik for 0/1 responses with unit weights is -D/2
    yb, ones = np.array([0.0, 1, 1, 0]), np.ones(4)
    mub = linkinv(np.array([0.3, -0.2, 1.0, -2.0]))
    assert loglik(yb, mub, ones) == pytest.approx(-deviance(yb, mub, ones) / 2, rel=1e-14)


# --- separation ---------------------------------------------------------------------------

def test_complete_separation():
    X = np.column_stack([np.ones(8), np.arange(8.0)])
    y = (np.arange(8) >= 4).astype(float)
    fit = fit_glm(X, y, names=["(Intercept)", "x"])
    s = fit.separation
    assert s.kind == "complete" and s.unbounded == (0, 1) and s.n_separated_rows == 8
    assert s.direction[1] > 0 > s.direction[0]       # x -> +inf, intercept -> -inf
    assert "x -> +inf" in s.message() and "(Intercept) -> -inf" in s.message()
    with pytest.raises(ValueError, match="complete separation"):
        fit.require_mle()


def test_quasi_complete_separation_names_only_the_unbounded_column():
    rng = np.random.default_rng(3)
    n = 200
    g = rng.integers(0, 3, size=n)
    x = rng.normal(size=n)
    X = np.column_stack([np.ones(n), x, g == 1, g == 2]).astype(float)
    y = (rng.random(n) < expit(0.5 * x)).astype(float)
    y[g == 2] = 1.0                                     # level 2 is all successes
    fit = fit_glm(X, y, names=["(Intercept)", "x", "g1", "g2"])
    s = fit.separation
    assert s.kind == "quasi-complete" and s.names == ("g2",) and s.direction[3] > 0
    assert s.n_separated_rows == int(np.sum(g == 2))


def test_proportion_rows_are_never_separated():
    # a row with 0 < y < 1 sits on both sides: no direction can push it
    X = np.column_stack([np.ones(6), np.arange(6.0)])
    y = np.array([0.0, 0, 0, 1, 1, 0.5])
    s = detect_separation(X, y, np.full(6, 2.0))
    assert s.kind == "none"


def test_certificate_fails_but_lp_finds_no_separation():
    # a far row fitted with probability ~e^-38 (R warns: fitted probabilities numerically 0)
    # leaves the residual certificate inconclusive; the linear program decides: not separated
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(size=200) * 2, [-40.0]])
    y = np.concatenate([(rng.random(200) < expit(x[:200])).astype(float), [0.0]])
    fit = fit_glm(np.column_stack([np.ones(201), x]), y)
    assert fit.fitted_boundary
    assert fit.separation.kind == "none" and fit.separation.evidence == "linear program"


def test_separation_check_can_be_skipped():
    X = np.column_stack([np.ones(4), [1.0, 2, 3, 4]])
    fit = fit_glm(X, [0, 0, 1, 1], check_separation=False)
    assert fit.separation == Separation(kind="unknown") and not fit.separation.separated


# --- profile intervals beyond the reference ------------------------------------------------

def test_profile_spline_and_exact_agree_and_exact_is_a_root_with_weights_and_offset():
    X, y, w, offset, _ = _random_model(9, n=300)
    fit = fit_glm(X, y, w, offset)
    spline_ci = profile_confint(fit, X, y, w, offset)
    exact_ci = profile_confint(fit, X, y, w, offset, root="exact")
    np.testing.assert_allclose(spline_ci.as_array(), exact_ci.as_array(), rtol=1e-3)
    q = float(ndtri(0.975))
    for k in range(X.shape[1]):
        for b in (exact_ci.lower[k], exact_ci.upper[k]):
            ref = sm.GLM(y, np.delete(X, k, axis=1), family=sm.families.Binomial(),
                         offset=offset + X[:, k] * b, freq_weights=w).fit(
                start_params=np.delete(fit.coefficients, k), tol=1e-13)
            assert math.sqrt(ref.deviance - fit.deviance) == pytest.approx(q, abs=1e-7)
    # the profile interval is close to Wald's at this n (a sanity bound, not a parity claim)
    wald = fit.wald_confint().as_array()
    width = wald[:, 1] - wald[:, 0]
    assert np.all(np.abs(exact_ci.as_array() - wald) < 0.1 * width[:, None])


def test_profile_confint_refuses_other_data_and_bad_arguments():
    X, y, w, offset, _ = _random_model(10, n=100)
    fit = fit_glm(X, y, w, offset)
    with pytest.raises(ValueError, match="the data the fit was made on"):
        profile_confint(fit, X, y, w)                      # offset forgotten
    with pytest.raises(ValueError, match="columns but the fit has"):
        profile_confint(fit, X[:, :3], y, w, offset)
    with pytest.raises(ValueError, match="no coefficient named 'z'"):
        profile_confint(fit, X, y, w, offset, parm="z")
    with pytest.raises(ValueError, match="position 7 is beyond"):
        fit.wald_confint(parm=7)
    with pytest.raises(ValueError, match="root must be"):
        profile_confint(fit, X, y, w, offset, root="linear")
    with pytest.raises(ValueError, match="method must be"):
        profile_confint(fit, X, y, w, offset, method="score")
    with pytest.raises(ValueError, match="level must be < 1"):
        profile_confint(fit, X, y, w, offset, level=1.0)


# --- R's spline and approx -------------------------------------------------------------------

def test_fmm_spline_reproduces_a_cubic():
    """The fmm end conditions match the third derivative of the cubic through the end points,
    so a cubic is reproduced exactly (a natural or not-a-knot end condition would not: the
    natural spline has zero second derivative at the ends)."""
    x = np.array([-1.0, 0.0, 0.5, 2.0, 3.0, 4.5])
    f = lambda t: 2 * t**3 - t**2 + 3 * t - 1           # noqa: E731
    xs, ys = spline(x, f(x))
    assert xs.size == 18 and xs[0] == -1.0 and xs[-1] == 4.5
    np.testing.assert_allclose(ys, f(xs), rtol=1e-12, atol=1e-12)


def test_spline_three_points_is_the_parabola_and_two_the_line():
    x3 = np.array([0.0, 1.0, 3.0])
    xs, ys = spline(x3, x3**2)
    np.testing.assert_allclose(ys, xs**2, atol=1e-12)
    xs, ys = spline(np.array([1.0, 2.0]), np.array([3.0, 5.0]))
    np.testing.assert_allclose(ys, 2 * xs + 1, atol=1e-12)


def test_regularize_sorts_and_averages_ties_and_approx_is_nan_outside():
    x, y = regularize(np.array([2.0, 1.0, 2.0, 0.0]), np.array([4.0, 1.0, 6.0, 0.0]))
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(y, [0.0, 1.0, 5.0])
    out = approx(np.array([0.0, 1.0, 2.0]), np.array([0.0, 10.0, 30.0]), [-0.1, 0.5, 1.5, 2.0, 2.1])
    np.testing.assert_array_equal(np.isnan(out), [True, False, False, False, True])
    np.testing.assert_allclose(out[1:4], [5.0, 20.0, 30.0])


# --- input errors --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    ({"y": [0, 1, 2, 1]}, "y must hold 0/1 responses or proportions"),
    ({"y": [0, 1, np.nan, 1]}, "y must hold 0/1"),
    ({"y": [0, 1, 1]}, "y must be a 1-D array of length 4"),
    ({"weights": [1, -1, 1, 1]}, "negative weights not allowed"),
    ({"weights": [0, 0, 0, 0]}, "every weight is 0"),
    ({"offset": [0, np.inf, 0, 0]}, "offset contains NaN"),
    ({"X": [[1, 0], [2, 1], [1, 0], [1, 1]]}, "column 0 .* is not all ones"),
    ({"X": [[1, 0], [1, 0], [1, 0], [1, 0]]}, "x1 is all zeros"),
    ({"intercept_column": 5}, "intercept_column = 5 but X has 2 columns"),
    ({"tol": 0}, "tol must be > 0"),
    ({"maxit": 0}, "maxit must be >= 1"),
    ({"names": ["a"]}, "names must have one entry per column"),
])
def test_bad_input_names_the_argument(kwargs, match):
    args = {"X": [[1, 0.0], [1, 1], [1, 2], [1, 3]], "y": [0, 1, 0, 1]}
    args.update(kwargs)
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises((ValueError, TypeError), match=match):
        fit_glm(X, y, **args)


def test_aliased_columns_are_refused_by_name():
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    X = np.column_stack([np.ones(30), x, 2 * x + 1])
    with pytest.raises(ValueError, match="column.* c are linear combinations"):
        fit_glm(X, (rng.random(30) < 0.5).astype(float), names=["(Intercept)", "b", "c"])


def test_result_is_frozen():
    X = np.column_stack([np.ones(6), [0.0, 1, 2, 3, 4, 5]])
    fit = fit_glm(X, [0, 0, 1, 0, 1, 1])
    assert isinstance(fit, GLMFit)
    with pytest.raises(AttributeError):
        fit.deviance = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fit.converged and fit.rank == 2
