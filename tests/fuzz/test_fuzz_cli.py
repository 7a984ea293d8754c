"""Fuzz ``privatelr predict`` (in process, ``privatelr.cli.main``) on random CSV tables.

Tables: columns in any order plus a column the model does not read; numbers written every way
(``01``, ``1e-3``, `` 2``, ``"0.5"``, ``nan``, ``1e500``), missing values (empty, ``NA``),
quoted fields with commas, blank lines, ``\\r\\n`` line ends; some bad cells (text in a number
column, an unknown level, a row with too many fields).

Properties, for every ``--chunk-size``:

* the exit code is the same (0 or 2; never 1, an internal error);
* exit 0: exactly one output line per data row of the table, each a probability in [0, 1] or
  an empty field, and the same bytes whatever the chunk size;
* exit 2: one line ``privatelr predict: error: ...`` on stderr and no output file.
"""

from __future__ import annotations

import functools
import io
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .fuzzlib import clean_call, examples, warning_rules
from privatelr import cli, dplr

LEVELS = ["a", "b", "a,b", "01", "1"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("cli-fuzz")


@functools.lru_cache(maxsize=None)
def model_file(where: str, private: bool) -> str:
    """A model of ``y ~ x + s + l`` (s a string factor with levels that look like numbers)."""
    rng = np.random.default_rng(0)
    n = 40
    frame = pd.DataFrame({"x": rng.uniform(-0.5, 0.5, n),
                          "s": pd.Series(rng.choice(LEVELS, n), dtype=object),
                          "l": rng.uniform(size=n) < 0.5,
                          "y": (rng.uniform(size=n) < 0.5).astype(np.int64)})
    kwargs = dict(eps=1.0, clip=True, random_state=1) if private else dict(eps=0)
    model, exc = clean_call(lambda: dplr("y ~ x + s + l", frame, levels={"s": LEVELS},
                                         **kwargs))
    assert exc is None, exc
    path = f"{where}/model-{'private' if private else 'nonprivate'}.json"
    model.to_json(path)
    return path


def run_predict(model: str, data: str, out: str, chunk: int, type_: str):
    """(exit code, output text or None, stderr) of ``privatelr predict`` in process."""
    import os

    if os.path.exists(out):
        os.remove(out)
    err = io.StringIO()
    # a RuntimeWarning is an error here, as in this repository's pytest setting (cli.main would
    # turn it into exit 1, "internal error")
    with redirect_stderr(err), redirect_stdout(io.StringIO()), warning_rules():
        code = cli.main(["predict", model, data, "--out", out, "--chunk-size", str(chunk),
                         "--type", type_])
    text = None
    if os.path.exists(out):
        with open(out, newline="") as fh:
            text = fh.read()
    return code, text, err.getvalue()


# ---- tables ----------------------------------------------------------------------------------

NUMBER_CELLS = ["0.1", "-0.25", "1e-3", "01", " 2", "0", "-0", '"0.5"', "nan", "NA", "", "inf",
                "1e500", "0.3333333333333333", "5e-324"]
LEVEL_CELLS = ["a", "b", '"a,b"']                 # levels that do not look like numbers
BOOL_CELLS = ["True", "False", "TRUE", "false"]
BAD_CELLS = {"x": ["abc", '"1,5"', "0x10"], "s": ["zz", "A"], "l": ["maybe"]}


@st.composite
def tables(draw, *, level_cells=LEVEL_CELLS, bool_cells=BOOL_CELLS, bad=True, extra=False,
           max_rows=8):
    """CSV text with header x, s, l (any order) and an unused column e; ``bad``: a few bad
    cells; ``extra``: a few rows with a field more than the header."""
    cols = draw(st.permutations(["x", "s", "l", "e"]))
    cells = {"x": st.sampled_from(NUMBER_CELLS), "s": st.sampled_from(level_cells),
             "l": st.sampled_from(bool_cells), "e": st.sampled_from(["z", '"p,q"', "", "7"])}
    n = draw(st.integers(0, max_rows))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [",".join(cols)]
    for _ in range(n):
        row = {c: draw(cells[c]) for c in cols}
        if bad and draw(st.integers(0, 19)) == 0:
            c = draw(st.sampled_from(sorted(BAD_CELLS)))
            row[c] = draw(st.sampled_from(BAD_CELLS[c]))
        line = ",".join(row[c] for c in cols)
        if extra and draw(st.integers(0, 3)) == 0:
            line += ",extra"
        lines.append(line)
        if draw(st.integers(0, 9)) == 0:
            lines.append("")                      # a blank line: not a data row
    return eol.join(lines) + (eol if draw(st.booleans()) else "")


def _floats(text: str) -> np.ndarray:
    body = text.splitlines()[1:]
    return np.array([np.nan if v == '""' else float(v) for v in body], dtype=np.float64)


def _cli_property(workdir, csv_text, private, sizes, type_):
    data = workdir / "data.csv"
    data.write_text(csv_text, newline="")
    model = model_file(str(workdir), private)
    runs = [run_predict(model, str(data), str(workdir / "out.csv"), k, type_) for k in sizes]
    codes = {code for code, _, _ in runs}
    assert codes <= {0, 2} and len(codes) == 1, [(k, c, e) for k, (c, _, e) in zip(sizes, runs)]
    readable, _ = clean_call(lambda: pd.read_csv(io.StringIO(csv_text)),
                             allowed=(pd.errors.ParserError,))
    if readable is None:
        assert codes == {2}, "a table pandas cannot read must exit 2"
    if codes == {2}:
        for _, text, err in runs:
            assert text is None
            assert err.startswith("privatelr predict: error: ") and err.count("\n") == 1, err
        return
    # every line after the header is a row, a blank one too (a row of missing values)
    rows = len(pd.read_csv(io.StringIO(csv_text), skip_blank_lines=False))
    first = runs[0][1]
    lines = first.splitlines()
    assert lines[0] == ("probability" if type_ == "probabilities" else "class")
    assert len(lines) == rows + 1, (rows, lines)
    if type_ == "probabilities":
        p = _floats(first)
        assert ((p[~np.isnan(p)] >= 0) & (p[~np.isnan(p)] <= 1)).all()
    for k, (_, text, _) in zip(sizes, runs):
        assert text == first, (k, text, first)     # the same bytes for every chunk size


#: one small chunk size (1 costs a formulaic call per row) and the default
SIZES = st.integers(1, 8).map(lambda k: [k, 50_000])


@settings(max_examples=examples(80))
@given(csv_text=tables(), private=st.booleans(), sizes=SIZES,
       type_=st.sampled_from(["probabilities", "class"]))
def test_predict_gives_one_line_per_row_whatever_the_chunk_size(workdir, csv_text, private,
                                                                sizes, type_):
    _cli_property(workdir, csv_text, private, sizes, type_)


# ---- what the fuzzers found (fixed; kept with their minimal reproducers) ---------------------

@settings(max_examples=examples(15))
@example(csv_text="x,s,l\n0.1,a,True\n0.2,01,False\n", private=True, sizes=[1, 50_000],
         type_="probabilities")
@example(csv_text="x,s,l\n0.1,a,True\n0.2,,\n", private=True, sizes=[1, 50_000],
         type_="probabilities")
@given(csv_text=tables(level_cells=LEVEL_CELLS + ["01", "1", ""],
                       bool_cells=BOOL_CELLS + [""], bad=False),
       private=st.booleans(), sizes=SIZES, type_=st.sampled_from(["probabilities", "class"]))
def test_declared_levels_and_missing_values_score_in_any_chunk(workdir, csv_text, private,
                                                                sizes, type_):
    _cli_property(workdir, csv_text, private, sizes, type_)
    # every cell is valid: the table must score
    assert run_predict(model_file(str(workdir), private), str(workdir / "data.csv"),
                       str(workdir / "out.csv"), sizes[0], type_)[0] == 0


@settings(max_examples=examples(10))
@example(csv_text="x,s,l\n0.3,b,True\n0.3,b,True\n", private=False,
         sizes=[1, 50_000], type_="probabilities")
@given(csv_text=tables(bad=False), private=st.just(False), sizes=SIZES,
       type_=st.just("probabilities"))
def test_nonprivate_model_same_bytes_for_every_chunk_size(workdir, csv_text, private, sizes,
                                                          type_):
    _cli_property(workdir, csv_text, private, sizes, type_)


@settings(max_examples=examples(5))
@example(csv_text="x,s,l\n0.1,a,True\n0.2,a,True,extra\n", private=True, sizes=[50_000],
         type_="probabilities")
@given(csv_text=tables(bad=False, extra=True).filter(lambda t: ",extra" in t),
       private=st.booleans(), sizes=SIZES, type_=st.just("probabilities"))
def test_a_row_with_too_many_fields_exits_2(workdir, csv_text, private, sizes, type_):
    _cli_property(workdir, csv_text, private, sizes, type_)


# ---- one file under two names: --out never destroys an input (issue 27) ----------------------

def _alias(folder, target, how: str, counter=[0]):
    """A path naming ``target`` (a file in ``folder``) ``how`` (:data:`fuzzlib.ALIASES`)."""
    import os

    counter[0] += 1
    name = folder / f"alias{counter[0]}"
    if how == "path":
        return target
    if how == "dotdot":
        (folder / "sub").mkdir(exist_ok=True)
        return folder / "sub" / ".." / target.name
    if how == "symlink":
        name.symlink_to(target)
    elif how == "symlink chain":
        (folder / f"hop{counter[0]}").symlink_to(target)
        name.symlink_to(folder / f"hop{counter[0]}")
    elif how == "hard link":
        os.link(target, name)
    return name


def _snapshot(folder):
    import os

    return {p.name: (p.read_bytes() if not p.is_symlink() else os.readlink(p))
            for p in sorted(folder.iterdir()) if not p.is_dir()}


@settings(max_examples=examples(40), deadline=None)
@given(command=st.sampled_from(["predict", "fit"]), target=st.sampled_from(["DATA", "MODEL"]),
       source=st.sampled_from(["path", "stdin"]),
       out=st.sampled_from(["path", "dotdot", "symlink", "symlink chain", "hard link",
                            "stdout append", "distinct"]))
def test_out_naming_an_input_is_refused_and_no_input_changes(tmp_path_factory, command, target,
                                                               source, out):
    import sys

    folder = tmp_path_factory.mktemp("alias")
    model = model_file(str(folder), False)
    data = folder / "data.csv"
    data.write_text("x,s,l,y\n0.1,a,True,1\n-0.2,b,False,0\n0.3,a,True,0\n")
    if command == "fit" or source == "stdin":
        target = "DATA"                       # fit reads no model; only DATA can be '-'
    victim = data if target == "DATA" else folder / "model-nonprivate.json"
    args = [command, *([model] if command == "predict" else []),
            "-" if source == "stdin" else str(data)]
    if command == "fit":
        args += ["--formula", "y ~ x + s", "--eps", "0"]
    stdout = io.StringIO()
    if out == "stdout append":
        if command == "fit":
            return                            # fit's output is its --out model file
    elif out == "distinct":
        args += ["--out", str(folder / "fresh.out")]
    else:
        args += ["--out", str(_alias(folder, victim, out))]
    before = _snapshot(folder)
    err = io.StringIO()
    stdin = open(data) if source == "stdin" else None
    sink = open(victim, "a") if out == "stdout append" else None
    try:
        with redirect_stderr(err), warning_rules():
            old_in, old_out = sys.stdin, sys.stdout
            sys.stdin = stdin if stdin is not None else old_in
            sys.stdout = sink if sink is not None else stdout
            try:
                code = cli.main(args)
            finally:
                sys.stdin, sys.stdout = old_in, old_out
    finally:
        for fh in (stdin, sink):
            if fh is not None:
                fh.close()
    after = _snapshot(folder)
    if out == "distinct":
        assert code == 0, err.getvalue()
        assert after.pop("fresh.out") and after == before
        return
    message = err.getvalue()
    assert code == 2 and message.count("\n") == 1, (args, message)
    assert "destroy the input" in message, message
    assert after == before                    # every input byte for byte, no new file
