"""The command line's words for the library's Python arguments: one table, Python -> flag.

The library's messages name its Python arguments (``levels={'g': [...]}``, ``clip=True``,
``inference=True``, ``data_norm=``, ``weights_bound=``, ``compat='PrivateLR'``,
``random_state``); a user of ``privatelr fit`` needs the flag (``--levels g=A,B,...``,
``--clip``, ``--inference``, ``--data-norm``, ``--weights-bound``, ``--compat PrivateLR``,
``--seed``). :data:`FLAG_FOR_ARGUMENT` is that table, :func:`cli_words` applies it; the command
line passes every error and warning of ``fit`` through it, and the hints of a printed summary
through :func:`summary_in_flags`. Messages the command line writes itself already name flags
and are not passed through.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["FLAG_FOR_ARGUMENT", "cli_words", "summary_in_flags"]

_Q = r"""(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""     # a Python repr of a string
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_END = r"(?=[\s.,;:)]|$)"                             # ``name=`` with nothing after it


def _unquote(text: str) -> str:
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.strip("'\"")
    return value if isinstance(value, str) else text


def _shell_word(text: str) -> str:
    """``text`` as one shell word (quoted when it has to be)."""
    import shlex

    return shlex.quote(text)


def _levels_flag(m) -> str:
    return "--levels " + _shell_word(f"{_unquote(m.group('col'))}=A,B,...")


def _bounds_flag(m) -> str:
    return "--bounds " + _shell_word(f"{_unquote(m.group('col'))}=LO,HI")


def _method_flag(m) -> str:
    more = m.group("more")
    return "--method " + _unquote(m.group("a")) + (
        "" if more is None else m.group("sep") + _unquote(more))


#: (pattern, replacement): a Python argument as the library writes it -> the flag to use.
FLAG_FOR_ARGUMENT: list[tuple[str, Any]] = [
    # declared levels
    (rf"levels=\{{(?P<col>{_Q}): \[[^\]]*\]\}}", _levels_flag),
    (r" \(or make the column a pandas Categorical with pd\.CategoricalDtype\(\[\.\.\.\]\)\)",
     " (or in a --levels-file, or the \"levels\" of a --bounds-file)"),
    (r" or a pandas Categorical", ""),
    (rf"levels\[(?P<col>{_Q})\] differs from the levels in bounds=",
     lambda m: f"--levels {_unquote(m.group('col'))}=... differs from the levels of "
               f"{_unquote(m.group('col'))} in the --bounds-file"),
    (rf"\blevels={_END}", "--levels"),
    (r"\. With a data frame and target=, column positions are 0-based", ""),
    # public bounds and the norm bound
    (r"privatelr\.public_bounds turns public bounds on the columns into data_norm",
     "--bounds COL=LO,HI (or --bounds-file) turns public bounds on the columns into "
     "--data-norm"),
    (r"\(privatelr\.public_bounds, or the bounds= argument of dplr\)",
     "(--bounds COL=LO,HI, or --bounds-file)"),
    (r"public_bounds\(\.\.\., center=False\)", "--no-center"),
    (rf"\b(?:bounds|ranges)=\{{(?P<col>{_Q}): \(lo, hi\)\}}", _bounds_flag),
    (r"(?:privatelr\.)?public_bounds(?:\(\.\.\.\))?", "--bounds"),
    (rf"\bbounds={_END}", "--bounds"),
    (r"in the data frame", "in the data file"),
    (r"^bounds: ", "--bounds: "),
    (rf"have L2 norm above data_norm=(?P<v>{_NUM})",
     r"have L2 norm above the bound \g<v> (--data-norm, or the one --bounds derives)"),
    (rf"\bdata_norm=(?P<v>{_NUM})", r"--data-norm \g<v>"),
    (r"(?<![*\w/(])data_norm(?![*/\w])", "--data-norm"),
    (r"\bclip=True\b", "--clip"),
    # the mechanism and its budget
    (rf"\bcompat=(?P<q>['\"])PrivateLR(?P=q)", "--compat PrivateLR"),
    (r"\(compat=None\)", "(no --compat)"),
    (rf"\bcompat={_END}", "--compat"),
    (rf"\bmethod=(?P<a>{_Q})(?:(?P<sep>/| or )(?P<more>{_Q}))?", _method_flag),
    (r"\bop=False\b", "--output-perturbation"),
    (rf"\bthreshold=(?P<v>{_Q})", lambda m: "--threshold " + _unquote(m.group("v"))),
    (r"\beps=inf\b", "--eps 0"),
    (rf"\beps=(?P<v>{_NUM})", r"--eps \g<v>"),
    (rf"\bdelta=(?P<v>{_NUM})", r"--delta \g<v>"),
    (rf"\bdelta={_END}", "--delta"),
    (r"\bdrop delta\b", "drop --delta"),
    (r"\binference=True\b", "--inference"),
    (rf"\binference=(?P<v>{_NUM})", r"--inference \g<v>"),
    (rf"\binference={_END}", "--inference"),
    (r"\blambda_=(?P<v>" + _NUM + ")", r"--lambda \g<v>"),
    (r"\bpass lambda_ explicitly", "pass --lambda explicitly"),
    (r"\blambda_ > 0", "--lambda > 0"),
    (r"\blambda_\b", "lambda"),
    # weights, scaling, projection, seed
    (r"\bweights_bound=<bound>", "--weights-bound A"),
    (rf"\bweights_bound=(?P<v>{_NUM})", r"--weights-bound \g<v>"),
    (rf"\bweights_bound={_END}", "--weights-bound"),
    (r"(?<![*\w/(])weights_bound(?![*/\w=])", "--weights-bound"),
    (r"^weights given without", "--weights given without"),
    (r"^weights must lie in", "the --weights values must lie in"),
    (rf"\bweights=(?P<v>{_Q})", lambda m: "--weights " + _unquote(m.group("v"))),
    (r"\bdo_scale=True\b", "--do-scale"),
    (r"\bdo_scale\b", "--do-scale"),
    (rf"\brp_dim=(?P<v>-?\d+)", r"--rp-dim \g<v>"),
    # the budget ledger
    (r"\braise_budget=True\b", "--raise-budget"),
    (rf"\bbudget={_END}", "--budget"),
    (r"\brandom_state(?:=\S+)?", "--seed"),
]
_FLAG_RULES = [(re.compile(p), r) for p, r in FLAG_FOR_ARGUMENT]


def cli_words(message: str) -> str:
    """A library message with every Python argument it names replaced by the ``fit`` flag
    (:data:`FLAG_FOR_ARGUMENT`).

    Examples
    --------
    >>> cli_words("Declare them: levels={'region': [...]}; or fit with eps=0 (not private)")
    'Declare them: --levels region=A,B,...; or fit with --eps 0 (not private)'
    >>> cli_words("pass clip=True to clip the rows")
    'pass --clip to clip the rows'
    """
    for pattern, replacement in _FLAG_RULES:
        message = pattern.sub(replacement, message)
    return message


_SUMMARY_RULES = [(re.compile(p), r) for p, r in FLAG_FOR_ARGUMENT
                  if any(word in p for word in ("inference", "public_bounds", "compat=",
                                                "lambda_"))]


def summary_in_flags(text: str) -> str:
    """A model's printed summary with its hints in flags (``refit with --inference``); only
    the hints change, never a number or a field."""
    for pattern, replacement in _SUMMARY_RULES:
        text = pattern.sub(replacement, text)
    return text
