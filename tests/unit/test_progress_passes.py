"""The engine reports each pass over the rows to the listener of ``reporting_passes`` (the
command line's fit bar), on every backend, and to nobody else."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp

from privatelr import erm
from privatelr.progress import report_pass, reporting_passes


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.uniform(-0.5, 0.5, (n, 2))])
    y = (X[:, 1] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("sparse", [False, True])
def test_each_pass_is_reported_while_fitting(sparse):
    X, y = _data()
    seen: list[float] = []
    with reporting_passes(seen.append):
        erm.fit(sp.csr_matrix(X) if sparse else X, y, lambda_=0.1, eps=1, data_norm=1.5,
                random_state=0)
    # a Newton/L-BFGS fit reads the rows several times; every share is a fraction of them
    assert sum(seen) >= 2 and all(0 < s <= 1 for s in seen)


def test_nobody_listens_outside_the_block_or_on_another_thread():
    X, y = _data()
    seen: list[float] = []
    with reporting_passes(seen.append):
        pass
    erm.fit(X, y, lambda_=0.1, eps=0)
    assert seen == []
    other: list[float] = []

    def fit_elsewhere():
        erm.fit(X, y, lambda_=0.1, eps=0)

    with reporting_passes(other.append):
        t = threading.Thread(target=fit_elsewhere)
        t.start()
        t.join()
    assert other == []                       # the listener is this context's, not the thread's
    report_pass()                            # nobody listens: nothing happens


def test_inner_block_replaces_the_outer_and_an_error_stops_the_fit():
    X, y = _data()
    outer: list[float] = []
    inner: list[float] = []
    with reporting_passes(outer.append):
        with reporting_passes(inner.append):
            erm.fit(X, y, lambda_=0.1, eps=0)
        assert inner and not outer
        erm.fit(X, y, lambda_=0.1, eps=0)
        assert outer

    class Stop(Exception):
        pass

    def stop(share):
        raise Stop

    with pytest.raises(Stop), reporting_passes(stop):
        erm.fit(X, y, lambda_=0.1, eps=0)


def test_dask_passes_are_reported():
    da = pytest.importorskip("dask.array")
    X, y = _data()
    seen: list[float] = []
    with reporting_passes(seen.append):
        erm.fit(da.from_array(X, chunks=(50, 3)), y, lambda_=0.1, eps=1, data_norm=1.5,
                random_state=0)
    assert len(seen) >= 2 and all(s == 1.0 for s in seen)
