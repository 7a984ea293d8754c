"""The inference API on every front end: dplr (formula, data frame, matrix), erm.fit, WALR, Dask;
the information-matrix release's noise law; persistence; summary and predict(se_fit=True)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import privatelr as pl
from privatelr import erm
from privatelr.datasets import load_mtcars
from privatelr.inference import (DEFAULT_SHARE, information_sensitivity, release_information,
                                 symmetric_noise)
from privatelr.rows import ArrayRows

sm = pytest.importorskip("statsmodels.api")


def _ball_data(n=20000, p=3, seed=1):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, p))
    Z /= np.linalg.norm(Z, axis=1)[:, None]
    Z *= rng.uniform(size=(n, 1)) ** (1.0 / p)
    w0 = np.r_[-0.5, np.resize([1.0, -1.0, 0.5], p)]
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-(np.c_[np.ones(n), Z] @ w0)))).astype(int)
    df = pd.DataFrame(Z, columns=[f"z{j}" for j in range(p)])
    df["y"] = y
    return df


def test_every_front_end_gives_the_same_table_at_eps0():
    d = load_mtcars()
    ref = sm.Logit(d["am"], sm.add_constant(d[["mpg", "wt"]])).fit(disp=0)
    fits = [pl.dplr("am ~ mpg + wt", d, eps=0, lambda_=0),
            # the default lambda = 0.001 (R's dplr coefficients) and a public map: the table is
            # still glm's on the raw columns (issue 28: eps = 0 is glm)
            pl.dplr("am ~ mpg + wt", d, eps=0),
            pl.dplr("am ~ mpg + wt", d, eps=0,
                    bounds=pl.public_bounds({"mpg": (10, 35), "wt": (1, 6)})),
            pl.dplr(d[["mpg", "wt", "am"]], target="am", eps=0, lambda_=0),
            pl.dplr(d["am"].to_numpy(), d[["mpg", "wt"]], eps=0, lambda_=0),
            erm.fit(np.c_[np.ones(len(d)), d[["mpg", "wt"]]], d["am"], lambda_=0, eps=0,
                    data_norm=100.0, inference=True)]
    for m in fits:
        table = pl.coef_table(m)
        np.testing.assert_allclose(table["Estimate"], ref.params, rtol=1e-6)
        np.testing.assert_allclose(table["Std. Error"], ref.bse, rtol=1e-6)
        np.testing.assert_allclose(table["Pr(>|z|)"], ref.pvalues, rtol=1e-6)
        np.testing.assert_allclose(pl.confint(m, method="wald").to_numpy(),
                                   ref.conf_int().to_numpy(), rtol=1e-6)


def test_private_fit_without_inference_says_how_to_get_it():
    df = _ball_data(2000)
    m = pl.dplr("y ~ z0 + z1 + z2", df, eps=1, random_state=0)
    for f in (pl.vcov, pl.confint, lambda m: pl.tidy(m, conf_int=True)):
        with pytest.raises(ValueError, match="inference=True"):
            f(m)
    assert "refit with inference=True" in str(pl.summary(m))
    # point estimates and odds ratios cost nothing more: they work without inference
    table = pl.coef_table(m)
    assert list(table.columns) == ["Estimate"] and table.attrs["quality"] == "none"
    np.testing.assert_array_equal(table["Estimate"], m.coefficients)
    tidy = pl.tidy(m, conf_int=False, exponentiate=True)
    np.testing.assert_allclose(tidy["estimate"], np.exp(m.coefficients.to_numpy()))
    assert tidy["std_error"].isna().all()
    text = str(pl.summary(m, odds_ratios=True))
    assert "Odds ratios" in text and "point estimates" in text
    with pytest.raises(ValueError, match="inference"):
        pl.dplr("y ~ z0", df, eps=1, inference=1.5)
    with pytest.raises(ValueError, match="level"):
        pl.confint(pl.dplr("y ~ z0", df, eps=0), level=1.2)
    with pytest.raises(ValueError, match="parm"):
        pl.confint(pl.dplr("y ~ z0", df, eps=0), parm="nope")


def test_budget_is_split_and_charged_twice():
    df = _ball_data(5000)
    acc = pl.PrivacyAccountant(1.0)
    m = pl.dplr("y ~ z0 + z1 + z2", df, eps=1, inference=0.4, accountant=acc, random_state=0)
    assert [round(s.eps, 12) for s in acc.ledger] == [0.6, 0.4]
    assert math.isclose(m.eps, 0.6) and math.isclose(m.inference.eps, 0.4)
    m = pl.dplr("y ~ z0 + z1 + z2", df, eps=1, inference=True, random_state=0)
    assert math.isclose(m.inference.eps, DEFAULT_SHARE)
    text = str(m.summary())
    assert "(inference)" in text and "Std. Error" in text
    with pytest.raises(ValueError, match="logistic"):
        erm.fit(np.c_[np.ones(50), np.zeros(50)], np.r_[np.zeros(25), np.ones(25)], lambda_=0.1,
                eps=1, loss="huber", inference=True)


def test_information_noise_follows_its_law():
    """The released matrix minus the exact one is E with ||E||_F ~ Gamma(m, s_H), s_H =
    sqrt(2) c A B^2 / (n eps_H), and off-diagonal entries of half the diagonal's variance.

    Power: 3000 draws at d = 3 (m = 6): the mean of ||E||/s_H is 6 with standard error
    sqrt(6/3000) = 0.045, so the band 6 +- 0.2 (4.5 SE) passes a correct scale with probability
    > 0.9999 and rejects a scale off by 1.1 (mean 6.6, 13 SE away). The variance ratio of an
    off-diagonal to a diagonal entry is 1/2; its estimate has relative SE about
    sqrt(2/3000 + 2/3000) = 0.037, so 0.5 +- 0.1 rejects the unscaled 1 and the over-scaled 0.25.
    """
    rng = np.random.default_rng(5)
    n, d = 400, 3
    X = np.c_[np.ones(n), rng.uniform(-0.7, 0.7, size=(n, d - 1))]
    rows = ArrayRows(X, rng.integers(0, 2, n))
    cal = pl.erm.calibrate(n, d, eps=1.0, lambda_=0.1, data_norm=math.sqrt(2.0))
    exact = release_information(rows, np.array([0.1, 0.5, -0.3]), cal, eps=0, rng=rng)
    scale = information_sensitivity(n, 0.25, 1.0, math.sqrt(2.0)) / 0.5
    norms, diag, off = [], [], []
    for _ in range(3000):
        rel = release_information(rows, np.array([0.1, 0.5, -0.3]), cal, eps=0.5, rng=rng)
        E = rel.information - exact.information
        assert np.array_equal(E, E.T) and rel.noise_scale == pytest.approx(scale, rel=1e-12)
        norms.append(np.linalg.norm(E) / scale)
        diag.append(E[0, 0])
        off.append(E[0, 1])
    assert abs(np.mean(norms) - 6.0) < 0.2
    assert abs(np.var(off) / np.var(diag) - 0.5) < 0.1
    assert np.linalg.norm(symmetric_noise(4, 1.0, np.random.default_rng(0))) > 0


def test_saved_model_keeps_its_inference_and_predict_se_fit_matches_statsmodels(tmp_path):
    d = load_mtcars()
    m = pl.dplr("am ~ mpg + wt", d, eps=0, lambda_=0)
    m.to_json(tmp_path / "m.json")
    back = pl.load_model(tmp_path / "m.json")
    # the table and Wald intervals travel with the file; profile intervals refit the training
    # rows, which a file does not hold: the loaded model says so and gives Wald's
    pd.testing.assert_frame_equal(pl.coef_table(back), pl.coef_table(m))
    pd.testing.assert_frame_equal(pl.confint(back, method="wald"), pl.confint(m, method="wald"))
    with pytest.warns(UserWarning, match="Wald intervals are given"):
        pd.testing.assert_frame_equal(pl.confint(back), pl.confint(m, method="wald"))
    with pytest.raises(ValueError, match="saved model does not hold"):
        pl.confint(back, method="profile")
    ref = sm.Logit(d["am"], sm.add_constant(d[["mpg", "wt"]])).fit(disp=0)
    new = d.head(5).assign(mpg=[21.0, None, 22.8, 21.4, 18.7])
    out = pl.predict(m, new, type="link", se_fit=True)
    assert list(out.columns) == ["fit", "se_fit"] and out.index.equals(new.index)
    assert np.isnan(out.iloc[1]).all()
    X = sm.add_constant(new[["mpg", "wt"]].dropna(), has_constant="add")
    want = ref.get_prediction(X, which="linear")
    np.testing.assert_allclose(out["se_fit"].dropna(), want.se, rtol=1e-6)
    np.testing.assert_allclose(out["fit"].dropna(), want.predicted, rtol=1e-6)
    resp = pl.predict(m, new, type="response", se_fit=True)
    p = 1 / (1 + np.exp(-out["fit"]))
    np.testing.assert_allclose(resp["se_fit"], p * (1 - p) * out["se_fit"], rtol=1e-12)
    with pytest.raises(ValueError, match="class"):
        pl.predict(m, new, type="class", se_fit=True)


def test_private_model_round_trips_with_its_information():
    df = _ball_data(5000)
    m = pl.dplr("y ~ z0 + z1 + z2", df, eps=2, inference=True, random_state=3)
    back = pl.persist.loads(m.to_json())
    np.testing.assert_array_equal(back.inference.information, m.inference.information)
    pd.testing.assert_frame_equal(pl.tidy(back), pl.tidy(m))


def test_dask_fit_releases_the_same_information():
    dd = pytest.importorskip("dask.dataframe")
    df = _ball_data(4000)
    m = pl.dplr("y ~ z0 + z1 + z2", df, eps=2, inference=True, random_state=3)
    md = pl.dplr("y ~ z0 + z1 + z2", dd.from_pandas(df, npartitions=3), eps=2, inference=True,
                 random_state=3, levels={"y": [0, 1]})
    np.testing.assert_allclose(md.inference.information, m.inference.information, atol=1e-13)
    np.testing.assert_allclose(pl.confint(md), pl.confint(m), atol=1e-10)
    lazy = pl.predict(md, dd.from_pandas(df, npartitions=2), type="link", se_fit=True)
    pd.testing.assert_frame_equal(lazy.compute(), pl.predict(m, df, type="link", se_fit=True))


def test_walr_intervals_match_glm_when_the_release_is_nearly_exact():
    rng = np.random.default_rng(0)
    n = 20000
    X = np.c_[np.ones(n), rng.uniform(size=(n, 2))]
    y = rng.uniform(size=n) < 1 / (1 + np.exp(1 - 2 * X[:, 1]))
    ref = sm.Logit(y.astype(float), X).fit(disp=0)
    rel = pl.noisy_dot_product(X, y, eps=1e4, delta=1e-6, random_state=1)   # sigma ~ 0
    fit = pl.walr_fit(X, rel, lambda_=1e-8, solver="newton")
    np.testing.assert_allclose(np.sqrt(np.diag(pl.vcov(fit))), ref.bse, rtol=1e-4)
    noisy = pl.walr_fit(X, pl.noisy_dot_product(X, y, eps=0.5, delta=1e-6, random_state=1),
                        lambda_=1e-4, solver="newton")
    # the noise adds sigma^2 H^-2: strictly wider than the sampling part
    assert (np.diag(pl.vcov(noisy)) > np.diag(pl.vcov(fit))).all()


def test_cli_fit_releases_inference_on_request(tmp_path, capsys):
    from privatelr import cli

    df = _ball_data(5000)
    df.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "m.json"
    code = cli.main(["fit", str(tmp_path / "d.csv"), "--formula", "y ~ z0 + z1 + z2", "--eps",
                     "1", "--inference", "--levels", "y=0,1", "--seed", "1", "--out", str(out),
                     "-q"])
    text = capsys.readouterr().out
    assert code == 0 and "Std. Error" in text and "(inference)" in text
    model = pl.load_model(out)
    assert math.isclose(model.inference.eps, 0.25) and pl.confint(model).shape == (4, 2)
    code = cli.main(["fit", str(tmp_path / "d.csv"), "--formula", "y ~ z0", "--inference", "2",
                     "--out", str(tmp_path / "m2.json"), "-q"])
    assert code != 0 and "--inference" in capsys.readouterr().err


def test_wide_design_information_is_exact_in_double_precision():
    # d = 41 > the width from which Newton's Hessians are single precision: the information for
    # inference is not, so glm's standard errors agree to 1e-6 even with correlated columns
    rng = np.random.default_rng(0)
    n, p = 5000, 40
    X = np.c_[np.ones(n), 0.1 * rng.standard_normal((n, p))]
    X[:, 2] = 0.9 * X[:, 1] + 0.1 * X[:, 2]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-3 * X[:, 1:6].sum(axis=1)))).astype(int)
    res = erm.fit(X, y, lambda_=0, eps=0, data_norm=100.0, inference=True)
    ref = sm.Logit(y, X).fit(disp=0, method="newton", tol=1e-12)
    np.testing.assert_allclose(pl.coef_table(res)["Std. Error"], ref.bse, rtol=1e-8)
