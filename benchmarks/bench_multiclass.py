"""Accuracy of private multiclass logistic regression against eps: multinomial, one-vs-rest,
diffprivlib (issue 18).

For each data set, eps in {0.3, 1, 3, 10} and ``--seeds`` replications (default 10; seed =
replication index), the rows are split 70/30 by a seed-dependent permutation and every method is
fitted on the same training rows and scored (test accuracy, mean ± se over seeds) on the same
test rows:

=================  =========================================================================
multinomial        ``privatelr.multinomial.fit(X, y, classes=..., lambda_=lam, eps=eps)``
                   (objective perturbation of the softmax model, eps' = eps - (K-1) log(1 +
                   1/(2 n lam)))
one-vs-rest        ``privatelr.multinomial.fit_ovr(..., eps=eps)``: K binary objective
                   perturbations at eps/K each
diffprivlib        ``diffprivlib.models.LogisticRegression(epsilon=eps, data_norm=1.0,
                   C=1/(n lam), fit_intercept=False)`` (its own one-vs-rest), in its own venv
non-private        ``privatelr.multinomial.fit(..., eps=0)`` at the same lambda
=================  =========================================================================

``lam`` is the multinomial analogue of the package's default rule (the Jacobian penalty is
eps/10): ``lam = 1/(2 n (exp(eps/(10 (K-1))) - 1))`` for rows of norm <= 1; the same lambda for
every method.

Data sets (design ``[1/sqrt(2), x/sqrt(2)]``, every row of norm <= 1, no clipping):

* ``iris`` (n = 150, K = 3, 4 features): each feature mapped to [-1, 1] by its range over the
  data set (standing in for published ranges — a documented assumption of the benchmark), the
  vector divided by 2.
* ``synth5`` (n = 20000, K = 5, 10 features): rows uniform in the unit ball, labels drawn from
  the softmax model with a fixed random coefficient matrix of Frobenius norm 15 (seed 2026).

Every method sees the same seeds and the same splits, so each comparison is also printed as a
**paired difference** (multinomial minus the other method, mean ± paired standard error over the
seeds) with the number of standard errors it lies from zero: a cell is called a win or a loss
only when the difference is at least two paired standard errors from zero, else a tie.

Run: ``python benchmarks/bench_multiclass.py --markdown --seeds 20`` (``--no-diffprivlib`` skips
it; diffprivlib's venv is made on first use as in ``bench_utility.py``; ``--data iris`` runs one
data set, e.g. ``--data iris --seeds 200`` to narrow iris's paired standard errors).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import softmax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_utility import (WORKER, design, diffprivlib_python, fmt_pm, public_scale,  # noqa: E402
                           table, unit_ball)

from privatelr import multinomial  # noqa: E402

EPSILONS = (0.3, 1.0, 3.0, 10.0)
METHODS = ("multinomial", "one-vs-rest", "diffprivlib", "non-private")


def load(name: str, seed: int):
    if name == "iris":
        from privatelr.datasets import load_iris

        df = load_iris()
        x = public_scale(df[df.columns[:4]].to_numpy(dtype=float))
        y = df["Species"].cat.codes.to_numpy() if hasattr(df["Species"], "cat") else \
            np.unique(df["Species"], return_inverse=True)[1]
        return design(x), np.asarray(y, dtype=int), 3
    rng = np.random.default_rng([2026, 5, seed])
    W = np.random.default_rng(2026).standard_normal((10, 5))
    W *= 15.0 / np.linalg.norm(W)
    x = unit_ball(20000, 10, rng)
    P = softmax(x @ W, axis=1)
    y = (P.cumsum(axis=1) > rng.uniform(size=(len(x), 1))).argmax(axis=1)
    return design(x), y, 5


def lam_rule(n: int, K: int, eps: float) -> float:
    return 1.0 / (2.0 * n * math.expm1(eps / (10.0 * (K - 1))))


def accuracy(coef: np.ndarray, X, y) -> float:
    return float(np.mean(np.argmax(X @ coef, axis=1) == y))


def run(name: str, seeds: int, py, folder: Path) -> dict:
    cells = {(m, e): [] for m in METHODS for e in EPSILONS}
    jobs, tests = [], {}
    for seed in range(seeds):
        X, y, K = load(name, seed)
        perm = np.random.default_rng(seed).permutation(len(y))
        k = int(round(0.7 * len(y)))
        Xtr, ytr, Xte, yte = X[perm[:k]], y[perm[:k]], X[perm[k:]], y[perm[k:]]
        classes = list(range(K))
        for eps in EPSILONS:
            lam = lam_rule(k, K, eps)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                fits = {
                    "multinomial": multinomial.fit(Xtr, ytr, classes=classes, lambda_=lam,
                                                   eps=eps, random_state=seed),
                    "one-vs-rest": multinomial.fit_ovr(Xtr, ytr, classes=classes, lambda_=lam,
                                                       eps=eps, random_state=seed),
                    "non-private": multinomial.fit(Xtr, ytr, classes=classes, lambda_=lam,
                                                   eps=0),
                }
            for m, f in fits.items():
                cells[m, eps].append(accuracy(f.coef, Xte, yte))
            jobs.append(dict(eps=eps, seed=seed, C=1.0 / (k * lam), file=f"{name}-{seed}.npz"))
        np.savez(folder / f"{name}-{seed}.npz", X_train=Xtr, y_train=ytr)
        tests[seed] = (Xte, yte, K, Xtr.shape[1])
    if py is not None:
        (folder / "jobs.json").write_text(json.dumps(dict(jobs=jobs)))
        subprocess.run([str(py), str(WORKER), str(folder)], check=True)
        with np.load(folder / "coefs.npz") as data:
            coefs = data["coef"]
        report = json.loads((folder / "report.json").read_text())
        for i, job in enumerate(jobs):
            Xte, yte, K, d = tests[job["seed"]]
            ok = report["jobs"][i]["ok"]
            cells["diffprivlib", job["eps"]].append(
                accuracy(coefs[i].reshape(K, d).T, Xte, yte) if ok else float("nan"))
    return cells


def paired(cells: dict, other: str, eps: float) -> str:
    """``mean ± se (z = ..., verdict)`` of multinomial minus ``other`` over the shared seeds."""
    a = np.array(cells["multinomial", eps], dtype=float)
    b = np.array(cells[other, eps], dtype=float)
    if a.size == 0 or b.size != a.size or np.isnan(b).any():
        return "n/a"
    d = a - b
    se = d.std(ddof=1) / math.sqrt(d.size)
    z = d.mean() / se if se > 0 else math.copysign(math.inf, d.mean()) if d.mean() else 0.0
    verdict = "win" if z >= 2 else "loss" if z <= -2 else "tie"
    return f"{fmt_pm(d.mean(), se, 4)} (z = {z:.1f}, {verdict})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-diffprivlib", action="store_true")
    ap.add_argument("--data", nargs="+", choices=("iris", "synth5"), default=["iris", "synth5"],
                    help="data sets to run (default both)")
    args = ap.parse_args(argv)
    command = shlex.join(["python", *(sys.argv if argv is None else [sys.argv[0], *argv])])
    load_start, start = os.getloadavg(), time.time()
    py = None if args.no_diffprivlib else diffprivlib_python()
    h = "## " if args.markdown else ""
    out = []
    with tempfile.TemporaryDirectory(prefix="bench_multiclass_") as tmp:
        for name in args.data:
            out.append((name, run(name, args.seeds, py, Path(tmp))))
    print(f"{h}Private multiclass logistic regression: test accuracy (bench_multiclass.py)\n")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines = [f"command: `{command}`", f"seeds: {args.seeds}; wall time {time.time() - start:.0f} s; "
             f"load average at start {load_start[0]:.2f}, at end {os.getloadavg()[0]:.2f}",
             f"`uptime` at the end: {uptime}"]
    for line in lines:
        print(f"- {line}" if args.markdown else line)
    for name, cells in out:
        print(f"\n{'### ' if args.markdown else '== '}{name}\n")
        rows = []
        for m in METHODS:
            row = [m]
            for eps in EPSILONS:
                v = np.array(cells[m, eps], dtype=float)
                if v.size == 0:
                    row.append("skipped")
                elif np.isnan(v).any():
                    row.append(f"fail ({int(np.isnan(v).sum())}/{v.size})")
                else:
                    row.append(fmt_pm(v.mean(), v.std(ddof=1) / math.sqrt(v.size), 3))
            rows.append(row)
        print(table(["method"] + [f"eps = {e:g}" for e in EPSILONS], rows, args.markdown))
        print(f"\npaired difference in test accuracy, multinomial minus the other method "
              f"(mean ± paired se over {args.seeds} seeds; z = mean / se; win or loss only "
              f"when |z| >= 2):\n")
        rows = [[f"multinomial - {other}"] + [paired(cells, other, eps) for eps in EPSILONS]
                for other in METHODS[1:]]
        print(table(["comparison"] + [f"eps = {e:g}" for e in EPSILONS], rows, args.markdown))


if __name__ == "__main__":
    main()
