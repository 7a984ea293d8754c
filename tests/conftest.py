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


# -- the Dask cluster ---------------------------------------------------------------------------
# The Dask tests run on one pytest-xdist worker, one after the other (the scheduler below), so one
# LocalCluster serves them all; it is closed as soon as the last of them has run, instead of
# idling until the end of the session. Idle, a 2-process cluster costs about 13% of a core (its
# workers' statistical profiler samples every 10 ms, the event loops tick every 20 ms); the
# settings below, which no test depends on, bring that to about 4%.
_QUIET_DASK = {
    "distributed.worker.profile.enabled": False,           # the profiler is for dashboards
    "distributed.admin.tick.interval": "1s",                # event-loop blocking monitor
    "distributed.admin.system-monitor.interval": "1s",      # CPU/memory sampling
}
_DASK: dict = {}


def _close_dask() -> None:
    if "client" in _DASK:
        _DASK.pop("client").close()
        _DASK.pop("cluster").close()
        _DASK.pop("config").__exit__(None, None, None)


@pytest.fixture
def client():
    """The 2-process Dask LocalCluster's client, shared by the Dask tests (started once: it
    takes seconds)."""
    distributed = pytest.importorskip("distributed")
    if "client" not in _DASK:
        import dask

        _DASK["config"] = dask.config.set(_QUIET_DASK)     # undone when the cluster closes
        _DASK["cluster"] = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                                    processes=True, dashboard_address=":0")
        _DASK["client"] = distributed.Client(_DASK["cluster"])
    return _DASK["client"]


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if nextitem is None or _scope(nextitem.nodeid) != "dask":
        _close_dask()                       # the Dask tests are over (on this worker)


def pytest_sessionfinish(session):
    _close_dask()


# -- scheduling on the two pytest-xdist workers ---------------------------------------------------
def pytest_collection_modifyitems(config, items):
    """The tests marked ``heavy`` (the ones that take seconds) are collected first, so that the
    workers start with them and finish together on the short ones; the Dask tests follow, one
    after the other (one cluster also without xdist). Only the order changes."""
    items.sort(key=lambda item: (item.get_closest_marker("heavy") is None,     # a stable sort
                                 _scope(item.nodeid) != "dask"))


#: modules run whole on one worker: their tests share an expensive module-scoped fixture
_ONE_WORKER_MODULES = ("test_dplr_noise.py",)


def _scope(nodeid: str) -> str:
    """The unit the scheduler sends to a worker: every test with "dask" in its id together (the
    tests that take the ``client`` fixture are named so; one elsewhere would start a second
    cluster, nothing worse), a module of ``_ONE_WORKER_MODULES`` whole, any other test on its
    own."""
    if "dask" in nodeid.lower():
        return "dask"
    module = nodeid.split("::", 1)[0]
    if module.endswith(_ONE_WORKER_MODULES):
        return module
    return nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``-n 2`` (pyproject's addopts): xdist's scope scheduler, with the scopes of ``_scope``.
    The largest scope (the Dask tests) is sent first, then the rest in collection order, each
    worker asking for the next test when it is free. (``--dist loadgroup`` would do this with
    ``xdist_group`` marks, but pytest-xdist 3.8 under pytest 9.2 drops the marks silently:
    pytest-xdist issue 1386.) Any ``--dist`` given on the command line is obeyed as usual."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduler(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return Scheduler(config, log)
