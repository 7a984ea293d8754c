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
from ._validation import check_int, check_real
from .design import Design, DesignSpec, build_design, clip_rows, r_number, rp_suggest, scaled, \
    standardise
from .exceptions import PrivacyWarning
from .accountant import require_budget
from .mechanisms import achlioptas_matrix, check_random_state
from .roc import best_threshold, c_index
# Imported here, before privatelr/__init__ binds the *function* ``summary``: loading the submodule
# privatelr.summary later would rebind the package attribute to the module.
from .summary import DPLRSummary, summarize

__all__ = ["dplr", "DPLR", "predict", "summary", "scaled", "default_lambda"]

_THRESHOLDS = ("fixed", "youden", "topleft")


def default_lambda(n: int, eps: float) -> float:
    """R's default regulariser: ``1/(4 n (exp(eps/20) - 1))``; 0.001 when ``eps`` is 0 (or inf).

    It is the smallest λ with ``2 log(1 + 1/(4 n λ)) = eps/10`` (PrivateLR's ``lambda.eff``).

    Examples
    --------
    >>> round(default_lambda(150, 1.0), 10)
    0.0325069442
    """
    if eps == 0 or math.isinf(eps):
        return 0.001
    return 1.0 / (4.0 * n * math.expm1(eps / 20.0))


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
        from .summary import dplr_html

        return dplr_html(self)

    def plot_roc(self, data, ax=None):
        """ROC curve on labelled ``data`` (see :func:`privatelr.plot.plot_roc`; not private)."""
        from .plot import plot_roc

        return plot_roc(self, data, ax=ax)

    def plot_coefficients(self, ax=None, draws: int = 200, random_state=None, **kwargs):
        """Coefficients with the privacy-noise spread (:func:`privatelr.plot.plot_coefficients`)."""
        from .plot import plot_coefficients

        return plot_coefficients(self, ax=ax, draws=draws, random_state=random_state, **kwargs)


def predict(model: DPLR, data, type: str = "probabilities") -> np.ndarray:
    """``predict(model, data, type="probabilities")`` as in R (module-level form).

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
    if not isinstance(type, str):
        raise TypeError(f"type must be a string ('probabilities' or 'class'), got {type!r}")
    if data.__class__.__module__.split(".")[0] == "dask":  # lazy, partition-wise
        from .distributed import predict_dask
        return predict_dask(model, data, type=type)
    X, complete = model.spec.transform(data)
    p = np.full(complete.shape[0], np.nan)
    if X.shape[0]:
        # row by row (einsum), so a row's prediction does not depend on the other rows of the
        # batch: streamed chunks give bit-for-bit the in-memory answer (BLAS gemv does not)
        p[complete] = expit(np.einsum("ij,j->i", X, model.coefficients.to_numpy()))
    if type == "probabilities":
        return p
    lo, hi = model.spec.labels
    labels = np.where(p > model.p_tr, np.array([hi]), np.array([lo]))   # R: (p > p.tr) + 1
    if complete.all():
        return labels
    labels = labels.astype(object)
    labels[~complete] = None
    return labels


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
    import re

    return name if re.match(r"^(?:[A-Za-z]|\.(?![0-9]))[A-Za-z0-9._]*$", name) else f"`{name}`"


def _as_covariates(x, n: int | None) -> pd.DataFrame:
    if isinstance(x, pd.DataFrame):
        frame = x.reset_index(drop=True).copy()
        frame.columns = [str(c) for c in frame.columns]
    elif isinstance(x, dict):
        frame = pd.DataFrame(x)
    else:
        arr = np.asarray(x)
        if arr.ndim == 1:
            arr = arr.reshape(-1, 1)
        if arr.ndim != 2:
            raise ValueError(f"data (the covariates) must be 2-D, got shape {arr.shape}")
        frame = pd.DataFrame(arr, columns=[f"X{j + 1}" for j in range(arr.shape[1])])
    if n is not None and len(frame) != n:
        raise ValueError(f"the label vector has {n} values but data has {len(frame)} rows; they "
                         "must match")
    return frame


def _resolve(object, data, target):
    """(formula text, data frame) for every accepted input form."""
    try:
        from formulaic import Formula
    except ImportError:  # pragma: no cover
        Formula = ()
    if isinstance(object, str) or (Formula and isinstance(object, Formula)):
        if data is None:
            raise TypeError("dplr(formula, data): data is required with a formula")
        if target is not None:
            raise TypeError("target is only used with a DataFrame or matrix object, not a formula")
        return str(object), data
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
    if levels is not None:
        raise TypeError("levels= is for Dask DataFrames; in memory declare factor levels with "
                        "pandas.Categorical(values, categories=[...])")

    # ---- design ----------------------------------------------------------------------------
    formula_text, frame = _resolve(object, data, target)
    design: Design = build_design(formula_text, frame)
    spec = design.spec
    X, y = design.X, design.y
    n = X.shape[0]
    if design.n_dropped:
        warnings.warn(f"dplr: dropped {design.n_dropped} of {n + design.n_dropped} rows with "
                      "missing values (R's na.omit); n counts the rows used", UserWarning,
                      stacklevel=2)
    if design.n_classes > 2:
        warnings.warn(f"dplr: the response {spec.response!r} has {design.n_classes} classes; "
                      f"fitting first level {spec.labels[0]!r} (coded 0) against the rest "
                      f"({spec.labels[1]!r})", UserWarning, stacklevel=2)
    unique = len(np.unique(y)) < 2
    if unique:
        warnings.warn("dplr: the response has a single value (unique outcome); the private fit "
                      "is still run, status 'unique.outcomes'", UserWarning, stacklevel=2)
    _say(verbose, 2, f"dplr: design {n} x {X.shape[1]} ({', '.join(spec.design_columns)}); "
                     f"response {spec.response} with {spec.labels[0]!r} coded 0")

    # ---- lambda ----------------------------------------------------------------------------
    if lambda_ is None:
        lambda_ = default_lambda(n, eps)
        _say(verbose, 1, f"dplr: set lambda to: {r_number(lambda_)}")

    k = int(spec.intercept)
    cov = X[:, k:]
    scale_factor = 1.0

    # ---- do_scale (not private) ------------------------------------------------------------
    if do_scale:
        if cov.shape[1] == 0:
            raise ValueError("do_scale=True needs at least one covariate")
        center, sd, scale_factor = standardise(cov)
        cov = (cov - center) / sd * scale_factor
        spec.center, spec.scale, spec.scale_factor = center.tolist(), sd.tolist(), scale_factor
        if private:
            warnings.warn("dplr: do_scale=True scales with the data's mean, standard deviations "
                          "and largest row norm, computed without noise: these are not private "
                          "(scale with public bounds instead)", PrivacyWarning, stacklevel=2)

    # ---- random projection -----------------------------------------------------------------
    p_cov = cov.shape[1]
    did_rp, rp_p, q = False, None, None
    if rp_dim < 0:
        rp_dim = rp_suggest(n)
    if rp_dim > 0 and rp_dim < p_cov:
        _say(verbose, 1, f"dplr: randomly projecting onto {rp_dim} dimensions.")
        rp_p = achlioptas_matrix(p_cov, rp_dim, rng)
        q, did_rp = rp_dim, True
        cov, n_proj_clipped = clip_rows(cov @ rp_p, data_norm)
        _say(verbose, 2, f"dplr: {n_proj_clipped} projected rows clipped into data_norm")
        spec.projection = rp_p.tolist()
        spec.data_norm = data_norm
        spec.columns = (["(Intercept)"] if k else []) + [f"dim.{j + 1}" for j in range(rp_dim)]
    elif rp_dim > 0:
        warnings.warn(f"dplr: rp_dim={rp_dim} is not smaller than the number of covariates "
                      f"({p_cov}); not projecting", UserWarning, stacklevel=2)
        _say(verbose, 1, "dplr: rp.dim larger than data dimension, not projecting.")

    # ---- the norm bound --------------------------------------------------------------------
    n_exceeding = n_clipped = 0
    if not did_rp:
        sq = np.einsum("ij,ij->i", cov, cov)
        over = sq > data_norm * data_norm * (1.0 + 1e-12)
        n_exceeding = int(over.sum())
        if n_exceeding and clip:
            cov, n_clipped = clip_rows(cov, data_norm)
        elif n_exceeding and private and compat is None:
            _warn_rows_outside(n_exceeding, n, data_norm, math.sqrt(sq.max()), stacklevel=2)
    if compat == "PrivateLR":
        B = 1.0
        if private:
            extra = (f" and {n_exceeding} covariate rows exceed norm 1"
                     if n_exceeding and not n_clipped else "")
            warnings.warn("dplr: compat='PrivateLR' calibrates the noise for design rows of norm "
                          "<= 1 as PrivateLR does, but the intercept column makes every row "
                          f"longer than 1{extra}: the eps guarantee does not hold as stated. "
                          "Use the default (compat=None) for a guarantee that holds",
                          PrivacyWarning, stacklevel=2)
    else:
        B = math.sqrt(data_norm * data_norm + 1.0) if k else data_norm
    Xfit = np.hstack([X[:, :k], cov]) if k else np.ascontiguousarray(cov)
    if Xfit.shape[1] == 0:
        raise ValueError("the model has no columns (no intercept and no covariates)")
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
    prob = expit(Xfit @ res.coef)
    cindex = c_index(prob, y)                      # not private (as in R)
    if threshold == "fixed":
        p_tr = 0.5
    else:
        _say(verbose, 1, f"dplr: learning non-private threshold with method {threshold}")
        p_tr = best_threshold(prob, y, threshold)
        if private:
            warnings.warn(f"dplr: threshold={threshold!r} is chosen from the training labels "
                          "without noise: p_tr is not private (use threshold='fixed')",
                          PrivacyWarning, stacklevel=2)
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
                n_exceeding=n_exceeding, n_clipped=n_clipped, n_dropped=design.n_dropped,
                scale_factor=float(scale_factor))


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
