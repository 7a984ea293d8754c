r"""Where the rows come from: the row-source protocol and its in-memory implementation.

Every fit reads its data through a :class:`RowSource`, whatever the backend, so the pipeline
(:func:`privatelr.erm.fit_rows`, the ``dplr`` and WALR front ends) is written once:

* ``n``, ``d`` — rows and design columns (``n`` is the public record count);
* :meth:`~RowSource.scan` — ONE pass: finiteness and magnitude of the values, label and weight
  checks, row norms against a bound (optionally over the columns from ``start`` on, e.g. the
  covariates without the intercept), the largest norm and weight (for the solver's range check)
  and the number of positive labels. Errors carry the same messages on every backend;
* :meth:`~RowSource.mapped` / :meth:`~RowSource.clipped` — the same rows under a public row-wise
  map (scaling, projection) or clipped into a ball;
* :meth:`~RowSource.objective` — the regularised, perturbed ERM objective over the rows, with
  fused value/gradient/Hessian passes (:class:`privatelr.objective.ERMObjective` in memory, one
  map-reduce per pass on Dask);
* :meth:`~RowSource.softmax_objective` — the multinomial objective over rows that carry class
  ``codes`` (:class:`privatelr.softmax.SoftmaxObjective` in memory, a map-reduce on Dask), and
  :meth:`~RowSource.one_vs_rest` — the same rows labelled "class k against the rest";
* :meth:`~RowSource.positive_sum` — ``Σ a_i [y_i = 1] x_i`` (WALR's release), with the check that
  features lie in ``[0, 1]``;
* :meth:`~RowSource.training_scores` — linear predictors and labels for a training diagnostic
  (in memory; ``None`` on Dask, where they would all have to come to the client).

:class:`ArrayRows` is the in-memory implementation; ``privatelr.backends.dask.DaskRows`` the
Dask one. :mod:`privatelr.backends` picks the backend from the type of the data.

Examples
--------
>>> import numpy as np
>>> rows = ArrayRows(np.array([[1.0, 0.3], [1.0, -0.4]]), np.array([1, 0]))
>>> s = rows.scan(bound=1.0, start=1)
>>> s.n, s.n_over, s.positives
(2, 0, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol

import numpy as np

from ._validation import (as_float_matrix, as_pm1_labels, as_weights, clip_rows,
                          max_row_norm, row_norms, scan_rows, too_large)
from .objective import ERMObjective
from .softmax import SoftmaxObjective

__all__ = ["Scan", "RowSource", "ArrayRows", "FrameRows", "is_dask", "array_frame_rows"]


def is_dask(*objs) -> bool:
    """True when any argument is a Dask collection (checked without importing dask)."""
    return any(obj is not None and type(obj).__module__.split(".")[0] == "dask" for obj in objs)


@dataclass(frozen=True)
class Scan:
    """What one scan of the rows found (no row values, only counts and two maxima).

    ``max_norm`` and ``max_weight`` feed the solver's range check only; they are statistics of
    the data and are never printed or released.
    """

    n: int
    d: int
    n_over: int
    max_norm: float
    max_weight: float
    positives: int
    too_large: bool = False

    def check_magnitude(self, what: str = "X") -> None:
        """Values so large that the passes overflow (|x| > 1e150) are refused unless the rows
        are clipped first (the package's one rule and message)."""
        if self.too_large:
            from ._validation import magnitude_error

            raise magnitude_error(what)

    def clipped_to(self, bound: float) -> "Scan":
        """The scan of the same rows after the rows above the bound were clipped onto it, with
        ``bound`` the resulting bound on whole rows: nothing above it, nothing too large (no
        second pass needed)."""
        return replace(self, n_over=0, max_norm=min(self.max_norm, bound), too_large=False)


class RowSource(Protocol):
    """The rows of a fit (module docstring)."""

    n: int
    d: int
    weighted: bool

    def scan(self, bound: float | None = None, start: int = 0, what: str = "X") -> Scan: ...

    def mapped(self, fn: Callable[[np.ndarray], np.ndarray], d: int) -> "RowSource": ...

    def clipped(self, bound: float, start: int = 0) -> "RowSource": ...

    def objective(self, loss, lambda_: float, noise=None, *, labels: bool = True): ...

    def softmax_objective(self, classes: int, lambda_: float, noise=None): ...

    def one_vs_rest(self, k: int) -> "RowSource": ...

    def positive_sum(self, clip01: bool) -> tuple[np.ndarray, int, np.ndarray]: ...

    def training_scores(self, coef: np.ndarray): ...


class ArrayRows:
    """Rows held in memory: a C-contiguous float64 design, ±1 labels, optional weights.

    Parameters
    ----------
    X : (n, d) array
    y : (n,) array of 0/1, bool or -1/+1, or None (label-blind rows, e.g. WALR's trainer)
    weights : (n,) array, optional
        Observation weights in ``[0, weights_bound]``.
    weights_bound : float, optional
        Their public bound (required with ``weights``).
    offset : (n,) array, optional
        Per-row offsets added to the linear predictor (R's ``offset()``; finite).
    codes : (n,) array of class indices 0 .. K - 1, optional
        The rows' classes for a multiclass fit (``y`` is then the binary coding, code > 0).
    """

    def __init__(self, X, y=None, weights=None, weights_bound: float | None = None,
                 offset=None, codes=None):
        self.X = as_float_matrix("X", X, finite=False)
        self.n, self.d = self.X.shape
        self.y: Any = None if y is None else as_pm1_labels("y", y, self.n)
        self.w, self.weights_bound = as_weights("weights", weights, self.n, "weights_bound",
                                                weights_bound)
        self.weighted = self.w is not None
        self.offset = None if offset is None else np.ascontiguousarray(offset, dtype=np.float64)
        if self.offset is not None and self.offset.shape != (self.n,):
            raise ValueError(f"offset must have one value per row ({self.n}), got shape "
                             f"{self.offset.shape}")
        self.codes = class_codes(codes, self.n)

    def _with(self, X) -> "ArrayRows":
        out = object.__new__(ArrayRows)
        out.__dict__.update(self.__dict__)
        out.X = np.ascontiguousarray(X, dtype=np.float64)
        out.n, out.d = out.X.shape
        return out

    def scan(self, bound: float | None = None, start: int = 0, what: str = "X") -> Scan:
        """One pass: finiteness (``ValueError`` naming ``what`` and the problem), row norms;
        values too large for the passes are reported (:meth:`Scan.check_magnitude`), for the
        caller to clip or refuse."""
        if start == 0:
            sq = part = scan_rows(what, self.X, magnitude=False)
        else:                       # the covariates' norms from the same pass
            sq, part = scan_rows(what, self.X, magnitude=False, start=start)
        top = max_row_norm(self.X, sq)
        n_over = 0
        if bound is not None:
            limit, covariates = bound * (1.0 + 5e-13), self.X[:, start:]
            # each row's norm only when the largest is over the bound (else no row is): the
            # usual case costs no per-row square root, mask or count
            if not (top if start == 0 else max_row_norm(covariates, part)) <= limit:
                n_over = int((row_norms(covariates, part) > limit).sum())
        max_abs = 0.0
        if not top <= 1e150:                     # only then can a value exceed 1e150
            max_abs = float(np.abs(self.X).max())
        return Scan(n=self.n, d=self.d, n_over=n_over, max_norm=top,
                    max_weight=1.0 if self.w is None else float(self.w.max(initial=0.0)),
                    positives=0 if self.y is None else int((self.y > 0).sum()),
                    too_large=too_large(max_abs))

    def mapped(self, fn, d: int) -> "ArrayRows":
        out = self._with(fn(self.X))
        if out.d != d:
            raise ValueError(f"the map gave {out.d} columns, expected {d}")
        return out

    def clipped(self, bound: float, start: int = 0) -> "ArrayRows":
        if start == 0:
            return self._with(clip_rows(self.X, bound)[0])
        X = self.X.copy()
        X[:, start:] = clip_rows(np.ascontiguousarray(self.X[:, start:]), bound)[0]
        return self._with(X)

    def objective(self, loss, lambda_: float, noise=None, *, labels: bool = True):
        y = self.y if labels else np.full(self.n, -1.0)
        return ERMObjective(self.X, y, loss, lambda_, noise=noise, weights=self.w,
                            offset=self.offset)

    def softmax_objective(self, classes: int, lambda_: float, noise=None):
        return SoftmaxObjective(self.X, require_codes(self), classes, lambda_, noise=noise,
                                weights=self.w)

    def one_vs_rest(self, k: int) -> "ArrayRows":
        out = self._with(self.X)
        out.y = np.where(require_codes(self) == k, 1, -1).astype(np.int8)
        return out

    def positive_sum(self, clip01: bool) -> tuple[np.ndarray, int, np.ndarray]:
        """``(Σ a_i [y_i = 1] x_i, rows outside [0, 1], columns with such values)``; with
        ``clip01`` every value is clipped into ``[0, 1]`` first (then nothing is outside)."""
        X = self.X
        outside_cells = (X < 0.0) | (X > 1.0)
        rows_out = int(outside_cells.any(axis=1).sum())
        cols_out = outside_cells.any(axis=0)
        if clip01:
            X = np.clip(X, 0.0, 1.0)
        r = (self.y > 0).astype(np.float64)
        if self.w is not None:
            r = r * self.w
        return np.einsum("ij,i->j", X, r), rows_out, np.asarray(cols_out)

    def training_scores(self, coef: np.ndarray):
        """``(X @ coef, positive labels as bool)`` for a training diagnostic."""
        from .scoring import linear_predictor

        eta = linear_predictor(self.X, coef)
        if self.offset is not None:
            eta += self.offset
        return eta, self.y > 0


def class_codes(codes, n: int) -> np.ndarray | None:
    """Class codes as a checked ``intp`` vector of length ``n`` (None stays None)."""
    if codes is None:
        return None
    out = np.asarray(codes)
    if out.shape != (n,):
        raise ValueError(f"codes must have one class per row ({n}), got shape {out.shape}")
    as_int = out.astype(np.intp)
    if not np.array_equal(as_int, out) or (as_int < 0).any():
        raise ValueError("codes must be class indices 0, 1, ..., K - 1")
    return as_int


def require_codes(rows) -> np.ndarray:
    """The rows' class codes — for binary rows without them, the labels' 0/1 coding — or a
    ``ValueError`` (a multiclass fit needs them)."""
    if rows.codes is not None:
        return rows.codes
    if rows.y is not None:
        return (rows.y > 0).astype(np.intp)
    raise ValueError("these rows carry no class codes: a multiclass fit needs them")


@dataclass(frozen=True)
class FrameRows:
    """The design rows of a data frame (:func:`frame_rows`): the rows and what was dropped."""

    rows: Any
    n_total: int
    n_dropped: int


def array_frame_rows(spec, data, *, weights: str | None = None,
                     weights_bound: float | None = None, rows_class=None) -> FrameRows:
    """The raw design rows (no public map) and 0/1 responses of a pandas ``data`` under
    ``spec``; ``weights`` names a column of observation weights (of the complete rows).
    ``rows_class`` builds the row source (default :class:`ArrayRows`; the sparse backend's
    class for a ``sparse`` spec)."""
    r = spec.rows(data, raw=True)
    if r.X.shape[0] == 0:
        raise ValueError("every row has a missing value in a model variable; nothing to fit")
    w = None
    if weights is not None:
        w = np.asarray(data[weights].to_numpy(dtype=np.float64))[r.complete]
    extra = {"offset": r.offset} if r.offset is not None else {}
    codes = r.codes if spec.n_classes > 2 else None      # two classes: the labels are the codes
    rows = (rows_class or ArrayRows)(r.X, r.y, w, weights_bound if w is not None else None,
                                     codes=codes, **extra)
    return FrameRows(rows=rows, n_total=int(r.complete.size), n_dropped=r.n_dropped)
