"""Issue 30's speed table: the private fit against scikit-learn's lbfgs, interleaved.

For every size, data generator, thread setting and load setting, the two fits alternate
(ours, scikit-learn, ours, scikit-learn, ... ``--rounds`` times, after one warm-up each), so
that a change of load during the run hits both; the table gives the median of each side's
times and the median of the per-round ratios (with their range).

* ours: ``erm.fit(X, y, lambda_, eps=1, random_state=1)`` — objective perturbation, solved to a
  relative gradient of 1e-10 (the column "rel. gradient" is what it reached);
* scikit-learn: ``LogisticRegression(solver="lbfgs", C=1/(n lambda), fit_intercept=False)`` at
  its default ``tol=1e-4`` (the column "sk rel. gradient" is its gradient on the same
  objective, relative to the gradient at 0), the same objective without the noise;
* threads ``1``: ``PRIVATELR_NUM_THREADS=1`` for ours, ``threadpoolctl.threadpool_limits(1)``
  (BLAS and OpenMP) for scikit-learn; ``default``: neither limited (2 cores here);
* busy ``K``: K competing processes (``python -c "while True: pass"``) run during the rounds;
* data ``bench``: bench_fit's rows, uniform in the unit ball, ``||beta|| = 10``; ``correlated``:
  an intercept column 0.5 and Gaussian covariates with AR(1) correlation 0.7 between neighbouring
  columns, scaled by the largest covariate norm (so every row is in the unit ball: no clipping
  changes the objective), labels from a logistic model with ``||beta|| = 5`` (issue 30's "turn-2
  peer data" is not defined in the repository; this is the second generator used instead);
* pass-eq: the private fit's work in full-data gradient passes (bench_fit's definition: the
  solver's passes by kind and the validation scan, each weighted by its cost measured here).

Run: ``python benchmarks/bench_speed.py [--size 1000000,20 ...] [--data bench --data
correlated] [--threads 1 --threads default] [--busy 0 --busy 2] [--rounds 5]``; prints a Markdown
table with ``uptime`` before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from scipy.special import expit

from bench_fit import _Reports, default_lambda, grad_norm, make_data, pass_equivalents, unit_costs
from common import sizes, uptime
from privatelr import erm


def make_correlated(n: int, d: int, seed: int = 0, rho: float = 0.7):
    rng = np.random.default_rng([seed, n, d])
    Z = np.empty((n, d - 1))
    Z[:, 0] = rng.standard_normal(n)
    for j in range(1, d - 1):
        Z[:, j] = rho * Z[:, j - 1] + np.sqrt(1 - rho * rho) * rng.standard_normal(n)
    X = np.empty((n, d))
    X[:, 0] = 0.5
    X[:, 1:] = Z
    X[:, 1:] *= np.sqrt(0.75 / np.einsum("ij,ij->i", Z, Z).max())   # every row's norm <= 1
    beta = rng.standard_normal(d)
    beta *= 5.0 / np.linalg.norm(beta)
    y = (rng.uniform(size=n) < expit(X @ beta)).astype(np.int8)
    return X, y


GENERATORS = {"bench": make_data, "correlated": make_correlated}


@contextlib.contextmanager
def busy(k: int):
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]
    try:
        time.sleep(0.5 if k else 0.0)
        yield
    finally:
        for p in procs:            # only the processes started here, by their own handle
            p.kill()
            p.wait()


@contextlib.contextmanager
def threads(setting: str):
    from threadpoolctl import threadpool_limits

    if setting == "default":
        os.environ.pop("PRIVATELR_NUM_THREADS", None)
        yield contextlib.nullcontext
        return
    os.environ["PRIVATELR_NUM_THREADS"] = setting
    try:
        yield lambda: threadpool_limits(int(setting))
    finally:
        os.environ.pop("PRIVATELR_NUM_THREADS", None)


def one_config(X, y, lam, setting, k, rounds):
    from sklearn.linear_model import LogisticRegression

    n = X.shape[0]
    clf = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, solver="lbfgs",
                             max_iter=10_000)
    ours, theirs, ratios = [], [], []
    report = None
    with threads(setting) as limit_sk, busy(k):
        def fit_ours():
            return erm.fit(X, y, lambda_=lam, eps=1.0, random_state=1)

        def fit_sk():
            with limit_sk():
                clf.fit(X, y)

        with _Reports() as spy:
            fit_ours()
            report = spy.last
        fit_sk()
        for _ in range(rounds):
            t = time.perf_counter()
            fit_ours()
            a = time.perf_counter() - t
            t = time.perf_counter()
            fit_sk()
            b = time.perf_counter() - t
            ours.append(a)
            theirs.append(b)
            ratios.append(a / b)
    return dict(ours=statistics.median(ours), sk=statistics.median(theirs),
                ratio=statistics.median(ratios), lo=min(ratios), hi=max(ratios), report=report,
                coef_sk=clf.coef_[0].copy())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", action="append", metavar="N,D")
    ap.add_argument("--data", action="append", choices=sorted(GENERATORS))
    ap.add_argument("--threads", action="append", help="1 or default (repeatable)")
    ap.add_argument("--busy", action="append", type=int, help="competing processes (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-pass-eq", action="store_true", help="skip the pass-equivalent count")
    args = ap.parse_args()
    shapes = sizes(args.size, ["1000000,20", "1000000,100", "200000,200", "200000,400"])
    datas = args.data or ["bench", "correlated"]
    settings = args.threads or ["1", "default"]
    loads = args.busy if args.busy is not None else [0]
    print(f"uptime: {uptime()}\n")
    print("| n × d | data | threads | busy | ours (s) | lbfgs (s) | ratio (median; range) | "
          "pass-eq | rel. gradient | sk rel. gradient |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, d in shapes:
        for data in datas:
            X, y = GENERATORS[data](n, d)
            lam = default_lambda(n)
            pe = float("nan")
            for setting in settings:
                for k in loads:
                    r = one_config(X, y, lam, setting, k, args.rounds)
                    rep = r["report"]
                    if not args.no_pass_eq and np.isnan(pe):
                        unit = unit_costs(X, y, lam, rep.x, 3)
                        pe = pass_equivalents(rep.work, unit)
                    g0 = grad_norm(X, y, lam, np.zeros(d))
                    g_sk = grad_norm(X, y, lam, r["coef_sk"])
                    print(f"| {n:.0e} × {d} | {data} | {setting} | {k} | {r['ours']:.3f} | "
                          f"{r['sk']:.3f} | {r['ratio']:.2f}; {r['lo']:.2f}–{r['hi']:.2f} | "
                          f"{pe:.2f} | {rep.grad_norm / rep.grad_ref:.1e} | {g_sk / g0:.1e} |",
                          flush=True)
    print(f"\nuptime: {uptime()}")


if __name__ == "__main__":
    main()
