"""``privatelr fit --bounds COL=LO,HI`` and ``--bounds-file``: the public map of the Python API
(``dplr(..., bounds=public_bounds(...))``), stored in the model and applied by ``predict``;
``--out`` refuses an existing file without ``--force``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from privatelr import cli, dplr, load_model, public_bounds


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("bounds")
    rng = np.random.default_rng(1)
    n = 80
    df = pd.DataFrame({"age": rng.uniform(20, 80, n), "bmi": rng.uniform(18, 40, n),
                       "region": rng.choice(["north", "south", "east"], n)})
    df["y"] = (0.05 * (df["age"] - 50) + rng.standard_normal(n) > 0).astype(int)
    df.to_csv(d / "d.csv", index=False)
    return d, df


def _run(capsys, *args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


FORMULA = "y ~ age + bmi + region"
RANGES = {"age": (18, 90), "bmi": (15, 45)}
LEVELS = {"region": ["north", "south", "east"]}


@pytest.mark.parametrize("norm, center", [("max", True), ("rms", True), ("max", False)])
def test_bounds_give_the_python_apis_model_and_predict_applies_the_map(data, capsys, norm,
                                                                        center):
    d, df = data
    out = d / f"m_{norm}_{center}.json"
    extra = ([] if norm == "max" else ["--norm", norm]) + ([] if center else ["--no-center"])
    code, printed, err = _run(capsys, "fit", d / "d.csv", "--formula", FORMULA,
                              "--bounds", "age=18,90", "--bounds", "bmi=15,45",
                              "--levels", "region=north,south,east", "--seed", "7",
                              "--clip", "--out", out, *extra)
    assert code == 0, err
    ref = dplr(FORMULA, df, bounds=public_bounds(RANGES, levels=LEVELS, norm=norm,
                                                 center=center),
               clip=True, random_state=7)
    model = load_model(out)
    # the same public map, the same data_norm derived from it, the same noise: the same model
    assert model.data_norm == ref.data_norm
    np.testing.assert_array_equal(model.coefficients.to_numpy(), ref.coefficients.to_numpy())
    assert model.guarantee_holds
    # the map is in the saved model: predict on the raw columns gives the Python predictions
    code, _, err = _run(capsys, "predict", out, d / "d.csv", "--out", d / "p.csv", "--force")
    assert code == 0, err
    got = pd.read_csv(d / "p.csv")["probability"].to_numpy()
    np.testing.assert_allclose(got, ref.predict(df), rtol=0, atol=1e-15)
    if norm == "max" and center:  # three terms, each at most 1 once mapped: sqrt(3) with no
        assert model.data_norm == pytest.approx(np.sqrt(3), abs=0, rel=1e-15)   # --data-norm


def test_bounds_file_equals_the_flags(data, capsys):
    d, _ = data
    (d / "b.json").write_text(json.dumps({"ranges": {"age": [18, 90], "bmi": [15, 45]},
                                          "levels": LEVELS}))
    (d / "part.json").write_text(json.dumps({"ranges": {"age": [18, 90]}}))
    runs = {
        "flags": ["--bounds", "age=18,90", "--bounds", "bmi=15,45", "--levels",
                  "region=north,south,east"],
        "file": ["--bounds-file", d / "b.json"],
        "both": ["--bounds-file", d / "part.json", "--bounds", "bmi=15,45", "--levels",
                 "region=north,south,east"],
    }
    coefs = {}
    for name, args in runs.items():
        code, _, err = _run(capsys, "fit", d / "d.csv", "--formula", FORMULA, "--seed", "3",
                            "--out", d / f"{name}.json", *args)
        assert code == 0, err
        coefs[name] = load_model(d / f"{name}.json").coefficients.to_numpy()
    np.testing.assert_array_equal(coefs["flags"], coefs["file"])
    np.testing.assert_array_equal(coefs["flags"], coefs["both"])


@pytest.mark.parametrize("args, words", [
    (["--bounds", "age=18"], "write COLUMN=LO,HI"),
    (["--bounds", "age18,90"], "write COLUMN=LO,HI"),
    (["--bounds", "age=a,b"], "LO and HI must be numbers"),
    (["--bounds", "age=90,18"], "lower bound 90 of 'age' is above the upper bound 18"),
    (["--bounds", "age=0,inf"], "finite"),
    (["--bounds", "age=18,90", "--bounds", "age=0,100"], "'age' is bounded twice"),
    (["--bounds-file", "missing.json"], "--bounds-file missing.json: not a readable JSON"),
    (["--bounds-file", "list.json"], "must hold a JSON object"),
    (["--bounds-file", "levels_only.json"], "holds no \"ranges\""),
    (["--bounds-file", "bad_range.json"], "\"ranges\" must map each column to [lo, hi]"),
    (["--norm", "rms"], "--norm shapes the public map of --bounds"),
    (["--no-center"], "--no-center shapes the public map of --bounds"),
])
def test_bad_bounds_are_refused_before_the_data_are_read(data, capsys, monkeypatch, args,
                                                         words):
    d, _ = data
    monkeypatch.chdir(d)
    (d / "list.json").write_text("[1, 2]")
    (d / "levels_only.json").write_text(json.dumps({"levels": LEVELS}))
    (d / "bad_range.json").write_text(json.dumps({"ranges": {"age": [18]}}))
    # DATA does not exist: the error is about the bounds, so they were checked first
    code, _, err = _run(capsys, "fit", d / "nope.csv", "--formula", FORMULA,
                        "--out", d / "never.json", *args)
    assert code == 2 and words in err and "nope.csv" not in err, err
    assert len(err.strip().splitlines()) == 1 and not (d / "never.json").exists()


def test_out_refuses_an_existing_file_without_force(data, capsys):
    d, _ = data
    model = d / "keep.json"
    model.write_text("precious")
    # refused before anything is read: DATA does not even exist
    code, _, err = _run(capsys, "fit", d / "nope.csv", "--formula", "y ~ age", "--out", model)
    assert code == 2 and f"--out {model} exists; give --force" in err
    assert model.read_text() == "precious"
    code, _, err = _run(capsys, "fit", d / "d.csv", "--formula", "y ~ age", "--out", model,
                        "--bounds", "age=18,90", "--force")
    assert code == 0, err
    assert load_model(model).coefficients.index.tolist() == ["(Intercept)", "age"]
    preds = d / "preds.csv"
    preds.write_text("old")
    code, _, err = _run(capsys, "predict", model, d / "d.csv", "--out", preds)
    assert code == 2 and "give --force" in err and preds.read_text() == "old"
    code, _, err = _run(capsys, "predict", model, d / "d.csv", "--out", preds, "--force")
    assert code == 0 and preds.read_text().startswith("probability")
    # a device is not a file: written without --force
    assert _run(capsys, "predict", model, d / "d.csv", "--out", "/dev/null")[0] == 0
