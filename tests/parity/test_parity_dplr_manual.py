"""Every example of R PrivateLR's manual (seed 000), translated, runs and matches R's behaviour.

R's examples (help(dplr)):

    data(iris)
    model <- dplr(iris)
    model <- dplr(Species ~ ., iris)
    model <- dplr(I(Species != 'setosa') ~ ., iris, eps=2)
    model <- dplr(iris$Species, iris[,-5])
    p <- model$pred(iris)
    p <- predict(model, iris)
    summary(model)

"Equivalent" means: the same design columns, the same lambda (R's default rule, values in
lambda_default.json), the same status, and private coefficients inside a band that holds with
probability >= 1 - 1e-6. The band: the objective-perturbation minimiser w' satisfies
grad J(w') = -b/n and J is lambda-strongly convex, so ||w' - w*|| <= ||b|| / (n lambda), with
||b|| ~ Gamma(d, 2B/eps'); we use its 1 - 1e-6 quantile. The check runs in PrivateLR's own
calibration (compat="PrivateLR", B = 1) so the draws follow R's law.
"""

import warnings

import numpy as np
import pytest
from scipy.stats import gamma

from privatelr import PrivacyWarning, dplr, predict, summary
from privatelr.datasets import load_iris

COLUMNS = ["(Intercept)", "Sepal.Length", "Sepal.Width", "Petal.Length", "Petal.Width"]
LAMBDA_EPS1 = 0.0325069441551098      # lambda_default.json, n = 150, eps = 1
LAMBDA_EPS2 = 0.0158472199079584      # n = 150, eps = 2


@pytest.fixture(scope="module")
def iris():
    return load_iris()


def _fit(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dplr(*args, **kwargs)


def _in_band(model, ref):
    """||w' - w*|| <= Gamma(d, 2B/eps').ppf(1 - 1e-6) / (n lambda)."""
    d, n = model.d, model.n
    bound = gamma.ppf(1 - 1e-6, d, scale=2 * model.norm_bound / model.eps_eff) / (n * model.lambda_)
    dist = np.linalg.norm(model.coefficients.to_numpy() - ref.coefficients.to_numpy())
    return dist <= bound, dist, bound


@pytest.mark.parametrize("seed", range(5))
def test_first_examples_are_equivalent(iris, seed):
    a = _fit(iris, compat="PrivateLR", random_state=seed)
    b = _fit("Species ~ .", iris, compat="PrivateLR", random_state=seed)
    c = _fit(iris["Species"], iris.iloc[:, :4], compat="PrivateLR", random_state=seed)
    ref = _fit("Species ~ .", iris, eps=0, lambda_=LAMBDA_EPS1)
    for m in (a, b, c):
        assert list(m.coefficients.index) == COLUMNS
        assert m.lambda_ == pytest.approx(LAMBDA_EPS1, rel=1e-12)
        assert m.status == "ok" and m.eps == 1 and m.penalty == pytest.approx(0.1)
        ok, dist, bound = _in_band(m, ref)
        assert ok, (dist, bound)
    # same seed, same data: the three forms give the same draw
    np.testing.assert_allclose(a.coefficients, b.coefficients, rtol=1e-9)
    np.testing.assert_allclose(c.coefficients, b.coefficients, rtol=1e-9)
    assert c.spec.response == "dplr.class" and b.spec.response == "Species"


@pytest.mark.parametrize("seed", range(5))
def test_eps2_example(iris, seed):
    m = _fit("I(Species != 'setosa') ~ .", iris, eps=2, compat="PrivateLR", random_state=seed)
    ref = _fit("I(Species != 'setosa') ~ .", iris, eps=0, lambda_=LAMBDA_EPS2)
    assert list(m.coefficients.index) == COLUMNS
    assert m.lambda_ == pytest.approx(LAMBDA_EPS2, rel=1e-12) and m.status == "ok"
    assert m.penalty == pytest.approx(0.2)
    ok, dist, bound = _in_band(m, ref)
    assert ok, (dist, bound)


def test_pred_predict_summary(iris):
    model = _fit(iris["Species"], iris.iloc[:, :4], compat="PrivateLR", random_state=0)
    p1 = model.pred(iris)
    p2 = predict(model, iris)
    np.testing.assert_array_equal(p1, p2)
    assert p1.shape == (150,) and np.all((p1 >= 0) & (p1 <= 1))
    text = str(summary(model))
    for label in (" Privacy level: 1", " Regularization parameter: 0.0325069441551098",
                  " Convergence of optimization : TRUE", " C-index (AUC):", " Status: ok"):
        assert label in text
    # R's layout, led by the headline that says the compat fit is not private
    head, body = text.split("\n\n", 1)
    assert head.startswith(" NOT PRIVATE: compat='PrivateLR'")
    assert body.startswith("dplr.class ~ Sepal.Length + Sepal.Width + Petal.Length + Petal.Width")


def test_raw_iris_rows_exceed_the_bound_and_we_fail_closed(iris):
    """R silently calibrates for ||x|| <= 1 although iris rows have norm up to 11.1: the
    default refuses (nothing released) and names the fixes; compat='PrivateLR' reproduces R and
    says that the guarantee does not hold; a public bound with clipping makes it hold."""
    with pytest.raises(ValueError, match="above data_norm=1.*clip=True.*compat='PrivateLR'"):
        dplr("I(Species != 'setosa') ~ .", iris, random_state=0)
    with pytest.warns(PrivacyWarning, match="does NOT hold"):
        r = dplr("I(Species != 'setosa') ~ .", iris, random_state=0, compat="PrivateLR")
    assert "NOT PRIVATE" in str(summary(r))
    ok = dplr("I(Species != 'setosa') ~ .", iris, random_state=0, data_norm=20, clip=True)
    assert ok.compat is None and "NOT PRIVATE" not in str(summary(ok))
