"""Progress bars of ``privatelr fit``/``predict``: on stderr, only on a terminal, not with -q.

A fake terminal (a text buffer whose ``isatty()`` is True) stands in for a real one, so the
tests run in-process; without it stderr is a capture buffer, i.e. not a terminal.
"""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

from privatelr import cli, load_model
from privatelr.datasets import load_mtcars


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def cars(tmp_path):
    df = load_mtcars().reset_index(drop=True)
    df["mpg"] /= 40
    df["wt"] /= 6
    path = tmp_path / "cars.csv"
    df.to_csv(path, index=False)
    return path


def _fit_argv(path, out, *extra):
    return ["fit", str(path), "--formula", "am ~ mpg + wt", "--eps", "1", "--data-norm", "1.5",
            "--seed", "1", "--out", str(out), *extra]


def test_no_bar_when_stderr_is_not_a_terminal(cars, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert cli.main(_fit_argv(cars, model)) == 0
    out, err = capsys.readouterr()
    assert err == f"privatelr fit: model saved to {model}\n"    # the one real message
    assert "stage" not in out
    assert cli.main(["predict", str(model), str(cars), "--out", str(tmp_path / "p.csv")]) == 0
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("quiet", [False, True])
def test_bar_on_a_terminal_unless_quiet(cars, tmp_path, capsys, monkeypatch, quiet):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    model, preds = tmp_path / "m.json", tmp_path / "p.csv"
    flag = ["--quiet"] if quiet else []
    assert cli.main(_fit_argv(cars, model, *flag)) == 0
    out = capsys.readouterr().out
    fit_err = terminal.getvalue()
    terminal.seek(0)
    terminal.truncate()
    assert cli.main(["predict", str(model), str(cars), "--out", str(preds), "--chunk-size", "7",
                     *flag]) == 0
    predict_err = terminal.getvalue()
    assert "privatelr fit:" not in out and "privatelr predict" not in capsys.readouterr().out
    assert preds.read_text().count("\n") == 33                 # header + 32 rows, no bar text
    if quiet:
        assert fit_err == f"privatelr fit: model saved to {model}\n"
        assert predict_err == ""
    else:
        for stage in ("read", "design, fit, C-index", "save"):
            assert f"privatelr fit: {stage}" in fit_err
        assert fit_err.endswith(f"privatelr fit: model saved to {model}\n")
        assert "privatelr predict" in predict_err and "rows" in predict_err


def test_predict_progress_counts_every_row(cars, tmp_path):
    model = tmp_path / "m.json"
    assert cli.main(_fit_argv(cars, model, "--quiet")) == 0
    seen: list[int] = []
    stats = cli.predict_stream(load_model(model), str(cars), io.StringIO(), chunk_size=5,
                               progress=seen.append)
    # 32 rows in chunks of 5: six full chunks and one of 2, each reported once it is written
    assert seen == [5] * 6 + [2] and stats["rows"] == sum(seen) == 32
    assert np.all(np.asarray(seen) <= 5)
