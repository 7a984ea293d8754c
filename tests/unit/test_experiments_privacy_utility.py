"""privatelr.experiments.privacy_utility: documented columns, counts, reproducibility, n_jobs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privatelr import erm
from privatelr.calibration import default_lambda, norm_bound
from privatelr.datasets import load_iris, make_sphere
from privatelr.experiments import COLUMNS, privacy_utility


@pytest.fixture(scope="module")
def data():
    return make_sphere(500, 5, margin=0.05, random_state=0)


def test_columns_and_counts(data):
    X, y = data
    res = privacy_utility(X, y=y, eps_grid=[0.5, 2.0], repeats=3, folds=4, lambda_=0.01,
                          random_state=0)
    assert list(res.columns) == COLUMNS == ["method", "eps", "fold", "repeat", "n_train",
                                            "lambda", "error", "auc", "seconds"]
    assert (res["lambda"] == 0.01).all()                   # a given lambda_ is used as given
    counts = res.groupby("method").size().to_dict()
    assert counts == {"objective": 2 * 3 * 4, "output": 2 * 3 * 4, "nonprivate": 4}
    assert list(dict.fromkeys(res.method)) == ["objective", "output", "nonprivate"]
    assert set(res.n_train) == {375}
    assert res.error.between(0, 1).all() and res.auc.between(0, 1).all()
    assert (res.seconds > 0).all()
    assert np.isinf(res.loc[res.method == "nonprivate", "eps"]).all()


def test_nonprivate_rows_match_the_engine_on_each_fold(data):
    # the non-private error of fold k is the error of erm.fit on the other folds (recomputed by
    # hand from the fold assignment): checks the split and the scoring, not just the shape
    X, y = data
    res = privacy_utility(X, y=y, methods=["nonprivate"], eps_grid=[1.0], repeats=1, folds=5,
                          lambda_=0.01, random_state=3)
    perm = np.random.default_rng(3).permutation(500)
    parts = np.array_split(perm, 5)
    for k in range(5):
        train = np.concatenate(parts[:k] + parts[k + 1:])
        w = erm.fit(X[train], y[train], lambda_=0.01, eps=0).coef
        err = np.mean((X[parts[k]] @ w > 0) != (y[parts[k]] == 1))
        assert res.loc[res.fold == k, "error"].item() == pytest.approx(err)


def test_reproducible_and_independent_of_n_jobs(data):
    X, y = data
    kw = dict(y=y, eps_grid=[0.3, 3.0], repeats=4, folds=3, lambda_=0.01)
    a = privacy_utility(X, random_state=11, n_jobs=1, **kw)
    b = privacy_utility(X, random_state=11, n_jobs=2, **kw)
    c = privacy_utility(X, random_state=12, n_jobs=1, **kw)
    pd.testing.assert_frame_equal(a.drop(columns="seconds"), b.drop(columns="seconds"))
    assert not np.array_equal(a.error.to_numpy(), c.error.to_numpy())
    # repeats are independent draws: the private errors vary across repeats of one fold
    obj = a[(a.method == "objective") & (a.eps == 0.3) & (a.fold == 0)]
    assert obj.error.nunique() > 1


def test_utility_improves_with_eps(data):
    # at eps = 20 the noise is ~200x smaller than at eps = 0.1: the mean error must drop a lot
    X, y = data
    res = privacy_utility(X, y=y, eps_grid=[0.1, 20.0], repeats=5, folds=2, lambda_=0.01,
                          methods=("objective", "output"), random_state=0)
    m = res.groupby(["method", "eps"]).error.mean()
    for method in ("objective", "output"):
        assert m[(method, 20.0)] < m[(method, 0.1)] - 0.1


def test_learning_curve_sizes_and_formula_input():
    iris = load_iris()
    iris[iris.columns[:4]] /= 12
    res = privacy_utility("I(Species == 'setosa') ~ .", iris, eps_grid=[1.0], repeats=2,
                          folds=3, n_train=[30, 90], random_state=0)
    assert sorted(res.n_train.unique()) == [30, 90]
    assert len(res) == 2 * (2 * 3 * 2) + 2 * 3


def test_default_lambda_is_the_package_rule_per_eps_and_training_size(data):
    # without lambda_ every fit uses calibration.default_lambda (dplr's rule) for its own n,
    # its eps and the design's bound B; the non-private fits use the rule's eps = 0 value.
    # 500 rows in 3 folds give training parts of 333 and 334 rows, so a rule computed once
    # (or 1/sqrt(n), the old default: 0.0547 here against 0.0297 at eps = 0.5) fails.
    X, y = data
    res = privacy_utility(X, y=y, eps_grid=[0.5, 4.0], repeats=1, folds=3, random_state=0)
    for row in res.to_dict("records"):
        eps = 0.0 if row["method"] == "nonprivate" else row["eps"]
        assert row["lambda"] == default_lambda(row["n_train"], eps, data_norm=1.0)
    assert set(res.n_train) == {333, 334}
    assert res.loc[res.method == "nonprivate", "lambda"].eq(0.001).all()
    assert res.loc[res.eps == 0.5, "lambda"].max() < 0.6 / np.sqrt(334)


def test_default_lambda_with_a_formula_uses_the_intercept_aware_bound():
    # a formula with an intercept: B = sqrt(data_norm^2 + 1), so the default is twice R's at
    # data_norm = 1 (B^2 = 2), exactly what dplr uses on the same rows
    iris = load_iris()
    iris[iris.columns[:4]] /= 12
    res = privacy_utility("I(Species == 'setosa') ~ .", iris, eps_grid=[1.0], repeats=1,
                          folds=3, methods=["objective"], random_state=0)
    B = norm_bound(1.0, True)
    assert res["lambda"].tolist() == [default_lambda(100, 1.0, data_norm=B)] * 3
    assert res["lambda"].iloc[0] == pytest.approx(2 * default_lambda(100, 1.0))


def test_bad_arguments(data):
    X, y = data
    with pytest.raises(ValueError, match="methods"):
        privacy_utility(X, y=y, methods=["laplace"])
    with pytest.raises(TypeError, match="y"):
        privacy_utility(X)
    with pytest.raises(ValueError, match="eps_grid"):
        privacy_utility(X, y=y, eps_grid=[0.0])
    with pytest.raises(ValueError, match="n_train"):
        privacy_utility(X, y=y, n_train=10_000)
    with pytest.raises(ValueError, match="n_jobs"):
        privacy_utility(X, y=y, n_jobs=0)
    with pytest.raises(ValueError, match="two classes"):
        privacy_utility(X, y=np.arange(500))
    with pytest.raises(TypeError, match="data is required"):
        privacy_utility("y ~ x")
    with pytest.raises(ValueError, match="folds"):
        privacy_utility(X, y=y, folds=1)
    assert math.isfinite(privacy_utility(X, y=y, eps_grid=1.0, repeats=1, folds=2,
                                         methods="objective", random_state=0).error.sum())
