r"""Margin losses :math:`\ell(z)`, :math:`z = y\,w^\top x`, with the constants their privacy proofs use.

Objective perturbation (Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Theorem 9; NIPS 2008,
Theorem 3 for the logistic case) needs a convex loss that is twice differentiable with

* :math:`|\ell'(z)| \le 1` (1-Lipschitz), and
* :math:`|\ell''(z)| \le c` (curvature bound ``c``).

Output perturbation (JMLR 2011, Corollary 8) only needs convexity, differentiability and the
Lipschitz bound. Any object satisfying :class:`Loss` can be passed to :func:`privatelr.erm.fit`;
the privacy calibration reads ``lipschitz`` and ``curvature`` from it, so the constants live next
to the function they bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np
from scipy.special import expit

from ._validation import check_real

__all__ = ["Loss", "LogisticLoss", "HuberLoss", "get_loss"]


@runtime_checkable
class Loss(Protocol):
    """A convex margin loss usable by the Chaudhuri–Monteleoni–Sarwate estimators.

    Attributes
    ----------
    lipschitz : float
        Declared bound on ``|derivative|``; the calibration requires 1.
    curvature : float
        Declared bound ``c`` on ``second_derivative``.

    Optional: ``terms(z, second)`` and ``derivatives(z, second)`` (fused evaluations),
    ``scaled_derivative(z, scale)`` (``scale * derivative(z)`` in fewer array operations: what a
    gradient pass needs), and ``third_derivative_bound``, a bound on the third derivative's
    magnitude for a loss that has one (it lets the solver accept a step from the gradient
    alone, without the objective's value: :func:`privatelr.solver.newton`).
    """

    @property
    def name(self) -> str: ...

    @property
    def lipschitz(self) -> float: ...

    @property
    def curvature(self) -> float: ...

    def value(self, z: np.ndarray) -> np.ndarray: ...

    def derivative(self, z: np.ndarray) -> np.ndarray: ...

    def second_derivative(self, z: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class LogisticLoss:
    r"""Logistic loss :math:`\ell(z) = \log(1 + e^{-z})`.

    :math:`\ell'(z) = -1/(1+e^{z}) \in (-1, 0)` and :math:`\ell''(z) = \sigma(z)\sigma(-z) \le 1/4`,
    so ``lipschitz = 1`` and ``curvature = c = 1/4`` (NIPS 2008, Section 3.1). Computed from
    ``exp(-|z|)`` (the value) and ``1 / (1 + exp(z))`` (the derivatives): no overflow reported,
    and accurate to rounding, for any finite margin.

    Examples
    --------
    >>> float(LogisticLoss().value(np.array([0.0]))[0]) == float(np.log(2))
    True
    """

    name: str = "logistic"
    lipschitz: float = 1.0
    curvature: float = 0.25
    #: A bound on the third derivative ``l3 = s (1 - s)(1 - 2 s)`` with ``s = sigma(z)``: its
    #: size peaks at ``s = 1/2 -+ 1/(2 sqrt 3)``, at ``1/(6 sqrt 3)`` (the solver's step certificate)
    third_derivative_bound: ClassVar[float] = 1.0 / (6.0 * 3.0 ** 0.5)

    def value(self, z):
        """``log(1 + exp(-z))`` as ``log1p(exp(-|z|)) + max(-z, 0)``: no overflow, accurate to
        rounding for every finite ``z`` (the tail ``exp(-|z|)`` is never rounded against 1)."""
        z = np.asarray(z, dtype=np.float64)
        v = np.empty(z.shape)
        np.abs(z, out=v)
        np.negative(v, out=v)
        np.exp(v, out=v)
        np.log1p(v, out=v)
        v -= np.minimum(z, 0.0)
        return v[()]                             # a scalar for a scalar

    def derivative(self, z):
        return self.derivatives(z, False)[0]

    def second_derivative(self, z):
        return self.derivatives(z, True)[1]

    def terms(self, z, second: bool = True):
        """``(value, derivative, second_derivative or None)``."""
        return (self.value(z), *self.derivatives(z, second))

    def derivatives(self, z, second: bool = True):
        """``(derivative, second_derivative or None)`` from one ``exp``: with
        ``s = sigma(-z) = 1 / (1 + exp(z))``, ``l' = -s`` and ``l'' = s (1 - s)``.

        ``1 / (1 + exp(z))`` is accurate to a few rounding errors (relative) for every ``z``: a
        large ``z`` overflows ``exp`` to infinity and gives exactly 0, the limit (the overflow
        is expected and not reported). This is what a pass over the rows computes for the
        gradient and Hessian, without the value.
        """
        z = np.asarray(z, dtype=np.float64)
        s = np.empty(z.shape)
        with np.errstate(over="ignore"):
            np.exp(z, out=s)
        s += 1.0
        np.reciprocal(s, out=s)                  # sigma(-z)
        d2 = None
        if second:
            d2 = 1.0 - s
            d2 *= s
            d2 = d2[()]
        np.negative(s, out=s)
        return s[()], d2

    def scaled_derivative(self, z, scale):
        """``scale * l'(z) = -scale / (1 + exp(z))``: three array operations (``exp``, ``+ 1``,
        a division), the same value as ``scale * derivative(z)`` up to one rounding (the
        division replaces a reciprocal and a product)."""
        z = np.asarray(z, dtype=np.float64)
        s = np.empty(z.shape)
        with np.errstate(over="ignore"):
            np.exp(z, out=s)
        np.subtract(-1.0, s, out=s)              # -(1 + exp(z)): the sign is exact
        np.divide(scale, s, out=s)
        return s[()]


@dataclass(frozen=True)
class HuberLoss:
    r"""Huberised hinge loss of the C programs' SVM (JMLR 2011, Section 3.4.2, eq. 7).

    .. math::
        \ell_h(z) = \begin{cases} 0 & z > 1+h \\ (1+h-z)^2/(4h) & |1-z| \le h \\ 1-z & z < 1-h
        \end{cases}

    :math:`|\ell_h'| \le 1` and :math:`\ell_h'' = 1/(2h)` inside the band, 0 outside, so
    ``curvature = c = 1/(2h)``. The loss is once continuously differentiable; its second
    derivative is the generalised (piecewise constant) one used by Newton's method.

    Parameters
    ----------
    h : float
        Huber constant in (0, 0.5]; the C programs use 0.5.

    Examples
    --------
    >>> HuberLoss(0.5).curvature
    1.0
    """

    h: float = 0.5
    name: str = "huber"
    lipschitz: float = 1.0

    def __post_init__(self):
        check_real("h", self.h, low=0.0, high=0.5, low_open=True)

    @property
    def curvature(self) -> float:
        return 1.0 / (2.0 * self.h)

    def value(self, z):
        h = self.h
        t = np.clip(1.0 + h - z, 0.0, 2.0 * h)  # distance into the quadratic band
        return np.where(z < 1.0 - h, 1.0 - z, t * t / (4.0 * h))

    def derivative(self, z):
        h = self.h
        return -np.clip((1.0 + h - z) / (2.0 * h), 0.0, 1.0)

    def second_derivative(self, z):
        h = self.h
        return np.where(np.abs(1.0 - z) <= h, 1.0 / (2.0 * h), 0.0)

    def terms(self, z, second: bool = True):
        """``(value, derivative, second_derivative or None)`` in one call."""
        return self.value(z), self.derivative(z), (self.second_derivative(z) if second else None)

    def derivatives(self, z, second: bool = True):
        """``(derivative, second_derivative or None)`` in one call."""
        return self.derivative(z), (self.second_derivative(z) if second else None)


def get_loss(loss, h: float = 0.5) -> Loss:
    """Resolve ``"logistic"``, ``"huber"`` or a :class:`Loss` object."""
    if isinstance(loss, str):
        if loss == "logistic":
            return LogisticLoss()
        if loss == "huber":
            return HuberLoss(h)
        raise ValueError(f"loss must be 'logistic', 'huber' or a Loss object, got {loss!r}")
    if isinstance(loss, Loss):
        return loss
    raise TypeError(f"loss must be 'logistic', 'huber' or a Loss object, got {type(loss).__name__}")
