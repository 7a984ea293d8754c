"""public_bounds / dplr(bounds=...): a centred public map and data_norm from bounds known before
the data, kept in the model, applied again by predict, and inverted exactly so that every number
is reported in the data's own units."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from privatelr import coef_table, confint, dplr, load_model, public_bounds, vcov
from privatelr.persist import loads


@pytest.fixture()
def frame():
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"age": rng.uniform(18, 100, n), "bmi": rng.uniform(10, 60, n),
                       "sex": rng.choice(["F", "M"], n)})
    df["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(3 - df.age / 25))).astype(int)
    return df


PB = public_bounds({"age": (18, 100), "bmi": (10, 60)}, levels={"sex": ["F", "M"]})
OLD = public_bounds({"age": (18, 100), "bmi": (10, 60)}, levels={"sex": ["F", "M"]},
                    center=False)


def test_centred_map_and_data_norm_from_the_bounds(frame):
    m = dplr("y ~ age + bmi + sex", frame, bounds=PB, eps=1, random_state=0)
    # three terms, each at most 1 after the map: data_norm = sqrt(3)
    assert m.data_norm == pytest.approx(math.sqrt(3))
    pre = m.spec.preprocess
    # (x - midpoint) / half-range; the sex dummy centred at 1/2 (two declared levels)
    assert pre.divisors == (41.0, 25.0, 1.0)
    assert pre.shifts == ((0, 0, -59.0 / 41.0), (1, 0, -35.0 / 25.0), (2, 0, -0.5))
    X = m.spec.rows(frame, response=False).X
    np.testing.assert_allclose(X[:, 1], (frame.age - 59) / 41, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(X[:, 3], (frame.sex == "M") - 0.5)
    assert np.abs(X[:, 1:]).max() <= 1.0 and np.sqrt((X[:, 1:] ** 2).sum(1)).max() <= m.data_norm
    assert m.n_clipped == 0 and m.guarantee_holds
    # the uncentred map of version 0.1 is one switch away
    old = dplr("y ~ age + bmi + sex", frame, bounds=OLD, eps=1, random_state=0)
    assert old.spec.preprocess.divisors == (100.0, 60.0, 1.0) and not old.spec.preprocess.shifts


def test_interactions_expand_into_their_lower_order_columns(frame):
    m = dplr("y ~ age * bmi + sex", frame, bounds=PB, eps=1, random_state=0)
    assert m.data_norm == pytest.approx(2.0)
    X = m.spec.rows(frame, response=False).X
    a, b = (frame.age - 59) / 41, (frame.bmi - 35) / 25
    np.testing.assert_allclose(X[:, list(m.spec.design_columns).index("age:bmi")], a * b,
                               rtol=1e-12, atol=1e-14)
    # an interaction without its main effects cannot be centred: only divided
    m2 = dplr("y ~ age:bmi", frame, bounds=PB, eps=1, random_state=0)
    assert m2.spec.preprocess.divisors == (6000.0,) and not m2.spec.preprocess.shifts


def test_the_map_is_kept_by_predict_and_the_saved_file(frame):
    m = dplr("y ~ age + bmi + sex", frame, bounds=PB, eps=1, random_state=0)
    # coefficients are per unit of the data's columns: the linear predictor on raw columns
    c = m.coefficients
    eta = c["(Intercept)"] + c["age"] * frame.age + c["bmi"] * frame.bmi + \
        c["sexM"] * (frame.sex == "M")
    np.testing.assert_allclose(m.predict(frame, type="link"), eta, rtol=1e-10)
    back = loads(m.to_json())
    assert back.spec.preprocess == m.spec.preprocess
    np.testing.assert_array_equal(back.predict(frame), m.predict(frame))


def test_data_units_are_the_exact_inverse_of_the_map(frame):
    """The estimate, covariance and intervals in data units are the mapped ones transformed by
    the public matrix M (mapped rows = raw rows @ M): b_data = M b, V_data = M V M'."""
    m = dplr("y ~ age * sex + bmi", frame, bounds=PB, eps=4, inference=0.5, random_state=3)
    M = m.spec.preprocess.design_matrix(m.d, True)
    Xraw = m.spec.with_preprocess(None).rows(frame, response=False).X
    np.testing.assert_allclose(Xraw @ M, m.spec.rows(frame, response=False).X, atol=1e-13)
    mapped = coef_table(m, scale="mapped")
    data = coef_table(m)
    np.testing.assert_allclose(data["Estimate"], M @ mapped["Estimate"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(vcov(m).to_numpy(), M @ vcov(m, scale="mapped").to_numpy() @ M.T,
                               rtol=1e-10, atol=1e-16)
    np.testing.assert_array_equal(data["Estimate"].to_numpy(), m.coefficients.to_numpy())
    # the rows of the mapped table name the map; the data table names the columns
    assert list(mapped.index)[:2] == ["(Intercept)", "(age - 59)/41"]
    assert list(data.index) == list(m.spec.design_columns)
    assert data.attrs["scale"] == "data" and mapped.attrs["scale"] == "mapped"
    # odds ratios per year of age: exp of the data-unit coefficient and interval ends
    ors = coef_table(m, exponentiate=True, level=0.95)
    ci = confint(m)
    np.testing.assert_allclose(ors.loc["age", "Odds ratio"], math.exp(data.loc["age", "Estimate"]))
    np.testing.assert_allclose(ors.loc["age", "97.5 %"], math.exp(ci.loc["age", "97.5 %"]))


def test_rows_beyond_the_declared_bounds_are_refused_or_clipped(frame):
    wild = frame.copy()
    wild.loc[0, "age"] = 250.0            # outside the public bound (a data error)
    with pytest.raises(ValueError, match="above data_norm.*clip=True"):
        dplr("y ~ age + bmi + sex", wild, bounds=PB, eps=1, random_state=0)
    m = dplr("y ~ age + bmi + sex", wild, bounds=PB, eps=1, clip=True, random_state=0)
    assert m.n_clipped == 1


def test_the_rms_rule_is_tighter_and_clips(frame):
    rms = public_bounds({"age": (18, 100), "bmi": (10, 60)}, levels={"sex": ["F", "M"]},
                        norm="rms")
    m = dplr("y ~ age + bmi + sex", frame, bounds=rms, eps=1, random_state=0)
    # uniform columns: 1/3 + 1/3 for the numeric columns, 1/4 for the centred dummy
    assert m.data_norm == pytest.approx(math.sqrt(1 / 3 + 1 / 3 + 1 / 4))
    assert m.n_clipped > 0 and m.spec.preprocess.clip == pytest.approx(m.data_norm)


def test_bad_bounds_name_the_problem(frame):
    with pytest.raises(ValueError, match="'log\\(bmi\\)' has no public bound"):
        dplr("y ~ log(bmi) + sex", frame, bounds=PB, eps=1, random_state=0)
    with pytest.raises(ValueError, match="lo <= hi"):
        public_bounds({"age": (100, 18)})
    with pytest.raises(TypeError, match="pair"):
        public_bounds({"age": 100})
    with pytest.raises(ValueError, match="norm must be one of"):
        public_bounds({"age": (1, 2)}, norm="tight")
    with pytest.raises(TypeError, match="center"):
        public_bounds({"age": (1, 2)}, center="yes")
    with pytest.raises(ValueError, match="compat"):
        dplr("y ~ age", frame, bounds=PB, compat="PrivateLR", random_state=0)
    with pytest.raises(ValueError, match="differs from the levels in bounds"):
        dplr("y ~ age + sex", frame, bounds=PB, levels={"sex": ["M", "F"]}, random_state=0)
    # a plain dict of ranges works too; an explicit data_norm wins
    m = dplr("y ~ age + bmi", frame, bounds={"age": (18, 100), "bmi": (10, 60)},
             data_norm=2.0, eps=1, random_state=0)
    assert m.data_norm == 2.0


def test_load_model_with_bounds_roundtrip(tmp_path, frame):
    m = dplr("y ~ age + sex", frame, bounds=PB, eps=1, random_state=1)
    m.to_json(tmp_path / "m.json")
    d = json.loads((tmp_path / "m.json").read_text())
    assert d["design"]["preprocess"]["divisors"] == [41.0, 1.0]
    assert d["design"]["preprocess"]["shifts"] == [[0, 0, -59.0 / 41.0], [1, 0, -0.5]]
    back = load_model(tmp_path / "m.json")
    assert np.array_equal(back.predict(frame), m.predict(frame))
    pd.testing.assert_series_equal(back.coefficients, m.coefficients)
