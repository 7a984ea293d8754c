"""No exact statistics leak through released objects.

* ``erm`` results of private fits carry no objective value (with output perturbation it is ``J``
  at the exact, noise-free minimiser: it tells neighbouring data sets apart every time).
* Fitted DPpack-style models and the scikit-learn estimator keep only the release; pickled, two
  fits on neighbouring data sets with the same noise seed differ only through the coefficients.
* Unconverged private fits are not released unless the caller opts in.
* Private tuning charges the accountant before fitting any candidate and leaves the caller's
  objects untouched when it fails midway.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import pickle
import struct

import numpy as np
import pytest

import privatelr.tuning as tuning
from privatelr import (SVMDP, LogisticRegressionDP, PrivacyAccountant, erm,
                       tune_classification_model)
from privatelr import models
from privatelr.results import ERMResult
from privatelr.tuning import dplr_tune

dplr_module = importlib.import_module("privatelr._dplr")  # the module of the dplr front end


def _leaves(obj, path="", depth=0):
    """Every number reachable from ``obj`` (attributes, dataclass fields, containers)."""
    if depth > 8 or obj is None or isinstance(obj, (str, bytes, bool, np.bool_)):
        return
    if isinstance(obj, (int, float, np.integer, np.floating)):
        yield path, float(obj)
    elif isinstance(obj, np.ndarray):
        if np.issubdtype(obj.dtype, np.number):
            for i, x in enumerate(obj.ravel()):
                yield f"{path}[{i}]", float(x)
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from _leaves(getattr(obj, f.name), f"{path}.{f.name}", depth + 1)
    elif isinstance(obj, dict):
        for key, val in obj.items():
            yield from _leaves(val, f"{path}[{key!r}]", depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, val in enumerate(obj):
            yield from _leaves(val, f"{path}[{i}]", depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        for key, val in vars(obj).items():
            yield from _leaves(val, f"{path}.{key}", depth + 1)


def _assert_value_absent(obj, value):
    """Neither the object nor its pickle holds ``value`` (big- or little-endian double)."""
    hits = [p for p, x in _leaves(obj) if x == value]
    assert not hits, f"the exact objective value {value!r} is released at {hits}"
    raw = pickle.dumps(obj)
    for fmt in (">d", "<d"):
        assert struct.pack(fmt, value) not in raw, "the exact objective value is in the pickle"


def _neighbours(n=300, seed=0, ball=False):
    """Two data sets of the same size differing in their last row (in the square, or the ball)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    X2, y2 = X.copy(), y.copy()
    X2[-1], y2[-1] = [0.9, -0.9], 1 - y[-1]
    if ball:  # rows of norm <= 1 for the engine
        X, X2 = X / np.sqrt(2), X2 / np.sqrt(2)
    return (X, y), (X2, y2)


# ------------------------------------------------------------------------------------------ erm
@pytest.mark.parametrize("method", ["objective", "output"])
def test_private_erm_result_has_no_objective_value(method):
    (X, y), _ = _neighbours(ball=True)
    exact = erm.fit(X, y, lambda_=0.05, eps=0)  # J at the exact minimiser, the statistic
    assert np.isfinite(exact.value) and exact.method == "nonprivate"
    res = erm.fit(X, y, lambda_=0.05, eps=1.0, method=method, random_state=0)
    assert np.isnan(res.value)
    _assert_value_absent(res, exact.value)


def test_output_perturbation_value_would_distinguish_neighbours():
    # the statistic that used to be released: J at the exact minimiser is the same whatever the
    # noise, and differs between neighbours, so one look at it tells them apart
    (X, y), (X2, y2) = _neighbours(ball=True)
    values = {erm.fit(A, b, lambda_=0.05, eps=0).value for A, b in ((X, y), (X2, y2))}
    assert len(values) == 2
    for seed in range(3):
        assert np.isnan(erm.fit(X, y, lambda_=0.05, eps=1.0, method="output",
                                random_state=seed).value)


@pytest.mark.parametrize("method", ["objective", "output"])
def test_unconverged_private_fit_needs_the_opt_in(method):
    (X, y), _ = _neighbours(ball=True)
    acc = PrivacyAccountant(2.0)
    with pytest.raises(ValueError, match="maxiter.*allow_nonconverged=True"):
        erm.fit(X, y, lambda_=0.05, eps=1.0, method=method, maxiter=1, random_state=0,
                accountant=acc)
    assert acc.spent() == (1.0, 0.0)  # the data were read: the charge stays
    res = erm.fit(X, y, lambda_=0.05, eps=1.0, method=method, maxiter=1, random_state=0,
                  allow_nonconverged=True)
    assert res.status.endswith("nonconvergence") and res.convergence != 0
    assert np.isnan(res.value)


def test_fit_dask_takes_allow_nonconverged(client):
    da = pytest.importorskip("dask.array")
    (X, y), _ = _neighbours(n=400, ball=True)
    Xd, yd = da.from_array(X, chunks=(100, 2)), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match="allow_nonconverged=True"):
        erm.fit(Xd, yd, lambda_=0.05, eps=1.0, method="output", maxiter=1, random_state=0)
    res = erm.fit(Xd, yd, lambda_=0.05, eps=1.0, method="output", maxiter=1, random_state=0,
                  allow_nonconverged=True)
    assert res.status == "ok nonconvergence" and np.isnan(res.value)


# --------------------------------------------------------------------------- DPpack-style models
_MODELS = [
    lambda: LogisticRegressionDP(eps=1.0, gamma=1.0, perturbation_method="output"),
    lambda: LogisticRegressionDP(eps=1.0, gamma=1.0),
    lambda: SVMDP(eps=1.0, gamma=1.0, perturbation_method="output"),
    lambda: SVMDP(eps=1.0, gamma=1.0, kernel="Gaussian", D=10, perturbation_method="output"),
]


def _without_coefficients(model, names):
    """A copy with every coefficient array replaced by zeros (what may differ between fits)."""
    out = copy.deepcopy(model)
    for name in names:
        setattr(out, name, np.zeros_like(getattr(out, name)))
    rel = out.result_
    object.__setattr__(rel, "coef", np.zeros_like(rel.coef))
    return out


@pytest.mark.parametrize("make", _MODELS)
def test_fitted_model_keeps_only_the_release(make):
    (X, y), _ = _neighbours()
    m = make().fit(X, y, [1, 1], [-1, -1], random_state=3)
    assert isinstance(m.result_, ERMResult) and m.result_.diagnostics is None
    back = pickle.loads(pickle.dumps(m))
    expected = {"regularizer", "eps", "gamma", "perturbation_method", "delta", "coeff",
                "result_", "add_bias_", "n_features_in_"}
    if isinstance(m, SVMDP):
        expected |= {"kernel", "D", "kernel_param", "huber_h", "omega", "phase"}
    assert set(vars(back)) == expected
    assert {f.name for f in dataclasses.fields(back.result_)} == {
        "coef", "status", "convergence", "loss", "solver", "calibration", "inference",
        "diagnostics"}
    assert back.result_.diagnostics is None     # no solver report, no objective value
    assert back.result_.inference is None       # released only when asked for
    assert np.isnan(back.result_.value) and np.isnan(back.result_.grad_norm)
    np.testing.assert_array_equal(back.predict(X, raw_value=True), m.predict(X, raw_value=True))
    assert back.result_.status == "ok" and back.result_.converged
    assert back.result_.n == len(y) and back.result_.calibration.method == m.perturbation_method


@pytest.mark.parametrize("make", _MODELS)
def test_neighbouring_fits_pickle_alike_but_for_the_coefficients(make):
    (X, y), (X2, y2) = _neighbours()
    a = make().fit(X, y, [1, 1], [-1, -1], random_state=7)
    b = make().fit(X2, y2, [1, 1], [-1, -1], random_state=7)
    assert not np.array_equal(a.coeff, b.coeff)
    # bytes identical once the coefficients are blanked: nothing else depends on the data
    assert pickle.dumps(_without_coefficients(a, ["coeff"])) == \
        pickle.dumps(_without_coefficients(b, ["coeff"]))
    # and the noise-free objective value (J at the exact minimiser) is nowhere
    for model, (XX, yy) in ((a, (X, y)), (b, (X2, y2))):
        Xs = np.clip(XX, -1, 1) / np.sqrt(2)  # the models' scaling into the unit ball
        if isinstance(model, SVMDP) and model.kernel == "Gaussian":
            Xs = model.x_to_v(np.clip(XX, -1, 1)) / np.sqrt(2)
        loss = dict(loss="huber", h=0.5) if isinstance(model, SVMDP) else {}
        exact = erm.fit(Xs, yy, lambda_=1.0 / len(yy), eps=0, **loss)
        _assert_value_absent(model, exact.value)


# ------------------------------------------------------------------------ scikit-learn estimator
def test_sklearn_estimator_counts_its_clipped_rows():
    pytest.importorskip("sklearn")
    from privatelr.sklearn import DPLogisticRegression

    (X, y), _ = _neighbours()
    X = X.copy()
    X[:7] *= 3.0  # norms above data_norm=1 (the others may exceed it too)
    expected = int((np.linalg.norm(X, axis=1) > 1.0).sum())
    assert expected >= 7
    clf = DPLogisticRegression(eps=1.0, clip=True, random_state=0).fit(X, y)
    assert clf.n_clipped_ == expected
    with pytest.raises(ValueError, match="data_norm"):          # fail closed
        DPLogisticRegression(eps=1.0, clip=False, random_state=0).fit(X, y)
    inside = X / np.linalg.norm(X, axis=1).max()
    assert DPLogisticRegression(eps=1.0, clip=True, random_state=0).fit(inside, y).n_clipped_ == 0


@pytest.mark.parametrize("method", ["output", "objective"])
def test_sklearn_pickle_is_the_release_only(method):
    pytest.importorskip("sklearn")
    from privatelr.sklearn import DPLogisticRegression

    (X, y), (X2, y2) = _neighbours()
    X2 = X2.copy()
    X2[-1] = [3.0, -3.0]  # the neighbour's row lies outside the ball: clipped, counted
    a = DPLogisticRegression(eps=1.0, lambda_=0.05, method=method, clip=True,
                             random_state=11).fit(X, y)
    b = DPLogisticRegression(eps=1.0, lambda_=0.05, method=method, clip=True,
                             random_state=11).fit(X2, y2)
    assert isinstance(a.result_, ERMResult) and a.n_clipped_ != b.n_clipped_
    assert a.result_.diagnostics is None
    back = pickle.loads(pickle.dumps(a))
    assert set(vars(back)) == {"eps", "delta", "alpha", "lambda_", "method", "data_norm", "clip",
                               "fit_intercept", "classes", "sample_weight_bound", "accountant",
                               "random_state", "inference", "coef_", "intercept_", "classes_",
                               "lambda_used_", "result_", "n_features_in_"}
    assert back.random_state is None  # the seed would let anyone redraw the noise
    np.testing.assert_array_equal(back.predict_proba(X), a.predict_proba(X))
    assert a.random_state == 11 and hasattr(a, "n_clipped_") and hasattr(a, "n_iter_")  # the caller's object is unchanged
    blank = ["coef_", "intercept_"]
    assert pickle.dumps(_without_coefficients(a, blank)) == \
        pickle.dumps(_without_coefficients(b, blank))
    for clf, (XX, yy) in ((a, (X, y)), (b, (X2, y2))):
        norms = np.linalg.norm(XX, axis=1)
        design = np.c_[np.ones(len(yy)), XX * np.minimum(1.0, 1.0 / norms)[:, None]]
        exact = erm.fit(design, yy, lambda_=0.05, eps=0)
        _assert_value_absent(clf, exact.value)


# ----------------------------------------------------------------------------------------- tuning
def _bands(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, (X[:, 0] > X[:, 1]).astype(int)


def _spy_fit(monkeypatch, acc, fail_at=None):
    """Record the accountant's spend at every candidate fit; raise at call number ``fail_at``."""
    seen, original = [], tuning.CMSModel.fit

    def spy(self, *args, **kwargs):
        seen.append(acc.spent()[0])
        if len(seen) == fail_at:
            raise RuntimeError("injected failure")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(tuning.CMSModel, "fit", spy)
    return seen


def test_tuning_spends_exactly_the_budget_before_fitting(monkeypatch):
    X, y = _bands()
    acc = PrivacyAccountant(1.0)
    acc.spend(0.25, note="earlier release")
    seen = _spy_fit(monkeypatch, acc)
    models = [LogisticRegressionDP(eps=0.75, gamma=g) for g in (0.1, 1.0, 10.0)]
    best = tune_classification_model(models, X, y, [1, 1], [-1, -1], random_state=0,
                                     accountant=acc)
    assert seen == [1.0, 1.0, 1.0]  # charged before the first candidate was fitted
    assert acc.spent() == (1.0, 0.0) and acc.remaining == (0.0, 0.0)
    assert best is models[best.tuning_.chosen] and best.coeff is not None
    others = [m for m in models if m is not best]
    assert all(m.coeff is None and m.result_ is None for m in others)


@pytest.mark.parametrize("make", [
    lambda g: LogisticRegressionDP(eps=0.5, gamma=g),
    lambda g: SVMDP(eps=0.5, gamma=g, kernel="Gaussian", D=8),
])
def test_tuning_failure_midway_leaves_the_models_unfitted(monkeypatch, make):
    X, y = _bands()
    acc = PrivacyAccountant(1.0)
    _spy_fit(monkeypatch, acc, fail_at=2)
    models = [make(g) for g in (0.1, 1.0, 10.0)]
    before = [pickle.dumps(m) for m in models]
    with pytest.raises(RuntimeError, match="injected"):
        tune_classification_model(models, X, y, [1, 1], [-1, -1], random_state=0,
                                  accountant=acc)
    assert acc.spent() == (0.5, 0.0)  # the budget stays spent: the data were touched
    for m, pickled in zip(models, before):
        assert m.coeff is None and m.result_ is None and not hasattr(m, "tuning_")
        assert getattr(m, "omega", None) is None
        assert pickle.dumps(m) == pickled  # untouched


def test_tuning_refuses_bad_arguments_before_charging():
    X, y = _bands()
    acc = PrivacyAccountant(1.0)
    models = [LogisticRegressionDP(eps=0.5, gamma=g) for g in (0.1, 1.0)]
    for kwargs, match in ((dict(y=np.where(y == 1, 2, 0)), "0 and 1"),
                          (dict(lower_bounds=[2, 2]), "lower_bounds"),
                          (dict(upper_bounds=[1, np.inf]), "upper_bounds"),
                          (dict(weights=-np.ones(len(y)), weights_upper_bound=1.0), "weights")):
        args = dict(X=X, y=y, upper_bounds=[1, 1], lower_bounds=[-1, -1])
        args.update(kwargs)
        with pytest.raises(ValueError, match=match):
            tune_classification_model(models, args.pop("X"), args.pop("y"),
                                      args.pop("upper_bounds"), args.pop("lower_bounds"),
                                      accountant=acc, **args)
    assert acc.spent() == (0.0, 0.0)
    assert all(m.coeff is None for m in models)


def _iris():
    from privatelr.datasets import load_iris

    df = load_iris().sample(frac=1.0, random_state=3).reset_index(drop=True)
    df[df.columns[:4]] /= 10
    return df


def test_dplr_tune_charges_before_fitting_and_keeps_the_charge_on_failure(monkeypatch):
    iris = _iris()
    formula = "I(Species == 'virginica') ~ Petal.Length + Petal.Width"
    original = dplr_module.fit_frame          # every candidate goes through the dplr pipeline
    for fail_at in (None, 2):
        acc = PrivacyAccountant(1.0)
        seen = []

        def spy(*args, **kwargs):
            seen.append(acc.spent()[0])
            if len(seen) == fail_at:
                raise RuntimeError("injected failure")
            return original(*args, **kwargs)

        monkeypatch.setattr(dplr_module, "fit_frame", spy)
        if fail_at is None:
            best = dplr_tune(formula, iris, lambdas=(0.01, 0.1, 1.0), eps=1.0, clip=True,
                             random_state=0, accountant=acc)
            assert seen == [1.0, 1.0, 1.0] and acc.remaining == (0.0, 0.0)
            assert np.isnan(best.value)  # a private fit releases no objective value
        else:
            with pytest.raises(RuntimeError, match="injected"):
                dplr_tune(formula, iris, lambdas=(0.01, 0.1, 1.0), eps=1.0, clip=True,
                          random_state=0, accountant=acc)
            assert seen == [1.0, 1.0] and acc.spent() == (1.0, 0.0)
