"""R-style text rendering of fitted ``dplr`` models (``summary``, ``print``).

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

from ..design import r_number

__all__ = ["DPLRSummary", "format_named_vector", "summarize", "VOID_HEADLINE"]


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


def _c_index_text(model) -> str:
    """The training C-index, or R's ``NA`` when the model carries no diagnostics (a release
    loaded from a file: the C-index is a statistic of the training rows, not part of it)."""
    if getattr(model, "diagnostics", None) is None:
        return "NA"
    return r_number(model.CIndex)


def summarize(model) -> DPLRSummary:
    """Build the summary of a fitted ``dplr`` model (duck-typed: any object with its fields)."""
    common = {
        "epsilon": f" Privacy level: {r_number(model.eps)}",
        "lambda": f" Regularization parameter: {r_number(model.lambda_)}",
        "convergence": f" Convergence of optimization : {'TRUE' if model.convergence == 0 else 'FALSE'}",
        "c_index": f" C-index (AUC): {_c_index_text(model)}",
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
