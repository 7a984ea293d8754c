"""The command line never loses data, and bad input exits 2 with one line.

1. ``--out`` naming an input (directly, through ``..``, a symbolic or a hard link) is refused
   before anything is written.
2. Outputs are written atomically through :func:`privatelr.envelope.atomic_write`: temporary
   files have unique names, a user's files (``out.csv.part``) are never touched, a failed or
   interrupted write leaves the previous output intact, errors name the user's path.
3. CSV reading keeps one output row per input row (blank lines, trailing commas, header-only
   files) and converts the model's columns with the types it recorded, the same for every
   chunk size.
4. Careless input exits 2 with ``privatelr <cmd>: error: <one line>``.
5. ``privatelr --version``.

Almost everything runs ``cli.main`` in-process; one test starts the console module.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import privatelr
from privatelr import cli, dplr, load_model

# ---------------------------------------------------------------------------------------------
# helpers and fixtures
# ---------------------------------------------------------------------------------------------


def main_inproc(capsys, *args):
    """(exit code, stdout, stderr) of ``cli.main`` run in this process."""
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exc:  # argparse: --help/--version (0) and usage errors (2)
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_one_line_error(code, err, command):
    assert code == 2, err
    assert err.startswith(f"privatelr {command}: error: "), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert ".tmp" not in err and ".part" not in err, err  # never a temporary file's name


def snapshot(folder):
    """{name: bytes} of every file in ``folder`` (what must survive a refused/failed run)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def quiet_dplr(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dplr(*args, **kwargs)


def small_frame(n=40, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"x": np.round(rng.uniform(-0.8, 0.8, n), 3),
                          "g": rng.choice(["01", "1", "b"], n)})
    frame["y"] = (frame["x"] + 0.6 * (frame["g"] == "01") + 0.2 * rng.standard_normal(n)
                  > 0.1).astype(int)
    return frame


@pytest.fixture
def fitted(tmp_path):
    """A folder with data.csv (x, g, y) and model.json fitted on it (eps=0, y ~ x + g)."""
    frame = small_frame()
    frame.to_csv(tmp_path / "data.csv", index=False)
    quiet_dplr("y ~ x + g", frame, eps=0).to_json(tmp_path / "model.json")
    return tmp_path


@pytest.fixture
def x_model(tmp_path):
    """(model y ~ x, its path) for one-column CSV tests."""
    frame = small_frame()
    model = quiet_dplr("y ~ x", frame, eps=0)
    path = tmp_path / "x_model.json"
    model.to_json(path)
    return model, path


# ---------------------------------------------------------------------------------------------
# 1. --out equal to an input is refused before anything is written
# ---------------------------------------------------------------------------------------------

def _refused(capsys, folder, command, argv):
    before = snapshot(folder)
    code, out, err = main_inproc(capsys, *argv)
    assert_one_line_error(code, err, command)
    assert "--out" in err and "choose another --out path" in err
    assert out == ""  # nothing fitted or printed: refused up front
    assert snapshot(folder) == before  # every input byte for byte, and no new file


def test_predict_out_equal_to_the_data_file(fitted, capsys):
    d = fitted
    _refused(capsys, d, "predict",
             ["predict", d / "model.json", d / "data.csv", "--out", d / "data.csv"])


def test_predict_out_equal_to_the_model_file(fitted, capsys):
    d = fitted
    _refused(capsys, d, "predict",
             ["predict", d / "model.json", d / "data.csv", "--out", d / "model.json"])


def test_fit_out_equal_to_the_data_file(fitted, capsys):
    d = fitted
    _refused(capsys, d, "fit", ["fit", d / "data.csv", "--formula", "y ~ x", "--eps", "0",
                                "--out", d / "data.csv"])


def test_out_through_a_symlink_to_the_data(fitted, capsys):
    d = fitted
    (d / "link.csv").symlink_to(d / "data.csv")
    _refused(capsys, d, "predict",
             ["predict", d / "model.json", d / "data.csv", "--out", d / "link.csv"])
    assert (d / "link.csv").is_symlink()


def test_out_as_a_hard_link_to_the_model(fitted, capsys):
    d = fitted
    os.link(d / "model.json", d / "hard.json")
    _refused(capsys, d, "predict",
             ["predict", d / "model.json", d / "data.csv", "--out", d / "hard.json"])
    _refused(capsys, d, "fit", ["fit", d / "hard.json", "--formula", "y ~ x",
                                "--out", d / "model.json"])


def test_out_via_a_relative_path_with_dotdot(fitted, capsys, monkeypatch):
    d = fitted
    (d / "sub").mkdir()
    monkeypatch.chdir(d / "sub")
    _refused(capsys, d, "predict", ["predict", "../model.json", d / "data.csv", "--out",
                                    "../sub/../data.csv"])


def test_stdin_is_not_a_path_and_a_new_out_is_fine(fitted, capsys, monkeypatch):
    d = fitted
    monkeypatch.chdir(d)
    monkeypatch.setattr(sys, "stdin", io.StringIO((d / "data.csv").read_text()))
    code, _, err = main_inproc(capsys, "predict", "model.json", "-", "--out", "-")
    assert code == 0, err  # '-' for both: stdin in, stdout out; not "the same file"
    code, _, err = main_inproc(capsys, "predict", "model.json", "data.csv", "--out", "p.csv")
    assert code == 0, err and len((d / "p.csv").read_text().splitlines()) == 41


# ---------------------------------------------------------------------------------------------
# 2. atomic outputs with unique temporary names
# ---------------------------------------------------------------------------------------------

def test_a_users_out_part_file_survives_predict(fitted, capsys):
    d = fitted
    (d / "out.csv.part").write_text("my own notes, not a temporary file\n")
    code, _, err = main_inproc(capsys, "predict", d / "model.json", d / "data.csv",
                               "--out", d / "out.csv")
    assert code == 0, err
    assert (d / "out.csv.part").read_text() == "my own notes, not a temporary file\n"
    assert len((d / "out.csv").read_text().splitlines()) == 41
    assert sorted(p.name for p in d.iterdir()) == ["data.csv", "model.json", "out.csv",
                                                   "out.csv.part"]


@pytest.mark.parametrize("error, code", [(KeyboardInterrupt, 130), (MemoryError, 1)])
def test_interrupted_predict_leaves_the_previous_output_and_no_temporary(fitted, capsys,
                                                                         monkeypatch, error,
                                                                         code):
    d = fitted
    (d / "out.csv").write_text("probability\nthe previous run\n")
    (d / "out.csv.part").write_text("a user's file\n")
    before = snapshot(d)
    calls = []
    original = cli._csv_lines

    def flaky(pred, **kw):  # the second chunk's lines never arrive
        calls.append(len(pred))
        if len(calls) == 2:
            raise error()
        return original(pred, **kw)

    monkeypatch.setattr(cli, "_csv_lines", flaky)
    got, _, err = main_inproc(capsys, "predict", d / "model.json", d / "data.csv",
                              "--out", d / "out.csv", "--chunk-size", "10")
    assert got == code and len(calls) == 2
    assert snapshot(d) == before  # old output intact, the .part file kept, no temporary left
    assert ".tmp" not in err and ".part" not in err


def test_write_error_on_the_temporary_names_the_out_path(fitted, capsys, monkeypatch):
    import errno

    from privatelr import envelope

    d = fitted

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(envelope.os, "fsync", full_disk)
    code, _, err = main_inproc(capsys, "predict", d / "model.json", d / "data.csv",
                               "--out", d / "out.csv")
    assert_one_line_error(code, err, "predict")
    assert err.strip().endswith(f"No space left on device: {d / 'out.csv'}")
    assert sorted(p.name for p in d.iterdir()) == ["data.csv", "model.json"]


def test_fit_keeps_the_models_permissions_and_never_touches_tmp_pid(fitted, capsys):
    d = fitted
    model = d / "model.json"
    model.chmod(0o640)
    decoy = d / f"model.json.tmp{os.getpid()}"  # the name save_model used to overwrite
    decoy.write_text("precious")
    code, _, err = main_inproc(capsys, "fit", d / "data.csv", "--formula", "y ~ x", "--eps",
                               "0", "--out", model)
    assert code == 0, err
    assert stat.S_IMODE(model.stat().st_mode) == 0o640
    assert decoy.read_text() == "precious"
    assert load_model(model).formula.startswith("y ~ x")
    new = d / "new.json"
    load_model(model).to_json(new)  # a new file: the umask's permissions, not mkstemp's 0600
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in d.iterdir()) == sorted(["data.csv", decoy.name, "model.json",
                                                          "new.json"])


def test_atomic_write_replaces_or_leaves_untouched(tmp_path):
    from privatelr.envelope import atomic_write

    path = tmp_path / "f.txt"
    with atomic_write(path) as fh:
        names = [p.name for p in tmp_path.iterdir()]
        assert len(names) == 1 and names[0].startswith(".f.txt.") and names[0].endswith(".tmp")
        fh.write("one\n")
    assert path.read_text() == "one\n"
    with pytest.raises(ZeroDivisionError):
        with atomic_write(path) as fh:
            fh.write("two, half written")
            1 / 0
    assert path.read_text() == "one\n" and [p.name for p in tmp_path.iterdir()] == ["f.txt"]
    link = tmp_path / "link.txt"
    link.symlink_to(path)
    with atomic_write(link, "wb") as fh:
        fh.write(b"three\n")
    assert link.is_symlink() and path.read_bytes() == b"three\n"
    with pytest.raises(ValueError, match="mode"):
        with atomic_write(path, "a"):
            pass


def test_atomic_write_errors_name_the_destination(tmp_path, monkeypatch):
    import errno

    from privatelr import envelope

    def refuse(src, dst):
        raise OSError(errno.EACCES, "Permission denied", src, dst)

    monkeypatch.setattr(envelope.os, "replace", refuse)
    path = tmp_path / "out.csv"
    with pytest.raises(PermissionError) as info:
        with envelope.atomic_write(path) as fh:
            fh.write("x\n")
    assert info.value.filename == str(path) and info.value.filename2 is None
    assert ".tmp" not in str(info.value) and list(tmp_path.iterdir()) == []
    with pytest.raises(FileNotFoundError) as info:
        with envelope.atomic_write(tmp_path / "nodir" / "out.csv"):
            pass
    assert info.value.filename == str(tmp_path / "nodir" / "out.csv")


# ---------------------------------------------------------------------------------------------
# 3. one output row per input row; types as recorded
# ---------------------------------------------------------------------------------------------

def assert_predictions(lines, expected):
    """``lines`` (the output, header first) holds one probability per row of ``expected``
    (NaN: an empty field); chunked scoring may differ from one matrix product in the last bit."""
    assert lines[0] == "probability" and len(lines) == len(expected) + 1, lines
    empty = [line == '""' for line in lines[1:]]
    assert empty == np.isnan(expected).tolist(), lines
    got = np.array([np.nan if e else float(v) for e, v in zip(empty, lines[1:])])
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)


def _predict_text(capsys, model_path, csv_text, tmp_path, *chunk, newline="\n"):
    data = tmp_path / "new.csv"
    data.write_bytes(csv_text.replace("\n", newline).encode())
    code, out, err = main_inproc(capsys, "predict", model_path, data, *chunk)
    assert code == 0, err
    return out.splitlines()


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("chunk", [[], ["--chunk-size", "1"], ["--chunk-size", "2"]])
def test_blank_lines_of_a_one_column_csv_are_missing_rows(x_model, tmp_path, capsys, newline,
                                                          chunk):
    model, path = x_model
    want = model.predict(pd.DataFrame({"x": [0.5, np.nan, -0.25, 0.125, np.nan]}))
    assert np.isnan(want).tolist() == [False, True, False, False, True]
    # a blank line in the middle and one at the end (then the final newline)
    got = _predict_text(capsys, path, "x\n0.5\n\n-0.25\n0.125\n\n", tmp_path, *chunk,
                        newline=newline)
    assert_predictions(got, want)
    # a single final newline is not a blank row; no final newline at all is the same file
    for text in ("x\n0.5\n\n-0.25\n0.125\n", "x\n0.5\n\n-0.25\n0.125"):
        got = _predict_text(capsys, path, text, tmp_path, *chunk, newline=newline)
        assert_predictions(got, want[:-1])


def test_trailing_commas_never_make_an_index(fitted, tmp_path, capsys):
    d = fitted
    model = load_model(d / "model.json")
    frame = pd.DataFrame({"x": [0.5, -0.5, 0.25], "g": ["b", "1", "b"]})
    text = "x,g\n" + "".join(f"{x},{g},\n" for x, g in zip(frame["x"], frame["g"]))
    got = _predict_text(capsys, d / "model.json", text, tmp_path)
    assert_predictions(got, model.predict(frame))
    got = _predict_text(capsys, d / "model.json", text, tmp_path, "--chunk-size", "1")
    assert_predictions(got, model.predict(frame))
    # an extra field with data in it is refused, never dropped
    (tmp_path / "extra.csv").write_text("x,g\n0.5,b,7\n-0.5,01,\n")
    code, _, err = main_inproc(capsys, "predict", d / "model.json", tmp_path / "extra.csv")
    assert_one_line_error(code, err, "predict")
    assert "more fields than the header" in err


def test_header_only_csv(fitted, capsys):
    d = fitted
    (d / "empty_rows.csv").write_text("x,g,y\n")
    code, _, err = main_inproc(capsys, "predict", d / "model.json", d / "empty_rows.csv",
                               "--out", d / "p.csv")
    assert code == 0, err
    assert (d / "p.csv").read_text() == "probability\n"
    code, _, err = main_inproc(capsys, "fit", d / "empty_rows.csv", "--formula", "y ~ x",
                               "--out", d / "m2.json")
    assert_one_line_error(code, err, "fit")
    assert "no data rows" in err and not (d / "m2.json").exists()
    # the same with mtcars' model (main failed here: "'mpg' was numeric ... but is object")
    from privatelr.datasets import load_mtcars

    quiet_dplr("am ~ mpg + factor(cyl)", load_mtcars(), eps=0).to_json(d / "cars.json")
    (d / "cars_header.csv").write_text("mpg,cyl,am\n")
    code, out, err = main_inproc(capsys, "predict", d / "cars.json", d / "cars_header.csv")
    assert code == 0 and out == "probability\n", err


TYPES = {"mpg": "numeric", "am": "logical", "g": "character"}


def test_typed_columns_converts_text_by_the_recorded_type():
    frame = pd.DataFrame({"mpg": ["21", " 3.5e1", "", "NA", "-Inf", ".5"],
                          "am": ["TRUE", "F", "true", "NA", "", "False"],
                          "g": ["01", "1", "", "NA", "a b", " 2"]}, dtype=object)
    got = cli._typed_columns(frame, TYPES)
    assert list(got.columns) == ["mpg", "am", "g"]
    assert got["mpg"].dtype == np.float64
    np.testing.assert_array_equal(got["mpg"].to_numpy(), [21, 35, np.nan, np.nan, -np.inf, 0.5])
    assert str(got["am"].dtype) == "boolean"
    assert got["am"].tolist()[:3] == [True, False, True] and got["am"].isna().tolist() == \
        [False, False, False, True, True, False]
    assert got["g"].tolist()[:2] == ["01", "1"]  # "01" stays "01"
    assert got["g"].isna().tolist() == [False, False, True, True, False, False]
    assert got["g"].tolist()[4:] == ["a b", " 2"]  # character text is kept as it is
    # the same text gives the same values whatever the rows around it (any chunk size)
    for k in range(1, 6):
        parts = [cli._typed_columns(frame.iloc[i:i + k], TYPES) for i in range(0, 6, k)]
        pd.testing.assert_frame_equal(pd.concat(parts), got)


@pytest.mark.parametrize("column, bad, message", [
    ("mpg", "abc", "column 'mpg', line 3: 'abc' is not a number"),
    ("mpg", "1,5", "column 'mpg', line 3: '1,5' is not a number"),
    ("mpg", "0x10", "column 'mpg', line 3: '0x10' is not a number"),
    ("mpg", "1_000", "column 'mpg', line 3: '1_000' is not a number"),
    ("am", "yes", "column 'am', line 3: 'yes' is not a logical value"),
    ("am", "1", "column 'am', line 3: '1' is not a logical value"),
])
def test_typed_columns_names_the_column_and_line(column, bad, message):
    frame = pd.DataFrame({"mpg": ["1", "2", "3"], "am": ["T", "F", "T"]}, dtype=object)
    frame.loc[2, column] = bad
    with pytest.raises(ValueError) as info:
        cli._typed_columns(frame, TYPES)
    assert str(info.value).startswith(message)
    with pytest.raises(ValueError, match=message.replace("line 3", "line 12")):
        cli._typed_columns(frame, TYPES, first_line=10)  # a later chunk: its own line numbers


def test_typed_columns_refuses_unknown_or_missing_types():
    frame = pd.DataFrame({"d": ["2024-01-01"]}, dtype=object)
    with pytest.raises(ValueError, match="column 'd': the model records the type 'date'"):
        cli._typed_columns(frame, {"d": "date"})
    with pytest.raises(ValueError, match="column 'd': the model records no type"):
        cli._typed_columns(frame, {})


def record_types(monkeypatch, model, types):
    """Make ``model.spec.variable_types`` return ``types`` for this test. Patched on the class:
    newer specs are frozen dataclasses with ``variable_types`` as a property."""
    monkeypatch.setattr(type(model.spec), "variable_types", property(lambda self: dict(types)),
                        raising=False)


def _factor_01_case(tmp_path):
    """A model whose factor g has levels '01', '1', 'b' and a CSV to score (x, g)."""
    train = small_frame(60, seed=4)
    model = quiet_dplr("y ~ x + g", train, eps=0)
    new = pd.DataFrame({"x": [0.1, 0.2, -0.3, 0.4, 0.0, -0.1, 0.3],
                        "g": ["01", "1", "01", "b", "1", "01", "b"]})
    new.to_csv(tmp_path / "new.csv", index=False)
    return model, new


def test_typed_predict_is_the_same_for_every_chunk_size(tmp_path, monkeypatch):
    # With the recorded types, "01" is read as the level "01" in every chunk; pandas alone
    # would read a chunk of digits as the number 1 and predict level "1".
    model, new = _factor_01_case(tmp_path)
    record_types(monkeypatch, model, {"x": "numeric", "g": "character", "y": "numeric"})
    ref = model.predict(new)
    assert ref[0] != ref[1]  # levels "01" and "1" predict differently
    for size in (1, 2, 3, 100):
        out = io.StringIO()
        info = cli.predict_stream(model, str(tmp_path / "new.csv"), out, chunk_size=size)
        assert info["rows"] == 7
        got = pd.read_csv(io.StringIO(out.getvalue()))["probability"].to_numpy()
        # chunked scoring may differ from one big matrix product in the last bit
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=0)


def test_typed_predict_blank_lines_and_header_only(tmp_path, monkeypatch):
    model, _ = _factor_01_case(tmp_path)
    record_types(monkeypatch, model, {"x": "numeric", "g": "character"})
    path = tmp_path / "t.csv"
    path.write_text("x,g\n0.1,01\n\n NA ,1\n-0.3,\n0.2,b\n\n")
    want = model.predict(pd.DataFrame({"x": [0.1, np.nan, np.nan, -0.3, 0.2, np.nan],
                                       "g": ["01", None, "1", None, "b", None]}))
    for size in (1, 4, 100):
        out = io.StringIO()
        cli.predict_stream(model, str(path), out, chunk_size=size)
        assert_predictions(out.getvalue().splitlines(), want)
    path.write_text("x,g\r\n")
    out = io.StringIO()
    assert cli.predict_stream(model, str(path), out)["rows"] == 0
    assert out.getvalue() == "probability\n"


def test_typed_predict_errors_name_file_column_and_line(tmp_path, monkeypatch):
    model, _ = _factor_01_case(tmp_path)
    record_types(monkeypatch, model, {"x": "numeric", "g": "character"})
    path = tmp_path / "bad.csv"
    path.write_text("x,g\n0.1,01\n0.2,1\n0.3,b\nabc,01\n")
    for size in (1, 3, 10):
        with pytest.raises(ValueError, match=r"bad.csv: column 'x', line 4: 'abc' is not a num"):
            cli.predict_stream(model, str(path), io.StringIO(), chunk_size=size)


def test_typed_parquet_keeps_its_stored_types(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    model, new = _factor_01_case(tmp_path)
    record_types(monkeypatch, model, {"x": "numeric", "g": "character"})
    new.to_parquet(tmp_path / "new.parquet")
    out = io.StringIO()
    cli.predict_stream(model, str(tmp_path / "new.parquet"), out, chunk_size=2)
    assert_predictions(out.getvalue().splitlines(), model.predict(new))


def test_end_to_end_typed_predict_needs_spec_variable_types(tmp_path, capsys):
    # DEPENDS ON model.spec.variable_types (recorded by fit; being added to design.py): until
    # then predict falls back to pandas' per-chunk type inference and this test fails.
    train = small_frame(60, seed=4)
    train.to_csv(tmp_path / "train.csv", index=False)
    code, _, err = main_inproc(capsys, "fit", tmp_path / "train.csv", "--formula",
                               "y ~ x + g", "--eps", "0", "--out", tmp_path / "m.json")
    assert code == 0, err
    model = load_model(tmp_path / "m.json")
    assert getattr(model.spec, "variable_types", None) is not None, \
        "model.spec.variable_types is not recorded yet"
    assert model.spec.variable_types["g"] == "character"
    new = pd.DataFrame({"x": [0.1, 0.2, -0.3], "g": ["01", "1", "01"]})
    new.to_csv(tmp_path / "new.csv", index=False)
    ref = model.predict(new)
    assert ref[0] != ref[1]  # levels "01" and "1" predict differently
    for size in ("1", "2", "50000"):
        code, out, err = main_inproc(capsys, "predict", tmp_path / "m.json",
                                     tmp_path / "new.csv", "--chunk-size", size)
        assert code == 0, err
        got = pd.read_csv(io.StringIO(out))["probability"].to_numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=0)


# ---------------------------------------------------------------------------------------------
# 4. careless input: exit 2, one line
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def careless(fitted):
    d = fitted
    (d / "latin1.csv").write_bytes("x,g,y\n0.5,caf\xe9,1\n".encode("latin-1"))
    (d / "ragged.csv").write_text("x,g,y\n0.5,b,1\n0.1,01,0,9,9\n")
    (d / "ragged_first.csv").write_text("x,g,y\n0.5,b,1,9\n0.1,01,0\n")
    (d / "blank_header.csv").write_text("\nx,g,y\n0.5,b,1\n")
    (d / "empty.csv").write_text("")
    (d / "deep.json").write_text("[" * 100_000)
    (d / "dir").mkdir()
    return d


FIT = ["--formula", "y ~ x + g"]
CARELESS = [
    # (argv with {d} = the folder, message part)
    (["fit", "{d}/data.csv", *FIT, "--eps", "inf", "--out", "{d}/m.json"],
     "--eps must be a finite number, got inf"),
    (["fit", "{d}/data.csv", *FIT, "--eps", "1e309", "--out", "{d}/m.json"],
     "--eps must be a finite number"),
    (["fit", "{d}/data.csv", *FIT, "--lambda", "nan", "--out", "{d}/m.json"],
     "--lambda must be a finite number"),
    (["fit", "{d}/data.csv", *FIT, "--data-norm", "inf", "--out", "{d}/m.json"],
     "--data-norm must be a finite number"),
    (["fit", "{d}/data.csv", *FIT, "--seed", "-1", "--out", "{d}/m.json"],
     "--seed must be a non-negative integer"),
    (["fit", "{d}/latin1.csv", *FIT, "--out", "{d}/m.json"], "latin1.csv: the file is not UTF-8"),
    (["fit", "{d}/ragged_first.csv", *FIT, "--out", "{d}/m.json"],
     "ragged_first.csv: a row has more fields than the header"),
    (["fit", "{d}/blank_header.csv", *FIT, "--out", "{d}/m.json"], "the first line is blank"),
    (["fit", "{d}/data.csv", "--formula", "y ~ x +", "--out", "{d}/m.json"], "formula"),
    (["fit", "{d}/data.csv", *FIT, "--out", "{d}/dir"], "--out {d}/dir is a directory"),
    (["fit", "{d}/data.csv", *FIT, "--out", "{d}/nodir/m.json"], "does not exist"),
    (["fit", "{d}/dir", *FIT, "--out", "{d}/m.json"], "Is a directory"),
    (["predict", "{d}/model.json", "{d}/ragged.csv"],
     "ragged.csv: not a readable CSV file (Error tokenizing data. C error: Expected 3 fields"),
    (["predict", "{d}/model.json", "{d}/ragged_first.csv"],
     "a row has more fields than the header"),
    (["predict", "{d}/model.json", "{d}/latin1.csv"], "the file is not UTF-8"),
    (["predict", "{d}/model.json", "{d}/blank_header.csv"], "the first line is blank"),
    (["predict", "{d}/model.json", "{d}/empty.csv"], "the file is empty"),
    (["predict", "{d}/model.json", "{d}/dir"], "Is a directory"),
    (["predict", "{d}/model.json", "{d}/nothere.csv"], "No such file or directory"),
    (["predict", "{d}/deep.json", "{d}/data.csv"], "nested too deeply"),
    (["predict", "{d}/data.csv", "{d}/model.json"], "not valid JSON"),
    (["predict", "{d}/model.json", "{d}/data.csv", "--out", "{d}/dir"], "is a directory"),
    (["predict", "{d}/model.json", "{d}/data.csv", "--out", "{d}/nodir/p.csv"],
     "does not exist"),
    (["predict", "{d}/model.json", "{d}/data.csv", "--chunk-size", "0"], "--chunk-size"),
    (["summary", "{d}/deep.json"], "nested too deeply"),
    (["lrsimple", "{d}/data.csv", "--seed", "-2"], "--seed must be a non-negative integer"),
]


@pytest.mark.parametrize("argv, message", CARELESS,
                         ids=[f"{i}-{a[0]}" for i, (a, _) in enumerate(CARELESS)])
def test_careless_input_exits_2_with_one_line(careless, capsys, argv, message):
    d = careless
    before = snapshot(d)
    argv = [a.format(d=d) for a in argv]
    code, out, err = main_inproc(capsys, *argv)
    assert_one_line_error(code, err, argv[0])
    assert message.format(d=d) in err
    assert out == ""  # not even predict's header line
    assert snapshot(d) == before  # a refused run writes nothing


# ---------------------------------------------------------------------------------------------
# 5. --version
# ---------------------------------------------------------------------------------------------

def test_version(capsys):
    code, out, _ = main_inproc(capsys, "--version")
    assert code == 0 and out.strip() == f"privatelr {privatelr.__version__}"


def test_version_through_the_console_module(tmp_path):
    # the privatelr this test imported, not whatever the working directory holds
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(privatelr.__file__))}
    proc = subprocess.run([sys.executable, "-m", "privatelr.cli", "--version"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == f"privatelr {privatelr.__version__}"


# ---------------------------------------------------------------------------------------------
# standard input and output compared by identity (issue 27)
# ---------------------------------------------------------------------------------------------

def test_out_is_the_file_standard_input_reads(fitted, capsys, monkeypatch):
    """``predict m.json - --out data.csv < data.csv`` used to exit 0 and overwrite data.csv:
    ``-`` is compared by device and inode with ``--out``, through a symlink and a hard link
    too."""
    d = fitted
    (d / "link.csv").symlink_to(d / "data.csv")
    os.link(d / "data.csv", d / "hard.csv")
    for name in ("data.csv", "link.csv", "hard.csv"):
        with open(d / "data.csv") as stdin:                   # the shell's `< data.csv`
            monkeypatch.setattr(sys, "stdin", stdin)
            _refused(capsys, d, "predict",
                     ["predict", d / "model.json", "-", "--out", d / name])
    with open(d / "model.json") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        _refused(capsys, d, "fit", ["fit", "-", "--formula", "y ~ x", "--eps", "0",
                                    "--out", d / "model.json"])


def test_out_and_standard_input_in_a_real_shell(fitted):
    d = fitted
    before = (d / "data.csv").read_bytes()
    with open(d / "data.csv", "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "privatelr.cli", "predict",
                               str(d / "model.json"), "-", "--out", str(d / "data.csv")],
                              stdin=stdin, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "standard input" in proc.stderr and "--out" in proc.stderr
    assert (d / "data.csv").read_bytes() == before


def test_standard_output_appending_to_the_input_is_refused(fitted, capsys, monkeypatch):
    d = fitted
    before = snapshot(d)
    with open(d / "data.csv", "a") as stdout:                  # the shell's `>> data.csv`
        monkeypatch.setattr(sys, "stdout", stdout)
        code = cli.main(["predict", str(d / "model.json"), str(d / "data.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "standard output is the input DATA" in err
    assert snapshot(d) == before
