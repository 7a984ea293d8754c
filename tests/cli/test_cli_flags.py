"""Every error and warning of ``privatelr fit`` names the flag to use, never the Python argument
the library's message is written with (issue 29: ``levels={...}``, ``clip=True``,
``inference=True`` told a command-line user to write Python).

Each case runs one error path of the command line end to end and checks (1) the flag it must
name is in the message and (2) no Python spelling of an argument is. The translation table is
``privatelr.cli_words.FLAG_FOR_ARGUMENT``; ``test_every_rule_is_exercised`` checks each of its
rules changes at least one message of these runs or of the library messages listed below, so a
rule cannot rot unnoticed.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from privatelr import cli
from privatelr.cli_words import FLAG_FOR_ARGUMENT, cli_words, summary_in_flags

#: The Python spelling of an argument: ``name=`` (or a bare name the CLI has no flag for).
PYTHON_SPELLING = re.compile(
    r"\b(?:levels|clip|inference|data_norm|weights_bound|weights|compat|method|threshold|"
    r"do_scale|rp_dim|random_state|lambda_|bounds|budget|raise_budget|op)=|"
    r"\bdata_norm\b|\bweights_bound\b|\blambda_\b|\brandom_state\b|\bdo_scale\b|"
    r"\bpublic_bounds\b|\bpandas Categorical\b|\bdata frame\b")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("flags")
    rng = np.random.default_rng(0)
    n = 60
    pd.DataFrame({"y": rng.integers(0, 2, n), "x": rng.uniform(0, 3, n),
                  "z": rng.uniform(0, 1, n), "g": rng.choice(["a", "b", "c"], n),
                  "w": rng.uniform(0, 2, n), "s": rng.choice(["yes", "no"], n)}
                 ).to_csv(d / "d.csv", index=False)
    (d / "b.json").write_text('{"ranges": {"x": [0, 3]}, "levels": {"g": ["a", "b", "c"]}}')
    return d


# (case, arguments after DATA, the flags the message must name, exit code)
CASES = [
    ("undeclared factor", ["--formula", "y ~ x + g", "--data-norm", "5"],
     ["--levels g=A,B,...", "--levels-file", "--eps 0"], 2),
    ("text response", ["--formula", "s ~ x", "--data-norm", "5"], ["--levels s=A,B,..."], 2),
    ("rows above the norm bound", ["--formula", "y ~ x", "--data-norm", "1"],
     ["--data-norm", "--clip", "--bounds COL=LO,HI", "--compat PrivateLR"], 2),
    ("a value outside its --bounds", ["--formula", "y ~ x", "--bounds", "x=0,1"],
     ["--bounds COL=LO,HI", "--clip"], 2),
    ("a term without bounds", ["--formula", "y ~ x + z", "--bounds", "x=0,3"],
     ["--bounds z=LO,HI"], 2),
    ("levels twice", ["--formula", "y ~ x + g", "--bounds-file", "b.json", "--levels",
                      "g=a,c,b"], ["--levels g=", "--bounds-file"], 2),
    ("weights without a bound", ["--formula", "y ~ x", "--weights", "w", "--data-norm", "5"],
     ["--weights-bound A"], 2),
    ("weights above the bound", ["--formula", "y ~ x", "--weights", "w", "--weights-bound", "1",
                                 "--data-norm", "5"], ["--weights", "--weights-bound"], 2),
    ("gaussian without delta", ["--formula", "y ~ x", "--method", "gaussian", "--data-norm", "5"],
     ["--method gaussian", "--delta", "--method objective"], 2),
    ("delta with a pure method", ["--formula", "y ~ x", "--delta", "1e-6", "--data-norm", "5"],
     ["--delta 1e-06", "--method objective", "drop --delta"], 2),
    ("private youden", ["--formula", "y ~ x", "--threshold", "youden", "--data-norm", "5"],
     ["--threshold youden", "--threshold fixed", "--compat PrivateLR"], 2),
    ("private do.scale", ["--formula", "y ~ x", "--do-scale"],
     ["--do-scale", "--bounds", "--data-norm", "--compat PrivateLR"], 2),
    ("a ledger without a budget", ["--formula", "y ~ x", "--data-norm", "5", "--ledger",
                                   "new.json"], ["--budget"], 2),
    ("lambda 0 in a private fit", ["--formula", "y ~ x", "--lambda", "0"],
     ["--lambda 0", "--eps 0"], 2),
    # warnings (the fit succeeds): they too name flags
    ("compat's warning", ["--formula", "y ~ x", "--compat", "PrivateLR"],
     ["--compat PrivateLR", "(no --compat)"], 0),
    ("lambda raised", ["--formula", "y ~ x", "--lambda", "1e-9", "--eps", "0.01",
                       "--data-norm", "5"], ["--lambda 1e-09", "--eps 0.01", "--lambda 216"], 0),
    ("rp-dim not smaller", ["--formula", "y ~ x", "--rp-dim", "50", "--data-norm", "5"],
     ["--rp-dim 50"], 0),
]


def _fit(data, capsys, args):
    code = cli.main(["fit", str(data / "d.csv"), "--out", str(data / "out.json"), "--force",
                     "--seed", "1", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case, args, flags, code", CASES, ids=[c[0] for c in CASES])
def test_the_message_names_the_flag(data, capsys, monkeypatch, case, args, flags, code):
    monkeypatch.chdir(data)
    for stale in ("new.json", "new.json.lock"):
        (data / stale).unlink(missing_ok=True)
    got, out, err = _fit(data, capsys, args)
    assert got == code, err
    message = err if code else "\n".join(line for line in err.splitlines()
                                         if "Warning" in line)
    assert message.strip(), err
    for flag in flags:
        assert flag in message, (flag, message)
    assert not PYTHON_SPELLING.search(message), (PYTHON_SPELLING.search(message), message)
    if code:
        assert len(err.strip().splitlines()) == 1   # one line, no traceback


def test_the_ledger_budget_mismatch_names_raise_budget(data, capsys, monkeypatch):
    monkeypatch.chdir(data)
    ledger = data / "ledger.json"
    base = ["--formula", "y ~ x", "--data-norm", "5", "--ledger", str(ledger)]
    assert _fit(data, capsys, [*base, "--budget", "3"])[0] == 0
    code, _, err = _fit(data, capsys, [*base, "--budget", "4"])
    assert code == 2 and "--raise-budget" in err and "--budget" in err
    assert not PYTHON_SPELLING.search(err), err


def test_summaries_name_flags(data, capsys):
    """The hints of a printed summary (fit's, summary's) are in flags; numbers and fields are
    untouched."""
    code, out, _ = _fit(data, capsys, ["--formula", "y ~ x", "--data-norm", "5"])
    assert code == 0 and "refit with --inference" in out and "inference=True" not in out
    assert cli.main(["summary", str(data / "out.json")]) == 0
    text = capsys.readouterr().out
    assert "refit with --inference" in text and "inference=True" not in text
    code, out, _ = _fit(data, capsys, ["--formula", "y ~ x", "--eps", "0"])
    assert code == 0 and "(--lambda 0 gives glm's)" in out and "lambda_" not in out
    code, out, _ = _fit(data, capsys, ["--formula", "y ~ x", "--compat", "PrivateLR"])
    assert code == 0 and "NOT PRIVATE: --compat PrivateLR reproduces" in out
    # the fit at --lambda 0 --eps 0 is glm's, as dplr(lambda_=0, eps=0)
    assert _fit(data, capsys, ["--formula", "y ~ x", "--eps", "0", "--lambda", "0"])[0] == 0


# library messages the runs above do not reach (each names a Python argument)
LIBRARY_MESSAGES = [
    "this model was fitted without its information matrix; refit with inference=True "
    "(nothing is spent at eps=0)",
    "use a larger inference share (inference=0.5)",
    "bounds: the column 'x:z' multiplies more than 8 bounded columns; use "
    "public_bounds(..., center=False)",
    "the ledger budget.json does not exist; give budget= to create it",
    "or raise_budget=True to raise it",
    "compute the column in the data frame first; random_state=3",
    "or declare its two values with levels=.",
    "method='gaussian' or 'amp'",
    "pass weights_bound=2.5",
    "levels={'g': [...]} (or make the column a pandas Categorical with "
    "pd.CategoricalDtype([...]))",
    "choose op=False for output perturbation, eps=inf is not private",
    "weights='w' needs weights_bound=<bound>",
    "do_scale=True, rp_dim=3, threshold='youden'",
    "levels['g'] differs from the levels in bounds=",
    "a positive lambda_ > 0; pass lambda_ explicitly",
    "the rows (privatelr.public_bounds, or the bounds= argument of dplr)",
    "use bounds={'age': (lo, hi)}; delta=1e-06; no delta= here; inference= too",
    "compat= only",
    "weights_bound= must be set. With a data frame and target=, column positions are 0-based",
    "the rows have L2 norm above data_norm=2.5; weights_bound (an argument)",
]


def test_library_messages_in_flags():
    for message in LIBRARY_MESSAGES:
        got = cli_words(message)
        assert not PYTHON_SPELLING.search(got), (message, got)
    assert cli_words(LIBRARY_MESSAGES[0]).startswith(
        "this model was fitted without its information matrix; refit with --inference")
    assert "--method gaussian or amp" in cli_words("method='gaussian' or 'amp'")
    assert cli_words("weights='w' needs weights_bound=<bound>") == \
        "--weights w needs --weights-bound A"
    # a summary changes only in its hints
    assert summary_in_flags(" data_norm 2 plus the intercept; refit with inference=True") == \
        " data_norm 2 plus the intercept; refit with --inference"


def test_every_rule_is_exercised(data, capsys, monkeypatch):
    monkeypatch.chdir(data)
    messages = list(LIBRARY_MESSAGES)
    for _, args, _, _ in CASES:
        (data / "new.json").unlink(missing_ok=True)
        (data / "new.json.lock").unlink(missing_ok=True)
        # the library's own words: run the fit with the translation switched off
        monkeypatch.setattr(cli, "cli_words", lambda m: m)
        _, _, err = _fit(data, capsys, args)
        messages.extend(line.split("error: ", 1)[-1].split("Warning: ", 1)[-1]
                        for line in err.splitlines())
    monkeypatch.undo()
    unused = [pattern for pattern, _ in FLAG_FOR_ARGUMENT
              if not any(re.search(pattern, m) for m in messages)]
    assert not unused, unused
