"""``privatelr fit --ledger FILE --budget EPS``: a budget kept across runs (issue 29, item 4).

Done when: three runs at eps = 1 on a budget of 2 — the third is refused before the data are
read; and a run killed mid-way leaves a valid ledger that never under-counts. The order the
command line follows (privatelr.ledger's module docstring): lock, check (before reading), read
and fit, record the spend (atomic write), then write the model and print the summary.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from privatelr import BudgetLedger, cli, load_model


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(2)
    n = 60
    df = pd.DataFrame({"age": rng.uniform(20, 80, n), "bmi": rng.uniform(18, 40, n)})
    df["y"] = (rng.uniform(size=n) < 0.5).astype(int)
    df.to_csv(tmp_path / "d.csv", index=False)
    return tmp_path


def _fit_args(d, data_file, out, *extra):
    return ["fit", str(data_file), "--formula", "y ~ age + bmi", "--bounds", "age=18,90",
            "--bounds", "bmi=15,45", "--eps", "1", "--ledger", str(d / "budget.json"),
            "--budget", "2", "--out", str(out), *extra]


def _run(capsys, args):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_third_run_is_refused_before_the_data_are_read(data, capsys, monkeypatch):
    d = data
    for i in (1, 2):
        code, out, err = _run(capsys, _fit_args(d, d / "d.csv", d / f"m{i}.json",
                                                "--seed", "12345"))
        assert code == 0, err
        assert f"this run spent eps=1; spent eps={i} of --budget 2 in {i} run" in err
        assert f"remaining eps={2 - i}" in err
    # the third run: any read of the data would fail loudly, and the data file is not there
    reads = []
    monkeypatch.setattr(cli, "_read_table", lambda path: reads.append(path))
    os.rename(d / "d.csv", d / "moved.csv")
    code, out, err = _run(capsys, _fit_args(d, d / "d.csv", d / "m3.json"))
    assert code == 2 and reads == [] and out == ""
    assert err.startswith("privatelr fit: error: --ledger ") and "does not fit the budget" in err
    assert "spent eps=2 of --budget 2 in 2 runs, remaining eps=0" in err
    assert "Nothing was read or charged" in err and "No such file" not in err
    assert not (d / "m3.json").exists()
    ledger = BudgetLedger.read(d / "budget.json")
    assert ledger.spent == (2.0, 0.0) and len(ledger.spends) == 2
    # nothing private in the ledger: no seed, no row count, no value of the rows
    text = (d / "budget.json").read_text()
    assert "12345" not in text and "seed" not in text and '"n"' not in text
    assert "--formula 'y ~ age + bmi'" in ledger.spends[0].note
    # `privatelr ledger` prints the budget, each spend and what remains
    assert cli.main(["ledger", str(d / "budget.json")]) == 0
    shown = capsys.readouterr().out
    assert "budget: eps=2, delta=0" in shown and "spent: eps=2, delta=0; remaining: eps=0" in shown
    assert shown.count("eps=1, delta=0") == 2


def test_a_smaller_run_still_fits_and_non_private_runs_are_refused(data, capsys):
    d = data
    assert _run(capsys, _fit_args(d, d / "d.csv", d / "a.json"))[0] == 0
    args = _fit_args(d, d / "d.csv", d / "b.json")
    args[args.index("--eps") + 1] = "0.5"
    code, _, err = _run(capsys, args)
    assert code == 0 and "remaining eps=0.5" in err
    for change in (["--eps", "0"], ["--compat", "PrivateLR"]):
        args = _fit_args(d, d / "d.csv", d / "c.json")
        if change[0] == "--eps":
            args[args.index("--eps") + 1] = "0"
        else:
            args += change
        code, _, err = _run(capsys, args)
        assert code == 2 and "cannot be charged to --ledger" in err
    assert BudgetLedger.read(d / "budget.json").spent == (1.5, 0.0)
    # a ledger in a missing folder, or a folder, is named by its flag (not the lock file)
    for where in (d / "nodir" / "b.json", d):
        args = _fit_args(d, d / "d.csv", d / "c.json")
        args[args.index("--ledger") + 1] = str(where)
        code, _, err = _run(capsys, args)
        assert code == 2 and f"--ledger {where}" in err and ".lock" not in err, err
    # a Gaussian run needs a ledger with a delta budget
    args = _fit_args(d, d / "d.csv", d / "g.json") + ["--method", "gaussian", "--delta", "1e-6"]
    args[args.index("--eps") + 1] = "0.25"
    code, _, err = _run(capsys, args)
    assert code == 2 and "--budget-delta" in err


def test_a_tampered_ledger_is_refused_before_the_data_are_read(data, capsys):
    d = data
    assert _run(capsys, _fit_args(d, d / "d.csv", d / "a.json"))[0] == 0
    path = d / "budget.json"
    path.write_text(path.read_text().replace('"eps": 1.0', '"eps": 0.1'))
    code, _, err = _run(capsys, _fit_args(d, d / "missing.csv", d / "b.json"))
    assert code == 2 and "corrupted privatelr ledger file" in err and "checksum" in err
    assert "missing.csv" not in err
    code, _, err = _run(capsys, ["ledger", str(path)])
    assert code == 2 and "corrupted privatelr ledger file" in err


# A run killed with SIGKILL (no cleanup, no finally) at two points: during the fit, before the
# spend is recorded; and after the spend is recorded, before the model is written.
_KILLER = textwrap.dedent("""
    import os, signal, sys
    from privatelr import cli, persist
    where = sys.argv[1]

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if where == "fitting":        # the first pass over the rows
        class Dying:
            def __init__(self, bar):
                pass
            __call__ = die
        cli._PassCounter = Dying
    elif where == "saving":       # the model's write
        persist.save_model = die
    sys.exit(cli.main(sys.argv[2:]))
""")


@pytest.mark.heavy
@pytest.mark.parametrize("where", ["fitting", "saving"])
def test_a_run_killed_mid_way_leaves_a_valid_ledger_that_never_undercounts(data, where):
    d = data
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    first = subprocess.run([sys.executable, "-c", _KILLER, "none",
                            *_fit_args(d, d / "d.csv", d / "m1.json")],
                           capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    before = (d / "budget.json").read_text()
    killed = subprocess.run([sys.executable, "-c", _KILLER, where,
                             *_fit_args(d, d / "d.csv", d / "m2.json")],
                            capture_output=True, text=True, env=env, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (d / "m2.json").exists()               # nothing was released
    ledger = BudgetLedger.read(d / "budget.json")     # valid: checksum and format check out
    if where == "fitting":   # killed before recording: nothing released, nothing charged
        assert (d / "budget.json").read_text() == before and ledger.spent == (1.0, 0.0)
    else:                    # recorded, then killed before the model was written: charged
        assert ledger.spent == (2.0, 0.0) and len(ledger.spends) == 2
    assert [p.name for p in d.iterdir() if ".tmp" in p.name] == []   # no temporary left
    # the lock died with the process: the next run does not wait
    args = _fit_args(d, d / "d.csv", d / "m3.json", "--raise-budget")
    args[args.index("--eps") + 1] = "0.5"
    args[args.index("--budget") + 1] = "3"
    nxt = subprocess.run([sys.executable, "-m", "privatelr.cli", *args], capture_output=True,
                         text=True, env=env, timeout=120)
    assert nxt.returncode == 0 and "waiting" not in nxt.stderr, nxt.stderr
    assert load_model(d / "m3.json").guarantee_holds
    ledger = BudgetLedger.read(d / "budget.json")
    assert ledger.epsilon == 3.0 and len(ledger.budget_changes) == 1
    assert ledger.spent[0] == (1.5 if where == "fitting" else 2.5)
    assert json.loads((d / "budget.json").read_text())["format"] == "privatelr.ledger"
