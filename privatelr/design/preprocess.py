r"""The public map from raw design rows to the rows a model is fitted on: scale → project → clip.

A fitted model stores one :class:`Preprocess` and applies it identically when it is fitted, when
it scores new data, and on every backend (each Dask partition, each chunk of a CSV file). Every
step works row by row — a row's image never depends on the other rows of its batch (the
projection is an ``einsum`` whose per-row sums have a fixed order, not a BLAS product whose
rounding depends on where a row falls) — so one row scored alone gives bit for bit what it gives
in any batch.

The steps act on the covariate columns only (the intercept column stays 1):

0. **the public map** from bounds known before the data (``bounds=``,
   :func:`privatelr.public_bounds`): each covariate column is divided by a public divisor and,
   when centred, gains public multiples of lower-order raw columns (``shifts``): for a main
   effect ``(x - m) / h = x / h - (m / h) * 1``. It is affine in the raw design columns, so
   :meth:`Preprocess.design_matrix` gives the matrix ``M`` with fitted rows ``X M`` that maps
   coefficients back to the data's units;
1. **scale** (``do_scale``, R's ``scaled()``): ``(x − centre) / sd · factor``. The centre, the
   standard deviations and the factor (one over the largest row norm) are statistics of the
   training rows, **not private**; :func:`standardise` computes them.
2. **project** (``rp_dim``): ``x ↦ x P`` with an Achlioptas matrix ``P`` (p × q) drawn from the
   fit's random generator, independent of the data.
3. **clip**: rows whose L2 norm exceeds ``clip`` are scaled onto the sphere of that radius
   (``clip=True`` in the front ends: this is how a guarantee that assumes ``‖x‖ ≤ data_norm``
   is made to hold for every row).

Examples
--------
>>> import numpy as np
>>> pre = Preprocess(clip=1.0)
>>> pre.apply(np.array([[1.0, 3.0, 4.0], [1.0, 0.3, 0.4]]), intercept=True).tolist()
[[1.0, 0.6000000000000001, 0.8], [1.0, 0.3, 0.4]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

__all__ = ["Preprocess", "standardise", "rp_suggest", "clip_rows"]


def clip_rows(X: np.ndarray, bound: float) -> tuple[np.ndarray, int]:
    """Scale rows whose L2 norm exceeds ``bound`` onto the sphere of that radius.

    Returns ``(X_clipped, n_clipped)``; ``X`` is copied only when a row is clipped. Norms of
    rows with huge entries are computed after dividing by the row's largest entry, so they do
    not overflow.
    """
    from .._validation import clip_rows as _clip  # the one home of row clipping

    return _clip(X, bound)


@dataclass(frozen=True)
class Preprocess:
    """The public map of a fitted model (see the module docstring).

    Attributes
    ----------
    divisors : tuple of float or None
        Public per-covariate divisors (``bounds=``).
    shifts : tuple of (int, int, float) or None
        ``(j, k, c)``: mapped covariate ``j`` gains ``c`` times raw design column ``k`` (the
        centring of ``bounds=``; the intercept is raw column 0).
    center, scale : tuple of float or None
        Per-covariate centre and standard deviation (``do_scale``).
    scale_factor : float or None
        The factor applied after standardising (``do_scale``).
    projection : tuple of tuples or None
        The (p × q) projection matrix, already divided by sqrt(q).
    clip : float or None
        Covariate rows are clipped into the ball of this radius.
    columns : tuple of str or None
        Names of the final columns when the map renames them (projection: ``dim.1`` ...).
    """

    center: tuple | None = None
    scale: tuple | None = None
    divisors: tuple | None = None
    shifts: tuple | None = None
    scale_factor: float | None = None
    projection: tuple | None = None
    clip: float | None = None
    columns: tuple | None = None

    @property
    def identity(self) -> bool:
        return (self.scale_factor is None and self.projection is None and self.clip is None
                and self.divisors is None and not self.shifts)

    def design_matrix(self, d: int, intercept: bool) -> np.ndarray | None:
        """The ``d × d`` matrix ``M`` of the public map (mapped rows = raw rows ``@ M``), or
        None when the map is not such a public linear map (a projection, or R's scaling with
        statistics of the rows). Coefficients ``b`` of the mapped design are ``M @ b`` per
        unit of the raw design columns (a clipped row excepted).

        Examples
        --------
        >>> Preprocess(divisors=(36.0,), shifts=((0, 0, -1.5),)).design_matrix(2, True)
        array([[ 1.        , -1.5       ],
               [ 0.        ,  0.02777778]])
        """
        if self.scale_factor is not None or self.projection is not None:
            return None
        k = int(intercept)
        M = np.eye(d)
        if self.divisors is not None:
            idx = np.arange(k, d)
            M[idx, idx] = 1.0 / np.asarray(self.divisors, dtype=np.float64)
        for j, src, c in self.shifts or ():
            M[src, j + k] += c
        return M

    def mapped_names(self, columns: list, intercept: bool) -> list:
        """R's text of each mapped column, from the raw design's column names: a centred main
        effect ``(age - 54)/36``, a divided one ``age/90``, an interaction the product of its
        parts' maps (``(age - 54)/36:(sexM - 0.5)``).

        Examples
        --------
        >>> pre = Preprocess(divisors=(36.0, 1.0), shifts=((0, 0, -1.5), (1, 0, -0.5)))
        >>> pre.mapped_names(["(Intercept)", "age", "sexM"], True)
        ['(Intercept)', '(age - 54)/36', '(sexM - 0.5)']
        """
        k = int(intercept)
        div = self.divisors or (1.0,) * (len(columns) - k)
        mid = {}
        for j, src, c in self.shifts or ():
            if k and src == 0:
                mid[j] = -c * div[j]

        def one(name: str, j: int) -> str:
            h, m = div[j], mid.get(j, 0.0)
            text = f"({name} - {m:.15g})" if m > 0 else f"({name} + {-m:.15g})" if m < 0 \
                else name
            return text if h == 1.0 else f"{text}/{h:.15g}"

        index = {name: j - k for j, name in enumerate(columns) if j >= k}
        out = list(columns[:k])
        for j, name in enumerate(columns[k:]):
            parts = name.split(":")
            if len(parts) > 1 and all(p in index for p in parts):
                out.append(":".join(one(p, index[p]) for p in parts))
            else:
                out.append(one(name, j))
        return out

    def apply(self, X: np.ndarray, intercept: bool) -> np.ndarray:
        """The final design for raw design rows ``X`` (intercept column first when present)."""
        if self.identity:
            return X
        from .._validation import is_sparse

        if is_sparse(X):
            return self._apply_sparse(cast(Any, X).tocsr(), int(intercept))
        k = int(intercept)
        cov = X[:, k:]
        if self.divisors is not None:
            cov = cov / np.asarray(self.divisors)
        if self.shifts:
            if np.shares_memory(cov, X):
                cov = cov.copy()
            for j, src, c in self.shifts:             # a fixed order: row-wise determinism
                cov[:, j] += c * X[:, src]
        if self.scale_factor is not None:
            cov = (cov - np.asarray(self.center)) / np.asarray(self.scale) * self.scale_factor
        if self.projection is not None:
            cov = np.einsum("ij,jk->ik", cov, np.asarray(self.projection, dtype=np.float64))
        if self.clip is not None:  # copies only when a row is clipped
            cov = clip_rows(cov, float(self.clip))[0]
        return np.hstack([X[:, :k], cov]) if k else np.ascontiguousarray(cov)

    def _apply_sparse(self, X, k: int):
        """:meth:`apply` for a CSR design: the divisors scale columns (sparse stays sparse), a
        projection gives a dense ``n × q`` design, clipping scales rows."""
        import scipy.sparse as sp

        from .._validation import clip_sparse_rows

        if self.scale_factor is not None:
            raise ValueError("do_scale centres the columns, which would make a sparse design "
                             "dense; rescale with public bounds (bounds=) or fit a dense design")
        if self.shifts:
            raise ValueError("a centred public map would make a sparse design dense; map it "
                             "with public_bounds(..., center=False)")
        cov = X[:, k:]
        if self.divisors is not None:
            cov = cov @ sp.diags(1.0 / np.asarray(self.divisors, dtype=np.float64))
        if self.projection is not None:
            dense = np.asarray(cov @ np.asarray(self.projection, dtype=np.float64))
            if self.clip is not None:
                dense = clip_rows(np.ascontiguousarray(dense), float(self.clip))[0]
            head = X[:, :k].toarray()
            return np.ascontiguousarray(np.hstack([head, dense])) if k else dense
        cov = sp.csr_matrix(cov)
        if self.clip is not None:
            cov = clip_sparse_rows(cov, float(self.clip))
        return sp.hstack([X[:, :k], cov], format="csr") if k else cov

    def check(self, p: int, intercept: bool) -> None:
        """``ValueError`` unless the map fits ``p`` covariates (shapes, finiteness, signs)."""
        for name in ("center", "scale"):
            v = getattr(self, name)
            if (v is None) != (self.scale_factor is None):
                raise ValueError(f"preprocess: {name} and scale_factor must be given together")
            if v is not None:
                arr = np.asarray(v, dtype=np.float64)
                if arr.shape != (p,) or not np.isfinite(arr).all():
                    raise ValueError(f"preprocess: {name} must hold {p} finite numbers")
                if name == "scale" and not (arr > 0).all():
                    raise ValueError("preprocess: scale must be positive")
        if self.divisors is not None:
            arr = np.asarray(self.divisors, dtype=np.float64)
            if arr.shape != (p,) or not np.isfinite(arr).all() or not (arr > 0).all():
                raise ValueError(f"preprocess: divisors must hold {p} positive finite numbers")
        if self.shifts is not None:
            d = p + int(intercept)
            for t in self.shifts:
                if (len(t) != 3 or not all(isinstance(i, int) for i in t[:2])
                        or not 0 <= t[0] < p or not 0 <= t[1] < d
                        or t[1] == t[0] + int(intercept) or not math.isfinite(t[2])):
                    raise ValueError("preprocess: shifts must be (covariate, raw column, finite "
                                     f"number) triples within {p} covariates and {d} columns")
        if self.scale_factor is not None and not (math.isfinite(self.scale_factor)
                                                  and self.scale_factor > 0):
            raise ValueError("preprocess: scale_factor must be a positive finite number")
        q = p
        if self.projection is not None:
            P = np.asarray(self.projection, dtype=np.float64)
            if P.ndim != 2 or P.shape[0] != p or not np.isfinite(P).all():
                raise ValueError(f"preprocess: projection must be a finite {p} x q matrix")
            q = P.shape[1]
        if self.clip is not None and not (math.isfinite(self.clip) and self.clip > 0):
            raise ValueError("preprocess: clip must be a positive finite number")
        if self.columns is not None and len(self.columns) != int(intercept) + q:
            raise ValueError(f"preprocess: columns must name {int(intercept) + q} columns")

    def to_dict(self) -> dict:
        def lists(v):
            if v is None:
                return None
            return [lists(x) if isinstance(x, (tuple, list)) else float(x) for x in v]

        return {"center": lists(self.center), "scale": lists(self.scale),
                "divisors": lists(self.divisors),
                "shifts": None if self.shifts is None else [[int(j), int(k), float(c)]
                                                            for j, k, c in self.shifts],
                "scale_factor": None if self.scale_factor is None else float(self.scale_factor),
                "projection": lists(self.projection),
                "clip": None if self.clip is None else float(self.clip),
                "columns": None if self.columns is None else list(self.columns)}

    @classmethod
    def from_dict(cls, d: dict) -> "Preprocess":
        if not isinstance(d, dict) or set(d) - {"center", "scale", "divisors", "shifts",
                                                "scale_factor", "projection", "clip",
                                                "columns"}:
            raise ValueError("preprocess: unknown or malformed fields")

        def numbers(v, depth):
            if v is None:
                return None
            if not isinstance(v, list):
                raise ValueError("preprocess: expected a list of numbers")
            if depth == 2:
                return tuple(numbers(r, 1) for r in v)
            if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v):
                raise ValueError("preprocess: expected a list of numbers")
            return tuple(float(x) for x in v)

        def number(v, name):
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"preprocess: {name} must be a number")
            return float(v)

        shifts = d.get("shifts")
        if shifts is not None:
            if not isinstance(shifts, list) or not all(
                    isinstance(t, list) and len(t) == 3
                    and all(isinstance(i, int) and not isinstance(i, bool) for i in t[:2])
                    and isinstance(t[2], (int, float)) and not isinstance(t[2], bool)
                    for t in shifts):
                raise ValueError("preprocess: shifts must be a list of [covariate, column, "
                                 "number] triples")
            shifts = tuple((t[0], t[1], float(t[2])) for t in shifts)
        cols = d.get("columns")
        if cols is not None and (not isinstance(cols, list) or
                                 not all(isinstance(c, str) for c in cols)):
            raise ValueError("preprocess: columns must be a list of strings")
        return cls(center=numbers(d.get("center"), 1), scale=numbers(d.get("scale"), 1),
                   divisors=numbers(d.get("divisors"), 1), shifts=shifts,
                   scale_factor=number(d.get("scale_factor"), "scale_factor"),
                   projection=numbers(d.get("projection"), 2),
                   clip=number(d.get("clip"), "clip"),
                   columns=None if cols is None else tuple(cols))


def standardise(cov: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """R's ``scale()`` then division by the largest row norm: ``(center, scale, factor)``.

    The standard deviation uses ``n - 1`` (R's ``sd``); a constant column gets scale 1 (R would
    produce NaN). ``factor = 1 / max_i ||z_i||`` after standardisation (R's ``scalef``).
    **Not private**: these are statistics of the rows.
    """
    n = cov.shape[0]
    center = cov.mean(axis=0)
    sd = cov.std(axis=0, ddof=1) if n > 1 else np.ones(cov.shape[1])
    sd = np.where(sd > 0, sd, 1.0)
    z = (cov - center) / sd
    norms = np.sqrt(np.einsum("ij,ij->i", z, z))
    top = norms.max() if norms.size else 0.0
    factor = 1.0 / top if top > 0 else 1.0
    return center, sd, float(factor)


def rp_suggest(n: int) -> int:
    """R's ``rp.suggest``: ``round(0.5 * 0.5**-2 * log(n)) = round(2 log n)`` (half to even).

    Examples
    --------
    >>> [rp_suggest(n) for n in (2, 10, 150, 1000, 10**6)]
    [1, 5, 10, 14, 28]
    """
    return int(np.round(2.0 * np.log(n)))
