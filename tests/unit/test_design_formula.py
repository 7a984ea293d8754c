"""privatelr.design: R formula habits, R column names, NA handling, response recoding, the spec."""

import json

import numpy as np
import pandas as pd
import pytest

from privatelr.datasets import load_iris, load_mtcars
from privatelr.design import DesignSpec, build_design, parse_formula, r_number, rp_suggest, scaled


@pytest.fixture(scope="module")
def iris():
    return load_iris()


@pytest.fixture(scope="module")
def mtcars():
    return load_mtcars()


@pytest.fixture()
def toy():
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "x": rng.normal(size=12),
        "z.1": rng.uniform(1, 2, size=12),
        "f": pd.Categorical(list("abc") * 4, categories=["a", "b", "c"]),
        "g": pd.Categorical(list("XY") * 6, categories=["X", "Y"]),
        "s": ["u", "t"] * 6,
        "b": [True, False, False] * 4,
        "y": [0, 1] * 6,
    })


# Column names R's model.matrix gives for these formulas on `toy` (R's rules: terms ordered by
# degree, treatment contrasts with the first level as reference, full dummy coding of a factor
# whose margin is absent, first factor varying fastest).
R_COLUMNS = {
    "y ~ x": ["(Intercept)", "x"],
    "y ~ x + f": ["(Intercept)", "x", "fb", "fc"],
    "y ~ x * f": ["(Intercept)", "x", "fb", "fc", "x:fb", "x:fc"],
    "y ~ f * g": ["(Intercept)", "fb", "fc", "gY", "fb:gY", "fc:gY"],
    "y ~ f:x": ["(Intercept)", "fa:x", "fb:x", "fc:x"],
    "y ~ x:f": ["(Intercept)", "x:fa", "x:fb", "x:fc"],
    "y ~ 0 + f": ["fa", "fb", "fc"],
    "y ~ x + f - 1": ["x", "fa", "fb", "fc"],
    "y ~ -1 + x": ["x"],
    "y ~ x + 0": ["x"],
    "y ~ f/x": ["(Intercept)", "fb", "fc", "fa:x", "fb:x", "fc:x"],
    "y ~ (x + z.1 + g)^2": ["(Intercept)", "x", "z.1", "gY", "x:z.1", "x:gY", "z.1:gY"],
    "y ~ log(z.1) + I(x^2) + exp(x) + sqrt(z.1)": ["(Intercept)", "log(z.1)", "I(x^2)", "exp(x)",
                                                   "sqrt(z.1)"],
    "y ~ I(x > 0) + s + b": ["(Intercept)", "I(x > 0)TRUE", "su", "bTRUE"],
    "y ~ factor(y) + as.factor(g)": ["(Intercept)", "factor(y)1", "as.factor(g)Y"],
    "y ~ x:z.1 + f": ["(Intercept)", "fb", "fc", "x:z.1"],
    "y ~ `z.1` + x": ["(Intercept)", "z.1", "x"],
}


@pytest.mark.parametrize("formula", list(R_COLUMNS))
def test_r_column_names(toy, formula):
    d = build_design(formula, toy)
    assert d.spec.design_columns == R_COLUMNS[formula]
    assert d.X.shape == (12, len(R_COLUMNS[formula]))


def test_dot_expands_to_all_but_response_in_data_order(iris):
    d = build_design("Species ~ .", iris)
    assert d.spec.design_columns == ["(Intercept)", "Sepal.Length", "Sepal.Width",
                                     "Petal.Length", "Petal.Width"]
    assert d.spec.formula_r == "Species ~ Sepal.Length + Sepal.Width + Petal.Length + Petal.Width"
    # a variable used in the response is excluded from '.' (R: I(Species != 'setosa') ~ .)
    d2 = build_design("I(Species != 'setosa') ~ .", iris)
    assert d2.spec.design_columns == d.spec.design_columns
    assert d2.spec.response == 'I(Species != "setosa")'
    # '.' combined with other terms
    d3 = build_design("Species ~ . - Sepal.Width", iris)
    assert "Sepal.Width" not in d3.spec.design_columns and len(d3.spec.design_columns) == 4


def test_values_of_transformed_columns(toy):
    d = build_design("y ~ log(z.1) + I(x^2) + I(x > 0)", toy)
    np.testing.assert_allclose(d.X[:, 1], np.log(toy["z.1"]))
    np.testing.assert_allclose(d.X[:, 2], toy["x"] ** 2)
    np.testing.assert_array_equal(d.X[:, 3], (toy["x"] > 0).astype(float))


def test_mtcars_factor_numeric(mtcars):
    d = build_design("am ~ mpg + factor(cyl)", mtcars)
    assert d.spec.design_columns == ["(Intercept)", "mpg", "factor(cyl)6", "factor(cyl)8"]
    np.testing.assert_array_equal(d.X[:, 2], (mtcars["cyl"] == 6).astype(float))
    assert d.spec.atoms[1]["levels"] == ["4", "6", "8"]


def test_r_operator_precedence_inside_calls(toy):
    # R: & binds looser than comparisons; ! negates; ^ is a power
    d = build_design("y ~ I(x > 0 & z.1 < 1.5) + I(!b) + I(-x^2)", toy)
    np.testing.assert_array_equal(d.X[:, 1], ((toy.x > 0) & (toy["z.1"] < 1.5)).astype(float))
    np.testing.assert_array_equal(d.X[:, 2], (~toy.b).astype(float))
    np.testing.assert_allclose(d.X[:, 3], -(toy.x ** 2))
    assert d.spec.design_columns[1:] == ["I(x > 0 & z.1 < 1.5)TRUE", "I(!b)TRUE", "I(-x^2)"]


def test_missing_values_dropped(toy):
    df = toy.copy()
    df.loc[[1, 4], "x"] = np.nan
    df.loc[7, "f"] = np.nan
    df["unused"] = np.nan                       # not in the model: no effect
    d = build_design("y ~ x + f", df)
    assert d.n_dropped == 3 and d.X.shape[0] == 9
    assert not d.complete[[1, 4, 7]].any()


def test_response_recoding(toy, iris):
    d = build_design("Species ~ Sepal.Length", iris)
    assert d.y.tolist() == (iris.Species != "setosa").astype(float).tolist()
    assert d.n_classes == 3 and d.spec.labels == ["setosa", "not setosa"]
    d = build_design("b ~ x", toy)
    assert d.y.tolist() == toy.b.astype(float).tolist() and d.spec.labels == [False, True]
    df = toy.assign(v=[3, 5] * 6)
    d = build_design("v ~ x", df)
    assert d.y.tolist() == [0.0, 1.0] * 6 and d.spec.labels == [3, 5]
    d = build_design("s ~ x", toy)             # strings: sorted, first is 0
    assert d.y.tolist() == [1.0, 0.0] * 6 and d.spec.labels == ["t", "u"]


def test_bad_formulas(toy):
    with pytest.raises(ValueError, match="needs a response"):
        build_design("~ x", toy)
    with pytest.raises(ValueError, match="nothere"):
        build_design("y ~ x + nothere", toy)
    with pytest.raises(ValueError, match=r"function bs\(\) is not supported"):
        build_design("y ~ bs(x, 2)", toy)
    with pytest.raises(ValueError, match="cannot read"):
        build_design("y ~ x # z", toy)
    with pytest.raises(TypeError, match="formula"):
        build_design(3, toy)
    with pytest.raises(ValueError, match="0 or 1"):
        build_design("y ~ x + 2", toy)


def test_spec_roundtrip_json_and_rebuild(toy):
    d = build_design("y ~ log(z.1) + x * f + s + b + factor(g)", toy)
    spec2 = DesignSpec.from_dict(json.loads(json.dumps(d.spec.to_dict())))
    assert spec2 == d.spec
    X2, complete = spec2.transform(toy)
    np.testing.assert_array_equal(X2, d.X)
    # one row at a time gives the same rows (levels come from the spec, not the new data)
    for i in (0, 5, 11):
        Xi, _ = spec2.transform(toy.iloc[[i]])
        np.testing.assert_array_equal(Xi[0], d.X[i])
    # new data with strings instead of Categorical and reordered columns work too
    df = toy[::-1].reset_index(drop=True)
    df["f"] = df["f"].astype(str)
    Xr, _ = spec2.transform(df[["s", "b", "g", "f", "x", "z.1"]])
    np.testing.assert_array_equal(Xr, d.X[::-1])


def test_rebuild_errors(toy):
    spec = build_design("y ~ x + f", toy).spec
    bad = toy.copy()
    bad["f"] = bad["f"].astype(str)
    bad.loc[0, "f"] = "zz"
    with pytest.raises(ValueError, match=r"'f'.*\['zz'\]"):
        spec.transform(bad)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['f'\]"):
        spec.transform(toy.drop(columns="f"))


def test_parse_and_numbers():
    assert parse_formula("a ~ b").op == "~"
    assert r_number(0.1 + 0.2) == "0.3" and r_number(1e-5) == "1e-05" and r_number(2.0) == "2"
    assert [rp_suggest(n) for n in (2, 10, 150)] == [1, 5, 10]


def test_scaled_rows_in_unit_ball(mtcars):
    s = scaled("am ~ mpg + hp + wt", mtcars)
    z = s.data[["mpg", "hp", "wt"]].to_numpy()
    norms = np.sqrt((z * z).sum(axis=1))
    assert norms.max() == pytest.approx(1.0) and list(s.data.columns) == ["mpg", "hp", "wt", "am"]
    np.testing.assert_allclose(z.mean(axis=0), 0, atol=1e-12)
