"""Minimisers for smooth, strongly convex objectives, with an ``optim``-like report.

Two methods:

* :func:`newton` — Newton's method on the exact (generalised) Hessian, solved by Cholesky, with a
  backtracking Armijo line search. The objective supplies ``evaluate(w, hessian)`` and
  ``line(w, p, hessian)`` (a cheap one-dimensional restriction, see
  :mod:`privatelr.objective`). It converges quadratically on the λ-strongly-convex perturbed
  objectives of this package. The Hessian is the expensive part (``n d^2`` flops), so it is
  refreshed only while progress is slow: after a step that cut the gradient by at least
  ``1/_REUSE_RATIO`` the current Hessian is kept ("lazy" Newton: near the optimum the Hessian
  barely moves, the contraction stays fast, and the line search keeps every step a descent step),
  and corrected by a BFGS secant update from the two gradients the step computed anyway.
  Warm-started objectives whose pass costs about the same with the Hessian as without
  (``hessian_in_pass = True``: on Dask, reading and decoding the rows dominates every pass) get
  the exact Hessian with every full-data pass instead: Newton's quadratic convergence, no pass
  spent on a refresh (n = 2e6 streamed from Parquet: 4 full passes instead of 7).
  :func:`minimize` warm-starts large problems on a strided subsample; the full data's first pass
  adds a model Hessian from about a third of the rows (runs of rows, in single precision), kept
  while each step cuts the gradient at least ``1/_MODEL_RATIO``-fold; on n = 1e6, d = 100 the
  full data then need 5 steps, each one pass. A full step is accepted without the objective's
  value when the line pass's gradient certifies Armijo's decrease (:func:`_accept_on_gradient`:
  the trapezoid rule with a bound on the third derivative along the line); the values, which
  cost as much as the rest of a pass at small ``d``, are computed only when that certificate
  fails.
* :func:`lbfgs` — SciPy's L-BFGS-B for large ``d`` where an ``n d^2`` Hessian pass costs too much.

Both stop when the infinity norm of the gradient falls below ``gtol`` times its value at the
start (relative test; an absolute floor of 1e-15 guards problems that start at the optimum), and
report honestly: ``convergence`` is 0 only when that test (or the floating-point floor described
in :class:`SolverReport`) was met.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.linalg

from ._threads import blas_one_thread

__all__ = ["SolverReport", "newton", "lbfgs", "minimize"]

_EPS = np.finfo(float).eps
_REUSE_RATIO = 0.1   # exact Hessian kept while each step cuts the gradient at least 10-fold
_MODEL_RATIO = 0.25  # a model Hessian (subsample's, secant-corrected) is kept while >= 4-fold
_WARM_MIN_N = 100_000
_WARM_FACTOR = 16
_WARM_ROWS = 25      # a subsample needs at least this many rows per coefficient
_COARSE_GTOL = 1e-2  # the subsample's own optimum is ~1e-1 (relative gradient) from the full one
_MODEL_STRIDE = 3    # the model Hessian: a third of the rows, in a warm-started level's first pass


@dataclass(frozen=True)
class SolverReport:
    """What a minimiser did, in the spirit of R's ``optim`` and SciPy's ``OptimizeResult``.

    Attributes
    ----------
    x : ndarray
        The final iterate.
    value : float
        Objective at ``x``.
    grad_norm : float
        Infinity norm of the gradient at ``x``.
    iterations : int
    counts : dict
        ``{"function": …, "gradient": …, "hessian": …}`` evaluations.
    passes : int
        Full passes over the design matrix (when the objective counts them, else 0).
    work : dict
        The passes by kind, in full-data passes, warm-start subsamples included by their share
        of the rows (``{"gradient": …, "hessian": …}``; empty when the objective does not
        record them), and ``"copy"``: the rows copied into subsamples. A Hessian pass costs
        several gradient passes (``n d^2`` flops).
    convergence : int
        0 converged; 1 iteration limit reached; 52 line search failed (no descent found).
    grad_ref : float
        The gradient norm the relative tolerance refers to (at the starting point).
    message : str
    method : str
    """

    x: np.ndarray
    value: float
    grad_norm: float
    iterations: int
    counts: dict = field(default_factory=dict)
    passes: int = 0
    convergence: int = 0
    message: str = ""
    method: str = ""
    grad_ref: float = 0.0
    hessian: np.ndarray | None = field(default=None, repr=False, compare=False)
    levels: int = 0  # nested subsample levels used for the warm start
    work: dict = field(default_factory=dict, compare=False)


def _tolerance(g0: float, gtol: float) -> float:
    return max(gtol * g0, 1e-15)


def _secant_update(H, s, y):
    """BFGS update of the Hessian model ``H`` with the step ``s`` and gradient change ``y``.

    Powell's damping (Nocedal & Wright, Procedure 18.2) replaces ``y`` by a mix with ``H s``
    when the curvature ``s'y`` is small next to ``s'Hs``, so the model stays positive definite
    even when ``y`` carries rounding (single-precision passes near their floor).
    """
    Hs = H @ s
    sHs = float(s @ Hs)
    if not (sHs > 0.0 and np.isfinite(sHs)):
        return H
    sy = float(s @ y)
    if sy < 0.2 * sHs:
        theta = 0.8 * sHs / (sHs - sy)
        y = theta * y + (1.0 - theta) * Hs
        sy = float(s @ y)
    return H - np.outer(Hs, Hs) / sHs + np.outer(y, y) / sy


#: Largest Newton step, relative to max(1, |x|_inf): far beyond any step a problem of this
#: package needs (coefficients of rows bounded by data_norm), short of overflowing w @ w.
_STEP_CAP = 1e6


#: A full step is accepted without the objective's value when it cuts the gradient's max-norm
#: at least this much and its decrease is certified (see :func:`_accept_on_gradient`)
_ACCEPT_RATIO = 0.5
_ARMIJO = 1e-4


def _accept_on_gradient(phi, p, slope: float, gnorm: float) -> bool:
    r"""Whether the full step ``p`` passes Armijo's test, certified without the objective's value.

    Objectives whose line pass prepares the gradient at the full step (``phi.gradient``) and
    bounds the third derivative of :math:`\phi(t) = J(w + t p)` on ``[0, 1]`` (``phi.third``,
    from the loss's ``third_derivative_bound``) let the solver skip the value there, which costs
    as much as the rest of a pass at small ``d`` (a logarithm and an exponential a row). The
    trapezoid rule with its remainder gives, for some :math:`\xi \in [0, 1]`,

    .. math:: \phi(1) - \phi(0) = \tfrac12(\phi'(0) + \phi'(1)) - \tfrac1{12}\phi^{(3)}(\xi)
              \le \tfrac12\,(\mathrm{slope} + g(w + p)^\top p) + \tfrac1{12}\,\mathrm{third},

    so when that bound is at most ``_ARMIJO * slope``, Armijo's sufficient decrease holds exactly
    as if the values had been compared. The step must also cut the gradient's max-norm at least
    ``1/_ACCEPT_RATIO``-fold: near the floor of floating-point rounding (no such progress) the
    values decide, with the working-precision rule of :func:`_backtrack`.
    """
    g1, third = getattr(phi, "gradient", None), getattr(phi, "third", None)
    if g1 is None or third is None:
        return False
    g1n = float(np.abs(g1).max())
    bound = 0.5 * (slope + float(g1 @ p)) + third / 12.0
    return bool(g1n <= _ACCEPT_RATIO * gnorm and bound <= _ARMIJO * slope)


def _evaluate(objective, x, hessian: bool, stride: int = 1, origin: bool = False):
    """``objective.evaluate`` without the value when the objective can skip it (``lazy_value``:
    the value is then None, and :func:`_value` computes it when a line search needs it); with
    ``origin``, also the gradient at 0 (objectives with ``origin_gradient``)."""
    kw: dict[str, Any] = {"value": False} if getattr(objective, "lazy_value", False) else {}
    if origin:
        kw["origin"] = True
    if stride > 1:
        return objective.evaluate(x, hessian, stride, **kw)
    return objective.evaluate(x, hessian, **kw)


def _value(objective, x, f, counts: dict) -> float:
    if f is None:
        counts["function"] += 1
        f = float(objective.value(x))
    return f


def _backtrack(phi, objective, f: float, slope: float, counts: dict):
    """Armijo backtracking along a Newton direction: ``(t, tiny)``, ``t`` None when no
    decrease was found down to ``t = 1e-12``. The decrease Newton predicts, ``-slope/2``, may
    be below the rounding of ``f``; then (``tiny``) the quadratic model is exact to working
    precision and the full step is taken unchecked."""
    t, f_new = 1.0, phi(1.0)
    counts["function"] += 1
    tiny = -slope <= 8 * _EPS * max(abs(f), getattr(objective, "value_scale", 0.0), 1e-300)
    while not tiny and not (f_new <= f + _ARMIJO * t * slope):
        t *= 0.5
        if t < 1e-12:
            return None, tiny
        f_new = phi(t)
        counts["function"] += 1
    return t, tiny


def newton(objective, x0, *, gtol: float = 1e-10, maxiter: int = 200,
           grad_ref: float | None = None, hessian0=None, stride: int = 1,
           exact: bool = False, value: bool = True, origin: bool = False) -> SolverReport:
    """Minimise a strongly convex objective by damped Newton steps.

    Parameters
    ----------
    objective
        Has ``evaluate(w, hessian: bool) -> (f, g, H | None)`` and ``line(w, p) -> phi``.
    x0 : ndarray
        Starting point.
    gtol : float
        Relative tolerance on the gradient's infinity norm.
    maxiter : int
        Iteration cap (Newton needs far fewer on these problems).
    grad_ref : float, optional
        The gradient norm the tolerance is relative to (default: the norm at ``x0``).
    hessian0 : ndarray, optional
        A model Hessian to start with (e.g. a subsample's at ``x0``). Between exact Hessians the
        model is corrected by a BFGS secant update after every step (free: it uses the two
        gradients the steps compute anyway); the exact Hessian replaces it only when a step cuts
        the gradient less than 4-fold (10-fold for an exact Hessian being reused).
    exact : bool
        Compute the exact Hessian in every line-search pass (for objectives whose pass costs
        about the same with it: ``hessian_in_pass``).
    stride : int
        Above 1 (objectives with ``strided_hessian``), the model Hessian is instead the Hessian
        of every ``stride``-th row at ``x0``, computed in the first gradient pass
        (``objective.evaluate(x0, True, stride)``) and kept like ``hessian0``.
    value : bool
        Report the objective's value at the solution (``False``: ``nan``, and for objectives
        with ``lazy_value`` the O(n) arithmetic it costs is saved; a private fit releases no
        value).
    origin : bool
        The tolerance is relative to the gradient at 0 (``J``'s own, not ``grad_ref``), which
        the first pass computes with the gradient at ``x0`` (objectives with
        ``origin_gradient``; others keep ``grad_ref``).

    Returns
    -------
    SolverReport
    """
    x = np.array(x0, dtype=float)
    modelled = hessian0 is not None or stride > 1  # the first Hessian is a model
    counts = {"function": 0, "gradient": 1, "hessian": int(not modelled)}
    origin = origin and getattr(objective, "origin_gradient", False)
    if stride > 1:
        f, g, H = _evaluate(objective, x, True, stride, origin)
    else:
        f, g, H = _evaluate(objective, x, hessian0 is None, 1, origin)
        H = H if hessian0 is None else hessian0
    counts["function"] += f is not None
    gnorm = float(np.abs(g).max())
    gref = gnorm if grad_ref is None else float(grad_ref)
    if origin and objective.gradient_at_zero is not None:
        gref = float(np.abs(objective.gradient_at_zero).max())
    tol = _tolerance(gref, gtol)
    last_ratio = 1.0 if grad_ref is None else 0.0  # a warm start is expected to be close
    slow = _MODEL_RATIO if modelled else _REUSE_RATIO
    for it in range(maxiter + 1):
        if gnorm <= tol:
            f = _value(objective, x, f, counts) if value else float("nan")
            return replace(_report(objective, x, f, gnorm, it, counts, 0,
                                   f"converged: gradient {gnorm:.3g} <= tolerance {tol:.3g}",
                                   "newton", gref), hessian=H)
        if it == maxiter:
            break
        try:
            factor = scipy.linalg.cho_factor(H, check_finite=False)
        except np.linalg.LinAlgError:  # only when lambda is 0 and the data are separable
            H = H + (1e-10 * max(1.0, np.abs(np.diag(H)).max())) * np.eye(H.shape[0])
            factor = scipy.linalg.cho_factor(H, check_finite=False)
        p = -scipy.linalg.cho_solve(factor, g, check_finite=False)
        # A Hessian that is (nearly) only the ridge — a Huber loss beyond its band with a tiny
        # lambda — gives a step of size |g|/lambda: cap it, so that no trial point overflows
        # (the line search then moves as far as the objective keeps decreasing)
        cap = _STEP_CAP * max(1.0, float(np.abs(x).max(initial=0.0)))
        big = float(np.abs(p).max(initial=0.0))
        if not big <= cap:
            p = p * (cap / big) if np.isfinite(big) else -g * (cap / max(gnorm, 1e-300))
        slope = float(g @ p)
        if slope >= 0:  # numerically singular step; fall back to steepest descent
            p, slope = -g, -float(g @ g)
        # Prefetch the Hessian at the full step in the line-search pass only while convergence
        # is slow; in the fast phase the current Hessian is kept (lazy Newton).
        prefetch = last_ratio >= slow or exact
        phi = objective.line(x, p, prefetch)
        if _accept_on_gradient(phi, p, slope, gnorm):
            t, tiny = 1.0, False
        else:
            f = _value(objective, x, f, counts)
            t, tiny = _backtrack(phi, objective, f, slope, counts)
        if t is None:
            return _report(objective, x, f, gnorm, it, counts, 52,
                           "line search failed: no decrease along the Newton direction "
                           f"(gradient {gnorm:.3g}, tolerance {tol:.3g})", "newton", gref)
        step = t * p
        x = x + step
        fresh = prefetch and t == 1.0
        f, g_new, H_new = _evaluate(objective, x, fresh)
        counts["gradient"] += 1
        g_new_norm = float(np.abs(g_new).max())
        if fresh:
            H = H_new
            counts["hessian"] += 1
        elif t < 1.0 or g_new_norm >= slow * gnorm:
            H = _evaluate(objective, x, True)[2]  # slow progress: refresh the Hessian
            counts["hessian"] += 1
        else:
            H = _secant_update(H, step, g_new - g)
        last_ratio = g_new_norm / gnorm if gnorm > 0 else 0.0
        g, gnorm = g_new, g_new_norm
        if tiny and last_ratio > 0.5 and gnorm > tol:
            f = _value(objective, x, f, counts) if value else float("nan")
            return _report(objective, x, f, gnorm, it + 1, counts, 0,
                           "converged to working precision: Newton's predicted decrease is below "
                           f"the rounding of the objective (gradient {gnorm:.3g}, relative target "
                           f"{tol:.3g})", "newton", gref)
    f = _value(objective, x, f, counts) if value else float("nan")
    return _report(objective, x, f, gnorm, maxiter, counts, 1,
                   f"iteration limit {maxiter} reached: gradient {gnorm:.3g} > tolerance {tol:.3g}",
                   "newton", gref)


def lbfgs(objective, x0, *, gtol: float = 1e-10, maxiter: int = 15000,
          memory: int = 20) -> SolverReport:
    """Minimise with SciPy's L-BFGS-B (no bounds) to the same relative gradient tolerance.

    The objective needs ``evaluate(w, hessian=False) -> (f, g, None)``.
    """
    x0 = np.array(x0, dtype=float)
    counts = {"function": 0, "gradient": 0, "hessian": 0}

    def fg(w):
        counts["function"] += 1
        counts["gradient"] += 1
        f, g, _ = objective.evaluate(w, False)
        return f, g

    f0, g0 = fg(x0)
    g0n = float(np.abs(g0).max())
    tol = _tolerance(g0n, gtol)
    if g0n <= tol:
        return _report(objective, x0, f0, g0n, 0, counts, 0, "converged at the start", "lbfgs",
                       g0n)
    from scipy.optimize import minimize as _scipy_minimize  # lazy: only L-BFGS needs it

    x, nit = x0, 0
    for _restart in range(5):  # a stall on rounding of f is often cured by fresh curvature pairs
        res = _scipy_minimize(fg, x, jac=True, method="L-BFGS-B",
                              options={"maxiter": maxiter - nit, "gtol": tol, "ftol": 0.0,
                                       "maxcor": memory, "maxls": 50})
        x, nit = res.x, nit + int(res.nit)
        f, g, _ = objective.evaluate(x, False)
        gn = float(np.abs(g).max())
        if gn <= tol or nit >= maxiter or res.nit == 0:
            break
    if gn <= tol:
        code, msg = 0, f"converged: gradient {gn:.3g} <= tolerance {tol:.3g}"
    elif nit >= maxiter:
        code, msg = 1, f"iteration limit {maxiter} reached: gradient {gn:.3g} > tolerance {tol:.3g}"
    else:
        code, msg = 52, f"L-BFGS-B stopped ({res.message}): gradient {gn:.3g} > tolerance {tol:.3g}"
    return _report(objective, x, f, gn, nit, counts, code, msg, "lbfgs", g0n)


def hessian_free(objective, x0, *, gtol: float = 1e-10, maxiter: int = 200,
                 value: bool = True) -> SolverReport:
    """Newton's method without forming the Hessian (Newton–CG): each step solves
    :math:`H p = -g` by conjugate gradients on Hessian-vector products (``objective.hessp``),
    then the same backtracking line search as :func:`newton` — and, as there, the full step
    unchecked once the decrease it predicts is below the rounding of ``J`` (quadratic model
    exact to working precision). Stops at the same relative gradient (max-norm). Memory O(d)
    beyond the data. Steps are accepted on the certificate of :func:`_accept_on_gradient` when
    the objective offers it (no value computed), as in :func:`newton`.

    What a step costs is its Hessian-vector products (two products with the data each), so:
    CG is preconditioned by the Hessian's diagonal when the objective offers it
    (``hessian_diagonal``: one more product; on ``bench_sparse``'s design 8 products instead of
    13, the intercept's curvature being thousands of times the others'); each step is solved
    only as far as the stopping test needs (the forcing term never asks for more than half the
    remaining way to the tolerance); and objectives that return the products' margins with
    them (``hessp_and_increment``) get the line search's ``X p`` from CG's own products, with no
    further product (``line(..., increment=)``)."""
    x = np.array(x0, dtype=float)
    d = x.size
    counts = {"function": 0, "gradient": 1, "hessian": 0}
    f, g, _ = _evaluate(objective, x, False)
    counts["function"] += f is not None
    gnorm = float(np.abs(g).max())
    tol = _tolerance(gnorm, gtol)
    gref = gnorm
    for it in range(maxiter + 1):
        if gnorm <= tol:
            f = _value(objective, x, f, counts) if value else float("nan")
            return _report(objective, x, f, gnorm, it, counts, 0,
                           f"converged: gradient {gnorm:.3g} <= tolerance {tol:.3g}",
                           "hessian-free", gref)
        if it == maxiter:
            break

        # forcing term: solve to a relative residual that shrinks with the gradient
        # (superlinear), but never further than the stopping test needs
        rtol = min(0.5, float(np.sqrt(gnorm / max(gref, 1e-300))), 1e-2 if it else 0.5)
        rtol = max(rtol, min(0.5, 0.5 * tol / gnorm), 1e-14)
        p, u = _cg(objective, x, g, rtol, 10 * d, counts)
        slope = float(g @ p)
        if not slope < 0:
            p, slope, u = -g, -float(g @ g), None
        phi = objective.line(x, p, False) if u is None else objective.line(x, p, False,
                                                                           increment=u)
        if _accept_on_gradient(phi, p, slope, gnorm):
            t, tiny = 1.0, False
        else:
            f = _value(objective, x, f, counts)
            t, tiny = _backtrack(phi, objective, f, slope, counts)
        if t is None:
            f = _value(objective, x, f, counts)
            return _report(objective, x, f, gnorm, it, counts, 52,
                           "line search failed: no decrease along the Newton-CG direction "
                           f"(gradient {gnorm:.3g}, tolerance {tol:.3g})", "hessian-free", gref)
        x = x + t * p
        f, g, _ = _evaluate(objective, x, False)
        counts["gradient"] += 1
        new = float(np.abs(g).max())
        if tiny and new > 0.5 * gnorm and new > tol:
            f = _value(objective, x, f, counts) if value else float("nan")
            return _report(objective, x, f, new, it + 1, counts, 0,
                           "converged to working precision: the predicted decrease is below the "
                           f"rounding of the objective (gradient {new:.3g}, relative target "
                           f"{tol:.3g})", "hessian-free", gref)
        gnorm = new
    f = _value(objective, x, f, counts) if value else float("nan")
    return _report(objective, x, f, gnorm, maxiter, counts, 1,
                   f"iteration limit {maxiter} reached: gradient {gnorm:.3g} > tolerance {tol:.3g}",
                   "hessian-free", gref)


def _cg(objective, x, g, rtol: float, maxiter: int, counts: dict):
    """``(p, u)``: conjugate gradients for ``H p = -g`` at ``x`` to a relative residual
    ``rtol`` (2-norm), preconditioned by ``objective.hessian_diagonal(x)`` when offered; ``u``
    the margins' increment of ``p`` accumulated from the products (``hessp_and_increment``),
    else None."""
    diag = getattr(objective, "hessian_diagonal", None)
    inv = None
    if diag is not None:
        dg = np.asarray(diag(x), dtype=float)
        inv = np.where(dg > 0, 1.0 / np.where(dg > 0, dg, 1.0), 1.0)
    product = getattr(objective, "hessp_and_increment", None)
    p = np.zeros_like(g)
    u = None
    r = -g
    z = r * inv if inv is not None else r
    direction = z.copy()
    rz = float(r @ z)
    stop = rtol * float(np.linalg.norm(g))
    for _ in range(maxiter):
        if not float(np.linalg.norm(r)) > stop:
            break
        counts["hessian"] += 1
        if product is not None:
            Hd, ud = product(x, direction)
        else:
            Hd, ud = objective.hessp(x, direction), None
        curv = float(direction @ Hd)
        if not curv > 0:            # no curvature left (rounding): keep what was found
            break
        alpha = rz / curv
        p += alpha * direction
        if ud is not None:
            u = alpha * ud if u is None else u + alpha * ud
        r = r - alpha * Hd
        z = r * inv if inv is not None else r
        rz_new = float(r @ z)
        direction = z + (rz_new / rz) * direction
        rz = rz_new
    return p, (u if product is not None and u is not None else None)


def minimize(objective, x0, *, method: str = "auto", gtol: float = 1e-10,
             maxiter: int | None = None, newton_max_d: int = 1000,
             warm_start: bool = True, value: bool = True) -> SolverReport:
    """Dispatch to :func:`newton` (``d <= newton_max_d`` under ``"auto"``), above it to
    :func:`hessian_free` when the objective offers Hessian-vector products (sparse designs),
    else :func:`lbfgs`.

    Every BLAS call of the solve runs on one BLAS thread
    (:func:`privatelr._threads.blas_one_thread`; the objectives' passes spread their chunks over
    the package's pool instead), so a fit on a busy machine waits for no BLAS thread, and the
    bits do not depend on BLAS's thread count. ``value=False``: the report's ``value`` is
    ``nan`` when computing it would cost arithmetic over the rows (Newton's method).
    """
    with blas_one_thread():
        return _minimize(objective, x0, method=method, gtol=gtol, maxiter=maxiter,
                         newton_max_d=newton_max_d, warm_start=warm_start, value=value)


def _minimize(objective, x0, *, method, gtol, maxiter, newton_max_d, warm_start, value):
    d = np.size(x0)
    if method == "auto":
        method = "newton" if d <= newton_max_d else (
            "hessian-free" if getattr(objective, "hessp", None) is not None else "lbfgs")
    if method == "hessian-free":
        return hessian_free(objective, x0, gtol=gtol, maxiter=maxiter or 200, value=value)
    if method == "newton":
        if warm_start:
            return _newton_warm(objective, x0, gtol=gtol, maxiter=maxiter or 200, value=value)
        return newton(objective, x0, gtol=gtol, maxiter=maxiter or 200, value=value)
    if method == "lbfgs":
        return lbfgs(objective, x0, gtol=gtol, maxiter=maxiter or 15000)
    raise ValueError(f"solver must be 'auto', 'newton' or 'lbfgs', got {method!r}")


def _newton_warm(objective, x0, *, gtol: float, maxiter: int, depth: int = 0,
                 value: bool = True) -> SolverReport:
    """Newton's method warm-started on nested strided subsamples.

    Newton's early iterations only travel towards the optimum, so they are taken on a
    ``1/_WARM_FACTOR`` strided subsample (itself warm-started the same way while it is large),
    solved to a relative gradient of ``_COARSE_GTOL``: the subsample's own optimum is only about
    1e-1 (relative gradient) from the full data's, so solving it further buys nothing. The full
    data then start from that point. Their first pass computes, with the gradient, the Hessian
    of about every ``_MODEL_STRIDE``-th row there (runs of rows in single precision,
    :func:`privatelr.objective.model_rows`; objectives with ``strided_hessian``; else the
    subsample's last Hessian is used): a model Hessian at the right point whose sampling error,
    about ``sqrt(d k / n)``, is 0.43 times the subsample's, for a third of a Hessian pass.
    Secant updates improve it after every step (see :func:`newton`). Each step then cuts the
    gradient by about that error: at n = 1e6, d = 20 (error 0.008) four steps reach 1e-10 from
    the warm start's 2e-2 (every 4th row, error 0.009, needed four or five depending on the
    sample); measured on benchmarks/bench_fit.py's data: 5 full passes at d = 20 and 6 at
    d = 100 (every 4th row: 5 and 7; the subsample's Hessian alone: 6 and 8). The tolerance stays
    relative to the gradient at ``x0``: when ``x0 = 0`` (where every fit starts), the full
    data's, which their first pass sums with the gradient at the warm start (objectives with
    ``origin_gradient``); otherwise, and on the subsamples themselves, the smallest subsample's
    (at d = 400 over 12,500 rows, 3.3 times the full data's). Only the starting point and the
    first Hessian model come from subsamples: the stopping test and therefore the solution are
    the full data's.
    """
    n, d = getattr(objective, "n", 0), np.size(x0)
    if (hasattr(objective, "subsample") and n >= _WARM_MIN_N
            and n >= _WARM_FACTOR * _WARM_ROWS * d):
        coarse = _newton_warm(objective.subsample(n // _WARM_FACTOR), x0, gtol=_COARSE_GTOL,
                              maxiter=maxiter, depth=depth + 1, value=False)
        if coarse.convergence == 0 and np.isfinite(coarse.x).all():
            model: dict[str, Any]
            if getattr(objective, "hessian_in_pass", False):
                model = dict(exact=True)  # the exact Hessian comes with every pass
            elif getattr(objective, "strided_hessian", False):
                model = dict(stride=_MODEL_STRIDE)
            else:
                model = dict(hessian0=coarse.hessian)
            full = newton(objective, coarse.x, gtol=gtol, maxiter=maxiter,
                          grad_ref=coarse.grad_ref, value=value, origin=depth == 0 and not np.any(x0), **model)
            levels = 1 + coarse.levels
            if depth == 0:
                full = replace(full, message=full.message + f" (warm start: {levels} nested "
                               f"1/{_WARM_FACTOR} strided subsample(s))")
            return replace(full, levels=levels)
    return newton(objective, x0, gtol=gtol, maxiter=maxiter, value=value)


def _report(objective, x, f, gnorm, it, counts, code, message, method,
            grad_ref: float = 0.0) -> SolverReport:
    return SolverReport(x=np.asarray(x, float), value=float(f), grad_norm=float(gnorm),
                        iterations=int(it), counts=dict(counts),
                        passes=int(getattr(objective, "passes", 0)), convergence=int(code),
                        message=message, method=method, grad_ref=float(grad_ref),
                        work=dict(getattr(objective, "work", {})))
