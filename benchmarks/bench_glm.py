"""Benchmark: privatelr.glm (R's glm and confint) against statsmodels' GLM.

Synthetic data: an intercept and d - 1 standard normal columns, labels from a logistic model
with coefficients N(0, 0.3^2). Measured, interleaved (ours, statsmodels, ours, ...) and the best
of ``--repeat`` kept:

* ``fit``: :func:`privatelr.glm.fit_glm` (R's IRLS, covariance, null deviance, separation
  certificate) and statsmodels ``GLM(Binomial).fit()`` (its IRLS, default tol 1e-8), and their
  ratio;
* ``profile``: :func:`privatelr.glm.profile_confint` per coefficient, R's grid and spline
  (``root="spline"``) and the exact root (``root="exact"``), on the first ``min(d, 5)``
  coefficients (statsmodels has no profile intervals: the column "x fit" is the time of one
  statsmodels fit, to price a profiled coefficient in refits).

Each configuration runs in a child process, once with one BLAS thread and once with the BLAS
default; ``uptime`` is printed with the table (the machine is shared).

    python benchmarks/bench_glm.py                 # the table, appended to benchmarks/RESULTS.md
    python benchmarks/bench_glm.py --no-write --size 20000,20
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from common import publish  # noqa: E402

SIZES = [(2000, 10), (20000, 20), (100000, 50)]


def make_data(n: int, d: int, seed: int = 0):
    from scipy.special import expit
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.standard_normal((n, d - 1))])
    y = (rng.uniform(size=n) < expit(X @ (0.3 * rng.standard_normal(d)))).astype(float)
    return X, y


def child(n: int, d: int, repeat: int) -> dict:
    import statsmodels.api as sm
    from privatelr.glm import fit_glm, profile_confint
    X, y = make_data(n, d)
    k = min(d, 5)
    times = {"ours": [], "sm": [], "spline": [], "exact": []}
    for _ in range(repeat):
        t = time.perf_counter()
        fit = fit_glm(X, y)
        times["ours"].append(time.perf_counter() - t)
        t = time.perf_counter()
        ref = sm.GLM(y, X, family=sm.families.Binomial()).fit()
        times["sm"].append(time.perf_counter() - t)
        for root in ("spline", "exact"):
            t = time.perf_counter()
            profile_confint(fit, X, y, parm=list(range(k)), root=root)
            times[root].append((time.perf_counter() - t) / k)
    best = {key: min(v) for key, v in times.items()}
    best["coef_diff"] = float(np.abs(fit.coefficients - ref.params).max())
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", action="append", help="n,d (repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    sizes = [tuple(int(v) for v in s.split(",")) for s in args.size] if args.size else SIZES
    lines = ["", f"## bench_glm ({time.strftime('%Y-%m-%d %H:%M')})", "",
             f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}",
             "", "| n | d | BLAS threads | fit ours s | fit statsmodels s | ratio | "
             "profile/coef spline s | exact s | spline x fit | max coef diff |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n, d in sizes:
        for threads in ("1", "default"):
            env = dict(os.environ)
            for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                if threads == "1":
                    env[var] = "1"
                else:
                    env.pop(var, None)
            out = subprocess.run([sys.executable, __file__, "--child", str(n), str(d),
                                  str(args.repeat)], capture_output=True, text=True, env=env)
            if out.returncode != 0:
                raise RuntimeError(out.stderr[-3000:])
            r = json.loads(out.stdout.strip().splitlines()[-1])
            lines.append(f"| {n} | {d} | {threads} | {r['ours']:.3f} | {r['sm']:.3f} | "
                         f"{r['ours'] / r['sm']:.2f} | {r['spline']:.3f} | {r['exact']:.3f} | "
                         f"{r['spline'] / r['sm']:.1f} | {r['coef_diff']:.1e} |")
    lines.append(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    publish(lines, append=not args.no_write)


if __name__ == "__main__":
    main()
