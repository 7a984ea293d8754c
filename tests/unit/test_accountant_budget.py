"""PrivacyAccountant: sequential composition, refusal before spending, and erm.fit wiring."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from privatelr import BudgetExceededError, PrivacyAccountant, erm
from privatelr.accountant import Spend, require_budget


def test_accountant_adds_eps_and_delta_and_keeps_a_ledger():
    acc = PrivacyAccountant(2.0, delta=1e-5)
    first = acc.spend(0.5, note="model A")
    acc.spend(1.0, 4e-6, note="model B")
    assert first == Spend(eps=0.5, delta=0.0, note="model A")
    assert acc.spent() == (1.5, 4e-6)
    assert acc.remaining == (0.5, pytest.approx(6e-6))
    assert [e.note for e in acc.ledger] == ["model A", "model B"]
    assert (acc.epsilon, acc.delta) == (2.0, 1e-5)
    assert "spent eps=1.5" in repr(acc)


def test_accountant_refuses_before_spending():
    acc = PrivacyAccountant(1.0, delta=1e-6)
    acc.spend(0.75)
    with pytest.raises(BudgetExceededError, match="remaining eps=0.25"):
        acc.check(0.5)
    with pytest.raises(BudgetExceededError, match="eps spent 0.75 \\+ 0.5 > budget 1"):
        acc.spend(0.5, note="too much")
    with pytest.raises(BudgetExceededError, match="delta spent 0 \\+ 2e-06 > budget 1e-06"):
        acc.spend(0.1, 2e-6)
    assert acc.spent() == (0.75, 0.0) and len(acc.ledger) == 1
    assert acc.can_spend(0.25) and not acc.can_spend(0.26)
    acc.check(0.25, 1e-6)  # exactly the rest fits
    acc.spend(0.25, 1e-6)
    assert acc.remaining == (0.0, 0.0)
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-9)
    acc.spend(0.0, note="post-processing")  # free operations still go in the ledger
    assert len(acc.ledger) == 3


@pytest.mark.parametrize("k", [3, 7, 10])
def test_accountant_budget_split_in_equal_parts_can_be_spent_in_full(k):
    acc = PrivacyAccountant(1.0)
    for _ in range(k):
        acc.spend(1.0 / k)
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-6)


def test_accountant_zero_budget_allows_only_free_spends():
    acc = PrivacyAccountant(0.0)
    acc.spend(0.0)
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-12)


@pytest.mark.parametrize("args, exc, match", [
    ((-1.0,), ValueError, "epsilon must be >= 0"),
    ((float("nan"),), ValueError, "epsilon must be a number"),
    ((float("inf"),), ValueError, "epsilon must be finite"),
    (("1",), TypeError, "epsilon must be a real number"),
    ((True,), TypeError, "epsilon"),
    ((1.0, 1.0), ValueError, "delta must be < 1"),
    ((1.0, -1e-9), ValueError, "delta must be >= 0"),
])
def test_accountant_rejects_bad_budgets(args, exc, match):
    with pytest.raises(exc, match=match):
        PrivacyAccountant(*args)


@pytest.mark.parametrize("args, kwargs, exc, match", [
    ((float("inf"),), {}, ValueError, "non-private computation"),
    ((-0.1,), {}, ValueError, "eps must be >= 0"),
    ((float("nan"),), {}, ValueError, "eps must be a number"),
    (("0.1",), {}, TypeError, "eps must be a real number"),
    ((0.1, -1e-9), {}, ValueError, "delta must be >= 0"),
    ((0.1, 1.0), {}, ValueError, "delta must be < 1"),
    ((0.1,), {"note": 3}, TypeError, "note must be a string"),
])
def test_accountant_rejects_bad_spends(args, kwargs, exc, match):
    acc = PrivacyAccountant(1.0, 1e-6)
    with pytest.raises(exc, match=match):
        acc.spend(*args, **kwargs)
    assert acc.ledger == ()


def test_accountant_is_thread_safe():
    # 8 threads race to spend 0.01 a hundred times each on a budget of 5: exactly 500 succeed.
    acc = PrivacyAccountant(5.0)
    refused = []

    def worker():
        for _ in range(100):
            try:
                acc.spend(0.01)
            except BudgetExceededError:
                refused.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(acc.ledger) == 500 and len(refused) == 300
    assert acc.spent()[0] == pytest.approx(5.0)


def test_require_budget_checks_type_and_nonprivate_requests():
    with pytest.raises(TypeError, match="accountant must be a privatelr.PrivacyAccountant"):
        require_budget(1.0, 0.5)
    for eps in (0.0, float("inf")):
        with pytest.raises(ValueError, match="non-private fit"):
            require_budget(PrivacyAccountant(1.0), eps)
    with pytest.raises(BudgetExceededError):
        require_budget(PrivacyAccountant(1.0), 2.0)


# -- erm.fit ------------------------------------------------------------------------------------
_rng = np.random.default_rng(0)
X = np.c_[np.full(40, 0.5), _rng.uniform(-0.5, 0.5, size=(40, 2))]
Y = (X[:, 1] > 0).astype(int)


class _Untouchable:
    """A design matrix that fails the test if anything tries to read it."""

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data were read")

    def to_numpy(self):
        raise AssertionError("the data were read")


def test_erm_fit_spends_eps_and_matches_the_fit_without_accountant():
    acc = PrivacyAccountant(1.0)
    a = erm.fit(X, Y, lambda_=0.1, eps=0.4, random_state=1, accountant=acc)
    b = erm.fit(X, Y, lambda_=0.1, eps=0.4, random_state=1)
    np.testing.assert_array_equal(a.coef, b.coef)
    erm.fit(X, Y, lambda_=0.1, eps=0.6, method="output", random_state=2, accountant=acc)
    assert acc.spent() == (1.0, 0.0)
    assert [e.note for e in acc.ledger] == ["objective perturbation, logistic loss",
                                            "output perturbation, logistic loss"]
    with pytest.raises(BudgetExceededError):
        erm.fit(X, Y, lambda_=0.1, eps=0.1, random_state=3, accountant=acc)


def test_erm_fit_refuses_before_reading_the_data():
    acc = PrivacyAccountant(0.5)
    with pytest.raises(BudgetExceededError):
        erm.fit(_Untouchable(), Y, lambda_=0.1, eps=1.0, accountant=acc)
    with pytest.raises(AssertionError, match="the data were read"):  # the probe works
        erm.fit(_Untouchable(), Y, lambda_=0.1, eps=0.1, accountant=acc)
    assert acc.ledger == ()


@pytest.mark.parametrize("eps", [0.0, float("inf")])
def test_erm_fit_nonprivate_with_accountant_is_refused(eps):
    acc = PrivacyAccountant(1.0)
    with pytest.raises(ValueError, match="non-private fit"):
        erm.fit(X, Y, lambda_=0.1, eps=eps, accountant=acc)
    assert acc.ledger == ()
    assert erm.fit(X, Y, lambda_=0.1, eps=eps).method == "nonprivate"  # fine without one


@pytest.mark.parametrize("kwargs", [dict(lambda_=-1.0), dict(method="laplace"),
                                    dict(lambda_=1e-6, small_eps="error")])
def test_erm_fit_invalid_arguments_spend_nothing(kwargs):
    acc = PrivacyAccountant(1.0)
    args = dict(lambda_=0.1, eps=0.5, accountant=acc)
    args.update(kwargs)
    with pytest.raises(ValueError):
        erm.fit(X, Y, **args)
    assert acc.ledger == ()


def test_erm_fit_rejects_a_non_accountant():
    with pytest.raises(TypeError, match="accountant must be a privatelr.PrivacyAccountant"):
        erm.fit(X, Y, lambda_=0.1, eps=0.5, accountant={"epsilon": 1.0})
