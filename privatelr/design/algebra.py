r"""R's term algebra: the terms of a formula, and the design columns R's ``model.matrix`` makes.

The right-hand side of a formula is a tree of term operators (``+ - * / : %in% ^``, ``0``/``1``)
over *atoms* — a variable or a call such as ``log(mpg)`` or ``poly(x, 2)`` — each one *variable*
of R's terms, whatever its number of columns. :func:`expand_terms` numbers the atoms in order of
appearance (ids ``_a0_``, ``_a1_``, ...) and expands the operators as R's ``terms.formula``
does (its ``model.c``), every term a set of atoms:

* ``a + b`` the terms of both (a term given twice is kept once), ``a - b`` those of ``a`` not in
  ``b``; ``a:b`` every union of a term of ``a`` with a term of ``b``; ``a * b`` is
  ``a + b + a:b``; ``a %in% b`` each term of ``a`` joined with all of ``b``'s variables (no main
  effect of ``b``); ``a / b`` is ``a`` plus each term of ``b`` joined with all of ``a``'s
  variables; ``(a + b)^k`` the products of up to ``k`` terms; ``x:x`` is ``x``;
* the terms are then ordered by their number of variables, otherwise as they appeared, and a
  term holding the response is dropped (R: "the response appeared on the right-hand side and
  was dropped").

:func:`design_columns` then codes the terms as R's ``model.matrix``: a numeric atom is one
column, a ``poly()`` atom its ``k`` columns, and a factor (logicals are factors FALSE/TRUE)
appearing in term ``T`` is coded by treatment contrasts (levels 2..k) when ``T`` without it is
empty or contained in an earlier term, and by indicators of all k levels otherwise (so
``y ~ g:h`` has all 6 columns of a 3 x 2 interaction, rank-deficient with the intercept, as in
R); without an intercept the first factor of the first term that has one gets all its levels.
A term's columns vary fastest in its first variable. Columns get two names: R's
(``factor(cyl)6``, ``a:gu``, ``poly(b, 2)1``) and an internal one per part (``_a3_``,
``_a3_[T.L2]`` a contrast, ``_a3_[L2]`` an indicator, ``_a5_p2_`` a ``poly`` column), which
:mod:`privatelr.design.materialize` reads to build the values.

Bounded before any work: the expansion counts its term products (:data:`MAX_PRODUCTS`) and
terms (:data:`MAX_TERMS`), and the columns are counted from each atom's width before a name
is made (:data:`MAX_COLUMNS`); each is a ``ValueError`` naming the limit. Everything is linear
in the size of the formula (``tests/unit/test_formula_scaling.py``).

Examples
--------
>>> from privatelr.design.rsyntax import parse
>>> t = expand_terms(parse("b + a %in% g"))
>>> t.keys, t.terms, t.rhs
(['b', 'a', 'g'], [(0,), (1, 2)], '_a0_ + _a1_ %in% _a2_')
>>> atoms = [{"id": "_a0_", "name": "b", "kind": "numeric", "levels": None},
...          {"id": "_a1_", "name": "a", "kind": "numeric", "levels": None},
...          {"id": "_a2_", "name": "g", "kind": "factor", "levels": ["u", "v", "w"]}]
>>> internal, names = design_columns(t.terms, atoms, t.intercept)
>>> names
['(Intercept)', 'b', 'a:gu', 'a:gv', 'a:gw']
>>> internal
['Intercept', '_a0_', '_a1_:_a2_[L0]', '_a1_:_a2_[L1]', '_a1_:_a2_[L2]']
"""

from __future__ import annotations

import itertools
import re
import warnings
from dataclasses import dataclass

from .poly import column_suffixes, is_poly
from .rsyntax import (Binary, Call, Chain, Const, Dot, Name, Node, Num, Paren, Str, Unary,
                      deparse, number_value, walk)

__all__ = ["Terms", "expand_terms", "design_columns", "expand_dot", "intercept_of",
           "strip_parens", "split_offsets", "MAX_TERMS", "MAX_COLUMNS", "MAX_PRODUCTS", "FC_PART"]

#: Most terms a formula may expand to, most columns a design may have, and most term products
#: (``:``, ``*``, ``/``, ``%in%``, ``^``) the expansion may form on the way.
MAX_TERMS = 100_000
MAX_COLUMNS = 1_000_000
MAX_PRODUCTS = 2_000_000
TERM_OPS = ("+", "-", "*", "/", ":", "%in%")
ATOM_RE = re.compile(r"_a\d+_")
#: one part of an internal column name: the atom, a poly column ``pJ_``, a factor level ``[LK]``
#: (all levels) or ``[T.LK]`` (a treatment contrast)
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


def _short(node) -> str:
    text = deparse(node)
    return text if len(text) <= 200 else text[:200] + "..."


@dataclass(frozen=True)
class Terms:
    """The expanded terms of a right-hand side (:func:`expand_terms`).

    ``rhs``: the term structure over the atom ids, as text in formulaic's grammar (the record a
    spec stores); ``keys``/``nodes``: the atoms (R text and tree) in order of appearance, atom
    ``i`` having id ``_ai_``; ``terms``: R's terms in R's order, each a sorted tuple of atom
    numbers; ``intercept``: whether R keeps the intercept."""

    rhs: str
    keys: list
    nodes: list
    terms: list
    intercept: bool

    @property
    def ids(self) -> list:
        return [f"_a{i}_" for i in range(len(self.keys))]


def _union(a: tuple, b: tuple) -> tuple:
    return a if a == b else tuple(sorted(set(a).union(b)))


def _all_of(terms) -> tuple:
    out: set = set()
    for t in terms:
        out.update(t)
    return tuple(sorted(out))


class _Encoder:
    """One walk of the term tree: the formulaic-grammar text and R's term lists (ordered dicts
    of terms), with the work bounded (module docstring)."""

    def __init__(self):
        self.index: dict = {}
        self.nodes: list = []
        self.products = 0

    def atom(self, node) -> tuple:
        key = deparse(node)
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.nodes)
            self.nodes.append(node)
        aid = f"_a{i}_"
        text = aid
        if is_poly(node):                 # one atom of R's; its columns _aK_p1_, _aK_p2_, ...
            cols = [f"{aid}p{s}_" for s in column_suffixes(node)]
            text = cols[0] if len(cols) == 1 else "(" + " + ".join(cols) + ")"
        return text, {(i,): None}

    def charge(self, count: int, node) -> None:
        self.products += count
        if self.products > MAX_PRODUCTS:
            raise ValueError(f"formula: expanding the terms takes more than {MAX_PRODUCTS:,} "
                             f"term products (at {_short(node)}); use fewer interactions or a "
                             "lower power")

    @staticmethod
    def bounded(terms: dict, node) -> dict:
        if len(terms) > MAX_TERMS:
            raise ValueError(f"formula: {_short(node)} expands to more than {MAX_TERMS:,} "
                             "terms; use fewer interactions or a lower power")
        return terms

    def interact(self, left: dict, right: dict, node) -> dict:
        self.charge(len(left) * len(right), node)
        out: dict = {}
        for a in left:
            for b in right:
                out.setdefault(_union(a, b))
        return self.bounded(out, node)

    def apply(self, op: str, acc: dict, right: dict, node) -> dict:
        if op == "+":
            for t in right:
                acc.setdefault(t)
            return self.bounded(acc, node)
        if op == "-":
            for t in right:
                acc.pop(t, None)
            return acc
        if op == ":":
            return self.interact(acc, right, node)
        if op == "*":
            product = self.interact(acc, right, node)
            out = dict(acc)
            for part in (right, product):
                for t in part:
                    out.setdefault(t)
            return self.bounded(out, node)
        if op == "/":                       # R's NestTerms: b within all of a's variables
            self.charge(len(right), node)
            inner = _all_of(acc)
            out = dict(acc)
            for t in right:
                out.setdefault(_union(t, inner))
            return self.bounded(out, node)
        # %in% (R's InTerms): each term of a within all of b's variables; no term of b itself
        self.charge(len(acc), node)
        outer = _all_of(right)
        return {_union(t, outer): None for t in acc}

    def encode(self, node) -> tuple:
        if isinstance(node, Chain) and all(op in TERM_OPS for op in node.ops):
            text, acc = self.encode(node.operands[0])
            parts = [text]
            for op, operand in zip(node.ops, node.operands[1:]):
                t, right = self.encode(operand)
                parts.append(f" {op} {t}")
                acc = self.apply(op, acc, right, node)
            return "".join(parts), acc
        if isinstance(node, Chain) and node.ops[0].startswith("%") and node.ops[0] != "%in%":
            raise ValueError(f"formula: operator {node.ops[0]!r} is not a term operator; put the "
                             f"expression in I(...): {_short(node)}")
        if isinstance(node, Binary) and node.op == "^":
            return self.power(node)
        if isinstance(node, Unary) and node.op in ("-", "+"):
            text, terms = self.encode(node.operand)
            return f"{node.op} {text}", (terms if node.op == "+" else {})
        if isinstance(node, Paren):
            text, terms = self.encode(node.body)
            return "(" + text + ")", terms
        if isinstance(node, Num):
            v = number_value(node)
            if v not in (0.0, 1.0):
                raise ValueError(f"formula: a number in the terms must be 0 or 1 (intercept), "
                                 f"got {node.text}; use I(...) for arithmetic")
            return str(int(v)), {}
        if isinstance(node, Dot):
            raise ValueError("formula: '.' stands for no column (data has only the response)")
        if isinstance(node, (Str, Const)):
            raise ValueError(f"formula: a constant ({deparse(node)}) is not a term")
        return self.atom(node)

    def power(self, node: Binary) -> tuple:
        if not isinstance(strip_parens(node.right), Num):
            raise ValueError(f"formula: the power in {_short(node)} must be a number")
        k = number_value(strip_parens(node.right))
        if not k >= 1 or k != k:
            raise ValueError(f"formula: invalid power in {_short(node)} (R needs a whole "
                             "number >= 1)")
        text, base = self.encode(node.left)
        # (a + b)^k: R multiplies the terms k - 1 times, products of up to k terms; once a
        # product adds no term, further ones add none and keep the order (the terms' count of
        # variables orders them first, then their first appearance, which no longer changes)
        m = len(set(ATOM_RE.findall(text)))
        shown = int(min(k, max(1, m)))
        result = dict(base)
        for _ in range(int(min(k, len(_all_of(base)))) - 1):
            step = self.interact(base, result, node)
            grew = len(step) > len(result)
            result = step
            if not grew:
                break
        return (f"{text} ^ {shown}" if shown > 1 else text), result


def expand_terms(node, response: str | None = None) -> Terms:
    """R's terms of the right-hand side ``node`` (offsets removed, ``.`` expanded): see the
    module docstring. ``response``: the response's R text; a term holding an atom of that text
    is dropped with a warning, as R's ``model.matrix`` drops it."""
    enc = _Encoder()
    rhs, acc = enc.encode(node)
    keys = list(enc.index)
    terms = sorted(acc, key=len)                 # stable: R's order within a degree kept
    r = enc.index.get(response) if response is not None else None
    if r is not None:
        kept = [t for t in terms if r not in t]
        if len(kept) != len(terms):
            warnings.warn(f"formula: the response {response} appeared on the right-hand side "
                          "and was dropped (as R drops it)", UserWarning, stacklevel=3)
            terms = kept
    return Terms(rhs=rhs, keys=keys, nodes=list(enc.nodes), terms=terms,
                 intercept=intercept_of(node))


def _width(atom: dict, code: int) -> int:
    if atom["kind"] == "factor":
        return len(atom["levels"]) - (code == 1)
    if atom["kind"] == "matrix":
        return len(atom["levels"])
    return 1


def _parts(i: int, atom: dict, code: int) -> list:
    """``(internal name, R name)`` of each column of atom ``i`` in a term (``code``: 1 treatment
    contrasts, 2 all levels; numeric and matrix atoms: 0)."""
    aid, name = f"_a{i}_", atom["name"]
    if atom["kind"] == "factor":
        levels = atom["levels"]
        if code == 1:
            return [(f"{aid}[T.L{k}]", f"{name}{levels[k]}") for k in range(1, len(levels))]
        return [(f"{aid}[L{k}]", f"{name}{lv}") for k, lv in enumerate(levels)]
    if atom["kind"] == "matrix":
        return [(f"{aid}p{s}_", f"{name}{s}") for s in atom["levels"]]
    return [(aid, name)]


def design_columns(terms: list, atoms: list, intercept: bool) -> tuple[list, list]:
    """``(internal names, R names)`` of the design's columns for R's ``terms`` over ``atoms``
    (dicts with ``kind`` ``numeric``/``factor``/``matrix``, ``name`` and ``levels``), coded as
    R's ``model.matrix`` codes them (module docstring). The number of columns is counted from
    the atoms' widths before any name is made; beyond :data:`MAX_COLUMNS` it is a
    ``ValueError``."""
    factor = [a["kind"] == "factor" for a in atoms]
    codes = []
    earlier: set = set()               # the terms so far, and each one less one variable: a
    for t in terms:                    # term's margin is in an earlier term iff it is one
        codes.append([0 if not factor[v] else
                      1 if len(t) == 1 or tuple(x for x in t if x != v) in earlier else 2
                      for v in t])
        earlier.add(t)
        if len(t) > 1:
            earlier.update(tuple(x for x in t if x != w) for w in t)
    if not intercept:                  # R: the first factor of the first term with one
        for t, code in zip(terms, codes):
            hit = next((j for j, v in enumerate(t) if factor[v] and len(atoms[v]["levels"]) > 1),
                       None)
            if hit is not None:
                code[hit] = 2
                break
    total = int(intercept)
    for t, code in zip(terms, codes):
        width = 1
        for v, c in zip(t, code):
            width *= _width(atoms[v], c)
        total += width
        if total > MAX_COLUMNS:
            raise ValueError(f"formula: the design would have more than {MAX_COLUMNS:,} "
                             "columns; use fewer interactions, factor levels or poly() degrees")
    internal, names = (["Intercept"], ["(Intercept)"]) if intercept else ([], [])
    for t, code in zip(terms, codes):
        lists = [_parts(v, atoms[v], c) for v, c in zip(t, code)]
        for combo in itertools.product(*reversed(lists)):     # the first variable fastest
            internal.append(":".join(p[0] for p in reversed(combo)))
            names.append(":".join(p[1] for p in reversed(combo)))
    return internal, names


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
