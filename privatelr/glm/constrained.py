r"""Refits with one coefficient held fixed: the inner problem of profile likelihood.

With :math:`\beta_j = b` fixed, the other coefficients maximise the logistic likelihood, i.e.
solve :math:`X_{-j}^\top a(y - \mu) = 0`. Profiling refits many nearby points, so each refit

* starts from the previous point moved along the tangent of the profile path,
  :math:`d\beta_{-j}/db = -H_{-j,-j}^{-1}H_{-j,j}` (:math:`H = X^\top W X`,
  :math:`W = a\mu(1-\mu)`; the tangent's linear predictor is computed once per Hessian);
* takes *chord* steps :math:`\Delta = H_{-j,-j}^{-1}X_{-j}^\top a(y - \mu)` with a Hessian kept
  from earlier points — two passes over the rows (:math:`X\Delta`, :math:`X^\top r`,
  ``4 n d`` flops) instead of Newton's ``n d^2`` — and recomputes :math:`H` at the current
  point only when a step shrinks the Newton decrement :math:`g^\top H^{-1}g` less than
  100-fold (far from where :math:`H` was computed, or small ``n``);
* stops when the decrement, about the deviance still to gain, is below ``tol`` (1e-12);
* works on the logistic likelihood itself, not R's guarded family (whose deviance is flat where
  :math:`|\eta| > 30`, where a line search would stall): the deviance
  (:func:`~privatelr.glm.family.exact_deviance`) is convex, and a step is halved until it does
  not increase, so the refit converges from any start.

Examples
--------
>>> import numpy as np
>>> from privatelr.glm.constrained import ConstrainedFitter, hessian
>>> X = np.column_stack([np.ones(6), [0.0, 1, 2, 3, 4, 5]]); y = np.array([0.0, 0, 1, 0, 1, 1])
>>> w, o = np.ones(6), np.zeros(6)
>>> fitter = ConstrainedFitter(X, y, w, o, 1, hessian(X, w, X @ np.array([-2.5, 1.0])))
>>> pt = fitter.fit(*fitter.predict(fitter.start(np.array([0.0, 0.0])), 1.0))  # slope held at 1
>>> pt.converged, round(float(pt.beta[0]), 4), round(pt.deviance, 4)   # intercept refitted
(True, -2.5, 5.0175)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.special import expit, xlogy

from .family import exact_deviance
from .irls import weighted_gram

__all__ = ["ConstrainedFitter", "PathPoint", "hessian", "SPDSolver"]


def hessian(X: np.ndarray, weights: np.ndarray, eta: np.ndarray) -> np.ndarray:
    r"""The Fisher information :math:`X^\top W X`, :math:`W = a\,\mu(1-\mu)`, at ``eta``."""
    mu = expit(eta)
    return weighted_gram(X * np.sqrt(weights * mu * (1.0 - mu))[:, None])


class SPDSolver:
    """Solves with a symmetric positive (semi-)definite matrix: Cholesky after scaling to unit
    diagonal, an eigen-decomposition with tiny eigenvalues dropped when that fails."""

    def __init__(self, a: np.ndarray):
        d = a.shape[0]
        diag = np.diag(a).copy()
        self.scale = 1.0 / np.sqrt(np.where(diag > 0, diag, 1.0))
        scaled = a * self.scale[:, None] * self.scale[None, :]
        self.chol = None
        self.dropped = False                 # directions left out (singular matrix)
        try:
            self.chol = scipy.linalg.cho_factor(scaled, check_finite=False)
        except np.linalg.LinAlgError:
            vals, vecs = np.linalg.eigh(scaled)
            keep = vals > vals[-1] * d * np.finfo(float).eps
            self.vecs, self.inv_vals = vecs[:, keep], 1.0 / vals[keep]
            self.dropped = not keep.all()

    def solve(self, b: np.ndarray) -> np.ndarray:
        """:math:`A^{-1}b` (``b`` a vector or a matrix of columns)."""
        sb = (self.scale * b.T).T
        if self.chol is not None:
            x = scipy.linalg.cho_solve(self.chol, sb, check_finite=False)
        else:
            x = self.vecs @ ((self.vecs.T @ sb).T * self.inv_vals).T
        return (self.scale * x.T).T


@dataclass(frozen=True)
class PathPoint:
    """A constrained refit: full coefficients (``beta[j]`` the fixed value), linear predictor,
    fitted probabilities, deviance, the score of coefficient ``j`` (:math:`\\partial\\ell/\\partial\\beta_j`),
    and whether the decrement test was met."""

    beta: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    deviance: float
    score_j: float
    converged: bool
    iterations: int


class ConstrainedFitter:
    """Refits of the model with coefficient ``j`` fixed, sharing one Hessian between refits.

    Parameters
    ----------
    X, y, weights, offset : ndarray
        The rows of the fit (positive weights).
    j : int
        The fixed coefficient.
    hess : ndarray (d, d)
        A starting Hessian :math:`X^\\top W X` (e.g. at the estimate); replaced when stale.
    tol : float
        Stop when the Newton decrement (deviance units) is below this.
    maxit : int
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, weights: np.ndarray, offset: np.ndarray,
                 j: int, hess: np.ndarray, *, tol: float = 1e-12, maxit: int = 100):
        self.X, self.y, self.w, self.o, self.j = X, y, weights, offset, j
        self.free = np.delete(np.arange(X.shape[1]), j)
        self.tol, self.maxit = tol, maxit
        self._entropy = xlogy(y, y) + xlogy(1.0 - y, 1.0 - y)
        self.set_hessian(hess)

    def deviance(self, eta: np.ndarray) -> float:
        """The deviance at linear predictor ``eta``."""
        return exact_deviance(self.y, eta, self.w, self._entropy)

    def set_hessian(self, hess: np.ndarray) -> None:
        """Use ``hess`` (full d x d) for the next steps and tangents."""
        self.hess = hess
        self.solver = SPDSolver(hess[np.ix_(self.free, self.free)])
        self._tangent: tuple[np.ndarray, np.ndarray] | None = None

    def tangent(self) -> np.ndarray:
        """:math:`d\beta/db` along the profile path (1 in position ``j``), from the current
        Hessian."""
        if self._tangent is None:
            out = np.zeros(self.X.shape[1])
            out[self.free] = -self.solver.solve(self.hess[self.free, self.j])
            out[self.j] = 1.0
            self._tangent = (out, self.X @ out)
        return self._tangent[0]

    def predict(self, point: PathPoint, b: float) -> tuple[np.ndarray, np.ndarray]:
        """A start for the refit at ``b``: ``point`` moved along the tangent (coefficients and
        linear predictor; one pass over the rows per Hessian, not per point)."""
        t = self.tangent()
        assert self._tangent is not None              # set by tangent()
        db = b - point.beta[self.j]
        beta = point.beta + t * db
        beta[self.j] = b
        return beta, point.eta + self._tangent[1] * db

    def start(self, beta: np.ndarray) -> PathPoint:
        """The point ``beta`` itself (e.g. the estimate), as a start for :meth:`predict`."""
        eta = self.X @ beta + self.o
        return PathPoint(beta=np.array(beta, float), eta=eta, mu=expit(eta),
                         deviance=self.deviance(eta), score_j=np.nan, converged=True,
                         iterations=0)

    def fit(self, beta: np.ndarray, eta: np.ndarray) -> PathPoint:
        """Refit from ``beta`` (its entry ``j`` the fixed value) with ``eta = X beta + offset``."""
        X, w, free = self.X, self.w, self.free
        beta = np.array(beta, dtype=float)
        mu = expit(eta)
        dev = self.deviance(eta)
        dec_prev, fresh_at, converged, it, g = np.inf, -1, False, 0, None
        for it in range(1, self.maxit + 1):
            g = X.T @ (w * (self.y - mu))
            step = self.solver.solve(g[free])
            dec = float(g[free] @ step)
            if dec > self.tol and dec > 0.01 * dec_prev and fresh_at != it:
                # slow: Newton from here
                self.set_hessian(weighted_gram(X * np.sqrt(w * mu * (1.0 - mu))[:, None]))
                fresh_at = it
                step = self.solver.solve(g[free])
                dec = float(g[free] @ step)
            if dec <= self.tol:
                converged = not self.solver.dropped
                break
            dec_prev = dec
            full = np.zeros_like(beta)
            full[free] = step
            x_step = X @ full
            t = 1.0
            while True:
                eta_new = eta + t * x_step
                dev_new = self.deviance(eta_new)
                if dev_new <= dev or t < 1e-12:
                    break
                t *= 0.5
            if dev_new > dev:                 # no step lowers the deviance: optimal to rounding
                converged, g = True, None
                break
            beta, eta, dev, g = beta + t * full, eta_new, dev_new, None
            mu = expit(eta)
        score_j = float(g[self.j]) if g is not None else float(X[:, self.j] @ (w * (self.y - mu)))
        return PathPoint(beta=beta, eta=eta, mu=mu, deviance=dev, score_j=score_j,
                         converged=converged, iterations=it)
