"""privatelr — differentially private logistic regression (R PrivateLR's ``dplr()`` in Python)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version as _version

from . import erm, losses, mechanisms, solver
from .dplr import DPLR, dplr, predict, summary
from .design import scaled
from .exceptions import PrivacyWarning
from .mechanisms import exponential_mechanism
from .models import SVMDP, LogisticRegressionDP
from .tuning import dplr_tune, tune_classification_model
from .walr import NoisyDotProduct, WALRResult, noisy_dot_product, walr, walr_fit
from .accountant import PrivacyAccountant
from .audit import audit
from .exceptions import BudgetExceededError
from .persist import load_model

try:
    __version__ = _version("privatelr")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["LogisticRegressionDP", "SVMDP", "tune_classification_model", "dplr_tune",
           "NoisyDotProduct", "WALRResult", "noisy_dot_product", "walr", "walr_fit",
           "PrivacyAccountant", "BudgetExceededError", "audit", "load_model",
           "DPLR", "dplr", "predict", "scaled", "summary",
           "PrivacyWarning", "erm", "exponential_mechanism", "losses", "mechanisms", "solver",
           "__version__"]
