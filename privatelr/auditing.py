r"""Black-box empirical privacy auditing: a statistical lower bound on the ε a mechanism spends.

A mechanism :math:`M` is :math:`(\varepsilon, \delta)`-differentially private when, for every pair
of neighbouring data sets :math:`D, D'` and every event :math:`E` of the output,

.. math::
    P[M(D) \in E] \le e^{\varepsilon}\, P[M(D') \in E] + \delta .

So any event :math:`E` and any neighbours give :math:`\varepsilon \ge \log\frac{P[M(D)\in E] -
\delta}{P[M(D')\in E]}`. :func:`audit` estimates the two probabilities by running the mechanism
many times on each neighbour and replaces them by one-sided Clopper–Pearson confidence bounds —
the lower bound of the numerator, the upper bound of the denominator — which turns the estimate
into a *lower bound on ε that holds with the stated confidence* (the approach of Ding, Wang, Wang,
Zhang & Kifer, *Detecting violations of differential privacy*, CCS 2018, and of Jagielski, Ullman &
Oprea, *Auditing differentially private machine learning*, NeurIPS 2020).

Procedure (``trials`` runs per neighbour, one :class:`numpy.random.Generator` for all of them):

1. run ``mechanism(D, rng)`` and ``mechanism(D_prime, rng)`` ``trials`` times each and split the
   runs into a *selection* half and an *evaluation* half;
2. on the selection half only, build a scalar statistic — by default the projection of the output
   on ``mean(M(D)) - mean(M(D'))`` — and search every threshold, both tails (``stat > t`` and
   ``stat < t``) and both directions (``D`` over ``D'`` and ``D'`` over ``D``) for the event with
   the largest bound — ranked by Clopper–Pearson bounds made simultaneous over all candidate
   events (Bonferroni), which prefers events with enough mass over a lucky far-tail event whose
   apparent evidence would not survive on fresh runs;
3. count that fixed event on the evaluation half and return
   :math:`\log\frac{\underline{p} - \delta}{\overline{q}}` (clipped at 0), where
   :math:`\underline{p}` and :math:`\overline{q}` are the ends of the two Clopper–Pearson
   intervals at level ``confidence``. Each end is one-sided at :math:`\alpha/2` with
   :math:`\alpha = 1 - \text{confidence}`, so by Bonferroni both hold together with probability at
   least ``confidence``, and then so does the bound.

Because the event is chosen on data independent of the counts, the selection cannot bias the
bound. A correct mechanism therefore gets ``eps_lower <= eps`` (its true ε) except with probability
at most ``1 - confidence``; a mechanism whose noise is too small gets a large ``eps_lower``.

What this can and cannot show: a bound above the claim is *proof* (at the stated confidence) that
the implementation violates its claim on these neighbours. A bound below the claim proves nothing
about other neighbours, other events or rare bad outputs: the auditor only sees the events its
statistic can express and needs of the order of :math:`e^{\varepsilon}` runs per unit of
probability it resolves. For mechanisms analysed in the worst case (objective perturbation) the
audited bound sits well below the claim even when everything is right.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import check_int, check_real
from .mechanisms import check_random_state
from .progress import progress_bar

__all__ = ["AuditResult", "audit", "clopper_pearson"]

_MAX_CANDIDATES = 2000


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit` with all the evidence behind the bound.

    Attributes
    ----------
    eps_lower : float
        Lower bound on the ε of the mechanism, valid with probability ``confidence`` (>= 0).
    eps_claimed, delta_claimed : float
        The claim that was audited.
    passed : bool
        ``eps_lower <= eps_claimed``: the audit found no violation (which is not a proof of
        privacy). False means the claim is refuted at the stated confidence.
    trials : int
        Runs of the mechanism per neighbouring data set (``2 * trials`` calls in all).
    n_select, n_eval : int
        Runs per neighbour used to choose the event and to count it.
    threshold : float
        Threshold of the chosen event on the statistic.
    event : str
        ``"statistic > threshold"`` or ``"statistic < threshold"``.
    direction : str
        Which probability is the numerator: ``"P[E|D] / P[E|D_prime]"`` or the reverse.
    counts : tuple of int
        Evaluation-half runs in the event, ``(on D, on D_prime)``.
    p_hat : tuple of float
        The corresponding frequencies ``counts / n_eval``.
    interval_D, interval_D_prime : tuple of float
        Clopper–Pearson intervals of the two event probabilities; each tail has probability
        ``(1 - confidence) / 2``, and the bound uses one end of each.
    confidence : float
    statistic : str
        Description of the statistic.
    selection_eps : float
        The bound the chosen event reached on the selection half (optimistic; for diagnosis).
    """

    eps_lower: float
    eps_claimed: float
    delta_claimed: float
    passed: bool
    trials: int
    n_select: int
    n_eval: int
    threshold: float
    event: str
    direction: str
    counts: tuple
    p_hat: tuple
    interval_D: tuple
    interval_D_prime: tuple
    confidence: float
    statistic: str
    selection_eps: float

    def summary(self) -> str:
        """One line: the bound, the claim and the verdict."""
        verdict = "no violation found" if self.passed else "CLAIM REFUTED"
        return (f"eps_lower={self.eps_lower:.4f} (claimed eps={self.eps_claimed:g}, "
                f"delta={self.delta_claimed:g}; {self.trials} trials per neighbour, "
                f"confidence {self.confidence:g}): {verdict}")


def clopper_pearson(k, n, alpha_tail: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact (Clopper–Pearson) binomial confidence bounds, vectorised over ``k``.

    The lower bound is the :math:`\alpha` quantile of :math:`\mathrm{Beta}(k, n-k+1)` (0 when
    ``k = 0``) and the upper bound the :math:`1-\alpha` quantile of :math:`\mathrm{Beta}(k+1,
    n-k)` (1 when ``k = n``); each holds with probability at least :math:`1-\alpha`.

    Parameters
    ----------
    k : int or array of int
        Successes, ``0 <= k <= n``.
    n : int
        Trials.
    alpha_tail : float
        Error probability of each one-sided bound.

    Returns
    -------
    (lower, upper) : arrays shaped like ``k``

    Examples
    --------
    >>> lo, hi = clopper_pearson(0, 100, 0.025)
    >>> float(lo), round(float(hi), 4)
    (0.0, 0.0362)
    """
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        from scipy.stats import beta as _beta  # lazy: keeps `import privatelr` fast

        lower = np.where(k > 0, _beta.ppf(alpha_tail, np.maximum(k, 1), n - k + 1), 0.0)
        upper = np.where(k < n, _beta.ppf(1.0 - alpha_tail, k + 1, np.maximum(n - k, 1)), 1.0)
    return lower, upper


def _eps_bound(lower_num, upper_den, delta):
    """``log((lower_num - delta) / upper_den)`` with no evidence mapped to 0 (vectorised)."""
    num = np.asarray(lower_num, dtype=np.float64) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(num > 0, np.log(np.maximum(num, 1e-300) / upper_den), 0.0)
    return np.maximum(out, 0.0)


def _run(mechanism, data, trials: int, rng, label: str, bar, shape):
    """Call ``mechanism(data, rng)`` ``trials`` times; return the flattened outputs (trials, k)."""
    out = None
    for i in range(trials):
        value = mechanism(data, rng)
        try:
            released = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"mechanism must return numbers (an array of fixed shape); at run "
                            f"{i} on {label} it returned {type(value).__name__}: {exc}") from None
        if shape[0] is None:
            shape[0] = released.shape
        elif released.shape != shape[0]:
            raise ValueError(f"mechanism returned outputs of different shapes: {shape[0]} "
                             f"and, at run {i} on {label}, {released.shape}; the released "
                             "output must have a fixed shape")
        flat = released.reshape(-1)
        if out is None:
            if flat.size == 0:
                raise ValueError("mechanism returned an empty output; it must release at least "
                                 "one number")
            out = np.empty((trials, flat.size))
        if not np.isfinite(flat).all():
            raise ValueError(f"mechanism returned NaN or infinite values at run {i} on {label}; "
                             "the auditor needs finite outputs")
        out[i] = flat
        if bar is not None:
            bar.update(1)
    return out


def _user_statistic(statistic, outputs: np.ndarray, label: str) -> np.ndarray:
    s = np.asarray(statistic(outputs))
    if s.dtype == object or not (np.issubdtype(s.dtype, np.number) or s.dtype == np.bool_):
        raise TypeError(f"statistic must return numbers, got dtype {s.dtype}")
    s = s.astype(np.float64)
    if s.shape != (outputs.shape[0],):
        raise ValueError(f"statistic must map the ({outputs.shape[0]}, {outputs.shape[1]}) array "
                         f"of outputs on {label} to one number per run, shape "
                         f"({outputs.shape[0]},); got shape {s.shape}")
    if not np.isfinite(s).all():
        raise ValueError(f"statistic returned NaN or infinite values on {label}")
    return s


def _select_event(sa: np.ndarray, sb: np.ndarray, delta: float, alpha_tail: float):
    """Best threshold event on the selection half: returns (threshold, tail, numerator, eps)."""
    m = sa.size
    pooled = np.unique(np.concatenate([sa, sb]))
    if pooled.size < 2:  # the statistic is constant: no event separates the two data sets
        return float(pooled[0]), ">", "D", 0.0
    cand = 0.5 * (pooled[:-1] + pooled[1:])
    if cand.size > _MAX_CANDIDATES:
        cand = cand[np.unique(np.linspace(0, cand.size - 1, _MAX_CANDIDATES).round().astype(int))]
    # Rank events by bounds that hold simultaneously over all 4 * len(cand) candidates
    # (Bonferroni): the plain per-event bound rewards the luckiest far-tail event (winner's curse)
    # and such events lose much of their apparent evidence on the evaluation half.
    alpha_tail = alpha_tail / (4 * cand.size)
    sa_sorted, sb_sorted = np.sort(sa), np.sort(sb)
    # Midpoints never tie with a selection value, so "<" and ">" counts are complements.
    below_a = np.searchsorted(sa_sorted, cand, side="left")
    below_b = np.searchsorted(sb_sorted, cand, side="left")
    above_a, above_b = m - below_a, m - below_b
    lo_ab, hi_ab = clopper_pearson(np.concatenate([above_a, below_a]), m, alpha_tail)
    lo_bb, hi_bb = clopper_pearson(np.concatenate([above_b, below_b]), m, alpha_tail)
    eps_d = _eps_bound(lo_ab, hi_bb, delta)        # P[E|D] over P[E|D']
    eps_dp = _eps_bound(lo_bb, hi_ab, delta)       # P[E|D'] over P[E|D]
    both = np.concatenate([eps_d, eps_dp])
    best = int(np.argmax(both))
    numerator = "D" if best < eps_d.size else "D_prime"
    idx = best % eps_d.size
    tail = ">" if idx < cand.size else "<"
    return float(cand[idx % cand.size]), tail, numerator, float(both[best])


def audit(mechanism, D, D_prime, *, eps_claimed: float, delta_claimed: float = 0.0,
          trials: int = 2000, statistic=None, confidence: float = 0.95, random_state=None,
          progress: bool | None = None) -> AuditResult:
    r"""Audit a randomised mechanism on two neighbouring data sets: a lower bound on its ε.

    :mod:`privatelr.auditing` describes the procedure and what the bound means.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, rng)`` runs the mechanism once on ``data`` with the
        :class:`numpy.random.Generator` ``rng`` (draw all randomness from it) and returns the
        released output as a number or array of fixed shape. To audit a choice among ``k``
        candidates (the exponential mechanism) return a one-hot vector: the default statistic
        then becomes a score per candidate.
    D, D_prime : any
        Two neighbouring data sets, passed to ``mechanism`` as they are. Choose them
        worst-case: small ``n`` and one record changed as much as the neighbour relation allows.
    eps_claimed : float
        The ε the mechanism claims (>= 0).
    delta_claimed : float
        The claimed δ in [0, 1); the bound becomes :math:`\log((\underline{p}-\delta)/\overline{q})`.
    trials : int
        Runs per data set (>= 10); half choose the event, half count it. The cost is
        ``2 * trials`` calls of ``mechanism``.
    statistic : callable, optional
        Maps the stacked outputs, an ``(m, k)`` array (each output flattened), to ``m`` numbers.
        Default: the projection on the difference of the mean outputs on ``D`` and ``D_prime``,
        estimated on the selection half.
    confidence : float
        Probability, in (0, 1), with which the bound holds (Clopper–Pearson, Bonferroni-split over
        the two probabilities).
    random_state : int, numpy.random.Generator or None
        One Generator is built from it and passed to every run; None uses OS entropy.
    progress : bool, optional
        Show a progress bar (requires tqdm, which privatelr does not depend on). The default
        shows one only when tqdm is installed and standard error is a terminal.

    Returns
    -------
    AuditResult

    Examples
    --------
    The Laplace mechanism on a counting query (sensitivity 1) at ε = 1:

    >>> def laplace(x, rng):
    ...     return x + rng.laplace(scale=1.0)
    >>> res = audit(laplace, 0.0, 1.0, eps_claimed=1.0, trials=4000, random_state=0)
    >>> res.passed, 0.5 < res.eps_lower <= 1.0
    (True, True)
    >>> broken = audit(lambda x, rng: x + rng.laplace(scale=0.1), 0.0, 1.0,
    ...                eps_claimed=1.0, trials=4000, random_state=0)
    >>> broken.passed
    False
    """
    if not callable(mechanism):
        raise TypeError(f"mechanism must be a callable mechanism(data, rng), got "
                        f"{type(mechanism).__name__}")
    if statistic is not None and not callable(statistic):
        raise TypeError("statistic must be None or a callable mapping an (m, k) array of outputs "
                        f"to m numbers, got {type(statistic).__name__}")
    eps_claimed = check_real("eps_claimed", eps_claimed, low=0.0, allow_inf=True)
    delta_claimed = check_real("delta_claimed", delta_claimed, low=0.0, high=1.0, high_open=True)
    trials = check_int("trials", trials, low=10)
    confidence = check_real("confidence", confidence, low=0.0, high=1.0, low_open=True,
                            high_open=True)
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be None, True or False, got {progress!r}")
    rng = check_random_state(random_state)
    alpha_tail = (1.0 - confidence) / 2.0

    bar = progress_bar(2 * trials, desc="audit", unit="run", enabled=progress)
    shape = [None]
    try:
        out_d = _run(mechanism, D, trials, rng, "D", bar, shape)
        out_dp = _run(mechanism, D_prime, trials, rng, "D_prime", bar, shape)
    finally:
        if bar is not None:
            bar.close()

    n_select = trials // 2
    n_eval = trials - n_select
    sel_d, ev_d = out_d[:n_select], out_d[n_select:]
    sel_dp, ev_dp = out_dp[:n_select], out_dp[n_select:]
    if statistic is None:
        direction = sel_d.mean(axis=0) - sel_dp.mean(axis=0)
        stats = [x @ direction for x in (sel_d, sel_dp, ev_d, ev_dp)]
        described = ("projection on mean(M(D)) - mean(M(D_prime)) estimated on the selection half"
                     f" ({direction.size} output coordinate{'s' if direction.size > 1 else ''})")
    else:
        stats = [_user_statistic(statistic, x, lab) for x, lab in
                 ((sel_d, "D"), (sel_dp, "D_prime"), (ev_d, "D"), (ev_dp, "D_prime"))]
        described = getattr(statistic, "__name__", None) or repr(statistic)
    s_sel_d, s_sel_dp, s_ev_d, s_ev_dp = stats

    threshold, tail, numerator, selection_eps = _select_event(
        s_sel_d, s_sel_dp, delta_claimed, alpha_tail)
    if tail == ">":
        k_d, k_dp = int(np.count_nonzero(s_ev_d > threshold)), int(np.count_nonzero(s_ev_dp > threshold))
    else:
        k_d, k_dp = int(np.count_nonzero(s_ev_d < threshold)), int(np.count_nonzero(s_ev_dp < threshold))
    lo, hi = clopper_pearson(np.array([k_d, k_dp]), n_eval, alpha_tail)
    if numerator == "D":
        eps_lower = float(_eps_bound(lo[0], hi[1], delta_claimed))
        ratio = "P[E|D] / P[E|D_prime]"
    else:
        eps_lower = float(_eps_bound(lo[1], hi[0], delta_claimed))
        ratio = "P[E|D_prime] / P[E|D]"
    return AuditResult(
        eps_lower=eps_lower, eps_claimed=eps_claimed, delta_claimed=delta_claimed,
        passed=bool(eps_lower <= eps_claimed), trials=trials, n_select=n_select, n_eval=n_eval,
        threshold=threshold, event=f"statistic {tail} threshold", direction=ratio,
        counts=(k_d, k_dp), p_hat=(k_d / n_eval, k_dp / n_eval),
        interval_D=(float(lo[0]), float(hi[0])), interval_D_prime=(float(lo[1]), float(hi[1])),
        confidence=confidence, statistic=described, selection_eps=selection_eps)
