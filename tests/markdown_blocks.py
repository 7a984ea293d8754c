"""Run the code blocks of a Markdown page (README.md, docs/*.md) and check what they state.

Shared by ``tests/test_readme.py`` and ``tests/docs/test_docs_blocks.py`` (pytest puts ``tests/``
on ``sys.path`` for its ``conftest.py``, so both import this module by name).

* ``python`` blocks run in order, each in a fresh namespace, in a temporary directory (a block
  that reads ``claims/*.parquet``, the Dask example, gets those files written there first). An
  expression statement whose trailing comment is a Python literal (``acc.remaining  # (0.5,
  0.0)``) must evaluate to that literal.
* ``bash`` blocks run with ``bash -e`` in the same directory, command by command; a comment line
  right after a command that starts with a number is its expected output, ``...`` standing for
  the digits that depend on where the solver stops. A command ``NAME=...`` sets a variable the
  later commands of the block use.
* Fences whose info string is a MyST directive (```` ```{toctree} ````) are not code.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: an opening fence (three or more backticks) and its info string, up to the closing fence
_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                    flags=re.S | re.M)


def code_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, source)`` of every fenced code block, in order (directives left out).

    A block without a language is returned with language ``""`` so that a test can refuse it.
    """
    blocks = []
    for m in _FENCE.finditer(text):
        info = m.group("info").strip()
        if info.startswith("{"):
            continue                          # a MyST directive, not code
        blocks.append((info.split()[0] if info else "", m.group("body")))
    return blocks


def env() -> dict[str, str]:
    """The environment of the bash blocks: this interpreter's scripts first on ``PATH``."""
    out = dict(os.environ)
    out["PATH"] = os.path.dirname(sys.executable) + os.pathsep + out.get("PATH", "")
    return out


def claims(tree: ast.Module, source: str):
    """(statement, literal) for every expression statement ending in a literal comment."""
    lines = source.splitlines()
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            continue
        last = lines[stmt.end_lineno - 1]
        if "#" not in last:
            continue
        comment = last.split("#", 1)[1].strip()
        try:
            yield stmt, ast.literal_eval(comment)
        except (ValueError, SyntaxError):
            continue


def count_claims(source: str) -> int:
    """The number of stated values (literal comments) in a python block."""
    return sum(1 for _ in claims(ast.parse(source), source))


def write_claims_parquet(where: Path) -> None:
    """The small Parquet data set the Dask example reads (``claims/part-*.parquet``)."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    (where / "claims").mkdir()
    for part in range(3):
        n = 400
        df = pd.DataFrame({"age": rng.uniform(0, 1, n), "cost": rng.uniform(0, 1, n),
                           "region": rng.choice(["north", "south", "east", "west"], n)})
        df["readmit"] = (rng.uniform(size=n) < 0.2 + 0.4 * df.age).astype(int)
        df.to_parquet(where / "claims" / f"part-{part}.parquet")


def equal(value, expected) -> bool:
    """``value`` is the stated literal (floats to 1e-9 relative; sequences element-wise)."""
    if isinstance(expected, tuple):
        return isinstance(value, tuple) and len(value) == len(expected) and all(
            equal(v, e) for v, e in zip(value, expected))
    if isinstance(expected, list):
        value = list(value)
        return len(value) == len(expected) and all(equal(v, e) for v, e in zip(value, expected))
    if isinstance(expected, float):
        return abs(float(value) - expected) <= 1e-9 * max(1.0, abs(expected))
    return value == expected


def run_python(source: str, where: Path, monkeypatch, filename: str = "<markdown>") -> None:
    """Run a python block in ``where``, checking every stated value."""
    if "dask" in source:
        pytest.importorskip("distributed")
        write_claims_parquet(where)
    if "matplotlib" in source or "plot" in source:
        pytest.importorskip("matplotlib")
        import matplotlib

        matplotlib.use("Agg")
    monkeypatch.chdir(where)
    tree = ast.parse(source)
    stated = dict((id(stmt), value) for stmt, value in claims(tree, source))
    namespace: dict = {"__name__": "__readme__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for stmt in tree.body:
                module = ast.Module(body=[stmt], type_ignores=[])
                if id(stmt) in stated:
                    value = eval(compile(ast.Expression(stmt.value), filename, "eval"),
                                 namespace)
                    expected = stated[id(stmt)]
                    assert equal(value, expected), (ast.unparse(stmt), value, expected)
                else:
                    exec(compile(module, filename, "exec"), namespace)
        finally:
            client = namespace.get("client")
            if client is not None and hasattr(client, "close"):
                cluster = getattr(client, "cluster", None)
                client.close()
                if cluster is not None:
                    cluster.close()


def run_bash(text: str, where: Path) -> None:
    """Run a bash block in ``where`` command by command, comparing each stated output."""
    commands: list[str] = []
    expected: list[list[str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and commands and re.match(r"#\s*-?\d", stripped):
            expected[-1].append(stripped.lstrip("#").strip())
        elif commands and commands[-1].endswith("\\"):
            commands[-1] = commands[-1][:-1] + " " + stripped
        elif stripped and not stripped.startswith("#"):
            commands.append(stripped)
            expected.append([])
    prelude: list[str] = []
    for command, lines in zip(commands, expected):
        variable = re.match(r"^([A-Z_]+)=", command)
        script, fds = "\n".join(prelude + [command]), ()
        if variable:                         # its value, written to a pipe for this test
            read_fd, write_fd = os.pipe()
            script, fds = script + f'\nprintf %s "${variable.group(1)}" >&{write_fd}', (write_fd,)
        try:
            out = subprocess.run(["bash", "-ec", script], cwd=where, capture_output=True,
                                 text=True, env=env(), timeout=300, pass_fds=fds)
        finally:
            for fd in fds:
                os.close(fd)
        if variable:
            with os.fdopen(read_fd) as fh:
                value = fh.read()
        assert out.returncode == 0, (command, out.stderr[-2000:])
        if variable:
            # a variable later commands use: its value is assigned to them (the command that
            # computed it ran once, here, and is not run again before every later command)
            prelude.append(f"{variable.group(1)}={shlex.quote(value)}")
        got = out.stdout.strip().splitlines()
        if lines:
            assert len(got) == len(lines), (command, got)
            for g, e in zip(got, lines):
                pattern = r"\s+".join(re.escape(tok).replace(r"\.\.\.", r"\d*")
                                      for tok in e.split())
                assert re.fullmatch(pattern, g.strip()), (command, g, e)
