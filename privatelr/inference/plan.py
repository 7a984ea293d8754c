r"""A free planner: what an ε budget will buy in intervals, from public inputs only.

:func:`inference_plan` takes what is known before any private row is read — the number of rows,
the formula and the public bounds (or just the number of columns and a norm bound), ε, the share
for inference and the method — and says whether a fit's intervals are likely to be given, and
how wide they will be next to a non-private (glm) fit on the same rows. It reads no data, so it
costs no privacy and may be run as often as wanted.

What it assumes (its only inputs besides the declarations): the columns spread uniformly over
their public ranges and level sets, independently (a synthetic design of public rows drawn with
a fixed seed), and no effects beyond the outcome's prevalence (``prevalence=``, 0.5 by default).
The information matrix is then :math:`H = p(1-p)\,E[xx^\top]` for the mapped rows, and every
quantity the fit would compute from :math:`\hat H` follows: the calibration (λ, ε', the noise
scales) exactly as the fit computes it, the relative noise κ of the standard errors, the chance
that the released :math:`\hat H` is positive definite and κ within the rule (by simulating the
release's noise, 400 draws), and the width of each interval relative to glm's. Real covariates
are usually more concentrated than uniform and effects lower the information, so read the
widths as a guide (usually optimistic by tens of percent) and the availability as a screen.

Examples
--------
>>> from privatelr import inference_plan, public_bounds
>>> pb = public_bounds({"age": (18, 90), "bmi": (15, 50)},
...                    levels={"smoker": ["no", "yes"], "region": ["n", "s", "e", "w"]})
>>> plan = inference_plan(20_000, 1.0, formula="y ~ age + bmi + smoker + region", bounds=pb,
...                       prevalence=0.3)
>>> plan.verdict
'likely'
>>> plan.p_intervals >= 0.95
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int, check_real
from .estimate import Inference, law_of, refusal
from .release import (DEFAULT_SHARE, check_inference, derivative_sensitivity, information_eps,
                      information_sensitivity, split_budget)

__all__ = ["InferencePlan", "inference_plan"]

_DRAWS = 400
_ROWS = 20_000


@dataclass(frozen=True)
class InferencePlan:
    """What :func:`inference_plan` expects of a fit (see :mod:`privatelr.inference.plan`).

    Attributes
    ----------
    n, d : int
        Rows, and design columns (intercept included).
    eps, eps_fit, eps_info : float
        The budget, and its split between the coefficients and the information matrix.
    method : str
    data_norm : float
        The norm bound of the mapped covariates (from the bounds, or as given).
    lambda_ : float
        The default λ the fit would use.
    kappa : float
        The largest relative noise of a standard error at the assumed information (the index
        of the validity rule, :data:`privatelr.inference.KAPPA_MAX`).
    p_intervals : float
        The chance that intervals are given (the released information is positive definite,
        κ ≤ ``KAPPA_MAX`` and, for output perturbation, its smallest eigenvalue clears its
        noise by ``OUTPUT_MARGIN_MIN``: :func:`privatelr.inference.estimate.refusal`).
    width_ratio : pandas.Series
        Per coefficient (data units), the expected width of the private 95% interval over glm's.
    verdict : {"likely", "possible", "unlikely"}
    """

    n: int
    d: int
    eps: float
    eps_fit: float
    eps_info: float
    method: str
    data_norm: float
    lambda_: float
    kappa: float
    p_intervals: float
    width_ratio: Any
    verdict: str
    prevalence: float

    def __str__(self) -> str:
        lines = [f"Inference plan: n = {self.n}, {self.d} coefficients, eps = {self.eps:g} "
                 f"({self.eps_fit:g} for the coefficients, {self.eps_info:g} for the "
                 f"information), method {self.method!r}",
                 f" data_norm {self.data_norm:.6g}, default lambda {self.lambda_:.3g}, assumed "
                 f"prevalence {self.prevalence:g}",
                 f" Intervals {self.verdict}: given in {100 * self.p_intervals:.0f}% of fits, "
                 f"kappa {self.kappa:.2f}",
                 " Width of the private 95% interval / glm's (data units):"]
        for name, r in self.width_ratio.items():
            lines.append(f"   {name}: {r:.2f}")
        lines.append(" Assumes columns uniform over their public ranges and no effects beyond "
                     "the prevalence: a guide, not a promise (privatelr.inference.plan).")
        return "\n".join(lines)

    __repr__ = __str__


def _design(n_rows: int, formula, bounds, d, data_norm, rng):
    """(public synthetic design on the fitted scale, M to data units or None, names,
    data_norm, intercept)."""
    import pandas as pd

    if formula is None:
        if d is None or data_norm is None:
            raise ValueError("give formula= with bounds=, or d= (design columns, intercept "
                             "included) with data_norm=")
        d = check_int("d", d, low=2)
        data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
        p = d - 1
        a = data_norm / math.sqrt(p)             # the box of half-width a fits the ball
        X = np.c_[np.ones(n_rows), rng.uniform(-a, a, (n_rows, p))]
        return X, None, ["(Intercept)"] + [f"x{j}" for j in range(1, d)], data_norm, True
    from ..bounds import PublicBounds, public_bounds
    from ..design import Preprocess, make_spec, parse
    from ..design.rsyntax import names_in

    if bounds is None:
        raise ValueError("formula= needs bounds= (privatelr.public_bounds): the planner knows "
                         "the columns only from their public ranges and levels")
    if not isinstance(bounds, PublicBounds):
        bounds = public_bounds(bounds)
    tree: Any = parse(formula)
    lhs = set(names_in(tree.left)) if getattr(tree, "op", None) == "~" else set()
    frame = {}
    for col, (lo, hi) in bounds.ranges.items():
        frame[col] = rng.uniform(lo, hi, n_rows)
    for col, levels in bounds.levels.items():
        frame[col] = pd.Categorical(np.asarray(levels, dtype=object)[
            rng.integers(0, len(levels), n_rows)], categories=list(levels))
    for name in names_in(tree):
        if name not in frame:
            if name in lhs:
                frame[name] = np.zeros(n_rows, dtype=bool)
            elif name != ".":
                raise ValueError(f"formula: column {name!r} has no public range or levels in "
                                 f"bounds=; declare it (ranges={{{name!r}: (lo, hi)}} or "
                                 f"levels={{{name!r}: [...]}})")
    frame = pd.DataFrame(frame)
    spec = make_spec(formula, frame, levels=bounds.levels, learn=False)
    pmap = bounds.design_map(spec)
    pre = Preprocess(divisors=pmap.divisors, shifts=pmap.shifts or None)
    spec = spec.with_preprocess(pre)
    X = np.asarray(spec.rows(frame, response=False).X, dtype=np.float64)
    k = int(spec.intercept)
    M = pre.design_matrix(X.shape[1], bool(k))
    norm = pmap.data_norm if data_norm is None else check_real("data_norm", data_norm,
                                                               low=0.0, low_open=True)
    return X, M, list(spec.design_columns), norm, bool(k)


def inference_plan(n: int, eps: float, *, formula: str | None = None, bounds=None,
                   d: int | None = None, data_norm: float | None = None,
                   inference=True, method: str = "objective", delta: float = 0.0,
                   prevalence: float = 0.5, random_state: int = 0) -> InferencePlan:
    """What a private fit's intervals will look like, before anything is spent.

    From public inputs only (``n``, ε, the formula and its public bounds), simulate the
    calibration and the private information release of ``dplr(..., inference=...)``, assuming
    columns uniform over their public ranges and no effects beyond ``prevalence``; no data is
    read, so it costs no privacy. Says how likely the fit is to give intervals and how wide
    they will be next to glm's (a guide, usually optimistic: :mod:`privatelr.inference.plan`).

    Parameters
    ----------
    n : int
        The number of rows the fit will use (public).
    eps : float
        The whole budget of the fit (coefficients and inference).
    formula, bounds : str and privatelr.PublicBounds
        The model and the public bounds of its columns; or give ``d`` (design columns with the
        intercept) and ``data_norm`` instead.
    inference : True or float
        The share of ``eps`` for the information matrix, as ``dplr(inference=...)``.
    method : {"objective", "output", "gaussian", "amp"}
    delta : float
        δ of the Gaussian methods.
    prevalence : float
        The assumed share of positive outcomes (public knowledge, or a guess).
    random_state : int
        Seed of the public synthetic design and of the simulated release noise (no private
        randomness is involved).

    Returns
    -------
    InferencePlan
        ``verdict`` (``"likely"``, ``"possible"`` or ``"unlikely"``), the chance
        ``p_intervals``, the relative noise ``kappa``, the default λ and
        ``width_ratio`` (per coefficient); ``print(plan)`` shows them.

    Examples
    --------
    >>> from privatelr import inference_plan
    >>> inference_plan(50_000, 1.0, d=4, data_norm=1.0).verdict
    'likely'
    """
    from ..calibration import (calibrate, check_method, default_lambda_inference,
                               default_lambda_inference_output, norm_bound)
    from ..mechanisms import check_random_state

    n = check_int("n", n, low=2)
    eps = check_real("eps", eps, low=0.0, low_open=True)
    prevalence = check_real("prevalence", prevalence, low=0.0, high=1.0, low_open=True,
                            high_open=True)
    method, delta = check_method(method, eps, delta)
    share = check_inference(DEFAULT_SHARE if inference is True else inference, eps)
    if share is None:
        raise ValueError("inference= must be True or a share of eps in (0, 1)")
    eps_fit, eps_info = split_budget(eps, share)
    assert eps_info is not None             # a share was given
    rng = check_random_state(random_state)
    X, M, names, dn, intercept = _design(_ROWS, formula, bounds, d, data_norm, rng)
    dim = X.shape[1]
    B = norm_bound(dn, intercept)
    lam = (default_lambda_inference_output(n, eps_fit, data_norm=B) if method == "output" else
           default_lambda_inference(n, eps_fit, data_norm=B))     # dplr's defaults
    cal = calibrate(n, dim, eps=eps_fit, lambda_=lam, method=method, data_norm=B, delta=delta)
    pq = prevalence * (1.0 - prevalence)
    H = pq * (X.T @ X) / X.shape[0]
    s_H = information_sensitivity(n, 0.25, 1.0, B) / information_eps(eps_info, method)
    zero = np.zeros(dim)
    K, s_K = None, 0.0
    if method == "output":
        # output perturbation also releases the information's derivative along
        # v = H^-1 w~; with no effects w~ is the output noise, so |v| is about its RMS
        Hi = np.linalg.inv(H)
        v_rms = cal.noise_scale * math.sqrt((dim + 1) * float(np.trace(Hi @ Hi)))
        K = np.zeros((dim, dim))
        s_K = derivative_sensitivity(n, 1.0, B, v_rms) / (eps_info - information_eps(
            eps_info, method))
    # the law at the assumed information
    private = law_of(H, zero, cal, s_H, names, K, s_K)
    kappa = private.kappa
    from .release import symmetric_noise

    given = 0
    for _ in range(_DRAWS):
        try:
            given += refusal(law_of(H + symmetric_noise(dim, s_H, rng), zero, cal, s_H,
                                    names, K, s_K)) is None
        except np.linalg.LinAlgError:
            continue
    glm = Inference(names=names, estimate=np.zeros(dim), sigma2=np.linalg.inv(H) / n,
                    noise_map=np.zeros((dim, dim)), d=dim, kappa=0.0)
    if M is not None:
        private = private.transformed(M, names, "data")
        glm = glm.transformed(M, names, "data")
    import pandas as pd

    ratio = []
    for j in range(dim):
        c = np.zeros(dim)
        c[j] = 1.0
        ratio.append(private.half_width(c, 0.95) / glm.half_width(c, 0.95))
    p_given = given / _DRAWS
    verdict = "likely" if p_given >= 0.8 else "possible" if p_given >= 0.2 else "unlikely"
    return InferencePlan(n=n, d=dim, eps=eps, eps_fit=eps_fit, eps_info=eps_info,
                         method=method, data_norm=dn, lambda_=cal.lambda_, kappa=kappa,
                         p_intervals=p_given,
                         width_ratio=pd.Series(ratio, index=names, name="width ratio"),
                         verdict=verdict, prevalence=prevalence)
