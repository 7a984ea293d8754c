r"""WALR: label-private logistic regression from one noisy weighted dot product.

Weighted Aggregate Logistic Regression (Yuan & Lazarsfeld, Meta; seed document "Weighted
Aggregate Logistic Regression") splits training between two parties:

* the **private measurement system** holds the labels :math:`y_i \in \{0, 1\}` and releases, once,

  .. math::
      \tilde v = \frac{1}{N}\sum_{i=1}^N w_i\,y_i\,x_i + Z, \qquad Z \sim N(0, \sigma^2 I_k)

  (:func:`noisy_dot_product`, a :class:`NoisyDotProduct` record that can travel as JSON);
* the **trainer** (the API consumer) holds the features :math:`x_i \in [0, 1]^k` and the weights
  :math:`w_i`, never sees a label, and minimises the label-blind objective

  .. math::
      F(\theta) = \frac{1}{N}\sum_{i=1}^N w_i \log\big(1 + e^{\theta^\top x_i}\big)
                  - \theta^\top \tilde v + \frac{\lambda}{2}\|\theta\|^2

  (:func:`walr_fit`). With :math:`\tilde v` the exact dot product, ``F`` is the weighted
  logistic negative log-likelihood :math:`\frac1N\sum_i w_i[\log(1+e^{z_i}) - y_i z_i]` plus the
  ridge term, so its gradient :math:`\frac1N\sum_i w_i\sigma(\theta^\top x_i)x_i - \tilde v +
  \lambda\theta` is the seed's ``noisy-∇L`` (with weights and ridge).

**Privacy (label-DP).** Neighbouring data sets differ in one label (features, weights and ``N``
are public). Flipping :math:`y_i` changes the dot product by :math:`w_i x_i / N`, so its L2
sensitivity is

.. math::
    \Delta = \max_i \frac{w_i\|x_i\|_2}{N} \le \frac{A\sqrt{k}}{N},

with :math:`A` the public weight bound (``weights_bound``; 1 without weights) and
:math:`\|x_i\|_2 \le \sqrt k` because every coordinate lies in :math:`[0, 1]` (the seed's
:math:`s^2 \le k/N^2` with weights). The release is the Gaussian mechanism with this Δ:
``mechanism="classic"`` uses :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\varepsilon`
(Dwork & Roth 2014, Theorem 3.22; proved only for ε < 1), ``mechanism="analytic"`` (default) the
smallest σ of Balle & Wang (ICML 2018, Theorem 8), valid for every ε > 0 — see
:mod:`privatelr.mechanisms`. Everything the trainer computes is post-processing of
:math:`\tilde v` and public data, hence :math:`(\varepsilon, \delta)`-label-DP with the same
parameters (post-processing theorem, Dwork & Roth Proposition 2.1). Features and weights are **not**
protected: WALR assumes the trainer already holds them.

**Solvers.** ``"newton"`` (our addition) minimises ``F`` exactly with the package's Newton solver:
``F`` is the engine's ERM objective with every label :math:`y_i = -1` (logistic loss
:math:`\ell(-z) = \log(1 + e^z)`), weights :math:`w_i` and linear term :math:`-\tilde v`.
``"hybrid"`` is the seed's hybrid minibatch gradient descent: each step uses the minibatch mean of
:math:`w_j\sigma(\theta^\top x_j)x_j` and the full-data :math:`\tilde v`.

**Unboundedness (λ = 0).** Without the ridge, ``F`` is bounded below only if :math:`\tilde v` lies
in the zonotope :math:`\{\frac1N\sum_i w_i p_i x_i : p \in [0,1]^N\}` of values the
label-free gradient term can take; noise can push it outside. For any direction ``u``,
:math:`F(tu) \le A_w\log 2 - t\,c(u)` with
:math:`c(u) = u^\top\tilde v - \frac1N\sum_i w_i\max(0, u^\top x_i)` and :math:`A_w` the mean
weight, so :math:`c(u) > 0` *proves* :math:`F \to -\infty` along ``u``. We test the coordinate
directions :math:`\pm e_j` before training and the direction of the iterate whenever its norm
grows, and stop with status ``"unbounded"`` only on such a proof.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.linalg
from scipy.special import expit

from ._validation import is_sparse
from . import envelope
from ._validation import (FLOAT_MAX, as_float_matrix, check_bool, check_int, check_real,
                          chunk_rows)
from .accountant import require_budget
from .backends import as_rows, frame_rows, is_dask
from .calibration import label_sensitivity
from .inference.release import InferenceRelease
from .losses import LogisticLoss
from .mechanisms import check_random_state, gaussian_noise, gaussian_sigma, rdp_gaussian
from .objective import ERMObjective
from .results import WALRResult
from .solver import minimize

__all__ = ["NoisyDotProduct", "WALRResult", "noisy_dot_product", "walr_fit", "walr"]

_FORMAT = "privatelr.NoisyDotProduct"
_MECHANISMS = ("analytic", "classic", "none")
_SOLVERS = ("hybrid", "newton")
_CHUNK_BYTES = 8 * 2**20
_GROWTH_CHECK = 30.0  # first ||theta|| at which the unboundedness certificate is tried
_REL = 1e-9  # relative slack when checking a loaded record's sensitivity and sigma


# ------------------------------------------------------------------------------------------
# The release
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class NoisyDotProduct:
    r"""What the private measurement system hands over: one (ε, δ)-label-DP dot product.

    Attributes
    ----------
    value : (k,) ndarray
        :math:`\frac1N\sum_i w_i y_i x_i + N(0, \sigma^2 I)` (already divided by ``N``).
    n : int
        ``N``, the number of records.
    eps, delta : float
        The label-DP guarantee (``eps = inf``, ``mechanism = "none"``: exact, not private).
    sigma : float
        Noise standard deviation per coordinate.
    mechanism : {"analytic", "classic", "none"}
    sensitivity : float
        L2 label-sensitivity :math:`\Delta = A\sqrt{k}/N` used for σ.
    weights_bound : float
        The public weight bound ``A`` (1 without weights).
    columns : tuple of str or None
        Feature names (unique), when known.
    weighted : bool
        Whether the dot product was computed with observation weights. The trainer must use
        the same weights: :func:`walr_fit` refuses a weighted release without ``weights`` and
        an unweighted one with them. When not given, it is inferred from ``weights_bound``:
        a bound other than 1 only comes with weights (``noisy_dot_product`` records ``A = 1``
        without them), so ``weighted = weights_bound != 1``; pass ``weighted=True`` for a
        weighted release with ``weights_bound=1``.

    The constructor (and :meth:`from_json`) checks the record: ``sensitivity`` must be at least
    ``weights_bound * sqrt(k) / n``, ``sigma`` at least the mechanism's σ for it, every number
    finite, an unweighted record must have ``weights_bound = 1``, and every coordinate of
    ``value`` must lie in :math:`[-40\sigma, A + 40\sigma]` (the exact dot product lies in
    ``[0, A]``; Gaussian noise beyond 40σ has probability below :math:`10^{-340}`) and below
    ``1e100`` in magnitude — so a record whose numbers do not support its claimed guarantee,
    or could not have come from a release, is refused, and a record that is accepted can be
    trained on.

    Examples
    --------
    >>> X = np.array([[1.0, 0.2], [1.0, 0.9], [1.0, 0.4]])
    >>> rel = noisy_dot_product(X, [0, 1, 1], eps=1.0, delta=1e-5, random_state=0)
    >>> NoisyDotProduct.from_json(rel.to_json()) == rel
    True
    >>> rel.weighted
    False
    """

    value: np.ndarray
    n: int
    eps: float
    delta: float
    sigma: float
    mechanism: str
    sensitivity: float
    weights_bound: float = 1.0
    columns: tuple | None = None
    weighted: bool | None = None

    def __post_init__(self):
        raw = self.value
        if isinstance(raw, (str, bytes)):
            raise TypeError("value must be a vector of real numbers, got a string")
        try:
            value = np.array(raw, dtype=np.float64) if not isinstance(raw, np.ndarray) \
                else raw.astype(np.float64, copy=True)
        except (TypeError, ValueError, OverflowError):
            raise TypeError("value must be a vector of real numbers") from None
        if isinstance(raw, np.ndarray) and (raw.dtype == object or raw.dtype == np.bool_
                                            or not np.issubdtype(raw.dtype, np.number)
                                            or np.issubdtype(raw.dtype, np.complexfloating)):
            raise TypeError(f"value must be a vector of real numbers, got dtype {raw.dtype}")
        if value.ndim != 1 or value.size == 0:
            raise ValueError(f"value must be a non-empty 1-D vector, got shape {value.shape}")
        if not np.isfinite(value).all():
            raise ValueError("value contains NaN or infinite entries")
        value.setflags(write=False)
        k = value.size
        n = check_int("n", self.n, low=1)
        if n >= 2**63:
            raise ValueError(f"n must be below 2**63, got {n}")
        if not isinstance(self.mechanism, str) or self.mechanism not in _MECHANISMS:
            raise ValueError(f"mechanism must be one of {_MECHANISMS}, got {self.mechanism!r}")
        eps = check_real("eps", self.eps, low=0.0, low_open=True, allow_inf=True)
        delta = check_real("delta", self.delta, low=0.0, high=1.0, low_open=True, high_open=True)
        sigma = check_real("sigma", self.sigma, low=0.0)
        A = check_real("weights_bound", self.weights_bound, low=0.0, low_open=True)
        sens = check_real("sensitivity", self.sensitivity, low=0.0, low_open=True)
        weighted = self.weighted
        if weighted is None:
            weighted = A != 1.0
        weighted = check_bool("weighted", weighted)
        if not weighted and A != 1.0:
            raise ValueError(f"an unweighted release has weights_bound 1, got {A:g}: pass "
                             "weighted=True if the dot product was computed with weights")
        needed = A * math.sqrt(k) / n
        if sens < needed * (1.0 - _REL):
            raise ValueError(f"sensitivity {sens:.6g} is below weights_bound*sqrt(k)/n = {needed:.6g}: "
                             "the record understates the label-sensitivity of the dot product")
        if (self.mechanism == "none") != math.isinf(eps):
            raise ValueError("mechanism 'none' goes with eps=inf (an exact, non-private dot "
                             f"product) and only with it; got mechanism={self.mechanism!r}, eps={eps}")
        if self.mechanism != "none":
            try:  # extreme (eps, delta, sensitivity) can overflow or defeat the root finder
                with np.errstate(over="raise", divide="raise", invalid="raise"):
                    required = gaussian_sigma(sens, eps, delta, self.mechanism)
            except (ArithmeticError, RuntimeError):
                raise ValueError(f"the {self.mechanism} Gaussian mechanism's sigma cannot be "
                                 f"computed for eps={eps}, delta={delta}, sensitivity={sens:.6g}"
                                 ) from None
            if not sigma >= required * (1.0 - _REL):
                raise ValueError(f"sigma {sigma:.6g} is below the {self.mechanism} Gaussian "
                                 f"mechanism's {required:.6g} for eps={eps}, delta={delta}, "
                                 f"sensitivity={sens:.6g}: the record does not support its guarantee")
        elif sigma != 0.0:
            raise ValueError("an eps=inf record must have sigma=0")
        reach = _NOISE_REACH * sigma + _REL * A
        lo, hi = float(value.min()), float(value.max())
        if lo < -reach or hi > A + reach:
            raise ValueError(f"value has entries in [{lo:.6g}, {hi:.6g}], outside [-40 sigma, "
                             f"weights_bound + 40 sigma] = [{-reach:.6g}, {A + reach:.6g}]: the "
                             "dot product of features in [0, 1] plus its noise cannot be there")
        if max(-lo, hi) > _VALUE_MAX:
            raise ValueError(f"value has entries as large as {max(-lo, hi):.3g} (above "
                             f"{_VALUE_MAX:g}): no usable release has them")
        columns = self.columns
        if columns is not None:
            if isinstance(columns, (str, bytes)) or not hasattr(columns, "__iter__"):
                raise TypeError(f"columns must be a sequence of names or None, got "
                                f"{type(columns).__name__}")
            columns = tuple(str(c) for c in columns)
            if len(columns) != k:
                raise ValueError(f"columns has {len(columns)} names but value has {k} entries")
            if len(set(columns)) != k:
                dup = sorted({c for c in columns if columns.count(c) > 1})[:5]
                raise ValueError(f"columns must be unique; repeated: {dup}")
        for name, v in (("value", value), ("n", n), ("eps", eps), ("delta", delta),
                        ("sigma", sigma), ("sensitivity", sens), ("weights_bound", A),
                        ("columns", columns), ("weighted", weighted)):
            object.__setattr__(self, name, v)

    @property
    def k(self) -> int:
        """Number of features."""
        return int(self.value.size)

    def __eq__(self, other) -> bool:
        if not isinstance(other, NoisyDotProduct):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable-looking value object: unhashable

    def to_dict(self) -> dict:
        """The record's fields (the body of its file; ``eps`` may be ``inf``)."""
        return {"value": [float(x) for x in self.value], "n": self.n, "eps": float(self.eps),
                "delta": self.delta, "sigma": self.sigma, "mechanism": self.mechanism,
                "sensitivity": self.sensitivity, "weights_bound": self.weights_bound,
                "weighted": self.weighted,
                "columns": None if self.columns is None else list(self.columns)}

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The record as the package's saved-file envelope (:mod:`privatelr.envelope`: kind
        ``privatelr.NoisyDotProduct``, format version 3, checksummed; floats round-trip
        exactly); also written to ``path``, atomically, if given.

        Examples
        --------
        >>> rel = NoisyDotProduct([0.1, 0.2], n=100, eps=1.0, delta=1e-5, sigma=0.1,
        ...                       mechanism="analytic", sensitivity=0.02)
        >>> '"mechanism": "analytic"' in rel.to_json()
        True
        """
        text = envelope.dumps(_FORMAT, _VERSION, self.to_dict())
        if path is not None:
            envelope.write_text(path, text)
        return text

    @classmethod
    def from_json(cls, source: str | os.PathLike) -> "NoisyDotProduct":
        """Read a record from JSON text or from a file path, validating every field.

        ``source`` is JSON text when it starts (after white space) with ``{`` or ``[``, else a
        path. Every problem with the content is a ``ValueError`` whose message starts with
        ``"corrupted privatelr.NoisyDotProduct file"``: malformed JSON (including ``NaN`` or
        ``Infinity`` tokens, duplicate keys and nesting too deep for the parser), a wrong
        ``format`` or ``version``, missing or unknown fields, a field of the wrong type
        (``value`` a list of finite numbers, ``n`` an integer, ``eps`` a number or ``"inf"``,
        ``delta``/``sigma``/``sensitivity``/``weights_bound`` numbers, ``mechanism`` one of
        ``"analytic"``, ``"classic"``, ``"none"``, ``columns`` null or a list of unique strings
        of length ``k``, ``weighted`` true/false), or numbers that do not support the stated
        guarantee (see the class docstring). A record that loads can be trained on.

        **Versions.** Version 3 (written by this privatelr) is the package's envelope
        (:mod:`privatelr.envelope`: format, version, checksum — an edited file is refused) with
        the record's fields. Versions 1 and 2 were flat records (``format``, ``version`` and the
        fields, no checksum) and are still read. Version 2 records ``weighted``. Version 1
        files (without it) are read as *unweighted* when their ``weights_bound`` is 1 and as
        weighted otherwise (a bound other than 1 was only ever written for weighted releases).
        A version-1 release that was in fact computed with weights bounded by 1 cannot be told
        apart from an unweighted one; it loads as unweighted, so :func:`walr_fit` refuses it
        with ``weights`` — re-release it, or edit the file to version 2 with
        ``"weighted": true``.

        Examples
        --------
        >>> rel = NoisyDotProduct([0.1, 0.2], n=100, eps=1.0, delta=1e-5, sigma=0.1,
        ...                       mechanism="analytic", sensitivity=0.02)
        >>> NoisyDotProduct.from_json(rel.to_json()) == rel
        True
        >>> try:
        ...     NoisyDotProduct.from_json("[" * 100000)
        ... except ValueError as exc:
        ...     print(str(exc)[:39])
        corrupted privatelr.NoisyDotProduct fil
        """
        if isinstance(source, os.PathLike) or (isinstance(source, str)
                                               and not source.lstrip().startswith(("{", "["))):
            try:
                p = Path(source)
                is_file = p.is_file()
            except (OSError, ValueError):  # name too long, NUL byte, ...
                is_file = False
            if not is_file:
                raise ValueError(f"source is neither JSON text nor an existing file: {str(source)[:80]!r}")
            try:
                source = p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise _corrupted("the file is not UTF-8 text") from None
        elif not isinstance(source, str):
            raise TypeError(f"source must be JSON text or a path, got {type(source).__name__}")
        try:
            data = json.loads(source, parse_constant=_refuse_constant,
                              object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as exc:
            raise _corrupted(f"not valid JSON: {exc}") from None
        except RecursionError:
            raise _corrupted("not valid JSON: nested too deeply") from None
        except ValueError as exc:  # NaN/Infinity tokens, duplicate keys, huge integers
            raise _corrupted(f"not valid JSON: {exc}") from None
        if isinstance(data, dict) and "format_version" in data:     # version 3: the envelope
            try:
                data = dict(envelope.loads(source, _FORMAT, _VERSION), format=_FORMAT,
                            version=_VERSION)
            except ValueError as exc:
                msg = str(exc)
                raise (ValueError(msg) if msg.startswith("corrupted") else _corrupted(msg)) \
                    from None
        try:
            return cls(**_record_fields(data))
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise _corrupted(str(exc)) from None


_VERSION = 3
_WEIGHTS_COLUMN = "\0privatelr weights"  # an array of weights, carried as a column
_NOISE_REACH = 40.0  # |Gaussian noise| > 40 sigma has probability < 1e-340 per coordinate
_VALUE_MAX = 1e100  # no usable release has larger entries (the trainer multiplies by N)
_FIELDS_V1 = frozenset({"value", "n", "eps", "delta", "sigma", "mechanism", "sensitivity",
                        "weights_bound", "columns"})
_FIELDS = {1: _FIELDS_V1, 2: _FIELDS_V1 | {"weighted"}, 3: _FIELDS_V1 | {"weighted"}}


def _corrupted(message: str) -> ValueError:
    return ValueError(f"corrupted {_FORMAT} file: {message}")


def _refuse_constant(token: str):
    raise ValueError(f"the non-finite number {token} is not allowed")


def _unique_keys(pairs):
    out = {}
    for key, val in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = val
    return out


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _record_fields(data) -> dict:
    """Check the types of a parsed record and return the constructor's keyword arguments."""
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ValueError(f"not a {_FORMAT} record (missing or wrong 'format' field)")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version not in _FIELDS:
        raise ValueError(f"unsupported record version {version!r}; this privatelr reads "
                         f"versions {sorted(_FIELDS)}")
    fields = _FIELDS[version]
    extra = set(data) - fields - {"format", "version"}
    missing = fields - set(data)
    if extra or missing:
        raise ValueError(f"record fields do not match version {version}: missing "
                         f"{sorted(missing)}, unexpected {sorted(extra)}")
    value = data["value"]
    if not isinstance(value, list) or not value or not all(_is_number(x) for x in value):
        raise ValueError("record field 'value' must be a non-empty list of numbers")
    if not isinstance(data["n"], int) or isinstance(data["n"], bool):
        raise ValueError(f"record field 'n' must be an integer, got {data['n']!r}")
    eps = data["eps"]
    if eps == "inf":
        eps = math.inf
    elif not _is_number(eps):
        raise ValueError(f"record field 'eps' must be a number or \"inf\", got {eps!r}")
    for name in ("delta", "sigma", "sensitivity", "weights_bound"):
        if not _is_number(data[name]):
            raise ValueError(f"record field {name!r} must be a number, got {data[name]!r}")
    if not isinstance(data["mechanism"], str):
        raise ValueError(f"record field 'mechanism' must be a string, got {data['mechanism']!r}")
    columns = data["columns"]
    if columns is not None and (not isinstance(columns, list)
                                or not all(isinstance(c, str) for c in columns)):
        raise ValueError("record field 'columns' must be null or a list of strings")
    if version == 1:  # no 'weighted' field: unweighted exactly when the bound is 1
        weighted = data["weights_bound"] != 1
    else:
        weighted = data["weighted"]
        if not isinstance(weighted, bool):
            raise ValueError(f"record field 'weighted' must be true or false, got {weighted!r}")
    return dict(value=value, n=data["n"], eps=eps, delta=data["delta"], sigma=data["sigma"],
                mechanism=data["mechanism"], sensitivity=data["sensitivity"],
                weights_bound=data["weights_bound"], columns=columns, weighted=weighted)


def _columns_of(X) -> tuple | None:
    cols = getattr(X, "columns", None)
    return None if cols is None else tuple(str(c) for c in cols)


def _rows(n: int, k: int):
    step = chunk_rows(k, _CHUNK_BYTES)
    for start in range(0, n, step):
        yield slice(start, min(start + step, n))


def _check_release_args(eps, delta, mechanism, clip) -> tuple[float, float]:
    """Validate the release's privacy arguments (shared by the in-memory and Dask releases)."""
    eps = check_real("eps", eps, low=0.0, low_open=True, allow_inf=True)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    if mechanism not in ("analytic", "classic"):
        raise ValueError(f"mechanism must be 'analytic' or 'classic', got {mechanism!r}")
    check_bool("clip", clip)
    return eps, delta


def noisy_dot_product(X, y, *, eps: float, delta: float, weights=None,
                      weights_bound: float = 1.0, mechanism: str = "analytic", clip: bool = False,
                      random_state=None, accountant=None) -> NoisyDotProduct:
    r"""Release :math:`\frac1N\sum_i w_i y_i x_i` with (ε, δ)-label-DP Gaussian noise (WALR's release).

    This is the measurement side: it is the only function of WALR that reads labels. The
    sensitivity and σ are derived in :mod:`privatelr.label_dp`: :math:`\Delta = A\sqrt{k}/N`,
    σ from :func:`privatelr.mechanisms.gaussian_sigma`.

    Parameters
    ----------
    X : (N, k) array or DataFrame
        Features, every entry in ``[0, 1]`` (an intercept column of ones qualifies).
    y : (N,) array
        Labels as 0/1, bool or -1/+1 (-1 is read as 0).
    eps : float
        ε > 0; ``inf`` releases the exact dot product (not private, ``mechanism="none"``).
    delta : float
        δ in (0, 1); choose it well below ``1/N``.
    weights : (N,) array, optional
        Public weights in ``[0, weights_bound]``.
    weights_bound : float
        Public bound ``A`` on the weights (ignored, taken as 1, without weights).
    mechanism : {"analytic", "classic"}
        Balle–Wang analytic Gaussian mechanism (any ε > 0) or the classic one (ε < 1 only).
    clip : bool
        Clip features into ``[0, 1]`` coordinate-wise instead of raising.
    random_state : int, numpy.random.Generator or None
    accountant : privatelr.PrivacyAccountant, optional
        Charged ``(eps, delta)`` for the release (checked before the labels are read).

    Returns
    -------
    NoisyDotProduct

    Examples
    --------
    >>> X = np.array([[1.0, 0.2], [1.0, 0.9], [1.0, 0.4], [1.0, 0.7]])
    >>> rel = noisy_dot_product(X, [0, 1, 0, 1], eps=1.0, delta=1e-5, random_state=0)
    >>> rel.k, rel.n, rel.mechanism, round(rel.sensitivity, 4)
    (2, 4, 'analytic', 0.3536)
    """
    if accountant is not None:  # before the data are read
        require_budget(accountant, eps, delta)
    columns = _columns_of(X)
    _check_unique_columns(columns)  # the names only: before any value is read or charged
    eps, delta = _check_release_args(eps, delta, mechanism, clip)
    rows = as_rows(X, y, weights, weights_bound if weights is not None else None)
    return release_rows(rows, columns, eps=eps, delta=delta, mechanism=mechanism, clip=clip,
                        random_state=random_state, accountant=accountant)


def release_rows(rows, columns, *, eps: float, delta: float, mechanism: str, clip: bool,
                 random_state=None, accountant=None) -> NoisyDotProduct:
    """The release of :func:`noisy_dot_product` from a :class:`~privatelr.rows.RowSource` (any
    backend): one scan (values, labels, weights), one pass for the dot product, then the noise
    on the caller's side. Arguments already checked."""
    n, k = rows.n, rows.d
    A = rows.weights_bound
    # Numeric range: the exact dot product lies in [0, A] and its noise within 40 sigma, where
    # sigma = sensitivity * s with sensitivity A sqrt(k)/N and s the sigma per unit sensitivity
    # (it depends on eps and delta only); a record refuses entries above _VALUE_MAX. Checked on
    # the public arguments, before the labels are used.
    if A > _VALUE_MAX:
        raise ValueError(f"weights_bound={A!r} is above {_VALUE_MAX:g}: releases scaled by it are "
                         "beyond what a WALR record accepts; rescale the weights and "
                         "weights_bound by a public constant")
    sensitivity = label_sensitivity(n, k, A)
    if not sensitivity > 0.0:
        raise ValueError(f"weights_bound={A!r} makes the label sensitivity weights_bound*sqrt(k)/N "
                         "underflow to 0 in double precision; rescale the weights and "
                         "weights_bound by a public constant")
    if not math.isinf(eps):
        from .mechanisms import gaussian_sigma as sigma_of  # (the body's may be patched in audits)

        unit = sigma_of(1.0, eps, delta, mechanism)  # names eps/delta if out of range
        log_sens = math.log(A) + 0.5 * math.log(k) - math.log(n)
        log_sigma = log_sens + math.log(unit)
        if log_sigma < -744.0 or math.log(A + _NOISE_REACH * math.exp(min(log_sigma, 700.0))) > \
                math.log(_VALUE_MAX):
            names = [f"weights_bound={A!r}", f"eps={eps!r}", f"delta={delta!r}"]
            if math.log(unit) > log_sens:  # eps and delta drive sigma more than the bound
                names = names[1:] + names[:1]
            raise ValueError(
                f"{names[0]} (with {names[1]}, {names[2]}) makes the Gaussian noise sigma = "
                f"weights_bound*sqrt(k)/N * {unit:.4g} about 1e{log_sigma / math.log(10.0):+.0f}: "
                f"{'it underflows to 0' if log_sigma < -744.0 else 'the release could exceed '}"
                f"{'' if log_sigma < -744.0 else format(_VALUE_MAX, 'g')}, beyond what a WALR "
                "record accepts; increase eps or delta, or rescale the weights and weights_bound "
                "by a public constant")
    rows.scan()                               # values, labels, weights: the package's messages
    total, rows_out, cols_out = rows.positive_sum(bool(clip))
    if rows_out and not clip:
        cols = np.flatnonzero(cols_out)
        names = [columns[j] if columns is not None else f"column {j}" for j in cols[:5]]
        raise ValueError(f"X must lie in [0, 1] for the label-sensitivity sqrt(k)/N to hold; "
                         f"values fall outside it in {', '.join(map(str, names))}"
                         f"{' ...' if cols.size > 5 else ''}. Rescale the features with public "
                         "bounds, or pass clip=True to clip each record")
    if np.isinf(eps):
        sigma, mech = 0.0, "none"
    else:
        sigma, mech = gaussian_sigma(sensitivity, eps, delta, mechanism), mechanism
    rng = check_random_state(random_state)
    value = total / n + gaussian_noise(k, sigma, rng)
    if accountant is not None:
        accountant.spend(eps, delta, note=f"noisy_dot_product ({mech} Gaussian, label-DP)",
                         rdp=lambda orders: rdp_gaussian(sigma / sensitivity, orders))
    return NoisyDotProduct(value=value, n=n, eps=eps, delta=delta, sigma=sigma, mechanism=mech,
                           sensitivity=sensitivity, weights_bound=A, columns=columns,
                           weighted=rows.weighted)


def _check_unique_columns(columns) -> None:
    if columns is not None and len(set(columns)) != len(columns):
        dup = sorted({c for c in columns if columns.count(c) > 1})[:5]
        raise ValueError(f"X has repeated column names {dup}: the release records the feature "
                         "names, which must be unique")


def _check_weighting(release, weights) -> None:
    """Refuse training with other weights than the release was computed with (none or some)."""
    if release is None:
        return
    if release.weighted and weights is None:
        raise ValueError(
            "the release was computed with observation weights (weighted=True, weights_bound="
            f"{release.weights_bound:g}) but walr_fit got no weights: the label-blind objective "
            "needs the same weights the measurement system used; pass weights=<those weights>")
    if not release.weighted and weights is not None:
        raise ValueError(
            "the release was computed without weights (weighted=False) but walr_fit got "
            "weights: drop weights= to train on it, or have the measurement system release a "
            "weighted dot product (noisy_dot_product(..., weights=..., weights_bound=...))")


@dataclass(frozen=True, eq=False)
class WALRInformation(InferenceRelease):
    r"""What WALR's inference needs, computed by the trainer from its own features and the
    release (no privacy cost): the label-free information matrix at the unpenalised estimate,
    that estimate, and the largest privacy noise of a row's linear predictor
    (:func:`walr_inference`).

    Attributes
    ----------
    information : (k, k) ndarray
        :math:`H(\bar\theta)` (at the released coefficients when there is no
        unpenalised estimate).
    estimate : (k,) ndarray or None
        :math:`\bar\theta`, the minimiser of the label-blind objective without ridge
        (None: it does not exist for this release, and intervals are refused).
    spread : float
        ``s`` of :func:`walr_inference`, the largest privacy noise (sd) of a row's linear
        predictor (0 for an exact release, NaN without an estimate).
    """

    estimate: np.ndarray | None = None
    spread: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        if self.estimate is not None:
            est = np.array(self.estimate, dtype=np.float64)
            est.setflags(write=False)
            object.__setattr__(self, "estimate", est)


# ------------------------------------------------------------------------------------------
# The label-blind trainer
# ------------------------------------------------------------------------------------------
class _Unbounded(Exception):
    def __init__(self, direction, x):
        super().__init__("unbounded")
        self.direction, self.x = direction, x


def _certificate(margins_u: np.ndarray, w: np.ndarray | None, u: np.ndarray, v: np.ndarray,
                 n: int) -> tuple[float, float]:
    """``c(u)`` of the module docstring and the rounding scale it must beat."""
    pos = np.maximum(margins_u, 0.0)
    absm = np.abs(margins_u)
    if w is not None:
        pos, absm = pos @ w, absm @ w
    else:
        pos, absm = pos.sum(), absm.sum()
    c = float(u @ v - pos / n)
    scale = float(np.abs(u) @ np.abs(v) + absm / n)
    return c, scale


def _proves_unbounded(c: float, scale: float) -> bool:
    return c > 1e-10 * scale + 1e-300


def _coordinate_certificate(X, w, v, n):
    """Check ``c(±e_j) > 0`` for every coordinate in one chunked pass; return a direction or None."""
    k = X.shape[1]
    pos, neg, absw = np.zeros(k), np.zeros(k), np.zeros(k)
    for sl in _rows(n, k):
        Xc = X[sl]
        wc = np.ones(Xc.shape[0]) if w is None else w[sl]
        P = np.maximum(Xc, 0.0)
        pos += P.T @ wc
        neg += (P - Xc).T @ wc
    pos /= n
    neg /= n
    absw = pos + neg
    for sign, c in ((1.0, v - pos), (-1.0, -v - neg)):
        scale = np.abs(v) + absw
        hit = np.flatnonzero(c > 1e-10 * scale + 1e-300)
        if hit.size:
            u = np.zeros(k)
            u[hit[0]] = sign
            return u
    return None


class _Watched:
    """Wrap an objective: when ||w|| grows past a threshold, try the unboundedness certificate."""

    def __init__(self, objective: ERMObjective, X, w, v, n):
        self.objective, self.X, self.w, self.v, self.n = objective, X, w, v, n
        self.next_norm = _GROWTH_CHECK

    def __getattr__(self, name):
        # Everything else (passes, n, ...) comes from the wrapped objective; a subsampled copy
        # would escape the watch, so the solver's optional warm start is not offered.
        if name == "subsample" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.objective, name)

    def evaluate(self, x, *args, **kwargs):
        norm = float(np.linalg.norm(x))
        if norm > self.next_norm:
            self.next_norm = 2.0 * norm
            u = x / norm
            c, scale = _certificate(self.X @ u, self.w, u, self.v, self.n)
            if _proves_unbounded(c, scale):
                raise _Unbounded(u, x)
        return self.objective.evaluate(x, *args, **kwargs)

    def line(self, x, p, *args, **kwargs):
        return self.objective.line(x, p, *args, **kwargs)


def _release_columns(columns, release, k: int) -> tuple:
    """The trainer's column names: X's, checked against the release's, else the release's."""
    if columns is None:
        if release is not None and release.columns is not None:
            return release.columns
        return tuple(f"x{j}" for j in range(k))
    if release is not None and release.columns is not None and release.columns != columns:
        raise ValueError(f"X's columns {list(columns)} differ from the release's "
                         f"{list(release.columns)}; pass the columns in the release's order")
    return columns


def _check_trainer_weights(weights, n, bound):
    if weights is None:
        return None
    if hasattr(weights, "to_numpy") and not isinstance(weights, np.ndarray):
        weights = weights.to_numpy()
    w = np.asarray(weights)
    if w.dtype == object or not np.issubdtype(w.dtype, np.number) or np.issubdtype(w.dtype, np.complexfloating):
        raise TypeError(f"weights must be real numbers, got dtype {w.dtype}")
    w = w.astype(np.float64)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"weights must be a 1-D array of length {n} (one per row of X), got shape "
                         f"{np.shape(weights)}")
    if not np.isfinite(w).all():
        raise ValueError("weights contains NaN or infinite values")
    if (w < 0).any():
        raise ValueError("weights must be >= 0: some are negative")
    if bound is not None and (w > bound * (1 + 1e-12)).any():
        raise ValueError(f"weights exceed the release's weights_bound={bound:g}: "
                         "train with the same weights the measurement system used")
    return w


def _as_release(noisy, k: int, n: int):
    if isinstance(noisy, NoisyDotProduct):
        if noisy.k != k:
            raise ValueError(f"noisy has {noisy.k} entries but X has {k} columns; they must match")
        if noisy.n != n:
            raise ValueError(f"noisy was released from n={noisy.n} records but X has {n} rows: train "
                             "on the same records the measurement system aggregated")
        return noisy, np.asarray(noisy.value, dtype=np.float64)
    v = np.asarray(noisy)
    if v.dtype == object or not np.issubdtype(v.dtype, np.number) or np.issubdtype(v.dtype, np.complexfloating):
        raise TypeError("noisy must be a NoisyDotProduct or a vector of real numbers, got "
                        f"{type(noisy).__name__}")
    v = v.astype(np.float64).reshape(-1) if v.ndim <= 1 else v
    if v.ndim != 1 or v.size != k:
        raise ValueError(f"noisy must have one entry per column of X ({k}), got shape {np.shape(noisy)}")
    if not np.isfinite(v).all():
        raise ValueError("noisy contains NaN or infinite values")
    return None, v


def _cholesky(P: np.ndarray):
    """Cholesky factor of a symmetric PSD matrix, with a tiny ridge when it is singular."""
    k = P.shape[0]
    ridge = 1e-12 * max(float(np.trace(P)) / k, 1e-300)
    try:
        return scipy.linalg.cho_factor(P + ridge * np.eye(k), check_finite=False)
    except np.linalg.LinAlgError:
        return scipy.linalg.cho_factor(P + 1e-8 * max(float(np.trace(P)) / k, 1e-300) * np.eye(k),
                                       check_finite=False)


def _hybrid(X, w, v, lam, *, lr, batch_size, epochs, tol, precondition, rng):
    """The seed's hybrid minibatch gradient descent with a public preconditioner (see walr_fit)."""
    n, k = X.shape
    objective = ERMObjective(X, -np.ones(n), LogisticLoss(), lam, noise=-n * v, weights=w)
    theta = np.zeros(k)
    need_h = precondition in ("hessian", "bound")
    f, g, H = objective.evaluate(theta, need_h)
    if precondition == "bound":  # Boehning: the Hessian at 0 is (1/4) X'WX/N + lam I, a global bound
        factor = _cholesky(H)
    elif precondition == "none":
        rowsq = np.einsum("ij,ij->i", X, X)
        L = 0.25 * float((rowsq if w is None else rowsq * w).max()) + lam
    lr0 = (1.0 if precondition != "none" else 1.0 / max(L, 1e-300)) if lr is None else lr
    lr = lr0
    m = min(batch_size, n)
    g0 = float(np.abs(g).max())
    target = max(tol * g0, 1e-15)
    gnorm, steps = g0, 0
    next_norm = _GROWTH_CHECK
    status, message, epoch, result_dir = "nonconvergence", "", 0, None
    if gnorm <= target:
        return theta, f, gnorm, "ok", "converged at the start", 0, 0, objective.passes, lr, m, None
    for epoch in range(1, epochs + 1):
        if precondition == "hessian":
            factor = _cholesky(H)
        if precondition == "none":
            step_dir = lambda gr: gr  # noqa: E731
        else:
            step_dir = lambda gr: scipy.linalg.cho_solve(factor, gr, check_finite=False)  # noqa: E731
        old = (theta, f, g, H, gnorm)
        if m >= n:  # full batch: one step with the gradient already computed at theta
            theta = theta - lr * step_dir(g)
            steps += 1
        else:
            perm = rng.permutation(n)
            for start in range(0, n, m):
                idx = perm[start:start + m]
                Xb = X[idx]
                pb = expit(Xb @ theta)
                if w is not None:
                    pb *= w[idx]
                gb = Xb.T @ pb / idx.size - v + lam * theta
                theta = theta - lr * step_dir(gb)
                steps += 1
        ok = bool(np.isfinite(theta).all())
        if ok:
            f, g, H = objective.evaluate(theta, precondition == "hessian")
            ok = np.isfinite(f) and f <= old[1] + 1e-12 * abs(old[1])
        if not ok:  # the epoch made things worse: reject it, smaller steps, less minibatch noise
            theta, f, g, H, gnorm = old
            lr *= 0.5
            m = min(2 * m, n)
            if lr < 1e-10 * lr0:
                message = f"step size collapsed to {lr:.3g} without decreasing the objective"
                break
            continue
        prev, gnorm = gnorm, float(np.abs(g).max())
        lr = min(2.0 * lr, lr0)
        if gnorm <= target:
            status = "ok"
            message = f"converged: gradient {gnorm:.3g} <= tolerance {target:.3g} after {epoch} epochs"
            break
        norm = float(np.linalg.norm(theta))
        if lam == 0.0 and norm > next_norm:
            next_norm = 2.0 * norm
            u = theta / norm
            c, scale = _certificate(X @ u, w, u, v, n)
            if _proves_unbounded(c, scale):
                status, result_dir = "unbounded", u
                break
        if gnorm > 0.5 * prev and m < n:  # too little progress: halve the minibatch noise
            m = min(2 * m, n)
    else:
        message = f"epoch limit {epochs} reached: gradient {gnorm:.3g} > tolerance {target:.3g}"
    return theta, f, gnorm, status, message, steps, epoch, objective.passes, lr, m, result_dir


def walr_fit(X, noisy, *, weights=None, lambda_: float = 0.0, solver: str = "hybrid",
             lr: float | None = None, batch_size: int = 1024, epochs: int = 500,
             tol: float | None = None, precondition: str = "hessian", maxiter: int | None = None,
             random_state=None) -> WALRResult:
    r"""Train logistic regression from features, weights and a noisy dot product — no labels.

    Minimises :math:`F(\theta) = \frac1N\sum_i w_i\log(1+e^{\theta^\top x_i}) -
    \theta^\top\tilde v + \frac{\lambda}{2}\|\theta\|^2` (:mod:`privatelr.label_dp`). The result is
    post-processing of the release, so it inherits its (ε, δ)-label-DP guarantee.

    Parameters
    ----------
    X : (N, k) array or DataFrame
        The same features (same rows, same order is not needed) the release aggregated.
    noisy : NoisyDotProduct or (k,) array
        The release; a plain vector is accepted (the result then records no guarantee).
    weights : (N,) array, optional
        The weights the release used (must not exceed its ``weights_bound``). Required when
        the release is weighted (``noisy.weighted``) and refused when it is not: a mismatch
        would fit a different objective than the release measured.
    lambda_ : float
        Ridge λ >= 0 (every coefficient, the intercept too). With 0 the objective may be
        unbounded below; this is detected (status ``"unbounded"``, a warning recommending λ > 0).
    solver : {"hybrid", "newton"}
        ``"newton"``: the exact minimiser with :func:`privatelr.solver.newton`. ``"hybrid"``: the
        seed's hybrid minibatch gradient descent — each step
        :math:`\theta \leftarrow \theta - \mathrm{lr}\,P^{-1}\big(\frac1m\sum_{j\in B}
        w_j\sigma(\theta^\top x_j)x_j - \tilde v + \lambda\theta\big)` over the minibatches ``B``
        of a random permutation (an epoch): the minibatch mean of the label-free term minus the
        full-data noisy dot product. After each epoch the full objective and gradient are
        computed (one pass); an epoch that increased the objective is rejected (``lr`` halves,
        ``m`` doubles), the run stops when the gradient's infinity norm is below ``tol`` times
        its value at 0, and ``m`` doubles whenever an epoch did not halve that norm, so the
        minibatch noise vanishes and the iteration ends as full-batch descent.
    lr : float, optional
        Step multiplier. Default 1 with a preconditioner, :math:`1/L` without, where
        :math:`L = \max_i w_i\|x_i\|^2/4 + \lambda` bounds the curvature (the seed's
        ``‖x‖²/4``).
    batch_size : int
        Initial minibatch size ``m`` of the hybrid solver.
    epochs : int
        Epoch limit of the hybrid solver.
    tol : float, optional
        Relative gradient tolerance (default 1e-10 Newton, 1e-6 hybrid).
    precondition : {"hessian", "bound", "none"}
        Hybrid only: the matrix ``P``. ``"hessian"`` (default): the full-data Hessian of ``F`` at
        the start of each epoch, :math:`\frac1N\sum_i w_i\sigma_i(1-\sigma_i)x_ix_i^\top +
        \lambda I` (label-free, so no privacy cost; the full-batch step is a Newton step).
        ``"bound"``: Böhning's fixed bound :math:`\nabla^2 F \preceq \frac14\frac1N\sum_i
        w_i x_ix_i^\top + \lambda I` (the full-batch step is a monotone majorise–minimise
        step; slow when positives are rare, as the bound is then loose). ``"none"``: plain
        gradient steps as in the seed.
    maxiter : int, optional
        Newton iteration limit (default 200).
    random_state : int, numpy.random.Generator or None
        Minibatch order of the hybrid solver.

    Returns
    -------
    WALRResult

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = np.c_[np.ones(500), rng.uniform(size=(500, 2))]
    >>> y = rng.uniform(size=500) < 1 / (1 + np.exp(2 - 3 * X[:, 1]))
    >>> rel = noisy_dot_product(X, y, eps=1.0, delta=1e-6, random_state=1)
    >>> fit = walr_fit(X, rel, lambda_=1e-3, solver="newton")
    >>> fit.status, fit.coef.shape
    ('ok', (3,))
    """
    if is_dask(X, weights) or is_sparse(X):
        bound = noisy.weights_bound if isinstance(noisy, NoisyDotProduct) else FLOAT_MAX
        rows = as_rows(X, None, weights, bound if weights is not None else None)
        return fit_rows_newton(rows, noisy, _columns_of(X), lambda_=lambda_, solver=solver,
                               tol=tol, maxiter=maxiter)
    columns = _columns_of(X)
    X = as_float_matrix("X", X)
    n, k = X.shape
    release, v = _as_release(noisy, k, n)
    columns = _release_columns(columns, release, k)
    _check_weighting(release, weights)
    w = _check_trainer_weights(weights, n, None if release is None else release.weights_bound)
    lam = check_real("lambda_", lambda_, low=0.0)
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be 'hybrid' or 'newton', got {solver!r}")
    if tol is not None:
        tol = check_real("tol", tol, low=0.0, low_open=True)
    if lr is not None:
        lr = check_real("lr", lr, low=0.0, low_open=True)
    batch_size = check_int("batch_size", batch_size, low=1)
    epochs = check_int("epochs", epochs, low=1)
    if maxiter is not None:
        maxiter = check_int("maxiter", maxiter, low=1)
    if precondition not in ("hessian", "bound", "none"):
        raise ValueError("precondition must be 'hessian', 'bound' or 'none', got "
                         f"{precondition!r}")
    rng = check_random_state(random_state)

    common = dict(columns=columns, solver=solver, lambda_=lam, n=n, k=k,
                  eps=None if release is None else release.eps,
                  delta=None if release is None else release.delta,
                  sigma=None if release is None else release.sigma,
                  mechanism=None if release is None else release.mechanism)

    def unbounded(direction, iterations, epochs_done, passes, how):
        warnings.warn("the label-blind WALR objective is unbounded below with lambda_=0 (the noisy "
                      "dot product lies outside the attainable set " + how + "); there is no "
                      "model to return. Refit with lambda_ > 0.", UserWarning, stacklevel=3)
        return WALRResult(coef=np.full(k, np.nan), status="unbounded", converged=False,
                          message="objective unbounded below along `direction` (" + how + ")",
                          iterations=iterations, epochs=epochs_done, passes=passes,
                          value=-np.inf, grad_norm=np.nan, direction=direction, **common)

    if lam == 0.0:
        u = _coordinate_certificate(X, w, v, n)
        if u is not None:
            j = int(np.flatnonzero(u)[0])
            return unbounded(u, 0, 0, 1, f"coordinate {columns[j]!r} is "
                             f"{'above the largest' if u[j] > 0 else 'below the smallest'} "
                             "attainable value")

    if solver == "newton":
        objective = ERMObjective(X, -np.ones(n), LogisticLoss(), lam, noise=-n * v, weights=w)
        watched = _Watched(objective, X, w, v, n) if lam == 0.0 else objective
        try:
            rep = minimize(watched, np.zeros(k), method="newton",
                           gtol=1e-10 if tol is None else tol, maxiter=maxiter)
        except _Unbounded as exc:
            return unbounded(exc.direction, 0, 0, objective.passes,
                             "proved along the direction the Newton iterates ran off in")
        status = "ok" if rep.convergence == 0 else "nonconvergence"
        result = WALRResult(coef=rep.x, status=status, converged=rep.convergence == 0,
                            message=rep.message, iterations=rep.iterations, epochs=0,
                            passes=rep.passes, value=rep.value, grad_norm=rep.grad_norm, **common)
    else:
        (theta, f, gnorm, status, message, steps, ep, passes, lr_used, m,
         direction) = _hybrid(X, w, v, lam, lr=lr, batch_size=batch_size, epochs=epochs,
                              tol=1e-6 if tol is None else tol, precondition=precondition,
                              rng=rng)
        if status == "unbounded":
            res = unbounded(direction, steps, ep, passes,
                            "proved along the direction the hybrid iterates ran off in")
            return replace(res, lr=lr_used, batch_size=m)
        result = WALRResult(coef=theta, status=status, converged=status == "ok", message=message,
                            iterations=steps, epochs=ep, passes=passes, value=f, grad_norm=gnorm,
                            lr=lr_used, batch_size=m, **common)
    if result.status == "ok":
        result = replace(result, inference=walr_inference(
            ERMObjective(X, -np.ones(n), LogisticLoss(), 0.0, weights=w),
            _largest_noise(as_rows(X, None, None, None)), result.coef, lam,
            0.0 if release is None else release.sigma, _unpenalised_in_memory(X, w, v, n)))
    if result.status == "ok" and lam == 0.0 and float(np.abs(X @ result.coef).max()) > 30.0:
        warnings.warn("fitted probabilities numerically 0 or 1 occurred with lambda_=0: the data "
                      "may be (quasi-)separated by the dot product, in which case no finite "
                      "minimiser exists and the coefficients grow with the tolerance; consider "
                      "lambda_ > 0", UserWarning, stacklevel=2)
    if result.status != "ok":
        hint = " With lambda_=0 the minimiser may not exist; refit with lambda_ > 0." if lam == 0.0 else ""
        warnings.warn(f"WALR {solver} solver did not converge: {result.message}.{hint}",
                      UserWarning, stacklevel=2)
    return result


# ------------------------------------------------------------------------------------------
# Convenience: formula front end
# ------------------------------------------------------------------------------------------
def walr(formula: str, data, *, eps: float, delta: float, weights=None,
         weights_bound: float = 1.0, lambda_: float = 0.0, solver: str = "newton",
         mechanism: str = "analytic", clip: bool = False, random_state=None,
         accountant=None, **fit_options) -> WALRResult:
    r"""WALR end to end: build the design from a formula, release the noisy dot product, train.

    In production the two halves run on **different parties**: the measurement system, which
    holds the labels, runs :func:`noisy_dot_product` and ships the :class:`NoisyDotProduct`
    (e.g. as JSON); the advertiser, who holds features and weights, runs :func:`walr_fit`. This
    function chains them for experiments and simulations, where one party has everything.

    Parameters
    ----------
    formula : str
        An R formula, ``"y ~ x1 + x2"``, built by :func:`privatelr.design.build_design` (the
        same front end as ``dplr``: ``.``, ``factor()``, ``I()``, R's column names); the
        response must be two-valued (0/1, logical or a two-level factor, first level = 0). The
        intercept column of ones lies in ``[0, 1]``; every other design column must too (or
        ``clip=True``). Rows with a missing value are dropped and ``N`` counts the rest.
    data : pandas.DataFrame
    eps, delta : float
        The label-DP guarantee of the release (see :func:`noisy_dot_product`).
    weights : str or (N,) array, optional
        A column name of ``data`` or an array of public weights in ``[0, weights_bound]``.
    weights_bound : float
        Public bound on the weights.
    lambda_, solver : see :func:`walr_fit` (default ``"newton"`` here).
    mechanism : {"analytic", "classic"}
    clip : bool
        Clip design columns into ``[0, 1]``.
    random_state : int, numpy.random.Generator or None
        One generator drives the release noise and the hybrid minibatches.
    accountant : privatelr.PrivacyAccountant, optional
        Charged ``(eps, delta)`` for the release (checked before anything is read).
    **fit_options
        Passed to :func:`walr_fit` (``lr``, ``batch_size``, ``epochs``, ``tol``, …).

    Returns
    -------
    WALRResult
        Coefficients named after the design columns; ``predict_proba`` accepts new DataFrames.

    Examples
    --------
    >>> import pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.uniform(size=400), "b": rng.uniform(size=400)})
    >>> df["y"] = (rng.uniform(size=400) < 1 / (1 + np.exp(1 - 2 * df.a))).astype(int)
    >>> fit = walr("y ~ a + b", df, eps=2.0, delta=1e-6, lambda_=1e-3, random_state=0)
    >>> list(fit.columns)
    ['(Intercept)', 'a', 'b']
    """
    from .design import formula_text, make_spec

    if accountant is not None:
        require_budget(accountant, eps, delta)
    eps, delta = _check_release_args(eps, delta, mechanism, clip)
    if weights is not None and not isinstance(weights, str):
        if is_dask(data) or not hasattr(data, "assign"):
            raise TypeError("walr takes weights as a column name of data (weights='w'), or as "
                            "an array with one weight per row of a pandas DataFrame")
        w = np.asarray(weights)
        if w.ndim != 1 or w.shape[0] != len(data):
            raise ValueError(f"weights must have one entry per row of data ({len(data)}), got "
                             f"shape {w.shape}")
        data = data.assign(**{_WEIGHTS_COLUMN: w})
        weights = _WEIGHTS_COLUMN
    if is_dask(data):
        from .backends.dask import schema_of

        spec = make_spec(formula_text(formula), schema_of(data), learn=False,
                         why="a label-private release (WALR) on Dask data",
                         hint=" (on Dask data levels are never learned from the rows)")
    else:
        if not hasattr(data, "columns"):
            raise TypeError(f"data must be a pandas or Dask DataFrame, got "
                            f"{type(data).__name__}")
        # label privacy: the features (and their factor levels) are the trainer's own, public
        # to it; the coding of the private labels is never learned from them
        schema = data.drop(columns=[_WEIGHTS_COLUMN]) if weights == _WEIGHTS_COLUMN else data
        spec = make_spec(formula_text(formula), schema, learn=True, learn_response=False,
                         why="a label-private release (WALR)")
    if spec.offsets:
        raise ValueError("WALR has no offset: the label-blind objective is the release's "
                         "logistic loss without one; remove offset() from the formula")
    if spec.n_classes > 2:
        raise ValueError(f"the response of {formula!r} has {spec.n_classes} values; WALR needs "
                         "a two-valued (0/1, logical or two-level factor) response")
    if weights is not None and weights not in data.columns:
        raise ValueError(f"weights={weights!r} is not a column of data")
    fr = frame_rows(spec, data, weights=weights,
                    weights_bound=weights_bound if weights is not None else None)
    rng = check_random_state(random_state)
    columns = tuple(spec.columns)
    release = release_rows(fr.rows, columns, eps=eps, delta=delta, mechanism=mechanism,
                           clip=clip, random_state=rng, accountant=accountant)
    rows = fr.rows.mapped(lambda X: np.clip(X, 0.0, 1.0), fr.rows.d) if clip else fr.rows
    if is_dask(data):
        result = fit_rows_newton(rows, release, columns, lambda_=lambda_, solver=solver,
                                 **fit_options)
    else:
        import pandas as pd

        result = walr_fit(pd.DataFrame(rows.X, columns=list(columns)), release, weights=rows.w,
                          lambda_=lambda_, solver=solver, random_state=rng, **fit_options)
    return replace(result, model_spec=spec)


def label_free_information(objective, coef: np.ndarray):
    r"""The trainer's information matrix :math:`\frac1N\sum_i w_i\sigma_i(1-\sigma_i)x_ix_i^\top`
    at ``coef``: label-free (features and weights only), so computing it costs no privacy; it
    gives WALR's standard errors (:mod:`privatelr.inference`)."""
    from .inference import InferenceRelease

    H = objective.information(np.asarray(coef, dtype=float))
    return InferenceRelease(information=0.5 * (H + H.T), eps=0.0, noise_scale=0.0)


def walr_inference(objective, largest_norm, coef: np.ndarray, lambda_: float, sigma: float,
                   solve):
    r"""WALR's inference from the trainer's own data and the release (no privacy cost).

    The label-blind gradient :math:`g(\theta) = \frac1N\sum_i w_i\sigma(\theta^\top x_i)x_i`
    is known to the trainer, and the unpenalised estimate :math:`\bar\theta` solves
    :math:`g(\bar\theta) = \tilde v` *exactly* (``solve``: Newton on the label-blind
    objective with λ = 0, started at ``coef``) — no first-order correction of the ridge, whose
    error grows with λ. The information is evaluated there, and the largest privacy noise of
    a row's linear predictor

    .. math:: s = \max_i \big(x_i^\top\Sigma x_i\big)^{1/2} = \max_i \|Lx_i\|,
              \qquad \Sigma = \sigma^2 H(\bar\theta)^{-2} = L^2,\quad L = \sigma H^{-1},

    measures how far the release's noise reaches into the curvature of :math:`g^{-1}` for the
    rows it moves most (the intervals are first order; :mod:`privatelr.inference` refuses by
    ``s``). It is the largest row and not the RMS over rows because a rare factor level's
    rows are moved far while the average barely changes (``benchmarks/bench_coverage.py``:
    at a 2 % level the RMS rule's intervals covered 0.973-0.998).

    ``objective``: the label-free logistic objective without ridge (its ``information``);
    ``largest_norm(L)``: :math:`\max_i\|Lx_i\|` over the trainer's rows (one pass);
    ``solve(coef)`` returns the unpenalised minimiser or None when it does not exist (the
    noisy dot product lies outside the values the label-free gradient can take) or was not
    found. Returns a :class:`WALRInformation`.
    """
    coef = np.asarray(coef, dtype=float)
    estimate = coef if lambda_ == 0.0 else solve(coef)
    if estimate is None or not np.isfinite(estimate).all():
        H = objective.information(coef)
        return WALRInformation(information=0.5 * (H + H.T), eps=0.0, noise_scale=0.0,
                               estimate=None, spread=math.nan)
    H = objective.information(estimate)
    H = 0.5 * (H + H.T)
    spread = 0.0
    if sigma > 0:
        try:
            Hi = np.linalg.inv(H)
        except np.linalg.LinAlgError:
            Hi = None
        if Hi is None or not np.isfinite(Hi).all():
            spread = math.inf
        else:
            spread = float(largest_norm(sigma * 0.5 * (Hi + Hi.T)))
    return WALRInformation(information=H, eps=0.0, noise_scale=0.0, estimate=estimate,
                           spread=spread)


def _largest_noise(rows):
    r"""``largest_norm`` of :func:`walr_inference` over a row source: :math:`\max_i\|Lx_i\|`
    is the largest row norm of the rows mapped by ``L`` (symmetric), one scan on any backend."""
    return lambda L: rows.mapped(lambda B: B @ L, rows.d).scan().max_norm


def _unpenalised_in_memory(X, w, v, n):
    """``solve`` of :func:`walr_inference` on in-memory rows: Newton with λ = 0 and the
    unboundedness certificate (None when it proves there is no minimiser or does not
    converge)."""
    def solve(coef):
        objective = ERMObjective(X, -np.ones(n), LogisticLoss(), 0.0, noise=-n * v, weights=w)
        try:
            rep = minimize(_Watched(objective, X, w, v, n), coef, method="newton", gtol=1e-10,
                           maxiter=100, warm_start=False)
        except _Unbounded:
            return None
        return rep.x if rep.convergence == 0 else None
    return solve


def fit_rows_newton(rows, noisy, columns, *, lambda_: float = 0.0, solver: str = "newton",
                    tol: float | None = None, maxiter: int | None = None, **unused):
    """:func:`walr_fit` on a row source held elsewhere (Dask): Newton only, one map-reduce per
    step on the engine's ERM objective with every label -1, the weights and linear term ``-ṽ``.
    Not available there: ``solver="hybrid"`` (minibatch steps are not a map-reduce; Newton
    reaches the same minimiser) and ``lambda_=0`` (its unboundedness certificates read rows one
    by one; use a small ``lambda_ > 0``)."""
    if solver != "newton":
        raise ValueError(f"solver={solver!r} is not available on Dask data: pass solver='newton' "
                         "(exact Newton, one map-reduce over the partitions per step)")
    lam = check_real("lambda_", lambda_, low=0.0)
    if lam == 0.0:
        raise ValueError("lambda_=0 is not available on Dask data (the unboundedness checks read "
                         "the rows one by one); pass a small lambda_ > 0")
    if tol is not None:
        tol = check_real("tol", tol, low=0.0, low_open=True)
    n, k = rows.n, rows.d
    release, v = _as_release(noisy, k, n)
    columns = _release_columns(columns, release, k)
    _check_weighting(release, True if rows.weighted else None)
    bound = None if release is None else release.weights_bound
    scan = rows.scan()
    if rows.weighted and bound is not None and scan.max_weight > bound * (1 + 1e-12):
        raise ValueError(f"weights exceed the release's weights_bound={bound:g}: train with the "
                         "same weights the measurement system used")
    objective = rows.objective(LogisticLoss(), lam, noise=-n * v, labels=False)
    rep = minimize(objective, np.zeros(k), method="newton", gtol=1e-10 if tol is None else tol,
                   maxiter=maxiter)
    status = "ok" if rep.convergence == 0 else "nonconvergence"
    info = None
    if status == "ok":
        def solve(coef):          # no row-by-row certificate here: Newton converges or not
            r = minimize(rows.objective(LogisticLoss(), 0.0, noise=-n * v, labels=False), coef,
                         method="newton", gtol=1e-10 if tol is None else tol, maxiter=100)
            return r.x if r.convergence == 0 and np.isfinite(r.x).all() else None

        info = walr_inference(rows.objective(LogisticLoss(), 0.0, labels=False),
                              _largest_noise(rows), rep.x, lam,
                              0.0 if release is None else release.sigma, solve)
    return WALRResult(coef=rep.x, status=status, converged=rep.convergence == 0,
                      inference=info, message=rep.message, iterations=rep.iterations, epochs=0,
                      passes=rep.passes, value=rep.value, grad_norm=rep.grad_norm,
                      columns=columns, solver="newton", lambda_=lam, n=n, k=k,
                      eps=None if release is None else release.eps,
                      delta=None if release is None else release.delta,
                      sigma=None if release is None else release.sigma,
                      mechanism=None if release is None else release.mechanism)
