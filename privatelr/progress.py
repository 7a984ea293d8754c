"""Progress bars on standard error, for people watching a terminal.

A bar is shown only when asked for, or by default when standard error is a terminal; never on
standard output, so piped results stay clean. tqdm is imported only when a bar is shown.
"""

from __future__ import annotations

import sys

__all__ = ["progress_bar"]


def progress_bar(*, total: int | None = None, desc: str = "", unit: str = "it",
                 enabled: bool | None = None):
    """A tqdm bar on standard error, or None when no bar is to be shown.

    Parameters
    ----------
    total : int, optional
        Number of steps, if known (a bar); otherwise a running count.
    desc : str
        Text in front of the bar.
    unit : str
        What one step is (``"rows"``, ``"stage"``, ...).
    enabled : bool, optional
        True or False to force; None (default): only when ``sys.stderr`` is a terminal.

    Returns
    -------
    tqdm.tqdm or None
        Callers write ``if bar is not None: bar.update(n)`` and close it when done.

    Examples
    --------
    >>> progress_bar(total=3, desc="fit", enabled=False) is None
    True
    """
    if enabled is None:
        try:
            enabled = sys.stderr is not None and sys.stderr.isatty()
        except (AttributeError, ValueError):      # a replaced or closed stream
            enabled = False
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                dynamic_ncols=True, unit_scale=unit == "rows")
