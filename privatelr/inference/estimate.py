r"""The bias-corrected estimate of a fitted model and the law of its error, from released
quantities only (derivations in :mod:`privatelr.inference`).

:func:`for_model` builds an :class:`Inference` on the fitted (mapped) scale, decides whether
intervals are given (claimed) or refused, and transforms it exactly to the
data's own units through the public map (``scale="data"``, the default). :func:`point_estimate`
is the one estimate a model reports and predicts with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtri

from .laws import mixture_cdf, mixture_quantile

__all__ = ["Inference", "VarianceNoise", "OutputVarianceNoise", "law_of", "for_model",
           "point_estimate", "unit_matrix", "scale_names", "inverse_unbiased", "output_parts",
           "IndefiniteCorrection", "KAPPA_MAX", "WALR_MAX", "OUTPUT_MARGIN_MIN", "SCALES",
           "NOT_ASKED", "refusal"]

#: Intervals are refused when the release's noise makes the variance of some coefficient's
#: estimate uncertain by more than this relative standard deviation ``r`` (twice the relative
#: noise κ of its standard error): the second-order widening ``1 + (q² + 1)r²/8`` would then
#: exceed 1.6 and the expansion behind it stops being accurate (package docstring).
KAPPA_MAX = 0.5
#: Output perturbation: intervals are given while the released information's smallest
#: eigenvalue is at least this multiple of the typical spectral norm :math:`\sqrt{2d\,hvar}`
#: of its noise (so :math:`\|\hat H^{-1}E\| \lesssim 1/2` and the expansion of the correction's
#: inverse holds), and refused below it (``benchmarks/bench_coverage.py``, RESULTS.md).
OUTPUT_MARGIN_MIN = 2.0
#: WALR: intervals are given while the release's privacy noise moves no row's linear predictor
#: by more than this (standard deviation, logit scale), and refused above it (the coverage
#: study in RESULTS.md, ``benchmarks/bench_coverage.py``).
WALR_MAX = 0.5


class IndefiniteCorrection(np.linalg.LinAlgError):
    r"""Output perturbation: the resummed correction's matrix :math:`\hat H + \tfrac\lambda2
    \hat K` came out indefinite (:func:`output_parts`)."""

    def __init__(self):
        super().__init__("the released information corrected by its released derivative "
                         "(H + lam/2 K, output perturbation) is not positive definite")


#: The scales a table can be reported on.
SCALES = ("data", "mapped")

NOT_ASKED = ("this private model was fitted without inference, and its standard errors need a "
             "private release of the information matrix at fit time: refit with "
             "inference=True (or a share of eps, e.g. inference=0.4); "
             "privatelr.inference_plan(...) says beforehand what a budget buys")


@dataclass(frozen=True)
class Inference:
    """The bias-corrected estimate and the law of its error.

    Attributes
    ----------
    names : list of str
        Coefficient names on this scale.
    estimate : ndarray
    sigma2 : ndarray
        Covariance of the Gaussian part of the error (sampling, the first-order effect of the
        information's noise, and a Gaussian privacy noise).
    noise_map : ndarray
        ``N`` with the non-Gaussian privacy noise of :math:`c^\\top\\bar w` equal to
        :math:`\\|Nc\\|B_1` (zero for the Gaussian methods).
    d : int
        The dimension of the spherical noise (the law of :math:`B_1`).
    kappa : float
        The index of the validity rule: for the ``dplr`` methods the largest relative noise of
        a coefficient's standard error from the information's noise (half the relative
        standard deviation ``r`` of its variance); for WALR the largest privacy noise of a
        row's linear predictor.
    private : bool
    quality : {"exact", "claimed"}
        ``exact``: a non-private fit; ``claimed``: the intervals cover at their level (to the
        accuracy of the coverage study).
    scale : {"data", "mapped"}
    noise : VarianceNoise or None
        How the released information's noise enters the variance (None when the information
        is exact): the widening of :meth:`half_width`.
    back : ndarray or None
        ``A`` with the fitted-scale direction of a direction ``c`` on this scale equal to
        :math:`A^\\top c` (None: this is the fitted scale).
    margin : float
        Output perturbation: the released information's smallest eigenvalue over the typical
        spectral norm of its noise (:data:`OUTPUT_MARGIN_MIN`); infinite for the other methods.
    """

    names: list
    estimate: np.ndarray
    sigma2: np.ndarray
    noise_map: np.ndarray
    d: int
    kappa: float
    private: bool = False
    quality: str = "exact"
    scale: str = "data"
    noise: "VarianceNoise | OutputVarianceNoise | None" = None
    back: np.ndarray | None = None
    margin: float = math.inf

    @property
    def vcov(self) -> np.ndarray:
        N = self.noise_map
        return self.sigma2 + (self.d + 1) * (N.T @ N)

    def law(self, c: np.ndarray) -> tuple[float, float]:
        """``(sigma_c, tau_c)`` of the direction ``c``."""
        s2 = float(c @ self.sigma2 @ c)
        return math.sqrt(max(s2, 0.0)), float(np.linalg.norm(self.noise_map @ c))

    def variance_noise(self, c: np.ndarray) -> float:
        """``r``: the relative standard deviation of the variance of :math:`c^\\top\\bar w`
        that the released information's noise causes (0 when it is exact)."""
        if self.noise is None:
            return 0.0
        u = c if self.back is None else self.back.T @ c
        return self.noise.relative_sd(u)

    def widening(self, c: np.ndarray, level: float) -> float:
        """The factor :math:`1 + (q^2 + 1)r^2/8` of a two-sided interval at ``level``
        (``q`` its normal quantile): the second-order correction of the coverage of an interval
        whose variance is estimated with relative noise ``r`` (package docstring)."""
        r = self.variance_noise(c)
        return 1.0 if r == 0.0 else _widening(float(ndtri(0.5 + level / 2.0)), r)

    def _first_order_half_width(self, c: np.ndarray, level: float) -> float:
        sigma, tau = self.law(c)
        if sigma == 0.0:
            return tau * mixture_quantile(0.5 + level / 2.0, 1.0, self.d) if tau else 0.0
        return sigma * mixture_quantile(0.5 + level / 2.0, tau / sigma, self.d)

    def half_width(self, c: np.ndarray, level: float) -> float:
        return self._first_order_half_width(c, level) * self.widening(c, level)

    def _tail(self, c: np.ndarray, x: float) -> float:
        """``P(|error| >= x)`` under the first-order law of ``c``."""
        sigma, tau = self.law(c)
        if sigma == 0.0:
            return 1.0 if x == 0 else min(1.0, 2.0 * mixture_cdf(-x / tau, 0.0, self.d))
        return min(1.0, 2.0 * mixture_cdf(-x / sigma, tau / sigma, self.d))

    def p_value(self, c: np.ndarray, value: float) -> float:
        """Two-sided p-value of ``c'w = 0`` at the estimate ``value``: one minus the level of
        the widest (widened) interval that excludes 0, so the two follow from each other. The
        law is symmetric; without the information's noise this is the law's tail at ``value``,
        with it the ``p`` solving :math:`p = T(|value|/f(p))` (``T`` the first-order tail,
        ``f`` the widening at level 1 - p), found in log p by Brent's method."""
        x = abs(float(value))
        p0 = self._tail(c, x)
        r = self.variance_noise(c)
        if r == 0.0 or x == 0.0 or p0 >= 1.0:
            return p0

        def gap(lp: float) -> float:         # >= 0 at log p0, <= 0 at 0
            f = _widening(-float(ndtri(0.5 * math.exp(lp))), r)
            return math.log(max(self._tail(c, x / f), 1e-300)) - lp
        lo = math.log(max(p0, 1e-300))
        if gap(0.0) >= 0.0:
            return 1.0
        return math.exp(brentq(gap, lo, 0.0, xtol=1e-12, rtol=1e-12))

    def transformed(self, M: np.ndarray, names: list, scale: str) -> "Inference":
        """The same inference for the coefficients ``M @ w`` (an exact linear map): estimate
        ``M w``, covariance ``M Σ M'``, noise map ``N M'``."""
        back = M if self.back is None else M @ self.back
        return replace(self, names=list(names), estimate=M @ self.estimate,
                       sigma2=M @ self.sigma2 @ M.T, noise_map=self.noise_map @ M.T,
                       scale=scale, back=back)


def _widening(q: float, r: float) -> float:
    """``1 + (q^2 + 1) r^2 / 8`` (:meth:`Inference.widening`)."""
    return 1.0 + (q * q + 1.0) * r * r / 8.0


@dataclass(frozen=True)
class VarianceNoise:
    r"""How the noise ``E`` of the released information :math:`\hat H = H + E` moves the
    stated variance :math:`V(u) = u^\top\Sigma u` of a fitted-scale direction ``u``, where
    :math:`\Sigma = \hat H^{-1}/n + \hat H^{-1}P_1\hat H^{-1} + M P_2 M^\top`,
    :math:`M = I + \lambda\hat H^{-1}` (sampling, noise through the objective, noise on the
    output). To first order :math:`\delta V = -\langle E, G\rangle_F` with, for
    :math:`a = \hat H^{-1}u`, :math:`v = M^\top u = u + \lambda a`,
    :math:`b_1 = \hat H^{-1}P_1a` and :math:`b_2 = \hat H^{-1}P_2v`,
    :math:`G = aa^\top/n + (ab_1^\top + b_1a^\top) + \lambda(ab_2^\top + b_2a^\top)`; the
    release's noise has per-coordinate variance ``hvar`` :math:`= (m+1)s_H^2` in the
    Frobenius isometry and is spherically symmetric, so
    :math:`\operatorname{sd}(\delta V) = \sqrt{hvar}\,\|G\|_F`. Output perturbation with
    its released derivative has its own map (:class:`OutputVarianceNoise`)."""

    Hi: np.ndarray
    n: int
    lam: float
    P1: np.ndarray
    P2: np.ndarray
    hvar: float

    def relative_sd(self, u: np.ndarray) -> float:
        Hi, n, lam = self.Hi, self.n, self.lam
        a = Hi @ u
        v = u + lam * a
        c = self.P2 @ v
        b1 = Hi @ (self.P1 @ a)
        b2 = Hi @ c
        V = float(a @ u) / n + float(a @ self.P1 @ a) + float(v @ c)
        if V <= 0.0:
            return math.inf
        G = np.outer(a, a) / n + np.outer(a, b1) + np.outer(b1, a) \
            + lam * (np.outer(a, b2) + np.outer(b2, a))
        var = self.hvar * float(np.linalg.norm(G)) ** 2
        return math.sqrt(var) / V


@dataclass(frozen=True)
class OutputVarianceNoise:
    r""":class:`VarianceNoise` for output perturbation's resummed correction
    (:func:`output_parts`): the stated variance of a fitted-scale direction ``u`` is
    :math:`V = a^\top u/n + p_2\|C^\top u\|^2`, :math:`a = \hat H^{-1}u`,
    :math:`p_2 = (d+1)s^2` and :math:`C = I + \lambda A^{-1}X`,
    :math:`X = (I - \tfrac\lambda2\hat K\hat H^{-1})(I - \hat K)`,
    :math:`A = \hat H + \tfrac\lambda2\hat K`. With :math:`w = C^\top u`,
    :math:`p = A^{-1}u`, :math:`q = A^{-1}Xw`, :math:`g = \hat H^{-1}\hat Kp`,
    :math:`h = \hat H^{-1}(I - \hat K)w` and :math:`p' = p - \tfrac\lambda2 g`, differentiating
    ``C`` (:math:`dA^{-1} = -A^{-1}dA\,A^{-1}`, likewise :math:`\hat H^{-1}`) gives
    :math:`\delta V = -\langle E, G\rangle_F - \langle N, G_K\rangle_F` with

    .. math:: G = aa^\top/n + p_2\big(\lambda(pq^\top + qp^\top)
              - \tfrac{\lambda^2}{2}(gh^\top + hg^\top)\big),\quad
              G_K = p_2\big(\tfrac{\lambda^2}{2}(pq^\top + qp^\top + ph^\top + hp^\top)
              + \lambda(p'w^\top + wp'^\top)\big)

    (with :math:`\hat K = 0` and to first order in λ, ``G`` is :class:`VarianceNoise`'s), and
    :math:`\operatorname{sd}(\delta V) = \sqrt{hvar\,\|G\|_F^2 + kvar\,\|G_K\|_F^2}`, each
    release's noise spherical with per-coordinate variance ``hvar`` :math:`= (m+1)s_H^2`
    (``kvar`` :math:`= (m+1)s_K^2`) and independent of the other.
    ``tests/unit/test_inference_widening.py`` checks ``G`` and ``G_K`` against central
    differences of ``V``."""

    Hi: np.ndarray
    Ai: np.ndarray
    K: np.ndarray
    C: np.ndarray
    n: int
    lam: float
    p2: float
    hvar: float
    kvar: float

    def variance(self, u: np.ndarray) -> float:
        """The stated variance ``V`` of ``u`` (sampling and output noise)."""
        w = self.C.T @ u
        return float(self.Hi @ u @ u) / self.n + self.p2 * float(w @ w)

    def gradients(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(G, G_K)`` of the class docstring."""
        Hi, Ai, K, lam, p2 = self.Hi, self.Ai, self.K, self.lam, self.p2
        a = Hi @ u
        w = self.C.T @ u
        p = Ai @ u
        q = (self.C @ w - w) / lam              # = A^-1 X w
        g = Hi @ (K @ p)
        h = Hi @ (w - K @ w)
        G = np.outer(a, a) / self.n + p2 * (lam * (np.outer(p, q) + np.outer(q, p))
                                             - 0.5 * lam * lam * (np.outer(g, h) + np.outer(h, g)))
        pp = p - 0.5 * lam * g
        GK = p2 * (0.5 * lam * lam * (np.outer(p, q) + np.outer(q, p) + np.outer(p, h)
                                      + np.outer(h, p))
                   + lam * (np.outer(pp, w) + np.outer(w, pp)))
        return G, GK

    def relative_sd(self, u: np.ndarray) -> float:
        V = self.variance(u)
        if V <= 0.0:
            return math.inf
        G, GK = self.gradients(u)
        var = self.hvar * float(np.linalg.norm(G)) ** 2 + self.kvar * float(np.linalg.norm(GK)) ** 2
        return math.sqrt(var) / V


def output_parts(H: np.ndarray, K: np.ndarray, lam: float, hvar: float = 0.0,
                 kvar: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""``(Hi, Ai, C)`` of output perturbation's resummed correction from the released
    :math:`\hat H` and :math:`\hat K` (package docstring, "Output perturbation's evaluation
    point"): :math:`\hat H^{-1}` and :math:`A^{-1}`, :math:`A = \hat H + \tfrac\lambda2\hat K`,
    each the method-of-moments inverse of :func:`inverse_unbiased` when its noise variance
    (``hvar``, and ``hvar + λ²kvar/4`` for ``A``) is positive, and the noise map
    :math:`C = I + \lambda A^{-1}(I - \tfrac\lambda2\hat K\hat H^{-1})(I - \hat K)`.
    ``numpy.linalg.LinAlgError`` when ``H`` or ``A`` is not positive definite."""
    d = H.shape[0]
    eye = np.eye(d)
    A = H + 0.5 * lam * K
    A = 0.5 * (A + A.T)
    np.linalg.cholesky(H)
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        raise IndefiniteCorrection() from None
    Hi = np.linalg.inv(H)
    Hi = 0.5 * (Hi + Hi.T)
    Ai = np.linalg.inv(A)
    Ai = 0.5 * (Ai + Ai.T)
    if hvar > 0:
        Hi = inverse_unbiased(Hi, hvar)
    avar = hvar + 0.25 * lam * lam * kvar
    if avar > 0:
        Ai = inverse_unbiased(Ai, avar)
    C = eye + lam * (Ai @ ((eye - 0.5 * lam * (K @ Hi)) @ (eye - K)))
    return Hi, Ai, C


# ---------------------------------------------------------------------------------------------
# the estimate on the fitted scale
# ---------------------------------------------------------------------------------------------

def inverse_unbiased(Hi_hat: np.ndarray, s2: float) -> np.ndarray:
    r"""The second-order estimate of :math:`H^{-1}` from :math:`\hat H^{-1}`, :math:`\hat H =
    H + E`: the inverse of a noisy matrix is biased upwards,
    :math:`E[\hat H^{-1}] = A + A\,E[EAE]\,A + O(E^3)` with :math:`A = H^{-1}` and, for the
    spherical noise of the release (per-coordinate variance ``s2``),
    :math:`E[EAE] = \tfrac{s2}{2}(A + \operatorname{tr}(A)I)`. The solution ``A`` of
    :math:`\hat H^{-1} = A + \tfrac{s2}{2}(A^3 + \operatorname{tr}(A)A^2)` (a method-of-moments
    estimate; plugging :math:`\hat H^{-1}` into the bias would over-correct it) is a function of
    :math:`\hat H^{-1}`, so it shares its eigenvectors: with eigenvalues :math:`\hat a_i > 0`
    and :math:`T = \operatorname{tr}A`, each :math:`a_i` is the root in :math:`(0, \hat a_i)` of
    the increasing cubic :math:`\tfrac{s2}{2}(a^3 + Ta^2) + a = \hat a_i`, which decreases in
    ``T``; the ``T`` with :math:`\sum_i a_i(T) = T` is then unique (found by Brent's method).
    It always exists, and ``A`` is positive definite."""
    vals, vecs = np.linalg.eigh(Hi_hat)
    k = 0.5 * s2

    def roots(T: float) -> np.ndarray:
        a = vals.copy()                    # Newton from the right on a convex increasing cubic
        for _ in range(100):
            f = k * (a ** 3 + T * a * a) + a - vals
            step = f / (3.0 * k * a * a + 2.0 * k * T * a + 1.0)
            a = a - step
            if np.all(np.abs(step) <= 1e-15 * vals):
                break
        return a

    # sum_i a_i(T) - T decreases strictly from sum(vals) > 0 at T = 0 to a negative value at
    # T = sum(vals): Brent's method finds its unique root to the same 1e-15 a bisection would,
    # in about ten evaluations instead of fifty
    hi = float(vals.sum())
    T = brentq(lambda t: roots(t).sum() - t, 0.0, hi, xtol=1e-15 * hi, rtol=4 * np.finfo(float).eps)
    a = roots(T)
    return (vecs * a) @ vecs.T


def _walr(model) -> Inference:
    r"""WALR (label-DP): only the dot product is noisy, :math:`\tilde v = v + Z`,
    :math:`Z \sim N(0, \sigma^2 I)`, and the trainer knows the label-free gradient
    :math:`g(\theta) = \frac1N\sum_i w_i\sigma(\theta^\top x_i)x_i` at every θ. The estimate
    is the *exact* unpenalised solution :math:`g(\bar\theta) = \tilde v` (computed by the
    trainer, :func:`privatelr.label_dp.walr_inference`; the ridge plays no part), and with
    :math:`g(\hat\theta) = v` (the maximum-likelihood estimate),
    :math:`\bar\theta - \hat\theta \approx H^{-1}Z`: Gaussian, so the covariance is
    :math:`(NH)^{-1} + \sigma^2H^{-2}` with :math:`H = H(\bar\theta)`.

    The expansion is first order in the noise; its reach into the curvature of
    :math:`g^{-1}` is measured by the largest noise ``s`` of a row's linear predictor (stored
    as ``kappa``): intervals are given for ``s <=`` :data:`WALR_MAX` and refused above it or
    when :math:`\bar\theta` does not exist. There is no band of "conservative" intervals:
    above the threshold the coverage study found them over-covering on some designs (0.99 and
    more at a rare factor level) and under-covering on others (0.79-0.92 for the intercept at
    5 % positives, n <= 5,000), so they are not usable bounds."""
    rel = model.inference
    if rel is None:
        raise ValueError("this WALR fit has no information matrix (it did not converge, or has "
                         "no minimiser); refit with lambda_ > 0 until status is 'ok'")
    H = rel.information
    sigma = 0.0 if model.sigma is None else float(model.sigma)
    private = sigma > 0
    est = getattr(rel, "estimate", None)
    spread = float(getattr(rel, "spread", 0.0))
    if est is None and hasattr(rel, "estimate"):
        raise ValueError(_walr_refusal(
            "the unpenalised estimate does not exist for this release (the noisy dot product "
            "lies outside the values the label-free gradient can take)"))
    try:
        np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        raise ValueError("the information matrix of this WALR fit is singular: some columns are "
                         "collinear; drop them") from None
    Hi = np.linalg.inv(H)
    Hi = 0.5 * (Hi + Hi.T)
    coef = np.asarray(model.coef, float)
    estimate = np.asarray(est, float) if est is not None else coef + model.lambda_ * (Hi @ coef)
    quality = "claimed" if private else "exact"
    if private:
        if not spread <= WALR_MAX:
            raise ValueError(_walr_refusal(
                f"the release's noise moves some row's linear predictor by {spread:.2g} (sd) "
                f"on the logit scale, where a first-order interval is not reliable (intervals "
                f"are given up to {WALR_MAX:g})"))
    sigma2 = Hi / model.n + sigma * sigma * (Hi @ Hi)
    return Inference(names=list(model.columns), estimate=estimate, sigma2=sigma2,
                     noise_map=np.zeros((model.k, model.k)), d=model.k, kappa=spread,
                     private=private, quality=quality)


def _walr_refusal(why: str) -> str:
    return (f"WALR intervals would not be reliable: {why}; use more rows or a larger eps "
            "(or delta) for the release")


def _parts(model):
    """(names, coef, calibration, inference release) of a DPLR or ERMResult (duck-typed: this
    module sits below :mod:`privatelr.results`, whose summaries use it)."""
    if hasattr(model, "calibration") and hasattr(model, "inference"):
        spec = getattr(model, "spec", None)
        names = [f"x{j}" for j in range(model.d)] if spec is None else list(spec.columns)
        return names, model.coef, model.calibration, model.inference
    raise TypeError(f"model must be a dplr model, an erm.fit result or a WALR fit, got "
                    f"{model.__class__.__name__}")


def _too_noisy(why: str, rel) -> str:
    return (f"intervals would not be reliable: {why}. n*eps is too small for private inference "
            f"on this design (eps spent on the information: {rel.eps:g}); use more rows, a "
            "larger eps, a larger inference share (inference=0.5), fewer columns, or public "
            "bounds that centre the columns (privatelr.public_bounds); "
            "privatelr.inference_plan(...) says beforehand what a budget buys")


def _fitted(model) -> Inference:
    """The :class:`Inference` on the fitted scale (module docstring of the package)."""
    if hasattr(model, "sigma") and hasattr(model, "columns") and hasattr(model, "inference"):
        return _walr(model)     # a WALRResult
    names, coef, cal, rel = _parts(model)
    if rel is None:
        if cal.method == "nonprivate":
            raise ValueError("this model was fitted without its information matrix; refit "
                             "with inference=True (nothing is spent at eps=0)")
        raise ValueError(NOT_ASKED)
    if getattr(model, "loss", "logistic") != "logistic":
        raise ValueError("inference is for the logistic loss (glm's model); this fit used "
                         f"{model.loss!r}")
    coef = np.asarray(coef, float)
    try:
        inf = law_of(rel.information, coef, cal, rel.noise_scale, names,
                     rel.derivative, rel.derivative_scale)
    except np.linalg.LinAlgError as exc:
        what = (str(exc) if isinstance(exc, IndefiniteCorrection) else
                "the released information matrix is not positive definite")
        raise ValueError(_too_noisy(what, rel)) from None
    why = refusal(inf)
    if why is not None:
        raise ValueError(_too_noisy(why, rel))
    if np.linalg.norm(inf.estimate - coef) > np.linalg.norm(coef):
        raise ValueError(
            "intervals would not be reliable: the correction of the ridge bias is larger than "
            "the estimate itself (lambda_ is large next to the information in the data, or the "
            "classes are separated and the maximum-likelihood estimate does not exist); use a "
            "smaller lambda_ (at eps=0, lambda_=0 fits glm's model), more rows or a larger eps")
    return inf


def refusal(inf: Inference) -> str | None:
    """Why the intervals of a private fit's :class:`Inference` (from :func:`law_of`) are
    refused, or None: the validity rules of the package docstring (output perturbation's
    :data:`OUTPUT_MARGIN_MIN`, then :data:`KAPPA_MAX`)."""
    if inf.margin < OUTPUT_MARGIN_MIN:
        return (f"the released information's smallest eigenvalue is only {inf.margin:.2g} "
                f"times the typical size of its noise, and output perturbation's correction "
                f"inverts it (intervals are given from {OUTPUT_MARGIN_MIN:g} times; objective "
                f"perturbation, the default, gives them from far smaller n*eps)")
    if inf.kappa > KAPPA_MAX:
        return (f"the noise of the released information matrix would make a coefficient's "
                f"variance uncertain by {200 * inf.kappa:.0f}% (intervals are given up to "
                f"{200 * KAPPA_MAX:.0f}%)")
    return None


def _noise_quadratic(var: float, v: np.ndarray) -> np.ndarray:
    """:math:`E[EvvE] = \\tfrac{var}{2}(\\|v\\|^2 I + vv^\\top)` for the release's spherical
    symmetric noise ``E`` with per-coordinate variance ``var`` in the Frobenius isometry
    (diagonal entries of variance ``var``, off-diagonal ones ``var/2``)."""
    return 0.5 * var * ((v @ v) * np.eye(v.size) + np.outer(v, v))


def law_of(H: np.ndarray, coef, cal, noise_scale_H: float, names: list,
           derivative: np.ndarray | None = None, derivative_scale: float = 0.0) -> Inference:
    """The :class:`Inference` on the fitted scale from a released information ``H`` (its
    noise scale ``noise_scale_H``, 0 when exact), the released coefficients and the fit's
    calibration; no validity rule applied (``kappa`` is its index). ``derivative``: output
    perturbation's released derivative of the information along :math:`\\hat H^{-1}\\tilde w`
    (noise scale ``derivative_scale``), which resums the ridge correction and enters the noise
    map (:func:`output_parts`, :mod:`privatelr.inference`). ``numpy.linalg.LinAlgError`` when
    ``H`` (or output's :math:`\\hat H + \\tfrac\\lambda2\\hat K`) is not positive definite."""
    n, d, lam = cal.n, cal.d, cal.lambda_
    m = d * (d + 1) // 2
    hvar = (m + 1) * noise_scale_H ** 2
    coef = np.asarray(coef, float)
    if derivative is not None and cal.method == "output" and lam > 0:
        return _output_law(H, coef, cal, hvar, derivative, (m + 1) * derivative_scale ** 2,
                           names)
    np.linalg.cholesky(H)
    Hi = np.linalg.inv(H)
    Hi = 0.5 * (Hi + Hi.T)
    if hvar > 0:
        Hi = inverse_unbiased(Hi, hvar)
    estimate = coef + lam * (Hi @ coef)
    sigma2 = Hi / n
    if hvar > 0 and lam > 0:
        sigma2 = sigma2 + lam * lam * (Hi @ _noise_quadratic(hvar, Hi @ coef) @ Hi)
    s = cal.noise_scale
    eye = np.eye(d)
    N = np.zeros((d, d))
    P1 = np.zeros((d, d))
    P2 = np.zeros((d, d))
    if cal.method == "objective":
        N = s * Hi / n
        P1 = (d + 1) * (s / n) ** 2 * eye
    elif cal.method == "output":           # a release without the derivative (older files)
        N = s * (eye + lam * Hi)
        P2 = (d + 1) * s * s * eye
    elif cal.method in ("gaussian", "amp"):
        # Gaussian noise b ~ N(0, s^2 I) in the objective: its part -Hi b / n is Gaussian
        G = s * Hi / n
        sigma2 = sigma2 + G @ G.T
        P1 = (s / n) ** 2 * eye
        if cal.method == "amp" and cal.output_scale > 0:
            O = cal.output_scale * (eye + lam * Hi)
            sigma2 = sigma2 + O @ O.T
            P2 = cal.output_scale ** 2 * eye
    noise = VarianceNoise(Hi=Hi, n=n, lam=lam, P1=P1, P2=P2, hvar=hvar) if hvar > 0 else None
    return _inference(names, estimate, sigma2, N, cal, noise)


def _inference(names, estimate, sigma2, N, cal, noise, margin=math.inf) -> Inference:
    """The :class:`Inference` of :func:`law_of`, its index κ half the largest relative noise
    ``r`` of a coefficient's variance."""
    d = N.shape[0]
    eye = np.eye(d)
    kappa = 0.0 if noise is None else \
        max(noise.relative_sd(eye[j]) for j in range(d)) / 2.0
    private = cal.method != "nonprivate"
    return Inference(names=list(names), estimate=estimate, sigma2=sigma2, noise_map=N, d=d,
                     kappa=kappa, private=private, quality="claimed" if private else "exact",
                     scale="mapped", noise=noise, margin=margin)


def _output_law(H, coef, cal, hvar, K, kvar, names) -> Inference:
    r"""Output perturbation with the released derivative ``K`` (package docstring, "Output
    perturbation's evaluation point"): the resummed estimate
    :math:`\bar w = \tilde w + \lambda A^{-1}\tilde w`, :math:`A = \hat H + \tfrac\lambda2\hat K`,
    its noise map :math:`sC` (:func:`output_parts`), and the first-order effect of the two
    releases' noises :math:`E, N` on the estimate,
    :math:`-\lambda A^{-1}(E + \tfrac\lambda2 N)r` with :math:`r = A^{-1}\tilde w`, added to
    the Gaussian part."""
    n, d, lam, s = cal.n, cal.d, cal.lambda_, cal.noise_scale
    Hi, Ai, C = output_parts(H, K, lam, hvar, kvar)
    r = Ai @ coef
    estimate = coef + lam * r
    sigma2 = Hi / n
    if hvar > 0:
        sigma2 = sigma2 + lam * lam * (Ai @ _noise_quadratic(hvar, r) @ Ai)
    if kvar > 0:
        sigma2 = sigma2 + 0.25 * lam ** 4 * (Ai @ _noise_quadratic(kvar, r) @ Ai)
    noise = OutputVarianceNoise(Hi=Hi, Ai=Ai, K=K, C=C, n=n, lam=lam, p2=(d + 1) * s * s,
                                hvar=hvar, kvar=kvar) if hvar > 0 else None
    # the margin of H's smallest eigenvalue over its noise's typical spectral norm (the
    # edge of the semicircle of a symmetric matrix with off-diagonal variance hvar/2)
    margin = math.inf if hvar == 0 else \
        float(np.linalg.eigvalsh(H)[0]) / math.sqrt(2.0 * d * hvar)
    # the noise of c'w is c' sC eta = (sC' c)' eta: the map acting on directions is sC'
    return _inference(names, estimate, sigma2, s * C.T, cal, noise, margin)


# ---------------------------------------------------------------------------------------------
# scales
# ---------------------------------------------------------------------------------------------

def unit_matrix(model) -> np.ndarray | None:
    """``M`` with coefficients per unit of the data's columns ``M @ w`` (``w`` on the fitted
    scale), or None when the model has no public linear map (no ``bounds=``; or a random
    projection or R's data-driven scaling, which are not inverted)."""
    spec: Any = getattr(model, "spec", None)
    pre = getattr(spec, "preprocess", None)
    if pre is None or (pre.divisors is None and not pre.shifts):
        return None
    return pre.design_matrix(len(spec.design_columns), bool(spec.intercept))


def scale_names(model, scale: str) -> list:
    """Coefficient names on ``scale``: the data's columns, or the mapped columns' R text
    (``(age - 54)/36``)."""
    spec = model.spec
    if scale == "mapped" and unit_matrix(model) is not None:
        return spec.preprocess.mapped_names(list(spec.design_columns), bool(spec.intercept))
    return list(spec.columns)


def check_scale(scale) -> str:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES} (the data's own units, or the public "
                         f"map's), got {scale!r}")
    return scale


def for_model(model, scale: str = "data") -> Inference:
    """The :class:`Inference` of a fitted model on ``scale``: ``"data"`` (per unit of the
    original columns, through the inverse of the public map) or ``"mapped"`` (the scale the
    model was fitted on). ``ValueError`` when it has no inference release or the release is too
    noisy to give intervals (package docstring)."""
    check_scale(scale)
    inf = _fitted(model)
    if getattr(model, "spec", None) is None:
        return replace(inf, scale="data")
    M = unit_matrix(model)
    if M is None:
        return replace(inf, names=list(model.spec.columns), scale=scale)
    if scale == "mapped":
        return replace(inf, names=scale_names(model, "mapped"))
    return inf.transformed(M, list(model.spec.design_columns), "data")


def point_estimate(model) -> tuple[np.ndarray, str]:
    """The one estimate a ``dplr`` model reports, on the fitted scale, and what it is:

    * a private fit with an inference release that gives intervals: the bias-corrected
      estimate :math:`\\bar w` (``"bias-corrected"``) — the centre of the intervals; the ridge
      shrinkage of the released vector is removed (a post-processing of released quantities);
    * otherwise the released vector itself (``"released"``): every fit without inference, every
      non-private fit (whose coefficients are R's penalised ``dplr`` fit; their table is glm's),
      and a private fit whose inference was refused.
    """
    coef = np.asarray(model.coef, float)
    if model.method == "nonprivate" or getattr(model, "inference", None) is None:
        return coef, "released"
    try:
        return _fitted(model).estimate, "bias-corrected"
    except ValueError:
        return coef, "released"
