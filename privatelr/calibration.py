r"""The privacy arithmetic, once: every sensitivity, noise scale and default of the package.

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

**Gaussian objective perturbation** (``method="gaussian"``; Kifer, Smith & Thakurta, COLT 2012,
Algorithm 1, with the privacy profile derived in
:func:`privatelr.mechanisms.objective_gaussian_delta`, eqs. (1)–(3)). Minimise
:math:`J(w) + \frac1n b^\top w` with :math:`b \sim N(0, \sigma^2 I_d)`. In the unit-ball
reduction the Jacobian costs :math:`\log(1 + q)`, :math:`q = cAB^2/(n\lambda)` (eq. (1): one
rank-one term, half the pure-ε path's :math:`2\log(1 + q)`), leaving
:math:`\varepsilon' = \varepsilon - \log(1 + q)`, and the unit-ball
:math:`\sigma_1` is the smallest with :math:`\delta_G(\varepsilon'; 2/\sigma_1) +
2\delta_G(\varepsilon'; 1/\sigma_1) \le \delta` (eq. (3),
:func:`~privatelr.mechanisms.objective_gaussian_sigma`); mapped back, :math:`\sigma = AB\sigma_1`.
When :math:`\varepsilon' \le 0` (or below 1e-4 with ``small_eps="error"``, which then refuses)
λ is raised to :math:`\lambda^* = cAB^2/(n(e^{\varepsilon/2} - 1))`, for which
:math:`\log(1 + q) = \varepsilon/2`, and :math:`\varepsilon' = \varepsilon/2` (status
``"adjusted lambda"``). For comparison, KST's calibration :math:`\sigma^2 = (8\log(2/\delta)
+ 4\varepsilon)/\varepsilon^2` (with λ large enough for a Jacobian cost of ε/2) gives σ = 10.1
at ε = 1, δ = 1e-5; here, at the default λ (whose Jacobian cost is ε/20, so ε' = 0.95),
σ = 7.82 (unit ball):

>>> cal = calibrate(1000, 4, eps=1.0, lambda_=default_lambda(1000, 1.0), method="gaussian",
...                 delta=1e-5)
>>> round(cal.eps_eff, 4), round(cal.noise_scale, 2)
(0.95, 7.82)
>>> round(math.sqrt(8 * math.log(2 / 1e-5) + 4), 1)          # KST's sigma at eps = 1
10.1

Redberg et al. analyse
add/remove neighbours, for which the gradient changes by a vector of norm at most 1; replacing
a row changes it by up to 2, which is why the norm-2 term leads eq. (3). The guarantee is
(ε, δ)-DP for neighbours that replace one row (``n`` public); it needs a non-increasing margin
loss with :math:`|\ell'| \le 1` (logistic, Huber).

**Approximate minima perturbation** (``method="amp"``; Iyengar, Near, Song, Thakkar, Thakurta &
Wang, *Towards practical differentially private convex optimization*, IEEE S&P 2019,
Algorithm 1 and Theorem 1). The Gaussian objective is solved only until its gradient norm is at
most γ (``amp_gamma``, a public constant; default :data:`AMP_GAMMA` ``× A B``), then
:math:`\tilde w + N(0, \sigma_2^2 I)` is released. Proof: the exact minimiser :math:`w^*` of the
perturbed objective is :math:`(\varepsilon_1, \delta_1)`-DP (above; it is never computed, only
used in the argument). ``J`` is λ-strongly convex, so

(5) :math:`\|\tilde w - w^*\| \le \|\nabla J(\tilde w)\|/\lambda \le \gamma/\lambda`;

given :math:`w^*` the residual :math:`r = \tilde w - w^*` is a function of the data (and of
:math:`w^*`, which determines ``b`` with the data) of norm at most :math:`\gamma/\lambda`, so

(6) :math:`\|r(D) - r(D')\| \le 2\gamma/\lambda` between neighbours,

and :math:`r + N(0, \sigma_2^2 I)` with :math:`\sigma_2` the analytic Gaussian σ for
sensitivity :math:`2\gamma/\lambda` at :math:`(\varepsilon_2, \delta_2)` is
:math:`(\varepsilon_2, \delta_2)`-DP. The release :math:`w^* + (r + N)` is post-processing of the
two, so by adaptive composition it is :math:`(\varepsilon_1 + \varepsilon_2, \delta_1 +
\delta_2)`-DP. The split is :math:`(\varepsilon_2, \delta_2) =` :data:`AMP_SHARE`
:math:`\times (\varepsilon, \delta)`. That is the guarantee of an iterate that meets the
certificate; whether the solver meets it depends on the data, so the release never depends on
it: the iterate comes from a public procedure (the solver, a bounded polish, then accelerated
gradient descent for a public number of iterations) that misses the certificate with
probability at most :math:`\delta_f` on every data set, and :math:`(1 + e^\varepsilon)
\delta_f =` :data:`AMP_FAILURE_SHARE` :math:`\times\,\delta` is charged
(:math:`\delta_1 = (1 -` :data:`AMP_SHARE` :math:`-` :data:`AMP_FAILURE_SHARE`
:math:`)\,\delta`); the derivation is in :mod:`privatelr.amp`.

**Non-private** (``eps == 0``, R's convention, or ``eps == inf``): the minimiser of ``J``.

**Design rows with an intercept.** The theorems bound every design row, the constant intercept
entry included: a covariate row with :math:`\|x\| \le` ``data_norm`` gives the row
:math:`(1, x)` of norm at most :math:`\sqrt{\texttt{data\_norm}^2 + 1}`, which is the ``B``
that :func:`norm_bound` returns for a model with an intercept.

**Default λ** (one rule for every front end). :func:`default_lambda` is the smallest λ whose
objective-perturbation penalty :math:`2\log(1 + cAB^2/(n\lambda))` is :math:`\varepsilon/10`:
:math:`\lambda = cAB^2/(n(e^{\varepsilon/20} - 1))`. With ``B = 1, A = 1, c = 1/4`` it is
PrivateLR's ``1/(4n(exp(eps/20) - 1))``; for other bounds the penalty stays a tenth of ε (R's
rule applied to ``B > 1`` would spend more, up to most of ε).

**Label privacy (WALR).** Changing one label changes the weighted dot product
:math:`\frac1N\sum_i a_i y_i x_i` (features in :math:`[0,1]^k`, weights in :math:`[0, A]`) by at
most :math:`A\sqrt{k}/N` in L2 norm: :func:`label_sensitivity`. The Gaussian σ for it is
:func:`privatelr.mechanisms.gaussian_sigma`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import (FLOAT_MAX, GRADIENT_LIMIT, LOG_FLOAT_MAX, TINY, check_int, check_real,
                          exp_or_raise, log1p_exp, log_expm1)

__all__ = ["Calibration", "calibrate", "default_lambda", "default_lambda_inference_output",
           "norm_bound", "label_sensitivity", "warn_costly",
           "METHODS", "calibrate_multinomial", "default_lambda_multinomial", "check_method"]

METHODS = ("objective", "output", "gaussian", "amp")
#: Methods with Gaussian noise: they need ``delta`` > 0.
GAUSSIAN_METHODS = ("gaussian", "amp")
#: Share of (eps, delta) that approximate minima perturbation spends on its output noise.
AMP_SHARE = 0.02
#: Default gradient-norm certificate of approximate minima perturbation, in units of A*B.
AMP_GAMMA = 1e-8
#: Share of delta that approximate minima perturbation charges for missing its certificate
#: within its public iteration budget (:mod:`privatelr.amp`).
AMP_FAILURE_SHARE = 1e-3


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
        :math:`2\\log(1 + cAB^2/(n\\lambda))` at the requested λ (objective perturbation);
        for the Gaussian methods the Jacobian term :math:`\\log(1 + cAB^2/(n\\lambda))` at the
        λ used.
    lambda_ : float
        The regulariser used (λ, or λ* when adjusted).
    lambda_requested : float
    noise_scale : float
        Scale ``s`` of :math:`\\|b\\| \\sim \\mathrm{Gamma}(d, s)`; 0 when non-private.
    status : str
        ``"ok"`` or ``"adjusted lambda"``.
    delta : float
        δ of the Gaussian methods (0 for the ε-DP ones).
    amp_gamma : float
        Approximate minima perturbation's gradient-norm certificate γ (0 otherwise).
    output_scale : float
        Standard deviation of AMP's output noise (0 otherwise).

    For ``"gaussian"`` and ``"amp"``, ``noise_scale`` is the standard deviation σ of each
    coordinate of ``b`` and ``eps_eff`` the ε' of the objective stage.
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
    delta: float = 0.0
    amp_gamma: float = 0.0
    output_scale: float = 0.0
    classes: int = 0           # K of a multinomial fit (d then counts d_x * K); 0 binary

    @property
    def jacobian(self) -> float:
        """The Jacobian term of the Gaussian methods' analysis, ``log(1 + cAB^2/(n lambda))``."""
        return self.penalty if self.method in GAUSSIAN_METHODS else 0.0

    def rdp(self, orders) -> np.ndarray:
        """Rényi DP of this release at ``orders`` (> 1), for the accountant's composition:
        eq. (4) of :func:`privatelr.mechanisms.rdp_objective_gaussian` (plus the Gaussian
        mechanism's for AMP's output noise); the ε-DP methods' curve is randomized response's
        (:func:`privatelr.mechanisms.rdp_pure`)."""
        from .mechanisms import rdp_gaussian, rdp_objective_gaussian, rdp_pure

        if self.method not in GAUSSIAN_METHODS:
            return rdp_pure(self.eps, orders)
        unit = self.noise_scale / (self.weights_bound * self.data_norm)
        curve = rdp_objective_gaussian(unit, self.jacobian, orders)
        if self.method == "amp":
            sens = 2.0 * self.amp_gamma / self.lambda_
            curve = curve + rdp_gaussian(self.output_scale / sens, orders)
        return curve


def _ratio(num, den) -> float | None:
    """``prod(num) / prod(den)``, multiplied left to right as written in the formulas, or None
    when an intermediate product leaves the normal range of double precision (then the caller
    computes the quantity from logarithms)."""
    top = 1.0
    for x in num:
        top *= x
        if not TINY <= top <= FLOAT_MAX:
            return None
    bottom = 1.0
    for x in den:
        bottom *= x
        if not TINY <= bottom <= FLOAT_MAX:
            return None
    value = top / bottom
    return value if TINY <= value <= FLOAT_MAX else None


_ADVICE = {
    "eps": ("increase eps", "decrease eps, or pass eps=inf (or 0) for a non-private fit"),
    "lambda_": ("increase lambda_", "decrease lambda_"),
    "data_norm": ("decrease data_norm (rescale X by a public constant so that its rows' bound is "
                  "nearer 1)", "increase data_norm (rescale X by a public constant so that its "
                  "rows' bound is nearer 1)"),
    "weights_bound": ("decrease weights_bound (rescale the weights by a public constant)",
                      "increase weights_bound (rescale the weights by a public constant)"),
    "curvature": ("use a loss of smaller curvature (for the Huber loss, a larger h)",
                  "use a loss of larger curvature"),
    "n": ("use more rows", "use fewer rows"),
}


def check_method(method, eps: float, delta) -> tuple[str, float]:
    """``(method, delta)`` checked against each other: a method of :data:`METHODS`; the Gaussian
    methods need ``delta`` in (0, 1) in a private fit, the ε-DP ones take none (the one rule of
    every front end).

    Examples
    --------
    >>> check_method("gaussian", 1.0, 1e-6)
    ('gaussian', 1e-06)
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got "
                         f"{method!r}")
    delta = check_real("delta", delta, low=0.0, high=1.0, high_open=True)
    if method in GAUSSIAN_METHODS and eps > 0 and not math.isinf(eps) and not delta > 0:
        raise ValueError(f"method={method!r} adds Gaussian noise and needs delta in (0, 1) (e.g. "
                         "delta=1e-6, well below 1/n); pass delta=, or method='objective' for "
                         "pure eps-differential privacy")
    if method not in GAUSSIAN_METHODS and delta:
        raise ValueError(f"delta={delta:g} is for method='gaussian' or 'amp'; method={method!r} "
                         "is eps-differentially private: drop delta")
    return method, delta


def _noise_scale(direct: float | None, log_scale: float, d: int, terms: dict,
                 formula: str) -> float:
    """The noise scale, or ValueError when it underflows to 0 or its noise could overflow.

    The norm of the noise is Gamma(d, scale); it exceeds ``(d + 12 sqrt(d) + 80) * scale`` with
    probability below 1e-19, so a scale whose product with that (times 4, room for the
    minimiser) is not a finite double is refused before anything is drawn.
    """
    room = math.log(4.0 * (d + 12.0 * math.sqrt(d) + 80.0))
    quantity = f"the noise scale {formula}"  # the limit: the noise's norm must be a finite double
    exp_or_raise(min(log_scale, LOG_FLOAT_MAX - room), terms, quantity, _ADVICE)  # underflow
    if log_scale + room >= LOG_FLOAT_MAX:
        exp_or_raise(log_scale, terms, quantity + f" (which, times {math.exp(room):.4g} "
                     f"for d={d}, bounds the norm of the noise vector, a double)", _ADVICE,
                     log_limit=LOG_FLOAT_MAX - room)
    return direct if direct is not None else math.exp(log_scale)


def calibrate(n: int, d: int, *, eps: float, lambda_: float, method: str = "objective",
              curvature: float = 0.25, data_norm: float = 1.0, weights_bound: float = 1.0,
              small_eps: str = "adjust", delta: float = 0.0,
              amp_gamma: float | None = None) -> Calibration:
    r"""Compute λ used, ε', the penalty and the noise scale (see the module docstring).

    Every formula is evaluated as written when its intermediate products are normal doubles and
    otherwise from logarithms, so any arguments in [5e-324, 1.8e308] give the exact value
    (e.g. the penalty :math:`2\log(1 + e^{\ell})` with
    :math:`\ell = \log c + \log A + 2\log B - \log n - \log\lambda`, and
    :math:`\log(e^{\varepsilon/4} - 1)` without under- or overflow). A noise scale or an
    adjusted λ that is not a finite positive double — or a noise scale so large that the noise
    vector could overflow, or (objective perturbation) that its term ``b/n`` could exceed the
    1e153 up to which the solver can square gradients — raises ``ValueError`` naming the
    argument that causes it and what to change, before anything is drawn.

    Parameters
    ----------
    n, d : int
        Rows and columns of the design (intercept column included).
    eps : float
        Privacy level; 0 or inf means non-private.
    lambda_ : float
        Requested regulariser (> 0; 0 is allowed only when ``eps`` is 0 or inf: maximum
        likelihood).
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
    delta : float
        δ in (0, 1) of the Gaussian methods (``"gaussian"``, ``"amp"``); 0 for the others.
    amp_gamma : float, optional
        The gradient-norm certificate γ of ``"amp"`` (default ``AMP_GAMMA * A * B``).

    Examples
    --------
    >>> cal = calibrate(150, 5, eps=1.0, lambda_=0.01)
    >>> round(cal.penalty, 6), round(cal.eps_eff, 6), cal.status
    (0.308301, 0.691699, 'ok')
    >>> calibrate(150, 5, eps=1.0, lambda_=1e-300).lambda_ == 0.25 / (150 * math.expm1(0.25))
    True
    """
    if small_eps not in ("adjust", "error"):
        raise ValueError(f"small_eps must be 'adjust' or 'error', got {small_eps!r}")
    n = check_int("n", n, low=1)
    d = check_int("d", d, low=1)
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    nonprivate = eps == 0 or np.isinf(eps)
    lambda_ = check_real("lambda_", lambda_, low=0.0, low_open=not nonprivate)
    B = check_real("data_norm", data_norm, low=0.0, low_open=True)
    A = check_real("weights_bound", weights_bound, low=0.0, low_open=True)
    c = check_real("curvature", curvature, low=0.0, low_open=True)
    common: dict[str, Any] = dict(n=n, d=d, data_norm=B, weights_bound=A, curvature=c,
                                  lambda_requested=lambda_)
    method, delta = check_method(method, eps, delta)
    if nonprivate:
        return Calibration(method="nonprivate", eps=eps, eps_eff=0.0, penalty=0.0,
                           lambda_=lambda_, noise_scale=0.0, status="ok", **common)
    lA, lB, lc, ln, llam = map(math.log, (A, B, c, float(n), lambda_))
    if method == "output":
        # s = 2AB/(n lambda eps), JMLR11 Corollary 8; log s is the sum of the terms' logs
        terms = {"eps": (eps, -math.log(eps)), "lambda_": (lambda_, -llam),
                 "data_norm": (B, lB), "weights_bound": (A, lA), "n": (n, -ln)}
        scale = _noise_scale(_ratio((2.0, A, B), (n, lambda_, eps)),
                             math.log(2.0) + lA + lB - ln - llam - math.log(eps), d, terms,
                             "2*weights_bound*data_norm/(n*lambda_*eps)")
        return Calibration(method="output", eps=eps, eps_eff=eps, penalty=0.0, lambda_=lambda_,
                           noise_scale=scale, status="ok", **common)
    if method in GAUSSIAN_METHODS:
        return _calibrate_gaussian(method, eps, delta, lambda_, small_eps, amp_gamma, common)
    # penalty 2 log(1 + q), q = cAB^2/(n lambda): log1p(q) = log(1 + e^log q) when q leaves range
    q = _ratio((c, A, B, B), (n, lambda_))
    if q is not None:
        penalty = float(2.0 * np.log1p(q))
    else:
        penalty = 2.0 * log1p_exp(lc + lA + 2.0 * lB - ln - llam)
    eps_eff = eps - penalty
    if small_eps == "error":
        if eps_eff < 1e-4:
            raise ValueError(f"eps too small for lambda: eps' = eps - 2 log(1 + c/(n lambda)) = "
                             f"{eps_eff:.6g} < 1e-4; increase eps, lambda or n")
        lam, status = lambda_, "ok"
    elif eps_eff > 0:
        lam, status = lambda_, "ok"
    else:
        # lambda* = cAB^2/(n (e^{eps/4} - 1)), from 2 log(1 + cAB^2/(n lambda*)) = eps/2
        em = float(np.expm1(eps / 4.0)) if eps < 2800.0 else math.inf
        log_lam = lc + lA + 2.0 * lB - ln - log_expm1(eps, 4.0)
        ratio = _ratio((c, A, B, B), (n, em))
        if ratio is not None:
            lam = ratio
        else:
            lam = exp_or_raise(
                log_lam, {"eps": (eps, -log_expm1(eps, 4.0)), "data_norm": (B, 2.0 * lB),
                          "weights_bound": (A, lA), "curvature": (c, lc), "n": (n, -ln)},
                "the adjusted lambda_ curvature*weights_bound*data_norm**2/(n*(exp(eps/4) - 1)) "
                "that objective perturbation needs when eps <= its penalty", _ADVICE)
        eps_eff, status = eps / 2.0, "adjusted lambda"
    # s = 2AB/eps', JMLR11 Algorithm 2 (eps' = eps - penalty, or eps/2 with the adjusted lambda)
    if eps_eff > 0:
        log_eff = math.log(eps_eff)
    else:  # eps/2 underflowed (eps = 5e-324): its log is still log(eps) - log 2
        log_eff = math.log(eps) - math.log(2.0)
    terms = {"eps": (eps, -log_eff), "data_norm": (B, lB), "weights_bound": (A, lA)}
    if status == "ok":
        terms["lambda_"] = (lambda_, -log_eff)  # a larger lambda_ lowers the penalty
    log_scale = math.log(2.0) + lA + lB - log_eff
    formula = ("2*weights_bound*data_norm/eps' (eps' = eps - penalty, or eps/2 with an adjusted "
               "lambda_)")
    scale = _noise_scale(_ratio((2.0, A, B), (eps_eff,)) if eps_eff > 0 else None, log_scale, d,
                         terms, formula)
    # the noise enters every gradient as b/n, whose norm is below room * scale / n: the solver
    # squares gradients, so it must stay below the gradient limit
    room = 4.0 * (d + 12.0 * math.sqrt(d) + 80.0)
    terms["n"] = (n, -ln)
    exp_or_raise(log_scale, terms, f"the noise scale {formula}, whose noise term b/n (norm up to "
                 f"{room:.4g}*scale/n for d={d}) enters the gradients that the solver squares,",
                 _ADVICE, log_limit=math.log(GRADIENT_LIMIT) + ln - math.log(room))
    return Calibration(method="objective", eps=eps, eps_eff=float(eps_eff), penalty=float(penalty),
                       lambda_=float(lam), noise_scale=scale, status=status, **common)




def _calibrate_gaussian(method, eps, delta, lambda_, small_eps, amp_gamma, common) -> Calibration:
    """The Gaussian methods' calibration (module docstring: Gaussian objective perturbation, AMP)."""
    from .mechanisms import gaussian_sigma_analytic, objective_gaussian_sigma

    n, A, B, c = common["n"], common["weights_bound"], common["data_norm"], common["curvature"]
    eps1, delta1 = eps, delta
    if method == "amp":
        eps1, delta1 = eps * (1.0 - AMP_SHARE), delta * (1.0 - AMP_SHARE - AMP_FAILURE_SHARE)
    q = _ratio((c, A, B, B), (n, lambda_))
    if q is None:
        raise ValueError("the Gaussian methods need c*weights_bound*data_norm**2/(n*lambda_) "
                         "to be a normal double; rescale the data or choose lambda_ nearer 1/n")
    jacobian = math.log1p(q)
    eps_eff, lam, status = eps1 - jacobian, lambda_, "ok"
    if small_eps == "error" and eps_eff < 1e-4:
        raise ValueError(f"eps too small for lambda: eps' = eps - log(1 + c/(n lambda)) = "
                         f"{eps_eff:.6g} < 1e-4; increase eps, lambda or n")
    if eps_eff <= 0:
        # lambda* with log(1 + cAB^2/(n lambda*)) = eps1/2
        lam = _ratio((c, A, B, B), (n, math.expm1(eps1 / 2.0)))
        if lam is None:
            raise ValueError("the adjusted lambda_ c*A*B**2/(n*(exp(eps/2) - 1)) is not a normal "
                             "double; increase eps or rescale the data")
        jacobian, eps_eff, status = eps1 / 2.0, eps1 / 2.0, "adjusted lambda"
    sigma = A * B * objective_gaussian_sigma(eps_eff, delta1)
    gamma, out = 0.0, 0.0
    if method == "amp":
        gamma = AMP_GAMMA * A * B if amp_gamma is None else check_real(
            "amp_gamma", amp_gamma, low=0.0, low_open=True)
        out = gaussian_sigma_analytic(2.0 * gamma / lam, eps - eps1, delta * AMP_SHARE)
    return Calibration(method=method, eps=eps, eps_eff=float(eps_eff), penalty=float(jacobian),
                       lambda_=float(lam), noise_scale=float(sigma), status=status,
                       delta=delta, amp_gamma=float(gamma), output_scale=float(out), **common)


#: Böhning's bound on the multinomial Hessian: diag(p) - pp' <= (I - 11'/K)/2, eigenvalues <= 1/2.
MULTINOMIAL_CURVATURE = 0.5


def calibrate_multinomial(n: int, d: int, classes: int, *, eps: float, lambda_: float,
                          method: str = "objective", data_norm: float = 1.0,
                          weights_bound: float = 1.0, small_eps: str = "adjust") -> Calibration:
    r"""The privacy calibration of multinomial (softmax) logistic regression over ``K`` classes.

    The model has a coefficient matrix :math:`W \in \mathbb R^{d\times K}` and minimises
    :math:`J(W) = \frac1n\sum_i a_i\ell_i(W) + \frac\lambda2\|W\|_F^2 (+ \frac1n\langle
    B, W\rangle)` with :math:`\ell_i(W) = \log\sum_k e^{x_i^\top w_k} - x_i^\top w_{y_i}`.
    Rows :math:`\|x\| \le B`, weights :math:`a \le A`; neighbours replace one row (``n``
    public). The binary theorems carry over with two constants:

    (M1) **Lipschitz.** :math:`\nabla_W\ell = x(p - e_y)^\top`, of Frobenius norm
    :math:`\|x\|\,\|p - e_y\| \le \sqrt2 B`, since :math:`\|p - e_y\|^2 = (1 - p_y)^2 +
    \sum_{k\ne y}p_k^2 \le 2(1 - p_y)^2 \le 2`. Replacing a row moves the gradient of
    :math:`nJ` by at most :math:`L = 2\sqrt2 AB`.

    (M2) **Curvature.** :math:`\nabla^2_W\ell = (\mathrm{diag}(p) - pp^\top)\otimes xx^\top`,
    whose eigenvalues are at most :math:`\frac12 B^2` (Böhning, *Multinomial logistic regression
    algorithm*, Ann. Inst. Statist. Math. 44, 1992: :math:`\mathrm{diag}(p) - pp^\top \preceq
    \frac12(I - \frac1K\mathbf 1\mathbf 1^\top)`), with rank at most ``K - 1``.

    **Objective perturbation** (JMLR11 Theorem 9's change of variables): with
    :math:`M \succeq n\lambda I` the shared rows' part of the Jacobian,
    :math:`\det(M + \Delta)/\det(M + \Delta') \le \det(I + M^{-1}\Delta) \le (1 + q)^{K-1}`,
    :math:`q = AB^2/(2n\lambda)` by (M2), so the Jacobian costs
    :math:`(K - 1)\log(1 + q)` (eq. M3); the noise density
    :math:`\propto \exp(-\varepsilon'\|B\|_F/L)` costs at most :math:`\varepsilon'` by (M1) and the
    triangle inequality. Hence :math:`\varepsilon' = \varepsilon - (K-1)\log(1 + q)` and
    :math:`\|B\|_F \sim \mathrm{Gamma}(dK, 2\sqrt2AB/\varepsilon')`, uniformly directed in
    :math:`\mathbb R^{d\times K}`. When :math:`\varepsilon' \le 0` λ is raised to
    :math:`AB^2/(2n(e^{\varepsilon/(2(K-1))} - 1))` and :math:`\varepsilon' = \varepsilon/2`
    (status ``"adjusted lambda"``). With ``K = 2`` this is the binary model written with two
    weight vectors (its curvature 1/2 is the logistic 1/4 of :math:`w_1 - w_2` counted twice).

    **Output perturbation**: the minimiser of a λ-strongly convex objective whose per-row
    gradients are bounded by :math:`\sqrt2 AB` has sensitivity :math:`2\sqrt2AB/(n\lambda)`
    (JMLR11 Corollary 8's argument), so :math:`\|B\|_F \sim \mathrm{Gamma}(dK,
    2\sqrt2AB/(n\lambda\varepsilon))`.

    Examples
    --------
    >>> cal = calibrate_multinomial(150, 5, 3, eps=1.0, lambda_=0.01)
    >>> round(cal.penalty, 6), cal.d, cal.classes
    (0.575364, 15, 3)
    """
    n = check_int("n", n, low=1)
    d = check_int("d", d, low=1)
    K = check_int("classes", classes, low=2)
    if method not in ("objective", "output"):
        raise ValueError(f"method must be 'objective' or 'output' for the multinomial model, got "
                         f"{method!r}")
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    nonprivate = eps == 0 or math.isinf(eps)
    lambda_ = check_real("lambda_", lambda_, low=0.0, low_open=not nonprivate)
    B = check_real("data_norm", data_norm, low=0.0, low_open=True)
    A = check_real("weights_bound", weights_bound, low=0.0, low_open=True)
    common: dict[str, Any] = dict(n=n, d=d * K, data_norm=B, weights_bound=A,
                                  curvature=MULTINOMIAL_CURVATURE, lambda_requested=lambda_,
                                  classes=K)
    if nonprivate:
        return Calibration(method="nonprivate", eps=eps, eps_eff=0.0, penalty=0.0,
                           lambda_=lambda_, noise_scale=0.0, status="ok", **common)
    L = 2.0 * math.sqrt(2.0) * A * B
    if method == "output":
        return Calibration(method="output", eps=eps, eps_eff=eps, penalty=0.0, lambda_=lambda_,
                           noise_scale=L / (n * lambda_ * eps), status="ok", **common)
    q = MULTINOMIAL_CURVATURE * A * B * B / (n * lambda_)
    penalty = (K - 1) * math.log1p(q)
    eps_eff, lam, status = eps - penalty, lambda_, "ok"
    if small_eps == "error" and eps_eff < 1e-4:
        raise ValueError(f"eps too small for lambda: eps' = eps - (K-1) log(1 + AB^2/(2 n "
                         f"lambda)) = {eps_eff:.6g} < 1e-4; increase eps, lambda or n")
    if eps_eff <= 0:
        lam = MULTINOMIAL_CURVATURE * A * B * B / (n * math.expm1(eps / (2.0 * (K - 1))))
        penalty, eps_eff, status = eps / 2.0, eps / 2.0, "adjusted lambda"
    return Calibration(method="objective", eps=eps, eps_eff=float(eps_eff),
                       penalty=float(penalty), lambda_=float(lam), noise_scale=L / eps_eff,
                       status=status, **common)


def default_lambda_multinomial(n: int, classes: int, eps: float, *, data_norm: float = 1.0,
                               weights_bound: float = 1.0) -> float:
    r"""The multinomial model's default λ, the rule of :func:`default_lambda` for its Jacobian
    term: the smallest λ whose penalty :math:`(K - 1)\log(1 + AB^2/(2n\lambda))` is ``eps/10``,
    i.e. :math:`\lambda = AB^2/(2n(e^{\varepsilon/(10(K-1))} - 1))`; 0.001 when non-private.

    Examples
    --------
    >>> lam = default_lambda_multinomial(150, 3, 1.0)
    >>> round(calibrate_multinomial(150, 4, 3, eps=1.0, lambda_=lam).penalty, 12)
    0.1
    """
    if eps == 0 or math.isinf(eps):
        return 0.001
    K = check_int("classes", classes, low=2)
    return float(MULTINOMIAL_CURVATURE * weights_bound * data_norm ** 2
                 / (n * math.expm1(eps / (10.0 * (K - 1)))))


def norm_bound(data_norm: float, intercept: bool) -> float:
    """``B``, the bound on every design row's norm: ``sqrt(data_norm**2 + 1)`` with an intercept
    column (computed without overflow), ``data_norm`` without.

    Examples
    --------
    >>> norm_bound(1.0, True) == math.sqrt(2.0), norm_bound(3.0, False)
    (True, 3.0)
    """
    return math.hypot(data_norm, 1.0) if intercept else float(data_norm)


def label_sensitivity(n: int, k: int, weights_bound: float = 1.0) -> float:
    """L2 sensitivity of the WALR dot product to one label: ``weights_bound * sqrt(k) / n``."""
    return weights_bound * math.sqrt(k) / n


def default_lambda(n: int, eps: float, *, data_norm: float = 1.0, weights_bound: float = 1.0,
                   curvature: float = 0.25) -> float:
    r"""The default regulariser of every front end: the smallest λ whose objective-perturbation
    penalty :math:`2\log(1 + cAB^2/(n\lambda))` is ``eps/10`` (:mod:`privatelr.calibration`);
    0.001 when ``eps`` is 0 or inf (R's non-private default).

    ``data_norm`` is ``B``, the bound on the design rows (intercept included: see
    :func:`norm_bound`), ``weights_bound`` the public bound ``A`` on the observation weights and
    ``curvature`` the loss's bound ``c`` on its second derivative (1/4 logistic). With the defaults it is PrivateLR's ``1/(4n(exp(eps/20) - 1))``.
    Computed as written when every intermediate is a normal double, else from its logarithm; a
    λ beyond the double range raises ``ValueError`` naming the argument.

    Examples
    --------
    >>> round(default_lambda(150, 1.0), 10)
    0.0325069442
    >>> round(default_lambda(150, 1.0, data_norm=norm_bound(1.0, True)), 10)   # B^2 = 2
    0.0650138883
    """
    if eps == 0 or math.isinf(eps):
        return 0.001
    B, A, c = float(data_norm), float(weights_bound), float(curvature)
    em = math.expm1(eps / 20.0) if eps < 14000.0 else math.inf
    num = _ratio((c, A, B, B), (1.0,))
    if TINY <= em < math.inf and num is not None:
        lam = num / (n * em)
        if TINY <= lam < math.inf:
            return float(lam)
    log_em = log_expm1(eps, 20.0)
    terms = {"eps": (eps, -log_em), "data_norm": (B, 2.0 * math.log(B)),
             "weights_bound": (A, math.log(A)), "n": (n, -math.log(n)),
             "curvature": (c, math.log(c))}
    return exp_or_raise(
        sum(v[1] for v in terms.values()), terms,
        "the default lambda_ curvature*weights_bound*B**2/(n*(exp(eps/20) - 1)) (B: the design "
        "rows' norm bound; the smallest lambda_ whose privacy penalty is eps/10)",
        {"eps": ("increase eps, or pass lambda_ explicitly",
                 "pass lambda_ explicitly (e.g. lambda_=0.001), or eps=inf for a non-private fit"),
         "data_norm": ("rescale the covariates by a public constant so that data_norm is nearer "
                       "1, or pass lambda_ explicitly", "rescale the covariates by a public "
                       "constant so that data_norm is nearer 1, or pass lambda_ explicitly"),
         "weights_bound": ("pass lambda_ explicitly", "pass lambda_ explicitly"),
         "n": ("", "pass lambda_ explicitly"), "curvature": ("", "pass lambda_ explicitly")})


def default_lambda_inference_output(n: int, eps: float, *, data_norm: float = 1.0) -> float:
    r"""The default λ of output perturbation when inference is asked for:
    :math:`\lambda = B / (4\varepsilon\sqrt n)`.

    Output perturbation adds :math:`\eta` with :math:`\|\eta\| \sim \mathrm{Gamma}(d,
    2B/(n\lambda\varepsilon))` (Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Theorem 6, their
    sensitivity :math:`2B/(n\lambda)` of the penalised minimiser), and the bias-corrected
    estimate carries it as :math:`(I + \lambda H^{-1})\eta` (:mod:`privatelr.inference`). Under
    the penalty rule of :func:`default_lambda` (:math:`\lambda \propto 1/n`) that noise does not
    shrink with ``n``, so intervals never narrow; with :math:`\lambda \propto n^{-1/2}` the
    noise falls as :math:`n^{-1/2}`, the rate of the sampling error, while the ridge shift
    :math:`\lambda H^{-1}w` that the correction removes falls at the same rate (so its
    first-order correction improves with ``n``). The constant 1/4 is the one measured best on
    the health-records design (``benchmarks/bench_coverage.py``): intervals at 0.95 coverage
    whose width falls with ``n``. Without inference the front ends keep R's rule.

    Examples
    --------
    >>> round(default_lambda_inference_output(20_000, 0.75, data_norm=2.0), 6)
    0.004714
    """
    if eps == 0 or math.isinf(eps):
        return 0.001
    return float(data_norm / (4.0 * eps * math.sqrt(n)))


def warn_costly(cal: Calibration, stacklevel: int = 3) -> None:
    """Warn when objective perturbation's penalty takes more than half of ε, or λ had to be
    raised (status ``"adjusted lambda"``, which PrivateLR warns about too). Both are read from
    the public calibration alone; the message suggests the default λ (penalty ε/10,
    :func:`default_lambda`).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_costly(calibrate(150, 5, eps=1.0, lambda_=0.01, data_norm=2 ** 0.5))
    >>> print(w[0].message)
    the privacy penalty of lambda_=0.01 is 0.5753641 of eps=1 (58%), leaving 0.4246359 for the noise; lambda_=0.06501389 (the default rule) costs eps/10
    """
    import warnings

    if cal.method != "objective":
        return
    try:
        suggest = default_lambda(cal.n, cal.eps, data_norm=cal.data_norm,
                                 weights_bound=cal.weights_bound, curvature=cal.curvature)
    except ValueError:                      # no double is the default λ: nothing to suggest
        return
    if cal.status.startswith("adjusted lambda"):
        warnings.warn(f"lambda_={cal.lambda_requested:.7g} is too small for eps={cal.eps:.7g}: "
                      f"its privacy penalty would use all of eps, so objective perturbation "
                      f"raised lambda_ to {cal.lambda_:.7g} and spends eps/2 on the noise "
                      f"(status 'adjusted lambda', as PrivateLR); lambda_={suggest:.7g} (the "
                      "default rule) costs eps/10", UserWarning, stacklevel=stacklevel)
    elif cal.penalty > cal.eps / 2:
        warnings.warn(f"the privacy penalty of lambda_={cal.lambda_:.7g} is {cal.penalty:.7g} of "
                      f"eps={cal.eps:.7g} ({100 * cal.penalty / cal.eps:.0f}%), leaving "
                      f"{cal.eps_eff:.7g} for the noise; lambda_={suggest:.7g} (the default "
                      "rule) costs eps/10", UserWarning, stacklevel=stacklevel)
