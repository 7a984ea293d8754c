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

from ._version import __version__

from . import datasets, erm, experiments, losses, mechanisms, solver
from .report import c_index
from .report import plots as plot
from .accountant import PrivacyAccountant
from ._dplr import dplr
from .auditing import audit
from .bounds import PublicBounds, public_bounds
from .calibration import default_lambda
from .design import scaled
from .results import DPLR, ERMResult, WALRResult, predict, summary
from .exceptions import BudgetExceededError, PrivacyWarning
from .mechanisms import exponential_mechanism
from .models import SVMDP, LogisticRegressionDP
from .persist import load_model
from .tuning import dplr_tune, tune_classification_model
from .label_dp import NoisyDotProduct, noisy_dot_product, walr, walr_fit


__all__ = [
    # the dplr front end
    "DPLR", "dplr", "predict", "summary", "scaled", "public_bounds", "PublicBounds",
    # engine and mechanisms
    "erm", "ERMResult", "default_lambda", "losses", "mechanisms", "solver",
    "exponential_mechanism",
    # DPpack-style models and tuning
    "LogisticRegressionDP", "SVMDP", "tune_classification_model", "dplr_tune",
    # WALR
    "NoisyDotProduct", "WALRResult", "noisy_dot_product", "walr", "walr_fit",
    # evidence and accounting
    "PrivacyAccountant", "BudgetExceededError", "PrivacyWarning", "audit",
    # persistence, data, experiments, plots
    "load_model", "datasets", "experiments", "plot", "c_index",
    "__version__",
]
