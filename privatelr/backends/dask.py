r"""The Dask backend: rows held by a Dask cluster, processed partition by partition.

The estimators only need sums over rows — the loss :math:`\sum_i a_i\ell(y_i x_i^\top w)`, the
gradient :math:`\sum_i a_i y_i \ell'(\cdot) x_i` and the Hessian
:math:`\sum_i a_i \ell''(\cdot) x_i x_i^\top` — so they distribute exactly. :class:`DaskRows`
implements :class:`privatelr.rows.RowSource` over a Dask array ``X`` (chunked by rows, one
column chunk), either persisted once on the workers or, when it would not fit in their memory,
streamed: left lazy, so that every pass re-reads its partitions from the source and rebuilds the
rows (:func:`keep_in_memory` decides). A scan is one map-reduce, and every evaluation of
the objective is ONE pass in which each partition returns its partial sums packed in a vector
of ``2 + d + d^2`` floats, a tree sum (``split_every=8``) adds them, and the client receives a
single ``(value, gradient, d x d Hessian)``. The client never holds more than O(d²) numbers
derived from the data, whatever ``n``.

Everything random happens on the client, in :func:`privatelr.erm.fit_rows`, exactly as in
memory (same Generator, same order), so the same seed gives the same noise and, with the same
solver path, the same coefficients as the in-memory fit.

**Public record count.** ``n`` is counted exactly and used in the calibration. As in Chaudhuri,
Monteleoni & Sarwate (JMLR 2011), whose neighbouring data sets differ in one record (same
``n``), the number of records is treated as **public**.

**Line search.** :meth:`DaskERMObjective.line` costs one pass: it evaluates value, gradient (and
the Hessian when asked) at the full step ``w + p``, which Newton's method accepts in nearly every
iteration, so the following :meth:`~DaskERMObjective.evaluate` costs nothing. A trial step
``t != 1`` costs one value-only pass (the workers keep no state but the persisted data, so a
lost worker only costs a recomputation). A warm-started fit (n >= 1e5) takes the exact Hessian
with every full pass (``hessian_in_pass``): reading the rows, not the ``d x d`` sums, sets a
pass's cost.

**Data frames.** :func:`design_rows` builds design rows partition by partition from a
:class:`~privatelr.design.DesignSpec` made from the frame's *schema* and declared levels (never
from its rows); :func:`predict_frame` scores a Dask DataFrame lazily.

Dask is an optional dependency (``pip install privatelr[dask]``); this is the only module that
imports it, and only when Dask data is passed.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from .._validation import (as_weights, chunk_rows, clip_rows, label_vector, not_two_valued,
                           row_norms, too_large, weights_out_of_bound)
from ..objective import HESSIAN_F32_MIN_D
from ..design.values import column_names
from ..rows import FrameRows, Scan, is_dask, require_codes
from ..scoring import class_dtype, output_series
from ..losses import Loss
from ..progress import report_pass
from ..softmax import SoftmaxObjective, softmax_sums

__all__ = ["DaskRows", "DaskERMObjective", "keep_in_memory", "memory_budget", "PERSIST_KEY",
           "DaskSoftmaxObjective", "design_rows",
           "predict_frame", "schema_of", "as_dask_frame", "with_labels", "position_groups",
           "partition_sum", "map_row_blocks", "compute_all", "dask_matrix", "dask_vector"]

_SPLIT_EVERY = 8
#: the stride of the warm start's subsample taken in a streamed fit's first pass: the solver's
#: ``n // (n // 16)`` (:data:`privatelr.solver._WARM_FACTOR`) for every n it warm-starts
_SUB_STRIDE = 16
_UNKNOWN_CATEGORIES = "__UNKNOWN_CATEGORIES__"


def _import_dask():
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise ImportError("Dask data needs dask: pip install 'privatelr[dask]'") from exc
    return dask, da


def compute_all(*values) -> tuple:
    """``dask.compute`` of the values (Dask collections computed in one pass)."""
    dask, _ = _import_dask()
    return dask.compute(*values)


def _persist(*arrays):
    dask, _ = _import_dask()
    return dask.persist(*arrays)


def _keep(persist: bool, *arrays) -> tuple:
    """The arrays persisted on the workers when ``persist``, else as they are (lazy: each pass
    recomputes them from the source)."""
    return _persist(*arrays) if persist else arrays


#: The Dask configuration key that decides whether design rows are held by the workers.
PERSIST_KEY = "privatelr.persist"


def memory_budget() -> float:
    """Bytes the rows may occupy: the workers' memory limits summed when a distributed client is
    active (limits of 0 mean none: the machine's memory counts), else this machine's available
    memory; ``inf`` when neither can be read."""
    try:
        from distributed import default_client

        workers = default_client().scheduler_info()["workers"].values()
        limits = [float(w.get("memory_limit") or 0) for w in workers]
        if limits and all(limit > 0 for limit in limits):
            return float(sum(limits))
    except (ImportError, ValueError, KeyError, AttributeError):
        pass
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not on Linux/macOS
        return float("inf")


def keep_in_memory(nbytes: float) -> bool:
    """Whether design rows of about ``nbytes`` bytes are **persisted** (read once, then held by
    the workers between passes) or **streamed** (every pass re-reads its partitions from the
    source, e.g. Parquet files, and rebuilds the rows; nothing stays in memory but the partitions
    being processed, so data larger than the cluster's memory can be fitted).

    Set by the Dask configuration key ``"privatelr.persist"``: ``True``, ``False`` or
    ``"auto"`` (the default), which persists when ``nbytes`` is at most half of
    :func:`memory_budget`. Either way the fit takes the same steps and gives the same bits.

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"privatelr.persist": False}):
    ...     keep_in_memory(8.0)
    False
    >>> keep_in_memory(8.0), keep_in_memory(float("inf"))
    (True, False)
    """
    dask, _ = _import_dask()
    setting = dask.config.get(PERSIST_KEY, "auto")
    if isinstance(setting, str) and setting.lower() == "auto":
        return bool(nbytes <= 0.5 * memory_budget())
    if isinstance(setting, bool):
        return setting
    raise ValueError(f"dask.config {PERSIST_KEY!r} must be True, False or 'auto', got "
                     f"{setting!r}")


def _array_bytes(X) -> float:
    """Bytes of the float64 array ``X``: exact when its row chunks are known, else estimated
    from its first block (one block is computed) times the number of blocks."""
    if not any(np.isnan(c) for c in X.chunks[0]):
        return float(X.shape[0]) * X.shape[1] * 8.0
    rows = X.blocks[0].shape[0] if not np.isnan(X.chunks[0][0]) else \
        X.blocks[0].compute().shape[0]
    return float(rows) * X.numblocks[0] * X.shape[1] * 8.0


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
    chunk = chunk_rows(d)
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

    #: A pass costs about the same with the d x d Hessian as without: reading the partitions
    #: (from memory or, streamed, from their source) dominates, so the solver takes the exact
    #: Hessian with every pass (:func:`privatelr.solver.newton`).
    hessian_in_pass = True

    def __init__(self, X, aux, loss: Loss, lambda_: float, noise=None, *, n: int | None = None,
                 sub: tuple | None = None):
        self.X = X
        self.aux = aux
        self._sub = sub  # (X, aux) of every _SUB_STRIDE-th row of each partition, if taken
        self.loss = loss
        self.lambda_ = float(lambda_)
        self.n = int(X.shape[0]) if n is None else int(n)
        self.d = int(X.shape[1])
        self.linear = np.zeros(self.d) if noise is None else np.asarray(noise, float) / self.n
        self.passes = 0
        self.value_scale = 0.0
        self._f32 = self.d >= HESSIAN_F32_MIN_D
        self._ahead: tuple | None = None  # (w, f, g, H) of the last line search at t = 1
        self._last: tuple | None = None   # (w, f, g, H) of the last evaluation

    def subsample(self, m: int) -> "DaskERMObjective":
        """The same objective on every ``k``-th row (``k = n // m``), persisted on the workers.

        The rows are those of :meth:`ERMObjective.subsample` (a global stride), so a
        warm-started Dask fit follows the in-memory fit's path, and reading them is a pass
        over the source of streamed rows. Streamed design rows instead come with every
        ``_SUB_STRIDE``-th row of each partition, taken in the pass that counted them
        (:func:`design_rows`), used when ``k`` is that stride: no pass, and a starting point
        as good (the solution is the full data's either way). Used only for a starting point.
        """
        _, _ = _import_dask()
        k = max(1, self.n // max(1, int(m)))
        if self._sub is not None and k == _SUB_STRIDE:
            Xs, auxs = self._sub
        else:
            Xs, auxs = self.X[::k], self.aux[::k]
        Xs, auxs = _persist(Xs, auxs)
        sub = DaskERMObjective(Xs, auxs, self.loss, self.lambda_)
        sub.linear = self.linear.copy()
        return sub

    def _pass(self, v, order: int, f32: bool | None = None):
        """One map-reduce: ``(f, g, H)`` at ``v`` (``g``/``H`` None below ``order`` 1/2)."""
        _, da = _import_dask()
        d = self.d
        v = np.ascontiguousarray(v, dtype=float)
        parts = da.map_blocks(_block_sums, self.X, self.aux, v=v, loss=self.loss, order=order,
                              f32=self._f32 if f32 is None else f32, dtype=float,
                              chunks=((1,) * self.X.numblocks[0], (2 + d + d * d,)))
        total = np.asarray(parts.sum(axis=0, split_every=_SPLIT_EVERY).compute(), dtype=float)
        self.passes += 1
        report_pass()
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

    def information(self, w) -> np.ndarray:
        """The data term's Hessian at ``w`` in double precision, no ridge
        (:meth:`privatelr.objective.ERMObjective.information`). One map-reduce."""
        H = self._pass(np.asarray(w, dtype=float), 2, f32=False)[2]
        H[np.diag_indices_from(H)] -= self.lambda_
        return H

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


def _softmax_block(Xb, auxb, W, order):
    """The multinomial data term's partial sums of one partition at ``W``, packed as a
    ``(1, 2 + pK + (pK)^2)`` row ``[rows, value sum, gradient sum, Hessian sum]``
    (:func:`privatelr.softmax.softmax_sums`, in row chunks of about 8 MB); ``auxb`` holds the
    class codes in column 0 and, when present, the weights in column 1."""
    nb, p = Xb.shape
    d = p * W.shape[1]
    out = np.zeros(2 + d + d * d)
    out[0] = nb
    chunk = chunk_rows(d)
    for start in range(0, nb, chunk):
        rows = slice(start, min(start + chunk, nb))
        a = auxb[rows, 1] if auxb.shape[1] > 1 else None
        total, G, H, _ = softmax_sums(Xb[rows], auxb[rows, 0].astype(np.intp), W, a, order)
        out[1] += total
        if G is not None:
            out[2:2 + d] += G.ravel()
        if H is not None:
            out[2 + d:] += H.ravel()
    return out[None, :]


class DaskSoftmaxObjective(SoftmaxObjective):
    """The multinomial objective of :class:`privatelr.softmax.SoftmaxObjective` over a Dask
    array: each evaluation is one map-reduce whose partitions return their partial sums (value,
    ``pK`` gradient, ``(pK)^2`` Hessian). No Hessian-vector products (the solver uses Newton).

    Examples
    --------
    >>> import dask.array as da
    >>> X = da.from_array(np.c_[np.ones(6), np.linspace(-1, 1, 6)] / 2, chunks=(3, 2))
    >>> aux = da.from_array(np.array([0., 1, 2, 0, 1, 2])[:, None], chunks=(3, 1))
    >>> obj = DaskSoftmaxObjective(X, aux, 3, 0.1, n=6)
    >>> f, g, H = obj.evaluate(np.zeros(6))
    >>> bool(np.isclose(f, np.log(3))), H.shape
    (True, (6, 6))
    """

    hessp = None  # type: ignore[assignment]  # no Hessian-vector products: exact Hessians

    def __init__(self, X, aux, classes: int, lambda_: float, noise=None, *, n: int):
        self.X, self.aux = X, aux
        self.n, self.p = int(n), int(X.shape[1])
        self.K = int(classes)
        self.d = self.p * self.K
        self.lambda_ = float(lambda_)
        self.linear = np.zeros(self.d) if noise is None else np.asarray(noise, float) / self.n
        self.passes = 0
        self.value_scale = 0.0
        self._at = None

    def _pass(self, w, order: int):
        _, da = _import_dask()
        w = np.asarray(w, dtype=np.float64)
        d = self.d
        parts = da.map_blocks(_softmax_block, self.X, self.aux, W=w.reshape(self.p, self.K),
                              order=order, dtype=float,
                              chunks=((1,) * self.X.numblocks[0], (2 + d + d * d,)))
        total = np.asarray(parts.sum(axis=0, split_every=_SPLIT_EVERY).compute(), dtype=float)
        self.passes += 1
        report_pass()
        G = total[2:2 + d] if order >= 1 else None
        H = total[2 + d:].reshape(d, d).copy() if order == 2 else None
        return self._finish(w, total[1], G, H, None)


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


def _dplr_block(part, spec, data_norm, weights_col=None, check=None, scan_map=None):
    """Raw design of one partition: ``(X, codes, weights, stats, fingerprint, first)``, rows
    with missing values dropped: the design rows (C order, as
    :meth:`~privatelr.design.DesignSpec.rows` builds them), the response's class codes (the
    binary 0/1 response is ``codes > 0``), the kept rows' weights (``None`` without
    ``weights_col``) and :func:`_fingerprint` of the three; ``first`` (the first pass only, else
    None) is what a streamed fit's set-up needs besides the count, so that it reads the source
    once: ``(scan row, every _SUB_STRIDE-th row's X, codes, weights)`` — the validation scan's
    row of :func:`_scan_block` (binary response, covariates from the intercept's column on,
    with the largest such norm appended) and the partition's share of the warm start's
    subsample (:meth:`DaskERMObjective.subsample`). ``scan_map`` (a public map of the rows,
    :meth:`DaskRows.mapped` later): the scan row is of the mapped rows.

    stats = [rows read, rows dropped, 0, positives, covariate rows above data_norm, largest
    squared covariate norm].

    ``check = (partition number, fingerprint)`` is a streamed pass: the rows are rebuilt from
    the source and must be those the first pass counted, checked, and calibrated the noise for
    (their ``n`` and norms); a partition that changed raises instead of entering the fit.
    """
    frame = part.reset_index(drop=True)
    frame.columns = [str(c) for c in frame.columns]
    rows = spec.rows(frame, raw=True, what="a partition of data")
    X = np.ascontiguousarray(rows.X, dtype=np.float64)
    y = np.asarray(rows.codes, dtype=np.float64)
    w = None
    if weights_col is not None:  # WALR: the weights of the rows kept
        w = frame[weights_col].to_numpy(dtype=np.float64)[rows.complete]
    fingerprint = _fingerprint(X, y, w)
    if check is not None:
        if fingerprint != check[1]:
            raise ValueError(
                f"partition {check[0]} of the data changed between passes of a streamed fit (its "
                "rows differ from those counted and checked in the first pass); the rows are "
                "re-read from the source in every pass, so keep the source unchanged until the "
                "fit returns, or hold the rows in memory: "
                "dask.config.set({'privatelr.persist': True})")
        return X, y, w, None, fingerprint, None
    start = int(spec.intercept)
    norms = row_norms(X[:, start:])
    stats = np.array([len(frame), rows.n_dropped, 0, float((y > 0).sum()),
                      int((norms > data_norm * (1.0 + 5e-13)).sum()),
                      float(norms.max() ** 2) if norms.size else 0.0])
    Xs = X if scan_map is None else np.ascontiguousarray(scan_map(X), dtype=np.float64)
    scan = _scan_block(Xs, (y > 0).astype(np.float64), w, None, start)[0]
    norms = norms if scan_map is None else row_norms(Xs[:, start:])
    finite = norms[np.isfinite(norms)]
    scan = np.append(scan, float(finite.max()) if finite.size else 0.0)
    sub = (X[::_SUB_STRIDE].copy(), y[::_SUB_STRIDE].copy(),
           None if w is None else w[::_SUB_STRIDE].copy())
    return X, y, w, stats, fingerprint, (scan, *sub)


def _first_pass(part, spec, weights_col=None, scan_map=None):
    """A streamed fit's one read of a partition for its set-up: ``(stats, fingerprint, first)``
    of :func:`_dplr_block` without the rows themselves (only the subsample's stay held)."""
    _, _, _, stats, fingerprint, first = _dplr_block(part, spec, np.inf, weights_col,
                                                     scan_map=scan_map)
    return stats, fingerprint, first


def _verified(*arrays) -> list:
    """Streamed arrays (same row chunks; ``None`` allowed) that check, in every later pass,
    that each row block is the one this first pass fingerprinted; else a ``ValueError``."""
    dask, _ = _import_dask()
    present = [a for a in arrays if a is not None]
    blocks = [a.to_delayed().ravel() for a in present]
    prints = dask.compute(*[dask.delayed(_fingerprint)(*row) for row in zip(*blocks)])
    out: list = []
    k = 0
    for a in arrays:
        if a is None:
            out.append(None)
            continue
        mine = [p[k] for p in prints]
        out.append(a.map_blocks(_checked_block, mine, dtype=a.dtype))
        k += 1
    return out


def _checked_block(block, prints, block_info=None):
    i = block_info[0]["chunk-location"][0]
    if _fingerprint(block) != (prints[i],):
        raise ValueError(
            f"row block {i} of the data changed between passes of a streamed fit (its rows "
            "differ from those counted and checked in the first pass); the rows are re-read from "
            "the source in every pass, so keep the source unchanged until the fit returns, or "
            "hold the rows in memory: dask.config.set({'privatelr.persist': True})")
    return block


def _fingerprint(*arrays) -> tuple:
    """A partition's fingerprint: each array's shape, dtype and SHA-256 digest of its float64
    bytes in C order. Any changed value, any value moved to another row or column (two rows'
    values swapped), and any added or lost row changes it except by a coincidence of 2^-256.
    (It was a wrapping sum of the 64-bit words, blind to values swapped between positions.)
    Cost, per 1e6 x 11 block on one core of the development machine (load 3): 59 ms, against
    4.7 ms for the word sum and 113 ms for BLAKE2b, which SHA-256's hardware instructions beat
    there (``benchmarks/bench_fingerprint.py``, RESULTS.md) — roughly a fifth of a streamed
    pass over the block; hashlib releases the GIL, so partitions are hashed in parallel."""
    out: list = []
    for a in arrays:
        if a is None:
            out.append(None)
            continue
        data = np.ascontiguousarray(a, dtype=np.float64)
        digest = hashlib.sha256(repr((data.shape, np.asarray(a).dtype.str)).encode())
        digest.update(data.reshape(-1).view(np.uint8).data)
        out.append((a.shape, digest.hexdigest()))
    return tuple(out)


def dask_matrix(X, da=None):
    """A float64 Dask array chunked by rows only (Dask DataFrames are converted), with the
    in-memory checks of :func:`~privatelr._validation.as_float_matrix` that need no pass."""
    if da is None:
        _, da = _import_dask()
    if is_dask(X) and hasattr(X, "to_dask_array"):  # dask DataFrame / Series
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


def dask_vector(name: str, v):
    """A 1-D Dask array from a Dask Series or array (a one-column array is flattened)."""
    _, da = _import_dask()
    v = _lazy_vector(v)
    if not isinstance(v, da.Array):
        raise TypeError(f"{name} must be a Dask array or Series here, got {type(v).__name__}")
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got {v.ndim}-D")
    return v


def _lazy_vector(v):
    """A Dask Series becomes a Dask array (row counts unknown until persisted)."""
    if is_dask(v) and hasattr(v, "to_dask_array"):
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


# --- the row source -------------------------------------------------------------------------------

def _scan_block(Xb, yb, wb, bound, start):
    """One validation row per partition: ``[rows, rows with NaN/inf, bad labels (NaN),
    labels not 0/1, labels not -1/+1, largest row norm, rows above the bound, weight min,
    weight max, bad weights, largest |x|, positives]`` over the finite rows; norms from
    :func:`~privatelr._validation.row_norms` (no overflow), the bound's test as in memory."""
    nb = Xb.shape[0]
    finite_rows = np.isfinite(Xb).all(axis=1)
    n_finite = int(finite_rows.sum())
    Xf = Xb if n_finite == nb else Xb[finite_rows]
    norms = row_norms(Xf) if Xf.size else np.zeros(Xf.shape[0])
    part = norms if start == 0 else (row_norms(Xf[:, start:]) if Xf.size else norms)
    max_abs = max(float(Xf.max()), -float(Xf.min())) if Xf.size else 0.0
    out = np.array([nb, nb - n_finite, 0, 0, 0, float(norms.max()) if norms.size else 0.0,
                    0 if bound is None else int((part > bound * (1.0 + 5e-13)).sum()),
                    np.inf, -np.inf, 0, max_abs, 0], dtype=float)
    if yb is not None:
        y = yb.reshape(-1).astype(np.float64)
        y_ok = np.isfinite(y)
        out[2] = y.size - int(y_ok.sum())
        out[3] = int(((y != 0.0) & (y != 1.0) & y_ok).sum())
        out[4] = int(((y != -1.0) & (y != 1.0) & y_ok).sum())
        out[11] = int((y == 1.0).sum())
    if wb is not None:
        w = wb.reshape(-1).astype(np.float64)
        ok = np.isfinite(w)
        if ok.any():
            out[7], out[8] = float(w[ok].min()), float(w[ok].max())
        out[9] = w.size - int(ok.sum())
    return out[None, :]


def _clip_block(Xb, bound, start):
    if start == 0:
        return clip_rows(Xb, bound)[0]
    out = Xb.copy()
    out[:, start:] = clip_rows(np.ascontiguousarray(Xb[:, start:]), bound)[0]
    return out


def _aux_block(yb, wb=None):
    y = np.where(yb.reshape(-1) == 1, 1.0, -1.0)
    if wb is None:
        return y[:, None]
    return np.column_stack([y, wb.reshape(-1).astype(np.float64)])


def _positive_block(Xb, yb, wb, clip01):
    """``[rows outside [0, 1], column flags (k), sum_i r_i x_i (k)]``, ``r = w 1{y = 1}``."""
    k = Xb.shape[1]
    outside = (Xb < 0.0) | (Xb > 1.0)
    out = np.zeros(1 + 2 * k)
    out[0] = int(outside.any(axis=1).sum())
    out[1:1 + k] = outside.any(axis=0)
    r = (yb.reshape(-1) == 1.0).astype(np.float64)
    if wb is not None:
        r = r * wb.reshape(-1).astype(np.float64)
    X = np.clip(Xb, 0.0, 1.0) if clip01 else Xb
    out[1 + k:] = np.einsum("ij,i->j", X, r)
    return out[None, :]


class DaskRows:
    """Rows on a Dask cluster (:class:`privatelr.rows.RowSource`).

    ``X`` is a Dask array or DataFrame of numbers chunked by rows; ``y`` and ``weights`` Dask
    arrays/Series with the same rows, or NumPy arrays. ``persist`` (default: decided by
    :func:`keep_in_memory` from the size of ``X``) holds everything lazy on the workers, read
    once (a shared source, e.g. one Parquet read giving ``X`` and ``y``, is read once);
    otherwise the rows stay lazy and every pass recomputes them from the source, checked
    against their fingerprints (:func:`_fingerprint`) from a first pass unless ``verified``
    (rows that check themselves, as :func:`design_rows` builds them).
    """

    def __init__(self, X, y=None, weights=None, weights_bound: float | None = None,
                 codes=None, persist: bool | None = None, verified: bool = False):
        _, da = _import_dask()
        if not is_dask(X):
            raise TypeError("X must be a Dask array or DataFrame when y or weights is a Dask "
                            "collection (convert X with dask.array.from_array)")
        if weights is None:
            _, self.weights_bound = as_weights("weights", None, 0, "weights_bound",
                                               weights_bound)
        else:
            _, self.weights_bound = as_weights("weights", np.zeros(1), 1, "weights_bound",
                                               weights_bound)
        y, weights, codes = _lazy_vector(y), _lazy_vector(weights), _lazy_vector(codes)
        X = dask_matrix(X, da)
        self.persisted = keep_in_memory(_array_bytes(X)) if persist is None else bool(persist)
        lazy = [a for a in (X, y, weights, codes) if isinstance(a, da.Array)]
        done = dict(zip(map(id, lazy), _keep(self.persisted, *lazy)))
        X, y, weights, codes = (done.get(id(a), a) for a in (X, y, weights, codes))
        _known_chunks(X)
        n_rows = int(X.shape[0])
        if n_rows == 0:
            raise ValueError("X is empty (no rows); need at least one row")
        self.y = _as_dask_vector("y", y, X.chunks[0], n_rows, da)
        self.w = _as_dask_vector("weights", weights, X.chunks[0], n_rows, da)
        self.codes = _as_dask_vector("codes", codes, X.chunks[0], n_rows, da)
        if self.y is not None or self.w is not None or self.codes is not None:
            it = iter(_keep(self.persisted, *[a for a in (self.y, self.w, self.codes)
                                              if a is not None]))
            self.y = next(it) if self.y is not None else None
            self.w = next(it) if self.w is not None else None
            self.codes = next(it) if self.codes is not None else None
        if not (self.persisted or verified):
            X, self.y, self.w, self.codes = _verified(X, self.y, self.w, self.codes)
        self.X = X
        self.n, self.d = n_rows, int(X.shape[1])
        self.weighted = self.w is not None
        self._aux = None
        # set by design_rows for streamed rows, from the pass that counted them: the scan's
        # rows ((partitions, 13): _scan_block's and the largest norm from column `start` on,
        # start, the map they were scanned under or None) and the warm start's subsample (X, y,
        # weights: every _SUB_STRIDE-th row of each partition, held on the workers); None: a
        # scan or subsample reads the rows. _map: the function these rows were mapped by.
        self._first_scan: tuple | None = None
        self._sub: tuple | None = None
        self._map = None

    def _with(self, X, sub_fn=None, fn=None) -> "DaskRows":
        out = object.__new__(DaskRows)
        out.__dict__.update(self.__dict__)
        (out.X,) = _keep(self.persisted, X)
        out.d = int(out.X.shape[1])
        # other values: the first read's scan holds only for the raw rows mapped by the one
        # function it was scanned under
        out._map = fn
        keep_scan = (fn is not None and self._map is None and self._first_scan is not None
                     and self._first_scan[2] is fn)
        out._first_scan = self._first_scan if keep_scan else None
        if self._sub is not None:
            out._sub = None if sub_fn is None else (sub_fn(self._sub[0]), *self._sub[1:])
        return out

    def _scanned(self, bound: float | None, start: int):
        """The scan's rows from the first pass when they answer this scan, else None."""
        if self._first_scan is None:
            return None
        st, first, scanned_map = self._first_scan
        if scanned_map is not self._map:
            return None                        # scanned under another map than these rows'
        if bound is None:
            return st[:, :12]
        if start != first:
            return None
        if not float(st[:, 12].max(initial=0.0)) <= bound * (1.0 + 5e-13):
            return None                        # rows above the bound: counted by a pass
        return st[:, :12]                      # column 6, rows above the bound, is 0

    def scan(self, bound: float | None = None, start: int = 0, what: str = "X") -> Scan:
        """One pass over the rows, with the in-memory checks and messages (no pass for
        streamed design rows whose first pass answers it: see :func:`design_rows`)."""
        import dask

        _, da = _import_dask()
        st = self._scanned(bound, start)
        if st is None:
            Xb = self.X.to_delayed().ravel()
            yb = self.y.to_delayed().ravel() if self.y is not None else [None] * len(Xb)
            wb = self.w.to_delayed().ravel() if self.w is not None else [None] * len(Xb)
            parts = [da.from_delayed(dask.delayed(_scan_block)(a, b, c, bound, start),
                                     shape=(1, 12), dtype=float) for a, b, c in zip(Xb, yb, wb)]
            st = da.concatenate(parts, axis=0).compute()
        bad_x = int(st[:, 1].sum())
        if bad_x:
            raise ValueError(f"{what} contains NaN or infinite values in {bad_x} row(s); remove "
                             "or impute them")
        max_abs = float(st[:, 10].max())
        if int(st[:, 2].sum()):
            raise ValueError("y contains NaN or infinite values")
        if int(st[:, 3].sum()) and int(st[:, 4].sum()):
            raise not_two_valued("y", np.asarray(da.unique(self.y.astype(np.float64)).compute()))
        max_weight = 1.0
        if self.w is not None:
            if int(st[:, 9].sum()):
                raise ValueError("weights contains NaN or infinite values")
            lo, hi = float(st[:, 7].min()), float(st[:, 8].max())
            if lo < 0 or hi > self.weights_bound:
                raise ValueError(weights_out_of_bound("weights", "weights_bound",
                                                      self.weights_bound))
            max_weight = hi
        return Scan(n=self.n, d=self.d, n_over=int(st[:, 6].sum()),
                    max_norm=float(st[:, 5].max()), max_weight=max_weight,
                    positives=int(st[:, 11].sum()), too_large=too_large(max_abs))

    def mapped(self, fn, d: int) -> "DaskRows":
        return self._with(self.X.map_blocks(fn, dtype=float, chunks=(self.X.chunks[0], (d,))),
                          lambda S: S.map_blocks(fn, dtype=float, chunks=(S.chunks[0], (d,))),
                          fn)

    def clipped(self, bound: float, start: int = 0) -> "DaskRows":
        return self._with(self.X.map_blocks(_clip_block, bound, start, dtype=float),
                          lambda S: S.map_blocks(_clip_block, bound, start, dtype=float))

    def objective(self, loss, lambda_: float, noise=None, *, labels: bool = True):
        _, da = _import_dask()
        if labels:
            y = self.y
        else:
            y = da.zeros(self.n, chunks=(self.X.chunks[0],))
        if self.w is None:
            aux = y.map_blocks(_aux_block, dtype=float, new_axis=1, chunks=(y.chunks[0], (1,)))
        else:
            aux = da.map_blocks(_aux_block, y, self.w, dtype=float, new_axis=1,
                                chunks=(y.chunks[0], (2,)))
        (aux,) = _keep(self.persisted, aux)
        sub = None
        if labels and self._sub is not None:
            Xs, ys, ws = self._sub
            if ws is None:
                auxs = ys.map_blocks(_aux_block, dtype=float, new_axis=1,
                                     chunks=(ys.chunks[0], (1,)))
            else:
                auxs = da.map_blocks(_aux_block, ys, ws, dtype=float, new_axis=1,
                                     chunks=(ys.chunks[0], (2,)))
            sub = (Xs, auxs)
        return DaskERMObjective(self.X, aux, loss, lambda_, noise=noise, n=self.n, sub=sub)

    def _codes_aux(self):
        _, da = _import_dask()
        c = require_codes(self).astype(np.float64)
        if self.w is None:
            return c[:, None]
        return da.stack([c, self.w.astype(np.float64)], axis=1).rechunk({1: -1})

    def softmax_objective(self, classes: int, lambda_: float, noise=None):
        (aux,) = _keep(self.persisted, self._codes_aux())
        return DaskSoftmaxObjective(self.X, aux, classes, lambda_, noise=noise, n=self.n)

    def one_vs_rest(self, k: int) -> "DaskRows":
        out = object.__new__(DaskRows)
        out.__dict__.update(self.__dict__)
        out._first_scan = out._sub = None      # other labels
        (out.y,) = _keep(self.persisted, (require_codes(self) == k).astype(np.float64))
        return out

    def positive_sum(self, clip01: bool):
        _, da = _import_dask()
        k = self.d
        args = [self.X, self.y[:, None]] + ([self.w[:, None]] if self.w is not None else [])
        if self.w is None:
            parts = da.map_blocks(lambda a, b: _positive_block(a, b, None, clip01), *args,
                                  dtype=float, chunks=((1,) * self.X.numblocks[0], (1 + 2 * k,)))
        else:
            parts = da.map_blocks(lambda a, b, c: _positive_block(a, b, c, clip01), *args,
                                  dtype=float, chunks=((1,) * self.X.numblocks[0], (1 + 2 * k,)))
        st = np.asarray(parts.compute(), dtype=float)
        return st[:, 1 + k:].sum(axis=0), int(st[:, 0].sum()), st[:, 1:1 + k].any(axis=0)

    def training_scores(self, coef):
        """Not computed on Dask data: every prediction would have to come to the client."""
        return None


# --- data frames -----------------------------------------------------------------------------------

def design_rows(spec, data, *, weights: str | None = None,
                weights_bound: float | None = None, scan_map=None) -> FrameRows:
    """The raw design rows and 0/1 responses of a Dask DataFrame under ``spec``, built partition
    by partition with :meth:`~privatelr.design.DesignSpec.rows`; ``weights`` names a column of
    observation weights.

    Whether the rows are persisted on the workers or streamed from the source in every pass is
    decided by :func:`keep_in_memory` from the design's size, estimated from the first
    partition (its rows times the number of partitions). Persisted: one pass builds, counts and
    keeps them. Streamed: one pass counts them, and each later pass rebuilds them partition by
    partition (for data larger than memory) and raises if a partition's rows are not those
    counted (:func:`_fingerprint`): the calibration's ``n`` and the norm checks hold for the
    rows the fit uses, or nothing is released. Streamed, that first read also gives the
    validation scan (of the rows as ``scan_map`` maps them, when the caller will map them by
    that function: :meth:`DaskRows.mapped`) and the warm start's subsample.
    """
    dask, da = _import_dask()
    if not hasattr(data, "to_delayed") or not hasattr(data, "columns"):
        raise TypeError(f"data must be a Dask DataFrame, got {type(data).__name__}")
    if weights is not None and weights not in data.columns:
        raise ValueError(f"weights={weights!r} is not a column of data")
    if spec.offsets:
        raise ValueError(f"offset({', '.join(spec.offsets)}) is not available for fits on Dask "
                         "data yet (the partitions carry no offset column); fit in memory, or "
                         "put the variable in the formula as an ordinary term")
    d_raw = len(spec.formulaic_columns)
    sources = data.to_delayed()
    parts = [dask.delayed(_dplr_block, nout=6)(p, spec, np.inf, weights) for p in sources]
    setting = dask.config.get(PERSIST_KEY, "auto")
    if isinstance(setting, bool):
        persist = setting
    else:  # estimated from the first partition (one partition read)
        first_rows = float(dask.compute(parts[0][3])[0][0])
        persist = keep_in_memory(first_rows * len(parts) * (d_raw + 2) * 8.0)
    kept = 3 if weights is not None else 2  # X, codes (and weights) of each partition
    pieces = [[p[j] for j in range(kept)] for p in parts]
    if persist:
        done = dask.persist(*[x for p, piece in zip(parts, pieces) for x in piece + [p[3]]])
        pieces = [list(done[i:i + kept]) for i in range(0, len(done), kept + 1)]
        stats = dask.compute(*done[kept::kept + 1])
    else:  # one read: the count, the fingerprints, the validation scan and the warm start's
        # rows; every later pass rebuilds the rows and checks they are those counted and scanned
        held = dask.persist(*[dask.delayed(_first_pass)(p, spec, weights, scan_map)
                              for p in sources])
        counted = dask.compute(*[(h[0], h[1], h[2][0]) for h in held])  # the sub stays held
        stats = [c[0] for c in counted]
        scanned = np.array([c[2] for c in counted]).reshape(-1, 13)
        pieces = [[q[j] for j in range(kept)] for q in
                  (dask.delayed(_dplr_block, nout=6)(p, spec, np.inf, weights, (i, c[1]))
                   for i, (p, c) in enumerate(zip(sources, counted)))]
    stats = np.array(stats).reshape(-1, 6)
    n_total, n_dropped = int(stats[:, 0].sum()), int(stats[:, 1].sum())
    if n_total - n_dropped == 0:
        raise ValueError("every row has a missing value in a model variable; nothing to fit")
    keep = [i for i, m in enumerate(stats[:, 0] - stats[:, 1]) if m > 0]  # no empty blocks
    lengths = {i: int(stats[i, 0] - stats[i, 1]) for i in keep}

    def stacked(j, *width):
        return da.concatenate([da.from_delayed(pieces[i][j], shape=(lengths[i], *width),
                                               dtype=float) for i in keep], axis=0)

    X, codes = stacked(0, d_raw), stacked(1)
    w = stacked(2) if weights is not None else None
    rows = DaskRows(X, codes > 0, w, weights_bound if weights is not None else None,
                    codes=codes if spec.n_classes > 2 else None, persist=persist, verified=True)
    if not persist:
        rows._first_scan = (scanned[keep], int(spec.intercept), scan_map)
        if spec.n_classes <= 2:
            sub_len = {i: -(-lengths[i] // _SUB_STRIDE) for i in keep}

            def sub(j, *width):
                return da.concatenate([da.from_delayed(held[i][2][1 + j],
                                                       shape=(sub_len[i], *width), dtype=float)
                                       for i in keep], axis=0)

            rows._sub = (sub(0, d_raw), sub(1) > 0, sub(2) if weights is not None else None)
    return FrameRows(rows=rows, n_total=n_total, n_dropped=n_dropped)


def as_dask_frame(data, what: str = "data"):
    """A Dask DataFrame with string column names, for :func:`privatelr.dplr`'s input forms: a
    Dask DataFrame as it is, a 2-D Dask array with columns ``X1, X2, ...`` (the names a NumPy
    matrix gets in memory)."""
    import dask.dataframe as dd

    _, da = _import_dask()
    if isinstance(data, da.Array):
        if data.ndim != 2:
            raise ValueError(f"{what} must be a 2-D Dask array, got {data.ndim}-D")
        return dd.from_dask_array(data, columns=[f"X{j + 1}" for j in range(data.shape[1])])
    if not (hasattr(data, "to_delayed") and hasattr(data, "columns")):
        raise TypeError(f"{what} must be a Dask DataFrame or 2-D Dask array, got "
                        f"{type(data).__name__}")
    names = column_names(data.columns, what)
    if list(data.columns) != names:
        data = data.rename(columns=dict(zip(data.columns, names)))
    return data


def with_labels(covariates, labels, name: str):
    """``covariates`` (Dask DataFrame or 2-D array) with the label vector ``labels`` (a Dask
    Series or 1-D array with the same partitions) as the column ``name``."""
    import dask.dataframe as dd

    _, da = _import_dask()
    frame = as_dask_frame(covariates, "data (the covariates)")
    if name in frame.columns:
        raise ValueError(f"data already has a column named {name!r}; rename it")
    fix = "take both from one Dask DataFrame (ddf['y'], ddf[covariates])"
    if isinstance(labels, da.Array):
        if labels.ndim != 1:
            raise ValueError(f"the label vector must be 1-D, got {labels.ndim}-D")
        labels = dd.from_dask_array(labels, columns=name)
        fix = "give the labels the chunks of the covariates' rows"
    elif not hasattr(labels, "map_partitions"):
        raise TypeError(f"with Dask covariates the labels must be a Dask Series or array, got "
                        f"{type(labels).__name__}")
    if frame.npartitions != labels.npartitions:
        raise ValueError(f"the label vector and data have different partitions; {fix}")
    return dd.map_partitions(_joined, frame.clear_divisions(), labels.clear_divisions(), name,
                             align_dataframes=False)


def _joined(part, labels, name):
    if len(part) != len(labels):
        raise ValueError(f"a partition has {len(part)} covariate rows but {len(labels)} labels; "
                         "the label vector and data must have the same rows")
    out = part.copy()
    out[name] = labels.to_numpy() if not hasattr(labels.dtype, "categories") else labels.values
    return out


def position_groups(data, k: int):
    """``(groups, n)``: the rows of a Dask DataFrame split by global position ``i`` into group
    ``i mod k`` (:func:`privatelr.tuning.dppack_split`'s rule, positions only), each group a
    lazy Dask DataFrame; the frame is persisted once and ``n`` counted exactly."""
    import dask.dataframe as dd

    dask, _ = _import_dask()
    (data,) = dask.persist(data)
    parts = data.to_delayed()
    lengths = np.array(dask.compute(*[dask.delayed(len)(p) for p in parts]), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    groups = [dd.from_delayed([dask.delayed(_every)(p, int(o), j, k)
                               for p, o in zip(parts, offsets)], meta=data._meta,
                              verify_meta=False) for j in range(k)]
    return groups, int(lengths.sum())


def _every(part, offset: int, j: int, k: int):
    return part[(offset + np.arange(len(part))) % k == j]


def partition_sum(data, fn, *args) -> np.ndarray:
    """``sum over partitions of fn(partition, *args)`` (arrays of one shape), computed on the
    workers; ``fn`` sees each partition as a pandas DataFrame with a fresh 0-based index."""
    dask, _ = _import_dask()
    out = dask.compute(*[dask.delayed(_reindexed)(p, fn, *args) for p in data.to_delayed()])
    return np.sum(np.asarray(out, dtype=float), axis=0)


def _reindexed(part, fn, *args):
    return np.asarray(fn(part.reset_index(drop=True), *args), dtype=float)


def map_row_blocks(X, fn):
    """A lazy Dask vector: ``fn`` (a block of rows -> one number per row) applied to every
    row block of the Dask array or DataFrame ``X`` (numbers, checked as for a fit)."""
    _, da = _import_dask()
    X = dask_matrix(X, da)
    return X.map_blocks(fn, drop_axis=1, dtype=float)


def schema_of(data):
    """The Dask DataFrame's schema as an empty pandas frame (:func:`_schema_frame`)."""
    return _schema_frame(data._meta)


def _predict_part(part, spec, coef, p_tr, type):
    r = spec.rows(part.reset_index(drop=True), response=False, what="data")
    return output_series(r.X, r.complete, coef, p_tr, spec.labels, type, index=part.index,
                         offset=r.offset)


def predict_frame(spec, coef, p_tr: float, data, type: str):
    """Predictions for a Dask DataFrame: a lazy Dask Series, computed partition-wise with the
    model's spec (same columns, levels, public map); nothing runs until the caller asks."""
    import pandas as pd

    if not hasattr(data, "map_partitions"):
        raise TypeError(f"predict on Dask data needs a Dask DataFrame, got "
                        f"{data.__class__.__name__}")
    coef = np.asarray(coef, dtype=np.float64)
    if type == "class":
        meta = pd.Series([], dtype=class_dtype(spec.labels), name="class")
    else:
        meta = pd.Series([], dtype=np.float64, name="link" if type == "link" else "probabilities")
    return data.map_partitions(_predict_part, spec, coef, float(p_tr), type, meta=meta)
