"""privatelr.glm against R 4.2's glm(family = binomial), summary.glm, confint (MASS), confint.default.

Every number of tests/fixtures/glm_reference.json (copied from shared/reference) is checked:
estimates, Std. Error, z, p, profile intervals at 95 % and 90 %, Wald intervals, deviance, null
deviance, AIC, BIC, logLik and both degrees of freedom, for the three models there. R's
``birthwt`` models (named by issue 29) have no R reference in shared/reference, so none is
tested here.

Tolerances, and why they are what they are:

* estimates and every likelihood quantity: 1e-9 relative. The IRLS follows R's iterations with
  R's guarded logit, so it stops at R's iterate (measured: 2e-12 on the two regular models,
  1.7e-9 absolute on -34.98 for the separated coefficient, whose value is only where R's
  guards stopped the iterations).
* Std. Error, z, Wald ends: 2e-7 relative. R's vcov uses the working weights of its last IRLS
  step, this package the Fisher information at the estimate (issue 29's brief; statsmodels
  agrees); the two differ by one step's change, measured 5.3e-8 and 7.4e-8 relative. A wrong
  constant (dispersion, a factor 2, n - 1) is off by 1e-2 or more.
* p: 1e-5 relative (p = 2 Phi(-|z|) magnifies a relative change of z by about z^2: 7.4e-8 on
  z = 5.9 gives 2.7e-6 on p = 3.5e-9) and 1e-12 absolute.
* profile ends: 1e-8 relative. The default reproduces MASS's grid and spline, so the ends are
  R's up to the accuracy of the refits at the grid points: R's stop at glm.control's 1e-8
  relative change of the deviance, this package's at a Newton decrement of 1e-12, z to ~1e-13
  (checked against an independent solver); measured 1.6e-9 relative at most, 1.9e-9 for the
  separated model's artefact end 1632076.7 (a spline through points 9e6 apart, from R's own
  iterations, which this package then replays). The issue asks 1e-4; the
  exact root of the profile differs from R's interpolated ends by 1e-4 to 1.3e-3 relative
  (tested below), which is why the grid and spline are reproduced.

The separated model: R's reference numbers for ``vs ~ mpg + factor(cyl)`` (factor(cyl)8 =
-34.98, SE 1.79e7) are R's IRLS stopped at iteration 30, which needs
``glm.control(epsilon, maxit)`` with 2.2e-16 < epsilon <= 2.5e-13 and maxit >= 30: R's default
(1e-8, 25) stops at iteration 18 at -22.98. The reference was evidently made with a tight
control; the test fits it with ``tol=1e-14, maxit=100`` (the other two models converge to the
same iterate under either control).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, ndtri

from conftest import load_fixture
from privatelr.datasets import load_iris, load_mtcars
from privatelr.design import build_design
from privatelr.glm import fit_glm, profile_confint

REFERENCE = load_fixture("glm_reference.json")
MODELS = sorted(REFERENCE)
CONTROL = {"mtcars_vs_mpg_cyl": {"tol": 1e-14, "maxit": 100}}
DATA = {"mtcars": load_mtcars, "iris": load_iris}


def _ref_array(rows):
    return np.array([[np.nan if v == "NA" else v for v in row] for row in rows], dtype=float)


@pytest.fixture(scope="module")
def models():
    """name -> (reference, design, fit), the design from the package's own formula engine."""
    out = {}
    for name in MODELS:
        ref = REFERENCE[name]
        design = build_design(ref["formula"], DATA[ref["data"]](), learn=True)
        fit = fit_glm(design.X, design.y, names=design.spec.design_columns,
                      **CONTROL.get(name, {}))
        out[name] = (ref, design, fit)
    return out


@pytest.mark.parametrize("name", MODELS)
def test_design_columns_are_rs(models, name):
    ref, design, fit = models[name]
    assert list(design.spec.design_columns) == ref["terms"]
    assert fit.names == tuple(ref["terms"])


@pytest.mark.parametrize("name", MODELS)
def test_coefficient_table(models, name):
    ref, _, fit = models[name]
    np.testing.assert_allclose(fit.coefficients, ref["estimate"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit.std_errors, ref["std_error"], rtol=2e-7)
    np.testing.assert_allclose(fit.z_values, ref["z"], rtol=2e-7)
    np.testing.assert_allclose(fit.p_values, ref["p"], rtol=1e-5, atol=1e-12)
    assert fit.converged


@pytest.mark.parametrize("name", MODELS)
def test_likelihood_summaries(models, name):
    ref, _, fit = models[name]
    for field in ("deviance", "null_deviance", "aic", "bic", "loglik"):
        assert getattr(fit, field) == pytest.approx(ref[field], rel=1e-9), field
    assert (fit.df_residual, fit.df_null) == (ref["df_residual"], ref["df_null"])
    # R's conventions tied together: AIC = -2 logLik + 2k, BIC = -2 logLik + k log n
    k = fit.coefficients.size
    assert fit.aic == pytest.approx(-2 * fit.loglik + 2 * k, rel=1e-12)
    assert fit.bic == pytest.approx(-2 * fit.loglik + k * math.log(fit.nobs), rel=1e-12)


@pytest.mark.parametrize("name", MODELS)
def test_wald_confint_is_confint_default(models, name):
    ref, design, fit = models[name]
    expected = _ref_array(ref["confint_wald_95"])
    # relative to the interval's scale (an end near 0, hp's 0.0015, is a difference of two
    # numbers of order 0.03 and carries their 2e-7)
    scale = np.abs(ref["estimate"]) + 1.96 * np.array(ref["std_error"])
    err = np.abs(fit.wald_confint().as_array() - expected) / scale[:, None]
    assert err.max() < 2e-7
    via = profile_confint(fit, design.X, design.y, method="wald")
    np.testing.assert_array_equal(via.as_array(), fit.wald_confint().as_array())


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("level,key", [(0.95, "confint_profile_95"), (0.90, "confint_profile_90")])
def test_profile_confint_is_rs(models, name, level, key):
    ref, design, fit = models[name]
    expected = _ref_array(ref[key])
    ci = profile_confint(fit, design.X, design.y, level=level)
    got = ci.as_array()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    ok = ~np.isnan(expected)
    np.testing.assert_allclose(got[ok], expected[ok], rtol=1e-8)
    # every NA end comes with its reason
    for k, nm in enumerate(ci.names):
        for end, val in (("lower", got[k, 0]), ("upper", got[k, 1])):
            if np.isnan(val):
                assert any(n.startswith(f"{nm}: no {end} end") for n in ci.notes)


def test_parm_by_name_and_position_gives_the_same_rows(models):
    ref, design, fit = models["mtcars_am_wt_hp"]
    by_name = profile_confint(fit, design.X, design.y, parm=["hp", "wt"])
    by_pos = profile_confint(fit, design.X, design.y, parm=[2, 1])
    expected = _ref_array(ref["confint_profile_95"])[[2, 1]]
    np.testing.assert_allclose(by_name.as_array(), expected, rtol=1e-8)
    np.testing.assert_array_equal(by_name.as_array(), by_pos.as_array())
    assert by_name.names == ("hp", "wt") and by_name.parm == (2, 1)


def test_separation_is_flagged_for_the_quasi_separated_model(models):
    _, _, fit = models["mtcars_vs_mpg_cyl"]
    sep = fit.separation
    assert sep.separated and sep.kind == "quasi-complete"
    assert sep.names == ("factor(cyl)8",) and sep.unbounded == (3,)
    assert sep.direction[3] < 0 and sep.evidence == "linear program"
    assert sep.n_separated_rows == 14                  # the 14 eight-cylinder cars, all vs = 0
    assert fit.fitted_boundary                         # R warns: fitted probabilities 0 or 1
    with pytest.raises(ValueError, match=r"separated by factor\(cyl\)8 .*does not exist"):
        fit.require_mle()
    for name in ("mtcars_am_wt_hp", "iris_virginica_sepal"):
        fit = models[name][2]
        assert fit.separation.kind == "none" and fit.separation.evidence == "score certificate"
        assert fit.require_mle() is fit


def test_separated_profile_notes_say_the_finite_end_is_not_a_bound(models):
    _, design, fit = models["mtcars_vs_mpg_cyl"]
    ci = profile_confint(fit, design.X, design.y, parm="factor(cyl)8")
    assert np.isnan(ci.lower[0]) and ci.upper[0] == pytest.approx(1632076.7235186, rel=1e-8)
    assert any("not a bound" in n for n in ci.notes)


def _constrained_deviance(X, y, j, b, start):
    """The deviance refitted with coefficient j held at b, by SciPy's trust-region Newton on the
    logistic likelihood written out here (independent of the package; statsmodels' IRLS has no
    step control and diverges from these starts)."""
    free, off = np.delete(X, j, axis=1), X[:, j] * b

    def dev(beta):
        eta = free @ beta + off
        return 2.0 * np.sum(np.logaddexp(0.0, eta) - y * eta)

    def grad(beta):
        return 2.0 * free.T @ (expit(free @ beta + off) - y)

    def hess(beta):
        p = expit(free @ beta + off)
        return 2.0 * (free * (p * (1 - p))[:, None]).T @ free

    res = minimize(dev, np.delete(start, j), jac=grad, hess=hess, method="trust-exact",
                   options={"gtol": 1e-10})
    # optimal to rounding (status 2: no further improvement possible): the deviance still to
    # gain, about the Newton decrement g' H^-1 g, is negligible
    decrement = res.jac @ np.linalg.solve(hess(res.x), res.jac)
    assert res.success or decrement < 1e-12, res.message
    return res.fun


@pytest.mark.parametrize("name", ["mtcars_am_wt_hp", "iris_virginica_sepal"])
def test_exact_root_is_a_root_and_differs_from_rs_interpolation(models, name):
    """root='exact' solves sqrt(D_j(b) - D) = 1.96 (checked with independent refits); R's
    spline-interpolated ends differ from the root by 1e-4 to 1.3e-3 relative, more than the
    issue's 1e-4 on mtcars, which is why the default reproduces R's grid and spline."""
    ref, design, fit = models[name]
    ci = profile_confint(fit, design.X, design.y, root="exact")
    q = float(ndtri(0.975))
    y = np.asarray(design.y, dtype=float)
    for k in range(3):
        for b in (ci.lower[k], ci.upper[k]):
            dz = _constrained_deviance(design.X, y, k, b, fit.coefficients) - fit.deviance
            assert math.sqrt(dz) == pytest.approx(q, abs=1e-7)
    rel = np.abs(ci.as_array() / _ref_array(ref["confint_profile_95"]) - 1)
    assert 1e-5 < rel.max() < 2e-3


def test_exact_root_on_the_separated_model(models):
    """The coefficient that runs to -inf: lower end -inf, upper end the profile bound (a root
    of the exact likelihood's profile, whose infimum the fit's deviance reaches to 1e-14)."""
    _, design, fit = models["mtcars_vs_mpg_cyl"]
    ci = profile_confint(fit, design.X, design.y, root="exact")
    assert ci.lower[3] == -np.inf and np.isfinite(ci.upper[3])
    assert any("factor(cyl)8: the lower end is -inf" in n for n in ci.notes)
    y = np.asarray(design.y, dtype=float)
    start = np.array([4.75, -0.09, -2.7, 0.0])
    dz = _constrained_deviance(design.X, y, 3, ci.upper[3], start) - fit.deviance
    assert math.sqrt(dz) == pytest.approx(float(ndtri(0.975)), abs=1e-6)
    # the bounded coefficients' exact ends are near R's (the spline's error only)
    expected = _ref_array(REFERENCE["mtcars_vs_mpg_cyl"]["confint_profile_95"])[:3]
    np.testing.assert_allclose(ci.as_array()[:3], expected, rtol=2e-3)
