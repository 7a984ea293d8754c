r"""The law of the error of a private estimate along one direction: :math:`Z + rB_1`.

``Z`` is standard normal (sampling), :math:`B_1` the first coordinate of a vector of density
:math:`\propto e^{-\|x\|}` in :math:`\mathbb{R}^d` (the objective and output perturbation
noise of the ε-DP methods), ``r`` the ratio of the two scales. Derivation in
:mod:`privatelr.inference`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["mixture_cdf", "mixture_quantile"]

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

