"""public_bounds / dplr(bounds=...): data_norm and a public rescaling from bounds known before
the data, kept in the model and applied again by predict."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from privatelr import dplr, load_model, public_bounds
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


def test_data_norm_and_divisors_from_the_bounds(frame):
    m = dplr("y ~ age + bmi + sex", frame, bounds=PB, eps=1, random_state=0)
    # three terms, each at most 1 after the rescaling: data_norm = sqrt(3)
    assert m.data_norm == pytest.approx(math.sqrt(3))
    assert m.spec.preprocess.divisors == (100.0, 60.0, 1.0)
    assert m.n_clipped == 0 and m.guarantee_holds
    # an interaction is one more term, its column divided by the product of the magnitudes
    m2 = dplr("y ~ age * bmi + sex", frame, bounds=PB, eps=1, random_state=0)
    assert m2.data_norm == pytest.approx(2.0)
    assert m2.spec.preprocess.divisors == (100.0, 60.0, 1.0, 6000.0)


def test_the_map_is_kept_by_predict_and_the_saved_file(frame):
    m = dplr("y ~ age + bmi + sex", frame, bounds=PB, eps=1, random_state=0)
    # predict applies the same public map: equal to the linear predictor on rescaled columns
    scaled = frame.assign(age=frame.age / 100, bmi=frame.bmi / 60)
    c = m.coefficients
    eta = c["(Intercept)"] + c["age"] * scaled.age + c["bmi"] * scaled.bmi + \
        c["sexM"] * (frame.sex == "M")
    np.testing.assert_allclose(m.predict(frame, type="link"), eta, rtol=1e-12)
    back = loads(m.to_json())
    assert back.spec.preprocess.divisors == m.spec.preprocess.divisors
    np.testing.assert_array_equal(back.predict(frame), m.predict(frame))


def test_rows_beyond_the_declared_bounds_are_refused_or_clipped(frame):
    wild = frame.copy()
    wild.loc[0, "age"] = 250.0            # outside the public bound (a data error)
    with pytest.raises(ValueError, match="above data_norm.*clip=True"):
        dplr("y ~ age + bmi + sex", wild, bounds=PB, eps=1, random_state=0)
    m = dplr("y ~ age + bmi + sex", wild, bounds=PB, eps=1, clip=True, random_state=0)
    assert m.n_clipped == 1


def test_bad_bounds_name_the_problem(frame):
    with pytest.raises(ValueError, match="'log\\(bmi\\)' has no public bound"):
        dplr("y ~ log(bmi) + sex", frame, bounds=PB, eps=1, random_state=0)
    with pytest.raises(ValueError, match="lo <= hi"):
        public_bounds({"age": (100, 18)})
    with pytest.raises(TypeError, match="pair"):
        public_bounds({"age": 100})
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
    assert d["design"]["preprocess"]["divisors"] == [100.0, 1.0]
    assert np.array_equal(load_model(tmp_path / "m.json").predict(frame), m.predict(frame))
