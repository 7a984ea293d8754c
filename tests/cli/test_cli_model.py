"""``privatelr fit`` / ``predict`` / ``summary``: subprocesses, plus in-process streaming checks."""

from __future__ import annotations

import gc
import io
import subprocess
import sys
import warnings
import weakref

import numpy as np
import pandas as pd
import pytest

from privatelr import PrivacyWarning, cli, dplr, load_model
from privatelr.datasets import load_mtcars


def run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "privatelr.cli", *args], capture_output=True,
                          text=True, timeout=300, input=stdin)


def main_inproc(capsys, *args):
    """cli.main in this process (same code path as the console script, without the ~1 s start
    of a new interpreter): (exit code, stdout, stderr)."""
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as exc:  # argparse: --help (0) and usage errors (2)
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def cars_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("cars") / "cars.csv"
    cars = load_mtcars().reset_index()
    cars["gearname"] = np.array(["three", "four", "five"])[cars["gear"].to_numpy() - 3]
    cars.to_csv(path, index=False)
    return path


FORMULA = "am ~ mpg + factor(cyl) + gearname + wt"
LEVELS = {"cyl": ["4", "6", "8"], "gearname": ["three", "four", "five"]}
LEVEL_ARGS = ["--levels", "cyl=4,6,8", "--levels", "gearname=three,four,five"]


@pytest.mark.heavy
def test_fit_predict_summary_match_the_python_api(tmp_path, cars_csv):
    model_path = tmp_path / "m.json"
    proc = run("fit", str(cars_csv), "--formula", FORMULA, "--eps", "1", "--data-norm", "40",
               "--clip", "--seed", "5", "--out", str(model_path), *LEVEL_ARGS)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("am ~ mpg + factor(cyl) + gearname + wt")
    assert "Privacy level: 1" in proc.stdout
    model = load_model(model_path)
    frame = pd.read_csv(cars_csv)
    ref = dplr(FORMULA, frame, eps=1.0, data_norm=40.0, clip=True, random_state=5,
               levels=LEVELS)
    assert model.coefficients.equals(ref.coefficients)  # same seed, same draw, same numbers
    assert "gearnamefive" in model.coefficients.index  # string column became a factor
    # without declared levels a private fit refuses (exit 2) and writes nothing
    proc = run("fit", str(cars_csv), "--formula", FORMULA, "--eps", "1", "--data-norm", "40",
               "--clip", "--out", str(tmp_path / "none.json"))
    assert proc.returncode == 2 and "--levels" not in proc.stderr.split("error:")[0]
    assert "levels" in proc.stderr and not (tmp_path / "none.json").exists()

    out = tmp_path / "p.csv"
    proc = run("predict", str(model_path), str(cars_csv), "--out", str(out), "--chunk-size", "7")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out)
    assert list(got.columns) == ["probability"]
    assert np.array_equal(got["probability"].to_numpy(), ref.predict(frame))

    proc = run("predict", str(model_path), str(cars_csv), "--type", "class")
    assert proc.returncode == 0
    labels = pd.read_csv(io.StringIO(proc.stdout))["class"].to_numpy()
    assert np.array_equal(labels, ref.predict(frame, type="class").astype(labels.dtype))

    proc = run("summary", str(model_path))
    # the saved file is the release: its summary prints the C-index as NA (not in it)
    # the Python summary, its hints in flags ("refit with --inference", not inference=True)
    assert "inference=True" in str(ref.release().summary())
    assert proc.returncode == 0 and proc.stdout.strip() == cli.summary_in_flags(
        str(ref.release().summary())).strip()
    assert "refit with --inference" in proc.stdout


def test_options_reach_dplr(tmp_path, cars_csv, capsys):
    model_path = tmp_path / "m.json"
    code, out, err = main_inproc(
        capsys, "fit", cars_csv, "--formula", "am ~ mpg + hp + wt + qsec", "--eps", "2",
        "--lambda", "0.5", "--output-perturbation", "--threshold", "youden", "--do-scale",
        "--rp-dim", "2", "--seed", "3", "--out", model_path, "--compat", "PrivateLR")
    assert code == 0, err
    m = load_model(model_path)
    assert (m.method, m.lambda_, m.threshold, m.scaled, m.did_rp, m.rp_dim) == \
        ("output", 0.5, "youden", True, True, 2)
    # the not-private parts are flagged on stderr, one line each
    assert err.count("PrivacyWarning") >= 2
    assert "model saved to" in err and "Privacy level: 2" in out


def test_predict_streams_one_chunk_at_a_time(tmp_path, monkeypatch):
    # In-process: wrap the chunk reader, check every chunk has <= chunk_size rows, and that the
    # previous chunk has been freed (weakref dead) before the next is handed out: predict never
    # holds more than one chunk of the input.
    rng = np.random.default_rng(0)
    n, chunk_size = 2_345, 500
    frame = pd.DataFrame({"x": rng.uniform(-0.7, 0.7, n), "g": rng.choice(["a", "b", "c"], n),
                          "unused": rng.standard_normal(n)})
    frame["y"] = (frame["x"] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    csv = tmp_path / "d.csv"
    frame.to_csv(csv, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        model = dplr("y ~ x + g", frame, eps=1.0, random_state=1, clip=True,
                     levels={"g": ["a", "b", "c"]})

    seen, alive_at_next = [], []
    original = cli._iter_chunks

    def spy(path, size, columns=None, passthrough=None, on_total=None):
        assert size == chunk_size and passthrough is None
        prev = None
        for chunk in original(path, size, columns=columns):
            gc.collect()
            alive_at_next.append(prev is not None and prev() is not None)
            seen.append((len(chunk), sorted(chunk.columns)))
            prev = weakref.ref(chunk)
            yield chunk
            del chunk

    monkeypatch.setattr(cli, "_iter_chunks", spy)
    out = io.StringIO()
    info = cli.predict_stream(model, str(csv), out, chunk_size=chunk_size)
    assert info == {"rows": n, "chunks": 5, "max_chunk_rows": chunk_size}
    assert [k for k, _ in seen] == [500, 500, 500, 500, 345]
    assert all(cols == ["g", "x"] for _, cols in seen)  # only the model's columns are read
    assert not any(alive_at_next)
    got = pd.read_csv(io.StringIO(out.getvalue()))["probability"].to_numpy()
    assert np.allclose(got, model.predict(frame), rtol=1e-13, atol=0)


def test_default_chunk_size_is_documented(capsys):
    assert cli.DEFAULT_CHUNK_SIZE == 50_000
    code, out, _ = main_inproc(capsys, "predict", "--help")
    assert code == 0 and "50,000" in out and "--chunk-size" in out


@pytest.mark.heavy
def test_100k_row_csv_fit_and_predict(tmp_path):
    # 100,000 rows: fit and predict through the console entry point finish and agree with the
    # in-memory model; predict reads 2 chunks of 50,000 rows (checked in the streaming test).
    rng = np.random.default_rng(2)
    n = 100_000
    frame = pd.DataFrame({"x1": rng.uniform(-0.5, 0.5, n), "x2": rng.uniform(-0.5, 0.5, n),
                          "grp": rng.choice(["north", "south", "east"], n)})
    logit = 2.0 * frame["x1"] - 1.5 * frame["x2"] + (frame["grp"] == "east") * 0.5
    frame["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
    frame.loc[::997, "x2"] = np.nan  # some missing values: empty predictions, rows kept
    csv = tmp_path / "big.csv"
    frame.to_csv(csv, index=False)
    model_path = tmp_path / "big.json"
    proc = run("fit", str(csv), "--formula", "y ~ x1 + x2 + grp", "--eps", "1", "--seed", "9",
               "--clip", "--out", str(model_path), "--levels", "grp=north,south,east")
    assert proc.returncode == 0, proc.stderr
    model = load_model(model_path)
    assert model.n == n - len(range(0, n, 997))
    out = tmp_path / "pred.csv"
    proc = run("predict", str(model_path), str(csv), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out)["probability"].to_numpy()
    assert got.shape == (n,)
    assert np.isnan(got[::997]).all() and np.isfinite(np.delete(got, np.s_[::997])).all()
    ref = model.predict(pd.read_csv(csv))
    assert np.allclose(got, ref, rtol=1e-13, atol=0, equal_nan=True)


def test_parquet_input(tmp_path, cars_csv, capsys):
    pytest.importorskip("pyarrow")
    frame = pd.read_csv(cars_csv)
    pq = tmp_path / "cars.parquet"
    frame.to_parquet(pq)
    model_path = tmp_path / "m.json"
    code, _, err = main_inproc(capsys, "fit", pq, "--formula", FORMULA, "--eps", "0", "--out",
                               model_path)
    assert code == 0, err
    code, out, err = main_inproc(capsys, "predict", model_path, pq, "--chunk-size", "10")
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out))["probability"].to_numpy()
    # chunked scoring may differ from one big matrix product in the last bit
    assert np.allclose(got, load_model(model_path).predict(frame), rtol=1e-13, atol=0)


def test_stdin_csv(tmp_path, cars_csv, capsys, monkeypatch):
    model_path = tmp_path / "m.json"
    monkeypatch.setattr(sys, "stdin", io.StringIO(cars_csv.read_text()))
    assert main_inproc(capsys, "fit", "-", "--formula", "am ~ mpg", "--eps", "0", "--out",
                       model_path)[0] == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO(cars_csv.read_text()))
    code, out, _ = main_inproc(capsys, "predict", model_path, "-")
    assert code == 0 and len(out.splitlines()) == 33


BAD_INPUT = [
    (["fit", "{csv}", "--formula", "am ~ nothere", "--out", "{tmp}/m.json"], "nothere"),
    (["fit", "{csv}", "--formula", "am ~ mpg", "--lambda", "-1", "--out", "{tmp}/m.json"],
     "--lambda must be > 0"),
    (["fit", "{csv}", "--formula", "am ~ mpg", "--eps", "-1", "--out", "{tmp}/m.json"],
     "--eps must be >= 0"),
    (["fit", "{csv}", "--formula", "am ~", "--out", "{tmp}/m.json"], "formula"),
    (["fit", "{tmp}/missing.csv", "--formula", "am ~ mpg", "--out", "{tmp}/m.json"],
     "No such file or directory"),
    (["fit", "{tmp}/empty.csv", "--formula", "am ~ mpg", "--out", "{tmp}/m.json"],
     "the file is empty"),
    (["fit", "{tmp}/x.parquet", "--formula", "am ~ mpg", "--out", "{tmp}/m.json"], "x.parquet"),
    (["predict", "{tmp}/bad.json", "{csv}"], "corrupted privatelr model file"),
    (["predict", "{tmp}/good.json", "{tmp}/nocol.csv"], "lacks column(s) ['mpg']"),
    (["predict", "{tmp}/good.json", "{csv}", "--chunk-size", "0"], "--chunk-size must be"),
    (["summary", "{tmp}/bad.json"], "not valid JSON"),
    (["summary", "{tmp}"], "is a directory"),
]


@pytest.fixture
def bad_files(tmp_path, cars_csv):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "x.parquet").write_text("not parquet")
    (tmp_path / "bad.json").write_text('{"format": "privatelr.model", ')
    (tmp_path / "nocol.csv").write_text("a,b\n1,2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dplr("am ~ mpg", pd.read_csv(cars_csv), eps=0).to_json(tmp_path / "good.json")
    return tmp_path


@pytest.mark.parametrize("args, message", BAD_INPUT)
def test_bad_input_exits_2_with_one_line(bad_files, cars_csv, capsys, args, message):
    argv = [a.format(csv=cars_csv, tmp=bad_files) for a in args]
    code, out, err = main_inproc(capsys, *argv)
    assert code == 2, err
    assert message in err
    assert err.startswith(f"privatelr {argv[0]}: error: ")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_input_exit_code_through_the_console(bad_files, cars_csv):
    # the same path as above, once through a real process
    proc = run("predict", str(bad_files / "bad.json"), str(cars_csv))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("privatelr predict: error: ") and "Traceback" not in proc.stderr
    assert run("fit", "x.csv", "--out", "m.json").returncode == 2  # --formula is required


def test_usage_errors_and_help(capsys):
    assert main_inproc(capsys, "fit")[0] == 2
    assert main_inproc(capsys, "predict", "m.json")[0] == 2
    assert main_inproc(capsys, "fit", "d.csv", "--formula", "y ~ x", "--out", "m.json",
                       "--eps", "abc")[0] == 2
    for command in ("fit", "predict", "summary", "demo", "lrsimple", "svmsimple"):
        code, out, _ = main_inproc(capsys, command, "--help")
        assert code == 0 and "usage: privatelr " + command in out


def test_internal_error_exits_1(monkeypatch, capsys):
    def boom(args):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(cli, "_summary", boom)
    monkeypatch.delenv("PRIVATELR_DEBUG", raising=False)
    code, _, err = main_inproc(capsys, "summary", "whatever.json")
    assert code == 1
    assert "internal error: RuntimeError: kaboom" in err and "Traceback" not in err


def test_predict_stream_csv_quoting_and_missing_rows(tmp_path):
    rng = np.random.default_rng(3)
    n = 60
    frame = pd.DataFrame({"x": rng.uniform(-0.9, 0.9, n)})
    frame["kind"] = np.where(frame["x"] + 0.2 * rng.standard_normal(n) > 0, 'big, "wide"', "small")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dplr("kind ~ x", frame, eps=0)
    new = frame.copy()
    new.loc[[3, 10], "x"] = np.nan
    csv = tmp_path / "new.csv"
    new.to_csv(csv, index=False)
    for type_, col in (("class", "class"), ("probabilities", "probability")):
        out = io.StringIO()
        cli.predict_stream(model, str(csv), out, type=type_, chunk_size=7)
        back = pd.read_csv(io.StringIO(out.getvalue()), keep_default_na=False)[col]
        assert len(back) == n
        ref = model.predict(new, type=type_)
        assert back[3] == "" and back[10] == ""
        keep = np.setdiff1d(np.arange(n), [3, 10])
        if type_ == "class":
            assert back[keep].tolist() == ref[keep].tolist()
            assert set(back[keep]) == {'big, "wide"', "small"}
        else:
            assert np.allclose(back[keep].astype(float), ref[keep], rtol=1e-13, atol=0)
