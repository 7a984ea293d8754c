r"""From an R formula and a data frame to a design matrix, and back again for new data.

This is the formulaic glue behind :func:`privatelr.dplr`. It accepts the formulas people write in
R and reproduces R's ``model.frame`` / ``model.matrix`` conventions:

* ``.`` expands to every column of ``data`` not used in the response, in data order;
* ``factor(x)`` / ``as.factor(x)``, ``I(...)``, ``log``, ``exp``, ``sqrt`` (and ``log2``,
  ``log10``, ``log1p``, ``expm1``, ``abs``, ``sin``, ``cos``, ``tan``, ``round``, ``pmin``,
  ``pmax``) inside terms; R operators inside calls (``^``, ``!``, ``&``, ``|``, ``%%``, ``%in%``,
  ``TRUE``/``FALSE``) with R's precedence;
* ``:``, ``*``, ``/``, ``%in%``, ``(a + b)^2``, ``- 1`` / ``+ 0`` between terms (the term algebra
  is formulaic's);
* factors (pandas Categorical, strings, bools, ``factor(...)``) become treatment contrasts with
  the first level as reference, named as R names them (``Speciesversicolor``, ``factor(cyl)6``,
  ``x:fb``);
* rows with a missing value in any variable of the model are dropped (R's ``na.omit``).

How it works: the formula is parsed with R's grammar; every *atom* (a variable or a call such as
``log(mpg)`` or ``I(Species != "setosa")``) is evaluated here with numpy/pandas and stored as one
column named ``_aK_``; factors are recoded to level codes ``L0, L1, ...`` so that formulaic's
column names can be mapped back to R's without ambiguity; formulaic then expands the term
structure (interactions, contrasts, intercept). Everything needed to rebuild the design for new
data lives in a :class:`DesignSpec` of plain Python data (``to_dict`` / ``from_dict`` round-trip
through JSON): the atoms' code and factor levels, the structural formula, the column names, the
stored scaling and the projection matrix. No formulaic state is needed: atoms carry no
data-dependent transforms, and factor levels are fixed by the spec.

Known difference from R: an interaction of two factors whose main effects are absent (``y ~ f:g``)
is coded by formulaic at full rank, whereas R's ``model.matrix`` produces a rank-deficient set of
dummies; every other case gives R's columns in R's order. Ordered factors use treatment contrasts
(R would use polynomial contrasts).
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DesignSpec", "Design", "build_design", "scaled", "Scaled", "parse_formula",
           "r_number", "rp_suggest"]


# --------------------------------------------------------------------------------------------
# R number formatting
# --------------------------------------------------------------------------------------------

def r_number(x) -> str:
    """Format a number as R's ``as.character`` / ``paste`` does (15 significant digits).

    Examples
    --------
    >>> r_number(1.0), r_number(0.1 + 0.2), r_number(6), r_number(True), r_number(1e5)
    ('1', '0.3', '6', 'TRUE', '1e+05')
    """
    if isinstance(x, (bool, np.bool_)):
        return "TRUE" if x else "FALSE"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    v = float(x)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    if v == 0:
        return "0"
    mant, exp = ("%.14e" % v).split("e")
    mant = mant.rstrip("0").rstrip(".")
    e = int(exp)
    sci = f"{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    nsig = len(mant.lstrip("-").replace(".", ""))
    fixed = f"{v:.{max(0, nsig - 1 - e)}f}"
    return fixed if len(fixed) <= len(sci) else sci   # R: fixed unless wider than scientific


def _level_label(value) -> str:
    """R's label of a factor level (``as.character`` of the value)."""
    if isinstance(value, (bool, np.bool_)):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, np.integer, float, np.floating)):
        return r_number(value)
    return str(value)


# --------------------------------------------------------------------------------------------
# A small parser for R expressions (R's operator precedence, ?Syntax)
# --------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?L?)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<bq>`[^`]+`)
  | (?P<name>[A-Za-z.][A-Za-z0-9._]*)
  | (?P<op>%[^%]*%|<=|>=|==|!=|&&|\|\||[-+*/^:~!<>&|(),=\[\]$])
""", re.VERBOSE)

# binary operators: (left binding power, right binding power)
_BINARY = {
    "~": (1, 2),
    "||": (3, 4), "|": (3, 4),
    "&&": (5, 6), "&": (5, 6),
    "==": (9, 10), "!=": (9, 10), "<": (9, 10), ">": (9, 10), "<=": (9, 10), ">=": (9, 10),
    "+": (11, 12), "-": (11, 12),
    "*": (13, 14), "/": (13, 14),
    "%": (15, 16),  # any %op%
    ":": (17, 18),
    "^": (22, 21),  # right associative
}
_UNARY = {"~": 2, "!": 8, "-": 19, "+": 19}


def _tokenize(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise ValueError(f"formula: cannot read {text[pos:pos + 10]!r} at position {pos} of "
                             f"{text!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        out.append((kind, m.group()))
    return out


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, value):
        kind, v = self.take()
        if v != value:
            raise ValueError(f"formula: expected {value!r} but found {v!r} in {self.text!r}")

    def parse(self):
        node = self.expr(0)
        if self.i != len(self.toks):
            raise ValueError(f"formula: unexpected {self.peek()[1]!r} in {self.text!r}")
        return node

    def expr(self, min_bp):
        kind, v = self.take()
        if kind is None:
            raise ValueError(f"formula: incomplete expression {self.text!r}")
        if kind == "num":
            lhs = ("num", v)
        elif kind == "str":
            body = v[1:-1].encode("utf-8").decode("unicode_escape")
            lhs = ("str", body)
        elif kind == "bq":
            lhs = ("name", v[1:-1])
        elif kind == "name":
            lhs = ("dot",) if v == "." else ("name", v)
        elif kind == "op" and v == "(":
            lhs = ("paren", self.expr(0))
            self.expect(")")
        elif kind == "op" and v in _UNARY:
            lhs = ("un", v, self.expr(_UNARY[v]))
        else:
            raise ValueError(f"formula: unexpected {v!r} in {self.text!r}")
        while True:
            kind, v = self.peek()
            if kind is None:
                break
            if v == "(" and lhs[0] == "name":  # function call
                self.take()
                args = []
                if self.peek()[1] != ")":
                    while True:
                        k2, v2 = self.peek()
                        name = None
                        if k2 in ("name", "bq") and self.i + 1 < len(self.toks) and \
                                self.toks[self.i + 1][1] == "=":
                            name = v2.strip("`")
                            self.i += 2
                        args.append((name, self.expr(0)))
                        if self.peek()[1] == ",":
                            self.take()
                            continue
                        break
                self.expect(")")
                lhs = ("call", lhs[1], args)
                continue
            op = "%" if (kind == "op" and v.startswith("%") and len(v) > 1) else v
            if kind != "op" or op not in _BINARY:
                if v in (")", ","):
                    break
                raise ValueError(f"formula: unexpected {v!r} in {self.text!r}")
            lbp, rbp = _BINARY[op]
            if lbp < min_bp:
                break
            self.take()
            lhs = ("bin", v, lhs, self.expr(rbp))
        return lhs


def parse_formula(text: str):
    """Parse an R expression/formula into a small tuple AST (used by :func:`build_design`).

    Examples
    --------
    >>> parse_formula("y ~ log(x) + a:b")[0]
    'bin'
    """
    if not isinstance(text, str):
        raise TypeError(f"formula must be a string, got {type(text).__name__}")
    return _Parser(text).parse()


_SYNTACTIC = re.compile(r"^(?:[A-Za-z]|\.(?![0-9]))[A-Za-z0-9._]*$")
_NO_SPACE_OPS = {"^", ":", "/", "$"}


def _deparse(node) -> str:
    """R's ``deparse`` of the AST (the text R uses for column and term names)."""
    kind = node[0]
    if kind == "num":
        return node[1] if node[1].endswith("L") else r_number(float(node[1]))
    if kind == "str":
        return '"' + node[1].replace("\\", "\\\\").replace('"', '\\"') + '"'
    if kind == "name":
        return node[1] if _SYNTACTIC.match(node[1]) else f"`{node[1]}`"
    if kind == "dot":
        return "."
    if kind == "paren":
        return "(" + _deparse(node[1]) + ")"
    if kind == "un":
        return node[1] + _deparse(node[2])
    if kind == "bin":
        op = node[1]
        if op in _NO_SPACE_OPS:
            return _deparse(node[2]) + op + _deparse(node[3])
        return f"{_deparse(node[2])} {op} {_deparse(node[3])}"
    if kind == "call":
        args = ", ".join((f"{n} = " if n else "") + _deparse(a) for n, a in node[2])
        return f"{node[1]}({args})"
    raise AssertionError(node)


def _names_in(node, out: list) -> list:
    kind = node[0]
    if kind == "name":
        if node[1] not in out:
            out.append(node[1])
    elif kind == "paren":
        _names_in(node[1], out)
    elif kind == "un":
        _names_in(node[2], out)
    elif kind == "bin":
        _names_in(node[2], out)
        _names_in(node[3], out)
    elif kind == "call":
        for _, a in node[2]:
            _names_in(a, out)
    return out


# --------------------------------------------------------------------------------------------
# Evaluating atoms (R expressions) with numpy / pandas
# --------------------------------------------------------------------------------------------

def _as_values(x):
    return x.to_numpy() if isinstance(x, pd.Series) and not isinstance(x.dtype, pd.CategoricalDtype) else x


def _r_factor(x, drop_unused=True):
    if isinstance(x, pd.Series) and isinstance(x.dtype, pd.CategoricalDtype):
        cat = x.cat.remove_unused_categories() if drop_unused else x
        return cat
    s = pd.Series(x)
    values = pd.unique(s.dropna())
    try:
        levels = sorted(values)
    except TypeError:
        levels = sorted(values, key=str)
    return pd.Series(pd.Categorical(s, categories=levels), index=s.index)


def _r_log(x, base=None):
    return np.log(x) if base is None else np.log(x) / np.log(base)


def _r_in(x, table):
    table = list(table) if isinstance(table, (list, tuple, np.ndarray, pd.Series)) else [table]
    return pd.Series(x).isin(table)


def _r_round(x, digits=0):
    return np.round(x, int(digits))


_FUNCTIONS = {
    "I": lambda x: x, "log": _r_log, "exp": np.exp, "sqrt": np.sqrt, "abs": np.abs,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "expm1": np.expm1,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "round": _r_round,
    "pmin": np.minimum, "pmax": np.maximum,
    "factor": lambda x: _r_factor(x, True), "as.factor": lambda x: _r_factor(x, False),
    "as.numeric": lambda x: np.asarray(_as_values(x), dtype=np.float64),
    "c": lambda *a: list(a),
}
_CONSTANTS = {"TRUE": "True", "FALSE": "False", "T": "True", "F": "False", "pi": repr(math.pi)}
_PY_OPS = {"^": "**", "&&": "&", "||": "|", "%%": "%", "%/%": "//", "==": "==", "!=": "!=",
           "<": "<", ">": ">", "<=": "<=", ">=": ">=", "&": "&", "|": "|", "+": "+", "-": "-",
           "*": "*", "/": "/"}


def _fn_key(name: str) -> str:
    return "_f_" + name.replace(".", "_")


class _CodeGen:
    """Translate an atom's AST into Python code over variables ``_vK_`` (data columns)."""

    def __init__(self, columns: list[str]):
        self.columns = columns
        self.used: list[str] = []

    def var(self, name: str) -> str:
        if name not in self.used:
            self.used.append(name)
        return f"_v{self.columns.index(name)}_"

    def code(self, node) -> str:
        kind = node[0]
        if kind == "num":
            return repr(float(node[1].rstrip("L"))) if node[1].rstrip("L") else node[1]
        if kind == "str":
            return repr(node[1])
        if kind == "name":
            if node[1] in self.columns:
                return self.var(node[1])
            if node[1] in _CONSTANTS:
                return _CONSTANTS[node[1]]
            raise KeyError(node[1])
        if kind == "dot":
            raise ValueError("formula: '.' can only stand for a sum of terms, not inside a call")
        if kind == "paren":
            return "(" + self.code(node[1]) + ")"
        if kind == "un":
            op = "~" if node[1] == "!" else node[1]
            return f"({op}{self.code(node[2])})"
        if kind == "bin":
            op = node[1]
            if op == "%in%":
                return f"_f_in({self.code(node[2])}, {self.code(node[3])})"
            if op not in _PY_OPS:
                raise ValueError(f"formula: operator {op!r} is not supported inside a term "
                                 f"({_deparse(node)}); wrap arithmetic in I(...)")
            return f"({self.code(node[2])} {_PY_OPS[op]} {self.code(node[3])})"
        if kind == "call":
            fname = node[1]
            if fname not in _FUNCTIONS:
                raise ValueError(f"formula: function {fname}() is not supported; supported: "
                                 f"{', '.join(sorted(_FUNCTIONS))} (compute the column in the "
                                 "data frame first)")
            args = ", ".join((f"{n}=" if n else "") + self.code(a) for n, a in node[2])
            return f"{_fn_key(fname)}({args})"
        raise AssertionError(node)


def _namespace(frame: pd.DataFrame, columns: list[str], used: list[str]) -> dict:
    ns: dict[str, Any] = {_fn_key(k): v for k, v in _FUNCTIONS.items()}
    ns["_f_in"] = _r_in
    for name in used:
        ns[f"_v{columns.index(name)}_"] = frame[name]
    return ns


def _evaluate(code: str, ns: dict, n: int, index, what: str):
    with np.errstate(all="ignore"):
        try:
            value = eval(code, {"__builtins__": {}}, ns)  # noqa: S307 - user's own formula
        except Exception as exc:
            raise ValueError(f"formula: could not evaluate {what}: {exc}") from None
    if isinstance(value, pd.Series):
        return value.reset_index(drop=True)
    if isinstance(value, pd.Categorical):
        return pd.Series(value)
    arr = np.asarray(value)
    if arr.ndim == 0:
        arr = np.full(n, arr.item())
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"formula: {what} evaluates to shape {arr.shape}, expected {n} values")
    return pd.Series(arr)


def _classify(value: pd.Series) -> tuple[str, list[str] | None]:
    """``("numeric", None)`` or ``("factor", levels)`` as R's model.frame would see it."""
    dtype = value.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return "factor", [_level_label(c) for c in dtype.categories]
    if dtype == np.bool_ or dtype == "boolean":
        return "factor", ["FALSE", "TRUE"]
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        return "numeric", None
    uniques = pd.unique(value.dropna())          # loop over distinct values, not rows
    if len(uniques) and all(isinstance(v, (bool, np.bool_)) for v in uniques):
        return "factor", ["FALSE", "TRUE"]
    return "factor", sorted({_level_label(v) for v in uniques})


def _labels_of(value: pd.Series) -> pd.Series:
    """Every element as its R level label (missing stays missing), vectorised over rows."""
    if isinstance(value.dtype, pd.CategoricalDtype):
        cats = np.array([_level_label(c) for c in value.dtype.categories] + [None], dtype=object)
        codes = value.cat.codes.to_numpy()
        return pd.Series(cats[np.where(codes >= 0, codes, len(cats) - 1)])
    uniques = pd.unique(value.dropna())
    mapping = {u: _level_label(u) for u in uniques}
    return pd.Series(value.map(mapping).to_numpy(dtype=object, na_value=None), dtype=object)


def _is_missing(v) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _missing_mask(value: pd.Series) -> np.ndarray:
    return value.isna().to_numpy()


# --------------------------------------------------------------------------------------------
# The spec
# --------------------------------------------------------------------------------------------

@dataclass
class DesignSpec:
    """Everything needed to rebuild a design for new data, as plain (JSON-safe) Python data.

    Attributes
    ----------
    formula : str
        The formula as given.
    formula_r : str
        R's deparse of the formula with ``.`` expanded (what R's summary prints).
    response : str
        R's name of the response (deparse of the left-hand side), e.g. ``"Species"``.
    response_code : str
        Python code of the response over the data columns (``_vK_``).
    response_kind : str
        ``"factor"``, ``"logical"`` or ``"numeric"``.
    response_levels : list
        The response's values/levels in R's order (first = coded 0).
    labels : list
        The two class labels ``predict(type="class")`` returns (for a multi-level response:
        the first level and ``"not <first level>"``).
    variables : list of str
        Data columns the right-hand side reads (``predict`` needs exactly these).
    atoms : list of dict
        ``{"id", "name", "code", "kind", "levels"}`` per atom (variable or call).
    rhs : str
        The structural formula over atom ids handed to formulaic.
    intercept : bool
    formulaic_columns, design_columns : list of str
        formulaic's column names and R's names of the same columns (intercept included).
    columns : list of str
        The columns of the final design (after projection: ``(Intercept)``, ``dim.1``, ...).
    center, scale : list of float or None
        ``do_scale``: column means and standard deviations of the covariates (training data).
    scale_factor : float or None
        ``do_scale``: 1 / largest row norm after standardisation (R's ``scalef``).
    projection : list of list of float or None
        The (p x q) random projection matrix, already divided by sqrt(q).
    data_norm : float or None
        Projected rows are clipped into this ball (part of the public map).
    """

    formula: str
    formula_r: str
    response: str
    response_code: str
    response_kind: str
    response_levels: list
    labels: list
    variables: list
    atoms: list
    rhs: str
    intercept: bool
    formulaic_columns: list
    design_columns: list
    columns: list
    center: list | None = None
    scale: list | None = None
    scale_factor: float | None = None
    projection: list | None = None
    data_norm: float | None = None
    version: int = 1

    # -- serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A deep copy as JSON-safe Python data (``from_dict`` rebuilds an equal spec).

        Examples
        --------
        >>> from privatelr.datasets import load_iris
        >>> spec = build_design("Species ~ .", load_iris()).spec
        >>> DesignSpec.from_dict(spec.to_dict()) == spec
        True
        """
        return _jsonable(asdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> "DesignSpec":
        """Inverse of :meth:`to_dict` (unknown keys are rejected).

        The term code inside a spec is evaluated by ``predict``; a dict from outside (a saved
        model, say) could carry anything, so every code string is checked against the grammar
        privatelr itself writes (R functions it supports applied to its own variable names,
        no attributes, subscripts or other names) before a spec is built. ``ValueError``
        otherwise.
        """
        if not isinstance(d, dict):
            raise TypeError(f"DesignSpec.from_dict needs a dict, got {type(d).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"DesignSpec.from_dict: unknown keys {sorted(unknown)}")
        from .persist import _check_spec  # the one validator of spec dicts

        _check_spec(d)
        return cls(**copy.deepcopy(d))

    # -- rebuilding ---------------------------------------------------------------------------
    @property
    def n_covariates(self) -> int:
        """Number of non-intercept design columns before projection."""
        return len(self.design_columns) - int(self.intercept)

    def atom_frame(self, data, *, what: str = "data") -> tuple[pd.DataFrame, np.ndarray]:
        """Evaluate the atoms on ``data``: (frame of atom columns, mask of complete rows)."""
        frame = _as_frame(data, what)
        missing = [v for v in self.variables if v not in frame.columns]
        if missing:
            raise ValueError(f"{what} lacks column(s) {missing} used by the model formula "
                             f"{self.formula_r!r}; available: {list(frame.columns)}")
        frame = frame.reset_index(drop=True)
        n = len(frame)
        columns = list(self.variables)
        ns = _namespace(frame, columns, columns)
        ns = {**ns, **{f"_v{columns.index(v)}_": frame[v] for v in columns}}
        out, complete = {}, np.ones(n, dtype=bool)
        for atom in self.atoms:
            value = _evaluate(_remap(atom["code"], atom["vars"], columns), ns, n, frame.index,
                              atom["name"])
            complete &= ~_missing_mask(value)
            if atom["kind"] == "factor":
                labels = _labels_of(value)
                levels = atom["levels"]
                known = set(levels)
                seen = set(labels.dropna().unique().tolist())
                unseen = sorted(seen - known)
                if unseen:
                    raise ValueError(f"{what}: column {atom['name']!r} has level(s) {unseen} not "
                                     f"seen when the model was fitted (known levels: {levels})")
                codes = labels.map({lv: f"L{i}" for i, lv in enumerate(levels)})
                out[atom["id"]] = pd.Categorical(codes, categories=[f"L{i}" for i in
                                                                    range(len(levels))])
            else:
                if isinstance(value.dtype, pd.CategoricalDtype) or not \
                        pd.api.types.is_numeric_dtype(value.dtype):
                    raise ValueError(f"{what}: {atom['name']!r} was numeric when the model was "
                                     f"fitted but is {value.dtype} here")
                out[atom["id"]] = value.to_numpy(dtype=np.float64, na_value=np.nan)
        return pd.DataFrame(out, index=pd.RangeIndex(n)), complete

    def design_matrix(self, data, *, what: str = "data") -> tuple[np.ndarray, np.ndarray]:
        """The design for new data, before scaling and projection.

        Returns ``(X, complete)``: ``X`` has one row per complete row of ``data`` (intercept
        column included when the model has one), ``complete`` marks those rows.
        """
        atoms, complete = self.atom_frame(data, what=what)
        X = _formulaic_matrix(self.rhs, atoms[complete].reset_index(drop=True),
                              self.formulaic_columns, len(self.atoms))
        return X, complete

    def transform(self, data, *, what: str = "data") -> tuple[np.ndarray, np.ndarray]:
        """The final design for new data: scaling, projection and clipping as in training."""
        X, complete = self.design_matrix(data, what=what)
        return self.finish(X), complete

    def finish(self, X: np.ndarray) -> np.ndarray:
        """Apply the stored scaling and projection (and projection clipping) to a raw design."""
        k = int(self.intercept)
        cov = X[:, k:]
        if self.scale_factor is not None:
            cov = (cov - np.asarray(self.center)) / np.asarray(self.scale) * self.scale_factor
        if self.projection is not None:
            cov = cov @ np.asarray(self.projection, dtype=np.float64)
            cov = clip_rows(cov, float(self.data_norm))[0]
        return np.hstack([X[:, :k], cov]) if k else np.ascontiguousarray(cov)


def _remap(code: str, used: list[str], columns: list[str]) -> str:
    # atoms' code refers to data columns by their index in `used` order at fit time: _u{K}_
    return re.sub(r"_u(\d+)_", lambda m: f"_v{columns.index(used[int(m.group(1))])}_", code)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    return obj


def _as_frame(data, what: str) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, dict):
        return pd.DataFrame(data)
    if isinstance(data, pd.Series):  # one row (e.g. df.iloc[i])
        return data.to_frame().T.infer_objects()
    if isinstance(data, np.ndarray):
        if data.ndim == 1:
            data = data.reshape(1, -1)
        if data.ndim != 2:
            raise ValueError(f"{what} must be 2-D, got shape {data.shape}")
        return pd.DataFrame(data, columns=[f"X{j + 1}" for j in range(data.shape[1])])
    raise TypeError(f"{what} must be a pandas DataFrame (or a dict of columns / 2-D numpy "
                    f"array), got {type(data).__name__}")


_FC_PART = re.compile(r"^(_a\d+_)(?:\[(?:T\.)?L(\d+)\])?$")


def _formulaic_matrix(rhs: str, atoms: pd.DataFrame, expected: list[str] | None, n_atoms: int):
    import formulaic

    if len(atoms) == 0:
        return np.zeros((0, len(expected) if expected else 0))
    try:
        mm = formulaic.model_matrix(rhs, atoms, na_action="ignore")
    except Exception as exc:  # formulaic's own errors name formulaic internals
        raise ValueError(f"formula: could not build the design ({exc})") from None
    cols = list(mm.columns)
    if expected is not None and cols != list(expected):
        raise ValueError(f"the design for new data has columns {cols}, expected {expected}; "
                         "this is a bug in privatelr, please report it")
    return np.asarray(mm.to_numpy(), dtype=np.float64)


def _r_column_name(fc_name: str, atoms: list[dict]) -> str:
    if fc_name == "Intercept":
        return "(Intercept)"
    parts = []
    by_id = {a["id"]: a for a in atoms}
    for part in fc_name.split(":"):
        m = _FC_PART.match(part)
        if m is None:
            raise ValueError(f"unexpected design column {fc_name!r} from formulaic")
        atom = by_id[m.group(1)]
        parts.append(atom["name"] + (atom["levels"][int(m.group(2))] if m.group(2) else ""))
    return ":".join(parts)


# --------------------------------------------------------------------------------------------
# Building the design
# --------------------------------------------------------------------------------------------

@dataclass
class Design:
    """A design built from a formula and data (see :func:`build_design`).

    Attributes
    ----------
    X : ndarray (n, d)
        Design matrix (intercept column first when present), rows with missing values dropped.
    y : ndarray (n,)
        Response coded 0/1 (R's recoding: first factor level / smallest value / FALSE is 0).
    y_raw : pandas.Series
        The response as evaluated (before recoding), complete rows only.
    spec : DesignSpec
    n_dropped : int
        Rows dropped because of missing values.
    n_classes : int
        Number of distinct response values/levels (> 2: first-vs-rest was fitted).
    """

    X: np.ndarray
    y: np.ndarray
    y_raw: pd.Series
    spec: DesignSpec
    n_dropped: int = 0
    n_classes: int = 2
    complete: np.ndarray | None = field(default=None, repr=False)


def _rhs_to_formulaic(node, atoms: dict, atom_nodes: list, dot_names: list[str]) -> str:
    kind = node[0]
    if kind == "bin" and node[1] in ("+", "-", "*", "/", ":", "^", "%in%"):
        op = node[1]
        left = _rhs_to_formulaic(node[2], atoms, atom_nodes, dot_names)
        if op == "^":
            if node[3][0] != "num":
                raise ValueError("formula: the power in (a + b)^k must be a number")
            return f"{left} ^ {int(float(node[3][1]))}"
        right = _rhs_to_formulaic(node[3], atoms, atom_nodes, dot_names)
        return f"{left} {op} {right}"
    if kind == "un" and node[1] in ("-", "+"):
        inner = _rhs_to_formulaic(node[2], atoms, atom_nodes, dot_names)
        return f"{node[1]} {inner}"
    if kind == "paren":
        return "(" + _rhs_to_formulaic(node[1], atoms, atom_nodes, dot_names) + ")"
    if kind == "num":
        v = float(node[1].rstrip("L"))
        if v not in (0.0, 1.0):
            raise ValueError(f"formula: a number in the terms must be 0 or 1 (intercept), got "
                             f"{node[1]}; use I(...) for arithmetic")
        return str(int(v))
    if kind == "dot":
        if not dot_names:
            raise ValueError("formula: '.' stands for no column (data has only the response)")
        ids = [_atom_id(("name", nm), atoms, atom_nodes) for nm in dot_names]
        return "(" + " + ".join(ids) + ")"
    return _atom_id(node, atoms, atom_nodes)


def _atom_id(node, atoms: dict, atom_nodes: list) -> str:
    key = _deparse(node)
    if key not in atoms:
        atoms[key] = f"_a{len(atoms)}_"
        atom_nodes.append(node)
    return atoms[key]


def _expand_dot_r(node, dot_names: list[str], parent: str | None = None):
    """The AST with ``.`` replaced by the sum of columns (for R's printed formula)."""
    kind = node[0]
    if kind == "dot":
        expr = ("name", dot_names[0])
        for nm in dot_names[1:]:
            expr = ("bin", "+", expr, ("name", nm))
        return expr if (parent in (None, "+") or len(dot_names) == 1) else ("paren", expr)
    if kind == "bin":
        return ("bin", node[1], _expand_dot_r(node[2], dot_names, node[1]),
                _expand_dot_r(node[3], dot_names, node[1]))
    if kind == "paren":
        return ("paren", _expand_dot_r(node[1], dot_names, None))
    if kind == "un":
        return ("un", node[1], _expand_dot_r(node[2], dot_names, "un"))
    return node


def _has_dot(node) -> bool:
    kind = node[0]
    if kind == "dot":
        return True
    if kind == "bin":
        return _has_dot(node[2]) or _has_dot(node[3])
    if kind in ("paren",):
        return _has_dot(node[1])
    if kind == "un":
        return _has_dot(node[2])
    return False


def _intercept_of(node) -> bool:
    """Whether R's terms would keep the intercept (``- 1``, ``+ 0``, ``0 +`` remove it)."""
    keep = True

    def walk(n, sign):
        nonlocal keep
        kind = n[0]
        if kind == "num":
            v = float(n[1].rstrip("L"))
            if v == 0.0:
                keep = False if sign > 0 else keep
            elif v == 1.0:
                keep = sign > 0
        elif kind == "bin" and n[1] in ("+", "-"):
            walk(n[2], sign)
            walk(n[3], sign if n[1] == "+" else -sign)
        elif kind == "un" and n[1] == "-":
            walk(n[2], -sign)
        elif kind == "un" and n[1] == "+":
            walk(n[2], sign)
        elif kind == "paren":
            walk(n[1], sign)

    walk(node, 1)
    return keep


def build_design(formula, data, *, response_name: str | None = None) -> Design:
    """Build R's model frame and model matrix for ``formula`` on ``data``.

    Parameters
    ----------
    formula : str or formulaic.Formula
        An R formula with a response, e.g. ``"Species ~ ."`` or ``"am ~ mpg + factor(cyl)"``.
    data : pandas.DataFrame
        The data (a dict of columns or a 2-D array with columns ``X1, X2, ...`` also work).
    response_name : str, optional
        Overrides the response's printed name.

    Returns
    -------
    Design

    Examples
    --------
    >>> from privatelr.datasets import load_mtcars
    >>> d = build_design("am ~ mpg + factor(cyl)", load_mtcars())
    >>> d.spec.design_columns
    ['(Intercept)', 'mpg', 'factor(cyl)6', 'factor(cyl)8']
    """
    text = _formula_text(formula)
    frame = _as_frame(data, "data").reset_index(drop=True)
    columns = [str(c) for c in frame.columns]
    if len(set(columns)) != len(columns):
        raise ValueError("data has duplicated column names; make them unique")
    frame.columns = columns
    tree = parse_formula(text)
    if not (tree[0] == "bin" and tree[1] == "~"):
        raise ValueError(f"formula {text!r} needs a response: write 'y ~ x1 + x2' (or 'y ~ .')")
    lhs, rhs = tree[2], tree[3]
    if _has_dot(lhs):
        raise ValueError("formula: '.' is not allowed in the response")
    n = len(frame)
    if n == 0:
        raise ValueError("data has no rows")

    # response
    lhs_vars = _names_in(lhs, [])
    missing = [v for v in lhs_vars if v not in columns and v not in _CONSTANTS]
    if missing:
        raise ValueError(f"formula: response uses column(s) {missing} not in data; available: "
                         f"{columns}")
    gen = _CodeGen(columns)
    resp_code = gen.code(lhs)
    ns = _namespace(frame, columns, gen.used)
    y_val = _evaluate(resp_code, ns, n, frame.index, "the response " + _deparse(lhs))

    # right-hand side
    dot_names = [c for c in columns if c not in lhs_vars]
    atoms: dict[str, str] = {}
    atom_nodes: list = []
    rhs_fc = _rhs_to_formulaic(rhs, atoms, atom_nodes, dot_names)
    intercept = _intercept_of(rhs)
    atom_list, values, used_all = [], {}, []
    for (name, aid), node in zip(atoms.items(), atom_nodes):
        g = _CodeGen(columns)
        try:
            code = g.code(node)
        except KeyError as exc:
            raise ValueError(f"formula: column {exc.args[0]!r} (in {name!r}) is not in data; "
                             f"available: {columns}") from None
        value = _evaluate(code, _namespace(frame, columns, g.used), n, frame.index, name)
        kind, levels = _classify(value)
        # store the code relative to the atom's own variables (portable across column orders)
        rel = re.sub(r"_v(\d+)_", lambda m: f"_u{g.used.index(columns[int(m.group(1))])}_", code)
        atom_list.append({"id": aid, "name": name, "code": rel, "vars": list(g.used),
                          "kind": kind, "levels": levels})
        values[aid] = value
        for v in g.used:
            if v not in used_all:
                used_all.append(v)
    variables = [c for c in columns if c in used_all]

    # missing values (R's na.omit over every variable of the model frame)
    complete = ~_missing_mask(y_val)
    for aid, value in values.items():
        complete &= ~_missing_mask(value)
    n_dropped = int(n - complete.sum())
    if complete.sum() == 0:
        raise ValueError("every row has a missing value in a model variable; nothing to fit")

    # response recoding
    y_ok = y_val[complete].reset_index(drop=True)
    y01, kind, levels, labels, n_classes = _recode_response(y_ok)

    # atoms -> formulaic frame
    spec = DesignSpec(formula=text, formula_r="", response=response_name or _deparse(lhs),
                      response_code=resp_code, response_kind=kind, response_levels=levels,
                      labels=labels, variables=variables, atoms=atom_list, rhs=rhs_fc,
                      intercept=intercept, formulaic_columns=[], design_columns=[], columns=[])
    spec.formula_r = f"{spec.response} ~ {_deparse(_expand_dot_r(rhs, dot_names) if dot_names else rhs)}"
    atom_frame, complete2 = spec.atom_frame(frame, what="data")
    import formulaic

    sub = atom_frame[complete].reset_index(drop=True)
    try:
        mm = formulaic.model_matrix(rhs_fc, sub, na_action="ignore")
    except Exception as exc:
        raise ValueError(f"formula: could not build the design for {text!r} ({exc})") from None
    fc_cols = list(mm.columns)
    if ("Intercept" in fc_cols) != intercept:
        intercept = "Intercept" in fc_cols
        spec.intercept = intercept
    spec.formulaic_columns = fc_cols
    spec.design_columns = [_r_column_name(c, atom_list) for c in fc_cols]
    spec.columns = list(spec.design_columns)
    X = np.asarray(mm.to_numpy(), dtype=np.float64)
    return Design(X=X, y=y01, y_raw=y_ok, spec=spec, n_dropped=n_dropped, n_classes=n_classes,
                  complete=complete)


def _formula_text(formula) -> str:
    if isinstance(formula, str):
        return formula
    try:
        from formulaic import Formula
    except ImportError:  # pragma: no cover
        Formula = ()
    if isinstance(formula, Formula):
        return str(formula)
    raise TypeError(f"formula must be a string like 'y ~ x1 + x2' or a formulaic.Formula, got "
                    f"{type(formula).__name__}")


def _recode_response(y: pd.Series):
    """R's recode.y: factor -> first level 0; logical as is; otherwise smallest value 0."""
    dtype = y.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cats = list(dtype.categories)
        levels = [_jsonable(c) for c in cats]
        y01 = (y.cat.codes.to_numpy() != 0).astype(np.float64)
        kind, n_classes = "factor", len(cats)
    elif dtype == np.bool_ or dtype == "boolean":
        levels = [False, True]
        y01 = y.to_numpy(dtype=bool).astype(np.float64)
        kind, n_classes = "logical", 2
    elif pd.api.types.is_numeric_dtype(dtype):
        vals = np.unique(y.to_numpy(dtype=np.float64))
        levels = [_jsonable(v) for v in (vals.astype(np.int64) if np.all(vals == np.round(vals))
                                         and np.all(np.abs(vals) < 2**53) else vals)]
        y01 = (y.to_numpy(dtype=np.float64) != vals[0]).astype(np.float64)
        kind, n_classes = "numeric", len(vals)
    else:
        uniques = pd.unique(y)
        if all(isinstance(v, (bool, np.bool_)) for v in uniques):
            return _recode_response(y.astype(bool))
        labels_y = _labels_of(y)
        vals = sorted(set(labels_y.unique().tolist()))
        levels = vals
        y01 = (labels_y.to_numpy() != vals[0]).astype(np.float64)
        kind, n_classes = "factor", len(vals)
    if len(levels) > 2:
        labels = [levels[0], f"not {_level_label(levels[0])}"]
    elif len(levels) == 2:
        labels = list(levels)
    else:
        labels = [levels[0], f"not {_level_label(levels[0])}"] if levels else [0, 1]
    return y01, kind, levels, labels, n_classes


# --------------------------------------------------------------------------------------------
# Scaling, clipping, projection
# --------------------------------------------------------------------------------------------

def clip_rows(X: np.ndarray, bound: float) -> tuple[np.ndarray, int]:
    """Scale rows whose L2 norm exceeds ``bound`` onto the sphere of that radius.

    Returns ``(X_clipped, n_clipped)``; ``X`` is copied only when a row is clipped.
    """
    sq = np.einsum("ij,ij->i", X, X)
    over = sq > bound * bound * (1.0 + 1e-12)
    k = int(over.sum())
    if k == 0:
        return X, 0
    X = X.copy()
    X[over] *= (bound / np.sqrt(sq[over]))[:, None]
    return X, k


def standardise(cov: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """R's ``scale()`` then division by the largest row norm: (center, scale, factor).

    The standard deviation uses ``n - 1`` (R's ``sd``); a constant column gets scale 1 (R would
    produce NaN). ``factor = 1 / max_i ||x_i||`` after standardisation (R's ``scalef``).
    """
    n = cov.shape[0]
    center = cov.mean(axis=0)
    if n > 1:
        sd = cov.std(axis=0, ddof=1)
    else:
        sd = np.ones(cov.shape[1])
    sd = np.where(sd > 0, sd, 1.0)
    z = (cov - center) / sd
    norms = np.sqrt(np.einsum("ij,ij->i", z, z))
    top = norms.max() if norms.size else 0.0
    factor = 1.0 / top if top > 0 else 1.0
    return center, sd, float(factor)


def rp_suggest(n: int) -> int:
    """R's ``rp.suggest``: ``round(0.5 * 0.5**-2 * log(n)) = round(2 log n)`` (half to even).

    Examples
    --------
    >>> [rp_suggest(n) for n in (2, 10, 150, 1000, 10**6)]
    [1, 5, 10, 14, 28]
    """
    return int(np.round(2.0 * np.log(n)))


@dataclass
class Scaled:
    """Result of :func:`scaled`: ``data`` (scaled covariates, response last) and ``scale``."""

    data: pd.DataFrame
    scale: float
    center: np.ndarray
    sd: np.ndarray


def scaled(fml, data) -> Scaled:
    """R's ``scaled(fml, data)``: standardise the covariates and shrink them into the unit ball.

    The covariate columns of the model matrix (intercept excluded) are centred, divided by
    their standard deviations and divided by the largest resulting row norm, so every row lies
    in the unit ball. ``scale`` is that last factor (R's ``1/sf``). The response is appended as
    the last column under its R name. Column names are R's model-matrix names (R's
    ``data.frame`` would additionally mangle names like ``factor(cyl)6``).

    **Not private**: the centre, the standard deviations and the largest norm are computed from
    the data without noise; a model trained on the result is private only for the scaled data.

    Examples
    --------
    >>> from privatelr.datasets import load_iris
    >>> s = scaled("Species ~ .", load_iris())
    >>> round(s.scale, 6), list(s.data.columns)[-1]
    (0.283621, 'Species')
    """
    d = build_design(fml, data)
    k = int(d.spec.intercept)
    cov = d.X[:, k:]
    center, sd, factor = standardise(cov)
    z = (cov - center) / sd * factor
    out = pd.DataFrame(z, columns=d.spec.design_columns[k:])
    out[d.spec.response] = d.y_raw.to_numpy() if not isinstance(d.y_raw.dtype, pd.CategoricalDtype) \
        else d.y_raw.values
    return Scaled(data=out, scale=factor, center=center, sd=sd)
