"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest


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
