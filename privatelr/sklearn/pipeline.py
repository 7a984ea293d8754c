r"""Pipelines that keep a private estimator private.

Needs the optional extra ``pip install "privatelr[sklearn]"``; import it from
:mod:`privatelr.sklearn`.

A scikit-learn pipeline fits its preprocessing steps on the training rows before the final
estimator sees them. A :class:`~sklearn.preprocessing.StandardScaler` learns each column's mean
and standard deviation, an imputer the columns' means or medians, PCA the rows' covariance:
statistics of the private rows, computed without noise, that the released model then depends
on. The pipeline as a whole is not differentially private, however private its last step.

What this module offers:

* :func:`learned_statistics` — which steps of a fitted pipeline learned from the rows, and what:
  every attribute that ``fit`` set (one an unfitted ``clone`` of the step does not have:
  scikit-learn's ``mean_``, ``scale_``, ``statistics_``; private ones when they hold arrays,
  such as ``KNNImputer``'s ``_fit_X``, a copy of the training rows) other than
  ``n_features_in_`` and ``feature_names_in_`` (the input's shape and column names, public),
  looked up recursively in pipelines, column transformers and feature unions. Transformers
  that set attributes from their parameters alone are public: this
  package's :class:`~privatelr.sklearn.PublicBoundsTransformer`; scikit-learn's
  ``PolynomialFeatures``, ``Normalizer``, ``Binarizer``, ``FunctionTransformer`` (its function
  must use public constants: it cannot be inspected), ``SplineTransformer`` with explicit
  ``knots``, and ``OneHotEncoder``/``OrdinalEncoder`` with declared ``categories`` (and no
  ``min_frequency``/``max_categories``). Everything else that learned is reported:
  the scalers (``StandardScaler``, ``MinMaxScaler``, ``MaxAbsScaler``, ``RobustScaler``,
  ``QuantileTransformer``, ``PowerTransformer``), the imputers (``SimpleImputer`` — even
  ``strategy="constant"`` drops the columns that are entirely missing in the training rows —,
  ``KNNImputer``, ``IterativeImputer``), ``PCA``, ``KBinsDiscretizer``, encoders with
  ``categories="auto"``, feature selectors.
* :class:`Pipeline` and :func:`make_pipeline` (the signature of scikit-learn's): a pipeline
  whose ``fit`` warns (:class:`~privatelr.exceptions.PrivacyWarning`) when a step before a
  private final estimator (``eps``, or ``epsilon``, above 0 and finite) learned statistics
  from the rows, naming the step, what it learned and the fix; and which reports the final
  estimator's coefficients, covariance and intervals per unit of the original columns when the
  step before it is a public map (:meth:`Pipeline.coefficients`, :meth:`Pipeline.confint`).
  :class:`~privatelr.sklearn.DPLogisticRegression` runs the same check itself when it is the
  last step of any scikit-learn pipeline (it finds the pipeline fitting it on the call stack),
  so ``sklearn.pipeline.make_pipeline(StandardScaler(), DPLogisticRegression())`` warns too.
* :func:`step_bound` — the public ``data_norm`` (and clipping rule) a preprocessing step
  implies: a :class:`~privatelr.sklearn.PublicBoundsTransformer`, or a
  :class:`~sklearn.compose.ColumnTransformer` whose every output comes from one (their
  bounds combine as :math:`\sqrt{\sum_i B_i^2}`; dropped columns do not count, passed-through
  columns have no bound). ``DPLogisticRegression(data_norm="from_bounds")`` uses it.

Examples
--------
>>> import numpy as np, warnings
>>> from sklearn.preprocessing import StandardScaler
>>> from privatelr.sklearn import DPLogisticRegression, PublicBoundsTransformer, make_pipeline
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(0, 10, size=(300, 2))
>>> y = (X[:, 0] > X[:, 1]).astype(int)
>>> leaky = make_pipeline(StandardScaler(), DPLogisticRegression(clip=True, random_state=0))
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     _ = leaky.fit(X, y)
>>> [type(w.message).__name__ for w in caught]
['PrivacyWarning']
>>> learned_statistics(leaky)
{'standardscaler': ['mean_', 'n_samples_seen_', 'scale_', 'var_']}
>>> public = make_pipeline(PublicBoundsTransformer({0: (0, 10), 1: (0, 10)}),
...                        DPLogisticRegression(data_norm="from_bounds", random_state=0))
>>> learned_statistics(public.fit(X, y)), public.coefficients().index.tolist()
({}, ['(Intercept)', 'x0', 'x1'])
"""

from __future__ import annotations

import inspect
import math
import numbers
import types
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion
from sklearn.pipeline import Pipeline as SklearnPipeline
from sklearn.pipeline import make_pipeline as sklearn_make_pipeline
from sklearn.utils.validation import check_is_fitted

from ..design.preprocess import Preprocess
from ..exceptions import PrivacyWarning
from .bounds import PublicBoundsTransformer

__all__ = ["Pipeline", "make_pipeline", "learned_statistics", "step_bound", "StepBound",
           "PipelineChecked", "enclosing_pipelines", "steps_before", "private_eps",
           "warn_learned", "resolve_data_norm", "FROM_BOUNDS"]

#: The ``data_norm`` value that takes the bound from the public map before the estimator.
FROM_BOUNDS = "from_bounds"
#: Fitted attributes that record the input's shape and column names (public), not statistics.
SHAPE_ONLY = ("n_features_in_", "feature_names_in_")

#: What a step that learned from the rows means for the release, and the fix.
LEARNED_WARNING = (
    "{steps} learned statistics of the training rows without privacy ({what}), and the "
    "private {name}(eps={eps:g}) is fitted on {its} output: the released model depends on "
    "them, so the pipeline as a whole is not {eps:g}-differentially private. Use public "
    "constants instead: privatelr.sklearn.PublicBoundsTransformer(privatelr.public_bounds("
    "{{column: (lo, hi)}}, levels={{column: [...]}})) to scale and encode, with "
    "DPLogisticRegression(data_norm='from_bounds'); OneHotEncoder(categories=[...]) with "
    "declared categories; missing values filled with a public constant before the pipeline")

#: A numeric data_norm next to public bounds that give another value.
MISMATCH_WARNING = (
    "{name}(data_norm={given:g}) follows step {step!r}, whose public bounds give data_norm="
    "{derived:.6g}{clipping}; the two differ, so {effect}. Pass data_norm='from_bounds' to use "
    "the bounds' value")


class PipelineChecked:
    """Marker of a private estimator that checks the pipeline fitting it by itself (as
    :class:`privatelr.sklearn.DPLogisticRegression` does when it is fitted): a
    :class:`Pipeline` then leaves the check (:func:`warn_learned`) to it, so it warns once."""


# -------------------------------------------------------------------------------------------
# what a fitted step learned from the rows
# -------------------------------------------------------------------------------------------

def _public_by_declaration(step) -> bool:
    """A transformer whose fitted attributes come from its parameters (and the input's shape)
    alone; see the module docstring."""
    from sklearn.preprocessing import (Binarizer, FunctionTransformer, Normalizer,
                                       OneHotEncoder, OrdinalEncoder, PolynomialFeatures,
                                       SplineTransformer)

    if isinstance(step, (PublicBoundsTransformer, PolynomialFeatures, Normalizer, Binarizer,
                         FunctionTransformer)):
        return True
    if isinstance(step, SplineTransformer):
        return not isinstance(step.knots, str)
    if isinstance(step, (OneHotEncoder, OrdinalEncoder)):
        return (not isinstance(step.categories, str) and step.min_frequency is None
                and step.max_categories is None)
    return False


def _declared_one_hot(step) -> bool:
    """A fitted ``OneHotEncoder`` with declared categories (public by declaration)."""
    from sklearn.preprocessing import OneHotEncoder

    return isinstance(step, OneHotEncoder) and _public_by_declaration(step) and \
        hasattr(step, "categories_")


def _children(step) -> list:
    """``(name, sub-step)`` of a composite step (fitted parts where they exist)."""
    if isinstance(step, SklearnPipeline):
        return list(step.steps)
    if isinstance(step, ColumnTransformer):
        return [(n, t) for n, t, _ in getattr(step, "transformers_", step.transformers)]
    if isinstance(step, FeatureUnion):
        return list(step.transformer_list)
    return []


def learned_statistics(step, prefix: str = "") -> dict:
    """What each part of a fitted step (or pipeline) learned from the rows it was fitted on.

    Parameters
    ----------
    step : estimator, Pipeline, ColumnTransformer or FeatureUnion
        Fitted. For a pipeline, its last step (the estimator) is left out: only what comes
        before it shapes the estimator's input.
    prefix : str
        Prepended to the names (``"outer__"``), as scikit-learn names nested parameters.

    Returns
    -------
    dict
        ``{step name: [learned attributes]}`` for every part that learned something (empty
        when the whole preprocessing is public): the attributes ``fit`` set (absent from an
        unfitted clone) other than ``n_features_in_``, ``feature_names_in_`` and those set to
        None, except for the transformers that are public by declaration (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.impute import SimpleImputer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.preprocessing import FunctionTransformer, MinMaxScaler
    >>> pipe = make_pipeline(FunctionTransformer(np.log1p), SimpleImputer(), MinMaxScaler(),
    ...                      LogisticRegression())
    >>> X, y = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 1.0]]), np.array([0, 1, 1])
    >>> learned_statistics(pipe.fit(X, y))
    {'simpleimputer': ['statistics_'], 'minmaxscaler': ['data_max_', 'data_min_', 'data_range_', 'min_', 'n_samples_seen_', 'scale_']}
    """
    if isinstance(step, SklearnPipeline) and step.steps:
        *before, (last_name, last) = step.steps
        out = _learned_named(before, prefix)
        if isinstance(last, SklearnPipeline):       # the estimator is the last of its last step
            out.update(learned_statistics(last, f"{prefix}{last_name}__"))
        return out
    if _children(step):
        return _learned_named(_children(step), prefix)
    return _learned_one(step, prefix.rstrip("_") or type(step).__name__.lower())


def _learned_named(steps: list, prefix: str = "") -> dict:
    """:func:`learned_statistics` of ``(name, step)`` pairs that all transform the data (a
    pipeline among them is a transformer: every one of its steps counts)."""
    out: dict = {}
    for name, sub in steps:
        path = f"{prefix}{name}"
        out.update(_learned_named(_children(sub), path + "__") if _children(sub)
                   else _learned_one(sub, path))
    return out


def _learned_one(step, name: str) -> dict:
    if step is None or isinstance(step, str) or _public_by_declaration(step):
        return {}                                   # "passthrough", "drop"
    from sklearn.base import clone

    state = vars(step)
    try:                  # what fit added: the attributes an unfitted copy does not have
        before = set(vars(clone(step)))
    except (TypeError, RuntimeError, AttributeError):
        before = {k for k in state if not k.endswith("_") or k.startswith("_")}
    attrs = sorted(k for k, v in state.items() if k not in before and k not in SHAPE_ONLY
                   and v is not None and (not k.startswith("_") or _holds_values(v)))
    return {name: attrs} if attrs else {}


def _holds_values(value) -> bool:
    """A private attribute counts when it holds values (an array, a sparse matrix, a pandas
    object) — ``KNNImputer._fit_X`` — not bookkeeping such as a dtype."""
    from .._validation import is_sparse

    return isinstance(value, np.ndarray) or is_sparse(value) or hasattr(value, "iloc")


def private_eps(estimator) -> float | None:
    """The ``eps`` (or ``epsilon``) of a private estimator: above 0 and finite; None for a
    non-private one (0 or inf) or an estimator without such a parameter."""
    try:
        params = estimator.get_params(deep=False)
    except (AttributeError, TypeError):
        return None
    for key in ("eps", "epsilon"):
        value = params.get(key)
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and \
                0 < float(value) < math.inf:
            return float(value)
    return None


def warn_learned(steps: list, estimator, eps: float, *, stacklevel: int = 2) -> None:
    """Warn (:class:`~privatelr.exceptions.PrivacyWarning`) when any of ``steps`` (``(name,
    fitted step)`` pairs before a private ``estimator``) learned statistics from the rows."""
    found = _learned_named(steps)
    if not found:
        return
    names = list(found)
    steps_text = (f"step {names[0]!r}" if len(names) == 1 else
                  "steps " + ", ".join(repr(n) for n in names))
    what = ", ".join(found[names[0]]) if len(names) == 1 else \
        "; ".join(f"{n}: {', '.join(a)}" for n, a in found.items())
    warnings.warn(LEARNED_WARNING.format(steps=steps_text, what=what,
                                         name=type(estimator).__name__, eps=eps,
                                         its="its" if len(names) == 1 else "their"),
                  PrivacyWarning, stacklevel=stacklevel + 1)


# -------------------------------------------------------------------------------------------
# the pipeline fitting an estimator (the call stack) and the steps before it
# -------------------------------------------------------------------------------------------

def enclosing_pipelines(estimator) -> list:
    """The scikit-learn pipelines fitting ``estimator`` right now, innermost first: a walk up
    the call stack for a method of :mod:`sklearn.pipeline` whose pipeline's last step is
    ``estimator`` (then one whose last step is that pipeline, ...). Empty outside a pipeline.
    Cheap: a few dozen frames, once per fit."""
    chain: list = []
    target = estimator
    frame = inspect.currentframe()
    try:
        while frame is not None:
            code = frame.f_code
            if frame.f_globals.get("__name__") == "sklearn.pipeline" and code.co_argcount and \
                    code.co_varnames[0] == "self":
                owner = frame.f_locals.get("self")
                if isinstance(owner, SklearnPipeline) and owner is not target and \
                        (not chain or owner is not chain[-1]) and owner.steps and \
                        owner.steps[-1][1] is target:
                    chain.append(owner)
                    target = owner
            frame = frame.f_back
    finally:
        del frame
    return chain


def steps_before(chain: list) -> list:
    """``(name, step)`` of every step before the estimator, in the order the data pass them
    (the outer pipelines' steps first); ``"passthrough"`` and None left out."""
    out: list = []
    for pipe in reversed(chain):
        for name, step in pipe.steps[:-1]:
            if step is not None and not (isinstance(step, str) and step == "passthrough"):
                out.append((name, step))
    return out


# -------------------------------------------------------------------------------------------
# the public bound a step implies
# -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StepBound:
    """The public map a preprocessing step applies (:func:`step_bound`).

    Attributes
    ----------
    data_norm : float
        The public bound on the L2 norm of the step's output rows.
    clip : bool
        Rows above ``data_norm`` are expected and clipped (``norm="rms"``).
    preprocess : privatelr.design.Preprocess
        The affine map from the raw columns (intercept first) to the output.
    """

    data_norm: float
    clip: bool
    preprocess: Preprocess


def _empty_selection(cols) -> bool:
    if isinstance(cols, slice):
        return False
    if callable(cols) or isinstance(cols, (str, int)):
        return False
    arr = np.asarray(cols)
    return arr.size == 0 or (arr.dtype == bool and not arr.any())


def step_bound(step, name: str = "the step") -> StepBound:
    """The public ``data_norm``, clipping rule and affine map of a fitted preprocessing step.

    Parameters
    ----------
    step : PublicBoundsTransformer, OneHotEncoder, ColumnTransformer or Pipeline
        A :class:`~privatelr.sklearn.PublicBoundsTransformer`; a
        :class:`~sklearn.preprocessing.OneHotEncoder` with declared ``categories`` (its 0/1
        dummies add at most 1 per input column to a row's squared norm; not centred); a
        fitted :class:`~sklearn.compose.ColumnTransformer` whose outputs all come from such
        transformers (dropped columns do not count; bounds combine as
        :math:`\\sqrt{\\sum_i B_i^2}`, clipping if any part clips); or a pipeline ending in one.
    name : str
        The step's name, for the error message.

    Returns
    -------
    StepBound

    Raises
    ------
    ValueError
        When the step gives no public bound (naming what has none).
    """
    if isinstance(step, PublicBoundsTransformer):
        check_is_fitted(step, "n_features_in_")
        return StepBound(step.data_norm, step.clip, step.preprocess())
    if _declared_one_hot(step):
        # 0/1 dummies of declared categories: at most one 1 per input column
        width = sum(len(c) for c in step.categories_) - sum(
            d is not None for d in (step.drop_idx_ if step.drop_idx_ is not None else []))
        return StepBound(math.sqrt(step.n_features_in_), False,
                         Preprocess(divisors=(1.0,) * width))
    if isinstance(step, SklearnPipeline):
        inner = [(n, s) for n, s in step.steps
                 if s is not None and not (isinstance(s, str) and s == "passthrough")]
        if inner:
            return step_bound(inner[-1][1], f"{name}__{inner[-1][0]}")
    if isinstance(step, ColumnTransformer) and hasattr(step, "transformers_"):
        original = {n: t for n, t, _ in step.transformers}
        original["remainder"] = step.remainder
        squares, clip = 0.0, False
        divisors: list = []
        shifts: list = []
        for sub_name, sub, cols in step.transformers_:
            if (isinstance(sub, str) and sub == "drop") or _empty_selection(cols):
                continue
            if (isinstance(sub, str) and sub == "passthrough") or \
                    (isinstance(original.get(sub_name), str) and
                     original[sub_name] == "passthrough"):
                raise ValueError(f"{name}: the columns the ColumnTransformer passes through "
                                 f"({sub_name!r}) have no public bound; map them with a "
                                 "PublicBoundsTransformer too, or drop them")
            part = step_bound(sub, f"{name}__{sub_name}")
            squares += part.data_norm ** 2
            clip = clip or part.clip
            start = len(divisors)
            divisors.extend(part.preprocess.divisors or ())
            shifts.extend((j + start, k, c) for j, k, c in part.preprocess.shifts or ())
        if not divisors:
            raise ValueError(f"{name}: the ColumnTransformer outputs no column")
        return StepBound(math.sqrt(squares), clip,
                         Preprocess(divisors=tuple(divisors), shifts=tuple(shifts) or None))
    raise ValueError(f"{name} ({type(step).__name__}) gives no public bound on its output "
                     "rows; make the step before the estimator a privatelr.sklearn."
                     "PublicBoundsTransformer (or a ColumnTransformer of them), or give "
                     "data_norm as a number")


def resolve_data_norm(estimator, data_norm, clip: bool, chain: list, *,
                      stacklevel: int = 2) -> tuple:
    """``(data_norm, clip)`` of ``estimator``'s fit: a number as given (warning when the public
    map just before it implies another value), or ``"from_bounds"``: the bound and clipping
    rule of the step before it in the pipeline ``chain`` (:func:`enclosing_pipelines`)."""
    from .._validation import check_real

    label = type(estimator).__name__
    before = steps_before(chain)
    if isinstance(data_norm, str):
        if data_norm != FROM_BOUNDS:
            raise ValueError(f"data_norm must be a positive number or {FROM_BOUNDS!r}, got "
                             f"{data_norm!r}")
        if not before:
            raise ValueError(
                f"{label}(data_norm='from_bounds') takes data_norm from the step before it in a "
                "scikit-learn pipeline (a privatelr.sklearn.PublicBoundsTransformer), but it is "
                "not fitted as the last step of a pipeline; give data_norm as a number (e.g. "
                "PublicBoundsTransformer(...).data_norm)")
        step_name, step = before[-1]
        bound = step_bound(step, repr(step_name))
        return bound.data_norm, bool(clip) or bound.clip
    B = check_real("data_norm", data_norm, low=0.0, low_open=True)
    if before:
        step_name, step = before[-1]
        try:
            bound = step_bound(step, repr(step_name))
        except ValueError:
            return B, clip
        if not math.isclose(B, bound.data_norm, rel_tol=1e-12):
            effect = ("rows above it are refused (or clipped with clip=True)"
                      if B < bound.data_norm else "the noise is larger than it need be")
            warnings.warn(MISMATCH_WARNING.format(
                name=label, given=B, step=step_name, derived=bound.data_norm, effect=effect,
                clipping=" (rows above it clipped)" if bound.clip else ""),
                UserWarning, stacklevel=stacklevel + 1)
    return B, clip


# -------------------------------------------------------------------------------------------
# the pipeline
# -------------------------------------------------------------------------------------------

class _DataScale:
    """A fitted estimator's release seen through a public map (for :mod:`privatelr.inference`,
    which reads ``spec.preprocess`` and the column names to report on the data's scale)."""

    def __init__(self, result, spec):
        self.__dict__["_result"] = result
        self.__dict__["spec"] = spec

    def __getattr__(self, name):
        return getattr(self.__dict__["_result"], name)


class Pipeline(SklearnPipeline):
    """scikit-learn's :class:`~sklearn.pipeline.Pipeline`, private by construction.

    ``fit`` warns (:class:`~privatelr.exceptions.PrivacyWarning`) when a step before a private
    final estimator (an ``eps``/``epsilon`` parameter above 0 and finite) learned statistics
    from the training rows (:func:`learned_statistics`), naming the step, what it learned and
    the fix. With a public map as the step before the estimator
    (:class:`~privatelr.sklearn.PublicBoundsTransformer`, or a ``ColumnTransformer`` of them),
    :meth:`coefficients`, :meth:`vcov`, :meth:`confint` and :meth:`coef_table` report the
    estimator's numbers per unit of the original columns (the map is affine and inverted
    exactly; ``scale="mapped"`` gives them on the fitted scale).

    Parameters
    ----------
    steps : list of (str, estimator)
        As for scikit-learn's ``Pipeline``.
    transform_input : list of str, optional
        As for scikit-learn's ``Pipeline`` (metadata routing).
    memory : str or joblib.Memory, optional
        As for scikit-learn's ``Pipeline``.
    verbose : bool, default=False
        As for scikit-learn's ``Pipeline``.
    """

    def fit(self, X, y=None, **params):
        """Fit every step, as scikit-learn's ``Pipeline.fit``; warn when a step before a private
        final estimator learned from the rows (an estimator that checks its pipeline itself,
        as ``DPLogisticRegression`` does, warns before its release instead)."""
        super().fit(X, y, **params)
        final = self._final_estimator
        eps = private_eps(final)
        if eps is not None and not isinstance(final, PipelineChecked):
            warn_learned([(n, s) for n, s in self.steps[:-1]
                          if s is not None and not isinstance(s, str)], final, eps,
                         stacklevel=2)
        return self

    # -- numbers per unit of the original columns ---------------------------------------------
    def _public_view(self, scale: str):
        """``(estimator, coefficients intercept first, names, Preprocess or None)``."""
        from ..inference.estimate import check_scale

        check_scale(scale)
        final = self._final_estimator
        check_is_fitted(final)
        coef = np.asarray(getattr(final, "coef_", None))
        if coef.ndim != 2 or coef.shape[0] != 1:
            raise ValueError("the coefficients are reported for a binary final estimator "
                             "(coef_ of shape (1, d))")
        icpt = bool(getattr(final, "fit_intercept", True))
        b = np.r_[np.asarray(final.intercept_, float)[:1], coef[0]] if icpt else coef[0]
        names = [str(c) for c in self[:-1].get_feature_names_out()] if len(self) > 1 else \
            [f"x{j}" for j in range(coef.shape[1])]
        names = (["(Intercept)"] if icpt else []) + names
        if scale == "mapped":
            return final, b, names, None
        before = [(n, s) for n, s in self.steps[:-1]
                  if s is not None and not (isinstance(s, str) and s == "passthrough")]
        if not before:
            raise ValueError("scale='data' needs a public map before the estimator (a "
                             "privatelr.sklearn.PublicBoundsTransformer); use scale='mapped'")
        pre = step_bound(before[-1][1], repr(before[-1][0])).preprocess
        if pre.shifts and not icpt:
            raise ValueError("the public map centres its columns, which needs the intercept "
                             "to convert the coefficients into data units; fit with "
                             "fit_intercept=True, or map with public_bounds(..., "
                             "center=False)")
        return final, b, names, pre

    def coefficients(self, scale: str = "data"):
        """The final estimator's coefficients (intercept first), a pandas Series: per unit of
        the original columns (``scale="data"``: the inverse of the public map before it,
        exact) or on the fitted scale (``"mapped"``). Needs no inference release.

        Parameters
        ----------
        scale : {"data", "mapped"}

        Returns
        -------
        pandas.Series
        """
        import pandas as pd

        _, b, names, pre = self._public_view(scale)
        if pre is not None:
            b = np.asarray(pre.design_matrix(len(b), names[0] == "(Intercept)")) @ b
        return pd.Series(b, index=names, name="coefficient")

    def _inference_model(self, scale: str):
        final, b, names, pre = self._public_view(scale)
        model = getattr(final, "_inference_model", None)
        if model is None:
            raise ValueError(f"{type(final).__name__} has no inference release; use "
                             "privatelr.sklearn.DPLogisticRegression(inference=True)")
        spec = types.SimpleNamespace(preprocess=pre, design_columns=list(names),
                                     columns=list(names), intercept=names[0] == "(Intercept)")
        return _DataScale(model(), spec)

    def vcov(self, scale: str = "data"):
        """Covariance of the final estimator's estimates (intercept first), a DataFrame, per
        unit of the original columns (``scale="data"``) or on the fitted scale
        (:func:`privatelr.vcov`). Needs ``DPLogisticRegression(inference=...)``."""
        from ..inference import vcov

        return vcov(self._inference_model(scale), scale=scale)

    def confint(self, level: float = 0.95, scale: str = "data"):
        """Confidence intervals of the final estimator's coefficients (intercept first), per
        unit of the original columns (``scale="data"``) or on the fitted scale
        (:func:`privatelr.confint`). Needs ``DPLogisticRegression(inference=...)``."""
        from ..inference import confint

        return confint(self._inference_model(scale), level=level, scale=scale)

    def coef_table(self, level: float | None = None, exponentiate: bool = False,
                   scale: str = "data"):
        """glm's coefficient table of the final estimator (:func:`privatelr.coef_table`), per
        unit of the original columns (``scale="data"``) or on the fitted scale. Needs
        ``DPLogisticRegression(inference=...)``."""
        from ..inference import coef_table

        return coef_table(self._inference_model(scale), level=level,
                          exponentiate=exponentiate, scale=scale)


def make_pipeline(*steps, memory=None, transform_input=None, verbose: bool = False) -> Pipeline:
    """scikit-learn's :func:`~sklearn.pipeline.make_pipeline` (same signature, same step
    names), giving a :class:`Pipeline`: its ``fit`` warns
    (:class:`~privatelr.exceptions.PrivacyWarning`) when a step before a private final
    estimator learned statistics from the training rows, and it reports coefficients and
    intervals per unit of the original columns after a public map.

    Parameters
    ----------
    *steps : estimators
        The steps, the private estimator last.
    memory, transform_input, verbose
        As for scikit-learn's ``make_pipeline``.

    Returns
    -------
    Pipeline

    Examples
    --------
    >>> from privatelr import public_bounds
    >>> from privatelr.sklearn import DPLogisticRegression, PublicBoundsTransformer
    >>> pipe = make_pipeline(PublicBoundsTransformer(public_bounds({"age": (18, 90)})),
    ...                      DPLogisticRegression(data_norm="from_bounds"))
    >>> [name for name, _ in pipe.steps]
    ['publicboundstransformer', 'dplogisticregression']
    """
    made = sklearn_make_pipeline(*steps, memory=memory, transform_input=transform_input,
                                 verbose=verbose)
    return Pipeline(made.steps, memory=memory, transform_input=transform_input,
                    verbose=verbose)
