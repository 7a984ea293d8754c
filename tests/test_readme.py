"""Every code block of README.md runs, and the values it states in comments are the values.

The rules (python blocks with stated values, bash blocks with stated output) are those of
``tests/markdown_blocks.py``, shared with the documentation pages' test.
The quick start is the two commands CI and a new user run: the first installs and runs the
demo (here: the demo, already installed), the second installs the test extras and runs exactly
the command ``.ci/run`` runs.
"""

from __future__ import annotations

import subprocess

import pytest

from markdown_blocks import ROOT, code_blocks, count_claims, env, run_bash, run_python

README = (ROOT / "README.md").read_text()
BLOCKS = code_blocks(README)
QUICK_START = BLOCKS[0]


def test_blocks_are_found():
    # README is the front page: the quick start and an example whose stated values are checked
    # (the manual's examples are on the documentation pages: tests/docs/test_docs_blocks.py)
    kinds = [k for k, _ in BLOCKS]
    assert set(kinds) <= {"python", "bash"}, kinds
    assert kinds[0] == "bash" and "python" in kinds, kinds
    claims = sum(count_claims(src) for k, src in BLOCKS if k == "python")
    assert claims >= 2, claims        # the values README states are checked, not just run


@pytest.mark.heavy
def test_quick_start_is_two_commands_and_true():
    kind, text = QUICK_START
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert kind == "bash" and lines == ['pip install . && privatelr demo',
                                        'pip install ".[test]" && pytest']
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == "pytest" and 'pip install --quiet ".[test]"' in ci
    out = subprocess.run(["privatelr", "demo"], capture_output=True, text=True, env=env(),
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Coefficients" in out.stdout or "coefficients" in out.stdout.lower()


@pytest.mark.parametrize("index", [i for i, (k, _) in enumerate(BLOCKS) if k == "python"])
def test_python_block(index, tmp_path, monkeypatch):
    run_python(BLOCKS[index][1], tmp_path, monkeypatch, filename="README.md")


def test_bash_blocks(tmp_path):
    # every bash block after the quick start (the front page may have none: the manual's
    # command-line examples are on the documentation pages)
    for index in [i for i, (k, _) in enumerate(BLOCKS) if k == "bash"][1:]:
        where = tmp_path / str(index)
        where.mkdir()
        run_bash(BLOCKS[index][1], where)
