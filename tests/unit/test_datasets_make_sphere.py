"""make_sphere: the NIPS 2008 designs (unit sphere, empty margin, label flips inside a band)."""

from __future__ import annotations

import numpy as np
import pytest

from privatelr.datasets import make_sphere


def test_shape_norms_and_reproducibility():
    X, y = make_sphere(2000, 10, margin=0.03, random_state=5)
    assert X.shape == (2000, 10) and y.shape == (2000,)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=0, atol=1e-12)
    assert set(np.unique(y)) == {0, 1}
    X2, y2 = make_sphere(2000, 10, margin=0.03, random_state=5)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    X3, _ = make_sphere(2000, 10, margin=0.03, random_state=np.random.default_rng(5))
    assert np.array_equal(X, X3)
    assert not np.array_equal(X, make_sphere(2000, 10, margin=0.03, random_state=6)[0])


def test_margin_is_empty_and_labels_separable():
    X, y = make_sphere(20000, 10, margin=0.2, random_state=0)
    assert np.abs(X[:, 0]).min() >= 0.2
    assert np.array_equal(y, (X[:, 0] > 0).astype(int))
    # conditioning on |x1| >= margin keeps the law symmetric: balance of labels. n = 20000 gives
    # a standard error of 0.0035 on the positive share; 0.02 is > 5 se (a one-sided rejection
    # bug would move it by ~0.2)
    assert abs(y.mean() - 0.5) < 0.02


def test_uniform_on_the_sphere_without_margin():
    # E[x_1^2] = 1/d holds for any exchangeable law; the fourth moment identifies the sphere:
    # E[x_1^4] = 3/(d(d+2)) = 0.025 for d = 10. sd(x_1^4) ~ 0.057, so the mean of n = 20000 has
    # se 0.0004; tolerance 0.002 (5 se) rejects e.g. the normalised cube (E[x_1^4] ~ 0.018)
    X, y = make_sphere(20000, 10, random_state=1)
    assert np.mean(X[:, 0] ** 2) == pytest.approx(0.1, abs=0.006)
    assert np.mean(X[:, 0] ** 4) == pytest.approx(0.025, abs=0.002)
    # d = 3 (Archimedes): x_1 is uniform on [-1, 1]: P(|x1| < 0.5) = 0.5 (se 0.0035)
    X3, _ = make_sphere(20000, 3, random_state=2)
    assert np.mean(np.abs(X3[:, 0]) < 0.5) == pytest.approx(0.5, abs=0.02)


def test_margin_rejection_is_the_conditional_law():
    # For d = 3 the conditional law of |x1| given |x1| >= m is uniform on [m, 1]:
    # P(|x1| < (1+m)/2 | ...) = 0.5 (se 0.0035 at n = 20000)
    X, _ = make_sphere(20000, 3, margin=0.4, random_state=3)
    assert np.mean(np.abs(X[:, 0]) < 0.7) == pytest.approx(0.5, abs=0.02)


def test_label_flips_only_inside_the_band_at_rate_flip():
    # In-band share for d = 10, band 0.1 is about 0.25: ~5000 of 20000 points, so the observed
    # flip rate has se sqrt(0.2 * 0.8 / 5000) = 0.0057; tolerance 0.03 (> 5 se) rejects flip
    # rates 0.1 or 0.4 and flipping outside the band is checked exactly.
    X, y = make_sphere(20000, 10, noise_band=0.1, flip=0.2, random_state=4)
    clean = (X[:, 0] > 0).astype(int)
    band = np.abs(X[:, 0]) <= 0.1
    assert band.sum() > 3000
    assert np.array_equal(y[~band], clean[~band])
    assert np.mean(y[band] != clean[band]) == pytest.approx(0.2, abs=0.03)
    X, y = make_sphere(5000, 10, noise_band=0.1, flip=0.0, random_state=4)
    assert np.array_equal(y, (X[:, 0] > 0).astype(int))
    # flip without a band is ignored (documented)
    X, y = make_sphere(5000, 10, flip=0.5, random_state=4)
    assert np.array_equal(y, (X[:, 0] > 0).astype(int))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(n=0, d=3), ValueError, "n"),
    (dict(n=10, d=1), ValueError, "d"),
    (dict(n=10, d=3, margin=1.0), ValueError, "margin"),
    (dict(n=10, d=3, margin=-0.1), ValueError, "margin"),
    (dict(n=10, d=3, noise_band=0.0), ValueError, "noise_band"),
    (dict(n=10, d=3, noise_band=0.1, flip=1.5), ValueError, "flip"),
    (dict(n=2.5, d=3), TypeError, "n"),
])
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_sphere(**kwargs)
