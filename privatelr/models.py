r"""DPpack-style model objects: :class:`LogisticRegressionDP` and :class:`SVMDP`.

These mirror the R6 classes of R's DPpack (Giddens et al.) in Python: build the object with the
privacy level and the regularisation constant, then ``fit(X, y, upper_bounds, lower_bounds)``
with **public** bounds on every column, then ``predict``. Every fit runs the one engine,
:func:`privatelr.erm.fit_rows`; this module only maps DPpack's conventions onto it. ``X``, ``y``
and ``weights`` may be Dask collections: the public map (bounds, bias, random features) is then
applied partition by partition and the fit runs on the cluster, with the same noise and the same
coefficients (to rounding) as in memory; ``predict`` on Dask data returns a lazy Dask array.
``X`` may also be a ``scipy.sparse`` matrix or array (any format; used as CSR): it stays sparse
(see *Sparse X* below).

Conventions (DPpack's, kept here)
---------------------------------
* **Labels** are 0/1 (or bool); predictions are 0/1.
* **Bounds and scaling.** Each column ``j`` of ``X`` is clipped to ``[lower_j, upper_j]`` and
  divided by :math:`s_j = \max(|lower_j|, |upper_j|)` and by :math:`\sqrt{p}` (``p`` columns),
  so every scaled entry lies in :math:`[-1/\sqrt p, 1/\sqrt p]` and every scaled row has
  :math:`\|x\| \le 1` — the unit ball the Chaudhuri–Monteleoni–Sarwate theorems assume. The
  scale comes from the bounds only, never from the data, so it costs no privacy. The fitted
  coefficients are mapped back to the original units, :math:`w_j = w^{\text{scaled}}_j /
  (s_j\sqrt p)`, so ``predict`` works on unscaled data.
* **Bias.** ``add_bias=True`` prepends a column of ones with bounds ``(1, 1)`` *before* scaling
  (DPpack's choice), so the bias entry becomes :math:`1/\sqrt p` and the **whole row, bias
  included**, stays in the unit ball: the engine is called with ``data_norm=1`` and the
  guarantee holds as stated. The bias coefficient is penalised like every other one (DPpack
  recommends avoiding the bias for that reason). It is the first coefficient.
* **Regularisation.** DPpack minimises :math:`\frac1n\sum_i \ell + \frac{\gamma}{n}\cdot
  \frac12\|w\|^2`: its ``gamma`` is the paper's :math:`\lambda` times ``n``. The engine
  minimises :math:`\frac1n\sum_i \ell + \frac{\lambda}{2}\|w\|^2`, so it is called with
  ``lambda_ = gamma / n``. When objective perturbation needs a larger regulariser
  (:math:`\varepsilon' \le 0`), the engine applies the JMLR11 adjustment, which is exactly
  DPpack's ``Delta`` (total :math:`\lambda^* = c/(n(e^{\varepsilon/4} - 1))`).
* **Privacy.** ``eps`` is the ε of ε-differential privacy for neighbouring data sets of the same
  size differing in one row (JMLR11's definition). ``eps=inf`` fits the non-private minimiser.
  The noise scales are those of :mod:`privatelr.erm` with ``B = 1`` (unit ball) and ``A =
  weights_upper_bound`` (1 without weights): objective perturbation
  :math:`\|b\| \sim \mathrm{Gamma}(d, 2A/\varepsilon')`, output perturbation
  :math:`\|b\| \sim \mathrm{Gamma}(d, 2A/(n\lambda\varepsilon)) = \mathrm{Gamma}(d,
  2A/(\gamma\varepsilon))` (JMLR11 Algorithms 1–2, Theorems 6 and 9).
* **Sparse X.** The map above sends a value ``x`` of column ``j`` to
  :math:`\mathrm{clip}(x, l_j, u_j) / (s_j\sqrt p)`. It sends 0 to 0 exactly when
  :math:`l_j \le 0 \le u_j`; then only the stored values of a ``scipy.sparse`` ``X`` need
  mapping, the design keeps the sparsity pattern of ``X`` (plus a stored bias column with
  ``add_bias``), and the fit is the dense fit of the same data (to rounding) in O(nnz + n + p)
  memory. A column whose public range excludes 0 would turn every zero into a non-zero bound
  (a dense design), so sparse ``X`` with such bounds is refused (``ValueError``): moving the
  bound to 0 (``lower_bounds[j] = 0`` when ``lower_bounds[j] > 0``, ``upper_bounds[j] = 0``
  when ``upper_bounds[j] < 0``) leaves the scale :math:`s_j` unchanged and keeps zeros at zero.
  The Gaussian kernel of :class:`SVMDP` maps every row to ``D`` dense features and takes dense
  ``X`` only.
* **Weights** need a public ``weights_upper_bound``; negative weights are an error, weights above
  the bound are clipped to it (as DPpack does), and every sensitivity scales by the bound.
  Unlike DPpack, weights are also accepted with objective perturbation (the engine calibrates it
  with the bound ``A``; see :mod:`privatelr.erm`).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-1, 1, size=(400, 2))
>>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
>>> model = LogisticRegressionDP("l2", eps=1.0, gamma=1.0)
>>> model = model.fit(X, y, upper_bounds=[1, 1], lower_bounds=[-1, -1], random_state=1)
>>> model.coeff.shape
(2,)
>>> set(np.unique(model.predict(X))) <= {0, 1}
True
"""

from __future__ import annotations

import math

import numpy as np

from functools import partial

from . import erm
from ._validation import (as_float_matrix, check_bool, check_int, check_real, is_sparse,
                          label_vector, real_vector, with_intercept)
from .backends import as_rows, compute, is_dask
from .accountant import require_budget
from .mechanisms import check_random_state, gaussian_fourier_features

__all__ = ["LogisticRegressionDP", "SVMDP", "CMSModel", "as_bounds", "as_01_labels",
           "column_bounds"]

_METHODS = ("objective", "output", "gaussian", "amp")


def as_bounds(name: str, bounds, d: int) -> np.ndarray:
    """One public bound per column of ``X`` (``d`` of them), finite."""
    arr = real_vector(name, bounds, d, "a vector of real numbers",
                      "one value per column of X ({n})")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite: the privacy guarantee needs bounded columns")
    return arr


def column_bounds(upper_bounds, lower_bounds, p: int) -> tuple[np.ndarray, np.ndarray]:
    """``(upper, lower)``: public per-column bounds for ``p`` columns, checked (finite, one per
    column, lower <= upper)."""
    upper = as_bounds("upper_bounds", upper_bounds, p)
    lower = as_bounds("lower_bounds", lower_bounds, p)
    if (lower > upper).any():
        j = int(np.flatnonzero(lower > upper)[0])
        raise ValueError(f"lower_bounds must not exceed upper_bounds; column {j} has lower "
                         f"{lower[j]} > upper {upper[j]}")
    return upper, lower


def as_01_labels(y, n: int) -> np.ndarray:
    """DPpack's labels: 0/1 (bool accepted); returned as float 0/1. A Dask vector stays lazy
    (one pass over it checks the values; its length is checked with the rows)."""
    if is_dask(y):
        arr = y.to_dask_array() if hasattr(y, "to_dask_array") else y
    else:
        arr = label_vector("y", y, n, what="a vector of 0/1 labels")
    if arr.dtype == np.bool_:
        return arr.astype(np.float64)
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"y must hold the numbers 0 and 1 (or bool), got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    shown = np.asarray(np.unique(arr[(arr != 0.0) & (arr != 1.0)]))  # computes a Dask vector
    if shown.size:
        raise ValueError(f"y must be binary labels 0 and 1 (DPpack's convention), got "
                         f"{shown[:5].tolist()}; recode the classes to 0/1")
    return arr


def _sparse_bounds_error(upper: np.ndarray, lower: np.ndarray) -> ValueError | None:
    """The refusal of a sparse ``X`` whose public bounds would map zeros to non-zeros (a
    column ``j`` without ``lower_j <= 0 <= upper_j``), or None when every zero stays zero.

    Examples
    --------
    >>> print(_sparse_bounds_error(np.array([1.0, 2.0]), np.array([-1.0, 0.0])))
    None
    >>> _sparse_bounds_error(np.array([1.0, 5.0]), np.array([-1.0, 2.0]))
    ValueError('sparse X needs lower_bounds[j] <= 0 <= upper_bounds[j] for every column j, so that the map clip(x, lower, upper) / scale keeps its zeros at zero; column 1 has bounds [2, 5] (1 column in all), which would turn every zero into a non-zero value and X into a dense design. Set lower_bounds[j] = 0 where it is positive (upper_bounds[j] = 0 where it is negative): the scale max(|lower|, |upper|) stays the same; or pass a dense array (X.toarray())')
    """
    bad = np.flatnonzero((lower > 0) | (upper < 0))
    if not bad.size:
        return None
    j = int(bad[0])
    return ValueError(
        f"sparse X needs lower_bounds[j] <= 0 <= upper_bounds[j] for every column j, so that "
        f"the map clip(x, lower, upper) / scale keeps its zeros at zero; column {j} has bounds "
        f"[{lower[j]:g}, {upper[j]:g}] ({bad.size} column{'s' if bad.size > 1 else ''} in "
        f"all), which would turn every zero into a non-zero value and X into a dense design. "
        f"Set lower_bounds[j] = 0 where it is positive (upper_bounds[j] = 0 where it is "
        f"negative): the scale max(|lower|, |upper|) stays the same; or pass a dense array "
        f"(X.toarray())")


def _bounded_rows(X, *, lower, upper, divisor, add_bias: bool):
    """Rows clipped to the public bounds (bias first when asked) and divided by ``divisor``;
    a row with a NaN or infinite value stays NaN, for the fit's scan to refuse.

    A CSR ``X`` (whose bounds pass :func:`_sparse_bounds_error`: zeros map to zero) is mapped
    on its stored values only and stays sparse; a NaN or infinite stored value becomes NaN."""
    X = with_intercept(X) if add_bias else X
    if is_sparse(X):
        import scipy.sparse as sp

        j = X.indices
        data = np.clip(X.data, lower[j], upper[j]) / divisor[j]
        data[~np.isfinite(X.data)] = np.nan
        return sp.csr_matrix((data, j.copy(), X.indptr.copy()), shape=X.shape)
    return _keep_missing(X, np.clip(X, lower, upper) / divisor)


def _sparse_float_matrix(name: str, X):
    """A ``scipy.sparse`` ``X`` as a float64 CSR matrix, 2-D, non-empty and finite (the checks
    :func:`~privatelr._validation.as_float_matrix` runs on dense arrays), never densified."""
    import scipy.sparse as sp

    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x columns), got {X.ndim}-D")
    if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == np.bool_) or \
            np.issubdtype(X.dtype, np.complexfloating):
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {X.shape}); need at least one row and one "
                         "column")
    X = sp.csr_matrix(X, dtype=np.float64)
    if not np.isfinite(X.data).all():
        raise ValueError(f"{name} holds NaN or infinite values; remove or impute them first")
    return X


def _keep_missing(X: np.ndarray, out: np.ndarray) -> np.ndarray:
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        out[bad] = np.nan
    return out


def _block_scores(X: np.ndarray, *, model: "CMSModel", add_bias: bool) -> np.ndarray:
    """The model's scores of one block of rows (a partition of Dask data)."""
    if X.shape[0] == 0:
        return np.zeros(0)
    return model._features(as_float_matrix("X", X), add_bias) @ model.coeff


def _fourier(X: np.ndarray, omega: np.ndarray, phase: np.ndarray, D: int) -> np.ndarray:
    """The random Fourier features ``sqrt(2/D) cos(X omega + phase)``."""
    return np.sqrt(2.0 / D) * np.cos(X @ omega + phase)


def _fourier_rows(X: np.ndarray, *, lower, upper, omega, phase, D: int, divisor,
                  add_bias: bool) -> np.ndarray:
    """Rows clipped to the public bounds, mapped to the features and scaled into the ball."""
    X = with_intercept(X) if add_bias else X
    return _keep_missing(X, _fourier(np.clip(X, lower, upper), omega, phase, D) / divisor)


class CMSModel:
    """Shared machinery of the DPpack-style Chaudhuri–Monteleoni–Sarwate models."""

    _loss = "logistic"

    def __init__(self, regularizer: str = "l2", eps: float | None = None,
                 gamma: float | None = None, perturbation_method: str = "objective",
                 delta: float = 0.0):
        if regularizer != "l2":
            raise ValueError(f"regularizer must be 'l2' (the only regulariser the engine "
                             f"supports), got {regularizer!r}")
        if eps is None:
            raise TypeError(f"{type(self).__name__} needs eps (the privacy level > 0, or inf "
                            "for a non-private fit)")
        if gamma is None:
            raise TypeError(f"{type(self).__name__} needs gamma (DPpack's regularisation "
                            "constant > 0, the paper's lambda times n)")
        self.regularizer = regularizer
        self.eps = check_real("eps", eps, low=0.0, low_open=True, allow_inf=True)
        self.gamma = check_real("gamma", gamma, low=0.0, low_open=True)
        if perturbation_method not in _METHODS:
            raise ValueError(f"perturbation_method must be one of {_METHODS}, got "
                             f"{perturbation_method!r}")
        self.perturbation_method = perturbation_method
        self.delta = check_real("delta", delta, low=0.0, high=1.0, high_open=True)
        if (perturbation_method in ("gaussian", "amp")) != (self.delta > 0) and \
                math.isfinite(self.eps):
            raise ValueError("delta in (0, 1) goes with perturbation_method 'gaussian' or 'amp' "
                             f"(Gaussian noise) and only with them; got delta={self.delta:g} "
                             f"with {perturbation_method!r}")
        self.coeff: np.ndarray | None = None
        self.result_: erm.ERMResult | None = None
        self.add_bias_: bool | None = None
        self.n_features_in_: int | None = None

    # -- hooks the subclasses override -------------------------------------------------------
    def _engine_kwargs(self) -> dict:
        return {"loss": self._loss}

    def _design(self, p: int, upper: np.ndarray, lower: np.ndarray, add_bias: bool,
                rng: np.random.Generator):
        """``(map, d, divisor)``: the public map of raw rows (a block of ``p`` columns) onto
        ``d`` scaled columns in the unit ball, and the per-column divisor (module docstring).
        The map is applied to the rows where they live (in memory or partition-wise)."""
        if add_bias:
            upper = np.concatenate([[1.0], upper])
            lower = np.concatenate([[1.0], lower])
        scale1 = np.maximum(np.abs(lower), np.abs(upper))
        if (scale1 == 0).any():
            j = int(np.flatnonzero(scale1 == 0)[0]) - int(add_bias)
            raise ValueError(f"column {j} has lower and upper bound 0: it is constant zero and "
                             "cannot be scaled; drop it")
        divisor = scale1 * np.sqrt(p + int(add_bias))
        return partial(_bounded_rows, lower=lower, upper=upper, divisor=divisor,
                       add_bias=add_bias), p + int(add_bias), divisor

    def _features(self, X: np.ndarray, add_bias: bool) -> np.ndarray:
        return with_intercept(X) if add_bias else X

    def _check_sparse(self, upper: np.ndarray | None = None,
                      lower: np.ndarray | None = None) -> None:
        """Refuse a sparse ``X`` the public map would make dense (``ValueError``); with the
        bounds (at fit), also bounds that do not contain 0 (:func:`_sparse_bounds_error`)."""
        if upper is not None and lower is not None:
            error = _sparse_bounds_error(upper, lower)
            if error is not None:
                raise error

    # -- public API ------------------------------------------------------------------------
    def fit(self, X, y, upper_bounds, lower_bounds, add_bias: bool = False, weights=None,
            weights_upper_bound: float | None = None, random_state=None, accountant=None):
        """Fit the model with ε-differential privacy; returns the model itself.

        Parameters
        ----------
        X : (n, p) array, DataFrame, scipy.sparse matrix or array, or Dask collection
            Data (without a bias column). Sparse ``X`` (any format; used as CSR) stays sparse
            and needs ``lower_bounds[j] <= 0 <= upper_bounds[j]`` for every column (the map
            must keep zeros at zero; module docstring, *Sparse X*), else ``ValueError``;
            ``add_bias`` adds a stored column, so the fit needs O(nnz + n + p) memory.
        y : (n,) array
            Labels 0/1.
        upper_bounds, lower_bounds : (p,) array
            Public bounds of every column; values outside are clipped to them. They must be
            chosen without looking at the data (or the guarantee does not hold). With sparse
            ``X`` each range must contain 0.
        add_bias : bool
            Prepend a column of ones (scaled with the rest, see the module docstring).
        weights : (n,) array, optional
            Non-negative observation weights; those above ``weights_upper_bound`` are clipped.
        weights_upper_bound : float, optional
            Public bound on the weights; required with ``weights``.
        random_state : int, numpy.random.Generator or None
            Source of the noise (and of the random features of a Gaussian-kernel SVM).
        accountant : privatelr.PrivacyAccountant, optional
            Charged ``eps`` for this fit; a fit that would exceed its budget raises
            :class:`~privatelr.BudgetExceededError` before the data are read.

        Returns
        -------
        self
        """
        if accountant is not None:
            require_budget(accountant, self.eps, self.delta)
        sparse = is_sparse(X)
        if sparse:          # CSR float64, real and finite (never densified)
            X = _sparse_float_matrix("X", X)
        rows = as_rows(X)   # in memory, sparse or on Dask; values are checked by the fit's scan
        p = rows.d
        upper, lower = column_bounds(upper_bounds, lower_bounds, p)
        if sparse:          # before anything is drawn: the map must keep the zeros
            self._check_sparse(upper, lower)
        add_bias = check_bool("add_bias", add_bias)
        y01 = as_01_labels(y, rows.n)
        w, A = self._weights(weights, weights_upper_bound, rows.n)
        rng = check_random_state(random_state)

        design, d, divisor = self._design(p, upper, lower, bool(add_bias), rng)
        if sparse:          # the map on the stored values: the design stays sparse
            rows = as_rows(design(rows.matrix), y01, w, A if w is not None else None)
        else:
            rows = as_rows(rows.X, y01, w, A if w is not None else None).mapped(design, d)
        options = erm.check_options(lambda_=self.gamma / rows.n, eps=self.eps,
                                    method=self.perturbation_method, data_norm=1.0,
                                    clip=True, delta=self.delta if math.isfinite(self.eps) else 0.0,
                                    **self._engine_kwargs())
        result = erm.fit_rows(rows, rng=rng, accountant=accountant, **options)
        # keep the release only: coefficients, public calibration, status (no solver report,
        # no objective value, no training predictions); assigned together once the fit worked
        self.coeff = result.coef / divisor
        self.result_ = result.release()
        self.add_bias_ = bool(add_bias)
        self.n_features_in_ = p
        return self

    @staticmethod
    def _weights(weights, bound, n: int):
        """DPpack's weights: non-negative, clipped to the public ``bound``; a Dask vector stays
        lazy (one pass checks it; its length is checked with the rows)."""
        if weights is None:
            if bound is not None:
                check_real("weights_upper_bound", bound, low=0.0, low_open=True)
            return None, None
        if bound is None:
            raise ValueError("weights given without weights_upper_bound: the privacy calibration "
                             "needs a public upper bound on every weight; pass "
                             "weights_upper_bound=<bound>")
        A = check_real("weights_upper_bound", bound, low=0.0, low_open=True)
        if is_dask(weights):   # lazy: its length is checked with the rows
            w = weights.to_dask_array() if hasattr(weights, "to_dask_array") else weights
            if w.dtype == object or not np.issubdtype(w.dtype, np.number) or w.ndim != 1:
                raise TypeError(f"weights must be a 1-D vector of real numbers, got dtype "
                                f"{w.dtype} with {w.ndim} dimension(s)")
            w = w.astype(np.float64)
        else:
            w = real_vector("weights", weights, n, "real numbers",
                            "a 1-D array of length {n} (one per row)")
        bad, negative = (int(c) for c in compute(np.count_nonzero(~np.isfinite(w)),
                                                 np.count_nonzero(w < 0)))
        if bad:
            raise ValueError("weights contains NaN or infinite values")
        if negative:
            raise ValueError("weights must be non-negative")
        return np.minimum(w, A), A

    def _check_fitted(self) -> None:
        if self.coeff is None:
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit() first")

    def _raw(self, X, add_bias: bool) -> np.ndarray:
        self._check_fitted()
        add_bias = check_bool("add_bias", add_bias)
        lazy, sparse = is_dask(X), is_sparse(X)
        if sparse:
            self._check_sparse()
            X = _sparse_float_matrix("X", X)
        elif not lazy:
            X = as_float_matrix("X", X)
        elif X.ndim != 2:
            raise ValueError(f"X must be 2-D (rows x columns), got {X.ndim}-D")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} columns but the model was fitted on "
                             f"{self.n_features_in_}")
        if bool(add_bias) != self.add_bias_:
            raise ValueError(f"add_bias={bool(add_bias)} but the model was fitted with "
                             f"add_bias={self.add_bias_}; pass the same value to predict")
        if lazy:  # partition-wise, lazily: a Dask vector of scores
            from .backends.dask import map_row_blocks

            return map_row_blocks(X, partial(_block_scores, model=self, add_bias=bool(add_bias)))
        if sparse:          # X @ w + bias, no bias column and no dense copy
            k = int(bool(add_bias))
            assert self.coeff is not None                   # fitted (n_features_in_ is set)
            return np.asarray(X @ self.coeff[k:]).reshape(-1) + (self.coeff[0] if k else 0.0)
        return self._features(X, bool(add_bias)) @ self.coeff

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(regularizer={self.regularizer!r}, eps={self.eps!r}, "
                f"gamma={self.gamma!r}, perturbation_method={self.perturbation_method!r}"
                + (f", delta={self.delta!r})" if self.delta else ")"))


class LogisticRegressionDP(CMSModel):
    r"""ε-differentially private L2-regularised logistic regression, DPpack style.

    Chaudhuri, Monteleoni & Sarwate, JMLR 12 (2011): objective perturbation (Algorithm 2) or
    output perturbation (Algorithm 1) of the logistic loss (curvature ``c = 1/4``). See
    :mod:`privatelr.models` for the scaling into the unit ball, ``gamma = lambda * n`` and the
    noise.

    Parameters
    ----------
    regularizer : {"l2"}
        Only the L2 regulariser :math:`\frac12\|w\|^2` (DPpack's default).
    eps : float
        Privacy level ε > 0; ``inf`` fits without privacy.
    gamma : float
        Regularisation constant > 0 (DPpack's; the paper's λ times ``n``).
    perturbation_method : {"objective", "output", "gaussian", "amp"}
        The mechanism (:func:`privatelr.erm.fit`'s ``method``); the last two are
        (ε, δ)-differentially private with ``delta``.
    delta : float
        δ in (0, 1) for ``"gaussian"`` and ``"amp"``; 0 otherwise.

    Attributes
    ----------
    coeff : ndarray
        Coefficients in the original units of ``X`` (bias first when ``add_bias``). These are
        ε-differentially private.
    result_ : privatelr.ERMResult
        The release of the engine's fit (:meth:`~privatelr.ERMResult.release`: coefficients,
        public calibration, status; no diagnostics).
        What the model keeps of the engine's fit on the scaled problem: the private
        coefficients there, the public calibration, ``status`` and ``convergence``. The
        solver's report (objective value, iterations, gradient norm) is a statistic of the
        training data and is not kept, so the fitted (or pickled) model holds nothing but the
        release and public settings.

    Notes
    -----
    Which classifier when: ``LogisticRegressionDP`` is for DPpack parity (per-column bounds,
    ``gamma``) and private tuning with :func:`privatelr.tune_classification_model`;
    :func:`privatelr.dplr` is the port of R's PrivateLR (formulas, data frames);
    :class:`privatelr.sklearn.DPLogisticRegression` is for scikit-learn pipelines and numpy
    arrays. All three run the same engine.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(300, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> m = LogisticRegressionDP(eps=float("inf"), gamma=0.1).fit(X, y, [2, 2], [-2, -2])
    >>> bool(m.coeff[0] > 0)
    True
    >>> m.predict(X[:3], raw_value=True).shape
    (3,)
    """

    _loss = "logistic"

    def predict(self, X, add_bias: bool = False, raw_value: bool = False) -> np.ndarray:
        """Predicted labels 0/1, or with ``raw_value=True`` the probabilities ``P(y = 1)``.

        ``X`` is an array, DataFrame, ``scipy.sparse`` matrix (scored as ``X @ coeff``, never
        densified) or Dask collection. ``add_bias`` must match the value used in :meth:`fit`.
        A probability of exactly 0.5 is labelled 0 (R's ``round(0.5) == 0``, as in DPpack).
        """
        z = self._raw(X, add_bias)
        if raw_value:
            return 0.5 * (1.0 + np.tanh(0.5 * z))  # the logistic function without overflow
        return (z > 0).astype(int)


class SVMDP(CMSModel):
    r"""ε-differentially private support vector machine with the Huber loss, DPpack style.

    The hinge loss is replaced by its Huberised version with constant ``huber_h`` (JMLR11
    Section 3.4.2, curvature ``c = 1/(2h)``), fitted by the engine with objective or output
    perturbation. ``kernel="Gaussian"`` approximates the kernel
    :math:`k(x, x') = \exp(-\gamma_k\|x - x'\|^2)` (``kernel_param`` :math:`= \gamma_k`, default
    ``1/p``) by ``D`` random Fourier features :math:`v_j(x) = \sqrt{2/D}\cos(\omega_j^\top x +
    \phi_j)` (JMLR11 Section 7; Rahimi & Recht 2007), drawn at fit time from
    :func:`privatelr.mechanisms.gaussian_fourier_features`. Each :math:`|v_j| \le \sqrt{2/D}`
    whatever ``x`` is, so the features get the public bounds :math:`\pm\sqrt{2/D}` and the
    scaled rows are :math:`\cos(\omega_j^\top x + \phi_j)/\sqrt D`, in the unit ball for any
    input: the guarantee holds for the released linear coefficients on the features. The
    frequencies ``omega`` and phases ``phase`` are drawn independently of the data and are part of
    the released model.

    Parameters
    ----------
    regularizer : {"l2"}
    eps : float
        Privacy level ε > 0; ``inf`` fits without privacy.
    gamma : float
        Regularisation constant > 0 (the paper's λ times ``n``).
    perturbation_method : {"objective", "output", "gaussian", "amp"}
        The mechanism (:func:`privatelr.erm.fit`'s ``method``); the last two are
        (ε, δ)-differentially private with ``delta``.
    delta : float
        δ in (0, 1) for ``"gaussian"`` and ``"amp"``; 0 otherwise.
    kernel : {"linear", "Gaussian"}
    D : int, optional
        Number of random features; required for the Gaussian kernel.
    kernel_param : float, optional
        :math:`\gamma_k` of the Gaussian kernel; default ``1/p`` with ``p`` the columns of ``X``.
    huber_h : float
        Huber constant in (0, 0.5].

    Attributes
    ----------
    coeff : ndarray
        Private coefficients (original units for the linear kernel; on the feature map ``v``
        for the Gaussian kernel).
    omega, phase : ndarray
        The random Fourier frequencies ``(p[+1], D)`` and phases ``(D,)`` (Gaussian kernel).
    result_ : privatelr.ERMResult
        The release of the engine's fit (:meth:`~privatelr.ERMResult.release`: coefficients,
        public calibration, status; no diagnostics).
        The release of the engine's fit (see :class:`LogisticRegressionDP`); no solver report.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2))
    >>> y = (X[:, 1] > X[:, 0]).astype(int)
    >>> svm = SVMDP(eps=1.0, gamma=1.0, perturbation_method="output")
    >>> svm = svm.fit(X, y, [1, 1], [-1, -1], random_state=0)
    >>> svm.predict(X[:4]).shape
    (4,)
    """

    def __init__(self, regularizer: str = "l2", eps: float | None = None,
                 gamma: float | None = None, perturbation_method: str = "objective",
                 kernel: str = "linear", D: int | None = None,
                 kernel_param: float | None = None, huber_h: float = 0.5, delta: float = 0.0):
        super().__init__(regularizer, eps, gamma, perturbation_method, delta)
        if kernel not in ("linear", "Gaussian"):
            raise ValueError(f"kernel must be 'linear' or 'Gaussian', got {kernel!r}")
        self.kernel = kernel
        if kernel == "Gaussian":
            if D is None:
                raise ValueError("D (the number of random features) must be given for the "
                                 "Gaussian kernel")
            D = check_int("D", D, low=1)
        elif D is not None:
            D = check_int("D", D, low=1)
        self.D = D
        if kernel_param is not None:
            kernel_param = check_real("kernel_param", kernel_param, low=0.0, low_open=True)
        self.kernel_param = kernel_param
        self.huber_h = check_real("huber_h", huber_h, low=0.0, high=0.5, low_open=True)
        self.omega: np.ndarray | None = None
        self.phase: np.ndarray | None = None

    def _engine_kwargs(self) -> dict:
        return {"loss": "huber", "h": self.huber_h}

    def _check_sparse(self, upper=None, lower=None) -> None:
        if self.kernel == "Gaussian":
            raise ValueError("sparse X with kernel='Gaussian': the random Fourier features "
                             "cos(X omega + phase) are dense (n x D values), so the map would "
                             "densify the design; pass a dense array (X.toarray()) or use "
                             "kernel='linear'")
        super()._check_sparse(upper, lower)

    def x_to_v(self, X) -> np.ndarray:
        """Map rows to the ``D`` random Fourier features ``sqrt(2/D) cos(X omega + phase)``.

        ``X`` must already carry the bias column if the model was fitted with ``add_bias``.
        """
        if self.omega is None:
            raise RuntimeError("x_to_v needs the random features drawn by fit(); call fit() first")
        if is_sparse(X):
            self._check_sparse()
        X = as_float_matrix("X", X)
        if X.shape[1] != self.omega.shape[0]:
            raise ValueError(f"X has {X.shape[1]} columns, the feature map expects "
                             f"{self.omega.shape[0]}")
        assert self.phase is not None and self.D is not None   # drawn with omega by fit()
        return _fourier(X, self.omega, self.phase, self.D)

    def _design(self, p, upper, lower, add_bias, rng):
        if self.kernel == "linear":
            return super()._design(p, upper, lower, add_bias, rng)
        assert self.D is not None                       # the Gaussian kernel needs D (__init__)
        if self.kernel_param is None:
            self.kernel_param = 1.0 / p  # DPpack's default, from the raw column count
        if add_bias:
            upper = np.concatenate([[1.0], upper])
            lower = np.concatenate([[1.0], lower])
        self.omega, self.phase = gaussian_fourier_features(p + int(add_bias), self.D,
                                                           self.kernel_param, rng)
        # public bounds +-sqrt(2/D) on every feature, D columns: divisor sqrt(2/D) * sqrt(D)
        divisor = np.full(self.D, np.sqrt(2.0 / self.D) * np.sqrt(self.D))
        return partial(_fourier_rows, lower=lower, upper=upper, omega=self.omega,
                       phase=self.phase, D=self.D, divisor=divisor,
                       add_bias=add_bias), self.D, divisor

    def _features(self, X, add_bias):
        X = with_intercept(X) if add_bias else X
        return X if self.kernel == "linear" else self.x_to_v(X)

    def predict(self, X, add_bias: bool = False, raw_value: bool = False) -> np.ndarray:
        """Predicted labels 0/1 (``score > 0``), or the raw scores with ``raw_value=True``.

        ``X`` as for :meth:`fit` (sparse ``X``: linear kernel only). ``add_bias`` must match
        the value used in :meth:`fit`. A score of exactly 0 is labelled 0, as in DPpack.
        """
        z = self._raw(X, add_bias)
        return z if raw_value else (z > 0).astype(int)

    def __repr__(self) -> str:
        extra = "" if self.kernel == "linear" else f", kernel='Gaussian', D={self.D}"
        extra += f", delta={self.delta!r}" if self.delta else ""
        return (f"SVMDP(regularizer={self.regularizer!r}, eps={self.eps!r}, gamma={self.gamma!r}, "
                f"perturbation_method={self.perturbation_method!r}{extra})")


def _is_model(obj) -> bool:
    return isinstance(obj, CMSModel)

