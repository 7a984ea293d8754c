r"""R's ``spline(method = "fmm")`` and ``approx()``, as MASS's ``confint.profile.glm`` uses them.

The *fmm* spline (Forsythe, Malcolm & Moler, *Computer Methods for Mathematical Computations*,
1977) is the interpolating cubic spline whose third derivative on the first and last intervals
equals that of the cubic through the four points nearest each end. With knot spacings
:math:`h_i`, slopes :math:`\delta_i = (y_{i+1} - y_i)/h_i` and second derivatives :math:`M_i`:

.. math::

    h_{i-1}M_{i-1} + 2(h_{i-1} + h_i)M_i + h_iM_{i+1} = 6(\delta_i - \delta_{i-1}),\quad
    M_1 - M_0 = 6h_0\,f[x_0, x_1, x_2, x_3],\quad
    M_{n-1} - M_{n-2} = 6h_{n-2}\,f[x_{n-4}, \dots, x_{n-1}]

(:math:`f[\cdot]` divided differences). Three points give the parabola through them, two the
line. Like R, :func:`spline` first sorts the points by ``x`` and averages ``y`` over tied ``x``,
then evaluates at ``3 * (number of distinct x)`` equally spaced points from the smallest to the
largest ``x``. :func:`approx` is R's linear interpolation with ``rule = 1`` (NaN outside the
data's range), after the same sorting and averaging of ties.

Examples
--------
>>> import numpy as np
>>> from privatelr.glm.rinterp import spline, approx
>>> xs, ys = spline(np.array([0.0, 1, 2, 3]), np.array([0.0, 1, 8, 27]))   # x**3 exactly
>>> bool(np.allclose(ys, xs**3))
True
>>> float(approx(np.array([0.0, 1.0]), np.array([10.0, 20.0]), 0.25)[0])
12.5
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = ["spline", "approx", "regularize"]


def regularize(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """R's ``regularize.values(x, y, mean)``: sort by ``x`` (stable), average ``y`` over ties."""
    o = np.argsort(x, kind="stable")
    x, y = np.asarray(x, float)[o], np.asarray(y, float)[o]
    ux, start, counts = np.unique(x, return_index=True, return_counts=True)
    if ux.size == x.size:
        return x, y
    return ux, np.add.reduceat(y, start) / counts


def _fmm_second_derivatives(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    n = x.size
    if n < 3:
        return np.zeros(n)
    h = np.diff(x)
    delta = np.diff(y) / h
    ab = np.zeros((3, n))           # banded storage: super-, main and sub-diagonal
    rhs = np.zeros(n)
    ab[1, 1:-1] = 2.0 * (h[:-1] + h[1:])
    ab[0, 2:] = h[1:]
    ab[2, :-2] = h[:-1]
    rhs[1:-1] = 6.0 * np.diff(delta)
    # end conditions: M1 - M0 = 6 h0 f[x0..x3]; M_{n-1} - M_{n-2} = 6 h_{n-2} f[x_{n-4}..x_{n-1}]
    ab[1, 0], ab[0, 1] = -1.0, 1.0
    ab[1, -1], ab[2, -2] = 1.0, -1.0
    if n > 3:
        dd2 = np.diff(delta) / (x[2:] - x[:-2])
        dd3 = np.diff(dd2) / (x[3:] - x[:-3])
        rhs[0] = 6.0 * h[0] * dd3[0]
        rhs[-1] = 6.0 * h[-1] * dd3[-1]
    return scipy.linalg.solve_banded((1, 1), ab, rhs)


def spline(x: np.ndarray, y: np.ndarray, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """R's ``spline(x, y)`` (method ``"fmm"``): ``(xout, yout)`` at ``n`` equally spaced points
    over the range of ``x`` (default: three per distinct ``x``)."""
    x, y = regularize(x, y)
    if n is None:
        n = 3 * x.size
    xout = np.linspace(x[0], x[-1], n)
    if x.size == 1:
        return xout, np.full(n, y[0])
    m = _fmm_second_derivatives(x, y)
    i = np.clip(np.searchsorted(x, xout, side="right") - 1, 0, x.size - 2)
    h = x[i + 1] - x[i]
    a, b = x[i + 1] - xout, xout - x[i]
    yout = (m[i] * a**3 + m[i + 1] * b**3) / (6.0 * h) \
        + (y[i] / h - m[i] * h / 6.0) * a + (y[i + 1] / h - m[i + 1] * h / 6.0) * b
    return xout, yout


def approx(x: np.ndarray, y: np.ndarray, xout) -> np.ndarray:
    """R's ``approx(x, y, xout)`` (linear, ``rule = 1``: NaN outside the range of ``x``)."""
    x, y = regularize(x, y)
    return np.interp(np.atleast_1d(np.asarray(xout, float)), x, y, left=np.nan, right=np.nan)
