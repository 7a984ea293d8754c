r"""Public bounds: the way to choose ``data_norm`` without looking at the data.

The guarantee of every private fit needs a bound ``data_norm`` on the L2 norm of each covariate
row that does not come from the private rows. The honest source is what is known about the
columns before seeing them: an age lies in [18, 100], a BMI in [10, 60], a sex is one of two
declared levels. :func:`public_bounds` turns such per-column bounds (and declared factor
levels) into

* a **public rescaling**: every bounded numeric column is divided by its largest possible
  magnitude ``M = max(|lo|, |hi|)``, so it lies in ``[-1, 1]``;
* the **data_norm** of a design built from those columns: after the rescaling every term of
  the formula contributes at most 1 to a row's squared norm — a numeric column at most 1, a
  factor exactly one dummy of 1 (treatment contrasts), an interaction the product of its parts —
  so ``data_norm = sqrt(number of terms)``.

Pass the result to :func:`privatelr.dplr` as ``bounds=``: the rescaling becomes part of the
model's public map (stored in ``model.spec.preprocess`` and applied again by ``predict``), the
declared levels are used, and ``data_norm`` defaults to the derived value. A row that exceeds a
declared bound anyway is clipped with ``clip=True`` (or refused), never silently trusted.

Examples
--------
>>> import pandas as pd
>>> from privatelr import dplr, public_bounds
>>> pb = public_bounds({"age": (18, 100), "bmi": (10, 60)}, levels={"sex": ["F", "M"]})
>>> df = pd.DataFrame({"age": [30, 64, 47, 25] * 10, "bmi": [22.0, 31.5, 27.1, 19.8] * 10,
...                    "sex": ["F", "M", "M", "F"] * 10, "y": [0, 1, 1, 0] * 10})
>>> m = dplr("y ~ age + bmi + sex", df, bounds=pb, eps=1, random_state=0)
>>> round(m.data_norm, 6), m.spec.preprocess.divisors
(1.732051, (100.0, 60.0, 1.0))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ._validation import check_real

__all__ = ["PublicBounds", "public_bounds"]


@dataclass(frozen=True)
class PublicBounds:
    """Per-column public bounds and declared levels (see :func:`public_bounds`).

    Attributes
    ----------
    ranges : dict
        ``{column: (lo, hi)}`` for numeric columns.
    levels : dict
        ``{column: [level, ...]}`` for factor columns (the first level is the reference).
    """

    ranges: dict
    levels: dict = field(default_factory=dict)

    def magnitude(self, column: str) -> float:
        """``M = max(|lo|, |hi|)`` of a bounded column (its public divisor)."""
        lo, hi = self.ranges[column]
        return max(abs(lo), abs(hi))

    def design_map(self, spec) -> tuple[tuple, float]:
        """``(divisors, data_norm)`` for the covariate columns of a design spec.

        Every numeric part of every design column must be a bounded data column, a factor, or
        a logical; anything else (``log(x)``, ``I(x^2)``) has no bound derived here and is an
        error naming it (compute it as a column and bound that column).
        """
        atoms = {a["id"]: a for a in spec.atoms}
        from .design.algebra import FC_PART

        divisors, terms = [], set()
        for fc in spec.formulaic_columns:
            if fc == "Intercept":
                continue
            divisor, parts = 1.0, []
            for part in fc.split(":"):
                atom = atoms[FC_PART.match(part).group(1)]
                parts.append(atom["id"])
                if atom["kind"] != "factor":           # numeric, or poly()'s columns
                    name = atom["name"].strip("`")
                    if name not in self.ranges:
                        raise ValueError(
                            f"bounds: the term {atom['name']!r} has no public bound; give one "
                            f"for column {name!r} (bounds={{{name!r}: (lo, hi)}}), or compute "
                            "the transformed column in the data frame and bound that column")
                    divisor *= self.magnitude(name)
            divisors.append(divisor)
            terms.add(tuple(sorted(parts)))
        return tuple(divisors), math.sqrt(len(terms)) if terms else 1.0


def public_bounds(ranges: dict, *, levels: dict | None = None) -> PublicBounds:
    """Public per-column bounds: ``ranges={column: (lo, hi)}`` for numeric columns and
    ``levels={column: [level, ...]}`` for factors (module docstring).

    The bounds must be known without looking at the private rows (a unit's physical range, a
    questionnaire's scale, a registry's definitions), not computed from them: a bound computed
    from the rows would make the rescaling, and so the released model, depend on every row.
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
    return PublicBounds(ranges=clean, levels=dict(levels or {}))
