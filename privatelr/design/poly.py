r"""R's ``poly(x, degree)`` as a model term: several design columns from one call.

``poly(x, k)`` gives the orthogonal polynomials of degrees 1..k in ``x`` (R's default), named as
R's ``model.matrix`` names them: ``poly(x, 2)1``, ``poly(x, 2)2``. They are defined by R's
three-term recurrence (``predict.poly``)::

    P0 = 1,  P1 = x - alpha[1],
    P(i+1) = (x - alpha[i+1]) P(i) - (norm2[i+2] / norm2[i+1]) P(i-1),
    column j = P(j) / sqrt(norm2[j+2])                                   (j = 1..k)

with ``alpha[j] = sum(x P(j-1)^2) / sum(P(j-1)^2)`` and ``norm2 = (1, sum(P0^2), ...,
sum(Pk^2))`` computed from the data when fitted (Stieltjes' procedure: the monic polynomials
orthogonal over the fitted values of ``x``, which is what R's QR of the Vandermonde matrix
gives). The coefficients come from the rows, so they are learned only by non-private builds and
stored in the spec (:attr:`DesignSpec.params`), and scoring new data reuses them, as R's
``makepredictcall`` does. ``poly(x, k, raw = TRUE)`` is the plain powers ``x, x^2, ..., x^k``:
nothing is learned, so private fits may use it.

``poly`` is a term of its own (``y ~ poly(x, 2) + z``, ``poly(x, 2):z``); inside another call
it is refused. Only one variable is supported (R's ``poly(x, z, degree = 2)`` is not).

Examples
--------
>>> import numpy as np
>>> alpha, norm2 = poly_fit(np.array([1.0, 2.0, 3.0, 4.0]), 2)
>>> alpha, norm2
([2.5, 2.5], [1.0, 4.0, 5.0, 4.0])
>>> poly_basis(np.array([1.0, 4.0]), 2, alpha, norm2).round(4).tolist()
[[-0.6708, 0.5], [0.6708, 0.5]]
"""

from __future__ import annotations

import math

import numpy as np

from .rsyntax import Call, Node, Paren, deparse
from .terms import Kind, LevelBook, bind_arguments, infer, literal_values, refused_message

__all__ = ["is_poly", "poly_options", "stored_poly_problem",
           "poly_fit", "poly_basis", "poly_matrix", "poly_atom",
           "check_learnable", "column_suffixes", "poly_what", "poly_fix", "MAX_DEGREE"]

#: Highest degree ``poly`` accepts.
MAX_DEGREE = 20

poly_what = "the coefficients of poly()'s orthogonal polynomials (R's alpha and norm2)"
poly_fix = ("poly(x, k, raw = TRUE) (raw powers: nothing is learned; choose data_norm from public "
            "bounds on x), or compute the powers as data columns and declare their public bounds "
            "(privatelr.public_bounds, or the bounds= argument of dplr)")


def is_poly(node: Node) -> bool:
    """Whether ``node`` (parentheses aside) is a call of ``poly``."""
    node = _strip(node)
    return isinstance(node, Call) and node.fn == "poly"


def poly_options(call: Call) -> tuple[Node, int, bool]:
    """``(x, degree, raw)`` of a ``poly`` call (R's argument matching; literals only)."""
    call = _strip(call)
    b = bind_arguments(call)
    degree = 1
    if "degree" in b:
        v = literal_values(b["degree"])
        if len(v) != 1 or isinstance(v[0], (bool, str)) or not float(v[0]).is_integer() or \
                not 1 <= v[0] <= MAX_DEGREE:
            raise ValueError(f"formula: {deparse(call)}: degree must be a whole number from 1 "
                             f"to {MAX_DEGREE}")
        degree = int(v[0])
    raw = False
    if "raw" in b:
        v = literal_values(b["raw"])
        if len(v) != 1 or not isinstance(v[0], bool):
            raise ValueError(f"formula: {deparse(call)}: raw must be TRUE or FALSE")
        raw = v[0]
    return b["x"], degree, raw


def _strip(node):
    while isinstance(node, Paren):
        node = node.body
    return node


def poly_fit(x: np.ndarray, degree: int) -> tuple[list, list]:
    """R's ``alpha`` (length ``degree``) and ``norm2`` (length ``degree + 2``) for ``x``."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError("formula: poly(): missing or infinite values are not allowed (R: "
                         "'missing values are not allowed in poly')")
    if degree >= np.unique(x).size:
        raise ValueError(f"formula: poly(): 'degree' ({degree}) must be less than the number of "
                         f"unique points ({np.unique(x).size})")
    xbar = float(x.mean())
    xc = x - xbar
    alpha, norm2 = [], [1.0]
    prev, cur = np.zeros_like(xc), np.ones_like(xc)
    for j in range(degree + 1):
        with np.errstate(all="ignore"):
            n2 = float(np.dot(cur, cur))
            a = float(np.dot(xc, cur * cur)) / n2 if n2 > 0 else math.nan
        if not (math.isfinite(n2) and n2 > 0 and (j == degree or math.isfinite(a))):
            raise ValueError(f"formula: poly(): the orthogonal polynomials of degree {j} "
                             f"{'vanish' if n2 == 0 else 'overflow'} at the scale of x (about "
                             f"{float(np.abs(xc).max()):.3g} from its mean); rescale it, e.g. "
                             "poly(I(x / 1000), k)")
        norm2.append(n2)
        if j == degree:
            break
        alpha.append(a + xbar)
        ratio = n2 / norm2[-2] if j > 0 else 0.0
        with np.errstate(all="ignore"):
            prev, cur = cur, (xc - a) * cur - ratio * prev
    return alpha, norm2


def poly_basis(x: np.ndarray, degree: int, alpha, norm2) -> np.ndarray:
    """The ``(n, degree)`` orthogonal-polynomial columns of ``x`` from stored coefficients (R's
    ``predict.poly``: the three-term recurrence)."""
    x = np.asarray(x, dtype=np.float64)
    Z = np.ones((x.size, degree + 1))
    Z[:, 1] = x - alpha[0]
    for i in range(1, degree):
        Z[:, i + 1] = (x - alpha[i]) * Z[:, i] - (norm2[i + 1] / norm2[i]) * Z[:, i - 1]
    return Z[:, 1:] / np.sqrt(np.asarray(norm2[2:degree + 2], dtype=np.float64))


def poly_matrix(call: Call, x: np.ndarray, book: LevelBook) -> np.ndarray:
    """The columns of ``call`` for values ``x`` (NaN rows stay NaN): raw powers, or the
    orthogonal basis from the book's stored coefficients (learned from ``x`` when the book may
    learn; refused otherwise, naming the fix)."""
    _, degree, raw = poly_options(call)
    x = np.asarray(x, dtype=np.float64)
    if raw:
        with np.errstate(all="ignore"):
            return np.column_stack([x ** j for j in range(1, degree + 1)])
    key = deparse(_strip(call))
    stored = book.params.get(key)
    if stored is None:
        if not book.learn:
            raise ValueError(refused_message(key, poly_what, book.why, poly_fix, book.hint))
        alpha, norm2 = poly_fit(x, degree)
        book.params[key] = alpha + norm2
        book.learned_any = True
    else:
        stored = [float(v) for v in stored]
        if len(stored) != 2 * degree + 2 or not all(v > 0 for v in stored[degree:]):
            raise ValueError(f"formula: {key}: the stored coefficients do not fit degree {degree}")
        alpha, norm2 = stored[:degree], stored[degree:]
    out = np.full((x.size, degree), np.nan)
    ok = ~np.isnan(x)
    with np.errstate(all="ignore"):
        out[ok] = poly_basis(x[ok], degree, alpha, norm2)
    return out


def stored_poly_problem(call: Call, values: list) -> str | None:
    """What is wrong with ``values`` as the stored ``alpha + norm2`` of ``call``, or None:
    ``2 degree + 2`` finite numbers, the ``norm2`` part above 0 and starting with R's 1 (an
    orthogonal ``poly`` only; ``raw = TRUE`` learns nothing), and polynomials that stay finite
    around the training data: each ``alpha`` is a weighted mean of the fitted ``x``, so the
    basis is evaluated across the span of the alphas, widened by that span (or 1) on each side,
    where a fitted model's columns are of order one; coefficients that overflow there would
    predict NaN for every row."""
    _, degree, raw = poly_options(call)
    if raw:
        return "poly(..., raw = TRUE) learns nothing"
    if len(values) != 2 * degree + 2:
        return f"degree {degree} needs {2 * degree + 2} numbers (alpha, then norm2)"
    if not all(np.isfinite(values)) or not all(v > 0 for v in values[degree:]) or \
            values[degree] != 1.0:
        return "alpha and norm2 must be finite, norm2 above 0 and starting with 1"
    alpha, norm2 = values[:degree], values[degree:]
    with np.errstate(all="ignore"):
        lo, hi = min(alpha), max(alpha)
        pad = max(hi - lo, 1.0)
        grid = np.linspace(lo - pad, hi + pad, 65)
        finite = np.isfinite(grid).all() and np.isfinite(poly_basis(grid, degree, alpha,
                                                                    norm2)).all()
    if not finite:
        return "the polynomials overflow around the fitted data (alpha or norm2 out of scale)"
    return None


def check_learnable(call: Call, book: LevelBook) -> None:
    """``ValueError`` naming the fix when ``call`` needs coefficients the book neither stores
    nor may learn."""
    _, degree, raw = poly_options(call)
    key = deparse(_strip(call))
    if not raw and key not in book.params and not book.learn:
        raise ValueError(refused_message(key, poly_what, book.why, poly_fix, book.hint))


def column_suffixes(call: Call) -> list:
    """R's suffixes of the columns: ``"1"``, ``"2"``, ..."""
    return [str(j) for j in range(1, poly_options(call)[1] + 1)]



def poly_atom(node: Call, kinds: dict, book: LevelBook) -> dict:
    """The spec's record of a ``poly`` term, ``{"kind": "matrix", "levels": suffixes}``, after
    checking its variable is numeric and its coefficients are stored or may be learned."""
    xnode, _, _ = poly_options(node)
    k: Kind = infer(xnode, kinds, book)
    if k.kind not in ("num", "lgl"):
        raise ValueError(f"formula: {deparse(_strip(node))}: poly() needs numbers")
    check_learnable(node, book)
    return {"kind": "matrix", "levels": column_suffixes(node)}
