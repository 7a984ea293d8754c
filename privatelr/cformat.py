r"""The ASCII file format of Chaudhuri, Sarwate and Monteleoni's ``lrsimple`` / ``svmsimple``.

The C programs (documentation of July 8, 2013, accompanying JMLR 12 (2011) 1069–1109) read one
ASCII text file of whitespace-separated decimal numbers:

1. the header: ``n d λ ε_p`` for logistic regression (``lrsimple``), ``n d λ ε_p h`` for the
   Huber SVM (``svmsimple``), where ``n`` is the number of training points, ``d`` their
   dimension, ``λ > 0`` the regulariser, ``ε_p`` the privacy parameter and ``h`` in ``(0, 0.5]``
   the Huber constant;
2. ``n`` feature vectors of ``d`` numbers each (one per line by convention);
3. ``n`` labels, each ``-1`` or ``1``.

Line breaks carry no meaning (the C programs read number after number), so this reader does not
require the rows to sit on their own lines, but every error names the line and the token
(1-based) where the problem is. Numbers must be plain decimal ASCII (``1``, ``-0.5``, ``2.5e-3``);
``nan``/``inf`` are rejected.

**Privacy.** The C code silently *assumes* ``‖x_i‖ ≤ 1`` for every row: the guarantees of output
and objective perturbation do not hold otherwise. :func:`read_cformat` checks the assumption and
issues one :class:`~privatelr.PrivacyWarning` naming the offending rows. Rows are never rescaled
here (rescaling with a data-dependent constant would itself leak); rescale with a public bound.

Shipped examples
----------------
``privatelr.datasets.data_path("example_lr.txt")`` and ``data_path("example_svm.txt")`` hold the
Wisconsin Diagnostic Breast Cancer data (UCI, Street, Wolberg & Mangasarian 1993; the copy bundled
with scikit-learn as ``load_breast_cancer``): all 569 tumours, label ``1`` = malignant,
``-1`` = benign, and ``d = 6`` features: a constant column (the intercept, which the C programs
do not add themselves) and five measurements (mean radius, mean texture, mean smoothness, mean
concave points, mean symmetry). Each measurement was standardised with its sample mean and
standard deviation, the constant column set to 1, every row divided by the same constant
``s = 1.0001 · max_i ‖x_i‖`` (so all rows lie in the unit ball) and rounded to 6 decimals.
Mean, standard deviation and ``s`` are computed from the data, so the privacy guarantee of a
fit concerns the *scaled* file, not the raw measurements: this is an example, not a template.
Headers: ``569 6 0.01 1`` (``example_lr.txt``) and ``569 6 0.01 1 0.5`` (``example_svm.txt``).

Examples
--------
>>> import io, numpy as np
>>> buf = io.StringIO()
>>> write_cformat(buf, np.array([[0.5, 0.25], [0.0, -0.75]]), [1, -1], lambda_=0.01, eps=1.0)
>>> print(buf.getvalue(), end="")
2 2 0.01 1.0
0.5 0.25
0.0 -0.75
1
-1
>>> data = read_cformat(io.StringIO(buf.getvalue()))
>>> data.n, data.d, data.lambda_, data.eps, data.h
(2, 2, 0.01, 1.0, None)
"""

from __future__ import annotations

import io
import os
import re
import warnings
from dataclasses import dataclass

import numpy as np

from ._validation import as_float_matrix, as_pm1_labels, check_real
from .exceptions import PrivacyWarning

__all__ = ["CData", "CFormatError", "read_cformat", "parse_cformat", "write_cformat"]


class CFormatError(ValueError):
    """A C-format input file is malformed; the message names the file, line and token."""


@dataclass(frozen=True)
class CData:
    """Contents of a C-format file.

    Attributes
    ----------
    X : (n, d) float64 array
        The feature vectors (no intercept column is added).
    y : (n,) float64 array
        Labels, each -1.0 or 1.0.
    lambda_ : float
        The regulariser λ > 0.
    eps : float
        The privacy parameter ε_p > 0.
    h : float or None
        The Huber constant (SVM files); None for logistic-regression files.
    """

    X: np.ndarray
    y: np.ndarray
    lambda_: float
    eps: float
    h: float | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


_WS = np.frombuffer(b" \t\n\r\v\f", dtype=np.uint8)
#: ASCII characters str.split() takes for whitespace but C's isspace() does not
_PY_ONLY_WS = re.compile("[\x1c-\x1f]")


def _token_locator(text: str):
    """Return ``where(k) -> 'line L, token k+1'`` for the k-th (0-based) token of ``text``.

    Vectorised over the bytes of the text; only used when reporting an error.
    """
    raw = np.frombuffer(text.encode("ascii", errors="replace"), dtype=np.uint8)
    ws = np.isin(raw, _WS)
    prev_ws = np.empty_like(ws)
    if ws.size:
        prev_ws[0] = True
        prev_ws[1:] = ws[:-1]
    starts = np.flatnonzero(~ws & prev_ws)
    line_of_byte = np.cumsum(raw == 10)  # newlines before or at each byte

    def where(k: int) -> str:
        if 0 <= k < starts.size:
            return f"line {int(line_of_byte[starts[k]]) + 1}, token {k + 1}"
        return f"line {int(line_of_byte[-1]) + 1 if raw.size else 1} (end of file)"

    return where


def _to_floats(tokens: list[str]) -> np.ndarray | int:
    """Convert tokens to float64; on failure return the index of the first bad token."""
    try:
        return np.array(tokens, dtype=np.float64)
    except ValueError:
        pass
    lo, hi = 0, len(tokens)  # invariant: the first bad token lies in tokens[lo:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            np.array(tokens[lo:mid], dtype=np.float64)
            lo = mid
        except ValueError:
            hi = mid
    return lo


def parse_cformat(text: str, *, svm: bool = False, source: str = "<string>",
                  warn_norm: bool = True) -> CData:
    """Parse the text of a C-format file (see the module docstring).

    Parameters
    ----------
    text : str
        The whole file.
    svm : bool
        True for the SVM variant (five header numbers, the last being ``h``).
    source : str
        Name used in error messages (the file name).
    warn_norm : bool
        Issue a :class:`~privatelr.PrivacyWarning` for rows of norm above 1.

    Returns
    -------
    CData

    Raises
    ------
    CFormatError
        With the line and token of the first problem found.

    Examples
    --------
    >>> parse_cformat("2 1 0.1 1  0.5 -0.5  1 -1").X.ravel().tolist()
    [0.5, -0.5]
    >>> parse_cformat("2 1 0.1 1  0.5 -0.5  1 0")
    Traceback (most recent call last):
    ...
    privatelr.cformat.CFormatError: <string>: label 2 at line 1, token 8 is '0'; labels must be -1 or 1
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    if not text.isascii():
        pos = next(i for i, ch in enumerate(text) if ord(ch) > 127)
        line = text.count("\n", 0, pos) + 1
        raise CFormatError(f"{source}: line {line}: non-ASCII character {text[pos]!r}; the file "
                           "must be ASCII text of decimal numbers")
    separator = _PY_ONLY_WS.search(text)
    if separator is not None:
        # Python's str.split() separates at these, C's fscanf("%lf") does not (and the line and
        # token numbers of every message count C's whitespace): refuse them by name.
        pos = separator.start()
        raise CFormatError(f"{source}: line {text.count(chr(10), 0, pos) + 1}: control "
                           f"character {text[pos]!r}; the file must be ASCII text of decimal "
                           "numbers separated by spaces, tabs or line breaks")
    where = None

    def loc(k: int) -> str:
        nonlocal where
        if where is None:
            where = _token_locator(text)
        return where(k)

    if "_" in text:
        k = next(i for i, t in enumerate(text.split()) if "_" in t)
        raise CFormatError(f"{source}: {loc(k)}: {text.split()[k]!r} is not a number "
                           "(plain decimal numbers only)")
    tokens = text.split()
    n_head = 5 if svm else 4
    names = "n d lambda eps h" if svm else "n d lambda eps"
    if len(tokens) < n_head:
        raise CFormatError(f"{source}: the header needs {n_head} numbers ({names}), found "
                           f"{len(tokens)}")
    values = _to_floats(tokens)
    if not isinstance(values, np.ndarray):
        k = values
        part = "header" if k < n_head else "data"
        raise CFormatError(f"{source}: {loc(k)}: {tokens[k]!r} is not a number (in the {part})")
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.argmax(bad))
        raise CFormatError(f"{source}: {loc(k)}: {tokens[k]!r} is not a finite number")

    head = values[:n_head]
    for k, name in enumerate(("n", "d")):
        v = head[k]
        if not (v >= 1 and float(v).is_integer()):
            raise CFormatError(f"{source}: {loc(k)}: {name} must be a positive integer, got "
                               f"{tokens[k]!r}")
    n, d = int(head[0]), int(head[1])
    lam, eps = float(head[2]), float(head[3])
    if not lam > 0:
        raise CFormatError(f"{source}: {loc(2)}: lambda must be > 0, got {tokens[2]!r}")
    if not eps > 0:
        raise CFormatError(f"{source}: {loc(3)}: eps_p must be > 0, got {tokens[3]!r}")
    h = None
    if svm:
        h = float(head[4])
        if not (0 < h <= 0.5):
            raise CFormatError(f"{source}: {loc(4)}: the Huber constant h must lie in (0, 0.5], "
                               f"got {tokens[4]!r}")

    expected = n * d + n
    found = values.size - n_head
    if found != expected:
        detail = (f"the file ends early at {loc(values.size)}" if found < expected else
                  f"the first extra number is {tokens[n_head + expected]!r} at "
                  f"{loc(n_head + expected)}")
        if not svm and found == expected + 1:
            detail += "; is this an svmsimple file (5 header numbers)?"
        raise CFormatError(f"{source}: the header says n={n}, d={d}, so n*d + n = {expected} "
                           f"numbers must follow it; found {found} ({'fewer' if found < expected else 'more'}"
                           f" numbers than expected: {detail})")
    X = values[n_head:n_head + n * d].reshape(n, d)
    y = values[n_head + n * d:]
    bad = (y != 1.0) & (y != -1.0)
    if bad.any():
        i = int(np.argmax(bad))
        k = n_head + n * d + i
        raise CFormatError(f"{source}: label {i + 1} at {loc(k)} is {tokens[k]!r}; labels must be "
                           "-1 or 1")
    if warn_norm:
        _warn_norms(X, source, n_head, d, loc)
    return CData(X=X, y=y, lambda_=lam, eps=eps, h=h)


def _warn_norms(X: np.ndarray, source: str, n_head: int, d: int, loc) -> int:
    sq = np.einsum("ij,ij->i", X, X)
    over = np.flatnonzero(sq > 1.0 + 1e-12)
    if over.size:
        first = ", ".join(f"{i + 1} ({loc(n_head + i * d).split(',')[0]})" for i in over[:3])
        more = " ..." if over.size > 3 else ""
        warnings.warn(f"{source}: {over.size} of {X.shape[0]} rows have L2 norm above 1 (largest "
                      f"{np.sqrt(sq.max()):.4g}; rows {first}{more}): the C programs assume "
                      "||x|| <= 1 and the differential-privacy guarantee does not hold for these "
                      "rows. Rescale the features with a public bound.", PrivacyWarning,
                      stacklevel=3)
    return int(over.size)


def _read_text(source) -> tuple[str, str]:
    """Return (text, name) for a path, a Traversable or an open text/binary file."""
    if hasattr(source, "read"):
        raw = source.read()
        name = str(getattr(source, "name", "<file>"))
    elif hasattr(source, "read_bytes") and not isinstance(source, (str, bytes, os.PathLike)):
        raw, name = source.read_bytes(), str(getattr(source, "name", source))
    else:
        if not isinstance(source, (str, bytes, os.PathLike)):
            raise TypeError(f"source must be a path or an open file, got {type(source).__name__}")
        name = os.fsdecode(source)
        with open(source, "rb") as fh:
            raw = fh.read()
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("ascii")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            raise CFormatError(f"{name}: line {line}: byte {raw[exc.start]:#04x} is not ASCII; "
                               "the file must be ASCII text of decimal numbers") from None
    return raw, name


def read_cformat(source, *, svm: bool = False, warn_norm: bool = True) -> CData:
    """Read a C-format file (``lrsimple`` layout, or ``svmsimple`` layout when ``svm=True``).

    Parameters
    ----------
    source : str, os.PathLike, Traversable or file object
        The file (text or binary mode for file objects).
    svm : bool
        Expect the fifth header number ``h`` (Huber constant in (0, 0.5]).
    warn_norm : bool
        Issue a :class:`~privatelr.PrivacyWarning` if a row has norm above 1.

    Returns
    -------
    CData

    Raises
    ------
    CFormatError
        (a ``ValueError``) naming the line and token of the problem: too few or too many
        numbers, a non-numeric token, a label other than ±1, ``n`` or ``d`` not a positive
        integer, ``λ <= 0``, ``ε_p <= 0``, ``h`` outside (0, 0.5].

    Examples
    --------
    >>> from privatelr.datasets import data_path
    >>> data = read_cformat(data_path("example_svm.txt"), svm=True)
    >>> data.X.shape, data.lambda_, data.eps, data.h
    ((569, 6), 0.01, 1.0, 0.5)
    """
    text, name = _read_text(source)
    return parse_cformat(text, svm=svm, source=name, warn_norm=warn_norm)


def _fmt(v: float) -> str:
    return repr(float(v))  # shortest string that reads back to the same double


def write_cformat(dest, X, y, *, lambda_: float, eps: float, h: float | None = None) -> None:
    """Write a C-format file that :func:`read_cformat` reads back exactly (bit for bit).

    Numbers are written with Python's shortest round-trip representation (``repr``), one
    feature vector per line, then one label per line.

    Parameters
    ----------
    dest : str, os.PathLike or text file object
    X : (n, d) array
        Feature vectors (add an intercept column yourself if you want one).
    y : (n,) array
        Labels as 0/1, bool or -1/+1 (written as -1/1).
    lambda_ : float
        λ > 0.
    eps : float
        ε_p > 0.
    h : float, optional
        Huber constant in (0, 0.5]; given → the SVM layout (five header numbers).

    Examples
    --------
    >>> import io
    >>> buf = io.StringIO()
    >>> write_cformat(buf, [[0.1], [0.2]], [0, 1], lambda_=0.5, eps=2, h=0.5)
    >>> buf.getvalue().split()
    ['2', '1', '0.5', '2.0', '0.5', '0.1', '0.2', '-1', '1']
    """
    X = as_float_matrix("X", X)
    n, d = X.shape
    labels = as_pm1_labels("y", y, n)
    lambda_ = check_real("lambda_", lambda_, low=0.0, low_open=True)
    eps = check_real("eps", eps, low=0.0, low_open=True)
    header = [str(n), str(d), _fmt(lambda_), _fmt(eps)]
    if h is not None:
        header.append(_fmt(check_real("h", h, low=0.0, high=0.5, low_open=True)))
    buf = io.StringIO()
    buf.write(" ".join(header) + "\n")
    # Blocks of rows so that huge matrices never become one giant list of strings. Each number
    # is repr()'d through map (C level) and followed by " " or, at the end of a row, "\n" (an
    # object-array addition): no Python code runs per row or per number.
    step = max(1, 262144 // d)
    for start in range(0, n, step):
        block = X[start:start + step]
        texts = np.array(list(map(repr, block.ravel().tolist())), dtype=object)
        seps = np.full(block.shape, " ", dtype=object)
        seps[:, -1] = "\n"
        buf.write("".join((texts.reshape(block.shape) + seps).ravel().tolist()))
    buf.write("\n".join(np.where(labels > 0, "1", "-1").tolist()) + "\n")
    text = buf.getvalue()
    if hasattr(dest, "write"):
        dest.write(text)
    else:
        with open(dest, "w", encoding="ascii", newline="\n") as fh:
            fh.write(text)
