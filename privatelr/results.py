r"""Fitted models: the release, and — kept apart — the diagnostics.

Every result holds two kinds of numbers, never mixed:

* **the release** — what differential privacy covers and what may be shared: the private
  coefficients, the public calibration (:class:`~privatelr.calibration.Calibration`: ``n``,
  ``d``, ε, ε', λ, the noise scale, the bounds), the public declarations (the design spec:
  formula, levels, response coding, the public map), the threshold and the status;
* **the diagnostics** (:class:`Diagnostics`) — numbers computed from the raw rows without noise,
  useful to the data holder and **not private**: the training C-index, the objective value
  (non-private fits only), the solver's report, the count of rows outside the bound.

Saved files (``to_json``) and pickles hold only the release, unless the caller asks for the
diagnostics with :meth:`DPLR.keep_diagnostics` (then they are written, labelled as not private).
Results are frozen: a fitted model cannot be edited into an inconsistent state.

Examples
--------
>>> import pickle
>>> from privatelr import dplr
>>> from privatelr.datasets import load_iris
>>> iris = load_iris(); iris[iris.columns[:4]] /= 12
>>> m = dplr("I(Species == 'setosa') ~ .", iris, eps=1, random_state=0)
>>> m.diagnostics is not None, pickle.loads(pickle.dumps(m)).diagnostics is None
(True, True)
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .calibration import Calibration
from .scoring import outputs, probabilities

__all__ = ["Diagnostics", "ERMResult", "DPLR", "ModelFields", "Status", "calibration_property",
           "TuningRecord", "WALRResult", "predict", "summary", "guarantee_text", "MODEL_FORMAT",
           "MODEL_VERSION", "DIAGNOSTICS_KEY", "SEED_GIVEN", "redact_seed"]

#: The saved-model file: its envelope kind and format version (read by :mod:`privatelr.persist`).
MODEL_FORMAT = "privatelr.model"
MODEL_VERSION = 2
#: The key under which a saved model holds its diagnostics, when the caller asked for them.
DIAGNOSTICS_KEY = "diagnostics (not private)"


class Status(str):
    """A result's status text, R's words: ``"ok"``, ``"adjusted lambda"``, ``"unique.outcome"``
    (+ ``" nonconvergence"``).

    PrivateLR returns ``"unique.outcome"`` when every label is equal, while its manual says
    ``"unique.outcomes"``; a status compares equal to either spelling, so code ported from R
    works whichever it tests.

    Examples
    --------
    >>> s = Status("unique.outcome")
    >>> s == "unique.outcome", s == "unique.outcomes", s == "ok", s.startswith("unique.outcomes")
    (True, True, False, True)
    """

    __slots__ = ()

    @staticmethod
    def _canonical(text: str) -> str:
        return text.replace("unique.outcomes", "unique.outcome")

    def __eq__(self, other):
        if isinstance(other, str):
            return self._canonical(str(self)) == self._canonical(str(other))
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self._canonical(str(self)))

    def startswith(self, prefix, *args):
        if isinstance(prefix, str):
            prefix = self._canonical(prefix)
        elif isinstance(prefix, tuple):
            prefix = tuple(self._canonical(p) for p in prefix)
        return str.startswith(self._canonical(str(self)), prefix, *args)

    def __reduce__(self):
        return (str, (str(self),))


#: What a result's ``call`` says of the seed: that one was given, never its value (whoever knows
#: the seed can redraw the noise and subtract it from the release).
SEED_GIVEN = "<given>"
_SEED = re.compile(r"\brandom_state=(?:np\.\w+\(\d+\)|numpy\.\w+\(\d+\)|\d+|<Generator>)")


def redact_seed(call: str) -> str:
    """``call`` with any ``random_state=<value>`` (an int, a NumPy int, ``<Generator>``: what
    earlier versions wrote) replaced by ``random_state=<given>``.

    Examples
    --------
    >>> redact_seed("dplr('y ~ x', <DataFrame 10x2>, eps=1, random_state=830571946231)")
    "dplr('y ~ x', <DataFrame 10x2>, eps=1, random_state=<given>)"
    """
    return _SEED.sub("random_state=" + SEED_GIVEN, call) if isinstance(call, str) else call


def _rebuild(cls, state: dict):
    return cls(**state)


class Released:
    """Pickling keeps the release only, unless the diagnostics were marked to be kept."""

    diagnostics: Diagnostics | None

    def __reduce__(self):
        state = {f.name: getattr(self, f.name) for f in dataclasses.fields(cast(Any, self))}
        diag = state.get("diagnostics")
        if diag is not None and not diag.saved:
            state["diagnostics"] = None
        return (_rebuild, (type(self), state))

    def release(self):
        """A copy without diagnostics: exactly what may be shared."""
        return dataclasses.replace(cast(Any, self), diagnostics=None)

    def keep_diagnostics(self, keep: bool = True):
        """A copy whose diagnostics are written to saved files and pickles (labelled there as
        not private)."""
        if self.diagnostics is None:
            raise ValueError("this result carries no diagnostics (loaded from a release?)")
        return dataclasses.replace(cast(Any, self), diagnostics=dataclasses.replace(
            self.diagnostics, saved=bool(keep)))


def _frozen_array(values) -> np.ndarray:
    arr = np.array(values, dtype=np.float64)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class Diagnostics:
    """Numbers computed from the raw rows without noise. **Not private.**

    Attributes
    ----------
    c_index : float
        Training C-index (AUC, ties half); NaN where not computed (Dask data).
    value : float
        The objective at the solution: reported for non-private fits only (for a private fit it
        would be a statistic of the raw data — with output perturbation, ``J`` at the exact
        minimiser), NaN otherwise.
    counts : dict
        R's ``optim`` counts (function and gradient evaluations).
    message : str
        The solver's message.
    iterations, passes : int
        Solver iterations and full passes over the rows.
    grad_norm : float
        The final gradient's norm.
    n_exceeding, n_clipped : int
        Rows whose norm exceeded the bound, and how many of them were clipped.
    saved : bool
        Written to files and pickles (:meth:`DPLR.keep_diagnostics`).
    """

    c_index: float = math.nan
    value: float = math.nan
    counts: dict = field(default_factory=dict)
    message: str = ""
    iterations: int = 0
    passes: int = 0
    grad_norm: float = math.nan
    n_exceeding: int = 0
    n_clipped: int = 0
    saved: bool = False

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "saved"}


# ---------------------------------------------------------------------------------------------
# the engine's result
# ---------------------------------------------------------------------------------------------

class _Inference:
    """R's inference vocabulary as methods (:mod:`privatelr.inference`), for every result."""

    def vcov(self):
        """Covariance of the bias-corrected estimates (:func:`privatelr.vcov`)."""
        from .inference import vcov

        return vcov(self)

    def confint(self, parm=None, level: float = 0.95):
        """Confidence intervals (:func:`privatelr.confint`)."""
        from .inference import confint

        return confint(self, parm=parm, level=level)

    def tidy(self, conf_int: bool = True, level: float = 0.95, exponentiate: bool = False):
        """One row per coefficient (:func:`privatelr.tidy`)."""
        from .inference import tidy

        return tidy(self, conf_int=conf_int, level=level, exponentiate=exponentiate)


@dataclass(frozen=True, eq=False)
class ERMResult(Released, _Inference):
    """Result of :func:`privatelr.erm.fit`: the release and, apart, the diagnostics.

    Attributes
    ----------
    coef : (d,) ndarray
        The coefficients (ε-differentially private for a private fit), read-only.
    calibration : Calibration
        The public privacy calibration.
    status : str
        ``"ok"`` or ``"adjusted lambda"``, with ``" nonconvergence"`` appended when the solver
        did not converge (a private fit only with ``allow_nonconverged=True``: guarantee void).
    convergence : int
        0 when the solver converged (R's ``optim`` code otherwise).
    loss, solver : str
    inference : privatelr.inference.InferenceRelease or None
        The information matrix released for inference (``erm.fit(..., inference=True)``);
        part of the release.
    diagnostics : Diagnostics or None
        Not private; dropped by :meth:`release` and from pickles.

    ``n``, ``d``, ``eps``, ``eps_eff``, ``penalty``, ``lambda_``, ``method``, ``data_norm``,
    ``weights_bound``, ``noise_scale`` and ``delta`` read the calibration; ``value``, ``counts``,
    ``message``, ``iterations``, ``passes``, ``grad_norm``, ``n_exceeding`` and ``n_clipped``
    read the diagnostics (NaN / 0 / "" without them).
    """

    coef: np.ndarray
    calibration: Calibration
    status: str
    convergence: int
    loss: str
    solver: str = ""
    inference: Any = field(default=None, repr=False)
    diagnostics: Diagnostics | None = field(default=None, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "coef", _frozen_array(self.coef))

    if TYPE_CHECKING:   # the calibration's and the diagnostics' fields: properties set below
        def __getattr__(self, name: str) -> Any: ...

    @property
    def converged(self) -> bool:
        return self.convergence == 0

    def __repr__(self) -> str:
        return (f"ERMResult(method={self.method!r}, status={self.status!r}, d={self.d}, "
                f"eps={self.eps:g}, lambda_={self.lambda_:g})")


_CAL_FIELDS = ("n", "d", "eps", "eps_eff", "penalty", "lambda_", "method", "data_norm",
               "weights_bound", "noise_scale", "delta")
_DIAG_FIELDS = {"value": math.nan, "counts": {}, "message": "", "iterations": 0, "passes": 0,
                "grad_norm": math.nan, "n_exceeding": 0, "n_clipped": 0}


def calibration_property(name):
    return property(lambda self: getattr(self.calibration, name),
                    doc=f"The calibration's ``{name}`` (public).")


def _diag_property(name, default):
    def get(self):
        d = self.diagnostics
        return default if d is None else getattr(d, name)
    return property(get, doc=f"Diagnostics' ``{name}`` (**not private**).")


for _name in _CAL_FIELDS:
    setattr(ERMResult, _name, calibration_property(_name))
for _name, _default in _DIAG_FIELDS.items():
    setattr(ERMResult, _name, _diag_property(_name, _default))


# ---------------------------------------------------------------------------------------------
# tuning
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TuningRecord:
    """What a private tuning run may release about itself.

    Attributes
    ----------
    candidates : tuple
        The candidate hyperparameters (``gamma`` of each model, or ``lambda_`` for
        :func:`privatelr.dplr_tune`), in the order given.
    chosen : int
        Index of the chosen candidate (output of the exponential mechanism; private).
    eps : float
        The ε of the whole procedure (the common ε of the candidates).
    group_sizes : tuple of int
        Rows per training group, then the validation group (depends on ``n`` only); with
        random stopping the one group of all ``n`` rows.
    selection : str
        ``"split"`` (disjoint groups and the exponential mechanism) or ``"random_stopping"``.

    The validation error counts (and, with random stopping, the noisy scores and the number of
    runs) are deliberately **not** stored: the number of runs is outside random stopping's
    guarantee (:func:`privatelr.mechanisms.random_stopping`). A record pickled by an earlier
    version with a ``runs`` field loses it when unpickled.
    """

    candidates: tuple
    chosen: int
    eps: float
    group_sizes: tuple
    selection: str = "split"

    def __setstate__(self, state: dict):
        state = dict(state)
        state.pop("runs", None)            # earlier versions stored random stopping's run count
        self.__dict__.update(state)

    def to_dict(self) -> dict:
        out = {"candidates": list(self.candidates), "chosen": self.chosen, "eps": self.eps,
               "group_sizes": list(self.group_sizes)}
        if self.selection != "split":
            out.update(selection=self.selection)
        return out


# ---------------------------------------------------------------------------------------------
# dplr
# ---------------------------------------------------------------------------------------------

class ModelFields:
    """The fields every ``dplr`` model reads off its calibration and spec (binary
    :class:`DPLR` and :class:`~privatelr.multiclass.MulticlassDPLR`)."""

    calibration: Calibration
    spec: Any

    eps_eff = calibration_property("eps_eff")
    penalty = calibration_property("penalty")
    lambda_ = calibration_property("lambda_")
    n = calibration_property("n")
    method = calibration_property("method")

    @property
    def norm_bound(self) -> float:
        """``B``, the bound on the design rows used for the calibration."""
        return self.calibration.data_norm

    @property
    def formula(self) -> str:
        """The formula in R's form, ``.`` expanded."""
        return self.spec.formula_r


@dataclass(frozen=True, eq=False)
class DPLR(Released, ModelFields, _Inference):
    """A fitted ``dplr`` model (R's ``"dplr"`` list; dots in names become underscores).

    What :func:`privatelr.dplr` returns. The release (the coefficients and the public
    declarations and calibration that give them meaning) is what the privacy guarantee covers;
    the diagnostics, computed from the rows without noise, are kept apart (``diagnostics``):
    printed as "not private", left out of pickles, and saved only on request.

    Attributes
    ----------
    coefficients, par : pandas.Series
        The coefficients, indexed by design column (``(Intercept)``, ...).
    spec : privatelr.design.DesignSpec
        The public declarations and map: formula, levels, response coding, columns, scaling and
        projection (``predict`` rebuilds the design from it).
    calibration : Calibration
        ``n``, ``d``, ``eps``, ``eps_eff``, ``penalty``, ``lambda_``, ``method`` and the norm
        bound ``norm_bound`` (``B`` of the design rows) are read from it.
    data_norm : float
        The public bound on the covariate rows (intercept excluded).
    p_tr : float
        The classification threshold (0.5; data-driven thresholds only with ``compat``).
    threshold : str
    compat : {None, "PrivateLR"}
        ``"PrivateLR"``: R's behaviour, and the ε guarantee does **not** hold
        (``guarantee_holds`` is False; print, summary, HTML and the saved file say so).
    status : str
        ``ok`` or ``adjusted lambda`` (public: from ``n``, ε and λ), + `` nonconvergence`` if the
        solver did not converge. R's ``unique.outcome`` (every label equal; the manual's
        ``unique.outcomes`` compares equal, see :class:`Status`) marks non-private and
        ``compat`` fits only: in a private fit it would disclose a fact about the labels.
    convergence : int
        0 when converged.
    call : str
        The call, as text; of ``random_state`` it says only whether one was given
        (``random_state=<given>``), never the seed.
    n_dropped : int
        Rows dropped for missing values: the guarantee is over the complete rows, whose number
        ``n`` is public.
    tuning : TuningRecord or None
        Set by :func:`privatelr.dplr_tune`.
    inference : privatelr.inference.InferenceRelease or None
        What :func:`privatelr.vcov`, :func:`privatelr.confint` and the summary's coefficient
        table need (``dplr(..., inference=True)``; computed exactly at ``eps=0``); part of the
        release, saved with the model.
    diagnostics : Diagnostics or None
        **Not private** (not part of the release): ``CIndex``, ``value``, ``counts``,
        ``message``, ``n_exceeding`` and ``n_clipped`` read it (NaN / empty / 0 when the model
        was loaded without them).
    glm : privatelr.glm.GLMSummary or None
        A non-private fit's glm (the unpenalised maximum-likelihood fit of R's
        ``glm(family = binomial)``): its coefficient table, ``deviance``, ``null_deviance``,
        ``aic``, ``bic`` and :meth:`logLik`, and, in the fitting session, the rows that
        ``confint`` profiles; None for private fits (those are statistics of the raw rows).
    """

    coef: np.ndarray
    spec: Any
    calibration: Calibration
    data_norm: float
    p_tr: float
    threshold: str
    compat: str | None
    status: str
    convergence: int
    call: str
    n_dropped: int = 0
    tuning: TuningRecord | None = None
    inference: Any = field(default=None, repr=False)
    diagnostics: Diagnostics | None = field(default=None, repr=False)
    glm: Any = field(default=None, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "coef", _frozen_array(self.coef))
        object.__setattr__(self, "status", Status(self.status))
        object.__setattr__(self, "call", redact_seed(self.call))
        if self.coef.shape != (len(self.spec.columns),):
            raise ValueError(f"{self.coef.size} coefficients for {len(self.spec.columns)} "
                             "design columns")

    # -- the release, under R's names ----------------------------------------------------------
    @functools.cached_property
    def _estimate(self) -> tuple:
        from .inference import point_estimate, unit_matrix

        est, kind = point_estimate(self)
        est = _frozen_array(est)
        M = unit_matrix(self)
        return est, kind, _frozen_array(est if M is None else M @ est), M is not None

    @property
    def fitted_coef(self) -> np.ndarray:
        """The model's estimate on the scale it was fitted on (the public map's): what
        ``predict`` applies to the mapped rows. The bias-corrected estimate when the fit
        released inference, else the released vector :attr:`coef`."""
        return self._estimate[0]

    @property
    def estimate(self) -> str:
        """What :attr:`coefficients` holds: ``"bias-corrected"`` (a private fit with inference:
        the ridge shrinkage of the released vector removed, from released quantities only) or
        ``"released"`` (the vector the mechanism released; R's ``dplr`` coefficients)."""
        return self._estimate[1]

    @property
    def coefficients(self):
        """The model's one estimate as a pandas Series, per unit of the data's columns (the
        public map of ``bounds=`` inverted exactly), indexed by the design's columns.

        A private fit with inference reports the bias-corrected estimate (:attr:`estimate`),
        which ``predict``, the coefficient table and the intervals use too; the released,
        penalised vector on the fitted scale is :attr:`coef`."""
        import pandas as pd

        _, kind, values, mapped = self._estimate
        names = list(self.spec.design_columns) if mapped else list(self.spec.columns)
        return pd.Series(values, index=names, name="coefficients")

    par = coefficients
    eps = calibration_property("eps")

    # -- glm's numbers (non-private fits: R's deviance(), AIC(), logLik(), ...) ----------------
    def _glm(self):
        if self.glm is None:
            raise ValueError("deviance, AIC and the log-likelihood are statistics of the raw "
                             "rows: they are reported for non-private fits (eps=0) only"
                             if self.method != "nonprivate" else
                             "this non-private model carries no glm fit (a Dask or multiclass "
                             "fit)")
        return self.glm.require()

    @property
    def deviance(self) -> float:
        """R's ``deviance(glm(...))``: the residual deviance of the unpenalised fit (eps=0)."""
        return self._glm().deviance

    @property
    def null_deviance(self) -> float:
        """R's ``glm(...)$null.deviance`` (eps=0)."""
        return self._glm().null_deviance

    @property
    def aic(self) -> float:
        """R's ``AIC(glm(...))`` (eps=0)."""
        return self._glm().aic

    @property
    def bic(self) -> float:
        """R's ``BIC(glm(...))`` (eps=0)."""
        return self._glm().bic

    def logLik(self) -> float:
        """R's ``logLik(glm(...))`` (eps=0), with ``df`` = number of coefficients."""
        return self._glm().loglik
    delta = calibration_property("delta")
    d = calibration_property("d")

    @property
    def classes(self) -> list:
        """The two labels ``predict(type="class")`` returns (0-coded first)."""
        return list(self.spec.labels)

    @property
    def guarantee_holds(self) -> bool:
        """Whether the ε guarantee holds as stated (False for ``compat="PrivateLR"`` fits and
        for non-private fits, which have none)."""
        return self.compat is None and self.method != "nonprivate" and \
            "nonconvergence" not in self.status

    @property
    def did_rp(self) -> bool:
        pre = self.spec.preprocess
        return pre is not None and pre.projection is not None

    @property
    def rp_dim(self) -> int | None:
        return len(self.spec.preprocess.projection[0]) if self.did_rp else None

    @property
    def rp_p(self) -> np.ndarray | None:
        """The (p × q) projection matrix, already divided by sqrt(q)."""
        return np.array(self.spec.preprocess.projection) if self.did_rp else None

    @property
    def scaled(self) -> bool:
        pre = self.spec.preprocess
        return pre is not None and pre.scale_factor is not None

    @property
    def scale_factor(self) -> float:
        return self.spec.preprocess.scale_factor if self.scaled else 1.0

    CIndex = _diag_property("c_index", math.nan)
    value = _diag_property("value", math.nan)
    counts = _diag_property("counts", {})
    message = _diag_property("message", "")
    n_exceeding = _diag_property("n_exceeding", 0)
    n_clipped = _diag_property("n_clipped", 0)

    # -- use --------------------------------------------------------------------------------------
    def predict(self, data=None, type: str = "probabilities", se_fit: bool = False, *,
                newdata=None):
        """Predictions for new data (see :func:`predict`; ``newdata=`` is glm's name)."""
        return predict(self, data, type=type, se_fit=se_fit, newdata=newdata)

    def pred(self, data, type: str = "probabilities") -> np.ndarray:
        """R's convenience closure ``model$pred(data)``: same as :meth:`predict`."""
        return predict(self, data, type=type)

    def summary(self, odds_ratios: bool = False, level: float = 0.95):
        """The R-style summary (see :func:`summary`)."""
        return summary(self, odds_ratios=odds_ratios, level=level)

    def to_json(self, path=None, *, diagnostics: bool | None = None):
        """Save the model as a versioned, checksummed JSON file; no path: return the text.

        The file holds the release only, unless ``diagnostics=True`` (or the model came from
        :meth:`keep_diagnostics`): then the diagnostics are written too, under a key that says
        they are not private. ``privatelr.load_model(path)`` reads it back; the loaded model
        predicts bit for bit what this one predicts.
        """
        from . import envelope

        model = self if diagnostics is None else (
            self.keep_diagnostics(True) if diagnostics else self.release())
        text = envelope.dumps(MODEL_FORMAT, MODEL_VERSION, model.to_dict())
        if path is None:
            return text
        envelope.write_text(path, text)

    def to_dict(self) -> dict:
        """The body of the model's saved file (layout in :mod:`privatelr.persist`): the release,
        and the diagnostics only when they were marked to be kept."""
        from .envelope import encode

        body = {
            "class": "DPLR",
            "formula": self.formula,
            "guarantee": guarantee_text(self),
            "coefficients": {"names": [str(c) for c in self.spec.columns],
                             "values": self.coef.tolist()},
            "calibration": dataclasses.asdict(self.calibration),
            "threshold": {"method": self.threshold, "p_tr": self.p_tr},
            "status": self.status,
            "convergence": self.convergence,
            "call": self.call,
            "compat": self.compat,
            "data_norm": self.data_norm,
            "n_dropped": self.n_dropped,
            "tuning": None if self.tuning is None else self.tuning.to_dict(),
            "design": self.spec.to_dict(),
        }
        if self.inference is not None:
            body["inference"] = self.inference.to_dict()
        if self.glm is not None:
            body["glm"] = self.glm.to_dict()
        if self.diagnostics is not None and self.diagnostics.saved:
            body[DIAGNOSTICS_KEY] = self.diagnostics.to_dict()
        return encode(body)

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


def guarantee_text(model: DPLR) -> str:
    """What a model (and its saved file) says about its guarantee."""
    if model.method == "nonprivate":
        return "none: a non-private fit (eps = 0)"
    if model.compat is not None:
        return ("void: compat='PrivateLR' reproduces R's PrivateLR; the stated eps does NOT "
                "hold")
    if "nonconvergence" in model.status:
        return "void: the solver did not converge (allow_nonconverged=True)"
    return "holds"


def predict(model: DPLR, data=None, type: str = "probabilities", se_fit: bool = False, *,
            newdata=None):
    r"""``predict(model, data, type="probabilities")`` as in R (module-level form).

    ``newdata=`` is accepted as an alias of ``data`` (R's ``predict.glm(object, newdata)``
    habit); giving both is an error.

    ``type`` is ``"probabilities"`` (or glm's ``"response"``), ``"class"`` or ``"link"`` (the
    linear predictor); R treats any other value as ``"class"``, here it is a ``ValueError``.
    Every input row gets one output: a row with a missing value, or whose probability is not a
    number (infinite covariates), gets NaN and no class.

    The result takes the input's form. A pandas DataFrame gives a pandas Series on the
    input's index (``"probabilities"``/``"link"``: floats; ``"class"``: a Categorical whose
    categories are the two labels and whose missing value is NaN). Other inputs (a dict of
    columns, a NumPy matrix for a matrix-fitted model) give a NumPy array (classes: an object
    array with ``None`` for a missing class when any is missing). A Dask DataFrame gives a lazy
    Dask Series of the pandas form, computed partition-wise.

    ``se_fit=True`` (R's ``se.fit``; ``type`` ``"link"`` or ``"response"``/``"probabilities"``)
    returns a DataFrame (a lazy Dask DataFrame for Dask input) on the input's index with
    columns ``fit`` and ``se_fit``: the linear
    predictor at the bias-corrected estimate — the centre of :func:`privatelr.confint`'s
    intervals, equal to the plain prediction at ``eps=0, lambda_=0`` — and its standard error
    :math:`\sqrt{x^\top V x}` from :func:`privatelr.vcov` (sampling and privacy noise); on the
    response scale ``fit`` is the probability and ``se_fit`` its delta-method error
    :math:`p(1-p)\,\mathrm{se}`, as R. Needs a model with inference (``inference=True``).

    Examples
    --------
    >>> from privatelr import dplr, predict
    >>> from privatelr.datasets import load_mtcars
    >>> m = dplr("am ~ mpg + factor(cyl)", load_mtcars(), eps=0)
    >>> predict(m, load_mtcars().head(2)).round(3)       # pandas in, pandas out (same index)
    model
    Mazda RX4        0.499
    Mazda RX4 Wag    0.499
    Name: probabilities, dtype: float64
    >>> predict(m, load_mtcars().iloc[:3].assign(mpg=[21.0, None, 22.8]), type="class")
    model
    Mazda RX4          0
    Mazda RX4 Wag    NaN
    Datsun 710         1
    Name: class, dtype: category
    Categories (2, int64): [0, 1]
    """
    from .scoring import TYPES

    if newdata is not None:
        if data is not None:
            raise TypeError("predict: give the new data once, as data or as newdata (R's name)")
        data = newdata
    if data is None:
        raise TypeError("predict: the data to predict for is missing; pass it as data (or "
                        "newdata=, R's name)")
    if not isinstance(model, DPLR):
        if getattr(model, "multiclass", None) is not None and se_fit is False:
            return model.predict(data, type=type)     # privatelr.multiclass.predict_multiclass
        raise TypeError(f"model must be a DPLR (returned by dplr()), got "
                        f"{model.__class__.__name__}")
    if not isinstance(type, str) or type not in TYPES:
        raise ValueError(f"type must be one of {TYPES}, got {type!r}")
    if not isinstance(se_fit, bool):
        raise TypeError(f"se_fit must be True or False, got {se_fit!r}")
    if se_fit:
        return _predict_se(model, data, type)
    if data.__class__.__module__.split(".")[0] == "dask":   # lazy, partition-wise
        from .backends.dask import predict_frame

        return predict_frame(model.spec, model.fitted_coef, model.p_tr, data, type)
    r = model.spec.rows(data, response=False)
    if data.__class__.__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
        from .scoring import output_series

        return output_series(r.X, r.complete, model.fitted_coef, model.p_tr, model.spec.labels,
                             type, index=data.index, offset=r.offset)
    return outputs(r.X, r.complete, model.fitted_coef, model.p_tr, model.spec.labels, type,
                   offset=r.offset)


def _predict_se(model: DPLR, data, type: str):
    """``predict(..., se_fit=True)``: fit and standard error of every input row."""
    import pandas as pd

    from .inference import se_linear

    if type == "class":
        raise ValueError("se_fit=True needs type='link' or type='response' (a class has no "
                         "standard error)")
    if data.__class__.__module__.split(".")[0] == "dask":    # lazy, partition by partition
        if not hasattr(data, "map_partitions"):
            raise TypeError(f"predict on Dask data needs a Dask DataFrame, got "
                            f"{data.__class__.__name__}")
        meta = pd.DataFrame({"fit": pd.Series([], dtype=float),
                             "se_fit": pd.Series([], dtype=float)})
        return data.map_partitions(_predict_se_part, model, type, meta=meta)
    r = model.spec.rows(data, response=False)
    fit = np.full(r.complete.shape[0], np.nan)
    se = np.full(r.complete.shape[0], np.nan)
    if r.X.shape[0]:
        f, e = se_linear(model, np.asarray(r.X, dtype=np.float64))
        fit[r.complete], se[r.complete] = f if r.offset is None else f + r.offset, e
    if type != "link":
        fit = probabilities(fit, out=fit)
        se = fit * (1.0 - fit) * se
    index = data.index if hasattr(data, "index") and hasattr(data, "columns") else None
    return pd.DataFrame({"fit": fit, "se_fit": se}, index=index)


def _predict_se_part(part, model: DPLR, type: str):
    return _predict_se(model, part, type)


def summary(model: DPLR, odds_ratios: bool = False, level: float = 0.95):
    """R's ``summary(model)``: an object whose ``print`` mirrors PrivateLR's layout.

    When the model carries an inference release (``dplr(..., inference=True)``; every fit at
    ``eps=0``), glm's coefficient table follows (:func:`privatelr.coef_table`: bias-corrected
    estimates, standard errors, z, p, and the ``level`` interval); ``odds_ratios=True`` reports
    odds ratios with their intervals instead. When inference is not available or not reliable
    a note says why.

    Examples
    --------
    >>> from privatelr import dplr, summary
    >>> from privatelr.datasets import load_iris
    >>> text = str(summary(dplr("I(Species == 'setosa') ~ .", load_iris(), eps=0)))
    >>> text.splitlines()[0]
    ' NOT PRIVATE: a non-private fit (eps = 0); no privacy guarantee.'
    >>> [line.strip() for line in text.splitlines()[4:6]]
    ['Privacy level: 0', 'Regularization parameter: 0.001']
    """
    from .report.text import summarize

    if getattr(model, "multiclass", None) is not None:
        return model.summary()                        # a multiclass dplr model
    if not isinstance(model, DPLR):
        raise TypeError(f"model must be a DPLR (returned by dplr()), got "
                        f"{model.__class__.__name__}")
    return summarize(model, odds_ratios=odds_ratios, level=level)


# ---------------------------------------------------------------------------------------------
# WALR
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class WALRResult(_Inference):
    """A WALR model and how it was obtained.

    WALR protects the labels only: the trainer holds the features and weights, so everything
    here (coefficients, solver report) is a function of the released noisy dot product and the
    trainer's own data — post-processing of the label-private release.

    Attributes
    ----------
    coef : (k,) ndarray
        Coefficients θ (NaN when ``status == "unbounded"``: there is no minimiser).
    columns : tuple of str
        Coefficient names (the formula's or the DataFrame's columns, else ``x0, x1, …``).
    status : {"ok", "unbounded", "nonconvergence"}
    converged : bool
    message : str
    solver : {"newton", "hybrid"}
    iterations : int
        Newton iterations, or minibatch steps of the hybrid solver.
    epochs : int
        Hybrid epochs (0 for Newton).
    passes : int
        Full passes over ``X`` (approximate for the hybrid solver: one per epoch end).
    value : float
        The label-blind objective at ``coef`` (NaN when unbounded).
    grad_norm : float
        Infinity norm of its full gradient.
    lambda_ : float
    n, k : int
    eps, delta, sigma, mechanism
        The guarantee of the release the model was trained from (None for a plain array).
    lr : float or None
        Hybrid step multiplier; ``batch_size`` its final minibatch size.
    direction : ndarray or None
        With ``status == "unbounded"``, a unit vector ``u`` along which the objective provably
        decreases without bound.
    model_spec : privatelr.design.DesignSpec or None
        Rebuilds the design for new data when the model came from :func:`privatelr.walr`.
    inference : privatelr.inference.InferenceRelease or None
        The trainer's label-free information matrix at ``coef`` (no privacy cost), for
        :func:`privatelr.vcov` and :func:`privatelr.confint`.
    """

    coef: np.ndarray
    columns: tuple
    status: str
    converged: bool
    message: str
    solver: str
    iterations: int
    epochs: int
    passes: int
    value: float
    grad_norm: float
    lambda_: float
    n: int
    k: int
    eps: float | None = None
    delta: float | None = None
    sigma: float | None = None
    mechanism: str | None = None
    lr: float | None = None
    batch_size: int | None = None
    direction: np.ndarray | None = None
    model_spec: Any = field(default=None, repr=False)
    inference: Any = field(default=None, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "coef", _frozen_array(self.coef))
        object.__setattr__(self, "columns", tuple(self.columns))

    @property
    def coefficients(self):
        """Coefficients as a :class:`pandas.Series` indexed by ``columns``."""
        import pandas as pd

        return pd.Series(self.coef, index=list(self.columns), name="coef")

    def _design(self, X) -> tuple[np.ndarray, np.ndarray | None]:
        """(design, complete-row mask or None); a DataFrame goes through the formula's spec."""
        from ._validation import as_float_matrix

        if self.model_spec is not None and hasattr(X, "columns") and not isinstance(X, np.ndarray):
            if list(map(str, X.columns)) == list(self.columns):  # already a design
                return as_float_matrix("X", X), None
            Xd, complete = self.model_spec.transform(X, what="X")
            return as_float_matrix("X", Xd), np.asarray(complete, dtype=bool)
        X = as_float_matrix("X", X)
        if X.shape[1] != self.k:
            raise ValueError(f"X has {X.shape[1]} columns but the model has {self.k} coefficients")
        return X, None

    def decision_function(self, X) -> np.ndarray:
        """Linear predictor :math:`X\\theta`.

        A DataFrame is passed through the formula when the model came from ``walr``; rows
        with a missing value then get NaN.
        """
        if self.status == "unbounded":
            raise ValueError("this WALR fit has no minimiser (status 'unbounded'); refit with "
                             "lambda_ > 0")
        Xd, complete = self._design(X)
        return outputs(Xd, np.ones(Xd.shape[0], bool) if complete is None else complete,
                       self.coef, 0.5, (0, 1), "link")

    def predict_proba(self, X) -> np.ndarray:
        """Predicted probabilities :math:`\\sigma(X\\theta)` of the positive label."""
        return probabilities(self.decision_function(X))

    def predict(self, X, threshold: float = 0.5) -> np.ndarray:
        """Predicted 0/1 labels: 1 where the probability exceeds ``threshold`` (NaN rows stay NaN)."""
        from ._validation import check_real

        threshold = check_real("threshold", threshold, low=0.0, high=1.0)
        p = self.predict_proba(X)
        if np.isnan(p).any():
            return np.where(np.isnan(p), np.nan, (p > threshold).astype(float))
        return (p > threshold).astype(int)

    def summary(self) -> str:
        """A plain-text summary: the release's guarantee, the solver and the coefficients."""
        from .report.text import walr_text

        return walr_text(self)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:  # Jupyter: summary table, privacy fields highlighted
        from .report.html import walr_html

        return walr_html(self)
