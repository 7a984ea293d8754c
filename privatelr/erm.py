r"""Differentially private empirical risk minimisation: check → scan → calibrate → spend → release.

:func:`fit` is the one pipeline of the Chaudhuri–Monteleoni–Sarwate estimators (objective and
output perturbation, NIPS 2008 / JMLR 2011) for every backend: its rows come from a
:class:`~privatelr.rows.RowSource` (a NumPy design in memory, Dask collections), its privacy
arithmetic from :mod:`privatelr.calibration`, its noise from :mod:`privatelr.mechanisms`.

**Exactness.** Both guarantees are proved for the *exact* minimiser. Output perturbation
calibrates the noise to the sensitivity :math:`2AB/(n\lambda)` of :math:`w^*`; an iterate
that stopped early is a different function of the data, with no sensitivity bound. Objective
perturbation needs it just as much: the proof of JMLR11 Theorem 9 (and NIPS08 Theorem 3) maps
the output back to the noise through the optimality condition :math:`b = -n\nabla J(w^*)` and
bounds the ratio of densities through the Jacobian of that map; an approximate minimiser does
not satisfy the condition, so the argument does not apply to it. Hence :func:`fit` treats both
methods alike: a private fit whose solver did not converge raises ``ValueError`` unless the
caller passes ``allow_nonconverged=True``, and then the result's ``status`` ends in
``"nonconvergence"`` and the ε guarantee is **void**. (Converged means a relative gradient
of ``gtol``; at 1e-10 the remaining error is of the order of floating-point rounding, which
every implementation of these mechanisms accepts.) Approximate minima perturbation
(``method="amp"``) needs no exact minimiser, only a gradient-norm certificate; it is always
released, from a public procedure whose failure probability is charged (:mod:`privatelr.amp`).

**Fail closed.** A private fit needs every design row inside the ball of radius ``data_norm``:
rows outside it are clipped onto it with ``clip=True``, and otherwise the fit raises
``ValueError`` before anything is drawn or charged (nothing is released). The message holds no
statistic of the data. (The refusal itself tells the analyst, who holds the data, that some row
is outside the bound.)

**What a result releases.** :class:`~privatelr.results.ERMResult` keeps the release (the
coefficients, the public calibration, the status) apart from the diagnostics (the solver's
report, the count of rows outside the bound). The objective value at the private solution is a
statistic of the raw data: with output perturbation it is ``J`` at the exact, noise-free
minimiser, which tells neighbouring data sets apart. A private result therefore has
``value = nan``; only non-private fits report it.

The noise vector ``b`` is never stored or returned: together with the coefficients it would
reveal the non-private minimiser.
"""


from __future__ import annotations

import dataclasses
import math

import numpy as np

from ._validation import check_bool, check_gradient_scale, check_real
from .accountant import require_budget
from .amp import POLISH_ITERATIONS, certify
from .backends import as_rows
from .calibration import GAUSSIAN_METHODS, Calibration, calibrate, check_method, warn_costly
from .inference import check_inference, release_information, split_budget
from .losses import HuberLoss, LogisticLoss, Loss, get_loss
from .mechanisms import check_random_state, gaussian_noise, sphere_gamma_noise
from .results import Diagnostics, ERMResult
from .solver import minimize

__all__ = ["fit", "fit_rows", "ERMResult", "Calibration", "calibrate"]

#: The message of a private fit refused because rows lie outside the bound (no data statistic).
OUTSIDE_BOUND = ("some rows of {what} have L2 norm above data_norm={data_norm:g}, so the "
                 "differential-privacy guarantee would not hold (nothing was released). Choose "
                 "data_norm from public bounds on the data and pass clip=True to clip the rows "
                 "that exceed it{more}")


def fit(X, y, *, lambda_: float, eps: float, method: str = "objective",
        loss: str | Loss = "logistic", h: float = 0.5, data_norm: float = 1.0, clip: bool = False,
        weights=None, weights_bound: float | None = None, random_state=None,
        small_eps: str = "adjust", solver: str = "auto", gtol: float = 1e-10,
        maxiter: int | None = None, accountant=None,
        allow_nonconverged: bool = False, inference=None, delta: float = 0.0,
        amp_gamma: float | None = None) -> ERMResult:
    """Fit ε-differentially private regularised ERM (logistic regression or Huber SVM).

    The privacy calibration is :func:`privatelr.calibration.calibrate`, whose docstring derives
    every scale from the theorems.

    Parameters
    ----------
    X : (n, d) array
        Design matrix, intercept column included by the caller. A Dask array/DataFrame (with
        Dask or NumPy ``y``) is fitted partition-wise by the same pipeline (one map-reduce per
        solver step, same result); its row count ``n`` is public (public record count).
    y : (n,) array
        Labels as 0/1, bool or -1/+1.
    lambda_ : float
        Regulariser λ > 0 of :math:`\\frac{\\lambda}{2}\\|w\\|^2`.
    eps : float
        Privacy level ε >= 0; 0 (or inf) fits the non-private minimiser.
    method : {"objective", "output", "gaussian", "amp"}
        Objective perturbation (default; ε-DP), output perturbation (ε-DP), Gaussian objective
        perturbation or approximate minima perturbation ((ε, δ)-DP; derivations in
        :mod:`privatelr.calibration`).
    loss : {"logistic", "huber"} or Loss
    h : float
        Huber constant in (0, 0.5] (``loss="huber"`` only).
    data_norm : float
        Public bound ``B`` on the row norms. In a private fit a row above it is clipped onto
        the bound with ``clip=True``; otherwise the fit refuses (``ValueError``, nothing
        released).
    clip : bool
        Clip rows above ``data_norm`` onto the bound.
    weights : (n,) array, optional
        Observation weights in ``[0, weights_bound]``.
    weights_bound : float, optional
        Public bound ``A`` on the weights; required with ``weights``.
    random_state : int, numpy.random.Generator or None
        Source of the noise; None draws from OS entropy.
    small_eps : {"adjust", "error"}
        See :func:`privatelr.calibration.calibrate`.
    solver : {"auto", "newton", "lbfgs"}
        Newton (d <= 1000 under ``"auto"``) or L-BFGS.
    gtol : float
        Relative gradient tolerance.
    maxiter : int, optional
        Iteration cap (default 200 Newton, 15000 L-BFGS).
    accountant : privatelr.PrivacyAccountant, optional
        Checked before the data are read, charged ``eps`` once the fit is known to be
        releasable. A non-private fit (``eps`` 0 or inf) with an accountant raises
        ``ValueError``: it has no finite cost.
    allow_nonconverged : bool
        A private fit whose solver did not converge is refused with ``ValueError`` by default:
        both guarantees are proved for the exact minimiser only (module docstring).
        ``True`` returns it with ``status`` ending in ``"nonconvergence"``; the guarantee is
        then **void**. The accountant has been charged either way (the data were read).
    delta : float
        δ of the Gaussian methods, in (0, 1) (choose it well below ``1/n``); 0 otherwise.
    amp_gamma : float, optional
        ``method="amp"``: the public bound γ on the gradient norm of the perturbed objective
        at the released iterate (default ``1e-8 * weights_bound * data_norm``); the solver may
        stop anywhere below it (``gtol``, ``maxiter``). Above it a bounded polish and then
        accelerated gradient descent for a public number of iterations follow, and the fit is
        released whatever they reach (:mod:`privatelr.amp`: the release never depends on the
        certificate; missing it within the budget has probability at most δ_f, charged in δ).
        ``allow_nonconverged`` plays no part in AMP.
    inference : bool or float, optional
        Also release what standard errors and intervals need (:mod:`privatelr.inference`):
        ``True`` spends :data:`privatelr.inference.DEFAULT_SHARE` of ``eps`` on the
        information matrix, a number in (0, 1) that share; the coefficients get the rest, and
        the two releases compose to ``eps``. At ``eps`` 0 nothing is spent (the matrix is
        exact). Logistic loss only.

    Returns
    -------
    ERMResult
        The release, and apart from it the diagnostics (not private).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = np.c_[np.full(200, 0.5), rng.uniform(-0.5, 0.5, size=(200, 2))]
    >>> y = (X[:, 1] + 0.1 * rng.standard_normal(200) > 0).astype(int)
    >>> res = fit(X, y, lambda_=0.01, eps=1.0, random_state=1)
    >>> res.status, res.convergence, res.d
    ('ok', 0, 3)
    """
    options = check_options(lambda_=lambda_, eps=eps, method=method, loss=loss, h=h,
                            data_norm=data_norm, clip=clip, small_eps=small_eps, solver=solver,
                            gtol=gtol, maxiter=maxiter,
                            allow_nonconverged=allow_nonconverged, delta=delta,
                            amp_gamma=amp_gamma)
    share = check_inference(inference, options["eps"])
    if share is not None and options["loss"].name != "logistic":
        raise ValueError("inference= is for the logistic loss (glm's model); drop it or use "
                         "loss='logistic'")
    if accountant is not None:  # before the data are read: a refused fit computes nothing
        require_budget(accountant, options["eps"], options["delta"])
    rng = check_random_state(random_state)
    rows = as_rows(X, y, weights, weights_bound)
    options["eps"], info_eps = split_budget(options["eps"], share)
    return fit_rows(rows, rng=rng, accountant=accountant, inference_eps=info_eps, **options)


def check_options(*, lambda_, eps, method="objective", loss="logistic", h=0.5, data_norm=1.0,
                  clip=False, small_eps="adjust", solver="auto", gtol=1e-10, maxiter=None,
                  allow_nonconverged=False, delta=0.0, amp_gamma=None) -> dict:
    """The fit's arguments, checked (``ValueError``/``TypeError`` naming the argument).
    ``lambda_=0`` is allowed only in a non-private fit (``eps`` 0 or inf): maximum likelihood."""
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    lambda_ = check_real("lambda_", lambda_, low=0.0, low_open=cal_private(eps))
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    for name, flag in (("clip", clip), ("allow_nonconverged", allow_nonconverged)):
        check_bool(name, flag)
    method, delta = check_method(method, eps, delta)
    if amp_gamma is not None:
        if method != "amp":
            raise ValueError("amp_gamma is for method='amp'; drop it")
        amp_gamma = check_real("amp_gamma", amp_gamma, low=0.0, low_open=True)
    if not isinstance(small_eps, str) or small_eps not in ("adjust", "error"):
        raise ValueError(f"small_eps must be 'adjust' or 'error', got {small_eps!r}")
    if not isinstance(solver, str) or solver not in ("auto", "newton", "lbfgs"):
        raise ValueError(f"solver must be 'auto', 'newton' or 'lbfgs', got {solver!r}")
    gtol = check_real("gtol", gtol, low=0.0, low_open=True)
    if maxiter is not None:
        from ._validation import check_int

        maxiter = check_int("maxiter", maxiter, low=1)
    loss_obj = get_loss(loss, h)
    if float(loss_obj.lipschitz) > 1.0:
        raise ValueError(f"loss {loss_obj.name!r} declares Lipschitz constant "
                         f"{loss_obj.lipschitz} > 1; the calibration needs |l'| <= 1")
    _check_curvature(loss_obj)
    if method in GAUSSIAN_METHODS and not isinstance(loss_obj, (LogisticLoss, HuberLoss)):
        raise ValueError(f"method={method!r} is analysed for non-increasing margin losses "
                         "(logistic, Huber); use one of them or method='objective'")
    return dict(lambda_=lambda_, eps=eps, method=method, loss=loss_obj, data_norm=data_norm,
                clip=bool(clip), small_eps=small_eps, solver=solver, gtol=gtol,
                maxiter=maxiter, allow_nonconverged=bool(allow_nonconverged), delta=delta,
                amp_gamma=amp_gamma)


def fit_rows(rows, *, lambda_: float, eps: float, method: str, loss: Loss, data_norm: float,
             clip: bool, rng: np.random.Generator, small_eps: str = "adjust",
             solver: str = "auto", gtol: float = 1e-10, maxiter: int | None = None,
             accountant=None, allow_nonconverged: bool = False, norm_check: bool = True,
             what: str = "X", outside_hint: str = "", scan=None,
             inference_eps: float | None = None, delta: float = 0.0,
             amp_gamma: float | None = None) -> ERMResult:
    """The pipeline after the arguments are checked: scan → calibrate → fail closed or clip →
    spend → release. ``rows`` is a :class:`~privatelr.rows.RowSource` (any backend).

    ``norm_check=False`` skips the bound (only for ``compat="PrivateLR"``, which reproduces R
    and voids the guarantee). ``what`` and ``outside_hint`` word the refusal. ``scan``: a
    front end's own :class:`~privatelr.rows.Scan` of exactly these rows (values, labels and
    weights checked; norms of whole rows), which saves the pass. ``inference_eps``: also
    release the information matrix for inference with this ε (0: exact, in a non-private fit),
    after the coefficients and from the same ``rng``
    (:func:`privatelr.inference.release_information`).
    """
    if scan is None:                              # finiteness, labels, weights, norms: one pass
        scan = rows.scan(bound=data_norm, what=what)
    clipping = cal_private(eps) and norm_check and clip and scan.n_over
    if not clipping:
        scan.check_magnitude(what)
    check_gradient_scale(scan.max_weight, data_norm if clipping else scan.max_norm)
    cal = calibrate(scan.n, scan.d, eps=eps, lambda_=lambda_, method=method,
                    curvature=loss.curvature, data_norm=data_norm,
                    weights_bound=rows.weights_bound, small_eps=small_eps,
                    delta=delta if cal_private(eps) else 0.0, amp_gamma=amp_gamma)
    warn_costly(cal, stacklevel=4)
    n_clipped = 0
    if cal.method != "nonprivate" and norm_check and scan.n_over:
        if not clip:
            raise ValueError(OUTSIDE_BOUND.format(what=what, data_norm=data_norm,
                                                  more=outside_hint))
        rows = rows.clipped(data_norm)
        n_clipped = scan.n_over
    if cal.lambda_ == 0:
        check_full_rank(rows)
    if accountant is not None:
        accountant.spend(eps, cal.delta, note=f"{cal.method} perturbation, {loss.name} loss",
                         rdp=cal.rdp if cal.method == "gaussian" else None)   # AMP: privatelr.amp
        if inference_eps:
            accountant.spend(inference_eps, note="information matrix for inference")
    res = release(lambda noise: rows.objective(loss, cal.lambda_, noise), cal, rng,
                  loss_name=loss.name, solver=solver, gtol=gtol, maxiter=maxiter,
                  n_exceeding=scan.n_over, n_clipped=n_clipped,
                  allow_nonconverged=allow_nonconverged)
    if cal.lambda_ == 0:
        check_not_separated(rows, res)
    if inference_eps is not None:
        info = release_information(rows, res.coef, res.calibration, eps=inference_eps, rng=rng)
        res = dataclasses.replace(res, inference=info)
    return res


#: |margin| above which a maximum-likelihood fit is checked for separation (p within 1e-13 of
#: 0 or 1)
_SATURATED = 30.0


def _positive_rows(rows):
    """The design and ±1 labels of the rows with positive weight (``lambda_=0`` checks)."""
    X = getattr(rows, "X", None)
    if X is None:
        raise ValueError("lambda_=0 (maximum likelihood) needs the rows as a dense array in "
                         "memory, to check that the estimate exists (full rank, no separation); "
                         "on Dask or sparse data use lambda_ > 0")
    if rows.w is None:
        return X, rows.y
    keep = rows.w > 0
    if not keep.any():
        raise ValueError("lambda_=0: every weight is 0, so there is nothing to fit")
    return X[keep], rows.y[keep]


def check_full_rank(rows) -> None:
    """Refuse ``lambda_=0`` on a design without full column rank (the maximum-likelihood
    estimate would not be unique); the rank is read from a pivoted QR of the design."""
    from scipy.linalg import qr

    X, _ = _positive_rows(rows)
    r = np.abs(np.diag(qr(X, mode="r", pivoting=True)[0]))
    if r.size < X.shape[1] or r[-1] <= r[0] * max(X.shape) * np.finfo(float).eps:
        raise ValueError("lambda_=0: the design does not have full column rank (a column is "
                         "constant zero or a combination of others), so the maximum-likelihood "
                         "estimate is not unique; drop the redundant columns or use lambda_ > 0")


def check_not_separated(rows, res) -> None:
    r"""Refuse a ``lambda_=0`` (plain maximum likelihood) fit whose minimiser is not finite.

    Without a regulariser the logistic (or Huber) loss has a finite minimiser exactly when the
    rows with positive weight are neither completely nor quasi-completely separated (Albert &
    Anderson, Biometrika 71, 1984; the design has full rank: :func:`check_full_rank`). A
    convex loss without a minimiser has no stationary point, so a converged solution whose
    margins are all moderate (``|x'w| <= 30``) is the estimate, and nothing more is computed.
    Otherwise separation is decided by a linear program (Konis, 2007): maximise
    :math:`\sum_i y_i x_i^\top w` subject to :math:`y_i x_i^\top w \ge 0` for every row and
    :math:`-1 \le w_j \le 1`; a positive optimum is a direction along which the loss decreases
    for ever.
    """
    from scipy.optimize import linprog

    X, y = _positive_rows(rows)
    with np.errstate(over="ignore", invalid="ignore"):
        margins = X @ res.coef
        offset = getattr(rows, "offset", None)      # separation itself does not depend on it
        if offset is not None:
            margins += offset if rows.w is None else offset[rows.w > 0]
        margins = np.abs(margins)
    if res.convergence == 0 and np.isfinite(margins).all() and margins.max() <= _SATURATED:
        return
    Z = X * y[:, None]                                  # rows y_i x_i
    scale = np.abs(Z).max(axis=0)
    scale[scale == 0] = 1.0
    lp = linprog(-(Z / scale).sum(axis=0), A_ub=-(Z / scale), b_ub=np.zeros(Z.shape[0]),
                 bounds=(-1.0, 1.0), method="highs")
    if lp.status == 0 and -lp.fun > 1e-9 * Z.shape[0]:
        raise ValueError("lambda_=0: the classes are separated (completely or quasi-completely: "
                         "a linear combination of the columns predicts some labels perfectly), "
                         "so the maximum-likelihood estimate is infinite. Use lambda_ > 0 (e.g. "
                         "the default, lambda_=None), or drop the separating columns")


def cal_private(eps: float) -> bool:
    """Whether ``eps`` asks for a private fit (0 and inf are R's and the C programs' "none")."""
    return eps > 0 and not math.isinf(eps)


_HUBER_H_MIN = 1e-12


def _check_curvature(loss_obj) -> None:
    """The loss's curvature bound must be a finite positive number; a Huber ``h`` must resolve.

    The Huber loss's quadratic band ``[1 - h, 1 + h]`` must be wide next to the rounding of the
    margins (about 1e-16 relative): below ``h = 1e-12`` the loss is numerically the hinge loss,
    the solver cannot reach the exact minimiser both guarantees need, and for ``h`` below about
    2.8e-309 the curvature ``1/(2h)`` itself overflows.
    """
    c = float(loss_obj.curvature)
    if isinstance(loss_obj, HuberLoss) and not loss_obj.h >= _HUBER_H_MIN:
        what = ("its curvature 1/(2h) overflows double precision" if not math.isfinite(c) else
                "its quadratic band [1 - h, 1 + h] is below the rounding of the margins (the "
                "loss is numerically the hinge loss, and the solver cannot reach the exact "
                "minimiser the privacy guarantee needs)")
        raise ValueError(f"h={loss_obj.h!r} is too small for the Huber loss: {what}; use "
                         f"h >= {_HUBER_H_MIN:g} (the C programs use h = 0.5)")
    if c > 0 and math.isfinite(c):
        return
    raise ValueError(f"loss {loss_obj.name!r} declares curvature {c}; the calibration needs a "
                     "finite positive bound on |l''|")


def _polish(objective, x, gtol):
    """AMP's bounded polish (:mod:`privatelr.amp`, step 2): Newton from ``x``."""
    return minimize(objective, x, method="auto", warm_start=False, gtol=gtol,
                    maxiter=POLISH_ITERATIONS)


def release(make_objective, cal: Calibration, rng: np.random.Generator, *, loss_name: str,
            solver: str, gtol: float, maxiter: int | None, n_exceeding: int = 0,
            n_clipped: int = 0, allow_nonconverged: bool = False) -> ERMResult:
    """Draw the calibrated noise, minimise, and package the result — for every backend.

    ``make_objective(noise)`` builds the objective over the (already checked) rows with the
    objective-perturbation vector ``noise`` (None otherwise). The noise is drawn here, once, on
    the caller's side: objective perturbation before the solve, output perturbation after it,
    in that order from ``rng``, so in-memory and distributed fits with the same seed release
    the same coefficients. The noise vector is dropped before returning.

    This is the one place that decides what a result releases: a private fit gets
    ``value = nan`` (the objective value is a statistic of the raw data), and a private fit
    whose solver did not converge is refused with ``ValueError`` unless
    ``allow_nonconverged`` (module docstring, *Exactness*) — before the output-perturbation
    noise is drawn, so nothing derived from the unconverged iterate leaves this function.
    """
    d = cal.d
    private = cal.method != "nonprivate"
    noise = None
    if cal.method == "objective":
        noise = sphere_gamma_noise(d, cal.noise_scale, rng)
    elif cal.method in GAUSSIAN_METHODS:
        noise = gaussian_noise(d, cal.noise_scale, rng)
    objective = make_objective(noise)
    report = minimize(objective, np.zeros(d), method=solver, gtol=gtol, maxiter=maxiter,
                      value=not private)  # a private fit releases no value: not computed
    del noise
    converged = report.convergence == 0
    message = str(report.message)
    if cal.method == "amp":
        # the release never depends on the certificate (privatelr.amp): a public procedure
        # reaches it, or misses it with probability below delta_f, which the calibration charges
        done = certify(objective, report.x, cal, polish=_polish)
        # convergence 0: the released code must not say whether the solver met its own test
        report = dataclasses.replace(report, x=done.x, grad_norm=done.grad_norm, convergence=0,
                                     iterations=report.iterations + done.iterations,
                                     passes=int(getattr(objective, "passes", report.passes)))
        message += (f"; AMP certificate {'met' if done.certified else 'MISSED'} "
                    f"(gradient 2-norm {done.grad_norm:.3g}, amp_gamma {cal.amp_gamma:.3g}, "
                    f"after the {done.step})")
        converged = True     # the budget is part of the mechanism: the release is made
    if private and not converged and not allow_nonconverged:
        raise ValueError(
            f"the solver did not converge ({cal.method} perturbation, convergence code "
            f"{report.convergence}): the eps-differential-privacy "
            "guarantee holds only for the exact minimiser, so the coefficients are not released. "
            "Raise maxiter (or pass a gtol the solver can reach, or solver='newton'), or "
            "pass allow_nonconverged=True to get them with the guarantee void")
    coef = report.x
    if cal.method == "output":
        coef = coef + sphere_gamma_noise(d, cal.noise_scale, rng)
    elif cal.method == "amp":
        coef = coef + gaussian_noise(d, cal.output_scale, rng)
    status = cal.status if converged else cal.status + " nonconvergence"
    diagnostics = Diagnostics(value=float("nan") if private else float(report.value),
                              counts=dict(report.counts), message=message,
                              iterations=int(report.iterations), passes=int(report.passes),
                              grad_norm=float(report.grad_norm), n_exceeding=int(n_exceeding),
                              n_clipped=int(n_clipped))
    return ERMResult(coef=coef, calibration=cal, status=status,
                     convergence=int(report.convergence), loss=loss_name, solver=report.method,
                     diagnostics=diagnostics)
