"""The hardened input boundary: one row of docs/hostile_inputs.md per case, one test per row.

Every case names the entry point, the hostile input, and what must happen: an exception of a
given type whose message matches a pattern (naming the argument or the problem), or — where the
input is legitimate but unusual — a result with a given warning. Nothing may surface as an
internal traceback, hang, or return a silently wrong number.

``python tests/unit/test_hostile_inputs.py > docs/hostile_inputs.md`` regenerates the table
from these cases (message column = the message actually raised); a test checks that the committed
table is current.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tempfile
import warnings
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

from privatelr import (LogisticRegressionDP, PrivacyWarning, dplr, dplr_tune, exponential_mechanism,
                       noisy_dot_product, predict, scaled, tune_classification_model, walr,
                       walr_fit)
from privatelr.cformat import parse_cformat
from privatelr.cli import main as cli_main

DOC = Path(__file__).resolve().parents[2] / "docs" / "hostile_inputs.md"
TMP = Path(tempfile.mkdtemp(prefix="privatelr-hostile-"))

DF = pd.DataFrame({"a": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.15, 0.35],
                   "f": list("xyxyxyxy"), "y": [0, 1, 0, 1, 1, 0, 0, 1]})
X01 = np.random.default_rng(0).uniform(size=(40, 2))
Y01 = (X01[:, 0] > 0.5).astype(int)


def _model():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dplr("y ~ a + f", DF, random_state=0, levels={"f": ["x", "y"]}, data_norm=2.0,
                    clip=True)


def _csv() -> str:
    path = TMP / "data.csv"
    DF.to_csv(path, index=False)
    return str(path)


def _future_model() -> str:
    path = TMP / "model.json"
    _model().to_json(path)
    payload = json.loads(path.read_text())
    payload["format_version"] = 999
    path.write_text(json.dumps(payload))
    return str(path)


def _cli(*argv):
    """Run the CLI in-process; return (exit code, stderr)."""
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        try:
            code = cli_main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
    return code, err.getvalue()


@dataclass(frozen=True)
class Case:
    id: str
    entry: str
    hostile: str
    call: Callable
    expect: str          # "ValueError", "TypeError", "exit 2", or "warns <Category>"
    match: str           # regex the message must match


C = Case
CASES = [
    # ---- dplr -------------------------------------------------------------------------------
    C("dplr-missing-column", "dplr", "formula names a column not in data",
      lambda: dplr("y ~ nope", DF), "ValueError", r"nope"),
    C("dplr-missing-response", "dplr", "response column not in data",
      lambda: dplr("zzz ~ a", DF), "ValueError", r"zzz"),
    C("dplr-formula-syntax", "dplr", "truncated formula 'y ~ a +'",
      lambda: dplr("y ~ a +", DF), "ValueError", r"formula"),
    C("dplr-no-response", "dplr", "formula without '~'",
      lambda: dplr("a + f", DF), "ValueError", r"response"),
    C("dplr-eps-negative", "dplr", "eps = -1",
      lambda: dplr("y ~ a", DF, eps=-1), "ValueError", r"eps"),
    C("dplr-eps-nan", "dplr", "eps = NaN",
      lambda: dplr("y ~ a", DF, eps=float("nan")), "ValueError", r"eps"),
    C("dplr-eps-string", "dplr", "eps = '1' (a string)",
      lambda: dplr("y ~ a", DF, eps="1"), "TypeError", r"eps"),
    C("dplr-eps-list", "dplr", "eps = [1]",
      lambda: dplr("y ~ a", DF, eps=[1]), "TypeError", r"eps"),
    C("dplr-lambda-zero", "dplr", "lambda_ = 0",
      lambda: dplr("y ~ a", DF, lambda_=0), "ValueError", r"lambda_"),
    C("dplr-lambda-negative", "dplr", "lambda_ = -0.1",
      lambda: dplr("y ~ a", DF, lambda_=-0.1), "ValueError", r"lambda_"),
    C("dplr-lambda-inf", "dplr", "lambda_ = inf",
      lambda: dplr("y ~ a", DF, lambda_=float("inf")), "ValueError", r"lambda_"),
    C("dplr-empty", "dplr", "empty DataFrame (no rows)",
      lambda: dplr("y ~ a", DF.iloc[:0]), "ValueError", r"row|empty"),
    C("dplr-all-missing", "dplr", "every row has a missing value",
      lambda: dplr("y ~ a", DF.assign(a=np.nan)), "ValueError", r"missing"),
    C("dplr-inf-covariate", "dplr", "an infinite covariate value",
      lambda: dplr("y ~ a", DF.assign(a=[np.inf] + [0.1] * 7)), "ValueError", r"infinite"),
    C("dplr-huge-covariate", "dplr", "a covariate of 1e300 (norms overflow)",
      lambda: dplr("y ~ a", DF.assign(a=[1e300] + [0.1] * 7)), "ValueError", r"overflow"),
    C("dplr-duplicate-columns", "dplr", "duplicate column names",
      lambda: dplr("y ~ .", pd.concat([DF, DF[["a"]]], axis=1)), "ValueError", r"duplicate"),
    C("dplr-one-row", "dplr", "one-row data (a single outcome)",
      lambda: dplr("y ~ a", DF.iloc[:1], random_state=0), "warns UserWarning", r"single value"),
    C("dplr-all-equal-labels", "dplr", "all labels equal",
      lambda: dplr("y ~ a", DF.assign(y=1), random_state=0), "warns UserWarning", r"single value"),
    C("dplr-three-classes", "dplr", "numeric response with three values (private fit)",
      lambda: dplr("y ~ a", DF.assign(y=[0, 1, 2, 0, 1, 2, 0, 1]), random_state=0),
      "ValueError", r"only 0 and 1"),
    C("dplr-three-classes-eps0", "dplr", "numeric response with three values (eps = 0)",
      lambda: dplr("y ~ a", DF.assign(y=[0, 1, 2, 0, 1, 2, 0, 1]), eps=0),
      "ValueError", r"numeric with values other than 0 and 1 \(0, 1, 2\)"),
    C("dplr-rows-outside-ball", "dplr", "covariate rows above data_norm (not clipped)",
      lambda: dplr("y ~ a", DF.assign(a=DF.a * 10), random_state=0), "ValueError",
      r"data_norm.*clip=True"),
    C("dplr-object-42", "dplr", "object = 42",
      lambda: dplr(42), "TypeError", r"accepts"),
    C("dplr-data-string", "dplr", "data = 'notadf'",
      lambda: dplr("y ~ a", "notadf"), "TypeError", r"data"),
    C("dplr-target-range", "dplr", "target = 10 on a 3-column frame",
      lambda: dplr(DF, target=10), "ValueError", r"target"),
    C("dplr-label-length", "dplr", "label vector shorter than the covariates",
      lambda: dplr(np.array([0, 1, 0]), DF[["a"]]), "ValueError", r"label vector"),
    C("dplr-threshold", "dplr", "threshold = 'median'",
      lambda: dplr("y ~ a", DF, threshold="median"), "ValueError", r"threshold"),
    C("dplr-rp-dim-type", "dplr", "rp_dim = '2'",
      lambda: dplr("y ~ a", DF, rp_dim="2"), "TypeError", r"rp_dim"),
    C("dplr-data-norm", "dplr", "data_norm = 0",
      lambda: dplr("y ~ a", DF, data_norm=0), "ValueError", r"data_norm"),
    C("dplr-compat", "dplr", "compat = 'R'",
      lambda: dplr("y ~ a", DF, compat="R"), "ValueError", r"compat"),
    C("dplr-random-state", "dplr", "random_state = 'seed'",
      lambda: dplr("y ~ a", DF, random_state="seed"), "TypeError", r"random_state"),
    C("dplr-clip-type", "dplr", "clip = 'yes'",
      lambda: dplr("y ~ a", DF, clip="yes"), "TypeError", r"clip"),
    # ---- predict ----------------------------------------------------------------------------
    C("predict-unseen-level", "predict", "a factor level not seen in training",
      lambda: predict(_model(), pd.DataFrame({"a": [0.1], "f": ["z"]})), "ValueError",
      r"'f'.*'z'"),
    C("predict-missing-column", "predict", "a model column missing from new data",
      lambda: predict(_model(), pd.DataFrame({"a": [0.1]})), "ValueError", r"lacks column"),
    C("predict-data-string", "predict", "data = 'abc'",
      lambda: predict(_model(), "abc"), "TypeError", r"data"),
    C("predict-not-a-model", "predict", "model = a dict",
      lambda: predict({"coef": [1]}, DF), "TypeError", r"model|DPLR"),
    # ---- scaled -----------------------------------------------------------------------------
    C("scaled-missing-column", "scaled", "formula names a column not in data",
      lambda: scaled("y ~ nope", DF), "ValueError", r"nope"),
    C("scaled-not-formula", "scaled", "fml = 3",
      lambda: scaled(3, DF), "TypeError", r"formula"),
    C("scaled-data-list", "scaled", "data = a list",
      lambda: scaled("y ~ a", [1, 2, 3]), "TypeError", r"data"),
    # ---- C format -----------------------------------------------------------------------------
    C("cformat-truncated", "read_cformat", "a truncated file (labels missing)",
      lambda: parse_cformat("2 2 0.1 1\n0.1 0.2\n0.3 0.4\n1"), "ValueError", r"number|expected"),
    C("cformat-extra", "read_cformat", "more numbers than n*d + n",
      lambda: parse_cformat("1 1 0.1 1\n0.5\n1\n7"), "ValueError", r"number|expected|extra"),
    C("cformat-token", "read_cformat", "a non-numeric token",
      lambda: parse_cformat("1 1 0.1 1\nabc\n1"), "ValueError", r"abc"),
    C("cformat-label", "read_cformat", "a label 0 instead of -1/1",
      lambda: parse_cformat("1 1 0.1 1\n0.5\n0"), "ValueError", r"label"),
    C("cformat-n", "read_cformat", "n = 2.5",
      lambda: parse_cformat("2.5 1 0.1 1\n0.5\n1"), "ValueError", r"\bn\b"),
    C("cformat-lambda", "read_cformat", "lambda = 0",
      lambda: parse_cformat("1 1 0 1\n0.5\n1"), "ValueError", r"λ|lambda"),
    C("cformat-h", "read_cformat", "SVM Huber constant h = 0.7",
      lambda: parse_cformat("1 1 0.1 1 0.7\n0.5\n1", svm=True), "ValueError", r"\bh\b"),
    C("cformat-empty", "read_cformat", "an empty file",
      lambda: parse_cformat(""), "ValueError", r"empty|number|header"),
    # ---- CLI --------------------------------------------------------------------------------
    C("cli-missing-file", "privatelr lrsimple", "a file that does not exist",
      lambda: _cli("lrsimple", "/nonexistent/file.txt"), "exit 2", r"No such file"),
    C("cli-bad-eps", "privatelr fit", "--eps -1",
      lambda: _cli("fit", _csv(), "--formula", "y ~ a", "--eps", "-1", "--out",
                   str(TMP / "m.json")), "exit 2", r"eps"),
    C("cli-missing-formula-column", "privatelr fit", "--formula naming a missing column",
      lambda: _cli("fit", _csv(), "--formula", "y ~ nope", "--out", str(TMP / "m.json")),
      "exit 2", r"nope"),
    C("cli-future-model", "privatelr predict", "a model file of an unknown future format version",
      lambda: _cli("predict", _future_model(), _csv()), "exit 2", r"version"),
    C("cli-corrupt-model", "privatelr summary", "a model file that is not JSON",
      lambda: _cli("summary", __file__), "exit 2", r"JSON|model"),
    C("cli-unknown-command", "privatelr", "an unknown subcommand",
      lambda: _cli("frobnicate"), "exit 2", r"invalid choice"),
    # ---- WALR -------------------------------------------------------------------------------
    C("walr-features-range", "noisy_dot_product", "features outside [0, 1]",
      lambda: noisy_dot_product(X01 * 3, Y01, eps=1, delta=1e-5), "ValueError", r"\[0, 1\]"),
    C("walr-delta-zero", "noisy_dot_product", "delta = 0",
      lambda: noisy_dot_product(X01, Y01, eps=1, delta=0), "ValueError", r"delta"),
    C("walr-delta-one", "noisy_dot_product", "delta = 1.5",
      lambda: noisy_dot_product(X01, Y01, eps=1, delta=1.5), "ValueError", r"delta"),
    C("walr-eps-zero", "noisy_dot_product", "eps = 0",
      lambda: noisy_dot_product(X01, Y01, eps=0, delta=1e-5), "ValueError", r"eps"),
    C("walr-classic-eps", "noisy_dot_product", "classic mechanism with eps = 2",
      lambda: noisy_dot_product(X01, Y01, eps=2, delta=1e-5, mechanism="classic"),
      "ValueError", r"analytic"),
    C("walr-negative-weights", "noisy_dot_product", "a negative weight",
      lambda: noisy_dot_product(X01, Y01, eps=1, delta=1e-5, weights=-np.ones(40)),
      "ValueError", r"weights"),
    C("walr-weights-bound", "noisy_dot_product", "weights above weights_bound",
      lambda: noisy_dot_product(X01, Y01, eps=1, delta=1e-5, weights=np.full(40, 2.0),
                                weights_bound=1.0), "ValueError", r"weights"),
    C("walr-noisy-length", "walr_fit", "noisy vector of the wrong length",
      lambda: walr_fit(X01, np.zeros(3)), "ValueError", r"noisy|length|k"),
    C("walr-formula-column", "walr", "formula names a missing column",
      lambda: walr("y ~ nope", DF, eps=1, delta=1e-5), "ValueError", r"nope"),
    # ---- tuning -----------------------------------------------------------------------------
    C("tune-mixed-eps", "tune_classification_model", "models with different eps",
      lambda: tune_classification_model([LogisticRegressionDP(eps=1, gamma=1),
                                         LogisticRegressionDP(eps=2, gamma=1)],
                                        X01, Y01, [1, 1], [0, 0]), "ValueError", r"eps"),
    C("tune-no-models", "tune_classification_model", "an empty list of models",
      lambda: tune_classification_model([], X01, Y01, [1, 1], [0, 0]), "ValueError", r"models"),
    C("tune-bounds-order", "LogisticRegressionDP.fit", "lower bound above upper bound",
      lambda: LogisticRegressionDP(eps=1, gamma=1).fit(X01, Y01, [0, 0], [1, 1]), "ValueError",
      r"lower_bounds"),
    C("tune-lambdas-empty", "dplr_tune", "lambdas = ()",
      lambda: dplr_tune("y ~ a", DF, lambdas=()), "ValueError", r"lambdas"),
    C("tune-lambdas-negative", "dplr_tune", "a negative candidate lambda",
      lambda: dplr_tune("y ~ a", DF, lambdas=(0.1, -1)), "ValueError", r"lambdas"),
    C("expmech-nan", "exponential_mechanism", "a NaN utility",
      lambda: exponential_mechanism([0.0, float("nan")], 1.0, 1.0), "ValueError", r"utility"),
    C("expmech-sensitivity", "exponential_mechanism", "sensitivity = 0",
      lambda: exponential_mechanism([0.0, 1.0], 1.0, 0.0), "ValueError", r"sensitivity"),
]


def run_case(case: Case) -> tuple[str, str]:
    """Execute a case; return (what happened, message). Never lets an exception escape."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = case.call()
        except (ValueError, TypeError) as exc:
            base = "ValueError" if isinstance(exc, ValueError) else "TypeError"
            prefix = "" if type(exc).__name__ == base else f"({type(exc).__name__}) "
            return base, prefix + " ".join(str(exc).split())
        except Exception as exc:  # noqa: BLE001 - any other type is a failure of the boundary
            return f"UNEXPECTED {type(exc).__name__}", " ".join(str(exc).split())
    if case.expect.startswith("exit"):
        code, err = out
        return f"exit {code}", " ".join(err.split())
    for w in caught:
        if case.expect == f"warns {w.category.__name__}":
            return case.expect, " ".join(str(w.message).split())
    shown = [f"{w.category.__name__}: {w.message}" for w in caught]
    return "returned", "; ".join(shown)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case):
    outcome, message = run_case(case)
    assert outcome == case.expect, f"{case.id}: expected {case.expect}, got {outcome}: {message}"
    assert re.search(case.match, message), f"{case.id}: message {message!r} !~ {case.match!r}"
    assert "Traceback" not in message


def test_there_are_at_least_forty_rows_and_ids_are_unique():
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


def render_table() -> str:
    lines = ["# Hostile inputs and what they get", "",
             "Generated from `tests/unit/test_hostile_inputs.py` (one parametrised test per row; "
             "`python tests/unit/test_hostile_inputs.py > docs/hostile_inputs.md` regenerates it). "
             "`warns X` rows are legitimate inputs that return a result with warning X.", "",
             "| # | id | entry point | hostile input | outcome | message |",
             "|---|---|---|---|---|---|"]
    for i, case in enumerate(CASES, 1):
        outcome, message = run_case(case)
        message = message.replace(str(TMP), "<tmp>").replace(str(DOC.parents[1]), ".")
        message = message.replace("|", "\\|")
        if len(message) > 220:
            message = message[:217] + "..."
        lines.append(f"| {i} | `{case.id}` | `{case.entry}` | {case.hostile} | {outcome} | "
                     f"{message} |")
    table = "\n".join(lines) + "\n"
    # hand-written sections after the marker are kept when the table is regenerated
    text = DOC.read_text() if DOC.exists() else ""
    return table + ("\n" + text[text.index(HAND_WRITTEN):] if HAND_WRITTEN in text else "")


HAND_WRITTEN = "<!-- hand-written sections below: kept when the table is regenerated -->"


def test_documented_table_lists_every_case():
    text = DOC.read_text()
    for case in CASES:
        assert f"`{case.id}`" in text, f"{case.id} missing from {DOC}; regenerate the table"


if __name__ == "__main__":
    sys.stdout.write(render_table())
