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

import numpy as np
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
    entry = spend_parallel(acc, [(0.3, 0.0), (0.7, 0.0), (0.5, 0.0)], by="positions",
                           note="thirds of the rows")
    assert entry.eps == 0.7 and acc.spent() == (0.7, 0.0)
    acc = PrivacyAccountant(10.0, delta=1e-5)
    spend_parallel(acc, [(1.0, 1e-7, lambda o: rdp_gaussian(4.0, o)),
                         (2.0, 1e-7, lambda o: rdp_gaussian(2.0, o))], by="positions")
    (e,) = acc.ledger
    assert e.rdp == tuple(rdp_gaussian(2.0, list(acc_orders())))
    with pytest.raises(ValueError, match="every part"):
        spend_parallel(acc, [(1.0, 0.0), (1.0, 1e-7, lambda o: rdp_gaussian(4.0, o))],
                       by="positions")


def test_spend_parallel_needs_to_be_told_how_the_rows_were_split():
    """Issue 27, item 3: a split by a data value is charged by sequential composition, and the
    caller must say which split it is (no default that undercharges)."""
    acc = PrivacyAccountant(2.0, delta=1e-5)
    with pytest.raises(TypeError, match="by"):
        spend_parallel(acc, [(0.3, 0.0), (0.7, 0.0)], note="one model per region")
    for bad in ("regions", None, "position"):
        with pytest.raises(ValueError, match="'positions'.*'values'"):
            spend_parallel(acc, [(0.3, 0.0), (0.7, 0.0)], by=bad)
    assert acc.ledger == ()
    entry = spend_parallel(acc, [(0.3, 0.0), (0.7, 0.0)], by="values", note="one per region")
    assert entry.eps == 1.0 and acc.spent() == (1.0, 0.0)
    acc = PrivacyAccountant(10.0, delta=1e-5)
    spend_parallel(acc, [(1.0, 1e-7, lambda o: rdp_gaussian(4.0, o)),
                         (2.0, 2e-7, lambda o: rdp_gaussian(2.0, o))], by="values")
    (e,) = acc.ledger
    orders = list(acc_orders())
    assert (e.eps, e.delta) == (3.0, 3e-7)
    np.testing.assert_allclose(e.rdp, rdp_gaussian(4.0, orders) + rdp_gaussian(2.0, orders),
                               rtol=1e-15)


def test_a_split_by_value_tells_neighbours_apart():
    """Why one model per region is not parallel composition: replacing one row can move it to
    another region, and each fit publishes its n — the two neighbours' releases differ with
    certainty. Split by public positions, every part keeps its size."""
    import pandas as pd

    from privatelr import dplr

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.uniform(-0.5, 0.5, 60), "region": ["n"] * 30 + ["s"] * 30,
                       "y": rng.integers(0, 2, 60)})
    nb = df.copy()
    nb.loc[0, "region"] = "s"                            # one row replaced: it moved region
    ns = [[dplr("y ~ x", d[d.region == r], eps=1.0, random_state=1).n for r in ("n", "s")]
          for d in (df, nb)]
    assert ns == [[30, 30], [29, 31]]
    halves = [[dplr("y ~ x", d.iloc[k * 30:(k + 1) * 30], eps=1.0, random_state=1).n
               for k in (0, 1)] for d in (df, nb)]
    assert halves == [[30, 30], [30, 30]]


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
