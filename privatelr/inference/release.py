"""The inference release: the noisy averaged information matrix, its sensitivity and noise.

Derivations in :mod:`privatelr.inference` (the package docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_real
from ..defaults import DEFAULT_SHARE     # re-exported here; its home imports nothing

__all__ = ["InferenceRelease", "check_inference", "split_budget", "information_sensitivity",
           "derivative_sensitivity", "information_eps", "symmetric_noise",
           "release_information", "DEFAULT_SHARE"]


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
    derivative : (d, d) ndarray or None
        Output perturbation only: the released derivative :math:`\\hat K` of the information
        along :math:`v = \\hat H^{-1}\\tilde w` (:mod:`privatelr.inference`, "Output
        perturbation's evaluation point"); None for the other methods. ``eps`` then counts
        both releases.
    derivative_scale : float
        :math:`s_K` of its noise.
    """

    information: np.ndarray
    eps: float
    noise_scale: float
    derivative: np.ndarray | None = None
    derivative_scale: float = 0.0

    def __post_init__(self):
        for name in ("information", "derivative"):
            value = getattr(self, name)
            if value is not None:
                arr = np.array(value, dtype=np.float64)
                arr.setflags(write=False)
                object.__setattr__(self, name, arr)

    def to_dict(self) -> dict:
        body = {"information": self.information.tolist(), "eps": self.eps,
                "noise_scale": self.noise_scale}
        if self.derivative is not None:
            body["derivative"] = self.derivative.tolist()
            body["derivative_scale"] = self.derivative_scale
        return body

    @classmethod
    def from_dict(cls, body: dict, d: int) -> "InferenceRelease":
        """Rebuild from :meth:`to_dict` (``ValueError`` on a malformed body)."""
        keys = {"information", "eps", "noise_scale"}
        if not isinstance(body, dict) or set(body) not in (keys, keys | {"derivative",
                                                                         "derivative_scale"}):
            raise ValueError("inference: expected keys information, eps, noise_scale (and "
                             "derivative with derivative_scale)")
        info = _symmetric(body["information"], d, "information")
        eps = check_real("inference.eps", body["eps"], low=0.0)
        scale = check_real("inference.noise_scale", body["noise_scale"], low=0.0)
        if (eps == 0) != (scale == 0):
            raise ValueError("inference: eps and noise_scale must both be 0 or both positive")
        if "derivative" not in body:
            return cls(information=info, eps=eps, noise_scale=scale)
        der = _symmetric(body["derivative"], d, "derivative")
        der_scale = check_real("inference.derivative_scale", body["derivative_scale"], low=0.0)
        if eps == 0 and der_scale > 0:
            raise ValueError("inference: a derivative with noise needs eps > 0")
        return cls(information=info, eps=eps, noise_scale=scale, derivative=der,
                   derivative_scale=der_scale)


def _symmetric(value, d: int, name: str) -> np.ndarray:
    """A stored matrix, checked: finite, symmetric, ``d × d``."""
    bad = f"inference: {name} must be a finite symmetric {d}x{d} matrix"
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(bad) from None
    if arr.shape != (d, d) or not np.isfinite(arr).all() or not np.array_equal(arr, arr.T):
        raise ValueError(bad)
    return arr


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
    from ..mechanisms import sphere_gamma_noise

    iu = np.triu_indices(d)
    z = sphere_gamma_noise(iu[0].size, scale, rng)
    off = iu[0] != iu[1]
    z[off] /= math.sqrt(2.0)
    E = np.zeros((d, d))
    E[iu] = z
    return E + np.triu(E, 1).T


def derivative_sensitivity(n: int, weights_bound: float, norm_bound: float,
                           v_norm: float) -> float:
    """:math:`\\Delta_K = 2c_3AB^3\\|v\\|/n`, the Frobenius-norm sensitivity of the information's
    derivative along ``v`` (``c_3`` :math:`= 1/(6\\sqrt3)`, the logistic loss's
    ``third_derivative_bound``; module docstring, "Output perturbation's evaluation point").

    Examples
    --------
    >>> round(derivative_sensitivity(100, 1.0, 1.0, 2.0), 12)
    0.003849001795
    """
    from ..losses import LogisticLoss

    c3 = LogisticLoss.third_derivative_bound
    return 2.0 * c3 * weights_bound * norm_bound ** 3 * v_norm / n


def information_eps(eps: float, method: str) -> float:
    """The ε of the information matrix out of the inference share ``eps``: all of it, except
    under output perturbation, where half goes to the information's derivative (module
    docstring)."""
    return 0.5 * eps if method == "output" and eps > 0 else eps


def release_information(rows, coef: np.ndarray, cal, *, eps: float,
                        rng: np.random.Generator) -> InferenceRelease:
    """Release :math:`\\hat H` at ``coef`` over ``rows`` (already inside the bound ``B``):
    exact when ``eps`` is 0, else with the ``eps``-DP noise of the module docstring. Under
    output perturbation ``eps`` is split in two (:func:`information_eps`): :math:`\\hat H`, then
    the derivative :math:`\\hat K` of the information along :math:`v = \\hat H^{-1}` ``coef``
    (``v`` is computed from released values only, so the second release is adaptive
    composition; total ``eps``)."""
    from ..losses import LogisticLoss

    coef = np.asarray(coef, float)
    objective = rows.objective(LogisticLoss(), 0.0, labels=False)
    H = objective.information(coef)
    H = 0.5 * (H + H.T)
    if eps == 0:
        return InferenceRelease(information=H, eps=0.0, noise_scale=0.0)
    eps_H = information_eps(eps, cal.method)
    scale = information_sensitivity(cal.n, cal.curvature, cal.weights_bound,
                                    cal.data_norm) / eps_H
    H_hat = H + symmetric_noise(cal.d, scale, rng)
    if cal.method != "output":
        return InferenceRelease(information=H_hat, eps=float(eps), noise_scale=float(scale))
    K, k_scale = _release_derivative(objective, coef, H_hat, cal, eps - eps_H, rng)
    return InferenceRelease(information=H_hat, eps=float(eps), noise_scale=float(scale),
                            derivative=K, derivative_scale=k_scale)


def _release_derivative(objective, coef, H_hat, cal, eps, rng):
    """``(K_hat, s_K)``: the derivative of the information along :math:`v = \\hat H^{-1}`
    ``coef``, by a central difference of two exact information passes (step ``1e-4/B`` in the
    direction of ``v``: error :math:`O(h^2)`, far below the noise), plus the noise of
    :func:`derivative_sensitivity`. Zero without noise when ``v`` is 0 or cannot be computed
    (:math:`\\hat H` singular: inference then refuses anyway)."""
    d = cal.d
    try:
        v = np.linalg.solve(H_hat, coef)
    except np.linalg.LinAlgError:
        v = np.zeros(d)
    v_norm = float(np.linalg.norm(v))
    if not np.isfinite(v_norm) or v_norm == 0.0:
        return np.zeros((d, d)), 0.0
    h = 1e-4 / cal.data_norm
    u = v / v_norm
    K = (objective.information(coef + h * u) - objective.information(coef - h * u)) \
        * (v_norm / (2.0 * h))
    K = 0.5 * (K + K.T)
    scale = derivative_sensitivity(cal.n, cal.weights_bound, cal.data_norm, v_norm) / eps
    return K + symmetric_noise(d, scale, rng), float(scale)
