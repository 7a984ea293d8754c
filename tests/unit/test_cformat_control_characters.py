"""C-format files: characters Python's str.split() takes for whitespace but C's fscanf does
not (ASCII 0x1c-0x1f) are refused by name, so that every line/token a message names is where
the problem is (found by tests/fuzz/test_fuzz_cformat.py: the reader split at them, the error
locator did not, and messages pointed at the wrong line or claimed 'end of file')."""

from __future__ import annotations

import pytest

from privatelr.cformat import CFormatError, parse_cformat


@pytest.mark.parametrize("text, line", [
    ("2 1 0.1 1\n0.5\x1cabc\n-0.5 1 -1", 2),        # before: "line 3, token 6: 'abc'"
    ("2 1 0.1 1\n0.5\x1c-0.5\n1\n0", 2),            # before: "label 2 at line 4 (end of file)"
    ("1\x1d1 0.1 1 0.5 1", 1),
    ("2 1 0.1 1\n0.5\n-0.5\n1\x1e\n1", 4),
    ("\x1f", 1),
])
def test_python_only_whitespace_is_refused_with_its_line(text, line):
    with pytest.raises(CFormatError, match=rf"<string>: line {line}: control character '\\x1"):
        parse_cformat(text)


def test_c_whitespace_still_separates_numbers():
    data = parse_cformat("2\t1\v0.1\f1\r\n0.5\n-0.5 1 -1")
    assert data.X.ravel().tolist() == [0.5, -0.5] and data.y.tolist() == [1.0, -1.0]
    with pytest.raises(CFormatError, match=r"line 2, token 5: 'x'"):
        parse_cformat("2 1 0.1 1\nx\t0.5 1 -1")
