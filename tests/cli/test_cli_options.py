"""``privatelr fit``/``predict`` options for everyday use: --verbose, --weights, --id, help."""

from __future__ import annotations

import csv
import importlib.util
import io
import json

import numpy as np
import pandas as pd
import pytest

from privatelr import cli, dplr, load_model
from privatelr.datasets import load_mtcars


def _run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cars(tmp_path):
    df = load_mtcars().reset_index()
    df["mpg"] /= 40
    df["wt"] /= 6
    df["w"] = 1 + (np.arange(len(df)) % 3)
    df.loc[3, "mpg"] = np.nan
    df.loc[5, "model"] = 'Valiant, "slant six"'           # an id that needs CSV quoting
    path = tmp_path / "cars.csv"
    df.to_csv(path, index=False)
    return df, path


def test_verbose_prints_rs_messages_on_stderr_only(cars, tmp_path, capsys):
    _, path = cars
    out_file = tmp_path / "m.json"
    code, out, err = _run(["fit", str(path), "--formula", "am ~ mpg + wt", "--eps", "1",
                           "--data-norm", "1.5", "--seed", "1", "-v", "--out", str(out_file)],
                          capsys)
    assert code == 0
    assert "dplr: set lambda to:" in err and "dplr: set lambda to:" not in out
    code, out, err = _run(["fit", str(path), "--formula", "am ~ mpg + wt", "--eps", "1",
                           "--data-norm", "1.5", "--seed", "1", "--out", str(out_file),
                           "--force"], capsys)
    assert code == 0 and "set lambda" not in err and "privacy penalty" not in err


def test_weights_column_gives_the_weighted_fit(cars, tmp_path, capsys):
    df, path = cars
    out_file = tmp_path / "m.json"
    code, _, err = _run(["fit", str(path), "--formula", "am ~ mpg + wt", "--eps", "1",
                         "--data-norm", "1.5", "--weights", "w", "--weights-bound", "3",
                         "--seed", "4", "--out", str(out_file)], capsys)
    assert code == 0, err
    model = load_model(out_file)
    with pytest.warns(UserWarning, match="dropped 1"):
        ref = dplr("am ~ mpg + wt", pd.read_csv(path), eps=1, data_norm=1.5, weights="w",
                   weights_bound=3, random_state=4)
    np.testing.assert_array_equal(model.coef, ref.coef)
    assert model.calibration.weights_bound == 3.0
    # a private fit with weights needs the public bound; a missing column is named
    code, _, err = _run(["fit", str(path), "--formula", "am ~ mpg + wt", "--eps", "1",
                         "--data-norm", "1.5", "--weights", "w", "--out", str(out_file),
                         "--force"], capsys)
    assert code == 2 and "--weights-bound" in err and "weights_bound" not in err
    code, _, err = _run(["fit", str(path), "--formula", "am ~ mpg + wt", "--weights", "zz",
                         "--weights-bound", "3", "--out", str(out_file), "--force"], capsys)
    assert code == 2 and "'zz' (--weights)" in err


@pytest.mark.parametrize("chunk", ["2", "50000"])
@pytest.mark.parametrize("kind", ["probabilities", "class"])
def test_id_column_is_copied_for_every_row(cars, tmp_path, capsys, chunk, kind):
    df, path = cars
    model = dplr("am ~ mpg + wt", df.dropna(), eps=0)
    mfile = tmp_path / "m.json"
    model.to_json(mfile)
    code, out, err = _run(["predict", str(mfile), str(path), "--id", "model", "--type", kind,
                           "--chunk-size", chunk], capsys)
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["model", "probability" if kind == "probabilities" else "class"]
    assert [r[0] for r in rows[1:]] == df["model"].tolist()      # exactly as written
    assert rows[1 + 3][1] == ""                                   # the row with a missing value
    without = list(csv.reader(io.StringIO(_run(["predict", str(mfile), str(path), "--type",
                                                kind], capsys)[1])))
    assert [r[1] for r in rows[1:]] == [r[0] for r in without[1:]]


def test_id_errors_are_one_line(cars, tmp_path, capsys):
    df, path = cars
    mfile = tmp_path / "m.json"
    dplr("am ~ mpg + wt", df.dropna(), eps=0).to_json(mfile)
    code, _, err = _run(["predict", str(mfile), str(path), "--id", "nope"], capsys)
    assert code == 2 and err.strip() == (f"privatelr predict: error: {path} has no column "
                                         "'nope' (--id)")
    code, _, err = _run(["predict", str(mfile), "-", "--id", "model"], capsys)
    assert code == 2 and "stdin" in err


def test_levels_file_schema_is_documented_and_read(tmp_path, capsys):
    help_text = cli.build_parser()._subparsers._group_actions[0].choices["fit"].format_help()
    assert '{"column": ["first level"' in " ".join(help_text.split())
    df = pd.DataFrame({"g": ["a", "b", "c", "a"] * 10, "x": np.linspace(-0.5, 0.5, 40),
                       "y": [0, 1, 1, 0] * 10})
    data = tmp_path / "d.csv"
    df.to_csv(data, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"g": ["c", "a", "b"]}))
    code, _, err = _run(["fit", str(data), "--formula", "y ~ x + g", "--levels-file",
                         str(schema), "--data-norm", "1.5", "--seed", "0", "--out",
                         str(tmp_path / "m.json")], capsys)
    assert code == 0, err
    assert list(load_model(tmp_path / "m.json").coefficients.index) == ["(Intercept)", "x", "ga",
                                                                        "gb"]


# ---- progress on stderr ----------------------------------------------------------------------

class _Bar:
    """A stand-in for a tqdm bar that records what the command does with it."""

    made: list = []

    def __init__(self, total, *, desc, unit, enabled=None, leave=False, not_private=False):
        self.total, self.desc, self.enabled, self.n, self.closed = total, desc, enabled, 0, False
        self.unit, self.not_private, self.stages, self.updates = unit, not_private, [], []
        _Bar.made.append(self)

    def update(self, k):
        self.n += k
        self.updates.append((k, self.stages[-1] if self.stages else None))

    def refresh(self):
        pass

    def set_postfix_str(self, text):
        self.stages.append(text)

    def close(self):
        self.closed = True


@pytest.mark.parametrize("quiet", [False, True])
def test_progress_counts_rows_and_stages_unless_quiet(cars, tmp_path, capsys, monkeypatch, quiet):
    df, path = cars
    monkeypatch.setattr(cli, "progress_bar", _Bar)
    _Bar.made = []
    flag = ["-q"] if quiet else []
    mfile = tmp_path / "m.json"
    assert cli.main(["fit", str(path), "--formula", "am ~ mpg + wt", "--eps", "0", "--out",
                     str(mfile)] + flag) == 0
    assert cli.main(["predict", str(mfile), str(path), "--chunk-size", "5"] + flag) == 0
    fit_bar, predict_bar = _Bar.made
    # shown only on a terminal (enabled=None asks progress_bar to check), never with --quiet
    assert fit_bar.enabled is predict_bar.enabled is (False if quiet else None)
    # the fit's bar counts whole passes over the rows while it is fitting (issue 29: it used to
    # sit on three coarse stages); both counts are labelled not private
    assert fit_bar.stages == ["reading", "fitting", "saving"] and fit_bar.unit == " passes"
    assert fit_bar.n >= 2 and all(k >= 1 and stage == "fitting" for k, stage in fit_bar.updates)
    assert fit_bar.not_private and predict_bar.not_private
    # the count is a diagnostic for the terminal: not in the saved model (the release)
    saved = mfile.read_text()
    assert "passes" not in saved and "iteration" not in saved
    assert predict_bar.n == len(df) and predict_bar.closed
    if importlib.util.find_spec("pyarrow") is not None:  # the check pass counts the rows
        assert predict_bar.total == len(df)


def test_no_progress_output_when_stderr_is_not_a_terminal(cars, tmp_path, capsys):
    df, path = cars
    mfile = tmp_path / "m.json"
    dplr("am ~ mpg + wt", df.dropna(), eps=0).to_json(mfile)
    code, out, err = _run(["predict", str(mfile), str(path), "--out", str(tmp_path / "p.csv")],
                          capsys)
    assert code == 0 and out == "" and err == ""
