"""privatelr.roc: C-index with ties counted half, R's youden/topleft thresholds."""

import json
from pathlib import Path

import numpy as np
import pytest

from privatelr.report.roc import best_threshold, c_index, sens_spec

ROC = json.loads((Path(__file__).parents[1] / "fixtures" / "roc.json").read_text())


def _auc_bruteforce(p, y):
    p, y = np.asarray(p, float), np.asarray(y)
    pos, neg = p[y == 1], p[y != 1]
    diff = pos[:, None] - neg[None, :]
    return ((diff > 0) + 0.5 * (diff == 0)).mean()


@pytest.mark.parametrize("case", range(len(ROC)))
def test_roc_fixture(case):
    c = ROC[case]
    assert c_index(c["p"], c["y"]) == pytest.approx(c["cindex"], abs=1e-12)
    assert best_threshold(c["p"], c["y"], "youden") == c["youden"]
    assert best_threshold(c["p"], c["y"], "topleft") == c["topleft"]


def test_youden_and_topleft_can_differ():
    # the fixture case where R's two rules disagree must be reproduced, not merely one of them
    diff = [c for c in ROC if c["youden"] != c["topleft"]]
    assert diff, "roc.json should contain a case where the rules differ"
    for c in diff:
        assert best_threshold(c["p"], c["y"], "youden") != best_threshold(c["p"], c["y"], "topleft")


def test_c_index_matches_pairwise_count_with_ties():
    rng = np.random.default_rng(3)
    p = rng.integers(0, 5, size=60) / 4          # many ties
    y = rng.integers(0, 2, size=60)
    assert c_index(p, y) == pytest.approx(_auc_bruteforce(p, y), abs=1e-12)
    assert c_index([0.5, 0.5], [0, 1]) == 0.5
    assert c_index(p, np.ones(60)) != c_index(p, np.ones(60))      # NaN: one class absent
    assert c_index(p, y.astype(bool)) == c_index(p, y)



def _c_index_midranks(p, y):
    # the defining formula (module docstring): mean mid-rank of the positives, via scipy's
    # rankdata, an implementation independent of c_index's sort-and-search count
    from scipy.stats import rankdata

    pos = np.asarray(y) == 1
    n1, n0 = int(pos.sum()), int((~pos).sum())
    return (rankdata(p, method="average")[pos].mean() - (n1 + 1) / 2) / n0


@pytest.mark.parametrize("seed", range(6))
def test_c_index_equals_the_mid_rank_formula(seed):
    # continuous scores, heavy ties (few distinct values), all scores equal, signed zeros and
    # extreme values, unbalanced classes: the count and the formula agree to 1e-12 (both are
    # exact rationals n_pairs/2/(n0 n1) up to one rounding, so a wrong half for ties or an
    # off-by-one in a search side is off by >= 1/(2 n0 n1) >> 1e-12 at these sizes)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    cases = [rng.random(n), rng.integers(0, 4, n) / 3.0, np.full(n, 0.25),
             rng.choice([-0.0, 0.0, 1e-300, 1.0, 5e-324], n), rng.normal(size=n) * 1e6]
    for p in cases:
        for rate in (0.5, 0.03):
            y = (rng.random(n) < rate).astype(int)
            y[0], y[-1] = 1, 0                                 # both classes present
            assert c_index(p, y) == pytest.approx(_c_index_midranks(p, y), abs=1e-12)
    assert c_index([0.3, 0.3, 0.3], [1, 0, 1]) == 0.5
    assert c_index([0.9, 0.1], [1, 0]) == 1.0 and c_index([0.1, 0.9], [1, 0]) == 0.0


def test_sens_spec_table():
    t = sens_spec([0.2, 0.6, 0.4, 0.8, 0.1], [0, 1, 0, 1, 1])
    # positives in rank order: 0.1, 0.6, 0.8
    np.testing.assert_allclose(t[:, 0], [0.1, 0.6, 0.8])
    np.testing.assert_allclose(t[:, 1], [1.0, 2 / 3, 1 / 3])
    np.testing.assert_allclose(t[:, 2], [0.0, 1.0, 1.0])
    assert best_threshold([0.2, 0.6, 0.4, 0.8, 0.1], [0, 1, 0, 1, 1]) == 0.6


def test_errors():
    with pytest.raises(ValueError, match="method"):
        best_threshold([0.1], [1], "middle")
    with pytest.raises(ValueError, match="match"):
        c_index([0.1, 0.2], [1])
    with pytest.raises(ValueError, match="NaN"):
        c_index([np.nan, 0.2], [1, 0])

