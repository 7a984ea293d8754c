r"""Public bounds: a centred public map of the columns and the ``data_norm`` it implies.

The guarantee of every private fit needs a bound ``data_norm`` on the L2 norm of each covariate
row that does not come from the private rows. The honest source is what is known about the
columns before seeing them: an age lies in [18, 90], a BMI in [15, 50], a region is one of four
declared levels. :func:`public_bounds` turns such per-column bounds (and declared factor levels)
into

* a **centred public map**: every bounded numeric column ``x`` in ``[lo, hi]`` becomes
  ``(x - m) / h`` with the public midpoint ``m = (lo + hi) / 2`` and half-range
  ``h = (hi - lo) / 2``, so it lies in ``[-1, 1]`` and is centred on the middle of its range.
  Centring matters: an uncentred column (``x / max(|lo|, |hi|)``, all of one sign) is nearly
  collinear with the intercept, so the information matrix is badly conditioned, the privacy
  noise is amplified in the coefficients and the private information release needed for
  intervals is too noisy to use. Factors enter by their treatment dummies.
* the **data_norm** of a design built from those columns: after the map every term of the
  formula contributes at most 1 to a row's squared norm — a numeric column at most 1, a factor
  exactly one dummy of 1 (or none), an interaction the product of its parts — so the worst case
  is ``data_norm = sqrt(number of terms)`` (``norm="max"``, the default: no row is ever
  clipped). ``norm="rms"`` is the documented tighter choice: the root mean square row norm if
  every column were uniform over its public range and level set (a rule of public quantities
  only); rows above it are clipped onto it (``clip=True`` is implied), which trades a small bias
  for less noise (``benchmarks/bench_public_map.py`` measures the trade-off).

The map is **affine in the design columns**: with ``X`` the raw design (intercept column first)
the fitted rows are ``X M`` for a public matrix ``M``. An interaction of centred columns expands
into its lower-order columns, ``(a - m_a)(b - m_b) = ab - m_b a - m_a b + m_a m_b``, so a column
is centred only when every column it expands into is in the design (a hierarchical formula such
as ``a * b``, or ``a + b`` with an intercept); otherwise it is only divided by its largest
magnitude, as is every column of a sparse design (centring would make it dense). Because ``M``
is invertible, coefficients fitted on the mapped rows are ``M``-transformed back exactly into
coefficients per unit of the original columns, and so are their covariance, intervals and odds
ratios (:mod:`privatelr.inference`).

Pass the result to :func:`privatelr.dplr` as ``bounds=``: the map becomes part of the model's
public map (stored in ``model.spec.preprocess``, applied again by ``predict``, saved files, the
Dask backend and the command line), the declared levels are used, and ``data_norm`` defaults to
the derived value. A row that exceeds a declared bound anyway is clipped with ``clip=True`` (or
refused), never silently trusted.

Examples
--------
>>> import pandas as pd
>>> from privatelr import dplr, public_bounds
>>> pb = public_bounds({"age": (18, 90), "bmi": (15, 50)}, levels={"sex": ["F", "M"]})
>>> df = pd.DataFrame({"age": [30, 64, 47, 25] * 10, "bmi": [22.0, 31.5, 27.1, 19.8] * 10,
...                    "sex": ["F", "M", "M", "F"] * 10, "y": [0, 1, 1, 0] * 10})
>>> m = dplr("y ~ age + bmi + sex", df, bounds=pb, eps=1, random_state=0)
>>> round(m.data_norm, 6), m.spec.preprocess.divisors
(1.732051, (36.0, 17.5, 1.0))
>>> pb.mapped_name("age")
'(age - 54)/36'
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from ._validation import check_real

__all__ = ["PublicBounds", "PublicMap", "public_bounds", "NORM_RULES"]

#: The rules for ``data_norm`` (module docstring).
NORM_RULES = ("max", "rms")
#: A column with more centred numeric parts than this is only divided (2^k expansion terms).
_MAX_CENTRED_PARTS = 8


def _number(x: float) -> str:
    """A public constant as R would print it (15 significant digits, no trailing zeros)."""
    return f"{x:.15g}"


@dataclass(frozen=True)
class PublicMap:
    """The public map of a design's covariate columns (:meth:`PublicBounds.design_map`).

    Attributes
    ----------
    divisors : tuple of float
        Per covariate column, the product of its numeric parts' half-ranges (centred) or
        magnitudes (not centred).
    shifts : tuple of (int, int, float)
        ``(j, k, c)``: covariate column ``j`` of the mapped design gains ``c`` times raw design
        column ``k`` (the intercept is raw column 0): the centring's lower-order terms.
    data_norm : float
        The public bound on the mapped covariate rows.
    clip : bool
        Rows above ``data_norm`` are expected and clipped (``norm="rms"``).
    centred : tuple of str
        The data columns that were centred.
    """

    divisors: tuple
    shifts: tuple
    data_norm: float
    clip: bool = False
    centred: tuple = ()


@dataclass(frozen=True)
class PublicBounds:
    """Per-column public bounds and declared levels (see :func:`public_bounds`).

    Attributes
    ----------
    ranges : dict
        ``{column: (lo, hi)}`` for numeric columns.
    levels : dict
        ``{column: [level, ...]}`` for factor columns (the first level is the reference).
    center : bool
        Centre bounded columns at their public midpoints (see :func:`public_bounds`).
    norm : {"max", "rms"}
        The rule for ``data_norm``: the worst case, or the uniform root mean square with
        clipping.
    """

    ranges: dict
    levels: dict = field(default_factory=dict)
    center: bool = True
    norm: str = "max"

    def magnitude(self, column: str) -> float:
        """``M = max(|lo|, |hi|)`` of a bounded column (its divisor when not centred)."""
        lo, hi = self.ranges[column]
        return max(abs(lo), abs(hi))

    def midpoint(self, column: str) -> float:
        lo, hi = self.ranges[column]
        return 0.5 * (lo + hi)

    def half_range(self, column: str) -> float:
        lo, hi = self.ranges[column]
        return 0.5 * (hi - lo)

    def mapped_name(self, column: str, centred: bool = True) -> str:
        """R's text of the mapped column: ``(age - 54)/36``, or ``age/90`` when not centred."""
        name = column if column.isidentifier() else f"`{column}`"
        if centred and self.half_range(column) > 0:
            m = self.midpoint(column)
            shift = f"{name} - {_number(m)}" if m >= 0 else f"{name} + {_number(-m)}"
            return f"({shift})/{_number(self.half_range(column))}"
        return f"{name}/{_number(self.magnitude(column))}"

    def design_map(self, spec, *, center: bool | None = None) -> PublicMap:
        """The :class:`PublicMap` of a design spec's covariate columns.

        Every numeric part of every design column must be a bounded data column, a factor, or
        a logical; anything else (``log(x)``, ``I(x^2)``) has no bound derived here and is an
        error naming it (compute it as a column and bound that column). ``center`` overrides
        :attr:`center` (a sparse design is never centred).
        """
        from .design.algebra import FC_PART

        center = self.center if center is None else center
        atoms = {a["id"]: a for a in spec.atoms}
        k = int(spec.intercept)
        raw = list(spec.formulaic_columns)
        index = {name: i for i, name in enumerate(raw)}
        parsed: list = []
        for fc in raw:
            if fc == "Intercept":
                parsed.append(None)
                continue
            parts = []
            for part in fc.split(":"):
                m = FC_PART.match(part)
                assert m is not None                # every design column's part matches
                atom = atoms[m.group(1)]
                numeric = atom["kind"] != "factor"           # numeric, or poly()'s columns
                if numeric:
                    name = atom["name"].strip("`")
                    if name not in self.ranges:
                        raise ValueError(
                            f"bounds: the term {atom['name']!r} has no public bound; give one "
                            f"for column {name!r} (bounds={{{name!r}: (lo, hi)}}), or compute "
                            "the transformed column in the data frame and bound that column")
                    parts.append((part, atom["id"], name))
                else:
                    parts.append((part, atom["id"], None))
            parsed.append(parts)

        def without(parts, drop) -> str:
            rest = [p[0] for p in parts if p[0] not in drop]
            return ":".join(rest) if rest else "Intercept"

        def centre(part, aid, name) -> tuple[float, float, float]:
            """(midpoint, divisor, mean square under uniform columns) of one part."""
            if name is None:                         # a factor level's indicator
                k_levels = max(len(atoms[aid].get("levels") or [1, 1]), 1)
                return 1.0 / k_levels, 1.0, (k_levels - 1.0) / k_levels ** 2
            lo, hi = self.ranges[name]
            if self.half_range(name) > 0:
                return self.midpoint(name), self.half_range(name), 1.0 / 3.0
            mag = self.magnitude(name)
            return 0.0, mag, (lo * lo + lo * hi + hi * hi) / (3.0 * mag * mag)

        # a part is centred when every column holding its atom has the lower-order column
        # without it (so the centring's expansion stays inside the design)
        centred = set()
        if center:
            for aid in {p[1] for parts in parsed if parts for p in parts}:
                holding = [parts for parts in parsed if parts and any(p[1] == aid for p in parts)]
                if all(without(parts, {p[0] for p in parts if p[1] == aid}) in index
                       for parts in holding):
                    centred.add(aid)

        divisors, shifts, terms, mean_square = [], [], set(), 0.0
        for j, parts in enumerate(parsed):
            if parts is None:
                continue
            divisor, e2, mids = 1.0, 1.0, {}
            for part, aid, name in parts:
                mid, div, sq = centre(part, aid, name)
                if aid in centred and mid != 0.0:
                    mids[part] = mid
                    divisor *= div
                    e2 *= sq
                elif name is None:
                    e2 *= 1.0 / max(len(atoms[aid].get("levels") or [1, 1]), 1)
                else:
                    lo, hi = self.ranges[name]
                    mag = self.magnitude(name)
                    divisor *= mag
                    e2 *= (lo * lo + lo * hi + hi * hi) / (3.0 * mag * mag)
            if len(mids) > _MAX_CENTRED_PARTS:
                raise ValueError(f"bounds: the column {spec.design_columns[j]!r} multiplies more "
                                 f"than {_MAX_CENTRED_PARTS} bounded columns; use "
                                 "public_bounds(..., center=False)")
            divisors.append(divisor)
            mean_square += e2
            terms.add(tuple(sorted({p[1] for p in parts})))
            for size in range(1, len(mids) + 1):
                for drop in itertools.combinations(mids, size):
                    src = index[without(parts, set(drop))]
                    c = math.prod(-mids[p] for p in drop) / divisor
                    shifts.append((j - k, src, c))
        if self.norm == "rms":
            data_norm = math.sqrt(mean_square) if mean_square > 0 else 1.0
        else:
            data_norm = math.sqrt(len(terms)) if terms else 1.0
        names = tuple(sorted({atoms[a]["name"].strip("`") for a in centred}))
        return PublicMap(divisors=tuple(divisors), shifts=tuple(shifts), data_norm=data_norm,
                         clip=self.norm == "rms", centred=names)


def public_bounds(ranges: dict, *, levels: dict | None = None, center: bool = True,
                  norm: str = "max") -> PublicBounds:
    """Public per-column bounds: ``ranges={column: (lo, hi)}`` for numeric columns and
    ``levels={column: [level, ...]}`` for factors, turned into a public map and ``data_norm``.

    Pass the result to :func:`privatelr.dplr` as ``bounds=``. Every bounded column ``x`` in
    ``[lo, hi]`` is fitted as ``(x - midpoint) / half-range``, which lies in ``[-1, 1]``
    (centring keeps it from being collinear with the intercept); factors enter by their
    declared levels' dummies. Each term then adds at most 1 to a row's squared norm, so
    ``data_norm`` defaults to ``sqrt(number of terms)`` (``norm="max"``). The map is stored in
    the model and applied again by ``predict`` and saved files, and results are reported per
    unit of the original columns. Details: :mod:`privatelr.bounds`.

    The bounds must be known without looking at the private rows (a unit's physical range, a
    questionnaire's scale, a codebook's definitions), not computed from them: a bound computed
    from the rows would make the map, and so the released model, depend on every row.

    Parameters
    ----------
    ranges : dict
        ``{column: (lo, hi)}`` with ``lo <= hi``, not both 0.
    levels : dict, optional
        ``{column: [level, ...]}``: the declared levels of factor columns, reference first.
    center : bool, default True
        Map each bounded column to ``(x - midpoint) / half-range``; False divides by the
        largest magnitude only (the map before version 0.2).
    norm : {"max", "rms"}, default "max"
        ``"max"``: ``data_norm`` is the worst case ``sqrt(number of terms)``, no row clipped.
        ``"rms"``: the root mean square row norm under uniform columns, rows above it clipped.

    Returns
    -------
    PublicBounds
        The declared bounds and levels, ready for ``dplr(..., bounds=)``.

    Examples
    --------
    >>> pb = public_bounds({"age": (18, 90)}, levels={"smoker": ["no", "yes"]}, norm="rms")
    >>> pb.norm, pb.midpoint("age"), pb.half_range("age")
    ('rms', 54.0, 36.0)
    """
    if not isinstance(ranges, dict) or not ranges:
        raise TypeError("ranges must be a non-empty dict {column: (lo, hi)}")
    clean = {}
    for col, rng in ranges.items():
        if not isinstance(rng, (tuple, list)) or len(rng) != 2:
            raise TypeError(f"ranges[{col!r}] must be a pair (lo, hi), got {rng!r}")
        lo = check_real(f"ranges[{col!r}][0]", rng[0])
        hi = check_real(f"ranges[{col!r}][1]", rng[1])
        if not lo <= hi or max(abs(lo), abs(hi)) == 0.0:
            raise ValueError(f"ranges[{col!r}] = ({lo}, {hi}) must have lo <= hi and not be "
                             "(0, 0)")
        clean[str(col)] = (lo, hi)
    if levels is not None and not isinstance(levels, dict):
        raise TypeError(f"levels must be a dict {{column: [level, ...]}}, got "
                        f"{type(levels).__name__}")
    if not isinstance(center, bool):
        raise TypeError(f"center must be True or False, got {center!r}")
    if norm not in NORM_RULES:
        raise ValueError(f"norm must be one of {NORM_RULES}, got {norm!r}")
    return PublicBounds(ranges=clean, levels=dict(levels or {}), center=center, norm=norm)
