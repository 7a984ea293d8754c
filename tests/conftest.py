"""Shared fixtures: R's reference numbers copied from shared/reference into tests/fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def load_fixture(name: str):
    with open(FIXTURES / name) as fh:
        return json.load(fh)


@pytest.fixture(scope="session")
def fixture():
    return load_fixture


@pytest.fixture(scope="session")
def client():
    """One 2-process Dask LocalCluster for every Dask test (started once: it takes seconds)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    cl = distributed.Client(cluster)
    yield cl
    cl.close()
    cluster.close()
