r"""A privacy budget that outlives the process: the ledger file.

A :class:`~privatelr.PrivacyAccountant` lives in memory, so a budget kept across runs of a script
or of the command line (``privatelr fit --ledger budget.json --budget 2``) needs a file. The
ledger is that file: the budget ``(ε, δ)`` fixed when it is created, and every spend in order.

**Format.** One JSON object in privatelr's saved-file envelope (:mod:`privatelr.envelope`:
``format`` ``"privatelr.ledger"``, ``format_version`` 1, the package version and a sha256
checksum of the rest), with the body::

    {"budget": {"eps": 2.0, "delta": 0.0},
     "created": "2025-03-01T09:30:00+00:00",
     "budget_changes": [{"eps": 3.0, "delta": 0.0, "date": "..."}],
     "spends": [{"eps": 1.0, "delta": 0.0, "note": "privatelr fit ...",
                 "date": "2025-03-01T09:31:12+00:00"}, ...]}

``budget`` is the budget in force; ``budget_changes`` records every raise (``raise_budget``),
with the new budget and its date. Each spend holds its ε and δ, a note saying what it was
for, and the date (UTC). Nothing else: never a seed, never a statistic of the rows. A file
whose checksum does not match (edited by hand, truncated), whose version is newer than this
privatelr, or whose spends exceed its budget is refused with a ``ValueError``.

**What the checksum does not do.** It has no secret key: it catches a file damaged, truncated
or edited by hand, not a deliberate forger who recomputes it, nor a ledger deleted (a new one
is then created with a fresh budget) or replaced by an older copy. The ledger keeps an honest
data holder's runs within the budget; protect the file (permissions, a backup, version
control) as you protect the data.

**What it stores.** The budget, the spends and their dates and notes. The command line's note
is made of the command's public inputs (data file name, formula, method, ``--out``); never the
seed, the number of rows or anything computed from them.

**Composition.** Spends add up (basic sequential composition, Dwork & Roth 2014, Theorem 3.16):
the ledger's total is ``(Σ ε_j, Σ δ_j)``, the bound that is valid for any mix of mechanisms.
For the Gaussian methods it is conservative (their Rényi curves would compose to less; an
in-memory :class:`~privatelr.PrivacyAccountant` uses them within one process).

**Concurrency and crashes.** :meth:`BudgetLedger.open` takes an exclusive lock
(``fcntl.flock``) on a side file ``<ledger>.lock`` next to the ledger (the ledger itself is
replaced by each write, so it cannot carry the lock) and holds it until the ``with`` block
ends: a second run on the same ledger waits, and so two runs can never both pass the check for
the last of the budget. The side file is empty and is never removed (removing a lock file
reopens the race). Every write goes through :func:`privatelr.envelope.atomic_write` (a
temporary file in the same directory, ``fsync``, ``os.replace``, ``fsync`` of the directory):
a process killed at any moment leaves the previous ledger or the new one, never a mix, and
the lock dies with the process.

**When to charge.** The conservative rule: record the spend *before* releasing anything, after
the computation succeeded. A run that fails or is killed before it records has released
nothing and is not charged; a run killed after recording but before its output was written is
charged for an output nobody received (an overcharge, never an undercharge). The command line
follows this order: check (before reading the data), fit, record, then write the model and
print the summary.

Examples
--------
>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "budget.json")
>>> with BudgetLedger.open(path, budget=2.0) as ledger:
...     ledger.check(1.0)                 # before the data are read
...     entry = ledger.record(1.0, note="model A")
>>> with BudgetLedger.open(path) as ledger:      # the next run: the budget is in the file
...     ledger.spent, ledger.remaining, len(ledger.spends)
((1.0, 0.0), (1.0, 0.0), 1)
>>> with BudgetLedger.open(path) as ledger:
...     ledger.check(1.5)
Traceback (most recent call last):
...
privatelr.exceptions.BudgetExceededError: spending eps=1.5, delta=0 would exceed the privacy budget: eps spent 1 + 1.5 > budget 2 (remaining eps=1, delta=0)
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ._validation import check_real
from .accountant import PrivacyAccountant
from .envelope import dumps, loads, read_text, write_text
from .exceptions import BudgetExceededError

__all__ = ["BudgetLedger", "LedgerSpend", "FORMAT", "FORMAT_VERSION", "lock_path"]

#: The envelope's ``format`` of a ledger file, and its version.
FORMAT = "privatelr.ledger"
FORMAT_VERSION = 1
_NAME = "privatelr ledger"


def _now() -> str:
    """The current date and time in UTC, to the second (ISO 8601)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def lock_path(path) -> str:
    """The side file whose ``flock`` guards the ledger ``path``: ``<real path>.lock`` (links
    resolved, so every spelling of one ledger takes the same lock)."""
    return os.path.realpath(os.fspath(path)) + ".lock"


@dataclass(frozen=True)
class LedgerSpend:
    """One spend recorded in a ledger file.

    Attributes
    ----------
    eps, delta : float
        What was spent.
    note : str
        What it was for.
    date : str
        When it was recorded (UTC, ISO 8601).
    """

    eps: float
    delta: float
    note: str
    date: str


def _corrupted(path, why: str) -> ValueError:
    return ValueError(f"{path}: corrupted {_NAME} file: {why}")


def _budget_pair(path, d, what: str) -> tuple[float, float]:
    if not isinstance(d, dict) or set(d) - {"date"} != {"eps", "delta"}:
        raise _corrupted(path, f"{what} must hold eps and delta")
    eps, delta = d["eps"], d["delta"]
    for name, v in (("eps", eps), ("delta", delta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise _corrupted(path, f"{what}: {name} is not a finite number")
    if eps < 0 or not 0 <= delta < 1:
        raise _corrupted(path, f"{what}: eps must be >= 0 and delta in [0, 1)")
    return float(eps), float(delta)


def _date(path, v, what: str) -> str:
    if not isinstance(v, str):
        raise _corrupted(path, f"{what}: the date is not a string")
    try:
        datetime.datetime.fromisoformat(v)
    except ValueError:
        raise _corrupted(path, f"{what}: {v!r} is not an ISO 8601 date") from None
    return v


def _parse(path, text: str) -> tuple[tuple[float, float], str, list, list]:
    """(budget, created, budget changes, spends) of a ledger file's text, checked."""
    try:
        body = loads(text, FORMAT, FORMAT_VERSION, name=_NAME)
    except ValueError as exc:      # a ledger is never read unchecked: no verify=False hint
        why = re.sub(r"\s*\(verify=False skips the check\)", "", str(exc))
        why = re.sub(r"; verify=False loads it anyway\)", "; restore the last good copy)", why)
        raise ValueError(f"{path}: {why}") from None
    if set(body) != {"budget", "created", "budget_changes", "spends"}:
        raise _corrupted(path, f"unexpected fields {sorted(body)}")
    budget = _budget_pair(path, body["budget"], "budget")
    created = _date(path, body["created"], "created")
    changes = body["budget_changes"]
    if not isinstance(changes, list):
        raise _corrupted(path, "budget_changes is not a list")
    for i, c in enumerate(changes):
        _budget_pair(path, c, f"budget change {i + 1}")
        _date(path, c.get("date"), f"budget change {i + 1}")
    raw = body["spends"]
    if not isinstance(raw, list):
        raise _corrupted(path, "spends is not a list")
    spends = []
    for i, s in enumerate(raw):
        if not isinstance(s, dict) or set(s) != {"eps", "delta", "note", "date"}:
            raise _corrupted(path, f"spend {i + 1} must hold eps, delta, note and date")
        eps, delta = _budget_pair(path, {"eps": s["eps"], "delta": s["delta"]},
                                  f"spend {i + 1}")
        if not isinstance(s["note"], str):
            raise _corrupted(path, f"spend {i + 1}: the note is not a string")
        spends.append(LedgerSpend(eps, delta, s["note"], _date(path, s["date"],
                                                                f"spend {i + 1}")))
    return budget, created, changes, spends


class BudgetLedger:
    """A privacy budget kept in a file across runs (format, lock and crashes:
    :mod:`privatelr.ledger`).

    Open it with :meth:`open` (locked, for checking and recording) or :meth:`read` (a
    snapshot, read only); the budget is given to :meth:`open`. The constructor is internal:
    ``path`` the file, ``budget`` the pair (ε, δ) in force, ``created`` its creation date,
    ``changes`` the raises of the budget, ``spends`` the recorded spends, ``writable`` whether
    the lock is held.

    Attributes
    ----------
    path : str
        The ledger file.
    epsilon, delta : float
        The budget in force.
    spends : tuple of LedgerSpend
        Every spend in order.
    created : str
        When the ledger was created (UTC, ISO 8601).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.json")
    >>> with BudgetLedger.open(path, budget=1.0, budget_delta=1e-6) as ledger:
    ...     _ = ledger.record(0.5, 1e-7, note="a Gaussian fit")
    >>> snap = BudgetLedger.read(path)
    >>> snap.epsilon, snap.spent
    (1.0, (0.5, 1e-07))
    >>> snap.spends[0].note
    'a Gaussian fit'
    """

    def __init__(self, path: str, budget: tuple[float, float], created: str, changes: list,
                 spends: list, *, writable: bool):
        self.path = path
        self.epsilon, self.delta = budget
        self.created = created
        self._changes = list(changes)
        self._spends = list(spends)
        self._writable = writable

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def read(cls, path) -> "BudgetLedger":
        """The ledger file ``path`` as it is now, without the lock (read only: the writes are
        atomic, so a reader always sees a whole file)."""
        path = os.fspath(path)
        ledger = cls(path, *_parse(path, read_text(path, _NAME)), writable=False)
        ledger.accountant()                      # the spends fit the budget, or corrupted
        return ledger

    @classmethod
    @contextlib.contextmanager
    def open(cls, path, *, budget: float | None = None, budget_delta: float | None = None,
             raise_budget: bool = False,
             on_wait: Callable[[], None] | None = None) -> Iterator["BudgetLedger"]:
        """Lock the ledger ``path`` for the ``with`` block and yield it; create it if absent.

        Parameters
        ----------
        path : str or os.PathLike
            The ledger file.
        budget : float, optional
            The ε budget. Required to create the ledger (the file then holds it); for an
            existing ledger it may be omitted, and if given it must equal the file's — unless
            ``raise_budget``.
        budget_delta : float, optional
            The δ budget, in [0, 1): 0 when the ledger is created without it (then only
            pure-ε spends fit); the same rules as ``budget`` afterwards.
        raise_budget : bool
            Allow ``budget`` (and ``budget_delta``) above the file's: the new budget is written
            at once, and the change is recorded with its date. A budget is never lowered.
        on_wait : callable, optional
            Called once if another process holds the lock, before waiting for it.

        Raises
        ------
        ValueError
            A ledger that would be created without ``budget``; a budget that differs from the
            file's; a corrupted file.
        OSError
            The lock file or the ledger cannot be created or read.
        """
        path = os.fspath(path)
        if budget is not None:
            budget = check_real("budget", budget, low=0.0, low_open=True)
        if budget_delta is not None:
            budget_delta = check_real("budget_delta", budget_delta, low=0.0, high=1.0,
                                      high_open=True)
        with _locked(lock_path(path), on_wait):
            ledger = cls._load_or_create(path, budget, budget_delta, raise_budget)
            try:
                yield ledger
            finally:
                ledger._writable = False          # no write once the lock is released

    @classmethod
    def _load_or_create(cls, path: str, budget, budget_delta, raise_budget: bool):
        if not os.path.lexists(path):
            if budget is None:
                raise ValueError(f"the ledger {path} does not exist; give budget= to create it "
                                 "(the budget is fixed at creation)")
            ledger = cls(path, (budget, budget_delta or 0.0), _now(), [], [], writable=True)
            ledger._write()
            return ledger
        ledger = cls(path, *_parse(path, read_text(path, _NAME)), writable=True)
        ledger.accountant()                      # the spends fit the budget, or corrupted
        want = (ledger.epsilon if budget is None else budget,
                ledger.delta if budget_delta is None else budget_delta)
        have = (ledger.epsilon, ledger.delta)
        if want == have:
            return ledger
        if not raise_budget:
            raise ValueError(f"the ledger {path} has the budget (eps {have[0]:g}, delta "
                             f"{have[1]:g}), fixed when it was created; this run asks for (eps "
                             f"{want[0]:g}, delta {want[1]:g}). Give budget= equal to the "
                             "ledger's (or no budget), or raise_budget=True to raise it")
        if want[0] < have[0] or want[1] < have[1]:
            raise ValueError(f"the ledger {path} has the budget (eps {have[0]:g}, delta "
                             f"{have[1]:g}); raise_budget=True raises a budget, it never lowers "
                             f"one (asked: eps {want[0]:g}, delta {want[1]:g})")
        ledger.epsilon, ledger.delta = want
        ledger._changes.append({"eps": want[0], "delta": want[1], "date": _now()})
        ledger._write()
        return ledger

    # -- views -------------------------------------------------------------------------------
    @property
    def spends(self) -> tuple[LedgerSpend, ...]:
        return tuple(self._spends)

    @property
    def budget_changes(self) -> tuple[dict, ...]:
        """Every raise of the budget: ``{"eps", "delta", "date"}`` of the new budget."""
        return tuple(dict(c) for c in self._changes)

    def accountant(self) -> PrivacyAccountant:
        """A :class:`~privatelr.PrivacyAccountant` with this budget and these spends (a copy:
        spending it does not touch the file)."""
        acc = PrivacyAccountant(self.epsilon, self.delta)
        for i, s in enumerate(self._spends):
            try:
                acc.spend(s.eps, s.delta, note=s.note)
            except BudgetExceededError:
                raise _corrupted(self.path, f"spend {i + 1} takes the total past the budget "
                                 f"(eps={self.epsilon:g}, delta={self.delta:g})") from None
        return acc

    @property
    def spent(self) -> tuple[float, float]:
        """``(ε, δ)`` spent: the sums of the spends."""
        return self.accountant().spent()

    @property
    def remaining(self) -> tuple[float, float]:
        """``(ε, δ)`` left, never negative."""
        return self.accountant().remaining

    # -- checking and recording --------------------------------------------------------------
    def check(self, eps: float, delta: float = 0.0) -> None:
        """Raise :class:`~privatelr.BudgetExceededError` if ``(eps, delta)`` does not fit in what
        remains (``ValueError`` for a non-private ``eps`` of 0 or inf, which has no finite cost
        to charge)."""
        eps = check_real("eps", eps, low=0.0, allow_inf=True)
        if eps == 0.0 or math.isinf(eps):
            raise ValueError(f"eps={eps:g} requests a non-private computation, which has no "
                             "finite privacy cost and cannot be charged to a ledger")
        self.accountant().check(eps, delta)

    def record(self, eps: float, delta: float = 0.0, *, note: str = "") -> LedgerSpend:
        """Check and record a spend, writing the ledger atomically before returning.

        Only inside :meth:`open`'s ``with`` block (the lock held). If this raises, nothing was
        recorded and the file is as it was.
        """
        if not self._writable:
            raise RuntimeError("this ledger is not open for writing: record spends inside "
                               "BudgetLedger.open(...)'s with block")
        if not isinstance(note, str):
            raise TypeError(f"note must be a string, got {type(note).__name__}")
        self.check(eps, delta)
        spend = LedgerSpend(float(eps), float(delta), note, _now())
        self._spends.append(spend)
        try:
            self._write()
        except BaseException:
            self._spends.pop()
            raise
        return spend

    def _write(self) -> None:
        body = {"budget": {"eps": self.epsilon, "delta": self.delta}, "created": self.created,
                "budget_changes": self._changes,
                "spends": [{"eps": s.eps, "delta": s.delta, "note": s.note, "date": s.date}
                           for s in self._spends]}
        write_text(self.path, dumps(FORMAT, FORMAT_VERSION, body))

    def __repr__(self) -> str:
        eps, delta = self.spent
        return (f"BudgetLedger({self.path!r}: budget eps={self.epsilon:g}, delta={self.delta:g}; "
                f"spent eps={eps:g}, delta={delta:g} in {len(self._spends)} spend(s))")


@contextlib.contextmanager
def _locked(path: str, on_wait: Callable[[], None] | None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if absent) for the block."""
    try:
        import fcntl
    except ImportError:                                       # not POSIX
        raise OSError("a ledger needs file locks (fcntl), which this system does not "
                      "provide") from None
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                                          # releases the lock

