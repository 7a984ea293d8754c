r"""A scikit-learn transformer for the public map of :func:`privatelr.public_bounds`.

Needs the optional extra ``pip install "privatelr[sklearn]"``; import it from
:mod:`privatelr.sklearn`.

:class:`PublicBoundsTransformer` applies to a table the map that ``dplr(..., bounds=)`` applies
to a formula's main effects, from bounds declared before the data are seen:

* a numeric column ``x`` declared in ``[lo, hi]`` becomes ``(x - m) / h`` with the public
  midpoint ``m = (lo + hi) / 2`` and half-range ``h = (hi - lo) / 2`` (``x / max(|lo|, |hi|)``
  with ``center=False`` in :func:`~privatelr.public_bounds`, or when ``lo == hi``);
* a column with declared levels ``[ref, l2, ..., lK]`` becomes the ``K - 1`` treatment dummies
  of ``l2 ... lK`` (``ref`` is the reference level), each centred at ``1/K`` as
  :func:`~privatelr.public_bounds` centres dummies;
* :attr:`~PublicBoundsTransformer.data_norm` is the bound those columns imply: ``sqrt(number of
  columns declared)`` for ``norm="max"`` (each mapped column adds at most 1 to a row's squared
  norm, a factor's dummies together at most 1), the root mean square under uniform columns for
  ``norm="rms"`` (rows above it are then clipped: :attr:`~PublicBoundsTransformer.clip`) —
  the same numbers as ``dplr(..., bounds=)`` derives.

Nothing is learned from the rows: ``fit`` checks that every input column is declared and every
declared column is in the input, and records the input's width and column names
(scikit-learn's ``n_features_in_`` and ``feature_names_in_``) — public shape information. The
map is a function of the declared bounds alone, so the transformer pickles as its parameters.

A private estimator after it takes its ``data_norm`` from it:
``DPLogisticRegression(data_norm="from_bounds")`` reads :attr:`data_norm` (and :attr:`clip`)
from the step before it in the pipeline, so the two cannot disagree (a number that differs from
the one the bounds give warns). The map is affine, so coefficients fitted on its output convert
exactly into coefficients per unit of the original columns: :meth:`design_matrix`, and
:meth:`privatelr.sklearn.Pipeline.coefficients` / ``confint(scale="data")``.

Examples
--------
>>> import pandas as pd
>>> from privatelr import public_bounds
>>> from privatelr.sklearn import PublicBoundsTransformer
>>> df = pd.DataFrame({"age": [18, 54, 90], "sex": ["F", "M", "M"]})
>>> t = PublicBoundsTransformer(public_bounds({"age": (18, 90)}, levels={"sex": ["F", "M"]}))
>>> t.fit_transform(df).tolist()
[[-1.0, -0.5], [0.0, 0.5], [1.0, 0.5]]
>>> t.get_feature_names_out().tolist(), round(t.data_norm, 6)
(['age', 'sex_M'], 1.414214)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import is_sparse
from ..bounds import NORM_RULES, PublicBounds, public_bounds
from ..design.preprocess import Preprocess

__all__ = ["PublicBoundsTransformer"]


class PublicBoundsTransformer(TransformerMixin, BaseEstimator):
    r"""The centred public map of declared column bounds, as a scikit-learn transformer.

    Each numeric column declared in ``[lo, hi]`` becomes ``(x - midpoint) / half-range``, in
    ``[-1, 1]``; each column with declared levels becomes the centred treatment dummies of its
    non-reference levels; :attr:`data_norm` is the public bound on the mapped rows that
    ``dplr(..., bounds=)`` would derive (:mod:`privatelr.bounds`). ``fit`` learns nothing from
    the rows (it checks the columns against the declaration), so a pipeline built on it stays
    private; ``DPLogisticRegression(data_norm="from_bounds")`` after it uses its ``data_norm``.

    Parameters
    ----------
    bounds : privatelr.PublicBounds or dict, optional
        The declared bounds: the result of :func:`privatelr.public_bounds` (which also sets the
        levels, ``center`` and ``norm``), or a dict ``{column: (lo, hi)}`` (centred, ``norm=
        "max"``). A column is named as in the input: its name for a pandas DataFrame with string
        column names (also inside a :class:`~sklearn.compose.ColumnTransformer`, which passes the
        selected columns with their names), else its position ``0, 1, ...`` in the array this
        transformer receives.
    levels : dict, optional
        ``{column: [reference, level, ...]}``: declared levels of categorical columns, with a
        dict ``bounds`` (or alone). With a :class:`~privatelr.PublicBounds` give the levels to
        :func:`~privatelr.public_bounds` instead.

    Attributes
    ----------
    n_features_in_ : int
        The number of input columns (every one declared).
    feature_names_in_ : ndarray of str
        The input's column names, when it had string column names.

    Notes
    -----
    Every input column must be declared and every declared column must be in the input (a
    ``ValueError`` names the difference): then :attr:`data_norm` counts exactly the columns the
    transformer outputs. Values are not checked against ``[lo, hi]``: a value outside its
    declared range maps outside ``[-1, 1]``, and the private estimator refuses (or, with
    ``clip=True``, clips) a row whose norm exceeds ``data_norm`` — the rule of ``dplr``. A
    value outside a column's declared levels, or a missing or non-numeric value in a numeric
    column, raises ``ValueError``.

    Examples
    --------
    >>> import numpy as np
    >>> t = PublicBoundsTransformer({0: (0, 10), 1: (-5, 5)})
    >>> t.fit_transform(np.array([[0.0, 5.0], [7.5, -2.5]])).tolist()
    [[-1.0, 1.0], [0.5, -0.5]]
    >>> t.get_feature_names_out().tolist(), round(t.data_norm, 6), t.clip
    (['x0', 'x1'], 1.414214, False)
    """

    def __init__(self, bounds=None, *, levels=None):
        self.bounds = bounds
        self.levels = levels

    # -- the declaration (a function of the parameters only) -----------------------------------
    def public_bounds(self) -> PublicBounds:
        """The declared bounds as a :class:`~privatelr.PublicBounds` (checked)."""
        b, levels = self.bounds, self.levels
        if isinstance(b, PublicBounds):
            if levels is not None:
                raise ValueError("levels= goes to privatelr.public_bounds(..., levels=...) when "
                                 "bounds is a PublicBounds; give it there")
            out = b
        elif b is None or isinstance(b, dict):
            if levels is not None and not isinstance(levels, dict):
                raise TypeError(f"levels must be a dict {{column: [level, ...]}}, got "
                                f"{type(levels).__name__}")
            if b:
                out = public_bounds(dict(b), levels=levels)
            elif levels:
                out = PublicBounds(ranges={}, levels=dict(levels))
            else:
                raise ValueError("PublicBoundsTransformer needs declared columns: bounds="
                                 "{column: (lo, hi)} and/or levels={column: [level, ...]} "
                                 "(or bounds=privatelr.public_bounds(...))")
        else:
            raise TypeError(f"bounds must be a privatelr.PublicBounds (privatelr.public_bounds"
                            f"(...)) or a dict {{column: (lo, hi)}}, got {type(b).__name__}")
        if out.norm not in NORM_RULES:
            raise ValueError(f"norm must be one of {NORM_RULES}, got {out.norm!r}")
        for col, lv in out.levels.items():
            if isinstance(lv, (str, bytes)) or not hasattr(lv, "__len__") or len(lv) < 2 or \
                    len(set(lv)) != len(lv):
                raise ValueError(f"levels[{col!r}] must list at least two distinct levels, the "
                                 f"reference first, got {lv!r}")
        clash = set(map(str, out.ranges)) & set(map(str, out.levels))
        if clash:
            raise ValueError(f"column(s) {sorted(clash)} have both a range and levels; declare "
                             "each column once")
        return out

    def _declared(self) -> dict:
        """``{column key: ("num", lo, hi) or ("fct", levels)}`` in declaration order."""
        pb = self.public_bounds()
        out: dict = {str(c): ("num",) + tuple(r) for c, r in pb.ranges.items()}
        out.update({str(c): ("fct", tuple(lv)) for c, lv in pb.levels.items()})
        return out

    def _numeric_map(self, pb: PublicBounds, key: str) -> tuple[float, float]:
        """``(midpoint, divisor)`` of a numeric column: centred, or divided by its magnitude."""
        lo, hi = {str(c): r for c, r in pb.ranges.items()}[key]
        if pb.center and hi > lo:
            return 0.5 * (lo + hi), 0.5 * (hi - lo)
        return 0.0, max(abs(lo), abs(hi))

    @property
    def data_norm(self) -> float:
        """The public bound on the L2 norm of an output row: ``sqrt(number of declared
        columns)`` (``norm="max"``), or the root mean square norm if every column were uniform
        over its declared range and levels (``norm="rms"``; rows above it are clipped) — the
        value ``dplr(..., bounds=)`` derives for the same columns."""
        pb = self.public_bounds()
        if pb.norm == "max":
            return math.sqrt(len(pb.ranges) + len(pb.levels))
        square = 0.0
        for lo, hi in pb.ranges.values():
            mag = max(abs(lo), abs(hi))
            square += 1.0 / 3.0 if pb.center and hi > lo else \
                (lo * lo + lo * hi + hi * hi) / (3.0 * mag * mag)
        for lv in pb.levels.values():
            k = len(lv)
            square += (k - 1.0) ** 2 / k ** 2 if pb.center else (k - 1.0) / k
        return math.sqrt(square) if square > 0 else 1.0

    @property
    def clip(self) -> bool:
        """Whether rows above :attr:`data_norm` are expected and must be clipped
        (``norm="rms"``); a private estimator with ``data_norm="from_bounds"`` clips them."""
        return self.public_bounds().norm == "rms"

    # -- scikit-learn ---------------------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True           # declared levels may be strings
        tags.input_tags.categorical = True
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    def _columns(self, X) -> tuple[Any, list]:
        """``(X as a 2-D table, its column keys)``: names of a DataFrame with string column
        names, else positions."""
        if is_sparse(X):
            raise TypeError("PublicBoundsTransformer takes dense X (a pandas DataFrame or an "
                            "array): the centred map makes every column dense")
        if not hasattr(X, "shape"):
            X = np.asarray(X, dtype=object)
        if len(X.shape) != 2:
            raise ValueError(f"X must be 2-D (rows x columns), got shape {X.shape}")
        names = list(getattr(X, "columns", []))
        if names and all(isinstance(c, str) for c in names):
            return X, names
        return X, [str(j) for j in range(X.shape[1])]

    def _check_columns(self, keys: list) -> dict:
        declared = self._declared()
        missing = [k for k in declared if k not in keys]
        extra = [k for k in keys if k not in declared]
        if missing or extra:
            what = "names" if keys and not all(k.isdigit() for k in keys) else "positions"
            raise ValueError(
                f"PublicBoundsTransformer: the input's columns (by {what}: {keys}) must be "
                f"exactly the declared ones ({list(declared)}): "
                + (f"not declared: {extra}" if extra else "")
                + ("; " if extra and missing else "")
                + (f"declared but not in the input: {missing}" if missing else "")
                + ". Declare every column it receives (bounds={column: (lo, hi)} or "
                  "levels={column: [...]}); in a ColumnTransformer select only the declared "
                  "columns, by name for a DataFrame")
        return declared

    def fit(self, X, y=None):
        """Check the columns against the declaration; learns nothing from the rows.

        Parameters
        ----------
        X : DataFrame or array of shape (n, d)
            The columns to map (each one declared).
        y : ignored

        Returns
        -------
        PublicBoundsTransformer
            ``self``, with ``n_features_in_`` (and ``feature_names_in_``).
        """
        X, keys = self._columns(X)
        self._check_columns(keys)
        validate_data(self, X, reset=True, skip_check_array=True)
        return self

    def transform(self, X):
        """The mapped columns, a float64 array of shape (n, number of output columns).

        Parameters
        ----------
        X : DataFrame or array of shape (n, d)
            The same columns as in ``fit``.

        Returns
        -------
        ndarray
            Numeric columns mapped into ``[-1, 1]``, then the factors' centred dummies, in the
            order of the input's columns.
        """
        check_is_fitted(self, "n_features_in_")
        X, keys = self._columns(X)
        validate_data(self, X, reset=False, skip_check_array=True)
        declared = self._check_columns(keys)
        pb = self.public_bounds()
        blocks = []
        for j, key in enumerate(keys):
            values = X.iloc[:, j] if hasattr(X, "iloc") else X[:, j]
            kind = declared[key]
            if kind[0] == "num":
                try:
                    x = np.asarray(values, dtype=np.float64)
                except (TypeError, ValueError):
                    raise ValueError(f"column {key!r} is declared numeric (a range in bounds=) "
                                     "but holds values that are not numbers") from None
                if not np.isfinite(x).all():
                    raise ValueError(f"column {key!r} holds NaN or infinite values; fill them "
                                     "with a public constant before this step")
                mid, div = self._numeric_map(pb, key)
                blocks.append(((x - mid) / div)[:, None])
            else:
                levels = kind[1]
                labels = np.asarray(values, dtype=object)
                dummies = np.stack([labels == lv for lv in levels], axis=1)
                if not dummies.any(axis=1).all():
                    raise ValueError(f"column {key!r} holds values outside its declared levels "
                                     f"{list(levels)} (or missing values); declare every level "
                                     "up front, or map the others to a declared one first")
                shift = 1.0 / len(levels) if pb.center else 0.0
                blocks.append(dummies[:, 1:].astype(np.float64) - shift)
        n = X.shape[0]
        return np.hstack(blocks) if blocks else np.zeros((n, 0))

    def get_feature_names_out(self, input_features=None):
        """Output column names: a numeric column keeps its name, a factor's dummies are
        ``column_level`` (scikit-learn's ``OneHotEncoder`` style); unnamed input columns are
        ``x0, x1, ...``.

        Parameters
        ----------
        input_features : array-like of str, optional
            The input's column names (default: ``feature_names_in_``, or ``x0, x1, ...``).

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self, "n_features_in_")
        have = getattr(self, "feature_names_in_", None)
        if input_features is None:
            names = list(have) if have is not None else \
                [f"x{j}" for j in range(self.n_features_in_)]
        else:
            names = [str(c) for c in input_features]
            if len(names) != self.n_features_in_ or (have is not None and
                                                     names != list(have)):
                raise ValueError("input_features must be the input's column names "
                                 f"({self.n_features_in_} of them, as given to fit)")
        keys = names if have is not None else [str(j) for j in range(self.n_features_in_)]
        declared = self._declared()
        out = []
        for name, key in zip(names, keys):
            kind = declared[key]
            if kind[0] == "num":
                out.append(name)
            else:
                out.extend(f"{name}_{lv}" for lv in kind[1][1:])
        return np.asarray(out, dtype=object)

    def preprocess(self) -> Preprocess:
        """The map as a :class:`privatelr.design.Preprocess` over the raw design
        ``[1, numeric columns, 0/1 dummies]`` (intercept first): its
        :meth:`~privatelr.design.Preprocess.design_matrix` converts coefficients fitted on the
        output (intercept first) into coefficients per unit of the original columns."""
        check_is_fitted(self, "n_features_in_")
        pb = self.public_bounds()
        declared = self._declared()
        have = getattr(self, "feature_names_in_", None)
        keys = list(have) if have is not None else [str(j) for j in range(self.n_features_in_)]
        divisors: list = []
        shifts: list = []
        for key in keys:
            kind = declared[key]
            if kind[0] == "num":
                mid, div = self._numeric_map(pb, key)
                if mid != 0.0:
                    shifts.append((len(divisors), 0, -mid / div))
                divisors.append(div)
            else:
                for _ in kind[1][1:]:
                    if pb.center:
                        shifts.append((len(divisors), 0, -1.0 / len(kind[1])))
                    divisors.append(1.0)
        return Preprocess(divisors=tuple(divisors), shifts=tuple(shifts) or None)

    def design_matrix(self) -> np.ndarray:
        """``M`` with ``output rows = [1, raw columns] @ M`` (intercept first, factors as 0/1
        dummies): coefficients ``b`` (intercept first) fitted on the output are ``M @ b`` per
        unit of the original columns.

        Examples
        --------
        >>> t = PublicBoundsTransformer({0: (18, 90)}).fit([[30.0], [60.0]])
        >>> t.design_matrix().round(4).tolist()
        [[1.0, -1.5], [0.0, 0.0278]]
        """
        pre = self.preprocess()
        return np.asarray(pre.design_matrix(len(pre.divisors or ()) + 1, True))
