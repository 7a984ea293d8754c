"""Plots render to PNG with the Agg backend; labels, line counts and the simulated noise law."""

from __future__ import annotations

import io
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from privatelr import PrivacyWarning, dplr, erm  # noqa: E402
from privatelr.datasets import load_iris, make_sphere  # noqa: E402
from privatelr.experiments import privacy_utility as run_experiment  # noqa: E402
from privatelr import plot  # noqa: E402


def _png(ax) -> bytes:
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png")
    plt.close(ax.figure)
    data = buf.getvalue()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return data


@pytest.fixture(scope="module")
def iris():
    df = load_iris()
    df[df.columns[:4]] /= 12          # public rescaling: covariate rows inside the unit ball
    return df


@pytest.fixture(scope="module")
def table():
    X, y = make_sphere(400, 4, margin=0.05, random_state=0)
    return run_experiment(X, y=y, eps_grid=[0.5, 2.0, 8.0], repeats=3, folds=2, lambda_=0.01,
                          n_train=[60, 190], random_state=1)


def test_plot_roc_renders_with_labels_threshold_and_auc(iris):
    m = dplr("I(Species == 'versicolor') ~ .", iris, eps=0)
    ax = m.plot_roc(iris)
    assert ax.get_xlabel().startswith("False positive rate")
    assert ax.get_ylabel().startswith("True positive rate")
    lines = ax.get_lines()
    assert len(lines) == 3                      # ROC, chance diagonal, threshold marker
    fpr, tpr = lines[0].get_xdata(), lines[0].get_ydata()
    assert (fpr[0], tpr[0]) == (0.0, 0.0) and (fpr[-1], tpr[-1]) == (1.0, 1.0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    # on the training data the legend's AUC is dplr's C-index (same definition, ties half)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts[0] == f"ROC (AUC = {m.CIndex:.3f})"
    # the marker sits at the threshold p_tr = 0.5: sensitivity of p > 0.5 on the data
    p = m.predict(iris)
    pos = (iris["Species"] == "versicolor").to_numpy()
    assert lines[2].get_ydata()[0] == pytest.approx(np.mean(p[pos] > 0.5))
    assert lines[2].get_xdata()[0] == pytest.approx(np.mean(p[~pos] > 0.5))
    _png(ax)


def test_roc_curve_area_equals_c_index():
    rng = np.random.default_rng(3)
    s = np.round(rng.normal(size=300), 1)       # many ties
    y = (s + rng.normal(size=300) > 0).astype(int)
    fpr, tpr, _ = plot.roc_curve(s, y)
    from privatelr.report.roc import c_index

    assert np.trapezoid(tpr, fpr) == pytest.approx(c_index(s, y), abs=1e-12)


def test_plot_roc_generic_estimator_and_bad_input():
    X, y = make_sphere(300, 3, margin=0.1, random_state=2)

    class Scores:
        def decision_function(self, X):
            return X[:, 0]

    ax = plot.plot_roc(Scores(), (X, y))
    assert len(ax.get_lines()) == 3
    assert "AUC = 1.000" in ax.get_legend().get_texts()[0].get_text()
    _png(ax)
    with pytest.raises(TypeError, match="data must be a DataFrame"):
        plot.plot_roc(Scores(), X)
    with pytest.raises(TypeError, match="neither predict_proba"):
        plot.plot_roc(object(), (X, y))


def test_privacy_utility_plot_eps_axis(table):
    ax = plot.privacy_utility(table[table.n_train > 100])
    assert ax.get_xscale() == "log"
    assert ax.get_ylabel() == "test error" and "ε" in ax.get_xlabel()
    assert len(ax.get_lines()) == 3             # one line per method
    obj = ax.get_lines()[0]
    sub = table[(table.method == "objective") & (table.n_train > 100)]
    np.testing.assert_allclose(obj.get_ydata(), sub.groupby("eps").error.mean().to_numpy())
    assert len(ax.collections) == 3             # one band per method
    _png(ax)
    ax = plot.privacy_utility(table[table.n_train > 100], metric="auc", band="quantile")
    assert ax.get_ylabel() == "test AUC" and len(ax.get_lines()) == 3
    _png(ax)


def test_privacy_utility_plot_learning_curve(table):
    ax = plot.privacy_utility(table[table.eps.isin([2.0, np.inf])], x="n_train")
    assert ax.get_xlabel() == "training set size n" and ax.get_xscale() == "linear"
    assert len(ax.get_lines()) == 3
    assert list(ax.get_lines()[0].get_xdata()) == sorted(table.n_train.unique())
    _png(ax)
    with pytest.raises(ValueError, match="one eps per method"):
        plot.privacy_utility(table, x="n_train")
    with pytest.raises(ValueError, match="metric"):
        plot.privacy_utility(table, metric="accuracy")
    with pytest.raises(TypeError, match="DataFrame"):
        plot.privacy_utility(table.to_dict())


def _reference_line(ax):
    return next(ln for ln in ax.get_lines() if ln.get_label().startswith("non-private"))


def test_privacy_utility_reference_line_averages_every_fold_of_the_private_design():
    # 5-fold CV on a row count that 5 does not divide: the training parts differ by one row
    # (fold 0-2: 400 rows, fold 3-4: 399). The reference must be the non-private mean over ALL
    # five folds the private points were trained on: (0.1+0.2+0.3+0.6+0.8)/5 = 0.4. Keeping
    # only the folds with the largest n_train (the old rule) gives (0.1+0.2+0.3)/3 = 0.2.
    sizes = [400, 400, 400, 399, 399]
    priv = pd.DataFrame({"method": "objective", "eps": 1.0, "fold": range(5), "repeat": 0,
                         "n_train": sizes, "error": 0.5, "auc": 0.5})
    nonp = pd.DataFrame({"method": "nonprivate", "eps": np.inf, "fold": range(5), "repeat": 0,
                         "n_train": sizes, "error": [0.1, 0.2, 0.3, 0.6, 0.8], "auc": 0.9})
    ax = plot.privacy_utility(pd.concat([priv, nonp], ignore_index=True))
    ref = _reference_line(ax)
    assert ref.get_ydata()[0] == pytest.approx(0.4)
    assert "mean of 5 folds" in ref.get_label()
    plt.close(ax.figure)


def test_privacy_utility_reference_line_matches_the_private_training_size(table):
    # a learning-curve table filtered to the private points at n_train = 190: the reference is
    # the non-private mean at 190 rows, not over the 60-row fits as well
    ax = plot.privacy_utility(table[table.n_train > 100])
    np.testing.assert_allclose(_reference_line(ax).get_ydata(),
                               table[(table.method == "nonprivate") & (table.n_train == 190)]
                               .error.mean())
    plt.close(ax.figure)
    ax = plot.privacy_utility(table[(table.method != "nonprivate") | (table.n_train == 60)]
                              [lambda t: (t.method == "nonprivate") | (t.n_train == 60)])
    np.testing.assert_allclose(_reference_line(ax).get_ydata(),
                               table[(table.method == "nonprivate") & (table.n_train == 60)]
                               .error.mean())
    plt.close(ax.figure)
    # private points of two training sizes per fold would average two designs: refused
    with pytest.raises(ValueError, match="one training size per fold"):
        plot.privacy_utility(table)
    # no non-private fit on the private design: refused rather than compared with another
    with pytest.raises(ValueError, match="no non-private fit"):
        plot.privacy_utility(table[((table.method == "nonprivate") & (table.n_train == 60)) |
                                   ((table.method != "nonprivate") & (table.n_train == 190))])


def test_privacy_utility_colors_are_a_fixed_mapping(table):
    # a method keeps its colour whatever the order of the methods in the table
    t = table[table.n_train > 100]
    colors = {"objective": "tab:green", "output": "tab:purple"}
    for order in (["objective", "output"], ["output", "objective"]):
        sub = pd.concat([t[t.method == m] for m in order])
        ax = plot.privacy_utility(sub, colors=colors)
        got = {ln.get_label(): ln.get_color() for ln in ax.get_lines()}
        assert got == {"objective perturbation": "tab:green",
                       "output perturbation (sensitivity)": "tab:purple"}
        plt.close(ax.figure)
    with pytest.raises(TypeError, match="colors"):
        plot.privacy_utility(t, colors=["red"])


@pytest.mark.parametrize("op", [True, False])
def test_plot_coefficients_renders(iris, op):
    m = dplr("I(Species == 'setosa') ~ .", iris, eps=1, op=op, lambda_=0.05, random_state=0)
    ax = m.plot_coefficients(random_state=0)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(m.coefficients.index)
    assert ax.get_xlabel() == "coefficient"
    assert len(ax.get_lines()) == 2             # coefficient markers and the zero line
    assert len(ax.collections) == 1             # the bars
    np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), m.coefficients.to_numpy())
    assert ("output" if not op else "objective") in ax.get_title()
    _png(ax)


def test_noise_draws_output_perturbation_exact_law(iris):
    # ||b|| ~ Gamma(d, s) with s = 2B/(n lambda eps). With 4000 draws, d = 5 the mean norm has
    # relative standard error 1/sqrt(5 * 4000) = 0.7%, so a 5% tolerance passes reliably and a
    # constant off by 2 (or a missing B = sqrt(2)) fails by > 40%.
    m = dplr("I(Species == 'setosa') ~ .", iris, eps=0.5, op=False, lambda_=0.05, random_state=0)
    draws = plot.noise_draws(m, draws=4000, random_state=7)
    s = 2 * np.sqrt(2) / (150 * 0.05 * 0.5)
    norms = np.linalg.norm(draws, axis=1)
    assert norms.mean() == pytest.approx(5 * s, rel=0.05)
    assert norms.var() == pytest.approx(5 * s * s, rel=0.15)
    # uniform direction: each coordinate's mean is 0 (sd of the mean ~ s*sqrt(6)/sqrt(4000))
    assert np.abs(draws.mean(axis=0)).max() < 5 * s * np.sqrt(6 / 4000)


def test_noise_draws_objective_envelope_and_data_hessian(iris):
    m = dplr("I(Species == 'setosa') ~ .", iris, eps=1.0, lambda_=0.05, random_state=0)
    cal = erm.calibrate(150, 5, eps=1.0, lambda_=0.05, data_norm=np.sqrt(2))
    draws = plot.noise_draws(m, draws=4000, random_state=7)
    # b/(n lambda) with ||b|| ~ Gamma(d, 2B/eps'): same 0.7% relative standard error as above
    expected = 5 * cal.noise_scale / (150 * 0.05)
    assert np.linalg.norm(draws, axis=1).mean() == pytest.approx(expected, rel=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        plot.noise_draws(m, draws=10, random_state=1)          # data-free: no warning
    with pytest.warns(PrivacyWarning, match="not private"):
        tight = plot.noise_draws(m, draws=4000, random_state=7, data=iris)
    # H >= lambda I: the data Hessian never gives a longer displacement than the envelope
    assert np.all(np.linalg.norm(tight, axis=1) <= np.linalg.norm(draws, axis=1) * (1 + 1e-9))
    with pytest.warns(PrivacyWarning):
        ax = plot.plot_coefficients(m, data=iris, random_state=0)
    assert "not private" in ax.get_title()
    _png(ax)


def test_nonprivate_coefficients_have_no_spread(iris):
    m = dplr("I(Species == 'setosa') ~ .", iris, eps=0)
    assert not plot.noise_draws(m, draws=5).any()
    _png(plot.plot_coefficients(m))
    with pytest.raises(TypeError, match="DPLR"):
        plot.plot_coefficients("model")


def test_missing_matplotlib_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r'pip install "privatelr\[plot\]"'):
        plot.privacy_utility(pd.DataFrame({"method": ["objective"], "eps": [1.0],
                                           "error": [0.1]}))


def test_coefficient_bars_are_the_symmetric_noise_quantile(iris):
    # the bar half-width of coefficient j is the level-quantile of |displacement_j| over the
    # same simulated draws (same random_state), centred on the released coefficient
    m = dplr("I(Species == 'setosa') ~ .", iris, eps=1, op=False, lambda_=0.05, random_state=0)
    ax = plot.plot_coefficients(m, draws=300, random_state=4, level=0.9)
    half = np.quantile(np.abs(plot.noise_draws(m, draws=300, random_state=4)), 0.9, axis=0)
    segs = ax.collections[0].get_segments()
    coef = m.coefficients.to_numpy()
    lo = np.array([s[0][0] for s in segs])
    hi = np.array([s[1][0] for s in segs])
    np.testing.assert_allclose(lo, coef - half)
    np.testing.assert_allclose(hi, coef + half)
    plt.close(ax.figure)


def test_coefficient_plot_keeps_long_term_names_inside_its_figure():
    """Issue 29: the coefficient plot cropped its labels (long factor names ran off the left
    edge); a figure the plot creates is laid out so every tick label is inside it."""
    import privatelr as pl
    from privatelr.datasets import load_mtcars

    m = pl.dplr("am ~ mpg + hp + factor(cyl)", load_mtcars(), eps=1, random_state=1,
                bounds=pl.public_bounds({"mpg": (10, 35), "hp": (50, 350)},
                                        levels={"cyl": [4, 6, 8]}))
    ax = m.plot_coefficients()
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    for label in ax.get_yticklabels():
        box = label.get_window_extent(renderer)
        assert 0 <= box.x0 and box.x1 <= width, label.get_text()
