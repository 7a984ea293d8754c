"""A small thread pool for passes over large row-chunked arrays.

NumPy releases the GIL inside its loops (elementwise ufuncs, ``einsum``, casts), so two or more
Python threads working on different row chunks of the same array overlap one chunk's arithmetic
with another's memory reads.

**Determinism.** A pass's answer must not depend on the number of threads (``PRIVATELR_NUM_THREADS``
or the core count), since floating-point addition is not associative. So the caller fixes the
chunk boundaries from the array's shape alone (never from the thread count), every chunk produces
its own partial result, and :func:`map_chunks` returns the partials in chunk order; the caller
combines them in that order on its own thread (:func:`sum_in_order`). Which thread computed a
chunk then makes no difference: one thread, two or eight give bit-identical results.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

T = TypeVar("T")

MAX_WORKERS = 8
PARALLEL_MIN_BYTES = 16 * 2**20  # below this, a pass is too short to gain from threads
_POOL: ThreadPoolExecutor | None = None


_BLAS: Any = None  # threadpoolctl's controller of the loaded BLAS libraries (False: none found)
_BLAS_LOCK = threading.Lock()
_BLAS_USERS: list[Any] = [0, None]  # callers inside the context, and the limits to restore after the last


@contextlib.contextmanager
def blas_one_thread():
    """BLAS on one thread for the duration (``threadpoolctl``), then as it was.

    Reference-counted, so that nested uses and concurrent fits restore the limit only after
    the last one leaves. The limit is process-wide (it is BLAS's own setting): another thread
    of the process calling BLAS meanwhile runs on one BLAS thread too.

    Examples
    --------
    >>> with blas_one_thread():
    ...     pass
    """
    global _BLAS
    if _BLAS is None:
        try:
            from threadpoolctl import ThreadpoolController
            _BLAS = ThreadpoolController().select(user_api="blas") or False
        except Exception:  # no BLAS threadpoolctl can control (or it is not installed)
            _BLAS = False
    if _BLAS is False:
        yield
        return
    with _BLAS_LOCK:
        if _BLAS_USERS[0] == 0:
            _BLAS_USERS[1] = _BLAS.limit(limits=1)
        _BLAS_USERS[0] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_USERS[0] -= 1
            if _BLAS_USERS[0] == 0:
                _BLAS_USERS[1].restore_original_limits()
                _BLAS_USERS[1] = None


def workers() -> int:
    """Threads for a pass: ``PRIVATELR_NUM_THREADS`` when set, else one per available core,
    at most ``MAX_WORKERS`` either way.

    Set ``PRIVATELR_NUM_THREADS=1`` to keep every pass in the calling thread, e.g. when many
    fits already run in parallel processes.
    """
    env = os.environ.get("PRIVATELR_NUM_THREADS", "").strip()
    if env:
        try:
            wanted = int(env)
        except ValueError:
            raise ValueError(f"PRIVATELR_NUM_THREADS must be a positive integer, got {env!r}") from None
        if wanted < 1:
            raise ValueError(f"PRIVATELR_NUM_THREADS must be a positive integer, got {env!r}")
        return min(wanted, MAX_WORKERS)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="privatelr-pass")
    return _POOL


def _forget_pool() -> None:
    # a forked child inherits the pool object but not its threads: start a fresh one there
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def map_chunks(count: int, work: Callable[[int], T], parallel: bool = True) -> list[T]:
    """``[work(k) for k in range(count)]``: one result per chunk, in chunk order.

    Runs on the pool when ``parallel`` and more than one worker is available, else inline. The
    workers take the next chunk not yet taken as each finishes one (dynamic scheduling): on a
    busy machine a worker that the system deschedules holds up one chunk, not a fixed share of
    the pass. The list is the same whatever the number of workers and whichever worker computed
    which chunk, provided ``work(k)`` depends on ``k`` only (each chunk is computed alone, from
    fixed boundaries); combine it in order with :func:`sum_in_order`.

    Examples
    --------
    >>> map_chunks(4, lambda k: k * k)
    [0, 1, 4, 9]
    """
    w = workers() if parallel else 1
    if w == 1 or count < 2:
        return [work(k) for k in range(count)]
    w = min(w, count)
    out: list = [None] * count
    chunks = iter(range(count))
    lock = threading.Lock()

    def run(_: int) -> None:
        while True:
            with lock:
                k = next(chunks, None)
            if k is None:
                return
            out[k] = work(k)

    for _ in _pool().map(run, range(w)):  # waits for every worker; re-raises their errors
        pass
    return out


def sum_in_order(parts: Sequence[np.ndarray]) -> np.ndarray:
    """``((p0 + p1) + p2) + ...``: the partials added left to right, in a new array.

    The same association as a one-thread pass that adds each chunk's partial to a running total
    (which starts from zeros: ``0 + p0`` is exactly ``p0``).

    Examples
    --------
    >>> sum_in_order([np.array([1.0, 2.0]), np.array([0.5, 0.5])])
    array([1.5, 2.5])
    """
    total = np.array(parts[0], dtype=np.float64, copy=True)
    for p in parts[1:]:
        total += p
    return total
