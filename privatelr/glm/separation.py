r"""Separation: when the logistic maximum-likelihood estimate does not exist.

Write each row with positive weight as one or two *oriented* rows: :math:`+x_i` if
:math:`y_i > 0` and :math:`-x_i` if :math:`y_i < 1` (a proportion strictly between 0 and 1 gives
both). The log-likelihood increases without bound along a direction :math:`b \ne 0` exactly when
every oriented row satisfies :math:`\bar x^\top b \ge 0` (Albert & Anderson, Biometrika 1984):
moving along :math:`b` pushes the fitted probabilities of the rows with
:math:`\bar x^\top b > 0` to 0 or 1 and leaves the others unchanged. *Complete* separation: all
rows are pushed; *quasi-complete*: some are.

Two checks, the cheap one first:

1. **A certificate that the estimate exists.** By Stiemke's lemma there is no such :math:`b`
   iff some :math:`\lambda > 0` (one entry per oriented row) has :math:`\bar X^\top\lambda = 0`.
   At a fitted :math:`\hat\mu` the residuals give one: :math:`\lambda = a\,y(1-\hat\mu)` on
   :math:`+x` rows and :math:`a(1-y)\hat\mu` on :math:`-x` rows, and
   :math:`\bar X^\top\lambda = g` is the score, zero at the optimum. With a diagonal scaling
   :math:`D > 0`, any :math:`b = Dc` with :math:`\bar X b \ge 0` has
   :math:`\lambda_{\min}\,\sigma_{\min}(XD)\,\|c\| \le \lambda^\top\bar X b = (Dg)^\top c
   \le \|Dg\|\,\|c\|`, so :math:`\lambda_{\min}\sigma_{\min}(XD) > \|Dg\|` proves :math:`b = 0`.
   Well-posed fits pass this at no extra cost.
2. **A linear program** otherwise: maximise :math:`\sum_k t_k` subject to
   :math:`\bar x_k^\top b \ge t_k`, :math:`0 \le t_k \le 1`, :math:`b` free (HiGHS). The
   directions form a convex cone, so the optimum has :math:`t_k = 1` exactly on the largest set
   of rows any direction can push (the *separated* rows) and 0 elsewhere.

Which coefficients are unbounded: with :math:`X_R` the rows that are not separated, every
direction has :math:`X_R b = 0`, and the directions fill an open cone of that null space; so
coefficient :math:`j` can run to infinity iff :math:`e_j` is not in the row space of
:math:`X_R` — it is not determined by the rows that are not separated. The other coefficients
converge (R's values for them are meaningful; their standard errors too).

Examples
--------
>>> import numpy as np
>>> from privatelr.glm.separation import detect_separation
>>> X = np.column_stack([np.ones(6), [1.0, 2, 3, 4, 5, 6]]); y = np.array([0.0, 0, 0, 1, 1, 1])
>>> s = detect_separation(X, y, np.ones(6), names=("(Intercept)", "x"))
>>> s.kind, s.names
('complete', ('(Intercept)', 'x'))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
from scipy.optimize import linprog

__all__ = ["Separation", "detect_separation", "certify_mle_exists"]


@dataclass(frozen=True)
class Separation:
    """Whether the classes are separated, and which coefficients the likelihood leaves unbounded.

    Attributes
    ----------
    kind : {"none", "quasi-complete", "complete", "unknown"}
        ``"unknown"`` only when the linear program failed to solve.
    unbounded : tuple of int
        Positions of the coefficients that run to infinity (not determined by the rows that
        are not separated).
    names : tuple of str
        Their names.
    direction : tuple of float or None
        A direction (largest entry 1 in absolute value) along which the log-likelihood
        increases without bound; its sign on each unbounded coefficient says which infinity
        that coefficient runs to.
    n_separated_rows : int
        Rows whose fitted probabilities tend to 0 or 1.
    evidence : {"score certificate", "linear program", "not checked"}
        What decided it.
    """

    kind: str
    unbounded: tuple = ()
    names: tuple = ()
    direction: tuple | None = None
    n_separated_rows: int = 0
    evidence: str = "not checked"

    @property
    def separated(self) -> bool:
        """True when the maximum-likelihood estimate does not exist."""
        return self.kind in ("quasi-complete", "complete")

    def message(self) -> str:
        """A sentence for the analyst ("" when the estimate exists)."""
        if not self.separated:
            return ""
        by = ", ".join(self.names)
        runs = []
        if self.direction is not None:
            for j, name in zip(self.unbounded, self.names):
                s = self.direction[j]
                if s != 0:
                    runs.append(f"{name} -> {'+' if s > 0 else '-'}inf")
        how = f"; the likelihood keeps increasing as {', '.join(runs)}" if runs else ""
        return (f"the classes are separated by {by} ({self.kind} separation{how}): the "
                "maximum-likelihood estimate does not exist (R's glm reports it with huge "
                "standard errors)")


def certify_mle_exists(X: np.ndarray, y: np.ndarray, weights: np.ndarray, mu: np.ndarray,
                       sigma_min_scaled: float, scale: np.ndarray) -> bool:
    """True when the residuals at ``mu`` prove that no direction separates the classes.

    ``sigma_min_scaled`` is the smallest singular value of ``X * scale`` (columns scaled by
    ``scale > 0``). See the module docstring for the argument.
    """
    lam = np.concatenate([(weights * y * (1.0 - mu))[y > 0], (weights * (1.0 - y) * mu)[y < 1]])
    if lam.size == 0 or sigma_min_scaled <= 0:
        return False
    score = X.T @ (weights * (y - mu))
    # margin: the score as computed carries rounding of order eps * sum |terms|
    slack = 1e-13 * float(np.abs(X).T @ (weights * np.abs(y - mu)) @ scale)
    return float(lam.min()) * sigma_min_scaled > 2.0 * (float(np.linalg.norm(scale * score)) + slack)


def _oriented(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pos = np.flatnonzero(y > 0)
    neg = np.flatnonzero(y < 1)
    return np.vstack([X[pos], -X[neg]]), np.concatenate([pos, neg])


def detect_separation(X: np.ndarray, y: np.ndarray, weights: np.ndarray, *,
                      names=None) -> Separation:
    """Solve the separation linear program (module docstring) for the rows with positive weight.

    Parameters
    ----------
    X : ndarray (n, d)
    y : ndarray (n,)
        Proportions in [0, 1].
    weights : ndarray (n,)
        Prior weights; rows with weight 0 are ignored.
    names : sequence of str, optional
        Coefficient names for the report.

    Returns
    -------
    Separation
    """
    keep = weights > 0
    X, y = X[keep], y[keep]
    n, d = X.shape
    names = tuple(names) if names is not None else tuple(f"x{j}" for j in range(d))
    big = np.abs(X).max(axis=0)
    scale = 1.0 / np.where(big > 0, big, 1.0)      # entries of order 1 for the solver
    Xbar, row_of = _oriented(X * scale, y)
    m = Xbar.shape[0]
    a_ub = scipy.sparse.hstack([scipy.sparse.csr_matrix(-Xbar), scipy.sparse.identity(m)],
                               format="csr")
    c = np.concatenate([np.zeros(d), -np.ones(m)])
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(m),
                  bounds=[(None, None)] * d + [(0.0, 1.0)] * m, method="highs")
    if res.status != 0:
        return Separation(kind="unknown", evidence="linear program")
    t = res.x[d:]
    pushed = t > 0.5
    if not pushed.any():
        return Separation(kind="none", evidence="linear program")
    separated_rows = np.zeros(n, dtype=bool)
    separated_rows[row_of[pushed]] = True
    direction = res.x[:d] * scale
    direction = direction / np.abs(direction).max()
    direction = np.where(np.abs(direction) < 1e-9, 0.0, direction)
    rest = ~separated_rows
    if not rest.any():
        unbounded = tuple(range(d))
        kind = "complete"
    else:
        unbounded = _not_in_row_space(X[rest] * scale)
        kind = "quasi-complete"
    return Separation(kind=kind, unbounded=unbounded, names=tuple(names[j] for j in unbounded),
                      direction=tuple(float(v) for v in direction),
                      n_separated_rows=int(separated_rows.sum()), evidence="linear program")


def _not_in_row_space(A: np.ndarray) -> tuple:
    """Columns j with the unit vector e_j outside the row space of ``A``."""
    d = A.shape[1]
    r = scipy.linalg.qr(A, mode="r", check_finite=False)[0][: min(A.shape)]
    _, s, vt = np.linalg.svd(r)
    rank = int(np.sum(s > s[0] * 1e-9)) if s.size and s[0] > 0 else 0
    null = vt[rank:].T                    # (d, d - rank): basis of the null space
    if null.shape[1] == 0:
        return ()
    return tuple(int(j) for j in range(d) if np.linalg.norm(null[j]) > 1e-6)
