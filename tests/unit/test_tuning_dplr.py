"""Formula-level private tuning: privatelr.tuning.dplr_tune over dplr fits."""

import numpy as np
import pandas as pd
import pytest

import privatelr.tuning as tuning
from privatelr import dplr
from privatelr.datasets import load_iris
from privatelr.results import TuningRecord
from privatelr.tuning import dplr_tune, dppack_split

FORMULA = "I(Species == 'virginica') ~ Petal.Length + Petal.Width"


@pytest.fixture
def iris():
    df = load_iris().sample(frac=1.0, random_state=3).reset_index(drop=True)  # shuffled rows
    df[df.columns[:4]] /= 10  # public rescaling: covariate rows inside the unit ball
    return df


def test_candidates_are_dplr_fits_on_their_groups(iris):
    lambdas = (0.001, 0.01, 0.1)
    best = dplr_tune(FORMULA, iris, lambdas=lambdas, eps=0, clip=True, random_state=0)
    j = best.tuning.chosen
    rows = [i for i in range(len(iris)) if i % 4 == j]  # DPpack groups by hand, m + 1 = 4
    ref = dplr(FORMULA, iris.iloc[rows].reset_index(drop=True), lambda_=lambdas[j], eps=0,
               clip=True)
    np.testing.assert_allclose(best.coefficients.to_numpy(), ref.coefficients.to_numpy(),
                               rtol=1e-10)
    assert best.lambda_ == lambdas[j] and best.n == len(rows)
    assert best.tuning == TuningRecord(candidates=lambdas, chosen=j, eps=0.0,
                                       group_sizes=(38, 38, 37, 37))


def test_utilities_are_minus_validation_errors(iris, monkeypatch):
    seen = {}

    def spy(utility, eps, sensitivity, measure=None, random_state=None):
        seen.update(utility=np.asarray(utility), eps=eps, sensitivity=sensitivity)
        return 0

    monkeypatch.setattr(tuning, "exponential_mechanism", spy)
    lambdas = (0.001, 5.0)
    best = dplr_tune(FORMULA, iris, lambdas=lambdas, eps=2.0, clip=True, random_state=1)
    assert best.tuning.chosen == 0 and seen["eps"] == 2.0 and seen["sensitivity"] == 1.0
    # recompute the errors independently with the public predict(type="class")
    train, valid = dppack_split(len(iris), 2)
    rng = np.random.default_rng(1)
    truth = np.where(iris.iloc[valid]["Species"] == "virginica", True, False)
    expected = []
    for lam, rows in zip(lambdas, train):
        fit = dplr(FORMULA, iris.iloc[rows].reset_index(drop=True), lambda_=lam, eps=2.0,
                   clip=True, random_state=rng)
        pred = fit.predict(iris.iloc[valid], type="class").astype(bool)
        expected.append(-np.count_nonzero(pred != truth))
    np.testing.assert_array_equal(seen["utility"], expected)


def test_large_eps_picks_fewest_errors(iris):
    # lambda = 1e4 shrinks the fit to p ≈ 0.5 everywhere with the (penalised) intercept at
    # about -(1/2)·mean(y·1) < 0: every validation row is called "not virginica" (≈ 1/3
    # errors), while lambda = 1e-3 separates the classes (a few errors). At eps = 500 the
    # exponential mechanism picks the worse one with probability < exp(-500·5/2).
    picks = [dplr_tune(FORMULA, iris, lambdas=(1e4, 1e-3), eps=500.0, clip=True,
                       random_state=s).tuning.chosen for s in range(3)]
    assert picks == [1, 1, 1]


def test_reproducible_and_returns_private_fit(iris):
    a = dplr_tune(FORMULA, iris, lambdas=(0.01, 0.1), eps=1.0, clip=True, random_state=7)
    b = dplr_tune(FORMULA, iris, lambdas=(0.01, 0.1), eps=1.0, clip=True, random_state=7)
    np.testing.assert_array_equal(a.coefficients.to_numpy(), b.coefficients.to_numpy())
    assert a.tuning == b.tuning and a.method == "objective"
    out = dplr_tune(FORMULA, iris, lambdas=(0.01, 0.1), eps=1.0, op=False, clip=True,
                    random_state=7)
    assert out.method == "output"
    assert not hasattr(out.tuning, "errors")


def test_dict_data_and_validation(iris):
    data = {c: iris[c].to_numpy() for c in iris.columns}
    assert dplr_tune(FORMULA, data, lambdas=[0.1], eps=1.0, clip=True,
                     random_state=0).tuning.chosen == 0
    with pytest.raises(ValueError, match="empty"):
        dplr_tune(FORMULA, iris, lambdas=())
    with pytest.raises(ValueError, match=r"lambdas\[1\]"):
        dplr_tune(FORMULA, iris, lambdas=(0.1, -1.0))
    with pytest.raises(TypeError, match="lambdas"):
        dplr_tune(FORMULA, iris, lambdas=0.1)
    with pytest.raises(TypeError, match="data"):
        dplr_tune(FORMULA, iris.to_numpy(), lambdas=(0.1,))
    with pytest.raises(ValueError, match="eps"):
        dplr_tune(FORMULA, iris, lambdas=(0.1,), eps=-1.0)
    with pytest.raises(ValueError, match="rows"):
        dplr_tune(FORMULA, iris.head(2), lambdas=(0.1, 1.0))
