"""Private model selection (privatelr.tuning.tune_classification_model), DPpack style."""

import dataclasses

import numpy as np
import pytest

import privatelr.tuning as tuning
from privatelr import SVMDP, LogisticRegressionDP, tune_classification_model
from privatelr.results import TuningRecord
from privatelr.tuning import dppack_split


def _bands(N=200, seed=0):
    """The seed's R example data: two Gaussian bands, every 10th row held out for testing."""
    rng = np.random.default_rng(seed)
    t = np.linspace(-0.25, 0.25, N)
    X = np.vstack([np.c_[3 * t, rng.normal(mu, 0.1, N) - t] for mu in (-0.2, 0.2)])
    y = np.repeat([0, 1], N).reshape(-1, 1)  # R's y is a one-column matrix
    test = np.arange(0, 2 * N, 10)
    keep = np.setdiff1d(np.arange(2 * N), test)
    return X[keep], y[keep], X[test], y[test].ravel()


def _candidates(monkeypatch):
    """Record every candidate the tuner fits (copies: the caller's objects are not fitted)."""
    seen, original = [], tuning.CMSModel.fit

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        seen.append(self)
        return out

    monkeypatch.setattr(tuning.CMSModel, "fit", spy)
    return seen


def test_split_matches_dppack_indexing_by_hand():
    # R: validate = seq(m+1, n, m+1), group i = seq(i, n, m+1) (1-based). n = 10, m = 2:
    # seq(1,10,3) = 1 4 7 10, seq(2,10,3) = 2 5 8, seq(3,10,3) = 3 6 9  -> minus one
    train, valid = dppack_split(10, 2)
    assert [g.tolist() for g in train] == [[0, 3, 6, 9], [1, 4, 7]]
    assert valid.tolist() == [2, 5, 8]
    # n = 11, m = 3: seq(1,11,4) = 1 5 9, seq(2,11,4) = 2 6 10, seq(3,11,4) = 3 7 11,
    # seq(4,11,4) = 4 8
    train, valid = dppack_split(11, 3)
    assert [g.tolist() for g in train] == [[0, 4, 8], [1, 5, 9], [2, 6, 10]]
    assert valid.tolist() == [3, 7]
    # disjoint and covering
    allrows = np.sort(np.concatenate(train + [valid]))
    np.testing.assert_array_equal(allrows, np.arange(11))
    with pytest.raises(ValueError, match="m \\+ 1"):
        dppack_split(3, 3)


def test_each_model_is_fitted_on_its_own_group(monkeypatch):
    X, y, _, _ = _bands(N=40)
    y = y.ravel()
    models = [LogisticRegressionDP(eps=np.inf, gamma=g) for g in (10.0, 1.0, 0.1)]
    fitted = _candidates(monkeypatch)
    tuned = tune_classification_model(models, X, y, [1, 1], [-1, -1], random_state=0)
    fitted = list(fitted)  # the reference fits below are recorded too
    assert len(fitted) == 3 and not any(c is mdl for c in fitted for mdl in models)
    for j, cand in enumerate(fitted):
        assert cand.gamma == models[j].gamma
        rows = [i for i in range(len(y)) if i % 4 == j]  # hand-made DPpack groups, m + 1 = 4
        ref = LogisticRegressionDP(eps=np.inf, gamma=cand.gamma).fit(X[rows], y[rows], [1, 1],
                                                                     [-1, -1])
        np.testing.assert_allclose(cand.coeff, ref.coeff, rtol=1e-10)
        assert cand.result_.n == len(rows)
    # only the chosen object of the caller's list is fitted: with its candidate's fit
    j = tuned.tuning_.chosen
    assert tuned is models[j]
    np.testing.assert_array_equal(tuned.coeff, fitted[j].coeff)
    assert all(mdl.coeff is None and mdl.result_ is None for i, mdl in enumerate(models) if i != j)


def test_seed_r_example_selects_a_model():
    # tune_classification_model's R example: SVMs with output perturbation, gamma grid
    # (100, 1, 1e-4), eps = 1, uniform weights with the last one halved, weight bound 1.
    X, y, Xt, yt = _bands()
    weights = np.ones(len(y))
    weights[-1] = 0.5
    grid = (100, 1, 0.0001)
    models = [SVMDP("l2", 1, g, perturbation_method="output") for g in grid]
    tuned = tune_classification_model(models, X, y, [1, 1], [-1, -1], weights=weights,
                                      weights_upper_bound=1, random_state=42)
    assert any(tuned is mdl for mdl in models)
    assert tuned.gamma in grid
    assert tuned.tuning_ == TuningRecord(candidates=grid, chosen=grid.index(tuned.gamma), eps=1.0,
                                         group_sizes=(90, 90, 90, 90))
    pred = tuned.predict(Xt)
    assert pred.shape == yt.shape and set(np.unique(pred)) <= {0, 1}
    assert tuned.result_.weights_bound == 1.0
    # reproducible with the same seed
    again = tune_classification_model([SVMDP("l2", 1, g, perturbation_method="output")
                                       for g in grid], X, y, [1, 1], [-1, -1], weights=weights,
                                      weights_upper_bound=1, random_state=42)
    assert again.gamma == tuned.gamma
    np.testing.assert_array_equal(again.coeff, tuned.coeff)


def test_large_eps_picks_fewest_validation_errors(monkeypatch):
    X, y, _, _ = _bands(N=150)
    y = y.ravel()
    fitted = _candidates(monkeypatch)
    for s in range(5):
        # a good linear model, a useless kernel model (kernel width far too small: features are
        # noise) and a strongly over-regularised one
        models = [SVMDP(eps=200.0, gamma=1.0, kernel="Gaussian", D=20, kernel_param=1e5),
                  LogisticRegressionDP(eps=200.0, gamma=1.0),
                  SVMDP(eps=200.0, gamma=1.0, kernel="Gaussian", D=20, kernel_param=3e4)]
        fitted.clear()
        tuned = tune_classification_model(models, X, y, [1, 1], [-1, -1], random_state=s)
        _, valid = dppack_split(len(y), len(models))
        errors = [np.sum(m.predict(X[valid]) != y[valid]) for m in fitted]
        assert min(errors) + 10 <= sorted(errors)[1]  # a clear winner (> 10 errors apart)
        # P(not the best) <= 2 exp(-200 * 10 / 2): the choice is the argmin
        assert errors[tuned.tuning_.chosen] == min(errors), errors


def test_mechanism_receives_minus_errors_sensitivity_one_and_common_eps(monkeypatch):
    X, y, _, _ = _bands(N=60)
    y = y.ravel()
    seen = {}

    def spy(utility, eps, sensitivity, measure=None, random_state=None):
        seen.update(utility=np.asarray(utility), eps=eps, sensitivity=sensitivity)
        return 1

    monkeypatch.setattr(tuning, "exponential_mechanism", spy)
    fitted = _candidates(monkeypatch)
    models = [LogisticRegressionDP(eps=0.5, gamma=g) for g in (1.0, 2.0)]
    tuned = tune_classification_model(models, X, y, [1, 1], [-1, -1], random_state=0)
    assert tuned is models[1]
    _, valid = dppack_split(len(y), 2)
    errors = np.array([np.sum(m.predict(X[valid]) != y[valid]) for m in fitted])
    np.testing.assert_array_equal(seen["utility"], -errors)
    assert seen["eps"] == 0.5 and seen["sensitivity"] == 1.0


def test_record_does_not_hold_error_counts():
    names = {f.name for f in dataclasses.fields(TuningRecord)}
    assert names == {"candidates", "chosen", "eps", "group_sizes", "selection"}


def test_add_bias_is_passed_to_fit_and_predict(monkeypatch):
    X, y, _, _ = _bands(N=60)
    models = [LogisticRegressionDP(eps=np.inf, gamma=g) for g in (1.0, 0.1)]
    fitted = _candidates(monkeypatch)
    tuned = tune_classification_model(models, X + 0.5, y, [1.5, 1.5], [-0.5, -0.5],
                                      add_bias=True, random_state=0)
    assert len(fitted) == 2 and all(m.coeff.shape == (3,) and m.add_bias_ for m in fitted)
    assert tuned.coeff.shape == (3,) and tuned.add_bias_
    assert tuned.predict(X + 0.5, add_bias=True).shape == (len(X),)


def test_validation():
    X, y, _, _ = _bands(N=30)
    with pytest.raises(ValueError, match="eps"):
        tune_classification_model([LogisticRegressionDP(eps=1, gamma=1),
                                   LogisticRegressionDP(eps=2, gamma=1)], X, y, [1, 1], [-1, -1])
    with pytest.raises(ValueError, match="empty"):
        tune_classification_model([], X, y, [1, 1], [-1, -1])
    with pytest.raises(TypeError, match="models"):
        tune_classification_model(LogisticRegressionDP(eps=1, gamma=1), X, y, [1, 1], [-1, -1])
    with pytest.raises(TypeError, match="models\\[1\\]"):
        tune_classification_model([LogisticRegressionDP(eps=1, gamma=1), "svm"], X, y, [1, 1],
                                  [-1, -1])
    m = LogisticRegressionDP(eps=1, gamma=1)
    with pytest.raises(ValueError, match="twice"):
        tune_classification_model([m, m], X, y, [1, 1], [-1, -1])
    with pytest.raises(ValueError, match="rows"):
        tune_classification_model([LogisticRegressionDP(eps=1, gamma=g) for g in (1, 2, 3)],
                                  X[:3], y[:3], [1, 1], [-1, -1])
    with pytest.raises(ValueError, match="y"):
        tune_classification_model([m], X, y[:-1], [1, 1], [-1, -1])
    with pytest.raises(ValueError, match="weights"):
        tune_classification_model([m], X, y, [1, 1], [-1, -1], weights=np.ones(3),
                                  weights_upper_bound=1)
    with pytest.raises(ValueError, match="weights_upper_bound"):
        tune_classification_model([m], X, y, [1, 1], [-1, -1], weights=np.ones(len(y)))
    with pytest.raises(ValueError, match="upper_bounds and lower_bounds are required"):
        tune_classification_model([m], X, y)


# ---------------------------------------------------------------- DPLogisticRegression candidates
def _estimators(**kw):
    pytest.importorskip("sklearn")
    from privatelr.sklearn import DPLogisticRegression

    kw.setdefault("eps", 1.0)
    return [DPLogisticRegression(alpha=a, **kw) for a in (0.1, 1.0, 10.0)]


def _unit_bands(N=150):
    X, y, _, _ = _bands(N=N)
    return X * 0.8, np.where(y.ravel() == 1, "yes", "no")     # inside the unit ball, public scale


def test_estimator_candidates_are_fitted_as_themselves_on_their_groups():
    from privatelr import PrivacyAccountant, exponential_mechanism
    from sklearn.base import clone

    X, y = _unit_bands()
    assert np.linalg.norm(X, axis=1).max() <= 1.0
    acc = PrivacyAccountant(1.0)
    models = _estimators(classes=["no", "yes"], accountant=acc, random_state=123)
    tuned = tune_classification_model(models, X, y, random_state=5)
    # one spend of eps on the candidates' (common) ledger, none per candidate fit
    assert len(acc.ledger) == 1 and acc.spent() == (1.0, 0.0)
    # the same draws by hand: candidate j is a clone fitted on group j from the one Generator,
    # then the exponential mechanism on minus the validation errors, sensitivity 1
    train, valid = dppack_split(len(y), 3)
    rng = np.random.default_rng(5)
    by_hand = [clone(m).set_params(accountant=None, random_state=rng).fit(X[g], y[g])
               for m, g in zip(models, train)]
    errors = np.array([np.sum(f.predict(X[valid]) != y[valid]) for f in by_hand])
    chosen = exponential_mechanism(-errors, 1.0, 1.0, random_state=rng)
    assert tuned is models[chosen] and tuned.tuning_.chosen == chosen
    np.testing.assert_array_equal(tuned.coef_, by_hand[chosen].coef_)
    # usable as the input type, with the caller's own settings kept
    assert tuned.classes_.tolist() == ["no", "yes"] and set(tuned.predict(X[:5])) <= {"no", "yes"}
    assert tuned.random_state == 123 and tuned.accountant is acc
    assert tuned.tuning_.candidates == (0.1, 1.0, 10.0)
    assert tuned.tuning_.group_sizes == tuple(len(g) for g in train) + (len(valid),)
    others = [m for m in models if m is not tuned]
    assert not any(hasattr(m, "coef_") for m in others)       # one release


def test_estimator_candidates_fail_before_the_charge():
    from privatelr import PrivacyAccountant

    X, y = _unit_bands(N=60)
    acc = PrivacyAccountant(1.0)
    # rows outside data_norm without clip: the candidate's own fail-closed rule, before any spend
    with pytest.raises(ValueError, match="data_norm=0.5.*clip=True"):
        tune_classification_model(_estimators(classes=["no", "yes"], data_norm=0.5), X, y,
                                  accountant=acc)
    with pytest.raises(ValueError, match="outside classes"):
        tune_classification_model(_estimators(classes=["no", "maybe"]), X, y, accountant=acc)
    with pytest.raises(ValueError, match="classes=\\[negative, positive\\]"):
        tune_classification_model(_estimators(), X, y, accountant=acc)
    with pytest.raises(ValueError, match="sample_weight_bound"):
        tune_classification_model(_estimators(classes=["no", "yes"]), X, y,
                                  weights=np.ones(len(y)), accountant=acc)
    with pytest.raises(ValueError, match="per-column bounds"):
        tune_classification_model(_estimators(classes=["no", "yes"]), X, y, [1, 1], [-1, -1])
    with pytest.raises(ValueError, match="fit_intercept"):
        tune_classification_model(_estimators(classes=["no", "yes"]), X, y, add_bias=True)
    with pytest.raises(ValueError, match="different accountants"):
        tune_classification_model(_estimators(classes=["no", "yes"],
                                              accountant=PrivacyAccountant(1.0)), X, y,
                                  accountant=acc)
    with pytest.raises(TypeError, match="mixes"):
        tune_classification_model(_estimators()[:1] + [LogisticRegressionDP(eps=1.0, gamma=1)],
                                  X, y)
    assert acc.spent() == (0.0, 0.0)
    # too little budget: refused before the data are read
    from privatelr.exceptions import BudgetExceededError

    with pytest.raises(BudgetExceededError):
        tune_classification_model(_estimators(eps=2.0, classes=["no", "yes"]), X, y,
                                  accountant=acc)


def test_estimator_candidates_take_weights_and_frames():
    pd = pytest.importorskip("pandas")
    X, y = _unit_bands(N=80)
    frame = pd.DataFrame(X, columns=["a", "b"])
    w = np.random.default_rng(0).uniform(0, 2, size=len(y))
    tuned = tune_classification_model(
        _estimators(classes=["no", "yes"], sample_weight_bound=2.0), frame, pd.Series(y),
        weights=w, random_state=0)
    assert tuned.feature_names_in_.tolist() == ["a", "b"]
    assert tuned.predict(frame.iloc[:3]).shape == (3,)
    assert tuned.result_.calibration.weights_bound == 2.0
