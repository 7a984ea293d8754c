"""The scikit-learn estimator privatelr.sklearn.DPLogisticRegression."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from privatelr import PrivacyWarning, erm  # noqa: E402
from privatelr.sklearn import DPLogisticRegression, default_lambda  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


# scikit-learn's own contract checks. All apply and pass at the default eps=1 (no expected
# failures); check_array_api_input skips itself unless SCIPY_ARRAY_API is set (we make no
# array-API claim). Multiclass checks are replaced by check_classifier_not_supporting_multiclass
# because the estimator declares tags.classifier_tags.multi_class = False.
@parametrize_with_checks([DPLogisticRegression(), DPLogisticRegression(method="output", eps=5.0,
                                                                      fit_intercept=False)])
def test_sklearn_contract(estimator, check):
    check(estimator)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    z = 2 * X[:, 0] - X[:, 1] + 0.5
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(int)
    return X, y


def test_eps_inf_equals_engine_on_clipped_design():
    X, y = _data()
    B = 1.2
    clf = DPLogisticRegression(eps=np.inf, lambda_=0.01, data_norm=B).fit(X, y)
    norms = np.linalg.norm(X, axis=1)
    Xc = X * np.minimum(1.0, B / norms)[:, None]  # rows above B scaled onto the sphere
    ref = erm.fit(np.c_[np.ones(len(X)), Xc], y, lambda_=0.01, eps=np.inf)
    np.testing.assert_allclose(clf.intercept_, ref.coef[:1], rtol=1e-9)
    np.testing.assert_allclose(clf.coef_[0], ref.coef[1:], rtol=1e-9)
    assert clf.result_.data_norm == pytest.approx(np.sqrt(1 + B * B))


def test_private_fit_calibrated_with_design_bound():
    X, y = _data()
    clf = DPLogisticRegression(eps=1.0, lambda_=0.05, data_norm=2.0, random_state=0).fit(X, y)
    cal = clf.result_.calibration
    assert cal.data_norm == pytest.approx(np.sqrt(5.0))  # row [1, x] with ||x|| <= 2
    assert cal.penalty == pytest.approx(2 * np.log1p(0.25 * 5.0 / (len(y) * 0.05)))
    no_icpt = DPLogisticRegression(eps=1.0, lambda_=0.05, data_norm=2.0, fit_intercept=False,
                                   random_state=0).fit(X, y)
    assert no_icpt.result_.data_norm == 2.0 and no_icpt.intercept_.tolist() == [0.0]


def test_default_lambda_matches_privatelr_with_unit_bound():
    # PrivateLR's dplr default: 2 log(1 + 1/(4 n lambda)) = eps/10; 0.001 for eps = 0
    cases = json.loads((FIXTURES / "lambda_default.json").read_text())
    for case in cases:
        assert default_lambda(case["n"], case["eps"]) == pytest.approx(case["lambda"], rel=1e-9)
    X, y = _data(n=150)
    clf = DPLogisticRegression(eps=1.0, fit_intercept=False, random_state=0).fit(X / 2, y)
    assert clf.result_.calibration.lambda_requested == pytest.approx(0.0325069441551098)
    assert clf.result_.penalty == pytest.approx(0.1)


def test_clip_false_warns_for_rows_outside_the_bound():
    X, y = _data()
    with pytest.warns(PrivacyWarning, match="data_norm"):
        DPLogisticRegression(clip=False, random_state=0).fit(X, y)


def test_labels_probabilities_and_decision_agree():
    X, y = _data()
    labels = np.where(y == 1, "spam", "ham")
    clf = DPLogisticRegression(eps=2.0, random_state=3).fit(X, labels)
    assert clf.classes_.tolist() == ["ham", "spam"]
    z = clf.decision_function(X)
    np.testing.assert_allclose(z, X @ clf.coef_[0] + clf.intercept_[0])
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-z)))
    np.testing.assert_allclose(clf.predict_log_proba(X), np.log(proba), rtol=1e-10)
    np.testing.assert_array_equal(clf.predict(X), np.where(z > 0, "spam", "ham"))
    assert clf.score(X, labels) > 0.6


def test_seeded_fit_is_reproducible_and_unseeded_is_random():
    X, y = _data()
    a = DPLogisticRegression(random_state=5).fit(X, y).coef_
    b = DPLogisticRegression(random_state=5).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    c = DPLogisticRegression().fit(X, y).coef_
    d = DPLogisticRegression().fit(X, y).coef_
    assert not np.array_equal(c, d)


def test_pipeline_with_public_scaling_and_params():
    X, y = _data()
    pipe = make_pipeline(FunctionTransformer(lambda A: A / np.sqrt(3)),  # public constant
                         DPLogisticRegression(eps=1.0, random_state=0))
    pipe.set_params(dplogisticregression__eps=3.0, dplogisticregression__method="output")
    pipe.fit(X, y)
    assert pipe.named_steps["dplogisticregression"].result_.method == "output"
    assert pipe.predict(X).shape == (len(y),)
    est = DPLogisticRegression(eps=0.5, lambda_=0.1)
    assert clone(est).get_params() == est.get_params()
    assert est.get_params()["lambda_"] == 0.1


@pytest.mark.parametrize("params, exc, match", [
    (dict(method="input"), ValueError, "method"),
    (dict(eps=-1.0), ValueError, "eps"),
    (dict(data_norm=0.0), ValueError, "data_norm"),
    (dict(lambda_=0.0), ValueError, "lambda_"),
    (dict(lambda_="big"), TypeError, "lambda_"),
    (dict(clip="yes"), TypeError, "clip"),
    (dict(fit_intercept=1), TypeError, "fit_intercept"),
])
def test_parameter_validation(params, exc, match):
    X, y = _data(n=50)
    with pytest.raises(exc, match=match):
        DPLogisticRegression(**params).fit(X, y)


def test_multiclass_rejected():
    X, _ = _data(n=30)
    with pytest.raises(ValueError, match="binary"):
        DPLogisticRegression().fit(X, np.arange(30) % 3)


def test_package_import_does_not_import_sklearn():
    code = "import sys, privatelr; assert 'sklearn' not in sys.modules, 'sklearn imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
