"""A small thread pool for passes over large row-chunked arrays.

NumPy releases the GIL inside its loops (elementwise ufuncs, ``einsum``, casts), so two or more
Python threads working on different row chunks of the same array overlap one chunk's arithmetic
with another's memory reads. Work is split statically (chunk ``k`` to worker ``k mod W``) and
results are combined in worker order, so answers do not depend on thread timing.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

MAX_WORKERS = 8
PARALLEL_MIN_BYTES = 16 * 2**20  # below this, a pass is too short to gain from threads
_POOL: ThreadPoolExecutor | None = None


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


def map_chunks(starts: Sequence[int], work: Callable[[Sequence[int]], T],
               parallel: bool = True) -> list[T]:
    """``[work(part) for part in parts]`` where the parts deal ``starts`` out round-robin.

    Runs on the pool when ``parallel`` and more than one core is available, else inline (one
    part holding every start).
    """
    w = workers() if parallel else 1
    if w == 1 or len(starts) < 2:
        return [work(starts)]
    return list(_pool().map(work, [starts[i::w] for i in range(w)]))
