r"""R's inference vocabulary for fitted models: ``vcov``, ``confint``, the coefficient table,
broom's ``tidy`` and ``predict``'s standard errors.

Every function reports on ``scale="data"`` by default — per unit of the original columns, the
public map inverted exactly — or on ``scale="mapped"``, the scale the model was fitted on, whose
row names spell the map (``(age - 54)/36``). A non-private fit (``eps=0``) reports glm's
unpenalised maximum-likelihood fit (:mod:`privatelr.glm`), whatever λ its coefficients used.

The test statistic printed is the one whose law gives the p-value: with privacy noise the error
of an estimate is a normal plus the spherical noise's marginal (not normal), so the table's
``z value`` is the standard-normal score of the exact two-sided p-value,
:math:`z = \operatorname{sign}(\hat\beta)\,\Phi^{-1}(1 - p/2)`. Without privacy noise (glm,
WALR's Gaussian release, the Gaussian methods) it is the usual Estimate / Std. Error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_real
from .estimate import NOT_ASKED, check_scale, for_model, point_estimate, scale_names, unit_matrix

__all__ = ["vcov", "confint", "coef_table", "tidy", "se_linear", "glm_of", "CONFINT_METHODS"]

#: ``confint(method=...)`` for a non-private fit: R's profile likelihood, or Wald's.
CONFINT_METHODS = ("profile", "wald")


def _level(level) -> float:
    return check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)


def _percent(p: float) -> str:
    return f"{100 * p:.3g} %"


def glm_of(model):
    """The unpenalised maximum-likelihood fit a non-private ``dplr`` model carries (computed
    when it was fitted), or None."""
    if getattr(model, "method", None) != "nonprivate":
        return None
    return getattr(model, "glm", None)


def _glm_scaled(model, scale: str):
    """(names, estimate, covariance) of the model's glm fit on ``scale``: the fit is on the
    data's columns; the mapped scale applies the inverse of the public map."""
    g = glm_of(model).require()
    est, cov = np.asarray(g.coefficients, float), np.asarray(g.covariance, float)
    M = unit_matrix(model)
    if scale == "mapped" and M is not None:
        Mi = np.linalg.inv(M)
        est, cov = Mi @ est, Mi @ cov @ Mi.T
    return scale_names(model, scale) if hasattr(model, "spec") else list(g.names), est, cov


def vcov(model, *, scale: str = "data"):
    """The covariance matrix of the coefficient estimates (R's ``vcov``).

    Private fits: the bias-corrected estimates' sampling covariance :math:`(n\\hat H)^{-1}` plus
    the known covariance of the privacy noise (:mod:`privatelr.inference`); needs a model fitted
    with ``inference=True``. Non-private fits: glm's.

    Parameters
    ----------
    model : DPLR
        A fit of :func:`privatelr.dplr` (or :func:`privatelr.walr`).
    scale : {"data", "mapped"}
        ``"data"`` (default): per unit of the original columns (the public map of
        ``bounds=`` inverted exactly); ``"mapped"``: the scale the model was fitted on.

    Examples
    --------
    >>> from privatelr import dplr, vcov
    >>> from privatelr.datasets import load_mtcars
    >>> m = dplr("am ~ mpg", load_mtcars(), eps=0)
    >>> vcov(m).round(4)
                 (Intercept)     mpg
    (Intercept)       5.5293 -0.2650
    mpg              -0.2650  0.0132
    """
    import pandas as pd

    check_scale(scale)
    if glm_of(model) is not None:
        names, _, cov = _glm_scaled(model, scale)
        return pd.DataFrame(cov, index=names, columns=names)
    inf = for_model(model, scale)
    return pd.DataFrame(inf.vcov, index=inf.names, columns=inf.names)


def confint(model, parm=None, level: float = 0.95, *, method: str | None = None,
            scale: str = "data"):
    """Confidence intervals for the coefficients of the logistic model (R's ``confint``).

    Columns are R's (``"2.5 %"``, ``"97.5 %"`` at ``level=0.95``); rows the coefficients, or
    those named in ``parm``. Private models: the exact law of sampling error plus privacy noise
    (:mod:`privatelr.inference`), centred at the bias-corrected estimate; ``df.attrs["quality"]``
    says ``"claimed"``. Non-private models (``eps=0``): R's profile
    likelihood (``method="profile"``, the default, as R's ``confint(glm)``) or Wald's
    (``method="wald"``, R's ``confint.default``).

    Parameters
    ----------
    model : DPLR
        A fit of :func:`privatelr.dplr` (or :func:`privatelr.walr`); a private one needs
        ``inference=True`` at fit time.
    parm : list of str, optional
        The coefficients to report (default: all).
    level : float
        The confidence level, in (0, 1).
    method : {"profile", "wald"}, optional
        Non-private fits only (see above).
    scale : {"data", "mapped"}
        ``"data"`` (default): per unit of the original columns (the public map of
        ``bounds=`` inverted exactly); ``"mapped"``: the scale the model was fitted on.

    Examples
    --------
    >>> from privatelr import dplr, confint
    >>> from privatelr.datasets import load_mtcars
    >>> m = dplr("am ~ mpg", load_mtcars(), eps=0)
    >>> confint(m, method="wald").round(3)
                  2.5 %  97.5 %
    (Intercept) -11.212  -1.995
    mpg           0.082   0.532
    >>> confint(m).round(3)                     # R's confint(glm(...)): profile likelihood
                  2.5 %  97.5 %
    (Intercept) -12.328  -2.772
    mpg           0.122   0.587
    """
    import pandas as pd

    level = _level(level)
    check_scale(scale)
    a = (1.0 - level) / 2.0
    cols = (_percent(a), _percent(1.0 - a))
    g = glm_of(model)
    if g is not None:
        if method is None:
            method = "profile" if g.rows is not None or g.problem else "wald"
            if method == "wald":
                import warnings

                warnings.warn("confint: profile-likelihood intervals refit the training rows, "
                              "which this model (loaded from a file) does not hold: Wald "
                              "intervals are given (method='wald' says so explicitly)",
                              UserWarning, stacklevel=2)
        if method not in CONFINT_METHODS:
            raise ValueError(f"method must be one of {CONFINT_METHODS}, got {method!r}")
        names, est, cov = _glm_scaled(model, scale)
        idx = _select(names, parm)
        if method == "profile" and scale == "data":
            lo, hi = g.profile_interval(idx, level)
        else:
            from scipy.special import ndtri

            z = float(ndtri(1.0 - a))
            se = np.sqrt(np.diag(cov))[idx]
            lo, hi = est[idx] - z * se, est[idx] + z * se
            if method == "profile":        # the mapped scale is linear: map the data's ends
                method = "wald"
        out = pd.DataFrame({cols[0]: lo, cols[1]: hi}, index=[names[j] for j in idx])
        out.attrs.update(quality="exact", method=method, scale=scale)
        return out
    if method not in (None, "exact") and not (method == "wald" and
                                              getattr(model, "method", "") == "nonprivate"):
        raise ValueError("method= chooses between profile and Wald intervals of a non-private "
                         "fit; a private fit's intervals use the exact law of its noise")
    inf = for_model(model, scale)
    idx = _select(inf.names, parm)
    lo, hi = [], []
    for j in idx:
        c = np.zeros(len(inf.names))
        c[j] = 1.0
        h = inf.half_width(c, level)
        lo.append(inf.estimate[j] - h)
        hi.append(inf.estimate[j] + h)
    out = pd.DataFrame({cols[0]: lo, cols[1]: hi}, index=[inf.names[j] for j in idx])
    out.attrs.update(quality=inf.quality, method="exact", scale=scale)
    return out


def _select(names: list, parm) -> list:
    if parm is None:
        return list(range(len(names)))
    items = [parm] if isinstance(parm, (str, int, np.integer)) else list(parm)
    out = []
    for p in items:
        if isinstance(p, str):
            if p not in names:
                raise ValueError(f"parm: {p!r} is not a coefficient; choose from {names}")
            out.append(names.index(p))
        elif isinstance(p, (int, np.integer)) and not isinstance(p, bool) and \
                -len(names) <= p < len(names):
            out.append(int(p) % len(names))
        else:
            raise ValueError(f"parm: {p!r} is neither a coefficient name nor a position")
    return out


def _z_of_p(p: np.ndarray, est: np.ndarray, se: np.ndarray) -> np.ndarray:
    """The standard-normal score of a two-sided p-value, signed as the estimate; where ``p``
    underflows (|z| beyond ~38) the ratio estimate / SE, which is then as large."""
    from scipy.special import ndtri

    with np.errstate(divide="ignore"):
        z = -ndtri(p / 2.0) * np.sign(est)
    return np.where(np.isfinite(z) & (p > 0), z, est / se)


def _estimates_only(model, scale: str):
    """A table of point estimates for a private fit without inference (no privacy cost)."""
    import pandas as pd

    est, _ = point_estimate(model)
    M = unit_matrix(model)
    if M is not None and scale == "data":
        est = M @ est
    names = scale_names(model, scale) if hasattr(model, "spec") else \
        [f"x{j}" for j in range(len(est))]
    table = pd.DataFrame({"Estimate": est}, index=names)
    table.attrs.update(quality="none", scale=scale, note=NOT_ASKED)
    return table


def coef_table(model, *, level: float | None = None, exponentiate: bool = False,
               scale: str = "data"):
    """glm's coefficient table: ``Estimate``, ``Std. Error``, ``z value``, ``Pr(>|z|)``.

    ``level`` adds the interval's columns; ``exponentiate=True`` reports odds ratios
    (``exp`` of the estimate and of the interval's ends, per unit of the column on ``scale``;
    the standard error, z and p stay on the log-odds scale, as in R's
    ``exp(cbind(coef, confint))``). ``z value`` is the normal score of the exact p-value
    (:mod:`privatelr.inference`). ``model`` is a fit of :func:`privatelr.dplr` or
    :func:`privatelr.walr`; ``scale`` is ``"data"`` (per unit of the original columns, the
    default) or ``"mapped"`` (the fitted scale). A private fit without inference gives its point estimates (and odds ratios)
    only: they cost nothing more. ``table.attrs`` holds ``scale`` and ``quality``.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_mtcars
    >>> coef_table(dplr("am ~ mpg", load_mtcars(), eps=0)).round(4)
                 Estimate  Std. Error  z value  Pr(>|z|)
    (Intercept)   -6.6035      2.3514  -2.8083    0.0050
    mpg            0.3070      0.1148   2.6735    0.0075
    """
    import pandas as pd
    from scipy.special import ndtr

    check_scale(scale)
    g = glm_of(model)
    if g is not None:
        names, est, cov = _glm_scaled(model, scale)
        se = np.sqrt(np.diag(cov))
        z = est / se
        table = pd.DataFrame({"Estimate": est, "Std. Error": se, "z value": z,
                              "Pr(>|z|)": 2.0 * ndtr(-np.abs(z))}, index=names)
        quality = "exact"
    elif getattr(model, "inference", None) is None and \
            getattr(model, "method", "") not in ("nonprivate", "") and hasattr(model, "spec"):
        table = _estimates_only(model, scale)
        level, quality = None, "none"
    else:
        inf = for_model(model, scale)
        se = np.sqrt(np.diag(inf.vcov))
        p: Any = []
        for j in range(len(inf.names)):
            c = np.zeros(len(inf.names))
            c[j] = 1.0
            p.append(inf.p_value(c, inf.estimate[j]))
        p = np.array(p)
        table = pd.DataFrame({"Estimate": inf.estimate, "Std. Error": se,
                              "z value": _z_of_p(p, inf.estimate, se), "Pr(>|z|)": p},
                             index=inf.names)
        quality = inf.quality
    if level is not None:
        ci = confint(model, level=level, scale=scale)
        table = pd.concat([table, ci], axis=1)
    if exponentiate:
        table = table.rename(columns={"Estimate": "Odds ratio"})
        table["Odds ratio"] = np.exp(table["Odds ratio"])
        for col in table.columns:
            if col.endswith(" %"):
                table[col] = np.exp(table[col])
    table.attrs.update(scale=scale, quality=quality)
    return table


def tidy(model, *, conf_int: bool = True, level: float = 0.95, exponentiate: bool = False,
         scale: str = "data"):
    """One row per coefficient, broom's columns: ``term``, ``estimate``, ``std_error``,
    ``statistic``, ``p_value`` and (``conf_int``) ``conf_low``, ``conf_high``.

    A private fit without inference has point estimates only: ``conf_int=False`` gives them
    (``std_error``, ``statistic`` and ``p_value`` NaN); asking for intervals raises and says how
    to get them. ``model``, ``level``, ``exponentiate`` and ``scale`` are those of
    :func:`coef_table`.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_mtcars
    >>> list(tidy(dplr("am ~ mpg", load_mtcars(), eps=0)).columns)
    ['term', 'estimate', 'std_error', 'statistic', 'p_value', 'conf_low', 'conf_high']
    """
    import pandas as pd

    table = coef_table(model, exponentiate=exponentiate, scale=scale)
    if table.shape[1] == 1:                       # estimates only
        if conf_int:
            raise ValueError(NOT_ASKED + "; tidy(model, conf_int=False) gives the point "
                             "estimates")
        nan = np.full(table.shape[0], math.nan)
        out = pd.DataFrame({"term": list(table.index), "estimate": table.iloc[:, 0].to_numpy(),
                            "std_error": nan, "statistic": nan, "p_value": nan})
        out.attrs.update(table.attrs)
        return out
    if conf_int:
        ci = confint(model, level=level, scale=scale)
        if exponentiate:
            ci = np.exp(ci)
        table = pd.concat([table, ci], axis=1)
    cols = ["estimate", "std_error", "statistic", "p_value"] + \
        (["conf_low", "conf_high"] if conf_int else [])
    out = table.set_axis(cols, axis=1)
    out.insert(0, "term", list(out.index))
    out = out.reset_index(drop=True)
    out.attrs.update(table.attrs)
    return out


def se_linear(model, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x'w, sqrt(x' V x))`` for every row of the fitted-scale design ``X`` (predict's
    ``se_fit``): the linear predictor at the model's own estimate (what ``predict(type="link")``
    gives) and its standard error from the covariance on the fitted scale."""
    est, _ = point_estimate(model)
    V = vcov(model, scale="mapped").to_numpy()
    fit = X @ est
    se = np.sqrt(np.einsum("ij,jk,ik->i", X, V, X))
    return fit, se
