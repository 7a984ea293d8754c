"""WALR release files: every field validated at load, and the weighting travels with the release.

A ``NoisyDotProduct`` file is read by the trainer, who did not write it: whatever it contains,
loading either gives a ``ValueError`` saying the file is corrupted or a record that can be
trained on (no later crash). The release records whether it was weighted, and ``walr_fit``
refuses to train a weighted release without weights or an unweighted one with them.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import NoisyDotProduct, PrivacyAccountant, noisy_dot_product, walr_fit
from release_files import fields_of, release_text

CORRUPTED = "corrupted privatelr.NoisyDotProduct file"


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = np.c_[np.ones(n), rng.uniform(size=(n, 2))]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(1 - 2 * X[:, 1]))).astype(int)
    w = rng.uniform(0.0, 2.0, size=n)
    return X, y, w


def _record(weighted=True, **kw):
    X, y, w = _data()
    if weighted:
        rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0,
                                random_state=0, **kw)
    else:
        rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, random_state=0, **kw)
    return fields_of(rel.to_json())


def _text(**changes):
    """The file of a release with ``changes`` to its fields, checksummed (so that the field's
    own validation is what refuses it)."""
    d = _record()
    for key, val in changes.items():
        if val is _DROP:
            del d[key]
        else:
            d[key] = val
    return release_text(d)


_DROP = object()


# ------------------------------------------------------------------ every field, every way wrong
@pytest.mark.parametrize("changes", [
    dict(value=None), dict(value=[]), dict(value="0.1"), dict(value=[0.1, None, 0.2]),
    dict(value=[0.1, [0.2], 0.3]), dict(value=[0.1, True, 0.2]), dict(value=[0.1, "x", 0.2]),
    dict(value=[1e6, 0.1, 0.1]),                # far beyond weights_bound + 40 sigma
    dict(value=[-5.0, 0.1, 0.1]),               # below -40 sigma: no release gives it
    dict(value={"a": 1}),
    dict(n=None), dict(n=2.5), dict(n=400.0), dict(n=True), dict(n=0), dict(n=-4), dict(n="400"),
    dict(n=2**64),
    dict(eps=None), dict(eps="1"), dict(eps=True), dict(eps=0), dict(eps=-1.0), dict(eps=1e-320),
    dict(eps="nan"),
    dict(delta=None), dict(delta=0), dict(delta=1), dict(delta=1e-320), dict(delta="1e-6"),
    dict(sigma=None), dict(sigma=-0.1), dict(sigma=1e-9), dict(sigma=[0.1]),
    dict(sensitivity=0), dict(sensitivity=1e-9), dict(sensitivity=None),
    dict(weights_bound=0), dict(weights_bound=-2), dict(weights_bound=None),
    dict(weights_bound=1e3),                    # sensitivity no longer covers A sqrt(k)/N
    dict(mechanism="laplace"), dict(mechanism=None), dict(mechanism=1), dict(mechanism=["analytic"]),
    dict(mechanism="none"),                     # 'none' goes with eps = inf only
    dict(mechanism="classic"),                  # eps = 1 is outside the classic mechanism's range
    dict(columns=["a", "b"]), dict(columns=[1, 2, 3]), dict(columns=["a", "a", "b"]),
    dict(columns="abc"), dict(columns={"a": 1}),
    dict(weighted=None), dict(weighted="yes"), dict(weighted=1), dict(weighted=_DROP),
    dict(weighted=False),                       # unweighted with weights_bound 2: inconsistent
    dict(version=4), dict(version="2"), dict(version=True), dict(version=None), dict(version=_DROP),
    dict(format="privatelr.model"), dict(format=None),
    dict(labels=None),                          # not a field of the record
])
def test_corrupted_field_is_refused_at_load(changes):
    with pytest.raises(ValueError, match=CORRUPTED):
        NoisyDotProduct.from_json(_text(**changes))


@pytest.mark.parametrize("text", [
    "[" * 100000,                                    # json.loads: RecursionError
    '{"value": ' + "[" * 100000,
    '{"format": "privatelr.NoisyDotProduct", "value": ' + "[" * 50000 + "]" * 50000 + "}",
    _text().replace('"value": [', '"value": [NaN, '),  # a NaN token in the saved vector
    _text().replace('"value": [', '"value": [Infinity, '),
    _text().replace('"value": [', '"value": [1e999, '),  # parses as inf
    _text().replace('"n": 400', '"n": 400, "n": 401'),   # duplicate key
    _text().replace('"n": 400', '"n": ' + "9" * 5000),   # beyond Python's int parsing limit
    _text()[:-10],                                   # truncated
    "[]", "{}", "[1, 2, 3]", '{"format": "privatelr.NoisyDotProduct"}',
])
def test_malformed_json_is_a_corrupted_file(text):
    with pytest.raises(ValueError, match=CORRUPTED):
        NoisyDotProduct.from_json(text)


def test_malformed_files_on_disk(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000)
    bad_bytes = tmp_path / "latin1.json"
    bad_bytes.write_bytes(b'{"format": "\xff"}')
    nan = tmp_path / "nan.json"
    nan.write_text(_text().replace('"value": [', '"value": [NaN, '))
    for path in (deep, bad_bytes, nan):
        with pytest.raises(ValueError, match=CORRUPTED):
            NoisyDotProduct.from_json(path)
        with pytest.raises(ValueError, match=CORRUPTED):
            NoisyDotProduct.from_json(str(path))
    with pytest.raises(ValueError, match="neither JSON text nor an existing file"):
        NoisyDotProduct.from_json("x" * 100000)  # a path name far too long for the OS


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("eps", [1.0, math.inf])
def test_a_record_that_loads_can_be_trained_on(weighted, eps):
    X, y, w = _data()
    kw = dict(weights=w, weights_bound=2.0) if weighted else {}
    rel = noisy_dot_product(pd.DataFrame(X, columns=["one", "a", "b"]), y, eps=eps, delta=1e-6,
                            random_state=1, **kw)
    d = fields_of(rel.to_json())
    assert d["version"] == 3 and d["weighted"] is weighted
    back = NoisyDotProduct.from_json(rel.to_json())
    assert back == rel and back.weighted is weighted and back.columns == ("one", "a", "b")
    for solver in ("newton", "hybrid"):
        fit = walr_fit(X, back, weights=w if weighted else None, lambda_=1e-3, solver=solver,
                       random_state=0)
        assert fit.status == "ok" and np.isfinite(fit.coef).all()


def test_extreme_but_consistent_records_load_and_train():
    X, _, _ = _data()
    n, k = X.shape
    sens = math.sqrt(k) / n
    for eps, delta, mech in ((1e-6, 1e-12, "analytic"), (50.0, 0.5, "analytic"),
                             (0.999, 1e-300, "classic")):
        from privatelr.mechanisms import gaussian_sigma

        sigma = gaussian_sigma(sens, eps, delta, mech)
        rel = NoisyDotProduct([39 * sigma, 0.5, -39 * sigma], n=n, eps=eps, delta=delta,
                              sigma=sigma, mechanism=mech, sensitivity=sens)
        back = NoisyDotProduct.from_json(rel.to_json())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # huge sigma: the model may not converge
            fit = walr_fit(X, back, lambda_=1e-3, solver="newton")
        assert fit.coef.shape == (k,)


# ------------------------------------------------------------------ the weighting of the release
def test_release_records_its_weighting():
    X, y, w = _data()
    assert noisy_dot_product(X, y, eps=1.0, delta=1e-6, random_state=0).weighted is False
    assert noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0,
                             random_state=0).weighted is True
    # weights bounded by 1 are still a weighted release
    rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w / 2, weights_bound=1.0,
                            random_state=0)
    assert rel.weighted is True and rel.weights_bound == 1.0
    assert NoisyDotProduct.from_json(rel.to_json()).weighted is True
    # constructed by hand: inferred from the bound unless given
    common = dict(value=[0.1, 0.2], n=100, eps=1.0, delta=1e-5, sigma=1.0, mechanism="analytic")
    assert NoisyDotProduct(sensitivity=0.02, **common).weighted is False
    assert NoisyDotProduct(sensitivity=0.04, weights_bound=2.0, **common).weighted is True
    assert NoisyDotProduct(sensitivity=0.02, weighted=True, **common).weighted is True
    with pytest.raises(ValueError, match="unweighted release has weights_bound 1"):
        NoisyDotProduct(sensitivity=0.04, weights_bound=2.0, weighted=False, **common)
    with pytest.raises(TypeError, match="weighted"):
        NoisyDotProduct(sensitivity=0.02, weighted="no", **common)


@pytest.mark.parametrize("via_file", [False, True])
def test_walr_fit_refuses_a_weighting_mismatch(via_file):
    X, y, w = _data()
    weighted = noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0,
                                 random_state=0)
    plain = noisy_dot_product(X, y, eps=1.0, delta=1e-6, random_state=0)
    if via_file:
        weighted = NoisyDotProduct.from_json(weighted.to_json())
        plain = NoisyDotProduct.from_json(plain.to_json())
    for solver in ("newton", "hybrid"):
        with pytest.raises(ValueError, match="computed with observation weights.*pass weights="):
            walr_fit(X, weighted, lambda_=1e-3, solver=solver)
        with pytest.raises(ValueError, match="computed without weights.*drop weights="):
            walr_fit(X, plain, weights=np.ones(len(y)), lambda_=1e-3, solver=solver)
        assert walr_fit(X, weighted, weights=w, lambda_=1e-3, solver=solver).status == "ok"
        assert walr_fit(X, plain, lambda_=1e-3, solver=solver).status == "ok"
    # a plain vector carries no record: nothing to check against (as before)
    assert walr_fit(X, np.asarray(weighted.value), lambda_=1e-3, solver="newton").status == "ok"


def test_walr_fit_dask_refuses_a_weighting_mismatch():
    da = pytest.importorskip("dask.array")
    X, y, w = _data()
    weighted = noisy_dot_product(X, y, eps=1.0, delta=1e-6, weights=w, weights_bound=2.0,
                                 random_state=0)
    plain = noisy_dot_product(X, y, eps=1.0, delta=1e-6, random_state=0)
    Xd = da.from_array(X, chunks=(100, 3))
    with pytest.raises(ValueError, match="computed with observation weights"):
        walr_fit(Xd, weighted, lambda_=1e-3, solver="newton")
    with pytest.raises(ValueError, match="computed without weights"):
        walr_fit(Xd, plain, weights=da.from_array(np.ones(len(y)), chunks=100), lambda_=1e-3,
                 solver="newton")


def test_version_1_files():
    # version 1 had no 'weighted': unweighted exactly when weights_bound is 1
    old = _record(weighted=False)
    old["version"] = 1
    del old["weighted"]
    rel = NoisyDotProduct.from_json(json.dumps(old))
    assert rel.weighted is False and rel.weights_bound == 1.0
    X, _, w = _data()
    with pytest.raises(ValueError, match="computed without weights"):
        walr_fit(X, rel, weights=w / 2, lambda_=1e-3, solver="newton")
    old_w = _record(weighted=True)
    old_w["version"] = 1
    del old_w["weighted"]
    rel_w = NoisyDotProduct.from_json(json.dumps(old_w))
    assert rel_w.weighted is True and rel_w.weights_bound == 2.0
    with pytest.raises(ValueError, match="computed with observation weights"):
        walr_fit(X, rel_w, lambda_=1e-3, solver="newton")
    # re-saved, it is a version-3 file (the envelope) that says so
    assert fields_of(rel_w.to_json())["version"] == 3
    # a version-1 file with the version-2 field is not a version-1 file
    old["weighted"] = False
    with pytest.raises(ValueError, match=CORRUPTED + ".*unexpected"):
        NoisyDotProduct.from_json(json.dumps(old))


def test_duplicate_column_names_refused_before_the_release():
    X, y, _ = _data()
    acc = PrivacyAccountant(1.0, 1e-5)
    with pytest.raises(ValueError, match="repeated column names"):
        noisy_dot_product(pd.DataFrame(X, columns=["a", "b", "a"]), y, eps=1.0, delta=1e-6,
                          accountant=acc)
    assert acc.spent() == (0.0, 0.0)
    with pytest.raises(ValueError, match="unique"):
        NoisyDotProduct([0.1, 0.2], n=100, eps=1.0, delta=1e-5, sigma=1.0, mechanism="analytic",
                        sensitivity=0.02, columns=("a", "a"))


def test_walr_formula_on_dask_with_weights_bounded_by_one(client):
    dd = pytest.importorskip("dask.dataframe")
    from privatelr import walr

    X, y, w = _data()
    df = pd.DataFrame({"a": X[:, 1], "b": X[:, 2], "y": y, "w": w / 2})
    fit = walr("y ~ a + b", dd.from_pandas(df, npartitions=4), eps=1.0, delta=1e-6,
               weights="w", weights_bound=1.0, lambda_=1e-3, random_state=0)
    assert fit.status == "ok"
