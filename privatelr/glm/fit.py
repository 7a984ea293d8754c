r"""``glm(y ~ ..., family = binomial)`` on a design matrix: the unpenalised maximum-likelihood fit.

Definitions (as R's ``glm`` and ``summary.glm``; :math:`a_i` the prior weights, :math:`\mu_i`
the fitted probabilities, :math:`k` the number of coefficients, :math:`n_+` the rows with
:math:`a_i > 0`):

* deviance :math:`D = 2\sum_i a_i\{y_i\log(y_i/\mu_i) + (1-y_i)\log((1-y_i)/(1-\mu_i))\}`;
* null deviance: the same for the intercept-only model fitted with the same weights and offset
  (:math:`\mu_i = \sum a y/\sum a` without offset), or for :math:`\mu_i = \mathrm{logit}^{-1}(o_i)`
  when the model has no intercept; ``df_null`` :math:`= n_+ - 1` (or :math:`n_+`),
  ``df_residual`` :math:`= n_+ - k`;
* log-likelihood as R's ``logLik.glm`` (see :mod:`privatelr.glm.family`; with 0/1 responses it is
  :math:`-D/2`), :math:`\mathrm{AIC} = -2\ell + 2k`, :math:`\mathrm{BIC} = -2\ell + k\log n_+`;
* covariance: the inverse Fisher information :math:`(X^\top W X)^{-1}` at :math:`\hat\beta`,
  :math:`W = a\,\mu(1-\mu)` (with R's guards: :math:`a\,\mu'(\eta)^2/V(\mu)`), standard
  errors its root diagonal, :math:`z = \hat\beta/\mathrm{se}`, :math:`p = 2\Phi(-|z|)`.
  R's ``vcov`` uses the weights of its last IRLS step instead, one step earlier; the two
  differ by about that step's size (5e-8 to 7e-8 relative on the reference models; exact on
  separated fits, where both are R's guarded weights). statsmodels uses the estimate's.

Examples
--------
>>> import numpy as np
>>> from privatelr.glm import fit_glm
>>> from privatelr.datasets import load_mtcars
>>> cars = load_mtcars()
>>> X = np.column_stack([np.ones(32), cars["wt"], cars["hp"]])
>>> fit = fit_glm(X, cars["am"], names=["(Intercept)", "wt", "hp"])
>>> np.round(fit.coefficients, 5), round(fit.aic, 4)     # R: 18.86630 -8.08348 0.03626, 16.0591
(array([18.8663 , -8.08348,  0.03626]), 16.0591)
>>> np.round(fit.std_errors, 4)
array([7.4436, 3.0687, 0.0177])
>>> fit.separation.kind
'none'
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.special import ndtr, ndtri

from .._validation import as_float_matrix, check_bool, check_int, check_real, real_vector
from .family import deviance, linkfun, linkinv, loglik, mu_eta, variance
from .irls import CHOLESKY_MAX_CONDITION, irls, weighted_gram, wls_factor
from .separation import Separation, certify_mle_exists, detect_separation

__all__ = ["GLMFit", "ConfidenceIntervals", "fit_glm", "GLMData", "prepare"]

#: A column whose part not explained by the columns before it is below this fraction of its norm
#: is aliased (R's ``qr`` tolerance, 1e-7).
ALIAS_TOLERANCE = 1e-7


@dataclass(frozen=True)
class ConfidenceIntervals:
    """Confidence intervals for some coefficients of a :class:`GLMFit`.

    Attributes
    ----------
    lower, upper : ndarray
        The ends, NaN where an end does not exist or was not found (see ``notes``).
    names : tuple of str
    parm : tuple of int
        Positions of the coefficients in the fit.
    level : float
    method : {"profile", "wald"}
    root : {"spline", "exact"} or None
        For profile intervals: MASS's grid and spline (R's numbers) or the exact root.
    notes : tuple of str
        One sentence per end that is NaN or should not be read as a bound.
    """

    lower: np.ndarray
    upper: np.ndarray
    names: tuple
    parm: tuple
    level: float
    method: str
    root: str | None = None
    notes: tuple = ()

    def as_array(self) -> np.ndarray:
        """The intervals as a (k, 2) array, R's ``confint`` layout."""
        return np.column_stack([self.lower, self.upper])


@dataclass(frozen=True)
class GLMFit:
    """The binomial-logit maximum-likelihood fit, as R's ``glm`` and ``summary.glm`` report it.

    ``iterations`` is a diagnostic (not for print). When ``separation.separated`` the estimate
    does not exist: the values are where R's iterations stop (huge standard errors), and
    :meth:`require_mle` raises.
    """

    coefficients: np.ndarray
    covariance: np.ndarray
    std_errors: np.ndarray
    z_values: np.ndarray
    p_values: np.ndarray
    names: tuple
    deviance: float
    null_deviance: float
    df_residual: int
    df_null: int
    loglik: float
    aic: float
    bic: float
    nobs: int
    intercept_column: int | None
    converged: bool
    iterations: int
    fitted_boundary: bool
    separation: Separation
    tol: float
    maxit: int

    @property
    def rank(self) -> int:
        """The number of coefficients (aliased columns are refused, so the full width)."""
        return int(self.coefficients.size)

    def require_mle(self) -> GLMFit:
        """Return ``self``, or raise ``ValueError`` when the estimate does not exist.

        Examples
        --------
        >>> import numpy as np
        >>> from privatelr.glm import fit_glm
        >>> X = np.column_stack([np.ones(4), [1.0, 2, 3, 4]])
        >>> fit_glm(X, [0, 0, 1, 1], names=["(Intercept)", "x"]).require_mle()
        Traceback (most recent call last):
        ...
        ValueError: the classes are separated by (Intercept), x (complete separation; ...
        """
        if self.separation.separated:
            raise ValueError(self.separation.message() + ". Drop or merge the separating "
                             "column(s), or use a penalised fit")
        return self

    def parm_positions(self, parm) -> tuple:
        """Positions of ``parm`` (None: all; names or positions)."""
        d = self.coefficients.size
        if parm is None:
            return tuple(range(d))
        if isinstance(parm, (str, int, np.integer)):
            parm = [parm]
        out = []
        for p in parm:
            if isinstance(p, str):
                if p not in self.names:
                    raise ValueError(f"parm: no coefficient named {p!r}; the names are "
                                     f"{list(self.names)}")
                out.append(self.names.index(p))
            else:
                j = check_int("parm", p, low=0)
                if j >= d:
                    raise ValueError(f"parm: position {j} is beyond the {d} coefficients")
                out.append(j)
        return tuple(out)

    def wald_confint(self, level: float = 0.95, parm=None) -> ConfidenceIntervals:
        """R's ``confint.default``: :math:`\\hat\\beta \\pm \\Phi^{-1}((1+level)/2)\\,se`.

        Examples
        --------
        >>> import numpy as np
        >>> from privatelr.glm import fit_glm
        >>> from privatelr.datasets import load_mtcars
        >>> cars = load_mtcars()
        >>> X = np.column_stack([np.ones(32), cars["wt"], cars["hp"]])
        >>> ci = fit_glm(X, cars["am"]).wald_confint(parm=[1])
        >>> np.round(ci.as_array(), 4)       # R: -14.0980 -2.0690
        array([[-14.098,  -2.069]])
        """
        level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
        pos = self.parm_positions(parm)
        q = float(ndtri((1.0 + level) / 2.0))
        est = self.coefficients[list(pos)]
        se = self.std_errors[list(pos)]
        return ConfidenceIntervals(lower=est - q * se, upper=est + q * se,
                                   names=tuple(self.names[j] for j in pos), parm=pos,
                                   level=level, method="wald")


@dataclass(frozen=True)
class GLMData:
    """Checked inputs of a fit: the rows with positive weight, and how to solve on them."""

    X: np.ndarray
    y: np.ndarray
    weights: np.ndarray
    offset: np.ndarray
    has_offset: bool
    names: tuple
    solver: str
    sigma_min_scaled: float
    scale: np.ndarray


def prepare(X, y, weights=None, offset=None, *, intercept_column=0, names=None) -> GLMData:
    """Check the inputs of :func:`fit_glm` and keep the rows with positive weight.

    Raises ``ValueError`` naming the argument (and, for aliased columns, the columns).
    """
    if names is None and hasattr(X, "columns"):
        names = [str(c) for c in X.columns]
    X = as_float_matrix("X", X)
    n, d = X.shape
    if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray):
        y = y.to_numpy()
    if np.asarray(y).dtype == bool:
        y = np.asarray(y, dtype=float)
    y = real_vector("y", y, n, "numbers (0/1, or proportions with weights = trials)",
                    "a 1-D array of length {n} (one response per row of X)")
    if not np.isfinite(y).all() or (y < 0).any() or (y > 1).any():
        raise ValueError("y must hold 0/1 responses or proportions in [0, 1] (no NaN); "
                         "encode the outcome as 0/1 first")
    if weights is None:
        w = np.ones(n)
    else:
        w = real_vector("weights", weights, n, "real numbers",
                        "a 1-D array of length {n} (one prior weight per row)")
        if not np.isfinite(w).all() or (w < 0).any():
            raise ValueError("weights must be finite and >= 0 (R: 'negative weights not allowed')")
    if offset is None:
        o = np.zeros(n)
    else:
        o = real_vector("offset", offset, n, "real numbers",
                        "a 1-D array of length {n} (one offset per row)")
        if not np.isfinite(o).all():
            raise ValueError("offset contains NaN or infinite values")
    if names is None:
        names = tuple("(Intercept)" if j == intercept_column else f"x{j}" for j in range(d))
    else:
        names = tuple(str(s) for s in names)
        if len(names) != d:
            raise ValueError(f"names must have one entry per column of X ({d}), got {len(names)}")
    keep = w > 0
    if not keep.any():
        raise ValueError("weights: every weight is 0; nothing to fit")
    X, y, w, o = X[keep], y[keep], w[keep], o[keep]
    if intercept_column is not None:
        ic = check_int("intercept_column", intercept_column, low=0)
        if ic >= d:
            raise ValueError(f"intercept_column = {ic} but X has {d} columns")
        if not np.all(X[:, ic] == 1.0):
            raise ValueError(f"intercept_column: column {ic} ({names[ic]}) is not all ones; pass "
                             "the position of the intercept column, or None for a model "
                             "without intercept")
    if X.shape[0] < d:
        raise ValueError(f"X has {d} columns but only {X.shape[0]} rows with positive weight: "
                         "the coefficients are not identified")
    solver, sigma, scale = _conditioning(X, names)
    return GLMData(X=np.ascontiguousarray(X), y=y, weights=w, offset=o,
                   has_offset=offset is not None and bool(np.any(o != 0)), names=names,
                   solver=solver, sigma_min_scaled=sigma, scale=scale)


def _conditioning(X: np.ndarray, names: tuple) -> tuple[str, float, np.ndarray]:
    """(solver, smallest singular value of the column-scaled X, the scaling); refuse aliasing."""
    norms = np.sqrt(np.einsum("ij,ij->j", X, X))
    zero = np.flatnonzero(norms == 0)
    if zero.size:
        raise ValueError(f"X: column {names[zero[0]]} is all zeros on the rows with positive "
                         "weight (R's glm reports NA for it); drop it")
    scale = 1.0 / norms
    gram = weighted_gram(X * scale)
    ev = np.linalg.eigvalsh(gram)
    if ev[0] > ev[-1] / CHOLESKY_MAX_CONDITION**2:
        return "cholesky", float(np.sqrt(ev[0])), scale
    r = scipy.linalg.qr(X * scale, mode="r", check_finite=False)[0][: X.shape[1]]
    aliased = np.flatnonzero(np.abs(np.diag(r)) < ALIAS_TOLERANCE)
    if aliased.size:
        cols = ", ".join(names[j] for j in aliased)
        raise ValueError(f"X: column(s) {cols} are linear combinations of the columns before "
                         "them (R's glm reports NA for aliased coefficients); drop them")
    return "qr", float(np.linalg.svd(r, compute_uv=False)[-1]), scale


def fit_glm(X, y, weights=None, offset=None, *, intercept_column: int | None = 0, names=None,
            tol: float = 1e-8, maxit: int = 25, check_separation: bool = True) -> GLMFit:
    """Fit ``glm(family = binomial)`` (logit link) to a design matrix, as R does.

    Parameters
    ----------
    X : array-like (n, d)
        The design, intercept column included (R's ``model.matrix``).
    y : array-like (n,)
        0/1 (or bool) responses, or proportions in [0, 1] with ``weights`` = numbers of trials
        (R's prior-weights semantics; R's ``cbind(successes, failures)`` response is
        ``y = successes / trials`` with ``weights = trials``).
    weights : array-like (n,), optional
        Prior weights >= 0 (rows with weight 0 are left out, as R does).
    offset : array-like (n,), optional
        A known term added to the linear predictor.
    intercept_column : int or None
        Position of the all-ones intercept column (checked), or None for a model without
        intercept. Decides the null model and ``df_null``.
    names : sequence of str, optional
        Coefficient names (default: a DataFrame's columns, else ``(Intercept)``, ``x1``, ...).
    tol, maxit : float, int
        R's ``glm.control(epsilon, maxit)``: stop when the deviance changes by less than ``tol``
        relative, :math:`|D - D_{old}|/(|D| + 0.1) < tol`, or after ``maxit`` iterations.
    check_separation : bool
        Decide whether the estimate exists (:mod:`privatelr.glm.separation`).

    Returns
    -------
    GLMFit

    Notes
    -----
    IRLS starts where R does, :math:`\\mu = (a y + 1/2)/(a + 1)`, and follows R's iterations
    with R's guarded logit (:mod:`privatelr.glm.family`), so coefficients and standard errors
    agree with R's to ~1e-12 on well-posed fits, and separated fits stop where R's stop.
    Aliased (linearly dependent) columns raise ``ValueError`` (R reports NA for them).
    A response whose successes ``weights * y`` are not whole numbers warns, as R does: the
    log-likelihood (and AIC, BIC) then use rounded counts.

    Examples
    --------
    >>> import numpy as np
    >>> from privatelr.glm import fit_glm
    >>> X = np.column_stack([np.ones(6), [0.0, 1, 2, 3, 4, 5]])
    >>> fit = fit_glm(X, [0, 0, 1, 0, 1, 1])
    >>> round(fit.deviance, 4), round(fit.null_deviance, 4), fit.df_residual, fit.df_null
    (4.956, 8.3178, 4, 5)
    """
    tol = check_real("tol", tol, low=0.0, low_open=True)
    maxit = check_int("maxit", maxit, low=1)
    check_bool("check_separation", check_separation)
    data = prepare(X, y, weights, offset, intercept_column=intercept_column, names=names)
    Xp, yp, w, o = data.X, data.y, data.weights, data.offset
    successes = w * yp
    if np.any(np.abs(successes - np.round(successes)) > 1e-3):
        warnings.warn("non-integer #successes in a binomial glm: weights * y are not whole "
                      "numbers, so logLik, AIC and BIC use rounded counts (as R does)",
                      UserWarning, stacklevel=2)
    mustart = (w * yp + 0.5) / (w + 1.0)
    res = irls(Xp, yp, w, o, linkfun(mustart), tol=tol, maxit=maxit, solver=data.solver)
    # the Fisher information at the estimate (R's working weights, guards included)
    sw = np.sqrt(w * mu_eta(res.eta) ** 2 / variance(res.mu))
    cov = wls_factor(Xp * sw[:, None], data.solver).inverse()
    se = np.sqrt(np.diag(cov))
    coef = res.coefficients
    z = coef / se
    n_ok, d = Xp.shape
    ll = loglik(yp, res.mu, w)
    sep = Separation(kind="unknown", evidence="not checked")
    if check_separation:
        if certify_mle_exists(Xp, yp, w, res.mu, data.sigma_min_scaled, data.scale):
            sep = Separation(kind="none", evidence="score certificate")
        else:
            sep = detect_separation(Xp, yp, w, names=data.names)
    boundary_eps = 10 * np.finfo(float).eps
    return GLMFit(
        coefficients=coef, covariance=cov, std_errors=se, z_values=z,
        p_values=2.0 * ndtr(-np.abs(z)), names=data.names, deviance=res.deviance,
        null_deviance=_null_deviance(data, intercept_column, res.mu, tol, maxit),
        df_residual=n_ok - d, df_null=n_ok - (intercept_column is not None), loglik=ll,
        aic=-2.0 * ll + 2.0 * d, bic=-2.0 * ll + math.log(n_ok) * d, nobs=n_ok,
        intercept_column=intercept_column, converged=res.converged, iterations=res.iterations,
        fitted_boundary=bool(np.any(res.mu > 1 - boundary_eps) or np.any(res.mu < boundary_eps)),
        separation=sep, tol=tol, maxit=maxit)


def _null_deviance(data: GLMData, intercept_column, mu_fit: np.ndarray, tol: float,
                   maxit: int) -> float:
    y, w, o = data.y, data.weights, data.offset
    if intercept_column is None:
        return deviance(y, linkinv(o), w)
    if not data.has_offset:
        return deviance(y, np.full_like(y, np.sum(w * y) / np.sum(w)), w)
    # R's glm refits the intercept-only model with the offset, starting from the fitted values
    ones = np.ones((y.size, 1))
    return irls(ones, y, w, o, linkfun(mu_fit), tol=tol, maxit=maxit).deviance
