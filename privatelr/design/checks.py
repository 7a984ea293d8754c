"""Structural checks of a design-spec dict read from outside (a saved model file).

:func:`check_spec_dict` checks every field's type, shape and size before a
:class:`~privatelr.design.DesignSpec` is built from it; the spec then re-derives its term
structure from its formula and re-types every term with the interpreter
(``DesignSpec.from_dict``), so a loaded spec holds nothing the fitting path would not make.
:func:`check_params` checks the numbers a non-private build learned from the rows (``cut(x, k)``'s
breaks, ``scale(x)``'s centre and scale, ``poly(x, k)``'s recurrence coefficients) against the
calls of the formula, so that a file edited and re-checksummed cannot make ``predict`` divide by
a zero scale or search unsorted breaks. Every failure is a ``ValueError`` naming the field.
"""

from __future__ import annotations

import math
from typing import NoReturn

from .poly import is_poly, stored_poly_problem
from .rsyntax import MAX_LENGTH, MAX_STORED_LENGTH, Call, deparse, walk
from .terms import stored_params_problem
from .values import KINDS

__all__ = ["check_spec_dict", "check_params"]

_FIELDS = {"formula", "formula_r", "response", "response_source", "response_kind",
           "response_levels", "labels", "variables", "variable_kinds", "levels", "atoms", "rhs",
           "intercept", "formulaic_columns", "design_columns", "learned", "preprocess",
           "version", "params", "offsets", "sparse"}
_MAX_ITEMS = 1_000_000
#: the longest ``rhs``: each atom's id (``_a9999_``) and a ``poly`` atom's columns written out
_MAX_RHS = 32 * MAX_LENGTH


def _fail(msg: str) -> NoReturn:
    raise ValueError(f"design: {msg}")


def _str(d: dict, key: str, limit: int = MAX_STORED_LENGTH) -> str:
    v = d.get(key)
    if not isinstance(v, str) or len(v) > limit:
        _fail(f"field {key!r} must be a string (at most {limit} characters)")
    return v


def _str_list(v, key: str, *, unique: bool = False) -> list:
    if not isinstance(v, list) or len(v) > _MAX_ITEMS or \
            not all(isinstance(x, str) and len(x) <= MAX_STORED_LENGTH for x in v):
        _fail(f"field {key!r} must be a list of strings")
    if unique and len(set(v)) != len(v):
        _fail(f"field {key!r} must not repeat a name")
    return v


def _scalar(x) -> bool:
    if isinstance(x, bool) or isinstance(x, str):
        return True
    return isinstance(x, (int, float)) and math.isfinite(x)


def check_spec_dict(d) -> None:
    """``ValueError`` unless ``d`` has the fields of a version-2 spec with sane types."""
    if not isinstance(d, dict):
        _fail(f"must be an object, got {type(d).__name__}")
    unknown = set(d) - _FIELDS
    if unknown:
        _fail(f"unknown field(s) {sorted(unknown)[:5]}")
    missing = _FIELDS - set(d) - {"learned", "preprocess", "version", "params", "offsets",
                                  "sparse"}
    if missing:
        _fail(f"missing field(s) {sorted(missing)}")
    if d.get("version", 2) != 2:
        _fail(f"version {d.get('version')!r} is not 2 (older files held code, which this "
              "privatelr no longer runs: refit and save again)")
    _str(d, "formula", MAX_LENGTH)
    for key in ("formula_r", "response", "response_source"):
        _str(d, key)
    _str(d, "rhs", _MAX_RHS)
    if d["response_kind"] not in ("logical", "numeric", "factor"):
        _fail("response_kind must be 'logical', 'numeric' or 'factor'")
    for key in ("response_levels", "labels"):
        v = d[key]
        if not isinstance(v, list) or len(v) > _MAX_ITEMS or not all(_scalar(x) for x in v):
            _fail(f"field {key!r} must be a list of strings, numbers or booleans")
    if len(d["labels"]) != 2:
        _fail("labels must hold two class labels")
    if not d["response_levels"]:
        _fail("response_levels is empty")
    variables = _str_list(d["variables"], "variables", unique=True)
    kinds = d["variable_kinds"]
    if not isinstance(kinds, dict) or not set(kinds) >= set(variables) or \
            not all(k in KINDS for k in kinds.values()):
        _fail("variable_kinds must give one of num/lgl/chr/fct for every variable")
    levels = d["levels"]
    if not isinstance(levels, dict) or len(levels) > _MAX_ITEMS:
        _fail("levels must be an object of level lists")
    for key, lv in levels.items():
        _str_list(lv, f"levels[{key!r}]", unique=True)
    atoms = d["atoms"]
    if not isinstance(atoms, list) or len(atoms) > _MAX_ITEMS:
        _fail("atoms must be a list")
    for i, atom in enumerate(atoms):
        if not isinstance(atom, dict) or set(atom) != {"id", "name", "kind", "levels"}:
            _fail(f"atom {i + 1} must have exactly the fields id, name, kind, levels")
        if not isinstance(atom["id"], str) or atom["id"] != f"_a{i}_":
            _fail(f"atom {i + 1} must have id '_a{i}_'")
        _str(atom, "name")
        if atom["kind"] in ("factor", "matrix"):
            _str_list(atom["levels"], f"atom {i + 1} levels", unique=True)
        elif atom["kind"] != "numeric" or atom["levels"] is not None:
            _fail(f"atom {i + 1}: kind must be 'numeric' (no levels), 'factor' or 'matrix'")
    params = d.get("params", {})
    if not isinstance(params, dict) or len(params) > _MAX_ITEMS:
        _fail("params must be an object of number lists")
    for key, vals in params.items():
        if not isinstance(key, str) or len(key) > MAX_STORED_LENGTH or \
                not isinstance(vals, list) or \
                len(vals) > _MAX_ITEMS or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    for v in vals):
            _fail(f"params[{key!r}] must be a list of finite numbers")
    if "offsets" in d:
        _str_list(d["offsets"], "offsets")
    if not isinstance(d.get("sparse", False), bool):
        _fail("field 'sparse' must be true or false")
    for key in ("intercept", "learned"):
        if key in d and not isinstance(d[key], bool):
            _fail(f"field {key!r} must be true or false")
    fc = _str_list(d["formulaic_columns"], "formulaic_columns", unique=True)
    dc = _str_list(d["design_columns"], "design_columns")
    if len(fc) != len(dc):
        _fail("formulaic_columns and design_columns differ in length")
    if d.get("preprocess") is not None and not isinstance(d["preprocess"], dict):
        _fail("preprocess must be an object or null")


def check_params(params: dict, trees: list) -> None:
    """``ValueError`` unless every entry of ``params`` belongs to a ``cut``, ``scale`` or
    ``poly`` call in ``trees`` (the formula) and holds what that call needs (see
    :func:`~privatelr.design.terms.stored_params_problem` and
    :func:`~privatelr.design.poly.stored_poly_problem`)."""
    calls: dict = {}
    for tree in trees:
        for node in walk(tree):
            if isinstance(node, Call) and node.fn in ("cut", "scale", "poly"):
                calls.setdefault(deparse(node), node)
    for key, values in params.items():
        call = calls.get(key)
        if call is None:
            _fail(f"params[{key!r}] belongs to no cut(), scale() or poly() call of the formula")
        values = [float(v) for v in values]
        problem = stored_poly_problem(call, values) if is_poly(call) else \
            stored_params_problem(call, values)
        if problem is not None:
            _fail(f"params[{key!r}]: {problem}")
