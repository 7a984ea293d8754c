"""Progress bars: one rule for every long-running entry point (audits, experiments, the CLI).

A bar is shown on standard error only when asked for, or — by default — when standard error is
a terminal and the optional package ``tqdm`` is installed (``pip install "privatelr[progress]"``).
Otherwise :func:`progress_bar` returns None and nothing is printed: piped output, logs and tests
stay clean.

**Passes over the rows.** A long fit spends its time in passes over the rows (each evaluation of
the objective's value, gradient or Hessian reads every row once). The engine reports each pass to
:func:`report_pass`, which calls the callback installed by :func:`reporting_passes` in the
current context (a :class:`contextvars.ContextVar`: other threads and other fits see nothing),
or does nothing. So a front end (the command line's fit bar) can follow a fit without the engine
knowing who listens.

The number of passes depends on the data (the solver stops when the gradient is small): it is a
diagnostic for the data holder's terminal, **not private**, and must never be released (not
saved, not printed to standard output, not in a model). Bars that show it say so.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Callable, Iterator

__all__ = ["progress_bar", "reporting_passes", "report_pass"]

_PASS_HOOK: contextvars.ContextVar[Callable[[float], None] | None] = contextvars.ContextVar(
    "privatelr_pass_hook", default=None)


@contextlib.contextmanager
def reporting_passes(callback: Callable[[float], None]) -> Iterator[None]:
    """Call ``callback(share)`` for every pass over the rows made inside the ``with`` block.

    ``share`` is the fraction of the rows the pass read (1.0 for a full pass; a warm start's
    subsample reads a share of them). The callback runs on the thread that drives the fit; an
    exception it raises stops the fit. Nested blocks: the inner callback replaces the outer one
    until it ends.

    Examples
    --------
    >>> import numpy as np
    >>> from privatelr import erm
    >>> X = np.array([[1.0, 0.5], [1.0, -0.5], [1.0, 0.2], [1.0, -0.1]])
    >>> seen = []
    >>> with reporting_passes(seen.append):
    ...     res = erm.fit(X, [1, 0, 1, 0], lambda_=0.1, eps=0)
    >>> len(seen) > 0 and all(0 < s <= 1 for s in seen)
    True
    >>> report_pass()            # outside the block: nobody listens, nothing happens
    """
    token = _PASS_HOOK.set(callback)
    try:
        yield
    finally:
        _PASS_HOOK.reset(token)


def report_pass(share: float = 1.0) -> None:
    """Tell the listener installed by :func:`reporting_passes` (if any) that a pass over
    ``share`` of the rows was made. Called by the engine's objectives; cheap when nobody
    listens."""
    hook = _PASS_HOOK.get()
    if hook is not None:
        hook(share)


def progress_bar(total: int | None, *, desc: str, unit: str, enabled: bool | None = None,
                 leave: bool = False, not_private: bool = False):
    """A ``tqdm`` bar on stderr, or None.

    Parameters
    ----------
    total : int or None
        Number of steps (None: unknown, the bar counts).
    desc, unit : str
        The bar's label and unit.
    enabled : bool or None
        True: show it (if tqdm is installed); False: never; None: only when stderr is a
        terminal.
    leave : bool
        Keep the finished bar on the terminal.
    not_private : bool
        The counts shown depend on private rows (the passes of a fit, the rows of a file): the
        bar says ``(not private)`` after its label. Such a bar is for the data holder's
        terminal only (it is never shown when stderr is not a terminal, unless ``enabled``).

    Examples
    --------
    >>> progress_bar(10, desc="audit", unit="run", enabled=False) is None
    True
    """
    if enabled is False:
        return None
    if enabled is None:
        try:
            if not sys.stderr.isatty():
                return None
        except (AttributeError, ValueError):
            return None
    try:
        from tqdm.auto import tqdm  # optional: privatelr does not depend on it
    except ImportError:
        return None
    if not_private:
        desc += " (not private)"
    return tqdm(total=total, desc=desc, unit=unit, leave=leave, file=sys.stderr)
