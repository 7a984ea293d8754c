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

Pass-equivalents ("pass-eq") price all the work of a private fit in full-data value+gradient
passes: the solver's passes by kind (``SolverReport.work``: gradient passes, Hessian passes,
rows copied into warm-start subsamples, each subsample pass by its share of the rows) and
erm.fit's validation scan, each weighted by its cost measured in the same run on the same data
(best of `--repeat`: a line-search pass, a line-search pass with the Hessian, the scan, a 1/4
strided subsample copy). The counts are deterministic; only the weights are timings.

    python benchmarks/bench_fit.py            # full table, appended to benchmarks/RESULTS.md
    python benchmarks/bench_fit.py --quick    # n = 1e5 only
    python benchmarks/bench_fit.py --no-write --size 1000000,20 --size 200000,400
    python benchmarks/bench_fit.py --no-write --method output --size 1000000,100
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
from privatelr.backends import as_rows
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


def unit_costs(X, y, lam, w, repeat):
    """Seconds of one full-data pass of each kind at (near) the solution ``w``: a line-search
    pass (margins along a direction, loss terms, gradient), the same with the Hessian, the
    validation scan of erm.fit, and copying every row into strided subsamples (a 1/4 one, x4)."""
    obj = ERMObjective(X, np.where(y == 1, 1.0, -1.0), LogisticLoss(), lam)
    obj.evaluate(w, False)
    p = np.full(X.shape[1], 1e-3)
    rows = as_rows(X, y, None, None)
    return dict(gradient=best_time(lambda: obj.line(w, p, False), repeat)[0],
                hessian=best_time(lambda: obj.line(w, p, True), repeat)[0],
                scan=best_time(lambda: rows.scan(bound=1.0), repeat)[0],
                copy=4 * best_time(lambda: obj.subsample(X.shape[0] // 4), repeat)[0])


def pass_equivalents(work, unit):
    """The fit's work (solver passes by kind and the scan) in full-data gradient passes."""
    g = unit["gradient"]
    return (unit["scan"] / g + work.get("gradient", 0.0) + work.get("hessian", 0.0)
            * unit["hessian"] / g + work.get("copy", 0.0) * unit["copy"] / g)


class _Reports:
    """Keeps the SolverReport of every erm.fit (erm.release calls erm.minimize)."""

    def __init__(self):
        self.last = None

    def __enter__(self):
        self._orig = erm.minimize

        def spy(*args, **kw):
            self.last = self._orig(*args, **kw)
            return self.last
        erm.minimize = spy
        return self

    def __exit__(self, *exc):
        erm.minimize = self._orig


def run(sizes, repeat, method="objective"):
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:  # pragma: no cover - optional
        LogisticRegression = None
    rows = []
    extra = dict(delta=1e-6) if method == "gaussian" else {}
    for n, d in sizes:
        X, y = make_data(n, d)
        lam = default_lambda(n)

        def private():
            return erm.fit(X, y, lambda_=lam, eps=1.0, method=method, random_state=1, **extra)
        with _Reports() as spy:
            t_priv, r_priv = best_time(private, repeat)
            report = spy.last
        t_np, r_np = best_time(lambda: erm.fit(X, y, lambda_=lam, eps=0), repeat)
        mem = peak_extra(private, X.nbytes)
        unit = unit_costs(X, y, lam, r_np.coef, repeat)
        row = dict(n=n, d=d, method=method, t_priv=t_priv, t_np=t_np, passes=r_priv.passes,
                   newton=r_priv.iterations, hess=r_priv.counts["hessian"],
                   g_ours=r_priv.grad_norm, g_np=grad_norm(X, y, lam, r_np.coef), mem=mem,
                   conv=r_priv.convergence, work=getattr(report, "work", {}), unit=unit,
                   pe=pass_equivalents(getattr(report, "work", {}), unit))
        if LogisticRegression is not None:
            clf = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, solver="lbfgs",
                                     max_iter=10_000)
            t_sk, _ = best_time(lambda: clf.fit(X, y), repeat)
            row.update(t_sk=t_sk, g_sk=grad_norm(X, y, lam, clf.coef_[0]),
                       err=float(np.abs(clf.coef_[0] - r_np.coef).max()))
        rows.append(row)
        print(_fmt_row(row), flush=True)
    return rows


HEADER = ("| n | d | method | ours, eps=1 (s) | ours, eps=0 (s) | scikit-learn (s) | ratio (eps=1 / "
          "sklearn) | passes over X | Newton its / Hessians | work: gradient / Hessian / copy "
          "passes | pass (s): gradient / Hessian / scan | pass-eq | grad norm ours | "
          "grad norm sklearn | max coef diff sklearn vs exact | peak extra memory / size of X |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def _fmt_row(r):
    sk = r.get("t_sk", float("nan"))
    w, u = r["work"], r["unit"]
    return (f"| {r['n']:.0e} | {r['d']} | {r['method']} | {r['t_priv']:.3f} | {r['t_np']:.3f} | "
            f"{sk:.3f} | {r['t_priv'] / sk:.2f} | {r['passes']} | {r['newton']} / {r['hess']} | "
            f"{w.get('gradient', 0):.2f} / {w.get('hessian', 0):.2f} / {w.get('copy', 0):.2f} | "
            f"{u['gradient']:.3f} / {u['hessian']:.3f} / {u['scan']:.3f} | {r['pe']:.2f} | "
            f"{r['g_ours']:.1e} | {r.get('g_sk', float('nan')):.1e} | {r.get('err', float('nan')):.1e} | "
            f"{r['mem']:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 1e5 only")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="do not append to RESULTS.md")
    ap.add_argument("--size", action="append", metavar="N,D",
                    help="run only this n,d (repeatable), e.g. --size 1000000,100 or "
                         "--size 200000,400")
    ap.add_argument("--method", default="objective", choices=("objective", "output", "gaussian"),
                    help="the private fit's perturbation (gaussian: delta = 1e-6)")
    args = ap.parse_args()
    ns = [100_000] if args.quick else [100_000, 1_000_000]
    sizes = [(n, d) for n in ns for d in (20, 100)]
    if not args.quick:
        sizes += [(200_000, 200), (200_000, 400)]
    if args.size:
        sizes = [tuple(int(float(v)) for v in s.split(",")) for s in args.size]
    print(HEADER)
    rows = run(sizes, args.repeat, args.method)
    if not args.no_write:
        out = Path(__file__).with_name("RESULTS.md")
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        text = (f"\n## bench_fit.py — erm.fit vs scikit-learn ({stamp}, {platform.machine()}, "
                f"best of {args.repeat})\n\n{HEADER}\n" + "\n".join(_fmt_row(r) for r in rows) + "\n")
        with open(out, "a") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
