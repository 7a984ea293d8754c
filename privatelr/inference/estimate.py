r"""The bias-corrected estimate of a fitted model and the law of its error, from released
quantities only (derivations in :mod:`privatelr.inference`).

:func:`for_model` builds an :class:`Inference` on the fitted (mapped) scale, decides whether
intervals are claimed, flagged as conservative or refused, and transforms it exactly to the
data's own units through the public map (``scale="data"``, the default). :func:`point_estimate`
is the one estimate a model reports and predicts with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .laws import mixture_cdf, mixture_quantile

__all__ = ["Inference", "for_model", "point_estimate", "unit_matrix", "scale_names", "inverse_unbiased",
           "KAPPA_CLAIM", "KAPPA_MAX", "SCALES", "NOT_ASKED"]

#: Up to this relative noise κ of a standard error the intervals are claimed to cover at their
#: level (the coverage study in RESULTS.md, ``benchmarks/bench_coverage.py``).
KAPPA_CLAIM = 1.0
#: Above :data:`KAPPA_CLAIM` and up to this κ intervals are given flagged "conservative" (they
#: over-cover); above it they are refused as uninformative.
KAPPA_MAX = 3.0
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
        The largest relative noise of a standard error from the information's noise.
    private : bool
    quality : {"exact", "claimed", "conservative"}
        ``exact``: a non-private fit; ``claimed``: the intervals cover at their level (to the
        accuracy of the coverage study); ``conservative``: the information release is so noisy
        that the intervals over-cover — usable bounds, flagged as such.
    scale : {"data", "mapped"}
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

    @property
    def vcov(self) -> np.ndarray:
        N = self.noise_map
        return self.sigma2 + (self.d + 1) * (N.T @ N)

    def law(self, c: np.ndarray) -> tuple[float, float]:
        """``(sigma_c, tau_c)`` of the direction ``c``."""
        s2 = float(c @ self.sigma2 @ c)
        return math.sqrt(max(s2, 0.0)), float(np.linalg.norm(self.noise_map @ c))

    def half_width(self, c: np.ndarray, level: float) -> float:
        sigma, tau = self.law(c)
        if sigma == 0.0:
            return tau * mixture_quantile(0.5 + level / 2.0, 1.0, self.d) if tau else 0.0
        return sigma * mixture_quantile(0.5 + level / 2.0, tau / sigma, self.d)

    def p_value(self, c: np.ndarray, value: float) -> float:
        """Two-sided p-value of ``c'w = 0`` at the estimate ``value`` (the law is symmetric)."""
        sigma, tau = self.law(c)
        if sigma == 0.0:
            return 1.0 if value == 0 else min(1.0, 2.0 * mixture_cdf(-abs(value) / tau, 0.0,
                                                                      self.d))
        return min(1.0, 2.0 * mixture_cdf(-abs(value) / sigma, tau / sigma, self.d))

    def transformed(self, M: np.ndarray, names: list, scale: str) -> "Inference":
        """The same inference for the coefficients ``M @ w`` (an exact linear map): estimate
        ``M w``, covariance ``M Σ M'``, noise map ``N M'``."""
        return replace(self, names=list(names), estimate=M @ self.estimate,
                       sigma2=M @ self.sigma2 @ M.T, noise_map=self.noise_map @ M.T,
                       scale=scale)


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
    from scipy.optimize import brentq

    hi = float(vals.sum())
    T = brentq(lambda t: roots(t).sum() - t, 0.0, hi, xtol=1e-15 * hi, rtol=4 * np.finfo(float).eps)
    a = roots(T)
    return (vecs * a) @ vecs.T


def _walr(model) -> Inference:
    r"""WALR (label-DP): only the dot product is noisy, :math:`\tilde v = v + Z`,
    :math:`Z \sim N(0, \sigma^2 I)`, and the trainer's information :math:`H` is exact (it needs
    no labels). The fit solves :math:`\nabla L(\tilde\theta) = Z - \lambda\tilde\theta`, so
    :math:`\bar\theta = \tilde\theta + \lambda H^{-1}\tilde\theta \approx \hat\theta +
    H^{-1}Z`: Gaussian, with covariance :math:`(NH)^{-1} + \sigma^2 H^{-2}`."""
    if model.inference is None:
        raise ValueError("this WALR fit has no information matrix (it did not converge, or has "
                         "no minimiser); refit with lambda_ > 0 until status is 'ok'")
    H = model.inference.information
    try:
        np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        raise ValueError("the information matrix of this WALR fit is singular: some columns are "
                         "collinear; drop them") from None
    Hi = np.linalg.inv(H)
    Hi = 0.5 * (Hi + Hi.T)
    coef = np.asarray(model.coef, float)
    sigma = 0.0 if model.sigma is None else float(model.sigma)
    sigma2 = Hi / model.n + sigma * sigma * (Hi @ Hi)
    private = sigma > 0
    return Inference(names=list(model.columns), estimate=coef + model.lambda_ * (Hi @ coef),
                     sigma2=sigma2, noise_map=np.zeros((model.k, model.k)), d=model.k,
                     kappa=0.0, private=private, quality="claimed" if private else "exact")


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
    H = rel.information
    n, d, lam = cal.n, cal.d, cal.lambda_
    try:
        np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        raise ValueError(_too_noisy("the released information matrix is not positive definite",
                                    rel)) from None
    Hi = np.linalg.inv(H)
    Hi = 0.5 * (Hi + Hi.T)
    m = d * (d + 1) // 2
    kappa = 0.0
    quality = "exact" if cal.method == "nonprivate" else "claimed"
    if rel.noise_scale > 0:
        kappa = float(np.max(math.sqrt(m + 1) * rel.noise_scale * np.einsum("ij,ij->j", Hi, Hi)
                             / (2.0 * np.diag(Hi))))
        if kappa > KAPPA_MAX:
            raise ValueError(_too_noisy(
                f"the noise of the released information matrix would make the standard errors "
                f"uncertain by up to {100 * kappa:.0f}% (intervals are given up to "
                f"{100 * KAPPA_MAX:.0f}%)", rel))
        if kappa > KAPPA_CLAIM:
            quality = "conservative"
        Hi = inverse_unbiased(Hi, (m + 1) * rel.noise_scale ** 2)
    coef = np.asarray(coef, float)
    correction = lam * (Hi @ coef)
    if np.linalg.norm(correction) > np.linalg.norm(coef):
        raise ValueError(
            "intervals would not be reliable: the correction of the ridge bias is larger than "
            "the estimate itself (lambda_ is large next to the information in the data, or the "
            "classes are separated and the maximum-likelihood estimate does not exist); use a "
            "smaller lambda_ (at eps=0, lambda_=0 fits glm's model), more rows or a larger eps")
    estimate = coef + correction
    sigma2 = Hi / n
    if rel.noise_scale > 0 and lam > 0:
        v = Hi @ coef
        cov_e = 0.5 * (m + 1) * rel.noise_scale ** 2 * ((v @ v) * np.eye(d) + np.outer(v, v))
        sigma2 = sigma2 + lam * lam * (Hi @ cov_e @ Hi)
    s = cal.noise_scale
    N = np.zeros((d, d))
    if cal.method == "objective":
        N = s * Hi / n
    elif cal.method == "output":
        N = s * (np.eye(d) + lam * Hi)
    elif cal.method in ("gaussian", "amp"):
        # Gaussian noise b ~ N(0, s^2 I) in the objective: its part -Hi b / n is Gaussian
        G = s * Hi / n
        sigma2 = sigma2 + G @ G.T
        if cal.method == "amp" and cal.output_scale > 0:
            O = cal.output_scale * (np.eye(d) + lam * Hi)
            sigma2 = sigma2 + O @ O.T
    return Inference(names=names, estimate=estimate, sigma2=sigma2, noise_map=N, d=d,
                     kappa=kappa, private=cal.method != "nonprivate", quality=quality,
                     scale="mapped")


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
