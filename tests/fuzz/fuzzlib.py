"""Strategies and checks shared by the fuzz tests (``tests/fuzz/test_fuzz_*.py``).

* :func:`examples` — the per-test example budget (``PRIVATELR_FUZZ=long`` multiplies it);
* :func:`clean_call` — run a call under the suite's warning rules and return its result or the
  allowed exception, re-raising anything else (which Hypothesis then shrinks and reports);
* frame strategies: columns of every kind the design layer reads (numbers, booleans, strings,
  Categoricals, datetimes, object columns of mixed kinds, NaN/inf, empty and one-row frames);
* :func:`formula_texts` — R formula text from a grammar: existing and missing columns,
  backquoted odd names, numbers, strings, every R operator, supported and unsupported calls
  with named/positional arguments, ``.``, nesting and ``~`` in odd places;
* :func:`check_probabilities` — the output contract of ``predict``.
"""

from __future__ import annotations

import math
import os
import warnings
from contextlib import contextmanager

import numpy as np
import pandas as pd
from hypothesis import strategies as st

#: ``PRIVATELR_FUZZ=long``: 20 times more examples, random seeds (see conftest.py).
SCALE = 20 if os.environ.get("PRIVATELR_FUZZ") == "long" else 1

#: What a public entry point may raise for bad input (with a message that says what is wrong).
ALLOWED = (ValueError, TypeError, KeyError)


def examples(n: int) -> int:
    """``max_examples`` for a test: ``n`` in CI, ``20 n`` with ``PRIVATELR_FUZZ=long``."""
    return n * SCALE


@contextmanager
def warning_rules():
    """The suite's warning rules: ``RuntimeWarning`` (overflow, division by zero, invalid value
    escaping into the result) is an error, as in ``pyproject.toml``; the package's own
    ``UserWarning``/``PrivacyWarning`` notes on legitimate input are expected and ignored."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("error", RuntimeWarning)
        yield


def clean_call(fn, *, allowed=ALLOWED):
    """``(result, None)`` or ``(None, exc)`` for an allowed exception with a non-empty message.

    Any other exception propagates (a fuzz failure). ``KeyError``'s message is its key's repr.
    """
    with warning_rules():
        try:
            return fn(), None
        except allowed as exc:
            msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            assert msg.strip(), f"{type(exc).__name__} with an empty message"
            return None, exc


# ---------------------------------------------------------------------------------------------
# data frames
# ---------------------------------------------------------------------------------------------

#: Column names the formula grammar uses; the frame strategy gives each a kind.
PLAIN_NAMES = ("a", "b", "s", "f", "l", "t", "m", "y")
ODD_NAMES = ("odd name", "x.1", "_u", "1st", "a+b", "TRUE", "T", "pi", "é", "if")
MISSING_NAMES = ("zz", "nope", "Y")

_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
_SMALL = st.floats(min_value=-0.5, max_value=0.5, allow_nan=False, allow_infinity=False)
_LEVEL_TEXT = st.sampled_from(["p", "q", "r", "01", "1", "", " ", "NA", "a,b", "é", "TRUE"])


def _numeric_column(n, *, nasty):
    if nasty:
        return st.lists(st.one_of(_SMALL, _FLOATS, st.sampled_from([0.0, 1.0, 1e300, -1e-320])),
                        min_size=n, max_size=n).map(lambda v: np.array(v, dtype=np.float64))
    return st.lists(_SMALL, min_size=n, max_size=n).map(lambda v: np.array(v, dtype=np.float64))


def column(kind: str, n: int, *, nasty: bool = True):
    """A strategy for a column of ``n`` values of the given kind."""
    if kind == "num":
        return _numeric_column(n, nasty=nasty)
    if kind == "int":
        return st.lists(st.integers(-3, 3), min_size=n, max_size=n).map(
            lambda v: np.array(v, dtype=np.int64))
    if kind == "y01":
        return st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n).map(
            lambda v: np.array(v, dtype=np.int64))
    if kind == "bool":
        return st.lists(st.booleans(), min_size=n, max_size=n).map(
            lambda v: np.array(v, dtype=bool))
    if kind == "str":
        vals = st.one_of(_LEVEL_TEXT, st.none()) if nasty else st.sampled_from(["p", "q", "r"])
        return st.lists(vals, min_size=n, max_size=n).map(
            lambda v: pd.Series(v, dtype=object))
    if kind == "strdtype":          # pandas' string dtype (what read_csv gives in pandas 3)
        vals = st.one_of(_LEVEL_TEXT, st.none()) if nasty else st.sampled_from(["p", "q", "r"])
        return st.lists(vals, min_size=n, max_size=n).map(lambda v: pd.Series(v, dtype="string"))
    if kind == "cat":
        return st.lists(st.sampled_from(["p", "q", "r", None]), min_size=n, max_size=n).map(
            lambda v: pd.Categorical(v, categories=["p", "q", "r"]))
    if kind == "date":
        return st.lists(st.one_of(st.integers(0, 10**6), st.none()), min_size=n, max_size=n).map(
            lambda v: pd.to_datetime(pd.Series(v, dtype="Int64") * 86400, unit="s",
                                     utc=True))
    if kind == "mixed":
        vals = st.one_of(st.booleans(), st.integers(-2, 2), st.sampled_from(["1", "x", None]),
                         st.floats(allow_nan=True), st.just(10**400))
        return st.lists(vals, min_size=n, max_size=n).map(lambda v: pd.Series(v, dtype=object))
    raise ValueError(kind)


KINDS = ("num", "int", "y01", "bool", "str", "strdtype", "cat", "date", "mixed")


@st.composite
def frames(draw, *, min_rows: int = 0, max_rows: int = 8, names=None, nasty: bool = True):
    """A DataFrame with columns of random kinds under the names of the grammar (and a few odd
    names); ``min_rows`` to ``max_rows`` rows (an empty frame one time in ten)."""
    n = draw(st.integers(max(min_rows, 1), max_rows))
    if min_rows == 0 and draw(st.integers(0, 9)) == 0:
        n = 0
    if names is None:
        names = draw(st.lists(st.sampled_from(PLAIN_NAMES + ODD_NAMES), min_size=1, max_size=6,
                              unique=True))
    data = {}
    for name in names:
        kind = draw(st.sampled_from(KINDS if nasty else ("num", "int", "y01", "bool", "str",
                                                          "strdtype")))
        data[name] = draw(column(kind, n, nasty=nasty))
    return pd.DataFrame(data, index=pd.RangeIndex(n))


# ---------------------------------------------------------------------------------------------
# formula text from a grammar
# ---------------------------------------------------------------------------------------------

SUPPORTED = ("I", "log", "exp", "sqrt", "abs", "log2", "log10", "log1p", "expm1", "sin",
             "floor", "ceiling", "trunc", "sign", "round", "pmin", "pmax", "factor",
             "as.factor", "as.numeric", "as.integer", "as.character", "c", "relevel",
             "ifelse", "cut", "scale", "poly", "offset")
UNSUPPORTED = ("eval", "system", "foo", "paste", "bs", "ns", "__import__", "get",
               "function", "library", "exec")
ARG_NAMES = ("x", "levels", "base", "digits", "na.rm", "bogus", "labels", "`odd arg`", "...",
             "ref", "breaks", "center", "scale", "raw", "right", "include.lowest")
OPERATORS = ("+", "-", "*", "/", "^", "**", ":", "%in%", "%%", "%/%", "&", "|", "&&", "||",
             "==", "!=", "<", ">", "<=", ">=", "~", "%o%", "|>", "<-", "=", "$", "@", "::")
NUMBERS = ("0", "1", "2", "2.5", ".5", "1e308", "1e999", "1e-320", "0x1F", "3L", "0x10L",
           "-1", "1i", "9^9^9", "1e", "0x")
STRINGS = ('"p"', "'q'", '"01"', '"a,b"', '"\\x41"', '"\\u{1F600}"', '"\\q"', '""', '"\\n"',
           '"unterminated', "'it''s'")


_R_RESERVED = {"if", "else", "repeat", "while", "function", "for", "next", "break", "in",
               "NULL", "TRUE", "FALSE", "NA", "Inf", "NaN"}


def _name_text(name: str, quote_reserved: bool = True) -> str:
    import re

    if re.fullmatch(r"[A-Za-z.][A-Za-z0-9._]*", name) and not re.match(r"\.[0-9]", name) \
            and not (quote_reserved and name in _R_RESERVED):
        return name
    return "`" + name + "`"


_NAMES = st.one_of(st.sampled_from(PLAIN_NAMES + ODD_NAMES + MISSING_NAMES).map(_name_text),
                   st.sampled_from(ODD_NAMES).map(lambda n: _name_text(n, False)))
_LEAVES = st.one_of(
    _NAMES, _NAMES, _NAMES,
    st.sampled_from(NUMBERS),
    st.sampled_from(STRINGS),
    st.sampled_from(("TRUE", "FALSE", "NA", "Inf", "NaN", "T", "F", "pi", ".", "NULL")),
    st.sampled_from(("0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
                     "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
                     "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
                     "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
                     "1" * 400, "`a`b`", "``", "`\\`")),
)


def _extend(inner):
    arg = st.tuples(st.one_of(st.none(), st.sampled_from(ARG_NAMES)), inner).map(
        lambda t: inner_arg(*t))
    levels = st.lists(st.sampled_from(STRINGS[:4] + NUMBERS[:4] + ("TRUE",)), max_size=4).map(
        lambda v: "levels = c(" + ", ".join(v) + ")")
    return st.one_of(
        st.tuples(inner, st.sampled_from(OPERATORS), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(inner, st.sampled_from(OPERATORS), inner).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
        st.tuples(st.sampled_from(("-", "+", "!", "~")), inner).map("".join),
        inner.map(lambda s: f"({s})"),
        st.tuples(st.sampled_from(SUPPORTED + SUPPORTED + UNSUPPORTED),
                  st.lists(arg, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(st.sampled_from(("factor", "as.factor")), inner, levels).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        st.tuples(inner, st.integers(0, 4)).map(lambda t: f"({t[0]})^{t[1]}"),
    )


def inner_arg(name, value):
    return value if name is None else f"{name} = {value}"


terms = st.recursive(_LEAVES, _extend, max_leaves=10)

_FORMULA_CHARS = "ab ys~+-*/^:%()`'\"\\.,=!&|<>0123456789eLxI[]{}$@#\n\t"


def formula_texts():
    """R formula text: mostly ``response ~ terms`` from the grammar, some with ``~`` elsewhere
    or none, some raw character soup."""
    return st.one_of(
        st.tuples(terms, terms).map(lambda t: f"{t[0]} ~ {t[1]}"),
        st.tuples(terms, terms).map(lambda t: f"{t[0]} ~ {t[1]}"),
        st.tuples(terms, terms).map(lambda t: f"{t[0]} ~ {t[1]}"),
        terms,
        st.tuples(terms, terms, terms).map(lambda t: f"{t[0]} ~ {t[1]} ~ {t[2]}"),
        terms.map(lambda t: f"~ {t}"),
        st.text(alphabet=_FORMULA_CHARS, max_size=30),
        st.text(max_size=12),
    )


_NUM_FUNS = ("log", "exp", "sqrt", "abs", "log1p", "sin", "floor", "sign", "as.numeric",
             "as.integer")


@st.composite
def plausible_formulas(draw, columns):
    """Formula text that mostly fits: the frame's own columns (backquoted when needed) in
    sums, interactions, powers and supported calls with the right arguments."""
    names = [_name_text(c) for c in columns] or ["y"]
    name = st.sampled_from(names)
    number = st.sampled_from(("0", "1", "2", "0.5", "-1", "1e-3", "3L"))
    operand = st.one_of(name, name, number)
    expr = st.one_of(
        operand,
        st.tuples(operand, st.sampled_from(("+", "-", "*", "/", "^", "%%", "%/%", ">", "<=",
                                            "==", "!=", "&", "|", "%in%")), operand).map(
            lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(st.sampled_from(("!", "-")), operand).map("".join),
    )
    level_list = st.lists(st.sampled_from(('"p"', '"q"', '"r"', "0", "1", "TRUE")), min_size=1,
                          max_size=3, unique=True).map(lambda v: "c(" + ", ".join(v) + ")")
    atom = st.one_of(
        name, name, name,
        st.tuples(st.sampled_from(_NUM_FUNS), name).map(lambda t: f"{t[0]}({t[1]})"),
        expr.map(lambda e: f"I({e})"),
        name.map(lambda n: f"factor({n})"),
        name.map(lambda n: f"as.factor({n})"),
        name.map(lambda n: f"as.character({n})"),
        st.tuples(name, level_list).map(lambda t: f"factor({t[0]}, levels = {t[1]})"),
        st.tuples(name, st.sampled_from(("2", "0.5", "exp(1)"))).map(
            lambda t: f"log({t[0]}, base = {t[1]})"),
        st.tuples(name, st.integers(-2, 3)).map(lambda t: f"round({t[0]}, digits = {t[1]})"),
        st.tuples(name, name).map(lambda t: f"pmin({t[0]}, {t[1]}, na.rm = TRUE)"),
        st.tuples(name, name).map(lambda t: f"pmax({t[0]}, {t[1]})"),
    )
    term = st.one_of(
        atom, atom, atom,
        st.tuples(atom, st.sampled_from((":", "*", "/", "%in%")), atom).map(
            lambda t: f"{t[0]}{t[1]}{t[2]}"),
        st.tuples(atom, atom, st.integers(1, 3)).map(lambda t: f"({t[0]} + {t[1]})^{t[2]}"),
        st.just("."),
    )
    rhs = draw(st.lists(term, min_size=1, max_size=4))
    text = rhs[0] + "".join(draw(st.sampled_from((" + ", " + ", " - "))) + t for t in rhs[1:])
    if draw(st.integers(0, 5)) == 0:
        text += draw(st.sampled_from((" - 1", " + 0", " + 1", " - 0")))
    response = draw(st.one_of(st.just("y"), name, expr.map(lambda e: f"I({e})"),
                              name.map(lambda n: f"factor({n})")))
    return f"{response} ~ {text}"


@st.composite
def formula_and_frame(draw):
    """``(formula, frame)``: half the time wild text on a random frame, half the time a
    plausible formula over a frame with a 0/1 response ``y`` and clean covariates."""
    if draw(st.booleans()):
        return draw(formula_texts()), draw(frames())
    names = draw(st.lists(st.sampled_from(PLAIN_NAMES[:-1] + ODD_NAMES), min_size=1, max_size=4,
                          unique=True))
    frame = draw(frames(min_rows=1, names=names + ["y"], nasty=draw(st.booleans())))
    if draw(st.integers(0, 3)):
        frame["y"] = draw(column("y01", len(frame)))
    return draw(plausible_formulas(list(frame.columns))), frame


# ---------------------------------------------------------------------------------------------
# output contracts
# ---------------------------------------------------------------------------------------------

def plain(out) -> np.ndarray:
    """A prediction as NumPy: a pandas Series (what pandas input gets) as its values, a missing
    class (NaN in a Categorical) as ``None`` — the form NumPy input gets."""
    if isinstance(out, pd.Series):
        if isinstance(out.dtype, pd.CategoricalDtype):
            values = np.array(out.astype(object).to_numpy(), dtype=object)   # a copy
            values[out.isna().to_numpy()] = None
            return values
        return out.to_numpy()
    return np.asarray(out)


def same(x, y) -> bool:
    """Bit-identical predictions: floats with NaN in the same places, labels by value and
    type (a Series compared by its values: :func:`plain`)."""
    x, y = plain(x), plain(y)
    if x.shape != y.shape:
        return False
    if x.dtype.kind == "f" and y.dtype.kind == "f":
        return bool(np.array_equal(x, y, equal_nan=True))
    return all((u is None and v is None) or (u is not None and v is not None and u == v and
                                             type(u) is type(v))
               for u, v in zip(x.tolist(), y.tolist()))


def check_probabilities(model, data, n: int) -> np.ndarray:
    """``predict`` on ``data`` (``n`` rows): probabilities in [0, 1] or NaN, one per row; the
    class is missing exactly where the probability is NaN, else one of the model's labels
    (compared by value and type). Pandas data gets Series on its index (classes a Categorical
    of the model's labels)."""
    from privatelr import predict

    out = predict(model, data)
    if isinstance(data, pd.DataFrame):
        assert isinstance(out, pd.Series) and out.index.equals(data.index), out
    p = plain(out)
    assert isinstance(p, np.ndarray) and p.shape == (n,), p
    assert p.dtype == np.float64
    finite = ~np.isnan(p)
    assert ((p[finite] >= 0.0) & (p[finite] <= 1.0)).all(), p
    out = predict(model, data, type="class")
    if isinstance(data, pd.DataFrame):
        assert list(out.cat.categories) == list(model.spec.labels), out
    cls = plain(out)
    assert len(cls) == n
    labels = model.classes
    for prob, c in zip(p.tolist(), list(cls)):
        if math.isnan(prob):
            assert c is None, (prob, c)
        else:
            assert c is not None, (prob, c)
            assert any(c == lab and isinstance(c, str) == isinstance(lab, str)
                       for lab in labels), (prob, c, labels)
    link = plain(predict(model, data, type="link"))
    assert np.array_equal(np.isnan(link), np.isnan(p)), (link, p)
    return p


# ---------------------------------------------------------------------------------------------
# tampered files with a valid checksum; paths that alias one file
# ---------------------------------------------------------------------------------------------

def with_checksum(payload: dict) -> str:
    """A saved file's text with its ``sha256`` recomputed, as :mod:`privatelr.envelope`
    documents it (an independent transcription): SHA-256 of the canonical JSON (sorted keys,
    no spaces, ASCII) of everything but ``sha256``. Non-finite numbers must already be
    ``{"$float": ...}`` markers."""
    import hashlib
    import json

    body = {k: v for k, v in payload.items() if k != "sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False,
                           ensure_ascii=True)
    body["sha256"] = hashlib.sha256(canonical.encode("ascii")).hexdigest()
    return json.dumps(body, indent=1)


def leaf_paths(obj, prefix=()):
    """Paths to every number (a ``{"$float": ...}`` marker counts as one) and string in a JSON
    tree (a few elements of long lists)."""
    if isinstance(obj, dict) and set(obj) == {"$float"}:
        return [prefix]
    if isinstance(obj, (str, int, float)) and not isinstance(obj, bool):
        return [prefix]
    out = []
    if isinstance(obj, dict):
        for key, v in obj.items():
            out.extend(leaf_paths(v, prefix + (key,)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:4]):
            out.extend(leaf_paths(v, prefix + (i,)))
    return out


_NUMBER_EDITS = ("scale 1e300", "scale -1e300", "scale 1e6", "negate", "nudge", "zero",
                 "minus zero", "max", "-max", "tiny", "int too large", "2**63", "nan", "inf",
                 "-inf", "plus one", "minus one", "half")
_STRING_EDITS = ("empty", "flip a character", "append", "other")
_OTHER_STRINGS = ("p", "q", "NaN", "Inf", "1e+05", "100000", "y ~ a", "(Intercept)",
                  "objective", "output", "gaussian", "amp", "nonprivate", "PrivateLR",
                  "holds", "ok", "adjusted lambda", "random_stopping", "split", "\udcff", "é")


@st.composite
def tampered_leaf(draw, value):
    """``value`` (a number, a ``{"$float"}`` marker or a string) edited one way."""
    if isinstance(value, str):
        how = draw(st.sampled_from(_STRING_EDITS))
        if how == "empty":
            return ""
        if how == "append":
            return value + draw(st.sampled_from(["x", " ", "0", "\u00a0"]))
        if how == "other":
            return draw(st.sampled_from(_OTHER_STRINGS))
        if not value:
            return "x"
        i = draw(st.integers(0, len(value) - 1))
        return value[:i] + draw(st.sampled_from("a0 .,()~+-_e")) + value[i + 1:]
    x = value if not isinstance(value, dict) else {"NaN": math.nan, "Infinity": math.inf,
                                                   "-Infinity": -math.inf}.get(
        value["$float"], 0.0)
    how = draw(st.sampled_from(_NUMBER_EDITS))
    fixed = {"zero": 0, "minus zero": -0.0, "max": 1.7976931348623157e308,
             "-max": -1.7976931348623157e308, "tiny": 5e-324, "int too large": 10**400,
             "2**63": 2**63, "nan": {"$float": "NaN"}, "inf": {"$float": "Infinity"},
             "-inf": {"$float": "-Infinity"}}
    if how in fixed:
        return fixed[how]
    if not math.isfinite(x):
        return 1.0
    factor = {"scale 1e300": 1e300, "scale -1e300": -1e300, "scale 1e6": 1e6, "negate": -1.0,
              "nudge": 1 + 2**-40, "half": 0.5}.get(how)
    out = x * factor if factor is not None else x + (1 if how == "plus one" else -1)
    if isinstance(x, int) and not isinstance(x, bool) and how in ("plus one", "minus one"):
        return out
    out = float(out)
    if math.isinf(out):
        return {"$float": "Infinity" if out > 0 else "-Infinity"}
    return out


#: How a path can name a file it does not spell: the path itself, ``dir/../name``, a symlink,
#: a symlink to a symlink, a hard link, or the shell's ``< file`` (``-`` as the input).
ALIASES = ("path", "dotdot", "symlink", "symlink chain", "hard link", "stdin")
