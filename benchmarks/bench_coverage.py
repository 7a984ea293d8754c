"""Coverage of privatelr's private 95% confidence intervals (issue 16).

For every cell n in {1e3, 1e4, 1e5}, eps in {0.5, 1, 4}, p in {3, 10} covariates (+ intercept):
``--reps`` replications (default 1000) of

1. covariates uniform in the unit ball of R^p (so ``data_norm=1`` holds without clipping),
   labels from the logistic model with w0 = (-0.5, 1, -1, 0.5, -0.5, 1, ...);
2. ``erm.fit(..., eps=eps, inference=True)`` (a quarter of eps on the information matrix, the
   default lambda for the rest), then ``confint`` at 95%;
3. the non-private glm (``eps=0, lambda_=0``) on the same rows, for the width ratio.

Per cell it prints the share of replications where inference refused (the method's own rule:
the released information is too noisy), coverage of w0 among the others (min / mean / max over
coefficients), the mean width relative to glm's Wald interval, and the budget share on the
variance. A cell *claims validity* when it refuses in under 5% of replications; the claim to
check is coverage in [0.93, 0.97] for every coefficient of every claimed cell (with 1000
replications the standard error of one coverage is 0.007).

Run: ``python benchmarks/bench_coverage.py [--reps 1000] [--markdown]`` (2 worker processes;
the same seeds give the same table).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from multiprocessing import Pool

import numpy as np

from privatelr import confint, default_lambda, erm
from privatelr.inference import DEFAULT_SHARE

NS = (1_000, 10_000, 100_000)
EPSILONS = (0.5, 1.0, 4.0)
PS = (3, 10)
B = math.sqrt(2.0)          # rows (1, x) with ||x|| <= 1


def truth(p: int) -> np.ndarray:
    return np.r_[-0.5, np.resize([1.0, -1.0, 0.5, -0.5], p)]


def one(args):
    n, eps, p, seed = args
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, p))
    z /= np.linalg.norm(z, axis=1)[:, None]
    z *= rng.uniform(size=(n, 1)) ** (1.0 / p)
    X = np.c_[np.ones(n), z]
    w0 = truth(p)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-(X @ w0)))).astype(int)
    lam = default_lambda(n, eps * (1.0 - DEFAULT_SHARE), data_norm=B)
    fit = erm.fit(X, y, lambda_=lam, eps=eps, data_norm=B, inference=True, random_state=rng)
    try:
        ci = confint(fit).to_numpy()
    except ValueError as exc:
        if "not be reliable" not in str(exc):
            raise
        return None
    covered = (ci[:, 0] <= w0) & (w0 <= ci[:, 1])
    width = ci[:, 1] - ci[:, 0]
    try:
        glm = erm.fit(X, y, lambda_=0.0, eps=0.0, data_norm=B, inference=True)
        gci = confint(glm).to_numpy()
        ratio = width / (gci[:, 1] - gci[:, 0])
    except ValueError:          # no finite MLE (separation) in this replication
        ratio = np.full(p + 1, np.nan)
    return covered, ratio


def run_cell(pool, n, eps, p, reps, seed):
    seeds = np.random.SeedSequence([seed, n, int(eps * 10), p]).generate_state(reps)
    out = pool.map(one, [(n, eps, p, int(s)) for s in seeds], chunksize=max(1, reps // 40))
    kept = [o for o in out if o is not None]
    refused = 1.0 - len(kept) / reps
    if not kept:
        return dict(refused=refused, kept=0)
    cov = np.mean([k[0] for k in kept], axis=0)
    ratios = np.array([k[1] for k in kept])
    no_mle = int(np.isnan(ratios[:, 0]).sum())
    return dict(refused=refused, kept=len(kept), cov_min=cov.min(), cov_mean=cov.mean(),
                cov_max=cov.max(), worst=int(cov.argmin()), width=float(np.nanmean(ratios)),
                no_mle=no_mle)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    start = time.time()
    rows = []
    with Pool(2) as pool:
        for n in NS:
            for p in PS:
                for eps in EPSILONS:
                    t = time.time()
                    r = run_cell(pool, n, eps, p, args.reps, args.seed)
                    r.update(n=n, p=p, eps=eps, seconds=time.time() - t)
                    rows.append(r)
                    print(f"n={n} p={p} eps={eps}: {r}", file=sys.stderr, flush=True)
    head = ("| n | p | eps | refused | claims validity | coverage min / mean / max | "
            "worst coef | width / glm | no MLE | share on variance |")
    print(head)
    print("|" + "---|" * 10)
    for r in rows:
        claim = r["refused"] < 0.05
        if r["kept"] == 0:
            cov, worst, width, no_mle = "—", "—", "—", "—"
        else:
            cov = f"{r['cov_min']:.3f} / {r['cov_mean']:.3f} / {r['cov_max']:.3f}"
            worst, width, no_mle = f"w{r['worst']}", f"{r['width']:.2f}", r["no_mle"]
        print(f"| {r['n']:,} | {r['p']} | {r['eps']:g} | {r['refused']:.1%} | "
              f"{'yes' if claim else 'no'} | {cov} | {worst} | {width} | {no_mle} | "
              f"{DEFAULT_SHARE:g} |")
    claimed = [r for r in rows if r["refused"] < 0.05 and r["kept"]]
    bad = [r for r in claimed if not (0.93 <= r["cov_min"] and r["cov_max"] <= 0.97)]
    print(f"\n{args.reps} replications per cell; {len(claimed)} of {len(rows)} cells claim "
          f"validity; claimed cells outside [0.93, 0.97]: {len(bad)}; total "
          f"{time.time() - start:.0f} s; load average {os.getloadavg()[0]:.2f} "
          f"({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
