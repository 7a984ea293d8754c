"""The formula front end against the fit alone: ``dplr(formula, df)`` end to end at n = 1e6
(issue 19, targets 2 and 4).

Data frames of ``--rows`` rows (default 1e6), built with a fixed seed:

* ``numeric``: ``y ~ .`` over 20 numeric columns (uniform in [-1, 1] / sqrt(20), so every row
  is in the unit ball), a 0/1 response from a logistic model;
* ``factors``: ``y ~ x0 + ... + x4 + f1 + f2`` with five numeric columns and two declared
  factors of 20 levels each (44 design columns with the intercept);
* ``strings``: the same rows with the factors as string (object) columns and their levels
  declared by ``levels=`` (what the CLI passes for ``--levels``);
* ``str``: the same with pandas' own string dtype (``"str"``: pandas 3's default for text,
  what ``read_csv`` gives the CLI).

Each case runs in a fresh process (so its peak memory is its own): the data frame is built,
then ``dplr(..., eps=1, random_state=0)`` (``data_norm`` the public bound of the rows) is
timed end to end (design, response
coding, scan, fit, training C-index), then the fit alone — ``erm.fit`` on the same design
matrix and labels with the same λ and norm bound — and the stages of ``dplr`` (the design rows
of ``DesignSpec.rows``; the rest). ``dplr`` and the fit alone alternate for
``--repeat`` rounds after one warm-up each. Printed: seconds (medians; the design rows best of
``--repeat``), the median of the per-round ratios dplr / fit alone with their range (issue 30's
target ≤ 1.3), and the peak memory of the ``dplr`` call above what the
process held before it, as a multiple of the design matrix's size (target ≤ 1.3).

The floor: what any front end that returns R's answer must add to the fit alone, measured
with NumPy's fastest primitives in the same rounds — the design written into new memory (a
plain copy of the finished design into a fresh array, on two threads: the kernel's zeroing of
the new pages and one read and write, with no formula work, no column coding, no
transposition) and R's training C-index (the scores ``X @ coef`` as one BLAS read of ``X``,
their probabilities on two threads, and one sort of them: an exact rank statistic needs the
scores in order; the labels' part of the count is left out). The floor is the best of the
rounds (a new array's pages now and then cost far more on this machine), so ``(fit + floor) /
fit`` (the fit: the median) is a ratio no implementation of ``dplr`` can beat here.

Run: ``python benchmarks/bench_frontend.py [--rows 1000000] [--repeat 3] [--markdown]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np


def _frame(case: str, n: int):
    import pandas as pd

    rng = np.random.default_rng([19, n])
    if case == "numeric":
        X = rng.uniform(-1, 1, size=(n, 20)) / np.sqrt(20)
        df = pd.DataFrame(X, columns=[f"x{j}" for j in range(20)])
        eta = 3 * (X[:, 0] - X[:, 1] + X[:, 2])
        formula, data_norm = "y ~ .", 1.0
    else:
        levels = [f"L{k:02d}" for k in range(20)]
        declared = None
        X = rng.uniform(-1, 1, size=(n, 5)) / 3
        df = pd.DataFrame(X, columns=[f"x{j}" for j in range(5)])
        for f in ("f1", "f2"):
            df[f] = pd.Categorical.from_codes(rng.integers(0, 20, n), categories=levels)
        eta = 3 * (X[:, 0] - X[:, 1]) + 0.5 * (df["f1"].cat.codes.to_numpy() < 10)
        formula = "y ~ " + " + ".join([f"x{j}" for j in range(5)] + ["f1", "f2"])
        data_norm = 1.6                     # public: sqrt(5 / 9 + 2) with the two dummies
        if case in ("strings", "str"):
            declared = {f: levels for f in ("f1", "f2")}
            for f in ("f1", "f2"):
                df[f] = df[f].astype(object if case == "strings" else "str")
    df["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(np.int64)
    return df, formula, data_norm, (declared if case != "numeric" else None)


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def one(case: str, n: int, repeat: int) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    from scipy.special import expit

    from privatelr import dplr, erm

    df, formula, data_norm, levels = _frame(case, n)
    warnings.simplefilter("ignore")
    before = _rss_mb()
    model = dplr(formula, df, eps=1.0, data_norm=data_norm, random_state=0, levels=levels)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    spec = model.spec
    designs = []
    for _ in range(repeat):
        start = time.perf_counter()
        rows = spec.rows(df, raw=True)
        designs.append(time.perf_counter() - start)
    X, y = rows.X, rows.y

    def fit_alone():
        return erm.fit(X, y, lambda_=model.lambda_, eps=1.0, data_norm=model.norm_bound,
                       random_state=0)

    pool = ThreadPoolExecutor(2)
    halves = [slice(0, X.shape[0] // 2), slice(X.shape[0] // 2, None)]

    def floor():
        fresh = np.empty_like(X)               # new pages, as the design of a dplr call
        list(pool.map(lambda h: np.copyto(fresh[h], X[h]), halves))
        del fresh
        eta = X @ model.coef                   # one BLAS read of X: the training scores
        list(pool.map(lambda h: expit(eta[h], out=eta[h]), halves))
        np.sort(eta)                           # the scores in order (faster here than
        #                                        sorting each class's on two threads)

    res = fit_alone()
    floor()
    # interleaved (dplr, fit, floor, dplr, ...): a change of load hits every side of a round
    totals, fits, floors, ratios = [], [], [], []
    for _ in range(repeat):
        start = time.perf_counter()
        dplr(formula, df, eps=1.0, data_norm=data_norm, random_state=0, levels=levels)
        totals.append(time.perf_counter() - start)
        start = time.perf_counter()
        fit_alone()
        fits.append(time.perf_counter() - start)
        start = time.perf_counter()
        floor()
        floors.append(time.perf_counter() - start)
        ratios.append(totals[-1] / fits[-1])
    return dict(case=case, formula=formula, n=n, d=X.shape[1], dplr=statistics.median(totals),
                design=min(designs), fit=statistics.median(fits), passes=res.passes,
                ratio=statistics.median(ratios), lo=min(ratios), hi=max(ratios),
                floor=min(floors), bound=1.0 + min(floors) / statistics.median(fits),
                x_mb=X.nbytes / 2**20, extra_mb=peak - before,
                same=bool(np.array_equal(res.coef, model.coef)))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--one", choices=["numeric", "factors", "strings", "str"],
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.rows, args.repeat)))
        return
    load = os.getloadavg()[0]
    out = []
    for case in ("numeric", "factors", "strings", "str"):
        cmd = [sys.executable, __file__, "--one", case, "--rows", str(args.rows),
               "--repeat", str(args.repeat)]
        res = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        out.append(json.loads(res.strip().splitlines()[-1]))
    h = "## " if args.markdown else ""
    print(f"{h}Formula front end vs the fit alone (bench_frontend.py, issue 19)\n")
    print(f"- command: `python benchmarks/bench_frontend.py --rows {args.rows} --repeat "
          f"{args.repeat}`; {args.repeat} interleaved rounds (dplr, fit alone, ...), medians; design rows best of {args.repeat}; load average {load:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end\n")
    print("| case | formula | n × d | dplr() (s) | design rows (s) | fit alone (s) | "
          "dplr / fit (median of rounds; range) | floor (s, best) | (fit + floor) / fit | "
          "peak extra memory / X (target ≤ 1.3) | same coef |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in out:
        print(f"| {r['case']} | `{r['formula'] if len(r['formula']) < 30 else r['formula'][:27] + '...'}` "
              f"| {r['n']:.0e} × {r['d']} | {r['dplr']:.3f} | {r['design']:.3f} | "
              f"{r['fit']:.3f} | {r['ratio']:.2f}; {r['lo']:.2f}–{r['hi']:.2f} | "
              f"{r['floor']:.3f} | {r['bound']:.2f} | "
              f"{r['extra_mb'] / r['x_mb']:.2f} ({r['extra_mb']:.0f} / {r['x_mb']:.0f} MB) | "
              f"{r['same']} |")


if __name__ == "__main__":
    main()
