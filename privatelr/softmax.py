r"""The multinomial (softmax) objective over a design in memory, dense or sparse.

.. math::
    J(W) = \frac1n\sum_{i=1}^n a_i\Big(\log\sum_{k=1}^K e^{x_i^\top w_k} - x_i^\top w_{y_i}\Big)
           + \frac\lambda2\|W\|_F^2 + \frac1n\langle B, W\rangle

over :math:`W = (w_1, \dots, w_K) \in \mathbb R^{p\times K}`, as a function of ``vec(W)``
(row-major: entry ``j * K + k`` is :math:`W_{jk}`). ``a_i`` are observation weights (default
1), ``B`` the objective-perturbation noise (default 0). With :math:`P` the softmax
probabilities and :math:`E` the one-hot labels, the gradient is
:math:`X^\top \mathrm{diag}(a)(P - E)/n + \lambda W + B/n` and the Hessian
:math:`\frac1n\sum_i a_i (\mathrm{diag}(p_i) - p_ip_i^\top) \otimes x_ix_i^\top + \lambda I`;
its bounds (the calibration's curvature constant) are derived in
:func:`privatelr.calibration.calibrate_multinomial`.

``X`` is a NumPy array or a ``scipy.sparse`` CSR matrix: every product is ``X @ W`` or
``X.T @ R``, so a sparse design is never densified. The Hessian is formed only when the
solver asks for it (Newton, ``pK`` up to about a thousand); :meth:`SoftmaxObjective.hessp`
gives Hessian-vector products in two passes of O(nnz K) for the Hessian-free solver.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from ._validation import is_sparse

__all__ = ["SoftmaxObjective", "softmax_sums"]


def softmax_sums(X, codes, W, weights=None, order: int = 2):
    r"""The data term's sums over the rows of ``X`` at ``W`` (nothing divided by ``n``):
    ``(Σ a_i(lse_i − z_{i,y_i}), G, H, P)`` with ``G`` the ``(p, K)`` gradient sum
    :math:`\sum_i a_i x_i(p_i - e_{y_i})^	op` (``order >= 1``), ``H`` the ``(pK, pK)`` Hessian
    sum :math:`\sum_i a_i(\mathrm{diag}(p_i) - p_ip_i^	op)\otimes x_ix_i^	op` (``order == 2``)
    and ``P`` the probabilities. The one kernel of the in-memory and the Dask objectives."""
    rows = np.arange(X.shape[0])
    Z = np.asarray(X @ W)
    lse = logsumexp(Z, axis=1)
    terms = lse - Z[rows, codes]
    total = float(terms.sum() if weights is None else weights @ terms)
    if order == 0:
        return total, None, None, None
    P = np.exp(Z - lse[:, None])
    R = P.copy()
    R[rows, codes] -= 1.0
    if weights is not None:
        R *= weights[:, None]
    G = np.asarray(X.T @ R)
    H = _hessian_sum(X, P, weights) if order == 2 else None
    return total, G, H, P


def _hessian_sum(X, P, weights) -> np.ndarray:
    p, K = X.shape[1], P.shape[1]
    sparse = is_sparse(X)
    aP = P if weights is None else P * weights[:, None]
    H4 = np.empty((p, K, p, K))
    for k in range(K):
        for m in range(k, K):
            c = -aP[:, k] * P[:, m]
            if m == k:
                c = c + aP[:, k]
            if sparse:
                block = np.asarray((X.T @ X.multiply(c[:, None]).tocsr()).toarray())
            else:
                block = (X * c[:, None]).T @ X
            H4[:, k, :, m] = block
            H4[:, m, :, k] = block.T
    return H4.reshape(p * K, p * K)


class SoftmaxObjective:
    """Value, gradient, Hessian and Hessian-vector products of :math:`J` (module docstring).

    Parameters
    ----------
    X : (n, p) ndarray or scipy.sparse CSR matrix
    codes : (n,) int array
        Each row's class, an index into ``0 .. classes - 1``.
    classes : int
        ``K``.
    lambda_ : float
    noise : (p K,) array, optional
        The objective-perturbation vector ``vec(B)``.
    weights : (n,) array, optional

    Examples
    --------
    >>> X = np.array([[1.0, 0.5], [1.0, -0.5], [1.0, 0.1]])
    >>> obj = SoftmaxObjective(X, np.array([0, 1, 2]), 3, 0.1)
    >>> f, g, H = obj.evaluate(np.zeros(6))
    >>> bool(np.isclose(f, np.log(3))), H.shape
    (True, (6, 6))
    >>> v = np.arange(6.0)
    >>> bool(np.allclose(obj.hessp(np.zeros(6), v), H @ v))
    True
    """

    def __init__(self, X, codes, classes: int, lambda_: float, noise=None, weights=None):
        self.X = X
        self.n, self.p = X.shape
        self.K = int(classes)
        self.d = self.p * self.K
        self.codes = np.asarray(codes, dtype=np.intp)
        self.a = None if weights is None else np.asarray(weights, dtype=np.float64)
        self.lambda_ = float(lambda_)
        self.linear = np.zeros(self.d) if noise is None else np.asarray(noise, float) / self.n
        self.passes = 0
        self.value_scale = 0.0
        self._at: Any = None       # (w, P) of the last pass, for hessp

    def _pass(self, w, order: int):
        """``(f, g, H)`` at ``w`` (``g``/``H`` None below ``order`` 1/2): one pass over X."""
        w = np.asarray(w, dtype=np.float64)
        self.passes += 1
        total, G, H, P = softmax_sums(self.X, self.codes, w.reshape(self.p, self.K), self.a,
                                      order)
        return self._finish(w, total, G, H, P)

    def _finish(self, w, total, G, H, P):
        data = total / self.n
        ridge, lin = 0.5 * self.lambda_ * float(w @ w), float(self.linear @ w)
        self.value_scale = abs(data) + ridge + abs(lin)
        f = data + ridge + lin
        if G is None:
            return f, None, None
        self._at = (w.copy(), P)
        g = G.ravel() / self.n + self.lambda_ * w + self.linear
        if H is not None:
            H /= self.n
            H[np.diag_indices_from(H)] += self.lambda_
        return f, g, H

    # -- the solver's protocol --------------------------------------------------------------------
    def value(self, w) -> float:
        return self._pass(w, 0)[0]

    def evaluate(self, w, hessian: bool = True):
        """``(value, gradient, Hessian or None)`` at ``w``: one pass."""
        return self._pass(w, 2 if hessian else 1)

    def hessp(self, w, v) -> np.ndarray:
        r"""The Hessian at ``w`` times ``v``: with :math:`U = XV`, :math:`S = P\circ U`,
        :math:`T = a\circ(S - P\circ(S\mathbf 1))`, it is :math:`X^\top T/n + \lambda V`."""
        w = np.asarray(w, dtype=np.float64)
        if self._at is None or not np.array_equal(self._at[0], w):
            self._pass(w, 1)
        P = self._at[1]
        V = np.asarray(v, dtype=np.float64).reshape(self.p, self.K)
        S = P * np.asarray(self.X @ V)
        T = S - P * S.sum(axis=1, keepdims=True)
        if self.a is not None:
            T *= self.a[:, None]
        return np.asarray(self.X.T @ T).ravel() / self.n + self.lambda_ * V.ravel()

    def line(self, w, p, hessian: bool = True):
        """``phi(t) = J(w + t p)`` (each evaluation one pass)."""
        w, p = np.asarray(w, dtype=np.float64), np.asarray(p, dtype=np.float64)
        return lambda t: self.value(w + t * p)

    def information(self, w) -> np.ndarray:
        """The data term's Hessian at ``w`` (no ridge)."""
        H = self._pass(w, 2)[2]
        H[np.diag_indices_from(H)] -= self.lambda_
        return H
