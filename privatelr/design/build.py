r"""From an R formula and declarations to a :class:`~privatelr.design.DesignSpec` (the schema step).

:func:`make_spec` reads the formula, the kinds of the data columns (from their dtypes) and the
declared factor levels, and fixes everything that shapes a fitted coefficient vector: the
response coding, the atoms (variables and calls such as ``log(mpg)``), their factor levels, the
term structure and R's column names. For a private fit it reads **no row of data**: a level set
it cannot take from a declaration (pandas Categorical categories, ``levels={column: [...]}``,
``factor(x, levels = c(...))``, logicals) is an error that says how to declare it, and a numeric
response is coded 0/1 and must hold only 0 and 1. Only a non-private build (``learn=True``:
``eps=0`` or R's ``compat`` mode) learns levels and the numeric response coding from the rows,
as R does.

R's conventions (``model.frame`` / ``model.matrix``):

* ``.`` expands to every column not used in the response, in data order;
* ``:``, ``*``, ``/``, ``%in%``, ``(a + b)^k``, ``- 1`` / ``+ 0`` between terms, expanded by
  R's term algebra (:mod:`privatelr.design.algebra`; ``poly(x, k)`` is one term);
* factors get treatment contrasts with the first level as reference, or all their levels where
  R's ``model.matrix`` gives them (``y ~ f:g``, ``y ~ 0 + f``), and R's column names
  (``Speciesversicolor``, ``factor(cyl)6``, ``x:fb``); logicals are factors ``FALSE``/``TRUE``;
* a term that reads no data column (``I(1)``, ``pi``) is R's "variable lengths differ";
* rows with a missing value in any variable of the model are dropped (R's ``na.omit``);
* the response: logical as is; a factor's first level is 0 and every other level 1 (more than
  two levels: first against the rest); numeric 0/1 (learned: R's smallest value 0); a term
  holding the response is dropped from the right-hand side, as R drops it.

Known difference from R: ordered factors use treatment contrasts (R would use polynomial
contrasts); the others are listed in README's "Porting from R".

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

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .algebra import design_columns, expand_dot, expand_terms, split_offsets
from .coding import MAX_LEVELS, atom_levels, check_per_row, eval_rows, raw_values, \
    response_coding
from .poly import is_poly, poly_atom, poly_matrix, poly_options
from .preprocess import standardise
from .rsyntax import (MAX_STORED_LENGTH, Binary, Call, Dot, Unary, deparse, names_in, parse,
                      walk)
from .spec import DesignSpec
from .terms import LEARNING_FUNCTIONS, NAMED_CONSTANTS, Columns, LevelBook, infer
from .values import (Vec, as_frame, column_type, labels_of, level_label,
                     numeric_level_problem)

__all__ = ["make_spec", "build_design", "Design", "as_frame", "formula_text", "scaled", "Scaled",
           "MAX_ATOMS"]

#: Most distinct variables/calls one formula may use.
MAX_ATOMS = 10_000


def _formulaic_text(formula) -> str:
    lhs = getattr(formula, "lhs", None)
    rhs = getattr(formula, "rhs", None)
    if lhs is None or rhs is None:
        raise ValueError("a formulaic.Formula needs a response: Formula('y ~ x1 + x2')")
    return f"{lhs} ~ {rhs}"


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


def _declared(levels, frame: pd.DataFrame, book: LevelBook) -> dict[str, str]:
    """Check and declare ``levels=``; returns the declared columns' R kinds (read once)."""
    kinds: dict[str, str] = {}
    if levels is None:
        return kinds
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
        kinds[col] = column_type(frame[col], col)
        if kinds[col] == "num":
            problem = next(filter(None, (numeric_level_problem(v, f"column {col!r}")
                                         for v in vals)), None)
            if problem is not None:
                raise ValueError(f"levels[{col!r}]: {problem}")
        dtype = frame[col].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            cats = [level_label(c) for c in dtype.categories]
            if cats != labels:
                raise ValueError(f"levels[{col!r}] = {labels} differs from the column's "
                                 f"categories {cats}; give one declaration")
        book.declare(col, labels)
    return kinds


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
    assert rows.y is not None               # the rows were asked with their response
    yvec = eval_rows(parse(spec.response_source, max_length=MAX_STORED_LENGTH),
                     Columns(frame, spec.variable_kinds),
                     LevelBook(dict(spec.levels), params=dict(spec.params)), len(frame),
                     spec.response)
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
    # a declared column is not declared again from its categories: its kind is all kind_of needs
    kinds = _declared(levels, frame, book)

    def kind_of(col: str) -> str:
        if col not in kinds:
            kinds[col] = column_type(frame[col], col)
            if kinds[col] == "fct" and book.get(col) is None:
                book.declare(col, [level_label(c) for c in
                                   dict.fromkeys(frame[col].dtype.categories)])
        return kinds[col]

    # ---- response -------------------------------------------------------------------------
    known = set(columns)
    lhs_names = names_in(lhs)
    missing = [v for v in lhs_names if v not in known and v not in NAMED_CONSTANTS]
    if missing:
        raise ValueError(f"formula: the response uses column(s) {missing} not in data; "
                         f"available: {columns[:20]}")
    check_per_row(lhs, deparse(lhs), known)
    for v in lhs_names:
        if v in known:
            kind_of(v)
    learn_response = learn if learn_response is None else learn_response
    book.learn = learn_response
    yk = infer(lhs, kinds, book)
    response_source = deparse(lhs)
    response = response_name or response_source
    cols = Columns(frame)
    rkind, rlevels, labels = response_coding(lhs, yk, book, cols, len(frame), response,
                                              learn_response, why,
                                              raw_values(lhs, frame, levels))
    book.learn = learn

    # ---- terms (through R's text with '.' expanded: the path a loaded spec takes too) -----
    lhs_set = set(lhs_names)
    dot_names = [c for c in columns if c not in lhs_set]
    if any(isinstance(n, Dot) for n in walk(rhs)) and not dot_names:
        raise ValueError("formula: '.' stands for no column (data has only the response)")
    terms_tree = parse(deparse(expand_dot(rhs, dot_names)), max_length=MAX_STORED_LENGTH)
    terms_rest, offset_nodes = split_offsets(terms_tree)
    expanded = expand_terms(terms_rest, response_source)
    if len(expanded.nodes) > MAX_ATOMS:
        raise ValueError(f"formula: {len(expanded.nodes)} variables and calls, more than "
                         f"{MAX_ATOMS}")
    atoms: list = []
    used: set = set()

    def read(node, label: str) -> None:
        """Record the data columns ``node`` reads (each must exist, and one must be read)."""
        for v in names_in(node):
            if v in known:
                kind_of(v)
                used.add(v)
            elif v not in NAMED_CONSTANTS:
                raise ValueError(f"formula: column {v!r} (in {label!r}) is not in data; "
                                 f"available: {columns[:20]}")
        check_per_row(node, label, known)

    def learn_numbers(node, name: str) -> None:
        """A non-private build learns a call's inner levels and numbers from the rows."""
        if learn and any(isinstance(n, Call) and n.fn in LEARNING_FUNCTIONS
                         for n in walk(node)):
            eval_rows(node, cols, book, len(frame), name)

    for aid, name, node in zip(expanded.ids, expanded.keys, expanded.nodes):
        read(node, name)
        if is_poly(node):
            atoms.append({"id": aid, "name": name, **poly_atom(node, kinds, book)})
            if learn:                                       # learns the coefficients
                xvec = eval_rows(poly_options(node)[0], cols, book, len(frame), name)
                poly_matrix(node, xvec.data, book)
            continue
        k = infer(node, kinds, book)
        learn_numbers(node, name)
        atoms.append({"id": aid, "name": name, **atom_levels(node, k, book, cols, len(frame),
                                                              learn, why)})
    offsets = []
    for node in offset_nodes:          # per-row values added to the linear predictor
        name = deparse(node)
        read(node, f"offset({name})")
        if infer(node, kinds, book).kind not in ("num", "lgl"):
            raise ValueError(f"formula: offset({name}) must be numeric")
        learn_numbers(node, name)
        offsets.append(name)
    internal, names = design_columns(expanded.terms, atoms, expanded.intercept)
    return DesignSpec(
        formula=text, formula_r=f"{response} ~ {deparse(terms_tree)}", response=response,
        response_source=response_source, response_kind=rkind, response_levels=rlevels,
        labels=labels, variables=[c for c in columns if c in used],
        variable_kinds={v: kinds[v] for v in columns if v in used or v in lhs_set},
        levels={k: list(v) for k, v in book.levels.items()}, atoms=atoms, rhs=expanded.rhs,
        intercept=expanded.intercept, formulaic_columns=internal, design_columns=names,
        learned=bool(learn and book.learned_any),
        params={k: list(v) for k, v in book.params.items()}, offsets=offsets)


@dataclass
class Scaled:
    """Result of :func:`scaled`: ``data`` (scaled covariates, response last) and ``scale``."""

    data: pd.DataFrame
    scale: float
    center: np.ndarray
    sd: np.ndarray


def scaled(fml, data, *, levels: dict | None = None) -> Scaled:
    """R's ``scaled(fml, data)``: standardise the covariates and shrink them into the unit ball.

    The covariate columns of the model matrix (intercept excluded) are centred, divided by
    their standard deviations and divided by the largest resulting row norm, so every row lies
    in the unit ball. ``scale`` is that last factor (R's ``1/sf``). The response is appended as
    the last column under its R name. Column names are R's model-matrix names (R's
    ``data.frame`` would additionally mangle names like ``factor(cyl)6``).

    **Not private**: the centre, the standard deviations and the largest norm are computed from
    the data without noise (levels are learned as R learns them); a model trained on the result
    is private only for the scaled data.

    Examples
    --------
    >>> from privatelr.datasets import load_iris
    >>> s = scaled("Species ~ .", load_iris())
    >>> round(s.scale, 6), list(s.data.columns)[-1]
    (0.283621, 'Species')
    """
    d = build_design(fml, data, levels=levels, learn=True)
    k = int(d.spec.intercept)
    cov = d.X[:, k:]
    center, sd, factor = standardise(cov)
    z = (cov - center) / sd * factor
    out = pd.DataFrame(z, columns=d.spec.design_columns[k:])
    out[d.spec.response] = d.y_raw.values
    return Scaled(data=out, scale=factor, center=center, sd=sd)
