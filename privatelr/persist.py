r"""Saved ``dplr`` models: a documented, versioned, checksummed JSON file (no pickle, no code).

``model.to_json(path)`` writes, :func:`load_model` reads back a model whose ``predict`` returns
bit for bit what the original returned. The file is an :mod:`privatelr.envelope` of kind
``privatelr.model``, format version 2, whose body is the **release** of the model::

    {
      "class": "DPLR",
      "formula": "am ~ mpg + factor(cyl)",          # R's form, '.' expanded
      "guarantee": "holds",                          # or why it does not ("void: ...", "none: ...")
      "coefficients": {"names": [...], "values": [...]},
      "calibration": {"method", "eps", "eps_eff", "penalty", "lambda_", "lambda_requested",
                      "noise_scale", "status", "n", "d", "data_norm", "weights_bound",
                      "curvature"},                  # public: recomputed and compared at load
      "threshold": {"method": "fixed", "p_tr": 0.5},
      "status": "ok", "convergence": 0, "call": "dplr(...)", "compat": null,
      "data_norm": 1.0, "n_dropped": 0,
      "tuning": null,                                # dplr_tune's record, when tuned (a
                                                     # "runs" field that earlier versions wrote
                                                     # is dropped at load: see TuningRecord)
      "inference": {...},                            # optional: the released information matrix
      "glm": {...},                                  # non-private fits: glm's unpenalised fit
      "design": {...},                               # DesignSpec.to_dict(): declarations, levels,
                                                     # response coding, columns, the public map
      "diagnostics (not private)": {...}             # only when the caller asked for them
    }

**Safety.** A model file holds data, never code. The design's terms are R text, parsed again with
the formula parser and interpreted with the whitelist of :mod:`privatelr.design`; loading
re-derives the term structure and re-types every term (:meth:`DesignSpec.from_dict`), recomputes
the calibration from its public inputs and compares every field, and checks every other field's
type, range and consistency. A file that loads holds nothing the fitting path would not make.

**Numbers.** Every stored number is checked against what a fit can produce, from public facts
only, so a file edited and re-checksummed cannot load into a model that predicts NaN or
nonsense (``ValueError`` naming the field):

* the calibration's inputs are in range (``eps >= 0``, ``lambda_ > 0`` in a private fit,
  ``data_norm``, ``weights_bound`` > 0 and finite, ``delta`` in [0, 1), the logistic loss's
  curvature 1/4) and its outputs are recomputed from them;
* the public map's numbers (divisors, scaling, projection, clipping radius) are finite and
  positive where they divide (:meth:`DesignSpec.from_dict`), the clipping radius is the model's
  ``data_norm`` (what the fit clipped to), and the map is far from overflow: it takes a raw
  covariate row of norm ``r`` to one of norm at most ``g r + o`` (``g`` the product of the
  stages' gains — the largest ``1/divisor``, the largest ``scale_factor/scale``, the
  projection's Frobenius norm — and ``o`` the centring's shift through the later stages),
  every intermediate quotient (``center/scale``, ``1/scale``) included, and :data:`MAP_LIMIT`
  = 1e50 bounds each, so raw rows up to 1e200 map to finite rows;
* the coefficients are finite and far from overflow: :data:`ETA_LIMIT` = 1e100 bounds
  :math:`B\|\beta\|`, so the linear predictor of a row of norm up to ``B`` (or up to 1e100
  times it) is :math:`|x^\top\beta| \le \|x\|\,\|\beta\| \le 10^{100}` (``10^{200}``);
  partial sums of :math:`\sum_j x_j\beta_j` are bounded by :math:`\sum_j |x_j\beta_j| \le
  \|x\|\|\beta\|` too, an offset adds a finite number, and what squares these numbers
  (:math:`\|\beta\|^2`, :math:`x^\top V x` for standard errors) stays finite;
* a private fit whose guarantee holds has, besides, coefficients no larger than the release
  can make: with every design row of norm at most ``B``, weights at most ``A`` and
  :math:`|\ell'| \le 1`, the data term's gradient has norm at most ``AB``, so the minimiser of
  :math:`J + b^\top w/n` (λ-strongly convex) has :math:`\|w^*\| \le (AB + \|b\|/n)/\lambda`
  (objective and Gaussian perturbation), and output perturbation releases
  :math:`\|w^* + b\| \le AB/\lambda + \|b\|`. The noise norm is below
  :math:`t = (d + 12\sqrt d + 80)\,s` for :math:`\|b\| \sim \mathrm{Gamma}(d, s)` and below
  :math:`t = \sigma\sqrt{d + 2\sqrt{100 d} + 200}` for :math:`b \sim N(0, \sigma^2 I_d)`,
  each except with probability below :math:`e^{-90}` (a Gamma tail; Laurent & Massart's
  :math:`\chi^2` bound at :math:`x = 100`): :func:`coefficient_bound`. (AMP's iterate is
  only certified near the minimiser, so AMP models get the overflow check alone.)

**Privacy.** The file holds the release: the coefficients, the public calibration and
declarations. The diagnostics (training C-index, solver report, counts of rows outside the
bound) are statistics of the raw rows and are written only when asked for
(``model.to_json(path, diagnostics=True)``), under a key that says they are not private.

Examples
--------
>>> import tempfile, os
>>> from privatelr import dplr, load_model
>>> from privatelr.datasets import load_mtcars
>>> cars = load_mtcars()
>>> m = dplr("am ~ mpg + factor(cyl)", cars, eps=0)
>>> path = os.path.join(tempfile.mkdtemp(), "model.json")
>>> m.to_json(path)
>>> m2 = load_model(path)
>>> bool((m2.predict(cars) == m.predict(cars)).all()), m2.diagnostics is None
(True, True)
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

from . import envelope
from ._validation import TINY
from .calibration import Calibration, calibrate, norm_bound
from .design import DesignSpec
from .inference import InferenceRelease
from .losses import LogisticLoss
from .results import DIAGNOSTICS_KEY, DPLR, MODEL_FORMAT, MODEL_VERSION, Diagnostics, \
    TuningRecord, guarantee_text

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "model_to_dict", "model_from_dict", "save_model",
           "load_model", "dumps", "loads", "coefficient_bound", "ETA_LIMIT", "MAP_LIMIT"]

FORMAT_NAME = MODEL_FORMAT
FORMAT_VERSION = MODEL_VERSION
_DIAG_KEY = DIAGNOSTICS_KEY
_OLDER = ("its terms are stored as code, which this privatelr no longer runs: refit the model "
          "and save it again")


def model_to_dict(model: DPLR) -> dict:
    """The body of a model file (layout in the module docstring; :meth:`DPLR.to_dict`).

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> d = model_to_dict(dplr("I(Species == 'setosa') ~ .", load_iris(), eps=0))
    >>> d["class"], d["coefficients"]["names"][0], "diagnostics (not private)" in d
    ('DPLR', '(Intercept)', False)
    """
    if not isinstance(model, DPLR):
        raise TypeError(f"model must be a DPLR (returned by dplr()), got {type(model).__name__}")
    return model.to_dict()


def dumps(model: DPLR) -> str:
    """The model file's text (see :func:`save_model`)."""
    model_to_dict(model)                       # the type check
    return model.to_json()


def save_model(model: DPLR, path) -> None:
    """Write ``model`` to ``path`` (what ``model.to_json(path)`` does), atomically: an interrupted
    save never leaves a truncated file and never touches another file."""
    model_to_dict(model)
    model.to_json(path)


class _Bad(ValueError):
    pass


#: The largest count a stored integer may hold: 2^53, the last integer a double holds exactly
#: (``n`` enters the arithmetic as a float).
_COUNT_MAX = 2 ** 53


def _int(v, what: str, low: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= _COUNT_MAX:
        raise _Bad(f"{what} must be an integer in [{low}, 2^53], got {str(v)[:40]!r}")
    return v


def _real(v, what: str, *, finite: bool = True, positive: bool = False,
          nan: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Bad(f"{what} must be a number, got {str(v)[:40]!r}")
    v = float(v)
    if math.isnan(v):
        if nan:
            return v
        raise _Bad(f"{what} has a bad value {v!r}")
    if (finite and not math.isfinite(v)) or (positive and not v > 0):
        raise _Bad(f"{what} has a bad value {v!r}")
    return v


def _str(v, what: str, limit: int = 100_000) -> str:
    if not isinstance(v, str) or len(v) > limit:
        raise _Bad(f"{what} must be a string")
    return v


def _fields(d, what: str, required: set, optional: set | frozenset = frozenset()) -> dict:
    if not isinstance(d, dict):
        raise _Bad(f"{what} must be an object")
    missing = required - set(d)
    if missing:
        raise _Bad(f"{what}: missing field(s) {sorted(missing)}")
    unknown = set(d) - required - optional
    if unknown:
        raise _Bad(f"{what}: unknown field(s) {sorted(unknown)}")
    return d


_CAL_NEW = {"delta", "amp_gamma", "output_scale", "classes"}   # optional: older version-2 files
_CAL = {f.name for f in dataclasses.fields(Calibration)} - _CAL_NEW
_BODY = {"class", "formula", "guarantee", "coefficients", "calibration", "threshold", "status",
         "convergence", "call", "compat", "data_norm", "n_dropped", "tuning", "design"}


#: The largest ``B * ||beta||`` a loaded model may have (module docstring, *Numbers*).
ETA_LIMIT = 1e100


def _norm(values: np.ndarray) -> float:
    """The L2 norm without overflow (the values are finite)."""
    big = float(np.max(np.abs(values))) if values.size else 0.0
    return big * float(np.linalg.norm(values / big)) if big > 0 else 0.0


def coefficient_bound(cal: Calibration) -> float:
    r"""The largest coefficient norm a private fit calibrated by ``cal`` releases, except with
    probability below :math:`e^{-90}` (module docstring, *Numbers*); ``inf`` where no such
    bound is derived (non-private fits, AMP).

    Examples
    --------
    >>> cal = calibrate(100, 3, eps=1.0, lambda_=0.1)
    >>> round(coefficient_bound(cal), 1)     # (1 + (3 + 12 sqrt 3 + 80) s / 100) / 0.1
    31.8
    """
    d, s = cal.d, cal.noise_scale
    if cal.method in ("objective", "output"):
        t = (d + 12.0 * math.sqrt(d) + 80.0) * s
    elif cal.method == "gaussian":
        t = s * math.sqrt(d + 2.0 * math.sqrt(100.0 * d) + 200.0)
    else:
        return math.inf
    grad = cal.weights_bound * cal.data_norm
    if cal.method == "output":
        return grad / cal.lambda_ + t
    return (grad + t / cal.n) / cal.lambda_


def _check_coefficients(values: np.ndarray, cal: Calibration, guarantee: bool) -> None:
    if not np.isfinite(values).all():
        raise _Bad("coefficients: values must be finite")
    size = _norm(values)
    if size * cal.data_norm > ETA_LIMIT:
        raise _Bad(f"coefficients: norm {size:.3g} times the norm bound {cal.data_norm:.3g} "
                   f"exceeds {ETA_LIMIT:g}: the linear predictor of a row inside the bound "
                   "would overflow")
    if guarantee:
        limit = coefficient_bound(cal)
        if size > limit:
            raise _Bad(f"coefficients: norm {size:.3g} is larger than a {cal.method} "
                       f"perturbation fit with this calibration releases ({limit:.3g})")


#: The largest gain, shift or intermediate quotient of a loaded model's public map
#: (module docstring, *Numbers*).
MAP_LIMIT = 1e50


def _check_map(pre, data_norm: float) -> None:
    """The public map of a loaded model: clipping to ``data_norm``, gains and shifts far from
    overflow (module docstring, *Numbers*; finiteness and signs are the design's checks)."""
    if pre is None:
        return
    if pre.clip is not None and pre.clip != data_norm:
        raise _Bad(f"design.preprocess.clip = {pre.clip!r} is not the model's data_norm "
                   f"({data_norm!r}), the bound its rows were clipped to")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # inf: refused below
        worst = _map_gains(pre)
    if not max(worst) <= MAP_LIMIT:
        raise _Bad(f"design.preprocess: the public map's gains and shifts reach "
                   f"{max(worst):.3g} > {MAP_LIMIT:g}: the rows it makes would overflow")


def _map_gains(pre) -> list:
    """The public map's gains, shift and intermediate quotients (:func:`_check_map`)."""
    gain, shift, worst = 1.0, 0.0, []
    if pre.divisors is not None:
        gain *= float(np.max(1.0 / np.asarray(pre.divisors)))
    if pre.scale_factor is not None:
        center, scale = np.abs(np.asarray(pre.center)), np.asarray(pre.scale)
        worst += [float(np.max(1.0 / scale)), float(np.max(center / scale)),
                  float(pre.scale_factor)]
        gain *= float(np.max(pre.scale_factor / scale))
        shift = float(np.max(center / scale * pre.scale_factor))
    if pre.projection is not None:
        size = _norm(np.asarray(pre.projection, dtype=np.float64).ravel())
        gain, shift = gain * size, shift * size
    return worst + [gain, shift]


def _calibration(d: dict) -> Calibration:
    """The stored calibration, recomputed from its public inputs and compared field by field."""
    d = _fields(d, "calibration", _CAL, _CAL_NEW)
    n, dim = _int(d["n"], "calibration.n", 1), _int(d["d"], "calibration.d", 1)
    eps = _real(d["eps"], "calibration.eps", finite=False)
    if not eps >= 0:
        raise _Bad("calibration.eps must be >= 0")
    method = d["method"]
    if method not in ("objective", "output", "gaussian", "amp", "nonprivate"):
        raise _Bad(f"calibration.method {method!r} is unknown")
    if d["curvature"] != LogisticLoss.curvature:
        raise _Bad(f"calibration.curvature must be the logistic loss's "
                   f"{LogisticLoss.curvature}, got {str(d['curvature'])[:40]}")
    if (method == "nonprivate") != (eps == 0 or math.isinf(eps)):
        raise _Bad("calibration.method does not match eps")
    try:
        again = calibrate(n, dim, eps=eps,
                          lambda_=_real(d["lambda_requested"], "calibration.lambda_requested",
                                        positive=method != "nonprivate"),   # 0: glm's MLE
                          method="objective" if method == "nonprivate" else method,
                          delta=_real(d.get("delta", 0.0), "calibration.delta"),
                          amp_gamma=(_real(d["amp_gamma"], "calibration.amp_gamma",
                                           positive=True) if method == "amp" else None),
                          curvature=_real(d["curvature"], "calibration.curvature", positive=True),
                          data_norm=_real(d["data_norm"], "calibration.data_norm", positive=True),
                          weights_bound=_real(d["weights_bound"], "calibration.weights_bound",
                                              positive=True))
    except (TypeError, ValueError) as exc:
        raise _Bad(f"calibration: {exc}") from None
    stored = dict(d)
    for key in ("eps", "eps_eff", "penalty", "lambda_", "lambda_requested", "noise_scale",
                "data_norm", "weights_bound", "curvature"):
        stored[key] = _real(stored[key], f"calibration.{key}", finite=key != "eps")
    for key in _CAL_NEW:
        stored[key] = _real(stored.get(key, 0.0), f"calibration.{key}")
    if dataclasses.asdict(again) != stored:
        if method == "amp":
            raise _Bad("calibration: the stored values are not what its inputs give (an AMP "
                       "model saved before privatelr charged its certificate's failure "
                       "probability in delta has another noise scale: refit it)")
        raise _Bad("calibration: the stored values are not what its inputs give")
    return again


def _diagnostics(d) -> Diagnostics:
    names = {f.name for f in dataclasses.fields(Diagnostics)} - {"saved"}
    d = _fields(d, "diagnostics", names)
    counts = d["counts"]
    if not isinstance(counts, dict) or len(counts) > 10 or not all(
            isinstance(k, str) and (v is None or _int(v, "counts") >= 0) for k, v in counts.items()):
        raise _Bad("diagnostics.counts must map names to counts")
    return Diagnostics(c_index=_real(d["c_index"], "c_index", finite=False, nan=True),
                       value=_real(d["value"], "value", finite=False, nan=True), counts=counts,
                       message=_str(d["message"], "diagnostics.message", 10_000),
                       iterations=_int(d["iterations"], "iterations"),
                       passes=_int(d["passes"], "passes"),
                       grad_norm=_real(d["grad_norm"], "grad_norm", finite=False, nan=True),
                       n_exceeding=_int(d["n_exceeding"], "n_exceeding"),
                       n_clipped=_int(d["n_clipped"], "n_clipped"), saved=True)


def _tuning(d) -> TuningRecord | None:
    if d is None:
        return None
    # "runs" (random stopping's number of runs) was written by earlier versions; it is outside
    # the selection's guarantee, so it is read past and dropped, never kept or written again
    d = _fields(d, "tuning", {"candidates", "chosen", "eps", "group_sizes"},
                {"selection", "runs"})
    selection = d.get("selection", "split")
    if selection not in ("split", "random_stopping"):
        raise _Bad(f"tuning.selection {selection!r} is unknown")
    cands = d["candidates"]
    if not isinstance(cands, list) or not cands or len(cands) > 10_000:
        raise _Bad("tuning.candidates must be a non-empty list")
    cands = tuple(_real(c, "tuning.candidates", positive=True) for c in cands)
    chosen = _int(d["chosen"], "tuning.chosen")
    if chosen >= len(cands):
        raise _Bad("tuning.chosen is not one of the candidates")
    sizes = d["group_sizes"]
    groups = len(cands) + 1 if selection == "split" else 1
    if not isinstance(sizes, list) or len(sizes) != groups:
        raise _Bad("tuning.group_sizes must give every group's size")
    return TuningRecord(candidates=cands, chosen=chosen,
                        eps=_real(d["eps"], "tuning.eps", finite=False),
                        group_sizes=tuple(_int(s, "tuning.group_sizes") for s in sizes),
                        selection=selection)


def _inference(body: dict, d: int):
    if "inference" not in body:
        return None
    try:
        return InferenceRelease.from_dict(body["inference"], d)
    except (TypeError, ValueError) as exc:
        raise _Bad(str(exc)) from None


def _glm(body: dict, names: list, private: bool):
    """glm's numbers of a non-private model (:class:`privatelr.glm.GLMSummary`), or None."""
    if "glm" not in body:
        return None
    if private:
        raise _Bad("glm: a private model carries no glm fit (a statistic of the raw rows)")
    from .glm import GLMSummary

    try:
        return GLMSummary.from_dict(body["glm"], names)
    except (TypeError, ValueError) as exc:
        raise _Bad(str(exc)) from None


def model_from_dict(body: dict) -> DPLR:
    """Rebuild a :class:`~privatelr.results.DPLR` from a model file's body, validating every
    field (``ValueError`` "corrupted privatelr.model file: ..." otherwise)."""
    try:
        body = _fields(body, "model", _BODY, {_DIAG_KEY, "inference", "glm"})
        if body["class"] != "DPLR":
            raise _Bad(f"unknown model class {body['class']!r}")
        try:
            spec = DesignSpec.from_dict(body["design"])
        except (TypeError, ValueError, KeyError, RecursionError) as exc:
            raise _Bad(str(exc)) from None
        coef = _fields(body["coefficients"], "coefficients", {"names", "values"})
        names, values = coef["names"], coef["values"]
        if not isinstance(values, list) or not all(
                not isinstance(v, bool) and isinstance(v, (int, float)) for v in values):
            raise _Bad("coefficients: values must be a list of numbers")
        values = np.array(values, dtype=np.float64)
        if not isinstance(names, list) or len(names) != len(values):
            raise _Bad("coefficients: names and values must have the same length")
        if names != list(spec.columns):
            raise _Bad(f"coefficients: names {names[:5]}... differ from the design's columns")
        if not np.isfinite(values).all():
            raise _Bad("coefficients: values must be finite")
        cal = _calibration(body["calibration"])
        if cal.d != len(values):
            raise _Bad(f"calibration: d = {cal.d} but there are {len(values)} coefficients")
        compat = body["compat"]
        if compat not in (None, "PrivateLR"):
            raise _Bad(f"compat {compat!r} is unknown")
        data_norm = _real(body["data_norm"], "data_norm", positive=True)
        if not TINY <= data_norm <= ETA_LIMIT:
            raise _Bad(f"data_norm = {data_norm!r} is outside [{TINY:.3g}, {ETA_LIMIT:g}]")
        want_B = 1.0 if compat else norm_bound(data_norm, spec.intercept)
        if cal.data_norm != want_B:
            raise _Bad("calibration: the norm bound does not follow from data_norm")
        _check_map(spec.preprocess, data_norm)
        thr = _fields(body["threshold"], "threshold", {"method", "p_tr"})
        if thr["method"] not in ("fixed", "youden", "topleft"):
            raise _Bad(f"threshold: unknown method {thr['method']!r}")
        p_tr = _real(thr["p_tr"], "threshold.p_tr")
        if not 0.0 <= p_tr <= 1.0 or (thr["method"] == "fixed" and p_tr != 0.5):
            raise _Bad("threshold: p_tr must lie in [0, 1] (0.5 when fixed)")
        status = _str(body["status"], "status", 200)
        if not status.startswith((cal.status, "unique.outcome")):   # R's spelling, or the manual's
            raise _Bad("status does not match the calibration")
        if _str(body["formula"], "formula") != spec.formula_r:
            raise _Bad("the formula differs from the design's")
        model = DPLR(coef=values, spec=spec, calibration=cal, data_norm=data_norm, p_tr=p_tr,
                     threshold=thr["method"], compat=compat, status=status,
                     convergence=_int(body["convergence"], "convergence"),
                     call=_str(body["call"], "call"), n_dropped=_int(body["n_dropped"],
                                                                        "n_dropped"),
                     tuning=_tuning(body["tuning"]), inference=_inference(body, cal.d),
                     glm=_glm(body, list(spec.columns), cal.method != "nonprivate"),
                     diagnostics=_diagnostics(body[_DIAG_KEY]) if _DIAG_KEY in body else None)
        if body["guarantee"] != guarantee_text(model):
            raise _Bad("the guarantee text does not match the model")
        _check_coefficients(values, cal, model.guarantee_holds)
    except _Bad as exc:
        raise ValueError(f"corrupted privatelr model file: {exc}") from None
    except (OverflowError, RecursionError, TypeError) as exc:   # e.g. 10**400 where a float goes
        raise ValueError(f"corrupted privatelr model file: {type(exc).__name__}: "
                         f"{str(exc)[:100]}") from None
    return model


def loads(text: str, *, verify: bool = True) -> DPLR:
    """Rebuild a model from the text of a model file (see :func:`load_model`)."""
    body = envelope.loads(text, FORMAT_NAME, FORMAT_VERSION, verify=verify, older=_OLDER,
                          name="privatelr model")
    return model_from_dict(body)


def load_model(path, *, verify: bool = True) -> DPLR:
    """Load a model saved with ``model.to_json(path)``.

    Parameters
    ----------
    path : str or os.PathLike
    verify : bool
        Check the stored sha256 checksum (default). ``False`` loads a file edited by hand (the
        structure is still validated in full).

    Returns
    -------
    DPLR
        The release (without diagnostics unless the file holds them).

    Raises
    ------
    ValueError
        Not a model file, corrupted content, checksum mismatch, or another format version.

    Examples
    --------
    >>> import tempfile, os
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> iris = load_iris()
    >>> m = dplr("I(Species == 'setosa') ~ .", iris, eps=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "iris.json")
    >>> m.to_json(path)
    >>> load_model(path).predict(iris.head(1), type="class").tolist()
    [True]
    """
    text = envelope.read_text(path, FORMAT_NAME)
    try:
        return loads(text, verify=verify)
    except ValueError as exc:
        raise ValueError(f"{os.fspath(path)}: {exc}") from None
