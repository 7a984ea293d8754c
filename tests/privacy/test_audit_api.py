"""The auditor's interface: evidence, reproducibility, custom statistics and argument checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.stats import beta

from privatelr import audit
from privatelr.auditing import AuditResult, clopper_pearson


def _laplace(x, rng):
    return x + rng.laplace(scale=1.0)


def test_clopper_pearson_matches_closed_forms():
    # k = 0: upper = 1 - alpha^(1/n); k = n: lower = alpha^(1/n); otherwise Beta quantiles.
    lo, hi = clopper_pearson(np.array([0, 7, 50]), 50, 0.025)
    assert lo[0] == 0.0 and hi[2] == 1.0
    assert hi[0] == pytest.approx(1 - 0.025 ** (1 / 50))
    assert lo[2] == pytest.approx(0.025 ** (1 / 50))
    assert lo[1] == pytest.approx(beta.ppf(0.025, 7, 44))
    assert hi[1] == pytest.approx(beta.ppf(0.975, 8, 43))


def test_audit_result_is_frozen_and_carries_evidence():
    res = audit(_laplace, 0.0, 1.0, eps_claimed=1.0, trials=400, random_state=0)
    assert isinstance(res, AuditResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.eps_lower = 0.0
    assert res.n_select + res.n_eval == res.trials == 400
    assert all(0 <= k <= res.n_eval for k in res.counts)
    assert res.p_hat == (res.counts[0] / res.n_eval, res.counts[1] / res.n_eval)
    for lo, hi in (res.interval_D, res.interval_D_prime):
        assert 0.0 <= lo <= hi <= 1.0
    assert res.event in ("statistic > threshold", "statistic < threshold")
    assert "projection" in res.statistic and res.confidence == 0.95
    assert "eps_lower" in res.summary()


def test_audit_is_reproducible_and_uses_one_generator():
    a = audit(_laplace, 0.0, 1.0, eps_claimed=1.0, trials=300, random_state=5)
    b = audit(_laplace, 0.0, 1.0, eps_claimed=1.0, trials=300, random_state=5)
    assert a == b
    seen = []

    def recording(x, rng):
        seen.append(rng)
        return x + rng.laplace()

    gen = np.random.default_rng(3)
    audit(recording, 0.0, 1.0, eps_claimed=1.0, trials=20, random_state=gen)
    assert len(seen) == 40 and all(g is gen for g in seen)


def test_audit_odd_trials_and_vector_outputs():
    # A 3-vector output: only the first coordinate depends on the data; the projection finds it.
    def vec(x, rng):
        return np.array([x, 0.0, 0.0]) + rng.laplace(scale=0.1, size=3)

    res = audit(vec, 0.0, 1.0, eps_claimed=1.0, trials=301, random_state=1)
    assert (res.n_select, res.n_eval) == (150, 151)
    assert not res.passed  # true eps is 10
    assert "3 output coordinates" in res.statistic


def test_audit_custom_statistic_finds_a_variance_leak():
    # The mean output is the same on both data sets; only the spread differs (Laplace scale 1
    # vs 3). |output| is the natural statistic: P[|out| > t] is e^-t vs e^(-t/3), a ratio that
    # grows without bound in the tail (e^(2t/3): 2.7 at t = 1.5, where 2000 evaluation runs see
    # about 450 vs 1200 hits), so a claim of 0.5 is refuted with a wide margin.
    def spread(scale, rng):
        return rng.laplace(scale=scale)

    custom = audit(spread, 1.0, 3.0, eps_claimed=0.5, trials=4000, random_state=2,
                   statistic=lambda out: np.abs(out[:, 0]))
    assert custom.eps_lower > 1.5 and not custom.passed, custom.summary()
    assert custom.statistic == "<lambda>"
    same = audit(spread, 3.0, 3.0, eps_claimed=0.5, trials=4000, random_state=2,
                 statistic=lambda out: np.abs(out[:, 0]))
    assert same.passed, same.summary()  # identical data sets: nothing to find


def test_audit_constant_mechanism_gives_zero():
    res = audit(lambda x, rng: 1.0, 0.0, 1.0, eps_claimed=0.1, trials=50, random_state=0)
    assert res.eps_lower == 0.0 and res.passed


def test_audit_progress_bar_is_optional():
    # tqdm is not a dependency: asking for a bar without it installed falls back silently.
    res = audit(_laplace, 0.0, 1.0, eps_claimed=1.0, trials=20, random_state=0, progress=True)
    assert res.trials == 20


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(mechanism="laplace"), TypeError, "mechanism must be a callable"),
    (dict(eps_claimed=-1.0), ValueError, "eps_claimed"),
    (dict(eps_claimed="1"), TypeError, "eps_claimed"),
    (dict(delta_claimed=1.0), ValueError, "delta_claimed"),
    (dict(trials=5), ValueError, "trials"),
    (dict(trials=100.5), TypeError, "trials"),
    (dict(confidence=1.0), ValueError, "confidence"),
    (dict(statistic="mean"), TypeError, "statistic"),
    (dict(progress="yes"), TypeError, "progress"),
    (dict(random_state=-1), ValueError, "random_state"),
])
def test_audit_rejects_bad_arguments(kwargs, exc, match):
    args = dict(mechanism=_laplace, eps_claimed=1.0, trials=20, random_state=0)
    args.update(kwargs)
    mechanism = args.pop("mechanism")
    with pytest.raises(exc, match=match):
        audit(mechanism, 0.0, 1.0, **args)


@pytest.mark.parametrize("mechanism, exc, match", [
    (lambda x, rng: "abc", TypeError, "must return numbers"),
    (lambda x, rng: np.zeros(0), ValueError, "empty output"),
    (lambda x, rng: np.nan, ValueError, "NaN or infinite"),
    (lambda x, rng: np.zeros(int(x) + 1), ValueError, "different shapes"),
])
def test_audit_rejects_bad_mechanism_outputs(mechanism, exc, match):
    with pytest.raises(exc, match=match):
        audit(mechanism, 0.0, 1.0, eps_claimed=1.0, trials=20, random_state=0)


def test_audit_rejects_bad_statistic_outputs():
    with pytest.raises(ValueError, match="one number per run"):
        audit(_laplace, 0.0, 1.0, eps_claimed=1.0, trials=20, random_state=0,
              statistic=lambda out: out)
    with pytest.raises(ValueError, match="NaN"):
        audit(_laplace, 0.0, 1.0, eps_claimed=1.0, trials=20, random_state=0,
              statistic=lambda out: out[:, 0] * np.nan)
