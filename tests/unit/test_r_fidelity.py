"""What an R user porting ``dplr()`` scripts relies on (issue 15, R fidelity and everyday use).

Each test names the R behaviour it mirrors, or the R habit whose Python meaning would
otherwise be silently different (0-based ``target``, ``lambda = NA``, 7-digit verbose lines).
"""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import dplr, erm
from privatelr.datasets import load_iris, load_mtcars

pytestmark = pytest.mark.filterwarnings("ignore:dplr. the response .Species. has 3 classes")


@pytest.fixture
def iris():
    return load_iris()


@pytest.fixture
def iris12():
    """Iris with every measurement divided by 12 (public range [0, 8] cm): rows in the ball."""
    df = load_iris()
    df[df.columns[:4]] /= 12
    return df


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dplr(*args, **kwargs)


# ---- random projection: the same clipping policy as without it -----------------------------

def test_projection_does_not_clip_a_nonprivate_fit(iris):
    # raw iris rows have norms up to ~10: R clips nothing at eps = 0 and neither do we
    m = _quiet("Species ~ .", iris, eps=0, rp_dim=2, random_state=1)
    assert m.n_clipped == 0 and m.spec.preprocess.clip is None
    X, _ = m.spec.transform(iris)
    assert np.sqrt((X[:, 1:] ** 2).sum(axis=1)).max() > 2     # projected rows kept their size
    # and the fit is the non-private fit on the projected rows (no silent rescaling)
    direct = erm.fit(X, np.where(iris.Species == "setosa", -1.0, 1.0), lambda_=m.lambda_,
                     eps=0)
    np.testing.assert_allclose(m.coef, direct.coef, rtol=1e-8, atol=1e-10)


def test_projection_fails_closed_in_a_private_fit_and_clips_on_request(iris):
    with pytest.raises(ValueError, match="data_norm=1.*clip=True"):
        dplr("Species ~ .", iris, eps=1, rp_dim=2, random_state=1)
    m = _quiet("Species ~ .", iris, eps=1, rp_dim=2, clip=True, random_state=1)
    assert m.n_clipped > 0 and m.spec.preprocess.clip == 1.0


# ---- formulas as R users write them --------------------------------------------------------

def test_a_formulaic_formula_object_is_accepted(iris):
    from formulaic import Formula

    a = _quiet(Formula("Species ~ Sepal.Length + Petal.Width"), iris, eps=0)
    b = _quiet("Species ~ Sepal.Length + Petal.Width", iris, eps=0)
    np.testing.assert_array_equal(a.coef, b.coef)


# ---- lambda: R's NA, and 0 as plain maximum likelihood ------------------------------------

def test_lambda_nan_means_the_default(iris12):
    a = _quiet("Species ~ .", iris12, eps=1, lambda_=np.nan, random_state=3)
    b = _quiet("Species ~ .", iris12, eps=1, random_state=3)
    assert a.lambda_ == b.lambda_ and np.array_equal(a.coef, b.coef)


def test_lambda_zero_is_glm_when_not_private():
    import statsmodels.api as sm            # in the test extras: this comparison always runs
    mt = load_mtcars()
    m = dplr("am ~ mpg + wt", mt, eps=0, lambda_=0)
    ref = sm.Logit(mt.am, sm.add_constant(mt[["mpg", "wt"]])).fit(disp=0, tol=1e-12)
    # both are the exact maximum-likelihood estimate: they agree far below 1e-6 (a solver
    # stopping early, or a penalty left in, moves them by more than 1e-3 here)
    np.testing.assert_allclose(m.coef, ref.params.to_numpy(), rtol=1e-6, atol=1e-8)
    assert m.lambda_ == 0 and m.status == "ok"


def test_lambda_zero_names_separation_and_rank(iris):
    with pytest.raises(ValueError, match="separated.*infinite.*lambda_ > 0"):
        dplr("Species ~ .", iris, eps=0, lambda_=0)           # setosa is linearly separable
    with pytest.raises(ValueError, match="full column rank"):
        dplr("am ~ mpg + I(2 * mpg)", load_mtcars(), eps=0, lambda_=0)
    with pytest.raises(ValueError, match="only available without privacy"):
        dplr("am ~ mpg", load_mtcars(), eps=1, lambda_=0)
    with pytest.raises(ValueError, match="lambda_"):
        erm.fit(np.eye(3), np.array([1.0, -1.0, 1.0]), lambda_=0, eps=1)


# ---- R's messages: verbose lines, adjusted lambda, an expensive penalty ----------------------

def _verbose(*args, **kwargs) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dplr(*args, verbose=1, **kwargs)
    return out.getvalue().splitlines()


def test_verbose_lines_print_seven_significant_digits_as_r(iris12):
    lines = _verbose("Species ~ .", iris12, eps=1, random_state=1)
    # R: cat("dplr: set lambda to:", 0.0650138883102196) prints 0.06501389
    assert lines[0] == "dplr: set lambda to: 0.06501389"
    assert "dplr: privacy penalty due to regularizer: 0.1" in lines
    lines = _verbose("Species ~ .", iris12, eps=1, lambda_=1e-4, random_state=1)
    assert "dplr: regularizer too small, adjusted to: 0.01173604" in lines


def test_adjusted_lambda_and_costly_penalty_warn(iris12):
    with pytest.warns(UserWarning, match=r"lambda_=0.0001 is too small.*raised lambda_ to "
                                         r"0.01173604.*lambda_=0.06501389 \(the default rule\)"):
        m = dplr("I(Species == 'setosa') ~ .", iris12, eps=1, lambda_=1e-4, random_state=1)
    assert m.status == "adjusted lambda"
    # penalty 2 log(1 + 0.25 * 2 / (150 * 0.01)) = 0.575 > eps / 2
    with pytest.warns(UserWarning, match=r"penalty of lambda_=0.01 is 0.5753641 of eps=1 \(58%\)"):
        dplr("I(Species == 'setosa') ~ .", iris12, eps=1, lambda_=0.01, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # the default rule costs eps/10: silent
        dplr("I(Species == 'setosa') ~ .", iris12, eps=1, random_state=1)
        dplr("I(Species == 'setosa') ~ .", iris12, eps=1, lambda_=0.01, op=False, random_state=1)


def test_status_spells_unique_outcome_both_ways(iris):
    df = iris[iris.Species == "setosa"]
    m = _quiet("I(Species == 'setosa') ~ Sepal.Length", df, eps=0)
    assert str(m.status) == "unique.outcome"              # what PrivateLR returns
    assert m.status == "unique.outcomes"                  # what its manual says
    again = __import__("privatelr").persist.loads(m.to_json())
    assert again.status == "unique.outcome"


def test_a_numeric_response_that_is_all_ones_keeps_r_coding(iris):
    df = iris.assign(y=1)
    m = _quiet("y ~ Sepal.Length", df, eps=0)
    assert m.predict(df.head(3), type="class").tolist() == [1, 1, 1]


# ---- observation weights ------------------------------------------------------------------

def test_weights_nonprivate_equal_the_weighted_engine_fit_and_are_no_covariate():
    mt = load_mtcars()
    w = np.linspace(0.5, 2.0, len(mt))
    m = dplr("am ~ .", mt.assign(w=w), eps=0, weights="w")
    assert "w" not in m.coefficients.index
    X = np.c_[np.ones(len(mt)), mt.drop(columns="am").to_numpy()]
    ref = erm.fit(X, np.where(mt.am == 1, 1.0, -1.0), lambda_=0.001, eps=0, weights=w,
                  weights_bound=2.0)
    np.testing.assert_allclose(m.coef, ref.coef, rtol=1e-9)
    # one weight per row works the same as a column
    m2 = dplr("am ~ . - w", mt.assign(w=w), eps=0, weights=w)
    np.testing.assert_allclose(m2.coef, m.coef, rtol=1e-12)
    # doubling every weight is doubling the data: a non-private glm with weights 2 and
    # lambda 0 equals the one with weights 1
    a = dplr("am ~ mpg + wt", mt, eps=0, lambda_=0, weights=np.full(len(mt), 2.0))
    b = dplr("am ~ mpg + wt", mt, eps=0, lambda_=0)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-8)


def test_weights_in_a_private_fit_need_and_respect_a_public_bound(iris12):
    df = iris12.assign(w=np.linspace(0.5, 2.0, 150))
    with pytest.raises(ValueError, match="weights_bound"):
        dplr("Species ~ .", df, eps=1, weights="w")
    with pytest.raises(ValueError, match=r"\[0, weights_bound\]"):
        dplr("Species ~ .", df, eps=1, weights="w", weights_bound=1.5)
    m = _quiet("Species ~ .", df, eps=1, weights="w", weights_bound=2.0, random_state=0)
    # the default lambda scales with the weight bound A: c A B^2 / (n (e^(eps/20) - 1))
    assert m.lambda_ == pytest.approx(0.25 * 2.0 * 2.0 / (150 * np.expm1(1 / 20)), rel=1e-12)
    assert m.calibration.weights_bound == 2.0
    with pytest.raises(ValueError, match="not a column"):
        dplr("Species ~ .", df, eps=1, weights="nope", weights_bound=2.0)
    with pytest.raises(ValueError, match="one weight per row"):
        dplr("Species ~ .", df, eps=0, weights=np.ones(3))
