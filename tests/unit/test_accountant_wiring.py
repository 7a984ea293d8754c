"""accountant= on every private entry point: checked before the data are read, spent once."""

import numpy as np
import pandas as pd
import pytest

from privatelr import (BudgetExceededError, LogisticRegressionDP, PrivacyAccountant, dplr_tune,
                       noisy_dot_product, tune_classification_model, walr)


class Untouchable:
    """Data that fails loudly if anything reads it."""

    def __getattr__(self, name):
        raise AssertionError(f"the data were read ({name}) although the budget was exceeded")

    def __array__(self, *a, **k):
        raise AssertionError("the data were converted although the budget was exceeded")

    def __len__(self):
        raise AssertionError("the data were measured although the budget was exceeded")


rng = np.random.default_rng(0)
X = rng.uniform(0, 1, size=(120, 2))
y = (X[:, 0] + 0.2 * rng.standard_normal(120) > 0.5).astype(int)
DF = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": y})


def test_model_fit_spends_and_refuses_before_reading():
    acc = PrivacyAccountant(1.5)
    LogisticRegressionDP(eps=1.0, gamma=1.0).fit(X, y, [1, 1], [0, 0], random_state=0,
                                                 accountant=acc)
    assert acc.spent()[0] == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        LogisticRegressionDP(eps=1.0, gamma=1.0).fit(Untouchable(), Untouchable(), [1, 1], [0, 0],
                                                     accountant=acc)
    assert acc.spent()[0] == pytest.approx(1.0)


def test_tuning_is_one_spend():
    acc = PrivacyAccountant(1.0)
    models = [LogisticRegressionDP(eps=1.0, gamma=g) for g in (0.1, 1.0, 10.0)]
    tune_classification_model(models, X, y, [1, 1], [0, 0], random_state=0, accountant=acc)
    assert acc.spent()[0] == pytest.approx(1.0) and len(acc.ledger) == 1
    with pytest.raises(BudgetExceededError):
        tune_classification_model([LogisticRegressionDP(eps=1.0, gamma=1.0)], Untouchable(),
                                  Untouchable(), [1, 1], [0, 0], accountant=acc)


def test_dplr_tune_is_one_spend():
    acc = PrivacyAccountant(2.0)
    dplr_tune("y ~ a + b", DF, lambdas=(0.01, 0.1), eps=1.0, clip=True, random_state=0,
              accountant=acc)
    assert acc.spent()[0] == pytest.approx(1.0) and len(acc.ledger) == 1
    with pytest.raises(BudgetExceededError):
        dplr_tune("y ~ a + b", Untouchable(), eps=1.5, accountant=acc)


def test_release_spends_eps_and_delta():
    acc = PrivacyAccountant(1.0, delta=1e-5)
    noisy_dot_product(X, y, eps=0.5, delta=5e-6, random_state=0, accountant=acc)
    # a Gaussian release is recorded with its Renyi curve; alone, it reports its own (eps,
    # delta) or better at the budget's delta
    (entry,) = acc.ledger
    assert (entry.eps, entry.delta) == (0.5, 5e-6) and entry.rdp is not None
    assert acc.spent()[0] <= 0.5 and acc.spent()[1] == 1e-5
    with pytest.raises(BudgetExceededError):
        noisy_dot_product(Untouchable(), Untouchable(), eps=0.5, delta=6e-6, accountant=acc)
    walr("y ~ a + b", DF, eps=0.5, delta=5e-6, lambda_=1e-3, random_state=0, accountant=acc)
    assert acc.spent()[0] <= 1.0 and len(acc.ledger) == 2
    with pytest.raises(BudgetExceededError):
        walr("y ~ a + b", Untouchable(), eps=0.9, delta=1e-9, accountant=acc)


def test_nonprivate_requests_are_refused_under_an_accountant():
    acc = PrivacyAccountant(1.0)
    with pytest.raises(ValueError, match="non-private"):
        LogisticRegressionDP(eps=float("inf"), gamma=1.0).fit(X, y, [1, 1], [0, 0], accountant=acc)
    assert acc.spent()[0] == 0


def test_dplr_spends_through_the_engine_and_refuses_before_reading():
    from privatelr import dplr

    acc = PrivacyAccountant(1.0)
    dplr("y ~ a + b", DF, eps=0.6, clip=True, random_state=0, accountant=acc)
    assert acc.spent()[0] == pytest.approx(0.6) and len(acc.ledger) == 1
    with pytest.raises(BudgetExceededError):
        dplr("y ~ a + b", Untouchable(), eps=0.6, accountant=acc)
    with pytest.raises(ValueError, match="non-private"):
        dplr("y ~ a + b", DF, eps=0, accountant=acc)
    assert acc.spent()[0] == pytest.approx(0.6)
