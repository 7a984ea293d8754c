r"""The regularised, perturbed ERM objective over a design matrix, evaluated in fused passes.

.. math::
    J(w) = \frac{1}{n}\sum_{i=1}^n a_i\,\ell(y_i\,(x_i^\top w + o_i)) + \frac{\lambda}{2}\|w\|^2
           + \frac{1}{n} b^\top w

(``a_i`` observation weights, default 1; ``b`` the objective-perturbation noise, default 0;
``o_i`` R's per-row ``offset``, default 0).

**Offsets and privacy.** A row's term :math:`a\ell(y(x^\top w + o))` has gradient
:math:`a\ell'\,y\,x` (norm at most :math:`AB`, as :math:`|\ell'| \le 1`) and Hessian
:math:`a\ell''xx^\top \preceq cAB^2 I`: the offset moves the point where :math:`\ell'` and
:math:`\ell''` are evaluated, never their bounds. The proofs of objective perturbation (JMLR11
Theorem 9: the Jacobian bound uses only :math:`\|x\| \le B` and :math:`|\ell''| \le c`) and
of output perturbation (Corollary 8: the sensitivity :math:`2AB/(n\lambda)` of the minimiser
of a λ-strongly convex objective whose per-row gradients are bounded by :math:`AB`) therefore
hold unchanged, and the calibration does not depend on the offset. The offset is private row
data like a covariate: neighbouring data sets differ in a whole row, offset included.

Cost model, which is what makes the solver fast on millions of rows: the margins
``m = y * (X @ w)`` are cached, a line search along ``p`` needs one pass ``u = y * (X @ p)`` and
then evaluates ``J(w + t p)`` from ``m + t u`` with O(n) vector arithmetic and no further pass over
``X``; margins (or the line's increment), loss terms, gradient and Hessian are computed together
in one pass over row chunks of about 4 MB, so each chunk is read from memory once and reused from
cache, and no n-by-d temporary is ever allocated. Each chunk's products are BLAS calls —
``gemv`` for ``X @ v`` and ``X' r``, ``syrk`` for a Hessian — with BLAS held to one thread
(:func:`privatelr._threads.blas_one_thread`): the parallelism is over chunks, on the package's
small pool (:mod:`privatelr._threads`; NumPy and BLAS release the GIL), so a busy machine makes
no pass wait for BLAS's own threads. Only the derivatives of the loss are computed in a pass (one
``exp`` a row; a gradient pass gets the row's weight ``y a / n`` times ``l'`` from the loss's
``scaled_derivative`` in four array operations instead of six; ``exp`` itself, 7 ns a value
on an AVX2 machine, is about a quarter of a gradient pass at d = 20); the objective's value (a
``log1p`` and an ``exp`` a row) is computed from the cached margins, with no pass over ``X``,
when a line search asks for it — and Newton's method rarely does
(:func:`privatelr.solver.newton` certifies most steps from the gradient). The
chunks are fixed by ``n`` and ``d`` and their partial sums are added in chunk order, so every
pass gives the same bits for any number of threads. ``benchmarks/bench_pass.py`` measures a
pass against the floor, one BLAS read of ``X``.

The Hessian ``X^T diag(a l''/n) X`` is formed in single precision per chunk (accumulated across
chunks in double) when ``d`` is large enough for its ``n d^2`` flops to dominate. The Hessian
only shapes Newton's step; the stopping test and the solution are decided by the double-precision
gradient, so this halves the time of a pass without changing the answer (a relative error of
1e-6 in the Hessian turns Newton's quadratic convergence into a contraction by about 1e-6 per
step, far faster than needed).
"""

from __future__ import annotations

import numpy as np

from typing import Any

from ._threads import PARALLEL_MIN_BYTES, blas_one_thread, map_chunks, sum_in_order
from ._validation import chunk_rows
from .losses import Loss
from .progress import report_pass

HESSIAN_F32_MIN_D = 24
#: at most this many chunks of a Hessian pass are computed between two in-order additions, and
#: their partial Hessians at most ``HESSIAN_ROUND_BYTES`` (fewer chunks per round at large d)
HESSIAN_ROUND = 16
HESSIAN_ROUND_BYTES = 32 * 2**20


def loss_terms(loss, m, second: bool, value: bool = True):
    """``(value, derivative, second derivative or None)`` of ``loss`` at the margins ``m`` (the
    loss's fused ``terms`` when it has one); with ``value=False`` the value is None and only
    the derivatives are computed (the loss's fused ``derivatives`` when it has one)."""
    if not value:
        fused = getattr(loss, "derivatives", None)
        if fused is not None:
            return (None, *fused(m, second))
        return None, loss.derivative(m), (loss.second_derivative(m) if second else None)
    terms = getattr(loss, "terms", None)
    if terms is not None:
        return terms(m, second)
    return (loss.value(m), loss.derivative(m), loss.second_derivative(m) if second else None)


def objective_value(lv, weights, n: int, lambda_: float, w, linear) -> tuple[float, float]:
    """``(J(w), the magnitude of its summands)`` from the per-row losses ``lv``: the weighted
    mean, the ridge and the linear (noise) term. The magnitude is what the rounding of ``J`` is
    relative to (not ``|J|``, which can be tiny when the noise term cancels the rest)."""
    # einsum, not BLAS ``dot``: OpenBLAS splits long dot products over its threads, which
    # would make the value depend on the core count
    data = (np.einsum("i,i->", lv, weights) if weights is not None else lv.sum()) / n
    ridge, lin = 0.5 * lambda_ * (w @ w), linear @ w
    return float(data + ridge + lin), float(abs(data) + ridge + abs(lin))


def _borrowed(a, m) -> bool:
    """Whether a loss's output ``a`` may not be overwritten: not a float64 array of its own
    (a view of the margins ``m``, or another dtype)."""
    return (not isinstance(a, np.ndarray) or a.dtype != np.float64 or not a.flags.writeable
            or np.may_share_memory(a, m))


#: a model Hessian's sample reads runs of this many consecutive rows (see :func:`model_rows`)
MODEL_RUN = 64


def model_rows(a, k: int, dtype=None, run: int = MODEL_RUN):
    """The rows of ``a`` a model Hessian with stride ``k`` samples: the first ``run`` of every
    ``k * run`` rows (the last, partial period included), copied into a new contiguous array
    of ``dtype`` (default ``a``'s) in one casting copy.

    Runs rather than every ``k``-th row: copying a strided view is 1.4-2 times slower than
    copying runs of rows (measured at d = 20 and 100: each row of a strided view is its own
    short copy), and a period of ``k * run`` rows still spreads the sample over the whole
    chunk, so data sorted by a covariate or by the label are sampled evenly.

    >>> model_rows(np.arange(10), 2, run=2)
    array([0, 1, 4, 5, 8, 9])
    """
    period, rest = k * run, a.shape[1:]
    full = a.shape[0] // period
    tail = a[full * period:full * period + run]
    out = np.empty((full * run + tail.shape[0],) + rest, dtype=dtype or a.dtype)
    out[:full * run].reshape((full, run) + rest)[...] = (
        a[:full * period].reshape((full, period) + rest)[:, :run])
    out[full * run:] = tail
    return out


class ERMObjective:
    """Value, gradient and Hessian of the ERM objective with cached margins.

    Parameters
    ----------
    X : (n, d) C-contiguous float64 array
    y : (n,) array of -1.0/+1.0
    loss : Loss
    lambda_ : float
        Ridge parameter (> 0, or 0 only if the caller accepts a possibly unbounded problem).
    noise : (d,) array or None
        Objective-perturbation vector ``b`` (enters as ``b @ w / n``).
    weights : (n,) array or None
    offset : (n,) array or None
        Per-row offsets ``o`` added to the linear predictor (R's ``offset()``).

    Examples
    --------
    >>> from privatelr.losses import LogisticLoss
    >>> X = np.array([[1.0, 0.5], [1.0, -0.5], [1.0, 0.2]])
    >>> obj = ERMObjective(X, np.array([1.0, -1.0, 1.0]), LogisticLoss(), 0.1)
    >>> f, g, H = obj.evaluate(np.zeros(2))
    >>> round(f, 6), obj.passes
    (0.693147, 1)
    """

    #: :meth:`evaluate` takes ``stride`` (a Hessian of about every ``k``-th row, sampled by
    #: :func:`model_rows`: the solver's model)
    strided_hessian = True
    #: :meth:`evaluate` takes ``origin`` (the gradient at 0 from the same pass: the solver's
    #: reference for its relative tolerance when it starts elsewhere)
    origin_gradient = True

    def __init__(self, X, y, loss: Loss, lambda_: float, noise=None, weights=None, offset=None):
        self.X = X
        self.y = y
        self.offset = offset
        # the margins' constant part y * o (None without an offset: no extra arithmetic)
        self._yo = None if offset is None else y * np.asarray(offset, dtype=np.float64)
        self.loss = loss
        self.lambda_ = float(lambda_)
        self.n, self.d = X.shape
        self.linear = np.zeros(self.d) if noise is None else np.asarray(noise, float) / self.n
        self.weights = weights
        self.passes = 0
        #: work done, in full-data passes (a subsample's pass adds its share of the rows):
        #: shared with the subsamples, so the total is the fit's, warm start included
        self.work = {"gradient": 0.0, "hessian": 0.0, "copy": 0.0}
        self._share = 1.0
        self.chunk = chunk_rows(self.d)
        self._f32 = self.d >= HESSIAN_F32_MIN_D
        self._w = None
        self._m: Any = None
        self._candidate: tuple | None = None
        self._ahead: tuple | None = None  # (w, m, f, g, H) of the last line search at t = 1
        self._origin = False              # a pass also sums the data gradient at w = 0
        #: the gradient of J at 0, once a pass with ``origin`` computed it (else None)
        self.gradient_at_zero: np.ndarray | None = None

    def subsample(self, m: int) -> "ERMObjective":
        """The same objective on every ``k``-th row (``k = n // m``): a cheap model of ``J``.

        The data term is an average, so it is comparable across sample sizes; the ridge and the
        linear (noise) term are kept as they are. Used only to find a starting point: the
        solution is always decided on the full data. Deterministic (no randomness): a strided
        sample covers sorted data evenly. Its passes are counted separately (each reads
        ``1/k`` of the rows). It owns contiguous copies of its rows, labels, weights and
        offsets: its passes make no strided reads (scaling a chunk's labels at 62,500 x 20:
        0.04 -> 0.01 ms). Its rows stay double precision: a single-precision copy for its
        Hessians saved 2 ms of a 0.2 s fit at d = 20 but cost 15 ms of 0.9 s at d = 100
        (the new pages of the copy against a cast per chunk into reused memory).
        """
        k = max(1, self.n // max(1, int(m)))
        rows = slice(None, None, k)

        def copy(a):  # every k-th element, contiguous
            return None if a is None else np.ascontiguousarray(a[rows])

        sub = ERMObjective(copy(self.X), copy(self.y), self.loss, self.lambda_,
                           weights=copy(self.weights), offset=copy(self.offset))
        sub.linear = self.linear.copy()
        sub._f32 = True  # its Hessians only shape the warm start's steps
        sub.work, sub._share = self.work, self._share * sub.n / self.n
        self.work["copy"] += sub._share
        return sub

    # -- elementwise pieces ----------------------------------------------------------------
    def _terms(self, m, second, value: bool = True):
        return loss_terms(self.loss, m, second, value)

    def _value_from(self, w, lv):
        value, self.value_scale = objective_value(lv, self.weights, self.n, self.lambda_, w,
                                                  self.linear)
        return value

    def _values(self, m):
        """The per-row losses at the margins ``m`` (no pass over ``X``: O(n) arithmetic, in
        the passes' fixed chunks, on the pool when ``n`` is large)."""
        lv = np.empty(self.n)
        step = max(self.chunk, 65536)

        def work(k):
            rows = slice(k * step, min((k + 1) * step, self.n))
            lv[rows] = self.loss.value(m[rows])

        map_chunks(-(-self.n // step), work)  # 65,536-row chunks: one inline below that
        return lv

    def _row_scale(self, rows):
        """The rows' gradient weights ``y a / n`` (per chunk: no n-vector is kept for them)."""
        scale = self.y[rows] * (1.0 / self.n)
        if self.weights is not None:
            scale *= self.weights[rows]
        return scale

    def _scaled(self, d1, d2, rows, m, scale):
        """Per-row gradient weights ``r = d1 * scale`` (``scale``: :meth:`_row_scale`) and
        square-root curvature weights for ``rows``. The loss's arrays are reused for them when
        they are its own float64 arrays (not views of the margins ``m``, as a user's loss might
        return)."""
        r = d1 * scale if _borrowed(d1, m) else np.multiply(d1, scale, out=d1)
        if self.weights is not None:
            if d2 is not None:
                d2 = d2 * self.weights[rows]
        elif d2 is not None and _borrowed(d2, m):
            d2 = d2.astype(np.float64)
        if d2 is None:
            return r, None
        d2 /= self.n
        return r, np.sqrt(d2, out=d2)

    def _chunk_hessian(self, Xc, sq, k: int):
        """The chunk's data Hessian ``Xc' diag(sq^2) Xc`` (None when no row has curvature);
        with ``k > 1`` a model: that of the rows :func:`model_rows` samples (about ``1/k`` of
        the chunk), scaled to stand for all, in single precision whatever ``d`` (the model's
        sampling error, about ``sqrt(d k / n)``, is orders of magnitude above float32's)."""
        sampled = k > 1
        if sampled:  # the sample is copied and cast to single precision in one go
            size = Xc.shape[0]  # the chunk's rows, which the sample stands for
            Xc, sq = model_rows(Xc, k, np.float32), model_rows(sq, k)
            sq *= np.sqrt(size / sq.shape[0])
        active = sq > 0
        if not active.all():  # Huber: rows outside the quadratic band add no curvature
            Xc, sq = Xc[active], sq[active]
            if sq.size == 0:
                return None
        if sampled or self._f32:  # cast first (a sample is already the package's own
            # single-precision copy), scale in single precision: half the memory traffic
            Xs = Xc if sampled else Xc.astype(np.float32)
            Xs *= sq.astype(np.float32)[:, None]
        else:
            Xs = Xc * sq[:, None]
        return Xs.T @ Xs  # NumPy calls BLAS syrk for a product with its own transpose

    def _finish(self, w, g, H):
        g += self.lambda_ * w + self.linear
        if H is not None:
            H[np.diag_indices_from(H)] += self.lambda_
        return g, H

    # -- margins -----------------------------------------------------------------------
    def _cached_margins(self, w):
        if self._w is not None and np.array_equal(w, self._w):
            return self._m
        if self._ahead is not None and np.array_equal(w, self._ahead[0]):
            self._w, self._m = self._ahead[0], self._ahead[1]
            return self._m
        if self._candidate is not None and np.array_equal(w, self._candidate[0]):
            self._w, self._m = self._candidate
            return self._m
        if not w.any():
            self._w, self._m = w.copy(), (np.zeros(self.n) if self._yo is None else self._yo.copy())
            return self._m
        return None

    def _margins(self, w):
        m = self._cached_margins(w)
        if m is None:
            w = np.array(w, dtype=float)
            m = np.empty(self.n)

            def work(k):
                rows = slice(k * self.chunk, min((k + 1) * self.chunk, self.n))
                mc = m[rows]
                np.matmul(self.X[rows], w, out=mc)
                mc *= self.y[rows]

            with blas_one_thread():
                map_chunks(-(-self.n // self.chunk), work, self.X.nbytes >= PARALLEL_MIN_BYTES)
            if self._yo is not None:
                m += self._yo
            self.passes += 1
            report_pass(self._share)
            self.work["gradient"] += self._share
            self._w, self._m = w, m
        return m

    def _sweep(self, m, w, step, hessian, stride: int = 1, value: bool = True, cubes=None):
        """One pass over the rows: loss terms, gradient and (optionally) Hessian at a point.

        The point's margins are ``m`` when given; else ``m + y * (X @ step)`` along a line (the
        increments are each chunk's temporary: no n-vector is kept for them); else ``y * (X @
        w)``, computed chunk by chunk in the same pass. Returns ``(margins, loss_values_or_None,
        data_gradient, data_hessian)``; the per-row losses only with ``value`` (the gradient and
        Hessian need only the loss's derivatives, which cost one ``exp`` a row against two
        transcendental functions with the value). Gradient and Hessian are accumulated in
        double precision. Along a line, ``cubes`` (one slot per chunk) receives each chunk's
        ``sum a_i |u_i|^3`` of the increments ``u`` (:meth:`line`'s step certificate).

        Each chunk's products are BLAS calls (``gemv`` for ``X @ v`` and ``X' r``, ``syrk`` for
        the Hessian) with BLAS held to one thread (:func:`privatelr._threads.blas_one_thread`):
        the parallelism is over chunks, on the package's pool. Deterministic whatever the number
        of threads: the chunk boundaries depend on ``n`` and ``d`` only, each chunk yields its
        own partial gradient (its own single-threaded BLAS calls, whose result depends only on
        the chunk), and the partials are added in chunk order on the calling thread
        (:func:`privatelr._threads.sum_in_order`) — the same association as the one-thread loop,
        so 1, 2 or 8 threads give the same bits. With a Hessian, the pool computes up to
        ``HESSIAN_ROUND`` chunks' partial gradients and Hessians at a time, and the calling
        thread adds them to running totals in chunk order: at most that many d-by-d partials
        are kept (32 MB).
        """
        n = self.n
        along = step is not None
        fresh = m is None and not along
        vec = np.ascontiguousarray(step if along else w, dtype=np.float64)
        out = np.empty(n) if (along or fresh) else m
        lv = np.empty(n) if value else None
        count = -(-n // self.chunk)
        parallel = self.X.nbytes >= PARALLEL_MIN_BYTES
        with blas_one_thread():
            if hessian:
                g = np.zeros((2, self.d) if self._origin else self.d)
                H = np.zeros((self.d, self.d))
                rounds = max(2, min(HESSIAN_ROUND, HESSIAN_ROUND_BYTES // (8 * self.d ** 2)))
                for first in range(0, count, rounds):
                    parts = map_chunks(min(rounds, count - first),
                                       lambda j, first=first: self._chunk(  # type: ignore[misc]
                                           first + j, m, vec, out, along, lv, True, stride, cubes),
                                       parallel)
                    for gk, Hk in parts:  # in chunk order, as a one-thread loop adds them
                        g += gk
                        if Hk is not None:
                            H += Hk
            else:
                g = sum_in_order(map_chunks(count, lambda k: self._chunk(k, m, vec, out, along, lv,
                                                                         False, 1, cubes),
                                            parallel))
                H = None
        self.passes += 1
        report_pass(self._share)
        if hessian:  # a strided Hessian costs a gradient pass and 1/k of the Hessian's extra
            self.work["hessian"] += self._share / stride
            self.work["gradient"] += self._share * (1.0 - 1.0 / stride)
        else:
            self.work["gradient"] += self._share
        return out, lv, g, H

    def _chunk(self, k, m, vec, out, along: bool, lv, hessian, stride: int = 1, cubes=None):
        """The body of :meth:`_sweep` for chunk ``k``: fills its rows of ``out`` and ``lv`` and
        returns its partial gradient (with ``hessian``: and its partial Hessian)."""
        rows = slice(k * self.chunk, min((k + 1) * self.chunk, self.n))
        Xc = self.X[rows]
        if along:  # the increments: a temporary of the chunk
            uc = Xc @ vec
            uc *= self.y[rows]
            np.add(m[rows], uc, out=out[rows])
            if cubes is not None:
                au = np.abs(uc)
                sq = au * au
                if self.weights is not None:
                    sq *= self.weights[rows]
                cubes[k] = sq @ au
        elif out is not m:
            oc = out[rows]
            np.matmul(Xc, vec, out=oc)
            oc *= self.y[rows]
            if self._yo is not None:
                oc += self._yo[rows]
        fused = None if hessian or lv is not None else getattr(self.loss, "scaled_derivative",
                                                               None)
        scale = self._row_scale(rows)
        if fused is not None:       # a gradient alone: the loss scales its derivative itself
            r, sq = fused(out[rows], scale), None
        else:
            values, d1, d2 = self._terms(out[rows], hessian, lv is not None)
            if lv is not None:
                lv[rows] = values
            r, sq = self._scaled(d1, d2, rows, out, scale)
        gk = r @ Xc
        if self._origin:            # and the gradient at w = 0, from the chunk still in cache
            zero = (self._yo[rows] if self._yo is not None else np.zeros(1))
            gk = np.stack([gk, (scale * self.loss.derivative(zero)) @ Xc])
        return (gk, self._chunk_hessian(Xc, sq, stride)) if hessian else gk

    # -- protocol used by the solver ---------------------------------------------------
    #: :meth:`evaluate` and :meth:`line` can skip the objective's value (``value=False``);
    #: :meth:`value` then computes it from the cached margins, with no pass over ``X``
    lazy_value = True

    def value(self, w) -> float:
        """``J(w)``: from the margins when they are cached (the point of the last evaluation or
        line search; O(n) arithmetic, no pass over ``X``), else one margins pass first."""
        ahead = self._ahead
        if ahead is not None and ahead[2] is not None and np.array_equal(w, ahead[0]):
            return ahead[2]
        w = np.asarray(w, dtype=float)
        f = self._value_from(w, self._values(self._margins(w)))
        if ahead is not None and np.array_equal(w, ahead[0]):
            self._ahead = (ahead[0], ahead[1], f, ahead[3], ahead[4])
        return f

    def evaluate(self, w, hessian: bool = True, stride: int = 1, value: bool = True,
                 origin: bool = False):
        """Return ``(value, gradient, hessian_or_None)`` at ``w``.

        Costs one pass over ``X`` (margins, when not cached, are computed in the same pass);
        nothing when the last line search already prepared this point. With ``stride`` ``k >
        1`` the Hessian is a model: that of about every ``k``-th row of each chunk (runs of
        rows, :func:`model_rows`), scaled to stand for the chunk, in single precision (value and
        gradient stay exact), for about ``1/k`` of the Hessian's flops. With
        ``value=False`` the value is None (not computed; :meth:`value` gives it later). With
        ``origin`` the same pass also sums the gradient at 0 (the rows' weights there,
        ``l'(y o)``, times each chunk while it is in cache: about 3 % of a fit at 1e6 x 20),
        kept in :attr:`gradient_at_zero`.
        """
        ahead = self._ahead
        if origin:
            ahead = None                  # the pass is needed for the gradient at 0
        if ahead is not None and np.array_equal(w, ahead[0]) and (ahead[4] is not None or not hessian):
            self._w, self._m = ahead[0], ahead[1]
            f = self.value(ahead[0]) if value else ahead[2]
            return f, ahead[3].copy(), (None if ahead[4] is None else ahead[4].copy())
        w = np.array(w, dtype=float)
        self._origin = bool(origin)
        try:
            m, lv, g, H = self._sweep(self._cached_margins(w), w, None, hessian,
                                      max(1, int(stride)), value)
        finally:
            self._origin = False
        if origin:
            g, self.gradient_at_zero = g[0].copy(), g[1] + self.linear
        self._w, self._m = w, m
        return (self._value_from(w, lv) if value else None, *self._finish(w, g, H))

    def information(self, w) -> np.ndarray:
        r"""The data term's Hessian :math:`\frac1n\sum_i a_i\ell''(y_ix_i^\top w)x_ix_i^\top` at
        ``w`` in double precision throughout (no ridge, no single-precision shortcut): what
        :mod:`privatelr.inference` releases. One pass."""
        w = np.array(w, dtype=float)
        f32, self._f32 = self._f32, False
        try:
            _, _, _, H = self._sweep(self._cached_margins(w), w, None, True, value=False)
        finally:
            self._f32 = f32
        return H

    def line(self, w, p, hessian: bool = True):
        """Restrict ``J`` to the line ``w + t p``; returns ``phi(t)``.

        One fused pass over ``X`` computes ``u = y * (X @ p)`` and, speculatively, the gradient
        (and the Hessian when ``hessian``) at the full step ``w + p``, which Newton's method
        accepts in nearly every iteration; :meth:`evaluate` then returns them without a pass.
        ``phi.gradient`` is that gradient, and for a loss with a ``third_derivative_bound``
        ``c3``, ``phi.third = c3 (1/n) sum a_i |u_i|^3`` bounds the third derivative of ``phi`` on
        the line (from the same pass), so that the solver can certify the step's decrease without
        the objective's value (:func:`privatelr.solver.newton`). Every ``phi(t)`` costs O(n)
        arithmetic and no pass.
        """
        m = self._margins(w)
        w1 = w + 1.0 * p
        bound = getattr(self.loss, "third_derivative_bound", None)
        cubes = None if bound is None else np.zeros(-(-self.n // self.chunk))
        m1, _, g, H = self._sweep(m, w, p, hessian, value=False, cubes=cubes)
        g, H = self._finish(w1, g, H)
        self._ahead = (w1, m1, None, g, H)

        def phi(t: float) -> float:
            if t == 1.0:
                self._candidate = (w1, m1)
                return self.value(w1)
            wt = w + t * p
            mt = m + t * (m1 - m)   # the increments u, to m1's rounding (none is kept)
            self._candidate = (wt, mt)
            return self._value_from(wt, self._values(mt))

        phi.gradient = g  # type: ignore[attr-defined]
        if bound is not None and cubes is not None:  # phi''' on [0, 1] is at most this in size
            phi.third = float(bound) * float(cubes.sum()) / self.n  # type: ignore[attr-defined]
        return phi
