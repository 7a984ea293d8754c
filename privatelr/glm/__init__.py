r"""R's ``glm(family = binomial)`` without privacy: the exact, unpenalised maximum-likelihood fit.

What ``dplr(..., eps = 0)`` reports as R would: estimates, standard errors, z and p
(``summary.glm``), deviance, null deviance, AIC, BIC and log-likelihood, Wald intervals
(``confint.default``) and profile-likelihood intervals (``confint``, MASS's method in R 4.2),
and a clear statement when separation leaves the estimate undefined. Nothing here is private:
it is the reference the private fits are compared with.

* :func:`fit_glm` — IRLS as R's ``glm.fit`` runs it, R's guarded logit family, R's definitions
  of every reported number (:mod:`~privatelr.glm.fit`, :mod:`~privatelr.glm.family`,
  :mod:`~privatelr.glm.irls`);
* :class:`Separation` — whether the estimate exists, which coefficients run to infinity
  (:mod:`~privatelr.glm.separation`);
* :func:`profile_confint` — profile-likelihood intervals: R's numbers (MASS's grid and spline,
  :mod:`~privatelr.glm.rinterp`) or the exact root (:mod:`~privatelr.glm.profile`,
  :mod:`~privatelr.glm.constrained`); ``method="wald"`` for Wald intervals.

The formulas
------------
With prior weights :math:`a_i`, fitted probabilities :math:`\mu_i`, :math:`k` coefficients and
:math:`n_+` rows of positive weight:

* deviance :math:`D = 2\sum_i a_i\{y_i\log(y_i/\mu_i) + (1-y_i)\log((1-y_i)/(1-\mu_i))\}`;
* :math:`\mathrm{AIC} = -2\ell + 2k`, :math:`\mathrm{BIC} = -2\ell + k\log n_+`, with R's
  binomial log-likelihood :math:`\ell` (:math:`= -D/2` for 0/1 responses);
* profile statistic :math:`z_j(b) = \operatorname{sign}(b - \hat\beta_j)\sqrt{D_j(b) - D}`,
  :math:`D_j(b)` the deviance refitted with :math:`\beta_j = b`; the interval is where
  :math:`|z_j| \le \Phi^{-1}((1 + level)/2)`.

Examples
--------
>>> import numpy as np
>>> from privatelr.glm import fit_glm, profile_confint
>>> from privatelr.datasets import load_iris
>>> iris = load_iris()
>>> X = np.column_stack([np.ones(150), iris["Sepal.Length"], iris["Sepal.Width"]])
>>> y = (iris["Species"] == "virginica").to_numpy()
>>> fit = fit_glm(X, y, names=["(Intercept)", "Sepal.Length", "Sepal.Width"])
>>> round(fit.deviance, 3), round(fit.null_deviance, 3), round(fit.aic, 3)
(115.899, 190.954, 121.899)
>>> np.round(profile_confint(fit, X, y).as_array(), 4)     # R's confint(glm(...))
array([[-20.8518,  -8.5568],
       [  1.8241,   3.567 ],
       [ -2.0927,   0.4493]])
"""

from .fit import ConfidenceIntervals, GLMFit, fit_glm
from .profile import profile_confint
from .separation import Separation
from .summary import GLMSummary, glm_summary

__all__ = ["fit_glm", "profile_confint", "GLMFit", "ConfidenceIntervals", "Separation",
           "GLMSummary", "glm_summary"]
