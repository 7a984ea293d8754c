"""Sparse designs end to end in the engine: fit time, peak memory, agreement with a dense fit
(issue 18).

The design: ``n`` rows (default 1e6) of ``d`` columns (default 10,000) with an intercept column
of 0.5 and ``k`` (default 20) non-zeros per row at uniformly drawn columns, values uniform in
[-1, 1], each row scaled to norm 0.85 (so every row, intercept included, has norm <= 1: no
clipping), held as a CSR matrix (about 12 bytes per non-zero); labels from the logistic model
with a fixed coefficient vector (seed 2026). ``erm.fit`` runs on it at eps = 1 (objective
perturbation and Gaussian objective perturbation, delta = 1e-6; lambda = 1e-4), solved by the
Hessian-free Newton method (``solver="auto"`` above d = 1000: trust region on Hessian-vector
products), relative gradient 1e-10.

Printed per method: wall time of the fit, the process's peak resident memory
(``resource.getrusage``; each method in a fresh process, so the peak is that fit's: the data
plus what the fit allocates), the CSR size, and the memory a dense copy would take. Then the
agreement check: on the first ``--check-rows`` rows (default 4,000) the sparse and the dense
design give coefficients equal to ``--agree`` (1e-8) with the same seed and a relative gradient of 1e-13 (the sparse design by the Hessian-free Newton method,
the dense one by Newton's method with the exact d x d Hessian).

A third process runs the formula front end on a data frame of the same ``n``: two numeric
columns in [-0.3, 0.3] and a declared factor with ``d`` levels (``site``), ``dplr("y ~ x1 + x2 +
site", sparse=True)`` at eps = 1 — formulaic's sparse design, the scan, the fit and the training
C-index, end to end — with its peak memory.

With ``--peer``, a fourth process times the objective-perturbation fit against scikit-learn's
``LogisticRegression(solver="lbfgs", tol=1e-10)`` on the same CSR rows (the same objective
without the noise: ``C = 1/(n lambda)``, no separate intercept), interleaved (ours, lbfgs, ours,
lbfgs, ... ``--rounds`` times after a warm-up), with each side's relative gradient (max-norm,
relative to the gradient at 0) at the end.

Run: ``python benchmarks/bench_sparse.py [--n 1000000] [--d 10000] [--k 20] [--markdown]
[--peer [--rounds 3]]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def design(n: int, d: int, k: int, seed: int = 2026):
    import scipy.sparse as sp

    rng = np.random.default_rng([seed, n, d, k])
    cols = rng.integers(1, d, size=(n, k))
    vals = rng.uniform(-1.0, 1.0, size=(n, k))
    vals *= 0.85 / np.linalg.norm(vals, axis=1, keepdims=True)
    indptr = np.arange(0, n * (k + 1) + 1, k + 1)
    indices = np.c_[np.zeros(n, dtype=np.int64), cols].ravel()
    data = np.c_[np.full(n, 0.5), vals].ravel()
    X = sp.csr_matrix((data, indices, indptr), shape=(n, d))
    X.sum_duplicates()           # a column drawn twice in a row: its values add (norm <= 0.85*sqrt2)
    w0 = np.random.default_rng(seed).standard_normal(d) * 2.0
    p = 1.0 / (1.0 + np.exp(-(X @ w0)))
    y = (rng.uniform(size=n) < p).astype(np.int8)
    return X, y


def one(args) -> dict:
    """One fit in this process: time and peak memory."""
    from privatelr import erm

    X, y = design(args.n, args.d, args.k)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    kw = dict(delta=1e-6) if args.method == "gaussian" else {}
    start = time.perf_counter()
    res = erm.fit(X, y, lambda_=args.lam, eps=1.0, method=args.method, random_state=1,
                  data_norm=float(max(1.0, norms.max())), **kw)
    seconds = time.perf_counter() - start
    return dict(method=args.method, seconds=seconds, status=res.status,
                iterations=res.iterations, passes=res.passes,
                peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                csr_mb=(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20,
                dense_mb=args.n * args.d * 8 / 2**20)


def formula(args) -> dict:
    """``dplr(..., sparse=True)`` on a data frame with a ``d``-level factor, end to end."""
    import pandas as pd

    from privatelr import dplr

    rng = np.random.default_rng([2026, args.n, args.d])
    levels = [f"s{i}" for i in range(args.d)]
    df = pd.DataFrame({"x1": rng.uniform(-0.3, 0.3, args.n), "x2": rng.uniform(-0.3, 0.3, args.n),
                       "site": pd.Categorical.from_codes(rng.integers(0, args.d, args.n),
                                                         categories=levels)})
    effect = rng.standard_normal(args.d)
    eta = 2 * df["x1"].to_numpy() - df["x2"].to_numpy() + effect[df["site"].cat.codes]
    df["y"] = rng.uniform(size=args.n) < 1 / (1 + np.exp(-eta))
    start = time.perf_counter()
    m = dplr("y ~ x1 + x2 + site", df, eps=1.0, data_norm=1.1, sparse=True, lambda_=args.lam,
             random_state=1)
    seconds = time.perf_counter() - start
    return dict(method="dplr formula, sparse=True", seconds=seconds, status=str(m.status),
                iterations=m.diagnostics.iterations, passes=m.diagnostics.passes,
                peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                csr_mb=args.n * 4 * 12 / 2**20, dense_mb=args.n * (args.d + 2) * 8 / 2**20)


def peer(args) -> dict:
    """Ours against scikit-learn's lbfgs at tol=1e-10 on the same rows, interleaved."""
    import statistics

    from sklearn.linear_model import LogisticRegression

    from privatelr import erm
    from privatelr.backends.sparse import SparseObjective
    from privatelr.losses import LogisticLoss

    X, y = design(args.n, args.d, args.k)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    bound = float(max(1.0, norms.max()))
    clf = LogisticRegression(C=1.0 / (args.n * args.lam), fit_intercept=False, solver="lbfgs",
                             tol=1e-10, max_iter=10_000)

    def ours():
        return erm.fit(X, y, lambda_=args.lam, eps=1.0, random_state=1, data_norm=bound)
    res = ours()
    clf.fit(X, y)
    a, b = [], []
    for _ in range(args.rounds):
        t = time.perf_counter()
        res = ours()
        a.append(time.perf_counter() - t)
        t = time.perf_counter()
        clf.fit(X, y)
        b.append(time.perf_counter() - t)
    obj = SparseObjective(X, np.where(y == 1, 1.0, -1.0), LogisticLoss(), args.lam)
    g0 = float(np.abs(obj.evaluate(np.zeros(args.d), False)[1]).max())
    g_sk = float(np.abs(obj.evaluate(clf.coef_[0], False)[1]).max())
    return dict(ours=statistics.median(a), sk=statistics.median(b),
                ratio=statistics.median([x / z for x, z in zip(a, b)]),
                lo=min(x / z for x, z in zip(a, b)), hi=max(x / z for x, z in zip(a, b)),
                rel_ours=res.diagnostics.grad_norm / max(g0, 1e-300), rel_sk=g_sk / g0,
                sk_iter=int(clf.n_iter_[0]), status=res.status)


def agree(args) -> float:
    from privatelr import erm

    X, y = design(args.n, args.d, args.k)
    Xs, ys = X[: args.check_rows], y[: args.check_rows]
    a = erm.fit(Xs, ys, lambda_=args.lam, eps=1.0, random_state=3, gtol=1e-13,
                data_norm=1.3)
    b = erm.fit(Xs.toarray(), ys, lambda_=args.lam, eps=1.0, random_state=3, solver="newton",
                gtol=1e-13, data_norm=1.3)
    return float(np.abs(a.coef - b.coef).max())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--lam", type=float, default=1e-4)
    ap.add_argument("--check-rows", type=int, default=4000)
    ap.add_argument("--agree", type=float, default=1e-8)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--peer", action="store_true", help="also time scikit-learn lbfgs, tol=1e-10")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", choices=["objective", "gaussian", "formula", "peer"],
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        args.method = args.one
        run = {"formula": formula, "peer": peer}.get(args.one, one)
        print(json.dumps(run(args)))
        return
    rows = []
    for method in ("objective", "gaussian", "formula"):
        cmd = [sys.executable, __file__, "--one", method, "--n", str(args.n), "--d", str(args.d),
               "--k", str(args.k), "--lam", str(args.lam)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    cmp = None
    if args.peer:
        cmd = [sys.executable, __file__, "--one", "peer", "--n", str(args.n), "--d", str(args.d),
               "--k", str(args.k), "--lam", str(args.lam), "--rounds", str(args.rounds)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        cmp = json.loads(out.strip().splitlines()[-1])
    diff = agree(args)
    h = "## " if args.markdown else ""
    print(f"{h}Sparse designs (bench_sparse.py, issue 18)\n")
    print(f"- command: `python benchmarks/bench_sparse.py{' --markdown' if args.markdown else ''}`"
          f"; n = {args.n}, d = {args.d}, {args.k} non-zeros per row + intercept, lambda = "
          f"{args.lam:g}, eps = 1; load average {os.getloadavg()[0]:.2f}\n")
    print("| method | fit (s) | Newton iterations | passes | peak RSS (MB) | CSR (MB) | dense would be (MB) | status |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['seconds']:.1f} | {r['iterations']} | {r['passes']} | "
              f"{r['peak_mb']:.0f} | {r['csr_mb']:.0f} | {r['dense_mb']:.0f} | {r['status']} |")
    if cmp is not None:
        print(f"\nAgainst scikit-learn lbfgs at tol=1e-10 (interleaved, median of {args.rounds}): "
              f"ours {cmp['ours']:.2f} s, lbfgs {cmp['sk']:.2f} s ({cmp['sk_iter']} iterations), "
              f"ratio {cmp['ratio']:.2f} ({cmp['lo']:.2f}-{cmp['hi']:.2f}); relative gradient "
              f"ours {cmp['rel_ours']:.1e} (status {cmp['status']}), lbfgs {cmp['rel_sk']:.1e}")
    verdict = "PASS" if diff <= args.agree else "FAIL"
    top = max(r["peak_mb"] for r in rows)
    print(f"\n- peak RSS {top:.0f} MB (target < 2048 MB): {'PASS' if top < 2048 else 'FAIL'}")
    print(f"- sparse vs dense on the first {args.check_rows} rows: max |coef difference| = "
          f"{diff:.2e} (target <= {args.agree:g}): {verdict}")


if __name__ == "__main__":
    main()
