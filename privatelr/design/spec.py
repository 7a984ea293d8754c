r"""From an R formula and declarations to a frozen :class:`DesignSpec`, and from the spec to rows.

This is the *schema* step of the pipeline. :func:`make_spec` reads the formula, the kinds of the
data columns (from their dtypes) and the declared factor levels, and fixes everything that
shapes a fitted coefficient vector: the response coding, the atoms (variables and calls such as
``log(mpg)``), their factor levels, the term structure and R's column names. For a private fit
it reads **no row of data**: a level set it cannot take from a declaration (pandas Categorical
categories, ``levels={column: [...]}``, ``factor(x, levels = c(...))``, logicals) is an error
that says how to declare it, and a numeric response is coded 0/1 and must hold only 0 and 1.
Only a non-private build (``learn=True``: ``eps=0`` or R's ``compat`` mode) learns levels and the
numeric response coding from the rows, as R does.

:meth:`DesignSpec.rows` then turns any data frame — the training data, new data, one partition
of a Dask DataFrame, a chunk of a CSV file — into design rows with exactly the spec's columns,
one row of output per complete row of input, the same way every time.

R's conventions (``model.frame`` / ``model.matrix``):

* ``.`` expands to every column not used in the response, in data order;
* ``:``, ``*``, ``/``, ``%in%``, ``(a + b)^k`` (``k`` capped at the number of variables in
  ``a + b``, as R caps it), ``- 1`` / ``+ 0`` between terms (formulaic expands the terms);
* factors get treatment contrasts with the first level as reference and R's column names
  (``Speciesversicolor``, ``factor(cyl)6``, ``x:fb``); logicals are factors ``FALSE``/``TRUE``;
* rows with a missing value in any variable of the model are dropped (R's ``na.omit``);
* the response: logical as is; a factor's first level is 0 and every other level 1 (more than
  two levels: first against the rest); numeric 0/1 (learned: R's smallest value 0).

Known difference from R: an interaction of two factors whose main effects are absent
(``y ~ f:g``) is coded by formulaic at full rank, where R's ``model.matrix`` is rank-deficient.
Ordered factors use treatment contrasts (R would use polynomial contrasts).

Examples
--------
>>> from privatelr.datasets import load_mtcars
>>> d = build_design("am ~ mpg + factor(cyl)", load_mtcars())
>>> d.spec.design_columns
['(Intercept)', 'mpg', 'factor(cyl)6', 'factor(cyl)8']
>>> d = build_design("am ~ mpg + factor(cyl)", load_mtcars(), learn=False)
Traceback (most recent call last):
...
ValueError: the levels of 'cyl' would be learned from the private rows, ...
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .preprocess import Preprocess
from .rsyntax import (Binary, Call, Chain, Const, Dot, Name, Num, Paren, Str, Unary, deparse,
                      names_in, number_value, parse, walk)
from .terms import Columns, Kind, LevelBook, evaluate, infer, level_key, NAMED_CONSTANTS
from .values import Vec, column_type, labels_of, level_label

__all__ = ["DesignSpec", "Design", "make_spec", "build_design", "as_frame", "formula_text",
           "MAX_ATOMS", "MAX_LEVELS"]

#: Most distinct variables/calls one formula may use.
MAX_ATOMS = 10_000
#: Most levels one factor may have.
MAX_LEVELS = 100_000
#: Most terms ``(a + b + ...)^k`` may expand to, and most columns a design may have.
MAX_TERMS = 100_000
MAX_COLUMNS = 1_000_000
_TYPE_WORDS = {"num": "numeric", "lgl": "logical", "chr": "character", "fct": "factor"}
_TERM_OPS = ("+", "-", "*", "/", ":", "%in%")


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------

def formula_text(formula) -> str:
    """The text of a formula given as a string or a ``formulaic.Formula``."""
    if isinstance(formula, str):
        return formula
    if type(formula).__module__.split(".")[0] == "formulaic":
        from formulaic import Formula

        if isinstance(formula, Formula):
            return _formulaic_text(formula)
    raise TypeError(f"formula must be a string like 'y ~ x1 + x2' or a formulaic.Formula, got "
                    f"{type(formula).__name__}")


def _formulaic_text(formula) -> str:
    lhs = getattr(formula, "lhs", None)
    rhs = getattr(formula, "rhs", None)
    if lhs is None or rhs is None:
        raise ValueError("a formulaic.Formula needs a response: Formula('y ~ x1 + x2')")
    return f"{lhs} ~ {rhs}"


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
    elif isinstance(data, pd.Series):        # one row (e.g. df.iloc[i])
        frame = data.to_frame().T.infer_objects()
    elif isinstance(data, np.ndarray):
        if data.ndim == 1:
            data = data.reshape(1, -1)
        if data.ndim != 2:
            raise ValueError(f"{what} must be 2-D, got shape {data.shape}")
        frame = pd.DataFrame(data, columns=[f"X{j + 1}" for j in range(data.shape[1])])
    else:
        raise TypeError(f"{what} must be a pandas DataFrame (or a dict of columns / 2-D numpy "
                        f"array), got {type(data).__name__}")
    columns = [str(c) for c in frame.columns]
    if len(set(columns)) != len(columns):
        dup = sorted({c for c in columns if columns.count(c) > 1})
        raise ValueError(f"{what} has duplicated column names {dup[:5]}; make them unique")
    if list(frame.columns) != columns:
        frame = frame.set_axis(columns, axis=1)
    return frame


def _declared(levels, frame: pd.DataFrame, book: LevelBook) -> None:
    if levels is None:
        return
    if not isinstance(levels, dict):
        raise TypeError(f"levels must be a dict {{column: [level, ...]}}, got "
                        f"{type(levels).__name__}")
    for col, vals in levels.items():
        col = str(col)
        if col not in frame.columns:
            raise ValueError(f"levels names column {col!r}, which is not in data; available: "
                             f"{list(frame.columns)[:20]}")
        if isinstance(vals, (str, bytes)) or not hasattr(vals, "__iter__"):
            raise TypeError(f"levels[{col!r}] must be a list of the column's values, got "
                            f"{vals!r}")
        vals = list(vals)
        if not vals:
            raise ValueError(f"levels[{col!r}] is empty; list every value the column can take")
        if len(vals) > MAX_LEVELS:
            raise ValueError(f"levels[{col!r}] has {len(vals)} values, more than {MAX_LEVELS}")
        try:
            labels = labels_of(vals)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"levels[{col!r}]: {exc}") from None
        dtype = frame[col].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            cats = [level_label(c) for c in dtype.categories]
            if cats != labels:
                raise ValueError(f"levels[{col!r}] = {labels} differs from the column's "
                                 f"categories {cats}; give one declaration")
        book.declare(col, labels)


# ---------------------------------------------------------------------------------------------
# the spec
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DesignSpec:
    """Everything that turns data into design rows, as plain (JSON-safe) data.

    Attributes
    ----------
    formula : str
        The formula as given.
    formula_r : str
        R's text of the formula with ``.`` expanded (what the summary prints).
    response : str
        R's name of the response (its text, or the front end's name such as ``dplr.class``).
    response_source : str
        R text of the response expression.
    response_kind : {"logical", "numeric", "factor"}
    response_levels : list
        The response's values in coding order: the first is coded 0, every other 1.
    labels : list
        The two class labels ``predict(type="class")`` returns (a response with more levels:
        the first level and ``"not <first level>"``).
    variables : list of str
        The data columns the terms read (what scoring new data needs).
    variable_kinds : dict
        The R kinds of those and of the response's columns when fitted: ``"num"``, ``"lgl"``,
        ``"chr"`` or ``"fct"``.
    levels : dict
        The level book: factor levels by key (column name, or a call's R text).
    atoms : list of dict
        ``{"id", "name", "kind", "levels"}`` per variable or call of the terms; ``name`` is its
        R text, which is parsed again (never run) to rebuild it.
    rhs : str
        The term structure over atom ids handed to formulaic.
    intercept : bool
    formulaic_columns, design_columns : list of str
        formulaic's names of the raw design columns and R's names of the same columns.
    learned : bool
        Whether levels or the response coding were learned from the rows (non-private builds).
    preprocess : Preprocess or None
        The public map applied after the design (scaling, projection, clipping).
    """

    formula: str
    formula_r: str
    response: str
    response_source: str
    response_kind: str
    response_levels: list
    labels: list
    variables: list
    variable_kinds: dict
    levels: dict
    atoms: list
    rhs: str
    intercept: bool
    formulaic_columns: list
    design_columns: list
    learned: bool = False
    preprocess: Preprocess | None = None
    version: int = 2

    # -- derived ------------------------------------------------------------------------------
    @property
    def columns(self) -> list:
        """Names of the final design's columns (after projection: ``dim.1``, ...)."""
        if self.preprocess is not None and self.preprocess.columns is not None:
            return list(self.preprocess.columns)
        return list(self.design_columns)

    @property
    def n_covariates(self) -> int:
        """Number of non-intercept raw design columns."""
        return len(self.design_columns) - int(self.intercept)

    @property
    def n_classes(self) -> int:
        return len(self.response_levels)

    @property
    def variable_types(self) -> dict:
        """The kind each data column is read as: ``"numeric"``, ``"logical"`` or
        ``"character"`` (factors are read as their labels)."""
        words = {"num": "numeric", "lgl": "logical", "chr": "character", "fct": "character"}
        return {v: words[k] for v, k in self.variable_kinds.items()}

    def with_preprocess(self, preprocess: Preprocess | None) -> "DesignSpec":
        """A copy with another public map."""
        return dataclasses.replace(self, preprocess=preprocess)

    # -- serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A deep copy as JSON-safe data (:meth:`from_dict` rebuilds an equal spec).

        Examples
        --------
        >>> from privatelr.datasets import load_iris
        >>> spec = build_design("Species ~ .", load_iris()).spec
        >>> DesignSpec.from_dict(spec.to_dict()) == spec
        True
        """
        out = {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["preprocess"] = None if self.preprocess is None else self.preprocess.to_dict()
        return _jsonable(out)

    @classmethod
    def from_dict(cls, d: dict) -> "DesignSpec":
        """Rebuild and **validate** a spec from :meth:`to_dict`'s output.

        A dict from outside (a saved model) could hold anything, so every field is checked for
        type and shape, and every atom and the response are parsed and re-typed with the same
        interpreter that built them: a spec that loads is one the fitting path could have made.
        ``ValueError`` otherwise.
        """
        from .checks import check_spec_dict

        check_spec_dict(d)
        d = copy.deepcopy(d)
        d["preprocess"] = None if d.get("preprocess") is None else \
            Preprocess.from_dict(d["preprocess"])
        spec = cls(**d)
        _rederive(spec)
        return spec

    # -- rows -----------------------------------------------------------------------------------
    def rows(self, data, *, response: bool = True, raw: bool = False, what: str = "data"
             ) -> "Rows":
        """Design rows for ``data`` (see :class:`Rows`).

        ``response=False`` skips the response (scoring new data). ``raw=True`` skips the public
        map (scaling, projection, clipping).
        """
        frame = as_frame(data, what)
        missing = [v for v in self.variables if v not in frame.columns]
        if response:
            missing += [v for v in names_in(parse(self.response_source))
                        if v not in frame.columns and v not in NAMED_CONSTANTS
                        and v not in missing]
        if missing:
            raise ValueError(f"{what} lacks column(s) {missing} used by the model formula "
                             f"{self.formula_r!r}; available: {list(frame.columns)[:20]}")
        n = len(frame)
        cols = Columns(frame, self.variable_kinds, what=what)
        book = LevelBook(levels=dict(self.levels), learn=False, why="this model")
        complete = np.ones(n, dtype=bool)
        y = None
        if response:
            yvec = _eval(parse(self.response_source), cols, book, n, self.response)
            y, ymiss = _code_response(yvec, self, what)
            complete &= ~ymiss
        atoms = {}
        for atom in self.atoms:
            vec = _eval(parse(atom["name"]), cols, book, n, atom["name"])
            if atom["kind"] == "factor":
                vec = _as_factor(vec, atom, book)
                atoms[atom["id"]] = vec
            else:
                if vec.kind not in ("num", "lgl"):
                    raise ValueError(f"{what}: {atom['name']!r} was numeric when the model was "
                                     f"fitted but is {_TYPE_WORDS[vec.kind]} here")
                atoms[atom["id"]] = vec
            complete &= ~np.broadcast_to(vec.missing(), (n,))
        X = _model_matrix(self, atoms, complete, n)
        if not raw and self.preprocess is not None:
            X = self.preprocess.apply(X, self.intercept)
        return Rows(X=X, y=None if y is None else y[complete], complete=complete,
                    n_dropped=int(n - complete.sum()))

    def transform(self, data, *, what: str = "data") -> tuple[np.ndarray, np.ndarray]:
        """``(X, complete)`` for new data: the final design (public map applied) of the complete
        rows, and the mask of those rows."""
        r = self.rows(data, response=False, what=what)
        return r.X, r.complete


@dataclass(frozen=True)
class Rows:
    """Design rows from :meth:`DesignSpec.rows`: ``X`` and ``y`` (0/1) for the complete rows,
    ``complete`` the mask of those rows in the input, ``n_dropped`` the others."""

    X: np.ndarray
    y: np.ndarray | None
    complete: np.ndarray
    n_dropped: int


def _eval(node, cols: Columns, book: LevelBook, n: int, name: str) -> Vec:
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


def _as_factor(vec: Vec, atom: dict, book: LevelBook) -> Vec:
    from .terms import _match_levels  # noqa: PLC0415  (the one matcher, shared)

    levels = tuple(atom["levels"])
    if vec.kind == "lgl":
        codes = np.where(np.isnan(vec.data), -1, vec.data).astype(np.int64)
        return Vec("fct", codes, ("FALSE", "TRUE"))
    return _match_levels(vec, levels, atom["name"], strict=True)


def _code_response(yvec: Vec, spec: DesignSpec, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The response coded 0/1 by the spec (and its missing mask); values outside the coding are
    an error naming the fix."""
    miss = yvec.missing()
    kind = spec.response_kind
    if kind == "logical":
        if yvec.kind != "lgl":
            raise ValueError(f"{what}: the response {spec.response!r} was logical when the model "
                             f"was fitted but is {_TYPE_WORDS[yvec.kind]} here")
        return np.where(miss, 0.0, yvec.data), miss
    if kind == "numeric":
        if yvec.kind not in ("num", "lgl"):
            raise ValueError(f"{what}: the response {spec.response!r} must be numeric, got "
                             f"{_TYPE_WORDS[yvec.kind]}")
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
        return np.where(miss, 0.0, (yvec.data != values[0]).astype(np.float64)), miss
    from .terms import _match_levels  # noqa: PLC0415

    levels = tuple(level_label(v) if not isinstance(v, str) else v for v in spec.response_levels)
    fct = _match_levels(yvec, levels, spec.response, strict=True)
    return np.where(fct.data > 0, 1.0, 0.0), fct.data < 0


def _model_matrix(spec: DesignSpec, atoms: dict, complete: np.ndarray, n: int) -> np.ndarray:
    m = int(complete.sum())
    if m == 0:
        return np.zeros((0, len(spec.formulaic_columns)))
    frame = {}
    for atom in spec.atoms:
        vec = atoms[atom["id"]]
        if atom["kind"] == "factor":
            frame[atom["id"]] = pd.Categorical.from_codes(
                vec.data[complete], categories=[f"L{i}" for i in range(len(atom["levels"]))])
        else:
            frame[atom["id"]] = np.broadcast_to(vec.data, (n,))[complete]
    X = _formulaic(spec.rhs, pd.DataFrame(frame, index=pd.RangeIndex(m)))
    cols = list(X.columns)
    if cols != list(spec.formulaic_columns):
        raise ValueError(f"the design for new data has columns {cols}, expected "
                         f"{spec.formulaic_columns}; this is a bug in privatelr, please report it")
    return np.asarray(X.to_numpy(), dtype=np.float64)


def _formulaic(rhs: str, frame: pd.DataFrame):
    import formulaic

    try:
        return formulaic.model_matrix(rhs, frame, na_action="ignore")
    except Exception as exc:  # noqa: BLE001 - formulaic's errors name its own internals
        raise ValueError(f"formula: could not build the design ({exc})") from None


# ---------------------------------------------------------------------------------------------
# building the spec
# ---------------------------------------------------------------------------------------------

@dataclass
class Design:
    """A design built from a formula and data (:func:`build_design`).

    Attributes
    ----------
    X : ndarray (n, d)
        The raw design (intercept column first when present) of the complete rows.
    y : ndarray (n,)
        The response coded 0/1.
    y_raw : pandas.Series
        The response as evaluated (before coding), complete rows only.
    spec : DesignSpec
    n_dropped : int
        Rows dropped for missing values.
    complete : ndarray of bool
        The rows of the input that were used.
    """

    X: np.ndarray
    y: np.ndarray
    y_raw: pd.Series
    spec: DesignSpec
    n_dropped: int = 0
    complete: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_classes(self) -> int:
        return self.spec.n_classes


def build_design(formula, data, *, levels: dict | None = None, learn: bool = True,
                 learn_response: bool | None = None, why: str = "a private fit",
                 response_name: str | None = None) -> Design:
    """R's model frame and model matrix for ``formula`` on ``data``.

    Parameters
    ----------
    formula : str or formulaic.Formula
        An R formula with a response, e.g. ``"Species ~ ."`` or ``"am ~ mpg + factor(cyl)"``.
    data : pandas.DataFrame
        The data (a dict of columns or a 2-D array with columns ``X1, X2, ...`` also work).
    levels : dict, optional
        Declared factor levels ``{column: [level, ...]}``.
    learn : bool
        Learn undeclared levels and the numeric response coding from the rows (R's behaviour;
        only for non-private fits). ``False``: everything comes from declarations.
    learn_response : bool, optional
        Whether the response coding may be learned (default: as ``learn``). Label-private
        training (WALR) learns covariate levels from the public features but never the coding
        of the private labels.
    why : str
        Words for the error message when ``learn=False`` and a declaration is missing.
    response_name : str, optional
        Overrides the response's printed name.

    Returns
    -------
    Design

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [True, False, True], "g": ["a", "b", "a"], "x": [0.1, 0.2, 0.3]})
    >>> d = build_design("y ~ x + g", df, levels={"g": ["b", "a"]}, learn=False)
    >>> d.spec.design_columns, d.X[:, 2].tolist()
    (['(Intercept)', 'x', 'ga'], [1.0, 0.0, 1.0])
    """
    frame = as_frame(data)
    spec = make_spec(formula, frame, levels=levels, learn=learn, learn_response=learn_response,
                     why=why, response_name=response_name)
    rows = spec.rows(frame, raw=True)
    if rows.X.shape[0] == 0:
        raise ValueError("every row has a missing value in a model variable; nothing to fit")
    yvec = _eval(parse(spec.response_source), Columns(frame, spec.variable_kinds),
                 LevelBook(dict(spec.levels)), len(frame), spec.response)
    return Design(X=rows.X, y=rows.y, y_raw=_as_series(yvec)[rows.complete].reset_index(drop=True),
                  spec=spec, n_dropped=rows.n_dropped, complete=rows.complete)


def _as_series(vec: Vec) -> pd.Series:
    if vec.kind == "fct":
        return pd.Series(pd.Categorical.from_codes(vec.data, categories=list(vec.levels)))
    if vec.kind == "lgl":
        if np.isnan(vec.data).any():
            return pd.Series(pd.array(np.where(np.isnan(vec.data), 0, vec.data).astype(bool),
                                      dtype="boolean")).mask(np.isnan(vec.data))
        return pd.Series(vec.data.astype(bool))
    if vec.kind == "chr":
        return pd.Series(vec.data, dtype=object)
    return pd.Series(vec.data)


def make_spec(formula, data, *, levels: dict | None = None, learn: bool = False,
              learn_response: bool | None = None, why: str = "a private fit",
              response_name: str | None = None, hint: str | None = None) -> DesignSpec:
    """The :class:`DesignSpec` of ``formula`` for data shaped like ``data``.

    With ``learn=False`` only the column dtypes of ``data`` are used (it may be an empty frame,
    e.g. a Dask DataFrame's ``_meta``); with ``learn=True`` undeclared levels and the numeric
    response coding are learned from its rows.
    """
    text = formula_text(formula)
    frame = as_frame(data)
    columns = list(frame.columns)
    tree = parse(text)
    formulas = [n for n in walk(tree) if (isinstance(n, (Binary, Unary)) and n.op == "~")]
    if not (isinstance(tree, Binary) and tree.op == "~"):
        if isinstance(tree, Unary) and tree.op == "~" and not any(
                n is not tree for n in formulas):
            raise ValueError(f"formula {text!r} needs a response: write 'y ~ x1 + x2' (or "
                             "'y ~ .')")
        raise ValueError(f"formula {text!r} must be 'response ~ terms' with one '~'")
    if len(formulas) != 1:
        raise ValueError(f"formula {text!r} has more than one '~'; write 'response ~ terms'")
    lhs, rhs = tree.left, tree.right
    if any(isinstance(n, Dot) for n in walk(lhs)):
        raise ValueError("formula: '.' is not allowed in the response")

    book = LevelBook(learn=learn, why=why)
    if hint is not None:
        book.hint = hint
    _declared(levels, frame, book)
    kinds: dict[str, str] = {}

    def kind_of(col: str) -> str:
        if col not in kinds:
            kinds[col] = column_type(frame[col], col)
            if kinds[col] == "fct" and book.get(col) is None:
                book.declare(col, [level_label(c) for c in
                                   dict.fromkeys(frame[col].dtype.categories)])
        return kinds[col]

    # ---- response -------------------------------------------------------------------------
    lhs_names = names_in(lhs)
    missing = [v for v in lhs_names if v not in columns and v not in NAMED_CONSTANTS]
    if missing:
        raise ValueError(f"formula: the response uses column(s) {missing} not in data; "
                         f"available: {columns[:20]}")
    for v in lhs_names:
        if v in columns:
            kind_of(v)
    learn_response = learn if learn_response is None else learn_response
    book.learn = learn_response
    yk = infer(lhs, kinds, book)
    response_source = deparse(lhs)
    response = response_name or response_source
    cols = Columns(frame)
    rkind, rlevels, labels = _response_coding(lhs, yk, book, cols, len(frame), response,
                                              learn_response, why,
                                              _raw_values(lhs, frame, levels))
    book.learn = learn

    # ---- terms (through R's text with '.' expanded: the path a loaded spec takes too) -----
    dot_names = [c for c in columns if c not in lhs_names]
    if any(isinstance(n, Dot) for n in walk(rhs)) and not dot_names:
        raise ValueError("formula: '.' stands for no column (data has only the response)")
    terms_tree = parse(deparse(_expand_dot(rhs, dot_names)))
    algebra = _TermAlgebra([])
    rhs_fc = algebra.convert(terms_tree)
    intercept = _intercept_of(terms_tree)
    if len(algebra.nodes) > MAX_ATOMS:
        raise ValueError(f"formula: {len(algebra.nodes)} variables and calls, more than "
                         f"{MAX_ATOMS}")
    atoms, used = [], []
    for aid, node in zip(algebra.ids, algebra.nodes):
        name = deparse(node)
        for v in names_in(node):
            if v in columns:
                kind_of(v)
                if v not in used:
                    used.append(v)
            elif v not in NAMED_CONSTANTS:
                raise ValueError(f"formula: column {v!r} (in {name!r}) is not in data; "
                                 f"available: {columns[:20]}")
        k = infer(node, kinds, book)
        if learn and any(isinstance(n, Call) and n.fn in ("factor", "as.factor")
                         for n in walk(node)):
            _eval(node, cols, book, len(frame), name)     # learns the levels of inner factors
        atoms.append({"id": aid, "name": name, **_atom_levels(node, k, book, cols, len(frame),
                                                              learn, why)})
    variables = [c for c in columns if c in used]

    spec = DesignSpec(
        formula=text, formula_r="", response=response, response_source=response_source,
        response_kind=rkind, response_levels=rlevels, labels=labels, variables=variables,
        variable_kinds={v: kinds[v] for v in columns if v in used or v in lhs_names},
        levels={k: list(v) for k, v in book.levels.items()}, atoms=atoms, rhs=rhs_fc,
        intercept=intercept, formulaic_columns=[], design_columns=[], learned=False)
    fc_cols = _columns_of(rhs_fc, atoms)
    intercept = "Intercept" in fc_cols
    learned = bool(learn and book.learned_any)
    # only the levels the spec's atoms and response use are kept
    return dataclasses.replace(
        spec, formula_r=f"{response} ~ {deparse(terms_tree)}",
        intercept=intercept, formulaic_columns=fc_cols,
        design_columns=[_r_column_name(c, atoms) for c in fc_cols],
        levels={k: list(v) for k, v in book.levels.items()}, learned=learned)


def _raw_values(lhs, frame: pd.DataFrame, levels: dict | None) -> list | None:
    """The declared values of a response that is one column (as the user wrote them, so that
    ``predict(type="class")`` returns them), or None."""
    node = _strip(lhs)
    if not isinstance(node, Name) or node.id not in frame.columns:
        return None
    if levels is not None and node.id in {str(k) for k in levels}:
        vals = {str(k): v for k, v in levels.items()}[node.id]
        return [_jsonable(v) for v in vals]
    dtype = frame[node.id].dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cats = [_jsonable(c) for c in dtype.categories]
        if all(isinstance(c, (str, int, float, bool)) for c in cats) and \
                len({level_label(c) for c in cats}) == len(cats):
            return cats
    return None


def _response_coding(lhs, yk: Kind, book: LevelBook, cols: Columns, n: int, response: str,
                     learn: bool, why: str, raw: list | None):
    key = level_key(lhs)
    if yk.kind == "lgl":
        return "logical", [False, True], [False, True]
    if yk.kind == "num":
        declared = book.get(key) if isinstance(_strip(lhs), Name) else None
        if declared is not None:
            return _factor_response(raw if raw is not None else list(declared))
        if not learn:
            return "numeric", [0, 1], [0, 1]
        vec = _eval(lhs, cols, book, n, response)
        vals = np.unique(vec.data[~np.isnan(vec.data)])
        levels = [int(v) if float(v).is_integer() and abs(v) < 2 ** 53 else float(v)
                  for v in vals.tolist()]
        if not levels:
            raise ValueError(f"the response {response!r} has no values")
        if levels != [0, 1]:
            book.learned_any = True
        return "numeric", levels, _two_labels(levels)
    if raw is not None and yk.levels is not None and \
            [level_label(v) for v in raw] == list(yk.levels):
        return _factor_response(raw)
    levels = yk.levels or book.get(key)
    if levels is None:
        if not learn:
            raise ValueError(
                f"the response {response!r} holds {_TYPE_WORDS[yk.kind]} whose levels would be "
                f"learned from the private rows (one record can change every label), which "
                f"breaks the privacy guarantee of {why}. Declare them: levels={{{key!r}: "
                "[first, second, ...]}} (the first is coded 0) or a pandas Categorical; or use "
                f"a bool or 0/1 response (e.g. I(y == 'yes')){book.hint}")
        vec = _eval(lhs, cols, book, n, response)
        levels = book.resolve(key, vec)
        book.learned_any = True
    return _factor_response(list(levels))


def _factor_response(levels: list):
    if len(levels) > MAX_LEVELS:
        raise ValueError(f"the response has {len(levels)} levels, more than {MAX_LEVELS}")
    return "factor", list(levels), _two_labels(levels)


def _two_labels(levels: list) -> list:
    if len(levels) == 2:
        return list(levels)
    if not levels:
        return [0, 1]
    first = levels[0] if isinstance(levels[0], str) else level_label(levels[0])
    return [levels[0], f"not {first}"]


def _strip(node):
    while isinstance(node, Paren):
        node = node.body
    return node


def _atom_levels(node, k: Kind, book: LevelBook, cols: Columns, n: int, learn: bool, why: str):
    if k.kind == "num":
        return {"kind": "numeric", "levels": None}
    if k.kind == "lgl":
        return {"kind": "factor", "levels": ["FALSE", "TRUE"]}
    key = level_key(node)
    levels = k.levels if k.levels is not None else book.get(key)
    if levels is None or (learn and k.kind == "fct" and k.levels is None):
        if not learn:
            raise ValueError(_undeclared(key, why, book.hint))
        vec = _eval(node, cols, book, n, deparse(node))
        levels = vec.levels if vec.kind == "fct" else book.resolve(key, vec)
        book.learned_any = True
    book.declare(key, levels)
    if len(levels) > MAX_LEVELS:
        raise ValueError(f"formula: {deparse(node)!r} has {len(levels)} levels, more than "
                         f"{MAX_LEVELS}")
    return {"kind": "factor", "levels": list(levels)}


def _undeclared(key: str, why: str, hint: str) -> str:
    from .terms import _undeclared_message  # noqa: PLC0415

    return _undeclared_message(key, why, hint)


def _columns_of(rhs_fc: str, atoms: list) -> list:
    """formulaic's column names for the term structure ``rhs_fc`` over ``atoms``: from a small
    prototype frame in which every level occurs (no data row is involved), after checking
    that the design is not absurdly wide."""
    import formulaic

    nlev = {a["id"]: (len(a["levels"]) if a["kind"] == "factor" else 1) for a in atoms}
    try:
        terms = list(formulaic.Formula(rhs_fc))
    except Exception as exc:  # noqa: BLE001 - formulaic's errors name its own internals
        raise ValueError(f"formula: could not read the terms ({exc})") from None
    width = 0
    for term in terms:
        w = 1
        for factor in term.factors:
            w *= nlev.get(str(factor.expr), 1)
        width += w
    if width > MAX_COLUMNS:
        raise ValueError(f"formula: the design would have about {width:,} columns, more than "
                         f"{MAX_COLUMNS:,}; use fewer interactions or factor levels")
    import formulaic as fc

    try:
        mm = fc.model_matrix(rhs_fc, _prototype(atoms), na_action="ignore", output="sparse")
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"formula: could not build the design ({exc})") from None
    return list(mm.model_spec.column_names)


def _prototype(atoms: list) -> pd.DataFrame:
    """A small atom frame in which every level of every factor occurs (formulaic reads the
    column structure from it; no data row is involved)."""
    size = max([2] + [len(a["levels"]) for a in atoms if a["kind"] == "factor"])
    frame = {}
    for a in atoms:
        if a["kind"] == "factor":
            k = len(a["levels"])
            cats = [f"L{i}" for i in range(k)]
            frame[a["id"]] = pd.Categorical.from_codes(np.arange(size) % max(k, 1) if k else
                                                       np.full(size, -1), categories=cats)
        else:
            frame[a["id"]] = (np.arange(size) % 2).astype(np.float64)
    return pd.DataFrame(frame, index=pd.RangeIndex(size))


def _rederive(spec: DesignSpec) -> None:
    """Check a loaded spec against the code that builds specs: the term structure, atoms and
    column names are derived again from ``formula_r``, every atom and the response re-typed
    from the recorded column kinds and level book; any difference is a ``ValueError``."""
    tree = parse(spec.formula_r)
    if not (isinstance(tree, Binary) and tree.op == "~"):
        raise ValueError("design: formula_r is not 'response ~ terms'")
    algebra = _TermAlgebra([])
    rhs_fc = algebra.convert(tree.right)
    names = [deparse(n) for n in algebra.nodes]
    if rhs_fc != spec.rhs or names != [a["name"] for a in spec.atoms]:
        raise ValueError("design: the stored terms do not match the formula")
    book = LevelBook(levels={k: tuple(v) for k, v in spec.levels.items()}, learn=False,
                     why="this model")
    kinds = dict(spec.variable_kinds)
    for atom, node in zip(spec.atoms, algebra.nodes):
        try:
            k = infer(node, kinds, book)
        except KeyError as exc:
            raise ValueError(f"design: {atom['name']!r} reads {exc.args[0]!r}, which is not "
                             "among the model's variables") from None
        want = _atom_levels(node, k, book, None, 0, False, "this model")
        if want["kind"] != atom["kind"] or want["levels"] != atom["levels"]:
            raise ValueError(f"design: {atom['name']!r} is recorded as {atom['kind']} "
                             f"{atom['levels']}, but its formula gives {want['kind']} "
                             f"{want['levels']}")
    lhs = parse(spec.response_source)
    try:
        yk = infer(lhs, kinds, book)
    except KeyError as exc:
        raise ValueError(f"design: the response reads {exc.args[0]!r}, which is not among the "
                         "model's variables") from None
    _check_response(spec, yk, book.get(level_key(lhs)))
    fc_cols = _columns_of(rhs_fc, spec.atoms)
    if fc_cols != spec.formulaic_columns or spec.intercept != ("Intercept" in fc_cols) or \
            spec.design_columns != [_r_column_name(c, spec.atoms) for c in fc_cols]:
        raise ValueError("design: the stored columns do not match the formula")
    used = {v for n in algebra.nodes for v in names_in(n) if v in spec.variable_kinds}
    read = used | {v for v in names_in(lhs) if v in spec.variable_kinds}
    if set(spec.variables) != used or set(spec.variable_kinds) != read:
        raise ValueError("design: the stored variables do not match the formula")
    if spec.preprocess is not None:
        spec.preprocess.check(spec.n_covariates, spec.intercept)


def _check_response(spec: DesignSpec, yk: Kind, declared) -> None:
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
    if not ok or spec.labels != _two_labels(levels):
        raise ValueError("design: the stored response coding does not match the formula")


# ---------------------------------------------------------------------------------------------
# term algebra: R's formula operators to formulaic's, atoms to columns _aK_
# ---------------------------------------------------------------------------------------------

class _TermAlgebra:
    def __init__(self, dot_names: list[str]):
        self.dot_names = dot_names
        self.keys: dict[str, str] = {}
        self.ids: list[str] = []
        self.nodes: list = []

    def atom(self, node) -> str:
        key = deparse(node)
        if key not in self.keys:
            self.keys[key] = f"_a{len(self.keys)}_"
            self.ids.append(self.keys[key])
            self.nodes.append(node)
        return self.keys[key]

    def convert(self, node) -> str:
        if isinstance(node, Chain) and all(op in _TERM_OPS for op in node.ops):
            parts = [self.convert(node.operands[0])]
            for op, operand in zip(node.ops, node.operands[1:]):
                parts.append(f" {op} {self.convert(operand)}")
            return "".join(parts)
        if isinstance(node, Chain) and node.ops[0].startswith("%") and node.ops[0] != "%in%":
            raise ValueError(f"formula: operator {node.ops[0]!r} is not a term operator; put the "
                             f"expression in I(...): {deparse(node)}")
        if isinstance(node, Binary) and node.op == "^":
            return self._power(node)
        if isinstance(node, Unary) and node.op in ("-", "+"):
            return f"{node.op} {self.convert(node.operand)}"
        if isinstance(node, Paren):
            return "(" + self.convert(node.body) + ")"
        if isinstance(node, Num):
            v = number_value(node)
            if v not in (0.0, 1.0):
                raise ValueError(f"formula: a number in the terms must be 0 or 1 (intercept), "
                                 f"got {node.text}; use I(...) for arithmetic")
            return str(int(v))
        if isinstance(node, Dot):
            if not self.dot_names:
                raise ValueError("formula: '.' stands for no column (data has only the response)")
            return "(" + " + ".join(self.atom(Name(nm)) for nm in self.dot_names) + ")"
        if isinstance(node, (Str, Const)):
            raise ValueError(f"formula: a constant ({deparse(node)}) is not a term")
        return self.atom(node)

    def _power(self, node: Binary) -> str:
        if not isinstance(_strip(node.right), Num):
            raise ValueError(f"formula: the power in {deparse(node)} must be a number")
        k = number_value(_strip(node.right))
        if not k >= 1 or k != k:
            raise ValueError(f"formula: invalid power in {deparse(node)} (R needs a whole "
                             "number >= 1)")
        base = self.convert(node.left)
        # R: (a + b)^k holds interactions up to order k among the variables of a + b, so k
        # beyond their number changes nothing (formulaic would enumerate them all)
        m = len(set(_ATOM_RE.findall(base)))
        k = int(min(k, max(1, m)))
        if sum(math.comb(m, j) for j in range(1, k + 1)) > MAX_TERMS:
            raise ValueError(f"formula: {deparse(node)} expands to more than {MAX_TERMS:,} "
                             "terms; lower the power")
        return f"{base} ^ {k}" if k > 1 else base


import re as _re  # noqa: E402

_ATOM_RE = _re.compile(r"_a\d+_")
_FC_PART = _re.compile(r"^(_a\d+_)(?:\[(?:T\.)?L(\d+)\])?$")


def _r_column_name(fc_name: str, atoms: list[dict]) -> str:
    if fc_name == "Intercept":
        return "(Intercept)"
    by_id = {a["id"]: a for a in atoms}
    parts = []
    for part in fc_name.split(":"):
        m = _FC_PART.match(part)
        if m is None:
            raise ValueError(f"unexpected design column {fc_name!r} from formulaic")
        atom = by_id[m.group(1)]
        parts.append(atom["name"] + (atom["levels"][int(m.group(2))] if m.group(2) else ""))
    return ":".join(parts)


def _expand_dot(node, dot_names: list[str], parent: str | None = None):
    """The tree with ``.`` replaced by the sum of the columns (R's printed formula)."""
    if isinstance(node, Dot):
        if not dot_names:
            return node
        expr = Chain(tuple("+" for _ in dot_names[1:]), tuple(Name(nm) for nm in dot_names)) \
            if len(dot_names) > 1 else Name(dot_names[0])
        return expr if (parent in (None, "+") or len(dot_names) == 1) else Paren(expr)
    if isinstance(node, Chain):
        return Chain(node.ops, tuple(_expand_dot(o, dot_names, node.ops[max(0, i - 1)])
                                     for i, o in enumerate(node.operands)))
    if isinstance(node, Binary):
        return Binary(node.op, _expand_dot(node.left, dot_names, node.op),
                      _expand_dot(node.right, dot_names, node.op))
    if isinstance(node, Paren):
        return Paren(_expand_dot(node.body, dot_names, None))
    if isinstance(node, Unary):
        return Unary(node.op, _expand_dot(node.operand, dot_names, "un"))
    return node


def _intercept_of(node) -> bool:
    """Whether R's terms keep the intercept (``- 1``, ``+ 0``, ``0 +`` remove it)."""
    keep = True
    stack = [(node, 1)]
    while stack:
        n, sign = stack.pop()
        if isinstance(n, Num):
            v = number_value(n)
            if v == 0.0 and sign > 0:
                keep = False
            elif v == 1.0:
                keep = sign > 0
        elif isinstance(n, Chain) and n.ops[0] in ("+", "-"):
            items = [(n.operands[0], sign)] + [
                (o, sign if op == "+" else -sign) for op, o in zip(n.ops, n.operands[1:])]
            stack.extend(reversed(items))
        elif isinstance(n, Unary) and n.op in ("-", "+"):
            stack.append((n.operand, -sign if n.op == "-" else sign))
        elif isinstance(n, Paren):
            stack.append((n.body, sign))
    return keep


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    return obj
