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

__all__ = ["check_random_state", "sphere_gamma_noise", "exponential_mechanism",
           "gaussian_fourier_features"]


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
    G_i)`` with ``G_i`` standard Gumbel — which has exactly this law. The utilities are shifted by
    the best one (of positive measure) before scaling, so no exponential is formed and no product
    can overflow whatever the size of the utilities, ε or Δ (when ε/(2Δ) itself overflows the
    limit ``ε → ∞`` is used).

    Parameters
    ----------
    utility : 1-D array-like of finite real numbers
        One utility per candidate (higher is better); bools count as 0/1, anything else non-real
        raises ``TypeError``.
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
    u = _as_real_vector("utility", utility)
    if u.size == 0:
        raise ValueError("utility is empty: need at least one candidate")
    if not np.isfinite(u).all():
        raise ValueError("utility must be finite (no NaN or inf)")
    eps = check_real("eps", eps, low=0.0, low_open=True, allow_inf=True)
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_open=True)
    if measure is None:
        log_mu = np.zeros_like(u)
    else:
        mu = _as_real_vector("measure", measure)
        if mu.shape != u.shape:
            raise ValueError(f"measure has {mu.size} entries but utility has {u.size}; they must match")
        if not np.isfinite(mu).all() or (mu < 0).any() or not (mu > 0).any():
            raise ValueError("measure must be finite, non-negative and not all zero")
        with np.errstate(divide="ignore"):
            log_mu = np.log(mu)
    rng = check_random_state(random_state)
    allowed = np.isfinite(log_mu)  # candidates of positive measure
    scale = eps / (2.0 * sensitivity)  # may overflow to inf for absurd eps/sensitivity
    if not np.isfinite(scale):
        score = np.where(allowed, u, -np.inf)
        best = np.flatnonzero(score == score.max())
        return int(best[rng.integers(best.size)])
    # Shift by the best utility of positive measure before scaling: every shifted utility is
    # <= 0, so the product can only underflow towards -inf (probability 0), never overflow, and
    # the best candidate keeps a finite logit. The shift cancels in the normalisation.
    with np.errstate(over="ignore", invalid="ignore"):
        shifted = (u - u[allowed].max()) * scale
    logits = np.where(allowed, log_mu + shifted, -np.inf)
    return int(np.argmax(logits + rng.gumbel(size=u.size)))


def _as_real_vector(name: str, value) -> np.ndarray:
    """A 1-D float64 copy of ``value``; ``TypeError`` naming ``name`` for non-real input."""
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.float64)
    if (arr.dtype == object or not np.issubdtype(arr.dtype, np.number)
            or np.issubdtype(arr.dtype, np.complexfloating)):
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    if arr.ndim > 1:
        raise ValueError(f"{name} must be 1-D (one value per candidate), got shape {arr.shape}")
    return arr.astype(np.float64).reshape(-1)


def gaussian_fourier_features(d: int, n_features: int, kernel_param: float,
                              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    r"""Draw the random frequencies and phases of a Gaussian-kernel random Fourier feature map.

    For :math:`k(x, x') = \exp(-\gamma_k\|x - x'\|^2)` (``kernel_param`` :math:`= \gamma_k`),
    Bochner's theorem gives :math:`k(x, x') = E[2\cos(\omega^\top x + \phi)
    \cos(\omega^\top x' + \phi)]` with :math:`\omega \sim N(0, 2\gamma_k I_d)` and
    :math:`\phi \sim U(-\pi, \pi)` (Rahimi & Recht, NIPS 2007, Algorithm 1; used for private
    kernel SVMs in Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Section 7). The feature map
    :math:`v_j(x) = \sqrt{2/D}\cos(\omega_j^\top x + \phi_j)` then satisfies
    :math:`\|v(x)\| \le \sqrt 2` for every ``x``. The draw does not look at any data, so
    releasing it costs no privacy.

    Parameters
    ----------
    d : int
        Input dimension (>= 1).
    n_features : int
        ``D``, the number of random features (>= 1).
    kernel_param : float
        :math:`\gamma_k > 0` of the kernel.
    rng : numpy.random.Generator

    Returns
    -------
    omega : (d, D) ndarray
        Frequencies, one column per feature.
    phase : (D,) ndarray
        Phases in :math:`[-\pi, \pi)`.

    Examples
    --------
    >>> omega, phase = gaussian_fourier_features(2, 5, 0.5, np.random.default_rng(0))
    >>> omega.shape, phase.shape
    ((2, 5), (5,))
    """
    d = check_int("d", d, low=1)
    n_features = check_int("n_features", n_features, low=1)
    kernel_param = check_real("kernel_param", kernel_param, low=0.0, low_open=True)
    omega = rng.normal(0.0, np.sqrt(2.0 * kernel_param), size=(d, n_features))
    phase = rng.uniform(-np.pi, np.pi, size=n_features)
    return omega, phase


# --- Gaussian mechanism (classic and analytic), used by the WALR label-DP release -------------

__all__ += ["gaussian_delta", "gaussian_sigma_classic", "gaussian_sigma_analytic",
            "gaussian_sigma", "gaussian_noise"]

GAUSSIAN_MECHANISMS = ("analytic", "classic")


def _check_gaussian_args(sensitivity, eps, delta) -> tuple[float, float, float]:
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_open=True)
    eps = check_real("eps", eps, low=0.0, low_open=True)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    return sensitivity, eps, delta


def gaussian_delta(sigma: float, sensitivity: float, eps: float) -> float:
    r"""The exact privacy profile :math:`\delta(\varepsilon)` of the Gaussian mechanism.

    For :math:`M(D) = f(D) + Z`, :math:`Z \sim N(0, \sigma^2 I_k)` and a query of L2 sensitivity
    :math:`\Delta = \sup_{D \simeq D'} \|f(D) - f(D')\|_2`, Balle & Wang (*Improving the Gaussian
    mechanism for differential privacy: analytical calibration and optimal denoising*, ICML 2018,
    Theorem 8) show that ``M`` is :math:`(\varepsilon, \delta)`-DP **if and only if**

    .. math::
        \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
        - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
        \le \delta .

    Derivation in one line: rotate so that :math:`f(D') - f(D)` lies on the first axis; the other
    coordinates have equal laws and cancel, leaving the hockey-stick divergence
    :math:`\sup_S P(S) - e^\varepsilon Q(S)` between :math:`N(0, \sigma^2)` and
    :math:`N(\Delta, \sigma^2)`, largest at :math:`\|f(D) - f(D')\| = \Delta`. The optimal ``S``
    is where the privacy loss :math:`\log(p/q)(x) = (\Delta^2 - 2x\Delta)/(2\sigma^2)` exceeds
    ε, i.e. :math:`x < t = \Delta/2 - \varepsilon\sigma^2/\Delta`; then :math:`P(S) =
    \Phi(t/\sigma)` and :math:`Q(S) = \Phi((t - \Delta)/\sigma)` are the two Φ terms. The
    left-hand side (returned here) is that divergence.

    Computed in log space, ``exp(l1) * -expm1(eps + l2 - l1)`` with ``l1, l2`` the two
    ``log_ndtr`` values, so that neither ``e^ε`` overflows nor the difference of two small
    probabilities loses its relative precision.

    Parameters
    ----------
    sigma : float
        Noise standard deviation (> 0).
    sensitivity : float
        L2 sensitivity Δ (> 0).
    eps : float
        ε (> 0).

    Returns
    -------
    float
        The smallest δ for which the mechanism is (ε, δ)-DP.

    Examples
    --------
    >>> round(gaussian_delta(1.0, 1.0, 1.0), 6)
    0.126937
    """
    from scipy.special import log_ndtr

    sigma = check_real("sigma", sigma, low=0.0, low_open=True)
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_open=True)
    eps = check_real("eps", eps, low=0.0)
    return _gaussian_delta_unit(sigma / sensitivity, eps, log_ndtr)


def _gaussian_delta_unit(s: float, eps: float, log_ndtr) -> float:
    """Privacy profile for sensitivity 1 and noise ``s`` (it depends on ``sigma/Δ`` only)."""
    a, b = 0.5 / s, eps * s
    l1 = float(log_ndtr(a - b))
    l2 = float(log_ndtr(-a - b))
    gap = eps + l2 - l1  # log of the ratio of the two terms, < 0 for s > 0
    if gap >= 0.0:  # only through rounding when s is astronomically large
        return 0.0
    return float(np.exp(l1) * -np.expm1(gap))


def gaussian_sigma_classic(sensitivity: float, eps: float, delta: float) -> float:
    r"""Noise scale of the classic Gaussian mechanism, valid for ``0 < eps < 1``.

    :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon` makes :math:`f(D) + N(0,
    \sigma^2 I)` :math:`(\varepsilon, \delta)`-DP for :math:`\varepsilon \in (0, 1)` (Dwork &
    Roth, *The Algorithmic Foundations of Differential Privacy*, 2014, Theorem 3.22 / A.1). The
    proof bounds the privacy loss tail with :math:`\varepsilon < 1`; for larger ε the formula is
    not a theorem (use :func:`gaussian_sigma_analytic`), so ``eps >= 1`` raises.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Δ > 0.
    eps : float
        ε in (0, 1).
    delta : float
        δ in (0, 1).

    Examples
    --------
    >>> round(gaussian_sigma_classic(1.0, 0.5, 1e-5), 6)
    9.689611
    """
    sensitivity, eps, delta = _check_gaussian_args(sensitivity, eps, delta)
    if eps >= 1.0:
        raise ValueError(f"eps={eps} >= 1: the classic Gaussian mechanism is only proved for eps < 1; "
                         "use mechanism='analytic' (Balle & Wang 2018), valid for every eps > 0")
    return sensitivity * float(np.sqrt(2.0 * np.log(1.25 / delta))) / eps


def gaussian_sigma_analytic(sensitivity: float, eps: float, delta: float) -> float:
    r"""Smallest σ for which the Gaussian mechanism is (ε, δ)-DP (analytic Gaussian mechanism).

    By Balle & Wang (ICML 2018), Theorem 8 (see :func:`gaussian_delta`), the mechanism is
    (ε, δ)-DP iff :math:`\delta(\sigma) \le \delta`, where :math:`\delta(\sigma)` is the privacy
    profile. It is strictly decreasing in σ (a larger σ is a post-processing of a smaller one:
    add independent noise), from 1 as :math:`\sigma \to 0` to 0 as :math:`\sigma \to \infty`, so
    the smallest admissible σ is the unique root of :math:`\delta(\sigma) = \delta` — the
    calibration of Balle & Wang's Algorithm 1, here solved directly with Brent's method on
    :math:`\log(\sigma/\Delta)` (the profile depends on σ/Δ only) and
    :math:`\log\delta(\sigma) - \log\delta` as the function, bracketed by doubling/halving from
    the classic value. Brent's tolerances (``xtol = 1e-15`` on log σ, ``rtol`` at machine
    precision) put :math:`\delta(\sigma)` within about 1e-13 relative of δ; the returned σ is
    then nudged up one ulp at a time until :math:`\delta(\sigma) \le \delta` holds in floating
    point, so the guarantee is never claimed for a σ that misses it by rounding.

    Valid for every ε > 0, and for ε < 1 it is below :func:`gaussian_sigma_classic` (the classic
    bound is a sufficient, not necessary, condition).

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Δ > 0.
    eps : float
        ε > 0.
    delta : float
        δ in (0, 1).

    Examples
    --------
    >>> s = gaussian_sigma_analytic(1.0, 0.5, 1e-5)
    >>> s < gaussian_sigma_classic(1.0, 0.5, 1e-5)
    True
    >>> abs(gaussian_delta(s, 1.0, 0.5) - 1e-5) < 1e-14
    True
    """
    import scipy.optimize
    from scipy.special import log_ndtr

    sensitivity, eps, delta = _check_gaussian_args(sensitivity, eps, delta)
    log_delta = float(np.log(delta))

    def h(log_s: float) -> float:
        p = _gaussian_delta_unit(float(np.exp(log_s)), eps, log_ndtr)
        return (float(np.log(p)) if p > 0.0 else -800.0) - log_delta

    # Bracket around the classic formula's value (a sensible scale for every eps).
    guess = float(np.log(np.sqrt(2.0 * np.log(1.25 / delta)) / eps))
    lo = hi = guess
    for _ in range(2000):
        if h(lo) > 0.0:
            break
        lo -= np.log(2.0)
    for _ in range(2000):
        if h(hi) < 0.0:
            break
        hi += np.log(2.0)
    if not (h(lo) > 0.0 > h(hi)):  # pragma: no cover - the profile is monotone from 1 to 0
        raise RuntimeError(f"could not bracket the analytic Gaussian sigma for eps={eps}, "
                           f"delta={delta}")
    root = scipy.optimize.brentq(h, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps,
                                 maxiter=500)
    s = float(np.exp(root))
    sigma = sensitivity * s
    for _ in range(64):  # nudge up so that the inequality holds in floating point
        if _gaussian_delta_unit(sigma / sensitivity, eps, log_ndtr) <= delta:
            break
        sigma = float(np.nextafter(sigma, np.inf))
    return sigma


def gaussian_sigma(sensitivity: float, eps: float, delta: float,
                   mechanism: str = "analytic") -> float:
    """σ of the Gaussian mechanism: ``"analytic"`` (any ε > 0) or ``"classic"`` (ε < 1).

    See :func:`gaussian_sigma_analytic` and :func:`gaussian_sigma_classic` for the theorems.

    Examples
    --------
    >>> gaussian_sigma(1.0, 2.0, 1e-6) < gaussian_sigma(1.0, 1.0, 1e-6)
    True
    """
    if mechanism == "analytic":
        return gaussian_sigma_analytic(sensitivity, eps, delta)
    if mechanism == "classic":
        return gaussian_sigma_classic(sensitivity, eps, delta)
    raise ValueError(f"mechanism must be 'analytic' or 'classic', got {mechanism!r}")


def gaussian_noise(d: int, sigma: float, random_state=None) -> np.ndarray:
    """Draw ``d`` independent :math:`N(0, \\sigma^2)` values (the Gaussian mechanism's noise).

    Parameters
    ----------
    d : int
        Dimension (>= 1).
    sigma : float
        Standard deviation >= 0 (0 returns zeros: no privacy).
    random_state : int, numpy.random.Generator or None
        Passed through :func:`check_random_state` (a Generator is used and advanced).

    Examples
    --------
    >>> gaussian_noise(3, 0.0, random_state=0)
    array([0., 0., 0.])
    """
    d = check_int("d", d, low=1)
    sigma = check_real("sigma", sigma, low=0.0)
    rng = check_random_state(random_state)
    if sigma == 0.0:
        return np.zeros(d)
    return rng.normal(0.0, sigma, size=d)


def achlioptas_matrix(p: int, q: int, rng: np.random.Generator) -> np.ndarray:
    r"""Draw Achlioptas' sparse random projection matrix, scaled: ``(p, q)`` entries / sqrt(q).

    Entries are :math:`+\sqrt{3}` and :math:`-\sqrt{3}` with probability 1/6 each and 0 with
    probability 2/3 (Achlioptas, *Database-friendly random projections*, JCSS 66 (2003),
    Theorem 1.1), then divided by :math:`\sqrt{q}` so that :math:`E\|x^\top P\|^2 = \|x\|^2`.
    The matrix is drawn independently of the data: projecting rows with it is a public map.

    Parameters
    ----------
    p, q : int
        Input and output dimensions (>= 1).
    rng : numpy.random.Generator

    Examples
    --------
    >>> P = achlioptas_matrix(4, 2, np.random.default_rng(0))
    >>> P.shape, bool(np.all(np.isin(np.round(P * np.sqrt(2), 12), np.round([-np.sqrt(3), 0, np.sqrt(3)], 12))))
    ((4, 2), True)
    """
    p = check_int("p", p, low=1)
    q = check_int("q", q, low=1)
    u = rng.integers(0, 6, size=(p, q))
    values = np.where(u == 0, -np.sqrt(3.0), np.where(u == 1, np.sqrt(3.0), 0.0))
    return values / np.sqrt(q)
