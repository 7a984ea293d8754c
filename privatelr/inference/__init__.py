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

**Output perturbation's evaluation point.** Its :math:`\hat H` is released at the noisy
:math:`\tilde w`, so the correction :math:`\lambda\hat H^{-1}\tilde w` meets :math:`\eta` a
second time: :math:`H(\tilde w) = H(w_\lambda) + T[\eta] + O(\eta^2)` with ``T`` the loss's third
derivative, and :math:`\lambda H(\tilde w)^{-1}w_\lambda \approx \lambda H^{-1}w_\lambda -
\lambda H^{-1}T[\eta]v`, :math:`v = H^{-1}w_\lambda`. Since ``T`` is symmetric,
:math:`T[\eta]v = K\eta` with :math:`K = T[v] = \frac1n\sum_i a_i\ell'''(x_i^\top\tilde w)
(x_i^\top v)\,x_ix_i^\top`, the derivative of the information along ``v``, so the noise is
:math:`M\eta`, :math:`M = I + \lambda H^{-1} - \lambda H^{-1}K` — a first-order term that
left out made the intervals 3–12 % narrow on the health design at every ``n`` (coverage
0.929 before this release; ``benchmarks/bench_output_point.py``). Output perturbation therefore
spends half of its inference share on :math:`\hat K`, released at ``v`` :math:`= \hat H^{-1}
\tilde w` (public once :math:`\hat H` is: adaptive composition). Replacing one row changes the
sum by two terms :math:`a_i\ell'''(\cdot)(x_i^\top v)x_ix_i^\top/n`, each of Frobenius norm at
most :math:`c_3AB^3\|v\|/n` with :math:`c_3 = \max|\ell'''| = 1/(6\sqrt3)`; their signs may
differ, so the sensitivity is :math:`\Delta_K = 2c_3AB^3\|v\|/n`, and :math:`\hat K` gets the
same K-norm noise as :math:`\hat H` at :math:`s_K = \Delta_K/\varepsilon_K`. ``K`` is computed as
a central difference of two exact information passes at :math:`\tilde w \pm hv/\|v\|`
(:math:`h = 10^{-4}/B`; each row's term is :math:`\ell'''` at an intermediate point by the mean
value theorem, so the bound holds for it too). Its noise moves the stated variance like
:math:`\hat H`'s (:class:`~privatelr.inference.estimate.OutputVarianceNoise`) and is widened
for in the same way.

The same release resums the ridge correction. With :math:`\delta = \hat w - w_\lambda`,
:math:`0 = \nabla L(w_\lambda + \delta) = -\lambda w_\lambda + \bar H\delta`, where
:math:`\bar H = \int_0^1 H(w_\lambda + t\delta)\,dt \approx H + \tfrac12 T[\delta] \approx
H + \tfrac\lambda2 K` (mean-value form, :math:`\delta \approx \lambda v`), so
:math:`\bar w = \tilde w + \lambda A^{-1}\tilde w` with :math:`A = \hat H + \tfrac\lambda2\hat K`
(second order in λ like the two-term series :math:`\lambda v - \tfrac{\lambda^2}2H^{-1}Kv`, and
ten to twenty times less biased than it where :math:`\lambda\|H^{-1}\| \approx 0.6`: 5 %
positives, n = 50,000, where the one-step correction alone left 0.9 standard errors). Its
Jacobian in :math:`\tilde w` is the noise map: :math:`dA\,A^{-1}\tilde w \approx K` to first
order and :math:`dv = H^{-1}(I - K)`, so
:math:`C = I + \lambda A^{-1}(I - \tfrac\lambda2 KH^{-1})(I - K)`
(:func:`~privatelr.inference.estimate.output_parts`; it reduces to ``M`` above at first order).
It leaves out terms in the loss's third derivative along other directions than ``v`` and its
fourth, so it is accurate while :math:`\lambda\|H^{-1}K\|` is small (1-2 % at 0.6, 20 % at 1.2;
``tests/unit/test_inference_widening.py``). The noise of :math:`c^\top\bar w` is :math:`c^\top C\eta`, so
the map acting on directions is :math:`sC^\top`. The releases' noises move the estimate by
:math:`-\lambda A^{-1}(E + \tfrac\lambda2 N)A^{-1}\tilde w`, whose covariance is added to the
Gaussian part.

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

Which estimate is reported
--------------------------
One estimate is stated once. A private fit with an inference release reports the bias-corrected
:math:`\bar w` — its ``coefficients``, ``predict`` (every ``type``, and ``se_fit``'s ``fit``),
the coefficient table, the intervals and the odds ratios all use it; the penalised vector the
mechanism released stays available as ``model.coef`` (on the fitted scale) and in the saved file,
since :math:`\bar w` is a function of it and of :math:`\hat H`. A fit without inference reports
the released vector (it is the only estimate). A non-private fit keeps R's coefficients (the
penalised ``dplr`` fit, λ = 0.001 by default) and its table is glm's unpenalised fit
(:mod:`privatelr.glm`), titled as such.

Scales
------
Public bounds (:func:`privatelr.public_bounds`) fit the model on mapped columns
:math:`X M` (``M`` public and invertible). Coefficients per unit of the original columns are
:math:`M\bar w`, their covariance :math:`M V M^\top`, and the law of :math:`e_j^\top M\bar w`
is the law above along :math:`c = M^\top e_j`, so every number is transformed exactly
(``scale="data"``, the default). ``scale="mapped"`` reports the fitted scale, rows named by the
map's R text (``(age - 54)/36``).

The Gaussian methods
--------------------
``method="gaussian"`` perturbs the objective with :math:`b \sim N(0, \sigma^2 I)`, so the noise
part :math:`-\hat H^{-1}b/n` of :math:`\bar w` is Gaussian with covariance
:math:`\sigma^2\hat H^{-2}/n^2`; ``"amp"`` adds its output noise
:math:`\eta \sim N(0, \sigma_o^2 I)`, which the bias correction carries as
:math:`(I + \lambda\hat H^{-1})\eta`. Both add to the Gaussian part: the interval is normal and
the p-value follows from Estimate / Std. Error (up to the widening below). (AMP's approximate minimiser differs from the
exact one by at most :math:`\gamma/\lambda` in norm, a public bound far below the noise at the
default γ.)

When intervals are given, flagged or refused
--------------------------------------------
The bias correction is a first-order step: when it is larger than the estimate itself
(:math:`\|\lambda\hat H^{-1}\tilde w\| > \|\tilde w\|`: λ large next to the information, or
separated classes with no maximum-likelihood estimate) inference refuses.
The approximation needs :math:`\hat H` accurate. Its noise enters the stated variance
:math:`V(c) = c^\top\Sigma(\hat H)c` of every direction ``c``; to first order the variance
estimate is :math:`V(1 + rU)` with ``U`` of mean 0 and variance 1, where the relative standard
deviation ``r`` follows from the released :math:`\hat H` and the public noise scale
:math:`s_H = \Delta_H/\varepsilon_H` (:class:`~privatelr.inference.estimate.VarianceNoise`
gives the gradient of ``V`` in :math:`\hat H`). An interval :math:`\pm q\sqrt{\hat V}` then
covers with probability :math:`E[2\Phi(q\sqrt{1 + rU}) - 1] = 2\Phi(q) - 1 -
\phi(q)\,q(q^2 + 1)r^2/4 + O(r^3)` (a second-order expansion in ``U``), which the widening
factor :math:`1 + (q^2 + 1)r^2/8` restores; p-values are one minus the level of the widest
widened interval that excludes 0, so they and the intervals follow from each other. Without
the widening, the health-records design covered 0.92-0.94 at ``n*eps`` of 10,000 (r ≈ 0.3).
The index of the rule is :math:`\kappa = \max_j r_j/2` over the fitted coefficients (the
relative noise of a standard error). Intervals are refused — the last resort — when
:math:`\hat H` is not positive definite or :math:`\kappa >` :data:`KAPPA_MAX` (0.5: the
widening would exceed 1.6 and the expansion is no longer accurate; coverage measured in
``benchmarks/bench_coverage.py``, RESULTS.md). Output perturbation has one more
rule: its correction inverts :math:`\hat A = \hat H + \tfrac\lambda2\hat K`, and the
expansion of that inverse in the releases' noise needs :math:`\|\hat H^{-1}E\|` small; its
intervals are given only while the smallest eigenvalue of :math:`\hat H` is at least
:data:`~privatelr.inference.estimate.OUTPUT_MARGIN_MIN` (2) times the typical spectral norm
:math:`\sqrt{2d\,(m+1)s_H^2}` of its noise (the edge of the semicircle law of a symmetric noise
matrix). Below it the coverage study found these intervals over-covering (0.976-0.984 at
margins 0.2-1.4: the first-order terms of the noise over-state its effect there, and the
derivative's noise, whose scale grows with :math:`\|\hat H^{-1}\tilde w\|` and so with the
output noise, makes the other two rules select draws with small output noise); above it they
cover 0.935-0.965 (health design at n = 50,000 and 100,000, ε = 1; 5 % positives at n = 50,000:
0.945-0.959; RESULTS.md). The index uses :math:`\hat H`'s noise scale only, which does
not depend on the output noise. The refusal names what to increase and points to
:func:`privatelr.inference_plan`, which says from public inputs only, before anything is spent,
whether intervals are likely and how wide they will be.

What is not covered: a model that is wrong (the intervals are for the logistic model's
coefficients), a design whose rows were clipped (the model is then the one for the clipped
rows), random projections (the coefficients are those of the projected design), the Huber loss.
"""

from .estimate import (KAPPA_MAX, SCALES, Inference, for_model, point_estimate,
                       unit_matrix)
from .laws import mixture_cdf, mixture_quantile
from .plan import InferencePlan, inference_plan
from .release import (DEFAULT_SHARE, InferenceRelease, check_inference, derivative_sensitivity,
                      information_eps, information_sensitivity, release_information,
                      split_budget, symmetric_noise)
from .tables import coef_table, confint, glm_of, se_linear, tidy, vcov

__all__ = ["InferenceRelease", "vcov", "confint", "tidy", "coef_table", "DEFAULT_SHARE",
           "KAPPA_MAX", "SCALES", "mixture_cdf", "mixture_quantile", "Inference",
           "for_model", "point_estimate", "unit_matrix", "check_inference", "split_budget",
           "information_sensitivity", "derivative_sensitivity", "information_eps",
           "symmetric_noise", "release_information", "se_linear",
           "glm_of", "inference_plan", "InferencePlan"]
