"""What a non-private ``dplr`` model keeps of its glm fit: R's ``summary(glm(...))`` numbers.

A fit at ``eps = 0`` has no privacy to protect, so it reports glm's unpenalised
maximum-likelihood fit beside R's penalised ``dplr`` coefficients (:mod:`privatelr.inference`
tables it). :class:`GLMSummary` holds the numbers (saved with the model) and, in the session
that fitted it, the training rows, so that ``confint`` can profile the likelihood as R's
``confint(glm)`` does; a model loaded from a file has no rows and offers Wald's intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .fit import fit_glm
from .profile import profile_confint

__all__ = ["GLMSummary", "glm_summary"]

#: Rows x columns above which the training rows are not kept for profiling (400 MB).
KEEP_ROWS_MAX = 50_000_000

#: Largest magnitude a stored number may have (a loaded file is checked far from overflow).
_LIMIT = 1e100
_NUMBERS = ("deviance", "null_deviance", "loglik", "aic", "bic")
_COUNTS = ("df_residual", "df_null", "nobs")


@dataclass(frozen=True, eq=False)
class GLMSummary:
    """glm's fit of a non-private model's design (intercept first, the design's columns).

    Attributes
    ----------
    names : tuple of str
    coefficients, covariance : ndarray
        The unpenalised maximum-likelihood estimate and the inverse Fisher information at it.
    deviance, null_deviance, loglik, aic, bic : float
    df_residual, df_null, nobs : int
    problem : str
        Empty when the estimate exists; else why not (separation, aliased columns): the tables
        raise it.
    """

    names: tuple
    coefficients: np.ndarray
    covariance: np.ndarray
    deviance: float = math.nan
    null_deviance: float = math.nan
    loglik: float = math.nan
    aic: float = math.nan
    bic: float = math.nan
    df_residual: int = 0
    df_null: int = 0
    nobs: int = 0
    problem: str = ""
    rows: tuple | None = field(default=None, repr=False)

    def __reduce__(self):             # the training rows never travel with the model
        state = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "rows"}
        return (_rebuild, (state,))

    def require(self) -> "GLMSummary":
        """``self``, or ``ValueError`` saying why the estimate does not exist."""
        if self.problem:
            raise ValueError(self.problem)
        return self

    def profile_interval(self, idx, level: float) -> tuple[np.ndarray, np.ndarray]:
        """R's profile-likelihood ends for the coefficients at positions ``idx``."""
        self.require()
        if self.rows is None:
            raise ValueError("profile-likelihood intervals refit the training rows, which a "
                             "saved model does not hold; use confint(model, method='wald'), or "
                             "refit the model in this session")
        X, y, w, offset, fit = self.rows
        ci = profile_confint(fit, X, y, w, offset, level=level, parm=list(idx))
        return np.asarray(ci.lower, float), np.asarray(ci.upper, float)

    def to_dict(self) -> dict:
        out = {"names": list(self.names), "coefficients": self.coefficients.tolist(),
               "covariance": self.covariance.tolist(), "problem": self.problem}
        out.update({k: float(getattr(self, k)) for k in _NUMBERS})
        out.update({k: int(getattr(self, k)) for k in _COUNTS})
        return out

    @classmethod
    def from_dict(cls, body: dict, names: list) -> "GLMSummary":
        """Rebuild from :meth:`to_dict` for a model with design columns ``names``
        (``ValueError`` on a malformed body)."""
        keys = {"names", "coefficients", "covariance", "problem", *_NUMBERS, *_COUNTS}
        if not isinstance(body, dict) or set(body) != keys:
            raise ValueError(f"glm: expected the keys {sorted(keys)}")
        if body["names"] != list(names):
            raise ValueError("glm: its names must be the model's design columns")
        d = len(names)
        if not isinstance(body["problem"], str) or len(body["problem"]) > 10_000:
            raise ValueError("glm: problem must be a string")
        coef = np.array(body["coefficients"], dtype=np.float64)
        cov = np.array(body["covariance"], dtype=np.float64)
        unavailable = body["problem"].startswith("glm's fit is not available") and \
            np.isnan(coef).all() and np.isnan(cov).all()     # aliased columns: no numbers
        if coef.shape != (d,) or cov.shape != (d, d) or not unavailable and (
                not np.isfinite(coef).all() or not np.isfinite(cov).all()
                or not np.array_equal(cov, cov.T) or (np.diag(cov) < 0).any()):
            raise ValueError(f"glm: coefficients must be {d} finite numbers and covariance a "
                             f"finite symmetric {d}x{d} matrix with a non-negative diagonal")
        if not unavailable and (np.abs(coef).max() > _LIMIT or np.abs(cov).max() > _LIMIT ** 2):
            raise ValueError(f"glm: coefficients must lie within 1e100 and the covariance "
                             f"within 1e200 (far from overflow; glm never reports more)")
        if not unavailable:
            try:                                  # an inverse information: positive definite
                np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:
                raise ValueError("glm: covariance must be positive definite (the inverse of "
                                 "the Fisher information)") from None
        for k in _NUMBERS:
            v = body[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                    not (abs(v) <= _LIMIT or unavailable and math.isnan(v)):
                raise ValueError(f"glm: {k} must be a finite number")
        for k in _COUNTS:
            v = body[k]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"glm: {k} must be a non-negative integer")
        return cls(names=tuple(names), coefficients=coef, covariance=cov,
                   deviance=float(body["deviance"]), null_deviance=float(body["null_deviance"]),
                   loglik=float(body["loglik"]), aic=float(body["aic"]), bic=float(body["bic"]),
                   df_residual=int(body["df_residual"]), df_null=int(body["df_null"]),
                   nobs=int(body["nobs"]), problem=body["problem"])


def _rebuild(state: dict) -> GLMSummary:
    return GLMSummary(**state)


def glm_summary(X, y01, weights, offset, names, intercept: bool) -> GLMSummary:
    """glm's fit of a design (dense ``X``, 0/1 ``y01``): a :class:`GLMSummary`, with the
    reason in ``problem`` when the maximum-likelihood estimate does not exist (separation) or
    cannot be computed (aliased columns)."""
    names = tuple(names)
    d = len(names)
    X = np.asarray(X, dtype=np.float64)
    try:
        fit = fit_glm(X, y01, weights, offset, intercept_column=0 if intercept else None,
                      names=list(names))
    except ValueError as exc:
        nan = np.full(d, math.nan)
        return GLMSummary(names=names, coefficients=nan, covariance=np.full((d, d), math.nan),
                          problem=f"glm's fit is not available: {exc}")
    problem = ""
    if fit.separation.separated:
        problem = (fit.separation.message() + ". Drop or merge the separating column(s), or "
                   "report the penalised coefficients (lambda_ > 0)")
    keep = X.size <= KEEP_ROWS_MAX and not problem
    return GLMSummary(names=names, coefficients=np.asarray(fit.coefficients, float),
                      covariance=np.asarray(fit.covariance, float),
                      deviance=float(fit.deviance), null_deviance=float(fit.null_deviance),
                      loglik=float(fit.loglik), aic=float(fit.aic), bic=float(fit.bic),
                      df_residual=int(fit.df_residual), df_null=int(fit.df_null),
                      nobs=int(fit.nobs), problem=problem,
                      rows=(X, y01, weights, offset, fit) if keep else None)
