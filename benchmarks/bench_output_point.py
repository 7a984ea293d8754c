"""Output perturbation's intervals: the term their law leaves out, and what releasing it costs.

Output perturbation releases :math:`\\tilde w = w_\\lambda + \\eta`; its information
:math:`\\hat H` is released at :math:`\\tilde w`, so the bias correction
:math:`\\lambda\\hat H^{-1}\\tilde w` meets the output noise a second time through the evaluation
point: to first order the estimate's noise is :math:`M\\eta` with
:math:`M = I + \\lambda H^{-1} - \\lambda H^{-1}K`, :math:`K = T[v]` the derivative of the
information along :math:`v = H^{-1}w_\\lambda` (``T`` the loss's third derivative). The law
before the derivative was released (still the law of a release without it, e.g. an older saved
file) uses :math:`I + \\lambda H^{-1}`; this script is the evidence that led to releasing ``K``
(privatelr.inference now resums the correction with it). It computes, exactly and
without replications, on the health-records design (n rows, ε = 1, dplr's defaults for output
perturbation with inference):

* ``sd true / stated``: per coefficient, the noise-plus-sampling standard deviation with ``K``
  against the stated one (the under-width that makes the cell cover 0.93-0.94);
* ``kappa now``: the validity index of the current release (the information's noise only);
* ``kappa with K``: the index if half of the inference share released ``K`` privately instead
  (sensitivity :math:`2c_3AB^3\\|v\\|/n`, :math:`c_3 = 1/(6\\sqrt3)`): the noise of the released
  ``K`` enters the stated variance at first order. ``v`` must then come from released values,
  :math:`\\hat H^{-1}\\tilde w`, whose norm the output noise inflates: the column uses its RMS
  :math:`(\\|H^{-1}w_\\lambda\\|^2 + (d+1)s^2\\operatorname{tr}H^{-2})^{1/2}`; the index with
  the exact :math:`\\|v\\|` (not available to a release) is given in brackets.

    python benchmarks/bench_output_point.py
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from privatelr import dplr, erm, public_bounds
from privatelr.calibration import calibrate, default_lambda_inference_output
from privatelr.datasets import HEALTH_LEVELS, HEALTH_RANGES, make_health
from privatelr.inference import DEFAULT_SHARE, information_sensitivity
from privatelr.inference.estimate import law_of
from privatelr.losses import LogisticLoss

FORMULA = "y ~ age + bmi + sex + smoker + region"
C3 = LogisticLoss.third_derivative_bound


def one(n: int, eps: float, seed: int = 7) -> dict:
    df = make_health(n, np.random.default_rng(seed))
    pb = public_bounds(HEALTH_RANGES, levels=HEALTH_LEVELS)
    public = dplr(FORMULA, df.head(50), bounds=pb, eps=0)          # the public map and B only
    spec, B = public.spec, public.calibration.data_norm
    X = np.ascontiguousarray(spec.rows(df, response=False).X, dtype=np.float64)
    y = df.y.to_numpy()
    d = X.shape[1]
    eps_fit, eps_info = eps * (1 - DEFAULT_SHARE), eps * DEFAULT_SHARE
    lam = default_lambda_inference_output(n, eps_fit, data_norm=B)
    cal = calibrate(n, d, eps=eps_fit, lambda_=lam, method="output", data_norm=B)
    w = erm.fit(X, y, lambda_=lam, eps=0.0, data_norm=B).coef   # w_lambda, exact
    p = expit(X @ w)
    a = p * (1 - p)
    H = (X * a[:, None]).T @ X / n
    Hi = np.linalg.inv(H)
    v = Hi @ w
    K = (X * (a * (1 - 2 * p) * (X @ v))[:, None]).T @ X / n
    C = (d + 1) * cal.noise_scale ** 2                 # per-coordinate variance of eta
    eye = np.eye(d)
    Ms = eye + lam * Hi
    Mt = Ms - lam * Hi @ K
    Vs = C * Ms @ Ms.T + Hi / n
    Vt = C * Mt @ Mt.T + Hi / n
    names = list(spec.design_columns)
    s_H = information_sensitivity(n, 0.25, 1.0, B) / eps_info
    kappa_now = law_of(H, w, cal, s_H, names).kappa
    # half the share for H, half for K: H's index doubles; K's noise adds r_K per coefficient
    kappa_H = law_of(H, w, cal, 2 * s_H, names).noise
    v_rms = math.sqrt(float(v @ v) + C * float(np.trace(Hi @ Hi)))

    def kappa_with_k(v_norm: float) -> float:
        s_K = 2 * C3 * B ** 3 * v_norm / n / (eps_info / 2)
        kvar = (d * (d + 1) // 2 + 1) * s_K ** 2
        r = []
        for j in range(d):
            u = eye[j]
            aj = Hi @ u
            cj = C * (Mt.T @ u)
            V = float(u @ Vt @ u)
            rK = lam * math.sqrt(kvar) * float(np.linalg.norm(np.outer(aj, cj) +
                                                              np.outer(cj, aj))) / V
            r.append(math.hypot(kappa_H.relative_sd(u), rK))
        return max(r) / 2

    D = spec.preprocess.design_matrix(d, True)         # fitted scale -> data units
    data = np.sqrt(np.diag(D @ Vt @ D.T) / np.diag(D @ Vs @ D.T))
    return dict(n=n, ratio=data, names=names,
                correction=float(np.linalg.norm(lam * v) / np.linalg.norm(w)),
                kappa_now=kappa_now, kappa_K=kappa_with_k(v_rms),
                kappa_K_exact=kappa_with_k(float(np.linalg.norm(v))))


def main() -> None:
    names = one(5_000, 1.0)["names"]
    print(f"| n | correction / estimate | sd true / stated ({', '.join(names)}; data units) "
          "| kappa now | kappa with K released [exact v] |")
    print("|---|---|---|---|---|")
    for n in (5_000, 20_000, 50_000, 100_000):
        o = one(n, 1.0)
        ratios = " ".join(f"{x:.3f}" for x in o["ratio"])
        print(f"| {n:,} | {o['correction']:.2f} | {ratios} | {o['kappa_now']:.3f} | "
              f"{o['kappa_K']:.3f} [{o['kappa_K_exact']:.3f}] |")


if __name__ == "__main__":
    main()
