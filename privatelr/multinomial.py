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

The rows are in memory (a NumPy design, intercept column included by the caller); the solver is
the package's Newton method on the full :math:`dK \times dK` Hessian (``dK`` up to a few
hundred) or L-BFGS (``solver="lbfgs"``), stopped at a relative gradient of ``gtol``; a private
fit that does not converge is refused (the guarantees are for the exact minimiser).

:func:`fit_ovr` is the comparison the literature uses (and diffprivlib ships): one binary
"class k against the rest" fit per class, each with ε/K (sequential composition: every fit
reads every row), predicting the class of largest binary probability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp, softmax

from ._validation import as_float_matrix, check_bool, check_real, clip_rows, row_norms
from .accountant import require_budget
from .calibration import Calibration, calibrate_multinomial
from .mechanisms import check_random_state, sphere_gamma_noise
from .solver import minimize

__all__ = ["SoftmaxObjective", "MultinomialResult", "fit", "fit_ovr"]


class SoftmaxObjective:
    """Value, gradient and Hessian of the multinomial objective :math:`J` (module docstring),
    as a function of ``vec(W)`` (row-major: entry ``j * K + k`` is :math:`W_{jk}`).

    Examples
    --------
    >>> X = np.array([[1.0, 0.5], [1.0, -0.5], [1.0, 0.1]])
    >>> obj = SoftmaxObjective(X, np.array([0, 1, 2]), 3, 0.1)
    >>> f, g, H = obj.evaluate(np.zeros(6))
    >>> round(f, 6) == round(math.log(3), 6), H.shape
    (True, (6, 6))
    """

    def __init__(self, X, labels, classes: int, lambda_: float, noise=None, weights=None):
        self.X = X
        self.n, self.p = X.shape
        self.K = int(classes)
        self.d = self.p * self.K
        self.Y = np.zeros((self.n, self.K))
        self.Y[np.arange(self.n), labels] = 1.0
        self.a = np.ones(self.n) if weights is None else np.asarray(weights, dtype=float)
        self.lambda_ = float(lambda_)
        self.linear = np.zeros(self.d) if noise is None else np.asarray(noise, float) / self.n
        self.passes = 0

    def _scores(self, w):
        return self.X @ w.reshape(self.p, self.K)

    def value(self, w) -> float:
        self.passes += 1
        Z = self._scores(w)
        data = float(self.a @ (logsumexp(Z, axis=1) - np.einsum("ik,ik->i", Z, self.Y)))
        return data / self.n + 0.5 * self.lambda_ * float(w @ w) + float(self.linear @ w)

    def evaluate(self, w, hessian: bool = True):
        """``(value, gradient, Hessian or None)`` at ``w``: one pass."""
        w = np.asarray(w, dtype=float)
        self.passes += 1
        Z = self._scores(w)
        lse = logsumexp(Z, axis=1)
        P = softmax(Z, axis=1)
        data = float(self.a @ (lse - np.einsum("ik,ik->i", Z, self.Y)))
        f = data / self.n + 0.5 * self.lambda_ * float(w @ w) + float(self.linear @ w)
        R = (P - self.Y) * self.a[:, None]
        g = (self.X.T @ R).ravel() / self.n + self.lambda_ * w + self.linear
        H = None
        if hessian:
            p, K = self.p, self.K
            H4 = np.empty((p, K, p, K))
            aP = P * self.a[:, None]
            for k in range(K):
                for m in range(k, K):
                    c = -aP[:, k] * P[:, m]
                    if m == k:
                        c = c + aP[:, k]
                    block = (self.X * c[:, None]).T @ self.X / self.n
                    H4[:, k, :, m] = block
                    H4[:, m, :, k] = block.T
            H = H4.reshape(self.d, self.d) + self.lambda_ * np.eye(self.d)
        return f, g, H

    def line(self, w, p, hessian: bool = True):
        """``phi(t) = J(w + t p)`` (each evaluation one pass)."""
        return lambda t: self.value(w + t * p)

    def information(self, w) -> np.ndarray:
        """The data term's Hessian at ``w`` (no ridge)."""
        return self.evaluate(w, True)[2] - self.lambda_ * np.eye(self.d)


@dataclass(frozen=True)
class MultinomialResult:
    """A multinomial fit: the release (``coef``, ``classes``, ``calibration``, ``status``) and,
    apart, the solver's report (``diagnostics``, not private).

    Attributes
    ----------
    coef : (d, K) ndarray
        Column ``k`` is class ``classes[k]``'s coefficient vector (read-only).
    classes : tuple
        The declared classes, in the order of the columns.
    calibration : privatelr.calibration.Calibration
        The public calibration (``classes`` = K, ``d`` = d K).
    status : str
    convergence : int
    diagnostics : dict
        Iterations, passes, gradient norm (not private).
    """

    coef: np.ndarray
    classes: tuple
    calibration: Calibration
    status: str
    convergence: int
    diagnostics: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        coef = np.array(self.coef, dtype=float)
        coef.flags.writeable = False
        object.__setattr__(self, "coef", coef)

    @property
    def eps(self) -> float:
        return self.calibration.eps

    @property
    def method(self) -> str:
        return self.calibration.method

    def predict_proba(self, X) -> np.ndarray:
        """Per-class probabilities, ``(n, K)`` in the order of :attr:`classes`."""
        X = as_float_matrix("X", X)
        if X.shape[1] != self.coef.shape[0]:
            raise ValueError(f"X has {X.shape[1]} columns; the model has {self.coef.shape[0]}")
        return softmax(X @ self.coef, axis=1)

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row (a value of :attr:`classes`)."""
        return np.asarray(self.classes, dtype=object)[np.argmax(self.predict_proba(X), axis=1)]


def _label_indices(y, classes, n: int, private: bool):
    """Class indices of ``y`` under the declared ``classes`` (learned only when not private)."""
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
        labels = np.fromiter((index[v] for v in y.tolist()), dtype=np.intp, count=n)
    except KeyError:
        raise ValueError("y holds a label outside the declared classes (nothing was fitted); "
                         "declare every class in classes=") from None
    return labels, classes


def fit(X, y, *, classes=None, lambda_: float, eps: float, method: str = "objective",
        data_norm: float = 1.0, clip: bool = False, weights=None,
        weights_bound: float | None = None, random_state=None, accountant=None,
        solver: str = "newton", gtol: float = 1e-10, maxiter: int | None = None
        ) -> MultinomialResult:
    """Fit ε-differentially private multinomial logistic regression (module docstring).

    Parameters
    ----------
    X : (n, d) array
        Design (intercept column included by the caller), rows of L2 norm at most
        ``data_norm``.
    y : (n,) array
        Labels, each one of ``classes``.
    classes : sequence
        The declared classes (K >= 2), the order of ``coef``'s columns. Required when private.
    lambda_ : float
        Ridge λ > 0 (0 allowed only when non-private, if the data allow).
    eps : float
        ε >= 0; 0 or inf fits the non-private minimiser.
    method : {"objective", "output"}
    data_norm : float
        Public bound ``B`` on the rows' norm; rows above it are clipped with ``clip=True``,
        otherwise a private fit refuses.
    weights, weights_bound
        Observation weights in ``[0, weights_bound]``.
    random_state : int, Generator or None
    accountant : privatelr.PrivacyAccountant, optional
        Charged ``eps`` (pure ε-DP) once the arguments and rows are valid.
    solver : {"newton", "lbfgs"}
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
    X = as_float_matrix("X", X)
    n, p = X.shape
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    private = eps > 0 and not math.isinf(eps)
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    check_bool("clip", clip)
    if solver not in ("newton", "lbfgs"):
        raise ValueError(f"solver must be 'newton' or 'lbfgs', got {solver!r}")
    labels, classes = _label_indices(y, classes, n, private)
    a = None
    A = 1.0
    if weights is not None:
        if weights_bound is None and private:
            raise ValueError("weights given without weights_bound: pass the public bound")
        a = np.asarray(weights, dtype=float)
        if a.shape != (n,) or not np.isfinite(a).all() or (a < 0).any():
            raise ValueError(f"weights must be {n} finite non-negative numbers")
        A = float(weights_bound) if weights_bound is not None else float(a.max() or 1.0)
        if (a > A).any():
            raise ValueError("some weights exceed weights_bound (nothing was fitted)")
    cal = calibrate_multinomial(n, p, len(classes), eps=eps, lambda_=lambda_, method=method,
                                data_norm=data_norm, weights_bound=A)
    norms = row_norms(X)
    over = int(np.count_nonzero(norms > data_norm * (1 + 5e-13)))
    if private and over:
        if not clip:
            raise ValueError(f"some rows of X have L2 norm above data_norm={data_norm:g}, so "
                             "the guarantee would not hold (nothing was released); pass "
                             "clip=True or rescale X by public constants")
        X, _ = clip_rows(X, data_norm, norms=norms)
    if accountant is not None:
        require_budget(accountant, eps)
    rng = check_random_state(random_state)
    if accountant is not None:
        accountant.spend(eps, note=f"multinomial {cal.method} perturbation, {len(classes)} "
                         "classes")
    noise = sphere_gamma_noise(cal.d, cal.noise_scale, rng) if cal.method == "objective" \
        else None
    obj = SoftmaxObjective(X, labels, len(classes), cal.lambda_, noise=noise, weights=a)
    report = minimize(obj, np.zeros(cal.d), method=solver, gtol=gtol, maxiter=maxiter,
                      warm_start=False)
    del noise
    if private and report.convergence != 0:
        raise ValueError(f"the solver did not converge (code {report.convergence}): the "
                         "guarantee holds only for the exact minimiser, so nothing is released; "
                         "raise maxiter")
    w = report.x
    if cal.method == "output":
        w = w + sphere_gamma_noise(cal.d, cal.noise_scale, rng)
    diagnostics = {"iterations": report.iterations, "passes": report.passes,
                   "grad_norm": report.grad_norm, "n_exceeding": over,
                   "value": float("nan") if private else float(report.value)}
    return MultinomialResult(coef=w.reshape(p, len(classes)), classes=classes,
                             calibration=cal, status=cal.status,
                             convergence=int(report.convergence), diagnostics=diagnostics)


def fit_ovr(X, y, *, classes=None, lambda_: float, eps: float, method: str = "objective",
            data_norm: float = 1.0, clip: bool = False, random_state=None, accountant=None,
            **options) -> MultinomialResult:
    """One-vs-rest: ``K`` binary :func:`privatelr.erm.fit` fits of "class k against the rest",
    each at ``eps / K`` (the K releases compose sequentially to ``eps``); column ``k`` of
    ``coef`` is fit ``k``'s coefficients and :meth:`MultinomialResult.predict_proba` of the
    result normalises the binary odds with a softmax of the columns' scores (the class with the
    largest binary log-odds wins, as in scikit-learn's and diffprivlib's one-vs-rest).

    ``calibration`` is the first binary fit's (every fit has the same one, at ``eps / K``);
    ``options`` go to :func:`privatelr.erm.fit` (``delta``, ``solver``, ``gtol``, ...).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = np.c_[np.full(300, 0.5), rng.uniform(-0.5, 0.5, size=(300, 2))]
    >>> y = np.argmax(X[:, 1:] @ [[2, -2, 0], [0, 2, -2]], axis=1)
    >>> res = fit_ovr(X, y, classes=[0, 1, 2], lambda_=0.01, eps=3.0, random_state=0)
    >>> res.coef.shape, res.calibration.eps
    ((3, 3), 1.0)
    """
    from . import erm

    X = as_float_matrix("X", X)
    n, p = X.shape
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    private = eps > 0 and not math.isinf(eps)
    labels, classes = _label_indices(y, classes, n, private)
    K = len(classes)
    if accountant is not None:
        require_budget(accountant, eps, options.get("delta", 0.0))
    rng = check_random_state(random_state)
    share = eps / K if private else eps
    fits = [erm.fit(X, (labels == k).astype(int), lambda_=lambda_, eps=share, method=method,
                    data_norm=data_norm, clip=clip, random_state=rng, accountant=accountant,
                    **options) for k in range(K)]
    status = "ok" if all(f.status == "ok" for f in fits) else "; ".join(
        f"{c}: {f.status}" for c, f in zip(classes, fits) if f.status != "ok")
    return MultinomialResult(coef=np.column_stack([f.coef for f in fits]), classes=classes,
                             calibration=fits[0].calibration, status=status,
                             convergence=max(f.convergence for f in fits),
                             diagnostics={"fits": [f.diagnostics for f in fits]})
