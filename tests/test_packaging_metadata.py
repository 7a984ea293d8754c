"""The distribution's metadata: project URLs, and an ``all`` extra that holds every optional one.

``pip install ".[all]"`` must pull every optional feature's dependencies (checked once by hand
in a fresh virtual environment: scikit-learn, dask, distributed, pyarrow, matplotlib and tqdm all
installed); this test keeps ``all`` equal to the union of the feature extras when one changes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

PROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())[
    "project"]
FEATURES = ("sklearn", "plot", "dask", "parquet", "progress")


def _names(requirements) -> set[str]:
    return {re.match(r"[A-Za-z0-9_.\-]+(\[[^\]]*\])?", r).group(0).lower() for r in requirements}


def test_all_extra_is_every_optional_feature():
    extras = PROJECT["optional-dependencies"]
    union = set().union(*(_names(extras[f]) for f in FEATURES))
    assert _names(extras["all"]) == union
    assert {"scikit-learn", "dask[array,dataframe]", "distributed", "pyarrow", "matplotlib",
            "tqdm"} <= _names(extras["all"])
    assert _names(extras["docs"]) <= _names(extras["test"])   # the docs build is a test


def test_project_urls():
    assert set(PROJECT["urls"]) >= {"Homepage", "Documentation", "Source", "Issues"}
    assert all(u.startswith("https://") for u in PROJECT["urls"].values())
