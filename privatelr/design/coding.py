"""Coding the response and the factors of a design: from declarations, or learned (non-private).

Used both when a spec is built (:mod:`privatelr.design.build`) and when a saved spec is checked
again (:meth:`privatelr.design.DesignSpec.from_dict`), so the two cannot disagree:

* :func:`response_coding` — logical as is; numeric 0/1 (declared) or R's "smallest value is 0"
  (learned, non-private only); a factor's first level is 0 and every other level 1;
* :func:`atom_levels` — the kind and levels of one atom (numeric, or a factor with its levels);
* :func:`code_response` / :func:`as_factor_atom` — the same codings applied to rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .algebra import strip_parens
from .rsyntax import Name, deparse, names_in
from .terms import Columns, Kind, LevelBook, evaluate, level_key, match_levels, undeclared_message
from .values import Vec, level_label

__all__ = ["check_per_row", "eval_rows", "response_coding", "raw_values", "two_labels",
           "atom_levels", "check_response", "code_response", "as_factor_atom", "MAX_LEVELS",
           "TYPE_WORDS"]

#: Most levels one factor may have.
MAX_LEVELS = 100_000
TYPE_WORDS = {"num": "numeric", "lgl": "logical", "chr": "character", "fct": "factor"}


def check_per_row(node, name: str, columns) -> None:
    """R's "variable lengths differ": a term, response or offset that reads no data column
    (``I(1)``, ``pi``, ``T``, ``I(round(-2.5))``) is one value, not one per row; a
    ``ValueError`` (R refuses it whenever the data has more than one row; here always, so that a
    model's columns never depend on the number of rows)."""
    if not any(v in columns for v in names_in(node)):
        raise ValueError(f"formula: variable lengths differ (found for {name!r}): it reads no "
                         "data column, so it is one value rather than one per row; a constant "
                         "is not a term (the intercept is already in the model; use a data "
                         "column, or remove the term)")


def eval_rows(node, cols: Columns, book: LevelBook, n: int, name: str) -> Vec:
    try:
        vec = evaluate(node, cols, book)
    except KeyError as exc:
        raise ValueError(f"formula: column {exc.args[0]!r} (in {name!r}) is not in data") \
            from None
    if len(vec) == 1 and n != 1:
        vec = Vec(vec.kind, np.repeat(vec.data, n), vec.levels)
    if len(vec) != n:
        raise ValueError(f"formula: {name!r} evaluates to {len(vec)} values, expected {n}")
    return vec


def raw_values(lhs, frame: pd.DataFrame, levels: dict | None) -> list | None:
    """The declared values of a response that is one column (as the user wrote them, so that
    ``predict(type="class")`` returns them), or None."""
    node = strip_parens(lhs)
    if not isinstance(node, Name) or node.id not in frame.columns:
        return None
    if levels is not None and node.id in {str(k) for k in levels}:
        vals = {str(k): v for k, v in levels.items()}[node.id]
        return [jsonable(v) for v in vals]
    dtype = frame[node.id].dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cats = [jsonable(c) for c in dtype.categories]
        if all(isinstance(c, (str, int, float, bool)) for c in cats) and \
                len({level_label(c) for c in cats}) == len(cats):
            return cats
    return None


def response_coding(lhs, yk: Kind, book: LevelBook, cols: Columns, n: int, response: str,
                     learn: bool, why: str, raw: list | None):
    key = level_key(lhs)
    if yk.kind == "lgl":
        return "logical", [False, True], [False, True]
    if yk.kind == "num":
        declared = book.get(key) if isinstance(strip_parens(lhs), Name) else None
        if declared is not None:
            return factor_response(raw if raw is not None else list(declared))
        if not learn:
            return "numeric", [0, 1], [0, 1]
        vec = eval_rows(lhs, cols, book, n, response)
        vals = np.unique(vec.data[~np.isnan(vec.data)])
        levels: Any = [int(v) if float(v).is_integer() and abs(v) < 2 ** 53 else float(v)
                       for v in vals.tolist()]
        if not levels:
            raise ValueError(f"the response {response!r} has no values")
        if set(levels) <= {0, 1}:        # R's 0/1 coding, also when one value is absent
            return "numeric", [0, 1], [0, 1]
        if levels != [0, 1]:
            book.learned_any = True
        return "numeric", levels, two_labels(levels)
    if raw is not None and yk.levels is not None and \
            [level_label(v) for v in raw] == list(yk.levels):
        return factor_response(raw)
    levels = yk.levels or book.get(key)
    if levels is None:
        if not learn:
            raise ValueError(
                f"the response {response!r} holds {TYPE_WORDS[yk.kind]} whose levels would be "
                f"learned from the private rows (one record can change every label), which "
                f"breaks the privacy guarantee of {why}. Declare them: levels={{{key!r}: "
                "[first, second, ...]} (the first is coded 0) or a pandas Categorical; or use "
                f"a bool or 0/1 response (e.g. I(y == 'yes')){book.hint}")
        vec = eval_rows(lhs, cols, book, n, response)
        levels = book.resolve(key, vec)
        book.learned_any = True
    return factor_response(list(levels))


def factor_response(levels: list):
    if len(levels) > MAX_LEVELS:
        raise ValueError(f"the response has {len(levels)} levels, more than {MAX_LEVELS}")
    return "factor", list(levels), two_labels(levels)


def two_labels(levels: list) -> list:
    if len(levels) == 2:
        return list(levels)
    if not levels:
        return [0, 1]
    first = levels[0] if isinstance(levels[0], str) else level_label(levels[0])
    return [levels[0], f"not {first}"]


def atom_levels(node, k: Kind, book: LevelBook, cols: Columns | None, n: int, learn: bool,
                why: str):
    if k.kind == "num":
        return {"kind": "numeric", "levels": None}
    if k.kind == "lgl":
        return {"kind": "factor", "levels": ["FALSE", "TRUE"]}
    key = level_key(node)
    levels = k.levels if k.levels is not None else book.get(key)
    if levels is None or (learn and k.kind == "fct" and k.levels is None):
        if not learn:
            raise ValueError(undeclared(key, why, book.hint))
        assert cols is not None             # learning levels reads the rows
        vec = eval_rows(node, cols, book, n, deparse(node))
        levels = vec.levels if vec.kind == "fct" else book.resolve(key, vec)
        book.learned_any = True
    book.declare(key, levels)
    if len(levels) > MAX_LEVELS:
        raise ValueError(f"formula: {deparse(node)!r} has {len(levels)} levels, more than "
                         f"{MAX_LEVELS}")
    return {"kind": "factor", "levels": list(levels)}


def undeclared(key: str, why: str, hint: str) -> str:
    return undeclared_message(key, why, hint)


def check_response(spec, yk: Kind, declared) -> None:
    kind, levels = spec.response_kind, spec.response_levels
    labels = [v if isinstance(v, str) else level_label(v) for v in levels]
    if yk.kind == "lgl":
        ok = kind == "logical" and levels == [False, True]
    elif yk.kind == "num" and kind == "numeric":
        ok = all(not isinstance(v, (str, bool)) for v in levels) and \
            len(set(labels)) == len(labels)
    elif yk.kind == "num":
        ok = kind == "factor" and declared is not None and labels == list(declared)
    else:
        want = yk.levels if yk.levels is not None else declared
        ok = kind == "factor" and want is not None and labels == list(want)
    if not ok or spec.labels != two_labels(levels):
        raise ValueError("design: the stored response coding does not match the formula")


def code_response(yvec: Vec, spec, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The response's class codes under the spec — the position of each value among
    ``spec.response_levels`` (0, 1, ..., K - 1; a binary model's 0/1 response is ``codes > 0``)
    — and its missing mask; values outside the coding are an error naming the fix."""
    miss = yvec.missing()
    kind = spec.response_kind
    if kind == "logical":
        if yvec.kind != "lgl":
            raise ValueError(f"{what}: the response {spec.response!r} was logical when the model "
                             f"was fitted but is {TYPE_WORDS[yvec.kind]} here")
        return np.where(miss, 0.0, yvec.data), miss
    if kind == "numeric":
        if yvec.kind not in ("num", "lgl"):
            raise ValueError(f"{what}: the response {spec.response!r} must be numeric, got "
                             f"{TYPE_WORDS[yvec.kind]}")
        values = np.asarray(spec.response_levels, dtype=np.float64)
        ok = np.isin(yvec.data, values) | miss
        if not ok.all():
            bad = sorted(set(np.unique(yvec.data[~ok]).tolist()))[:5]
            if list(values) == [0.0, 1.0]:
                raise ValueError(
                    f"the response {spec.response!r} must hold only 0 and 1 (R's manual: "
                    f"'must only contain values 0 and 1'), got values such as {bad}. Code it "
                    "0/1 or as bool (e.g. I(y == 2)), or declare its two values with "
                    f"levels={{{spec.response!r}: [first, second]}}. With a data frame and "
                    "target=, column positions are 0-based")
            raise ValueError(f"{what}: the response {spec.response!r} has values {bad} outside "
                             f"the model's {list(spec.response_levels)}")
        # the position of each value among the levels, by comparisons (a missing value equals
        # none of them: its code is 0, as every missing row's)
        codes = np.equal(yvec.data, values[1]).astype(np.float64) if values.size > 1 else \
            np.zeros(yvec.data.shape)
        for k, v in enumerate(values[2:], start=2):
            codes += np.equal(yvec.data, v) * float(k)
        return codes, miss
    levels = tuple(level_label(v) if not isinstance(v, str) else v for v in spec.response_levels)
    fct = match_levels(yvec, levels, spec.response, strict=True)
    return np.where(fct.data > 0, fct.data, 0).astype(np.float64), fct.data < 0


def as_factor_atom(vec: Vec, atom: dict, book: LevelBook) -> Vec:
    """An atom's value as the factor the spec records (a logical is the factor FALSE/TRUE)."""
    levels = tuple(atom["levels"])
    if vec.kind == "lgl":
        codes = np.where(np.isnan(vec.data), -1, vec.data).astype(np.int64)
        return Vec("fct", codes, ("FALSE", "TRUE"))
    return match_levels(vec, levels, atom["name"], strict=True)


def jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    return obj
