"""Black-box privacy audits of every mechanism, with deliberately broken variants.

For each audit case the script runs :func:`privatelr.audit` on the mechanism as shipped and on
its broken variants (noise scale divided by 10; no noise at all), prints a markdown table
(mechanism, claimed ε, audited lower bound, trials, the broken variants' bounds) and appends it
to ``benchmarks/RESULTS.md``. A correct mechanism must stay below its claim; a broken one must be
flagged (bound above the claim). The bounds hold with 95% confidence.

Usage::

    python benchmarks/audit_all.py             # full settings (a few minutes on 2 cores)
    python benchmarks/audit_all.py --quick     # the test-suite settings, seconds
    python benchmarks/audit_all.py --only huber --no-write

Adding a row: append an :class:`AuditCase` to ``CASES`` (or build one in a function listed
there). ``mechanism(data, rng)`` returns the released output as an array and draws all its
randomness from ``rng``; ``broken`` maps a label ("scale/10", "no noise") to a mechanism with the
same signature. For mechanisms built on :func:`privatelr.erm.fit` the helper
:func:`erm_noise_factor` wraps any mechanism so that erm's noise is drawn at ``scale / factor``
(``factor=None``: no noise), without touching the library. Neighbours should be worst-case-ish:
tiny ``n``, one record moved to the opposite side of the ball (``x -> -x``, for a margin loss the
same as flipping its label).
"""

from __future__ import annotations

import argparse
import importlib
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable
from unittest import mock

import numpy as np

from privatelr import audit, erm, mechanisms

Mechanism = Callable[[Any, np.random.Generator], Any]


@dataclass
class AuditCase:
    """One row of the table."""

    name: str
    eps: float
    mechanism: Mechanism
    D: Any
    D_prime: Any
    trials: int                       # full settings, per neighbour
    quick_trials: int                 # test-suite settings
    broken: dict = field(default_factory=dict)     # label -> mechanism
    broken_trials: dict = field(default_factory=dict)  # label -> (full, quick)
    delta: float = 0.0
    statistic: Callable | None = None
    note: str = ""


def erm_noise_factor(mechanism: Mechanism, factor: float | None) -> Mechanism:
    """``mechanism`` with erm's noise drawn at ``scale / factor`` (None: no noise)."""
    real = mechanisms.sphere_gamma_noise

    def noise(d, scale, rng):
        return real(d, 0.0 if factor is None else scale / factor, rng)

    def broken(data, rng):
        with mock.patch.object(erm, "sphere_gamma_noise", noise):
            return mechanism(data, rng)

    return broken


# -- the plain Laplace mechanism: the auditor's teeth --------------------------------------------
def laplace_case() -> AuditCase:
    def laplace(scale):
        return lambda x, rng: x + rng.laplace(scale=scale)

    return AuditCase(
        name="Laplace (1-d, sensitivity 1) — tight", eps=1.0, mechanism=laplace(1.0),
        D=0.0, D_prime=1.0, trials=200_000, quick_trials=20_000,
        broken={"scale/10": laplace(0.1), "no noise": lambda x, rng: np.array([x])},
        broken_trials={"scale/10": (20_000, 2000), "no noise": (2000, 200)},
        note="true eps of the pair = 1")


def exponential_case() -> AuditCase:
    def em(eps):
        def mechanism(u, rng):
            idx = mechanisms.exponential_mechanism(u, eps=eps, sensitivity=1.0, random_state=rng)
            return np.eye(2)[idx]
        return mechanism

    return AuditCase(
        name="exponential mechanism (2 candidates, utilities (0,0) vs (1,-1))", eps=1.0,
        mechanism=em(1.0), D=np.zeros(2), D_prime=np.array([1.0, -1.0]),
        trials=100_000, quick_trials=2000,
        broken={"scale/10": em(10.0), "no noise": em(float("inf"))},
        broken_trials={"scale/10": (20_000, 2000), "no noise": (2000, 200)},
        note="true eps of the pair = log((1+e)/2) = 0.62; broken = run at 10*eps / argmax")


# -- the ERM engine ---------------------------------------------------------------------------------
_X = np.array([[1.0], [0.5], [-0.5], [0.3], [-0.8]])
_Y = np.array([1, 1, 0, 0, 1])
_XP = _X.copy()
_XP[0] = -_X[0]


def erm_case(name: str, note: str, **kwargs) -> AuditCase:
    def mechanism(data, rng):
        return erm.fit(data[0], data[1], random_state=rng, **kwargs).coef

    return AuditCase(
        name=name, eps=kwargs["eps"], mechanism=mechanism, D=(_X, _Y), D_prime=(_XP, _Y),
        trials=20_000, quick_trials=1000,
        broken={"scale/10": erm_noise_factor(mechanism, 10.0),
                "no noise": erm_noise_factor(mechanism, None)},
        broken_trials={"scale/10": (10_000, 1500), "no noise": (2000, 100)},
        note=note)


def erm_cases() -> list[AuditCase]:
    common = "n=5, d=1, record 0 moved x -> -x"
    return [
        erm_case("erm objective perturbation, logistic (eps' > 0 branch)",
                 f"{common}, lambda=1; loss of the pair eps'/2 = 0.45", lambda_=1.0, eps=1.0),
        erm_case("erm objective perturbation, logistic (adjusted-lambda branch)",
                 f"{common}, lambda=0.01 -> lambda*; loss of the pair eps/4 = 0.25",
                 lambda_=0.01, eps=1.0),
        erm_case("erm output perturbation, logistic",
                 f"{common}, lambda=1; |w*(D) - w*(D')| = 0.18 vs noise scale 0.4: loss 0.45",
                 lambda_=1.0, eps=1.0, method="output"),
        erm_case("erm objective perturbation, Huber SVM (h=0.5)",
                 f"{common}, lambda=1; loss of the pair up to eps' = 0.64",
                 lambda_=1.0, eps=1.0, loss="huber"),
    ]


# -- the front ends ---------------------------------------------------------------------------------
def _frames(p: int):
    """n = 5 rows with p covariates in the unit ball; D' moves record 0 to -x and flips its label."""
    import pandas as pd

    base = np.array([[0.9, 0.1, -0.2, 0.3], [0.5, -0.4, 0.2, 0.1], [-0.5, 0.3, 0.1, -0.6],
                     [0.3, 0.2, -0.5, 0.4], [-0.8, -0.1, 0.3, 0.2]])[:, :p]
    base /= np.maximum(1.0, np.linalg.norm(base, axis=1, keepdims=True))
    cols = [f"x{j + 1}" for j in range(p)]
    D = pd.DataFrame(base, columns=cols).assign(y=[1, 1, 0, 0, 1])
    Dp = D.copy()
    Dp.loc[0, cols] = -base[0]
    Dp.loc[0, "y"] = 0
    return D, Dp, " + ".join(cols)


def dplr_case(name: str, note: str, p: int = 1, quick_trials: int = 400, **kwargs) -> AuditCase:
    from privatelr import dplr

    D, Dp, rhs = _frames(p)

    def mechanism(data, rng):
        return dplr(f"y ~ {rhs}", data, random_state=rng, **kwargs).coefficients.to_numpy()

    return AuditCase(
        name=name, eps=kwargs["eps"], mechanism=mechanism, D=D, D_prime=Dp,
        trials=4000, quick_trials=quick_trials,
        broken={"scale/10": erm_noise_factor(mechanism, 10.0),
                "no noise": erm_noise_factor(mechanism, None)},
        broken_trials={"scale/10": (3000, 600), "no noise": (1000, 100)}, note=note)


def dplr_cases() -> list[AuditCase]:
    return [
        dplr_case("dplr default mode, intercept-aware bound B = sqrt(2)",
                  "n=5, y ~ x1, record 0 moved x -> -x with its label flipped; lambda=1",
                  lambda_=1.0, eps=1.0),
        dplr_case("dplr with random projection (4 covariates -> 2)",
                  "n=5, 4 covariates projected to 2 (projection drawn inside the mechanism, "
                  "projected rows clipped into the unit ball), record 0 moved x -> -x with its "
                  "label flipped; lambda=1",
                  p=4, lambda_=1.0, eps=1.0, rp_dim=2, clip=True),
    ]


def walr_case() -> AuditCase:
    from privatelr import noisy_dot_product

    walr_module = importlib.import_module("privatelr.label_dp")  # the WALR module
    X = np.array([[1.0, 0.9], [1.0, 0.5], [1.0, 0.1], [1.0, 0.3], [1.0, 0.8]])
    y = np.array([1, 1, 0, 0, 1])
    yp = y.copy()
    yp[0] = 0  # label neighbours: the features are public, one label changes

    def release(sigma_factor):
        def mechanism(labels, rng):
            if sigma_factor == 1.0:
                return noisy_dot_product(X, labels, eps=1.0, delta=1e-5, random_state=rng).value
            real = walr_module.gaussian_sigma

            def sigma(*a, **k):
                return 0.0 if sigma_factor is None else real(*a, **k) / sigma_factor

            with mock.patch.object(walr_module, "gaussian_sigma", sigma):
                return noisy_dot_product(X, labels, eps=1.0, delta=1e-5, random_state=rng).value
        return mechanism

    return AuditCase(
        name="WALR release (analytic Gaussian, label neighbours)", eps=1.0, delta=1e-5,
        mechanism=release(1.0), D=y, D_prime=yp, trials=100_000, quick_trials=4000,
        broken={"scale/10": release(10.0), "no noise": release(None)},
        broken_trials={"scale/10": (10_000, 1000), "no noise": (1000, 100)},
        note="(eps, delta) = (1, 1e-5); the Gaussian pair is tight up to delta")


def tuning_case() -> AuditCase:
    """The selection step of tune_classification_model, audited through the real function.

    The candidates are DPpack-style models whose fit is a no-op and whose prediction is a fixed
    class (all 1 / all 0), so the only randomness is tuning's own exponential mechanism and a
    changed validation label moves the two error counts in opposite directions (the worst
    case: the probability of a choice changes by up to e^eps).
    """
    from privatelr import LogisticRegressionDP, tune_classification_model

    tuning = importlib.import_module("privatelr.tuning")

    class Fixed(LogisticRegressionDP):
        def __init__(self, label):
            super().__init__(eps=1.0, gamma=1.0)
            self.label = label

        def fit(self, X, y, *args, **kwargs):
            return self

        def predict(self, X, add_bias=False, raw_value=False):
            return np.full(len(X), self.label)

    X = np.linspace(0.1, 0.9, 9)[:, None]
    y = np.array([1, 0, 1, 0, 1, 1, 1, 0, 0])
    yp = y.copy()
    yp[5] = 0  # a validation row (rows 2, 5, 8 validate for m = 2) changes its label

    def run(eps_factor):
        def select(labels, rng):
            chosen = tune_classification_model([Fixed(1), Fixed(0)], X, labels, [1.0], [0.0],
                                               random_state=rng)
            return np.array([chosen.label == 1, chosen.label == 0], float)

        if eps_factor == 1.0:
            return select
        real = tuning.exponential_mechanism

        def em(u, eps, sensitivity, **k):
            return real(u, eps * eps_factor, sensitivity, **k)

        def broken(labels, rng):
            with mock.patch.object(tuning, "exponential_mechanism", em):
                return select(labels, rng)
        return broken

    return AuditCase(
        name="tune_classification_model selection (fixed candidates, validation-label neighbours)",
        eps=1.0, mechanism=run(1.0), D=y, D_prime=yp, trials=40_000, quick_trials=4000,
        broken={"scale/10": run(10.0), "no noise": run(float("inf"))},
        broken_trials={"scale/10": (20_000, 2000), "no noise": (2000, 300)},
        note="validation errors (A, B) = (1, 2) vs (2, 1): the best candidate flips; true loss "
             "of the pair = eps/2 = 0.5; broken = selection at 10*eps (loss 5) / argmax")


CASES: list[Callable[[], list[AuditCase] | AuditCase]] = [laplace_case, exponential_case,
                                                          erm_cases, dplr_cases, walr_case,
                                                          tuning_case]


def _all_cases() -> list[AuditCase]:
    out: list[AuditCase] = []
    for make in CASES:
        made = make()
        out.extend(made if isinstance(made, list) else [made])
    return out


def run_case(case: AuditCase, quick: bool, seed: int) -> dict:
    trials = case.quick_trials if quick else case.trials
    t0 = time.perf_counter()
    res = audit(case.mechanism, case.D, case.D_prime, eps_claimed=case.eps,
                delta_claimed=case.delta, trials=trials, statistic=case.statistic,
                random_state=seed)
    row = {"name": case.name, "eps": case.eps, "trials": trials, "result": res, "broken": {}}
    for label, mech in case.broken.items():
        bt = case.broken_trials.get(label, (trials, trials))[1 if quick else 0]
        bres = audit(mech, case.D, case.D_prime, eps_claimed=case.eps, delta_claimed=case.delta,
                     trials=bt, statistic=case.statistic, random_state=seed + 1)
        row["broken"][label] = (bres, bt)
    row["seconds"] = time.perf_counter() - t0
    row["ok"] = res.passed and all(not b.passed for b, _ in row["broken"].values())
    row["note"] = case.note
    return row


def table(rows: list[dict]) -> str:
    labels = ["scale/10", "no noise"]
    lines = ["| mechanism | claimed ε | audited lower bound | trials | "
             + " | ".join(f"{lab}: bound (trials)" for lab in labels) + " | verdict | time (s) |",
             "|---|---:|---:|---:|" + "---:|" * len(labels) + "---|---:|"]
    for r in rows:
        res = r["result"]
        cells = []
        for lab in labels:
            if lab in r["broken"]:
                b, bt = r["broken"][lab]
                cells.append(f"{b.eps_lower:.2f} ({bt}){'' if not b.passed else ' NOT FLAGGED'}")
            else:
                cells.append("—")
        verdict = "ok" if r["ok"] else ("CLAIM REFUTED" if not res.passed else "auditor blind")
        lines.append(f"| {r['name']} | {r['eps']:g} | {res.eps_lower:.3f} | {r['trials']} | "
                     + " | ".join(cells) + f" | {verdict} | {r['seconds']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="test-suite settings")
    ap.add_argument("--only", default=None, help="run only cases whose name contains this")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--no-write", action="store_true", help="do not append to RESULTS.md")
    args = ap.parse_args()

    cases = [c for c in _all_cases() if args.only is None or args.only.lower() in c.name.lower()]
    rows = []
    for case in cases:
        row = run_case(case, args.quick, args.seed)
        rows.append(row)
        print(f"{case.name}: eps_lower={row['result'].eps_lower:.3f} "
              + " ".join(f"{k}={v[0].eps_lower:.2f}" for k, v in row["broken"].items())
              + f" ({row['seconds']:.1f}s)", flush=True)
    md = table(rows)
    notes = "\n".join(f"- {r['name']}: {r['note']}" for r in rows if r["note"])
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"\n## Privacy audit (benchmarks/audit_all.py{' --quick' if args.quick else ''}, "
               f"{stamp})\n\n"
               "Black-box lower bounds on ε (Clopper–Pearson, 95% confidence, half the trials choose "
               "the event, half count it; trials are per neighbouring data set). A correct "
               "mechanism must stay below its claim; the broken variants (noise scale / 10, no "
               "noise) must be flagged above it. Objective perturbation's bounds sit well below "
               "the claim because its analysis is worst case over all data sets and outputs.\n\n"
               f"{md}\n\n{notes}\n")
    print(section)
    if not args.no_write:
        out = Path(__file__).with_name("RESULTS.md")
        with out.open("a", encoding="utf-8") as fh:
            fh.write(section)
        print(f"appended to {out}")


if __name__ == "__main__":
    main()
