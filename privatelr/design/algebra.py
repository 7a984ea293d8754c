"""R's term algebra: formula operators to formulaic's, variables to design columns.

The right-hand side of a formula is a tree of term operators (``+ - * / : %in% ^``, ``0``/``1``,
``.``) over *atoms* — a variable or a call such as ``log(mpg)``. :class:`TermAlgebra` names each
atom ``_aK_`` and writes the term structure in formulaic's grammar over those names only, so
formulaic never sees (or evaluates) user text: it looks the ``_aK_`` columns up in a frame the
interpreter built. :func:`columns_of` reads the design's columns from a small prototype frame in
which every level occurs (no data row), after bounding the design's width;
:func:`r_column_name` maps formulaic's names back to R's (``factor(cyl)6``, ``x:fb``).
"""

from __future__ import annotations

import functools

import math
import re

import numpy as np
import pandas as pd

from .poly import column_suffixes, is_poly
from .rsyntax import (Binary, Call, Chain, Const, Dot, Name, Node, Num, Paren, Str, Unary,
                      deparse, number_value, walk)

__all__ = ["TermAlgebra", "columns_of", "prototype", "r_column_name", "expand_dot",
           "intercept_of", "formulaic_matrix", "strip_parens", "split_offsets", "MAX_TERMS",
           "MAX_COLUMNS"]

#: Most terms ``(a + b + ...)^k`` may expand to, and most columns a design may have.
MAX_TERMS = 100_000
MAX_COLUMNS = 1_000_000
TERM_OPS = ("+", "-", "*", "/", ":", "%in%")
ATOM_RE = re.compile(r"_a\d+_")
#: one part of a formulaic column name: the atom, a poly column ``pJ_``, a factor level ``[LK]``
FC_PART = re.compile(r"^(_a\d+_)(?:p(\d+)_)?(?:\[(?:T\.)?L(\d+)\])?$")


def strip_parens(node):
    while isinstance(node, Paren):
        node = node.body
    return node


def _is_offset(node) -> bool:
    node = strip_parens(node)
    return isinstance(node, Call) and node.fn == "offset"


def split_offsets(terms) -> tuple:
    """``(terms without offsets, [offset expressions])``: R's ``offset(x)`` terms, added at the
    top level of the right-hand side (``y ~ a + offset(log(t))``), become per-row values added
    to the linear predictor with coefficient 1 (no design column). An offset that is subtracted,
    or sits inside another term or call, is a ``ValueError``.

    Examples
    --------
    >>> from privatelr.design.rsyntax import parse, deparse
    >>> rest, offs = split_offsets(parse("a + offset(log(t)) + b"))
    >>> deparse(rest), [deparse(o) for o in offs]
    ('a + b', ['log(t)'])
    """
    node = strip_parens(terms)
    found = []
    rest: Node
    if _is_offset(node):
        found, rest = [node], Num("1")
    elif isinstance(node, Chain) and set(node.ops) <= {"+", "-"}:
        kept: list = []
        ops: list = []
        for i, operand in enumerate(node.operands):
            op = "+" if i == 0 else node.ops[i - 1]
            if _is_offset(operand):
                if op == "-":
                    raise ValueError(f"formula: {deparse(operand)} is subtracted; an offset is "
                                     "added to the linear predictor (write + offset(-x))")
                found.append(strip_parens(operand))
                continue
            if kept:
                ops.append(op)
            elif op == "-":                     # a leading "- 1" after a removed offset
                kept.append(Num("0"))
                ops.append("-")
            kept.append(operand)
        if not found:
            rest = terms
        elif not kept:
            rest = Num("1")
        elif len(kept) == 1:
            rest = kept[0]
        else:
            rest = Chain(tuple(ops), tuple(kept))
    else:
        rest = terms
    offsets = []
    for call in found:
        if len(call.args) != 1 or call.args[0].name not in (None, "object"):
            raise ValueError(f"formula: {deparse(call)} takes one argument, the offset's "
                             "expression")
        offsets.append(call.args[0].value)
    for n in walk(rest):
        if isinstance(n, Call) and n.fn == "offset":
            raise ValueError(f"formula: {deparse(n)} must be a term of its own, added at the "
                             "top level of the formula (y ~ x + offset(log(t)))")
    return rest, offsets


class TermAlgebra:
    def __init__(self, dot_names: list[str]):
        self.dot_names = dot_names
        self.keys: dict[str, str] = {}
        self.ids: list[str] = []
        self.nodes: list = []

    def atom(self, node) -> str:
        key = deparse(node)
        if key not in self.keys:
            self.keys[key] = f"_a{len(self.keys)}_"
            self.ids.append(self.keys[key])
            self.nodes.append(node)
        aid = self.keys[key]
        if is_poly(node):                   # one column per degree: (_aK_p1_ + _aK_p2_ + ...)
            cols = [f"{aid}p{s}_" for s in column_suffixes(node)]
            return cols[0] if len(cols) == 1 else "(" + " + ".join(cols) + ")"
        return aid

    def convert(self, node) -> str:
        if isinstance(node, Chain) and all(op in TERM_OPS for op in node.ops):
            parts = [self.convert(node.operands[0])]
            for op, operand in zip(node.ops, node.operands[1:]):
                parts.append(f" {op} {self.convert(operand)}")
            return "".join(parts)
        if isinstance(node, Chain) and node.ops[0].startswith("%") and node.ops[0] != "%in%":
            raise ValueError(f"formula: operator {node.ops[0]!r} is not a term operator; put the "
                             f"expression in I(...): {deparse(node)}")
        if isinstance(node, Binary) and node.op == "^":
            return self._power(node)
        if isinstance(node, Unary) and node.op in ("-", "+"):
            return f"{node.op} {self.convert(node.operand)}"
        if isinstance(node, Paren):
            return "(" + self.convert(node.body) + ")"
        if isinstance(node, Num):
            v = number_value(node)
            if v not in (0.0, 1.0):
                raise ValueError(f"formula: a number in the terms must be 0 or 1 (intercept), "
                                 f"got {node.text}; use I(...) for arithmetic")
            return str(int(v))
        if isinstance(node, Dot):
            if not self.dot_names:
                raise ValueError("formula: '.' stands for no column (data has only the response)")
            return "(" + " + ".join(self.atom(Name(nm)) for nm in self.dot_names) + ")"
        if isinstance(node, (Str, Const)):
            raise ValueError(f"formula: a constant ({deparse(node)}) is not a term")
        return self.atom(node)

    def _power(self, node: Binary) -> str:
        if not isinstance(strip_parens(node.right), Num):
            raise ValueError(f"formula: the power in {deparse(node)} must be a number")
        k = number_value(strip_parens(node.right))
        if not k >= 1 or k != k:
            raise ValueError(f"formula: invalid power in {deparse(node)} (R needs a whole "
                             "number >= 1)")
        base = self.convert(node.left)
        # R: (a + b)^k holds interactions up to order k among the variables of a + b, so k
        # beyond their number changes nothing (formulaic would enumerate them all)
        m = len(set(ATOM_RE.findall(base)))
        k = int(min(k, max(1, m)))
        if sum(math.comb(m, j) for j in range(1, k + 1)) > MAX_TERMS:
            raise ValueError(f"formula: {deparse(node)} expands to more than {MAX_TERMS:,} "
                             "terms; lower the power")
        return f"{base} ^ {k}" if k > 1 else base


def columns_of(rhs_fc: str, atoms: list) -> list:
    """formulaic's column names for the term structure ``rhs_fc`` over ``atoms``: from a small
    prototype frame in which every level occurs (no data row is involved), after checking
    that the design is not absurdly wide.

    A pure function of the term structure and of each atom's id, kind and levels as the
    prototype uses them (a factor's level count, a matrix's column labels), so it is computed
    once per structure and remembered (formulaic's parse and build cost about 15 ms, most of a
    small fit; repeated fits — tuning, audits, simulations — reuse the structure).
    """
    shape = tuple((a["id"], a["kind"], len(a["levels"]) if a["kind"] == "factor" else
                   tuple(a["levels"]) if a["kind"] == "matrix" else None) for a in atoms)
    return list(_columns_of(rhs_fc, shape))


@functools.lru_cache(maxsize=256)
def _columns_of(rhs_fc: str, shape: tuple) -> tuple:
    import formulaic

    atoms = [{"id": aid, "kind": kind,
              "levels": list(range(info)) if kind == "factor" else
              list(info) if kind == "matrix" else []} for aid, kind, info in shape]
    nlev = {a["id"]: (len(a["levels"]) if a["kind"] == "factor" else 1) for a in atoms}
    try:
        terms = list(formulaic.Formula(rhs_fc))
    except Exception as exc:  # noqa: BLE001 - formulaic's errors name its own internals
        raise ValueError(f"formula: could not read the terms ({exc})") from None
    width = 0
    for term in terms:
        w = 1
        for factor in term.factors:
            w *= nlev.get(str(factor.expr), 1)
        width += w
    if width > MAX_COLUMNS:
        raise ValueError(f"formula: the design would have about {width:,} columns, more than "
                         f"{MAX_COLUMNS:,}; use fewer interactions or factor levels")
    try:
        mm = formulaic.model_matrix(rhs_fc, prototype(atoms), na_action="ignore",
                                    output="sparse")
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"formula: could not build the design ({exc})") from None
    return tuple(mm.model_spec.column_names)


def prototype(atoms: list) -> pd.DataFrame:
    """A small atom frame in which every level of every factor occurs (formulaic reads the
    column structure from it; no data row is involved)."""
    size = max([2] + [len(a["levels"]) for a in atoms if a["kind"] == "factor"])
    frame = {}
    for a in atoms:
        if a["kind"] == "matrix":
            for s in a["levels"]:
                frame[f"{a['id']}p{s}_"] = (np.arange(size) % 2).astype(np.float64)
        elif a["kind"] == "factor":
            k = len(a["levels"])
            cats = [f"L{i}" for i in range(k)]
            frame[a["id"]] = pd.Categorical.from_codes(np.arange(size) % max(k, 1) if k else
                                                       np.full(size, -1), categories=cats)
        else:
            frame[a["id"]] = (np.arange(size) % 2).astype(np.float64)
    return pd.DataFrame(frame, index=pd.RangeIndex(size))


def formulaic_matrix(rhs: str, frame: pd.DataFrame, sparse: bool = False):
    import formulaic

    try:
        return formulaic.model_matrix(rhs, frame, na_action="ignore",
                                      output="sparse" if sparse else "pandas")
    except Exception as exc:  # noqa: BLE001 - formulaic's errors name its own internals
        raise ValueError(f"formula: could not build the design ({exc})") from None


def r_column_name(fc_name: str, atoms: list[dict]) -> str:
    if fc_name == "Intercept":
        return "(Intercept)"
    by_id = {a["id"]: a for a in atoms}
    parts = []
    for part in fc_name.split(":"):
        m = FC_PART.match(part)
        if m is None:
            raise ValueError(f"unexpected design column {fc_name!r} from formulaic")
        atom = by_id[m.group(1)]
        parts.append(atom["name"] + (m.group(2) or "") +
                     (atom["levels"][int(m.group(3))] if m.group(3) else ""))
    return ":".join(parts)


def expand_dot(node, dot_names: list[str], parent: str | None = None):
    """The tree with ``.`` replaced by the sum of the columns (R's printed formula)."""
    if isinstance(node, Dot):
        if not dot_names:
            return node
        expr = Chain(tuple("+" for _ in dot_names[1:]), tuple(Name(nm) for nm in dot_names)) \
            if len(dot_names) > 1 else Name(dot_names[0])
        return expr if (parent in (None, "+") or len(dot_names) == 1) else Paren(expr)
    if isinstance(node, Chain):
        return Chain(node.ops, tuple(expand_dot(o, dot_names, node.ops[max(0, i - 1)])
                                     for i, o in enumerate(node.operands)))
    if isinstance(node, Binary):
        return Binary(node.op, expand_dot(node.left, dot_names, node.op),
                      expand_dot(node.right, dot_names, node.op))
    if isinstance(node, Paren):
        return Paren(expand_dot(node.body, dot_names, None))
    if isinstance(node, Unary):
        return Unary(node.op, expand_dot(node.operand, dot_names, "un"))
    return node


def intercept_of(node) -> bool:
    """Whether R's terms keep the intercept (``- 1``, ``+ 0``, ``0 +`` remove it)."""
    keep = True
    stack = [(node, 1)]
    while stack:
        n, sign = stack.pop()
        if isinstance(n, Num):
            v = number_value(n)
            if v == 0.0 and sign > 0:
                keep = False
            elif v == 1.0:
                keep = sign > 0
        elif isinstance(n, Chain) and n.ops[0] in ("+", "-"):
            items = [(n.operands[0], sign)] + [
                (o, sign if op == "+" else -sign) for op, o in zip(n.ops, n.operands[1:])]
            stack.extend(reversed(items))
        elif isinstance(n, Unary) and n.op in ("-", "+"):
            stack.append((n.operand, -sign if n.op == "-" else sign))
        elif isinstance(n, Paren):
            stack.append((n.body, sign))
    return keep
