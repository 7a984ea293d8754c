"""From design rows and coefficients to predictions: the one home of scoring.

Every model scores rows here — ``dplr`` models in memory and on Dask, WALR models, the
DPpack-style models and the scikit-learn estimator — so a probability is computed the same way
everywhere. The linear predictor is an ``einsum`` over each row: a row's score does not depend on
the other rows of its batch (BLAS ``gemv`` rounds differently by position), so scoring one row
alone, in any batch, or in any chunk of a file gives the same bits.

Examples
--------
>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [1.0, 2.0]])
>>> outputs(X, np.array([True, True]), np.array([0.0, 1.0]), 0.5, ["no", "yes"], "class").tolist()
['no', 'yes']
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from scipy.special import expit

from ._threads import PARALLEL_MIN_BYTES, map_chunks
from ._validation import chunk_rows, is_sparse

__all__ = ["linear_predictor", "probabilities", "finite_rows", "outputs", "output_series",
           "TYPES"]

type_of = type

#: ``predict``'s accepted ``type`` values: probabilities (``"response"`` is glm's word for
#: them), class labels, or the linear predictor (``"link"``).
TYPES = ("probabilities", "response", "class", "link")


def linear_predictor(X: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``X @ coef`` row by row (batch-independent rounding: the rows are made C-contiguous, so
    each row's sum runs over the same memory layout whatever the batch); a ``scipy.sparse``
    design stays sparse (a CSR row's products run over its stored values in order)."""
    if is_sparse(X):
        return np.asarray(cast(Any, X).tocsr() @ coef, dtype=np.float64).ravel()
    X = np.ascontiguousarray(X, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    if X.nbytes < PARALLEL_MIN_BYTES:
        return np.einsum("ij,j->i", X, coef)
    out = np.empty(X.shape[0])
    step = chunk_rows(X.shape[1])

    def work(k: int) -> None:             # each row alone: the same bits in any block
        rows = slice(k * step, (k + 1) * step)
        np.einsum("ij,j->i", X[rows], coef, out=out[rows])

    map_chunks(-(-X.shape[0] // step), work)
    return out


def probabilities(eta: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``expit(eta)``, the logistic function of a float64 linear predictor, in place when
    ``out`` is ``eta``; a vector of more than ``2 * 65,536`` values in fixed chunks of 65,536
    on the package's pool (an exponential a value, about 10 ns on an AVX2 machine: 0.7 ms a
    chunk; each value is computed alone, so the bits are the same for any number of threads).

    >>> probabilities(np.array([0.0, np.inf, np.nan])).tolist()
    [0.5, 1.0, nan]
    """
    eta = np.asarray(eta, dtype=np.float64)
    out = np.empty_like(eta) if out is None else out
    step = 1 << 16
    if eta.size <= 2 * step:
        return expit(eta, out=out)

    def work(k: int) -> None:
        rows = slice(k * step, (k + 1) * step)
        expit(eta[rows], out=out[rows])

    map_chunks(-(-eta.size // step), work)
    return out


def finite_rows(X) -> np.ndarray:
    """Which rows of ``X`` (dense or ``scipy.sparse``) hold only finite values."""
    if is_sparse(X):
        X = X.tocsr()
        bad = ~np.isfinite(X.data)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        out = np.ones(X.shape[0], dtype=bool)
        out[rows[bad]] = False
        return out
    return np.isfinite(X).all(axis=1)


def outputs(X: np.ndarray, complete: np.ndarray, coef: np.ndarray, p_tr: float, labels,
            type: str, offset: np.ndarray | None = None) -> np.ndarray:
    """Predictions of the complete rows ``X`` spread back over all input rows.

    ``complete`` marks the input rows that ``X`` holds; every other row gets NaN (and no class).
    A row whose probability is not a number (infinite covariates) gets no class either: a
    missing answer, never an invented one. Class labels are ``labels[1]`` where ``p > p_tr``
    (R's rule), else ``labels[0]``; with a missing row the array has dtype object and ``None``.
    ``offset`` (one value per row of ``X``) is added to the linear predictor (R's ``offset()``).
    """
    if type not in TYPES:
        raise ValueError(f"type must be one of {TYPES}, got {type!r}")
    eta = np.full(complete.shape[0], np.nan)
    if X.shape[0]:
        with np.errstate(invalid="ignore", over="ignore"):
            scores = linear_predictor(X, coef)
            if offset is not None:
                scores += offset
        # a row with an infinite covariate has no defined prediction: missing, like NaN
        scores[~finite_rows(X)] = np.nan
        eta[complete] = scores
    if type == "link":
        return eta
    p = probabilities(eta, out=eta)
    if type in ("probabilities", "response"):
        return p
    lo, hi = labels
    # one array of the labels as they are (a numeric level and "not 0" stay an int and a str)
    table = np.array([lo, hi], dtype=object if type_of(lo) is not type_of(hi) else None)
    out = table[(p > p_tr).astype(np.intp)]
    missing = np.isnan(p)
    if not missing.any():
        return out
    out = out.astype(object)
    out[missing] = None
    return out


def output_series(X: np.ndarray, complete: np.ndarray, coef: np.ndarray, p_tr: float, labels,
                  type: str, index, offset: np.ndarray | None = None):
    """:func:`outputs` as a pandas Series on the input's ``index`` (what ``predict`` returns for
    pandas input): float probabilities or linear predictors named ``"probabilities"`` or
    ``"link"``; class labels as a Categorical named ``"class"`` whose categories are the model's
    two labels in coding order and whose missing value is pandas' own (NaN), never ``None`` in
    an object array.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [1.0, 2.0]])
    >>> s = output_series(X, np.array([True, False, True]), np.array([0.0, 1.0]), 0.5,
    ...                   ["no", "yes"], "class", index=[10, 11, 12])
    >>> s.tolist(), list(s.cat.categories), s.isna().tolist()
    (['no', nan, 'yes'], ['no', 'yes'], [False, True, False])
    """
    import pandas as pd

    eta = outputs(X, complete, coef, p_tr, labels, "link", offset=offset)
    if type in ("probabilities", "response", "link"):
        values = eta if type == "link" else probabilities(eta, out=eta)
        return pd.Series(values, index=index, name="link" if type == "link" else "probabilities")
    if type != "class":
        raise ValueError(f"type must be one of {TYPES}, got {type!r}")
    p = probabilities(eta, out=eta)
    codes = np.where(np.isnan(p), -1, (p > p_tr).astype(np.int8))
    return pd.Series(pd.Categorical.from_codes(codes, dtype=class_dtype(labels)), index=index,
                     name="class")


def class_dtype(labels):
    """The Categorical dtype of a model's class labels (categories in coding order)."""
    import pandas as pd

    return pd.CategoricalDtype(categories=list(labels), ordered=False)
