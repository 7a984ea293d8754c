"""R's data sets shipped with privatelr (read from the installed package, never from the network).

Examples
--------
>>> from privatelr.datasets import load_iris
>>> load_iris().shape
(150, 5)
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["load_iris", "load_mtcars", "data_path", "make_sphere", "make_health",
           "HEALTH_COEFFICIENTS", "HEALTH_RANGES", "HEALTH_LEVELS"]

_IRIS_LEVELS = ["setosa", "versicolor", "virginica"]


def data_path(name: str):
    """Path-like handle of a file shipped in the package's data folder (``datasets/``).

    Installed, the folder is the package ``privatelr._data``; in a source checkout imported
    without installing (e.g. ``python -m privatelr.cli`` run from the repository root) it is
    the repository's ``datasets/`` folder.
    """
    try:
        return files("privatelr._data").joinpath(name)
    except ModuleNotFoundError:
        source = Path(__file__).resolve().parents[2] / "datasets"
        if source.is_dir():
            return source / name
        raise


def load_iris() -> pd.DataFrame:
    """Edgar Anderson's iris data exactly as R holds it.

    Columns ``Sepal.Length``, ``Sepal.Width``, ``Petal.Length``, ``Petal.Width`` (float) and
    ``Species``, a pandas Categorical with R's level order (setosa, versicolor, virginica).
    """
    with data_path("iris.csv").open("r") as fh:
        df = pd.read_csv(fh)
    df["Species"] = pd.Categorical(df["Species"], categories=_IRIS_LEVELS)
    return df


def load_mtcars() -> pd.DataFrame:
    """R's mtcars: 32 cars, 11 numeric columns, R's row names as the index (named ``model``)."""
    with data_path("mtcars.csv").open("r") as fh:
        df = pd.read_csv(fh, index_col="model")
    return df


def make_sphere(n: int, d: int, margin: float = 0.0, noise_band: float | None = None,
                flip: float = 0.2, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Simulation designs of Chaudhuri & Monteleoni (NIPS 2008, Section 6).

    Points are uniform on the unit sphere :math:`S^{d-1}` (a standard normal vector divided by
    its norm, so every row has norm exactly 1 and needs no clipping) and labelled by the
    hyperplane through the origin with normal :math:`e_1`: ``y = 1`` when :math:`x_1 > 0`
    (:math:`x_1 = 0` has probability zero). The labelling depends on the angle only, as the
    paper assumes; the methods compared are rotation invariant, so the choice of normal is
    immaterial.

    * ``margin > 0`` (design "Uniform, margin = 0.03"): no mass within ``margin`` of the
      hyperplane — points with :math:`|x_1| < \text{margin}` are rejected (vectorised
      rejection sampling in batches), i.e. the uniform law conditioned on
      :math:`|x_1| \ge \text{margin}`.
    * ``noise_band`` (design "Unseparable: uniform with noise 0.2 in margin 0.1"): inside the
      band :math:`|x_1| \le \text{noise\_band}` each label is flipped independently with
      probability ``flip``; outside the band labels are clean. ``flip`` is ignored when
      ``noise_band`` is None.

    Parameters
    ----------
    n : int
        Number of points (>= 1).
    d : int
        Dimension (>= 2).
    margin : float
        Empty band half-width in [0, 1).
    noise_band : float, optional
        Half-width of the band where labels are flipped, in (0, 1].
    flip : float
        Flip probability inside the band, in [0, 1].
    random_state : int, numpy.random.Generator or None
        One Generator drives the points and the flips.

    Returns
    -------
    X : (n, d) ndarray
        Rows on the unit sphere.
    y : (n,) ndarray of int
        Labels 0/1.

    Examples
    --------
    >>> X, y = make_sphere(1000, 10, margin=0.03, random_state=0)
    >>> X.shape, bool(np.abs(X[:, 0]).min() >= 0.03), bool(np.allclose((X * X).sum(1), 1))
    ((1000, 10), True, True)
    >>> X, y = make_sphere(1000, 10, noise_band=0.1, flip=0.2, random_state=0)
    >>> bool(((X[:, 0] > 0) != y)[np.abs(X[:, 0]) > 0.1].any())   # clean outside the band
    False
    """
    from .._validation import check_int, check_real
    from ..mechanisms import check_random_state

    n = check_int("n", n, low=1)
    d = check_int("d", d, low=2)
    margin = check_real("margin", margin, low=0.0, high=1.0, high_open=True)
    if noise_band is not None:
        noise_band = check_real("noise_band", noise_band, low=0.0, high=1.0, low_open=True)
    flip = check_real("flip", flip, low=0.0, high=1.0)
    rng = check_random_state(random_state)

    chunks, have = [], 0
    while have < n:
        need = n - have
        # acceptance is P(|x_1| >= margin) >= 1 - margin * sqrt(d) roughly; oversample a little
        batch = int(min(max(1.25 * need / max(1.0 - 2.0 * margin * np.sqrt(d), 0.05), 64), 4e6))
        Z = rng.standard_normal((batch, d))
        Z /= np.sqrt(np.einsum("ij,ij->i", Z, Z))[:, None]
        if margin > 0:
            Z = Z[np.abs(Z[:, 0]) >= margin]
        chunks.append(Z[:need])
        have += chunks[-1].shape[0]
    X = np.ascontiguousarray(np.vstack(chunks))
    y = (X[:, 0] > 0).astype(np.int64)
    if noise_band is not None and flip > 0:
        in_band = np.abs(X[:, 0]) <= noise_band
        flips = in_band & (rng.uniform(size=n) < flip)
        y[flips] = 1 - y[flips]
    return X, y


#: The codebook of :func:`make_health`: public ranges of its numeric columns ...
HEALTH_RANGES = {"age": (18.0, 90.0), "bmi": (15.0, 50.0)}
#: ... and the declared levels of its factors (reference level first).
HEALTH_LEVELS = {"sex": ["F", "M"], "smoker": ["no", "yes"],
                 "region": ["north", "south", "east", "west"]}
#: The true coefficients of :func:`make_health`'s logistic model in the data's own units (per
#: year of age, per unit of bmi; the factors' treatment contrasts against the first level), in
#: the order of ``y ~ age + bmi + sex + smoker + region``.
HEALTH_COEFFICIENTS = {"(Intercept)": -5.16, "age": 0.04, "bmi": 0.08, "sexM": 0.3,
                       "smokeryes": 0.7, "regionsouth": 0.2, "regioneast": -0.2,
                       "regionwest": 0.4}


def make_health(n: int, random_state=None):
    r"""Simulated health records: a realistic table for private logistic regression.

    Columns ``age`` (years, normal with mean 50 and sd 15, clipped to the codebook's
    [18, 90]), ``bmi`` (normal with mean 27 and sd 5 plus 0.03 per year of age above 50 —
    so the two are correlated — clipped to [15, 50]), ``sex`` (F/M, half each), ``smoker``
    (no/yes, 20 % yes), ``region`` (north/south/east/west, a quarter each) — the factors are
    pandas Categoricals with the declared levels of :data:`HEALTH_LEVELS` — and the outcome
    ``y`` (0/1, about 37 % ones), drawn from the logistic model

    .. math:: \operatorname{logit} P(y = 1) = -1 + 0.04(\text{age} - 50)
              + 0.08(\text{bmi} - 27) + 0.3\,[\text{M}] + 0.7\,[\text{smoker}]
              + 0.2\,[\text{south}] - 0.2\,[\text{east}] + 0.4\,[\text{west}]

    on the clipped values, so the model of ``y ~ age + bmi + sex + smoker + region`` holds
    exactly with the true coefficients (data units; :data:`HEALTH_COEFFICIENTS`)

    ============  ======  =====  =====  ==========  ===========  ==========  ==========
    (Intercept)   age     bmi    sexM   smokeryes   regionsouth  regioneast  regionwest
    ============  ======  =====  =====  ==========  ===========  ==========  ==========
    -5.16         0.04    0.08   0.3    0.7         0.2          -0.2        0.4
    ============  ======  =====  =====  ==========  ===========  ==========  ==========

    (the intercept is :math:`-1 - 0.04\cdot 50 - 0.08\cdot 27`). The codebook's public
    bounds are :data:`HEALTH_RANGES` and :data:`HEALTH_LEVELS`, ready for
    :func:`privatelr.public_bounds`.

    Parameters
    ----------
    n : int
        Number of records (>= 1).
    random_state : int, numpy.random.Generator or None

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> from privatelr import public_bounds
    >>> from privatelr.datasets import HEALTH_LEVELS, HEALTH_RANGES, make_health
    >>> df = make_health(1000, random_state=0)
    >>> list(df.columns), list(df.region.cat.categories)
    (['age', 'bmi', 'sex', 'smoker', 'region', 'y'], ['north', 'south', 'east', 'west'])
    >>> pb = public_bounds(HEALTH_RANGES, levels=HEALTH_LEVELS)
    """
    from .._validation import check_int
    from ..mechanisms import check_random_state

    n = check_int("n", n, low=1)
    rng = check_random_state(random_state)
    lo_a, hi_a = HEALTH_RANGES["age"]
    lo_b, hi_b = HEALTH_RANGES["bmi"]
    age = np.clip(rng.normal(50.0, 15.0, n), lo_a, hi_a)
    bmi = np.clip(rng.normal(27.0, 5.0, n) + 0.03 * (age - 50.0), lo_b, hi_b)
    male = rng.uniform(size=n) < 0.5
    smoker = rng.uniform(size=n) < 0.2
    region = rng.integers(0, 4, n)
    c = HEALTH_COEFFICIENTS
    eta = (c["(Intercept)"] + c["age"] * age + c["bmi"] * bmi + c["sexM"] * male
           + c["smokeryes"] * smoker
           + np.array([0.0, c["regionsouth"], c["regioneast"], c["regionwest"]])[region])
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)

    def factor(codes, name):
        return pd.Categorical.from_codes(codes.astype(np.int64), HEALTH_LEVELS[name])

    return pd.DataFrame({"age": age, "bmi": bmi, "sex": factor(male, "sex"),
                         "smoker": factor(smoker, "smoker"), "region": factor(region, "region"),
                         "y": y})
