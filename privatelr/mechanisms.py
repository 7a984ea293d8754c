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

import functools
import math
import numbers
from fractions import Fraction

import numpy as np

from ._validation import LOG_FLOAT_MAX, check_int, check_real, exp_or_raise

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

    A scale so large that the radius could overflow (``log s + log(4 (d + 12 sqrt(d) + 80))``
    beyond the largest double) raises ``ValueError`` before anything is drawn.

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
    room = 4.0 * (d + 12.0 * math.sqrt(d) + 80.0)  # radius > (d + 12 sqrt(d) + 80) s: p < 1e-19
    if math.log(scale) + math.log(room) >= LOG_FLOAT_MAX:
        raise ValueError(f"scale={scale!r} is too large: the noise norm, Gamma(d={d}, scale), "
                         "could overflow double precision; the calibration must give a smaller "
                         "noise scale (larger eps or lambda_, smaller data_norm or weights_bound)")
    direction = rng.standard_normal(d)
    norm = np.linalg.norm(direction)
    while norm == 0.0:  # probability zero, but never divide by it
        direction = rng.standard_normal(d)
        norm = np.linalg.norm(direction)
    radius = rng.gamma(shape=d, scale=scale)
    noise = direction * (radius / norm)
    if not np.isfinite(noise).all():  # pragma: no cover - excluded by the check above
        raise ValueError(f"the noise drawn with scale={scale!r} overflowed double precision")
    return noise


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


def laplace_count(count: float, eps: float, rng: np.random.Generator) -> float:
    r"""A count of sensitivity 1 released with the Laplace mechanism:
    :math:`c + \mathrm{Lap}(1/\varepsilon)` is ε-DP (Dwork, McSherry, Nissim & Smith, TCC 2006,
    Proposition 1). ``eps`` inf returns the count itself (not private).

    Examples
    --------
    >>> laplace_count(10, float("inf"), np.random.default_rng(0))
    10.0
    """
    eps = check_real("eps", eps, low=0.0, low_open=True, allow_inf=True)
    if math.isinf(eps):
        return float(count)
    return float(count) + float(rng.laplace(scale=1.0 / eps))


def random_stopping(run, m: int, stop_prob: float, rng: np.random.Generator):
    r"""Private selection by random stopping (Liu & Talwar, *Private selection from private
    candidates*, STOC 2019, Section 3).

    Repeat: draw a candidate ``j`` uniformly from ``range(m)``, run ``run(j)`` — an ε-DP
    mechanism that returns ``(score, output)``, the score computed privately inside it — and
    keep the pair of highest score so far; after each run, stop with probability ``stop_prob``
    (so the number of runs ``T`` is geometric with mean ``1/stop_prob``). Return the best
    ``(j, output, score)``.

    **Privacy.** Liu & Talwar prove that when each run is ε-DP, releasing the best
    ``(j, score, output)`` of a geometrically distributed number of runs is 3ε-DP, whatever
    ``stop_prob`` (their random stopping analysis; restated by Papernot & Steinke,
    *Hyperparameter tuning with Renyi differential privacy*, ICLR 2022, Section 1). The uniform
    draw of ``j`` is part of the run (a mechanism that picks its own hyperparameter at random is
    still ε-DP). Only the best run is released — its ``j``, output and score — and nothing else:
    the other runs are dropped here, and so is **the number of runs**. ``T`` is drawn
    independently of the data, but the theorem covers the best run with ``T`` *unseen*: its
    3ε comes from averaging over ``T``. Given ``T = t`` the release is the best of ``t``
    ε-DP runs, which is only ``tε``-DP — e.g. with one candidate whose score is a count of
    sensitivity 1 released by :func:`laplace_count` at ε/3, the event ``{T = t, score below
    a low threshold}`` has privacy loss exactly ``tε/3`` (13.3 at ε = 1, t = 40), unbounded in
    ``t``; ``(T, best)`` has no finite ε (``tests/privacy/test_random_stopping_release.py``
    computes it exactly). So ``T`` is neither returned nor stored, and the caller must not
    publish it either (e.g. by counting its own calls of ``run``, printing per run, or
    raising per-run warnings that the caller can count). The runs are not truncated
    (truncation would add a δ).

    Parameters
    ----------
    run : callable
        ``run(j) -> (score, output)``, ε-DP in the data for every ``j``.
    m : int
        Number of candidates.
    stop_prob : float
        γ in (0, 1].
    rng : numpy.random.Generator
        Drives the draws of ``j`` and the stopping (the runs draw their noise from it too).

    Returns
    -------
    (int, object, float)
        The chosen index, its output and its score (3ε-DP together).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> j, out, score = random_stopping(lambda j: (-abs(j - 2), j), 5, 0.2, rng)
    >>> 0 <= j < 5 and out == j
    True
    """
    m = check_int("m", m, low=1)
    stop_prob = check_real("stop_prob", stop_prob, low=0.0, high=1.0, low_open=True)
    best = None
    while True:
        j = int(rng.integers(m))
        score, output = run(j)
        if best is None or score > best[0]:
            best = (float(score), j, output)
        if rng.random() < stop_prob:
            break
    return best[1], best[2], best[0]


__all__ += ["laplace_count", "random_stopping"]


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


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_HALF_PI = math.sqrt(0.5 * math.pi)
_GL_X, _GL_W = np.polynomial.legendre.leggauss(12)  # Gauss-Legendre rule on [-1, 1]
_SIGMA_ROOM = 64.0  # a normal draw never exceeds 64 standard deviations in double precision
_LOG_DELTA_FLOOR = -1e300  # log delta below this is as good as -inf for every comparison


def _to_float(value: Fraction) -> float:
    """A non-negative rational as the nearest double (``inf`` beyond the largest one)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _mills(x: float) -> float:
    r"""Mills' ratio :math:`R(x) = \Phi(-x)/\varphi(x)` for ``x >= 0`` (``sqrt(pi/2) erfcx(x/sqrt 2)``)."""
    from scipy.special import erfcx

    return _SQRT_HALF_PI * float(erfcx(x / math.sqrt(2.0)))


def _log_delta_unit(s: Fraction, eps: float) -> float:
    r""":math:`\log\delta(s)`, the privacy profile for sensitivity 1 and noise ``s`` (exact).

    With :math:`a = 1/(2s)` and :math:`b = \varepsilon s` (so :math:`\varepsilon = 2ab`), the
    profile of :func:`gaussian_delta` is :math:`\delta = \Phi(a - b) - e^\varepsilon\Phi(-a-b)`.
    Two exact rewritings keep every digit at every scale:

    * :math:`e^\varepsilon\Phi(-a-b) = e^{2ab}\varphi(a+b)R(a+b) = \varphi(a-b)R(a+b)` with
      Mills' ratio :math:`R(x) = \Phi(-x)/\varphi(x)`, so for :math:`t = a - b < 0`,
      :math:`\delta = \varphi(t)\,[R(-t) - R(a+b)]` and for :math:`t \ge 0`,
      :math:`\delta = \mathrm{erf}(t/\sqrt2) + \varphi(t)[R(t) - R(a+b)]`: no :math:`e^\varepsilon`
      is formed, whatever ε. ``t`` and ``a + b`` are computed exactly from the rationals ``s``
      and ``eps`` and rounded once (for ε = 1e300, ``a`` and ``b`` agree to 150 digits and their
      difference is what matters).
    * For small ``a`` (``a <= 1/2``) and ``ε <= 1`` the two Φ terms nearly cancel; there
      :math:`\Phi(a-b) - \Phi(-a-b) = \varphi(b)\int_{-a}^{a} e^{bu - u^2/2}du` and
      :math:`(e^\varepsilon - 1)\Phi(-a-b) = \varphi(b)\,2\sinh(\varepsilon/2)e^{-a^2/2}R(a+b)`,
      so :math:`\delta = \varphi(b)[2\int_0^a\cosh(bu)e^{-u^2/2}du -
      2\sinh(\varepsilon/2)e^{-a^2/2}R(a+b)]`, the integral by a 12-point Gauss–Legendre rule
      (its integrand varies by less than :math:`e^{1/2}` on the interval: exact to rounding).

    Checked against 60- to 700-digit mpmath over ε in [5e-324, 1e300] and s in [1e-151, 1e300]:
    relative error below 2e-13 wherever δ is a normal double.
    """
    a_q = 1 / (2 * s)
    b_q = Fraction(eps) * s
    a, b = _to_float(a_q), _to_float(b_q)
    if a == math.inf:  # s -> 0: delta -> 1
        return 0.0
    if b == math.inf or a == 0.0:  # s -> inf, or delta < 2a phi(0) < 5e-324
        return _LOG_DELTA_FLOOR
    if a <= 0.5 and eps <= 1.0:
        if b > 40.0:  # delta < phi(40): far below every delta of interest; keep it monotone
            return -0.5 * b * b - _LOG_SQRT_2PI + math.log(2.0 * a) - 2.0 * math.log(b)
        u = 0.5 * a * (_GL_X + 1.0)
        integral = a * float(_GL_W @ (np.cosh(b * u) * np.exp(-0.5 * u * u)))
        bracket = integral - 2.0 * math.sinh(0.5 * eps) * math.exp(-0.5 * a * a) * _mills(a + b)
        return -0.5 * b * b - _LOG_SQRT_2PI + math.log(bracket)
    t = _to_float(abs(a_q - b_q))
    w = _to_float(a_q + b_q)
    if a_q < b_q:  # t < 0
        diff = _mills(t) - _mills(w)
        if not diff > 0.0:  # R(-t) and R(a+b) equal to rounding: delta < phi(40) anyway
            diff = _mills(t)
        return max(-0.5 * t * t - _LOG_SQRT_2PI + math.log(diff), _LOG_DELTA_FLOOR)
    from scipy.special import erf

    value = float(erf(t / math.sqrt(2.0))) + math.exp(-0.5 * t * t - _LOG_SQRT_2PI) * (
        _mills(t) - _mills(w))
    return math.log(value)


def _exp_fraction(log_s: float) -> Fraction:
    """``exp(log_s)`` as an exact rational, for any ``log_s`` (also beyond the double range)."""
    k = math.floor(log_s / math.log(2.0))
    m = Fraction(math.exp(log_s - k * math.log(2.0)))
    return m * 2 ** k if k >= 0 else m / 2 ** (-k)


_PROFILE_MARGIN = 1e-11  # relative; the profile is evaluated to about 2e-13 relative


def _meets(log_profile: float, delta: float, log_delta: float) -> bool:
    """``delta(sigma) <= delta (1 - 1e-11)`` both in logs and as :func:`gaussian_delta` reports
    it: the margin is 50 times the evaluation error, so the true profile is <= delta."""
    return (log_profile <= log_delta - _PROFILE_MARGIN
            and min(1.0, math.exp(log_profile)) <= delta * (1.0 - _PROFILE_MARGIN))


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

    It depends on :math:`s = \sigma/\Delta` only, taken exactly (as a rational), and is evaluated
    without forming :math:`e^\varepsilon` and without cancellation, accurate to about 1e-13
    relative for every ε from 5e-324 to 1e308 (:func:`_log_delta_unit` gives the rewriting).

    Parameters
    ----------
    sigma : float
        Noise standard deviation (> 0).
    sensitivity : float
        L2 sensitivity Δ (> 0).
    eps : float
        ε (>= 0).

    Returns
    -------
    float
        The smallest δ for which the mechanism is (ε, δ)-DP.

    Examples
    --------
    >>> round(gaussian_delta(1.0, 1.0, 1.0), 6)
    0.126937
    """
    sigma = check_real("sigma", sigma, low=0.0, low_open=True)
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_open=True)
    eps = check_real("eps", eps, low=0.0)
    return min(1.0, math.exp(_log_delta_unit(Fraction(sigma) / Fraction(sensitivity), eps)))


def _sigma_terms(sensitivity: float, eps: float, delta: float) -> dict:
    """The arguments' shares of log σ, to name the one that drives σ out of range."""
    return {"sensitivity": (sensitivity, math.log(sensitivity)), "eps": (eps, -math.log(eps)),
            "delta": (delta, -math.log(delta))}


_SIGMA_ADVICE = {"sensitivity": ("use a smaller sensitivity (rescale the query by a public "
                                 "constant)", "use a larger sensitivity"),
                 "eps": ("increase eps", "decrease eps"),
                 "delta": ("increase delta", "decrease delta")}


def _checked_sigma(log_sigma: float, sensitivity: float, eps: float, delta: float,
                   formula: str) -> None:
    """Refuse a σ that underflows to 0 or whose noise could overflow (64 σ must be finite)."""
    exp_or_raise(log_sigma, _sigma_terms(sensitivity, eps, delta), f"the Gaussian sigma {formula}",
                 _SIGMA_ADVICE, log_limit=LOG_FLOAT_MAX - math.log(_SIGMA_ROOM))


def gaussian_sigma_classic(sensitivity: float, eps: float, delta: float) -> float:
    r"""Noise scale of the classic Gaussian mechanism, valid for ``0 < eps < 1``.

    :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon` makes :math:`f(D) + N(0,
    \sigma^2 I)` :math:`(\varepsilon, \delta)`-DP for :math:`\varepsilon \in (0, 1)` (Dwork &
    Roth, *The Algorithmic Foundations of Differential Privacy*, 2014, Theorem 3.22 / A.1). The
    proof bounds the privacy loss tail with :math:`\varepsilon < 1`; for larger ε the formula is
    not a theorem (use :func:`gaussian_sigma_analytic`), so ``eps >= 1`` raises.

    The formula is evaluated as written, or from logarithms
    (:math:`\log\sigma = \log\Delta + \frac12\log(2(\ln 1.25 - \ln\delta)) - \log\varepsilon`)
    when ``1.25/delta`` overflows; a σ that underflows to 0 or whose draws could overflow
    (:math:`64\sigma` beyond the largest double) raises ``ValueError`` naming the argument.

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
    log_sigma = (math.log(sensitivity) + 0.5 * math.log(2.0 * (math.log(1.25) - math.log(delta)))
                 - math.log(eps))
    _checked_sigma(log_sigma, sensitivity, eps, delta, "sensitivity*sqrt(2 log(1.25/delta))/eps")
    ratio = 1.25 / delta
    sigma = sensitivity * float(np.sqrt(2.0 * np.log(ratio))) / eps if ratio < math.inf else 0.0
    if not (0.0 < sigma < math.inf and abs(math.log(sigma) - log_sigma) < 1e-12):
        sigma = math.exp(log_sigma)  # an intermediate over- or underflowed: the log is exact
    return sigma


def gaussian_sigma_analytic(sensitivity: float, eps: float, delta: float) -> float:
    r"""Smallest σ for which the Gaussian mechanism is (ε, δ)-DP (analytic Gaussian mechanism).

    By Balle & Wang (ICML 2018), Theorem 8 (see :func:`gaussian_delta`), the mechanism is
    (ε, δ)-DP iff :math:`\delta(\sigma) \le \delta`, where :math:`\delta(\sigma)` is the privacy
    profile. It is strictly decreasing in σ (a larger σ is a post-processing of a smaller one:
    add independent noise), from 1 as :math:`\sigma \to 0` to 0 as :math:`\sigma \to \infty`, so
    the smallest admissible σ is the unique root of :math:`\delta(\sigma) = \delta` — the
    calibration of Balle & Wang's Algorithm 1, here solved directly with Brent's method on
    :math:`L = \log(\sigma/\Delta)` (the profile depends on σ/Δ only) and
    :math:`\log\delta(\sigma) - \log\delta` as the function. The bracket grows from a first
    guess (the classic value, or :math:`0.4/\delta`, the small-ε limit, if smaller) to at most
    :math:`|L| \le 1000`, where the sign is certain for every admissible ε and δ; the profile is
    evaluated in log space by :func:`_log_delta_unit`, exact to about 1e-13 relative from
    ε = 5e-324 to 1e308. The root is taken for :math:`\delta(1 - 10^{-11})` (50 times the
    evaluation error) and σ is then nudged up, one ulp and then doubling steps, until the
    evaluated :math:`\delta(\sigma) \le \delta(1 - 10^{-11})` holds for the exact ratio σ/Δ, so
    the guarantee is never claimed for a σ that misses it by rounding; σ is larger than the
    exact smallest one by a relative 1e-11 or less. A σ that underflows to 0 or whose draws
    could overflow (64 σ beyond the largest double) raises ``ValueError`` naming the argument.

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
    return _analytic_sigma(*_check_gaussian_args(sensitivity, eps, delta))


@functools.lru_cache(maxsize=1024)
def _analytic_sigma(sensitivity: float, eps: float, delta: float) -> float:
    """:func:`gaussian_sigma_analytic` for checked arguments, remembered: a pure function of
    (Δ, ε, δ) whose root-finding costs about 1.5 ms, asked for again by every release at the
    same budget (simulations, audits, one-vs-rest fits)."""
    log_delta = math.log(delta)
    # first guess: the classic value, or the small-eps limit s = 0.4/delta if that is smaller
    guess = min(0.5 * math.log(2.0 * (math.log(1.25) - log_delta)) - math.log(eps),
                math.log(0.4) - log_delta)
    return _smallest_sigma(lambda s: _log_delta_unit(s, eps), delta, guess, sensitivity, eps,
                           "(the root of delta(sigma) = delta, Balle & Wang 2018)")


def _smallest_sigma(log_profile, delta: float, guess: float, sensitivity: float, eps: float,
                    what: str) -> float:
    r"""The smallest σ with ``log_profile(σ/Δ) <= log δ``, for a profile strictly decreasing in
    σ/Δ (passed as an exact rational): Brent's method on :math:`\log(\sigma/\Delta)` from a
    bracket grown around ``guess`` (within ±1000), the root taken for :math:`\delta(1 -
    10^{-11})`, then σ nudged up (one ulp, then doubling steps) until the evaluated profile
    meets the bound for the exact ratio; a σ that underflows or whose draws could overflow
    raises ``ValueError`` (:func:`gaussian_sigma_analytic` describes the method)."""
    import scipy.optimize

    log_delta = math.log(delta)

    def h(log_s: float) -> float:
        return log_profile(_exp_fraction(log_s)) - (log_delta - _PROFILE_MARGIN)

    guess = min(max(guess, -999.0), 999.0)
    lo, hi, step = guess - 1.0, guess + 1.0, 1.0
    while h(lo) <= 0.0 and lo > -1000.0:  # delta(s) <= delta already: move left
        hi, lo, step = lo, max(lo - 2.0 * step, -1000.0), 2.0 * step
    step = 1.0
    while h(hi) >= 0.0 and hi < 1000.0:  # delta(s) >= delta still: move right
        lo, hi, step = hi, min(hi + 2.0 * step, 1000.0), 2.0 * step
    root = scipy.optimize.brentq(h, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps,
                                 maxiter=500)
    _checked_sigma(math.log(sensitivity) + root, sensitivity, eps, delta, what)
    sigma = _to_float(Fraction(sensitivity) * _exp_fraction(root))
    exact = Fraction(sensitivity)
    ulps = 1
    while not _meets(log_profile(Fraction(sigma) / exact), delta, log_delta):
        sigma = float(sigma + ulps * (np.nextafter(sigma, math.inf) - sigma))  # nudge up
        ulps *= 2
    return sigma


def _log_objective_gaussian_delta(s: Fraction, eps: float) -> float:
    """log of :func:`objective_gaussian_delta` for the exact ratio ``s`` (noise sd per unit)."""
    two = _log_delta_unit(s / 2, eps)         # the vertex of norm 2
    one = _log_delta_unit(s, eps)             # the two vertices of norm 1
    return float(np.logaddexp(two, math.log(2.0) + one))


def objective_gaussian_delta(sigma: float, eps_eff: float) -> float:
    r"""Privacy profile of objective perturbation with Gaussian noise (unit ball, replace-one).

    **Setting** (the unit-ball reduction of :mod:`privatelr.calibration`): rows
    :math:`\|x_i\| \le 1`, a non-increasing margin loss with :math:`-1 \le \ell' \le 0` and
    :math:`0 \le \ell'' \le c`, weights :math:`a_i \in [0, 1]`, and the release
    :math:`w = \arg\min_w \sum_i a_i\ell(y_iw^\top x_i) + \frac{\Lambda}{2}\|w\|^2 + b^\top w`
    with :math:`b \sim N(0, \sigma^2 I_d)` — Kifer, Smith & Thakurta (COLT 2012) Algorithm 1's
    mechanism; neighbours replace one row (``n`` public), the relation of every estimator here.

    **Derivation** (the change of variables of Chaudhuri et al., JMLR 2011, proof of Theorem 9,
    with Gaussian noise as in Redberg, Koskela & Wang, NeurIPS 2023, who analyse add/remove
    neighbours). The map :math:`w \mapsto b_D(w) = -\sum_i a_i\ell_i'\,y_ix_i - \Lambda w` is a
    bijection, so the output density is :math:`p_D(w) = \nu(b_D(w))\,|\det\nabla b_D(w)|`.
    For neighbours :math:`D, D'` that differ in the last row, the privacy loss at ``w`` is
    :math:`L(w) = \log p_D(w)/p_{D'}(w) = Z + J` with

    (1) :math:`J = \log\frac{\det(M + a\ell''xx^\top)}{\det(M + a'\ell''{}'x'x'^\top)} \le
        \log(1 + c/\Lambda)`, :math:`M \succeq \Lambda I` the shared rows' part: the matrix
        determinant lemma gives :math:`\det(M + uu^\top) = \det M\,(1 + u^\top M^{-1}u)` with
        :math:`0 \le u^\top M^{-1}u \le c/\Lambda` (one rank-one term each way, hence
        :math:`\log(1 + c/\Lambda)`, not the :math:`2\log(1 + c/\Lambda)` of JMLR11's bound);

    (2) :math:`Z = (\|b + v\|^2 - \|b\|^2)/(2\sigma^2) = (b^\top v + \|v\|^2/2)/\sigma^2` with
        :math:`b = b_D(w)` and :math:`v = b_{D'}(w) - b_D(w) = t\,\tilde x - t'\tilde x'`,
        :math:`\tilde x = yx`, :math:`t = -a\ell' \in [0, 1]`. ``v`` depends on ``w``, but ``Z``
        is convex in ``v``, so it is at most its largest value on the vertices of the
        parallelogram: :math:`v_k \in \{0, \tilde x', -\tilde x, \tilde x' - \tilde x\}`,
        of norms 0, <= 1, <= 1, <= 2.

    Under ``D``, :math:`b \sim N(0, \sigma^2 I)`, and each :math:`Z_k` is distributed as the
    privacy loss of the Gaussian mechanism with sensitivity :math:`\|v_k\|`. The hockey-stick
    divergence is :math:`\delta(\varepsilon) = E[(1 - e^{\varepsilon - L})_+]`, increasing in
    ``L``; with :math:`\varepsilon' = \varepsilon - \log(1 + c/\Lambda)` and
    :math:`(1 - e^{\varepsilon' - \max_k Z_k})_+ \le \sum_k (1 - e^{\varepsilon' - Z_k})_+`,

    .. math::
        \delta(\varepsilon) \le \delta_G(\varepsilon'; 2/\sigma) + 2\,\delta_G(\varepsilon';
        1/\sigma) \qquad (3)

    where :math:`\delta_G(\varepsilon; \Delta/\sigma)` is the Gaussian mechanism's exact profile
    (:func:`gaussian_delta`, increasing in Δ). The same holds with ``D`` and ``D'`` exchanged.
    This function returns the right-hand side of (3) for ``eps_eff`` = ε'.

    Parameters
    ----------
    sigma : float
        Noise standard deviation per coordinate, in unit-ball units (> 0).
    eps_eff : float
        ε' = ε minus the Jacobian term (>= 0).

    Examples
    --------
    >>> d = objective_gaussian_delta(8.0, 0.9)
    >>> gaussian_delta(8.0, 2.0, 0.9) < d < 3 * gaussian_delta(8.0, 2.0, 0.9)
    True
    """
    sigma = check_real("sigma", sigma, low=0.0, low_open=True)
    eps_eff = check_real("eps_eff", eps_eff, low=0.0)
    return min(1.0, math.exp(_log_objective_gaussian_delta(Fraction(sigma), eps_eff)))


def objective_gaussian_sigma(eps_eff: float, delta: float) -> float:
    r"""Smallest σ (unit-ball units) with :func:`objective_gaussian_delta` ``<= delta``.

    The bound (3) is a sum of Gaussian profiles, each strictly decreasing in σ from 1 to 0, so
    the smallest admissible σ is the unique root of (3) = δ; it is found as in
    :func:`gaussian_sigma_analytic` (Brent's method on :math:`\log\sigma`, the root taken for
    :math:`\delta(1 - 10^{-11})`, then nudged up until the evaluated bound holds for the exact
    σ). Checked against a 50-digit mpmath evaluation of (3) in the tests (to 1e-8 relative).

    Examples
    --------
    >>> s = objective_gaussian_sigma(0.9, 1e-6)
    >>> objective_gaussian_delta(s, 0.9) <= 1e-6 < objective_gaussian_delta(s * 0.999, 0.9)
    True
    """
    eps_eff = check_real("eps_eff", eps_eff, low=0.0, low_open=True)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    return _objective_sigma(eps_eff, delta)


@functools.lru_cache(maxsize=1024)
def _objective_sigma(eps_eff: float, delta: float) -> float:
    """:func:`objective_gaussian_sigma` for checked arguments, remembered (as
    :func:`_analytic_sigma`): a pure function of (ε', δ) whose root-finding costs about 3 ms,
    asked for again by every Gaussian or AMP fit at the same budget (audits, simulations)."""
    log_delta = math.log(delta)
    # first guess: near the Gaussian mechanism's for sensitivity 2
    guess = math.log(2.0) + min(0.5 * math.log(2.0 * (math.log(3.75) - log_delta))
                                - math.log(eps_eff), math.log(0.4) - log_delta)
    return _smallest_sigma(lambda s: _log_objective_gaussian_delta(s, eps_eff), delta, guess,
                           1.0, eps_eff, "(the root of the objective-perturbation profile = "
                           "delta)")


# -- Rényi differential privacy curves (for the accountant's composition) ---------------------
def rdp_pure(eps: float, orders) -> np.ndarray:
    r"""Rényi DP of any ε-DP mechanism at ``orders`` (each > 1).

    Every ε-DP pair of output laws is a post-processing of binary randomized response with
    :math:`p = e^\varepsilon/(1 + e^\varepsilon)` (Kairouz, Oh & Viswanath, ICML 2015,
    Theorem 2.1), so by data processing its Rényi divergence of order α is at most
    randomized response's (Mironov, CSF 2017, Table II):
    :math:`\frac{1}{\alpha-1}\log\frac{e^{\alpha\varepsilon} + e^{(1-\alpha)\varepsilon}}
    {1 + e^\varepsilon}`, which is also at most ε.

    Examples
    --------
    >>> bool(abs(rdp_pure(1.0, [2.0])[0] - math.log((math.e ** 2 + math.e ** -1) / (1 + math.e))) < 1e-15)
    True
    """
    a = np.asarray(orders, dtype=float)
    value = (np.logaddexp(a * eps, (1.0 - a) * eps) - np.logaddexp(0.0, eps)) / (a - 1.0)
    return np.minimum(value, eps)


def rdp_gaussian(noise_multiplier: float, orders) -> np.ndarray:
    r"""Rényi DP of the Gaussian mechanism with σ/Δ = ``noise_multiplier``:
    :math:`\alpha/(2 z^2)` (Mironov, CSF 2017, Proposition 7).

    Examples
    --------
    >>> rdp_gaussian(2.0, [2.0, 10.0]).tolist()
    [0.25, 1.25]
    """
    a = np.asarray(orders, dtype=float)
    return a / (2.0 * noise_multiplier ** 2)


def rdp_objective_gaussian(sigma: float, jacobian: float, orders) -> np.ndarray:
    r"""Rényi DP of objective perturbation with Gaussian noise (unit-ball σ, Jacobian term).

    With the privacy loss :math:`L \le J + \max_k Z_k` of :func:`objective_gaussian_delta`
    (steps (1)–(2)) and :math:`E[e^{(\alpha-1)Z_k}] = e^{\alpha(\alpha-1)\|v_k\|^2/(2\sigma^2)}`
    (:math:`Z_k` is normal with mean :math:`\|v_k\|^2/(2\sigma^2)` and twice that variance),
    :math:`e^{(\alpha-1)\max_k Z_k} \le \sum_k e^{(\alpha-1)Z_k}` gives

    .. math::
        D_\alpha \le J + \frac{1}{\alpha-1}\log\big(1 + 2e^{\alpha(\alpha-1)/(2\sigma^2)}
        + e^{2\alpha(\alpha-1)/\sigma^2}\big). \qquad (4)

    Examples
    --------
    >>> r = rdp_objective_gaussian(10.0, 0.01, [2.0, 32.0])
    >>> bool((r > rdp_gaussian(5.0, [2.0, 32.0])).all())
    True
    """
    a = np.asarray(orders, dtype=float)
    t = a * (a - 1.0) / (2.0 * sigma ** 2)
    terms = np.logaddexp(np.logaddexp(0.0, math.log(2.0) + t), 4.0 * t)
    return jacobian + terms / (a - 1.0)


__all__ += ["objective_gaussian_delta", "objective_gaussian_sigma", "rdp_pure", "rdp_gaussian",
            "rdp_objective_gaussian"]


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
    if math.log(sigma) + math.log(_SIGMA_ROOM) >= LOG_FLOAT_MAX:
        raise ValueError(f"sigma={sigma!r} is too large: normal draws of that scale could overflow "
                         f"double precision (sigma must be below {math.exp(LOG_FLOAT_MAX) / _SIGMA_ROOM:.3g})")
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
