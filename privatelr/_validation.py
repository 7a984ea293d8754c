"""Argument checking shared by the public entry points.

Every helper raises ``TypeError`` or ``ValueError`` whose message names the argument and says
what would be accepted, so that bad input never surfaces as a NumPy traceback.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ._threads import PARALLEL_MIN_BYTES, map_chunks

_HUGE = 1e150  # beyond this, x @ x overflows for a handful of columns
_SQ_SAFE = (1e-280, 1e300)  # squared row norms in this range are exact enough as computed
FLOAT_MAX = float(np.finfo(np.float64).max)
TINY = float(np.finfo(np.float64).tiny)  # smallest normal double, 2.2e-308
LOG_FLOAT_MAX = math.log(FLOAT_MAX)
_LN10 = math.log(10.0)


def check_real(name: str, value, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False, allow_inf: bool = False) -> float:
    """Return ``value`` as a float after checking type, NaN and range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        v = float(value)
    except OverflowError:                 # an int beyond the doubles (10**400)
        raise ValueError(f"{name} = {str(value)[:20]}... is beyond the range of double "
                         "precision; rescale it") from None
    if np.isnan(v):
        raise ValueError(f"{name} must be a number, got NaN")
    if np.isinf(v) and not allow_inf:
        raise ValueError(f"{name} must be finite, got {v}")
    if low is not None and (v < low or (low_open and v == low)):
        op = ">" if low_open else ">="
        raise ValueError(f"{name} must be {op} {low}, got {v}")
    if high is not None and (v > high or (high_open and v == high)):
        op = "<" if high_open else "<="
        raise ValueError(f"{name} must be {op} {high}, got {v}")
    return v


def check_bool(name: str, value) -> bool:
    """A True/False argument (NumPy bools accepted) as a Python bool; anything else (0, 1,
    "yes", None) is a ``TypeError`` naming the argument."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_int(name: str, value, *, low: int | None = None) -> int:
    """Return ``value`` as an int (integral floats accepted) at least ``low``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool {value!r}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real) and float(value).is_integer():
        v = int(math.trunc(value))
    else:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    return v


def as_float_matrix(name: str, X, *, finite: bool = True) -> np.ndarray:
    """A finite, non-empty, C-ordered 2-D float64 array (no copy when the input already is one).

    ``finite=False`` skips the finiteness pass for callers that run :func:`scan_rows` next
    (which checks the same thing while computing row norms).
    """
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        X = X.to_numpy()
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be a 2-D numeric array: {exc}") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}; encode factors first "
                        "(dplr() does this for you)")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x columns), got {arr.ndim}-D with shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); need at least one row and one column")
    # C order: row chunks are contiguous for the solver, and results do not depend on layout
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if finite:
        _check_finite(name, arr)
    return arr


def too_large(max_abs: float) -> bool:
    """The one rule for values too large for the passes: ``|x| > 1e150``.

    Beyond it squared row norms, margins and the Hessian's products overflow double precision
    for a handful of columns. Used by :func:`as_float_matrix`, :func:`scan_rows` and the Dask
    validation pass, so every backend refuses the same inputs with :func:`magnitude_error`.
    """
    return max_abs > _HUGE


def magnitude_error(name: str) -> ValueError:
    """The error for values that :func:`too_large` refuses (no statistic of the data in it)."""
    return ValueError(f"{name} has values beyond +-{_HUGE:.0e}: squared row norms and margins "
                      "would overflow double precision; rescale the columns with public bounds")


GRADIENT_LIMIT = 1e153  # the solver forms products of two gradients: they must stay finite


def check_gradient_scale(max_weight: float, max_norm: float) -> None:
    """Refuse data whose loss gradients, up to ``max_weight * max_norm``, the solver cannot square.

    Newton's secant updates and L-BFGS form products of two gradient vectors, so gradients must
    stay below about 1e154; the data term's gradient is at most the largest weight times the
    largest row norm. The one rule for every backend (in memory and Dask), with one message.
    """
    if max_weight * max_norm > GRADIENT_LIMIT:
        raise ValueError(f"weights up to {max_weight:.3g} on rows of norm up to {max_norm:.3g} make "
                         f"loss gradients as large as {max_weight * max_norm:.3g}, and the solver "
                         f"squares gradients (limit {GRADIENT_LIMIT:.0e}); rescale the weights "
                         "and weights_bound (or the columns of X) by a public constant")


def _check_finite(name: str, arr: np.ndarray, magnitude: bool = True) -> None:
    # two allocation-free passes (max/min propagate NaN) instead of an n-by-d boolean mask
    hi, lo = float(arr.max()), float(arr.min())
    if not (np.isfinite(hi) and np.isfinite(lo)):
        bad = int((~np.isfinite(arr)).any(axis=1).sum())
        raise ValueError(f"{name} contains NaN or infinite values in {bad} row(s); remove or impute them")
    if magnitude and too_large(max(abs(hi), abs(lo))):
        raise magnitude_error(name)


#: bytes of X a pass reads per chunk (about 4 MB: a chunk's rows stay in cache while a pass
#: reuses them); :func:`chunk_rows` turns it into rows
CHUNK_BYTES = 4 * 2**20


def chunk_rows(d: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Rows per chunk of a pass over ``d`` float64 columns, about ``chunk_bytes`` a chunk: fixed
    by the shape only (never by the thread count), so a pass gives the same bits on any number
    of threads. The one rule for every chunked pass of the package.

    Examples
    --------
    >>> chunk_rows(20)
    26214
    """
    return max(256, chunk_bytes // (8 * max(d, 1)))


def scan_rows(name: str, X: np.ndarray, *, chunk_bytes: int = CHUNK_BYTES,
              magnitude: bool = True, start: int = 0):
    """Squared row norms of a C-ordered float64 matrix, with the finiteness check of
    :func:`as_float_matrix` folded into the same pass. With ``start > 0`` also the squared
    norms of the columns from ``start`` on (e.g. the covariates without the intercept), from
    the same pass while each chunk is in cache: ``(full, from start)``.

    A NaN or infinity makes its row's squared norm NaN or infinite, and a value above 1e150 makes
    it exceed 1e300, so the exact check (and its error message) runs only when the largest
    squared norm is not a finite number <= 1e300. Large matrices are scanned by a few threads
    (:mod:`privatelr._threads`); each row's value is computed alone, so the result is the same
    for any number of threads. The squared norms can underflow for rows of tiny values: use
    :func:`row_norms` (which takes them) for norms that are right at every scale.

    Examples
    --------
    >>> scan_rows("X", np.array([[3.0, 4.0], [1.0, 0.0]]))
    array([25.,  1.])
    """
    n, d = X.shape
    sq = np.empty(n)
    part: Any = np.empty(n) if start else None
    step = chunk_rows(d, chunk_bytes)

    def work(k):
        rows = slice(k * step, min((k + 1) * step, n))
        if not start:
            np.einsum("ij,ij->i", X[rows], X[rows], out=sq[rows])
            return
        # the same per-row sums as row_norms(X[:, start:]) computes; the whole row's adds the
        # first columns' (a NaN or infinity anywhere still reaches sq)
        np.einsum("ij,ij->i", X[rows, start:], X[rows, start:], out=part[rows])
        np.einsum("ij,ij->i", X[rows, :start], X[rows, :start], out=sq[rows])
        sq[rows] += part[rows]

    map_chunks(-(-n // step), work, parallel=X.nbytes >= PARALLEL_MIN_BYTES)
    if not float(sq.max()) <= _HUGE * _HUGE:
        _check_finite(name, X, magnitude)       # magnitude=False: the caller clips huge rows
    return sq if not start else (sq, part)


def max_row_norm(X: np.ndarray, sq: np.ndarray) -> float:
    """The largest L2 row norm of ``X`` (0 without rows) from its squared row norms ``sq``:
    ``sqrt(max(sq))`` when that square is in the range where squares are exact enough, else
    from :func:`row_norms` (which recomputes the rows out of that range)."""
    if not sq.size:
        return 0.0
    top = float(sq.max())
    if _SQ_SAFE[0] <= top <= _SQ_SAFE[1]:   # every other row's norm is below sqrt(top)
        return float(np.sqrt(top))
    return float(row_norms(X, sq).max())


def row_norms(X: np.ndarray, sq: np.ndarray | None = None, *,
              chunk_bytes: int = CHUNK_BYTES) -> np.ndarray:
    """L2 norms of the rows of a 2-D float array, without overflow or underflow.

    Fast path: ``sqrt`` of the squared norms (``einsum``, or ``sq`` when the caller already has
    them, e.g. from :func:`scan_rows`). Rows whose squared norm overflowed (values above about
    1e154), or fell below 1e-280 where underflowed squares lose accuracy, are recomputed as
    ``m * ||x / m||`` with ``m = max_j |x_j|``, which is exact to rounding at every scale.
    A row holding NaN gets NaN, one holding an infinity (and no NaN) gets ``inf``.

    This is the one home of row norms for clipping and norm checks (:func:`clip_rows`,
    :func:`privatelr.erm.check_data_norm`, the Dask validation and clipping).

    Examples
    --------
    >>> row_norms(np.array([[3.0, 4.0], [3e200, 4e200], [3e-200, 4e-200]]))
    array([5.e+000, 5.e+200, 5.e-200])
    """
    if sq is None:
        sq = np.einsum("ij,ij->i", X, X)
    norms = np.sqrt(sq)
    redo = np.flatnonzero((sq < _SQ_SAFE[0]) | (sq > _SQ_SAFE[1]))  # NaN compares False: kept
    if redo.size:
        step = chunk_rows(X.shape[1], chunk_bytes)
        for start in range(0, redo.size, step):
            idx = redo[start:start + step]
            rows = np.abs(X[idx])
            m = rows.max(axis=1, initial=0.0)
            ok = (m > 0) & np.isfinite(m)
            scaled = rows[ok] / m[ok][:, None]
            fixed = np.where(np.isnan(m), np.nan, m)  # 0, inf or NaN rows: their max is the norm
            with np.errstate(over="ignore"):  # a norm beyond 1.8e308 is inf
                fixed[ok] = m[ok] * np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
            norms[idx] = fixed
    return norms


def clip_rows(X: np.ndarray, bound: float, *, norms: np.ndarray | None = None
              ) -> tuple[np.ndarray, int]:
    """Scale every row whose L2 norm exceeds ``bound`` onto the sphere of that radius.

    Returns ``(X_clipped, n_clipped)``; ``X`` is copied only when a row is clipped. Norms come
    from :func:`row_norms` (pass ``norms`` when already computed), so a row of 1e155-sized values
    lands on the sphere rather than at zero, and a ``bound`` of 1e-300 is honoured. A row is
    clipped when its norm exceeds ``bound`` by more than a relative 5e-13 (rows already clipped,
    on the sphere up to rounding, are left alone). When ``bound / norm`` is not a normal number,
    the row is first divided by its largest absolute value, then scaled. A subnormal ``bound``
    (below 2.2e-308) raises ``ValueError``: rounding there is too coarse to keep the clipped
    rows inside the ball.

    Examples
    --------
    >>> Xc, k = clip_rows(np.array([[3e155, 4e155], [0.3, 0.4]]), 1.0)
    >>> Xc, k
    (array([[0.6, 0.8],
           [0.3, 0.4]]), 1)
    """
    if not bound >= TINY:
        raise ValueError(f"data_norm (the clipping bound) = {bound!r} is below the smallest normal "
                         f"double ({TINY:.4g}): rows cannot be scaled onto so small a sphere "
                         "accurately; rescale X by a public constant so that data_norm is nearer 1")
    if norms is None:
        norms = row_norms(X)
    # a row with NaN or an infinity has no norm to scale by: it stays as it is (a fit refuses
    # it; a prediction for it is missing)
    over = np.isfinite(norms) & (norms > bound * (1.0 + 5e-13))
    k = int(over.sum())
    if k == 0:
        return X, 0
    X = X.copy() if X.dtype.kind == "f" else X.astype(np.float64)
    idx = np.flatnonzero(over)
    factor = bound / norms[idx]
    plain = (factor >= TINY) & np.isfinite(factor)
    X[idx[plain]] *= factor[plain][:, None]
    rest = idx[~plain]  # 1e155-sized rows with a small bound, any row with a subnormal bound
    if rest.size:
        m = np.abs(X[rest]).max(axis=1)
        X[rest] = (X[rest] / m[:, None]) * (bound / (norms[rest] / m))[:, None]
    return X, k


# --- range-safe arithmetic for the privacy calibrations ---------------------------------------

def log1p_exp(x: float) -> float:
    """``log(1 + e^x)`` for any float ``x``, without overflow.

    Examples
    --------
    >>> log1p_exp(1000.0), log1p_exp(-1000.0), round(log1p_exp(0.0), 12)
    (1000.0, 0.0, 0.69314718056)
    """
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


def log_expm1(x: float, divisor: float = 1.0) -> float:
    """``log(exp(x / divisor) - 1)`` for ``x > 0``, without overflow or underflow.

    ``x / divisor`` may underflow (``x = 5e-324``) or ``exp`` overflow (``x = 1e30``): for a
    tiny quotient ``expm1(q) = q (1 + q/2 + ...)``, so the log is ``log x - log divisor`` to
    rounding; for a large one ``log(e^q - 1) = q + log1p(-e^-q)``.

    Examples
    --------
    >>> log_expm1(1e30, 20.0) == 1e30 / 20.0, log_expm1(5e-324, 4.0) == math.log(5e-324) - math.log(4.0)
    (True, True)
    """
    q = x / divisor
    if q < 1e-300:  # expm1(q) = q to rounding, and q itself may have underflowed
        return math.log(x) - math.log(divisor)
    if q > 30.0:
        return q + math.log1p(-math.exp(-q))
    return math.log(math.expm1(q))


def exp_or_raise(log_value: float, terms: dict, quantity: str, advice: dict, *,
                 zero_ok: bool = False, log_limit: float = LOG_FLOAT_MAX) -> float:
    """``exp(log_value)``, or a ``ValueError`` naming the argument that drives it out of range.

    ``terms`` maps each argument's name to ``(value, contribution)``, its additive share of
    ``log_value``; the culprit named first is the one with the largest share in the direction of
    the overflow (``log_value >= log_limit``) or of the underflow to 0 (refused unless
    ``zero_ok``). ``advice`` maps names to ``(what to do on overflow, on underflow)``.
    ``quantity`` says what is computed (with its formula).
    """
    value = math.exp(log_value) if log_value < log_limit else math.inf
    if math.isfinite(value) and (value > 0.0 or zero_ok):
        return value
    over = not math.isfinite(value)
    culprit = max(terms, key=lambda k: terms[k][1] if over else -terms[k][1])
    shown = ", ".join(f"{k}={v[0]!r}" for k, v in terms.items() if k != culprit)
    what = (f"too large (the limit here is about 1e{log_limit / _LN10:.0f})" if over
            else "underflow to 0 in double precision")
    hint = advice.get(culprit, ("", ""))[0 if over else 1]
    raise ValueError(f"{culprit}={terms[culprit][0]!r} makes {quantity} {what}: it would be about "
                     f"1e{log_value / _LN10:+.0f} (with {shown}); {hint}")


def label_vector(name: str, y, n: int, what: str = "1-D", noun: str = "labels") -> np.ndarray:
    """``y`` as a 1-D array of ``n`` labels (a column vector is flattened); dtype untouched.

    ``what`` and ``noun`` word the error messages ("must be {what}", "has k {noun}").
    """
    if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray):
        y = y.to_numpy()
    arr = np.asarray(y)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be {what}, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} {noun} but X has {n} rows; they must match")
    return arr


def as_pm1_labels(name: str, y, n: int) -> np.ndarray:
    """Labels given as 0/1, bool or -1/+1 returned as an ``int8`` array of -1/+1 (one byte a
    row: products with float arrays are the float products of ±1.0, bit for bit)."""
    arr = label_vector(name, y, n)
    if arr.dtype != np.bool_ and not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must be 0/1, bool or -1/+1 numbers, got dtype {arr.dtype}")
    one = arr if arr.dtype == np.bool_ else arr == 1
    out = one.astype(np.int8)                          # elementwise, no boolean indexing
    out *= 2
    out -= 1
    # 0/1 or -1/+1 (either class may be absent): every label not 1 is 0, or every one is -1
    if arr.dtype == np.bool_ or (one | (arr == 0)).all() or (one | (arr == -1)).all():
        return out
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    raise not_two_valued(name, np.unique(arr))


def not_two_valued(name: str, values: np.ndarray) -> ValueError:
    """The one error for labels that are not 0/1, bool or -1/+1 (``values``: their sorted
    distinct values; at most five are shown)."""
    shown = values[:5].tolist()
    return ValueError(f"{name} must be two-valued: 0/1, bool or -1/+1; got values {shown}"
                      f"{' ...' if values.size > 5 else ''}")


def real_vector(name: str, values, n: int, kind: str, shape: str) -> np.ndarray:
    """``values`` (array, list, pandas object; a scalar when ``n == 1``) as a float64 vector of
    length ``n``; ``kind`` and ``shape`` word the errors ("must be {kind}", "must be {shape}",
    ``{n}`` filled in)."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
    arr = np.asarray(values)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number) \
            or np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be {kind}, got dtype {arr.dtype}")
    arr = arr.astype(np.float64).reshape(-1) if arr.ndim <= 1 else arr
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be {shape.format(n=n)}, got shape {np.shape(values)}")
    return arr


def weights_out_of_bound(name: str, bound_name: str, bound: float) -> str:
    """The one message for weights outside ``[0, bound]`` (no statistic of the data in it)."""
    return (f"{name} must lie in [0, {bound_name}] = [0, {bound}]: some are outside it; use a "
            f"public {bound_name} that bounds every weight")


def as_weights(name: str, weights, n: int, bound_name: str, bound) -> tuple[np.ndarray | None, float]:
    """Check observation weights against their public bound; return (weights, bound)."""
    if weights is None:
        if bound is not None:
            check_real(bound_name, bound, low=0.0, low_open=True)
        return None, 1.0
    if bound is None:
        raise ValueError(f"{name} given without {bound_name}: the privacy calibration needs a public "
                         f"upper bound on every weight; pass {bound_name}=<bound>")
    b = check_real(bound_name, bound, low=0.0, low_open=True)
    w = real_vector(name, weights, n, "real numbers", "a 1-D array of length {n} (one weight "
                    "per row)")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if (w < 0).any() or (w > b).any():
        raise ValueError(weights_out_of_bound(name, bound_name, b))
    return w, b


def sparse_row_norms(X) -> np.ndarray:
    """L2 norms of the rows of a CSR matrix from its stored values, exact to rounding at every
    scale: rows whose sum of squares overflows or underflows are recomputed as
    ``m * ||x / m||`` with ``m`` the row's largest absolute value."""
    import scipy.sparse as sp

    data = X.data
    with np.errstate(over="ignore"):   # the rows' sums of squares: one sparse product
        squares = sp.csr_matrix((data * data, X.indices, X.indptr), shape=X.shape)
        norms = np.sqrt(np.asarray(squares @ np.ones(X.shape[1])).ravel())
    for i in np.flatnonzero(~np.isfinite(norms) | ((norms > 0) & (norms < 1e-140))):
        row = np.abs(data[X.indptr[i]:X.indptr[i + 1]])
        m = row.max()
        norms[i] = m * np.sqrt(np.sum((row / m) ** 2))
    return norms


def clip_sparse_rows(X, bound: float):
    """:func:`clip_rows` for a CSR matrix: rows whose norm (:func:`sparse_row_norms`) exceeds
    ``bound`` by more than a relative 5e-13 are scaled onto the sphere; stays sparse."""
    import scipy.sparse as sp

    norms = sparse_row_norms(X)
    scale = np.ones(X.shape[0])
    over = norms > bound * (1.0 + 5e-13)
    scale[over] = bound / norms[over]
    return sp.csr_matrix(sp.diags(scale) @ X)


def is_sparse(X) -> bool:
    """True for a ``scipy.sparse`` matrix or array (checked without importing scipy.sparse)."""
    return type(X).__module__.startswith("scipy.sparse")


def with_intercept(X):
    """``[1, X]``: a column of ones first; a ``scipy.sparse`` ``X`` gets a stored column of ones
    and stays sparse (CSR, O(nnz + n)).

    Examples
    --------
    >>> with_intercept(np.array([[2.0], [3.0]]))
    array([[1., 2.],
           [1., 3.]])
    """
    n = X.shape[0]
    if is_sparse(X):
        import scipy.sparse as sp

        ones = sp.csr_matrix((np.ones(n), np.zeros(n, dtype=np.int32), np.arange(n + 1)),
                             shape=(n, 1))
        return sp.hstack([ones, X], format="csr")
    return np.concatenate([np.ones((n, 1)), X], axis=1)
