r"""A scikit-learn estimator for ε-differentially private logistic regression.

Needs the optional extra ``pip install "privatelr[sklearn]"``; ``import privatelr`` never imports
this module or scikit-learn.

:class:`DPLogisticRegression` follows scikit-learn's estimator contract (``get_params`` /
``set_params``, ``fit``, ``predict``, ``predict_proba``, ``decision_function``, ``classes_``,
``coef_``, ``intercept_``) and works in a :class:`~sklearn.pipeline.Pipeline`. Every fit is one
run of the engine :func:`privatelr.erm.fit_rows`. ``X`` and ``y`` may be Dask collections: the
fit then runs partition-wise on the cluster (same noise, same coefficients to rounding), and
``predict``, ``predict_proba`` and ``decision_function`` return lazy Dask arrays.

Privacy contract
----------------
* Neighbouring data sets have the same number of rows and differ in one row (JMLR11).
* ``data_norm`` is a **public** bound ``B`` on the L2 norm of each feature vector ``x`` (the
  columns given to ``fit``, without the intercept). With ``clip=True`` (default) rows above
  it are scaled back onto the sphere of radius ``B`` (the fit stays private); with
  ``clip=False`` a private fit with rows above it raises ``ValueError`` (fail closed: nothing
  is released).
* The classes are **declared**: ``classes=[negative, positive]``; without it the labels must
  be 0/1 or bool (a private fit never learns its class labels from the rows — ``np.unique(y)``
  would let one record change the model). A non-private fit (``eps`` 0 or inf) learns them.
* With ``fit_intercept=True`` the design row is ``[1, x]``, whose norm is at most
  :math:`\sqrt{1 + B^2}`; the engine is calibrated with that bound, so the guarantee holds for
  the intercept too (which is penalised like every coefficient).
* Anything fitted on the data *before* this estimator in a pipeline (``StandardScaler``,
  feature selection) looks at the data without privacy: use transformations with public
  constants (e.g. a ``FunctionTransformer`` dividing by known ranges).
* A fitted estimator is a release: it keeps the coefficients, the public calibration and the
  status (:meth:`privatelr.ERMResult.release`), not the engine's solver report (objective
  value, iterations, gradient norm — statistics of the training data). Pickling a fitted
  estimator (``pickle``, ``joblib``) writes only the release and the public settings: the
  ``random_state`` seed or Generator (with which anyone could redraw the noise and subtract
  it) and the clipped-row count ``n_clipped_`` (not private) are left out; the unpickled
  estimator has ``random_state=None``.
* ``lambda_=None`` picks the package's one default
  (:func:`privatelr.calibration.default_lambda`): the smallest λ whose privacy penalty is
  ε/10 for the design bound :math:`B_d`; 0.001 when ``eps`` is 0 or inf. It depends on ``n``
  only, which is public under the neighbouring relation above.

Examples
--------
>>> import numpy as np
>>> from privatelr.sklearn import DPLogisticRegression
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(500, 2)) / np.sqrt(2)
>>> y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
>>> clf = DPLogisticRegression(eps=2.0, classes=["no", "yes"], random_state=0).fit(X, y)
>>> clf.classes_.tolist(), clf.coef_.shape, clf.intercept_.shape
(['no', 'yes'], (1, 2), (1,))
>>> clf.predict_proba(X[:2]).shape
(2, 2)
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from functools import partial

from . import erm
from ._validation import check_bool, check_real
from .backends import as_rows, compute, is_dask
from .calibration import default_lambda, norm_bound
from .mechanisms import check_random_state

__all__ = ["DPLogisticRegression"]


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
        Regulariser λ > 0; None uses :func:`privatelr.calibration.default_lambda`.
    method : {"objective", "output"}, default="objective"
    data_norm : float, default=1.0
        Public bound on the L2 norm of every feature row (intercept excluded).
    clip : bool, default=True
        Clip rows above ``data_norm`` onto it (else a private fit with such rows raises).
    classes : sequence of two labels, optional
        The declared classes, negative first. Without it the labels must be 0/1 or bool (a
        non-private fit learns them).
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
    result_ : privatelr.ERMResult
        What the estimator keeps of the engine's fit: the private coefficients (intercept
        first), the public calibration, ``status`` and ``convergence``. The solver's report
        (objective value, iterations, gradient norm) is a statistic of the training data and is
        not kept.
    n_clipped_ : int
        Training rows whose norm exceeded ``data_norm`` and were clipped onto it (``clip=True``;
        0 with ``clip=False``, where a private fit with such rows raises instead). **Not
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
                 classes=None, random_state=None):
        self.eps = eps
        self.lambda_ = lambda_
        self.method = method
        self.data_norm = data_norm
        self.clip = clip
        self.fit_intercept = fit_intercept
        self.classes = classes
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary only
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        # the parameter name ``lambda_`` ends in "_", which would fool sklearn's default test
        return hasattr(self, "coef_")

    def fit(self, X, y):
        """Fit the private model on ``X`` (n, d) and binary labels ``y``; returns ``self``.

        ``X`` and ``y`` may be Dask collections: the fit then runs partition-wise on the
        cluster (the same pipeline and the same bits as in memory)."""
        if is_dask(X, y):
            X, y = self._dask_data(X, y, reset=True)
        else:
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
            check_classification_targets(y)
            kind = type_of_target(y, input_name="y", raise_unknown=True)
            if kind not in ("binary", "unknown") and np.unique(y).size > 2:
                raise ValueError(f"Only binary classification is supported. The type of the "
                                 f"target is {kind}.")
        if self.method not in ("objective", "output"):
            raise ValueError(f"method must be 'objective' or 'output', got {self.method!r}")
        for name in ("clip", "fit_intercept"):
            check_bool(name, getattr(self, name))
        B = check_real("data_norm", self.data_norm, low=0.0, low_open=True)
        eps = check_real("eps", self.eps, low=0.0, allow_inf=True)
        private = eps > 0 and not np.isinf(eps)
        classes, y01 = _declared_classes(self.classes, y, learn=not private)
        k = int(self.fit_intercept)
        rows = as_rows(X, y01)
        if k:
            rows = rows.mapped(_with_intercept, rows.d + 1)
        design_norm = norm_bound(B, bool(k))
        if self.lambda_ is None:
            lam = default_lambda(rows.n, eps, data_norm=design_norm)
        else:
            if not isinstance(self.lambda_, numbers.Real):
                raise TypeError(f"lambda_ must be a positive number or None, got {self.lambda_!r}")
            lam = check_real("lambda_", self.lambda_, low=0.0, low_open=True)
        options = erm.check_options(lambda_=lam, eps=eps, method=self.method, data_norm=design_norm)
        scan = rows.scan(bound=B, start=k)              # the covariates against data_norm
        if not (scan.n_over and self.clip):
            scan.check_magnitude("X")
        n_clipped = 0
        if scan.n_over and self.clip:
            rows, n_clipped = rows.clipped(B, start=k), scan.n_over
        elif scan.n_over and private:
            raise ValueError(erm.OUTSIDE_BOUND.format(what="X", data_norm=B, more=""))
        result = erm.fit_rows(rows, rng=check_random_state(self.random_state),
                              scan=scan.clipped_to(options["data_norm"]) if n_clipped else scan,
                              **options)
        coef = result.coef
        if self.fit_intercept:
            self.intercept_ = coef[:1].copy()
            self.coef_ = coef[1:].reshape(1, -1)
        else:
            self.intercept_ = np.zeros(1)
            self.coef_ = coef.reshape(1, -1)
        self.classes_ = classes
        self.lambda_used_ = result.lambda_
        self.result_ = result.release()  # the release only, no solver report
        self.n_clipped_ = int(n_clipped)
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

    def _dask_data(self, X, y=None, *, reset: bool):
        """Dask inputs checked as :func:`~sklearn.utils.validation.validate_data` checks
        in-memory ones (lazily: the values are checked by the fit's scan)."""
        from .backends.dask import dask_matrix, dask_vector

        names = [c for c in getattr(X, "columns", [])]
        X = dask_matrix(X)
        if reset:
            self.n_features_in_ = int(X.shape[1])
            if names and all(isinstance(c, str) for c in names):
                self.feature_names_in_ = np.asarray(names, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        return X, (None if y is None else dask_vector("y", y))

    def decision_function(self, X) -> np.ndarray:
        """Log-odds of ``classes_[1]``, shape (n,); a lazy Dask vector for Dask ``X``."""
        check_is_fitted(self)
        if is_dask(X):
            from .backends.dask import map_row_blocks

            X, _ = self._dask_data(X, reset=False)
            return map_row_blocks(X, partial(_log_odds, coef=self.coef_[0],
                                             intercept=self.intercept_[0]))
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return _log_odds(X, coef=self.coef_[0], intercept=self.intercept_[0])

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n, 2), columns in the order of ``classes_``."""
        z = self.decision_function(X)
        p1 = 0.5 * (1.0 + np.tanh(0.5 * z))  # logistic function without overflow
        return np.stack([1.0 - p1, p1], axis=1)

    def predict_log_proba(self, X) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed stably."""
        z = self.decision_function(X)
        return np.stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)], axis=1)

    def predict(self, X) -> np.ndarray:
        """Predicted labels (``classes_[1]`` where the log-odds are positive)."""
        z = self.decision_function(X)  # checks fitted state first
        return np.where(z > 0, self.classes_[1], self.classes_[0])


def _with_intercept(X: np.ndarray) -> np.ndarray:
    return np.concatenate([np.ones((X.shape[0], 1)), X], axis=1)


def _log_odds(X: np.ndarray, *, coef: np.ndarray, intercept: float) -> np.ndarray:
    return X @ coef + intercept


def _declared_classes(classes, y: np.ndarray, *, learn: bool):
    """``(classes_, y coded 0/1)``: declared classes, 0/1 or bool labels, or (``learn``, a
    non-private fit) the two values of ``y``."""
    if classes is not None:
        if isinstance(classes, (str, bytes)) or not hasattr(classes, "__len__") or \
                len(classes) != 2 or classes[0] == classes[1]:
            raise ValueError(f"classes must list two distinct labels [negative, positive], got "
                             f"{classes!r}")
        declared = np.asarray(classes)
        (inside,) = compute(np.isin(y, declared).all())      # one pass over a Dask vector
        if not inside:
            raise ValueError(f"y holds labels outside classes={list(declared)}; declare every "
                             "label (or map the others first)")
        return declared, (y == declared[1]).astype(np.float64)
    values = np.asarray(np.unique(y))                      # computed for a Dask vector
    if is_dask(y) and values.dtype.kind == "f" and not np.all(values == np.round(values)):
        raise ValueError("Unknown label type: continuous. Maybe you are trying to fit a "
                         "classifier, which expects discrete classes on a regression target "
                         "with continuous values.")
    if learn:
        if values.size != 2:
            raise ValueError(f"Only binary classification is supported: y needs exactly 2 "
                             f"classes, got {values.size} class(es)")
        return values, (y == values[1]).astype(np.float64)
    if y.dtype == np.bool_:
        return np.array([False, True]), y.astype(np.float64)
    if np.issubdtype(y.dtype, np.number) and set(values.tolist()) <= {0, 1}:
        return np.array([0, 1]), (y == 1).astype(np.float64)
    raise ValueError("the classes of a private fit are declared, never learned from the labels "
                     "(one record could change them): pass classes=[negative, positive], or "
                     "use 0/1 or bool labels")
