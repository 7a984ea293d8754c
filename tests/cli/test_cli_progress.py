"""Progress bars of ``privatelr fit``/``predict`` end to end, with the real tqdm.

A fake terminal (a text buffer whose ``isatty()`` is True) stands in for a real one, so the
tests run in-process. (tests/cli/test_cli_options.py checks the stages and row counts with a
stand-in bar; here: what actually reaches stderr and stdout.)
"""

from __future__ import annotations

import io
import sys

import pytest

from privatelr import cli
from privatelr.datasets import load_mtcars

pytest.importorskip("tqdm")


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


@pytest.mark.parametrize("quiet", [False, True])
def test_bar_on_a_terminal_unless_quiet_and_never_on_stdout(cars, tmp_path, capsys, monkeypatch,
                                                            quiet):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    model = tmp_path / "m.json"
    flag = ["--quiet"] if quiet else []
    assert cli.main(_fit_argv(cars, model, *flag)) == 0
    fit_out = capsys.readouterr().out
    fit_err = terminal.getvalue()
    terminal.seek(0)
    terminal.truncate()
    assert cli.main(["predict", str(model), str(cars), "--chunk-size", "7", *flag]) == 0
    predict_out = capsys.readouterr().out
    predict_err = terminal.getvalue()
    # stdout: the summary, then the predictions (header + 32 rows), never bar text
    assert "steps" not in fit_out and "rows" not in predict_out
    assert predict_out.count("\n") == 33 and predict_out.startswith("probability\n")
    if quiet:
        assert fit_err == f"privatelr fit: model saved to {model}\n"
        assert predict_err == ""
    else:
        for stage in ("reading", "fitting", "saving"):
            assert stage in fit_err
        assert fit_err.endswith(f"privatelr fit: model saved to {model}\n")
        assert "predict" in predict_err and "rows" in predict_err   # (tqdm redraws at most
        # every 0.1 s: the count shown depends on timing, test_cli_options checks the count)


def test_an_error_closes_the_bar_before_its_line(cars, tmp_path, monkeypatch):
    # on a terminal the error must not be glued to the bar: the bar is closed (tqdm clears its
    # line and returns the cursor, "\r") before main prints the error
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = cli.main(["fit", str(cars), "--formula", "am ~ nope", "--out",
                     str(tmp_path / "m.json")])
    assert code == 2
    err = terminal.getvalue()
    assert "fitting" in err and "\rprivatelr fit: error: formula: column 'nope'" in err, err
