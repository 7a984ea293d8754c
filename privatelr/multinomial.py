r"""Multinomial (softmax) logistic regression over declared classes, fitted privately.

:func:`fit` minimises

.. math::
    J(W) = \frac1n\sum_{i=1}^n a_i\Big(\log\sum_{k=1}^K e^{x_i^\top w_k} - x_i^\top w_{y_i}\Big)
           + \frac\lambda2\|W\|_F^2 + \frac1n\langle B, W\rangle

over :math:`W = (w_1, \dots, w_K) \in \mathbb R^{d\times K}` (every class has its own vector,
identified by the ridge, as in scikit-learn's multinomial ``LogisticRegression``), with the
objective-perturbation noise ``B`` or, for output perturbation, noise added to the minimiser.
The calibration — Lipschitz constant :math:`\sqrt2 B`, Böhning's curvature bound 1/2 of rank
``K - 1``, and what they cost — is derived in
:func:`privatelr.calibration.calibrate_multinomial`.

**Declared classes.** The class list is a declaration (``classes=``), never learned from the
private labels: it fixes the columns of ``W`` and their meaning. A label outside it is refused
(fail closed). A non-private fit (``eps`` 0 or inf) may take the sorted distinct labels.

The rows come through the one pipeline's :class:`~privatelr.rows.RowSource` (:func:`fit_rows`):
a NumPy design, a ``scipy.sparse`` one (never densified) or Dask partitions, the intercept
column included by the caller. The solver is the package's Newton method on the full
:math:`dK \times dK` Hessian up to ``dK = 1000``, Hessian-free Newton above it (in memory),
stopped at a relative gradient of ``gtol``; a private fit that does not converge is refused
(the guarantees are for the exact minimiser).

:func:`fit_ovr` is the comparison the literature uses (and diffprivlib ships): one binary
"class k against the rest" fit per class, each with ε/K (sequential composition: every fit
reads every row), predicting the class of largest binary probability.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, softmax

from . import erm
from ._validation import as_float_matrix, check_bool, check_real, is_sparse
from .accountant import require_budget
from .calibration import GAUSSIAN_METHODS, Calibration, calibrate_multinomial
from .losses import LogisticLoss
from .mechanisms import check_random_state
from .softmax import SoftmaxObjective

__all__ = ["SoftmaxObjective", "MultinomialResult", "fit", "fit_ovr", "fit_rows",
           "MULTICLASS"]

#: The multiclass models: ``"multinomial"`` (softmax) and ``"ovr"`` (one-vs-rest).
MULTICLASS = ("multinomial", "ovr")


@dataclass(frozen=True)
class MultinomialResult:
    """A multiclass fit: the release (``coef``, ``classes``, ``calibration``, ``status``) and,
    apart, the solver's report (``diagnostics``, not private).

    Attributes
    ----------
    coef : (d, K) ndarray
        Column ``k`` is class ``classes[k]``'s coefficient vector (read-only).
    classes : tuple
        The declared classes, in the order of the columns.
    calibration : privatelr.calibration.Calibration
        The public calibration: the multinomial model's (``classes`` = K, ``d`` = d K), or
        one-vs-rest's first binary fit (every fit has the same one, at ``eps / K``).
    status : str
    convergence : int
    multiclass : {"multinomial", "ovr"}
    eps, delta : float
        The whole fit's privacy budget (one-vs-rest: the sum over its ``K`` fits).
    diagnostics : dict
        Iterations, passes, gradient norm (not private).
    """

    coef: np.ndarray
    classes: tuple
    calibration: Calibration
    status: str
    convergence: int
    multiclass: str = "multinomial"
    eps: float = 0.0
    delta: float = 0.0
    diagnostics: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        coef = np.array(self.coef, dtype=float)
        coef.flags.writeable = False
        object.__setattr__(self, "coef", coef)

    @property
    def method(self) -> str:
        return self.calibration.method

    def decision_function(self, X) -> np.ndarray:
        """The ``(n, K)`` class scores ``X @ coef`` (``X`` dense or ``scipy.sparse``)."""
        if not is_sparse(X):
            X = as_float_matrix("X", X)
        if X.shape[1] != self.coef.shape[0]:
            raise ValueError(f"X has {X.shape[1]} columns; the model has {self.coef.shape[0]}")
        return np.asarray(X @ self.coef)

    def predict_proba(self, X) -> np.ndarray:
        """Per-class probabilities, ``(n, K)`` in the order of :attr:`classes`: the softmax of
        the scores (multinomial), or the binary fits' probabilities normalised to sum to one
        (one-vs-rest, as scikit-learn's)."""
        return class_probabilities(self.decision_function(X), self.multiclass)

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row (a value of :attr:`classes`)."""
        return np.asarray(self.classes, dtype=object)[np.argmax(self.decision_function(X),
                                                                axis=1)]


def class_probabilities(scores: np.ndarray, multiclass: str) -> np.ndarray:
    """Per-class probabilities from ``(n, K)`` scores: softmax for the multinomial model, the
    normalised binary probabilities for one-vs-rest (rows of NaN scores give NaN)."""
    if multiclass == "ovr":
        p = expit(scores)
        with np.errstate(invalid="ignore", divide="ignore"):
            return p / p.sum(axis=1, keepdims=True)
    return softmax(scores, axis=1)


def check_multiclass(multiclass) -> str:
    """``"multinomial"`` or ``"ovr"``, or a ``ValueError`` naming them."""
    if multiclass not in MULTICLASS:
        raise ValueError(f"multiclass must be 'multinomial' or 'ovr', got {multiclass!r}")
    return multiclass


def label_codes(y, classes, n: int, private: bool):
    """Class codes of ``y`` under the declared ``classes`` (learned, sorted, only when not
    private): ``(codes, classes)``."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be a vector with one label per row of X ({n}), got shape "
                         f"{y.shape}")
    if classes is None:
        if private:
            raise ValueError("classes= is required in a private fit: the class list shapes the "
                             "released coefficients and must be declared, not learned from the "
                             "labels (e.g. classes=['setosa', 'versicolor', 'virginica'])")
        classes = sorted(set(y.tolist()))
    classes = tuple(classes)
    if len(classes) < 2 or len(set(classes)) != len(classes):
        raise ValueError(f"classes must hold at least two distinct labels, got {classes!r}")
    index = {c: k for k, c in enumerate(classes)}
    try:
        codes = np.fromiter((index[v] for v in y.tolist()), dtype=np.intp, count=n)
    except (KeyError, TypeError):
        raise ValueError("y holds a label outside the declared classes (nothing was fitted); "
                         "declare every class in classes=") from None
    return codes, classes


def fit_rows(rows, classes: tuple, *, multiclass: str = "multinomial", lambda_: float,
             eps: float, method: str = "objective", delta: float = 0.0, data_norm: float,
             clip: bool, rng: np.random.Generator, accountant=None, solver: str = "auto",
             gtol: float = 1e-10, maxiter: int | None = None, scan=None, what: str = "X",
             outside_hint: str = "", allow_nonconverged: bool = False) -> MultinomialResult:
    """The multiclass pipeline after the arguments are checked, for every backend: scan → fail
    closed or clip → calibrate → spend → release. ``rows`` is a
    :class:`~privatelr.rows.RowSource` whose rows carry class ``codes`` (0 .. K - 1, the
    positions in ``classes``); ``scan`` a front end's scan of exactly these rows (saves the
    pass). ``"ovr"`` runs :func:`privatelr.erm.fit_rows` on ``rows.one_vs_rest(k)`` for every
    class with ``eps / K`` (and ``delta / K``)."""
    K = len(classes)
    private = erm.cal_private(eps)
    if scan is None:
        scan = rows.scan(bound=data_norm, what=what)
    if private and scan.n_over:
        if not clip:
            raise ValueError(erm.OUTSIDE_BOUND.format(what=what, data_norm=data_norm,
                                                      more=outside_hint))
        rows, scan = rows.clipped(data_norm), scan.clipped_to(data_norm)
    if multiclass == "ovr":
        if accountant is not None:
            require_budget(accountant, eps, delta)
        share, dshare = (eps / K, delta / K) if private else (eps, 0.0)
        fits = [erm.fit_rows(rows.one_vs_rest(k), lambda_=lambda_, eps=share, method=method,
                             delta=dshare, loss=LogisticLoss(), data_norm=data_norm, clip=False,
                             rng=rng, solver=solver, gtol=gtol, maxiter=maxiter,
                             accountant=accountant, allow_nonconverged=allow_nonconverged,
                             what=what, scan=scan) for k in range(K)]
        status = "ok" if all(f.status == "ok" for f in fits) else "; ".join(
            f"{c}: {f.status}" for c, f in zip(classes, fits) if f.status != "ok")
        return MultinomialResult(coef=np.column_stack([f.coef for f in fits]),
                                 classes=tuple(classes), calibration=fits[0].calibration,
                                 status=status, convergence=max(f.convergence for f in fits),
                                 multiclass="ovr", eps=eps, delta=delta if private else 0.0,
                                 diagnostics={"fits": [f.diagnostics for f in fits],
                                              "n_exceeding": scan.n_over})
    if method in GAUSSIAN_METHODS:
        raise ValueError(f"method={method!r} is not available for the multinomial model (its "
                         "calibration is derived for the pure-eps methods); use "
                         "method='objective' or 'output', or multiclass='ovr'")
    scan.check_magnitude(what)
    cal = calibrate_multinomial(scan.n, rows.d, K, eps=eps, lambda_=lambda_, method=method,
                                data_norm=data_norm, weights_bound=rows.weights_bound)
    if accountant is not None:
        require_budget(accountant, eps)
        accountant.spend(eps, note=f"multinomial {cal.method} perturbation, {K} classes")
    res = erm.release(lambda noise: rows.softmax_objective(K, cal.lambda_, noise), cal, rng,
                      loss_name="multinomial", solver=solver, gtol=gtol, maxiter=maxiter,
                      n_exceeding=scan.n_over, allow_nonconverged=allow_nonconverged)
    assert res.diagnostics is not None      # a fresh release has them
    diagnostics = res.diagnostics.to_dict() | {"solver": res.solver}
    return MultinomialResult(coef=res.coef.reshape(rows.d, K), classes=tuple(classes),
                             calibration=cal, status=res.status, convergence=res.convergence,
                             multiclass="multinomial", eps=eps, delta=0.0,
                             diagnostics=diagnostics)


def fit(X, y, *, classes=None, lambda_: float, eps: float, method: str = "objective",
        multiclass: str = "multinomial", delta: float = 0.0,
        data_norm: float = 1.0, clip: bool = False, weights=None,
        weights_bound: float | None = None, random_state=None, accountant=None,
        solver: str = "auto", gtol: float = 1e-10, maxiter: int | None = None
        ) -> MultinomialResult:
    """Fit ε-differentially private multinomial (or one-vs-rest) logistic regression.

    Parameters
    ----------
    X : (n, d) array or scipy.sparse matrix
        Design (intercept column included by the caller), rows of L2 norm at most
        ``data_norm``. A sparse design is never densified.
    y : (n,) array
        Labels, each one of ``classes``.
    classes : sequence
        The declared classes (K >= 2), the order of ``coef``'s columns. Required when private.
    lambda_ : float
        Ridge λ > 0 (0 allowed only when non-private, if the data allow).
    eps : float
        ε >= 0; 0 or inf fits the non-private minimiser.
    method : {"objective", "output"}
        With ``multiclass="ovr"`` also ``"gaussian"`` and ``"amp"`` (with ``delta``).
    multiclass : {"multinomial", "ovr"}
        The softmax model, or :func:`fit_ovr`'s one binary fit per class.
    delta : float
        δ of the Gaussian methods (one-vs-rest only).
    data_norm : float
        Public bound ``B`` on the rows' norm; rows above it are clipped with ``clip=True``,
        otherwise a private fit refuses.
    weights, weights_bound
        Observation weights in ``[0, weights_bound]`` (the bound is required with weights).
    random_state : int, Generator or None
    accountant : privatelr.PrivacyAccountant, optional
        Charged ``eps`` (pure ε-DP) once the arguments and rows are valid.
    solver : {"auto", "newton", "lbfgs", "hessian-free"}
        ``"auto"``: Newton up to ``d K = 1000``, Hessian-free Newton (conjugate gradients on
        Hessian-vector products) above.
    gtol : float
        Relative gradient tolerance.
    maxiter : int, optional

    Returns
    -------
    MultinomialResult

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = np.c_[np.full(300, 0.5), rng.uniform(-0.5, 0.5, size=(300, 2))]
    >>> y = np.array(["a", "b", "c"])[np.argmax(X[:, 1:] @ [[2, -2, 0], [0, 2, -2]], axis=1)]
    >>> res = fit(X, y, classes=["a", "b", "c"], lambda_=0.01, eps=1.0, random_state=0)
    >>> res.coef.shape, res.classes, res.status
    ((3, 3), ('a', 'b', 'c'), 'ok')
    """
    from .backends import as_rows

    if not is_sparse(X):
        X = as_float_matrix("X", X, finite=False)
    n = X.shape[0]
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    private = erm.cal_private(eps)
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    check_bool("clip", clip)
    multiclass = check_multiclass(multiclass)
    if solver not in ("auto", "newton", "lbfgs", "hessian-free"):
        raise ValueError(f"solver must be 'auto', 'newton', 'lbfgs' or 'hessian-free', got "
                         f"{solver!r}")
    codes, classes = label_codes(y, classes, n, private)
    if weights is not None and weights_bound is None and not private:
        weights_bound = float(np.max(weights, initial=0.0)) or 1.0
    rows = as_rows(X, (codes > 0).astype(np.float64), weights, weights_bound, codes=codes)
    return fit_rows(rows, classes, multiclass=multiclass, lambda_=lambda_, eps=eps,
                    method=method, delta=delta, data_norm=data_norm, clip=clip,
                    rng=check_random_state(random_state), accountant=accountant, solver=solver,
                    gtol=gtol, maxiter=maxiter)


def fit_ovr(X, y, **options) -> MultinomialResult:
    """One-vs-rest: :func:`fit` with ``multiclass="ovr"`` — ``K`` binary
    :func:`privatelr.erm.fit_rows` fits of "class k against the rest", each at ``eps / K``
    (the K releases compose sequentially to ``eps``: every fit reads every row); column ``k``
    of ``coef`` is fit ``k``'s coefficients and the largest binary score wins, as in
    scikit-learn's and diffprivlib's one-vs-rest.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = np.c_[np.full(300, 0.5), rng.uniform(-0.5, 0.5, size=(300, 2))]
    >>> y = np.argmax(X[:, 1:] @ [[2, -2, 0], [0, 2, -2]], axis=1)
    >>> res = fit_ovr(X, y, classes=[0, 1, 2], lambda_=0.01, eps=3.0, random_state=0)
    >>> res.coef.shape, res.calibration.eps, res.eps
    ((3, 3), 1.0, 3.0)
    """
    return fit(X, y, multiclass="ovr", **options)
