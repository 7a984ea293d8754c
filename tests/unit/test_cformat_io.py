"""privatelr.cformat: the C programs' ASCII format, read and write."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

from privatelr import PrivacyWarning
from privatelr.cformat import CData, CFormatError, parse_cformat, read_cformat, write_cformat
from privatelr.datasets import data_path


def _random_data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= 1.01 * np.linalg.norm(X, axis=1).max()  # inside the unit ball
    X[0, 0] = 1e-300  # extremes of the double range must survive too
    X[1, 1] = -0.1 + 2 ** -52
    y = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
    return X, y


@pytest.mark.parametrize("h", [None, 0.5, 0.123456789012345])
def test_round_trip_is_exact(tmp_path, h):
    X, y = _random_data()
    path = tmp_path / "data.txt"
    write_cformat(path, X, y, lambda_=0.0123456789, eps=0.7, h=h)
    back = read_cformat(path, svm=h is not None)
    assert isinstance(back, CData)
    assert back.X.dtype == np.float64 and back.X.shape == X.shape
    assert np.array_equal(back.X, X)  # bit for bit
    assert np.array_equal(back.y, y)
    assert back.lambda_ == 0.0123456789 and back.eps == 0.7 and back.h == h
    assert (back.n, back.d) == X.shape


def test_write_layout_matches_the_c_documentation():
    buf = io.StringIO()
    write_cformat(buf, [[0.5, 0.25], [0.0, -0.75], [0.1, 0.2]], [True, False, True],
                  lambda_=0.01, eps=2, h=0.5)
    lines = buf.getvalue().splitlines()
    assert lines[0].split() == ["3", "2", "0.01", "2.0", "0.5"]
    assert [len(line.split()) for line in lines[1:4]] == [2, 2, 2]
    assert lines[4:] == ["1", "-1", "1"]


def test_layout_free_whitespace_and_file_objects():
    text = "3 2\t0.5 1\n\n 0.1 0.2 0.3\n0.4 0.5 0.6   -1 1 -1\r\n"
    a = parse_cformat(text)
    assert a.X.tolist() == [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]
    assert a.y.tolist() == [-1.0, 1.0, -1.0]
    b = read_cformat(io.BytesIO(text.encode()))
    c = read_cformat(io.StringIO(text))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.X, c.X)
    # integral floats are accepted for n and d (the C code reads every number as a double)
    assert parse_cformat("2.0 1e0 0.5 1 0.1 0.2 1 1").n == 2


def test_shipped_examples():
    lr = read_cformat(data_path("example_lr.txt"))
    svm = read_cformat(data_path("example_svm.txt"), svm=True)
    assert lr.X.shape == svm.X.shape == (569, 6)
    assert np.array_equal(lr.X, svm.X) and np.array_equal(lr.y, svm.y)
    assert (lr.lambda_, lr.eps, lr.h) == (0.01, 1.0, None)
    assert svm.h == 0.5
    assert np.linalg.norm(lr.X, axis=1).max() <= 1.0
    assert int((lr.y == 1).sum()) == 212  # WDBC: 212 malignant, 357 benign
    assert np.ptp(lr.X[:, 0]) == 0  # constant (intercept) column


def test_norm_above_one_warns_and_names_rows():
    text = "3 2 0.5 1  0.6 0.6  0.9 0.9  0 1  1 -1 1"
    with pytest.warns(PrivacyWarning, match=r"1 of 3 rows have L2 norm above 1.*rows 2 \(line 1\)"):
        data = parse_cformat(text)
    assert data.X[1].tolist() == [0.9, 0.9]  # never rescaled
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_cformat(text, warn_norm=False)
        parse_cformat("1 2 0.5 1  0.6 0.8  1")  # norm exactly 1 is fine


GOOD = "2 2 0.5 1\n0.1 0.2\n0.3 0.4\n1\n-1\n"


@pytest.mark.parametrize("text, svm, pattern", [
    ("", False, r"header needs 4 numbers \(n d lambda eps\), found 0"),
    ("2 2 0.5", False, r"header needs 4 numbers"),
    ("2 2 0.5 1", True, r"header needs 5 numbers \(n d lambda eps h\), found 4"),
    ("2 2 0.5 1\n0.1 0.2\n0.3\n1\n-1\n", False,
     r"n\*d \+ n = 6 numbers must follow it; found 5 \(fewer numbers than expected: the file ends "
     r"early at line 6"),
    (GOOD + "1\n", False, r"found 7 \(more numbers than expected: the first extra number is '1' at "
     r"line 6, token 11"),
    ("2 2 0.5 1\n0.1 abc\n0.3 0.4\n1\n-1\n", False, r"line 2, token 6: 'abc' is not a number"),
    ("2 2 0.5 1\n0.1 0.2\n0.3 0,4\n1\n-1\n", False, r"line 3, token 8: '0,4' is not a number"),
    ("2 x 0.5 1\n", False, r"line 1, token 2: 'x' is not a number \(in the header\)"),
    ("2 2 0.5 1\n0.1 0.2\n0.3 1_0\n1\n-1\n", False, r"line 3, token 8: '1_0' is not a number"),
    ("2 2 0.5 1\n0.1 nan\n0.3 0.4\n1\n-1\n", False, r"line 2, token 6: 'nan' is not a finite"),
    ("2 2 0.5 1\n0.1 0.2\n0.3 0.4\n1\n0\n", False,
     r"label 2 at line 5, token 10 is '0'; labels must be -1 or 1"),
    ("2 2 0.5 1\n0.1 0.2\n0.3 0.4\n2\n-1\n", False, r"label 1 at line 4, token 9 is '2'"),
    ("0 2 0.5 1\n", False, r"line 1, token 1: n must be a positive integer, got '0'"),
    ("2.5 2 0.5 1\n", False, r"n must be a positive integer, got '2.5'"),
    ("2 -2 0.5 1\n", False, r"line 1, token 2: d must be a positive integer, got '-2'"),
    ("2 2 0 1\n", False, r"line 1, token 3: lambda must be > 0, got '0'"),
    ("2 2 -0.1 1\n", False, r"lambda must be > 0, got '-0.1'"),
    ("2 2 0.1 0\n", False, r"line 1, token 4: eps_p must be > 0, got '0'"),
    ("2 2 0.5 1 0\n", True, r"line 1, token 5: the Huber constant h must lie in \(0, 0.5\], got '0'"),
    ("2 2 0.5 1 0.6\n", True, r"h must lie in \(0, 0.5\], got '0.6'"),
    ("2 2 0.5 1\n0.1 0.2\n0.3 0.4\n1\n-1\n\u00e9", False, r"line 6: non-ASCII character"),
])
def test_malformed_input_names_the_problem(text, svm, pattern):
    with pytest.raises(CFormatError, match=pattern) as info:
        parse_cformat(text, svm=svm, source="f.txt")
    assert str(info.value).startswith("f.txt: ")
    assert isinstance(info.value, ValueError)


def test_svm_file_read_as_lr_hints():
    with pytest.raises(CFormatError, match="svmsimple file"):
        parse_cformat("2 2 0.5 1 0.5\n0.1 0.2\n0.3 0.4\n1\n-1\n")


def test_bad_byte_in_file(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"2 2 0.5 1\n0.1 0.2\n\xff 0.4\n1\n-1\n")
    with pytest.raises(CFormatError, match=r"bad.txt: line 3: byte 0xff is not ASCII"):
        read_cformat(path)


def test_first_bad_token_found_in_a_large_file():
    # The locator bisects the token list; check it picks the *first* bad token among several.
    X, y = _random_data(n=5000, d=4)
    buf = io.StringIO()
    write_cformat(buf, X, y, lambda_=0.1, eps=1)
    lines = buf.getvalue().splitlines()
    lines[3001] = "a " + lines[3001]
    lines[4000] = lines[4000] + " b"
    with pytest.raises(CFormatError, match=r"line 3002, token 12005: 'a' is not a number"):
        parse_cformat("\n".join(lines))


def test_write_validates_arguments():
    with pytest.raises(ValueError, match="y must be two-valued"):
        write_cformat(io.StringIO(), [[0.1]], [3], lambda_=1, eps=1)
    with pytest.raises(ValueError, match="lambda_ must be > 0"):
        write_cformat(io.StringIO(), [[0.1]], [1], lambda_=0, eps=1)
    with pytest.raises(ValueError, match="h must be <= 0.5"):
        write_cformat(io.StringIO(), [[0.1]], [1], lambda_=1, eps=1, h=0.7)
