"""The scikit-learn estimator privatelr.sklearn.DPLogisticRegression."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer  # noqa: E402

from privatelr import PrivacyAccountant, PrivacyWarning, erm  # noqa: E402
from privatelr.calibration import default_lambda  # noqa: E402
from privatelr.sklearn import DPLogisticRegression  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


# scikit-learn's own contract checks (check_estimator) run in tests/unit/test_sklearn_checks.py,
# which pins, per configuration, which checks pass and why each other one fails: the table of
# docs/sklearn.md.


def _data(n=400, seed=0):
    """Rows in [-1, 1]^3: norms up to sqrt(3), above the default data_norm=1 for some."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    z = 2 * X[:, 0] - X[:, 1] + 0.5
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(int)
    return X, y


def test_eps_inf_equals_engine_on_clipped_design():
    X, y = _data()
    B = 1.2
    clf = DPLogisticRegression(eps=np.inf, lambda_=0.01, data_norm=B, clip=True).fit(X, y)
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


def test_clip_false_fails_closed_for_rows_outside_the_bound():
    X, y = _data()
    with pytest.raises(ValueError, match="data_norm=1.*clip=True"):
        DPLogisticRegression(clip=False, random_state=0).fit(X, y)
    assert DPLogisticRegression(clip=False, eps=0).fit(X, y).n_clipped_ == 0   # not private


def test_default_fails_closed_with_dplrs_message_and_clip_counts():
    X, y = _data()
    over = int((np.linalg.norm(X, axis=1) > 1.0).sum())
    assert 0 < over < len(y)
    acc = PrivacyAccountant(1.0)
    with pytest.raises(ValueError) as info:
        DPLogisticRegression(accountant=acc, random_state=0).fit(X, y)     # clip=False default
    # the one message of erm (dplr's), naming the three fixes; nothing charged
    assert str(info.value).startswith(erm.OUTSIDE_BOUND.split("{")[0] + "X")
    for fix in ("clip=True", "data_norm", "privatelr.public_bounds"):
        assert fix in str(info.value)
    assert acc.spent() == (0.0, 0.0)
    clf = DPLogisticRegression(clip=True, accountant=acc, random_state=0).fit(X, y)
    assert clf.n_clipped_ == over and acc.spent() == (1.0, 0.0)
    # a larger public bound needs no clipping
    big = DPLogisticRegression(data_norm=float(np.sqrt(3)), random_state=0).fit(X, y)
    assert big.n_clipped_ == 0


def test_classes_are_declared_in_a_private_fit():
    X, y = _data()
    X = X / np.sqrt(3)                 # a public rescaling into the unit ball
    labels = np.where(y == 1, "spam", "ham")
    with pytest.raises(ValueError, match="classes=\\[negative, positive\\]"):
        DPLogisticRegression(eps=1.0, random_state=0).fit(X, labels)
    # the audit's neighbours: labels {a, c} vs {c, d} no longer flip the model's classes
    a = DPLogisticRegression(eps=1.0, classes=["a", "c"], random_state=0)
    with pytest.raises(ValueError, match="outside classes"):
        a.fit(X, np.where(y == 1, "c", "d"))
    fitted = a.fit(X, np.where(y == 1, "c", "a"))
    assert fitted.classes_.tolist() == ["a", "c"]
    # 0/1 and bool labels declare themselves; eps=0 may learn
    assert DPLogisticRegression(random_state=0).fit(X, y).classes_.tolist() == [0, 1]
    assert DPLogisticRegression(random_state=0).fit(X, y == 1).classes_.tolist() == [False, True]
    assert DPLogisticRegression(eps=0).fit(X, labels).classes_.tolist() == ["ham", "spam"]


def test_labels_probabilities_and_decision_agree():
    X, y = _data()
    X = X / np.sqrt(3)                 # a public rescaling into the unit ball
    labels = np.where(y == 1, "spam", "ham")
    clf = DPLogisticRegression(eps=2.0, classes=["ham", "spam"], random_state=3).fit(X, labels)
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
    X = X / np.sqrt(3)                 # a public rescaling into the unit ball
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


def test_three_classes_without_classes_name_the_fix():
    # issue 29: scikit-learn's bare "Only binary classification is supported" did not say that
    # declaring the classes fits the multinomial model; private or not, the message names it
    X, _ = _data(n=30)
    for eps in (1.0, 0.0):
        with pytest.raises(ValueError, match=r"Only binary classification is supported.*3 "
                                             r"classes \(0, 1, 2\).*pass classes=\[\.\.\.\]"):
            DPLogisticRegression(eps=eps, clip=True).fit(X, np.arange(30) % 3)
    assert DPLogisticRegression(eps=0, classes=[0, 1, 2]).fit(X, np.arange(30) % 3) \
        .coef_.shape == (3, 3)


def test_package_import_does_not_import_sklearn():
    code = "import sys, privatelr; assert 'sklearn' not in sys.modules, 'sklearn imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- alpha, the scikit-learn name of λ
def _inside(n=300, seed=1):
    """Rows inside the unit ball (norm <= 0.7 * sqrt(2) < 1) and 0/1 labels."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.7, 0.7, size=(n, 2))
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def test_alpha_is_lambda_and_lambda_underscore_its_alias():
    X, y = _inside()
    a = DPLogisticRegression(alpha=0.02, random_state=4).fit(X, y)
    b = DPLogisticRegression(lambda_=0.02, random_state=4).fit(X, y)
    c = DPLogisticRegression(alpha=0.02, lambda_=0.02, random_state=4).fit(X, y)  # same value
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.coef_, c.coef_)
    assert a.lambda_used_ == 0.02 and a.result_.calibration.lambda_requested == 0.02
    # both are parameters: get_params / clone / set_params carry them
    est = DPLogisticRegression(alpha=0.5)
    assert est.get_params()["alpha"] == 0.5 and est.get_params()["lambda_"] is None
    assert clone(est).get_params() == est.get_params()
    assert est.set_params(alpha=None, lambda_=0.3).get_params()["lambda_"] == 0.3
    with pytest.raises(ValueError, match="alpha=0.1 and lambda_=0.2.*alias"):
        DPLogisticRegression(alpha=0.1, lambda_=0.2).fit(X, y)
    # objective perturbation's adjustment: lambda_used_ is the larger lambda* actually used
    with warnings.catch_warnings():            # the engine may say that lambda was adjusted
        warnings.simplefilter("ignore", UserWarning)
        tiny = DPLogisticRegression(alpha=1e-8, random_state=0).fit(X, y)
    assert tiny.result_.status == "adjusted lambda" and tiny.lambda_used_ > 1e-8


@pytest.mark.parametrize("params, exc, match", [
    (dict(alpha=0.0), ValueError, "alpha"),
    (dict(alpha=-1.0), ValueError, "alpha"),
    (dict(alpha="big"), TypeError, "alpha"),
    (dict(alpha=True), TypeError, "alpha"),
    (dict(sample_weight_bound=0.0), ValueError, "sample_weight_bound"),
    (dict(sample_weight_bound="1"), TypeError, "sample_weight_bound"),
])
def test_new_parameters_are_validated(params, exc, match):
    X, y = _inside(n=40)
    with pytest.raises(exc, match=match):
        DPLogisticRegression(**params).fit(X, y)


# ---------------------------------------------------------------- sample_weight
def test_private_sample_weight_needs_its_public_bound_before_any_data_or_charge():
    X, y = _inside()
    acc = PrivacyAccountant(1.0)
    with pytest.raises(ValueError, match="sample_weight_bound=<bound>"):
        DPLogisticRegression(accountant=acc).fit(X, y, sample_weight=np.ones(len(y)))
    assert acc.spent() == (0.0, 0.0)


@pytest.mark.parametrize("bad, match", [
    (lambda n: np.r_[np.ones(n - 1), 2.5], r"sample_weight must lie in \[0, sample_weight_bound\]"),
    (lambda n: np.r_[np.ones(n - 1), -0.5], r"sample_weight must lie in \[0, sample_weight_bound\]"),
    (lambda n: np.r_[np.ones(n - 1), np.nan], "sample_weight contains NaN"),
    (lambda n: np.r_[np.ones(n - 1), np.inf], "sample_weight contains NaN"),
    (lambda n: np.ones(n - 1), "sample_weight must be a 1-D array of length"),
    (lambda n: np.zeros(n), "sample_weight is zero for every row"),
])
def test_weights_outside_the_bound_fail_closed(bad, match):
    X, y = _inside()
    acc = PrivacyAccountant(5.0)
    est = DPLogisticRegression(sample_weight_bound=2.0, accountant=acc, random_state=0)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y, sample_weight=bad(len(y)))
    assert acc.spent() == (0.0, 0.0) and not hasattr(est, "coef_")


def test_weighted_fit_is_the_engines_weighted_fit_calibrated_with_the_bound():
    X, y = _inside()
    rng = np.random.default_rng(2)
    w = rng.uniform(0.0, 3.0, size=len(y))
    A = 3.0
    design = np.c_[np.ones(len(y)), X]
    # private: the same noise and coefficients as erm.fit with weights and weights_bound
    clf = DPLogisticRegression(eps=1.0, alpha=0.05, sample_weight_bound=A,
                               random_state=7).fit(X, y, sample_weight=list(w))
    ref = erm.fit(design, y, lambda_=0.05, eps=1.0, data_norm=np.sqrt(2.0), weights=w,
                  weights_bound=A, random_state=7)
    np.testing.assert_allclose(np.r_[clf.intercept_, clf.coef_[0]], ref.coef, rtol=1e-12)
    # the noise is calibrated for A: penalty 2 log(1 + c A B^2 / (n lambda)), c = 1/4, B^2 = 2
    cal = clf.result_.calibration
    assert cal.weights_bound == A
    assert cal.penalty == pytest.approx(2 * np.log1p(0.25 * A * 2.0 / (len(y) * 0.05)))
    # the default lambda is the package's rule for the weight bound too
    dflt = DPLogisticRegression(eps=1.0, sample_weight_bound=A, random_state=7).fit(
        X, y, sample_weight=w)
    assert dflt.result_.calibration.lambda_requested == pytest.approx(
        default_lambda(len(y), 1.0, data_norm=np.sqrt(2.0), weights_bound=A), rel=1e-12)
    # weights of one under a bound of one are the unweighted fit, bit for bit
    ones = DPLogisticRegression(alpha=0.05, sample_weight_bound=1.0, random_state=3).fit(
        X, y, sample_weight=np.ones(len(y)))
    plain = DPLogisticRegression(alpha=0.05, random_state=3).fit(X, y)
    np.testing.assert_allclose(ones.coef_, plain.coef_, rtol=1e-12)


def test_eps_zero_with_weights_is_a_plain_weighted_fit():
    pd = pytest.importorskip("pandas")
    X, y = _inside()
    w = np.random.default_rng(3).uniform(0.0, 4.0, size=len(y))
    clf = DPLogisticRegression(eps=0, alpha=0.01).fit(X, y, sample_weight=pd.Series(w))
    ref = erm.fit(np.c_[np.ones(len(y)), X], y, lambda_=0.01, eps=0, data_norm=np.sqrt(2.0),
                  weights=w, weights_bound=4.0)
    np.testing.assert_allclose(np.r_[clf.intercept_, clf.coef_[0]], ref.coef, rtol=1e-9)
    # doubling the positive rows' weights moves the intercept towards them (the weights count)
    heavy = DPLogisticRegression(eps=0, alpha=0.01).fit(X, y, sample_weight=np.where(y, 2., 1.))
    assert heavy.intercept_[0] > DPLogisticRegression(eps=0, alpha=0.01).fit(X, y).intercept_[0]
    with pytest.raises(ValueError, match=r"sample_weight must lie in \[0"):
        DPLogisticRegression(eps=0).fit(X, y, sample_weight=-np.ones(len(y)))


# ---------------------------------------------------------------- n_iter_
def test_n_iter_is_the_solvers_and_is_not_released():
    import pickle

    X, y = _inside()
    clf = DPLogisticRegression(eps=1.0, alpha=0.01, random_state=5).fit(X, y)
    ref = erm.fit(np.c_[np.ones(len(y)), X], y, lambda_=0.01, eps=1.0, data_norm=np.sqrt(2.0),
                  random_state=5)
    assert clf.n_iter_.shape == (1,) and clf.n_iter_[0] == ref.iterations > 0
    back = pickle.loads(pickle.dumps(clf))
    assert not hasattr(back, "n_iter_") and not hasattr(back, "n_clipped_")
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))


# ---------------------------------------------------------------- the accountant
def test_each_fit_charges_eps_and_a_refused_fit_reads_nothing():
    X, y = _inside()
    acc = PrivacyAccountant(1.0)
    est = DPLogisticRegression(eps=0.4, accountant=acc, random_state=0)
    est.fit(X, y)
    est.fit(X, y)
    assert acc.spent()[0] == pytest.approx(0.8) and len(acc.ledger) == 2
    from privatelr.exceptions import BudgetExceededError

    with pytest.raises(BudgetExceededError):
        est.fit("not data", y)          # refused on the budget, before X is read
    with pytest.raises(ValueError, match="non-private fit"):
        DPLogisticRegression(eps=0, accountant=acc).fit(X, y)
    with pytest.raises(TypeError, match="accountant must be a privatelr.PrivacyAccountant"):
        DPLogisticRegression(accountant=1.0).fit(X, y)
    assert len(acc.ledger) == 2


def test_an_accountant_is_never_copied():
    import copy
    import pickle

    acc = PrivacyAccountant(2.0)
    assert copy.copy(acc) is acc and copy.deepcopy(acc) is acc
    assert copy.deepcopy({"a": [acc]})["a"][0] is acc
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(acc)
    est = DPLogisticRegression(accountant=acc)
    assert clone(est).accountant is acc
    with pytest.raises(TypeError, match="cannot be pickled"):     # e.g. to a joblib worker
        pickle.dumps(est)
    X, y = _inside()
    fitted = est.set_params(random_state=0).fit(X, y)
    back = pickle.loads(pickle.dumps(fitted))                      # a release: no ledger in it
    assert back.accountant is None and fitted.accountant is acc
    twin = copy.deepcopy(fitted)                # a copy in this process keeps the one ledger
    assert twin.accountant is acc and twin.random_state == 0
    np.testing.assert_array_equal(twin.coef_, fitted.coef_)
    twin.fit(X, y)
    assert len(acc.ledger) == 2


def test_grid_search_and_cross_validation_charge_the_one_ledger_and_warn():
    from sklearn.model_selection import GridSearchCV, cross_val_score

    X, y = _inside(n=240)
    acc = PrivacyAccountant(10.0)
    est = DPLogisticRegression(eps=0.5, accountant=acc, random_state=0)
    with pytest.warns(PrivacyWarning, match=r"GridSearchCV.*folds x candidates x eps.*"
                                            r"tune_classification_model.*dplr_tune"):
        GridSearchCV(est, {"alpha": [0.1, 1.0]}, cv=3).fit(X, y)
    # 2 candidates x 3 folds + the refit, each eps = 0.5, on the caller's ledger
    assert len(acc.ledger) == 7 and acc.spent()[0] == pytest.approx(3.5)
    with pytest.warns(PrivacyWarning, match="cross_val_score"):
        cross_val_score(est, X, y, cv=2)
    assert len(acc.ledger) == 9 and acc.spent()[0] == pytest.approx(4.5)
    # a search that would run past the budget: the refused fits charge nothing
    from sklearn.exceptions import FitFailedWarning

    small = PrivacyAccountant(1.0)
    with pytest.warns(PrivacyWarning), pytest.warns(FitFailedWarning, match="exceed the privacy"):
        scores = cross_val_score(est.set_params(accountant=small), X, y, cv=3,
                                 error_score=np.nan)
    assert np.isnan(scores[2]) and small.spent()[0] == pytest.approx(1.0)


def test_no_model_selection_warning_outside_a_search_or_without_privacy():
    from sklearn.model_selection import cross_val_score

    X, y = _inside()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        DPLogisticRegression(eps=1.0, random_state=0).fit(X, y)
        make_pipeline(FunctionTransformer(lambda A: A), DPLogisticRegression(random_state=0)
                      ).fit(X, y)
        cross_val_score(DPLogisticRegression(eps=0), X, y, cv=2)   # not private: no eps spent
