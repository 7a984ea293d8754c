"""The budget ledger file (privatelr.ledger): a budget that outlives the process.

What each test proves is in its name; the command line's use of it (three runs, a crash mid-run)
is tests/cli/test_cli_ledger.py.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from privatelr import BudgetExceededError, BudgetLedger
from privatelr.envelope import dumps
from privatelr.ledger import FORMAT, FORMAT_VERSION, lock_path


def test_spends_persist_across_opens_and_the_budget_is_enforced(tmp_path):
    path = tmp_path / "budget.json"
    with BudgetLedger.open(path, budget=2.0) as ledger:
        ledger.record(1.0, note="first")
    with BudgetLedger.open(path) as ledger:             # the budget is in the file
        assert ledger.epsilon == 2.0 and ledger.spent == (1.0, 0.0)
        ledger.record(0.75, note="second")
        with pytest.raises(BudgetExceededError, match="would exceed"):
            ledger.record(0.5, note="third")             # 1.75 + 0.5 > 2
        assert len(ledger.spends) == 2                   # the refused spend left no trace
    snap = BudgetLedger.read(path)
    assert snap.spent == (1.75, 0.0) and snap.remaining == (0.25, 0.0)
    assert [s.note for s in snap.spends] == ["first", "second"]


def test_the_file_holds_only_the_budget_and_the_spends(tmp_path):
    path = tmp_path / "budget.json"
    with BudgetLedger.open(path, budget=2.0) as ledger:
        ledger.record(1.0, note="model A")
    data = json.loads(path.read_text())
    assert set(data) == {"format", "format_version", "package_version", "sha256", "budget",
                         "created", "budget_changes", "spends"}
    assert set(data["spends"][0]) == {"eps", "delta", "note", "date"}


def test_creating_needs_a_budget_and_a_different_budget_is_refused(tmp_path):
    path = tmp_path / "budget.json"
    with pytest.raises(ValueError, match="give budget= to create it"):
        with BudgetLedger.open(path):
            pass
    assert not path.exists()
    with BudgetLedger.open(path, budget=2.0):
        pass
    with pytest.raises(ValueError, match="fixed when it was created"):
        with BudgetLedger.open(path, budget=3.0):
            pass
    with pytest.raises(ValueError, match="never lowers"):
        with BudgetLedger.open(path, budget=1.0, raise_budget=True):
            pass
    with BudgetLedger.open(path, budget=3.0, raise_budget=True) as ledger:
        assert ledger.epsilon == 3.0
    snap = BudgetLedger.read(path)
    assert snap.epsilon == 3.0 and [c["eps"] for c in snap.budget_changes] == [3.0]


def test_non_private_spends_cannot_be_charged(tmp_path):
    with BudgetLedger.open(tmp_path / "b.json", budget=1.0) as ledger:
        for eps in (0.0, float("inf")):
            with pytest.raises(ValueError, match="non-private"):
                ledger.check(eps)


def test_delta_needs_a_delta_budget(tmp_path):
    with BudgetLedger.open(tmp_path / "b.json", budget=2.0) as ledger:
        with pytest.raises(BudgetExceededError):
            ledger.check(1.0, 1e-6)
    with BudgetLedger.open(tmp_path / "g.json", budget=2.0, budget_delta=1e-5) as ledger:
        ledger.record(1.0, 1e-6, note="gaussian")
        assert ledger.spent == (1.0, 1e-6)


@pytest.mark.parametrize("edit", ["spend", "budget", "truncate", "not json", "future"])
def test_a_corrupted_or_edited_ledger_is_refused(tmp_path, edit):
    path = tmp_path / "budget.json"
    with BudgetLedger.open(path, budget=2.0) as ledger:
        ledger.record(1.5, note="a")
    text = path.read_text()
    if edit == "spend":            # someone lowers a spend by hand: the checksum no longer fits
        text = text.replace('"eps": 1.5', '"eps": 0.5')
    elif edit == "budget":
        text = text.replace('"eps": 2.0', '"eps": 20.0')
    elif edit == "truncate":
        text = text[: len(text) // 2]
    elif edit == "not json":
        text = "hello"
    else:
        text = text.replace(f'"format_version": {FORMAT_VERSION}', '"format_version": 99')
    assert text != path.read_text()
    path.write_text(text)
    for action in (lambda: BudgetLedger.read(path),
                   lambda: BudgetLedger.open(path, budget=2.0).__enter__()):
        with pytest.raises(ValueError, match="budget.json") as info:
            action()
        assert "verify=False" not in str(info.value)     # a ledger is never read unchecked
    assert path.read_text() == text                      # refused, not repaired or replaced


def test_a_forged_file_whose_spends_exceed_its_budget_is_refused(tmp_path):
    path = tmp_path / "budget.json"
    body = {"budget": {"eps": 1.0, "delta": 0.0}, "created": "2025-01-01T00:00:00+00:00",
            "budget_changes": [],
            "spends": [{"eps": 2.0, "delta": 0.0, "note": "", "date": "2025-01-01T00:00:00+00:00"}]}
    path.write_text(dumps(FORMAT, FORMAT_VERSION, body))
    with pytest.raises(ValueError, match="corrupted privatelr ledger file: spend 1"):
        BudgetLedger.read(path)


def test_a_failed_write_records_nothing(tmp_path, monkeypatch):
    path = tmp_path / "budget.json"
    import privatelr.ledger as mod

    with BudgetLedger.open(path, budget=2.0) as ledger:
        before = path.read_text()

        def broken(p, text):
            raise OSError(28, "No space left on device", str(p))

        monkeypatch.setattr(mod, "write_text", broken)
        with pytest.raises(OSError):
            ledger.record(1.0, note="x")
        assert ledger.spent == (0.0, 0.0) and path.read_text() == before


def test_record_only_while_open(tmp_path):
    path = tmp_path / "budget.json"
    with BudgetLedger.open(path, budget=2.0) as ledger:
        pass
    with pytest.raises(RuntimeError, match="not open for writing"):
        ledger.record(1.0)
    with pytest.raises(RuntimeError):
        BudgetLedger.read(path).record(1.0)


def test_the_lock_serialises_two_runs(tmp_path):
    """Two runs that each check then record 1.5 of a budget of 2: with the lock, exactly one
    fits; the second waits (on_wait is called) and then sees the first's spend."""
    path = tmp_path / "budget.json"
    with BudgetLedger.open(path, budget=2.0):
        pass
    results, waited = [], []
    inside = threading.Event()

    def run(name):
        try:
            with BudgetLedger.open(path, on_wait=lambda: waited.append(name)) as ledger:
                ledger.check(1.5)
                inside.set()
                time.sleep(0.3)           # the fit: the other run must not pass its check now
                ledger.record(1.5, note=name)
            results.append((name, "ok"))
        except BudgetExceededError:
            results.append((name, "refused"))

    first = threading.Thread(target=run, args=("first",))
    first.start()
    inside.wait(5)
    second = threading.Thread(target=run, args=("second",))
    second.start()
    first.join(10)
    second.join(10)
    assert sorted(r for _, r in results) == ["ok", "refused"] and waited == ["second"]
    assert BudgetLedger.read(path).spent == (1.5, 0.0)
    assert (tmp_path / "budget.json.lock").exists() and lock_path(path).endswith(".lock")
