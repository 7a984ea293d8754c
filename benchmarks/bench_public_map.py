"""The public map on realistic health records: test log-loss, AUC and interval availability (issue 28).

Data: :func:`privatelr.datasets.make_health` (age 18-90, bmi 15-50, sex, smoker, region with 4
declared levels; the true model is logistic), ``--n`` training rows (default 20,000) and 20,000
test rows, both drawn anew for every seed. Every fit is ``dplr("y ~ age + bmi + sex + smoker +
region", train, bounds=pb, eps=eps, inference=True, random_state=seed)`` with every other
argument at its default, where ``pb`` is one of three public maps from the codebook ranges
(:data:`privatelr.datasets.HEALTH_RANGES`, :data:`~privatelr.datasets.HEALTH_LEVELS`):

* ``old``      -- ``public_bounds(..., center=False)``: each column divided by its largest bound;
* ``centred``  -- ``public_bounds(...)``: (x - midpoint) / half-range, factor dummies centred;
  ``data_norm`` the worst case ``sqrt(number of terms)``;
* ``rms``      -- ``public_bounds(..., norm="rms")``: the centred map with the tighter public
  norm bound (root mean square under uniform columns), rows above it clipped.

Scores (on the test rows, with ``predict(model, test)``, i.e. the estimate the model reports):
log-loss and AUC (the c-index), mean +- standard error over ``--seeds`` seeds (default 20);
"intervals" is the share of seeds whose ``confint`` is given; a non-private glm (``eps=0``) row
for scale.

The second table (issue 28's done-when) counts, for 10 seeds at eps = 0.5, 1, 2 with the
centred map and the default settings, how often intervals are given.

    python benchmarks/bench_public_map.py [--seeds 20] [--markdown]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import subprocess
import sys
import time
import warnings
from multiprocessing import Pool

import numpy as np

from privatelr import confint, dplr, predict, public_bounds
from privatelr.datasets import HEALTH_LEVELS, HEALTH_RANGES, make_health
from privatelr.report.roc import c_index

FORMULA = "y ~ age + bmi + sex + smoker + region"
EPSILONS = (0.5, 1.0, 2.0, 4.0)
MAPS = {"old": dict(center=False), "centred": {}, "rms": dict(norm="rms")}


def bounds(kind):
    return public_bounds(HEALTH_RANGES, levels=HEALTH_LEVELS, **MAPS[kind])


def one(task):
    kind, eps, n, seed = task
    warnings.simplefilter("ignore")
    rng = np.random.default_rng([2028, seed])
    train, test = make_health(n, rng), make_health(20_000, rng)
    t0 = time.time()
    kw = {} if eps == 0 else dict(inference=True, random_state=seed)
    m = dplr(FORMULA, train, bounds=bounds(kind), eps=eps, **kw)
    seconds = time.time() - t0
    p = np.clip(np.asarray(predict(m, test, type="response"), float), 1e-15, 1 - 1e-15)
    y = test.y.to_numpy()
    loss = float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))
    auc = float(c_index(p, y))
    quality = "none"
    if eps > 0:
        try:
            quality = confint(m).attrs["quality"]
        except ValueError:
            quality = "refused"
    return loss, auc, quality, seconds


def mean_se(x):
    x = np.asarray(x, float)
    return f"{x.mean():.4f} ± {x.std(ddof=1) / math.sqrt(x.size):.4f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--markdown", action="store_true", help="append the tables to RESULTS.md")
    args = ap.parse_args(argv)
    start = time.time()
    tasks = [(kind, eps, args.n, s) for kind in MAPS for eps in EPSILONS
             for s in range(args.seeds)] + [("centred", 0.0, args.n, s) for s in range(args.seeds)]
    avail = [("centred", eps, args.n, 100 + s) for eps in (0.5, 1.0, 2.0) for s in range(10)]
    with Pool(2) as pool:
        res = pool.map(one, tasks + avail, chunksize=4)
    out = dict(zip(tasks + avail, res))
    lines = [f"### The public map on health records (bench_public_map.py, {_dt.date.today()})", "",
             f"`python benchmarks/bench_public_map.py --seeds {args.seeds}`; n = {args.n:,} "
             "training and 20,000 test rows per seed (drawn anew), default settings "
             "(`inference=True`, default lambda and share); mean ± SE over seeds.", "",
             "| map | eps | test log-loss | test AUC | intervals given | fit time (s) |",
             "|---|---|---|---|---|---|"]
    for kind in MAPS:
        for eps in EPSILONS:
            rs = [out[(kind, eps, args.n, s)] for s in range(args.seeds)]
            q = [r[2] for r in rs]
            lines.append(f"| {kind} | {eps:g} | {mean_se([r[0] for r in rs])} | "
                         f"{mean_se([r[1] for r in rs])} | {q.count('claimed')}/{args.seeds} | "
                         f"{np.mean([r[3] for r in rs]):.2f} |")
    rs = [out[("centred", 0.0, args.n, s)] for s in range(args.seeds)]
    lines.append(f"| glm (eps = 0) | – | {mean_se([r[0] for r in rs])} | "
                 f"{mean_se([r[1] for r in rs])} | – | {np.mean([r[3] for r in rs]):.2f} |")
    lines += ["", "Interval availability at the issue's done-when (centred map, n = "
              f"{args.n:,}, default settings, seeds 100-109):", "",
              "| eps | intervals given (of 10) | refused |",
              "|---|---|---|"]
    for eps in (0.5, 1.0, 2.0):
        q = [out[("centred", eps, args.n, 100 + s)][2] for s in range(10)]
        lines.append(f"| {eps:g} | {q.count('claimed')} | {q.count('refused')} |")
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines += ["", f"Total {time.time() - start:.0f} s on 2 worker processes; `uptime`: {up}", ""]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        sys.path.insert(0, os.path.dirname(__file__))
        from common import publish
        publish([text], append=True)


if __name__ == "__main__":
    main()
