r"""The design matrix built straight from the atoms: dense in one row-major pass, or sparse.

The design's *structure* is decided once, when a spec is made (which columns, in which order,
with which coding: :attr:`DesignSpec.formulaic_columns`, by R's rules in
:mod:`privatelr.design.algebra`). Every column is a product of parts, one per atom of its
term, read off its internal name (``_a3_``, ``_a3_[T.L2]``, ``_a3_[L2]``, ``_a5_p2_``):

* a numeric atom: its values;
* a factor atom's level ``k`` (treatment contrast or indicator alike): the indicator
  ``code == k``;
* a column of a matrix atom (``poly(x, k)``): that column.

So the values of every design column follow from the atoms without going through a DataFrame:
:func:`dense_matrix` fills a C-ordered float64 array block by block of rows (each block stays in
cache while its columns are written), from numeric vectors and the factors' integer codes, the
parts multiplied in their order (``inf * 0`` giving NaN). Numeric columns whose vectors are the
rows of one array in memory (a data frame's float block) are copied a run at a time, and a
factor's dummy columns are one scatter of 1s into zeros. :func:`sparse_matrix` gives the same
values as a CSR matrix (``DesignSpec.sparse``): a column with a factor part is computed only on
the rows of its level, so a factor with many levels costs one pass over the rows, not one per
level; ``tests/unit/test_design_materialize.py`` checks the two paths against each other and
against formulaic's model matrices where formulaic codes as R does.
"""

from __future__ import annotations

import numpy as np

try:                                    # NumPy 2 (NumPy 1: the top-level namespace)
    from numpy.lib.array_utils import byte_bounds
except ImportError:                     # pragma: no cover
    from numpy import byte_bounds  # type: ignore[attr-defined,no-redef]

from .._threads import PARALLEL_MIN_BYTES, map_chunks
from .algebra import FC_PART

__all__ = ["dense_matrix", "sparse_matrix"]

_BLOCK = 8192


def _plan(spec) -> list:
    """Per design column: None (the intercept) or its parts ``(kind, atom id, index)``."""
    atoms = {a["id"]: a for a in spec.atoms}
    plan: list = []
    for name in spec.formulaic_columns:
        if name == "Intercept":
            plan.append(None)
            continue
        parts: list = []
        for part in name.split(":"):
            m = FC_PART.match(part)
            if m is None:
                raise ValueError(f"unexpected design column {name!r}; this is a bug in "
                                 "privatelr, please report it")
            atom = atoms[m.group(1)]
            if atom["kind"] == "matrix":
                parts.append(("matrix", atom["id"],
                              [str(s) for s in atom["levels"]].index(m.group(2))))
            elif atom["kind"] == "factor":
                parts.append(("factor", atom["id"], int(m.group(3))))
            else:
                parts.append(("numeric", atom["id"], None))
        plan.append(parts)
    return plan


def _sources(spec, atoms: dict, complete: np.ndarray, n: int) -> dict:
    """Each atom's values on the complete rows: float64 (a matrix atom: ``(m, k)``), or a
    factor's integer codes."""
    all_rows = bool(complete.all())
    source = {}
    for atom in spec.atoms:
        v = atoms[atom["id"]]
        if atom["kind"] == "matrix":
            arr = np.asarray(v, dtype=np.float64)
        elif atom["kind"] == "factor":
            arr = np.asarray(v.data)
        else:
            arr = np.broadcast_to(np.asarray(v.data, dtype=np.float64), (n,))
        source[atom["id"]] = arr if all_rows else arr[complete]
    return source


def dense_matrix(spec, atoms: dict, complete: np.ndarray, n: int) -> np.ndarray:
    """The design of the ``complete`` rows as one C-contiguous float64 array whose columns are
    ``spec.formulaic_columns`` (see the module docstring). ``atoms`` maps atom ids to their
    values over all ``n`` rows (a :class:`~privatelr.design.values.Vec`, or an ``(n, k)``
    array for a matrix atom)."""
    plan = _plan(spec)
    n_levels = {a["id"]: len(a["levels"]) for a in spec.atoms if a["kind"] == "factor"}
    m = int(complete.sum())
    source = _sources(spec, atoms, complete, n)
    # a factor's own dummy columns (main effects) are set by one scatter of 1s per block, at
    # (row, column of the row's level), into zeros; every other column is a product of parts
    dummies: dict = {}
    scattered = set()
    for j, parts in enumerate(plan):
        if parts is not None and len(parts) == 1 and parts[0][0] == "factor":
            aid, level = parts[0][1], parts[0][2]
            dummies.setdefault(aid, np.full(n_levels[aid] + 1, -1, dtype=np.intp))[level] = j
            scattered.add(j)
    # runs of numeric columns whose values are the rows of one array (a data frame's float
    # block holds its columns so): one transposed copy a block, not a strided write a column
    runs = _stacked_runs(plan, source)
    # with dummies, the zeros come from np.zeros: a large array's new pages are zero already
    # (the kernel's), so the dummy columns are not written twice
    out = (np.zeros if dummies else np.empty)((m, len(plan)))
    flat = out.reshape(-1)                  # a view: out is a new C-contiguous array
    done = scattered.union(*(range(j, k) for j, k, _ in runs))

    def fill(k: int) -> None:
        rows = slice(k * _BLOCK, min((k + 1) * _BLOCK, m))
        with np.errstate(all="ignore"):   # inf * 0 in an interaction: the row gets NaN
            for j0, j1, stack in runs:
                out[rows, j0:j1] = stack[:, rows].T
            _fill_block(out, flat, rows, plan, source, dummies, done)

    # every block is written by one thread and every value computed alone: the same bits for
    # any number of threads (numpy's error state is per thread: set inside the block)
    map_chunks(-(-m // _BLOCK), fill, parallel=out.nbytes >= PARALLEL_MIN_BYTES)
    return out


def _stacked_runs(plan, source) -> list:
    """``(j0, j1, stack)`` for each run of two or more adjacent design columns ``j0 .. j1 - 1``
    that are numeric atoms whose source vectors are the rows of one array in memory
    (:func:`_rows_of_one_array`): ``stack`` is a read-only view whose row ``i`` is exactly
    column ``j0 + i``'s source vector."""
    runs = []
    j = 0
    while j < len(plan):
        k = j
        while k < len(plan) and plan[k] is not None and len(plan[k]) == 1 \
                and plan[k][0][0] == "numeric":
            k += 1
        if k - j >= 2:
            stack = _rows_of_one_array([source[plan[i][0][1]] for i in range(j, k)])
            if stack is not None:
                runs.append((j, k, stack))
        j = max(k, j + 1)
    return runs


def _rows_of_one_array(vectors: list):
    """The vectors as the rows of one read-only 2-D view when memory already holds them so,
    else None: they must be views of one array (the same root of their ``base`` chains, a
    data frame's float block) with the same dtype, length and stride, the ``i``-th starting
    ``i`` times one gap after the first. The view's elements are then the vectors' own, inside
    that root's memory, which the view keeps alive through its base. (Its bounds must stay in
    one allocation: NumPy copies a source whose bounds enclose the destination's through a
    temporary, checked the same way, so bounds spanning the heap between two allocations could
    recurse until the C stack overflows.)"""
    first = vectors[0]
    root = _root(first)
    start = _address(first)
    gap = _address(vectors[1]) - start
    for i, v in enumerate(vectors):
        if v.ndim != 1 or v.dtype != first.dtype or v.shape != first.shape \
                or v.strides != first.strides or _address(v) != start + i * gap \
                or _root(v) is not root:
            return None
    view = np.lib.stride_tricks.as_strided(first, shape=(len(vectors), first.shape[0]),
                                           strides=(gap, first.strides[0]), writeable=False)
    return view if _within(view, root) else None


def _root(v: np.ndarray) -> np.ndarray:
    """The array at the end of ``v``'s chain of ndarray bases (the one that holds its memory)."""
    while isinstance(v.base, np.ndarray):
        v = v.base
    return v


def _within(view: np.ndarray, root: np.ndarray) -> bool:
    """Whether every byte of ``view`` lies between ``root``'s first and last (one allocation:
    an array's memory is one buffer)."""
    (lo, hi), (root_lo, root_hi) = byte_bounds(view), byte_bounds(root)
    return view.size > 0 and root_lo <= lo and hi <= root_hi


def _address(v: np.ndarray) -> int:
    """Where ``v``'s first element lies in memory."""
    return v.__array_interface__["data"][0]


def _fill_block(out, flat, rows, plan, source, dummies, done) -> None:
    """Write the design's ``rows`` (a slice) into ``out`` (``flat``: its flat view; zeros
    wherever ``dummies`` are), every column but those in ``done`` (see :func:`dense_matrix`): a
    factor's dummy columns by one scatter of 1s (``dummies`` maps the factor to the design
    column of each level, -1 for none), the others as products of their parts."""
    block = out[rows]
    width = out.shape[1]
    for aid, column_of in dummies.items():
        c = column_of[source[aid][rows]]
        at = np.arange(rows.start * width, rows.stop * width, width) + c
        flat[at[c >= 0]] = 1.0
    for j, parts in enumerate(plan):
        if j in done:
            continue
        if parts is None:
            block[:, j] = 1.0
            continue
        col = None
        for kind, aid, index in parts:
            if kind == "numeric":
                v = source[aid][rows]
            elif kind == "factor":
                v = source[aid][rows] == index
            else:
                v = source[aid][rows, index]
            col = v if col is None else col * v
        block[:, j] = col


def sparse_matrix(spec, atoms: dict, complete: np.ndarray, n: int):
    """The design of the ``complete`` rows as a CSR matrix with :func:`dense_matrix`'s values
    (arguments as there). A column with a factor part is computed on the rows of that level
    only (one stable sort of each factor's codes finds them), its other parts multiplied in
    the dense order; a column whose numeric parts hold an infinity or NaN is computed on every
    row, so that ``inf * 0`` gives NaN here too."""
    import scipy.sparse as sp

    plan = _plan(spec)
    m = int(complete.sum())
    source = _sources(spec, atoms, complete, n)
    finite = {a["id"]: bool(np.isfinite(source[a["id"]]).all()) for a in spec.atoms
              if a["kind"] != "factor"}
    groups: dict = {}

    def level_rows(aid: str, level: int) -> np.ndarray:
        if aid not in groups:
            codes = source[aid]
            order = np.argsort(codes, kind="stable")
            groups[aid] = (order, np.searchsorted(codes[order], np.arange(-1, codes.max(
                initial=-1) + 2)))
        order, edges = groups[aid]
        if level + 2 >= len(edges):
            return order[:0]
        return order[edges[level + 1]:edges[level + 2]]

    data, indices, counts = [], [], []
    with np.errstate(all="ignore"):               # inf * 0 in an interaction: NaN, as dense
        for parts in plan:
            if parts is None:
                rows, values = np.arange(m), np.ones(m)
            elif any(k == "factor" for k, _, _ in parts) and all(
                    finite[aid] for k, aid, _ in parts if k != "factor"):
                kind, aid, level = next(p for p in parts if p[0] == "factor")
                rows = level_rows(aid, level)
                values = np.ones(rows.size)
                for kind, aid, index in parts:
                    if kind == "factor":
                        rows_ok = source[aid][rows] == index
                        rows, values = rows[rows_ok], values[rows_ok]
                    elif kind == "numeric":
                        values = values * source[aid][rows]
                    else:
                        values = values * source[aid][rows, index]
            else:
                col = None
                for kind, aid, index in parts:
                    v = (source[aid] if kind == "numeric" else source[aid] == index
                         if kind == "factor" else source[aid][:, index])
                    col = v if col is None else col * v
                col = np.asarray(col, dtype=np.float64)
                rows = np.flatnonzero(col != 0)
                values = col[rows]
            data.append(values)
            indices.append(rows)
            counts.append(rows.size)
    indptr = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    csc = sp.csc_matrix((np.concatenate(data) if data else np.zeros(0),
                         np.concatenate(indices) if indices else np.zeros(0, dtype=np.intp),
                         indptr), shape=(m, len(plan)))
    return csc.tocsr()
