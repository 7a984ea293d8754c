"""The package type-checks: ``python -m mypy`` (configured in pyproject.toml) is clean.

privatelr ships ``py.typed`` (PEP 561), so its annotations reach the type checkers of the code
that calls it; a wrong annotation would then report errors in users' code, or hide them. The
configuration checks every function body (``check_untyped_defs``), with the optional and
untyped dependencies (scikit-learn, Dask, pandas, SciPy, ...) taken as ``Any``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mypy")


def test_py_typed_ships():
    assert (ROOT / "privatelr" / "py.typed").exists()
    assert '"privatelr" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()


@pytest.mark.heavy
def test_mypy_is_clean(tmp_path):
    env = dict(os.environ)
    env.pop("MYPYPATH", None)
    out = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
                          "privatelr"], cwd=ROOT, capture_output=True, text=True, env=env,
                         timeout=900)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert "Success: no issues found" in out.stdout
