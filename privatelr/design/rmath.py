r"""R's ``round`` and ``signif`` of doubles, elementwise on NumPy arrays.

NumPy's ``np.round(x, d)`` scales, rounds half to even and scales back, so it answers
``round(0.15, 1) = 0.2`` where R answers 0.1 (0.15 is the double 0.1499999999999999944...).
R (from 4.0.0) rounds to ``d > 0`` digits by taking the two candidates
``floor(x 10^d) / 10^d`` and ``ceil(x 10^d) / 10^d`` and returning the one closer to ``x`` in
double arithmetic, the one with an even last digit on a tie; ``d = 0`` is ``rint`` (half to
even); a number with more than 15 significant digits before the rounding position is returned
as it is (R's ``fround``). ``signif(x, d)`` scales ``x`` to ``d`` significant digits by an exact
power of ten and rounds half to even (R's ``fprec``).

Examples
--------
>>> import numpy as np
>>> r_round(np.array([0.15, 0.25, 0.35, 0.45, 0.65, -1.25, 0.05]), 1).tolist()
[0.1, 0.2, 0.3, 0.4, 0.7, -1.2, 0.0]
>>> np.round(np.array([0.15, 0.45, 0.65]), 1).tolist()     # NumPy differs: R gives 0.1, 0.4, 0.7
[0.2, 0.4, 0.6]
>>> r_round(np.array([2.5, -2.5, 0.5, 1234.5678]), 0).tolist()
[2.0, -2.0, 0.0, 1235.0]
>>> r_round(np.array([1234.5678]), -2).tolist()
[1200.0]
>>> r_signif(np.array([123456.0, 0.00123, -2.46e-7]), 2).tolist()
[120000.0, 0.0012, -2.5e-07]
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["r_round", "r_signif"]

_MAX_DIGITS = 308        # DBL_MAX_10_EXP
_DBL_DIG = 15
_LOG10_2 = math.log10(2.0)


def _pow_di(x: float, n: int) -> float:
    """R's ``R_pow_di``: ``x^n`` by repeated squaring (``1 / x^-n`` for ``n < 0``)."""
    xn = 1.0
    neg = n < 0
    n = -n if neg else n
    while True:
        if n & 1:
            xn *= x
        n >>= 1
        if not n:
            break
        x *= x
    return 1.0 / xn if neg else xn


def r_round(x: np.ndarray, digits: int) -> np.ndarray:
    """R's ``round(x, digits)`` for a whole number ``digits`` (see the module docstring)."""
    x = np.asarray(x, dtype=np.float64)
    if digits == 0:
        return np.rint(x)
    if digits > _MAX_DIGITS + _DBL_DIG:
        return x.copy()
    if digits < -_MAX_DIGITS:
        return np.where(np.isfinite(x), 0.0, x)
    with np.errstate(all="ignore"):
        sgn = np.where(x < 0, -1.0, 1.0)
        ax = np.abs(x)
        # logb(x): the binary exponent (frexp's mantissa is in [0.5, 1))
        logb = np.frexp(ax)[1].astype(np.float64) - 1.0
        keep = ~np.isfinite(x) | (x == 0) | (digits + (logb + 0.5) * _LOG10_2 > _DBL_DIG)
        if digits <= _MAX_DIGITS:
            pow10 = _pow_di(10.0, digits)
            x10 = pow10 * ax
            i10 = np.floor(x10)
            xd, xu = i10 / pow10, np.ceil(x10) / pow10
        else:                             # |x| far below 1e-300: two exact scalings
            p10, pow10 = _pow_di(10.0, digits - _MAX_DIGITS), _pow_di(10.0, _MAX_DIGITS)
            x10 = (pow10 * ax) * p10
            i10 = np.floor(x10)
            xd, xu = i10 / pow10 / p10, np.ceil(x10) / pow10 / p10
        du, dd = xu - ax, ax - xd
        up = (du < dd) | ((du == dd) & (np.fmod(i10, 2.0) == 1.0))
        out = sgn * np.where(up, xu, xd)
    return np.where(keep, x, out)


def _fprec(x: float, dig: int) -> float:
    """R's ``fprec`` (``signif``) of one finite, non-zero double, ``1 <= dig <= 22``."""
    max10e = _MAX_DIGITS
    sgn = -1.0 if x < 0 else 1.0
    x = abs(x)
    l10 = math.log10(x)
    e10 = int(dig - 1 - math.floor(l10))
    if abs(l10) < max10e - 2:
        p10 = 1.0
        if e10 > max10e:                  # numbers below 10^(dig - 1 - 308)
            p10 = _pow_di(10.0, e10 - max10e)
            e10 = max10e
        if e10 > 0:                       # a power >= 1, so exactly representable
            pow10 = _pow_di(10.0, e10)
            return sgn * (float(np.rint((x * pow10) * p10)) / pow10) / p10
        pow10 = _pow_di(10.0, -e10)
        return sgn * (float(np.rint(x / pow10)) * pow10)
    do_round = max10e - l10 >= _pow_di(10.0, -dig)          # very large or very small x
    e2 = dig + (1 if e10 > 0 else 6)
    p10 = _pow_di(10.0, e2)
    x *= p10
    big = _pow_di(10.0, e10 - e2)
    x *= big
    if do_round:
        x += 0.5
    x = math.floor(x) / p10
    return sgn * x / big


def r_signif(x: np.ndarray, digits: int) -> np.ndarray:
    """R's ``signif(x, digits)`` for a whole number ``digits`` (below 1 counts as 1; above 22
    returns ``x``), elementwise; NaN and infinities are returned as they are."""
    x = np.asarray(x, dtype=np.float64)
    if digits > 22:
        return x.copy()
    dig = max(1, int(digits))
    out = x.copy()
    ok = np.isfinite(x) & (x != 0)
    values, where = np.unique(x[ok], return_inverse=True)
    table = np.array([_fprec(float(v), dig) for v in values.tolist()], dtype=np.float64)
    out[ok] = table[where] if values.size else out[ok]
    return out
