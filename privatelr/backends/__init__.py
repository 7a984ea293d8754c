"""Backends: where rows live. Chosen from the type of the data, never by the caller.

* NumPy / pandas data → :class:`privatelr.rows.ArrayRows` (in memory);
* Dask collections → :class:`privatelr.backends.dask.DaskRows` (partition-wise; ``dask`` is
  imported only there, and only when Dask data is passed);
* ``scipy.sparse`` matrices → :class:`privatelr.backends.sparse.SparseRows` (in memory, never
  densified).

Both implement :class:`privatelr.rows.RowSource`, so every front end runs one pipeline.
"""

from __future__ import annotations

from .._validation import is_sparse
from ..rows import ArrayRows, FrameRows, array_frame_rows, is_dask

__all__ = ["as_rows", "frame_rows", "is_dask", "compute"]


def as_rows(X, y=None, weights=None, weights_bound: float | None = None, codes=None):
    """A row source for a design ``X`` with labels ``y`` (or class ``codes`` 0 .. K - 1 for a
    multiclass fit) and optional weights."""
    if is_dask(X, y, weights, codes):
        from .dask import DaskRows

        return DaskRows(X, y, weights, weights_bound, codes=codes)
    if is_sparse(X):
        from .sparse import SparseRows

        return SparseRows(X, y, weights, weights_bound, codes=codes)
    return ArrayRows(X, y, weights, weights_bound, codes=codes)


def frame_rows(spec, data, *, weights: str | None = None,
               weights_bound: float | None = None, scan_map=None) -> FrameRows:
    """The raw design rows and 0/1 responses of a data frame under ``spec`` (see
    :func:`privatelr.rows.array_frame_rows`); a Dask DataFrame partition by partition.
    ``scan_map``: on Dask data, the public map the rows will be ``mapped`` by (the same
    function object), so that a streamed fit's first read scans the rows the fit will see."""
    if is_dask(data):
        from .dask import design_rows

        if spec.sparse:
            raise ValueError("sparse=True is for data in memory; on Dask data the design is "
                             "built partition by partition (drop sparse=)")
        return design_rows(spec, data, weights=weights, weights_bound=weights_bound,
                           scan_map=scan_map)
    rows_class: type | None = None
    if spec.sparse:
        from .sparse import SparseRows as rows_class
    return array_frame_rows(spec, data, weights=weights, weights_bound=weights_bound,
                            rows_class=rows_class)


def compute(*values) -> tuple:
    """The values as concrete numbers: Dask ones computed together (one pass), others as they
    are."""
    if is_dask(*values):
        from .dask import compute_all

        return compute_all(*values)
    return values
