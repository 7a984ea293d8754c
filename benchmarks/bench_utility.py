"""Utility of private logistic regression: test log-loss and accuracy against eps, by method.

For every data set below, eps in {0.1, 0.3, 1, 3} and ``--seeds`` replications (default 10;
the seed is the replication index 0, 1, ...), the rows are split 70/30 into train/test by a
seed-dependent permutation (``numpy.random.default_rng(seed).permutation``), and every method is
fitted on the same training rows and scored on the same test rows:

=====================  ======================================================================
objective (pure eps)   ``erm.fit(X, y, lambda_=lam, eps=eps, method="objective",
                       random_state=seed)``
gaussian objective     ``erm.fit(..., method="gaussian", delta=1e-6, random_state=seed)``
AMP                    ``erm.fit(..., method="amp", delta=1e-6, random_state=seed,
                       solver="lbfgs", gtol=1e-9)``
output                 ``erm.fit(..., method="output", random_state=seed)``
non-private            ``erm.fit(X, y, lambda_=lam, eps=0, random_state=seed)`` (same lambda)
diffprivlib            ``diffprivlib.models.LogisticRegression(epsilon=eps, data_norm=1.0,
                       C=1/(n*lam), fit_intercept=False, random_state=seed)`` on the same X
=====================  ======================================================================

with ``n`` the number of training rows and ``lam = default_lambda(n, eps)`` (the same lambda
for every method at a given eps; diffprivlib's ``C = 1/(n*lam)`` is the same L2 penalty). This
lambda is tuned to objective perturbation (its penalty is eps/10); under it, output
perturbation's noise scale ``2/(n lam eps) = 8 (exp(eps/20) - 1)/eps`` is about 0.4 whatever
eps is, so that row hardly improves with eps. The
UserWarnings of ``erm.fit`` about the privacy penalty are silenced; a fit that raises
``ValueError`` is recorded as a failure and its cell reads "fail".

**Scores.** ``p = 1/(1 + exp(-X_test @ coef))`` clipped to ``[1e-15, 1 - 1e-15]``; test
log-loss ``mean(-(y log p + (1 - y) log(1 - p)))`` and test accuracy ``mean((p > 0.5) == y)``.
Each cell is the mean over seeds ± its standard error ``sd / sqrt(seeds)`` (``sd`` with
``ddof=1``); a cell where some seed failed reads "fail (k/seeds seeds)" and is not averaged.

**Data sets** (``--datasets`` names):

* ``cancer``: scikit-learn's breast cancer data (n = 569, 30 features, label 1 = benign).
* ``fair``: statsmodels' ``fair`` data (n = 6366), label ``affairs > 0``, the other 8 columns as
  covariates.
* ``sphere10``: Chaudhuri & Monteleoni's NIPS 2008 design ``privatelr.datasets.make_sphere(20000,
  10, noise_band=0.1, flip=0.2, random_state=seed)``: rows on the unit sphere, labels flipped with
  probability 0.2 within 0.1 of the hyperplane; drawn anew for every seed.
* ``synth50``, ``synth200``: n = 50000 rows uniform in the unit ball of R^d (a normal direction
  times a ``U^(1/d)`` radius), d = 50 or 200, labels from the logistic model
  ``P(y = 1 | x) = 1/(1 + exp(-x @ w0))`` without intercept, ``w0`` of norm 5 along one random
  direction fixed per d (seed ``[2026, d]``); rows and labels drawn anew for every seed
  (seed ``[2026, d, seed]``). Note that ``x @ w0`` has standard deviation about
  ``5 / sqrt(d + 2)``, so these are weak-signal problems (the Bayes accuracy is about 0.63 at
  d = 50 and 0.57 at d = 200).

**Preprocessing** is data-independent ("public"), so every design row has L2 norm <= 1 *with*
its intercept entry and every fit uses ``data_norm=1.0`` (no row is clipped):

* ``cancer`` and ``fair``: every feature is mapped to [-1, 1] by a public range ``[lo, hi]``,
  ``x -> 2 (x - lo)/(hi - lo) - 1``, and the covariate vector is divided by ``sqrt(p)`` so its
  norm is <= 1. **Documented assumption of the benchmark:** the ranges used are each feature's
  min and max over the whole data set; they stand in for published ranges (e.g. from a
  codebook), which a real private analysis would have to take from outside the data. This
  touches the data once, identically for every method, and is not charged to any budget.
* ``sphere10``, ``synth50``, ``synth200``: the covariates already have norm <= 1.
* Every data set: the design is ``X = [1/sqrt(2), x/sqrt(2)]`` (an intercept column of
  ``1/sqrt(2)`` and the covariates scaled by ``1/sqrt(2)``), so every row has norm <= 1.

diffprivlib needs scikit-learn < 1.6, which conflicts with the development environment, so it
runs in its own venv, ``benchmarks/.venv-diffprivlib`` (created on first use with ``python -m
venv`` and ``pip install diffprivlib "scikit-learn<1.6"``; needs network access that once), by
``benchmarks/diffprivlib_worker.py``: one subprocess per data set gets every seed's training
rows in a temporary directory and returns the coefficients, which are scored here like the
others. diffprivlib minimises its perturbed objective with L-BFGS-B at its own defaults
(``max_iter=100``, ``tol=1e-4``), not to the exact minimiser; its ConvergenceWarnings, if any,
are counted under the table. ``--no-diffprivlib`` skips it (its row then reads "skipped").

After the tables, a "targets" section prints PASS/FAIL for

(a) the gaussian objective has a lower mean test log-loss than the objective (pure eps) for
    every data set with d >= 50 covariates (``synth50``, ``synth200``) and every eps >= 0.3;
(b) the gaussian objective has a lower mean test log-loss than diffprivlib in every cell.

**Tuning** (``--tuning-reps``, default 200; 0 skips). Private choice of λ among ``m = 10``
candidates ``logspace(-4, 0, 10)`` at ε = 1 on ``fair`` (covariates publicly scaled as above;
``dplr_tune("y ~ .", train, ...)`` adds its own intercept, ``data_norm=1``), once with DPpack's
split (``selection="split"``: each candidate fitted on a disjoint eleventh of the training rows,
chosen by the exponential mechanism on the last eleventh) and once by random stopping
(``selection="random_stopping"``: every run on all training rows, Liu & Talwar). Replication
``r`` shuffles the rows with seed ``r``, splits 70/30, and runs both with ``random_state=r``;
the chosen models are scored on the test rows. Printed: the share of replications in which
random stopping has the lower test log-loss (target >= 80%), and both methods' mean test
log-loss and accuracy.

Run: ``python benchmarks/bench_utility.py --markdown`` (paste into benchmarks/RESULTS.md), or
``python benchmarks/bench_utility.py [--seeds 10] [--datasets cancer,fair,sphere10,synth50,synth200]
[--no-diffprivlib]``. Two worker processes (``multiprocessing.Pool(2)``, one BLAS / privatelr
thread each) fit the (data set, seed) jobs; the same seeds give the same table.
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
from functools import lru_cache
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from scipy.special import expit

import privatelr
from privatelr import default_lambda, erm
from privatelr.datasets import make_sphere

EPSILONS = (0.1, 0.3, 1.0, 3.0)
DELTA = 1e-6
TRAIN_SHARE = 0.7
SQRT_HALF = math.sqrt(0.5)
BASE_SEED = 2026
HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-diffprivlib"
WORKER = HERE / "diffprivlib_worker.py"
DPL = "diffprivlib"

#: name -> (description, covariates p, rows n)
DATASETS = {
    "cancer": ("breast cancer (sklearn.datasets.load_breast_cancer)", 30, 569),
    "fair": ("statsmodels fair, label affairs > 0", 8, 6366),
    "sphere10": ("NIPS 2008 sphere, noise_band=0.1, flip=0.2", 10, 20_000),
    "synth50": ("unit ball, logistic labels, ||w0|| = 5", 50, 50_000),
    "synth200": ("unit ball, logistic labels, ||w0|| = 5", 200, 50_000),
}

#: row label -> keyword arguments of erm.fit besides X, y, lambda_, random_state
METHODS = {
    "objective (pure eps)": dict(eps=None, method="objective"),
    "gaussian objective": dict(eps=None, method="gaussian", delta=DELTA),
    "AMP": dict(eps=None, method="amp", delta=DELTA, solver="lbfgs", gtol=1e-9),
    "output": dict(eps=None, method="output"),
    "non-private": dict(eps=0.0),
}
ROWS = (*METHODS, DPL)


# ---------------------------------------------------------------------------------- data


def public_scale(Z: np.ndarray) -> np.ndarray:
    """Each feature to [-1, 1] by its range, then the vector divided by sqrt(p): norm <= 1.
    The range is the feature's min and max over the whole data set, standing in for a
    published range (the module docstring's documented assumption)."""
    lo, hi = Z.min(axis=0), Z.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    x = np.clip(2.0 * (Z - lo) / span - 1.0, -1.0, 1.0)
    return x / math.sqrt(Z.shape[1])


def design(x: np.ndarray) -> np.ndarray:
    """``[1/sqrt(2), x/sqrt(2)]``: every row has norm <= 1 when ``||x|| <= 1``."""
    return np.c_[np.full(len(x), SQRT_HALF), x * SQRT_HALF]


@lru_cache(maxsize=None)
def real_data_covariates(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The publicly scaled covariates (norm <= 1, no intercept) and 0/1 labels."""
    if name == "cancer":
        from sklearn.datasets import load_breast_cancer
        Z, y = load_breast_cancer(return_X_y=True)
    elif name == "fair":
        import statsmodels.api as sm
        df = sm.datasets.fair.load_pandas().data
        y = (df["affairs"] > 0).to_numpy()
        Z = df.drop(columns="affairs").to_numpy(dtype=float)
    else:
        raise ValueError(name)
    return public_scale(np.asarray(Z, dtype=float)), np.asarray(y, dtype=int)


@lru_cache(maxsize=None)
def real_data(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The design ``[1/sqrt(2), x/sqrt(2)]`` of the publicly scaled covariates, and labels."""
    x, y = real_data_covariates(name)
    return design(x), y


def unit_ball(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    z = rng.standard_normal((n, d))
    z /= np.linalg.norm(z, axis=1)[:, None]
    return z * rng.uniform(size=(n, 1)) ** (1.0 / d)


def synthetic_truth(d: int) -> np.ndarray:
    u = np.random.default_rng([BASE_SEED, d]).standard_normal(d)
    return 5.0 * u / np.linalg.norm(u)


def load(name: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Design (norm <= 1 rows, intercept column first) and 0/1 labels of replication ``seed``."""
    _, p, n = DATASETS[name]
    if name in ("cancer", "fair"):
        return real_data(name)
    if name == "sphere10":
        x, y = make_sphere(n, p, noise_band=0.1, flip=0.2, random_state=seed)
        return design(x), np.asarray(y, dtype=int)
    rng = np.random.default_rng([BASE_SEED, p, seed])
    x = unit_ball(n, p, rng)
    y = (rng.uniform(size=n) < expit(x @ synthetic_truth(p))).astype(int)
    return design(x), y


def split(X, y, seed):
    perm = np.random.default_rng(seed).permutation(len(y))
    k = int(round(TRAIN_SHARE * len(y)))
    tr, te = perm[:k], perm[k:]
    return X[tr], y[tr], X[te], y[te]


def scores(coef, X, y) -> tuple[float, float]:
    """Test log-loss and accuracy of the coefficients (p clipped to [1e-15, 1 - 1e-15])."""
    p = np.clip(expit(X @ coef), 1e-15, 1.0 - 1e-15)
    logloss = float(np.mean(-(y * np.log(p) + (1 - y) * np.log1p(-p))))
    return logloss, float(np.mean((p > 0.5) == y))


# ---------------------------------------------------------------------------------- jobs


def single_threaded() -> None:
    """Pool initializer: one thread per process for BLAS and privatelr's passes (two processes
    share the machine; privatelr's results do not depend on its thread count)."""
    os.environ["PRIVATELR_NUM_THREADS"] = "1"
    try:
        from threadpoolctl import threadpool_limits
        global _LIMITS
        _LIMITS = threadpool_limits(1)
    except ImportError:
        pass


def one(args):
    """Every privatelr fit of one (data set, seed); the split is saved for diffprivlib."""
    name, seed, folder = args
    X, y = load(name, seed)
    norms = np.linalg.norm(X, axis=1)
    assert norms.max() <= 1.0 + 1e-12, (name, norms.max())
    Xtr, ytr, Xte, yte = split(X, y, seed)
    n = len(ytr)
    out = dict(seed=seed, n_train=n, n_test=len(yte), d=X.shape[1], lam={}, cells={},
               seconds={m: 0.0 for m in METHODS})
    for eps in EPSILONS:
        lam = default_lambda(n, eps)
        out["lam"][eps] = lam
        for label, kw in METHODS.items():
            kw = dict(kw)
            if kw["eps"] is None:
                kw["eps"] = eps
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    res = erm.fit(Xtr, ytr, lambda_=lam, random_state=seed, **kw)
                out["cells"][label, eps] = scores(np.asarray(res.coef), Xte, yte)
            except ValueError as exc:
                out["cells"][label, eps] = f"ValueError: {exc}"
            out["seconds"][label] += time.perf_counter() - start
    if folder is not None:
        np.savez(Path(folder) / f"{name}-{seed}.npz", X_train=Xtr, y_train=ytr, X_test=Xte,
                 y_test=yte)
    return out


# --------------------------------------------------------------------------- diffprivlib


def diffprivlib_python() -> Path:
    """The venv's interpreter, creating the venv (or completing its install) when needed."""
    py = VENV / "bin" / "python"
    check = [str(py), "-c", "import diffprivlib, sklearn"]
    if py.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return py
    if not py.exists():
        print(f"creating {VENV} ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    print("pip install diffprivlib 'scikit-learn<1.6' ...", file=sys.stderr, flush=True)
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "diffprivlib",
                    "scikit-learn<1.6"], check=True, stdout=sys.stderr)
    subprocess.run(check, check=True)
    return py


def run_diffprivlib(py, folder: Path, name: str, fits: list[dict]) -> dict:
    """diffprivlib on every seed's training rows in one subprocess; scored here."""
    jobs = [dict(eps=eps, seed=f["seed"], C=1.0 / (f["n_train"] * f["lam"][eps]),
                 file=f"{name}-{f['seed']}.npz") for f in fits for eps in EPSILONS]
    for stale in ("coefs.npz", "report.json"):
        (folder / stale).unlink(missing_ok=True)
    (folder / "jobs.json").write_text(json.dumps(dict(jobs=jobs)))
    subprocess.run([str(py), str(WORKER), str(folder)], check=True)
    with np.load(folder / "coefs.npz") as data:
        coefs = data["coef"]
    report = json.loads((folder / "report.json").read_text())
    cells, warned, seconds = {}, {}, 0.0
    for f in fits:
        with np.load(folder / f"{name}-{f['seed']}.npz") as data:
            Xte, yte = data["X_test"], data["y_test"]
        for i, job in enumerate(jobs):
            if job["seed"] != f["seed"]:
                continue
            entry = report["jobs"][i]
            seconds += entry["seconds"]
            for w in entry["warnings"]:
                warned[w] = warned.get(w, 0) + 1
            f["cells"][DPL, job["eps"]] = (scores(coefs[i], Xte, yte) if entry["ok"]
                                           else entry["error"])
        (folder / f"{name}-{f['seed']}.npz").unlink()
    return dict(versions={k: report[k] for k in ("diffprivlib", "sklearn", "numpy", "python")},
                warnings=warned, seconds=seconds, fits=len(jobs))


# ------------------------------------------------------------------------------- summary


def summarise(fits: list[dict], label: str, eps: float):
    """(mean log-loss, se, mean accuracy, se, per-seed log-losses) or (failed seeds, message)."""
    vals = [f["cells"].get((label, eps)) for f in fits]
    bad = [(f["seed"], v) for f, v in zip(fits, vals) if not isinstance(v, tuple)]
    if bad:
        return bad
    a = np.array(vals)
    k = len(a)
    se = a.std(axis=0, ddof=1) / math.sqrt(k) if k > 1 else np.full(2, np.nan)
    return dict(ll=a[:, 0].mean(), ll_se=se[0], acc=a[:, 1].mean(), acc_se=se[1],
                ll_seeds=a[:, 0])


def fmt_pm(mean, se, digits):
    return f"{mean:.{digits}f} ± " + ("n/a" if math.isnan(se) else f"{se:.{digits}f}")


def table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if j == 0 else c.rjust(w)  # noqa: E731
                               for j, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), "  ".join("-" * w for w in widths),
                      *(line(r) for r in rows)])


def report_dataset(name, fits, extra, markdown, skipped_dpl) -> None:
    title, p, n = DATASETS[name]
    f0 = fits[0]
    h = "### " if markdown else "== "
    print(f"\n{h}{name}: {title}\n")
    print(f"n = {n} ({f0['n_train']} train / {f0['n_test']} test), {p} covariates, design "
          f"d = {f0['d']} (intercept column included), {len(fits)} seeds; lambda = "
          f"default_lambda({f0['n_train']}, eps): "
          + ", ".join(f"{lam:.3g} at eps={eps:g}" for eps, lam in f0["lam"].items()) + ".\n")
    header = ["method"] + [f"eps = {eps:g}" for eps in EPSILONS]
    for what, key, digits in (("test log-loss", "ll", 4), ("test accuracy", "acc", 3)):
        rows = []
        for label in ROWS:
            row = [label]
            for eps in EPSILONS:
                if label == DPL and skipped_dpl:
                    row.append("skipped")
                    continue
                s = summarise(fits, label, eps)
                row.append(f"fail ({len(s)}/{len(fits)} seeds)" if isinstance(s, list)
                           else fmt_pm(s[key], s[key + "_se"], digits))
            rows.append(row)
        print(f"{'**' if markdown else ''}{what}{'**' if markdown else ''} "
              "(mean ± se over seeds)\n")
        print(table(header, rows, markdown))
        print()
    notes = []
    for label in ROWS:
        for eps in EPSILONS:
            s = None if (label == DPL and skipped_dpl) else summarise(fits, label, eps)
            if isinstance(s, list):
                notes.append(f"{label} at eps={eps:g} failed for seeds "
                             f"{[seed for seed, _ in s]}: {s[0][1].splitlines()[0][:300]}")
    per_fit = {m: sum(f["seconds"][m] for f in fits) / (len(fits) * len(EPSILONS))
               for m in METHODS}
    timing = ", ".join(f"{m} {t:.2f}" for m, t in per_fit.items())
    if extra:
        timing += f", diffprivlib {extra['seconds'] / extra['fits']:.2f}"
        for w, count in sorted(extra["warnings"].items()):
            notes.append(f"diffprivlib warned in {count} of {extra['fits']} fits: {w}")
    notes.append(f"mean seconds per fit (one thread): {timing}")
    for note in notes:
        print(f"- {note}" if markdown else f"  * {note}")


def targets(results: dict, skipped_dpl: bool, markdown: bool) -> None:
    h = "### " if markdown else "== "
    print(f"\n{h}targets\n")
    bullet = "- " if markdown else "  "

    def compare(name, eps, better, worse):
        fits = results[name]
        a, b = summarise(fits, better, eps), summarise(fits, worse, eps)
        where = f"{name} eps={eps:g}"
        if isinstance(a, list) or isinstance(b, list):
            failed = [m for m, s in ((better, a), (worse, b)) if isinstance(s, list)]
            return False, f"{where}: {' and '.join(failed)} failed in some seeds FAIL"
        diff = a["ll_seeds"] - b["ll_seeds"]
        se = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        ok = a["ll"] < b["ll"]
        return ok, (f"{where}: {a['ll']:.4f} vs {b['ll']:.4f} (difference {diff.mean():+.4f} ± "
                    f"{se:.4f} paired se) {'PASS' if ok else 'FAIL'}")

    def verdict(title, cells, missing):
        if not cells:
            print(f"{bullet}{title}: not checked ({missing})")
            return
        checks = [compare(*c) for c in cells]
        passed = sum(ok for ok, _ in checks)
        print(f"{bullet}{title}: {'PASS' if passed == len(checks) else 'FAIL'} "
              f"({passed}/{len(checks)} cells)")
        for _, line in checks:
            print(f"    {'- ' if markdown else ''}{line}")

    big = [name for name in results if DATASETS[name][1] >= 50]
    verdict("(a) gaussian objective < objective (pure eps) in mean test log-loss, d >= 50, "
            "eps >= 0.3",
            [(name, eps, "gaussian objective", "objective (pure eps)")
             for name in big for eps in EPSILONS if eps >= 0.3],
            "no data set with d >= 50 was run")
    verdict("(b) gaussian objective < diffprivlib in mean test log-loss, every cell",
            [] if skipped_dpl else [(name, eps, "gaussian objective", DPL)
                                    for name in results for eps in EPSILONS],
            "--no-diffprivlib")


# ---------------------------------------------------------------------------------- main


TUNE_M, TUNE_EPS = 10, 1.0
TUNE_LAMBDAS = tuple(float(v) for v in np.logspace(-4, 0, TUNE_M))


def tune_one(rep):
    """One tuning replication: both selections on the same shuffled train/test split."""
    import pandas as pd

    from privatelr import dplr_tune

    Z, y = real_data_covariates("fair")
    perm = np.random.default_rng(rep).permutation(len(y))
    k = int(round(TRAIN_SHARE * len(y)))
    cols = [f"x{j}" for j in range(Z.shape[1])]
    train = pd.DataFrame(Z[perm[:k]], columns=cols).assign(y=y[perm[:k]])
    Xte = np.c_[np.ones(len(y) - k), Z[perm[k:]]]
    out = {}
    for selection in ("split", "random_stopping"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fit = dplr_tune("y ~ .", train, lambdas=TUNE_LAMBDAS, eps=TUNE_EPS,
                            selection=selection, random_state=rep)
        out[selection] = scores(np.asarray(fit.coef), Xte, y[perm[k:]])
    return out


def tuning_report(res: list, seconds: float, markdown: bool) -> None:
    reps = len(res)
    ll = {s: np.array([r[s][0] for r in res]) for s in ("split", "random_stopping")}
    acc = {s: np.array([r[s][1] for r in res]) for s in ("split", "random_stopping")}
    wins = float(np.mean(ll["random_stopping"] < ll["split"]))
    h = "### " if markdown else "== "
    print(f"\n{h}tuning: random stopping vs DPpack's split (fair, m = {TUNE_M}, eps = "
          f"{TUNE_EPS:g}, {reps} replications, {seconds:.0f} s)\n")
    rows = [[s, fmt_pm(ll[s].mean(), ll[s].std(ddof=1) / math.sqrt(reps), 4),
             fmt_pm(acc[s].mean(), acc[s].std(ddof=1) / math.sqrt(reps), 3)]
            for s in ("split", "random_stopping")]
    print(table(["selection", "test log-loss", "test accuracy"], rows, markdown))
    verdict = "PASS" if wins >= 0.8 else "FAIL"
    print(f"\n  (c) random stopping has the lower test log-loss in {100 * wins:.1f}% of "
          f"{reps} replications (target >= 80%): {verdict}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-diffprivlib", action="store_true")
    ap.add_argument("--tuning-reps", type=int, default=200)
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help="comma list of " + ", ".join(DATASETS))
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.datasets.split(",") if s.strip()]
    unknown = [s for s in names if s not in DATASETS]
    if unknown or not names:
        ap.error(f"unknown data set(s) {unknown}; choose from {', '.join(DATASETS)}")
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    command = shlex.join(["python", *(sys.argv if argv is None else [sys.argv[0], *argv])])
    load_start = os.getloadavg()
    start = time.time()
    py = None if args.no_diffprivlib else diffprivlib_python()
    results, extras = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench_utility_") as tmp, \
            Pool(2, initializer=single_threaded) as pool:
        for name in names:
            t = time.time()
            jobs = [(name, seed, None if py is None else tmp) for seed in range(args.seeds)]
            results[name] = pool.map(one, jobs)
            if py is not None:
                extras[name] = run_diffprivlib(py, Path(tmp), name, results[name])
            print(f"{name}: {time.time() - t:.1f} s", file=sys.stderr, flush=True)
        if args.tuning_reps > 0:
            tune_start = time.time()
            tuning = pool.map(tune_one, range(args.tuning_reps))
            tune_wall = time.time() - tune_start
    wall = time.time() - start
    load_end = os.getloadavg()

    h = "## " if args.markdown else ""
    print(f"{h}Utility of private logistic regression: test log-loss and accuracy\n")
    dpl = ("skipped (--no-diffprivlib)" if py is None else
           "diffprivlib {diffprivlib} with scikit-learn {sklearn}, numpy {numpy}, Python {python}"
           .format(**next(iter(extras.values()))["versions"]))
    info = [f"command: `{command}`" if args.markdown else f"command: {command}",
            f"seeds: {args.seeds} (0..{args.seeds - 1}); eps in {list(EPSILONS)}, delta = "
            f"{DELTA:g} (gaussian objective, AMP); 70/30 train/test split per seed",
            f"privatelr {privatelr.__version__} (Python {sys.version.split()[0]}, numpy "
            f"{np.__version__}); {dpl}",
            f"wall time: {wall:.1f} s; 2 worker processes on {os.cpu_count()} cores",
            "load average (1, 5, 15 min) at start: "
            + ", ".join(f"{v:.2f}" for v in load_start) + "; at end: "
            + ", ".join(f"{v:.2f}" for v in load_end)]
    for line in info:
        print(f"- {line}" if args.markdown else line)
    for name in names:
        report_dataset(name, results[name], extras.get(name), args.markdown, py is None)
    targets(results, py is None, args.markdown)
    if args.tuning_reps > 0:
        tuning_report(tuning, tune_wall, args.markdown)


if __name__ == "__main__":
    main()
