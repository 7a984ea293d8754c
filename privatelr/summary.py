"""R-style text rendering of :class:`~privatelr.dplr.DPLR` results (``summary``, ``print``).

The layout mirrors PrivateLR's ``print.summary.dplr``: groups of lines separated by blank lines —
the formula; ``Privacy level``, ``Regularization parameter``, ``Convergence of optimization``,
``C-index (AUC)``, ``Status`` (and the projection dimension); the coefficients printed like R's
named numeric vector (7 significant digits, right-aligned names, 80 columns). privatelr appends one
more group saying how the privacy was calibrated and which printed numbers are *not* private.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping


from .design import r_number

__all__ = ["DPLRSummary", "format_named_vector", "summarize", "dplr_html", "walr_html"]


def _sig_exp(x: float, digits: int) -> tuple[int, int]:
    """(number of significant digits needed, decimal exponent) of |x| at ``digits`` precision."""
    if x == 0 or not math.isfinite(x):
        return 1, 0
    s = f"{abs(x):.{digits - 1}e}"
    mant, exp = s.split("e")
    mant = mant.replace(".", "").rstrip("0")
    return max(len(mant), 1), int(exp)


def _format_reals(values, digits: int = 7) -> list[str]:
    """Format numbers with a common layout as R's ``formatReal`` does (fixed unless too wide)."""
    vals = [float(v) for v in values]
    finite = [v for v in vals if math.isfinite(v)]
    if not finite:
        return [r_number(v) if not math.isnan(v) else "NaN" for v in vals]
    neg = any(v < 0 for v in finite)
    se = [_sig_exp(v, digits) for v in finite]
    rgt = max(max(0, s - e - 1) for s, e in se)
    left = max((e + 1) if e >= 0 else 1 for s, e in se)
    w_fixed = neg + left + (rgt > 0) + rgt
    mxsig = max(s for s, _ in se)
    mxe = max(abs(e) for _, e in se)
    w_sci = neg + (mxsig > 1) + (mxsig - 1) + 1 + 2 + max(2, len(str(mxe)))
    out = []
    for v in vals:
        if not math.isfinite(v):
            out.append("NaN" if math.isnan(v) else ("Inf" if v > 0 else "-Inf"))
        elif w_fixed <= w_sci:
            out.append(f"{v:.{rgt}f}")
        else:
            m, e = f"{v:.{mxsig - 1}e}".split("e")
            out.append(f"{m}e{e[0]}{e[1:].lstrip('0').zfill(2)}")
    return out


def format_named_vector(values: Mapping[str, float], width: int = 80, digits: int = 7) -> str:
    """Render a named numeric vector the way R's ``print`` does.

    Examples
    --------
    >>> print(format_named_vector({"a": 1.5, "bb": -2.0}))
       a   bb 
     1.5 -2.0 
    """
    names = [str(k) for k in values]
    texts = _format_reals(list(values.values()), digits)
    if not names:
        return "numeric(0)"
    w = max(max(len(n) for n in names), max(len(t) for t in texts))
    per_line = max(1, width // (w + 1))
    lines = []
    for start in range(0, len(names), per_line):
        chunk = range(start, min(start + per_line, len(names)))
        lines.append("".join(names[i].rjust(w) + " " for i in chunk))
        lines.append("".join(texts[i].rjust(w) + " " for i in chunk))
    return "\n".join(lines)


@dataclass
class DPLRSummary:
    """What ``summary(model)`` returns; ``print`` shows R's layout.

    Attributes
    ----------
    formula : str
    common : dict
        Label -> line (``epsilon``, ``lambda``, ``convergence``, ``c_index``, ``status``,
        ``rp_dim``), as R's ``summary.dplr`` list.
    coefficients : dict
        Column name -> coefficient.
    notes : list of str
        privatelr's extra lines (calibration; what is not private).
    """

    formula: str
    common: dict
    coefficients: dict
    notes: list = field(default_factory=list)

    def __str__(self) -> str:
        parts = [self.formula + " \n"]
        parts.append("".join(line + " \n" for line in self.common.values()))
        parts.append(format_named_vector(self.coefficients) + "\n")
        if self.notes:
            parts.append("".join(line + "\n" for line in self.notes))
        return "\n".join(parts)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(str(self))

    def _repr_html_(self) -> str:  # Jupyter: the same text, monospaced
        import html

        return "<pre>" + html.escape(str(self)) + "</pre>"


#: The first line of every summary of a fit whose guarantee does not hold.
VOID_HEADLINE = (" NOT PRIVATE: compat='PrivateLR' reproduces R's PrivateLR (norm bound 1 despite "
                 "the intercept, rows not clipped, structure learned from the data); the stated "
                 "eps does not hold.")


def summarize(model) -> DPLRSummary:
    """Build the summary of a fitted :class:`~privatelr.dplr.DPLR` model."""
    common = {
        "epsilon": f" Privacy level: {r_number(model.eps)}",
        "lambda": f" Regularization parameter: {r_number(model.lambda_)}",
        "convergence": f" Convergence of optimization : {'TRUE' if model.convergence == 0 else 'FALSE'}",
        "c_index": f" C-index (AUC): {r_number(model.CIndex)}",
        "status": f" Status: {model.status}",
    }
    if model.did_rp:
        common["rp_dim"] = f" Number of dimensions in random projection: {model.rp_dim}"
    notes = []
    if model.compat == "PrivateLR" and model.method != "nonprivate":
        notes.append(VOID_HEADLINE)
    if model.method == "nonprivate":
        notes.append(" Non-private fit (eps = 0): no privacy guarantee.")
    else:
        how = "objective perturbation" if model.method == "objective" else "output perturbation"
        if model.compat == "PrivateLR":
            bound = ("PrivateLR calibration, norm bound 1 (intercept ignored: the guarantee "
                     "does not hold as stated)")
        elif model.spec.intercept:
            bound = (f"norm bound {r_number(round(model.norm_bound, 6))} = sqrt(data_norm^2 + 1), "
                     f"data_norm {r_number(model.data_norm)} plus the intercept")
        else:
            bound = f"norm bound data_norm = {r_number(model.data_norm)}"
        notes.append(f" Privacy: {how}, eps' = {r_number(round(model.eps_eff, 10))}; {bound}.")
        extra = ["the C-index"]
        if model.threshold != "fixed":
            extra.append(f"the {model.threshold} threshold")
        if model.scaled:
            extra.append("the do_scale centre/scale")
        listed = extra[0] if len(extra) == 1 else ", ".join(extra[:-1]) + " and " + extra[-1]
        if model.compat is None:
            notes.append(" Note: only the coefficients are eps-differentially private; "
                         f"{listed} {'is' if len(extra) == 1 else 'are'} computed from the "
                         "data without noise.")
    notes.append(f" Classification threshold (p.tr): {r_number(model.p_tr)}")
    coefs = {k: float(v) for k, v in model.coefficients.items()}
    return DPLRSummary(formula=model.formula, common=common, coefficients=coefs, notes=notes)


# ---------------------------------------------------------------------------------------------
# Jupyter display (``_repr_html_``)
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
        ("C-index (AUC), training data", r_number(model.CIndex), "leak"),
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
