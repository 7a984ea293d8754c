"""Every code block of the documentation pages (docs/*.md) runs, and states true values.

The rules are README's (``tests/markdown_blocks.py``): python blocks run in a fresh namespace
and every expression whose comment is a Python literal must equal it; bash blocks run command by
command and a comment line starting with a number is the expected output. A block identical to
one of README.md's is run once, by ``tests/test_readme.py``. The quick start's install commands
appear on the pages only as an exact copy of README's (which that test checks and runs).
"""

from __future__ import annotations

import pytest

from markdown_blocks import ROOT, code_blocks, count_claims, run_bash, run_python

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
README_BLOCKS = code_blocks((ROOT / "README.md").read_text())
QUICK_START = README_BLOCKS[0][1]
BLOCKS = [(page.name, i, kind, src) for page in PAGES
          for i, (kind, src) in enumerate(code_blocks(page.read_text()))]
TO_RUN = [b for b in BLOCKS if (b[2], b[3]) not in README_BLOCKS]


def _id(block) -> str:
    return f"{block[0]}-{block[1]}"


def test_blocks_are_python_or_bash():
    other = [(page, i, kind) for page, i, kind, _ in BLOCKS if kind not in {"python", "bash"}]
    assert not other, ("every code block is run by the tests, so it must be python or bash "
                       f"(write other text as prose or a table): {other}")


def test_blocks_are_found():
    # the pages hold the manual: README's examples and more, each one run with its values checked
    kinds = [kind for _, _, kind, _ in BLOCKS]
    assert kinds.count("python") >= 15 and kinds.count("bash") >= 4, kinds
    claims = sum(count_claims(src) for _, _, kind, src in BLOCKS if kind == "python")
    assert claims >= 15, claims
    pages_with_code = {page for page, *_ in BLOCKS}
    assert {"getting-started.md", "dplr.md", "choosing-eps.md", "inference.md",
            "cli.md"} <= pages_with_code, pages_with_code


def test_install_commands_are_the_quick_start():
    installs = [(page, i) for page, i, kind, src in BLOCKS
                if kind == "bash" and "pip install" in src and src != QUICK_START]
    assert not installs, ("a block that installs must be README's quick start, verbatim "
                          f"(tests/test_readme.py runs it): {installs}")


@pytest.mark.parametrize("block", [b for b in TO_RUN if b[2] == "python"], ids=_id)
def test_python_block(block, tmp_path, monkeypatch):
    page, _, _, source = block
    run_python(source, tmp_path, monkeypatch, filename=f"docs/{page}")


@pytest.mark.heavy
@pytest.mark.parametrize("block", [b for b in TO_RUN if b[2] == "bash" and b[3] != QUICK_START],
                         ids=_id)
def test_bash_block(block, tmp_path):
    run_bash(block[3], tmp_path)
