"""Private by construction in scikit-learn: the public-bounds transformer and the pipeline check.

* PublicBoundsTransformer is dplr's public map (same columns, same data_norm, to rounding), learns
  nothing from the rows, pickles, names its columns, and works in a ColumnTransformer;
* a pipeline of it and DPLogisticRegression(data_norm="from_bounds") pickles and round-trips,
  reports coefficients and intervals per unit of the original columns (exactly dplr's at eps=0);
* a step that learned from the rows before a private estimator warns (PrivacyWarning), in our
  make_pipeline and in scikit-learn's; a public step does not.
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.pipeline import make_pipeline as sklearn_make_pipeline  # noqa: E402

from privatelr import PrivacyWarning, confint, dplr, public_bounds  # noqa: E402
from privatelr.sklearn import (DPLogisticRegression, Pipeline, PublicBoundsTransformer,  # noqa: E402
                               learned_statistics, make_pipeline)

RANGES = {"age": (18, 90), "bmi": (15, 50)}
LEVELS = {"sex": ["F", "M"], "region": ["north", "south", "east"]}
COLUMNS = ["age", "bmi", "sex", "region"]


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 1500
    df = pd.DataFrame({"age": rng.uniform(18, 90, n), "bmi": rng.uniform(15, 50, n),
                       "sex": rng.choice(["F", "M"], n),
                       "region": rng.choice(["north", "south", "east"], n)})
    z = -1 + (df.age - 54) / 20 + 0.5 * (df.sex == "M") - 0.4 * (df.region == "east")
    df["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(int)
    return df


def _caught(fit):
    """The warnings raised by ``fit()`` (all of them, every time)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [w for w in caught]


def _privacy(caught):
    return [str(w.message) for w in caught if issubclass(w.category, PrivacyWarning)]


# ---------------------------------------------------------------- the transformer is dplr's map
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("norm", ["max", "rms"])
def test_transformer_is_dplrs_public_map(frame, center, norm):
    pb = public_bounds(RANGES, levels=LEVELS, center=center, norm=norm)
    t = PublicBoundsTransformer(pb).fit(frame[COLUMNS])
    m = dplr("y ~ age + bmi + sex + region", frame, bounds=pb, eps=1, random_state=0)
    design = m.spec.rows(frame, response=False).X[:, 1:]      # dplr's fitted rows, no intercept
    ours = t.transform(frame[COLUMNS])
    if norm == "rms":           # dplr's rows are clipped onto data_norm (the estimator's clip)
        norms = np.linalg.norm(ours, axis=1)
        assert (norms > t.data_norm).any()
        ours = ours * np.minimum(1.0, t.data_norm / norms)[:, None]
    np.testing.assert_allclose(ours, design, rtol=1e-13, atol=1e-15)
    assert t.data_norm == pytest.approx(m.data_norm, rel=1e-13)
    assert t.clip == (norm == "rms")
    assert t.get_feature_names_out().tolist() == ["age", "bmi", "sex_M", "region_south",
                                                  "region_east"]
    # the affine map dplr inverts to report in data units is the same matrix
    np.testing.assert_allclose(t.design_matrix(),
                               m.spec.preprocess.design_matrix(m.d, True), rtol=1e-13)


def test_transformer_learns_nothing_from_the_rows(frame):
    a, b = frame.iloc[:700][COLUMNS], frame.iloc[700:][COLUMNS]
    ta = PublicBoundsTransformer(RANGES, levels=LEVELS).fit(a)
    tb = PublicBoundsTransformer(RANGES, levels=LEVELS).fit(b)
    # fitted on disjoint rows, the two are the same object byte for byte: nothing of the rows
    assert pickle.dumps(ta) == pickle.dumps(tb)
    assert set(vars(ta)) == {"bounds", "levels", "n_features_in_", "feature_names_in_"}
    assert learned_statistics(ta) == {}
    np.testing.assert_array_equal(ta.transform(b), tb.transform(b))
    # the data_norm is known before any data: a function of the declaration only
    assert PublicBoundsTransformer(RANGES, levels=LEVELS).data_norm == 2.0


def test_transformer_by_position_set_output_and_clone():
    X = np.array([[0.0, 5.0, 1.0], [7.5, -2.5, 0.0]])
    t = PublicBoundsTransformer({0: (0, 10), 1: (-5, 5)}, levels={2: [0.0, 1.0]})
    np.testing.assert_allclose(t.fit_transform(X), [[-1.0, 1.0, 0.5], [0.5, -0.5, -0.5]])
    assert t.get_feature_names_out().tolist() == ["x0", "x1", "x2_1.0"]
    out = clone(t).set_output(transform="pandas").fit_transform(X)
    assert list(out.columns) == ["x0", "x1", "x2_1.0"]
    assert clone(t).get_params() == t.get_params()
    back = pickle.loads(pickle.dumps(t))
    np.testing.assert_array_equal(back.transform(X), t.transform(X))


@pytest.mark.parametrize("make, X, exc, match", [
    (lambda: PublicBoundsTransformer({"age": (18, 90)}), pd.DataFrame({"age": [20.0],
     "bmi": [20.0]}), ValueError, r"not declared: \['bmi'\]"),
    (lambda: PublicBoundsTransformer({"age": (18, 90), "bmi": (15, 50)}),
     pd.DataFrame({"age": [20.0]}), ValueError, r"declared but not in the input: \['bmi'\]"),
    (lambda: PublicBoundsTransformer(levels={"sex": ["F", "M"]}),
     pd.DataFrame({"sex": ["F", "X"]}), ValueError, "outside its declared levels"),
    (lambda: PublicBoundsTransformer({"age": (18, 90)}), pd.DataFrame({"age": [20.0, np.nan]}),
     ValueError, "NaN"),
    (lambda: PublicBoundsTransformer({"age": (18, 90)}), pd.DataFrame({"age": ["old"]}),
     ValueError, "not numbers"),
    (lambda: PublicBoundsTransformer(), np.zeros((2, 1)), ValueError, "needs declared columns"),
    (lambda: PublicBoundsTransformer([(0, 1)]), np.zeros((2, 1)), TypeError, "bounds must be"),
    (lambda: PublicBoundsTransformer(public_bounds({"a": (0, 1)}), levels={"b": [0, 1]}),
     pd.DataFrame({"a": [0.5]}), ValueError, "levels= goes to privatelr.public_bounds"),
    (lambda: PublicBoundsTransformer(levels={"sex": ["F"]}), pd.DataFrame({"sex": ["F"]}),
     ValueError, "at least two distinct levels"),
])
def test_transformer_refuses_what_it_cannot_map(make, X, exc, match):
    with pytest.raises(exc, match=match):
        make().fit_transform(X)


def test_transformer_does_not_echo_a_private_value():
    with pytest.raises(ValueError) as info:
        PublicBoundsTransformer(levels={"sex": ["F", "M"]}).fit_transform(
            pd.DataFrame({"sex": ["F", "Secret-Level"]}))
    assert "Secret-Level" not in str(info.value)


def test_transformer_refuses_sparse_input():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="dense X"):
        PublicBoundsTransformer({0: (0, 1)}).fit(sp.csr_matrix(np.ones((2, 1))))


# ---------------------------------------------------------------- the Done-when pipeline
def test_pipeline_pickles_round_trips_and_names_its_features(frame):
    pb = public_bounds(RANGES, levels=LEVELS)
    pipe = make_pipeline(PublicBoundsTransformer(pb),
                         DPLogisticRegression(eps=1.0, data_norm="from_bounds", random_state=3))
    assert isinstance(pipe, Pipeline)
    caught = _caught(lambda: pipe.fit(frame[COLUMNS], frame.y))
    assert not caught, [str(w.message) for w in caught]        # public: no warning at all
    est = pipe[-1]
    assert est.result_.data_norm == pytest.approx(math.sqrt(1 + 4))   # [1, x], ||x|| <= 2
    assert pipe[:-1].get_feature_names_out().tolist() == ["age", "bmi", "sex_M",
                                                          "region_south", "region_east"]
    back = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(back.predict_proba(frame[COLUMNS]),
                                  pipe.predict_proba(frame[COLUMNS]))
    np.testing.assert_array_equal(back.predict(frame[COLUMNS]), pipe.predict(frame[COLUMNS]))
    assert back[-1].random_state is None                 # the release: no seed in the pickle
    assert back[:-1].get_feature_names_out().tolist() == \
        pipe[:-1].get_feature_names_out().tolist()
    assert type(back) is Pipeline and type(clone(pipe)) is Pipeline


def test_column_transformer_gives_the_same_model(frame):
    whole = make_pipeline(PublicBoundsTransformer(RANGES, levels=LEVELS),
                          DPLogisticRegression(data_norm="from_bounds", random_state=0))
    ct = make_column_transformer((PublicBoundsTransformer(RANGES), ["age", "bmi"]),
                                 (PublicBoundsTransformer(levels=LEVELS), ["sex", "region"]),
                                 remainder="drop")
    split = make_pipeline(ct, DPLogisticRegression(data_norm="from_bounds", random_state=0))
    Xy = frame.assign(extra=1.0)                        # a column the transformer drops
    whole.fit(frame[COLUMNS], frame.y)
    assert not _privacy(_caught(lambda: split.fit(Xy, frame.y)))
    # the bounds of the parts combine: sqrt(sqrt(2)^2 + sqrt(2)^2) = 2, the whole's
    assert split[-1].result_.data_norm == whole[-1].result_.data_norm
    np.testing.assert_array_equal(split[-1].coef_, whole[-1].coef_)
    np.testing.assert_allclose(split.coefficients().to_numpy(), whole.coefficients().to_numpy())
    assert split[:-1].get_feature_names_out()[0] == "publicboundstransformer-1__age"
    back = pickle.loads(pickle.dumps(split))
    np.testing.assert_array_equal(back.predict_proba(Xy), split.predict_proba(Xy))


def test_column_transformer_by_position_and_with_declared_one_hot(frame):
    from sklearn.preprocessing import OneHotEncoder

    X = frame[COLUMNS].to_numpy(dtype=object)
    ct = make_column_transformer((PublicBoundsTransformer({0: (18, 90), 1: (15, 50)}), [0, 1]),
                                 (OneHotEncoder(categories=[LEVELS["sex"]], drop="first",
                                                sparse_output=False), [2]))
    pipe = make_pipeline(ct, DPLogisticRegression(data_norm="from_bounds", random_state=0))
    assert not _privacy(_caught(lambda: pipe.fit(X, frame.y)))
    # two bounded columns (sqrt 2) and one factor's 0/1 dummy (1): data_norm sqrt(3)
    assert pipe[-1].result_.data_norm == pytest.approx(math.sqrt(1 + 3))
    # passed-through columns have no public bound: data_norm cannot be derived
    leaky = make_pipeline(make_column_transformer(
        (PublicBoundsTransformer({0: (18, 90)}), [0]), remainder="passthrough"),
        DPLogisticRegression(data_norm="from_bounds"))
    with pytest.raises(ValueError, match="passes through.*no public bound"):
        leaky.fit(frame[["age", "bmi"]].to_numpy(), frame.y)


# ---------------------------------------------------------------- data_norm="from_bounds"
def test_from_bounds_needs_a_public_step_before_it(frame):
    from sklearn.preprocessing import StandardScaler

    X = frame[["age", "bmi"]]
    with pytest.raises(ValueError, match="not fitted as the last step of a pipeline"):
        DPLogisticRegression(data_norm="from_bounds").fit(X, frame.y)
    with pytest.raises(ValueError, match=r"'standardscaler' \(StandardScaler\) gives no public "
                                         "bound"):
        sklearn_make_pipeline(StandardScaler(), DPLogisticRegression(data_norm="from_bounds")
                              ).fit(X, frame.y)
    with pytest.raises(ValueError, match="data_norm must be a positive number or 'from_bounds'"):
        DPLogisticRegression(data_norm="from_bound").fit(X, frame.y)


def test_from_bounds_with_rms_clips_and_a_mismatch_warns(frame):
    X = frame[["age", "bmi"]]
    rms = PublicBoundsTransformer(public_bounds(RANGES, norm="rms"))
    pipe = make_pipeline(rms, DPLogisticRegression(data_norm="from_bounds", random_state=0))
    pipe.fit(X, frame.y)
    assert pipe[-1].n_clipped_ > 0                     # norm="rms" implies clipping
    assert pipe[-1].result_.data_norm == pytest.approx(math.sqrt(1 + 2 / 3))
    # a number that differs from the bounds' value warns (the fit is still private)
    mismatch = make_pipeline(PublicBoundsTransformer(RANGES),
                             DPLogisticRegression(data_norm=1.0, clip=True, random_state=0))
    caught = _caught(lambda: mismatch.fit(X, frame.y))
    assert any("data_norm=1.41421" in str(w.message) and "from_bounds" in str(w.message)
               for w in caught if w.category is UserWarning), [str(w.message) for w in caught]
    same = make_pipeline(PublicBoundsTransformer(RANGES),
                         DPLogisticRegression(data_norm=math.sqrt(2), random_state=0))
    assert not _caught(lambda: same.fit(X, frame.y))


def test_from_bounds_in_a_grid_search_and_a_nested_pipeline(frame):
    from sklearn.model_selection import GridSearchCV

    X = frame[COLUMNS]
    inner = sklearn_make_pipeline(PublicBoundsTransformer(RANGES, levels=LEVELS),
                                  DPLogisticRegression(data_norm="from_bounds", random_state=0))
    search = GridSearchCV(inner, {"dplogisticregression__alpha": [0.01, 0.1]}, cv=2)
    caught = _caught(lambda: search.fit(X, frame.y))
    assert any("GridSearchCV" in m for m in _privacy(caught))     # the budget warning only
    assert not any("learned statistics" in m for m in _privacy(caught))
    assert search.best_estimator_[-1].result_.data_norm == pytest.approx(math.sqrt(5))
    nested = make_pipeline(make_pipeline(PublicBoundsTransformer(RANGES, levels=LEVELS)),
                           make_pipeline(DPLogisticRegression(data_norm="from_bounds",
                                                              random_state=0)))
    nested.fit(X, frame.y)
    assert nested[-1][-1].result_.data_norm == pytest.approx(math.sqrt(5))


# ---------------------------------------------------------------- steps that learn warn
def _learning_steps():
    from sklearn.decomposition import PCA
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.feature_selection import SelectKBest
    from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer
    from sklearn.preprocessing import (KBinsDiscretizer, MaxAbsScaler, MinMaxScaler,
                                       OneHotEncoder, QuantileTransformer, RobustScaler,
                                       StandardScaler)

    return [StandardScaler(), MinMaxScaler(), MaxAbsScaler(), RobustScaler(),
            QuantileTransformer(n_quantiles=10), SimpleImputer(),
            SimpleImputer(strategy="constant", fill_value=0.0), KNNImputer(),
            IterativeImputer(max_iter=2), PCA(n_components=2),
            KBinsDiscretizer(n_bins=3, quantile_method="averaged_inverted_cdf"),
            OneHotEncoder(handle_unknown="ignore"), SelectKBest(k=1)]


def _public_steps():
    from sklearn.preprocessing import (Binarizer, FunctionTransformer, Normalizer,
                                       OneHotEncoder, PolynomialFeatures)

    return [PublicBoundsTransformer({0: (0, 1), 1: (0, 1)}), FunctionTransformer(np.tanh),
            Normalizer(), PolynomialFeatures(degree=1, include_bias=False),
            Binarizer(threshold=0.5), OneHotEncoder(categories=[[0.0, 1.0]] * 2,
                                                    handle_unknown="ignore")]


def _unit_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, 2)).round(0 if seed else 3)
    y = (rng.uniform(size=n) < 0.5).astype(int)
    return X, y


@pytest.mark.parametrize("step", _learning_steps(), ids=lambda s: type(s).__name__)
def test_helper_warns_when_a_step_learned_from_the_rows(step):
    X, y = _unit_data()
    name = type(step).__name__.lower()
    pipe = make_pipeline(step, DPLogisticRegression(clip=True, random_state=0))
    found = _privacy(_caught(lambda: pipe.fit(X, y)))
    assert len(found) == 1, found                      # once: by the estimator, not twice
    assert f"step {name!r} learned statistics of the training rows" in found[0]
    assert "PublicBoundsTransformer" in found[0] and "not 1-differentially private" in found[0]
    assert name in learned_statistics(pipe)
    # scikit-learn's own make_pipeline warns too: the estimator finds its pipeline itself
    plain = sklearn_make_pipeline(clone(step), DPLogisticRegression(clip=True, random_state=0))
    assert len(_privacy(_caught(lambda: plain.fit(X, y)))) == 1
    # not private: nothing to warn about
    quiet = make_pipeline(clone(step), DPLogisticRegression(eps=0))
    assert not _privacy(_caught(lambda: quiet.fit(X, y)))


@pytest.mark.parametrize("step", _public_steps(), ids=lambda s: type(s).__name__)
def test_helper_is_quiet_for_public_steps(step):
    X, y = _unit_data(seed=1)                           # 0/1 values: the declared categories
    pipe = make_pipeline(step, DPLogisticRegression(clip=True, random_state=0))
    assert not _privacy(_caught(lambda: pipe.fit(X, y)))
    assert learned_statistics(pipe) == {}


def test_learned_steps_inside_column_transformers_and_outer_pipelines():
    from sklearn.preprocessing import StandardScaler

    X, y = _unit_data()
    ct = make_column_transformer((StandardScaler(), [0]),
                                 (PublicBoundsTransformer({0: (0, 1)}), [1]))
    pipe = make_pipeline(ct, DPLogisticRegression(clip=True, random_state=0))
    found = _privacy(_caught(lambda: pipe.fit(X, y)))
    assert len(found) == 1 and "'columntransformer__standardscaler'" in found[0]
    outer = sklearn_make_pipeline(StandardScaler(), sklearn_make_pipeline(
        PublicBoundsTransformer({0: (-5, 5), 1: (-5, 5)}),
        DPLogisticRegression(data_norm="from_bounds", random_state=0)))
    found = _privacy(_caught(lambda: outer.fit(X, y)))
    assert len(found) == 1 and "'standardscaler'" in found[0]
    assert learned_statistics(outer) == {"standardscaler": ["mean_", "n_samples_seen_",
                                                            "scale_", "var_"]}
    # a pipeline used as a step is a transformer: its last step counts too
    inner_steps = make_pipeline(sklearn_make_pipeline(PublicBoundsTransformer(
        {0: (0, 1), 1: (0, 1)}), StandardScaler()), DPLogisticRegression(clip=True,
                                                                          random_state=0))
    found = _privacy(_caught(lambda: inner_steps.fit(X, y)))
    assert len(found) == 1 and "'pipeline__standardscaler'" in found[0]
    assert list(learned_statistics(inner_steps)) == ["pipeline__standardscaler"]


def test_helper_warns_for_any_private_final_estimator():
    """A private estimator of another package (an ``eps`` or ``epsilon`` parameter) gets the
    warning from our Pipeline; scikit-learn's own Pipeline cannot give it."""
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.preprocessing import StandardScaler

    class OtherPrivate(ClassifierMixin, BaseEstimator):
        def __init__(self, epsilon=1.0):
            self.epsilon = epsilon

        def fit(self, X, y):
            self.classes_ = np.unique(y)
            return self

    X, y = _unit_data()
    found = _privacy(_caught(lambda: make_pipeline(StandardScaler(), OtherPrivate()).fit(X, y)))
    assert len(found) == 1 and "OtherPrivate(eps=1)" in found[0]
    assert not _privacy(_caught(lambda: make_pipeline(StandardScaler(),
                                                      OtherPrivate(epsilon=0)).fit(X, y)))


def test_make_pipeline_names_steps_as_scikit_learn_does():
    from sklearn.preprocessing import StandardScaler

    ours = make_pipeline(StandardScaler(), PublicBoundsTransformer({0: (0, 1)}),
                         PublicBoundsTransformer({0: (0, 1)}), DPLogisticRegression())
    theirs = sklearn_make_pipeline(StandardScaler(), PublicBoundsTransformer({0: (0, 1)}),
                                   PublicBoundsTransformer({0: (0, 1)}), DPLogisticRegression())
    assert [n for n, _ in ours.steps] == [n for n, _ in theirs.steps]


# ---------------------------------------------------------------- data units
def test_coefficients_and_intervals_in_data_units_are_dplrs(frame):
    """At eps = 0 with the same lambda the pipeline fits dplr's model on dplr's rows: its
    coefficients per unit of the original columns and its Wald intervals are dplr's."""
    pb = public_bounds(RANGES, levels=LEVELS)
    pipe = make_pipeline(PublicBoundsTransformer(pb),
                         DPLogisticRegression(eps=0, alpha=1e-6, data_norm="from_bounds",
                                              inference=True)).fit(frame[COLUMNS], frame.y)
    m = dplr("y ~ age + bmi + sex + region", frame, bounds=pb, eps=0, lambda_=1e-6,
             inference=True)
    np.testing.assert_allclose(pipe.coefficients().to_numpy(),
                               np.asarray(m.coefficients, float), rtol=1e-6)
    ours = pipe.confint(level=0.9)
    theirs = confint(m, level=0.9, method="wald")
    assert ours.index.tolist() == ["(Intercept)", "age", "bmi", "sex_M", "region_south",
                                   "region_east"]
    # glm's unpenalised fit against the engine's at lambda = 1e-6 (bias-corrected): they agree
    # to O(lambda); a wrong map (a divisor, a centre, the transpose of M) is off by far more
    np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=1e-5, atol=1e-6)


def test_data_units_are_the_exact_inverse_of_the_map(frame):
    pipe = make_pipeline(PublicBoundsTransformer(RANGES, levels=LEVELS),
                         DPLogisticRegression(eps=3.0, data_norm="from_bounds", inference=0.5,
                                              random_state=1)).fit(frame[COLUMNS], frame.y)
    b = pipe.coefficients()
    # the linear predictor on the raw columns is the model's decision function
    raw = frame.age * b["age"] + frame.bmi * b["bmi"] + (frame.sex == "M") * b["sex_M"] + \
        (frame.region == "south") * b["region_south"] + \
        (frame.region == "east") * b["region_east"] + b["(Intercept)"]
    np.testing.assert_allclose(pipe.decision_function(frame[COLUMNS]), raw, rtol=1e-10)
    # covariance: M V M' with the transformer's matrix
    M = pipe[0].design_matrix()
    V = pipe.vcov(scale="mapped").to_numpy()
    np.testing.assert_allclose(pipe.vcov().to_numpy(), M @ V @ M.T, rtol=1e-10, atol=1e-14)
    table = pipe.coef_table(level=0.95)
    np.testing.assert_allclose(table["Estimate"], b, rtol=1e-10)
    assert list(table.columns)[-2:] == ["2.5 %", "97.5 %"]
    with pytest.raises(ValueError, match="inference=True"):
        make_pipeline(PublicBoundsTransformer(RANGES), DPLogisticRegression(
            data_norm="from_bounds", random_state=0)).fit(frame[["age", "bmi"]], frame.y
                                                          ).confint()


def test_data_units_need_the_intercept_with_a_centred_map(frame):
    pipe = make_pipeline(PublicBoundsTransformer(RANGES),
                         DPLogisticRegression(eps=0, data_norm="from_bounds",
                                              fit_intercept=False)).fit(frame[["age", "bmi"]],
                                                                        frame.y)
    with pytest.raises(ValueError, match="fit_intercept=True"):
        pipe.coefficients()
    assert pipe.coefficients(scale="mapped").index.tolist() == ["age", "bmi"]
