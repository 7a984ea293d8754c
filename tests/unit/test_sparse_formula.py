"""``dplr(..., sparse=True)``: the formula front end with formulaic's sparse design.

The sparse design holds the dense design's values, and the engine's sparse passes give the dense
release to rounding (tests/unit/test_sparse_rows.py), so every fit here must equal the dense
fit of the same data and seed to 1e-12 — the noise is drawn in the same order from the same
generator, so a difference larger than rounding means the sparse path changed the pipeline.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privatelr import dplr, public_bounds
from privatelr.persist import loads

SITES = [f"s{i}" for i in range(120)]


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({"x": rng.uniform(-0.5, 0.5, n),
                       "site": pd.Categorical(rng.choice(SITES, n), categories=SITES),
                       "group": pd.Categorical(rng.choice(["a", "b", "c"], n),
                                               categories=["a", "b", "c"])})
    eta = 3 * df["x"] + (df["group"] == "b") - 0.5
    df["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int)
    return df


@pytest.mark.parametrize("kwargs", [
    {"eps": 0.0},
    {"eps": 1.0},
    {"eps": 1.0, "op": False},
    {"eps": 1.0, "method": "gaussian", "delta": 1e-6},
    {"eps": 1.0, "data_norm": 1.0, "clip": True},
    {"eps": 1.0, "multiclass": "multinomial", "formula": "group ~ x + site"},
    {"eps": 1.0, "multiclass": "ovr", "formula": "group ~ x + site"},
])
def test_sparse_design_gives_the_dense_fit(frame, kwargs):
    kwargs = {"data_norm": 1.5} | kwargs
    formula = kwargs.pop("formula", "y ~ x + site + group")
    dense = dplr(formula, frame, random_state=4, **kwargs)
    sparse = dplr(formula, frame, random_state=4, sparse=True, **kwargs)
    assert sparse.spec.sparse and not dense.spec.sparse
    np.testing.assert_allclose(sparse.coef, dense.coef, rtol=0, atol=1e-12)
    assert sparse.calibration == dense.calibration
    got, want = sparse.predict(frame.head(50)), dense.predict(frame.head(50))
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               atol=1e-12)


def test_the_rows_are_sparse_and_predict_rebuilds_them_sparse(frame):
    m = dplr("y ~ x + site", frame, eps=1.0, data_norm=1.5, sparse=True, random_state=0)
    rows = m.spec.rows(frame.head(10), response=False)
    assert sp.issparse(rows.X) and rows.X.shape == (10, 1 + 1 + 119)
    assert rows.X.nnz <= 10 * 3                      # intercept, x, one dummy a row
    back = loads(m.to_json())                        # the flag is part of the saved spec
    assert back.spec.sparse
    np.testing.assert_array_equal(back.predict(frame), m.predict(frame))


def test_missing_rows_get_missing_predictions(frame):
    m = dplr("y ~ x + site", frame, eps=0, sparse=True)
    new = frame.head(4).copy()
    new.loc[1, "x"] = np.nan
    p = m.predict(new)
    assert p.isna().tolist() == [False, True, False, False]
    assert m.predict(new, type="class").isna().tolist() == [False, True, False, False]


def test_public_bounds_keep_the_design_sparse_and_projection_makes_it_dense(frame):
    # a sparse design is divided by the public magnitudes, never centred (centring would make
    # it dense): it equals the dense fit of the uncentred map
    bounds = public_bounds({"x": (-0.5, 0.5)}, center=False)
    a = dplr("y ~ x + site", frame, eps=1.0, bounds=bounds, clip=True, random_state=2)
    b = dplr("y ~ x + site", frame, eps=1.0, bounds=bounds, clip=True, random_state=2,
             sparse=True)
    np.testing.assert_allclose(b.coef, a.coef, atol=1e-12)
    c = dplr("y ~ x + site", frame, eps=1.0, bounds=public_bounds({"x": (-0.5, 0.5)}),
             clip=True, random_state=2, sparse=True)
    assert not c.spec.preprocess.shifts and np.array_equal(c.coef, b.coef)
    a = dplr("y ~ x + site", frame, eps=1.0, rp_dim=10, clip=True, random_state=2)
    b = dplr("y ~ x + site", frame, eps=1.0, rp_dim=10, clip=True, random_state=2,
             sparse=True)
    np.testing.assert_allclose(b.coef, a.coef, atol=1e-12)


def test_refusals(frame):
    with pytest.raises(ValueError, match="dense design"):
        dplr("y ~ x + site", frame, eps=0, do_scale=True, sparse=True)
    with pytest.raises(ValueError, match="offset"):
        dplr("y ~ site + offset(x)", frame, eps=0, sparse=True)
    with pytest.raises(TypeError, match="sparse"):
        dplr("y ~ x", frame, eps=0, sparse="yes")
