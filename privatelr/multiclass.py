r"""``dplr(..., multiclass=)``'s result: a private multiclass model over declared classes.

:class:`MulticlassDPLR` is what :func:`privatelr.dplr` returns with
``multiclass="multinomial"`` (the softmax model, :mod:`privatelr.multinomial`) or
``multiclass="ovr"`` (one binary fit per class, each with ``eps / K``). The release is the
``(d, K)`` coefficient matrix — one column per class, in the order of the response's declared
levels — with the design spec and the calibration; diagnostics (solver report, counts) are
kept apart and not pickled, as for the binary :class:`~privatelr.results.DPLR`.

``predict`` gives one row per input row: a DataFrame of per-class probabilities whose columns
are the class labels (``type="probabilities"``), the class scores (``"link"``), or a
categorical Series of the most probable class (``"class"``); a row with a missing value gets
NaN. ``summary`` prints R's header lines and one coefficient vector per class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._validation import is_sparse
from .calibration import Calibration
from .design.values import level_label
from .multinomial import class_probabilities
from .results import Diagnostics, ModelFields, Released, Status, redact_seed
from .scoring import TYPES

__all__ = ["MulticlassDPLR", "predict_multiclass"]


@dataclass(frozen=True)
class MulticlassDPLR(Released, ModelFields):
    """A fitted multiclass ``dplr`` model: what ``dplr(..., multiclass=...)`` returns.

    ``multiclass="multinomial"`` fits the softmax model over the response's declared levels,
    ``"ovr"`` one binary model per level with ``eps / K`` each. ``predict`` gives a DataFrame of
    per-class probabilities (columns: the class labels), the class scores (``type="link"``) or
    a categorical Series of the most probable class (``type="class"``); ``summary`` prints one
    coefficient vector per class. As for :class:`privatelr.DPLR`, the diagnostics are kept
    apart from the release and are not private.

    Attributes
    ----------
    coef : (d, K) ndarray
        Column ``k`` holds class ``classes[k]``'s coefficients (read-only).
    classes : tuple
        The response's declared levels, the order of the columns.
    multiclass : {"multinomial", "ovr"}
    spec : privatelr.design.DesignSpec
    calibration : Calibration
        The multinomial model's, or (one-vs-rest) the first binary fit's at ``eps / K``.
    eps, delta : float
        The whole model's budget.
    data_norm : float
    status : str
    convergence : int
    call : str
    n_dropped : int
    diagnostics : Diagnostics or None
        **Not private** (not part of the release): the solver report and row counts.
    """

    coef: np.ndarray
    classes: tuple
    multiclass: str
    spec: Any
    calibration: Calibration
    eps: float
    delta: float
    data_norm: float
    status: str
    convergence: int
    call: str
    n_dropped: int = 0
    diagnostics: Diagnostics | None = field(default=None, repr=False)

    def __post_init__(self):
        coef = np.array(self.coef, dtype=np.float64)
        coef.setflags(write=False)
        object.__setattr__(self, "coef", coef)
        object.__setattr__(self, "classes", tuple(self.classes))
        object.__setattr__(self, "status", Status(self.status))
        object.__setattr__(self, "call", redact_seed(self.call))
        if coef.shape != (len(self.spec.columns), len(self.classes)):
            raise ValueError(f"coefficients of shape {coef.shape} for "
                             f"{len(self.spec.columns)} design columns and "
                             f"{len(self.classes)} classes")

    # -- the release ---------------------------------------------------------------------------
    @property
    def labels(self) -> list:
        """The classes as R prints them (``level_label``): the column names of ``predict``."""
        return [c if isinstance(c, str) else level_label(c) for c in self.classes]

    @property
    def coefficients(self) -> pd.DataFrame:
        """The coefficients: one row per design column, one column per class."""
        return pd.DataFrame(self.coef, index=list(self.spec.columns), columns=self.labels)

    par = coefficients

    @property
    def guarantee_holds(self) -> bool:
        return self.method != "nonprivate" and "nonconvergence" not in self.status

    # -- use -------------------------------------------------------------------------------------
    def predict(self, data, type: str = "probabilities"):
        """Predictions for new data (:func:`predict_multiclass`)."""
        return predict_multiclass(self, data, type=type)

    def summary(self):
        """R's summary header and one coefficient vector per class."""
        from .report.text import summarize_multiclass

        return summarize_multiclass(self)

    def __repr__(self) -> str:
        return str(self.summary())

    __str__ = __repr__

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(repr(self))


def predict_multiclass(model: MulticlassDPLR, data, type: str = "probabilities"):
    """Per-class predictions, one output row per input row.

    ``type="probabilities"`` (or ``"response"``): a DataFrame of probabilities whose columns
    are the class labels (softmax of the scores; one-vs-rest: the binary fits' probabilities
    normalised to sum to one); ``"link"``: the class scores in the same layout; ``"class"``: a
    categorical Series of the most probable class. The index is the input's (pandas), rows with
    a missing value are NaN. A Dask DataFrame gives the same, lazily, partition by partition.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris()
    >>> m = dplr("Species ~ .", iris, eps=0, multiclass="multinomial")
    >>> m.predict(iris.iloc[[0, 60, 120]]).round(2)
         setosa  versicolor  virginica
    0       1.0        0.00       0.00
    60      0.0        0.97       0.02
    120     0.0        0.01       0.99
    >>> m.predict(iris.iloc[[0, 60, 120]], type="class").tolist()
    ['setosa', 'versicolor', 'virginica']
    """
    if not isinstance(model, MulticlassDPLR):
        raise TypeError(f"model must be a MulticlassDPLR, got {model.__class__.__name__}")
    if not isinstance(type, str) or type not in TYPES:
        raise ValueError(f"type must be one of {TYPES}, got {type!r}")
    if data.__class__.__module__.split(".")[0] == "dask":
        if not hasattr(data, "map_partitions"):
            raise TypeError(f"predict on Dask data needs a Dask DataFrame, got "
                            f"{data.__class__.__name__}")
        meta = _frame(model, np.zeros((0, len(model.classes))), np.zeros(0, dtype=bool),
                      pd.RangeIndex(0), type)
        return data.map_partitions(_predict_part, model, type, meta=meta)
    r = model.spec.rows(data, response=False)
    scores = np.full((r.complete.size, len(model.classes)), np.nan)
    if r.X.shape[0]:
        # NumPy's own loops, not BLAS: no BLAS threads inside Dask's worker threads, and each
        # row's scores independent of the chunk it comes in (as the binary scores)
        s = np.asarray(r.X @ model.coef) if is_sparse(r.X) else \
            np.einsum("ij,jk->ik", r.X, model.coef)
        scores[r.complete] = s if r.offset is None else s + r.offset[:, None]
    index = data.index if isinstance(data, pd.DataFrame) else pd.RangeIndex(r.complete.size)
    return _frame(model, scores, r.complete, index, type)


def _predict_part(part, model: MulticlassDPLR, type: str):
    return predict_multiclass(model, part, type)


def _frame(model: MulticlassDPLR, scores, complete, index, type: str):
    if type == "class":
        codes = np.full(complete.size, -1, dtype=np.int64)
        if complete.any():
            codes[complete] = np.argmax(scores[complete], axis=1)
        values = pd.Categorical.from_codes(codes, categories=list(model.classes))
        return pd.Series(values, index=index, name="class")
    if type != "link":
        scores = class_probabilities(scores, model.multiclass)
    return pd.DataFrame(scores, index=index, columns=model.labels)

