"""A saved model's formula statistics are checked when it is loaded (issue 27): the numbers a
non-private fit learned from the rows — ``cut(x, k)``'s breaks, ``scale(x)``'s centre and scale,
``poly(x, k)``'s recurrence coefficients — are validated against the call they belong to, so a
file edited and re-sealed with a recomputed checksum cannot make ``predict`` search unsorted
breaks, divide by a zero scale or return NaN. Each refusal names the field."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from formula_checks import reseal
from privatelr import dplr
from privatelr.persist import loads


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(5)
    n = 40
    return pd.DataFrame({"a": rng.uniform(-0.5, 0.5, n), "b": rng.uniform(0.0, 3.0, n),
                         "y": (rng.uniform(size=n) < 0.5).astype(int)})


FORMULA = "y ~ a + cut(b, 3) + scale(b) + scale(a, center = FALSE) + poly(b, 2)"


@pytest.fixture(scope="module")
def text(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return dplr(FORMULA, frame, eps=0).to_json()


def _tampered(text: str, key: str, values) -> str:
    payload = json.loads(text)
    params = payload["design"]["params"]
    assert key in params, sorted(params)
    params[key] = values
    return reseal(payload)


def test_a_resealed_untouched_file_loads(text, frame):
    back = loads(reseal(json.loads(text)))
    np.testing.assert_array_equal(back.predict(frame), loads(text).predict(frame))


@pytest.mark.parametrize("key, values, problem", [
    ("cut(b, 3)", [3.0, 1.0, 2.0, 0.0], "strictly increasing"),
    ("cut(b, 3)", [0.0, 1.0, 1.0, 3.0], "strictly increasing"),
    ("cut(b, 3)", [0.0, 1.0, 3.0], "need 4 breaks"),
    ("scale(b)", [1.5, 0.0], "scale above 0"),
    ("scale(b)", [1.5, -2.0], "scale above 0"),
    ("scale(b)", [1.5], "two finite numbers"),
    ("scale(a, center = FALSE)", [0.3, 1.0], "center is given in the formula"),
    ("poly(b, 2)", [1.0, 1.2, 1.0, 40.0, 0.0, 3.0], "norm2 above 0"),
    ("poly(b, 2)", [1.0, 1.2, 2.0, 40.0, 4.0, 3.0], "starting with 1"),
    ("poly(b, 2)", [1.5, 1e308, 1.0, 40.0, 4.0, 3.0], "overflow"),
    ("poly(b, 2)", [1.0, 1.2, 1.0, 40.0, -5.0, 3.0], "norm2 above 0"),
    ("poly(b, 2)", [1.0, 1.2, 1.0, 40.0], "needs 6 numbers"),
])
def test_bad_statistics_are_refused_naming_the_field(text, key, values, problem):
    with pytest.raises(ValueError, match=r"corrupted.*params\[" + f"'{key}'".replace(
            "(", r"\(").replace(")", r"\)") + r"\].*" + problem):
        loads(_tampered(text, key, values))


def test_non_finite_statistics_are_refused(text):
    payload = json.loads(text)
    payload["design"]["params"]["scale(b)"] = [1.5, {"$float": "Infinity"}]
    with pytest.raises(ValueError, match=r"params\['scale\(b\)'\] must be a list of finite"):
        loads(reseal(payload))


def test_statistics_of_no_call_are_refused(text):
    payload = json.loads(text)
    payload["design"]["params"]["cut(a, 3)"] = [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match=r"params\['cut\(a, 3\)'\] belongs to no"):
        loads(reseal(payload))
