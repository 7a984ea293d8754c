r"""``dplr()``: R PrivateLR's differentially private logistic regression, with formulas and factors.

``dplr`` is a thin front end: it builds the design (:mod:`privatelr.design`), recodes the
response as R does, optionally scales and randomly projects the covariates, enforces the norm
bound on the rows, and hands plain facts (design with intercept column, 0/1 labels, λ, ε, method,
norm bound ``B``) to :func:`privatelr.erm.fit`, where all the privacy arithmetic lives.

Privacy calibration (why ``B = sqrt(data_norm² + 1)``)
------------------------------------------------------
The Chaudhuri–Monteleoni–Sarwate theorems (JMLR 2011, Theorems 6 and 9) need every row of the
design — the constant intercept entry included — inside the ball of radius ``B`` used for the
calibration. A covariate row with ``‖x‖ ≤ data_norm`` gives the design row ``(1, x)`` of norm
``≤ sqrt(data_norm² + 1)``, so that is the ``B`` passed to the engine by default (``B =
data_norm`` for a formula without intercept). Covariate rows above ``data_norm`` are clipped into
the ball with ``clip=True``; otherwise one :class:`~privatelr.PrivacyWarning` gives their count
and largest norm (the guarantee does not hold for them).

``compat="PrivateLR"`` reproduces PrivateLR's calibration instead: ``B = 1`` although the
intercept makes every design row longer than 1, so the released coefficients are *not*
ε-private as stated (a :class:`~privatelr.PrivacyWarning` says so). Use it only to compare a
ported script with R draw-for-draw in distribution. The default mode is noisier: for objective
perturbation both ``2 log(1 + c B²/(nλ))`` and the noise scale ``2B/ε'`` grow with ``B``.

Default λ
---------
``lambda_=None`` uses R's rule, the smallest λ with ``2 log(1 + 1/(4nλ)) = ε/10``, i.e.
``λ = 1/(4n(exp(ε/20) − 1))``, in both modes (``eps=0``: λ = 0.001). R's rule assumes ``B = 1``;
in the default intercept-aware mode the same λ costs a larger penalty
``2 log(1 + B²/(4nλ)) > ε/10`` (for ``data_norm = 1``, ``B² = 2``: about ε/5 for small ε).
``n`` is the number of rows used (after dropping rows with missing values; R uses
``nrow(data)``).

What is not private
-------------------
Only the coefficients are ε-differentially private. The C-index (always computed, as in R), a
data-driven threshold (``threshold="youden"``/``"topleft"``) and ``do_scale`` (centre, standard
deviations and largest row norm of the data) are computed from the data without noise;
``dplr`` raises a :class:`~privatelr.PrivacyWarning` for the last two.

Random projection
-----------------
``rp_dim != 0`` multiplies the covariates (not the intercept) by an Achlioptas matrix drawn from
the same random generator as the noise (:func:`privatelr.mechanisms.achlioptas_matrix`), then
clips the projected rows into the ``data_norm`` ball. The matrix is independent of the data and
the clipping is row-wise, so this is a public map applied to each row before the private fit:
every row fed to the engine lies in the ball and the guarantee holds (PrivateLR does not clip,
so its projected rows can exceed the bound).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import expit

from . import erm
from ._validation import check_int, check_real, clip_rows, row_norms, scan_rows
from .design import DesignSpec, Preprocess, as_frame, formula_text, make_spec, \
    r_number, rp_suggest, scaled, standardise
from .design.rsyntax import Name, deparse
from .exceptions import PrivacyWarning
from .accountant import require_budget
from .mechanisms import achlioptas_matrix, check_random_state
from .report.roc import best_threshold, c_index
from .report.text import DPLRSummary, summarize

__all__ = ["dplr", "DPLR", "predict", "summary", "scaled", "default_lambda"]

_THRESHOLDS = ("fixed", "youden", "topleft")


def default_lambda(n: int, eps: float) -> float:
    """R's default regulariser: ``1/(4 n (exp(eps/20) - 1))``; 0.001 when ``eps`` is 0 (or inf).

    It is the smallest λ with ``2 log(1 + 1/(4 n λ)) = eps/10`` (PrivateLR's ``lambda.eff``).
    Computed as written when ``exp(eps/20) - 1`` is a normal double, else from
    ``log λ = -log(4n) - log(exp(eps/20) - 1)`` (no overflow for large ``eps``, no underflow of
    ``eps/20`` for tiny ones). A λ beyond the double range — ``eps`` below about 1e-306 (λ
    overflows) or above about 14,200 (λ underflows to 0) — raises ``ValueError`` naming ``eps``.

    Examples
    --------
    >>> round(default_lambda(150, 1.0), 10)
    0.0325069442
    >>> default_lambda(150, 1e-300) == 1 / (4 * 150 * 5e-302)
    True
    """
    if eps == 0 or math.isinf(eps):
        return 0.001
    from ._validation import _TINY, exp_or_raise, log_expm1

    em = math.expm1(eps / 20.0) if eps < 14000.0 else math.inf
    if _TINY <= em < math.inf:
        lam = 1.0 / (4.0 * n * em)
        if 0.0 < lam < math.inf:
            return lam
    log_em = log_expm1(eps, 20.0)
    return exp_or_raise(
        -math.log(4.0 * n) - log_em, {"eps": (eps, -log_em), "n": (n, -math.log(4.0 * n))},
        "the default lambda_ 1/(4*n*(exp(eps/20) - 1)) (the smallest lambda_ whose privacy "
        "penalty is eps/10)",
        {"eps": ("increase eps, or pass lambda_ explicitly",
                 "pass lambda_ explicitly (e.g. lambda_=0.001), or eps=inf for a non-private fit"),
         "n": ("", "pass lambda_ explicitly")})


@dataclass(eq=False)
class DPLR:
    """A fitted ``dplr`` model (R's ``"dplr"`` list; dots in names become underscores).

    Attributes
    ----------
    par, coefficients : pandas.Series
        The (private) coefficients, indexed by design column (``(Intercept)``, ...).
    value : float
        Objective value at the returned minimiser (noise term included for objective
        perturbation). **Not private** (it depends on the data).
    counts, convergence, message
        As R's ``optim``: evaluation counts, 0 when converged, solver message.
    CIndex : float
        Training AUC with ties counted half. **Not private.**
    eps, eps_eff, penalty, lambda_ : float
        Privacy level, ε' used for the noise, regulariser's privacy cost, λ used.
    n, d : int
        Rows used and number of coefficients.
    p_tr : float
        Classification threshold (0.5 unless ``threshold`` is data-driven: then not private).
    did_rp : bool
    rp_dim : int or None
    rp_p : ndarray or None
        The (p × q) projection matrix, already divided by sqrt(q).
    scaled : bool
        ``do_scale`` was used (centre/scale/factor are in ``spec`` and reused by ``predict``).
    status : str
        ``ok``, ``adjusted lambda`` or ``unique.outcomes``, + `` nonconvergence`` if the solver
        did not converge.
    formula : str
        The formula in R's form, ``.`` expanded.
    call : str
        The call that produced the model.
    spec : DesignSpec
        Everything ``predict`` needs to rebuild the design.
    method : str
        ``objective``, ``output`` or ``nonprivate``.
    norm_bound : float
        ``B`` used for the calibration. ``data_norm``, ``compat``, ``threshold``,
        ``n_exceeding``, ``n_clipped``, ``n_dropped``, ``scale_factor`` are as passed/observed.
    """

    coefficients: pd.Series
    value: float
    counts: dict
    convergence: int
    message: str
    CIndex: float
    eps: float
    eps_eff: float
    penalty: float
    lambda_: float
    n: int
    d: int
    p_tr: float
    did_rp: bool
    rp_dim: int | None
    rp_p: np.ndarray | None
    scaled: bool
    status: str
    formula: str
    call: str
    spec: DesignSpec = field(repr=False)
    method: str = "objective"
    norm_bound: float = 1.0
    data_norm: float = 1.0
    compat: str | None = None
    threshold: str = "fixed"
    n_exceeding: int = 0
    n_clipped: int = 0
    n_dropped: int = 0
    scale_factor: float = 1.0

    @property
    def par(self) -> pd.Series:
        """Same as ``coefficients`` (R's ``par``)."""
        return self.coefficients

    @property
    def classes(self) -> list:
        """The two labels ``predict(type="class")`` returns (0-coded first)."""
        return list(self.spec.labels)

    def predict(self, data, type: str = "probabilities") -> np.ndarray:
        """Predicted probabilities (default) or class labels for new data.

        The design is rebuilt from ``spec`` (same columns, factor levels, stored scaling and
        projection). Rows with a missing value give NaN (probabilities) or None (labels).
        ``type`` other than ``"probabilities"`` returns labels: the response's second value
        when ``p > p_tr``, else its first (for a multi-level factor: ``"not <first level>"``
        and the first level).

        Examples
        --------
        >>> from privatelr import dplr
        >>> from privatelr.datasets import load_iris
        >>> iris = load_iris()
        >>> m = dplr("Species ~ .", iris, eps=0)
        >>> m.predict(iris.iloc[[0]], type="class").tolist()
        ['setosa']
        """
        return predict(self, data, type=type)

    def pred(self, data, type: str = "probabilities") -> np.ndarray:
        """R's convenience closure ``model$pred(data)``: same as :meth:`predict`."""
        return predict(self, data, type=type)

    def summary(self):
        """The R-style summary (see :func:`summary`)."""
        return summary(self)

    def to_json(self, path=None):
        """Save the model as versioned JSON (:mod:`privatelr.persist`); no path: return the text.

        ``privatelr.load_model(path)`` reads it back; the loaded model predicts bit for bit
        what this one predicts.
        """
        from .persist import dumps, save_model

        if path is None:
            return dumps(self)
        save_model(self, path)

    def __repr__(self) -> str:
        return str(summary(self))

    __str__ = __repr__

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(repr(self))

    def _repr_html_(self) -> str:  # Jupyter: summary table, privacy fields highlighted
        from .report.html import dplr_html

        return dplr_html(self)

    def plot_roc(self, data, ax=None):
        """ROC curve on labelled ``data`` (see :func:`privatelr.plot.plot_roc`; not private)."""
        from .report.plots import plot_roc

        return plot_roc(self, data, ax=ax)

    def plot_coefficients(self, ax=None, draws: int = 200, random_state=None, **kwargs):
        """Coefficients with the privacy-noise spread (:func:`privatelr.plot.plot_coefficients`)."""
        from .report.plots import plot_coefficients

        return plot_coefficients(self, ax=ax, draws=draws, random_state=random_state, **kwargs)


#: ``predict``'s accepted ``type`` values: probabilities (``"response"`` is glm's word for
#: them), class labels, or the linear predictor (``"link"``).
PREDICT_TYPES = ("probabilities", "response", "class", "link")


def predict(model: DPLR, data, type: str = "probabilities") -> np.ndarray:
    """``predict(model, data, type="probabilities")`` as in R (module-level form).

    ``type`` is ``"probabilities"`` (or glm's ``"response"``), ``"class"`` or ``"link"`` (the
    linear predictor); R treats any other value as ``"class"``, here it is a ``ValueError``.
    Every input row gets one output: a row with a missing value, or whose probability is not a
    number (infinite covariates), gets NaN, and no class (``None``).

    Examples
    --------
    >>> from privatelr import dplr, predict
    >>> from privatelr.datasets import load_mtcars
    >>> m = dplr("am ~ mpg + factor(cyl)", load_mtcars(), eps=0)
    >>> predict(m, load_mtcars().head(2)).round(3).tolist()
    [0.499, 0.499]
    """
    if not isinstance(model, DPLR):
        raise TypeError("model must be a DPLR (returned by dplr()), got "
                        f"{model.__class__.__name__}")
    if not isinstance(type, str) or type not in PREDICT_TYPES:
        raise ValueError(f"type must be one of {PREDICT_TYPES}, got {type!r}")
    if data.__class__.__module__.split(".")[0] == "dask":  # lazy, partition-wise
        from .distributed import predict_dask
        return predict_dask(model, data, type=type)
    X, complete = model.spec.transform(data)
    return scores_to_output(X, complete, model.coefficients.to_numpy(), model.p_tr,
                            model.spec.labels, type)


def scores_to_output(X: np.ndarray, complete: np.ndarray, coef: np.ndarray, p_tr: float,
                     labels, type: str) -> np.ndarray:
    """Predictions of the complete rows ``X`` spread back over all rows (``complete`` mask).

    The linear predictor is computed row by row (einsum), so a row's prediction does not
    depend on the other rows of its batch (BLAS gemv's rounding does).
    """
    eta = np.full(complete.shape[0], np.nan)
    if X.shape[0]:
        eta[complete] = np.einsum("ij,j->i", X, coef)
    if type == "link":
        return eta
    p = expit(eta)
    if type in ("probabilities", "response"):
        return p
    lo, hi = labels
    out = np.where(p > p_tr, np.array([hi]), np.array([lo]))   # R: (p > p.tr) + 1
    missing = np.isnan(p)
    if not missing.any():
        return out
    out = out.astype(object)
    out[missing] = None
    return out


def summary(model: DPLR) -> DPLRSummary:
    """R's ``summary(model)``: an object whose ``print`` mirrors PrivateLR's layout.

    Examples
    --------
    >>> from privatelr import dplr, summary
    >>> from privatelr.datasets import load_iris
    >>> text = str(summary(dplr("I(Species == 'setosa') ~ .", load_iris(), eps=0)))
    >>> [line.strip() for line in text.splitlines()[2:4]]
    ['Privacy level: 0', 'Regularization parameter: 0.001']
    """
    if not isinstance(model, DPLR):
        raise TypeError("model must be a DPLR (returned by dplr()), got "
                        f"{model.__class__.__name__}")
    return summarize(model)


# ---------------------------------------------------------------------------------------------
# dispatch
# ---------------------------------------------------------------------------------------------

def _describe(obj) -> str:
    if isinstance(obj, str):
        return repr(obj)
    if isinstance(obj, pd.DataFrame):
        return f"<DataFrame {obj.shape[0]}x{obj.shape[1]}>"
    if isinstance(obj, np.ndarray):
        return f"<ndarray {'x'.join(map(str, obj.shape))}>"
    if isinstance(obj, (pd.Series, pd.Categorical)):
        return f"<{type(obj).__name__} of length {len(obj)}>"
    if obj is None:
        return "None"
    return f"<{type(obj).__name__}>"


def _target_name(columns: list, target, what: str) -> str:
    if target is None:
        return columns[-1]
    if isinstance(target, (bool, np.bool_)):
        raise TypeError(f"target must be a column name or position, got {target!r}")
    if isinstance(target, (int, np.integer)):
        k = int(target)
        if not -len(columns) <= k < len(columns):
            raise ValueError(f"target={k} is out of range for {what} with {len(columns)} columns "
                             "(positions are 0-based; negative counts from the end)")
        return columns[k]
    if target in columns:
        return target
    raise ValueError(f"target={target!r} is not a column of {what}; columns: {list(columns)}")


def _quote(name: str) -> str:
    return deparse(Name(name))


def _as_covariates(x, n: int | None) -> pd.DataFrame:
    if isinstance(x, (pd.DataFrame, dict, np.ndarray)):
        frame = as_frame(x if not isinstance(x, np.ndarray) or x.ndim != 1 else x.reshape(-1, 1),
                         "data (the covariates)")
    else:
        frame = as_frame(np.asarray(x), "data (the covariates)")
    frame = frame.reset_index(drop=True)
    if n is not None and len(frame) != n:
        raise ValueError(f"the label vector has {n} values but data has {len(frame)} rows; they "
                         "must match")
    return frame.copy()


def _resolve(object, data, target):
    """(formula text, data frame) for every accepted input form."""
    if isinstance(object, str) or type(object).__module__.split(".")[0] == "formulaic":
        if data is None:
            raise TypeError("dplr(formula, data): data is required with a formula")
        if target is not None:
            raise TypeError("target is only used with a DataFrame or matrix object, not a formula")
        return formula_text(object), data
    if isinstance(object, pd.DataFrame):
        if data is not None:
            raise TypeError("dplr(DataFrame, ...): pass the covariates inside the DataFrame and "
                            "select the response with target=, not data=")
        if object.shape[1] < 2:
            raise ValueError("the DataFrame needs a response column and at least one covariate")
        frame = object.copy()
        frame.columns = [str(c) for c in frame.columns]
        name = _target_name(list(frame.columns), target, "the DataFrame")
        return f"{_quote(name)} ~ .", frame
    if isinstance(object, np.ndarray) and object.ndim == 2:
        if data is not None:
            raise TypeError("dplr(matrix, ...): the matrix holds response and covariates; select "
                            "the response with target=, not data=")
        if object.shape[1] < 2:
            raise ValueError("the matrix needs a response column and at least one covariate")
        frame = pd.DataFrame(object, columns=[f"X{j + 1}" for j in range(object.shape[1])])
        name = _target_name(list(frame.columns), target, "the matrix")
        return f"{name} ~ .", frame
    is_vector = isinstance(object, (pd.Series, pd.Categorical, list, tuple)) or (
        isinstance(object, np.ndarray) and object.ndim == 1)
    if is_vector:
        if data is None:
            raise TypeError("dplr(labels, data): pass the covariates as data (DataFrame or 2-D "
                            "array) with a label vector")
        if target is not None:
            raise TypeError("target is not used with a label vector")
        y = object
        if isinstance(y, pd.Series):
            y = y.reset_index(drop=True)
        elif isinstance(y, pd.Categorical):
            y = pd.Series(y)
        else:
            y = pd.Series(np.asarray(y))
        frame = _as_covariates(data, len(y))
        if "dplr.class" in frame.columns:
            raise ValueError("data already has a column named 'dplr.class'; rename it")
        frame["dplr.class"] = y.to_numpy() if not isinstance(y.dtype, pd.CategoricalDtype) \
            else y.values
        return "dplr.class ~ .", frame
    raise TypeError("dplr() accepts a formula string (or formulaic.Formula) with a DataFrame, a "
                    "DataFrame or 2-D numpy array with target=, or a label vector (numpy, pandas "
                    f"Series/Categorical, list) with covariates as data; got {_describe(object)}")


def _say(verbose: int, level: int, msg: str) -> None:
    if verbose >= level:
        print(msg)


def _warn_rows_outside(k: int, n: int, data_norm: float, largest: float, *,
                       stacklevel: int) -> None:
    """The one PrivacyWarning for covariate rows above ``data_norm`` that were not clipped."""
    warnings.warn(f"dplr: {k} of {n} covariate rows have L2 norm above data_norm={data_norm:g} "
                  f"(largest {largest:.4g}): the differential-privacy guarantee does not hold for "
                  "them. Pass clip=True, rescale the covariates with public bounds, or raise "
                  "data_norm", PrivacyWarning, stacklevel=stacklevel + 1)


def dplr(object, data=None, *, target=None, lambda_: float | None = None, eps: float = 1.0,
         verbose: int = 0, rp_dim: int = 0, threshold: str = "fixed", do_scale: bool = False,
         op: bool = True, data_norm: float = 1.0, clip: bool = False, compat: str | None = None,
         random_state=None, levels: dict | None = None, accountant=None) -> DPLR:
    """ε-differentially private L2-regularised logistic regression, R PrivateLR style.

    Parameters
    ----------
    object : str, formulaic.Formula, DataFrame, 2-D ndarray or label vector
        R's S3 dispatch: a formula (``"Species ~ ."``) with ``data``; a DataFrame or matrix
        holding response and covariates (response chosen by ``target``); or the response as a
        vector (numeric 0/1, bool, Categorical, strings) with the covariates in ``data`` — the
        response is then named ``dplr.class``.
    data : DataFrame, dict of columns or 2-D array, optional
        The data for a formula, or the covariates for a label vector. Unnamed array columns are
        called ``X1, X2, ...``.
    target : str or int, optional
        Response column of a DataFrame/matrix ``object`` (name or 0-based position; default the
        last column, R's ``ncol(object)``).
    lambda_ : float, optional
        Regulariser λ > 0 of ``(λ/2)‖w‖²``. None: R's rule ``1/(4n(exp(eps/20) − 1))`` (0.001
        when ``eps`` is 0). If objective perturbation cannot afford λ, it is raised (status
        ``"adjusted lambda"``).
    eps : float
        Privacy level ε >= 0; 0 gives the non-private fit (with either ``op``).
    verbose : int
        0 silent, 1 R's messages (``dplr: set lambda to: ...``), 2 more detail.
    rp_dim : int
        Random projection of the covariates onto ``rp_dim`` dimensions; negative: ``round(2
        log n)``; >= the number of covariates: a warning and no projection.
    threshold : {"fixed", "youden", "topleft"}
        Classification threshold: 0.5, or R's data-driven choices (**not private**).
    do_scale : bool
        R's scaling (centre, divide by sd, divide by the largest row norm). The centre, scale and
        factor are stored and reused by ``predict``. **Not private.**
    op : bool
        Objective perturbation (True, default) or output perturbation.
    data_norm : float
        Public bound on the L2 norm of every covariate row (intercept excluded).
    clip : bool
        Clip covariate rows above ``data_norm`` into the ball (else a PrivacyWarning).
    compat : {None, "PrivateLR"}
        ``"PrivateLR"``: calibrate as PrivateLR does (``B = 1``, intercept ignored). The
        guarantee then does not hold as stated; see the module docstring.
    random_state : int, numpy.random.Generator or None
        Seeds the projection matrix and the noise (one generator for both).
    accountant : privatelr.PrivacyAccountant, optional
        Charged ``eps`` for the coefficients; a fit that would exceed the budget raises
        :class:`~privatelr.BudgetExceededError` before the data are read (a non-private
        ``eps=0`` fit is refused with ``ValueError``).
    levels : dict, optional
        Dask DataFrame ``data`` only: ``{column: [level, ...]}`` for factor columns whose dtype
        does not declare its categories (see :func:`privatelr.distributed.dplr_dask`; on Dask
        data the fit is partition-wise, ``predict`` returns a lazy Dask Series).

    Returns
    -------
    DPLR

    Warns
    -----
    PrivacyWarning
        Rows above ``data_norm`` (not clipped), ``compat="PrivateLR"``, data-driven threshold,
        ``do_scale``.
    UserWarning
        Rows dropped for missing values, more than two classes (first-vs-rest fitted), a single
        outcome value, ``rp_dim`` too large.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris()
    >>> iris[iris.columns[:4]] /= 12          # public rescaling: covariate rows inside the unit ball
    >>> m = dplr("I(Species != 'setosa') ~ .", iris, eps=2, random_state=1)
    >>> list(m.coefficients.index)
    ['(Intercept)', 'Sepal.Length', 'Sepal.Width', 'Petal.Length', 'Petal.Width']
    >>> m.status, round(m.lambda_, 6)
    ('ok', 0.015847)
    """
    call = _call_text(object, data, target=target, lambda_=lambda_, eps=eps, verbose=verbose,
                      rp_dim=rp_dim, threshold=threshold, do_scale=do_scale, op=op,
                      data_norm=data_norm, clip=clip, compat=compat, random_state=random_state)
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    if lambda_ is not None:
        lambda_ = check_real("lambda_", lambda_, low=0.0, low_open=True)
    verbose = check_int("verbose", verbose, low=0)
    rp_dim = check_int("rp_dim", rp_dim)
    if not isinstance(threshold, str) or threshold not in _THRESHOLDS:
        raise ValueError(f"threshold must be one of {_THRESHOLDS}, got {threshold!r}")
    for name, flag in (("do_scale", do_scale), ("op", op), ("clip", clip)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    if compat is not None:
        if not isinstance(compat, str) or compat.lower() != "privatelr":
            raise ValueError(f"compat must be None or 'PrivateLR', got {compat!r}")
        compat = "PrivateLR"
        if data_norm != 1.0:
            raise ValueError("compat='PrivateLR' calibrates for covariate rows of norm <= 1 as "
                             "PrivateLR does; leave data_norm at 1 (or drop compat)")
    if accountant is not None:  # before anything reads the data
        if compat is not None and eps > 0:
            raise ValueError("compat='PrivateLR' reproduces R, whose eps guarantee does not hold; "
                             "an accountant cannot be charged for it. Drop compat= (or the "
                             "accountant)")
        require_budget(accountant, eps)
    rng = check_random_state(random_state)
    private = eps > 0 and not math.isinf(eps)
    if type(data).__module__.split(".")[0] == "dask":  # partition-wise design and fit
        from .distributed import dplr_dask
        fit = dplr_dask(object, data, levels=levels, lambda_=lambda_, eps=eps, verbose=verbose,
                        rp_dim=rp_dim, threshold=threshold, do_scale=do_scale, op=op,
                        data_norm=data_norm, clip=clip, compat=compat, rng=rng, call=call)
        if accountant is not None:
            accountant.spend(eps, note="dplr (Dask) coefficients")
        return fit
    # ---- declarations -> schema -> rows ----------------------------------------------------
    learn = not private or compat == "PrivateLR"
    why = "a private fit (eps > 0)"
    if private and compat is None:
        if do_scale:
            raise ValueError("do_scale=True scales with the mean, standard deviations and "
                             "largest row norm of the private rows, so the fit would not be "
                             "private. Scale the covariates with public bounds (see "
                             "privatelr.public_bounds) and set data_norm; or pass "
                             "compat='PrivateLR' for R's (not private) behaviour")
        if threshold != "fixed":
            raise ValueError(f"threshold={threshold!r} is chosen from the private training "
                             "labels, so the model would not be private. Use threshold='fixed'; "
                             "or pass compat='PrivateLR' for R's (not private) behaviour")
    formula_text, frame = _resolve(object, data, target)
    frame = as_frame(frame)
    if len(frame) == 0:
        raise ValueError("data has no rows")
    spec = make_spec(formula_text, frame, levels=levels, learn=learn, why=why)
    return fit_rows(spec, spec.rows(frame, raw=True), call=call, lambda_=lambda_, eps=eps,
                    verbose=verbose, rp_dim=rp_dim, threshold=threshold, do_scale=do_scale,
                    op=op, data_norm=data_norm, clip=clip, compat=compat, rng=rng,
                    accountant=accountant, stacklevel=3)


def fit_rows(spec: DesignSpec, rows, *, call: str, lambda_, eps: float, verbose: int,
             rp_dim: int, threshold: str, do_scale: bool, op: bool, data_norm: float,
             clip: bool, compat, rng, accountant=None, stacklevel: int = 2) -> DPLR:
    """The pipeline after the schema: ``rows`` (raw design rows of ``spec``) → public map →
    norm bound → calibration and release (:func:`privatelr.erm.fit`) → :class:`DPLR`.

    Arguments are :func:`dplr`'s, already validated; ``rng`` is the fit's one Generator.
    """
    X, y = rows.X, rows.y
    n = X.shape[0]
    private = eps > 0 and not math.isinf(eps)
    if n == 0:
        raise ValueError("every row has a missing value in a model variable; nothing to fit")
    scan_rows("the design", X)          # NaN / infinite / overflowing values: a clear error
    if rows.n_dropped:
        warnings.warn(f"dplr: dropped {rows.n_dropped} of {n + rows.n_dropped} rows with "
                      "missing values (R's na.omit); n counts the rows used and the guarantee "
                      "is over these complete rows", UserWarning, stacklevel=stacklevel)
    if spec.n_classes > 2:
        warnings.warn(f"dplr: the response {spec.response!r} has {spec.n_classes} classes; "
                      f"fitting first level {spec.labels[0]!r} (coded 0) against the rest "
                      f"({spec.labels[1]!r})", UserWarning, stacklevel=stacklevel)
    unique = len(np.unique(y)) < 2
    if unique:
        warnings.warn("dplr: the response has a single value (unique outcome); the private fit "
                      "is still run, status 'unique.outcomes'", UserWarning, stacklevel=stacklevel)
    _say(verbose, 2, f"dplr: design {n} x {X.shape[1]} ({', '.join(spec.design_columns)}); "
                     f"response {spec.response} with {spec.labels[0]!r} coded 0")

    # ---- lambda ----------------------------------------------------------------------------
    if lambda_ is None:
        lambda_ = default_lambda(n, eps)
        _say(verbose, 1, f"dplr: set lambda to: {r_number(lambda_)}")

    k = int(spec.intercept)
    cov = X[:, k:]
    scale_factor = 1.0
    center = sd = None

    # ---- do_scale (not private: compat or eps = 0 only) ------------------------------------
    if do_scale:
        if cov.shape[1] == 0:
            raise ValueError("do_scale=True needs at least one covariate")
        center, sd, scale_factor = standardise(cov)
        cov = (cov - center) / sd * scale_factor
        if private:
            warnings.warn("dplr: do_scale=True scales with the data's mean, standard deviations "
                          "and largest row norm, computed without noise: NOT PRIVATE (compat="
                          "'PrivateLR')", PrivacyWarning, stacklevel=stacklevel)

    # ---- random projection -----------------------------------------------------------------
    p_cov = cov.shape[1]
    did_rp, rp_p, q = False, None, None
    if rp_dim < 0:
        rp_dim = rp_suggest(n)
    if rp_dim > 0 and rp_dim < p_cov:
        _say(verbose, 1, f"dplr: randomly projecting onto {rp_dim} dimensions.")
        rp_p = achlioptas_matrix(p_cov, rp_dim, rng)
        q, did_rp = rp_dim, True
        cov = np.einsum("ij,jk->ik", cov, rp_p)
    elif rp_dim > 0:
        warnings.warn(f"dplr: rp_dim={rp_dim} is not smaller than the number of covariates "
                      f"({p_cov}); not projecting", UserWarning, stacklevel=stacklevel)
        _say(verbose, 1, "dplr: rp.dim larger than data dimension, not projecting.")

    # ---- the norm bound (fail closed) ------------------------------------------------------
    n_exceeding = n_clipped = 0
    norms = row_norms(cov)
    over = norms > data_norm * (1.0 + 5e-13)
    n_exceeding = int(over.sum())
    if n_exceeding and clip:
        cov, n_clipped = clip_rows(cov, data_norm)
        _say(verbose, 2, f"dplr: {n_clipped} covariate rows clipped into data_norm")
    elif n_exceeding and private and compat is None:
        raise ValueError(_OUTSIDE_MESSAGE.format(data_norm=data_norm))
    if compat == "PrivateLR":
        B = 1.0
        if private:
            warnings.warn(_COMPAT_WARNING, PrivacyWarning, stacklevel=stacklevel)
    else:
        B = math.sqrt(data_norm * data_norm + 1.0) if k else data_norm
    Xfit = np.hstack([X[:, :k], cov]) if k else np.ascontiguousarray(cov)
    if Xfit.shape[1] == 0:
        raise ValueError("the model has no columns (no intercept and no covariates)")
    columns = (["(Intercept)"] if k else []) + [f"dim.{j + 1}" for j in range(q)] if did_rp \
        else None
    spec = spec.with_preprocess(Preprocess(
        center=None if center is None else tuple(center.tolist()),
        scale=None if sd is None else tuple(sd.tolist()),
        scale_factor=float(scale_factor) if do_scale else None,
        projection=None if rp_p is None else tuple(map(tuple, rp_p.tolist())),
        clip=float(data_norm) if clip else None,
        columns=None if columns is None else tuple(columns)))
    _say(verbose, 2, f"dplr: calibrating with norm bound B = {r_number(B)}"
                     f"{' (PrivateLR compatibility)' if compat else ''}")

    # ---- the private fit (all privacy arithmetic in erm) ------------------------------------
    method = "objective" if op else "output"
    res = erm.fit(Xfit, y, lambda_=lambda_, eps=eps, method=method, data_norm=B,
                  norm_check=False, random_state=rng, accountant=accountant)
    if private and method == "objective":
        _say(verbose, 1, f"dplr: privacy penalty due to regularizer: {r_number(res.penalty)}")
        if res.status.startswith("adjusted lambda"):
            _say(verbose, 1, f"dplr: regularizer too small, adjusted to: {r_number(res.lambda_)}")
        _say(verbose, 1, f"dplr: alpha - penalty: {r_number(res.eps_eff)}")
    _say(verbose, 2, f"dplr: noise scale {r_number(res.noise_scale)}; solver {res.solver}, "
                     f"{res.iterations} iterations, convergence {res.convergence}")

    coef = pd.Series(res.coef, index=list(spec.columns), name="coefficients")
    prob = expit(np.einsum("ij,j->i", Xfit, res.coef))
    cindex = c_index(prob, y)                      # not private (as in R)
    if threshold == "fixed":
        p_tr = 0.5
    else:
        _say(verbose, 1, f"dplr: learning non-private threshold with method {threshold}")
        p_tr = best_threshold(prob, y, threshold)
    status = res.status
    if unique:
        status = "unique.outcomes" + (" nonconvergence" if res.convergence else "")

    return DPLR(coefficients=coef, value=float(res.value), counts=dict(res.counts),
                convergence=int(res.convergence), message=str(res.message), CIndex=cindex,
                eps=eps, eps_eff=float(res.eps_eff), penalty=float(res.penalty),
                lambda_=float(res.lambda_), n=int(n), d=int(res.d), p_tr=float(p_tr),
                did_rp=did_rp, rp_dim=q, rp_p=rp_p, scaled=bool(do_scale), status=status,
                formula=spec.formula_r, call=call, spec=spec, method=res.method,
                norm_bound=float(B), data_norm=data_norm, compat=compat, threshold=threshold,
                n_exceeding=n_exceeding, n_clipped=n_clipped, n_dropped=rows.n_dropped,
                scale_factor=float(scale_factor))


_OUTSIDE_MESSAGE = (
    "dplr: some covariate rows have L2 norm above data_norm={data_norm:g}, so the "
    "differential-privacy guarantee would not hold (nothing was released). Choose data_norm "
    "from public bounds on the covariates (privatelr.public_bounds turns per-column bounds into "
    "data_norm and a public rescaling) and pass clip=True to clip the rows that exceed it; or "
    "fit with eps=0 (not private), or compat='PrivateLR' (R's behaviour, not private)")
_COMPAT_WARNING = (
    "dplr: compat='PrivateLR' reproduces R's PrivateLR: the noise is calibrated for design rows "
    "of norm <= 1 although the intercept makes every row longer, levels and the response "
    "coding may be learned from the rows, and rows outside the unit ball are not clipped: "
    "the eps guarantee does NOT hold. Use the default (compat=None) for a guarantee that holds")


def _call_text(object, data, **kwargs) -> str:
    defaults = dict(target=None, lambda_=None, eps=1.0, verbose=0, rp_dim=0, threshold="fixed",
                    do_scale=False, op=True, data_norm=1.0, clip=False, compat=None,
                    random_state=None)
    args = [_describe(object)]
    if data is not None:
        args.append(_describe(data))
    for key, value in kwargs.items():
        try:
            same = value == defaults[key] and type(value) is type(defaults[key])
        except Exception:
            same = False
        if value is None and defaults[key] is None:
            same = True
        if not same:
            args.append(f"{key}={value!r}" if not isinstance(value, np.random.Generator)
                        else f"{key}=<Generator>")
    return "dplr(" + ", ".join(args) + ")"
