"""The inference release: the noisy averaged information matrix, its sensitivity and noise.

Derivations in :mod:`privatelr.inference` (the package docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_real

__all__ = ["InferenceRelease", "check_inference", "split_budget", "information_sensitivity",
           "symmetric_noise", "release_information", "DEFAULT_SHARE"]

#: The share of ε spent on the information matrix when ``inference=True``. A trade-off measured
#: by simulation (n = 1e4, ε = 1, 300 replications): with 3 covariates the 95% intervals are
#: 0.206 / 0.212 / 0.222 wide at shares 0.1 / 0.25 / 0.4 (a smaller share leaves more ε for the
#: coefficients), but with 10 covariates a share of 0.1 leaves the information too noisy to claim
#: coverage (κ above :data:`KAPPA_MAX` in every replication) while 0.25 covers (widths 0.50, and
#: 0.53 at 0.4). A quarter keeps inference available on wider designs at a small cost in width.
DEFAULT_SHARE = 0.25


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
    from ..mechanisms import sphere_gamma_noise

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
    from ..losses import LogisticLoss

    H = rows.objective(LogisticLoss(), 0.0, labels=False).information(np.asarray(coef, float))
    H = 0.5 * (H + H.T)
    if eps == 0:
        return InferenceRelease(information=H, eps=0.0, noise_scale=0.0)
    scale = information_sensitivity(cal.n, cal.curvature, cal.weights_bound,
                                    cal.data_norm) / eps
    return InferenceRelease(information=H + symmetric_noise(cal.d, scale, rng), eps=float(eps),
                            noise_scale=float(scale))

