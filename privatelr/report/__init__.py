"""Reporting: R's summary text, Jupyter HTML, the C-index and ROC helpers, and plots.

Reporting reads fitted models by their fields (duck typing) and never imports a result class, so
the data flow stays one way: results → report. Plots import matplotlib only when drawn.
"""

from . import plots
from .html import dplr_html, walr_html
from .roc import best_threshold, c_index, sens_spec
from .text import (VOID_HEADLINE, DPLRSummary, format_coefficients, format_named_vector,
                   guarantee_headline, summarize, summary_values)

__all__ = ["DPLRSummary", "summarize", "format_named_vector", "format_coefficients",
           "summary_values", "guarantee_headline", "VOID_HEADLINE", "dplr_html", "walr_html",
           "c_index", "sens_spec", "best_threshold", "plots"]
