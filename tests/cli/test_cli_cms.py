"""``privatelr lrsimple`` / ``privatelr svmsimple`` in subprocesses (the C programs' interface)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from privatelr import erm
from privatelr.cformat import read_cformat, write_cformat
from privatelr.datasets import data_path

EX_LR = str(data_path("example_lr.txt"))
EX_SVM = str(data_path("example_svm.txt"))


def run(*args):
    return subprocess.run([sys.executable, "-m", "privatelr.cli", *args], capture_output=True,
                          text=True, timeout=120)


def parse_three_lines(stdout: str, d: int):
    lines = stdout.splitlines()
    assert len(lines) == 3, stdout
    out = []
    for line in lines:
        tokens = line.split()
        assert len(tokens) == d + 1, line
        coef = np.array([float(t) for t in tokens[:d]])
        code = int(tokens[d])  # must be an integer, not "0.0"
        assert np.isfinite(coef).all()
        out.append((coef, code))
    return out


@pytest.mark.parametrize("command, path, svm", [("lrsimple", EX_LR, False),
                                                ("svmsimple", EX_SVM, True)])
def test_three_lines_and_first_equals_engine(command, path, svm):
    proc = run(command, path, "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    data = read_cformat(path, svm=svm)
    (w0, c0), (w1, c1), (w2, c2) = parse_three_lines(proc.stdout, data.d)
    assert (c0, c1, c2) == (0, 0, 0)
    ref = erm.fit(data.X, data.y, lambda_=data.lambda_, eps=0.0,
                  loss="huber" if svm else "logistic", h=data.h or 0.5)
    # printed with repr(): reads back to the very same doubles
    assert np.array_equal(w0, ref.coef)
    # the private lines are noisy versions, not copies of the non-private one
    assert not np.array_equal(w1, w0) and not np.array_equal(w2, w0)


def test_private_lines_follow_the_engine_with_one_generator():
    # The output/objective lines equal erm.fit fed one Generator seeded with --seed (output
    # perturbation drawn first): --seed makes the run reproducible.
    a = run("lrsimple", EX_LR, "--seed", "11")
    assert a.returncode == 0
    data = read_cformat(EX_LR)
    rng = np.random.default_rng(11)
    out = erm.fit(data.X, data.y, lambda_=0.01, eps=1.0, method="output", random_state=rng)
    obj = erm.fit(data.X, data.y, lambda_=0.01, eps=1.0, method="objective", small_eps="error",
                  random_state=rng)
    lines = parse_three_lines(a.stdout, data.d)
    assert np.array_equal(lines[1][0], out.coef)
    assert np.array_equal(lines[2][0], obj.coef)


def test_c_variant_refuses_small_eps(tmp_path):
    # n = 569, lambda = 1e-3, logistic c = 1/4: eps' = 1 - 2 log(1 + 0.25/0.569) = 0.27 > 1e-4
    # works, but the Huber SVM (c = 1/(2h) = 1) gives eps' = 1 - 2 log(1 + 1/0.569) = -1.03:
    # the C program refuses (no adjusted lambda).
    data = read_cformat(EX_SVM, svm=True)
    path = tmp_path / "small.txt"
    write_cformat(path, data.X, data.y, lambda_=1e-3, eps=1.0, h=0.5)
    proc = run("svmsimple", str(path), "--seed", "1")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "eps too small" in proc.stderr and "< 1e-4" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    write_cformat(path, data.X, data.y, lambda_=1e-3, eps=1.0)
    assert run("lrsimple", str(path), "--seed", "1").returncode == 0


def test_rows_outside_the_unit_ball_fail_closed_or_clip(tmp_path):
    path = tmp_path / "big.txt"
    write_cformat(path, [[0.5, 0.5], [2.0, 0.0], [0.1, -0.3], [-0.2, 0.4]], [1, 1, -1, -1],
                  lambda_=0.5, eps=5.0)
    proc = run("lrsimple", str(path), "--seed", "1")
    assert proc.returncode == 2 and proc.stdout == ""          # nothing released
    assert "above data_norm=1" in proc.stderr and "clip" in proc.stderr
    proc = run("lrsimple", str(path), "--seed", "1", "--clip")
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 3


MALFORMED = [
    ("2 2 0.5 1\n0.1 0.2\n0.3\n1\n-1\n", "fewer numbers than expected"),
    ("2 2 0.5 1\n0.1 0.2\n0.3 0.4\n1\n-1\n1\n", "more numbers than expected"),
    ("2 2 0.5 1\n0.1 zz\n0.3 0.4\n1\n-1\n", "line 2, token 6: 'zz' is not a number"),
    ("2 2 0.5 1\n0.1 0.2\n0.3 0.4\n1\n0\n", "labels must be -1 or 1"),
    ("0 2 0.5 1\n", "n must be a positive integer"),
    ("2 1.5 0.5 1\n0.1 0.2\n0.3 0.4\n1\n-1\n", "d must be a positive integer"),
    ("2 2 0 1\n0.1 0.2\n0.3 0.4\n1\n-1\n", "lambda must be > 0"),
    ("", "header needs 4 numbers"),
]


@pytest.mark.parametrize("text, message", MALFORMED)
def test_malformed_files_exit_2_with_one_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    proc = run("lrsimple", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert message in proc.stderr
    assert proc.stderr.startswith("privatelr lrsimple: error: ")
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_svm_bad_huber_constant_exits_2(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("2 2 0.5 1 0.75\n0.1 0.2\n0.3 0.4\n1\n-1\n")
    proc = run("svmsimple", str(path))
    assert proc.returncode == 2 and "h must lie in (0, 0.5], got '0.75'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_usage_errors_exit_2():
    assert run("lrsimple").returncode == 2  # missing FILE: argparse
    proc = run("lrsimple", "/nonexistent/file.txt")
    assert proc.returncode == 2
    assert "No such file or directory: /nonexistent/file.txt" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_stdin_and_in_process(monkeypatch, capsys):
    import io

    from privatelr import cli

    monkeypatch.setattr(sys, "stdin", io.StringIO(open(EX_LR).read()))
    assert cli.main(["lrsimple", "-", "--seed", "3"]) == 0
    lines = parse_three_lines(capsys.readouterr().out, 6)
    proc_lines = parse_three_lines(run("lrsimple", EX_LR, "--seed", "3").stdout, 6)
    for (a, ca), (b, cb) in zip(lines, proc_lines):
        assert np.array_equal(a, b) and ca == cb
    monkeypatch.setattr(sys, "stdin", io.StringIO("2 2 0.5 1 1 x"))
    assert cli.main(["lrsimple", "-"]) == 2
    assert "line 1, token 6: 'x' is not a number" in capsys.readouterr().err
