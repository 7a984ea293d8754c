"""Formulas as data: from an R formula and declarations to design rows (the *schema* step).

* :mod:`~privatelr.design.rsyntax` — R formula text → a tree (no text is ever run);
* :mod:`~privatelr.design.values` — data-frame columns as R vectors, by dtype;
* :mod:`~privatelr.design.terms` — the whitelisted interpreter (functions, operators, levels);
* :mod:`~privatelr.design.algebra` — R's term algebra, R's coding of the columns and their names;
* :mod:`~privatelr.design.rmath` — R's ``round`` and ``signif``;
* :mod:`~privatelr.design.materialize` — the design's values, dense or sparse;
* :mod:`~privatelr.design.coding` — response and factor coding (declared, or learned when
  non-private);
* :mod:`~privatelr.design.build` — :func:`make_spec` / :func:`build_design` (the schema);
* :mod:`~privatelr.design.spec` — the frozen :class:`DesignSpec` and :meth:`DesignSpec.rows`;
* :mod:`~privatelr.design.preprocess` — the public scale → project → clip map.
"""

from .build import Design, Scaled, as_frame, build_design, formula_text, make_spec, scaled
from .preprocess import Preprocess, clip_rows, rp_suggest, standardise
from .rsyntax import parse, r_number
from .spec import DesignSpec, Rows

parse_formula = parse

__all__ = ["DesignSpec", "Design", "Rows", "Preprocess", "build_design", "make_spec",
           "as_frame", "formula_text", "parse", "parse_formula", "r_number", "rp_suggest",
           "scaled", "Scaled", "standardise", "clip_rows"]
