r"""R's expression syntax as data: a tokenizer, a parser into a small tree, and ``deparse``.

A formula is text typed by a user, read from a command line or from a saved model file, so it is
treated as *data*: it is parsed here into a tree of the node types below and nothing else ever
runs it. :mod:`privatelr.design.terms` interprets the tree with a whitelist of functions and
operators; no ``eval``, ``exec`` or ``compile`` is applied to any text, anywhere.

The grammar is the part of R's (``?Syntax``) that formulas use, with R's precedence, from the
loosest::

    ~                      formula (one per formula; nested '~' is an error)
    |  ||                  or
    &  &&                  and
    !                      not (prefix)
    == != < > <= >=        comparison (not associative: 'a < b < c' is an error, as in R)
    +  -                   sum, difference
    *  /                   product, quotient
    %any%                  special operators (%in%, %%, %/%, ...)
    :                      interaction / sequence
    -  +                   unary minus and plus (prefix)
    ^  (and **)            power (right associative)
    f(...)  (...)          calls and parentheses

Left-associative operators of one precedence level are kept as one flat :class:`Chain`
(``a + b - c`` is ``Chain(("+", "-"), (a, b, c))``), so a formula with thousands of terms is a
shallow tree; only real nesting (parentheses, calls, prefix operators, powers) deepens it, and
nesting deeper than :data:`MAX_DEPTH` is refused with ``ValueError``, as is text longer than
:data:`MAX_LENGTH` characters. Every walker in this package is therefore bounded in depth.

R syntax that has no meaning in a model formula is refused with a message: assignment (``<-``,
``->``, ``=`` outside a call's argument list), indexing (``[``, ``[[``, ``$``, ``@``),
namespaces (``::``), ``function``/``\(x)``, ``if``, braces, the pipe ``|>``, ``?``, and complex
literals (``1i``).

Examples
--------
>>> tree = parse("y ~ log(x) + a:b")
>>> type(tree).__name__, tree.op
('Binary', '~')
>>> deparse(tree)
'y ~ log(x) + a:b'
>>> deparse(parse("I(x^2)+ -1"))
'I(x^2) + -1'
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import NoReturn, Union

__all__ = ["Num", "Str", "Name", "Const", "Dot", "Paren", "Unary", "Binary", "Chain", "Call", "Arg",
           "Node", "parse", "deparse", "names_in", "walk", "number_value", "r_number",
           "lone_surrogate", "MAX_DEPTH", "MAX_LENGTH", "MAX_STORED_LENGTH",
           "CONSTANTS"]

#: Deepest nesting of parentheses, calls and prefix/power operators a formula may have.
MAX_DEPTH = 100
#: Longest formula text accepted (characters).
MAX_LENGTH = 1_000_000
#: Longest R text the package itself derives from an accepted formula and parses again (the
#: formula with ``.`` expanded, a saved model's ``formula_r`` and term names): deparsing adds
#: spaces (``a+b`` is ``a + b``), so it can be longer than the text given.
MAX_STORED_LENGTH = 4 * MAX_LENGTH

#: R's reserved constants (literals: ``TRUE`` is never a column; write `` `TRUE` `` for one).
CONSTANTS = ("TRUE", "FALSE", "NA", "Inf", "NaN")
_RESERVED_CONSTANTS = frozenset(CONSTANTS)


# ---------------------------------------------------------------------------------------------
# the tree
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Num:
    """A number literal as written (``"2"``, ``"1e-3"``, ``"0x1F"``, ``"3L"``)."""

    text: str


@dataclass(frozen=True)
class Str:
    """A string literal (escapes already decoded)."""

    value: str


@dataclass(frozen=True)
class Name:
    """A variable name (backquotes removed); ``T``, ``F`` and ``pi`` are names too, as in R
    (a data column of that name wins)."""

    id: str


@dataclass(frozen=True)
class Const:
    """One of R's reserved constants: ``TRUE``, ``FALSE``, ``NA``, ``Inf``, ``NaN``."""

    id: str


@dataclass(frozen=True)
class Dot:
    """R's ``.`` in a formula: every data column not otherwise used."""


@dataclass(frozen=True)
class Paren:
    body: "Node"


@dataclass(frozen=True)
class Unary:
    op: str          # "-", "+", "!", "~"
    operand: "Node"


@dataclass(frozen=True)
class Binary:
    op: str          # "~", "^", or a comparison
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Chain:
    """A run of left-associative operators of one precedence level: ``operands[0] ops[0]
    operands[1] ops[1] operands[2] ...``."""

    ops: tuple
    operands: tuple


@dataclass(frozen=True)
class Arg:
    name: Union[str, None]
    value: "Node"


@dataclass(frozen=True)
class Call:
    fn: str
    args: tuple      # of Arg


Node = Union[Num, Str, Name, Const, Dot, Paren, Unary, Binary, Chain, Call]


# ---------------------------------------------------------------------------------------------
# tokens
# ---------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\n\f\v]+)
  | (?P<num>0[xX][0-9a-fA-F]+L?|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[Li]?)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<bq>`(?:[^`\\]|\\.)*`)
  | (?P<name>(?:[^\W\d_]|\.(?![0-9]))[\w.]*)
  | (?P<op>%[^%\n]*%|<<-|->>|<-|->|<=|>=|==|!=|&&|\|\||\*\*|\|>|::|\[\[|[-+*/^:~!<>&|(),=\[\]$@?{}\\])
""", re.VERBOSE)

_SURROGATE = re.compile("[\ud800-\udfff]")

_RESERVED = {"if", "else", "repeat", "while", "function", "for", "next", "break", "in",
             "NULL", "NA_integer_", "NA_real_", "NA_character_", "TRUE", "FALSE", "NA", "Inf",
             "NaN"}
_REFUSED_OPS = {
    "<-": "assignment", "<<-": "assignment", "->": "assignment", "->>": "assignment",
    "[": "indexing", "[[": "indexing", "]": "indexing", "$": "'$'",
    "@": "'@'", "::": "namespaces", "?": "'?'", "{": "braces", "}": "braces",
    "\\": "function definitions", "|>": "the pipe '|>'",
}


def _decode_string(body: str, text: str) -> str:
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'",
              "`": "`", "a": "\a", "b": "\b", "f": "\f", "v": "\v", " ": " "}
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in simple:
            out.append(simple[e])
            i += 2
            continue
        m = (re.match(r"x([0-9a-fA-F]{1,2})", body[i + 1:]) or
             re.match(r"u\{([0-9a-fA-F]{1,4})\}|u([0-9a-fA-F]{1,4})", body[i + 1:]) or
             re.match(r"U\{([0-9a-fA-F]{1,8})\}|U([0-9a-fA-F]{1,8})", body[i + 1:]))
        if m is None:
            raise ValueError(f"formula: unknown escape '\\{e}' in a string of {text!r}")
        code = int(next(g for g in m.groups() if g is not None), 16)
        if code > 0x10FFFF:
            raise ValueError(f"formula: invalid escape '\\{m.group(0)}' in {_short(text)}")
        if 0xD800 <= code <= 0xDFFF:                 # R: "invalid \\u{xxxx} value"
            raise ValueError(f"formula: the escape '\\{m.group(0)}' is a lone surrogate, not a "
                             f"character, in {_short(text)}; write the character itself")
        out.append(chr(code))
        i += 1 + m.end()
    return "".join(out)


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    for m in _TOKEN_RE.finditer(text):
        if m.start() != pos:                          # finditer skipped what no token reads
            break
        kind, value = m.lastgroup or "", m.group()
        if kind == "num" and value.endswith("i"):
            raise ValueError(f"formula: complex numbers ({value}) are not supported")
        if kind == "op" and value in _REFUSED_OPS:
            raise ValueError(f"formula: {_REFUSED_OPS[value]} ({value!r}) has no meaning in a "
                             f"model formula: {_short(text)}")
        if kind == "op" and value == "**":
            value = "^"                                   # R reads ** as ^
        if kind == "name" and value in ("function", "if", "else", "repeat", "while", "for",
                                         "next", "break", "NULL", "in"):
            raise ValueError(f"formula: '{value}' has no meaning in a model formula: "
                             f"{_short(text)}")
        if kind != "ws":
            out.append((kind, value, pos))
        pos = m.end()
    if pos != len(text):
        raise ValueError(f"formula: cannot read {text[pos:pos + 10]!r} at position {pos} of "
                         f"{_short(text)}")
    return out


def _short(text: str) -> str:
    return repr(text if len(text) <= 200 else text[:200] + "...")


# ---------------------------------------------------------------------------------------------
# parser (precedence climbing)
# ---------------------------------------------------------------------------------------------

_COMPARISONS = ("==", "!=", "<", ">", "<=", ">=")
# binary operator -> (left binding power, right binding power, chain level or None)
_BINARY = {
    "~": (1, 2, None),
    "|": (3, 4, "or"), "||": (3, 4, "or"),
    "&": (5, 6, "and"), "&&": (5, 6, "and"),
    **{op: (9, 10, None) for op in _COMPARISONS},
    "+": (11, 12, "sum"), "-": (11, 12, "sum"),
    "*": (13, 14, "product"), "/": (13, 14, "product"),
    "%": (15, 16, "special"),                     # every %any% operator
    ":": (17, 18, "colon"),
    "^": (22, 21, None),                          # right associative
}
_PREFIX = {"~": 2, "!": 8, "-": 19, "+": 19}
_LEVEL_OF = {op: lvl for op, (_, _, lvl) in _BINARY.items() if lvl}


def _binary_key(op: str) -> str:
    return "%" if len(op) > 1 and op.startswith("%") else op


def chain_level(op: str) -> str | None:
    """The precedence level of a left-associative operator (``None`` for others)."""
    return _LEVEL_OF.get(_binary_key(op))


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.depth = 0

    def _peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None, len(self.text))

    def _take(self):
        tok = self._peek()
        self.i += 1
        return tok

    def _fail(self, what: str) -> NoReturn:
        raise ValueError(f"formula: {what} in {_short(self.text)}")

    def _expect(self, value: str) -> None:
        kind, v, pos = self._take()
        if v != value:
            self._fail(f"expected {value!r} but found {'the end' if v is None else repr(v)}")

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ValueError(f"formula: nested more than {MAX_DEPTH} levels deep; simplify it "
                             "(compute complicated columns in the data frame first)")

    def parse(self) -> Node:
        if not self.toks:
            raise ValueError("formula: the formula is empty; write e.g. 'y ~ x1 + x2'")
        node = self._expr(0)
        if self.i != len(self.toks):
            if self._peek()[1] == "=":
                raise ValueError(f"formula: assignment ('=') has no meaning in a model formula: "
                                 f"{_short(self.text)}")
            self._fail(f"unexpected {self._peek()[1]!r}")
        return node

    def _primary(self) -> Node:
        kind, v, pos = self._take()
        if kind is None:
            self._fail("the formula ends too early")
        if kind == "num":
            return Num(v)
        if kind == "str":
            return Str(_decode_string(v[1:-1], self.text))
        if kind == "bq":
            if len(v) == 2:
                self._fail("an empty name ``")
            return Name(re.sub(r"\\(.)", r"\1", v[1:-1]))     # \` and \\ inside backquotes
        if kind == "name":
            if v in _RESERVED_CONSTANTS:
                return Const(v)
            return Dot() if v == "." else Name(v)
        if v == "(":
            self._enter()
            body = self._expr(0)
            self._expect(")")
            self.depth -= 1
            return Paren(body)
        if v in _PREFIX:
            self._enter()
            operand = self._expr(_PREFIX[v])
            self.depth -= 1
            return Unary(v, operand)
        self._fail(f"unexpected {v!r}")

    def _call(self, fn: str) -> Call:
        self._enter()
        self._take()                                  # "("
        args = []
        if self._peek()[1] != ")":
            while True:
                kind, v, _ = self._peek()
                name = None
                nxt = self.toks[self.i + 1][1] if self.i + 1 < len(self.toks) else None
                if kind in ("name", "bq", "str") and nxt == "=":
                    name = v if kind == "name" else (
                        re.sub(r"\\(.)", r"\1", v[1:-1]) if kind == "bq" else
                        _decode_string(v[1:-1], self.text))
                    self.i += 2
                if self._peek()[1] in (",", ")"):
                    self._fail(f"an empty argument in {fn}()")
                args.append(Arg(name, self._expr(0)))
                if self._peek()[1] == ",":
                    self._take()
                    continue
                break
        self._expect(")")
        self.depth -= 1
        return Call(fn, tuple(args))

    def _expr(self, min_bp: int) -> Node:
        lhs = self._primary()
        # a run of one left-associative level is collected in lists and made one Chain when
        # the run ends (appending to a tuple would copy it: quadratic in the number of terms)
        level_now, ops, operands = None, [], []
        while True:
            kind, v, _ = self._peek()
            if kind is None:
                break
            if v == "(":
                if not isinstance(lhs, Name) or level_now is not None:
                    self._fail("only a function name can be called")
                lhs = self._call(lhs.id)
                continue
            if kind != "op" or _binary_key(v) not in _BINARY:
                if v in (")", ",", "="):
                    break
                self._fail(f"unexpected {v!r}")
            lbp, rbp, level = _BINARY[_binary_key(v)]
            if lbp < min_bp:
                break
            self._take()
            if v == "^":
                self._enter()
                rhs = self._expr(rbp)
                self.depth -= 1
            else:
                rhs = self._expr(rbp)
            if v in _COMPARISONS and self._peek()[1] in _COMPARISONS:
                self._fail(f"comparisons cannot be chained ({v!r} then "
                           f"{self._peek()[1]!r}); use parentheses")
            if level is not None and level == level_now:
                ops.append(v)
                operands.append(rhs)
                continue
            if level_now is not None:
                lhs = Chain(tuple(ops), tuple(operands))
            if level is not None:
                level_now, ops, operands = level, [v], [lhs, rhs]
            else:
                level_now, lhs = None, Binary(v, lhs, rhs)
        return Chain(tuple(ops), tuple(operands)) if level_now is not None else lhs


def lone_surrogate(text: str):
    """The first lone surrogate code point in ``text`` (a ``re.Match``) or None: such text
    cannot be encoded, printed or saved, so formulas and column names holding one are refused.
    """
    return _SURROGATE.search(text)


def parse(text: str, *, max_length: int = MAX_LENGTH) -> Node:
    """Parse R expression/formula text into a tree (see the module docstring).

    Raises ``TypeError`` for non-strings and ``ValueError`` for anything that is not a
    well-formed R expression of the supported grammar, longer than ``max_length`` characters
    (:data:`MAX_STORED_LENGTH` for the package's own deparsed text), or nested too deeply.

    Examples
    --------
    >>> parse("a + b - c")
    Chain(ops=('+', '-'), operands=(Name(id='a'), Name(id='b'), Name(id='c')))
    """
    if not isinstance(text, str):
        raise TypeError(f"formula must be a string, got {type(text).__name__}")
    if len(text) > max_length:
        raise ValueError(f"formula: {len(text)} characters is longer than the {max_length} "
                         "accepted")
    bad = lone_surrogate(text)
    if bad is not None:
        raise ValueError(f"formula: character {bad.start()} is a lone surrogate "
                         f"(U+{ord(bad.group()):04X}), which is not text (it cannot be printed "
                         "or saved); remove it, or write the character it stands for")
    return _Parser(text).parse()


# ---------------------------------------------------------------------------------------------
# numbers and deparse
# ---------------------------------------------------------------------------------------------

def number_value(node: Num) -> float:
    """The value of a number literal (R's doubles; ``L`` integers are doubles too)."""
    text = node.text[:-1] if node.text.endswith("L") else node.text
    if text[:2] in ("0x", "0X"):
        try:
            return float(int(text, 16))
        except OverflowError:                # beyond the doubles: R reads Inf
            return math.inf
    return float(text)


def r_number(x) -> str:
    """A number as R's ``as.character`` labels a double (15 significant digits; fixed notation
    unless the scientific form is narrower, R's ``scipen = 0``): the one rule by which numbers
    become text in a formula — factor levels learned from data, declared levels, numbers in
    deparsed terms, and so design column names. Python and NumPy integers are labelled as the
    doubles R holds (``100000`` is ``"1e+05"``, as R's ``factor(c(1, 100000))`` labels it).

    Examples
    --------
    >>> r_number(1.0), r_number(0.1 + 0.2), r_number(6), r_number(True), r_number(1e5)
    ('1', '0.3', '6', 'TRUE', '1e+05')
    >>> [r_number(v) for v in (100000, 123456, 1 / 3, 1e15, 0.0001, -2.5e-7)]
    ['1e+05', '123456', '0.333333333333333', '1e+15', '1e-04', '-2.5e-07']
    """
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return "TRUE" if x else "FALSE"
    try:
        v = float(x)
    except OverflowError:                    # an int beyond the doubles: R's Inf
        v = math.inf if x > 0 else -math.inf
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    if v == 0:
        return "0"
    mant, exp = ("%.14e" % v).split("e")
    mant = mant.rstrip("0").rstrip(".")
    e = int(exp)
    sci = f"{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    nsig = len(mant.lstrip("-").replace(".", ""))
    fixed = f"{v:.{max(0, nsig - 1 - e)}f}"
    return fixed if len(fixed) <= len(sci) else sci   # R: fixed unless wider than scientific


_SYNTACTIC = re.compile(r"^(?:[^\W\d_]|\.(?![0-9]))[\w.]*$")
#: binary operators R deparses without spaces (``b/4``, ``a%%1``, ``x^2``, ``a:b``)
_NO_SPACE = {"^", ":", "/", "%%", "%/%"}


@functools.lru_cache(maxsize=4096)
def _quote_name(name: str) -> str:
    if _SYNTACTIC.fullmatch(name) and name not in _RESERVED and name != "." and \
            not re.fullmatch(r"\.\.(\.|\d+)", name) and name not in (
            "function", "if", "else", "repeat", "while", "for", "next", "break", "in"):
        return name
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def _quote_string(s: str) -> str:
    out = []
    for c in s:
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 32:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def deparse(node: Node) -> str:
    """R's ``deparse`` of a tree: the text R uses for term and column names.

    ``parse(deparse(t)) == t`` for every tree this module builds, up to the text of number
    literals: a number is written as R writes it (15 significant digits), or with all the digits
    it needs when 15 would read back as another number (R's deparse would change its value).

    Examples
    --------
    >>> deparse(parse("I(x>0&z<1.5)"))
    'I(x > 0 & z < 1.5)'
    >>> deparse(parse("factor(cyl, levels = c(4,6,8))"))
    'factor(cyl, levels = c(4, 6, 8))'
    >>> deparse(parse("I(x > 1e5) + I(x > 0.30000000000000004)"))
    'I(x > 1e+05) + I(x > 0.30000000000000004)'
    """
    if isinstance(node, Num):
        value = number_value(node)
        if node.text.endswith("L") or not math.isfinite(value):
            return node.text                 # (R prints Inf; the text keeps parse(deparse()))
        text = r_number(value)
        # R's 15 digits, unless they name another number (0.30000000000000004 would become
        # 0.3, 1.7976931348623151e+308 Inf): then the shortest text that reads back the same
        return text if float(text) == value else repr(value)
    if isinstance(node, Str):
        return _quote_string(node.value)
    if isinstance(node, Name):
        return _quote_name(node.id)
    if isinstance(node, Const):
        return node.id
    if isinstance(node, Dot):
        return "."
    if isinstance(node, Paren):
        return "(" + deparse(node.body) + ")"
    if isinstance(node, Unary):
        return node.op + deparse(node.operand)
    if isinstance(node, Binary):
        if node.op in _NO_SPACE:
            return deparse(node.left) + node.op + deparse(node.right)
        return f"{deparse(node.left)} {node.op} {deparse(node.right)}"
    if isinstance(node, Chain):
        parts = [deparse(node.operands[0])]
        for op, operand in zip(node.ops, node.operands[1:]):
            parts.append(op if op in _NO_SPACE else f" {op} ")
            parts.append(deparse(operand))
        return "".join(parts)
    if isinstance(node, Call):
        args = ", ".join((f"{_quote_name(a.name)} = " if a.name else "") + deparse(a.value)
                         for a in node.args)
        return f"{_quote_name(node.fn)}({args})"
    raise TypeError(f"not a formula node: {node!r}")


def children(node: Node) -> tuple:
    """The direct sub-trees of ``node``."""
    if isinstance(node, Paren):
        return (node.body,)
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Chain):
        return node.operands
    if isinstance(node, Call):
        return tuple(a.value for a in node.args)
    return ()


def walk(node: Node):
    """Every node of the tree, parents before children (iterative: no recursion limit)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def names_in(node: Node) -> list[str]:
    """The distinct names a tree reads, in order of first appearance (function names excluded).

    Examples
    --------
    >>> names_in(parse("log(x) + I(y > x) + b"))
    ['x', 'y', 'b']
    """
    out: dict[str, None] = {}
    for n in walk(node):
        if isinstance(n, Name):
            out.setdefault(n.id)
    return list(out)
