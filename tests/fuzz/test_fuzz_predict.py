"""Fuzz ``predict``: fitted models (non-private, private with declared levels and clipping,
randomly projected) scored on random batches.

Properties (bit for bit: ``np.array_equal`` with NaN positions, labels by value and type):

* one row scored alone (a one-row DataFrame or the row as a Series) gives what
  it gets in the batch; scoring chunks of the batch gives the whole batch's predictions;
* the order of the data frame's columns, extra columns the model does not read and the row
  index do not matter; permuting the rows permutes the predictions;
* probabilities lie in [0, 1] (NaN, with class ``None``, for rows with a missing value);
* same seed, same bits: refitting with the same ``random_state`` gives the same coefficients
  (and projection), also when the training frame's columns come in another order.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .fuzzlib import check_probabilities, clean_call, examples, plain, same, warning_rules
from privatelr import dplr, predict

LEVELS = ["p", "q", "r"]

#: (formula, levels to declare for a private fit)
FORMULAS = [
    ("y ~ a + b", None),
    ("y ~ a * s", {"s": LEVELS}),
    ("y ~ log(a) + f", None),
    ("y ~ I(a > 0) + b:l", None),
    ("y ~ factor(s, levels = c('p', 'q', 'r')) + sqrt(b)", None),
    ("y ~ (a + b + s)^2", {"s": LEVELS}),
    ("y ~ pmin(a, b, na.rm = TRUE) + as.numeric(f) + I(t / 1e7)", None),
    ("y ~ I(a %in% c(0, 0.25)) + s:f - 1", {"s": LEVELS}),
    ("l ~ a + b + f + s", {"s": LEVELS}),
    ("s ~ a + exp(b) + l", {"s": LEVELS}),
    ("y ~ .", {"s": LEVELS}),
]

_CATS = pd.CategoricalDtype(LEVELS)


def training_frame(seed: int, n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-0.5, 0.5, n)
    a[rng.uniform(size=n) < 0.1] = np.nan
    return pd.DataFrame({
        "a": a,
        "b": rng.uniform(-0.5, 0.5, n),
        "s": pd.Series(rng.choice(LEVELS, n), dtype=object),
        "f": pd.Series(rng.choice(LEVELS, n)).astype(_CATS),
        "l": rng.uniform(size=n) < 0.5,
        "t": pd.to_datetime(rng.integers(0, 10, n) * 86400, unit="s"),
        "y": (rng.uniform(size=n) < 0.5).astype(np.int64),
    })


@functools.lru_cache(maxsize=None)
def fitted(k: int, private: bool, rp_dim: int, seed: int):
    """One model per (formula, mode, projection, seed), fitted once for the whole module."""
    formula, levels = FORMULAS[k]
    frame = training_frame(seed)
    kwargs = dict(eps=1.0, levels=levels, clip=True, data_norm=2.0) if private else \
        dict(eps=0)
    model, exc = clean_call(lambda: dplr(formula, frame, rp_dim=rp_dim, random_state=seed,
                                         **kwargs))
    assert exc is None, (formula, private, rp_dim, exc)
    return model


#: about 40 distinct models (each fitted once, ~35 ms): projection on a quarter of them.
#: Keys (formula, private, rp_dim, seed) are what explicit examples name: no fit at import.
MODEL_KEYS = st.tuples(st.integers(0, len(FORMULAS) - 1), st.booleans(),
                       st.sampled_from([0, 0, 0, 2]), st.just(0))
models = MODEL_KEYS.map(lambda key: fitted(*key))

_NUMBERS = st.one_of(
    st.floats(-0.6, 0.6),
    st.sampled_from([0.0, -0.0, 0.25, np.nan, np.inf, -np.inf, 1e300, -1e-320, 5e-324]),
    st.floats(allow_nan=True, allow_infinity=True),
)


@st.composite
def batches(draw, min_rows: int = 1, max_rows: int = 6):
    """New data with the columns of the training frame: numbers with NaN/inf/huge values,
    known levels or missing values, bools (plain or nullable), dates with NaT."""
    n = draw(st.integers(min_rows, max_rows))
    col = functools.partial(st.lists, min_size=n, max_size=n)
    frame = pd.DataFrame({
        "a": np.array(draw(col(_NUMBERS)), dtype=np.float64),
        "b": np.array(draw(col(_NUMBERS)), dtype=np.float64),
        "s": pd.Series(draw(col(st.sampled_from(LEVELS + [None]))),
                       dtype=draw(st.sampled_from([object, "string", "str"]))),
        "f": pd.Series(draw(col(st.sampled_from(LEVELS + [None])))).astype(_CATS),
        "y": np.array(draw(col(st.sampled_from([0, 1]))), dtype=np.int64),
    })
    if draw(st.booleans()):
        frame["l"] = np.array(draw(col(st.booleans())), dtype=bool)
    else:
        frame["l"] = pd.array(draw(col(st.sampled_from([True, False, None]))), dtype="boolean")
    days = draw(col(st.one_of(st.integers(-5, 20), st.none())))
    frame["t"] = pd.to_datetime(pd.Series(days, dtype="Int64") * 86400, unit="s")
    return frame


TYPES = ("probabilities", "class", "link")
#: probabilities are expit(link) element by element: checking link and class row by row
#: covers them
ROW_TYPES = ("class", "link")


def _alone_property(model, batch, cut, *, series=False):
    n = len(batch)
    equal = same
    with warning_rules():
        check_probabilities(model, batch, n)
        for type_ in ROW_TYPES:
            ref = plain(predict(model, batch, type=type_))
            for i in range(n):
                alone = predict(model, batch.iloc[[i]], type=type_)
                assert equal(alone, ref[i:i + 1]), (type_, i, alone, ref[i])
                if series:
                    row = predict(model, batch.iloc[i], type=type_)
                    assert equal(row, ref[i:i + 1]), (type_, i, row, ref[i])
            chunks = [predict(model, batch.iloc[j:j + cut], type=type_)
                      for j in range(0, n, cut)]
            assert equal(np.concatenate([plain(c) for c in chunks]), ref), (type_, cut)


@pytest.mark.heavy
@settings(max_examples=examples(100))
@given(model=models, batch=batches(), cut=st.integers(1, 6))
def test_a_row_is_the_same_alone_as_in_any_batch(model, batch, cut):
    # bit-identical whatever the batch, and no RuntimeWarning (an error in this suite)
    _alone_property(model, batch, cut)


@settings(max_examples=examples(80))
@given(model=models, batch=batches(), data=st.data())
def test_column_order_row_order_and_extra_columns_do_not_matter(model, batch, data):
    n = len(batch)
    with warning_rules():
        ref = {t: predict(model, batch, type=t) for t in TYPES}
    cols = data.draw(st.permutations(list(batch.columns)), label="columns")
    rows = data.draw(st.permutations(range(n)), label="rows")
    index = data.draw(st.sampled_from(["range", "shuffled", "strings", "repeated"]),
                      label="index")
    other = batch[cols].iloc[rows].copy()
    if index == "shuffled":
        other.index = np.arange(n)[::-1] * 7
    elif index == "strings":
        other.index = [f"r{i}" for i in range(n)]
    elif index == "repeated":
        other.index = [0] * n
    else:
        other = other.reset_index(drop=True)
    other["zz_extra"] = pd.Series(["x", 1, None, True, 2.5, "y", 0, None][:n], dtype=object,
                                  index=other.index)
    with warning_rules():
        for t in TYPES:
            got = predict(model, other, type=t)
            assert same(got, plain(ref[t])[rows]), (t, cols, rows, index)


# ---- what the fuzzers found (fixed; kept with their minimal reproducers) --------------------

@settings(max_examples=examples(20))
@example(key=(0, False, 0, 0), batch=pd.DataFrame({"a": [0.0, 0.03125], "b": [0.0, 0.5]}),
         cut=1)
@given(key=MODEL_KEYS, batch=batches(),
       cut=st.integers(1, 6))
def test_a_row_is_bit_identical_alone_and_in_a_batch(key, batch, cut):
    _alone_property(fitted(*key), batch, cut)


def _frame(**cols):
    return pd.DataFrame({k: (pd.Series(v).astype(_CATS) if k == "f" else v)
                         for k, v in cols.items()})


#: formulas with an interaction (formulaic multiplies the columns) / without one
_INTERACTIONS = [k for k, (f, _) in enumerate(FORMULAS) if ":" in f or "*" in f or "^" in f]
_PLAIN = [k for k in range(len(FORMULAS)) if k not in _INTERACTIONS and k != 10]


@settings(max_examples=examples(10))
@example(key=(0, True, 0, 0), batch=_frame(a=[0.0], b=[np.inf]), cut=1)
@given(key=st.tuples(st.sampled_from(_PLAIN), st.just(True), st.just(0), st.integers(0, 2)),
       batch=batches(), cut=st.integers(1, 6))
def test_clipped_model_scores_infinite_values_without_runtime_warnings(key, batch, cut):
    model = fitted(*key)
    _alone_property(model, batch, cut)


@settings(max_examples=examples(10))
@example(key=(3, False, 0, 0), batch=_frame(a=[0.0], b=[np.inf], l=[False]), cut=1)
@given(key=st.tuples(st.sampled_from(_INTERACTIONS), st.just(False), st.just(0),
                     st.integers(0, 2)),
       batch=batches(), cut=st.integers(1, 6))
def test_interaction_scores_infinite_values_without_runtime_warnings(key, batch, cut):
    _alone_property(fitted(*key), batch, cut)


@settings(max_examples=examples(20))
@example(key=(2, False, 0, 0), batch=_frame(a=[0.25], f=[None]), cut=1)
@example(key=(6, False, 0, 0),
         batch=_frame(a=[0.25], b=[0.0], f=["p"], t=pd.to_datetime([None])), cut=1)
# the row as a Series turns the Categorical into text: as.numeric(f) must still give its code
@example(key=(6, False, 0, 0),
         batch=_frame(a=[0.0], b=[0.0], f=["p"], t=pd.to_datetime(["1970-01-01"])), cut=1)
@given(key=MODEL_KEYS, batch=batches(), cut=st.integers(1, 6))
def test_a_row_as_a_series_is_the_one_row_frame(key, batch, cut):
    model = fitted(*key)
    _alone_property(model, batch, cut, series=True)


@settings(max_examples=examples(25))
@given(k=st.integers(0, len(FORMULAS) - 1), rp_dim=st.sampled_from([0, 1, 2, -1]),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_same_seed_same_bits_in_any_column_order(k, rp_dim, seed, data):
    formula, levels = FORMULAS[k]
    frame = training_frame(seed % 3)
    cols = data.draw(st.permutations(list(frame.columns)), label="columns")
    if formula.endswith("~ ."):      # '.' expands in data order: keep it
        cols = list(frame.columns)
    kwargs = dict(eps=1.0, levels=levels, clip=True, data_norm=2.0, rp_dim=rp_dim)
    one, exc = clean_call(lambda: dplr(formula, frame, random_state=seed, **kwargs))
    assert exc is None, exc
    two, exc = clean_call(lambda: dplr(formula, frame[cols], random_state=seed, **kwargs))
    assert exc is None, exc
    assert list(one.coefficients.index) == list(two.coefficients.index)
    assert np.array_equal(one.coefficients.to_numpy(), two.coefficients.to_numpy())
    assert (one.rp_p is None) == (two.rp_p is None)
    if one.rp_p is not None:
        assert np.array_equal(one.rp_p, two.rp_p)
    batch = training_frame(seed % 3 + 1, n=6)
    assert same(one.predict(batch), two.predict(batch[cols]))
