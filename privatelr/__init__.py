"""privatelr — differentially private logistic regression (R PrivateLR's ``dplr()`` in Python).

Entry points
------------
dplr, predict, summary, scaled, DPLR      R PrivateLR's front end (formulas, factors, result)
erm.fit                                    the Chaudhuri–Monteleoni–Sarwate engine on a design matrix
LogisticRegressionDP, SVMDP                DPpack-style models
tune_classification_model, dplr_tune       private hyperparameter selection
noisy_dot_product, walr_fit, walr          WALR label-private training
PrivacyAccountant, audit                   budget accounting and empirical privacy audits
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

# Public names are imported when first used (PEP 562), so ``import privatelr`` and the command
# line's ``--help`` do not pay for numpy, pandas, scipy and formulaic. Each entry: the module
# that defines the name, and the attribute in it (None: the module itself).
_LAZY = {
    # the dplr front end
    "DPLR": (".results", "DPLR"), "dplr": ("._dplr", "dplr"),
    "predict": (".results", "predict"), "summary": (".results", "summary"),
    "scaled": (".design", "scaled"), "public_bounds": (".bounds", "public_bounds"),
    "PublicBounds": (".bounds", "PublicBounds"),
    # engine and mechanisms
    "erm": (".erm", None), "ERMResult": (".results", "ERMResult"),
    "default_lambda": (".calibration", "default_lambda"), "losses": (".losses", None),
    "mechanisms": (".mechanisms", None), "solver": (".solver", None),
    "exponential_mechanism": (".mechanisms", "exponential_mechanism"),
    # DPpack-style models and tuning
    "LogisticRegressionDP": (".models", "LogisticRegressionDP"), "SVMDP": (".models", "SVMDP"),
    "tune_classification_model": (".tuning", "tune_classification_model"),
    "dplr_tune": (".tuning", "dplr_tune"),
    # WALR
    "NoisyDotProduct": (".label_dp", "NoisyDotProduct"), "WALRResult": (".results", "WALRResult"),
    "noisy_dot_product": (".label_dp", "noisy_dot_product"), "walr": (".label_dp", "walr"),
    "walr_fit": (".label_dp", "walr_fit"),
    # evidence and accounting
    "PrivacyAccountant": (".accountant", "PrivacyAccountant"),
    "BudgetExceededError": (".exceptions", "BudgetExceededError"),
    "PrivacyWarning": (".exceptions", "PrivacyWarning"), "audit": (".auditing", "audit"),
    # persistence, data, experiments, plots
    "load_model": (".persist", "load_model"), "datasets": (".datasets", None),
    "experiments": (".experiments", None), "plot": (".report.plots", None),
    "c_index": (".report", "c_index"),
}

__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str):
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'privatelr' has no attribute {name!r}") from None
    value = importlib.import_module(module, __name__)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value                  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
