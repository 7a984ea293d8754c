"""privatelr predict reads a regular CSV file with pyarrow's CSV reader, any other with pandas.

The command line documents pandas' reading rules (tests/cli/test_cli_safety.py): every line is a
row, a blank line is a row of missing values, an empty field is missing, a row with more fields
than the header is an error. ``cli._arrow_text_chunks`` reads a file with pyarrow only when one
checking pass finds it regular (UTF-8, distinct header names, one field per column on every
line), where both readers give the same text; otherwise it returns None and pandas reads it.

The tests compare the whole output of ``predict_stream`` — every byte — with the pandas reader's
(``_arrow_text_chunks`` patched to return None) on regular files built to hit the places where
CSV readers differ, at chunk sizes that cut the file everywhere, and check that the irregular
files go to pandas. A reader that shifted, dropped or split one row, or read one field
differently, changes a line of the output.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")

from privatelr import cli, dplr  # noqa: E402

LEVELS = ["01", "1", "b"]


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(4)
    n = 60
    train = pd.DataFrame({"x": rng.uniform(-1, 1, n),
                          "g": pd.Categorical(rng.choice(LEVELS, n), categories=LEVELS)})
    train["y"] = (train.x + (train.g == "b") + 0.3 * rng.standard_normal(n) > 0.3).astype(int)
    fitted = dplr("y ~ x + g", train, eps=0)
    types = fitted.spec.variable_types
    assert (types["x"], types["g"]) == ("numeric", "character")  # the typed (text) path
    return fitted


REGULAR = {
    "plain": b"x,g\n0.1,01\n0.2,1\n-0.3,b\n",
    "bom": b"\xef\xbb\xbfx,g\n0.1,01\n0.2,1\n",
    "crlf_no_final_newline": b"x,g\r\n0.1,01\r\n0.2,1\r\n-0.5,b",
    "cr_only": b"x,g\r0.1,01\r0.2,1\r",
    "blank_lines": b"x,g\n0.1,01\n\n NA ,1\n-0.3,\n0.2,b\n\n",
    "quoted": b'x,g\n"0.1","01"\n"0.2","1"\n' + b'0.3,"b"\n',
    "quoted_newline_in_unused_column": b'x,g,note\n0.1,01,"two\nlines"\n0.2,1,"a, b"\n',
    "spaces_and_na": b"x,g\n 0.25 ,b\nNA,01\n1e-3,NA\n+.5,1\n",
    "extra_columns_reordered": b"note,g,y,x\nq,01,1,0.1\nr,b,0,-0.2\n",
    "header_only": b"x,g\n",
}

IRREGULAR = {
    "short_row": b"x,g\n0.1,01\n0.2\n",
    "long_row": b"x,g\n0.1,01,zz\n",
    "trailing_commas": b"x,g,\n0.1,01,\n0.2,1,\n",
    "latin1_in_unused_column": b"x,g,note\n0.1,01,caf\xe9\n",
    "repeated_names": b"x,g,x\n0.1,01,0.3\n",
    "blank_header": b"\nx,g\n0.1,01\n",
    "empty": b"",
}


def _predict(model, path, size, monkeypatch=None, arrow=True):
    """predict_stream's whole output; ``arrow=False``: with pandas' reader alone."""
    out = io.StringIO()
    if arrow:
        cli.predict_stream(model, str(path), out, chunk_size=size)
    else:
        with monkeypatch.context() as patch:
            patch.setattr(cli, "_arrow_text_chunks", lambda *a, **k: None)
            cli.predict_stream(model, str(path), out, chunk_size=size)
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(REGULAR))
def test_regular_files_are_read_by_arrow_with_pandas_results(model, tmp_path, monkeypatch, name):
    path = tmp_path / f"{name}.csv"
    path.write_bytes(REGULAR[name])
    assert cli._arrow_text_chunks(str(path), 2, ["x", "g"]) is not None
    for size in (1, 2, 3, 50_000):
        fast = _predict(model, path, size)
        slow = _predict(model, path, size, monkeypatch, arrow=False)
        assert fast == slow, (name, size)
    text = REGULAR[name].replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    text = text[:-1] if text.endswith(b"\n") else text  # a final newline ends the last row
    rows = text.count(b"\n") - text.count(b'"two\n')  # a quoted line break is no row
    assert len(fast.splitlines()) == 1 + rows  # header + one line per input row


@pytest.mark.parametrize("name", sorted(IRREGULAR))
def test_irregular_files_go_to_pandas(tmp_path, name):
    path = tmp_path / f"{name}.csv"
    path.write_bytes(IRREGULAR[name])
    assert cli._arrow_text_chunks(str(path), 2, ["x", "g"]) is None


@pytest.mark.parametrize("block", [1 << 22, 4096])
def test_a_large_file_gives_the_same_bytes_both_ways(model, tmp_path, monkeypatch, block):
    # 25,000 rows in chunks of 977 rows, which cut pyarrow's batches at arbitrary places, with
    # missing and NA values scattered and quoted line breaks in an unused column; read as one
    # 4 MB block, and in 4 kB blocks (about 150 of them, parsed in parallel).
    monkeypatch.setattr(cli, "_ARROW_BLOCK", block)
    rng = np.random.default_rng(1)
    n = 25_000
    x = rng.uniform(-1, 1, n).round(6).astype(str)
    x[rng.random(n) < 0.01] = ""
    g = rng.choice(LEVELS + ["NA"], n)
    path = tmp_path / "big.csv"
    note = np.where(rng.random(n) < 0.05, "two\nlines, quoted", "plain")
    pd.DataFrame({"x": x, "g": g, "note": note}).to_csv(path, index=False)
    assert cli._arrow_text_chunks(str(path), 977, ["x", "g"]) is not None
    fast = _predict(model, path, 977)
    assert fast == _predict(model, path, 977, monkeypatch, arrow=False)
    assert len(fast.splitlines()) == n + 1


def test_a_file_that_changes_between_the_check_and_the_read_stops_the_read(tmp_path,
                                                                         monkeypatch):
    # The checking pass found the file regular; if a row with a missing field appears before
    # the read reaches it (a file still being written), the read stops with an error naming the
    # file instead of skipping the row, which would lose an output line. 2 MB in 4 kB blocks,
    # so that the reader's read-ahead has not reached the end when the file changes.
    monkeypatch.setattr(cli, "_ARROW_BLOCK", 4096)
    path = tmp_path / "growing.csv"
    rows = b"".join(b"0.%d,01\n" % i for i in range(200_000))
    path.write_bytes(b"x,g\n" + rows)
    chunks = cli._arrow_text_chunks(str(path), 1000, ["x", "g"])
    assert chunks is not None
    path.write_bytes(b"x,g\n" + rows[:-10] + b"0.2\n")
    with pytest.raises(cli._InputError, match="growing.csv changed while it was read"):
        list(chunks)
