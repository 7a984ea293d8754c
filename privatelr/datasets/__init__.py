"""R's data sets shipped with privatelr (read from the installed package, never from the network).

Examples
--------
>>> from privatelr.datasets import load_iris
>>> load_iris().shape
(150, 5)
"""

from __future__ import annotations

from importlib.resources import files

import pandas as pd

__all__ = ["load_iris", "load_mtcars", "data_path"]

_IRIS_LEVELS = ["setosa", "versicolor", "virginica"]


def data_path(name: str):
    """Path-like handle of a file shipped in the package's data folder (``datasets/``)."""
    return files("privatelr._data").joinpath(name)


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
