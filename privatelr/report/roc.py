r"""ROC helpers with R PrivateLR's exact definitions: the C-index and the two data-driven thresholds.

**None of these is differentially private.** They read the labels and predictions of the
training data without noise; :func:`privatelr.dplr` raises a
:class:`~privatelr.PrivacyWarning` when a data-driven threshold is requested, and documents the
C-index (always computed, as R does) as non-private.

Definitions (reverse-engineered from PrivateLR 1.2-22 and checked against its outputs):

* C-index (area under the ROC curve) with ties counted half:
  :math:`C = \big(\bar r_1 - (n_1 + 1)/2\big) / n_0`, where :math:`\bar r_1` is the mean
  mid-rank of the positives' predictions among all predictions (the Mann–Whitney statistic).
* Candidate thresholds are the positives' predicted probabilities. Rank all predictions
  ``1..n`` breaking ties by position (R's ``rank(ties.method = "first")``) and walk the
  positives in rank order ``i = 1..n1``: at the ``i``-th one, sensitivity is
  :math:`(n_1 - i + 1)/n_1` (it and every positive above count as detected) and specificity is
  (number of negatives ranked below it) / :math:`n_0`.
  ``"youden"`` picks the first candidate maximising sensitivity + specificity; ``"topleft"`` the
  first minimising :math:`(1 - se)^2 + (1 - sp)^2`.

  (PrivateLR's source counts the positive itself among the "negatives below", which shifts every
  specificity by :math:`1/n_0`; that never changes the Youden choice and changes the top-left
  choice on none of the reference cases in ``roc.json``. We use the correct count.)
"""

from __future__ import annotations

import numpy as np

from .._threads import map_chunks

__all__ = ["c_index", "sens_spec", "best_threshold"]


#: inputs from this size sort and search on the package's pool (:mod:`privatelr._threads`)
_PARALLEL_MIN = 1 << 16


def _inputs(p, y) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    y = np.asarray(y)
    if y.dtype == np.bool_:
        pos = y.reshape(-1)
    else:
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        pos = y == 1
    if pos.shape != p.shape:
        raise ValueError(f"p has {p.size} values but y has {pos.size}; they must match")
    if not np.isfinite(p).all():
        raise ValueError("p contains NaN or infinite values")
    return p, pos


def c_index(p, y) -> float:
    """Area under the ROC curve of predictions ``p`` for labels ``y`` (1 = positive), ties half.

    Returns NaN when one class is absent. Not private: computed from the labels without noise.

    Examples
    --------
    >>> c_index([0.1, 0.4, 0.4, 0.9], [0, 0, 1, 1])
    0.875
    """
    p, pos = _inputs(p, y)
    n1 = int(np.count_nonzero(pos))
    n0 = p.size - n1
    if n1 == 0 or n0 == 0:
        return float("nan")
    # Mann-Whitney by sorting values, not indices: each positive beats the negatives below its
    # score and ties (1/2) with the negatives equal to it. Twice the count is an exact integer.
    big = p.size >= _PARALLEL_MIN
    neg, scores = map_chunks(2, lambda k: np.sort(np.compress(pos if k else ~pos, p)), big)
    # sorted queries (a cache-friendly search), in fixed slices searched on the package's pool
    # (sorting and searching release the GIL); the counts are integers, the same in any order
    step = -(-n1 // 4)
    below = np.concatenate(map_chunks(4, lambda k: np.searchsorted(
        neg, scores[k * step:(k + 1) * step], side="left"), big))
    twice = 2 * int(below.sum(dtype=np.int64))
    # negatives equal to a positive's score start at neg[below]: search again only for those
    # positives (none, for continuous predictions without ties)
    tied = np.flatnonzero((np.take(neg, below, mode="clip") == scores) & (below < n0))
    if tied.size:
        upto = np.searchsorted(neg, scores[tied], side="right")
        twice += int((upto - below[tied]).sum(dtype=np.int64))
    return twice / (2.0 * n1 * n0)


def sens_spec(p, y) -> np.ndarray:
    """R's candidate table: one row ``(threshold, sensitivity, specificity)`` per positive.

    Examples
    --------
    >>> sens_spec([0.2, 0.6, 0.4, 0.8], [0, 1, 0, 1]).tolist()
    [[0.6, 1.0, 1.0], [0.8, 0.5, 1.0]]
    """
    p, pos = _inputs(p, y)
    n1 = int(pos.sum())
    n0 = p.size - n1
    if n1 == 0:
        return np.empty((0, 3))
    order = np.argsort(p, kind="stable")          # rank "first": ties by position
    rank = np.empty(p.size, dtype=np.int64)
    rank[order] = np.arange(1, p.size + 1)
    r1 = np.sort(rank[pos])                        # ranks of the positives, ascending
    i = np.arange(1, n1 + 1)
    se = (n1 - i + 1) / n1
    below = r1 - i                                 # negatives ranked below the i-th positive
    sp = below / n0 if n0 else np.full(n1, np.nan)
    return np.column_stack([p[order][r1 - 1], se, sp])


def best_threshold(p, y, method: str = "youden") -> float:
    """R's data-driven probability threshold: ``"youden"`` or ``"topleft"``.

    Not private: it reads the training labels without noise.

    Examples
    --------
    >>> best_threshold([0.2, 0.6, 0.4, 0.8], [0, 1, 0, 1])
    0.6
    """
    if method not in ("youden", "topleft"):
        raise ValueError(f"method must be 'youden' or 'topleft', got {method!r}")
    table = sens_spec(p, y)
    if table.shape[0] == 0 or np.isnan(table[:, 2]).all():
        return 0.5
    se, sp = table[:, 1], table[:, 2]
    if method == "youden":
        k = int(np.argmax(se + sp))
    else:
        k = int(np.argmin((1 - se) ** 2 + (1 - sp) ** 2))
    return float(table[k, 0])
