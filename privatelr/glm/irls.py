r"""Iteratively reweighted least squares as R's ``glm.fit`` runs it (binomial, logit link).

Each iteration solves one weighted least-squares problem: with :math:`\mu = \mu(\eta)`,
working response :math:`z = \eta - o + (y - \mu)/\mu'(\eta)` and working weights
:math:`w = a\,\mu'(\eta)^2/V(\mu)` (:math:`o` the offset, :math:`a` the prior weights),

.. math:: \beta \leftarrow \arg\min_b \sum_i w_i (z_i - x_i^\top b)^2 ,

which for the canonical logit link is exactly a Newton step on the log-likelihood. R stops when
the deviance changes by less than ``tol`` relative, :math:`|D - D_{old}|/(|D| + 0.1) < 10^{-8}`,
or after ``maxit = 25`` iterations. R solves each step by a
(limited-pivoting) QR decomposition of :math:`W^{1/2}X`; here the normal equations
:math:`X^\top W X` are solved by a Cholesky factorisation after scaling them to unit diagonal
(``n d^2`` flops per step, half of QR's ``2 n d^2``), and by QR when the design is
ill-conditioned (:data:`CHOLESKY_MAX_CONDITION`), where the normal equations would lose
accuracy.

Examples
--------
>>> import numpy as np
>>> from privatelr.glm.irls import irls
>>> from privatelr.glm.family import linkfun
>>> X = np.column_stack([np.ones(6), [0.0, 1, 2, 3, 4, 5]]); y = np.array([0.0, 0, 1, 0, 1, 1])
>>> a = np.ones(6); mustart = (a * y + 0.5) / (a + 1)
>>> r = irls(X, y, a, np.zeros(6), linkfun(mustart))
>>> r.converged, np.round(r.coefficients, 4)
(True, array([-3.0351,  1.214 ]))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.linalg.blas import dsyrk

from .family import deviance, linkinv, mu_eta, variance

__all__ = ["IRLSResult", "irls", "weighted_gram", "WLSFactor", "wls_factor",
           "CHOLESKY_MAX_CONDITION"]

#: Above this condition number of the column-scaled design, steps are solved by QR.
CHOLESKY_MAX_CONDITION = 1e5


def weighted_gram(Xs: np.ndarray) -> np.ndarray:
    """``Xs.T @ Xs`` by BLAS ``syrk`` (half the flops of a general product), symmetric."""
    upper = dsyrk(1.0, Xs.T, trans=0)   # Xs.T is Fortran-ordered: no copy
    return np.triu(upper) + np.triu(upper, 1).T


@dataclass(frozen=True)
class WLSFactor:
    """A factorisation of :math:`X^\\top W X`: solves systems and gives its inverse.

    ``kind`` is ``"cholesky"`` (of the matrix scaled to unit diagonal, ``scale`` holding the
    scaling) or ``"qr"`` (``factor`` is the triangular R of :math:`W^{1/2}X`).
    """

    kind: str
    factor: np.ndarray
    scale: np.ndarray

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """:math:`(X^\\top W X)^{-1} rhs`."""
        if self.kind == "cholesky":
            inner = scipy.linalg.cho_solve((self.factor, False), self.scale[:, None] * rhs
                                           if rhs.ndim == 2 else self.scale * rhs)
            return self.scale[:, None] * inner if rhs.ndim == 2 else self.scale * inner
        r = self.factor
        return scipy.linalg.solve_triangular(
            r, scipy.linalg.solve_triangular(r, rhs, trans="T"))

    def inverse(self) -> np.ndarray:
        """:math:`(X^\\top W X)^{-1}`, symmetric."""
        d = self.factor.shape[0]
        if self.kind == "cholesky":
            inner = scipy.linalg.cho_solve((self.factor, False), np.eye(d))
            out = self.scale[:, None] * inner * self.scale[None, :]
        else:
            rinv = scipy.linalg.solve_triangular(self.factor, np.eye(d))
            out = rinv @ rinv.T
        return (out + out.T) / 2.0


def wls_factor(Xs: np.ndarray, kind: str) -> WLSFactor:
    """Factor :math:`X_s^\\top X_s` (``Xs`` the rows scaled by the square-root weights).

    ``kind="cholesky"`` falls back to QR when the scaled normal equations are not numerically
    positive definite.
    """
    if kind == "cholesky":
        gram = weighted_gram(Xs)
        diag = np.diag(gram)
        if np.all(diag > 0):
            scale = 1.0 / np.sqrt(diag)
            try:
                c = scipy.linalg.cholesky(gram * scale[:, None] * scale[None, :], lower=False,
                                          check_finite=False)
                return WLSFactor("cholesky", c, scale)
            except np.linalg.LinAlgError:
                pass
    r = scipy.linalg.qr(Xs, mode="r", check_finite=False)[0][: Xs.shape[1]]
    if np.any(np.abs(np.diag(r)) <= 1e-300):
        raise np.linalg.LinAlgError("the weighted design is singular")
    return WLSFactor("qr", r, np.ones(Xs.shape[1]))


def _solve_wls(Xs: np.ndarray, zs: np.ndarray, kind: str) -> tuple[np.ndarray, WLSFactor]:
    if kind == "qr":
        # solve R b = Q'z from one Householder factorisation (Q never formed)
        qz, r = scipy.linalg.qr_multiply(Xs, zs, mode="right")
        r = r[: Xs.shape[1]]
        return scipy.linalg.solve_triangular(r, qz[: Xs.shape[1]]), WLSFactor(
            "qr", r, np.ones(Xs.shape[1]))
    f = wls_factor(Xs, kind)
    return f.solve(Xs.T @ zs), f


@dataclass(frozen=True)
class IRLSResult:
    """What :func:`irls` returns (an internal record; :class:`~privatelr.glm.GLMFit` is public).

    ``factor`` factors :math:`X^\\top W X` at the working weights of the last solve (R's
    ``vcov``; :func:`~privatelr.glm.fit_glm` reports the information at the estimate instead);
    ``eta`` and ``mu`` are at ``coefficients``.
    """

    coefficients: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    deviance: float
    factor: WLSFactor
    iterations: int
    converged: bool


def irls(X: np.ndarray, y: np.ndarray, weights: np.ndarray, offset: np.ndarray, eta: np.ndarray,
         *, tol: float = 1e-8, maxit: int = 25, solver: str = "cholesky") -> IRLSResult:
    """R's ``glm.fit`` iterations for the logit link from the linear predictor ``eta``.

    Parameters
    ----------
    X : ndarray (n, d)
        Design rows with positive prior weight.
    y, weights, offset, eta : ndarray (n,)
        Response (proportions in [0, 1]), prior weights (> 0), offset, starting linear predictor
        (R: ``linkfun(mustart)`` or ``etastart``).
    tol, maxit : float, int
        R's ``glm.control(epsilon, maxit)``.
    solver : {"cholesky", "qr"}
        How each weighted least-squares step is solved.

    Returns
    -------
    IRLSResult
    """
    mu = linkinv(eta)
    dev_old = deviance(y, mu, weights)
    coef = np.zeros(X.shape[1])
    factor = None
    converged = False
    it = 0
    for it in range(1, maxit + 1):
        d_mu = mu_eta(eta)
        z = (eta - offset) + (y - mu) / d_mu
        sw = np.sqrt(weights * d_mu * d_mu / variance(mu))
        coef, factor = _solve_wls(X * sw[:, None], z * sw, solver)
        eta = X @ coef + offset
        mu = linkinv(eta)
        dev = deviance(y, mu, weights)
        if abs(dev - dev_old) / (abs(dev) + 0.1) < tol:
            converged = True
            break
        dev_old = dev
    assert factor is not None                      # at least one step was taken
    return IRLSResult(coefficients=coef, eta=eta, mu=mu, deviance=dev, factor=factor,
                      iterations=it, converged=converged)

