r"""Plots for private logistic regression (matplotlib is an optional extra: ``privatelr[plot]``).

Every function imports matplotlib lazily, draws on ``ax`` (a new figure when None) and returns the
:class:`matplotlib.axes.Axes`.

* :func:`plot_roc` — ROC curve of a fitted model on labelled data, the model's threshold marked,
  AUC in the legend. **Evaluation only**: the curve reads the labels of ``data`` without noise;
  draw it on held-out data (on the training data it is not private).
* :func:`privacy_utility` — test error or AUC against ε (log axis) or against the training size,
  mean and a band over repetitions, one line per method, from
  :func:`privatelr.experiments.privacy_utility`; against ε the non-private fit is a reference
  line averaged over every fold of the private points' design (:func:`reference_rows`).
* :func:`plot_coefficients` — the released coefficients with the spread that the privacy noise
  gives a fresh private fit at the same ε. The spread is simulated from the public calibration
  only (no privacy budget is spent), see the function's docstring.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..exceptions import PrivacyWarning

__all__ = ["plot_roc", "privacy_utility", "plot_coefficients", "roc_curve", "noise_draws",
           "reference_rows"]

_INSTALL = 'matplotlib is needed for privatelr plots; install it with: pip install "privatelr[plot]"'


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised by monkeypatching in the tests
        raise ImportError(_INSTALL) from exc
    return plt


def _is_dplr(model) -> bool:
    """A fitted ``dplr`` model (duck-typed: reporting never imports result classes)."""
    return hasattr(model, "spec") and hasattr(model, "p_tr") and hasattr(model, "coefficients")


def _axes(ax):
    if ax is not None:
        return ax
    return _pyplot().subplots()[1]


# ---------------------------------------------------------------------------------------------
# ROC
# ---------------------------------------------------------------------------------------------

def roc_curve(scores, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC points ``(fpr, tpr, thresholds)`` of ``scores`` for 0/1 labels ``y`` (vectorised).

    A point per distinct score, from (0, 0) (threshold +inf: nothing positive) to (1, 1); the
    observation is called positive when its score is ``>=`` the threshold. Not private.

    Examples
    --------
    >>> fpr, tpr, thr = roc_curve([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
    >>> fpr.tolist(), tpr.tolist()
    ([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0])
    """
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    pos = np.asarray(y).reshape(-1).astype(np.float64) > 0
    if s.shape != pos.shape:
        raise ValueError(f"scores has {s.size} values but y has {pos.size}; they must match")
    if not np.isfinite(s).all():
        raise ValueError("scores contains NaN or infinite values")
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if n1 == 0 or n0 == 0:
        raise ValueError("the ROC curve needs both classes in y")
    order = np.argsort(-s, kind="stable")
    s_sorted, p_sorted = s[order], pos[order]
    last = np.r_[np.diff(s_sorted) != 0, True]          # last index of each distinct score
    tp = np.cumsum(p_sorted)[last]
    fp = np.cumsum(~p_sorted)[last]
    return (np.r_[0.0, fp / n0], np.r_[0.0, tp / n1], np.r_[np.inf, s_sorted[last]])


def _model_scores(model, data):
    """(probabilities or scores, 0/1 labels, threshold on the same scale, name)."""
    from scipy.special import expit

    if _is_dplr(model):
        try:
            rows = model.spec.rows(data)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"plot_roc: data must hold the model's response and covariates "
                             f"({model.formula}): {exc}") from None
        eta = np.einsum("ij,j->i", rows.X, model.fitted_coef)
        p = expit(eta if rows.offset is None else eta + rows.offset)
        return p, rows.y, model.p_tr, "dplr"
    if not (isinstance(data, tuple) and len(data) == 2):
        raise TypeError("plot_roc(model, data): data must be a DataFrame for a DPLR model, or "
                        "a tuple (X, y) for a model with predict_proba or decision_function")
    X, y = data
    if hasattr(model, "predict_proba"):
        p = np.asarray(model.predict_proba(X))
        p = p[:, 1] if p.ndim == 2 else p
        thr = 0.5
    elif hasattr(model, "decision_function"):
        p, thr = np.asarray(model.decision_function(X)), 0.0
    else:
        raise TypeError(f"plot_roc: {type(model).__name__} has neither predict_proba nor "
                        "decision_function")
    yv = np.asarray(y).reshape(-1)
    if yv.dtype.kind not in "biuf":
        raise ValueError("plot_roc: y must be 0/1, bool or -1/+1 labels")
    return p, (yv > 0).astype(np.int64), thr, type(model).__name__


def plot_roc(model, data, ax=None):
    """ROC curve of ``model`` on labelled ``data``, its classification threshold marked.

    Parameters
    ----------
    model : DPLR, or an estimator with ``predict_proba`` / ``decision_function``
    data : DataFrame (for a DPLR: response and covariates of the formula) or tuple ``(X, y)``
        Labelled evaluation data — preferably held out: the curve and the AUC read the labels
        without noise and are **not private**.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Three lines: the ROC curve (AUC in its legend label), the chance diagonal and the
        threshold marker (``p > p_tr`` for a DPLR model, 0.5 / 0 otherwise).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris(); iris[iris.columns[:4]] /= 12
    >>> m = dplr("I(Species == 'versicolor') ~ .", iris, eps=0)
    >>> ax = plot_roc(m, iris)
    >>> len(ax.get_lines())
    3
    """
    from .roc import c_index

    p, y, thr, _ = _model_scores(model, data)
    ax = _axes(ax)
    fpr, tpr, _ = roc_curve(p, y)
    auc = c_index(p, y)
    pos = np.asarray(y) > 0
    tpr_t = float(np.mean(p[pos] > thr))
    fpr_t = float(np.mean(p[~pos] > thr))
    ax.plot(fpr, tpr, drawstyle="default", lw=2, label=f"ROC (AUC = {auc:.3f})")
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="chance")
    ax.plot([fpr_t], [tpr_t], marker="o", ms=8, ls="none", color="C3",
            label=f"threshold {thr:g} (sens {tpr_t:.2f}, spec {1 - fpr_t:.2f})")
    ax.set_xlabel("False positive rate (1 - specificity)")
    ax.set_ylabel("True positive rate (sensitivity)")
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    ax.set_aspect("equal")
    ax.set_title("ROC (evaluation data; not private)")
    ax.legend(loc="lower right", fontsize="small")
    return ax


# ---------------------------------------------------------------------------------------------
# privacy-utility curves
# ---------------------------------------------------------------------------------------------

_LABELS = {"objective": "objective perturbation", "output": "output perturbation (sensitivity)",
           "nonprivate": "non-private"}


def privacy_utility(results, metric: str = "error", ax=None, *, x: str = "eps",
                    band: str = "sd", colors: dict | None = None):
    """Plot a privacy–utility table (:func:`privatelr.experiments.privacy_utility`).

    Parameters
    ----------
    results : pandas.DataFrame
        Columns ``method, eps, fold, repeat, error, auc`` (and ``n_train`` for ``x="n_train"``).
    metric : {"error", "auc"}
        Test error or test AUC on the y axis.
    ax : matplotlib Axes, optional
    x : {"eps", "n_train"}
        ε on a log axis, or the training-set size (a learning curve; needs a single ε per
        private method). Against ε the non-private fit (``eps = inf``) is a horizontal dashed
        reference line: the mean of the non-private fits over **every fold of the same design
        as the private points** — the (fold, ``n_train``) pairs the private rows were trained
        on — so it is the number the private points are compared with. (The folds' training
        parts may differ by one row when ``folds`` does not divide ``n``; every fold counts.)
        The private points of one plot must share one design: a table with several training
        sizes per fold (a learning curve) must be filtered to one ``n_train`` first.
    band : {"sd", "quantile"}
        Shaded band: mean ± one standard deviation over folds × repeats (the paper's summary),
        or the 10%–90% quantiles.
    colors : dict, optional
        Method -> matplotlib colour. Default: objective ``C0``, output ``C1``, non-private
        black; pass a mapping so that a method keeps one colour across panels and figures
        (other methods otherwise take ``C2``, ``C3``, … in their order in ``results``).

    Returns
    -------
    matplotlib.axes.Axes
        One line per method (mean), one shaded band per method.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> res = pd.DataFrame({"method": ["objective"] * 4 + ["nonprivate"],
    ...                     "eps": [0.1, 0.1, 1.0, 1.0, float("inf")], "fold": [0, 1, 0, 1, 0],
    ...                     "repeat": 0, "error": [0.3, 0.2, 0.1, 0.12, 0.05], "auc": 0.9})
    >>> ax = privacy_utility(res)
    >>> len(ax.get_lines()), ax.get_xscale()
    (2, 'log')
    """
    import pandas as pd

    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be the DataFrame returned by "
                        f"privatelr.experiments.privacy_utility, got {type(results).__name__}")
    if metric not in ("error", "auc"):
        raise ValueError(f"metric must be 'error' or 'auc', got {metric!r}")
    if x not in ("eps", "n_train"):
        raise ValueError(f"x must be 'eps' or 'n_train', got {x!r}")
    if band not in ("sd", "quantile"):
        raise ValueError(f"band must be 'sd' or 'quantile', got {band!r}")
    need = {"method", "eps", metric} | ({"n_train"} if x == "n_train" else set())
    missing = need - set(results.columns)
    if missing:
        raise ValueError(f"results lacks column(s) {sorted(missing)}")
    if results.empty:
        raise ValueError("results is empty")
    if colors is not None and not isinstance(colors, dict):
        raise TypeError(f"colors must be a dict mapping method to colour, got "
                        f"{type(colors).__name__}")
    methods = list(dict.fromkeys(results["method"]))
    private = results[np.isfinite(results["eps"])]
    private_eps = private["eps"]
    if x == "eps":
        _check_one_design(private)
    ax = _axes(ax)
    palette = {"objective": "C0", "output": "C1", "nonprivate": "k"} | dict(colors or {})
    for i, method in enumerate(methods):
        sub = results[results["method"] == method]
        color = palette.get(method, f"C{i + 2}")
        label = _LABELS.get(method, method)
        if x == "n_train" and sub["eps"].nunique() > 1:
            raise ValueError(f"x='n_train' needs one eps per method; {method!r} has "
                             f"{sorted(sub['eps'].unique())} (filter the table first)")
        key = x if (x == "n_train" or np.isfinite(sub["eps"]).all()) else None
        if key is None:                    # non-private against eps: a horizontal line
            sub = reference_rows(sub, private)
            vals = sub[metric].to_numpy(dtype=float)
            m = float(np.nanmean(vals))
            lo, hi = _band(vals, band, m)
            xs: Any = (private_eps.min(), private_eps.max()) if len(private_eps) else (0.1, 1.0)
            folds = sub["fold"].nunique() if "fold" in sub else len(sub)
            ax.plot(xs, [m, m], ls="--", color=color,
                    label=f"{label} (mean of {folds} folds, same training sets)")
            ax.fill_between(xs, [lo, lo], [hi, hi], color=color, alpha=0.12, lw=0)
            continue
        groups = sub.groupby(key)[metric]
        xs = np.array(sorted(groups.groups))
        mean = groups.mean().reindex(xs).to_numpy()
        if band == "sd":
            sd = groups.std(ddof=1).reindex(xs).fillna(0.0).to_numpy()
            lo, hi = mean - sd, mean + sd
        else:
            lo = groups.quantile(0.1).reindex(xs).to_numpy()
            hi = groups.quantile(0.9).reindex(xs).to_numpy()
        ax.plot(xs, mean, marker="o", ms=4, color=color, label=label)
        ax.fill_between(xs, lo, hi, color=color, alpha=0.2, lw=0)
    if x == "eps":
        ax.set_xscale("log")
        ax.set_xlabel("privacy level ε (log scale)")
    else:
        ax.set_xlabel("training set size n")
    ax.set_ylabel("test error" if metric == "error" else "test AUC")
    what = "± 1 sd" if band == "sd" else "10%–90% band"
    ax.set_title(f"mean {what} over folds × repeats")
    ax.legend(fontsize="small")
    return ax


def _check_one_design(private) -> None:
    """Private points plotted against ε must come from one training design: one training size
    per fold (a learning-curve table mixes several and must be filtered first)."""
    if "n_train" not in private or "fold" not in private or private.empty:
        return
    if private.groupby("fold")["n_train"].nunique().max() > 1:
        sizes = sorted(int(v) for v in private["n_train"].unique())
        raise ValueError(f"x='eps' needs one training size per fold, but the private rows have "
                         f"n_train {sizes}; filter the table to one size first, e.g. "
                         f"results[results.n_train == {sizes[-1]}]")


def reference_rows(nonprivate, private):
    """The non-private rows a plot against ε compares the private points with.

    The non-private fits of every fold of the private points' design: the rows whose
    (``fold``, ``n_train``) pair occurs among the private rows (all non-private rows when the
    table has no private rows, no ``n_train`` or no ``fold`` column to match). Folds whose
    training parts differ by one row (``folds`` not dividing ``n``) all count.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"method": ["objective"] * 2 + ["nonprivate"] * 4,
    ...                   "eps": [1.0, 1.0] + [float("inf")] * 4, "fold": [0, 1, 0, 1, 0, 1],
    ...                   "n_train": [100, 99, 100, 99, 50, 50], "error": 0.1})
    >>> reference_rows(t[t.method == "nonprivate"], t[t.method == "objective"]).index.tolist()
    [2, 3]
    """
    if private.empty or "n_train" not in nonprivate or "n_train" not in private:
        return nonprivate
    keys = ["fold", "n_train"] if "fold" in nonprivate and "fold" in private else ["n_train"]
    design = set(map(tuple, private[keys].drop_duplicates().to_numpy().tolist()))
    mask = [tuple(r) in design for r in nonprivate[keys].to_numpy().tolist()]
    chosen = nonprivate[np.asarray(mask, dtype=bool)]
    if chosen.empty:
        raise ValueError("results has no non-private fit on the private points' training "
                         "design (fold, n_train); run privacy_utility with methods including "
                         "'nonprivate' on the same folds, or drop the non-private rows")
    return chosen


def _band(vals: np.ndarray, band: str, m: float) -> tuple[float, float]:
    if band == "sd":
        sd = float(np.std(vals, ddof=1)) if vals.size > 1 else 0.0
        return m - sd, m + sd
    return float(np.quantile(vals, 0.1)), float(np.quantile(vals, 0.9))


# ---------------------------------------------------------------------------------------------
# coefficients with the noise spread
# ---------------------------------------------------------------------------------------------

def _fit_facts(model):
    """(names, coef, calibration) of a fitted ``dplr`` model or engine result — the calibration
    they keep, never re-derived here."""
    cal = getattr(model, "calibration", None)
    coef = getattr(model, "coef", None)
    if cal is None or coef is None:
        raise TypeError(f"plot_coefficients needs a DPLR (from dplr()) or an erm.ERMResult, got "
                        f"{type(model).__name__}")
    if _is_dplr(model):
        names = [str(c) for c in model.spec.columns]
    else:
        names = [f"w{j}" for j in range(len(coef))]
    return names, np.asarray(coef, dtype=float), cal


def noise_draws(model, draws: int = 200, random_state=None, data=None) -> np.ndarray:
    r"""Simulated displacements (released − non-private minimiser) of fresh private fits.

    Drawn from the public calibration only (``n``, ``d``, λ, ε, ε', the norm bound ``B``); no
    data are read unless ``data`` is given, so no privacy budget is spent.

    * **Output perturbation** (JMLR 2011 Algorithm 1): the released vector is :math:`w^* + b`,
      :math:`\|b\| \sim \mathrm{Gamma}(d, 2B/(n\lambda\varepsilon))` uniformly directed — the
      draws are exactly the law of the displacement (``erm``'s ``noise_scale``).
    * **Objective perturbation** (JMLR 2011 Algorithm 2): the released :math:`w_p` solves
      :math:`\nabla J(w_p) = -b/n` with :math:`\|b\| \sim \mathrm{Gamma}(d, 2B/\varepsilon')`,
      so :math:`w_p - w^* \approx -H^{-1}b/n`. Without data the only public curvature is the
      regulariser's, :math:`H = \lambda I`: the draws are :math:`b/(n\lambda)`. Since
      :math:`H \succeq \lambda I` (strong convexity), :math:`\|w_p - w^*\| \le \|b\|/(n\lambda)`
      exactly, so this spread is an upper envelope (conservative; the loss's curvature shrinks
      the true spread). With ``data`` the Hessian of ``J`` at the released coefficients is used
      instead (:math:`H = \frac1n\sum_i \sigma_i(1-\sigma_i)x_ix_i^\top + \lambda I`): closer
      to the truth, but it reads the data without noise — a :class:`PrivacyWarning` says so.
    * **Non-private**: zeros.

    Returns
    -------
    (draws, d) ndarray

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris(); iris[iris.columns[:4]] /= 12
    >>> m = dplr("I(Species == 'setosa') ~ .", iris, eps=1, op=False, lambda_=0.1, random_state=0)
    >>> noise_draws(m, draws=50, random_state=1).shape
    (50, 5)
    """
    from .._validation import check_int
    from ..mechanisms import check_random_state, sphere_gamma_noise

    draws = check_int("draws", draws, low=1)
    names, coef, cal = _fit_facts(model)
    rng = check_random_state(random_state)
    d = coef.size
    if cal.method == "nonprivate":
        return np.zeros((draws, d))
    B = np.vstack([sphere_gamma_noise(d, cal.noise_scale, rng) for _ in range(draws)])
    if cal.method == "output":
        return B
    n, lam = cal.n, cal.lambda_
    if data is None:
        return B / (n * lam)
    from scipy.special import expit

    if not _is_dplr(model):
        raise TypeError("data= is supported for DPLR models only")
    warnings.warn("plot_coefficients(data=...): the spread uses the Hessian of the loss on "
                  "these data, computed without noise; the band is not private (omit data "
                  "for the data-free envelope)", PrivacyWarning, stacklevel=3)
    rows = model.spec.rows(data, response=False)
    X = rows.X
    s = expit(X @ coef if rows.offset is None else X @ coef + rows.offset)
    H = (X * (s * (1 - s))[:, None]).T @ X / X.shape[0] + lam * np.eye(d)
    return -np.linalg.solve(H, B.T / n).T


def plot_coefficients(model, ax=None, draws: int = 200, random_state=None, *, data=None,
                      level: float = 0.95):
    """The released coefficients with the spread a fresh private fit would have at the same ε.

    Each coefficient is a dot; the bar around it covers the central ``level`` interval of the
    simulated noise displacement (symmetric: ``± `` the ``level`` quantile of its absolute value) (:func:`noise_draws`: from the public calibration, no privacy
    budget spent). Because the noise is symmetric, the bar is also an interval for the
    non-private coefficient: a bar that crosses zero means the sign is not distinguishable from
    the privacy noise. For objective perturbation without ``data`` the bars are the
    conservative ``H = λI`` envelope (stated in the title).

    Parameters
    ----------
    model : DPLR or erm.ERMResult
    ax : matplotlib Axes, optional
    draws : int
        Number of simulated noise draws.
    random_state : int, numpy.random.Generator or None
        Seeds the simulation (not the model).
    data : DataFrame, optional
        Objective perturbation only: use the data's Hessian (raises PrivacyWarning).
    level : float
        Coverage of the bars, in (0, 1).

    Returns
    -------
    matplotlib.axes.Axes
        One marker line (the coefficients), one vertical zero line, one bar collection.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris(); iris[iris.columns[:4]] /= 12
    >>> m = dplr("I(Species == 'setosa') ~ .", iris, eps=1, random_state=0)
    >>> ax = plot_coefficients(m, random_state=0)
    >>> [t.get_text() for t in ax.get_yticklabels()][0]
    '(Intercept)'
    """
    from .._validation import check_real

    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    names, coef, cal = _fit_facts(model)
    sims = noise_draws(model, draws=draws, random_state=random_state, data=data)
    # every displacement law here is symmetric (b and -b are equally likely), so the central
    # interval is coef ± the level-quantile of |displacement|: uses all draws for both ends
    half = np.quantile(np.abs(sims), level, axis=0)
    lo, hi = coef - half, coef + half
    ax = _axes(ax)
    pos = np.arange(coef.size)[::-1]
    ax.hlines(pos, lo, hi, color="C0", lw=6, alpha=0.35,
              label=f"{level:.0%} noise spread" if cal.method != "nonprivate" else None)
    ax.plot(coef, pos, "o", color="C0", label="released coefficient")
    ax.axvline(0.0, color="grey", lw=1, ls=":")
    ax.set_yticks(pos)
    ax.set_yticklabels(names)
    ax.set_xlabel("coefficient")
    ax.set_ylabel("term")
    if cal.method == "output":
        how = f"output perturbation, ε = {cal.eps:g}: exact noise law"
    elif cal.method == "objective":
        how = (f"objective perturbation, ε = {cal.eps:g} (ε' = {cal.eps_eff:.3g}): "
               + ("data Hessian (not private)" if data is not None else "H = λI envelope"))
    else:
        how = "non-private fit: no noise"
    ax.set_title(how, fontsize="medium")
    ax.set_ylim(-0.6, coef.size - 0.4 + 0.5)          # head room: the legend sits above the bars
    ax.legend(fontsize="small", loc="upper center", ncol=2, frameon=False)
    return ax
