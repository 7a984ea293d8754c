"""Benchmark: privatelr.erm.fit against scikit-learn's LogisticRegression(lbfgs).

Synthetic data: rows uniform in the unit ball of R^d, labels from a logistic model with
||beta|| = 10. Both fits minimise the same objective (mean logistic loss + lambda/2 ||w||^2, every
coefficient penalised: scikit-learn with fit_intercept=False and C = 1/(n lambda)); lambda is
PrivateLR's default for eps = 1. privatelr runs objective perturbation at eps = 1 (and the
non-private fit); scikit-learn runs non-private at its default tol = 1e-4 in the same process.

Reported: best-of-`--repeat` wall time, the ratio ours/scikit-learn, passes over X, the gradient
infinity norm each reached on its own objective, and peak memory during the fit (tracemalloc,
which sees NumPy's allocations) in multiples of the size of X (X itself excluded, so the total is
1 + that figure).

    python benchmarks/bench_fit.py            # full table, appended to benchmarks/RESULTS.md
    python benchmarks/bench_fit.py --quick    # n = 1e5 only
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import time
import tracemalloc
from pathlib import Path

import numpy as np
from scipy.special import expit

from privatelr import erm
from privatelr.losses import LogisticLoss
from privatelr.objective import ERMObjective


def make_data(n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.sqrt(np.einsum("ij,ij->i", X, X))[:, None]
    X *= rng.uniform(size=(n, 1)) ** (1.0 / d)
    beta = rng.standard_normal(d)
    beta *= 10.0 / np.linalg.norm(beta)
    y = (rng.uniform(size=n) < expit(X @ beta)).astype(np.int8)
    return X, y


def default_lambda(n: int, eps: float = 1.0) -> float:
    return 1.0 / (4.0 * n * np.expm1(eps / 20.0))


def best_time(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def peak_extra(fn, nbytes):
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / nbytes


def grad_norm(X, y, lam, w):
    obj = ERMObjective(X, np.where(y == 1, 1.0, -1.0), LogisticLoss(), lam)
    return float(np.abs(obj.evaluate(np.asarray(w, float), False)[1]).max())


def run(sizes, repeat):
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:  # pragma: no cover - optional
        LogisticRegression = None
    rows = []
    for n, d in sizes:
        X, y = make_data(n, d)
        lam = default_lambda(n)
        t_priv, r_priv = best_time(lambda: erm.fit(X, y, lambda_=lam, eps=1.0, random_state=1), repeat)
        t_np, r_np = best_time(lambda: erm.fit(X, y, lambda_=lam, eps=0), repeat)
        mem = peak_extra(lambda: erm.fit(X, y, lambda_=lam, eps=1.0, random_state=1), X.nbytes)
        row = dict(n=n, d=d, t_priv=t_priv, t_np=t_np, passes=r_priv.passes,
                   newton=r_priv.iterations, hess=r_priv.counts["hessian"],
                   g_ours=r_priv.grad_norm, g_np=grad_norm(X, y, lam, r_np.coef), mem=mem,
                   conv=r_priv.convergence)
        if LogisticRegression is not None:
            clf = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, solver="lbfgs",
                                     max_iter=10_000)
            t_sk, _ = best_time(lambda: clf.fit(X, y), repeat)
            row.update(t_sk=t_sk, g_sk=grad_norm(X, y, lam, clf.coef_[0]),
                       err=float(np.abs(clf.coef_[0] - r_np.coef).max()))
        rows.append(row)
        print(_fmt_row(row), flush=True)
    return rows


HEADER = ("| n | d | ours, eps=1 (s) | ours, eps=0 (s) | scikit-learn (s) | ratio (eps=1 / sklearn) "
          "| passes over X | Newton its / Hessians | grad norm ours | grad norm sklearn | "
          "max coef diff sklearn vs exact | peak extra memory / size of X |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def _fmt_row(r):
    sk = r.get("t_sk", float("nan"))
    return (f"| {r['n']:.0e} | {r['d']} | {r['t_priv']:.3f} | {r['t_np']:.3f} | {sk:.3f} | "
            f"{r['t_priv'] / sk:.2f} | {r['passes']} | {r['newton']} / {r['hess']} | "
            f"{r['g_ours']:.1e} | {r.get('g_sk', float('nan')):.1e} | {r.get('err', float('nan')):.1e} | "
            f"{r['mem']:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 1e5 only")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="do not append to RESULTS.md")
    ap.add_argument("--size", action="append", metavar="N,D",
                    help="run only this n,d (repeatable), e.g. --size 1000000,100")
    args = ap.parse_args()
    ns = [100_000] if args.quick else [100_000, 1_000_000]
    sizes = [(n, d) for n in ns for d in (20, 100)]
    if args.size:
        sizes = [tuple(int(float(v)) for v in s.split(",")) for s in args.size]
    print(HEADER)
    rows = run(sizes, args.repeat)
    if not args.no_write:
        out = Path(__file__).with_name("RESULTS.md")
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        text = (f"\n## bench_fit.py — erm.fit vs scikit-learn ({stamp}, {platform.machine()}, "
                f"best of {args.repeat})\n\n{HEADER}\n" + "\n".join(_fmt_row(r) for r in rows) + "\n")
        with open(out, "a") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
