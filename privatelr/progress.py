"""Progress bars: one rule for every long-running entry point (audits, experiments, the CLI).

A bar is shown on standard error only when asked for, or — by default — when standard error is
a terminal and the optional package ``tqdm`` is installed (``pip install "privatelr[progress]"``).
Otherwise :func:`progress_bar` returns None and nothing is printed: piped output, logs and tests
stay clean.
"""

from __future__ import annotations

import sys

__all__ = ["progress_bar"]


def progress_bar(total: int | None, *, desc: str, unit: str, enabled: bool | None = None,
                 leave: bool = False):
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
    return tqdm(total=total, desc=desc, unit=unit, leave=leave, file=sys.stderr)
