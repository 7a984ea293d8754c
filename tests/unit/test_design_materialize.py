"""The two ways the design is built from the atoms (privatelr.design.materialize) agree value
for value: the dense design, filled block by block of rows, and the sparse one, which computes a
column with a factor part only on the rows of that level.

They are compared on formulas that exercise every kind of column part: numeric atoms, factors
in treatment and all-levels coding (R's ``y ~ f:g``, ``x %in% f``, no intercept), logical atoms,
interactions of factors with factors and with numbers, ``poly()`` matrix atoms, ``cut()``, and
rows dropped for missing values. Equality is exact (the same products in the same order). The
columns themselves are R's: tests/parity/test_r_formula_semantics.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from privatelr.datasets import load_iris, load_mtcars
from privatelr.design import make_spec


def _synthetic():
    rng = np.random.default_rng(1)
    n = 500
    df = pd.DataFrame({"x": rng.normal(size=n), "z": rng.uniform(-2, 2, n),
                       "f1": pd.Categorical(rng.choice(list("abc"), n), categories=list("abc")),
                       "f2": rng.choice(["u", "v", "w", "t"], n),
                       "b": rng.uniform(size=n) < 0.3})
    df["y"] = (rng.uniform(size=n) < 0.5).astype(int)
    df.loc[[3, 17, 99], "x"] = np.nan
    df.loc[[5, 17], "f2"] = None
    return df


CASES = [
    (load_mtcars, "am ~ mpg * factor(cyl) + poly(wt, 2) + I(hp > 100):factor(gear)"),
    (load_mtcars, "am ~ 0 + factor(cyl) + factor(gear):wt"),
    (load_mtcars, "am ~ factor(cyl):factor(gear) - 1"),
    (load_mtcars, "am ~ cut(hp, breaks = c(0, 100, 200, 400)) + poly(disp, 3, raw = TRUE)"),
    (load_mtcars, "am ~ log(disp) + I(mpg^2) + I(qsec > 18) * wt"),
    (load_iris, "Species ~ .^2"),
    (_synthetic, "y ~ f1 * f2 + x"),
    (_synthetic, "y ~ 0 + f1:x + f2 + b + z:b"),
    (_synthetic, "y ~ (x + z + f1)^2"),
    (_synthetic, "y ~ f1:f2 + x %in% f1 + poly(z, 2):f2"),
    (_synthetic, "y ~ 0 + x:f1 + f2:b"),
]


@pytest.mark.parametrize("load, formula", CASES, ids=[c[1] for c in CASES])
def test_dense_and_sparse_designs_agree(load, formula):
    df = load()
    spec = make_spec(formula, df, learn=True, why="a test")
    dense = spec.rows(df)
    assert isinstance(dense.X, np.ndarray) and dense.X.flags.c_contiguous
    assert dense.X.dtype == np.float64 and dense.X.shape[1] == len(spec.formulaic_columns)
    sparse = dataclasses.replace(spec, sparse=True).rows(df)
    assert sp.issparse(sparse.X)
    np.testing.assert_array_equal(dense.complete, sparse.complete)
    np.testing.assert_array_equal(dense.X, sparse.X.toarray())
    # and on a handful of new rows (the scoring path)
    head = df.head(7)
    np.testing.assert_array_equal(spec.rows(head, response=False).X,
                                  dataclasses.replace(spec, sparse=True)
                                  .rows(head, response=False).X.toarray())


def test_empty_and_single_row_designs():
    df = load_mtcars()
    spec = make_spec("am ~ mpg + factor(cyl)", df, learn=True, why="a test")
    one = spec.rows(df.head(1), response=False)
    assert one.X.shape == (1, 4)
    none = spec.rows(df.head(1).assign(mpg=np.nan), response=False)
    assert none.X.shape == (0, 4) and none.n_dropped == 1


def test_a_design_large_enough_for_threads_gives_the_same_values(monkeypatch):
    rng = np.random.default_rng(4)
    n = 60_000                                     # 60,000 x 40 doubles: above the 16 MB mark
    df = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(6)})
    df["f"] = pd.Categorical(rng.choice([f"l{k}" for k in range(30)], n),
                             categories=[f"l{k}" for k in range(30)])
    df.loc[7, "x0"] = np.inf                       # inf * 0 in an interaction: NaN, silently
    df["y"] = rng.integers(0, 2, n)
    spec = make_spec("y ~ . + x0:x1", df, learn=True, why="a test")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        threaded = spec.rows(df).X
        monkeypatch.setenv("PRIVATELR_NUM_THREADS", "1")
        single = spec.rows(df).X
    assert threaded.nbytes >= 16 * 2**20
    np.testing.assert_array_equal(threaded, single)
    np.testing.assert_array_equal(threaded, dataclasses.replace(spec, sparse=True)
                                  .rows(df).X.toarray())


@pytest.mark.parametrize("formula", ["y ~ .", "y ~ x3 + x2 + x1 + x0", "y ~ x0 + x2 + x3 + f",
                                     "y ~ x1 + x1:x2 + x2 + x3", "y ~ 0 + x2 + x3 + f + x0"])
def test_numeric_columns_read_from_one_block_give_the_columns_values(formula):
    """A frame built from one 2-D array holds its float columns as the rows of one block: the
    dense fill copies runs of them at once (a transposed copy). Forward, reversed, unevenly
    spaced and interrupted runs, with and without missing rows, give every column's own
    values (and the sparse path's)."""
    rng = np.random.default_rng(7)
    n = 20_000                                     # several of the fill's blocks of rows
    df = pd.DataFrame(rng.normal(size=(n, 4)), columns=[f"x{j}" for j in range(4)])
    df["f"] = pd.Categorical(rng.choice(list("abc"), n), categories=list("abc"))
    df["y"] = rng.integers(0, 2, n)
    for frame in (df, df.assign(x2=df["x2"].where(rng.uniform(size=n) > 0.01))):
        spec = make_spec(formula, frame, learn=True, why="a test")
        rows = spec.rows(frame)
        kept = frame[rows.complete]
        numeric = [j for j, name in enumerate(spec.design_columns) if name in frame.columns]
        assert len(numeric) >= 3
        for j in numeric:
            np.testing.assert_array_equal(rows.X[:, j],
                                          kept[spec.design_columns[j]].to_numpy())
        np.testing.assert_array_equal(
            rows.X, dataclasses.replace(spec, sparse=True).rows(frame).X.toarray())


def test_only_rows_of_one_array_are_read_as_one():
    """The stacked view is made only from vectors that are rows of one array (the same memory
    root, inside its bytes): never from separate allocations, whatever their spacing."""
    from privatelr.design.materialize import _rows_of_one_array

    block = np.arange(40.0).reshape(4, 10)
    view = _rows_of_one_array([block[0], block[1], block[2]])
    np.testing.assert_array_equal(view, block[:3])
    np.testing.assert_array_equal(_rows_of_one_array([block[3], block[1]]), block[[3, 1]])
    np.testing.assert_array_equal(_rows_of_one_array([block[1, 2:7], block[2, 2:7]]),
                                  block[1:3, 2:7])
    assert _rows_of_one_array([block[0], block[1], block[3]]) is None      # uneven spacing
    assert _rows_of_one_array([block[0, :5], block[1, 1:6]]) is not None   # rows 0 and 1 of a
    # strided view of the block's memory (a gap of 11 elements), still inside the block
    a, b = np.arange(10.0), np.arange(10.0)                                # two allocations
    assert _rows_of_one_array([a, b]) is None and _rows_of_one_array([b, a]) is None
    assert _rows_of_one_array([block[0], block[1].copy()]) is None
