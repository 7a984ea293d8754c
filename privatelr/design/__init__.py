"""Formulas as data: from an R formula and declarations to design rows (the *schema* step).

* :mod:`~privatelr.design.rsyntax` — R formula text → a tree (no text is ever run);
* :mod:`~privatelr.design.values` — data-frame columns as R vectors, by dtype;
* :mod:`~privatelr.design.terms` — the whitelisted interpreter (functions, operators, levels);
* :mod:`~privatelr.design.spec` — the frozen :class:`DesignSpec` (declared levels, response
  coding, columns) and :meth:`DesignSpec.rows`, the one way data becomes design rows;
* :mod:`~privatelr.design.preprocess` — the public scale → project → clip map.
"""

from .preprocess import Preprocess, Scaled, clip_rows, rp_suggest, scaled, standardise
from .rsyntax import parse, r_number
from .spec import Design, DesignSpec, Rows, as_frame, build_design, formula_text, make_spec

parse_formula = parse

__all__ = ["DesignSpec", "Design", "Rows", "Preprocess", "build_design", "make_spec",
           "as_frame", "formula_text", "parse", "parse_formula", "r_number", "rp_suggest",
           "scaled", "Scaled", "standardise", "clip_rows"]
