"""The documentation site builds offline with warnings as errors, and documents the whole API.

One Sphinx build (``python -m sphinx -W --keep-going -b html docs <tmp>``, as a user or CI would
run it) into a temporary folder, shared by the tests of this module:

* it succeeds, with no warning (``-W``) and no numpydoc complaint about a docstring section
  (numpydoc reports those as Python warnings, which ``-W`` does not see);
* it reads nothing from the network: no intersphinx, and the proxies point nowhere, so any
  attempt would fail the build;
* its object inventory holds every public name of ``privatelr.__all__`` (the API reference is
  complete: a name added to ``__all__`` must be added to ``docs/api.rst``);
* the vignettes are rendered from their stored outputs (the figures are there) without being
  executed.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import privatelr

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
pytest.importorskip("myst_nb")


def _build(out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env[var] = "http://127.0.0.1:9"            # nothing listens there: no network
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", str(DOCS), str(out / "html"),
                           "-d", str(out / "doctrees")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


def _inventory(path: Path) -> dict[str, str]:
    """name -> domain:role of every object in a Sphinx ``objects.inv`` (format version 2)."""
    raw = path.read_bytes()
    lines = raw.split(b"\n", 4)
    assert lines[0].startswith(b"# Sphinx inventory version 2"), lines[0]
    out = {}
    for line in zlib.decompress(lines[4]).decode().splitlines():
        m = re.match(r"(.+?)\s+(\S+:\S+)\s+(-?\d+)\s+(\S+)\s+(.*)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_offline_configuration():
    conf = (DOCS / "conf.py").read_text()
    assert "sphinx.ext.intersphinx" not in conf
    assert re.search(r'^nb_execution_mode = "off"', conf, flags=re.M)   # notebooks not run


@pytest.mark.heavy
def test_site_builds_and_documents_every_public_name(tmp_path):
    # one test, so that the build runs once whatever the number of pytest-xdist workers
    proc = _build(tmp_path)
    html = tmp_path / "html"
    assert proc.returncode == 0, proc.stderr[-5000:]
    complaints = [line for line in proc.stderr.splitlines() if "UserWarning" in line]
    assert not complaints, complaints              # numpydoc: unknown section, bad underline
    assert (html / "index.html").exists() and (html / "api.html").exists()

    inventory = _inventory(html / "objects.inv")
    missing = []
    for name in privatelr.__all__:
        role = inventory.get(f"privatelr.{name}")
        obj = getattr(privatelr, name)
        if role is None or (inspect.ismodule(obj) and role != "py:module"):
            missing.append(name)
    assert not missing, f"add these names of privatelr.__all__ to docs/api.rst: {missing}"

    notebooks = sorted(p.stem for p in (ROOT / "vignettes").glob("*.ipynb"))
    assert len(notebooks) >= 5
    for stem in notebooks:
        page = (html / "vignettes" / f"{stem}.html").read_text()
        assert "<img" in page, stem                 # a stored figure: the outputs were kept
