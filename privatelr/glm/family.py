r"""R's ``binomial(link = "logit")`` family, value for value.

R computes the logit family in C with guards that keep every fitted probability strictly inside
(0, 1); reproducing them (rather than the textbook formulas) is what makes this package's
``glm`` agree with R on the numbers R prints, including on separated data, where R's estimates
are where those guards stop the iterations.

With :math:`\epsilon` the double-precision machine epsilon (``2**-52``):

* inverse link :math:`\mu(\eta) = t/(1 + t)` with :math:`t = \epsilon` for :math:`\eta < -30`,
  :math:`t = 1/\epsilon` for :math:`\eta > 30`, else :math:`t = e^\eta`;
* :math:`d\mu/d\eta = e^\eta/(1 + e^\eta)^2`, and :math:`\epsilon` for :math:`|\eta| > 30`;
* variance :math:`V(\mu) = \mu(1 - \mu)`;
* unit deviance :math:`d_i = 2 a_i \{y_i\log(y_i/\mu_i) + (1-y_i)\log((1-y_i)/(1-\mu_i))\}`
  (a term with a zero factor in front is 0), :math:`a_i` the prior weight;
* log-likelihood, as R's ``binomial()$aic``: with :math:`m_i = \mathrm{round}(a_i)` trials and
  :math:`k_i = \mathrm{round}(a_i y_i)` successes,
  :math:`\ell = \sum_{a_i > 0} \log\binom{m_i}{k_i} + k_i\log\mu_i + (m_i - k_i)\log(1 - \mu_i)`.
  For 0/1 responses with unit weights this is the Bernoulli log-likelihood; for a proportion
  response with ``weights`` = trials it is the binomial one.

:func:`exact_deviance` is the deviance without R's guards, from the linear predictor:
:math:`d_i = 2a_i\{y_i\log y_i + (1-y_i)\log(1-y_i) + y_i\log(1+e^{-\eta_i})
+ (1-y_i)\log(1+e^{\eta_i})\}`, convex in the coefficients everywhere (R's guarded version
is flat where :math:`|\eta| > 30`), for the exact profile.

Examples
--------
>>> import numpy as np
>>> from privatelr.glm.family import linkinv, unit_deviance
>>> linkinv(np.array([0.0, 40.0]))
array([0.5, 1. ])
>>> float(unit_deviance(np.array([1.0]), np.array([0.5]), np.array([1.0])).sum())  # 2 log 2
1.386294361119890...
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, xlog1py, xlogy

__all__ = ["linkinv", "linkfun", "mu_eta", "variance", "unit_deviance", "deviance", "loglik",
           "exact_deviance"]

EPS = float(np.finfo(float).eps)
THRESH = 30.0


def linkinv(eta: np.ndarray) -> np.ndarray:
    """R's logistic inverse link (``binomial()$linkinv``), kept inside ``[eps/(1+eps), 1/(1+eps)]``."""
    t = np.exp(np.clip(eta, -THRESH, THRESH))
    t = np.where(eta < -THRESH, EPS, np.where(eta > THRESH, 1.0 / EPS, t))
    return t / (1.0 + t)


def linkfun(mu: np.ndarray) -> np.ndarray:
    """The logit ``log(mu / (1 - mu))``."""
    return np.log(mu / (1.0 - mu))


def mu_eta(eta: np.ndarray) -> np.ndarray:
    """R's derivative of the inverse link, ``eps`` where ``|eta| > 30``."""
    e = np.exp(np.clip(eta, -THRESH, THRESH))
    return np.where(np.abs(eta) > THRESH, EPS, e / ((1.0 + e) * (1.0 + e)))


def variance(mu: np.ndarray) -> np.ndarray:
    """The binomial variance function ``mu (1 - mu)``."""
    return mu * (1.0 - mu)


def _y_log_y(y: np.ndarray, mu: np.ndarray) -> np.ndarray:
    # y log(y / mu), 0 where y == 0 (R's y_log_y)
    ratio = np.divide(y, mu, out=np.ones_like(y), where=y != 0)
    return y * np.log(ratio)


def unit_deviance(y: np.ndarray, mu: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """R's ``binomial()$dev.resids``: each row's contribution to the deviance."""
    return 2.0 * weights * (_y_log_y(y, mu) + _y_log_y(1.0 - y, 1.0 - mu))


def deviance(y: np.ndarray, mu: np.ndarray, weights: np.ndarray) -> float:
    """The deviance ``sum(unit_deviance(y, mu, weights))``."""
    return float(np.sum(unit_deviance(y, mu, weights)))


def loglik(y: np.ndarray, mu: np.ndarray, weights: np.ndarray) -> float:
    """R's binomial log-likelihood (``-binomial()$aic(...)/2``); rows with zero weight count 0."""
    m = np.round(weights)
    k = np.round(weights * y)
    terms = (gammaln(m + 1.0) - gammaln(k + 1.0) - gammaln(m - k + 1.0)
             + xlogy(k, mu) + xlog1py(m - k, -mu))
    return float(np.sum(np.where(weights > 0, terms, 0.0)))


def exact_deviance(y: np.ndarray, eta: np.ndarray, weights: np.ndarray,
                   entropy: np.ndarray | None = None) -> float:
    """The binomial deviance at linear predictor ``eta`` without R's guards (stable for any
    ``eta``); ``entropy``: ``y log y + (1-y) log(1-y)`` if already computed (0 for 0/1 ``y``)."""
    if entropy is None:
        entropy = xlogy(y, y) + xlogy(1.0 - y, 1.0 - y)
    # y log(1 + e^-eta) + (1 - y) log(1 + e^eta) = log(1 + e^eta) - y eta
    return float(2.0 * np.sum(weights * (entropy + np.logaddexp(0.0, eta) - y * eta)))
