r"""The formula interpreter: R's functions and operators on :class:`~privatelr.design.values.Vec`,
by whitelist.

A term such as ``log(mpg)``, ``I(Species != "setosa")`` or ``factor(cyl, levels = c(4, 6, 8))``
is a tree from :mod:`privatelr.design.rsyntax`. This module gives it meaning in two ways that
share one table of functions, so they cannot drift apart:

* :func:`infer` — the static kind of a tree (``num``/``lgl``/``chr``/``fct`` and, for factors,
  their levels when they are *declared*) from the kinds of the data columns alone. It is what
  makes a design spec checkable before any row is read, and what validates a spec loaded from a
  file.
* :func:`evaluate` — the value of a tree on the columns of a data frame.

Only the functions in :data:`FUNCTIONS` can be called, each with its own named arguments;
only the operators below are understood; names are data columns, or ``T``, ``F``, ``pi``.
Everything else is a ``ValueError`` that names the term.

R semantics, where R syntax is accepted:

* arithmetic ``+ - * / ^ %% %/%`` on numbers and logicals (``TRUE`` is 1); on strings or factors
  it is an error (R: "non-numeric argument"); integer division and modulo floor as R's do;
* ``&``, ``|``, ``!`` are logical with R's three-valued NA rules (``2 & 1`` is ``TRUE``,
  ``!2`` is ``FALSE``); ``&&`` and ``||`` need length-one operands in R and are refused;
* ``==``, ``!=`` compare numbers as numbers and anything involving strings or factors by R's
  labels (``as.character``); ``<``, ``>``, ``<=``, ``>=`` compare numbers only (string order
  depends on R's locale, factor order is "not meaningful" in R);
* ``x %in% table`` matches by value (labels when either side is text or a factor), NA matches NA;
* ``factor(x)`` levels are R's: the sorted distinct values, as labels (values that print alike,
  such as 0.3 and 0.1 + 0.2, are one level); ``factor(x, levels = ...)`` uses the given levels
  and makes other values NA, as R does; ``as.numeric(f)`` of a factor gives its level codes
  1, 2, ...; ``as.numeric("abc")`` is NA. A number becomes a label by one rule,
  :func:`~privatelr.design.rsyntax.r_number` (R's ``as.character``: ``100000`` is ``"1e+05"``),
  whether it is a data value or a declared level; a level declared as text for a numeric
  variable that R would label otherwise (``"100000"``) is an error rather than a silent NA;
* ``round(x, digits)`` and ``signif(x, digits)`` are R's (:mod:`privatelr.design.rmath`:
  ``round(0.15, 1)`` is 0.1, ``round(2.5)`` is 2), not NumPy's;
* ``c()`` with no values is refused (R's NULL), as is any term, response or offset that reads
  no data column (R's "variable lengths differ").
* ``relevel(f, ref = "b")`` moves level ``ref`` (a label, or a 1-based position) first, so it
  becomes the reference; it reorders the levels ``f`` already has (declared ones in a private
  fit) and reads no data;
* ``ifelse(test, yes, no)`` is elementwise, NA where ``test`` is NA; text results are factors
  whose levels must be declared in a private fit (``factor(ifelse(...), levels = c(...))``);
* ``cut(x, breaks = c(...))`` is a factor of intervals labelled as R labels them (``"(a,b]"``;
  ``right``, ``include.lowest``, ``labels``, ``dig.lab`` as in R); values outside the breaks are
  NA. Explicit breaks are public. ``cut(x, k)`` (k intervals over the data's range) and
  ``scale(x)`` (mean and sd) learn numbers from the rows: a non-private build records them in
  the book's ``params`` (stored in the spec, reused for new data as R's ``makepredictcall``
  does); a private build refuses them, naming explicit breaks, ``scale(x, center = c0, scale =
  s0)`` and public bounds. ``poly`` is a term of its own (:mod:`privatelr.design.poly`).

**Levels come from a book, not from the rows.** Every factor a formula makes has a *key*: the
column name for a text or factor column used directly, the call's text for ``factor(...)`` /
``as.factor(...)`` / other text-valued terms. A :class:`LevelBook` maps keys to levels. When a
design is built for a private fit the book holds only declarations (pandas Categorical
categories, ``levels=`` of the front ends, ``factor(x, levels = ...)``, logicals); a key it
lacks is an error naming the fix. Only a non-private fit may ``learn`` levels from the data,
which records them in the book. A fitted spec carries its book, and scoring new data uses it as
is: a value outside it is an error.

Examples
--------
>>> import numpy as np, pandas as pd
>>> from privatelr.design.rsyntax import parse
>>> frame = pd.DataFrame({"u": [2.0, 0.0], "v": [1.0, 1.0]})
>>> evaluate(parse("I(u & v)"), Columns(frame)).data.tolist()
[1.0, 0.0]
>>> evaluate(parse("!u"), Columns(frame)).data.tolist()
[0.0, 1.0]
>>> infer(parse("log(u) + v"), {"u": "num", "v": "num"}, LevelBook()).kind
'num'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from .rsyntax import (Binary, Call, Chain, Const, Dot, Name, Node, Num, Paren, Str, Unary,
                      deparse, number_value, r_number)
from .rmath import r_round, r_signif
from .values import Vec, from_column, labels_of, numeric_level_problem

__all__ = ["FUNCTIONS", "Kind", "LevelBook", "Columns", "infer", "evaluate", "level_key",
           "literal_values", "match_levels", "undeclared_message", "refused_message",
           "NAMED_CONSTANTS", "LEARNING_FUNCTIONS", "bind_arguments", "stored_params_problem"]

#: Names that fall back to R's base values when the data has no column of that name.
NAMED_CONSTANTS = {"T": ("lgl", 1.0), "F": ("lgl", 0.0), "pi": ("num", math.pi)}
_ORDERING = ("<", ">", "<=", ">=")


# ---------------------------------------------------------------------------------------------
# kinds, level keys and the level book
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Kind:
    """The static kind of a tree: ``num``, ``lgl``, ``chr`` or ``fct``; for ``chr``/``fct`` the
    level key and, when known, the levels."""

    kind: str
    key: str | None = None
    levels: tuple | None = None


def level_key(node: Node) -> str:
    """The book key of a factor-valued tree: a bare column's name, otherwise its R text."""
    while isinstance(node, Paren):
        node = node.body
    if isinstance(node, Name):
        return node.id
    return deparse(node)


@dataclass
class LevelBook:
    """Factor levels by key (see the module docstring).

    ``learn=True`` lets :meth:`resolve` compute missing levels from the values it is given (R's
    rule) and record them: only for non-private fits. Otherwise a missing key is an error whose
    message says how to declare it.
    """

    levels: dict = field(default_factory=dict)
    learn: bool = False
    why: str = "a private fit"
    learned_any: bool = False
    hint: str = "; or fit with eps=0 (not private)"
    #: numbers learned from the rows by ``scale(x)``, ``cut(x, k)``, ``poly(x, k)``, by call text
    params: dict = field(default_factory=dict)

    def learned_params(self, key: str, compute: Callable[[], list], what: str, fix: str) -> list:
        """The numbers ``key`` learned from the rows: from the book, or computed by ``compute``
        and recorded when learning is allowed; otherwise a ``ValueError`` naming ``fix``."""
        known = self.params.get(key)
        if known is not None:
            return [float(v) for v in known]
        if not self.learn:
            raise ValueError(refused_message(key, what, self.why, fix, self.hint))
        values = [float(v) for v in compute()]
        self.params[key] = values
        self.learned_any = True
        return values

    def can_learn(self, key: str, what: str, fix: str) -> None:
        """``ValueError`` (as :meth:`learned_params`) unless ``key``'s numbers are stored or may
        be learned."""
        if key not in self.params and not self.learn:
            raise ValueError(refused_message(key, what, self.why, fix, self.hint))

    def get(self, key: str) -> tuple | None:
        lv = self.levels.get(key)
        return None if lv is None else tuple(lv)

    def declare(self, key: str, levels) -> tuple:
        levels = tuple(levels)
        old = self.levels.get(key)
        if old is not None and tuple(old) != levels:
            raise ValueError(f"formula: {key!r} is given two different sets of levels: "
                             f"{list(old)} and {list(levels)}")
        self.levels[key] = levels
        return levels

    def resolve(self, key: str, values: Vec, *, drop_unused: bool = False) -> tuple:
        """Levels for ``key``: from the book, or learned from ``values`` when allowed."""
        known = self.get(key)
        if known is not None:
            return known
        if not self.learn:
            raise ValueError(undeclared_message(key, self.why, self.hint))
        self.learned_any = True
        return self.declare(key, _learned_levels(values, drop_unused))


def undeclared_message(key: str, why: str, hint: str = "; or fit with eps=0 (not private)"
                        ) -> str:
    col = key if all(c not in key for c in "()") else None
    how = (f"levels={{{col!r}: [...]}} (or make the column a pandas Categorical with "
           f"pd.CategoricalDtype([...]))" if col else
           "factor(..., levels = c(...)) in the formula, or levels= for its column")
    return (f"the levels of {key!r} would be learned from the private rows, which breaks the "
            f"privacy guarantee of {why}: one record can add a level (a coefficient) or move "
            f"the reference level. Declare them: {how}{hint}")


def refused_message(key: str, what: str, why: str, fix: str, hint: str) -> str:
    """The message for a formula function whose numbers would be computed from the rows."""
    return (f"formula: {key}: {what} would be computed from the private rows, which breaks the "
            f"privacy guarantee of {why}. Use {fix}{hint}")


_BOUNDS_FIX = ("public bounds declared up front (privatelr.public_bounds, or the bounds= "
               "argument of dplr)")


def _learned_levels(values: Vec, drop_unused: bool) -> tuple:
    """R's ``factor()`` levels: sorted distinct values as labels (a factor keeps its own order,
    dropping unused levels when ``drop_unused``)."""
    if values.kind == "fct":
        if not drop_unused:
            return tuple(values.levels)
        used = np.unique(values.data[values.data >= 0])
        return tuple(values.levels[i] for i in used.tolist())
    if values.kind in ("num", "lgl"):
        data = values.data[~np.isnan(values.data)]
        uniq = np.unique(data)
        if values.kind == "lgl":
            return tuple("TRUE" if u == 1.0 else "FALSE" for u in uniq.tolist())
        return tuple(dict.fromkeys(r_number(u) for u in uniq.tolist()))
    present = [v for v in pd.unique(values.data) if v is not None]
    return tuple(sorted(set(present)))


# ---------------------------------------------------------------------------------------------
# columns of a frame, converted once each
# ---------------------------------------------------------------------------------------------

class Columns:
    """The data columns a tree may read, converted to :class:`Vec` on first use.

    ``types``: the kinds recorded when the model was fitted; a column that converts to another
    kind is an error (a model fitted on numbers does not silently score strings). ``levels``:
    the model's levels by column; text in a column the model read as a factor becomes that
    factor (so ``as.numeric(f)`` gives the level codes whether a row comes as a frame with a
    Categorical or as a Series of strings).
    """

    def __init__(self, frame: pd.DataFrame, types: Mapping[str, str] | None = None,
                 what: str = "data", levels: Mapping[str, tuple] | None = None):
        self.frame = frame
        self.n = len(frame)
        self.types = types
        self.what = what
        self.levels = levels or {}
        self._cache: dict[str, Vec] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.frame.columns

    def get(self, name: str) -> Vec:
        if name not in self._cache:
            vec = from_column(self.frame[name], name)
            want = None if self.types is None else self.types.get(name)
            if want == "fct" and vec.kind == "chr" and name in self.levels:
                vec = match_levels(vec, tuple(self.levels[name]), name, strict=True)
            elif want is not None and vec.kind != want:
                vec = _coerce_column(vec, want, name, self.what)
            self._cache[name] = vec
        return self._cache[name]


_KIND_WORDS = {"num": "numbers", "lgl": "booleans", "chr": "strings", "fct": "a factor"}


def _coerce_column(vec: Vec, want: str, name: str, what: str) -> Vec:
    # Text and factors are interchangeable (both are matched by label); anything else must match.
    if {vec.kind, want} <= {"chr", "fct"}:
        return Vec("chr", vec.labels()) if want == "chr" else vec
    if bool(vec.missing().all()):          # all missing (a one-row NaN/NaT): any kind, all NA
        if want in ("num", "lgl"):
            return Vec(want, np.full(len(vec), np.nan))
        return Vec("chr", np.full(len(vec), None, dtype=object))
    raise ValueError(f"{what}: column {name!r} holds {_KIND_WORDS[vec.kind]} but the model was "
                     f"fitted on {_KIND_WORDS[want]}; convert it to the same kind")


# ---------------------------------------------------------------------------------------------
# the function table
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Function:
    """One whitelisted R function: its parameters (in R's order), whether it takes ``...``,
    its static kind rule and its implementation."""

    params: tuple
    required: int
    kind: Callable          # (call, arg kinds by parameter, book) -> Kind
    run: Callable           # (call, arg values by parameter, book) -> Vec
    varargs: bool = False
    literal: tuple = ()     # parameters that must be literal constants


def _numeric_kind(fname):
    def rule(call, kinds, book):
        for p, k in kinds.items():
            if isinstance(k, list):
                bad = [x for x in k if x.kind not in ("num", "lgl")]
            else:
                bad = [k] if k.kind not in ("num", "lgl") else []
            if bad:
                raise ValueError(f"formula: {deparse(call)}: {fname}() needs numbers, but its "
                                 f"argument is {_KIND_WORDS[bad[0].kind]}")
        return Kind("num")
    return rule


def _math(ufunc):
    def run(call, args, book):
        return Vec("num", ufunc(_num(args["x"])))
    return run


def _run_log(call, args, book):
    x = _num(args["x"])
    if "base" not in args:
        return Vec("num", np.log(x))
    base = _num(args["base"])
    n = max(len(x), len(base))
    return Vec("num", np.log(_recycle(x, n)) / np.log(_recycle(base, n)))


def _run_round(call, args, book):
    digits = args.get("digits")
    d = (0 if call.fn == "round" else 6) if digits is None else \
        _scalar_number(digits, call, "digits")
    if not float(d).is_integer() or abs(d) > 400:
        raise ValueError(f"formula: {deparse(call)}: digits must be a whole number")
    rounding = r_round if call.fn == "round" else r_signif
    return Vec("num", rounding(_num(args["x"]), int(d)))


def _run_pminmax(which):
    def run(call, args, book):
        vals = [_num(v) for v in args["..."]]
        na_rm = args.get("na.rm")
        rm = bool(na_rm is not None and _scalar_number(na_rm, call, "na.rm"))
        n = max(len(v) for v in vals)
        out = _recycle(vals[0], n).copy()
        for v in vals[1:]:
            v = _recycle(v, n)
            if rm:
                out = np.fmin(out, v) if which == "min" else np.fmax(out, v)
            else:
                out = np.minimum(out, v) if which == "min" else np.maximum(out, v)
        return Vec("num", out)
    return run


def _factor_levels(call: Call, kind: str, levels: tuple | None, book: LevelBook) -> tuple | None:
    """The levels of ``factor(x, ...)`` / ``as.factor(x)`` known without reading values, from
    ``x``'s kind and its declared ``levels`` (None: they must be learned)."""
    key = deparse(call)
    bound = _bind(call)
    if "levels" in bound:
        declared = literal_values(bound["levels"])
        if kind == "num":
            problem = next(filter(None, (numeric_level_problem(v, f"variable {deparse(bound['x'])}")
                                         for v in declared)), None)
            if problem is not None:
                raise ValueError(f"formula: {key}: {problem}")
        return book.declare(key, labels_of(declared))
    known = book.get(key)
    if known is not None:
        return known
    if kind == "lgl":
        return book.declare(key, ("FALSE", "TRUE"))
    if levels is not None and (kind in ("chr", "num") or call.fn == "as.factor" or
                               not book.learn):
        # declared levels are kept (R's factor() would drop unused ones: only when learning)
        return book.declare(key, levels)
    return None


def _kind_factor(call, kinds, book):
    x = kinds["x"]
    levels = _factor_levels(call, x.kind, x.levels, book)
    if levels is None and not book.learn:
        raise ValueError(undeclared_message(x.key or deparse(call), book.why, book.hint))
    return Kind("fct", deparse(call), levels)


def _run_factor(call, args, book):
    x = args["x"]
    declared = x.levels if x.kind == "fct" else book.get(level_key(_bind(call)["x"]))
    levels = _factor_levels(call, x.kind, declared, book)
    if levels is None:
        levels = book.resolve(deparse(call), x, drop_unused=call.fn == "factor")
    return match_levels(x, levels, deparse(call), strict="levels" not in args)


def _run_as_numeric(call, args, book):
    x = args["x"]
    if x.kind in ("num", "lgl"):
        out = x.data
    elif x.kind == "fct":
        out = np.where(x.data >= 0, x.data + 1.0, np.nan)
    else:
        out = pd.to_numeric(pd.Series(x.data, dtype=object), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan)
    if call.fn == "as.integer":
        out = np.trunc(out)
    return Vec("num", np.asarray(out, dtype=np.float64))


def _kind_as_character(call, kinds, book):
    x = kinds["x"]
    key = deparse(call)
    levels = book.get(key) or x.levels
    if levels is not None:
        book.declare(key, levels)
    return Kind("chr", key, levels)


def _run_as_character(call, args, book):
    return Vec("chr", args["x"].labels())


def _kind_c(call, kinds, book):
    parts = kinds["..."]
    if not parts:
        raise ValueError(f"formula: {deparse(call)} has no values (R's NULL); give at least one")
    ks = {k.kind for k in parts}
    if ks & {"chr", "fct"}:
        return Kind("chr", deparse(call), None)
    return Kind("num" if "num" in ks else "lgl")


def _run_c(call, args, book):
    parts = args["..."]
    if not parts:
        raise ValueError(f"formula: {deparse(call)} has no values (R's NULL); give at least one")
    ks = {v.kind for v in parts}
    if ks & {"chr", "fct"}:
        return Vec("chr", np.concatenate([v.labels() for v in parts]))
    kind = "num" if "num" in ks else "lgl"
    return Vec(kind, np.concatenate([v.data for v in parts]).astype(np.float64))


# ---- relevel, ifelse, cut, scale ------------------------------------------------------------

def _relevel_levels(call: Call, levels: tuple) -> tuple:
    """R's ``relevel``: the ``ref`` level (a label, or a 1-based position) moved first."""
    ref = literal_values(_bind(call)["ref"])
    if len(ref) != 1 or isinstance(ref[0], bool):
        raise ValueError(f"formula: {deparse(call)}: ref must be one level, e.g. ref = \"b\"")
    ref = ref[0]
    if isinstance(ref, str):
        if ref not in levels:
            raise ValueError(f"formula: {deparse(call)}: ref level {ref!r} is not among the "
                             f"levels {list(levels)}")
        i = levels.index(ref)
    else:
        if not float(ref).is_integer() or not 1 <= ref <= len(levels):
            raise ValueError(f"formula: {deparse(call)}: ref = {ref} is not a level position "
                             f"1..{len(levels)} (levels: {list(levels)})")
        i = int(ref) - 1
    return (levels[i],) + levels[:i] + levels[i + 1:]


def _kind_relevel(call, kinds, book):
    x = kinds["x"]
    if x.kind not in ("fct", "chr"):
        raise ValueError(f"formula: {deparse(call)}: relevel() needs a factor, but its argument "
                         f"is {_KIND_WORDS[x.kind]}")
    if x.levels is None:
        if not book.learn:
            raise ValueError(undeclared_message(x.key or deparse(call), book.why, book.hint))
        return Kind("fct", deparse(call), None)
    return Kind("fct", deparse(call), _relevel_levels(call, tuple(x.levels)))


def _run_relevel(call, args, book):
    x = args["x"]
    if x.kind == "chr":
        key = level_key(_bind(call)["x"])
        x = match_levels(x, book.resolve(key, x), key, strict=True)
    elif x.kind != "fct":
        raise ValueError(f"formula: {deparse(call)}: relevel() needs a factor, but its argument "
                         f"is {_KIND_WORDS[x.kind]}")
    return match_levels(x, _relevel_levels(call, tuple(x.levels)), deparse(call), strict=True)


def _kind_ifelse(call, kinds, book):
    _need_numeric(kinds["test"], call, "ifelse")
    yes, no = kinds["yes"], kinds["no"]
    _ifelse_kinds(call, yes.kind, no.kind)
    if yes.kind == "chr":
        key = deparse(call)
        return Kind("chr", key, book.get(key))
    return Kind("lgl" if yes.kind == no.kind == "lgl" else "num")


def _ifelse_kinds(call: Call, yes: str, no: str) -> None:
    if "fct" in (yes, no):
        raise ValueError(f"formula: {deparse(call)}: ifelse() of a factor gives its integer codes "
                         "in R; write as.character(f) (labels) or as.numeric(f) (codes)")
    if ("chr" in (yes, no)) and yes != no:
        raise ValueError(f"formula: {deparse(call)}: ifelse() mixes text and numbers; give both "
                         "branches the same kind")


def _run_ifelse(call, args, book):
    test, yes, no = args["test"], args["yes"], args["no"]
    _check_numeric(test, call, "ifelse")
    _ifelse_kinds(call, yes.kind, no.kind)
    n = max(len(test), len(yes), len(no))
    for v in (test, yes, no):
        if len(v) not in (1, n):
            raise ValueError(f"formula: {deparse(call)}: arguments of lengths {len(test)}, "
                             f"{len(yes)} and {len(no)} (only a single value is recycled)")
    t = _recycle(test.data, n)
    na = np.isnan(t)
    if yes.kind == "chr":
        out = np.where(t != 0, _recycle(yes.data, n), _recycle(no.data, n)).astype(object)
        out[na] = None
        return Vec("chr", out)
    out = np.where(t != 0, _recycle(yes.data, n), _recycle(no.data, n)).astype(np.float64)
    out[na] = np.nan
    return Vec("lgl" if yes.kind == no.kind == "lgl" else "num", out)


def _literal_flag(bound: dict, name: str, default: bool, call: Call) -> bool:
    if name not in bound:
        return default
    v = literal_values(bound[name])
    if len(v) != 1 or not isinstance(v[0], bool):
        raise ValueError(f"formula: {deparse(call)}: {name} must be TRUE or FALSE")
    return v[0]


def _numbers(node: Node, call: Call, name: str) -> list:
    vals = literal_values(node)
    if not vals or any(isinstance(v, (bool, str)) or not math.isfinite(v) for v in vals):
        raise ValueError(f"formula: {deparse(call)}: {name} must be finite numbers, e.g. "
                         f"{name} = c(0, 10, 20)")
    return [float(v) for v in vals]


@dataclass(frozen=True)
class _Cut:
    breaks: tuple | None        # None: a number of intervals, breaks learned from the rows
    intervals: int
    labels: tuple | bool | None
    right: bool
    include_lowest: bool
    dig: int


def _cut_options(call: Call) -> _Cut:
    b = _bind(call)
    breaks = _numbers(b["breaks"], call, "breaks")
    if len(breaks) == 1:
        k = breaks[0]
        if not k.is_integer() or k < 2 or k > MAX_INTERVALS:
            raise ValueError(f"formula: {deparse(call)}: a number of intervals must be a whole "
                             f"number from 2 to {MAX_INTERVALS} (or give breaks = c(...))")
        fixed, k = None, int(k)
    else:
        fixed = tuple(sorted(breaks))
        if len(set(fixed)) != len(fixed):
            raise ValueError(f"formula: {deparse(call)}: 'breaks' are not unique")
        k = len(fixed) - 1
    labels: bool | tuple | None = None
    if "labels" in b:
        vals = literal_values(b["labels"])
        if vals == [False]:
            labels = False
        elif len(vals) != k or not all(isinstance(v, str) for v in vals) or \
                len(set(vals)) != k:
            raise ValueError(f"formula: {deparse(call)}: labels must be {k} distinct strings "
                             "(one per interval) or FALSE")
        else:
            labels = tuple(vals)
    dig = 3
    if "dig.lab" in b:
        d = _numbers(b["dig.lab"], call, "dig.lab")
        if len(d) != 1 or not d[0].is_integer() or not 1 <= d[0] <= 12:
            raise ValueError(f"formula: {deparse(call)}: dig.lab must be a whole number 1..12")
        dig = int(d[0])
    return _Cut(fixed, k, labels, _literal_flag(b, "right", True, call),
                _literal_flag(b, "include.lowest", False, call), dig)


#: Most intervals ``cut(x, k)`` may ask for.
MAX_INTERVALS = 10_000
_CUT_WHAT = "the breaks of cut() with a number of intervals (from the range of the data)"
_CUT_FIX = "explicit breaks, cut(x, breaks = c(...)), from " + _BOUNDS_FIX


def _cut_labels(breaks: tuple, opt: _Cut) -> tuple:
    """R's default labels of ``cut``: the breaks as ``formatC(digits = d)`` (``%.dg``) with the
    fewest digits from ``dig.lab`` on that tells neighbours apart, as ``(a,b]``."""
    for d in range(opt.dig, max(12, opt.dig) + 1):
        ch = ["%.*g" % (d, b + 0.0) for b in breaks]
        if all(ch[i] != ch[i + 1] for i in range(len(ch) - 1)):
            break
    left, right = ("(", "]") if opt.right else ("[", ")")
    labels = [f"{left}{ch[i]},{ch[i + 1]}{right}" for i in range(len(ch) - 1)]
    if opt.include_lowest:
        if opt.right:
            labels[0] = "[" + labels[0][1:]
        else:
            labels[-1] = labels[-1][:-1] + "]"
    return tuple(labels)


def _cut_breaks(x: np.ndarray, k: int) -> list:
    """R's breaks for ``cut(x, k)``: ``k`` equal intervals over the range, widened by 1/1000 of
    it at both ends (R's ``cut.default``; ``seq.int`` filled from both ends as R does)."""
    x = x[~np.isnan(x)]
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError("formula: cut(x, k) needs finite values of x to find its range")
    lo, hi = float(x.min()), float(x.max())
    dx = hi - lo
    nb = k + 1
    if dx == 0:
        dx = abs(lo) if lo != 0 else 1.0
        lo, hi = lo - dx / 1000, hi + dx / 1000
        return _seq(lo, hi, nb)
    out = _seq(lo, hi, nb)
    out[0], out[-1] = lo - dx / 1000, hi + dx / 1000
    return out


def _seq(a: float, b: float, n: int) -> list:
    by = (b - a) / (n - 1)
    return [a] + [a + i * by if i < n // 2 else b - (n - 1 - i) * by
                  for i in range(1, n - 1)] + [b]


def _kind_cut(call, kinds, book):
    _need_numeric(kinds["x"], call, "cut")
    opt = _cut_options(call)
    key = deparse(call)
    if opt.labels is False:
        if opt.breaks is None:
            book.can_learn(key, _CUT_WHAT, _CUT_FIX)
        return Kind("num")
    breaks = opt.breaks
    if breaks is None:
        book.can_learn(key, _CUT_WHAT, _CUT_FIX)
        if key not in book.params:
            return Kind("fct", key, None)
        breaks = tuple(book.params[key])
    return Kind("fct", key, opt.labels if isinstance(opt.labels, tuple) else
                _cut_labels(breaks, opt))


def _run_cut(call, args, book):
    x = _num(args["x"])
    opt = _cut_options(call)
    breaks = opt.breaks
    if breaks is None:
        breaks = tuple(book.learned_params(deparse(call), lambda: _cut_breaks(x, opt.intervals),
                                           _CUT_WHAT, _CUT_FIX))
        if len(breaks) != opt.intervals + 1:
            raise ValueError(f"formula: {deparse(call)}: the model stores {len(breaks)} breaks "
                             f"for {opt.intervals} intervals")
    b = np.asarray(breaks)
    j = np.searchsorted(b, x, side="left" if opt.right else "right")
    codes = np.where((j >= 1) & (j <= len(b) - 1), j - 1, -1)
    if opt.include_lowest:
        edge, at = (0, b[0]) if opt.right else (len(b) - 2, b[-1])
        codes = np.where(x == at, edge, codes)
    codes[np.isnan(x)] = -1
    if opt.labels is False:
        return Vec("num", np.where(codes >= 0, codes + 1.0, np.nan))
    return Vec("fct", codes.astype(np.int64), opt.labels or _cut_labels(breaks, opt))


_SCALE_WHAT = "the centre and scale of scale() (the mean and standard deviation)"
_SCALE_FIX = ("scale(x, center = c0, scale = s0) with public numbers, or " + _BOUNDS_FIX)


def _scale_options(call: Call) -> tuple:
    b = _bind(call)
    out = []
    for name in ("center", "scale"):
        if name not in b:
            out.append(True)
            continue
        v = literal_values(b[name])
        if len(v) == 1 and isinstance(v[0], bool):
            out.append(v[0])
            continue
        num = _numbers(b[name], call, name)
        if len(num) != 1 or (name == "scale" and num[0] == 0):
            raise ValueError(f"formula: {deparse(call)}: {name} must be TRUE, FALSE or one "
                             f"{'non-zero ' if name == 'scale' else ''}number")
        out.append(num[0])
    return tuple(out)


def _scale_fit(x: np.ndarray, center, scale, call: Call) -> list:
    """R's ``scale.default``: centre by the mean (or the given number), then divide by the
    root mean square ``sqrt(sum(v^2) / (n - 1))`` of the centred values (the sd)."""
    v = x[~np.isnan(x)]
    if v.size == 0 or not np.isfinite(v).all():
        raise ValueError(f"formula: {deparse(call)}: needs finite values to compute its centre "
                         "and scale")
    c = float(v.mean()) if center is True else (0.0 if center is False else center)
    if scale is True:
        s = math.sqrt(float(np.sum((v - c) ** 2)) / max(1, v.size - 1))
        if not s > 0 or not math.isfinite(s):
            raise ValueError(f"formula: {deparse(call)}: the values have no spread (scale 0)")
    else:
        s = 1.0 if scale is False else scale
    return [c, s]


def _kind_scale(call, kinds, book):
    _need_numeric(kinds["x"], call, "scale")
    center, scale = _scale_options(call)
    if center is True or scale is True:
        book.can_learn(deparse(call), _SCALE_WHAT, _SCALE_FIX)
    return Kind("num")


def _run_scale(call, args, book):
    x = _num(args["x"])
    center, scale = _scale_options(call)
    if center is True or scale is True:
        c, s = book.learned_params(deparse(call), lambda: _scale_fit(x, center, scale, call),
                                   _SCALE_WHAT, _SCALE_FIX)
    else:
        c, s = (0.0 if center is False else center), (1.0 if scale is False else scale)
    return Vec("num", (x - c) / s)


def stored_params_problem(call: Call, values: list) -> str | None:
    """What is wrong with ``values`` as the numbers a model stores for ``call`` (learned from
    the rows by ``cut(x, k)`` or ``scale(x)``), or None: the breaks must be ``k + 1`` finite,
    strictly increasing numbers; ``scale``'s ``[center, scale]`` finite with ``scale > 0``, and
    equal to the numbers the call gives itself (``center = 2``, ``scale = FALSE``)."""
    if call.fn == "cut":
        opt = _cut_options(call)
        if opt.breaks is not None:
            return "cut() with explicit breaks learns nothing"
        if len(values) != opt.intervals + 1:
            return f"{opt.intervals} intervals need {opt.intervals + 1} breaks"
        if not all(math.isfinite(v) for v in values) or \
                not all(a < b for a, b in zip(values, values[1:])):
            return "the breaks must be finite and strictly increasing"
        return None
    center, scale = _scale_options(call)
    if center is not True and scale is not True:
        return "scale() with a given centre and scale learns nothing"
    if len(values) != 2 or not all(math.isfinite(v) for v in values) or not values[1] > 0:
        return "[center, scale] must be two finite numbers, the scale above 0"
    given = (0.0 if center is False else center, 1.0 if scale is False else scale)
    for v, g, what in zip(values, given, ("center", "scale")):
        if g is not True and v != g:
            return f"the {what} is given in the formula ({g}) but stored as {v}"
    return None


def _poly_elsewhere(call, *args):
    raise ValueError(f"formula: {deparse(call)}: poly() gives several columns, so it must be a "
                     "term of its own (y ~ poly(x, 2) + z, or poly(x, 2):z), not inside another "
                     "call")


def _offset_elsewhere(call, *args):
    raise ValueError(f"formula: {deparse(call)} must be a term of its own, added at the top "
                     "level of the formula (y ~ x + offset(log(t)))")


#: The functions that may learn something from the rows (levels or numbers) when allowed.
LEARNING_FUNCTIONS = frozenset({"factor", "as.factor", "relevel", "cut", "scale"})


FUNCTIONS: dict[str, Function] = {
    "I": Function(("x",), 1, lambda call, k, book: k["x"], lambda call, a, book: a["x"]),
    "log": Function(("x", "base"), 1, _numeric_kind("log"), _run_log),
    "round": Function(("x", "digits"), 1, _numeric_kind("round"), _run_round),
    "signif": Function(("x", "digits"), 1, _numeric_kind("signif"), _run_round),
    "pmin": Function(("na.rm",), 1, _numeric_kind("pmin"), _run_pminmax("min"), varargs=True),
    "pmax": Function(("na.rm",), 1, _numeric_kind("pmax"), _run_pminmax("max"), varargs=True),
    "factor": Function(("x", "levels"), 1, _kind_factor, _run_factor, literal=("levels",)),
    "as.factor": Function(("x",), 1, _kind_factor, _run_factor),
    "as.numeric": Function(("x",), 1, lambda call, k, book: Kind("num"), _run_as_numeric),
    "as.double": Function(("x",), 1, lambda call, k, book: Kind("num"), _run_as_numeric),
    "as.integer": Function(("x",), 1, lambda call, k, book: Kind("num"), _run_as_numeric),
    "as.character": Function(("x",), 1, _kind_as_character, _run_as_character),
    "c": Function((), 0, _kind_c, _run_c, varargs=True),
    "relevel": Function(("x", "ref"), 2, _kind_relevel, _run_relevel, literal=("ref",)),
    "ifelse": Function(("test", "yes", "no"), 3, _kind_ifelse, _run_ifelse),
    "cut": Function(("x", "breaks", "labels", "include.lowest", "right", "dig.lab"), 2,
                    _kind_cut, _run_cut,
                    literal=("breaks", "labels", "include.lowest", "right", "dig.lab")),
    "scale": Function(("x", "center", "scale"), 1, _kind_scale, _run_scale,
                      literal=("center", "scale")),
    # a term of its own (privatelr.design.poly); inside another call it is refused
    "poly": Function(("x", "degree", "raw"), 1, _poly_elsewhere, _poly_elsewhere,
                     literal=("degree", "raw")),
    # a term of its own (privatelr.design.algebra.split_offsets); inside a call it is refused
    "offset": Function(("object",), 1, _offset_elsewhere, _offset_elsewhere),
}
for _name, _ufunc in {"exp": np.exp, "sqrt": np.sqrt, "abs": np.abs, "log2": np.log2,
                      "log10": np.log10, "log1p": np.log1p, "expm1": np.expm1, "sin": np.sin,
                      "cos": np.cos, "tan": np.tan, "floor": np.floor, "ceiling": np.ceil,
                      "trunc": np.trunc, "sign": np.sign}.items():
    FUNCTIONS[_name] = Function(("x",), 1, _numeric_kind(_name), _math(_ufunc))
del _name, _ufunc


def _bind(call: Call) -> dict:
    """R's argument matching (exact names, then positions): parameter -> node (``...`` -> list)."""
    fn = FUNCTIONS.get(call.fn)
    if fn is None:
        raise ValueError(f"formula: function {call.fn}() is not supported; supported: "
                         f"{', '.join(sorted(set(FUNCTIONS) - {'offset'}))} (compute the "
                         "column in the data frame first)")
    bound: dict = {}
    dots: list = []
    positional = [p for p in fn.params]
    for arg in call.args:
        if arg.name is not None:
            if arg.name not in fn.params:
                accepted = ", ".join(fn.params) + (", ..." if fn.varargs else "")
                raise ValueError(f"formula: {call.fn}() has no argument {arg.name!r} "
                                 f"(accepted: {accepted or 'values only'})")
            if arg.name in bound:
                raise ValueError(f"formula: argument {arg.name!r} given twice in "
                                 f"{deparse(call)}")
            bound[arg.name] = arg.value
    for arg in call.args:
        if arg.name is not None:
            continue
        if fn.varargs:
            dots.append(arg.value)
            continue
        free = [p for p in positional if p not in bound]
        if not free:
            raise ValueError(f"formula: {deparse(call)} has too many arguments "
                             f"({call.fn}() takes {', '.join(fn.params)})")
        bound[free[0]] = arg.value
    if fn.varargs:
        if len(dots) < fn.required:
            raise ValueError(f"formula: {deparse(call)} needs at least {fn.required} value(s)")
        bound["..."] = dots
    else:
        missing = [p for p in fn.params[:fn.required] if p not in bound]
        if missing:
            raise ValueError(f"formula: {deparse(call)} lacks its argument {missing[0]!r}")
    for p in fn.literal:
        if p in bound:
            literal_values(bound[p])            # raises when not a literal
    return bound


def bind_arguments(call: Call) -> dict:
    """R's argument matching of a whitelisted call: parameter -> node (``...`` -> list).

    Examples
    --------
    >>> from privatelr.design.rsyntax import parse
    >>> sorted(bind_arguments(parse("cut(x, c(0, 1), right = FALSE)")))
    ['breaks', 'right', 'x']
    """
    return _bind(call)


def _arg(call: Call, name: str) -> Node:
    return _bind(call)[name]


def literal_values(node: Node) -> list:
    """The values of a literal: a number, string, ``TRUE``/``FALSE``, a negated number, or
    ``c(...)`` of those (what ``levels =`` and ``%in%`` tables may be written as)."""
    while isinstance(node, Paren):
        node = node.body
    if isinstance(node, Num):
        v = number_value(node)
        return [int(v) if v.is_integer() and abs(v) < 2 ** 53 else v]
    if isinstance(node, Str):
        return [node.value]
    if isinstance(node, Const) and node.id in ("TRUE", "FALSE"):
        return [node.id == "TRUE"]
    if isinstance(node, Unary) and node.op in ("-", "+") and isinstance(node.operand, Num):
        v = number_value(node.operand)
        v = -v if node.op == "-" else v
        return [int(v) if float(v).is_integer() and abs(v) < 2 ** 53 else v]
    if isinstance(node, Call) and node.fn == "c" and all(a.name is None for a in node.args):
        out = []
        for a in node.args:
            out.extend(literal_values(a.value))
        return out
    raise ValueError(f"formula: {deparse(node)} must be written as literal values, e.g. "
                     "c(\"a\", \"b\") or c(4, 6, 8)")


# ---------------------------------------------------------------------------------------------
# static kinds
# ---------------------------------------------------------------------------------------------

def infer(node: Node, types: Mapping[str, str], book: LevelBook) -> Kind:
    """The kind of ``node`` from the column kinds ``types`` (``num``/``lgl``/``chr``/``fct``)
    and the level book, without reading data. Raises ``ValueError`` for unknown names or
    functions, wrong arguments and kind errors (e.g. ``log`` of a string)."""
    if isinstance(node, Num):
        return Kind("num")
    if isinstance(node, Str):
        return Kind("chr", deparse(node), (node.value,))
    if isinstance(node, Const):
        return Kind("lgl" if node.id in ("TRUE", "FALSE", "NA") else "num")
    if isinstance(node, Name):
        if node.id in types:
            kind = types[node.id]
            if kind in ("chr", "fct", "num"):      # a numeric column may have declared levels
                return Kind(kind, node.id, book.get(node.id))
            return Kind(kind)
        if node.id in NAMED_CONSTANTS:
            return Kind(NAMED_CONSTANTS[node.id][0])
        raise KeyError(node.id)
    if isinstance(node, Dot):
        raise ValueError("formula: '.' can only stand for a sum of terms, not inside a call")
    if isinstance(node, Paren):
        return infer(node.body, types, book)
    if isinstance(node, Unary):
        k = infer(node.operand, types, book)
        if node.op == "~":
            raise ValueError("formula: '~' can appear only once, between response and terms")
        _need_numeric(k, node, node.op)
        return Kind("lgl" if node.op == "!" else "num")
    if isinstance(node, Binary):
        if node.op == "~":
            raise ValueError("formula: '~' can appear only once, between response and terms")
        left, right = infer(node.left, types, book), infer(node.right, types, book)
        if node.op == "^":
            _need_numeric(left, node, "^")
            _need_numeric(right, node, "^")
            return Kind("num")
        _check_comparison(node.op, left, right, node)
        return Kind("lgl")
    if isinstance(node, Chain):
        operand_kinds = [infer(o, types, book) for o in node.operands]
        acc = operand_kinds[0]
        for op, k in zip(node.ops, operand_kinds[1:]):
            acc = _infer_binary(op, acc, k, node)
        return acc
    if isinstance(node, Call):
        bound = _bind(node)                 # refuses a function that is not whitelisted
        fn = FUNCTIONS[node.fn]
        kinds: dict[str, Any] = {}
        for p, v in bound.items():
            if p in fn.literal:
                continue
            kinds[p] = [infer(x, types, book) for x in v] if p == "..." else infer(v, types, book)
        if "levels" in bound:
            kinds["levels"] = Kind("chr")
        return fn.kind(node, kinds, book)
    raise TypeError(f"not a formula node: {node!r}")


def _need_numeric(k: Kind, node: Node, op: str) -> None:
    if k.kind not in ("num", "lgl"):
        raise ValueError(f"formula: {deparse(node)}: '{op}' needs numbers or logicals, but an "
                         f"operand is {_KIND_WORDS[k.kind]}")


def _check_comparison(op: str, left: Kind, right: Kind, node: Node) -> None:
    textual = {left.kind, right.kind} & {"chr", "fct"}
    if op in _ORDERING and textual:
        raise ValueError(f"formula: {deparse(node)}: '{op}' on strings or factors is not "
                         "supported (R orders strings by locale and calls factor order 'not "
                         "meaningful'); compare with ==, != or %in%")


def _infer_binary(op: str, a: Kind, b: Kind, node: Node) -> Kind:
    if op in ("&&", "||"):
        raise ValueError(f"formula: {deparse(node)}: '{op}' needs length-one operands in R; "
                         f"use '{op[0]}' for element-wise logic")
    if op in ("&", "|"):
        _need_numeric(a, node, op)
        _need_numeric(b, node, op)
        return Kind("lgl")
    if op == "%in%":
        return Kind("lgl")
    if op == ":":
        raise ValueError(f"formula: {deparse(node)}: ':' inside a function call is R's sequence "
                         "operator, which a model term cannot use (write the interaction "
                         "outside the call)")
    if op in ("+", "-", "*", "/", "%%", "%/%"):
        _need_numeric(a, node, op)
        _need_numeric(b, node, op)
        return Kind("num")
    raise ValueError(f"formula: operator {op!r} is not supported inside a term "
                     f"({deparse(node)})")


# ---------------------------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------------------------

def evaluate(node: Node, columns: Columns, book: LevelBook | None = None) -> Vec:
    """The value of ``node`` on ``columns`` (a length-1 result is a scalar to recycle).

    Unknown names raise ``KeyError(name)``; every other problem is a ``ValueError``.
    """
    book = LevelBook(learn=True) if book is None else book
    with np.errstate(all="ignore"):
        return _eval(node, columns, book)


def _eval(node: Node, cols: Columns, book: LevelBook) -> Vec:
    if isinstance(node, Num):
        return Vec("num", np.array([number_value(node)]))
    if isinstance(node, Str):
        return Vec("chr", np.array([node.value], dtype=object))
    if isinstance(node, Const):
        const = {"TRUE": ("lgl", 1.0), "FALSE": ("lgl", 0.0), "NA": ("lgl", np.nan),
                 "Inf": ("num", np.inf), "NaN": ("num", np.nan)}[node.id]
        return Vec(const[0], np.array([const[1]]))
    if isinstance(node, Name):
        if node.id in cols:
            vec = cols.get(node.id)
            if vec.kind == "fct":
                levels = book.resolve(node.id, vec)
                return match_levels(vec, levels, node.id, strict=True)
            return vec
        if node.id in NAMED_CONSTANTS:
            kind, value = NAMED_CONSTANTS[node.id]
            return Vec(kind, np.array([value]))
        raise KeyError(node.id)
    if isinstance(node, Paren):
        return _eval(node.body, cols, book)
    if isinstance(node, Unary):
        x = _eval(node.operand, cols, book)
        if node.op == "~":
            raise ValueError("formula: '~' can appear only once, between response and terms")
        _check_numeric(x, node, node.op)
        if node.op == "!":
            return Vec("lgl", np.where(np.isnan(x.data), np.nan, (x.data == 0).astype(float)))
        return Vec("num", -x.data if node.op == "-" else x.data.astype(np.float64))
    if isinstance(node, Binary):
        if node.op == "~":
            raise ValueError("formula: '~' can appear only once, between response and terms")
        a, b = _eval(node.left, cols, book), _eval(node.right, cols, book)
        if node.op == "^":
            _check_numeric(a, node, "^")
            _check_numeric(b, node, "^")
            a_, b_ = _align(a.data, b.data, node)
            return Vec("num", np.power(a_, b_))
        return _compare(node.op, a, b, node)
    if isinstance(node, Chain):
        acc = _eval(node.operands[0], cols, book)
        for op, operand in zip(node.ops, node.operands[1:]):
            acc = _apply(op, acc, _eval(operand, cols, book), node)
        return acc
    if isinstance(node, Call):
        bound = _bind(node)                 # refuses a function that is not whitelisted
        fn = FUNCTIONS[node.fn]
        args: dict[str, Any] = {}
        for p, v in bound.items():
            if p in fn.literal:
                args[p] = None
                continue
            args[p] = [_eval(x, cols, book) for x in v] if p == "..." else _eval(v, cols, book)
        return fn.run(node, args, book)
    if isinstance(node, Dot):
        raise ValueError("formula: '.' can only stand for a sum of terms, not inside a call")
    raise TypeError(f"not a formula node: {node!r}")


def _check_numeric(x: Vec, node: Node, op: str) -> None:
    if x.kind not in ("num", "lgl"):
        raise ValueError(f"formula: {deparse(node)}: '{op}' needs numbers or logicals, but an "
                         f"operand is {_KIND_WORDS[x.kind]}")


def _align(a: np.ndarray, b: np.ndarray, node: Node):
    if len(a) == len(b) or len(b) == 1 or len(a) == 1:
        return a, b
    raise ValueError(f"formula: {deparse(node)}: operands of lengths {len(a)} and {len(b)} "
                     "(only a single value is recycled)")


def _recycle(x: np.ndarray, n: int) -> np.ndarray:
    return np.broadcast_to(x, (n,)) if len(x) == 1 else x


def _num(v: Vec) -> np.ndarray:
    if v.kind not in ("num", "lgl"):
        raise ValueError(f"formula: a numeric argument is {_KIND_WORDS[v.kind]}")
    return v.data


def _scalar_number(v: Vec, call: Call, what: str) -> float:
    if v.kind not in ("num", "lgl") or len(v) != 1 or np.isnan(v.data[0]):
        raise ValueError(f"formula: {deparse(call)}: {what} must be one number")
    return float(v.data[0])


def _logical(v: Vec, node: Node, op: str) -> np.ndarray:
    _check_numeric(v, node, op)
    d = v.data
    return np.where(np.isnan(d), np.nan, (d != 0).astype(np.float64))


def _apply(op: str, a: Vec, b: Vec, node: Node) -> Vec:
    _infer_binary(op, Kind(a.kind), Kind(b.kind), node)    # the same kind rules as infer()
    if op == "%in%":
        return _in(a, b)
    if op in ("&", "|"):
        x, y = _align(_logical(a, node, op), _logical(b, node, op), node)
        if op == "&":
            out = np.where((x == 0) | (y == 0), 0.0,
                           np.where(np.isnan(x) | np.isnan(y), np.nan, 1.0))
        else:
            out = np.where((x == 1) | (y == 1), 1.0,
                           np.where(np.isnan(x) | np.isnan(y), np.nan, 0.0))
        return Vec("lgl", out)
    x, y = _align(a.data, b.data, node)
    if op == "+":
        out = x + y
    elif op == "-":
        out = x - y
    elif op == "*":
        out = x * y
    elif op == "/":
        out = x / y
    elif op == "%%":
        out = x - np.floor(x / y) * y
        out = np.where(np.isinf(y) & np.isfinite(x), np.where((x == 0) | (np.sign(x) == np.sign(y)),
                                                              x, y), out)
    else:  # %/%
        out = np.floor(x / y)
    return Vec("num", np.asarray(out, dtype=np.float64))


def _compare(op: str, a: Vec, b: Vec, node: Node) -> Vec:
    _check_comparison(op, Kind(a.kind), Kind(b.kind), node)
    if {a.kind, b.kind} & {"chr", "fct"}:
        x, y = _align(a.labels(), b.labels(), node)
        n = max(len(x), len(y))
        x, y = _recycle(x, n), _recycle(y, n)
        miss = np.fromiter((u is None or v is None for u, v in zip(x, y)), bool, count=n)
        eq = np.fromiter((u == v for u, v in zip(x, y)), bool, count=n).astype(np.float64)
        out = eq if op == "==" else 1.0 - eq
        out[miss] = np.nan
        return Vec("lgl", out)
    x, y = _align(a.data, b.data, node)
    fn = {"==": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater,
          "<=": np.less_equal, ">=": np.greater_equal}[op]
    out = fn(x, y).astype(np.float64)
    out[np.broadcast_to(np.isnan(x), out.shape) | np.broadcast_to(np.isnan(y), out.shape)] = np.nan
    return Vec("lgl", out)


def _in(a: Vec, table: Vec) -> Vec:
    if {a.kind, table.kind} & {"chr", "fct"}:
        keys = set(table.labels().tolist())
        labels = a.labels()
        out = np.fromiter((v in keys for v in labels), bool, count=len(labels))
        return Vec("lgl", out.astype(np.float64))
    t = table.data
    out = np.isin(a.data, t[~np.isnan(t)])
    if np.isnan(t).any():
        out |= np.isnan(a.data)
    return Vec("lgl", out.astype(np.float64))


def match_levels(x: Vec, levels: tuple, key: str, *, strict: bool) -> Vec:
    """``x`` as a factor with exactly ``levels``, matched by label. A value outside them is an
    error when ``strict`` (a level the model does not know), NA otherwise (R's
    ``factor(x, levels = ...)``)."""
    if x.kind == "fct" and tuple(x.levels) == tuple(levels):
        return x
    index = {lv: i for i, lv in enumerate(levels)}
    if x.kind == "fct":
        have, present = x.levels, x.data
    else:
        present, uniq = (x.coded if x.kind == "chr" and x.coded is not None else
                         pd.factorize(x.labels(), use_na_sentinel=True))
        have = uniq.tolist()
    # each present code's level position (-2: unknown); a missing value's code, -1, takes the
    # table's last entry, -1
    table = np.array([index.get(lv, -2) for lv in have] + [-1], dtype=np.int64)
    codes = table.take(present)
    unknown = codes == -2
    if unknown.any():
        if strict:
            seen = sorted(set(x.labels()[unknown].tolist()))
            raise ValueError(f"{key!r} has value(s) {seen[:10]} outside its levels "
                             f"{list(levels)}; declare every level up front (a model cannot "
                             "score a level it was not fitted with)")
        codes[unknown] = -1
    return Vec("fct", codes, tuple(levels))
