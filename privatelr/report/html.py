"""Jupyter display of fitted models: HTML tables with the privacy fields marked.

Duck-typed: works on any object with the fields the text summary reads
(:func:`privatelr.report.text.summarize`); nothing here imports a result class.
"""

from __future__ import annotations

from ..design import r_number
from .text import summarize

__all__ = ["dplr_html", "walr_html"]


# ---------------------------------------------------------------------------------------------

_PRIVACY_STYLE = "background-color:#fff3cd;font-weight:bold"
_LEAK_STYLE = "background-color:#f8d7da"


def _html_rows(rows) -> str:
    from html import escape

    out = []
    for label, value, kind in rows:
        style = {"privacy": _PRIVACY_STYLE, "leak": _LEAK_STYLE}.get(kind, "")
        cls = f' class="privatelr-{kind}"' if kind else ""
        attr = f' style="{style}"' if style else ""
        out.append(f"<tr{cls}{attr}><th style='text-align:left'>{escape(str(label))}</th>"
                   f"<td style='text-align:left'>{escape(str(value))}</td></tr>")
    return "".join(out)


def _html_table(title: str, rows, coefs: dict, notes) -> str:
    from html import escape

    coef_rows = "".join(f"<tr><th style='text-align:left'>{escape(str(k))}</th>"
                        f"<td style='text-align:right'>{v: .6g}</td></tr>"
                        for k, v in coefs.items())
    note_html = "".join(f"<li>{escape(n.strip())}</li>" for n in notes)
    legend = (f"<span style='{_PRIVACY_STYLE}'>&nbsp;privacy&nbsp;</span> fields; "
              f"<span style='{_LEAK_STYLE}'>&nbsp;not private&nbsp;</span> fields")
    return (f"<div class='privatelr-summary'><p><b>{escape(title)}</b></p>"
            f"<table>{_html_rows(rows)}</table>"
            f"<p style='margin-top:0.5em'><b>Coefficients</b></p>"
            f"<table><tr><th>term</th><th>estimate</th></tr>{coef_rows}</table>"
            f"<ul style='font-size:smaller'>{note_html}</ul>"
            f"<p style='font-size:smaller'>{legend}</p></div>")


def dplr_html(model) -> str:
    """``DPLR._repr_html_``: the summary as an HTML table, privacy fields highlighted.

    Rows of class ``privatelr-privacy`` (highlighted) hold the guarantee: privacy level ε, ε'
    used for the noise, the regulariser's penalty, the perturbation method and the norm bound;
    rows of class ``privatelr-leak`` hold numbers computed from the data without noise (the
    C-index, a data-driven threshold).

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris(); iris[iris.columns[:4]] /= 12
    >>> html = dplr_html(dplr("I(Species == 'setosa') ~ .", iris, eps=1, random_state=0))
    >>> "privatelr-privacy" in html and "Privacy level" in html
    True
    """
    s = summarize(model)
    method = {"objective": "objective perturbation", "output": "output perturbation",
              "nonprivate": "none (non-private fit)"}.get(model.method, model.method)
    bound = r_number(round(model.norm_bound, 6))
    if model.compat == "PrivateLR":
        bound += " (PrivateLR compatibility: intercept ignored, guarantee does not hold as stated)"
    rows = [
        ("Privacy level (eps)", r_number(model.eps), "privacy"),
        ("Mechanism", method, "privacy"),
        ("eps' used for the noise", r_number(round(model.eps_eff, 10)), "privacy"),
        ("Regulariser's privacy penalty", r_number(round(model.penalty, 10)), "privacy"),
        ("Norm bound B of design rows", bound, "privacy"),
        ("Regularization parameter (lambda)", r_number(model.lambda_), ""),
        ("Rows used (n) / coefficients (d)", f"{model.n} / {model.d}", ""),
        ("Convergence of optimization", "TRUE" if model.convergence == 0 else "FALSE", ""),
        ("Status", model.status, ""),
        ("C-index (AUC), training data",
         "NA" if model.diagnostics is None else r_number(model.CIndex), "leak"),
        ("Classification threshold (p.tr)", r_number(model.p_tr),
         "leak" if model.threshold != "fixed" else ""),
    ]
    if model.did_rp:
        rows.append(("Random projection dimension", model.rp_dim, ""))
    title = s.formula
    if model.compat == "PrivateLR" and model.method != "nonprivate":
        rows.insert(0, ("Guarantee", "NOT PRIVATE (compat='PrivateLR'): the stated eps does not "
                                     "hold", "leak"))
        title = "NOT PRIVATE — " + title
    return _html_table(title, rows, s.coefficients, s.notes)


def walr_html(result) -> str:
    """``WALRResult._repr_html_``: the WALR summary as an HTML table, privacy fields highlighted.

    Examples
    --------
    >>> import numpy as np
    >>> from privatelr import noisy_dot_product, walr_fit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(200, 2)); y = (X[:, 0] > 0.5).astype(int)
    >>> rel = noisy_dot_product(X, y, eps=1.0, delta=1e-5, random_state=0)
    >>> "privatelr-privacy" in walr_html(walr_fit(X, rel, lambda_=0.1))
    True
    """
    if result.mechanism is None:
        guarantee = "unknown (trained from a plain vector)"
    elif result.mechanism == "none":
        guarantee = "none: exact dot product (eps = inf), NOT private"
    else:
        guarantee = f"(eps={result.eps:g}, delta={result.delta:g})-label-DP"
    rows = [
        ("Label privacy", guarantee, "privacy"),
        ("Mechanism", result.mechanism if result.mechanism else "unknown", "privacy"),
        ("Noise sigma", "" if result.sigma is None else f"{result.sigma:.6g}", "privacy"),
        ("Protected", "labels only; features and weights are public", "privacy"),
        ("Rows (n) / coefficients (k)", f"{result.n} / {result.k}", ""),
        ("Solver", result.solver, ""),
        ("lambda", f"{result.lambda_:g}", ""),
        ("Status", result.status, ""),
        ("Iterations / epochs / passes", f"{result.iterations} / {result.epochs} / "
                                         f"{result.passes}", ""),
        ("Gradient (inf-norm)", f"{result.grad_norm:.3g}", ""),
    ]
    coefs = {str(c): float(v) for c, v in zip(result.columns, result.coef)}
    return _html_table("WALR: label-private logistic regression", rows, coefs,
                       [result.message] if result.message else [])
