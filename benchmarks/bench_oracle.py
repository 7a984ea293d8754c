"""What issue 30's pass and ratio targets allow: an oracle's passes against lbfgs's time.

The private fit must reach a relative gradient of 1e-10 on the full data, and only a full-data
pass can show that it has. This benchmark asks how many full-data gradient passes even an
*oracle* needs: Newton's method started where our fit starts on the full data (the optimum of
the 1/16 strided subsample, solved to a relative gradient of 1e-2, as
``privatelr.solver.minimize`` does), stepping with the exact Hessian **at the optimum**, given
for free (no Hessian pass, no scan, no subsample cost counted), until the gradient is 1e-10 of
the full data's gradient at 0 (the solver's reference). Each step costs one gradient pass;
the last pass shows the tolerance is met. Its time (oracle passes × one measured gradient pass)
is a lower bound for any method of this shape, and it is set against scikit-learn's lbfgs at its
default tolerance (the peer of ``bench_speed.py``) on the same data (``bench_fit``'s generator,
λ PrivateLR's default for ε = 1, no noise: the noise shifts the optimum, not the passes).

Columns: the oracle's full passes; ours (``minimize``'s full-data passes and its work in
pass-equivalents, Hessian and copies priced as ``bench_fit`` does); lbfgs's median time and its
iterations; one gradient pass (s, best of ``--rounds``); lbfgs's time in gradient passes; the
oracle's bound on the ratio to lbfgs; our measured ratio (median of interleaved rounds); and
lbfgs asked for all it can give (``tol=1e-16``, one timed fit): its time, iterations and the
relative gradient it reaches on the same objective (ours must show 1e-10).

Run: ``python benchmarks/bench_oracle.py [--size 200000,400 ...] [--rounds 3]`` (one BLAS and
pool thread: ``PRIVATELR_NUM_THREADS=1`` is set here; run with the machine otherwise idle).
"""

from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("PRIVATELR_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bench_fit import (best_time, default_lambda, make_data, pass_equivalents,  # noqa: E402
                       unit_costs)
from common import sizes, uptime  # noqa: E402
from privatelr import solver  # noqa: E402
from privatelr.losses import LogisticLoss  # noqa: E402
from privatelr.objective import ERMObjective  # noqa: E402

SUBSAMPLE = 16        # the warm start's strided subsample (privatelr.solver)
COARSE_GTOL = 1e-2    # ... solved to this relative gradient


def one(n: int, d: int, rounds: int) -> dict:
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    X, y = make_data(n, d)
    lam = default_lambda(n)
    ypm = np.where(y == 1, 1.0, -1.0)
    with threadpool_limits(1):
        exact = solver.minimize(ERMObjective(X, ypm, LogisticLoss(), lam), np.zeros(d),
                                gtol=1e-13)
        obj = ERMObjective(X, ypm, LogisticLoss(), lam)
        hessian = obj.evaluate(exact.x, True)[2]
        coarse = solver.minimize(obj.subsample(n // SUBSAMPLE), np.zeros(d), gtol=COARSE_GTOL,
                                 value=False)
        # the solver's reference: the full data's gradient at 0 (computed here, not counted)
        reference = float(np.abs(obj.evaluate(np.zeros(d), False, value=False)[1]).max())
        tol, w, oracle = 1e-10 * reference, coarse.x.copy(), 0
        while True:
            g = obj.evaluate(w, False, value=False)[1]
            oracle += 1
            if np.abs(g).max() <= tol:
                break
            w = w - np.linalg.solve(hessian, g)

        def ours():
            return solver.minimize(ERMObjective(X, ypm, LogisticLoss(), lam), np.zeros(d),
                                   value=False)
        clf = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, solver="lbfgs",
                                 max_iter=10_000)
        report = ours()
        mine, theirs, ratios = [], [], []
        for _ in range(rounds):                      # interleaved: ours, lbfgs, ours, ...
            mine.append(best_time(ours, 1)[0])
            theirs.append(best_time(lambda: clf.fit(X, y), 1)[0])
            ratios.append(mine[-1] / theirs[-1])
        # the peer asked for all it can give (tol=1e-16): its time and how far it gets
        deep = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, solver="lbfgs",
                                  max_iter=10_000, tol=1e-16)
        t_deep = best_time(lambda: deep.fit(X, y), 1)[0]
        deep_rel = float(np.abs(obj.evaluate(deep.coef_[0].astype(float), False,
                                             value=False)[1]).max()) / reference
        unit = unit_costs(X, y, lam, exact.x, rounds)
        full = report.work.get("gradient", 0.0) + report.work.get("hessian", 0.0)
    t_sk = statistics.median(theirs)
    return dict(n=n, d=d, oracle=oracle, ours_passes=full,
                ours_pe=pass_equivalents(report.work, unit) - unit["scan"] / unit["gradient"],
                t_sk=t_sk, sk_iter=int(clf.n_iter_[0]), t_pass=unit["gradient"],
                sk_passes=t_sk / unit["gradient"], bound=oracle * unit["gradient"] / t_sk,
                ratio=statistics.median(ratios), t_deep=t_deep,
                deep_iter=int(deep.n_iter_[0]), deep_rel=deep_rel)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", action="append", metavar="N,D")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    shapes = sizes(args.size, ["1000000,20", "1000000,100", "200000,200", "200000,400"])
    print(f"uptime: {uptime()}\n")
    print("| n × d | oracle passes | ours: solver passes / pass-eq (solver only) | lbfgs (s), "
          "iterations | gradient pass (s) | lbfgs in passes | oracle / lbfgs ≥ | our solver / lbfgs "
          "| lbfgs at tol=1e-16: s, iterations, rel. gradient |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, d in shapes:
        r = one(n, d, args.rounds)
        print(f"| {n:.0e} × {d} | {r['oracle']} | {r['ours_passes']:.2f} / {r['ours_pe']:.2f} "
              f"| {r['t_sk']:.3f}, {r['sk_iter']} | {r['t_pass']:.4f} | {r['sk_passes']:.1f} "
              f"| {r['bound']:.2f} | {r['ratio']:.2f} | {r['t_deep']:.3f}, {r['deep_iter']}, "
              f"{r['deep_rel']:.1e} |", flush=True)
    print(f"\nuptime: {uptime()}")


if __name__ == "__main__":
    main()
