r"""Differentially private empirical risk minimisation: the one home of the privacy arithmetic.

The estimators are those of Chaudhuri & Monteleoni, *Privacy-preserving logistic regression*,
NIPS 2008 (NIPS08), and Chaudhuri, Monteleoni & Sarwate, *Differentially private empirical risk
minimization*, JMLR 12 (2011) 1069–1109 (JMLR11). They minimise

.. math::
    J(w) = \frac{1}{n}\sum_{i=1}^n a_i\,\ell(y_i\,w^\top x_i) + \frac{\lambda}{2}\|w\|^2,
    \qquad y_i \in \{-1, +1\},

every coefficient (the intercept too) penalised, over design rows with the public bound
:math:`\|x_i\| \le B` and weights :math:`0 \le a_i \le A` (``A = 1`` without weights), for a loss
with :math:`|\ell'| \le 1` and :math:`|\ell''| \le c` (:mod:`privatelr.losses`).

**Reduction to the unit ball.** The theorems assume :math:`\|x\| \le 1` and unweighted losses.
Write :math:`x = B x'`, :math:`w' = B w`: then :math:`w^\top x = w'^\top x'` and
:math:`\frac{\lambda}{2}\|w\|^2 = \frac{\lambda/B^2}{2}\|w'\|^2`, so the problem is the unit-ball
problem with :math:`\lambda' = \lambda/B^2`. A weight :math:`a_i \le A` turns the loss into
:math:`a_i\ell` with Lipschitz constant :math:`A` and curvature :math:`Ac`; dividing the
objective by ``A`` gives a 1-Lipschitz loss with curvature ``c`` and :math:`\lambda'' =
\lambda/(A B^2)` — so every formula below is the theorem's with ``λ`` replaced by
``λ/(A B²)`` and the noise mapped back to ``w`` (a factor ``A B``).

**Objective perturbation** (JMLR11 Algorithm 2 and Theorem 9; NIPS08 Algorithm 2 and Theorem 3).
Let :math:`\varepsilon' = \varepsilon - 2\log\!\big(1 + \frac{c A B^2}{n\lambda}\big)`
(JMLR11 eq. after Algorithm 2: :math:`\log(1 + \frac{2c}{n\lambda} + \frac{c^2}{n^2\lambda^2})`).

* If :math:`\varepsilon' > 0`: minimise :math:`J(w) + \frac{1}{n} b^\top w` with ``b`` of density
  :math:`\propto \exp(-\varepsilon'\|b\|/(2AB))`, i.e. :math:`\|b\| \sim \mathrm{Gamma}(d,
  2AB/\varepsilon')` uniformly directed (unit-ball case: :math:`\exp(-\varepsilon'\|b\|/2)`).
* Otherwise (status ``"adjusted lambda"``): regularise with
  :math:`\lambda^* = \frac{c A B^2}{n(e^{\varepsilon/4} - 1)}` (JMLR11's :math:`\lambda + \Delta`),
  for which :math:`2\log(1 + cAB^2/(n\lambda^*)) = \varepsilon/2`, and use
  :math:`\varepsilon' = \varepsilon/2`.

With ``B = 1, A = 1, c = 1/4`` these are exactly PrivateLR's ``penalty``, ``eps_eff`` and adjusted
λ. The C programs (``small_eps="error"``) refuse instead of adjusting when ``ε' < 1e-4``.

**Output perturbation** (JMLR11 Algorithm 1, Corollary 8; NIPS08 Theorem 1). The minimiser
:math:`w^*` of the λ-strongly-convex ``J`` has L2 sensitivity :math:`2AB/(n\lambda)` (a
1-Lipschitz loss scaled by ``A`` over rows of norm ``≤ B``), so releasing :math:`w^* + b` with
:math:`\|b\| \sim \mathrm{Gamma}(d, 2AB/(n\lambda\varepsilon))` is ε-differentially private.
This requires the *exact* minimiser: the solver stops at a relative gradient of 1e-10, and a
private fit whose solver did not converge is refused (see *Exactness* below).

**Non-private** (``eps == 0``, R's convention, or ``eps == inf``): the minimiser of ``J``.

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
every implementation of these mechanisms accepts.)

**What a result releases.** The objective value at the private solution is a statistic of the
raw data: with output perturbation it is ``J`` at the exact, noise-free minimiser, which tells
neighbouring data sets apart. A private :class:`ERMResult` therefore has ``value = nan``; only
non-private fits report the objective value.

The noise vector ``b`` is never stored or returned: together with the coefficients it would
reveal the non-private minimiser.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .accountant import require_budget
from ._validation import as_float_matrix, as_pm1_labels, as_weights, check_int, check_real, \
    scan_rows
from .exceptions import PrivacyWarning
from .losses import Loss, get_loss
from .mechanisms import check_random_state, sphere_gamma_noise
from .objective import ERMObjective
from .solver import minimize

__all__ = ["Calibration", "ERMResult", "calibrate", "fit", "check_data_norm"]

_METHODS = ("objective", "output")


@dataclass(frozen=True)
class Calibration:
    """The privacy calibration of one fit (no data in it beyond ``n`` and ``d``).

    Attributes
    ----------
    method : str
        ``"objective"``, ``"output"`` or ``"nonprivate"``.
    eps : float
        The requested privacy level (0 or inf: none).
    eps_eff : float
        ε' used for the noise (objective perturbation), ``eps`` for output perturbation, 0 when
        non-private.
    penalty : float
        :math:`2\\log(1 + cAB^2/(n\\lambda))` at the requested λ (objective perturbation only).
    lambda_ : float
        The regulariser used (λ, or λ* when adjusted).
    lambda_requested : float
    noise_scale : float
        Scale ``s`` of :math:`\\|b\\| \\sim \\mathrm{Gamma}(d, s)`; 0 when non-private.
    status : str
        ``"ok"`` or ``"adjusted lambda"``.
    """

    method: str
    eps: float
    eps_eff: float
    penalty: float
    lambda_: float
    lambda_requested: float
    noise_scale: float
    status: str
    n: int
    d: int
    data_norm: float
    weights_bound: float
    curvature: float


def calibrate(n: int, d: int, *, eps: float, lambda_: float, method: str = "objective",
              curvature: float = 0.25, data_norm: float = 1.0, weights_bound: float = 1.0,
              small_eps: str = "adjust") -> Calibration:
    """Compute λ used, ε', the penalty and the noise scale (see the module docstring).

    Parameters
    ----------
    n, d : int
        Rows and columns of the design (intercept column included).
    eps : float
        Privacy level; 0 or inf means non-private.
    lambda_ : float
        Requested regulariser (> 0).
    method : {"objective", "output"}
    curvature : float
        The loss's ``c`` (1/4 logistic, 1/(2h) Huber).
    data_norm : float
        ``B``, the public bound on the L2 norm of every design row.
    weights_bound : float
        ``A``, the public bound on every weight (1 without weights).
    small_eps : {"adjust", "error"}
        What to do when ε' <= 0 (``"adjust"``: JMLR11/PrivateLR adjusted λ) or, with ``"error"``,
        when ε' < 1e-4 (the C programs' rule): raise ``ValueError``.

    Examples
    --------
    >>> cal = calibrate(150, 5, eps=1.0, lambda_=0.01)
    >>> round(cal.penalty, 6), round(cal.eps_eff, 6), cal.status
    (0.308301, 0.691699, 'ok')
    """
    if method not in _METHODS:
        raise ValueError(f"method must be 'objective' or 'output', got {method!r}")
    if small_eps not in ("adjust", "error"):
        raise ValueError(f"small_eps must be 'adjust' or 'error', got {small_eps!r}")
    B, A, c = float(data_norm), float(weights_bound), float(curvature)
    common = dict(n=int(n), d=int(d), data_norm=B, weights_bound=A, curvature=c,
                  lambda_requested=float(lambda_))
    if eps == 0 or np.isinf(eps):
        return Calibration(method="nonprivate", eps=float(eps), eps_eff=0.0, penalty=0.0,
                           lambda_=float(lambda_), noise_scale=0.0, status="ok", **common)
    if method == "output":
        denominator = n * lambda_ * eps
        with np.errstate(over="ignore"):
            scale = 2.0 * A * B / denominator if denominator > 0 else np.inf
        _check_calibration(scale, lambda_, eps, lambda_, B, A, c)
        return Calibration(method="output", eps=eps, eps_eff=eps, penalty=0.0, lambda_=lambda_,
                           noise_scale=scale, status="ok", **common)
    with np.errstate(over="ignore"):   # an overflowing c A B^2 is refused below, by name
        penalty = 2.0 * np.log1p(c * A * B * B / (n * lambda_))
    eps_eff = eps - penalty
    if small_eps == "error":
        if eps_eff < 1e-4:
            raise ValueError(f"eps too small for lambda: eps' = eps - 2 log(1 + c/(n lambda)) = "
                             f"{eps_eff:.6g} < 1e-4; increase eps, lambda or n")
        lam, status = lambda_, "ok"
    elif eps_eff > 0:
        lam, status = lambda_, "ok"
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            growth = n * np.expm1(eps / 4.0)
            lam = c * A * B * B / growth if growth > 0 else np.inf
        eps_eff, status = eps / 2.0, "adjusted lambda"
    with np.errstate(over="ignore"):
        scale = 2.0 * A * B / eps_eff if eps_eff > 0 else np.inf
    _check_calibration(scale, lam, eps, lambda_, B, A, c)
    return Calibration(method="objective", eps=eps, eps_eff=float(eps_eff), penalty=float(penalty),
                       lambda_=float(lam), noise_scale=scale, status=status, **common)


def _check_calibration(scale, lam, eps, lambda_, B, A, c) -> None:
    """``ValueError`` naming the arguments when extreme values (e.g. ``eps=5e-324``,
    ``data_norm=1e308``) leave no finite positive noise scale or regulariser in double
    precision (before: ``ZeroDivisionError``, a ``RuntimeWarning``, or ``ValueError: scale must
    be finite`` from the noise sampler)."""
    if 0 < scale < np.inf and 0 < lam < np.inf:
        return
    what = "noise scale" if not 0 < scale < np.inf else "regulariser lambda used"
    extra = (f", weights_bound={A!r}" if A != 1.0 else "") + \
        (f", loss curvature c={c!r} (Huber: c = 1/(2h))" if c != 0.25 else "")
    raise ValueError(f"eps={eps!r}, lambda_={lambda_!r}, data_norm={B!r}{extra}: the privacy "
                     f"calibration's {what} is not a finite positive number in double "
                     "precision (overflow or underflow); use less extreme values")


@dataclass(frozen=True)
class ERMResult:
    """Result of :func:`fit`: coefficients, privacy calibration and an honest solver report.

    ``counts``, ``convergence`` and ``message`` follow R's ``optim`` (``convergence`` 0 means
    converged). ``status`` is ``"ok"`` or ``"adjusted lambda"``, with ``" nonconvergence"``
    appended when the solver did not converge (possible for a private fit only with
    ``allow_nonconverged=True``, and then the guarantee is void).

    ``value`` is the objective value at ``coef`` for a **non-private** fit (``method ==
    "nonprivate"``) and ``nan`` for a private one: the objective value at the private solution
    is a statistic of the raw data (with output perturbation, ``J`` at the exact minimiser) and
    is not released. It is not kept anywhere else in the result either.
    """

    coef: np.ndarray
    value: float
    counts: dict
    convergence: int
    message: str
    status: str
    eps: float
    eps_eff: float
    penalty: float
    lambda_: float
    n: int
    d: int
    method: str
    loss: str
    data_norm: float
    weights_bound: float
    noise_scale: float
    n_exceeding: int = 0
    n_clipped: int = 0
    iterations: int = 0
    passes: int = 0
    grad_norm: float = 0.0
    solver: str = ""
    calibration: Calibration | None = field(default=None, repr=False)


def check_data_norm(X: np.ndarray, data_norm: float, clip: bool, *, name: str = "X",
                    stacklevel: int = 3, sq: np.ndarray | None = None) -> tuple[np.ndarray, int, int]:
    """Enforce ``||x_i|| <= data_norm`` on the rows of ``X``.

    Rows above the bound are scaled onto the sphere of radius ``data_norm`` when ``clip`` is
    true (a copy of ``X`` is made only then); otherwise one :class:`PrivacyWarning` says how many
    rows exceed the bound and the largest norm. Returns ``(X, n_exceeding, n_clipped)``.
    ``sq``: the squared row norms, when already computed.
    """
    if sq is None:
        sq = np.einsum("ij,ij->i", X, X)
    limit = data_norm * data_norm * (1.0 + 1e-12)
    over = sq > limit
    k = int(over.sum())
    if k == 0:
        return X, 0, 0
    largest = float(np.sqrt(sq.max()))
    if clip:
        X = X.copy()
        X[over] *= (data_norm / np.sqrt(sq[over]))[:, None]
        return X, k, k
    warnings.warn(f"{k} of {X.shape[0]} rows of {name} have L2 norm above data_norm={data_norm:g} "
                  f"(largest {largest:.4g}): the differential-privacy guarantee does not hold for "
                  "them. Pass clip=True to clip them into the ball, or rescale with a public bound.",
                  PrivacyWarning, stacklevel=stacklevel)
    return X, k, 0


def fit(X, y, *, lambda_: float, eps: float, method: str = "objective",
        loss: str | Loss = "logistic", h: float = 0.5, data_norm: float = 1.0, clip: bool = False,
        weights=None, weights_bound: float | None = None, random_state=None,
        small_eps: str = "adjust", solver: str = "auto", gtol: float = 1e-10,
        maxiter: int | None = None, norm_check: bool = True, accountant=None,
        allow_nonconverged: bool = False) -> ERMResult:
    """Fit ε-differentially private regularised ERM (logistic regression or Huber SVM).

    The privacy calibration is :func:`calibrate`; the derivations are in the module docstring.

    Parameters
    ----------
    X : (n, d) array
        Design matrix, intercept column included by the caller. Every row must satisfy
        ``||x|| <= data_norm`` for the guarantee. A Dask array/DataFrame (with Dask or NumPy
        ``y``) is fitted by :func:`privatelr.distributed.fit_dask`: one map-reduce per solver
        step, same result; its row count ``n`` is treated as public (public record count).
    y : (n,) array
        Labels as 0/1, bool or -1/+1.
    lambda_ : float
        Regulariser λ > 0 of :math:`\\frac{\\lambda}{2}\\|w\\|^2`.
    eps : float
        Privacy level ε >= 0; 0 (or inf) fits the non-private minimiser.
    method : {"objective", "output"}
        Objective perturbation (default) or output perturbation.
    loss : {"logistic", "huber"} or Loss
    h : float
        Huber constant in (0, 0.5] (``loss="huber"`` only).
    data_norm : float
        Public bound ``B`` on the row norms.
    clip : bool
        Clip rows above ``data_norm`` onto the bound (else warn with :class:`PrivacyWarning`).
    weights : (n,) array, optional
        Observation weights in ``[0, weights_bound]``.
    weights_bound : float, optional
        Public bound ``A`` on the weights; required with ``weights``.
    random_state : int, numpy.random.Generator or None
        Source of the noise; None draws from OS entropy.
    small_eps : {"adjust", "error"}
        See :func:`calibrate`.
    solver : {"auto", "newton", "lbfgs"}
        Newton (d <= 1000 under ``"auto"``) or L-BFGS.
    gtol : float
        Relative gradient tolerance (>= 0).
    maxiter : int, optional
        Iteration cap (default 200 Newton, 15000 L-BFGS; 0 also means the default).
    norm_check : bool
        Check the rows against ``data_norm`` (clip or warn). Pass False only when the caller has
        already enforced the bound or issued its own :class:`PrivacyWarning` (``dplr`` does).
    accountant : privatelr.PrivacyAccountant, optional
        Charged ``eps`` once the arguments are valid; a fit that would exceed its budget raises
        :class:`~privatelr.BudgetExceededError` before the data are read. A non-private fit
        (``eps`` 0 or inf) with an accountant raises ``ValueError``: it has no finite cost.
    allow_nonconverged : bool
        A private fit (objective or output perturbation) whose solver did not converge within
        ``maxiter`` iterations to ``gtol`` is refused with ``ValueError`` by default: both
        guarantees are proved for the exact minimiser only (module docstring, *Exactness*).
        ``True`` returns it anyway with ``status`` ending in ``"nonconvergence"``; the ε
        guarantee is then **void**. The accountant, if any, has been charged either way (the
        data were read). Non-private fits always return, with the status saying so.

    Returns
    -------
    ERMResult
        ``value`` is ``nan`` for a private fit (see :class:`ERMResult`).

    Raises
    ------
    ValueError
        Invalid arguments, or a private fit that did not converge (unless
        ``allow_nonconverged=True``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = np.c_[np.full(200, 0.5), rng.uniform(-0.5, 0.5, size=(200, 2))]
    >>> y = (X[:, 1] + 0.1 * rng.standard_normal(200) > 0).astype(int)
    >>> res = fit(X, y, lambda_=0.01, eps=1.0, random_state=1)
    >>> res.status, res.convergence, res.d
    ('ok', 0, 3)
    """
    if any(type(a).__module__.split(".")[0] == "dask" for a in (X, y, weights)):
        args = dict(locals())  # exactly fit's arguments at this point
        from .distributed import fit_dask  # Dask collections: one map-reduce per solver step
        return fit_dask(**args)
    if accountant is not None:  # before the data are read: a refused fit computes nothing
        require_budget(accountant, eps)
    X = as_float_matrix("X", X, finite=False)
    n, d = X.shape
    sq = scan_rows("X", X)  # one pass: finiteness and the row norms checked below
    y = as_pm1_labels("y", y, n)
    lambda_ = check_real("lambda_", lambda_, low=0.0, low_open=True)
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    if not isinstance(clip, (bool, np.bool_)):
        raise TypeError(f"clip must be True or False, got {clip!r}")
    if method not in _METHODS:
        raise ValueError(f"method must be 'objective' or 'output', got {method!r}")
    loss_obj = get_loss(loss, h)
    if float(loss_obj.lipschitz) > 1.0:
        raise ValueError(f"loss {loss_obj.name!r} declares Lipschitz constant "
                         f"{loss_obj.lipschitz} > 1; the calibration needs |l'| <= 1")
    if not np.isfinite(float(loss_obj.curvature)):
        raise ValueError(f"loss {loss_obj.name!r} has curvature {loss_obj.curvature} (h={h!r}: "
                         "1/(2h) overflows double precision); use a larger h")
    gtol = check_real("gtol", gtol, low=0.0)
    if maxiter is not None:
        maxiter = check_int("maxiter", maxiter, low=0)
    weights, A = as_weights("weights", weights, n, "weights_bound", weights_bound)
    rng = check_random_state(random_state)
    if not isinstance(allow_nonconverged, (bool, np.bool_)):
        raise TypeError(f"allow_nonconverged must be True or False, got {allow_nonconverged!r}")

    cal = calibrate(n, d, eps=eps, lambda_=lambda_, method=method,
                    curvature=loss_obj.curvature, data_norm=data_norm, weights_bound=A,
                    small_eps=small_eps)
    private = cal.method != "nonprivate"
    if accountant is not None:
        accountant.spend(eps, note=f"erm.fit {cal.method} perturbation, {loss_obj.name} loss")
    n_exceeding = n_clipped = 0
    if private and norm_check:
        X, n_exceeding, n_clipped = check_data_norm(X, data_norm, clip, sq=sq)
    del sq

    return _release(lambda noise: ERMObjective(X, y, loss_obj, cal.lambda_, noise=noise,
                                               weights=weights),
                    cal, rng, loss_name=loss_obj.name, solver=solver, gtol=gtol,
                    maxiter=maxiter, n_exceeding=n_exceeding, n_clipped=n_clipped,
                    allow_nonconverged=bool(allow_nonconverged))


def _release(make_objective, cal: Calibration, rng: np.random.Generator, *, loss_name: str,
             solver: str, gtol: float, maxiter: int | None, n_exceeding: int = 0,
             n_clipped: int = 0, allow_nonconverged: bool = False) -> ERMResult:
    """Draw the calibrated noise, minimise, and package the result — for every backend.

    ``make_objective(noise)`` builds the objective over the (already checked) data with the
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
    noise = sphere_gamma_noise(d, cal.noise_scale, rng) if cal.method == "objective" else None
    report = minimize(make_objective(noise), np.zeros(d), method=solver, gtol=gtol,
                      maxiter=maxiter)
    del noise
    converged = report.convergence == 0
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
    status = cal.status if converged else cal.status + " nonconvergence"
    value = float("nan") if private else float(report.value)
    return ERMResult(coef=coef, value=value, counts=report.counts,
                     convergence=report.convergence, message=report.message, status=status,
                     eps=cal.eps, eps_eff=cal.eps_eff, penalty=cal.penalty, lambda_=cal.lambda_,
                     n=cal.n, d=d, method=cal.method, loss=loss_name, data_norm=cal.data_norm,
                     weights_bound=cal.weights_bound, noise_scale=cal.noise_scale,
                     n_exceeding=n_exceeding, n_clipped=n_clipped, iterations=report.iterations,
                     passes=report.passes, grad_norm=report.grad_norm, solver=report.method,
                     calibration=cal)
