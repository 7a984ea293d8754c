"""dplr(formula, dask_dataframe) and predict on Dask data against the in-memory dplr.

The Dask path builds the same design spec (from the schema and the declared levels, never
from the data), draws the projection and the noise from the same Generator in the same order
and solves the same problem, so coefficients agree to rounding (~1e-15); atol 1e-10 is the
issue's parity target and any modelling difference (a missing dummy, a different reference
level, another noise draw, a wrong n) moves them by >= 1e-3. Data in 8 partitions on a
2-process LocalCluster.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from privatelr import dplr, predict  # noqa: E402
from privatelr.exceptions import PrivacyWarning  # noqa: E402

N, PARTS = 2000, 8
# covariate rows (a, b, dummies) have norm <= sqrt(0.32 + 1 + 1) < 1.6: no PrivacyWarning unless
# a test lowers the bound on purpose
B = 1.6
LEVELS = ["lo", "mid", "hi"]


def _frame(seed=0, n=N):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.uniform(-0.4, 0.4, n), "b": rng.uniform(-0.4, 0.4, n),
                       "g": pd.Categorical(rng.choice(LEVELS, n), categories=LEVELS),
                       "cyl": rng.choice([4, 6, 8], n)})
    df["y"] = (df.a - df.b + 0.3 * (df.g == "hi") + 0.2 * rng.standard_normal(n) > 0).astype(int)
    return df


def _same(dsk, mem):
    assert list(dsk.coefficients.index) == list(mem.coefficients.index)
    np.testing.assert_allclose(dsk.coefficients.to_numpy(), mem.coefficients.to_numpy(), rtol=0,
                               atol=1e-10)
    for f in ("n", "d", "lambda_", "eps_eff", "penalty", "status", "method", "norm_bound",
              "n_dropped", "n_exceeding", "n_clipped"):
        assert getattr(dsk, f) == getattr(mem, f), f


@pytest.mark.parametrize("formula,op", [("y ~ a + b + g", True), ("y ~ a * g + factor(cyl)", False)])
def test_dplr_dask_equals_in_memory(client, formula, op):
    df = _frame()
    mem_df = df.assign(cyl=pd.Categorical(df.cyl, categories=[4, 6, 8]))  # same levels in memory
    mem = dplr(formula, mem_df, eps=1.0, op=op, random_state=3, data_norm=B)
    dsk = dplr(formula, dd.from_pandas(df, npartitions=PARTS), eps=1.0, op=op, random_state=3,
               data_norm=B, levels={"cyl": [4, 6, 8]})
    _same(dsk, mem)
    assert np.isnan(dsk.CIndex)  # documented: not computed on Dask data
    # power: another seed moves the private coefficients far beyond the tolerance
    other = dplr(formula, mem_df, eps=1.0, op=op, random_state=4, data_norm=B)
    assert np.abs(other.coefficients.to_numpy() - mem.coefficients.to_numpy()).max() > 1e-3


def test_projection_clip_missing_and_multiclass(client):
    df = _frame(seed=1)
    ddf = dd.from_pandas(df, npartitions=PARTS)
    # random projection: the Achlioptas matrix comes from the same generator, before the noise
    mem = dplr("y ~ a + b + g", df, eps=2.0, rp_dim=2, random_state=5, data_norm=B)
    dsk = dplr("y ~ a + b + g", ddf, eps=2.0, rp_dim=2, random_state=5, data_norm=B)
    _same(dsk, mem)
    np.testing.assert_array_equal(dsk.rp_p, mem.rp_p)
    # clipping covariate rows above data_norm (here 0.5: most rows with g = "hi" exceed it)
    mem = dplr("y ~ a + b + g", df, eps=2.0, data_norm=0.5, clip=True, random_state=5)
    dsk = dplr("y ~ a + b + g", ddf, eps=2.0, data_norm=0.5, clip=True, random_state=5)
    assert mem.n_clipped > 100
    _same(dsk, mem)
    # rows outside the bound without clip=True: nothing is released, as in memory
    for data in (ddf, df):
        with pytest.raises(ValueError, match="above data_norm=0.5.*clip=True"):
            dplr("y ~ a + b + g", data, eps=2.0, data_norm=0.5, random_state=5)
    # rows with missing values are dropped partition-wise (R's na.omit), n counts the rest
    dfm = df.copy()
    dfm.loc[::50, "a"] = np.nan
    with pytest.warns(UserWarning, match="dropped 40 of 2000 rows"):
        mem = dplr("y ~ a + b", dfm, eps=1.0, random_state=2)
    with pytest.warns(UserWarning, match="dropped 40 of 2000 rows"):
        dsk = dplr("y ~ a + b", dd.from_pandas(dfm, npartitions=PARTS), eps=1.0, random_state=2)
    assert dsk.n == 1960
    _same(dsk, mem)
    # a declared three-level response: first level against the rest, as in memory
    with pytest.warns(UserWarning, match="3 classes"):
        dsk = dplr("g ~ a + b", ddf, eps=1.0, random_state=2)
    with pytest.warns(UserWarning, match="3 classes"):
        mem = dplr("g ~ a + b", df, eps=1.0, random_state=2)
    _same(dsk, mem)


def test_levels_must_be_declared(client):
    df = _frame()
    ddf = dd.from_pandas(df, npartitions=PARTS)
    with pytest.raises(ValueError, match=r"'cyl'.*levels=\{'cyl'"):
        dplr("y ~ a + factor(cyl)", ddf, eps=1.0)
    with pytest.raises(ValueError, match=r"'cyl'.*a fit on Dask data \(nothing is learned from "
                                         r"the rows there, even at eps=0\).*levels=\{'cyl'"):
        dplr("y ~ a + factor(cyl)", ddf, eps=0)
    with pytest.raises(ValueError, match=r"scale\(a\).*a fit on Dask data"):     # learned numbers
        dplr("y ~ scale(a)", ddf, eps=0)
    # a string column: Dask gives it a string dtype without categories
    ds = dd.from_pandas(df.assign(g=df.g.astype(str)), npartitions=PARTS)
    with pytest.raises(ValueError, match="'g'.*levels"):
        dplr("y ~ a + g", ds, eps=1.0)
    ok = dplr("y ~ a + g", ds, eps=1.0, random_state=0, levels={"g": LEVELS}, data_norm=B)
    assert list(ok.coefficients.index) == ["(Intercept)", "a", "gmid", "ghi"]  # declared order
    # a partition value outside the declared levels is an error, not a silent new level
    with pytest.raises(ValueError, match="'g' has value.*outside its levels"):
        dplr("y ~ a + g", ds, eps=1.0, levels={"g": ["lo", "mid"]})
    # a numeric response is coded 0/1 (R's manual: it "must only contain values 0 and 1")
    with pytest.raises(ValueError, match="only 0 and 1"):
        dplr("I(y + 1) ~ a", ddf, eps=1.0)
    with pytest.raises(ValueError, match="do_scale"):
        dplr("y ~ a", ddf, eps=1.0, do_scale=True)
    with pytest.raises(ValueError, match="threshold"):
        dplr("y ~ a", ddf, eps=1.0, threshold="youden")
    # the same declarations in memory give the same columns
    mem = dplr("y ~ a + g", df.assign(g=df.g.astype(str)), eps=1.0, random_state=0,
               levels={"g": LEVELS}, data_norm=B)
    assert list(mem.coefficients.index) == list(ok.coefficients.index)


def test_predict_on_dask_is_lazy_and_equal(client):
    df = _frame(seed=2)
    dfm = df.copy()
    dfm.loc[3, "b"] = np.nan
    ddf = dd.from_pandas(dfm, npartitions=PARTS)
    mem = dplr("y ~ a + b + g", df, eps=1.0, random_state=9, data_norm=B)
    dsk = dplr("y ~ a + b + g", dd.from_pandas(df, npartitions=PARTS), eps=1.0, random_state=9, data_norm=B)
    p = predict(dsk, ddf)
    assert type(p).__module__.startswith("dask") and p.npartitions == PARTS  # nothing computed
    pv = p.compute()
    pm = predict(mem, dfm)
    assert pv.index.equals(pm.index) and np.isnan(pv[3]) and np.isnan(pm[3])
    np.testing.assert_allclose(pv, pm, rtol=0, atol=1e-12, equal_nan=True)
    labels = dsk.predict(ddf, type="class").compute()
    assert pd.isna(labels.iloc[3]) and labels.dtype == predict(mem, dfm, type="class").dtype
    assert labels.drop(index=3).tolist() == predict(mem, dfm, type="class").drop(index=3).tolist()
    # the Dask-fitted model also predicts pandas data (the same object as in memory)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(predict(dsk, df), predict(mem, df), rtol=0, atol=1e-12)


def test_empty_partition(client):
    # a filter can leave partitions empty: they contribute nothing, the fit is unchanged
    df = _frame(seed=3)
    ddf = dd.from_pandas(df, npartitions=PARTS)
    ddf = ddf[ddf.a.map_partitions(lambda s: s.index >= N // PARTS, meta=("a", bool))]
    dsk = dplr("y ~ a + g", ddf, eps=1.0, random_state=0, data_norm=B)
    mem = dplr("y ~ a + g", df.iloc[N // PARTS:], eps=1.0, random_state=0, data_norm=B)
    assert dsk.n == N - N // PARTS
    _same(dsk, mem)


def test_label_vector_and_covariates_must_share_partitions(client):
    df = _frame(seed=4)
    X = dd.from_pandas(df[["a", "b"]], npartitions=PARTS)
    y = dd.from_pandas(df.y, npartitions=PARTS // 2)
    with pytest.raises(ValueError, match="different partitions"):
        dplr(y, X, eps=1.0, data_norm=B)
    # from one Dask DataFrame: the same fit as in memory
    ddf = dd.from_pandas(df, npartitions=PARTS)
    dsk = dplr(ddf.y, ddf[["a", "b"]], eps=1.0, random_state=1, data_norm=B)
    mem = dplr(df.y, df[["a", "b"]], eps=1.0, random_state=1, data_norm=B)
    _same(dsk, mem)
