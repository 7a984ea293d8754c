r"""The frozen :class:`DesignSpec` — everything that turns data into design rows — and
:meth:`DesignSpec.rows`, the one way data becomes design rows.

A spec is plain data (JSON round trip): the formula, the response coding, the data columns and
their kinds, the level book, the atoms (as R text), the term structure and the column names, and
the public map (:class:`~privatelr.design.preprocess.Preprocess`). :meth:`DesignSpec.rows` turns
any data frame — the training data, new data, a Dask partition, a chunk of a CSV file — into
design rows with exactly the spec's columns, one output row per complete input row, the same way
every time. :meth:`DesignSpec.from_dict` re-derives and re-types a spec read from outside, so a
loaded spec holds nothing the fitting path would not make. Specs are built by
:func:`privatelr.design.make_spec`.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._threads import PARALLEL_MIN_BYTES, map_chunks
from .algebra import design_columns, expand_terms, split_offsets
from .checks import check_params, check_spec_dict
from .coding import (TYPE_WORDS, as_factor_atom, atom_levels, check_per_row, check_response,
                     code_response, eval_rows, jsonable)
from .materialize import dense_matrix, sparse_matrix
from .poly import is_poly, poly_atom, poly_matrix, poly_options
from .preprocess import Preprocess
from .rsyntax import MAX_STORED_LENGTH, Binary, deparse, names_in, parse
from .terms import NAMED_CONSTANTS, Columns, LevelBook, infer, level_key
from .values import as_frame

__all__ = ["DesignSpec", "Rows"]


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
        The term structure over atom ids, as text in formulaic's grammar (a record: the terms
        and columns follow R's rules, :mod:`privatelr.design.algebra`).
    intercept : bool
    formulaic_columns, design_columns : list of str
        The internal names of the raw design columns (one part per atom: ``_a3_``,
        ``_a3_[T.L2]``, ``_a5_p2_``; they say how each column is computed) and R's names of
        the same columns.
    learned : bool
        Whether levels or the response coding were learned from the rows (non-private builds).
    preprocess : Preprocess or None
        The public map applied after the design (scaling, projection, clipping).
    params : dict
        Numbers a non-private build learned from the rows for a call, by its R text: the
        ``[center, scale]`` of ``scale(x)``, the breaks of ``cut(x, k)``; scoring new data
        uses them as stored (R's ``makepredictcall``). Empty for private builds.
    offsets : list of str
        R's ``offset(...)`` terms: the R text of each offset's expression. Their per-row sum is
        added to the linear predictor with coefficient 1 (no design column); see
        :attr:`Rows.offset`.
    sparse : bool
        Build the design as a ``scipy.sparse`` CSR matrix: factor dummies with many levels
        stay sparse, at fit and at predict. The values are the dense design's.
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
    params: dict = dataclasses.field(default_factory=dict)
    offsets: list = dataclasses.field(default_factory=list)
    sparse: bool = False

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
        >>> from privatelr.design import build_design
        >>> spec = build_design("Species ~ .", load_iris()).spec
        >>> DesignSpec.from_dict(spec.to_dict()) == spec
        True
        """
        out = {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["preprocess"] = None if self.preprocess is None else self.preprocess.to_dict()
        return jsonable(out)

    @classmethod
    def from_dict(cls, d: dict) -> "DesignSpec":
        """Rebuild and **validate** a spec from :meth:`to_dict`'s output.

        A dict from outside (a saved model) could hold anything, so every field is checked for
        type and shape, and every atom and the response are parsed and re-typed with the same
        interpreter that built them: a spec that loads is one the fitting path could have made.
        ``ValueError`` otherwise.
        """
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
            missing += [v for v in names_in(_stored(self.response_source))
                        if v not in frame.columns and v not in NAMED_CONSTANTS
                        and v not in missing]
        if missing:
            raise ValueError(f"{what} lacks column(s) {missing} used by the model formula "
                             f"{self.formula_r!r}; available: {list(frame.columns)[:20]}")
        n = len(frame)
        cols = Columns(frame, self.variable_kinds, what=what, levels=self.levels)
        book = LevelBook(levels=dict(self.levels), learn=False, why="this model",
                         params=dict(self.params))
        complete = np.ones(n, dtype=bool)
        codes = None
        if response:
            yvec = eval_rows(_stored(self.response_source), cols, book, n, self.response)
            codes, ymiss = code_response(yvec, self, what)
            complete &= ~ymiss
        atoms: dict = {}
        checks = []                 # the vectors whose missing values drop rows
        for atom in self.atoms:
            if atom["kind"] == "matrix":
                node: Any = _stored(atom["name"])
                xvec = eval_rows(poly_options(node)[0], cols, book, n, atom["name"])
                if xvec.kind not in ("num", "lgl"):
                    raise ValueError(f"{what}: {atom['name']!r} needs numbers but its variable "
                                     f"is {TYPE_WORDS[xvec.kind]} here")
                mat = poly_matrix(node, xvec.data, book)
                atoms[atom["id"]] = mat
                complete &= ~np.isnan(mat).any(axis=1)
                continue
            vec = eval_rows(_stored(atom["name"]), cols, book, n, atom["name"])
            if atom["kind"] == "factor":
                vec = as_factor_atom(vec, atom, book)
                atoms[atom["id"]] = vec
            else:
                if vec.kind not in ("num", "lgl"):
                    raise ValueError(f"{what}: {atom['name']!r} was numeric when the model was "
                                     f"fitted but is {TYPE_WORDS[vec.kind]} here")
                atoms[atom["id"]] = vec
            checks.append(vec)
        offset = None
        for text in self.offsets:
            vec = eval_rows(_stored(text), cols, book, n, f"offset({text})")
            values = np.broadcast_to(np.asarray(vec.data, dtype=np.float64), (n,))
            checks.append(vec)
            offset = values if offset is None else offset + values
        # one reduction a vector, on the pool for long columns; a mask only for those with any
        for vec, any_missing in zip(checks, map_chunks(
                len(checks), lambda k: checks[k].any_missing(),
                parallel=8 * n * len(checks) >= PARALLEL_MIN_BYTES)):
            if any_missing:
                complete &= ~np.broadcast_to(vec.missing(), (n,))
        if offset is not None:
            with np.errstate(invalid="ignore"):
                bad = complete & ~np.isfinite(offset)
            if bad.any():
                raise ValueError(f"{what}: the offset ({' + '.join(self.offsets)}) is infinite "
                                 f"in {int(bad.sum())} row(s); an offset must be finite")
        if self.sparse and self.offsets:
            raise ValueError("offset() terms are not available with sparse=True yet; fit a "
                             "dense design, or put the variable in the formula as a term")
        X = _model_matrix(self, atoms, complete, n)
        if not raw and self.preprocess is not None:
            X = self.preprocess.apply(X, self.intercept)
        n_dropped = n - int(np.count_nonzero(complete))
        keep = complete if n_dropped else slice(None)   # no boolean index when every row is kept
        return Rows(X=X, codes=None if codes is None else codes[keep], complete=complete,
                    n_dropped=n_dropped,
                    offset=None if offset is None else np.array(offset[keep]))

    def transform(self, data, *, what: str = "data") -> tuple[np.ndarray, np.ndarray]:
        """``(X, complete)`` for new data: the final design (public map applied) of the complete
        rows, and the mask of those rows (a model with an offset scores with :meth:`rows`)."""
        r = self.rows(data, response=False, what=what)
        return r.X, r.complete


@dataclass(frozen=True)
class Rows:
    """Design rows from :meth:`DesignSpec.rows`: ``X`` and the response's class ``codes``
    (float positions in ``response_levels``) for the complete rows, ``complete`` the mask of
    those rows in the input, ``n_dropped`` the others, and ``offset`` the complete rows'
    offsets (None when the formula has no ``offset()`` term). ``y`` is the binary model's 0/1
    response: the first level against the rest."""

    X: np.ndarray
    codes: np.ndarray | None
    complete: np.ndarray
    n_dropped: int
    offset: np.ndarray | None = None

    @property
    def y(self) -> np.ndarray | None:
        return None if self.codes is None else (self.codes > 0).astype(np.float64)


def _stored(text: str):
    """The tree of R text the package derived and stored (longer texts than a user's formula
    may be: :data:`~privatelr.design.rsyntax.MAX_STORED_LENGTH`)."""
    return parse(text, max_length=MAX_STORED_LENGTH)


def _model_matrix(spec: DesignSpec, atoms: dict, complete: np.ndarray, n: int):
    """The design of the complete rows, built straight from the atoms: a dense array, or for a
    ``sparse`` spec a CSR matrix with the same values
    (:mod:`~privatelr.design.materialize`)."""
    if spec.sparse:
        return sparse_matrix(spec, atoms, complete, n)
    return dense_matrix(spec, atoms, complete, n)


def _rederive(spec: DesignSpec) -> None:
    """Check a loaded spec against the code that builds specs: the term structure, atoms and
    column names are derived again from ``formula_r``, every atom and the response re-typed
    from the recorded column kinds and level book, and every number learned from rows checked
    for what its call needs; any difference is a ``ValueError``."""
    tree = _stored(spec.formula_r)
    if not (isinstance(tree, Binary) and tree.op == "~"):
        raise ValueError("design: formula_r is not 'response ~ terms'")
    rest, offset_nodes = split_offsets(tree.right)
    if [deparse(n) for n in offset_nodes] != list(spec.offsets):
        raise ValueError("design: the stored offsets do not match the formula")
    with warnings.catch_warnings():                # said when the model was fitted
        warnings.simplefilter("ignore", UserWarning)
        expanded = expand_terms(rest, spec.response_source)
    if expanded.rhs != spec.rhs or expanded.keys != [a["name"] for a in spec.atoms]:
        raise ValueError("design: the stored terms do not match the formula")
    book = LevelBook(levels={k: tuple(v) for k, v in spec.levels.items()}, learn=False,
                     why="this model", params=dict(spec.params))
    kinds = dict(spec.variable_kinds)
    lhs = _stored(spec.response_source)
    check_params(spec.params, [tree, lhs])
    for atom, node in zip(spec.atoms, expanded.nodes):
        try:
            check_per_row(node, atom["name"], kinds)
            if is_poly(node):
                want = poly_atom(node, kinds, book)
            else:
                k = infer(node, kinds, book)
                want = atom_levels(node, k, book, None, 0, False, "this model")
        except KeyError as exc:
            raise ValueError(f"design: {atom['name']!r} reads {exc.args[0]!r}, which is not "
                             "among the model's variables") from None
        if want["kind"] != atom["kind"] or want["levels"] != atom["levels"]:
            raise ValueError(f"design: {atom['name']!r} is recorded as {atom['kind']} "
                             f"{atom['levels']}, but its formula gives {want['kind']} "
                             f"{want['levels']}")
    try:
        for node in offset_nodes:
            check_per_row(node, f"offset({deparse(node)})", kinds)
        check_per_row(lhs, spec.response_source, kinds)
        yk = infer(lhs, kinds, book)
    except KeyError as exc:
        raise ValueError(f"design: the response reads {exc.args[0]!r}, which is not among the "
                         "model's variables") from None
    check_response(spec, yk, book.get(level_key(lhs)))
    internal, names = design_columns(expanded.terms, spec.atoms, expanded.intercept)
    if internal != spec.formulaic_columns or spec.intercept != expanded.intercept or \
            spec.design_columns != names:
        raise ValueError("design: the stored columns do not match the formula (a model saved "
                         "by an older privatelr whose columns differ from R's: refit it)")
    used = {v for n in list(expanded.nodes) + offset_nodes for v in names_in(n)
            if v in spec.variable_kinds}
    read = used | {v for v in names_in(lhs) if v in spec.variable_kinds}
    if set(spec.variables) != used or set(spec.variable_kinds) != read:
        raise ValueError("design: the stored variables do not match the formula")
    if spec.preprocess is not None:
        spec.preprocess.check(spec.n_covariates, spec.intercept)
