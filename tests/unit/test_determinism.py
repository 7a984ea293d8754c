"""Same data, seed and arguments: bit-identical results for every number of threads.

A pass splits the rows into chunks fixed by n and d only, each chunk yields its own partial sum
and the partials are added in chunk order on the calling thread (privatelr._threads), so the
association of every floating-point sum is the same whether one thread or four computed the
chunks. ``PRIVATELR_NUM_THREADS`` is read by ``_threads.workers()`` at every pass, so setting it
with monkeypatch changes the worker count of the next pass. X is 70,000 x 30 doubles (16.8 MB),
above ``PARALLEL_MIN_BYTES`` (16 MiB): the passes without a Hessian really run threaded (a spy
on ``map_chunks`` checks it). The number of BLAS threads (the core count's other effect) is
varied too, with threadpoolctl.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from privatelr import _threads, erm, objective
from privatelr._validation import scan_rows
from privatelr.losses import HuberLoss, LogisticLoss
from privatelr.objective import ERMObjective
from privatelr.scoring import probabilities

N, D = 70_000, 30
THREADS = ("1", "2", "3", "4")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.standard_normal((N, D)) / np.sqrt(2 * D)
    X[:, 0] = 0.5
    y = (rng.uniform(size=N) < 1 / (1 + np.exp(-X @ np.linspace(-4, 4, D)))).astype(int)
    a = rng.uniform(0.0, 2.0, N)
    assert X.nbytes >= _threads.PARALLEL_MIN_BYTES
    return X, y, a


@pytest.fixture(scope="module")
def point(data):
    """±1 labels, a point and a direction for single passes over ``data``."""
    return np.where(data[1] == 1, 1.0, -1.0), np.linspace(-1, 1, D), np.cos(np.arange(D))


@pytest.fixture
def spy(monkeypatch):
    """Record (parallel, workers) of every objective pass that could be threaded."""
    calls = []
    real = objective.map_chunks

    def recording(*args, **kwargs):
        parallel = args[2] if len(args) > 2 else kwargs.get("parallel", True)
        calls.append((parallel, _threads.workers()))
        return real(*args, **kwargs)

    monkeypatch.setattr(objective, "map_chunks", recording)
    return calls


FITS = {
    "objective, weights, newton": dict(method="objective", weights_bound=2.0),
    "output, weights, newton": dict(method="output", weights_bound=2.0),
    "objective, huber": dict(method="objective", loss="huber", h=0.3),
    "output, lbfgs": dict(method="output", solver="lbfgs", gtol=1e-7),
}


@pytest.mark.parametrize("name", FITS)
def test_fit_is_bit_identical_for_every_thread_count(monkeypatch, data, spy, name):
    X, y, a = data
    kw = dict(FITS[name])
    if "weights_bound" in kw:
        kw["weights"] = a
    coefs = {}
    for threads in THREADS:
        monkeypatch.setenv("PRIVATELR_NUM_THREADS", threads)
        spy.clear()
        res = erm.fit(X, y, lambda_=1e-3, eps=1.0, clip=True, random_state=5, **kw)
        assert res.convergence == 0
        coefs[threads] = res.coef
        threaded = [c for c in spy if c[0] and c[1] > 1]
        assert bool(threaded) == (threads != "1"), spy  # the passes really used the threads
    for threads in THREADS[1:]:
        assert np.array_equal(coefs[threads], coefs["1"]), (threads, coefs[threads] - coefs["1"])


def test_passes_are_bit_identical_for_every_thread_count(monkeypatch, data, point):
    X, _, a = data
    ys, w, p = point
    out = {}
    for threads in THREADS:
        monkeypatch.setenv("PRIVATELR_NUM_THREADS", threads)
        for loss, weights in ((LogisticLoss(), a), (HuberLoss(0.2), None)):
            obj = ERMObjective(X, ys, loss, 1e-3, noise=np.linspace(-1, 1, D), weights=weights)
            f, g, _ = obj.evaluate(w, False)
            g0 = obj.evaluate(w, False, value=False)[1]   # the margins cached: no X @ w
            phi = obj.line(w, p, False)
            f2, g2, _ = obj.evaluate(w + p, False)  # prepared by the threaded line pass
            # the line pass's bound on phi's third derivative (logistic only) and the values computed later
            # from cached margins, in 65,536-row chunks on the pool
            third = getattr(phi, "third", None)
            out.setdefault(threads, []).append((f, g, phi(0.3), f2, g2, g0, phi.gradient,
                                                third))
    for threads in THREADS[1:]:
        for got, want in zip(out[threads], out["1"]):
            assert got[0] == want[0] and got[2] == want[2] and got[3] == want[3]
            assert got[7] == want[7]
            for k in (1, 4, 5, 6):
                assert np.array_equal(got[k], want[k]), k
    assert out["1"][0][7] is not None and out["1"][1][7] is None    # logistic, Huber


def test_scan_rows_is_bit_identical_for_every_thread_count(monkeypatch, data):
    X = data[0]
    ref = None
    for threads in THREADS:
        monkeypatch.setenv("PRIVATELR_NUM_THREADS", threads)
        sq = scan_rows("X", X)
        ref = sq if ref is None else ref
        assert np.array_equal(sq, ref)
    assert np.array_equal(ref, np.einsum("ij,ij->i", X, X))


def test_probabilities_are_expit_for_every_thread_count(monkeypatch):
    """The training probabilities and predict's, chunked on the pool: expit's own values, in
    place or not (300,000 values, five chunks, infinities and NaN among them)."""
    eta = np.random.default_rng(5).standard_normal(300_000) * 40
    eta[:3] = [np.inf, -np.inf, np.nan]
    ref = expit(eta)
    for threads in THREADS:
        monkeypatch.setenv("PRIVATELR_NUM_THREADS", threads)
        assert np.array_equal(probabilities(eta), ref, equal_nan=True)
        inplace = eta.copy()
        assert probabilities(inplace, out=inplace) is inplace
        assert np.array_equal(inplace, ref, equal_nan=True)


def test_fit_is_bit_identical_for_every_blas_thread_count(monkeypatch, data):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    X, y, a = data
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", "2")
    coefs = []
    for blas in (1, 2, 4):
        with threadpoolctl.threadpool_limits(limits=blas, user_api="blas"):
            coefs.append(erm.fit(X, y, lambda_=1e-3, eps=1.0, clip=True, weights=a,
                                 weights_bound=2.0, random_state=5).coef)
    assert np.array_equal(coefs[0], coefs[1]) and np.array_equal(coefs[0], coefs[2])


def test_chunk_results_come_back_in_chunk_order(monkeypatch):
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", "3")
    assert _threads.map_chunks(10, lambda k: k * k) == [k * k for k in range(10)]
    parts = [np.full(2, 0.1 * k) for k in range(7)]
    total = np.zeros(2)
    for p in parts:
        total += p
    assert np.array_equal(_threads.sum_in_order(parts), total)


def test_hessian_passes_are_bit_identical_for_every_thread_count(monkeypatch, data, point,
                                                                  spy):
    # Hessian passes run on the pool too (BLAS on one thread meanwhile, when threadpoolctl is
    # installed); exact and model (a third of the rows) Hessians, partials added in chunk order
    X, _, a = data
    ys, w, p = point
    out = {}
    for threads in THREADS:
        monkeypatch.setenv("PRIVATELR_NUM_THREADS", threads)
        spy.clear()
        obj = ERMObjective(X, ys, LogisticLoss(), 1e-3, weights=a)
        f, g, H = obj.evaluate(w, True)
        _, g4, H4 = obj.evaluate(w + p, True, 4)
        obj.line(w, p, True)
        _, g1, H1 = obj.evaluate(w + p, True)  # prepared by the line pass, Hessian included
        out[threads] = (f, g, H, g4, H4, g1, H1)
        assert all(c[0] for c in spy) and (max(c[1] for c in spy) > 1) == (threads != "1")
    for threads in THREADS[1:]:
        for got, want in zip(out[threads], out["1"]):
            assert np.array_equal(got, want), threads
    np.testing.assert_allclose(out["1"][6], out["1"][4], rtol=0.2, atol=1e-3)  # a model of H


def test_hessian_pass_restores_the_blas_thread_count(data):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    X, y, _ = data
    obj = ERMObjective(X, np.where(y == 1, 1.0, -1.0), LogisticLoss(), 1e-3)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = [i["num_threads"] for i in threadpoolctl.threadpool_info()
                  if i["user_api"] == "blas"]
        obj.evaluate(np.zeros(D) + 0.1, True)
        after = [i["num_threads"] for i in threadpoolctl.threadpool_info()
                 if i["user_api"] == "blas"]
    assert after == before


def test_every_blas_call_of_a_fit_runs_on_one_blas_thread(monkeypatch):
    # issue 30: BLAS held to one thread for the whole solve, whatever the size (before, only
    # Hessian passes over >= 16 MiB were): the passes' products, the warm start's subsample
    # Hessians and the Cholesky factorisations; the limit is restored afterwards
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import scipy.linalg

    from privatelr import solver

    def blas_threads():
        return {i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"}

    seen = []
    real_cho = scipy.linalg.cho_factor

    def cho_factor(*args, **kwargs):
        seen.append(("cholesky", blas_threads()))
        return real_cho(*args, **kwargs)

    class Spy(LogisticLoss):
        def derivatives(self, z, second=True):
            seen.append(("pass", blas_threads()))
            return super().derivatives(z, second)

    monkeypatch.setattr(solver.scipy.linalg, "cho_factor", cho_factor)
    rng = np.random.default_rng(3)
    n, d = 120_000, 4                   # 3.8 MB: a small design, warm-started (n >= 1e5)
    X = rng.standard_normal((n, d)) / 3
    y = np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-X @ np.arange(1.0, d + 1))), 1.0, -1.0)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        rep = solver.minimize(ERMObjective(X, y, Spy(), 1e-3), np.zeros(d))
        assert blas_threads() == {2}
    assert rep.convergence == 0 and rep.levels == 1
    assert {kind for kind, _ in seen} == {"pass", "cholesky"}
    assert all(threads == {1} for _, threads in seen), seen
