"""The accountant's Renyi composition of Gaussian releases (dp-accounting's conversion).

Soundness is checked against an exact answer: k Gaussian mechanisms with noise multiplier z
compose to exactly one Gaussian mechanism with multiplier z/sqrt(k), whose (eps, delta) profile is
known in closed form (privatelr.mechanisms.gaussian_delta, Balle & Wang). The Renyi route must
never report less than that exact eps (it would then claim more privacy than holds) and, for
these sizes, not much more (at most 30%: RDP's conversion loss at delta = 1e-6 is about 10-20%).
A wrong Renyi curve (e.g. alpha/z^2 instead of alpha/(2 z^2)) fails one side or the other.
"""

from __future__ import annotations

import math

import pytest
from scipy.optimize import brentq

from privatelr import BudgetExceededError, PrivacyAccountant, spend_parallel
from privatelr.mechanisms import gaussian_delta, gaussian_sigma_analytic, rdp_gaussian, rdp_pure


def _exact_eps(z: float, delta: float) -> float:
    """eps of the Gaussian mechanism with sigma/Delta = z at delta (root of the exact profile)."""
    return brentq(lambda e: gaussian_delta(z, 1.0, e) - delta, 1e-9, 200.0, xtol=1e-13)


@pytest.mark.parametrize("z, k", [(2.0, 1), (5.0, 20), (20.0, 300)])
def test_gaussian_composition_is_sound_and_tight(z, k):
    delta = 1e-6
    acc = PrivacyAccountant(1e6, delta=1e-3)
    one_eps = _exact_eps(z, 1e-7)
    for _ in range(k):
        acc.spend(one_eps, 1e-7, rdp=lambda orders: rdp_gaussian(z, orders))
    exact = _exact_eps(z / math.sqrt(k), delta)
    got = acc.spent(delta)[0]
    assert exact <= got <= 1.3 * exact
    if k > 1:                                     # far below basic composition
        assert got < 0.5 * k * one_eps


def test_pure_ledgers_add_exactly_and_mixed_ledgers_take_the_better_composition():
    acc = PrivacyAccountant(10.0, delta=1e-5)
    acc.spend(0.5)
    acc.spend(0.25)
    assert acc.spent() == (0.75, 0.0)
    sigma = gaussian_sigma_analytic(1.0, 1.0, 1e-7)
    for _ in range(10):
        acc.spend(1.0, 1e-7, rdp=lambda orders: rdp_gaussian(sigma, orders))
    eps, delta = acc.spent()
    assert delta == 1e-5
    assert 0.75 < eps < 0.75 + 10.0 and eps < 6.0
    # a smaller delta costs more eps; below the approximate spends' own delta nothing holds
    assert acc.spent(1e-8)[0] > eps


def test_gaussian_spends_need_a_delta_budget():
    acc = PrivacyAccountant(5.0)
    with pytest.raises(BudgetExceededError, match="needs a budget with delta > 0"):
        acc.spend(1.0, 1e-7, rdp=lambda orders: rdp_gaussian(5.0, orders))
    assert acc.ledger == ()


def test_budget_is_checked_on_the_composition():
    acc = PrivacyAccountant(2.0, delta=1e-5)
    curve = (lambda orders: rdp_gaussian(3.0, orders))
    spent = 0
    with pytest.raises(BudgetExceededError, match="composition"):
        while True:
            acc.spend(1.0, 1e-7, rdp=curve)
            spent += 1
    assert spent >= 2 and acc.spent()[0] <= 2.0 * (1 + 1e-12)
    assert len(acc.ledger) == spent


def test_spend_parallel_charges_the_largest_part():
    acc = PrivacyAccountant(1.0)
    entry = spend_parallel(acc, [(0.3, 0.0), (0.7, 0.0), (0.5, 0.0)], note="regions")
    assert entry.eps == 0.7 and acc.spent() == (0.7, 0.0)
    acc = PrivacyAccountant(10.0, delta=1e-5)
    spend_parallel(acc, [(1.0, 1e-7, lambda o: rdp_gaussian(4.0, o)),
                         (2.0, 1e-7, lambda o: rdp_gaussian(2.0, o))])
    (e,) = acc.ledger
    assert e.rdp == tuple(rdp_gaussian(2.0, list(acc_orders())))
    with pytest.raises(ValueError, match="every part"):
        spend_parallel(acc, [(1.0, 0.0), (1.0, 1e-7, lambda o: rdp_gaussian(4.0, o))])


def acc_orders():
    from privatelr.accountant import RDP_ORDERS
    return RDP_ORDERS


def test_rdp_of_pure_dp_is_randomized_response():
    # randomized response at eps is eps-DP; its Renyi divergence at order 2 by hand
    e = 0.8
    p = math.exp(e) / (1 + math.exp(e))
    by_hand = math.log(p ** 2 / (1 - p) + (1 - p) ** 2 / p)
    assert rdp_pure(e, [2.0])[0] == pytest.approx(by_hand, rel=1e-12)
    assert (rdp_pure(e, acc_orders()) <= e + 1e-15).all()
