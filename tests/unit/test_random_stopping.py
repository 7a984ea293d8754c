"""Private selection by random stopping (Liu & Talwar 2019): the mechanism, its audit, and the
tuning front ends (dplr_tune, tune_classification_model) with selection="random_stopping".

Power of the audit. The toy selection has m = 3 candidates whose private scores are counts of
sensitivity 1 (D' adds 1 to every count) released with Laplace noise; the release is the chosen
index and its score. Calibrated for a total eps = 1 (each run eps/3), the audit's bound stays
below 1. The broken variant runs each candidate at eps = 10 while claiming 1 in total (noise a
tenth of... thirtieth of the correct one): the released score then moves by 1 with noise of scale
0.1, a privacy loss near 10 on likely events, and 1000 trials put the bound far above 1 (seed
fixed; measured bound about 4).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import PrivacyAccountant, audit, dplr_tune, load_model
from privatelr.mechanisms import laplace_count, random_stopping
from privatelr.models import LogisticRegressionDP
from privatelr.sklearn import DPLogisticRegression
from privatelr.tuning import tune_classification_model


def test_runs_are_geometric_and_the_best_run_is_returned():
    rng = np.random.default_rng(3)
    counts = []
    for _ in range(4000):
        seen = []

        def run(j):
            s = float(rng.standard_normal())
            seen.append((s, j))
            return s, j
        j, out, score = random_stopping(run, 4, 0.25, rng)
        assert (score, j) == max(seen) and out == j
        counts.append(len(seen))        # the test counts the runs; the function never says
    # mean 1/gamma = 4, sd of the mean sqrt((1 - g)/g^2 / N) = 0.027: a wrong stopping rule
    # (e.g. at least two runs, mean 5) is 37 sd away
    assert abs(np.mean(counts) - 4.0) < 0.15
    with pytest.raises(ValueError, match="stop_prob"):
        random_stopping(run, 4, 0.0, rng)


def _selection(eps_run):
    def mechanism(shift, rng):
        def run(j):
            return laplace_count(10.0 * j + shift, eps_run, rng), j
        j, _, score = random_stopping(run, 3, 0.3, rng)
        return np.array([j == 0, j == 1, j == 2, score], dtype=float)
    return mechanism


def test_audit_random_stopping_stays_below_three_eps():
    res = audit(_selection(1.0 / 3.0), 0.0, 1.0, eps_claimed=1.0, trials=1000, random_state=5)
    assert res.passed and res.eps_lower < 1.0, res.summary()


def test_audit_flags_a_selection_with_too_little_noise():
    res = audit(_selection(10.0), 0.0, 1.0, eps_claimed=1.0, trials=1000, random_state=6)
    assert not res.passed and res.eps_lower > 1.5, res.summary()


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(8)
    X = rng.uniform(-0.5, 0.5, size=(800, 2))
    y = (X[:, 0] - X[:, 1] + 0.2 * rng.standard_normal(800) > 0).astype(int)
    df = pd.DataFrame(X, columns=["a", "b"])
    df["y"] = y
    return df


def test_dplr_tune_random_stopping(frame, tmp_path):
    acc = PrivacyAccountant(2.0)
    kw = dict(lambdas=(1e-3, 1e-2, 1e-1), eps=1.0, selection="random_stopping")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = dplr_tune("y ~ a + b", frame, random_state=4, accountant=acc, **kw)
        b = dplr_tune("y ~ a + b", frame, random_state=4, **kw)
    np.testing.assert_array_equal(a.coef, b.coef)
    t = a.tuning
    assert t.selection == "random_stopping" and t.group_sizes == (800,)
    assert not hasattr(t, "runs") and "runs" not in t.to_dict()
    assert a.eps == pytest.approx(0.75 / 3.0)          # the run's fitting eps
    (entry,) = acc.ledger
    assert entry.eps == 1.0 and "random stopping" in entry.note
    a.to_json(tmp_path / "t.json")
    assert load_model(tmp_path / "t.json").tuning == t
    with pytest.raises(ValueError, match="selection must be"):
        dplr_tune("y ~ a + b", frame, selection="best")
    with pytest.raises(ValueError, match="stop_prob is for"):
        dplr_tune("y ~ a + b", frame, stop_prob=0.5)


def test_dplr_tune_random_stopping_on_dask(frame):
    dd = pytest.importorskip("dask.dataframe")
    kw = dict(lambdas=(1e-2, 1e-1), eps=1.0, selection="random_stopping", random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = dplr_tune("y ~ a + b", frame, **kw)
        dist = dplr_tune("y ~ a + b", dd.from_pandas(frame, npartitions=3), **kw)
    assert dist.tuning == mem.tuning
    np.testing.assert_allclose(dist.coef, mem.coef, rtol=1e-9, atol=1e-12)


def test_tune_classification_model_random_stopping(frame):
    X, y = frame[["a", "b"]].to_numpy(), frame["y"].to_numpy()
    models = [LogisticRegressionDP(eps=1.0, gamma=g) for g in (0.1, 1.0, 10.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = tune_classification_model(models, X, y, [0.5, 0.5], [-0.5, -0.5],
                                         random_state=0, selection="random_stopping")
    assert best in models and best.tuning_.selection == "random_stopping"
    assert best.eps == pytest.approx(0.25) and best.result_.eps == pytest.approx(0.25)
    assert sum(m.coeff is not None for m in models) == 1
    cands = [DPLogisticRegression(eps=1.0, alpha=a) for a in (0.01, 0.1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = tune_classification_model(cands, X, y, random_state=0,
                                        selection="random_stopping", stop_prob=0.5)
    assert est.tuning_.group_sizes == (800,) and est.eps == 1.0   # the caller's settings
    assert est.score(X, y) > 0.7


def test_laplace_count_law():
    """The score noise is Laplace(1/eps): KS on 4000 draws (critical distance 0.035 at 1e-4)
    accepts it and rejects a scale off by 1.25 (sup distance about 0.06)."""
    from scipy import stats

    rng = np.random.default_rng(17)
    eps = 0.4
    draws = np.array([laplace_count(0.0, eps, rng) for _ in range(4000)])
    assert stats.kstest(draws, stats.laplace(scale=1 / eps).cdf).pvalue > 1e-3
    for wrong in (1.25, 0.8):
        assert stats.kstest(draws, stats.laplace(scale=wrong / eps).cdf).pvalue < 1e-4


def test_gaussian_candidates_split_charges_delta_and_stopping_refuses(frame):
    X, y = frame[["a", "b"]].to_numpy(), frame["y"].to_numpy()
    acc = PrivacyAccountant(2.0, delta=1e-5)
    models = [LogisticRegressionDP(eps=1.0, gamma=g, perturbation_method="gaussian", delta=1e-6)
              for g in (0.1, 1.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tune_classification_model(models, X, y, [0.5, 0.5], [-0.5, -0.5], random_state=0,
                                  accountant=acc)
    (entry,) = acc.ledger
    assert (entry.eps, entry.delta) == (1.0, 1e-6)
    with pytest.raises(ValueError, match="eps-DP candidates"):
        tune_classification_model(models, X, y, [0.5, 0.5], [-0.5, -0.5],
                                  selection="random_stopping")
    mixed = [LogisticRegressionDP(eps=1.0, gamma=1.0),
             LogisticRegressionDP(eps=1.0, gamma=1.0, perturbation_method="amp", delta=1e-6)]
    with pytest.raises(ValueError, match="share one delta"):
        tune_classification_model(mixed, X, y, [0.5, 0.5], [-0.5, -0.5])


def test_the_runs_are_not_counted_by_what_they_print_or_warn(frame, capsys):
    """Issue 27: the number of runs is not released — not through verbose lines or warnings
    either. Each run prints its verbose lines and may warn; only the chosen run's are shown."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dplr_tune("y ~ a + b", frame, lambdas=(1e-4, 1e-3), eps=1.0, verbose=1,
                  selection="random_stopping", stop_prob=0.1, random_state=4)
    printed = capsys.readouterr().out
    assert printed.count("privacy penalty due to regularizer") == 1
    texts = [str(w.message) for w in caught]
    assert len(texts) == len(set(texts)) <= 1        # lambda too small: said once, not per run
