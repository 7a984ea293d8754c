r"""Sparse designs in memory: ``scipy.sparse`` rows for the one pipeline, never densified.

:class:`SparseRows` implements :class:`privatelr.rows.RowSource` for a CSR matrix (any
``scipy.sparse`` input is converted to CSR once), and :class:`SparseObjective` the perturbed
ERM objective of :mod:`privatelr.objective` over it:

* row norms from the stored values only (:math:`\sqrt{\sum_j x_{ij}^2}` over a row's non-zeros,
  rescaled by the row's largest value when the squares would overflow), so clipping and the
  norm bound cost O(nnz);
* a gradient costs two sparse products, ``X @ w`` and ``X' r`` (through the CSC view of ``X``:
  no transposed copy), O(nnz + n + d) time and O(n + d) memory; a line search one more
  (``X @ p``, or none when CG's products give it);
* for ``d`` up to the Newton limit (1000) the Hessian :math:`X^\top \mathrm{diag}(a\ell''/n) X`
  is formed as a sparse product and then made dense (``d × d``), so memory is O(nnz + d²);
  above it the solver is Hessian-free (Newton–CG, :func:`privatelr.solver.hessian_free`):
  Hessian-vector products, two sparse products each, CG preconditioned by the Hessian's
  diagonal (one product with the squared values, kept: O(nnz) more memory).

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
        max_abs = max(float(data.max()), -float(data.min())) if data.size else 0.0  # no copy
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
    objective; the same solver protocol: ``evaluate``, ``line``, ``value``, ``information``,
    and ``hessp`` for the Hessian-free Newton method).

    Cost model, as in memory: the margins of the last points are cached, so a line search
    costs one product ``X @ p`` and prepares the gradient (and the curvature weights) at the
    full step, which the next :meth:`evaluate` returns with no product; a Hessian-vector
    product at that point costs two (``X @ v`` and ``X' (c * X v)``); the objective's value is
    computed only when asked for (:meth:`value`, from cached margins: no product). Products
    with ``X'`` go through the CSC view of ``X`` (a scatter into a ``d``-vector, which stays in
    cache), not a transposed copy: no second copy of the matrix, and about twice as fast as
    gathering from an ``n``-vector for every column. Every product is scipy's, in one thread, in
    a fixed order: the bits do not depend on the number of threads.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from privatelr.losses import LogisticLoss
    >>> X = sp.csr_matrix(np.array([[1.0, 0.5], [1.0, 0.0], [0.0, 0.2]]))
    >>> obj = SparseObjective(X, np.array([1.0, -1.0, 1.0]), LogisticLoss(), 0.1)
    >>> round(obj.evaluate(np.zeros(2))[0], 6)
    0.693147
    """

    #: :meth:`evaluate` can skip the value (``value=False``), :meth:`value` gives it later
    lazy_value = True
    #: ``passes`` counts every product with the matrix (``X @ v``, ``X' r``, Hessian-vector
    #: products two each, the Hessian's diagonal and the ``d x d`` Hessian one each): each
    #: reads all its non-zeros once

    def __init__(self, X, y, loss, lambda_: float, noise=None, weights=None):
        self.X = X
        self.y = y
        self.loss = loss
        self.lambda_ = float(lambda_)
        self.n, self.d = X.shape
        self.linear = np.zeros(self.d) if noise is None else np.asarray(noise, float) / self.n
        self.weights = weights
        self.passes = 0
        self.value_scale = 0.0
        self._points: list[Any] = []  # up to two (w, margins, gradient or None, curvature or None)

    # -- the cache of points ---------------------------------------------------------------
    def _point(self, w):
        for pt in self._points:
            if np.array_equal(pt[0], w):
                return pt
        return None

    def _remember(self, w, m):
        """Cache the margins ``m`` of ``w`` (keeping what is known there already) as the most
        recent of the two points kept."""
        pt = self._point(w) or [np.array(w, dtype=float), m, None, None]
        self._points = [pt] + [q for q in self._points if q is not pt][:1]
        return pt

    def _margins(self, w):
        pt = self._point(w)
        if pt is None:
            self.passes += 1
            report_pass()
            pt = self._remember(w, self.y * (self.X @ w))
        return pt

    def _value_from(self, w, lv):
        value, self.value_scale = objective_value(lv, self.weights, self.n, self.lambda_, w,
                                                  self.linear)
        return value

    def _derivatives(self, pt, curvature: bool):
        """The data gradient at the point ``pt`` (one product ``X' r``, kept) and, with
        ``curvature``, the weights ``a l''/n`` of its Hessian (no product, kept)."""
        if pt[2] is None or (curvature and pt[3] is None):
            _, d1, d2 = loss_terms(self.loss, pt[1], curvature, value=False)
            r = self.y * d1
            if self.weights is not None:
                r = r * self.weights
            if pt[2] is None:
                pt[2] = np.asarray(self.X.T @ r).ravel() / self.n
                self.passes += 1
                report_pass()
            if curvature:
                c = d2 / self.n
                pt[3] = c if self.weights is None else c * self.weights
        return pt[2]

    def value(self, w) -> float:
        w = np.asarray(w, dtype=float)
        return self._value_from(w, self.loss.value(self._margins(w)[1]))

    def _hessian(self, c) -> np.ndarray:
        import scipy.sparse as sp

        self.passes += 1

        report_pass()
        return (self.X.T @ sp.diags(c) @ self.X).toarray()

    def evaluate(self, w, hessian: bool = True, value: bool = True):
        w = np.asarray(w, dtype=float)
        pt = self._margins(w)
        g = self._derivatives(pt, hessian) + self.lambda_ * w + self.linear
        H = None
        if hessian:
            H = self._hessian(pt[3])
            H[np.diag_indices_from(H)] += self.lambda_
        f = self._value_from(w, self.loss.value(pt[1])) if value else None
        return f, g, H

    def hessp(self, w, v) -> np.ndarray:
        """The Hessian of ``J`` at ``w`` times ``v``: ``X'(c * (X v)) + lambda v``, two sparse
        products (the curvature weights ``c`` at ``w`` come with its cached margins)."""
        return self.hessp_and_increment(w, v)[0]

    def hessp_and_increment(self, w, v):
        """``(H v, y * (X v))``: :meth:`hessp` and the margins' increment along ``v`` it
        computed on the way (the solver combines them into the line search's increment)."""
        pt = self._margins(np.asarray(w, dtype=float))
        self._derivatives(pt, True)
        xv = self.X @ v
        Hv = np.asarray(self.X.T @ (pt[3] * xv)).ravel() + self.lambda_ * v
        self.passes += 2
        report_pass(2.0)
        xv *= self.y
        return Hv, xv

    def hessian_diagonal(self, w) -> np.ndarray:
        """The diagonal of the Hessian at ``w``, ``sum_i c_i x_ij^2 + lambda``: one product
        with the squared values (kept once computed: ``nnz`` floats), for the solver's
        preconditioner."""
        import scipy.sparse as sp

        pt = self._margins(np.asarray(w, dtype=float))
        self._derivatives(pt, True)
        if getattr(self, "_squares", None) is None:
            X = self.X
            self._squares = sp.csr_matrix((X.data * X.data, X.indices, X.indptr), shape=X.shape)
        self.passes += 1
        report_pass()
        return np.asarray(self._squares.T @ pt[3]).ravel() + self.lambda_

    def information(self, w) -> np.ndarray:
        pt = self._margins(np.asarray(w, dtype=float))
        self._derivatives(pt, True)
        return self._hessian(pt[3])

    def line(self, w, p, hessian: bool = True, increment=None):
        """``phi(t) = J(w + t p)``: one product ``X @ p`` (none when the caller passes the
        margins' ``increment`` ``y * (X @ p)``, e.g. from CG's products), then every ``phi(t)``
        from the margins; ``phi.gradient`` (the gradient at ``w + p``, one product ``X' r``,
        kept for :meth:`evaluate`) and, for a loss with a ``third_derivative_bound``,
        ``phi.third`` (a bound on the third derivative of ``phi`` on ``[0, 1]``), for the
        solver's certificate (:func:`privatelr.solver.newton`)."""
        w = np.asarray(w, dtype=float)
        p = np.asarray(p, dtype=float)
        m = self._margins(w)[1]
        if increment is None:
            u = self.y * (self.X @ p)
            self.passes += 1
            report_pass()
        else:
            u = np.asarray(increment, dtype=float)
        w1 = w + 1.0 * p
        pt1 = self._remember(w1, m + u)
        self._remember(w, m)            # both ends stay cached
        g1 = self._derivatives(pt1, False) + self.lambda_ * w1 + self.linear

        def phi(t: float) -> float:
            if t == 1.0:
                return self._value_from(w1, self.loss.value(pt1[1]))
            return self._value_from(w + t * p, self.loss.value(m + t * u))

        phi.gradient = g1  # type: ignore[attr-defined]
        bound = getattr(self.loss, "third_derivative_bound", None)
        if bound is not None:
            au = np.abs(u)
            cubes = au * au * (au if self.weights is None else au * self.weights)
            phi.third = float(bound) * float(cubes.sum()) / self.n  # type: ignore[attr-defined]
        return phi
