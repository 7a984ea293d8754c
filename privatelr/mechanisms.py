"""Randomness and the noise mechanisms: the only module of privatelr that draws random numbers.

Every public function that is random takes ``random_state`` (``int``, ``numpy.random.Generator`` or
``None``) and turns it into one :class:`numpy.random.Generator` with :func:`check_random_state`;
``None`` seeds from fresh operating-system entropy.

Floating-point caveat (Mironov, CCS 2012): noise drawn in double precision is not exactly the
continuous distribution the proofs assume; the set of floats a sampler can return depends on the
unnoised value, and precision-based attacks can exploit that on the released bits. privatelr
releases coefficients that went through an iterative solver (objective perturbation) or adds a
Gamma-radius, Gaussian-direction vector (output perturbation); neither is the textbook
``-s*log(U)`` Laplace sampler the attack targets, but we make no formal claim of resistance.
Users who need it should round released coefficients to a coarse grid (a post-processing step
that cannot hurt the guarantee).
"""

from __future__ import annotations

import numbers

import numpy as np

from ._validation import check_int, check_real

__all__ = ["check_random_state", "sphere_gamma_noise", "exponential_mechanism"]


def check_random_state(random_state=None) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : int, numpy.random.Generator or None
        ``None`` draws a fresh seed from operating-system entropy; an int (>= 0) seeds a new
        PCG64 generator reproducibly; a Generator is used as it is (and advanced).

    Examples
    --------
    >>> rng = check_random_state(1)
    >>> float(rng.uniform()) == float(check_random_state(1).uniform())
    True
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError("random_state must be an int, a numpy.random.Generator or None, got a bool")
    if isinstance(random_state, numbers.Integral):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise TypeError("random_state must be an int, a numpy.random.Generator or None, got "
                    f"{type(random_state).__name__}")


def sphere_gamma_noise(d: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    r"""Draw ``b`` in :math:`\mathbb{R}^d` with density proportional to :math:`\exp(-\|b\|/s)`.

    In polar coordinates the density :math:`\propto e^{-r/s}` times the surface element
    :math:`r^{d-1}` gives a radius :math:`\|b\| \sim \mathrm{Gamma}(\text{shape}=d,
    \text{scale}=s)` and, by rotational symmetry, a direction uniform on the unit sphere
    (Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Section 4, the sampling remark after
    Algorithm 1). The direction is a standard normal vector divided by its norm.

    Parameters
    ----------
    d : int
        Dimension (>= 1).
    scale : float
        ``s`` >= 0. ``s = 0`` returns the zero vector (no noise).
    rng : numpy.random.Generator

    Examples
    --------
    >>> b = sphere_gamma_noise(3, 2.0, np.random.default_rng(0))
    >>> b.shape
    (3,)
    """
    d = check_int("d", d, low=1)
    scale = check_real("scale", scale, low=0.0)
    if scale == 0.0:
        return np.zeros(d)
    direction = rng.standard_normal(d)
    norm = np.linalg.norm(direction)
    while norm == 0.0:  # probability zero, but never divide by it
        direction = rng.standard_normal(d)
        norm = np.linalg.norm(direction)
    radius = rng.gamma(shape=d, scale=scale)
    return direction * (radius / norm)


def exponential_mechanism(utility, eps: float, sensitivity: float, measure=None,
                          random_state=None) -> int:
    r"""Choose an index with the exponential mechanism (McSherry & Talwar, FOCS 2007).

    :math:`P(i) \propto \mu_i \exp(\varepsilon u_i / (2\Delta))` is ε-differentially private when
    every utility changes by at most Δ between neighbouring data sets (McSherry & Talwar,
    Theorem 6). The draw uses the Gumbel-max trick in log space — ``argmax(log μ_i + ε u_i/(2Δ) +
    G_i)`` with ``G_i`` standard Gumbel — which has exactly this law and cannot overflow whatever
    the size of the utilities.

    Parameters
    ----------
    utility : array-like of finite floats
        One utility per candidate (higher is better).
    eps : float
        Privacy level > 0 (``inf`` picks a best candidate, ties broken uniformly; not private).
    sensitivity : float
        Δ > 0, the largest change of any utility when one record changes.
    measure : array-like, optional
        Base measure μ_i >= 0 (not all zero); uniform when omitted.
    random_state : int, Generator or None

    Returns
    -------
    int
        The chosen index.

    Examples
    --------
    >>> exponential_mechanism([0.0, -1e6, -2e6], eps=1.0, sensitivity=1.0, random_state=0)
    0
    """
    u = np.asarray(utility, dtype=np.float64) if not isinstance(utility, np.ndarray) else utility
    if u.dtype == object or not np.issubdtype(np.asarray(u).dtype, np.number):
        raise TypeError("utility must be an array of numbers")
    u = np.asarray(u, dtype=np.float64).reshape(-1)
    if u.size == 0:
        raise ValueError("utility is empty: need at least one candidate")
    if not np.isfinite(u).all():
        raise ValueError("utility must be finite (no NaN or inf)")
    eps = check_real("eps", eps, low=0.0, low_open=True, allow_inf=True)
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_open=True)
    if measure is None:
        log_mu = np.zeros_like(u)
    else:
        mu = np.asarray(measure, dtype=np.float64).reshape(-1)
        if mu.shape != u.shape:
            raise ValueError(f"measure has {mu.size} entries but utility has {u.size}; they must match")
        if not np.isfinite(mu).all() or (mu < 0).any() or not (mu > 0).any():
            raise ValueError("measure must be finite, non-negative and not all zero")
        with np.errstate(divide="ignore"):
            log_mu = np.log(mu)
    rng = check_random_state(random_state)
    if np.isinf(eps):
        score = np.where(np.isfinite(log_mu), u, -np.inf)
        best = np.flatnonzero(score == score.max())
        return int(best[rng.integers(best.size)])
    logits = log_mu + eps * u / (2.0 * sensitivity)
    logits = logits - logits[np.isfinite(logits)].max()
    return int(np.argmax(logits + rng.gumbel(size=u.size)))
