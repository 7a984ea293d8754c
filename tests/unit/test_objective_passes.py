"""Passes over the rows: fused evaluation, the thread pool, and the validation scan.

The threaded pass adds the workers' partial gradients in a fixed order, so it is deterministic;
against the one-thread pass it differs only by the order of a floating-point sum (relative
1e-15 on these sizes; the tolerance 1e-12 would still catch a chunk counted twice or skipped,
which moves the gradient by about 1/n_chunks = 1e-1 of its size).
"""

import multiprocessing
import sys

import numpy as np
import pytest

from privatelr import _threads, erm
from privatelr._validation import scan_rows
from privatelr.losses import HuberLoss, LogisticLoss
from privatelr.objective import ERMObjective

# 20 MB: above the 16 MB threshold for threaded passes, still quick
N, D = 84_000, 30


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D)) / np.sqrt(2 * D)
    y = np.where(rng.uniform(size=N) < 1 / (1 + np.exp(-X @ np.linspace(-3, 3, D))), 1.0, -1.0)
    return X, y


def _objective(X, y, loss=None, weights=None):
    return ERMObjective(X, y, loss or LogisticLoss(), 1e-3, noise=np.linspace(-1, 1, D),
                        weights=weights)


@pytest.mark.parametrize("loss, weighted", [(HuberLoss(0.2), False), (LogisticLoss(), True)])
def test_threaded_pass_with_weights_and_huber(monkeypatch, loss, weighted):
    X, y = _data(5)
    a = np.random.default_rng(6).uniform(0, 2, N) if weighted else None
    w, p = np.linspace(-2, 2, D), np.sin(np.arange(D))
    out = {}
    for threads in ("1", "2"):
        monkeypatch.setenv("PRIVATELR_NUM_THREADS", threads)
        obj = _objective(X, y, loss, a)
        f, g, _ = obj.evaluate(w, False)
        phi = obj.line(w, p, False)
        out[threads] = (f, g, phi(0.5), obj.evaluate(w + p, False)[1])
    assert out["2"][0] == pytest.approx(out["1"][0], rel=1e-14)
    assert out["2"][2] == pytest.approx(out["1"][2], rel=1e-14)
    np.testing.assert_allclose(out["2"][1], out["1"][1], rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(out["2"][3], out["1"][3], rtol=1e-12, atol=1e-16)


def test_threaded_pass_matches_one_thread_and_is_deterministic(monkeypatch):
    X, y = _data()
    w = np.linspace(-0.5, 0.5, D)
    p = np.cos(np.arange(D))
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", "1")
    one = _objective(X, y)
    f1, g1, _ = one.evaluate(w, False)
    phi1 = one.line(w, p, False)
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", "3")
    runs = []
    for _ in range(2):
        obj = _objective(X, y)
        f, g, _ = obj.evaluate(w, False)
        phi = obj.line(w, p, False)
        runs.append((f, g, phi(1.0), phi(0.3), obj.evaluate(w + p, False)[1]))
    assert runs[0][0] == runs[1][0] and np.array_equal(runs[0][1], runs[1][1])
    assert np.array_equal(runs[0][4], runs[1][4]) and runs[0][2] == runs[1][2]
    np.testing.assert_allclose(runs[0][1], g1, rtol=1e-12, atol=1e-16)
    assert runs[0][0] == pytest.approx(f1, rel=1e-14)
    assert runs[0][2] == pytest.approx(phi1(1.0), rel=1e-14)
    assert runs[0][3] == pytest.approx(phi1(0.3), rel=1e-14)
    # and both agree with a direct computation
    m = y * (X @ w)
    r = y * -1 / (1 + np.exp(m)) / N
    np.testing.assert_allclose(g1, X.T @ r + 1e-3 * w + np.linspace(-1, 1, D) / N, rtol=1e-10)


def test_fits_agree_across_thread_counts(monkeypatch):
    X, y = _data(1)
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", "1")
    a = erm.fit(X, y, lambda_=1e-3, eps=1.0, random_state=4, clip=True)
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", "2")
    b = erm.fit(X, y, lambda_=1e-3, eps=1.0, random_state=4, clip=True)
    assert a.convergence == b.convergence == 0
    np.testing.assert_allclose(b.coef, a.coef, rtol=1e-9, atol=1e-12)


def test_one_pass_per_evaluation_and_per_line_step():
    X, y = _data(2)
    obj = _objective(X, y)
    w = np.full(D, 0.1)
    obj.evaluate(w, True)  # margins computed inside the gradient pass
    assert obj.passes == 1
    phi = obj.line(w, -w, False)
    phi(1.0)
    obj.evaluate(np.zeros(D), False)  # prepared by the line search: free
    assert obj.passes == 2


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_bad_thread_count_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", value)
    with pytest.raises(ValueError, match="PRIVATELR_NUM_THREADS must be a positive integer"):
        _threads.workers()


def _child_fit(queue, X, y):
    queue.put(erm.fit(X, y, lambda_=1e-3, eps=1.0, random_state=4, clip=True).coef)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork start method")
def test_pool_survives_fork(monkeypatch):
    # a forked child inherits the pool object but not its threads; without the at-fork reset
    # the child's first threaded pass would wait forever
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", "2")
    X, y = _data(3)
    parent = erm.fit(X, y, lambda_=1e-3, eps=1.0, random_state=4, clip=True).coef  # pool now running
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_fit, args=(queue, X, y))
    proc.start()
    child = queue.get(timeout=120)
    proc.join(timeout=60)
    assert np.array_equal(child, parent)


def test_scan_rows_norms_and_finiteness(monkeypatch):
    X, _ = _data(4)
    monkeypatch.setenv("PRIVATELR_NUM_THREADS", "2")
    np.testing.assert_allclose(scan_rows("X", X), np.einsum("ij,ij->i", X, X), rtol=1e-15)
    bad = X.copy()
    bad[70_000, 3] = np.nan
    with pytest.raises(ValueError, match="X contains NaN or infinite values in 1 row"):
        scan_rows("X", bad)
    bad[70_000, 3] = 1e151
    with pytest.raises(ValueError, match=r"beyond \+-1e\+150"):
        scan_rows("X", bad)
    # large but accepted values: squared norm above 1e300, no error (as as_float_matrix)
    ok = np.full((3, 2), 9e149)
    assert np.isfinite(scan_rows("X", ok)).all()


def test_scan_gives_the_covariate_norms_of_the_same_pass():
    # the covariates' squared norms come from the scan's own pass, per row exactly the sums
    # row_norms(X[:, 1:]) computes (the bound check must not move by a rounding)
    from privatelr._validation import row_norms

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300_000, 9)) * rng.uniform(0, 3, size=(300_000, 1))   # threaded pass
    X[:, 0] = 1.0
    X[5, 3] = 1e200                                   # a row the norms must recompute
    sq, part = scan_rows("X", X, start=1, magnitude=False)
    # the whole row's sum adds the first column's square to the covariates' (a few roundings
    # from a sum in another order: it feeds only the range check of the largest row norm)
    np.testing.assert_allclose(sq, np.einsum("ij,ij->i", X, X), rtol=2e-15)
    np.testing.assert_array_equal(sq, part + X[:, 0] ** 2)
    np.testing.assert_array_equal(row_norms(X[:, 1:], part), row_norms(X[:, 1:]))


def test_the_largest_row_norm_from_squares_is_the_largest_of_the_exact_norms():
    # max_row_norm takes sqrt(max(sq)) only where squares are exact; a row of 1e200s (its
    # square overflows) or of 1e-200s (underflows) goes through row_norms' rescaled path
    from privatelr._validation import max_row_norm, row_norms

    for scale in (1.0, 1e200, 1e-200):
        X = np.random.default_rng(4).normal(size=(1000, 5)) * scale
        with np.errstate(over="ignore", under="ignore"):
            sq = np.einsum("ij,ij->i", X, X)
        assert max_row_norm(X, sq) == row_norms(X).max()
    assert max_row_norm(np.empty((0, 3)), np.empty(0)) == 0.0


@pytest.mark.parametrize("start", [0, 1])
@pytest.mark.parametrize("scale", [1.0, 1e200, 1e-200])
def test_scan_counts_the_rows_over_the_bound_exactly_as_their_norms_say(start, scale):
    # ArrayRows.scan computes each row's norm only when the largest is over the bound; the
    # count must be the count of exact norms above bound * (1 + 5e-13) either way, at every
    # scale (rows of 1e200s or 1e-200s go through row_norms' rescaled path), with rows just
    # inside, on and just outside the bound
    from privatelr._validation import row_norms
    from privatelr.rows import ArrayRows

    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(2000, 6)) * scale
    X[:, 0] = 0.5 * scale
    cov = np.ascontiguousarray(X[:, start:])
    norms = row_norms(cov)
    y = np.where(rng.uniform(size=2000) < 0.5, 1, -1)
    for bound in (norms.max() * 1.001, norms.max(), norms.max() * (1 + 1e-13),
                  np.median(norms), norms.max() * 0.999):
        scan = ArrayRows(X, y).scan(bound=bound, start=start)
        assert scan.n_over == int((norms > bound * (1.0 + 5e-13)).sum())
    assert ArrayRows(X, y).scan(bound=None, start=start).n_over == 0
