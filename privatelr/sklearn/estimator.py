r"""A scikit-learn estimator for ε-differentially private logistic regression.

Needs the optional extra ``pip install "privatelr[sklearn]"``; ``import privatelr`` never imports
this module or scikit-learn. Import the estimator from :mod:`privatelr.sklearn`.

:class:`DPLogisticRegression` follows scikit-learn's estimator contract (``get_params`` /
``set_params``, ``fit``, ``predict``, ``predict_proba``, ``decision_function``, ``classes_``,
``coef_``, ``intercept_``) and works in a :class:`~sklearn.pipeline.Pipeline`. Every fit is one
run of the engine :func:`privatelr.erm.fit_rows`. ``X`` and ``y`` may be Dask collections: the
fit then runs partition-wise on the cluster (same noise, same coefficients to rounding), and
``predict``, ``predict_proba`` and ``decision_function`` return lazy Dask arrays. ``X`` may be a
``scipy.sparse`` matrix or array (CSR; other formats are converted to CSR once): it is never
densified — the intercept is a stored column of ones, the norms, clipping and solver passes
read the stored values (:mod:`privatelr.backends.sparse`), so a fit needs O(nnz + n + d)
memory and releases the dense fit's coefficients (to rounding) at the same ``random_state``.

Privacy contract
----------------
* Neighbouring data sets have the same number of rows and differ in one row (JMLR11).
* ``data_norm`` is a **public** bound ``B`` on the L2 norm of each feature vector ``x`` (the
  columns given to ``fit``, without the intercept). A private fit with a row above it raises
  ``ValueError`` (fail closed: nothing is released, nothing is charged) — the rule
  :func:`privatelr.dplr` applies, with the same message. The fixes: ``clip=True`` (rows above
  ``B`` are scaled back onto the sphere of radius ``B``, counted in ``n_clipped_``), a larger
  public ``data_norm``, or bounds from :func:`privatelr.public_bounds`.
* The classes are **declared**: ``classes=[negative, positive]``; without it the labels must
  be 0/1 or bool (a private fit never learns its class labels from the rows — ``np.unique(y)``
  would let one record change the model). A non-private fit (``eps`` 0 or inf) learns them.
* With ``fit_intercept=True`` the design row is ``[1, x]``, whose norm is at most
  :math:`\sqrt{1 + B^2}`; the engine is calibrated with that bound, so the guarantee holds for
  the intercept too (which is penalised like every coefficient).
* ``sample_weight`` needs a **public** bound ``A = sample_weight_bound`` in a private fit; a
  weight outside ``[0, A]`` raises ``ValueError``. A neighbouring data set may change one
  row's weight too; the engine calibrates the noise for losses :math:`a_i\ell` with
  :math:`a_i \le A` (its noise scales by ``A``: :mod:`privatelr.calibration`, *Reduction to
  the unit ball*).
* Anything fitted on the data *before* this estimator in a pipeline (``StandardScaler``,
  imputers, feature selection) looks at the data without privacy: a private fit that is the
  last step of a scikit-learn pipeline warns (:class:`~privatelr.exceptions.PrivacyWarning`,
  :func:`privatelr.sklearn.learned_statistics` says what counts). Map the columns with
  public constants instead: :class:`~privatelr.sklearn.PublicBoundsTransformer` with
  ``data_norm="from_bounds"`` (:mod:`privatelr.sklearn.bounds`).
* Every private fit spends ``eps``. With ``accountant=`` the fit is refused
  (:class:`~privatelr.exceptions.BudgetExceededError`) before the data are read when the budget
  would be exceeded, and charged ``eps`` once it is known to be releasable. scikit-learn's
  searches and cross-validation (``GridSearchCV``, ``cross_val_score``) refit the estimator
  on the same data for every fold and candidate: they spend folds × candidates × ``eps`` plus
  the final refit, and a fit inside them warns (:class:`~privatelr.exceptions.PrivacyWarning`).
  For a private choice of hyperparameters use :func:`privatelr.tune_classification_model`
  (which accepts ``DPLogisticRegression`` candidates) or :func:`privatelr.dplr_tune`: they
  spend ``eps`` once.
* A fitted estimator is a release: it keeps the coefficients, the public calibration and the
  status (:meth:`privatelr.ERMResult.release`), not the engine's solver report (objective
  value, gradient norm — statistics of the training data). Pickling a fitted estimator
  (``pickle``, ``joblib``) writes only the release and the public settings: the
  ``random_state`` seed or Generator (with which anyone could redraw the noise and subtract
  it), the accountant, and the diagnostics ``n_clipped_`` and ``n_iter_`` (not private) are
  left out; the unpickled estimator has ``random_state=None`` and ``accountant=None``. Its
  repr, print and notebook view show ``random_state=<given>``, never the seed;
  ``get_params()`` returns the caller's own ``random_state`` (scikit-learn's contract: the
  caller's own object, which ``clone`` and the searches rebuild from — not a release).
* ``alpha=None`` picks the package's one default
  (:func:`privatelr.calibration.default_lambda`): the smallest λ whose privacy penalty is
  ε/10 for the design bound :math:`B_d` (and the weight bound ``A``); 0.001 when ``eps`` is 0
  or inf. It depends on ``n`` only, which is public under the neighbouring relation above.

Which classifier when
---------------------
* :func:`privatelr.dplr` — the port of R's PrivateLR: formulas and data frames, factor levels,
  R-style summaries.
* :class:`DPLogisticRegression` (here) — scikit-learn pipelines and numpy (or Dask) arrays.
* :class:`privatelr.LogisticRegressionDP` — DPpack parity (per-column bounds, ``gamma``) and
  private tuning with :func:`privatelr.tune_classification_model`.

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

import copy
import dataclasses
import inspect
import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from functools import partial

from .. import erm
from .._validation import as_weights, check_bool, check_real, is_sparse, real_vector, \
    with_intercept
from ..accountant import require_budget
from ..backends import as_rows, compute, is_dask
from ..calibration import check_method, default_lambda, default_lambda_inference_output, \
    norm_bound
from ..inference.release import check_inference, split_budget
from ..exceptions import PrivacyWarning
from ..mechanisms import check_random_state
from ..results import SEED_GIVEN
from .pipeline import PipelineChecked, enclosing_pipelines, resolve_data_norm, steps_before, \
    warn_learned

__all__ = ["DPLogisticRegression"]


class _SeedGiven:
    """Stands for a seed in what the estimator shows: prints as ``<given>``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return SEED_GIVEN

#: The estimator's ending of :data:`privatelr.erm.OUTSIDE_BOUND` (the rule dplr applies).
OUTSIDE_HINT = (" (privatelr.public_bounds turns public bounds on the columns into data_norm and a "
                "public map: privatelr.sklearn.PublicBoundsTransformer before "
                "DPLogisticRegression(data_norm='from_bounds')); or fit with eps=0 (not private)")

#: The formats ``validate_data`` accepts as they are; other ``scipy.sparse`` formats become CSR.
SPARSE_FORMATS = ("csr",)

#: What a search or cross-validation over a private estimator spends, and what to use instead.
MODEL_SELECTION_WARNING = (
    "{name} is being fitted by scikit-learn's model selection ({where}) with eps={eps:g}: every "
    "fit of every fold and candidate spends eps on the same data, so the search spends folds x "
    "candidates x eps plus eps for the final refit (sequential composition), not eps. For a "
    "private choice of hyperparameters use privatelr.tune_classification_model (it accepts "
    "DPLogisticRegression candidates) or privatelr.dplr_tune, which spend eps once")


class DPLogisticRegression(PipelineChecked, ClassifierMixin, BaseEstimator):
    r"""ε-differentially private L2-regularised logistic regression, scikit-learn API (binary, or
    multinomial over K > 2 declared ``classes``).

    Minimises :math:`\frac1n\sum_i a_i \log(1 + e^{-y_i(w^\top x_i + b)}) + \frac{\alpha}{2}
    (\|w\|^2 + b^2)` (weights :math:`a_i = 1` without ``sample_weight``) with objective or
    output perturbation (Chaudhuri, Monteleoni & Sarwate, JMLR 2011); see the module docstring
    for the privacy contract and :mod:`privatelr.erm` for the noise scales.

    Parameters
    ----------
    eps : float, default=1.0
        Privacy level ε >= 0; 0 or ``inf`` fits without privacy (PrivateLR's convention for 0).
    alpha : float or None, default=None
        Regularisation strength λ > 0 of :math:`\frac{\lambda}{2}\|w\|^2` (the meaning of
        ``alpha`` in :class:`sklearn.linear_model.SGDClassifier`; larger is stronger, unlike
        ``C`` of :class:`~sklearn.linear_model.LogisticRegression`). None uses
        :func:`privatelr.calibration.default_lambda`.
    lambda_ : float or None, default=None
        The same parameter under the package's name (an alias of ``alpha``). Giving both with
        different values raises ``ValueError`` at fit.
    method : {"objective", "output", "gaussian", "amp"}, default="objective"
        The mechanism (:func:`privatelr.erm.fit`); ``"gaussian"`` and ``"amp"`` are
        (ε, δ)-differentially private with ``delta``.
    delta : float, default=0.0
        δ in (0, 1) of the Gaussian methods (well below ``1/n``); 0 otherwise.
    data_norm : float or "from_bounds", default=1.0
        Public bound on the L2 norm of every feature row (intercept excluded).
        ``"from_bounds"`` takes it from the step before the estimator in a scikit-learn
        pipeline: a :class:`~privatelr.sklearn.PublicBoundsTransformer` (or a
        ``ColumnTransformer`` of them), whose :attr:`~PublicBoundsTransformer.data_norm` is
        derived from the declared bounds (with ``norm="rms"`` rows above it are clipped, as
        ``clip=True``). A number that differs from the bound of such a step warns.
    clip : bool, default=False
        Clip rows above ``data_norm`` onto it. Without it a private fit with such a row raises
        ``ValueError`` (fail closed).
    fit_intercept : bool, default=True
    classes : sequence of labels, optional
        The declared classes: two (negative first), or K > 2 for the multinomial (softmax)
        model of :mod:`privatelr.multinomial` — then ``coef_`` is (K, d), ``intercept_`` (K,),
        ``predict_proba`` (n, K); in memory, sparse or on Dask like the binary model,
        ``method`` "objective" or "output", the default
        λ the multinomial rule (penalty ε/10). Without ``classes`` the labels must be 0/1 or
        bool (a non-private fit learns two classes), and the model is binary (scikit-learn's
        ``multi_class`` tag stays off: more than two classes must be declared).
    sample_weight_bound : float or None, default=None
        Public upper bound ``A`` on every ``sample_weight``; required for a private fit with
        weights (the noise is calibrated for it).
    accountant : privatelr.PrivacyAccountant or None, default=None
        Charged ``eps`` by every private fit (checked before the data are read). Clones made
        by scikit-learn share it (an accountant is never copied).
    random_state : int, numpy.random.Generator or None, default=None
        Source of the privacy noise. ``None`` draws fresh noise at every fit.
    inference : bool or float or None, default=None
        Also release the information matrix for standard errors and intervals
        (:mod:`privatelr.inference`): ``True`` spends a quarter of ``eps`` on it, a number that
        share. Then :meth:`confint`, :meth:`vcov` and :meth:`coef_table` work, and ``coef_`` /
        ``intercept_`` hold the bias-corrected estimate they are centred on (one estimate,
        which ``predict`` uses too; the released vector stays in ``result_.coef``). Binary
        models only. A non-private fit computes it exactly at no cost.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    lambda_used_ : float
        The regulariser actually used: ``alpha`` (or its default), or λ*, larger, when
        objective perturbation had to adjust it.
    result_ : privatelr.ERMResult
        What the estimator keeps of the engine's fit: the private coefficients (intercept
        first), the public calibration, ``status`` and ``convergence``. The solver's report
        (objective value, iterations, gradient norm) is a statistic of the training data and is
        not kept in it.
    n_iter_ : ndarray of shape (1,)
        Solver iterations of the fit (as in scikit-learn). **Not private** — the number of
        steps the solver needed depends on the training rows: a diagnostic for the data holder,
        not part of the release, left out when the estimator is pickled.
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
    Which classifier when: :func:`privatelr.dplr` is the port of R's PrivateLR (formulas, data
    frames, factor levels, R-style summaries); ``DPLogisticRegression`` is for scikit-learn
    pipelines and numpy (or Dask) arrays; :class:`privatelr.LogisticRegressionDP` is for DPpack
    parity (per-column bounds, ``gamma``) and private tuning. All three run the same engine.

    Pickling a fitted estimator keeps only the release (see the module docstring): the
    unpickled copy predicts identically but has ``random_state=None``, ``accountant=None`` and
    neither ``n_clipped_`` nor ``n_iter_``.

    Examples
    --------
    >>> import numpy as np
    >>> from privatelr import PrivacyAccountant
    >>> rng = np.random.default_rng(1)
    >>> X = rng.uniform(-0.7, 0.7, size=(400, 2))
    >>> y = (X[:, 0] > X[:, 1]).astype(int)
    >>> acc = PrivacyAccountant(1.0)
    >>> clf = DPLogisticRegression(eps=0.5, alpha=0.05, accountant=acc, random_state=0)
    >>> clf.fit(X, y, sample_weight=np.full(400, 0.5)).coef_.shape
    Traceback (most recent call last):
    ...
    ValueError: sample_weight given without sample_weight_bound: a private fit calibrates its noise for a public upper bound on every weight; pass sample_weight_bound=<bound> (e.g. DPLogisticRegression(sample_weight_bound=1.0))
    >>> clf.set_params(sample_weight_bound=1.0).fit(X, y, sample_weight=np.full(400, 0.5)).coef_.shape
    (1, 2)
    >>> acc.spent()
    (0.5, 0.0)
    """

    def __init__(self, eps: float = 1.0, *, alpha: float | None = None,
                 lambda_: float | None = None, method: str = "objective",
                 data_norm: float | str = 1.0,
                 clip: bool = False, fit_intercept: bool = True, classes=None,
                 sample_weight_bound: float | None = None, accountant=None, random_state=None,
                 delta: float = 0.0, inference=None):
        self.eps = eps
        self.inference = inference
        self.delta = delta
        self.alpha = alpha
        self.lambda_ = lambda_
        self.method = method
        self.data_norm = data_norm
        self.clip = clip
        self.fit_intercept = fit_intercept
        self.classes = classes
        self.sample_weight_bound = sample_weight_bound
        self.accountant = accountant
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # see the class docstring: K > 2 needs classes=
        tags.input_tags.sparse = True             # scipy.sparse X, never densified
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        # the parameter ``lambda_`` (the alias of ``alpha``) ends in "_", which would fool
        # scikit-learn's default test (any attribute ending in "_")
        return hasattr(self, "coef_")

    def fit(self, X, y, sample_weight=None):
        """Fit the private model on ``X`` (n, d) and binary labels ``y``; returns ``self``.

        Parameters
        ----------
        X : (n, d) array-like, scipy.sparse matrix or array, or Dask collection
            The features, without an intercept column. Sparse ``X`` (CSR; CSC and the other
            formats are converted to CSR) stays sparse: the intercept is added as a stored
            column of ones and the fit needs O(nnz + n + d) memory (also with more than two
            classes).
        y : (n,) array-like of labels (0/1, bool, or the declared ``classes``)
        sample_weight : (n,) array-like, optional
            Observation weights, finite and in ``[0, sample_weight_bound]``. A private fit
            needs the public ``sample_weight_bound``; the engine's calibration scales the noise
            by it (:mod:`privatelr.calibration`, *Reduction to the unit ball*). Without privacy
            (``eps`` 0 or inf) no bound is needed: a plain weighted fit.

        Returns
        -------
        DPLogisticRegression
            ``self``, fitted.

        ``X``, ``y`` and ``sample_weight`` may be Dask collections: the fit then runs
        partition-wise on the cluster (the same pipeline and the same bits as in memory).

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.5, 0.1], [-0.4, 0.2], [0.3, -0.6], [-0.2, -0.1]] * 50)
        >>> y = np.array([1, 0, 1, 0] * 50)
        >>> DPLogisticRegression(eps=1.0, random_state=0).fit(X, y).classes_.tolist()
        [0, 1]
        >>> DPLogisticRegression(eps=1.0, data_norm=0.5).fit(X, y)
        Traceback (most recent call last):
        ...
        ValueError: some rows of X have L2 norm above data_norm=0.5, so the differential-privacy guarantee would not hold (nothing was released). Choose data_norm from public bounds on the data and pass clip=True to clip the rows that exceed it (privatelr.public_bounds turns public bounds on the columns into data_norm and a public map: privatelr.sklearn.PublicBoundsTransformer before DPLogisticRegression(data_norm='from_bounds')); or fit with eps=0 (not private)
        """
        private, rows, scan, options, classes, n_clipped = self._prepare(
            X, y, sample_weight, announce=True)
        rng = check_random_state(self.random_state)
        accountant = self.accountant if private else None
        if len(classes) > 2:
            return self._store_multinomial(rows, scan, options, classes, n_clipped, rng,
                                           accountant)
        result = erm.fit_rows(rows, rng=rng, scan=scan, accountant=accountant, **options)
        coef = result.coef
        if result.inference is not None:          # one estimate: the bias-corrected one
            from ..inference import point_estimate

            coef = point_estimate(result)[0]
        if self.fit_intercept:
            self.intercept_ = coef[:1].copy()
            self.coef_ = coef[1:].reshape(1, -1)
        else:
            self.intercept_ = np.zeros(1)
            self.coef_ = coef.reshape(1, -1)
        self.classes_ = classes
        self.lambda_used_ = result.lambda_
        assert result.diagnostics is not None       # a fresh fit has them
        self.n_iter_ = np.array([result.diagnostics.iterations], dtype=np.int32)
        self.result_ = result.release()  # the release only, no solver report
        self.n_clipped_ = int(n_clipped)
        return self

    def _store_multinomial(self, rows, scan, options, classes, n_clipped, rng, accountant):
        """K > 2 declared classes: the softmax model (:func:`privatelr.multinomial.fit_rows`)
        on the rows :meth:`_prepare` built — the same checks, clipping and backends as the
        binary model, the multinomial calibration and default λ (penalty ε/10)."""
        from .. import multinomial
        from ..calibration import default_lambda_multinomial

        lam = self._requested_lambda()
        if lam is None:
            lam = default_lambda_multinomial(rows.n, len(classes), options["eps"],
                                             data_norm=options["data_norm"],
                                             weights_bound=rows.weights_bound)
        res = multinomial.fit_rows(rows, tuple(classes.tolist()), lambda_=lam,
                                   eps=options["eps"], method=options["method"],
                                   data_norm=options["data_norm"], clip=False, rng=rng,
                                   accountant=accountant, scan=scan, what="X")
        k = int(bool(self.fit_intercept))
        self.coef_ = np.ascontiguousarray(res.coef[k:].T)
        self.intercept_ = res.coef[0].copy() if k else np.zeros(len(res.classes))
        self.classes_ = classes
        self.lambda_used_ = res.calibration.lambda_
        self.n_iter_ = np.array([res.diagnostics.get("iterations", 0)], dtype=np.int32)
        self.result_ = dataclasses.replace(res, diagnostics={})   # the release only
        self.n_clipped_ = int(n_clipped)
        return self

    def check_fit(self, X, y, sample_weight=None) -> None:
        """Run every check :meth:`fit` runs — settings, budget, labels against the declared
        classes, weights against their bound, rows against ``data_norm`` — without fitting:
        no noise is drawn, nothing is charged, no model is stored (only
        ``n_features_in_``/``feature_names_in_``, as :meth:`fit` sets them first).

        :func:`privatelr.tune_classification_model` runs it on the whole data before it
        charges its accountant: data that pass pass on every subset of their rows too (short
        of a degenerate subset: a single class in a non-private fit, or all weights zero).

        Parameters
        ----------
        X, y, sample_weight
            As for :meth:`fit`.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.5, 0.1], [-0.4, 0.2], [3.0, 0.0]])
        >>> DPLogisticRegression().check_fit(X, np.array([1, 0, 1]))
        Traceback (most recent call last):
        ...
        ValueError: some rows of X have L2 norm above data_norm=1, so the differential-privacy guarantee would not hold (nothing was released). Choose data_norm from public bounds on the data and pass clip=True to clip the rows that exceed it (privatelr.public_bounds turns public bounds on the columns into data_norm and a public map: privatelr.sklearn.PublicBoundsTransformer before DPLogisticRegression(data_norm='from_bounds')); or fit with eps=0 (not private)
        >>> DPLogisticRegression(clip=True).check_fit(X, np.array([1, 0, 1]))
        """
        self._prepare(X, y, sample_weight, announce=False)

    def _prepare(self, X, y, sample_weight, *, announce: bool):
        """Everything :meth:`fit` does before the engine: ``(private, rows, scan, options,
        classes_, n_clipped)``. ``announce`` warns inside a scikit-learn search."""
        # the settings first: a refused fit reads no data (and charges nothing)
        for name in ("clip", "fit_intercept"):
            check_bool(name, getattr(self, name))
        eps = check_real("eps", self.eps, low=0.0, allow_inf=True)
        # the pipeline fitting this estimator, if any: the public map before it gives
        # data_norm="from_bounds"; a step that learned from the rows warns (below)
        chain = enclosing_pipelines(self)
        B, clip = resolve_data_norm(self, self.data_norm, self.clip, chain, stacklevel=3)
        private = erm.cal_private(eps)
        requested = self._requested_lambda()
        A = None
        if self.sample_weight_bound is not None:
            A = check_real("sample_weight_bound", self.sample_weight_bound, low=0.0,
                           low_open=True)
        if private and sample_weight is not None and A is None:
            raise ValueError(
                "sample_weight given without sample_weight_bound: a private fit calibrates its "
                "noise for a public upper bound on every weight; pass "
                "sample_weight_bound=<bound> (e.g. DPLogisticRegression(sample_weight_bound=1.0))")
        _, delta = check_method(self.method, eps, self.delta)
        share = check_inference(self.inference, eps)
        if share is not None and _several(self.classes):
            raise ValueError("inference= is available for binary models only; drop it (or fit "
                             "one binary model per class of interest)")
        if _several(self.classes) and self.method not in ("objective", "output"):
            raise ValueError(f"method={self.method!r} is not available with more than two "
                             "classes (the multinomial calibration is for the pure-eps "
                             "methods); use 'objective' or 'output'")
        if self.accountant is not None:
            require_budget(self.accountant, eps, delta)
        if private and announce:
            where = _model_selection_caller()
            if where is not None:
                warnings.warn(MODEL_SELECTION_WARNING.format(name=type(self).__name__,
                                                             where=where, eps=eps),
                              PrivacyWarning, stacklevel=3)
            if chain:
                warn_learned(steps_before(chain), self, eps, stacklevel=3)

        if is_dask(X, y, sample_weight):
            X, y = self._dask_data(X, y, reset=True)
        else:
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False,
                                 accept_sparse=SPARSE_FORMATS)
            check_classification_targets(y)
            kind = type_of_target(y, input_name="y", raise_unknown=True)
            if kind not in ("binary", "unknown") and not _several(self.classes):
                found = np.unique(y)
                if found.size > 2:
                    shown = ", ".join(repr(v) for v in found[:5].tolist())
                    raise ValueError(
                        "Only binary classification is supported. The type of the target is "
                        f"{kind}: y has {found.size} classes ({shown}"
                        f"{', ...' if found.size > 5 else ''}) and {type(self).__name__} is "
                        "binary unless the classes are declared: pass classes=[...] listing "
                        "every label to fit the multinomial model (a private fit never learns "
                        "its classes from the rows)")
        classes, y01, codes = _declared_classes(self.classes, y, learn=not private)
        w, A = _sample_weights(sample_weight, X.shape[0], A)
        k = int(self.fit_intercept)
        if is_sparse(X):        # the intercept as a stored column: the design stays sparse
            rows = as_rows(with_intercept(X) if k else X, y01, w, A, codes=codes)
        else:                   # in memory or partition-wise on Dask
            rows = as_rows(X, y01, w, A, codes=codes)
            if k:
                rows = rows.mapped(with_intercept, rows.d + 1)
        design_norm = norm_bound(B, bool(k))
        if requested is None:
            lam = default_lambda(rows.n, eps, data_norm=design_norm,
                                 weights_bound=1.0 if w is None else A)
        else:
            lam = requested
        fit_eps, info_eps = split_budget(eps, share)
        if requested is None and info_eps and self.method == "output":
            lam = default_lambda_inference_output(rows.n, fit_eps, data_norm=design_norm)
        elif requested is None and info_eps:
            lam = default_lambda(rows.n, fit_eps, data_norm=design_norm,
                                 weights_bound=1.0 if w is None else A)
        options = erm.check_options(lambda_=lam, eps=fit_eps, method=self.method,
                                    data_norm=design_norm, delta=delta)
        options["inference_eps"] = info_eps
        scan = rows.scan(bound=B, start=k)              # the covariates against data_norm
        if not (scan.n_over and clip):
            scan.check_magnitude("X")
        n_clipped = 0
        if scan.n_over and clip:
            rows, n_clipped = rows.clipped(B, start=k), scan.n_over
        elif scan.n_over and private:
            raise ValueError(erm.OUTSIDE_BOUND.format(what="X", data_norm=B, more=OUTSIDE_HINT))
        if n_clipped:
            scan = scan.clipped_to(options["data_norm"])
        return private, rows, scan, options, classes, int(n_clipped)

    def _requested_lambda(self) -> float | None:
        """λ from ``alpha`` or its alias ``lambda_`` (None: the default rule), checked."""
        given = {}
        for name in ("alpha", "lambda_"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise TypeError(f"{name} must be a positive number or None, got {value!r}")
            given[name] = check_real(name, value, low=0.0, low_open=True)
        if len(given) == 2 and given["alpha"] != given["lambda_"]:
            raise ValueError(f"alpha={self.alpha!r} and lambda_={self.lambda_!r} are the same "
                             "parameter (lambda_ is an alias of alpha) with different values; "
                             "set only alpha")
        return next(iter(given.values()), None)

    # -- inference (R's vocabulary: privatelr.inference) ---------------------------------------
    def _inference_model(self):
        check_is_fitted(self)
        if getattr(self.result_, "inference", None) is None:
            from ..inference.estimate import NOT_ASKED

            raise ValueError(NOT_ASKED.replace("inference=True", "DPLogisticRegression("
                                               "inference=True)"))
        return self.result_

    def _names(self) -> list:
        names = list(getattr(self, "feature_names_in_", [])) or \
            [f"x{j}" for j in range(self.n_features_in_)]
        return (["(Intercept)"] if self.fit_intercept else []) + [str(n) for n in names]

    def vcov(self):
        """Covariance of the estimates (intercept first), a DataFrame (:func:`privatelr.vcov`).
        Needs ``inference=``."""
        from ..inference import vcov

        names = self._names()
        return vcov(self._inference_model()).set_axis(names, axis=0).set_axis(names, axis=1)

    def confint(self, level: float = 0.95):
        """Confidence intervals of the coefficients (intercept first), a DataFrame with R's
        columns (:func:`privatelr.confint`: the exact law of sampling and privacy noise).
        Needs ``inference=``."""
        from ..inference import confint

        out = confint(self._inference_model(), level=level)
        return out.set_axis(self._names(), axis=0)

    def coef_table(self, level: float | None = None, exponentiate: bool = False):
        """glm's coefficient table (:func:`privatelr.coef_table`). Needs ``inference=``."""
        from ..inference import coef_table

        out = coef_table(self._inference_model(), level=level, exponentiate=exponentiate)
        return out.set_axis(self._names(), axis=0)

    # -- what the estimator shows of its seed ------------------------------------------------
    # ``get_params()`` returns the caller's own ``random_state`` (scikit-learn's contract:
    # ``clone`` and searches rebuild the estimator from it; it is the caller's object, not a
    # release). What the estimator *shows* — its repr, print, the notebook's HTML view with
    # its parameter table — and what it writes (pickles, below) record only that a seed was
    # given: ``random_state=<given>``.
    def _shown(self):
        """``self``, or a shallow stand-in whose ``random_state`` prints as ``<given>``."""
        if self.__dict__.get("random_state") is None or \
                isinstance(self.__dict__["random_state"], _SeedGiven):
            return self
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.random_state = _SeedGiven()
        return out

    def __repr__(self, N_CHAR_MAX=700):
        return BaseEstimator.__repr__(self._shown(), N_CHAR_MAX)

    def _html_repr(self):
        from sklearn.utils import estimator_html_repr

        return estimator_html_repr(self._shown())

    def __getstate__(self):
        # A fitted estimator is a release: its pickle holds the coefficients, the public
        # calibration and the settings, never the seed (which would let anyone redraw the noise),
        # the data holder's accountant, nor the non-private diagnostics (clipped-row count,
        # solver iterations).
        state = super().__getstate__()
        if "coef_" in state:
            state = dict(state)
            state.pop("n_clipped_", None)
            state.pop("n_iter_", None)
            state["accountant"] = None
            if state.get("random_state") is not None:
                state["random_state"] = None
        return state

    def __deepcopy__(self, memo):
        # A copy in this process is a copy of everything, the accountant included (which copies
        # as itself): the pickled form above is for releases, and going through it would drop
        # the ledger, so a refit of the copy would charge nothing.
        out = object.__new__(type(self))
        memo[id(self)] = out
        out.__dict__.update({k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()})
        return out

    def _dask_data(self, X, y=None, *, reset: bool):
        """Dask inputs checked as :func:`~sklearn.utils.validation.validate_data` checks
        in-memory ones (lazily: the values are checked by the fit's scan)."""
        from ..backends.dask import dask_matrix, dask_vector

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
        """Log-odds of ``classes_[1]``, shape (n,); a lazy Dask vector for Dask ``X``. With
        more than two classes: the K softmax scores, shape (n, K). ``X`` may be
        ``scipy.sparse`` (scored as ``X @ coef_.T + intercept_``, never densified)."""
        check_is_fitted(self)
        if self.coef_.shape[0] > 1:
            if is_dask(X):                                 # lazy (n, K) scores
                X, _ = self._dask_data(X, reset=False)
                return X @ self.coef_.T + self.intercept_
            X = validate_data(self, X, dtype=np.float64, reset=False,
                              accept_sparse=SPARSE_FORMATS)
            return np.asarray(X @ self.coef_.T) + self.intercept_
        if is_dask(X):
            from ..backends.dask import map_row_blocks

            X, _ = self._dask_data(X, reset=False)
            return map_row_blocks(X, partial(_log_odds, coef=self.coef_[0],
                                             intercept=self.intercept_[0]))
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=SPARSE_FORMATS)
        return _log_odds(X, coef=self.coef_[0], intercept=self.intercept_[0])

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n, 2) (or (n, K)), columns in the order of ``classes_``;
        ``X`` as for :meth:`decision_function` (dense, ``scipy.sparse`` or Dask)."""
        z: Any = self.decision_function(X)            # an ndarray, or Dask's for Dask X
        if z.ndim == 2:
            from scipy.special import softmax

            if is_dask(z):
                return z.map_blocks(softmax, axis=1, dtype=np.float64)
            return softmax(z, axis=1)
        p1 = 0.5 * (1.0 + np.tanh(0.5 * z))  # logistic function without overflow
        return np.stack([1.0 - p1, p1], axis=1)

    def predict_log_proba(self, X) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed stably (``X`` dense, sparse or Dask)."""
        z: Any = self.decision_function(X)            # an ndarray, or Dask's for Dask X
        if z.ndim == 2:
            from scipy.special import log_softmax

            if is_dask(z):
                return z.map_blocks(log_softmax, axis=1, dtype=np.float64)
            return log_softmax(z, axis=1)
        return np.stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)], axis=1)

    def predict(self, X) -> np.ndarray:
        """Predicted labels (``classes_[1]`` where the log-odds are positive); ``X`` dense,
        ``scipy.sparse`` or Dask."""
        z: Any = self.decision_function(X)  # checks fitted state first; Dask's for Dask X
        if z.ndim == 2:
            if is_dask(z):
                return z.map_blocks(_most_probable, self.classes_, drop_axis=1,
                                    dtype=self.classes_.dtype)
            return _most_probable(z, self.classes_)
        return np.where(z > 0, self.classes_[1], self.classes_[0])


def _log_odds(X, *, coef: np.ndarray, intercept: float) -> np.ndarray:
    return np.asarray(X @ coef).reshape(-1) + intercept


def _model_selection_caller() -> str | None:
    """The scikit-learn model-selection call fitting the estimator (``"GridSearchCV.fit"``,
    ``"cross_val_score"``, …: the outermost frame of ``sklearn.model_selection``), or None: a walk up the call stack for frames of
    ``sklearn.model_selection`` (searches, cross-validation and their helpers, including
    ``_fit_and_score`` inside joblib workers). Cheap: a few dozen frames, only for private fits.
    """
    frame = inspect.currentframe()
    outermost = None
    try:
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if module == "sklearn.model_selection" or \
                    module.startswith("sklearn.model_selection."):
                code = frame.f_code
                outermost = code.co_name
                if code.co_argcount and code.co_varnames[0] == "self":    # a method: its class
                    owner = frame.f_locals.get("self")
                    outermost = f"{type(owner).__name__}.{code.co_name}"
            frame = frame.f_back
    finally:
        del frame
    return outermost


def _sample_weights(sample_weight, n: int, bound: float | None):
    """``(weights, bound)`` checked against ``[0, bound]`` (``ValueError`` naming
    ``sample_weight``); without a bound (a non-private fit) the largest weight, at least 1.
    A Dask vector is passed on, for the fit's scan to check (its error names ``weights``)."""
    if sample_weight is None:
        return None, None
    if is_dask(sample_weight) or not isinstance(n, numbers.Integral):   # Dask rows
        if bound is None:
            (top,) = compute(sample_weight.max())
            if not np.isfinite(top):
                raise ValueError("sample_weight contains NaN or infinite values")
            bound = max(1.0, float(top))
        return sample_weight, bound
    if bound is None:
        w = real_vector("sample_weight", sample_weight, n, "real numbers",
                        "a 1-D array of length {n} (one weight per row)")
        if not np.isfinite(w).all():
            raise ValueError("sample_weight contains NaN or infinite values")
        bound = max(1.0, float(w.max(initial=0.0)))
    w, bound = as_weights("sample_weight", sample_weight, n, "sample_weight_bound", bound)
    if n and not w.any():
        raise ValueError("sample_weight is zero for every row: there is nothing to fit; give "
                         "some rows a positive weight")
    return w, bound


def _several(classes) -> bool:
    """Whether ``classes`` declares more than two labels (the multinomial model)."""
    return (classes is not None and not isinstance(classes, (str, bytes))
            and hasattr(classes, "__len__") and len(classes) > 2)


def _declared_classes(classes, y: Any, *, learn: bool):
    """``(classes_, y coded 0/1, class codes or None)``: declared classes (two, or K > 2 with
    each label's position as its code), 0/1 or bool labels, or (``learn``, a non-private fit)
    the two values of ``y``."""
    if classes is not None:
        if isinstance(classes, (str, bytes)) or not hasattr(classes, "__len__") or \
                len(classes) < 2 or len(set(classes)) != len(classes):
            raise ValueError(f"classes must list distinct labels ([negative, positive], or K > 2 "
                             f"labels for the multinomial model), got {classes!r}")
        declared = np.asarray(classes)
        (inside,) = compute(np.isin(y, declared).all())      # one pass over a Dask vector
        if not inside:
            raise ValueError(f"y holds labels outside classes={list(declared)}; declare every "
                             "label (or map the others first)")
        if len(declared) == 2:
            return declared, (y == declared[1]).astype(np.float64), None
        codes = _codes_block(y, declared) if not is_dask(y) else \
            y.map_blocks(_codes_block, declared, dtype=np.float64)
        return declared, (y != declared[0]).astype(np.float64), codes
    values = np.asarray(np.unique(y))                      # computed for a Dask vector
    if is_dask(y) and values.dtype.kind == "f" and not np.all(values == np.round(values)):
        raise ValueError("Unknown label type: continuous. Maybe you are trying to fit a "
                         "classifier, which expects discrete classes on a regression target "
                         "with continuous values.")
    if learn:
        if values.size != 2:
            raise ValueError(f"Only binary classification is supported: y needs exactly 2 "
                             f"classes, got {values.size} class(es)")
        return values, (y == values[1]).astype(np.float64), None
    if y.dtype == np.bool_:
        return np.array([False, True]), y.astype(np.float64), None
    if np.issubdtype(y.dtype, np.number) and set(values.tolist()) <= {0, 1}:
        return np.array([0, 1]), (y == 1).astype(np.float64), None
    raise ValueError("the classes of a private fit are declared, never learned from the labels "
                     "(one record could change them): pass classes=[negative, positive], or "
                     "use 0/1 or bool labels")


def _codes_block(y, declared) -> np.ndarray:
    """Each label's position in ``declared`` (every label is declared: checked before)."""
    order = np.argsort(declared, kind="stable")
    pos = np.searchsorted(declared[order], y)
    return order[np.minimum(pos, len(declared) - 1)].astype(np.float64)


def _most_probable(z, classes) -> np.ndarray:
    return classes[np.argmax(z, axis=1)]
