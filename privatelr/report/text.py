"""R-style text rendering of fitted ``dplr`` models (``summary``, ``print``).

The layout mirrors PrivateLR's ``print.summary.dplr``: groups of lines separated by blank lines —
the formula; ``Privacy level``, ``Regularization parameter``, ``Convergence of optimization``,
``C-index (AUC)``, ``Status`` (and the projection dimension); the coefficients printed like R's
named numeric vector (7 significant digits, right-aligned names, 80 columns). privatelr appends one
more group saying how the privacy was calibrated and which printed numbers are *not* private.
Lines longer than 80 columns wrap: the formula as R's ``deparse`` breaks it (after an operator,
continuation lines indented by four spaces), privatelr's notes at word boundaries.

Every number shown — in this text and in the Jupyter HTML (:mod:`privatelr.report.html`) — is
formatted here, once: :func:`summary_values` for the scalar fields (R's ``paste``: 15 significant
digits), :func:`format_coefficients` for the coefficients (R's ``print``: 7 significant digits,
a common layout), :func:`guarantee_headline` for the warning that leads a fit whose guarantee
does not hold.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..design import r_number

__all__ = ["DPLRSummary", "format_named_vector", "format_coefficients", "summarize",
           "summary_values", "guarantee_headline", "wrap_formula", "wrap_note", "walr_values",
           "walr_headline", "walr_text", "VOID_HEADLINE", "WIDTH"]

#: Line width of the text summaries (R's default ``options(width = 80)``).
WIDTH = 80


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


def format_coefficients(values: Mapping[str, float], digits: int = 7) -> dict:
    """Name -> text of each number, formatted together as R's ``print`` formats a numeric
    vector (``digits`` significant digits, one common number of decimals, fixed unless too wide).

    Examples
    --------
    >>> format_coefficients({"a": 1.5, "b": -2.0, "c": 0.123456789})
    {'a': '1.5000000', 'b': '-2.0000000', 'c': '0.1234568'}
    """
    names = [str(k) for k in values]
    return dict(zip(names, _format_reals(list(values.values()), digits)))


def format_named_vector(values: Mapping[str, float], width: int = WIDTH, digits: int = 7) -> str:
    """Render a named numeric vector the way R's ``print`` does.

    Examples
    --------
    >>> print(format_named_vector({"a": 1.5, "bb": -2.0}))
       a   bb 
     1.5 -2.0 
    """
    names = [str(k) for k in values]
    texts = list(format_coefficients(values, digits).values())
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
    table : pandas.DataFrame or None
        glm's coefficient table (:func:`privatelr.coef_table`) when the model has inference.
    table_title : str
    per_class : dict or None
        A multiclass model's coefficients: class label -> (column name -> coefficient), one
        vector printed per class (``coefficients`` is then empty).
    headline : str or None
        The warning that leads the view when the ε guarantee does not hold (``NOT PRIVATE:
        ...``; :func:`guarantee_headline`).
    """

    formula: str
    common: dict
    coefficients: dict
    notes: list = field(default_factory=list)
    table: Any = None
    table_title: str = ""
    per_class: dict | None = None
    headline: str | None = None

    def __str__(self) -> str:
        parts = [wrap_note(self.headline) + "\n"] if self.headline else []
        parts.append(wrap_formula(self.formula) + " \n")
        parts.append("".join(line + " \n" for line in self.common.values()))
        if self.per_class is None:
            parts.append(format_named_vector(self.coefficients) + "\n")
        for label, coefs in (self.per_class or {}).items():
            parts.append(f"Coefficients of class {label}:\n" + format_named_vector(coefs) + "\n")
        if self.table is not None:
            title = textwrap.fill(self.table_title, width=WIDTH, break_long_words=False)
            parts.append(title + "\n" + format_table(self.table) + "\n")
        if self.notes:
            parts.append("".join(wrap_note(line) + "\n" for line in self.notes))
        return "\n".join(parts)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(str(self))

    def _repr_html_(self) -> str:  # Jupyter: the same text, monospaced
        import html

        return "<pre>" + html.escape(str(self)) + "</pre>"


#: The first of privatelr's notes in the text summary of a ``compat="PrivateLR"`` fit (R's
#: layout keeps the formula first) and the headline of its HTML view.
VOID_HEADLINE = (" NOT PRIVATE: compat='PrivateLR' reproduces R's PrivateLR (norm bound 1 despite "
                 "the intercept, rows not clipped, structure learned from the data); the stated "
                 "eps does not hold.")


def _c_index_text(model) -> str:
    """The training C-index, or R's ``NA`` when the model carries no diagnostics (a release
    loaded from a file: the C-index is a statistic of the training rows, not part of it)."""
    if getattr(model, "diagnostics", None) is None:
        return "NA"
    return r_number(model.CIndex)


def wrap_formula(formula: str, width: int = WIDTH) -> str:
    """Break a long formula as R's ``deparse`` does: after a ``+`` (or another operator, or a
    space), continuation lines indented by four spaces, each line (with its trailing space) at
    most ``width`` columns when the words allow it (a single longer word stays whole).

    Examples
    --------
    >>> print(wrap_formula("y ~ " + " + ".join(f"x{i}" for i in range(1, 25)), width=40))
    y ~ x1 + x2 + x3 + x4 + x5 + x6 + x7 + 
        x8 + x9 + x10 + x11 + x12 + x13 + 
        x14 + x15 + x16 + x17 + x18 + x19 + 
        x20 + x21 + x22 + x23 + x24
    """
    if len(formula) <= width:
        return formula
    words = formula.split(" ")
    lines, line = [], ""
    for i, word in enumerate(words):
        if not line:
            line = word
            continue
        if word in _OPERATORS:                 # an operator ends its line, never starts one
            line += " " + word
            continue
        nxt = words[i + 1] if i + 1 < len(words) else ""
        need = len(word) + (2 + len(nxt) if nxt in _OPERATORS else 0)   # with "+ " after it
        if len(line) + 1 + need > width and line.strip():
            lines.append(line + " ")
            line = "    " + word
        else:
            line += " " + word
    lines.append(line)
    return "\n".join(lines)


_OPERATORS = frozenset({"+", "-", "*", "/", ":", "%in%", "|", "~", "^"})


def wrap_note(note: str, width: int = WIDTH) -> str:
    """Wrap one of privatelr's note lines at word boundaries, every line led by one space.

    Examples
    --------
    >>> print(wrap_note(" Note: " + "word " * 12, width=30))
     Note: word word word word
     word word word word word
     word word word
    """
    return textwrap.fill(note.strip(), width=width, initial_indent=" ", subsequent_indent=" ",
                         break_long_words=False, break_on_hyphens=False)


def summary_values(model) -> dict:
    """The scalar fields of a ``dplr`` model as the summaries print them (one home for the
    formatting of the text summary and of the HTML view): R's ``paste`` digits, ``eps'`` and
    the penalty rounded to 10 decimals, the norm bound to 6, ``NA`` for a missing C-index.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris(); iris[iris.columns[:4]] /= 12
    >>> v = summary_values(dplr("I(Species == 'setosa') ~ .", iris, eps=1, random_state=0))
    >>> v["eps"], v["lambda"], v["norm_bound"], v["eps_eff"]
    ('1', '0.0650138883102196', '1.414214', '0.9')
    """
    return {
        "eps": r_number(model.eps),
        "lambda": r_number(model.lambda_),
        "eps_eff": r_number(round(model.eps_eff, 10)),
        "penalty": r_number(round(model.penalty, 10)),
        "norm_bound": r_number(round(model.norm_bound, 6)),
        "data_norm": r_number(model.data_norm),
        "convergence": "TRUE" if model.convergence == 0 else "FALSE",
        "c_index": _c_index_text(model),
        "p_tr": r_number(model.p_tr),
    }


def guarantee_headline(model) -> str | None:
    """The warning that leads the view of a ``dplr`` fit whose ε guarantee does not hold
    (``compat="PrivateLR"``, a non-private fit, an accepted non-converged solve), else None.
    Duck-typed: reads ``compat``, ``method`` and ``status``.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris(); iris[iris.columns[:4]] /= 12
    >>> guarantee_headline(dplr("I(Species == 'setosa') ~ .", iris, eps=0))
    'NOT PRIVATE: a non-private fit (eps = 0); no privacy guarantee.'
    >>> guarantee_headline(dplr("I(Species == 'setosa') ~ .", iris, eps=1, random_state=0)) is None
    True
    """
    if getattr(model, "compat", None) == "PrivateLR":
        return VOID_HEADLINE.strip()
    if model.method == "nonprivate":
        return "NOT PRIVATE: a non-private fit (eps = 0); no privacy guarantee."
    if "nonconvergence" in str(getattr(model, "status", "")):
        return ("NOT PRIVATE: the solver did not reach the exact minimiser the guarantee needs "
                "(allow_nonconverged=True); the stated eps does not hold.")
    return None


def table_cells(table):
    """A coefficient table's numbers as text, as glm prints them: 7 significant digits,
    p-values with 3 and ``< 2e-16`` below that (one formatter for the text and HTML views)."""
    shown = table.astype(object)
    for col in shown.columns:
        if col == "Pr(>|z|)":
            shown[col] = [("< 2e-16" if p < 2e-16 else f"{p:.3g}") for p in table[col]]
        else:
            shown[col] = _format_reals(table[col].to_numpy())
    return shown


def format_table(table) -> str:
    """A coefficient table as plain text (:func:`table_cells`)."""
    return table_cells(table).to_string()


def _digits(x: float) -> int:
    """Decimals of R's ``format(x, digits = 5)`` for a deviance (5 significant digits)."""
    import math

    return max(0, 4 - int(math.floor(math.log10(abs(x))))) if x and math.isfinite(x) else 0


def _inference_table(model, odds_ratios: bool, level: float, scale: str = "data"):
    """(table, title, notes): the coefficient table (glm's for a non-private fit; the private
    fit's with its errors; point estimates only without inference), or None and why."""
    from ..inference import coef_table, glm_of
    from ..inference.estimate import unit_matrix

    try:
        table = coef_table(model, level=level, exponentiate=odds_ratios, scale=scale)
    except ValueError as exc:
        return None, "", [f" Standard errors: not shown: {exc}"]
    quality = table.attrs.get("quality")
    what = "Odds ratios" if odds_ratios else "Coefficients"
    if unit_matrix(model) is None:
        units = ""
    elif scale == "data":
        units = " per unit of the data's columns"
    else:
        units = " on the public map's scale (rows name the mapped columns)"
    notes = []
    if glm_of(model) is not None:
        g = glm_of(model)
        title = f"{what}{units} of the unpenalised maximum-likelihood fit (glm):"
        notes.append(f"     Null deviance: {g.null_deviance:.{_digits(g.null_deviance)}f}  on "
                     f"{g.df_null}  degrees of freedom")
        notes.append(f" Residual deviance: {g.deviance:.{_digits(g.deviance)}f}  on "
                     f"{g.df_residual}  degrees of freedom")
        notes.append(f" AIC: {g.aic:.{_digits(g.aic)}f}")
        if model.lambda_ > 0:
            notes.append(f" The table is glm's unpenalised fit; the coefficients above use "
                         f"lambda = {r_number(model.lambda_)}, as R's dplr (lambda_=0 gives "
                         "glm's).")
    elif quality == "none":
        notes.append(" Standard errors: not released (refit with inference=True to get "
                     "private standard errors and intervals; privatelr.inference_plan says "
                     "beforehand what a budget buys).")
        if not odds_ratios:              # the coefficients above are the whole table: once
            return None, "", notes
        title = f"{what}{units} (point estimates; no standard errors without inference):"
    elif model.method == "nonprivate":
        title = (f"{what}{units}: one Newton step from the penalised fit towards glm's "
                 "(glm's exact fit needs the rows in memory; this fit's were not):")
    else:
        title = (f"{what}{units}, with errors from sampling and privacy noise (the estimate is "
                 "the bias-corrected one the coefficients above report):")
        notes.append(" z value: the standard-normal score of the exact p-value (the privacy "
                     "noise is not normal, so it differs from Estimate / Std. Error).")
    if model.inference is not None and model.inference.eps > 0:
        notes.append(f" Inference: eps {r_number(model.inference.eps)} spent on the information "
                     f"matrix, besides eps {r_number(model.eps)} on the coefficients.")
    return table, title, notes


def summarize(model, odds_ratios: bool = False, level: float = 0.95) -> DPLRSummary:
    """Build the summary of a fitted ``dplr`` model (duck-typed: any object with its fields)."""
    v = summary_values(model)
    info = getattr(model, "inference", None)
    eps_line = f" Privacy level: {v['eps']}"
    if info is not None and info.eps > 0:
        eps_line += (f" (coefficients) + {r_number(info.eps)} (inference) = "
                     f"{r_number(model.eps + info.eps)}")
    common = {
        "epsilon": eps_line,
        "lambda": f" Regularization parameter: {v['lambda']}",
        "convergence": f" Convergence of optimization : {v['convergence']}",
        "c_index": f" C-index (AUC): {v['c_index']}",
        "status": f" Status: {model.status}",
    }
    if model.did_rp:
        common["rp_dim"] = f" Number of dimensions in random projection: {model.rp_dim}"
    notes = []
    headline = guarantee_headline(model)          # printed first: NOT PRIVATE leads the view
    if model.method != "nonprivate":
        how = {"objective": "objective perturbation", "output": "output perturbation",
               "gaussian": f"Gaussian objective perturbation, delta = {model.delta:.3g}",
               "amp": f"approximate minima perturbation, delta = {model.delta:.3g}"}[model.method]
        if model.compat == "PrivateLR":
            bound = ("PrivateLR calibration, norm bound 1 (intercept ignored: the guarantee "
                     "does not hold as stated)")
        elif model.spec.intercept:
            bound = (f"norm bound {v['norm_bound']} = sqrt(data_norm^2 + 1), "
                     f"data_norm {v['data_norm']} plus the intercept")
        else:
            bound = f"norm bound data_norm = {v['data_norm']}"
        notes.append(f" Privacy: {how}, eps' = {v['eps_eff']}; {bound}.")
        extra = ["the C-index"]
        if model.threshold != "fixed":
            extra.append(f"the {model.threshold} threshold")
        if model.scaled:
            extra.append("the do_scale centre/scale")
        listed = extra[0] if len(extra) == 1 else ", ".join(extra[:-1]) + " and " + extra[-1]
        if headline is None:
            released = ("the coefficients and the information matrix are" if info is not None
                        else "the coefficients are")
            kind = "(eps, delta)" if model.delta else "eps"
            notes.append(f" Note: only {released} {kind}-differentially private; "
                         f"{listed} {'is' if len(extra) == 1 else 'are'} computed from the "
                         "data without noise.")
    notes.append(f" Classification threshold (p.tr): {v['p_tr']}")
    table, title, extra_notes = _inference_table(model, odds_ratios, level)
    notes.extend(extra_notes)
    coefs = {k: float(c) for k, c in model.coefficients.items()}
    return DPLRSummary(formula=model.formula, common=common, coefficients=coefs, notes=notes,
                       table=table, table_title=title, headline=headline)


def summarize_multiclass(model) -> DPLRSummary:
    """The summary of a multiclass ``dplr`` model (duck-typed: ``classes``, ``labels``,
    ``multiclass``, ``coef``, ``calibration`` fields): R's header lines, the privacy notes and
    one coefficient vector per class.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris(); iris[iris.columns[:4]] /= 12
    >>> m = dplr("Species ~ .", iris, eps=2, multiclass="multinomial", random_state=0)
    >>> text = str(summarize_multiclass(m))
    >>> [line for line in text.splitlines() if line.startswith("Coefficients of class")]
    ['Coefficients of class setosa:', 'Coefficients of class versicolor:', 'Coefficients of class virginica:']
    """
    K = len(model.classes)
    kind = ("multinomial (softmax) model" if model.multiclass == "multinomial" else
            f"one-vs-rest: {K} binary fits")
    common = {
        "epsilon": f" Privacy level: {r_number(model.eps)}",
        "lambda": f" Regularization parameter: {r_number(model.lambda_)}",
        "convergence": " Convergence of optimization : "
                       f"{'TRUE' if model.convergence == 0 else 'FALSE'}",
        "classes": f" Classes ({kind}): {', '.join(model.labels)}",
        "status": f" Status: {model.status}",
    }
    notes = []
    headline = guarantee_headline(model)          # printed first
    if model.method != "nonprivate":
        how = {"objective": "objective perturbation", "output": "output perturbation",
               "gaussian": "Gaussian objective perturbation", "amp":
               "approximate minima perturbation"}[model.method]
        if model.multiclass == "ovr":
            share = f"delta {model.delta / K:.3g} each" if model.delta else ""
            how = (f"{how}, eps {r_number(model.eps / K)} for each class "
                   f"{'(' + share + ')' if share else ''}").rstrip()
        if model.delta:
            how += f"; delta = {model.delta:.3g} in total"
        bound = (f"norm bound {r_number(round(model.norm_bound, 6))} = sqrt(data_norm^2 + 1)"
                 if model.spec.intercept else f"norm bound data_norm = "
                 f"{r_number(model.data_norm)}")
        notes.append(f" Privacy: {how}; eps' = {r_number(round(model.eps_eff, 10))}; {bound}.")
        if headline is None:
            kind = "(eps, delta)" if model.delta else "eps"
            notes.append(f" Note: only the coefficients are {kind}-differentially private.")
    per_class = {label: {str(c): float(v) for c, v in zip(model.spec.columns, model.coef[:, k])}
                 for k, label in enumerate(model.labels)}
    return DPLRSummary(formula=model.formula, common=common, coefficients={}, notes=notes,
                       per_class=per_class, headline=headline)


# ---------------------------------------------------------------------------------------------
# WALR (label-private logistic regression)
# ---------------------------------------------------------------------------------------------

def walr_values(result) -> dict:
    """The numbers of a WALR result as its summaries print them (text and HTML: one home).

    Examples
    --------
    >>> import numpy as np
    >>> from privatelr import noisy_dot_product, walr_fit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(200, 2)); y = (X[:, 0] > 0.5).astype(int)
    >>> rel = noisy_dot_product(X, y, eps=1.0, delta=1e-5, random_state=0)
    >>> walr_values(walr_fit(X, rel, lambda_=0.1))["guarantee"]
    '(eps=1, delta=1e-05)-label-DP'
    """
    if result.mechanism is None:
        guarantee = "unknown: trained from a plain vector"
    elif result.mechanism == "none":
        guarantee = "none: exact dot product (eps = inf), NOT private"
    else:
        guarantee = f"(eps={result.eps:g}, delta={result.delta:g})-label-DP"
    return {
        "guarantee": guarantee,
        "mechanism": result.mechanism if result.mechanism else "unknown",
        "sigma": "" if result.sigma is None else f"{result.sigma:.4g}",
        "lambda": f"{result.lambda_:g}",
        "grad_norm": f"{result.grad_norm:.3g}",
        "coefficients": {str(c): f"{float(v): .6g}" for c, v in zip(result.columns,
                                                                    result.coef)},
    }


def walr_headline(result) -> str | None:
    """The warning that leads the view of a WALR result without a label-privacy guarantee
    (an exact, eps = inf dot product, or a plain vector of unknown origin), else None."""
    if result.mechanism is None:
        return ("GUARANTEE UNKNOWN: trained from a plain vector, not from a NoisyDotProduct "
                "release; nothing says the labels are protected.")
    if result.mechanism == "none":
        return "NOT PRIVATE: trained from the exact dot product (eps = inf)."
    return None


def walr_text(result) -> str:
    """``WALRResult.summary()``: the release's guarantee, the solver and the coefficients.

    Examples
    --------
    >>> import numpy as np
    >>> from privatelr import noisy_dot_product, walr_fit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(200, 2)); y = (X[:, 0] > 0.5).astype(int)
    >>> rel = noisy_dot_product(X, y, eps=1.0, delta=1e-5, random_state=0)
    >>> walr_text(walr_fit(X, rel, lambda_=0.1)).splitlines()[1][:44]
    'Release : (eps=1, delta=1e-05)-label-DP, ana'
    """
    v = walr_values(result)
    if result.mechanism is None:
        release = "trained from a plain vector: privacy guarantee unknown"
    elif result.mechanism == "none":
        release = "exact dot product (eps=inf): NOT private"
    else:
        release = f"{v['guarantee']}, {result.mechanism} Gaussian mechanism, sigma={v['sigma']}"
    lines = ["WALR: label-private logistic regression (Yuan & Lazarsfeld)",
             f"Release : {release}",
             f"Data    : n={result.n}, k={result.k}",
             f"Solver  : {result.solver}, lambda={v['lambda']}, status {result.status}, "
             f"{result.iterations} iterations, gradient {v['grad_norm']}",
             f"Message : {result.message}",
             "Coefficients:"]
    coefs = v["coefficients"]
    width = max((len(c) for c in coefs), default=0)
    lines += [f"  {c:<{width}}  {t}" for c, t in coefs.items()]
    if getattr(result, "inference", None) is not None:
        from ..inference import coef_table

        try:
            table = coef_table(result, level=0.95)
        except ValueError as exc:
            lines.append(f"Standard errors: not shown: {exc}")
        else:
            lines.append("Bias-corrected coefficients, errors from sampling and the release's "
                         "noise (privatelr.inference):")
            lines += format_table(table).splitlines()
    lines.append("Only the labels are protected; features and weights are treated as public.")
    return "\n".join(lines)
