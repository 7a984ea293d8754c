"""R's offset(x): a per-row term with coefficient 1, in fits, predictions, files and inference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privatelr as pl
from privatelr import erm
from privatelr.datasets import load_mtcars
from privatelr.design import build_design

sm = pytest.importorskip("statsmodels.api")


@pytest.fixture(scope="module")
def cars():
    d = load_mtcars()
    return d.assign(mpg=d["mpg"] / 40.0, wt=d["wt"] / 6.0)      # covariates inside the ball


def test_maximum_likelihood_with_offset_equals_statsmodels_glm(cars):
    m = pl.dplr("am ~ mpg + offset(log(hp)) + offset(wt)", cars, eps=0, lambda_=0)
    ref = sm.GLM(cars["am"], sm.add_constant(cars[["mpg"]]), family=sm.families.Binomial(),
                 offset=np.log(cars["hp"]) + cars["wt"]).fit(tol=1e-13)
    np.testing.assert_allclose(m.coef, ref.params, rtol=1e-6)
    np.testing.assert_allclose(pl.coef_table(m)["Std. Error"], ref.bse, rtol=1e-6)
    assert list(m.coefficients.index) == ["(Intercept)", "mpg"]
    assert m.formula == "am ~ mpg + offset(log(hp)) + offset(wt)"


def test_penalised_fit_with_offset_is_stationary(cars):
    lam = 0.05
    m = pl.dplr("am ~ mpg + wt + offset(qsec / 20)", cars, eps=0, lambda_=lam)
    X = np.c_[np.ones(len(cars)), cars[["mpg", "wt"]]]
    y = 2.0 * cars["am"].to_numpy() - 1.0
    margin = y * (X @ m.coef + cars["qsec"].to_numpy() / 20)
    grad = -(X * (y / (1 + np.exp(margin)))[:, None]).mean(axis=0) + lam * m.coef
    assert np.abs(grad).max() < 1e-9


def test_predict_adds_the_new_rows_offset(cars):
    m = pl.dplr("am ~ mpg + offset(log(hp))", cars, eps=0, lambda_=0)
    new = cars.head(4).assign(hp=[110.0, np.nan, 93.0, 110.0])
    link = pl.predict(m, new, type="link")
    X = np.c_[np.ones(4), new["mpg"]]
    want = X @ m.coef + np.log(new["hp"].to_numpy())
    np.testing.assert_allclose(link.to_numpy()[[0, 2, 3]], want[[0, 2, 3]], rtol=1e-13)
    assert np.isnan(link.iloc[1]) and link.index.equals(new.index)     # missing offset: NaN
    se = pl.predict(m, new, type="link", se_fit=True)
    np.testing.assert_allclose(se["fit"].to_numpy()[[0, 2, 3]], want[[0, 2, 3]], rtol=1e-12)
    with pytest.raises(ValueError, match="hp"):
        pl.predict(m, new.drop(columns="hp"))
    with pytest.raises(ValueError, match="infinite"):
        pl.predict(m, new.assign(hp=[0.0, 1.0, 1.0, 1.0]))             # log(0) = -inf


def test_private_fit_calibration_ignores_the_offset_and_round_trips(cars):
    kw = dict(eps=1.0, levels={"am": [0, 1]}, random_state=7)
    a = pl.dplr("am ~ mpg + wt + offset(qsec / 20)", cars, **kw)
    b = pl.dplr("am ~ mpg + wt", cars, **kw)
    assert a.calibration == b.calibration          # lambda, penalty, eps', noise scale
    again = pl.dplr("am ~ mpg + wt + offset(qsec / 20)", cars, **kw)
    assert np.array_equal(a.coef, again.coef)
    back = pl.persist.loads(a.to_json())
    assert back.spec.offsets == ["qsec/20"] or back.spec.offsets == a.spec.offsets
    pd.testing.assert_series_equal(pl.predict(back, cars), pl.predict(a, cars))


def test_misplaced_or_data_dependent_offsets_are_refused(cars):
    for f in ("am ~ mpg:offset(wt)", "am ~ log(offset(wt))", "am ~ mpg - offset(wt)"):
        with pytest.raises(ValueError, match="offset"):
            build_design(f, cars)
    with pytest.raises(ValueError, match="scale"):
        pl.dplr("am ~ mpg + offset(scale(wt))", cars, eps=1, levels={"am": [0, 1]})
    with pytest.raises(ValueError, match="numeric"):
        build_design("am ~ mpg + offset(as.character(wt))", cars)


def test_offset_on_dask_and_in_walr_is_refused_clearly(cars):
    dd = pytest.importorskip("dask.dataframe")
    with pytest.raises(ValueError, match="Dask"):
        pl.dplr("am ~ mpg + offset(wt)", dd.from_pandas(cars, npartitions=2), eps=1,
                levels={"am": [0, 1]})
    with pytest.raises(ValueError, match="offset"):
        pl.walr("am ~ mpg + offset(wt)", cars, eps=1, delta=1e-6)
    m = pl.dplr("am ~ mpg + offset(wt)", cars, eps=0)          # fitted in memory, scored lazily
    lazy = pl.predict(m, dd.from_pandas(cars, npartitions=3), type="link").compute()
    # (Dask sorts the index and gives it its own string dtype: compare by label)
    lazy.index = lazy.index.astype(object)
    pd.testing.assert_series_equal(lazy.reindex(cars.index), pl.predict(m, cars, type="link"),
                                   check_index_type=False)


def test_engine_offset_matches_an_equivalent_design():
    # an offset o is a column with its coefficient pinned at 1: with o = 0.7 x_2 the fit on
    # [x0, x1] plus the offset equals the fit on [x0, x1, x2] restricted by w2 = 0.7
    rng = np.random.default_rng(3)
    n = 2000
    X = np.c_[np.ones(n), rng.uniform(-0.5, 0.5, size=(n, 2))]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ [0.2, 1.0, 0.7])))).astype(int)
    rows = pl.rows.ArrayRows(X[:, :2], y, offset=0.7 * X[:, 2])
    from privatelr.losses import LogisticLoss
    from privatelr.solver import minimize

    rep = minimize(rows.objective(LogisticLoss(), 0.0), np.zeros(2), method="newton", gtol=1e-12)
    ref = sm.GLM(y, X[:, :2], family=sm.families.Binomial(), offset=0.7 * X[:, 2]).fit()
    np.testing.assert_allclose(rep.x, ref.params, rtol=1e-7)
    assert erm is not None
