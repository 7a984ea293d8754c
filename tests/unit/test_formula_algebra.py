"""R's term algebra and the refusals around it (issue 27): ``%in%`` without a main effect,
``poly()`` as one term, R's coding of factor interactions, the response dropped from the terms,
caps counted on the expanded columns before anything is expanded, one-value terms refused with
R's words, R's ``round``/``signif``, and formula messages where NumPy's used to surface
(``y ~ 1`` now fits an intercept-only model, as ``glm`` does)."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import dplr
from privatelr.design import DesignSpec, build_design, make_spec, parse
from privatelr.design.algebra import MAX_COLUMNS, MAX_PRODUCTS, MAX_TERMS
from privatelr.persist import loads

PRIVATE = dict(eps=1.0, data_norm=4.0, clip=True, random_state=0)


@pytest.fixture()
def df():
    rng = np.random.default_rng(3)
    n = 24
    return pd.DataFrame({"a": rng.uniform(-0.5, 0.5, n), "b": rng.uniform(0.1, 1.0, n),
                         "c": rng.uniform(-1, 1, n),
                         "g": pd.Categorical(list("uvw") * 8, categories=list("uvw")),
                         "h": pd.Categorical(list("pq") * 12, categories=list("pq")),
                         "y": [0, 1, 1, 0] * 6})


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kwargs)


# ---- term algebra ---------------------------------------------------------------------------

def test_in_adds_no_main_effect_and_a_private_fit_takes_it(df):
    d = build_design("y ~ a %in% g", df)
    assert d.spec.design_columns == ["(Intercept)", "a:gu", "a:gv", "a:gw"]
    np.testing.assert_array_equal(d.X[:, 1], df["a"] * (df["g"] == "u"))
    m = _quiet(dplr, "y ~ b + a %in% g", df, **PRIVATE)
    assert list(m.coefficients.index) == ["(Intercept)", "b", "a:gu", "a:gv", "a:gw"]


def test_poly_is_one_term(df):
    cols = build_design("y ~ (poly(b, 2) + a)^2", df).spec.design_columns
    assert cols == ["(Intercept)", "poly(b, 2)1", "poly(b, 2)2", "a", "poly(b, 2)1:a",
                    "poly(b, 2)2:a"]
    assert build_design("y ~ poly(b, 2):poly(b, 2)", df).spec.design_columns == \
        ["(Intercept)", "poly(b, 2)1", "poly(b, 2)2"]
    raw = build_design("y ~ poly(b, 2, raw = TRUE)*a", df, learn=False)
    np.testing.assert_allclose(raw.X[:, 4], df["b"] * df["a"])


def test_factor_interactions_are_coded_as_r(df):
    # a factor's margin absent: all its levels (rank-deficient with the intercept, as in R)
    assert build_design("y ~ g:h", df).spec.design_columns == [
        "(Intercept)", "gu:hp", "gv:hp", "gw:hp", "gu:hq", "gv:hq", "gw:hq"]
    assert build_design("y ~ g + h + g:h - g", df).spec.design_columns == [
        "(Intercept)", "hq", "gv:hp", "gw:hp", "gv:hq", "gw:hq"]
    assert build_design("y ~ 0 + a:g + h", df).spec.design_columns == [
        "hp", "hq", "a:gu", "a:gv", "a:gw"]


def test_the_response_on_the_right_is_dropped(df):
    with pytest.warns(UserWarning, match="response y appeared on the right-hand side"):
        d = build_design("y ~ y + a + y:b", df)
    assert d.spec.design_columns == ["(Intercept)", "a"]
    back = DesignSpec.from_dict(d.spec.to_dict())          # and again when loaded, silently
    assert back == d.spec


def test_sparse_and_dense_designs_agree_on_r_codings(df):
    import dataclasses

    df = df.copy()
    df.loc[3, "a"] = np.inf                       # inf * 0: NaN in the dense design, and here
    spec = make_spec("y ~ a:g + g:h + poly(b, 2):h + c", df, learn=True)
    dense = spec.rows(df).X
    sparse = dataclasses.replace(spec, sparse=True).rows(df).X
    np.testing.assert_array_equal(sparse.toarray(), dense)


# ---- caps on the expanded columns -----------------------------------------------------------

def test_caps_count_the_columns_each_atom_makes(df):
    # (issue 27) this hung: the cap counted atoms while the expansion saw 60 columns
    spec = make_spec("y ~ (poly(a, 20, raw = TRUE) + poly(b, 20, raw = TRUE) + "
                     "poly(c, 20, raw = TRUE))^3", df)
    assert len(spec.design_columns) == 1 + 3 * 20 + 3 * 20 ** 2 + 20 ** 3
    five = " + ".join(f"poly({v}, 20, raw = TRUE)" for v in ("a", "b", "c", "a + b", "a - b"))
    with pytest.raises(ValueError, match=f"more than {MAX_COLUMNS:,} columns"):
        make_spec(f"y ~ ({five})^5".replace("(a + b,", "(I(a + b),")
                  .replace("(a - b,", "(I(a - b),"), df)
    # factor levels count too: 1000 x 1001 cells
    wide = pd.DataFrame({"f": pd.Categorical([], categories=[f"l{i}" for i in range(1000)]),
                         "e": pd.Categorical([], categories=[f"m{i}" for i in range(1001)]),
                         "y": pd.Series([], dtype=bool)})
    with pytest.raises(ValueError, match=f"more than {MAX_COLUMNS:,} columns"):
        make_spec("y ~ f:e", wide)


@pytest.mark.heavy
def test_term_and_product_caps(df):
    names = [f"x{i}" for i in range(20)]
    wide = pd.DataFrame({n: np.zeros(0) for n in names + ["y"]})
    with pytest.raises(ValueError, match=f"more than ({MAX_TERMS:,} terms|{MAX_PRODUCTS:,})"):
        make_spec(f"y ~ ({' + '.join(names)})^20", wide)
    with pytest.raises(ValueError, match=f"more than {MAX_TERMS:,} terms"):
        make_spec("y ~ " + "*".join(names), wide)


def test_a_loaded_spec_meets_the_same_caps(df, monkeypatch):
    import privatelr.design.algebra as algebra

    spec = make_spec("y ~ (poly(a, 20, raw = TRUE) + poly(b, 20, raw = TRUE) + "
                     "poly(c, 20, raw = TRUE))^3", df)
    assert DesignSpec.from_dict(spec.to_dict()) == spec
    monkeypatch.setattr(algebra, "MAX_COLUMNS", 5000)   # counted before a name is made
    with pytest.raises(ValueError, match="more than 5,000 columns"):
        DesignSpec.from_dict(spec.to_dict())


# ---- one-value terms ------------------------------------------------------------------------

@pytest.mark.parametrize("formula, term", [
    ("y ~ I(1) + a", "I(1)"), ("y ~ T + a", "T"), ("y ~ a + pi", "pi"),
    ("y ~ I(round(-2.5)) + b", "I(round(-2.5))"), ("y ~ I(-2^2) + b", "I(-2^2)"),
    ("y ~ a + log(2)", "log(2)"), ("y ~ a + offset(1)", "offset(1)"), ("I(1) ~ a", "I(1)"),
    ("y ~ a + I(c())", "I(c())"), ("y ~ a + I(c(1, 2))", "I(c(1, 2))"),
])
def test_one_value_terms_are_refused_with_rs_words(df, formula, term):
    with pytest.raises(ValueError, match=re.escape(f"variable lengths differ (found for "
                                                   f"'{term}')")):
        build_design(formula, df)


def test_a_column_named_like_a_constant_is_data(df):
    d = build_design("y ~ T + pi", df.assign(T=df["a"], pi=df["b"]))
    assert d.spec.design_columns == ["(Intercept)", "T", "pi"]


def test_empty_c_inside_an_expression(df):
    with pytest.raises(ValueError, match=r"c\(\) has no values"):
        build_design("y ~ I(a %in% c())", df)


# ---- R's round and signif -------------------------------------------------------------------

def test_round_and_signif_are_rs():
    df = pd.DataFrame({"v": [0.15, 0.25, 0.35, 0.45, 0.65, -1.25, 0.05, 2.5, -2.5, 123456.0],
                       "y": [0, 1] * 5})
    d = build_design("y ~ I(round(v, 1)) + round(v) + I(signif(v, 2)) + signif(v)", df)
    np.testing.assert_array_equal(d.X[:, 1], [0.1, 0.2, 0.3, 0.4, 0.7, -1.2, 0.0, 2.5, -2.5,
                                              123456.0])
    np.testing.assert_array_equal(d.X[:, 2], [0, 0, 0, 0, 1, -1, 0, 2, -2, 123456])
    np.testing.assert_array_equal(d.X[:, 3], [0.15, 0.25, 0.35, 0.45, 0.65, -1.2, 0.05, 2.5,
                                              -2.5, 120000])
    np.testing.assert_array_equal(d.X[:, 4], df["v"])             # signif's 6 digits


# ---- formula messages, not NumPy's ------------------------------------------------------------

def test_an_intercept_only_model_fits_as_glm(df):
    m = dplr("y ~ 1", df, eps=0, lambda_=0)
    p = df["y"].mean()
    assert list(m.coefficients.index) == ["(Intercept)"]
    assert m.coefficients.iloc[0] == pytest.approx(math.log(p / (1 - p)), abs=1e-8)
    private = _quiet(dplr, "y ~ 1", df, **PRIVATE)
    assert np.ptp(private.predict(df).to_numpy()) == 0.0
    back = loads(private.to_json())
    np.testing.assert_array_equal(back.predict(df), private.predict(df))
    assert "(Intercept)" in str(private)


@pytest.mark.parametrize("text", ['y ~ a + I(s == "\ud800")', "y ~ a\udfff + b",
                                  'y ~ a + I(s == "\\ud800")', 'y ~ a + I(s == "\\uDC00")'])
def test_lone_surrogates_are_refused_when_parsed(df, text):
    with pytest.raises(ValueError, match="lone surrogate"):
        parse(text)
    with pytest.raises(ValueError, match="lone surrogate"):
        dplr(text, df.assign(s="x"), eps=0)


def test_a_column_name_with_a_lone_surrogate_is_refused():
    from privatelr.design.values import column_names

    with pytest.raises(ValueError, match="lone surrogate"):
        column_names(["a", "b\ud800"])


@pytest.mark.parametrize("scale, word", [(1e-100, "vanish"), (1e100, "overflow")])
def test_poly_at_an_extreme_scale_is_a_formula_message(scale, word):
    # was a raw ZeroDivisionError (1e-100) or NaN columns (1e100); R's QR copes with any scale
    df = pd.DataFrame({"v": np.linspace(1.0, 2.0, 12) * scale, "y": [0, 1] * 6})
    with pytest.raises(ValueError, match=f"poly\\(\\): .* {word} at the scale of x.*rescale"):
        build_design("y ~ poly(v, 3)", df)
