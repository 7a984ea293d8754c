"""The Gaussian methods ("gaussian", "amp") through every front end: dplr, the scikit-learn
estimator, the DPpack-style models, Dask, saved models and the accountant. The mechanisms'
laws and audits are in tests/privacy/test_gaussian_objective.py; here the wiring: the same
release from every door, the same refusals, the ledger entry with its Renyi curve."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import PrivacyAccountant, dplr, erm, load_model
from privatelr.models import LogisticRegressionDP, SVMDP
from privatelr.sklearn import DPLogisticRegression


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(5)
    X = rng.uniform(-0.5, 0.5, size=(600, 2))
    y = (X[:, 0] - X[:, 1] + 0.2 * rng.standard_normal(600) > 0).astype(int)
    df = pd.DataFrame(X, columns=["a", "b"])
    df["y"] = y
    return df


@pytest.mark.parametrize("method", ["gaussian", "amp"])
def test_dplr_equals_the_engine(frame, method):
    fit = dplr("y ~ a + b", frame, eps=1.0, method=method, delta=1e-6, random_state=4)
    X = np.c_[np.ones(len(frame)), frame[["a", "b"]].to_numpy()]
    ref = erm.fit(X, frame["y"].to_numpy(), lambda_=fit.lambda_, eps=1.0, method=method,
                  delta=1e-6, data_norm=np.sqrt(2.0), random_state=4)
    np.testing.assert_array_equal(fit.coef, ref.coef)
    assert fit.method == method and fit.delta == 1e-6 and fit.guarantee_holds
    text = " ".join(str(fit.summary()).split())
    assert "(eps, delta)-differentially private" in text and "delta = 1e-06" in text


def test_dplr_refusals(frame):
    with pytest.raises(ValueError, match="needs delta"):
        dplr("y ~ a + b", frame, eps=1.0, method="gaussian")
    with pytest.raises(ValueError, match="drop delta"):
        dplr("y ~ a + b", frame, eps=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="contradicts"):
        dplr("y ~ a + b", frame, eps=1.0, op=False, method="gaussian", delta=1e-6)
    with pytest.raises(ValueError, match="method must be one of"):
        dplr("y ~ a + b", frame, eps=1.0, method="laplace")
    # inference is available for the Gaussian methods (Gaussian noise law): no refusal
    m = dplr("y ~ a + b", frame, eps=1.0, method="gaussian", delta=1e-6, inference=True,
             random_state=0)
    assert m.inference is not None and m.inference.eps > 0
    with pytest.raises(ValueError, match="no Gaussian methods"):
        dplr("y ~ a + b", frame, eps=1.0, method="gaussian", delta=1e-6, compat="PrivateLR")
    # op=False and method="output" agree
    a = dplr("y ~ a + b", frame, eps=1.0, op=False, random_state=1)
    b = dplr("y ~ a + b", frame, eps=1.0, method="output", random_state=1)
    np.testing.assert_array_equal(a.coef, b.coef)


@pytest.mark.parametrize("method", ["gaussian", "amp"])
def test_saved_model_round_trip(frame, method, tmp_path):
    fit = dplr("y ~ a + b", frame, eps=1.0, method=method, delta=1e-6, random_state=4)
    fit.to_json(tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(back.coef, fit.coef)
    assert back.calibration == fit.calibration
    np.testing.assert_array_equal(back.predict(frame), fit.predict(frame))


def test_dask_gives_the_in_memory_release(frame):
    dd = pytest.importorskip("dask.dataframe")
    for method in ("gaussian", "amp"):
        mem = dplr("y ~ a + b", frame, eps=1.0, method=method, delta=1e-6, random_state=9)
        dist = dplr("y ~ a + b", dd.from_pandas(frame, npartitions=3), eps=1.0, method=method,
                    delta=1e-6, random_state=9)
        np.testing.assert_allclose(dist.coef, mem.coef, rtol=1e-9, atol=1e-12)


def test_sklearn_estimator_and_accountant(frame):
    X, y = frame[["a", "b"]].to_numpy(), frame["y"].to_numpy()
    acc = PrivacyAccountant(3.0, delta=1e-5)
    clf = DPLogisticRegression(eps=1.0, method="gaussian", delta=1e-6, accountant=acc,
                               random_state=0).fit(X, y)
    ref = DPLogisticRegression(eps=1.0, method="gaussian", delta=1e-6, random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, ref.coef_)
    assert clf.score(X, y) > 0.8
    (entry,) = acc.ledger
    assert entry.eps == 1.0 and entry.delta == 1e-6 and entry.rdp is not None
    # Renyi + conversion at the budget's delta is below the release's own (1, 1e-6) ... at 1e-5
    assert acc.spent()[0] < 1.0 and acc.spent()[1] == 1e-5
    with pytest.raises(ValueError, match="needs delta"):
        DPLogisticRegression(eps=1.0, method="amp").fit(X, y)


def test_dppack_models(frame):
    X, y = frame[["a", "b"]].to_numpy(), frame["y"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cls in (LogisticRegressionDP, SVMDP):
            m = cls(eps=1.0, gamma=1.0, perturbation_method="gaussian", delta=1e-6)
            m.fit(X, y, [0.5, 0.5], [-0.5, -0.5], random_state=0)
            assert m.result_.method == "gaussian" and "delta=1e-06" in repr(m)
    with pytest.raises(ValueError, match="goes with perturbation_method"):
        LogisticRegressionDP(eps=1.0, gamma=1.0, perturbation_method="gaussian")
    with pytest.raises(ValueError, match="goes with perturbation_method"):
        LogisticRegressionDP(eps=1.0, gamma=1.0, delta=1e-6)


def test_command_line_method_and_delta(frame, tmp_path, capsys):
    from privatelr import cli

    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "m.json"
    assert cli.main(["fit", str(data), "--formula", "y ~ a + b", "--method", "gaussian",
                     "--delta", "1e-6", "--seed", "4", "--out", str(out), "-q"]) in (0, None)
    saved = load_model(out)
    ref = dplr("y ~ a + b", frame, eps=1.0, method="gaussian", delta=1e-6, random_state=4)
    np.testing.assert_array_equal(saved.coef, ref.coef)
    capsys.readouterr()
    code = cli.main(["fit", str(data), "--formula", "y ~ a + b", "--method", "amp",
                     "--out", str(tmp_path / "n.json")])
    assert code == 2 and "needs delta" in capsys.readouterr().err
