"""Jupyter display: DPLR._repr_html_ (and the WALR renderer) show and highlight the privacy fields."""

from __future__ import annotations

import numpy as np
import pytest

from privatelr import dplr
from privatelr.datasets import load_iris
from privatelr.report import dplr_html, walr_html


@pytest.fixture(scope="module")
def iris():
    df = load_iris()
    df[df.columns[:4]] /= 12
    return df


def _privacy_rows(html: str) -> list[str]:
    return [row for row in html.split("<tr") if 'class="privatelr-privacy"' in row]


def test_dplr_repr_html_objective(iris):
    m = dplr("I(Species == 'setosa') ~ .", iris, eps=1.5, lambda_=0.02, random_state=0)
    html = m._repr_html_()
    assert html == dplr_html(m)
    rows = _privacy_rows(html)
    assert len(rows) == 5 and all("background-color" in r for r in rows)
    joined = "".join(rows)
    assert "Privacy level (eps)" in joined and ">1.5<" in joined
    assert "objective perturbation" in joined
    assert f"{m.eps_eff:.6f}"[:6] in joined            # eps' printed in the privacy block
    assert "1.414214" in joined                        # B = sqrt(2) with the intercept
    # the C-index is marked as not private; the coefficients are all listed
    leak = [r for r in html.split("<tr") if 'class="privatelr-leak"' in r]
    assert any("C-index" in r for r in leak)
    for name in m.coefficients.index:
        assert name in html
    assert 'I(Species == &quot;setosa&quot;)' in html     # the formula is HTML-escaped


def test_dplr_repr_html_output_and_nonprivate(iris):
    m = dplr("I(Species == 'setosa') ~ .", iris, eps=1.0, op=False, random_state=0)
    assert "output perturbation" in "".join(_privacy_rows(m._repr_html_()))
    m0 = dplr("I(Species == 'setosa') ~ .", iris, eps=0)
    assert "none (non-private fit)" in "".join(_privacy_rows(m0._repr_html_()))


def test_data_driven_threshold_is_flagged(iris):
    with pytest.warns(Warning):
        m = dplr("I(Species == 'setosa') ~ .", iris, eps=1.0, threshold="youden", random_state=0,
                 compat="PrivateLR")
    leak = [r for r in m._repr_html_().split("<tr") if 'class="privatelr-leak"' in r]
    assert any("threshold" in r for r in leak)
    assert any("NOT PRIVATE" in r for r in leak)             # the void guarantee, first row
    assert "NOT PRIVATE" in m._repr_html_().split("<tr")[0]  # and in the title


def test_walr_html_privacy_fields():
    walr = pytest.importorskip("privatelr.label_dp")
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(300, 2))
    y = (X[:, 0] > 0.5).astype(int)
    rel = walr.noisy_dot_product(X, y, eps=1.0, delta=1e-5, random_state=0)
    res = walr.walr_fit(X, rel, lambda_=0.1, solver="newton")
    html = walr_html(res)
    joined = "".join(_privacy_rows(html))
    assert "(eps=1, delta=1e-05)-label-DP" in joined and "Noise sigma" in joined
    if hasattr(res, "_repr_html_"):
        assert res._repr_html_() == html
