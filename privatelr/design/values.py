r"""R's vectors as the formula interpreter sees them, and data-frame columns converted to them.

R has four kinds of vectors that matter in a model formula; :class:`Vec` holds one of them:

=========  ==================================================  ==========================
kind       data                                                missing value (R's NA)
=========  ==================================================  ==========================
``num``    ``float64`` array (numeric, integer, dates)          ``NaN``
``lgl``    ``float64`` array of 0.0 / 1.0 (logical)              ``NaN``
``chr``    ``object`` array of ``str`` (character)              ``None``
``fct``    ``int64`` codes into ``levels`` (factor)              code ``-1``
=========  ==================================================  ==========================

A length-1 vector is recycled against any length (R's rule for scalars); other length
mismatches are errors.

How a pandas column becomes a vector depends on its **dtype** only, never on which rows happen to
be present (so one row scored alone gets what it gets in a batch):

* bool / ``boolean`` → ``lgl``; integer and float (nullable too) → ``num``;
* ``datetime64`` (naive or with a time zone) → ``num``, seconds since 1970-01-01 UTC, as R's
  ``POSIXct``; ``timedelta64`` → ``num`` seconds;
* ``Categorical`` → ``fct`` with the categories as levels (labelled as R's ``as.character``);
* strings (``object`` dtype holding only ``str``, or a pandas string dtype: pandas 3's
  ``"str"``, ``"string"``, an Arrow string) → ``chr``, coded once with ``pd.factorize`` (a
  string array by its own factorization, Arrow's dictionary encoding); an ``object`` column
  holding only numbers → ``num``, only booleans → ``lgl``; one that mixes kinds (``True``,
  ``"1"``, ``1``) is refused with ``ValueError``, as are complex numbers and bytes.

Examples
--------
>>> import pandas as pd
>>> v = from_column(pd.Series(["b", None, "a"]), "s")
>>> v.kind, v.data.tolist()
('chr', ['b', None, 'a'])
>>> from_column(pd.Series(pd.to_datetime(["1970-01-02"])), "t").data.tolist()
[86400.0]
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .rsyntax import lone_surrogate, r_number

__all__ = ["Vec", "from_column", "level_label", "labels_of", "column_type", "as_frame",
           "column_names", "numeric_level_problem", "KINDS"]

KINDS = ("num", "lgl", "chr", "fct")


@dataclass(frozen=True, eq=False)
class Vec:
    """One R vector (see the module docstring)."""

    kind: str
    data: np.ndarray
    levels: Any = None          # a tuple when kind == "fct" (mypy cannot narrow by kind)
    #: a character column's ``pd.factorize`` ``(codes, uniques)``, kept from reading it (one
    #: hash pass finds its missing values and codes it for a factor: match_levels reuses it)
    coded: Any = None

    def __len__(self) -> int:
        return int(self.data.shape[0])

    def missing(self) -> np.ndarray:
        """R's ``is.na``: a boolean mask."""
        if self.kind in ("num", "lgl"):
            return np.isnan(self.data)
        if self.kind == "fct":
            return self.data < 0
        return np.fromiter((v is None for v in self.data), dtype=bool, count=len(self.data))

    def any_missing(self) -> bool:
        """R's ``anyNA``; for numbers and factors one reduction and no mask (a NaN propagates
        through the minimum; a missing factor code is negative)."""
        if self.kind in ("num", "lgl"):
            return self.data.size > 0 and bool(np.isnan(np.min(self.data)))
        if self.kind == "fct":
            return self.data.size > 0 and bool(np.min(self.data) < 0)
        return bool(self.missing().any())

    def labels(self) -> np.ndarray:
        """Every element as R's ``as.character`` (``None`` where missing), an object array."""
        if self.kind == "chr":
            return self.data
        if self.kind == "fct":
            table = np.array(list(self.levels) + [None], dtype=object)
            return table[np.where(self.data >= 0, self.data, len(self.levels))]
        out = np.empty(len(self), dtype=object)
        miss = np.isnan(self.data)
        if self.kind == "lgl":
            out[:] = np.where(self.data == 1.0, "TRUE", "FALSE")
        else:
            inverse, uniq = pd.factorize(self.data, use_na_sentinel=True)
            table = np.array([r_number(u) for u in uniq.tolist()] + [None], dtype=object)
            out[:] = table[np.where(inverse >= 0, inverse, len(uniq))]
        out[miss] = None
        return out


def level_label(value) -> str:
    """R's label of one value (``as.character``): ``TRUE``/``FALSE``, ``r_number`` for numbers,
    the string itself for strings.

    Examples
    --------
    >>> level_label(True), level_label(6), level_label(0.1 + 0.2), level_label("a")
    ('TRUE', '6', '0.3', 'a')
    """
    if isinstance(value, (bool, np.bool_)):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, np.integer, float, np.floating)):
        return r_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (pd.Timestamp, np.datetime64)):
        raise ValueError("dates cannot be factor levels; convert the column to strings first")
    raise TypeError(f"a factor level must be a string, number or bool, got {value!r} "
                    f"({type(value).__name__})")


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def numeric_level_problem(level, what: str) -> str | None:
    """Why ``level``, declared as text for the numeric ``what``, can never match one of its
    values (a number written otherwise than R labels it, e.g. ``"100000"`` for the value R
    labels ``"1e+05"``, or ``"1.0"`` for ``"1"``), or None. Without this check such a level
    would silently match nothing.

    Examples
    --------
    >>> print(numeric_level_problem("100000", "column 'x'"))
    the level '100000' never equals a value of the numeric column 'x': R labels the number
    '1e+05' (declare the numbers themselves, e.g. [1, 100000], or R's labels)
    >>> numeric_level_problem("1e+05", "column 'x'") is None, numeric_level_problem("a", "x")
    (True, None)
    """
    if not isinstance(level, str) or _DECIMAL.fullmatch(level) is None:
        return None
    label = r_number(float(level))
    if label == level:
        return None
    return (f"the level {level!r} never equals a value of the numeric {what}: R labels the "
            f"number {label!r} (declare the numbers themselves, e.g. [1, 100000], or R's "
            "labels)")


def labels_of(values) -> list[str]:
    """R labels of a list of declared levels, checked distinct (``ValueError`` otherwise)."""
    out = [level_label(v) for v in values]
    if len(set(out)) != len(out):
        dup = sorted({x for x in out if out.count(x) > 1})
        raise ValueError(f"levels {list(values)!r} are not distinct as R labels ({dup} repeat)")
    return out


def column_type(series: pd.Series, name: str) -> str:
    """The R kind (``num``, ``lgl``, ``chr`` or ``fct``) a column converts to, from its dtype
    (for ``object`` columns, from the kinds of values it holds); ``ValueError`` when it has
    none of them."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return "fct"
    if pd.api.types.is_bool_dtype(dtype):
        return "lgl"
    if pd.api.types.is_complex_dtype(dtype):
        raise ValueError(f"column {name!r} holds complex numbers, which a logistic regression "
                         "cannot use; take the real part or the modulus first")
    if pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype) \
            or pd.api.types.is_timedelta64_dtype(dtype):
        return "num"
    if pd.api.types.is_string_dtype(dtype) or dtype == object:
        inferred = pd.api.types.infer_dtype(series, skipna=True)
        if inferred in ("string", "empty"):
            return "chr"
        if inferred == "boolean":
            return "lgl"
        if inferred in ("integer", "floating", "mixed-integer-float", "decimal", "datetime",
                        "datetime64", "timedelta", "timedelta64"):
            return "num"
        if inferred == "complex":
            raise ValueError(f"column {name!r} holds complex numbers, which a logistic "
                             "regression cannot use")
        raise ValueError(f"column {name!r} mixes values of different kinds ({inferred}: e.g. "
                         "booleans, numbers and strings, or dates and strings); convert it to "
                         "one kind first (df[col].astype(str), pd.to_numeric, ...)")
    raise ValueError(f"column {name!r} has dtype {dtype}, which a formula cannot use; convert "
                     "it to numbers, booleans, strings or a pandas Categorical")


def _categorical(series: pd.Series, name: str) -> Vec:
    cats = list(series.dtype.categories)
    labels = [level_label(c) for c in cats]
    codes = series.cat.codes.to_numpy().astype(np.int64)
    if len(set(labels)) == len(labels):
        return Vec("fct", codes, tuple(labels))
    # categories that print alike (0.3 and 0.1 + 0.2) are one level, as R's factor() makes them
    uniq = list(dict.fromkeys(labels))
    remap = np.array([uniq.index(lb) for lb in labels] + [-1], dtype=np.int64)
    return Vec("fct", remap[np.where(codes >= 0, codes, len(labels))], tuple(uniq))


def from_column(series: pd.Series, name: str) -> Vec:
    """A data-frame column as an R vector (rules in the module docstring)."""
    dtype = series.dtype
    if dtype == object and len(series) and isinstance(series.iat[0], str):
        # likely text: the hash pass that codes it also tells its kind, without a second pass
        # of column_type's inference over every value (10 ms a 1e6-row column). Every value
        # equal to a str unique is a str (no other built-in type equals a str); the values
        # coded -1 (pd.isna's) must be ones that inference skips too (None, NaN, pd.NA — not
        # NaT or Decimal('NaN'), which make a text column mixed): then the two agree
        values = series.to_numpy(dtype=object)
        coded = pd.factorize(values, use_na_sentinel=True)
        if pd.api.types.infer_dtype(coded[1], skipna=False) == "string":
            miss = coded[0] < 0
            if not miss.any() or pd.api.types.infer_dtype(values[miss], skipna=True) == "empty":
                return _character(values, coded)
    kind = column_type(series, name)
    if kind == "fct":
        return _categorical(series, name)
    if kind == "lgl":
        if dtype == object:
            arr = np.array([np.nan if _is_na(v) else float(bool(v)) for v in series.tolist()],
                           dtype=np.float64)
            return Vec("lgl", arr)
        return Vec("lgl", series.to_numpy(dtype=np.float64, na_value=np.nan))
    if kind == "num":
        if dtype == object and pd.api.types.infer_dtype(series, skipna=True) in (
                "datetime", "datetime64"):
            series, dtype = pd.to_datetime(series, utc=True), None
            dtype = series.dtype
        elif dtype == object and pd.api.types.infer_dtype(series, skipna=True) in (
                "timedelta", "timedelta64"):
            series = pd.to_timedelta(series)
            dtype = series.dtype
        if pd.api.types.is_datetime64_any_dtype(dtype):
            s = series
            if getattr(dtype, "tz", None) is not None:
                s = s.dt.tz_convert("UTC").dt.tz_localize(None)
            ns = s.to_numpy(dtype="datetime64[ns]").astype(np.int64)
            out = ns.astype(np.float64) / 1e9
            out[s.isna().to_numpy()] = np.nan
            return Vec("num", out)
        if pd.api.types.is_timedelta64_dtype(dtype):
            ns = series.to_numpy(dtype="timedelta64[ns]").astype(np.int64)
            out = ns.astype(np.float64) / 1e9
            out[series.isna().to_numpy()] = np.nan
            return Vec("num", out)
        if dtype == object:
            vals = [np.nan if _is_na(v) else _as_float(v) for v in series.tolist()]
            return Vec("num", np.array(vals, dtype=np.float64))
        return Vec("num", series.to_numpy(dtype=np.float64, na_value=np.nan))
    # character
    if dtype != object:
        # a pandas string array (pandas 3's default "str", "string", an Arrow string): coded by
        # the array itself (Arrow: its dictionary encoding), the values being the distinct ones
        # taken by code, not every string converted to a new Python object
        codes, uniques = pd.factorize(series, use_na_sentinel=True)
        table = np.array([*uniques, None], dtype=object)   # code -1 (missing) reads the None
        return Vec("chr", table.take(codes), coded=(codes, table[:-1]))
    values = series.to_numpy(dtype=object)
    return _character(values, pd.factorize(values, use_na_sentinel=True))


def _character(values: np.ndarray, coded) -> Vec:
    """A ``chr`` vector of the object array ``values`` with its ``pd.factorize`` ``coded``
    (missing values, ``pd.isna``'s, coded -1, become ``None``)."""
    codes, uniques = coded
    miss = codes < 0
    if miss.any():
        values = values.copy()
        values[miss] = None
    return Vec("chr", values, coded=(codes, uniques))


def _as_float(v) -> float:
    try:
        return float(v)
    except OverflowError:                    # an int beyond the doubles: R's Inf
        return math.inf if v > 0 else -math.inf


def _is_na(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def as_frame(data, what: str = "data") -> pd.DataFrame:
    """``data`` as a DataFrame with string column names (a dict of columns, a 2-D array with
    columns ``X1, X2, ...``, or one row as a Series)."""
    if isinstance(data, pd.DataFrame):
        frame = data
    elif isinstance(data, dict):
        if data and all(np.ndim(v) == 0 for v in data.values()):
            raise ValueError(f"{what} is a dict of single values; give each column as a list "
                             "(one row: {'x': [1.0], ...}) or pass a DataFrame")
        try:
            frame = pd.DataFrame(data)
        except ValueError as exc:
            raise ValueError(f"{what}: the columns of the dict cannot form a table ({exc}); give "
                             "every column the same length") from None
    elif isinstance(data, pd.Series):        # one row (e.g. df.iloc[i]): each value's own kind
        frame = pd.DataFrame({k: pd.Series([v]) for k, v in data.items()})
    elif isinstance(data, np.ndarray):
        if data.ndim == 1:
            data = data.reshape(1, -1)
        if data.ndim != 2:
            raise ValueError(f"{what} must be 2-D, got shape {data.shape}")
        frame = pd.DataFrame(data, columns=[f"X{j + 1}" for j in range(data.shape[1])])
    else:
        raise TypeError(f"{what} must be a pandas DataFrame (or a dict of columns / 2-D numpy "
                        f"array), got {type(data).__name__}")
    columns = column_names(frame.columns, what)
    if list(frame.columns) != columns:
        frame = frame.set_axis(columns, axis=1)
    return frame


def column_names(columns, what: str = "data") -> list[str]:
    """The column names as strings (as R and the formulas see them); duplicates are an error."""
    names = [str(c) for c in columns]
    odd = next((nm for nm in names if lone_surrogate(nm) is not None), None)
    if odd is not None:
        raise ValueError(f"{what} has a column name holding a lone surrogate "
                         f"({odd.encode('utf-8', 'backslashreplace').decode()!r}), which is not "
                         "text (it cannot be printed or saved); rename the column")
    if len(set(names)) != len(names):
        dup = sorted({c for c in names if names.count(c) > 1})
        raise ValueError(f"{what} has duplicated column names {dup[:5]}; make them unique")
    return names
