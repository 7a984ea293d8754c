"""The suite's own rules (issue 30): load on the machine cannot fail a correct build.

* no Hypothesis deadline: every ``deadline=`` in the tests is ``None`` (the fuzz profile's
  too), since a loaded machine can take seconds for an example that takes milliseconds idle;
* no wall-time assertion: no test reads a clock (``time.perf_counter``, ``time.time``,
  ``time.monotonic``, ``timeit``). Timings belong in ``benchmarks/``, which print tables.

Read from the sources (AST), so nothing is run.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns",
          "process_time"}


def _sources():
    for path in sorted(TESTS.rglob("*.py")):
        yield path, ast.parse(path.read_text())


def test_no_hypothesis_deadline():
    found, profiles = [], 0
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "deadline":
                if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                    found.append(f"{path.relative_to(TESTS)}:{node.value.lineno}")
            # a profile without deadline= would get Hypothesis's default (200 ms)
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "register_profile":
                profiles += 1
                if "deadline" not in {k.arg for k in node.keywords}:
                    found.append(f"{path.relative_to(TESTS)}:{node.lineno} (profile)")
    assert found == [], f"deadline= must be None (load must not fail a build): {found}"
    assert profiles >= 1      # the fuzz suite's profile is among them


def test_no_test_reads_a_clock():
    found = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in CLOCKS and \
                    isinstance(node.value, ast.Name) and node.value.id == "time":
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} time.{node.attr}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names]
                module = getattr(node, "module", None) or ""
                if "timeit" in names or module == "timeit" or \
                        (module == "time" and CLOCKS & set(names)):
                    found.append(f"{path.relative_to(TESTS)}:{node.lineno} imports a clock")
    assert found == [], f"tests must not time anything (use benchmarks/): {found}"
