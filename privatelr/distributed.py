r"""Fitting on Dask collections: the ERM objective as one map-reduce per solver step.

The estimators of :mod:`privatelr.erm` only need sums over rows — the loss
:math:`\sum_i a_i\ell(y_i x_i^\top w)`, the gradient :math:`\sum_i a_i y_i \ell'(\cdot) x_i` and
the Hessian :math:`\sum_i a_i \ell''(\cdot) x_i x_i^\top` — so they distribute exactly. Here a
Dask array ``X`` (chunked by rows, one column chunk) is persisted once on the workers; every
evaluation of the objective is ONE pass: each partition returns its partial sums packed in a
vector of ``2 + d + d^2`` floats, a tree sum (``split_every=8``) adds them, and the client
receives a single ``(value, gradient, d x d Hessian)``. The client therefore never holds more
than O(d²) numbers derived from the data, whatever ``n``.

Everything random happens on the client, exactly as in memory: :func:`fit_dask` builds ONE
Generator with :func:`~privatelr.mechanisms.check_random_state`, calls the same
:func:`~privatelr.erm.calibrate` (all privacy arithmetic stays there) and draws the noise with
:func:`~privatelr.mechanisms.sphere_gamma_noise` in the same order as :func:`privatelr.erm.fit`
(objective noise before the solver, output noise after it), so the same seed gives the same
noise and, with the same solver path, the same coefficients as the in-memory fit.

**Public record count.** ``n`` is computed exactly (a count of the rows) and used in the
calibration (the noise scale of output perturbation and the ε' of objective perturbation depend
on it). As in Chaudhuri, Monteleoni & Sarwate (JMLR 2011), whose neighbouring data sets differ in
one record (same ``n``), the number of records is treated as **public**; it is not charged to
the privacy budget. The validation pass also reports, as the in-memory fit does, the number of
rows above ``data_norm`` and the largest row norm in a :class:`~privatelr.PrivacyWarning`
(only when the bound is violated, and only without ``clip=True``); those figures are not covered
by the guarantee.

**Line search.** :meth:`DaskERMObjective.line` costs one pass: it evaluates value, gradient (and
the Hessian when asked) at the full step ``w + p``, which Newton's method accepts in nearly every
iteration, so the following :meth:`~DaskERMObjective.evaluate` costs nothing. A trial step
``t != 1`` costs one value-only pass (margins are not cached between passes: the workers keep
no state but the persisted data, so a lost worker only costs a recomputation).

**Entry points.** Users call the usual functions with Dask collections; each dispatches here
with one line: :func:`privatelr.erm.fit` → :func:`fit_dask`; :func:`privatelr.dplr` →
:func:`dplr_dask` (formula + Dask DataFrame, factor levels declared up front) and
:func:`privatelr.predict` → :func:`predict_dask` (lazy, partition-wise);
:func:`privatelr.noisy_dot_product` → :func:`noisy_dot_product_dask` (one pass);
:func:`privatelr.walr_fit` → :func:`walr_fit_dask` (Newton); :func:`privatelr.walr` →
:func:`walr_dask`.

**Memory.** Workers hold the persisted data (for ``dplr`` the design rows, and transiently the
design handed to the engine); the client holds O(d²) numbers per pass. Partitions are
processed in chunks of about 8 MB, so a worker's temporaries do not grow with the partition.

Dask is an optional dependency (``pip install privatelr[dask]``); it is imported lazily here
and this module is only imported when a Dask collection is passed.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._validation import (check_gradient_scale, check_real, clip_rows, label_vector,
                          magnitude_error, row_norms, too_large)
from .exceptions import PrivacyWarning
from .losses import Loss, get_loss
from .mechanisms import check_random_state
from .objective import _CHUNK_BYTES, _HESSIAN_F32_MIN_D
from .solver import minimize

__all__ = ["DaskERMObjective", "fit_dask", "is_dask_collection", "dplr_dask", "predict_dask",
           "noisy_dot_product_dask", "walr_fit_dask", "walr_dask"]

_SPLIT_EVERY = 8


def is_dask_collection(*objs) -> bool:
    """True when any argument is a Dask collection (checked without importing dask)."""
    for obj in objs:
        if obj is not None and type(obj).__module__.split(".")[0] == "dask":
            return True
    return False


def _import_dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise ImportError("fitting on Dask collections needs dask: pip install 'privatelr[dask]'"
                          ) from exc
    return dask, da


# --- per-partition kernels (run on the workers) -----------------------------------------------

def _terms(loss, m, second):
    terms = getattr(loss, "terms", None)
    if terms is not None:
        return terms(m, second)
    return loss.value(m), loss.derivative(m), (loss.second_derivative(m) if second else None)


def _block_sums(Xb, auxb, v, loss, order, f32):
    """Partial sums of one partition at ``v``, packed as a ``(1, 2 + d + d*d)`` row.

    ``auxb`` holds the ±1 labels in column 0 and, when present, the weights in column 1.
    Layout: ``[rows, sum a l(m), sum r x (d), sum a l'' x x^T (d*d)]`` with ``m = y x^T v`` and
    ``r = a y l'(m)``; the gradient (``order >= 1``) and Hessian (``order == 2``) slots stay 0
    otherwise. Rows are processed in chunks of about 8 MB, so a worker's temporaries are bounded
    whatever the partition size.
    """
    nb, d = Xb.shape
    out = np.zeros(2 + d + d * d)
    out[0] = nb
    if nb == 0:
        return out[None, :]
    g = out[2:2 + d]
    H = out[2 + d:].reshape(d, d)
    weighted = auxb.shape[1] > 1
    chunk = max(256, _CHUNK_BYTES // (8 * d))
    total = 0.0
    for start in range(0, nb, chunk):
        rows = slice(start, min(start + chunk, nb))
        Xc = Xb[rows]
        y = auxb[rows, 0]
        m = y * (Xc @ v)
        lv, d1, d2 = _terms(loss, m, order == 2)
        a = auxb[rows, 1] if weighted else None
        total += float(lv @ a) if weighted else float(lv.sum())
        if order >= 1:
            r = y * d1
            if weighted:
                r = r * a
            g += Xc.T @ r
        if order == 2:
            c = d2 * a if weighted else d2
            active = c > 0
            if not active.all():  # Huber: rows outside the quadratic band add no curvature
                Xc, c = Xc[active], c[active]
                if c.size == 0:
                    continue
            sq = np.sqrt(c)
            if f32:  # as in memory: single-precision Hessian for large d (only shapes the step)
                Xs = Xc.astype(np.float32)
                Xs *= sq.astype(np.float32)[:, None]
            else:
                Xs = Xc * sq[:, None]
            H += Xs.T @ Xs
    out[1] = total
    return out[None, :]


def _block_stats(Xb, yb, wb, data_norm):
    """One validation row per partition (see :func:`_validate`).

    Layout: ``[rows, rows with NaN/inf, labels, bad labels, labels not 0/1, labels not -1/+1,
    largest row norm, rows above data_norm, weight min, weight max, bad weights, weights,
    largest |x|]``, over the finite rows. Norms come from
    :func:`~privatelr._validation.row_norms` (no overflow), compared with ``data_norm`` as
    :func:`privatelr.erm.check_data_norm` does.
    """
    nb = Xb.shape[0]
    finite_rows = np.isfinite(Xb).all(axis=1)
    n_finite = int(finite_rows.sum())
    Xf = Xb if n_finite == nb else Xb[finite_rows]
    norms = row_norms(Xf) if Xf.size else np.zeros(Xf.shape[0])
    max_abs = max(float(Xf.max()), -float(Xf.min())) if Xf.size else 0.0
    y = yb.reshape(-1).astype(np.float64)
    y_ok = np.isfinite(y)
    out = np.array([
        nb,
        nb - n_finite,
        y.size,
        y.size - int(y_ok.sum()),
        int(((y != 0.0) & (y != 1.0) & y_ok).sum()),
        int(((y != -1.0) & (y != 1.0) & y_ok).sum()),
        float(norms.max()) if norms.size else 0.0,
        int((norms > data_norm * (1.0 + 5e-13)).sum()),
        np.nan, np.nan, 0.0, 0.0,
        max_abs,
    ], dtype=float)
    if wb is not None:
        w = wb.reshape(-1).astype(np.float64)
        ok = np.isfinite(w)
        out[8] = float(w[ok].min()) if ok.any() else np.inf
        out[9] = float(w[ok].max()) if ok.any() else -np.inf
        out[10] = w.size - int(ok.sum())
        out[11] = w.size
    return out[None, :]


def _bad_labels(yb):
    """Up to five distinct label values of a partition that are not 0, 1 or -1."""
    y = yb.reshape(-1).astype(np.float64)
    return np.unique(y[(y != 0) & (y != 1) & (y != -1)])[:5]


def _clip_block(Xb, data_norm):
    """Rows of one partition clipped onto the sphere of radius ``data_norm``
    (:func:`~privatelr._validation.clip_rows`: no overflow, copy only when a row is clipped)."""
    return clip_rows(Xb, data_norm)[0]


def _aux_block(yb, wb=None):
    y = np.where(yb.reshape(-1) == 1, 1.0, -1.0)
    if wb is None:
        return y[:, None]
    return np.column_stack([y, wb.reshape(-1).astype(np.float64)])


# --- the objective -----------------------------------------------------------------------------

class DaskERMObjective:
    r"""The ERM objective of :class:`privatelr.objective.ERMObjective` over a Dask array.

    Same protocol (``evaluate``, ``line``, ``value``, ``subsample``, ``n``, ``d``, ``passes``,
    ``value_scale``), same formula

    .. math:: J(w) = \frac1n\sum_i a_i\,\ell(y_i x_i^\top w) + \frac\lambda2\|w\|^2 + \frac1n b^\top w,

    but every evaluation is one map-reduce over the partitions of ``X`` (see the module
    docstring). The client only ever receives ``2 + d + d^2`` floats per pass.

    Parameters
    ----------
    X : dask.array.Array, shape (n, d), float64
        Chunked by rows only (one column chunk), known chunk sizes; ideally persisted.
    aux : dask.array.Array, shape (n, 1) or (n, 2)
        Labels in ±1 (column 0) and optional weights (column 1), same row chunks as ``X``.
    loss : Loss
    lambda_ : float
    noise : (d,) ndarray or None
        Objective-perturbation vector ``b`` (kept on the client; enters as ``b @ w / n``).

    Examples
    --------
    >>> import dask.array as da
    >>> from privatelr.losses import LogisticLoss
    >>> X = da.from_array(np.c_[np.ones(8), np.linspace(-1, 1, 8)] / 2, chunks=(4, 2))
    >>> aux = da.from_array(np.array([-1., -1, 1, -1, 1, 1, -1, 1])[:, None], chunks=(4, 1))
    >>> obj = DaskERMObjective(X, aux, LogisticLoss(), 0.1)
    >>> f, g, H = obj.evaluate(np.zeros(2), True)
    >>> round(f, 6), H.shape, obj.passes
    (0.693147, (2, 2), 1)
    """

    def __init__(self, X, aux, loss: Loss, lambda_: float, noise=None, *, n: int | None = None):
        self.X = X
        self.aux = aux
        self.loss = loss
        self.lambda_ = float(lambda_)
        self.n = int(X.shape[0]) if n is None else int(n)
        self.d = int(X.shape[1])
        self.linear = np.zeros(self.d) if noise is None else np.asarray(noise, float) / self.n
        self.passes = 0
        self.value_scale = 0.0
        self._f32 = self.d >= _HESSIAN_F32_MIN_D
        self._ahead = None  # (w, f, g, H) prepared by the last line search at t = 1
        self._last = None   # (w, f, g, H) of the last evaluation

    def subsample(self, m: int) -> "DaskERMObjective":
        """The same objective on every ``k``-th row (``k = n // m``), persisted on the workers.

        The rows are exactly those of :meth:`ERMObjective.subsample` (a global stride), so a
        warm-started Dask fit follows the in-memory fit's path. Used only for a starting point.
        """
        _, _ = _import_dask()
        k = max(1, self.n // max(1, int(m)))
        Xs, auxs = self.X[::k], self.aux[::k]
        Xs, auxs = _persist(Xs, auxs)
        sub = DaskERMObjective(Xs, auxs, self.loss, self.lambda_)
        sub.linear = self.linear.copy()
        return sub

    def _pass(self, v, order: int):
        """One map-reduce: ``(f, g, H)`` at ``v`` (``g``/``H`` None below ``order`` 1/2)."""
        _, da = _import_dask()
        d = self.d
        v = np.ascontiguousarray(v, dtype=float)
        parts = da.map_blocks(_block_sums, self.X, self.aux, v=v, loss=self.loss, order=order,
                              f32=self._f32, dtype=float,
                              chunks=((1,) * self.X.numblocks[0], (2 + d + d * d,)))
        total = np.asarray(parts.sum(axis=0, split_every=_SPLIT_EVERY).compute(), dtype=float)
        self.passes += 1
        data = total[1] / self.n
        ridge, lin = 0.5 * self.lambda_ * (v @ v), self.linear @ v
        self.value_scale = float(abs(data) + ridge + abs(lin))
        f = float(data + ridge + lin)
        g = H = None
        if order >= 1:
            g = total[2:2 + d] / self.n + self.lambda_ * v + self.linear
        if order == 2:
            H = total[2 + d:].reshape(d, d) / self.n
            H[np.diag_indices_from(H)] += self.lambda_
        return f, g, H

    # -- protocol used by the solver ---------------------------------------------------------
    def value(self, w) -> float:
        for cached in (self._ahead, self._last):
            if cached is not None and np.array_equal(w, cached[0]):
                return cached[1]
        return self._pass(w, 0)[0]

    def evaluate(self, w, hessian: bool = True):
        """Return ``(value, gradient, hessian_or_None)`` at ``w``: one pass, or none when the
        last line search (or evaluation) already prepared this point."""
        for cached in (self._ahead, self._last):
            if (cached is not None and np.array_equal(w, cached[0])
                    and (cached[3] is not None or not hessian)):
                H = cached[3]
                return cached[1], cached[2].copy(), (None if H is None or not hessian else H.copy())
        f, g, H = self._pass(w, 2 if hessian else 1)
        self._last = (np.array(w, dtype=float), f, g, H)
        return f, g.copy(), (None if H is None else H.copy())

    def line(self, w, p, hessian: bool = True):
        """Restrict ``J`` to ``w + t p``; one pass prepares ``t = 1`` (value, gradient and,
        when ``hessian``, the Hessian); any other ``t`` costs one value-only pass."""
        w = np.asarray(w, dtype=float)
        p = np.asarray(p, dtype=float)
        w1 = w + 1.0 * p
        f1, g1, H1 = self._pass(w1, 2 if hessian else 1)
        self._ahead = (w1, f1, g1, H1)

        def phi(t: float) -> float:
            if t == 1.0:
                return f1
            return self._pass(w + t * p, 0)[0]

        return phi


# --- data preparation and validation ---------------------------------------------------------

def _persist(*arrays):
    dask, _ = _import_dask()
    return dask.persist(*arrays)


def _as_dask_matrix(X, da):
    """A float64 Dask array chunked by rows only (dask DataFrames are converted)."""
    if is_dask_collection(X) and hasattr(X, "to_dask_array"):  # dask DataFrame / Series
        X = X.to_dask_array()  # row counts are taken after persisting (no extra read)
    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a Dask array or DataFrame here, got {type(X).__name__}")
    dt = X.dtype
    if dt == object or not (np.issubdtype(dt, np.number) or dt == np.bool_):
        raise TypeError(f"X must hold numbers, got dtype {dt}; encode factors first "
                        "(dplr() does this for you)")
    if np.issubdtype(dt, np.complexfloating):
        raise TypeError(f"X must be real, got complex dtype {dt}")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (rows x columns), got {X.ndim}-D")
    if X.shape[1] == 0:
        raise ValueError("X has no columns; need at least one")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X.astype(np.float64)


def _lazy_vector(v):
    """A Dask Series becomes a Dask array (row counts unknown until persisted)."""
    if is_dask_collection(v) and hasattr(v, "to_dask_array"):
        return v.to_dask_array()
    return v


def _known_chunks(a):
    if a is not None and hasattr(a, "chunks") and any(np.isnan(c) for c in a.chunks[0]):
        a.compute_chunk_sizes()  # cheap once persisted: the blocks are in memory
    return a


def _as_dask_vector(name, v, chunks, n_rows, da):
    if v is None:
        return None
    if not isinstance(v, da.Array):
        v = label_vector(name, v, n_rows, what="1-D with one entry per row of X",
                         noun="labels" if name == "y" else "entries")
        v = da.from_array(v, chunks=(chunks,))
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got {v.ndim}-D")
    dt = v.dtype
    if dt != np.bool_ and (dt == object or not np.issubdtype(dt, np.number)
                           or np.issubdtype(dt, np.complexfloating)):
        raise TypeError(f"{name} must hold real numbers (or bool), got dtype {dt}")
    _known_chunks(v)
    if v.shape[0] != n_rows:
        what = "labels" if name == "y" else "entries"
        raise ValueError(f"{name} has {v.shape[0]} {what} but X has {n_rows} rows; they must match")
    if v.chunks[0] != chunks:
        v = v.rechunk((chunks,))
    return v


def _validate(X, y, weights, data_norm, weights_bound):
    """One pass over the persisted data: counts, finiteness, label and weight ranges, norms.

    Refuses what :func:`privatelr.erm.fit` refuses in memory, with the same messages: NaN or
    infinite values, then values too large for the passes
    (:func:`~privatelr._validation.too_large`). Returns ``(n, rows above data_norm, largest
    row norm)``.
    """
    _, da = _import_dask()
    Xb = X.to_delayed().ravel()
    yb = y.to_delayed().ravel()
    wb = weights.to_delayed().ravel() if weights is not None else [None] * len(Xb)
    import dask

    rows = [da.from_delayed(dask.delayed(_block_stats)(a, b, c, data_norm), shape=(1, 13),
                            dtype=float)
            for a, b, c in zip(Xb, yb, wb)]
    stats = da.concatenate(rows, axis=0).compute()
    n = int(stats[:, 0].sum())
    bad_x = int(stats[:, 1].sum())
    if bad_x:
        raise ValueError(f"X contains NaN or infinite values in {bad_x} row(s); remove or impute them")
    max_abs = float(stats[:, 12].max())
    if too_large(max_abs):  # the in-memory rule and message (scan_rows)
        raise magnitude_error("X", max_abs)
    if int(stats[:, 3].sum()):
        raise ValueError("y contains NaN or infinite values")
    if int(stats[:, 4].sum()) and int(stats[:, 5].sum()):
        import dask

        parts = dask.compute(*[dask.delayed(_bad_labels)(b) for b in yb])
        shown = sorted(set(np.concatenate(parts).tolist()))
        raise ValueError(f"y must be two-valued: 0/1, bool or -1/+1; got values outside it such as "
                         f"{shown[:5]}")
    if weights is not None:
        if int(stats[:, 10].sum()):
            raise ValueError("weights contains NaN or infinite values")
        lo, hi = float(np.min(stats[:, 8])), float(np.max(stats[:, 9]))
        if lo < 0 or hi > weights_bound:
            raise ValueError(f"weights must lie in [0, weights_bound] = [0, {weights_bound}]; got "
                             f"range [{lo}, {hi}]")
    largest = float(stats[:, 6].max())
    check_gradient_scale(1.0 if weights is None else float(np.max(stats[:, 9])), largest)
    return n, int(stats[:, 7].sum()), largest


def fit_dask(X, y, *, lambda_: float, eps: float, method: str = "objective",
             loss: str | Loss = "logistic", h: float = 0.5, data_norm: float = 1.0,
             clip: bool = False, weights=None, weights_bound: float | None = None,
             random_state=None, small_eps: str = "adjust", solver: str = "auto",
             gtol: float = 1e-10, maxiter: int | None = None, norm_check: bool = True,
             accountant=None, allow_nonconverged: bool = False):
    """:func:`privatelr.erm.fit` on Dask collections (called by it; same arguments and result).

    ``X`` is a Dask array (or DataFrame of numeric columns) chunked by rows; ``y`` and
    ``weights`` are Dask arrays/Series with the same number of rows, or NumPy arrays. The data
    are persisted once on the workers (on the cluster of the current ``distributed.Client``, or
    in local memory with Dask's default scheduler); one validation pass counts the rows, checks
    finiteness, labels, weights and row norms (clipping, when asked, is applied partition-wise);
    then every solver step is one map-reduce returning value, gradient and Hessian (see the
    module docstring). The number of rows ``n`` is treated as public (the *public record count*
    assumption of the module docstring).

    Returns
    -------
    ERMResult
        The same object as the in-memory fit; equal to it (same seed, same data) up to the
        rounding of the sums.

    Examples
    --------
    >>> import dask.array as da
    >>> from privatelr import erm
    >>> rng = np.random.default_rng(0)
    >>> Xn = np.c_[np.full(400, 0.5), rng.uniform(-0.5, 0.5, size=(400, 2))]
    >>> yn = (Xn[:, 1] > 0).astype(int)
    >>> res = erm.fit(da.from_array(Xn, chunks=(100, 3)), da.from_array(yn, chunks=100),
    ...               lambda_=0.01, eps=1.0, random_state=1)
    >>> mem = erm.fit(Xn, yn, lambda_=0.01, eps=1.0, random_state=1)
    >>> bool(np.allclose(res.coef, mem.coef, rtol=0, atol=1e-10))
    True
    """
    from . import erm  # import here: erm dispatches to this module
    from .accountant import require_budget

    if accountant is not None:  # before the data are read
        require_budget(accountant, eps)
    if not isinstance(allow_nonconverged, (bool, np.bool_)):
        raise TypeError(f"allow_nonconverged must be True or False, got {allow_nonconverged!r}")
    lambda_ = check_real("lambda_", lambda_, low=0.0, low_open=True)
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    if not isinstance(clip, (bool, np.bool_)):
        raise TypeError(f"clip must be True or False, got {clip!r}")
    if method not in erm._METHODS:
        raise ValueError(f"method must be 'objective' or 'output', got {method!r}")
    loss_obj = get_loss(loss, h)
    if float(loss_obj.lipschitz) > 1.0:
        raise ValueError(f"loss {loss_obj.name!r} declares Lipschitz constant "
                         f"{loss_obj.lipschitz} > 1; the calibration needs |l'| <= 1")
    erm._check_curvature(loss_obj)
    if weights is None:
        A = 1.0
        if weights_bound is not None:
            check_real("weights_bound", weights_bound, low=0.0, low_open=True)
    else:
        if weights_bound is None:
            raise ValueError("weights given without weights_bound: the privacy calibration needs "
                             "a public upper bound on every weight; pass weights_bound=<bound>")
        A = check_real("weights_bound", weights_bound, low=0.0, low_open=True)
    rng = check_random_state(random_state)

    _, da = _import_dask()
    y, weights = _lazy_vector(y), _lazy_vector(weights)
    if not is_dask_collection(X):  # only y or weights is a Dask collection
        raise TypeError("X must be a Dask array or DataFrame when y or weights is a Dask "
                        "collection (convert X with dask.array.from_array)")
    X = _as_dask_matrix(X, da)
    # one persist for everything that is lazy: a shared source (e.g. one Parquet read giving
    # both X and y) is read once
    lazy = [a for a in (X, y, weights) if isinstance(a, da.Array)]
    done = dict(zip(map(id, lazy), _persist(*lazy)))
    X, y, weights = (done.get(id(a), a) for a in (X, y, weights))
    _known_chunks(X)
    n_rows = int(X.shape[0])
    if n_rows == 0:
        raise ValueError("X is empty (no rows); need at least one row")
    y = _as_dask_vector("y", y, X.chunks[0], n_rows, da)
    weights = _as_dask_vector("weights", weights, X.chunks[0], n_rows, da)
    y, weights = _persist(y, weights) if weights is not None else (_persist(y)[0], None)
    n, n_over, largest = _validate(X, y, weights, data_norm, A)
    d = int(X.shape[1])

    cal = erm.calibrate(n, d, eps=eps, lambda_=lambda_, method=method,
                        curvature=loss_obj.curvature, data_norm=data_norm, weights_bound=A,
                        small_eps=small_eps)
    private = cal.method != "nonprivate"
    if accountant is not None:
        accountant.spend(eps, note=f"erm.fit {cal.method} perturbation, {loss_obj.name} loss "
                                   "(dask)")
    n_exceeding = n_clipped = 0
    if private and norm_check and n_over:
        n_exceeding = n_over
        if clip:
            X = _persist(X.map_blocks(_clip_block, data_norm, dtype=float))[0]
            n_clipped = n_over
        else:
            warnings.warn(f"{n_over} of {n} rows of X have L2 norm above data_norm={data_norm:g} "
                          f"(largest {largest:.4g}): the differential-privacy guarantee does not "
                          "hold for them. Pass clip=True to clip them into the ball, or rescale "
                          "with a public bound.", PrivacyWarning, stacklevel=3)

    if weights is None:
        aux = y.map_blocks(_aux_block, dtype=float, new_axis=1, chunks=(y.chunks[0], (1,)))
    else:
        aux = da.map_blocks(_aux_block, y, weights, dtype=float, new_axis=1,
                            chunks=(y.chunks[0], (2,)))
    (aux,) = _persist(aux)
    del y, weights

    return erm._release(lambda noise: DaskERMObjective(X, aux, loss_obj, cal.lambda_,
                                                       noise=noise, n=n),
                        cal, rng, loss_name=loss_obj.name, solver=solver, gtol=gtol,
                        maxiter=maxiter, n_exceeding=n_exceeding, n_clipped=n_clipped,
                        allow_nonconverged=bool(allow_nonconverged))


# --- dplr on Dask DataFrames ------------------------------------------------------------------

_UNKNOWN_CATEGORIES = "__UNKNOWN_CATEGORIES__"


def _schema_frame(meta):
    """The Dask DataFrame's schema as an empty pandas frame; categorical columns whose
    categories Dask does not know are plain text (their levels must then be declared)."""
    import pandas as pd

    meta = meta.copy()
    meta.columns = [str(c) for c in meta.columns]
    for col in meta.columns:
        dtype = meta[col].dtype
        if isinstance(dtype, pd.CategoricalDtype) and (
                not len(dtype.categories) or _UNKNOWN_CATEGORIES in map(str, dtype.categories)):
            meta[col] = meta[col].astype(object)
    return meta


def _dplr_block(part, spec, data_norm, weights_col=None):
    """Raw design of one partition: ``([y01 | X], stats)``; rows with missing values dropped.

    stats = [rows read, rows dropped, 0, positives, covariate rows above data_norm, largest
    squared covariate norm].
    """
    frame = part.reset_index(drop=True)
    frame.columns = [str(c) for c in frame.columns]
    rows = spec.rows(frame, raw=True, what="a partition of data")
    X, y = rows.X, rows.y
    k = int(spec.intercept)
    cov = X[:, k:]
    norms = row_norms(cov)
    stats = np.array([len(frame), rows.n_dropped, 0, float(y.sum()),
                      int((norms > data_norm * (1.0 + 5e-13)).sum()),
                      float(norms.max() ** 2) if norms.size else 0.0])
    cols = [y, X]
    if weights_col is not None:  # WALR: the weights of the rows kept, as the last column
        cols.append(frame[weights_col].to_numpy(dtype=np.float64)[rows.complete])
    width = X.shape[1] + 1 + (weights_col is not None)
    return np.column_stack(cols) if X.shape[0] else np.zeros((0, width)), stats


def _finish_block(block, intercept, preprocess):
    """Design handed to the engine: the spec's public map applied to one block."""
    return preprocess.apply(block[:, 1:], intercept)


def _norm_block(block, intercept, preprocess, data_norm):
    """Covariate rows of one finished block above ``data_norm`` (before any clipping)."""
    from dataclasses import replace

    X = replace(preprocess, clip=None).apply(block[:, 1:], intercept)
    norms = row_norms(X[:, int(intercept):])
    return np.array([[int((norms > data_norm * (1.0 + 5e-13)).sum())]])


def _dask_design(formula, data, levels, data_norm, *, what, weights_col=None):
    """Spec from the schema + declared levels, then one pass: persisted design rows per partition.

    Returns ``(spec, design, stats, n_total, n_dropped, n)`` with ``design`` a persisted Dask
    array ``[y01 | X (| weights)]`` (known chunks) and ``stats`` one row per partition (see
    :func:`_dplr_block`).
    """
    from .design import formula_text, make_spec

    dask, da = _import_dask()
    if not isinstance(formula, str) and type(formula).__module__.split(".")[0] != "formulaic":
        raise TypeError(f"{what} on a Dask DataFrame needs a formula: {what}('y ~ x1 + x2', ddf, ...)")
    if not hasattr(data, "to_delayed") or not hasattr(data, "columns"):
        raise TypeError(f"data must be a Dask DataFrame, got {type(data).__name__}")
    spec = make_spec(formula_text(formula), _schema_frame(data._meta), levels=levels,
                     learn=False, why=f"{what} on Dask data", hint=" (on Dask data levels "
                     "are never learned from the rows, even at eps=0)")
    n_classes = len(spec.response_levels)
    if n_classes > 2 and what == "walr":
        raise ValueError(f"the response of {formula!r} has {n_classes} declared values; WALR "
                         "needs a two-valued (0/1, logical or two-level factor) response")
    if n_classes > 2:
        warnings.warn(f"dplr: the response {spec.response!r} has {n_classes} declared classes; "
                      f"fitting first level {spec.labels[0]!r} (coded 0) against the rest "
                      f"({spec.labels[1]!r})", UserWarning, stacklevel=3)

    # ---- one pass over the source: design rows per partition, persisted --------------------
    d_raw = len(spec.formulaic_columns)
    parts = [dask.delayed(_dplr_block, nout=2)(p, spec, data_norm, weights_col)
             for p in data.to_delayed()]
    persisted = dask.persist(*[x for pair in parts for x in pair])
    blocks, stats = persisted[0::2], persisted[1::2]
    stats = np.array(dask.compute(*stats)).reshape(-1, 6)
    n_total, n_dropped = int(stats[:, 0].sum()), int(stats[:, 1].sum())
    n = n_total - n_dropped
    if n == 0:
        raise ValueError("every row has a missing value in a model variable; nothing to fit")
    lengths = (stats[:, 0] - stats[:, 1]).astype(int)
    width = d_raw + 1 + (weights_col is not None)
    design = da.concatenate([da.from_delayed(b, shape=(int(m), width), dtype=float)
                             for b, m in zip(blocks, lengths)], axis=0)
    if design.numblocks[0] > 1 and 0 in design.chunks[0]:
        design = design.rechunk({0: tuple(c for c in design.chunks[0] if c)})
    return spec, design, stats, n_total, n_dropped, n


def dplr_dask(formula, data, *, levels=None, lambda_, eps, verbose, rp_dim, threshold, do_scale,
              op, data_norm, clip, compat, rng, call):
    """``dplr(formula, dask_dataframe, ...)``: called by :func:`privatelr.dplr` (validated args).

    The design spec is built ONCE, before any data is read, from the DataFrame's schema and the
    declared factor levels (categorical dtypes with known categories, bool columns, or
    ``levels={column: [...]}``); a factor whose levels are not declared is an error. Each
    partition is then turned into design rows with that spec (rows with missing values dropped,
    response values outside the declared levels an error) and persisted on the workers; the fit
    is :func:`fit_dask`. ``n`` (rows used) is the public record count (module docstring).

    Not available on Dask data (``ValueError``): ``do_scale`` and data-driven thresholds
    (both non-private statistics of the whole data; scale with public bounds instead). The
    training C-index is not computed (``CIndex`` is NaN): it would need every prediction on
    the client.
    """
    import math

    import pandas as pd

    from .design import Preprocess, r_number, rp_suggest
    from .dplr import DPLR, _say as say, _OUTSIDE_MESSAGE, _COMPAT_WARNING, default_lambda
    from .mechanisms import achlioptas_matrix

    if do_scale:
        raise ValueError("do_scale=True is not available on Dask data: it scales with the data's "
                         "(non-private) means and norms; rescale with public bounds instead")
    if threshold != "fixed":
        raise ValueError(f"threshold={threshold!r} is not available on Dask data (it needs every "
                         "training prediction, and is not private); use threshold='fixed'")
    spec, design, stats, n_total, n_dropped, n = _dask_design(formula, data, levels, data_norm,
                                                              what="dplr")
    if n_dropped:
        warnings.warn(f"dplr: dropped {n_dropped} of {n_total} rows with missing values (R's "
                      "na.omit); n counts the rows used", UserWarning, stacklevel=3)
    n_pos = float(stats[:, 3].sum())
    unique = n_pos == 0 or n_pos == n
    if unique:
        warnings.warn("dplr: the response has a single value (unique outcome); the private fit "
                      "is still run, status 'unique.outcomes'", UserWarning, stacklevel=3)

    # ---- lambda, projection, norm bound (as in memory, same generator order) ---------------
    private = eps > 0 and not math.isinf(eps)
    if lambda_ is None:
        lambda_ = default_lambda(n, eps)
        say(verbose, 1, f"dplr: set lambda to: {r_number(lambda_)}")
    k = int(spec.intercept)
    d_raw = len(spec.formulaic_columns)
    p_cov = d_raw - k
    did_rp, rp_p, q = False, None, None
    if rp_dim < 0:
        rp_dim = rp_suggest(n)
    if 0 < rp_dim < p_cov:
        say(verbose, 1, f"dplr: randomly projecting onto {rp_dim} dimensions.")
        rp_p = achlioptas_matrix(p_cov, rp_dim, rng)
        q, did_rp = rp_dim, True
    elif rp_dim > 0:
        warnings.warn(f"dplr: rp_dim={rp_dim} is not smaller than the number of covariates "
                      f"({p_cov}); not projecting", UserWarning, stacklevel=3)
    columns = ((["(Intercept)"] if k else []) + [f"dim.{j + 1}" for j in range(q)]
               if did_rp else None)
    pre = Preprocess(projection=None if rp_p is None else tuple(map(tuple, rp_p.tolist())),
                     clip=float(data_norm) if clip else None,
                     columns=None if columns is None else tuple(columns))
    spec = spec.with_preprocess(pre)
    n_exceeding = n_clipped = 0
    if not did_rp:
        n_exceeding = int(stats[:, 4].sum())
    else:
        counts = design.map_blocks(_norm_block, bool(k), pre, data_norm, dtype=float,
                                   chunks=((1,) * design.numblocks[0], (1,)))
        n_exceeding = int(counts.sum().compute())
    if n_exceeding and clip:
        n_clipped = n_exceeding
    elif n_exceeding and private and compat is None:
        raise ValueError(_OUTSIDE_MESSAGE.format(data_norm=data_norm))
    if compat == "PrivateLR":
        B = 1.0
        if private:
            warnings.warn(_COMPAT_WARNING, PrivacyWarning, stacklevel=3)
    else:
        B = math.sqrt(data_norm * data_norm + 1.0) if k else data_norm
    if k + (q if did_rp else p_cov) == 0:
        raise ValueError("the model has no columns (no intercept and no covariates)")
    d_fit = k + (q if did_rp else p_cov)
    Xfit = design.map_blocks(_finish_block, bool(k), pre, dtype=float,
                             chunks=(design.chunks[0], (d_fit,)))
    y = design[:, 0]

    method = "objective" if op else "output"
    res = fit_dask(Xfit, y, lambda_=lambda_, eps=eps, method=method, data_norm=B,
                   norm_check=False, random_state=rng)
    del design, Xfit, y
    if private and method == "objective":
        say(verbose, 1, f"dplr: privacy penalty due to regularizer: {r_number(res.penalty)}")
        if res.status.startswith("adjusted lambda"):
            say(verbose, 1, f"dplr: regularizer too small, adjusted to: {r_number(res.lambda_)}")
        say(verbose, 1, f"dplr: alpha - penalty: {r_number(res.eps_eff)}")
    status = res.status
    if unique:
        status = "unique.outcomes" + (" nonconvergence" if res.convergence else "")
    coef = pd.Series(res.coef, index=list(spec.columns), name="coefficients")
    return DPLR(
        coefficients=coef, value=float(res.value), counts=dict(res.counts),
        convergence=int(res.convergence), message=str(res.message) + " (Dask)",
        CIndex=float("nan"), eps=eps, eps_eff=float(res.eps_eff), penalty=float(res.penalty),
        lambda_=float(res.lambda_), n=int(n), d=int(res.d), p_tr=0.5, did_rp=did_rp, rp_dim=q,
        rp_p=rp_p, scaled=False, status=status, formula=spec.formula_r, call=call, spec=spec,
        method=res.method, norm_bound=float(B), data_norm=data_norm, compat=compat,
        threshold=threshold, n_exceeding=n_exceeding, n_clipped=n_clipped, n_dropped=n_dropped,
        scale_factor=1.0)


def _predict_part(part, spec, coef, p_tr, type):
    import pandas as pd

    from .dplr import scores_to_output

    X, complete = spec.transform(part.reset_index(drop=True), what="data")
    out = scores_to_output(X, complete, coef, p_tr, spec.labels, type)
    if type == "class":
        return pd.Series(out, index=part.index, dtype=object, name="class")
    return pd.Series(out, index=part.index, name="probabilities" if type != "link" else "link")


def predict_dask(model, data, type: str = "probabilities"):
    """``predict(model, dask_dataframe)``: a lazy Dask Series, computed partition-wise.

    Each partition is transformed with the model's stored spec (same columns, levels, scaling,
    projection) and scored; nothing is computed until the caller asks (``.compute()``,
    ``.to_parquet()``...). Rows with a missing value give NaN (probabilities) or None (labels).
    """
    import pandas as pd

    if not hasattr(data, "map_partitions"):
        raise TypeError("predict on Dask data needs a Dask DataFrame, got "
                        f"{type(data).__name__}")
    coef = model.coefficients.to_numpy()
    if type == "class":
        meta = pd.Series([], dtype=object, name="class")
    else:
        meta = pd.Series([], dtype=np.float64, name="probabilities" if type != "link" else "link")
    return data.map_partitions(_predict_part, model.spec, coef, float(model.p_tr), type,
                               meta=meta)


# --- WALR on Dask collections ------------------------------------------------------------------

def _ndp_block(Xb, yb, wb, clip):
    """One partition of the WALR release: packed ``[rows, bad X rows, y non-finite, y not 0/1,
    y not ±1, w non-finite, w min, w max, X min, X max, rows outside [0,1], outside-column flags
    (k), sum_i r_i clip(x_i) (k)]`` with ``r = w * 1{y = 1}``."""
    nb, k = Xb.shape
    finite = np.isfinite(Xb).all(axis=1)
    y = yb.reshape(-1).astype(np.float64)
    y_ok = np.isfinite(y)
    out = np.zeros(11 + 2 * k)
    out[0] = nb
    out[1] = nb - int(finite.sum())
    out[2] = y.size - int(y_ok.sum())
    out[3] = int(((y != 0.0) & (y != 1.0) & y_ok).sum())
    out[4] = int(((y != -1.0) & (y != 1.0) & y_ok).sum())
    r = (y == 1.0).astype(np.float64)
    out[6], out[7] = np.inf, -np.inf
    if wb is not None:
        w = wb.reshape(-1).astype(np.float64)
        ok = np.isfinite(w)
        out[5] = w.size - int(ok.sum())
        if ok.any():
            out[6], out[7] = float(w[ok].min()), float(w[ok].max())
        r = r * np.where(ok, w, 0.0)
    Xf = np.where(finite[:, None], Xb, 0.5)
    out[8] = float(Xf.min()) if nb else np.inf
    out[9] = float(Xf.max()) if nb else -np.inf
    outside = (Xf < 0.0) | (Xf > 1.0)
    out[10] = int(outside.any(axis=1).sum())
    out[11:11 + k] = outside.any(axis=0)
    out[11 + k:] = (np.clip(Xf, 0.0, 1.0) if clip else Xf).T @ r
    return out[None, :]


def noisy_dot_product_dask(X, y, *, eps: float, delta: float, weights=None,
                           weights_bound: float = 1.0, mechanism: str = "analytic",
                           clip: bool = False, random_state=None, accountant=None):
    """:func:`privatelr.walr.noisy_dot_product` on Dask collections (called by it).

    ONE pass over the partitions computes the weighted dot product ``sum_i w_i y_i x_i`` together
    with every check of the in-memory release (finiteness, labels, weights in ``[0, A]``,
    features in ``[0, 1]`` or clipped); the client receives ``11 + 2k`` numbers, computes σ from
    the public ``N``, ``k`` and ``A`` (public record count, module docstring) and draws the
    Gaussian noise from the same Generator as in memory, so the same data and seed give the same
    release.
    """
    from .accountant import require_budget
    from .mechanisms import gaussian_noise, gaussian_sigma
    from .walr import NoisyDotProduct, _check_release_args, _columns_of

    if accountant is not None:
        require_budget(accountant, eps, delta)
    _, da = _import_dask()
    columns = _columns_of(X)
    eps, delta = _check_release_args(eps, delta, mechanism, clip)
    if weights is None:
        A = 1.0
    else:
        A = check_real("weights_bound", weights_bound, low=0.0, low_open=True)
    X, y, weights = _prepare_xyw(X, y, weights, da, persist=False)
    k = int(X.shape[1])
    wb = weights if weights is not None else None
    if wb is None:
        parts = da.map_blocks(lambda a, b: _ndp_block(a, b, None, clip), X, y[:, None],
                              dtype=float, chunks=((1,) * X.numblocks[0], (11 + 2 * k,)))
    else:
        parts = da.map_blocks(lambda a, b, c: _ndp_block(a, b, c, clip), X, y[:, None],
                              wb[:, None], dtype=float,
                              chunks=((1,) * X.numblocks[0], (11 + 2 * k,)))
    st = np.asarray(parts.compute(), dtype=float)
    n = int(st[:, 0].sum())
    if int(st[:, 1].sum()):
        raise ValueError(f"X contains NaN or infinite values in {int(st[:, 1].sum())} row(s); "
                         "remove or impute them")
    if int(st[:, 2].sum()):
        raise ValueError("y contains NaN or infinite values")
    if int(st[:, 3].sum()) and int(st[:, 4].sum()):
        raise ValueError("y must be two-valued: 0/1, bool or -1/+1")
    if weights is not None:
        if int(st[:, 5].sum()):
            raise ValueError("weights contains NaN or infinite values")
        lo_w, hi_w = float(st[:, 6].min()), float(st[:, 7].max())
        if lo_w < 0 or hi_w > A:
            raise ValueError(f"weights must lie in [0, weights_bound] = [0, {A}]; got range "
                             f"[{lo_w}, {hi_w}]")
    lo, hi = float(st[:, 8].min()), float(st[:, 9].max())
    if (lo < 0.0 or hi > 1.0) and not clip:
        cols = np.flatnonzero(st[:, 11:11 + k].any(axis=0))
        names = [columns[j] if columns is not None else f"column {j}" for j in cols[:5]]
        raise ValueError(f"X must lie in [0, 1] for the label-sensitivity sqrt(k)/N to hold; "
                         f"{int(st[:, 10].sum())} row(s) fall outside (range [{lo:.4g}, "
                         f"{hi:.4g}], in {', '.join(map(str, names))}"
                         f"{' ...' if cols.size > 5 else ''}). Rescale the features with public "
                         "bounds, or pass clip=True to clip each record")
    sensitivity = A * np.sqrt(k) / n
    if np.isinf(eps):
        sigma, mech = 0.0, "none"
    else:
        sigma, mech = gaussian_sigma(sensitivity, eps, delta, mechanism), mechanism
    rng = check_random_state(random_state)
    value = st[:, 11 + k:].sum(axis=0) / n + gaussian_noise(k, sigma, rng)
    if accountant is not None:
        accountant.spend(eps, delta, note=f"noisy_dot_product ({mech} Gaussian, label-DP, dask)")
    return NoisyDotProduct(value=value, n=n, eps=eps, delta=delta, sigma=sigma, mechanism=mech,
                           sensitivity=float(sensitivity), weights_bound=A, columns=columns,
                           weighted=weights is not None)


def _prepare_xyw(X, y, weights, da, *, persist=True):
    """X (float64, row chunks, one column chunk), y and weights as aligned Dask arrays."""
    y, weights = _lazy_vector(y), _lazy_vector(weights)
    if not is_dask_collection(X):
        raise TypeError("X must be a Dask array or DataFrame when y or weights is a Dask "
                        "collection (convert X with dask.array.from_array)")
    X = _as_dask_matrix(X, da)
    lazy = [a for a in (X, y, weights) if isinstance(a, da.Array)]
    done = dict(zip(map(id, lazy), _persist(*lazy) if persist else lazy))
    X, y, weights = (done.get(id(a), a) for a in (X, y, weights))
    if any(np.isnan(c) for c in X.chunks[0]):
        if not persist:
            (X,) = _persist(X)
        _known_chunks(X)
    n_rows = int(X.shape[0])
    if n_rows == 0:
        raise ValueError("X is empty (no rows); need at least one row")
    if y is not None:
        y = _as_dask_vector("y", y, X.chunks[0], n_rows, da)
    weights = _as_dask_vector("weights", weights, X.chunks[0], n_rows, da)
    return X, y, weights


def walr_fit_dask(X, noisy, *, weights=None, lambda_: float = 0.0, solver: str = "hybrid",
                  tol: float | None = None, maxiter: int | None = None, **unused):
    """:func:`privatelr.walr.walr_fit` on Dask collections (called by it), Newton only.

    The label-blind objective is the engine's ERM objective with every label -1, weights
    ``w`` and linear term ``-ṽ`` (see :mod:`privatelr.walr`), so it runs as
    :class:`DaskERMObjective`: one map-reduce per Newton step. Post-processing of the release:
    no privacy cost. Not available on Dask data: ``solver="hybrid"`` (minibatch steps are not a
    map-reduce; Newton reaches the same minimiser) and ``lambda_=0`` (the unboundedness
    certificates need the data row by row; use a small ``lambda_ > 0``). As in memory, a
    weighted release needs ``weights`` and an unweighted one refuses them (``ValueError``).
    """
    from .walr import (NoisyDotProduct, WALRResult, _as_release, _check_weighting, _columns_of,
                       _release_columns)

    _, da = _import_dask()
    if solver != "newton":
        raise ValueError(f"solver={solver!r} is not available on Dask data: pass solver='newton' "
                         "(exact Newton, one map-reduce over the partitions per step)")
    lam = check_real("lambda_", lambda_, low=0.0)
    if lam == 0.0:
        raise ValueError("lambda_=0 is not available on Dask data (the unboundedness checks read "
                         "the rows one by one); pass a small lambda_ > 0")
    if tol is not None:
        tol = check_real("tol", tol, low=0.0, low_open=True)
    # weighted release <=> weights given; checked before the data are touched
    _check_weighting(noisy if isinstance(noisy, NoisyDotProduct) else None, weights)
    columns = _columns_of(X)
    X, _, weights = _prepare_xyw(X, None, weights, da)
    n, k = int(X.shape[0]), int(X.shape[1])
    release, v = _as_release(noisy, k, n)
    columns = _release_columns(columns, release, k)
    bound = np.inf if release is None else release.weights_bound * (1 + 1e-12)
    zeros = da.zeros(n, chunks=(X.chunks[0],))
    nn, _, _ = _validate(X, zeros, weights, np.inf, bound) if weights is not None else \
        _validate(X, zeros, None, np.inf, 1.0)
    aux = (zeros.map_blocks(_aux_block, dtype=float, new_axis=1, chunks=(X.chunks[0], (1,)))
           if weights is None else
           da.map_blocks(_aux_block, zeros, weights, dtype=float, new_axis=1,
                         chunks=(X.chunks[0], (2,))))
    (aux,) = _persist(aux)
    objective = DaskERMObjective(X, aux, _logistic(), lam, noise=-n * v, n=n)
    rep = minimize(objective, np.zeros(k), method="newton", gtol=1e-10 if tol is None else tol,
                   maxiter=maxiter)
    status = "ok" if rep.convergence == 0 else "nonconvergence"
    return WALRResult(coef=rep.x, status=status, converged=rep.convergence == 0,
                      message=rep.message + " (Dask)", iterations=rep.iterations, epochs=0,
                      passes=rep.passes, value=rep.value, grad_norm=rep.grad_norm,
                      columns=columns, solver="newton", lambda_=lam, n=n, k=k,
                      eps=None if release is None else release.eps,
                      delta=None if release is None else release.delta,
                      sigma=None if release is None else release.sigma,
                      mechanism=None if release is None else release.mechanism)


def _logistic():
    from .losses import LogisticLoss

    return LogisticLoss()


def walr_dask(formula, data, *, eps, delta, weights=None, weights_bound=1.0, lambda_=0.0,
              solver="newton", mechanism="analytic", clip=False, random_state=None,
              accountant=None, levels=None, **fit_options):
    """:func:`privatelr.walr.walr` on a Dask DataFrame (called by it).

    The design is built partition-wise from one spec with declared factor levels (as
    :func:`dplr_dask`); ``weights`` may be a column name (taken from the rows kept) or None.
    One Generator drives the release noise, as in memory.
    """
    from dataclasses import replace

    from .accountant import require_budget

    if accountant is not None:
        require_budget(accountant, eps, delta)
    if weights is not None and not isinstance(weights, str):
        raise TypeError("walr on a Dask DataFrame takes weights as a column name of data")
    if isinstance(weights, str) and weights not in data.columns:
        raise ValueError(f"weights={weights!r} is not a column of data")
    spec, design, _stats, _n_total, _n_dropped, n = _dask_design(
        formula, data, levels, np.inf, what="walr", weights_col=weights)
    d = len(spec.columns)
    X = design[:, 1:1 + d]
    y = design[:, 0]
    w = design[:, 1 + d] if weights is not None else None
    rng = check_random_state(random_state)
    release = noisy_dot_product_dask(X, y, eps=eps, delta=delta, weights=w,
                                     weights_bound=weights_bound, mechanism=mechanism, clip=clip,
                                     random_state=rng, accountant=accountant)
    release = replace(release, columns=tuple(spec.columns))
    Xfit = X.map_blocks(np.clip, 0.0, 1.0, dtype=float) if clip else X
    result = walr_fit_dask(Xfit, release, weights=w, lambda_=lambda_, solver=solver,
                           **fit_options)
    return replace(result, model_spec=spec, columns=tuple(spec.columns))
