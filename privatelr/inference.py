r"""Inference under differential privacy: standard errors, intervals and tests that cover.

What is estimated
-----------------
The target is the coefficient vector :math:`w_0` of the data-generating logistic model — what
R's ``glm(family = binomial)`` and statsmodels' ``Logit`` estimate — not the penalised minimiser
that the private fit releases. With :math:`L(w) = \frac1n\sum_i a_i\,\ell(y_i x_i^\top w)` (the
logistic loss, weights :math:`a_i`; unweighted :math:`a_i = 1`) the maximum-likelihood estimate
:math:`\hat w` solves :math:`\nabla L(\hat w) = 0` and, as :math:`n \to \infty`,
:math:`\hat w - w_0 \approx N(0, (nH)^{-1})` with :math:`H = \nabla^2 L`, the averaged Fisher
information (observed = expected for the canonical link; prior weights as in ``glm``).

The released information (one more private release)
----------------------------------------------------
The only data-dependent quantity the intervals need beyond the coefficients is
:math:`H(\tilde w) = \frac1n\sum_i a_i\,\ell''(y_i x_i^\top\tilde w)\,x_i x_i^\top` at the released
coefficients :math:`\tilde w` (public once released, so the second release is adaptive sequential
composition: the total cost is :math:`\varepsilon_{fit} + \varepsilon_H`, and the accountant is
charged both). **Neighbours** are data sets that differ in one row (replace one; the relation of
Chaudhuri, Monteleoni & Sarwate, JMLR 2011, used by every calibration of this package). Replacing
row ``i`` changes one term :math:`T = a_i\ell''x_ix_i^\top/n`, a positive semi-definite matrix with
:math:`\|T\|_F = a_i\ell''\|x_i\|^2/n \le cAB^2/n` (:math:`|\ell''| \le c = 1/4`, weights
:math:`\le A`, rows :math:`\le B`). For two such matrices
:math:`\|T - T'\|_F^2 = \|T\|_F^2 + \|T'\|_F^2 - 2\operatorname{tr}(TT') \le 2(cAB^2/n)^2`
because :math:`\operatorname{tr}(TT') \ge 0`, so the L2 sensitivity of the symmetric matrix,
in the Frobenius norm, is

.. math:: \Delta_H = \sqrt2\,cAB^2/n .

The map :math:`v(S) = (S_{ii};\ \sqrt2 S_{ij},\ i<j)` is an isometry from symmetric matrices with
the Frobenius norm onto :math:`\mathbb{R}^m`, :math:`m = d(d+1)/2`. Releasing :math:`v(H) + z`
with density :math:`\propto \exp(-\varepsilon_H\|z\|/\Delta_H)` is :math:`\varepsilon_H`-DP (the
K-norm mechanism for the L2 ball, Hardt & Talwar, STOC 2010: the density ratio at any output is
at most :math:`\exp(\varepsilon_H\|v(H)-v(H')\|/\Delta_H)` by the triangle inequality), i.e.
:math:`\|z\| \sim \mathrm{Gamma}(m, \Delta_H/\varepsilon_H)` uniformly directed — the same law as
the objective-perturbation noise, drawn by :func:`privatelr.mechanisms.sphere_gamma_noise`. The
released :math:`\hat H` is symmetric and may be indefinite; it is used as released (no floor):
when it is not positive definite, or its noise is too large (below), inference refuses.

The estimate, its law, and the interval
---------------------------------------
*Objective perturbation* releases :math:`\tilde w` with
:math:`\nabla L(\tilde w) + \lambda\tilde w + b/n = 0` (λ the regulariser used, adjusted or not).
A first-order expansion of :math:`\nabla L` about :math:`\hat w` gives
:math:`\hat w \approx \tilde w + H^{-1}(\lambda\tilde w + b/n)`, so the bias-corrected estimate

.. math:: \bar w = \tilde w + \lambda\hat H^{-1}\tilde w \approx \hat w - H^{-1}b/n

removes the ridge bias (one Newton step of the unpenalised likelihood, from released quantities
only) and leaves the privacy noise :math:`-H^{-1}b/n`, independent of the sampling error.
*Output perturbation* releases :math:`\tilde w = w_\lambda + \eta` (:math:`w_\lambda` the exact
penalised minimiser); :math:`\hat w \approx (I + \lambda H^{-1})w_\lambda`, so
:math:`\bar w = (I + \lambda\hat H^{-1})\tilde w \approx \hat w + (I + \lambda H^{-1})\eta`.
This is the route of Wang, Kifer & Lee (JPC 9(1), 2019: sampling variance from a privately
released Hessian plus the known variance of the mechanism's noise) with two refinements: the
ridge bias is corrected rather than ignored, and the interval uses the exact law of the noise
rather than a normal approximation (the noise is not Gaussian: its marginals have heavier
tails, and a normal interval under-covers when the noise dominates).

Both noises are spherical (:math:`\|b\| \sim \mathrm{Gamma}(d, s)`, ``s`` the calibration's
``noise_scale``), so for any direction ``c`` the noise part of :math:`c^\top\bar w` has the law of
:math:`\tau_c B_1` with :math:`\tau_c = s\|H^{-1}c\|/n` (objective) or
:math:`s\|(I + \lambda H^{-1})c\|` (output), where :math:`B_1` is the first coordinate of a vector
of density :math:`\propto e^{-\|x\|}` in :math:`\mathbb{R}^d`:

.. math:: f_{B_1}(x) = \frac{\Gamma(d/2)\,2^{(d-2)/2}}{\pi\,\Gamma(d)}\,|x|^{d/2}K_{d/2}(|x|),
   \qquad \operatorname{Var} B_1 = d + 1

(integrate the density over the other :math:`d - 1` coordinates in polar form; :math:`K` is the
modified Bessel function; ``d = 1`` gives the Laplace law). Hence
:math:`c^\top(\bar w - w_0) \approx \sigma_c Z + \tau_c B_1`, :math:`\sigma_c^2 =
c^\top(n\hat H)^{-1}c`, and the first-order effect of the noise in :math:`\hat H` on the bias
correction, :math:`-\lambda\hat H^{-1}E\hat H^{-1}\tilde w`, is added to :math:`\sigma_c^2`
(its covariance is :math:`\lambda^2\hat H^{-1}\,\tfrac{(m+1)s_H^2}{2}(\|v\|^2 I + vv^\top)\,
\hat H^{-1}`, :math:`v = \hat H^{-1}\tilde w`, for the spherical :math:`E` above). The
:math:`1-\alpha` interval is :math:`c^\top\bar w \pm \sigma_c\,Q_{1-\alpha/2}(\tau_c/\sigma_c)`
with :math:`Q` the quantile of :math:`Z + rB_1` (computed by quadrature, to about 1e-6), the
standard error is :math:`\sqrt{\sigma_c^2 + (d+1)\tau_c^2}` and the p-value is
:math:`2(1 - F(|c^\top\bar w|/\sigma_c))` from the same law.

**The inverse of a noisy matrix.** :math:`\hat H^{-1}` overestimates :math:`H^{-1}` on average
(second order in the noise: :math:`E[(H+E)^{-1}] \approx A + A\,E[EAE]\,A`, :math:`A = H^{-1}`,
:math:`E[EAE] = \tfrac{(m+1)s_H^2}{2}(A + \operatorname{tr}(A)I)` for the release's spherical
noise), which made the intervals over-cover (0.964 instead of 0.95 at n = 1e4, 10 covariates,
ε = 1). Every :math:`\hat H^{-1}` above is therefore the method-of-moments estimate ``A`` that
solves :math:`\hat H^{-1} = A + A\,E[EAE]\,A` (a scalar equation in the eigenbasis of :math:`\hat H^{-1}`; plugging
:math:`\hat H^{-1}` itself into the bias over-corrects: 0.940), which brought that cell to 0.950.
At ``eps = 0`` with ``lambda_ = 0``
(:math:`\tau = 0`, :math:`\hat H = H` exactly) these are glm's Wald table: estimates, standard
errors, z and p equal statsmodels' ``Logit`` to rounding.

**How λ enters.** The bias correction removes the ridge bias to first order; what remains is
second order in :math:`\lambda\|H^{-1}\|`, so intervals cover when λ is small next to the smallest
eigenvalue of H — the default λ (penalty ε/10) is, once :math:`n\varepsilon` is large enough
for the validity rule below. A much larger λ (an adjusted λ at very small ε) widens nothing
and can bias the interval: prefer a larger ``eps`` or ``n``.

When the intervals are not claimed (fail closed)
------------------------------------------------
The bias correction is a first-order step: when it is larger than the estimate itself
(:math:`\|\lambda\hat H^{-1}\tilde w\| > \|\tilde w\|`: λ large next to the information, or
separated classes with no maximum-likelihood estimate) inference refuses.
The approximation needs :math:`\hat H` accurate. From the released :math:`\hat H` and the public
noise scale :math:`s_H = \Delta_H/\varepsilon_H`, the relative standard deviation that the
release's noise gives the standard error of coefficient ``j`` is, to first order,
:math:`\kappa_j = \sqrt{m+1}\,s_H\,\|\hat H^{-1}e_j\|^2 / (2\,e_j^\top\hat H^{-1}e_j)`.
:func:`vcov`, :func:`confint` and the coefficient table refuse with ``ValueError`` when
:math:`\hat H` is not positive definite or :math:`\max_j\kappa_j >` :data:`KAPPA_MAX` — the
:math:`n\varepsilon` (or inference share) is too small — naming what to increase. The threshold
comes from a pilot simulation of coverage against κ (18,000 coefficient intervals at n = 1e3–1e4:
0.944–0.953 for κ up to 0.3, then 0.97–0.99, intervals too wide because the information is too
noisy); ``benchmarks/bench_coverage.py`` checks the result, and its table in RESULTS.md shows
the cells where the method claims coverage (all within [0.93, 0.97]) and those it refuses.

What is not covered: a model that is wrong (the intervals are for the logistic model's
coefficients), a design whose rows were clipped (the model is then the one for the clipped
rows), random projections (the coefficients are those of the projected design), the Huber loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._validation import check_real

__all__ = ["InferenceRelease", "vcov", "confint", "tidy", "coef_table", "DEFAULT_SHARE",
           "KAPPA_MAX", "mixture_cdf", "mixture_quantile"]

#: The share of ε spent on the information matrix when ``inference=True``. A trade-off measured
#: by simulation (n = 1e4, ε = 1, 300 replications): with 3 covariates the 95% intervals are
#: 0.206 / 0.212 / 0.222 wide at shares 0.1 / 0.25 / 0.4 (a smaller share leaves more ε for the
#: coefficients), but with 10 covariates a share of 0.1 leaves the information too noisy to claim
#: coverage (κ above :data:`KAPPA_MAX` in every replication) while 0.25 covers (widths 0.50, and
#: 0.53 at 0.4). A quarter keeps inference available on wider designs at a small cost in width.
DEFAULT_SHARE = 0.25
#: The largest relative noise κ of a standard error for which intervals are claimed.
KAPPA_MAX = 0.25

_NOT_ASKED = ("this private model was fitted without inference, and its standard errors need a "
              "private release of the information matrix at fit time: refit with "
              "inference=True (or a share of eps, e.g. inference=0.25)")


@dataclass(frozen=True, eq=False)
class InferenceRelease:
    """What a fit releases for inference: the (noisy) averaged information matrix.

    Attributes
    ----------
    information : (d, d) ndarray
        :math:`\\hat H`, the released :math:`\\frac1n\\sum a_i\\ell''x_ix_i^\\top` at the released
        coefficients (exact in a non-private fit), read-only.
    eps : float
        The ε spent on it (0 in a non-private fit).
    noise_scale : float
        :math:`s_H = \\Delta_H/\\varepsilon_H` of its noise (0 in a non-private fit).
    """

    information: np.ndarray
    eps: float
    noise_scale: float

    def __post_init__(self):
        arr = np.array(self.information, dtype=np.float64)
        arr.setflags(write=False)
        object.__setattr__(self, "information", arr)

    def to_dict(self) -> dict:
        return {"information": self.information.tolist(), "eps": self.eps,
                "noise_scale": self.noise_scale}

    @classmethod
    def from_dict(cls, body: dict, d: int) -> "InferenceRelease":
        """Rebuild from :meth:`to_dict` (``ValueError`` on a malformed body)."""
        if not isinstance(body, dict) or set(body) != {"information", "eps", "noise_scale"}:
            raise ValueError("inference: expected keys information, eps, noise_scale")
        info = np.array(body["information"], dtype=np.float64)
        if info.shape != (d, d) or not np.isfinite(info).all() or not np.array_equal(info, info.T):
            raise ValueError(f"inference: information must be a finite symmetric {d}x{d} matrix")
        eps = check_real("inference.eps", body["eps"], low=0.0)
        scale = check_real("inference.noise_scale", body["noise_scale"], low=0.0)
        if (eps == 0) != (scale == 0):
            raise ValueError("inference: eps and noise_scale must both be 0 or both positive")
        return cls(information=info, eps=eps, noise_scale=scale)


def check_inference(inference, eps: float) -> float | None:
    """The share of ``eps`` for inference: None (not asked), or a number in (0, 1).

    ``True`` means :data:`DEFAULT_SHARE`. In a non-private fit nothing is spent and any request
    gives the exact information (the share is returned as 0).
    """
    if inference is None or inference is False:
        return None
    if inference is True:
        share = DEFAULT_SHARE
    else:
        share = check_real("inference", inference, low=0.0, high=1.0, low_open=True,
                           high_open=True)
    private = eps > 0 and not math.isinf(eps)
    return share if private else 0.0


def split_budget(eps: float, share: float | None) -> tuple[float, float | None]:
    """``(eps for the coefficients, eps for the information or None)``: the two releases
    compose to ``eps`` (0 for the information of a non-private fit: it is exact)."""
    if share is None:
        return eps, None
    if share == 0:
        return eps, 0.0
    fit = eps * (1.0 - share)
    return fit, eps - fit


def information_sensitivity(n: int, curvature: float, weights_bound: float,
                            norm_bound: float) -> float:
    """:math:`\\Delta_H = \\sqrt2\\,cAB^2/n`, the Frobenius-norm sensitivity of the averaged
    information (module docstring).

    Examples
    --------
    >>> round(information_sensitivity(100, 0.25, 1.0, math.sqrt(2.0)), 12)
    0.007071067812
    """
    return math.sqrt(2.0) * curvature * weights_bound * norm_bound * norm_bound / n


def symmetric_noise(d: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """A symmetric ``d × d`` matrix ``E`` with :math:`\\|E\\|_F \\sim \\mathrm{Gamma}(d(d+1)/2,
    scale)`, uniformly directed in the Frobenius geometry (the isometry of the module
    docstring)."""
    from .mechanisms import sphere_gamma_noise

    iu = np.triu_indices(d)
    z = sphere_gamma_noise(iu[0].size, scale, rng)
    off = iu[0] != iu[1]
    z[off] /= math.sqrt(2.0)
    E = np.zeros((d, d))
    E[iu] = z
    return E + np.triu(E, 1).T


def release_information(rows, coef: np.ndarray, cal, *, eps: float,
                        rng: np.random.Generator) -> InferenceRelease:
    """Release :math:`\\hat H` at ``coef`` over ``rows`` (already inside the bound ``B``):
    exact when ``eps`` is 0, else with the ``eps``-DP noise of the module docstring."""
    from .losses import LogisticLoss

    H = rows.objective(LogisticLoss(), 0.0, labels=False).information(np.asarray(coef, float))
    H = 0.5 * (H + H.T)
    if eps == 0:
        return InferenceRelease(information=H, eps=0.0, noise_scale=0.0)
    scale = information_sensitivity(cal.n, cal.curvature, cal.weights_bound,
                                    cal.data_norm) / eps
    return InferenceRelease(information=H + symmetric_noise(cal.d, scale, rng), eps=float(eps),
                            noise_scale=float(scale))


# ---------------------------------------------------------------------------------------------
# the law of Z + r B_1
# ---------------------------------------------------------------------------------------------

_TABLES: dict = {}
_STEP = 0.005
_GH = None


def _b1_density(x: np.ndarray, d: int) -> np.ndarray:
    """:math:`f_{B_1}` (module docstring), by the exponentially scaled Bessel function."""
    from scipy import special

    nu = d / 2.0
    const = math.exp(math.lgamma(nu) - math.lgamma(d) + (d - 2) / 2.0 * math.log(2.0)) / math.pi
    ax = np.abs(np.asarray(x, float))
    out = np.empty_like(ax)
    zero = ax < 1e-300
    out[zero] = math.exp(math.lgamma(nu) + (nu - 1.0) * math.log(2.0))   # lim x^nu K_nu(x)
    a = ax[~zero]
    out[~zero] = np.exp(nu * np.log(a) - a) * special.kve(nu, a)
    return const * out


def _table(d: int):
    """The CDF of :math:`B_1` on a grid of ``[0, L]`` and a symmetric quadrature rule for it."""
    if d not in _TABLES:
        L = d + 12.0 * math.sqrt(d) + 40.0
        x = np.arange(0.0, L + _STEP, _STEP)
        f = _b1_density(x, d)
        cdf = 0.5 + np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * _STEP)])
        nodes = np.concatenate([-x[:0:-1], x])[::4]
        weights = np.concatenate([f[:0:-1], f])[::4]
        _TABLES[d] = (x, np.minimum(cdf, 1.0), nodes, weights / weights.sum())
    return _TABLES[d]


def mixture_cdf(t: float, r: float, d: int) -> float:
    """:math:`P(Z + rB_1 \\le t)`, ``Z`` standard normal, :math:`B_1` the marginal of the
    ``d``-dimensional noise law (module docstring); ``r = 0`` is the normal CDF.

    Examples
    --------
    >>> round(mixture_cdf(1.959964, 0.0, 3), 6)
    0.975
    >>> round(mixture_cdf(0.0, 2.0, 5), 12)
    0.5
    """
    from scipy import special

    global _GH
    if r == 0:
        return float(special.ndtr(t))
    x, cdf, nodes, weights = _table(int(d))
    if r <= 1.0:    # smooth in B_1: integrate the normal CDF against B_1's law
        return float(weights @ special.ndtr(t - r * nodes))
    if _GH is None:  # smooth in Z: integrate B_1's CDF against the normal law
        z, w = np.polynomial.hermite_e.hermegauss(80)
        _GH = (z, w / w.sum())
    a = (t - _GH[0]) / r
    F = np.interp(np.abs(a), x, cdf)
    return float(_GH[1] @ np.where(a >= 0, F, 1.0 - F))


def mixture_quantile(p: float, r: float, d: int) -> float:
    """The ``p``-quantile (``p`` in [0.5, 1)) of :math:`Z + rB_1` (see :func:`mixture_cdf`).

    Examples
    --------
    >>> round(mixture_quantile(0.975, 0.0, 4), 6)
    1.959964
    >>> round(mixture_quantile(0.975, 1.0, 1), 3)   # d = 1: normal plus Laplace
    3.495
    """
    from scipy import optimize, special

    if r == 0:
        return float(special.ndtri(p))
    hi = float(special.ndtri(p)) + r * (d + 12.0 * math.sqrt(d) + 40.0)
    return float(optimize.brentq(lambda t: mixture_cdf(t, r, d) - p, 0.0, hi, xtol=1e-12))


# ---------------------------------------------------------------------------------------------
# the computation
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Inference:
    """The bias-corrected estimate and the law of its error, from released quantities only.

    Built by :func:`for_model`; ``sigma2`` is the Gaussian part's covariance (sampling and the
    first-order effect of the information's noise), ``noise_map`` the matrix ``M`` with noise
    part :math:`M^\\top\\beta` for :math:`\\beta` of density :math:`\\propto e^{-\\|\\beta\\|}`.
    """

    names: list
    estimate: np.ndarray
    sigma2: np.ndarray
    noise_map: np.ndarray
    d: int
    kappa: float
    private: bool = field(default=False)

    @property
    def vcov(self) -> np.ndarray:
        M = self.noise_map
        return self.sigma2 + (self.d + 1) * (M.T @ M)

    def law(self, c: np.ndarray) -> tuple[float, float]:
        """``(sigma_c, tau_c)`` of the direction ``c``."""
        s2 = float(c @ self.sigma2 @ c)
        return math.sqrt(max(s2, 0.0)), float(np.linalg.norm(self.noise_map @ c))

    def half_width(self, c: np.ndarray, level: float) -> float:
        sigma, tau = self.law(c)
        return sigma * mixture_quantile(0.5 + level / 2.0, tau / sigma, self.d)

    def p_value(self, c: np.ndarray, value: float) -> float:
        sigma, tau = self.law(c)     # the law is symmetric: the upper tail is F(-|t|)
        return min(1.0, 2.0 * mixture_cdf(-abs(value) / sigma, tau / sigma, self.d))


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
    return Inference(names=list(model.columns), estimate=coef + model.lambda_ * (Hi @ coef),
                     sigma2=sigma2, noise_map=np.zeros((model.k, model.k)), d=model.k,
                     kappa=0.0, private=sigma > 0)


def _inverse_unbiased(Hi_hat: np.ndarray, s2: float) -> np.ndarray:
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


def _parts(model):
    """(names, coef, calibration, inference release) of a DPLR or ERMResult (duck-typed: this
    module sits below :mod:`privatelr.results`, whose summaries use it)."""
    if hasattr(model, "calibration") and hasattr(model, "inference"):
        spec = getattr(model, "spec", None)
        names = [f"x{j}" for j in range(model.d)] if spec is None else list(spec.columns)
        return names, model.coef, model.calibration, model.inference
    raise TypeError(f"model must be a dplr model, an erm.fit result or a WALR fit, got "
                    f"{model.__class__.__name__}")


def for_model(model) -> Inference:
    """The :class:`Inference` of a fitted model; ``ValueError`` when it has no inference release
    or the release is too noisy to claim coverage (module docstring)."""
    if hasattr(model, "sigma") and hasattr(model, "columns") and hasattr(model, "inference"):
        return _walr(model)     # a WALRResult
    names, coef, cal, rel = _parts(model)
    if rel is None:
        if cal.method == "nonprivate":
            raise ValueError("this model was fitted without its information matrix; refit "
                             "with inference=True (nothing is spent at eps=0)")
        raise ValueError(_NOT_ASKED)
    if getattr(model, "loss", "logistic") != "logistic":
        raise ValueError("inference is for the logistic loss (glm's model); this fit used "
                         f"{model.loss!r}")
    H = rel.information
    n, d, lam = cal.n, cal.d, cal.lambda_
    try:
        chol = np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        chol = None
    if chol is None:
        raise ValueError(_too_noisy("the released information matrix is not positive definite",
                                    rel))
    Hi = np.linalg.inv(H)
    Hi = 0.5 * (Hi + Hi.T)
    m = d * (d + 1) // 2
    kappa = 0.0
    if rel.noise_scale > 0:
        kappa = float(np.max(math.sqrt(m + 1) * rel.noise_scale * np.einsum("ij,ij->j", Hi, Hi)
                             / (2.0 * np.diag(Hi))))
        if kappa > KAPPA_MAX:
            raise ValueError(_too_noisy(
                f"the noise of the released information matrix would make the standard errors "
                f"uncertain by up to {100 * kappa:.0f}% (the limit for claiming coverage is "
                f"{100 * KAPPA_MAX:.0f}%)", rel))
        Hi = _inverse_unbiased(Hi, (m + 1) * rel.noise_scale ** 2)
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
    if cal.method == "objective":
        M = s * Hi / n
    elif cal.method == "output":
        M = s * (np.eye(d) + lam * Hi)
    else:
        M = np.zeros((d, d))
    return Inference(names=names, estimate=estimate, sigma2=sigma2, noise_map=M, d=d,
                     kappa=kappa, private=cal.method != "nonprivate")


def _too_noisy(why: str, rel) -> str:
    return (f"intervals would not be reliable: {why}. n*eps is too small for private inference "
            f"on this design (eps spent on the information: {rel.eps:g}); use more rows, a "
            "larger eps, a larger inference share (inference=0.4), or fewer columns")


def _level(level) -> float:
    return check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)


def vcov(model):
    """The covariance matrix of the bias-corrected coefficient estimates (R's ``vcov``).

    It adds the sampling covariance :math:`(n\\hat H)^{-1}` and the known covariance of the
    privacy noise (module docstring); at ``eps=0, lambda_=0`` it is glm's. Needs a model fitted
    with ``inference=True`` (any fit at ``eps=0`` computes it for free).

    Examples
    --------
    >>> from privatelr import dplr, vcov
    >>> from privatelr.datasets import load_mtcars
    >>> m = dplr("am ~ mpg", load_mtcars(), eps=0, lambda_=0)
    >>> vcov(m).round(4)
                 (Intercept)     mpg
    (Intercept)       5.5293 -0.2650
    mpg              -0.2650  0.0132
    """
    import pandas as pd

    inf = for_model(model)
    return pd.DataFrame(inf.vcov, index=inf.names, columns=inf.names)


def _percent(p: float) -> str:
    return f"{100 * p:.3g} %"


def confint(model, parm=None, level: float = 0.95):
    """Confidence intervals for the coefficients of the logistic model (R's ``confint``).

    Columns are R's (``"2.5 %"``, ``"97.5 %"`` at ``level=0.95``); rows the coefficients, or
    those named in ``parm``. Private models: the exact law of sampling error plus privacy noise
    (module docstring), centred at the bias-corrected estimate.

    Examples
    --------
    >>> from privatelr import dplr, confint
    >>> from privatelr.datasets import load_mtcars
    >>> confint(dplr("am ~ mpg", load_mtcars(), eps=0, lambda_=0)).round(3)
                  2.5 %  97.5 %
    (Intercept) -11.212  -1.995
    mpg           0.082   0.532
    """
    import pandas as pd

    level = _level(level)
    inf = for_model(model)
    idx = _select(inf.names, parm)
    lo, hi = [], []
    for j in idx:
        c = np.zeros(inf.d)
        c[j] = 1.0
        h = inf.half_width(c, level)
        lo.append(inf.estimate[j] - h)
        hi.append(inf.estimate[j] + h)
    a = (1.0 - level) / 2.0
    return pd.DataFrame({_percent(a): lo, _percent(1.0 - a): hi},
                        index=[inf.names[j] for j in idx])


def _select(names: list, parm) -> list:
    if parm is None:
        return list(range(len(names)))
    items = [parm] if isinstance(parm, (str, int, np.integer)) else list(parm)
    out = []
    for p in items:
        if isinstance(p, str):
            if p not in names:
                raise ValueError(f"parm: {p!r} is not a coefficient; choose from {names}")
            out.append(names.index(p))
        elif isinstance(p, (int, np.integer)) and not isinstance(p, bool) and \
                -len(names) <= p < len(names):
            out.append(int(p) % len(names))
        else:
            raise ValueError(f"parm: {p!r} is neither a coefficient name nor a position")
    return out


def coef_table(model, *, level: float | None = None, exponentiate: bool = False):
    """glm's coefficient table: ``Estimate``, ``Std. Error``, ``z value``, ``Pr(>|z|)``.

    ``level`` adds the interval's columns; ``exponentiate=True`` reports odds ratios
    (``exp`` of the estimate and of the interval's ends; the standard error, z and p stay on
    the log-odds scale, as in R's ``exp(cbind(coef, confint))``).

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_mtcars
    >>> coef_table(dplr("am ~ mpg", load_mtcars(), eps=0, lambda_=0)).round(4)
                 Estimate  Std. Error  z value  Pr(>|z|)
    (Intercept)   -6.6035      2.3514  -2.8083    0.0050
    mpg            0.3070      0.1148   2.6735    0.0075
    """
    import pandas as pd

    inf = for_model(model)
    se = np.sqrt(np.diag(inf.vcov))
    rows = {"Estimate": inf.estimate, "Std. Error": se, "z value": inf.estimate / se}
    p = []
    for j in range(inf.d):
        c = np.zeros(inf.d)
        c[j] = 1.0
        p.append(inf.p_value(c, inf.estimate[j]))
    rows["Pr(>|z|)"] = np.array(p)
    table = pd.DataFrame(rows, index=inf.names)
    if level is not None:
        ci = confint(model, level=level)
        table = pd.concat([table, ci], axis=1)
    if exponentiate:
        table = table.rename(columns={"Estimate": "Odds ratio"})
        table["Odds ratio"] = np.exp(table["Odds ratio"])
        for col in table.columns[4:]:
            table[col] = np.exp(table[col])
    return table


def tidy(model, *, conf_int: bool = True, level: float = 0.95, exponentiate: bool = False):
    """One row per coefficient, broom's columns: ``term``, ``estimate``, ``std_error``,
    ``statistic``, ``p_value`` and (``conf_int``) ``conf_low``, ``conf_high``.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_mtcars
    >>> list(tidy(dplr("am ~ mpg", load_mtcars(), eps=0, lambda_=0)).columns)
    ['term', 'estimate', 'std_error', 'statistic', 'p_value', 'conf_low', 'conf_high']
    """
    table = coef_table(model, level=level if conf_int else None, exponentiate=exponentiate)
    cols = ["estimate", "std_error", "statistic", "p_value"] + \
        (["conf_low", "conf_high"] if conf_int else [])
    out = table.set_axis(cols, axis=1)
    out.insert(0, "term", list(out.index))
    return out.reset_index(drop=True)


def se_linear(model, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x'w̄, sqrt(x' V x))`` for every row of the design ``X`` (predict's ``se_fit``)."""
    inf = for_model(model)
    fit = X @ inf.estimate
    se = np.sqrt(np.einsum("ij,jk,ik->i", X, inf.vcov, X))
    return fit, se
