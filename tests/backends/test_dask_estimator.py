"""DPLogisticRegression on Dask collections: sample_weight and the accountant.

The Dask fit runs the same pipeline partition-wise (same noise from the same seed, partial sums
added in another order): coefficients agree with the in-memory fit to ~1e-15 relative, so
rtol=1e-9 is wide while any real difference (a weight dropped, another bound in the
calibration, the noise drawn in another order) moves them by far more. Dask's local scheduler,
no cluster: the estimator's partition-wise code is the same either way (tests/backends/
test_equivalence.py runs it on the cluster).
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
pytest.importorskip("sklearn")

from privatelr import PrivacyAccountant  # noqa: E402
from privatelr.sklearn import DPLogisticRegression  # noqa: E402

N, PARTS = 800, 4


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.7, 0.7, size=(N, 2))
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(N) > 0).astype(int)
    w = rng.uniform(0.0, 2.0, size=N)
    return X, y, w


def _dask(a):
    a = np.asarray(a)
    return da.from_array(a, chunks=(N // PARTS,) + a.shape[1:])


@pytest.mark.parametrize("eps, bound", [(1.0, 2.0), (0.0, None)])
def test_dask_sample_weight_equals_in_memory(eps, bound):
    X, y, w = _data()
    est = DPLogisticRegression(eps=eps, alpha=0.02, sample_weight_bound=bound, random_state=3)
    mem = est.fit(X, y, sample_weight=w).coef_.copy()
    acc = PrivacyAccountant(1.0) if eps else None
    dsk = est.set_params(accountant=acc).fit(_dask(X), _dask(y), sample_weight=_dask(w))
    np.testing.assert_allclose(dsk.coef_, mem, rtol=1e-9)
    if eps:
        assert dsk.result_.calibration.weights_bound == 2.0 and acc.spent() == (1.0, 0.0)


def test_dask_sample_weight_fails_closed():
    X, y, w = _data()
    with pytest.raises(ValueError, match="sample_weight_bound"):
        DPLogisticRegression().fit(_dask(X), _dask(y), sample_weight=_dask(w))
    acc = PrivacyAccountant(1.0)
    with pytest.raises(ValueError, match="outside|must lie in"):        # a weight above 1.5
        DPLogisticRegression(sample_weight_bound=1.5, accountant=acc).fit(
            _dask(X), _dask(y), sample_weight=_dask(w))
    assert acc.spent() == (0.0, 0.0)
    with pytest.raises(ValueError, match="data_norm=0.5.*clip=True"):   # fail closed on Dask too
        DPLogisticRegression(data_norm=0.5, accountant=acc).fit(_dask(X), _dask(y))
    assert acc.spent() == (0.0, 0.0)


@pytest.mark.parametrize("eps, bound", [(2.0, 2.0), (0.0, None)])
def test_dask_more_than_two_declared_classes_equal_in_memory(eps, bound):
    X, _, w = _data(3)
    y = np.array(["a", "b", "c"])[np.argmax(X @ [[3.0, -3.0, 0.0], [0.0, 3.0, -3.0]], axis=1)]
    kw = dict(eps=eps, classes=["a", "b", "c"], sample_weight_bound=bound, random_state=5)
    mem = DPLogisticRegression(**kw).fit(X, y, sample_weight=w)
    lazy = DPLogisticRegression(**kw).fit(_dask(X), _dask(y), sample_weight=_dask(w))
    assert lazy.coef_.shape == (3, 2)
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(lazy.intercept_, mem.intercept_, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(lazy.predict_proba(_dask(X)).compute(), mem.predict_proba(X),
                               rtol=1e-9, atol=1e-13)
    assert (lazy.predict(_dask(X)).compute() == mem.predict(X)).all()
    with pytest.raises(ValueError, match="outside classes"):
        DPLogisticRegression(**kw).fit(_dask(X), _dask(np.where(y == "c", "d", y)))
