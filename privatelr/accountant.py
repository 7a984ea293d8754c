r"""A privacy-budget accountant: exact pure-ε sums, Rényi composition of Gaussian releases.

**Sequential composition** (Dwork, McSherry, Nissim & Smith, TCC 2006; Dwork & Roth, *The
Algorithmic Foundations of Differential Privacy*, 2014, Theorem 3.16): running mechanisms that are
:math:`(\varepsilon_j, \delta_j)`-differentially private on the same data, each possibly chosen
after seeing the previous outputs, is :math:`(\sum_j \varepsilon_j, \sum_j \delta_j)`-differentially
private. :class:`PrivacyAccountant` adds the spends and refuses any spend that would take either
total past the budget. The advanced composition theorems give smaller totals for many small
spends; they are not used here (the basic sum is always valid, never optimistic).

**Parallel composition** (McSherry, SIGMOD 2009, Theorem 4): mechanisms run on *disjoint* subsets
of the data, fixed by public row positions and not by the data's values, cost the maximum of
their ε, not the sum (:func:`spend_parallel` with ``by="positions"``; a split by a data value is
charged by sequential composition, ``by="values"``). A procedure that does this internally — like
private tuning, which fits one candidate per disjoint split and then picks one with the
exponential mechanism — reports the total it spends and is charged as **one** spend of that
total; the accountant does not see, and does not need to see, the splits.

Spends are accepted up to a relative slack of ``1e-12`` of the budget (the comparison is made on the
exactly-rounded difference ``spent + new - budget``, :func:`math.fsum`, so it cannot overflow for
any budget up to 1.8e308), so that a budget split into ``k`` equal floating-point parts can be spent
in full; the slack is far below any meaningful change of privacy.

**Rényi composition** (Mironov, *Rényi differential privacy*, CSF 2017, Proposition 1). A
release that comes with a Rényi curve :math:`\rho(\alpha)` (the Gaussian methods of
:mod:`privatelr.erm`, WALR's Gaussian noisy dot product, AMP) is recorded with it; Rényi curves
add under adaptive composition, and the total is turned into (ε, δ) at the δ asked for by
the conversion of Canonne, Kamath & Steinke (2020) / Balle et al. (2020) as implemented by
Google's ``dp-accounting`` (``dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon``).
:meth:`PrivacyAccountant.spent()` reports the smallest ε among valid compositions: the basic
sum of every (ε_j, δ_j); and the exact sum of the pure-ε spends (objective and output
perturbation, the exponential and Laplace mechanisms, DPpack tuning: ε-DP, δ = 0) and of the
(ε_j, δ_j) spends without a curve, plus the Rényi composition of the curves converted at the δ
left; and the Rényi composition of everything, the pure spends entering with the curve of
randomized response (:func:`privatelr.mechanisms.rdp_pure`). A budget with δ = 0 admits only
pure-ε spends.

**Neighbour relation.** Every mechanism of privatelr is analysed for data sets of the same,
public size ``n`` that differ in one row (replace-one), and so is each curve recorded here;
composition and conversion do not change the relation. The exception is WALR's noisy dot
product, which is label-DP: its neighbours differ in one *label*. A label change is a special
replacement, so every spend of a ledger holds for label neighbours and the ledger's total is a
guarantee for them; against a changed feature row, a ledger that holds a label-DP spend proves
nothing about that spend (its note says ``label-DP``).

A non-private computation has no finite ε and can never fit a budget: ``spend(inf)`` raises
``ValueError``, and so does a non-private fit (``eps=0`` or ``eps=inf`` in
:func:`privatelr.erm.fit`) given an accountant.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

from ._validation import check_real
from .exceptions import BudgetExceededError

__all__ = ["PrivacyAccountant", "Spend", "BudgetExceededError", "require_budget", "RDP_ORDERS",
           "spend_parallel"]

_SLACK = 1e-12
#: The Rényi orders at which curves are recorded and composed.
RDP_ORDERS = tuple([1.0 + k / 8.0 for k in range(1, 80)] + [float(a) for a in range(11, 64)]
                   + [64.0, 80.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 1024.0])


@dataclass(frozen=True)
class Spend:
    """One entry of the ledger: what was spent and why."""

    eps: float
    delta: float
    note: str
    rdp: tuple | None = field(default=None, repr=False)  # Rényi curve at RDP_ORDERS, if any


class PrivacyAccountant:
    r"""Track the (ε, δ) privacy budget spent on one data set (basic sequential composition).

    Parameters
    ----------
    epsilon : float
        Total ε budget, finite and >= 0.
    delta : float
        Total δ budget in [0, 1).

    Attributes
    ----------
    epsilon, delta : float
        The budget.
    remaining : tuple of float
        ``(ε left, δ left)`` at the budget's δ, never negative (see :meth:`spent`).
    ledger : tuple of Spend
        Every spend in order, with its note.

    Notes
    -----
    Pass the accountant to a fitting function (``privatelr.erm.fit(..., accountant=acc)``): the
    function calls :meth:`check` before it reads the data and :meth:`spend` once its arguments
    are valid, so a fit that would exceed the budget raises :class:`BudgetExceededError` with
    nothing spent and nothing computed. :meth:`check` and :meth:`spend` are safe to call from
    several threads.

    An accountant is an identity, not a value: ``copy.copy`` and ``copy.deepcopy`` return the
    accountant itself, so an estimator cloned by scikit-learn (``sklearn.base.clone``,
    ``GridSearchCV``, ``cross_val_score``) charges the one ledger, never a copy of it. Pickling
    raises ``TypeError`` (a copy in a worker process would spend a ledger the original never
    sees): run such searches in one process.

    Examples
    --------
    >>> acc = PrivacyAccountant(1.0)
    >>> _ = acc.spend(0.25, note="first model")
    >>> _ = acc.spend(0.5, note="second model")
    >>> acc.remaining
    (0.25, 0.0)
    >>> import copy
    >>> copy.deepcopy(acc) is acc
    True
    >>> acc.spend(0.5)
    Traceback (most recent call last):
    ...
    privatelr.exceptions.BudgetExceededError: spending eps=0.5, delta=0 would exceed the privacy budget: eps spent 0.75 + 0.5 > budget 1 (remaining eps=0.25, delta=0)
    """

    def __init__(self, epsilon: float, delta: float = 0.0):
        self._epsilon = check_real("epsilon", epsilon, low=0.0)
        self._delta = check_real("delta", delta, low=0.0, high=1.0, high_open=True)
        self._entries: list[Spend] = []
        self._lock = threading.Lock()

    # -- read-only views -----------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        return self._epsilon

    @property
    def delta(self) -> float:
        return self._delta

    def spent(self, delta: float | None = None) -> tuple[float, float]:
        """``(ε, δ)`` spent so far, at ``delta``.

        By default a ledger of spends without Rényi curves reports its sums (ε_j and δ_j added,
        a pure-ε ledger δ = 0), and one with curves reports ε at the budget's δ.

        The ε is the smallest of the valid compositions described in the module docstring;
        ``inf`` when no composition reaches ``delta`` (e.g. Gaussian releases at δ = 0).

        Examples
        --------
        >>> acc = PrivacyAccountant(2.0, delta=1e-6)
        >>> _ = acc.spend(0.5)
        >>> acc.spent()
        (0.5, 0.0)
        """
        return _composed(self._entries, self._delta if delta is None else check_real(
            "delta", delta, low=0.0, high=1.0, high_open=True), delta is None)

    @property
    def remaining(self) -> tuple[float, float]:
        """``(ε left at the budget's δ, δ left)``; the δ committed is the sum of the spends
        without a Rényi curve (those with one are converted at the budget's δ)."""
        eps, delta = self.spent()
        if self._curves():
            delta = _total(e.delta for e in self._entries if e.rdp is None)
        return (max(0.0, math.fsum([self._epsilon, -eps])),
                max(0.0, math.fsum([self._delta, -delta])))

    @property
    def ledger(self) -> tuple[Spend, ...]:
        return tuple(self._entries)

    # -- identity, not value ---------------------------------------------------------------
    # A ledger that could be copied could be spent twice: scikit-learn's ``clone`` (and so
    # every search and cross-validation) deep-copies an estimator's parameters, and a copy of
    # the accountant would charge a second, private ledger while the original stayed untouched.
    # Copying therefore returns the accountant itself, and pickling (a copy into another
    # process, e.g. joblib's worker processes) is refused rather than silently forked.
    def __copy__(self) -> "PrivacyAccountant":
        return self

    def __deepcopy__(self, memo) -> "PrivacyAccountant":
        return self

    def __reduce__(self):
        raise TypeError(
            "a PrivacyAccountant is one ledger and cannot be pickled: a copy in another process "
            "would record spends the original never sees. Fit in this process (n_jobs=None or "
            "a threading backend), or keep the accountant out of what is pickled")

    def __repr__(self) -> str:
        eps, delta = self.spent()
        return (f"PrivacyAccountant(epsilon={self._epsilon:g}, delta={self._delta:g}; spent "
                f"eps={eps:g}, delta={delta:g} in {len(self._entries)} spend(s))")

    # -- checking and spending -----------------------------------------------------------
    @staticmethod
    def _validate(eps, delta) -> tuple[float, float]:
        eps = check_real("eps", eps, low=0.0, allow_inf=True)
        if math.isinf(eps):
            raise ValueError("eps=inf (a non-private computation) can never fit a privacy budget; "
                             "run it without an accountant if you accept that it is not private")
        delta = check_real("delta", delta, low=0.0, high=1.0, high_open=True)
        return eps, delta

    def _shortfall(self, eps: float, delta: float, rdp=None) -> str | None:
        spent_eps, spent_delta = self.spent()
        parts = []
        if rdp is None and not self._curves():
            if _exceeds(spent_eps, eps, self._epsilon):
                parts.append(f"eps spent {spent_eps:g} + {eps:g} > budget {self._epsilon:g}")
            if _exceeds(spent_delta, delta, self._delta):
                parts.append(f"delta spent {spent_delta:g} + {delta:g} > budget {self._delta:g}")
        else:
            after = self._entries + [Spend(eps, delta, "", rdp)]
            total, total_delta = _composed(after, self._delta, True)
            if total_delta > self._delta * (1.0 + _SLACK) or _exceeds(total, 0.0, self._epsilon):
                parts.append(f"the composition would reach eps={total:g} at delta="
                             f"{max(total_delta, self._delta):g}, past the budget "
                             f"(eps={self._epsilon:g}, delta={self._delta:g})"
                             + ("; a Gaussian release needs a budget with delta > 0"
                                if self._delta == 0 else ""))
        if not parts:
            return None
        rem_eps, rem_delta = self.remaining
        return (f"spending eps={eps:g}, delta={delta:g} would exceed the privacy budget: "
                f"{'; '.join(parts)} (remaining eps={rem_eps:g}, delta={rem_delta:g})")

    def _curves(self) -> bool:
        return any(e.rdp is not None for e in self._entries)

    def check(self, eps: float, delta: float = 0.0) -> None:
        """Raise :class:`BudgetExceededError` if ``(eps, delta)`` does not fit; spend nothing.

        Parameters
        ----------
        eps : float
            ε of the intended computation (finite, >= 0).
        delta : float
            δ of the intended computation, in [0, 1).

        Examples
        --------
        >>> PrivacyAccountant(1.0).check(0.5)
        """
        eps, delta = self._validate(eps, delta)
        message = self._shortfall(eps, delta)
        if message is not None:
            raise BudgetExceededError(message)

    def can_spend(self, eps: float, delta: float = 0.0) -> bool:
        """True when ``(eps, delta)`` fits in what remains (arguments validated as in :meth:`check`).

        Examples
        --------
        >>> PrivacyAccountant(1.0).can_spend(1.5)
        False
        """
        eps, delta = self._validate(eps, delta)
        return self._shortfall(eps, delta) is None

    def spend(self, eps: float, delta: float = 0.0, *, note: str = "", rdp=None) -> Spend:
        """Record a spend of ``(eps, delta)``, or raise :class:`BudgetExceededError` first.

        The check and the record happen atomically: if this raises, nothing was spent.

        Parameters
        ----------
        eps : float
            ε spent (finite, >= 0; 0 is recorded, e.g. for a post-processing step).
        delta : float
            δ spent, in [0, 1).
        note : str
            What the spend was for (kept in :attr:`ledger`).
        rdp : callable, optional
            The release's Rényi curve, ``rdp(orders) -> array`` (orders > 1), when it has one
            (a Gaussian mechanism); it is recorded at :data:`RDP_ORDERS` and composed by Rényi
            DP. ``(eps, delta)`` must be a guarantee of the release on its own.

        Returns
        -------
        Spend
            The ledger entry.

        Examples
        --------
        >>> acc = PrivacyAccountant(2.0, delta=1e-6)
        >>> acc.spend(1.0, 1e-7, note="model A")
        Spend(eps=1.0, delta=1e-07, note='model A')
        >>> acc.spent()
        (1.0, 1e-07)
        """
        eps, delta = self._validate(eps, delta)
        if not isinstance(note, str):
            raise TypeError(f"note must be a string, got {type(note).__name__}")
        curve = None
        if rdp is not None:
            import numpy as np

            curve = tuple(float(v) for v in np.asarray(rdp(np.array(RDP_ORDERS)), dtype=float))
            if len(curve) != len(RDP_ORDERS) or not all(v >= 0 for v in curve):
                raise ValueError("rdp must return one non-negative value per order")
        with self._lock:
            message = self._shortfall(eps, delta, curve)
            if message is not None:
                raise BudgetExceededError(message)
            entry = Spend(eps=eps, delta=delta, note=note, rdp=curve)
            self._entries.append(entry)
        return entry


#: How :func:`spend_parallel`'s parts were split (``by=``).
SPLITS = ("positions", "values")


def spend_parallel(accountant: "PrivacyAccountant", parts, *, by: str,
                   note: str = "") -> Spend:
    r"""Charge mechanisms run on separate parts of the rows as one spend.

    ``by`` says how the rows were split, and it must be said (there is no default):

    * ``by="positions"`` — **parallel composition** (McSherry 2009, Theorem 4): the parts are a
      partition fixed by the public row positions (or by any public fact fixed before the
      private values are seen), not by the data's values: rows ``0 .. n/2 - 1`` and ``n/2 ..
      n - 1``, or row ``i`` to part ``i mod k``. A neighbour (one row replaced, ``n`` public)
      then changes exactly one part, in place, and every part keeps its size, so the cost is
      the largest part's: ε and δ the maxima, the Rényi curve the pointwise maximum.
    * ``by="values"`` — **sequential composition**: the charge of parts split by a data value
      (one part per region, per class, per value of a column), whose ε and δ (and Rényi
      curves) add up. A changed row can leave one part and join another, so *two* parts
      change and the maximum undercharges. This is the right charge when each part is a
      mechanism that is DP with respect to the whole data set (e.g. a private count over the
      rows of each region). A privatelr *fit* on the rows of one value is not such a mechanism
      by itself: it is analysed for a public ``n`` and publishes it, and a row that changes its
      part changes two parts' ``n`` — neighbours are told apart with certainty whatever is
      charged. Per-value fits are covered only when each part's size is a public fact of
      both neighbours (a stratum whose size is fixed by design, so no neighbour moves a row
      between parts: then the split is a fixed partition and ``by="positions"`` applies).

    ``parts`` is a sequence of ``(eps, delta)`` or ``(eps, delta, rdp)``; give every part a
    Rényi curve, or none.
    ``accountant`` is the :class:`PrivacyAccountant` to charge (it refuses, with
    :class:`BudgetExceededError`, a spend beyond its budget).

    Examples
    --------
    >>> acc = PrivacyAccountant(2.0)
    >>> spend_parallel(acc, [(0.5, 0.0), (0.8, 0.0)], by="positions",
    ...                note="one model per half of the rows, split by row number")
    Spend(eps=0.8, delta=0.0, note='one model per half of the rows, split by row number')
    >>> spend_parallel(acc, [(0.5, 0.0), (0.7, 0.0)], by="values",
    ...                note="a private count per region")
    Spend(eps=1.2, delta=0.0, note='a private count per region')
    """
    if not isinstance(by, str) or by not in SPLITS:
        raise ValueError(f"by must be 'positions' (a partition fixed by public row positions: "
                         f"parallel composition, the largest part is charged) or 'values' (a "
                         f"split by a data value, where a changed row can move between parts: "
                         f"sequential composition, the parts add up), got {by!r}")
    parts = [tuple(p) + (None,) * (3 - len(p)) for p in parts]
    if not parts:
        raise ValueError("parts must hold at least one (eps, delta) pair")
    combine = max if by == "positions" else _total
    eps = combine(p[0] for p in parts)
    delta = combine(p[1] for p in parts)
    curves = [p[2] for p in parts if p[2] is not None]
    if curves and len(curves) != len(parts):
        raise ValueError("give every part a Rényi curve, or none")
    rdp = None
    if curves:
        def rdp(orders):
            import numpy as np

            each = [np.asarray(c(orders), dtype=float) for c in curves]
            return np.max(each, axis=0) if by == "positions" else np.sum(each, axis=0)
    return accountant.spend(eps, delta, note=note, rdp=rdp)


def _composed(entries, delta: float, at_least_own: bool) -> tuple[float, float]:
    """``(ε, δ)`` of the entries composed (module docstring), at ``delta``. With
    ``at_least_own`` (the default report) a ledger without curves reports its basic sums, and
    one whose curves cannot reach ``delta`` its basic sums too.

    The compositions tried: every (ε_j, δ_j) added; the curves by Rényi DP and the rest added;
    the same with the pure spends entering the Rényi sum by randomized response's curve; and
    the curves but the newest by Rényi DP, the newest added (what a budget check made before a
    spend's curve was known assumes for the spend before it). A spend whose check passed can
    still, rarely and only at the edge of the budget, be refused by the composition: then
    nothing is released (the fitting functions spend before they draw any noise)."""
    basic_eps, basic_delta = (_total(e.eps for e in entries), _total(e.delta for e in entries))
    if not any(e.rdp is not None for e in entries):
        if at_least_own:
            return basic_eps, basic_delta
        return (basic_eps if basic_delta <= delta * (1.0 + _SLACK) else math.inf), delta
    best = basic_eps if basic_delta <= delta * (1.0 + _SLACK) else math.inf
    if delta > 0:
        import numpy as np

        from .mechanisms import rdp_pure

        positions = [i for i, e in enumerate(entries) if e.rdp is not None]
        for grouped in {len(positions), len(positions) - 1} - {0}:
            chosen = set(positions[:grouped])
            curve = np.sum([entries[i].rdp for i in positions[:grouped]], axis=0)
            others = [e for j, e in enumerate(entries) if j not in chosen]
            pure = [e for e in others if e.delta == 0 and e.rdp is None]
            approx = [e for e in others if not (e.delta == 0 and e.rdp is None)]
            rest = math.fsum([delta] + [-e.delta for e in approx])
            if rest <= 0:
                continue
            best = min(best, _total(e.eps for e in others) + _rdp_to_eps(curve, rest))
            if pure:
                whole = curve + np.sum([rdp_pure(e.eps, RDP_ORDERS) for e in pure], axis=0)
                best = min(best, _total(e.eps for e in approx) + _rdp_to_eps(whole, rest))
    if at_least_own and best == math.inf:
        return basic_eps, basic_delta
    return best, delta


def _rdp_to_eps(curve, delta: float) -> float:
    """ε at ``delta`` of a composed Rényi curve (dp-accounting's conversion)."""
    try:
        from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
    except ImportError as exc:   # pragma: no cover - a core dependency
        raise ImportError("composing Gaussian releases needs dp-accounting (pip install "
                          "dp-accounting)") from exc
    return float(compute_epsilon(RDP_ORDERS, list(curve), delta)[0])


def _total(values) -> float:
    """Exactly rounded sum of non-negative spends (``inf`` if it exceeds the largest double)."""
    try:
        return math.fsum(values)
    except OverflowError:  # only near 1.8e308, where no real budget lives
        return math.inf


def _exceeds(spent: float, amount: float, budget: float) -> bool:
    """``spent + amount > budget (1 + slack)``, decided on the exact difference.

    ``fsum([-budget, spent, amount])`` starts from ``-budget`` so no partial sum overflows even
    for budgets near 1.8e308 (``spent`` never exceeds the budget by more than the slack), and
    ``budget * slack`` cannot overflow.
    """
    if math.isinf(spent):
        return True
    try:
        return math.fsum([-budget, spent, amount]) > budget * _SLACK
    except OverflowError:  # pragma: no cover - excluded by the order of the terms
        return True


def require_budget(accountant, eps, delta: float = 0.0, *, name: str = "accountant") -> None:
    """Validate ``accountant`` and check, spending nothing, that a private ``(eps, delta)`` fits.

    For fitting functions that accept ``accountant=``: call this before reading the data, then
    ``accountant.spend(eps, delta, note=...)`` once every argument is valid. A non-private
    request (``eps`` 0 or inf, privatelr's convention for "no privacy") raises ``ValueError``:
    it has no finite cost and can never fit a budget.

    Examples
    --------
    >>> require_budget(PrivacyAccountant(1.0), 0.5)
    >>> require_budget(PrivacyAccountant(1.0), 0.0)
    Traceback (most recent call last):
    ...
    ValueError: eps=0 requests a non-private fit, which has no finite privacy cost and cannot be charged to accountant; pass eps > 0 (finite), or drop accountant= for a non-private fit
    """
    if not isinstance(accountant, PrivacyAccountant):
        raise TypeError(f"{name} must be a privatelr.PrivacyAccountant or None, got "
                        f"{type(accountant).__name__}")
    e = check_real("eps", eps, low=0.0, allow_inf=True)
    if e == 0.0 or math.isinf(e):
        raise ValueError(f"eps={e:g} requests a non-private fit, which has no finite privacy cost "
                         f"and cannot be charged to {name}; pass eps > 0 (finite), or drop "
                         f"{name}= for a non-private fit")
    accountant.check(e, delta)
