"""scikit-learn's check_estimator on DPLogisticRegression: exactly the table of docs/sklearn.md.

The documentation states, per configuration, which of scikit-learn's estimator checks pass and
why each other one fails. This test runs ``check_estimator(..., on_fail=None)`` on the four
configurations of that table, classifies every failure by its root cause (the innermost chained
exception: the estimator's own refusal, or the check's assertion) and compares the result with
the table, cell by cell: a check that starts passing, starts failing, or fails for another
reason fails this test. The check set belongs to a scikit-learn release (1.9.1 here); on
another release only the reasons are checked (every failure must be one of the documented
ones), since checks come and go between releases.

Regenerate the table after a deliberate change with ``python tests/unit/test_sklearn_checks.py``.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from pathlib import Path

import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

from privatelr.sklearn import DPLogisticRegression  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "sklearn.md"
#: The scikit-learn release whose check set the table lists.
TABLE_RELEASE = "1.9"

#: column label of the table -> the configuration checked
CONFIGS = {
    "`DPLogisticRegression()`": lambda: DPLogisticRegression(),
    "`clip=True, sample_weight_bound=5`": lambda: DPLogisticRegression(
        clip=True, sample_weight_bound=5.0, random_state=0),
    "`method=\"output\", eps=5, fit_intercept=False, clip=True, sample_weight_bound=5`":
        lambda: DPLogisticRegression(method="output", eps=5.0, fit_intercept=False, clip=True,
                                     sample_weight_bound=5.0, random_state=0),
    "`eps=0`": lambda: DPLogisticRegression(eps=0),
}

#: root cause -> the code the table uses (each explained under the table in docs/sklearn.md)
REASONS = [
    ("L2 norm above data_norm", "bound"),
    ("without sample_weight_bound", "weight bound"),
    ("classes of a private fit are declared", "classes"),
    ("fitting with `sample_weight`", "weight is not a repeat"),
    ("only one class is present", "noise"),
]


def _root_cause(exc: BaseException) -> str:
    """The reason code of a failed check: the innermost chained exception's message first."""
    chain = []
    while exc is not None:
        chain.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    for text in reversed(chain):
        for fragment, code in REASONS:
            if fragment in text:
                return code
    return "other: " + chain[-1][:200]


def results(estimator) -> dict:
    """``{check name: Counter of outcomes}``: "pass", "skip" or the reason code of a failure
    (a check may run several times, with other arguments)."""
    out: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in check_estimator(estimator, on_fail=None, on_skip=None):
            status = r["status"]
            outcome = {"passed": "pass", "skipped": "skip"}.get(status) or \
                _root_cause(r["exception"])
            out.setdefault(r["check_name"], Counter())[outcome] += 1
    return out


def _cell(counter: Counter) -> str:
    parts = []
    for outcome, k in sorted(counter.items()):
        parts.append(outcome if k == 1 else f"{outcome} ×{k}")
    return ", ".join(parts)


def table() -> str:
    """The markdown table of docs/sklearn.md: summary rows, then every check that does not
    pass in every configuration."""
    runs = {label: results(make()) for label, make in CONFIGS.items()}
    names = sorted(set().union(*runs.values()))
    lines = ["| Check | " + " | ".join(CONFIGS) + " |",
             "|---|" + "---|" * len(CONFIGS)]
    runs_each = sum(sum(c.values()) for c in next(iter(runs.values())).values())
    for outcome in ("pass", "fail", "skip"):
        counts = [sum(k for c in run.values() for o, k in c.items()
                      if (o if o in ("pass", "skip") else "fail") == outcome)
                  for run in runs.values()]
        lines.append(f"| **{outcome}** (of {runs_each} runs) | "
                     + " | ".join(map(str, counts)) + " |")
    for name in names:
        cells = [_cell(run.get(name, Counter())) for run in runs.values()]
        if all(c == "pass" or c.startswith("pass ×") for c in cells):
            continue
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _documented() -> list[str]:
    """The table's lines in docs/sklearn.md (from its header row to the first non-row)."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Check | "))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[start:end]


def test_check_estimator_is_the_documented_table():
    documented = _documented()
    if sklearn.__version__.startswith(TABLE_RELEASE + "."):
        actual = table().splitlines()
        diff = [f"documented: {d}\nactual:     {a}" for d, a in zip(documented, actual) if d != a]
        assert len(documented) == len(actual) and not diff, (
            "check_estimator no longer gives docs/sklearn.md's table (regenerate it with "
            "`python tests/unit/test_sklearn_checks.py` if the change is deliberate):\n"
            + "\n".join(diff) + f"\n({len(documented)} documented rows, {len(actual)} now)")
    else:                                  # another release: only the reasons are pinned
        codes = {code for _, code in REASONS}
        for make in CONFIGS.values():
            for name, counter in results(make()).items():
                for outcome in counter:
                    assert outcome in {"pass", "skip"} | codes, (name, outcome)


def test_every_reason_of_the_table_is_explained():
    text = DOC.read_text()
    used = {re.sub(r" ×\d+$", "", part) for line in _documented()[5:]
            for cell in line.strip("|").split("|")[1:] for part in cell.strip().split(", ")}
    for code in used - {"pass", "skip"}:
        assert f"**{code}**" in text, f"docs/sklearn.md does not explain the reason {code!r}"


if __name__ == "__main__":
    print(table())
