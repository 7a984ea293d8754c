"""Benchmark: WALR (label-DP) against objective perturbation (full DP) and non-private LR.

Synthetic conversion data: n = 1e6 training rows and 2e5 test rows, k = 30 features in [0, 1]
(10 uniform, 10 Beta(2, 5), 10 binary with P = 0.3) plus an intercept column, labels from a
logistic model whose intercept is set for about 3 % positives, and uneven public weights
(log-normal, sigma 0.7, clipped to [0.1, 5]; bound A = 5) independent of features and labels, so
every weighted fit estimates the same coefficients.

Methods, for eps in {0.1, 0.5, 1, 2, 5} (delta = 1e-7 < 1/n for the Gaussian releases):

* WALR-hybrid / WALR-newton — one (eps, delta)-label-DP release of the weighted dot product
  (analytic Gaussian mechanism), then ``walr_fit`` with lambda = 1e-4 (fixed a priori, not tuned
  on the test set);
* dplr-objective — the engine behind ``dplr``: ``erm.fit(method="objective")`` with the same
  weights (A = 5), lambda = 1e-4 and row-norm bound B = sqrt(31) (intercept + 30 features in
  [0, 1]); eps-DP for features *and* labels, so it is expected to be worse — it is there for
  contrast, not as a like-for-like competitor;
* non-private — weighted LR by ``erm.fit(eps=0)`` with lambda = 1e-6.

Reported: test log-loss (mean, unweighted), AUC, wall time of the training (the release's own
time is in its column), solver status. The test set is only used for scoring.

    python benchmarks/bench_walr.py           # full run (a few minutes), appended to RESULTS.md
    python benchmarks/bench_walr.py --quick   # n = 1e5, not appended
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit
from scipy.stats import rankdata

from privatelr import erm, noisy_dot_product, walr_fit

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
DELTA = 1e-7
LAMBDA = 1e-4
LAMBDA_NONPRIVATE = 1e-6
WEIGHTS_BOUND = 5.0
K = 30


def make_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    feats = np.empty((n, K))
    feats[:, :10] = rng.uniform(size=(n, 10))
    feats[:, 10:20] = rng.beta(2.0, 5.0, size=(n, 10))
    feats[:, 20:] = rng.uniform(size=(n, 10)) < 0.3
    beta = rng.normal(0.0, 0.8, size=K)
    eta = feats @ beta
    # intercept giving a 3 % positive rate (bisection on the population mean)
    lo, hi = -20.0, 5.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if expit(eta[:20000] + mid).mean() < 0.03 else (lo, mid)
    X = np.empty((n, K + 1))
    X[:, 0] = 1.0
    X[:, 1:] = feats
    y = (rng.uniform(size=n) < expit(eta + lo)).astype(np.int8)
    w = np.clip(rng.lognormal(0.0, 0.7, size=n), 0.1, WEIGHTS_BOUND)
    return X, y, w


def log_loss(X, y, coef):
    z = X @ coef
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def auc(X, y, coef):
    r = rankdata(X @ coef)
    pos = y == 1
    n1, n0 = int(pos.sum()), int((~pos).sum())
    return float((r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def run(n: int, n_test: int):
    X, y, w = make_data(n + n_test)
    Xte, yte = X[n:], y[n:]
    X, y, w = X[:n], y[:n], w[:n]
    B = math.sqrt(K + 1)
    rows = []

    def score(method, eps, secs, coef, status, extra=""):
        rows.append(dict(method=method, eps=eps, logloss=log_loss(Xte, yte, coef),
                         auc=auc(Xte, yte, coef), secs=secs, status=status, extra=extra))
        r = rows[-1]
        print(f"{method:15s} eps={str(eps):5s} logloss={r['logloss']:.5f} auc={r['auc']:.4f} "
              f"time={secs:7.2f}s {status} {extra}", flush=True)

    secs, ref = timed(lambda: erm.fit(X, y, lambda_=LAMBDA_NONPRIVATE, eps=0, weights=w,
                                      weights_bound=WEIGHTS_BOUND))
    score("non-private", "-", secs, ref.coef, ref.status)
    for i, eps in enumerate(EPSILONS):
        rsecs, rel = timed(lambda: noisy_dot_product(X, y, eps=eps, delta=DELTA, weights=w,
                                                     weights_bound=WEIGHTS_BOUND,
                                                     random_state=100 + i))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            secs, fit = timed(lambda: walr_fit(X, rel, weights=w, lambda_=LAMBDA, solver="hybrid",
                                               random_state=200 + i))
            score("WALR-hybrid", eps, secs, fit.coef, fit.status,
                  f"release {rsecs:.2f}s, sigma {rel.sigma:.3g}, {fit.epochs} epochs")
            secs, fitn = timed(lambda: walr_fit(X, rel, weights=w, lambda_=LAMBDA, solver="newton"))
            score("WALR-newton", eps, secs, fitn.coef, fitn.status,
                  f"{fitn.iterations} Newton steps, ‖hybrid − newton‖ = "
                  f"{np.linalg.norm(fit.coef - fitn.coef):.2g}")
            secs, op = timed(lambda: erm.fit(X, y, lambda_=LAMBDA, eps=eps, method="objective",
                                             data_norm=B, weights=w, weights_bound=WEIGHTS_BOUND,
                                             random_state=300 + i))
            score("dplr-objective", eps, secs, op.coef, op.status,
                  f"lambda used {op.lambda_:.3g}")
        for wmsg in caught:
            print("  warning:", wmsg.message)
    return rows, float(y.mean())


def table(rows, n, n_test, pos_rate) -> str:
    lines = [f"n = {n:,} train, {n_test:,} test, k = {K} features in [0, 1] + intercept, "
             f"{100 * pos_rate:.1f} % positives, weights in [0.1, {WEIGHTS_BOUND:g}], "
             f"delta = {DELTA:g}, lambda = {LAMBDA:g} (non-private {LAMBDA_NONPRIVATE:g}).",
             f"{_dt.date.today().isoformat()}, Python {platform.python_version()}, "
             f"{platform.machine()}, {os.cpu_count()} cores. Train times are wall clock; "
             "the release's own time is in the notes.", "",
             "| method | eps | test log-loss | test AUC | train time (s) | status | notes |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['method']} | {r['eps']} | {r['logloss']:.5f} | {r['auc']:.4f} | "
                     f"{r['secs']:.2f} | {r['status']} | {r['extra']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 1e5, do not append to RESULTS.md")
    args = ap.parse_args()
    n, n_test = (100_000, 50_000) if args.quick else (1_000_000, 200_000)
    t0 = time.perf_counter()
    rows, pos = run(n, n_test)
    text = table(rows, n, n_test, pos)
    print()
    print(text)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if not args.quick:
        path = Path(__file__).with_name("RESULTS.md")
        header = ("\n## WALR: label-private training (bench_walr.py)\n\n"
                  "WALR releases one (eps, delta)-label-DP noisy weighted dot product (analytic "
                  "Gaussian mechanism) and trains label-blind; dplr-objective is eps-DP for "
                  "features and labels (a stronger guarantee, shown for contrast).\n\n")
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(header + text + "\n")


if __name__ == "__main__":
    main()
