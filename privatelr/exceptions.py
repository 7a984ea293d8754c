"""Warnings and errors raised by privatelr."""

from __future__ import annotations

__all__ = ["BudgetExceededError", "PrivacyWarning"]


class PrivacyWarning(UserWarning):
    """Something computed or assumed weakens (or voids) the differential-privacy guarantee.

    Raised when a design row lies outside the public norm bound and is not clipped, when a
    quantity is computed from the private data without noise (data-driven thresholds, the
    C-index, ``do_scale`` scaling), and wherever R's PrivateLR leaks silently.
    """


class BudgetExceededError(Exception):
    """A computation would spend more privacy budget than a :class:`~privatelr.PrivacyAccountant` has left.

    Raised before anything is spent or computed from the data.
    """
