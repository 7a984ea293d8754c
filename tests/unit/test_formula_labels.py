"""One labelling rule for numbers (R's ``as.character`` of a double, 15 significant digits):
levels learned from data, levels declared in ``levels=``, in ``factor(x, levels = c(...))`` and as
a Categorical's categories, and the design column names built from them, all label a number the
same way, so that no declared level silently misses its rows (issue 27: ``100000`` was
``"100000"`` one way and ``"1e+05"`` the other)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import dplr
from privatelr.design import build_design, make_spec, r_number
from privatelr.design.values import Vec, level_label

PRIVATE = dict(eps=1.0, data_norm=3.0, clip=True, random_state=0)


@pytest.fixture()
def frame():
    return pd.DataFrame({"a": np.linspace(-0.4, 0.4, 10), "x": [1, 100000] * 5,
                         "y": [0, 1, 1, 0, 1, 0, 0, 1, 1, 0]})


def _fit(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)     # a dropped row would warn
        return dplr(*args, **kwargs)


@pytest.mark.parametrize("kwargs", [dict(eps=0), PRIVATE], ids=["eps0", "private"])
def test_declared_numeric_levels_keep_every_row(frame, kwargs):
    m = _fit("y ~ a + factor(x, levels = c(1, 100000))", frame, **kwargs)
    assert m.n == 10
    assert list(m.coefficients.index) == ["(Intercept)", "a",
                                          "factor(x, levels = c(1, 1e+05))1e+05"]


@pytest.mark.parametrize("levels", [[1, 100000], [1.0, 1e5], [np.int64(1), np.int64(100000)],
                                    ["1", "1e+05"]])
def test_levels_argument_with_large_integers(frame, levels):
    m = _fit("y ~ a + factor(x)", frame, levels={"x": levels}, **PRIVATE)
    assert m.n == 10 and m.coefficients.index[-1] == "factor(x)1e+05"


def test_the_same_labels_from_data_declarations_and_categories():
    values = [-3, 0.1, 1, 2, 99999, 100000, 123456, 1e15, 2.5e-7, 1 / 3]
    want = [r_number(float(v)) for v in sorted(values)]
    df = pd.DataFrame({"x": values, "y": [0, 1] * 5})
    learned = build_design("y ~ factor(x)", df).spec.atoms[0]["levels"]
    declared = build_design("y ~ factor(x)", df, levels={"x": sorted(values)},
                            learn=False).spec.atoms[0]["levels"]
    cat = df.assign(x=pd.Categorical(values, categories=sorted(values)))
    categories = build_design("y ~ x", cat, learn=False).spec.atoms[0]["levels"]
    assert learned == declared == categories == want
    assert want[6:] == ["99999", "1e+05", "123456", "1e+15"]
    assert [level_label(v) for v in (100000, np.int64(100000), 1e5, True)] == \
        ["1e+05", "1e+05", "1e+05", "TRUE"]


def test_numbers_written_as_text_that_r_labels_otherwise_are_refused(frame):
    with pytest.raises(ValueError, match=r"levels\['x'\]: the level '100000' never equals .*"
                                         r"R labels the number '1e\+05'"):
        build_design("y ~ factor(x)", frame, levels={"x": ["1", "100000"]}, learn=False)
    # R would make the 1e5 rows NA without a word; here the formula says why
    with pytest.raises(ValueError, match=r"the level '100000' never equals a value of the "
                                         r"numeric variable x"):
        build_design('y ~ factor(x, levels = c("1", "100000"))', frame)
    # text levels of a text column are text
    df = frame.assign(x=frame["x"].astype(str))
    d = build_design("y ~ factor(x)", df, levels={"x": ["1", "100000"]}, learn=False)
    assert d.spec.design_columns[-1] == "factor(x)100000" and d.X.shape[0] == 10


def test_a_string_column_is_missing_exactly_where_pandas_says_and_codes_by_its_levels():
    # a character column is read with one pd.factorize (its missing values and its codes);
    # every NA kind pandas knows is missing, and a declared factor gets the same codes as
    # from the labels
    import pandas as pd

    from privatelr.design.terms import match_levels
    from privatelr.design.values import from_column

    raw = ["b", None, "a", float("nan"), pd.NA, "c", "a", None]
    v = from_column(pd.Series(raw, dtype=object), "s")
    assert v.kind == "chr"
    assert [x is None for x in v.data] == pd.isna(pd.Series(raw, dtype=object)).tolist()
    coded = match_levels(v, ("a", "b", "c"), "s", strict=True)
    assert coded.data.tolist() == [1, -1, 0, -1, -1, 2, 0, -1]
    plain = match_levels(type(v)("chr", v.data), ("a", "b", "c"), "s", strict=True)
    assert plain.data.tolist() == coded.data.tolist()
    with pytest.raises(ValueError, match="outside its levels"):
        match_levels(v, ("a", "b"), "s", strict=True)
    # not strict: a value outside the levels is NA (R's factor(x, levels = ...)), as missing
    assert match_levels(v, ("c", "a"), "s", strict=False).data.tolist() == \
        [-1, -1, 1, -1, -1, 0, 1, -1]
    # a factor recoded to other levels: by label, its missing codes staying missing
    f = type(v)("fct", np.array([2, -1, 0, 1, 0]), ("x", "y", "z"))
    assert match_levels(f, ("z", "x", "y"), "f", strict=True).data.tolist() == [0, -1, 1, 2, 1]
    assert match_levels(f, ("z", "x"), "f", strict=False).data.tolist() == [0, -1, 1, -1, 1]
    with pytest.raises(ValueError, match=r"\['y'\] outside its levels"):
        match_levels(f, ("z", "x"), "f", strict=True)


@pytest.mark.parametrize("raw, kind", [
    (["b", None, "a", float("nan"), "a"], "chr"),
    ([np.str_("a"), "b", pd.NA], "chr"),               # a str subclass is text
    (["1", "2.5", None], "chr"),                         # numbers written as text stay text
    (["a", 1, True], None),                              # 1 and True hash alike: still mixed
    (["a", b"a"], None),
    (["a", 1.5], None),
    (["a", pd.Timestamp("2020-01-01")], None),
    (["a", None, np.float32("nan")], "chr"),             # missing values the inference skips
    (["a", pd.NaT], None),                               # missing to pandas, but a datetime's
    (["a", None, np.datetime64("NaT")], None),
    (["a", pd.Timedelta("NaT")], None),
    (["a", __import__("decimal").Decimal("NaN")], None),
])
def test_a_column_that_starts_with_text_gets_the_kind_the_full_inference_gives(raw, kind):
    # an object column whose first value is a str is coded first and its kind read from the
    # codes' distinct values; the result (kind, values, codes, or the refusal) must be what
    # pandas' inference over every value decides
    from privatelr.design.values import column_type, from_column

    s = pd.Series(raw, dtype=object)
    if kind is None:
        with pytest.raises(ValueError, match="mixes values of different kinds"):
            column_type(s, "x")
        with pytest.raises(ValueError, match="mixes values of different kinds"):
            from_column(s, "x")
        return
    assert column_type(s, "x") == kind
    v = from_column(s, "x")
    assert v.kind == kind
    assert [x is None for x in v.data] == pd.isna(s).tolist()
    assert [x for x in v.data if x is not None] == [x for x in raw if not pd.isna(x)]
    codes, uniques = v.coded
    assert [uniques[c] if c >= 0 else None for c in codes] == v.data.tolist()


def test_a_numeric_response_is_coded_by_its_position_among_the_levels():
    """Each value's code is its position among the response's levels (first level 0), a
    missing value's row is dropped, and a value outside the levels is refused."""
    df = pd.DataFrame({"x": np.arange(8.0), "y": [8, 4, 6, np.nan, 4, 8, 6, 6]})
    spec = make_spec("y ~ x", df, learn=True, why="a test")
    assert spec.response_kind == "numeric" and list(spec.response_levels) == [4, 6, 8]
    rows = spec.rows(df)
    np.testing.assert_array_equal(rows.codes, [2, 0, 1, 0, 2, 1, 1])
    assert rows.codes.dtype == np.float64 and rows.n_dropped == 1
    binary = make_spec("y ~ x", df.assign(y=[1, 0, 0, np.nan, 1, 1, 0, 0]), learn=True,
                       why="a test")
    np.testing.assert_array_equal(binary.rows(df.assign(y=[1, 0, 0, np.nan, 1, 1, 0, 0])).y,
                                  [1, 0, 0, 1, 1, 0, 0])
    with pytest.raises(ValueError, match="outside"):
        spec.rows(df.assign(y=[8, 4, 5, 4, 4, 8, 6, 6]))


@pytest.mark.parametrize("vec", [
    Vec("num", np.array([1.0, np.inf, -np.inf])), Vec("num", np.array([1.0, np.nan, np.inf])),
    Vec("num", np.array([np.inf, -np.inf, np.nan])), Vec("num", np.array([], dtype=float)),
    Vec("num", np.array(2.0)), Vec("num", np.array([np.nan])), Vec("lgl", np.array([1.0, 0.0])),
    Vec("lgl", np.array([np.nan, 1.0])), Vec("fct", np.array([0, 2, 1]), ("a", "b", "c")),
    Vec("fct", np.array([0, -1, 1]), ("a", "b")), Vec("fct", np.array([], dtype=int), ("a",)),
    Vec("chr", np.array(["a", None], dtype=object)), Vec("chr", np.array(["a"], dtype=object))],
    ids=lambda v: f"{v.kind}-{v.data.tolist()}")
def test_any_missing_is_the_mask_reduced(vec):
    """``Vec.any_missing`` (a minimum for numbers and factor codes, no mask) says what the
    mask says: infinities are values, NaN and negative codes are missing."""
    assert vec.any_missing() == bool(np.any(vec.missing()))


@pytest.mark.parametrize("threads", ["1", "2"])
def test_rows_with_a_missing_value_are_dropped_whatever_the_threads(monkeypatch, threads):
    """Long columns are checked for missing values on the pool (one reduction each): the
    complete rows are those without NaN in any model variable, offset and factor included, for
    one thread and two (110,000 rows x 22 variables, above the pool's 16 MiB)."""
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", threads)
    rng = np.random.default_rng(8)
    n = 110_000
    df = pd.DataFrame(rng.uniform(-0.2, 0.2, size=(n, 20)), columns=[f"x{j}" for j in range(20)])
    df["g"] = pd.Categorical(rng.choice(["a", "b", "c"], n))
    df["o"] = rng.normal(size=n)
    df["y"] = rng.integers(0, 2, n)
    df.loc[[5, 70_000], "x3"] = np.nan
    df.loc[[9], "x19"] = np.nan
    df.loc[[11, 5], "g"] = np.nan
    df.loc[[100_000], "o"] = np.nan
    spec = make_spec("y ~ . - o + offset(o)", df)
    rows = spec.rows(df, raw=True)
    assert np.flatnonzero(~rows.complete).tolist() == [5, 9, 11, 70_000, 100_000]
    assert rows.n_dropped == 5 and rows.X.shape == (n - 5, 23)
    assert np.array_equal(rows.offset, df["o"].to_numpy()[rows.complete])


@pytest.mark.parametrize("dtype", ["str", "string[python]", "string[pyarrow]", "arrow"])
def test_a_pandas_string_column_reads_as_its_object_column(dtype):
    """A pandas string array (pandas 3's default "str", "string", an Arrow string) is coded by
    the array and its values taken from the distinct ones: the same vector, codes and levels
    as the same column of Python objects, missing values None, and the same fit."""
    import pyarrow as pa                     # a test extra (pandas' Arrow strings)

    from privatelr.design.values import from_column

    raw = ["b", None, "a", float("nan"), "c", "a", None, "é"]
    want = from_column(pd.Series(raw, dtype=object), "s")
    dt = pd.ArrowDtype(pa.string()) if dtype == "arrow" else dtype
    got = from_column(pd.Series(raw, dtype=dt), "s")
    assert got.kind == want.kind == "chr"
    assert got.data.tolist() == want.data.tolist() == ["b", None, "a", None, "c", "a", None, "é"]
    assert got.coded[0].tolist() == want.coded[0].tolist()
    assert list(got.coded[1]) == list(want.coded[1]) == ["b", "a", "c", "é"]
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.normal(size=300) / 3,
                       "g": rng.choice(["u", "v", "w"], 300).astype(object)})
    df["y"] = (rng.uniform(size=300) < 0.5).astype(int)
    fits = [dplr("y ~ x + g", frame, eps=1.0, data_norm=1.5, random_state=0,
                 levels={"g": ["u", "v", "w"]}).coef
            for frame in (df, df.assign(g=df["g"].astype(dt)))]
    np.testing.assert_array_equal(fits[0], fits[1])
