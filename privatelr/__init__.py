"""privatelr — differentially private logistic regression (R PrivateLR's ``dplr()`` in Python).

Entry points
------------
dplr, predict, summary, scaled, DPLR      R PrivateLR's front end (formulas, factors, result)
MulticlassDPLR                             dplr(..., multiclass="multinomial" | "ovr")'s result
erm.fit                                    the Chaudhuri–Monteleoni–Sarwate engine on a design matrix
multinomial.fit                            the same for K declared classes (softmax)
LogisticRegressionDP, SVMDP                DPpack-style models
tune_classification_model, dplr_tune       private hyperparameter selection
noisy_dot_product, walr_fit, walr          WALR label-private training
PrivacyAccountant, spend_parallel, audit   budget accounting and empirical privacy audits
load_model                                 saved models (``DPLR.to_json``)

Data flow (one pipeline for every backend): declarations → schema (:mod:`privatelr.design`) →
rows (:mod:`privatelr.rows`, :mod:`privatelr.backends`) → calibration
(:mod:`privatelr.calibration`) → release (:mod:`privatelr.erm`, :mod:`privatelr.mechanisms`) →
result (:mod:`privatelr.results`) → predict / summary / save (:mod:`privatelr.report`,
:mod:`privatelr.persist`).
"""

from __future__ import annotations

import importlib

from ._version import __version__

# Names are imported when first used (PEP 562), so that ``import privatelr`` and the command
# line's ``--help`` start without loading numpy, pandas, scipy and formulaic. Every name below
# stays importable as ``from privatelr import dplr``; ``dir(privatelr)`` lists them.
#: public name -> (module, attribute); attribute None: the module itself
_EXPORTS = {
    "datasets": (".datasets", None), "erm": (".erm", None),
    "experiments": (".experiments", None), "losses": (".losses", None),
    "mechanisms": (".mechanisms", None), "solver": (".solver", None),
    "multinomial": (".multinomial", None),
    "plot": (".report.plots", None), "c_index": (".report", "c_index"),
    "PrivacyAccountant": (".accountant", "PrivacyAccountant"), "dplr": ("._dplr", "dplr"),
    "spend_parallel": (".accountant", "spend_parallel"),
    "audit": (".auditing", "audit"), "PublicBounds": (".bounds", "PublicBounds"),
    "public_bounds": (".bounds", "public_bounds"),
    "default_lambda": (".calibration", "default_lambda"), "scaled": (".design", "scaled"),
    "DPLR": (".results", "DPLR"), "MulticlassDPLR": (".multiclass", "MulticlassDPLR"),
    "ERMResult": (".results", "ERMResult"),
    "WALRResult": (".results", "WALRResult"), "predict": (".results", "predict"),
    "summary": (".results", "summary"),
    "BudgetExceededError": (".exceptions", "BudgetExceededError"),
    "PrivacyWarning": (".exceptions", "PrivacyWarning"),
    "exponential_mechanism": (".mechanisms", "exponential_mechanism"),
    "SVMDP": (".models", "SVMDP"), "LogisticRegressionDP": (".models", "LogisticRegressionDP"),
    "load_model": (".persist", "load_model"), "dplr_tune": (".tuning", "dplr_tune"),
    "tune_classification_model": (".tuning", "tune_classification_model"),
    "NoisyDotProduct": (".label_dp", "NoisyDotProduct"),
    "noisy_dot_product": (".label_dp", "noisy_dot_product"), "walr": (".label_dp", "walr"),
    "walr_fit": (".label_dp", "walr_fit"),
    "inference": (".inference", None), "vcov": (".inference", "vcov"),
    "confint": (".inference", "confint"), "tidy": (".inference", "tidy"),
    "coef_table": (".inference", "coef_table"),
    "inference_plan": (".inference", "inference_plan"),
}


def __getattr__(name: str):
    """Import a public name (or any submodule) on first use, then keep it in the module."""
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        value = importlib.import_module(module, __name__)
        if attr is not None:
            value = getattr(value, attr)
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    # the dplr front end
    "DPLR", "MulticlassDPLR", "dplr", "predict", "summary", "scaled", "public_bounds", "PublicBounds",
    # inference
    "inference", "vcov", "confint", "tidy", "coef_table", "inference_plan",
    # engine and mechanisms
    "erm", "ERMResult", "default_lambda", "losses", "mechanisms", "solver", "multinomial",
    "exponential_mechanism",
    # DPpack-style models and tuning
    "LogisticRegressionDP", "SVMDP", "tune_classification_model", "dplr_tune",
    # WALR
    "NoisyDotProduct", "WALRResult", "noisy_dot_product", "walr", "walr_fit",
    # evidence and accounting
    "PrivacyAccountant", "spend_parallel", "BudgetExceededError", "PrivacyWarning", "audit",
    # persistence, data, experiments, plots
    "load_model", "datasets", "experiments", "plot", "c_index",
    "__version__",
]
