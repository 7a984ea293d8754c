"""Formulas are data, never code; R semantics where R syntax is accepted; bounded work.

Each test here failed on the code before the formula interpreter (commit 28cb7c3): the formula
string was translated to Python and run with ``eval``, so text could execute commands, ``&``
was bitwise, ``~ y ~ a`` flipped signs, ``(a+b)^100`` hung and deep formulas crashed with
``RecursionError``.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import dplr, dplr_tune, load_model, predict, scaled, walr
from privatelr.cli import main as cli_main
from privatelr.design import DesignSpec, build_design, parse
from privatelr.persist import loads

EXPLOIT = ("y ~ I(`x=(_f_log.__globals__['__builtins__']['__import__']('os').system('touch P')) "
           "and 0 or 1)*0 + _f_I(x` = a)")
EXPLOITS = [
    EXPLOIT,
    "y ~ I(__import__('os').system('touch P'))",
    "y ~ a + exec('open(\"P\", \"w\")')",
    "y ~ a$system",
    "y ~ `a`[0]",
    "y ~ (function(x) x)(a)",
    "y ~ a + I(eval(parse(text = 'system(\"touch P\")')))",
    "y ~ a + I(a <- 1)",
    "y ~ base::log(a)",
]


@pytest.fixture()
def frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.uniform(0, 0.5, 40), "b": rng.uniform(0, 0.5, 40),
                         "y": np.arange(40) % 2})


@pytest.fixture()
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("formula", EXPLOITS)
def test_formula_text_never_runs(in_tmp, frame, formula):
    calls = [
        lambda: dplr(formula, frame, eps=0),
        lambda: dplr(formula, frame, eps=1.0, random_state=0),
        lambda: scaled(formula, frame),
        lambda: walr(formula, frame, eps=1.0, delta=1e-6, lambda_=0.1),
        lambda: dplr_tune(formula, frame, lambdas=(0.1, 1.0), eps=0),
    ]
    for call in calls:
        with pytest.raises(ValueError):
            call()
    csv = in_tmp / "d.csv"
    frame.to_csv(csv, index=False)
    assert cli_main(["fit", str(csv), "--formula", formula, "--eps", "0",
                     "--out", str(in_tmp / "m.json")]) == 2
    assert not (in_tmp / "P").exists()
    assert not (in_tmp / "m.json").exists()


def test_the_package_has_no_eval_exec_or_compile():
    import ast
    import pathlib

    import privatelr

    root = pathlib.Path(privatelr.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("eval", "exec", "compile", "__import__"):
                found.append(f"{path.name}:{node.lineno} {node.func.id}")
    assert found == []


def test_a_saved_model_carries_nothing_the_fitting_path_refuses(frame):
    m = dplr("y ~ log(a) + b", frame, eps=0)
    d = json.loads(m.to_json())
    for bad in ("__import__('os')", "a$x", "system('touch P')", '"x" * 1e11', "log(a, b, c)"):
        e = json.loads(json.dumps(d))
        e["design"]["atoms"][0]["name"] = bad
        e["design"]["formula_r"] = e["formula"] = f"y ~ {bad} + b"
        with pytest.raises(ValueError, match="corrupted"):
            loads(json.dumps(e), verify=False)
    # a constant that grows without bound in Python is a float in R: 9^9^8 is Inf, instantly
    # (evaluated as a Python integer it would take minutes: a hang, not a number; no wall-time
    # bound here, which a loaded machine could fail)
    e = json.loads(json.dumps(d))
    e["design"]["atoms"][0]["name"] = "I(9^9^8 * a)"
    e["design"]["formula_r"] = e["formula"] = "y ~ I(9^9^8 * a) + b"
    e["coefficients"]["names"][1] = "I(9^9^8 * a)"
    e["design"]["design_columns"][1] = "I(9^9^8 * a)"
    e["glm"]["names"][1] = "I(9^9^8 * a)"
    back = loads(json.dumps(e), verify=False)
    p = back.predict(frame)
    assert p.shape == (40,)


def test_bounded_work(frame):
    # R caps (a + b)^k at the number of variables: the same columns as (a + b)^2 (expanding
    # the power term by term would never finish; no wall-time bound: load must not fail it)
    d = build_design("y ~ (a + b)^100", frame)
    assert d.spec.design_columns == ["(Intercept)", "a", "b", "a:b"]
    with pytest.raises(ValueError, match="power"):
        build_design("y ~ (a + b)^0", frame)
    # deep nesting: ValueError, not RecursionError
    for text in ("y ~ " + "(" * 5000 + "a" + ")" * 5000, "y ~ " + "-" * 5000 + "a",
                 "y ~ I(" + "a^" * 3000 + "a)", "y ~ " + "log(" * 2000 + "a" + ")" * 2000):
        with pytest.raises(ValueError, match="nested"):
            build_design(text, frame)
    with pytest.raises(ValueError, match="longer"):
        parse("a" * 2_000_000)


def test_a_thousand_terms_work():
    rng = np.random.default_rng(1)
    n, p = 60, 1000
    df = pd.DataFrame(rng.uniform(-0.01, 0.01, size=(n, p)), columns=[f"x{i}" for i in range(p)])
    df["y"] = np.arange(n) % 2
    formula = "y ~ " + " + ".join(df.columns[:-1])
    d = build_design(formula, df)
    assert d.X.shape == (n, p + 1)
    m = dplr(formula, df, eps=0, lambda_=1.0)
    assert len(m.coefficients) == p + 1
    assert len(DesignSpec.from_dict(m.spec.to_dict()).atoms) == p


# ---- R semantics ---------------------------------------------------------------------------

def test_logical_operators_are_logical():
    df = pd.DataFrame({"u": [2.0, 0.0, 2.0, 0.0], "v": [1.0, 1.0, 0.0, np.nan],
                       "y": [0, 1, 0, 1]})
    d = build_design("y ~ I(u & v) + I(u | v) + I(!u)", df.iloc[:3], learn=True)
    # R: 2 & 1 is TRUE, 0 & 1 FALSE, 2 & 0 FALSE; | : TRUE TRUE TRUE; !2 is FALSE
    assert d.spec.design_columns == ["(Intercept)", "I(u & v)TRUE", "I(u | v)TRUE", "I(!u)TRUE"]
    np.testing.assert_array_equal(d.X[:, 1], [1, 0, 0])
    np.testing.assert_array_equal(d.X[:, 2], [1, 1, 1])
    np.testing.assert_array_equal(d.X[:, 3], [0, 1, 0])
    # three-valued NA: FALSE & NA is FALSE (kept), TRUE & NA is NA (row dropped)
    d = build_design("y ~ I(u & v)", df.assign(u=[2.0, 0.0, 2.0, 0.0]))
    assert d.n_dropped == 0 and d.X[3, 1] == 0
    d = build_design("y ~ I(u & v)", df.assign(u=[2.0, 0.0, 2.0, 1.0]))
    assert d.n_dropped == 1
    with pytest.raises(ValueError, match="length-one"):
        build_design("y ~ I(u && v)", df)


def test_two_tildes_are_an_error():
    df = pd.DataFrame({"y": [0, 1, 0, 1], "a": [0.1, 0.2, 0.3, 0.4]})
    for text in ("~ y ~ a", "y ~ a ~ b", "y ~ I(~a)", "~ a"):
        with pytest.raises(ValueError, match="'~'|response"):
            build_design(text, df)


def test_factor_codes_levels_and_printing():
    df = pd.DataFrame({"x": [0.3, 0.1 + 0.2, 0.5, 0.5, 0.3], "s": list("bacab"),
                       "y": [0, 1, 0, 1, 1]})
    d = build_design("y ~ factor(x)", df)
    # 0.3 and 0.1 + 0.2 print alike: one level, as R's factor() makes them
    assert d.spec.atoms[0]["levels"] == ["0.3", "0.5"]
    d = build_design("y ~ as.numeric(factor(s))", df)
    np.testing.assert_array_equal(d.X[:, 1], [2, 1, 3, 1, 2])   # R's level codes
    d = build_design("y ~ factor(s, levels = c('c', 'b', 'a'))", df, learn=False)
    assert d.spec.design_columns[1:] == ["factor(s, levels = c(\"c\", \"b\", \"a\"))b",
                                         "factor(s, levels = c(\"c\", \"b\", \"a\"))a"]


def test_dates_are_numbers_and_odd_kinds_are_refused():
    t = pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03", "2020-01-04"])
    df = pd.DataFrame({"t": t, "y": [0, 1, 0, 1]})
    d = build_design("y ~ t", df)
    assert d.spec.design_columns == ["(Intercept)", "t"]            # not one dummy per day
    assert d.X[1, 1] - d.X[0, 1] == 86400.0                         # seconds, as R's POSIXct
    with pytest.raises(ValueError, match="complex"):
        build_design("y ~ z", df.assign(z=np.array([1j, 2, 3, 4])))
    with pytest.raises(ValueError, match="mixes"):
        build_design("y ~ m", df.assign(m=pd.Series([True, "1", 1, 2.0], dtype=object)))


def test_mixed_object_column_is_refused_not_coded_per_batch():
    df = pd.DataFrame({"m": pd.Series(["a", "b", "a", "b"], dtype=object), "y": [0, 1, 0, 1]})
    model = dplr("y ~ m", df, eps=0)
    new = pd.DataFrame({"m": pd.Series([True, "1", 1], dtype=object)})
    with pytest.raises(ValueError, match="mixes"):
        model.predict(new)
    # one row alone gets exactly what it gets in a batch
    batch = model.predict(df)
    alone = np.array([model.predict(df.iloc[[i]]).iloc[0] for i in range(4)])
    np.testing.assert_array_equal(batch, alone)


def test_data_as_a_dict_of_scalars_is_a_clear_error():
    with pytest.raises(ValueError, match="dict of single values"):
        dplr("y ~ x", {"y": 1, "x": 0.5}, eps=0)


# ---- predict never invents an answer -----------------------------------------------------

def test_predict_types_and_non_finite_rows(frame):
    m = dplr("y ~ a + b", frame, eps=0)
    with pytest.raises(ValueError, match="probabilities.*class.*link"):
        predict(m, frame, type="probability")
    new = frame.head(4).copy()
    new.loc[new.index[1], "a"] = np.inf
    new.loc[new.index[2], "b"] = np.nan
    new.loc[new.index[3], "a"] = -np.inf
    new.loc[new.index[3], "b"] = np.inf
    p = predict(m, new)
    # documented rule: a missing or infinite covariate gives a missing prediction (NaN, no
    # class) — never an invented probability of 0 or 1, never the first label
    assert np.isfinite(p.iloc[0]) and p.iloc[1:].isna().all()
    labels = predict(m, new, type="class")
    assert labels.iloc[0] in (0, 1) and labels.iloc[1:].isna().all()
    both = pd.DataFrame({"a": [np.inf, np.inf], "b": [np.inf, -np.inf]})
    assert predict(m, both).isna().all()
    assert predict(m, both, type="class").isna().all()
    link = predict(m, new, type="link")
    assert np.isfinite(link.iloc[0]) and np.isnan(link.iloc[2])


def test_projection_predictions_are_bit_identical_in_any_batch():
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.uniform(-0.3, 0.3, size=(300, 12)), columns=[f"x{i}" for i in range(12)])
    df["y"] = (df.x0 + df.x1 > 0).astype(int)
    m = dplr("y ~ .", df, eps=1.0, rp_dim=4, clip=True, random_state=1)
    whole = m.predict(df)
    singles = np.array([m.predict(df.iloc[[i]]).iloc[0] for i in range(0, 300, 7)])
    np.testing.assert_array_equal(singles, whole[::7])
    chunks = np.concatenate([m.predict(df.iloc[i:i + 37]) for i in range(0, 300, 37)])
    np.testing.assert_array_equal(chunks, whole)


def test_tuning_level_only_in_the_validation_group():
    rng = np.random.default_rng(4)
    n = 40
    g = np.array(["p", "q"] * (n // 2), dtype=object)
    g[n - 1] = "r"                       # dppack_split puts row n - 1 in the validation group
    df = pd.DataFrame({"a": rng.uniform(0, 0.3, n), "g": g, "y": np.arange(n) % 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = dplr_tune("y ~ a + g", df, lambdas=(0.1, 1.0), eps=0, random_state=0)
        assert "gr" in m.coefficients.index
        m = dplr_tune("y ~ a + g", df, lambdas=(0.1, 1.0), eps=1.0, random_state=0,
                      levels={"g": ["p", "q", "r"]}, data_norm=2.0, clip=True)
        assert list(m.coefficients.index) == ["(Intercept)", "a", "gq", "gr"]
    with pytest.raises(ValueError, match="levels of 'g'.*levels=\\{'g'"):
        dplr_tune("y ~ a + g", df, lambdas=(0.1, 1.0), eps=1.0, random_state=0)


def test_formulaic_formula_objects_work(frame):
    from formulaic import Formula

    m = dplr(Formula("y ~ a + b"), frame, eps=0)
    assert list(m.coefficients.index) == ["(Intercept)", "a", "b"]


def test_load_model_refuses_version_1_code(tmp_path, frame):
    m = dplr("y ~ a", frame, eps=0)
    path = tmp_path / "m.json"
    m.to_json(path)
    d = json.loads(path.read_text())
    d["format_version"] = 1
    path.write_text(json.dumps(d))
    with pytest.raises(ValueError, match="refit"):
        load_model(path)
    assert os.path.exists(path)
