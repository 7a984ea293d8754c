"""dplr against R PrivateLR 1.2-22's numbers (tests/fixtures, copied from the shared reference)."""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import logit

from privatelr import dplr, scaled
from privatelr.datasets import load_iris, load_mtcars
from privatelr.design import rp_suggest
from privatelr.calibration import default_lambda

FIX = Path(__file__).parents[1] / "fixtures"
DATA = {"iris": load_iris(), "mtcars": load_mtcars()}


def _load(name):
    return json.loads((FIX / name).read_text())


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dplr(*args, **kwargs)


def _toy(n, p=2, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.uniform(-0.3, 0.3, size=(n, p)), columns=[f"x{j}" for j in range(p)])
    df["y"] = np.arange(n) % 2
    return df


# ---- lambda_default -------------------------------------------------------------------------

@pytest.mark.parametrize("case", _load("lambda_default.json"), ids=lambda c: f"n{c['n']}-eps{c['eps']}")
def test_lambda_default(case):
    assert default_lambda(case["n"], case["eps"]) == pytest.approx(case["lambda"], rel=1e-12)
    if case["n"] <= 1000:
        for op in (True, False):
            # R's calibration (B = 1): R's lambda exactly
            m = _quiet(_toy(case["n"]), eps=case["eps"], op=op, random_state=0,
                       compat="PrivateLR")
            assert m.lambda_ == pytest.approx(case["lambda"], rel=1e-12)
            assert m.status == "ok"
            assert m.n == case["n"]
            # the default, intercept-aware bound B^2 = 2: the same rule (penalty eps/10), so
            # twice R's lambda
            d = _quiet(_toy(case["n"]), eps=case["eps"], op=op, random_state=0)
            factor = 2 if case["eps"] > 0 else 1        # eps = 0: R's 0.001 in both modes
            assert d.lambda_ == pytest.approx(factor * case["lambda"], rel=1e-12)
            if op and case["eps"] > 0:
                assert d.penalty == pytest.approx(case["eps"] / 10, rel=1e-10)


# ---- privacy_calibration ---------------------------------------------------------------------

@pytest.mark.parametrize("case", _load("privacy_calibration.json"),
                         ids=lambda c: f"lam{c['lambda_arg']}-eps{c['eps']}")
def test_privacy_calibration_through_dplr(case):
    iris = DATA["iris"]
    # compat="PrivateLR" reproduces R's calibration (B = 1) exactly
    m = _quiet("Species ~ .", iris, lambda_=case["lambda_arg"], eps=case["eps"],
               compat="PrivateLR", random_state=1)
    assert m.n == case["n"]
    assert m.lambda_ == pytest.approx(case["lambda_used"], rel=1e-10)
    assert m.penalty == pytest.approx(case["penalty"], rel=1e-10)
    assert m.eps_eff == pytest.approx(case["eps_eff"], rel=1e-10)
    assert m.status == case["status"]
    # the default mode calibrates for design rows (1, x) with ||x|| <= 1: B^2 = 2
    d = _quiet("Species ~ .", iris, lambda_=case["lambda_arg"], eps=case["eps"], clip=True,
               random_state=1)
    # (with lambda_=None the one default rule picks 2x R's lambda: penalty eps/10 at B^2 = 2)
    lam_req = case["lambda_arg"] if case["lambda_arg"] is not None else 2 * case["lambda_used"]
    penalty = 2 * np.log1p(2 * 0.25 / (case["n"] * lam_req))
    assert d.penalty == pytest.approx(penalty, rel=1e-10)
    if case["eps"] - penalty > 0:
        assert d.status == "ok" and d.eps_eff == pytest.approx(case["eps"] - penalty, rel=1e-10)
    else:
        assert d.status == "adjusted lambda" and d.eps_eff == pytest.approx(case["eps"] / 2)
        assert d.lambda_ == pytest.approx(2 * 0.25 / (case["n"] * np.expm1(case["eps"] / 4)))


# ---- nonprivate_fits -------------------------------------------------------------------------

@pytest.mark.parametrize("op", [True, False])
@pytest.mark.parametrize("case", _load("nonprivate_fits.json"), ids=lambda c: c["id"])
def test_nonprivate_fits(case, op):
    m = _quiet(case["formula"], DATA[case["data"]], eps=0, lambda_=case["lambda"], op=op)
    assert list(m.coefficients.index) == case["columns"]
    ref = np.array([case["coefficients"][k] for k in case["columns"]])
    np.testing.assert_allclose(m.coefficients.to_numpy(), ref, rtol=0, atol=1e-6)
    assert m.value == pytest.approx(case["objective"], abs=1e-9)
    assert m.CIndex == pytest.approx(case["cindex"], abs=1e-12)
    assert m.n == case["n"] and m.status == "ok" and m.convergence == 0


# ---- roc through dplr ------------------------------------------------------------------------

def test_roc_through_dplr():
    """Fit y ~ x - 1 with x = logit(p): the fitted probabilities sigmoid(w x) rank exactly as p
    (w > 0), so the C-index equals R's and the chosen threshold maps back to R's."""
    tested = 0
    for c in _load("roc.json"):
        p = np.clip(np.asarray(c["p"]), 1e-9, 1 - 1e-9)
        df = pd.DataFrame({"x": logit(p), "y": c["y"]})
        if df["y"].nunique() < 2:
            continue
        m = _quiet("y ~ x - 1", df, eps=0, threshold="youden")
        w = m.coefficients["x"]
        if not w > 0:
            continue
        tested += 1
        assert m.CIndex == pytest.approx(c["cindex"], abs=1e-12)
        assert logit(m.p_tr) / w == pytest.approx(logit(np.clip(c["youden"], 1e-9, 1 - 1e-9)),
                                                   rel=1e-9)
        t = _quiet("y ~ x - 1", df, eps=0, threshold="topleft")
        assert logit(t.p_tr) / w == pytest.approx(logit(np.clip(c["topleft"], 1e-9, 1 - 1e-9)),
                                                   rel=1e-9)
    assert tested >= 3


# ---- scaled ----------------------------------------------------------------------------------

@pytest.mark.parametrize("case", _load("scaled.json"), ids=lambda c: c["data"])
def test_scaled(case):
    s = scaled(case["formula"], DATA[case["data"]])
    assert s.scale == pytest.approx(case["scale"], rel=1e-12)
    assert list(s.data.columns) == case["columns"]
    np.testing.assert_allclose(s.data.iloc[:, :-1].to_numpy(), np.array(case["rows"]),
                               rtol=0, atol=1e-12)


def test_do_scale_matches_scaled():
    case = _load("scaled.json")[1]
    m = _quiet(case["formula"], DATA[case["data"]], do_scale=True, eps=0)
    assert m.scale_factor == pytest.approx(case["scale"], rel=1e-12)
    X, _ = m.spec.transform(DATA[case["data"]])
    np.testing.assert_allclose(X[:, 1:], np.array(case["rows"]), atol=1e-12)


# ---- rp_suggest ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", _load("rp_suggest.json"), ids=lambda c: f"n{c['n']}")
def test_rp_suggest(case):
    assert rp_suggest(case["n"]) == case["rp_dim"]
    if case["n"] <= 1000:
        m = _quiet(_toy(case["n"], p=30), rp_dim=-1, random_state=0, clip=True)
        assert m.did_rp and m.rp_dim == case["rp_dim"] and m.rp_p.shape == (30, case["rp_dim"])
