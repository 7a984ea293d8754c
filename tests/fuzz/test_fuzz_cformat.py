"""Fuzz the C-format reader (``privatelr.cformat.parse_cformat``): valid files, corrupted files
and random text.

Properties:

* a file written by ``write_cformat`` reads back bit for bit (``X``, ``y``, ``lambda``, ``eps``,
  ``h``);
* any text returns a :class:`CData` of consistent shape and values, or raises ``ValueError``
  (``CFormatError``) — nothing else, no ``RuntimeWarning`` either;
* the error message points at the problem: it names a line, and when it quotes "line L, token
  k: 'text'", the k-th token of the file is that text and it sits on line L.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .fuzzlib import clean_call, examples
from privatelr.cformat import CData, parse_cformat, write_cformat

#: features write_cformat accepts (|x| <= 1e150, as every fit does)
FINITE = st.one_of(st.floats(-1, 1), st.floats(-1e150, 1e150),
                   st.sampled_from([0.0, -0.0, 5e-324, 1e150, -1e-300]))


@st.composite
def valid_files(draw):
    """``(text, svm, X, y, lambda_, eps, h)`` from ``write_cformat``."""
    n, d = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    X = np.array(draw(st.lists(FINITE, min_size=n * d, max_size=n * d)),
                 dtype=np.float64).reshape(n, d)
    y = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n)))
    positive = st.one_of(st.floats(1e-300, 1e300), st.sampled_from([5e-324, 1e308, 1.0, 0.01]))
    lam, eps = draw(positive), draw(positive)
    h = draw(st.one_of(st.none(), st.floats(1e-300, 0.5), st.just(0.5)))
    buf = io.StringIO()
    write_cformat(buf, X, y, lambda_=lam, eps=eps, h=h)
    return buf.getvalue(), h is not None, X, y, lam, eps, h


JUNK = ["nan", "inf", "-inf", "1e999", "0x10", "1_000", "1,5", "--1", "+1", ".", "e5", "1e",
        "\u0661", "\x00", "\u22121", "1.5.2", "0", "-1", "2.5", "1e300", "-0", "0.7", "1e-320",
        "abc", "NaN", "Infinity", "1d5", "1E5", " ", "\t", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d",
        "\x1e", "\x1f", "\x85", "\xa0", "\u2028", "#", "'1'"]


@st.composite
def corrupted_files(draw):
    """A valid file with one to three token-level edits (or a flipped svm flag)."""
    text, svm, *_ = draw(valid_files())
    tokens = text.split(" ")
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(tokens) - 1))
        how = draw(st.sampled_from(["delete", "replace", "insert", "duplicate", "join"]))
        if how == "delete" and len(tokens) > 1:
            del tokens[i]
        elif how == "replace":
            tokens[i] = draw(st.sampled_from(JUNK))
        elif how == "insert":
            tokens.insert(i, draw(st.sampled_from(JUNK)))
        elif how == "duplicate":
            tokens.insert(i, tokens[i])
        elif how == "join" and i + 1 < len(tokens):
            tokens[i:i + 2] = [tokens[i] + draw(st.sampled_from(JUNK)) + tokens[i + 1]]
    return " ".join(tokens), draw(st.booleans()) if draw(st.integers(0, 4)) == 0 else svm


TEXTS = st.one_of(
    corrupted_files(), corrupted_files(), corrupted_files(),
    st.tuples(st.text(alphabet="0123456789 .-+e\n\t1", max_size=40), st.booleans()),
    st.tuples(st.text(max_size=20), st.booleans()),
)

#: the places a message quotes: "line L, token k: 'text'", "at line L, token k is 'text'",
#: "'text' at line L, token k"
_PLACES = [re.compile(r"line (\d+), token (\d+): '((?:[^'\\]|\\.)*)'"),
           re.compile(r"at line (\d+), token (\d+) is '((?:[^'\\]|\\.)*)'"),
           re.compile(r"'((?:[^'\\]|\\.)*)' at line (\d+), token (\d+)")]


def _token_lines(text: str) -> list[int]:
    """The line (1-based, counting newlines) of every token of ``text`` as ``str.split``
    splits it (the reader's tokens)."""
    lines, pos = [], 0
    for tok in text.split():
        pos = text.index(tok, pos)
        lines.append(text.count("\n", 0, pos) + 1)
        pos += len(tok)
    return lines


def check_places(text: str, msg: str) -> None:
    """Every place a message quotes is where that token is; "(end of file)" only when the
    file has no token there."""
    tokens, lines = text.split(), _token_lines(text)
    for i, pattern in enumerate(_PLACES):
        for m in pattern.finditer(msg):
            line, k, tok = (m.group(2), m.group(3), m.group(1)) if i == 2 else m.groups()
            line, k = int(line), int(k)
            assert k <= len(tokens) and repr(tokens[k - 1])[1:-1] == tok, (msg, tokens[:12])
            assert lines[k - 1] == line, (msg, lines[k - 1])
    if "(end of file)" in msg:
        assert "ends early" in msg or "found 0" in msg or \
            not re.search(r"\(end of file\)(: | is )'", msg), msg


def _parse_property(text: str, svm: bool):
    data, exc = clean_call(lambda: parse_cformat(text, svm=svm), allowed=(ValueError,))
    if exc is not None:
        msg = str(exc)
        assert "line" in msg or "header needs" in msg, msg
        check_places(text, msg)
        return
    assert isinstance(data, CData)
    n, d = data.X.shape
    assert data.y.shape == (n,) and set(np.unique(data.y).tolist()) <= {-1.0, 1.0}
    assert np.isfinite(data.X).all() and data.lambda_ > 0 and data.eps > 0
    assert (data.h is None) != svm and (data.h is None or 0 < data.h <= 0.5)


@settings(max_examples=examples(100))
@given(case=valid_files())
def test_written_files_read_back_bit_for_bit(case):
    text, svm, X, y, lam, eps, h = case
    data, exc = clean_call(lambda: parse_cformat(text, svm=svm))
    assert exc is None, exc
    assert np.array_equal(data.X, X) and np.array_equal(data.y, y)
    assert (data.lambda_, data.eps, data.h) == (lam, eps, h)


@pytest.mark.heavy
@settings(max_examples=examples(600))
@given(case=TEXTS)
@example(case=("2 1 0.1 1 0.5 -0.5 1 -1", False))
@example(case=("2 1 0.1 1\n0.5\x1cabc\n-0.5 1 -1", False))      # \x1c splits tokens, as in C
@example(case=("2 1 0.1 1\n0.5\x1c-0.5\n1\n0", False))
def test_any_text_reads_or_is_refused_with_its_place(case):
    _parse_property(*case)
