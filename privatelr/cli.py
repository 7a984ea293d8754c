"""The ``privatelr`` command line."""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import re
import stat
import sys
import warnings
from collections.abc import Mapping
from typing import Any


from .cli_words import cli_words, summary_in_flags
from .progress import progress_bar


#: The demo's public bounds: every iris measurement used here is under 10 cm (a fact about the
#: plants, known before any flower is measured; never computed from the rows).
_DEMO_RANGES = {"Sepal.Length": (0, 10), "Sepal.Width": (0, 10), "Petal.Length": (0, 10),
                "Petal.Width": (0, 10)}
_DEMO_FORMULA = "I(Species == 'virginica') ~ ."
_DEMO_EPS = (0.5, 1.0, 2.0, 5.0)
_DEMO_DRAWS = 100


def _demo(args) -> int:
    """What privacy costs: one model on R's iris data, fitted privately at eps = 0.5, 1, 2 and 5
    with public bounds (the default data_norm their map implies), next to the non-private fit
    (glm's, eps = 0): one draw's coefficients, then accuracy and C-index over many draws of
    the noise; then the eps = 1 fit's summary and the same fit on the command line."""
    import numpy as np

    from . import dplr, public_bounds
    from .datasets import load_iris
    from .mechanisms import check_random_state

    iris = load_iris()
    truth = (iris["Species"] == "virginica").to_numpy()
    X = np.column_stack([np.ones(len(iris)), iris[list(_DEMO_RANGES)].to_numpy(float)])
    pb = public_bounds(dict(_DEMO_RANGES))
    rng = check_random_state(args.seed)       # one generator: every fit's noise
    fits: list = []
    accuracy: list = []
    cindex: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # the demo says what each column is
        for eps in _DEMO_EPS:
            fits.append(dplr(_DEMO_FORMULA, iris, bounds=pb, eps=eps, random_state=rng))
            draws = [dplr(_DEMO_FORMULA, iris, bounds=pb, eps=eps, random_state=rng)
                     for _ in range(_DEMO_DRAWS)]
            # coefficients per cm: the linear predictor on the raw columns, at the 0.5 cut
            acc = [float(np.mean((X @ m.coefficients.to_numpy() > 0) == truth)) for m in draws]
            accuracy.append((float(np.mean(acc)), float(np.std(acc))))
            cindex.append(float(np.mean([m.CIndex for m in draws])))
        glm = dplr(_DEMO_FORMULA, iris, bounds=pb, eps=0, lambda_=0)
    fits.append(glm)
    accuracy.append((float(np.mean((X @ glm.coefficients.to_numpy() > 0) == truth)), None))
    cindex.append(glm.CIndex)

    ranges = ",\n".join(f"{' ' * 23}{name!r}: ({lo}, {hi})"
                         for name, (lo, hi) in _DEMO_RANGES.items()).lstrip()
    print("privatelr demo: what differential privacy costs, on R's iris data (150 flowers)\n")
    print(" The model: is a flower Iris virginica, given its four measurements in cm?")
    print(f'   dplr("{_DEMO_FORMULA}", iris, bounds=pb, eps=eps)')
    print(" Public bounds, known before any flower is measured (never computed from the rows):")
    print(f"   pb = public_bounds({{{ranges}}})".replace("'", '"'))
    print(f"   each column enters the fit as (x - 5)/5, so every row has norm <= data_norm = "
          f"{fits[0].data_norm:g}\n   (the default: the bound the map implies)\n")
    width, last = 11, 16
    head = "".join(f"{'eps = ' + format(e, 'g'):>{width}}" for e in _DEMO_EPS)
    print(f"{'':26}{'private':^{len(_DEMO_EPS) * width}}{'NOT PRIVATE':>{last}}")
    print(f"{'':26}{head}{'eps = 0 (glm)':>{last}}")

    def row(label: str, cells: list) -> None:
        print(f"   {label:<23}" + "".join(f"{c:>{width}}" for c in cells[:-1])
              + f"{cells[-1]:>{last}}")

    print(" one draw of the noise")
    for name in fits[0].coefficients.index:
        row(name, [f"{m.coefficients[name]:.3g}" for m in fits])
    row("lambda (penalty)", [f"{m.lambda_:.3g}" for m in fits])
    print(f" over {_DEMO_DRAWS} draws of the noise *")
    row("accuracy, mean", [f"{a:.2f}" for a, _ in accuracy])
    row("accuracy, sd", [f"{sd:.2f}" if sd is not None else "-" for _, sd in accuracy])
    row("C-index (AUC), mean", [f"{c:.3f}" for c in cindex])
    print("\n * on the training rows, without noise: diagnostics for this public data set, not"
          "\n   private releases.\n")
    print(" What privacy costs here. With 150 rows, the penalty lambda that the guarantee\n"
          " needs (the default spends eps/10 on it) shrinks every coefficient towards 0, so\n"
          " the probabilities stay near 1/2 and many virginica are missed at the 0.5 cut;\n"
          " the noise moves the coefficients from draw to draw (`privatelr demo --seed K`).\n"
          " The ranking of the flowers (the C-index) survives from eps = 1. A larger eps, or\n"
          " more rows, buys accuracy back; privatelr.inference_plan(n, eps, ...) says\n"
          " beforehand what a budget buys for standard errors.\n")
    print(" The eps = 1 fit, as `privatelr fit` prints it:\n")
    print(summary_in_flags(str(fits[1])))
    flags = [f"--bounds {name}={lo},{hi}" for name, (lo, hi) in _DEMO_RANGES.items()]
    print(" The same fit on the command line (iris.csv: privatelr.datasets.data_path), charged\n"
          " to a budget kept across runs:\n"
          f"   privatelr fit iris.csv --formula \"{_DEMO_FORMULA}\" --eps 1 \\\n"
          + "".join(f"       {' '.join(flags[i:i + 2])} \\\n" for i in range(0, len(flags), 2))
          + "       --ledger budget.json --budget 2 --out model.json")
    return 0


class _InputError(ValueError):
    """Bad input detected by the command line itself (exit code 2)."""


def _format_line(coef, convergence: int) -> str:
    # repr() is the shortest string that reads back to the same double.
    return " ".join(repr(float(c)) for c in coef) + f" {int(convergence)}"


def _cms_simple(args, *, svm: bool) -> int:
    """``lrsimple`` / ``svmsimple``: the C programs' three lines from one C-format file.

    Line 1: the non-private minimiser of (1/n) sum l(y_i w'x_i) + (lambda/2)||w||^2; line 2:
    output perturbation; line 3: objective perturbation with the C variant
    (eps' = eps - 2 log(1 + c/(n lambda)), refused when eps' < 1e-4). All three through
    privatelr.erm.fit, no intercept added, data_norm = 1. One Generator built from --seed
    feeds the output-perturbation then the objective-perturbation noise.
    """
    from . import erm
    from .cformat import read_cformat
    from .mechanisms import check_random_state

    data = read_cformat(sys.stdin if args.file == "-" else args.file, svm=svm, warn_norm=False)
    loss = "huber" if svm else "logistic"
    h = data.h if svm else 0.5
    common = dict(lambda_=data.lambda_, loss=loss, h=h, data_norm=1.0, solver=args.solver,
                  clip=args.clip)
    rng = check_random_state(args.seed)
    # rows outside the unit ball: clipped with --clip, otherwise the private fits refuse
    nonpriv = erm.fit(data.X, data.y, eps=0.0, **common)
    output = erm.fit(data.X, data.y, eps=data.eps, method="output", random_state=rng, **common)
    objective = erm.fit(data.X, data.y, eps=data.eps, method="objective", small_eps="error",
                        random_state=rng, **common)
    lines = [_format_line(r.coef, r.convergence) for r in (nonpriv, output, objective)]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _lrsimple(args) -> int:
    return _cms_simple(args, svm=False)


def _svmsimple(args) -> int:
    return _cms_simple(args, svm=True)


def _add_cms_parser(sub, name: str, svm: bool) -> None:
    kind = "Huber SVM" if svm else "logistic regression"
    header = "n d lambda eps_p h" if svm else "n d lambda eps_p"
    p = sub.add_parser(
        name, help=f"the C program {name}: private L2-regularised {kind} on a C-format file",
        description=(
            f"Fit L2-regularised {kind} to a file in the format of Chaudhuri, Sarwate and "
            f"Monteleoni's {name}.c ({header}, then n rows of d features, then n labels -1/1; "
            "rows must have norm <= 1) and print three lines: the non-private classifier, "
            "output perturbation, objective perturbation; each d numbers and the solver's "
            "convergence code (0 = converged). Objective perturbation uses the C variant: "
            "eps' = eps_p - 2 log(1 + c/(n lambda)), an error if eps' < 1e-4. No intercept is "
            "added (include a constant feature yourself)."),
        epilog=f"example: privatelr {name} $(python -c \"import privatelr.datasets as d; "
               f"print(d.data_path('example_{'svm' if svm else 'lr'}.txt'))\") --seed 1")
    p.add_argument("file", help="input file in the C programs' ASCII format ('-' = stdin)")
    p.add_argument("--seed", type=int, default=None,
                   help="random seed for the noise (default: OS entropy)")
    p.add_argument("--clip", action="store_true",
                   help="clip rows of norm above 1 onto the unit sphere (without it the "
                        "private fits refuse such rows: the guarantee needs ||x|| <= 1)")
    p.add_argument("--solver", choices=["auto", "newton", "lbfgs"], default="auto",
                   help="optimiser (default: auto; the C programs used L-BFGS)")
    p.set_defaults(func=_svmsimple if svm else _lrsimple)


# ---------------------------------------------------------------------------------------------
# fit / predict / summary
# ---------------------------------------------------------------------------------------------

#: Rows read at a time by ``privatelr predict`` (``--chunk-size``). At most one chunk of the
#: input (and its predictions) is held in memory: about ``chunk_size x (columns in the file)``
#: values while a chunk is parsed, ``chunk_size x (columns used)`` once it is scored.
DEFAULT_CHUNK_SIZE = 50_000

_PARQUET_EXT = (".parquet", ".pq", ".parq")


def _is_parquet(path: str) -> bool:
    return path.lower().endswith(_PARQUET_EXT)


def _name(path: str) -> str:
    """How messages call an input: its path, or ``stdin`` for ``-``."""
    return "stdin" if path == "-" else path


def _need_pyarrow():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise _InputError("reading Parquet needs pyarrow: pip install pyarrow (or "
                          "privatelr[parquet]); or convert the data to CSV") from None
    return pq


# ---- output paths --------------------------------------------------------------------------

def _same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file: the same path once links and ``..`` are
    resolved, or (both existing) the same inode, which also catches hard links."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one of them does not exist (yet) or cannot be examined
        return False


def _stream_id(stream) -> tuple | None:
    """``(st_dev, st_ino)`` of the file behind a standard stream when it is a regular file
    (a shell redirect ``< file`` / ``> file``), else None (a terminal, a pipe, no descriptor)."""
    try:
        st = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _file_id(path: str) -> tuple | None:
    """``(st_dev, st_ino)`` of the file ``path`` names (through symlinks), or None."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _check_out(out, inputs, *, force: bool = False) -> None:
    """Refuse an ``--out`` path that would destroy an input or cannot be written, or that
    names an existing file (unless ``force``: ``--force``), before anything is read or
    written. ``inputs``: (argument name, path) pairs; ``-`` is stdin.

    Files are compared by identity (device and inode, through symlinks and hard links), so
    ``--out data.csv`` is refused when ``data.csv`` is the DATA file under another name, and
    when DATA is ``-`` and standard input is redirected from it (``- < data.csv``). Writing to
    standard output (no ``--out``, or ``-``) is refused when the shell points standard output
    at an input file (``>> data.csv``): reading a file while appending to it never ends."""
    if out is None or out == "-":
        where = _stream_id(sys.stdout)
        for label, path in inputs:
            if where is None or path is None:
                continue
            if (_stream_id(sys.stdin) if path == "-" else _file_id(path)) == where:
                what = "the standard input that " + label + " '-' reads" if path == "-" else \
                    f"the input {label} ({path})"
                raise _InputError(f"standard output is {what}; writing to it would destroy "
                                  "the input: give --out another path")
        return
    target = _file_id(out)
    for label, path in inputs:
        if path == "-":
            if target is not None and target == _stream_id(sys.stdin):
                raise _InputError(f"--out {out} is the same file as the standard input that "
                                  f"{label} '-' reads; writing it would destroy the input: "
                                  "choose another --out path")
        elif path is not None and _same_file(out, path):
            raise _InputError(f"--out {out} is the same file as the input {label} ({path}); "
                              "writing it would destroy the input: choose another --out path")
    if os.path.isdir(out):
        raise _InputError(f"--out {out} is a directory: give the path of a file to write")
    parent = os.path.dirname(os.path.realpath(out))
    if not os.path.isdir(parent):
        raise _InputError(f"--out {out}: the directory {parent} does not exist; create it "
                          "first or choose another --out path")
    if os.path.isfile(out) and not force:  # a device or a pipe (/dev/null) is not replaced
        raise _InputError(f"--out {out} exists; give --force to replace it, or choose another "
                          "--out path")
    if os.path.isfile(out) and not os.access(out, os.W_OK):
        raise _InputError(f"--out {out} exists and is read-only: make it writable or choose "
                          "another --out path")


class _NamedWriter:
    """``write`` to ``fh``, reporting an OSError (a full disk, say) with the output's path."""

    def __init__(self, fh, path: str):
        self._fh, self._path = fh, path

    def write(self, text: str) -> int:
        with _naming(self._path):
            return self._fh.write(text)


@contextlib.contextmanager
def _naming(path: str):
    """An OSError without a file name (a write to an open file: a full disk, say) is reported
    as being about ``path`` (the ``--out`` the user gave), not as a bare errno."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), path) from None


@contextlib.contextmanager
def _output_file(path: str):
    """A text file for ``path``: written atomically (:func:`privatelr.envelope.atomic_write`),
    except for a device or pipe (``/dev/null``, a FIFO), which is written directly."""
    from .envelope import atomic_write

    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        special = False
    if special:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            yield _NamedWriter(fh, path)
    else:
        with atomic_write(path, "w", encoding="utf-8", newline="") as fh:
            yield _NamedWriter(fh, path)


# ---- reading CSV ---------------------------------------------------------------------------

@contextlib.contextmanager
def _csv_errors(path: str):
    """Report what pandas and the decoder find wrong with the CSV ``path`` as one-line input
    errors; a row with more fields than the header (pandas' ParserWarning with
    ``index_col=False``) is an error too, so that no field is dropped silently."""
    import pandas as pd

    name = _name(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            yield
    except pd.errors.EmptyDataError:
        raise _InputError(f"{name}: the file is empty (a CSV needs a header line)") from None
    except pd.errors.ParserWarning:
        raise _InputError(f"{name}: a row has more fields than the header line (only one empty "
                          "trailing field is accepted); every row needs one field per column"
                          ) from None
    except pd.errors.ParserError as exc:
        raise _InputError(f"{name}: not a readable CSV file ({_one_line(exc)})") from None
    except UnicodeDecodeError as exc:
        raise _InputError(f"{name}: the file is not UTF-8 text (byte "
                          f"0x{exc.object[exc.start]:02x}: {exc.reason}); save it as UTF-8"
                          ) from None


def _read_csv(path: str, **options):
    """``pandas.read_csv`` as the command line reads every CSV: each line is a row (a blank
    line is a row of missing values, so rows never shift), and no column becomes the index
    (``index_col=False``: a trailing comma on every row is an empty extra field, dropped)."""
    import pandas as pd

    return pd.read_csv(sys.stdin if path == "-" else path, skip_blank_lines=False,
                       index_col=False, **options)


def _check_columns(path: str, available, needed=()) -> None:
    """The header must name columns, including every one in ``needed``."""
    available = list(available)
    if not available:
        raise _InputError(f"{_name(path)}: the first line is blank; a CSV file starts with a "
                          "header line naming the columns")
    have = set(available)
    missing = [c for c in needed if c not in have]
    if missing:
        shown = available if len(available) <= 30 else available[:30] + ["..."]
        raise _InputError(f"{_name(path)} lacks column(s) {missing} used by the model; "
                          f"available: {shown}")


@contextlib.contextmanager
def _parquet_errors(path: str):
    """Report pyarrow's complaints about the Parquet file ``path`` as input errors naming it."""
    import pyarrow as pa

    try:
        yield
    except pa.ArrowException as exc:
        if isinstance(exc, OSError) and exc.filename is not None:
            raise
        raise _InputError(f"{path}: not a readable Parquet file ({_one_line(exc)})") from None


def _read_table(path: str):
    """The whole table (for ``fit``): CSV (``-`` = stdin) or Parquet. Column types are inferred
    (string columns become factors, whose levels a private fit needs declared with
    ``--levels``); missing values are empty fields and ``NA``, exactly as ``predict`` reads
    them."""
    if _is_parquet(path):
        pq = _need_pyarrow()
        with _parquet_errors(path):
            frame = pq.read_table(path).to_pandas()
        if frame.shape[0] == 0:
            raise _InputError(f"{path}: the Parquet data has no rows")
        return frame
    with _csv_errors(path):
        frame = _read_csv(path, keep_default_na=False, na_values=["", "NA"])
    _check_columns(path, frame.columns)
    if frame.shape[0] == 0:
        raise _InputError(f"{_name(path)}: the file has a header but no data rows")
    return frame


# ---- typed columns -------------------------------------------------------------------------

#: Types a model records for its data columns (``model.spec.variable_types``).
VARIABLE_TYPES = ("numeric", "logical", "character")

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
                     r"|(?i:[+-]?inf(?:inity)?|nan)")
_LOGICAL = {"TRUE": True, "T": True, "true": True, "True": True,
            "FALSE": False, "F": False, "false": False, "False": False}
_MISSING_TEXT = ("", "NA")


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _typed_columns(frame, types: Mapping, *, first_line: int = 1):
    """Convert the text columns of ``frame`` to the types a model recorded.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns of text, as read by ``read_csv(dtype=str, keep_default_na=False)``; missing
        values (NaN/None) are allowed too.
    types : mapping
        Column name -> ``"numeric"``, ``"logical"`` or ``"character"``. Every column of
        ``frame`` needs an entry.
    first_line : int
        The data line number of the first row (1 = the first line after the header); error
        messages count from it.

    Returns
    -------
    pandas.DataFrame
        Same index and columns. A field that is empty or ``NA`` is missing. ``numeric``: float64
        (a decimal number, ``Inf``/``-Inf``/``NaN`` in any case; spaces around it are ignored).
        ``logical``: pandas' nullable ``boolean`` from R's ``TRUE``/``FALSE``/``T``/``F``/
        ``true``/``false``/``True``/``False``. ``character``: the text unchanged (``"01"`` stays
        ``"01"``). The result depends only on each field's text, never on the other rows, so it
        is the same for every chunk size.

    Raises
    ------
    ValueError
        A field that is not of its column's type, e.g. ``column 'mpg', line 7: 'abc' is not a
        number``; a column without a recorded type, or a type this function does not know.
    """
    import numpy as np

    import pandas as pd

    out = {}
    for name in frame.columns:
        kind = types.get(name) if isinstance(name, str) else None
        if kind not in VARIABLE_TYPES:
            what = "no type" if kind is None else f"the type {kind!r}"
            raise ValueError(f"column {name!r}: the model records {what} for it (expected one "
                             f"of {', '.join(VARIABLE_TYPES)})")
        column = frame[name].reset_index(drop=True)
        missing = np.array(column.isna(), dtype=bool)  # a writable copy
        if kind == "numeric":
            values = _arrow_numbers(column, missing)
            if values is not None:             # every field a number or missing
                out[name] = pd.Series(values, index=frame.index)
                continue
        # every field as a str (a no-op for the string columns read_csv(dtype=str) gives)
        text = column.where(~missing, "").astype(str)
        if kind == "character":
            missing |= np.asarray(text.isin(_MISSING_TEXT), dtype=bool)
            kept = column.where(~missing)  # the text as read; missing fields are NaN
            out[name] = pd.Series(kept.array, index=frame.index, dtype=kept.dtype)  # no copy
            continue
        bare = text.str.strip()
        missing |= np.asarray(bare.isin(_MISSING_TEXT), dtype=bool)
        if kind == "numeric":
            valid = np.asarray(bare.str.fullmatch(_NUMBER).fillna(False), dtype=bool)
            problem = "is not a number"
        else:
            mapped = bare.map(_LOGICAL)
            valid = np.asarray(mapped.notna(), dtype=bool)
            problem = "is not a logical value (TRUE/FALSE, T/F, true/false or True/False)"
        bad = np.flatnonzero(~(missing | valid))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"column {name!r}, line {first_line + i}: {_shown(text.iloc[i])} "
                             f"{problem}")
        present = ~missing
        if kind == "numeric":
            values = np.full(len(text), np.nan)
            values[present] = bare.to_numpy(dtype=object)[present].astype(np.float64)
            out[name] = pd.Series(values, index=frame.index)
        else:
            values = np.array(mapped.to_numpy(dtype=object), dtype=object)  # writable
            values[missing] = None
            out[name] = pd.Series(pd.array(values, dtype="boolean"), index=frame.index)
    return pd.DataFrame(out, index=frame.index, columns=frame.columns)


def _arrow_numbers(column, missing):
    """A numeric column's values by pyarrow's compute kernels, or None (no pyarrow, or some
    field that is neither a number nor missing: then the Python path reports it).

    Same acceptance as the Python path: fields trimmed of white space, ``""``/``NA`` missing,
    the rest must match ``_NUMBER`` in full (RE2 runs the same expression). Same values: for
    every text that expression accepts, Arrow's string-to-double cast is correctly rounded, as
    Python's ``float`` is (checked on special values and random 17–25 digit decimals in
    tests/cli/test_typed_numbers.py). A field Arrow's trimming would leave differently from
    ``str.strip`` (exotic control characters) fails the match and goes to the Python path.
    """
    import numpy as np

    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    try:
        arr = pa.array(column, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    bare = pc.utf8_trim_whitespace(arr)
    gone = np.asarray(pc.fill_null(pc.is_in(bare, pa.array(list(_MISSING_TEXT))), True)
                      .to_numpy(zero_copy_only=False), dtype=bool) | missing
    ok = pc.fill_null(pc.match_substring_regex(bare, f"^(?:{_NUMBER.pattern})$"), False)
    ok = np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)
    if not (ok | gone).all():
        return None
    values = pc.cast(pc.if_else(pa.array(ok & ~gone), bare, "nan"), pa.float64())
    out = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64).copy()
    out[gone] = np.nan
    return out


# ---- streaming -----------------------------------------------------------------------------

def _one_line(exc) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _iter_chunks(path: str, chunk_size: int, columns=None, passthrough: str | None = None,
                 on_total=None):
    """Yield the table ``chunk_size`` rows at a time, keeping no reference to a chunk once the
    next one is requested. With ``passthrough`` (a column name, ``--id``), yield pairs
    ``(chunk, ids)``: ``ids`` is that column exactly as the file has it (CSV: its text, an
    empty field as ``""``; Parquet: its values as text).

    ``columns``: keep only these (the variables the model uses); the file must have them. A
    mapping ``{column: recorded type}`` also reads those CSV columns as text and converts them
    with :func:`_typed_columns` (Parquet keeps its stored types); a regular CSV file is then read
    by pyarrow (:func:`_arrow_text_chunks`), any other by pandas. Every line of a CSV is a row
    (see :func:`_read_csv`), so the chunks together have exactly one row per data line.

    ``on_total(rows)`` is called with the number of rows when it is known before the chunks
    are read: a Parquet file's metadata, or the checking pass of a CSV read by pyarrow (no
    extra read). It is not called otherwise (stdin, a CSV read by pandas).
    """
    types = columns if isinstance(columns, Mapping) else None
    keep = None if columns is None else list(columns)
    if passthrough is not None:
        inner = _iter_chunks(path, chunk_size, columns, None, on_total)
        for chunk, ids in _with_ids(path, chunk_size, passthrough, inner):
            yield chunk, ids
            del chunk, ids
        return
    if _is_parquet(path):
        pq = _need_pyarrow()
        with _parquet_errors(path):
            pf = pq.ParquetFile(path)
            names = pf.schema_arrow.names
            if on_total is not None:
                on_total(int(pf.metadata.num_rows))
        if keep is not None:
            _check_columns(path, names, keep)
            names = [c for c in names if c in set(keep)]
        batches = pf.iter_batches(batch_size=chunk_size, columns=names)
        end: Any = object()
        while True:
            with _parquet_errors(path):
                batch = next(batches, end)
            if batch is end:
                break
            chunk = batch.to_pandas()
            del batch
            yield chunk
            del chunk
        return
    chunks = _arrow_text_chunks(path, chunk_size, keep, on_total) if types is not None else None
    if chunks is None:  # not a regular file, no types recorded, or no pyarrow
        chunks = _pandas_chunks(path, chunk_size, keep, types)
    rows = 0
    for chunk in chunks:
        if types is not None:
            try:
                chunk = _typed_columns(chunk, types, first_line=rows + 1)
            except ValueError as exc:
                raise _InputError(f"{_name(path)}: {exc}") from None
        rows += len(chunk)
        yield chunk
        del chunk  # so that the next read does not overlap with this chunk


def _pandas_chunks(path: str, chunk_size: int, keep, types):
    """The CSV ``path`` by pandas' reader (:func:`_read_csv`), ``chunk_size`` rows at a time,
    with only the columns ``keep`` (all when None); with ``types``, those columns as text."""
    # All columns are parsed (pandas' usecols would skip its check that no row has more fields
    # than the header); the unused ones are dropped at once.
    options: dict[str, Any] = {"chunksize": chunk_size}
    if types is not None:
        options.update(dtype={c: str for c in types}, keep_default_na=False, na_values=[""])
    with _csv_errors(path):
        reader = _read_csv(path, **options)
    end: Any = object()
    first = True
    with reader:
        while True:
            with _csv_errors(path):
                raw = next(reader, end)
            if raw is end:
                break
            if first:
                _check_columns(path, raw.columns, keep or ())
                first = False
            if keep is None:
                chunk = raw
            else:
                wanted = set(keep)
                chunk = raw[[c for c in raw.columns if c in wanted]]
            del raw
            yield chunk
            del chunk


#: Bytes pyarrow's CSV reader parses at a time (its blocks are parsed in parallel).
_ARROW_BLOCK = 1 << 22


def _arrow_text_chunks(path: str, chunk_size: int, keep, on_total=None):
    """The text columns ``keep`` of the CSV file ``path``, ``chunk_size`` rows at a time, read
    by pyarrow's multithreaded CSV reader — or None, and the caller reads the file with pandas
    (:func:`_read_csv`), whose rules the command line documents.

    The two readers give the same text for a *regular* file: UTF-8, a header of distinct, non-
    blank names, and one field per column on every line (a blank line is a row of empty fields,
    a quoted field may hold commas, quotes and line breaks; an empty field is missing). Before
    anything is yielded, one pass over the whole file checks that it is regular (every column
    decoded as text, every line's field count); a file that is not — a short or long row, a
    trailing comma, text that is not UTF-8, repeated column names, stdin — goes to pandas,
    which gives the documented rows or errors. The check costs about as much as the read
    (0.3 s per 1e6 rows of eight columns, where pandas' reader took 2–3 s). The check counts
    the rows: ``on_total(rows)`` is told the count once the file is known to be regular.
    """
    if path == "-":
        return None
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        return None
    irregular = []

    def note(row):
        irregular.append(row)
        return "skip"

    def reader(names, columns, on_irregular=note):
        return pacsv.open_csv(
            path, read_options=pacsv.ReadOptions(block_size=_ARROW_BLOCK),
            parse_options=pacsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False,
                                             invalid_row_handler=on_irregular),
            convert_options=pacsv.ConvertOptions(
                column_types={c: pa.string() for c in names}, include_columns=columns,
                strings_can_be_null=True, quoted_strings_can_be_null=True, null_values=[""]))

    try:
        with reader([], None) as head:
            names = head.schema.names
        if not names or len(set(names)) != len(names) or "" in names:
            return None
        _check_columns(path, names, keep)
        rows = 0
        with reader(names, None) as whole:  # the check: nothing is kept
            for batch in whole:
                if irregular:
                    return None
                rows += batch.num_rows
        if irregular:
            return None
    except (pa.ArrowException, OSError, UnicodeError):
        return None
    # the read: a row the check did not see (the file changed since) stops it, never skipped
    read = reader(names, [c for c in names if c in set(keep)], lambda row: "error")
    if on_total is not None:
        on_total(rows)
    return _arrow_chunks(read, chunk_size, path)


def _arrow_chunks(batches, chunk_size: int, path: str):
    """pandas chunks of exactly ``chunk_size`` rows (the last one shorter) from a stream of
    Arrow record batches, indexed by row number as pandas' chunked reader indexes them."""
    import pandas as pd
    import pyarrow as pa

    def each():
        try:
            yield from batches
        except pa.ArrowException as exc:
            raise _InputError(f"{_name(path)} changed while it was read ({_one_line(exc)}); "
                              "predict it again from a file that is not being written") from None

    pending, have, rows = [], 0, 0
    with batches:
        for batch in each():
            pending.append(batch)
            have += batch.num_rows
            while have >= chunk_size:
                table = pa.Table.from_batches(pending)
                chunk, rest = table.slice(0, chunk_size), table.slice(chunk_size)
                pending, have = rest.to_batches(), rest.num_rows
                frame = chunk.to_pandas()
                frame.index = pd.RangeIndex(rows, rows + len(frame))
                rows += len(frame)
                yield frame
        if have:
            frame = pa.Table.from_batches(pending).to_pandas()
            frame.index = pd.RangeIndex(rows, rows + len(frame))
            yield frame


def _with_ids(path: str, chunk_size: int, column: str, chunks):
    """Pair each chunk of ``chunks`` with the text of ``column`` for the same rows, read in a
    second, lock-step pass over the file (CSV as ``str``; stdin cannot be read twice)."""
    if path == "-":
        raise _InputError("--id needs DATA as a file (stdin cannot be read a second time)")
    if _is_parquet(path):
        pq = _need_pyarrow()
        with _parquet_errors(path):
            pf = pq.ParquetFile(path)
            if column not in pf.schema_arrow.names:
                raise _InputError(f"{path} has no column {column!r} (--id)")
            batches = pf.iter_batches(batch_size=chunk_size, columns=[column])
        texts = (b.to_pandas()[column].astype(object).where(
            lambda s: s.notna(), "").astype(str) for b in batches)
    else:
        with _csv_errors(path):
            reader = _read_csv(path, chunksize=chunk_size, dtype=str, keep_default_na=False,
                               na_values=[])
        first = True

        def csv_texts():
            nonlocal first
            with reader:
                for raw in reader:
                    if first and column not in raw.columns:
                        raise _InputError(f"{_name(path)} has no column {column!r} (--id)")
                    first = False
                    yield raw[column].fillna("")
        texts = csv_texts()
    for chunk in chunks:
        with _csv_errors(path):
            ids = next(texts)
        if len(ids) != len(chunk):
            raise _InputError(f"{_name(path)}: the --id column and the data differ in length")
        yield chunk, ids


def predict_stream(model, source: str, out, *, type: str = "probabilities",
                   chunk_size: int = DEFAULT_CHUNK_SIZE, id_column: str | None = None,
                   progress: bool | None = False) -> dict:
    """Score ``source`` (CSV or Parquet path, ``-`` for stdin) chunk by chunk, writing CSV to
    ``out`` (a text file object): a header line ``probability`` (or ``class``), then one line
    per input row, ``""`` (empty) for rows with a missing value. Returns ``{"rows", "chunks",
    "max_chunk_rows"}``.

    Only the columns the model's formula uses are kept, ``chunk_size`` rows at a time, and no
    chunk is kept once written, so memory does not grow with the input. Every CSV line is a row
    (a blank line gets an empty prediction); a header-only file gives the header line alone.
    When the model records its columns' types (``model.spec.variable_types``), CSV columns are
    read as text and converted to those types (:func:`_typed_columns`), the same way for every
    chunk size; otherwise pandas infers each chunk's types.
    """
    name = "probability" if type == "probabilities" else "class"
    variables = list(model.spec.variables)
    types = getattr(model.spec, "variable_types", None)
    columns = variables if types is None else {v: types.get(v) for v in variables}
    header = name + "\n"  # written with the first scored chunk: nothing at all if that fails
    if id_column is not None:
        header = _csv_field(id_column) + "," + header
    rows = chunks = biggest = 0
    # the rows of the input: shown on the data holder's terminal only, never written to out
    bar = progress_bar(None, desc="predict", unit=" rows", enabled=progress, not_private=True)

    def total(count: int) -> None:
        if bar is not None:
            bar.total = count
            bar.refresh()

    try:  # the bar is closed on any error, so the error line starts a line of its own
        for item in _iter_chunks(source, chunk_size, columns=columns, passthrough=id_column,
                                 on_total=total):
            chunk, ids = item if id_column is not None else (item, None)
            n = len(chunk)
            if n == 0:  # a header-only file: nothing to score
                del chunk, item
                continue
            pred = model.predict(chunk, type="probabilities" if name == "probability" else "class")
            del chunk, item
            lines = _csv_lines(pred, probabilities=name == "probability")
            if ids is not None:
                lines = "".join(_csv_field(i) + "," + line + "\n"
                                for i, line in zip(ids.tolist(), lines.splitlines()))
            out.write(header + lines)
            header = ""
            del pred
            rows, chunks, biggest = rows + n, chunks + 1, max(biggest, n)
            if bar is not None:
                bar.update(n)
    finally:
        if bar is not None:
            bar.close()
    out.write(header)
    return {"rows": rows, "chunks": chunks, "max_chunk_rows": biggest}


def _csv_field(text: str) -> str:
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _csv_lines(pred, *, probabilities: bool) -> str:
    """One CSV line per prediction: shortest round-trip float text (``repr``), or the class
    label; an empty field for a row with a missing value. No per-row Python code: ``map`` over
    C-level conversions, and only the few distinct labels are formatted. The empty field is
    written ``""`` (as Python's csv module does for a one-column row)."""
    import numpy as np

    values = pred.tolist()
    if not values:
        return ""
    if probabilities:
        texts = list(map(repr, values))
        for i in np.flatnonzero(np.isnan(pred)).tolist():
            texts[i] = '""'  # an empty field, quoted so that it is not a blank line
    else:
        # a missing class is None (NumPy) or NaN (a pandas Categorical): an empty field
        text_of = {v: '""' if v is None or v != v else _csv_field(str(v)) for v in set(values)}
        texts = list(map(text_of.__getitem__, values))
    return "\n".join(texts) + "\n"


def _check_option(option: str, value, *, above: float, strict: bool) -> None:
    """A numeric option must be finite and > ``above`` (``strict``) or >= ``above``."""
    if value is None:
        return
    if not math.isfinite(value):
        raise _InputError(f"{option} must be a finite number, got {value}")
    if not (value > above if strict else value >= above):
        raise _InputError(f"{option} must be {'>' if strict else '>='} {above:g}, got {value}")


def _load_model(path: str):
    """:func:`privatelr.load_model`, with a pathological file reported as bad input."""
    from .persist import load_model

    try:
        return load_model(path)
    except RecursionError:  # e.g. '[[[[...' thousands deep: json gives up
        raise _InputError(f"{path}: not a privatelr model file (the JSON is nested too "
                          "deeply)") from None


def _fit(args) -> int:
    from ._dplr import dplr
    from .persist import save_model
    from .progress import reporting_passes

    _check_option("--eps", args.eps, above=0, strict=False)
    if args.eps == 0 and args.lambda_ == 0:   # glm's unpenalised fit, as dplr(lambda_=0, eps=0)
        pass
    elif args.lambda_ == 0:
        raise _InputError("--lambda 0 (no penalty) is only for a non-private fit (--eps 0): "
                          "the privacy noise needs a penalty > 0")
    else:
        _check_option("--lambda", args.lambda_, above=0, strict=True)
    _check_option("--data-norm", args.data_norm, above=0, strict=True)
    inputs = [("DATA", args.data)]
    for flag, path in (("--levels-file", args.levels_file), ("--bounds-file", args.bounds_file),
                       ("--ledger", args.ledger)):
        if path is not None:
            inputs.append((flag, path))
    _check_out(args.out, inputs, force=args.force)
    _check_option("--weights-bound", args.weights_bound, above=0, strict=True)
    if args.inference is not None and not 0 < args.inference < 1:
        raise _InputError(f"--inference must be a share of eps in (0, 1), got {args.inference}")
    levels = _parse_levels(args.levels or [], args.levels_file)
    bounds = _public_bounds(args)
    cost = _ledger_cost(args)       # (eps, delta) this run charges to --ledger, or None
    with _open_ledger(args) as ledger:
        if ledger is not None:        # before anything reads the data
            _check_budget(ledger, cost, args)
        bar = progress_bar(None, desc="fit", unit=" passes", not_private=True,
                           enabled=False if args.quiet else None)
        try:  # the bar is closed on any error, so the error line starts a line of its own
            _stage(bar, "reading")
            frame = _read_table(args.data)
            _stage(bar, "fitting")
            if args.weights is not None and args.weights not in frame.columns:
                raise _InputError(f"{_name(args.data)} has no column {args.weights!r} "
                                  "(--weights)")
            if args.data_norm is not None:
                data_norm = args.data_norm
            else:
                data_norm = None if bounds is not None else 1.0
            # R's verbose messages on stderr; the passes over the rows move the bar
            with contextlib.redirect_stdout(sys.stderr), \
                    reporting_passes(_PassCounter(bar)), _bounds_hint(bounds, args):
                model = dplr(args.formula, frame, lambda_=args.lambda_, eps=args.eps,
                             rp_dim=args.rp_dim, threshold=args.threshold,
                             do_scale=args.do_scale, op=not args.output_perturbation,
                             method=args.method, delta=args.delta, data_norm=data_norm,
                             clip=args.clip, random_state=args.seed, levels=levels or None,
                             bounds=bounds, compat=args.compat, verbose=args.verbose,
                             weights=args.weights, weights_bound=args.weights_bound,
                             inference=args.inference)
            del frame
            if ledger is not None:  # charged before anything is released (model, summary)
                assert cost is not None
                ledger.record(*cost, note=_ledger_note(args))
            _stage(bar, "saving")
            with _naming(args.out):  # atomically: a failed save leaves the old file as it was
                save_model(model, args.out)  # type: ignore[arg-type]  # binary: no --multiclass
            _stage(bar, None)
        finally:
            if bar is not None:
                bar.close()
    print(summary_in_flags(str(model)))
    sys.stderr.write(f"privatelr fit: model saved to {args.out}\n")
    if ledger is not None:
        assert cost is not None
        sys.stderr.write(f"privatelr fit: {_ledger_status(ledger, cost)}\n")
    return 0


@contextlib.contextmanager
def _bounds_hint(bounds, args):
    """With ``--bounds`` and the bound they imply, a row above the norm bound has a value
    outside its declared range: say so (the library's message speaks of ``data_norm``)."""
    try:
        yield
    except ValueError as exc:
        msg = str(exc)
        if bounds is None or args.data_norm is not None or "L2 norm above" not in msg:
            raise
        raise _InputError(
            cli_words(" ".join(msg.split()).split(" Choose data_norm")[0])
            + " With --bounds, such a row has a value outside its declared range (--bounds "
            "COL=LO,HI, --bounds-file): check the ranges (they must hold every possible value, "
            "chosen without looking at the rows), or pass --clip to clip such rows into the "
            "bound") from None


class _PassCounter:
    """Moves the fit's bar by whole passes over the rows (a warm start's subsample passes add
    their share). The count depends on the data: shown on the terminal, never released."""

    def __init__(self, bar):
        self._bar, self._total, self._shown = bar, 0.0, 0

    def __call__(self, share: float) -> None:
        if self._bar is None:
            return
        self._total += share
        whole = int(self._total + 1e-9)
        if whole > self._shown:
            self._bar.update(whole - self._shown)
            self._shown = whole


def _stage(bar, name: str | None) -> None:
    """Show the fit's stage ``name`` next to its bar (if shown); None: done."""
    if bar is None:
        return
    if name is None:
        bar.close()
    else:
        bar.set_postfix_str(name)


# ---- public bounds ---------------------------------------------------------------------------

def _bound_number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _InputError(f"{where}: {value!r} is not a number")
    value = float(value)
    if not math.isfinite(value):
        raise _InputError(f"{where}: the bounds must be finite numbers, got {value}")
    return value


def _check_range(col: str, lo: float, hi: float, where: str) -> tuple[float, float]:
    if not lo <= hi:
        raise _InputError(f"{where}: the lower bound {lo:g} of {col!r} is above the upper "
                          f"bound {hi:g}; write COLUMN=LO,HI")
    if lo == hi == 0:
        raise _InputError(f"{where}: the range of {col!r} is (0, 0); give a range that holds "
                          "the column's values")
    return lo, hi


def _parse_bounds(items: list, path: str | None) -> tuple[dict, dict]:
    """``--bounds COL=LO,HI`` (repeatable) and ``--bounds-file BOUNDS.json``
    (``{"ranges": {col: [lo, hi]}, "levels": {col: [...]}}``) as ``(ranges, levels)``."""
    import json

    ranges: dict = {}
    levels: dict = {}
    if path is not None:
        where = f"--bounds-file {path}"
        try:
            with open(path, encoding="utf-8") as fh:
                loaded = json.load(fh)
        except (OSError, ValueError, RecursionError) as exc:
            raise _InputError(f"{where}: not a readable JSON file ({_one_line(exc)})") from None
        shape = ('a JSON object {"ranges": {"column": [lo, hi], ...}, "levels": {"column": '
                 '["level", ...], ...}}')
        if not isinstance(loaded, dict) or not set(loaded) <= {"ranges", "levels"}:
            raise _InputError(f"{where}: must hold {shape}")
        file_ranges = loaded.get("ranges", {})
        if not isinstance(file_ranges, dict) or not all(
                isinstance(v, list) and len(v) == 2 for v in file_ranges.values()):
            raise _InputError(f"{where}: \"ranges\" must map each column to [lo, hi]; the "
                              f"file must hold {shape}")
        for col, (lo, hi) in file_ranges.items():
            ranges[col] = _check_range(col, _bound_number(lo, f"{where}, {col!r}"),
                                       _bound_number(hi, f"{where}, {col!r}"), where)
        file_levels = loaded.get("levels", {})
        if not isinstance(file_levels, dict) or not all(
                isinstance(v, list) and v and all(isinstance(x, (str, int, float, bool))
                                                  for x in v)
                for v in file_levels.values()):
            raise _InputError(f"{where}: \"levels\" must map each factor column to its list of "
                              f"levels (first = reference); the file must hold {shape}")
        levels.update(file_levels)
        if not ranges:
            raise _InputError(f"{where} holds no \"ranges\": give the public range of at least "
                              "one numeric column (a file of levels only is a --levels-file)")
    for item in items:
        col, sep, text = item.rpartition("=")
        parts = text.split(",")
        if not sep or not col or len(parts) != 2:
            raise _InputError(f"--bounds {item!r}: write COLUMN=LO,HI (e.g. --bounds age=18,90)")
        try:
            lo, hi = (float(v) for v in parts)
        except ValueError:
            raise _InputError(f"--bounds {item!r}: LO and HI must be numbers (e.g. --bounds "
                              "age=18,90)") from None
        if col in ranges:
            raise _InputError(f"--bounds: column {col!r} is bounded twice"
                              + (" (also in --bounds-file)" if path is not None else ""))
        for v in (lo, hi):
            _bound_number(v, f"--bounds {item!r}")
        ranges[col] = _check_range(col, lo, hi, f"--bounds {item!r}")
    return ranges, levels


def _public_bounds(args):
    """The :class:`~privatelr.PublicBounds` of ``--bounds``/``--bounds-file`` (None without
    them): the same public map as ``dplr(..., bounds=public_bounds(ranges, levels=...))``."""
    from .bounds import public_bounds

    ranges, levels = _parse_bounds(args.bounds or [], args.bounds_file)
    if not ranges:
        for flag, given in (("--norm", args.norm is not None), ("--no-center", args.no_center)):
            if given:
                raise _InputError(f"{flag} shapes the public map of --bounds; give --bounds "
                                  "COL=LO,HI (or --bounds-file) with it")
        return None
    return public_bounds(ranges, levels=levels or None, center=not args.no_center,
                         norm=args.norm or "max")


# ---- the budget ledger -----------------------------------------------------------------------

def _ledger_cost(args) -> tuple[float, float] | None:
    """``(eps, delta)`` this fit charges to ``--ledger`` (None without one), checked before
    anything is read: the whole ``--eps`` (the inference share is part of it) and, for the
    Gaussian methods, ``--delta``."""
    from .calibration import GAUSSIAN_METHODS, check_method

    if args.ledger is None:
        for flag, given in (("--budget", args.budget is not None),
                            ("--budget-delta", args.budget_delta is not None),
                            ("--raise-budget", args.raise_budget),
                            ("--note", args.note is not None)):
            if given:
                raise _InputError(f"{flag} belongs to a budget ledger: give --ledger FILE")
        return None
    _check_option("--budget", args.budget, above=0, strict=True)
    if args.budget_delta is not None and not 0 <= args.budget_delta < 1:
        raise _InputError(f"--budget-delta must be in [0, 1), got {args.budget_delta}")
    if args.eps == 0:
        raise _InputError("--eps 0 is a non-private fit, which has no finite privacy cost and "
                          "cannot be charged to --ledger; drop --ledger for a non-private fit")
    if args.compat is not None:
        raise _InputError("--compat PrivateLR reproduces R, whose eps guarantee does not hold, "
                          "so it cannot be charged to --ledger; drop --compat (or --ledger)")
    parent = os.path.dirname(os.path.abspath(args.ledger))
    if not os.path.isdir(parent):
        raise _InputError(f"--ledger {args.ledger}: the directory {parent} does not exist; "
                          "create it first or choose another --ledger path")
    if os.path.isdir(args.ledger):
        raise _InputError(f"--ledger {args.ledger} is a directory; give a file")
    if _same_file(args.ledger, args.data):
        raise _InputError(f"--ledger {args.ledger} is the DATA file; give the ledger its own "
                          "file")
    method = args.method or ("output" if args.output_perturbation else "objective")
    method, delta = check_method(method, args.eps, args.delta)
    return float(args.eps), float(delta) if method in GAUSSIAN_METHODS else 0.0


@contextlib.contextmanager
def _open_ledger(args):
    """The locked :class:`~privatelr.ledger.BudgetLedger` of ``--ledger`` for the run (None
    without one). A second run on the same ledger waits here until this one has finished."""
    if args.ledger is None:
        yield None
        return
    from .ledger import BudgetLedger

    def waiting() -> None:
        sys.stderr.write(f"privatelr fit: waiting for another run to finish with the ledger "
                         f"{args.ledger}\n")
        sys.stderr.flush()

    with BudgetLedger.open(args.ledger, budget=args.budget, budget_delta=args.budget_delta,
                           raise_budget=args.raise_budget, on_wait=waiting) as ledger:
        yield ledger


def _budget_text(ledger) -> str:
    return (f"--budget {ledger.epsilon:g}" if ledger.delta == 0 else
            f"--budget {ledger.epsilon:g} --budget-delta {ledger.delta:g}")


def _spent_text(ledger, run_delta: float = 0.0) -> str:
    (eps, delta), (left_eps, left_delta) = ledger.spent, ledger.remaining
    runs = len(ledger.spends)
    deltas = bool(ledger.delta or delta or run_delta)
    spent = f"eps={eps:g}" + (f", delta={delta:g}" if deltas else "")
    left = f"eps={left_eps:g}" + (f", delta={left_delta:g}" if deltas else "")
    return (f"spent {spent} of {_budget_text(ledger)} in {runs} run{'' if runs == 1 else 's'}, "
            f"remaining {left}")


def _check_budget(ledger, cost, args) -> None:
    """Refuse, before the data are read, a run whose cost does not fit what remains."""
    from .exceptions import BudgetExceededError

    eps, delta = cost
    try:
        ledger.check(eps, delta)
    except BudgetExceededError:
        this = f"--eps {eps:g}" + (f" --delta {delta:g}" if delta else "")
        hint = (" (a ledger without --budget-delta takes only the pure-eps methods; --method "
                "gaussian or amp need one created with --budget-delta)"
                if delta and ledger.delta == 0 else "")
        raise _InputError(f"--ledger {args.ledger}: this run ({this}) does not fit the budget: "
                          f"{_spent_text(ledger, delta)}{hint}. Nothing was read or charged. "
                          "The budget is fixed when the ledger is created (--raise-budget with "
                          "a larger --budget raises it)") from None


def _ledger_note(args) -> str:
    """What a spend was for: the command's public inputs (never the seed)."""
    method = args.method or ("output" if args.output_perturbation else "objective")
    note = f"privatelr fit {_name(args.data)} --formula {args.formula!r} --method {method}"
    if args.inference is not None:
        note += f" --inference {args.inference:g}"
    note += f" --out {args.out}"
    return note if args.note is None else f"{args.note} ({note})"


def _ledger_status(ledger, cost) -> str:
    eps, delta = cost
    this = f"eps={eps:g}" + (f", delta={delta:g}" if delta else "")
    return f"ledger {ledger.path}: this run spent {this}; {_spent_text(ledger)}"


def _ledger(args) -> int:
    """``privatelr ledger FILE``: the budget, every spend and what remains."""
    from .ledger import BudgetLedger

    ledger = BudgetLedger.read(args.file)
    print(f"ledger {args.file} (created {ledger.created})")
    print(f" budget: eps={ledger.epsilon:g}, delta={ledger.delta:g}")
    for change in ledger.budget_changes:
        print(f"   raised to eps={change['eps']:g}, delta={change['delta']:g} on "
              f"{change['date']}")
    for i, spend in enumerate(ledger.spends, 1):
        print(f" {i:>3}. {spend.date}  eps={spend.eps:g}, delta={spend.delta:g}  {spend.note}")
    (eps, delta), (left_eps, left_delta) = ledger.spent, ledger.remaining
    print(f" spent: eps={eps:g}, delta={delta:g}; remaining: eps={left_eps:g}, "
          f"delta={left_delta:g}")
    return 0


def _parse_levels(items: list, path: str | None) -> dict:
    """``--levels COL=A,B,C`` (repeatable) and ``--levels-file SCHEMA.json`` ({col: [...]})
    as one dict; the values are text, matched against the column's values by R's labels."""
    import json

    levels: dict = {}
    if path is not None:
        try:
            with open(path, encoding="utf-8") as fh:
                loaded = json.load(fh)
        except (OSError, ValueError, RecursionError) as exc:
            raise _InputError(f"--levels-file {path}: not a readable JSON file ({exc})") from None
        if not isinstance(loaded, dict) or not all(
                isinstance(v, list) and all(isinstance(x, (str, int, float, bool)) for x in v)
                for v in loaded.values()):
            raise _InputError(f"--levels-file {path}: must hold a JSON object "
                              '{"column": ["level", ...], ...}')
        levels.update(loaded)
    for item in items:
        col, sep, values = item.partition("=")
        if not sep or not col or not values:
            raise _InputError(f"--levels {item!r}: write COLUMN=LEVEL1,LEVEL2,... (the first "
                              "level is the reference)")
        if col in levels:
            raise _InputError(f"--levels: column {col!r} is declared twice")
        levels[col] = values.split(",")
    return levels


def _predict(args) -> int:
    if args.chunk_size < 1:
        raise _InputError(f"--chunk-size must be a positive number of rows, got {args.chunk_size}")
    _check_out(args.out, [("MODEL.json", args.model), ("DATA", args.data)], force=args.force)
    model = _load_model(args.model)
    options = dict(type=args.type, chunk_size=args.chunk_size, id_column=args.id,
                   progress=False if args.quiet else None)
    if args.out in (None, "-"):
        predict_stream(model, args.data, sys.stdout, **options)
        return 0
    # Nothing reaches args.out unless every row was scored: a failure or an interrupt leaves
    # the previous file (if any) untouched and no temporary file behind.
    with _output_file(args.out) as fh:
        predict_stream(model, args.data, fh, **options)
    return 0


def _summary(args) -> int:
    print(summary_in_flags(str(_load_model(args.model).summary())))
    return 0


def _add_model_parsers(sub) -> None:
    fit = sub.add_parser(
        "fit", help="fit dplr() on a CSV/Parquet file and save the model as JSON",
        description=(
            "Fit differentially private logistic regression (privatelr.dplr) to a table and "
            "save the model (privatelr.load_model reads it). DATA is CSV ('-' = stdin) or "
            "Parquet (.parquet/.pq, needs pyarrow); string columns are factors, whose levels a "
            "private fit needs declared (--levels). Public bounds on the columns (--bounds, "
            "--bounds-file) give the public map and the norm bound, as "
            "dplr(..., bounds=public_bounds(...)) does. Prints the summary. Only the "
            "coefficients are private (see the summary's notes). With --ledger, the run is "
            "charged to a budget kept in a file across runs (checked before the data are "
            "read)."),
        epilog='example: privatelr fit cars.csv --formula "am ~ mpg + hp + factor(cyl)" '
               "--bounds mpg=10,35 --bounds hp=50,350 --levels cyl=4,6,8 --eps 1 "
               "--ledger budget.json --budget 2 --out model.json")
    fit.add_argument("data", metavar="DATA", help="CSV or Parquet file")
    fit.add_argument("--formula", required=True, help="R formula, e.g. 'y ~ .' or "
                     "'am ~ mpg + factor(cyl)'")
    fit.add_argument("--eps", type=float, default=1.0, help="privacy level (default 1; 0 = "
                     "non-private)")
    fit.add_argument("--lambda", dest="lambda_", type=float, default=None,
                     help="regulariser (default: the package's rule, privacy penalty "
                     "eps/10 for the design's norm bound; R's rule with --compat); 0 only with "
                     "--eps 0 (glm's unpenalised fit)")
    fit.add_argument("--output-perturbation", action="store_true",
                     help="output perturbation instead of objective perturbation")
    fit.add_argument("--method", choices=["objective", "output", "gaussian", "amp"],
                     default=None, help="the mechanism by name (gaussian, amp: (eps, delta)-DP "
                     "with --delta; overrides --output-perturbation)")
    fit.add_argument("--delta", type=float, default=0.0,
                     help="delta of --method gaussian or amp, in (0, 1), well below 1/n")
    fit.add_argument("--threshold", choices=["fixed", "youden", "topleft"], default="fixed",
                     help="classification threshold (youden/topleft are NOT private)")
    fit.add_argument("--do-scale", action="store_true",
                     help="R's do.scale: standardise and shrink into the unit ball (NOT private)")
    fit.add_argument("--bounds", action="append", metavar="COL=LO,HI",
                     help="public range of a numeric column, known without looking at the rows "
                     "(repeat per column): the column is fitted as (x - midpoint)/half-range "
                     "and --data-norm defaults to the bound this implies, as "
                     "privatelr.public_bounds; predictions and the summary are per unit of the "
                     "original column")
    fit.add_argument("--bounds-file", metavar="BOUNDS.json", default=None,
                     help='public bounds as a JSON object {"ranges": {"column": [lo, hi], '
                          '...}, "levels": {"column": ["first level", ...], ...}} ("levels" '
                          "optional: declared factor levels, first = reference); combines with "
                          "--bounds and --levels")
    fit.add_argument("--norm", choices=["max", "rms"], default=None,
                     help="the norm bound --bounds implies: max (default, no row is ever "
                          "clipped) or rms (tighter; rows above it are clipped)")
    fit.add_argument("--no-center", action="store_true",
                     help="with --bounds, divide each column by max(|LO|, |HI|) instead of "
                          "centring it on its public midpoint")
    fit.add_argument("--data-norm", type=float, default=None, metavar="B",
                     help="public bound on the covariate rows' L2 norm (default 1, or the "
                          "bound --bounds implies)")
    fit.add_argument("--clip", action="store_true", help="clip rows above the bound into it")
    fit.add_argument("--rp-dim", type=int, default=0, help="random projection dimension "
                     "(0: none; negative: round(2 log n))")
    fit.add_argument("--levels", action="append", metavar="COL=A,B,...",
                     help="declare the levels of a factor column, first = reference (repeat "
                     "for each column); a private fit never learns levels from the rows")
    fit.add_argument("--levels-file", metavar="SCHEMA.json", default=None,
                     help='declared levels as a JSON object {"column": ["first level", '
                          '"second", ...], ...} (first = reference); combines with --levels')
    fit.add_argument("--compat", choices=["PrivateLR"], default=None,
                     help="reproduce R's PrivateLR (NOT private: learned levels, norm bound 1)")
    fit.add_argument("--weights", default=None, metavar="COL",
                     help="observation weights from column COL (not a covariate); a private "
                          "fit needs --weights-bound")
    fit.add_argument("--weights-bound", type=float, default=None, metavar="A",
                     help="public upper bound on every weight (weights outside [0, A] are "
                          "refused)")
    from .defaults import DEFAULT_SHARE

    fit.add_argument("--inference", type=float, nargs="?", const=DEFAULT_SHARE, default=None,
                     metavar="SHARE",
                     help="also release standard errors and confidence intervals: spend SHARE "
                          f"of eps (default {DEFAULT_SHARE:g}) on a private information matrix "
                          "(at eps 0 they are computed anyway, at no cost)")
    fit.add_argument("-q", "--quiet", action="store_true",
                     help="no progress bar (shown on a terminal when tqdm is installed)")
    fit.add_argument("-v", "--verbose", action="count", default=0,
                     help="R's messages on stderr (dplr: set lambda to: ...); -vv for more")
    fit.add_argument("--seed", type=int, default=None, help="random seed (default: OS entropy)")
    fit.add_argument("--out", required=True, metavar="MODEL.json",
                     help="where to save the model (written atomically; must not be DATA; an "
                          "existing file only with --force)")
    fit.add_argument("--force", action="store_true", help="replace an existing --out file")
    fit.add_argument("--ledger", metavar="LEDGER.json", default=None,
                     help="charge this fit to a privacy budget kept in LEDGER.json across runs "
                          "(created with --budget): a run that does not fit what remains is "
                          "refused before the data are read; the spend is recorded before the "
                          "model is written")
    fit.add_argument("--budget", type=float, default=None, metavar="EPS",
                     help="the ledger's eps budget: required to create --ledger, fixed then "
                          "(a different value is an error unless --raise-budget)")
    fit.add_argument("--budget-delta", type=float, default=None, metavar="DELTA",
                     help="the ledger's delta budget for the Gaussian methods (default 0 at "
                          "creation), fixed as --budget is")
    fit.add_argument("--raise-budget", action="store_true",
                     help="raise the ledger's budget to --budget (and --budget-delta); the "
                          "change is recorded in the ledger with its date; never lowers it")
    fit.add_argument("--note", default=None, metavar="TEXT",
                     help="what this spend is for, recorded in the ledger")
    fit.set_defaults(func=_fit)

    pred = sub.add_parser(
        "predict", help="score a CSV/Parquet file with a saved model (streams CSV out)",
        description=(
            "Predict with a model saved by 'privatelr fit' (or model.to_json). Reads DATA "
            f"(CSV, '-' = stdin, or Parquet) --chunk-size rows at a time (default "
            f"{DEFAULT_CHUNK_SIZE:,}), only the columns the formula uses, and writes CSV: a "
            "header 'probability' (or 'class') and one line per input row, empty where the row "
            "has a missing value (a blank line is a row of missing values). At most one chunk is "
            "held in memory. --out is written only once every row is scored."))
    pred.add_argument("model", metavar="MODEL.json")
    pred.add_argument("data", metavar="DATA")
    pred.add_argument("--type", choices=["probabilities", "class"], default="probabilities",
                      help="probabilities (default) or class labels (threshold p.tr)")
    pred.add_argument("--out", default=None, metavar="preds.csv",
                      help="output file (default: stdout), written atomically; must not be "
                           "MODEL.json or DATA (nor the file standard input reads for DATA -); "
                           "an existing file only with --force")
    pred.add_argument("--force", action="store_true", help="replace an existing --out file")
    pred.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE, metavar="ROWS",
                      help=f"rows per chunk (default {DEFAULT_CHUNK_SIZE})")
    pred.add_argument("-q", "--quiet", action="store_true",
                      help="no progress bar (shown on a terminal when tqdm is installed)")
    pred.add_argument("--id", default=None, metavar="COL",
                      help="copy column COL of DATA, exactly as written, into the output as "
                           "its first column (every row, also rows with no prediction)")
    pred.set_defaults(func=_predict)

    summ = sub.add_parser("summary", help="print the summary of a saved model",
                          description="Print the R-style summary of a saved model.")
    summ.add_argument("model", metavar="MODEL.json")
    summ.set_defaults(func=_summary)

    led = sub.add_parser(
        "ledger", help="show a budget ledger: its budget, every spend and what remains",
        description="Print a budget ledger written by 'privatelr fit --ledger' (checked: a "
                    "file modified by hand is refused).")
    led.add_argument("file", metavar="LEDGER.json")
    led.set_defaults(func=_ledger)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(f"privatelr: {category.__name__}: {message}\n")


def _show_fit_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning of ``fit``, in flags (:func:`cli_words`)."""
    sys.stderr.write(f"privatelr: {category.__name__}: {cli_words(str(message))}\n")


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__

    parser = argparse.ArgumentParser(prog="privatelr",
                                     description="Differentially private logistic regression.")
    parser.add_argument("--version", action="version", version=f"privatelr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="what privacy costs: private fits of the iris example "
                          "next to the non-private one")
    demo.add_argument("--seed", type=int, default=None, help="random seed (default: OS entropy)")
    demo.set_defaults(func=_demo)
    _add_cms_parser(sub, "lrsimple", svm=False)
    _add_cms_parser(sub, "svmsimple", svm=True)
    _add_model_parsers(sub)
    return parser


def main(argv=None) -> int:
    """Run the command line; return the exit code (0 ok, 2 bad input, 1 internal error).

    Bad input (``ValueError``, ``TypeError``, ``OSError`` such as a missing file) prints one
    line ``privatelr <command>: error: <message>`` on stderr, no traceback. Warnings (e.g.
    :class:`~privatelr.PrivacyWarning`) are printed as one line each on stderr. The errors and
    warnings of ``fit`` name the flags to use, not the library's Python arguments
    (:func:`cli_words`). Set the environment variable ``PRIVATELR_DEBUG=1`` to see
    tracebacks.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(os.environ.get("PRIVATELR_DEBUG"))
    prog = f"privatelr {args.command}"
    with warnings.catch_warnings():
        if not debug:
            warnings.showwarning = _show_fit_warning if args.command == "fit" else \
                _show_warning
        try:
            seed = getattr(args, "seed", None)
            if seed is not None and seed < 0:
                raise _InputError(f"--seed must be a non-negative integer, got {seed}")
            return int(args.func(args) or 0)
        except BrokenPipeError:  # e.g. `privatelr predict ... | head`: not an error
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # no second error when flushing at exit
            return 0
        except (ValueError, TypeError, OSError) as exc:
            if debug:
                raise
            msg = " ".join(str(exc).split()) or type(exc).__name__
            if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
                msg = f"{exc.strerror}: {exc.filename}"
            elif args.command == "fit" and not isinstance(exc, _InputError):
                msg = cli_words(msg)              # the library's Python spelling -> flags
            sys.stderr.write(f"{prog}: error: {msg}\n")
            return 2
        except KeyboardInterrupt:
            sys.stderr.write(f"{prog}: interrupted\n")
            return 130
        except Exception as exc:  # a bug: say so, exit 1
            if debug:
                raise
            msg = " ".join(str(exc).split())
            sys.stderr.write(f"{prog}: internal error: {type(exc).__name__}: {msg} "
                             "(set PRIVATELR_DEBUG=1 for a traceback; please report it)\n")
            return 1


if __name__ == "__main__":
    sys.exit(main())
