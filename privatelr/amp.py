r"""Approximate minima perturbation (``method="amp"``): reaching the certificate within a public
budget, and a release that never depends on whether it was reached.

AMP (Iyengar, Near, Song, Thakkar, Thakurta & Wang, *Towards practical differentially private
convex optimization*, IEEE S&P 2019, Algorithm 1 and Theorem 1) minimises the Gaussian-perturbed
objective :math:`J_b(w) = J(w) + \frac1n b^\top w` only until its gradient norm is at most γ,
then releases :math:`\tilde w + N(0, \sigma_2^2 I)`. Theorem 1 (restated for replace-one
neighbours in :mod:`privatelr.calibration`, eqs. (5)–(6)) is a statement about an iterate that
*meets* the certificate :math:`\|\nabla J_b(\tilde w)\| \le \gamma`; call that ideal mechanism
:math:`\mathcal A`: it is :math:`(\varepsilon, \delta_1 + \delta_2)`-DP. Whether a real solver
meets the certificate depends on the data and on ``b``, so "refuse when it is missed" (what
this package did before) releases a data-dependent event that no theorem covers.

**The release here.** Always release, from the same public procedure, whatever happens:

1. the solver (``solver=``, ``gtol=``, ``maxiter=``) from 0;
2. if the certificate is missed, at most :data:`POLISH_ITERATIONS` Newton iterations from there;
3. if it is still missed, Nesterov's accelerated gradient method from the better (by objective
   value) of 0 and that iterate, stopping at the first iterate that meets the certificate, for
   at most ``K`` iterations, ``K`` (:func:`budget`) a function of public numbers only;

and release the last iterate (the one of smallest gradient norm if none met it) plus the output
noise. The status never says which step ended it; the solver's report (iterations, final
gradient norm, whether the certificate was met) goes to the diagnostics, which are not private.

**The budget** (exact arithmetic). :math:`J_b` is α-strongly convex and β-smooth with
:math:`\alpha = \lambda` and :math:`\beta = \lambda + cAB^2` (the loss's curvature ``c``, weights
``≤ A``, rows ``≤ B``); :math:`\kappa = \beta/\alpha`. Accelerated gradient descent with step
:math:`1/\beta` and momentum :math:`q = (\sqrt\kappa - 1)/(\sqrt\kappa + 1)` has (Bubeck,
*Convex Optimization: Algorithms and Complexity*, 2015, Theorem 3.18), for its gradient steps
:math:`y_s`, :math:`J_b(y_s) - J_b^* \le \frac{\alpha + \beta}{2}\|x_1 - w^*\|^2
e^{-(s-1)/\sqrt\kappa}`. The certificate is tested at the points :math:`x_s = (1+q)y_s -
qy_{s-1}` where the method evaluates the gradient anyway, and :math:`\|\nabla J_b(x_s)\| \le
\beta\|x_s - w^*\| \le 3\beta\max(\|y_s - w^*\|, \|y_{s-1} - w^*\|)`, with :math:`\|y - w^*\|^2
\le 2(J_b(y) - J_b^*)/\alpha`. The start :math:`x_1` has :math:`J_b(x_1) \le J_b(0)`, so
:math:`\|x_1 - w^*\|^2 \le 2(J_b(0) - J_b^*)/\alpha \le \|\nabla J_b(0)\|^2/\alpha^2` and
:math:`\|\nabla J_b(0)\| \le AB + \|b\|/n =: G` (:math:`|\ell'| \le 1`). Together

.. math::
    \|\nabla J_b(x_s)\|^2 \le 9\kappa^2(1 + \kappa)\,G^2\,e^{-(s-2)/\sqrt\kappa},

so the certificate is met by :math:`s = K = 2 + \lceil\sqrt\kappa\,
\log(9\kappa^2(1+\kappa)G^2/\gamma^2)\rceil` whenever :math:`\|b\| \le t`, with ``t`` in ``G``.
``b`` is :math:`N(0, \sigma^2 I_d)`, drawn independently of the data, and Laurent & Massart
(Ann. Statist. 28, 2000, Lemma 1) give :math:`P(\|b\|^2 \ge \sigma^2(d + 2\sqrt{dx} + 2x)) \le
e^{-x}`: with :math:`x = \log(1/\delta_f)`, :math:`t = \sigma\sqrt{d + 2\sqrt{dx} + 2x}`, **the
event that the certificate is missed has probability at most** :math:`\delta_f` on every data
set.

**The guarantee.** Couple the release :math:`\mathcal M(D)` with :math:`\mathcal A(D)` (same
``b``, same output noise): they coincide unless the certificate is missed, so they are within
:math:`\delta_f` in total variation for every ``D``. For any set ``S`` of outputs,
:math:`P[\mathcal M(D) \in S] \le P[\mathcal A(D) \in S] + \delta_f \le e^\varepsilon
P[\mathcal A(D') \in S] + \delta_1 + \delta_2 + \delta_f \le e^\varepsilon P[\mathcal M(D') \in
S] + \delta_1 + \delta_2 + (1 + e^\varepsilon)\delta_f`. The calibration charges
:math:`(1 + e^\varepsilon)\delta_f =` :data:`~privatelr.calibration.AMP_FAILURE_SHARE`
:math:`\times\,\delta` (taken from :math:`\delta_1`), so the release is
:math:`(\varepsilon, \delta)`-DP. The accountant records AMP by its :math:`(\varepsilon,
\delta)` (basic composition): the Rényi curve of :math:`\mathcal A` does not cover the
:math:`\delta_f` part.

**Floating point.** The argument is in exact arithmetic, as every analysis of the solvers here
is. In floating point a certificate can also be missed because the gradient cannot be computed
below its rounding (far below the default γ = 1e-8·AB); the release is then still made, and the
diagnostics say so.

Examples
--------
>>> from privatelr.calibration import calibrate, default_lambda
>>> cal = calibrate(1000, 4, eps=1.0, lambda_=default_lambda(1000, 1.0), method="amp",
...                 delta=1e-6)
>>> budget(cal)                       # public: n, d, lambda, A, B, c, sigma, gamma, eps, delta
372
>>> f"{failure_probability(cal):.3g}"
'2.69e-10'
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .calibration import AMP_FAILURE_SHARE, Calibration

__all__ = ["POLISH_ITERATIONS", "budget", "failure_probability", "noise_bound", "certify"]

#: Newton iterations (step 2) from the solver's iterate when it misses the certificate.
POLISH_ITERATIONS = 20


def failure_probability(cal: Calibration) -> float:
    r""":math:`\delta_f = s\,\delta/(1 + e^\varepsilon)` (``s`` =
    :data:`~privatelr.calibration.AMP_FAILURE_SHARE`): the probability, on any data set, that
    the certificate is missed within :func:`budget` (module docstring)."""
    return math.exp(_log_failure(cal))


def _log_failure(cal: Calibration) -> float:
    # log(s delta) - log(1 + e^eps), without overflow for any eps
    log1p_exp = cal.eps + math.log1p(math.exp(-cal.eps))
    return math.log(AMP_FAILURE_SHARE) + math.log(cal.delta) - log1p_exp


def noise_bound(cal: Calibration) -> float:
    r"""``t``: :math:`P(\|b\| > t) \le \delta_f` for the objective's noise ``b`` (Laurent &
    Massart's bound on a :math:`\chi^2_d`)."""
    x = -_log_failure(cal)
    d = cal.d
    return cal.noise_scale * math.sqrt(d + 2.0 * math.sqrt(d * x) + 2.0 * x)


def _kappa(cal: Calibration) -> tuple[float, float]:
    alpha = cal.lambda_
    beta = cal.lambda_ + cal.curvature * cal.weights_bound * cal.data_norm ** 2
    return beta / alpha, beta


def budget(cal: Calibration) -> int:
    r"""``K``, the accelerated-gradient iterations after which the certificate holds whenever
    :math:`\|b\| \le t` (module docstring): a function of public numbers only."""
    kappa, _ = _kappa(cal)
    G = cal.weights_bound * cal.data_norm + noise_bound(cal) / cal.n
    log_term = (math.log(9.0) + 2.0 * math.log(kappa) + math.log1p(kappa) + 2.0 * math.log(G)
                - 2.0 * math.log(cal.amp_gamma))
    return 2 + math.ceil(math.sqrt(kappa) * max(0.0, log_term))


@dataclasses.dataclass(frozen=True)
class Certified:
    """The iterate to release and what it took (``certified``: the certificate was met)."""

    x: np.ndarray
    grad_norm: float
    certified: bool
    iterations: int
    step: str


def _gradient(objective, x):
    f, g = objective.evaluate(x, False)[:2]
    return float(f), g, float(np.linalg.norm(g))


def certify(objective, x, cal: Calibration, *, polish=None) -> Certified:
    """Steps 2 and 3 of the module docstring from the solver's iterate ``x``: the iterate to
    release, whether it meets the certificate, and the iterations spent here.

    ``polish(objective, x, gtol)`` runs at most :data:`POLISH_ITERATIONS` Newton iterations
    (the engine's :func:`privatelr.solver.minimize`); its report's ``x`` and ``iterations``
    are read."""
    gamma = cal.amp_gamma
    f, g, gnorm = _gradient(objective, x)
    if gnorm <= gamma:
        return Certified(x, gnorm, True, 0, "solver")
    spent = 0
    if polish is not None and np.isfinite(gnorm):
        report = polish(objective, x, 0.5 * gamma / gnorm)
        spent += int(report.iterations)
        if np.isfinite(report.x).all():
            f2, g2, gnorm2 = _gradient(objective, report.x)
            if gnorm2 <= gamma:
                return Certified(report.x, gnorm2, True, spent, "polish")
            if np.isfinite(f2) and not f2 > f:
                x, f, gnorm = report.x, f2, gnorm2
    # step 3: accelerated gradient descent from the better of 0 and x, for at most K iterations
    zero = np.zeros_like(np.asarray(x, dtype=float))
    f0 = _gradient(objective, zero)[0]
    start = x if np.isfinite(f) and f <= f0 else zero
    kappa, beta = _kappa(cal)
    q = (math.sqrt(kappa) - 1.0) / (math.sqrt(kappa) + 1.0)
    xs, y_prev = np.array(start, dtype=float), np.array(start, dtype=float)
    best = (math.inf, xs)
    for s in range(budget(cal)):
        _, g, gnorm = _gradient(objective, xs)
        spent += 1
        if gnorm < best[0]:
            best = (gnorm, xs)
        if gnorm <= gamma:
            return Certified(xs, gnorm, True, spent, "accelerated gradient")
        y = xs - g / beta
        xs, y_prev = (1.0 + q) * y - q * y_prev, y
    return Certified(best[1], best[0], False, spent, "accelerated gradient")
