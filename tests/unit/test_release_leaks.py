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


# ------------------------------------------------------------------------------- the seed (#27)
SEED = 830571946231                 # twelve digits: found in any artefact that writes it down


def _seed_forms(seed: int = SEED) -> list[bytes]:
    """Every form a seed could take in text or pickle bytes: decimal, hex, the 8-byte integers
    (both byte orders), pickle's LONG1 bytes (little-endian two's complement, minimal) and the
    double."""
    forms = [str(seed).encode(), hex(seed).encode(), format(seed, "X").encode(),
             struct.pack("<q", seed), struct.pack(">q", seed),
             seed.to_bytes(seed.bit_length() // 8 + 1, "little", signed=True),
             struct.pack("<d", float(seed)), struct.pack(">d", float(seed))]
    return forms


def _assert_no_seed(label: str, artefact) -> None:
    raw = artefact if isinstance(artefact, bytes) else str(artefact).encode("utf-8", "replace")
    for form in _seed_forms():
        assert form not in raw, f"{label} carries the seed (as {form!r})"
    # nor a generator's state, with which anyone could redraw the noise
    assert b"bit_generator" not in raw and b"PCG64" not in raw, f"{label} carries a Generator"


def _no_runs(label: str, artefact) -> None:
    text = artefact if isinstance(artefact, str) else artefact.decode("latin-1")
    assert "runs" not in text, f"{label} carries random stopping's run count"


def _fit_everything(tmp_path, capsys):
    """Every kind of result, fitted with the twelve-digit seed: ``[(label, artefact), ...]``
    (artefacts: objects to pickle and show, texts, bytes), and the warnings raised."""
    import warnings

    from privatelr import (dplr, dplr_tune, load_model, multinomial, noisy_dot_product,
                           walr, walr_fit)
    from privatelr import cli
    from privatelr.datasets import load_iris
    from privatelr.sklearn import DPLogisticRegression

    out: list = []
    iris = _iris()
    (X, y), _ = _neighbours(ball=True)
    frame = __import__("pandas").DataFrame(X, columns=["a", "b"]).assign(y=y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fits = {
            "dplr": dplr("I(Species == 'virginica') ~ .", iris, eps=1, clip=True,
                         random_state=SEED),
            "dplr rp": dplr("I(Species == 'virginica') ~ .", iris, eps=1, clip=True,
                            rp_dim=2, random_state=SEED),
            "dplr gaussian": dplr("y ~ a + b", frame, eps=1, method="gaussian", delta=1e-6,
                                  random_state=SEED),
            "dplr amp": dplr("y ~ a + b", frame, eps=1, method="amp", delta=1e-6,
                             random_state=SEED),
            "dplr Generator": dplr("y ~ a + b", frame, eps=1,
                                   random_state=np.random.default_rng(SEED)),
            "dplr multiclass": dplr("Species ~ .", iris, eps=2, multiclass="multinomial",
                                    clip=True, random_state=SEED),
            "dplr_tune split": dplr_tune("I(Species == 'virginica') ~ .", iris,
                                         lambdas=(0.01, 0.1), eps=1.0, clip=True,
                                         random_state=SEED),
            "dplr_tune stopping": dplr_tune("y ~ a + b", frame, lambdas=(0.01, 0.1), eps=1.0,
                                            selection="random_stopping", random_state=SEED),
            "erm.fit": erm.fit(X, y, lambda_=0.05, eps=1.0, random_state=SEED),
            "multinomial.fit": multinomial.fit(X, np.where(X[:, 0] > 0.2, 2, y), classes=[0, 1, 2],
                                               lambda_=0.05, eps=1.0, random_state=SEED),
            "walr": walr("y ~ a + b", frame.assign(a=frame.a.abs(), b=frame.b.abs()), eps=2.0,
                         delta=1e-6, lambda_=1e-3, random_state=SEED),
        }
        rel = noisy_dot_product(np.abs(X), y, eps=1.0, delta=1e-6, random_state=SEED)
        fits["walr_fit"] = walr_fit(np.abs(X), rel, lambda_=1e-3, random_state=SEED)
        for make in _MODELS:
            m = make().fit(X, y, [1, 1], [-1, -1], random_state=SEED)
            fits[f"model {type(m).__name__} {m.perturbation_method}"] = m
        cands = [LogisticRegressionDP(eps=1.0, gamma=g) for g in (0.1, 1.0)]
        fits["tuned split"] = tune_classification_model(cands, X, y, [1, 1], [-1, -1],
                                                        random_state=SEED)
        cands = [LogisticRegressionDP(eps=1.0, gamma=g) for g in (0.1, 1.0)]
        fits["tuned stopping"] = tune_classification_model(
            cands, X, y, [1, 1], [-1, -1], random_state=SEED, selection="random_stopping")
        for method in ("output", "objective"):
            fits[f"sklearn {method}"] = DPLogisticRegression(
                eps=1.0, method=method, random_state=SEED).fit(X, y)
        ests = [DPLogisticRegression(eps=1.0, alpha=a, random_state=SEED) for a in (0.01, 0.1)]
        fits["sklearn tuned"] = tune_classification_model(
            ests, X, y, random_state=SEED, selection="random_stopping")
    for label, fit in fits.items():
        out.append((label, fit))
        out.append((f"{label} str", str(fit)))
        out.append((f"{label} repr", repr(fit)))
        out.append((f"{label} pickle", pickle.dumps(fit)))
        for name in ("call", "tuning", "tuning_", "summary", "_repr_html_", "to_json",
                     "release"):
            attr = getattr(fit, name, None)
            if attr is None:
                continue
            if callable(attr):
                try:
                    attr = attr()
                except (TypeError, ValueError):
                    continue
            out.append((f"{label}.{name}", attr))
            if name == "release":
                out.append((f"{label}.release() pickle", pickle.dumps(attr)))
        if hasattr(fit, "to_json"):
            path = tmp_path / f"{label.replace(' ', '_')}.json"
            fit.to_json(path)
            out.append((f"{label} saved file", path.read_bytes()))
            if hasattr(fit, "spec") and hasattr(fit, "tuning"):
                out.append((f"{label} reloaded", pickle.dumps(load_model(path))))
    out.append(("noisy_dot_product.to_json", rel.to_json()))
    out.append(("noisy_dot_product pickle", pickle.dumps(rel)))
    # the sklearn estimator's own displays (get_params is the caller's object: not scanned)
    clf = fits["sklearn output"]
    out.append(("sklearn mimebundle", str(clf._repr_mimebundle_())))
    out.append(("sklearn html", clf._html_repr()))
    # the command line: a model file, what fit and demo print
    csv = tmp_path / "iris.csv"
    load_iris().to_csv(csv, index=False)
    model = tmp_path / "cli-model.json"
    capsys.readouterr()
    assert cli.main(["fit", str(csv), "--formula", "I(Species == 'virginica') ~ .", "--eps",
                     "1", "--data-norm", "20", "--clip", "--seed", str(SEED), "--out",
                     str(model), "--verbose", "--verbose"]) == 0
    assert cli.main(["summary", str(model)]) == 0
    assert cli.main(["demo", "--seed", str(SEED)]) == 0
    printed = capsys.readouterr()
    out += [("cli model file", model.read_bytes()), ("cli stdout", printed.out),
            ("cli stderr", printed.err)]
    out += [(f"warning {w.category.__name__}", str(w.message)) for w in caught]
    return out, fits


@pytest.mark.heavy
def test_no_artefact_carries_the_seed(tmp_path, capsys):
    """Issue 27, item 1: every artefact that leaves a fit — call, saved files, release(),
    pickles of every result type and of the fitted scikit-learn estimator, the command line's
    model file and output, HTML, str/repr/print, summary, warnings — records at most that a
    seed was given, never its value (nor a Generator's state); and random stopping's run
    count is nowhere."""
    pytest.importorskip("sklearn")
    artefacts, fits = _fit_everything(tmp_path, capsys)
    assert len(artefacts) > 100
    for label, artefact in artefacts:
        if isinstance(artefact, (str, bytes)):
            _assert_no_seed(label, artefact)
    for label in ("dplr", "dplr multiclass", "dplr Generator"):
        assert "random_state=<given>" in fits[label].call
    for label in ("dplr_tune stopping", "tuned stopping", "sklearn tuned"):
        fit = fits[label]
        record = getattr(fit, "tuning", None) or fit.tuning_
        assert record.selection == "random_stopping"
        _no_runs(label, repr(record) + str(record.to_dict()))
        _no_runs(f"{label} pickle", pickle.dumps(fit))
    _no_runs("saved tuned model", fits["dplr_tune stopping"].to_json())
    # the caller's own estimator keeps its setting (scikit-learn's contract), shows <given>
    clf = fits["sklearn output"]
    assert clf.get_params()["random_state"] == SEED and "<given>" in repr(clf)
    assert pickle.loads(pickle.dumps(clf)).random_state is None


def test_an_older_file_loses_its_seed_and_run_count(tmp_path):
    """Files written before issue 27 carry ``random_stopping=<seed>`` in the call and
    ``tuning.runs``: they load (the checksum is theirs), and neither is kept or written
    again."""
    from release_files import fields_of, release_text

    from privatelr import load_model

    iris = _iris()
    tuned = dplr_tune("I(Species == 'virginica') ~ .", iris, lambdas=(0.01, 0.1), eps=1.0,
                      clip=True, random_state=0, selection="random_stopping")
    fields = fields_of(tuned.to_json())
    fields["call"] = f"dplr('y ~ .', <DataFrame 150x5>, eps=1, random_state={SEED})"
    fields["tuning"]["runs"] = 7
    path = tmp_path / "old.json"
    path.write_text(release_text(fields))
    back = load_model(path)
    assert back.call == "dplr('y ~ .', <DataFrame 150x5>, eps=1, random_state=<given>)"
    assert not hasattr(back.tuning, "runs")
    again = back.to_json()
    _assert_no_seed("re-saved file", again)
    assert '"runs"' not in again
    np.testing.assert_array_equal(back.coef, tuned.coef)
