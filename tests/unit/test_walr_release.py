"""The WALR measurement side: noisy_dot_product and the NoisyDotProduct record."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from privatelr import NoisyDotProduct, noisy_dot_product
from release_files import fields_of, release_text
from privatelr.mechanisms import gaussian_sigma_analytic, gaussian_sigma_classic


def _data(n=300, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = np.c_[np.ones(n), rng.uniform(size=(n, k - 1))]
    y = (rng.uniform(size=n) < 0.3).astype(int)
    w = rng.uniform(0.0, 2.0, size=n)
    return X, y, w


def test_release_fields_sensitivity_and_sigma():
    X, y, w = _data()
    n, k = X.shape
    rel = noisy_dot_product(X, y, eps=0.5, delta=1e-6, weights=w, weights_bound=2.0,
                            random_state=0)
    assert (rel.n, rel.k, rel.eps, rel.delta, rel.mechanism) == (n, k, 0.5, 1e-6, "analytic")
    assert rel.sensitivity == pytest.approx(2.0 * math.sqrt(k) / n, rel=1e-15)  # A sqrt(k) / N
    assert rel.sigma == gaussian_sigma_analytic(rel.sensitivity, 0.5, 1e-6)
    cl = noisy_dot_product(X, y, eps=0.5, delta=1e-6, weights=w, weights_bound=2.0,
                           mechanism="classic", random_state=0)
    assert cl.sigma == gaussian_sigma_classic(cl.sensitivity, 0.5, 1e-6) > rel.sigma
    # without weights the bound is 1 whatever weights_bound says
    assert noisy_dot_product(X, y, eps=1, delta=1e-6, weights_bound=5.0).sensitivity == \
        pytest.approx(math.sqrt(k) / n)


def test_exact_release_is_the_weighted_dot_product():
    X, y, w = _data()
    rel = noisy_dot_product(X, y, eps=math.inf, delta=1e-6, weights=w, weights_bound=2.0)
    assert rel.mechanism == "none" and rel.sigma == 0.0
    np.testing.assert_allclose(rel.value, (w * y) @ X / X.shape[0], rtol=1e-13)
    # labels given as -1/+1 or bool mean the same thing (-1 is the negative class)
    for yy in (2 * y - 1, y.astype(bool)):
        np.testing.assert_array_equal(
            noisy_dot_product(X, yy, eps=math.inf, delta=1e-6, weights=w, weights_bound=2).value,
            rel.value)


def test_release_is_reproducible_and_noise_has_scale_sigma():
    X, y, _ = _data()
    a = noisy_dot_product(X, y, eps=1.0, delta=1e-5, random_state=3)
    b = noisy_dot_product(X, y, eps=1.0, delta=1e-5, random_state=3)
    assert a == b
    exact = noisy_dot_product(X, y, eps=math.inf, delta=1e-5).value
    assert 0 < np.abs(a.value - exact).max() < 8 * a.sigma


def test_dataframe_columns_travel_with_the_record():
    X, y, _ = _data()
    df = pd.DataFrame(X, columns=["one", "a", "b", "c"])
    rel = noisy_dot_product(df, y, eps=1.0, delta=1e-5, random_state=0)
    assert rel.columns == ("one", "a", "b", "c")


def test_json_round_trip_text_and_file(tmp_path):
    X, y, w = _data()
    rel = noisy_dot_product(pd.DataFrame(X, columns=list("pqrs")), y, eps=2.0, delta=1e-7,
                            weights=w, weights_bound=2.0, random_state=1)
    text = rel.to_json()
    back = NoisyDotProduct.from_json(text)
    assert back == rel
    np.testing.assert_array_equal(back.value, rel.value)  # bit-exact floats
    path = tmp_path / "release.json"
    rel.to_json(path)
    assert NoisyDotProduct.from_json(path) == rel
    assert NoisyDotProduct.from_json(str(path)) == rel
    inf = noisy_dot_product(X, y, eps=math.inf, delta=1e-7)
    assert NoisyDotProduct.from_json(inf.to_json()) == inf
    assert json.loads(inf.to_json())["eps"] == {"$float": "Infinity"}   # strict JSON (envelope)


def test_record_is_frozen_and_value_read_only():
    X, y, _ = _data()
    rel = noisy_dot_product(X, y, eps=1.0, delta=1e-5, random_state=0)
    with pytest.raises(Exception):
        rel.sigma = 0.0
    with pytest.raises(ValueError):
        rel.value[0] = 1.0


def _tampered(**changes):
    X, y, _ = _data()
    d = fields_of(noisy_dot_product(X, y, eps=1.0, delta=1e-5, random_state=0).to_json())
    d.update(changes)
    return release_text(d)          # checksummed: the field's own validation must refuse it


@pytest.mark.parametrize("changes, match", [
    (dict(sigma=1e-6), "sigma .* below"),
    (dict(sensitivity=1e-9), "sensitivity .* below"),
    (dict(eps=0.0), "eps"),
    (dict(delta=1.0), "delta"),
    (dict(mechanism="laplace"), "mechanism"),
    (dict(n=0), "n must be"),
    (dict(value=[0.1] * 9), "sensitivity"),  # k grew: the stated sensitivity no longer covers it
    (dict(value="abc"), "value"),
    (dict(columns=["a"]), "columns"),
    (dict(format="other"), "format"),
    (dict(version=4), "version"),
    (dict(extra=1), "unexpected"),
])
def test_loading_validates_every_field(changes, match):
    with pytest.raises((ValueError, TypeError), match=match):
        NoisyDotProduct.from_json(_tampered(**changes))


def test_loading_rejects_garbage(tmp_path):
    with pytest.raises(ValueError, match="not valid JSON"):
        NoisyDotProduct.from_json("{not json")
    with pytest.raises(ValueError, match="neither JSON text nor an existing file"):
        NoisyDotProduct.from_json(str(tmp_path / "missing.json"))
    d = fields_of(_tampered())
    del d["sigma"]
    with pytest.raises(ValueError, match="missing"):
        NoisyDotProduct.from_json(release_text(d))
    # an edit without a new checksum is refused as such
    text = _tampered().replace('"n": ', '"n": 1', 1)
    with pytest.raises(ValueError, match="corrupted.*checksum"):
        NoisyDotProduct.from_json(text)


# ------------------------------------------------------------------------ bad input, clear errors
def test_features_outside_unit_interval():
    X, y, _ = _data()
    X[5, 2] = 1.5
    with pytest.raises(ValueError, match=r"\[0, 1\].*clip=True"):
        noisy_dot_product(X, y, eps=1.0, delta=1e-5)
    X[7, 1] = -0.2
    with pytest.raises(ValueError, match=r"values fall outside it in"):
        noisy_dot_product(X, y, eps=1.0, delta=1e-5)
    # clip=True clips each record coordinate-wise: same release as the clipped data
    a = noisy_dot_product(X, y, eps=math.inf, delta=1e-5, clip=True)
    b = noisy_dot_product(np.clip(X, 0, 1), y, eps=math.inf, delta=1e-5)
    np.testing.assert_array_equal(a.value, b.value)


@pytest.mark.parametrize("weights, bound, match", [
    ("negative", 2.0, "weights must lie in"),
    ("above", 2.0, "weights must lie in"),
    ("ok", None, "weights_bound"),
    ("short", 2.0, "length"),
])
def test_bad_weights(weights, bound, match):
    X, y, w = _data()
    w = {"negative": np.r_[-0.1, w[1:]], "above": np.r_[2.5, w[1:]], "ok": w,
         "short": w[:10]}[weights]
    with pytest.raises(ValueError, match=match):
        noisy_dot_product(X, y, eps=1.0, delta=1e-5, weights=w, weights_bound=bound)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, 2.0])
def test_delta_outside_unit_interval(delta):
    X, y, _ = _data()
    with pytest.raises(ValueError, match="delta"):
        noisy_dot_product(X, y, eps=1.0, delta=delta)


@pytest.mark.parametrize("eps", [0.0, -1.0])
def test_eps_not_positive(eps):
    X, y, _ = _data()
    with pytest.raises(ValueError, match="eps"):
        noisy_dot_product(X, y, eps=eps, delta=1e-5)


def test_other_bad_inputs():
    X, y, _ = _data()
    with pytest.raises(ValueError, match="analytic"):
        noisy_dot_product(X, y, eps=2.0, delta=1e-5, mechanism="classic")
    with pytest.raises(ValueError, match="mechanism"):
        noisy_dot_product(X, y, eps=1.0, delta=1e-5, mechanism="laplace")
    with pytest.raises(ValueError, match="y has"):
        noisy_dot_product(X, y[:-1], eps=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="y must be two-valued"):
        noisy_dot_product(X, np.arange(X.shape[0]), eps=1.0, delta=1e-5)
    with pytest.raises(TypeError, match="eps"):
        noisy_dot_product(X, y, eps="1", delta=1e-5)
    with pytest.raises(TypeError, match="clip"):
        noisy_dot_product(X, y, eps=1.0, delta=1e-5, clip="yes")
