"""One pass over X against the floor: what a value+gradient pass costs next to one BLAS read.

For each size (bench_fit's data: rows in the unit ball), each kind of pass is timed at a point
near the solution, interleaved (every kind once per round, ``--repeat`` rounds; the table gives
the median and its ratio to the floor), with ``PRIVATELR_NUM_THREADS`` 1 and then the default:

* ``floor``: ``X @ v`` by BLAS on one thread over the whole matrix — one read of X, nothing else
  (on the pool: the same per fixed chunk, chunks spread over the package's threads);
* ``gradient``: ``ERMObjective.evaluate(w, False, value=False)`` — margins, the loss's
  derivatives and ``X' r`` in one pass (what Newton's steps cost);
* ``value+gradient``: the same with the per-row losses and the objective's value;
* ``line``: ``ERMObjective.line(w, p, False)`` — the line search's pass (``X @ p``, the
  gradient at ``w + p``);
* ``hessian``: ``evaluate(w, True)`` — the gradient pass with the exact Hessian;
* ``einsum (before)``: the pass as it was computed before issue 30 (``np.einsum`` products, the
  loss's value and derivatives), written out here as a reference;
* ``scikit-learn``: scikit-learn's own value+gradient of the same objective
  (``LinearModelLoss.loss_gradient``, what one lbfgs iteration costs), when installed.

Run: ``python benchmarks/bench_pass.py [--size 1000000,20 ...] [--repeat 7]``; prints Markdown
tables with ``uptime``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

import numpy as np

from bench_fit import default_lambda, make_data
from privatelr import _threads
from privatelr.losses import LogisticLoss
from privatelr.objective import ERMObjective


def _einsum_pass(X, y, w, lam, chunk):
    """The pre-issue-30 pass: einsum margins, the loss's value and derivative, einsum X' r."""
    loss = LogisticLoss()
    n = X.shape[0]
    g = np.zeros(X.shape[1])
    total = 0.0
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        m = y[rows] * np.einsum("ij,j->i", X[rows], w)
        e = np.exp(-np.abs(m))
        value = np.log1p(e) + np.maximum(-m, 0.0)
        q = 1.0 / (1.0 + e)
        d1 = -np.where(m >= 0, e * q, q)
        total += value.sum()
        g += np.einsum("ij,i->j", X[rows], y[rows] * d1 / n)
    return total / n + 0.5 * lam * (w @ w), g + lam * w


def _sklearn(X, y, lam):
    try:
        from sklearn._loss.loss import HalfBinomialLoss
        from sklearn.linear_model._linear_loss import LinearModelLoss
    except ImportError:
        return None
    lml = LinearModelLoss(base_loss=HalfBinomialLoss(), fit_intercept=False)
    yf = y.astype(np.float64)
    sw = np.full(X.shape[0], 1.0 / X.shape[0])   # mean loss, as ours

    def run(w):
        return lml.loss_gradient(w, X, yf, sample_weight=sw, l2_reg_strength=lam)
    return run


def measure(n, d, repeat):
    X, y01 = make_data(n, d)
    y = np.where(y01 == 1, 1.0, -1.0)
    lam = default_lambda(n)
    obj = ERMObjective(X, y, LogisticLoss(), lam)
    from privatelr.solver import minimize
    w = minimize(obj, np.zeros(d)).x * (1 + 1e-3)
    p = np.full(d, 1e-3)
    v = w.copy()
    chunk = obj.chunk
    sk = _sklearn(X, y01, lam)

    def floor():
        out = np.empty(n)

        def work(k):
            rows = slice(k * chunk, min((k + 1) * chunk, n))
            np.matmul(X[rows], v, out=out[rows])
        with _threads.blas_one_thread():
            _threads.map_chunks(-(-n // chunk), work, X.nbytes >= _threads.PARALLEL_MIN_BYTES)

    def fresh():
        return ERMObjective(X, y, LogisticLoss(), lam)

    line_obj = fresh()
    line_obj.evaluate(w, False, value=False)   # the margins at w cached, as in the solver

    kinds = {
        "floor: one BLAS read of X": floor,
        "gradient": lambda: fresh().evaluate(w, False, value=False),
        "value+gradient": lambda: fresh().evaluate(w, False),
        "line (X p, gradient at w + p)": lambda: line_obj.line(w, p, False),
        "hessian (exact)": lambda: fresh().evaluate(w, True, value=False),
        "einsum pass (before issue 30)": lambda: _einsum_pass(X, y, w, lam, chunk),
    }
    if sk is not None:
        kinds["scikit-learn loss_gradient"] = lambda: sk(w)
    out = {}
    os.environ.pop("PRIVATELR_NUM_THREADS", None)
    for threads in ("1", str(_threads.workers())):
        os.environ["PRIVATELR_NUM_THREADS"] = threads
        env_sk = threads
        times = {k: [] for k in kinds}
        for _ in range(repeat):
            for name, fn in kinds.items():
                if name.startswith("scikit"):
                    from threadpoolctl import threadpool_limits
                    with threadpool_limits(int(env_sk)):
                        t = time.perf_counter()
                        fn()
                        times[name].append(time.perf_counter() - t)
                    continue
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
        out[threads] = {k: statistics.median(v) for k, v in times.items()}
    os.environ.pop("PRIVATELR_NUM_THREADS", None)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", action="append", metavar="N,D")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    sizes = [tuple(int(float(v)) for v in s.split(",")) for s in
             (args.size or ["1000000,20", "1000000,100", "200000,400"])]
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"uptime: {uptime}\n")
    for n, d in sizes:
        res = measure(n, d, args.repeat)
        print(f"### n = {n:.0e}, d = {d} (X: {n * d * 8 / 2**20:.0f} MiB), median of "
              f"{args.repeat}\n")
        threads = list(res)
        print("| pass | " + " | ".join(f"{t} thread(s): s, × floor" for t in threads) + " |")
        print("|---|" + "---|" * len(threads))
        for name in res[threads[0]]:
            cells = [f"{res[t][name]:.4f}, {res[t][name] / res[t]['floor: one BLAS read of X']:.2f}"
                     for t in threads]
            print(f"| {name} | " + " | ".join(cells) + " |")
        print()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"uptime: {uptime}")


if __name__ == "__main__":
    main()
