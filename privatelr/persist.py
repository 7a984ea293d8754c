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
      "tuning": null,                                # dplr_tune's record, when tuned
      "inference": {...},                            # optional: the released information matrix
      "design": {...},                               # DesignSpec.to_dict(): declarations, levels,
                                                     # response coding, columns, the public map
      "diagnostics (not private)": {...}             # only when the caller asked for them
    }

**Safety.** A model file holds data, never code. The design's terms are R text, parsed again with
the formula parser and interpreted with the whitelist of :mod:`privatelr.design`; loading
re-derives the term structure and re-types every term (:meth:`DesignSpec.from_dict`), recomputes
the calibration from its public inputs and compares every field, and checks every other field's
type, range and consistency. A file that loads holds nothing the fitting path would not make.

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
from .calibration import Calibration, calibrate, norm_bound
from .design import DesignSpec
from .inference import InferenceRelease
from .results import DIAGNOSTICS_KEY, DPLR, MODEL_FORMAT, MODEL_VERSION, Diagnostics, \
    TuningRecord, guarantee_text

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "model_to_dict", "model_from_dict", "save_model",
           "load_model", "dumps", "loads"]

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


def _int(v, what: str, low: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise _Bad(f"{what} must be an integer >= {low}, got {str(v)[:40]!r}")
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
                        selection=selection, runs=_int(d.get("runs", 0), "tuning.runs"))


def _inference(body: dict, d: int):
    if "inference" not in body:
        return None
    try:
        return InferenceRelease.from_dict(body["inference"], d)
    except (TypeError, ValueError) as exc:
        raise _Bad(str(exc)) from None


def model_from_dict(body: dict) -> DPLR:
    """Rebuild a :class:`~privatelr.results.DPLR` from a model file's body, validating every
    field (``ValueError`` "corrupted privatelr.model file: ..." otherwise)."""
    try:
        body = _fields(body, "model", _BODY, {_DIAG_KEY, "inference"})
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
        want_B = 1.0 if compat else norm_bound(data_norm, spec.intercept)
        if cal.data_norm != want_B:
            raise _Bad("calibration: the norm bound does not follow from data_norm")
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
                     diagnostics=_diagnostics(body[_DIAG_KEY]) if _DIAG_KEY in body else None)
        if body["guarantee"] != guarantee_text(model):
            raise _Bad("the guarantee text does not match the model")
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
