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


def _walr_result():
    """A WALR fit from a (1, 1e-5)-label-DP release on 300 rows."""
    walr = pytest.importorskip("privatelr.label_dp")
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(300, 2))
    y = (X[:, 0] > 0.5).astype(int)
    rel = walr.noisy_dot_product(X, y, eps=1.0, delta=1e-5, random_state=0)
    return walr.walr_fit(X, rel, lambda_=0.1, solver="newton")


def test_walr_html_privacy_fields():
    res = _walr_result()
    html = walr_html(res)
    joined = "".join(_privacy_rows(html))
    assert "(eps=1, delta=1e-05)-label-DP" in joined and "Noise sigma" in joined
    if hasattr(res, "_repr_html_"):
        assert res._repr_html_() == html


# ---- dark themes, the headline, one number format, wrapping ----------------------------------

from html.parser import HTMLParser  # noqa: E402

from privatelr import summary  # noqa: E402
from privatelr.report.text import guarantee_headline  # noqa: E402


class _Page(HTMLParser):
    """Elements in document order (tag, class, style) and the table rows' cell texts."""

    def __init__(self, html: str):
        super().__init__()
        self.elements, self.rows, self.text_order = [], [], []
        self._row = self._cell = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a.get("class") or "", a.get("style") or ""))
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if data.strip():
            self.text_order.append(data.strip())

    def value(self, label: str) -> str:
        return next(r[1] for r in self.rows if r[0] == label)


def _styles(style: str) -> dict:
    return {k.strip(): v.strip() for k, v in
            (p.split(":", 1) for p in style.split(";") if ":" in p)}


@pytest.fixture(scope="module")
def fits(iris):
    private = dplr("I(Species == 'setosa') ~ .", iris, eps=1.5, lambda_=0.02, random_state=0)
    nonprivate = dplr("I(Species == 'setosa') ~ .", iris, eps=0)
    with pytest.warns(Warning):
        compat = dplr("I(Species == 'setosa') ~ .", iris, eps=1.0, random_state=0,
                      compat="PrivateLR")
    return {"private": private, "nonprivate": nonprivate, "compat": compat}


@pytest.mark.parametrize("kind", ["private", "nonprivate", "compat"])
def test_every_background_comes_with_a_text_colour(fits, kind):
    # a hard-coded background under the theme's text colour is unreadable on a dark theme (light
    # text on a pastel tint): every element that paints a background also sets `color`, and no
    # element fixes a light/dark text colour of its own (it inherits the page's)
    page = _Page(fits[kind]._repr_html_())
    painted = [e for e in page.elements
               if {"background", "background-color"} & set(_styles(e[2]))]
    assert painted                                   # the privacy rows are highlighted
    for tag, cls, style in painted:
        assert "color" in _styles(style), (tag, cls, style)
    for _, _, style in page.elements:
        colour = _styles(style).get("color")
        assert colour in (None, "inherit"), style


def test_walr_html_backgrounds_have_colours():
    walr = pytest.importorskip("privatelr.label_dp")
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(200, 2))
    y = (X[:, 0] > 0.5).astype(int)
    exact = walr.walr_fit(X, walr.noisy_dot_product(X, y, eps=np.inf, delta=1e-5), lambda_=0.1)
    page = _Page(walr_html(exact))
    for _, _, style in page.elements:
        if "background-color" in _styles(style):
            assert _styles(style).get("color") == "inherit"
    # eps = inf is not private: the headline leads the page
    assert page.elements[1][1] == "privatelr-headline"
    assert page.text_order[0].startswith("NOT PRIVATE")


@pytest.mark.parametrize("kind", ["nonprivate", "compat"])
def test_void_guarantee_is_the_headline_not_a_footnote(fits, kind):
    # the first element inside the summary box is the headline, and its text is the first text
    # of the page (before the formula and every table)
    page = _Page(fits[kind]._repr_html_())
    assert page.elements[0][1] == "privatelr-summary"
    assert page.elements[1][1] == "privatelr-headline"
    assert page.text_order[0] == guarantee_headline(fits[kind])
    assert page.text_order[0].startswith("NOT PRIVATE")
    assert "compat" in page.text_order[0] if kind == "compat" else "eps = 0" in page.text_order[0]


def test_private_fit_has_no_headline(fits):
    page = _Page(fits["private"]._repr_html_())
    assert not [e for e in page.elements if e[1] == "privatelr-headline"]
    assert guarantee_headline(fits["private"]) is None
    assert not any("NOT PRIVATE" in t for t in page.text_order)


@pytest.mark.parametrize("kind", ["private", "nonprivate", "compat"])
def test_html_numbers_are_the_text_summary_numbers(fits, kind):
    # the HTML used `.6g` for the coefficients while the text printed R's 7 significant digits;
    # both now come from one formatter, so every number reads the same in both views
    m = fits[kind]
    text = str(summary(m))
    page = _Page(m._repr_html_())
    body = text.split("\n\n")
    if body[0].startswith(" NOT PRIVATE"):       # the headline leads a fit without guarantee
        body = body[1:]
    block = body[2].split("\n")
    names, values = block[0].split(), block[1].split()
    html_coefs = {}
    for r in page.rows:      # the coefficient vector first (glm's table, if any, follows)
        if r[0] in m.coefficients.index:
            html_coefs.setdefault(r[0], r[1])
    assert names == list(m.coefficients.index)
    assert [html_coefs[n] for n in names] == values
    assert f" Privacy level: {page.value('Privacy level (eps)')} " in text
    assert f" Regularization parameter: {page.value('Regularization parameter (lambda)')} " \
        in text
    assert f" C-index (AUC): {page.value('C-index (AUC), training data')} " in text
    assert f"(p.tr): {page.value('Classification threshold (p.tr)')}" in text
    if m.method != "nonprivate":
        eps_eff = page.value("eps' used for the noise")
        assert f"eps' = {eps_eff};" in text


def test_long_lines_wrap_in_text_and_html(iris):
    # a long formula (many long column names) wraps at 80 columns in the text, R-like (break
    # after '+', continuation indented by four spaces); the HTML lets the browser wrap it
    wide = iris.rename(columns={c: c + "_measured_in_centimetres" for c in iris.columns[:4]})
    m = dplr("I(Species == 'setosa') ~ .", wide, eps=1, random_state=0)
    text = str(summary(m))
    assert all(len(line) <= 80 for line in text.split("\n\n")[0].split("\n"))
    head = text.split("\n\n")[0].split("\n")
    assert len(head) > 1 and head[0].endswith("+ ") and head[1].startswith("    ")
    assert " ".join(t.strip() for t in head).split() == m.formula.split()
    # privatelr's notes wrap too (the coefficient block is R's and wraps by names)
    notes = text.split("\n\n")[3].split("\n")
    assert all(len(line) <= 80 for line in notes) and all(line.startswith(" ") for line in notes
                                                        if line)
    html = m._repr_html_()
    page = _Page(html)
    box = next(e for e in page.elements if e[1] == "privatelr-summary")
    assert _styles(box[2]).get("overflow-wrap") == "anywhere"
    assert _styles(box[2]).get("white-space") == "pre-wrap"


def test_walr_text_and_html_share_the_numbers():
    res = _walr_result()
    page = _Page(walr_html(res))
    text = res.summary()
    assert f"sigma={page.value('Noise sigma')}" in text      # was .6g in HTML, .4g in text
    for name, value in zip(res.columns, res.coef):
        assert any(line.split() == [name, page.value(name)] for line in text.split("\n"))
    assert not [e for e in page.elements if e[1] == "privatelr-headline"]
