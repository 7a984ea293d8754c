"""``dplr(..., multiclass=)``: the multinomial and one-vs-rest models through the formula front
end, their result (predict per class, summary per class) and the Dask backend.

The engine's own evidence (noise laws, audit, the calibration constants, equality with
scikit-learn) is in tests/unit/test_multinomial.py; here the front end must add nothing of its
own: the same design and seed give the engine's bits, the budget is charged once, the class list
is the response's declared levels, and every input row gets an output row.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import MulticlassDPLR, PrivacyAccountant, dplr, predict, summary
from privatelr import multinomial as mn
from privatelr.calibration import default_lambda, default_lambda_multinomial
from privatelr.datasets import load_iris

SPECIES = ["setosa", "versicolor", "virginica"]


def _iris():
    df = load_iris()
    df[df.columns[:4]] = df[df.columns[:4]] / 12        # public rescaling: rows in the unit ball
    return df


def _design(df):
    """The design dplr builds for ``Species ~ .``: intercept, then the four covariates."""
    return np.c_[np.ones(len(df)), df[df.columns[:4]].to_numpy()]


@pytest.mark.parametrize("multiclass", ["multinomial", "ovr"])
@pytest.mark.parametrize("eps", [0.0, 2.0])
def test_front_end_gives_the_engines_bits(multiclass, eps):
    df = _iris()
    m = dplr("Species ~ .", df, eps=eps, multiclass=multiclass, random_state=7)
    B = np.sqrt(2.0)                                     # data_norm 1 plus the intercept
    lam = (default_lambda_multinomial(150, 3, eps, data_norm=B) if multiclass == "multinomial"
           else default_lambda(150, eps / 3 if eps else eps, data_norm=B))
    ref = mn.fit(_design(df), df["Species"].astype(str).to_numpy(), classes=SPECIES,
                 lambda_=lam, eps=eps, data_norm=B, multiclass=multiclass, random_state=7)
    assert isinstance(m, MulticlassDPLR)
    assert m.classes == tuple(SPECIES) and m.multiclass == multiclass
    np.testing.assert_array_equal(m.coef, ref.coef)
    assert list(m.coefficients.columns) == SPECIES
    assert list(m.coefficients.index) == ["(Intercept)", "Sepal.Length", "Sepal.Width",
                                          "Petal.Length", "Petal.Width"]
    assert m.eps == eps and m.status == "ok"
    if eps and multiclass == "multinomial":
        assert m.penalty == pytest.approx(eps / 10, rel=1e-12)     # the default lambda rule


def test_non_private_multinomial_equals_scikit_learn():
    from sklearn.linear_model import LogisticRegression

    df = _iris()
    m = dplr("Species ~ .", df, eps=0, multiclass="multinomial", lambda_=0.01)
    sk = LogisticRegression(C=1 / (150 * 0.01), fit_intercept=False, tol=1e-14,
                            max_iter=10_000).fit(_design(df), df["Species"].astype(str))
    np.testing.assert_allclose(m.coef, sk.coef_.T, atol=1e-6)
    np.testing.assert_allclose(m.predict(df).to_numpy(), sk.predict_proba(_design(df)),
                               atol=1e-7)


def test_ovr_splits_the_budget_and_the_accountant_is_charged_eps():
    df = _iris()
    acc = PrivacyAccountant(3.0)
    m = dplr("Species ~ .", df, eps=1.5, multiclass="ovr", accountant=acc, random_state=1)
    assert m.calibration.eps == pytest.approx(0.5)           # each binary fit: eps / K
    assert acc.spent()[0] == pytest.approx(1.5)
    m2 = dplr("Species ~ .", df, eps=1.5, multiclass="multinomial", accountant=acc,
              random_state=1)
    assert m2.calibration.eps == 1.5 and acc.spent()[0] == pytest.approx(3.0)
    with pytest.raises(Exception, match="budget"):
        dplr("Species ~ .", df, eps=0.1, multiclass="ovr", accountant=acc)


def test_gaussian_noise_with_one_vs_rest_and_refused_for_the_multinomial_model():
    df = _iris()
    m = dplr("Species ~ .", df, eps=3.0, multiclass="ovr", method="gaussian", delta=3e-5,
             random_state=0)
    assert m.delta == 3e-5 and m.calibration.delta == pytest.approx(1e-5)
    assert "(eps, delta)-differentially private" in str(m.summary())
    with pytest.raises(ValueError, match="multiclass='ovr'"):
        dplr("Species ~ .", df, eps=3.0, multiclass="multinomial", method="gaussian",
             delta=1e-5)


def test_private_fit_needs_declared_levels_and_learns_them_at_eps_0():
    df = _iris()
    df["Species"] = df["Species"].astype(str)            # plain text: levels not declared
    with pytest.raises(ValueError, match="levels"):
        dplr("Species ~ .", df, eps=1.0, multiclass="multinomial")
    declared = dplr("Species ~ .", df, eps=1.0, multiclass="multinomial", random_state=0,
                    levels={"Species": SPECIES[::-1]})
    assert declared.classes == tuple(SPECIES[::-1])          # the declared order
    learned = dplr("Species ~ .", df, eps=0, multiclass="multinomial")
    assert learned.classes == tuple(SPECIES)


def test_numeric_response_with_several_values():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(-1, 1, 300)})
    df["y"] = np.digitize(df["x"] + rng.normal(0, 0.3, 300), [-0.3, 0.3]) * 2 + 4   # 4, 6, 8
    m = dplr("y ~ x", df, eps=0, multiclass="multinomial")
    assert m.classes == (4, 6, 8) and m.labels == ["4", "6", "8"]
    assert list(m.predict(df).columns) == ["4", "6", "8"]
    with pytest.raises(ValueError, match="levels"):
        dplr("y ~ x", df, eps=1.0, multiclass="multinomial")
    m = dplr("y ~ x", df, eps=1.0, multiclass="ovr", levels={"y": [4, 6, 8]}, random_state=0)
    assert m.classes == (4, 6, 8)                             # the declared values


@pytest.mark.parametrize("kwargs, match", [
    ({"compat": "PrivateLR"}, "binary"),
    ({"threshold": "youden", "eps": 0}, "threshold"),
    ({"inference": True, "eps": 0}, "inference"),
    ({"multiclass": "softmax"}, "'multinomial' or 'ovr'"),
])
def test_refusals_name_the_fix(kwargs, match):
    args = {"eps": 1.0, "multiclass": "multinomial"} | kwargs
    with pytest.raises(ValueError, match=match):
        dplr("Species ~ .", _iris(), **args)


def test_default_stays_r_first_vs_rest():
    with pytest.warns(UserWarning, match="first level 'setosa'"):
        m = dplr("Species ~ .", _iris(), eps=0)
    assert m.coef.shape == (5,)


def test_predict_gives_one_row_per_input_row_with_class_columns():
    df = _iris().iloc[[0, 60, 120, 5]].copy()
    df.index = ["a", "b", "c", "d"]
    df.loc["d", "Sepal.Width"] = np.nan
    m = dplr("Species ~ .", _iris(), eps=0, multiclass="multinomial")
    prob = predict(m, df)
    assert list(prob.columns) == SPECIES and list(prob.index) == ["a", "b", "c", "d"]
    np.testing.assert_allclose(prob.iloc[:3].sum(axis=1), 1.0, rtol=1e-12)
    assert prob.loc["d"].isna().all()
    cls = m.predict(df, type="class")
    assert cls.tolist()[:3] == SPECIES and pd.isna(cls["d"])
    assert list(cls.cat.categories) == SPECIES
    link = m.predict(df, type="link")
    np.testing.assert_allclose(link.iloc[:3].to_numpy(),
                               _design(df.iloc[:3]) @ m.coef, rtol=1e-12)
    ovr = dplr("Species ~ .", _iris(), eps=0, multiclass="ovr")
    p = ovr.predict(df.iloc[:3]).to_numpy()                   # normalised binary probabilities
    s = 1 / (1 + np.exp(-(_design(df.iloc[:3]) @ ovr.coef)))
    np.testing.assert_allclose(p, s / s.sum(axis=1, keepdims=True), rtol=1e-12)
    with pytest.raises(ValueError, match="type must be one of"):
        m.predict(df, type="prob")


def test_summary_has_a_coefficient_vector_per_class_and_says_what_is_private():
    m = dplr("Species ~ .", _iris(), eps=2.0, multiclass="ovr", random_state=0)
    text = str(summary(m))
    for s in SPECIES:
        assert f"Coefficients of class {s}:" in text
    assert "one-vs-rest: 3 binary fits" in text
    assert "only the coefficients are eps-differentially private" in text
    assert str(m) == text
    text0 = str(dplr("Species ~ .", _iris(), eps=0, multiclass="multinomial"))
    assert text0.startswith(" NOT PRIVATE: a non-private fit")


def test_pickle_keeps_the_release_only():
    m = dplr("Species ~ .", _iris(), eps=1.0, multiclass="multinomial", random_state=0)
    assert m.diagnostics is not None and m.diagnostics.iterations > 0
    back = pickle.loads(pickle.dumps(m))
    assert back.diagnostics is None
    np.testing.assert_array_equal(back.coef, m.coef)
    pd.testing.assert_frame_equal(back.predict(_iris()), m.predict(_iris()))


@pytest.mark.parametrize("multiclass", ["multinomial", "ovr"])
def test_dask_gives_the_in_memory_fit_and_predictions(multiclass):
    dd = pytest.importorskip("dask.dataframe")
    df = _iris()
    ddf = dd.from_pandas(df, npartitions=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for eps in (0.0, 2.0):
            a = dplr("Species ~ .", df, eps=eps, multiclass=multiclass, random_state=3)
            b = dplr("Species ~ .", ddf, eps=eps, multiclass=multiclass, random_state=3)
            np.testing.assert_allclose(b.coef, a.coef, rtol=0, atol=1e-10)
            assert b.calibration == a.calibration and b.status == a.status
        got = b.predict(ddf).compute()
        np.testing.assert_allclose(got.to_numpy(), a.predict(df).to_numpy(), atol=1e-9)
        assert list(got.columns) == SPECIES
        assert b.predict(ddf, type="class").compute().tolist() == \
            a.predict(df, type="class").tolist()
