"""Jupyter display of fitted models: HTML tables with the privacy fields marked.

Duck-typed: works on any object with the fields the text summary reads
(:func:`privatelr.report.text.summarize`); nothing here imports a result class.

Readable on light and dark notebook themes: text colours are inherited from the page
(``color: inherit``); the highlighted rows use a translucent tint, and every element that sets
a background sets its text colour too. A fit whose guarantee does not hold opens with a
headline saying so (:func:`privatelr.report.text.guarantee_headline`), before anything else.
Every number is formatted by the text summary's helpers (:func:`~privatelr.report.text.
summary_values`, :func:`~privatelr.report.text.format_coefficients`), so the two views show the
same digits. Long lines (the formula, column names, messages) wrap instead of overflowing.
"""

from __future__ import annotations

from html import escape

from .text import (format_coefficients, guarantee_headline, summarize, summary_values,
                   table_cells, walr_headline, walr_values)

__all__ = ["dplr_html", "walr_html"]


# ---------------------------------------------------------------------------------------------
# Colours: the foreground is always the page's own (inherit); backgrounds are translucent tints
# that read on white and on black alike. No rule sets a background without a colour.

_WRAP = "overflow-wrap:anywhere;word-break:normal;white-space:pre-wrap"
_BOX = f"color:inherit;max-width:100%;{_WRAP}"
_PRIVACY_STYLE = "background-color:rgba(255,193,7,0.22);color:inherit;font-weight:bold"
_LEAK_STYLE = "background-color:rgba(220,53,69,0.22);color:inherit"
_HEADLINE_STYLE = ("background-color:rgba(220,53,69,0.30);color:inherit;font-weight:bold;"
                   "border:2px solid currentColor;padding:0.4em 0.6em;margin:0 0 0.5em 0;"
                   + _WRAP)
_CELL = f"text-align:left;vertical-align:top;color:inherit;{_WRAP}"
_NUM = "text-align:right;color:inherit;font-family:monospace;white-space:pre"


def _html_rows(rows) -> str:
    out = []
    for label, value, kind in rows:
        style = {"privacy": _PRIVACY_STYLE, "leak": _LEAK_STYLE}.get(kind, "")
        cls = f' class="privatelr-{kind}"' if kind else ""
        attr = f' style="{style}"' if style else ""
        out.append(f"<tr{cls}{attr}><th style='{_CELL}'>{escape(str(label))}</th>"
                   f"<td style='{_CELL}'>{escape(str(value))}</td></tr>")
    return "".join(out)


def _html_table(title: str, rows, coefs: dict, notes, headline: str | None) -> str:
    """``coefs``: name -> formatted text (the text summary's formatting)."""
    coef_rows = "".join(f"<tr><th style='{_CELL}'>{escape(str(k))}</th>"
                        f"<td style='{_NUM}'>{escape(v)}</td></tr>"
                        for k, v in coefs.items())
    note_html = "".join(f"<li style='{_WRAP}'>{escape(n.strip())}</li>" for n in notes)
    legend = (f"<span style='{_PRIVACY_STYLE}'>&nbsp;privacy&nbsp;</span> fields; "
              f"<span style='{_LEAK_STYLE}'>&nbsp;not private&nbsp;</span> fields")
    top = ("" if headline is None else
           f"<p class='privatelr-headline' role='alert' style='{_HEADLINE_STYLE}'>"
           f"{escape(headline)}</p>")
    return (f"<div class='privatelr-summary' style='{_BOX}'>{top}"
            f"<p style='{_WRAP}'><b>{escape(title)}</b></p>"
            f"<table style='color:inherit;max-width:100%'>{_html_rows(rows)}</table>"
            f"<p style='margin-top:0.5em'><b>Coefficients</b></p>"
            f"<table style='color:inherit;max-width:100%'><tr><th style='{_CELL}'>term</th>"
            f"<th style='{_CELL}'>estimate</th></tr>{coef_rows}</table>"
            f"<ul style='font-size:smaller'>{note_html}</ul>"
            f"<p style='font-size:smaller'>{legend}</p></div>")


def dplr_html(model) -> str:
    """``DPLR._repr_html_``: the summary as an HTML table, privacy fields highlighted.

    Rows of class ``privatelr-privacy`` (highlighted) hold the guarantee: privacy level ε, ε'
    used for the noise, the regulariser's penalty, the perturbation method and the norm bound;
    rows of class ``privatelr-leak`` hold numbers computed from the data without noise (the
    C-index, a data-driven threshold). A fit whose guarantee does not hold (``compat=
    "PrivateLR"``, a non-private fit, a non-converged solve) opens with a
    ``privatelr-headline`` paragraph saying so. The numbers are the text summary's.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris(); iris[iris.columns[:4]] /= 12
    >>> html = dplr_html(dplr("I(Species == 'setosa') ~ .", iris, eps=1, random_state=0))
    >>> "privatelr-privacy" in html and "Privacy level" in html
    True
    >>> "privatelr-headline" in html                 # a private fit: no warning headline
    False
    """
    s = summarize(model)
    v = summary_values(model)
    method = {"objective": "objective perturbation", "output": "output perturbation",
              "nonprivate": "none (non-private fit)"}.get(model.method, model.method)
    bound = v["norm_bound"]
    if model.compat == "PrivateLR":
        bound += " (PrivateLR compatibility: intercept ignored, guarantee does not hold as stated)"
    rows = [
        ("Privacy level (eps)", v["eps"], "privacy"),
        ("Mechanism", method, "privacy"),
        ("eps' used for the noise", v["eps_eff"], "privacy"),
        ("Regulariser's privacy penalty", v["penalty"], "privacy"),
        ("Norm bound B of design rows", bound, "privacy"),
        ("Regularization parameter (lambda)", v["lambda"], ""),
        ("Rows used (n) / coefficients (d)", f"{model.n} / {model.d}", ""),
        ("Convergence of optimization", v["convergence"], ""),
        ("Status", model.status, ""),
        ("C-index (AUC), training data", v["c_index"], "leak"),
        ("Classification threshold (p.tr)", v["p_tr"],
         "leak" if model.threshold != "fixed" else ""),
    ]
    if model.did_rp:
        rows.append(("Random projection dimension", model.rp_dim, ""))
    headline = guarantee_headline(model)
    notes = s.notes
    if headline is not None:
        rows.insert(0, ("Guarantee", "NOT PRIVATE (see the headline above)", "leak"))
        notes = [n for n in notes if n.strip() != headline]     # said once, at the top
    out = _html_table(s.formula, rows, format_coefficients(s.coefficients), notes, headline)
    if s.table is not None:      # glm's coefficient table (privatelr.inference)
        out += (f"<p>{escape(s.table_title)}</p>"
                + table_cells(s.table).to_html(classes="privatelr-coef"))
    return out


def walr_html(result) -> str:
    """``WALRResult._repr_html_``: the WALR summary as an HTML table, privacy fields highlighted.

    A result without a label-privacy guarantee (trained from the exact dot product, or from a
    plain vector) opens with a ``privatelr-headline`` paragraph saying so.

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
    v = walr_values(result)
    rows = [
        ("Label privacy", v["guarantee"], "privacy"),
        ("Mechanism", v["mechanism"], "privacy"),
        ("Noise sigma", v["sigma"], "privacy"),
        ("Protected", "labels only; features and weights are public", "privacy"),
        ("Rows (n) / coefficients (k)", f"{result.n} / {result.k}", ""),
        ("Solver", result.solver, ""),
        ("lambda", v["lambda"], ""),
        ("Status", result.status, ""),
        ("Iterations / epochs / passes", f"{result.iterations} / {result.epochs} / "
                                         f"{result.passes}", ""),
        ("Gradient (inf-norm)", v["grad_norm"], ""),
    ]
    coefs = {c: t.strip() for c, t in v["coefficients"].items()}
    return _html_table("WALR: label-private logistic regression", rows, coefs,
                       [result.message] if result.message else [], walr_headline(result))
