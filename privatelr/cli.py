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


from .progress import progress_bar


def _demo(args) -> int:
    """R's manual example ``dplr(Species ~ ., iris)`` both ways: as R computes it (not private)
    and with a public bound, for which the guarantee holds."""
    from . import dplr
    from .datasets import load_iris

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = dplr("Species ~ .", load_iris(), compat="PrivateLR", random_state=args.seed)
    print('>>> dplr("Species ~ .", load_iris(), compat="PrivateLR")   # R: dplr(Species ~ ., iris)'
          "\n")
    print(model)
    for w in caught:
        print(f"{w.category.__name__}: {w.message}", file=sys.stderr)
    # The same model with a guarantee that holds: a public bound on the covariate rows (iris
    # measurements are below 10 cm, so every row of four has norm below 20) and clipping.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the 3-class note, already shown above
        private = dplr("Species ~ .", load_iris(), data_norm=20.0, clip=True,
                       random_state=args.seed)
    print('\n>>> dplr("Species ~ .", load_iris(), data_norm=20, clip=True)'
          '   # a public bound: the guarantee holds\n')
    print(private)
    print(" With 150 rows and eps = 1 the noise is as large as the signal: the coefficients and the\n"
          " C-index change a lot from draw to draw (run `privatelr demo --seed K` for a few K).")
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


def _check_out(out, inputs) -> None:
    """Refuse an ``--out`` path that would destroy an input or cannot be written, before
    anything is read or written. ``inputs``: (argument name, path) pairs; ``-`` is stdin.

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


def _iter_chunks(path: str, chunk_size: int, columns=None, passthrough: str | None = None):
    """Yield the table ``chunk_size`` rows at a time, keeping no reference to a chunk once the
    next one is requested. With ``passthrough`` (a column name, ``--id``), yield pairs
    ``(chunk, ids)``: ``ids`` is that column exactly as the file has it (CSV: its text, an
    empty field as ``""``; Parquet: its values as text).

    ``columns``: keep only these (the variables the model uses); the file must have them. A
    mapping ``{column: recorded type}`` also reads those CSV columns as text and converts them
    with :func:`_typed_columns` (Parquet keeps its stored types); a regular CSV file is then read
    by pyarrow (:func:`_arrow_text_chunks`), any other by pandas. Every line of a CSV is a row
    (see :func:`_read_csv`), so the chunks together have exactly one row per data line.
    """
    types = columns if isinstance(columns, Mapping) else None
    keep = None if columns is None else list(columns)
    if passthrough is not None:
        inner = _iter_chunks(path, chunk_size, columns, None)
        for chunk, ids in _with_ids(path, chunk_size, passthrough, inner):
            yield chunk, ids
            del chunk, ids
        return
    if _is_parquet(path):
        pq = _need_pyarrow()
        with _parquet_errors(path):
            pf = pq.ParquetFile(path)
            names = pf.schema_arrow.names
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
    chunks = _arrow_text_chunks(path, chunk_size, keep) if types is not None else None
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


def _arrow_text_chunks(path: str, chunk_size: int, keep):
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
    (0.3 s per 1e6 rows of eight columns, where pandas' reader took 2–3 s).
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
        with reader(names, None) as whole:  # the check: nothing is kept
            for _ in whole:
                if irregular:
                    return None
        if irregular:
            return None
    except (pa.ArrowException, OSError, UnicodeError):
        return None
    # the read: a row the check did not see (the file changed since) stops it, never skipped
    read = reader(names, [c for c in names if c in set(keep)], lambda row: "error")
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
    bar = progress_bar(None, desc="predict", unit=" rows", enabled=progress)
    try:  # the bar is closed on any error, so the error line starts a line of its own
        for item in _iter_chunks(source, chunk_size, columns=columns, passthrough=id_column):
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

    _check_option("--lambda", args.lambda_, above=0, strict=True)
    _check_option("--eps", args.eps, above=0, strict=False)
    _check_option("--data-norm", args.data_norm, above=0, strict=True)
    inputs = [("DATA", args.data)]
    if args.levels_file is not None:
        inputs.append(("--levels-file", args.levels_file))
    _check_out(args.out, inputs)
    _check_option("--weights-bound", args.weights_bound, above=0, strict=True)
    if args.inference is not None and not 0 < args.inference < 1:
        raise _InputError(f"--inference must be a share of eps in (0, 1), got {args.inference}")
    levels = _parse_levels(args.levels or [], args.levels_file)
    bar = progress_bar(3, desc="fit", unit=" steps", enabled=False if args.quiet else None)
    try:  # the bar is closed on any error, so the error line starts a line of its own
        _stage(bar, "reading", first=True)
        frame = _read_table(args.data)
        _stage(bar, "fitting")
        if args.weights is not None and args.weights not in frame.columns:
            raise _InputError(f"{_name(args.data)} has no column {args.weights!r} (--weights)")
        with contextlib.redirect_stdout(sys.stderr):      # R's verbose messages: on stderr
            model = dplr(args.formula, frame, lambda_=args.lambda_, eps=args.eps,
                         rp_dim=args.rp_dim, threshold=args.threshold, do_scale=args.do_scale,
                         op=not args.output_perturbation, method=args.method,
                         delta=args.delta,
                         data_norm=1.0 if args.data_norm is None else args.data_norm,
                         clip=args.clip, random_state=args.seed, levels=levels or None,
                         compat=args.compat, verbose=args.verbose, weights=args.weights,
                         weights_bound=args.weights_bound, inference=args.inference)
        del frame
        _stage(bar, "saving")
        with _naming(args.out):  # atomically: a failed save leaves the old file as it was
            save_model(model, args.out)  # type: ignore[arg-type]  # binary: no --multiclass
        _stage(bar, None)
    finally:
        if bar is not None:
            bar.close()
    print(model)
    sys.stderr.write(f"privatelr fit: model saved to {args.out}\n")
    return 0


def _stage(bar, name: str | None, *, first: bool = False) -> None:
    """Move the fit's progress bar (if shown) to the stage ``name``, counting the stage before
    it as done (None: all done)."""
    if bar is None:
        return
    if not first:
        bar.update(1)
    if name is None:
        bar.close()
    else:
        bar.set_postfix_str(name)


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
    _check_out(args.out, [("MODEL.json", args.model), ("DATA", args.data)])
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
    print(_load_model(args.model).summary())
    return 0


def _add_model_parsers(sub) -> None:
    fit = sub.add_parser(
        "fit", help="fit dplr() on a CSV/Parquet file and save the model as JSON",
        description=(
            "Fit differentially private logistic regression (privatelr.dplr) to a table and "
            "save the model (privatelr.load_model reads it). DATA is CSV ('-' = stdin) or "
            "Parquet (.parquet/.pq, needs pyarrow); string columns are factors, whose levels a "
            "private fit needs declared (--levels). Prints the summary. Only the coefficients are private (see the summary's notes)."),
        epilog='example: privatelr fit cars.csv --formula "am ~ mpg + factor(cyl)" --eps 1 '
               "--data-norm 40 --clip --seed 1 --out model.json")
    fit.add_argument("data", metavar="DATA", help="CSV or Parquet file")
    fit.add_argument("--formula", required=True, help="R formula, e.g. 'y ~ .' or "
                     "'am ~ mpg + factor(cyl)'")
    fit.add_argument("--eps", type=float, default=1.0, help="privacy level (default 1; 0 = "
                     "non-private)")
    fit.add_argument("--lambda", dest="lambda_", type=float, default=None,
                     help="regulariser (default: the package's rule, privacy penalty "
                     "eps/10 for the design's norm bound; R's rule with --compat)")
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
    fit.add_argument("--data-norm", type=float, default=None, metavar="B",
                     help="public bound on the covariate rows' L2 norm (default 1)")
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
    fit.add_argument("--inference", type=float, nargs="?", const=0.25, default=None,
                     metavar="SHARE",
                     help="also release standard errors and confidence intervals: spend SHARE "
                          "of eps (default 0.25) on a private information matrix (at eps 0 "
                          "they are computed anyway, at no cost)")
    fit.add_argument("-q", "--quiet", action="store_true",
                     help="no progress bar (shown on a terminal when tqdm is installed)")
    fit.add_argument("-v", "--verbose", action="count", default=0,
                     help="R's messages on stderr (dplr: set lambda to: ...); -vv for more")
    fit.add_argument("--seed", type=int, default=None, help="random seed (default: OS entropy)")
    fit.add_argument("--out", required=True, metavar="MODEL.json",
                     help="where to save the model (replaced atomically; must not be DATA)")
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
                      help="output file (default: stdout), replaced atomically; must not be "
                           "MODEL.json or DATA (nor the file standard input reads for DATA -)")
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


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(f"privatelr: {category.__name__}: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__

    parser = argparse.ArgumentParser(prog="privatelr",
                                     description="Differentially private logistic regression.")
    parser.add_argument("--version", action="version", version=f"privatelr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit the iris example and print its summary")
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
    :class:`~privatelr.PrivacyWarning`) are printed as one line each on stderr. Set the
    environment variable ``PRIVATELR_DEBUG=1`` to see tracebacks.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(os.environ.get("PRIVATELR_DEBUG"))
    prog = f"privatelr {args.command}"
    with warnings.catch_warnings():
        if not debug:
            warnings.showwarning = _show_warning
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
