r"""Saved models: a documented, versioned JSON file for :class:`~privatelr.DPLR` (no pickle).

``model.to_json(path)`` writes, :func:`load_model` reads back a model whose ``predict`` returns
bit for bit what the original returned (every float is written with Python's shortest
round-trip representation, so the coefficients, the stored scaling and the projection matrix are
reproduced exactly).

File layout (format version 2)
------------------------------
A JSON object (UTF-8, strict JSON: non-finite numbers are written as ``{"$float": "NaN"}``,
``{"$float": "Infinity"}`` or ``{"$float": "-Infinity"}``)::

    {
      "format": "privatelr.model",        # identifies the file type
      "format_version": 2,                 # this layout; readers refuse other versions
      "package_version": "0.1.0",          # privatelr that wrote the file (informative)
      "class": "DPLR",
      "formula": "am ~ mpg + factor(cyl)", # R's form, '.' expanded
      "coefficients": {"names": [...], "values": [...]},   # the private part
      "threshold": {"method": "fixed", "p_tr": 0.5},
      "status": "ok",
      "eps": 1.0,
      "lambda": 0.0325...,                 # the lambda used (after any adjustment)
      "method": "objective",
      "design": {...},                     # DesignSpec.to_dict(): atoms and their factor levels,
                                           # response coding and labels, column names, do_scale
                                           # centre/scale/factor, projection matrix ('projection',
                                           # p x q, already divided by sqrt(q)) and its clip bound
      "fit": {...},                        # the other DPLR fields: value, counts, convergence,
                                           # message, CIndex, eps_eff, penalty, n, d, did_rp,
                                           # rp_dim, scaled, call, norm_bound, data_norm, compat,
                                           # n_exceeding, n_clipped, n_dropped, scale_factor
      "sha256": "..."                      # of the canonical JSON of everything above
    }

Loading checks, in order: valid JSON, ``format``, ``format_version`` (a file from a newer
privatelr is refused with the version numbers in the message), the checksum (pass
``verify=False`` to load a hand-edited file), then every field's type and shape. Any failure is a
``ValueError`` that says what is wrong.

**Safety.** A model file holds data, never code. The design's terms are stored as R text
(e.g. ``log(x)``), which is parsed again with the formula parser and interpreted with the
formula interpreter's whitelist (:mod:`privatelr.design`) — nothing is evaluated as Python.
Loading re-derives the term structure, the atoms and the column names from the stored formula
and re-types every term: a file that loads holds nothing the fitting path would not have made
(:meth:`~privatelr.design.DesignSpec.from_dict`). Every other field is checked for type, range
and consistency (finite coefficients matching the design's columns, projection shape, ...).

**Privacy.** Only the coefficients are ε-differentially private. The file also holds what the
``DPLR`` object holds: the C-index, the objective value, a data-driven threshold and the
``do_scale`` centre/scale/factor, none of them private, and factor levels seen in the training
data. Share a model file only if these may be disclosed.

Examples
--------
>>> import tempfile, os, warnings
>>> from privatelr import dplr, load_model
>>> from privatelr.datasets import load_mtcars
>>> cars = load_mtcars()
>>> m = dplr("am ~ mpg + factor(cyl)", cars, eps=0)
>>> path = os.path.join(tempfile.mkdtemp(), "model.json")
>>> m.to_json(path)
>>> m2 = load_model(path)
>>> bool((m2.predict(cars) == m.predict(cars)).all())
True
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import fields
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "model_to_dict", "model_from_dict", "save_model",
           "load_model", "dumps", "loads"]

FORMAT_NAME = "privatelr.model"
FORMAT_VERSION = 2

# DPLR fields stored at the top level (under another key where noted); the rest go to "fit".
_TOP = {"formula": "formula", "status": "status", "eps": "eps", "lambda_": "lambda",
        "method": "method"}
_SPECIAL = {"coefficients", "spec", "rp_p", "p_tr", "threshold"}


# ---------------------------------------------------------------------------------------------
# strict JSON with non-finite floats
# ---------------------------------------------------------------------------------------------

def _encode(obj):
    if isinstance(obj, dict):
        return {str(k): _encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_encode(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _encode(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        if math.isnan(v):
            return {"$float": "NaN"}
        if math.isinf(v):
            return {"$float": "Infinity" if v > 0 else "-Infinity"}
        return v
    if obj is None or isinstance(obj, str):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} in a model file")


_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _decode_hook(d: dict):
    if len(d) == 1 and "$float" in d:
        v = d["$float"]
        if v not in _NONFINITE:
            raise ValueError(f"bad non-finite number marker {v!r}")
        return _NONFINITE[v]
    return d


def _canonical(payload: dict) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False,
                      ensure_ascii=True)


def _checksum(payload: dict) -> str:
    return hashlib.sha256(_canonical(payload).encode("ascii")).hexdigest()


# ---------------------------------------------------------------------------------------------
# DPLR <-> dict
# ---------------------------------------------------------------------------------------------

def model_to_dict(model) -> dict:
    """The JSON-safe dict of a :class:`~privatelr.DPLR` (layout in the module docstring).

    Examples
    --------
    >>> from privatelr import dplr
    >>> from privatelr.datasets import load_iris
    >>> d = model_to_dict(dplr("I(Species == 'setosa') ~ .", load_iris(), eps=0))
    >>> d["format"], d["format_version"], d["coefficients"]["names"][0]
    ('privatelr.model', 1, '(Intercept)')
    """
    from . import __version__
    from .dplr import DPLR

    if not isinstance(model, DPLR):
        raise TypeError(f"model must be a DPLR (returned by dplr()), got {type(model).__name__}")
    payload: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "package_version": __version__,
        "class": "DPLR",
    }
    for name, key in _TOP.items():
        payload[key] = getattr(model, name)
    payload["coefficients"] = {"names": [str(c) for c in model.coefficients.index],
                               "values": model.coefficients.to_numpy(dtype=np.float64)}
    payload["threshold"] = {"method": model.threshold, "p_tr": model.p_tr}
    payload["design"] = model.spec.to_dict()
    payload["fit"] = {f.name: getattr(model, f.name) for f in fields(model)
                      if f.name not in _TOP and f.name not in _SPECIAL}
    payload = _encode(payload)
    payload["sha256"] = _checksum(payload)
    return payload


def dumps(model, *, indent: int | None = 1) -> str:
    """The model file's text (see :func:`save_model`)."""
    return json.dumps(model_to_dict(model), indent=indent, allow_nan=False, ensure_ascii=True)


def save_model(model, path) -> None:
    """Write ``model`` to ``path`` as JSON (what ``model.to_json(path)`` does).

    The file is written with :func:`privatelr.envelope.atomic_write`: to a new temporary file
    with a unique name next to ``path``, synced and renamed onto ``path``, so an interrupted save
    never leaves a truncated model behind and never touches any other file.
    """
    from .envelope import atomic_write

    text = dumps(model)
    with atomic_write(path, "w", encoding="ascii") as fh:
        fh.write(text)
        fh.write("\n")


class _Bad(ValueError):
    pass


def _need(d: dict, key: str, types, where: str):
    if key not in d:
        raise _Bad(f"{where}: missing field {key!r}")
    v = d[key]
    if types is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Bad(f"{where}: field {key!r} must be a number, got {v!r}")
        return float(v)
    if types is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _Bad(f"{where}: field {key!r} must be an integer, got {v!r}")
        return v
    if not isinstance(v, types):
        raise _Bad(f"{where}: field {key!r} has the wrong type ({type(v).__name__})")
    return v


def _float_list(v, where: str) -> np.ndarray:
    if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                      for x in v):
        raise _Bad(f"{where} must be a list of numbers")
    return np.array(v, dtype=np.float64)


# ---- the fields of a DPLR ---------------------------------------------------------------------

def _nonneg_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _real(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite(v) -> bool:
    return _real(v) and math.isfinite(v)


#: Every DPLR field kept in a model file (besides coefficients, spec, threshold) -> its check.
_FIELD_CHECKS = {
    "value": lambda v: _real(v),
    "counts": lambda v: isinstance(v, dict) and len(v) <= 10 and all(
        isinstance(k, str) and (v[k] is None or _nonneg_int(v[k])) for k in v),
    "convergence": _nonneg_int,
    "message": lambda v: isinstance(v, str) and len(v) <= 10_000,
    "CIndex": _real,
    "eps": lambda v: _real(v) and v >= 0,
    "eps_eff": lambda v: _finite(v) and v >= 0,
    "penalty": lambda v: _finite(v) and v >= 0,
    "lambda_": lambda v: _finite(v) and v > 0,
    "n": lambda v: _nonneg_int(v) and v > 0,
    "d": lambda v: _nonneg_int(v) and v > 0,
    "did_rp": lambda v: isinstance(v, bool),
    "rp_dim": lambda v: v is None or (_nonneg_int(v) and v > 0),
    "scaled": lambda v: isinstance(v, bool),
    "status": lambda v: isinstance(v, str) and len(v) <= 200,
    "formula": lambda v: isinstance(v, str),
    "call": lambda v: isinstance(v, str) and len(v) <= 100_000,
    "method": lambda v: v in ("objective", "output", "nonprivate"),
    "norm_bound": lambda v: _finite(v) and v > 0,
    "data_norm": lambda v: _finite(v) and v > 0,
    "compat": lambda v: v in (None, "PrivateLR"),
    "n_exceeding": _nonneg_int,
    "n_clipped": _nonneg_int,
    "n_dropped": _nonneg_int,
    "scale_factor": lambda v: _finite(v) and v > 0,
}


def _check_fields(kwargs: dict) -> None:
    for name, ok in _FIELD_CHECKS.items():
        if name not in kwargs:
            raise _Bad(f"missing field {name!r}")
        try:
            good = bool(ok(kwargs[name]))
        except TypeError:
            good = False
        if not good:
            raise _Bad(f"field {name!r} has a bad value {str(kwargs[name])[:80]!r}")


def model_from_dict(payload: dict, *, verify: bool = True):
    """Rebuild a :class:`~privatelr.DPLR` from :func:`model_to_dict`'s output (validated)."""
    from .design import DesignSpec
    from .dplr import DPLR

    if not isinstance(payload, dict):
        raise ValueError("not a privatelr model file: the JSON is not an object")
    if payload.get("format") != FORMAT_NAME:
        raise ValueError(f"not a privatelr model file: 'format' is {payload.get('format')!r}, "
                         f"expected {FORMAT_NAME!r}")
    version = payload.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"corrupted privatelr model file: bad format_version {version!r}")
    if version < FORMAT_VERSION:
        raise ValueError(f"this model file has format version {version} (privatelr "
                         f"{payload.get('package_version', '?')}), whose terms are stored as "
                         "code, which this privatelr no longer runs: refit the model and save "
                         "it again")
    if version > FORMAT_VERSION:
        from . import __version__

        raise ValueError(f"this model file has format version {version} (written by privatelr "
                         f"{payload.get('package_version', '?')}); this privatelr ({__version__}) "
                         f"reads format versions up to {FORMAT_VERSION}: upgrade privatelr")
    if verify:
        stored = payload.get("sha256")
        body = {k: v for k, v in payload.items() if k != "sha256"}
        if stored is None:
            raise ValueError("corrupted privatelr model file: the sha256 checksum is missing "
                             "(load_model(path, verify=False) skips the check)")
        if _checksum(_encode_floats_back(body)) != stored:
            raise ValueError("corrupted privatelr model file: the sha256 checksum does not match "
                             "the content (the file was modified after it was saved; "
                             "load_model(path, verify=False) loads it anyway)")
    try:
        if payload.get("class") != "DPLR":
            raise _Bad(f"unknown model class {payload.get('class')!r}")
        coef = _need(payload, "coefficients", dict, "model")
        names = _need(coef, "names", list, "coefficients")
        values = _float_list(_need(coef, "values", list, "coefficients"), "coefficients.values")
        if len(names) != len(values) or not all(isinstance(n, str) for n in names):
            raise _Bad("coefficients: names and values must have the same length")
        if not np.isfinite(values).all():
            raise _Bad("coefficients: values must be finite")
        thr = _need(payload, "threshold", dict, "model")
        design = _need(payload, "design", dict, "model")
        try:
            spec = DesignSpec.from_dict(design)
        except (TypeError, ValueError, KeyError, RecursionError) as exc:
            raise _Bad(f"{exc}") from None
        if list(spec.columns) != names:
            raise _Bad(f"coefficients: names {names} differ from the design's columns "
                       f"{spec.columns}")
        fit = _need(payload, "fit", dict, "model")
        kwargs: dict[str, Any] = dict(fit)
        for name, key in _TOP.items():
            kwargs[name] = _need(payload, key, object, "model")
        kwargs["coefficients"] = pd.Series(values, index=names, name="coefficients")
        kwargs["spec"] = spec
        kwargs["threshold"] = _need(thr, "method", str, "threshold")
        if kwargs["threshold"] not in ("fixed", "youden", "topleft"):
            raise _Bad(f"threshold: unknown method {kwargs['threshold']!r}")
        kwargs["p_tr"] = _need(thr, "p_tr", float, "threshold")
        if not 0.0 <= kwargs["p_tr"] <= 1.0:
            raise _Bad("threshold: p_tr must lie in [0, 1]")
        pre = spec.preprocess
        kwargs["rp_p"] = (np.array(pre.projection, dtype=np.float64)
                          if pre is not None and pre.projection is not None else None)
        known = {f.name for f in fields(DPLR)}
        unknown = set(kwargs) - known
        if unknown:
            raise _Bad(f"fit: unknown field(s) {sorted(unknown)}")
        _check_fields(kwargs)
        for key in ("eps", "lambda_", "value", "CIndex", "eps_eff", "penalty", "norm_bound",
                    "data_norm", "scale_factor"):
            kwargs[key] = float(kwargs[key])
        if kwargs["d"] != len(values):
            raise _Bad(f"fit: d = {kwargs['d']} but there are {len(values)} coefficients")
        if kwargs["formula"] != spec.formula_r:
            raise _Bad("fit: the formula differs from the design's")
        if kwargs["did_rp"] != (kwargs["rp_p"] is not None) or \
                kwargs["rp_dim"] != (None if kwargs["rp_p"] is None else kwargs["rp_p"].shape[1]):
            raise _Bad("fit: did_rp/rp_dim disagree with the design's projection")
        model = DPLR(**kwargs)
    except _Bad as exc:
        raise ValueError(f"corrupted privatelr model file: {exc}") from None
    except TypeError as exc:  # a required DPLR field is missing
        raise ValueError(f"corrupted privatelr model file: {exc}") from None
    return model


def _encode_floats_back(body: dict) -> dict:
    # The checksum was computed over the encoded payload (non-finite floats as markers);
    # after json.loads with the decode hook they are floats again: encode them back.
    return _encode(body)


def loads(text: str, *, verify: bool = True):
    """Rebuild a model from the text of a model file (see :func:`load_model`)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    try:
        payload = json.loads(text, object_hook=_decode_hook)
    except (json.JSONDecodeError, ValueError) as exc:
        raise ValueError(f"corrupted privatelr model file: not valid JSON ({exc})") from None
    except RecursionError:
        raise ValueError("corrupted privatelr model file: the JSON is nested too deeply") from None
    return model_from_dict(payload, verify=verify)


def load_model(path, *, verify: bool = True):
    """Load a model saved with ``model.to_json(path)``.

    Parameters
    ----------
    path : str or os.PathLike
    verify : bool
        Check the stored sha256 checksum (default). ``False`` loads a file edited by hand (the
        structure is still validated).

    Returns
    -------
    DPLR

    Raises
    ------
    ValueError
        Not a model file, corrupted content, checksum mismatch, or a format version newer than
        this privatelr reads.

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
    try:
        with open(os.fspath(path), "rb") as fh:
            raw = fh.read()
    except IsADirectoryError:
        raise ValueError(f"{path} is a directory, not a model file") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: corrupted privatelr model file: not UTF-8 text") from None
    try:
        return loads(text, verify=verify)
    except ValueError as exc:
        raise ValueError(f"{os.fspath(path)}: {exc}") from None
