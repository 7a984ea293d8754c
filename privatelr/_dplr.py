r"""``dplr()``: R PrivateLR's differentially private logistic regression, with formulas and factors.

``dplr`` is the front end of the one pipeline (declarations → schema → rows → calibration →
release → result): it resolves R's input forms into a formula and a data frame, builds the
:class:`~privatelr.design.DesignSpec` from the declarations (:func:`privatelr.design.make_spec`),
reads the design rows through the backend the data live in (:mod:`privatelr.backends`: memory or
Dask), applies the public map (scaling, projection, clipping), and hands the rows and the norm
bound ``B`` to :func:`privatelr.erm.fit_rows`, where the calibration and the release happen.

The guarantee holds by construction
-----------------------------------
* **Declared structure.** In a private fit everything that shapes the released vector comes
  from declarations: factor levels (pandas Categorical categories, ``levels={"col": [...]}``,
  ``factor(x, levels = c(...))``), the response coding (bool; numeric 0/1; a factor's first
  declared level is 0). A non-private fit (``eps=0``) learns them from the rows, as R does.
* **Intercept-aware bound.** The Chaudhuri–Monteleoni–Sarwate theorems (JMLR 2011, Theorems 6
  and 9) need every design row — the constant intercept entry included — in the ball of radius
  ``B``: a covariate row with ``‖x‖ ≤ data_norm`` gives ``(1, x)`` of norm
  ``≤ sqrt(data_norm² + 1)``, the ``B`` of the calibration (``data_norm`` without intercept).
* **Fail closed.** Covariate rows above ``data_norm`` (after scaling and projection) are clipped
  into the ball with ``clip=True``; otherwise a private fit raises ``ValueError`` and releases
  nothing. Data-driven choices (``do_scale``, ``threshold="youden"``/``"topleft"``) are refused
  in private fits for the same reason.
* **R's behaviour, labelled.** ``compat="PrivateLR"`` reproduces PrivateLR: ``B = 1`` although
  the intercept makes every row longer, rows outside the ball are not refused, levels and the
  response coding are learned, ``do_scale`` and data-driven thresholds are allowed. Its ε does
  **not** hold; the result says so in print, summary, HTML and its saved file, and an accountant
  refuses it.

Default λ
---------
``lambda_=None`` uses :func:`privatelr.calibration.default_lambda`, the one rule of every front
end: the smallest λ whose privacy penalty ``2 log(1 + B²/(4nλ))`` is ε/10, i.e.
``λ = B²/(4n(exp(ε/20) − 1))`` (``eps=0``: λ = 0.001). With ``compat="PrivateLR"`` (``B = 1``)
it is exactly R's rule. ``n`` is the number of rows used (complete rows; R uses ``nrow(data)``).

What is not private
-------------------
Only the coefficients are ε-differentially private. The diagnostics (``model.diagnostics``:
training C-index, solver report, counts of rows outside the bound) are computed from the rows
without noise and are kept apart from the release.

Missing values and the neighbour relation
-----------------------------------------
Rows with a missing value in a model variable are dropped (R's ``na.omit``), with a warning and
``n_dropped`` in the result and its summary. The guarantee then holds over the **complete
cases**: neighbouring data sets are two sets of complete rows of the same size ``n`` that
differ in one row, and ``n`` — the number of complete rows — is disclosed (it is part of the
calibration and of the result). Whether a record is complete is therefore treated as public;
where missingness itself is sensitive, impute with public values before the fit.

Random projection
-----------------
``rp_dim != 0`` multiplies the covariates (not the intercept) by an Achlioptas matrix drawn from
the same random generator as the noise (:func:`privatelr.mechanisms.achlioptas_matrix`). The
matrix is independent of the data, so it is a public map; projected rows obey the same bound as
any other rows (fail closed, or ``clip=True``).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd

from . import erm, multinomial
from ._validation import check_bool, check_int, check_real
from .accountant import require_budget
from .backends import frame_rows, is_dask
from .bounds import PublicBounds, public_bounds
from .calibration import GAUSSIAN_METHODS, check_method, default_lambda, \
    default_lambda_inference, default_lambda_inference_output, default_lambda_multinomial, norm_bound
from .design import DesignSpec, Preprocess, as_frame, formula_text, make_spec, r_number, \
    rp_suggest, standardise
from .design.rsyntax import Name, deparse
from .exceptions import PrivacyWarning
from .inference import check_inference, split_budget
from .losses import LogisticLoss
from .mechanisms import achlioptas_matrix, check_random_state
from .report.roc import best_threshold, c_index
from .multiclass import MulticlassDPLR
from .multinomial import check_multiclass
from .results import DPLR, SEED_GIVEN, Diagnostics
from .scoring import probabilities

__all__ = ["dplr", "fit_frame"]

_THRESHOLDS = ("fixed", "youden", "topleft")

_COMPAT_WARNING = (
    "dplr: compat='PrivateLR' reproduces R's PrivateLR: the noise is calibrated for design rows "
    "of norm <= 1 although the intercept makes every row longer, levels and the response "
    "coding may be learned from the rows, and rows outside the unit ball are not refused: "
    "the eps guarantee does NOT hold. Use the default (compat=None) for a guarantee that holds")
_OUTSIDE_HINT = (" (privatelr.public_bounds turns public bounds on the columns into data_norm "
                 "and a public rescaling); or fit with eps=0 (not private), or compat='PrivateLR' "
                 "(R's behaviour, not private)")


def _describe(obj) -> str:
    if is_dask(obj):
        kind = "Dask DataFrame" if hasattr(obj, "columns") else f"Dask {type(obj).__name__}"
        width = f", {len(obj.columns)} columns" if hasattr(obj, "columns") else ""
        return f"<{kind}{width}>"
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
    """(formula text, data frame) for every accepted input form; Dask inputs stay lazy (a Dask
    DataFrame, built by :mod:`privatelr.backends.dask` with the names used in memory)."""
    lazy = is_dask(object, data)
    if lazy:
        from .backends.dask import as_dask_frame, with_labels
    if isinstance(object, str) or type(object).__module__.split(".")[0] == "formulaic":
        if data is None:
            raise TypeError("dplr(formula, data): data is required with a formula")
        if target is not None:
            raise TypeError("target is only used with a DataFrame or matrix object, not a formula")
        return formula_text(object), (as_dask_frame(data) if lazy else data)
    ndim = getattr(object, "ndim", None)
    table = isinstance(object, pd.DataFrame) or (lazy and ndim == 2 and hasattr(object, "columns"))
    matrix = ndim == 2 and not table and (isinstance(object, np.ndarray) or lazy)
    if table or matrix:
        kind = "DataFrame" if table else "matrix"
        if data is not None:
            raise TypeError(f"dplr({kind}, ...): the {kind} holds response and covariates; select "
                            "the response with target=, not data=")
        if (len(object.columns) if table else object.shape[1]) < 2:
            raise ValueError(f"the {kind} needs a response column and at least one covariate")
        if lazy:
            frame = as_dask_frame(object, f"the {kind}")
        elif table:
            frame = object.copy()
            frame.columns = [str(c) for c in frame.columns]
        else:
            frame = pd.DataFrame(object, columns=[f"X{j + 1}" for j in range(object.shape[1])])
        name = _target_name(list(frame.columns), target, f"the {kind}")
        return f"{_quote(name)} ~ .", frame
    is_vector = isinstance(object, (pd.Series, pd.Categorical, list, tuple)) or (
        isinstance(object, np.ndarray) and object.ndim == 1) or (lazy and ndim == 1)
    if is_vector:
        if data is None:
            raise TypeError("dplr(labels, data): pass the covariates as data (DataFrame or 2-D "
                            "array) with a label vector")
        if target is not None:
            raise TypeError("target is not used with a label vector")
        if lazy:
            return "dplr.class ~ .", with_labels(data, object, "dplr.class")
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
                    "DataFrame or 2-D array with target=, or a label vector (numpy, pandas "
                    "Series/Categorical, list) with covariates as data (each may be a Dask "
                    f"collection); got {_describe(object)}")


def dplr(object, data=None, *, target=None, lambda_: float | None = None, eps: float = 1.0,
         verbose: int = 0, rp_dim: int = 0, threshold: str = "fixed", do_scale: bool = False,
         op: bool = True, data_norm: float | None = None, clip: bool = False,
         compat: str | None = None, random_state=None, levels: dict | None = None,
         bounds=None, accountant=None, weights=None,
         weights_bound: float | None = None, inference: bool | float | None = None,
         method: str | None = None, delta: float = 0.0,
         multiclass: str | None = None, sparse: bool = False) -> DPLR | MulticlassDPLR:
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
        called ``X1, X2, ...``. Every form accepts Dask collections in place of the pandas/NumPy
        ones (a Dask DataFrame, a 2-D Dask array, a Dask Series or 1-D array of labels with the
        covariates' partitions): the fit then runs partition-wise and gives the in-memory
        coefficients to rounding.
    target : str or int, optional
        Response column of a DataFrame/matrix ``object`` (name or **0-based** position: R's
        ``target = 4`` is ``target=3`` here; default the last column, R's ``ncol(object)``).
        A numeric response must hold only 0 and 1 (R's rule), so a position off by one
        usually stops with an error that says positions are 0-based.
    lambda_ : float, optional
        Regulariser λ > 0 of ``(λ/2)‖w‖²``. None (or NaN, R's ``lambda = NA``): the one
        default rule (:func:`privatelr.calibration.default_lambda`, penalty ε/10; R's rule
        with ``compat="PrivateLR"``), 0.001 when ``eps`` is 0. If objective perturbation
        cannot afford λ, it is raised (status ``"adjusted lambda"``, with a warning as R
        gives). ``lambda_=0`` with ``eps=0`` is plain maximum likelihood (R's ``glm``); it is
        refused with a ``ValueError`` naming the separation when the data have no finite
        maximum-likelihood estimate.
    eps : float
        Privacy level ε >= 0; 0 gives the non-private fit (with either ``op``).
    verbose : int
        0 silent, 1 R's messages (``dplr: set lambda to: ...``), 2 more detail. Lines that
        report a statistic of the raw rows computed without noise (the solver's iterations,
        the number of clipped rows) end in ``(diagnostic of the raw rows: not private)``.
    rp_dim : int
        Random projection of the covariates onto ``rp_dim`` dimensions; negative: ``round(2
        log n)``; >= the number of covariates: a warning and no projection.
    threshold : {"fixed", "youden", "topleft"}
        Classification threshold: 0.5, or R's data-driven choices (**not private**: refused in a
        private fit unless ``compat="PrivateLR"``).
    do_scale : bool
        R's scaling (centre, divide by sd, divide by the largest row norm). The centre, scale and
        factor are stored and reused by ``predict``. **Not private**: refused in a private fit
        unless ``compat="PrivateLR"``; use ``bounds=`` instead.
    op : bool
        Objective perturbation (True, default) or output perturbation (R's switch).
    method : {"objective", "output", "gaussian", "amp"}, optional
        The mechanism, by name (overrides ``op``; ``op=False`` goes only with ``"output"``):
        ``"gaussian"`` is objective perturbation with Gaussian noise and ``"amp"`` approximate
        minima perturbation, both (ε, δ)-differentially private with ``delta`` and less noise
        than the pure-ε methods at moderate and large dimension (derivations in
        :mod:`privatelr.calibration`).
    delta : float
        δ of the Gaussian methods, in (0, 1) (choose it well below ``1/n``); 0 otherwise.
    multiclass : {None, "multinomial", "ovr"}
        A response with more than two levels: None (default, R's behaviour) fits the first
        level against the rest, with a warning; ``"multinomial"`` fits the softmax model over
        all the response's declared levels (:mod:`privatelr.multinomial`; objective or output
        perturbation); ``"ovr"`` one binary fit per level, each with ``eps / K`` (and
        ``delta / K``; every method). Either returns a
        :class:`~privatelr.multiclass.MulticlassDPLR` whose ``predict`` gives a DataFrame of
        per-class probabilities and whose summary has a coefficient vector per class. The
        levels must be declared in a private fit (a pandas Categorical, ``levels=``), as
        every response coding. Not with ``compat``, data-driven thresholds or inference.
    sparse : bool
        Build the design as a ``scipy.sparse`` CSR matrix (formulaic's sparse output) and fit
        it without densifying (:mod:`privatelr.backends.sparse`): for factors with many levels,
        whose dummies are mostly zeros. Same coefficients as the dense design (to rounding);
        ``predict`` rebuilds new data sparse too. Public bounds (column scaling) keep the
        design sparse; ``rp_dim`` gives a dense projected design; ``do_scale`` and
        ``offset()`` are refused. Data in memory only.
    data_norm : float, optional
        Public bound on the L2 norm of every covariate row (intercept excluded, after the public
        map). Default 1, or the value derived from ``bounds=``.
    clip : bool
        Clip covariate rows above ``data_norm`` into the ball; otherwise a private fit with
        such rows raises ``ValueError`` (fail closed: nothing is released).
    compat : {None, "PrivateLR"}
        ``"PrivateLR"``: R's behaviour (``B = 1`` with the intercept ignored, learned levels and
        response coding, no refusal of rows outside the ball). The guarantee does **not** hold;
        the result says so everywhere (a ``PrivacyWarning`` at fit time, "NOT PRIVATE" in
        print and summary, ``guarantee_holds`` False).
    random_state : int, numpy.random.Generator or None
        Seeds the projection matrix and the noise (one generator for both).
    accountant : privatelr.PrivacyAccountant, optional
        Charged ``eps`` for the coefficients; a fit that would exceed the budget raises
        :class:`~privatelr.BudgetExceededError` before the data are read (a non-private
        ``eps=0`` fit is refused with ``ValueError``).
    levels : dict, optional
        Declared factor levels ``{column: [level, ...]}`` (the first is the reference) for
        columns whose dtype does not declare them (a pandas Categorical does). A private fit
        never learns levels from the rows: an undeclared factor is an error naming the fix.
        On Dask data levels are always declared, even at ``eps=0`` (learning them would need
        a pass over every row before the design exists); ``predict`` on Dask data returns a
        lazy Dask Series.
    bounds : privatelr.PublicBounds or dict, optional
        Public per-column bounds (:func:`privatelr.public_bounds`): a public rescaling of the
        bounded columns (kept in the model and applied by ``predict``), their declared levels,
        and ``data_norm`` derived from them. The way to choose ``data_norm``.
    weights : str or 1-D array, optional
        Observation weights (R's ``glm(weights=)``): the name of a column of ``data`` (which
        is then not a covariate, also not in ``y ~ .``), or one weight per row of ``data``
        (in memory). The loss is ``(1/n) Σ wᵢ ℓᵢ``. Rows with a missing covariate are
        dropped with their weight.
    weights_bound : float, optional
        Public upper bound ``A`` on every weight (required with ``weights`` in a private fit):
        the calibration scales with it (CMS JMLR 2011 with per-row loss ``wᵢ ℓ``, whose
        derivatives are ``A`` times ℓ's bounds). A weight outside ``[0, A]`` is refused (fail
        closed). At ``eps=0`` it defaults to the largest weight.
    inference : bool or float, optional
        Release what standard errors, intervals and tests need (:func:`privatelr.vcov`,
        :func:`privatelr.confint`, the summary's coefficient table; method and coverage in
        :mod:`privatelr.inference`). ``True`` spends 0.4 of ``eps``
        (:data:`privatelr.inference.DEFAULT_SHARE`) on a private information matrix and the
        rest on the coefficients (the two compose to ``eps``), whose default λ is then
        :func:`privatelr.calibration.default_lambda_inference`; a number in (0, 1) is that
        share. At ``eps=0`` nothing is spent and the default (None)
        computes it; ``False`` skips it. A private model fitted without it has no intervals.

    Returns
    -------
    DPLR, or MulticlassDPLR with ``multiclass=``

    Raises
    ------
    ValueError
        A private fit whose guarantee would not hold: covariate rows above ``data_norm`` without
        ``clip=True``, undeclared levels or response coding, ``do_scale``/data-driven
        thresholds without ``compat``. The message names the fix and holds no data statistic.

    Warns
    -----
    PrivacyWarning
        ``compat="PrivateLR"`` (the guarantee does not hold).
    UserWarning
        Rows dropped for missing values, more than two classes (first-vs-rest fitted), a single
        outcome value, ``rp_dim`` too large.

    Notes
    -----
    Which classifier when: ``dplr`` is the port of R's PrivateLR (formulas, data frames, factor
    levels, R-style summaries; private tuning with :func:`privatelr.dplr_tune`);
    :class:`privatelr.sklearn.DPLogisticRegression` is for scikit-learn pipelines and numpy
    arrays; :class:`privatelr.LogisticRegressionDP` is for DPpack parity (per-column bounds,
    ``gamma``) and private tuning with :func:`privatelr.tune_classification_model`.

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris()
    >>> iris[iris.columns[:4]] /= 12          # public rescaling: covariate rows inside the unit ball
    >>> m = dplr("I(Species != 'setosa') ~ .", iris, eps=2, random_state=1)
    >>> list(m.coefficients.index)
    ['(Intercept)', 'Sepal.Length', 'Sepal.Width', 'Petal.Length', 'Petal.Width']
    >>> m.status, round(m.lambda_, 6), round(m.penalty, 6)      # the default penalty: eps/10
    ('ok', 0.031694, 0.2)
    """

    call = _call_text(object, data, target=target, lambda_=lambda_, eps=eps, verbose=verbose,
                      rp_dim=rp_dim, threshold=threshold, do_scale=do_scale, op=op,
                      data_norm=data_norm, clip=clip, compat=compat, random_state=random_state,
                      method=method, delta=delta, multiclass=multiclass, sparse=sparse,
                      levels=levels, bounds=bounds, accountant=accountant, weights=weights,
                      weights_bound=weights_bound, inference=inference)
    eps = check_real("eps", eps, low=0.0, allow_inf=True)
    lambda_ = check_lambda(lambda_, eps)
    verbose = check_int("verbose", verbose, low=0)
    rp_dim = check_int("rp_dim", rp_dim)
    if not isinstance(threshold, str) or threshold not in _THRESHOLDS:
        raise ValueError(f"threshold must be one of {_THRESHOLDS}, got {threshold!r}")
    for name, flag in (("do_scale", do_scale), ("op", op), ("clip", clip),
                       ("sparse", sparse)):
        check_bool(name, flag)
    method, delta = check_method(_method(method, op), eps, delta)
    if multiclass is not None:
        multiclass = check_multiclass(multiclass)
        _check_multiclass_options(multiclass, method, compat, threshold, inference)
    if compat is not None and method in GAUSSIAN_METHODS:
        raise ValueError("compat='PrivateLR' reproduces R, which has no Gaussian methods; drop "
                         "compat= or use method='objective'/'output'")
    if data_norm is not None:
        data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    compat = check_compat(compat, 1.0 if data_norm is None else data_norm)
    if bounds is not None:
        if compat is not None:
            raise ValueError("bounds= and compat='PrivateLR' do not mix: R has no public bounds")
        if not isinstance(bounds, PublicBounds):
            bounds = public_bounds(bounds)
        levels = _merged_levels(levels, bounds.levels)
    elif data_norm is None:
        data_norm = 1.0
    private = eps > 0 and not math.isinf(eps)
    if accountant is not None:  # before anything reads the data
        if compat is not None and private:
            raise ValueError("compat='PrivateLR' reproduces R, whose eps guarantee does not hold; "
                             "an accountant cannot be charged for it. Drop compat= (or the "
                             "accountant)")
        require_budget(accountant, eps, delta)
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
    share = check_inference(inference if inference is not None else not private, eps)
    rng = check_random_state(random_state)

    # ---- declarations -> schema -> rows ------------------------------------------------------
    learn = not private or compat is not None
    why = "a private fit (eps > 0)"
    text, frame = _resolve(object, data, target)
    if is_dask(frame):
        from .backends.dask import schema_of

        frame, wcol = _with_weights(frame, weights)
        if not private:
            why = "a fit on Dask data (nothing is learned from the rows there, even at eps=0)"
        spec = make_spec(text, _without(schema_of(frame), wcol), levels=levels, learn=False,
                         why=why, hint="")    # eps=0 learns nothing on Dask: no such hint
    else:
        frame = as_frame(frame)
        if len(frame) == 0:
            raise ValueError("data has no rows")
        frame, wcol = _with_weights(frame, weights)
        spec = make_spec(text, _without(frame, wcol), levels=levels, learn=learn, why=why)
    if multiclass is None:
        check_response(spec, compat, target)
    if sparse:
        spec = dataclasses.replace(spec, sparse=True)
    if wcol is not None and weights_bound is None:
        if private:
            raise ValueError("weights given without weights_bound: the privacy calibration "
                             "needs a public upper bound on every weight; pass "
                             "weights_bound=<bound>")
        weights_bound = _largest(frame[wcol])          # eps = 0: not private, so learned
    return fit_frame(spec, frame, call=call, lambda_=lambda_, eps=eps, verbose=verbose,
                     rp_dim=rp_dim, threshold=threshold, do_scale=do_scale, op=op,
                     data_norm=data_norm, clip=clip, compat=compat, rng=rng,
                     accountant=accountant, bounds=bounds, stacklevel=3, weights=wcol,
                     weights_bound=weights_bound if wcol is not None else None,
                     inference=share, method=method, delta=delta, multiclass=multiclass)


def _check_multiclass_options(multiclass: str, method: str, compat, threshold: str,
                              inference) -> None:
    """What ``multiclass=`` does not combine with, refused before the data are read."""
    if compat is not None:
        raise ValueError("compat='PrivateLR' reproduces R's PrivateLR, which is binary; drop "
                         "compat= to fit a multiclass model")
    if threshold != "fixed":
        raise ValueError("threshold= is a binary classifier's cut-off; a multiclass model "
                         "predicts the most probable class (leave threshold='fixed')")
    if inference:
        raise ValueError("inference= is available for binary models only; drop it (or fit "
                         "one binary model per class of interest)")
    if multiclass == "multinomial" and method in GAUSSIAN_METHODS:
        raise ValueError(f"method={method!r} is not available for the multinomial model (its "
                         "calibration is derived for the pure-eps methods); use "
                         "method='objective' or 'output', or multiclass='ovr'")


def _method(method, op: bool) -> str:
    """The mechanism from ``method=`` and R's ``op=`` (which it overrides, consistently)."""
    if method is None:
        return "objective" if op else "output"
    if not op and method != "output":
        raise ValueError(f"op=False (output perturbation) contradicts method={method!r}; pass "
                         "one of them")
    return method


def check_lambda(lambda_, eps: float):
    """``lambda_`` checked: None or NaN (R's ``NA``) mean the default; 0 is allowed only in a
    non-private fit (maximum likelihood)."""
    if lambda_ is None:
        return None
    if isinstance(lambda_, (float, np.floating)) and math.isnan(lambda_):
        return None                                     # R's lambda = NA: the default
    if eps == 0 or math.isinf(eps):
        return check_real("lambda_", lambda_, low=0.0)
    try:
        return check_real("lambda_", lambda_, low=0.0, low_open=True)
    except ValueError as exc:
        if lambda_ == 0:
            raise ValueError("lambda_=0 (no regulariser) is only available without privacy "
                             "(eps=0: plain maximum likelihood); a private fit needs lambda_ "
                             "> 0, or None for the default") from None
        raise exc from None


def check_response(spec: DesignSpec, compat, target) -> None:
    """A numeric response must hold only 0 and 1 (R's manual); R's code fits whatever it is
    given, which only ``compat="PrivateLR"`` reproduces."""
    if compat is not None or spec.response_kind != "numeric":
        return
    levels = list(spec.response_levels)
    if levels == [0, 1]:
        return
    shown = ", ".join(r_number(v) for v in levels[:4]) + (", ..." if len(levels) > 4 else "")
    where = (" With a data frame or matrix, target= positions are 0-based (R's target = 4 is "
             "target=3 here); or pass the column name." if target is not None else "")
    raise ValueError(f"the response {spec.response!r} is numeric with values other than 0 and "
                     f"1 ({shown}); R's manual requires 0/1. Code it 0/1 or as bool (e.g. "
                     f"I({spec.response} > 0)), or declare its two values with levels=.{where}")


def _with_weights(frame, weights):
    """The frame with the weights as a column, and that column's name (None: no weights)."""
    if weights is None:
        return frame, None
    if isinstance(weights, str):
        if weights not in frame.columns:
            raise ValueError(f"weights={weights!r} is not a column of data; pass a column name "
                             "or one weight per row")
        return frame, weights
    if is_dask(frame) or is_dask(weights):
        raise TypeError("on Dask data, weights must name a column of the data")
    w = np.asarray(weights.to_numpy() if hasattr(weights, "to_numpy") else weights)
    if w.ndim != 1 or w.shape[0] != len(frame):
        raise ValueError(f"weights must be a column name or a 1-D array with one weight per row "
                         f"of data ({len(frame)}), got shape {w.shape}")
    name = "(weights)"
    if name in frame.columns:
        raise ValueError(f"data already has a column named {name!r}; pass weights by name")
    return frame.assign(**{name: pd.to_numeric(pd.Series(w, index=frame.index),
                                               errors="raise")}), name


def _without(frame, column):
    return frame if column is None else frame.drop(columns=[column])


def _largest(column) -> float:
    from .backends import compute

    (top,) = compute(column.max())
    top = float(top)
    return top if top > 0 and math.isfinite(top) else 1.0


def _merged_levels(levels, declared: dict):
    if not declared:
        return levels
    if levels is not None and not isinstance(levels, dict):
        raise TypeError(f"levels must be a dict {{column: [level, ...]}}, got "
                        f"{type(levels).__name__}")
    out = dict(declared)
    for col, vals in (levels or {}).items():
        if col in out and list(out[col]) != list(vals):
            raise ValueError(f"levels[{col!r}] differs from the levels in bounds=; give one "
                             "declaration")
        out[col] = vals
    return out


def check_compat(compat, data_norm: float):
    """``None`` or ``"PrivateLR"`` (case-insensitive); R's calibration needs ``data_norm = 1``."""
    if compat is None:
        return None
    if not isinstance(compat, str) or compat.lower() != "privatelr":
        raise ValueError(f"compat must be None or 'PrivateLR', got {compat!r}")
    if data_norm != 1.0:
        raise ValueError("compat='PrivateLR' calibrates for covariate rows of norm <= 1 as "
                         "PrivateLR does; leave data_norm at 1 (or drop compat)")
    return "PrivateLR"


def fit_frame(spec: DesignSpec, data, *, call: str, lambda_, eps: float, verbose: int,
              rp_dim: int, threshold: str, do_scale: bool, op: bool, data_norm: float | None,
              clip: bool, compat, rng, accountant=None, bounds=None,
              stacklevel: int = 2, weights: str | None = None,
              weights_bound: float | None = None, inference: float | None = None,
              method: str | None = None, delta: float = 0.0,
              multiclass: str | None = None) -> DPLR | MulticlassDPLR:
    """The pipeline after the schema, for every backend: the rows of ``data`` under ``spec`` →
    the public map → the norm bound (fail closed or clip) → :func:`privatelr.erm.fit_rows` →
    :class:`~privatelr.results.DPLR`. Arguments are :func:`dplr`'s, already validated; ``rng``
    is the fit's one Generator (projection first, then the noise); ``weights`` names a
    column of observation weights with the public bound ``weights_bound``; ``inference`` is
    the share of ``eps`` for the information matrix (:func:`privatelr.inference.check_inference`;
    None: no inference release); ``multiclass`` (``"multinomial"``/``"ovr"``) fits every level
    of the response (:func:`fit_multiclass`)."""
    k = int(spec.intercept)
    # Dask data mapped by public bounds only (no projection, no do_scale): the map is known
    # before the rows are read, so a streamed fit's first read scans the mapped rows (one read
    # for the whole set-up; the same function object is given to rows.mapped below)
    early = early_map = None
    if bounds is not None and is_dask(data) and not do_scale and rp_dim == 0:
        em = bounds.design_map(spec, center=bounds.center and not spec.sparse)
        early = Preprocess(divisors=em.divisors, shifts=em.shifts or None)
        if not early.identity:
            early_map = (lambda X, pre=early: pre.apply(X, bool(k)))
    fr = frame_rows(spec, data, weights=weights, weights_bound=weights_bound,
                    scan_map=early_map)
    rows = fr.rows
    method = method or ("objective" if op else "output")
    private = eps > 0 and not math.isinf(eps)
    p_cov = rows.d - k

    # ---- the public map: bounds, scaling (not private: compat / eps = 0), projection ----------
    public = None
    if bounds is not None:
        public = bounds.design_map(spec, center=bounds.center and not spec.sparse)
        if data_norm is None:
            data_norm = public.data_norm
            clip = clip or public.clip
            _say(verbose, 2, f"dplr: data_norm {r_print(data_norm)} from the public bounds"
                             f"{' (rows above it clipped)' if public.clip else ''}")
        if do_scale:
            raise ValueError("bounds= and do_scale=True do not mix: choose the public bounds")
    assert data_norm is not None        # dplr() resolved it, or the public bounds did
    center = sd = None
    factor = None
    if do_scale:
        if not hasattr(rows, "X"):
            raise ValueError("do_scale=True needs a dense design in memory (not Dask data, not "
                             "sparse=True): it scales with the data's (non-private) means and "
                             "norms; rescale with public bounds")
        rows.scan(what="the design")                 # finite values before the statistics
        if p_cov == 0:
            raise ValueError("do_scale=True needs at least one covariate")
        center, sd, factor = standardise(rows.X[:, k:])
        if private:
            warnings.warn("dplr: do_scale=True scales with the data's mean, standard deviations "
                          "and largest row norm, computed without noise: NOT PRIVATE (compat="
                          "'PrivateLR')", PrivacyWarning, stacklevel=stacklevel)
    n = rows.n
    if rp_dim < 0:
        rp_dim = rp_suggest(n)
    projection = None
    if 0 < rp_dim < p_cov:
        _say(verbose, 1, f"dplr: randomly projecting onto {rp_dim} dimensions.")
        projection = achlioptas_matrix(p_cov, rp_dim, rng)
    elif rp_dim > 0:
        warnings.warn(f"dplr: rp_dim={rp_dim} is not smaller than the number of covariates "
                      f"({p_cov}); not projecting", UserWarning, stacklevel=stacklevel)
        _say(verbose, 1, "dplr: rp.dim larger than data dimension, not projecting.")
    q = p_cov if projection is None else rp_dim
    pre = Preprocess(
        divisors=None if public is None else public.divisors,
        shifts=None if public is None or not public.shifts else public.shifts,
        center=None if center is None else tuple(center.tolist()),
        scale=None if sd is None else tuple(sd.tolist()),
        scale_factor=None if factor is None else float(factor),
        projection=None if projection is None else tuple(map(tuple, projection.tolist())),
        columns=None if projection is None else
        tuple((["(Intercept)"] if k else []) + [f"dim.{j + 1}" for j in range(q)]))
    if not pre.identity:
        fn = early_map if early_map is not None and pre == early else (
            lambda X, pre=pre: pre.apply(X, bool(k)))
        rows = rows.mapped(fn, k + q)

    # ---- one scan: values, labels, covariate norms against data_norm -------------------------
    scan = rows.scan(bound=data_norm, start=k, what="the design")
    if k + q == 0:
        raise ValueError("the model has no columns (no intercept and no covariates)")
    if fr.n_dropped:
        warnings.warn(f"dplr: dropped {fr.n_dropped} of {fr.n_total} rows with missing values "
                      "(R's na.omit); n counts the rows used and the guarantee is over these "
                      "complete rows", UserWarning, stacklevel=stacklevel)
    if spec.n_classes > 2 and multiclass is None:
        warnings.warn(f"dplr: the response {spec.response!r} has {spec.n_classes} classes; "
                      f"fitting first level {spec.labels[0]!r} (coded 0) against the rest "
                      f"({spec.labels[1]!r})", UserWarning, stacklevel=stacklevel)
    unique = scan.positives in (0, scan.n) and multiclass is None
    # R marks the status 'unique.outcome'; in a private fit the released status must not depend
    # on the rows (it would tell "every label is equal" apart), so only the analyst is told
    mark_unique = unique and (not private or compat is not None)
    if unique:
        warnings.warn("dplr: the response has a single value (unique outcome); the fit is still "
                      "run" + (", status 'unique.outcome'" if mark_unique else " (a private "
                               "fit's status does not say so: it would disclose it)"),
                      UserWarning, stacklevel=stacklevel)
    _say(verbose, 2, f"dplr: design {n} x {k + p_cov} ({', '.join(spec.design_columns)}); "
                     f"response {spec.response} with {spec.labels[0]!r} coded 0")

    if not (scan.n_over and clip):
        scan.check_magnitude("the design")
    n_clipped = 0
    if scan.n_over and clip:
        pre = dataclasses.replace(pre, clip=float(data_norm))
        rows = rows.clipped(data_norm, start=k)
        n_clipped = scan.n_over
        _say(verbose, 2, f"dplr: {n_clipped} covariate rows clipped into data_norm"
                         f"{NOT_PRIVATE}")
    elif clip:
        pre = dataclasses.replace(pre, clip=float(data_norm))
    elif scan.n_over and private and compat is None:
        raise ValueError(erm.OUTSIDE_BOUND.format(what="the covariates", data_norm=data_norm,
                                                  more=_OUTSIDE_HINT))
    spec = spec.with_preprocess(None if pre.identity else pre)
    B = 1.0 if compat == "PrivateLR" else norm_bound(data_norm, bool(k))
    if multiclass is not None:
        return fit_multiclass(rows, spec, scan.clipped_to(B) if n_clipped else scan,
                              multiclass=multiclass, call=call, lambda_=lambda_, eps=eps,
                              method=method, delta=delta,
                              B=B, data_norm=data_norm, rng=rng, accountant=accountant,
                              verbose=verbose, n_dropped=fr.n_dropped, n_clipped=n_clipped)
    if compat == "PrivateLR" and private:
        warnings.warn(_COMPAT_WARNING, PrivacyWarning, stacklevel=stacklevel)

    # ---- calibration and release ---------------------------------------------------------------
    eps, info_eps = split_budget(eps, inference)
    if info_eps:
        _say(verbose, 1, f"dplr: eps {r_print(eps)} for the coefficients, {r_print(info_eps)} "
                         "for inference")
    if lambda_ is None:
        if info_eps and compat is None:          # inference asked for: its own default rules
            lambda_ = default_lambda_inference_output(n, eps, data_norm=B) \
                if method == "output" else \
                default_lambda_inference(n, eps, data_norm=B, weights_bound=rows.weights_bound)
        else:
            lambda_ = default_lambda(n, eps, data_norm=B, weights_bound=rows.weights_bound)
        _say(verbose, 1, f"dplr: set lambda to: {r_print(lambda_)}")
    _say(verbose, 2, f"dplr: calibrating with norm bound B = {r_print(B)}"
                     f"{' (PrivateLR compatibility)' if compat else ''}")
    res = erm.fit_rows(rows, lambda_=lambda_, eps=eps, method=method, delta=delta,
                       loss=LogisticLoss(), data_norm=B, clip=False, rng=rng,
                       accountant=accountant, norm_check=compat is None, what="the design",
                       scan=scan.clipped_to(B) if n_clipped else scan,   # no second pass
                       inference_eps=info_eps)
    if private and method != "output":
        _say(verbose, 1, f"dplr: privacy penalty due to regularizer: {r_print(res.penalty)}")
        if res.status.startswith("adjusted lambda"):
            _say(verbose, 1, f"dplr: regularizer too small, adjusted to: {r_print(res.lambda_)}")
        _say(verbose, 1, f"dplr: alpha - penalty: {r_print(res.eps_eff)}")
    _say(verbose, 2, f"dplr: noise scale {r_print(res.noise_scale)}; solver {res.solver}")
    _say(verbose, 2, f"dplr: {res.iterations} solver iterations, convergence "
                     f"{res.convergence}{NOT_PRIVATE}")

    # ---- diagnostics (not private) and the result -------------------------------------------------
    scores = rows.training_scores(res.coef)
    cindex, p_tr = math.nan, 0.5
    if scores is not None:
        prob, y01 = probabilities(scores[0], out=scores[0]), scores[1]   # in place
        cindex = c_index(prob, y01)
        if threshold != "fixed":
            _say(verbose, 1, f"dplr: learning non-private threshold with method {threshold}")
            p_tr = best_threshold(prob, y01, threshold)
    elif threshold != "fixed":
        raise ValueError(f"threshold={threshold!r} is not available on Dask data (it needs every "
                         "training prediction, and is not private); use threshold='fixed'")
    status = res.status
    if mark_unique:
        status = "unique.outcome" + (" nonconvergence" if res.convergence else "")
    assert res.diagnostics is not None  # a fresh fit has them
    diagnostics = dataclasses.replace(res.diagnostics, c_index=float(cindex),
                                      n_exceeding=int(scan.n_over), n_clipped=int(n_clipped))
    glm = None
    if not private and not is_dask(data):           # eps = 0 in memory: glm's own fit
        glm = _glm_of_rows(fr.rows if pre.projection is None else rows, spec)
    return DPLR(coef=res.coef, spec=spec, calibration=res.calibration, data_norm=data_norm,
                p_tr=float(p_tr), threshold=threshold, compat=compat, status=status,
                convergence=int(res.convergence), call=call, n_dropped=fr.n_dropped,
                inference=res.inference, diagnostics=diagnostics, glm=glm)


def _glm_of_rows(rows, spec: DesignSpec):
    """glm's unpenalised fit of a non-private model's rows — the data's columns (before the
    public map or R's scaling), or the projected columns when the model is projected — for
    the coefficient table, deviance, AIC and profile intervals (:mod:`privatelr.glm`)."""
    from ._validation import is_sparse
    from .glm import glm_summary

    X = rows.matrix if hasattr(rows, "matrix") else rows.X
    if is_sparse(X):
        if X.shape[0] * X.shape[1] > 50_000_000:     # glm's fit is dense: not for huge designs
            return None
        X = X.toarray()
    y01 = (np.asarray(rows.y) > 0).astype(np.float64)
    return glm_summary(X, y01, rows.w, rows.offset, spec.columns, bool(spec.intercept))


def fit_multiclass(rows, spec: DesignSpec, scan, *, multiclass: str, call: str, lambda_,
                   eps: float, method: str, delta: float, B: float, data_norm: float, rng,
                   accountant, verbose: int, n_dropped: int, n_clipped: int) -> MulticlassDPLR:
    """:func:`fit_frame`'s multiclass end: the rows (public map applied, inside the bound) →
    :func:`privatelr.multinomial.fit_rows` over the response's declared levels →
    :class:`~privatelr.multiclass.MulticlassDPLR`. The default λ is the multinomial rule
    (:func:`~privatelr.calibration.default_lambda_multinomial`), or the binary rule at each
    one-vs-rest fit's ``eps / K``."""
    classes = tuple(spec.response_levels)
    K = len(classes)
    if K < 2:
        raise ValueError(f"the response {spec.response!r} has a single level; a multiclass "
                         "model needs at least two declared levels")
    private = erm.cal_private(eps)
    if lambda_ is None:
        if multiclass == "multinomial":
            lambda_ = default_lambda_multinomial(rows.n, K, eps, data_norm=B,
                                                 weights_bound=rows.weights_bound)
        else:
            lambda_ = default_lambda(rows.n, eps / K if private else eps, data_norm=B,
                                     weights_bound=rows.weights_bound)
        _say(verbose, 1, f"dplr: set lambda to: {r_print(lambda_)}")
    res = multinomial.fit_rows(rows, classes, multiclass=multiclass, lambda_=lambda_, eps=eps,
                               method=method, delta=delta, data_norm=B, clip=False, rng=rng,
                               accountant=accountant, scan=scan, what="the design")
    fits = res.diagnostics.get("fits", [res.diagnostics])
    diagnostics = Diagnostics(
        iterations=sum(int(_field(f, "iterations")) for f in fits),
        passes=sum(int(_field(f, "passes")) for f in fits),
        grad_norm=max(float(_field(f, "grad_norm")) for f in fits),
        message="; ".join(str(_field(f, "message")) for f in fits),
        n_exceeding=int(scan.n_over) if not n_clipped else int(n_clipped),
        n_clipped=int(n_clipped))
    _say(verbose, 2, f"dplr: {multiclass} over {K} classes, status {res.status}")
    _say(verbose, 2, f"dplr: {diagnostics.iterations} solver iterations{NOT_PRIVATE}")
    return MulticlassDPLR(coef=res.coef, classes=classes, multiclass=multiclass, spec=spec,
                          calibration=res.calibration, eps=res.eps, delta=res.delta,
                          data_norm=data_norm, status=res.status, convergence=res.convergence,
                          call=call, n_dropped=n_dropped, diagnostics=diagnostics)


def _field(diag, name: str):
    """A field of a solver report held as a dict (multinomial) or a Diagnostics (binary)."""
    return diag[name] if isinstance(diag, dict) else getattr(diag, name)


#: The label of a verbose line that reports a statistic of the raw rows computed without noise.
NOT_PRIVATE = " (diagnostic of the raw rows: not private)"


def _say(verbose: int, level: int, msg: str) -> None:
    if verbose >= level:
        print(msg)


def r_print(x: float) -> str:
    """A number as R's ``cat``/``print`` show it (7 significant digits), for verbose lines:
    ``r_print(0.0650138883102196) == "0.06501389"``."""
    return r_number(float(f"{float(x):.7g}"))


def _call_text(object, data, **kwargs) -> str:
    defaults = dict(target=None, lambda_=None, eps=1.0, verbose=0, rp_dim=0, threshold="fixed",
                    do_scale=False, op=True, data_norm=None, clip=False, compat=None,
                    random_state=None, method=None, delta=0.0, multiclass=None,
                    sparse=False, levels=None, bounds=None, accountant=None, weights=None,
                    weights_bound=None, inference=None)
    described = ("accountant", "weights")     # objects: their kind, not their contents
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
            # the seed is never written down (whoever knows it can redraw the noise and
            # subtract it): the call records only that one was given
            text = SEED_GIVEN if key == "random_state" else \
                _describe(value) if key in described and not isinstance(value, str) else \
                repr(value)
            args.append(f"{key}={text}")
    return "dplr(" + ", ".join(args) + ")"
