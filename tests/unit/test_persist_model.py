"""privatelr.persist: saved models (versioned JSON), exact round trip, clear failures."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from privatelr import PrivacyWarning, dplr, load_model
from privatelr.datasets import load_iris, load_mtcars
from privatelr.persist import FORMAT_VERSION, dumps, loads, model_to_dict


def _fit(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        warnings.simplefilter("ignore", UserWarning)
        return dplr(*args, **kwargs)


def _cars():
    cars = load_mtcars().reset_index()
    cars["gearname"] = np.array(["three", "four", "five"])[cars["gear"].to_numpy() - 3]
    return cars


LEVELS = {"cyl": [4, 6, 8], "gearname": ["five", "four", "three"], "vs": [0, 1]}

CASES = {
    # factor from a string column, factor(), an interaction with a numeric, log(); the levels
    # are declared (a private fit never learns them from the rows)
    "factors": lambda: (_fit("am ~ log(mpg) + factor(cyl) + gearname + wt:factor(vs)", _cars(),
                             eps=1.0, random_state=4, clip=True, data_norm=3.0, levels=LEVELS),
                        _cars()),
    # R's do.scale (not private: compat mode)
    "do_scale": lambda: (_fit("Species ~ .", load_iris(), eps=1.0, do_scale=True,
                              random_state=5, compat="PrivateLR"), load_iris()),
    "projection": lambda: (_fit("I(Species == 'virginica') ~ .", load_iris(), eps=2.0, rp_dim=2,
                                random_state=6, threshold="youden", compat="PrivateLR"),
                           load_iris()),
    "projection_clipped": lambda: (_fit("I(Species == 'virginica') ~ .", load_iris(), eps=2.0,
                                        rp_dim=2, random_state=6, clip=True, data_norm=10.0),
                                   load_iris()),
    "output_perturbation": lambda: (_fit("am ~ mpg + hp", _cars(), eps=1.0, op=False,
                                         lambda_=0.05, random_state=7, clip=True,
                                         data_norm=400.0), _cars()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_save_load_predict_is_bit_for_bit(tmp_path, case):
    model, data = CASES[case]()
    path = tmp_path / "m.json"
    model.to_json(path)
    back = load_model(path)
    for type_ in ("probabilities", "class"):
        a = model.predict(data, type=type_)
        b = back.predict(data, type=type_)
        assert a.dtype == b.dtype
        assert np.array_equal(a, b), type_  # exact, not approximately
    # also on a shuffled subset (rebuilding the design for new data, levels fixed by the spec)
    sub = data.sample(frac=0.5, random_state=1)
    assert np.array_equal(model.predict(sub), back.predict(sub))
    assert back.coefficients.equals(model.coefficients)
    for name in ("eps", "eps_eff", "lambda_", "status", "p_tr", "threshold", "method", "n", "d",
                 "did_rp", "rp_dim", "scaled", "formula", "call", "norm_bound", "convergence",
                 "calibration", "data_norm", "compat", "n_dropped", "tuning"):
        assert getattr(back, name) == getattr(model, name), name
    assert back.spec == model.spec
    if model.rp_p is not None:
        assert np.array_equal(back.rp_p, model.rp_p)
    # the file holds the release: the diagnostics (C-index, solver report) are not in it
    assert back.diagnostics is None and np.isnan(back.CIndex)
    assert str(back.summary()) == str(model.release().summary())
    # ... unless the caller asks for them, and then they say they are not private
    path2 = tmp_path / "with_diagnostics.json"
    model.to_json(path2, diagnostics=True)
    assert "diagnostics (not private)" in path2.read_text()
    back2 = load_model(path2)
    for name in ("CIndex", "counts", "message", "n_exceeding", "n_clipped"):
        assert getattr(back2, name) == getattr(model, name), name
    assert str(back2.summary()) == str(model.summary())


def test_projection_and_scaling_are_in_the_file(tmp_path):
    model, _ = CASES["projection"]()
    d = json.loads(model.to_json())
    assert np.array_equal(np.array(d["design"]["preprocess"]["projection"]), model.rp_p)
    assert d["guarantee"].startswith("void: compat='PrivateLR'")
    assert d["threshold"]["method"] == "youden" and d["threshold"]["p_tr"] == model.p_tr
    assert d["coefficients"]["names"] == ["(Intercept)", "dim.1", "dim.2"]
    scaled_model, _ = CASES["do_scale"]()
    d = json.loads(scaled_model.to_json())
    assert d["design"]["preprocess"]["scale_factor"] == scaled_model.scale_factor
    assert len(d["design"]["preprocess"]["center"]) == 4
    assert d["format_version"] == FORMAT_VERSION and d["package_version"]
    assert d["formula"] == scaled_model.formula and d["calibration"]["eps"] == 1.0


def test_non_finite_numbers_are_strict_json():
    # a single outcome: C-index is NaN; eps = inf is the non-private fit
    data = pd.DataFrame({"y": [1, 1, 1, 1], "x": [0.1, 0.2, 0.3, 0.4]})
    model = _fit("y ~ x", data, eps=float("inf"))
    text = model.to_json()
    assert "NaN" not in text.replace('"NaN"', "") and "Infinity" in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    back = loads(text)
    assert back.eps == float("inf")
    assert np.isnan(back.CIndex) == np.isnan(model.CIndex)


def _text():
    model, _ = CASES["factors"]()
    return model.to_json()


def test_future_version_is_refused():
    d = json.loads(_text())
    d["format_version"] = FORMAT_VERSION + 1
    d["package_version"] = "9.9.9"
    with pytest.raises(ValueError, match=r"format version 3 \(written by privatelr 9.9.9\).*"
                                         r"reads format versions up to 2: upgrade"):
        loads(json.dumps(d))


def test_version_1_files_holding_code_are_refused():
    d = json.loads(_text())
    d["format_version"] = 1
    with pytest.raises(ValueError, match="no longer runs: refit"):
        loads(json.dumps(d))


@pytest.mark.parametrize("mutate, pattern", [
    (lambda t: t[: len(t) // 2], "not valid JSON"),
    (lambda t: "", "not valid JSON"),
    (lambda t: "[1, 2]", "not an object"),
    (lambda t: t.replace('"privatelr.model"', '"something.else"'), "not a privatelr model file"),
    (lambda t: t.replace('"format_version": 2', '"format_version": "one"'), "bad format_version"),
    (lambda t: "[" * 100_000, "not valid JSON|nested too deeply"),
    (lambda t: '{"a":' * 100_000, "not valid JSON|nested too deeply"),
])
def test_corrupted_text_fails_clearly(mutate, pattern):
    with pytest.raises(ValueError, match=pattern):
        loads(mutate(_text()))


def test_checksum_catches_edits_and_verify_false_loads_them():
    d = json.loads(_text())
    d["coefficients"]["values"][1] += 1.0
    text = json.dumps(d)
    with pytest.raises(ValueError, match="checksum does not match"):
        loads(text)
    back = loads(text, verify=False)
    assert back.coefficients.iloc[1] == d["coefficients"]["values"][1]


def _set(path, value):
    def edit(d):
        for key in path[:-1]:
            d = d[key]
        d[path[-1]] = value
    return edit


@pytest.mark.parametrize("edit, pattern", [
    (lambda d: d["coefficients"]["values"].pop(), "same length"),
    (lambda d: d["coefficients"].__setitem__("values", ["a"] * 7), "list of numbers"),
    (lambda d: d.pop("design"), r"missing field\(s\) \['design'\]"),
    # the terms are R text, parsed and interpreted, never run: foreign text is refused
    (_set(("design", "atoms", 0, "name"), "__import__('os')"), "cannot read|do not match"),
    (_set(("design", "atoms", 0, "name"), "system('true')"), "do not match"),
    (_set(("design", "formula_r"), "am ~ system('touch P') + factor(cyl)"), "not supported|do not match"),
    (_set(("design", "formula_r"), "am ~ (mpg + wt + hp + qsec)^100000"), "do not match"),
    (_set(("design", "response_source"), "am$x"), "has no meaning"),
    (_set(("design", "rhs"), "_a0_ + np.log(_a1_)"), "do not match"),
    (_set(("design", "atoms", 1, "levels"), None), "must be a list of strings"),
    (_set(("design", "atoms", 1, "levels"), ["4", "6", "eight"]), "recorded as"),
    (_set(("design", "labels"), None), "labels"),
    (_set(("design", "intercept"), "yes"), "intercept"),
    (_set(("design", "variable_kinds", "mpg"), "chr"), "needs numbers"),
    (_set(("design", "preprocess"), {"clip": 0.0}), "clip must be"),
    (_set(("design", "preprocess"), {"clip": -1.0}), "clip must be"),
    (lambda d: d["design"].__setitem__("unknown_key", 1), "unknown field"),
    (_set(("calibration", "d"), 99), "not what its inputs give|d = 99"),
    (lambda d: d["calibration"].pop("n"), r"missing field\(s\) \['n'\]"),
    (lambda d: d.__setitem__("bogus", 1), "unknown field"),
    (_set(("calibration", "lambda_requested"), -1.0), "lambda_requested"),
    (_set(("calibration", "noise_scale"), 1e-9), "not what its inputs give"),
    (_set(("calibration", "eps_eff"), 5.0), "not what its inputs give"),
    (_set(("data_norm",), 100.0), "norm bound does not follow"),
    (_set(("guarantee",), "void: made up"), "guarantee text"),
    (_set(("n_dropped",), -1), "n_dropped"),
    (_set(("threshold", "p_tr"), 2.0), "p_tr"),
    (lambda d: d["coefficients"]["names"].__setitem__(0, "Intercept"), "differ from the design"),
])
def test_structurally_bad_files_are_refused(edit, pattern):
    d = json.loads(_text())
    edit(d)
    with pytest.raises(ValueError, match=pattern) as info:
        loads(json.dumps(d), verify=False)
    assert "corrupted privatelr model file" in str(info.value)


def test_load_model_errors_name_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"broken.json: corrupted privatelr model file"):
        load_model(path)
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="not UTF-8"):
        load_model(path)
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.json")


def test_to_json_without_path_returns_the_text_and_dict_layout():
    model, _ = CASES["factors"]()
    text = model.to_json()
    assert text == dumps(model)
    d = json.loads(text)
    body = model_to_dict(model)
    assert set(d) == {"format", "format_version", "package_version", "sha256"} | set(body)
    assert set(body) >= {"formula", "guarantee", "coefficients", "calibration", "threshold",
                         "status", "design"}
    assert d["design"]["atoms"][2]["levels"] == ["five", "four", "three"]  # factor levels kept


def test_non_finite_projection_in_a_file_is_refused():
    model, _ = CASES["projection_clipped"]()
    d = json.loads(model.to_json())
    d["design"]["preprocess"]["projection"][0][0] = {"$float": "NaN"}
    with pytest.raises(ValueError, match="corrupted.*projection must be a finite"):
        loads(json.dumps(d), verify=False)


def test_unseen_level_in_new_data_is_an_error_after_loading():
    model, data = CASES["factors"]()
    back = loads(model.to_json())
    new = data.head(3).copy()
    new.loc[new.index[0], "gearname"] = "six"
    with pytest.raises(ValueError, match=r"'gearname' has value\(s\) \['six'\] outside its levels"):
        back.predict(new)


def test_design_spec_from_dict_refuses_foreign_text():
    """A spec dict's terms are R text that predict interprets: from_dict itself re-derives and
    re-types them, so anything the fitting path would not have produced is refused."""
    from privatelr.datasets import load_iris
    from privatelr.design import DesignSpec, build_design

    spec = build_design("Species ~ log(Sepal.Length) + Petal.Width", load_iris()).spec
    d = spec.to_dict()
    assert DesignSpec.from_dict(d) == spec
    evil = dict(d, atoms=[dict(a, name="__import__('os').system('true')") for a in d["atoms"]])
    with pytest.raises(ValueError):
        DesignSpec.from_dict(evil)
    evil = dict(d, response_source="(1).__class__")
    with pytest.raises(ValueError):
        DesignSpec.from_dict(evil)


# ---------------------------------------------------------------------------------------------
# stored numbers, with a valid checksum (issue 27)
# ---------------------------------------------------------------------------------------------

def _private_file():
    from privatelr.datasets import load_iris as _iris

    iris = _iris()
    iris[iris.columns[:4]] /= 12
    return dplr("I(Species == 'virginica') ~ .", iris, eps=1.0, random_state=0), iris


def _recheck(edit, model):
    """The model's file with ``edit`` applied and its checksum recomputed."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from release_files import fields_of, release_text

    fields = fields_of(model.to_json())
    edit(fields)
    return release_text(fields)


@pytest.mark.parametrize("edit, pattern", [
    (lambda f: f["coefficients"]["values"].__setitem__(0, 1e308), "coefficients: norm"),
    (lambda f: f["coefficients"]["values"].__setitem__(1, -1e308), "coefficients: norm"),
    (lambda f: f["coefficients"].__setitem__("values", [1e200] * 5), "coefficients: norm"),
    (lambda f: f["coefficients"]["values"].__setitem__(0, 1e100), "coefficients: norm"),
    # far beyond what objective perturbation with this calibration releases
    (lambda f: f["coefficients"]["values"].__setitem__(2, 1e4), "larger than a objective"),
    (lambda f: f["calibration"].__setitem__("curvature", 1e-300), "curvature"),
    (lambda f: f["calibration"].__setitem__("lambda_requested", 0.0), "lambda_requested"),
    (lambda f: f["calibration"].__setitem__("eps", -1.0), "eps"),
    (lambda f: f["calibration"].__setitem__("data_norm", 0.0), "data_norm"),
    (lambda f: f["calibration"].__setitem__("weights_bound", {"$float": "Infinity"}),
     "weights_bound"),
    (lambda f: f["calibration"].__setitem__("delta", 2.0), "delta"),
    (lambda f: f["calibration"].__setitem__("n", 10 ** 400), "calibration.n"),
])
def test_tampered_numbers_with_a_valid_checksum_are_refused(edit, pattern):
    model, _ = _private_file()
    text = _recheck(edit, model)
    with pytest.raises(ValueError, match=pattern) as info:
        loads(text)
    assert "corrupted privatelr model file" in str(info.value)


def test_a_non_private_model_with_large_but_safe_coefficients_loads_and_predicts():
    model = dplr("am ~ mpg + wt", load_mtcars().assign(mpg=lambda d: d.mpg / 40,
                                                       wt=lambda d: d.wt / 6), eps=0)
    # nothing bounds a non-private fit's coefficients but overflow: 1e90 is allowed
    back = loads(_recheck(lambda f: f["coefficients"]["values"].__setitem__(1, 1e90), model))
    p = back.predict(load_mtcars().assign(mpg=lambda d: d.mpg / 40, wt=lambda d: d.wt / 6))
    assert np.isfinite(p).all()


def test_every_private_fit_of_the_suite_is_inside_its_bound():
    """The bound is not a false alarm: private fits at tiny eps (the largest noise) load."""
    from privatelr.persist import coefficient_bound

    iris = load_iris()
    iris[iris.columns[:4]] /= 12
    for seed in range(5):
        for kw in (dict(eps=0.01), dict(eps=0.01, op=False),
                   dict(eps=0.05, method="gaussian", delta=1e-9)):
            m = dplr("I(Species == 'virginica') ~ .", iris, random_state=seed, **kw)
            assert np.linalg.norm(m.coef) <= coefficient_bound(m.calibration)
            np.testing.assert_array_equal(loads(m.to_json()).coef, m.coef)


@pytest.mark.parametrize("edit, pattern", [
    (lambda f: f["design"]["preprocess"]["center"].__setitem__(0, 1e308), "gains and shifts"),
    (lambda f: f["design"]["preprocess"]["scale"].__setitem__(1, 1e-300), "gains and shifts"),
    (lambda f: f["design"]["preprocess"].__setitem__("clip", 5e-324), "clip"),
    (lambda f: f["design"]["preprocess"].__setitem__("clip", 2.0), "not the model's data_norm"),
])
def test_a_tampered_public_map_with_a_valid_checksum_is_refused(edit, pattern):
    cars = load_mtcars()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dplr("am ~ mpg + wt + hp", cars, eps=1.0, compat="PrivateLR", do_scale=True,
                     clip=True, random_state=0)
    assert model.spec.preprocess.clip == 1.0
    with pytest.raises(ValueError, match=pattern):
        loads(_recheck(edit, model))
