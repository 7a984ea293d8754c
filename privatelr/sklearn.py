r"""A scikit-learn estimator for ε-differentially private logistic regression.

Needs the optional extra ``pip install "privatelr[sklearn]"``; ``import privatelr`` never imports
this module or scikit-learn.

:class:`DPLogisticRegression` follows scikit-learn's estimator contract (``get_params`` /
``set_params``, ``fit``, ``predict``, ``predict_proba``, ``decision_function``, ``classes_``,
``coef_``, ``intercept_``) and works in a :class:`~sklearn.pipeline.Pipeline`. Every fit is one
call of the engine :func:`privatelr.erm.fit`.

Privacy contract
----------------
* Neighbouring data sets have the same number of rows and differ in one row (JMLR11).
* ``data_norm`` is a **public** bound ``B`` on the L2 norm of each feature vector ``x`` (the
  columns given to ``fit``, without the intercept). With ``clip=True`` (default) rows above
  it are scaled back onto the sphere of radius ``B`` (the fit stays private); with
  ``clip=False`` rows above it trigger a :class:`~privatelr.PrivacyWarning`: the guarantee
  does not hold for them.
* With ``fit_intercept=True`` the design row is ``[1, x]``, whose norm is at most
  :math:`\sqrt{1 + B^2}`; the engine is calibrated with that bound, so the guarantee holds for
  the intercept too (which is penalised like every coefficient).
* Anything fitted on the data *before* this estimator in a pipeline (``StandardScaler``,
  feature selection) looks at the data without privacy: use transformations with public
  constants (e.g. a ``FunctionTransformer`` dividing by known ranges).
* A fitted estimator is a release: it keeps the coefficients, the public calibration and the
  status (:class:`privatelr.models.FitRelease`), not the engine's solver report (objective
  value, iterations, gradient norm — statistics of the training data). Pickling a fitted
  estimator (``pickle``, ``joblib``) writes only the release and the public settings: the
  ``random_state`` seed or Generator (with which anyone could redraw the noise and subtract
  it) and the clipped-row count ``n_clipped_`` (not private) are left out; the unpickled
  estimator has ``random_state=None``.
* ``lambda_=None`` picks PrivateLR's default, generalised to the bound: the smallest λ with
  :math:`2\log(1 + cB_d^2/(n\lambda)) = \varepsilon/10` (``c = 1/4``, :math:`B_d` the design
  bound), i.e. :math:`\lambda = cB_d^2/(n(e^{\varepsilon/20} - 1))`; 0.001 when ``eps`` is 0 or
  inf. It depends on ``n`` only, which is public under the neighbouring relation above.

Examples
--------
>>> import numpy as np
>>> from privatelr.sklearn import DPLogisticRegression
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(500, 2)) / np.sqrt(2)
>>> y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
>>> clf = DPLogisticRegression(eps=2.0, random_state=0).fit(X, y)
>>> clf.classes_.tolist(), clf.coef_.shape, clf.intercept_.shape
(['no', 'yes'], (1, 2), (1,))
>>> clf.predict_proba(X[:2]).shape
(2, 2)
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from . import erm
from ._validation import check_real
from .models import FitRelease

__all__ = ["DPLogisticRegression"]


def default_lambda(n: int, eps: float, design_norm: float = 1.0, curvature: float = 0.25) -> float:
    r"""PrivateLR's default regulariser, generalised to a design bound ``B``.

    The smallest λ whose objective-perturbation penalty :math:`2\log(1 + cB^2/(n\lambda))`
    equals ``eps/10`` (PrivateLR's ``dplr`` with ``B = 1``); 0.001 when ``eps`` is 0 or inf.
    That is :math:`\lambda = cB^2/(n(e^{\varepsilon/20} - 1))`, computed as written when every
    intermediate is a normal double, else from its logarithm; a λ beyond the double range
    raises ``ValueError`` naming ``eps`` or ``data_norm`` (``B`` is the design bound derived
    from it).

    Examples
    --------
    >>> round(default_lambda(150, 1.0), 10)
    0.0325069442
    """
    if eps == 0 or np.isinf(eps):
        return 0.001
    import math

    from ._validation import _TINY, exp_or_raise, log_expm1

    em = math.expm1(eps / 20.0) if eps < 14000.0 else math.inf
    num = curvature * design_norm ** 2 if design_norm < 1e150 else math.inf
    if _TINY <= em < math.inf and _TINY <= num < math.inf:
        lam = float(num / (n * em))
        if 0.0 < lam < math.inf:
            return lam
    log_em = log_expm1(eps, 20.0)
    terms = {"eps": (eps, -log_em), "data_norm": (design_norm, 2.0 * math.log(design_norm)),
             "n": (n, -math.log(n)), "curvature": (curvature, math.log(curvature))}
    return exp_or_raise(
        sum(v[1] for v in terms.values()), terms,
        "the default lambda_ curvature*B**2/(n*(exp(eps/20) - 1)) (B: the design's norm bound "
        "from data_norm; the smallest lambda_ whose privacy penalty is eps/10)",
        {"eps": ("increase eps, or pass lambda_ explicitly",
                 "pass lambda_ explicitly (e.g. lambda_=0.001), or eps=inf for a non-private fit"),
         "data_norm": ("rescale X by a public constant so that data_norm is nearer 1, or pass "
                       "lambda_ explicitly", "rescale X by a public constant so that data_norm "
                       "is nearer 1, or pass lambda_ explicitly"),
         "n": ("", "pass lambda_ explicitly"), "curvature": ("", "pass lambda_ explicitly")})


class DPLogisticRegression(ClassifierMixin, BaseEstimator):
    r"""ε-differentially private L2-regularised logistic regression (binary), scikit-learn API.

    Minimises :math:`\frac1n\sum_i \log(1 + e^{-y_i(w^\top x_i + b)}) + \frac{\lambda}{2}
    (\|w\|^2 + b^2)` with objective or output perturbation (Chaudhuri, Monteleoni & Sarwate,
    JMLR 2011); see the module docstring for the privacy contract and
    :mod:`privatelr.erm` for the noise scales.

    Parameters
    ----------
    eps : float, default=1.0
        Privacy level ε >= 0; 0 or ``inf`` fits without privacy (PrivateLR's convention for 0).
    lambda_ : float or None, default=None
        Regulariser λ > 0; None uses :func:`default_lambda`.
    method : {"objective", "output"}, default="objective"
    data_norm : float, default=1.0
        Public bound on the L2 norm of every feature row (intercept excluded).
    clip : bool, default=True
        Clip rows above ``data_norm`` onto it (else warn with ``PrivacyWarning``).
    fit_intercept : bool, default=True
    random_state : int, numpy.random.Generator or None, default=None
        Source of the privacy noise. ``None`` draws fresh noise at every fit.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    lambda_used_ : float
        The regulariser actually used (λ*, larger, when objective perturbation had to adjust).
    result_ : privatelr.models.FitRelease
        What the estimator keeps of the engine's fit: the private coefficients (intercept
        first), the public calibration, ``status`` and ``convergence``. The solver's report
        (objective value, iterations, gradient norm) is a statistic of the training data and is
        not kept.
    n_clipped_ : int
        Training rows whose norm exceeded ``data_norm`` and were clipped onto it (``clip=True``;
        0 with ``clip=False``, where such rows trigger a ``PrivacyWarning`` instead). **Not
        private** — a count over the training data, for the data holder: it is not part of the
        release and is left out when the estimator is pickled.
    n_features_in_ : int
    feature_names_in_ : ndarray
        Only when ``X`` had string column names.

    Notes
    -----
    Pickling a fitted estimator keeps only the release (see the module docstring): the
    unpickled copy predicts identically but has ``random_state=None`` and no ``n_clipped_``.
    """

    def __init__(self, eps: float = 1.0, lambda_: float | None = None, method: str = "objective",
                 data_norm: float = 1.0, clip: bool = True, fit_intercept: bool = True,
                 random_state=None):
        self.eps = eps
        self.lambda_ = lambda_
        self.method = method
        self.data_norm = data_norm
        self.clip = clip
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary only
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        # the parameter name ``lambda_`` ends in "_", which would fool sklearn's default test
        return hasattr(self, "coef_")

    def fit(self, X, y):
        """Fit the private model on ``X`` (n, d) and binary labels ``y``; returns ``self``."""
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(f"Only binary classification is supported: y needs exactly 2 "
                             f"classes, got {classes.size} class(es) ({classes[:5].tolist()})")
        if self.method not in ("objective", "output"):
            raise ValueError(f"method must be 'objective' or 'output', got {self.method!r}")
        for name in ("clip", "fit_intercept"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
        B = check_real("data_norm", self.data_norm, low=0.0, low_open=True)
        eps = check_real("eps", self.eps, low=0.0, allow_inf=True)
        n = X.shape[0]
        X, _, n_clipped = erm.check_data_norm(X, B, bool(self.clip), name="X", stacklevel=3)
        if self.fit_intercept:
            design = np.concatenate([np.ones((n, 1)), X], axis=1)
            design_norm = float(np.hypot(1.0, B))
        else:
            design, design_norm = X, B
        if self.lambda_ is None:
            lam = default_lambda(n, eps, design_norm)
        else:
            if not isinstance(self.lambda_, numbers.Real):
                raise TypeError(f"lambda_ must be a positive number or None, got {self.lambda_!r}")
            lam = check_real("lambda_", self.lambda_, low=0.0, low_open=True)
        y01 = (y == classes[1]).astype(np.float64)
        result = erm.fit(design, y01, lambda_=lam, eps=eps, method=self.method,
                         data_norm=design_norm, clip=False, norm_check=False,
                         random_state=self.random_state)
        coef = result.coef
        if self.fit_intercept:
            self.intercept_ = coef[:1].copy()
            self.coef_ = coef[1:].reshape(1, -1)
        else:
            self.intercept_ = np.zeros(1)
            self.coef_ = coef.reshape(1, -1)
        self.classes_ = classes
        self.lambda_used_ = result.lambda_
        self.result_ = FitRelease.from_result(result)  # the release only, no solver report
        self.n_clipped_ = int(n_clipped)  # the engine was told norm_check=False: count it here
        return self

    def __getstate__(self):
        # A fitted estimator is a release: its pickle holds the coefficients, the public
        # calibration and the settings, never the seed (which would let anyone redraw the noise)
        # nor the non-private clipped-row count.
        state = super().__getstate__()
        if "coef_" in state:
            state = dict(state)
            state.pop("n_clipped_", None)
            if state.get("random_state") is not None:
                state["random_state"] = None
        return state

    def decision_function(self, X) -> np.ndarray:
        """Log-odds of ``classes_[1]``, shape (n,)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_[0] + self.intercept_[0]

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n, 2), columns in the order of ``classes_``."""
        z = self.decision_function(X)
        p1 = 0.5 * (1.0 + np.tanh(0.5 * z))  # logistic function without overflow
        return np.column_stack([1.0 - p1, p1])

    def predict_log_proba(self, X) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed stably."""
        z = self.decision_function(X)
        return np.column_stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)])

    def predict(self, X) -> np.ndarray:
        """Predicted labels (``classes_[1]`` where the log-odds are positive)."""
        z = self.decision_function(X)  # checks fitted state first
        return self.classes_[(z > 0).astype(int)]
