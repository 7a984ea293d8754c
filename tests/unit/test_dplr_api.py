"""dplr (privatelr._dplr): dispatch, result fields, warnings, verbose messages, predict, summary."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import DPLR, PrivacyWarning, dplr, predict, summary
from privatelr.datasets import load_iris, load_mtcars
from privatelr.design import DesignSpec


@pytest.fixture(scope="module")
def iris():
    return load_iris()


@pytest.fixture(scope="module")
def iris01():
    """iris with covariates divided by the public constant 12: every row inside the unit ball
    (the largest raw row norm is 11.1)."""
    df = load_iris()
    df[df.columns[:4]] = df[df.columns[:4]] / 12
    return df


@pytest.fixture(scope="module")
def mtcars():
    return load_mtcars()


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dplr(*args, **kwargs)


# ---- dispatch -----------------------------------------------------------------------------

def test_dispatch_forms_agree(iris):
    kw = dict(eps=0)
    ref = _quiet("Species ~ .", iris, **kw)
    for m in (_quiet(iris, **kw), _quiet(iris, target="Species", **kw), _quiet(iris, target=4, **kw),
              _quiet(iris["Species"], iris.iloc[:, :4], **kw),
              _quiet(iris["Species"].values, iris.iloc[:, :4], **kw)):
        np.testing.assert_allclose(m.coefficients.to_numpy(), ref.coefficients.to_numpy(),
                                   rtol=1e-9)
        assert list(m.coefficients.index) == list(ref.coefficients.index)
    m = _quiet(iris["Species"], iris.iloc[:, :4], **kw)
    assert m.formula.startswith("dplr.class ~ ")
    # target in the middle of the frame (a numeric response must be 0/1: a bool column here)
    m = _quiet(iris.assign(wide=iris["Sepal.Width"] > 3), target="wide", eps=0)
    assert "wide" not in m.coefficients.index and m.spec.response == "wide"
    # R's 1-based habit: target=1 is Sepal.Width here, numeric and not 0/1 -> a loud error
    with pytest.raises(ValueError, match="0-based.*target = 4 is target=3"):
        dplr(iris, target=1, eps=0)
    with pytest.raises(ValueError, match="numeric with values other than 0 and 1"):
        dplr("Sepal.Width ~ .", iris, eps=0)          # a formula: no word about positions


def test_dispatch_matrix_and_arrays():
    rng = np.random.default_rng(1)
    X = rng.uniform(-0.5, 0.5, size=(40, 3))
    y = (X[:, 0] > 0).astype(float)
    M = np.c_[X, y]
    m1 = _quiet(M, eps=0)
    m2 = _quiet(y, X, eps=0)
    m3 = _quiet(y.astype(bool), X, eps=0)
    assert list(m1.coefficients.index) == ["(Intercept)", "X1", "X2", "X3"]
    np.testing.assert_allclose(m1.coefficients.to_numpy(), m2.coefficients.to_numpy(), rtol=1e-9)
    np.testing.assert_allclose(m3.coefficients.to_numpy(), m2.coefficients.to_numpy(), rtol=1e-9)
    assert m3.predict(X[:3], type="class").dtype == bool


def test_dispatch_errors(iris):
    with pytest.raises(TypeError, match="accepts a formula"):
        dplr(42)
    with pytest.raises(TypeError, match="data is required"):
        dplr("Species ~ .")
    with pytest.raises(TypeError, match="covariates as data|pass the covariates"):
        dplr(iris["Species"])
    with pytest.raises(ValueError, match="target"):
        dplr(iris, target="nope")
    with pytest.raises(ValueError, match="threshold"):
        dplr("Species ~ .", iris, threshold="best")
    with pytest.raises(ValueError, match="eps"):
        dplr("Species ~ .", iris, eps=-1)
    with pytest.raises(ValueError, match="lambda_"):
        dplr("Species ~ .", iris, lambda_=0)
    with pytest.raises(TypeError, match="op"):
        dplr("Species ~ .", iris, op="yes")
    with pytest.raises(ValueError, match="compat"):
        dplr("Species ~ .", iris, compat="R")
    with pytest.raises(ValueError, match="data_norm"):
        dplr("Species ~ .", iris, compat="PrivateLR", data_norm=2.0)
    with pytest.raises(ValueError, match="rows"):
        dplr(iris["Species"][:10], iris.iloc[:, :4])


# ---- fields and status ---------------------------------------------------------------------

def test_result_fields(iris01):
    with pytest.warns(UserWarning, match="3 classes"):
        m = dplr("Species ~ .", iris01, random_state=0)
    assert isinstance(m, DPLR)
    assert m.par.equals(m.coefficients) and m.coefficients.name == "coefficients"
    assert m.n == 150 and m.d == 5 and m.eps == 1.0 and m.p_tr == 0.5
    # the one default rule: the penalty 2 log(1 + B^2/(4 n lambda)) is exactly eps/10 for B^2 = 2
    assert m.lambda_ == pytest.approx(2 / (4 * 150 * np.expm1(1 / 20)))
    assert m.status == "ok" and m.convergence == 0 and not m.did_rp and not m.scaled
    assert m.rp_dim is None and m.rp_p is None and m.method == "objective"
    assert m.norm_bound == pytest.approx(np.sqrt(2)) and 0 <= m.CIndex <= 1
    # intercept-aware penalty: 2 log(1 + B^2/(4 n lambda)) with B^2 = 2
    assert m.penalty == pytest.approx(2 * np.log1p(2 / (4 * 150 * m.lambda_)))
    assert m.eps_eff == pytest.approx(1 - m.penalty) and m.penalty == pytest.approx(0.1)
    assert set(m.counts) and isinstance(m.message, str) and m.call.startswith("dplr(")
    assert m.classes == ["setosa", "not setosa"]


def test_status_adjusted_and_output(iris01):
    m = _quiet("Species ~ .", iris01, lambda_=1e-4, random_state=0)
    assert m.status == "adjusted lambda" and m.lambda_ > 1e-4
    m = _quiet("Species ~ .", iris01, lambda_=1e-4, op=False, random_state=0)
    assert m.status == "ok" and m.method == "output" and m.lambda_ == 1e-4
    m = _quiet("Species ~ .", iris01, eps=0)
    assert m.method == "nonprivate" and m.lambda_ == 0.001 and m.eps_eff == 0


def test_unique_outcome(iris01):
    df = iris01[iris01.Species == "setosa"]
    with pytest.warns(UserWarning, match="single value"):
        m = dplr("I(Species == 'setosa') ~ .", df, random_state=0)
    # a private fit's released status does not disclose that every label is equal
    assert m.status == "ok"
    assert np.isfinite(m.coefficients).all()          # the private fit was still run
    with pytest.warns(UserWarning, match="single value"):
        r = dplr("I(Species == 'setosa') ~ .", df, random_state=0, compat="PrivateLR")
    # R's status, in R's mode: PrivateLR returns "unique.outcome", its manual says
    # "unique.outcomes"; both spellings compare equal
    assert r.status == "unique.outcome" and r.status == "unique.outcomes"
    assert str(r.status) == "unique.outcome" and r.status.startswith("unique.outcomes")
    assert r.status != "ok"
    with pytest.warns(UserWarning, match="single value"):
        assert dplr("I(Species == 'setosa') ~ .", df, eps=0).status.startswith("unique")


@pytest.mark.filterwarnings("ignore:dplr. the response .Species. has 3 classes:UserWarning")
def test_na_rows_dropped_with_warning(iris01):
    df = iris01.copy()
    df.loc[[3, 8], "Sepal.Width"] = np.nan
    with pytest.warns(UserWarning, match="dropped 2 of 150 rows"):
        m = dplr("Species ~ .", df, eps=0)
    assert m.n == 148 and m.n_dropped == 2
    p = m.predict(df)
    # pandas in, pandas out: the input's index, NaN for the dropped rows
    assert isinstance(p, pd.Series) and p.index.equals(df.index)
    assert p[[3, 8]].isna().all() and p.drop([3, 8]).notna().all()
    labels = m.predict(df, type="class")
    # classes: a Categorical of the two labels with pandas' missing value (not an object None)
    assert isinstance(labels.dtype, pd.CategoricalDtype)
    assert list(labels.cat.categories) == ["setosa", "not setosa"]
    assert pd.isna(labels[3]) and labels[0] == "setosa" and labels.isna().sum() == 2
    # the same rows as a dict of columns (not pandas): a NumPy array, None for a missing class
    raw = m.predict({c: df[c].to_numpy() for c in df.columns}, type="class")
    assert isinstance(raw, np.ndarray) and raw[3] is None and raw[0] == "setosa"


# ---- privacy warnings ------------------------------------------------------------------------

def test_rows_outside_the_bound_fail_closed_and_clip(iris):
    # nothing is released, and the message holds no statistic of the data (no count, no norm)
    with pytest.raises(ValueError, match="above data_norm=1") as info:
        dplr("I(Species == 'setosa') ~ .", iris, random_state=0)
    assert "150" not in str(info.value) and "largest" not in str(info.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        m = dplr("I(Species == 'setosa') ~ .", iris, clip=True, random_state=0)
    assert m.n_clipped == 150


def test_no_privacy_warning_when_rows_fit(iris01):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        dplr("I(Species == 'setosa') ~ .", iris01, random_state=0)
        dplr("I(Species == 'setosa') ~ .", iris01, eps=0, threshold="youden", do_scale=True)


def test_compat_warns_about_intercept(iris01):
    with pytest.warns(PrivacyWarning, match="intercept"):
        m = dplr("I(Species == 'setosa') ~ .", iris01, compat="PrivateLR", random_state=0)
    assert m.norm_bound == 1.0 and m.compat == "PrivateLR"
    assert m.penalty == pytest.approx(0.1)          # R's eps/10 with the default lambda


def test_threshold_and_scale_fail_closed_unless_compat(iris01):
    # both learn from the private rows: a private fit refuses them and names the fixes
    with pytest.raises(ValueError, match="threshold='fixed'.*compat='PrivateLR'"):
        dplr("I(Species == 'setosa') ~ .", iris01, threshold="youden", random_state=0)
    with pytest.raises(ValueError, match="public bounds.*compat='PrivateLR'"):
        dplr("I(Species == 'setosa') ~ .", iris01, do_scale=True, random_state=0)
    # R's behaviour, labelled as not private
    with pytest.warns(PrivacyWarning, match="does NOT hold"):
        m = dplr("I(Species == 'setosa') ~ .", iris01, threshold="youden", random_state=0,
                 compat="PrivateLR")
    assert m.p_tr != 0.5 and m.threshold == "youden"
    with pytest.warns(PrivacyWarning, match="do_scale"):
        m = dplr("I(Species == 'setosa') ~ .", iris01, do_scale=True, random_state=0,
                 compat="PrivateLR")
    assert m.scaled and 0 < m.scale_factor < 1


# ---- verbose ------------------------------------------------------------------------------

def test_verbose_messages(iris01, capsys):
    _quiet("Species ~ .", iris01, random_state=0, verbose=0)
    assert capsys.readouterr().out == ""
    _quiet("Species ~ .", iris01, random_state=0, verbose=1)
    out = capsys.readouterr().out
    # the one default rule: penalty eps/10 for the bound B = sqrt(2); 7 significant digits as R
    assert "dplr: set lambda to: 0.06501389" in out
    assert "dplr: privacy penalty due to regularizer: 0.1" in out
    assert "dplr: privacy penalty due to regularizer:" in out and "dplr: alpha - penalty:" in out
    assert "dplr: design" not in out
    _quiet("Species ~ .", iris01, random_state=0, verbose=2, rp_dim=2)
    out = capsys.readouterr().out
    assert "dplr: design 150 x 5" in out and "dplr: randomly projecting onto 2 dimensions." in out
    assert "norm bound B" in out


# ---- random projection ----------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:dplr. the response .Species. has 3 classes:UserWarning")
def test_random_projection(iris01):
    m = _quiet("Species ~ .", iris01, rp_dim=2, random_state=5)
    assert m.did_rp and m.rp_dim == 2 and m.rp_p.shape == (4, 2) and m.d == 3
    assert list(m.coefficients.index) == ["(Intercept)", "dim.1", "dim.2"]
    vals = np.unique(np.round(m.rp_p * np.sqrt(2), 12))
    assert set(vals) <= set(np.round([-np.sqrt(3), 0, np.sqrt(3)], 12))
    # projected (and clipped) training rows lie in the data_norm ball
    X, _ = m.spec.transform(iris01)
    assert np.sqrt((X[:, 1:] ** 2).sum(axis=1)).max() <= 1 + 1e-12
    # one generator: same seed, same matrix and coefficients
    m2 = _quiet("Species ~ .", iris01, rp_dim=2, random_state=5)
    np.testing.assert_array_equal(m.rp_p, m2.rp_p)
    np.testing.assert_array_equal(m.coefficients, m2.coefficients)
    # negative rp_dim: round(2 log n); too large: warning, no projection
    big = pd.DataFrame(np.random.default_rng(0).uniform(-0.05, 0.05, size=(150, 12)))
    big.columns = [f"v{i}" for i in range(12)]
    big["y"] = np.arange(150) % 2
    m = _quiet(big, rp_dim=-1, random_state=0)
    assert m.rp_dim == 10 and m.rp_p.shape == (12, 10)
    with pytest.warns(UserWarning, match="not projecting"):
        m = dplr("Species ~ .", iris01, rp_dim=4, random_state=0)
    assert not m.did_rp


# ---- predict -------------------------------------------------------------------------------

def test_predict_probabilities_and_labels(iris01):
    m = _quiet("Species ~ .", iris01, eps=0)
    p = predict(m, iris01)
    assert p.shape == (150,) and np.all((p > 0) & (p < 1))
    np.testing.assert_array_equal(m.pred(iris01), p)
    np.testing.assert_array_equal(m.predict(iris01), p)
    labels = m.predict(iris01, type="class")
    assert set(labels) == {"setosa", "not setosa"}
    assert (labels == np.where(p > 0.5, "not setosa", "setosa")).all()
    m2 = _quiet("I(Species != 'setosa') ~ .", iris01, eps=0)
    assert list(m2.predict(iris01, type="class").cat.categories) == [False, True]
    two = iris01[iris01.Species != "setosa"].copy()
    two["Species"] = two["Species"].cat.remove_unused_categories()
    m3 = _quiet("Species ~ .", two, eps=0)
    assert set(m3.predict(two, type="class")) <= {"versicolor", "virginica"}


def test_predict_one_row_unseen_levels_missing_columns(mtcars):
    m = _quiet("am ~ mpg + factor(cyl)", mtcars, eps=0)
    full = m.predict(mtcars)
    one = m.predict(mtcars.iloc[[5]])
    assert one.shape == (1,) and one.index[0] == mtcars.index[5]
    assert one.iloc[0] == pytest.approx(full.iloc[5], rel=1e-12)
    assert m.predict(mtcars.iloc[5])[0] == pytest.approx(full.iloc[5], rel=1e-12)  # a Series row
    bad = mtcars.iloc[[0]].copy()
    bad["cyl"] = 5
    with pytest.raises(ValueError, match=r"factor\(cyl\).*\['5'\]"):
        m.predict(bad)
    with pytest.raises(ValueError, match=r"\['mpg'\]"):
        m.predict(mtcars.drop(columns="mpg"))
    with pytest.raises(TypeError, match="DPLR"):
        predict("not a model", mtcars)


def test_do_scale_predictions_whole_equals_single_rows(mtcars):
    m = _quiet("am ~ mpg + hp + wt", mtcars, do_scale=True, random_state=0, compat="PrivateLR")
    whole = m.predict(mtcars)
    singles = np.array([m.predict(mtcars.iloc[[i]]).iloc[0] for i in range(len(mtcars))])
    np.testing.assert_allclose(singles, whole, rtol=1e-12)
    # the stored scaling is the training one: training rows are inside the unit ball
    X, _ = m.spec.transform(mtcars)
    assert np.sqrt((X[:, 1:] ** 2).sum(axis=1)).max() == pytest.approx(1.0)


def test_spec_json_roundtrip_predicts_identically(iris01):
    m = _quiet("Species ~ log(Sepal.Length) + Petal.Width * Species", iris01, rp_dim=2,
               random_state=3, clip=True)
    spec = DesignSpec.from_dict(json.loads(json.dumps(m.spec.to_dict())))
    X, _ = spec.transform(iris01)
    X0, _ = m.spec.transform(iris01)
    np.testing.assert_array_equal(X, X0)


# ---- summary / print -------------------------------------------------------------------------

def test_summary_layout(iris01):
    m = _quiet("Species ~ .", iris01, random_state=0, rp_dim=2)
    text = str(summary(m))
    lines = text.split("\n")
    assert lines[0] == "Species ~ Sepal.Length + Sepal.Width + Petal.Length + Petal.Width "
    assert lines[1] == ""
    assert lines[2] == " Privacy level: 1 "
    assert lines[3] == " Regularization parameter: 0.0650138883102196 "
    assert lines[4] == " Convergence of optimization : TRUE "
    assert lines[5].startswith(" C-index (AUC): ")
    assert lines[6] == " Status: ok "
    assert lines[7] == " Number of dimensions in random projection: 2 "
    assert lines[9].split() == ["(Intercept)", "dim.1", "dim.2"]
    assert [float(v) for v in lines[10].split()] == pytest.approx(m.coefficients.to_numpy(),
                                                                  rel=1e-6)
    assert "only the coefficients are eps-differentially private" in text
    assert repr(m) == text and str(m) == text and str(m.summary()) == text
    assert summary(m)._repr_html_().startswith("<pre>")


def test_summary_wraps_like_r(mtcars):
    m = _quiet("am ~ mpg + cyl + disp + hp + drat + wt + qsec + vs + gear + carb", mtcars, eps=0)
    head, *body = str(summary(m)).split("\n\n")
    assert head == " NOT PRIVATE: a non-private fit (eps = 0); no privacy guarantee.\n"[:-1]
    block = body[2].split("\n")
    assert all(len(line) <= 80 for line in block)
    assert len(block) == 4                                     # 11 names wrap onto two rows


def test_summary_name_stays_the_function(iris01):
    import importlib

    import privatelr

    # no module is named like the function it exports: importing every submodule leaves the
    # package's public names bound to the functions
    for name in ("privatelr.report", "privatelr.report.text", "privatelr.design"):
        importlib.import_module(name)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("privatelr.summary")
    m = _quiet("Species ~ .", iris01, eps=0)
    assert callable(privatelr.summary) and privatelr.summary(m).common["status"] == " Status: ok"
    with pytest.raises(TypeError, match="DPLR"):
        summary(42)


def test_label_vector_kinds_and_factor_covariates():
    rng = np.random.default_rng(4)
    n = 60
    X = pd.DataFrame({"u": rng.uniform(-0.4, 0.4, n),
                      "grp": pd.Categorical(rng.choice(["lo", "mid", "hi"], n),
                                            categories=["lo", "mid", "hi"])})
    words = np.where(X["u"] > 0, "yes", "no")
    m = _quiet(words, X, eps=0)
    assert list(m.coefficients.index) == ["(Intercept)", "u", "grpmid", "grphi"]
    assert m.classes == ["no", "yes"]
    assert (m.predict(X, type="class") == np.where(m.predict(X) > 0.5, "yes", "no")).all()
    cat = pd.Categorical(words, categories=["yes", "no"])      # R: first level is coded 0
    m2 = _quiet(cat, X, eps=0)
    assert m2.classes == ["yes", "no"]
    np.testing.assert_allclose(m2.coefficients.to_numpy(), -m.coefficients.to_numpy(), rtol=1e-8)
    # numpy covariates: predict takes an array with the same columns
    arr = X[["u"]].to_numpy()
    m3 = _quiet(list(words == "yes"), arr, eps=0)
    assert list(m3.coefficients.index) == ["(Intercept)", "X1"]
    assert m3.predict(arr[:2]).shape == (2,)


def test_call_records_the_public_declarations():
    """The call says how the model was made: bounds, levels, inference, weights and the
    accountant are recorded (all public declarations or the caller's objects by kind), the seed
    only as given (the CLI's model files and saved models carry this text)."""
    import privatelr as pl
    from privatelr.datasets import HEALTH_LEVELS, HEALTH_RANGES, make_health

    d = make_health(3000, random_state=1)
    d["w"] = 1.0
    b = pl.public_bounds(HEALTH_RANGES, levels=HEALTH_LEVELS)
    m = pl.dplr("y ~ age + smoker", d, bounds=b, eps=1, inference=True, weights="w",
                weights_bound=1.0, levels={"smoker": ["no", "yes"]},
                accountant=pl.PrivacyAccountant(2), random_state=123456789012)
    call = m.call
    for part in ("bounds=PublicBounds(ranges={'age': (18.0, 90.0)", "inference=True",
                 "weights='w'", "weights_bound=1.0", "levels={'smoker': ['no', 'yes']}",
                 "accountant=<PrivacyAccountant>", "random_state=<given>"):
        assert part in call, (part, call)
    assert "123456789012" not in call
    import numpy as np
    m2 = pl.dplr("y ~ age", d, bounds=b, eps=1, weights=np.ones(len(d)), weights_bound=1.0,
                 random_state=1)
    assert f"weights=<ndarray {len(d)}>" in m2.call
