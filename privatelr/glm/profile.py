r"""Profile-likelihood confidence intervals: R's ``confint(glm)`` (MASS's method) and the exact root.

For coefficient :math:`j` let :math:`D_j(b)` be the smallest deviance with :math:`\beta_j` held
at :math:`b` (the other coefficients refitted; a binomial GLM with offset :math:`o + x_j b`). The
signed root of the deviance difference,

.. math:: z_j(b) = \operatorname{sign}(b - \hat\beta_j)\sqrt{D_j(b) - D(\hat\beta)},

is approximately standard normal at the true value, and the profile interval at level
:math:`1-\alpha` is :math:`\{b : |z_j(b)| \le \Phi^{-1}(1 - \alpha/2)\}`.

``root="spline"`` (default) computes it as R 4.2 does (MASS's ``profile.glm`` and
``confint.profile.glm``), reproducing R's numbers: with ``zmax`` :math:`= \sqrt{\chi^2_{1}(1 - \alpha/4)}`
it evaluates :math:`z_j` at :math:`\hat\beta_j \pm k\,\delta\,\mathrm{se}_j`,
:math:`\delta = z_{max}/5`, :math:`k = 1, 2, \dots` until :math:`|z_j| \ge z_{max}` or
:math:`k = 9`, interpolates :math:`z_j` over these points and :math:`\hat\beta_j` (where
:math:`z = 0`) by R's fmm spline at three times as many equally spaced values, and reads the
ends off that table by linear interpolation (:mod:`privatelr.glm.rinterp`). An end the table
does not reach is NaN (R: NA).

``root="exact"`` solves :math:`z_j(b) = \pm\Phi^{-1}(1-\alpha/2)` to ~1e-10 by safeguarded
Newton steps (:math:`dz_j/db = -U_j/z_j`, :math:`U_j` the score of :math:`\beta_j` at the
constrained fit), each constrained fit warm-started from the previous one. The two differ by
the spline's interpolation error (1e-4 to 1e-3 relative on small data).

Examples
--------
>>> import numpy as np
>>> from privatelr.glm import fit_glm, profile_confint
>>> from privatelr.datasets import load_mtcars
>>> cars = load_mtcars()
>>> X = np.column_stack([np.ones(32), cars["wt"], cars["hp"]])
>>> fit = fit_glm(X, cars["am"], names=["(Intercept)", "wt", "hp"])
>>> ci = profile_confint(fit, X, cars["am"], parm="wt")
>>> np.round(ci.as_array(), 4)                # R: -17.2087 -3.7731
array([[-17.2087,  -3.7731]])
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri
from scipy.stats import chi2

from .._validation import check_real
from .family import deviance, exact_deviance, linkinv
from .constrained import ConstrainedFitter, hessian
from .fit import ConfidenceIntervals, GLMData, GLMFit, prepare
from .irls import irls
from .rinterp import approx, spline

__all__ = ["profile_confint", "profile_points"]

MAXSTEPS = 10            # MASS: at most maxsteps - 1 = 9 points on each side
MIN_ZZ = -1e-3           # MASS: a deviance this much below the fit's means the fit had not converged


def _z(dev: float, dev0: float, sign: float) -> float:
    zz = dev - dev0
    if zz < MIN_ZZ:
        raise ValueError("profiling found a better fit than the original one: the original "
                         "fit had not converged; refit with a smaller tol or larger maxit")
    return sign * math.sqrt(max(zz, 0.0))


def profile_points(fit: GLMFit, data: GLMData, j: int, level: float,
                   hess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""MASS's profile of coefficient ``j``: the values ``b`` and the signed roots ``z(b)``.

    The grid is :math:`\hat\beta_j \pm k\,(z_{max}/5)\,se_j`, with
    :math:`z_{max} = \sqrt{\chi^2_1(1 - (1 - level)/4)}`; each side stops once
    :math:`|z| \ge z_{max}` or after 9 points. Each refit is the constrained maximum of the
    likelihood to a Newton decrement below 1e-10 (:mod:`privatelr.glm.constrained`); R's
    IRLS converges to the same point, so ``z`` is R's to ~1e-10 whichever start R's
    iterations took. Not when the estimate does not exist (separation): R's iterations then
    end where R's guards on the fitted probabilities stop them, which depends on the path, so
    each point is refitted by R's own iterations (:func:`~privatelr.glm.irls.irls`) from R's
    start, the previous point's linear predictor. ``hess``: the Fisher information at the
    estimate, if already computed. Each refit starts from the two points before it moved along
    the tangent, or from the quadratic through the three before it.
    """
    X, beta_hat = data.X, fit.coefficients
    zmax = math.sqrt(chi2.ppf(1.0 - (1.0 - level) / 4.0, 1))
    step_size = zmax / 5.0 * fit.std_errors[j]
    bs, zs = [float(beta_hat[j])], [0.0]
    lp0 = X @ beta_hat + data.offset
    if hess is None:
        hess = hessian(X, data.weights, lp0)
    fitter = ConstrainedFitter(X, data.y, data.weights, data.offset, j, hess)
    guarded = fit.separation.separated
    free = np.delete(X, j, axis=1) if guarded else None
    dev0 = fit.deviance if guarded else fitter.deviance(lp0)
    for sign in (-1.0, 1.0):
        fitter.set_hessian(hess)
        path, eta, z, step = [fitter.start(beta_hat)], lp0, 0.0, 1
        while step < MAXSTEPS and abs(z) < zmax:
            b = float(beta_hat[j] + sign * step * step_size)
            if guarded:                   # R's own iterations from R's start
                assert free is not None           # the free columns exist when guarded
                res = irls(free, data.y, data.weights, data.offset + X[:, j] * b, eta,
                           tol=fit.tol, maxit=fit.maxit, solver=data.solver)
                eta, dev = res.eta, res.deviance
            else:
                if len(path) >= 3:        # equally spaced: quadratic extrapolation, no pass
                    p0, p1, p2 = path[-3:]
                    start = (p0.beta - 3.0 * p1.beta + 3.0 * p2.beta,
                             p0.eta - 3.0 * p1.eta + 3.0 * p2.eta)
                else:
                    start = fitter.predict(path[-1], b)
                path.append(fitter.fit(*start))
                dev = path[-1].deviance
            z = _z(dev, dev0, sign)
            bs.append(b)
            zs.append(z)
            step += 1
    return np.array(bs), np.array(zs)


def _spline_ends(bs: np.ndarray, zs: np.ndarray, cutoffs: np.ndarray) -> np.ndarray:
    """MASS's ``confint.profile.glm``: spline z over b, then read b at the cutoffs linearly."""
    o = np.argsort(zs, kind="stable")
    sx, sy = spline(bs[o], zs[o])
    return approx(sy, sx, cutoffs)


def _exact_end(fitter: ConstrainedFitter, fit: GLMFit, hess: np.ndarray, dev0: float,
               sign: float, q: float, scale: float) -> tuple[float, str | None]:
    """Solve z_j(b) = sign * q on the exact likelihood (``dev0`` its deviance at the estimate).

    Newton steps on z (slope :math:`-U_j/z`) while each halves the error, bisection of the
    bracket otherwise; before the target is bracketed, steps at most quadruple the distance
    from the estimate (first step at most ``scale``). Each refit starts from the evaluated
    point nearest to it, moved along the tangent. (NaN, reason) when the profile levels off.
    """
    j = fitter.j
    bhat = float(fit.coefficients[j])
    target = sign * q
    fitter.set_hessian(hess)
    inside = fitter.start(fit.coefficients)       # a point with |z| < q
    outside = None                                # one with |z| >= q, once found
    b_last, z_last = bhat, 0.0
    slope = 1.0 / float(fit.std_errors[j])        # dz/db at the estimate
    slow = False                                  # the last Newton step did not halve the error
    for _ in range(200):
        cand = b_last + (target - z_last) / slope if slope > 0 else np.inf
        b_in = inside.beta[j]
        if outside is not None:
            lo, hi = sorted((b_in, outside.beta[j]))
            if slow or not (lo < cand < hi):
                cand = 0.5 * (lo + hi)
        else:
            limit = bhat + sign * max(4.0 * abs(b_last - bhat), scale)
            if not np.isfinite(cand) or sign * (cand - limit) > 0:
                cand = limit
            if abs(cand - bhat) > 1e6 * (1.0 + abs(bhat) + scale):
                return np.nan, ("the profile deviance levels off before the cutoff: the "
                                "likelihood does not fall far enough on this side")
        near = inside if outside is None or abs(cand - b_in) <= abs(cand - outside.beta[j]) \
            else outside
        pt = fitter.fit(*fitter.predict(near, cand))
        if not pt.converged:
            return np.nan, "a constrained refit did not converge"
        z = _z(pt.deviance, dev0, sign)
        slope = -pt.score_j / z if z != 0 else 0.0
        slow = abs(z - target) > 0.5 * abs(z_last - target) and not slow
        b_last, z_last = cand, z
        if sign * z < q:
            inside = pt
        else:
            outside = pt
        if abs(z - target) < 1e-10 * q:
            return cand, None
        if outside is not None and abs(outside.beta[j] - inside.beta[j]) < 1e-14 * (1.0 + abs(cand)):
            return cand, None
    return np.nan, "the root search did not converge"


def profile_confint(fit: GLMFit, X, y, weights=None, offset=None, *, level: float = 0.95,
                    parm=None, method: str = "profile", root: str = "spline") -> ConfidenceIntervals:
    """R's ``confint()`` for a binomial glm: profile-likelihood intervals (or Wald).

    Parameters
    ----------
    fit : GLMFit
        From :func:`~privatelr.glm.fit_glm`.
    X, y, weights, offset
        The data the fit was made on (checked against its deviance).
    level : float
        Confidence level.
    parm : str, int or sequence, optional
        Coefficients (names or positions); default all.
    method : {"profile", "wald"}
        ``"wald"``: R's ``confint.default``, :math:`\\hat\\beta \\pm z\\,se`.
    root : {"spline", "exact"}
        ``"spline"``: MASS's grid and spline, R's numbers (module docstring). ``"exact"``: the
        root of :math:`z_j(b) = \\pm\\Phi^{-1}((1+level)/2)`.

    Returns
    -------
    ConfidenceIntervals
        NaN ends come with a sentence in ``notes``. On separated data, ``root="spline"``
        gives R's numbers for the coefficients that run to infinity, which are not bounds
        (``notes`` says so); ``root="exact"`` gives -inf or +inf on the side they run to and
        the profile bound on the other.
    """
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    if method not in ("profile", "wald"):
        raise ValueError(f"method must be 'profile' or 'wald', got {method!r}")
    if root not in ("spline", "exact"):
        raise ValueError(f"root must be 'spline' (R's numbers) or 'exact', got {root!r}")
    if method == "wald":
        return fit.wald_confint(level, parm)
    pos = fit.parm_positions(parm)
    data = prepare(X, y, weights, offset, intercept_column=fit.intercept_column)
    if data.X.shape[1] != fit.coefficients.size:
        raise ValueError(f"X has {data.X.shape[1]} columns but the fit has "
                         f"{fit.coefficients.size} coefficients; pass the data of the fit")
    dev = deviance(data.y, linkinv(data.X @ fit.coefficients + data.offset), data.weights)
    if abs(dev - fit.deviance) > 1e-6 * (1.0 + fit.deviance):
        raise ValueError("X, y, weights and offset must be the data the fit was made on (their "
                         "deviance at the fitted coefficients differs from the fit's)")
    q = float(ndtri((1.0 + level) / 2.0))
    lp = data.X @ fit.coefficients + data.offset
    hess = hessian(data.X, data.weights, lp)
    dev0 = exact_deviance(data.y, lp, data.weights)
    lower, upper, notes = np.full(len(pos), np.nan), np.full(len(pos), np.nan), []
    unbounded = set(fit.separation.unbounded) if fit.separation.separated else set()
    for k, j in enumerate(pos):
        name = fit.names[j]
        if root == "spline":
            bs, zs = profile_points(fit, data, j, level, hess)
            lower[k], upper[k] = _spline_ends(bs, zs, np.array([-q, q]))
            for end, val, side in (("lower", lower[k], "below"), ("upper", upper[k], "above")):
                if np.isnan(val):
                    notes.append(f"{name}: no {end} end — the profile z did not reach "
                                 f"{'-' if end == 'lower' else ''}{q:.4g} within MASS's 9 steps "
                                 f"{side} the estimate (R reports NA)")
        else:
            fitter = ConstrainedFitter(data.X, data.y, data.weights, data.offset, j, hess)
            for sign, out in ((-1.0, lower), (1.0, upper)):
                direction = fit.separation.direction
                if j in unbounded and direction is not None and direction[j] * sign > 0:
                    out[k] = sign * np.inf
                    notes.append(f"{name}: the {'lower' if sign < 0 else 'upper'} end is "
                                 f"{'-' if sign < 0 else '+'}inf — the likelihood keeps "
                                 "increasing as the coefficient runs there (separation)")
                    continue
                scale = 1.0 if j in unbounded else float(fit.std_errors[j])
                val, why = _exact_end(fitter, fit, hess, dev0, sign, q, scale)
                out[k] = val
                if why:
                    notes.append(f"{name}: no {'lower' if sign < 0 else 'upper'} end — {why}")
        if j in unbounded and root == "spline":
            notes.append(f"{name}: the maximum-likelihood estimate does not exist (separation); "
                         "a finite end here comes from R's spline through profile points "
                         "standard errors apart and is not a bound (root='exact' gives the "
                         "profile bound)")
    return ConfidenceIntervals(lower=lower, upper=upper, names=tuple(fit.names[j] for j in pos),
                               parm=pos, level=level, method="profile", root=root,
                               notes=tuple(notes))
