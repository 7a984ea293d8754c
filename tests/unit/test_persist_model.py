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


CASES = {
    # factor from a string column, factor(), an interaction with a numeric, log()
    "factors": lambda: (_fit("am ~ log(mpg) + factor(cyl) + gearname + wt:factor(vs)", _cars(),
                             eps=1.0, random_state=4, clip=True, data_norm=3.0), _cars()),
    "do_scale": lambda: (_fit("Species ~ .", load_iris(), eps=1.0, do_scale=True,
                              random_state=5), load_iris()),
    "projection": lambda: (_fit("I(Species == 'virginica') ~ .", load_iris(), eps=2.0, rp_dim=2,
                                random_state=6, threshold="youden", clip=True, data_norm=10.0),
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
                 "did_rp", "rp_dim", "scaled", "formula", "call", "norm_bound", "CIndex",
                 "counts", "convergence", "message"):
        assert getattr(back, name) == getattr(model, name), name
    # value is NaN for a private fit (not released); NaN must come back as NaN
    assert back.value == model.value or (np.isnan(back.value) and np.isnan(model.value))
    assert back.spec == model.spec
    if model.rp_p is not None:
        assert np.array_equal(back.rp_p, model.rp_p)
    assert str(back.summary()) == str(model.summary())


def test_projection_and_scaling_are_in_the_file(tmp_path):
    model, _ = CASES["projection"]()
    d = json.loads(model.to_json())
    assert np.array_equal(np.array(d["design"]["projection"]), model.rp_p)
    assert d["threshold"]["method"] == "youden" and d["threshold"]["p_tr"] == model.p_tr
    assert d["coefficients"]["names"] == ["(Intercept)", "dim.1", "dim.2"]
    scaled_model, _ = CASES["do_scale"]()
    d = json.loads(scaled_model.to_json())
    assert d["design"]["scale_factor"] == scaled_model.scale_factor
    assert len(d["design"]["center"]) == 4
    assert d["format_version"] == FORMAT_VERSION and d["package_version"]
    assert d["formula"] == scaled_model.formula and d["eps"] == 1.0


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
    with pytest.raises(ValueError, match=r"format version 2 \(written by privatelr 9.9.9\).*"
                                         r"reads format versions up to 1: upgrade"):
        loads(json.dumps(d))


@pytest.mark.parametrize("mutate, pattern", [
    (lambda t: t[: len(t) // 2], "not valid JSON"),
    (lambda t: "", "not valid JSON"),
    (lambda t: "[1, 2]", "not an object"),
    (lambda t: t.replace('"privatelr.model"', '"something.else"'), "not a privatelr model file"),
    (lambda t: t.replace('"format_version": 1', '"format_version": "one"'), "bad format_version"),
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


@pytest.mark.parametrize("edit, pattern", [
    (lambda d: d["coefficients"]["values"].pop(), "same length"),
    (lambda d: d["coefficients"].__setitem__("values", ["a"] * 7), "list of numbers"),
    (lambda d: d.pop("design"), "missing field 'design'"),
    (lambda d: d["design"]["atoms"][0].__setitem__(
        "code", "().__class__.__base__.__subclasses__()"), "refusing to load it"),
    (lambda d: d["design"]["atoms"][0].__setitem__("code", "__import__"), "uses the name"),
    (lambda d: d["design"]["atoms"][0].__setitem__("code", "_f_log(_u3_)"),
     "refers to variable _u3_"),
    (lambda d: d["design"]["atoms"][0].__setitem__("code", "_u0_[0]"), "Subscript"),
    (lambda d: d["design"].__setitem__("response_code", "(lambda: 1)"), "Lambda"),
    (lambda d: d["design"]["atoms"][1].__setitem__("levels", None), "list of level labels"),
    (lambda d: d["design"].__setitem__("unknown_key", 1), "unknown keys"),
    (lambda d: d["fit"].__setitem__("d", 99), "d = 99"),
    (lambda d: d["fit"].pop("n"), "missing field 'n'"),
    (lambda d: d["fit"].__setitem__("bogus", 1), "unknown field"),
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
    d = model_to_dict(model)
    assert set(d) >= {"format", "format_version", "package_version", "formula", "coefficients",
                      "threshold", "status", "eps", "lambda", "design", "fit", "sha256"}
    assert d["design"]["atoms"][2]["levels"] == ["five", "four", "three"]  # factor levels kept


def test_unseen_level_in_new_data_is_an_error_after_loading():
    model, data = CASES["factors"]()
    back = loads(model.to_json())
    new = data.head(3).copy()
    new.loc[new.index[0], "gearname"] = "six"
    with pytest.raises(ValueError, match="not seen when the model was fitted"):
        back.predict(new)


def test_design_spec_from_dict_refuses_foreign_code():
    """Code in a spec dict is evaluated by predict: from_dict itself must refuse anything
    privatelr never writes, not only load_model."""
    from privatelr.datasets import load_iris
    from privatelr.design import DesignSpec, build_design

    spec = build_design("Species ~ log(Sepal.Length) + Petal.Width", load_iris()).spec
    d = spec.to_dict()
    assert DesignSpec.from_dict(d) == spec
    evil = dict(d, atoms=[dict(a, code="__import__('os').system('true')") for a in d["atoms"]])
    with pytest.raises(ValueError, match="refusing|supported"):
        DesignSpec.from_dict(evil)
    evil = dict(d, response_code="(1).__class__")
    with pytest.raises(ValueError):
        DesignSpec.from_dict(evil)
