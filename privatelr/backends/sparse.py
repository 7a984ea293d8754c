r"""Sparse designs in memory: ``scipy.sparse`` rows for the one pipeline, never densified.

:class:`SparseRows` implements :class:`privatelr.rows.RowSource` for a CSR matrix (any
``scipy.sparse`` input is converted to CSR once), and :class:`SparseObjective` the perturbed
ERM objective of :mod:`privatelr.objective` over it:

* row norms from the stored values only (:math:`\sqrt{\sum_j x_{ij}^2}` over a row's non-zeros,
  rescaled by the row's largest value when the squares would overflow), so clipping and the
  norm bound cost O(nnz);
* a pass is two sparse products, ``X @ w`` and ``X.T @ r``: O(nnz + n + d) time, O(n + d) memory;
* the Hessian :math:`X^\top \mathrm{diag}(a\ell''/n) X` is formed as a sparse product and then
  made dense (``d × d``), so memory is O(nnz + d²); for ``d`` above the Newton limit (1000) the
  solver is L-BFGS and no Hessian is formed: O(nnz + d).

The privacy arithmetic is the dense path's: :func:`privatelr.erm.fit_rows` reads ``n``, ``d``
and the scan, calibrates and draws the noise; only where the rows live differs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import (as_pm1_labels, as_weights, clip_sparse_rows, is_sparse,
                           sparse_row_norms, too_large)
from ..objective import loss_terms, objective_value
from ..progress import report_pass
from ..rows import ArrayRows, Scan, class_codes, require_codes
from ..softmax import SoftmaxObjective

__all__ = ["SparseRows", "SparseObjective", "is_sparse"]


class SparseRows:
    """Rows in a CSR matrix, ±1 labels, optional weights (see the module docstring).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> rows = SparseRows(sp.csr_matrix(np.array([[0.6, 0.0], [0.0, -0.8]])), np.array([1, 0]))
    >>> s = rows.scan(bound=0.7)
    >>> s.n, s.d, s.n_over
    (2, 2, 1)
    """

    def __init__(self, X, y=None, weights=None, weights_bound: float | None = None,
                 codes=None):
        import scipy.sparse as sp

        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim} dimensions")
        self.matrix = sp.csr_matrix(X, dtype=np.float64)
        self.matrix.sum_duplicates()
        self.n, self.d = self.matrix.shape
        if self.n == 0 or self.d == 0:
            raise ValueError(f"X must have at least one row and one column, got shape "
                             f"{self.matrix.shape}")
        self.y: Any = None if y is None else as_pm1_labels("y", y, self.n)
        self.w, self.weights_bound = as_weights("weights", weights, self.n, "weights_bound",
                                                weights_bound)
        self.weighted = self.w is not None
        self.offset = None
        self.codes = class_codes(codes, self.n)

    def _with(self, matrix) -> "SparseRows":
        out = object.__new__(SparseRows)
        out.__dict__.update(self.__dict__)
        out.matrix = matrix
        return out

    def scan(self, bound: float | None = None, start: int = 0, what: str = "X") -> Scan:
        data = self.matrix.data
        if not np.isfinite(data).all():
            raise ValueError(f"{what} holds NaN or infinite values; remove or impute them first")
        full = sparse_row_norms(self.matrix)
        norms = full if start == 0 else sparse_row_norms(self.matrix[:, start:])
        n_over = 0 if bound is None else int((norms > bound * (1.0 + 5e-13)).sum())
        max_abs = float(np.abs(data).max()) if data.size else 0.0
        return Scan(n=self.n, d=self.d, n_over=n_over, max_norm=float(full.max()),
                    max_weight=1.0 if self.w is None else float(self.w.max(initial=0.0)),
                    positives=0 if self.y is None else int((self.y > 0).sum()),
                    too_large=too_large(max_abs))

    def mapped(self, fn, d: int):
        """The rows under a public map ``fn`` (:meth:`privatelr.design.Preprocess.apply`):
        a column scaling keeps them sparse; a random projection makes them dense (``n × q``,
        then in memory as :class:`~privatelr.rows.ArrayRows`)."""
        X = fn(self.matrix)
        if X.shape[1] != d:
            raise ValueError(f"the map gave {X.shape[1]} columns, expected {d}")
        if is_sparse(X):
            out = self._with(X.tocsr())
            out.d = d
            return out
        return ArrayRows(X, self.y, self.w, self.weights_bound if self.w is not None else None,
                         codes=self.codes)

    def clipped(self, bound: float, start: int = 0) -> "SparseRows":
        import scipy.sparse as sp

        X = self.matrix
        part = X if start == 0 else X[:, start:]
        if start == 0:
            return self._with(clip_sparse_rows(X, bound))
        return self._with(sp.hstack([X[:, :start], clip_sparse_rows(part.tocsr(), bound)],
                                    format="csr"))

    def objective(self, loss, lambda_: float, noise=None, *, labels: bool = True):
        y = self.y if labels else np.full(self.n, -1.0)
        return SparseObjective(self.matrix, y, loss, lambda_, noise=noise, weights=self.w)

    def softmax_objective(self, classes: int, lambda_: float, noise=None):
        return SoftmaxObjective(self.matrix, require_codes(self), classes, lambda_,
                                noise=noise, weights=self.w)

    def one_vs_rest(self, k: int) -> "SparseRows":
        out = self._with(self.matrix)
        out.y = np.where(require_codes(self) == k, 1, -1).astype(np.int8)
        return out

    def positive_sum(self, clip01: bool):
        X = self.matrix
        data = X.data
        outside = (data < 0.0) | (data > 1.0)
        rows = np.repeat(np.arange(self.n), np.diff(X.indptr))
        rows_out = int(np.unique(rows[outside]).size)
        cols_out = np.zeros(self.d, dtype=bool)
        cols_out[X.indices[outside]] = True
        if clip01:
            X = X.copy()
            X.data = np.clip(X.data, 0.0, 1.0)
        r = (self.y > 0).astype(np.float64)
        if self.w is not None:
            r = r * self.w
        return np.asarray(X.T @ r).ravel(), rows_out, cols_out

    def training_scores(self, coef: np.ndarray):
        return np.asarray(self.matrix @ coef).ravel(), self.y > 0


class SparseObjective:
    r""":math:`J(w) = \frac1n\sum_i a_i\ell(y_ix_i^\top w) + \frac\lambda2\|w\|^2 +
    \frac1n b^\top w` over a CSR design (the dense :class:`privatelr.objective.ERMObjective`'s
    objective; the same solver protocol: ``evaluate``, ``line``, ``value``, ``information``).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from privatelr.losses import LogisticLoss
    >>> X = sp.csr_matrix(np.array([[1.0, 0.5], [1.0, 0.0], [0.0, 0.2]]))
    >>> obj = SparseObjective(X, np.array([1.0, -1.0, 1.0]), LogisticLoss(), 0.1)
    >>> round(obj.evaluate(np.zeros(2))[0], 6)
    0.693147
    """

    def __init__(self, X, y, loss, lambda_: float, noise=None, weights=None):
        self.X = X
        self.XT = X.T.tocsr()
        self.y = y
        self.loss = loss
        self.lambda_ = float(lambda_)
        self.n, self.d = X.shape
        self.linear = np.zeros(self.d) if noise is None else np.asarray(noise, float) / self.n
        self.weights = weights
        self.passes = 0
        self.value_scale = 0.0

    def _terms(self, m, second):
        return loss_terms(self.loss, m, second)

    def _margins(self, w):
        self.passes += 1
        report_pass()
        return self.y * (self.X @ w)

    def _value_from(self, w, lv):
        value, self.value_scale = objective_value(lv, self.weights, self.n, self.lambda_, w,
                                                  self.linear)
        return value

    def value(self, w) -> float:
        w = np.asarray(w, dtype=float)
        return self._value_from(w, self._terms(self._margins(w), False)[0])

    def _hessian(self, d2) -> np.ndarray:
        import scipy.sparse as sp

        c = d2 if self.weights is None else d2 * self.weights
        H = (self.XT @ sp.diags(c / self.n) @ self.X).toarray()
        return H

    def evaluate(self, w, hessian: bool = True):
        w = np.asarray(w, dtype=float)
        m = self._margins(w)
        lv, d1, d2 = self._terms(m, hessian)
        r = self.y * d1
        if self.weights is not None:
            r = r * self.weights
        g = np.asarray(self.XT @ r).ravel() / self.n + self.lambda_ * w + self.linear
        H = None
        if hessian:
            H = self._hessian(d2)
            H[np.diag_indices_from(H)] += self.lambda_
        return self._value_from(w, lv), g, H

    def hessp(self, w, v) -> np.ndarray:
        """The Hessian of ``J`` at ``w`` times ``v``: ``X'(c * (X v)) + lambda v``, two sparse
        products and O(n + d) memory (the margins at ``w`` are kept from the last call)."""
        w = np.asarray(w, dtype=float)
        cached = getattr(self, "_curv", None)
        if cached is None or not np.array_equal(cached[0], w):
            c = self._terms(self._margins(w), True)[2] / self.n
            if self.weights is not None:
                c = c * self.weights
            cached = self._curv = (w.copy(), c)
        return np.asarray(self.XT @ (cached[1] * (self.X @ v))).ravel() + self.lambda_ * v

    def information(self, w) -> np.ndarray:
        m = self._margins(np.asarray(w, dtype=float))
        return self._hessian(self._terms(m, True)[2])

    def line(self, w, p, hessian: bool = True):
        m = self._margins(w)
        u = self.y * (self.X @ p)

        def phi(t: float) -> float:
            return self._value_from(w + t * p, self._terms(m + t * u, False)[0])

        return phi
