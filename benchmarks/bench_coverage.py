"""Coverage of privatelr's private 95% confidence intervals of the TRUE coefficients (issues 16, 28).

Designs (every one but ``ball`` a DataFrame fitted through ``dplr`` with public codebook bounds,
``public_bounds(...)``, the centred map; coverage is of the true coefficients in the data's own
units, through the public map):

* ``ball``       -- issue 16's design: 3 covariates uniform in the unit ball, ``erm.fit`` with
  ``data_norm = sqrt(2)``, w0 = (-0.5, 1, -1, 0.5);
* ``health``     -- :func:`privatelr.datasets.make_health` (age, bmi, sex, smoker, 4-level region);
* ``imbalanced`` -- 5 % positives: dose U(0, 10), a clipped normal, a binary column;
* ``correlated`` -- 4 exchangeable normal covariates with correlation 0.8, clipped to [-3, 3];
* ``skewed``     -- two binary (10 %, 50 %) and two skewed (log-normal, exponential) covariates;
* ``large``      -- large effects (2.5, -2, 1.5 per half-range: linear predictors up to 6.5);
* ``weights``    -- aggregated binomial counts as observation weights (a unit with ``a`` trials
  and ``s`` successes is two rows of weights ``s`` and ``a - s``, ``weights_bound = 5``: glm's
  binomial weights, so its Wald variance is the right one);
* ``factor``     -- a declared 5-level factor (one level at 2 %) and a numeric covariate.

Methods: ``objective``, ``output``, ``gaussian`` and ``amp`` (delta = 1e-6) through ``dplr(...,
inference=True)`` with every default, and ``walr`` (the label-DP release, delta = 1e-6, of the
design with every numeric column mapped to [0, 1] by its public range; ``walr_fit`` with its
default lambda 0).

Per replication the script records, for every method, whether intervals exist at all (the
information matrix released positive definite, the bias correction smaller than the estimate,
WALR's unpenalised estimate exists, output perturbation's released information clears its
noise by ``OUTPUT_MARGIN_MIN`` — applied in place, since it is not a threshold on κ), the
noise index of the refusal rule (κ for the four dplr methods, WALR's largest noise of a row's
linear predictor), which of the 95 % intervals cover the truth, the error in standard errors,
and each width relative to glm's Wald interval on the same rows (``dplr(..., eps=0,
lambda_=0, inference=True)``, ``confint(method="wald")``); the thresholds
of the rule are patched off while the intervals are computed, so the report can apply any rule
to the same replications. Per cell it prints: the refusal rate under the package's rule, the
coverage (min / mean / max over coefficients) of the given intervals, the mean width ratio and
the largest mean error in standard errors; then coverage pooled by noise
index (the evidence for the rule).

Runs are chunked (``--chunk`` replications per file in ``--out``) and resumable: a chunk whose
file exists is not recomputed. ``--report`` only reads the files.

    python benchmarks/bench_coverage.py                      # the grid below, 1000 reps per cell
    python benchmarks/bench_coverage.py --reps 100 --cells main
    python benchmarks/bench_coverage.py --report --markdown  # the tables from the saved runs
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
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

import privatelr.inference.estimate as estimate_module
from privatelr import confint, dplr, erm, noisy_dot_product, public_bounds, walr_fit
from privatelr.calibration import default_lambda_inference, default_lambda_inference_output
from privatelr.inference import DEFAULT_SHARE
from privatelr.datasets import HEALTH_COEFFICIENTS, HEALTH_LEVELS, HEALTH_RANGES, make_health

METHODS = ("objective", "output", "gaussian", "amp", "walr")
DELTA = 1e-6
LEVEL = 0.95
#: status codes of one method in one replication
GIVEN, NOT_PD, BIAS, NO_FIT, MARGIN = 0, 1, 2, 3, 4
STATUS_NAMES = {GIVEN: "given", NOT_PD: "information not PD", BIAS: "correction > estimate",
                NO_FIT: "no estimate", MARGIN: "information within its noise (output)"}

# ---------------------------------------------------------------------------------------------
# designs: (data frame, formula, bounds, truth by name, weights column, weights bound,
#           WALR matrix in [0, 1], its map to the data's units)
# ---------------------------------------------------------------------------------------------


class Design:
    def __init__(self, df, formula, bounds, truth, walr_X, walr_M, weights=None, bound=None,
                 matrix=None):
        self.df, self.formula, self.bounds, self.truth = df, formula, bounds, truth
        self.walr_X, self.walr_M, self.weights, self.bound = walr_X, walr_M, weights, bound
        self.matrix = matrix            # (X, y, data_norm) for the erm.fit design


def _unit_map(columns, ranges, factors):
    """The [0, 1] design of WALR and its map to data units. ``columns``: list of (name, values,
    kind) with kind "num" (mapped by its public range) or "dummy" (0/1 already)."""
    n = len(columns[0][1])
    X = [np.ones(n)]
    k = len(columns) + 1
    M = np.eye(k)
    for j, (name, values, kind) in enumerate(columns, start=1):
        if kind == "num":
            lo, hi = ranges[name]
            X.append((np.asarray(values, float) - lo) / (hi - lo))
            # theta_j * (x - lo)/(hi - lo): per unit theta_j/(hi - lo), intercept -lo theta_j/(hi-lo)
            M[j, j] = 1.0 / (hi - lo)
            M[0, j] = -lo / (hi - lo)
        else:
            X.append(np.asarray(values, float))
    return np.ascontiguousarray(np.column_stack(X)), M


def _draw(eta, rng):
    return (rng.uniform(size=eta.size) < expit(eta)).astype(np.int64)


def d_ball(n, rng):
    p = 3
    z = rng.standard_normal((n, p))
    z /= np.linalg.norm(z, axis=1)[:, None]
    z *= rng.uniform(size=(n, 1)) ** (1.0 / p)
    X = np.c_[np.ones(n), z]
    w0 = np.array([-0.5, 1.0, -1.0, 0.5])
    y = _draw(X @ w0, rng)
    names = ["(Intercept)", "z0", "z1", "z2"]
    cols = [(f"z{j}", z[:, j], "num") for j in range(p)]
    WX, WM = _unit_map(cols, {f"z{j}": (-1.0, 1.0) for j in range(p)}, {})
    return Design(None, None, None, dict(zip(names, w0)), WX, WM,
                  matrix=(X, y, math.sqrt(2.0)))


def d_health(n, rng):
    df = make_health(n, rng)
    pb = public_bounds(HEALTH_RANGES, levels=HEALTH_LEVELS)
    cols = [("age", df.age, "num"), ("bmi", df.bmi, "num"), ("sexM", df.sex == "M", "d"),
            ("smokeryes", df.smoker == "yes", "d")] + \
           [(f"region{r}", df.region == r, "d") for r in ("south", "east", "west")]
    WX, WM = _unit_map(cols, HEALTH_RANGES, {})
    return Design(df, "y ~ age + bmi + sex + smoker + region", pb, dict(HEALTH_COEFFICIENTS),
                  WX, WM)


IMB_TRUTH = {"(Intercept)": -4.1, "dose": 0.15, "z": 0.5, "b": 0.6}


def d_imbalanced(n, rng):
    dose = rng.uniform(0.0, 10.0, n)
    z = np.clip(rng.standard_normal(n), -3.0, 3.0)
    b = (rng.uniform(size=n) < 0.3).astype(float)
    t = IMB_TRUTH
    y = _draw(t["(Intercept)"] + t["dose"] * dose + t["z"] * z + t["b"] * b, rng)
    df = pd.DataFrame({"dose": dose, "z": z, "b": b, "y": y})
    ranges = {"dose": (0.0, 10.0), "z": (-3.0, 3.0), "b": (0.0, 1.0)}
    WX, WM = _unit_map([("dose", dose, "num"), ("z", z, "num"), ("b", b, "num")], ranges, {})
    return Design(df, "y ~ dose + z + b", public_bounds(ranges), dict(IMB_TRUTH), WX, WM)


COR_TRUTH = {"(Intercept)": -0.3, "x1": 0.5, "x2": -0.5, "x3": 0.3, "x4": 0.0}


def d_correlated(n, rng):
    rho = 0.8
    common = rng.standard_normal((n, 1))
    x = np.clip(math.sqrt(rho) * common + math.sqrt(1 - rho) * rng.standard_normal((n, 4)),
                -3.0, 3.0)
    t = COR_TRUTH
    y = _draw(t["(Intercept)"] + x @ np.array([t["x1"], t["x2"], t["x3"], t["x4"]]), rng)
    df = pd.DataFrame({f"x{j + 1}": x[:, j] for j in range(4)}).assign(y=y)
    ranges = {f"x{j + 1}": (-3.0, 3.0) for j in range(4)}
    WX, WM = _unit_map([(f"x{j + 1}", x[:, j], "num") for j in range(4)], ranges, {})
    return Design(df, "y ~ x1 + x2 + x3 + x4", public_bounds(ranges), dict(COR_TRUTH), WX, WM)


SKEW_TRUTH = {"(Intercept)": -1.0, "b1": 0.8, "b2": -0.4, "s1": 0.15, "s2": 0.1}


def d_skewed(n, rng):
    b1 = (rng.uniform(size=n) < 0.1).astype(float)
    b2 = (rng.uniform(size=n) < 0.5).astype(float)
    s1 = np.clip(rng.lognormal(0.0, 1.0, n), 0.0, 20.0)
    s2 = np.clip(rng.exponential(2.0, n), 0.0, 15.0)
    t = SKEW_TRUTH
    y = _draw(t["(Intercept)"] + t["b1"] * b1 + t["b2"] * b2 + t["s1"] * s1 + t["s2"] * s2, rng)
    df = pd.DataFrame({"b1": b1, "b2": b2, "s1": s1, "s2": s2, "y": y})
    ranges = {"b1": (0.0, 1.0), "b2": (0.0, 1.0), "s1": (0.0, 20.0), "s2": (0.0, 15.0)}
    WX, WM = _unit_map([(c, df[c], "num") for c in ("b1", "b2", "s1", "s2")], ranges, {})
    return Design(df, "y ~ b1 + b2 + s1 + s2", public_bounds(ranges), dict(SKEW_TRUTH), WX, WM)


LARGE_TRUTH = {"(Intercept)": 0.5, "u1": 2.5, "u2": -2.0, "u3": 1.5}


def d_large(n, rng):
    u = rng.uniform(-1.0, 1.0, (n, 3))
    t = LARGE_TRUTH
    y = _draw(t["(Intercept)"] + u @ np.array([t["u1"], t["u2"], t["u3"]]), rng)
    df = pd.DataFrame({f"u{j + 1}": u[:, j] for j in range(3)}).assign(y=y)
    ranges = {f"u{j + 1}": (-1.0, 1.0) for j in range(3)}
    WX, WM = _unit_map([(f"u{j + 1}", u[:, j], "num") for j in range(3)], ranges, {})
    return Design(df, "y ~ u1 + u2 + u3", public_bounds(ranges), dict(LARGE_TRUTH), WX, WM)


W_TRUTH = {"(Intercept)": -4.0, "age": 0.05, "bmi": 0.05}
W_BOUND = 5


def d_weights(n, rng):
    """About ``n`` rows: ``n // 2`` units with 1..5 trials each, split into a success row and
    a failure row (the empty one dropped) weighted by their counts."""
    units = n // 2
    age = np.clip(rng.normal(50.0, 15.0, units), 18.0, 90.0)
    bmi = np.clip(rng.normal(27.0, 5.0, units), 15.0, 50.0)
    trials = rng.integers(1, W_BOUND + 1, units)
    t = W_TRUTH
    succ = rng.binomial(trials, expit(t["(Intercept)"] + t["age"] * age + t["bmi"] * bmi))
    df = pd.DataFrame({"age": np.r_[age, age], "bmi": np.r_[bmi, bmi],
                       "y": np.r_[np.ones(units, int), np.zeros(units, int)],
                       "w": np.r_[succ, trials - succ].astype(float)})
    df = df[df.w > 0].reset_index(drop=True)
    ranges = {"age": HEALTH_RANGES["age"], "bmi": HEALTH_RANGES["bmi"]}
    WX, WM = _unit_map([("age", df.age, "num"), ("bmi", df.bmi, "num")], ranges, {})
    return Design(df, "y ~ age + bmi", public_bounds(ranges), dict(W_TRUTH), WX, WM,
                  weights="w", bound=float(W_BOUND))


F_LEVELS = ["a", "b", "c", "d", "e"]
F_PROBS = [0.4, 0.3, 0.2, 0.08, 0.02]
F_TRUTH = {"(Intercept)": -0.5, "x": 1.0, "gb": 0.3, "gc": -0.4, "gd": 0.6, "ge": 1.0}


def d_factor(n, rng):
    g = rng.choice(5, size=n, p=F_PROBS)
    x = rng.uniform(0.0, 1.0, n)
    t = F_TRUTH
    eff = np.array([0.0, t["gb"], t["gc"], t["gd"], t["ge"]])
    y = _draw(t["(Intercept)"] + t["x"] * x + eff[g], rng)
    df = pd.DataFrame({"x": x, "g": pd.Categorical.from_codes(g, F_LEVELS), "y": y})
    pb = public_bounds({"x": (0.0, 1.0)}, levels={"g": F_LEVELS})
    cols = [("x", x, "num")] + [(f"g{lv}", g == i, "d") for i, lv in enumerate(F_LEVELS) if i]
    WX, WM = _unit_map(cols, {"x": (0.0, 1.0)}, {})
    return Design(df, "y ~ x + g", pb, dict(F_TRUTH), WX, WM)


DESIGNS = {"ball": d_ball, "health": d_health, "imbalanced": d_imbalanced,
           "correlated": d_correlated, "skewed": d_skewed, "large": d_large,
           "weights": d_weights, "factor": d_factor}

# ---------------------------------------------------------------------------------------------
# the grid
# ---------------------------------------------------------------------------------------------


def cells(which: str):
    """(design, n, eps, methods) of each cell."""
    out = []
    if which in ("main", "all"):
        out += [("health", 20_000, 1.0, METHODS)]
        out += [(d, 20_000, 1.0, ("objective",)) for d in DESIGNS if d != "health"]
    if which in ("sweep", "all"):
        out += [("health", n, eps, ("objective",)) for n in (5_000, 20_000, 50_000)
                for eps in (0.5, 1.0, 2.0, 4.0) if (n, eps) != (20_000, 1.0)]
    if which in ("walr", "all"):           # WALR over a range of its noise index
        out += [(d, n, eps, ("walr",)) for d in ("health", "imbalanced", "factor")
                for n in (2_000, 5_000) for eps in (0.25, 0.5, 1.0)]
    if which in ("edge", "all"):
        out += [("health", 2_000, 8.0, METHODS), ("imbalanced", 50_000, 1.0, METHODS),
                ("health", 50_000, 0.5, ("output", "gaussian", "amp", "walr")),
                ("health", 50_000, 1.0, ("output",)), ("health", 100_000, 1.0, ("output",))]
    return out


# ---------------------------------------------------------------------------------------------
# one replication
# ---------------------------------------------------------------------------------------------

def _intervals(inf, names, truth):
    """(covered, error / sd, half-width) of every coefficient of an Inference."""
    k = len(names)
    t = np.array([truth[nm] for nm in names])
    hw = np.array([inf.half_width(np.eye(k)[j], LEVEL) for j in range(k)])
    sd = np.sqrt(np.diag(inf.vcov))
    err = inf.estimate - t
    return np.abs(err) <= hw, err / sd, hw


def _status(exc: Exception) -> int:
    msg = str(exc)
    if "not positive definite" in msg:
        return NOT_PD
    if "correction of the ridge bias" in msg:
        return BIAS
    if "times the typical size of its noise" in msg:
        return MARGIN
    return NO_FIT


def one(task):
    design, n, eps, methods, seed = task
    warnings.simplefilter("ignore")
    estimate_module.KAPPA_MAX = math.inf          # every interval; the rule is applied later
    estimate_module.WALR_MAX = math.inf
    rng = np.random.default_rng(seed)
    D = DESIGNS[design](n, rng)
    names = list(D.truth)
    k = len(names)
    nan = np.full(k, np.nan)
    out = {}
    # glm on the same rows (the width reference, and its own coverage)
    try:
        if D.matrix is not None:
            X, y, B = D.matrix
            g = erm.fit(X, y, lambda_=0.0, eps=0.0, data_norm=B, inference=True)
            gci = confint(g).to_numpy()
        else:
            g = dplr(D.formula, D.df, bounds=D.bounds, eps=0, lambda_=0, inference=True,
                     weights=D.weights, weights_bound=D.bound)
            gci = confint(g, method="wald").loc[names].to_numpy()
        gw = gci[:, 1] - gci[:, 0]
        t = np.array([D.truth[nm] for nm in names])
        out["glm"] = (GIVEN, 0.0, (gci[:, 0] <= t) & (t <= gci[:, 1]), nan, np.ones(k))
    except ValueError:
        gw = nan
        out["glm"] = (NO_FIT, np.nan, np.zeros(k, bool), nan, nan)
    for method in methods:
        kw = dict(delta=DELTA) if method in ("gaussian", "amp") else {}
        try:
            if method == "walr":
                rel = noisy_dot_product(D.walr_X, D.matrix[1] if D.matrix is not None else
                                        D.df.y.to_numpy(), eps=eps, delta=DELTA,
                                        weights=None if D.weights is None else
                                        D.df[D.weights].to_numpy(),
                                        weights_bound=D.bound or 1.0, random_state=rng)
                fit = walr_fit(D.walr_X, rel, solver="newton",
                               weights=None if D.weights is None else D.df[D.weights].to_numpy())
                if fit.status != "ok":
                    raise ValueError("no WALR fit")
                inf = estimate_module.for_model(fit).transformed(D.walr_M, names, "data")
            elif D.matrix is not None:
                X, y, B = D.matrix
                # the defaults dplr uses (erm.fit has no default lambda)
                fit_eps = eps * (1.0 - DEFAULT_SHARE)
                lam = (default_lambda_inference_output(n, fit_eps, data_norm=B)
                       if method == "output" else
                       default_lambda_inference(n, fit_eps, data_norm=B))
                fit = erm.fit(X, y, lambda_=lam, eps=eps, data_norm=B, inference=True,
                              method=method, random_state=rng, **kw)
                inf = estimate_module.for_model(fit)
            else:
                m = dplr(D.formula, D.df, bounds=D.bounds, eps=eps, inference=True,
                         method=method, weights=D.weights, weights_bound=D.bound,
                         random_state=rng, **kw)
                inf = estimate_module.for_model(m)
                order = [inf.names.index(nm) for nm in names]
                P = np.eye(k)[order]
                inf = inf.transformed(P, names, "data")
            covered, z, hw = _intervals(inf, names, D.truth)
            out[method] = (GIVEN, float(inf.kappa), covered, z, 2.0 * hw / gw)
        except ValueError as exc:
            out[method] = (_status(exc), np.nan, np.zeros(k, bool), nan, nan)
    return out


# ---------------------------------------------------------------------------------------------
# running and saving
# ---------------------------------------------------------------------------------------------

def _cell_name(design, n, eps, methods):
    """The files' stem: a cell without objective perturbation (the WALR sweep, the edge cells)
    names its methods, so that it never shares files with the sweep's cell of the same
    design, n and eps."""
    tag = "" if "objective" in methods else "_" + "-".join(methods)
    return f"{design}_n{n}_eps{eps:g}{tag}"


def _seeds(base, design, n, eps, reps):
    ss = np.random.SeedSequence([base, list(DESIGNS).index(design), n, int(round(eps * 100))])
    return [int(s) for s in ss.generate_state(reps, dtype=np.uint64)]


def _head() -> str:
    """The commit the runs are measured at (with ``+dirty`` when the package has changes)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "privatelr"], cwd=root,
                               text=True, capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def run_cell(pool, outdir: Path, design, n, eps, methods, reps, chunk, base):
    seeds = _seeds(base, design, n, eps, reps)
    for start in range(0, reps, chunk):
        path = outdir / f"{_cell_name(design, n, eps, methods)}_{start:05d}.npz"
        stop = min(start + chunk, reps)
        if path.exists():
            with np.load(path) as z:
                if set(methods) <= {str(m) for m in z["methods"]} and int(z["reps"]) == stop - start:
                    continue
        t0, load0 = time.time(), os.getloadavg()[0]
        res = pool.map(one, [(design, n, eps, methods, s) for s in seeds[start:stop]],
                       chunksize=max(1, (stop - start) // 20))
        arrays = {}
        for meth in ("glm",) + tuple(methods):
            arrays[f"{meth}_status"] = np.array([r[meth][0] for r in res])
            arrays[f"{meth}_kappa"] = np.array([r[meth][1] for r in res], float)
            arrays[f"{meth}_covered"] = np.array([r[meth][2] for r in res])
            arrays[f"{meth}_z"] = np.array([r[meth][3] for r in res], float)
            arrays[f"{meth}_width"] = np.array([r[meth][4] for r in res], float)
        np.savez_compressed(path, methods=np.array(methods), reps=stop - start, commit=_head(),
                            seconds=time.time() - t0, load=[load0, os.getloadavg()[0]],
                            names=np.array(list(DESIGNS[design](10, np.random.default_rng(0))
                                                .truth)), **arrays)
        print(f"{path.name}: {stop - start} reps in {time.time() - t0:.0f} s, load "
              f"{load0:.1f} -> {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)


def load_cell(outdir: Path, design, n, eps, methods):
    files = sorted(outdir.glob(f"{_cell_name(design, n, eps, methods)}_[0-9][0-9][0-9][0-9][0-9].npz"))
    if not files:
        return None
    parts = [dict(np.load(f)) for f in files]
    methods = [str(m) for m in parts[0]["methods"]]
    for p in parts[1:]:
        methods = [m for m in methods if m in {str(x) for x in p["methods"]}]
    cell = {"names": [str(x) for x in parts[0]["names"]], "methods": methods,
            "seconds": float(sum(p["seconds"] for p in parts)),
            "load": float(np.mean([p["load"] for p in parts])),
            "commits": {str(p["commit"]) if "commit" in p else "unrecorded" for p in parts}}
    for meth in ["glm"] + methods:
        for key in ("status", "kappa", "covered", "z", "width"):
            cell[f"{meth}_{key}"] = np.concatenate([p[f"{meth}_{key}"] for p in parts])
    cell["reps"] = len(cell["glm_status"])
    return cell


# ---------------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------------

def rule_for(method):
    """The package's threshold on the method's noise index: intervals above it are refused."""
    return estimate_module.WALR_MAX if method == "walr" else estimate_module.KAPPA_MAX


def summarise(cell, method, cap):
    st, kap = cell[f"{method}_status"], cell[f"{method}_kappa"]
    cov, width = cell[f"{method}_covered"], cell[f"{method}_width"]
    z = cell[f"{method}_z"]
    given = (st == GIVEN) & (kap <= cap)
    r = dict(reps=len(st), refused=1.0 - given.mean(), given=int(given.sum()))
    if given.sum():
        c = cov[given].mean(0)
        r["cov"] = (c.min(), c.mean(), c.max(), int(c.argmin()))
        r["width"] = float(np.nanmean(width[given]))
        r["bias"] = np.nanmean(z[given], axis=0)
    return r


KAPPA_BINS = (0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, math.inf)
WALR_BINS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 2.0, 4.0, math.inf)


def kappa_table(all_cells, methods, bins):
    """Coverage pooled over cells by noise index: per bin the fits, the coverage over all their
    coefficients, the lowest per-(cell, coefficient) coverage with at least 100 fits, and the
    mean width ratio."""
    rows = []
    for lo, hi in zip(bins[:-1], bins[1:]):
        fits, hits, tot, worst, widths = 0, 0, 0, [], []
        for (design, n, eps, _), cell in all_cells.items():
            for meth in methods:
                if meth not in cell["methods"]:
                    continue
                st, kap = cell[f"{meth}_status"], cell[f"{meth}_kappa"]
                m = (st == GIVEN) & (kap > lo) & (kap <= hi) if lo > 0 else \
                    (st == GIVEN) & (kap <= hi)
                if not m.any():
                    continue
                cov = cell[f"{meth}_covered"][m]
                fits += int(m.sum())
                hits += int(cov.sum())
                tot += cov.size
                widths.append(cell[f"{meth}_width"][m].ravel())
                if m.sum() >= 100:
                    c = cov.mean(0)
                    worst.append((c.min(), f"{design} n={n} eps={eps:g} {meth} "
                                           f"{cell['names'][int(c.argmin())]} ({int(m.sum())})"))
        if fits:
            w = min(worst) if worst else (math.nan, "-")
            rows.append((lo, hi, fits, hits / tot, w[0], w[1],
                         float(np.nanmean(np.concatenate(widths)))))
    return rows


def report(outdir: Path, which: str, markdown: bool, stream=sys.stdout):
    all_cells = {}
    for design, n, eps, methods in cells(which):
        c = load_cell(outdir, design, n, eps, methods)
        if c is not None:
            all_cells[(design, n, eps, methods)] = c
    p = lambda s="": print(s, file=stream)  # noqa: E731
    p(f"KAPPA_MAX = {estimate_module.KAPPA_MAX:g} (the dplr methods' index κ), WALR_MAX = "
      f"{estimate_module.WALR_MAX:g} (WALR's index: the largest privacy noise of a row's linear "
      "predictor); intervals above them are refused, and output perturbation's below "
      f"OUTPUT_MARGIN_MIN = {estimate_module.OUTPUT_MARGIN_MIN:g} (its released information's "
      "smallest eigenvalue over its noise's typical spectral norm)")
    p()
    p("| design | n | eps | method | reps | refused | coverage min / mean / max (worst) | "
      "width / glm | mean error / SE (most biased) | glm coverage min / mean |")
    p("|---|---|---|---|---|---|---|---|---|---|")
    bad = []
    for (design, n, eps, _), cell in all_cells.items():
        g = cell["glm_covered"][cell["glm_status"] == GIVEN].mean(0)
        for meth in cell["methods"]:
            r = summarise(cell, meth, rule_for(meth))
            if "cov" in r:
                c = r["cov"]
                cc = f"{c[0]:.3f} / {c[1]:.3f} / {c[2]:.3f} ({cell['names'][c[3]]})"
                if r["given"] >= 300 and not (0.93 <= c[0] and c[2] <= 0.97):
                    bad.append((design, n, eps, meth))
                j = int(np.nanargmax(np.abs(r["bias"])))
                wd, bs = f"{r['width']:.2f}", f"{r['bias'][j]:+.2f} ({cell['names'][j]})"
            else:
                cc = wd = bs = "—"
            p(f"| {design} | {n:,} | {eps:g} | {meth} | {r['reps']} | {r['refused']:.1%} | "
              f"{cc} | {wd} | {bs} | {g.min():.3f} / {g.mean():.3f} |")
    p()
    tot_s = sum(c["seconds"] for c in all_cells.values())
    p(f"{len(all_cells)} cells; compute {tot_s / 60:.0f} min wall on 2 worker processes (mean "
      f"load average {np.mean([c['load'] for c in all_cells.values()]):.1f}; measured at "
      f"{', '.join(sorted(set().union(*(c['commits'] for c in all_cells.values()))))}); "
      "cells with >= 300 given intervals and a coefficient outside [0.93, 0.97]: "
      f"{bad or 'none'}")
    p()
    for title, meths, bins in (("κ (objective, output, gaussian, amp)",
                                ("objective", "output", "gaussian", "amp"), KAPPA_BINS),
                               ("WALR's largest noise of a row's linear predictor", ("walr",),
                                WALR_BINS)):
        p(f"Coverage pooled by {title}:")
        p()
        p("| index in | fits | coverage (all coefficients) | lowest cell coefficient "
          "(>= 100 fits) | where | width / glm |")
        p("|---|---|---|---|---|---|")
        for lo, hi, fits, cov, worst, where, w in kappa_table(all_cells, meths, bins):
            p(f"| ({lo:g}, {hi:g}] | {fits} | {cov:.3f} | {worst:.3f} | {where} | {w:.2f} |")
        p()
    return all_cells


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=250)
    ap.add_argument("--seed", type=int, default=2028)
    ap.add_argument("--cells", default="all", choices=("main", "sweep", "walr", "edge", "all"))
    ap.add_argument("--out", default=str(Path(__file__).with_name(".coverage_runs")))
    ap.add_argument("--report", action="store_true", help="only report the saved runs")
    ap.add_argument("--markdown", action="store_true", help="append the report to RESULTS.md")
    args = ap.parse_args(argv)
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    start = time.time()
    if not args.report:
        with Pool(2) as pool:
            for design, n, eps, methods in cells(args.cells):
                run_cell(pool, outdir, design, n, eps, methods, args.reps, args.chunk, args.seed)
    if args.markdown:
        import io

        buf = io.StringIO()
        report(outdir, args.cells, True, buf)
        up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        head = [f"## Issue 28: coverage of private intervals of the true coefficients "
                f"(bench_coverage.py, {_dt.date.today()})", "",
                f"`python benchmarks/bench_coverage.py --cells {args.cells} --reps {args.reps}` "
                f"then `--report --markdown`; `uptime`: {up}", ""]
        from common import publish
        publish(head + buf.getvalue().splitlines(), append=True)
    else:
        report(outdir, args.cells, False)
    print(f"total {time.time() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
