"""make_health: the health-records generator states its truth, and its truth is what it says."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privatelr import dplr, public_bounds, vcov
from privatelr.datasets import HEALTH_COEFFICIENTS, HEALTH_LEVELS, HEALTH_RANGES, make_health


def test_columns_levels_and_codebook_ranges():
    df = make_health(5000, random_state=1)
    assert list(df.columns) == ["age", "bmi", "sex", "smoker", "region", "y"]
    for col, (lo, hi) in HEALTH_RANGES.items():
        assert lo <= df[col].min() and df[col].max() <= hi
    for col, levels in HEALTH_LEVELS.items():
        assert isinstance(df[col].dtype, pd.CategoricalDtype)
        assert list(df[col].cat.categories) == levels
    assert set(df.y.unique()) == {0, 1}
    pd.testing.assert_frame_equal(df, make_health(5000, random_state=1))


def test_glm_recovers_the_stated_coefficients():
    """glm on 200,000 records estimates every stated coefficient: each z = (estimate - truth)/SE
    is standard normal when the truth is right, so |z| < 4.5 for all 8 holds with probability
    above 1 - 8 * 7e-6. A wrong stated constant fails: the SEs are about 0.00036 (age), 0.001
    (bmi), 0.01-0.04 (the rest), so an error of 0.005 per year of age is 14 SE, 0.01 per bmi
    unit 10 SE, 0.1 in a factor effect or 0.2 in the intercept 5-7 SE."""
    df = make_health(200_000, random_state=20281126)
    m = dplr("y ~ age + bmi + sex + smoker + region", df, eps=0, lambda_=0, inference=True,
             bounds=public_bounds(HEALTH_RANGES, levels=HEALTH_LEVELS))
    est = m.coefficients
    se = np.sqrt(np.diag(vcov(m)))
    truth = np.array([HEALTH_COEFFICIENTS[name] for name in est.index])
    z = (est.to_numpy() - truth) / se
    assert list(est.index) == list(HEALTH_COEFFICIENTS)
    assert np.abs(z).max() < 4.5, dict(zip(est.index, z.round(2)))
    # the prevalence the docstring states
    assert df.y.mean() == pytest.approx(0.37, abs=0.01)


def test_bad_arguments_are_named():
    with pytest.raises((ValueError, TypeError), match="n"):
        make_health(0)
