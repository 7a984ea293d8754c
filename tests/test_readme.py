"""Every code block of README.md runs, and the values it states in comments are the values.

* ``python`` blocks run in order, each in a fresh namespace, in a temporary directory (the Dask
  block's Parquet files are written there first). An expression statement whose trailing comment
  is a Python literal (``acc.remaining  # (0.5, 0.0)``) must evaluate to that literal.
* ``bash`` blocks run with ``bash -e`` in the same directory; a comment line right after a command
  that starts with a number is its expected output, ``...`` standing for the digits that depend
  on where the solver stops.
* The quick start is the two commands CI and a new user run: the first installs and runs the
  demo (here: the demo, already installed), the second installs the test extras and runs exactly
  the command ``.ci/run`` runs.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = [(m.group(1), m.group(2)) for m in
          re.finditer(r"^```(\w+)\n(.*?)^```", README, flags=re.S | re.M)]
QUICK_START = BLOCKS[0]


def _env():
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def test_blocks_are_found():
    kinds = [k for k, _ in BLOCKS]
    assert set(kinds) <= {"python", "bash"}, kinds
    assert kinds.count("python") >= 8 and kinds.count("bash") >= 3
    claims = sum(len(list(_claims(ast.parse(src), src))) for k, src in BLOCKS if k == "python")
    assert claims >= 6, claims        # the values README states are checked, not just run


def test_quick_start_is_two_commands_and_true():
    kind, text = QUICK_START
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert kind == "bash" and lines == ['pip install . && privatelr demo',
                                        'pip install ".[test]" && pytest']
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == "pytest" and 'pip install --quiet ".[test]"' in ci
    out = subprocess.run(["privatelr", "demo"], capture_output=True, text=True, env=_env(),
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Coefficients" in out.stdout or "coefficients" in out.stdout.lower()


def _claims(tree: ast.Module, source: str):
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


def _write_claims_parquet(where: Path):
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


@pytest.mark.parametrize("index", [i for i, (k, _) in enumerate(BLOCKS) if k == "python"])
def test_python_block(index, tmp_path, monkeypatch):
    source = BLOCKS[index][1]
    if "dask" in source:
        pytest.importorskip("distributed")
        _write_claims_parquet(tmp_path)
    if "matplotlib" in source or "plot" in source:
        pytest.importorskip("matplotlib")
        import matplotlib

        matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    tree = ast.parse(source)
    claims = dict((id(stmt), value) for stmt, value in _claims(tree, source))
    namespace: dict = {"__name__": "__readme__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for stmt in tree.body:
                module = ast.Module(body=[stmt], type_ignores=[])
                if id(stmt) in claims:
                    value = eval(compile(ast.Expression(stmt.value), "README.md", "eval"),
                                 namespace)
                    expected = claims[id(stmt)]
                    assert _equal(value, expected), (ast.unparse(stmt), value, expected)
                else:
                    exec(compile(module, "README.md", "exec"), namespace)
        finally:
            client = namespace.get("client")
            if client is not None and hasattr(client, "close"):
                cluster = getattr(client, "cluster", None)
                client.close()
                if cluster is not None:
                    cluster.close()


def _equal(value, expected) -> bool:
    if isinstance(expected, tuple):
        return isinstance(value, tuple) and len(value) == len(expected) and all(
            _equal(v, e) for v, e in zip(value, expected))
    if isinstance(expected, list):
        value = list(value)
        return len(value) == len(expected) and all(_equal(v, e) for v, e in zip(value, expected))
    if isinstance(expected, float):
        return abs(float(value) - expected) <= 1e-9 * max(1.0, abs(expected))
    return value == expected


@pytest.mark.parametrize("index", [i for i, (k, _) in enumerate(BLOCKS) if k == "bash"][1:])
def test_bash_block(index, tmp_path):
    text = BLOCKS[index][1]
    # run command by command so that each command's stated output can be compared
    commands, expected = [], []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and commands and re.match(r"#\s*-?\d", stripped):
            expected[-1].append(stripped.lstrip("#").strip())
        elif commands and commands[-1].endswith("\\"):
            commands[-1] = commands[-1][:-1] + " " + stripped
        elif stripped and not stripped.startswith("#"):
            commands.append(stripped)
            expected.append([])
    prelude = []
    for command, lines in zip(commands, expected):
        out = subprocess.run(["bash", "-ec", "\n".join(prelude + [command])], cwd=tmp_path,
                             capture_output=True, text=True, env=_env(), timeout=300)
        assert out.returncode == 0, (command, out.stderr[-2000:])
        if re.match(r"^[A-Z_]+=", command):
            prelude.append(command)          # a variable later commands use
        got = out.stdout.strip().splitlines()
        if lines:
            assert len(got) == len(lines), (command, got)
            for g, e in zip(got, lines):
                pattern = r"\s+".join(re.escape(tok).replace(r"\.\.\.", r"\d*")
                                      for tok in e.split())
                assert re.fullmatch(pattern, g.strip()), (command, g, e)
